"""Hypothesis strategies for symmetry checks (needs the `taxdl[testing]` extra).

- [`elements`][taxdl.testing.strategies.elements]: group elements of any family, drawn
  from a seed and sampled on device (one compiled sampler per group, dimension and
  batch size), so Hypothesis draws integers, never arrays.
- [`inputs`][taxdl.testing.strategies.inputs]: input arrays of a fixed shape that mix
  ordinary values with the edge cases that break symmetry code: the zero vector, tiny
  and huge norms (1e-30, 1e30), points on a Lorentz cone's boundary, repeated
  coordinates, vectors along and opposite the all-ones direction, one-hot axes.
- [`seeds`][taxdl.testing.strategies.seeds] / [`keys`][taxdl.testing.strategies.keys].

Shapes are fixed per strategy (bounded recompiles, STYLE rule 12).

**Example:**

```python
from hypothesis import given
import taxdl.testing.strategies as ts
from taxdl.groups import O

@given(ts.elements(O(), n=4, num=16), ts.inputs((4,)))
def test_norm_is_invariant(g, x):
    ...
```
"""

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np

from .. import groups as G
from ..groups import AbstractGroup, Element
from ._engine import real_dtype, sample_elements

__all__ = [
    "EDGE_CASES", "affine", "all_translations", "argument_inputs", "diagonal_affine",
    "diagonals", "dihedral", "elements", "euclidean", "even_signed_permutations",
    "general_linear", "inputs", "keys", "lorentz", "monomial_affine", "monomials",
    "orthogonal", "orthogonal_complement", "permutation_phases", "permutations",
    "positive_monomials", "scale_shifts", "scale_translations", "scalings", "seeds",
    "signed_permutations", "simplex", "special_orthogonal", "su2", "translations",
    "trivial", "unitary",
]

EDGE_CASES = ("zero", "tiny", "huge", "ones", "repeated", "cone_boundary", "axis",
              "near_ones")
"""The edge-case families that [`inputs`][taxdl.testing.strategies.inputs] mixes in."""

_TINY, _HUGE = 1e-30, 1e30
_ROOM = 2.0 ** 4
"""Room left for a group element's scaling (scalings and well-conditioned maps stretch by
at most 4) where a dtype's range is too narrow for 1e-30, 1e30 and the 2¹⁶ margin above
the smallest normal number (float16)."""


def _flush_margin(rdt) -> float:
    # 2¹⁶ where the exponent range allows it (float32, float64, bfloat16); float16's
    # smallest normal number is 6.1e-5, and 2¹⁶ times it would be 4
    return 2.0 ** 16 if jnp.finfo(rdt).maxexp >= 128 else _ROOM


def _edge_norms(rdt) -> tuple[float, float]:
    """The tiny and huge norms of the edge cases in the real dtype `rdt`: 1e-30 and 1e30,
    clamped into its normal range with room for a group element's scaling."""
    fi = jnp.finfo(rdt)
    floor = float(fi.tiny) * _flush_margin(rdt)
    return max(_TINY, _ROOM * floor), min(_HUGE, float(fi.max) / _ROOM)


def seeds() -> st.SearchStrategy[int]:
    """Non-negative 32-bit integer seeds (shrink towards 0)."""
    return st.integers(0, 2**32 - 1)


def keys() -> st.SearchStrategy:
    """JAX PRNG keys built from [`seeds`][taxdl.testing.strategies.seeds]."""
    return seeds().map(jax.random.key)


def elements(group: AbstractGroup, n: int | None = None, num: int = 1,
             dtype=jnp.float32, *, out: AbstractGroup | None = None
             ) -> st.SearchStrategy[Element]:
    """A batch of `num` elements of `group` (bound to `n` unless already bound), sampled
    on device from a drawn seed: Haar for compact groups, exact for finite ones, the
    documented well-conditioned distribution otherwise.

    With `out` (a group bound to the output dimension, e.g. `SU2(3, rep="adjoint")`),
    draws pairs `(element, element in out's representation)`.
    """
    bound = group.on(n) if n is not None else group
    if not bound.bound:
        raise ValueError(f"{group.name} is a family: pass the dimension `n`.")

    def sample(seed: int):
        e, o = sample_elements(bound, out, jax.random.key(seed), num, dtype)
        return e if out is None else (e, o)

    return seeds().map(sample)


def _float_strategy(dtype, lo: float, hi: float) -> st.SearchStrategy[float]:
    width = {"float16": 16, "float32": 32}.get(np.dtype(real_dtype(dtype)).name, 64)
    if np.dtype(real_dtype(dtype)).name == "bfloat16":
        width = 32   # drawn as float32 (same exponent range), rounded when cast
    return st.floats(lo, hi, width=width, allow_nan=False, allow_infinity=False,
                     allow_subnormal=False)


def _flush_near_subnormal(x: np.ndarray) -> np.ndarray:
    """`x` with magnitudes within a factor 2¹⁶ (2⁴ in float16) of the smallest normal
    number set to 0. A
    group element's scaling would make them subnormal, and XLA flushes subnormals to 0
    (on CPU and most accelerators), so f(g·x) would see zeros where f(x) does not: a
    property of the platform, not of f."""
    floor = float(jnp.finfo(x.dtype).tiny) * _flush_margin(x.dtype)
    return np.where(np.abs(x) < floor, np.zeros_like(x), x)


def _direction(v: np.ndarray) -> np.ndarray:
    r = np.linalg.norm(v)
    if r == 0 or not np.isfinite(r):
        v = np.zeros_like(v)
        v.flat[0] = 1.0
        return v
    return v / r


def _real_inputs(shape: tuple[int, ...], dtype, edge_cases: bool, max_magnitude: float):
    rdt = np.dtype(real_dtype(dtype))
    # Hypothesis draws arrays of NumPy's own float dtypes; bfloat16 is drawn as float32
    drawn = rdt if rdt.name in ("float16", "float32", "float64") else np.dtype(np.float32)
    n = shape[-1] if shape else 1
    vec = (n,)
    general = hnp.arrays(drawn, shape, elements=_float_strategy(rdt, -max_magnitude,
                                                               max_magnitude))
    if drawn != rdt:
        general = general.map(lambda x: x.astype(rdt))
    if not edge_cases or not shape:
        return general
    tiny, huge = _edge_norms(rdt)
    unit = hnp.arrays(np.float64, vec, elements=st.floats(-1, 1)).map(_direction)
    scalar = _float_strategy(rdt, -max_magnitude, max_magnitude)

    def broadcast(v):
        # a cone boundary point or a near-ones point may exceed max_magnitude: clipped
        # where that would leave the room a group element needs (float16)
        v = np.clip(np.asarray(v, np.float64), -huge, huge)
        return np.broadcast_to(v, shape).astype(rdt)

    def cone(args):
        body, sign = args
        if n < 2:
            return broadcast(body[:1])
        return broadcast(np.concatenate([[sign * np.linalg.norm(body[1:])], body[1:]]))

    def repeated(args):
        values, idx = args
        return broadcast(np.asarray(values)[np.asarray(idx) % len(values)])

    edges = [
        st.just(np.zeros(shape, rdt)),
        unit.map(lambda u: broadcast(tiny * u)),
        unit.map(lambda u: broadcast(huge * u)),
        scalar.map(lambda c: broadcast(np.full(vec, c))),
        st.tuples(st.lists(scalar, min_size=1, max_size=max(1, n // 2)),
                  st.lists(st.integers(0, n), min_size=n, max_size=n)).map(repeated),
        st.tuples(hnp.arrays(np.float64, vec, elements=st.floats(-max_magnitude,
                                                                 max_magnitude)),
                  st.sampled_from([1.0, -1.0])).map(cone),
        st.tuples(st.integers(0, n - 1), scalar).map(
            lambda a: broadcast(np.eye(n)[a[0]] * a[1])),
        st.tuples(scalar, hnp.arrays(np.float64, vec, elements=st.floats(-1e-3, 1e-3))).map(
            lambda a: broadcast(a[0] * (1 + a[1]))),
    ]
    return st.one_of(general, *edges)


def inputs(shape: tuple[int, ...], dtype=jnp.float32, *, edge_cases: bool = True,
           max_magnitude: float = 1e3) -> st.SearchStrategy[np.ndarray]:
    """Arrays of a fixed `shape` and `dtype` (real or complex).

    Ordinary draws have entries in [−`max_magnitude`, `max_magnitude`] and shrink towards
    the zero vector; with `edge_cases` the strategy also draws, along the last axis
    (broadcast over leading axes): the zero vector, a random direction of norm 1e-30 or
    1e30, $c\\mathbf 1$ for any sign of $c$, repeated coordinates, points on the boundary
    $x_0 = \\pm\\|x_{1:}\\|$ of the Lorentz cone, one-hot axes $c\\,\\hat e_i$ and points
    near the all-ones direction. Complex dtypes combine two such draws. Nonzero
    magnitudes below 2¹⁶ times the smallest normal number are drawn as 0 (a group
    element could make them subnormal, and XLA flushes those to 0).

    Half precision: bfloat16 has float32's exponent range and keeps all of the above
    (draws are rounded from float32). float16's normal range, 6.1e-5 to 65504, holds
    neither 1e-30 nor 1e30: there the margin above the smallest normal number is 2⁴
    instead of 2¹⁶, and the tiny and huge norms are clamped to 2⁴ times that threshold
    (1.6e-2) and to the largest finite number over 2⁴ (4094), so that a group element
    (which scales by at most 4) keeps every draw finite and normal; edge-case entries
    are clipped to that huge norm.

    Raises `ValueError` for a `shape` with no entries (a zero-size axis) and for a
    `max_magnitude` beyond the dtype's largest finite number.
    """
    shape = tuple(shape)
    if any(int(d) <= 0 for d in shape):
        raise ValueError(f"`shape` must have positive sizes (an input with no entries has "
                         f"nothing to check), got {shape}.")
    largest = float(jnp.finfo(real_dtype(dtype)).max)
    if not 0 < max_magnitude <= largest:
        raise ValueError(f"`max_magnitude` must be positive and at most {largest:.6g}, the "
                         f"largest finite {np.dtype(real_dtype(dtype)).name}, got "
                         f"{max_magnitude!r}.")
    real = _real_inputs(shape, dtype, edge_cases, max_magnitude).map(_flush_near_subnormal)
    if jnp.issubdtype(jnp.dtype(dtype), jnp.complexfloating):
        cdt = np.dtype(dtype)
        return st.tuples(real, real).map(lambda ab: (ab[0] + 1j * ab[1]).astype(cdt))
    return real


def argument_inputs(shapes: tuple[tuple[int, ...], ...], dtype=jnp.float32, **kwargs
                    ) -> st.SearchStrategy[tuple[np.ndarray, ...]]:
    """A tuple of [`inputs`][taxdl.testing.strategies.inputs], one per argument shape."""
    return st.tuples(*(inputs(s, dtype, **kwargs) for s in shapes))


def trivial(n: int, num: int = 1, dtype=jnp.float32):
    """Elements of the trivial group I (identities); see `elements`."""
    return elements(G.Trivial(), n, num, dtype)


def permutations(n: int, num: int = 1, dtype=jnp.float32):
    """Uniform elements of Sₙ (permutation matrices); see `elements`."""
    return elements(G.Permutation(), n, num, dtype)


def even_signed_permutations(n: int, num: int = 1, dtype=jnp.float32):
    """Uniform elements of Dₙ (signed permutations, even number of flips)."""
    return elements(G.EvenSignedPermutation(), n, num, dtype)


def signed_permutations(n: int, num: int = 1, dtype=jnp.float32):
    """Uniform elements of Bₙ (signed permutations)."""
    return elements(G.SignedPermutation(), n, num, dtype)


def orthogonal(n: int, num: int = 1, dtype=jnp.float32):
    """Haar elements of O(n)."""
    return elements(G.Orthogonal(), n, num, dtype)


def special_orthogonal(n: int, num: int = 1, dtype=jnp.float32):
    """Haar elements of SO(n)."""
    return elements(G.SpecialOrthogonal(), n, num, dtype)


def general_linear(n: int, num: int = 1, dtype=jnp.float32):
    """Well-conditioned elements of GL(n) (condition number ≤ 4)."""
    return elements(G.GeneralLinear(), n, num, dtype)


def orthogonal_complement(n: int, num: int = 1, dtype=jnp.float32):
    """Haar elements of O(n−1) acting on the hyperplane orthogonal to 1."""
    return elements(G.OrthogonalComplement(), n, num, dtype)


def scalings(n: int, num: int = 1, dtype=jnp.float32, positive: bool = False):
    """Global scalings a·x (ℝ×, or ℝ×₊ with `positive`)."""
    return elements(G.Scaling(positive=positive), n, num, dtype)


def translations(n: int, num: int = 1, dtype=jnp.float32):
    """Translations x + λ1."""
    return elements(G.Translation(), n, num, dtype)


def all_translations(n: int, num: int = 1, dtype=jnp.float32):
    """Translations x + t of T(n), t ~ N(0, I)."""
    return elements(G.Translations(), n, num, dtype)


def euclidean(n: int, num: int = 1, dtype=jnp.float32):
    """Elements x ↦ Qx + t of E(n): Q Haar-orthogonal, t ~ N(0, I)."""
    return elements(G.Euclidean(), n, num, dtype)


def affine(n: int, num: int = 1, dtype=jnp.float32):
    """Elements x ↦ Ax + t of Aff(n): A well-conditioned (not Haar), t ~ N(0, I)."""
    return elements(G.Affine(), n, num, dtype)


def positive_monomials(n: int, num: int = 1, dtype=jnp.float32):
    """Elements PD of Sₙ⋉(ℝ×₊)ⁿ: a uniform permutation, positive diagonal entries
    log-uniform in [½, 2]."""
    return elements(G.PositiveMonomial(), n, num, dtype)


def monomials(n: int, num: int = 1, dtype=jnp.float32):
    """Elements PD of Sₙ⋉(ℝ×)ⁿ: a uniform signed permutation, magnitudes log-uniform in
    [½, 2]."""
    return elements(G.Monomial(), n, num, dtype)


def monomial_affine(n: int, num: int = 1, dtype=jnp.float32):
    """Elements x ↦ PDx + t of Sₙ⋉(ℝ×)ⁿ⋉ℝⁿ: PD as in `monomials`, t ~ N(0, I)."""
    return elements(G.MonomialAffine(), n, num, dtype)


def diagonals(n: int, num: int = 1, dtype=jnp.float32, positive: bool = False):
    """Elements D of (ℝ×)ⁿ (or (ℝ×₊)ⁿ): independent signs (unless `positive`),
    magnitudes log-uniform in [½, 2]."""
    return elements(G.Diagonal(positive=positive), n, num, dtype)


def diagonal_affine(n: int, num: int = 1, dtype=jnp.float32, positive: bool = False):
    """Elements x ↦ Dx + t of (ℝ×)ⁿ⋉ℝⁿ (or (ℝ×₊)ⁿ⋉ℝⁿ): D as in `diagonals`, t ~ N(0, I)."""
    return elements(G.DiagonalAffine(positive=positive), n, num, dtype)


def scale_shifts(n: int, num: int = 1, dtype=jnp.float32, positive: bool = False):
    """Elements x ↦ a x + λ1 of (ℝ×, +λ1)."""
    return elements(G.ScaleShift(positive=positive), n, num, dtype)


def scale_translations(n: int, num: int = 1, dtype=jnp.float32, positive: bool = False):
    """Elements x ↦ a x + t of ℝ×⋉ℝⁿ (or ℝ×₊⋉ℝⁿ): a as in `scalings`, t ~ N(0, I)."""
    return elements(G.ScaleTranslation(positive=positive), n, num, dtype)


def unitary(n: int, num: int = 1, dtype=jnp.float32):
    """Haar elements of U(n) (complex matrices)."""
    return elements(G.Unitary(), n, num, dtype)


def permutation_phases(n: int, num: int = 1, dtype=jnp.float32):
    """Uniform elements of Sₙ × U(1)."""
    return elements(G.PermutationPhase(), n, num, dtype)


def simplex(n: int, num: int = 1, dtype=jnp.float32):
    """Uniform elements of the symmetry group of the regular simplex in ℝⁿ."""
    return elements(G.Simplex(), n, num, dtype)


def dihedral(k: int = 8, num: int = 1, dtype=jnp.float32):
    """Uniform elements of the dihedral group of order 2k on ℝ²."""
    return elements(G.Dihedral(k=k), 2, num, dtype)


def lorentz(n: int, num: int = 1, dtype=jnp.float32):
    """Elements of the Lorentz group O(1, n−1) (rapidity ≤ 1; not Haar)."""
    return elements(G.Lorentz(), n, num, dtype)


def su2(num: int = 1, dtype=jnp.float32, rep: str = "standard"):
    """Haar elements of SU(2) in the standard (ℂ²) or adjoint (ℝ³) representation."""
    return elements(G.SU2(rep=rep), 2 if rep == "standard" else 3, num, dtype)
