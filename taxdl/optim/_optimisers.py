"""Optimisers as primitives: each a final `AbstractOptimiser` holding its hyperparameters
(static) and declaring the symmetry of its update rule (isotropic paper App. A.3)."""

from collections.abc import Callable
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Float

from ..groups import GeneralLinear, Orthogonal, Scaling, SignedPermutation
from .._types import check_bool
from ..taxonomy import (DimensionRequired, Signature, Taxonomy, as_function, register,
                        signature)
from ._base import AbstractOptimiser
from ._transforms import (
    _check_learning_rate,
    _clip_by_global_norm,
    _check_nonneg,
    _check_unit,
    normalise_by_global_norm,
    scale_by_adasgd,
)


def _update_rule(e, r=None, note: str = "") -> Taxonomy:
    """A parameter-free update rule: closure = probabilistic = algebraic (see
    `AbstractOptimiser`), with L trivial."""
    row = (None, r, e)
    return Taxonomy(closure=row, probabilistic=row, algebraic=row, note=note)


def _scale_free(eps_zero: bool):
    return Scaling(positive=True) if eps_zero else None


def _standard_promotion(tx: optax.GradientTransformation) -> optax.GradientTransformation:
    """`tx` traced under JAX's standard dtype promotion: some optax atoms (e.g. Adam's
    bias correction `decay ** count` with an int32 count) rely on implicit int → float
    promotion, which `jax_numpy_dtype_promotion="strict"` forbids."""

    def init_fn(params):
        with jax.numpy_dtype_promotion("standard"):
            return tx.init(params)

    def update_fn(updates, state, params=None):
        with jax.numpy_dtype_promotion("standard"):
            return tx.update(updates, state, params)

    return optax.GradientTransformation(init_fn, update_fn)


_HALF = (jnp.float16, jnp.bfloat16)


def _half_in_float32(tx: optax.GradientTransformation) -> optax.GradientTransformation:
    """`tx` with float16/bfloat16 leaves computed, and its state kept, in float32; the
    updates are returned in the leaves' dtypes. Per-coordinate statistics need the range:
    in float16 an ε of 1e-8 is 0 and a squared gradient below ~2.4e-4 underflows, so a
    zero gradient gives 0/0 and a small one ±∞."""

    def up(tree):
        return jax.tree.map(lambda leaf: leaf.astype(jnp.float32)
                            if getattr(leaf, "dtype", None) in _HALF else leaf, tree)

    def init_fn(params):
        return tx.init(up(params))

    def update_fn(updates, state, params=None):
        new, state = tx.update(up(updates), state, None if params is None else up(params))
        return jax.tree.map(lambda n, g: n.astype(g.dtype), new, updates), state

    return optax.GradientTransformation(init_fn, update_fn)


_EPS_NOTE = ("R: positive gradient scalings leave the update unchanged only up to ε "
             "(exactly when ε = 0)")


# ============================================================================ isotropic
class AdaSGD(AbstractOptimiser):
    """AdaSGD (isotropic paper App. A.3, eq 52): momentum SGD with one global adaptive
    step size from a scalar second moment of the whole gradient; see
    [`taxdl.optim.adasgd`][taxdl.optim.adasgd] for the update and where it differs from
    the published reference.

    **Symmetry:** algebraically O(d)-equivariant in the gradients (E); R: ℝ×₊ when ε = 0
    (the update ignores the gradients' overall scale), else trivial; L trivial.

    **Arguments:** `learning_rate` (number or schedule), `b1`, `b2`, `eps`.
    """

    learning_rate: float | Callable = eqx.field(static=True)
    b1: float = eqx.field(static=True)
    b2: float = eqx.field(static=True)
    eps: float = eqx.field(static=True)

    def __init__(self, learning_rate=1e-3, b1: float = 0.9, b2: float = 0.999,
                 eps: float = 1e-8):
        self.learning_rate = _check_learning_rate(learning_rate, "AdaSGD")
        self.b1 = _check_unit(b1, "b1", "AdaSGD")
        self.b2 = _check_unit(b2, "b2", "AdaSGD")
        self.eps = _check_nonneg(eps, "eps", "AdaSGD")

    @property
    def taxonomy(self) -> Taxonomy:
        return _update_rule(Orthogonal(), _scale_free(self.eps == 0),
                            "" if self.eps == 0 else _EPS_NOTE)

    def as_optax(self) -> optax.GradientTransformation:
        return optax.chain(scale_by_adasgd(self.b1, self.b2, self.eps),
                           optax.scale_by_learning_rate(self.learning_rate))


class NormalisedSGD(AbstractOptimiser):
    """Isotropic normalised SGD: $u_t = -η\\,\\mathrm{trace}_β(g_t/(\\|g_t\\|_2 + ε))$ with
    the global norm over all parameters (see
    [`taxdl.optim.normalised_sgd`][taxdl.optim.normalised_sgd]).

    **Symmetry:** algebraically O(d)-equivariant; R: ℝ×₊ when ε = 0, else trivial.

    **Arguments:** `learning_rate`, `momentum` in [0, 1), `nesterov`, `eps` ≥ 0.
    """

    learning_rate: float | Callable = eqx.field(static=True)
    momentum: float = eqx.field(static=True)
    nesterov: bool = eqx.field(static=True)
    eps: float = eqx.field(static=True)

    def __init__(self, learning_rate=1e-2, momentum: float = 0.0, nesterov: bool = False,
                 eps: float = 1e-8):
        self.learning_rate = _check_learning_rate(learning_rate, "NormalisedSGD")
        self.momentum = _check_unit(momentum, "momentum", "NormalisedSGD")
        self.nesterov = check_bool(nesterov, "nesterov", who="NormalisedSGD")
        self.eps = _check_nonneg(eps, "eps", "NormalisedSGD")

    @property
    def taxonomy(self) -> Taxonomy:
        return _update_rule(Orthogonal(), _scale_free(self.eps == 0),
                            "" if self.eps == 0 else _EPS_NOTE)

    def as_optax(self) -> optax.GradientTransformation:
        parts = [normalise_by_global_norm(self.eps)]
        if self.momentum > 0:
            parts.append(optax.trace(decay=self.momentum, nesterov=self.nesterov))
        parts.append(optax.scale_by_learning_rate(self.learning_rate))
        return optax.chain(*parts)


class IsotropicClip(AbstractOptimiser):
    """Isotropic gradient clipping: rescale the whole gradient to global norm at most
    `max_norm`, $g \\min(1, c/\\|g\\|_2)$ (as `optax.clip_by_global_norm`, with the norm
    accumulated in float32 also for float16/bfloat16 gradients). A gradient
    transformation: chain it before an optimiser.

    **Symmetry:** algebraically O(d)-equivariant (the isotropic alternative the
    isotropic paper's App. A.3 asks for); R, L trivial.

    **Arguments:** `max_norm` > 0.
    """

    max_norm: float = eqx.field(static=True)

    taxonomy: ClassVar[Taxonomy] = _update_rule(Orthogonal())

    def __init__(self, max_norm: float = 1.0):
        self.max_norm = _check_nonneg(max_norm, "max_norm", "IsotropicClip", positive=True)

    def as_optax(self) -> optax.GradientTransformation:
        return _clip_by_global_norm(self.max_norm, "IsotropicClip")


class SGD(AbstractOptimiser):
    """SGD with optional (Nesterov) momentum (`optax.sgd`), audited.

    **Symmetry:** the update is *linear* in the gradient sequence, so it commutes with
    every invertible linear map: algebraically GL(d)-equivariant. The isotropic paper
    (App. A.3) calls SGD and momentum basis-independent, i.e. O(d); the maximal group is
    larger.

    **Arguments:** `learning_rate`, `momentum` in [0, 1), `nesterov`.
    """

    learning_rate: float | Callable = eqx.field(static=True)
    momentum: float = eqx.field(static=True)
    nesterov: bool = eqx.field(static=True)

    taxonomy: ClassVar[Taxonomy] = _update_rule(
        GeneralLinear(), note="linear in the gradients: GL(d), wider than the paper's O(d)")

    def __init__(self, learning_rate=1e-2, momentum: float = 0.0, nesterov: bool = False):
        self.learning_rate = _check_learning_rate(learning_rate, "SGD")
        self.momentum = _check_unit(momentum, "momentum", "SGD")
        self.nesterov = check_bool(nesterov, "nesterov", who="SGD")

    def as_optax(self) -> optax.GradientTransformation:
        return _standard_promotion(
            optax.sgd(self.learning_rate, self.momentum or None, self.nesterov))


# ============================================================================ audits
_COORDINATE_NOTE = ("per-coordinate statistics (isotropic paper eqs 49–51): only signed "
                    "permutations commute with them; " + _EPS_NOTE)


class Adam(AbstractOptimiser):
    """Adam (isotropic paper eq 51), audited: its second moment is accumulated per
    coordinate, a diagonal approximation in the standard basis.

    Eq 51's step is $g'_t = \\tilde v_t / \\sqrt{\\tilde s_t + ε}$ with bias-corrected
    moments $\\tilde v_t = v_t/(1-β_1^t)$, $\\tilde s_t = s_t/(1-β_2^t)$: ε inside the
    square root, which is `optax.adam`'s `eps_root`. The arguments are `optax.adam`'s
    with their meanings, but the defaults follow eq 51 (`eps = 0`, `eps_root = 1e-8`);
    Kingma & Ba's placement $\\tilde v_t/(\\sqrt{\\tilde s_t} + ε)$, `optax.adam`'s
    default, is `Adam(lr, eps=1e-8, eps_root=0.0)`.

    **Symmetry:** algebraically Bₙ-equivariant only (signed permutations commute with
    elementwise squares and square roots); R trivial (ε sets a scale).

    **Arguments:**

    - `learning_rate`: η ≥ 0 or an optax schedule (default 1e-3).
    - `b1`, `b2`: β₁, β₂ in [0, 1) (defaults 0.9, 0.999).
    - `eps`: ≥ 0, added to $\\sqrt{\\tilde s_t}$ (default 0).
    - `eps_root`: ≥ 0, added to $\\tilde s_t$ under the root, eq 51's ε (default 1e-8).
      At least one of `eps`, `eps_root` must be positive (a zero gradient would give
      0/0).
    """

    learning_rate: float | Callable = eqx.field(static=True)
    b1: float = eqx.field(static=True)
    b2: float = eqx.field(static=True)
    eps: float = eqx.field(static=True)
    eps_root: float = eqx.field(static=True)

    taxonomy: ClassVar[Taxonomy] = _update_rule(SignedPermutation(), note=_COORDINATE_NOTE)

    def __init__(self, learning_rate=1e-3, b1: float = 0.9, b2: float = 0.999,
                 eps: float = 0.0, eps_root: float = 1e-8):
        self.learning_rate = _check_learning_rate(learning_rate, "Adam")
        self.b1 = _check_unit(b1, "b1", "Adam")
        self.b2 = _check_unit(b2, "b2", "Adam")
        self.eps = _check_nonneg(eps, "eps", "Adam")
        self.eps_root = _check_nonneg(eps_root, "eps_root", "Adam")
        if self.eps == 0 and self.eps_root == 0:
            raise ValueError("Adam: one of `eps` (added to √s̃) and `eps_root` (added to s̃, "
                             "eq 51's ε) must be > 0, got both 0.")

    def as_optax(self) -> optax.GradientTransformation:
        return _standard_promotion(_half_in_float32(
            optax.adam(self.learning_rate, self.b1, self.b2, self.eps, self.eps_root)))


class Adagrad(AbstractOptimiser):
    """Adagrad (isotropic paper eq 49), audited: per-coordinate sums of squared
    gradients, $θ_{t+1} = θ_t - η g_t/\\sqrt{s_t + ε}$ with $s_0 = 0$ (`optax.adagrad`).

    The sum includes the current gradient, $s_t = s_{t-1} + g_t^2$, as in Duchi et al.:
    eq 49 as printed divides by $s_t$ before adding $g_t^2$, whose first step would be
    $ηg_1/\\sqrt ε$ (about $3000\\,ηg_1$ at ε = 1e-7).

    **Symmetry:** algebraically Bₙ-equivariant only; R trivial (ε, and a non-zero
    initial accumulator, set a scale).

    **Arguments:** as `optax.adagrad`: `learning_rate`, `initial_accumulator_value`
    $s_0$ ≥ 0 (default 0, eq 49; optax's default is 0.1), `eps` > 0 (default 1e-7).
    """

    learning_rate: float | Callable = eqx.field(static=True)
    initial_accumulator_value: float = eqx.field(static=True)
    eps: float = eqx.field(static=True)

    taxonomy: ClassVar[Taxonomy] = _update_rule(SignedPermutation(), note=_COORDINATE_NOTE)

    def __init__(self, learning_rate=1e-2, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-7):
        self.learning_rate = _check_learning_rate(learning_rate, "Adagrad")
        self.initial_accumulator_value = _check_nonneg(
            initial_accumulator_value, "initial_accumulator_value", "Adagrad")
        self.eps = _check_nonneg(eps, "eps", "Adagrad", positive=True)

    def as_optax(self) -> optax.GradientTransformation:
        return _standard_promotion(_half_in_float32(
            optax.adagrad(self.learning_rate, self.initial_accumulator_value, self.eps)))


class AdaDelta(AbstractOptimiser):
    """AdaDelta (`optax.adadelta`; isotropic paper eq 50), audited: per-coordinate running
    averages of squared gradients and squared updates.

    $Δx_t$ averages the squared step $g'^2_t$, as in Zeiler: eq 50 as printed averages
    $g_t^2$ there, which would make $Δx_t$ equal to $s_t$.

    **Symmetry:** algebraically Bₙ-equivariant only; R trivial for ε > 0.

    **Arguments:** as `optax.adadelta`: `learning_rate` (default 1), `rho` in [0, 1),
    `eps` > 0.
    """

    learning_rate: float | Callable = eqx.field(static=True)
    rho: float = eqx.field(static=True)
    eps: float = eqx.field(static=True)

    taxonomy: ClassVar[Taxonomy] = _update_rule(SignedPermutation(), note=_COORDINATE_NOTE)

    def __init__(self, learning_rate=1.0, rho: float = 0.9, eps: float = 1e-6):
        self.learning_rate = _check_learning_rate(learning_rate, "AdaDelta")
        self.rho = _check_unit(rho, "rho", "AdaDelta")
        self.eps = _check_nonneg(eps, "eps", "AdaDelta", positive=True)

    def as_optax(self) -> optax.GradientTransformation:
        return _standard_promotion(_half_in_float32(
            optax.adadelta(self.learning_rate, self.rho, self.eps)))


class ElementwiseClip(AbstractOptimiser):
    """Per-coordinate gradient clipping to $[-c, c]$ (`optax.clip`), audited next to
    [`IsotropicClip`][taxdl.optim.IsotropicClip].

    **Symmetry:** algebraically Bₙ-equivariant only; R, L trivial.

    **Arguments:** `max_delta` > 0.
    """

    max_delta: float = eqx.field(static=True)

    taxonomy: ClassVar[Taxonomy] = _update_rule(
        SignedPermutation(), note="clips each coordinate: only signed permutations commute")

    def __init__(self, max_delta: float = 1.0):
        self.max_delta = _check_nonneg(max_delta, "max_delta", "ElementwiseClip",
                                       positive=True)

    def as_optax(self) -> optax.GradientTransformation:
        return _standard_promotion(optax.clip(self.max_delta))


# Examples are the checkable configurations: the scale-free rules with ε = 0 (eq 52
# verbatim for AdaSGD), the per-coordinate ones with an ε large enough that their trivial
# right cell is refutable at O(1) gradients (see docs/optim.md).
_REGISTER = [
    (AdaSGD, "m/(√(v̂/d)+ε), v = EMA‖g‖²", lambda: AdaSGD(0.1, eps=0.0),
     "isotropic paper eq 52"),
    (NormalisedSGD, "−η trace(g/(‖g‖+ε))", lambda: NormalisedSGD(0.1, 0.9, eps=0.0),
     "isotropic paper App. A.3"),
    (IsotropicClip, "g·min(1, c/‖g‖)", lambda: IsotropicClip(1.0), "isotropic paper App. A.3"),
    (SGD, "−η trace(g)", lambda: SGD(0.1, 0.9), "isotropic paper App. A.3"),
    (Adam, "m̂/√(ŝ+ε) per coordinate", lambda: Adam(0.1, eps_root=1e-2),
     "isotropic paper eq 51"),
    (Adagrad, "g/√(Σg²+ε) per coordinate", lambda: Adagrad(0.1, eps=1e-2),
     "isotropic paper eq 49"),
    (AdaDelta, "g·√(Δx+ε)/√(s+ε) per coordinate", lambda: AdaDelta(1.0, eps=1e-2),
     "isotropic paper eq 50"),
    (ElementwiseClip, "clip(g, −c, c)", lambda: ElementwiseClip(1.0), "isotropic paper App. A.3"),
]
for _cls, _formula, _example, _reference in _REGISTER:
    register(_cls, family="optimiser", formula=_formula, example=_example,
             reference=_reference)


# ============================================================================ hooks
CHECK_STEPS = 4
"""Number of steps T in the gradient sequences the checker feeds an update rule."""


def run_update_rule(opt: AbstractOptimiser, grads: Float[Array, "t d"],
                    params: Float[Array, " d"] | None = None) -> Float[Array, "t d"]:
    """The update rule as a function: from a sequence of gradients of one flat parameter
    vector, shape `(T, d)`, and the initial parameters θ₀ (shape `(d,)`, zeros when
    None) to the sequence of updates `(T, d)`, with state from `init(θ₀)` and each update
    applied before the next step ($θ_{t+1} = θ_t + u_t$), so that a rule reading the
    parameters (weight decay, say) is seen at non-zero ones."""
    tx = opt.as_optax()
    if params is None:
        params = jnp.zeros(grads.shape[-1:], grads.dtype)

    def step(carry, g):
        theta, state = carry
        u, state = tx.update(g, state, theta)
        return (optax.apply_updates(theta, u), state), u

    _, updates = jax.lax.scan(step, (params, tx.init(params)), grads)
    return updates


@as_function.register
def _(opt: AbstractOptimiser) -> Callable:
    return lambda grads, params: run_update_rule(opt, grads, params)


@signature.register
def _(opt: AbstractOptimiser, n=None) -> Signature:
    if n is None:
        raise DimensionRequired(type(opt).__name__, "the parameter count `n` (the checker "
                                "feeds (T, n) gradient sequences)")
    return Signature(((CHECK_STEPS, n), (n,)))
