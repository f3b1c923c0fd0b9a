"""The affine layer $Wx + b$ and the composed elementwise layer $σ(Wx + b)$."""

import functools as ft
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import named_scope
from jaxtyping import Array, Float, PRNGKeyArray, Real

from ..._types import check_float_dtype, check_int
from .._numerics import require_real
from ...groups import (
    Affine,
    ConformalLinear,
    Orthogonal,
    Permutation,
    PositiveMonomial,
    Product,
    Scaling,
)
from ...taxonomy import (
    AbstractLayer,
    Flavour,
    Signature,
    Taxonomy,
    register,
    reinitialise,
    signature,
    transport,
)


def gaussian_init(key: PRNGKeyArray, out_features: int, in_features: int, dtype
                  ) -> tuple[Array, Array]:
    """Isotropic Gaussian weights $W_{ij} \\sim \\mathcal N(0, 1/n_{in})$ and zero bias."""
    w = jax.random.normal(key, (out_features, in_features), dtype) / jnp.sqrt(
        jnp.asarray(in_features, dtype))
    return w, jnp.zeros((out_features,), dtype)


def _init_dense(layer, in_features, out_features, key: PRNGKeyArray, dtype) -> None:
    """Check the sizes and dtype of a dense layer and set its Gaussian weights and zero
    bias (`gaussian_init`)."""
    who = type(layer).__name__
    dtype = check_float_dtype(dtype, who)
    layer.in_features = check_int(in_features, "in_features", who=who)
    layer.out_features = check_int(out_features, "out_features", who=who)
    layer.weight, layer.bias = gaussian_init(key, layer.out_features, layer.in_features, dtype)


def _dense_input(layer, x):
    """`x` checked to be one real, unbatched input of the dense `layer` (integers cast to
    the weights' dtype)."""
    who = type(layer).__name__
    x = require_real(x, who, layer.weight.dtype)
    if x.shape != (layer.in_features,):
        raise ValueError(f"{who} expects one unbatched input of shape ({layer.in_features},), "
                         f"got {x.shape}; use jax.vmap for batches.")
    return x


@register(family="layer", formula="Wx + b", example=lambda: Linear(8, 8, key=jax.random.key(0)),
          reference="isotropic paper Table 5.2 (Affine Layer)")
class Linear(AbstractLayer):
    """Affine layer $f(x) = Wx + b$ with isotropic Gaussian initialisation
    $W_{ij} \\sim \\mathcal N(0, 1/n_{in})$, $b = 0$.

    **Symmetry:** closed under the affine group Aff(n) = GL(n) ⋉ ℝⁿ on every side: the
    parameters absorb any invertible affine map $x \\mapsto Mx + t$, the bias taking the
    translation (Table 5.2, "Affine Layer", gives GL(n), its hierarchy having no
    translations); probabilistically O(n)-invariant on either side under its Gaussian
    initialisation and, conjugated, equivariant to the similarities ℝ×·O(n): $(aQ)^{-1}
    W(aQ) = Q^TWQ$ has the law of $W$ and the zero bias stays zero (it does not survive a
    translation; Table 5.2 gives O(n)); algebraically trivial.

    **Arguments:**

    - `in_features`, `out_features`: dimensions.
    - `key`: PRNG key (keyword-only).
    - `dtype`: parameter dtype (default float32).
    """

    weight: Float[Array, "out in"]
    bias: Float[Array, " out"]
    in_features: int = eqx.field(static=True)
    out_features: int = eqx.field(static=True)

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(Affine(), Affine(), Affine()),
        probabilistic=(Orthogonal(), Orthogonal(), ConformalLinear()),
        note="closure: the bias absorbs translations, so Aff(n) (Table 5.2 gives GL(n)); "
             "probabilistic E: with the zero initial bias every draw commutes with "
             "scalings, so ℝ×·O(n) (Table 5.2 gives O(n))",
    )

    def __init__(self, in_features: int, out_features: int, *, key: PRNGKeyArray,
                 dtype=jnp.float32):
        _init_dense(self, in_features, out_features, key, dtype)

    @named_scope("taxdl.Linear")
    def __call__(self, x: Real[Array, " in"], *, key=None) -> Float[Array, " out"]:
        del key
        return self.weight @ _dense_input(self, x) + self.bias


def affine_transport(weight, bias, flavour: Flavour, m, t):
    """Parameters of g∘f (L), f∘g (R) or g⁻¹∘f∘g (E) for f(x) = Wx + b and g(x) = Mx + t."""
    if flavour is Flavour.LEFT:  # M(Wx + b) + t
        return m @ weight, m @ bias + t
    if flavour is Flavour.RIGHT:  # W(Mx + t) + b
        return weight @ m, weight @ t + bias
    m_inv = jnp.linalg.inv(m)  # M⁻¹(W(Mx + t) + b − t)
    return m_inv @ weight @ m, m_inv @ (weight @ t + bias - t)


def _transport_affine(layer, flavour, element):
    d = layer.weight.dtype
    w, b = affine_transport(layer.weight, layer.bias, Flavour(flavour),
                             element.matrix.astype(d), element.shift.astype(d))
    return eqx.tree_at(lambda l: (l.weight, l.bias), layer, (w, b))




@register(family="layer", name="Composed", formula="Σᵢ σ((Wx+b)·êᵢ) êᵢ",
          example=lambda: ElementwiseDense(8, 8, key=jax.random.key(0)),
          reference="isotropic paper Table 5.2 (Composed)")
class ElementwiseDense(AbstractLayer):
    """An affine map followed by elementwise ReLU, $f(x) = \\mathrm{ReLU}(Wx + b)$: the
    "Composed" row of Table 5.2 (isotropic paper §5.2).

    **Symmetry:** closure Sₙ⋉(ℝ×₊)ⁿ / Aff / Sₙ⋉(ℝ×₊)ⁿ: on the left (and by conjugation)
    permutations with positive per-unit scalings $PD$ are absorbed, $PD\\,\\mathrm{ReLU}(Wx
    + b) = \\mathrm{ReLU}(PDWx + PDb)$ (ReLU is positively homogeneous; the paper's Table 5.2
    gives Sₙ); input maps $x ↦ Ax + t$ by $W ↦ WA$, $b ↦ Wt + b$ (the paper gives GL).
    Probabilistically Sₙ / O(n) / ℝ×₊ × Sₙ under the Gaussian initialisation: with the
    zero bias, $a^{-1}\\mathrm{ReLU}(W a x) = \\mathrm{ReLU}(Wx)$ for $a > 0$, so
    conjugation also admits the positive scalars (Table 5.2 gives Sₙ); algebraically
    trivial.
    """

    weight: Float[Array, "out in"]
    bias: Float[Array, " out"]
    in_features: int = eqx.field(static=True)
    out_features: int = eqx.field(static=True)

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(PositiveMonomial(), Affine(), PositiveMonomial()),
        probabilistic=(Permutation(), Orthogonal(),
                       Product(Scaling(positive=True), Permutation())),
        note="closure L/E: ReLU is positively homogeneous, so positive per-unit scalings are "
             "absorbed as well as permutations (Table 5.2 gives Sₙ); closure R: the bias "
             "absorbs input translations, so Aff(n) (Table 5.2 gives GL(n)); probabilistic "
             "E: the zero initial bias keeps the layer positively homogeneous, so ℝ×₊ × Sₙ "
             "(Table 5.2 gives Sₙ)",
    )

    def __init__(self, in_features: int, out_features: int, *, key: PRNGKeyArray,
                 dtype=jnp.float32):
        _init_dense(self, in_features, out_features, key, dtype)

    @named_scope("taxdl.ElementwiseDense")
    def __call__(self, x: Real[Array, " in"], *, key=None) -> Float[Array, " out"]:
        del key
        return jax.nn.relu(self.weight @ _dense_input(self, x) + self.bias)


def _dense_signature(layer, n=None) -> Signature:
    return Signature(((layer.in_features,),))


def _dense_transport(layer, flavour, element, group):
    return _transport_affine(layer, flavour, element)


def _dense_reinitialise(cls, layer, key):
    return cls(layer.in_features, layer.out_features, key=key, dtype=layer.weight.dtype)


for _dense in (Linear, ElementwiseDense):
    signature.register(_dense, _dense_signature)
    transport.register(_dense, _dense_transport)
    reinitialise.register(_dense, ft.partial(_dense_reinitialise, _dense))
del _dense
