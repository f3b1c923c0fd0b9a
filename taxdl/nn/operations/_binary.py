"""Binary and clipping operations (isotropic paper App. A.4, eqs 53–60).

A binary operation $f(x, n)$ is checked with the group acting on *both* arguments:
$f(Rx, Rn) = R f(x, n)$ (the multi-argument equivariance of App. A.4).
"""

from typing import ClassVar

import equinox as eqx
from jax import named_scope
from jaxtyping import Array, Float

from ..._types import RealLike, as_real, check_real
from ...groups import (
    ConformalLinear,
    MonomialAffine,
    Orthogonal,
    Permutation,
    SignedPermutation,
    SignFlips,
)
from ...taxonomy import (
    AbstractOperation,
    DimensionRequired,
    Signature,
    Taxonomy,
    register,
    signature,
)
from . import _functional as F


def _algebraic(group, note: str = "", right=None) -> Taxonomy:
    """A parameter-free operation: closure, probabilistic and algebraic cells coincide
    (E = `group`, R = `right`, L trivial)."""
    row = (None, right, group)
    return Taxonomy(closure=row, probabilistic=row, algebraic=row, note=note)


def _binary_signature(op, n=None) -> Signature:
    if n is None:
        raise DimensionRequired(type(op).__name__)
    return Signature(((n,), (n,)))


@register(family="operation", formula="min(sgn(x·n), |n·n/x·n|) sgn(x·n) x",
          reference="isotropic paper eq 55")
class IsotropicMin(AbstractOperation):
    """Isotropic minimum $f(x, n)$ (isotropic paper eq 55): keeps x on the origin side of
    the hyperplane $x\\cdot n = \\|n\\|^2$ and moves it along its ray onto the hyperplane
    otherwise; the identity when $x\\cdot n = 0$. See
    [`isotropic_min`][taxdl.nn.functional.isotropic_min].

    **Symmetry:** algebraically $f(Mx, Mn) = Mf(x, n)$ for every similarity $M = aR$
    ($a > 0$, $R ∈ O(n)$): eq 55 is built from dot products, and the ratio $n\\cdot n /
    x\\cdot n$ is unchanged by a joint scaling, so the group is ℝ×·O(n).
    """

    taxonomy: ClassVar[Taxonomy] = _algebraic(ConformalLinear())

    @named_scope("taxdl.IsotropicMin")
    def __call__(self, x: Float[Array, "*b n"], n: Float[Array, "*#b n"], *, key=None
                 ) -> Float[Array, "*b n"]:
        del key
        F.require_pair(x, n, "IsotropicMin")
        return F.isotropic_min(x, n)


@register(family="operation", formula="max(sgn(x·n), |n·n/x·n|) sgn(x·n) x",
          reference="isotropic paper eq 56")
class IsotropicMax(AbstractOperation):
    """Isotropic maximum $f(x, n)$ (isotropic paper eq 56): keeps x beyond the hyperplane
    $x\\cdot n = \\|n\\|^2$ and maps other points along the line through the origin onto it;
    the identity when $x\\cdot n = 0$. See [`isotropic_max`][taxdl.nn.functional.isotropic_max].

    **Symmetry:** algebraically equivariant to the similarities ℝ×·O(n) acting on both
    arguments (rotations and joint scalings), as [`IsotropicMin`][taxdl.nn.IsotropicMin].
    """

    taxonomy: ClassVar[Taxonomy] = _algebraic(ConformalLinear())

    @named_scope("taxdl.IsotropicMax")
    def __call__(self, x: Float[Array, "*b n"], n: Float[Array, "*#b n"], *, key=None
                 ) -> Float[Array, "*b n"]:
        del key
        F.require_pair(x, n, "IsotropicMax")
        return F.isotropic_max(x, n)


@register(family="operation", formula="x + ((‖n‖−1) x·n̂) n̂", reference="isotropic paper eq 58")
class IsotropicMultiply(AbstractOperation):
    """Isotropic multiplication (isotropic paper eq 58): rescales the component of x along
    $\\hat n$ by $\\|n\\|$, $f(x, n) = x + ((\\|n\\| - 1)\\,x\\cdot\\hat n)\\,\\hat n$.

    **Symmetry:** algebraically O(n)-equivariant acting on both arguments (unlike the
    Hadamard product, eq 57, which is only Sₙ-equivariant).
    """

    taxonomy: ClassVar[Taxonomy] = _algebraic(Orthogonal())

    @named_scope("taxdl.IsotropicMultiply")
    def __call__(self, x: Float[Array, "*b n"], n: Float[Array, "*#b n"], *, key=None
                 ) -> Float[Array, "*b n"]:
        del key
        F.require_pair(x, n, "IsotropicMultiply")
        return F.isotropic_multiply(x, n)


@register(family="operation", formula="Σᵢ min(xᵢ, nᵢ) êᵢ", reference="isotropic paper eq 53")
class ElementwiseMin(AbstractOperation):
    """Elementwise minimum (isotropic paper eq 53, audit).

    **Symmetry:** algebraically equivariant, acting on both arguments, to the
    per-coordinate increasing affine maps with a permutation of the coordinates,
    Sₙ ⋉ (ℝ×₊)ⁿ ⋉ ℝⁿ: $\\min(d x_i + t, d n_i + t) = d\\min(x_i, n_i) + t$ for $d > 0$
    and any $t$; a sign flip turns min into max, so not Sₙ ⋉ (ℝ×)ⁿ ⋉ ℝⁿ.
    """

    taxonomy: ClassVar[Taxonomy] = _algebraic(MonomialAffine(positive=True))

    @named_scope("taxdl.ElementwiseMin")
    def __call__(self, x: Float[Array, "*b n"], n: Float[Array, "*#b n"], *, key=None
                 ) -> Float[Array, "*b n"]:
        del key
        F.require_pair(x, n, "ElementwiseMin")
        return F.elementwise_min(x, n)


@register(family="operation", formula="Σᵢ max(xᵢ, nᵢ) êᵢ", reference="isotropic paper eq 54")
class ElementwiseMax(AbstractOperation):
    """Elementwise maximum (isotropic paper eq 54, audit).

    **Symmetry:** as [`ElementwiseMin`][taxdl.nn.ElementwiseMin]: Sₙ ⋉ (ℝ×₊)ⁿ ⋉ ℝⁿ acting
    on both arguments.
    """

    taxonomy: ClassVar[Taxonomy] = _algebraic(MonomialAffine(positive=True))

    @named_scope("taxdl.ElementwiseMax")
    def __call__(self, x: Float[Array, "*b n"], n: Float[Array, "*#b n"], *, key=None
                 ) -> Float[Array, "*b n"]:
        del key
        F.require_pair(x, n, "ElementwiseMax")
        return F.elementwise_max(x, n)


@register(family="operation", name="Hadamard", formula="Σᵢ xᵢ nᵢ êᵢ",
          reference="isotropic paper eq 57")
class Hadamard(AbstractOperation):
    """Hadamard (elementwise) product $x \\otimes n = \\operatorname{diag}(n)\\,x$
    (isotropic paper eq 57, audit).

    **Symmetry:** acting on both arguments, algebraically Sₙ-equivariant and
    ℤ₂ⁿ-invariant: flipping the same signs of x and n leaves the product unchanged (so it
    is not Bₙ-equivariant).
    """

    taxonomy: ClassVar[Taxonomy] = _algebraic(
        Permutation(), "(Dx) ⊙ (Dn) = x ⊙ n for every diagonal D with D² = I", SignFlips())

    @named_scope("taxdl.Hadamard")
    def __call__(self, x: Float[Array, "*b n"], n: Float[Array, "*#b n"], *, key=None
                 ) -> Float[Array, "*b n"]:
        del key
        F.require_pair(x, n, "Hadamard")
        return F.hadamard(x, n)


for _cls in (IsotropicMin, IsotropicMax, IsotropicMultiply, ElementwiseMin, ElementwiseMax,
             Hadamard):
    signature.register(_cls)(_binary_signature)


@register(family="operation", formula="Σᵢ clip(xᵢ, −b, b) êᵢ", reference="isotropic paper eq 59")
class CoordinateClip(AbstractOperation):
    """Elementwise clip into $[-b, b]^n$ (isotropic paper eq 59): coordinates outside are
    clipped separately, so directions change at the boundary (neural refraction).

    **Symmetry:** algebraically Bₙ-equivariant (odd and coordinatewise).
    """

    bound: RealLike = eqx.field(static=True, default=1.0, converter=as_real)

    taxonomy: ClassVar[Taxonomy] = _algebraic(SignedPermutation())

    def __check_init__(self):
        check_real(self.bound, "bound", who="CoordinateClip", low=0, low_open=True)

    @named_scope("taxdl.CoordinateClip")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.elementwise_clip(x, self.bound)


@register(family="operation", formula="min(b/‖x‖_∞, 1) x", reference="isotropic paper eq 60")
class BoxClip(AbstractOperation):
    """Direction-preserving box clip (isotropic paper eq 60): a point outside
    $[-b, b]^n$ is moved along its ray onto the box, $f(x) = \\min(b/\\|x\\|_\\infty, 1)\\,x$
    (eq 60 uses the largest coordinate; its magnitude is meant, see
    [`box_clip`][taxdl.nn.functional.box_clip]).

    **Symmetry:** algebraically Bₙ-equivariant — the box is not rotation-invariant, so the
    operation is not isotropic, only free of refraction (same group as eq 59).
    """

    bound: RealLike = eqx.field(static=True, default=1.0, converter=as_real)

    taxonomy: ClassVar[Taxonomy] = _algebraic(SignedPermutation())

    def __check_init__(self):
        check_real(self.bound, "bound", who="BoxClip", low=0, low_open=True)

    @named_scope("taxdl.BoxClip")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.box_clip(x, self.bound)

