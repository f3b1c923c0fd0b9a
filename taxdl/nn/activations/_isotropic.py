"""Isotropic activations $f(x) = σ(\\|x\\|)\\,\\hat x$ (isotropic paper §3.1, eqs 11–21).

All are algebraically O(n)-equivariant (eq 13: $[R, f] = 0$ for all $R \\in O(n)$) and
nothing larger, except where a hyperparameter makes the map the identity (then GL(n), and
the declaration says so). $f(0) = 0$ everywhere, values and gradients are finite for every
input (see `taxdl.nn.activations._radial`).
"""

from collections.abc import Callable
from typing import ClassVar

import equinox as eqx
from jax import named_scope
from jaxtyping import Array, Float

from ...groups import Affine, Orthogonal
from ...taxonomy import AbstractActivation, Taxonomy, keeps_rays, maps_rays, register
from ..._types import check_real
from . import _functional as F
from ._common import fixed, static_callable

_O = fixed(Orthogonal())
_IDENTITY = fixed(Affine(), note="these hyperparameters make it the identity map")


@register(family="activation", formula="tanh(‖x‖) x̂", reference="isotropic paper eq 15")
class IsotropicTanh(AbstractActivation):
    """Isotropic tanh, $f(x) = \\tanh(\\|x\\|)\\,\\hat x$ (isotropic paper eq 15), with
    $f(0) = 0$ and Jacobian $I$ at the origin.

    **Symmetry:** algebraically O(n)-equivariant; nothing larger (Table 5.2).
    """

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(None, None, Orthogonal()),
        probabilistic=(None, None, Orthogonal()),
        algebraic=(None, None, Orthogonal()),
    )

    @named_scope("taxdl.IsotropicTanh")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.isotropic_tanh(x)


@register(family="activation", name="Isotropic", formula="σ(‖x‖) x̂",
          example=lambda: Isotropic(_example_sigma), reference="isotropic paper eq 11")
class Isotropic(AbstractActivation):
    """The general isotropic activation $f(x) = σ(\\|x\\|)\\,\\hat x$ (isotropic paper
    eq 11) for a radial function σ with $σ(0) = 0$; $f(0) = 0$, Jacobian $σ'(0) I$ there.

    **Arguments:**

    - `sigma`: a hashable callable (named function or `functools.partial`) mapping an
      array of norms $r \\ge 0$ to $σ(r)$ elementwise. It is a fixed hyperparameter
      (a static field), so one holding arrays is refused; a σ with trainable parameters
      goes through [`isotropic`][taxdl.nn.functional.isotropic], called from a module
      that holds σ as a field.

    **Symmetry:** algebraically O(n)-equivariant for every σ; a particular σ can have
    more (σ(r) = r is the identity).
    """

    sigma: Callable = eqx.field(static=True)
    taxonomy: ClassVar[Taxonomy] = fixed(
        Orthogonal(), note="O(n) for every σ; σ(r) = cr makes it linear (GL(n))")

    def __check_init__(self):
        static_callable(self.sigma, "sigma", "Isotropic", functional="isotropic")

    @named_scope("taxdl.Isotropic")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.isotropic(x, self.sigma)


def _example_sigma(r):
    """σ(r) = r / (1 + r), the example radial function of the `Isotropic` row."""
    return r / (1 + r)


@register(family="activation", formula="min(max(‖x‖ − R₀, 0), R_∞) x̂",
          example=lambda: IsotropicReLU(0.5), reference="isotropic paper eqs 16–17")
class IsotropicReLU(AbstractActivation):
    """Isotropic ReLU, $f(x) = \\max(\\|x\\| - R_0, 0)\\,\\hat x$ (eq 16), optionally capped
    at a maximum magnitude: $\\min(\\max(\\|x\\| - R_0, 0), R_\\infty)\\,\\hat x$ (eq 17).

    **Arguments:**

    - `r0`: threshold $R_0 \\ge 0$ (default 1).
    - `r_max`: maximum magnitude $R_\\infty > 0$, or None (default) for none.

    **Symmetry:** algebraically O(n)-equivariant; with $R_0 = 0$ and no cap it is the
    identity (GL(n)).
    """

    r0: float = eqx.field(static=True, default=1.0)
    r_max: float | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        F._r0(self.r0)
        if self.r_max is not None:
            check_real(self.r_max, "r_max", low=0, low_open=True)

    @property
    def taxonomy(self) -> Taxonomy:
        return _IDENTITY if (self.r0 == 0 and self.r_max is None) else _O

    @named_scope("taxdl.IsotropicReLU")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.isotropic_relu(x, self.r0, self.r_max)


@register(family="activation", formula="x·[‖x‖ ≥ R₀]",
          example=lambda: IsotropicThreshold(0.5), reference="isotropic paper eq 18")
class IsotropicThreshold(AbstractActivation):
    """Hard-threshold isotropic form (eq 18): $f(x) = 0$ for $\\|x\\| < R_0$, $x$ otherwise.

    **Arguments:**

    - `r0`: threshold $R_0 \\ge 0$ (default 1).

    **Symmetry:** algebraically O(n)-equivariant (GL(n) when $R_0 = 0$: the identity).
    The value jumps at $\\|x\\| = R_0$; the derivative used is the one off the sphere.
    """

    r0: float = eqx.field(static=True, default=1.0)

    def __check_init__(self):
        F._r0(self.r0)

    @property
    def taxonomy(self) -> Taxonomy:
        return _IDENTITY if self.r0 == 0 else _O

    @named_scope("taxdl.IsotropicThreshold")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.isotropic_threshold(x, self.r0)


@register(family="activation", formula="αx if ‖x‖ < R₀ else x − (1 − α)R₀ x̂",
          example=lambda: IsotropicLeakyReLU(0.1, 0.5), reference="isotropic paper eq 19")
class IsotropicLeakyReLU(AbstractActivation):
    """Isotropic leaky ReLU (eq 19): $αx$ for $\\|x\\| < R_0$, $x - (1 - α)R_0\\hat x$
    otherwise.

    **Arguments:**

    - `alpha`: α ∈ (0, 1) (default 0.01).
    - `r0`: $R_0 \\ge 0$ (default 1).

    **Symmetry:** algebraically O(n)-equivariant (GL(n) when $R_0 = 0$: the identity).
    """

    alpha: float = eqx.field(static=True, default=0.01)
    r0: float = eqx.field(static=True, default=1.0)

    def __check_init__(self):
        F._alpha(self.alpha)
        F._r0(self.r0)

    @property
    def taxonomy(self) -> Taxonomy:
        return _IDENTITY if self.r0 == 0 else _O

    @named_scope("taxdl.IsotropicLeakyReLU")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.isotropic_leaky_relu(x, self.alpha, self.r0)


@register(family="activation", formula="σ(‖x‖) x̂, σ' = w((r − R₀ + δ)/2δ)",
          reference="isotropic paper eq 20 (α = 0)")
class IsotropicSoftReLU(AbstractActivation):
    """Isotropic soft ReLU (isotropic paper eq 20 with α = 0).

    The radial derivative blends smoothly from 0 to 1 over $[R_0 - δ, R_0 + δ]$:
    $σ'(r) = w(t)$, $t = (r - R_0 + δ)/(2δ)$, with the φ-blend
    $w(t) = φ(t)/(φ(t) + φ(1 - t))$ for the monotone choice φ(t) = t² (so
    $w(0) = 0$, $w(1) = 1$ and $w'$ vanishes at both ends: σ is C²). σ is its exact
    integral with σ(0) = 0, in closed form; beyond the window $f(x) = x - R_0\\hat x$.

    **Arguments:**

    - `r0`: $R_0 > 0$ (default 1).
    - `delta`: half-width $0 < δ < R_0$ (default 0.5).

    **Symmetry:** algebraically O(n)-equivariant; nothing larger.
    """

    r0: float = eqx.field(static=True, default=1.0)
    delta: float = eqx.field(static=True, default=0.5)
    taxonomy: ClassVar[Taxonomy] = _O

    def __check_init__(self):
        F._soft(self.r0, self.delta)

    @named_scope("taxdl.IsotropicSoftReLU")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.isotropic_soft_relu(x, self.r0, self.delta)


@register(family="activation", formula="σ(‖x‖) x̂, σ' = α + (1 − α) w((r − R₀ + δ)/2δ)",
          reference="isotropic paper eq 20")
class IsotropicSoftLeakyReLU(AbstractActivation):
    """Isotropic soft leaky ReLU (isotropic paper eq 20).

    $σ'(r) = α + (1 - α)\\,w(t)$, $t = (r - R_0 + δ)/(2δ)$, with the φ(t) = t² blend of
    `IsotropicSoftReLU`; integrated exactly with σ(0) = 0 it equals eq 19 outside the
    window. (Eq 20 as printed writes the middle case as $w(t)$ alone, which jumps from α
    to 0 at $R_0 - δ$; the blend between the two linear regions is $α + (1 - α)w$.)

    **Arguments:**

    - `alpha`: α ∈ (0, 1) (default 0.01).
    - `r0`: $R_0 > 0$ (default 1).
    - `delta`: $0 < δ < R_0$ (default 0.5).

    **Symmetry:** algebraically O(n)-equivariant; nothing larger.
    """

    alpha: float = eqx.field(static=True, default=0.01)
    r0: float = eqx.field(static=True, default=1.0)
    delta: float = eqx.field(static=True, default=0.5)
    taxonomy: ClassVar[Taxonomy] = _O

    def __check_init__(self):
        F._alpha(self.alpha)
        F._soft(self.r0, self.delta)

    @named_scope("taxdl.IsotropicSoftLeakyReLU")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.isotropic_soft_leaky_relu(x, self.alpha, self.r0, self.delta)


@register(family="activation", formula="x + λ sin(‖x‖) x̂",
          example=lambda: IsotropicSinusoid(1.5), reference="isotropic paper eq 21")
class IsotropicSinusoid(AbstractActivation):
    """Isotropic sinusoid (eq 21): $f(x) = x + λ_m \\sin(\\|x\\|)\\,\\hat x$; it folds
    magnitudes when $|λ_m| > 1$. Jacobian $(1 + λ_m)I$ at the origin.

    **Arguments:**

    - `lam`: the real parameter $λ_m$ (default 1).

    **Symmetry:** algebraically O(n)-equivariant (GL(n) when $λ_m = 0$: the identity).
    """

    lam: float = eqx.field(static=True, default=1.0)

    def __check_init__(self):
        check_real(self.lam, "lam")

    @property
    def taxonomy(self) -> Taxonomy:
        return _IDENTITY if self.lam == 0 else _O

    @named_scope("taxdl.IsotropicSinusoid")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.isotropic_sinusoid(x, self.lam)


@register(family="activation", formula="‖x‖²/(1 + ‖x‖²) x̂",
          reference="isotropic paper §3.1; Sabour et al. 2017 eq 1")
class Squash(AbstractActivation):
    """The capsule squashing function $f(x) = \\frac{\\|x\\|^2}{1 + \\|x\\|^2}\\,\\hat x$
    (Sabour et al. 2017, eq 1), an isotropic form noted in the isotropic paper §3.1;
    norms land in [0, 1). Jacobian 0 at the origin.

    **Symmetry:** algebraically O(n)-equivariant; nothing larger.
    """

    taxonomy: ClassVar[Taxonomy] = _O

    @named_scope("taxdl.Squash")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.squash(x)


# σ(r) > 0 for every r > 0: each ray goes into itself (for the composition rules), as
# long as f(x) = c(x)·x does not round to 0. Isotropic tanh has c → 1 at the origin.
# Squash is left out: c = r/(1 + r²) → 0 there, and in float32 f(x) is 0 below
# ‖x‖ ≈ 1e-19, so those inputs lose their ray (as the sinusoid at λ = −1 below).
keeps_rays.register(IsotropicTanh)(lambda _: True)
maps_rays.register(IsotropicTanh)(lambda _: True)

LEAKY_RAYS_ALPHA = 1e-6
"""The smallest leaky slope α for which the leaky forms count as keeping rays: their
c(x) → α at the origin, and αx rounds to 0 only below ‖x‖ ≈ 1e-32 in float32 (the
smallest normal number over α), beyond the magnitudes checks reach (1e-30)."""


@keeps_rays.register(IsotropicLeakyReLU)
@maps_rays.register(IsotropicLeakyReLU)
@keeps_rays.register(IsotropicSoftLeakyReLU)
@maps_rays.register(IsotropicSoftLeakyReLU)
def _(a) -> bool:
    return a.alpha >= LEAKY_RAYS_ALPHA


@keeps_rays.register(IsotropicSinusoid)
@maps_rays.register(IsotropicSinusoid)
def _(a: IsotropicSinusoid) -> bool:
    # f(x) = c(x)·x with c = σ(r)/r = 1 + λ sin(r)/r, and sin(r)/r ranges over [m, 1) on
    # r > 0, m = cos(r*) ≈ −0.2172336 at r* ≈ 4.4934 (tan r* = r*): c > 0 for every
    # x ≠ 0 exactly when −1 ≤ λ < −1/m ≈ 4.6033388 (the bound, rounded down here, has
    # σ(r*) = 0). λ = −1 is left out: there c(x) = 1 − sin(r)/r → 0 at the origin
    # (σ ~ r³/6), which floating point rounds to 0 for small x, so those lose their ray.
    return -1.0 < a.lam < 4.603338848751699
