"""The numerical core of the checks: group actions on arguments, the three relations,
magnitude-aware errors and the batched, jitted evaluators (pure JAX).

Everything here is jit- and vmap-able. The batched evaluators are module-level
`eqx.filter_jit` functions that take the function under test as an *argument*: a
primitive's arrays are traced and its static fields key the compilation cache, so all
cells of one flavour, every maximality supergroup, the instance and its perturbed
members share one compiled program per input shape.
"""

import functools as ft
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._compile import SMALL_PROGRAM_OPTIONS
from ..groups import AbstractGroup, Element, Product, represent
from ..taxonomy import Flavour, as_function, data_call, random_call, reinitialise, transport
from ._stats import ORIENTATION_INPUTS, PAIRS

# Checks run small programs a few dozen times each (see `taxdl._compile`).
JIT_OPTIONS = dict(compiler_options=SMALL_PROGRAM_OPTIONS)

# ----------------------------------------------------------------------------- dtypes
_RTOL = {"float16": 1e-2, "bfloat16": 5e-2, "float32": 1e-5, "float64": 1e-12}


def real_dtype(dtype) -> np.dtype:
    """The real dtype underlying `dtype` (float32 for complex64)."""
    try:
        dtype = jnp.dtype(dtype)
    except TypeError:
        raise TypeError(f"`dtype` must be a floating-point dtype, got {dtype!r}.") from None
    if jnp.issubdtype(dtype, jnp.complexfloating):
        return jnp.dtype(jnp.finfo(dtype).dtype)
    if not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"`dtype` must be a floating-point dtype, got {dtype}.")
    return dtype


def complex_dtype(dtype) -> np.dtype:
    """The complex dtype with the same precision as `dtype`."""
    return jnp.dtype(jnp.complex128 if real_dtype(dtype) == jnp.float64 else jnp.complex64)


def default_tolerances(dtype) -> tuple[float, float]:
    """`(rtol, atol)` for `dtype`: rtol = 1e-5 (float32) / 1e-12 (float64) (DESIGN §3:
    measured errors are ≤ 4e-7 / 1e-15 relative), atol = 1000 × the smallest normal
    number, so only underflow-level differences are absolute."""
    d = real_dtype(dtype)
    rtol = _RTOL.get(d.name, 100 * float(jnp.finfo(d).eps))
    return rtol, 1e3 * float(jnp.finfo(d).tiny)


def perturbation_size(dtype) -> float:
    """Relative size ρ of the perturbations that separate boundary artefacts from real
    violations, and of the finite-difference step of the conditioning estimate: √eps
    (3.5e-4 in float32, 1.5e-8 in float64)."""
    return float(np.sqrt(jnp.finfo(real_dtype(dtype)).eps))


# ----------------------------------------------------------------------------- actions
def as_flavour(flavour) -> Flavour:
    if isinstance(flavour, Flavour):
        return flavour
    for f in Flavour:
        if flavour in (f.value, f.name, f.name.lower()):
            return f
    raise ValueError(f"unknown flavour {flavour!r}; expected 'L', 'R' or 'E'.")


def act(element: Element, x) -> jax.Array:
    """$M x + t$ on the last axis of `x` (a real group acting on a complex `x` is cast up;
    a complex group cannot act on a real `x`)."""
    x = jnp.asarray(x)
    m, t = element.matrix, element.shift
    if x.ndim == 0 or x.shape[-1] != m.shape[-1]:
        raise ValueError(
            f"a group element with a {m.shape[-1]}×{m.shape[-1]} matrix acts on the last "
            f"axis, which must have size {m.shape[-1]}; got an array of shape {x.shape}."
        )
    if jnp.iscomplexobj(m) and not jnp.iscomplexobj(x):
        raise TypeError(
            "a complex group element cannot act on a real input; declare complex inputs "
            "with `Signature(..., field='complex')`."
        )
    dtype = x.dtype
    y = jnp.einsum("ij,...j->...i", m.astype(dtype), x, precision=jax.lax.Precision.HIGHEST)
    return y + t.astype(dtype)


def act_tree(element: Element, tree):
    """Act on the last axis of every array leaf of a pytree (a function's output)."""
    return jax.tree.map(lambda leaf: act(element, leaf), tree)


def _as_args(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _act_args(element: Element, xs: tuple, acted: tuple[bool, ...] | None) -> tuple:
    acted = (True,) * len(xs) if acted is None else acted
    return tuple(act(element, a) if on else a for a, on in zip(xs, acted))


def symmetry_error(f: Callable, element: Element, x, flavour, *, out_element=None,
                   acted: tuple[bool, ...] | None = None):
    """Both sides of one algebraic relation, for one group element and one input.

    | flavour | lhs | rhs |
    |---|---|---|
    | `"E"` | $f(g\\cdot x)$ | $g\\cdot f(x)$ |
    | `"R"` | $f(g\\cdot x)$ | $f(x)$ |
    | `"L"` | $g\\cdot f(x)$ | $f(x)$ |

    Pure JAX: jit it, vmap it over a batch of elements and/or inputs.

    **Arguments:**

    - `f`: the function, called as `f(*x)` for a tuple `x`, else `f(x)`.
    - `element`: one (unbatched) [`Element`][taxdl.groups.Element].
    - `x`: one unbatched input, or a tuple of them for a multi-argument `f`.
    - `flavour`: `"L"`, `"R"`, `"E"` (or a `Flavour`).
    - `out_element`: the element acting on the output when its representation differs
      from the input's (e.g. SU(2) → SO(3)); default `element`.
    - `acted`: for a tuple `x`, which arguments the group acts on (default all).

    **Returns:** `(lhs, rhs)`, equal when the relation holds.
    """
    flavour = as_flavour(flavour)
    xs = _as_args(x)
    out_element = element if out_element is None else out_element
    fx = f(*xs)
    return _sides(f, fx, element, out_element, xs, flavour, acted)


def _sides(f, fx, ein, eout, xs, flavour: Flavour, acted):
    if flavour is Flavour.LEFT:
        return act_tree(eout, fx), fx
    lhs = f(*_act_args(ein, xs, acted))
    if flavour is Flavour.RIGHT:
        return lhs, fx
    return lhs, act_tree(eout, fx)


# ----------------------------------------------------------------------------- metrics
def _flat(tree) -> jax.Array:
    leaves = [jnp.ravel(jnp.asarray(leaf)) for leaf in jax.tree.leaves(tree)]
    if not leaves:
        return jnp.zeros((0,))
    return jnp.concatenate(leaves) if len(leaves) > 1 else leaves[0]


def norm(tree) -> jax.Array:
    """Overflow-safe 2-norm over every leaf of a pytree."""
    v = jnp.abs(_flat(tree))
    if v.size == 0:
        return jnp.zeros(())
    s = jnp.max(jnp.where(jnp.isfinite(v), v, 0), initial=0)
    safe = jnp.where(s > 0, s, 1)
    r = s * jnp.sqrt(jnp.sum(jnp.square(v / safe)))
    return jnp.where(jnp.all(jnp.isfinite(v)), r, jnp.inf)


def discrepancy(lhs, rhs) -> jax.Array:
    """max |lhs − rhs| over all entries of all leaves. Entries that are equal, or
    non-finite on *both* sides (an overflow both sides share, not a broken symmetry),
    count 0; an entry non-finite on one side only counts +inf."""
    a, b = _flat(lhs), _flat(rhs)
    if a.shape != b.shape:
        raise ValueError(f"the two sides have different sizes {a.shape} and {b.shape}.")
    if a.size == 0:
        return jnp.zeros(())
    d = jnp.abs(a - b)
    both = ~jnp.isfinite(a) & ~jnp.isfinite(b)
    d = jnp.where((a == b) | both, 0, jnp.where(jnp.isfinite(d), d, jnp.inf))
    return jnp.max(d)


def finite(tree) -> jax.Array:
    """Whether every entry of every leaf is finite."""
    v = _flat(tree)
    return jnp.all(jnp.isfinite(v)) if v.size else jnp.ones((), bool)


def _rms(tree):
    v = _flat(tree)
    if v.size == 0:
        return jnp.zeros(())
    return norm(tree) / np.sqrt(v.size)


# ----------------------------------------------------------------------------- rows
CODES = {Flavour.LEFT: 0, Flavour.RIGHT: 1, Flavour.EQUIVARIANT: 2}
IDENTITY_CODE = 3


def _select(code, options):
    """`options[code]` for pytrees, elementwise over a leading batch axis of `code`."""
    def pick(*leaves):
        out = leaves[-1]
        c = code.reshape(code.shape + (1,) * (out.ndim - code.ndim))
        for i in range(len(leaves) - 2, -1, -1):
            out = jnp.where(c == i, leaves[i], out)
        return out

    return jax.tree.map(pick, *options)


def _scaled(element: Element, scale) -> Element:
    """Scale the shifts of a batch of affine elements by a per-row magnitude, so that
    translations neither vanish against huge inputs nor swamp tiny ones."""
    s = jnp.where(jnp.isfinite(scale), scale, 0).astype(jnp.finfo(element.shift.dtype).dtype)
    return Element(element.matrix, element.shift * s[:, None].astype(element.shift.dtype))


def _map2(fn, *trees):
    """Apply an unbatched `fn` over two leading axes (points × rows)."""
    return jax.vmap(jax.vmap(fn))(*trees)


def _rows(tree, lead: int) -> jax.Array:
    """Concatenate every leaf of a pytree batched over `lead` axes into (*lead, D)."""
    leaves = [jnp.reshape(leaf, leaf.shape[:lead] + (-1,)) for leaf in jax.tree.leaves(tree)]
    if not leaves:
        return jnp.zeros((1,) * lead + (0,))
    dtype = jnp.result_type(*leaves) if len(leaves) > 1 else leaves[0].dtype
    return jnp.concatenate([leaf.astype(dtype) for leaf in leaves], axis=-1)


def _norm_last(v) -> jax.Array:
    """Overflow-safe 2-norm over the last axis: max|v|·‖v/max|v|‖ (two reductions);
    +inf if any entry is non-finite."""
    a = jnp.abs(v)
    s = jnp.max(a, axis=-1, initial=0, keepdims=True)
    r = s[..., 0] * jnp.sqrt(jnp.sum(jnp.square(a / jnp.where(s > 0, s, 1)), axis=-1))
    return jnp.where(jnp.isfinite(r), r, jnp.inf)


def _points(xs, dirs, rho):
    """(3, B, ...) per argument: each row x and x + ρ‖x‖u for two random unit u; and
    ‖x‖ per row."""
    size = _norm_last(_rows(xs, 1))
    unit = _norm_last(jnp.stack([_rows(d, 1) for d in dirs]))
    scale = rho * size[None] / jnp.maximum(unit, jnp.finfo(size.dtype).tiny)
    scale = jnp.where(jnp.isfinite(scale), scale, 0)
    pts = [xs] + [tuple(a + scale[i].astype(u.dtype).reshape((-1,) + (1,) * (a.ndim - 1))
                        * u for a, u in zip(xs, d)) for i, d in enumerate(dirs)]
    return tuple(jnp.stack(parts) for parts in zip(*pts)), size


def _act_rows(element: Element, arrays, acted):
    """Act with row b's element on row b of every (P, B, ...) argument in `acted`."""
    def one(e, *x):
        return _act_args(e, x, acted)

    return jax.vmap(lambda *x: jax.vmap(one)(element, *x))(*arrays)


def _act_out_rows(element: Element, tree):
    return jax.vmap(lambda t: jax.vmap(act_tree)(element, t))(tree)


def _metrics(lhs, rhs, fp, rho, rtol, atol):
    """Per point and row: error, tolerance, and the persistence rule.

    The error is max|lhs − rhs| over the whole output (entries non-finite on both sides
    count 0, on one side +inf). The tolerance at each point is
    atol + rtol·(max(‖lhs‖, ‖rhs‖) + c) with the conditioning term
    c = max‖h(pᵢ) − h(p₀)‖/ρ over h ∈ {f, lhs, rhs}: the output change per relative
    input change, at x and at g·x (and, for closure, with the transported parameters),
    i.e. how far rounding of g·x or of g·θ (≈ eps‖x‖) can move the output. It is about
    ‖f(x)‖ for well-conditioned functions and large only near singular inputs (e.g. a
    pre-activation cancelling to ≈ 0 at g·x while every unit saturates at x). A
    violation must persist at all three points: one that vanishes under a tiny
    perturbation is a boundary artefact of a non-smooth primitive.
    """
    a, b, f = _rows(lhs, 2), _rows(rhs, 2), _rows(fp, 2)
    fa, fb = jnp.isfinite(a), jnp.isfinite(b)
    d = jnp.abs(a - b)
    d = jnp.where((a == b) | (~fa & ~fb), 0, jnp.where(jnp.isfinite(d), d, jnp.inf))
    err = jnp.max(d, axis=-1, initial=0)
    norms = _norm_last(jnp.stack([a, b]))
    nonfinite = ~jnp.all(jnp.isfinite(norms[:, 0]), axis=0)
    mag = jnp.max(jnp.where(jnp.isfinite(norms), norms, 0), axis=0)
    spreads = jnp.stack([jnp.max(_norm_last(v[1:] - v[:1]), axis=0) for v in (f, a, b)])
    spread = jnp.max(jnp.where(jnp.isfinite(spreads), spreads, 0), axis=0)
    cond = spread / rho
    tol = atol + rtol * (mag + cond[None])
    bad = err > tol
    violated = bad[0] & bad[1] & bad[2]
    first = jax.tree.map(lambda t: t[0], (lhs, rhs))
    return dict(violated=violated, artefact=bad[0] & ~violated, err=err[0], tol=tol[0],
                lhs=first[0], rhs=first[1], nonfinite=nonfinite)


def _with_scales(res: dict, s_in, s_out) -> dict:
    """`res` with the per-row factors the elements' shifts were scaled by (inputs, output),
    so a reported counterexample shows the translation actually applied."""
    n = res["err"].shape[0]
    return dict(res, scale_in=jnp.broadcast_to(s_in, (n,)),
                scale_out=jnp.broadcast_to(s_out, (n,)))


def _out_shift_scale(f0, s_in, atol):
    """Per-row magnitude for translations acting on the output (L cells): the rms of
    f(x), so a translation neither vanishes against a huge output nor swamps a tiny one —
    except where f(x) is negligible (within the absolute tolerance, or at the rounding
    level eps·rms(x) of the input), where a translation of that size could never be
    told apart from 0 and a false L claim (g·0 = t ≠ 0) would pass, and a maximal one
    look non-maximal. There the input's rms is used, or 1 when that is negligible too
    (x = 0)."""
    f = _rows(f0, 1)
    rms = _norm_last(f) / np.sqrt(max(f.shape[-1], 1))
    eps = jnp.finfo(rms.dtype).eps
    floor = 16 * jnp.asarray(atol, rms.dtype)
    s_in = jnp.asarray(s_in, rms.dtype)
    fallback = jnp.where(jnp.isfinite(s_in) & (s_in > floor), s_in, 1)
    negligible = jnp.isfinite(rms) & (rms <= floor + eps * fallback)
    return jnp.where(negligible, fallback, rms)


def _shift_scales(xs, f0, acted, code, size=None, atol=0.0):
    """Per-row magnitudes for translations: rms of the acted inputs (R, E) or of the
    output (L, see `_out_shift_scale`)."""
    acted = (True,) * len(xs) if acted is None else acted
    on = tuple(a for a, o in zip(xs, acted) if o)
    width = max(_rows(on, 1).shape[-1], 1)
    if size is None or len(on) != len(xs):
        size = _norm_last(_rows(on, 1))
    s_in = size / np.sqrt(width)
    s_out = _out_shift_scale(f0, s_in, atol)
    return s_in, jnp.where(code == CODES[Flavour.LEFT], s_out, s_in)


def _split(tree, k: int):
    return jax.tree.map(lambda a: a[:k], tree), jax.tree.map(lambda a: a[k:], tree)


@eqx.filter_jit(**JIT_OPTIONS)
def relation_rows(prim, acted, act_out, code, ein, eout, xs, dirs, rho, rtol, atol,
                  hooks=()):
    """Evaluate the algebraic relations on a batch of rows, one compiled program for all
    flavours and groups of a primitive (per input and element shapes).

    Row b pairs input `xs[.][b]` with elements `ein[b]` (acting on the `acted`
    arguments) and `eout[b]` (acting on the output, when `act_out`), under the flavour
    `code[b]` (0 = L: g·f(x) vs f(x); 1 = R: f(g·x) vs f(x); 2 = E: f(g·x) vs g·f(x)).
    `dirs`: two perturbation directions shaped like `xs`. Nothing random is drawn in
    here (PRNG code is slow to compile on CPU), and `f` appears once in the program.

    `prim` is the primitive (or any function); its `as_function` is taken inside the
    trace, so a hook that builds a new closure on every call still compiles once.

    Returns per row `violated` (persistent), `artefact` (vanished under perturbation),
    `err`, `tol`, `lhs`, `rhs`, `nonfinite`, and the shift scales `scale_in`, `scale_out`.

    `hooks` (static, unused here) are the registered hook functions: a key of the
    compilation cache, so that a hook registered or replaced after a check (in a
    notebook, say) is the one the next check traces.
    """
    del hooks
    f = as_function(prim)
    pts, size = _points(xs, dirs, rho)
    acted_t = (True,) * len(xs) if acted is None else acted
    on = tuple(a for a, o in zip(xs, acted_t) if o)
    width = max(_rows(on, 1).shape[-1], 1)
    s_in = (size if len(on) == len(xs) else _norm_last(_rows(on, 1))) / np.sqrt(width)
    gpts = _act_rows(_scaled(ein, s_in), pts, acted)
    both = tuple(jnp.concatenate([p, g]) for p, g in zip(pts, gpts))
    fp, fgp = _split(_map2(f, *both), 3)
    s_out = jnp.where(code == CODES[Flavour.LEFT],
                      _out_shift_scale(jax.tree.map(lambda a: a[0], fp), s_in, atol), s_in)
    gfp = _act_out_rows(_scaled(eout, s_out), fp) if act_out else fp
    c = code[None]
    lhs = _select(c, [gfp, fgp, fgp])
    rhs = _select(c, [fp, fp, gfp])
    return _with_scales(_metrics(lhs, rhs, fp, rho, rtol, atol), s_in, s_out)


@eqx.filter_jit(**JIT_OPTIONS)
def closure_rows(prim, cells, acted, act_out, code, ein, eout, eout_inv, xs, dirs, rho,
                 rtol, atol, hooks=()):
    """Evaluate closure relations $f_{g\\cdot θ} = g∘f_θ$ (L), $f_θ∘g$ (R),
    $g^{-1}∘f_θ∘g$ (E) on a batch of rows, θ moved by the `transport` hook.

    `cells`: static tuple of `(flavour, group)`; row b checks cell `code[b]`. One
    compiled program covers all closure cells of a primitive. `hooks`: see
    `relation_rows`.
    """
    del hooks
    f = as_function(prim)
    flavours = [as_flavour(fl) for fl, _ in cells]
    is_left = jnp.isin(code, jnp.asarray([i for i, fl in enumerate(flavours)
                                          if fl is Flavour.LEFT] or [-1], code.dtype))
    pts, size = _points(xs, dirs, rho)
    fp = _map2(f, *pts)
    s_in, s_out = _shift_scales(xs, jax.tree.map(lambda a: a[0], fp), acted,
                                jnp.where(is_left, 0, 1), size, atol)
    ein, eout = _scaled(ein, s_in), _scaled(eout, s_out)
    eout_inv = _scaled(eout_inv, s_out)
    gpts = _act_rows(ein, pts, acted)
    fgp = _map2(f, *gpts)
    options_lhs, options_rhs = [], []
    for fl, (_, group) in zip(flavours, cells):
        def moved_values(e_in, e_out, *p, fl=fl, group=group):
            m = transport(prim, fl, e_out if fl is Flavour.LEFT else e_in, group)
            return jax.vmap(as_function(m))(*p)

        swap = tuple(jnp.swapaxes(a, 0, 1) for a in pts)  # (B, 3, ...)
        vals = jax.vmap(moved_values)(ein, eout, *swap)
        options_lhs.append(jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1), vals))
        if fl is Flavour.LEFT:
            options_rhs.append(_act_out_rows(eout, fp) if act_out else fp)
        elif fl is Flavour.RIGHT:
            options_rhs.append(fgp)
        else:
            options_rhs.append(_act_out_rows(eout_inv, fgp) if act_out else fgp)
    c = code[None]
    return _with_scales(_metrics(_select(c, options_lhs), _select(c, options_rhs), fp, rho,
                                 rtol, atol), s_in, s_out)


# ----------------------------------------------------------------------------- sampling
@ft.partial(jax.jit, static_argnums=(0, 2, 3), **JIT_OPTIONS)
def _sample_jit(group, key, num, dtype):
    # Group samplers compute in at least float32 and cast; their internal promotions are
    # theirs to make, whatever promotion mode the caller runs under.
    with jax.numpy_dtype_promotion("standard"):
        return group.sample(key, num, dtype)


_combine_jit = jax.jit(Product.combine, **JIT_OPTIONS)


@ft.partial(jax.jit, static_argnums=(0, 2), **JIT_OPTIONS)
def _represent_jit(out_group, element, dtype):
    with jax.numpy_dtype_promotion("standard"):
        return represent(out_group, element, dtype)


def _sample_group(group: AbstractGroup, key, num: int, dtype) -> Element:
    if isinstance(group, Product):
        return _combine_jit(tuple(_sample_group(f, k, num, dtype)
                                  for k, f in zip(group.factor_keys(key), group.factors)))
    return _sample_jit(group, key, num, dtype)


def sample_elements(group: AbstractGroup, out_group: AbstractGroup | None, key, num: int,
                    dtype) -> tuple[Element, Element]:
    """`num` elements of a bound group and their images in `out_group`'s representation
    (the same elements when `out_group` is None). Compiled once per group, shared across
    checks. A product (most of the supergroups a maximality check samples) is drawn as
    `Product.sample` draws it, one element of each factor combined, with each factor's
    own compiled sampler: the many products of a few families compile nothing new."""
    dtype = jnp.dtype(dtype).type
    e = _sample_group(group, key, num, dtype)
    return e, (e if out_group is None else _represent_jit(out_group, e, dtype))


@ft.partial(jax.jit, static_argnums=(1,), **JIT_OPTIONS)
def _key_grid(seed, shape):
    return jax.random.split(jax.random.key(seed), shape)


def key_grid(seed: int, shape: tuple[int, ...]):
    """A grid of independent PRNG keys (compiled once per shape)."""
    return _key_grid(np.uint32(seed), tuple(shape))


def of_type_of(prim, fresh):
    """`fresh` (a `reinitialise` draw) as an instance of `prim`'s class: a hook
    registered for an ancestor builds the ancestor, whose leaves are moved into `prim`'s
    structure when they match (a subclass adding no fields), so that the subclass's own
    methods are the ones checked."""
    if type(fresh) is type(prim) or not isinstance(prim, type(fresh)):
        return fresh
    leaves, treedef = jax.tree.flatten(prim)
    new = jax.tree.leaves(fresh)

    def spec(leaf):
        return (getattr(leaf, "shape", None), getattr(leaf, "dtype", None))

    if len(new) != len(leaves) or any(spec(a) != spec(b) for a, b in zip(leaves, new)):
        raise TypeError(
            f"the `reinitialise` hook {type(prim).__name__} inherits returns a "
            f"{type(fresh).__name__}, whose fields differ from {type(prim).__name__}'s: "
            f"register one for the subclass with `taxdl.taxonomy.reinitialise.register("
            f"{type(prim).__name__})`.")
    return jax.tree.unflatten(treedef, new)


def random_function(prim, kind: str, key, batch_shape=None) -> Callable:
    """One draw of a random function for a probabilistic cell of `kind`:
    `as_function(reinitialise(prim, key))` (initialisation), `random_call(prim, key)`
    (time) or `data_call(prim, key, batch_shape)` (data)."""
    if kind == "initialisation":
        return as_function(of_type_of(prim, reinitialise(prim, key)))
    if kind == "time":
        return random_call(prim, key)
    if kind == "data":
        return data_call(prim, key, batch_shape)
    raise ValueError(f"unknown probabilistic kind {kind!r}.")


def _unit_scaled(v) -> jax.Array:
    """v / max|v| (0 stays 0)."""
    m = jnp.max(jnp.abs(v))
    return v / jnp.where(m > 0, m, 1)


def probes(ys) -> jax.Array:
    """Scalar probes of one output pytree `ys`: projections on two fixed directions,
    the first coordinate, the 2-norm, the peakedness ‖y‖₄⁴/‖y‖₂⁴ (sensitive to
    rotations that a linear probe cannot see) and the skew Σy³/‖y‖₂³ (odd: a law of
    i.i.d. skewed weights keeps its mean and covariance under the rotations that fix
    the all-ones vector, and only odd moments tell it from its rotated image). A scalar
    output gives itself and |y|."""
    v = _flat(ys)
    if jnp.iscomplexobj(v):
        v = jnp.concatenate([v.real, v.imag])
    if v.size == 1:
        return jnp.stack([v[0], jnp.abs(v[0])])
    # norm and peakedness of v/max|v|: Σv⁴ of an output of size 1e-10 underflows to 0
    # in float32 (and (Σv²)² with it), one of size 1e10 overflows
    u = _unit_scaled(v)
    u2 = jnp.sum(u * u)
    peak = jnp.sum(u**4) / jnp.where(u2 > 0, u2 * u2, 1)
    skew = jnp.sum(u**3) / jnp.where(u2 > 0, u2 * jnp.sqrt(u2), 1)
    directions = np.random.default_rng(20250).standard_normal((2, v.size))
    directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
    lin = jnp.asarray(directions, v.dtype) @ v
    return jnp.concatenate([lin, v[:1], _norm_last(v)[None], peak[None], skew[None]])


def pair_probe(ya, yb) -> jax.Array:
    """Joint probes of one random function at two inputs: the cosine of the angle between
    the outputs (their product for scalar outputs) and the distance between them. Each
    probe at a single input sees one marginal law only, and a group can preserve every
    marginal but not the joint law: under x ↦ LayerNorm(Wx) with Gaussian W, f(Ax) has
    the law of f(x) at each x for every invertible A (Wx is Gaussian with a covariance
    that only scales with ‖Ax‖), while the angle between f(Ax) and f(Ax') follows the
    angle between Ax and Ax'. The distance cancels what a draw adds at every input alike
    (a sigmoid layer's output offset W·½1, whose spread hides how f scales)."""
    a, b = _flat(ya), _flat(yb)
    if jnp.iscomplexobj(a):
        a, b = jnp.concatenate([a.real, a.imag]), jnp.concatenate([b.real, b.imag])
    d = a - b
    if a.size == 1:
        return jnp.concatenate([a * b, jnp.abs(d)])
    ua, ub = (_unit_scaled(v) for v in (a, b))
    norms = jnp.sqrt(jnp.sum(ua * ua)) * jnp.sqrt(jnp.sum(ub * ub))
    cos = jnp.sum(ua * ub) / jnp.where(norms > 0, norms, 1)
    return jnp.stack([jnp.where(norms > 0, cos, 0), _norm_last(d)])


def _real_flat(tree) -> jax.Array:
    v = _flat(tree)
    return jnp.concatenate([v.real, v.imag]) if jnp.iscomplexobj(v) else v


def cross_probe(ya, yb) -> jax.Array:
    """(aᵀf(x))(bᵀf(x'))/(‖f(x)‖‖f(x')‖) for two fixed unit directions a, b: a joint
    probe that an orthogonal map of the outputs changes, unlike the cosine and the
    distance of `pair_probe`. A law concentrated on the maps that commute with a complex
    structure J (Haar U(k) on ℝ²ᵏ) keeps ⟨f(x), J f(x')⟩ fixed at every draw; moved by a
    rotation outside U(k) it does not, and this probe sees the difference. 0 for scalar
    outputs (their product is a `pair_probe` already)."""
    a, b = _real_flat(ya), _real_flat(yb)
    if a.size == 1:
        return jnp.zeros((1,), a.dtype)
    directions = np.random.default_rng(20251).standard_normal((2, a.size))
    directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
    ua, ub = _unit_scaled(a), _unit_scaled(b)
    norms = jnp.sqrt(jnp.sum(ua * ua)) * jnp.sqrt(jnp.sum(ub * ub))
    da, db = (jnp.asarray(d, a.dtype) for d in directions)
    value = jnp.sum(da * ua) * jnp.sum(db * ub) / jnp.where(norms > 0, norms, 1)
    return jnp.where(norms > 0, value, 0)[None]


def orientation_probe(rows: jax.Array) -> jax.Array:
    """det[f(x₁) … f(x_m)]/∏‖f(x_i)‖ ∈ [−1, 1] for the (m, m) matrix of the outputs at m
    inputs (Hadamard's ratio): the orientation and the spread of the outputs. Fewer than m
    outputs cannot tell a law on SO(m) from its image under a reflection (the first m − 1
    columns of a Haar SO(m) matrix have the law of Haar O(m)'s), m of them can: det(AW) =
    −det(W) for a reflection A. 0 where an output is 0; NaN where one is not finite."""
    scale = jnp.max(jnp.abs(rows), axis=-1, keepdims=True)
    unit = rows / jnp.where(scale > 0, scale, 1)
    norms = jnp.sqrt(jnp.sum(unit * unit, axis=-1, keepdims=True))
    unit = unit / jnp.where(norms > 0, norms, 1)
    finite = jnp.all(jnp.isfinite(rows))
    return jnp.where(finite, jnp.linalg.det(jnp.where(finite, unit, 0)), jnp.nan)[None]


@eqx.filter_jit(**JIT_OPTIONS)
def probe_samples(prim, kind, acted, act_out, batch_shape, code, ein, eout, eout_inv, keys,
                  probe_inputs, orientation_inputs, hooks=()):
    """Probe values of random functions, each transformed by its test's element.

    Test t (code 0 = L: g∘h, 1 = R: h∘g, 2 = E: g⁻¹∘h∘g, 3 = h itself) uses elements
    `ein[t]`, `eout[t]`, `eout_inv[t]` and the random functions drawn from `keys[t]`
    (shape (T, N)). Returns (T, N, P) probe values: the `probes` at each of the fixed
    `probe_inputs`, a `pair_probe` for each of the `PAIRS` of them, a `cross_probe` for
    each pair, and the `orientation_probe` at the first m of `orientation_inputs` (each
    argument's inputs stacked on a leading axis), m the real size of the output, when
    2 ≤ m ≤ ORIENTATION_INPUTS (else 0).
    `hooks`: see `relation_rows`.
    """
    del hooks

    def one(c, e1, e2, e3, key):
        h = random_function(prim, kind, key, batch_shape)

        def moved(*x):
            hx = h(*x)
            hgx = h(*_act_args(e1, x, acted))
            left = act_tree(e2, hx) if act_out else hx
            equi = act_tree(e3, hgx) if act_out else hgx
            return _select(c, [left, hgx, equi, hx])

        outs = [moved(*x) for x in probe_inputs]
        vals = [probes(y) for y in outs]
        vals += [pair_probe(outs[i], outs[j]) for i, j in PAIRS if j < len(outs)]
        vals += [cross_probe(outs[i], outs[j]) for i, j in PAIRS if j < len(outs)]
        m = _real_flat(outs[0]).size
        if 2 <= m <= ORIENTATION_INPUTS:
            ys = jax.vmap(moved)(*(x[:m] for x in orientation_inputs))
            rows = jax.vmap(_real_flat)(ys)
            vals.append(orientation_probe(rows).astype(vals[0].dtype))
        else:
            vals.append(jnp.zeros((1,), vals[0].dtype))
        return jnp.concatenate(vals)

    per_test = jax.vmap(one, in_axes=(None, None, None, None, 0))
    return jax.vmap(per_test)(code, ein, eout, eout_inv, keys)


# ----------------------------------------------------------------------------- inputs
def random_inputs(rng: np.random.Generator, shapes, num: int, dtype) -> tuple:
    """`num` random inputs per argument shape (host-side NumPy, so nothing compiles):
    Gaussian directions with a log-uniform scale in [1e-3, 1e3], 30% of them structured
    (repeated coordinates, near the ±all-ones direction, along one axis)."""
    out = []
    cplx = jnp.issubdtype(jnp.dtype(dtype), jnp.complexfloating)
    for shape in shapes:
        shape = tuple(shape)
        g = rng.standard_normal((num, *shape))
        if cplx:
            g = g + 1j * rng.standard_normal((num, *shape))
        scale = np.exp(rng.uniform(np.log(1e-3), np.log(1e3), num))
        x = g
        if shape:
            n = shape[-1]
            kind = rng.integers(0, 10, num)
            for i in np.flatnonzero(kind == 7):  # repeated coordinates
                idx = rng.integers(0, max(1, (n + 1) // 2), n)
                x[i] = g[i][..., idx]
            for i in np.flatnonzero(kind == 8):  # near ±1
                x[i] = rng.choice([-1.0, 1.0]) * (1 + 1e-2 * g[i])
            for i in np.flatnonzero(kind == 9):  # one axis
                e = np.zeros_like(g[i])
                e[..., 0] = g[i][..., 0]
                x[i] = e
        x = x * scale.reshape((num,) + (1,) * len(shape))
        out.append(np.asarray(x, dtype))
    return tuple(out)


def random_directions(rng: np.random.Generator, shapes, num: int, dtype) -> tuple:
    """Two sets of Gaussian perturbation directions shaped like the inputs."""
    cplx = jnp.issubdtype(jnp.dtype(dtype), jnp.complexfloating)

    def draw(shape):
        d = rng.standard_normal((num, *shape))
        if cplx:
            d = d + 1j * rng.standard_normal((num, *shape))
        return np.asarray(d, dtype)

    return tuple(tuple(draw(tuple(s)) for s in shapes) for _ in range(2))
