"""Audits of per-example standard normalisers (isotropic paper App. A.1): RMSNorm,
GroupNorm and InstanceNorm (eq 44), declared with their true groups.

Conventions shared with [`LayerNorm`][taxdl.nn.LayerNorm]: channels on the last axis (so
group actions on channels are `taxdl.groups` last-axis actions, the same element at every
spatial position), γ = 1 and β = 0 at initialisation, ε = 0 by default (the form whose
scale invariance the paper analyses; ε > 0 shrinks the right-invariance to +λ1 or I).

A note on vector γ: at the initialisation γ = 1 these normalisers are equivariant to more
(e.g. RMSNorm is then $\\sqrt n\\,\\hat x$, O(n)-equivariant), but conjugating a trained
$\\operatorname{diag}(γ)$ by a rotation leaves the class, so the closure — and with it
the probabilistic cell, which implies closure (eq 30) — stops at (signed) permutations.
"""

import equinox as eqx
import jax.numpy as jnp
from jax import named_scope
from jaxtyping import Array, Float

from ...groups import (
    BlockPermutation,
    BlockScaleShift,
    Diagonal,
    DiagonalAffine,
    Element,
    MonomialAffine,
    Orthogonal,
    Permutation,
    Product,
    ScaleShift,
    Scaling,
    SignedPermutation,
    SignFlips,
    Translation,
    Translations,
    signs_times,
)
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
from . import _functional as F
from ..._types import IntLike, RealLike, check_float_dtype
from ._checks import check_channels, check_eps, check_input, check_n


# ================================================================================ RMSNorm
@register(family="normaliser", name="RMSNorm", formula="γ⊙x/√(ε + E_i x²)",
          example=lambda: RMSNorm(8), reference="RMSNorm (Zhang & Sennrich 2019); audit")
class RMSNorm(AbstractNormaliser):
    """RMSNorm $f(x) = γ \\odot x / \\sqrt{ε + \\mathbb E_i x_i^2}$ (audit), vector γ
    initialised to 1, no β.

    **Symmetry:** no mean removal, so unlike LayerNorm nothing singles out $\\mathbf 1$:
    algebraically ℝ×₊-right-invariant (ε = 0) and equivariant only to what commutes with
    every $\\operatorname{diag}(γ)$ and preserves the RMS: the sign flips ℤ₂ⁿ.
    Closure: γ absorbs every diagonal map on the left ((ℝ×)ⁿ: $D(γ ⊙ y) = (Dγ) ⊙ y$)
    and global sign flips on the right (ℝ×), and
    conjugation by a signed permutation only permutes γ (Bₙ), by a scalar $a$ (ε = 0)
    only divides it by |a|: ℝ× × Bₙ; a rotation does not keep
    $\\operatorname{diag}(γ)$ diagonal. Probabilistic (γ = 1 point mass): Bₙ, ℝ×₊ (eq 30
    caps the O(n)-equivariance of $\\sqrt n\\,\\hat x$ at the closure group).

    **Arguments:** `n` (≥ 1), `eps` (≥ 0, default 0), `dtype`.
    """

    gamma: Float[Array, " n"]
    n: int = eqx.field(static=True)
    eps: float = eqx.field(static=True)

    def __init__(self, n: IntLike, eps: RealLike = 0.0, *, dtype=jnp.float32):
        dtype = check_float_dtype(dtype, type(self).__name__)
        self.n = check_n(n, "RMSNorm")
        self.eps = check_eps(eps, "RMSNorm")
        self.gamma = jnp.ones((n,), dtype)

    @property
    def taxonomy(self) -> Taxonomy:
        right = Scaling(positive=True) if self.eps == 0 else None
        # ε = 0: conjugating by aS (S a signed permutation) also divides γ by |a|
        equi = Product(Scaling(), SignedPermutation()) if self.eps == 0 else SignedPermutation()
        # closure R: per-coordinate signs leave ‖x‖ unchanged and γ ↦ Dγ absorbs them
        # (for every ε), and with ε = 0 positive scalings are removed by the RMS
        right_clo = Product(Scaling(positive=True), SignFlips()) if self.eps == 0 else SignFlips()
        return Taxonomy(
            closure=(Diagonal(), right_clo, equi),
            probabilistic=(None, right, SignedPermutation()),
            algebraic=(None, right, SignFlips()),
            note="γ = 1 is √n x̂ (O(n)-equivariant) but rotations leave the vector-γ class"
                 + ("" if self.eps == 0 else "; ε > 0 breaks scale invariance"),
        )

    @named_scope("taxdl.RMSNorm")
    def __call__(self, x: Float[Array, " n"], *, key=None) -> Float[Array, " n"]:
        del key
        check_input(x, self.n, "RMSNorm")
        return F.rms_norm(x, self.gamma.astype(x.dtype), self.eps).astype(x.dtype)


@signature.register
def _(norm: RMSNorm, n=None) -> Signature:
    return Signature(((norm.n,),))


@reinitialise.register
def _(norm: RMSNorm, key) -> RMSNorm:
    del key
    return RMSNorm(norm.n, norm.eps, dtype=norm.gamma.dtype)


@factor_out.register
def _(norm: RMSNorm) -> Factored:
    """$\\mathrm{RMS}_γ = k∘\\mathrm{RMS}_1$ with $k = \\operatorname{diag}(γ)$ in (ℝ×)ⁿ. The
    core $\\sqrt n\\,x/\\sqrt{nε + \\|x\\|^2}$ is O(n)-equivariant and (ε = 0) invariant under
    positive scalings, so RMSNorm → Linear is closed under ℝ×·O(n) on the right."""
    core = eqx.tree_at(lambda l: l.gamma, norm, jnp.ones_like(norm.gamma))
    right = Scaling(positive=True) if norm.eps == 0 else None
    k = Element(jnp.diag(norm.gamma), jnp.zeros_like(norm.gamma))
    return Factored(core, (None, right, Orthogonal()), Diagonal(norm.n), k, initial=True)


@transport.register
def _(norm: RMSNorm, flavour, element, group) -> RMSNorm:
    """L ($y \\mapsto Dy$, D diagonal): γ ↦ Dγ. R ($x \\mapsto aDx$, D a diagonal of signs):
    γ ↦ sign(aD)γ. E (signed
    permutation $S$, times a scalar a with ε = 0): γ ↦ |S|⁻¹γ/|a|; for other $M$ the
    nearest diagonal
    $\\operatorname{diag}(M^{-1}\\operatorname{diag}(γ)M)$ (exact only if that is diagonal)."""
    flavour = Flavour(flavour)
    m = element.matrix.astype(norm.gamma.dtype)
    if flavour is Flavour.LEFT:
        return eqx.tree_at(lambda l: l.gamma, norm, jnp.diagonal(m) * norm.gamma)
    if flavour is Flavour.RIGHT:
        return eqx.tree_at(lambda l: l.gamma, norm, jnp.sign(jnp.diagonal(m)) * norm.gamma)
    # aS: the RMS removes |a| before γ, M⁻¹ divides by a after
    gamma = F.conjugated_gain(norm.gamma, m, jnp.linalg.inv(m))
    return eqx.tree_at(lambda l: l.gamma, norm, gamma)


# ============================================================== GroupNorm, InstanceNorm
def _grouped_taxonomy(n: int, groups: int, eps: float, what: str) -> Taxonomy:
    c = n // groups
    if c == 1:
        # per-channel statistics remove every per-channel shift (and, with ε = 0, every
        # positive per-channel scale); the standardisation is odd per channel, so γ absorbs
        # a sign per channel for every ε; sign flips are harmless
        within = SignedPermutation()
        right_clo = DiagonalAffine() if eps == 0 else BlockScaleShift(n, 1, scales=False,
                                                                      signs=True)
        right_alg = DiagonalAffine(positive=True) if eps == 0 else Translations()
    elif groups == 1:
        within = Permutation()
        right_clo = ScaleShift() if eps == 0 else signs_times(Translation())
        right_alg = ScaleShift(positive=True) if eps == 0 else Translation()
    else:
        # per-group statistics remove a shift and (ε = 0) a positive scale per group, γ
        # absorbs a sign per group (the standardisation is odd per group, for every ε);
        # permutations within each group and of the groups as blocks
        within = BlockPermutation(n, c)
        right_clo = (BlockScaleShift(n, c) if eps == 0
                     else BlockScaleShift(n, c, scales=False, signs=True))
        right_alg = (BlockScaleShift(n, c, positive=True) if eps == 0
                     else BlockScaleShift(n, c, scales=False))
    # Closure E: conjugating by x ↦ Mx + t, with (M, t) a map the statistics remove (the
    # right closure group) composed with a permutation of `within`, only rescales γ by
    # the removed scale (the statistics divide it out before γ, g⁻¹ after) and moves β.
    # The permutations move the per-group maps among the groups, so the two generate
    # their semidirect product; with one channel per group and ε = 0 that is Sₙ⋉(ℝ×)ⁿ⋉ℝⁿ.
    # The standardisation is odd: at β = 0 (the initialisation) −I joins E in law, and in
    # closure it maps β ↦ −β (`signs_times` leaves it out where the per-group ℝ× or Bₙ
    # already holds it).
    equi_clo = MonomialAffine() if c == 1 and eps == 0 else signs_times(right_clo, within)
    equi_law = signs_times(within)
    return Taxonomy(
        closure=(DiagonalAffine(), right_clo, equi_clo),
        probabilistic=(None, right_alg, equi_law),
        algebraic=(None, right_alg, None),
        note=(f"{what}: statistics per group of {c} channel(s); at γ = 1 the within-group "
              "O(c−1) holds in law but leaves the vector-γ class"
              + ("" if eps == 0 else "; ε > 0 breaks scale invariance")),
    )


def _grouped_transport(norm, flavour, element):
    flavour = Flavour(flavour)
    d = norm.gamma.dtype
    m, t = element.matrix.astype(d), element.shift.astype(d)
    if flavour is Flavour.LEFT:
        return eqx.tree_at(lambda l: (l.gamma, l.beta), norm,
                           (jnp.diagonal(m) * norm.gamma, m @ norm.beta + t))
    if flavour is Flavour.RIGHT:  # per-channel signs (one shared sign for aI + λ1)
        return eqx.tree_at(lambda l: l.gamma, norm, jnp.sign(jnp.diagonal(m)) * norm.gamma)
    # E by x ↦ Mx + t, M = PD monomial (permutations, signs, per-channel scales): the
    # statistics remove |d_j| from channel j
    minv = jnp.linalg.inv(m)
    gamma = F.conjugated_gain(norm.gamma, m, minv)
    return eqx.tree_at(lambda l: (l.gamma, l.beta), norm, (gamma, minv @ (norm.beta - t)))


@register(family="normaliser", name="GroupNorm", formula="γ⊙GroupStandardise(x) + β",
          example=lambda: GroupNorm(8, 2), reference="isotropic paper App. A.1 (Wu & He); audit")
class GroupNorm(AbstractNormaliser):
    """GroupNorm (audit, isotropic paper App. A.1): channels last, split into `groups`
    contiguous groups; each group is standardised over its channels and all spatial
    positions, then $γ \\odot \\cdot + β$ (vectors, init 1 and 0).

    **Symmetry:** "a middle ground between LayerNorm and InstanceNorm": algebraically
    (ℝ×₊, +λ1)-right-invariant (ε = 0; each group's mean and scale are removed);
    equivariance only to permutations within each group (Sₙ for one group, Bₙ for one
    channel per group) — at closure and probabilistic level, algebraically trivial for
    a trained γ, β. Closure L: the per-channel γ, β absorb every per-channel affine map
    ((ℝ×)ⁿ⋉ℝⁿ). Closure E: a scale and shift per group (ε = 0; a sign and a shift per group with
    ε > 0), which the statistics remove, composed with those permutations, only rescales
    γ and moves β: the group they generate, (ℝ×,+λ1)^G × S_c≀S_G (the permutations move
    the per-group maps among the groups), and with one channel per group every monomial
    affine map, Sₙ⋉(ℝ×)ⁿ⋉ℝⁿ. The standardisation is odd, so −I also belongs to E: in law
    at the initialisation β = 0 (±I × S_c≀S_G, ±I × Sₙ for one group) and, mapping β to
    −β, in closure with ε > 0, where the standardisation is odd in each group: closure R
    is then a sign and a shift per group, (±1,+λ1)^G, and closure E S_c≀S_G⋉(±1,+λ1)^G
    (with ε = 0 the ℝ× of each group contains the signs). With one channel per group Bₙ
    already contains −I.

    **Arguments:** `n` channels, `groups` (a divisor of n), `eps` (≥ 0, default 0),
    `dtype`. Inputs have shape `(*spatial, n)`.
    """

    gamma: Float[Array, " n"]
    beta: Float[Array, " n"]
    n: int = eqx.field(static=True)
    groups: int = eqx.field(static=True)
    eps: float = eqx.field(static=True)

    def __init__(self, n: IntLike, groups: IntLike, eps: RealLike = 0.0, *, dtype=jnp.float32):
        dtype = check_float_dtype(dtype, type(self).__name__)
        self.n = n = check_n(n, "GroupNorm")
        F._check_groups(n, groups)
        self.groups = int(groups)
        self.eps = check_eps(eps, "GroupNorm")
        self.gamma = jnp.ones((n,), dtype)
        self.beta = jnp.zeros((n,), dtype)

    @property
    def taxonomy(self) -> Taxonomy:
        return _grouped_taxonomy(self.n, self.groups, self.eps, "GroupNorm")

    @named_scope("taxdl.GroupNorm")
    def __call__(self, x: Float[Array, "*s n"], *, key=None) -> Float[Array, "*s n"]:
        del key
        check_channels(x, self.n, "GroupNorm")
        d = x.dtype
        return F.group_norm(x, self.gamma.astype(d), self.beta.astype(d), self.groups,
                            self.eps).astype(d)


@register(family="normaliser", name="InstanceNorm", formula="γᵢ(xᵢ−E_hw xᵢ)/√(ε+Var_hw xᵢ)+βᵢ",
          example=lambda: InstanceNorm(8), reference="isotropic paper eq 44; audit")
class InstanceNorm(AbstractNormaliser):
    """InstanceNorm (isotropic paper eq 44, audit), channels last: every channel is
    standardised over the spatial positions (leading axes), then $γ_i \\cdot + β_i$.

    **Symmetry:** per-channel statistics commute with permuting and flipping channels:
    Bₙ at closure and probabilistic level (algebraically trivial for a trained γ, β;
    Bₙ-equivariant when β = 0 and γ is constant, as App. A.1 notes); never O(n) — a
    rotation mixes channels with different statistics. Right-invariant to (ℝ×₊, +λ1)
    with ε = 0 (any per-channel shift and positive scale, in fact: (ℝ×₊)ⁿ⋉ℝⁿ); with
    ε > 0 to every per-channel shift, T(n). Closure: the
    per-channel γ, β absorb every per-channel affine map on the left, and on the right the
    statistics remove per-channel shifts and scales, the signs going into γ (ε = 0):
    (ℝ×)ⁿ⋉ℝⁿ on both sides; on the right with ε > 0 a sign (the standardisation is odd)
    and a shift per channel, (±1)ⁿ⋉ℝⁿ. Closure E with ε = 0: the
    monomial affine maps Sₙ⋉(ℝ×)ⁿ⋉ℝⁿ, since conjugating by $x \\mapsto PDx + t$ only
    rescales γ by $1/|d|$ and moves β; with ε > 0, the signed permutations with every
    translation, Bₙ⋉T(n).

    **Arguments:** `n` channels, `eps` (≥ 0, default 0), `dtype`. Inputs have shape
    `(*spatial, n)`; the checker uses 4 spatial positions. With no spatial axis every
    channel is constant and maps to $β_i$.
    """

    gamma: Float[Array, " n"]
    beta: Float[Array, " n"]
    n: int = eqx.field(static=True)
    eps: float = eqx.field(static=True)

    def __init__(self, n: IntLike, eps: RealLike = 0.0, *, dtype=jnp.float32):
        dtype = check_float_dtype(dtype, type(self).__name__)
        self.n = check_n(n, "InstanceNorm")
        self.eps = check_eps(eps, "InstanceNorm")
        self.gamma = jnp.ones((n,), dtype)
        self.beta = jnp.zeros((n,), dtype)

    @property
    def taxonomy(self) -> Taxonomy:
        return _grouped_taxonomy(self.n, self.n, self.eps, "InstanceNorm")

    @named_scope("taxdl.InstanceNorm")
    def __call__(self, x: Float[Array, "*s n"], *, key=None) -> Float[Array, "*s n"]:
        del key
        check_channels(x, self.n, "InstanceNorm")
        d = x.dtype
        return F.instance_norm(x, self.gamma.astype(d), self.beta.astype(d),
                               self.eps).astype(d)


_SPATIAL = 4


@signature.register
def _(norm: GroupNorm, n=None) -> Signature:
    return Signature(((_SPATIAL, norm.n),))


@signature.register
def _(norm: InstanceNorm, n=None) -> Signature:
    return Signature(((_SPATIAL, norm.n),))


@reinitialise.register
def _(norm: GroupNorm, key) -> GroupNorm:
    del key
    return GroupNorm(norm.n, norm.groups, norm.eps, dtype=norm.gamma.dtype)


@reinitialise.register
def _(norm: InstanceNorm, key) -> InstanceNorm:
    del key
    return InstanceNorm(norm.n, norm.eps, dtype=norm.gamma.dtype)


@transport.register
def _(norm: GroupNorm, flavour, element, group) -> GroupNorm:
    """L ($D + t$, D diagonal): γ ↦ Dγ, β ↦ Dβ + t. R: γ ↦ sign(D)γ. E ($M$): γ ↦
    diag(M⁻¹ diag(γ) M), β ↦ M⁻¹β — exact for within-group permutations."""
    return _grouped_transport(norm, flavour, element)


@transport.register
def _(norm: InstanceNorm, flavour, element, group) -> InstanceNorm:
    """As GroupNorm's; exact for signed permutations on E."""
    return _grouped_transport(norm, flavour, element)
