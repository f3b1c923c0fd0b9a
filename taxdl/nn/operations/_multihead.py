"""Multi-headed summed layers (isotropic paper App. D.3, eqs 69–70)."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import named_scope
from jaxtyping import Array, Float, PRNGKeyArray

from ..._types import RealLike, check_callable, check_float_dtype, check_int, check_real
from ...groups import (
    Affine,
    ConformalLinear,
    GeneralLinear,
    Orthogonal,
    Trivial,
    is_subgroup,
)
from ...taxonomy import (
    AbstractLayer,
    Flavour,
    Signature,
    Taxonomy,
    meet,
    register,
    reinitialise,
    signature,
    taxonomy,
    transport,
)
from ..activations import IsotropicTanh
from . import _functional as F


def _activation_groups(activation):
    """(closure, law-L, law-E) groups of eq 69's L and E cells from the activation's
    algebraic-E group G: G itself for closure when it is linear (⊆ GL(n)); in law, the
    largest hierarchy family inside G and O(n) for L ($MW \\sim W$ needs M orthogonal)
    and inside G and ℝ×·O(n) for E (a scale cancels in $M^{-1}WM$), e.g. Sₙ and
    ℝ×₊ × Sₙ for ReLU's Sₙ⋉(ℝ×₊)ⁿ. None where there is none."""
    try:
        group = taxonomy(activation).cell("algebraic", "E").group
    except TypeError:
        return None, None, None
    if group is None or isinstance(group, Trivial):
        return None, None, None

    def within(bound):
        m = meet(group, bound)
        return None if isinstance(m, Trivial) else m

    closure = group if is_subgroup(group, GeneralLinear()) else None
    return closure, within(Orthogonal()), within(ConformalLinear())


def _normal(key, shape, fan_in, dtype):
    return jax.random.normal(key, shape, dtype) / jnp.sqrt(jnp.asarray(fan_in, dtype))


@register(family="layer", formula="Σⱼ f(Wʲx + bʲ)",
          example=lambda: MultiHeadSum(8, 3, key=jax.random.key(0)),
          reference="isotropic paper eq 69")
class MultiHeadSum(AbstractLayer):
    """Multi-headed layer $x' = \\sum_j f(W^jx + b^j)$ (isotropic paper App. D.3, eq 69):
    a sum of `heads` feed-forward layers sharing an activation $f: ℝ^n \\to ℝ^n$ (isotropic
    tanh by default), each head a perturbative correction. Initialisation: $W^j_{ik} \\sim
    \\mathcal N(0, 1/n)$ iid, $b^j = 0$.

    **Symmetry:** with $G$ the activation's algebraic-E group (O(n) for isotropic tanh):
    closure $G$ / Aff / $G$ (a linear $M ∈ G$ on the output passes through f into every
    head, $Mf(W^jx + b^j) = f(MW^jx + Mb^j)$; any affine input map is absorbed by
    $W^j, b^j$), probabilistically $G ∩ O(n)$ / O(n) / $G ∩ ℝ^×·O(n)$ under the
    Gaussian initialisation (largest families of the hierarchy inside both: a scale
    cancels in $M^{-1}W^jM$ but not in $MW^j$; Sₙ and ℝ×₊ × Sₙ for ReLU's
    Sₙ⋉(ℝ×₊)ⁿ), algebraically trivial. L and E are trivial where $G$ has translations
    (closure) or no such family exists (in law).

    **Arguments:** `n`, `heads` (≥ 1), `activation` (a taxdl activation or any
    ℝⁿ → ℝⁿ callable), `gain` g > 0 of the initialisation $\\mathcal N(0, g^2/n)$
    (default 1; smaller keeps isotropic tanh in its near-linear regime), `key`, `dtype`.
    """

    weight: Float[Array, "h n n"]
    bias: Float[Array, "h n"]
    activation: object
    n: int = eqx.field(static=True)
    heads: int = eqx.field(static=True)
    gain: float = eqx.field(static=True)

    def __init__(self, n: int, heads: int, activation=None, gain: RealLike = 1.0, *,
                 key: PRNGKeyArray, dtype=jnp.float32):
        dtype = check_float_dtype(dtype, type(self).__name__)
        self.n = check_int(n, "n", who="MultiHeadSum")
        self.heads = check_int(heads, "heads", who="MultiHeadSum")
        self.gain = check_real(gain, "gain", who="MultiHeadSum", low=0, low_open=True)
        self.activation = IsotropicTanh() if activation is None else check_callable(
            activation, "activation", who="MultiHeadSum")
        self.weight = self.gain * _normal(key, (heads, n, n), n, dtype)
        self.bias = jnp.zeros((heads, n), dtype)

    @property
    def taxonomy(self) -> Taxonomy:
        closure, law_left, law_equi = _activation_groups(self.activation)
        return Taxonomy(closure=(closure, Affine(), closure),
                        probabilistic=(law_left, Orthogonal(), law_equi),
                        note="L and E: the activation's algebraic-E group (in law, its "
                             "part inside O(n) for L and inside ℝ×·O(n) for E)")

    @named_scope("taxdl.MultiHeadSum")
    def __call__(self, x: Float[Array, " n"], *, key=None) -> Float[Array, " n"]:
        del key
        if x.shape != (self.n,):
            raise ValueError(f"MultiHeadSum expects one unbatched input of shape ({self.n},), "
                             f"got {x.shape}; use jax.vmap for batches.")
        d = x.dtype
        return F.multi_head_sum(x, self.weight.astype(d), self.bias.astype(d),
                                self.activation).astype(d)


@register(family="layer", formula="Σⱼ W^{l,j} f(Wʲx + bʲ) + b^{l,j}",
          example=lambda: MultiHeadAffineSum(8, 8, 3, key=jax.random.key(0)),
          reference="isotropic paper eq 70")
class MultiHeadAffineSum(AbstractLayer):
    """General multi-headed layer $x' = \\sum_j W^{l,j} f(W^jx + b^j) + b^{l,j}$
    (isotropic paper App. D.3, eq 70): every head has its own input map $ℝ^n \\to ℝ^k$, the
    shared activation on $ℝ^k$ (isotropic tanh by default) and its own output map
    $ℝ^k \\to ℝ^m$. Initialisation: Gaussian weights $\\mathcal N(0, 1/\\text{fan-in})$,
    zero biases.

    **Symmetry:** closure GL on every side (output and input maps absorb any linear map),
    probabilistically O(n) on every side under the Gaussian initialisation, algebraically
    trivial — for any activation.

    **Arguments:** `in_features` n, `out_features` m, `heads`, `hidden` k (default n),
    `activation`, `gain` of the input maps' initialisation (default 1), `key`, `dtype`.
    """

    w_in: Float[Array, "h k n"]
    b_in: Float[Array, "h k"]
    w_out: Float[Array, "h m k"]
    b_out: Float[Array, "h m"]
    activation: object
    in_features: int = eqx.field(static=True)
    out_features: int = eqx.field(static=True)
    heads: int = eqx.field(static=True)
    hidden: int = eqx.field(static=True)
    gain: float = eqx.field(static=True)

    def __init__(self, in_features: int, out_features: int, heads: int,
                 hidden: int | None = None, activation=None, gain: RealLike = 1.0, *,
                 key: PRNGKeyArray, dtype=jnp.float32):
        dtype = check_float_dtype(dtype, type(self).__name__)
        who = "MultiHeadAffineSum"
        self.in_features = check_int(in_features, "in_features", who=who)
        self.out_features = check_int(out_features, "out_features", who=who)
        self.heads = check_int(heads, "heads", who=who)
        self.hidden = check_int(in_features if hidden is None else hidden, "hidden", who=who)
        self.gain = check_real(gain, "gain", who=who, low=0, low_open=True)
        self.activation = IsotropicTanh() if activation is None else check_callable(
            activation, "activation", who=who)
        k1, k2 = jax.random.split(key)
        h, k = heads, self.hidden
        self.w_in = self.gain * _normal(k1, (h, k, in_features), in_features, dtype)
        self.b_in = jnp.zeros((h, k), dtype)
        self.w_out = _normal(k2, (h, out_features, k), k, dtype)
        self.b_out = jnp.zeros((h, out_features), dtype)

    @property
    def taxonomy(self) -> Taxonomy:
        return Taxonomy(closure=(Affine(), Affine(), Affine()),
                        probabilistic=(Orthogonal(), Orthogonal(), Orthogonal()),
                        note="closure: the biases absorb translations")

    @named_scope("taxdl.MultiHeadAffineSum")
    def __call__(self, x: Float[Array, " n"], *, key=None) -> Float[Array, " m"]:
        del key
        if x.shape != (self.in_features,):
            raise ValueError(f"MultiHeadAffineSum expects one unbatched input of shape "
                             f"({self.in_features},), got {x.shape}; use jax.vmap for batches.")
        d = x.dtype
        return F.multi_head_affine_sum(x, self.w_in.astype(d), self.b_in.astype(d),
                                       self.w_out.astype(d), self.b_out.astype(d),
                                       self.activation).astype(d)


@signature.register
def _(layer: MultiHeadSum, n=None) -> Signature:
    return Signature(((layer.n,),))


@signature.register
def _(layer: MultiHeadAffineSum, n=None) -> Signature:
    return Signature(((layer.in_features,),))


@reinitialise.register
def _(layer: MultiHeadSum, key) -> MultiHeadSum:
    return MultiHeadSum(layer.n, layer.heads, layer.activation, layer.gain, key=key,
                        dtype=layer.weight.dtype)


@reinitialise.register
def _(layer: MultiHeadAffineSum, key) -> MultiHeadAffineSum:
    return MultiHeadAffineSum(layer.in_features, layer.out_features, layer.heads,
                              layer.hidden, layer.activation, layer.gain, key=key,
                              dtype=layer.w_in.dtype)


@transport.register
def _(layer: MultiHeadSum, flavour, element, group) -> MultiHeadSum:
    """L ($g ∈ G$, commuting with f): $W^j \\mapsto MW^j$, $b^j \\mapsto Mb^j$. R: $W^j \\mapsto
    W^jM$, $b^j \\mapsto b^j + W^jt$. E: $W^j \\mapsto M^{-1}W^jM$, $b^j \\mapsto M^{-1}b^j$."""
    flavour = Flavour(flavour)
    d = layer.weight.dtype
    m, t = element.matrix.astype(d), element.shift.astype(d)
    w, b = layer.weight, layer.bias
    if flavour is Flavour.LEFT:
        w, b = jnp.einsum("ij,hjk->hik", m, w), b @ m.T
    elif flavour is Flavour.RIGHT:
        w, b = w @ m, b + jnp.einsum("hij,j->hi", w, t)
    else:
        minv = jnp.linalg.inv(m)
        w, b = jnp.einsum("ij,hjk,kl->hil", minv, w, m), b @ minv.T
    return eqx.tree_at(lambda l: (l.weight, l.bias), layer, (w, b))


@transport.register
def _(layer: MultiHeadAffineSum, flavour, element, group) -> MultiHeadAffineSum:
    """L: $W^{l,j} \\mapsto MW^{l,j}$, $b^{l,j} \\mapsto Mb^{l,j} + t/h$. R: $W^j \\mapsto W^jM$,
    $b^j \\mapsto b^j + W^jt$. E: both (with $M^{-1}$ on the output)."""
    flavour = Flavour(flavour)
    d = layer.w_in.dtype
    m, t = element.matrix.astype(d), element.shift.astype(d)
    w_in, b_in, w_out, b_out = layer.w_in, layer.b_in, layer.w_out, layer.b_out
    h = layer.heads
    if flavour in (Flavour.RIGHT, Flavour.EQUIVARIANT):
        b_in = b_in + jnp.einsum("hkn,n->hk", w_in, t)
        w_in = w_in @ m
    if flavour is Flavour.LEFT:
        w_out, b_out = jnp.einsum("ij,hjk->hik", m, w_out), b_out @ m.T + t / h
    elif flavour is Flavour.EQUIVARIANT:
        minv = jnp.linalg.inv(m)
        w_out, b_out = jnp.einsum("ij,hjk->hik", minv, w_out), (b_out - t / h) @ minv.T
    return eqx.tree_at(lambda l: (l.w_in, l.b_in, l.w_out, l.b_out), layer,
                       (w_in, b_in, w_out, b_out))
