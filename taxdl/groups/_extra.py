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
PositiveMonomial ⊂ GL(n); rotated cone isometries ⊂ rotated cone group ⊂ GL(n) and
rotated cone isometries ⊂ O(n).
"""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._base import (
    AbstractGroup,
    _check_dimension,
    complex_work_dtype,
    haar_orthogonal,
    is_orthogonal,
    linear_element,
    permutation_matrices,
    random_permutations,
    work_dtype,
    zero_shift,
)
from ._complex import PermutationPhase, Unitary
from ._hierarchy import _bind, immediate_supergroups
from ._real import GeneralLinear, Orthogonal


def _log_uniform(key, shape, dtype):
    """Positive factors with log uniform on [log ½, log 2] (well conditioned, not Haar)."""
    return jnp.exp(jax.random.uniform(key, shape, dtype, jnp.log(0.5), jnp.log(2.0)))


def _monomial_pattern(m, atol):
    """Exactly one non-negligible entry per row and column."""
    nonzero = jnp.abs(m) > atol
    rows = jnp.all(jnp.sum(nonzero, -1) == 1, -1)
    cols = jnp.all(jnp.sum(nonzero, -2) == 1, -1)
    return nonzero, rows & cols


class PositiveMonomial(AbstractGroup):
    """Sₙ ⋉ (ℝ×₊)ⁿ: matrices $P D$ with $P$ a permutation and $D$ a positive diagonal.

    The equivariance group of every positively homogeneous elementwise activation
    (ReLU, leaky ReLU): $\\mathrm{ReLU}(PDx) = PD\\,\\mathrm{ReLU}(x)$ (Fu & Cohen,
    Corollary 4.6). Not compact: `sample` draws a uniform permutation and independent
    diagonal entries with $\\log d_i$ uniform on $[\\log\\tfrac12, \\log 2]$ (**not Haar**).
    """

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "S⋉ℝ×₊ⁿ"
    finite: ClassVar[bool] = False
    compact: ClassVar[bool] = False
    haar: ClassVar[bool] = False
    field: ClassVar[str] = "real"
    isometric: ClassVar[bool] = False

    @property
    def name(self) -> str:
        return f"S_{self._dim_label()}⋉(ℝ×₊)^{self._dim_label()}"

    def _sample(self, key, num, dtype):
        kp, kd = jax.random.split(key)
        p = permutation_matrices(random_permutations(kp, num, self.n), dtype)
        d = _log_uniform(kd, (num, self.n), dtype)
        return linear_element(p * d[:, None, :])

    def _contains(self, element, atol):
        m = element.matrix
        _, pattern = _monomial_pattern(m, atol)
        positive = jnp.all(m >= -atol, axis=(-2, -1))
        return pattern & positive & zero_shift(element, atol)


class Phase(AbstractGroup):
    """U(1) acting on ℂⁿ by global phases $x \\mapsto e^{i\\varphi} x$ (exact Haar:
    uniform φ)."""

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "U(1)"
    finite: ClassVar[bool] = False
    compact: ClassVar[bool] = True
    haar: ClassVar[bool] = True
    field: ClassVar[str] = "complex"
    isometric: ClassVar[bool] = True

    @property
    def name(self) -> str:
        return "U(1)"

    def _sample(self, key, num, dtype):
        cdtype = complex_work_dtype(dtype)
        phi = jax.random.uniform(key, (num,), work_dtype(dtype), 0, 2 * jnp.pi)
        phase = jax.lax.complex(jnp.cos(phi), jnp.sin(phi)).astype(cdtype)
        eye = jnp.eye(self.n, dtype=cdtype)
        return linear_element(phase[:, None, None] * eye)

    def _contains(self, element, atol):
        m = element.matrix
        c = m[..., 0, 0]
        eye = jnp.eye(m.shape[-1], dtype=m.dtype)
        scalar = jnp.max(jnp.abs(m - c[..., None, None] * eye), axis=(-2, -1)) <= atol
        return scalar & (jnp.abs(jnp.abs(c) - 1) <= atol) & zero_shift(element, atol)


class MonomialUnitary(AbstractGroup):
    """U(1)ⁿ ⋊ Sₙ on ℂⁿ: permutations with an independent unit phase per coordinate
    (exact Haar: uniform permutation, independent uniform phases)."""

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "U(1)ⁿ⋊S"
    finite: ClassVar[bool] = False
    compact: ClassVar[bool] = True
    haar: ClassVar[bool] = True
    field: ClassVar[str] = "complex"
    isometric: ClassVar[bool] = True

    @property
    def name(self) -> str:
        return f"U(1)^{self._dim_label()}⋊S_{self._dim_label()}"

    def _sample(self, key, num, dtype):
        cdtype = complex_work_dtype(dtype)
        kp, kf = jax.random.split(key)
        p = permutation_matrices(random_permutations(kp, num, self.n), cdtype)
        phi = jax.random.uniform(kf, (num, self.n), work_dtype(dtype), 0, 2 * jnp.pi)
        phase = jax.lax.complex(jnp.cos(phi), jnp.sin(phi)).astype(cdtype)
        return linear_element(phase[:, :, None] * p)

    def _contains(self, element, atol):
        m = element.matrix
        mag = jnp.abs(m)
        near_one = jnp.abs(mag - 1) <= atol
        entries = jnp.all(near_one | (mag <= atol), axis=(-2, -1))
        rows = jnp.all(jnp.sum(near_one, -1) == 1, -1) & jnp.all(jnp.sum(near_one, -2) == 1, -1)
        return entries & rows & zero_shift(element, atol)


def rotated_cone_basis(cone_dim: int, dtype=jnp.float32):
    """The orthogonal (S, S) matrix $Q$ whose first column is $\\mathbf 1/\\sqrt S$ and whose
    other columns are the Helmert basis of $\\mathbf 1^\\perp$: $Q e_1$ is a cone's axis."""
    s = cone_dim
    q = np.zeros((s, s))
    q[:, 0] = 1 / np.sqrt(s)
    for k in range(1, s):
        q[:k, k] = 1.0
        q[k, k] = -float(k)
        q[:, k] /= np.sqrt(k * (k + 1))
    return jnp.asarray(q, dtype)


class RotatedConeGroup(AbstractGroup):
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
    finite: ClassVar[bool] = False
    compact: ClassVar[bool] = False
    haar: ClassVar[bool] = False
    field: ClassVar[str] = "real"
    isometric: ClassVar[bool] = False

    def __check_init__(self):
        s = self.cone_dim
        if isinstance(s, bool) or not isinstance(s, int) or s < 1:
            raise ValueError(
                f"RotatedConeGroup: `cone_dim` (S) must be an integer >= 1, got {s!r}.")
        if self.n is not None:
            _check_dimension(self.n, "RotatedConeGroup")
            self.num_cones  # validates divisibility

    @property
    def num_cones(self) -> int:
        """G, the number of cones."""
        n = self._require_n()
        if n % self.cone_dim != 0:
            raise ValueError(
                f"RotatedConeGroup: the channel count C must be divisible by the cone "
                f"dimension S = {self.cone_dim}; got C = {n}."
            )
        return n // self.cone_dim

    @property
    def name(self) -> str:
        g = "G" if self.n is None else str(self.num_cones)
        body = f"S_{g}×O({self.cone_dim - 1})^{g}"
        return "R[" + body + ("×(ℝ×₊)^" + g if self.scalings else "") + "]"

    def _rotation(self, dtype):
        q = rotated_cone_basis(self.cone_dim, dtype)
        return jnp.kron(jnp.eye(self.num_cones, dtype=dtype), q)

    def _sample(self, key, num, dtype):
        g, s = self.num_cones, self.cone_dim
        kp, ko, ks = jax.random.split(key, 3)
        perm = random_permutations(kp, num, g)
        blocks = jnp.zeros((num, g, s, s), dtype)
        blocks = blocks.at[:, :, 0, 0].set(1)
        if s > 1:
            rots = haar_orthogonal(ko, num * g, s - 1, dtype).reshape(num, g, s - 1, s - 1)
            blocks = blocks.at[:, :, 1:, 1:].set(rots)
        if self.scalings:
            blocks = blocks * _log_uniform(ks, (num, g), dtype)[:, :, None, None]
        # block-permutation matrix: output block i <- input block perm[i]
        pm = permutation_matrices(perm, dtype)  # (num, g, g)
        m = jnp.einsum("nij,niab->niajb", pm, blocks).reshape(num, g * s, g * s)
        q = self._rotation(dtype)
        return linear_element(q @ m @ q.T)

    def _contains(self, element, atol):
        g, s = self.num_cones, self.cone_dim
        q = self._rotation(element.matrix.dtype)
        m = jnp.swapaxes(q, -1, -2) @ element.matrix @ q
        blocks = m.reshape(*m.shape[:-2], g, s, g, s)
        ax = blocks[..., :, 0, :, 0]
        nonzero = jnp.abs(ax) > atol
        perm_ok = jnp.all(jnp.sum(nonzero, -1) == 1, -1) & jnp.all(jnp.sum(nonzero, -2) == 1, -1)
        positive = jnp.all(ax >= -atol, axis=(-2, -1))
        c = jnp.sum(ax, axis=-1)
        if not self.scalings:
            positive = positive & jnp.all(jnp.abs(c - 1) <= atol, -1)
        safe = jnp.where(jnp.abs(c) > atol, c, 1)
        scaled = m / jnp.repeat(safe, s, axis=-1)[..., :, None]
        orth = is_orthogonal(scaled, atol * 4)
        mixed = jnp.abs(blocks[..., :, 0, :, 1:]).max(axis=(-3, -2, -1), initial=0.0) + jnp.abs(
            blocks[..., :, 1:, :, 0]).max(axis=(-3, -2, -1), initial=0.0)
        body = jnp.sqrt(jnp.sum(blocks[..., :, 1:, :, 1:] ** 2, axis=(-3, -1)))
        sparsity = jnp.all(jnp.where(nonzero, True, body <= atol), axis=(-2, -1))
        return perm_ok & positive & orth & (mixed <= atol) & sparsity & zero_shift(element, atol)


# ------------------------------------------------------------------ hierarchy rules
immediate_supergroups.register(PositiveMonomial)(lambda g: _bind((GeneralLinear(),), g.n))
immediate_supergroups.register(Phase)(lambda g: _bind((PermutationPhase(),), g.n))
immediate_supergroups.register(MonomialUnitary)(lambda g: _bind((Unitary(),), g.n))
# Sₙ×U(1) ⊂ U(1)ⁿ⋊Sₙ ⊂ U(n): refines the core rule Sₙ×U(1) ⊂ U(n).
immediate_supergroups.register(PermutationPhase)(lambda g: _bind((MonomialUnitary(),), g.n))
immediate_supergroups.register(RotatedConeGroup)(lambda g: (
    (RotatedConeGroup(g.n, g.cone_dim, True),) + _bind((Orthogonal(),), g.n)
    if not g.scalings else _bind((GeneralLinear(),), g.n)))
