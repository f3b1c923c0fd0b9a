"""Hypothesis strategies of taxdl.testing: group elements of every family (members of
their group, fixed shapes) and inputs that reach every edge case."""

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import find, given
from hypothesis.errors import NoSuchExample

import taxdl.testing.strategies as ts
from taxdl import groups as G
from taxdl.testing import hypothesis_settings

FAMILIES = [
    (G.Permutation(), 8), (G.EvenSignedPermutation(), 8), (G.SignedPermutation(), 8),
    (G.Orthogonal(), 8), (G.SpecialOrthogonal(), 8), (G.GeneralLinear(), 8),
    (G.OrthogonalComplement(), 8), (G.Scaling(), 8), (G.Translation(), 8),
    (G.ScaleShift(positive=True), 8), (G.Simplex(), 8), (G.Dihedral(k=6), 2),
    (G.Lorentz(), 4), (G.Unitary(), 3), (G.PermutationPhase(), 3), (G.SU2(), 2),
    (G.ConeGroup(cone_dim=4), 8), (G.Translations(), 8), (G.Euclidean(), 8),
    (G.Affine(), 8), (G.PositiveMonomial(), 8), (G.Monomial(), 8),
]


@pytest.mark.parametrize("group,n", FAMILIES, ids=lambda v: getattr(v, "name", str(v)))
def test_elements_are_members(group, n):
    bound = group.on(n)

    @hypothesis_settings(3)
    @given(ts.elements(group, n, num=32))
    def run(e):
        assert e.matrix.shape == (32, n, n) and e.shift.shape == (32, n)
        assert bool(jnp.all(bound.contains(e, atol=1e-4)))

    run()


def test_named_family_strategies():
    e = find(ts.orthogonal(5, num=2), lambda e: True)
    assert e.matrix.shape == (2, 5, 5)
    assert find(ts.su2(num=3, rep="adjoint"), lambda e: True).matrix.shape == (3, 3, 3)
    for make, group in ((ts.all_translations, G.Translations(4)), (ts.euclidean, G.Euclidean(4)),
                        (ts.affine, G.Affine(4)), (ts.monomials, G.Monomial(4)),
                        (ts.positive_monomials, G.PositiveMonomial(4))):
        e = find(make(4, num=3), lambda e: True)
        assert e.matrix.shape == (3, 4, 4) and bool(jnp.all(group.contains(e, atol=1e-4)))


def test_input_shapes_and_dtypes_are_fixed():
    @hypothesis_settings(60)
    @given(ts.inputs((3, 6)), ts.inputs((4,), jnp.float64), ts.inputs((4,), jnp.complex64))
    def run(a, b, c):
        assert a.shape == (3, 6) and a.dtype == np.float32
        assert b.shape == (4,) and b.dtype == np.float64
        assert c.shape == (4,) and c.dtype == np.complex64
        assert np.all(np.isfinite(a)) and np.all(np.isfinite(c))

    run()


@pytest.mark.parametrize("name,predicate", [
    ("zero vector", lambda x: not np.any(x)),
    ("tiny norm", lambda x: 0 < np.linalg.norm(x.astype(np.float64)) < 1e-29),
    ("huge norm", lambda x: np.linalg.norm(x.astype(np.float64)) > 1e29),
    ("along +1", lambda x: x[0] > 0 and np.all(x == x[0])),
    ("along -1", lambda x: x[0] < 0 and np.all(x == x[0])),
    ("cone boundary", lambda x: np.linalg.norm(x[1:].astype(np.float64)) > 1 and
     abs(abs(x[0]) - np.linalg.norm(x[1:].astype(np.float64))) < 1e-5 * abs(x[0])),
    ("repeated coordinates", lambda x: 1 < len(np.unique(x)) < len(x)),
    ("one-hot axis", lambda x: np.count_nonzero(x) == 1),
])
def test_inputs_reach_edge_cases(name, predicate):
    x = find(ts.inputs((6,)), predicate, settings=hypothesis_settings(2000))
    assert predicate(x), name


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_inputs_keep_away_from_the_smallest_normal_number(dtype):
    """No nonzero coordinate within 2¹⁶ of the smallest normal number: a group element's
    scaling would make it subnormal, which XLA flushes to 0."""
    floor = float(np.finfo(dtype).tiny) * 2.0 ** 16
    with pytest.raises(NoSuchExample):
        find(ts.inputs((6,), dtype), lambda x: np.any((x != 0) & (np.abs(x) < floor)),
             settings=hypothesis_settings(2000))


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
def test_half_precision_inputs_stay_finite_and_reach_their_largest_norm(dtype):
    """1e30 is infinite in float16: there the huge (and tiny) norms are clamped into the
    dtype's normal range, with room for a group element's scaling; bfloat16 (float32's
    exponent range) keeps them. Every draw is finite."""
    fi = jnp.finfo(dtype)

    @hypothesis_settings(300)
    @given(ts.inputs((6,), dtype))
    def run(x):
        assert x.shape == (6,) and x.dtype == dtype
        assert np.all(np.isfinite(x.astype(np.float32)))
        assert np.all(np.abs(x.astype(np.float32)) <= float(fi.max) / 16)

    run()
    huge = 1e30 if dtype == jnp.bfloat16 else float(fi.max) / 16

    def is_huge(x):
        return np.linalg.norm(x.astype(np.float64)) > 0.5 * huge

    x = find(ts.inputs((6,), dtype), is_huge, settings=hypothesis_settings(2000))
    assert is_huge(x) and np.all(np.isfinite(x.astype(np.float32)))


def test_float16_inputs_keep_ordinary_small_values():
    """In float16 the smallest normal number is 6.1e-5: values are set to 0 only within
    2⁴ of it (2¹⁶ of it would be 4, every ordinary value below it lost)."""
    floor = float(jnp.finfo(jnp.float16).tiny) * 2.0 ** 4
    x = find(ts.inputs((6,), jnp.float16), lambda x: np.any((x != 0) & (np.abs(x) < 1)),
             settings=hypothesis_settings(2000))
    assert np.any((x != 0) & (np.abs(x) < 1))
    with pytest.raises(NoSuchExample):
        find(ts.inputs((6,), jnp.float16), lambda x: np.any((x != 0) & (np.abs(x) < floor)),
             settings=hypothesis_settings(2000))


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4)])
def test_inputs_refuse_an_empty_shape(shape):
    with pytest.raises(ValueError, match="`shape`.*no entries"):
        ts.inputs(shape)


def test_inputs_refuse_a_magnitude_beyond_the_dtypes_range():
    with pytest.raises(ValueError, match="`max_magnitude`.*float16"):
        ts.inputs((4,), jnp.float16, max_magnitude=1e5)
