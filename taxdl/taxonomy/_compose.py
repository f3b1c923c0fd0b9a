"""Composition rules: the taxonomy of a model inferred from the taxonomies of its parts
(DESIGN §4; isotropic paper §5.2, Table 5.2 "Composed" row and the parameter-symmetry
discussion around eq 40).

The rules work on generic parts: anything [`taxonomy`][taxdl.taxonomy.taxonomy] accepts.
Models (`taxdl.nn.Sequential`, `taxdl.nn.Residual`, `taxdl.nn.MLP`) call them; a user's
own container can call them too.

**The chain rules.** For $f = f_2 \\circ f_1$ with independently parameterised parts, every
rule is an identity between compositions of maps, so the same table holds in all three
generations (closure: the composite class is $\\{f_2\\circ f_1\\}$; probabilistic: the
parts' parameters are drawn independently; algebraic: equalities of functions):

| rule | cell of $f$ | holds for $g$ in | because |
|---|---|---|---|
| outer-left | L | $L(f_2)$ | $g∘f_2∘f_1 = (g∘f_2)∘f_1$ |
| commute-left | L | $E(f_2) ∩ L(f_1)$ | $g∘f_2∘f_1 = (g∘f_2∘g^{-1})∘(g∘f_1)$ |
| inner-right | R | $R(f_1)$ | $f_2∘f_1∘g = f_2∘(f_1∘g)$ |
| commute-right | R | $R(f_2) ∩ E(f_1)$ | $f_2∘f_1∘g = (f_2∘g)∘(g^{-1}∘f_1∘g)$ |
| both-equivariant | E | $E(f_2) ∩ E(f_1)$ | $g^{-1}∘f_2∘f_1∘g = (g^{-1}∘f_2∘g)∘(g^{-1}∘f_1∘g)$ |
| sandwich | E | $L(f_2) ∩ R(f_1)$ | $g^{-1}∘f_2∘f_1∘g = (g^{-1}∘f_2)∘(f_1∘g)$ |

An equivariant (E) cell is used only for a part that maps a space to itself
($\\mathbb R^n \\to \\mathbb R^n$); a part or composite between different spaces has a
trivial E cell. A chain is folded from the input side: $((f_1, f_2), f_3), \\dots$, so the
algebraic E cell of a chain of $\\mathbb R^n\\to\\mathbb R^n$ maps is the intersection of
their E cells. Applied to Linear then elementwise ReLU (algebraic E = Sₙ⋉(ℝ×₊)ⁿ) the
rules give the "Composed" row of Table 5.2 with its closure L/E cells enlarged to the
positive monomials (the paper gives Sₙ): closure Sₙ⋉(ℝ×₊)ⁿ / GL / Sₙ⋉(ℝ×₊)ⁿ,
probabilistic Sₙ / O(n) / Sₙ, algebraic trivial.

**Residual rule.** For $f = \\mathrm{id} + h$ with $h:\\mathbb R^n\\to\\mathbb R^n$ the
identity commutes with every linear map, so $f$ keeps the E cells of $h$ restricted to
their linear part (a translation $t$ would leave an extra $M^{-1}t$); L and R are trivial
(isotropic paper §5.2, last paragraphs).

**Intersections and choices.** Group families form a partial order
([`taxdl.groups.is_subgroup`][taxdl.groups.is_subgroup]); $G ∩ H$ is taken as the largest
family of the hierarchy contained in both (the trivial group if none), which is a subgroup
of the true intersection, so every inferred cell is *sound*. When two rules give
incomparable groups both hold; the reported cell is the first rule's group (in the order
of the table, after keeping algebraic ⊆ probabilistic ⊆ closure) and the other is listed
in the declaration's note. The inferred groups can be smaller than the true maximal ones
when parts cancel each other (e.g. a layer followed by its inverse); `taxdl.testing.check`
reports such cases as "may not be maximal".

Probabilistic cells of parts whose claim is data- or time-like are replaced by the part's
algebraic cell (sound, since algebraic ⇒ probabilistic), so a composite's probabilistic
cells are initialisation-like.

**Parameter symmetries.** Split a chain at a hidden space into a prefix $p$ and a suffix
$q$. For every $g$ in $C_L(p) ∩ C_R(q)$ the parameters of $g∘p$ and $q∘g^{-1}$ exist
(closure) and compute the same function $q∘p$. With affine layers around an activation
$a$, the commute rules make this $GL ∩ A_E(a) ∩ GL = A_E(a)$: the orbit of functionally
identical parameters is discrete for Sₙ or Bₙ and continuous for O(n) (isotropic paper
eq 40 and the $(k!)^2$ degeneracy after it). The spaces before and after a parameter-free
part (pre- and post-activation) are one hidden layer and are reported once.
"""

import dataclasses
import functools as ft
import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp

from ..groups import (
    AbstractGroup,
    Affine,
    Diagonal,
    DiagonalAffine,
    Element,
    Euclidean,
    EvenSignedPermutation,
    GeneralLinear,
    Monomial,
    MonomialAffine,
    Orthogonal,
    OrthogonalComplement,
    Permutation,
    Product,
    ScaleShift,
    Scaling,
    ScaleTranslation,
    SignedPermutation,
    SpecialOrthogonal,
    Translation,
    Translations,
    Trivial,
    immediate_supergroups,
    is_subgroup,
    same_group,
)
from ._hooks import Signature, as_function, reinitialise, signature, transport
from ._primitive import AbstractActivation, AbstractLayer
from ._registry import taxonomy
from ._symmetry import FLAVOURS, GENERATIONS, Cell, Flavour, Generation, Kind, Taxonomy

L, R, E = Flavour.LEFT, Flavour.RIGHT, Flavour.EQUIVARIANT
CLOSURE, PROBABILISTIC, ALGEBRAIC = GENERATIONS


class CompositionWarning(UserWarning):
    """A model's parts do not fit: a part's symmetry is lost in the composite (e.g. an
    elementwise activation between layers declared O(n))."""


class Rule(NamedTuple):
    """One chain rule: the composite's `flavour` cell contains the intersection of the
    `terms` (each `("outer" | "inner", flavour)`), in every generation."""

    name: str
    flavour: Flavour
    terms: tuple[tuple[str, Flavour], ...]
    identity: str


RULES: tuple[Rule, ...] = (
    Rule("outer-left", L, (("outer", L),), "g∘f₂∘f₁ = (g∘f₂)∘f₁"),
    Rule("commute-left", L, (("outer", E), ("inner", L)), "g∘f₂∘f₁ = (g∘f₂∘g⁻¹)∘(g∘f₁)"),
    Rule("inner-right", R, (("inner", R),), "f₂∘f₁∘g = f₂∘(f₁∘g)"),
    Rule("commute-right", R, (("outer", R), ("inner", E)), "f₂∘f₁∘g = (f₂∘g)∘(g⁻¹∘f₁∘g)"),
    Rule("both-equivariant", E, (("outer", E), ("inner", E)),
         "g⁻¹∘f₂∘f₁∘g = (g⁻¹∘f₂∘g)∘(g⁻¹∘f₁∘g)"),
    Rule("sandwich", E, (("outer", L), ("inner", R)), "g⁻¹∘f₂∘f₁∘g = (g⁻¹∘f₂)∘(f₁∘g)"),
)

_TRIVIAL = (Trivial(),)


# ----------------------------------------------------------------------- group lattice
@ft.lru_cache(maxsize=None)
def _hierarchy() -> tuple[AbstractGroup, ...]:
    """Every family reachable upwards from the trivial group (unbound)."""
    out: list[AbstractGroup] = []
    frontier = [Trivial()]
    while frontier:
        g = frontier.pop(0)
        if any(same_group(g, h) for h in out):
            continue
        out.append(g)
        frontier.extend(immediate_supergroups(g))
    return tuple(out)


def _has_n_field(g) -> bool:
    return "n" in {f.name for f in dataclasses.fields(g)}


def _unbind(g: AbstractGroup) -> AbstractGroup:
    """The family of `g` (dimension unbound) where that is possible."""
    try:
        if _has_n_field(g) and g.n is not None:
            return dataclasses.replace(g, n=None)
    except (TypeError, ValueError, AttributeError):
        pass
    return g


@ft.lru_cache(maxsize=4096)
def _subgroup(a: AbstractGroup, b: AbstractGroup) -> bool:
    return is_subgroup(a, b)


def _le(a: AbstractGroup, b: AbstractGroup) -> bool:
    try:
        if _subgroup(a, b):
            return True
    except TypeError:  # unhashable group (e.g. with array fields): no cache
        if is_subgroup(a, b):
            return True
    return any(is_subgroup(a, c) for c in known_subgroups(b))


@ft.singledispatch
def known_subgroups(group: AbstractGroup) -> tuple[AbstractGroup, ...]:
    """Subgroups of `group` that the hierarchy's supergroup edges do not reach (used by
    [`meet`][taxdl.taxonomy.meet]). Register more with `known_subgroups.register`.

    Default: none. Positive monomial matrices $S_n \\ltimes (\\mathbb R^\\times_+)^n$ contain the
    permutations and the positive scalings.
    """
    return ()


def _register_known() -> None:
    from .. import groups

    monomial = getattr(groups, "PositiveMonomial", None)
    if monomial is not None:
        known_subgroups.register(monomial)(
            lambda g: (Permutation(), Scaling(positive=True)))


_register_known()


def meet(a: AbstractGroup, b: AbstractGroup) -> AbstractGroup:
    """The largest group family of the hierarchy contained in both `a` and `b`.

    This is a subgroup of the true intersection $a ∩ b$ (equal to it whenever the
    intersection is itself a family of the hierarchy, e.g. Bₙ ∩ O(n−1) = Sₙ); the trivial
    group when the hierarchy has nothing in common below both.
    """
    if _le(a, b):
        return a
    if _le(b, a):
        return b
    cands = [c for c in _hierarchy() if _le(c, a) and _le(c, b)]
    best = _maximal(cands)
    return best[0] if best else Trivial()


def _maximal(groups: Sequence[AbstractGroup]) -> list[AbstractGroup]:
    """The maximal elements (first occurrence kept), duplicates removed."""
    out: list[AbstractGroup] = []
    for g in groups:
        if any(_le(g, h) for h in out):
            continue
        out = [h for h in out if not _le(h, g)] + [g]
    # keep the original order of the survivors
    order = {id(g): i for i, g in enumerate(groups)}
    return sorted(out, key=lambda g: order[id(g)])


def _meet_sets(*sets: Sequence[AbstractGroup]) -> tuple[AbstractGroup, ...]:
    acc: list[AbstractGroup] = list(sets[0])
    for s in sets[1:]:
        acc = [meet(a, b) for a in acc for b in s]
    return tuple(_maximal(acc)) or _TRIVIAL


def _linear_part(g: AbstractGroup) -> AbstractGroup:
    """The largest subgroup of `g` without translations."""
    if isinstance(g, (Translation, Translations)):
        return Trivial()
    if isinstance(g, ScaleShift):
        return Scaling(positive=g.positive)
    if isinstance(g, Euclidean):
        return Orthogonal()
    if isinstance(g, Affine):
        return GeneralLinear()
    if isinstance(g, DiagonalAffine):
        return Diagonal(positive=g.positive)
    if isinstance(g, ScaleTranslation):
        return Scaling(positive=g.positive)
    if isinstance(g, MonomialAffine):
        return Monomial()
    if isinstance(g, Product):
        return Product(*(_linear_part(f) for f in g.factors), n=g.n)
    return g


def _contains_gl(groups: Sequence[AbstractGroup]) -> bool:
    return any(_le(GeneralLinear(), g) for g in groups)


# ----------------------------------------------------------------------- parts
@dataclasses.dataclass(frozen=True)
class Part:
    """What the rules know about one part (or an already composed model).

    - `cells`: for each (generation, flavour), the groups known to hold (an antichain of
      the hierarchy: each is a sound lower bound of the maximal group; usually one).
    - `in_dim`, `out_dim`: dimensions of the input and output space; `None` for a
      dimension-free part, which maps ℝⁿ to ℝⁿ for any n.
    - `name`: for messages.
    - `parameters`: whether the part has parameters (array leaves).
    """

    cells: Any
    in_dim: int | None = None
    out_dim: int | None = None
    name: str = ""
    parameters: bool = True

    @property
    def square(self) -> bool:
        return self.in_dim == self.out_dim or self.in_dim is None or self.out_dim is None

    def get(self, generation: Generation, flavour: Flavour) -> tuple[AbstractGroup, ...]:
        if flavour is E and not self.square:
            return _TRIVIAL
        return self.cells.get((generation, flavour), _TRIVIAL)

    def taxonomy(self) -> Taxonomy:
        """The declaration reported for this part: per flavour, the first group of each
        cell that keeps algebraic ⊆ probabilistic ⊆ closure; other groups that also hold
        are listed in the note."""
        rows = {g: {} for g in GENERATIONS}
        extra = []
        for fl in FLAVOURS:
            below: AbstractGroup = Trivial()
            for gen in (ALGEBRAIC, PROBABILISTIC, CLOSURE):
                # the declaration's consistency law uses the hierarchy alone
                cands = [c for c in self.get(gen, fl) if is_subgroup(below, c)] or [below]
                chosen = cands[0]
                for other in self.get(gen, fl):
                    if other is not chosen and not _le(other, chosen):
                        extra.append(f"{gen.value} {fl.value} also {other.name}")
                rows[gen][fl.value] = Cell(chosen) if gen is not PROBABILISTIC or isinstance(
                    chosen, Trivial) else Cell(chosen, (Kind.INITIALISATION,))
                below = chosen
        note = "inferred by composition rules"
        if self.name:
            note += f" from {self.name}"
        if extra:
            note += "; " + "; ".join(extra)
        return Taxonomy(*(rows[g] for g in GENERATIONS), note=note)


def _cells_of(decl: Taxonomy) -> dict:
    cells = {}
    for fl in FLAVOURS:
        alg = decl.cell(ALGEBRAIC, fl)
        for gen in GENERATIONS:
            c = decl.cell(gen, fl)
            if gen is PROBABILISTIC and c.kinds and set(c.kinds) != {Kind.INITIALISATION}:
                c = alg  # data- or time-like: only the algebraic part composes
            if c.out is not None:  # mismatched representations do not compose here
                c = Cell(Trivial())
            cells[(gen, fl)] = (_unbind(c.group),)
    return cells


def _probe_dtype(tree, field: str):
    """The input dtype to probe a part with: its parameters' floating precision."""
    real = jnp.float32
    for leaf in jax.tree_util.tree_leaves(tree):
        dtype = getattr(leaf, "dtype", None)
        if dtype is not None and jnp.issubdtype(dtype, jnp.inexact):
            real = jnp.finfo(dtype).dtype
            break
    if field == "complex":
        return jnp.complex128 if real == jnp.float64 else jnp.complex64
    return real


def _is_arrayish(x) -> bool:
    return isinstance(x, (jax.Array, jax.ShapeDtypeStruct)) or eqx.is_array(x)


@ft.singledispatch
def part(obj: Any, in_dim: int | None = None) -> Part:
    """What the composition rules know about `obj` given its input dimension.

    Default: the declaration `taxonomy(obj)`; the dimensions from the
    [`signature`][taxdl.taxonomy.signature] hook (a dimension-free primitive keeps the
    dimension) and the output shape of `as_function(obj)`. Models register their own
    (composed) parts.
    """
    decl = taxonomy(obj)
    name = type(obj).__name__
    params = bool(jax.tree_util.tree_leaves(eqx.filter(obj, _is_arrayish)))
    try:
        sig = signature(obj, in_dim)
    except ValueError:
        return Part(_cells_of(decl), None, None, name, params)  # dimension-free
    if len(sig.inputs) != 1 or len(sig.inputs[0]) != 1:
        raise TypeError(
            f"{name} takes inputs of shapes {sig.inputs}; only one-vector maps ℝⁿ → ℝᵐ can "
            "be composed in a chain."
        )
    (d,), = sig.inputs
    if in_dim is not None and d != in_dim:
        raise ValueError(f"{name} expects inputs of dimension {d}, but receives {in_dim}.")
    # works for concrete modules and for abstract ones (ShapeDtypeStruct leaves, e.g. from
    # `eqx.filter_eval_shape` of a constructor)
    dyn, static = eqx.partition(as_function(obj), _is_arrayish)
    dtype = _probe_dtype(dyn, sig.field)
    out = jax.eval_shape(lambda d_, x: eqx.combine(d_, static)(x), dyn,
                         jax.ShapeDtypeStruct((d,), dtype))
    if not hasattr(out, "shape") or len(out.shape) != 1:
        raise TypeError(f"{name} returns {out!r}; a chain needs parts returning one vector.")
    return Part(_cells_of(decl), d, out.shape[0], name, params)


# ----------------------------------------------------------------------- rules
def compose(outer: Part, inner: Part) -> Part:
    """The part for $f = \\text{outer} \\circ \\text{inner}$ by the chain rules
    ([`RULES`][taxdl.taxonomy.RULES])."""
    if inner.out_dim is not None and outer.in_dim is not None and inner.out_dim != outer.in_dim:
        raise ValueError(
            f"cannot compose: {inner.name or 'the inner part'} outputs dimension "
            f"{inner.out_dim} but {outer.name or 'the outer part'} expects {outer.in_dim}."
        )
    in_dim = inner.in_dim if inner.in_dim is not None else (
        outer.in_dim if inner.out_dim is None else inner.out_dim)
    out_dim = outer.out_dim if outer.out_dim is not None else (
        inner.out_dim if outer.in_dim is None else outer.in_dim)
    if inner.in_dim is None and inner.out_dim is None and outer.in_dim is not None:
        in_dim = outer.in_dim
    sides = {"outer": outer, "inner": inner}
    cells = {}
    result = Part({}, in_dim, out_dim)
    for gen in GENERATIONS:
        for fl in FLAVOURS:
            if fl is E and not result.square:
                cells[(gen, fl)] = _TRIVIAL
                continue
            found: list[AbstractGroup] = []
            for rule in RULES:
                if rule.flavour is not fl:
                    continue
                found.extend(_meet_sets(*(sides[s].get(gen, f) for s, f in rule.terms)))
            cells[(gen, fl)] = tuple(_maximal(found)) or _TRIVIAL
    names = " ∘ ".join(n for n in (outer.name, inner.name) if n)
    return Part(cells, in_dim, out_dim, names, outer.parameters or inner.parameters)


def chain(parts: Sequence[Part]) -> Part:
    """The part for the chain $f_k \\circ \\dots \\circ f_1$ (`parts` in call order)."""
    if not parts:
        raise ValueError("a chain needs at least one part.")
    acc = parts[0]
    for p in parts[1:]:
        acc = compose(p, acc)
    return acc


def residual(inner: Part) -> Part:
    """The part for $f = \\mathrm{id} + h$: E cells of `inner` (linear part), L and R
    trivial."""
    if not inner.square:
        raise ValueError(
            f"a residual x + h(x) needs h to map a space to itself; {inner.name or 'h'} maps "
            f"dimension {inner.in_dim} to {inner.out_dim}."
        )
    cells = {}
    for gen in GENERATIONS:
        for fl in FLAVOURS:
            groups = inner.get(gen, fl) if fl is E else _TRIVIAL
            cells[(gen, fl)] = tuple(_maximal([_linear_part(g) for g in groups])) or _TRIVIAL
    return Part(cells, inner.in_dim, inner.out_dim, f"x + {inner.name}(x)", inner.parameters)


def covers(groups: Sequence[AbstractGroup], group: AbstractGroup) -> bool:
    """Whether `group` is contained in one of `groups`."""
    return any(_le(_unbind(group), g) for g in groups)


# ----------------------------------------------------------------------- chains of objects
def chain_parts(layers: Sequence[Any], in_dim: int | None = None) -> list[Part]:
    """The composition-rule description of each layer, with dimensions propagated along the
    chain (a dimension-free layer takes the dimension of its neighbours)."""
    parts = _pass(layers, in_dim)
    if in_dim is None:
        first = next((p.in_dim for p in parts if p.in_dim is not None), None)
        if first is not None and parts[0].in_dim is None:
            parts = _pass(layers, first)
    return parts


def _pass(layers, in_dim):
    parts, d = [], in_dim
    for i, layer in enumerate(layers):
        try:
            p = part(layer, d)
        except ValueError as err:
            raise ValueError(f"part {i} ({type(layer).__name__}): {err}") from None
        parts.append(p)
        if p.out_dim is not None:
            d = p.out_dim
    return parts


def transport_chain(layers: Sequence[Any], parts: Sequence[Part], flavour: Flavour, element,
                    inverse, group) -> tuple[Any, ...]:
    """Parameter transport through a chain, following the rule that gives the closure
    cell: returns layers whose composite is g∘f (L), f∘g (R) or g⁻¹∘f∘g (E).

    `inverse` is the element g⁻¹. The split is the one used by the inference (the last
    layer against the prefix). Where no rule covers the group (a maximality probe), the
    outermost layer is transported alone, which does not give a member of the class.
    """
    layers = tuple(layers)
    if len(layers) == 1:
        return (transport(layers[0], flavour, element, group),)
    outer, inner = layers[-1], layers[:-1]
    outer_p, inner_p = parts[-1], chain(parts[:-1])

    def sub(fl, el):
        return transport_chain(inner, parts[:-1], fl, el, element if el is inverse else inverse,
                               group)

    if flavour is L:
        if not covers(outer_p.get(CLOSURE, L), group) and covers(
                outer_p.get(CLOSURE, E), group) and covers(inner_p.get(CLOSURE, L), group):
            return sub(L, element) + (transport(outer, E, inverse, group),)
        return inner + (transport(outer, L, element, group),)
    if flavour is R:
        if covers(inner_p.get(CLOSURE, R), group):
            return sub(R, element) + (outer,)
        return sub(E, element) + (transport(outer, R, element, group),)
    if covers(outer_p.get(CLOSURE, E), group) and covers(inner_p.get(CLOSURE, E), group):
        return sub(E, element) + (transport(outer, E, element, group),)
    if covers(outer_p.get(CLOSURE, L), group) and covers(inner_p.get(CLOSURE, R), group):
        return sub(R, element) + (transport(outer, L, inverse, group),)
    return sub(E, element) + (transport(outer, E, element, group),)


def inverse_element(group, element):
    if group is not None and getattr(group, "bound", False):
        return group.inverse(element)
    inv = jnp.linalg.inv(element.matrix)
    return Element(inv, -inv @ element.shift)



def _register_equinox_sequential() -> None:
    """`eqx.nn.Sequential` of tagged parts gets the chain rules too (taxonomy, dimensions,
    and the checker's hooks), like `taxdl.nn.Sequential`."""
    seq = eqx.nn.Sequential

    @taxonomy.register(seq)
    def _(model) -> Taxonomy:
        return chain(chain_parts(model.layers)).taxonomy()

    @part.register(seq)
    def _(model, in_dim: int | None = None) -> Part:
        return chain(chain_parts(model.layers, in_dim))

    @signature.register(seq)
    def _(model, n=None) -> Signature:
        d = chain_parts(model.layers, n)[0].in_dim
        if d is None and n is None:
            raise ValueError("this Sequential works in any dimension: pass the dimension `n`.")
        return Signature(((d if d is not None else n,),))

    @reinitialise.register(seq)
    def _(model, key):
        keys = jax.random.split(key, len(model.layers))
        return eqx.tree_at(lambda m: m.layers, model,
                           tuple(reinitialise(lay, k) for lay, k in zip(model.layers, keys)))

    @transport.register(seq)
    def _(model, flavour, element, group):
        layers = transport_chain(model.layers, chain_parts(model.layers), Flavour(flavour),
                                 element, inverse_element(group, element), group)
        return eqx.tree_at(lambda m: m.layers, model, tuple(layers))


_register_equinox_sequential()


# ----------------------------------------------------------------------- parameter symmetries
_ORDER = {
    Trivial: lambda n: 1,
    Permutation: lambda n: _factorial(n),
    EvenSignedPermutation: lambda n: 2 ** (n - 1) * _factorial(n),
    SignedPermutation: lambda n: 2 ** n * _factorial(n),
}


def _cone_dimension(g, n: int) -> int:
    s = g.cone_dim
    cones = (n - 1) // (s - 1) if g.shared_axis else n // s
    scal = (1 if g.shared_axis else cones) if g.scalings else 0
    return cones * (s - 1) * (s - 2) // 2 + scal


# dimension of the group manifold (the orbit of functionally identical parameters)
_DIMENSION = {
    "Orthogonal": lambda g, n: n * (n - 1) // 2,
    "SpecialOrthogonal": lambda g, n: n * (n - 1) // 2,
    "OrthogonalComplement": lambda g, n: (n - 1) * (n - 2) // 2,
    "GeneralLinear": lambda g, n: n * n,
    "Affine": lambda g, n: n * n + n,
    "Euclidean": lambda g, n: n * (n - 1) // 2 + n,
    "Translations": lambda g, n: n,
    "Monomial": lambda g, n: n,
    "Diagonal": lambda g, n: n,
    "DiagonalAffine": lambda g, n: 2 * n,
    "ScaleTranslation": lambda g, n: n + 1,
    "MonomialAffine": lambda g, n: 2 * n,
    "Scaling": lambda g, n: 1,
    "Translation": lambda g, n: 1,
    "ScaleShift": lambda g, n: 2,
    "PositiveMonomial": lambda g, n: n,
    "ConeGroup": _cone_dimension,
}


def _factorial(n: int) -> int:
    out = 1
    for k in range(2, n + 1):
        out *= k
    return out


@dataclasses.dataclass(frozen=True)
class ParameterSymmetry:
    """A group of reparameterisations that leave a model's function unchanged.

    - `site`: index of the part whose hidden input space the group acts on (the space
      between parts `site − 1` and `site`; for the element g, the prefix becomes g∘prefix
      and the suffix from `site` on becomes suffix∘g⁻¹).
    - `group`: the group family; `dim`: the hidden dimension.
    - `discrete`: True for a finite group (Sₙ, Bₙ, …), False for a continuous one (O(n)).
    - `order`: the number of elements for finite groups (n! for Sₙ), else None.
    - `manifold_dim`: the dimension of the orbit manifold for continuous groups
      (n(n−1)/2 for O(n)), else None.
    - `reason`: which part's equivariance and which closures give it.
    """

    site: int
    group: AbstractGroup
    dim: int | None
    discrete: bool
    order: int | None
    manifold_dim: int | None
    reason: str

    def __str__(self) -> str:
        kind = "discrete" if self.discrete else "continuous"
        if self.order is not None:
            kind += f", {self.order} elements"
        elif self.manifold_dim is not None:
            kind += f", orbit dimension {self.manifold_dim}"
        return f"site {self.site}: {self.group.name} on ℝ^{self.dim} ({kind}) — {self.reason}"


def parameter_symmetries(parts: Sequence[Part]) -> list[ParameterSymmetry]:
    """The parameter symmetries of a chain (`parts` in call order), one per hidden layer.

    The hidden space at site i lies between parts i − 1 and i; its group is
    $C_L(\\text{parts}_{<i}) ∩ C_R(\\text{parts}_{\\ge i})$ from the composition rules.
    Consecutive sites joined by a parameter-free part (an activation) form one hidden
    layer, reported once at the site with the largest group. Only non-trivial groups are
    reported.
    """
    found = []
    for i in range(1, len(parts)):
        before = chain(parts[:i]).get(CLOSURE, L)
        after = chain(parts[i:]).get(CLOSURE, R)
        groups = [g for g in _meet_sets(before, after) if not isinstance(g, Trivial)]
        g = groups[0] if groups else Trivial()
        found.append((i, g, next(b for b in before if _le(g, b)),
                      next(a for a in after if _le(g, a))))
    layers: list[list] = []
    for i, g, before, after in found:
        if layers and not parts[i - 1].parameters and parts[i - 1].square:
            layers[-1].append((i, g, before, after))
        else:
            layers.append([(i, g, before, after)])
    out = []
    for layer in layers:
        best = layer[0]
        for cand in layer[1:]:
            if _le(best[1], cand[1]) and not _le(cand[1], best[1]):
                best = cand
        i, g, before, after = best
        if isinstance(g, Trivial):
            continue
        dim = parts[i - 1].out_dim if parts[i - 1].out_dim is not None else parts[i].in_dim
        finite = bool(type(g).finite)
        order = _ORDER[type(g)](dim) if finite and type(g) in _ORDER and dim else None
        mdim = None
        if not finite and dim and type(g).__name__ in _DIMENSION:
            try:
                mdim = _DIMENSION[type(g).__name__](g, dim)
            except (AttributeError, ValueError, ZeroDivisionError):
                mdim = None
        names = [parts[j - 1].name for j, *_ in layer[1:]]
        around = f" around {', '.join(names)}" if names else ""
        reason = (f"the parts before are closed on the left under {before.name}, the parts "
                  f"after on the right under {after.name}{around}")
        out.append(ParameterSymmetry(i, g, dim, finite, order, mdim, reason))
    return out


def fit_problems(parts: Sequence[Part], objs: Sequence[Any]) -> list[str]:
    """Where an activation's symmetry and its neighbouring layers' closure disagree.

    For an activation (algebraic E group A) directly between two layers whose closures on
    the hidden space are a specific group G (not all of GL): the parts fit when A = G.
    Otherwise the model loses a symmetry one of the parts was chosen for: an elementwise
    activation (Bₙ) between layers declared O(n) breaks their isotropy; an isotropic
    activation between layers closed only under Sₙ has an O(n) symmetry that no
    parameter change can use.
    """
    problems = []
    for i in range(1, len(parts) - 1):
        if not (isinstance(objs[i], AbstractActivation) and isinstance(objs[i - 1], AbstractLayer)
                and isinstance(objs[i + 1], AbstractLayer)):
            continue
        act = parts[i].get(ALGEBRAIC, E)[0]
        left, right = parts[i - 1].get(CLOSURE, L), parts[i + 1].get(CLOSURE, R)
        if _contains_gl(left) and _contains_gl(right):
            continue
        layers = _meet_sets(left, right)[0]
        if _le(act, layers) and _le(layers, act):
            continue
        kept = meet(act, layers)
        problems.append(
            f"part {i} ({parts[i].name}) is algebraically {act.name}-equivariant but the "
            f"layers around it are declared {layers.name}: the model's hidden symmetry "
            f"there is only {kept.name}. Use an activation whose group is {layers.name}, or "
            f"layers closed under {act.name}."
        )
    return problems


def warn_fit(parts: Sequence[Part], objs: Sequence[Any], stacklevel: int = 3) -> None:
    """Emit a [`CompositionWarning`][taxdl.taxonomy.CompositionWarning] per fit problem."""
    for message in fit_problems(parts, objs):
        warnings.warn(message, CompositionWarning, stacklevel=stacklevel)
