"""Numerically careful building blocks shared by the primitives."""

import jax
import jax.numpy as jnp
from jaxtyping import Array, Inexact


def safe_norm(x: Inexact[Array, "*b n"], axis: int = -1, keepdims: bool = False
              ) -> Array:
    """Euclidean norm along `axis` that neither overflows nor underflows.

    The vector is divided by a power of two near its largest magnitude before squaring,
    so |x| up to the dtype's maximum is exact to rounding (a plain sum of squares
    overflows above ~1.8e19 in float32). The gradient at the zero vector is 0 (not NaN).
    """
    m = power_of_two_near(jax.lax.stop_gradient(max_magnitude(x, axis)))
    scaled = x / m.astype(x.dtype)
    s = jnp.sum(jnp.real(scaled * jnp.conj(scaled)), axis=axis, keepdims=True)
    r = sqrt_or_zero(s) * m
    return r if keepdims else jnp.squeeze(r, axis)


def max_magnitude(x: Inexact[Array, "..."], axis: int = -1, keepdims: bool = True) -> Array:
    """The largest |component| along `axis`, in x's real dtype, to scale x by: for complex
    x the largest |real| or |imaginary| part, within a factor √2 of the largest modulus
    (a modulus can overflow, to ∞, for finite parts, which no scale could then mend)."""
    if jnp.iscomplexobj(x):
        parts = jnp.maximum(jnp.abs(jnp.real(x)), jnp.abs(jnp.imag(x)))
        return jnp.max(parts, axis=axis, keepdims=keepdims)
    return jnp.max(jnp.abs(x), axis=axis, keepdims=keepdims)


def unit_and_norm(x: Inexact[Array, "*b n"], infinite_rows: bool = False
                  ) -> tuple[Inexact[Array, "*b n"], Array]:
    """$\\hat x$ (0 at the origin) and $\\|x\\|$ along the last axis (real or complex x),
    overflow-free in value and gradient: x is scaled by a power of two $p$ bringing its
    largest magnitude near 1 (gradient stopped) first, and the derivative rule forms
    dx̂ = (dx − x̂ Re(x̂ᴴdx))/‖x‖, of size |dx|/‖x‖, from p·dx and ‖p x‖, never through
    1/‖x‖² (which overflows for ‖x‖ ≲ 1e-19 in float32) nor 1/‖p x‖² (which overflowed
    p·dx for ‖x‖ within a few times the smallest normal number). A power of two, not
    1/max|x|: XLA's CPU backend divides by multiplying with the reciprocal, which is
    flushed to 0 for max|x| ≳ 2¹²⁶ in float32.

    With `infinite_rows`, a row with infinite components (and no NaN) has the limit
    direction, the unit vector of their signs (`infinite_signs`), and norm ∞; otherwise
    such a row is NaN."""
    if infinite_rows:
        signs = infinite_signs(x)
        limit = jnp.any(signs != 0, axis=-1) & ~jnp.any(jnp.isnan(x), axis=-1)
        u, r = _unit_and_norm(jnp.where(limit[..., None], signs, x))
        return u, jnp.where(limit, jnp.inf, r)
    return _unit_and_norm(x)


def _scaled_row(x):
    """$p$ (a power of two bringing max|x| near 1, see `_power_of_two_scale`), $v = p x$
    and ‖v‖, each row's scalars keeping a trailing axis of size 1."""
    real = jnp.real(x).dtype
    m = jax.lax.stop_gradient(max_magnitude(x)).astype(real)
    p = _power_of_two_scale(m)  # 1 at the origin; p and 1/p are normal numbers
    v = x * p.astype(x.dtype)
    sq = jnp.sum(jnp.real(v * jnp.conj(v)), axis=-1, keepdims=True)  # ~[1/4, 4n] unless 0
    return p, v, sqrt_or_zero(sq)


@jax.custom_jvp
def _unit_and_norm(x):
    p, v, root = _scaled_row(x)
    return v * inverse_or_zero(root).astype(x.dtype), (root / p)[..., 0]


@_unit_and_norm.defjvp
def _unit_and_norm_jvp(primals, tangents):
    # dx̂ = (dx - x̂ Re(x̂ᴴdx))/‖x‖ and d‖x‖ = Re(x̂ᴴdx), both through w = p dx and the
    # scaled norm: autodiff of the value would divide p dx by ‖p x‖² (up to 16 for a
    # clamped p), which overflows for ‖x‖ within a factor of ~4 of the smallest normal
    # number although dx̂, of size |dx|/‖x‖, is representable there
    (x,), (dx,) = primals, tangents
    u, r = _unit_and_norm(x)
    p, _, root = _scaled_row(x)
    w = dx * jax.lax.stop_gradient(p).astype(dx.dtype)
    along = jnp.sum(jnp.real(jnp.conj(u) * w), axis=-1, keepdims=True)
    du = (w - u * along.astype(u.dtype)) * inverse_or_zero(root).astype(u.dtype)
    return (u, r), (du, (along / p)[..., 0])


def one_minus_power(base, t: Array) -> Array:
    """$1 - b^t$ for a decay $b$ in [0, 1) and counts $t$ (an array of the result's dtype),
    as $-\\operatorname{expm1}(t \\log(1 - (1 - b)))$ with $1 - b$ taken before any cast:
    for b within float32's rounding of 1 (ρ = 1 − 1e-9), the plain $1 - b^t$ is 0."""
    return -jnp.expm1(t * jnp.log1p(-(1 - base)))


def require_floating(x, who: str, name: str = "x") -> None:
    """Raise a clear error unless `x` is a real floating array with at least one axis
    (integer inputs would be truncated by a cast back to their dtype)."""
    if not hasattr(x, "dtype") or not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f"{who}: `{name}` must be a real floating array (float16/bfloat16/"
                        f"float32/float64), got {getattr(x, 'dtype', type(x).__name__)}.")
    if jnp.ndim(x) < 1:
        raise ValueError(f"{who}: `{name}` must have at least one axis (the features), got "
                         "a scalar.")


def require_real(x, who: str, dtype, name: str = "x"):
    """`x`, checked to be a real array, floating or integer; integers (such as pixel
    values) are cast to `dtype`, the parameters' dtype of the affine layer `who`.
    Complex and boolean arrays are refused with a clear error: promoted against real
    parameters they would give a complex or 0/1 result instead."""
    x_dtype = getattr(x, "dtype", None)
    if x_dtype is None or not (jnp.issubdtype(x_dtype, jnp.floating)
                               or jnp.issubdtype(x_dtype, jnp.integer)):
        raise TypeError(f"{who}: `{name}` must be a real floating or integer array, got "
                        f"{x_dtype if x_dtype is not None else type(x).__name__}.")
    return x if jnp.issubdtype(x_dtype, jnp.floating) else x.astype(dtype)


def compute_dtype(dtype) -> jnp.dtype:
    """The real dtype the kernels compute in: float32 for half precisions and float32
    (and complex64), float64 for float64 (and complex128)."""
    dtype = jnp.dtype(dtype)
    if dtype in (jnp.dtype(jnp.float64), jnp.dtype(jnp.complex128)):
        return jnp.dtype(jnp.float64)
    return jnp.dtype(jnp.float32)


def sum_of_squares_bounds(dtype) -> tuple[float, float]:
    """The range $[lo, hi]$ in which a plain sum of squares is trusted: below `lo`
    components may have been flushed (relative error above ε for up to 1/ε terms), above
    `hi` later products could overflow. float32: $[2^{-80}, 2^{80}]$."""
    fi = jnp.finfo(dtype)
    lo = float(fi.tiny) / float(fi.eps) ** 2
    return lo, 1.0 / lo


def trusted_sum(s: Array) -> Array:
    """Whether each sum of squares `s` is used as it is: in `sum_of_squares_bounds`, or
    NaN (a NaN input, which no rescaling would mend). 0 is not trusted: it may be the
    underflow of a tiny non-zero input, which would then be read as the zero vector."""
    lo, hi = sum_of_squares_bounds(s.dtype)
    return ((s >= lo) & (s <= hi)) | jnp.isnan(s)


def inverse_or_zero(r: Array) -> Array:
    """$1/r$ where $r > 0$, else 0 (with a gradient that is finite everywhere for finite
    r). NaN stays NaN: a NaN norm or parameter must not turn into a silent 0."""
    positive = r > 0
    return jnp.where(positive, 1 / jnp.where(positive, r, 1), jnp.where(r != r, r, 0))


@jax.custom_jvp
def quotient_or_zero(r: Array, n: Array) -> Array:
    """r/n where n > 0, else 0. Its tangent is (dr − (r/n) dn)/n: autodiff's
    dr/n − r dn/n² overflows (n² is flushed to 0 for n ≲ 1e-19 in float32) and gives
    ∞ − ∞ or 0·∞ (also where a `jnp.where` discards the quotient: its zero cotangent
    times ∞ is NaN), so derivatives would be NaN for small n. The rule is written with
    the function itself, so that it holds for higher derivatives too."""
    pos = n > 0
    return jnp.where(pos, r / jnp.where(pos, n, 1), 0)


@quotient_or_zero.defjvp
def _quotient_or_zero_jvp(primals, tangents):
    (r, n), (dr, dn) = primals, tangents
    q = quotient_or_zero(r, n)
    pos = n > 0
    return q, jnp.where(pos, (dr - q * dn) / jnp.where(pos, n, 1), 0)


def sqrt_or_zero(s: Array) -> Array:
    """$\\sqrt s$ for $s > 0$, else 0, with a gradient that is finite everywhere for
    finite s (√'s infinite slope at 0 is never evaluated, so rules differentiated again
    stay finite). NaN stays NaN (a NaN sum of squares is not the zero vector's)."""
    positive = s > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, s, 1)), jnp.where(s != s, s, 0))


def power_of_two_near(m: Array) -> Array:
    """A power of two $q$ with $m/q \\in [\\tfrac12, 1)$ for $m > 0$ (1 for $m = 0$),
    clamped so that $q$ and $1/q$ are normal numbers: the divisor to scale by instead of
    $m$ itself. Dividing by it is exact, and XLA's CPU backend divides by multiplying
    with the reciprocal, which is flushed to 0 for divisors above 2¹²⁶ in float32."""
    return 1 / _power_of_two_scale(m)


def _power_of_two_scale(m: Array) -> Array:
    """A power of two $p$ with $m p \\in [\\tfrac12, 1)$ (1 for $m = 0$), clamped so that
    $p$ and $1/p$ are normal numbers."""
    fi = jnp.finfo(m.dtype)
    _, e = jnp.frexp(m)
    e = jnp.clip(e, int(fi.minexp) + 2, int(fi.maxexp) - 2)
    return exp2_int(-e, m.dtype)


def exp2_int(k: Array, dtype) -> Array:
    """$2^k$ in `dtype` for integers $k$ in the normal range (−126 … 127 in float32),
    built from its exponent bits: no `power` operation, which XLA treats as expensive (it
    will not fuse one into a consumer that reads its elements more than once) and
    evaluates slowly."""
    fi = jnp.finfo(dtype)
    bits = {2: jnp.int16, 4: jnp.int32, 8: jnp.int64}[jnp.dtype(dtype).itemsize]
    biased = (k + (int(fi.maxexp) - 1)).astype(bits)
    return jax.lax.bitcast_convert_type(jax.lax.shift_left(biased, bits(fi.nmant)), dtype)


def infinite_signs(x: Inexact[Array, "*b n"]) -> Inexact[Array, "*b n"]:
    """±1 at the infinite components of `x` (per real and imaginary part), 0 elsewhere."""
    def part(t):
        return jnp.where(jnp.isinf(t), jnp.sign(t), 0).astype(t.dtype)

    if jnp.iscomplexobj(x):
        return jax.lax.complex(part(jnp.real(x)), part(jnp.imag(x)))
    return part(x)


def scaled_norm(x: Inexact[Array, "*b n"], then=None):
    """Row norms of `x` (over the last axis) in a form that never overflows.

    Returns `(r, p, rs)`, each of shape `x.shape[:-1]`: the norm $r$ (infinite only if the
    true norm exceeds the dtype's maximum), a power-of-two scale $p$, and $r_s = \\|p
    x\\|$, which is always a normal number (or 0). Rows whose plain sum of squares is in
    the trusted range (see `sum_of_squares_bounds`) take the fast path $p = 1$; only when
    some row is outside it (|x| ≳ 1e12 or ≲ 1e-12 in float32, the zero row included) is a
    second, max-scaled pass made (`lax.cond` on the whole batch, across `jax.vmap` too
    (`all_rows`), so the common case costs one reduction). A row with an infinite (real or
    imaginary) component has r = r_s = ∞ and p = 1. With `then`, returns `then(r, p, rs,
    u, exceptional)` computed inside both branches (so per-row follow-up work fuses with
    the norm's, and work on the whole of x that only rows outside the trusted range need
    is left out of the common case), where u is 1/‖d‖ for d the signs of the row's
    infinite components (the direction it points in; 0 for rows without, and only computed
    when the max-scaled pass is made) and `exceptional` is a Python bool, False in the
    fast branch: there every component of x is finite, except in rows holding a NaN. `x`
    must be float32/float64 or complex64/complex128. Not differentiable: callers define
    their own derivative rules.
    """
    sq = x * x if not jnp.iscomplexobj(x) else jnp.real(x * jnp.conj(x))
    s = jnp.sum(sq, axis=-1)
    ok = trusted_sum(s)  # (not s = 0: possibly a tiny row's underflow)
    then = then if then is not None else (lambda r, p, rs, u, exceptional: (r, p, rs, u))

    def fast(x, s, ok):
        # finite slope at s = 0, where the rules that call this (differentiated again
        # for second derivatives) multiply it by ds = 0
        rs = sqrt_or_zero(s)
        return then(rs, jnp.ones_like(rs), rs, jnp.zeros_like(rs), False)

    def rescue(x, s, ok):
        m = max_magnitude(x, keepdims=False)
        p = _power_of_two_scale(m)
        if jnp.iscomplexobj(x):  # part by part: a complex product turns ∞ into ∞ + NaN·i
            xs = jax.lax.complex(jnp.real(x) * p[..., None], jnp.imag(x) * p[..., None])
            sqs = jnp.real(xs * jnp.conj(xs))
        else:
            xs = x * p[..., None].astype(x.dtype)
            sqs = xs * xs
        rs_slow = sqrt_or_zero(jnp.sum(sqs, axis=-1))
        rs_fast = sqrt_or_zero(s)
        p = jnp.where(ok, 1, p)
        rs = jnp.where(ok, rs_fast, rs_slow)
        signs = infinite_signs(x)
        count = jnp.sum(jnp.real(signs * jnp.conj(signs)), axis=-1)
        return then(rs / p, p, rs, inverse_or_zero(jnp.sqrt(count)), True)

    if x.size == 0:
        return fast(x, s, ok)
    return jax.lax.cond(all_rows(ok), fast, rescue, x, s, ok)


@jax.custom_batching.custom_vmap
def all_rows(ok: Array) -> Array:
    """`jnp.all(ok)`, and under `jax.vmap` the same over the mapped axes too (an
    unbatched result): the predicate of a whole-batch `lax.cond` whose branches agree
    row by row to rounding, so that a vmapped call keeps the `lax.cond` (a batched
    predicate would turn it into a select that evaluates both branches: for isotropic
    tanh under `jax.vmap`, 3–4× slower forward and 1.6–1.9× forward+backward)."""
    return jnp.all(ok)


@all_rows.def_vmap
def _all_rows_vmap(axis_size, in_batched, ok):
    # (itself through `all_rows`, so that an enclosing `jax.vmap` is reduced over too)
    return all_rows(ok), False


@jax.custom_jvp
def materialise(x: Array) -> Array:
    """`x`, passed through a `while_loop` that XLA can neither remove nor see through: `x`
    is written to memory once and its consumers read it, instead of XLA fusing the work
    that produced it into each consumer (or splitting that work between them).

    The loop runs zero times unless the first element of `x` is NaN (then once, adding
    0): its trip count depends on the data, so it stays, at no cost.
    (`lax.optimization_barrier` is removed before fusion; a copy loop costs a pass.)
    Differentiable in every mode: it is the identity for tangents.
    """
    if x.size == 0:
        return x
    trips = jnp.isnan(x[(0,) * x.ndim]).astype(jnp.int32)

    def body(carry):
        i, y = carry
        return i + 1, y.at[(0,) * y.ndim].add((i * 0).astype(y.dtype))

    return jax.lax.while_loop(lambda carry: carry[0] < trips, body, (jnp.int32(0), x))[1]


@materialise.defjvp
def _materialise_jvp(primals, tangents):
    return materialise(primals[0]), tangents[0]
