"""Elementwise (anisotropic) activations, audited for their true maximal groups.

An elementwise map $f(x) = \\sum_i h(x\\cdot\\hat e_i)\\hat e_i$ always commutes with
coordinate permutations (Sₙ). It gains sign flips (Bₙ) exactly when $h$ is odd, and
positive per-coordinate scalings (Sₙ ⋉ (ℝ×₊)ⁿ) exactly when $h$ is positively
homogeneous (Fu & Cohen, Corollary 4.6). Each declaration below is confirmed by
`taxdl.testing.check`, including a failed search under every immediate supergroup.
"""

from typing import ClassVar

import equinox as eqx
from jax import named_scope
from jaxtyping import Array, Float

from ...groups import Permutation, PositiveMonomial, SignedPermutation
from ...taxonomy import AbstractActivation, Taxonomy, register
from ..._types import check_bool, check_real
from . import _functional as F
from ._common import fixed

_S = fixed(Permutation())
_B = fixed(SignedPermutation())
_PM = fixed(PositiveMonomial(), note="positively homogeneous: Sₙ with positive diagonal "
                                     "scalings (Fu & Cohen Cor. 4.6)")


@register(family="activation", formula="Σᵢ max(x·êᵢ, 0) êᵢ",
          reference="CoLU paper §2, Cor. 4.6")
class ReLU(AbstractActivation):
    """Elementwise ReLU, $f(x)_i = \\max(x_i, 0)$.

    **Symmetry:** algebraically equivariant under Sₙ ⋉ (ℝ×₊)ⁿ (permutations with positive
    per-coordinate scalings: $\\mathrm{ReLU}(PDx) = PD\\,\\mathrm{ReLU}(x)$, Fu & Cohen
    Corollary 4.6 with the diagonal positive); no sign flips, no rotations.
    """

    taxonomy: ClassVar[Taxonomy] = _PM

    @named_scope("taxdl.ReLU")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.relu(x)


@register(family="activation", formula="Σᵢ (x·êᵢ if ≥ 0 else a x·êᵢ) êᵢ",
          example=lambda: LeakyReLU(0.1), reference="CoLU paper §2")
class LeakyReLU(AbstractActivation):
    """Elementwise leaky ReLU, $f(x)_i = x_i$ for $x_i \\ge 0$, $a x_i$ otherwise.

    **Arguments:**

    - `negative_slope`: $a \\in [0, 1)$ (default 0.01).

    **Symmetry:** algebraically Sₙ ⋉ (ℝ×₊)ⁿ-equivariant (positively homogeneous, like
    ReLU); for $a \\ne -1$ sign flips do not commute with it.
    """

    negative_slope: float = eqx.field(static=True, default=0.01)
    taxonomy: ClassVar[Taxonomy] = _PM

    def __check_init__(self):
        check_real(self.negative_slope, "negative_slope", low=0, high=1, high_open=True)

    @named_scope("taxdl.LeakyReLU")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.leaky_relu(x, self.negative_slope)


@register(family="activation", formula="Σᵢ elu(x·êᵢ) êᵢ", reference="CoLU paper §2")
class ELU(AbstractActivation):
    """Elementwise ELU, $f(x)_i = x_i$ for $x_i > 0$, $α(e^{x_i} - 1)$ otherwise.

    **Arguments:**

    - `alpha`: α > 0 (default 1).

    **Symmetry:** algebraically Sₙ-equivariant only (neither odd nor homogeneous).
    """

    alpha: float = eqx.field(static=True, default=1.0)
    taxonomy: ClassVar[Taxonomy] = _S

    def __check_init__(self):
        check_real(self.alpha, "alpha", low=0, low_open=True)

    @named_scope("taxdl.ELU")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.elu(x, self.alpha)


@register(family="activation", formula="Σᵢ (x·êᵢ) Φ(x·êᵢ) êᵢ", reference="CoLU paper §2")
class GELU(AbstractActivation):
    """Elementwise GELU, $f(x)_i = x_i Φ(x_i)$ (tanh approximation if `approximate`).

    **Symmetry:** algebraically Sₙ-equivariant only.
    """

    approximate: bool = eqx.field(static=True, default=False)
    taxonomy: ClassVar[Taxonomy] = _S

    def __check_init__(self):
        check_bool(self.approximate, "approximate", who="GELU")

    @named_scope("taxdl.GELU")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.gelu(x, self.approximate)


@register(family="activation", formula="Σᵢ (x·êᵢ) sigmoid(x·êᵢ) êᵢ",
          reference="CoLU paper §3.1")
class SiLU(AbstractActivation):
    """Elementwise SiLU, $f(x)_i = x_i\\,\\mathrm{sigmoid}(x_i)$.

    **Symmetry:** algebraically Sₙ-equivariant only.
    """

    taxonomy: ClassVar[Taxonomy] = _S

    @named_scope("taxdl.SiLU")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.silu(x)


@register(family="activation", formula="Σᵢ log(1 + exp(x·êᵢ)) êᵢ")
class Softplus(AbstractActivation):
    """Elementwise softplus, $f(x)_i = \\log(1 + e^{x_i})$.

    **Symmetry:** algebraically Sₙ-equivariant only.
    """

    taxonomy: ClassVar[Taxonomy] = _S

    @named_scope("taxdl.Softplus")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.softplus(x)


@register(family="activation", formula="Σᵢ sigmoid(x·êᵢ) êᵢ")
class Sigmoid(AbstractActivation):
    """Elementwise logistic sigmoid, $f(x)_i = 1/(1 + e^{-x_i})$.

    **Symmetry:** algebraically Sₙ-equivariant only: $\\mathrm{sigmoid}(-t) =
    1 - \\mathrm{sigmoid}(t)$ pairs a sign flip of the input with a *different* (affine)
    map of the output, which is not a symmetry of one representation.
    """

    taxonomy: ClassVar[Taxonomy] = _S

    @named_scope("taxdl.Sigmoid")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.sigmoid(x)


@register(family="activation", formula="Σᵢ tanh(x·êᵢ) êᵢ",
          reference="isotropic paper Table 5.2 (Standard-Tanh)")
class Tanh(AbstractActivation):
    """Elementwise tanh.

    **Symmetry:** algebraically Bₙ-equivariant (tanh is odd, so sign flips and
    permutations commute with it); nothing larger (Table 5.2, "Standard-Tanh").
    """

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(None, None, SignedPermutation()),
        probabilistic=(None, None, SignedPermutation()),
        algebraic=(None, None, SignedPermutation()),
    )

    @named_scope("taxdl.Tanh")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.tanh(x)


@register(family="activation", formula="Σᵢ clip(x·êᵢ, −1, 1) êᵢ",
          reference="isotropic paper eq 59")
class HardTanh(AbstractActivation):
    """Elementwise hard tanh, $f(x)_i = \\max(\\min(x_i, 1), -1)$ (isotropic paper eq 59).

    **Symmetry:** algebraically Bₙ-equivariant (odd); no scalings (it saturates).
    """

    taxonomy: ClassVar[Taxonomy] = _B

    @named_scope("taxdl.HardTanh")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.hard_tanh(x)


@register(family="activation", formula="Σᵢ sin(x·êᵢ) êᵢ")
class Sin(AbstractActivation):
    """Elementwise sine, $f(x)_i = \\sin x_i$.

    **Symmetry:** algebraically Bₙ-equivariant (odd). It is also invariant under the
    discrete translations $x \\mapsto x + 2πk$, $k \\in ℤⁿ$, a group outside the hierarchy.
    """

    taxonomy: ClassVar[Taxonomy] = fixed(
        SignedPermutation(), note="also invariant under x ↦ x + 2πk, k ∈ ℤⁿ (not in the "
                                  "hierarchy)")

    @named_scope("taxdl.Sin")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.sin(x)
