"""Pure activation functions (unbatched or batched over leading axes).

Every function acts along the last axis (conic ones along `axis`), returns the input's
dtype (half precisions are computed in float32) and validates its hyperparameters, naming
the argument and the valid range in the error.
"""

import functools as ft
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Complex, Float

from ..._types import check_bool, check_int, check_real
from .._numerics import (compute_dtype, inverse_or_zero, require_floating, safe_norm,
                         unit_and_norm)
from . import _radial as R
from ._cone import ConeSpec, apply_cones

__all__ = [
    # elementwise
    "relu", "leaky_relu", "elu", "gelu", "silu", "softplus", "sigmoid", "tanh",
    "hard_tanh", "sin",
    # isotropic
    "isotropic", "isotropic_tanh", "isotropic_relu", "isotropic_threshold",
    "isotropic_leaky_relu", "isotropic_soft_relu", "isotropic_soft_leaky_relu",
    "isotropic_sinusoid", "squash",
    # conic
    "colu", "rcolu", "resolve_cones",
    # quasi-isotropic
    "quasi_isotropic", "lattice_isotropic", "lattice_directions", "trainable_direction",
    # complex and other representations
    "unitary_isotropic", "phase_elementwise", "bloch", "lorentz_isotropic",
]


# ============================================================================ checks
def _check_complex(x, who: str):
    if not hasattr(x, "dtype") or not jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise TypeError(f"{who}: `x` must be a complex array (complex64/complex128), got "
                        f"{getattr(x, 'dtype', type(x).__name__)}.")
    if x.ndim < 1:
        raise ValueError(f"{who}: `x` must have at least one axis, got a scalar.")


def _check_callable(sigma, name: str):
    if not callable(sigma):
        raise TypeError(f"`{name}` must be a callable radial function, got {sigma!r}.")
    return sigma


# ============================================================================ elementwise
def _in_compute_dtype(fn, x):
    """`fn(x)` computed in x's compute dtype (float32 for bfloat16/float16) and returned
    in x's dtype: in half precision a sigmoid of −12 is 0 (e¹² overflows float16) and a
    GELU is off by several units in the last place, where float32 then rounding gives
    the correctly rounded values."""
    work = compute_dtype(x.dtype)
    if work == x.dtype:
        return fn(x)
    return fn(x.astype(work)).astype(x.dtype)


def relu(x: Float[Array, "*b n"]) -> Float[Array, "*b n"]:
    """$\\max(x, 0)$ elementwise."""
    require_floating(x, "relu")
    return jax.nn.relu(x)


def leaky_relu(x: Float[Array, "*b n"], negative_slope: float = 0.01) -> Float[Array, "*b n"]:
    """$x$ for $x \\ge 0$, $a x$ otherwise, elementwise, with slope $a$ in [0, 1)."""
    require_floating(x, "leaky_relu")
    a = check_real(negative_slope, "negative_slope", low=0, high=1, high_open=True)
    return _in_compute_dtype(lambda z: jnp.where(z >= 0, z, z * jnp.asarray(a, z.dtype)), x)


def elu(x: Float[Array, "*b n"], alpha: float = 1.0) -> Float[Array, "*b n"]:
    """$x$ for $x > 0$, $α(e^x - 1)$ otherwise, elementwise, α > 0."""
    require_floating(x, "elu")
    a = check_real(alpha, "alpha", low=0, low_open=True)
    return _in_compute_dtype(lambda z: jax.nn.elu(z, jnp.asarray(a, z.dtype)), x)


def gelu(x: Float[Array, "*b n"], approximate: bool = False) -> Float[Array, "*b n"]:
    """$x\\,Φ(x)$ elementwise; with `approximate`, Hendrycks & Gimpel's
    $\\tfrac12 x\\,(1 + \\tanh(\\sqrt{2/π}\\,(x + 0.044715\\,x^3)))$, whose tanh is taken at
    x clipped to [−10, 10] (where it is ±1 to float64 precision already), so that the cube
    neither overflows nor makes the derivative NaN at large |x| (float16 above ~40,
    float32 above ~7e12)."""
    require_floating(x, "gelu")
    if not check_bool(approximate, "approximate", who="gelu"):
        return _in_compute_dtype(ft.partial(jax.nn.gelu, approximate=False), x)
    return _in_compute_dtype(_tanh_gelu, x)


def _tanh_gelu(x):
    xc = jnp.clip(x, -10, 10)
    u = math.sqrt(2 / math.pi) * (xc + 0.044715 * (xc * xc * xc))
    return 0.5 * x * (1 + jnp.tanh(u))


def silu(x: Float[Array, "*b n"]) -> Float[Array, "*b n"]:
    """$x\\,\\mathrm{sigmoid}(x)$ elementwise."""
    require_floating(x, "silu")
    return _in_compute_dtype(jax.nn.silu, x)


def softplus(x: Float[Array, "*b n"]) -> Float[Array, "*b n"]:
    """$\\log(1 + e^x)$ elementwise."""
    require_floating(x, "softplus")
    return _in_compute_dtype(jax.nn.softplus, x)


def sigmoid(x: Float[Array, "*b n"]) -> Float[Array, "*b n"]:
    """$1/(1 + e^{-x})$ elementwise."""
    require_floating(x, "sigmoid")
    return _in_compute_dtype(jax.nn.sigmoid, x)


def tanh(x: Float[Array, "*b n"]) -> Float[Array, "*b n"]:
    """Elementwise tanh, $f(x) = \\sum_i \\tanh(x \\cdot \\hat e_i)\\hat e_i$."""
    require_floating(x, "tanh")
    return _in_compute_dtype(jnp.tanh, x)


def hard_tanh(x: Float[Array, "*b n"]) -> Float[Array, "*b n"]:
    """$\\max(\\min(x, 1), -1)$ elementwise (isotropic paper eq 59)."""
    require_floating(x, "hard_tanh")
    return jnp.clip(x, -1, 1)


def sin(x: Float[Array, "*b n"]) -> Float[Array, "*b n"]:
    """$\\sin x$ elementwise."""
    require_floating(x, "sin")
    return _in_compute_dtype(jnp.sin, x)


# ============================================================================ isotropic
def _radial_real(x, profile, who):
    require_floating(x, who)
    return R.radial(x, profile)


def isotropic(x: Float[Array, "*b n"], sigma: Callable) -> Float[Array, "*b n"]:
    """The general isotropic form $f(x) = σ(\\|x\\|)\\,\\hat x$ (isotropic paper eq 11),
    with $f(0) = 0$.

    `sigma` maps an array of norms $r \\ge 0$ to $σ(r)$ elementwise; it must satisfy
    $σ(0) = 0$ and be differentiable at 0 (the Jacobian at the origin is $σ'(0) I$).
    The kernel is compiled once per σ (compared as a dictionary key: the same function
    or `functools.partial` object), shape and dtype. A σ that holds arrays (an Equinox
    module with parameters, a `functools.partial` over arrays, or a closure over them
    such as `lambda r: self.a * jnp.tanh(r)` in a module's `__call__`) is not compiled
    as a kernel: JAX differentiates through it, so that those arrays (trainable
    parameters) receive their gradients.
    """
    _check_callable(sigma, "sigma")
    return _radial_real(x, R.bound(R.callable_profile, sigma=sigma), "isotropic")


def isotropic_tanh(x: Float[Array, "*b n"]) -> Float[Array, "*b n"]:
    """Isotropic tanh (isotropic paper eq 15): $f(x) = \\tanh(\\|x\\|)\\,\\hat x$, with
    $f(0) = 0$ and Jacobian $I$ at the origin; an exact unit direction at any magnitude."""
    return _radial_real(x, R.tanh_profile, "isotropic_tanh")


def _r0(r0):
    return check_real(r0, "r0", low=0)


def isotropic_relu(x: Float[Array, "*b n"], r0: float = 1.0, r_max: float | None = None
                   ) -> Float[Array, "*b n"]:
    """Isotropic ReLU, $f(x) = \\max(\\|x\\| - R_0, 0)\\,\\hat x$ (eq 16), or with a maximum
    magnitude $\\min(\\max(\\|x\\| - R_0, 0), R_\\infty)\\,\\hat x$ (eq 17). $R_0 \\ge 0$,
    $R_\\infty > 0$."""
    r0 = _r0(r0)
    if r_max is not None:
        r_max = check_real(r_max, "r_max", low=0, low_open=True)
    return _radial_real(x, R.bound(R.relu_profile, r0=r0, r_max=r_max), "isotropic_relu")


def isotropic_threshold(x: Float[Array, "*b n"], r0: float = 1.0) -> Float[Array, "*b n"]:
    """Hard-threshold isotropic form (eq 18): $0$ for $\\|x\\| < R_0$, $x$ otherwise."""
    r0 = _r0(r0)
    return _radial_real(x, R.bound(R.threshold_profile, r0=r0), "isotropic_threshold")


def _alpha(alpha):
    return check_real(alpha, "alpha", low=0, high=1, low_open=True, high_open=True)


def isotropic_leaky_relu(x: Float[Array, "*b n"], alpha: float = 0.01, r0: float = 1.0
                         ) -> Float[Array, "*b n"]:
    """Isotropic leaky ReLU (eq 19): $αx$ for $\\|x\\| < R_0$, $x - (1 - α)R_0\\hat x$
    otherwise; α ∈ (0, 1), $R_0 \\ge 0$."""
    alpha, r0 = _alpha(alpha), _r0(r0)
    return _radial_real(x, R.bound(R.leaky_profile, alpha=alpha, r0=r0),
                        "isotropic_leaky_relu")


def _soft(r0, delta):
    r0 = check_real(r0, "r0", low=0, low_open=True)
    delta = check_real(delta, "delta", low=0, high=r0, low_open=True, high_open=True)
    return r0, delta


def isotropic_soft_relu(x: Float[Array, "*b n"], r0: float = 1.0, delta: float = 0.5
                        ) -> Float[Array, "*b n"]:
    """Isotropic soft ReLU (eq 20 with α = 0): σ' blends smoothly from 0 to 1 over
    $[R_0 - δ, R_0 + δ]$ with the φ(t) = t² blend; $0 < δ < R_0$. Beyond the window
    $f(x) = x - R_0\\hat x$ (eq 16); inside $R_0 - δ$ it is 0."""
    r0, delta = _soft(r0, delta)
    return _radial_real(x, R.bound(R.soft_leaky_profile, alpha=0.0, r0=r0, delta=delta),
                        "isotropic_soft_relu")


def isotropic_soft_leaky_relu(x: Float[Array, "*b n"], alpha: float = 0.01, r0: float = 1.0,
                              delta: float = 0.5) -> Float[Array, "*b n"]:
    """Isotropic soft leaky ReLU (eq 20): σ' = α + (1 − α) w(t), t = (r − R₀ + δ)/(2δ),
    w the φ(t) = t² blend, integrated in closed form with σ(0) = 0; α ∈ (0, 1),
    $0 < δ < R_0$. It equals eq 19 outside the window $[R_0 - δ, R_0 + δ]$."""
    alpha = _alpha(alpha)
    r0, delta = _soft(r0, delta)
    return _radial_real(x, R.bound(R.soft_leaky_profile, alpha=alpha, r0=r0, delta=delta),
                        "isotropic_soft_leaky_relu")


def isotropic_sinusoid(x: Float[Array, "*b n"], lam: float = 1.0) -> Float[Array, "*b n"]:
    """Isotropic sinusoid (eq 21): $f(x) = x + λ_m \\sin(\\|x\\|)\\,\\hat x$, λ real."""
    lam = check_real(lam, "lam")
    return _radial_real(x, R.bound(R.sinusoid_profile, lam=lam), "isotropic_sinusoid")


def squash(x: Float[Array, "*b n"]) -> Float[Array, "*b n"]:
    """The capsule squashing function $f(x) = \\frac{\\|x\\|^2}{1 + \\|x\\|^2}\\hat x$
    (Sabour et al. 2017, eq 1; isotropic paper §3.1)."""
    return _radial_real(x, R.squash_profile, "squash")


# ============================================================================ conic
_PROJECTIONS = ("hard", "firm", "soft")
_LAYOUTS = ("block", "axes_first")
_RECTIFY = (None, "relu", "silu")


def _int_or_none(value, name: str, low: int) -> int | None:
    return None if value is None else check_int(value, name, minimum=low)


def resolve_cones(channels: int, cone_dim: int | None = None, num_cones: int | None = None,
                  shared_axis: bool = False) -> tuple[int, int]:
    """Resolve (S, G) from the channel count C and one of `cone_dim` (S) / `num_cones` (G).

    Without sharing C = G·S (eq 3); with a shared axis C − 1 = G(S − 1) (eq 4). G = 0
    means the identity (returned as S = C). Raises `ValueError` naming the argument when
    C is incompatible.
    """
    c = check_int(channels, "channels", who="resolve_cones", minimum=0)
    s = _int_or_none(cone_dim, "cone_dim", 1)
    g = _int_or_none(num_cones, "num_cones", 0)
    if (s is None) == (g is None):
        raise ValueError("give exactly one of `cone_dim` (S, the cone dimension) and "
                         "`num_cones` (G, the number of cones).")
    if g == 0:
        return c, 0
    if g is not None and c < g:
        raise ValueError(f"the channel count C = {c} cannot hold num_cones G = {g} cones "
                         f"(each cone needs at least one channel: C >= G).")
    if shared_axis:
        if s is not None:
            if s < 2:
                raise ValueError(f"`cone_dim` must be >= 2 with shared_axis=True, got {s}.")
            if c < s or (c - 1) % (s - 1):
                raise ValueError(
                    f"with shared_axis=True the channel count C must satisfy C - 1 = G(S - 1) "
                    f"(eq 4) for an integer G >= 1; C = {c} and cone_dim S = {s} do not: "
                    f"C - 1 must be a positive multiple of S - 1 = {s - 1}.")
            return s, (c - 1) // (s - 1)
        if c < 2 or (c - 1) % g:
            raise ValueError(
                f"with shared_axis=True the channel count C must satisfy C - 1 = G(S - 1) "
                f"(eq 4); C - 1 = {c - 1} is not a positive multiple of num_cones G = {g}.")
        return (c - 1) // g + 1, g
    if s is not None:
        if c % s:
            raise ValueError(f"the channel count C = {c} must be divisible by cone_dim S = "
                             f"{s} (C = G·S, eq 3).")
        return s, c // s
    if c % g:
        raise ValueError(f"the channel count C = {c} must be divisible by num_cones G = {g} "
                         f"(C = G·S, eq 3).")
    return c // g, g


def _axis(axis, ndim, who):
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not (
            -ndim <= axis < ndim):
        raise ValueError(f"{who}: `axis` must be an integer in [-{ndim}, {ndim}) for an input "
                         f"with {ndim} axes, got {axis!r}.")
    return int(axis) % ndim


def _choice(value, name, options):
    if value not in options:
        raise ValueError(f"`{name}` must be one of {', '.join(map(repr, options))}, got "
                         f"{value!r}.")
    return value


def colu(x: Float[Array, "..."], cone_dim: int | None = None, num_cones: int | None = None, *,
         projection: str = "hard", shared_axis: bool = False, layout: str = "block",
         rectify_axis: str | None = None, eps: float = 1e-7, axis: int = -1
         ) -> Float[Array, "..."]:
    """Conic linear unit (Fu & Cohen eqs 1–4) along the channel axis `axis`.

    Per cone with axis coordinate $x_1$ and body $x_{-1}$:
    $λ(x) = (x_1,\\; W(x_1/(\\|x_{-1}\\| + ε))\\,x_{-1})$ with $W$ = clip(·, 0, 1) (hard,
    eq 1), sigmoid(4r − 2) (firm) or sigmoid(r − ½) (soft, eq 2). G cones of dimension S
    (eq 3), or with a shared axis C − 1 = G(S − 1) (eq 4). G = 0 and S = 1 are the
    identity; S = 2 is the component-wise activation (SiLU for soft, ReLU otherwise), as
    the paper specifies.

    **Arguments:**

    - `x`: input; its `axis` holds the C channels.
    - `cone_dim` / `num_cones`: S or G (exactly one).
    - `projection`: "hard", "firm" or "soft".
    - `shared_axis`: one axis coordinate shared by all cones (eq 4).
    - `layout`: "block" (cone i is the contiguous block [iS, (i+1)S), axis first; shared:
      the common axis then G blocks of S − 1) or "axes_first" (the G axes, then the G
      bodies of S − 1 each: the layout of the authors' published code).
    - `rectify_axis`: None (eq 1), "relu" or "silu": pass each axis coordinate through
      that function (a departure from eq 1, offered as an option).
    - `eps`: ε ≥ 0 in the ratio (eq 1); ε = 0 makes the activation exactly positively
      homogeneous per cone.
    - `axis`: the channel axis (e.g. -3 for CHW images).

    **Returns:** an array of the input's shape and dtype.
    """
    require_floating(x, "colu")
    ax = _axis(axis, x.ndim, "colu")
    _choice(projection, "projection", _PROJECTIONS)
    _choice(layout, "layout", _LAYOUTS)
    _choice(rectify_axis, "rectify_axis", _RECTIFY)
    shared_axis = check_bool(shared_axis, "shared_axis", who="colu")
    eps = check_real(eps, "eps", low=0)
    s, g = resolve_cones(x.shape[ax], cone_dim, num_cones, shared_axis)
    if g == 0 or s == 1:
        return x
    if s == 2:
        return _in_compute_dtype(jax.nn.silu, x) if projection == "soft" else jax.nn.relu(x)
    spec = ConeSpec(s, g, "shared" if shared_axis else layout, ax, projection, eps,
                    rectify_axis)
    return apply_cones(x, spec)


def rcolu(x: Float[Array, "..."], cone_dim: int | None = None, num_cones: int | None = None, *,
          projection: str = "hard", eps: float = 1e-7, axis: int = -1) -> Float[Array, "..."]:
    """Rotated, homogeneous-axis CoLU (Fu & Cohen eq 5) along `axis`.

    Each block of S channels is a cone whose axis is the all-ones direction
    $e = \\mathbf 1/\\sqrt S$: with $x_n = (x\\cdot e)\\,e$ and $x_r = x - x_n$,
    $λ(x) = x_n + W\\big((x\\cdot e)/(\\|x_r\\| + ε)\\big)\\,x_r$, $W$ as in `colu` (the
    printed eq 5 garbles the clip; this is eq 1 rotated, as the text describes). Axis
    sharing is the single cone $G = 1$ ($e = \\mathbf 1/\\sqrt C$). G = 0 and S = 1 are the
    identity.
    """
    require_floating(x, "rcolu")
    ax = _axis(axis, x.ndim, "rcolu")
    _choice(projection, "projection", _PROJECTIONS)
    eps = check_real(eps, "eps", low=0)
    s, g = resolve_cones(x.shape[ax], cone_dim, num_cones, False)
    if g == 0 or s == 1:
        return x
    spec = ConeSpec(s, g, "block", ax, projection, eps, None)
    return apply_cones(x, spec, rotated=True)


# ============================================================================ quasi-isotropic
def _tanh_ratio(s):
    """tanh(s)/s (1 at s = 0) with a gradient that stays finite for tiny s: below
    |s| = 0.1 its Taylor series to s¹⁴ (1 − s²/3 + 2s⁴/15 − 17s⁶/315 + 62s⁸/2835 −
    1382s¹⁰/155925 + 21844s¹²/6081075 − 929569s¹⁴/638512875; the next term,
    6404582s¹⁶/10854718875, is below 6e-20 there, so the series is float64-accurate), the
    quotient above."""
    small = jnp.abs(s) < 0.1
    t = jnp.where(small, s, 0)
    t2 = t * t
    acc = -929569 / 638512875
    for c in (21844 / 6081075, -1382 / 155925, 62 / 2835, -17 / 315, 2 / 15, -1 / 3, 1.0):
        acc = c + t2 * acc
    q = jnp.where(small, 1, s)
    return jnp.where(small, acc, jnp.tanh(q) / q)


def _apply_sigma(sigma, r):
    """σ(r), taken at the dtype's largest finite number where ‖x‖ overflows (r = ∞): for a
    bounded σ that is its limit to rounding, where σ(∞) is NaN for many σ written as
    formulas (e.g. r/(1 + r))."""
    return sigma(jnp.minimum(r, float(jnp.finfo(r.dtype).max))).astype(r.dtype)


def quasi_isotropic(x: Float[Array, "*b n"], alpha: float = 4.0, beta: float = 0.5,
                    sigma: Callable = jnp.tanh, normalise: bool = False) -> Float[Array, "*b n"]:
    """Direction-rounding quasi-isotropic form (isotropic paper eqs 61–62):
    $f(x) = σ(\\|x\\|)\\,Φ(\\hat x)$ with
    $Φ(\\hat x; α) = [α\\hat x]/α + β(\\hat x - [α\\hat x]/α)$ ($[\\cdot]$ rounds to the
    nearest integer, ties to even, φ(v) = βv with β ≠ 1). α > 0 is the isotropy-breaking
    parameter (α → ∞ restores isotropy). With `normalise`, Φ is rescaled to unit norm
    (the "trivially modified" exact form). $f(0) = 0$ (σ(0) = 0 required).

    At the origin f is not differentiable for Ψ ≠ O(n): its directional derivative
    $σ'(0)\\,\\|v\\|\\,Φ(\\hat v)$ is not linear in v. JAX's derivative there is 0 (as
    relu's at 0), so a row that is exactly 0 passes no gradient back.
    """
    require_floating(x, "quasi_isotropic")
    alpha = check_real(alpha, "alpha", low=0, low_open=True)
    beta = check_real(beta, "beta")
    if beta == 1.0:
        raise ValueError("`beta` must differ from 1 (beta = 1 makes Φ the identity: the "
                         "isotropic form, see `isotropic`).")
    _check_callable(sigma, "sigma")
    normalise = check_bool(normalise, "normalise", who="quasi_isotropic")
    if x.size == 0:  # nothing to map (the norm of no coordinates has no largest entry)
        return x
    dtype = x.dtype
    z = x.astype(compute_dtype(dtype))
    u, r = unit_and_norm(z, infinite_rows=True)
    grid = jnp.round(alpha * u) / alpha
    phi = grid + beta * (u - grid)
    if normalise:
        phi = phi * inverse_or_zero(safe_norm(phi, keepdims=True))
    return (_apply_sigma(sigma, r)[..., None] * phi).astype(dtype)


def lattice_directions(kind: str, n: int, k: int | None = None) -> np.ndarray:
    """Unit vectors $\\hat b_i$ of a lattice on $S^{n-1}$, shape (m, n):

    - "cubic": $\\pm e_i$ (2n vectors; symmetry group Bₙ);
    - "simplex": the n + 1 vertices of a regular simplex (symmetry group S_{n+1} acting
      through its n-dimensional representation);
    - "polygon": k ≥ 3 directions at angles 2πj/k in ℝ² (dihedral group of order 2k).

    `k` applies to "polygon" only (where it is required); given with another `kind` it
    is refused, as [`LatticeIsotropic`][taxdl.nn.LatticeIsotropic] refuses it.
    """
    if not isinstance(kind, str) or kind not in ("cubic", "simplex", "polygon"):
        raise ValueError(f"`kind` must be 'cubic', 'simplex' or 'polygon', got {kind!r}.")
    n = _int_or_none(n, "n", 1)
    if kind != "polygon" and k is not None:
        raise ValueError(f"`k` (the number of polygon directions) only applies to "
                         f"kind='polygon', got k={k!r} with kind={kind!r}.")
    if kind == "cubic":
        eye = np.eye(n)
        return np.concatenate([eye, -eye])
    if kind == "simplex":
        from ...groups import simplex_vertices

        return simplex_vertices(n)
    if n != 2:
        raise ValueError(f"the 'polygon' lattice lives in ℝ²: `n` must be 2, got {n}.")
    k = _int_or_none(k, "k", 3)
    if k is None:
        raise ValueError("the 'polygon' lattice needs `k` >= 3 directions.")
    t = 2 * np.pi * np.arange(k) / k
    return np.stack([np.cos(t), np.sin(t)], -1)


def _directional(x, dirs, sigma, floor):
    dtype = x.dtype
    z = x.astype(compute_dtype(dtype))
    u, r = unit_and_norm(z, infinite_rows=True)
    proj = jnp.einsum("...j,ij->...i", u, jnp.asarray(dirs).astype(z.dtype),
                      precision=jax.lax.Precision.HIGHEST)
    m = jnp.max(proj, axis=-1)
    m = jnp.maximum(m, floor) if floor is not None else m
    scale = _apply_sigma(sigma, r) * inverse_or_zero(m)
    return (scale[..., None] * u).astype(dtype)


def _nonnegative_least_squares(a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """argmin ‖aμ − y‖ over μ ≥ 0 (the active-set method of Lawson and Hanson), float64."""
    m = a.shape[1]
    tol = 1e-12 * max(1.0, float(np.abs(a).max(initial=0.0)) * m)
    mu = np.zeros(m)
    passive = np.zeros(m, bool)
    for _ in range(3 * m + 10):
        w = a.T @ (y - a @ mu)
        if passive.all() or np.max(np.where(passive, -np.inf, w)) <= tol:
            break
        passive[np.argmax(np.where(passive, -np.inf, w))] = True
        while True:
            s = np.zeros(m)
            s[passive] = np.linalg.lstsq(a[:, passive], y, rcond=None)[0]
            if np.all(s[passive] > tol):
                break
            blocking = passive & (s <= tol)
            alpha = np.min(mu[blocking] / (mu[blocking] - s[blocking]))
            mu = mu + alpha * (s - mu)
            passive &= mu > tol
            mu[~passive] = 0.0
        mu = s
    return mu


def _check_spanning_directions(directions) -> None:
    """Concrete `directions` must be finite unit vectors that positively span ℝⁿ (every
    x ≠ 0 has some $\\hat b_i \\cdot x > 0$, so eq 63's denominator is positive). They
    do iff they have rank n and some λ > 0 has $\\sum_i λ_i \\hat b_i = 0$: a
    non-negative least-squares problem for λ = 1 + μ, μ ≥ 0, whose residual, when it is
    not zero, is a direction x with every $\\hat b_i \\cdot x \\le 0$ (Farkas)."""
    if isinstance(directions, jax.core.Tracer):
        return
    b = np.asarray(directions, np.float64)
    if not np.all(np.isfinite(b)):
        raise ValueError("`directions` must be finite.")
    norms = np.linalg.norm(b, axis=-1)
    tol = max(1e-6, 10 * float(jnp.finfo(directions.dtype).eps))
    if np.any(np.abs(norms - 1) > tol):
        raise ValueError(f"`directions` must be unit vectors (eq 63's b̂ᵢ), got row "
                         f"norms {norms[np.abs(norms - 1) > tol][:4]}.")
    n = b.shape[1]
    _, sv, vt = np.linalg.svd(b)
    if len(sv) < n or sv[n - 1] <= 1e-9 * sv[0]:
        witness = vt[-1]
    else:
        a, y = b.T, -b.sum(0)
        residual = y - a @ _nonnegative_least_squares(a, y)
        if np.linalg.norm(residual) <= 1e-9 * max(1.0, np.linalg.norm(y)):
            return
        witness = residual / np.linalg.norm(residual)
    raise ValueError(f"`directions` must positively span ℝ^{n} (every x ≠ 0 needs some "
                     f"b̂ᵢ·x > 0), but x = {np.round(witness, 4)} has b̂ᵢ·x ≤ 0 for every i.")


def lattice_isotropic(x: Float[Array, "*b n"], directions: Float[Array | np.ndarray, "m n"],
                      sigma: Callable = jnp.tanh) -> Float[Array, "*b n"]:
    """Lattice-direction quasi-isotropic form (isotropic paper eq 63):
    $f(x) = σ(\\|x\\|)\\,\\hat x / \\max_i(\\hat b_i\\cdot\\hat x)$ over the unit vectors
    `directions` (rows; they must positively span ℝⁿ, e.g. `lattice_directions`).
    Its symmetry is the finite group Ψ of the lattice. $f(0) = 0$; f is not
    differentiable there (its directional derivative $σ'(0)\\,v/\\max_i(\\hat b_i\\cdot
    \\hat v)$ is not linear in v), and JAX's derivative there is 0, as relu's at 0.

    Concrete `directions` are checked: finite unit vectors that positively span ℝⁿ (else
    some x has no positive $\\hat b_i \\cdot \\hat x$ and eq 63 is undefined there; the
    error names such an x). Traced directions are used as given.
    """
    require_floating(x, "lattice_isotropic")
    directions = jnp.asarray(directions)
    if directions.ndim != 2 or directions.shape[1] != x.shape[-1]:
        raise ValueError(f"`directions` must have shape (m, {x.shape[-1]}) (unit vectors in "
                         f"the feature space), got {directions.shape}.")
    _check_spanning_directions(directions)
    _check_callable(sigma, "sigma")
    return _directional(x, directions, sigma, None)


def trainable_direction(x: Float[Array, "*b n"], directions: Float[Array | np.ndarray, "m n"],
                        sigma: Callable = jnp.tanh, floor: float = 0.05
                        ) -> Float[Array, "*b n"]:
    """Trainable-direction form (isotropic paper eq 64):
    $f(x) = σ(\\|x\\|)\\,\\hat x / \\max(\\max_i \\hat Z_{ij}\\hat x_j,\\; δ)$ where $\\hat Z$ is
    `directions` with rows normalised to unit length. The floor δ = `floor` > 0 (a
    departure from eq 64) keeps the value finite where no direction lies within 90° of
    $\\hat x$, which random directions do not exclude. At the origin the derivative is
    0, as for `lattice_isotropic`.
    """
    require_floating(x, "trainable_direction")
    directions = jnp.asarray(directions)
    if directions.ndim != 2 or directions.shape[1] != x.shape[-1]:
        raise ValueError(f"`directions` must have shape (m, {x.shape[-1]}), got "
                         f"{directions.shape}.")
    _check_callable(sigma, "sigma")
    floor = check_real(floor, "floor", low=0, high=1, low_open=True)
    d = directions.astype(compute_dtype(x.dtype))
    zhat = d * inverse_or_zero(safe_norm(d, keepdims=True))
    return _directional(x, zhat, sigma, floor)


# ============================================================================ complex & others
def unitary_isotropic(x: Complex[Array, "*b n"], sigma: Callable | None = None
                      ) -> Complex[Array, "*b n"]:
    """U(n)-equivariant form on ℂⁿ (isotropic paper eq 28):
    $f(x) = σ(x^\\dagger x)\\,x / \\sqrt{x^\\dagger x}$, $f(0) = 0$. Default
    $σ(s) = \\tanh\\sqrt s$ (complex isotropic tanh); a custom `sigma` acts on
    $s = x^\\dagger x$ and needs $σ(s) \\approx c\\sqrt s$ near 0 for a finite Jacobian.
    """
    _check_complex(x, "unitary_isotropic")
    if sigma is None:
        return R.radial(x, R.tanh_profile)
    _check_callable(sigma, "sigma")
    prof = R.bound(R.callable_profile, sigma=sigma, of_square=True)
    return R.radial(x, prof)


def phase_elementwise(x: Complex[Array, "*b n"], sigma: Callable | None = None
                      ) -> Complex[Array, "*b n"]:
    """Sₙ×U(1)-form on ℂⁿ (isotropic paper eq 29), elementwise on each complex coordinate:
    $f(x)_i = σ(|x_i|^2)\\,x_i/|x_i|$ (0 where $x_i = 0$). Default $σ(s) = \\tanh\\sqrt s$.
    Each coordinate's phase is kept, so the true symmetry is U(1)ⁿ ⋊ Sₙ."""
    _check_complex(x, "phase_elementwise")
    y = unitary_isotropic(x[..., None], sigma)
    return y[..., 0]


def bloch(x: Complex[Array, "*b 2"], sigma: Callable | None = None) -> Float[Array, "*b 3"]:
    """Bloch/Hopf activation ℂ² → ℝ³ (isotropic paper eq 41):
    $f(x) = σ(x^\\dagger x)\\,n(x/\\|x\\|)$ with the Bloch map
    $n(ψ) = ψ^\\dagger \\vec σ ψ / ψ^\\dagger ψ$ (Pauli matrices $\\vec σ$), $f(0) = 0$.
    Default $σ(s) = \\tanh s$, so $f(x) = \\frac{\\tanh s}{s}\\,x^\\dagger\\vec σ x$ is smooth
    at the origin. Equivariance: $f(Ux) = R(U) f(x)$, $R_{ij} = \\tfrac12
    \\operatorname{tr}(σ_i U σ_j U^\\dagger)$; invariant under global phases.
    Where $x^\\dagger x$ overflows, σ is taken at the largest finite number; a spinor with
    infinite (real or imaginary) parts takes its limit, σ there times the Bloch vector of
    the unit spinor of their signs; a spinor holding a NaN is NaN.
    """
    _check_complex(x, "bloch")
    if x.shape[-1] != 2:
        raise ValueError(f"bloch: `x` must have a last axis of size 2 (a spinor in ℂ²), got "
                         f"shape {x.shape}.")
    if sigma is not None:
        _check_callable(sigma, "sigma")
    real = compute_dtype(x.dtype)
    cdt = jnp.complex128 if real == jnp.float64 else jnp.complex64
    z = x.astype(cdt)
    u, r = unit_and_norm(z, infinite_rows=True)
    # rows whose s = r² overflows take σ at the largest finite number; r is replaced
    # there before squaring, so that no derivative 2r = ∞ meets a zero cotangent
    over = ~(r * r < jnp.inf)
    r_fin = jnp.where(over, 0, r)
    s = jnp.where(over, jnp.inf, r_fin * r_fin)

    def bilinear(v):
        c = jnp.conj(v[..., 0]) * v[..., 1]
        a0 = jnp.real(v[..., 0] * jnp.conj(v[..., 0]))
        a1 = jnp.real(v[..., 1] * jnp.conj(v[..., 1]))
        return jnp.stack([2 * jnp.real(c), 2 * jnp.imag(c), a0 - a1], -1)

    small = s < 1
    s_small = jnp.where(small, s, 0)
    s_big = jnp.where(small, 1, jnp.where(jnp.isfinite(s), s, jnp.finfo(real).max))
    if sigma is None:
        ratio = _tanh_ratio(s_small)
        sig_big = jnp.tanh(s_big)
    else:
        _, d0 = jax.jvp(sigma, (jnp.zeros_like(s),), (jnp.ones_like(s),))
        # σ'(0) = ∞ (a σ like tanh √s): the output at 0 is 0 whatever the ratio there
        d0 = jnp.where(jnp.isfinite(d0), d0, 0)
        positive = s_small > 0
        s_pos = jnp.where(positive, s_small, 1)  # σ is never differentiated at 0
        ratio = jnp.where(positive, sigma(s_pos) / s_pos, d0)
        sig_big = sigma(s_big)
    # z only where s < 1: elsewhere its bilinear form may overflow, and the cotangent 0
    # of the branch not taken would meet an infinite derivative there (0·∞ = NaN)
    near = ratio[..., None] * bilinear(jnp.where(small[..., None], z, 0))
    far = sig_big[..., None] * bilinear(u)
    return jnp.where(small[..., None], near, far).astype(real)


def lorentz_isotropic(x: Float[Array, "*b n"], phi: Callable | None = None
                      ) -> Float[Array, "*b n"]:
    """Lorentz pseudo-norm form (isotropic paper §5.2): $f(x) = φ(s)\\,x$ with the
    Minkowski quadratic form $s = x^T η x$, η = diag(1, −1, …, −1).

    This is the paper's $f(x_β g^{βγ} x_γ)\\,\\hat x_α$ with the pseudo-norm unit vector
    $\\hat x = x/\\sqrt{|s|}$ and $f(s) = φ(s)\\sqrt{|s|}$; writing it with φ keeps it
    smooth across the light cone $s = 0$. Default $φ(s) = \\tanh(s)/s$ (φ(0) = 1).
    A user φ is taken at the largest finite number of the sign of s where s overflows
    (its limit, for a bounded φ), and the output is the product φ(s)·x, so a φ(s) below
    the dtype's smallest normal number gives 0.
    Equivariant under O(1, n−1): $s$ is invariant and $x \\mapsto Λx$ commutes.
    """
    require_floating(x, "lorentz_isotropic")
    if x.shape[-1] < 2:
        raise ValueError(f"lorentz_isotropic: the last axis must have size >= 2 (one time, "
                         f">= 1 space coordinate), got shape {x.shape}.")
    if phi is not None:
        _check_callable(phi, "phi")
    dtype = x.dtype
    z = x.astype(compute_dtype(dtype))
    m = jax.lax.stop_gradient(jnp.max(jnp.abs(z), axis=-1))
    fi = jnp.finfo(z.dtype)
    _, e = jnp.frexp(m)
    e = jnp.clip(e, int(fi.minexp) + 2, int(fi.maxexp) - 2)
    p = jax.lax.stop_gradient(jnp.ldexp(jnp.ones_like(m), -e))
    ip = jax.lax.stop_gradient(jnp.ldexp(jnp.ones_like(m), e))  # 1/p, exactly
    zs = z * p[..., None]
    ss = zs[..., 0] * zs[..., 0] - jnp.sum(zs[..., 1:] * zs[..., 1:], axis=-1)
    # p and 1/p are normal powers of two but p² may not be: never form it (XLA rewrites
    # (a/p)/p as a/(p·p), so multiply by 1/p twice)
    s = (ss * ip) * ip
    finite = jnp.isfinite(s)
    s = jnp.where(finite, s, 0)
    if phi is None:
        # |s| < 1: tanh(s)/s by its series near 0; |s| ≥ 1 (or s beyond the dtype's range):
        # tanh(s)·x/s with x/s = (x p)/(s p²) formed from the scaled values, so that the
        # output x/s stays exact when s overflows
        small = finite & (jnp.abs(s) < 1)
        near = _tanh_ratio(jnp.where(small, s, 0))[..., None] * z
        ss_safe = jnp.where(small, 1, ss)
        s_far = jnp.where(small, 1, jnp.where(finite, s, jnp.sign(ss) * fi.max))
        far = jnp.tanh(s_far)[..., None] * ((zs / ss_safe[..., None]) * p[..., None])
        return jnp.where(small[..., None], near, far).astype(dtype)
    # where s overflows, φ is taken at the largest finite number of the sign of s: a
    # bounded φ gives its limit there (φ(±∞) itself is NaN for many φ written as formulas)
    val = phi(jnp.where(finite, s, jnp.sign(ss) * fi.max)).astype(z.dtype)
    return (val[..., None] * z).astype(dtype)
