"""The subgroup partial order between group families, as free functions.

These are `functools.singledispatch` functions rather than methods so that a user's own
group can join the hierarchy with `immediate_supergroups.register(MyGroup)` without
editing any taxdl class.

Hierarchy on one layer's ℝⁿ (DESIGN §1):

    I ⊂ Sₙ ⊂ Dₙ ⊂ Bₙ ⊂ O(n) ⊂ ℝ×·O(n) (similarities) ⊂ GL(n),   I ⊂ Ψ ⊂ O(n),
    I ⊂ SO(n) ⊂ O(n),   Sₙ ⊂ O(n−1) (permutations fix 1) ⊂ O(n),   I ⊂ ℝ×₊ ⊂ ℝ× ⊂ ℝ×·O(n),
    I ⊂ {±I} ⊂ ℝ×, ℤ₂ⁿ (sign flips) ⊂ Bₙ, and for even n also {±I} ⊂ SO(n), Dₙ,
    {±I} ⊂ ℤ₂ⁿ ⊂ O(1, n−1) (the full Lorentz group: diagonal signs preserve η),
    Sₙ ⊂ Sₙ⋉(ℝ×₊)ⁿ ⊃ ℝ×₊ (positive monomials) ⊂ Sₙ⋉(ℝ×)ⁿ (monomials) ⊂ GL(n),
    Bₙ ⊂ Sₙ⋉(ℝ×)ⁿ ⊃ (ℝ×)ⁿ (invertible diagonals) ⊃ ℝ×, (ℝ×₊)ⁿ ⊃ ℝ×₊,
    (ℝ×₊)ⁿ ⊂ Sₙ⋉(ℝ×₊)ⁿ,
    ℝ×₊ ⊂ (ℝ×₊,+λ1) ⊂ (ℝ×,+λ1),   +λ1 ⊂ (ℝ×₊,+λ1),
    per block of c coordinates: (+λ1)ᴳ ⊂ (ℝ×₊,+λ1)ᴳ ⊂ (ℝ×,+λ1)ᴳ ⊂ (ℝ×)ⁿ⋉ℝⁿ,
    and, n bound, (ℝ×,+λ1) = one block of n ⊂ blocks of c ⊂ blocks of c′ for c′ | c,
    (+λ1)ᴳ ⊂ T(n), (ℝ×₊,+λ1)ᴳ ⊂ (ℝ×₊)ⁿ⋉ℝⁿ, and S_c≀S_G ⊂ Sₙ (blocks permuted as blocks),
    +λ1 ⊂ T(n) ⊂ E(n) ⊂ Aff(n),   O(n) ⊂ E(n),   GL(n) ⊂ Aff(n),
    T(n), (ℝ×₊,+λ1) ⊂ ℝ×₊⋉ℝⁿ ⊂ ℝ×⋉ℝⁿ (dilations) ⊃ (ℝ×,+λ1),
    (ℝ×₊)ⁿ, ℝ×₊⋉ℝⁿ ⊂ (ℝ×₊)ⁿ⋉ℝⁿ ⊂ (ℝ×)ⁿ⋉ℝⁿ (per-coordinate affine maps),
    (ℝ×)ⁿ, ℝ×⋉ℝⁿ ⊂ (ℝ×)ⁿ⋉ℝⁿ ⊂ Sₙ⋉(ℝ×)ⁿ⋉ℝⁿ (monomial affine maps) ⊃ Sₙ⋉(ℝ×)ⁿ,
    Sₙ⋉(ℝ×)ⁿ⋉ℝⁿ ⊂ Aff(n),
    cone isometries ⊂ cone group (with scalings) ⊂ GL(n),  cone isometries ⊂ O(n),
    Sₙ×U(1) ⊂ U(n),  SU(2) ⊂ U(2).

Scalars commute with every linear map, so a linear group G without them sits inside
ℝ×₊ × G and {±I} × G (maps homogeneous of degree one, or odd, on top of G): for Sₙ, S_c≀S_G,
Dₙ, Bₙ, ℤ₂ⁿ, SO(n), O(n−1), Ψ, O(1, n−1) and Sₙ⋉(ℝ×₊)ⁿ, whichever of the two G lacks.
From the scalar side, {±I}, ℝ×₊ and ℝ× sit inside their products with Sₙ, SO(n) and Ψ,
the linear groups just above I (`_scalars_times_linear`).
The nontrivial linear groups fixing 1 (Sₙ, S_c≀S_G, O(n−1) and their subgroups) commute
with the shifts along it and sit inside +λ1 × G (`shift_extensions`): the maximality check
and `AbstractGroup.supergroups` list it, but it is not a rule of the hierarchy, whose
walk from the trivial group (`meet`) would then hold five times as many products.

Commuting products G₁ × G₂ contain each factor; their immediate supergroups replace one
factor by one of its immediate supergroups (after dropping factors absorbed by others). A
scalar factor (ℝ×₊ or {±I}) is only replaced by ℝ×, or by (ℝ×₊,+λ1) when every other
factor fixes 1, so that the products stay commuting; ℝ×₊ and {±I} together are ℝ×.
"""

import functools as ft
import inspect

import jax.numpy as jnp

from ._affine import (
    AbstractTranslationExtension,
    Affine,
    BlockScaleShift,
    Diagonal,
    DiagonalAffine,
    Euclidean,
    ScaleTranslation,
    Translations,
)
from ._base import AbstractGroup, Element
from ._complex import SU2, PermutationPhase, Unitary
from ._real import (
    BlockPermutation,
    PointReflection,
    SignFlips,
    EvenSignedPermutation,
    ConformalLinear,
    GeneralLinear,
    Orthogonal,
    OrthogonalComplement,
    Permutation,
    ScaleShift,
    Scaling,
    SignedPermutation,
    SpecialOrthogonal,
    Translation,
    Trivial,
)
from ._structured import BlockDiagonal, ConeGroup, Dihedral, Lorentz, Product, Simplex


def _bind(groups, n):
    out = []
    for g in groups:
        if n is None:
            out.append(g)
            continue
        try:
            out.append(g.on(n))
        except ValueError:
            continue  # e.g. O(n-1) needs n >= 2: no such supergroup in this dimension
    return tuple(out)


def counting_registrations(fn):
    """Give the `functools.singledispatch` function `fn` a `version` that every
    registration (`fn.register`, in any of its forms) increases, so that answers derived
    from its registered rules can be remembered until a rule is added or replaced."""
    register = fn.register
    fn.version = 0

    def counted(cls, func=None):
        if func is None and not inspect.isroutine(cls):  # decorator form
            return lambda f: counted(cls, f)
        out = register(cls, func)
        fn.version += 1
        return out

    fn.register = ft.wraps(register)(counted)
    return fn


@counting_registrations
@ft.singledispatch
def immediate_supergroups(group: AbstractGroup) -> tuple[AbstractGroup, ...]:
    """The supergroups of `group` that its hierarchy rule lists, bound to the same
    dimension: the immediate ones, and possibly some that hold another listed one
    (`least` drops those; `AbstractGroup.supergroups` and the maximality check apply it).
    A primitive that declares `group` must fail under each immediate one (or the
    declaration is reported as possibly non-maximal)."""
    if type(group).__module__.startswith("taxdl."):
        raise AssertionError(f"taxdl group {type(group).__name__} has no hierarchy rule")
    raise NotImplementedError(
        f"{type(group).__name__} is not in the hierarchy; register it with "
        "`taxdl.groups.immediate_supergroups.register`."
    )


def _register(cls, fn):
    immediate_supergroups.register(cls)(fn)


def _extra_class(name: str) -> type:
    """A group family of `_extra`, imported late (`_extra` builds on this module)."""
    from . import _extra

    return getattr(_extra, name)


def _extra(name: str, **fields) -> AbstractGroup:
    """An unbound group of `_extra` (see `_extra_class`)."""
    return _extra_class(name)(**fields)


_register(Trivial, lambda g: _bind(
    (Permutation(), SpecialOrthogonal(), Simplex(), Scaling(positive=True), Translation(),
     PointReflection()), g.n))


def _scalars_times_linear(g: AbstractGroup) -> tuple[AbstractGroup, ...]:
    """Z × H for the scalar group Z = `g` ({±I}, ℝ×₊ or ℝ×) and each nontrivial linear
    group H immediately above the trivial one (Sₙ, SO(n), Ψ): scalars commute with every
    linear map, so Z lies in each product. These are the edges from the scalar side into
    the products that H's own scalar extensions reach (a map that is odd, or homogeneous,
    and also permutation-equivariant is under-declared as {±I} or ℝ×₊).

    SO(n) is named as the hierarchy names the product: {±I} × SO(n) is O(n) for odd n
    (and SO(n) itself, already above {±I}, for even n); ℝ× × SO(n) is ℝ×·O(n) for odd n
    (which holds ℝ× × ℤ₂ⁿ, so it is not immediate) and ℝ×₊ × SO(n) for even n. An unbound
    {±I} or ℝ× leaves SO(n) out (the product depends on n's parity). In one dimension
    every linear group is a scalar one."""
    n = g.n
    if n == 1:
        return ()
    products = [Product(g, h, n=n) for h in _bind((Permutation(), Simplex()), n)]
    if isinstance(g, Scaling) and g.positive:
        products.append(Product(g, SpecialOrthogonal(n), n=n))
    elif n is not None and n % 2 == 1:
        if isinstance(g, PointReflection):
            products.append(Orthogonal(n))
    elif n is not None and isinstance(g, Scaling):
        products.append(Product(Scaling(positive=True), SpecialOrthogonal(n), n=n))
    return tuple(products)


def _point_reflection_supergroups(g: PointReflection) -> tuple[AbstractGroup, ...]:
    # det(−I) = (−1)ⁿ and −I flips all n signs: in an even dimension {±I} also lies in
    # SO(n) and in Dₙ, so a bound group of even n has those two supergroups as well.
    ups = (Scaling(positive=False), SignFlips())
    if g.n is not None and g.n % 2 == 0:
        ups += (SpecialOrthogonal(), EvenSignedPermutation())
    return _bind(ups, g.n) + _scalars_times_linear(g)


_register(PointReflection, _point_reflection_supergroups)


def _times_scalars(g: AbstractGroup, positive: bool = True, sign: bool = True
                   ) -> tuple[AbstractGroup, ...]:
    """ℝ×₊ × g (`positive`) and {±I} × g (`sign`): the scalar extensions of a linear group
    that lacks them."""
    scalars = ((Scaling(positive=True),) if positive else ()) + (
        (PointReflection(),) if sign else ())
    return tuple(Product(s, g, n=g.n) for s in scalars)


_register(SignFlips, lambda g: _bind((SignedPermutation(), Diagonal(), Lorentz()), g.n)
          + _times_scalars(g, sign=False))   # diag(±1) preserves η: ℤ₂ⁿ ⊂ O(1, n−1)
_register(Permutation, lambda g: _bind(
    (EvenSignedPermutation(), OrthogonalComplement(), _extra("PositiveMonomial")), g.n)
    + _times_scalars(g))
_register(BlockPermutation, lambda g: (Permutation(g.n),) + _times_scalars(g))
_register(EvenSignedPermutation, lambda g: _bind((SignedPermutation(),), g.n)
          + _times_scalars(g, sign=False))
_register(SignedPermutation, lambda g: _bind((Orthogonal(), _extra("Monomial")), g.n)
          + _times_scalars(g, sign=False))
_register(SpecialOrthogonal, lambda g: _bind((Orthogonal(),), g.n)
          + _times_scalars(g, sign=False))   # {±I} × SO(n) is O(n) (n odd) or SO(n)
_register(Simplex, lambda g: _bind((Orthogonal(),), g.n) + _times_scalars(g))
_register(Dihedral, lambda g: _bind((Orthogonal(),), 2 if g.n is not None else None)
          + _times_scalars(g, sign=g.k % 2 == 1))   # rotation by π ∈ D_k iff k is even
_register(OrthogonalComplement, lambda g: _bind((Orthogonal(),), g.n) + _times_scalars(g))
_register(Orthogonal, lambda g: _bind((ConformalLinear(), Euclidean()), g.n))
_register(ConformalLinear, lambda g: _bind((GeneralLinear(),), g.n))
_register(GeneralLinear, lambda g: _bind((Affine(),), g.n))
_register(Scaling, lambda g: _bind(
    (Scaling(positive=False), ScaleShift(positive=True), Diagonal(positive=True)) if g.positive
    else (Product(Scaling(), SignFlips()), Diagonal(), ScaleShift(positive=False),
          ConformalLinear()), g.n) + _scalars_times_linear(g))
_register(Diagonal, lambda g: _bind(
    (Diagonal(), _extra("PositiveMonomial"), DiagonalAffine(positive=True)) if g.positive
    else (_extra("Monomial"), DiagonalAffine()), g.n))
_register(DiagonalAffine, lambda g: _bind(
    (DiagonalAffine(), _extra("MonomialAffine", positive=True)) if g.positive
    else (_extra("MonomialAffine"),), g.n))
_register(ScaleTranslation, lambda g: _bind(
    (ScaleTranslation(), DiagonalAffine(positive=True)) if g.positive
    else (DiagonalAffine(),), g.n))


def _coarsest_refinements(block: int) -> tuple[int, ...]:
    """Block sizes b / p for the primes p dividing b, those ≥ 2: the per-block groups
    immediately above a group acting on blocks of b (smaller blocks give more maps; blocks
    of one coordinate are the per-coordinate groups, named on their own)."""
    out, m, p = [], block, 2
    while p * p <= m:
        if m % p == 0:
            out.append(block // p)
            while m % p == 0:
                m //= p
        p += 1
    if m > 1:
        out.append(block // m)
    return tuple(b for b in out if b >= 2)


def _finer_blocks(n: int | None, block: int, **flags) -> tuple[AbstractGroup, ...]:
    # One scale/shift over blocks of `block` sits inside one per smaller block (GroupNorm's
    # groups inside LayerNorm's, whose single block is all n coordinates when n is bound).
    return tuple(BlockScaleShift(n, b, **flags) for b in _coarsest_refinements(block))


_register(Translation, lambda g: _bind((ScaleShift(positive=True), Translations()), g.n)
          + (_finer_blocks(g.n, g.n, scales=False) if g.n else ()))
_register(ScaleShift, lambda g: _bind(
    (ScaleShift(positive=False), ScaleTranslation(positive=True)) if g.positive
    else (ScaleTranslation(),), g.n)
    + (_finer_blocks(g.n, g.n, positive=g.positive) if g.n else ()))
_register(Translations, lambda g: _bind((Euclidean(), ScaleTranslation(positive=True)), g.n)
          + (_coordinate_signs_shifts(g.n),))


def _is_coordinate_signs_shifts(g: AbstractGroup) -> bool:
    return isinstance(g, BlockScaleShift) and g.signs and g.block == 1


def _coordinate_signs_shifts(n: int | None) -> BlockScaleShift:
    """(±1)ⁿ ⋉ ℝⁿ: a sign and a shift per coordinate."""
    return BlockScaleShift(n, 1, scales=False, signs=True)


def _block_scale_shift_supergroups(g: BlockScaleShift) -> tuple[AbstractGroup, ...]:
    n, b = g.n, g.block
    finer = _finer_blocks(n, b, positive=g.positive, scales=g.scales, signs=g.signs)
    if g.signs:
        if b == 1:   # (±1)ⁿ ⋉ ℝⁿ: sign flips are diagonal and orthogonal
            return (DiagonalAffine(n), Euclidean(n))
        # per coordinate once no block size lies between
        coordinate = () if finer else (_coordinate_signs_shifts(n),)
        return (BlockScaleShift(n, b),) + finer + coordinate
    if not g.scales:
        up = (BlockScaleShift(n, b, positive=True), BlockScaleShift(n, b, scales=False, signs=True),
              Translations(n))
    elif g.positive:
        up = (BlockScaleShift(n, b), DiagonalAffine(n, positive=True))
    else:
        up = (DiagonalAffine(n),)
    return up + finer


_register(BlockScaleShift, _block_scale_shift_supergroups)
_register(Euclidean, lambda g: _bind((Affine(),), g.n))
_register(Affine, lambda g: ())
_register(ConeGroup, lambda g: (
    (ConeGroup(g.n, g.cone_dim, True, g.shared_axis, g.layout),)
    + _bind((Orthogonal(),), g.n) if not g.scalings
    else _bind((GeneralLinear(),), g.n)))
_register(Lorentz, lambda g: _bind((GeneralLinear(),), g.n)
          + _times_scalars(g, sign=False))
_register(PermutationPhase, lambda g: _bind((Unitary(),), g.n))
_register(Unitary, lambda g: ())
_register(SU2, lambda g: (Unitary(2),) if g.rep == "standard" else (Orthogonal(3),))
def _block_diagonal_supergroups(g: BlockDiagonal) -> tuple[AbstractGroup, ...]:
    # GL(n) holds the block-diagonal maps only when every factor is linear; a factor
    # with translations (T(k), E(k), …) puts the product in Aff(n) only.
    for family in (GeneralLinear(), Affine()):
        if all(is_subgroup(f, family) for f in g.factors):
            return _bind((family,), g.n)
    return ()


_register(BlockDiagonal, _block_diagonal_supergroups)


def scalings_times(within: AbstractGroup) -> AbstractGroup:
    """ℝ× × `within`: what a linear map's equivariance cell becomes once the scalings,
    with which every linear map commutes, are added; the family ℝ×·O(n) when `within` is
    O(n) (the two generate it), else the product."""
    if isinstance(within, Orthogonal):
        return ConformalLinear(within.n)
    return Product(Scaling(), within)


def signs_times(*groups: AbstractGroup) -> AbstractGroup:
    """{±I} × `groups`: what an equivariance cell becomes once the point reflection −I is
    added (an odd map), simplified, so that −I is not repeated where a factor already
    holds it (ℝ×, Bₙ, …)."""
    return simplify_product(Product(PointReflection(), *groups))


def simplify_product(group: AbstractGroup) -> AbstractGroup:
    """Drop trivial factors and factors contained in another factor of a `Product`;
    a single remaining factor is returned as itself. Answers are remembered per family
    and dimensions (the product's and its factors') until a hierarchy rule is registered
    (building the hierarchy asks for the same products many times)."""
    if not isinstance(group, Product):
        return group
    key = (memo_key(group), tuple(family_key(f)[1] for f in group.factors))
    return remembered(_SIMPLIFY_MEMO, _rules_token(), key, lambda: _simplify_product(group))


_SIMPLIFY_MEMO: dict = {}


def _simplify_product(group: Product) -> AbstractGroup:
    factors = []
    for f in group.factors:
        f = simplify_product(f)
        factors += list(f.factors) if isinstance(f, Product) else [f]
    factors = [f for f in factors if not isinstance(f, Trivial)]
    if (any(isinstance(f, PointReflection) for f in factors)
            and any(isinstance(f, Scaling) and f.positive for f in factors)):
        # ℝ×₊ × {±I} = ℝ×
        factors = [Scaling() if isinstance(f, Scaling) else f for f in factors
                   if not isinstance(f, PointReflection)]
    if (any(isinstance(f, Scaling) and not f.positive for f in factors)
            and any(not isinstance(f, Scaling) and is_subgroup(Scaling(positive=True), f)
                    for f in factors)):
        # ℝ× × H = {±I} × H when ℝ×₊ ⊂ H
        factors = [PointReflection() if isinstance(f, Scaling) else f for f in factors]
    if (any(_is_coordinate_signs_shifts(f) for f in factors)
            and any(not _is_coordinate_signs_shifts(h) and is_subgroup(SignFlips(), h)
                    for h in factors)):
        # (±1)ⁿ⋉ℝⁿ × H = T(n) × H when the sign flips ℤ₂ⁿ lie in H
        factors = [Translations() if _is_coordinate_signs_shifts(f) else f for f in factors]
    if (len(factors) == 2 and {type(f) for f in factors} == {Scaling, Orthogonal}):
        return ConformalLinear(group.n)   # ℝ×·O(n) = ℝ×₊·O(n) (−I is orthogonal)
    if (group.n is not None and group.n % 2 == 1 and len(factors) == 2
            and {type(f) for f in factors} == {PointReflection, SpecialOrthogonal}):
        return Orthogonal(group.n)        # {±I} × SO(n) = O(n) for odd n (det(−I) = −1)
    if (len(factors) == 2 and {type(f) for f in factors} == {Translations, Orthogonal}):
        return Euclidean(group.n)         # O(n)⋉T(n) = E(n)
    kept = []
    for i, f in enumerate(factors):
        absorbed = any(
            (is_subgroup(f, h) and not same_group(f, h)) or (same_group(f, h) and j < i)
            for j, h in enumerate(factors) if j != i
        )
        if not absorbed:
            kept.append(f)
    if not kept:
        return Trivial(group.n)
    if len(kept) == 1:
        return kept[0] if group.n is None else kept[0].on(group.n)
    return Product(*kept, n=group.n)


def _product_supergroups(g: Product) -> tuple[AbstractGroup, ...]:
    # Replace one factor at a time by each of its immediate supergroups.
    here = simplify_product(g)
    if not isinstance(here, Product):
        return immediate_supergroups(here)
    out, seen = [], {_family(here)}
    for i, factor in enumerate(here.factors):
        others = here.factors[:i] + here.factors[i + 1:]
        # a scalar factor's products with Sₙ, SO(n), Ψ are the product's business: the
        # other factors climb their own hierarchies
        beside = {_family(p) for p in _scalars_times_linear(factor)} if isinstance(
            factor, (PointReflection, Scaling)) else set()
        for sup in immediate_supergroups(factor):
            if _family(sup) in beside or not _commutes_in_place_of(factor, sup, others):
                continue
            factors = list(here.factors)
            factors[i] = sup
            candidate = simplify_product(Product(*factors, n=here.n))
            key = _family(candidate)
            if key not in seen and not is_subgroup(candidate, here):
                # (not the same group under another name: ℝ× × Dₙ is ℝ×₊ × Dₙ for even n)
                seen.add(key)
                out.append(candidate)
    return tuple(out)


def _commutes_in_place_of(factor, sup, others) -> bool:
    """Whether `sup` may replace the scalar factor `factor` (ℝ×₊ or {±I}) of a product:
    ℝ× always; (ℝ×₊,+λ1) when the other factors fix 1 (they lie in O(n−1)); nothing else
    (it would not commute with them). Factors other than ℝ×₊ and {±I} are unrestricted."""
    central = isinstance(factor, PointReflection) or (
        isinstance(factor, Scaling) and factor.positive)
    if not central or (isinstance(sup, Scaling) and not sup.positive):
        return True
    if isinstance(sup, ScaleShift):
        return all(is_subgroup(o, OrthogonalComplement()) for o in others)
    return False


_register(Product, _product_supergroups)


def _family(group: AbstractGroup):
    """What identifies a family: its class and static parameters other than `n` and
    those that only shape sampling (`AbstractGroup.sampling_fields`).

    Remembered per group object (groups are immutable): the lattice queries behind a
    composition ask for the same groups' families hundreds of thousands of times, and
    reading an Equinox module's fields is slow."""
    return family_key(group)[0]


def family_key(group: AbstractGroup) -> tuple[tuple, int | None]:
    """`(_family(group), group.n)`: the key under which answers about `group` are
    remembered, itself remembered per group object."""
    hit = _FAMILIES.get(id(group))
    if hit is not None and hit[0] is group:
        return hit[1]
    fields = vars(group)
    if isinstance(group, BlockDiagonal):   # factors of their own sizes: O(2)⊕S₃ ≠ O(3)⊕S₂
        family = (type(group), tuple(family_key(f) for f in group.factors), group.n)
    elif isinstance(group, Product):       # factors all acting on the product's space
        family = (type(group), tuple(_family(f) for f in group.factors), group.n)
    else:
        skip = ("n", *type(group).sampling_fields)  # (a Lorentz group's max_rapidity)
        family = (type(group), tuple(sorted((k, v) for k, v in fields.items() if k not in skip)))
    if len(_FAMILIES) >= _FAMILIES_MAX:
        try:
            del _FAMILIES[next(iter(_FAMILIES))]  # the oldest entry
        except (KeyError, RuntimeError, StopIteration):  # another thread got there first
            pass
    # the group is kept alive with its entry, so its id cannot be reused meanwhile
    key = (family, group.n)
    _FAMILIES[id(group)] = (group, key)
    return key


_FAMILIES: dict[int, tuple[AbstractGroup, tuple]] = {}
_FAMILIES_MAX = 4096


def memo_key(group: AbstractGroup) -> tuple:
    """`family_key(group)` with the values of the fields that only shape sampling
    (`AbstractGroup.sampling_fields`, in `group` and its factors): the key under which
    answers that are groups are remembered, so that a remembered answer is not a group
    with another group's sampling parameters (a Lorentz group's max_rapidity)."""
    return family_key(group), _sampling(group)


def _sampling(group: AbstractGroup) -> tuple:
    if isinstance(group, (BlockDiagonal, Product)):
        return tuple(_sampling(f) for f in group.factors)
    return tuple(getattr(group, name) for name in type(group).sampling_fields)


def same_group(a: AbstractGroup, b: AbstractGroup) -> bool:
    """Whether `a` and `b` are the same family (ignoring the bound dimension)."""
    return _family(a) == _family(b)


_SUBGROUP_MEMO: dict = {}


def least(groups, among=None) -> tuple[AbstractGroup, ...]:
    """Those of `groups` that hold none of `among` (by default `groups` itself) strictly
    inside them, in their order.

    A rule may list a group together with one of its own supergroups (ℝ× lists ℝ× × ℤ₂ⁿ
    and (ℝ×)ⁿ, which holds it); only the smaller is immediate. For maximality the larger
    adds nothing: a map that fails under the smaller group fails under every group
    containing it."""
    groups = tuple(groups)
    among = groups if among is None else tuple(among)
    return tuple(g for g in groups if not any(
        h is not g and is_subgroup(h, g) and not is_subgroup(g, h) for h in among))


def _rules_token() -> int:
    # The registered rules: a rule added or replaced (a user's group joining the
    # hierarchy) invalidates the remembered answers.
    return immediate_supergroups.version


def shift_extensions(group: AbstractGroup) -> tuple[AbstractGroup, ...]:
    """+λ1 × `group` when `group` is a nontrivial linear group fixing the all-ones
    direction (a subgroup of O(n−1): permutations, block permutations, O(n−1)), with
    which the shifts along it commute; otherwise nothing. A map declared G-equivariant
    that also commutes with those shifts (σ(x − x̄1) + x̄1 for Sₙ) is under-declared, so
    the maximality check tests these beside the hierarchy's immediate supergroups."""
    if (isinstance(group, Trivial) or (group.n is not None and group.n < 2)
            or moves_origin(group) or is_subgroup(Translation(group.n), group)
            or not is_subgroup(group, OrthogonalComplement(group.n))):
        return ()   # (in one dimension every linear group is a scalar one)
    return (Product(Translation(), group, n=group.n),)


def is_subgroup(a: AbstractGroup, b: AbstractGroup) -> bool:
    """Whether family `a` ⊆ family `b` in the hierarchy (reflexive, transitive).

    The trivial group is a subgroup of every group in its dimension; products compare
    factor-wise. Groups bound to different dimensions act on different spaces and are
    never subgroups of one another (not even the trivial ones). Groups bound to one
    dimension follow that dimension's edges (e.g. {±I} ⊂ SO(n) only for even n); unbound
    families follow those that hold in every dimension. Answers are remembered per pair
    of families and dimensions until a hierarchy rule is registered.
    """
    return remembered(_SUBGROUP_MEMO, _rules_token(), (family_key(a), family_key(b)),
                      lambda: _is_subgroup(a, b))


def moves_origin(group: AbstractGroup) -> bool:
    """Whether elements of `group` may have a translation part: the translation-carrying
    families of `taxdl.groups` (T(n), +λ1, the scale-shifts and the translation
    extensions K⋉ℝⁿ) and products containing one; any other family is taken as linear."""
    if isinstance(group, (Product, BlockDiagonal)):
        return any(moves_origin(f) for f in group.factors)
    return isinstance(group, (AbstractTranslationExtension, Translations, Translation,
                              ScaleShift, BlockScaleShift))


def commuting(a: AbstractGroup, b: AbstractGroup) -> bool:
    """Whether every element of `a` commutes with every element of `b`, as far as the
    rules below know (False when not known): the trivial group commutes with everything;
    scalars (ℝ×, ℝ×₊, {±I}, complex phases) with every group without translations; maps
    $x ↦ ax + λ\\mathbf 1$ with the orthogonal maps fixing $\\mathbf 1$ (O(n−1) and its
    subgroups). Translations and $x ↦ Mx$ do not commute unless $M$ fixes them."""
    from ._extra import Phase

    for g, h in ((a, b), (b, a)):
        if isinstance(g, Trivial):
            return True
        if isinstance(g, (Scaling, PointReflection, Phase)) and not moves_origin(h):
            return True
        if isinstance(g, (Translation, ScaleShift)) and is_subgroup(h, OrthogonalComplement()):
            return True
    return False


def normalises(h: AbstractGroup, t: AbstractGroup) -> bool:
    """Whether the group `h` without translations normalises `t` ($g\\,t\\,g^{-1} \\in t$
    for g in h), as far as these rules know: groups that commute with `t` or lie in it,
    scalars (they only rescale a translation), any linear group for T(n), ℝ×⋉ℝⁿ and
    Aff(n), monomial maps for the per-coordinate affine groups, maps fixing
    $\\mathbf 1$ up to sign for $x ↦ ax + λ\\mathbf 1$, and permutations of whole blocks
    for per-block scale-shifts."""
    from ._extra import MonomialAffine, Phase

    if moves_origin(h):
        return False
    if isinstance(h, Product):   # the group generated by normalising factors normalises
        return all(normalises(f, t) for f in h.factors)
    if commuting(h, t) or is_subgroup(h, t) or isinstance(h, (Scaling, PointReflection, Phase)):
        return True
    if isinstance(t, (Translations, ScaleTranslation, Affine)):
        return True   # their linear parts are central or everything
    if isinstance(t, (DiagonalAffine, MonomialAffine)):
        return is_subgroup(h, _extra("Monomial"))   # monomials permute and scale axes
    if isinstance(t, (Translation, ScaleShift)):
        return is_subgroup(h, OrthogonalComplement())
    if isinstance(t, BlockScaleShift):
        return is_subgroup(h, BlockPermutation(t.n, block=t.block))
    return False


def remembered(memo: dict, token, key, compute):
    """`compute()`, kept in `memo` under `key` until `token` (what the answer depends on,
    e.g. the registered hierarchy rules) changes, when `memo` is emptied."""
    if memo.get("token") != token:
        memo.clear()
        memo["token"] = token
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def _is_subgroup(a: AbstractGroup, b: AbstractGroup) -> bool:
    if a.n is not None and b.n is not None and a.n != b.n:
        return False   # they act on different spaces
    named = simplify_product(a)
    a, b = _one_block(named), _one_block(simplify_product(b))
    if same_group(a, b) or isinstance(a, Trivial):
        return True
    if isinstance(a, Translation) and isinstance(b, BlockScaleShift) and b.signs:
        return True   # +λ1: the same shift of every block, each with the sign +1 (an
        # edge only for two or more blocks, through the per-block shifts)
    if _one_cone_in_lorentz(a, b):
        return True
    if isinstance(a, BlockDiagonal) and _block_diagonal_within(a, b):
        return True
    if isinstance(a, Product) and isinstance(b, Product) and len(a.factors) == len(b.factors):
        if all(is_subgroup(x, y) for x, y in zip(a.factors, b.factors)):
            return True
    if isinstance(a, Product):
        # every factor inside b, or inside the same factor of b
        if all(is_subgroup(f, b) for f in a.factors):
            return True
        if isinstance(b, Product):
            return all(any(is_subgroup(f, h) for h in b.factors) for f in a.factors)
        return False
    if isinstance(b, Product) and any(is_subgroup(a, h) for h in b.factors):
        return True
    if (isinstance(a, Scaling) and not a.positive and isinstance(b, Product)
            and is_subgroup(PointReflection(a.n), b)
            and is_subgroup(Scaling(a.n, positive=True), b)):
        return True   # ℝ× = {±I} × ℝ×₊, its two parts in different factors of b
    if isinstance(a, PointReflection) and isinstance(b, BlockScaleShift) and b.signs:
        return True   # −I: the sign −1 on every block (not an edge: ±I's supergroups
        # would then include groups with translations)
    if (isinstance(a, SignFlips) and isinstance(b, BlockScaleShift) and b.block == 1
            and ((b.scales and not b.positive) or (not b.scales and b.signs))):
        return True   # a sign per coordinate: blocks of one with signs (the shifts are
        # not an edge: ℤ₂ⁿ's supergroups would then include groups with translations)
    if isinstance(a, (BlockPermutation, Scaling)):
        rotated_cones = _extra_class("RotatedConeGroup")
        if (isinstance(a, BlockPermutation) and isinstance(b, rotated_cones)
                and a.block == b.cone_dim):
            return True   # permuting blocks, and coordinates within a block (fixing its
            # all-ones axis, orthogonally): block permutations and O(S − 1) rotations
        if (isinstance(a, Scaling) and a.positive
                and isinstance(b, (ConeGroup, rotated_cones)) and b.scalings):
            return True   # cI, c > 0: the same positive scaling of every cone (not an
            # edge: ℝ×₊'s supergroups would then all be cone groups)
    if _in_plane_lattice_group(a, b):
        return True
    # Walk the single families above `a` (a product above it, such as ℝ×₊ × a, is
    # handled by the factor rules above; walking through it would recurse through
    # `simplify_product`).
    # Groups are compared under the names `_one_block` gives them, and a group it renames
    # also climbs by its own rule ((+λ1)^1 lists (±1,+λ1)^1, which +λ1 does not).
    seen = set()
    frontier = list(immediate_supergroups(a)) + (
        list(immediate_supergroups(named)) if named is not a else [])
    while frontier:
        g = frontier.pop()
        key = _family(g)
        if key in seen or isinstance(g, Product):
            continue
        seen.add(key)
        if same_group(_one_block(g), b):
            return True
        frontier.extend(immediate_supergroups(g))
    return False


def _one_block(group: AbstractGroup) -> AbstractGroup:
    """A per-block scale-shift whose one block is all n coordinates under the name the
    hierarchy gives it: (ℝ×,+λ1) / (ℝ×₊,+λ1) ([`ScaleShift`]) or +λ1 ([`Translation`]).
    A sign and a shift for the whole vector has no other name and is kept."""
    if (isinstance(group, BlockScaleShift) and group.n is not None
            and group.block == group.n and not group.signs):
        if group.scales:
            return ScaleShift(group.n, positive=group.positive)
        return Translation(group.n)
    return group


# Families F whose block-diagonal sums of members of F(kᵢ) are members of F(Σkᵢ).
_CLOSED_UNDER_BLOCK_SUMS = (Trivial, Permutation, SignFlips, SignedPermutation, Orthogonal,
                            SpecialOrthogonal, GeneralLinear, Unitary)


def _block_diagonal_within(a: BlockDiagonal, b: AbstractGroup) -> bool:
    """Inclusions of a block-diagonal group that its rule (⊂ GL(n)) does not reach:
    factor by factor in a block-diagonal group with the same blocks, and in O(n), Sₙ,
    Bₙ, … when each factor lies in that family on its own block (a block sum of
    permutations is a permutation). (Not edges: they hold block by block.)"""
    if isinstance(b, BlockDiagonal):
        return (len(a.factors) == len(b.factors)
                and all(f.n == h.n and is_subgroup(f, h) for f, h in zip(a.factors, b.factors)))
    return type(b) in _CLOSED_UNDER_BLOCK_SUMS and all(
        f.n is not None and is_subgroup(f, type(b)(f.n)) for f in a.factors)


def _one_cone_in_lorentz(a: AbstractGroup, b: AbstractGroup) -> bool:
    """The isometries of a single cone, diag(1, O(S − 1)) (axis first), preserve
    η = diag(1, −1, …, −1): they lie in O(1, S − 1). (Not an edge: the cone isometries'
    supergroups would then include the Lorentz group for every number of cones.)"""
    return (isinstance(a, ConeGroup) and isinstance(b, Lorentz) and not a.scalings
            and a.n is not None and a.n == a.cone_dim and a.n >= 2
            and b.n in (None, a.n))


# The finite groups of the plane that lie in a dihedral group Ψ(D_k) (the symmetries of
# k unit vectors at angles 2πj/k, one on the first axis), by the k they need: −I and
# the sign flips ℤ₂² = Ψ(D_2) need k even; the swap of the two coordinates (a reflection
# about the diagonal), D₂ = {±I, ±swap} and B₂ = Ψ(D_4) need 4 | k.
_NEEDS_K = ((PointReflection, 2), (SignFlips, 2), (Permutation, 4),
            (EvenSignedPermutation, 4), (SignedPermutation, 4))


def _in_plane_lattice_group(a: AbstractGroup, b: AbstractGroup) -> bool:
    """Inclusions on ℝ² between the dihedral groups and the coordinate groups, which no
    hierarchy edge holds (Ψ(D_k) ⊂ Ψ(D_m) for every multiple m of k would be infinitely
    many edges): Ψ(D_k) ⊂ Ψ(D_m) iff k | m, the groups of `_NEEDS_K` in Ψ(D_k), the
    triangle's Ψ(A₂) in Ψ(D_k) iff 6 | k, and Ψ(D_k) in ℤ₂² (k | 2) and in B₂ (k | 4)."""
    if 2 not in (a.n, b.n):
        return False
    if isinstance(a, Dihedral) and isinstance(b, Dihedral):
        return b.k % a.k == 0
    if isinstance(a, Simplex) and isinstance(b, Dihedral):
        # the triangle's vertices at 30°, 150°, 270°: its reflection axes (30°, 90°,
        # 150°) are among D_k's (multiples of 180°/k) iff 6 | k
        return b.k % 6 == 0
    if isinstance(b, Dihedral):
        return any(type(a) is cls and b.k % k == 0 for cls, k in _NEEDS_K)
    if isinstance(a, Dihedral):
        return (isinstance(b, SignFlips) and 2 % a.k == 0) or (
            isinstance(b, SignedPermutation) and 4 % a.k == 0)
    return False


@ft.singledispatch
def represent(group: AbstractGroup, element: Element, dtype=jnp.float32) -> Element:
    """Map an element sampled from a group to `group`'s representation.

    The identity for every group except SU(2) in its adjoint representation, where a
    standard 2×2 element $U$ becomes $R(U) \\in SO(3)$, and the scalar groups (I, {±I},
    ℝ×₊, ℝ×), which act on every dimension: $aI_m$ becomes $aI_n$ for the group's bound
    n. The checker uses this to pair the input and output representations of a
    mismatched equivariance (Bloch/Hopf, or $f(ax) = af(x)$ for $f: ℝ^m \\to ℝ^n$).
    """
    del group, dtype
    return element


@represent.register
def _(group: SU2, element: Element, dtype=jnp.float32) -> Element:
    return group.represent(element, dtype)


def _represent_scalar(group: AbstractGroup, element: Element, dtype=jnp.float32) -> Element:
    n = group.n
    if n is None or element.matrix.shape[-1] == n:
        return element
    a = element.matrix[..., :1, :1]
    batch = element.matrix.shape[:-2]
    matrix = a * jnp.eye(n, dtype=element.matrix.dtype)
    return Element(matrix, jnp.zeros(batch + (n,), element.shift.dtype))


SCALAR_GROUPS = (Trivial, PointReflection, Scaling)
for _cls in SCALAR_GROUPS:
    represent.register(_cls)(_represent_scalar)


def scalar_subgroup(group: AbstractGroup) -> AbstractGroup:
    """The largest scalar group $\\{aI\\}$ inside `group` that the hierarchy knows of:
    ℝ× (both ℝ×₊ and −I in it), ℝ×₊, {±I} or I. Scalars act on every dimension, so this
    is the part of an equivariance that can hold for a map between different
    dimensions."""
    positive = is_subgroup(Scaling(group.n, positive=True), group)
    sign = is_subgroup(PointReflection(group.n), group)
    if positive and sign:
        return Scaling(group.n)
    if positive:
        return Scaling(group.n, positive=True)
    return PointReflection(group.n) if sign else Trivial(group.n)
