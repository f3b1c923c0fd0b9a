"""Pure operations (isotropic paper App. A.4, App. C and App. D).

Binary operations take two vectors of the same dimension on their last axis and broadcast
over leading axes. Every function is overflow-safe where a norm or a dot product is
involved (the inputs are rescaled by their largest entry, under which the formulas are
invariant) and free of NaN values and gradients at the zero vector and at x·n = 0.
"""

import functools as ft
import math

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ..._types import check_real
from .._numerics import (_power_of_two_scale, all_rows, compute_dtype, exp2_int, inverse_or_zero,
                         materialise, power_of_two_near, require_floating, sqrt_or_zero)
from ..activations._functional import isotropic_tanh
from ..normalisers._checks import check_fits


TRUSTED = 2.0 ** 40
"""Squared norms in [1/TRUSTED, TRUSTED] are summed as they are (see `_pair_sums`)."""


def _pair_sums(x, n):
    """Per-row powers of two $p_x$, $p_n$ and the sums $x'\\cdot n'$, $\\|n'\\|^2$,
    $\\|x'\\|^2$ of $x' = p_x x$, $n' = p_n n$ (each with a last axis of 1), such that
    no sum overflows or loses a term to underflow and every later factor (down to
    $1/(x'\\cdot n')$ at the orthogonality threshold) stays finite.

    A vector whose plain squared norm is in [2⁻⁴⁰, 2⁴⁰] keeps $p = 1$. Only when some row
    of x or n is outside (or zero) are the batch's largest magnitudes found and the sums
    taken again (a whole-batch `lax.cond`, so the common case makes no pass beyond the
    three sums), those rows being divided by a power of two near their largest magnitude
    (a power of two, as XLA's CPU backend divides by multiplying with a reciprocal that is
    flushed to 0 beyond 2¹²⁶ in float32). A row's result does not depend on the others."""
    xx = jnp.sum(x * x, axis=-1, keepdims=True)
    nn = jnp.sum(n * n, axis=-1, keepdims=True)
    d = jnp.sum(x * n, axis=-1, keepdims=True)

    def trusted(v):
        return ((v >= 1 / TRUSTED) & (v <= TRUSTED)) | jnp.isnan(v)

    def fast(x, n, d, nn, xx):
        return jnp.ones_like(xx), jnp.ones_like(nn), d, nn, xx

    def rescue(x, n, d, nn, xx):
        ok_x, ok_n = trusted(xx), trusted(nn)
        px, pn = (jnp.where(ok, 1, _power_of_two_scale(
            jax.lax.stop_gradient(jnp.max(jnp.abs(a), axis=-1, keepdims=True))))
            for a, ok in ((x, ok_x), (n, ok_n)))
        xs, ns = x * px, n * pn
        # trusted rows keep the sums of the first pass bit for bit
        return (px, pn, jnp.where(ok_x & ok_n, d, jnp.sum(xs * ns, axis=-1, keepdims=True)),
                jnp.where(ok_n, nn, jnp.sum(ns * ns, axis=-1, keepdims=True)),
                jnp.where(ok_x, xx, jnp.sum(xs * xs, axis=-1, keepdims=True)))

    if x.size == 0 or n.size == 0:
        return fast(x, n, d, nn, xx)
    return jax.lax.cond(all_rows(trusted(xx)) & all_rows(trusted(nn)), fast, rescue,
                        x, n, d, nn, xx)


def _ray_terms(x, n, side: str):
    """The pieces of eq 55 (`side="min"`) or eq 56 (`"max"`) from `_pair_sums`: with
    $x' = p_x x$, $n' = p_n n$ and $q = \\|n'\\|^2/(x'\\cdot n')$, a point that moves
    goes to $\\frac{\\|n\\|^2}{x\\cdot n}x = q\\,x'/p_n$. A dot product below
    $\\sqrt{\\text{tiny}}\\,\\|x'\\|\\|n'\\|$ — a cosine far below its own rounding error —
    counts as 0 (the identity case), which keeps q and $1/(x'\\cdot n')$ finite.
    Returns (q, x', n', x'·n', ‖n'‖², p_x, p_n, moves)."""
    px, pn, d, nn, xx = _pair_sums(x, n)
    orthogonal = jnp.abs(d) <= math.sqrt(float(jnp.finfo(d.dtype).tiny)) * (
        jnp.sqrt(xx) * jnp.sqrt(nn))
    # x·n ≷ ‖n‖² as x'·n' ≷ (p_x/p_n)‖n'‖²; p_x/p_n is 0 or ∞ only where the magnitudes
    # of x and n differ by more than the dtype's range, and the comparison is still right
    bound = (px / pn) * nn
    if side == "min":   # beyond the hyperplane: moved onto it
        moves = ~orthogonal & (d > 0) & (d > bound)
    else:               # on the origin's side: mapped onto it
        moves = ~orthogonal & (d < bound)
    # a row whose x·n is NaN (x or n holds a NaN, or ∞ − ∞) takes the moving formula,
    # which is NaN throughout, instead of passing x through as if it were on the kept side
    moves = moves | jnp.isnan(d)
    return _safe_ratio(nn, d, moves), x * px, n * pn, d, nn, px, pn, moves


@ft.partial(jax.custom_jvp, nondiff_argnums=(2,))
def _ray_map(x, n, side: str):
    """Eq 55 or 56 for x and n of one real dtype: $q\\,x'$ times the power of two
    $1/p_n$ last, so that the result overflows (to ±∞) only if the true one does."""
    q, xs, _, _, _, _, pn, moves = _ray_terms(x, n, side)
    return _ray_value(x, q * xs, pn, moves)


def _ray_value(x, qx, pn, moves):
    """$q\\,x'$ (given as `qx`) times the power of two $1/p_n$ where the point moves."""
    return jnp.where(moves, qx * (1 / pn), x)


@_ray_map.defjvp
def _ray_map_jvp(side, primals, tangents):
    """Where the point moves, $y = F x$ with $F = \\|n\\|^2/(x\\cdot n) = (p_x/p_n)\\,q$ and
    $$dy = q\\Big(\\tfrac{2\\,n'\\cdot dn}{\\|n'\\|^2} - \\tfrac{x'\\cdot dn}{x'\\cdot n'}\\Big)x'
    + \\frac{p_x}{p_n}\\,q\\Big(dx - \\tfrac{n'\\cdot dx}{x'\\cdot n'}\\,x'\\Big),$$
    in which no sum of terms of x's or n's size is formed (reverse mode would otherwise
    sum $\\bar y\\cdot x$, which overflows for x within a factor of ~10 of the dtype's
    largest number, where the derivative is O(1)). The part in dn carries no power of
    two; that in dx carries $p_x/p_n = 2^k$, applied as $2^{⌊k/2⌋}$ to dx and the rest
    after the sum, so that neither forward mode nor its transpose (reverse mode)
    multiplies by all of it first. The terms along x' share one per-row factor, so that
    reverse mode makes one reduction, $\\bar y\\cdot q x'$."""
    (x, n), (dx, dn) = primals, tangents
    q, xs, ns, d, nn, px, pn, moves = _ray_terms(x, n, side)
    before, after = _halves(_exponent(px) - _exponent(pn), px.dtype)
    u = dx * before
    inv_d = _safe_ratio(1, d, moves)
    inv_nn = _safe_ratio(1, nn, moves)
    # one per-row scalar multiplies q x', so that reverse mode sums ȳ·(q x') once
    along = (2 * inv_nn) * jnp.sum(ns * dn, axis=-1, keepdims=True) - inv_d * jnp.sum(
        xs * dn, axis=-1, keepdims=True) - after * (inv_d * jnp.sum(ns * u, axis=-1,
                                                                   keepdims=True))
    qx = q * xs
    y = _ray_value(x, qx, pn, moves)
    return y, jnp.where(moves, (q * u) * after, dx) + qx * jnp.where(moves, along, 0)


def _ray_operation(x, n, side: str):
    """Eq 55 or 56 computed in `compute_dtype` (float32 for half precisions, whose
    smallest normal number would put the orthogonality threshold at ~8e-3)."""
    work = compute_dtype(x.dtype)
    return _ray_map(x.astype(work), n.astype(work), side).astype(x.dtype)


def require_pair(x, n, who: str) -> None:
    """Both arguments real floating arrays of one dtype with the same last axis (the
    modules check the same): mixed dtypes would be promoted silently."""
    require_floating(x, who, "x")
    require_floating(n, who, "n")
    if x.shape[-1] != n.shape[-1]:
        raise ValueError(f"{who}: `x` and `n` must have the same last axis, got shapes "
                         f"{x.shape} and {n.shape}.")
    if x.dtype != n.dtype:
        raise TypeError(f"{who}: `x` and `n` must have the same dtype, got {x.dtype} and "
                        f"{n.dtype}.")


def _safe_ratio(num, den, use):
    """num/den where `use`, else 0 (no NaN or inf in the unused branch or its gradient)."""
    return jnp.where(use, num / jnp.where(use, den, 1), 0)


def isotropic_min(x: Float[Array, "*b n"], n: Float[Array, "*#b n"]) -> Float[Array, "*b n"]:
    """Isotropic minimum (isotropic paper eq 55):
    $f(x, n) = \\min(\\operatorname{sign}(x\\cdot n), |n\\cdot n/x\\cdot n|)\\,
    \\operatorname{sign}(x\\cdot n)\\,x$, the identity when $x\\cdot n = 0$.

    Points on the origin side of the hyperplane $x\\cdot n = \\|n\\|^2$ are kept; the others
    are moved along their ray from the origin onto the hyperplane (no refraction). A
    row holding a NaN, or whose x·n is undefined (∞ − ∞), is NaN throughout.

    **Symmetry:** $f(Rx, Rn) = R f(x, n)$ for every $R ∈ O(n)$ (and for scalings).
    """
    require_pair(x, n, "isotropic_min")
    return _ray_operation(x, n, "min")


def isotropic_max(x: Float[Array, "*b n"], n: Float[Array, "*#b n"]) -> Float[Array, "*b n"]:
    """Isotropic maximum (isotropic paper eq 56):
    $f(x, n) = \\max(\\operatorname{sign}(x\\cdot n), |n\\cdot n/x\\cdot n|)\\,
    \\operatorname{sign}(x\\cdot n)\\,x$, the identity when $x\\cdot n = 0$.

    Points beyond the hyperplane $x\\cdot n = \\|n\\|^2$ are kept; the others are mapped along
    the line through the origin onto it, $x \\mapsto \\frac{\\|n\\|^2}{x\\cdot n}x$ (for
    $x\\cdot n < 0$ this reverses the direction, as eq 56 prescribes). The factor grows
    like $1/(x\\cdot n)$ near the plane $x\\cdot n = 0$; the result is ±∞ only where the
    true one is beyond the dtype's largest number, and never NaN for finite x and n. A
    row holding a NaN, or whose x·n is undefined (∞ − ∞), is NaN throughout.

    **Symmetry:** $f(Rx, Rn) = R f(x, n)$ for every $R ∈ O(n)$ (and for scalings).
    """
    require_pair(x, n, "isotropic_max")
    return _ray_operation(x, n, "max")


def isotropic_multiply(x: Float[Array, "*b n"], n: Float[Array, "*#b n"]
                       ) -> Float[Array, "*b n"]:
    """Isotropic multiplication (isotropic paper eq 58):
    $f(x, n) = x + \\big((\\|n\\| - 1)\\,x\\cdot\\hat n\\big)\\hat n$ — the component of x along
    $\\hat n$ is scaled by $\\|n\\|$, the rest is unchanged. At $n = 0$ the direction is
    undefined and $\\hat 0 = 0$ is used (f is the identity there).

    For x along n (n on an axis, or in one dimension) the result is $\\|n\\|x$ to a
    few ulps however small ‖n‖ is. For x nearly parallel to n and ‖n‖ ≪ 1 the result
    is mostly x's small part off n̂, which a relative change ε in n's direction moves by
    ε‖x‖: it is as accurate as that conditioning allows (the exact result for inputs
    within a few ulps of the given ones).

    **Symmetry:** $f(Rx, Rn) = R f(x, n)$ for every $R ∈ O(n)$.
    """
    require_pair(x, n, "isotropic_multiply")
    work = compute_dtype(x.dtype)
    return _multiply(x.astype(work), n.astype(work)).astype(x.dtype)


def _multiply_terms(x, n):
    """n̂, ‖n‖, $s = 1/p_x$, $x' = p_x x$ and $p' = x'\\cdot\\hat n$ from `_pair_sums`, so
    that $x\\cdot\\hat n = s\\,p'$ without a sum of terms of x's size."""
    px, pn, d, nn, _ = _pair_sums(x, n)
    root = sqrt_or_zero(nn)
    inv = inverse_or_zero(root)
    return _unit(n * pn, root, inv), root / pn, 1 / px, x * px, d * inv


def _unit(a, root, inv):
    """n̂ = a/‖a‖ as a·(1/‖a‖), exactly ±1 in a component that holds the whole norm
    (n on an axis), where the product is 1 − ε for most a (XLA's CPU backend also
    divides that way); `_off_n` then leaves nothing along n̂ there. The correction
    is constant to autodiff (n̂'s derivative is that of a/‖a‖)."""
    u = a * inv
    exact = jnp.where(jnp.abs(a) == root, jnp.sign(a) - u, jnp.zeros_like(u))
    return u + jax.lax.stop_gradient(exact)


@jax.custom_jvp
def _multiply(x, n):
    u, r, s, _, ps = _multiply_terms(x, n)
    return _multiply_value(x, u, r, s, ps)


def _multiply_value(x, u, r, s, ps):
    """$x_\\perp + r\\,a$ with $a = (x\\cdot\\hat n)\\hat n$, $x\\cdot\\hat n = s\\,p'$ and
    $x_\\perp = x - a$ (`_off_n`): the component along n̂ scaled by r without forming
    r − 1, which rounds to −1 for ‖n‖ below the dtype's ε and lost that component.
    r·a can overflow where neither factor does: multiplied in last, it gives ±∞ only
    along n̂ (an overflow of the true value), never ∞·0 off it."""
    along = (ps * u) * s
    return _off_n(x, along, u, s) + r * along


def _off_n(v, along, u, s=None):
    """$v_\\perp = v - a$ for a = `along` = (v·n̂)n̂, with what rounding leaves of v's
    component along n̂ taken off again (one Gram–Schmidt step more). A single
    subtraction leaves ~ε‖v‖ along n̂, which swamps the scaled component r a of
    `_multiply_value` once ‖n‖ ≲ ε (x = 0.1 e₁, n = 1e-8 e₁ gave 8.5e-9 e₁ for
    1e-9 e₁ in float32); after the second step ~ε‖v_⊥‖ + ε²‖v‖ is left. With `s`, the
    power of two that scales v's sums into range (x = s x′), the second dot product is
    taken of v_⊥/s, so that it cannot overflow where v's own sums would. For n on an
    axis (n̂ = ±e_k exactly, see `_unit`), and so in one dimension, the second step
    leaves exactly 0 along n̂."""
    once = v - along
    if s is None:
        return once - jnp.sum(once * u, axis=-1, keepdims=True) * u
    left = jnp.sum((once / s) * u, axis=-1, keepdims=True)
    return once - (left * u) * s


@_multiply.defjvp
def _multiply_jvp(primals, tangents):
    """$dy = dx + (r - 1)(\\hat n\\cdot dx)\\hat n + s\\,B(dn)$ (its first terms formed as
    $(dx - (\\hat n\\cdot dx)\\hat n) + r(\\hat n\\cdot dx)\\hat n$, see `_multiply_value`)
    with, for $w = \\hat n\\cdot dn$, $dn_\\perp = dn - w\\hat n$ and $c = 1 - 1/r$
    (r = ‖n‖), $B(dn) = \\big(w p' + c\\,x'\\cdot dn_\\perp\\big)\\hat n + c\\,p'\\,dn_\\perp$:
    the derivative of $(r - 1)(x\\cdot\\hat n)\\hat n$ in n, of size ‖x‖.

    The power of two s is applied as $s_a s_b$ (each about √s), $s_a$ to dn before B and
    $s_b$ after it, so that neither forward mode (scaling at the end) nor reverse mode
    (whose transpose scales at the start) forms a sum of terms of size ‖x‖, which
    overflows for x within a factor of ~10 of the dtype's largest number (NaN where the
    derivative is finite): the last multiplication overflows only if the result does.
    At n = 0, 1/r is taken as 0 (the direction is undefined there)."""
    (x, n), (dx, dn) = primals, tangents
    u, r, s, xs, ps = _multiply_terms(x, n)
    y = _multiply_value(x, u, r, s, ps)
    sa, sb = _halves(_exponent(s), s.dtype)
    dns = dn * sa
    w = jnp.sum(u * dns, axis=-1, keepdims=True)
    # B written on dn's part off n̂: along n̂ it cancels exactly (moving n along n̂ keeps
    # n̂, so B = w p′ n̂ there); formed on all of dn, its c-terms of size ‖x‖/r cancel
    # only after the O(‖x‖) term w p′ has been rounded away (1-D derivative 0 for
    # ‖n‖ = 1e-8 in float32)
    across = _off_n(dns, w * u, u)
    t = jnp.sum(xs * across, axis=-1, keepdims=True)
    c = 1 - inverse_or_zero(r)
    bend = (w * ps + c * t) * u + (c * ps) * across
    # the two uses of n̂·dx are separate sums, written along-term first: reverse mode
    # adds the transposed terms to the cotangent v in reverse order, v − (n̂·v)n̂ before
    # r(n̂·v)n̂ (a shared sum would form (r − 1)(n̂·v), and the other order v + r(n̂·v)n̂,
    # both losing the component along n̂ for r below the dtype's ε)
    along = r * (jnp.sum(u * dx, axis=-1, keepdims=True) * u)
    perp = _off_n(dx, jnp.sum(u * dx, axis=-1, keepdims=True) * u, u)
    dy = perp + along + bend * sb
    return y, dy


def _exponent(p):
    """k with $p = 2^k$, for a power of two p (an exact, normal number)."""
    return jnp.frexp(p)[1] - 1


def _halves(k, dtype):
    """$(2^{⌊k/2⌋}, 2^{k - ⌊k/2⌋})$: a power of two $2^k$ (|k| up to 2 × 126 in float32)
    as two normal factors, to apply one before and one after a sum, so that neither
    forward mode nor its transpose multiplies by all of it first."""
    return exp2_int(k // 2, dtype), exp2_int(k - k // 2, dtype)


def elementwise_min(x: Float[Array, "*b n"], n: Float[Array, "*#b n"]) -> Float[Array, "*b n"]:
    """Elementwise minimum $\\sum_i \\min(x\\cdot\\hat e_i, n\\cdot\\hat e_i)\\hat e_i$
    (isotropic paper eq 53).

    **Symmetry:** Sₙ-equivariant acting on both arguments.
    """
    require_pair(x, n, "elementwise_min")
    return jnp.minimum(x, n)


def elementwise_max(x: Float[Array, "*b n"], n: Float[Array, "*#b n"]) -> Float[Array, "*b n"]:
    """Elementwise maximum (isotropic paper eq 54).

    **Symmetry:** Sₙ-equivariant acting on both arguments.
    """
    require_pair(x, n, "elementwise_max")
    return jnp.maximum(x, n)


def hadamard(x: Float[Array, "*b n"], n: Float[Array, "*#b n"]) -> Float[Array, "*b n"]:
    """Hadamard product $x \\otimes n = \\sum_i (x\\cdot\\hat e_i)(n\\cdot\\hat e_i)\\hat e_i$
    (isotropic paper eq 57): $\\operatorname{diag}(n)\\,x$.

    **Symmetry:** Sₙ-equivariant acting on both arguments.
    """
    require_pair(x, n, "hadamard")
    return x * n


def elementwise_clip(x: Float[Array, "*b n"], bound: float = 1.0) -> Float[Array, "*b n"]:
    """Elementwise clip into the box $[-b, b]^n$ (isotropic paper eq 59): each coordinate
    is clipped separately, which changes the direction of x (refraction).

    **Symmetry:** Bₙ-equivariant.
    """
    require_floating(x, "elementwise_clip", "x")
    bound = check_real(bound, "bound", who="elementwise_clip", low=0, low_open=True)
    return jnp.clip(x, -bound, bound)


def box_clip(x: Float[Array, "*b n"], bound: float = 1.0) -> Float[Array, "*b n"]:
    """Direction-preserving box clip (isotropic paper eq 60): a point outside
    $[-b, b]^n$ is moved along its ray from the origin onto the box,
    $f(x) = \\min(b/\\|x\\|_\\infty, 1)\\,x$.

    Eq 60 writes $\\max_i(x\\cdot\\hat e_i)$; with a negative largest coordinate that would
    flip the vector, so the magnitude $\\max_i|x\\cdot\\hat e_i|$ is used, which is what the
    text describes ("projected back onto the boundary along a line between the origin
    and the original coordinate"). $f(0) = 0$; a row holding a NaN is NaN throughout; a
    row with infinite components is b times the signs of those (the limit of b x/‖x‖∞).

    **Symmetry:** Bₙ-equivariant (the box is not rotation-invariant).
    """
    require_floating(x, "box_clip", "x")
    bound = check_real(bound, "bound", who="box_clip", low=0, low_open=True)
    if x.size == 0:  # nothing to clip (max |x| of no coordinates is undefined)
        return x
    return _box_clip(x, bound)


def _box_clip_given(x, bound: float, m):
    """Eq 60 given the rows' largest magnitudes `m`."""
    clip = (m > bound) | jnp.isnan(m)  # a row holding a NaN is NaN throughout
    # b·(x/m) with x and m first divided by a power of two q near m (exact): the factor
    # b/m itself is subnormal for m ≳ 2¹²⁶ in float32 and flushed to 0 on CPUs
    q = jax.lax.stop_gradient(power_of_two_near(m))
    ratio = _safe_ratio(x / q, m / q, clip)
    # a row with infinite components goes to the limit of x/‖x‖∞: ±1 at those, 0 at the
    # finite ones (∞/∞ would be NaN)
    ratio = jnp.where(jnp.isinf(m), jnp.where(jnp.isinf(x), jnp.sign(x), 0), ratio)
    return jnp.where(clip, jnp.asarray(bound, x.dtype) * ratio, x).astype(x.dtype)


@ft.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _box_clip(x, bound: float):
    """The value takes max|x| as max(max x, −min x): two reductions of x itself, where
    the maximum of |x| has XLA write |x| out in full first (a quarter of the forward's
    time). Derivatives are those of the maximum of |x| (the same number; automatic
    differentiation through the two reductions takes twice as long)."""
    m = jnp.maximum(jnp.max(x, axis=-1, keepdims=True), -jnp.min(x, axis=-1, keepdims=True))
    return _box_clip_given(x, bound, m)


@_box_clip.defjvp
def _box_clip_jvp(bound, primals, tangents):
    return jax.jvp(lambda x: _box_clip_given(
        x, bound, jnp.max(jnp.abs(x), axis=-1, keepdims=True)), primals, tangents)


def rotated_dropout(x: Float[Array, "*b n"], basis: Float[Array, "n n"],
                    keep: Float[Array, "*#b n"], rate: float) -> Float[Array, "*b n"]:
    """Dropout in the basis given by the rows of `basis` (isotropic paper eq 66):
    $x' = \\frac{1}{1-p} B^T\\big(m \\odot Bx\\big)$ with keep-mask m (1 = kept).
    Half-precision inputs are rotated in float32 (in float16, $Bx$ overflows to ±∞ for
    entries of a few ten thousand, and rotating back would give ∞ − ∞ = NaN); the output
    has x's dtype.

    **Symmetry:** $R^{-1}f_B(Rx) = f_{BR}(x)$ for orthogonal R: with a Haar B,
    O(n)-equivariant in law.
    """
    who = "rotated_dropout"
    require_floating(x, who, "x")
    require_floating(basis, who, "basis")
    rate = check_real(rate, "rate", low=0, high=1, high_open=True)
    n = x.shape[-1]
    if basis.shape != (n, n):
        raise ValueError(f"{who}: `basis` must be of shape (n, n) = ({n}, {n}) for `x` of "
                         f"shape {x.shape}, got shape {basis.shape}.")
    check_fits(keep, "keep", x.shape, who, f"of shape (..., {n})")
    work = compute_dtype(x.dtype)
    basis = basis.astype(work)
    y = jnp.einsum("ij,...j->...i", basis, x.astype(work))
    y = jnp.einsum("ji,...j->...i", basis, keep.astype(work) * y)
    return (y / (1 - rate)).astype(x.dtype)


def attention_scores(query: Float[Array, "t d"], key: Float[Array, "s d"]) -> Float[Array, "t s"]:
    """$QK^T/\\sqrt{d_k}$, computed and returned in float32 for half-precision inputs
    (in float16 a product of entries of a few hundred already overflows).

    **Symmetry:** invariant to a common rotation of query and key features.
    """
    _check_attention(query, key, None, "attention_scores")
    work = compute_dtype(jnp.result_type(query, key))
    return (jnp.einsum("td,sd->ts", query.astype(work), key.astype(work))
            / math.sqrt(query.shape[-1]))


def _check_attention(query, key, value, who: str) -> None:
    """Attention's arguments: real floating `query` of shape (t, d), `key` of shape
    (S, d) and `value` of shape (S, v) (None: the scores alone, which also allow S = 0),
    with d ≥ 1 (the scores $QK^T/\\sqrt d$ of no features are undefined). Static shapes
    only: the check is free under `jax.jit`."""
    require_floating(query, who, "query")
    require_floating(key, who, "key")
    if value is not None:
        require_floating(value, who, "value")
    if query.ndim != 2:
        raise ValueError(f"{who}: `query` must be of shape (t, d), got shape {query.shape}.")
    if value is None and key.ndim != 2:
        raise ValueError(f"{who}: `key` must be an (S, d) array, got shape {key.shape}.")
    if value is not None and (key.ndim != 2 or key.shape[0] == 0):
        raise ValueError(f"{who}: `key` must be an (S, d) array with S >= 1 keys (the "
                         f"weights over no keys are undefined), got shape {key.shape}.")
    d = query.shape[1]
    if key.shape[1] != d:
        raise ValueError(f"{who}: `key` must be of shape (S, d) = (S, {d}), the feature "
                         f"size of `query` of shape {query.shape}, got shape {key.shape}.")
    if d == 0:
        raise ValueError(f"{who}: the feature axis d of `query` and `key` (their last axis) "
                         f"must have size >= 1 (the scores QKᵀ/√d are undefined for d = 0), "
                         f"got shapes {query.shape} and {key.shape}.")
    if value is not None and (value.ndim != 2 or value.shape[0] != key.shape[0]):
        raise ValueError(f"{who}: `value` must be of shape (S, v) = ({key.shape[0]}, v), one "
                         f"row per key of `key` of shape {key.shape}, got shape "
                         f"{value.shape}.")


SATURATED = 1e4
"""A score-vector norm beyond which isotropic tanh is 1 times the direction in float32
and float64 alike, and its radial derivative sech² is 0."""


def _scaled_scores(query, key):
    """$(S, c)$ with $QK^T/\\sqrt{d_k} = c\\,S$ row by row: each query row and the keys
    are divided by powers of two near their largest magnitudes (gradients stopped), so S
    is bounded and c, the product of those powers, is exact; c is clamped to the dtype's
    largest number. While c·S is finite it equals the plain scores bit for bit (scaling by
    a power of two is exact), and where it would overflow, S still orders the keys.
    Computed in float32 for half-precision inputs; the shapes are checked by the callers
    (`_check_attention`)."""
    work = compute_dtype(jnp.result_type(query, key))
    q, k = query.astype(work), key.astype(work)
    pq = jax.lax.stop_gradient(power_of_two_near(jnp.max(jnp.abs(q), axis=-1, keepdims=True)))
    pk = jax.lax.stop_gradient(power_of_two_near(jnp.max(jnp.abs(k))))
    # one buffer of scores (`materialise`): XLA may otherwise compute the product once
    # for max s and again, rounded differently, for s − max s, whose top entry is then
    # not 0 and, times a huge c, sends every weight to 0 (0/0 = NaN)
    s = materialise(jnp.einsum("td,sd->ts", q / pq, k / pk) / math.sqrt(query.shape[-1]))
    return s, jnp.minimum(pq * pk, jnp.finfo(work).max)


def softmax_attention(query: Float[Array, "t d"], key: Float[Array, "s d"],
                      value: Float[Array, "s v"]) -> Float[Array, "t v"]:
    """Softmax attention $\\operatorname{softmax}(QK^T/\\sqrt{d_k})V$ (the baseline of
    isotropic paper App. D.1): weights in [0, 1] summing to one over the keys.

    **Symmetry:** invariant to permuting the key–value pairs (and to a common rotation of
    query and key features).
    """
    _check_attention(query, key, value, "softmax_attention")
    s, c = _scaled_scores(query, key)
    # softmax of the scores c·s, shifted by their largest: c·(s − max s) is the shifted
    # score exactly while it is finite, and −∞ (a weight of 0) where it overflows
    z = c * (s - jax.lax.stop_gradient(jnp.max(s, axis=-1, keepdims=True)))
    e = jnp.exp(z)
    w = e / jnp.sum(e, axis=-1, keepdims=True)
    return jnp.einsum("ts,sv->tv", w.astype(value.dtype), value)


def isotropic_tanh_attention(query: Float[Array, "t d"], key: Float[Array, "s d"],
                             value: Float[Array, "s v"]) -> Float[Array, "t v"]:
    """Isotropic-tanh attention (isotropic paper eq 68):
    $\\text{Isotropic-Tanh}(QK^T/\\sqrt{d_k})\\,V$, isotropic tanh applied to each query's
    vector of scores over the keys: the weights have norm < 1 and may be negative.

    **Symmetry:** invariant to any orthogonal mixing of the key–value pairs (and to a common
    rotation of query and key features).
    """
    _check_attention(query, key, value, "isotropic_tanh_attention")
    s, c = _scaled_scores(query, key)
    # the scores c·s, except that a row whose norm exceeds SATURATED is scaled down to
    # that norm along its direction: isotropic tanh is then tanh(·) = 1 times the same
    # direction, and its derivative sech² underflows to 0 in either case
    r = sqrt_or_zero(jnp.sum(s * s, axis=-1, keepdims=True))
    big = c * r > SATURATED
    w = isotropic_tanh(s * jnp.where(big, SATURATED / jnp.where(big, r, 1), c))
    return jnp.einsum("ts,sv->tv", w.astype(value.dtype), value)


def _check_unbatched(x, who: str) -> int:
    """A real floating x of shape (n,) (the einsums take one example); returns n."""
    require_floating(x, who, "x")
    if x.ndim != 1:
        raise ValueError(f"{who}: `x` must be one unbatched input of shape (n,), got shape "
                         f"{x.shape}; use jax.vmap for batches.")
    return x.shape[0]


def _heads(weight, name: str, axes: str, n: int, who: str) -> tuple[int, int]:
    """The two leading sizes of a per-head input weight of shape (h, ·, n) for an input
    of size n; otherwise a `ValueError` naming it."""
    if jnp.ndim(weight) != 3 or jnp.shape(weight)[2] != n:
        raise ValueError(f"{who}: `{name}` must be of shape ({axes}, n) = ({axes}, {n}) for "
                         f"`x` of shape ({n},), got shape {jnp.shape(weight)}.")
    return tuple(jnp.shape(weight)[:2])


def multi_head_sum(x: Float[Array, " n"], weight: Float[Array, "h m n"],
                   bias: Float[Array, "h m"], activation) -> Float[Array, " m"]:
    """Multi-headed layer $\\sum_j f(W^j x + b^j)$ (isotropic paper eq 69).

    **Symmetry:** each head's affine map absorbs GL on the input; the activation's group
    passes to the output.
    """
    who = "multi_head_sum"
    h, m = _heads(weight, "weight", "h, m", _check_unbatched(x, who), who)
    check_fits(bias, "bias", (h, m), who, f"of shape (h, m) = ({h}, {m})", "shape")
    pre = jnp.einsum("hmn,n->hm", weight, x) + bias
    return jnp.sum(jax.vmap(activation)(pre), axis=0)


def multi_head_affine_sum(x: Float[Array, " n"], w_in: Float[Array, "h k n"],
                          b_in: Float[Array, "h k"], w_out: Float[Array, "h m k"],
                          b_out: Float[Array, "h m"], activation) -> Float[Array, " m"]:
    """General multi-headed layer $\\sum_j W^{l,j} f(W^j x + b^j) + b^{l,j}$ (isotropic
    paper eq 70).

    **Symmetry:** the output and input maps absorb GL on either side.
    """
    who = "multi_head_affine_sum"
    h, k = _heads(w_in, "w_in", "h, k", _check_unbatched(x, who), who)
    if jnp.ndim(w_out) != 3 or jnp.shape(w_out)[0] != h or jnp.shape(w_out)[2] != k:
        raise ValueError(f"{who}: `w_out` must be of shape (h, m, k) = ({h}, m, {k}) for "
                         f"`w_in` of shape {jnp.shape(w_in)}, got shape {jnp.shape(w_out)}.")
    m = jnp.shape(w_out)[1]
    check_fits(b_in, "b_in", (h, k), who, f"of shape (h, k) = ({h}, {k})", "shape")
    check_fits(b_out, "b_out", (h, m), who, f"of shape (h, m) = ({h}, {m})", "shape")
    hidden = jax.vmap(activation)(jnp.einsum("hkn,n->hk", w_in, x) + b_in)
    return jnp.sum(jnp.einsum("hmk,hk->hm", w_out, hidden) + b_out, axis=0)
