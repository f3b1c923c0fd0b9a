"""Groups acting linearly (or affinely) on real space ℝⁿ.

The chain I ⊂ Sₙ ⊂ Dₙ ⊂ Bₙ ⊂ O(n) ⊂ GL(n), with SO(n), the subspace group O(n−1) that
fixes the all-ones direction, the sign groups {±I} ⊂ ℤ₂ⁿ ⊂ Bₙ, scalings ℝ× / ℝ×₊ and
translations along 1.
"""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array

from ._base import (
    block_count,
    blocks_label,
    check_block_group,
    diagonal_matrices,
    diagonal_part,
    AbstractCompactGroup,
    AbstractNoncompactGroup,
    Element,
    haar_orthogonal,
    helmert_basis,
    is_identity,
    is_orthogonal,
    is_signed_permutation,
    nonnegative_real,
    linear_element,
    log_uniform,
    permutation_matrices,
    random_permutations,
    random_signs,
    scalar_part,
    scalars_label,
    zero_shift,
)


class Trivial(AbstractCompactGroup):
    """The trivial group Iₙ = {identity}."""

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "I"
    name_template: ClassVar[str] = "I_{n}"
    finite: ClassVar[bool] = True
    field: ClassVar[str] = "any"

    def real_elements(self) -> bool:
        return True

    def _sample(self, key, num, dtype):
        del key
        return linear_element(jnp.broadcast_to(jnp.eye(self.n, dtype=dtype), (num, self.n, self.n)))

    def _contains(self, element, atol):
        return is_identity(element.matrix, atol) & zero_shift(element, atol)


class PointReflection(AbstractCompactGroup):
    """{±I}: the identity and the point reflection $x \\mapsto -x$ (ℤ₂ acting by a global
    sign). The symmetry of odd maps (equivariance) and of even ones (invariance) when
    nothing larger holds; uniform sampling."""

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "±I"
    name_template: ClassVar[str] = "±I_{n}"
    finite: ClassVar[bool] = True
    field: ClassVar[str] = "real"

    def _sample(self, key, num, dtype):
        return linear_element(diagonal_matrices(random_signs(key, num, 1, dtype), self.n, dtype))

    def _contains(self, element, atol):
        a, scalar = scalar_part(element.matrix, atol)
        return scalar & (jnp.abs(jnp.abs(a) - 1) <= atol) & zero_shift(element, atol)


class SignFlips(AbstractCompactGroup):
    """ℤ₂ⁿ: independent sign flips of the coordinates, $x \\mapsto Dx$ with D diagonal
    ±1 (the diagonal subgroup of Bₙ). Uniform sampling."""

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "ℤ₂"
    name_template: ClassVar[str] = "ℤ₂^{n}"
    finite: ClassVar[bool] = True
    field: ClassVar[str] = "real"

    def _sample(self, key, num, dtype):
        return linear_element(diagonal_matrices(random_signs(key, num, self.n, dtype), self.n,
                                                dtype))

    def _contains(self, element, atol):
        d, diagonal = diagonal_part(element.matrix, atol)
        unit = jnp.all(jnp.abs(jnp.abs(d) - 1) <= atol, axis=-1)
        return diagonal & unit & zero_shift(element, atol)


class Permutation(AbstractCompactGroup):
    """The symmetric group Sₙ of coordinate permutations (exact, uniform sampling)."""

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "S"
    name_template: ClassVar[str] = "S_{n}"
    finite: ClassVar[bool] = True
    field: ClassVar[str] = "any"

    def real_elements(self) -> bool:
        return True

    def _sample(self, key, num, dtype):
        return linear_element(permutation_matrices(random_permutations(key, num, self.n), dtype))

    def _contains(self, element, atol):
        m = element.matrix
        nonneg = nonnegative_real(m, atol)
        return is_signed_permutation(m, atol) & nonneg & zero_shift(element, atol)


class BlockPermutation(AbstractCompactGroup):
    """The permutations that map each contiguous block of `block` coordinates onto a
    block: any permutation within each block and any permutation of the blocks, the
    wreath product $S_c \\wr S_G$ ($c$ = `block`, $G = n/c$). It is what a map with
    statistics per block and the same rule for every block commutes with (GroupNorm's
    groups). One block gives Sₙ; blocks of one coordinate give Sₙ too.

    Sampled exactly uniformly (a uniform permutation of the blocks and an independent
    uniform permutation within each block).
    """

    n: int | None = eqx.field(static=True, default=None)
    block: int = eqx.field(static=True, default=1)
    symbol: ClassVar[str] = "S≀S"
    name_template: ClassVar[str] = "S_{block}≀S_{_blocks}"
    finite: ClassVar[bool] = True
    field: ClassVar[str] = "any"

    def real_elements(self) -> bool:
        return True

    def __check_init__(self):
        check_block_group(self)

    _blocks = property(blocks_label)

    def _sample(self, key, num, dtype):
        g, c = block_count(self), self.block
        kb, kw = jax.random.split(key)
        outer = random_permutations(kb, num, g)                       # (num, G)
        inner = random_permutations(kw, num * g, c).reshape(num, g, c)  # (num, G, c)
        # (P x) at block k, position i reads block outer_k, position inner_{k,i}
        source = outer[:, :, None] * c + inner
        return linear_element(permutation_matrices(source.reshape(num, self.n), dtype))

    def _contains(self, element, atol):
        m = element.matrix
        g, c = block_count(self), self.block
        blocks = jnp.abs(m).reshape(m.shape[:-2] + (g, c, g, c)).sum(axis=(-3, -1))
        # a block permutation's (G, G) block sums are c times a permutation matrix
        one_per_row = jnp.max(jnp.abs(jnp.max(blocks, axis=-1) - c), axis=-1) <= atol * c
        nonneg = nonnegative_real(m, atol)
        return (is_signed_permutation(m, atol) & nonneg & one_per_row
                & zero_shift(element, atol))


def _signed_permutations(key, num: int, n: int, dtype, even: bool) -> Array:
    """`num` uniform signed permutation matrices (with an even number of −1 if `even`)."""
    kp, ks = jax.random.split(key)
    p = permutation_matrices(random_permutations(kp, num, n), dtype)
    s = random_signs(ks, num, n, dtype)
    if even:
        # n-1 free uniform signs, the last one fixes the parity: uniform on even sign vectors.
        parity = jnp.prod(s[:, :-1], axis=-1, keepdims=True)
        s = jnp.concatenate([s[:, :-1], parity], axis=-1)
    return s[..., :, None] * p


class SignedPermutation(AbstractCompactGroup):
    """The hyperoctahedral group Bₙ = {±1}ⁿ ⋊ Sₙ of signed permutations."""

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "B"
    name_template: ClassVar[str] = "B_{n}"
    finite: ClassVar[bool] = True
    field: ClassVar[str] = "real"

    def _sample(self, key, num, dtype):
        return linear_element(_signed_permutations(key, num, self.n, dtype, even=False))

    def _contains(self, element, atol):
        return is_signed_permutation(element.matrix, atol) & zero_shift(element, atol)


class EvenSignedPermutation(AbstractCompactGroup):
    """Dₙ: signed permutations with an even number of sign flips (index 2 in Bₙ)."""

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "D"
    name_template: ClassVar[str] = "D_{n}"
    finite: ClassVar[bool] = True
    field: ClassVar[str] = "real"

    def _sample(self, key, num, dtype):
        return linear_element(_signed_permutations(key, num, self.n, dtype, even=True))

    def _contains(self, element, atol):
        m = element.matrix
        negatives = jnp.sum(m < -0.5, axis=(-2, -1))
        return is_signed_permutation(m, atol) & (negatives % 2 == 0) & zero_shift(element, atol)


class Orthogonal(AbstractCompactGroup):
    """The orthogonal group O(n), sampled exactly from its Haar measure."""

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "O"
    name_template: ClassVar[str] = "O({n})"
    finite: ClassVar[bool] = False
    field: ClassVar[str] = "real"

    def _sample(self, key, num, dtype):
        return linear_element(haar_orthogonal(key, num, self.n, dtype))

    def _contains(self, element, atol):
        return is_orthogonal(element.matrix, atol) & zero_shift(element, atol)



class SpecialOrthogonal(AbstractCompactGroup):
    """The rotation group SO(n): Haar O(n) with the first column's sign fixed so det = +1."""

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "SO"
    name_template: ClassVar[str] = "SO({n})"
    finite: ClassVar[bool] = False
    field: ClassVar[str] = "real"

    def _sample(self, key, num, dtype):
        return linear_element(haar_orthogonal(key, num, self.n, dtype, special=True))

    def _contains(self, element, atol):
        m = element.matrix
        return is_orthogonal(m, atol) & (jnp.linalg.det(m) > 0) & zero_shift(element, atol)


class GeneralLinear(AbstractNoncompactGroup):
    """The general linear group GL(n).

    Membership asks for a matrix invertible to the tolerance relative to its scale
    (smallest singular value above `atol` times the largest), so $aI$ belongs for every
    $a \\ne 0$ in every dimension.

    GL(n) is not compact, so there is no Haar probability measure: `sample` draws
    well-conditioned elements (**not Haar**) as $U \\operatorname{diag}(s) V$ with $U, V$
    Haar-orthogonal and $\\log s$ uniform on $[\\log \\tfrac12, \\log 2]$, so every sample has
    condition number at most 4 and both signs of the determinant occur.
    """

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "GL"
    name_template: ClassVar[str] = "GL({n})"

    def _sample(self, key, num, dtype):
        ku, kv, ks = jax.random.split(key, 3)
        u = haar_orthogonal(ku, num, self.n, dtype)
        v = haar_orthogonal(kv, num, self.n, dtype)
        s = log_uniform(ks, (num, self.n), dtype)
        return linear_element((u * s[..., None, :]) @ v)

    def _contains(self, element, atol):
        # Invertible to `atol` relative to its own scale: σ_min(M) > atol·σ_max(M), so
        # that membership does not depend on the scale of M (|det M| of aI is aⁿ).
        m = element.matrix
        finite = jnp.all(jnp.isfinite(m), axis=(-2, -1))
        s = jnp.linalg.svd(jnp.where(finite[..., None, None], m, 0), compute_uv=False)
        invertible = s[..., -1] > atol * s[..., 0]
        return finite & invertible & zero_shift(element, atol)


def ones_complement_basis(n: int, dtype) -> Array:
    """An orthonormal basis (n, n−1) of the hyperplane orthogonal to the all-ones vector
    (the Helmert basis)."""
    return jnp.asarray(helmert_basis(n), dtype)


class OrthogonalComplement(AbstractCompactGroup):
    """O(n−1) acting on the hyperplane orthogonal to the all-ones vector and fixing 1.

    These are the orthogonal matrices $R$ with $R\\mathbf 1 = \\mathbf 1$: the symmetry that
    survives mean-centring (LayerNorm). Sampled exactly: $R = \\tfrac1n \\mathbf 1\\mathbf 1^T
    + H Q H^T$ with $Q$ Haar on O(n−1) and $H$ the Helmert basis of $\\mathbf 1^\\perp$.
    """

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "O"
    name_template: ClassVar[str] = "O({n-1})"
    finite: ClassVar[bool] = False
    field: ClassVar[str] = "real"

    def __check_init__(self):
        if self.n is not None and self.n < 2:
            raise ValueError("OrthogonalComplement needs n >= 2 (O(n-1) with n-1 >= 1).")

    def _sample(self, key, num, dtype):
        n = self.n
        h = ones_complement_basis(n, dtype)
        q = haar_orthogonal(key, num, n - 1, dtype)
        r = jnp.full((n, n), 1.0 / n, dtype) + jnp.einsum("ia,nab,jb->nij", h, q, h)
        return linear_element(r)

    def _contains(self, element, atol):
        m = element.matrix
        ones = jnp.ones(m.shape[-1], m.dtype)
        fixes = jnp.max(jnp.abs(m @ ones - ones), axis=-1) <= atol
        return is_orthogonal(m, atol) & fixes & zero_shift(element, atol)



class Scaling(AbstractNoncompactGroup):
    """Global scalings $x \\mapsto a x$: ℝ× (`positive=False`) or ℝ×₊ (`positive=True`).

    Not compact: `sample` draws $\\log|a|$ uniform on $[\\log\\tfrac14, \\log 4]$ (and a
    uniform random sign for ℝ×).
    """

    n: int | None = eqx.field(static=True, default=None)
    positive: bool = eqx.field(static=True, default=False)
    symbol: ClassVar[str] = "ℝ×"
    name_template: ClassVar[str] = "{_scalars}"
    _scalars = property(scalars_label)

    def _scale(self, key, num, dtype):
        km, ks = jax.random.split(key)
        a = log_uniform(km, (num,), dtype, 0.25, 4.0)
        if not self.positive:
            a = a * random_signs(ks, num, 1, dtype)[:, 0]
        return a

    def scale_matrices(self, key, num: int, dtype) -> Array:
        """`num` matrices $aI$ with $a$ drawn as documented above."""
        return self._scale(key, num, dtype)[:, None, None] * jnp.eye(self.n, dtype=dtype)

    def is_scale_matrix(self, matrix, atol) -> Array:
        """Whether `matrix` is $aI$ with $a ≠ 0$ ($a > 0$ for ℝ×₊), to `atol`."""
        a, scalar = scalar_part(matrix, atol)
        return scalar & ((a > atol) if self.positive else (jnp.abs(a) > atol))

    def _sample(self, key, num, dtype):
        return linear_element(self.scale_matrices(key, num, dtype))

    def _contains(self, element, atol):
        return self.is_scale_matrix(element.matrix, atol) & zero_shift(element, atol)


class ConformalLinear(AbstractNoncompactGroup):
    """The linear conformal group CO(n) = ℝ×·O(n) of similarities $x \\mapsto aQx$ with
    $a > 0$ and $Q$ orthogonal (every nonzero scale, since $-I \\in O(n)$): the group
    generated by O(n) and the scalings ℝ×, the maps that preserve angles.

    Not compact: `sample` draws $Q$ exactly from the Haar measure of O(n) and,
    independently, $\\log a$ uniform on $[\\log\\tfrac14, \\log 4]$ (**not Haar**).
    """

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "ℝ×·O"
    name_template: ClassVar[str] = "ℝ×·O({n})"

    def _sample(self, key, num, dtype):
        kq, ka = jax.random.split(key)
        a = Scaling(self.n, positive=True)._scale(ka, num, dtype)
        return linear_element(a[:, None, None] * haar_orthogonal(kq, num, self.n, dtype))

    def _contains(self, element, atol):
        m = element.matrix
        scale = jnp.sqrt(jnp.sum(m[..., :, 0] * m[..., :, 0], axis=-1))
        unit = m / jnp.where(scale > atol, scale, 1)[..., None, None]
        return (scale > atol) & is_orthogonal(unit, atol) & zero_shift(element, atol)


class Translation(AbstractNoncompactGroup):
    """Translations along the all-ones direction, $x \\mapsto x + \\lambda\\mathbf 1$ (+λ1).

    Not compact: `sample` draws $\\lambda \\sim \\mathcal N(0, 1)$.
    """

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "+λ1"
    name_template: ClassVar[str] = "+λ1"

    def _sample(self, key, num, dtype):
        lam = jax.random.normal(key, (num, 1), dtype)
        eye = jnp.broadcast_to(jnp.eye(self.n, dtype=dtype), (num, self.n, self.n))
        return Element(eye, jnp.broadcast_to(lam, (num, self.n)))

    def _contains(self, element, atol):
        s = element.shift
        along_ones = jnp.max(jnp.abs(s - s[..., :1]), axis=-1) <= atol
        return is_identity(element.matrix, atol) & along_ones


class ScaleShift(AbstractNoncompactGroup):
    """The group generated by global scalings and translations along 1:
    $x \\mapsto a x + \\lambda \\mathbf 1$ ("ℝ×, +λ1"; ℝ×₊ when `positive=True`).

    Sampled as a scaling from [`Scaling`][taxdl.groups.Scaling] then a translation from
    [`Translation`][taxdl.groups.Translation] (not Haar: the group is not compact).
    """

    n: int | None = eqx.field(static=True, default=None)
    positive: bool = eqx.field(static=True, default=False)
    symbol: ClassVar[str] = "ℝ×,+λ1"
    name_template: ClassVar[str] = "{_scalars},+λ1"
    _scalars = property(scalars_label)

    def _sample(self, key, num, dtype):
        ka, kl = jax.random.split(key)
        m = Scaling(self.n, positive=self.positive).scale_matrices(ka, num, dtype)
        lam = jax.random.normal(kl, (num, 1), dtype)
        return Element(m, jnp.broadcast_to(lam, (num, self.n)))

    def _contains(self, element, atol):
        s = element.shift
        along = jnp.max(jnp.abs(s - s[..., :1]), axis=-1) <= atol
        scales = Scaling(self.n, positive=self.positive)
        return scales.is_scale_matrix(element.matrix, atol) & along

