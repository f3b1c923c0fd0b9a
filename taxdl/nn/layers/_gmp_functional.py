"""Pure functions of Geometric Parameterization (GmP paper §3, eqs 10–14).

- `gmp_direction`: the unit vector $u(θ)$ of hyperspherical angles (eq 11);
- `gmp_angles`: its inverse, Cartesian vectors to (angles, radius);
- `gmp_linear`: the GmP unit $z = r\\,σ(u(θ)^T x + λ)$ (eq 13);
- `input_mean_norm`: the centring of Input Mean Normalisation (eq 14).

Speed. $u(θ)$ needs, per output unit, the prefix products $\\prod_{j<i} \\sin θ_j$. They are
computed by `lax.scan` over the input axis, on angles laid out one column per unit
(`(in-1, out)`, as the GmP layers store them, so that every step is a contiguous vector
operation over the units and no transposition is needed, forward or backward; angles given
one row per unit are transposed once), with a hand-written reverse-scan gradient: no
divisions (so nothing breaks when some $\\sin θ_j = 0$), no `cumprod` (which XLA lowers to
a windowed reduction whose gradient dominates a layer's cost), no logs. Without a gradient,
one loop computes each step's sine and cosine in place; for a gradient, the sines and
cosines are computed once in parallel passes outside the loops and kept, so that both
loops only multiply. In float32, sine and cosine come from one shared Cody–Waite range
reduction and Taylor polynomials on $[-π/4, π/4]$ (error ≤ 1.2e-7, about one ulp, for
|θ| ≤ 6434, see `sincos`; XLA's CPU `sin` is as slow as a 256×1024×1024 matmul for a
1024×1023 angle array); float64 uses `jnp.sin`.

Half precisions. float16 and bfloat16 angles (and vectors given to `gmp_angles`) are
computed in float32 and the results rounded once, at the end, gradients likewise: the
loops multiply ~n factors, and rounding each to bfloat16 would drift ‖u‖ by up to n·2⁻⁸.
"""

import math
from collections.abc import Callable
from fractions import Fraction

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Real

from .._numerics import compute_dtype, materialise, power_of_two_near, require_real

# π/2 to 60 digits (a mathematical constant), split for Cody–Waite reduction.
_HALF_PI = Fraction("1.57079632679489661923132169163975144209858469968755291048747")


def _split_half_pi(bits: int) -> tuple[float, float, float]:
    """π/2 = c1 + c2 + c3 with c1, c2 of `bits` significant bits, so that k·c1 and k·c2
    are exact for |k| < 2^(24 − bits) in float32."""

    def head(x: Fraction) -> Fraction:
        e = math.floor(math.log2(abs(x)))
        scale = Fraction(2) ** (bits - 1 - e)
        return Fraction(math.floor(x * scale)) / scale

    c1 = head(_HALF_PI)
    c2 = head(_HALF_PI - c1)
    return float(c1), float(c2), float(_HALF_PI - c1 - c2)


_C1, _C2, _C3 = _split_half_pi(12)
_R_MAX = 0.79  # just above π/4, the largest reduced argument
# Taylor coefficients of sin r / r and cos r in r² (|r| ≤ π/4: truncation < 2e-9).
_SIN = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(5))
_COS = tuple((-1) ** k / math.factorial(2 * k) for k in range(6))


def _poly(r2, coeffs):
    acc = jnp.full_like(r2, coeffs[-1])
    for c in coeffs[-2::-1]:
        acc = acc * r2 + c
    return acc


def _sincos32(x):
    k = jnp.round(x * (2 / math.pi))
    # exact to rounding for |k| < 2^12; beyond, the clip keeps (sin, cos) a unit pair
    r = jnp.clip(((x - k * _C1) - k * _C2) - k * _C3, -_R_MAX, _R_MAX)
    r2 = r * r
    s, c = r * _poly(r2, _SIN), _poly(r2, _COS)
    q = k.astype(jnp.int32) & 3
    sin = jnp.where(q == 0, s, jnp.where(q == 1, c, jnp.where(q == 2, -s, -c)))
    cos = jnp.where(q == 0, c, jnp.where(q == 1, -s, jnp.where(q == 2, -c, s)))
    return sin, cos


def sincos(x: Float[Array, "*s"]) -> tuple[Float[Array, "*s"], Float[Array, "*s"]]:
    """$(\\sin x, \\cos x)$ with one shared range reduction: fast polynomials for float32
    (and lower precisions, computed in float32), `jnp.sin`/`jnp.cos` for float64.

    Float32 accuracy: ~1e-7 for |x| ≤ 2¹²·π/2 ≈ 6434; beyond, the range reduction's error
    grows like |x|·1e-7 (float32 itself spaces such angles |x|·6e-8 apart). For every
    finite x the pair is a unit vector (s² + c² = 1 to ~1e-7), so a GmP direction stays on
    the sphere at any angle.

    Not differentiable by itself (the GmP direction supplies its own gradient)."""
    if x.dtype == jnp.float64:
        return jnp.sin(x), jnp.cos(x)
    s, c = _sincos32(x.astype(jnp.float32))
    return s.astype(x.dtype), c.astype(x.dtype)


# ----------------------------------------------------------------------- u(θ), eq 11
def _forward(theta_t):
    """theta_t (m, out) → (u_{1..m}, u_n) as `(m, out)` and `(out,)`: one loop over the
    input axis computing the sines and cosines of each step in place (the fastest form
    when no gradient is needed)."""
    out = theta_t.shape[1]

    def step(p, th):
        s, c = sincos(th)
        return p * s, p * c

    last, head = jax.lax.scan(step, jnp.ones((out,), theta_t.dtype), theta_t)
    return head, last


def _prefix_products(s):
    """P_j = Π_{i<j} s_i along axis 0 (P_0 = 1): a loop whose body is one multiply."""
    def step(p, s_j):
        return p * s_j, p

    return jax.lax.scan(step, jnp.ones(s.shape[1:], s.dtype), s)[1]


@jax.custom_vjp
def _columns(theta_t):
    """The directions of all units from their angles as the columns of `theta_t`
    `(m, out)`: `(u_{1..m}, u_n)`, the first m components as an `(m, out)` array and the
    last as `(out,)`, kept apart so that a layer multiplies them separately (joining them
    would be one more pass over the array, forward and back). In this layout every loop
    step is a contiguous vector operation over the units and nothing is transposed."""
    return _forward(theta_t)


def _columns_fwd(theta_t):
    # For the gradient, sines and cosines are computed once, outside any loop (two
    # parallel passes over contiguous angles), and kept for the reverse scan, whose body
    # is then a few multiplies.
    s, c = sincos(theta_t)
    prefix = _prefix_products(s)
    return (prefix * c, prefix[-1] * s[-1]), (s, c, prefix)


def _columns_bwd(res, cotangents):
    # u_i = c_i P_i (c_m := 1), P_i = Π_{j<i} s_j. With A_j = Σ_{i>j} ū_i c_i Π_{j<k<i} s_k,
    # so that A_{m-1} = ū_m and A_{j-1} = ū_j c_j + s_j A_j:
    #   θ̄_j = P_j (c_j A_j − s_j ū_j),
    # division-free, so exact when some s_j = 0. A is the scan's only carry (each extra
    # carry costs a copy per step); ū is read by index rather than sliced (a slice would be
    # copied before the loop).
    head_bar, last_bar = cotangents
    s, c, prefix = res
    m = s.shape[0]

    def step(a, xs):
        j, c_j, s_j, p_j = xs
        ub_j = jax.lax.dynamic_index_in_dim(head_bar, j, keepdims=False)
        return ub_j * c_j + s_j * a, p_j * (c_j * a - s_j * ub_j)

    _, theta_bar_t = jax.lax.scan(step, last_bar, (jnp.arange(m), c, s, prefix), reverse=True)
    return (theta_bar_t,)


_columns.defvjp(_columns_fwd, _columns_bwd)


def _rows_to_columns(theta):
    """`(out, m)` angles (one row per unit, the paper's layout) as `(m, out)` columns.
    XLA would fuse the sines and cosines into the transposition, reading the source with a
    stride (the polynomials then run unvectorised, ~4× slower); behind `materialise` the
    transposed angles are written once, contiguously, and read as such."""
    return materialise(theta.T)


@jax.jit
def direction_parts_t(theta_t: Float[Array, "m o"], sign: Real[Array, " o"] | None = None
                      ) -> tuple[Float[Array, "m o"], Float[Array, " o"]]:
    """`(u_{1..m}, u_n)` of all units from angles stored one column per unit (`theta_t`,
    shape `(m, out)`, the layout of the GmP layers): shapes `(m, out)` and `(out,)`.
    `sign` (±1, only for in_features = 1, where θ is empty) gives the 1-D directions; it
    receives no gradient (the paper keeps it fixed)."""
    if theta_t.shape[0] == 0:
        last = (jnp.ones((theta_t.shape[1],), theta_t.dtype) if sign is None
                else jax.lax.stop_gradient(sign).astype(theta_t.dtype))
        return jnp.zeros((0, theta_t.shape[1]), theta_t.dtype), last
    # Half precisions: the sines, cosines and the n-factor prefix products run in float32
    # and u is rounded once, at the end (its cotangent is widened once and θ̄ rounded
    # once, by the casts' own derivatives). A bfloat16 loop would round each of the n
    # products, a relative drift of up to n·2⁻⁸: ‖u‖ 1.04–1.12 at n = 1024.
    work = compute_dtype(theta_t.dtype)
    head, last = _columns(theta_t.astype(work))
    return head.astype(theta_t.dtype), last.astype(theta_t.dtype)


@jax.jit
def direction_columns(theta_t: Float[Array, "m o"], sign: Real[Array, " o"] | None = None
                      ) -> Float[Array, "n o"]:
    """The unit directions of all units as the columns of an `(in, out)` matrix (the
    layout a matmul `x @ U` wants), from angles stored one column per unit (see
    `direction_parts_t`)."""
    head, last = direction_parts_t(theta_t, sign)
    return jnp.concatenate([head, last[None]], 0)


def _real_floating(x, name: str, who: str, min_ndim: int = 1):
    """`x` as a real floating array (integers promoted to JAX's default float dtype);
    a clear error for complex values and for too few axes."""
    x = jnp.asarray(x)
    if jnp.iscomplexobj(x) or not (jnp.issubdtype(x.dtype, jnp.floating)
                                   or jnp.issubdtype(x.dtype, jnp.integer)
                                   or x.dtype == jnp.bool_):
        raise TypeError(f"{who}: `{name}` must be a real array, got dtype {x.dtype}.")
    if x.ndim < min_ndim:
        raise ValueError(f"{who}: `{name}` must have at least {min_ndim} axis (the vector "
                         f"axis last), got shape {x.shape}.")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(float))
    return x


def gmp_direction(theta: Real[Array, "*b m"]) -> Float[Array, "*b n"]:
    """The unit vector $u(θ) \\in S^{n-1}$ of hyperspherical angles θ (GmP paper eq 11):

    $$u_i = \\cos θ_i \\prod_{j<i} \\sin θ_j \\;(i < n),\\qquad
      u_n = \\prod_{j<n} \\sin θ_j.$$

    **Arguments:**

    - `theta`: angles, shape `(..., n-1)` (θ₁..θ_{n−2} conventionally in [0, π], the last
      in (−π, π], but any real values are valid).

    **Returns:** `(..., n)` unit vectors; with n − 1 = 0 angles, the vector (1,).

    Finite values and exact gradients everywhere, including where some $\\sin θ_j = 0$.
    Differentiable in reverse mode (`jax.grad`, `jax.vjp`, and Hessians as forward over
    reverse); forward mode with respect to θ (`jax.jvp`, `jax.jacfwd`) is not supported
    (the gradient is a hand-written reverse recurrence).

    **Symmetry:** none by itself (a coordinate chart of the sphere).
    """
    return _gmp_direction(_real_floating(theta, "theta", "gmp_direction"))


@jax.jit
def _gmp_direction(theta):
    *batch, m = theta.shape
    if m == 0:
        return jnp.ones((*batch, 1), theta.dtype)
    return direction_columns(_rows_to_columns(theta.reshape(-1, m))).T.reshape(*batch, m + 1)


def gmp_angles(w: Real[Array, "*b n"]) -> tuple[Float[Array, "*b m"], Float[Array, "*b"]]:
    """Hyperspherical coordinates of Cartesian vectors: the inverse of eq 11.

    $θ_i = \\operatorname{atan2}(\\|w_{i+1:}\\|, w_i)$ for $i < n-1$ (in [0, π]) and
    $θ_{n-1} = \\operatorname{atan2}(w_n, w_{n-1})$ (in (−π, π]), so that
    $w = \\|w\\|\\,u(θ)$. The zero vector maps to θ = 0 (u = e₁) and radius 0.

    **Arguments:**

    - `w`: vectors, shape `(..., n)` with n ≥ 1.

    **Returns:** `(theta, radius)` with shapes `(..., n-1)` and `(...)`. For n = 1, θ is
    empty and the direction is sign(w), which this function does not return.

    **Symmetry:** none (a chart).
    """
    w = _real_floating(w, "w", "gmp_angles")
    if w.shape[-1] < 1:
        raise ValueError(f"gmp_angles: `w` must have a last axis of size >= 1, got shape "
                         f"{w.shape}.")
    # Half precisions: computed in float32 and rounded once, at the end (a bfloat16 running
    # sum of squares over n entries drifts by up to n·2⁻⁸: r and u off by 10% at n = 1024).
    return jax.tree.map(lambda a: a.astype(w.dtype),
                        _gmp_angles(w.astype(compute_dtype(w.dtype))))


@jax.jit
def _gmp_angles(w):
    n = w.shape[-1]
    # The angles do not depend on the scale and the radius is linear in it, so it is held
    # constant for derivatives (d radius = ŵ·dw all the same).
    # a power of two near max|w| (1 for w = 0): XLA's CPU backend divides by multiplying
    # with a reciprocal, which is flushed to 0 for a divisor above 2¹²⁶ in float32
    safe = jax.lax.stop_gradient(power_of_two_near(jnp.max(jnp.abs(w), axis=-1, keepdims=True)))
    v = w / safe
    # ‖v_{i:}‖, each tail scaled by its own largest entry: a tail of entries below
    # √(smallest normal) (~1e-19 relative in float32) has squares that underflow
    tail = _tail_norms(v)
    radius = (tail[..., 0] * safe[..., 0]).astype(w.dtype)
    if n == 1:
        return jnp.zeros((*w.shape[:-1], 0), w.dtype), radius
    theta_head = _atan2(tail[..., 1:n - 1], v[..., :n - 2])
    theta_last = _atan2(v[..., n - 1:], v[..., n - 2:n - 1])
    return jnp.concatenate([theta_head, theta_last], -1).astype(w.dtype), radius


@jax.custom_jvp
def _tail_norms(v):
    """$t_i = \\|v_{i:}\\|$ along the last axis, as LAPACK's `nrm2` keeps it: a reverse
    loop carrying the running max m = max_{j≥i}|v_j| and the sum of the squares of
    $v_j/q$, q a power of two near m, so no tail's squares underflow (however small its
    entries are against the head's) and every rescaling is exact."""
    a = jnp.moveaxis(jnp.abs(v), -1, 0)

    def step(carry, a_i):
        m, ssq = carry
        m_new = jnp.maximum(m, a_i)
        q_old, q_new = power_of_two_near(m), power_of_two_near(m_new)
        # exact (powers of two); r ≤ 1, and 0 before the first nonzero entry (where
        # q_old = 1 would overflow r² against a tiny q_new)
        r = jnp.where(m > 0, q_old / q_new, 0)
        x = a_i / q_new
        ssq = ssq * (r * r) + x * x
        return (m_new, ssq), q_new * jnp.sqrt(ssq)

    init = (jnp.zeros(a.shape[1:], a.dtype), jnp.zeros(a.shape[1:], a.dtype))
    _, tails = jax.lax.scan(step, init, a, reverse=True)
    return jnp.moveaxis(tails, 0, -1)


@_tail_norms.defjvp
def _tail_norms_jvp(primals, tangents):
    # The recurrence t_i = hypot(v_i, t_{i+1}) differentiated:
    #   dt_i = (v_i/t_i) dv_i + (t_{i+1}/t_i) dt_{i+1},
    # a linear reverse loop whose coefficients lie in [−1, 1], so neither it nor its
    # transpose (reverse mode) forms v_j², 1/t_i² or any other quantity that underflows or
    # overflows when a tail is tiny (Σ v_j dv_j / t_i would, transposed, divide the
    # cotangent by t_i before multiplying by v_j). A zero tail (w = e₁, w = 0), where
    # ‖·‖ has no derivative, gets 0.
    (v,), (dv,) = primals, tangents
    t = _tail_norms(v)
    positive = t > 0
    safe = jnp.where(positive, t, 1)
    t_next = jnp.concatenate([t[..., 1:], jnp.zeros_like(t[..., :1])], -1)
    a = jnp.where(positive, v / safe, 0)
    b = jnp.where(positive, t_next / safe, 0)

    def step(dt_next, xs):
        a_i, b_i, dv_i = xs
        dt_i = a_i * dv_i + b_i * dt_next
        return dt_i, dt_i

    first = lambda z: jnp.moveaxis(z, -1, 0)  # noqa: E731
    _, dt = jax.lax.scan(step, jnp.zeros_like(t[..., 0]), (first(a), first(b), first(dv)),
                         reverse=True)
    return t, jnp.moveaxis(dt, 0, -1)


@jax.custom_jvp
def _atan2(y, x):
    """atan2(y, x) (0 at y = x = 0) with the derivative $(x\\,dy - y\\,dx)/(x^2 + y^2)$
    formed from x and y scaled by a power of two near max(|x|, |y|): x² + y² itself
    underflows for entries below √(smallest normal) (NaN and ∞ derivatives); 0 at the
    origin, where atan2 has none. Zeros count as +0 (atan2(0, −0) would be π, and
    atan2(−0, −1) −π), which a `where` on the input would do only by also cutting the
    derivative with respect to a zero entry."""
    return jnp.arctan2(jnp.where(y == 0, jnp.zeros_like(y), y),
                       jnp.where(x == 0, jnp.zeros_like(x), x))


@_atan2.defjvp
def _atan2_jvp(primals, tangents):
    (y, x), (dy, dx) = primals, tangents
    m = jnp.maximum(jnp.abs(x), jnp.abs(y))
    origin = m == 0
    q = power_of_two_near(m)   # 1 at the origin
    a, b = x / q, y / q        # exact; max(|a|, |b|) ∈ [½, 1) unless subnormal
    d = (a * dy - b * dx) / jnp.where(origin, 1, a * a + b * b) / q
    return _atan2(y, x), jnp.where(origin, 0, d)


def gmp_linear(x: Real[Array, "*b i"], theta: Float[Array, "o m"], lam: Float[Array, " o"],
               r: Float[Array, " o"], activation: Callable = jax.nn.relu,
               sign: Real[Array, " o"] | None = None) -> Float[Array, "*b o"]:
    """A layer of GmP units, $z = r \\odot σ(U(θ)\\,x + λ)$ (GmP paper eq 13): row $i$ of
    $U(θ)$ is $u(θ_i)$ (eq 11), built once per call (also under `vmap` over `x`).

    **Arguments:**

    - `x`: inputs `(..., in)`; `theta`: `(out, in-1)`; `lam`, `r`: `(out,)` (other
      shapes raise `ValueError`).
    - `activation`: σ (default ReLU).
    - `sign`: for in = 1 only, the fixed directions ±1 of the units.

    **Returns:** `(..., out)`.

    **Symmetry:** see [`GmPLinear`][taxdl.nn.GmPLinear].
    """
    _check_linear_shapes(x, theta, lam, r, sign)
    x = require_real(x, "gmp_linear", jnp.result_type(theta))
    return units_t(x, _rows_to_columns(theta), lam, r, activation, sign)


def _check_linear_shapes(x, theta, lam, r, sign) -> None:
    """Clear `ValueError`s for `gmp_linear`'s arguments of the wrong (static) shape,
    instead of JAX's dot_general, broadcasting or indexing errors."""
    who = "gmp_linear"
    t_shape = jnp.shape(theta)
    if len(t_shape) != 2:
        raise ValueError(f"{who}: `theta` must have shape (out, in − 1), one row of angles "
                         f"per unit, got shape {t_shape}.")
    out, m = t_shape
    x_shape = jnp.shape(x)
    if len(x_shape) < 1 or x_shape[-1] != m + 1:
        raise ValueError(f"{who}: `x` must have shape (..., {m + 1}) (in = theta.shape[1] + 1 "
                         f"= {m + 1} features), got shape {x_shape}.")
    for name, value in (("lam", lam), ("r", r)) + ((("sign", sign),) if sign is not None
                                                    else ()):
        if jnp.shape(value) != (out,):
            raise ValueError(f"{who}: `{name}` must have shape ({out},), one entry per unit "
                             f"(theta.shape[0] = {out}), got shape {jnp.shape(value)}.")


def units_t(x: Float[Array, "*b i"], theta_t: Float[Array, "m o"], lam: Float[Array, " o"],
            r: Float[Array, " o"], activation: Callable = jax.nn.relu,
            sign: Real[Array, " o"] | None = None) -> Float[Array, "*b o"]:
    """`gmp_linear` with the angles stored one column per unit (`theta_t`, shape
    `(in-1, out)`, the layout of the GmP layers)."""
    head, last = direction_parts_t(theta_t, sign)
    return r * activation(x[..., :-1] @ head + x[..., -1:] * last + lam)


def input_mean_norm(x: Real[Array, "*b n"], mean: Float[Array, " n"]) -> Float[Array, "*b n"]:
    """Input Mean Normalisation's centring $x - \\hat{\\mathbb E}[x]$ (GmP paper eq 14).

    Integer inputs are promoted to JAX's default float dtype (the centred values are not
    integers); complex ones are rejected.

    **Symmetry:** translation-equivariant: $f(x + t) = f(x) + t$ for every $t$.
    """
    x = _real_floating(x, "x", "input_mean_norm")
    work = compute_dtype(x.dtype)  # float32 for half precisions: one rounding, at the end
    return (x.astype(work) - jnp.asarray(mean).astype(work)).astype(x.dtype)
