"""Kernels of the conic activations CoLU (Fu & Cohen eqs 1–4) and RCoLU (eq 5).

Both are written for speed on any channel axis without moving it: the channel axis of
size C is split in place into cones, per-cone scalars (axis value, body norm, weight)
are computed with the sums over the S−1 body components written out (XLA hands short
reductions to a slow library kernel), and the output is one broadcast expression over
the channels. Derivatives are hand-written as a `jax.custom_jvp` rule, so every JAX
transformation works (`jax.grad`, `jax.vjp`, `jax.jvp`, `jax.jacfwd`, `jax.hessian`,
`jax.vmap` of any of them). The tangent map is written so that its automatic transpose
(reverse mode) is one per-cone pass (q = ⟨body, cotangent⟩) and one elementwise pass:
its per-cone reductions over the short component axis (forward mode only) transpose to
broadcasts, and its broadcasts of per-cone values are concatenations, whose transposes
are written-out sums of slices (autodiff through narrow slices would give long
pad-and-add chains, and the transpose of a broadcast a short-axis reduction, which XLA's
CPU backend runs ~10× slower than a written-out sum).

Per cone with axis value $a$, body $b \\in ℝ^{S-1}$, $d = \\|b\\| + ε$, $ρ = a/d$ and a
weight $w = W(ρ)$ (hard: clip(ρ, 0, 1); firm: sigmoid(4ρ − 2); soft: sigmoid(ρ − ½)):

$$y_a = R(a),\\quad y_b = w\\,b,\\qquad
\\bar a = R'(a)\\,\\bar y_a + \\frac{W'(ρ)}{d}\\,q,\\quad
\\bar b = w\\,\\bar y_b - \\frac{W'(ρ)\\,ρ\\,q}{d\\,\\|b\\|}\\,b,\\quad q = ⟨b, \\bar y_b⟩,$$

with $R$ the identity (eq 1) or, as a documented departure, ReLU/SiLU ("rectified
axis"). At $b = 0$ the second term of $\\bar b$ vanishes (it carries the factor $b$), so
gradients are finite at a zero cone body.
"""

import dataclasses
import functools as ft

import jax
import jax.numpy as jnp
from jax import lax

from .._numerics import (_power_of_two_scale, compute_dtype, inverse_or_zero, materialise,
                         quotient_or_zero, sqrt_or_zero)

WRITTEN_OUT_MAX = 32  # up to this many body components, sums are written out


@dataclasses.dataclass(frozen=True)
class ConeSpec:
    """Static description of a conic activation applied to one array shape."""

    cone_dim: int
    num_cones: int
    layout: str  # "block" | "axes_first" | "shared"
    axis: int  # non-negative channel axis
    projection: str  # "hard" | "firm" | "soft"
    eps: float
    rectify: str | None  # None | "relu" | "silu"


# ------------------------------------------------------------------ small helpers
def _weight(rho, projection: str, numerator=None):
    """W(ρ) and W'(ρ). For the hard projection the slope is 1 on 0 < ρ < 1, with ρ > 0
    read from the sign of ρ's `numerator` when given (the axis value): a ratio below the
    smallest normal number (|a|/‖b‖ ≲ 1e-38 in float32) is flushed to 0, which would
    drop the Jacobian's b̂ column although the true slope there is 1."""
    if projection == "hard":
        w = jnp.clip(rho, 0, 1)
        positive = rho > 0 if numerator is None else numerator > 0
        dw = (positive & (rho < 1)).astype(rho.dtype)
    elif projection == "firm":
        w = jax.nn.sigmoid(4 * rho - 2)
        dw = 4 * w * (1 - w)
    else:
        w = jax.nn.sigmoid(rho - 0.5)
        dw = w * (1 - w)
    return w, dw


def _rect(a, rectify):
    if rectify is None:
        return a, jnp.ones_like(a)
    if rectify == "relu":
        return jnp.maximum(a, 0), (a > 0).astype(a.dtype)
    s = jax.nn.sigmoid(a)
    return a * s, s * (1 + a * (1 - s))


def _comps(body, cax, k):
    return lax.index_in_dim(body, k, cax, keepdims=False)


def _cmean(e, cax, n):
    """The mean over the `n` components along `cax`, as a sum of e_k/n (a sum of e itself
    overflows for components near the dtype's maximum); each slice is divided, not the
    array, which XLA would otherwise write out in full."""
    if n <= WRITTEN_OUT_MAX:
        acc = _comps(e, cax, 0) / n
        for k in range(1, n):
            acc = acc + _comps(e, cax, k) / n
        return acc
    return jnp.sum(e / n, axis=cax)


def _cmax(e, cax, n):
    if n <= WRITTEN_OUT_MAX:
        acc = _comps(e, cax, 0)
        for k in range(1, n):
            acc = jnp.maximum(acc, _comps(e, cax, k))
        return acc
    return jnp.max(e, axis=cax)


def _body_norm(body, cax, n, differentiable: bool = True):
    """The cone bodies' norms (component axis `cax`) as three per-cone factors m, 1/m and
    r with ‖b‖ = m r, overflow-free in one pass: each cone is multiplied by the
    reciprocal of its largest component m before squaring, with the S − 1 terms written
    out (per-cone work only; no second pass over the data). r is in [1, √(S−1)] (0 for
    a zero body, where 1/m is 0 too), so m r may overflow where r does not: callers
    scale m first (`_cone_ratio`)."""
    m = _cmax(jnp.abs(body), cax, n)
    # 1/m is subnormal, and flushed to 0 on CPUs, for m above 1/tiny (≈ 8.5e37 in
    # float32): such cones are scaled by tiny instead (their terms stay below S·16)
    tiny = float(jnp.finfo(body.dtype).tiny)
    big = m > 1 / tiny
    inv = jnp.where(big, tiny, inverse_or_zero(m))
    m = jnp.where(big, 1 / tiny, m)
    if n <= WRITTEN_OUT_MAX:
        t = _over_max(_comps(body, cax, 0), m, inv)
        acc = t * t
        for k in range(1, n):
            t = _over_max(_comps(body, cax, k), m, inv)
            acc = acc + t * t
    else:
        t = _over_max(body, jnp.expand_dims(m, cax), jnp.expand_dims(inv, cax))
        acc = jnp.sum(t * t, axis=cax)
    # √'s infinite slope at a zero body is never taken where the derivative rules are
    # differentiated again; the kernels' values (never differentiated: their derivatives
    # are the rules) skip the selects this costs
    return m, inv, sqrt_or_zero(acc) if differentiable else jnp.sqrt(acc)


@jax.custom_jvp
def _over_max(b, m, inv):
    """b/m as the product b·`inv` (`inv` = 1/m, or 0 with m = 0). Its tangent is
    (db − (b/m) dm)/m, with `inv`'s own tangent ignored: autodiff of the product takes
    d(1/m) = −dm/m², which overflows or is flushed for m beyond ~1e±19 in float32, so the
    derivative rules differentiated again would lose the dm term or be NaN there."""
    return b * inv


@_over_max.defjvp
def _over_max_jvp(primals, tangents):
    (b, _, inv), (db, dm, _) = primals, tangents
    t = b * inv
    return t, (db - t * dm) * inv


UNIT = 2.0 ** -32  # see _unit


def _unit(eps: float) -> float:
    """The static power of two u in which a cone's ε keeps its norm and denominator:
    UNIT for ε ≥ 2⁻⁶⁰ (then d u ≥ ε u cannot underflow), else 1 (plain quotients).

    The kernels carry ‖b‖ u and d u = (‖b‖ + ε) u instead of ‖b‖ and d, and form
    ρ = (a/(d u)) u. For u = 2⁻³² this is exact (u is a power of two) unless
    |ρ| > max·u (7.9e28 in float32), which gives ±∞, and it avoids two failures of the
    plain quotient: ‖b‖ overflows for bodies whose norm exceeds the dtype's maximum
    (ρ would be 0), and XLA's CPU backend may divide by multiplying with the reciprocal
    1/d, which is subnormal, and flushed to 0, for d above 2¹²⁶ ≈ 8.5e37 in float32,
    while 1/(d u) stays normal up to the dtype's maximum. A per-cone choice of scale
    would be exact everywhere but makes XLA split the per-cone pass into several. The
    slopes' scale is K = 1/u (`slope_scale`)."""
    return UNIT if eps >= 2.0 ** -60 else 1.0


def _cone_ratio(a, body, cax, n, eps, value_only: bool = False, gain: float = 1.0,
                body_scale: float = 1.0):
    """Per cone ‖b‖ u, ρ = g a/(‖b‖ + ε) and d u = (‖b‖ + ε) u, for the axis values `a`,
    the bodies b = h·`body` (S − 1 = `n` components along `cax`; h = `body_scale`, a power
    of two), u = `_unit(eps)` and a static factor g = `gain` applied last (RCoLU's axis
    value √S·mean, which would overflow as a product first). ‖b‖ u is (m h u) r
    (`_body_norm` of `body`), finite for every finite body when h u ≤ 2⁻³¹. With ε = 0
    and b = 0, ρ = ±∞ by the sign of a. For ε ≥ 2⁻⁶⁰ ρ is (a/(d u)) (g u) (see
    `_unit`): exact, or ±∞ for |ρ| > 7.9e28 in float32, where every projection has
    W'(ρ) = 0 and W(ρ) = W(±∞). With `value_only` (the weight only multiplies the body,
    so its value at a zero body does not matter) and ε = 0, ρ = (g/h) (a/m)/max(r, tiny),
    scale-free and so finite where ‖b‖ overflows, and written without the selects that
    XLA would repeat for every output element."""
    unit = _unit(eps)
    m, inv, root = _body_norm(body, cax, n, differentiable=not value_only)
    nbu = (m * (unit * body_scale)) * root if unit * body_scale != 1 else m * root
    du = nbu + eps * unit if eps > 0 else nbu
    factor = gain * unit
    if eps == 0 and value_only:
        q = (a * inv) / jnp.maximum(root, float(jnp.finfo(root.dtype).tiny))
        factor = gain / body_scale
    elif unit != 1:  # d u ≥ ε u > 0
        q = a / du
    else:
        # ε = 0, or an ε below the dtype's smallest normal number (flushed to 0): d = 0 at
        # a zero body, where ρ is ±∞ by the sign of a (ε > 0 and a = 0: ρ = 0)
        pos = du > 0
        at_zero = jnp.where(a > 0, jnp.inf, -jnp.inf) if eps == 0 else \
            jnp.where(a > 0, jnp.inf, jnp.where(a < 0, -jnp.inf, 0))
        q = jnp.where(pos, a / jnp.where(pos, du, 1), at_zero)
    return nbu, (q * factor if factor != 1 else q).astype(a.dtype), du


# ------------------------------------------------------------------ decomposition
def _split(x, spec: ConeSpec):
    """Views of `x`: (z or None, axis values a, body, component axis of body)."""
    ax, g, s = spec.axis, spec.num_cones, spec.cone_dim
    shape = x.shape
    if spec.layout == "block":
        z = x.reshape(shape[:ax] + (g, s) + shape[ax + 1:])
        cax = ax + 1
        a = _comps(z, cax, 0)
        body = lax.slice_in_dim(z, 1, s, axis=cax)
        return z, a, body, cax
    head = 1 if spec.layout == "shared" else g
    a = lax.slice_in_dim(x, 0, head, axis=ax)
    rest = lax.slice_in_dim(x, head, shape[ax], axis=ax)
    body = rest.reshape(shape[:ax] + (g, s - 1) + shape[ax + 1:])
    return None, a, body, ax + 1


def _weights(a, body, cax, spec: ConeSpec, value_only: bool = False, sign=None):
    """Per cone ‖b‖ u, ρ, d u, w = W(ρ) and W'(ρ) from axis values `a` and bodies `body`
    (component axis `cax`), for u = `_unit(ε)`; `a` of a shared axis broadcasts over the
    cones. `value_only`: see `_cone_ratio`."""
    nbu, rho, du = _cone_ratio(a, body, cax, spec.cone_dim - 1, spec.eps, value_only)
    w, dw = _weight(rho, spec.projection, a if sign is None else sign)
    return nbu, rho, du, w, dw


def _cone_scalars(x, spec: ConeSpec):
    z, a, body, cax = _split(x, spec)
    return (z, a, body, cax, *_weights(a, body, cax, spec, value_only=True))


def _colu_output(x, spec, z, a, body, cax, w):
    wb = jnp.expand_dims(w, cax)
    if spec.layout == "block":
        head = lax.broadcasted_iota(jnp.int32, z.shape, cax) == 0
        ra, _ = _rect(z, spec.rectify)
        return jnp.where(head, ra, z * wb).reshape(x.shape)
    # one elementwise pass over the channels (joining the axis values and the scaled
    # bodies with a concatenation would copy the output once more)
    ax, head = spec.axis, a.shape[spec.axis]
    rest = x.shape[:ax] + (x.shape[ax] - head,) + x.shape[ax + 1:]
    body_weights = jnp.broadcast_to(wb, body.shape).reshape(rest)
    if spec.rectify == "silu":
        # SiLU(a) = a·sigmoid(a): the sigmoid is a weight of the axis channels only
        return x * jnp.concatenate([jax.nn.sigmoid(a), body_weights], axis=ax)
    weights = jnp.concatenate([jnp.ones_like(a), body_weights], axis=ax)
    ra, _ = _rect(x, spec.rectify)
    axis_channel = lax.broadcasted_iota(jnp.int32, x.shape, ax) < head
    return jnp.where(axis_channel, ra, x * weights)


def _colu_impl(x, spec: ConeSpec):
    z, a, body, cax, *_, w, dw = _cone_scalars(x, spec)
    return _colu_output(x, spec, z, a, body, cax, w)


@ft.partial(jax.custom_jvp, nondiff_argnums=(1,))
def colu_kernel(x, spec: ConeSpec):
    """CoLU on float32/float64 `x` with a static `spec` (see the module docstring)."""
    return _colu_impl(x, spec)


def _per_cone(compute, arrays, cax, count):
    """The `count` per-cone arrays that `compute(*arrays, component_axis)` returns,
    materialised as one stacked array written in one pass over `arrays` (each with its
    component axis at `cax`; a size-1 axis broadcasts) and read by the consumers.

    Stacking outputs that share a square root or a division makes XLA give each output
    its own pass over the inputs (it does not duplicate expensive operations across the
    stacked elements). So the inputs are first repeated along a new lane axis at `cax`,
    one lane per output, `compute` runs on every lane, and lane i keeps output i: each
    lane repeats the per-cone arithmetic (cheap next to reading the inputs again) and the
    whole computation is one fusion."""
    per_cone = jnp.broadcast_shapes(*(t.shape[:cax] + t.shape[cax + 1:] for t in arrays))
    lanes = [jnp.broadcast_to(jnp.expand_dims(t, cax),
                              per_cone[:cax] + (count, t.shape[cax]) + per_cone[cax:])
             for t in arrays]
    outputs = compute(*lanes, cax + 1)
    lane = lax.broadcasted_iota(jnp.int32, outputs[0].shape, cax)
    stacked = outputs[-1]
    for i in range(count - 2, -1, -1):
        stacked = jnp.where(lane == i, outputs[i], stacked)
    stacked = materialise(stacked)
    return [_comps(stacked, cax, i) for i in range(count)]


def slope_scale(eps: float) -> float:
    """The power of two K by which the derivative rules store the per-cone slopes scaled
    up (and scale the bodies they multiply down): 2³² for ε ≥ 2⁻⁶⁰, else 1.

    Unscaled, c = W'(ρ)/d and κ = ρ/‖b‖ are of size 1/|x| and flush to 0 in float32 for
    cone norms of ~1e37 and above (dropping the tangent's body terms), and ⟨b, db⟩
    overflows near float32's maximum; K c, K κ and b/K stay in range up to it (with
    d ≥ ε ≥ 2⁻⁶⁰, K c ≤ 4K/ε ≈ 2e28). The price is at the other end: body components
    below ~5e-29 (float32) are flushed to 0 in b/K, which drops terms of absolute size
    below ~5e-29·W'(ρ)/ε from the Jacobian (the terms in b c)."""
    return 1 / _unit(eps)


def _slopes(rho, du, dw, nbu, unit: float):
    """Per cone K c = K W'(ρ)/d and K κ = K ρ/‖b‖ for K = 1/u (`slope_scale`), from the
    norm and denominator in units of u = `unit` (nbu = ‖b‖ u, du = d u; see `_unit`):
    K c = W'(ρ)/(d u) and K κ = ρ/(‖b‖ u). They are the coefficients of
    dw = c (da − κ ⟨b, db⟩) (c = 0 where d = 0, κ = 0 where ‖b‖ = 0; an infinite ρ counts
    as 0 (W'(±∞) = 0): from ε = 0 and b = 0, or |ρ| > 7.9e28 in float32, see `_cone_ratio`).
    The product cκ is never formed: it scales as 1/|x|² and underflows for |x| ≳ 1e19 in
    float32, while c and κ scale as 1/|x|. K κ is clamped to the largest finite number,
    which it exceeds only where the term κ ⟨b, db⟩ b it scales is below rounding (and
    0·∞ would be NaN); κ ⟨b, db⟩ is at most |ρ| ‖db‖, finite for cotangents below ~4e9
    in float32."""
    if unit != 1:  # d ≥ ε ≥ 2⁻⁶⁰: d u > 0
        c = dw / du
    else:
        c = jnp.where(du > 0, dw / jnp.where(du > 0, du, 1), 0)
    big = float(jnp.finfo(rho.dtype).max)
    r = jnp.where(jnp.isfinite(rho), rho, 0)
    # ‖b‖ u = 0 leaves κ at 0: then b/K = 0 too, and the term κ multiplies vanishes
    kappa = quotient_or_zero(r, nbu)
    return c, jnp.clip(kappa, -big, big)


def _colu_residuals(x, spec, rescale: bool = False):
    """Per cone w = W(ρ), K c = K W'(ρ)/d and K κ = K ρ/‖b‖ for the static power of two
    K = `slope_scale(ε)` (so that dw = c (da − κ ⟨b, db⟩); see `_slopes`), in one pass.
    With `rescale`, they are taken at the point whose cones are each
    scaled by a power of two p bringing their largest component near 1 (as
    `_homogeneous_scale` does, gradient stopped), and p is returned as a fourth value:
    the scaling happens on the per-cone values in the same pass, instead of a pass that
    writes the scaled point."""
    z, a, body, cax = _split(x, spec)
    unit = _unit(spec.eps)

    def residuals(a, body, comp_axis):
        a = sign = _comps(a, comp_axis, 0)  # (the sign of a before a scaling flushes it)
        if rescale:
            m = jnp.maximum(jnp.abs(a), _cmax(jnp.abs(body), comp_axis, spec.cone_dim - 1))
            p = jax.lax.stop_gradient(_power_of_two_scale(m))
            a, body = a * p, body * jnp.expand_dims(p, comp_axis)
        nbu, rho, du, w, dw = _weights(a, body, comp_axis, spec, sign=sign)
        return [w, *_slopes(rho, du, dw, nbu, unit)] + ([p] if rescale else [])

    return _per_cone(residuals, [jnp.expand_dims(a, cax), body], cax, 4 if rescale else 3)


def _colu_primal(x, spec):
    """The output and the per-cone residuals (w, K c, K κ) of `_colu_residuals`."""
    z, a, body, cax = _split(x, spec)
    w, c, kappa = _colu_residuals(x, spec)
    return _colu_output(x, spec, z, a, body, cax, w), (w, c, kappa)


def _spread(p, cax, n):
    """`p` (unit axis at `cax`) repeated `n` times along `cax`: a broadcast whose
    transpose is the written-out sum of `n` slices (a broadcast's transpose is a
    short-axis reduction, which XLA's CPU backend runs ~10× slower)."""
    if n > WRITTEN_OUT_MAX:
        shape = list(p.shape)
        shape[cax] = n
        return jnp.broadcast_to(p, tuple(shape))
    return jnp.concatenate([p] * n, axis=cax)


def _homogeneous_scale(x, spec: ConeSpec):
    """`x` (block layout) with each cone scaled by a power of two bringing its largest
    component near 1 (gradient stopped). With ε = 0
    the weights W(ρ) are scale-free, so the body's part of the Jacobian is the same at
    the scaled point (the axis's rectifier, if any, is differentiated at x); there the
    per-cone slopes W'(ρ)/‖b‖ and W'(ρ)ρ/‖b‖² stay finite for |x| down to float32's
    smallest normal numbers, where at x itself they would overflow (e.g. |x| ≈ 1e-30)."""
    ax = spec.axis
    z = x.reshape(x.shape[:ax] + (spec.num_cones, spec.cone_dim) + x.shape[ax + 1:])
    m = jnp.max(jnp.abs(z), axis=ax + 1, keepdims=True)
    return (z * jax.lax.stop_gradient(_power_of_two_scale(m))).reshape(x.shape)


def _colu_tangent(x, spec, res, dx, x_rect=None, scale: float = 1.0):
    """The tangent map at x (linear in dx): dy_a = R'(a) da and, per cone,
    dy_b = w db + b c (da − κ ⟨b, db⟩), whose transpose (reverse mode) is
    ā = R'(a) v_a + c q and b̄ = w v_b − c κ q b with q = ⟨b, v_b⟩ (module docstring;
    c κ is never formed, see `_slopes`), written with b/K and the residuals K c, K κ
    for the static power of two K = `scale` (`slope_scale`).
    `x_rect`: where to take the rectified axis's derivative R'(a) when `x` is a rescaled
    point (default `x`)."""
    x_rect = x if x_rect is None else x_rect
    w, c, kappa = (jnp.expand_dims(t, spec.axis + 1) for t in res)
    ax, cax, n = spec.axis, spec.axis + 1, spec.cone_dim - 1
    if spec.layout == "block":
        # The reductions are over the short component axis (forward mode only); their
        # transposes are broadcasts, and the concatenation's transpose reads slices, so
        # that reverse mode is one per-cone pass (q) and one elementwise pass.
        z = x.reshape(x.shape[:ax] + (spec.num_cones, spec.cone_dim) + x.shape[ax + 1:])
        dz = dx.reshape(z.shape)
        head = lax.broadcasted_iota(jnp.int32, z.shape, cax) == 0
        _, dr = _rect(x_rect.reshape(z.shape), spec.rectify)
        z = z * (1 / scale)
        da = jnp.sum(jnp.where(head, dz, 0), axis=cax, keepdims=True)
        qt = jnp.sum(jnp.where(head, 0, dz) * z, axis=cax, keepdims=True)
        coef = c * (da - kappa * qt)
        spread = jnp.concatenate([jnp.zeros_like(coef), _spread(coef, cax, n)], axis=cax)
        return (jnp.where(head, dr * dz, w * dz) + spread * z).reshape(x.shape)
    head = 1 if spec.layout == "shared" else spec.num_cones
    a, rest = lax.split(x, [head, x.shape[ax] - head], axis=ax)
    # slices, not a split: their transposes are pads, which fuse with the sum of the two
    # cotangent parts (a split's transpose is a concatenation, one more copy)
    da = lax.slice_in_dim(dx, 0, head, axis=ax)
    drest = lax.slice_in_dim(dx, head, x.shape[ax], axis=ax)
    bshape = x.shape[:ax] + (spec.num_cones, n) + x.shape[ax + 1:]
    body, dbody = rest.reshape(bshape) * (1 / scale), drest.reshape(bshape)
    _, dr = _rect(lax.slice_in_dim(x_rect, 0, head, axis=ax), spec.rectify)
    qt = jnp.sum(dbody * body, axis=cax, keepdims=True)
    coef = c * (jnp.expand_dims(da, cax) - kappa * qt)
    dyb = w * dbody + _spread(coef, cax, n) * body
    return jnp.concatenate([dr * da, dyb.reshape(rest.shape)], axis=ax)


@colu_kernel.defjvp
def _colu_jvp(spec, primals, tangents):
    (x,), (dx,) = primals, tangents
    if spec.eps == 0:
        # the cone weights are positively homogeneous of degree 0: their slopes are taken
        # at a rescaled point (see _homogeneous_scale); a rectified axis's R'(a) at x
        # (the weights w are the same at both points, so the output uses them on x)
        z, a, body, cax = _split(x, spec)
        # per-cone scales, found and applied in the residual pass (one scale for the
        # whole channel vector would flush cones ~1e38 times smaller than the largest)
        *res, p = _colu_residuals(x, spec, rescale=True)
        p = jnp.expand_dims(p, cax)
        if spec.layout == "block":
            xs = (z * p).reshape(x.shape)
        else:  # the tangent map reads only the bodies of the scaled point
            rest = x.shape[:spec.axis] + (-1,) + x.shape[spec.axis + 1:]
            xs = jnp.concatenate([a, (body * p).reshape(rest)], axis=spec.axis)
        y = _colu_output(x, spec, z, a, body, cax, res[0])
        return y, _colu_tangent(xs, spec, res, dx, x_rect=x)
    scale = slope_scale(spec.eps)
    y, res = _colu_primal(x, spec)
    return y, _colu_tangent(x, spec, res, dx, scale=scale)


# ====================================================================== RCoLU (eq 5)
def _rcolu_weights(z, cax, spec: ConeSpec, value_only: bool = False):
    """Per cone (components along `cax`): the mean μ, half the residual r = z − μ (r
    itself overflows where two components of opposite sign are near the dtype's
    maximum), ‖r‖ u, ρ, d u, w = W(ρ) and W'(ρ), for u = `_unit(ε)`."""
    s = spec.cone_dim
    mu = _cmean(z, cax, s)  # x_n = (x·e) e has every component equal to the mean
    half = z * 0.5 - jnp.expand_dims(mu * 0.5, cax)
    # x·e = √S μ, whose factor √S is applied after the quotient (x·e itself overflows
    # for means above max/√S)
    nru, rho, du = _cone_ratio(mu, half, cax, s, spec.eps, value_only, gain=s ** 0.5,
                               body_scale=2.0)
    w, dw = _weight(rho, spec.projection, mu)
    return mu, half, nru, rho, du, w, dw


def _rcolu_scalars(x, spec: ConeSpec):
    ax, g, s = spec.axis, spec.num_cones, spec.cone_dim
    z = x.reshape(x.shape[:ax] + (g, s) + x.shape[ax + 1:])
    cax = ax + 1
    return (z, cax, *_rcolu_weights(z, cax, spec, value_only=True))


def _rcolu_output(x, spec, w):
    """y = μ + w (x − μ) per block, for the per-cone weights `w`."""
    ax, s = spec.axis, spec.cone_dim
    z = x.reshape(x.shape[:ax] + (spec.num_cones, s) + x.shape[ax + 1:])
    mu = _cmean(z, ax + 1, s)
    wb = jnp.expand_dims(w, ax + 1)
    off = jnp.expand_dims(mu * (1 - w), ax + 1)
    return (z * wb + off).reshape(x.shape)


def _rcolu_impl(x, spec):
    *_, w, dw = _rcolu_scalars(x, spec)
    return _rcolu_output(x, spec, w)


@ft.partial(jax.custom_jvp, nondiff_argnums=(1,))
def rcolu_kernel(x, spec: ConeSpec):
    """RCoLU (eq 5) on float32/float64 `x` with a static block-layout `spec`."""
    return _rcolu_impl(x, spec)


def _rcolu_residuals(x, spec):
    """Per cone w = W(ρ), K c and K κ (`_slopes`, K = `slope_scale(ε)`), in one pass."""
    ax = spec.axis
    z = x.reshape(x.shape[:ax] + (spec.num_cones, spec.cone_dim) + x.shape[ax + 1:])
    unit = 1 / slope_scale(spec.eps)

    def residuals(z, comp_axis):
        _, _, nru, rho, du, w, dw = _rcolu_weights(z, comp_axis, spec)
        return [w, *_slopes(rho, du, dw, nru, unit)]

    return _per_cone(residuals, [z], ax + 1, 3)


def _rcolu_tangent(x, spec, res, dx):
    """y_k = μ + w (x_k − μ) gives dy_k = (1 − w) dμ + w dx_k + r_k dw with
    dw = c (√S dμ − κ ⟨r, dx⟩) (c = W'(ρ)/d, κ = ρ/‖r‖; ⟨r, 1⟩ = 0), written so that
    its automatic transpose has no short-axis reductions (see the module docstring).
    For ε > 0 it is written with r/K and the residuals `res` = (w, K c, K κ)
    (`slope_scale`)."""
    ax, s = spec.axis, spec.cone_dim
    cax = ax + 1
    z = x.reshape(x.shape[:ax] + (spec.num_cones, s) + x.shape[ax + 1:])
    mu = _cmean(z, cax, s)
    unit = 1 / slope_scale(spec.eps)
    # r/K, each term scaled first (r itself may overflow; see _rcolu_weights)
    r = z * unit - jnp.expand_dims(mu * unit, cax)
    w, c, kappa = (jnp.expand_dims(t, cax) for t in res)
    dz = dx.reshape(z.shape)
    root_s = jnp.sqrt(jnp.asarray(s, x.dtype))
    dmu = jnp.sum(dz, axis=cax, keepdims=True) / s
    dwt = c * (root_s * dmu - kappa * jnp.sum(r * dz, axis=cax, keepdims=True))
    dy = w * dz + _spread((1 - w) * dmu, cax, s) + r * _spread(dwt, cax, s)
    return dy.reshape(x.shape)


@rcolu_kernel.defjvp
def _rcolu_jvp(spec, primals, tangents):
    (x,), (dx,) = primals, tangents
    # with ε = 0, positively homogeneous: the slopes at a rescaled point, whose weights
    # are those at x
    at = _homogeneous_scale(x, spec) if spec.eps == 0 else x
    res = _rcolu_residuals(at, spec)
    return _rcolu_output(x, spec, res[0]), _rcolu_tangent(at, spec, res, dx)


@ft.partial(jax.jit, static_argnums=(1, 2))
def apply_cones(x, spec: ConeSpec, rotated: bool = False):
    """CoLU (RCoLU with `rotated`) of `x`, computed in its compute dtype (float32 for
    half precisions) and returned in its dtype: compiled once per spec, shape and dtype,
    so that a call outside `jax.jit` costs one dispatch."""
    kernel = rcolu_kernel if rotated else colu_kernel
    return kernel(x.astype(compute_dtype(x.dtype)), spec).astype(x.dtype)
