"""Groups of affine maps of ℝⁿ: all translations T(n), the Euclidean group
E(n) = O(n) ⋉ ℝⁿ, the affine group Aff(n) = GL(n) ⋉ ℝⁿ, and the coordinate-wise
groups (ℝ×)ⁿ (invertible diagonal matrices) and (ℝ×)ⁿ ⋉ ℝⁿ (per-coordinate scale and
shift, the maps a per-channel affine γ ⊙ y + β absorbs).

None of them is compact (the translations are not), so `sample` follows the distribution
documented on each class (**not Haar**): the translation part is standard Gaussian, the
linear part is Haar-orthogonal for E(n) and the well-conditioned GL(n) draw for Aff(n).

Hierarchy (registered in `_hierarchy`): +λ1 ⊂ T(n) ⊂ E(n) ⊂ Aff(n), O(n) ⊂ E(n),
GL(n) ⊂ Aff(n); ℝ×₊ ⊂ (ℝ×₊)ⁿ ⊂ (ℝ×)ⁿ ⊂ Sₙ⋉(ℝ×)ⁿ, ℝ× ⊂ (ℝ×)ⁿ,
(ℝ×₊)ⁿ ⊂ Sₙ⋉(ℝ×₊)ⁿ, and each diagonal group ⊂ its ⋉ ℝⁿ; T(n), (ℝ×₊, +λ1) ⊂
(ℝ×₊)ⁿ ⋉ ℝⁿ ⊂ (ℝ×)ⁿ ⋉ ℝⁿ ⊃ (ℝ×, +λ1), and (ℝ×)ⁿ ⋉ ℝⁿ ⊂ Aff(n).
"""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool

from ._base import (
    AbstractNoncompactGroup,
    Element,
    haar_orthogonal,
    is_identity,
    is_orthogonal,
    linear_element,
    log_uniform,
    random_signs,
    scalars_label,
    zero_shift,
)
from ._real import GeneralLinear


def _finite_shift(element: Element) -> Bool[Array, "*batch"]:
    return jnp.all(jnp.isfinite(element.shift), axis=-1)


def _gaussian_shift(key, num: int, n: int, dtype) -> Array:
    return jax.random.normal(key, (num, n), dtype)


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


class Euclidean(AbstractNoncompactGroup):
    """The Euclidean group E(n) = O(n) ⋉ ℝⁿ of isometries of ℝⁿ, $x \\mapsto Qx + t$
    with $Q$ orthogonal.

    Not compact (the translations are not): `sample` draws $Q$ exactly from the Haar
    measure of O(n) and, independently, $t \\sim \\mathcal N(0, I_n)$ (**not Haar** as a
    whole).
    """

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "E"
    name_template: ClassVar[str] = "E({n})"

    def _sample(self, key, num, dtype):
        kq, kt = jax.random.split(key)
        q = haar_orthogonal(kq, num, self.n, dtype)
        return Element(q, _gaussian_shift(kt, num, self.n, dtype))

    def _contains(self, element, atol):
        return is_orthogonal(element.matrix, atol) & _finite_shift(element)


class Affine(AbstractNoncompactGroup):
    """The affine group Aff(n) = GL(n) ⋉ ℝⁿ, $x \\mapsto Ax + t$ with $A$ invertible.

    Not compact: `sample` draws $A$ from the well-conditioned sampler of
    [`GeneralLinear`][taxdl.groups.GeneralLinear] (condition number at most 4, both signs
    of the determinant) and, independently, $t \\sim \\mathcal N(0, I_n)$ (**not Haar**).
    """

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "Aff"
    name_template: ClassVar[str] = "Aff({n})"

    def _sample(self, key, num, dtype):
        ka, kt = jax.random.split(key)
        a = GeneralLinear(self.n)._sample(ka, num, dtype).matrix
        return Element(a, _gaussian_shift(kt, num, self.n, dtype))

    def _contains(self, element, atol):
        m = element.matrix
        finite = jnp.all(jnp.isfinite(m), axis=(-2, -1))
        return finite & (jnp.abs(jnp.linalg.det(m)) > atol) & _finite_shift(element)


def _random_diagonals(key, num: int, n: int, dtype, positive: bool) -> Array:
    ks, kd = jax.random.split(key)
    d = log_uniform(kd, (num, n), dtype)
    if not positive:
        d = random_signs(ks, num, n, dtype) * d
    return d[:, :, None] * jnp.eye(n, dtype=dtype)


def _invertible_diagonal(m, atol, positive: bool) -> Bool[Array, "*batch"]:
    diag = jnp.diagonal(m, axis1=-2, axis2=-1)
    off = m - diag[..., :, None] * jnp.eye(m.shape[-1], dtype=m.dtype)
    entries = diag if positive else jnp.abs(diag)
    return (jnp.max(jnp.abs(off), axis=(-2, -1)) <= atol) & jnp.all(entries > atol, axis=-1)


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


class DiagonalAffine(AbstractNoncompactGroup):
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

    def _sample(self, key, num, dtype):
        kd, kt = jax.random.split(key)
        return Element(_random_diagonals(kd, num, self.n, dtype, self.positive),
                       _gaussian_shift(kt, num, self.n, dtype))

    def _contains(self, element, atol):
        return (_invertible_diagonal(element.matrix, atol, self.positive)
                & _finite_shift(element))
