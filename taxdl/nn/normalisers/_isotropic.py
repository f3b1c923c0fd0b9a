"""Isotropic layer-norms (isotropic paper App. A.1 and A.1.1)."""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import named_scope
from jaxtyping import Array, Float, PRNGKeyArray

from ...groups import (
    Affine,
    ConformalLinear,
    GeneralLinear,
    Orthogonal,
    Scaling,
    ScaleTranslation,
)
from ...taxonomy import (
    AbstractNormaliser,
    Flavour,
    Signature,
    Taxonomy,
    register,
    reinitialise,
    signature,
    transport,
)
from ..initialisers._functional import haar_orthogonal
from . import _functional as F
from ..._types import INT_TYPES, IntLike, check_float_dtype
from ._checks import check_input, check_n


@register(family="normaliser", name="SimpleIsotropicLayerNorm", formula="γ x̂ + β⃗",
          example=lambda: SimpleIsotropicLayerNorm(8),
          reference="isotropic paper App. A.1.1")
class SimpleIsotropicLayerNorm(AbstractNormaliser):
    """Simple isotropic layer-norm $f(x) = γ\\hat x + \\vec β$ (isotropic paper App. A.1.1)
    with a scalar γ (initialised to 1) and a vector $\\vec β$ (initialised to 0); $f(0) =
    \\vec β$.

    **Symmetry:** algebraically ℝ×₊-right-invariant (x̂ ignores positive scale) and, at
    the initialisation $\\vec β = 0$, O(n)-equivariant: probabilistically O(n)-equivariant
    over the (point-mass) initialisation, algebraically trivial once $\\vec β$ is trained.
    Closure: $a(γ\\hat x + \\vec β) + t$ and $f(-x)$ stay in the class (the dilations
    ℝ×⋉ℝⁿ on the left, ℝ× on the right), and conjugation by a similarity $M = aR$ ($a > 0$,
    $R$ orthogonal) maps it to $(γ/a)\\hat x + M^{-1}\\vec β$: closure E is the similarity
    group ℝ×·O(n).

    **Arguments:**

    - `n`: the dimension, ≥ 1.
    - `dtype`: parameter dtype (default float32).
    """

    gamma: Float[Array, ""]
    beta: Float[Array, " n"]
    n: int = eqx.field(static=True)

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(ScaleTranslation(), Scaling(), ConformalLinear()),
        probabilistic=(None, Scaling(positive=True), Orthogonal()),
        algebraic=(None, Scaling(positive=True), None),
    )

    def __init__(self, n: IntLike, *, dtype=jnp.float32):
        dtype = check_float_dtype(dtype, type(self).__name__)
        self.n = check_n(n, "SimpleIsotropicLayerNorm")
        self.gamma = jnp.ones((), dtype)
        self.beta = jnp.zeros((n,), dtype)

    @named_scope("taxdl.SimpleIsotropicLayerNorm")
    def __call__(self, x: Float[Array, " n"], *, key=None) -> Float[Array, " n"]:
        del key
        check_input(x, self.n, "SimpleIsotropicLayerNorm")
        return F.simple_isotropic_layer_norm(x, self.gamma.astype(x.dtype),
                                             self.beta.astype(x.dtype))


@signature.register
def _(norm: SimpleIsotropicLayerNorm, n=None) -> Signature:
    return Signature(((norm.n,),))


@reinitialise.register
def _(norm: SimpleIsotropicLayerNorm, key) -> SimpleIsotropicLayerNorm:
    del key  # deterministic initialisation γ = 1, β = 0
    return SimpleIsotropicLayerNorm(norm.n, dtype=norm.beta.dtype)


@transport.register
def _(norm: SimpleIsotropicLayerNorm, flavour, element, group) -> SimpleIsotropicLayerNorm:
    """L ($y \\mapsto My + t$, $M = aI$): γ ↦ aγ, β ↦ Mβ + t. R ($x \\mapsto a x$): γ ↦
    sign(a)γ. E ($M = aR$, $a > 0$, $R$ orthogonal): γ ↦ γ/a, β ↦ M⁻¹(β − t). Exact on
    the declared groups."""
    flavour = Flavour(flavour)
    dtype = norm.beta.dtype
    m, t = element.matrix.astype(dtype), element.shift.astype(dtype)
    if flavour is Flavour.LEFT:
        return eqx.tree_at(lambda l: (l.gamma, l.beta), norm,
                           (m[0, 0] * norm.gamma, m @ norm.beta + t))
    if flavour is Flavour.RIGHT:
        return eqx.tree_at(lambda l: l.gamma, norm, jnp.sign(m[0, 0]) * norm.gamma)
    minv = jnp.linalg.inv(m)
    gamma = norm.gamma / jnp.linalg.norm(m[:, 0])
    return eqx.tree_at(lambda l: (l.gamma, l.beta), norm, (gamma, minv @ (norm.beta - t)))


_ISO_NORMS = ("unit", "tanh")


def _iso_ln_taxonomy(normalisation: str) -> Taxonomy:
    right = Scaling(positive=True) if normalisation == "unit" else None
    return Taxonomy(
        closure=(Affine(), GeneralLinear(), GeneralLinear()),
        probabilistic=(None, right, Orthogonal()),
        algebraic=(None, right, None),
        note=("tied initialisation W_out = √n W_inᵀ: P is O(n)-conjugation invariant only; "
              "each draw is algebraically equivariant to the factored group O(k)×O(n−k) "
              "of its own subspaces (spontaneous symmetry breaking)"),
    )


@register(family="normaliser", name="IsotropicLayerNorm", formula="W_out σ(W_in x) + b",
          example=lambda: IsotropicLayerNorm(8, key=jax.random.key(0)),
          reference="isotropic paper App. A.1")
class IsotropicLayerNorm(AbstractNormaliser):
    """Isotropic layer-norm as the isotropic paper proposes it (App. A.1): a bottleneck
    $f(x) = W_{out}\\,σ(W_{in}x) + b$ with $W_{in}: ℝ^n \\to ℝ^k$ ($k = n - 2$ by default,
    LayerNorm's two lost degrees of freedom), an isotropic normalisation σ on $ℝ^k$ — the
    unit vector $\\hat y$ (`"unit"`, default) or isotropic tanh (`"tanh"`) — and an affine
    map $ℝ^k \\to ℝ^n$ that is the basis-free substitute for LayerNorm's γ and β.

    Initialisation (tied, the analogue of LayerNorm's γ = 1, β = 0): $W_{in}$ Haar
    semi-orthogonal (orthonormal rows), $W_{out} = \\sqrt n\\,W_{in}^T$, $b = 0$, so at
    initialisation $f$ projects $x$ onto a uniformly random $k$-dimensional subspace and
    normalises it to norm $\\sqrt n$ (LayerNorm projects onto $\\mathbf 1^\\perp$).

    **Symmetry:** closure GL on every side (the weights absorb any invertible map);
    probabilistically O(n)-equivariant under the initialisation ($W_{in} \\mapsto
    W_{in}R$ has the same law and $W_{out}$ follows); algebraically trivial for the class,
    except ℝ×₊-right-invariance with the unit normalisation. Each initial draw is
    algebraically equivariant to the factored group $O(k) × O(n-k)$ acting on its own
    row space of $W_{in}$ and its complement — the symmetry that survives the
    spontaneous breaking by initialisation (not a fixed family, so not a declared cell).

    **Arguments:**

    - `n`: the dimension, ≥ 2.
    - `bottleneck`: the inner dimension $k$, $1 ≤ k ≤ n$ (default $\\max(n - 2, 1)$).
    - `normalisation`: `"unit"` or `"tanh"`.
    - `key`: PRNG key (keyword-only); `dtype`: parameter dtype.
    """

    w_in: Float[Array, "k n"]
    w_out: Float[Array, "n k"]
    bias: Float[Array, " n"]
    n: int = eqx.field(static=True)
    bottleneck: int = eqx.field(static=True)
    normalisation: str = eqx.field(static=True)

    def __init__(self, n: IntLike, bottleneck: IntLike | None = None,
                 normalisation: str = "unit", *, key: PRNGKeyArray, dtype=jnp.float32):
        dtype = check_float_dtype(dtype, type(self).__name__)
        self.n = n = check_n(n, "IsotropicLayerNorm", 2)
        k = max(n - 2, 1) if bottleneck is None else bottleneck
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, INT_TYPES) or not 1 <= k <= n:
            raise ValueError(f"IsotropicLayerNorm: `bottleneck` must be an integer in "
                             f"[1, n={n}], got {bottleneck!r}.")
        if normalisation not in _ISO_NORMS:
            raise ValueError(f"IsotropicLayerNorm: `normalisation` must be one of "
                             f"{_ISO_NORMS}, got {normalisation!r}.")
        k = int(k)
        self.bottleneck, self.normalisation = k, normalisation
        self.w_in = haar_orthogonal(key, (k, n), dtype)
        self.w_out = jnp.sqrt(jnp.asarray(n, dtype)) * self.w_in.T
        self.bias = jnp.zeros((n,), dtype)

    @property
    def taxonomy(self) -> Taxonomy:
        return _iso_ln_taxonomy(self.normalisation)

    @named_scope("taxdl.IsotropicLayerNorm")
    def __call__(self, x: Float[Array, " n"], *, key=None) -> Float[Array, " n"]:
        del key
        check_input(x, self.n, "IsotropicLayerNorm")
        return F.isotropic_layer_norm(x, self.w_in, self.w_out, self.bias, self.normalisation)


@signature.register
def _(norm: IsotropicLayerNorm, n=None) -> Signature:
    return Signature(((norm.n,),))


@reinitialise.register
def _(norm: IsotropicLayerNorm, key) -> IsotropicLayerNorm:
    return IsotropicLayerNorm(norm.n, norm.bottleneck, norm.normalisation, key=key,
                              dtype=norm.w_in.dtype)


@transport.register
def _(norm: IsotropicLayerNorm, flavour, element, group) -> IsotropicLayerNorm:
    """L: $W_{out} \\mapsto MW_{out}$, $b \\mapsto Mb + t$. R: $W_{in} \\mapsto W_{in}M$.
    E: both, with $M^{-1}$ on the output side. Exact for every linear $M$."""
    flavour = Flavour(flavour)
    dtype = norm.w_in.dtype
    m, t = element.matrix.astype(dtype), element.shift.astype(dtype)
    if flavour is Flavour.LEFT:
        return eqx.tree_at(lambda l: (l.w_out, l.bias), norm, (m @ norm.w_out, m @ norm.bias + t))
    if flavour is Flavour.RIGHT:
        return eqx.tree_at(lambda l: l.w_in, norm, norm.w_in @ m)
    minv = jnp.linalg.inv(m)
    return eqx.tree_at(lambda l: (l.w_in, l.w_out, l.bias), norm,
                       (norm.w_in @ m, minv @ norm.w_out, minv @ (norm.bias - t)))
