"""Groups needed by the activation catalogue beyond the core hierarchy.

- [`PositiveMonomial`][taxdl.groups.PositiveMonomial]: Sₙ ⋉ (ℝ×₊)ⁿ, permutations with
  positive *per-coordinate* scalings, the symmetry of ReLU-like activations (Fu & Cohen,
  Corollary 4.6, with the diagonal restricted to positive entries).
- [`Phase`][taxdl.groups.Phase]: the global phases $e^{i\\varphi} I$ on ℂⁿ (U(1)), under
  which the Bloch/Hopf map is invariant.
- [`MonomialUnitary`][taxdl.groups.MonomialUnitary]: U(1)ⁿ ⋊ Sₙ, permutations with an
  independent phase per coordinate (the symmetry of the Sₙ×U(1) activation form, eq 29).
- [`RotatedConeGroup`][taxdl.groups.RotatedConeGroup]: the CoLU cone group rotated so
  that each cone's axis is the all-ones direction of its block (RCoLU, eq 5).

Hierarchy (registered here): I ⊂ Phase ⊂ Sₙ×U(1) ⊂ U(1)ⁿ⋊Sₙ ⊂ U(n);
Sₙ ⊂ PositiveMonomial ⊃ ℝ×₊ (those two edges are in the core rules) and
PositiveMonomial ⊂ GL(n); rotated cone isometries ⊂ rotated cone group ⊂ GL(n) and
rotated cone isometries ⊂ O(n).
"""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._base import (
    AbstractCompactGroup,
    AbstractNoncompactGroup,
    _check_dimension,
    complex_work_dtype,
    helmert_basis,
    linear_element,
    log_uniform,
    permutation_matrices,
    random_permutations,
    random_phases,
    scalar_part,
    unit_monomial,
    zero_shift,
)
from ._complex import PermutationPhase, Unitary
from ._hierarchy import _bind, immediate_supergroups
from ._real import GeneralLinear, Orthogonal
from ._structured import (
    check_cone_dim,
    cone_matrices,
    cones_in_blocks,
    cones_label,
    is_block_cone_matrix,
)


def _monomial_pattern(m, atol):
    """Exactly one non-negligible entry per row and column."""
    nonzero = jnp.abs(m) > atol
    rows = jnp.all(jnp.sum(nonzero, -1) == 1, -1)
    cols = jnp.all(jnp.sum(nonzero, -2) == 1, -1)
    return nonzero, rows & cols


class PositiveMonomial(AbstractNoncompactGroup):
    """Sₙ ⋉ (ℝ×₊)ⁿ: matrices $P D$ with $P$ a permutation and $D$ a positive diagonal.

    The equivariance group of every positively homogeneous elementwise activation
    (ReLU, leaky ReLU): $\\mathrm{ReLU}(PDx) = PD\\,\\mathrm{ReLU}(x)$ (Fu & Cohen,
    Corollary 4.6). Not compact: `sample` draws a uniform permutation and independent
    diagonal entries with $\\log d_i$ uniform on $[\\log\\tfrac12, \\log 2]$ (**not Haar**).
    """

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "S⋉ℝ×₊ⁿ"
    name_template: ClassVar[str] = "S_{n}⋉(ℝ×₊)^{n}"

    def _sample(self, key, num, dtype):
        kp, kd = jax.random.split(key)
        p = permutation_matrices(random_permutations(kp, num, self.n), dtype)
        d = log_uniform(kd, (num, self.n), dtype)
        return linear_element(p * d[:, None, :])

    def _contains(self, element, atol):
        m = element.matrix
        _, pattern = _monomial_pattern(m, atol)
        positive = jnp.all(m >= -atol, axis=(-2, -1))
        return pattern & positive & zero_shift(element, atol)


class Phase(AbstractCompactGroup):
    """U(1) acting on ℂⁿ by global phases $x \\mapsto e^{i\\varphi} x$ (exact Haar:
    uniform φ)."""

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "U(1)"
    name_template: ClassVar[str] = "U(1)"
    finite: ClassVar[bool] = False
    field: ClassVar[str] = "complex"

    def _sample(self, key, num, dtype):
        eye = jnp.eye(self.n, dtype=complex_work_dtype(dtype))
        return linear_element(random_phases(key, (num,), dtype)[:, None, None] * eye)

    def _contains(self, element, atol):
        c, scalar = scalar_part(element.matrix, atol)
        return scalar & (jnp.abs(jnp.abs(c) - 1) <= atol) & zero_shift(element, atol)


class MonomialUnitary(AbstractCompactGroup):
    """U(1)ⁿ ⋊ Sₙ on ℂⁿ: permutations with an independent unit phase per coordinate
    (exact Haar: uniform permutation, independent uniform phases)."""

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "U(1)ⁿ⋊S"
    name_template: ClassVar[str] = "U(1)^{n}⋊S_{n}"
    finite: ClassVar[bool] = False
    field: ClassVar[str] = "complex"

    def _sample(self, key, num, dtype):
        kp, kf = jax.random.split(key)
        p = permutation_matrices(random_permutations(kp, num, self.n), complex_work_dtype(dtype))
        return linear_element(random_phases(kf, (num, self.n), dtype)[:, :, None] * p)

    def _contains(self, element, atol):
        return unit_monomial(element.matrix, atol)[1] & zero_shift(element, atol)


def rotated_cone_basis(cone_dim: int, dtype=jnp.float32):
    """The orthogonal (S, S) matrix $Q$ whose first column is $\\mathbf 1/\\sqrt S$ and whose
    other columns are the Helmert basis of $\\mathbf 1^\\perp$: $Q e_1$ is a cone's axis."""
    s = cone_dim
    q = np.concatenate([np.full((s, 1), 1 / np.sqrt(s)), helmert_basis(s)], axis=1)
    return jnp.asarray(q, dtype)


class RotatedConeGroup(AbstractNoncompactGroup):
    """The symmetry group of rotated, homogeneous-axis CoLU (RCoLU, Fu & Cohen eq 5).

    The channels form G contiguous blocks of S coordinates; each block's cone axis is its
    all-ones direction. The group is generated by permutations of the blocks, an
    independent O(S−1) rotation of each block's hyperplane $\\mathbf 1^\\perp$ (fixing
    $\\mathbf 1$), and, when `scalings=True`, positive per-block scalings. It is the
    [`ConeGroup`][taxdl.groups.ConeGroup] (block layout) conjugated by the block-diagonal
    rotation that takes each $e_1$ to $\\mathbf 1/\\sqrt S$. For G = 1 and no scalings it
    is O(n−1) fixing $\\mathbf 1$.

    **Arguments:**

    - `n`: the number of channels C = G·S (None for the family).
    - `cone_dim`: S ≥ 1.
    - `scalings`: include positive per-block scalings.

    Sampling: block permutation uniform, rotations Haar on O(S−1), log-scales uniform on
    [log ½, log 2] (not Haar when `scalings=True`).
    """

    n: int | None = eqx.field(static=True, default=None)
    cone_dim: int = eqx.field(static=True, default=4)
    scalings: bool = eqx.field(static=True, default=True)
    symbol: ClassVar[str] = "RCone"
    name_template: ClassVar[str] = "R[{_cones_label}]"

    def __check_init__(self):
        check_cone_dim(self.cone_dim, "RotatedConeGroup", 1)
        if self.n is not None:
            _check_dimension(self.n, "RotatedConeGroup")
            self.num_cones  # validates divisibility

    @property
    def num_cones(self) -> int:
        """G, the number of cones."""
        return cones_in_blocks(self._require_n(), self.cone_dim, "RotatedConeGroup")

    _cones_label = property(lambda self: cones_label(self, shared_axis=False))

    def _rotation(self, dtype):
        q = rotated_cone_basis(self.cone_dim, dtype)
        return jnp.kron(jnp.eye(self.num_cones, dtype=dtype), q)

    def _sample(self, key, num, dtype):
        g, s = self.num_cones, self.cone_dim
        blocks = np.arange(g * s).reshape(g, s)
        m = cone_matrices(key, num, self.n, blocks[:, 0], blocks[:, 1:], self.scalings,
                          False, dtype)
        q = self._rotation(dtype)
        return linear_element(q @ m @ q.T)

    def _contains(self, element, atol):
        q = self._rotation(element.matrix.dtype)
        m = jnp.swapaxes(q, -1, -2) @ element.matrix @ q
        return (is_block_cone_matrix(m, self.num_cones, self.cone_dim, self.scalings, atol)
                & zero_shift(element, atol))


# ------------------------------------------------------------------ hierarchy rules
immediate_supergroups.register(PositiveMonomial)(lambda g: _bind((GeneralLinear(),), g.n))
immediate_supergroups.register(Phase)(lambda g: _bind((PermutationPhase(),), g.n))
immediate_supergroups.register(MonomialUnitary)(lambda g: _bind((Unitary(),), g.n))
# Sₙ×U(1) ⊂ U(1)ⁿ⋊Sₙ ⊂ U(n): refines the core rule Sₙ×U(1) ⊂ U(n).
immediate_supergroups.register(PermutationPhase)(lambda g: _bind((MonomialUnitary(),), g.n))
immediate_supergroups.register(RotatedConeGroup)(lambda g: (
    (RotatedConeGroup(g.n, g.cone_dim, True),) + _bind((Orthogonal(),), g.n)
    if not g.scalings else _bind((GeneralLinear(),), g.n)))
