"""`check(primitive)`: verify every cell of a declaration, and its maximality."""

import contextlib
import dataclasses
import zlib
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..groups import (
    AbstractGroup,
    Element,
    Trivial,
    immediate_supergroups,
    is_subgroup,
    same_group,
)
from ..groups._hierarchy import SCALAR_GROUPS, least, shift_extensions
from ..taxonomy import (
    AbstractInitialiser,
    Cell,
    Flavour,
    Generation,
    Taxonomy,
    as_function,
    data_call,
    perturb,
    random_call,
    reinitialise,
    signature,
    taxonomy,
    transport,
)
from ..taxonomy._symmetry import as_generation
from . import _engine as E
from ._report import (
    NOT_CHECKABLE,
    CellResult,
    Counterexample,
    MaximalityResult,
    Report,
    SymmetryViolation,
    maximality_message,
    not_checkable_message,
    violation_message,
)
from ._fit import closure_residuals as fit_residuals
from .._types import check_bool, check_real
from ._memory import relieve_map_pressure
from ._stats import ORIENTATION_INPUTS, PROBE_COUNT, ks_pvalue, two_sample_test
from .strategies import _edge_norms
from ._subject import as_linear, cast, display_name, resolve

RELATIONS = {
    Flavour.LEFT: "g·f(x) = f(x)",
    Flavour.RIGHT: "f(g·x) = f(x)",
    Flavour.EQUIVARIANT: "f(g·x) = g·f(x)",
}
CLOSURE_RELATIONS = {
    Flavour.LEFT: "f_{g·θ}(x) = g·f_θ(x)",
    Flavour.RIGHT: "f_{g·θ}(x) = f_θ(g·x)",
    Flavour.EQUIVARIANT: "f_{g·θ}(x) = g⁻¹·f_θ(g·x)",
}
PROBABILISTIC_RELATIONS = {
    Flavour.LEFT: "P(g∘f) = P(f)",
    Flavour.RIGHT: "P(f∘g) = P(f)",
    Flavour.EQUIVARIANT: "P(g⁻¹∘f∘g) = P(f)",
}


class NotApplicable(Exception):
    """A cell whose relation has no meaning for this primitive (e.g. a group acting on a
    scalar output)."""


class BetweenDimensions(NotApplicable):
    """An E cell naming no output representation, for a map between different
    dimensions."""


# ============================================================================ context
@dataclasses.dataclass
class Context:
    """Everything one `check` run shares: the primitive, its inputs, the budget."""

    prim: Any
    name: str
    f: Callable
    members: list
    shapes: tuple
    dtype: Any
    real: Any
    out_struct: Any
    examples: int
    batch: int
    samples: int
    test_elements: int
    alpha: float
    data_batch: int
    key: Any
    seed: int
    rtol: float
    atol: float
    rho: float
    parameter_free: bool
    single_member: bool
    kinds: tuple
    acted_default: tuple | None
    declared: Any = None
    fit_closure: bool = False
    cache: dict = dataclasses.field(default_factory=dict)


def _parameter_free(prim) -> bool:
    return not any(isinstance(leaf, jax.Array) and jnp.issubdtype(leaf.dtype, jnp.inexact)
                   for leaf in jax.tree.leaves(prim))


def _transport_moves_nothing(prim, shapes, out_struct, real) -> bool:
    """Whether the `transport` hook of a parameter-free primitive returns the primitive
    itself (the default does; so does a chain's, when none of its parts has parameters).

    Then f_{g·θ} = f for every g and the class is {f}: a closure relation is the
    algebraic one. The hook runs under `jax.jit` with g traced, so anything it moves must
    end up in an array leaf of what it returns; asking it to move the identity and
    comparing the result with the primitive is therefore conclusive. A hook that wraps
    the element or the primitive (a dropout's moved randomness, an input mean's moved
    statistics) returns something else, and the class is taken to have more members."""
    if transport.dispatch(type(prim)) is transport.dispatch(object):
        return True
    d_in = next((s[-1] for s in shapes if s), None)
    d_out = next((leaf.shape[-1] for leaf in jax.tree.leaves(out_struct) if leaf.shape),
                 None)
    for flavour in Flavour:
        d = d_out if flavour is Flavour.LEFT else d_in
        if d is None:
            continue
        identity = Element(jnp.eye(d, dtype=real), jnp.zeros((d,), real))
        try:
            moved = transport(prim, flavour, identity, Trivial(d))
            if not bool(eqx.tree_equal(moved, prim)):
                return False
        except Exception:  # a hook that cannot move the identity: not known to be {f}
            return False
    return True


def _check_alpha(alpha) -> None:
    """`alpha` is a false-positive rate: 0 would accept every probabilistic claim and 1
    reject every one, so only the open interval is meaningful."""
    ok = isinstance(alpha, (int, float, np.integer, np.floating)) and not isinstance(
        alpha, bool) and 0 < float(alpha) < 1
    if not ok:
        raise ValueError(f"`alpha` (the false-positive rate of probabilistic cells) must be "
                         f"in the open interval (0, 1), got {alpha!r}.")


def _check_counts(n, samples, test_elements, alpha, data_batch, members) -> None:
    """Sizes of a run: integers in their meaningful ranges, and enough probabilistic
    samples that a two-sample test could reject at all."""
    def integer(value, name, low, what):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"`{name}` ({what}) must be an integer >= {low}, got {value!r}.")

    if n is not None:
        integer(n, "n", 1, "the input dimension, or None for the primitive's own")
    integer(test_elements, "test_elements", 1, "group elements per probabilistic test")
    integer(data_batch, "data_batch", 1, "the batch given to the data_call hook")
    integer(members, "members", 0, "generic members of a parameterised class")
    integer(samples, "samples", 2, "random functions per side of a probabilistic test")
    # the smallest p-value a test can give is that of two completely separated samples
    threshold = alpha / (PROBE_COUNT * test_elements)
    if ks_pvalue(1.0, samples, samples) >= threshold:
        enough = next(k for k in range(samples, 10**6) if ks_pvalue(1.0, k, k) < threshold)
        raise ValueError(f"`samples` = {samples} is too few: no probabilistic cell could fail "
                         f"at alpha = {alpha} with {test_elements} test element(s); use at "
                         f"least {enough}.")


CHECK_DTYPES = ("float32", "float64")


def check_dtype(dtype) -> np.dtype:
    """The dtype of a run, which must be float32 or float64 (the dtypes whose tolerances
    the checks are calibrated for)."""
    try:
        d = jnp.dtype(dtype)
    except TypeError:
        d = None
    if d is None or d.name not in CHECK_DTYPES:
        raise TypeError(f"`dtype` must be float32 or float64 (jnp.float32 or jnp.float64), "
                        f"got {dtype!r}.")
    return d


def check_key(key):
    """`key` (None for the default `jax.random.key(0)`), which must be one JAX PRNG key:
    a typed key (`jax.random.key`) or a raw uint32 key of shape (2,) (`jax.random.PRNGKey`)."""
    if key is None:
        return jax.random.key(0)
    if isinstance(key, (jax.Array, np.ndarray)) and not isinstance(key, jax.core.Tracer):
        typed = jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
        if (typed and key.shape == ()) or (
                not typed and key.dtype == jnp.uint32 and key.shape == (2,)):
            return key
    raise TypeError(f"`key` must be a JAX PRNG key, one key such as `jax.random.key(0)` "
                    f"(or None for that default), got {key!r}.")


def _check_dimension(name: str, n, shapes, from_signature: bool) -> None:
    """A primitive that fixes its own input dimension is checked in it: an `n` its
    inputs do not have is a conflict, not a request (it would be ignored)."""
    if n is None or not from_signature:
        return
    dims = [s[-1] for s in shapes if s]
    if dims and n not in dims:
        own = dims[0] if len(set(dims)) == 1 else tuple(dims)
        raise ValueError(f"`n` = {n} conflicts with {name}'s input dimension {own}: it fixes "
                         f"its own dimension; pass n={own} or leave `n` out.")


def make_context(obj, n, dtype, *, examples=50, batch=32, samples=1024, test_elements=3,
                 alpha=1e-3, data_batch=64, key=None, rtol=None, atol=None, members=2,
                 shapes=None, field="real", fit_closure=False
                 ) -> tuple[Context, Taxonomy | None]:
    """Resolve what is checked and fix everything a run shares. `obj` is a primitive
    (instance, class, factory) or, with `shapes`, any function. Every argument of a run
    is validated here (`check` and the `assert_*` functions share it)."""
    dtype = check_dtype(dtype)
    key = check_key(key)
    _check_alpha(alpha)
    _check_counts(n, samples, test_elements, alpha, data_batch, members)
    for tol_name, tol in (("rtol", rtol), ("atol", atol)):
        if tol is not None:   # a NaN or infinite tolerance would pass anything
            check_real(tol, tol_name, who="check", low=0)
    relieve_map_pressure()
    if shapes is None:
        prim = resolve(obj)
        declared = taxonomy(prim)
        name = display_name(prim)
    else:
        prim, declared = obj, None
        name = getattr(obj, "__name__", None) or type(obj).__name__
    real = E.real_dtype(dtype)
    key_init, key_perturb = jax.random.split(key)
    if isinstance(prim, AbstractInitialiser):
        prim = as_linear(prim, n, real, key_init)
    prim = cast(prim, real)
    from_signature = shapes is None
    if from_signature:
        sig = signature(prim, n)
        shapes, field, acted = sig.inputs, sig.field, sig.acted
    else:
        acted = None
    dt = E.complex_dtype(real) if field == "complex" else jnp.dtype(real)
    shapes = tuple(tuple(s) for s in shapes)
    _check_dimension(name, n, shapes, from_signature)
    _check_inherited_hooks(prim)
    f = as_function(prim)
    try:
        out_struct = jax.eval_shape(f, *(jax.ShapeDtypeStruct(s, dt) for s in shapes))
    except ValueError as e:   # the primitive rejects these inputs: its own message
        raise ValueError(f"{name}: cannot be checked on inputs of shapes {shapes}: {e}") from e
    except Exception as e:
        raise NotImplementedError(
            f"{name}: its function cannot be called on inputs of shapes {shapes} "
            f"({type(e).__name__}: {e}). A random primitive (one whose call needs `key`) "
            "must register `taxdl.taxonomy.as_function`, its function at a fixed "
            "realisation, to be checked; a primitive taking other inputs registers "
            "`taxdl.taxonomy.signature`.") from e
    parameter_free = _parameter_free(prim)
    mems = [("the primitive", prim, f)]
    if not parameter_free:
        for i, k in enumerate(jax.random.split(key_perturb, members)):
            p = perturb(prim, k)
            mems.append((f"a generic member of its class (parameters perturbed, #{i + 1})", p,
                         as_function(p)))
    kinds = () if declared is None else tuple(
        dict.fromkeys(k.value for _, _, c in declared for k in c.kinds))
    rtol_d, atol_d = E.default_tolerances(real)
    seed = zlib.crc32(np.asarray(jax.random.key_data(key)).tobytes()) & 0x7FFFFFFF
    ctx = Context(
        prim=prim, name=name, f=f, members=mems, shapes=shapes, dtype=dt, real=real,
        out_struct=out_struct, examples=examples, batch=batch, samples=samples,
        test_elements=test_elements, alpha=alpha, data_batch=data_batch, key=key, seed=seed,
        rtol=rtol_d if rtol is None else rtol, atol=atol_d if atol is None else atol,
        rho=E.perturbation_size(real), parameter_free=parameter_free,
        single_member=parameter_free and _transport_moves_nothing(prim, shapes, out_struct,
                                                                  real),
        kinds=kinds or ("initialisation",),
        acted_default=None if acted is None else tuple(acted), declared=declared,
        fit_closure=fit_closure,
    )
    return ctx, declared


# ============================================================================ plans
@dataclasses.dataclass(frozen=True)
class Plan:
    """How to draw elements for one relation: `sample` (bound) is sampled; `out` (bound,
    or None for the same elements) is the representation acting on outputs. `d_in` /
    `d_out` are the dimensions acted on (None where nothing is), `acted` the arguments
    the group acts on, `act_out` whether the output can be acted on at all."""

    flavour: Flavour
    sample: AbstractGroup
    out: AbstractGroup | None
    acted: tuple
    d_in: int | None
    d_out: int | None
    avoid: AbstractGroup | None = None  # a maximality probe's declared group

    @property
    def out_group(self) -> AbstractGroup:
        return self.sample if self.out is None else self.out

    @property
    def act_out(self) -> bool:
        return self.d_out is not None


def _acted(ctx: Context, cell: Cell) -> tuple:
    k = len(ctx.shapes)
    if cell.args is not None:
        return tuple(i in cell.args for i in range(k))
    if ctx.acted_default is not None:
        return ctx.acted_default
    return (True,) * k


def _in_dim(ctx: Context, acted: tuple) -> int:
    dims = {s[-1] if s else None for s, on in zip(ctx.shapes, acted) if on}
    if len(dims) != 1 or None in dims:
        raise NotApplicable(f"the acted arguments have last axes {sorted(map(str, dims))}; "
                            "a group acts on one common dimension")
    return dims.pop()


def _out_dim(ctx: Context) -> int:
    leaves = jax.tree.leaves(ctx.out_struct)
    dims = {leaf.shape[-1] if leaf.shape else None for leaf in leaves}
    if None in dims or not dims:
        raise NotApplicable("the output is a scalar, which no group acts on")
    if len(dims) != 1:
        raise NotApplicable(f"the outputs have last axes {sorted(dims)}")
    return dims.pop()


def _maybe(fn, *args):
    try:
        return fn(*args)
    except NotApplicable:
        return None


def registered_hooks() -> tuple:
    """Every function registered for the hooks the checked programs dispatch while they
    are traced: part of their compilation key, so that registering or replacing a hook
    takes effect at the next check in the same process."""
    return tuple(f for hook in (as_function, reinitialise, random_call, data_call, transport)
                 for f in hook.registry.values())


def _call_method(cls):
    return next((k.__dict__["__call__"] for k in cls.__mro__ if "__call__" in k.__dict__),
                None)


def _check_inherited_hooks(prim) -> None:
    """Refuse a primitive whose class overrides `__call__` but inherits a hook that builds
    the checked function (`as_function`, `data_call`, `random_call`) from an ancestor:
    the ancestor's hook computes the ancestor's map, so the check would test that map,
    not the subclass's."""
    cls = type(prim)
    for hook in (as_function, data_call, random_call):
        owner = next((k for k in cls.__mro__ if k in hook.registry and k is not object),
                     None)
        if owner is not None and owner is not cls \
                and _call_method(cls) is not _call_method(owner):
            name = hook.__name__
            raise TypeError(
                f"{cls.__name__} overrides __call__, but its `{name}` hook is the one "
                f"registered for {owner.__name__}, which computes {owner.__name__}'s map: "
                f"register one for the subclass with `taxdl.taxonomy.{name}.register("
                f"{cls.__name__})`.")


def _bind(group: AbstractGroup, n: int) -> AbstractGroup:
    """`group` bound to dimension `n`: a family is bound; a group already bound to
    another dimension is refused (O(5) cannot act on ℝ³)."""
    if group.bound and int(group.n) != n:
        raise NotApplicable(f"{group.name} acts on dimension {group.n}, but the acted "
                            f"dimension is {n}")
    try:
        return group.on(n)
    except ValueError as err:
        raise NotApplicable(f"{group.name} cannot act on dimension {n}: {err}") from None


def make_plan(ctx: Context, flavour: Flavour, group: AbstractGroup,
              out: AbstractGroup | None, acted: tuple) -> Plan:
    d_out = _maybe(_out_dim, ctx)
    if flavour is Flavour.RIGHT:
        d_in = _in_dim(ctx, acted)
        return Plan(flavour, _bind(group, d_in), None, acted, d_in, d_out)
    if flavour is Flavour.LEFT:
        d_out = _out_dim(ctx)
        d_in = _maybe(_in_dim, ctx, acted)
        if d_in is None:
            acted = (False,) * len(ctx.shapes)
        if out is None:
            return Plan(flavour, _bind(group, d_out), None, acted, d_in, d_out)
        g = group if group.bound else _bind(group, d_in)
        return Plan(flavour, g, _bind(out, d_out), acted, d_in, d_out)
    d_in, d_out = _in_dim(ctx, acted), _out_dim(ctx)
    if out is None and d_in != d_out and isinstance(group, SCALAR_GROUPS):
        out = group  # a scalar acts on both dimensions: f(ax) = af(x)
    if out is None:
        if d_in != d_out:
            raise BetweenDimensions(f"input dimension {d_in} differs from output "
                                    f"dimension {d_out} and the cell names no output "
                                    "representation")
        return Plan(flavour, _bind(group, d_in), None, acted, d_in, d_out)
    return Plan(flavour, _bind(group, d_in), _bind(out, d_out), acted, d_in, d_out)


# ============================================================================ rows
def _seed(ctx: Context, *salt) -> int:
    """A 31-bit seed derived from the check's seed and `salt` (host-side, nothing to
    compile)."""
    return zlib.crc32(repr((ctx.seed,) + salt).encode()) & 0x7FFFFFFF


class Host(NamedTuple):
    """A batch of elements as host (NumPy) arrays."""

    matrix: np.ndarray
    shift: np.ndarray


def _dev(e: Host) -> Element:
    return Element(jnp.asarray(e.matrix), jnp.asarray(e.shift))


def _identity(d: int | None, num: int, dtype) -> Host:
    d = 1 if d is None else d
    return Host(np.broadcast_to(np.eye(d, dtype=dtype), (num, d, d)).copy(),
                   np.zeros((num, d), dtype))


def _out_dtype(ctx: Context):
    leaves = jax.tree.leaves(ctx.out_struct)
    if any(jnp.issubdtype(leaf.dtype, jnp.complexfloating) for leaf in leaves):
        return E.complex_dtype(ctx.real)
    return jnp.dtype(ctx.real)


def _as_dtype(e: Host, dtype, where: str) -> Host:
    if np.iscomplexobj(e.matrix) and not jnp.issubdtype(dtype, jnp.complexfloating):
        raise NotApplicable(f"a complex group cannot act on the real {where}")
    return Host(np.asarray(e.matrix).astype(dtype), np.asarray(e.shift).astype(dtype))


def _inverse(e: Host) -> Host:
    """Host-side inverse of a batch of affine elements: $M^{-1}(x - t)$."""
    m = np.asarray(e.matrix)
    inv = np.linalg.inv(m.astype(np.complex128 if np.iscomplexobj(m) else np.float64))
    shift = -np.einsum("...ij,...j->...i", inv, np.asarray(e.shift))
    return Host(inv.astype(m.dtype), shift.astype(m.dtype))


def _cat(a: Host, b: Host) -> Host:
    return Host(np.concatenate([a.matrix, b.matrix]), np.concatenate([a.shift, b.shift]))


COARSE_ATOL = 0.25
"""Membership tolerance below which an element outside a declared group counts as near
it (ordered after the far ones in probabilistic maximality probes)."""


def _informative_first(sampled: Element, avoid: AbstractGroup | None) -> np.ndarray:
    """Row order (stable) putting first the elements that test something: not the
    identity (a finite group's uniform draws include it: three draws from {±I} are all I
    one time in eight) and, for a maximality probe, not inside the declared group `avoid`
    (three draws from Bₙ all lie in its index-2 subgroup Dₙ one time in eight, and a
    probe that sees only those cannot refute the larger group). Among those outside,
    the ones far from it come first (outside even at a coarse tolerance): a scaling by
    1.05 barely moves a law that a scaling by 2 visibly does. Within each of these
    classes, real elements alternate between negative and positive determinants (negative
    first): three draws from O(n) all lie in SO(n) one time in eight, and a test that sees
    only those cannot tell a law on SO(n) from one on O(n)."""
    element = Element(jnp.asarray(sampled.matrix), jnp.asarray(sampled.shift))
    identity = np.asarray(Trivial(element.matrix.shape[-1]).contains(element, atol=0.0))
    inside = near = np.zeros_like(identity)
    if avoid is not None:
        try:
            inside = np.asarray(avoid.contains(element))
            near = np.asarray(avoid.contains(element, atol=COARSE_ATOL))
        except NotImplementedError:  # membership not decidable (e.g. a product)
            pass
    rank = np.where(identity, 3, np.where(inside, 2, np.where(near, 1, 0)))
    matrix = np.asarray(sampled.matrix)
    if np.iscomplexobj(matrix) or matrix.shape[-1] == 0:
        return np.argsort(rank, kind="stable")
    positive = np.linalg.det(matrix.astype(np.float64)) > 0
    turn = np.zeros(rank.shape, np.int64)  # the element's place among its rank and sign
    for r in np.unique(rank):
        for side in (False, True):
            members = (rank == r) & (positive == side)
            turn[members] = np.arange(np.count_nonzero(members))
    return np.lexsort((positive, turn, rank))


AMPLIFY_BOUND = 1e6
"""Largest stretch (σ_max, or 1/σ_min, of the homogeneous matrix) of an amplified
element: far enough that a constant of 10⁻⁷ inside a map (CoLU's ε) matters at the
probe inputs, and far from float32's overflow and underflow."""
AMPLIFY_MAX_POWER = 64


def _stretch(m: np.ndarray, t: np.ndarray) -> float:
    """log of how far x ↦ mx + t stretches or shrinks: the largest |log σ| of the
    homogeneous matrix [[m, t], [0, 1]] (float64)."""
    d = m.shape[-1]
    h = np.eye(d + 1, dtype=np.result_type(m, np.float64))
    h[:d, :d], h[:d, d] = m, t
    sv = np.linalg.svd(h, compute_uv=False)
    return float(np.max(np.abs(np.log(np.clip(sv, 1e-300, None)))))


def _then(a: tuple, b: tuple) -> tuple:
    """The composition a∘b of affine maps (matrix, shift)."""
    return a[0] @ b[0], a[0] @ b[1] + a[1]


def _power(m: np.ndarray, t: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k-th power (k ≠ 0, possibly negative) of x ↦ mx + t, in float64."""
    wide = np.result_type(m, np.float64)
    g = (m.astype(wide), t.astype(wide))
    if k < 0:
        inv = np.linalg.inv(g[0])
        g, k = (inv, -inv @ g[1]), -k
    p = g
    for _ in range(k - 1):
        p = _then(g, p)
    return p


def _amplified_power(sampled: Host, image: Host, i: int, avoid: AbstractGroup) -> int:
    """The largest power k ≤ AMPLIFY_MAX_POWER of row i (on both sides) whose stretch
    grows with k and stays within AMPLIFY_BOUND, provided the power is still outside the
    declared group `avoid` at a coarse tolerance; 1 when no power is (an isometry, a
    finite group)."""
    limit = np.log(AMPLIFY_BOUND)
    gs = [_power(e.matrix[i], e.shift[i], 1) for e in (sampled, image)]
    base = max(_stretch(*g) for g in gs)
    if base < 0.05:  # (nearly) an isometry: its powers do not move the law further
        return 1
    best, powers = 1, gs
    for k in range(2, AMPLIFY_MAX_POWER + 1):
        powers = [_then(g, p) for g, p in zip(gs, powers)]
        stretch = max(_stretch(*p) for p in powers)
        if stretch > limit or stretch <= base:
            break
        best, base = k, stretch
    if best > 1:
        pm, pt = _power(sampled.matrix[i], sampled.shift[i], best)
        element = Element(jnp.asarray(pm[None], sampled.matrix.dtype),
                          jnp.asarray(pt[None], sampled.shift.dtype))
        try:
            if bool(np.asarray(avoid.contains(element, atol=COARSE_ATOL))[0]):
                return 1
        except NotImplementedError:  # membership not decidable (e.g. a product)
            pass
    return best


def _amplify(sampled: Host, image: Host, avoid: AbstractGroup) -> tuple[Host, Host]:
    """Replace the last rows of a maximality probe by large powers g^k and g^-k of its
    last element g (the last two rows when there are three or more, else the last row by
    g^k), so that a supergroup that moves the law only slightly at the drawn elements
    (a scaling by 2 of a network that normalises its hidden units) is also probed far
    from the declared group, at both ends: a larger scale saturates a tanh, a smaller
    one reaches a normaliser's or CoLU's ε. Powers stay in the supergroup; their
    stretch is kept within AMPLIFY_BOUND."""
    num = sampled.matrix.shape[0]
    if num < 2:
        return sampled, image
    k = _amplified_power(sampled, image, num - 1, avoid)
    if k == 1:
        return sampled, image
    rows = ([(num - 2, k), (num - 1, -k)] if num >= 3 else [(num - 1, k)])
    out = []
    for e in (sampled, image):
        m, t = e.matrix.copy(), e.shift.copy()
        g = (e.matrix[num - 1], e.shift[num - 1])
        for row, power in rows:
            pm, pt = _power(*g, power)
            m[row], t[row] = pm.astype(m.dtype), pt.astype(t.dtype)
        out.append(Host(m, t))
    return out[0], out[1]


def elements(ctx: Context, plan: Plan, seed: int, num: int, informative: bool = False,
             amplify: bool = False) -> tuple[Host, Host]:
    """(elements acting on inputs, elements acting on outputs) for `num` rows, as host
    arrays; the side a flavour does not act on gets identities, so every flavour of a
    primitive shares one compiled program. The group is always sampled `batch` at a time
    (one compiled sampler per group); with `informative`, the draws of the batch that
    are neither the identity nor in `plan.avoid` are used first (for tests that see only
    a few elements); with `amplify` (a maximality probe in law), the last rows are
    replaced by large powers of the last element (`_amplify`)."""
    key = jax.random.key(seed)
    sampled, image = jax.device_get(
        E.sample_elements(plan.sample, plan.out, key, max(num, ctx.batch), ctx.real))
    rows = _informative_first(sampled, plan.avoid)[:num] if informative else slice(num)
    sampled, image = (Host(np.asarray(e.matrix)[rows], np.asarray(e.shift)[rows])
                      for e in (sampled, image))
    if amplify and plan.avoid is not None:
        sampled, image = _amplify(sampled, image, plan.avoid)
    if plan.flavour is Flavour.LEFT:
        ein, eout = _identity(plan.d_in, num, ctx.real), image
    elif plan.flavour is Flavour.RIGHT:
        ein, eout = sampled, _identity(plan.d_out, num, ctx.real)
    else:
        ein, eout = sampled, image
    return _as_dtype(ein, ctx.dtype, "input"), _as_dtype(eout, _out_dtype(ctx), "output")


def closure_cells(ctx: Context, plan: Plan) -> tuple:
    """The declared closure cells `(flavour, bound group)`, all checked by one program."""
    if "closure_cells" not in ctx.cache:
        cells = []
        for gen, fl, cell in ctx.declared or ():
            if gen is Generation.CLOSURE and not cell.trivial:
                try:
                    other = make_plan(ctx, fl, cell.group, cell.out, _acted(ctx, cell))
                except NotApplicable:
                    continue
                cells.append((fl.value, other.sample))
        ctx.cache["closure_cells"] = tuple(cells)
    mine = (plan.flavour.value, plan.sample)
    if mine not in ctx.cache["closure_cells"]:
        ctx.cache["closure_cells"] += (mine,)
    return ctx.cache["closure_cells"]


class Rows(NamedTuple):
    """One evaluated batch (host arrays): the per-row results of the relation, the
    elements acting on inputs and on outputs, the inputs, the perturbation directions
    and which function was checked."""

    res: dict
    ein: Host
    eout: Host
    xs: tuple
    dirs: tuple
    member: int
    label: str
    left: bool

    @property
    def shown(self) -> Host:
        """The elements a counterexample shows: those acting on the output for L, on the
        inputs otherwise."""
        return self.eout if self.left else self.ein


def evaluate_rows(ctx: Context, mode: str, plan: Plan, member: int, ein: Host, eout: Host,
                  xs: tuple, dirs: tuple) -> Rows:
    """Evaluate the relation of `plan` on `batch` given rows, with one compiled program
    per primitive and mode (shapes are fixed)."""
    label, prim, _ = ctx.members[member]
    common = (ctx.rho, ctx.rtol, ctx.atol)
    b = ctx.batch
    if mode == "algebraic":
        code = np.full((b,), E.CODES[plan.flavour], np.int32)
        res = E.relation_rows(prim, plan.acted, plan.act_out, code, _dev(ein), _dev(eout),
                              xs, dirs, *common, hooks=registered_hooks())
    else:
        cells = closure_cells(ctx, plan)
        code = np.full((b,), cells.index((plan.flavour.value, plan.sample)), np.int32)
        einv = _inverse(eout) if plan.act_out else eout
        res = E.closure_rows(prim, cells, plan.acted, plan.act_out, code, _dev(ein),
                             _dev(eout), _dev(einv), xs, dirs, *common,
                             hooks=registered_hooks())
    return Rows(jax.device_get(res), ein, eout, xs, dirs, member, label,
                plan.flavour is Flavour.LEFT)


def run_rows(ctx: Context, mode: str, plan: Plan, member: int, x0: tuple, seed: int
             ) -> Rows:
    """One batch: `batch // 2` rows pair `x0` with fresh elements, the rest pair random
    inputs with fresh elements. Returns host arrays."""
    b = ctx.batch
    half = b // 2
    ein, eout = elements(ctx, plan, _seed(ctx, mode, plan.flavour.value, plan.sample.name,
                                          seed), b)
    rng = np.random.default_rng([ctx.seed, seed])
    xr = E.random_inputs(rng, ctx.shapes, b - half, ctx.dtype)
    dirs = E.random_directions(rng, ctx.shapes, b, ctx.dtype)
    xs = tuple(np.concatenate([np.broadcast_to(np.asarray(x, ctx.dtype), (half, *s)), r])
               for x, s, r in zip(x0, ctx.shapes, xr))
    return evaluate_rows(ctx, mode, plan, member, ein, eout, xs, dirs)


def _row(tree, i: int, num: int):
    """Row `i` of every (host) array of `tree`, repeated `num` times."""
    return jax.tree.map(lambda a: np.repeat(np.asarray(a)[i:i + 1], num, axis=0), tree)


def _flatten_row(xs: tuple) -> tuple[np.ndarray, list]:
    """One row's arguments as a single float64 vector of real components, and how to
    rebuild them."""
    parts, layout = [], []
    for x in xs:
        x = np.ascontiguousarray(x)
        comp = np.stack([x.real, x.imag], -1) if np.iscomplexobj(x) else x
        parts.append(np.asarray(comp, np.float64).ravel())
        layout.append((x.shape, x.dtype, comp.size))
    return np.concatenate(parts), layout


def _unflatten_row(v: np.ndarray, layout: list) -> tuple:
    out, at = [], 0
    for shape, dtype, size in layout:
        comp = v[at:at + size]
        at += size
        if np.issubdtype(dtype, np.complexfloating):
            comp = comp.reshape(shape + (2,))
            comp = comp[..., 0] + 1j * comp[..., 1]
        out.append(np.asarray(comp, dtype).reshape(shape))
    return tuple(out)


def _simpler(v: np.ndarray) -> list[np.ndarray]:
    """Candidate simplifications of a flat input, most simplifying first: everything 0;
    blocks of its non-zero components set to 0 (halves, quarters, ..., single ones);
    components rounded to integers (all, then one at a time); integers of magnitude > 1
    replaced by their sign (all, then one at a time). Each strictly decreases (non-zeros,
    non-integers, Σ|integers|) lexicographically, so repeated acceptance terminates."""
    out = []

    def add(c):
        if not np.array_equal(c, v):
            out.append(c)

    nz = np.flatnonzero(v)
    if nz.size:
        add(np.zeros_like(v))
    k = 2
    while nz.size and k <= 2 * nz.size:
        for block in np.array_split(nz, min(k, nz.size)):
            c = v.copy()
            c[block] = 0
            add(c)
        if k >= nz.size:
            break
        k *= 2
    finite = np.isfinite(v)
    frac = np.flatnonzero(finite & (v != np.round(v)))
    big = np.flatnonzero(finite & (v == np.round(v)) & (np.abs(v) > 1))
    for idx, op in ((frac, np.round), (big, np.sign)):
        if idx.size > 1:
            c = v.copy()
            c[idx] = op(v[idx])
            add(c)
        for i in idx:
            c = v.copy()
            c[i] = op(v[i])
            add(c)
    return out


SHRINK_CALLS = 48  # batches evaluated at most while shrinking one counterexample


def shrink_row(ctx: Context, mode: str, plan: Plan, rows: Rows, i: int) -> tuple[Rows, int]:
    """Shrink the input of a violated row (one of the random rows, which Hypothesis does not
    draw) with its group element fixed: greedily accept the first candidate of `_simpler`
    that still violates the relation (persistently), evaluating `batch` candidates per
    compiled call, until none does or `SHRINK_CALLS` calls are spent. Returns the batch
    holding the smallest violated row found, and its index there."""
    b = ctx.batch
    ein, eout, dirs = _row(rows.ein, i, b), _row(rows.eout, i, b), _row(rows.dirs, i, b)
    best, at = rows, i
    v, layout = _flatten_row(tuple(np.asarray(x)[i] for x in rows.xs))
    candidates, offset = _simpler(v), 0
    for _ in range(SHRINK_CALLS):
        chunk = candidates[offset:offset + b]
        if not chunk:
            break
        rows_x = [_unflatten_row(c, layout) for c in chunk]
        rows_x += [rows_x[-1]] * (b - len(chunk))  # fixed batch shape: pad
        xs = tuple(np.stack([r[a] for r in rows_x]) for a in range(len(layout)))
        out = evaluate_rows(ctx, mode, plan, rows.member, ein, eout, xs, dirs)
        bad = np.flatnonzero(out.res["violated"][:len(chunk)])
        if bad.size:
            best, at = out, int(bad[0])
            v = chunk[at]
            candidates, offset = _simpler(v), 0
        else:
            offset += b
    return best, at


def _counterexample(rows: Rows, i: int, plan: Plan) -> Counterexample:
    res, element = rows.res, rows.shown
    scale = res.get("scale_out" if rows.left else "scale_in")
    shift = np.asarray(element.shift[i])
    if scale is not None:  # the translation applied: scaled to the input's magnitude
        shift = shift * np.asarray(scale[i], shift.dtype)
    return Counterexample(
        group=plan.sample.name, matrix=np.asarray(element.matrix[i]), shift=shift,
        inputs=tuple(np.asarray(x[i]) for x in rows.xs),
        lhs=jax.tree.map(lambda a: np.asarray(a[i]), res["lhs"]),
        rhs=jax.tree.map(lambda a: np.asarray(a[i]), res["rhs"]),
        error=float(res["err"][i]), tolerance=float(res["tol"][i]), member=rows.label)


@dataclasses.dataclass
class RowStats:
    checks: int = 0
    max_ratio: float = -1.0
    max_error: float = 0.0
    tolerance: float = float("nan")
    artefacts: int = 0
    nonfinite: int = 0

    def update(self, res) -> None:
        self.nonfinite += int(np.sum(res["nonfinite"] & ~res["violated"]))
        ratio = np.asarray(res["err"]) / np.asarray(res["tol"])
        ratio = np.where(res["violated"] | np.isfinite(ratio), ratio, 0)
        self.checks += len(ratio)
        self.artefacts += int(np.sum(res["artefact"]))
        clean = np.where(res["violated"] | res["artefact"], -1, ratio)
        i = int(np.argmax(clean))
        if clean[i] > self.max_ratio:
            self.max_ratio = float(clean[i])
            self.max_error = float(res["err"][i])
            self.tolerance = float(res["tol"][i])


def _drive(strategy, body, examples: int, seed: int, shrink: bool) -> None:
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hseed

    phases = [Phase.explicit, Phase.generate] + ([Phase.shrink] if shrink else [])

    @hseed(seed)
    @settings(max_examples=examples, database=None, deadline=None, derandomize=False,
              phases=phases, report_multiple_bugs=False, verbosity=Verbosity.quiet,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(strategy)
    def run(args):
        body(args)

    run()


FOLLOW_UP = 8  # examples evaluated after a random row fails, for a drawn input to fail


def verify_rows(ctx: Context, mode: str, flavour: Flavour, plan: Plan, result: CellResult,
                relation: str) -> None:
    """Search (with Hypothesis, shrinking on failure) for a violation of a declared
    algebraic or closure cell; raise `SymmetryViolation` with the minimal example.

    Hypothesis draws (and shrinks) the input of the first half of each batch; the other
    half are random rows for power. An example fails only when a drawn row does, so that
    shrinking simplifies the drawn input rather than keeping any input whose random rows
    fail. A violated random row is kept: the search goes on for `FOLLOW_UP` examples in
    case a drawn input fails too, and otherwise that row is reported, its input shrunk
    with its element fixed (`shrink_row`)."""
    import hypothesis.strategies as st

    from .strategies import argument_inputs, seeds

    stats = RowStats()
    members = len(ctx.members) if mode == "closure" or not ctx.parameter_free else 1
    strategy = st.tuples(argument_inputs(ctx.shapes, ctx.dtype), seeds(),
                         st.integers(0, members - 1))
    half = ctx.batch // 2
    state = dict(random=None, after=0, drawn=False, missing=None)

    def body(args):
        x0, seed, m = args
        if state["missing"] is not None:
            return
        if state["random"] is not None and not state["drawn"]:
            if state["after"] >= FOLLOW_UP:
                return  # the cell fails already; stop spending batches on it
            state["after"] += 1
        try:
            rows = run_rows(ctx, mode, plan, m, x0, seed)
        except NotImplementedError as err:  # a missing hook: not a failing example
            state["missing"] = err
            return
        stats.update(rows.res)
        bad = np.flatnonzero(rows.res["violated"])
        drawn = bad[bad < half]
        if drawn.size:
            state["drawn"] = True
            _raise(ctx, result, relation, plan, rows, int(drawn[0]))
        if bad.size and state["random"] is None:
            state["random"] = (rows, int(bad[0]))

    try:
        _drive(strategy, body, ctx.examples, ctx.seed, shrink=True)
        if state["missing"] is not None:
            raise state["missing"]
        if state["random"] is not None:
            rows, i = shrink_row(ctx, mode, plan, *state["random"])
            _raise(ctx, result, relation, plan, rows, i)
    finally:
        result.checks, result.max_error = stats.checks, stats.max_error
        result.tolerance, result.artefacts = stats.tolerance, stats.artefacts
        if result.counterexample is not None:
            result.max_error = result.counterexample.error
            result.tolerance = result.counterexample.tolerance
        if stats.nonfinite:
            result.note = (f"{stats.nonfinite} rows non-finite on both sides (overflow "
                           "at extreme inputs), counted as agreeing")


def _raise(ctx: Context, result: CellResult, relation: str, plan: Plan, rows: Rows,
           i: int):
    ce = _counterexample(rows, i, plan)
    result.counterexample = ce
    raise SymmetryViolation(violation_message(ctx.name, result, ce, relation), result, ce)


def search_rows(ctx: Context, mode: str, flavour: Flavour, plan: Plan,
                use_members: bool) -> Counterexample | None:
    """Look for a persistent violation (a maximality counterexample) with generic random
    inputs; stop at the first one. Every other example is scaled log-uniformly between
    the tiny and the huge norms of the edge cases (1e-30 and 1e30 where the dtype allows),
    the range the declared cells are checked over: a map whose larger symmetry breaks
    only far from unit scale (a clip at a large bound, an ε that matters only for tiny
    inputs) is refuted there."""
    rng = np.random.default_rng(ctx.seed)
    members = len(ctx.members) if use_members else 1
    tiny, huge = _edge_norms(ctx.real)
    for e in range(max(ctx.examples, 1)):
        x0 = tuple(rng.standard_normal(s) for s in ctx.shapes)
        if jnp.issubdtype(ctx.dtype, jnp.complexfloating):
            x0 = tuple(x + 1j * rng.standard_normal(x.shape) for x in x0)
        if e % 2:
            scale = np.exp(rng.uniform(np.log(tiny), np.log(huge)))
            x0 = tuple(x * scale for x in x0)
        for m in range(members):
            rows = run_rows(ctx, mode, plan, m, x0, e)
            bad = np.flatnonzero(rows.res["violated"])
            if bad.size:
                return _counterexample(rows, int(bad[0]), plan)
    return None


# ============================================================================ probabilistic
def _probe_inputs(ctx: Context) -> tuple:
    """Four fixed inputs with unit-variance coordinates, larger and smaller, so
    non-linearities are probed in their saturated and their near-linear range: an axis
    2√n·ê₀, a Gaussian z, 3·Gaussian + ½ and z / 4, on the ray of the second input, so
    that the pair probe of these two sees how f bends along a ray (host-side)."""
    rng = np.random.default_rng(7)
    cplx = jnp.issubdtype(ctx.dtype, jnp.complexfloating)

    def gaussian(s):
        return rng.standard_normal(s) + (1j * rng.standard_normal(s) if cplx else 0)

    axis = []
    for s in ctx.shapes:
        e = np.zeros(s)
        e[..., 0] = 2 * np.sqrt(s[-1] if s else 1)
        axis.append(e)
    z = [gaussian(s) for s in ctx.shapes]
    offset = [3 * gaussian(s) + 0.5 for s in ctx.shapes]
    small = [x / 4 for x in z]
    return tuple(tuple(np.asarray(x, ctx.dtype) for x in xs)
                 for xs in (axis, z, offset, small))


def _orientation_inputs(ctx: Context) -> tuple:
    """ORIENTATION_INPUTS fixed Gaussian inputs per argument, stacked on a leading axis:
    those of the orientation probe (host-side)."""
    rng = np.random.default_rng(8)
    cplx = jnp.issubdtype(ctx.dtype, jnp.complexfloating)
    out = []
    for s in ctx.shapes:
        shape = (ORIENTATION_INPUTS, *s)
        x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if cplx else 0)
        out.append(np.asarray(x, ctx.dtype))
    return tuple(out)


def two_sample(ctx: Context, kind: str, flavour: Flavour, plan: Plan, salt: str):
    """Probe values of `samples` random functions as drawn and as transformed by each of
    `test_elements` fixed group elements; Kolmogorov–Smirnov test of each probe
    (Bonferroni). One compiled program per primitive and kind."""
    g = ctx.test_elements
    seed = _seed(ctx, "probabilistic", kind, flavour.value, plan.sample.name, salt)
    ein, eout = elements(ctx, plan, seed, g, informative=True, amplify=True)
    einv = _inverse(eout) if plan.act_out else eout
    ident_in = _identity(plan.d_in, 1, ein.matrix.dtype)
    ident_out = _identity(plan.d_out, 1, eout.matrix.dtype)
    ein, eout, einv = _cat(ident_in, ein), _cat(ident_out, eout), _cat(ident_out, einv)
    code = np.asarray([E.IDENTITY_CODE] + [E.CODES[flavour]] * g, np.int32)
    keys = E.key_grid(ctx.seed, (g + 1, ctx.samples))
    batch_shape = (ctx.data_batch, *ctx.shapes[0])
    try:
        vals = E.probe_samples(ctx.prim, kind, plan.acted, plan.act_out, batch_shape, code,
                               _dev(ein), _dev(eout), _dev(einv), keys, _probe_inputs(ctx),
                               _orientation_inputs(ctx), hooks=registered_hooks())
    except jax.errors.ConcretizationTypeError as err:
        hook = {"initialisation": "reinitialise", "time": "random_call",
                "data": "data_call"}[kind]
        raise TypeError(
            f"{ctx.name}: the `{hook}` hook must be traceable (it runs under jax.jit and "
            f"jax.vmap over PRNG keys), but it converts a traced value to a Python value; "
            f"validate hyperparameters with Python, not jax.numpy. ({err})") from None
    vals = np.asarray(jax.device_get(vals), np.float64)
    return two_sample_test(vals[0], vals[1:], ctx.alpha, np.random.default_rng(ctx.seed))


def _probabilistic_counterexample(plan: Plan, outcome) -> Counterexample:
    return Counterexample(group=plan.sample.name, statistic=outcome.statistic,
                          p_value=outcome.p_value, threshold=outcome.threshold,
                          probe=outcome.probe)


# ============================================================================ cells
def _supergroups(ctx: Context, plan: Plan) -> list[tuple[AbstractGroup, tuple]]:
    """The immediate supergroups of the declared group, each with the supergroups it
    stands for: one that equals the declared group in this dimension (e.g. D₁ = S₁, SO(1)
    = I) is not a test of maximality, so its own immediate supergroups are tested in its
    place (recursively)."""
    out, seen = [], set()
    frontier = [(sup, ()) for sup in immediate_supergroups(plan.sample)
                + shift_extensions(plan.sample)]
    while frontier:
        sup, via = frontier.pop(0)
        if sup in seen:
            continue
        seen.add(sup)
        if _coincides(ctx, plan.sample, sup):
            frontier += [(s, via + (sup.name,)) for s in immediate_supergroups(sup)]
        else:
            out.append((sup, via))
    # A supergroup holding another one that is tested adds no test: a counterexample in
    # the smaller group is one in the larger (only scalar groups are tested on maps
    # between different representations, see `_falsify`).
    kept = least([s for s, _ in out],
                 among=[s for s, _ in out if plan.out is None or isinstance(s, SCALAR_GROUPS)])
    return [(s, via) for s, via in out if any(s is k for k in kept)]


def _reduces_to_algebraic(ctx: Context, generation: Generation, kind: str) -> bool:
    """Parameter-free primitives: the class is {f} and P is a point mass at f, so the
    closure and (initialisation-like) probabilistic relations are the algebraic one. For
    closure, the class is {f} when there is nothing `transport` moves (no inexact-array
    parameters, and a hook that returns the primitive itself, e.g. a chain of
    parameter-free parts); hidden randomness or data statistics that the hook moves
    (dropout, input mean normalisation) make a larger class."""
    if generation is Generation.CLOSURE:
        return ctx.single_member
    if generation is Generation.PROBABILISTIC:
        return ctx.parameter_free and kind == "initialisation"
    return True


def _mode(ctx, generation, kind) -> str:
    if _reduces_to_algebraic(ctx, generation, kind):
        return "algebraic"
    return "closure" if generation is Generation.CLOSURE else "probabilistic"


def _verify(ctx: Context, mode: str, kind: str, flavour: Flavour, plan: Plan,
            result: CellResult) -> None:
    """Verify a declared (non-trivial) cell, filling `result`; raises on a violation."""
    cache_key = ("verify", mode, kind, flavour, plan)
    if cache_key in ctx.cache:
        cached = ctx.cache[cache_key]
        for f in ("checks", "max_error", "tolerance", "artefacts", "p_value"):
            setattr(result, f, getattr(cached, f))
        result.note = "same relation as the algebraic cell" if mode == "algebraic" else ""
        if cached.counterexample is not None:
            result.counterexample = cached.counterexample
            raise SymmetryViolation("cached failure", result, cached.counterexample)
        return
    try:
        _run_verify(ctx, mode, kind, flavour, plan, result)
    except SymmetryViolation:
        ctx.cache[cache_key] = dataclasses.replace(result)
        raise
    ctx.cache[cache_key] = dataclasses.replace(result)


def _run_verify(ctx: Context, mode: str, kind: str, flavour: Flavour, plan: Plan,
                result: CellResult) -> None:
    """Run the check of a declared cell (uncached); raises on a violation."""
    if mode == "probabilistic":
        outcome = two_sample(ctx, kind, flavour, plan, "declared")
        result.checks = outcome.samples
        result.p_value = outcome.p_value
        if outcome.rejected:
            ce = _probabilistic_counterexample(plan, outcome)
            result.counterexample = ce
            raise SymmetryViolation(
                violation_message(ctx.name, result, ce, PROBABILISTIC_RELATIONS[flavour]
                                  + f" rejected at false-positive rate {ctx.alpha:g}"),
                result, ce)
    else:
        relation = (CLOSURE_RELATIONS if mode == "closure" else RELATIONS)[flavour]
        verify_rows(ctx, mode, flavour, plan, result, relation)


def _maximal(ctx: Context, mode: str, kind: str, flavour: Flavour, plan: Plan
             ) -> list[MaximalityResult]:
    out = []
    for sup, via in _supergroups(ctx, plan):
        cache_key = ("maximal", mode, kind, flavour, plan.acted, sup)
        if cache_key not in ctx.cache:
            ctx.cache[cache_key] = _falsify(ctx, mode, kind, flavour, plan, sup)
        m = ctx.cache[cache_key]
        if via:
            m = dataclasses.replace(m, note=(m.note + "; " if m.note else "") + (
                f"in place of {', '.join(via)}, equal to {plan.sample.name} in this "
                "dimension"))
        out.append(m)
    return out


COINCIDENCE_PROBES = 32


def _coincides(ctx: Context, group: AbstractGroup, sup: AbstractGroup) -> bool:
    """Whether the supergroup `sup` equals `group` in this dimension (e.g. SO(1) = S₁ = I,
    D₁ = S₁): each of at least COINCIDENCE_PROBES random elements of `sup` lies in
    `group`. A proper supergroup puts a random element outside with probability one
    (continuous) or at least ½ per draw (finite index ≥ 2), so a false "equals" has
    probability ≤ 2⁻³². Uses the checker's compiled sampler for `sup`. Groups whose
    membership is not decidable (products) are taken as proper supergroups."""
    cache_key = ("coincides", group, sup)
    if cache_key not in ctx.cache:
        key = jax.random.key(_seed(ctx, "coincides", group.name, sup.name))
        probes, _ = E.sample_elements(sup, None, key, max(COINCIDENCE_PROBES, ctx.batch),
                                      ctx.real)
        try:
            inside = np.asarray(group.contains(probes, atol=1e-4))
        except NotImplementedError:  # membership not decidable (e.g. a product): proper
            inside = np.zeros((), bool)
        ctx.cache[cache_key] = bool(np.all(inside))
    return ctx.cache[cache_key]


def _falsify(ctx, mode, kind, flavour, plan, sup) -> MaximalityResult:
    out = None
    if plan.out is not None:
        if not _scalar_pair(plan):
            return MaximalityResult(sup.name, None, note="mismatched representations have "
                                    "no supergroup pairing in the hierarchy")
        if not isinstance(sup, SCALAR_GROUPS):
            return MaximalityResult(sup.name, None, note=(
                f"not scalar: acts on dimension {plan.d_in} but not on the output's "
                f"{plan.d_out}"))
        out = sup.on(plan.d_out)  # scalars act on both dimensions: aI ↦ aI
    sub = dataclasses.replace(plan, sample=sup, out=out, avoid=plan.sample)
    if mode == "closure":
        if ctx.fit_closure:
            return _closure_witness(ctx, flavour, sub)
        return MaximalityResult(sup.name, None, note="closure of a parameterised class under "
                                "a larger group cannot be refuted numerically")
    if mode == "probabilistic":
        outcome = two_sample(ctx, kind, flavour, sub, "maximality")
        ce = _probabilistic_counterexample(sub, outcome) if outcome.rejected else None
        return MaximalityResult(sup.name, outcome.rejected, ce, group_family=sup)
    ce = search_rows(ctx, "algebraic", flavour, sub, use_members=True)
    return MaximalityResult(sup.name, ce is not None, ce, group_family=sup)


def _scalar_pair(plan: Plan) -> bool:
    """Whether the plan pairs a scalar group with itself on the output (a map between
    different dimensions, $f(ax) = af(x)$), whose scalar supergroups pair the same way."""
    return (isinstance(plan.sample, SCALAR_GROUPS) and plan.out is not None
            and same_group(plan.sample, plan.out))


FIT_ELEMENTS = 2


def _closure_witness(ctx: Context, flavour: Flavour, sub: Plan) -> MaximalityResult:
    """Closure maximality by witness search (`fit_closure=True`): for a few elements g of
    the supergroup `sub.sample` outside the declared group `sub.avoid`, fit parameters θ'
    with f_{θ'} equal to the moved function (see `_fit`). A fit to rounding level for
    every g is a witness that the class is closed under the supergroup too (found =
    False: not maximal); the fits use the generic members (perturbed parameters), element
    i with member i; otherwise nothing is refuted or confirmed (found = None)."""
    sup = sub.sample
    leaves = jax.tree.leaves(eqx.filter(ctx.prim, eqx.is_inexact_array))
    if not leaves:
        return MaximalityResult(sup.name, None, note="no floating-point parameters to fit")
    if any(jnp.issubdtype(leaf.dtype, jnp.complexfloating) for leaf in leaves):
        return MaximalityResult(sup.name, None, note="no witness search for complex "
                                "parameters")
    ein, eout = elements(ctx, sub, _seed(ctx, "fit", flavour.value, sup.name), FIT_ELEMENTS,
                         informative=True)
    if flavour is Flavour.EQUIVARIANT and sub.act_out:
        eout = _inverse(eout)
    # generic members (perturbed parameters): the relation must hold for every f in the
    # class, and a member at its initialisation can be special (γ = 1 commutes with all)
    members = [prim for _, prim, _ in ctx.members[1:]] or [ctx.prim]
    res = fit_residuals(members, flavour, sub.act_out, sub.acted, ein, eout,
                        _seed(ctx, "fit-inputs"), ctx.shapes, ctx.dtype)
    worst, tol = float(np.max(res)), ctx.rho
    if worst <= tol:
        return MaximalityResult(sup.name, False, group_family=sup, note=(
            f"witness: parameters θ' with f_θ' equal to the moved f_θ (relative residual "
            f"{worst:.2g} ≤ {tol:.2g} on fresh inputs) for {len(res)} elements of "
            f"{sup.name} outside the declared group"))
    return MaximalityResult(sup.name, None, searched=True, note=(
        f"no witness: the best fit leaves a relative residual {worst:.2g} > {tol:.2g}; a "
        "closure under a larger group cannot be refuted numerically"))


def _undeclarable(m: MaximalityResult, closure: Cell) -> MaximalityResult:
    """A probabilistic symmetry that holds but exceeds the declared closure cell cannot be
    declared (the consistency law algebraic ⊆ probabilistic ⊆ closure, eq 30), so it does
    not make the declaration non-maximal. It happens when P is not of full support, e.g. a
    point mass at γ = 1: the law is rotation-invariant while the class is not closed under
    rotations. It is reported, not failed."""
    if m.found is not False or m.group_family is None:
        return m
    if is_subgroup(m.group_family, closure.group):
        return m
    return dataclasses.replace(m, declarable=False, note=(
        f"is not declarable: the declared closure cell {closure.name}, which bounds this "
        "cell (algebraic ⊆ probabilistic ⊆ closure), does not contain it"))


def _flag_bounding_closure(report: Report) -> None:
    """Say so on a probabilistic cell's undeclarable supergroup when the closure cell
    bounding it is itself reported as possibly not maximal: widening the closure
    declaration may make the supergroup declarable."""
    for cell in report.cells:
        if cell.generation != Generation.PROBABILISTIC.value:
            continue
        try:
            closure = report.cell(Generation.CLOSURE.value, cell.flavour)
        except KeyError:
            continue
        if closure.status != "not maximal":
            continue
        cell.maximality = [
            dataclasses.replace(m, note=m.note + "; that closure cell is itself reported as "
                                "possibly not maximal")
            if m.found is False and not m.declarable else m for m in cell.maximality]


def _has_law(ctx: Context, kind: str) -> bool:
    hook = {"initialisation": reinitialise, "data": data_call, "time": random_call}[kind]
    return hook.dispatch(type(ctx.prim)) is not hook.dispatch(object) or kind == "time"


def _not_checkable(result: CellResult, err: NotImplementedError) -> CellResult:
    """A cell whose check needs a hook the primitive does not register: reported (naming
    the hook), not raised, so that the other cells are still checked."""
    result.status, result.note = NOT_CHECKABLE, str(err)
    result.maximality = []
    return result


def check_cell(ctx: Context, generation: Generation, flavour: Flavour, cell: Cell,
               kind: str, maximality: bool) -> CellResult:
    result = CellResult(generation.value, flavour.value, cell.name,
                        kind if generation is Generation.PROBABILISTIC else "")
    mode = _mode(ctx, generation, kind)
    try:
        plan = make_plan(ctx, flavour, cell.group, cell.out, _acted(ctx, cell))
    except NotApplicable as err:
        if cell.trivial:
            result.status, result.note = "skipped", f"not applicable: {err}"
            return result
        hint = (" (an E cell of a map between different dimensions holds only as its "
                "scalar part: check the primitive with equal input and output dimensions, "
                "or inside a taxdl.nn.Sequential, whose inferred E cell is that part)"
                if isinstance(err, BetweenDimensions) else "")
        raise ValueError(f"{ctx.name}: the {result.label} cell cannot be checked: "
                         f"{str(err).rstrip('.')}{hint}.") from None
    if not cell.trivial:
        try:
            _verify(ctx, mode, kind, flavour, plan, result)
        except SymmetryViolation:
            result.status = "failed"
            return result
        except NotImplementedError as err:  # a hook the primitive does not register
            return _not_checkable(result, err)
    if not maximality:
        return result
    if cell.trivial and mode == "probabilistic" and not _has_law(ctx, kind):
        result.status, result.note = "skipped", (f"no hook gives the {kind}-like law of the "
                                                 "primitive, so there is nothing to refute")
        return result
    if cell.trivial and mode == "closure" and not ctx.fit_closure:
        result.status, result.note = "skipped", (
            "trivial closure cell of a parameterised class: maximality is not refutable "
            "numerically (fit_closure=True searches for witnesses)")
        return result
    try:
        result.maximality = _maximal(ctx, mode, kind, flavour, plan)
    except NotImplementedError as err:
        return _not_checkable(result, err)
    if generation is Generation.PROBABILISTIC and ctx.declared is not None:
        result.maximality = [_undeclarable(m, ctx.declared.cell(Generation.CLOSURE, flavour))
                             for m in result.maximality]
    if any(m.found is False and m.declarable for m in result.maximality):
        result.status = "not maximal"
    elif cell.trivial and not result.maximality:
        result.status, result.note = "skipped", "no supergroup of the trivial group applies"
    return result


# ============================================================================ check
def check(primitive, n: int | None = None, *, dtype=jnp.float32, examples: int = 50,
          batch: int = 32, samples: int = 1024, test_elements: int = 3, alpha: float = 1e-3,
          data_batch: int = 64, key=None, maximality: bool = True,
          raise_on_failure: bool = True, rtol: float | None = None,
          atol: float | None = None, members: int = 2,
          generations=("algebraic", "probabilistic", "closure"),
          fit_closure: bool = False) -> Report:
    """Verify every cell of a primitive's symmetry declaration, and that each declared
    group is maximal (DESIGN §3).

    **Arguments:**

    - `primitive`: an instance, a class (built from its registered example or default
      constructor) or a zero-argument factory. An `AbstractInitialiser` is checked as
      the random linear map $x \\mapsto Wx$, $W$ = `init(key, (n, n))`. A plain function
      carries no taxonomy (`TypeError`): test it one relation at a time with
      [`assert_algebraic`][taxdl.testing.assert_algebraic].
    - `n`: the dimension, for primitives that work in any dimension. A primitive that
      fixes its own input dimension (e.g. `Linear(3, 3)`) is checked in it: leave `n`
      out, or give the same value (a different one is a `ValueError`).
    - `dtype`: `jnp.float32` (default) or `jnp.float64` (64-bit is enabled only inside
      this call); any other dtype is a `TypeError`.
    - `examples`: Hypothesis examples per algebraic/closure cell; each example checks
      `batch` (element, input) rows in one jitted call (half of them pair the
      Hypothesis-drawn input with fresh elements, half use random inputs). Maximality
      searches use at most `examples` batches and stop at the first counterexample.
    - `samples`: random functions per side of a probabilistic two-sample test, against
      `test_elements` fixed group elements; `alpha`: its false-positive rate per cell,
      in the open interval (0, 1) (`ValueError` otherwise).
    - `data_batch`: batch size given to the `data_call` hook for data-like cells.
    - `key`: one PRNG key fixing every random choice (default `jax.random.key(0)`);
      anything else is a `TypeError`.
    - `maximality`: also search for counterexamples under immediate supergroups.
    - `raise_on_failure`: raise [`SymmetryViolation`][taxdl.testing.SymmetryViolation]
      when a cell fails or may not be maximal, with the minimal (shrunk) counterexample
      of the first; when the only failures are cells that cannot be checked because the
      primitive does not register a hook they need, raise `NotImplementedError` naming
      it. Else just return the report (such cells have status `"not checkable"`).
    - `rtol`, `atol`: override the dtype's tolerances.
    - `members`: generic members of a parameterised class (the `perturb` hook) on which
      algebraic and closure claims are also checked.
    - `generations`: which generations to check (default all three; one may be given as
      a string): `"closure"`, `"probabilistic"`, `"algebraic"`. An unknown name or an
      empty selection is a `ValueError`.
    - `fit_closure`: search for witnesses that a closure cell is not maximal: for two
      elements of each immediate supergroup (outside the declared group), fit the class's
      parameters by L-BFGS to the moved function; a fit to rounding level on fresh inputs
      reports the cell as possibly non-maximal. Trivial closure cells of a parameterised
      class are searched too. Off by default (one fit compiles per supergroup); without it,
      closure maximality is reported as not checked, and trivial closure cells of a
      parameterised class are skipped.

    **Returns:** a [`Report`][taxdl.testing.Report] with one
    [`CellResult`][taxdl.testing.CellResult] per checked cell and kind.

    **Semantics:** see the guide `docs/checking.md`: tolerances
    atol + rtol·(max(‖lhs‖, ‖rhs‖) + conditioning), violations must persist under tiny
    input perturbations, probabilistic cells use Kolmogorov–Smirnov tests on scalar
    probes at a fixed seed, and every cell, trivial ones included, must fail under each
    immediate supergroup.
    """
    if not isinstance(examples, int) or examples < 1:
        raise ValueError(f"`examples` must be a positive integer, got {examples!r}.")
    if not isinstance(batch, int) or batch < 2:
        raise ValueError(f"`batch` must be an integer >= 2, got {batch!r}.")
    maximality = check_bool(maximality, "maximality", who="check")
    raise_on_failure = check_bool(raise_on_failure, "raise_on_failure", who="check")
    fit_closure = check_bool(fit_closure, "fit_closure", who="check")
    wanted = _generations(generations)
    wide = check_dtype(dtype) == jnp.float64
    with jax.enable_x64(True) if wide else contextlib.nullcontext():
        ctx, declared = make_context(
            primitive, n, dtype, examples=examples, batch=batch, samples=samples,
            test_elements=test_elements, alpha=alpha, data_batch=data_batch, key=key,
            rtol=rtol, atol=atol, members=members, fit_closure=fit_closure)
        dims = [s[-1] for s in ctx.shapes if s]
        report = Report(ctx.name, jnp.dtype(ctx.dtype).name, n if n is not None else
                        (dims[0] if dims else None))
        for generation, flavour, cell in _algebraic_first(declared):
            if generation not in wanted:
                continue
            kinds = [k.value for k in cell.kinds] if cell.kinds else (
                list(ctx.kinds) if generation is Generation.PROBABILISTIC else [""])
            for kind in kinds:
                report.cells.append(check_cell(ctx, generation, flavour, cell,
                                               kind or "initialisation", maximality))
        _flag_bounding_closure(report)
    if raise_on_failure and not report.passed:
        raise failure(report)
    return report


def _generations(generations) -> set[Generation]:
    """The generations selected by `check`'s `generations` argument."""
    if isinstance(generations, (str, Generation)):   # one generation, not its letters
        generations = (generations,)
    try:
        wanted = {as_generation(g) for g in generations}
    except ValueError as err:
        raise ValueError(f"`generations`: {err}") from None
    except TypeError:
        raise ValueError(f"`generations` must be a generation name or a sequence of them "
                         f"('closure', 'probabilistic', 'algebraic'), got {generations!r}."
                         ) from None
    if not wanted:
        raise ValueError("`generations` selects no generation: give at least one of "
                         "'closure', 'probabilistic', 'algebraic' (default all three).")
    return wanted


def _algebraic_first(declared: Taxonomy):
    """Cells in the order algebraic, probabilistic, closure, so that a relation shared by
    several generations (parameter-free primitives) is attributed to the strongest."""
    order = {Generation.ALGEBRAIC: 0, Generation.PROBABILISTIC: 1, Generation.CLOSURE: 2}
    return sorted(declared, key=lambda t: order[t[0]])


def _has_declaration(obj) -> bool:
    try:
        resolve(obj)
    except TypeError:
        return False
    return True


def _detail(name: str, cell: CellResult) -> str:
    if cell.status == "not maximal":
        return maximality_message(name, cell)
    if cell.status == NOT_CHECKABLE:
        return not_checkable_message(name, cell)
    relation = {"closure": CLOSURE_RELATIONS, "probabilistic": PROBABILISTIC_RELATIONS,
                "algebraic": RELATIONS}[cell.generation][Flavour(cell.flavour)]
    return violation_message(name, cell, cell.counterexample, relation)


def failure_for_cell(name: str, cell: CellResult) -> Exception:
    if cell.status == NOT_CHECKABLE:
        return NotImplementedError(_detail(name, cell))
    return SymmetryViolation(_detail(name, cell), cell, cell.counterexample)


def failure(report: Report) -> Exception:
    """The exception for a failed report: every failing cell, the first in detail. A
    violation (or a declaration that may not be maximal) raises `SymmetryViolation`, and
    the report lists the cells that could not be checked too; when the only failures are
    cells that could not be checked, `NotImplementedError` names the missing hook."""
    found = [c for c in report.failures if c.status != NOT_CHECKABLE]
    if not found:
        first = report.failures[0]
        return NotImplementedError(f"{_detail(report.primitive, first)}\n\n{report}")
    first = found[0]
    return SymmetryViolation(f"{_detail(report.primitive, first)}\n\n{report}", first,
                             first.counterexample, report)
