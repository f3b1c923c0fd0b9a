"""Dropout: the standard audit (eq 65), stochastic-isotropic dropout with a Haar-random
basis per call (eq 66) and its time-correlated random-walk variant (App. C.1, eq 67).

Their probabilistic cells are *time-like*: the probability is over calls (training
steps), i.e. over the internal randomness drawn from `key` (the `random_call` hook). Every
realisation is a linear map, so it also commutes with scalings; the declarations record
this as the factor ℝ× of a product group.
"""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import named_scope
from jaxtyping import Array, Float, PRNGKeyArray

from ..._types import (RealLike, as_real, check_bool, check_float_dtype, check_int,
                       check_real, resolve_inference)
from ...groups import (
    Affine,
    Diagonal,
    Element,
    Monomial,
    Orthogonal,
    Scaling,
    scalings_times,
)
from ...taxonomy import (
    AbstractOperation,
    DimensionRequired,
    Flavour,
    Signature,
    Taxonomy,
    as_function,
    random_call,
    register,
    reinitialise,
    signature,
    transport,
)
from .._numerics import compute_dtype
from ..initialisers._functional import haar_orthogonal
from . import _functional as F

_FIXED_KEY = 20250102


def _check_rate(rate, who: str) -> float:
    return check_real(rate, "rate", who=who, low=0, high=1, high_open=True)


def _check_x(x, who: str, n: int | None = None):
    if not hasattr(x, "shape") or x.ndim != 1 or (n is not None and x.shape != (n,)):
        want = "(n,)" if n is None else f"({n},)"
        raise ValueError(f"{who} expects one unbatched input of shape {want}, got "
                         f"{getattr(x, 'shape', None)}; use jax.vmap for batches.")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f"{who}: `x` must be a real floating array, got dtype {x.dtype}.")


def _need_key(key, who: str):
    if key is None:
        raise ValueError(f"{who} is random in training mode: pass `key=` (or use "
                         "`inference=True` / `eqx.nn.inference_mode`).")


# rate 0: the identity map, equivariant under every affine map
_IDENTITY = Taxonomy(closure=(None, None, Affine()), probabilistic=(None, None, Affine()),
                     algebraic=(None, None, Affine()), kind="time", note="rate 0: the identity")


def _time_taxonomy(within, rate: float, note: str) -> Taxonomy:
    """Scalings × `within` at closure and (time-like) probabilistic level, scalings only
    algebraically (each realisation is linear); the identity when rate = 0."""
    if rate == 0:
        return _IDENTITY
    group = scalings_times(within)
    return Taxonomy(closure=(None, None, group), probabilistic=(None, None, group),
                    algebraic=(None, None, Scaling()), kind="time",
                    note=note)


def _keep_mask(key, rate: float, n: int, dtype) -> Array:
    return jax.random.bernoulli(key, 1 - rate, (n,)).astype(dtype)


@register(family="operation", name="Dropout", formula="S Σᵢ Mᵢ (x·êᵢ) êᵢ",
          example=lambda: Dropout(0.5), reference="isotropic paper eq 65")
class Dropout(AbstractOperation):
    """Standard dropout (isotropic paper eq 65, audit): $x' = \\frac{1}{1-p}\\,M \\odot x$
    with an iid keep-mask $M_i \\sim \\text{Bernoulli}(1-p)$ drawn from `key` at every call.

    **Symmetry:** every realisation $\\operatorname{diag}(k)/(1-p)$ commutes with every
    invertible diagonal map, so the algebraic E cell is (ℝ×)ⁿ; the mask's law is
    exchangeable, so the time-like probabilistic E cell is the monomial group Sₙ⋉(ℝ×)ⁿ
    (conjugating by $PD$ permutes the mask). A rotation turns $\\operatorname{diag}(k)$
    into a non-diagonal matrix (App. C: "privileges the standard basis").

    **Arguments:** `rate` p in [0, 1), `inference` (identity when True).
    """

    rate: RealLike = eqx.field(static=True, default=0.5, converter=as_real)
    inference: bool = False

    def __check_init__(self):
        _check_rate(self.rate, "Dropout")

    @property
    def taxonomy(self) -> Taxonomy:
        if self.rate == 0:
            return _IDENTITY
        return Taxonomy(closure=(None, None, Monomial()),
                        probabilistic=(None, None, Monomial()),
                        algebraic=(None, None, Diagonal()), kind="time",
                        note="time-like: over the mask drawn at each call; every realisation "
                             "diag(k)/(1 − p) commutes with all diagonal maps, and the iid "
                             "mask's law with permutations")

    @named_scope("taxdl.Dropout")
    def __call__(self, x: Float[Array, " n"], *, key: PRNGKeyArray | None = None,
                 inference: bool | None = None) -> Float[Array, " n"]:
        _check_x(x, "Dropout")
        inference = resolve_inference(self, inference)
        if inference or self.rate == 0:
            return x
        _need_key(key, "Dropout")
        keep = _keep_mask(key, self.rate, x.shape[-1], x.dtype)
        return (keep * x / (1 - self.rate)).astype(x.dtype)


@register(family="operation", name="StochasticIsotropicDropout", formula="S Bᵀ(M ⊙ Bx), B Haar",
          example=lambda: StochasticIsotropicDropout(0.5), reference="isotropic paper eq 66")
class StochasticIsotropicDropout(AbstractOperation):
    """Stochastic-isotropic dropout (isotropic paper App. C, eq 66): dropout applied in a
    basis $B$ drawn from the Haar measure of O(n) at every call,
    $x' = \\frac{1}{1-p}\\,B^T\\big(M \\odot Bx\\big)$, $M_i \\sim \\text{Bernoulli}(1-p)$.

    (Read literally, eq 66 multiplies x elementwise by the rotated mask $BM$; that is not
    isotropic even in law, since $\\operatorname{diag}(BM)$ stays diagonal in the standard
    basis. The text's intent — "anisotropic dropout applied to a stochastically chosen
    basis", as in RotationOut with a uniform basis — is what is implemented.)

    The basis costs one $n×n$ QR per call. Under `jax.vmap` with a key per example, each
    example gets its own basis; to share one basis across a batch (the paper's "each
    batch"), draw it once with `sample_basis` and pass `basis=`.

    **Symmetry:** time-like probabilistic O(n)-equivariance: $R^{-1}B^T\\operatorname{diag}
    (M)BR = (BR)^T\\operatorname{diag}(M)(BR)$ and $BR$ is again Haar. Each realisation is
    linear, so scalings commute too (the factor ℝ×); no realisation is O(n)-equivariant.

    **Arguments:** `rate` p in [0, 1), `inference` (identity when True).
    """

    rate: RealLike = eqx.field(static=True, default=0.5, converter=as_real)
    inference: bool = False

    def __check_init__(self):
        _check_rate(self.rate, "StochasticIsotropicDropout")

    @property
    def taxonomy(self) -> Taxonomy:
        return _time_taxonomy(Orthogonal(), self.rate,
                              "time-like: over the Haar basis and mask drawn at each call")

    def sample_basis(self, key: PRNGKeyArray, n: int, dtype=jnp.float32) -> Array:
        """A Haar-random orthogonal basis (rows), as used at each call."""
        return haar_orthogonal(key, (n, n), dtype)

    @named_scope("taxdl.StochasticIsotropicDropout")
    def __call__(self, x: Float[Array, " n"], *, key: PRNGKeyArray | None = None,
                 inference: bool | None = None, basis: Array | None = None
                 ) -> Float[Array, " n"]:
        _check_x(x, "StochasticIsotropicDropout")
        inference = resolve_inference(self, inference)
        if inference or self.rate == 0:
            return x
        _need_key(key, "StochasticIsotropicDropout")
        n = x.shape[-1]
        kb, km = jax.random.split(key)
        if basis is None:
            basis = self.sample_basis(kb, n, compute_dtype(x.dtype))  # rotated in it
        elif basis.shape != (n, n):
            raise ValueError(f"StochasticIsotropicDropout: `basis` must have shape ({n}, {n}), "
                             f"got {basis.shape}.")
        return F.rotated_dropout(x, basis, _keep_mask(km, self.rate, n, x.dtype), self.rate)


# ================================================================ time-correlated variant
def _antisymmetric(key, n: int, dtype) -> Array:
    """$\\sum_a v_a n_a$ with $n_a \\sim \\mathcal N(0, 1)$ and the normalised generators
    $v_a = (e_ie_j^T - e_je_i^T)/\\sqrt 2$... scaled so each entry has unit variance."""
    g = jax.random.normal(key, (n, n), dtype)
    return (g - g.T) / jnp.sqrt(jnp.asarray(2.0, dtype))


def overlap_probability(rate, overlap, active, inactive):
    """Eq 67: the overlap probability Γ clipped so that the probability q of the
    previously active set stays in [0, 1]; returns (Γ, q). With an empty set, Γ = q = λ."""
    lam = rate
    safe_i = jnp.where(inactive > 0, inactive, 1)
    safe_a = jnp.where(active > 0, active, 1)
    ratio = active / safe_i
    gamma = jnp.maximum(0.0, jnp.maximum(lam + ratio * (lam - 1),
                                         jnp.minimum(1.0, jnp.minimum(lam + ratio * lam,
                                                                      overlap))))
    q = lam + (inactive / safe_a) * (lam - gamma)
    degenerate = (active == 0) | (inactive == 0)
    return jnp.where(degenerate, lam, gamma), jnp.where(degenerate, lam, q)


MAX_STEP = 10.0
"""The largest walk step σ of `CorrelatedIsotropicDropout` (see its docstring)."""


def correlated_step(key, basis, dropped, rate: float, overlap: float, step: float):
    """One step of the random walk (App. C.1): $R \\leftarrow R\\,e^{σA}$ with $A$
    antisymmetric Gaussian (a walk in SO(n) started from a Haar point), and the drop
    indicators $D$ redrawn with Bernoulli(q) on the previously dropped set A and
    Bernoulli(Γ) on the previously kept set I (eq 67), so that $\\mathbb E|D| = nλ$."""
    n = basis.shape[-1]
    kw, kd = jax.random.split(key)
    rot = jax.scipy.linalg.expm(step * _antisymmetric(kw, n, basis.dtype))
    basis = basis @ rot
    prev = dropped > 0.5
    active = jnp.sum(prev).astype(basis.dtype)
    gamma, q = overlap_probability(jnp.asarray(rate, basis.dtype),
                                   jnp.asarray(overlap, basis.dtype), active, n - active)
    u = jax.random.uniform(kd, (n,), basis.dtype)
    dropped = jnp.where(prev, u < q, u < gamma).astype(basis.dtype)
    return basis, dropped


@register(family="operation", name="CorrelatedIsotropicDropout",
          formula="R_t = R_{t−1}e^{σA}; D_t | D_{t−1} (eq 67)",
          example=lambda: CorrelatedIsotropicDropout(8, key=jax.random.key(0)),
          reference="isotropic paper App. C.1, eq 67")
class CorrelatedIsotropicDropout(AbstractOperation, eqx.nn.StatefulLayer):
    """Time-correlated stochastic-isotropic dropout (isotropic paper App. C.1, eq 67).

    The dropout basis performs a random walk in SO(n), $R_t = R_{t-1}e^{σA_t}$ (Haar
    start, $A_t$ antisymmetric Gaussian), and the drop indicators are correlated in time:
    units dropped at the previous step are dropped again with probability $q$, the others
    with the overlap probability Γ (clipped by eq 67), keeping the expected drop fraction
    λ = `rate`. Γ = λ gives independent masks; smaller Γ gives longer coherence. Output
    $x' = \\frac{1}{1-λ}R_t^T((1 - D_t) \\odot R_t x)$. (Convention: $D_i = 1$ means
    *dropped*, so λ is the dropout probability as the paper calls it.)

    The state ($R$, $D$) lives in an `eqx.nn.State`; every training call advances it one
    step. One basis and one mask per step are shared by the whole batch: call it as
    `jax.vmap(lambda x: drop(x, state, key=key), out_axes=(0, None))(xs)`.

    **Symmetry:** time-like probabilistic O(n)-equivariance (a Haar point times an
    independent rotation is Haar, so $R_t$ stays Haar-distributed), times scalings (each
    realisation is linear). The paper notes that in practice a walk may cover SO(n)
    unevenly; the law over the initial state and the steps is isotropic.

    **Arguments:** `n`; `rate` λ in [0, 1); `overlap` Γ in [0, 1] (default λ); `step` σ
    of the walk in [0, 10] (default 0.1); `key` for the initial state; `inference`;
    `dtype`. A step turns the basis by angles up to about $2σ\\sqrt n$ radians: σ = 10
    is already many turns per step (for independent bases use
    `StochasticIsotropicDropout`), and much larger σ would put the matrix exponential
    beyond its accurate range (NaN above σ ≈ 1e4).
    """

    state_index: eqx.nn.StateIndex
    inference: bool
    n: int = eqx.field(static=True)
    rate: float = eqx.field(static=True)
    overlap: float = eqx.field(static=True)
    step: float = eqx.field(static=True)

    def __init__(self, n: int, rate: RealLike = 0.5, overlap: RealLike | None = None,
                 step: RealLike = 0.1, *, key: PRNGKeyArray, inference: bool = False,
                 dtype=jnp.float32):
        dtype = check_float_dtype(dtype, type(self).__name__)
        self.n = check_int(n, "n", who="CorrelatedIsotropicDropout")
        self.rate = _check_rate(rate, "CorrelatedIsotropicDropout")
        overlap = self.rate if overlap is None else overlap
        who = "CorrelatedIsotropicDropout"
        self.overlap = check_real(overlap, "overlap", who=who, low=0, high=1)
        self.step = check_real(step, "step", who=who, low=0, high=MAX_STEP)
        self.inference = check_bool(inference, "inference", who=who)
        self.state_index = eqx.nn.StateIndex(self.initial_state(key, dtype))

    def initial_state(self, key: PRNGKeyArray, dtype=jnp.float32) -> tuple[Array, Array]:
        """A Haar basis and iid Bernoulli(λ) drop indicators, kept in the compute dtype
        (float32 for half precisions, in which the walk's matrix exponential is not
        available)."""
        dtype = compute_dtype(check_float_dtype(dtype, type(self).__name__))
        kb, kd = jax.random.split(key)
        return (haar_orthogonal(kb, (self.n, self.n), dtype),
                jax.random.bernoulli(kd, self.rate, (self.n,)).astype(dtype))

    @property
    def taxonomy(self) -> Taxonomy:
        return _time_taxonomy(Orthogonal(), self.rate,
                              "time-like: over the initial state and the random walk")

    @named_scope("taxdl.CorrelatedIsotropicDropout")
    def __call__(self, x: Float[Array, " n"], state: eqx.nn.State, *,
                 key: PRNGKeyArray | None = None, inference: bool | None = None
                 ) -> tuple[Float[Array, " n"], eqx.nn.State]:
        """**Returns:** `(y, new_state)`; the state advances one step per training call."""
        _check_x(x, "CorrelatedIsotropicDropout", self.n)
        inference = resolve_inference(self, inference)
        if inference or self.rate == 0:
            return x, state
        _need_key(key, "CorrelatedIsotropicDropout")
        basis, dropped = state.get(self.state_index)
        basis, dropped = correlated_step(key, basis, dropped, self.rate, self.overlap,
                                         self.step)
        state = state.set(self.state_index, (basis, dropped))
        y = F.rotated_dropout(x, basis, 1 - dropped, self.rate)
        return y, state


# ================================================================ checker hooks
class _Conjugated(eqx.Module):
    """A dropout whose internal randomness is moved by a group element g (what `transport`
    returns for the E cell): its realisation with key k is $g^{-1}∘f_k∘g$ written in the
    dropout's own form — the basis $B$ becomes $BM$ (isotropic variants), the mask $m$
    becomes $P^T m$ (standard dropout, $M = PD$ a monomial: diagonal maps commute).

    It is also what a model moved by a parameter symmetry (`apply_hidden`) holds in
    place of its dropout, so it is called as the dropout is: the identity in inference
    mode (`eqx.nn.inference_mode` reaches the wrapped dropout) or at rate 0, and a `key`
    is needed otherwise. (The checker evaluates it through its hooks, with their keys.)"""

    base: eqx.Module
    element: Element

    taxonomy = property(lambda self: self.base.taxonomy)

    def __call__(self, x, *, key=None, inference: bool | None = None):
        who = type(self.base).__name__
        _check_x(x, who, getattr(self.base, "n", None))
        if resolve_inference(self.base, inference) or self.base.rate == 0:
            return x
        _need_key(key, who)
        return realise(self.base, key, self.element.matrix)(x)


def realise(drop, key, frame=None) -> Callable:
    """The linear map of one training call of `drop` with PRNG `key` (a fresh state drawn
    from `key` for the correlated variant), optionally in the frame of a matrix `frame`."""

    def f(x):
        d, n = x.dtype, x.shape[-1]
        if isinstance(drop, Dropout):
            keep = _keep_mask(key, drop.rate, n, d)
            if frame is not None:  # a monomial PD: M⁻¹ diag(k) M = diag(Pᵀk)
                keep = (frame != 0).astype(d).T @ keep
            return (keep * x / (1 - drop.rate)).astype(d)
        # Conjugation by a scaling changes nothing (each realisation is linear): only the
        # orthogonal part R of a conformal frame M = aR moves the randomness.
        m = None if frame is None else frame.astype(d) / jnp.linalg.norm(frame[:, 0]).astype(d)
        if isinstance(drop, StochasticIsotropicDropout):
            kb, km = jax.random.split(key)
            basis = drop.sample_basis(kb, n, d)
            keep = _keep_mask(km, drop.rate, n, d)
        else:
            k0, k1 = jax.random.split(key)
            basis, dropped = drop.initial_state(k0, d)
            basis, dropped = correlated_step(k1, basis, dropped, drop.rate, drop.overlap,
                                             drop.step)
            keep = 1 - dropped
        if m is not None:
            basis = basis @ m
        return F.rotated_dropout(x, basis, keep, drop.rate)

    return f


_Dropouts = (Dropout, StochasticIsotropicDropout, CorrelatedIsotropicDropout)


def _dropout_signature(drop, n=None) -> Signature:
    size = getattr(drop, "n", None) or n
    if size is None:
        raise DimensionRequired(type(drop).__name__)
    return Signature(((size,),))


for _cls in _Dropouts:
    signature.register(_cls)(_dropout_signature)
    random_call.register(_cls)(lambda drop, key: realise(drop, key))
    as_function.register(_cls)(lambda drop: realise(drop, jax.random.key(_FIXED_KEY)))
    transport.register(_cls)(lambda drop, flavour, element, group: _Conjugated(drop, element)
                             if Flavour(flavour) is Flavour.EQUIVARIANT else drop)

signature.register(_Conjugated)(lambda c, n=None: _dropout_signature(c.base, n))
random_call.register(_Conjugated)(lambda c, key: realise(c.base, key, c.element.matrix))
as_function.register(_Conjugated)(
    lambda c: realise(c.base, jax.random.key(_FIXED_KEY), c.element.matrix))
reinitialise.register(CorrelatedIsotropicDropout)(
    lambda drop, key: CorrelatedIsotropicDropout(drop.n, drop.rate, drop.overlap, drop.step,
                                                 key=key, inference=drop.inference))
