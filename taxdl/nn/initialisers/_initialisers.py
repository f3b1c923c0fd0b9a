"""Initialisers as tagged primitives (isotropic paper App. A.2, eq 48).

An initialiser `init(key, shape, dtype)` draws a parameter array. Its taxonomy is that of
the linear layer $x \\mapsto Wx$ it initialises, with $W$ = `init(key, (n, n))`: the class
F is every linear map, so the closure cells are GL (any $A$ is absorbed by $W$) and the
algebraic cells trivial, as in Table 5.2's affine row; the probabilistic cells say
whether the *law* of $W$ is invariant under $W \\mapsto AW$ (L), $WA$ (R) and $A^{-1}WA$
(E) — eq 48's $\\mathbb P(RWT) = \\mathbb P(W)$.

A module's scale (`gain`, `radius`, `stddev`) and bounds are static hyperparameters: Python
or NumPy numbers, or concrete JAX scalars (converted to Python floats). A traced value is
refused with a `TypeError` that says so; the functional forms in `taxdl.nn.functional`
take a traced scale.
"""

import math
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, PRNGKeyArray

from ..._types import RealLike, as_real, check_real
from ...groups import (
    GeneralLinear,
    Orthogonal,
    Permutation,
    Scaling,
    SignedPermutation,
    SignFlips,
    scalings_times,
)
from ...taxonomy import AbstractInitialiser, Taxonomy, register
from . import _functional as F


class _NotANumber:
    """What `_as_static_real` keeps, for `__check_init__` to refuse by name, in place of a
    JAX array that is not a concrete real scalar: a static field holding the array itself
    would make Equinox warn before the check runs."""

    def __init__(self, value: jax.Array):
        self.description = ("a traced value" if isinstance(value, jax.core.Tracer) else
                            f"an array of shape {value.shape} and dtype {value.dtype}")

    def __repr__(self) -> str:
        return f"<{self.description}>"


def _as_static_real(value):
    """Converter of the modules' scale fields: `as_real`, and a concrete real JAX or NumPy
    scalar becomes a Python float too. Any other JAX array (traced, or not a real scalar)
    is replaced by a `_NotANumber` that `__check_init__` refuses by name."""
    if isinstance(value, (jax.Array, np.ndarray)):
        if not isinstance(value, jax.core.Tracer) and F.real_scalar_array(value):
            return float(value.item())
        if isinstance(value, jax.Array):
            return _NotANumber(value)
    return as_real(value)


def _check_static_real(value, name: str, who: str, **bounds) -> float:
    """A module's scale or bound: a static hyperparameter, so a number (`check_real`). A
    JAX array the converter could not turn into one is refused with a message that says
    so and points to the functional form, which takes traced values."""
    if isinstance(value, _NotANumber):
        raise TypeError(f"{who}: `{name}` is a static hyperparameter and must be a Python "
                        f"or NumPy number or a concrete JAX scalar, got {value.description}."
                        f" For a traced `{name}` (e.g. under jax.jit) call the functional "
                        "form in taxdl.nn.functional, which takes it as an argument.")
    return check_real(value, name, who=who, **bounds)


def _check_positive(value, name: str, who: str) -> float:
    return _check_static_real(value, name, who, low=0, low_open=True)


def _law(left, right, within, note: str = "") -> Taxonomy:
    """The declaration of a linear layer $x \\mapsto Wx$ whose weights have a law invariant
    under `left` (W ↦ AW), `right` (W ↦ WA) and `within` (W ↦ A⁻¹WA). Every such map commutes
    with scalings, so E carries the factor ℝ× (algebraically: ℝ× alone); with O(n) the two
    generate the similarities ℝ×·O(n)."""
    return Taxonomy(
        closure=(GeneralLinear(), GeneralLinear(), GeneralLinear()),
        probabilistic=(left, right, scalings_times(within)),
        algebraic=(None, None, Scaling()),
        note=note,
    )


_GAUSSIAN = _law(Orthogonal(), Orthogonal(), Orthogonal())

_BOX = _law(
    SignedPermutation(), SignedPermutation(), SignedPermutation(),
    note="iid bounded entries: signed permutations preserve the law; no rotation does "
         "(Maxwell: rotation-invariant iid entries are Gaussian)",
)


@register(family="initialiser", formula="W = g·UΛV, U,V Haar",
          reference="isotropic paper App. A.2, eq 48")
class HaarOrthogonal(AbstractInitialiser):
    """Haar (semi-)orthogonal initialiser $W = g\\,UΛV$ (isotropic paper App. A.2):
    $U ∈ O(m)$, $V ∈ O(n)$ Haar-distributed, $Λ$ the padded identity, gain $g$.

    **Symmetry:** probabilistically O(n)-invariant on both sides and under conjugation
    (eq 48); closure GL and algebraically trivial, as for any linear layer.

    **Arguments:**

    - `gain`: the singular value $g > 0$ of every draw (default 1; a static number).
    """

    gain: RealLike = eqx.field(static=True, default=1.0, converter=_as_static_real)

    taxonomy: ClassVar[Taxonomy] = _GAUSSIAN

    def __check_init__(self):
        _check_positive(self.gain, "gain", "HaarOrthogonal")

    @jax.named_scope("taxdl.HaarOrthogonal")
    def __call__(self, key: PRNGKeyArray, shape, dtype=None) -> Array:
        return F.haar_orthogonal(key, shape, dtype, self.gain)


@register(family="initialiser", formula="W_ij ~ N(0, g²/fan)",
          reference="isotropic paper App. A.2, eq 48")
class IsotropicNormal(AbstractInitialiser):
    """Isotropic Gaussian initialiser $W_{ij} \\sim \\mathcal N(0, g^2/\\text{fan})$ iid
    (isotropic paper App. A.2), the variance chosen in the spirit of Glorot/He:
    `mode="fan_in"` ($g^2/n_{in}$, default), `"fan_out"` ($g^2/n_{out}$, which keeps
    $\\mathbb E\\|Wx\\|^2 = g^2\\|x\\|^2$) or `"fan_avg"` ($2g^2/(n_{in}+n_{out})$).

    **Symmetry:** probabilistically O(n) on both sides and under conjugation (eq 48);
    the support is every matrix, so closed under GL.
    """

    mode: str = eqx.field(static=True, default="fan_in")
    gain: RealLike = eqx.field(static=True, default=1.0, converter=_as_static_real)

    taxonomy: ClassVar[Taxonomy] = _GAUSSIAN

    def __check_init__(self):
        if self.mode not in F._MODES:
            raise ValueError(f"IsotropicNormal: `mode` must be one of {F._MODES}, got "
                             f"{self.mode!r}.")
        _check_positive(self.gain, "gain", "IsotropicNormal")

    @jax.named_scope("taxdl.IsotropicNormal")
    def __call__(self, key: PRNGKeyArray, shape, dtype=None) -> Array:
        return F.isotropic_normal(key, shape, dtype, self.mode, self.gain)


@register(family="initialiser", formula="rows ~ Unif(S^{n-1})",
          reference="isotropic paper App. A.2 (vMF, κ = 0)")
class SphereUniform(AbstractInitialiser):
    """Unit-direction initialiser: every row (last axis) uniform on the sphere of radius
    `radius` — von Mises–Fisher with κ = 0.

    **Symmetry:** as the map $x \\mapsto Wx$: the law is invariant under $W \\mapsto WB$ for
    all $B ∈ O(n)$ (R); on the output side only signed permutations keep the rows unit
    vectors, so L and E are Bₙ.
    """

    radius: RealLike = eqx.field(static=True, default=1.0, converter=_as_static_real)

    taxonomy: ClassVar[Taxonomy] = _law(SignedPermutation(), Orthogonal(), SignedPermutation())

    def __check_init__(self):
        _check_positive(self.radius, "radius", "SphereUniform")

    @jax.named_scope("taxdl.SphereUniform")
    def __call__(self, key: PRNGKeyArray, shape, dtype=None) -> Array:
        return F.sphere_uniform(key, shape, dtype, self.radius)


@register(family="initialiser", formula="U(±g√(6/(n_in+n_out)))",
          reference="Glorot & Bengio 2010; audit, isotropic paper App. A.2")
class GlorotUniform(AbstractInitialiser):
    """Glorot/Xavier uniform (audit): $W_{ij} \\sim U(-a, a)$,
    $a = g\\sqrt{6/(n_{in}+n_{out})}$.

    **Symmetry:** iid non-Gaussian entries: the law is invariant under signed
    permutations (Bₙ) only; not O(n) (Table 5.2's affine row assumes an
    isotropic initialiser, which this is not).
    """

    gain: RealLike = eqx.field(static=True, default=1.0, converter=_as_static_real)

    taxonomy: ClassVar[Taxonomy] = _BOX

    def __check_init__(self):
        _check_positive(self.gain, "gain", "GlorotUniform")

    @jax.named_scope("taxdl.GlorotUniform")
    def __call__(self, key: PRNGKeyArray, shape, dtype=None) -> Array:
        return F.glorot_uniform(key, shape, dtype, self.gain)


@register(family="initialiser", formula="N(0, 2g²/(n_in+n_out))",
          reference="Glorot & Bengio 2010; audit, isotropic paper App. A.2")
class GlorotNormal(AbstractInitialiser):
    """Glorot/Xavier normal (audit): $W_{ij} \\sim \\mathcal N(0, 2g^2/(n_{in}+n_{out}))$,
    untruncated as in the original paper (note: `jax.nn.initializers.glorot_normal`
    truncates, and then has the symmetry of [`TruncatedNormal`][taxdl.nn.TruncatedNormal]).

    **Symmetry:** iid Gaussian: probabilistically O(n) on both sides; closure GL.
    """

    gain: RealLike = eqx.field(static=True, default=1.0, converter=_as_static_real)

    taxonomy: ClassVar[Taxonomy] = _GAUSSIAN

    def __check_init__(self):
        _check_positive(self.gain, "gain", "GlorotNormal")

    @jax.named_scope("taxdl.GlorotNormal")
    def __call__(self, key: PRNGKeyArray, shape, dtype=None) -> Array:
        return F.isotropic_normal(key, shape, dtype, "fan_avg", self.gain)


@register(family="initialiser", formula="U(±g√(3/n_in)), g=√2",
          reference="He et al. 2015; audit, isotropic paper App. A.2")
class HeUniform(AbstractInitialiser):
    """He/Kaiming uniform (audit): $W_{ij} \\sim U(-a, a)$, $a = g\\sqrt{3/n_{in}}$,
    $g = \\sqrt 2$.

    **Symmetry:** signed permutations (Bₙ) only, like every iid uniform initialiser.
    """

    gain: RealLike = eqx.field(static=True, default=math.sqrt(2.0), converter=_as_static_real)

    taxonomy: ClassVar[Taxonomy] = _BOX

    def __check_init__(self):
        _check_positive(self.gain, "gain", "HeUniform")

    @jax.named_scope("taxdl.HeUniform")
    def __call__(self, key: PRNGKeyArray, shape, dtype=None) -> Array:
        return F.he_uniform(key, shape, dtype, self.gain)


@register(family="initialiser", formula="N(0, g²/n_in), g=√2",
          reference="He et al. 2015; audit, isotropic paper App. A.2")
class HeNormal(AbstractInitialiser):
    """He/Kaiming normal (audit): $W_{ij} \\sim \\mathcal N(0, g^2/n_{in})$, $g = \\sqrt 2$,
    untruncated as in the original paper (`jax.nn.initializers.he_normal` truncates).

    **Symmetry:** iid Gaussian: probabilistically O(n) on both sides; closure GL.
    """

    gain: RealLike = eqx.field(static=True, default=math.sqrt(2.0), converter=_as_static_real)

    taxonomy: ClassVar[Taxonomy] = _GAUSSIAN

    def __check_init__(self):
        _check_positive(self.gain, "gain", "HeNormal")

    @jax.named_scope("taxdl.HeNormal")
    def __call__(self, key: PRNGKeyArray, shape, dtype=None) -> Array:
        return F.isotropic_normal(key, shape, dtype, "fan_in", self.gain)


@register(family="initialiser", formula="N(0, σ²) truncated to [lo, hi]σ",
          example=lambda: TruncatedNormal(),
          reference="audit, isotropic paper App. A.2")
class TruncatedNormal(AbstractInitialiser):
    """Truncated normal (audit): iid $\\mathcal N(0, 1)$ truncated to
    [`lower`, `upper`] and rescaled to standard deviation `stddev`.

    **Symmetry:** bounded iid entries: signed permutations (Bₙ) when the bounds are
    symmetric, only permutations (Sₙ) otherwise; never O(n).
    """

    stddev: RealLike = eqx.field(static=True, default=1.0, converter=_as_static_real)
    lower: RealLike = eqx.field(static=True, default=-2.0, converter=_as_static_real)
    upper: RealLike = eqx.field(static=True, default=2.0, converter=_as_static_real)

    def __check_init__(self):
        _check_positive(self.stddev, "stddev", "TruncatedNormal")
        lower = _check_static_real(self.lower, "lower", "TruncatedNormal")
        if not lower < _check_static_real(self.upper, "upper", "TruncatedNormal"):
            raise ValueError(f"TruncatedNormal: need `lower` < `upper`, got {self.lower!r} "
                             f"and {self.upper!r}.")

    @property
    def taxonomy(self) -> Taxonomy:
        if self.lower == -self.upper:
            return _BOX
        return _law(Permutation(), Permutation(), Permutation(),
                    note="asymmetric truncation: the entries' law is not even, so sign "
                             "flips fail")

    @jax.named_scope("taxdl.TruncatedNormal")
    def __call__(self, key: PRNGKeyArray, shape, dtype=None) -> Array:
        return F.truncated_normal(key, shape, dtype, self.stddev, self.lower, self.upper)


@register(family="initialiser", formula="W = 0", reference="audit, isotropic paper App. A.2")
class Zeros(AbstractInitialiser):
    """The zero initialiser (audit).

    **Symmetry:** $A\\,0 = 0\\,A = 0$: the law (a point mass) is GL-invariant in every
    probabilistic cell; the layer's class is still every linear map (closure GL,
    algebraically trivial). It is rank 0, which App. A.2 rules out for weights.
    """

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(GeneralLinear(), GeneralLinear(), GeneralLinear()),
        probabilistic=(GeneralLinear(), GeneralLinear(), GeneralLinear()),
        algebraic=(None, None, Scaling()),
        note="a point mass at 0: its law is GL-invariant; the layer's class is not",
    )

    @jax.named_scope("taxdl.Zeros")
    def __call__(self, key: PRNGKeyArray, shape, dtype=None) -> Array:
        return F.zeros(key, shape, dtype)


@register(family="initialiser", name="QROrthogonal (no sign fix)", formula="Q of qr(Z)",
          reference="audit, isotropic paper App. A.2")
class QROrthogonal(AbstractInitialiser):
    """The naive orthogonal initialiser (audit): $Q$ from the QR decomposition of a
    Gaussian matrix without correcting the signs of diag(R).

    **Symmetry:** every draw is orthogonal, but Householder QR ties each column's sign to
    a pivot entry, so the law is not Haar (with LAPACK's convention $Q_{11} < 0$ always)
    and no orthogonal invariance survives. What survives is conjugation by sign flips,
    $W \\mapsto DWD$ with $D = \\operatorname{diag}(\\pm 1)$: $DZD = (DQD)(DRD)$ is again a
    QR factorisation whose R has the same diagonal signs, which Householder QR returns,
    and $DZD$ has the law of $Z$. So the E cell is ℝ× × ℤ₂ⁿ; left and right cells are
    trivial.

    **Arguments:**

    - `gain`: the scale $g > 0$ (default 1; a static number).
    """

    gain: RealLike = eqx.field(static=True, default=1.0, converter=_as_static_real)

    taxonomy: ClassVar[Taxonomy] = _law(
        None, None, SignFlips(),
        note="Q's column signs follow Householder pivots: not Haar, only invariant under "
             "W ↦ DWD for sign flips D (fix: multiply by sign(diag R), as HaarOrthogonal "
             "does)",
    )

    def __check_init__(self):
        _check_positive(self.gain, "gain", "QROrthogonal")

    @jax.named_scope("taxdl.QROrthogonal")
    def __call__(self, key: PRNGKeyArray, shape, dtype=None) -> Array:
        return F.qr_orthogonal(key, shape, dtype, self.gain)


def _check_callable(initialiser, who: str) -> None:
    if not callable(initialiser):
        raise TypeError(f"{who}: `initialiser` must be callable as initialiser(key, shape, "
                        f"dtype), e.g. taxdl.nn.HaarOrthogonal(), got {initialiser!r}.")


def _is_weighted(m) -> bool:
    return isinstance(m, eqx.Module) and isinstance(getattr(m, "weight", None), jax.Array) \
        and m.weight.ndim >= 2


_KERNELS = (eqx.nn.Conv, eqx.nn.ConvTranspose)


def _check_not_kernel(layer, who: str) -> None:
    """Convolution kernels are laid out (out, in, *kernel): read as a stack of (..., out,
    in) matrices they would get per-kernel-position matrices and wrong fans."""
    if isinstance(layer, _KERNELS):
        raise TypeError(f"{who}: `{type(layer).__name__}` has a convolution kernel of shape "
                        f"{layer.weight.shape} = (out, in, *kernel), not a stack of "
                        "(..., out, in) matrices; initialise it with an initialiser for "
                        "that layout.")


def init_linear(layer, initialiser, key: PRNGKeyArray, *, bias=None):
    """Return `layer` (any module with a `weight` array, e.g. [`taxdl.nn.Linear`][] or
    `eqx.nn.Linear`) with `weight` redrawn as `initialiser(key, weight.shape,
    weight.dtype)`; with `bias=` another initialiser, `bias` is redrawn too.

    `initialiser` may be a taxdl initialiser or any `jax.nn.initializers`-style function.

    **Symmetry:** the layer's class is unchanged; its initialisation law becomes the
    initialiser's (see its declaration).
    """
    _check_callable(initialiser, "init_linear")
    weight = getattr(layer, "weight", None)
    _check_not_kernel(layer, "init_linear")
    if not isinstance(weight, jax.Array):
        raise TypeError(f"init_linear: `layer` must have a `weight` array, got "
                        f"{type(layer).__name__}.")
    if not callable(initialiser):
        raise TypeError(f"init_linear: `initialiser` must be callable as "
                        f"init(key, shape, dtype), got {initialiser!r}.")
    kw, kb = jax.random.split(key)
    layer = eqx.tree_at(lambda l: l.weight, layer,
                        initialiser(kw, weight.shape, weight.dtype))
    if bias is not None:
        b = getattr(layer, "bias", None)
        if not isinstance(b, jax.Array):
            raise TypeError(f"init_linear: `bias=` given but {type(layer).__name__} has no "
                            "`bias` array.")
        layer = eqx.tree_at(lambda l: l.bias, layer, bias(kb, b.shape, b.dtype))
    return layer


def init_weights(model, initialiser, key: PRNGKeyArray):
    """Return `model` with the `weight` matrix (ndim ≥ 2) of every submodule redrawn from
    `initialiser`, each with its own key (biases untouched). Convolution layers
    (`eqx.nn.Conv`, `eqx.nn.ConvTranspose`), whose kernels are not `(..., out, in)`
    matrices, raise a `TypeError`.

    **Symmetry:** as [`init_linear`][taxdl.nn.init_linear], for every layer.
    """
    _check_callable(initialiser, "init_weights")
    leaves, treedef = jax.tree_util.tree_flatten(model, is_leaf=_is_weighted)
    for leaf in leaves:
        if _is_weighted(leaf):
            _check_not_kernel(leaf, "init_weights")
    count = sum(_is_weighted(leaf) for leaf in leaves)
    keys = iter(jax.random.split(key, max(count, 1)))
    new = [eqx.tree_at(lambda m: m.weight, leaf,
                       initialiser(next(keys), leaf.weight.shape, leaf.weight.dtype))
           if _is_weighted(leaf) else leaf for leaf in leaves]
    return jax.tree_util.tree_unflatten(treedef, new)


def as_init_fn(initialiser):
    """The initialiser as a plain `jax.nn.initializers`-style function `f(key, shape,
    dtype=jnp.float32)`.

    **Symmetry:** that of the initialiser (the same law).
    """
    _check_callable(initialiser, "as_init_fn")

    def init_fn(key, shape, dtype=jnp.float32):
        return initialiser(key, shape, dtype)

    return init_fn
