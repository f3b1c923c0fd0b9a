"""The checking engine: negative controls must be caught with a clear report, positive
controls must pass, and the lower-level pieces must be usable alone."""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _models import equivariant_taxonomy

import taxdl.nn as tnn
from taxdl.groups import (
    BlockScaleShift,
    ConformalLinear,
    Element,
    EvenSignedPermutation,
    GeneralLinear,
    Orthogonal,
    Permutation,
    PointReflection,
    Product,
    ScaleShift,
    Scaling,
    SignedPermutation,
    SpecialOrthogonal,
    Translation,
    Trivial,
)
from taxdl.taxonomy import (
    AbstractActivation,
    AbstractInitialiser,
    AbstractLayer,
    Flavour,
    Signature,
    Taxonomy,
    reinitialise,
    signature,
    transport,
)
from taxdl.testing import (
    SymmetryViolation,
    assert_algebraic,
    assert_closure,
    assert_maximal,
    assert_probabilistic,
    check,
    hypothesis_settings,
    symmetry_error,
)

FAST = dict(examples=8, batch=32)


class ReLUClaimedOrthogonal(AbstractActivation):
    """Negative control: elementwise ReLU declared O(n)-equivariant."""

    taxonomy: ClassVar[Taxonomy] = equivariant_taxonomy(Orthogonal())

    def __call__(self, x, *, key=None):
        return jax.nn.relu(x)


class L1Isotropic(AbstractActivation):
    """Negative control: an "isotropic" activation that uses the L1 norm,
    tanh(‖x‖₁) x/‖x‖₁: only Bₙ-equivariant, declared O(n)."""

    taxonomy: ClassVar[Taxonomy] = equivariant_taxonomy(Orthogonal())

    def __call__(self, x, *, key=None):
        r = jnp.sum(jnp.abs(x))
        safe = jnp.where(r > 0, r, 1)
        return jnp.where(r > 0, jnp.tanh(safe) / safe, 1) * x


class TanhClaimedPermutation(AbstractActivation):
    """Negative control: elementwise tanh declared only Sₙ-equivariant (it is Bₙ)."""

    taxonomy: ClassVar[Taxonomy] = equivariant_taxonomy(Permutation())

    def __call__(self, x, *, key=None):
        return jnp.tanh(x)


def test_relu_claimed_orthogonal_is_caught():
    with pytest.raises(SymmetryViolation) as info:
        check(ReLUClaimedOrthogonal(), n=8, **FAST)
    message = str(info.value)
    assert "algebraic E O(n)" in message and "does not hold" in message
    assert "group element of O(8)" in message and "lhs =" in message and "rhs =" in message
    assert "tolerance" in message
    ce = info.value.counterexample
    # the reported counterexample really violates the relation, independently evaluated
    m, x = np.asarray(ce.matrix, np.float64), np.asarray(ce.inputs[0], np.float64)
    lhs, rhs = np.maximum(m @ x, 0), m @ np.maximum(x, 0)
    assert np.max(np.abs(lhs - rhs)) > 1e-3 * max(np.linalg.norm(lhs), np.linalg.norm(rhs))


def test_l1_isotropic_is_caught():
    with pytest.raises(SymmetryViolation, match="algebraic E O\\(n\\)"):
        check(L1Isotropic(), n=8, **FAST)
    # ...while the symmetry it does have, Bₙ, passes on its own.
    assert_algebraic(L1Isotropic(), SignedPermutation(), "E", n=8, **FAST)


def test_tanh_declared_only_permutations_is_not_maximal():
    with pytest.raises(SymmetryViolation, match="may not be maximal") as info:
        check(TanhClaimedPermutation(), n=7, **FAST)
    cell = info.value.cell
    assert cell.status == "not maximal"
    missing = {m.group for m in cell.maximality if m.found is False}
    # the immediate supergroups Dₙ ⊂ Bₙ and {±I} × Sₙ (tanh is odd) hold too
    assert missing == {"D_7", "±I_7 × S_7"}
    # in an even dimension −I ∈ Dₙ: Dₙ holds {±I} × Sₙ and is not tested on its own
    with pytest.raises(SymmetryViolation, match="may not be maximal") as info:
        check(TanhClaimedPermutation(), n=8, **FAST)
    assert {m.group for m in info.value.cell.maximality if m.found is False} == {
        "±I_8 × S_8"}


class ShiftedReLUClaimedPermutation(AbstractActivation):
    """Negative control: relu(x + mean x), declared Sₙ-equivariant. It is also positively
    homogeneous (ℝ×₊ × Sₙ), which no per-coordinate scaling, sign flip or rotation fixing
    1 preserves: only the scalar extension of Sₙ exposes the under-claim."""

    taxonomy: ClassVar[Taxonomy] = equivariant_taxonomy(Permutation())

    def __call__(self, x, *, key=None):
        return jax.nn.relu(x + jnp.mean(x))


class OddShiftedTanhClaimedPermutation(AbstractActivation):
    """Negative control: tanh(x + mean x), declared Sₙ-equivariant. It is odd
    ({±I} × Sₙ), and in an odd dimension −I is not in Dₙ: only {±I} × Sₙ exposes the
    under-claim."""

    taxonomy: ClassVar[Taxonomy] = equivariant_taxonomy(Permutation())

    def __call__(self, x, *, key=None):
        return jnp.tanh(x + jnp.mean(x))


class MeanPreservingSigmoidClaimedPermutation(AbstractActivation):
    """Negative control: sigmoid(x − mean x) + mean x, declared Sₙ-equivariant. It also
    commutes with the shifts along 1, which permutations fix (+λ1 × Sₙ): neither a scalar
    extension nor Dₙ or O(n−1) holds, so only that extension exposes the under-claim."""

    taxonomy: ClassVar[Taxonomy] = equivariant_taxonomy(Permutation())

    def __call__(self, x, *, key=None):
        return jax.nn.sigmoid(x - jnp.mean(x)) + jnp.mean(x)


@pytest.mark.parametrize("prim, n, holds", [
    (ShiftedReLUClaimedPermutation(), 6, "ℝ×₊ × S_6"),
    (OddShiftedTanhClaimedPermutation(), 5, "±I_5 × S_5"),
], ids=["positively-homogeneous", "odd"])
def test_under_claim_below_a_scalar_extension_is_caught(prim, n, holds):
    with pytest.raises(SymmetryViolation, match="may not be maximal") as info:
        check(prim, n=n, **FAST)
    cell = info.value.cell
    assert {m.group for m in cell.maximality if m.found is False} == {holds}
    # ...and the declared group with the scalars added is maximal
    ext = holds.split(" × ")[0]
    group = Product(Scaling(positive=True) if ext == "ℝ×₊" else PointReflection(),
                    Permutation())
    assert_algebraic(prim, group, "E", n=n, **FAST)
    result = assert_maximal(prim, group, "E", n=n, **FAST)
    assert result.maximality and all(m.found for m in result.maximality)


def _homogeneous_sum_map(x):
    """x (1 + (Σx)²/‖x‖²): homogeneous of degree one for every real scale (ℝ×) and
    permutation-equivariant; no sign flip of one coordinate, rotation or shift keeps it."""
    return x * (1 + jnp.sum(x) ** 2 / jnp.sum(x * x))


@pytest.mark.parametrize("fn, scalars, n, holds", [
    (lambda x: jax.nn.relu(x + jnp.mean(x)), Scaling(positive=True), 4, "ℝ×₊ × S_4"),
    (lambda x: jnp.tanh(x + jnp.mean(x)), PointReflection(), 5, "±I_5 × S_5"),
    (_homogeneous_sum_map, Scaling(), 4, "ℝ× × S_4"),
], ids=["positive-scalings", "point-reflection", "scalings"])
def test_under_claim_of_only_scalars_is_caught(fn, scalars, n, holds):
    """The same under-claims declared from the scalar side: a map that is homogeneous (or
    odd) and permutation-equivariant, declared only ℝ×₊ (ℝ×, {±I}), is reported as
    possibly non-maximal, with the scalars × Sₙ the supergroup that holds."""
    assert_algebraic(fn, scalars, "E", n=n, **FAST)
    with pytest.raises(SymmetryViolation, match="may not be maximal") as info:
        assert_maximal(fn, scalars, "E", n=n, **FAST)
    assert {m.group for m in info.value.cell.maximality if m.found is False} == {holds}
    # a map with only the scalar symmetry passes: a fixed mixing breaks the permutations
    mix = jax.random.normal(jax.random.key(1), (n, n))
    only = {"ℝ×₊": lambda x: jax.nn.relu(mix @ x), "±I": lambda x: jnp.tanh(mix @ x),
            "ℝ×": lambda x: _homogeneous_sum_map(mix @ x)}[holds.split(" × ")[0].split("_")[0]]
    result = assert_maximal(only, scalars, "E", n=n, **FAST)
    assert result.maximality and all(m.found for m in result.maximality)


def test_under_claim_below_the_shifts_along_ones_is_caught():
    prim = MeanPreservingSigmoidClaimedPermutation()
    with pytest.raises(SymmetryViolation, match="may not be maximal") as info:
        check(prim, n=5, **FAST)
    assert {m.group for m in info.value.cell.maximality if m.found is False} == {
        "+λ1 × S_5"}
    # ...and Sₙ with the shifts is maximal
    group = Product(Translation(), Permutation())
    assert_algebraic(prim, group, "E", n=5, **FAST)
    result = assert_maximal(prim, group, "E", n=5, **FAST)
    assert result.maximality and all(m.found for m in result.maximality)


class _ParameterFreeMap(AbstractActivation):
    """A parameter-free map `fn` whose three generations all declare (L, R, E)."""

    fn: ClassVar = None

    def __call__(self, x, *, key=None):
        return type(self).fn(x)


def _map_declaring(fn, L=None, R=None, E=None):
    decl = Taxonomy(closure=(L, R, E), probabilistic=(L, R, E), algebraic=(L, R, E))
    return type("MapDeclaring", (_ParameterFreeMap,),
                {"fn": staticmethod(fn), "taxonomy": decl})()


def test_left_translations_of_a_zero_output_are_not_zero():
    """L cells scale a translation by f(x)'s size; where f(x) = 0 that must not make the
    translation 0 (it would never be refuted, nor could a supergroup with translations)."""
    from taxdl.groups import Affine

    zero = lambda x: 0 * x  # noqa: E731
    # false: g·0 = t ≠ 0 for a translation t
    with pytest.raises(SymmetryViolation, match="algebraic L") as info:
        check(_map_declaring(zero, L=Affine(), R=Affine(), E=GeneralLinear()), n=4, **FAST)
    assert info.value.cell.generation == "algebraic"
    # true and maximal: Aff(n) ⊋ GL(n) is refuted by its translations
    report = check(_map_declaring(zero, L=GeneralLinear(), R=Affine(), E=GeneralLinear()),
                   n=4, **FAST)
    cell = report.cell("algebraic", "L")
    assert cell.maximality and all(m.found for m in cell.maximality)
    # the scale still follows a large output: a huge constant output is not L-invariant
    # under its shifts along 1 (a unit shift would vanish in its rounding)
    big = lambda x: 0 * x + 1e8  # noqa: E731
    with pytest.raises(SymmetryViolation, match="algebraic L"):
        check(_map_declaring(big, L=Translation(), R=Affine()), n=4, **FAST)


def test_maximality_in_dimension_one_tests_past_coinciding_supergroups():
    # At n = 1, S₁ = D₁ = SO(1) = I and B₁ = O(1): a supergroup equal to the declared
    # group is no test, so its own supergroups are tested in its place.
    # (B₁ itself is not tested above S₁ either: it holds ±I₁ × S₁, which is.)
    report = check(tnn.GELU(), n=1, **FAST)
    cell = report.cell("algebraic", "E")
    tested = {m.group: m for m in cell.maximality}
    assert "D_1" not in tested and tested["±I_1 × S_1"].found  # GELU is not odd
    cell = report.cell("algebraic", "L")
    assert {"S_1", "SO(1)"}.isdisjoint(m.group for m in cell.maximality)
    assert all(m.found for m in cell.maximality)
    # tanh: B₁ = O(1), so E(1) is tested in place of O(1), and fails (no translations)
    cell = check(tnn.Tanh(), n=1, **FAST).cell("algebraic", "E")
    tested = {m.group: m for m in cell.maximality}
    assert "O(1)" not in tested and tested["E(1)"].found
    assert "in place of O(1), equal to B_1" in tested["E(1)"].note
    # and an under-claim in dimension one is still caught (tanh is odd: ±I₁ × S₁ = B₁
    # holds)
    with pytest.raises(SymmetryViolation, match="may not be maximal") as info:
        check(TanhClaimedPermutation(), n=1, **FAST)
    assert {m.group for m in info.value.cell.maximality if m.found is False} == {
        "±I_1 × S_1"}


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_maximality_is_searched_far_from_unit_scale(dtype):
    # a clip at 1e4 is Bₙ-equivariant and no more, but only inputs beyond the bound show
    # it (NumPy float64: rotating (2e4, 0) by 45° and clipping differs from clipping then
    # rotating); the declared cells are checked up to norms of 1e30, so is maximality
    b, c = 1e4, np.cos(np.pi / 4)
    q = np.array([[c, -c], [c, c]])
    x = np.array([2e4, 0.0])
    assert np.max(np.abs(np.clip(q @ x, -b, b) - q @ np.clip(x, -b, b))) > 1e3
    result = assert_maximal(tnn.CoordinateClip(bound=b), SignedPermutation(), "E", n=8,
                            dtype=dtype)
    assert {m.group: m.found for m in result.maximality}["O(8)"]


def test_check_inside_a_users_given_test():
    from hypothesis import given
    from hypothesis import strategies as st

    seen = []

    @hypothesis_settings(2)
    @given(st.sampled_from([3, 5]))
    def users_test(n):
        check(tnn.IsotropicTanh(), n=n, examples=2, batch=8)
        with pytest.raises(SymmetryViolation):
            check(ReLUClaimedOrthogonal(), n=n, examples=2, batch=8, maximality=False)
        seen.append(n)

    users_test()
    assert seen


def test_positive_control_report():
    report = check(tnn.IsotropicTanh(), n=8, **FAST)
    assert report.passed
    cell = report.cell("algebraic", "E")
    assert cell.status == "passed" and cell.checks >= 8 * 32
    assert cell.max_error <= cell.tolerance
    assert [m.group for m in cell.maximality] == ["ℝ×·O(8)", "E(8)"]
    assert all(m.found for m in cell.maximality)
    assert "PASSED" in str(report)


def test_symmetry_error_returns_both_sides_and_vmaps():
    g = Orthogonal(8).sample(jax.random.key(0), 16)
    x = jax.random.normal(jax.random.key(1), (8,))
    f = tnn.IsotropicTanh()
    lhs, rhs = jax.jit(jax.vmap(lambda e: symmetry_error(f, e, x, "E")))(g)
    assert lhs.shape == rhs.shape == (16, 8)
    np.testing.assert_allclose(lhs, rhs, atol=1e-6)
    lhs, rhs = jax.vmap(lambda e: symmetry_error(jax.nn.relu, e, x, "E"))(g)
    assert np.max(np.abs(lhs - rhs)) > 0.1
    # R and L flavours: invariance of the norm, and of a constant
    lhs, rhs = symmetry_error(jnp.linalg.norm, g[0], x, "R")
    np.testing.assert_allclose(lhs, rhs, rtol=1e-6)
    e = Element(-jnp.eye(8), jnp.zeros(8))
    lhs, rhs = symmetry_error(lambda v: jnp.zeros(8), e, x, "L")
    np.testing.assert_array_equal(lhs, rhs)


def test_assert_maximal_on_a_plain_function():
    assert_maximal(jnp.tanh, SignedPermutation(), "E", n=6, **FAST)
    with pytest.raises(SymmetryViolation, match="may not be maximal"):
        assert_maximal(jnp.tanh, Permutation(), "E", n=6, **FAST)


def _even_sign_map(x):
    """f(x)_i = x_i + Π_{j≠i} x_j: equivariant under Dₙ (a permutation, or an even number
    of sign flips, each of which flips every product but the own coordinate's), not under
    one sign flip, a scaling or a rotation. Odd exactly when n is even (−I ∈ Dₙ)."""
    others = jnp.prod(x) / x  # Gaussian draws are never 0 here
    return x + others


def test_point_reflection_under_claim_in_even_dimension_is_caught():
    """{±I} ⊂ {±I} × Sₙ ⊂ Dₙ and {±I} ⊂ SO(n) for even n: a Dₙ-equivariant map declared
    only odd in n = 4 is reported as possibly non-maximal, with {±I} × Sₙ the immediate
    supergroup that also holds (SO(n) and {±I} × Ψ do not)."""
    assert_algebraic(_even_sign_map, PointReflection(), "E", n=4, **FAST)
    assert_algebraic(_even_sign_map, EvenSignedPermutation(), "E", n=4, **FAST)
    with pytest.raises(SymmetryViolation, match="may not be maximal") as info:
        assert_maximal(_even_sign_map, PointReflection(), "E", n=4, **FAST)
    found = {m.group: m.found for m in info.value.cell.maximality}
    assert found == {"ℝ×": True, "ℤ₂^4": True, "SO(4)": True, "±I_4 × S_4": False,
                     "±I_4 × Ψ(A_4)": True}
    # a true {±I} map (odd, nothing larger) passes in even n: tanh of a fixed mixing
    mix = jax.random.normal(jax.random.key(3), (4, 4))
    assert_maximal(lambda x: jnp.tanh(mix @ x), PointReflection(), "E", n=4, **FAST)


def _standardise_halves(x):
    """Each half of x standardised on its own (a GroupNorm with two groups, γ = 1, β = 0,
    ε = 0): invariant to a positive scale and a shift per half."""
    h = x.reshape(2, -1)
    h = h - h.mean(-1, keepdims=True)
    v = jnp.mean(h * h, -1, keepdims=True)
    return jnp.where(v > 0, h / jnp.sqrt(jnp.where(v > 0, v, 1)), 0).reshape(x.shape)


def test_global_scale_shift_under_claim_of_a_per_block_map_is_caught():
    """(ℝ×₊,+λ1) lies in the per-block (ℝ×₊,+λ1)ᴳ: declaring the global group for a map
    with per-half statistics is reported as possibly non-maximal in n = 8, and the
    per-half group is the one that holds."""
    group = ScaleShift(positive=True)
    assert_algebraic(_standardise_halves, group, "R", n=8, **FAST)
    with pytest.raises(SymmetryViolation, match="may not be maximal") as info:
        assert_maximal(_standardise_halves, group, "R", n=8, **FAST)
    missing = {m.group for m in info.value.cell.maximality if m.found is False}
    assert missing == {"(ℝ×₊,+λ1)^2"}
    assert_maximal(_standardise_halves, BlockScaleShift(8, 4, positive=True), "R", n=8,
                   **FAST)


# ---------------------------------------------------------------- probabilistic cells
class UniformClaimedOrthogonal(AbstractInitialiser):
    """Negative control: iid uniform weights declared O(n)-invariant in law (they are
    only Bₙ-invariant)."""

    # a linear map commutes with scalings, hence the ℝ× factor of the E cells
    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(GeneralLinear(), GeneralLinear(), GeneralLinear()),
        probabilistic=(Orthogonal(), Orthogonal(), Product(Scaling(), Orthogonal())),
        algebraic=(None, None, Product(Scaling(), Trivial())))

    def __call__(self, key, shape, dtype=None):
        return jax.random.uniform(key, shape, dtype or jnp.float32, -1.0, 1.0)


def test_uniform_init_claimed_orthogonal_is_rejected():
    with pytest.raises(SymmetryViolation) as info:
        check(UniformClaimedOrthogonal(), n=8, **FAST)
    assert "probabilistic" in str(info.value) and "Kolmogorov" in str(info.value)
    assert info.value.cell.generation == "probabilistic"
    # its true symmetry, signed permutations, is accepted
    for flavour in "LRE":
        assert_probabilistic(UniformClaimedOrthogonal(), SignedPermutation(), flavour, n=8)


class PositiveUniform(AbstractInitialiser):
    """Negative control for finite groups: iid uniform weights in (0, 1), whose law is
    invariant under permutations but not under x ↦ −x (W(−x) = −Wx)."""

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(GeneralLinear(), GeneralLinear(), GeneralLinear()),
        probabilistic=(Permutation(), Permutation(), Product(Scaling(), Permutation())),
        algebraic=(None, None, Product(Scaling(), Trivial())))

    def __call__(self, key, shape, dtype=None):
        return jax.random.uniform(key, shape, dtype or jnp.float32, 0.0, 1.0)


@pytest.mark.parametrize("seed", range(6))
def test_point_reflection_claim_is_rejected_whatever_the_draw(seed):
    """The two-sample test sees a few group elements; a uniform draw from {±I} is the
    identity half the time, so the elements are taken from the non-identity draws first
    and a false {±I} claim fails at every seed."""
    with pytest.raises(SymmetryViolation):
        assert_probabilistic(PositiveUniform(), PointReflection(), "R", n=8,
                             key=jax.random.key(seed))


class EvenParityRows(AbstractInitialiser):
    """W = diag(s) M with M iid uniform in (0, 1) and signs s uniform among those with an
    even number of −1: the law of W is invariant under left multiplication by Dₙ (row
    permutations with an even number of row sign flips) and not by Bₙ."""

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(GeneralLinear(), GeneralLinear(), GeneralLinear()),
        probabilistic=(EvenSignedPermutation(), Permutation(), Trivial()))

    def __call__(self, key, shape, dtype=None):
        ks, km = jax.random.split(key)
        s = jnp.where(jax.random.bernoulli(ks, 0.5, (shape[0],)), 1.0, -1.0)
        s = s.at[-1].set(jnp.prod(s[:-1]))
        m = jax.random.uniform(km, shape, dtype or jnp.float32, 0.0, 1.0)
        return (s[:, None] * m).astype(dtype or jnp.float32)


@pytest.mark.parametrize("seed", range(12))
def test_maximality_probe_uses_elements_outside_the_declared_group(seed):
    """A maximality probe of a probabilistic cell sees a few elements of the supergroup;
    those inside the declared group test nothing (in B₂, half the elements lie in D₂), so
    elements outside it are taken first and Bₙ is refuted at every seed."""
    init = EvenParityRows()
    assert_probabilistic(init, EvenSignedPermutation(), "L", n=2, key=jax.random.key(seed))
    result = assert_maximal(init, EvenSignedPermutation(), "L", n=2,
                            generation="probabilistic", key=jax.random.key(seed))
    assert [m.group for m in result.maximality] == ["B_2", "ℝ×₊ × D_2"]
    assert all(m.found for m in result.maximality)


def test_maximality_probe_takes_far_elements_first():
    # scalings probing a cell declared {±I}: 2 and ½ move a law visibly, 1.05 and −1.1
    # hardly (the reflection first among these), −1 and 1 not at all
    from taxdl.testing._check import _informative_first

    a = np.array([1.05, -1.0, 2.0, 1.0, -1.1, 0.5], np.float32)
    sampled = Element(jnp.asarray(a[:, None, None] * np.eye(3, dtype=np.float32)),
                      jnp.zeros((6, 3), jnp.float32))
    order = _informative_first(sampled, PointReflection(3))
    assert a[order].tolist() == pytest.approx([2.0, 0.5, -1.1, 1.05, -1.0, 1.0])


def test_maximality_probe_amplifies_its_last_element():
    # scalings 2, ½, 3 probing a cell declared O(3): the last two rows become 3^k and
    # 3^-k with k the largest power within the bound (10⁶: 3¹² = 531441, 3¹³ ≈ 1.6e6);
    # the first stays as drawn
    from taxdl.testing._check import AMPLIFY_BOUND, Host, _amplify

    assert AMPLIFY_BOUND == 1e6
    a = np.array([2.0, 0.5, 3.0])
    sampled = Host((a[:, None, None] * np.eye(3)).astype(np.float32),
                   np.zeros((3, 3), np.float32))
    ein, eout = _amplify(sampled, sampled, Orthogonal(3))
    for e in (ein, eout):
        scales = np.diagonal(e.matrix, axis1=1, axis2=2)
        np.testing.assert_allclose(scales, [[2.0] * 3, [3.0**12] * 3, [3.0**-12] * 3],
                                   rtol=1e-6)
        assert not e.shift.any()
    # an affine element x ↦ 1.5x + t: its powers are the map applied repeatedly
    rng = np.random.default_rng(0)
    t, x = rng.standard_normal((2, 3))
    rows = Host(np.stack([np.eye(3), np.eye(3), 1.5 * np.eye(3)]).astype(np.float32),
                np.stack([t, t, t]).astype(np.float32))
    ein, _ = _amplify(rows, rows, Orthogonal(3))
    t = t.astype(np.float32).astype(np.float64)
    k = round(np.log(ein.matrix[1, 0, 0]) / np.log(1.5))
    assert k >= 2 and 1.5**k < AMPLIFY_BOUND
    y = x
    for _ in range(k):
        y = 1.5 * y + t
    assert np.linalg.norm(y) < AMPLIFY_BOUND * (1 + np.linalg.norm(x))
    np.testing.assert_allclose(ein.matrix[1] @ x + ein.shift[1], y, rtol=1e-6)
    z = ein.matrix[2].astype(np.float64) @ y + ein.shift[2]  # the inverse power undoes it
    np.testing.assert_allclose(z, x, atol=1e-4)
    # isometries and finite groups are left as drawn
    q = np.linalg.qr(rng.standard_normal((3, 3, 3)))[0]
    rot = Host(q, np.zeros((3, 3)))
    assert _amplify(rot, rot, PointReflection(3))[0].matrix is q


@pytest.mark.parametrize("scale", [1e-12, 1.0, 1e15])
def test_probes_are_exact_at_any_output_magnitude(scale):
    # Σv⁴ of an output of size 1e-12 underflows in float32 and one of size 1e15 overflows;
    # the probes are scale-free where they should be and scale exactly where they should
    from taxdl.testing._engine import pair_probe, probes

    v = np.array([1.0, -2.0, 3.0, 0.5])
    w = np.array([0.5, 1.0, -1.0, 2.0])
    got = np.asarray(probes(jnp.asarray(scale * v, jnp.float32)), np.float64)
    assert np.all(np.isfinite(got))
    n = np.linalg.norm(v)
    np.testing.assert_allclose(got[3], scale * n, rtol=1e-6)  # ‖f(x)‖
    np.testing.assert_allclose(got[4], np.sum(v**4) / n**4, rtol=1e-6)  # peakedness
    np.testing.assert_allclose(got[5], np.sum(v**3) / n**3, rtol=1e-6)  # skew
    pair = np.asarray(pair_probe(jnp.asarray(scale * v, jnp.float32),
                                 jnp.asarray(scale * w, jnp.float32)), np.float64)
    np.testing.assert_allclose(pair[0], v @ w / n / np.linalg.norm(w), rtol=1e-6)
    np.testing.assert_allclose(pair[1], scale * np.linalg.norm(v - w), rtol=1e-6)


def test_probabilistic_maximality_sees_how_f_bends_along_a_ray():
    # Linear → tanh → LayerNorm → Linear (Gaussian weights, zero biases): LayerNorm fixes
    # the hidden norm and the Gaussian last layer makes each one-input law depend on it
    # alone, so a scaling moves only the joint law at two inputs, and little at two
    # unrelated ones (1024 draws do not show it); at two inputs on one ray, z and z/4,
    # the outputs coincide where tanh is linear and differ where it bends, which a scaling
    # changes: one drawn element (none amplified) refutes ℝ×·O(n) on the right
    keys = jax.random.split(jax.random.key(0))
    mlp = tnn.Sequential([tnn.Linear(8, 8, key=keys[0]), tnn.Tanh(), tnn.LayerNorm(8),
                          tnn.Linear(8, 8, key=keys[1])])
    result = assert_probabilistic(mlp, Orthogonal(), "R", test_elements=1, maximality=True)
    m = {r.group: r for r in result.maximality}["ℝ×·O(8)"]
    assert m.found and "x Gaussian, x' Gaussian / 4" in m.counterexample.probe
    # independent of the checker (NumPy float64): at a small scale the outputs at x and
    # x/4 are parallel in every draw (tanh is linear there and LayerNorm removes the
    # scale), at scale 1 they are not
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((2, 4000, 8, 8)) / np.sqrt(8)

    def f(x):
        h = np.tanh(w1 @ x)
        h = h - h.mean(-1, keepdims=True)
        return w2 @ (h / np.sqrt((h * h).mean(-1, keepdims=True)))[..., None]

    def cosines(x):
        a, b = f(x)[..., 0], f(x / 4)[..., 0]
        return np.sum(a * b, -1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)

    x = rng.standard_normal(8)
    assert np.max(1 - cosines(x / 256)) < 1e-6
    assert np.mean(1 - cosines(x) > 1e-2) > 0.2


def test_probabilistic_maximality_reaches_colu_eps():
    # Linear → CoLU (ε = 1e-7) → Linear at initialisation: f(−x) has the law of −f(x), and
    # f(ax)/a for a > 0 that of f(x) up to CoLU's ε, which matters only where the cone
    # bodies are ~1e-7; the amplified elements reach there and refute ℝ× by conjugation
    mlp = tnn.MLP(6, [6], 4, activation=tnn.CoLU(cone_dim=3), key=jax.random.key(0))
    report = check(mlp, generations=("probabilistic",), raise_on_failure=False)
    cell = report.cell("probabilistic", "E")
    assert cell.group == "±I_n" and cell.status == "passed"
    (m,) = [r for r in cell.maximality if r.group == "ℝ×"]
    assert m.found
    # independent of the checker (NumPy float64): the mean output norm over draws, scaled
    # back, at inputs of size ~1e-6 is not that at size 1; at size 1e-3 it is
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((4000, 6, 6)) / np.sqrt(6)
    w2 = rng.standard_normal((4000, 4, 6)) / np.sqrt(6)

    def colu(h):
        a, b = h[..., 0::3], np.stack([h[..., 1::3], h[..., 2::3]], -1)
        w = np.clip(a / (np.linalg.norm(b, axis=-1) + 1e-7), 0, 1)
        out = np.empty_like(h)
        out[..., 0::3], out[..., 1::3], out[..., 2::3] = a, w * b[..., 0], w * b[..., 1]
        return out

    x = rng.standard_normal(6)
    norm = lambda s: np.mean(np.linalg.norm(  # noqa: E731
        w2 @ colu(w1 @ (s * x))[..., None], axis=(-2, -1))) / s
    assert abs(norm(1e-6) / norm(1.0) - 1) > 5e-3  # same draws: no sampling noise
    assert abs(norm(1e-3) / norm(1.0) - 1) < 1e-4


@pytest.mark.parametrize("init", [tnn.IsotropicNormal(), tnn.HaarOrthogonal()],
                         ids=lambda i: type(i).__name__)
def test_gaussian_and_haar_inits_are_orthogonally_invariant(init):
    for flavour in "LRE":
        result = assert_probabilistic(init, Orthogonal(), flavour, n=8)
        assert result.p_value > 1e-3 / 45 and result.checks == 1024


class HaarRotation(AbstractInitialiser):
    """Haar measure on SO(n): a Haar O(n) draw with its first column negated when its
    determinant is negative. Its law is invariant under rotations on either side and not
    under reflections (det(AW) = −det(W) = −1)."""

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(GeneralLinear(), GeneralLinear(), GeneralLinear()),
        probabilistic=(SpecialOrthogonal(), SpecialOrthogonal(),
                       Product(Scaling(), Orthogonal())),
        algebraic=(None, None, Product(Scaling(), Trivial())))

    def __call__(self, key, shape, dtype=None):
        q = tnn.HaarOrthogonal()(key, shape, dtype)
        return q.at[:, 0].multiply(jnp.sign(jnp.linalg.det(q)))


class HaarUnitaryAsReal(AbstractInitialiser):
    """Haar U(2) written as a real 4 × 4 matrix [[A, −B], [B, A]]: every draw commutes
    with the complex structure J, a rotated draw does not; declared (falsely) SO(4)."""

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(GeneralLinear(), GeneralLinear(), GeneralLinear()),
        probabilistic=(SpecialOrthogonal(), SpecialOrthogonal(), None))

    def __call__(self, key, shape, dtype=None):
        k = shape[0] // 2
        q = jax.random.normal(key, (2, k, k)) / np.sqrt(2)
        z, r = jnp.linalg.qr(jax.lax.complex(q[0], q[1]))
        d = jnp.diagonal(r)
        z = z * (d / jnp.abs(d).astype(d.dtype))[None, :]
        return jnp.block([[z.real, -z.imag], [z.imag, z.real]]).astype(dtype or jnp.float32)


@pytest.mark.parametrize("n", [3, 4])
def test_a_law_on_rotations_is_told_from_one_on_orthogonal_matrices(n):
    # independent of the checker: every draw is a rotation (NumPy float64 determinants)
    init = HaarRotation()
    dets = [np.linalg.det(np.asarray(init(jax.random.key(i), (n, n)), np.float64))
            for i in range(50)]
    assert np.allclose(dets, 1, atol=1e-5)
    for flavour in "LR":
        result = assert_maximal(init, SpecialOrthogonal(), flavour, n=n,
                                generation="probabilistic")
        assert [m.found for m in result.maximality if m.group == f"O({n})"] == [True]
        with pytest.raises(SymmetryViolation) as info:
            assert_probabilistic(init, Orthogonal(), flavour, n=n)
        assert info.value.counterexample.probe.startswith("det[f(x₁) … f(x_m)]")


def test_a_law_on_unitary_matrices_is_told_from_one_on_rotations():
    init = HaarUnitaryAsReal()
    w = np.asarray(init(jax.random.key(0), (4, 4)), np.float64)
    j = np.block([[np.zeros((2, 2)), -np.eye(2)], [np.eye(2), np.zeros((2, 2))]])
    assert np.allclose(w @ w.T, np.eye(4), atol=1e-5) and np.allclose(w @ j, j @ w, atol=1e-5)
    assert np.linalg.det(w) > 0  # so orientation cannot tell, only a joint probe can
    for flavour in "LR":
        with pytest.raises(SymmetryViolation) as info:
            assert_probabilistic(init, SpecialOrthogonal(), flavour, n=4)
        assert info.value.counterexample.probe.startswith("(a·f(x))(b·f(x'))")


def test_informative_elements_alternate_orientation():
    # three draws from O(n) are all rotations one time in eight: the elements a test
    # sees alternate between reflections and rotations (reflections first)
    from taxdl.testing._check import _informative_first

    signs = np.array([1, 1, 1, -1, 1, -1], np.float32)
    matrix = np.stack([np.diag([s, 1.0, 1.0]).astype(np.float32) * (i + 2)
                       for i, s in enumerate(signs)])
    sampled = Element(jnp.asarray(matrix), jnp.zeros((6, 3), jnp.float32))
    order = _informative_first(sampled, None)
    dets = np.linalg.det(matrix[order].astype(np.float64))
    assert np.sign(dets).tolist() == [-1, 1, -1, 1, 1, 1]


class GaussianDirection(AbstractLayer):
    """f(x) = Wx/‖Wx‖ with W standard Gaussian: at every single input x ≠ 0 the output is
    uniform on the sphere, whatever x, so every one-input marginal of f∘g is that of f for
    each g ∈ GL(n); the joint law is not (the angle between f(x) and f(x') follows the
    angle between x and x'). Its right cell in law is ℝ×·O(n), and maximal."""

    weight: jax.Array

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(None, GeneralLinear(), None), probabilistic=(None, ConformalLinear(), None))

    def __init__(self, n, *, key):
        self.weight = jax.random.normal(key, (n, n))

    def __call__(self, x, *, key=None):
        y = self.weight @ x
        return y / jnp.sqrt(jnp.sum(y * y))


@signature.register
def _(layer: GaussianDirection, n=None):
    return Signature(((layer.weight.shape[1],),))


@reinitialise.register
def _(layer: GaussianDirection, key):
    return GaussianDirection(layer.weight.shape[1], key=key)


def test_probabilistic_maximality_sees_joint_laws_at_two_inputs():
    prim = GaussianDirection(4, key=jax.random.key(0))
    assert_probabilistic(prim, ConformalLinear(), "R")
    # independent of the checker: the mean cosine between f(x) and f(x') is that of the
    # inputs' angle (NumPy float64); a general linear map changes the angle
    rng = np.random.default_rng(0)
    x, x2 = np.eye(4)[0], np.array([1.0, 1.0, 0.0, 0.0])
    a = np.array([[1.0, 0, 0, 0], [0, 0.1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])

    def mean_cos(u, v):
        w = rng.standard_normal((20000, 4, 4))
        fu, fv = w @ u, w @ v
        return np.mean(np.sum(fu * fv, -1) / np.linalg.norm(fu, axis=-1)
                       / np.linalg.norm(fv, axis=-1))

    assert abs(mean_cos(x, x2) - mean_cos(a @ x, a @ x2)) > 0.2
    result = assert_maximal(prim, ConformalLinear(), "R", generation="probabilistic")
    (m,) = result.maximality
    assert m.group == "GL(4)" and m.found
    assert m.counterexample.probe.startswith("cos∠(f(x), f(x'))")


def test_probabilistic_maximality_probes_the_near_linear_range():
    # f(x) = W₂ isotanh(W₁x) (bias-free, Gaussian W): f(Rx) has the law of f(x) for R ∈ O(n),
    # but not f(ax), a ≠ 1, where tanh is not saturated; the larger probe inputs saturate
    # it (‖W₁x‖ ≳ 3), so at a single drawn element (none amplified, see
    # test_maximality_probe_amplifies_its_last_element) only the small input refutes ℝ×·O(n)
    mlp = tnn.MLP(8, [8], 8, activation="IsotropicTanh", use_bias=False,
                  key=jax.random.key(0))
    result = assert_probabilistic(mlp, Orthogonal(), "R", test_elements=1, maximality=True)
    m = {r.group: r for r in result.maximality}["ℝ×·O(8)"]
    assert m.found and "Gaussian / 4" in m.counterexample.probe
    # independent of the checker (NumPy float64): the mean output norm at a small input
    # changes under x ↦ x/2, at a large one it does not (saturation)
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((20000, 8, 8)) / np.sqrt(8)
    w2 = rng.standard_normal((20000, 8, 8)) / np.sqrt(8)

    def mean_norm(x):
        v = w1 @ x
        r = np.linalg.norm(v, axis=-1, keepdims=True)
        return np.mean(np.linalg.norm(w2 @ (np.tanh(r) * v / r)[..., None], axis=(-2, -1)))

    small, large = np.full(8, 0.25), np.full(8, 3.0)
    assert abs(mean_norm(small / 2) / mean_norm(small) - 1) > 0.3
    assert abs(mean_norm(large / 2) / mean_norm(large) - 1) < 0.05


def test_probabilistic_maximality_compares_outputs_at_two_inputs_by_distance():
    # f(x) = W₂ sigmoid(W₁x): every draw adds W₂·½1 at every input, whose spread hides how
    # f scales at each single input (and the angle between outputs); the distance
    # between f(x) and f(x') cancels it and shows that f(ax) has not the law of f(x)
    mlp = tnn.MLP(6, [12], 3, activation="Sigmoid", use_bias=False, key=jax.random.key(0))
    result = assert_maximal(mlp, Orthogonal(), "R", generation="probabilistic")
    m = {r.group: r for r in result.maximality}["ℝ×·O(6)"]
    assert m.found and m.counterexample.probe.startswith("‖f(x) − f(x')‖")
    # independent of the checker (NumPy float64): at x = ê₀ the output norm hardly
    # moves under x ↦ 2x, the distance between the outputs at ê₀ and −ê₀ doubles
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((20000, 12, 6)) / np.sqrt(6)
    w2 = rng.standard_normal((20000, 3, 12)) / np.sqrt(12)
    f = lambda x: (w2 @ (1 / (1 + np.exp(-(w1 @ x))))[..., None])[..., 0]  # noqa: E731
    e = np.eye(6)[0] * 0.2
    norm = lambda y: np.mean(np.linalg.norm(y, axis=-1))  # noqa: E731
    assert abs(norm(f(2 * e)) / norm(f(e)) - 1) < 0.05
    assert abs(norm(f(2 * e) - f(-2 * e)) / norm(f(e) - f(-e)) - 2) < 0.1


# ---------------------------------------------------------------- closure cells
class UnderClaimedAffine(AbstractLayer):
    """An affine layer with the right transport whose closure cells claim GL(n) only:
    Wx + b is closed under Aff(n) in every flavour (the bias absorbs the shifts)."""

    weight: jax.Array
    bias: jax.Array

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(GeneralLinear(), GeneralLinear(), GeneralLinear()))

    def __init__(self, n, *, key):
        self.weight = jax.random.normal(key, (n, n)) / np.sqrt(n)
        self.bias = jnp.zeros(n)

    def __call__(self, x, *, key=None):
        return self.weight @ x + self.bias


class BadAffine(UnderClaimedAffine):
    """Negative control: the same layer with a wrong right transport (W ↦ W Mᵀ instead
    of W M)."""


@signature.register
def _(layer: UnderClaimedAffine, n=None):
    return Signature(((layer.weight.shape[1],),))


@transport.register
def _(layer: UnderClaimedAffine, flavour, element, group):
    m = element.matrix.astype(layer.weight.dtype)
    right = m.T if isinstance(layer, BadAffine) else m  # BadAffine: wrong, should be W M
    w, b = {Flavour.LEFT: lambda: (m @ layer.weight, m @ layer.bias),
            Flavour.RIGHT: lambda: (layer.weight @ right, layer.bias),
            Flavour.EQUIVARIANT: lambda: (jnp.linalg.solve(m, layer.weight @ m),
                                          jnp.linalg.solve(m, layer.bias))}[Flavour(flavour)]()
    return eqx.tree_at(lambda l: (l.weight, l.bias), layer, (w, b))


def test_closure_under_claim_is_caught_by_a_fitted_witness():
    """By default a closure cell's maximality is not checked, so an under-claimed affine
    layer passes; with `fit_closure`, fitting (W', b') to the function moved by an affine
    map succeeds to rounding level, a witness that Aff(n) holds too."""
    layer = UnderClaimedAffine(6, key=jax.random.key(0))
    quiet = check(layer, generations="closure", **FAST)   # one generation as a string
    assert {c.generation for c in quiet.cells} == {"closure"}
    assert all(m.found is None and not m.searched
               for c in quiet.cells for m in c.maximality)
    with pytest.raises(SymmetryViolation, match="may not be maximal") as info:
        check(layer, generations=("closure",), fit_closure=True, **FAST)
    assert "witness" in str(info.value)
    for flavour in "LRE":
        cell = info.value.report.cell("closure", flavour)
        assert cell.status == "not maximal"
        [m] = cell.maximality
        assert m.group == "Aff(6)" and m.found is False and m.note.startswith("witness")


def test_closure_fit_finds_no_witness_for_maximal_declarations():
    """LayerNorm with vector γ, β: no supergroup of its closure E cell is reproduced by a
    fit, (ℝ×,+λ1) × O(n−1) included, which only the member at γ = 1 (its initialisation)
    would absorb; the fits move generic (perturbed) members. The result calls those
    searches inconclusive, not refutations."""
    layer = tnn.LayerNorm(8)
    declared = layer.taxonomy.cell("closure", "E").group
    result = assert_maximal(layer, declared, "E", generation="closure", fit_closure=True,
                            **FAST)
    searched = {m.group: m for m in result.maximality}
    assert "ℝ×,+λ1 × O(7)" in searched
    for m in searched.values():
        assert m.found is None and m.searched and "inconclusive (no witness" in str(m)


def test_wrong_transport_is_caught():
    with pytest.raises(SymmetryViolation) as info:
        check(BadAffine(6, key=jax.random.key(0)), **FAST)
    message = str(info.value)
    assert "closure R GL(n)" in message and "f_{g·θ}(x) = f_θ(g·x)" in message
    report = info.value.report
    assert report.cell("closure", "L").passed and report.cell("closure", "E").passed
    assert_closure(tnn.Linear(6, 6, key=jax.random.key(0)), GeneralLinear(), "R", **FAST)


# ---------------------------------------------------------------- compiles, dtypes
class CountedTanh(AbstractActivation):
    """tanh that counts how often JAX traces it."""

    taxonomy: ClassVar[Taxonomy] = equivariant_taxonomy(SignedPermutation())
    traces: ClassVar[list] = []

    def __call__(self, x, *, key=None):
        CountedTanh.traces.append(x.shape)
        return jnp.tanh(x)


def test_200_examples_compile_once():
    compiles = []

    def listener(name, duration, **kwargs):
        if name == "/jax/core/compile/backend_compile_duration":
            compiles.append(duration)

    assert_algebraic(jnp.tanh, SignedPermutation(), "E", n=8, examples=1)  # warm samplers
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        result = assert_algebraic(CountedTanh(), SignedPermutation(), "E", n=8, examples=200)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert result.checks == 200 * 32
    # one abstract evaluation (output shape) and one trace of the batched program
    assert len(CountedTanh.traces) == 2
    assert len(compiles) == 1


def test_float64_leg_is_tight_and_local():
    report = check(tnn.IsotropicTanh(), n=8, dtype=jnp.float64, **FAST)
    cell = report.cell("algebraic", "E")
    assert report.dtype == "float64" and cell.tolerance < 1e-10 and cell.max_error < 1e-13
    assert jnp.zeros(1).dtype == jnp.float32  # x64 was enabled only inside the check
    with pytest.raises(SymmetryViolation):
        check(ReLUClaimedOrthogonal(), n=8, dtype=jnp.float64, **FAST)


def test_relieve_map_pressure_clears_compiled_programs_past_the_threshold(monkeypatch):
    """The count is read from the operating system; past the threshold the caches are
    cleared (counted through a stand-in for `jax.clear_caches`, so that this test does
    not throw away every program the rest of the suite compiled)."""
    from taxdl.testing import _memory, map_usage, relieve_map_pressure

    usage = map_usage()
    if usage is None:
        pytest.skip("the memory-map count is only exposed on Linux")
    used, limit = usage
    assert 0 < used < limit
    with open("/proc/self/maps", "rb") as f:
        assert abs(sum(1 for _ in f) - used) < 100
    cleared = []
    monkeypatch.setattr(_memory.jax, "clear_caches", lambda: cleared.append(True))
    assert relieve_map_pressure(1.0) is False and not cleared   # below the limit
    assert relieve_map_pressure(1e-9) is True and cleared == [True]
    monkeypatch.setattr(_memory, "map_usage", lambda: (600, 1000))
    assert relieve_map_pressure(0.5) is True and relieve_map_pressure(0.6) is False
    monkeypatch.setattr(_memory, "map_usage", lambda: None)      # not Linux
    assert relieve_map_pressure(1e-9) is False and len(cleared) == 2
    for bad in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match="`fraction` must be in \\(0, 1\\]"):
            relieve_map_pressure(bad)



def test_a_map_between_dimensions_points_to_a_checkable_form():
    """A primitive ℝ³ → ℝ⁵ whose E cell names no output representation cannot be checked
    as it is; the error says why and what to check instead, and the suggested Sequential
    (whose inferred E cell is the scalar part) passes."""
    layer = tnn.GmPLinear(3, 5, key=jax.random.key(0))
    with pytest.raises(ValueError, match="cannot be checked.*scalar part.*Sequential"):
        check(layer, **FAST)
    assert check(tnn.Sequential([layer]), **FAST).passed


# ----------------------------------------------------------- usage errors and plumbing
def test_a_bound_group_of_another_dimension_is_refused_not_rebound():
    """S₇ cannot act on ℝ⁴: the cell is refused by name instead of being checked as S₄
    and reported as S₇."""
    with pytest.raises(ValueError, match=r"S_7 acts on dimension 7, but the acted "
                                         r"dimension is 4"):
        assert_algebraic(jnp.tanh, Permutation(7), "E", n=4, examples=3)
    assert assert_algebraic(jnp.tanh, Permutation(4), "E", n=4, examples=3).passed


def test_assert_maximal_acts_on_the_signatures_arguments_and_names_bad_cells():
    """Attention is S_n-invariant on the right in its keys and values only (its
    `signature` says so); `assert_maximal` follows that as `check` does, and a cell that
    cannot be checked is a ValueError naming the function and the cell."""
    result = assert_maximal(tnn.SoftmaxAttention(), Permutation(), "R", n=5, examples=5)
    assert result.maximality and all(m.found for m in result.maximality)
    with pytest.raises(ValueError, match=r"<lambda>: maximality of the algebraic L O\(n\) "
                                         r"cell cannot be checked: the output is a scalar"):
        assert_maximal(lambda x: jnp.sum(x * x), Orthogonal(), "L", n=4, examples=3)


def test_pytest_plugin_examples_variable_is_validated_and_yields_to_the_call(monkeypatch):
    from taxdl.testing._pytest_plugin import _checker

    seen = {}
    monkeypatch.setattr("taxdl.testing.check", lambda p, n, **kw: seen.update(kw))
    monkeypatch.setenv("TAXDL_CHECK_EXAMPLES", "ten")
    _checker(None)(tnn.IsotropicTanh, 4, examples=5)  # the call's own value wins
    assert seen["examples"] == 5
    with pytest.raises(pytest.UsageError, match="TAXDL_CHECK_EXAMPLES must be a positive "
                                                "integer, got 'ten'"):
        _checker(None)(tnn.IsotropicTanh, 4)
    monkeypatch.setenv("TAXDL_CHECK_EXAMPLES", "7")
    _checker(None)(tnn.IsotropicTanh, 4)
    assert seen["examples"] == 7


class _AnisotropicGmP(tnn.GmPLinear):
    """Weights input coordinate 0 twice: not O(n)-invariant on the right in law."""

    def __call__(self, x, *, key=None):
        return tnn.GmPLinear.__call__(self, x.at[..., 0].multiply(2.0))


class _AxisAlignedDropout(tnn.StochasticIsotropicDropout):
    def __call__(self, x, *, key=None, inference=None):
        return x


def test_a_subclass_is_checked_as_itself_not_as_its_parent():
    """An inherited `reinitialise` hook builds the parent class; its draws are moved into
    the subclass, so the subclass's own `__call__` is what the probabilistic cells test
    (here it breaks the declared O(n) law, which the parent keeps). A subclass overriding
    `__call__` while inheriting a hook that computes the map itself is refused by name."""
    layer = _AnisotropicGmP(6, 6, key=jax.random.key(0))
    report = check(layer, raise_on_failure=False, generations=("probabilistic",),
                   maximality=False)
    assert report.cell("probabilistic", "R").status == "failed"
    parent = check(tnn.GmPLinear(6, 6, key=jax.random.key(0)), raise_on_failure=False,
                   generations=("probabilistic",), maximality=False)
    assert parent.cell("probabilistic", "R").status == "passed"
    with pytest.raises(TypeError, match=r"_AxisAlignedDropout overrides __call__, but its "
                                        r"`as_function` hook is the one registered for "
                                        r"StochasticIsotropicDropout"):
        check(_AxisAlignedDropout(0.5), n=4, examples=2)


class _HookedLinear(AbstractLayer):
    """x ↦ Wx whose law is whatever its `reinitialise` hook draws."""

    weight: jax.Array

    taxonomy: ClassVar[Taxonomy] = Taxonomy(closure=(None, GeneralLinear(), None),
                                            probabilistic=(None, Orthogonal(), None))

    def __call__(self, x, *, key=None):
        return self.weight @ x


@signature.register
def _(layer: _HookedLinear, n=None):
    return Signature(((layer.weight.shape[1],),))


def test_a_hook_registered_again_is_the_one_the_next_check_uses():
    """The checked programs are compiled once per primitive structure; a hook replaced
    in the same process (a notebook) is part of their key, so the next check traces it.
    Gaussian W is O(n)-invariant in law; iid uniform W is not (Maxwell's theorem)."""
    prim = _HookedLinear(jnp.eye(8))
    reinitialise.register(_HookedLinear)(
        lambda layer, key: _HookedLinear(jax.random.normal(key, (8, 8))))
    assert_probabilistic(prim, Orthogonal(), "R")
    reinitialise.register(_HookedLinear)(
        lambda layer, key: _HookedLinear(jax.random.uniform(key, (8, 8), minval=-1.0)))
    with pytest.raises(SymmetryViolation):
        assert_probabilistic(prim, Orthogonal(), "R")
