"""Geometric Parameterization layers (GmP paper §3): `GmPLinear`, `GmPConv` and Input
Mean Normalisation (`InputMeanNorm`, Remark 3.6)."""

import functools as ft
from collections.abc import Callable, Hashable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import named_scope
from jaxtyping import Array, Float, Int, PRNGKeyArray, Real

from ...groups import (
    Affine,
    Euclidean,
    GeneralLinear,
    Monomial,
    Orthogonal,
    Permutation,
    PointReflection,
    Product,
    Scaling,
    SignedPermutation,
    Translations,
    is_subgroup,
)
from ...taxonomy import (
    AbstractLayer,
    AbstractNormaliser,
    Flavour,
    Signature,
    Taxonomy,
    as_function,
    data_call,
    perturb,
    register,
    reinitialise,
    signature,
    transport,
)
from ..._types import (check_bool, check_callable, check_float_dtype, check_int,
                        resolve_inference)
from .._numerics import compute_dtype, require_real
from ..normalisers._checks import check_momentum
from ..normalisers._stateful import _debias, _gaussian_batch, _scaled_batch_mean
from ._gmp_functional import (
    direction_columns,
    gmp_angles,
    input_mean_norm,
    units_t,
)

SIGN_DTYPE = jnp.int8  # the fixed ±1 directions of 1-D units: not a trainable parameter

# Activations σ with σ(c·s) = c·σ(s) for c > 0: a positive rescaling of a unit's
# pre-activation is then absorbed by (r, λ), which widens the right closure to GL.
_POSITIVELY_HOMOGENEOUS = (jax.nn.relu, jax.nn.leaky_relu)
# Odd activations σ(−s) = −σ(s): flipping a unit's output sign is then the same as
# flipping its direction and λ, which the initialisation law cannot tell apart.
_ODD = (jnp.tanh, jnp.sin, jnp.sinh, jnp.arctan, jnp.arcsinh, jax.nn.soft_sign,
        jax.nn.hard_tanh)


def _check_activation(activation, who: str) -> Callable:
    return check_callable(activation, "activation", who=who, example="jax.nn.relu")


def activation_commutes_with(activation, group) -> bool | None:
    """Whether a tagged activation's declared algebraic E cell (its input group and, for
    a mismatched representation, its output group) contains the family `group`
    (f(g·x) = g·f(x) for g in it): `PointReflection()` for an odd σ, `Scaling(positive=
    True)` for a positively homogeneous one. None for an untagged callable (nothing
    declared)."""
    cell = _declared_equivariance(activation)
    if cell is None:
        return None
    # with a different output representation, g must act on both sides
    return all(is_subgroup(group, g) for g in (cell.group, cell.out) if g is not None)


def _declared_equivariance(activation):
    """A tagged activation's declared algebraic E cell; None for an untagged callable."""
    from ...taxonomy import taxonomy as declared

    try:
        return declared(activation).cell("algebraic", "E")
    except TypeError:
        return None


def check_unit_activation(activation, width: int, who: str) -> None:
    """Refuse an activation that does not commute with permutations of the units.

    GmP parameterises each unit on its own ($z_i = r_i σ(u_i^T x + λ_i)$, transported unit
    by unit), and its declared symmetries (closure L Sₙ⋉(ℝ×)ⁿ, E Bₙ or the monomials,
    probabilistic Sₙ) hold only if σ(Pz) = Pσ(z) for every permutation P of the `width`
    units: σ elementwise (ReLU, tanh) or isotropic (IsotropicTanh, Squash). An activation
    that mixes units within blocks (CoLU, RCoLU: a Lorentz cone per group of units) is
    refused with a `ValueError`. Read from a tagged activation's declared algebraic E cell
    (its input group and, for a mismatched representation, its output group); an untagged
    callable declares nothing and is taken as elementwise, as documented."""
    # (S₁ is trivial: nothing to commute with)
    if width < 2 or activation_commutes_with(activation, Permutation(width)) is not False:
        return
    cell = _declared_equivariance(activation)
    raise ValueError(
        f"{who}: `activation` must commute with permutations of the units (elementwise, "
        "e.g. ReLU or tanh, or isotropic, e.g. IsotropicTanh or Squash): GmP parameterises "
        "each unit on its own, z_i = r_i·σ(u_iᵀx + λ_i), and its unit-permutation "
        f"symmetries need σ(Pz) = Pσ(z); got {activation!r}, whose algebraic E cell "
        f"{cell.name} does not contain the permutations S_{width} of the {width} units "
        "(it mixes units, e.g. within a cone). Apply such an activation after affine "
        "layers instead (MLP(..., parameterization='standard')).")


class _FixedActivation(eqx.Module):
    """A plain callable σ (a function, `functools.partial`, ...: a single pytree leaf
    that is not an array), held in a static field."""

    fn: Callable = eqx.field(static=True)

    def __call__(self, z):
        return self.fn(z)


def _activation_field(activation):
    """What a GmP layer stores for σ, in a normal (not static) field: an activation that
    is a pytree node (an `eqx.Module`) as it is, so that its arrays (e.g. a trainable
    gain) are leaves of the layer, trained with it and traced by `jax.jit`; a plain
    callable, a leaf that is not a JAX type, wrapped static, so that the layer's leaves
    stay arrays (`jax.grad` and `jax.jit` take the layer as they did)."""
    leaves = jax.tree.leaves(activation)
    if len(leaves) == 1 and leaves[0] is activation and not eqx.is_array(activation):
        return _FixedActivation(activation)
    return activation


def _activation_of(field):
    return field.fn if isinstance(field, _FixedActivation) else field


def _known(activation, flag: bool | None, known, group, name: str, who: str) -> bool:
    """`flag` when given; else whether `activation` is one of the `known` functions or a
    tagged activation whose algebraic E cell contains `group`."""
    if flag is not None:
        return check_bool(flag, name, who=who)
    return any(activation is a for a in known) or bool(
        activation_commutes_with(activation, group))


def _gmp_taxonomy(homogeneous: bool, odd: bool, shifts: bool = True) -> Taxonomy:
    """`shifts`: whether λ absorbs input translations (not for a zero-padded convolution,
    whose padding does not move with a shift)."""
    units = SignedPermutation() if odd else Permutation()
    if shifts:
        right = Affine() if homogeneous else Euclidean()
    else:
        right = GeneralLinear() if homogeneous else Orthogonal()
    # At the initialisation λ = 0, r = 1, a positively homogeneous σ makes the layer
    # positively homogeneous: a⁻¹ f(a x) = f(x) for a > 0, so ℝ×₊ joins E in law.
    units_e = Product(Scaling(positive=True), units) if homogeneous else units
    return Taxonomy(
        closure=(Monomial(), right,
                 Monomial() if homogeneous else SignedPermutation()),
        probabilistic=(units, Orthogonal(), units_e),
        note=("closure L: a permutation of units with per-unit scalings d ≠ 0 is absorbed by "
              "r ↦ d r (r is a free real): Sₙ⋉(ℝ×)ⁿ; R: uᵀM = c·u′ with c > 0 is absorbed by "
              "r ↦ cr, λ ↦ λ/c " + ("(σ positively homogeneous: GL; E: the monomials)"
                                    if homogeneous else
                                    "only for c = 1 (σ not positively homogeneous: O(n); "
                                    "E: the orthogonal monomials Bₙ)")
              + ("; a translation t of the input is absorbed by λ ↦ λ + uᵀt (R: Aff(n) or "
                 "E(n))" if shifts else "")
              + "; P: directions uniform on the sphere, λ = 0, r = 1 (Remark 3.5); "
              + ("σ odd: −σ(uᵀx) = σ(−uᵀx), so output sign flips keep the law (Bₙ)" if odd
                 else "r = 1 fixes the output signs (Sₙ)")
              + ("; E in law also has ℝ×₊: with λ = 0 a positively homogeneous σ makes "
                 "the layer positively homogeneous" if homogeneous else "")),
    )


@ft.partial(jax.jit, static_argnums=(1, 2, 3))
def _init_units(key, out: int, n: int, dtype):
    """Remark 3.5: directions uniform on $S^{n-1}$ as the angles of Gaussian vectors
    (uniform angles would not be uniform on the sphere, and at n = 1024 the product of
    their sines underflows most weights to 0 in float32), λ = 0, r = 1. For n = 1: fixed
    signs ±1 with probability ½. Returns (θᵀ, λ, r, sign), the angles one column per
    unit (the layers' layout)."""
    w = jax.random.normal(key, (out, n), dtype)
    theta, _ = gmp_angles(w)
    sign = jnp.where(w[:, 0] < 0, -1, 1).astype(SIGN_DTYPE) if n == 1 else None
    return theta.T, jnp.zeros((out,), dtype), jnp.ones((out,), dtype), sign


def _from_cartesian(weight, bias, who: str):
    """(θ, λ, r, sign) with r σ(u·x + λ) = σ(w·x + b) for positively homogeneous σ:
    r = ‖w‖, u = w/‖w‖, λ = b/‖w‖."""
    weight = jnp.asarray(weight)
    if weight.ndim != 2:
        raise ValueError(f"{who}: `weight` must have shape (out, in), got {weight.shape}.")
    if not jnp.issubdtype(weight.dtype, jnp.floating):
        raise TypeError(f"{who}: `weight` must be a real floating array, got {weight.dtype}.")
    out, n = weight.shape
    if out < 1 or n < 1:
        raise ValueError(f"{who}: `weight` must have at least one row and one column, got "
                         f"shape {weight.shape}.")
    bias = jnp.zeros((out,), weight.dtype) if bias is None else jnp.asarray(bias)
    if bias.shape != (out,):
        raise ValueError(f"{who}: `bias` must have shape ({out},), got {bias.shape}.")
    bias = bias.astype(weight.dtype)
    theta, radius = gmp_angles(weight)
    try:
        bad = np.flatnonzero((np.asarray(radius) == 0) & (np.asarray(bias) != 0))
    except jax.errors.TracerArrayConversionError:  # traced: cannot check here
        bad = np.zeros((0,), int)
    if bad.size:
        raise ValueError(
            f"{who}: rows {bad.tolist()} have a zero weight vector and a non-zero bias, "
            "a constant unit with no GmP form (u must be a unit vector); drop or "
            "perturb those units first.")
    safe = jnp.where(radius > 0, radius, 1)
    lam = jnp.where(radius > 0, bias / safe, 0)
    sign = jnp.where(weight[:, 0] < 0, -1, 1).astype(SIGN_DTYPE) if n == 1 else None
    return theta, lam, radius, sign


def _angle_rows(layer, who: str):
    """`layer.theta_t` with its last two axes swapped (the angles one row per unit; a
    stacked ensemble keeps its leading axes); a clear error where a field is expected
    (e.g. `eqx.tree_at(lambda l: l.theta, ...)`)."""
    theta_t = layer.theta_t
    if not hasattr(theta_t, "shape"):
        raise AttributeError(
            f"{who}.theta is a transposed copy of the field `theta_t`, not a field: to "
            "replace the angles, replace `theta_t` (shape (in−1, out), one column per "
            "unit), e.g. eqx.tree_at(lambda l: l.theta_t, layer, theta.T).")
    return jnp.swapaxes(theta_t, -1, -2)


# ============================================================================ GmPLinear
class GmPLinear(AbstractLayer):
    """A layer of Geometric Parameterization units (GmP paper eq 13):

    $$z_i = r_i\\,σ\\big(u(θ_i)^T x + λ_i\\big),$$

    with $u(θ)$ the unit vector of hyperspherical angles θ (eq 11): θ sets the direction of
    each unit's characteristic activation boundary, λ its signed distance from the origin
    (spatial location $φ = -λ\\,u(θ)$, eq 10) and r the output scale.

    Initialisation (Remark 3.5): directions uniform on the sphere (the angles of Gaussian
    vectors), λ = 0, r = 1, independent of the layer size.

    Storage: the angles of unit i are column i of the field `theta_t`, shape
    `(in_features − 1, out_features)`, the layout in which u(θ) is built, forward and
    backward, without transposing (gradients and optimiser states have this layout too);
    the property `theta` gives them one row per unit, `(out_features, in_features − 1)`,
    as the paper writes them (a transposed copy: to set angles, replace `theta_t`).

    With `in_features = 1` there are no angles (θ has shape `(out, 0)`) and each unit's
    direction is a fixed sign ±1 (the field `sign`, drawn uniformly; the paper's 1-D
    GmP: "θ initialised to 0 or π uniformly at random and fixed throughout training").
    `sign` is an integer array (int8), so it is not a parameter: `eqx.is_inexact_array`
    filters leave it out of gradients, optimisers and weight decay.

    **Symmetry:** closure Sₙ⋉(ℝ×)ⁿ on the left (permuting units and scaling r by any
    d ≠ 0); on the right Aff(n) when σ is positively homogeneous (ReLU, leaky ReLU:
    $u^T M = c\\,u'$ with $c > 0$ is absorbed by $r ↦ cr$, $λ ↦ λ/c$, and a translation t
    by $λ ↦ λ + u^T t$), else the Euclidean group E(n); by conjugation (E) the monomials
    for positively homogeneous σ, else Bₙ. Probabilistically
    Sₙ / O(n) / Sₙ (iid units with uniform directions; r = 1 rules out sign flips), or
    Bₙ / O(n) / Bₙ for an odd σ (a sign flip of a unit's output equals a flip of its
    uniformly distributed direction); for a positively homogeneous σ the E cell is
    ℝ×₊ × Sₙ (ℝ×₊ × Bₙ if σ is also odd): at λ = 0 the layer is positively homogeneous.
    Algebraically trivial.

    **Arguments:**

    - `in_features`, `out_features`: dimensions (≥ 1).
    - `activation`: σ, default `jax.nn.relu`: a callable that commutes with permutations
      of the units, elementwise (ReLU, tanh) or isotropic (`IsotropicTanh`, `Squash`),
      as the per-unit parameterisation and its symmetries require. A taxdl activation
      whose algebraic E cell does not contain Sₙ (CoLU, RCoLU mix units within a cone)
      raises `ValueError`; an untagged callable is taken to be elementwise. An
      activation module holding arrays (e.g. a gain shared by all units) is part of the
      layer's pytree (field `sigma`), so its arrays are trained with the layer; a
      plain function is kept static. The property `activation` gives σ as passed.
    - `positively_homogeneous`: whether σ(c·s) = c·σ(s) for c > 0 (decides the right
      closure); default: true for `jax.nn.relu` and `jax.nn.leaky_relu`, and for a taxdl
      activation whose algebraic E cell contains ℝ×₊ (e.g. `taxdl.nn.ReLU()`).
    - `odd`: whether σ(−s) = −σ(s) (widens the probabilistic L/E cells to Bₙ); default:
      true for `jnp.tanh`, `jnp.sin`, `jnp.sinh`, `jnp.arctan`, `jnp.arcsinh`,
      `jax.nn.soft_sign`, `jax.nn.hard_tanh`, and for a taxdl activation whose algebraic
      E cell contains −I (e.g. `taxdl.nn.Tanh()`).
    - `key`: PRNG key (keyword-only); `dtype`: parameter dtype (default float32).

    Conversion: [`from_linear`][taxdl.nn.GmPLinear.from_linear],
    [`from_weights`][taxdl.nn.GmPLinear.from_weights] and
    [`to_weights`][taxdl.nn.GmPLinear.to_weights].
    """

    theta_t: Float[Array, "m out"]
    lam: Float[Array, " out"]
    r: Float[Array, " out"]
    sign: Int[Array, " out"] | None
    in_features: int = eqx.field(static=True)
    out_features: int = eqx.field(static=True)
    # σ as a pytree node (see `_activation_field`); the property `activation` gives σ
    sigma: Callable
    positively_homogeneous: bool = eqx.field(static=True)
    odd: bool = eqx.field(static=True)

    def __init__(self, in_features: int, out_features: int, activation: Callable = jax.nn.relu,
                 *, key: PRNGKeyArray, dtype=jnp.float32,
                 positively_homogeneous: bool | None = None, odd: bool | None = None):
        self.in_features = check_int(in_features, "in_features", who="GmPLinear")
        self.out_features = check_int(out_features, "out_features", who="GmPLinear")
        self.sigma = _activation_field(_check_activation(activation, "GmPLinear"))
        check_unit_activation(activation, self.out_features, "GmPLinear")
        self.positively_homogeneous = _known(activation, positively_homogeneous,
                                             _POSITIVELY_HOMOGENEOUS, Scaling(positive=True),
                                             "positively_homogeneous", "GmPLinear")
        self.odd = _known(activation, odd, _ODD, PointReflection(), "odd", "GmPLinear")
        dtype = check_float_dtype(dtype, "GmPLinear")
        self.theta_t, self.lam, self.r, self.sign = _init_units(key, out_features,
                                                                in_features, dtype)

    @property
    def theta(self) -> Float[Array, "*b out m"]:
        """The angles one row per unit, `(out_features, in_features − 1)` (a transposed
        copy of `theta_t`)."""
        return _angle_rows(self, "GmPLinear")

    @property
    def activation(self) -> Callable:
        """σ, as given (an activation module's arrays are leaves of the layer, in the
        field `sigma`; a plain function is held there static)."""
        return _activation_of(self.sigma)

    @property
    def taxonomy(self) -> Taxonomy:
        return _gmp_taxonomy(self.positively_homogeneous, self.odd)

    @named_scope("taxdl.GmPLinear")
    def __call__(self, x: Real[Array, " in"], *, key=None) -> Float[Array, " out"]:
        """**Arguments:** one unbatched input of shape `(in_features,)` (batch with
        `jax.vmap`: the directions are then still built once). **Returns:** `(out_features,)`."""
        del key
        x = require_real(x, "GmPLinear", self.theta_t.dtype)
        if x.shape != (self.in_features,):
            raise ValueError(
                f"GmPLinear expects one unbatched input of shape ({self.in_features},), got "
                f"{x.shape}; use jax.vmap for batches.")
        return units_t(x, self.theta_t, self.lam, self.r, self.activation, self.sign)

    def direction(self) -> Float[Array, "out in"]:
        """The unit directions $u(θ_i)$ as rows, shape `(out, in)` (eq 11)."""
        return direction_columns(self.theta_t, self.sign).T

    def spatial_locations(self) -> Float[Array, "out in"]:
        """The spatial locations of the units' activation boundaries,
        $φ_i = -λ_i\\,u(θ_i)$ (eq 10), shape `(out, in)`."""
        return -self.lam[:, None] * self.direction()

    def to_weights(self) -> tuple[Float[Array, "out in"], Float[Array, " out"]]:
        """Cartesian parameters $(W, b) = (r\\,u(θ), r\\,λ)$ (row-wise), the inverse of
        [`from_weights`][taxdl.nn.GmPLinear.from_weights]. For a positively homogeneous σ
        and r ≥ 0, $σ(Wx + b) = r\\,σ(u^T x + λ)$: the layer's function."""
        return self.r[:, None] * self.direction(), self.r * self.lam

    @classmethod
    def from_weights(cls, weight: Float[Array, "out in"], bias: Float[Array, " out"] | None = None,
                     activation: Callable = jax.nn.relu, *,
                     positively_homogeneous: bool | None = None, odd: bool | None = None
                     ) -> "GmPLinear":
        """The GmP layer with $r = \\|w_i\\|$, $u(θ_i) = w_i/\\|w_i\\|$, $λ_i = b_i/\\|w_i\\|$:
        by positive homogeneity, $r\\,σ(u^T x + λ) = σ(w^T x + b)$ for ReLU-like σ, so the
        function of $x \\mapsto σ(Wx + b)$ is preserved. A zero row with zero bias becomes
        a unit with r = 0; a zero row with a non-zero bias has no GmP form
        (`ValueError`; under a JAX transformation, where the values are not known, such a
        row becomes a unit with r = 0 and λ = 0)."""
        theta, lam, r, sign = _from_cartesian(weight, bias, "GmPLinear.from_weights")
        out, n = jnp.shape(weight)
        layer = cls(n, out, activation, key=jax.random.key(0), dtype=theta.dtype,
                    positively_homogeneous=positively_homogeneous, odd=odd)
        return _replace_units(layer, (theta.T, lam, r, sign))

    @classmethod
    def from_linear(cls, linear, activation: Callable = jax.nn.relu, *,
                    positively_homogeneous: bool | None = None, odd: bool | None = None
                    ) -> "GmPLinear":
        """Convert an `eqx.nn.Linear` or `taxdl.nn.Linear` (followed by σ) to GmP form,
        preserving the function $x \\mapsto σ(Wx + b)$ for positively homogeneous σ (see
        [`from_weights`][taxdl.nn.GmPLinear.from_weights])."""
        weight = getattr(linear, "weight", None)
        if weight is None or jnp.ndim(weight) != 2:
            raise TypeError("GmPLinear.from_linear expects a layer with a 2-D `weight` "
                            f"(eqx.nn.Linear or taxdl.nn.Linear), got {type(linear).__name__}.")
        return cls.from_weights(weight, getattr(linear, "bias", None), activation,
                                positively_homogeneous=positively_homogeneous, odd=odd)


register(GmPLinear, family="layer", name="GmPLinear", formula="r⊙σ(U(θ)x + λ)",
         example=lambda: GmPLinear(8, 8, key=jax.random.key(0)),
         reference="GmP paper eqs 11, 13; Remark 3.5")


# ============================================================================ GmPConv
def _pair(value, name: str, who: str, minimum: int) -> tuple[int, int]:
    try:
        vals = (value, value) if isinstance(value, (int, np.integer)) else tuple(value)
    except TypeError:
        vals = ()
    if len(vals) != 2 or any(isinstance(v, bool) or not isinstance(v, (int, np.integer))
                             or v < minimum for v in vals):
        raise ValueError(f"{who}: `{name}` must be an integer >= {minimum} or a pair of "
                         f"them, got {value!r}.")
    return int(vals[0]), int(vals[1])


def _padding(value, who: str):
    if isinstance(value, str):
        if value.upper() not in ("SAME", "VALID"):
            raise ValueError(f"{who}: `padding` must be 'SAME', 'VALID', an integer or "
                             f"pairs, got {value!r}.")
        return value.upper()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{who}: `padding` must be >= 0, got {value!r}.")
        return ((int(value), int(value)),) * 2
    try:
        pads = tuple((int(a), int(b)) for a, b in value)
    except (TypeError, ValueError):
        raise ValueError(f"{who}: `padding` must be 'SAME', 'VALID', an integer or pairs "
                         f"((top, bottom), (left, right)), got {value!r}.") from None
    if len(pads) != 2 or any(p < 0 for pair in pads for p in pair):
        raise ValueError(f"{who}: `padding` must be two non-negative pairs, got {value!r}.")
    return pads


class GmPConv(AbstractLayer):
    """2-D convolution in GmP form: every output channel is a GmP unit whose weight
    vector is its whole filter (in_channels × kh × kw entries),

    $$z_o = r_o\\,σ\\big(u(θ_o) \\star x + λ_o\\big)$$

    (GmP paper eq 13 applied to patches; the convolutional GmP of its ImageNet
    experiments). Channels-first like `eqx.nn.Conv2d`: input `(in_channels, H, W)`,
    output `(out_channels, H', W')`. Initialisation as [`GmPLinear`][taxdl.nn.GmPLinear]
    (filter directions uniform on the sphere, λ = 0, r = 1), and so is the storage: the
    angles of filter o are column o of `theta_t`, shape `(fan_in − 1, out_channels)` with
    fan_in = in_channels·kh·kw (the property `theta` gives them one row per filter).

    **Symmetry** (the group acting on channels, at every pixel): as `GmPLinear`: closure
    Sₙ⋉(ℝ×)ⁿ / Aff (E(n) for σ not positively homogeneous) / Sₙ⋉(ℝ×)ⁿ (Bₙ), with GL (O(n))
    on the right instead when the convolution pads (the zero padding does not move with a
    translation of the channels), probabilistic Sₙ / O(n) / ℝ×₊ × Sₙ (Bₙ / O(n) / Bₙ for
    odd σ; no ℝ×₊ when σ is not positively homogeneous), algebraic trivial. (The checker
    sees it channels-last through the `as_function` hook.)

    **Arguments:**

    - `in_channels`, `out_channels`: channel counts (≥ 1).
    - `kernel_size`, `stride`, `dilation`: an integer or a pair.
    - `padding`: `"VALID"` (default), `"SAME"`, an integer or ((top, bottom), (left, right)).
    - `activation`, `positively_homogeneous`, `odd`, `key`, `dtype`: as `GmPLinear`
      (σ must commute with permutations of the output channels).
    """

    theta_t: Float[Array, "m out"]
    lam: Float[Array, " out"]
    r: Float[Array, " out"]
    sign: Int[Array, " out"] | None
    in_channels: int = eqx.field(static=True)
    out_channels: int = eqx.field(static=True)
    kernel_size: tuple[int, int] = eqx.field(static=True)
    stride: tuple[int, int] = eqx.field(static=True)
    padding: str | tuple = eqx.field(static=True)
    dilation: tuple[int, int] = eqx.field(static=True)
    sigma: Callable  # as in GmPLinear
    positively_homogeneous: bool = eqx.field(static=True)
    odd: bool = eqx.field(static=True)

    def __init__(self, in_channels: int, out_channels: int, kernel_size=3, stride=1,
                 padding="VALID", dilation=1, activation: Callable = jax.nn.relu, *,
                 key: PRNGKeyArray, dtype=jnp.float32,
                 positively_homogeneous: bool | None = None, odd: bool | None = None):
        who = "GmPConv"
        self.in_channels = check_int(in_channels, "in_channels", who=who)
        self.out_channels = check_int(out_channels, "out_channels", who=who)
        self.kernel_size = _pair(kernel_size, "kernel_size", who, 1)
        self.stride = _pair(stride, "stride", who, 1)
        self.dilation = _pair(dilation, "dilation", who, 1)
        self.padding = _padding(padding, who)
        self.sigma = _activation_field(_check_activation(activation, who))
        check_unit_activation(activation, self.out_channels, who)
        self.positively_homogeneous = _known(activation, positively_homogeneous,
                                             _POSITIVELY_HOMOGENEOUS, Scaling(positive=True),
                                             "positively_homogeneous", who)
        self.odd = _known(activation, odd, _ODD, PointReflection(), "odd", who)
        dtype = check_float_dtype(dtype, who)
        fan_in = self.in_channels * self.kernel_size[0] * self.kernel_size[1]
        self.theta_t, self.lam, self.r, self.sign = _init_units(key, out_channels, fan_in,
                                                                dtype)

    @property
    def theta(self) -> Float[Array, "*b out m"]:
        """The angles one row per unit (filter), `(out_channels, fan_in − 1)` (a
        transposed copy of `theta_t`)."""
        return _angle_rows(self, "GmPConv")

    @property
    def activation(self) -> Callable:
        """σ, as given (see `GmPLinear.activation`)."""
        return _activation_of(self.sigma)

    @property
    def taxonomy(self) -> Taxonomy:
        unpadded = self.padding == "VALID" or self.padding == ((0, 0), (0, 0))
        return _gmp_taxonomy(self.positively_homogeneous, self.odd, shifts=unpadded)

    def filters(self) -> Float[Array, "out c kh kw"]:
        """The unit-norm filters $u(θ_o)$, shape `(out, in, kh, kw)`."""
        return jnp.moveaxis(self._filters_ihwo(), -1, 0)

    def _filters_ihwo(self) -> Float[Array, "c kh kw out"]:
        # the directions as columns, (fan_in, out), need no transposition as IHWO filters
        u = direction_columns(self.theta_t, self.sign)
        return u.reshape(self.in_channels, *self.kernel_size, self.out_channels)

    def _min_spatial(self) -> tuple[int, int]:
        """The smallest input height and width with a non-empty output: the dilated
        kernel $d(k - 1) + 1$ less the padding on that axis ("SAME": 1)."""
        sizes = []
        for axis in range(2):
            if self.padding == "SAME":
                sizes.append(1)
                continue
            pads = 0 if self.padding == "VALID" else sum(self.padding[axis])
            span = self.dilation[axis] * (self.kernel_size[axis] - 1) + 1
            sizes.append(max(span - pads, 1))
        return sizes[0], sizes[1]

    def _check_spatial(self, shape) -> None:
        """A `ValueError` for an image smaller than the (dilated, padded) kernel, whose
        output would be empty: an empty array, not an error, from the convolution."""
        for name, size, least in zip(("height", "width"), shape, self._min_spatial()):
            if size < least:
                raise ValueError(
                    f"GmPConv: input {name} {size} is smaller than the dilated kernel: "
                    f"kernel_size {self.kernel_size} with dilation {self.dilation} and "
                    f"padding {self.padding!r} needs at least {least}, else the output "
                    "is empty.")

    @named_scope("taxdl.GmPConv")
    def __call__(self, x: Real[Array, "c h w"], *, key=None) -> Float[Array, "o hh ww"]:
        """**Arguments:** one unbatched image `(in_channels, H, W)` (integer images are
        promoted to the parameters' dtype). **Returns:** `(out_channels, H', W')`."""
        del key
        x = require_real(x, "GmPConv", self.theta_t.dtype)
        if x.ndim != 3 or x.shape[0] != self.in_channels:
            raise ValueError(f"GmPConv expects one unbatched input of shape "
                             f"({self.in_channels}, H, W), got {x.shape}; use jax.vmap for "
                             "batches.")
        # (integer images are already cast to the parameters' dtype) the lower of the two
        # floating precisions is promoted to the wider one
        dtype = self.theta_t.dtype
        if jnp.issubdtype(x.dtype, jnp.floating) and jnp.finfo(x.dtype).bits > \
                jnp.finfo(dtype).bits:
            dtype = x.dtype
        x = x.astype(dtype)
        self._check_spatial(x.shape[1:])
        y = jax.lax.conv_general_dilated(
            x[None], self._filters_ihwo().astype(dtype), window_strides=self.stride,
            padding=self.padding, rhs_dilation=self.dilation,
            dimension_numbers=("NCHW", "IHWO", "NCHW"))[0]
        # σ acts on each pixel's channel vector (the last axis, as every activation's
        # feature axis): an isotropic σ takes the norm over the channels, not the width
        z = jnp.moveaxis(y + self.lam[:, None, None], 0, -1)
        return self.r[:, None, None] * jnp.moveaxis(self.activation(z), -1, 0)


register(GmPConv, family="layer", name="GmPConv", formula="r⊙σ(u(θ)⋆x + λ)",
         example=lambda: GmPConv(4, 4, 3, key=jax.random.key(0)),
         reference="GmP paper eq 13 (convolutional form, §4.2)")


# ============================================================================ hooks
def _transport_units(theta_t, lam, r, sign, flavour: Flavour, element, move, dot_shift):
    """(θ, λ, r, sign) moved by g = (M, t), the angles in the layers' layout (`theta_t`,
    one column per unit) in and out. `move(U, M)` gives the rows $u_i^T M$ (the
    directions seen by $x ↦ Mx$), `dot_shift(U, t)` the products $u_i^T t$.

    R: $r σ(u^T(Mx + t) + λ) = (rc)\\,σ(u'^T x + (λ + u^T t)/c)$ with $c = \\|M^T u\\|$,
    $u' = M^T u / c$ (c = 1 for orthogonal M; c > 0 absorbed by positive homogeneity
    otherwise). L (monomial M = PD): unit i takes unit π(i)'s θ and λ, and r·M_{iπ(i)}.
    E: R with M, then L with M⁻¹."""
    d = lam.dtype
    m, t = element.matrix.astype(d), element.shift.astype(d)

    def right(theta_t, lam, r, sign):
        u = direction_columns(theta_t, sign).T
        v = move(u, m)
        c = jnp.sqrt(jnp.sum(v * v, axis=-1))
        # c = 1 exactly for orthogonal M: a c off by rounding would give units with equal
        # outputs (λ = 0, r = 1 at initialisation) slightly different scales, which a
        # following normaliser of that near-constant vector amplifies
        c = jnp.where(jnp.abs(c - 1) <= 16 * jnp.finfo(d).eps, jnp.ones_like(c), c)
        c_safe = jnp.where(c > 0, c, 1)
        new_theta, _ = gmp_angles(v)
        new_sign = None if sign is None else jnp.where(v[:, 0] < 0, -1, 1).astype(sign.dtype)
        return new_theta.T, (lam + dot_shift(u, t)) / c_safe, r * c, new_sign

    def left(theta_t, lam, r, sign, m):
        p = (m != 0).astype(d)  # the permutation pattern of the monomial M
        moved = None if sign is None else (p @ sign.astype(d)).astype(sign.dtype)
        # unit i takes unit π(i)'s angles: column i of θᵀ Pᵀ is column π(i) of θᵀ
        return theta_t @ p.T, p @ lam, m @ r, moved

    flavour = Flavour(flavour)
    if flavour is Flavour.LEFT:
        return left(theta_t, lam, r, sign, m)
    if flavour is Flavour.RIGHT:
        return right(theta_t, lam, r, sign)
    # M⁻¹ of a monomial: the transposed pattern with reciprocal entries (exact)
    m_inv = jnp.where(m != 0, 1 / jnp.where(m != 0, m, 1), 0).T
    return left(*right(theta_t, lam, r, sign), m_inv)


def _replace_units(layer, params):
    """`layer` with (θ, λ, r, sign), θ in the layers' layout (`theta_t`)."""
    return eqx.tree_at(lambda l: (l.theta_t, l.lam, l.r, l.sign), layer, params,
                       is_leaf=lambda x: x is None)


def _perturb_units(layer, key):
    """A generic member of the class: θ, λ and r perturbed; the fixed 1-D directions
    `sign` stay ±1 (they are not parameters of the class)."""
    moved = perturb.dispatch(object)((layer.theta_t, layer.lam, layer.r), key)
    return eqx.tree_at(lambda l: (l.theta_t, l.lam, l.r), layer, moved)


perturb.register(GmPLinear)(_perturb_units)
perturb.register(GmPConv)(_perturb_units)


@signature.register
def _(layer: GmPLinear, n=None) -> Signature:
    return Signature(((layer.in_features,),))


@reinitialise.register
def _(layer: GmPLinear, key) -> GmPLinear:
    return GmPLinear(layer.in_features, layer.out_features, layer.activation, key=key,
                     dtype=layer.lam.dtype, positively_homogeneous=layer.positively_homogeneous,
                     odd=layer.odd)


@transport.register
def _(layer: GmPLinear, flavour, element, group) -> GmPLinear:
    """L (monomials): permute units, scale r. R: $u_i ↦ M^T u_i / c_i$, $r_i ↦ c_i r_i$,
    $λ_i ↦ (λ_i + u_i^T t)/c_i$ with $c_i = \\|M^T u_i\\|$ (exact for orthogonal M, and
    for any invertible M when σ is positively homogeneous). E: R with M, then L with M⁻¹."""
    params = _transport_units(layer.theta_t, layer.lam, layer.r, layer.sign, flavour, element,
                              lambda u, m: u @ m, lambda u, t: u @ t)
    return _replace_units(layer, params)


def _conv_maps(shape):
    out, c, kh, kw = shape

    def move(u, m):       # M on the channel axis of every tap
        return jnp.einsum("ock,cd->odk", u.reshape(out, c, kh * kw), m).reshape(out, -1)

    def dot_shift(u, t):  # a shift t of every pixel's channels: Σ_{c,k} u_{o,c,k} t_c
        return jnp.einsum("ock,c->o", u.reshape(out, c, kh * kw), t)

    return move, dot_shift


@transport.register
def _(layer: GmPConv, flavour, element, group) -> GmPConv:
    """As GmPLinear, with M acting on the channel axis of every filter tap. A shift is
    exact only with `"VALID"` padding (zero padding does not move with it)."""
    shape = (layer.out_channels, layer.in_channels, *layer.kernel_size)
    params = _transport_units(layer.theta_t, layer.lam, layer.r, layer.sign, flavour, element,
                              *_conv_maps(shape))
    return _replace_units(layer, params)


@reinitialise.register
def _(layer: GmPConv, key) -> GmPConv:
    return GmPConv(layer.in_channels, layer.out_channels, layer.kernel_size, layer.stride,
                   layer.padding, layer.dilation, layer.activation, key=key,
                   dtype=layer.lam.dtype, positively_homogeneous=layer.positively_homogeneous,
                   odd=layer.odd)


_CONV_CHECK_SIZE = 4


@signature.register
def _(layer: GmPConv, n=None) -> Signature:
    """Channels-last images `(H, W, in_channels)` (see `as_function`): 4 × 4, or larger
    where the dilated kernel needs it, so that every axis of the output has at least
    two positions (one stride past the smallest image with a non-empty output)."""
    h, w = (max(_CONV_CHECK_SIZE, least + stride)
            for least, stride in zip(layer._min_spatial(), layer.stride))
    return Signature(((h, w, layer.in_channels),))


@as_function.register
def _(layer: GmPConv) -> Callable:
    """The layer channels-last, $(H, W, C) → (H', W', C')$, so that a group acting on the
    last axis acts on channels."""
    return lambda x: jnp.moveaxis(layer(jnp.moveaxis(x, -1, 0)), 0, -1)


# ============================================================================ InputMeanNorm
class InputMeanNorm(AbstractNormaliser, eqx.nn.StatefulLayer):
    """Input Mean Normalisation (GmP paper Remark 3.6, eq 14): centre each input of an
    intermediate layer with the batch mean, $f(x) = x - \\hat{\\mathbb E}_B[x]$, so that
    the next GmP layer's characteristic analysis (which assumes centred inputs) applies.
    Parameter-free; a zero-debiased running mean is kept in an `eqx.nn.State` for
    inference.

    Calling convention of `eqx.nn.BatchNorm`: build with `eqx.nn.make_with_state`, call
    `y, state = imn(x, state)` on one example inside
    `jax.vmap(..., axis_name=axis_name, in_axes=(0, None), out_axes=(0, None))`, toggle
    `inference` with `eqx.nn.inference_mode`.

    **Symmetry** (data-like: each per-batch function is $f(x) = x - μ$ with μ the mean of
    a batch of $B$ standard Gaussian inputs, so $μ \\sim \\mathcal N(0, I/B)$; the class is
    $\\{x ↦ x - μ : μ \\in \\mathbb R^n\\}$). For $g(x) = Ax + t$:

    - algebraic: $f(x + t) = f(x) + t$ for every $t \\in \\mathbb R^n$, and
      $g^{-1} f g(x) = x - A^{-1}μ$ differs from $f$ (for almost every μ) once
      $A \\ne I$, so E is the translations T(n); $A(x - μ) + t$ and $Ax + t - μ$ equal
      $x - μ$ for every $x$ only if $g$ is the identity, so L and R are trivial.
    - probabilistic: $g^{-1} f g$ is $x - A^{-1}μ$, and $A^{-1}μ \\sim \\mathcal N(0,
      A^{-1}A^{-T}/B)$ has the law of μ exactly when $A$ is orthogonal, so E is the
      Euclidean group E(n) = O(n) ⋉ ℝⁿ; on the left and right the mean of the output
      moves ($Ax + t$ instead of $x$), so L and R are trivial.
    - closure: $x - A^{-1}μ$ is in the class for every invertible $A$, so E is the affine
      group Aff(n) = GL(n) ⋉ ℝⁿ; $A(x - μ) + t$ and $Ax + t - μ$ are in the class only for
      $A = I$, so L and R are the translations T(n).

    **Arguments:**

    - `n`: the feature count.
    - `axis_name`: the `vmap` axis carrying the batch (default `"batch"`).
    - `momentum`: of the running mean, in [0, 1) (default 0.99).
    - `inference`: use the running mean instead of the batch mean.
    - `dtype`: the dtype integer inputs are cast to. The running mean is kept in its
      compute dtype (float32 for half precisions, as for the other stateful
      normalisers): in bfloat16 an EMA step $(1 - ρ)(μ - h)$ with ρ = 0.99 is below
      half an ulp of h ($2^{-9}$ to $2^{-8}$ of |h|) once $|μ - h|$ is below 0.2 to 0.4
      of |h|, so the average would stall far from the mean.
    """

    state_index: eqx.nn.StateIndex
    axis_name: Hashable
    inference: bool
    n: int = eqx.field(static=True)
    momentum: float = eqx.field(static=True)
    dtype: jnp.dtype = eqx.field(static=True)

    def __init__(self, n: int, axis_name: Hashable = "batch", momentum: float = 0.99,
                 inference: bool = False, *, dtype=jnp.float32):
        self.dtype = jnp.dtype(check_float_dtype(dtype, type(self).__name__))
        self.n = check_int(n, "n", who="InputMeanNorm")
        self.momentum = check_momentum(momentum, "InputMeanNorm")
        self.axis_name = axis_name
        self.inference = check_bool(inference, "inference", who=type(self).__name__)
        self.state_index = eqx.nn.StateIndex(
            (jnp.array(0, jnp.int32), jnp.zeros((n,), compute_dtype(self.dtype))))

    @property
    def taxonomy(self) -> Taxonomy:
        return _IMN_TAXONOMY

    def running_mean(self, state: eqx.nn.State) -> Float[Array, " n"]:
        """The zero-debiased running mean used in inference (0 before any step)."""
        count, hidden = state.get(self.state_index)
        return _debias(hidden, count, self.momentum)

    @named_scope("taxdl.InputMeanNorm")
    def __call__(self, x: Float[Array, " n"], state: eqx.nn.State, *, key=None,
                 inference: bool | None = None) -> tuple[Float[Array, " n"], eqx.nn.State]:
        """**Arguments:** one example `x` of shape `(n,)` and the `state`; `inference`
        overrides `self.inference`. **Returns:** `(x − mean, new_state)`."""
        del key
        x = require_real(x, "InputMeanNorm", self.dtype)
        if x.shape != (self.n,):
            raise ValueError(f"InputMeanNorm expects one unbatched input of shape "
                             f"({self.n},), got {x.shape}; batch with jax.vmap.")
        inference = resolve_inference(self, inference)
        if inference:
            return input_mean_norm(x, self.running_mean(state)), state
        try:
            mean = _overflow_free_batch_mean(x, self.axis_name)
        except NameError as err:
            raise NameError(
                f"InputMeanNorm computes the batch mean over the vmap axis "
                f"{self.axis_name!r}: call it inside jax.vmap(imn, axis_name="
                f"{self.axis_name!r}, in_axes=(0, None), out_axes=(0, None))(x, state), or "
                "in inference mode.") from err
        count, hidden = state.get(self.state_index)
        rho = self.momentum
        new = rho * hidden + (1 - rho) * jax.lax.stop_gradient(mean).astype(hidden.dtype)
        state = state.set(self.state_index, (count + 1, new))
        return input_mean_norm(x, mean), state


def _overflow_free_batch_mean(x, axis_name):
    """The mean over the named batch axis, overflow-free: each coordinate scaled by a
    power of two near its largest magnitude over the batch (exact) before the sum, taken
    in `compute_dtype` (float32 for half precisions); in float16 a batch of 256 values
    near 600 would otherwise sum to ∞."""
    mean_u, big = _scaled_batch_mean(x.astype(compute_dtype(x.dtype)), axis_name,
                                     lambda a: a)
    return mean_u * big


_IMN_TAXONOMY = Taxonomy(
    closure=(Translations(), Translations(), Affine()),
    probabilistic=(None, None, Euclidean()),
    algebraic=(None, None, Translations()),
    kind="data",
    note="data-like (the mean μ of a standard Gaussian batch, μ ~ N(0, I/B)): x − μ commutes "
         "with every translation; conjugation maps the class {x ↦ x − μ} to itself "
         "(μ ↦ A⁻¹μ) and preserves the law of μ exactly for orthogonal A",
)

register(InputMeanNorm, family="normaliser", name="InputMeanNorm", formula="x − E_B x",
         example=lambda: InputMeanNorm(8), reference="GmP paper Remark 3.6, eq 14")

_IMN_BATCH = 64
_IMN_KEY = 20240613


class _ShiftedMean(eqx.Module):
    """An `InputMeanNorm` whose batch mean μ is moved by a group element (what `transport`
    returns: the statistics live in the data, so they are moved when the batch is drawn):
    μ ↦ μ − t for L and R (translations), μ ↦ M⁻¹μ for E ($x ↦ Mx + t$)."""

    base: InputMeanNorm
    matrix: Array
    shift: Array
    flavour: Flavour = eqx.field(static=True)

    @property
    def taxonomy(self) -> Taxonomy:
        return self.base.taxonomy


def _batch_mean(key, n, batch_shape, dtype):
    """The mean of a standard Gaussian data batch (`batch_shape` as for the stateful
    normalisers: the full array shape, completed with the feature axis if needed)."""
    return jnp.mean(_gaussian_batch(key, batch_shape, n, dtype), axis=0)


def _moved_mean(mu, flavour: Flavour, m, t):
    if flavour is Flavour.LEFT:       # x − μ + t: μ ↦ μ − t (M = I in +λ1)
        return mu - t
    if flavour is Flavour.RIGHT:      # (Mx + t) − μ with M = I: μ ↦ μ − t
        return mu - t
    # M⁻¹(Mx + t − μ − t) = x − M⁻¹μ
    return jnp.linalg.solve(m, mu)


def _draw_dtype():
    """The widest float enabled: the batch is drawn once, when the function is made (not
    at every call), so before the input's dtype is known."""
    return jax.dtypes.canonicalize_dtype(float)


@data_call.register
def _(imn: InputMeanNorm, key, batch_shape=_IMN_BATCH) -> Callable:
    """The per-example function with the mean of one standard Gaussian batch."""
    mu = _batch_mean(key, imn.n, batch_shape, _draw_dtype())
    return lambda x: input_mean_norm(x, mu)


@data_call.register
def _(moved: _ShiftedMean, key, batch_shape=_IMN_BATCH) -> Callable:
    d = _draw_dtype()
    mu = _moved_mean(_batch_mean(key, moved.base.n, batch_shape, d), moved.flavour,
                     moved.matrix.astype(d), moved.shift.astype(d))
    return lambda x: input_mean_norm(x, mu)


@as_function.register(InputMeanNorm)
@as_function.register(_ShiftedMean)
def _(imn) -> Callable:
    return data_call(imn, jax.random.key(_IMN_KEY), _IMN_BATCH)


@signature.register
def _(imn: InputMeanNorm, n=None) -> Signature:
    return Signature(((imn.n,),))


@signature.register
def _(moved: _ShiftedMean, n=None) -> Signature:
    return Signature(((moved.base.n,),))


@reinitialise.register
def _(imn: InputMeanNorm, key) -> InputMeanNorm:
    del key  # nothing random
    return imn


@transport.register
def _(imn: InputMeanNorm, flavour, element, group) -> _ShiftedMean:
    return _ShiftedMean(imn, element.matrix, element.shift, Flavour(flavour))
