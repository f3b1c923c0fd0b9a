"""LayerNorm audits (isotropic paper eq 43 and Table 5.2)."""

import jax.numpy as jnp
import equinox as eqx
from jax import named_scope
from jaxtyping import Array, Float

from ...groups import (
    DiagonalAffine,
    Element,
    OrthogonalComplement,
    Permutation,
    ScaleShift,
    Translation,
    signs_times,
)
from ..._types import IntLike, RealLike, check_float_dtype
from ._checks import check_eps, check_input, check_n
from ._functional import conjugated_gain, layer_norm
from ...taxonomy import (
    AbstractNormaliser,
    Factored,
    Flavour,
    Signature,
    Taxonomy,
    factor_out,
    register,
    reinitialise,
    signature,
    transport,
)


def _ln_taxonomy(scalar: bool, eps: float) -> Taxonomy:
    # With ε > 0, x ↦ a·x changes Var + ε, so only the translations survive on the right,
    # and in closure the point reflection, which γ ↦ −γ absorbs (the standardisation is
    # odd for every ε).
    right_alg = ScaleShift(positive=True) if eps == 0 else Translation()
    right_clo = ScaleShift() if eps == 0 else signs_times(Translation())
    # Conjugating diag(γ) by a rotation fixing 1 leaves the vector-γ class (only
    # permutations keep it diagonal), so Table 5.2's O(n−1) holds for scalar γ only.
    equi = OrthogonalComplement() if scalar else Permutation()
    # The class also absorbs what commutes with those: conjugating by x ↦ a x + λ1
    # divides γ by |a| and moves β (the statistics remove |a| and λ1 before γ, β; with
    # ε > 0 only λ1), so closure E is (ℝ×,+λ1) × equi, or +λ1 × equi with ε > 0.
    # The standardisation is odd, so at β = 0 (the initialisation) so is the layer: −I
    # joins E in law, and in closure it maps β ↦ −β (`signs_times` leaves it out with
    # ε = 0, where ℝ× holds it).
    equi_law = signs_times(equi)
    equi_clo = signs_times(right_clo, equi)
    note = "ℝ× on the right holds for a > 0 only (LN(−x) = −x̂ before γ, β)"
    if not scalar:
        note += ("; L: γ ⊙ y + β absorbs every per-coordinate affine map D y + t, so "
                 "(ℝ×)ⁿ⋉ℝⁿ (Table 5.2 gives ℝ×,+λ1)")
        note += ("; E: Table 5.2 has O(n−1), but R⁻¹ diag(γ) R is not diagonal for a "
                 "generic γ, so the class is closed under Sₙ only (γ = 1 is O(n−1)-"
                 "equivariant, which eq 30 caps at Sₙ)")
    note += ("; closure E also absorbs x ↦ a x + λ1 (γ ↦ γ/|a|, β moves): "
             f"{equi_clo.name} (Table 5.2 gives O(n−1))")
    note += ("; probabilistic E: the layer is odd at its initialisation (β = 0), "
             f"{equi_law.name} (Table 5.2 gives O(n−1))")
    return Taxonomy(
        closure=(ScaleShift() if scalar else DiagonalAffine(), right_clo, equi_clo),
        probabilistic=(None, right_alg, equi_law),
        algebraic=(None, right_alg, OrthogonalComplement() if scalar else None),
        note=note + ("" if eps == 0 else "; ε > 0 breaks scale invariance"),
    )


class LayerNorm(AbstractNormaliser):
    """LayerNorm over the last axis (eq 43) with vector (`"vector"`) or scalar
    (`"scalar"`) γ and β, initialised to γ = 1, β = 0.

    **Symmetry (Table 5.2):** closure L = ℝ×, +λ1 (absorbed by γ, β) for scalar γ, β, and
    for vector γ, β every per-coordinate affine map $Dy + t$ ($γ ↦ Dγ$, $β ↦ Dβ + t$):
    the group (ℝ×)ⁿ⋉ℝⁿ, larger than the table's ℝ×, +λ1; R = ℝ×₊, +λ1
    (mean and scale are removed; a negative scale flips the sign, so only ℝ×₊ holds
    algebraically); E = O(n−1) fixing the all-ones direction for scalar γ, β
    (probabilistic and algebraic; the closure also absorbs the dilations along the
    all-ones direction that commute with it, $x \\mapsto ax + λ\\mathbf 1$, which divide
    γ by |a| and move β: (ℝ×, +λ1) × O(n−1), or ±I × +λ1 × O(n−1) with ε > 0, −I
    mapping β to −β; in law at the initialisation β = 0 the layer is odd, so the
    probabilistic E cell is ±I × O(n−1)). For vector
    γ, β the paper's table gives O(n−1) for closure and probabilistic E, but
    conjugating $\\operatorname{diag}(γ)$ by a rotation fixing $\\mathbf 1$ leaves the
    class unless γ ∝ 1, so the true cells are built on Sₙ: closure (ℝ×, +λ1) × Sₙ
    (ε = 0) or ±I × +λ1 × Sₙ, probabilistic ±I × Sₙ (the initialisation γ = 1 is
    O(n−1)-equivariant, but eq 30 caps the probabilistic cell at the closure). With ε > 0
    the scale invariance is lost and the R cells shrink to +λ1.

    **Arguments:**

    - `n`: the feature count, ≥ 2.
    - `affine`: `"vector"` (γ, β ∈ ℝⁿ) or `"scalar"` (γ, β ∈ ℝ).
    - `eps`: ε ≥ 0 added to the variance (default 0, the form of Table 5.2).
    """

    gamma: Float[Array, "*n"]
    beta: Float[Array, "*n"]
    n: int = eqx.field(static=True)
    affine: str = eqx.field(static=True)
    eps: float = eqx.field(static=True)

    def __init__(self, n: IntLike, affine: str = "vector", eps: RealLike = 0.0, *,
                 dtype=jnp.float32):
        dtype = check_float_dtype(dtype, type(self).__name__)
        self.n = check_n(n, "LayerNorm", 2)
        if affine not in ("vector", "scalar"):
            raise ValueError(f"LayerNorm: `affine` must be 'vector' or 'scalar', got {affine!r}.")
        self.affine, self.eps = affine, check_eps(eps, "LayerNorm")
        shape = (n,) if affine == "vector" else ()
        self.gamma = jnp.ones(shape, dtype)
        self.beta = jnp.zeros(shape, dtype)

    @property
    def taxonomy(self) -> Taxonomy:
        return _ln_taxonomy(self.affine == "scalar", self.eps)

    @named_scope("taxdl.LayerNorm")
    def __call__(self, x: Float[Array, " n"], *, key=None) -> Float[Array, " n"]:
        del key
        check_input(x, self.n, "LayerNorm")
        return layer_norm(x, self.gamma.astype(x.dtype), self.beta.astype(x.dtype),
                          self.eps).astype(x.dtype)


register(LayerNorm, family="normaliser", name="LayerNorm (vector γ,β)",
         formula="γ⊙(x−E x)/√Var x + β", example=lambda: LayerNorm(8, "vector"),
         reference="isotropic paper eq 43, Table 5.2")


class ScalarLayerNorm(AbstractNormaliser):
    """LayerNorm with scalar γ, β (Table 5.2, "Layer-Norm (γ, β)"): a thin alias of
    [`LayerNorm`][taxdl.nn.LayerNorm] with `affine="scalar"` registered as its own row.

    **Symmetry (Table 5.2):** E = O(n−1) fixing $\\mathbf 1$ at every level (closure,
    probabilistic, algebraic); R = (ℝ×₊, +λ1) algebraically, (ℝ×, +λ1) in closure; L =
    (ℝ×, +λ1) in closure only.
    """

    inner: LayerNorm

    def __init__(self, n: IntLike, eps: RealLike = 0.0, *, dtype=jnp.float32):
        dtype = check_float_dtype(dtype, type(self).__name__)
        self.inner = LayerNorm(n, "scalar", eps, dtype=dtype)

    @property
    def taxonomy(self) -> Taxonomy:
        return self.inner.taxonomy

    def __call__(self, x: Float[Array, " n"], *, key=None) -> Float[Array, " n"]:
        return self.inner(x, key=key)


register(ScalarLayerNorm, family="normaliser", name="LayerNorm (scalar γ,β)",
         formula="γ(x−E x)/√Var x + β1", example=lambda: ScalarLayerNorm(8),
         reference="isotropic paper eq 43, Table 5.2")


@signature.register
def _(ln: LayerNorm, n=None) -> Signature:
    return Signature(((ln.n,),))


@signature.register
def _(ln: ScalarLayerNorm, n=None) -> Signature:
    return Signature(((ln.inner.n,),))


@reinitialise.register
def _(ln: LayerNorm, key) -> LayerNorm:
    del key  # deterministic initialisation γ = 1, β = 0
    return LayerNorm(ln.n, ln.affine, ln.eps, dtype=ln.gamma.dtype)


@reinitialise.register
def _(ln: ScalarLayerNorm, key) -> ScalarLayerNorm:
    return ScalarLayerNorm(ln.inner.n, ln.inner.eps, dtype=ln.inner.gamma.dtype)


@transport.register
def _(ln: LayerNorm, flavour, element, group) -> LayerNorm:
    """Parameter transport for the closure cells (exact on the declared groups).

    - L, $g: y \\mapsto Dy + t$ ($D$ diagonal; $D = aI$, $t = λ\\mathbf 1$ for scalar γ, β):
      $γ \\mapsto Dγ$, $β \\mapsto Dβ + t$.
    - R, $g: x \\mapsto a x + λ\\mathbf 1$: the normalised vector changes by $\\operatorname{sign}
      a$ (ε = 0), absorbed by $γ \\mapsto \\operatorname{sign}(a)γ$.
    - E, $g: x \\mapsto aRx + λ\\mathbf 1$ with $R\\mathbf 1 = \\mathbf 1$ (a = 1 with ε > 0):
      $g^{-1}∘f∘g\\,(x) = |a|^{-1} R^{-1}\\operatorname{diag}(γ)R\\,\\hat x
      + a^{-1}R^{-1}(β - λ\\mathbf 1)$,
      so $γ \\mapsto \\operatorname{diag}(R^{-1}\\operatorname{diag}(γ)R)/|a|$,
      $β \\mapsto g^{-1}β$. This is exact whenever $R^{-1}\\operatorname{diag}(γ)R$ is diagonal:
      for permutations (any γ) and for γ ∝ 1 (any R ∈ O(n−1)); for other pairs the
      conjugated function leaves the class and the returned parameters are only the
      nearest diagonal ones (the closure check then fails, as it must).
    """
    flavour = Flavour(flavour)
    dtype = ln.gamma.dtype
    m, t = element.matrix.astype(dtype), element.shift.astype(dtype)
    vector = ln.affine == "vector"
    if flavour is Flavour.LEFT:
        if vector:
            gamma, beta = jnp.diagonal(m) * ln.gamma, m @ ln.beta + t
        else:
            gamma, beta = m[0, 0] * ln.gamma, m[0, 0] * ln.beta + t[0]
        return eqx.tree_at(lambda l: (l.gamma, l.beta), ln, (gamma, beta))
    if flavour is Flavour.RIGHT:
        return eqx.tree_at(lambda l: l.gamma, ln, jnp.sign(m[0, 0]) * ln.gamma)
    minv = jnp.linalg.inv(m)
    if vector:
        gamma = conjugated_gain(ln.gamma, m, minv)
        beta = minv @ (ln.beta - t)
    else:
        a = jnp.mean(m @ jnp.ones(m.shape[-1], dtype))  # M 1 = a 1
        gamma, beta = ln.gamma / jnp.abs(a), (ln.beta - t[0]) / a
    return eqx.tree_at(lambda l: (l.gamma, l.beta), ln, (gamma, beta))


@transport.register
def _(ln: ScalarLayerNorm, flavour, element, group) -> ScalarLayerNorm:
    return eqx.tree_at(
        lambda l: l.inner, ln, transport(ln.inner, flavour, element, group))


@factor_out.register
def _(ln: LayerNorm) -> Factored | None:
    """Vector γ, β: $\\mathrm{LN}_{γ,β} = k∘\\mathrm{LN}_{1,0}$ with $k: y \\mapsto γ ⊙ y + β$
    in (ℝ×)ⁿ⋉ℝⁿ. The core $\\mathrm{LN}_{1,0}$ is odd and commutes with every rotation
    fixing $\\mathbf 1$ (E: ±I × O(n−1)) and is invariant under $x \\mapsto ax + λ\\mathbf 1$,
    a > 0 (R: (ℝ×₊, +λ1); +λ1 with ε > 0). A following Linear absorbs k, so
    LayerNorm → Linear is closed under (ℝ×, +λ1) × O(n−1) on the right although LayerNorm
    alone is not."""
    if ln.affine != "vector":
        return None
    core = eqx.tree_at(lambda l: (l.gamma, l.beta), ln,
                       (jnp.ones_like(ln.gamma), jnp.zeros_like(ln.beta)))
    right = ScaleShift(positive=True) if ln.eps == 0 else Translation()
    k = Element(jnp.diag(ln.gamma), ln.beta)
    return Factored(core, (None, right, signs_times(OrthogonalComplement())),
                    DiagonalAffine(ln.n), k, initial=True)
