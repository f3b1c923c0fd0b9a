"""Groups acting on complex space ℂⁿ, and SU(2) with its standard and adjoint
representations (a mismatched pair used by the Bloch/Hopf activation)."""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp

from ._base import (
    AbstractCompactGroup,
    Element,
    complex_work_dtype,
    haar_unitary,
    is_orthogonal,
    linear_element,
    permutation_matrices,
    random_permutations,
    random_phases,
    unit_monomial,
    work_dtype,
    zero_shift,
)


class Unitary(AbstractCompactGroup):
    """The unitary group U(n) on ℂⁿ, sampled exactly from its Haar measure."""

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "U"
    name_template: ClassVar[str] = "U({n})"
    finite: ClassVar[bool] = False
    field: ClassVar[str] = "complex"

    def _sample(self, key, num, dtype):
        return linear_element(haar_unitary(key, num, self.n, dtype))


    def _contains(self, element, atol):
        return is_orthogonal(element.matrix, atol) & zero_shift(element, atol)


class PermutationPhase(AbstractCompactGroup):
    """Sₙ × U(1) on ℂⁿ: coordinate permutations times a global phase $e^{i\\varphi}$
    (exact Haar: uniform permutation, uniform phase)."""

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "S×U(1)"
    name_template: ClassVar[str] = "S_{n}×U(1)"
    finite: ClassVar[bool] = False
    field: ClassVar[str] = "complex"

    def _sample(self, key, num, dtype):
        kp, kf = jax.random.split(key)
        p = permutation_matrices(random_permutations(kp, num, self.n), complex_work_dtype(dtype))
        return linear_element(random_phases(kf, (num,), dtype)[:, None, None] * p)

    def _contains(self, element, atol):
        m = element.matrix
        near_one, monomial = unit_monomial(m, atol)
        # all non-zero entries share one phase
        phase = jnp.sum(jnp.where(near_one, m, 0), axis=(-2, -1)) / m.shape[-1]
        same = jnp.all(jnp.where(near_one, jnp.abs(m - phase[..., None, None]) <= 4 * atol, True),
                       axis=(-2, -1))
        return monomial & same & zero_shift(element, atol)


PAULI = (
    ((0, 1), (1, 0)),
    ((0, -1j), (1j, 0)),
    ((1, 0), (0, -1)),
)


def pauli(dtype=jnp.complex64):
    """The Pauli matrices σ₁, σ₂, σ₃ stacked, shape (3, 2, 2)."""
    return jnp.asarray(PAULI, dtype=dtype)


def su2_adjoint(u):
    """The SO(3) matrix of U ∈ SU(2): $R_{ij} = \\tfrac12 \\operatorname{tr}(σ_i U σ_j U^†)$."""
    s = pauli(u.dtype)
    r = jnp.einsum("iab,...bc,jcd,...ad->...ij", s, u, s, jnp.conj(u))
    return 0.5 * jnp.real(r)


class SU2(AbstractCompactGroup):
    """SU(2), elements $U$ sampled exactly from Haar (uniform unit quaternions).

    `rep="standard"` acts on ℂ² by $U$; `rep="adjoint"` acts on ℝ³ by the rotation
    $R(U)_{ij} = \\tfrac12\\operatorname{tr}(σ_i U σ_j U^†)$ (isotropic paper §5.2.1). Both
    representations sample the *same* underlying $U$ from a key, so `sample` returns
    elements in the standard form and `represent` maps them to a representation; this is
    how the checker pairs input and output representations of a mismatched primitive.
    """

    n: int | None = eqx.field(static=True, default=None)
    rep: str = eqx.field(static=True, default="standard")
    symbol: ClassVar[str] = "SU"
    name_template: ClassVar[str] = "SU(2){_image}"
    finite: ClassVar[bool] = False
    field: ClassVar[str] = "any"

    def __check_init__(self):
        if self.rep not in ("standard", "adjoint"):
            raise ValueError(f"SU2: `rep` must be 'standard' or 'adjoint', got {self.rep!r}.")
        want = 2 if self.rep == "standard" else 3
        if self.n is not None and self.n != want:
            raise ValueError(
                f"SU2 with rep={self.rep!r} acts on dimension {want}; got n={self.n!r}."
            )

    _image = property(lambda self: "" if self.rep == "standard" else "→SO(3)")

    def real_elements(self) -> bool:
        return self.rep == "adjoint"

    def _sample(self, key, num, dtype):
        cdtype = complex_work_dtype(dtype)
        q = jax.random.normal(key, (num, 4), work_dtype(dtype))
        q = q / jnp.linalg.norm(q, axis=-1, keepdims=True)
        a = jax.lax.complex(q[:, 0], q[:, 1])
        b = jax.lax.complex(q[:, 2], q[:, 3])
        u = jnp.stack([jnp.stack([a, -jnp.conj(b)], -1), jnp.stack([b, jnp.conj(a)], -1)], -2)
        return self.represent(linear_element(u.astype(cdtype)), dtype)

    def represent(self, element: Element, dtype=jnp.float32) -> Element:
        """Map a standard-form element (2×2 U) to this group's representation."""
        if self.rep == "standard" or element.matrix.shape[-1] == 3:
            return element
        r = su2_adjoint(element.matrix)
        return linear_element(r.astype(dtype))

    def _contains(self, element, atol):
        m = element.matrix
        if self.rep == "adjoint":
            return is_orthogonal(m, atol) & (jnp.linalg.det(m) > 0) & zero_shift(element, atol)
        det = jnp.linalg.det(m)
        return is_orthogonal(m, atol) & (jnp.abs(det - 1) <= atol) & zero_shift(element, atol)
