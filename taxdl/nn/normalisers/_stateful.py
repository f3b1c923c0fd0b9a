"""Stateful normalisers: Chi-normalisation and the BatchNorm audit (data-like, batch
statistics over a named `vmap` axis) and the time-like magnitude normaliser (moving
average over training steps). They follow `eqx.nn.BatchNorm`'s conventions: construct
with `eqx.nn.make_with_state`, call as `y, state = norm(x, state)` on one example inside
`jax.vmap(..., axis_name=...)`, toggle `inference` with `eqx.nn.inference_mode`.

For the checker (`taxdl.testing`), the per-example function is obtained through the
`data_call` hook (statistics of one random standard-Gaussian batch: the data assumption
of App. A.1.1) or the `random_call` hook (the state after a random history of steps).
"""

import abc
import math
from collections.abc import Callable, Hashable
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import named_scope
from jaxtyping import Array, Float

from ...groups import (
    Affine,
    DiagonalAffine,
    Element,
    MonomialAffine,
    Orthogonal,
    PointReflection,
    ScaleTranslation,
    SignedPermutation,
)
from ...taxonomy import (
    AbstractNormaliser,
    Flavour,
    Signature,
    Taxonomy,
    as_function,
    data_call,
    random_call,
    register,
    reinitialise,
    signature,
    transport,
)
from .._numerics import (compute_dtype, one_minus_power, power_of_two_near, safe_norm,
                         sqrt_or_zero)
from . import _functional as F
from ..._types import IntLike, RealLike, check_bool, check_float_dtype, resolve_inference
from ._checks import check_eps, check_input, check_momentum, check_n


def _unbound(who: str, axis_name) -> str:
    return (f"{who} computes batch statistics over the vmap axis {axis_name!r}: call it "
            f"inside `jax.vmap(norm, axis_name={axis_name!r}, in_axes=(0, None), "
            "out_axes=(0, None))(x, state)`, or in inference mode (`inference=True` or "
            "`eqx.nn.inference_mode`).")


def _init_fields(norm, n, axis_name, eps, momentum, inference, dtype, *, vector_gain: bool,
                 statistics: tuple[tuple[int | str, ...], ...]) -> None:
    """Check and set the fields the stateful normalisers share: `n`, `eps`, `momentum`,
    `axis_name`, `inference`, γ (ones: a scalar, or a vector with `vector_gain`), β
    (zeros) and the state: a step count and zeros of the shapes in `statistics`, which
    `n` in a shape stands for. Running statistics are kept in the compute dtype (a float16
    magnitude overflows at 65504)."""
    who = type(norm).__name__
    dtype = check_float_dtype(dtype, who)
    norm.n = n = check_n(n, who)
    norm.eps = check_eps(eps, who)
    norm.momentum = check_momentum(momentum, who)
    norm.axis_name = axis_name
    norm.inference = check_bool(inference, "inference", who=who)
    norm.gamma = jnp.ones((n,) if vector_gain else (), dtype)
    norm.beta = jnp.zeros((n,), dtype)
    stat = compute_dtype(dtype)
    zeros = tuple(jnp.zeros(tuple(n if d == "n" else d for d in shape), stat)
                  for shape in statistics)
    norm.state_index = eqx.nn.StateIndex((jnp.array(0, jnp.int32), *zeros))


def _debias(hidden, count, momentum):
    """Zero-debiased moving average $h_t/(1 - ρ^t)$ (the raw value when $t = 0$), with
    $1 - ρ^t$ from `one_minus_power` (exact also for ρ within float32's rounding of 1)."""
    scale = jnp.where(count == 0, 1, one_minus_power(momentum, count.astype(hidden.dtype)))
    return hidden / scale


def _scaled_batch_mean(x, axis_name, reduce, floor: float = 0.0):
    """(μ/m, m): the batch mean over the named axis divided by m, a power of two near the
    batch's largest |x| (`reduce` = `jnp.max` for one scale, identity for one per
    coordinate; gradient stopped) or `floor` if that is larger, so that the sum cannot
    overflow."""
    big = jax.lax.pmax(jax.lax.stop_gradient(reduce(jnp.abs(x))), axis_name)
    big = power_of_two_near(jnp.maximum(big, floor))
    return jax.lax.pmean(x / big, axis_name), big


def _batch_centre(x, axis_name, reduce, floor: float = 0.0):
    """Batch mean over the named axis and the centred example, overflow-safe: returns
    (μ, (x − μ)/m, m) with m a power of two near the batch's largest |x| or `floor`,
    whichever is larger (`reduce` = `jnp.max` for one scale, identity for one scale per
    coordinate), gradients stopped through m; |x − μ|/m < 2.

    A coordinate that is constant over the batch (identical rows: every coordinate) is
    centred to exactly 0, not to the rounding error of its mean (see `_range` in
    `_functional`), with the gradient of $x - μ$ kept (so that with ε > 0 the Jacobian
    there is $(I - \\tfrac1B J)/\\sqrt{ρ^2 + ε}$, as nearby); the test is exact, so any
    genuine spread is kept. Computed in `compute_dtype` (float32 for half precisions)."""
    x = x.astype(compute_dtype(x.dtype))
    mean_u, big = _scaled_batch_mean(x, axis_name, reduce, floor)
    xs = jax.lax.stop_gradient(x)
    constant = jax.lax.pmax(xs, axis_name) == jax.lax.pmin(xs, axis_name)
    return mean_u * big, F._zero_where_constant(x / big - mean_u, constant), big


def _batch_statistics(x, axis_name, who: str, per_coordinate: bool, eps: float):
    """The batch mean over the named `vmap` axis, the batch RMS of $x - μ_B$ (one
    magnitude $\\sqrt{\\mathbb E_B\\|x - μ_B\\|^2}$, or one standard deviation per
    coordinate with `per_coordinate`; zero, not NaN, for a batch without spread) and the
    standardised example $(x - μ_B)/\\sqrt{s^2 + ε}$.

    The last is formed from the centred values of `_batch_centre`,
    $c\\,/\\sqrt{\\mathbb E_B c^2 + ε/m^2}$ with $c = (x - μ_B)/m$ (as `chi_norm` does),
    not by subtracting the rounded μ_B from x again: a coordinate constant over the batch
    then gives exactly 0 (the output β) whatever ε, where $x - \\mathrm{fl}(μ_B)$ is a
    rounding error that ε > 0 does not cancel (≈ −2.5 at x = 1e5, ε = 1e-5). Its one
    scale m is near max(max|x|, √ε), as in `_scaled_standardise`: c and $\\sqrt ε/m$ are
    then at most 2 and not both small, so second derivatives stay in range for inputs far
    below √ε (a second scaling, of c by its own largest entry, would put factors of its
    ratio to m, ~1e-28 at inputs of 1e-30, into products that underflow before the
    compensating 1/m is applied). The statistic s is taken from c rescaled by a power of
    two near its batch maximum (gradient irrelevant: it is recorded, not differentiated),
    so that its squares keep full precision."""
    reduce = (lambda a: a) if per_coordinate else jnp.max

    def mean_square(c):
        return jax.lax.pmean(c * c if per_coordinate else jnp.sum(c * c), axis_name)

    root = math.sqrt(eps)
    try:
        mean, c, m = _batch_centre(x, axis_name, reduce, root)
        k = power_of_two_near(
            jax.lax.pmax(jax.lax.stop_gradient(reduce(jnp.abs(c))), axis_name))
        scale = sqrt_or_zero(mean_square(c / k)) * (k * m)
        ratio = c * F._inverse_root(mean_square(c), root / m)
    except NameError as err:
        raise NameError(_unbound(who, axis_name)) from err
    return mean, scale, ratio


def _ema(hidden, value, momentum):
    """One exponential-moving-average step $ρ h + (1 - ρ) v$, no gradient through $v$."""
    return momentum * hidden + (1 - momentum) * jax.lax.stop_gradient(value).astype(hidden.dtype)


def _record(state, index, momentum, mean, scale):
    """The state after one training step: the running (count, mean, scale) moved by an
    EMA step towards the batch statistics."""
    count, h_mean, h_scale = state.get(index)
    return state.set(index, (count + 1, _ema(h_mean, mean, momentum),
                             _ema(h_scale, scale, momentum)))


def _running(stored, momentum, fresh_scale):
    """The debiased running (mean, scale) from the stored (count, mean, scale); before any
    training step, 0 and `fresh_scale`."""
    count, mean, scale = stored
    fresh = count == 0
    return (jnp.where(fresh, 0, _debias(mean, count, momentum)),
            jnp.where(fresh, fresh_scale, _debias(scale, count, momentum)))


def _gaussian_batch(key, batch_shape, n: int, dtype) -> Array:
    """A standard Gaussian data batch of shape `batch_shape` (the full array shape, last
    axis n; a bare batch size or a shape without the feature axis is completed), as rows."""
    shape = (batch_shape,) if isinstance(batch_shape, int) else tuple(batch_shape)
    if not shape or shape[-1] != n:
        shape = (*shape, n)
    return jax.random.normal(key, shape, dtype).reshape(-1, n)


# ======================================================================= Chi-normaliser
def _chi_taxonomy() -> Taxonomy:
    return Taxonomy(
        closure=(ScaleTranslation(), ScaleTranslation(), Affine()),
        probabilistic=(None, None, Orthogonal()),
        kind="data",
        note="data-like: over batches of isotropic (Gaussian) data; closure treats the "
             "batch statistics as parameters",
    )


class _AbstractDataNormaliser(AbstractNormaliser, eqx.nn.StatefulLayer):
    """The calling convention shared by the data-like normalisers: batch statistics over
    the `vmap` axis `axis_name` in training (recorded as running averages), the running
    averages in inference, then the normaliser's own application."""

    n: eqx.AbstractVar[int]
    eps: eqx.AbstractVar[float]
    momentum: eqx.AbstractVar[float]
    axis_name: eqx.AbstractVar[Hashable]
    inference: eqx.AbstractVar[bool]
    gamma: eqx.AbstractVar[Array]
    beta: eqx.AbstractVar[Array]
    state_index: eqx.AbstractVar[eqx.nn.StateIndex]
    # per-coordinate statistics (else a mean vector and one scalar scale); the statistics
    # of an explicit batch; the per-example map with given statistics; the constant
    # factor (of n) between γ and the standardised (x − μ)/√(s² + ε) in that map
    per_coordinate: eqx.AbstractClassVar[bool]
    statistics_of: eqx.AbstractClassVar[Callable]
    apply_statistics: eqx.AbstractClassVar[Callable]
    ratio_gain: eqx.AbstractClassVar[Callable]

    @abc.abstractmethod
    def statistics(self, state: eqx.nn.State) -> tuple[Array, Array]:
        """The running (debiased) mean and scale used in inference."""

    def __call__(self, x: Float[Array, " n"], state: eqx.nn.State, *, key=None,
                 inference: bool | None = None) -> tuple[Float[Array, " n"], eqx.nn.State]:
        """**Arguments:** one example `x` of shape `(n,)`, the `state`; `inference`
        overrides `self.inference`. **Returns:** `(y, new_state)`."""
        del key
        who = type(self).__name__
        with named_scope(f"taxdl.{who}"):
            check_input(x, self.n, who)
            inference = resolve_inference(self, inference)
            # computed in the compute dtype from one cast in to one cast out: the
            # gradient's paths through x and through the batch statistics are summed
            # there, so a half-precision gradient that overflows is ±inf, not inf − inf
            d, work = x.dtype, compute_dtype(x.dtype)
            x = x.astype(work)
            gamma, beta = self.gamma.astype(work), self.beta.astype(work)
            if inference:
                mean, scale = (a.astype(work) for a in self.statistics(state))
                y = self.apply_statistics(x, mean, scale, gamma, beta, self.eps)
            else:
                mean, scale, ratio = _batch_statistics(x, self.axis_name, who,
                                                       self.per_coordinate, self.eps)
                state = _record(state, self.state_index, self.momentum, mean, scale)
                y = gamma * (self.ratio_gain(self.n) * ratio) + beta
            return y.astype(d), state


@register(family="normaliser", formula="γ·√n(x−μ_B)/(E_χ √(E_B‖x−μ_B‖²+ε)) + β⃗",
          example=lambda: ChiNorm(8), reference="isotropic paper eqs 45–47")
class ChiNorm(_AbstractDataNormaliser):
    """Chi-normaliser (isotropic paper App. A.1.1, eqs 45–47): remove the batch mean
    $μ_B$ (eq 46) and standardise magnitudes by the batch RMS magnitude
    $ρ_B = \\sqrt{\\mathbb E_B\\|x - μ_B\\|^2}$ and the Chi distribution's mean (eq 45):

    $$f(x) = γ\\,\\frac{\\sqrt n}{\\mathbb E_{χ_n}}\\,\\frac{x - μ_B}{\\sqrt{ρ_B^2 + ε}} + \\vec β$$

    (eq 47 with the batch sum averaged and the $\\sqrt n/\\mathbb E_{χ_n}$ factor explicit,
    so that with Gaussian data and γ = 1 the magnitudes have mean 1). Scalar γ (init 1),
    vector $\\vec β$ (init 0). Statistics are taken over the `vmap` axis `axis_name` in
    training, like `eqx.nn.BatchNorm`, and running (zero-debiased exponential moving)
    averages of $μ_B$ and $ρ_B$ are kept in the `eqx.nn.State` for inference.

    **Symmetry:** data-like probabilistic O(n)-equivariance: a batch of isotropic data
    rotated by $R$ has statistics $(Rμ_B, ρ_B)$, so $R^{-1}∘f_B∘R$ and $f_B$ have the same
    law (with $\\vec β$ at its initialisation 0). No per-example function is
    algebraically equivariant ($μ_B ≠ 0$). Treating the statistics as parameters, the
    per-batch class $\\{αx + b\\}$ is closed under conjugation by any affine map (Aff(n):
    $M^{-1}(α(Mx + t) + b - t) = αx + M^{-1}(αt + b - t)$) and, on either side, under
    every dilation $x \\mapsto ax + t$ (ℝ×⋉ℝⁿ: the scalar γ takes $a$, the vector $\\vec β$
    on the left and the batch mean on the right take $t$).

    **Arguments:**

    - `n`: the dimension.
    - `axis_name`: the `vmap` axis name carrying the batch (default `"batch"`).
    - `eps`: ε ≥ 0 added to $ρ_B^2$ (default 1e-5).
    - `momentum`: of the running averages, in [0, 1) (default 0.99).
    - `inference`: use the running averages instead of batch statistics.
    - `dtype`: parameter dtype (the running statistics are kept in float32 for half
      precisions).

    A batch of one (or of identical rows) has $ρ_B = 0$; with ε = 0 the output is then
    $\\vec β$ (never NaN).
    """

    gamma: Float[Array, ""]
    beta: Float[Array, " n"]
    state_index: eqx.nn.StateIndex
    axis_name: Hashable
    inference: bool
    n: int = eqx.field(static=True)
    eps: float = eqx.field(static=True)
    momentum: float = eqx.field(static=True)

    taxonomy: ClassVar[Taxonomy] = _chi_taxonomy()
    per_coordinate: ClassVar[bool] = False
    statistics_of: ClassVar[Callable] = staticmethod(F.chi_statistics)
    apply_statistics: ClassVar[Callable] = staticmethod(F.chi_apply)
    ratio_gain: ClassVar[Callable] = staticmethod(F.chi_scale)  # √n/E_χn (eq 45)

    def __init__(self, n: IntLike, axis_name: Hashable = "batch", eps: RealLike = 1e-5,
                 momentum: RealLike = 0.99, inference: bool = False, *, dtype=jnp.float32):
        _init_fields(self, n, axis_name, eps, momentum, inference, dtype, vector_gain=False,
                     statistics=(("n",), ()))

    def statistics(self, state: eqx.nn.State) -> tuple[Array, Array]:
        """The running (debiased) batch mean and RMS magnitude used in inference; before
        any training step, those of standard Gaussian data (0 and √n)."""
        stored = state.get(self.state_index)
        return _running(stored, self.momentum, jnp.sqrt(jnp.asarray(self.n, stored[2].dtype)))


# ======================================================================= BatchNorm audit
@register(family="normaliser", name="BatchNorm", formula="γ⊙(x−E_B x)/√(ε+Var_B x) + β",
          example=lambda: BatchNorm(8), reference="isotropic paper eq 42")
class BatchNorm(_AbstractDataNormaliser):
    """BatchNorm as the isotropic paper analyses it (eq 42, audit): every coordinate is
    standardised with its batch mean and variance, then $γ \\odot \\cdot + β$ (vectors,
    init 1 and 0). Same calling convention and running statistics as
    [`ChiNorm`][taxdl.nn.ChiNorm] (per-coordinate mean and variance).

    **Symmetry:** data-like probabilistic equivariance only to signed permutations Bₙ:
    with isotropic data, a rotation mixes coordinates whose batch variances differ, so the
    per-coordinate rescaling $\\operatorname{diag}(1/σ_B)$ does not commute with it even in
    law (App. A.1: "not algebraic nor probabilistically equivariant to orthogonal group
    actions"). Treating statistics as parameters, the class of per-coordinate affine maps
    is closed under every per-coordinate affine map $Dx + t$ on either side ((ℝ×)ⁿ⋉ℝⁿ:
    γ, β absorb it on the left, the statistics on the right) and under conjugation by
    every monomial affine map $PDx + t$ (Sₙ⋉(ℝ×)ⁿ⋉ℝⁿ: $(PD)^{-1}E\\,PD$ is diagonal
    for a diagonal $E$; γ and the scale move with the permutation, β and the mean with
    $(PD)^{-1}$).

    **Arguments:** as [`ChiNorm`][taxdl.nn.ChiNorm].
    """

    gamma: Float[Array, " n"]
    beta: Float[Array, " n"]
    state_index: eqx.nn.StateIndex
    axis_name: Hashable
    inference: bool
    n: int = eqx.field(static=True)
    eps: float = eqx.field(static=True)
    momentum: float = eqx.field(static=True)

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(DiagonalAffine(), DiagonalAffine(), MonomialAffine()),
        probabilistic=(None, None, SignedPermutation()),
        kind="data",
        note="data-like: over batches of isotropic (Gaussian) data; per-coordinate "
             "statistics break O(n) even in law",
    )
    per_coordinate: ClassVar[bool] = True
    statistics_of: ClassVar[Callable] = staticmethod(F.batch_statistics)
    apply_statistics: ClassVar[Callable] = staticmethod(F.batch_apply)
    ratio_gain: ClassVar[Callable] = staticmethod(lambda n: 1.0)

    def __init__(self, n: IntLike, axis_name: Hashable = "batch", eps: RealLike = 1e-5,
                 momentum: RealLike = 0.99, inference: bool = False, *, dtype=jnp.float32):
        _init_fields(self, n, axis_name, eps, momentum, inference, dtype, vector_gain=True,
                     statistics=(("n",), ("n",)))

    def statistics(self, state: eqx.nn.State) -> tuple[Array, Array]:
        """Running (debiased) per-coordinate mean and standard deviation (0 and 1 before
        any training step)."""
        return _running(state.get(self.state_index), self.momentum, 1)


# ======================================================================= time-like
@register(family="normaliser", name="MagnitudeEMANorm", formula="γ x/(EMA_t‖x‖ + ε) + β⃗",
          example=lambda: MagnitudeEMANorm(8),
          reference="isotropic paper App. A.1.1 (time-like normalisation)")
class MagnitudeEMANorm(AbstractNormaliser, eqx.nn.StatefulLayer):
    """Time-like magnitude normaliser (isotropic paper App. A.1.1, last paragraph): the
    magnitude statistic is an exponential moving average over training steps,
    $s_t = ρ s_{t-1} + (1-ρ)\\,\\mathbb E_B\\|x\\|$ (zero-debiased), and

    $$f_t(x) = γ\\,\\frac{x}{\\hat s_t + ε} + \\vec β$$

    with no gradient through the statistic (it is treated as a constant, as the paper
    proposes). Scalar γ (init 1), vector $\\vec β$ (init 0). The batch mean of the norm is
    taken over the `vmap` axis `axis_name`; with `axis_name=None` the layer is used on a
    stream of single examples (no `vmap`). Inference uses the stored $\\hat s$.

    **Symmetry:** a scalar divides x, so at $\\vec β = 0$ every step's function is
    O(n)-equivariant whatever the history: time-like probabilistic O(n)-equivariance
    (the statistic's law over steps is rotation-invariant). Closure: $γ, \\vec β$ absorb
    every dilation $y \\mapsto ay + t$ on the left (ℝ×⋉ℝⁿ), on the right the scalar γ
    absorbs the point reflection $x \\mapsto -x$ ({±I}; the statistic is a norm), and
    conjugation by O(n) only rotates $\\vec β$.

    **Arguments:**

    - `n`: the dimension.
    - `axis_name`: `vmap` axis of the batch, or None (default `"batch"`).
    - `eps`: ε ≥ 0 added to the statistic (default 1e-5).
    - `momentum`: ρ in [0, 1) (default 0.99).
    - `inference`, `dtype`: as [`ChiNorm`][taxdl.nn.ChiNorm].
    """

    gamma: Float[Array, ""]
    beta: Float[Array, " n"]
    state_index: eqx.nn.StateIndex
    axis_name: Hashable | None
    inference: bool
    n: int = eqx.field(static=True)
    eps: float = eqx.field(static=True)
    momentum: float = eqx.field(static=True)

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(ScaleTranslation(), PointReflection(), Orthogonal()),
        probabilistic=(None, None, Orthogonal()),
        kind="time",
        note="time-like: over training steps (the moving statistic); β at its "
             "initialisation 0; closure R: f(−x) is f with γ ↦ −γ",
    )

    def __init__(self, n: IntLike, axis_name: Hashable | None = "batch", eps: RealLike = 1e-5,
                 momentum: RealLike = 0.99, inference: bool = False, *, dtype=jnp.float32):
        _init_fields(self, n, axis_name, eps, momentum, inference, dtype, vector_gain=False,
                     statistics=((),))

    def statistic(self, state: eqx.nn.State) -> Array:
        """The debiased moving magnitude $\\hat s$ (1 before any training step)."""
        count, hidden = state.get(self.state_index)
        return jnp.where(count == 0, 1, _debias(hidden, count, self.momentum))

    def _step(self, x, count, hidden, norm):
        new_hidden = _ema(hidden, norm, self.momentum)
        s = _debias(new_hidden, count + 1, self.momentum)
        return s, (count + 1, new_hidden)

    @named_scope("taxdl.MagnitudeEMANorm")
    def __call__(self, x: Float[Array, " n"], state: eqx.nn.State, *, key=None,
                 inference: bool | None = None) -> tuple[Float[Array, " n"], eqx.nn.State]:
        """**Arguments:** one example `x` of shape `(n,)`, the `state`; `inference`
        overrides `self.inference`. **Returns:** `(y, new_state)`."""
        del key
        check_input(x, self.n, "MagnitudeEMANorm")
        inference = resolve_inference(self, inference)
        d = x.dtype
        if inference:
            s = self.statistic(state)
        else:
            norm = jax.lax.stop_gradient(safe_norm(x.astype(compute_dtype(d))))
            if self.axis_name is not None:
                try:
                    # the batch mean of the norms on the scale of the largest (a plain
                    # pmean sums first: 64 norms of 1e37 overflow float32)
                    mean_u, big = _scaled_batch_mean(norm, self.axis_name, lambda a: a)
                    norm = mean_u * big
                except NameError as err:
                    raise NameError(_unbound("MagnitudeEMANorm", self.axis_name)) from err
            count, hidden = state.get(self.state_index)
            s, new = self._step(x, count, hidden, norm)
            state = state.set(self.state_index, new)
        y = F.magnitude_normalise(x, s, self.gamma.astype(d), self.beta.astype(d),
                                  self.eps)
        return y.astype(d), state


# ======================================================================= checker hooks
_Stateful = (ChiNorm, BatchNorm, MagnitudeEMANorm)
_DEFAULT_BATCH = (64,)
_FIXED_KEY = 20250101


def _data_function(norm, key, batch_shape, element: Element | None = None,
                   flavour: Flavour | None = None) -> Callable:
    def f(x):
        d = x.dtype
        mean, scale = norm.statistics_of(_gaussian_batch(key, batch_shape, norm.n, d))
        gamma, beta = norm.gamma.astype(d), norm.beta.astype(d)
        if element is not None:
            gamma, beta, mean, scale = _move(norm, flavour, element, gamma, beta, mean, scale)
        return norm.apply_statistics(x, mean, scale, gamma, beta, norm.eps).astype(d)

    return f


def _move(norm, flavour, element, gamma, beta, mean, scale):
    """Parameters θ = (γ, β, μ, scale) moved by g, with the batch statistics treated as
    parameters: f_{g·θ} = g∘f_θ (L), f_θ∘g (R) or g⁻¹∘f_θ∘g (E). Exact for g = aI + t1 (L,
    R; every per-coordinate Dx + t for BatchNorm) and for every affine g (E, ChiNorm) or
    monomial affine g (E, BatchNorm)."""
    d = beta.dtype
    m, t = element.matrix.astype(d), element.shift.astype(d)
    # a scalar γ (ChiNorm) takes the scale a of g = aI + t; a per-coordinate γ
    # (BatchNorm) the diagonal of D
    a = jnp.diagonal(m) if norm.per_coordinate else m[0, 0]
    if flavour is Flavour.LEFT:      # a(γ·z + β) + t
        return a * gamma, m @ beta + t, mean, scale
    if flavour is Flavour.RIGHT:     # γ·(a x + t − μ)/s + β = aγ·(x − (μ − t)/a)/s + β
        return a * gamma, beta, (mean - t) / a, scale
    minv = jnp.linalg.inv(m)         # M⁻¹(γ·(Mx + t − μ)/s + β − t)
    if not norm.per_coordinate:
        return gamma, minv @ (beta - t), minv @ (mean - t), scale
    # monomial M = PD: γ and the scale move with the permutation P⁻¹ alone (the rows of
    # |M⁻¹| normalised to one), β and μ with M⁻¹
    p = jnp.abs(minv)
    p = p / jnp.sum(p, axis=1, keepdims=True)
    return p @ gamma, minv @ (beta - t), minv @ (mean - t), p @ scale


class _Transported(eqx.Module):
    """A data-like normaliser with its parameters *and batch statistics* moved by a group
    element (what `transport` returns for ChiNorm and BatchNorm: the statistics live in
    the data, not in the module, so they are moved when the data batch is drawn)."""

    base: eqx.Module
    element: Element
    flavour: Flavour = eqx.field(static=True)

    taxonomy = property(lambda self: self.base.taxonomy)

    def __call__(self, x, *, key=None):
        return as_function(self)(x)


def _stateful_reinitialise(norm, key):
    del key  # deterministic initialisation γ = 1, β = 0
    return type(norm)(norm.n, norm.axis_name, norm.eps, norm.momentum, norm.inference,
                      dtype=norm.beta.dtype)


for _cls in _Stateful:
    signature.register(_cls)(lambda norm, n=None: Signature(((norm.n,),)))
    reinitialise.register(_cls)(_stateful_reinitialise)

signature.register(_Transported)(lambda tr, n=None: Signature(((tr.base.n,),)))


@data_call.register(_AbstractDataNormaliser)
def _(norm, key, batch_shape=_DEFAULT_BATCH) -> Callable:
    return _data_function(norm, key, batch_shape)


@data_call.register(_Transported)
def _(tr: _Transported, key, batch_shape=_DEFAULT_BATCH) -> Callable:
    return _data_function(tr.base, key, batch_shape, tr.element, tr.flavour)


@as_function.register(_AbstractDataNormaliser)
@as_function.register(_Transported)
def _(norm) -> Callable:
    return data_call(norm, jax.random.key(_FIXED_KEY), _DEFAULT_BATCH)


@transport.register(_AbstractDataNormaliser)
def _(norm, flavour, element, group):
    return _Transported(norm, element, Flavour(flavour))


_HISTORY = 3


@random_call.register
def _(norm: MagnitudeEMANorm, key) -> Callable:
    """One training step's per-example function after a random history: the previous
    moving statistic is that of `_HISTORY` steps whose magnitudes are norms of standard
    Gaussian vectors (a short history, so the current input's own magnitude weighs in
    and the step function is visibly not GL-equivariant)."""

    def f(x):
        d = x.dtype
        kz = key
        norms = safe_norm(jax.random.normal(kz, (_HISTORY, norm.n), d))
        rho = norm.momentum
        weights = (1 - rho) * rho ** jnp.arange(_HISTORY - 1, -1, -1, dtype=d)
        hidden = jnp.sum(weights * norms)
        s, _ = norm._step(x, jnp.array(_HISTORY, jnp.int32), hidden,
                          jax.lax.stop_gradient(safe_norm(x)))
        return F.magnitude_normalise(x, s, norm.gamma.astype(d), norm.beta.astype(d),
                                     norm.eps).astype(d)

    return f


@as_function.register
def _(norm: MagnitudeEMANorm) -> Callable:
    return random_call(norm, jax.random.key(_FIXED_KEY))


@transport.register
def _(norm: MagnitudeEMANorm, flavour, element, group) -> MagnitudeEMANorm:
    """L ($y \\mapsto a y + t$): γ ↦ aγ, β ↦ aβ + t. E (orthogonal M): β ↦ M⁻¹β. The
    statistic is a norm, unchanged by orthogonal maps. R ($x \\mapsto \\pm x$, the norm
    unchanged): γ ↦ ±γ."""
    flavour = Flavour(flavour)
    d = norm.beta.dtype
    m, t = element.matrix.astype(d), element.shift.astype(d)
    if flavour is Flavour.LEFT:
        return eqx.tree_at(lambda l: (l.gamma, l.beta), norm,
                           (m[0, 0] * norm.gamma, m @ norm.beta + t))
    if flavour is Flavour.RIGHT:
        return eqx.tree_at(lambda l: l.gamma, norm, m[0, 0] * norm.gamma)
    return eqx.tree_at(lambda l: l.beta, norm, jnp.linalg.inv(m) @ (norm.beta - t))

