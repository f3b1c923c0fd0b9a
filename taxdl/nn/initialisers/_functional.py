"""Pure weight-initialisation functions (isotropic paper App. A.2, eq 48).

Every function has the `jax.nn.initializers` signature `f(key, shape, dtype)` once its
hyperparameters are bound. Matrix shapes follow Equinox's `(out, in)` layout: the last
axis is fan-in, the second-to-last fan-out, and any leading axes index independent
matrices. A 1-D shape `(n,)` has fan-in = fan-out = n.
"""

import functools as ft
import math

import jax
import jax.numpy as jnp
import jax.scipy.special
from jaxtyping import Array, PRNGKeyArray

from ..._types import check_float_dtype, check_real


def _check_shape(shape, who: str, min_ndim: int = 1) -> tuple[int, ...]:
    if isinstance(shape, int):
        shape = (shape,)
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"{who}: `shape` must be a tuple of integers, got {shape!r}.") from None
    if len(shape) < min_ndim or any(isinstance(d, bool) or not isinstance(d, int) or d < 1
                                    for d in shape):
        need = "a matrix shape (..., out, in)" if min_ndim == 2 else "a shape"
        raise ValueError(f"{who}: `shape` must be {need} of positive integers, got {shape!r}.")
    return shape


def _check_dtype(dtype, who: str):
    """The weights' dtype: float32 when None, else a real floating dtype."""
    return check_float_dtype(jnp.float32 if dtype is None else dtype, who)


def _positive(value, name: str, who: str):
    """A scale hyperparameter (gain, radius, limit, stddev): a finite number > 0, named in
    the error; a JAX array (e.g. traced) is used as given."""
    if isinstance(value, jax.Array):
        return value
    return check_real(value, name, who=who, low=0, low_open=True)


def _fits(scale, bound: float, dtype, who: str, name: str, value) -> None:
    """Raise a clear error when weights of scale `scale` (|w| up to `bound`·scale: 1 for
    orthogonal, spherical and uniform draws, the tail of a Gaussian otherwise) would
    overflow `dtype`, instead of returning infinite weights. `value` is the argument
    `name` as the user passed it; a JAX-array scale (traced) is not checked."""
    if isinstance(scale, jax.Array):
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


_CHOLESKY_QR_MIN = 256  # columns from which shifted Cholesky-QR3 beats Householder QR


def _positive_qr(z):
    """The Q factor of the QR decomposition of tall `z` with diag(R) > 0.

    Computed by shifted Cholesky-QR3 — a first pass on $z^Tz + sI$ with a small shift
    $s = 10\\,\\varepsilon\\,\\|z\\|_F^2$, then two plain passes — which is 3–4× faster than
    Householder QR on CPU for large matrices. Every pass multiplies by the inverse of an
    upper-triangular factor with a positive diagonal, so the result is exactly the
    sign-corrected Householder Q in exact arithmetic. Should the Gram matrix be too badly
    conditioned (a Gaussian matrix with condition number ≳ 1/ε, probability ~1e-3 at
    n = 4096), the result is checked and Householder QR is used instead.
    """
    def householder(z):
        qh, r = jnp.linalg.qr(z)
        d = jnp.sign(jnp.diagonal(r, axis1=-2, axis2=-1))
        return qh * jnp.where(d == 0, 1, d)[..., None, :]

    if z.shape[-1] < _CHOLESKY_QR_MIN:
        # Small factors: Householder directly (the Cholesky path only pays off on large
        # matrices).
        return householder(z)
    return _cholesky_qr_or_householder(z)


@jax.custom_batching.custom_vmap
def _cholesky_qr_or_householder(z):
    """Shifted Cholesky-QR3 of `z` (any leading batch axes), or Householder QR for all of
    them if any factor is inaccurate: one scalar predicate, so `lax.cond` runs one branch.

    Under `vmap` the predicate would become batched and `cond` a `select` that runs both
    branches in one program; XLA's CPU runtime can then deadlock (Cholesky and Householder
    custom calls of a few 256-column factors in flight together). The batching rule below
    instead calls this function on the stacked matrices, keeping the predicate scalar."""
    def householder(z):
        qh, r = jnp.linalg.qr(z)
        d = jnp.sign(jnp.diagonal(r, axis1=-2, axis2=-1))
        return qh * jnp.where(d == 0, 1, d)[..., None, :]

    eps = float(jnp.finfo(z.dtype).eps)
    shift = 10 * eps * jnp.sum(z * z, axis=(-2, -1), keepdims=True)
    q = _cholesky_pass(_cholesky_pass(_cholesky_pass(z, shift)))
    norms = jnp.sum(q * q, axis=-2)
    ok = jnp.all(jnp.isfinite(q)) & jnp.all(jnp.abs(norms - 1) < 1e3 * eps)
    return jax.lax.cond(ok, lambda _: q, householder, z)


@_cholesky_qr_or_householder.def_vmap
def _(axis_size, in_batched, z):
    del axis_size, in_batched  # z is batched along its leading axis
    return _cholesky_qr_or_householder(z), True


def haar_orthogonal(key: PRNGKeyArray, shape, dtype=None, gain: float = 1.0) -> Array:
    """Haar (semi-)orthogonal weights $W = g\\,UΛV$ (isotropic paper App. A.2): $U$, $V$
    Haar on O(m), O(n) and $Λ$ the $m×n$ padded identity, for shape `(..., m, n)`.

    Sampled as the sign-corrected QR factor (diag R > 0) of an $\\max(m,n) × \\min(m,n)$
    Gaussian matrix (Mezzadri 2007), which has exactly this law: $UΛV$ is Haar on the
    Stiefel manifold and $V$ (or $U$) is absorbed by its right (left) invariance. The
    factor is computed with Cholesky-QR (BLAS-3, no Python loop; Householder QR as a
    fallback): $O(mn\\min(m,n))$.

    **Symmetry:** $P(AWB) = P(W)$ for all $A ∈ O(m)$, $B ∈ O(n)$ (eq 48).
    """
    shape = _check_shape(shape, "haar_orthogonal", 2)
    dtype = _check_dtype(dtype, "haar_orthogonal")
    gain = _positive(gain, "gain", "haar_orthogonal")
    _fits(gain, 1.0, dtype, "haar_orthogonal", "gain", gain)
    return _haar_orthogonal(key, shape, dtype, gain)


@ft.partial(jax.jit, static_argnums=(1, 2, 3))
def _haar_orthogonal(key, shape, dtype, gain):
    # compiled once per shape, dtype and gain: called outside `jax.jit` (building a model),
    # the Cholesky-QR and its `lax.cond` fallback are traced once, not at every draw
    *batch, m, n = shape
    tall = m >= n
    rows, cols = (m, n) if tall else (n, m)
    q = _positive_qr(jax.random.normal(key, (*batch, rows, cols), _work(dtype)))
    if not tall:
        q = jnp.swapaxes(q, -1, -2)
    return (gain * q).astype(dtype)


def qr_orthogonal(key: PRNGKeyArray, shape, dtype=None, gain: float = 1.0) -> Array:
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
    return (gain * q).astype(dtype)


_MODES = ("fan_in", "fan_out", "fan_avg")


def variance_scale(shape, mode: str, gain: float = 1.0) -> float:
    """$g^2/\\text{fan}$ for `mode` in `"fan_in"`, `"fan_out"`, `"fan_avg"` (Glorot).

    **Symmetry:** not applicable (a helper).
    """
    if mode not in _MODES:
        raise ValueError(f"`mode` must be one of {_MODES}, got {mode!r}.")
    gain = _positive(gain, "gain", "variance_scale")
    fan_in, fan_out = fans(shape)
    fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
    return gain * gain / fan


def isotropic_normal(key: PRNGKeyArray, shape, dtype=None, mode: str = "fan_in",
                     gain: float = 1.0) -> Array:
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
    std = math.sqrt(variance_scale(shape, mode, gain))
    _fits(std, GAUSSIAN_TAIL, dtype, "isotropic_normal", "gain", gain)
    return (std * jax.random.normal(key, shape, _work(dtype))).astype(dtype)


def sphere_uniform(key: PRNGKeyArray, shape, dtype=None, radius: float = 1.0) -> Array:
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
    return (radius * u).astype(dtype)


def uniform(key: PRNGKeyArray, shape, dtype=None, limit: float = 1.0) -> Array:
    """iid uniform weights on $[-a, a]$.

    **Symmetry:** iid uniform entries: the law is invariant under signed permutations only.
    """
    shape = _check_shape(shape, "uniform")
    dtype = _check_dtype(dtype, "uniform")
    limit = _positive(limit, "limit", "uniform")
    _fits(limit, 1.0, dtype, "uniform", "limit", limit)
    return jax.random.uniform(key, shape, _work(dtype), -limit, limit).astype(dtype)


def glorot_uniform(key: PRNGKeyArray, shape, dtype=None, gain: float = 1.0) -> Array:
    """Glorot/Xavier uniform: $U(-a, a)$ with $a = g\\sqrt{6/(n_{in} + n_{out})}$.

    **Symmetry (audit):** iid non-Gaussian entries: only signed permutations (Bₙ)."""
    shape = _check_shape(shape, "glorot_uniform")
    return uniform(key, shape, dtype, math.sqrt(3 * variance_scale(shape, "fan_avg", gain)))


def he_uniform(key: PRNGKeyArray, shape, dtype=None, gain: float = math.sqrt(2.0)) -> Array:
    """He/Kaiming uniform: $U(-a, a)$ with $a = g\\sqrt{3/n_{in}}$ ($g = \\sqrt 2$).

    **Symmetry (audit):** only signed permutations (Bₙ)."""
    shape = _check_shape(shape, "he_uniform")
    return uniform(key, shape, dtype, math.sqrt(3 * variance_scale(shape, "fan_in", gain)))


def truncated_normal(key: PRNGKeyArray, shape, dtype=None, stddev: float = 1.0,
                     lower: float = -2.0, upper: float = 2.0) -> Array:
    """iid normal entries truncated to $[\\text{lower}, \\text{upper}]$ standard deviations
    and rescaled so the standard deviation is `stddev` (like
    `jax.nn.initializers.truncated_normal`). An interval in one tail (lower ≥ 2 or
    upper ≤ −2) is sampled by inverting its log tail probability, so that draws follow
    the truncated law there too (bounds within about ±37).

    **Symmetry (audit):** bounded iid entries: at most signed permutations (Bₙ, when the
    bounds are symmetric)."""
    shape = _check_shape(shape, "truncated_normal")
    dtype = _check_dtype(dtype, "truncated_normal")
    stddev = _positive(stddev, "stddev", "truncated_normal")
    lower = check_real(lower, "lower", who="truncated_normal") if not isinstance(
        lower, jax.Array) else lower
    upper = check_real(upper, "upper", who="truncated_normal") if not isinstance(
        upper, jax.Array) else upper
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
    mean = (phi(lower) - phi(upper)) / z
    var = 1 + (lower * phi(lower) - upper * phi(upper)) / z - mean * mean
    scale = stddev / math.sqrt(var)
    _fits(scale, max(abs(lower), abs(upper)), dtype, "truncated_normal", "stddev", stddev)
    work = _work(dtype)
    if lower >= 2:  # an interval in a tail (see `_one_sided_truncated_normal`)
        w = _one_sided_truncated_normal(key, lower, upper, shape, work)
    elif upper <= -2:
        w = -_one_sided_truncated_normal(key, -upper, -lower, shape, work)
    else:  # the CDF at both bounds is at least 0.02 away from 1: sampled through it
        w = jax.random.truncated_normal(key, lower, upper, shape, work)
    return (scale * w).astype(dtype)


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
