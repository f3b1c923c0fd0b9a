"""Activations for other fields and representations (isotropic paper §5.1–5.2):
the U(n) form (eq 28), the Sₙ×U(1) form (eq 29), the Bloch/Hopf map ℂ² → ℝ³ (eq 41) and
the Lorentz pseudo-norm form for O(1, n−1)."""

from collections.abc import Callable
from typing import ClassVar

import equinox as eqx
from jax import named_scope
from jaxtyping import Array, Complex, Float

from ...groups import SU2, Lorentz, MonomialUnitary, Phase, Unitary
from ...taxonomy import (
    AbstractActivation,
    Cell,
    DimensionRequired,
    Signature,
    Taxonomy,
    register,
    signature,
)
from . import _functional as F
from ._common import fixed, static_callable


@register(family="activation", formula="σ(x†x) x/√(x†x)", reference="isotropic paper eq 28")
class UnitaryIsotropic(AbstractActivation):
    """U(n)-equivariant activation on ℂⁿ (isotropic paper eq 28):
    $f(x) = σ(x^\\dagger x)\\,x/\\sqrt{x^\\dagger x}$, $f(0) = 0$.

    **Arguments:**

    - `sigma`: function of $s = x^\\dagger x$, or None for $σ(s) = \\tanh\\sqrt s$
      (complex isotropic tanh, Jacobian I at the origin).

    **Symmetry:** algebraically U(n)-equivariant; nothing larger among ℂ-linear maps.
    """

    sigma: Callable | None = eqx.field(static=True, default=None)
    taxonomy: ClassVar[Taxonomy] = fixed(Unitary())

    def __check_init__(self):
        static_callable(self.sigma, "sigma", "UnitaryIsotropic", optional=True,
                        functional="unitary_isotropic")

    @named_scope("taxdl.UnitaryIsotropic")
    def __call__(self, x: Complex[Array, "*b n"], *, key=None) -> Complex[Array, "*b n"]:
        del key
        return F.unitary_isotropic(x, self.sigma)


@register(family="activation", formula="Σᵢ σ(|xᵢ|²) xᵢ/|xᵢ| êᵢ",
          reference="isotropic paper eq 29")
class PhaseElementwise(AbstractActivation):
    """The Sₙ×U(1)-form on ℂⁿ (isotropic paper eq 29):
    $f(x) = \\sum_i σ(|x_i|^2)\\,\\frac{x_i}{|x_i|}\\hat e_i$ (0 where $x_i = 0$).

    **Arguments:**

    - `sigma`: function of $|x_i|^2$, or None for $σ(s) = \\tanh\\sqrt s$.

    **Symmetry:** algebraically equivariant under U(1)ⁿ ⋊ Sₙ: each coordinate keeps its
    own phase, so independent per-coordinate phases commute with it, which is larger than
    the Sₙ × U(1) (one global phase) the paper names; not U(n).
    """

    sigma: Callable | None = eqx.field(static=True, default=None)
    taxonomy: ClassVar[Taxonomy] = fixed(
        MonomialUnitary(), note="contains the paper's Sₙ×U(1): per-coordinate phases commute")

    def __check_init__(self):
        static_callable(self.sigma, "sigma", "PhaseElementwise", optional=True,
                        functional="phase_elementwise")

    @named_scope("taxdl.PhaseElementwise")
    def __call__(self, x: Complex[Array, "*b n"], *, key=None) -> Complex[Array, "*b n"]:
        del key
        return F.phase_elementwise(x, self.sigma)


@register(family="activation", name="Bloch", formula="σ(x†x) n(x/‖x‖), n(ψ) = ψ†σ⃗ψ/ψ†ψ",
          reference="isotropic paper eq 41")
class Bloch(AbstractActivation):
    """Bloch/Hopf activation ℂ² → ℝ³ (isotropic paper eq 41):
    $f(x) = σ(x^\\dagger x)\\,n(x/\\|x\\|)$, $n(ψ) = ψ^\\dagger\\vec σψ/ψ^\\dagger ψ$ with the
    Pauli matrices $\\vec σ$, and $f(0) = 0$.

    **Arguments:**

    - `sigma`: function of $s = x^\\dagger x$ with σ(0) = 0, or None for tanh (then
      $f(x) = \\frac{\\tanh s}{s}x^\\dagger\\vec σ x$, smooth at the origin).

    **Symmetry:** a mismatched representation: $f(Ux) = R(U) f(x)$ for $U \\in SU(2)$
    with $R_{ij}(U) = \\tfrac12\\operatorname{tr}(σ_i U σ_j U^\\dagger) \\in SO(3)$; and
    invariant under global phases U(1) (the Hopf fibre), so together U(2) → SO(3).
    """

    sigma: Callable | None = eqx.field(static=True, default=None)
    taxonomy: ClassVar[Taxonomy] = fixed(
        Cell(SU2(), out=SU2(rep="adjoint")), invariant=Phase(),
        note="SU(2) on ℂ² → SO(3) on ℝ³; global phases are invariances")

    def __check_init__(self):
        static_callable(self.sigma, "sigma", "Bloch", optional=True, functional="bloch")

    @named_scope("taxdl.Bloch")
    def __call__(self, x: Complex[Array, "*b 2"], *, key=None) -> Float[Array, "*b 3"]:
        del key
        return F.bloch(x, self.sigma)


@register(family="activation", formula="φ(xᵀηx) x", reference="isotropic paper §5.2")
class LorentzIsotropic(AbstractActivation):
    """Lorentz pseudo-norm activation (isotropic paper §5.2): $f(x) = φ(s)\\,x$ with
    $s = x^T η x$, η = diag(1, −1, …, −1): the paper's $f(x_β g^{βγ}x_γ)\\hat x_α$ with the
    pseudo-norm unit vector $\\hat x = x/\\sqrt{|s|}$ and $f(s) = φ(s)\\sqrt{|s|}$, written
    with φ so it stays smooth across the light cone.

    **Arguments:**

    - `phi`: scalar profile of $s$, or None for $φ(s) = \\tanh(s)/s$ (φ(0) = 1).

    **Symmetry:** algebraically O(1, n−1)-equivariant ($s$ is invariant); nothing larger.
    """

    phi: Callable | None = eqx.field(static=True, default=None)
    taxonomy: ClassVar[Taxonomy] = fixed(Lorentz())

    def __check_init__(self):
        static_callable(self.phi, "phi", "LorentzIsotropic", optional=True)

    @named_scope("taxdl.LorentzIsotropic")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.lorentz_isotropic(x, self.phi)


@signature.register
def _(prim: UnitaryIsotropic, n=None) -> Signature:
    if n is None:
        raise DimensionRequired("UnitaryIsotropic")
    return Signature(((n,),), field="complex")


@signature.register
def _(prim: PhaseElementwise, n=None) -> Signature:
    if n is None:
        raise DimensionRequired("PhaseElementwise")
    return Signature(((n,),), field="complex")


@signature.register
def _(prim: Bloch, n=None) -> Signature:
    return Signature(((2,),), field="complex")
