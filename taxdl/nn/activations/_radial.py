"""The radial kernel behind every isotropic activation $f(x) = σ(\\|x\\|)\\,\\hat x$.

A *profile* describes σ on $r \\in [0, \\infty]$ by three arrays `(A, B, dσ)` with
$σ(r) = A(r)\\,r + B(r)$ and $dσ = σ'(r)$, each evaluated stably (no overflow, no 0/0,
$B(0) = 0$). Then

$$f(x) = A\\,x + B\\,\\hat x, \\qquad
  J_f = g\\,I + (σ' - g)\\,\\hat x\\hat x^T,\\quad g = σ(r)/r,$$

so bounded profiles (tanh: $A = 0$, $B = \\tanh r$ for large $r$) give an exact unit
vector at any magnitude and unbounded ones ($σ = r - R_0$: $A = 1$, $B = -R_0$) give
$x - R_0\\hat x$ without forming $r$. The norm comes from
[`scaled_norm`][taxdl.nn._numerics.scaled_norm] (one pass in the common case). The
derivative rule is written out (`jax.custom_jvp`): tangents are
$g\\,dx + (σ' - g)(\\hat x\\cdot dx)\\,\\hat x$, whose transpose is one reduction and one
elementwise pass, and which is finite at the zero vector ($J = σ'(0) I$).
"""

import functools as ft
import math
import types
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Inexact

from .._numerics import (compute_dtype, infinite_signs, inverse_or_zero, quotient_or_zero,
                         scaled_norm, unit_and_norm)

Profile = Callable[[Array], tuple[Array, Array, Array]]


@jax.custom_jvp
def _square_of_norm(x, r):
    """$s = r^2 = \\|x\\|^2$ per row, from the norm r already computed (no pass over x),
    with the derivative $ds = 2\\,x\\cdot dx$ written out. Differentiating $r\\cdot r$
    instead would go through the norm's derivative, which `sqrt_or_zero` cuts to 0 at the
    origin (so third derivatives there would miss $d^2 s = 2\\|dx\\|^2$), and through the
    max-scaled norm of tiny rows. Only second and higher derivatives of f reach it."""
    return r * r


@_square_of_norm.defjvp
def _square_of_norm_jvp(primals, tangents):
    (x, r), (dx, _) = primals, tangents
    if jnp.iscomplexobj(x):
        dot = jnp.sum(jnp.real(jnp.conj(x) * dx), axis=-1)
    else:
        dot = jnp.sum(x * dx, axis=-1)
    return r * r, (2 * dot).astype(r.dtype)


def _coefficients(r, p, rs, u, profile: Profile, derivative: bool, x=None):
    """Per-row coefficients: the value is $(p x)\\,q$ with $q = A/p + B/r_s$ (and `u`,
    see `_value`); the derivative `_tangent` uses $g = σ/r$, $c = σ' - g$ and $ρ = 1/r$
    (underflowing only for r ≳ 1e38 in float32, where the Jacobian is ≈ 0 anyway), or,
    for rows near the origin where the profile has a `near_form`, g and κ = c/r² from it
    and ρ = 1. Both give the same tangent; the second is what keeps the tangent's own
    derivatives (second derivatives of f) accurate there (see `near_form`)."""
    a, b, dsig = profile(r)
    inv = inverse_or_zero(rs)
    q = a / p + b * inv
    if not derivative:
        return p, q, u
    near = near_form(profile)
    if near is not None:
        near_g, near_kappa, limit = near
        inside = r * r < limit
        # the general form is evaluated at r = 1 in the rows the near form takes (a
        # select of its inputs, not only of its outputs): its derivatives there can be
        # infinite (1/r's is −1/r², tanh r/r's underflows r² in float32 below r ≈ 1e-19),
        # and a zero cotangent times ∞ would be NaN in reverse-over-reverse mode
        a, b, dsig = profile(jnp.where(inside, 1, r))
        inv_r = jnp.where(inside, 1, p) * inverse_or_zero(jnp.where(inside, 1, rs))
    else:
        inv_r = p * inv
    g = a + b * inv_r
    # σ' − g as (σ' − A) − B/r: for σ = r − R₀ far out, σ' − A = 0 exactly and c = R₀/r,
    # where σ' − (A + B/r) = 1 − (1 − R₀/r) would cancel to relative error ε r/R₀
    c, rho = (dsig - a) - b * inv_r, inv_r
    if near is not None:
        s = jnp.where(inside, _square_of_norm(x, r), 0)
        # selects of the coefficients themselves, not of tangents made from them
        g = jnp.where(inside, near_g(s), g)
        c = jnp.where(inside, near_kappa(s), c)
        rho = jnp.where(inside, 1, rho)
    return p, q, u, g, c, rho


def _value(x, p, q, u, profile: Profile, exceptional: bool = True):
    """$(p x)\\,q$, and at infinite components of x (r = ∞) the limit
    $A(∞)\\,x + B(∞)\\,\\hat d$ with $\\hat d = d\\,u$ the unit vector of their signs
    (`infinite_signs`): ±∞ where σ grows linearly, σ(∞) d̂ where it is bounded (the
    other components of such a row are $A(∞) x_i$, as $(p x) q$ gives them; a row that
    also holds a NaN is NaN throughout). The selects join the pass that writes y (no
    extra pass over x), and are left out where x has no infinite components
    (`exceptional` False, the common branch of `scaled_norm`), where they would cost
    4–8% of the forward."""
    y = (x * p[..., None].astype(x.dtype)) * q[..., None].astype(x.dtype)
    if getattr(profile, "func", None) is callable_profile:   # only a user σ overflows
        over = jnp.isinf(q)
        y = _zeros_stay_zero(y, x, over)
        if not jnp.iscomplexobj(x):
            # a component p xᵢ that underflows to 0 (xᵢ ≠ 0) would give 0·∞ = NaN: its
            # value σ(r) xᵢ/r is beyond what σ(r) = ±∞ lets us form, and is ±∞ like the
            # row's other nonzero components
            y = jnp.where(over[..., None] & (x != 0), jnp.sign(x) * q[..., None].astype(
                x.dtype), y)
    if not exceptional:
        return y
    with jax.ensure_compile_time_eval():  # σ's limit, a constant unless σ holds tracers
        a_inf, b_inf, _ = profile(jnp.asarray(jnp.inf, jnp.real(x).dtype))
        try:
            grows = bool(a_inf != 0)
        except jax.errors.ConcretizationTypeError:
            grows = False  # not known at trace time: the select below decides
    if grows and not jnp.iscomplexobj(x):
        return y  # q = A(∞)/p there: (p x) q is already ±∞
    signs = infinite_signs(x) * (b_inf * u)[..., None].astype(x.dtype)
    if jnp.iscomplexobj(x):  # A(∞)·x part by part: a complex product would give ∞·0
        linear = jax.lax.complex(a_inf * jnp.real(x), a_inf * jnp.imag(x))
    else:
        linear = a_inf * x
    # (a row that also holds a NaN has q = NaN and stays NaN throughout)
    limit = jnp.isinf(x) & ~jnp.isnan(q)[..., None]
    return jnp.where(limit, jnp.where(a_inf != 0, linear, signs), y)


def _norm_and_value(x, profile: Profile, derivative: bool):
    """y = f(x) and the per-row coefficients, inside `scaled_norm`'s branches."""
    def then(r, p, rs, u, exceptional):
        p, q, u, *rest = _coefficients(r, p, rs, u, profile, derivative, x)
        return _value(x, p, q, u, profile, exceptional), *rest

    return scaled_norm(x, then)


@ft.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _radial(x, profile: Profile):
    return _norm_and_value(x, profile, derivative=False)[0]


@_radial.defjvp
def _radial_jvp(profile, primals, tangents):
    (x,), (dx,) = primals, tangents
    y, g, k, inv_r = _norm_and_value(x, profile, derivative=True)
    return y, _tangent(x, dx, g, k, inv_r)


def _tangent(x, dx, g, c, rho):
    """The tangent g dx + c (x̂·dx) x̂ with x̂ written as x ρ: ρ = 1/r and c = σ' − g, or
    near the origin ρ = 1 and c = κ = (σ' − g)/r² (see `_coefficients`)."""
    # x̂·dx = Σ (x/r) dx and the rank-one term (k x̂·dx) x̂, with x̂ = x/r written
    # elementwise (never materialised), in the same shape as a plain autodiff graph, so
    # that XLA computes y and the cotangent in one pass. Every per-row factor is O(1) or
    # O(1/r): a transpose that multiplied k by 1/r first would form k/r ≈ 1/r², which
    # float32 flushes to 0 above r ≈ 1e19, losing the radial term. (A row with an
    # infinite component gets NaN derivatives: guarding x here costs that pass.)
    xh = x * rho[..., None].astype(x.dtype)
    if jnp.iscomplexobj(x):
        dot = jnp.sum(jnp.real(jnp.conj(xh) * dx), axis=-1)
    else:
        dot = jnp.sum(xh * dx, axis=-1)
    return g[..., None].astype(x.dtype) * dx + xh * (c * dot)[..., None].astype(x.dtype)


def near_form(profile: Profile):
    """`(g, κ, limit)` for a profile whose σ is, for r² = s < `limit`, smooth at the
    origin with g = σ(r)/r and κ = (σ'(r) − g)/r² written as functions of s (power
    series, or constants where σ is linear), or None. The derivative rule uses them for
    rows with s < limit: its tangent g dx + k (x̂·dx) x̂ (k = σ' − g) is then
    g dx + κ (x·dx) x, and differentiating that again (Hessians) takes derivatives of
    g(s) and κ(s) through s = Σ xᵢ², which are accurate. Differentiating the general form
    instead differentiates σ' − g, whose terms of size 1 cancel to k ≈ κ(0) r² (absolute
    error ε, so relative error ε/r² in the second derivatives, whose entries are O(r)),
    and 1/r, whose derivative −1/r² overflows in float32 for r ≲ 1e-19."""
    fn = getattr(profile, "func", profile)
    params = getattr(profile, "keywords", {})
    make = _NEAR.get(fn)
    return None if make is None else make(**params)


NEAR_LIMIT = 0.01
"""Near forms are used for r² below this (r < 0.1): beyond it the general form's relative
error in second derivatives, ~ε/r², is at most 100ε."""


def _series(coefficients: tuple[float, ...]) -> Callable:
    """s ↦ Σ c_k s^k for s < NEAR_LIMIT by Horner's rule, with the terms the dtype
    resolves there (those above ε/10 of the largest)."""
    def f(s):
        eps = float(jnp.finfo(s.dtype).eps)
        top = max(abs(c) * NEAR_LIMIT ** k for k, c in enumerate(coefficients))
        used = list(coefficients)
        while len(used) > 1 and abs(used[-1]) * NEAR_LIMIT ** (len(used) - 1) < eps / 10 * top:
            used.pop()
        acc = jnp.full_like(s, used[-1])
        for c in reversed(used[:-1]):
            acc = acc * s + c
        return acc

    return f


def _constant(value: float) -> Callable:
    return lambda s: jnp.full_like(s, value)


def _bernoulli(count: int) -> list:
    """B_0 … B_{count−1} as fractions (B_1 = −1/2)."""
    from fractions import Fraction

    b = [Fraction(1)]
    for m in range(1, count):
        b.append(-sum(math.comb(m + 1, j) * b[j] for j in range(m)) / (m + 1))
    return b


@ft.lru_cache(maxsize=None)
def _tanh_near() -> tuple:
    """tanh r = Σ_{n≥1} T_n r^{2n−1}, T_n = 2^{2n}(2^{2n} − 1) B_{2n}/(2n)!: g(s) =
    Σ T_n s^{n−1}, σ' = Σ (2n − 1) T_n s^{n−1}, κ(s) = Σ_{n≥2} (2n − 2) T_n s^{n−2}
    (their terms shrink by (2r/π)² ≤ 0.004 at s < NEAR_LIMIT)."""
    b = _bernoulli(24)
    t = [float(2 ** (2 * n) * (2 ** (2 * n) - 1) * b[2 * n] / math.factorial(2 * n))
         for n in range(1, 12)]
    g = tuple(t[:10])
    kappa = tuple((2 * n - 2) * t[n - 1] for n in range(2, 12))
    return _series(g), _series(kappa), NEAR_LIMIT


def _sinusoid_near(lam: float) -> tuple:
    """σ = r + λ sin r: g(s) = 1 + λ Σ_{n≥0} (−s)^n/(2n+1)!, κ(s) = λ Σ_{n≥1} (−1)^n 2n
    s^{n−1}/(2n+1)!."""
    g = tuple([1.0 + lam] + [lam * (-1) ** n / math.factorial(2 * n + 1)
                             for n in range(1, 8)])
    kappa = tuple(lam * (-1) ** n * 2 * n / math.factorial(2 * n + 1) for n in range(1, 9))
    return _series(g), _series(kappa), NEAR_LIMIT


def _linear_near(slope: float, radius: float) -> tuple | None:
    """σ(r) = slope·r for r < `radius`: g = slope, κ = 0 (used up to NEAR_LIMIT)."""
    if radius <= 0:
        return None
    return _constant(slope), _constant(0.0), min(radius * radius, NEAR_LIMIT)


def _relu_near(r0: float, r_max: float | None) -> tuple | None:
    if r0 > 0:
        return _linear_near(0.0, r0)  # σ = 0 below R₀
    return _linear_near(1.0, math.inf if r_max is None else r_max)  # the identity


def _leaky_near(alpha: float, r0: float) -> tuple | None:
    """σ = αr below R₀ (the hard threshold is α = 0), the identity when R₀ = 0."""
    return _linear_near(alpha, r0) if r0 > 0 else _linear_near(1.0, math.inf)


def _threshold_near(r0: float) -> tuple | None:
    return _leaky_near(0.0, r0)


def _soft_leaky_near(alpha: float, r0: float, delta: float) -> tuple | None:
    return _linear_near(alpha, r0 - delta)


def bound(fn: Callable, **params) -> Callable:
    """`functools.partial(fn, **params)`, one object per distinct `(fn, params)`: a
    `partial` compares by identity, so a compiled kernel keyed on a fresh one would be
    compiled again at every call. With unhashable `params` (a σ holding arrays), a fresh
    `partial` (the kernel is then compiled at every call)."""
    try:
        return _bound(fn, **params)
    except TypeError:
        return ft.partial(fn, **params)


@ft.lru_cache(maxsize=512)
def _bound(fn: Callable, **params) -> Callable:
    return ft.partial(fn, **params)


def radial(x: Inexact[Array, "*b n"], profile: Profile) -> Inexact[Array, "*b n"]:
    """Apply $x \\mapsto σ(\\|x\\|)\\hat x$ along the last axis, σ given by `profile`.

    Half precisions are computed in float32; the output has the input's dtype. `profile`
    must be hashable and should compare equal when its parameters do (a module-level
    function, or one bound by `bound`): the kernel is compiled once per profile, shape and
    dtype, so that calls outside `jax.jit` cost one dispatch.

    A profile holding arrays (a σ that is an Equinox module with parameters, a
    `functools.partial` over arrays or a closure over them; see `holds_arrays`) is
    differentiated by JAX itself instead, through
    $A(r)\\,x + B(r)\\,\\hat x$ with an overflow-free norm, so that σ's arrays receive
    their gradients (the written-out rule is for σ fixed).
    """
    if holds_arrays(profile):
        return _radial_autodiff(x, profile)
    return _radial_compiled(x, profile)


def holds_arrays(fn) -> bool:
    """Whether `fn` holds JAX or NumPy arrays (or tracers of them) anywhere it can reach
    them at call time: as leaves of a pytree (an Equinox module), in a `functools.partial`'s
    arguments, a function's closure cells and defaults, or a bound method's instance,
    and in the functions those hold. A σ written as `lambda r: self.a * jnp.tanh(r)`
    inside a module holds the module's parameter `a` in its closure: treated as fixed, it
    would get no gradient."""
    return _holds_arrays(fn, set())


def _holds_arrays(obj, seen: set) -> bool:
    if id(obj) in seen:
        return False
    seen.add(id(obj))
    if isinstance(obj, ft.partial):
        parts = (obj.func, *obj.args, *obj.keywords.values())
    elif isinstance(obj, types.MethodType):
        parts = (obj.__func__, obj.__self__)
    elif isinstance(obj, types.FunctionType):
        cells = []
        for cell in obj.__closure__ or ():
            try:
                cells.append(cell.cell_contents)
            except ValueError:  # a cell not yet filled
                pass
        parts = (*cells, *(obj.__defaults__ or ()), *(obj.__kwdefaults__ or {}).values())
    else:
        leaves = jax.tree_util.tree_leaves(obj)
        if any(eqx.is_array(leaf) for leaf in leaves):
            return True
        # functions and containers of them reached through a pytree's leaves (a module's
        # callable field, a tuple of functions in a closure)
        parts = tuple(leaf for leaf in leaves if leaf is not obj and (
            isinstance(leaf, (ft.partial, types.FunctionType, types.MethodType))))
        if leaves == [obj] and callable(obj) and hasattr(obj, "__dict__"):
            parts = tuple(vars(obj).values())  # a callable object that is not a pytree
    return any(_holds_arrays(part, seen) for part in parts)


def _work_dtype(x):
    """The dtype the kernel computes `x` in (see `compute_dtype`), complex for complex x."""
    work = compute_dtype(x.dtype)
    if jnp.iscomplexobj(x):
        return jnp.complex128 if work == jnp.float64 else jnp.complex64
    return work


def _radial_autodiff(x, profile: Profile):
    z = x.astype(_work_dtype(x))
    unit, r = unit_and_norm(z)
    a, b, _ = profile(r)
    y = a[..., None].astype(z.dtype) * z + b[..., None].astype(z.dtype) * unit
    return _zeros_stay_zero(y, z, jnp.isinf(a) | jnp.isinf(b)).astype(x.dtype)


def _zeros_stay_zero(y, x, overflowed):
    """`y` with 0 at the components where x is 0 in rows whose coefficient `overflowed`
    (a user σ such as eʳ beyond the dtype's range), which would otherwise be ∞·0 = NaN."""
    return jnp.where(overflowed[..., None] & (x == 0), jnp.zeros_like(y), y)


@ft.partial(jax.jit, static_argnums=1)
def _radial_compiled(x, profile: Profile):
    return _radial(x.astype(_work_dtype(x)), profile).astype(x.dtype)


# ============================================================================ profiles
def _safe(r, positive):
    return jnp.where(positive, r, 1)


def tanh_profile(r):
    """σ(r) = tanh r (isotropic paper eq 15)."""
    inner = r < 1
    rs = _safe(r, r > 0)
    t = jnp.tanh(r)
    a = jnp.where(inner, jnp.where(r > 0, t / rs, 1), 0)
    b = jnp.where(inner, 0, t)
    return a, b, 1 - t * t


def relu_profile(r, r0: float, r_max: float | None):
    """σ(r) = min(max(r − R₀, 0), R_∞) (eqs 16–17; R_∞ = ∞ when `r_max` is None)."""
    zero = jnp.zeros_like(r)
    one = jnp.ones_like(r)
    above = r >= r0
    a, b, d = jnp.where(above, one, zero), jnp.where(above, -r0, zero), jnp.where(above, one, zero)
    if r_max is not None:
        sat = r >= r0 + r_max
        a = jnp.where(sat, zero, a)
        b = jnp.where(sat, r_max, b)
        d = jnp.where(sat, zero, d)
    return a, b, d


def threshold_profile(r, r0: float):
    """σ(r) = r for r ≥ R₀, else 0 (eq 18)."""
    above = (r >= r0).astype(r.dtype)
    return above, jnp.zeros_like(r), above


def leaky_profile(r, alpha: float, r0: float):
    """σ(r) = αr for r < R₀, r − (1 − α)R₀ otherwise (eq 19)."""
    above = r >= r0
    a = jnp.where(above, 1, alpha).astype(r.dtype)
    b = jnp.where(above, -(1 - alpha) * r0, 0).astype(r.dtype)
    return a, b, a


def blend(t):
    """The φ-blend of eq 20 with φ(t) = t²: $w(t) = t^2 / (t^2 + (1 - t)^2)$ on [0, 1]
    (0 below, 1 above): monotone, $w(0) = 0$, $w(1) = 1$, $w'(0) = w'(1) = 0$."""
    t = jnp.clip(t, 0, 1)
    return t * t / (t * t + (1 - t) * (1 - t))


BLEND_SERIES_BELOW = 0.35  # blend_integral's switch from its power series to the closed form


def _blend_series_coefficients(eps: float) -> tuple[float, ...]:
    """The coefficients a_k of W(t) = t³ Σ_k a_k t^k, enough of them for relative error
    below eps/10 at t < `BLEND_SERIES_BELOW`: w(t) = t²/(1 − 2t + 2t²) = t² Σ c_k t^k with
    c_0 = 1, c_1 = 2, c_k = 2c_{k−1} − 2c_{k−2} (|c_k| ≤ 2^{k/2+1}), so a_k = c_k/(k + 3)
    and the terms shrink at least as (√2 t)^k."""
    count = math.ceil(math.log(eps / 10) / math.log(math.sqrt(2) * BLEND_SERIES_BELOW))
    c = [1.0, 2.0]
    while len(c) < count:
        c.append(2 * c[-1] - 2 * c[-2])
    return tuple(ck / (k + 3) for k, ck in enumerate(c[:count]))


def blend_integral(t):
    """$W(t) = \\int_0^t w = t/2 + \\tfrac14 \\log(2t^2 - 2t + 1)$ on [0, 1] (closed form of
    the φ(t) = t² blend), continued by $W(1) + (t - 1)$ above and 0 below.

    W(t) ≈ t³/3 near 0, where the closed form's two terms of size t/2 cancel (its rounding
    error ~ε t exceeds W for t ≲ ε^{1/2}, giving negative values): below t = 0.35 W is
    its power series (`_blend_series_coefficients`), where the closed form's error would
    be above 8ε relative. Both are within ~9ε relative of W on [0, 1]."""
    tc = jnp.clip(t, 0, 1)
    closed = tc / 2 + 0.25 * jnp.log(2 * tc * tc - 2 * tc + 1)
    coefficients = _blend_series_coefficients(float(jnp.finfo(tc.dtype).eps))
    ts = jnp.minimum(tc, BLEND_SERIES_BELOW)
    acc = jnp.full_like(ts, coefficients[-1])
    for a in reversed(coefficients[:-1]):
        acc = acc * ts + a
    series = acc * ts * ts * ts
    inside = jnp.where(tc < BLEND_SERIES_BELOW, series, closed)
    return jnp.where(t > 1, 0.5 + (t - 1), inside)


def soft_leaky_profile(r, alpha: float, r0: float, delta: float):
    """σ with σ' = α + (1 − α) w((r − R₀ + δ)/(2δ)), σ(0) = 0 (eq 20, α ∈ [0, 1)).

    Closed form: σ(r) = αr for r ≤ R₀ − δ, αr + (1 − α) 2δ W(t) in the window and
    r − (1 − α)R₀ beyond it.
    """
    t = (r - (r0 - delta)) / (2 * delta)
    w = jnp.where(t <= 0, 0, jnp.where(t >= 1, 1, blend(t))).astype(r.dtype)
    beyond = t >= 1
    a = jnp.where(beyond, 1, alpha).astype(r.dtype)
    window = ((1 - alpha) * 2 * delta * blend_integral(jnp.where(t > 0, t, 0))).astype(r.dtype)
    b = jnp.where(beyond, -(1 - alpha) * r0, jnp.where(t > 0, window, 0)).astype(r.dtype)
    return a, b, alpha + (1 - alpha) * w


def sinusoid_profile(r, lam: float):
    """σ(r) = r + λ sin r (eq 21), with σ(r)/r = (1 + λ) + λ (sin r/r − 1) for r < 1 and
    σ'(r) = (1 + λ) − 2λ sin²(r/2), where 1 + λ is exact (a Python float) and
    sin r/r − 1 is its series (`_sinc_minus_one`): for λ near −1 the plain 1 + λ sin r/r
    and 1 + λ cos r cancel (σ(r) ≈ r³/6 at λ = −1, which float32 would give with ~35%
    error at r = 1e-3)."""
    inner = r < 1
    finite = jnp.isfinite(r)
    s = jnp.where(finite, jnp.sin(jnp.where(finite, r, 0)), 0)
    one_plus = 1.0 + lam
    a = jnp.where(inner, one_plus + lam * _sinc_minus_one(jnp.where(inner, r, 0)), 1)
    b = jnp.where(inner, 0, lam * s)
    half = jnp.where(finite, jnp.sin(jnp.where(finite, r, 0) / 2), 0)
    d = jnp.where(finite, one_plus - (2 * lam) * (half * half), one_plus - lam)
    return a.astype(r.dtype), b.astype(r.dtype), d.astype(r.dtype)


def _sinc_minus_one(r):
    """sin(r)/r − 1 for |r| < 1, by its series −t/3! + t²/5! − … in t = r², nested as
    −t/6 (1 − t/(4·5) (1 − t/(6·7) (…))), to float64 accuracy (terms up to t⁹/19!; the
    first one left out is below 1e-19 of the sum)."""
    t = r * r
    acc = jnp.ones_like(t)
    for k in range(8, 0, -1):  # term k+1 is term k times −t/((2k+2)(2k+3))
        acc = 1 - t / ((2 * k + 2) * (2 * k + 3)) * acc
    return -t / 6 * acc


def squash_profile(r):
    """σ(r) = r²/(1 + r²), the capsule squashing function (Sabour et al. 2017, eq 1)."""
    inner = r < 1
    rs = _safe(r, r > 0)
    inv = 1 / rs
    a = jnp.where(inner, r / (1 + r * r), 0)
    b = jnp.where(inner, 0, 1 / (1 + inv * inv))
    d = jnp.where(inner, 2 * r / ((1 + r * r) * (1 + r * r)),
                  2 * inv / ((rs + inv) * (rs + inv)))
    return a, b, d


def _largest_root(dtype) -> float:
    """The largest t of `dtype` whose square t·t is finite in `dtype`."""
    t = np.sqrt(np.asarray(jnp.finfo(dtype).max, dtype))
    with np.errstate(over="ignore"):
        while not np.isfinite(t * t):
            t = np.nextafter(t, np.asarray(0, dtype))
    return float(t)


def callable_profile(r, sigma: Callable, of_square: bool = False):
    """A user radial function σ (σ(0) = 0): A = σ(r)/r, B = 0 for r < 1 and wherever
    |σ(r)/r| ≥ 2⁻⁶⁰; A = 0, B = σ(r) elsewhere (so that a bounded σ gives σ(r) x̂ at any
    magnitude, where σ(r)/r would be flushed to 0, and a σ growing about linearly gives
    (σ(r)/r) x, which stays right where ‖x‖ overflows). At r = 0, A and σ' are the slope
    σ'(0⁺), taken as σ(h)/h at h = the dtype's ε (exact to O(ε) for smooth σ, and finite
    where autodiff at 0 is not, e.g. σ(r) = tanh √(r²)). Where ‖x‖ overflows (r = ∞) σ
    and σ(r)/r are evaluated at the dtype's largest finite number: for a bounded σ that
    is its limit to rounding (σ(∞) itself is NaN for many σ written as formulas, e.g.
    r/(1 + r)), and for σ(r) = c r it gives (σ(r)/r) x = c x exactly. Where σ(r) itself
    overflows within 2²⁴ of the largest float and σ grows linearly there, σ(r)/r and σ'
    are taken at 2⁻²⁴ r (so that f(x) = 2x for σ(r) = 2r is right wherever 2x is
    representable); a σ growing faster gives ±∞ there, as its true value. With `of_square`,
    `sigma` is a function of r² (the U(n) form), evaluated at r up to the square root of
    the largest finite number (beyond which r² overflows), and "within 2²⁴" is of that
    root: σ(s) = c√s is then c x wherever c x is representable."""
    ones = jnp.ones_like(r)
    top = float(jnp.finfo(r.dtype).max)
    limit = _largest_root(r.dtype) if of_square else top  # the largest r σ can be taken at
    finite = jnp.minimum(r, limit)
    radial = (lambda t: sigma(t * t)) if of_square else sigma
    s, ds = jax.jvp(radial, (finite,), (ones,))
    # where σ(r) itself overflows near the largest float (σ(r) = 2r), its slope is taken
    # 2⁻²⁴ r further in if σ grows linearly there (equal slopes at 2⁻²⁴ r and 2⁻³² r);
    # otherwise (σ(r) = r², eʳ) the true result overflows too and stays ±∞
    inward = finite * 2.0 ** -24
    s_in, ds_in = jax.jvp(radial, (inward,), (ones,))
    s_deep = radial(inward * 2.0 ** -8)
    linear_tail = jnp.abs(s_in - s_deep * 2.0 ** 8) <= 2.0 ** -10 * jnp.abs(s_in)
    overflows = jnp.isinf(s) & linear_tail & (finite >= limit * 2.0 ** -24)
    ds = jnp.where(overflows, ds_in, ds)
    h = jnp.full_like(r, float(jnp.finfo(r.dtype).eps))
    d0 = radial(h) / h
    positive = r > 0
    # (quotients whose derivatives stay finite for tiny r: this function is
    # differentiated by JAX when σ holds arrays, and a discarded branch's ∞ would be NaN)
    slope = jnp.where(overflows, quotient_or_zero(s_in, inward),
                      jnp.where(positive, quotient_or_zero(s, finite), d0))
    linear = (r < 1) | (jnp.abs(slope) >= 2.0 ** -60)
    a = jnp.where(linear, slope, 0)
    b = jnp.where(linear, 0, s)
    ds = jnp.where(positive, ds, d0)
    return a.astype(r.dtype), b.astype(r.dtype), ds.astype(r.dtype)


_NEAR = {tanh_profile: _tanh_near, sinusoid_profile: _sinusoid_near,
         relu_profile: _relu_near, threshold_profile: _threshold_near,
         leaky_profile: _leaky_near, soft_leaky_profile: _soft_leaky_near}
"""The profiles with a near-origin form (`near_form`), each with a maker taking the
profile's parameters."""
