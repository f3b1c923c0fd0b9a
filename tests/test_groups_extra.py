"""The groups added for the activation catalogue: PositiveMonomial, Phase,
MonomialUnitary, RotatedConeGroup (sampling, membership, hierarchy, names, errors)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import taxdl.groups as G

KEY = jax.random.key(7)

BOUND = [
    G.PositiveMonomial(5), G.Phase(3), G.MonomialUnitary(3),
    G.RotatedConeGroup(8, cone_dim=4), G.RotatedConeGroup(6, cone_dim=2, scalings=False),
]


def _np(x):
    return np.asarray(x, np.complex128 if jnp.iscomplexobj(x) else np.float64)


@pytest.mark.parametrize("group", BOUND, ids=lambda g: g.name)
def test_samples_are_members_closed_and_invertible(group):
    e = group.sample(KEY, 16)
    assert e.matrix.shape == (16, group.dim, group.dim)
    assert bool(jnp.all(group.contains(e)))
    assert bool(jnp.all(group.contains(group.inverse(e), atol=1e-4)))
    assert bool(jnp.all(group.contains(group.compose(e, e[::-1]), atol=1e-4)))
    x = jax.random.normal(jax.random.key(1), (group.dim,)).astype(e.matrix.dtype)
    back = group.act(group.inverse(e[0]), group.act(e[0], x))
    np.testing.assert_allclose(_np(back), _np(x), atol=1e-4)


def test_positive_monomial_structure():
    m = _np(G.PositiveMonomial(6).sample(KEY, 50).matrix)
    nonzero = np.abs(m) > 0
    assert np.all(nonzero.sum(-1) == 1) and np.all(nonzero.sum(-2) == 1)
    vals = m[nonzero]
    assert np.all(vals >= 0.5 - 1e-6) and np.all(vals <= 2 + 1e-6)
    assert np.std(np.log(vals)) > 0.2  # scales differ per coordinate, not one global scale


def test_phase_and_monomial_unitary_structure():
    p = _np(G.Phase(3).sample(KEY, 20).matrix)
    np.testing.assert_allclose(p, p[:, :1, :1] * np.eye(3), atol=1e-6)
    np.testing.assert_allclose(np.abs(p[:, 0, 0]), 1, atol=1e-6)
    m = _np(G.MonomialUnitary(4).sample(KEY, 20).matrix)
    np.testing.assert_allclose(np.abs(m).sum(-1), 1, atol=1e-6)
    phases = np.angle(m[np.abs(m) > 0.5].reshape(20, 4))
    assert np.ptp(phases, axis=-1).max() > 0.1  # independent per-coordinate phases


def test_rotated_cone_group_is_conjugate_of_cone_group():
    # Q (block-diag of e₁ ↦ 1/√S rotations) conjugates the block-layout cone group.
    q = np.kron(np.eye(2), _np(G.rotated_cone_basis(4)))
    np.testing.assert_allclose(q.T @ q, np.eye(8), atol=1e-12)
    np.testing.assert_allclose(q[:4, 0], 0.5, atol=1e-12)
    cone = G.ConeGroup(8, cone_dim=4).sample(KEY, 8).matrix
    rotated = jnp.asarray(q, jnp.float32) @ cone @ jnp.asarray(q.T, jnp.float32)
    assert bool(jnp.all(G.RotatedConeGroup(8, cone_dim=4).contains(G.linear_element(rotated),
                                                                  atol=1e-4)))
    # each rotated element fixes the direction of each block's ones vector (up to scale)
    e = _np(G.RotatedConeGroup(8, cone_dim=4, scalings=False).sample(KEY, 8).matrix)
    ones = np.zeros((8, 2))
    ones[:4, 0] = ones[4:, 1] = 1
    image = e @ ones
    assert np.allclose(np.sort(image, axis=-1)[..., ::-1].sum(-1), 1, atol=1e-5)
    # for one cone and no scalings it is O(n-1) fixing 1
    o = G.OrthogonalComplement(5).sample(KEY, 8)
    assert bool(jnp.all(G.RotatedConeGroup(5, cone_dim=5, scalings=False).contains(
        o, atol=1e-4)))


NON_MEMBERS = [
    (G.PositiveMonomial(4), G.SignedPermutation(4)),
    (G.PositiveMonomial(4), G.Orthogonal(4)),
    (G.Phase(3), G.PermutationPhase(3)),
    (G.PermutationPhase(3), G.MonomialUnitary(3)),
    (G.MonomialUnitary(3), G.Unitary(3)),
    (G.RotatedConeGroup(8, cone_dim=4, scalings=False), G.RotatedConeGroup(8, cone_dim=4)),
    (G.RotatedConeGroup(8, cone_dim=4, scalings=False), G.Orthogonal(8)),
    (G.RotatedConeGroup(8, cone_dim=4, scalings=False), G.ConeGroup(8, cone_dim=4,
                                                                     scalings=False)),
]


@pytest.mark.parametrize("small,big", NON_MEMBERS, ids=lambda g: g.name)
def test_larger_groups_have_non_members(small, big):
    e = big.sample(KEY, 64)
    assert not bool(jnp.all(small.contains(e)))


def test_hierarchy():
    sub = G.is_subgroup
    assert sub(G.Phase(), G.PermutationPhase()) and sub(G.Phase(), G.Unitary())
    assert sub(G.PermutationPhase(), G.MonomialUnitary())
    assert sub(G.MonomialUnitary(), G.Unitary()) and not sub(G.Unitary(), G.MonomialUnitary())
    assert sub(G.PositiveMonomial(), G.GeneralLinear())
    assert not sub(G.PositiveMonomial(), G.Orthogonal())
    iso = G.RotatedConeGroup(cone_dim=4, scalings=False)
    assert sub(iso, G.RotatedConeGroup(cone_dim=4)) and sub(iso, G.Orthogonal())
    assert not sub(G.RotatedConeGroup(cone_dim=4), G.Orthogonal())
    assert [g.name for g in G.MonomialUnitary(3).supergroups()] == ["U(3)"]
    # the monomials Sₙ⋉(ℝ×)ⁿ hold {±I} × Sₙ⋉(ℝ×₊)ⁿ: not immediate above Sₙ⋉(ℝ×₊)ⁿ
    assert [g.name for g in G.PositiveMonomial(3).supergroups()] == [
        "S_3⋉(ℝ×₊)^3⋉ℝ^3", "±I_3 × S_3⋉(ℝ×₊)^3"]
    assert sub(G.Product(G.PointReflection(), G.PositiveMonomial(), n=3), G.Monomial(3))
    assert [g.name for g in G.Monomial(3).supergroups()] == ["GL(3)", "S_3⋉(ℝ×)^3⋉ℝ^3"]
    # Sₙ⋉(ℝ×)ⁿ is generated by Bₙ and the positive monomials, and contains ℝ×
    for sub_group in (G.SignedPermutation(), G.PositiveMonomial(), G.Scaling(),
                      G.Permutation()):
        assert sub(sub_group, G.Monomial())
    assert not sub(G.Monomial(), G.Orthogonal()) and not sub(G.Monomial(), G.PositiveMonomial())


def test_monomial_samples_and_membership():
    m = G.Monomial(5)
    e = m.sample(jax.random.key(0), 200)
    mat = np.asarray(e.matrix, np.float64)
    nonzero = np.abs(mat) > 0
    assert np.all(nonzero.sum(-1) == 1) and np.all(nonzero.sum(-2) == 1)  # monomial
    vals = mat[nonzero]
    assert (vals < 0).any() and (vals > 0).any()  # both signs
    assert np.all((np.abs(vals) >= 0.5 - 1e-6) & (np.abs(vals) <= 2 + 1e-6))
    assert not np.allclose(np.abs(vals), 1)  # not only signed permutations
    assert np.all(np.asarray(m.contains(e)))
    assert not np.any(np.asarray(G.SignedPermutation(5).contains(e)))
    assert not np.all(np.asarray(G.PositiveMonomial(5).contains(e)))
    dense = G.Element(jnp.asarray(mat[0] + 0.1), jnp.zeros(5))
    assert not bool(m.contains(dense))
    shifted = G.Element(e.matrix[0], jnp.ones(5))
    assert not bool(m.contains(shifted))


def test_names():
    assert G.PositiveMonomial().name == "S_n⋉(ℝ×₊)^n"
    assert G.PositiveMonomial(4).name == "S_4⋉(ℝ×₊)^4"
    assert G.Phase().name == "U(1)"
    assert G.MonomialUnitary(3).name == "U(1)^3⋊S_3"
    assert G.RotatedConeGroup(8, cone_dim=4, scalings=False).name == "R[S_2×O(3)^2]"


def test_errors_name_the_argument(library_checks_only):
    with pytest.raises(ValueError, match="cone_dim"):
        G.RotatedConeGroup(cone_dim=0)
    with pytest.raises(ValueError, match="divisible"):
        G.RotatedConeGroup(7, cone_dim=4)
    with pytest.raises(ValueError, match="`n` must be an integer >= 1"):
        G.PositiveMonomial(0)
    for bad in (float("nan"), -1.0, 1000.0):   # cosh ζ overflows float32 above ~89
        with pytest.raises(ValueError, match=r"Lorentz: `max_rapidity` must be a finite "
                                             r"number in \(0, 88\]"):
            G.Lorentz(3, max_rapidity=bad)


def test_every_form_of_registration_is_counted():
    """Remembered lattice answers are dropped when a rule is registered: each form of
    `register` (decorator, direct, annotated function) must advance the version."""
    import functools

    from taxdl.groups._hierarchy import counting_registrations

    @counting_registrations
    @functools.singledispatch
    def rule(x):
        return "default"

    class A:
        pass

    class B:
        pass

    class C:
        pass

    @rule.register(A)
    def _(x):
        return "A"

    assert rule.version == 1
    rule.register(B, lambda x: "B")
    assert rule.version == 2

    @rule.register
    def _(x: C):
        return "C"

    assert rule.version == 3
    rule.register(A | B)(lambda x: "A or B")
    assert rule.version == 4
    assert [rule(v) for v in (A(), B(), C(), 1)] == ["A or B", "A or B", "C", "default"]


def test_subgroup_answers_follow_a_rule_registered_later():
    """An answer remembered before a rule is registered is not reused after it."""
    from taxdl.groups._hierarchy import immediate_supergroups

    class Boosts(G.Lorentz):
        pass

    boosts = Boosts(3)
    assert not G.is_subgroup(boosts, G.Orthogonal(3))
    immediate_supergroups.register(Boosts, lambda g: (G.Orthogonal(g.n),))
    assert G.is_subgroup(boosts, G.Orthogonal(3))
