"""taxdl's own optax atoms (optax style: a NamedTuple state and a factory returning
`init_fn`/`update_fn`), and the public optimiser factories built from them."""

import functools as ft
import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.typing import ArrayLike
from jaxtyping import Array, Int

from optax import tree_utils as otu

from .._types import check_bool, check_real
from ..nn._numerics import (_power_of_two_scale, all_rows, one_minus_power, sqrt_or_zero,
                            trusted_sum)


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _scalar(value, name: str, who: str, rng: str):
    """`value` as a Python float when it is a real number or a concrete real 0-d array
    (NumPy or JAX), `None` when it is a traced 0-d array (as `optax.inject_hyperparams`
    passes inside a compiled step: it is used as given, unchecked); otherwise an error."""
    if _is_real(value):
        return float(value)
    if isinstance(value, (np.ndarray, np.generic, jax.Array)) and np.ndim(value) == 0 \
            and (jnp.issubdtype(value.dtype, jnp.floating)
                 or jnp.issubdtype(value.dtype, jnp.integer)):
        if isinstance(value, jax.core.Tracer):
            return None
        return float(value)
    raise TypeError(f"{who}: `{name}` must be a finite number {rng}, got {value!r}.")


def _check_unit(value, name: str, who: str, closed: bool = False):
    v = _scalar(value, name, who, "in [0, 1]" if closed else "in [0, 1)")
    if v is None:
        return value
    try:
        return check_real(v, name, who=who, low=0, high=1, high_open=not closed)
    except ValueError as err:
        dtype = getattr(value, "dtype", None)
        if dtype is not None and jnp.issubdtype(dtype, jnp.floating) \
                and jnp.finfo(dtype).bits == 16 and v == 1:
            # optax.inject_hyperparams casts hyperparameters to the parameters' dtype,
            # and bfloat16(0.999) == 1.0
            raise ValueError(
                f"{err} It is a {jnp.dtype(dtype).name} scalar, in which values such as "
                "0.999 round to 1 (`optax.inject_hyperparams` casts hyperparameters to the "
                "parameters' dtype): pass `hyperparam_dtype=jnp.float32` to it.") from None
        raise


def _check_nonneg(value, name: str, who: str, positive: bool = False):
    v = _scalar(value, name, who, "> 0" if positive else ">= 0")
    if v is None:
        return value
    return check_real(v, name, who=who, low=0, low_open=positive)


def _check_learning_rate(value, who: str):
    if callable(value):
        return value
    try:
        return _check_nonneg(value, "learning_rate", who)
    except (TypeError, ValueError):
        raise ValueError(f"{who}: `learning_rate` must be a finite number >= 0 or an optax "
                         f"schedule (a callable of the step count), got {value!r}.") from None


def _check_mu_dtype(mu_dtype, who: str):
    """None or a dtype (a name, a NumPy/JAX scalar type or a `dtype`) that is floating (or
    complex); an array or a scalar value is refused (NumPy would read its dtype, or fail
    with a message that does not name the argument), as is anything else NumPy cannot
    read as a dtype."""
    if mu_dtype is None:
        return mu_dtype
    shown = (f"an array of shape {mu_dtype.shape}"
             if isinstance(mu_dtype, (jax.Array, np.ndarray)) else repr(mu_dtype))
    message = f"{who}: `mu_dtype` must be None or a floating dtype, got {shown}."
    if isinstance(mu_dtype, (jax.Array, np.ndarray, np.generic)):
        raise ValueError(message)
    try:
        dtype = jnp.dtype(mu_dtype)
    except (TypeError, ValueError):
        raise ValueError(message) from None
    if not jnp.issubdtype(dtype, jnp.inexact):
        raise ValueError(message)
    return mu_dtype


def _check_inexact(tree, what: str, who: str):
    """`tree` with every leaf as a JAX array (Python-number leaves too); raise unless
    every leaf is floating or complex: an integer or boolean leaf has no gradient, and
    counting it would change the global norm and the dimension d of the isotropic
    update."""
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        dtype = jnp.result_type(leaf)
        if not jnp.issubdtype(dtype, jnp.inexact):
            raise TypeError(
                f"{who}: every leaf of `{what}` must be a floating or complex array, got "
                f"dtype {dtype} at {jax.tree_util.keystr(path) or 'the root'}. Leave "
                "non-trainable leaves out (e.g. `eqx.filter(params, eqx.is_inexact_array)`, "
                "which puts None in their place) or wrap the optimiser in `optax.masked`.")
    return jax.tree.map(jnp.asarray, tree)


def _cast(value, dtype):
    """A hyperparameter for arithmetic with arrays of `dtype`: Python numbers stay as they
    are (weakly typed), arrays (e.g. from `optax.inject_hyperparams`) are cast."""
    return value if _is_real(value) else jnp.asarray(value).astype(dtype)


def _wide(dtype, acc):
    """The dtype holding both `dtype` and the accumulation dtype `acc` (the standard
    promotion lattice, asked for explicitly, also under strict promotion)."""
    with jax.numpy_dtype_promotion("standard"):
        return jnp.promote_types(dtype, acc)


def _divide(x, denom):
    """`x / denom` for a leaf `x` and a real scalar `denom` > 0 of the accumulation
    dtype, computed in the wider of the two dtypes (a float16 leaf divided by a tiny
    norm must not overflow through a float16 reciprocal) and returned in `x`'s dtype."""
    wide = _wide(x.dtype, denom.dtype)
    return (x.astype(wide) / denom.astype(wide)).astype(x.dtype)


def _divide_by_any(x, denom):
    """`_divide` for a `denom` of any size: XLA divides by multiplying with the
    reciprocal, which is below the smallest normal number (flushed to 0) for denominators
    above ~2¹²⁶ in float32; x and denom are first multiplied by a power of two p bringing
    denom into [½, 1) (exact, p and 1/p normal), so that reciprocal is never formed."""
    p = _power_of_two_scale(denom)
    wide = _wide(x.dtype, denom.dtype)
    return ((x.astype(wide) * p.astype(wide)) / (denom * p).astype(wide)).astype(x.dtype)


def _accumulation_dtype(leaves):
    wide = any(leaf.dtype in (jnp.float64, jnp.complex128) for leaf in leaves)
    return jnp.float64 if wide else jnp.float32


def _global_sq_norm(tree, dtype) -> Array:
    """Σ over every leaf of Σ |g|² (a real scalar of `dtype`; complex leaves count their
    squared moduli)."""
    leaves = jax.tree.leaves(tree)
    total = jnp.zeros((), dtype)
    for leaf in leaves:
        if jnp.iscomplexobj(leaf):
            sq = jnp.square(jnp.real(leaf).astype(dtype)) + jnp.square(jnp.imag(leaf).astype(dtype))
        else:
            sq = jnp.square(leaf.astype(dtype))
        total = total + jnp.sum(sq)
    return total


@ft.partial(jax.jit, static_argnums=1)
def _global_norm_parts(tree, dtype) -> tuple[Array, Array]:
    """$(r, p)$ with $\\|g\\|_2 = r/p$ over every leaf (real scalars of `dtype`),
    overflow- and underflow-free: $p$ is 1, or a power of two bringing the largest
    magnitude in the tree into [½, 1) (p and 1/p normal numbers, so multiplying by it is
    exact) and $r = \\|p\\,g\\|$.

    The plain sum of squares is used ($p = 1$) when it lies in the range where it is
    trusted (see `sum_of_squares_bounds`; in float32 norms between ~1e-12 and ~1e12) or
    is NaN; otherwise (also when it is 0, which may be an underflow) every leaf is scaled
    by $p$ before squaring (a `lax.cond` on the scalar, so the common case reads the
    gradient once). Without this, a float32 gradient of norm above ~1.8e19 has an infinite
    norm and one below ~1e-19 a zero norm, and its normalised or clipped update is 0;
    callers that keep $r$ and $p$ apart also handle norms beyond the dtype's range (g/‖g‖
    = p g/r is representable when ‖g‖ is not). A tree whose largest magnitude is 0, ∞ or
    NaN gives $(m_{max}, 1)$. Compiled once per tree structure, shapes and dtype, so that
    an update outside `jax.jit` does not trace the `lax.cond` again.
    """
    s = _global_sq_norm(tree, dtype)  # of `dtype`
    trusted = trusted_sum(s)

    # √ through `sqrt_or_zero`: its derivative at the zero gradient is 0 rather than
    # 0·∞ = NaN, and every map of (r, p) here has a finite Jacobian there (g/(‖g‖ + ε)
    # has I/ε, a clip the identity), which the chain rule then gives
    def plain(tree):
        return sqrt_or_zero(s), jnp.ones((), dtype)

    def rescue(tree):
        leaves = jax.tree.leaves(tree)
        m = jnp.zeros((), dtype)
        for leaf in leaves:
            if leaf.size:
                m = jnp.maximum(m, jnp.max(jnp.abs(leaf)).astype(dtype))
        usable = (m > 0) & jnp.isfinite(m)
        p = _power_of_two_scale(jnp.where(usable, m, 1))
        scaled = jax.tree.map(lambda leaf: _scale(leaf, p), tree)
        r = sqrt_or_zero(_global_sq_norm(scaled, dtype))
        return jnp.where(usable, r, m), jnp.where(usable, p, 1)

    # (all_rows: under jax.vmap, over an ensemble say, the predicate spans the members,
    # so that the cond is kept; the rescued norm equals the plain one to rounding)
    return jax.lax.cond(all_rows(trusted), plain, rescue, tree)


def _scale(x, p):
    """`x * p` for a leaf and a real scalar of the accumulation dtype, in the wider of
    the two dtypes, returned in x's dtype (see `_divide`)."""
    wide = _wide(x.dtype, p.dtype)
    return (x.astype(wide) * p.astype(wide)).astype(x.dtype)


# ============================================================================ AdaSGD
class ScaleByAdaSGDState(NamedTuple):
    """State of [`scale_by_adasgd`][taxdl.optim.scale_by_adasgd]: the step count, the
    first moment (one tree) and the square root $\\sqrt{v_t}$ of the *scalar* second
    moment of the whole gradient (kept as a root, so that it neither overflows nor
    underflows where $\\|g\\|$ itself does not)."""

    count: Int[Array, ""]
    mu: optax.Updates
    nu_root: Array


def scale_by_adasgd(b1: ArrayLike = 0.9, b2: ArrayLike = 0.999, eps: ArrayLike = 1e-8,
                    mu_dtype=None) -> optax.GradientTransformation:
    """Rescale by AdaSGD's isotropic adaptive step (isotropic paper App. A.3, eq 52):

    $$m_t = β_1 m_{t-1} + (1-β_1) g_t,\\qquad
      v_t = β_2 v_{t-1} + (1-β_2)\\,\\|g_t\\|_2^2,\\qquad
      \\text{out}_t = \\frac{m_t}{\\sqrt{\\hat v_t / d} + ε},\\quad
      \\hat v_t = \\frac{v_t}{1-β_2^t},$$

    with $\\|g_t\\|$ the global norm over the whole tree and $d$ its number of entries.
    Follow with `optax.scale_by_learning_rate(η)` for eq 52's
    $θ_{t+1} = θ_t - η_t m_t$, $η_t = η\\sqrt{(1-β_2^t)/(v_t/d)}$ (exact when ε = 0;
    with ε = 0 a zero denominator gives a zero update, never NaN).

    The state keeps $\\sqrt{v_t} = \\operatorname{hypot}(\\sqrt{β_2}\\sqrt{v_{t-1}},
    \\sqrt{1-β_2}\\,\\|g_t\\|)$ with an overflow-free global norm, so the update is
    the same at every gradient scale (in float32 $\\|g\\|^2$ itself overflows above
    ~1.8e19 and $(1-β_2)\\|g\\|^2$ underflows below ~1e-18).

    **Arguments:**

    - `b1`: momentum decay β₁ in [0, 1); `b2`: second-moment decay β₂ in [0, 1).
    - `eps`: ε ≥ 0 added to the denominator.
    - `mu_dtype`: dtype of the first moment (default: that of the parameters).

    **Returns:** an `optax.GradientTransformation` with state
    [`ScaleByAdaSGDState`][taxdl.optim.ScaleByAdaSGDState].

    **Symmetry:** O(d)-equivariant (the second moment is a norm, the momentum linear);
    scale-invariant (ℝ×₊ on the right) only when ε = 0.
    """
    b1 = _check_unit(b1, "b1", "scale_by_adasgd")
    b2 = _check_unit(b2, "b2", "scale_by_adasgd")
    eps = _check_nonneg(eps, "eps", "scale_by_adasgd")
    mu_dtype = _check_mu_dtype(mu_dtype, "scale_by_adasgd")

    def init_fn(params):
        params = _check_inexact(params, "params", "scale_by_adasgd")
        leaves = jax.tree.leaves(params)
        mu = otu.tree_zeros_like(params, dtype=mu_dtype)
        return ScaleByAdaSGDState(count=jnp.zeros([], jnp.int32), mu=mu,
                                  nu_root=jnp.zeros([], _accumulation_dtype(leaves)))

    def update_fn(updates, state, params=None):
        del params
        updates = _check_inexact(updates, "updates", "scale_by_adasgd")
        leaves = jax.tree.leaves(updates)
        d = sum(leaf.size for leaf in leaves)
        acc = state.nu_root.dtype
        b2_, eps_ = _cast(b2, acc), _cast(eps, acc)
        # √v_t with v_t = β₂ v_{t−1} + (1 − β₂)‖g_t‖², never forming a square
        r, p = _global_norm_parts(updates, acc)  # ‖g‖ = r/p, possibly beyond range
        nu_root = jnp.hypot(jnp.sqrt(b2_) * state.nu_root, (jnp.sqrt(1 - b2_) * r) / p)

        def moment(m, g):
            b1_ = _cast(b1, m.dtype)
            return (b1_ * m + (1 - b1_) * g.astype(m.dtype)).astype(m.dtype)

        mu = jax.tree.map(moment, state.mu, updates)
        count = optax.safe_increment(state.count)
        # √(v̂_t / d) = √v_t / √((1 − β₂ᵗ) d)
        debias = one_minus_power(b2_, count.astype(acc))
        denom = nu_root / jnp.sqrt(debias * max(d, 1)) + eps_
        zero = denom == 0
        safe = jnp.where(zero, 1, denom)
        # 0/0 (ε = 0, every gradient so far zero) is read as 0; a NaN denominator (a NaN
        # gradient) gives NaN, as the formula does, not a silent zero step
        new = jax.tree.map(
            lambda m, g: jnp.where(zero, 0, _divide_by_any(m, safe)).astype(g.dtype),
            mu, updates)
        return new, ScaleByAdaSGDState(count=count, mu=mu, nu_root=nu_root)

    return optax.GradientTransformation(init_fn, update_fn)


def adasgd(learning_rate: optax.ScalarOrSchedule, b1: ArrayLike = 0.9, b2: ArrayLike = 0.999,
           eps: ArrayLike = 1e-8, mu_dtype=None) -> optax.GradientTransformation:
    """AdaSGD, the isotropic Adam-like optimiser of the isotropic paper's App. A.3 (eq 52,
    after Wang & Wiens): SGD with momentum whose single global step size adapts to a
    scalar second moment of the whole gradient, so the update of rotated gradients is the
    rotated update.

    `optax.chain(scale_by_adasgd(b1, b2, eps), optax.scale_by_learning_rate(learning_rate))`.

    Differences from the published AdaSGD reference: eq 52's momentum is an exponential
    average, $m_t = β_1 m_{t-1} + (1-β_1) g_t$, where the reference accumulates
    $m_t = β_1 m_{t-1} + g_t$ (so the same η moves $1/(1-β_1)$ times less here); and the
    reference has no ε, while here ε is added to $\\sqrt{\\hat v_t/d}$ (Adam's
    placement; ε = 0 recovers eq 52 exactly, with 0/0 read as 0).

    **Arguments:**

    - `learning_rate`: η, a number or an optax schedule.
    - `b1`, `b2`, `eps`, `mu_dtype`: see [`scale_by_adasgd`][taxdl.optim.scale_by_adasgd].

    **Returns:** an `optax.GradientTransformation`.

    **Symmetry:** algebraically O(d)-equivariant in the gradients.
    """
    return optax.chain(scale_by_adasgd(b1, b2, eps, mu_dtype),
                       optax.scale_by_learning_rate(_check_learning_rate(learning_rate,
                                                                         "adasgd")))


# ============================================================================ normalised SGD
def normalise_by_global_norm(eps: ArrayLike = 1e-8) -> optax.GradientTransformation:
    """Divide the gradient by its global norm over the whole tree, $g/(\\|g\\|_2 + ε)$
    (stateless). With ε = 0 the zero gradient stays zero.

    **Symmetry:** O(d)-equivariant; invariant to positive scalings when ε = 0.
    """
    eps = _check_nonneg(eps, "eps", "normalise_by_global_norm")

    def init_fn(params):
        _check_inexact(params, "params", "normalise_by_global_norm")
        return optax.EmptyState()

    def update_fn(updates, state, params=None):
        del params
        updates = _check_inexact(updates, "updates", "normalise_by_global_norm")
        leaves = jax.tree.leaves(updates)
        dtype = _accumulation_dtype(leaves)
        # g/(‖g‖ + ε) = (p g)/(r + p ε) with ‖g‖ = r/p: finite where ‖g‖ overflows
        r, p = _global_norm_parts(updates, dtype)
        denom = r + _cast(eps, dtype) * p
        zero = denom == 0
        safe = jnp.where(zero, 1, denom)
        # with ε = 0 the zero gradient stays zero; a NaN norm gives NaN, not a zero step
        return jax.tree.map(
            lambda g: jnp.where(zero, 0, _divide(_scale(g, p), safe)).astype(g.dtype),
            updates), state

    return optax.GradientTransformation(init_fn, update_fn)


def normalised_sgd(learning_rate: optax.ScalarOrSchedule, momentum: ArrayLike = 0.0,
                   nesterov: bool = False, eps: ArrayLike = 1e-8) -> optax.GradientTransformation:
    """Isotropic normalised SGD: every step moves by η in the direction of the (global)
    unit gradient, with optional heavy-ball momentum:

    `optax.chain(normalise_by_global_norm(eps), optax.trace(momentum, nesterov),
    optax.scale_by_learning_rate(learning_rate))` (no trace when momentum = 0).

    **Symmetry:** algebraically O(d)-equivariant; scale-invariant when ε = 0.
    """
    checked = _check_unit(momentum, "momentum", "normalised_sgd")
    nesterov = check_bool(nesterov, "nesterov", who="normalised_sgd")
    parts = [normalise_by_global_norm(eps)]
    # an array momentum (as `optax.inject_hyperparams` passes it, concrete in `init` and
    # traced in a compiled `update`) always gets a trace, so both build the same chain
    if not _is_real(momentum) or checked > 0:
        parts.append(optax.trace(decay=checked, nesterov=nesterov))
    parts.append(optax.scale_by_learning_rate(_check_learning_rate(learning_rate,
                                                                   "normalised_sgd")))
    return optax.chain(*parts)


# ============================================================================ clipping
def _clip_by_global_norm(max_norm: float, who: str) -> optax.GradientTransformation:
    """$g \\min(1, c/\\|g\\|_2)$ with the global norm over the whole tree accumulated in
    float32 (float64 for float64 leaves), so float16/bfloat16 gradients whose squares
    overflow their own dtype are still clipped to norm `c` (stateless)."""

    def init_fn(params):
        _check_inexact(params, "params", who)
        return optax.EmptyState()

    def update_fn(updates, state, params=None):
        del params
        updates = _check_inexact(updates, "updates", who)
        dtype = _accumulation_dtype(jax.tree.leaves(updates))
        # ‖g‖ = r/p (p a power of two): g c/‖g‖ = (p g)(c/r), finite where ‖g‖ overflows
        r, p = _global_norm_parts(updates, dtype)
        clip = ~(r / p <= max_norm)  # a NaN norm clips, to NaN (as optax's clipping)
        factor = jnp.where(clip, max_norm / jnp.where(clip, r, 1), 1).astype(dtype)
        p = jnp.where(clip, p, 1).astype(dtype)

        def scale(g):
            wide = _wide(g.dtype, dtype)
            return ((g.astype(wide) * p.astype(wide)) * factor.astype(wide)).astype(g.dtype)

        return jax.tree.map(scale, updates), state

    return optax.GradientTransformation(init_fn, update_fn)
