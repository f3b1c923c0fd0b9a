"""Pure normalisation functions (isotropic paper App. A.1, eqs 42–47).

Every function here is overflow-safe: magnitudes are divided by their (gradient-stopped)
largest entry before squaring, so inputs up to the dtype's maximum give finite, correct
outputs, and a zero (or constant) input gives a finite output with a finite gradient
instead of NaN. Half-precision inputs (float16, bfloat16) are computed in float32, where
their subnormals are normal numbers, and the result is cast back to the input dtype.

The kernels (standardisation, statistics, ratios) are jitted, with the axes and ε static:
called eagerly, each is one compiled program instead of a dispatch per operation.

Parameters and statistics (γ, β, μ, …) are scalars or per-feature vectors of shape (n,)
— any shape that broadcasts against the input without enlarging it; another shape is
refused with a `ValueError` naming the argument (a check of static shapes, free under
`jax.jit`).
"""

import functools as ft
import math

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._numerics import (all_rows, compute_dtype, inverse_or_zero, max_magnitude,
                         power_of_two_near, require_floating, safe_norm, sqrt_or_zero,
                         trusted_sum)
from ..._types import INT_TYPES, IntLike, RealLike, check_int
from ._checks import check_eps, check_fits, check_per_feature
from ..activations._functional import isotropic_tanh


def conjugated_gain(gamma: Array, m: Array, minv: Array) -> Array:
    """The per-coordinate gain γ' of a normaliser $γ \\odot z + β$ conjugated by a map
    $x \\mapsto Mx + t$ whose statistics it removes: $\\operatorname{diag}(γ') =
    M^{-1}\\operatorname{diag}(γ)M / s$ with $s_j$ the norm of column j of M, the scale
    the statistics divide out of coordinate j. Exact when M is a monomial map (a
    permutation times a diagonal, e.g. aP, PD), or aR with γ ∝ 1; for other M only the
    nearest diagonal."""
    return jnp.einsum("ij,j,ji->i", minv, gamma, m) / jnp.linalg.norm(m, axis=0)


def _affine(who: str, **parameters) -> tuple:
    """The affine parameters (γ, β, …) as real arrays, in order: JAX arrays (tracers
    included) as given, numbers and array-likes (lists, NumPy arrays) through
    `jnp.asarray`. None, a complex value (its imaginary part would be dropped or make the
    output complex) and anything else that is not a real number or array are refused with
    a `TypeError` naming the argument."""
    out = []
    for name, value in parameters.items():
        message = (f"{who}: `{name}` must be a real number or array (a scalar or "
                   "per-feature vector), got ")
        if value is None:
            raise TypeError(message + "None.")
        given = value
        if not isinstance(value, jax.Array):
            try:
                value = jnp.asarray(value)
            except (TypeError, ValueError):
                raise TypeError(message + f"{type(given).__name__}.") from None
        if not (jnp.issubdtype(value.dtype, jnp.floating)
                or jnp.issubdtype(value.dtype, jnp.integer)):
            shown = getattr(given, "dtype", None) or f"{type(given).__name__} of {value.dtype}"
            raise TypeError(message + f"{shown}.")
        out.append(value)
    return tuple(out)


def _stop_max(x: Array, axis, floor: float = 0.0) -> Array:
    """A power of two near max(max|x|, `floor`) along `axis` (kept), gradient stopped, 1
    where both are 0 (see `power_of_two_near` in `taxdl.nn._numerics`)."""
    return power_of_two_near(jax.lax.stop_gradient(
        jnp.maximum(jnp.max(jnp.abs(x), axis=axis, keepdims=True), floor)))


def _inverse_root(s: Array, e: Array) -> Array:
    """$1/\\sqrt{s + e^2}$ for $s, e \\ge 0$ without overflow or underflow of $e^2$
    (ε dominating a tiny input: $e = \\sqrt ε / \\max|x|$ may be huge; ε small against a
    constant one: e may be tiny), 0 where both are 0 and NaN where s is; the gradient is
    finite everywhere else.

    Where $\\sqrt s > e$ it is $1/(\\sqrt s\\,\\sqrt{1 + (e/\\sqrt s)^2})$. Elsewhere it is
    $1/(e\\sqrt{1 + s/e^2})$, a function of s itself, not of √s: its derivatives in s,
    $-\\tfrac12(s + e^2)^{-3/2}$ and $\\tfrac34(s + e^2)^{-5/2}$, are then exact also where
    s is 0 or has underflowed to 0 (a constant input; $s = \\overline{u^2}$ of $u$ below
    $10^{-19}$ in float32), where √s has no usable derivative and second derivatives
    would be lost. That form is kept to e above $4\\,\\mathrm{max}^{-1/5}$ ($2\\cdot10^{-8}$
    in float32), where $e^{-5}$ is representable: below it the second derivative
    overflows, and times the zero it multiplies at a constant input (whose centred values
    are 0) would be NaN. There the first form is used with the roles of √s and e
    exchanged, whose derivative through √s is cut at s = 0 (finite, and exact where it
    multiplies 0). √s is differentiated only in the rows whose value uses it (its own
    second derivative overflows for tiny s). `e` is a constant to autodiff (every caller
    forms it from ε and a gradient-stopped scale): its own partial, which would form e⁴
    (flushed to 0 below e ≈ 1e-10 in float32), is not taken."""
    e = jax.lax.stop_gradient(e)
    info = jnp.finfo(jnp.result_type(s))
    by_s = jax.lax.stop_gradient(sqrt_or_zero(s)) > e   # (a choice: no derivative)
    fine = ~by_s & (e >= 4 * float(info.max) ** -0.2)
    coarse = ~by_s & ~fine & (e > 0)
    a = sqrt_or_zero(jnp.where(by_s | coarse, s, 1))
    hi = jnp.where(by_s, a, jnp.where(coarse, e, 1))
    t = jnp.where(by_s, e, jnp.where(coarse, a, 0)) / hi
    e_fine = jnp.where(fine, e, 1)
    r = jnp.where(fine, 1 / (e_fine * jnp.sqrt(1 + s / (e_fine * e_fine))),
                  1 / (hi * jnp.sqrt(1 + t * t)))
    return jnp.where(by_s | (e > 0), r, jnp.where(s != s, s, 0))


@ft.partial(jax.jit, static_argnames=("axis", "root_eps", "reduce"))
def _scaled_standardise(c: Array, axis, root_eps: float = 0.0, reduce: str = "mean") -> Array:
    """$c / \\sqrt{\\operatorname{reduce}(c^2) + ε}$ along `axis`, overflow-safe, given
    `root_eps` $= \\sqrt ε$ (a Python number, static).

    $c$ is divided by a power of two $m \\approx \\max(\\max|c|, \\sqrt ε)$ (gradient
    stopped; the result does not depend on $m$), so the squares cannot overflow, and
    $u = c/m$ and $e = \\sqrt ε/m$ are at most 2 with one of them at least ½: the powers of
    $ρ = 1/\\sqrt{\\overline{u^2} + e^2}$ that the second derivative forms ($ρ^3$, $ρ^5$)
    stay in range. (On the scale of $\\max|c|$ alone, $e$ would be huge at inputs far below
    $\\sqrt ε$ and $ρ^3$ would underflow: Hessian-vector products of float32 inputs of size
    1e-16 with ε = 1e-5 would lose half their value.) Where √ε dominates, $u^2$ may
    underflow, which only drops terms below the rounding of $e^2$ (`_inverse_root` keeps
    the derivative in s). The value skips that division (and the pass it costs) when no
    row needs it (`_standardise`).
    Where the denominator vanishes (all-zero $c$ with $ε = 0$) the result is $0$ with a
    zero gradient. Computed in `compute_dtype` (float32 for half precisions).
    """
    c = c.astype(compute_dtype(c.dtype))
    if c.size == 0:  # nothing to standardise (its reductions would have no identity)
        return c
    return _standardise(c, root_eps, axis, reduce)


def _standardise_by_max(c: Array, root_eps: float, axis, reduce: str) -> Array:
    m = _stop_max(c, axis, root_eps)
    return _standardise_bounded(c / m, axis, root_eps / m, reduce)


@ft.partial(jax.custom_jvp, nondiff_argnums=(1, 2, 3))
def _standardise(c: Array, root_eps: float, axis, reduce: str) -> Array:
    """`_standardise_by_max`, its value computed from the plain sum of squares when every
    row's is in the trusted range (`sum_of_squares_bounds`; a whole-batch `lax.cond`):
    one reduction and one elementwise pass instead of a max, a pass writing c/m out in
    full and a reduction of it. Division by the power of two m changes no bit, so the
    two agree to rounding (exactly unless some squares underflow). Derivatives are those
    of `_standardise_by_max`."""
    s = jnp.sum(c * c, axis=axis, keepdims=True)
    trusted = all_rows(trusted_sum(s))

    def plain(c, s):
        if reduce == "mean":
            s = s / (c.size // s.size)
        return c * _inverse_root(s, jnp.asarray(root_eps, c.dtype))

    def by_max(c, s):
        return _standardise_by_max(c, root_eps, axis, reduce)

    return jax.lax.cond(trusted, plain, by_max, c, s)


@_standardise.defjvp
def _standardise_jvp(root_eps, axis, reduce, primals, tangents):
    return jax.jvp(lambda c: _standardise_by_max(c, root_eps, axis, reduce), primals, tangents)


def _reduce(v: Array, axis, reduce: str) -> Array:
    return (jnp.mean if reduce == "mean" else jnp.sum)(v, axis=axis, keepdims=True)


def _standardise_bounded(u: Array, axis, e, reduce: str = "mean") -> Array:
    """$u / \\sqrt{\\operatorname{reduce}(u^2) + e^2}$ along `axis` for $u$ of magnitude
    at most 8 (its squares cannot overflow), $e$ never squared (`_inverse_root`)."""
    return u * _inverse_root(_reduce(u * u, axis, reduce), e)


@ft.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _standardise_centred(u: Array, axis, e) -> Array:
    """`_standardise_bounded` (mean) of centred values u, with its derivative written as
    $dy = ρ\\,(du - y\\,\\overline{y\\,du})$, $ρ = 1/\\sqrt{\\overline{u^2} + e^2}$.
    Autodiff of the value forms $ρ^3\\,\\overline{u\\,du}$, which overflows to NaN
    when the scale of u is clamped (inputs within a few times the smallest normal
    number) and du = dx/m is large although dy is representable; the written-out rule
    also compiles to fewer passes (LayerNorm forward+backward 0.6-1.0x the autodiff
    one, compared in one process). `e` is a constant for the callers (ε over a
    gradient-stopped power of two): its tangent is not used."""
    return _standardise_bounded(u, axis, e)


@_standardise_centred.defjvp
def _standardise_centred_jvp(axis, primals, tangents):
    u, e = primals
    du, _ = tangents
    rho = _inverse_root(_reduce(u * u, axis, "mean"), e)
    y = u * rho
    return y, (du - y * _reduce(y * du, axis, "mean")) * rho


@ft.partial(jax.jit, static_argnames=("axis", "eps"))
def _centred_standardise(x: Array, axis, eps=0.0) -> Array:
    """$(x - \\bar x)/\\sqrt{\\overline{(x - \\bar x)^2} + ε}$ along `axis`, computed on
    $x/m$ ($m$ a power of two near $\\max(\\max|x|, \\sqrt ε)$, $\\max|x|$ found from
    $\\max x$ and $\\min x$; the floor √ε keeps second derivatives in range, see
    `_scaled_standardise`) so that neither the mean nor the centred values can overflow:
    $|x/m| \\le 4$ (m is clamped to the normal range), so the centred values are at most
    8 and their squares are summed without a second scaling (which would change no bit:
    it is by a power of two). At an exactly constant input ($\\max x = \\min x$) the
    centred values are set to 0 (see `_range`) with the gradient of $x - \\bar x$ kept, so
    that with ε > 0 the gradient there is $(I - \\tfrac1n J)/\\sqrt ε$, as it is nearby."""
    x = x.astype(compute_dtype(x.dtype))
    if x.size == 0:  # nothing to standardise (its reductions would have no identity)
        return x
    largest, constant = _range(x, axis)
    m = power_of_two_near(jnp.maximum(largest, math.sqrt(eps)))
    u = x / m
    centred = _zero_where_constant(u - jnp.mean(u, axis=axis, keepdims=True), constant)
    return _standardise_centred(centred, axis, math.sqrt(eps) / m)


def _range(x: Array, axis) -> tuple[Array, Array]:
    """max|x| along `axis` (kept) and whether `x` is exactly constant there (zero
    variance), both from max x and min x, gradient stopped.

    The centred values of a constant input are the rounding error of its mean (under
    `jit`, XLA's reciprocal-multiply mean leaves them nonzero for most constants), which
    a zero-variance normaliser would blow up to unit scale; callers set them to exactly 0
    where the second value holds. The test is exact (no tolerance), so a nonconstant
    input, however small its spread relative to its mean, is standardised."""
    hi = jax.lax.stop_gradient(jnp.max(x, axis=axis, keepdims=True))
    lo = jax.lax.stop_gradient(jnp.min(x, axis=axis, keepdims=True))
    return jnp.maximum(jnp.abs(hi), jnp.abs(lo)), hi == lo


def _zero_where_constant(centred: Array, constant: Array) -> Array:
    """`centred` with exactly 0 where `constant` holds (the rounding error of the mean,
    see `_range`), its gradient kept everywhere: that of $x - \\bar x$, so that with
    ε > 0 the Jacobian of a constant input is what it is nearby."""
    return centred - jax.lax.stop_gradient(jnp.where(constant, centred, 0))


def unit_vector(x: Float[Array, "*b n"]) -> Float[Array, "*b n"]:
    """The unit vector $\\hat x = x / \\|x\\|$ along the last axis, with $\\hat 0 = 0$.

    Exact to rounding for any magnitude (no overflow or underflow of $\\|x\\|^2$); the
    gradient $(I - \\hat x\\hat x^T)/\\|x\\|$ is finite everywhere except that at the
    zero vector it is defined as $0$.

    **Symmetry:** algebraically O(n)-equivariant and ℝ×₊-right-invariant.
    """
    require_floating(x, "unit_vector", "x")
    return _scaled_standardise(x, -1, 0.0, reduce="sum").astype(x.dtype)


def centred_standardise(x: Float[Array, "*b n"], eps: RealLike = 0.0) -> Float[Array, "*b n"]:
    """$(x - \\mathbb E_i x)/\\sqrt{ε + \\operatorname{Var}_i x}$ along the last axis (the
    normalisation inside LayerNorm, eq 43); a constant input maps to $0$.

    **Symmetry:** algebraically equivariant to O(n−1) fixing 1 and (ε = 0) invariant to
    positive scalings and shifts along 1.
    """
    require_floating(x, "centred_standardise", "x")
    eps = check_eps(eps, "centred_standardise")
    return _centred_standardise(x, -1, eps).astype(x.dtype)


def simple_isotropic_layer_norm(x: Float[Array, "*b n"], gamma: Float[Array, ""] | RealLike,
                                beta) -> Float[Array, "*b n"]:
    """Simple isotropic layer-norm $f(x) = γ\\hat x + \\vec β$ (isotropic paper App.
    A.1.1) with a scalar $γ$ and a vector $\\vec β$; $f(0) = \\vec β$.

    **Symmetry:** algebraically ℝ×₊-right-invariant; O(n)-equivariant when $\\vec β = 0$.
    """
    require_floating(x, "simple_isotropic_layer_norm", "x")
    gamma, beta = _affine("simple_isotropic_layer_norm", gamma=gamma, beta=beta)
    if jnp.ndim(gamma) != 0:
        raise ValueError(f"simple_isotropic_layer_norm: `gamma` must be a scalar (an "
                         f"isotropic gain), got shape {jnp.shape(gamma)}.")
    check_per_feature(x, "simple_isotropic_layer_norm", beta=beta)
    return gamma * unit_vector(x) + beta


_NORMALISATIONS = ("unit", "tanh")


def isotropic_layer_norm(x: Float[Array, "*b n"], w_in: Float[Array, "k n"],
                         w_out: Float[Array, "n k"], b_out: Float[Array, " n"],
                         normalisation: str = "unit") -> Float[Array, "*b n"]:
    """Isotropic layer-norm (isotropic paper App. A.1): the bottleneck
    $f(x) = W_{out}\\,σ(W_{in} x) + b_{out}$ with $W_{in}: ℝ^n \\to ℝ^k$ ($k = n - 2$
    mirrors LayerNorm's two lost degrees of freedom), an isotropic normalisation σ on
    $ℝ^k$ — the unit vector $\\hat y$ (`"unit"`) or isotropic tanh (`"tanh"`, eq 15) — and
    the affine map $ℝ^k \\to ℝ^n$ that replaces γ and β. Computed in float32 for
    half-precision x (output in x's dtype). $W_{in}$ is applied to x scaled by a power of
    two near its largest component, so its partial sums cannot overflow: the unit vector
    is that of the scaled product, and isotropic tanh that of $y = W_{in} x$ with
    ‖y‖ capped at 20 (tanh 20 = 1 to rounding), both exact at any magnitude.

    **Symmetry:** σ is O(k)-equivariant, so the parameters absorb any GL action (closure);
    the class is algebraically ℝ×₊-right-invariant when σ is the unit vector.
    """
    if normalisation not in _NORMALISATIONS:
        raise ValueError(f"`normalisation` must be one of {_NORMALISATIONS}, got "
                         f"{normalisation!r}.")
    require_floating(x, "isotropic_layer_norm", "x")
    _check_bottleneck(x, w_in, w_out, b_out)
    work = compute_dtype(x.dtype)  # float32 for half precisions: W_in x overflows float16
    xw = x.astype(work)
    p = jax.lax.stop_gradient(power_of_two_near(max_magnitude(xw)))
    hs = jnp.einsum("kn,...n->...k", w_in.astype(work), xw / p)  # W_in x / p
    if normalisation == "unit":
        h = unit_vector(hs)
    else:
        # isotropic tanh of y = hs p with ‖y‖ capped at 20, where tanh is 1 to float64
        # rounding: the same value and derivative, and no component beyond range
        cap = 20 * inverse_or_zero(safe_norm(hs, keepdims=True))
        h = isotropic_tanh(hs * jnp.where((cap > 0) & (cap < p), cap, p))
    return (jnp.einsum("nk,...k->...n", w_out.astype(work), h) + b_out.astype(work)
            ).astype(x.dtype)


def _check_bottleneck(x, w_in, w_out, b_out) -> None:
    """$W_{in}$ of shape (k, n), $W_{out}$ of shape (n, k) and $b_{out}$ a vector of
    shape (n,) (or a scalar), for x of shape (..., n)."""
    who = "isotropic_layer_norm"
    if x.ndim == 0:
        raise ValueError(f"{who}: `x` must have a feature axis, shape (..., n), got shape ().")
    n = x.shape[-1]
    if jnp.ndim(w_in) != 2 or jnp.shape(w_in)[1] != n:
        raise ValueError(f"{who}: `w_in` must be of shape (k, n) = (k, {n}), got shape "
                         f"{jnp.shape(w_in)}.")
    k = jnp.shape(w_in)[0]
    if jnp.shape(w_out) != (n, k):
        raise ValueError(f"{who}: `w_out` must be of shape (n, k) = ({n}, {k}) for `w_in` "
                         f"of shape {jnp.shape(w_in)}, got shape {jnp.shape(w_out)}.")
    check_per_feature(x, who, b_out=b_out)


def layer_norm(x: Float[Array, "*b n"], gamma, beta, eps: RealLike = 0.0) -> Float[Array, "*b n"]:
    """LayerNorm $γ \\odot (x - \\mathbb E_i x)/\\sqrt{ε + \\operatorname{Var}_i x} + β$
    (isotropic paper eq 43) over the last axis; γ, β scalars or vectors.

    With `eps = 0` (the form of Table 5.2) a constant input (zero variance) maps to β
    instead of NaN, and its gradient is finite.

    **Symmetry:** see [`LayerNorm`][taxdl.nn.LayerNorm] (Table 5.2 rows).
    """
    require_floating(x, "layer_norm", "x")
    eps = check_eps(eps, "layer_norm")
    gamma, beta = _affine("layer_norm", gamma=gamma, beta=beta)
    check_per_feature(x, "layer_norm", gamma=gamma, beta=beta)
    return gamma * _centred_standardise(x, -1, eps).astype(x.dtype) + beta


def rms_norm(x: Float[Array, "*b n"], gamma, eps: RealLike = 0.0) -> Float[Array, "*b n"]:
    """RMSNorm $γ \\odot x / \\sqrt{ε + \\mathbb E_i x_i^2}$ over the last axis; $0 \\mapsto 0$.

    **Symmetry:** only a per-coordinate γ breaks the O(n)-equivariance of
    $\\sqrt n\\,\\hat x$; see [`RMSNorm`][taxdl.nn.RMSNorm].
    """
    require_floating(x, "rms_norm", "x")
    eps = check_eps(eps, "rms_norm")
    (gamma,) = _affine("rms_norm", gamma=gamma)
    check_per_feature(x, "rms_norm", gamma=gamma)
    return gamma * _scaled_standardise(x, -1, math.sqrt(eps)).astype(x.dtype)


def _check_groups(n: int, groups: IntLike) -> int:
    if (isinstance(groups, bool) or not isinstance(groups, INT_TYPES) or groups < 1
            or n % groups):
        raise ValueError(f"group_norm: `groups` must be a positive divisor of the channel "
                         f"count {n}, got {groups!r}.")
    return n // int(groups)


def group_norm(x: Float[Array, "*s n"], gamma, beta, groups: IntLike,
               eps: RealLike = 0.0) -> Float[Array, "*s n"]:
    """GroupNorm (isotropic paper App. A.1): channels last, split into `groups`
    contiguous groups; each group is standardised with the mean and variance over its
    channels and all leading (spatial) positions, then $γ \\odot \\cdot + β$ per channel.

    `groups = 1` is LayerNorm (over channels and positions); `groups = n` is
    InstanceNorm (eq 44).

    **Symmetry:** equivariant to permutations within each group (γ, β generic: trivial);
    (ℝ×₊, +λ1)-right-invariant when ε = 0.
    """
    return _group_norm(x, gamma, beta, groups, eps, "group_norm")


def _group_norm(x, gamma, beta, groups, eps, who: str):
    require_floating(x, who, "x")
    eps = check_eps(eps, who)
    gamma, beta = _affine(who, gamma=gamma, beta=beta)
    check_per_feature(x, who, gamma=gamma, beta=beta)
    n = x.shape[-1]
    c = _check_groups(n, groups)
    if x.size == 0:  # no channels or no positions: nothing to standardise
        return gamma * x + beta
    xg = x.reshape(*x.shape[:-1], n // c, c)
    axes = tuple(range(x.ndim - 1)) + (x.ndim,)
    y = _centred_standardise(xg, axes, eps).reshape(x.shape).astype(x.dtype)
    return gamma * y + beta


def instance_norm(x: Float[Array, "*s n"], gamma, beta, eps: RealLike = 0.0
                  ) -> Float[Array, "*s n"]:
    """InstanceNorm (isotropic paper eq 44), channels last: every channel is standardised
    with its own mean and variance over the leading (spatial) positions, then
    $γ_i \\cdot + β_i$. A channel that is constant over the positions maps to $β_i$.

    **Symmetry:** equivariant to signed permutations of the channels for constant γ and
    β = 0; (ℝ×₊, +λ1)-right-invariant when ε = 0.
    """
    require_floating(x, "instance_norm", "x")
    if x.shape[-1] == 0:  # no channels
        gamma, beta = _affine("instance_norm", gamma=gamma, beta=beta)
        check_per_feature(x, "instance_norm", gamma=gamma, beta=beta)
        return gamma * x + beta
    return _group_norm(x, gamma, beta, x.shape[-1], eps, "instance_norm")


def batch_norm(x: Float[Array, "b *s n"], gamma, beta, eps: RealLike = 0.0
               ) -> Float[Array, "b *s n"]:
    """BatchNorm over an explicit batch (isotropic paper eq 42): every coordinate
    (channel, last axis) is standardised with its mean and variance over the batch (and
    spatial) axes, then $γ \\odot \\cdot + β$. A batch of one maps to β.

    **Symmetry:** the batch map commutes with signed permutations of the channels
    (γ = 1, β = 0); per-coordinate statistics break O(n).
    """
    require_floating(x, "batch_norm", "x")
    eps = check_eps(eps, "batch_norm")
    if x.ndim < 2:
        raise ValueError(f"batch_norm: `x` must be a batch of shape (b, *spatial, n), got "
                         f"shape {x.shape}.")
    gamma, beta = _affine("batch_norm", gamma=gamma, beta=beta)
    check_per_feature(x, "batch_norm", gamma=gamma, beta=beta)
    axes = tuple(range(x.ndim - 1))
    return gamma * _centred_standardise(x, axes, eps).astype(x.dtype) + beta


def chi_mean(n: IntLike) -> float:
    """The mean of the Chi distribution with `n` degrees of freedom (isotropic paper
    eq 45), $\\mathbb E\\|z\\| = \\sqrt 2\\,Γ(\\tfrac{n+1}2)/Γ(\\tfrac n2)$ for
    $z \\sim \\mathcal N(0, I_n)$; computed with log-gamma so it is exact for any n.

    **Symmetry:** not applicable (a constant of eq 45).
    """
    n = check_int(n, "n", who="chi_mean")
    return math.sqrt(2.0) * math.exp(math.lgamma((n + 1) / 2) - math.lgamma(n / 2))


def chi_scale(n: IntLike) -> float:
    """$\\sqrt n / \\mathbb E_{χ_n}$: the factor that maps a magnitude-standardised vector
    ($\\mathbb E\\|z\\|^2 = n$ for Gaussian data) to unit mean magnitude.

    **Symmetry:** not applicable (a constant).
    """
    return math.sqrt(int(n)) / chi_mean(n)


def chi_apply(x: Float[Array, "*b n"], mean: Float[Array, " n"] | Float[Array, ""] | RealLike,
              rms: Float[Array, ""] | RealLike, gamma, beta, eps: RealLike = 0.0
              ) -> Float[Array, "*b n"]:
    """The per-example Chi-normaliser with given statistics (eq 47):
    $γ\\,\\frac{\\sqrt n}{\\mathbb E_{χ_n}}\\,\\frac{x - μ}{\\sqrt{ρ^2 + ε}} + \\vec β$, where
    $μ$ is the batch mean and $ρ^2 = \\mathbb E_B\\|x - μ\\|^2$ the mean squared magnitude.

    With Gaussian data and γ = 1 the magnitudes $\\|f(x) - β\\|$ then follow a Chi
    distribution scaled to mean 1. A zero statistic (batch of one, ε = 0) gives β.
    Computed on $x, μ, ρ$ divided by their common largest magnitude (no overflow).

    **Symmetry:** with μ and ρ moved along with x (batch statistics of rotated data),
    O(n)-equivariant when β = 0: the data-like symmetry of [`ChiNorm`][taxdl.nn.ChiNorm].
    """
    require_floating(x, "chi_apply")
    eps = check_eps(eps, "chi_apply")
    gamma, beta = _affine("chi_apply", gamma=gamma, beta=beta)
    check_per_feature(x, "chi_apply", mean=mean, gamma=gamma, beta=beta)
    check_fits(rms, "rms", x.shape, "chi_apply", "a scalar")
    return _chi_apply(x, mean, rms, gamma, beta, eps)


def _chi_apply(x, mean, rms, gamma, beta, eps: float):
    return gamma * (chi_scale(x.shape[-1]) * _ratio(x, mean, rms, eps)) + beta


@ft.partial(jax.jit, static_argnames=("eps",))
def _ratio(x, mean, scale, eps):
    """$(x - μ)/\\sqrt{s^2 + ε}$ (elementwise s allowed), overflow-safe: x, μ and s are
    first divided by a power of two near their common largest magnitude or √ε, whichever
    is larger (gradient stopped; see `_scaled_standardise`). Computed in
    `compute_dtype(x.dtype)` (statistics of any dtype), returned in x's dtype."""
    work = compute_dtype(x.dtype)
    mean, scale = jnp.asarray(mean, work), jnp.asarray(scale, work)
    dtype, x = x.dtype, x.astype(work)
    if x.size == 0:
        return x.astype(dtype)
    # a scalar μ is shared by every feature: its magnitude is the largest one itself
    mean_max = jnp.max(jnp.abs(mean), axis=-1, keepdims=True) if mean.ndim else jnp.abs(mean)
    m = jnp.maximum(jnp.maximum(jnp.max(jnp.abs(x), axis=-1, keepdims=True), mean_max),
                    jnp.maximum(jnp.max(jnp.abs(scale)), math.sqrt(eps)))
    m = power_of_two_near(jax.lax.stop_gradient(m))
    c = x / m - mean / m
    sc = scale / m
    return (c * _inverse_root(sc * sc, math.sqrt(eps) / m)).astype(dtype)


def _require_batch(x, who: str) -> None:
    """A real floating batch of shape (b, n) with b ≥ 1 (the statistics of no rows are
    undefined)."""
    require_floating(x, who, "x")
    if x.ndim != 2:
        raise ValueError(f"{who}: `x` must be a batch of shape (b, n), got shape {x.shape}.")
    if x.shape[0] == 0:
        raise ValueError(f"{who}: `x` must hold at least one row (b >= 1) for its batch "
                         f"statistics, got shape {x.shape}.")


@jax.jit
def chi_statistics(x: Float[Array, "b n"]) -> tuple[Float[Array, " n"], Float[Array, ""]]:
    """Batch statistics of the Chi-normaliser (eqs 46–47): the batch mean $μ$ (eq 46)
    and the RMS magnitude $ρ = \\sqrt{\\mathbb E_B\\|x - μ\\|^2}$ of the centred batch,
    computed on $x/\\max|x|$ without overflow. Returned in `compute_dtype` (float32 for
    half precisions: ρ grows like √n·max|x| and would overflow float16).

    **Symmetry:** a rotated batch XRᵀ has statistics (Rμ, ρ).
    """
    _require_batch(x, "chi_statistics")
    x = x.astype(compute_dtype(x.dtype))
    dtype = x.dtype
    if x.size == 0:  # no features: an empty mean and a zero magnitude
        return jnp.zeros(x.shape[1:], dtype), jnp.zeros((), dtype)
    mu, _, s, m = _scaled_centred_batch(x)
    rms = sqrt_or_zero(s) * m
    return (mu * m).astype(dtype), rms.astype(dtype)


def _scaled_centred_batch(x, floor: float = 0.0):
    """The batch (axis 0) on the scale $m$, a power of two near max(max|x|, `floor`)
    (gradient stopped; `floor` = √ε keeps second derivatives in range, see
    `_scaled_standardise`): $(μ/m,\\ c = (x - μ)/m,\\ s = \\mathbb E_B\\|c\\|^2,\\ m)$,
    with |c| ≤ 8 (see `_centred_standardise`), so that neither the mean nor the squares overflow. A
    coordinate constant over the batch (identical rows: every coordinate) has c = 0
    exactly, with the gradient of x − μ kept."""
    largest, constant = _range(x, 0)
    m = power_of_two_near(jnp.maximum(jnp.max(largest), floor))
    u = x / m
    mu = jnp.mean(u, axis=0)
    c = _zero_where_constant(u - mu, constant)
    return mu, c, jnp.mean(jnp.sum(c * c, axis=-1)), m


@jax.jit
def batch_statistics(x: Float[Array, "b n"]) -> tuple[Float[Array, " n"], Float[Array, " n"]]:
    """Per-coordinate batch mean and standard deviation (eq 42), overflow-safe.

    Returned in `compute_dtype` (float32 for half precisions).

    **Symmetry:** a batch with permuted and sign-flipped channels has permuted statistics
    (signs on the mean).
    """
    _require_batch(x, "batch_statistics")
    x = x.astype(compute_dtype(x.dtype))
    dtype = x.dtype
    if x.size == 0:  # no features
        return jnp.zeros(x.shape[1:], dtype), jnp.zeros(x.shape[1:], dtype)
    largest, constant = _range(x, 0)
    m = power_of_two_near(largest)
    u = x / m
    mu = jnp.mean(u, axis=0, keepdims=True)
    c = jnp.where(constant, 0, u - mu)  # |c| ≤ 8 (see _centred_standardise)
    s = jnp.mean(c * c, axis=0, keepdims=True)
    std = sqrt_or_zero(s) * m
    return (mu * m)[0].astype(dtype), std[0].astype(dtype)


def batch_apply(x: Float[Array, "*b n"], mean: Float[Array, " n"], std: Float[Array, " n"],
                gamma, beta, eps: RealLike = 0.0) -> Float[Array, "*b n"]:
    """BatchNorm with given per-coordinate statistics: $γ \\odot (x - μ)/\\sqrt{σ^2 + ε} + β$.

    **Symmetry:** as [`BatchNorm`][taxdl.nn.BatchNorm].
    """
    require_floating(x, "batch_apply", "x")
    eps = check_eps(eps, "batch_apply")
    gamma, beta = _affine("batch_apply", gamma=gamma, beta=beta)
    check_per_feature(x, "batch_apply", mean=mean, std=std, gamma=gamma, beta=beta)
    return gamma * _ratio(x, mean, std, eps) + beta


def chi_norm(x: Float[Array, "b n"], gamma, beta, eps: RealLike = 0.0) -> Float[Array, "b n"]:
    """Chi-normalisation of an explicit batch (isotropic paper eqs 45–47): remove the
    batch mean (eq 46), divide by the batch RMS magnitude and by the Chi mean (eq 45)
    so that magnitudes are standardised, then $γ\\,\\cdot + \\vec β$ (eq 47).

    The paper's eq 46 divides the batch sum by $n$; the batch *mean* (divide by the batch
    size) is what the text describes and what is used here. Eq 47's denominator
    $\\sqrt{X'_{sm}X'_{sm} + ε}$ sums over the batch; here it is averaged over the batch
    (so the output does not depend on the batch size) and the $\\sqrt n/\\mathbb E_{χ_n}$
    factor the text says "is absorbed into γ" is kept explicit, so γ = 1 gives unit mean
    magnitude for Gaussian data.

    **Symmetry:** the batch map X ↦ f(X) is O(n)-equivariant when β = 0: f(XRᵀ) = f(X)Rᵀ.
    """
    require_floating(x, "chi_norm", "x")
    if x.ndim != 2:
        raise ValueError(f"`x` must be a batch of shape (b, n), got shape {x.shape}.")
    # one cast in and one out, as the ChiNorm module does: the gradient's two paths
    # (through x directly and through the statistics) are summed in the compute dtype,
    # so a half-precision gradient that overflows is ±inf (as for the other normalisers)
    # rather than inf − inf = NaN
    eps = check_eps(eps, "chi_norm")
    gamma, beta = _affine("chi_norm", gamma=gamma, beta=beta)
    check_per_feature(x, "chi_norm", gamma=gamma, beta=beta)
    if x.size == 0:  # no rows or no features: nothing to normalise
        return x
    work = compute_dtype(x.dtype)
    ratio = _chi_ratio(x.astype(work), eps)
    return (gamma.astype(work) * (chi_scale(x.shape[-1]) * ratio)
            + beta.astype(work)).astype(x.dtype)


@ft.partial(jax.jit, static_argnames=("eps",))
def _chi_ratio(x, eps: float):
    """$(x - μ)/\\sqrt{ρ^2 + ε}$ with the batch statistics of `chi_statistics`, formed
    on the scale of `_scaled_centred_batch` without forming ρ itself, which exceeds the
    dtype's range (√n·max|x|) for batches near its largest number although the ratio
    does not. A constant batch gives 0 with the gradient of x − μ kept, as
    `_centred_standardise` does."""
    _, c, s, m = _scaled_centred_batch(x, math.sqrt(eps))
    return c * _inverse_root(s, math.sqrt(eps) / m)


def magnitude_normalise(x: Float[Array, "*b n"], scale: Float[Array, ""] | RealLike, gamma,
                        beta, eps: RealLike = 0.0) -> Float[Array, "*b n"]:
    """Time-like magnitude normalisation (isotropic paper App. A.1.1, last paragraph):
    $γ\\,x / (s + ε) + \\vec β$ with $s$ a (gradient-stopped) moving average of the
    magnitude $\\|x\\|$ over training steps; $s + ε = 0$ gives β, a NaN statistic gives
    NaN (it is not read as 0). A magnitude is never
    negative: a concrete negative `scale` is refused (a `ValueError` naming it); a traced
    one (under `jax.jit`) is not checked, which would need a host sync.

    **Symmetry:** for a fixed statistic, affine with a scalar linear part: O(n)-equivariant
    (indeed GL) when β = 0.
    """
    require_floating(x, "magnitude_normalise", "x")
    eps = check_eps(eps, "magnitude_normalise")
    check_fits(scale, "scale", x.shape, "magnitude_normalise", "a scalar")
    gamma, beta = _affine("magnitude_normalise", gamma=gamma, beta=beta)
    check_per_feature(x, "magnitude_normalise", gamma=gamma, beta=beta)
    _check_magnitude(scale, "scale", "magnitude_normalise")
    work = compute_dtype(x.dtype)
    s = jax.lax.stop_gradient(jnp.asarray(scale, work)) + eps
    ok = s > 0
    # NaN where the statistic is NaN (never read as 0, which would give β), as in
    # `_inverse_root`
    inv = jnp.where(ok, 1 / jnp.where(ok, s, 1), jnp.where(s != s, s, 0))
    return gamma * (x.astype(work) * inv).astype(x.dtype) + beta


def _check_magnitude(value, name: str, who: str) -> None:
    """A concrete magnitude statistic (a number or a JAX or NumPy array that is not a
    tracer) is ≥ 0; a traced one is not checked (that would need a host sync), nor is a
    NaN refused (the statistic of a NaN input, which the modules carry as any value)."""
    if isinstance(value, jax.core.Tracer):
        return
    v = np.asarray(value)
    real = jnp.issubdtype(v.dtype, jnp.floating) or jnp.issubdtype(v.dtype, jnp.integer)
    if real and np.any(v < 0):
        shown = v.item() if v.ndim == 0 else f"an array with entries down to {v.min()}"
        raise ValueError(f"{who}: `{name}` must be >= 0 (a magnitude statistic), got "
                         f"{shown}.")
