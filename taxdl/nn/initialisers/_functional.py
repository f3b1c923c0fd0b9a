"""Pure weight-initialisation functions (isotropic paper App. A.2, eq 48).

Every function has the `jax.nn.initializers` signature `f(key, shape, dtype)` once its
hyperparameters are bound. Matrix shapes follow Equinox's `(out, in)` layout: the last
axis is fan-in, the second-to-last fan-out, and any leading axes index independent
matrices. A 1-D shape `(n,)` has fan-in = fan-out = n. Sizes are Python or NumPy integers.

A scale (`gain`, `radius`, `limit`, `stddev`) is a Python or NumPy number or a JAX scalar,
concrete or traced (under `jax.jit`, `jax.vmap` or `jax.grad`). It is never a
compile-time constant: it multiplies the draw as an array (in `haar_orthogonal`, as an
argument of the compiled draw), so a traced scale is differentiable and a new value
compiles nothing. A concrete one is checked (finite, > 0, and small enough for
the weights to fit the dtype), the error naming it; a traced one cannot be checked
without a host sync and is used as given.
"""

import functools as ft
import math

import jax
import jax.numpy as jnp
import jax.scipy.special
import numpy as np
from jaxtyping import Array, PRNGKeyArray, Real

from ..._types import INT_TYPES, RealLike, check_float_dtype, check_real

Scale = RealLike | Real[Array, ""]
"""A scale hyperparameter: a Python or NumPy number, or a (concrete or traced) JAX
scalar."""


def _is_size(d) -> bool:
    return isinstance(d, INT_TYPES) and not isinstance(d, (bool, np.bool_)) and d >= 1


def _check_shape(shape, who: str, min_ndim: int = 1) -> tuple[int, ...]:
    """`shape` as a tuple of Python ints: an integer or a sequence of Python or NumPy
    integers ≥ 1 (not bools or floats), of at least `min_ndim` axes."""
    if isinstance(shape, INT_TYPES) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"{who}: `shape` must be a tuple of integers, got {shape!r}.") from None
    if len(shape) < min_ndim or not all(_is_size(d) for d in shape):
        need = "a matrix shape (..., out, in)" if min_ndim == 2 else "a shape"
        raise ValueError(f"{who}: `shape` must be {need} of positive integers, got {shape!r}.")
    return tuple(int(d) for d in shape)


def _check_dtype(dtype, who: str):
    """The weights' dtype: float32 when None, else a real floating dtype."""
    return check_float_dtype(jnp.float32 if dtype is None else dtype, who)


def real_scalar_array(value) -> bool:
    """Whether `value` is a JAX or NumPy array (concrete or traced) holding one real
    number: shape (), a floating or integer dtype."""
    if not isinstance(value, (jax.Array, np.ndarray)) or value.ndim != 0:
        return False
    dtype = jnp.dtype(value.dtype)
    return bool(jnp.issubdtype(dtype, jnp.floating) or jnp.issubdtype(dtype, jnp.integer))


def _concrete(value, name: str, who: str, kind: str):
    """`value` as a Python number when it is a concrete JAX or NumPy real scalar, the
    tracer itself when traced, anything else unchanged (for `check_real` to refuse);
    a non-scalar or non-real array is refused by name."""
    if not isinstance(value, (jax.Array, np.ndarray)):
        return value
    if not real_scalar_array(value):
        raise TypeError(f"{who}: `{name}` must be {kind} given as a number or a real scalar "
                        f"array, got an array of shape {value.shape} and dtype "
                        f"{jnp.dtype(value.dtype)}.")
    if isinstance(value, jax.core.Tracer):
        return value
    return value.item()


def _positive(value, name: str, who: str):
    """A scale hyperparameter (gain, radius, limit, stddev): a finite number > 0 (a
    Python or NumPy number, or a concrete JAX scalar) as a Python float, the error naming
    it; a traced JAX scalar is returned as given (checking it would need a host sync)."""
    value = _concrete(value, name, who, "a finite number > 0")
    if isinstance(value, jax.core.Tracer):
        return value
    return check_real(value, name, who=who, low=0, low_open=True)


def _fits(scale, bound: float, dtype, who: str, name: str, value) -> None:
    """Raise a clear error when weights of scale `scale` (|w| up to `bound`·scale: 1 for
    orthogonal, spherical and uniform draws, the tail of a Gaussian otherwise) would
    overflow `dtype`, instead of returning infinite weights. `value` is the argument
    `name` as checked by `_positive`; a traced scale is not checked."""
    if isinstance(scale, jax.core.Tracer):
        return
    largest = float(jnp.finfo(dtype).max)
    if not scale * bound <= largest:
        raise ValueError(f"{who}: `{name}` = {value!r} gives weights of magnitude up to about "
                         f"{scale * bound:.3g}, beyond the largest {jnp.dtype(dtype).name} "
                         f"({largest:.3g}).")


# |z| of a standard Gaussian draw exceeds this with probability ~1e-23
GAUSSIAN_TAIL = 10.0


def _work(dtype):
    """Sampling dtype: at least float32 (bf16/f16 weights are drawn in float32 and cast)."""
    dtype = jnp.dtype(dtype)
    return dtype if dtype.itemsize >= 4 else jnp.dtype(jnp.float32)


def _scaled(scale, w: Array, dtype) -> Array:
    """`scale · w` in `dtype`, the scale (a number or a traced JAX scalar of any real
    dtype) taken in the draw's dtype first, so that a float64 traced gain does not
    promote float32 weights."""
    return (jnp.asarray(scale, w.dtype) * w).astype(dtype)


def fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """(fan_in, fan_out) of a shape in `(..., out, in)` layout.

    **Symmetry:** not applicable (a helper).
    """
    if len(shape) == 1:
        return shape[0], shape[0]
    return shape[-1], shape[-2]


def _cholesky_pass(a, shift=None):
    """One Cholesky-QR pass: $a R^{-1}$ with $R^TR = a^Ta (+ sI)$, R upper triangular with a
    positive diagonal (all BLAS-3: a Gram matrix, a Cholesky factor, a triangular solve)."""
    at = jnp.swapaxes(a, -1, -2)
    g = jnp.matmul(at, a, precision=jax.lax.Precision.HIGHEST)
    if shift is not None:
        g = g + shift * jnp.eye(a.shape[-1], dtype=a.dtype)
    lower = jnp.linalg.cholesky(g)
    return jnp.swapaxes(jax.scipy.linalg.solve_triangular(lower, at, lower=True), -1, -2)


_CHOLESKY_QR_MIN = 256  # columns from which Cholesky-QR3 is used off the CPU


def _householder_positive(z):
    """Householder QR's Q with its columns' signs set so that diag R > 0."""
    qh, r = jnp.linalg.qr(z)
    d = jnp.sign(jnp.diagonal(r, axis1=-2, axis2=-1))
    return qh * jnp.where(d == 0, 1, d)[..., None, :]


def _positive_qr(z):
    """The Q factor of the QR decomposition of tall `z` with diag R > 0.

    On the CPU, LAPACK's Householder QR, with the signs corrected. On other platforms,
    from 256 columns, shifted Cholesky-QR3 (`_cholesky_qr_or_householder`): three passes
    made of a Gram matrix, a Cholesky factor and a triangular solve, matrix products that
    accelerators run far better than Householder's column-by-column updates. On two CPU
    cores Householder was the faster of the two at every size measured (512 to 4096
    columns: Cholesky-QR3 took 1.4–1.9× its time), so the CPU program holds it alone.
    Both give the same factor in exact arithmetic (the sign-corrected Householder Q).
    """
    if z.shape[-1] < _CHOLESKY_QR_MIN:
        return _householder_positive(z)
    return jax.lax.platform_dependent(z, cpu=_householder_positive,
                                      default=_cholesky_qr_or_householder)


@jax.custom_batching.custom_vmap
def _cholesky_qr_or_householder(z):
    """Shifted Cholesky-QR3 of `z` (any leading batch axes), or Householder QR for all of
    them if any factor is inaccurate: one scalar predicate, so `lax.cond` runs one branch.

    Under `vmap` the predicate would become batched and `cond` a `select` that runs both
    branches in one program; XLA's CPU runtime can then deadlock (Cholesky and Householder
    custom calls of a few 256-column factors in flight together). The batching rule below
    instead calls this function on the stacked matrices, keeping the predicate scalar."""
    eps = float(jnp.finfo(z.dtype).eps)
    shift = 10 * eps * jnp.sum(z * z, axis=(-2, -1), keepdims=True)
    q = _cholesky_pass(_cholesky_pass(_cholesky_pass(z, shift)))
    norms = jnp.sum(q * q, axis=-2)
    ok = jnp.all(jnp.isfinite(q)) & jnp.all(jnp.abs(norms - 1) < 1e3 * eps)
    return jax.lax.cond(ok, lambda _: q, _householder_positive, z)


@_cholesky_qr_or_householder.def_vmap
def _(axis_size, in_batched, z):
    del axis_size, in_batched  # z is batched along its leading axis
    return _cholesky_qr_or_householder(z), True


def haar_orthogonal(key: PRNGKeyArray, shape, dtype=None, gain: Scale = 1.0) -> Array:
    """Haar (semi-)orthogonal weights $W = g\\,UΛV$ (isotropic paper App. A.2): $U$, $V$
    Haar on O(m), O(n) and $Λ$ the $m×n$ padded identity, for shape `(..., m, n)`.

    Sampled as the sign-corrected QR factor (diag R > 0) of an $\\max(m,n) × \\min(m,n)$
    Gaussian matrix (Mezzadri 2007), which has exactly this law: $UΛV$ is Haar on the
    Stiefel manifold and $V$ (or $U$) is absorbed by its right (left) invariance. The
    factor is computed by Householder QR on the CPU and, from 256 columns, by Cholesky-QR
    (matrix products) elsewhere (see `_positive_qr`): $O(mn\\min(m,n))$, no Python loop.
    The factor is compiled once per shape and dtype; `gain` (a number or a concrete or
    traced JAX scalar) is an argument of that program, not a constant of it.

    **Symmetry:** $P(AWB) = P(W)$ for all $A ∈ O(m)$, $B ∈ O(n)$ (eq 48).
    """
    shape = _check_shape(shape, "haar_orthogonal", 2)
    dtype = _check_dtype(dtype, "haar_orthogonal")
    gain = _positive(gain, "gain", "haar_orthogonal")
    _fits(gain, 1.0, dtype, "haar_orthogonal", "gain", gain)
    return _haar_orthogonal(key, shape, dtype, gain)


@ft.partial(jax.jit, static_argnums=(1, 2))
def _haar_orthogonal(key, shape, dtype, gain):
    # compiled once per shape and dtype (the gain is traced, so any value or a tracer
    # reuses the program): called outside `jax.jit` (building a model), the Cholesky-QR
    # and its `lax.cond` fallback are traced once, not at every draw
    *batch, m, n = shape
    tall = m >= n
    rows, cols = (m, n) if tall else (n, m)
    q = _positive_qr(jax.random.normal(key, (*batch, rows, cols), _work(dtype)))
    if not tall:
        q = jnp.swapaxes(q, -1, -2)
    return _scaled(gain, q, dtype)


def qr_orthogonal(key: PRNGKeyArray, shape, dtype=None, gain: Scale = 1.0) -> Array:
    """The naive orthogonal initialiser: the Q factor of the QR decomposition of a
    Gaussian matrix *without* the sign correction of diag(R).

    Householder QR fixes the sign of each diagonal entry of R by the sign of a pivot, so
    Q inherits a basis-dependent sign pattern (e.g. $Q_{11} = -|z_{11}|/\\|z_{:,1}\\|$ is
    always negative with LAPACK's convention): the law is **not** Haar.

    **Symmetry:** none of the orthogonal invariances of eq 48 survive (audit); the law
    is invariant only under $W \\mapsto DWD$ for sign flips $D$ (see
    [`QROrthogonal`][taxdl.nn.QROrthogonal]).
    """
    shape = _check_shape(shape, "qr_orthogonal", 2)
    dtype = _check_dtype(dtype, "qr_orthogonal")
    gain = _positive(gain, "gain", "qr_orthogonal")
    _fits(gain, 1.0, dtype, "qr_orthogonal", "gain", gain)
    *batch, m, n = shape
    tall = m >= n
    rows, cols = (m, n) if tall else (n, m)
    q, _ = jnp.linalg.qr(jax.random.normal(key, (*batch, rows, cols), _work(dtype)))
    if not tall:
        q = jnp.swapaxes(q, -1, -2)
    return _scaled(gain, q, dtype)


_MODES = ("fan_in", "fan_out", "fan_avg")


def _check_mode(mode, who: str) -> str:
    if mode not in _MODES:
        raise ValueError(f"{who}: `mode` must be one of {_MODES}, got {mode!r}.")
    return mode


def variance_scale(shape, mode: str, gain: Scale = 1.0):
    """$g^2/\\text{fan}$ for `mode` in `"fan_in"`, `"fan_out"`, `"fan_avg"` (Glorot): a
    Python float, or a JAX scalar for a traced `gain`.

    **Symmetry:** not applicable (a helper).
    """
    _check_mode(mode, "variance_scale")
    gain = _positive(gain, "gain", "variance_scale")
    fan_in, fan_out = fans(shape)
    fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
    return gain * gain / fan


def isotropic_normal(key: PRNGKeyArray, shape, dtype=None, mode: str = "fan_in",
                     gain: Scale = 1.0) -> Array:
    """Isotropic Gaussian weights $W_{ij} \\sim \\mathcal N(0, g^2/\\text{fan})$ iid
    (isotropic paper App. A.2), with the variance rule of `mode`:

    - `"fan_in"`: $σ^2 = g^2/n$ keeps the mean squared *coordinate* of $Wx$ equal to that
      of $x$ (LeCun; $g = \\sqrt 2$ is He).
    - `"fan_out"`: $σ^2 = g^2/m$ keeps the expected squared *norm*,
      $\\mathbb E\\|Wx\\|^2 = g^2\\|x\\|^2$, the natural choice for isotropic networks whose
      activations act on magnitudes.
    - `"fan_avg"`: $σ^2 = 2g^2/(m + n)$ (Glorot).

    **Symmetry:** the law of an iid Gaussian matrix is invariant under $W \\mapsto AWB$ for
    all orthogonal $A$, $B$ (eq 48), and under nothing larger.
    """
    shape = _check_shape(shape, "isotropic_normal")
    dtype = _check_dtype(dtype, "isotropic_normal")
    _check_mode(mode, "isotropic_normal")
    gain = _positive(gain, "gain", "isotropic_normal")
    std = gain * math.sqrt(variance_scale(shape, mode))   # g/√fan: no g² to overflow
    _fits(std, GAUSSIAN_TAIL, dtype, "isotropic_normal", "gain", gain)
    return _scaled(std, jax.random.normal(key, shape, _work(dtype)), dtype)


def sphere_uniform(key: PRNGKeyArray, shape, dtype=None, radius: Scale = 1.0) -> Array:
    """Unit directions: every vector along the last axis uniform on the sphere of radius
    `radius` (von Mises–Fisher with κ = 0), drawn as normalised Gaussian vectors.

    **Symmetry:** each row's law is O(n)-invariant, so $P(WB) = P(W)$ for $B ∈ O(n)$; rows
    stay unit vectors only under signed permutations on the left.
    """
    shape = _check_shape(shape, "sphere_uniform")
    dtype = _check_dtype(dtype, "sphere_uniform")
    radius = _positive(radius, "radius", "sphere_uniform")
    _fits(radius, 1.0, dtype, "sphere_uniform", "radius", radius)
    from ..normalisers._functional import unit_vector

    z = jax.random.normal(key, shape, _work(dtype))
    u = unit_vector(z)
    # A Gaussian vector is zero with probability 0; guard the draw anyway.
    u = jnp.where(jnp.any(u != 0, axis=-1, keepdims=True), u,
                  jnp.zeros_like(u).at[..., 0].set(1))
    return _scaled(radius, u, dtype)


def uniform(key: PRNGKeyArray, shape, dtype=None, limit: Scale = 1.0) -> Array:
    """iid uniform weights on $[-a, a]$.

    **Symmetry:** iid uniform entries: the law is invariant under signed permutations only.
    """
    return _uniform(key, shape, dtype, limit, "limit", 1.0, "uniform")


def _uniform(key, shape, dtype, scale, name: str, factor: float, who: str) -> Array:
    """iid uniform weights on $[-a, a]$, $a$ = `factor` · `scale`, the scale checked as
    the argument `name` of `who`."""
    shape = _check_shape(shape, who)
    dtype = _check_dtype(dtype, who)
    scale = _positive(scale, name, who)
    limit = scale * factor
    _fits(limit, 1.0, dtype, who, name, scale)
    if isinstance(limit, jax.core.Tracer):   # in the draw's dtype (a float64 gain)
        limit = limit.astype(_work(dtype))
    return jax.random.uniform(key, shape, _work(dtype), -limit, limit).astype(dtype)


def glorot_uniform(key: PRNGKeyArray, shape, dtype=None, gain: Scale = 1.0) -> Array:
    """Glorot/Xavier uniform: $U(-a, a)$ with $a = g\\sqrt{6/(n_{in} + n_{out})}$.

    **Symmetry (audit):** iid non-Gaussian entries: only signed permutations (Bₙ)."""
    shape = _check_shape(shape, "glorot_uniform")
    factor = math.sqrt(3 * variance_scale(shape, "fan_avg"))
    return _uniform(key, shape, dtype, gain, "gain", factor, "glorot_uniform")


def he_uniform(key: PRNGKeyArray, shape, dtype=None, gain: Scale = math.sqrt(2.0)) -> Array:
    """He/Kaiming uniform: $U(-a, a)$ with $a = g\\sqrt{3/n_{in}}$ ($g = \\sqrt 2$).

    **Symmetry (audit):** only signed permutations (Bₙ)."""
    shape = _check_shape(shape, "he_uniform")
    factor = math.sqrt(3 * variance_scale(shape, "fan_in"))
    return _uniform(key, shape, dtype, gain, "gain", factor, "he_uniform")


def _bound(value, name: str, who: str) -> float:
    """A truncation bound: a finite Python or NumPy number or a concrete JAX scalar, as a
    Python float. The bounds choose how the draw is sampled (on the host, in float64),
    so a traced bound is refused by name."""
    value = _concrete(value, name, who, "a finite number")
    if isinstance(value, jax.core.Tracer):
        raise TypeError(f"{who}: `{name}` must be a concrete number (it chooses how the "
                        "draw is sampled, on the host), got a traced value; pass it as a "
                        "Python number, outside `jax.jit`.")
    return check_real(value, name, who=who)


def truncated_normal(key: PRNGKeyArray, shape, dtype=None, stddev: Scale = 1.0,
                     lower: RealLike | Real[Array, ""] = -2.0,
                     upper: RealLike | Real[Array, ""] = 2.0) -> Array:
    """iid normal entries truncated to $[\\text{lower}, \\text{upper}]$ standard deviations
    and rescaled so the standard deviation is `stddev` (like
    `jax.nn.initializers.truncated_normal`). An interval in one tail (lower ≥ 2 or
    upper ≤ −2) is sampled by inverting its log tail probability, so that draws follow
    the truncated law there too (bounds within about ±37). `stddev` may be traced; the
    bounds must be concrete numbers.

    **Symmetry (audit):** bounded iid entries: at most signed permutations (Bₙ, when the
    bounds are symmetric)."""
    shape = _check_shape(shape, "truncated_normal")
    dtype = _check_dtype(dtype, "truncated_normal")
    stddev = _positive(stddev, "stddev", "truncated_normal")
    lower = _bound(lower, "lower", "truncated_normal")
    upper = _bound(upper, "upper", "truncated_normal")
    if not lower < upper:
        raise ValueError(f"truncated_normal: `lower` must be < `upper`, got {lower!r} and "
                         f"{upper!r}.")
    # Variance of the standard normal truncated to [lower, upper]; its mass z from erfc on
    # the side of the tail the interval lies in (a difference of CDFs near 1 loses it).
    phi = lambda t: math.exp(-t * t / 2) / math.sqrt(2 * math.pi)
    tail = lambda t: 0.5 * math.erfc(t / math.sqrt(2))          # P(Z > t)
    if lower >= 0:
        z = tail(lower) - tail(upper)
    elif upper <= 0:
        z = tail(-upper) - tail(-lower)
    else:
        z = 1 - tail(-lower) - tail(upper)
    if not z > 0:
        raise ValueError(f"truncated_normal: [`lower`, `upper`] = [{lower!r}, {upper!r}] "
                         "standard deviations holds no probability mass in float64; use "
                         "bounds within about ±37.")
    if upper - lower >= NARROW:
        mean = (phi(lower) - phi(upper)) / z
        var = 1 + (lower * phi(lower) - upper * phi(upper)) / z - mean * mean
    else:
        var = _narrow_truncated_variance(lower, upper)
    scale = stddev / math.sqrt(var)
    _fits(scale, max(abs(lower), abs(upper)), dtype, "truncated_normal", "stddev", stddev)
    work = _work(dtype)
    if lower >= 2:  # an interval in a tail (see `_one_sided_truncated_normal`)
        w = _one_sided_truncated_normal(key, lower, upper, shape, work)
    elif upper <= -2:
        w = -_one_sided_truncated_normal(key, -upper, -lower, shape, work)
    else:  # the CDF at both bounds is at least 0.02 away from 1: sampled through it
        w = jax.random.truncated_normal(key, lower, upper, shape, work)
    return _scaled(scale, w, dtype)


NARROW = 0.5
"""Intervals narrower than this (in standard deviations) take their truncated variance by
quadrature (`_narrow_truncated_variance`)."""


def _narrow_truncated_variance(a: float, b: float) -> float:
    """The variance of the standard normal truncated to a narrow [a, b] (b − a < NARROW),
    by 48-point Gauss–Legendre quadrature of t = a + (b − a)s over s ∈ [0, 1], with the
    density as exp(−(t² − m²)/2) for m the bound nearest 0 (at most 1, so no underflow)
    and the variance taken about the mean (two passes). The closed form
    1 + (aφ(a) − bφ(b))/Z − mean² subtracts numbers of size a² to leave one of size
    (b − a)²/12: for [3, 3.0001], 2 % of it is lost. Over a width below ½ the integrand's
    exponent changes by at most |a|/2 + ⅛, which the rule integrates to rounding."""
    nodes, weights = np.polynomial.legendre.leggauss(48)
    s = (nodes + 1) / 2
    t = a + (b - a) * s
    m = min(abs(a), abs(b)) if a * b > 0 else 0.0
    w = weights * np.exp(-(t * t - m * m) / 2)
    w = w / np.sum(w)
    mean = np.sum(w * s)
    return float((b - a) ** 2 * np.sum(w * (s - mean) ** 2))


_LOG_ROOT_2PI = 0.5 * math.log(2 * math.pi)


def _one_sided_truncated_normal(key, a: float, b: float, shape, dtype) -> Array:
    """The standard normal truncated to [a, b], 0 ≤ a < b, by inverting the log tail
    probability: with u uniform on [0, 1), t solves log P(Z > t) = log P(Z > a) +
    log(1 − u(1 − P(Z > b)/P(Z > a))). Sampling through the CDF itself (as
    `jax.random.truncated_normal` does) loses the interval's probabilities once it lies
    in a tail (P(Z ≤ a) rounds to 1 in float32 for a ≳ 5, giving a standard deviation
    off by tens of percent); the log tail stays exact out to the dtype's range. The
    log tail is concave, so Newton's method from an upper bound of t (the hazard at a,
    or Mills' ratio) decreases monotonically to it; 8 steps reach float32 rounding from
    either bound for every a in [2, 37] (the absolute precision of the log tail, ~ε, is
    a relative precision of t there)."""
    tail = lambda t: 0.5 * math.erfc(t / math.sqrt(2))          # P(Z > t), float64
    log_a = math.log(tail(a))
    q = -math.expm1(math.log(tail(b)) - log_a) if tail(b) > 0 else 1.0
    u = jax.random.uniform(key, shape, dtype)
    target = log_a + jnp.log1p(-u * q)
    hazard = math.exp(-a * a / 2 - _LOG_ROOT_2PI - log_a)      # φ(a)/P(Z > a)
    t = a + (log_a - target) / hazard          # log P(Z > t) is below its tangent at a
    mills = jnp.sqrt(jnp.maximum(-2 * (target + _LOG_ROOT_2PI), 0))
    t = jnp.where(mills >= 1, jnp.minimum(t, mills), t)   # P(Z > t) ≤ φ(t)/t for t ≥ 1
    for _ in range(8):
        log_tail = jax.scipy.special.log_ndtr(-t)
        slope = -jnp.exp(-t * t / 2 - _LOG_ROOT_2PI - log_tail)
        t = t - (log_tail - target) / slope
    return jnp.clip(t, a, b)


def zeros(key: PRNGKeyArray, shape, dtype=None) -> Array:
    """All-zero weights (the key is unused).

    **Symmetry:** $A\\,0\\,B = 0$: invariant under everything (GL)."""
    del key
    shape = _check_shape(shape, "zeros")
    return jnp.zeros(shape, _check_dtype(dtype, "zeros"))
