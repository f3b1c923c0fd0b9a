"""Groups of affine maps of ℝⁿ: all translations T(n), the Euclidean group
E(n) = O(n) ⋉ ℝⁿ, the affine group Aff(n) = GL(n) ⋉ ℝⁿ, the dilations ℝ× ⋉ ℝⁿ (a
global scale and any translation, the maps a scalar gain with a vector bias γ y + β
absorbs), and the coordinate-wise groups (ℝ×)ⁿ (invertible diagonal matrices) and
(ℝ×)ⁿ ⋉ ℝⁿ (per-coordinate scale and shift, the maps a per-channel affine γ ⊙ y + β
absorbs).

None of them is compact (the translations are not), so `sample` follows the distribution
documented on each class (**not Haar**): the translation part is standard Gaussian, the
linear part is Haar-orthogonal for E(n) and the well-conditioned GL(n) draw for Aff(n).
Each group L ⋉ ℝⁿ but T(n) is an `AbstractTranslationExtension`: it names its linear
group L, which supplies the draw and the membership test of the matrix part.

Hierarchy (registered in `_hierarchy`): +λ1 ⊂ T(n) ⊂ E(n) ⊂ Aff(n), O(n) ⊂ E(n),
GL(n) ⊂ Aff(n); ℝ×₊ ⊂ (ℝ×₊)ⁿ ⊂ (ℝ×)ⁿ ⊂ Sₙ⋉(ℝ×)ⁿ, ℝ× ⊂ (ℝ×)ⁿ,
(ℝ×₊)ⁿ ⊂ Sₙ⋉(ℝ×₊)ⁿ, and each diagonal group ⊂ its ⋉ ℝⁿ; T(n), (ℝ×₊, +λ1) ⊂
ℝ×₊ ⋉ ℝⁿ ⊂ ℝ× ⋉ ℝⁿ ⊃ (ℝ×, +λ1); ℝ×₊ ⋉ ℝⁿ ⊂ (ℝ×₊)ⁿ ⋉ ℝⁿ ⊂ (ℝ×)ⁿ ⋉ ℝⁿ ⊃ ℝ× ⋉ ℝⁿ;
(ℝ×)ⁿ ⋉ ℝⁿ ⊂ Sₙ⋉(ℝ×)ⁿ⋉ℝⁿ ⊂ Aff(n) (the monomial affine maps, in `_extra`).
"""

import abc
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool

from ._base import (
    _check_dimension,
    block_count,
    blocks_label,
    check_block,
    diagonal_matrices,
    diagonal_part,
    AbstractGroup,
    AbstractNoncompactGroup,
    Element,
    is_identity,
    linear_element,
    log_uniform,
    random_signs,
    scalars_label,
    zero_shift,
)
from ._real import GeneralLinear, Orthogonal, Scaling


def _finite_shift(element: Element) -> Bool[Array, "*batch"]:
    return jnp.all(jnp.isfinite(element.shift), axis=-1)


def _gaussian_shift(key, num: int, n: int, dtype) -> Array:
    return jax.random.normal(key, (num, n), dtype)


class AbstractTranslationExtension(AbstractNoncompactGroup):
    """A group $L ⋉ ℝ^n$ of the maps $x \\mapsto Mx + t$ with $M$ in a linear group $L$
    (`linear_part()`) and any translation $t$.

    Not compact: `sample` draws $M$ as $L$ does and, independently,
    $t \\sim \\mathcal N(0, I_n)$ (**not Haar**); membership is membership of the
    matrix in $L$ with a finite shift.
    """

    @abc.abstractmethod
    def linear_part(self) -> AbstractGroup:
        """$L$, the largest subgroup without translations."""

    def _sample(self, key, num, dtype):
        kl, kt = jax.random.split(key)
        m = self.linear_part()._sample(kl, num, dtype).matrix
        return Element(m, _gaussian_shift(kt, num, self.n, dtype))

    def _contains(self, element, atol):
        linear = Element(element.matrix, jnp.zeros_like(element.shift))
        return self.linear_part()._contains(linear, atol) & _finite_shift(element)


class Translations(AbstractNoncompactGroup):
    """All translations of ℝⁿ, $x \\mapsto x + t$ with $t \\in \\mathbb R^n$ (the group
    T(n) ≅ ℝⁿ; [`Translation`][taxdl.groups.Translation] is its subgroup along 1).

    Not compact: `sample` draws $t \\sim \\mathcal N(0, I_n)$ (**not Haar**).
    """

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "T"
    name_template: ClassVar[str] = "T({n})"

    def _sample(self, key, num, dtype):
        eye = jnp.broadcast_to(jnp.eye(self.n, dtype=dtype), (num, self.n, self.n))
        return Element(eye, _gaussian_shift(key, num, self.n, dtype))

    def _contains(self, element, atol):
        return is_identity(element.matrix, atol) & _finite_shift(element)


class Euclidean(AbstractTranslationExtension):
    """The Euclidean group E(n) = O(n) ⋉ ℝⁿ of isometries of ℝⁿ, $x \\mapsto Qx + t$
    with $Q$ orthogonal.

    Not compact (the translations are not): `sample` draws $Q$ exactly from the Haar
    measure of O(n) and, independently, $t \\sim \\mathcal N(0, I_n)$ (**not Haar** as a
    whole).
    """

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "E"
    name_template: ClassVar[str] = "E({n})"

    def linear_part(self):
        return Orthogonal(self.n)


class Affine(AbstractTranslationExtension):
    """The affine group Aff(n) = GL(n) ⋉ ℝⁿ, $x \\mapsto Ax + t$ with $A$ invertible.

    Not compact: `sample` draws $A$ from the well-conditioned sampler of
    [`GeneralLinear`][taxdl.groups.GeneralLinear] (condition number at most 4, both signs
    of the determinant) and, independently, $t \\sim \\mathcal N(0, I_n)$ (**not Haar**).
    """

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "Aff"
    name_template: ClassVar[str] = "Aff({n})"

    def linear_part(self):
        return GeneralLinear(self.n)


class ScaleTranslation(AbstractTranslationExtension):
    """The dilations ℝ× ⋉ ℝⁿ, $x \\mapsto a x + t$ with a scalar $a ≠ 0$ ($a > 0$ with
    `positive=True`: ℝ×₊ ⋉ ℝⁿ) and any $t \\in \\mathbb R^n$: the group generated by
    the global scalings and all translations. A scalar gain with a vector bias
    $γ y + \\vec β$ absorbs them on its output side ($a(γ y + \\vec β) + t = (aγ) y +
    (a\\vec β + t)$), e.g. Chi-norm's and the simple isotropic layer-norm's.

    Not compact: `sample` draws $a$ as [`Scaling`][taxdl.groups.Scaling] does and,
    independently, $t \\sim \\mathcal N(0, I_n)$ (**not Haar**).
    """

    n: int | None = eqx.field(static=True, default=None)
    positive: bool = eqx.field(static=True, default=False)
    symbol: ClassVar[str] = "ℝ×⋉ℝⁿ"
    name_template: ClassVar[str] = "{_scalars}⋉ℝ^{n}"
    _scalars = property(scalars_label)

    def linear_part(self):
        return Scaling(self.n, positive=self.positive)


def _random_diagonals(key, num: int, n: int, dtype, positive: bool) -> Array:
    ks, kd = jax.random.split(key)
    d = log_uniform(kd, (num, n), dtype)
    if not positive:
        d = random_signs(ks, num, n, dtype) * d
    return diagonal_matrices(d, n, dtype)


def _invertible_diagonal(m, atol, positive: bool) -> Bool[Array, "*batch"]:
    diag, diagonal = diagonal_part(m, atol)
    entries = diag if positive else jnp.abs(diag)
    return diagonal & jnp.all(entries > atol, axis=-1)


class Diagonal(AbstractNoncompactGroup):
    """The invertible diagonal matrices (ℝ×)ⁿ (`positive=False`) or the positive ones
    (ℝ×₊)ⁿ (`positive=True`), $x \\mapsto Dx$: an independent scaling of every
    coordinate. A per-coordinate gain γ ⊙ y absorbs them on its output side
    ($D(γ ⊙ y) = (Dγ) ⊙ y$); per-coordinate standardisation removes the positive ones.

    Not compact: `sample` draws independent magnitudes with $\\log|d_i|$ uniform on
    $[\\log\\tfrac12, \\log 2]$ and, for (ℝ×)ⁿ, independent uniform signs (**not Haar**).
    """

    n: int | None = eqx.field(static=True, default=None)
    positive: bool = eqx.field(static=True, default=False)
    symbol: ClassVar[str] = "ℝ×ⁿ"
    name_template: ClassVar[str] = "({_scalars})^{n}"
    _scalars = property(scalars_label)

    def _sample(self, key, num, dtype):
        return linear_element(_random_diagonals(key, num, self.n, dtype, self.positive))

    def _contains(self, element, atol):
        return (_invertible_diagonal(element.matrix, atol, self.positive)
                & zero_shift(element, atol))


class DiagonalAffine(AbstractTranslationExtension):
    """Per-coordinate affine maps (ℝ×)ⁿ ⋉ ℝⁿ, $x \\mapsto Dx + t$ with $D$ an invertible
    diagonal (positive with `positive=True`: (ℝ×₊)ⁿ ⋉ ℝⁿ): the output maps a per-channel
    affine γ ⊙ y + β absorbs ($D(γ ⊙ y + β) + t = (Dγ) ⊙ y + (Dβ + t)$), e.g. LayerNorm's
    and BatchNorm's; per-channel standardisation removes the positive ones.

    Not compact: `sample` draws $D$ as [`Diagonal`][taxdl.groups.Diagonal] does and,
    independently, $t \\sim \\mathcal N(0, I_n)$ (**not Haar**).
    """

    n: int | None = eqx.field(static=True, default=None)
    positive: bool = eqx.field(static=True, default=False)
    symbol: ClassVar[str] = "ℝ×ⁿ⋉ℝⁿ"
    name_template: ClassVar[str] = "({_scalars})^{n}⋉ℝ^{n}"
    _scalars = property(scalars_label)

    def linear_part(self):
        return Diagonal(self.n, positive=self.positive)


class BlockScaleShift(AbstractNoncompactGroup):
    """Per-block scale and shift: the coordinates split into contiguous blocks of `block`
    coordinates and block $k$ maps as $x_k \\mapsto a_k x_k + λ_k \\mathbf 1$, the maps
    that statistics computed per block remove (GroupNorm's groups, a mean and a scale
    each). `positive=True` keeps $a_k > 0$; `scales=False` keeps $a_k = 1$ (a shift per
    block, "+λ1 per block"). One block of n gives (ℝ×, +λ1) / +λ1
    ([`ScaleShift`][taxdl.groups.ScaleShift], [`Translation`][taxdl.groups.Translation]);
    blocks of one coordinate give (ℝ×)ⁿ ⋉ ℝⁿ / T(n).

    Not compact: `sample` draws each $\\log|a_k|$ uniform on $[\\log\\tfrac14, \\log 4]$
    (with a uniform random sign unless `positive`) and each $λ_k \\sim \\mathcal N(0, 1)$
    (**not Haar**).
    """

    n: int | None = eqx.field(static=True, default=None)
    block: int = eqx.field(static=True, default=1)
    positive: bool = eqx.field(static=True, default=False)
    scales: bool = eqx.field(static=True, default=True)
    symbol: ClassVar[str] = "(ℝ×,+λ1)ᴳ"
    name_template: ClassVar[str] = "{_label}"

    def __check_init__(self):
        check_block(self.block, "BlockScaleShift")
        if self.n is not None:
            _check_dimension(self.n, "BlockScaleShift")
            block_count(self)

    @property
    def _label(self) -> str:
        inner = f"{scalars_label(self)},+λ1" if self.scales else "+λ1"
        return f"({inner})^{blocks_label(self)}"

    def _sample(self, key, num, dtype):
        g = block_count(self)
        ka, ks, kl = jax.random.split(key, 3)
        a = jnp.ones((num, g), dtype)
        if self.scales:
            a = log_uniform(ka, (num, g), dtype, 0.25, 4.0)
            if not self.positive:
                a = a * random_signs(ks, num, g, dtype)
        lam = jax.random.normal(kl, (num, g), dtype)
        return Element(diagonal_matrices(jnp.repeat(a, self.block, axis=-1), self.n, dtype),
                       jnp.repeat(lam, self.block, axis=-1))

    def _contains(self, element, atol):
        g = block_count(self)
        d, diagonal = diagonal_part(element.matrix, atol)
        s = element.shift
        per_block = lambda v: v.reshape(v.shape[:-1] + (g, self.block))  # noqa: E731
        db, sb = per_block(d), per_block(s)
        constant = ((jnp.max(jnp.abs(db - db[..., :1]), axis=(-2, -1)) <= atol)
                    & (jnp.max(jnp.abs(sb - sb[..., :1]), axis=(-2, -1)) <= atol))
        if not self.scales:
            scale_ok = jnp.max(jnp.abs(d - 1), axis=-1) <= atol
        elif self.positive:
            scale_ok = jnp.all(d > atol, axis=-1)
        else:
            scale_ok = jnp.all(jnp.abs(d) > atol, axis=-1)
        return diagonal & constant & scale_ok & _finite_shift(element)
