"""Group library: exact sampling (statistical tests against the Haar measure), membership,
hierarchy, errors."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import taxdl.groups as G

KEY = jax.random.key(1234)
ALPHA = 1e-3  # false-positive rate of each goodness-of-fit test at its fixed seed
N = 4000

ALL_BOUND = [
    G.Trivial(4), G.Permutation(5), G.EvenSignedPermutation(5), G.SignedPermutation(5),
    G.Orthogonal(5), G.SpecialOrthogonal(5), G.GeneralLinear(4), G.OrthogonalComplement(5),
    G.Scaling(4), G.Scaling(4, positive=True), G.Translation(4), G.ScaleShift(4),
    G.ScaleShift(4, positive=True), G.Dihedral(2, k=6), G.Simplex(3),
    G.BlockDiagonal(G.Orthogonal(2), G.Permutation(3)), G.ConeGroup(8, cone_dim=4),
    G.ConeGroup(8, cone_dim=4, scalings=False, layout="axes_first"),
    G.ConeGroup(7, cone_dim=4, shared_axis=True), G.Lorentz(4), G.Unitary(3),
    G.PermutationPhase(3), G.SU2(2), G.SU2(3, rep="adjoint"),
    G.Translations(4), G.Euclidean(4), G.Affine(4), G.ScaleTranslation(4),
    G.ScaleTranslation(4, positive=True), G.MonomialAffine(4), G.ConformalLinear(4),
    G.PointReflection(4), G.SignFlips(4), G.BlockPermutation(6, 2),
    G.BlockScaleShift(6, 3), G.BlockScaleShift(6, 2, positive=True),
    G.BlockScaleShift(6, 3, scales=False), G.BlockScaleShift(6, 3, scales=False, signs=True),
    G.BlockScaleShift(6, 1, scales=False, signs=True),
]


def _np(x):
    return np.asarray(x, dtype=np.complex128 if jnp.iscomplexobj(x) else np.float64)


@pytest.mark.parametrize("group", ALL_BOUND, ids=lambda g: g.name)
def test_samples_are_members_and_closed(group):
    e = group.sample(KEY, 32)
    assert e.matrix.shape == (32, group.dim, group.dim)
    assert bool(jnp.all(group.contains(e)))
    assert bool(jnp.all(group.contains(group.inverse(e), atol=1e-4)))
    assert bool(jnp.all(group.contains(group.compose(e, e[::-1]), atol=1e-4)))
    # inverse really inverts the action
    x = jax.random.normal(jax.random.key(3), (group.dim,)).astype(e.matrix.dtype)
    back = group.act(group.inverse(e[0]), group.act(e[0], x))
    np.testing.assert_allclose(_np(back), _np(x), atol=1e-4)


def test_sample_and_contains_inside_a_users_transformations():
    """Outside a trace, sampling and membership run as programs compiled for a quick
    compile (XLA options); inside jit (traced or constant key) and vmap they are nested
    programs, with the same results."""
    group = G.BlockDiagonal(G.Orthogonal(2), G.Permutation(3))
    e = group.sample(KEY, 8)
    for other in (jax.jit(lambda: group.sample(KEY, 8))(),  # constant key under jit
                  jax.jit(lambda k: group.sample(k, 8))(KEY)):
        np.testing.assert_array_equal(np.asarray(other.matrix), np.asarray(e.matrix))
    batched = jax.vmap(lambda k: group.sample(k, 8).matrix)(jnp.stack([KEY, KEY]))
    np.testing.assert_array_equal(np.asarray(batched[1]), np.asarray(e.matrix))
    assert bool(jnp.all(jax.jit(lambda: group.contains(e))()))
    assert bool(jnp.all(jax.jit(group.contains)(e)))
    outside = G.Orthogonal(5).sample(KEY, 8)
    assert not bool(jnp.any(jax.jit(group.contains)(outside)))


def test_small_program_options_can_be_replaced_from_the_environment():
    """`TAXDL_CHECK_XLA` (JSON) replaces the compile options of sampling, membership and
    the checker; the defaults keep the elemental CPU fusion emitters at level 0."""
    import json
    import subprocess
    import sys

    from taxdl._compile import SMALL_PROGRAM_OPTIONS

    assert SMALL_PROGRAM_OPTIONS["xla_backend_optimization_level"] == 0
    assert SMALL_PROGRAM_OPTIONS["xla_cpu_use_fusion_emitters"] is False
    chosen = {"xla_backend_optimization_level": 1}
    code = ("import json, jax, taxdl.groups as G; from taxdl._compile import "
            "SMALL_PROGRAM_OPTIONS as o; G.Permutation(3).sample(jax.random.key(0), 2); "
            "print(json.dumps(o))")
    env = dict(os.environ, TAXDL_CHECK_XLA=json.dumps(chosen), JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == chosen


@pytest.mark.parametrize("group", [G.Orthogonal(5), G.SpecialOrthogonal(5)],
                         ids=lambda g: g.name)
def test_float64_samples_are_orthogonal_to_float64_precision(group):
    with jax.enable_x64(True):
        e = group.sample(KEY, 16, jnp.float64)
        m = np.asarray(e.matrix)
    assert m.dtype == np.float64 and m.shape == (16, 5, 5)
    gram = np.einsum("nki,nkj->nij", m, m)
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(5), gram.shape), rtol=0,
                               atol=1e-12)
    det = np.linalg.det(m)
    if isinstance(group, G.SpecialOrthogonal):
        np.testing.assert_allclose(det, 1.0, rtol=0, atol=1e-12)
    else:
        assert (det < 0).any() and (det > 0).any()


@pytest.mark.parametrize("group", [
    G.SpecialOrthogonal(3), G.GeneralLinear(3), G.OrthogonalComplement(4),
    G.Dihedral(2, k=6), G.Simplex(3), G.SU2(3, rep="adjoint"), G.Lorentz(3),
    G.ConeGroup(8, cone_dim=4), G.RotatedConeGroup(8, cone_dim=4),
], ids=lambda g: g.name)
def test_float64_sampling_of_every_group_built_on_orthogonal_draws(group):
    with jax.enable_x64(True):
        e = group.sample(KEY, 8, jnp.float64)
        assert e.matrix.dtype == jnp.float64
        assert bool(jnp.all(group.contains(e, atol=1e-10)))


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
@pytest.mark.parametrize("group", [G.Orthogonal(4), G.SpecialOrthogonal(4), G.Simplex(3),
                                   G.Dihedral(2, k=6)], ids=lambda g: g.name)
def test_half_precision_samples_are_computed_in_float32_and_cast(group, dtype):
    e = group.sample(KEY, 8, dtype)
    assert e.matrix.dtype == dtype
    m = np.asarray(e.matrix.astype(jnp.float32), np.float64)
    gram = np.einsum("nki,nkj->nij", m, m)
    # only the final rounding to `dtype` is lost (a few ulps of a half-precision float)
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(m.shape[-1]), gram.shape),
                               rtol=0, atol=8 * float(jnp.finfo(dtype).eps))


NON_MEMBERS = [
    (G.Permutation(4), G.SignedPermutation(4)),
    (G.EvenSignedPermutation(5), G.SignedPermutation(5)),  # odd flips occur in B_n
    (G.SignedPermutation(4), G.Orthogonal(4)),
    (G.Orthogonal(4), G.GeneralLinear(4)),
    (G.SpecialOrthogonal(4), G.Orthogonal(4)),
    (G.OrthogonalComplement(4), G.Orthogonal(4)),
    (G.Scaling(4, positive=True), G.Scaling(4)),
    (G.Translation(4), G.ScaleShift(4)),
    (G.Dihedral(2, k=6), G.Orthogonal(2)),
    (G.Simplex(3), G.Orthogonal(3)),
    (G.Simplex(3), G.SignedPermutation(3)),
    (G.ConeGroup(8, cone_dim=4, scalings=False), G.ConeGroup(8, cone_dim=4)),
    (G.ConeGroup(8, cone_dim=4), G.Orthogonal(8)),
    (G.Lorentz(4), G.Orthogonal(4)),
    (G.PermutationPhase(3), G.Unitary(3)),
    (G.SU2(2), G.Unitary(2)),
    (G.Translation(4), G.Translations(4)),
    (G.Translations(4), G.Euclidean(4)),
    (G.Orthogonal(4), G.Euclidean(4)),
    (G.Euclidean(4), G.Affine(4)),
    (G.GeneralLinear(4), G.Affine(4)),
    (G.ScaleShift(4), G.Affine(4)),
]


@pytest.mark.parametrize("small,big", NON_MEMBERS, ids=lambda g: g.name)
def test_membership_rejects_elements_of_a_larger_group(small, big):
    e = big.sample(KEY, 64)
    inside = np.asarray(small.contains(e))
    assert not inside.all(), f"{small.name} accepted every sample of {big.name}"


def _ks_pvalue(samples, cdf):
    return stats.kstest(np.asarray(samples, np.float64), cdf).pvalue


def _entry_beta_cdf(n):
    # For Haar O(n), M_00 is a coordinate of a uniform point on S^{n-1}:
    # (M_00 + 1)/2 ~ Beta((n-1)/2, (n-1)/2).
    return lambda x: stats.beta.cdf((x + 1) / 2, (n - 1) / 2, (n - 1) / 2)


def _qr_without_sign_fix(key, num, n):
    q, _ = jnp.linalg.qr(jax.random.normal(key, (num, n, n)))
    return q


@pytest.mark.parametrize("n", [3, 6])
def test_orthogonal_entry_distribution_is_haar(n):
    m = G.Orthogonal(n).sample(KEY, N).matrix
    assert _ks_pvalue(m[:, 0, 0], _entry_beta_cdf(n)) > ALPHA
    assert _ks_pvalue(m[:, n - 1, 1], _entry_beta_cdf(n)) > ALPHA
    # E[tr M] = 0 and E[tr² M] = 1 for Haar O(n) (Diaconis & Shahshahani).
    tr = np.asarray(jnp.trace(m, axis1=1, axis2=2), np.float64)
    assert abs(tr.mean()) < 4 / np.sqrt(N)
    assert abs((tr**2).mean() - 1) < 0.15


@pytest.mark.parametrize("n", [3, 6])
def test_the_same_check_rejects_a_non_haar_sampler(n):
    """QR of a Gaussian *without* the sign fix is a classic non-Haar sampler."""
    q = _qr_without_sign_fix(KEY, N, n)
    p = min(_ks_pvalue(q[:, 0, 0], _entry_beta_cdf(n)), _ks_pvalue(q[:, 1, 1], _entry_beta_cdf(n)))
    assert p < ALPHA


def test_special_orthogonal_is_haar_on_so():
    m = G.SpecialOrthogonal(5).sample(KEY, N).matrix
    assert np.allclose(np.linalg.det(_np(m)), 1, atol=1e-4)
    assert _ks_pvalue(m[:, 2, 3], _entry_beta_cdf(5)) > ALPHA


def test_orthogonal_complement_is_haar_on_the_hyperplane():
    n = 5
    r = G.OrthogonalComplement(n).sample(KEY, N).matrix
    h = G.ones_complement_basis(n, jnp.float32)
    q = jnp.einsum("ia,nij,jb->nab", h, r, h)  # the O(n-1) block in the Helmert frame
    assert _ks_pvalue(q[:, 0, 0], _entry_beta_cdf(n - 1)) > ALPHA
    assert _ks_pvalue(q[:, 3, 1], _entry_beta_cdf(n - 1)) > ALPHA


def test_unitary_entry_distribution_is_haar():
    n = 4
    u = G.Unitary(n).sample(jax.random.key(1), N).matrix
    # |U_00|² ~ Beta(1, n-1); the phase of U_00 is uniform.
    mag = np.abs(_np(u[:, 0, 0])) ** 2
    assert stats.kstest(mag, stats.beta(1, n - 1).cdf).pvalue > ALPHA
    phase = np.angle(_np(u[:, 1, 2]))
    assert stats.kstest(phase, stats.uniform(-np.pi, 2 * np.pi).cdf).pvalue > ALPHA


def test_su2_is_uniform_on_the_three_sphere():
    u = G.SU2(2).sample(KEY, N).matrix
    a = np.real(_np(u[:, 0, 0]))
    assert _ks_pvalue(a, lambda x: stats.beta.cdf((x + 1) / 2, 1.5, 1.5)) > ALPHA
    # adjoint representation: a rotation of R^3 whose entries are Haar on SO(3)
    r = G.su2_adjoint(u)
    assert np.allclose(np.linalg.det(_np(r)), 1, atol=1e-4)
    assert _ks_pvalue(r[:, 0, 2], _entry_beta_cdf(3)) > ALPHA


def _chi2_uniform(counts):
    counts = np.asarray(counts)
    return stats.chisquare(counts).pvalue


def test_permutations_are_uniform():
    n = 4
    p = np.asarray(G.Permutation(n).sample(KEY, N).matrix)
    # index of each permutation among all 24
    codes = (np.argmax(p, axis=-1) * (n ** np.arange(n))).sum(-1)
    _, counts = np.unique(codes, return_counts=True)
    assert len(counts) == 24 and _chi2_uniform(counts) > ALPHA
    # fixed points of a uniform permutation: mean 1, variance 1
    fixed = np.trace(p, axis1=1, axis2=2)
    assert abs(fixed.mean() - 1) < 0.1 and abs(fixed.var() - 1) < 0.15


def test_uniformity_check_rejects_a_biased_permutation_sampler():
    n = 4
    keys = jax.random.split(KEY, N)
    # one random transposition of the identity: far from uniform on S_4
    def biased(k):
        i, j = jax.random.choice(k, n, (2,), replace=False)
        perm = jnp.arange(n).at[i].set(j).at[j].set(i)
        return jax.nn.one_hot(perm, n)

    p = np.asarray(jax.vmap(biased)(keys))
    codes = (np.argmax(p, axis=-1) * (n ** np.arange(n))).sum(-1)
    full = np.zeros(24)
    _, counts = np.unique(codes, return_counts=True)
    full[: len(counts)] = counts
    assert _chi2_uniform(full) < ALPHA


@pytest.mark.parametrize("group,order", [(G.SignedPermutation(3), 48),
                                         (G.EvenSignedPermutation(3), 24),
                                         (G.Dihedral(2, k=5), 10), (G.Simplex(3), 24)],
                         ids=lambda g: getattr(g, "name", str(g)))
def test_finite_groups_are_uniform_over_their_elements(group, order):
    m = np.round(np.asarray(group.sample(KEY, N).matrix, np.float64), 4)
    _, counts = np.unique(m.reshape(N, -1), axis=0, return_counts=True)
    assert len(counts) == order
    assert _chi2_uniform(counts) > ALPHA


def test_cone_group_structure_and_haar_bodies():
    g = G.ConeGroup(12, cone_dim=4, scalings=False)
    m = np.asarray(g.sample(KEY, N).matrix, np.float64)
    # cone permutation uniform over S_3
    axes = m[:, [0, 4, 8]][:, :, [0, 4, 8]]
    codes = (np.argmax(axes, -1) * (3 ** np.arange(3))).sum(-1)
    _, counts = np.unique(codes, return_counts=True)
    assert len(counts) == 6 and _chi2_uniform(counts) > ALPHA
    # each body rotation is Haar on O(3): look at the block mapping into cone 0's body
    src = np.argmax(axes[:, 0, :], -1)
    body = np.stack([m[i, 1:4, 4 * s + 1:4 * s + 4] for i, s in enumerate(src)])
    assert _ks_pvalue(body[:, 0, 0], _entry_beta_cdf(3)) > ALPHA


def test_permutation_phase_has_uniform_phase():
    m = _np(G.PermutationPhase(3).sample(KEY, N).matrix)
    phase = np.angle(m.sum(axis=(1, 2)) / 3)
    assert stats.kstest(phase, stats.uniform(-np.pi, 2 * np.pi).cdf).pvalue > ALPHA


def test_general_linear_is_well_conditioned_and_not_haar():
    g = G.GeneralLinear(6)
    assert not g.haar and not g.compact
    m = _np(g.sample(KEY, 256).matrix)
    assert np.linalg.cond(m).max() <= 4.0 + 1e-3
    assert (np.linalg.det(m) < 0).any() and (np.linalg.det(m) > 0).any()


def test_lorentz_preserves_the_metric_and_reaches_every_component():
    m = _np(G.Lorentz(4).sample(KEY, 512).matrix)
    eta = np.diag([1.0, -1, -1, -1])
    np.testing.assert_allclose(np.einsum("nji,jk,nkl->nil", m, eta, m),
                               np.broadcast_to(eta, m.shape), atol=1e-4)
    signs = {(np.sign(x[0, 0]), np.sign(np.linalg.det(x))) for x in m}
    assert len(signs) == 4


def test_hierarchy_chain_and_partial_order():
    chain = [G.Trivial(), G.Permutation(), G.EvenSignedPermutation(), G.SignedPermutation(),
             G.Orthogonal(), G.GeneralLinear()]
    for i, a in enumerate(chain):
        for j, b in enumerate(chain):
            assert G.is_subgroup(a, b) == (i <= j), (a.name, b.name)
    assert G.is_subgroup(G.Simplex(), G.Orthogonal())
    assert not G.is_subgroup(G.Simplex(), G.SignedPermutation())
    assert G.is_subgroup(G.Trivial(), G.Simplex())
    assert G.is_subgroup(G.Permutation(), G.OrthogonalComplement())
    assert not G.is_subgroup(G.SignedPermutation(), G.OrthogonalComplement())
    assert G.is_subgroup(G.Scaling(positive=True), G.ScaleShift())
    assert not G.is_subgroup(G.Scaling(), G.ScaleShift(positive=True))
    assert G.is_subgroup(G.ConeGroup(cone_dim=4, scalings=False), G.Orthogonal())
    assert not G.is_subgroup(G.ConeGroup(cone_dim=4), G.Orthogonal())
    # the positive monomials lie above Sₙ, but they hold ℝ×₊ × Sₙ: not immediate
    assert [s.name for s in G.Permutation(5).supergroups()] == [
        "D_5", "O(4)", "ℝ×₊ × S_5", "±I_5 × S_5", "+λ1 × S_5"]
    # permutations and O(n−1) fix 1, so the shifts along it extend them (a map declared
    # Sₙ-equivariant must fail under +λ1 × Sₙ, e.g. elementwise functions other than
    # x ↦ x + c); the maximality check tests it, but it is not a hierarchy rule (the walk
    # from the trivial group would multiply its products)
    assert "+λ1 × O(4)" in [s.name for s in G.OrthogonalComplement(5).supergroups()]
    assert G.is_subgroup(G.Permutation(5), G.Product(G.Translation(), G.Permutation(5)))
    assert not any("+λ1" in s.name for s in G.immediate_supergroups(G.Permutation(5)))
    assert G.shift_extensions(G.PointReflection(5)) == ()      # −I moves 1
    assert G.shift_extensions(G.Trivial(5)) == ()               # +λ1 itself is listed
    assert G.shift_extensions(G.Product(G.Translation(), G.Permutation(5))) == ()
    assert "S_5⋉(ℝ×₊)^5" in [s.name for s in G.immediate_supergroups(G.Permutation(5))]
    assert G.is_subgroup(G.Product(G.Scaling(positive=True), G.Permutation(5)),
                         G.PositiveMonomial(5))
    assert G.is_subgroup(G.Permutation(), G.PositiveMonomial())
    assert G.is_subgroup(G.Scaling(positive=True), G.PositiveMonomial())
    assert not G.is_subgroup(G.Scaling(), G.PositiveMonomial())
    assert not G.is_subgroup(G.PositiveMonomial(), G.Orthogonal())
    assert [s.name for s in G.SignedPermutation().supergroups()] == ["O(n)", "ℝ×₊ × B_n"]


def test_groups_bound_to_different_dimensions_are_not_subgroups():
    # O(5) and O(4) act on different spaces: neither holds the other, whatever the family
    assert not G.is_subgroup(G.Orthogonal(5), G.Orthogonal(4))
    assert not G.is_subgroup(G.Orthogonal(4), G.Orthogonal(5))
    assert not G.is_subgroup(G.Permutation(3), G.Orthogonal(5))
    assert not G.is_subgroup(G.Trivial(3), G.Orthogonal(5))
    assert not G.is_subgroup(G.Product(G.Scaling(positive=True), G.Permutation(4)),
                             G.PositiveMonomial(5))
    # one dimension, or a family without one, follows the hierarchy as before
    assert G.is_subgroup(G.Permutation(5), G.Orthogonal(5))
    assert G.is_subgroup(G.Permutation(5), G.Orthogonal())
    assert G.is_subgroup(G.Permutation(), G.Orthogonal(5))
    assert G.same_group(G.Orthogonal(5), G.Orthogonal(4))   # one family, two dimensions


def test_sign_flips_and_point_reflection_lie_in_the_lorentz_group():
    """O(1, n−1) is the full Lorentz group: every diagonal ±1 matrix preserves
    η = diag(1, −1, …, −1), so ℤ₂ⁿ and {±I} lie in it (their samples are members)."""
    for n in (None, 2, 4, 5):
        lorentz = G.Lorentz() if n is None else G.Lorentz(n)
        for small in (G.SignFlips, G.PointReflection):
            sub = small() if n is None else small(n)
            assert G.is_subgroup(sub, lorentz), (sub.name, lorentz.name)
            assert not G.is_subgroup(lorentz, sub)
            if n is not None:
                assert np.asarray(lorentz.contains(sub.sample(KEY, 64))).all()
    assert "O(1,n-1)" in [s.name for s in G.SignFlips().supergroups()]
    # B_n is not inside the Lorentz group (a permutation mixes time and space)
    assert not G.is_subgroup(G.SignedPermutation(4), G.Lorentz(4))


def test_membership_at_another_tolerance_compiles_nothing(jax_events):
    """The tolerance is an argument of the compiled membership test, not a constant in
    it: testing the same elements at a second tolerance traces and compiles nothing, and
    the tolerance still decides (a scaled rotation is orthogonal only to a loose one)."""
    group = G.Orthogonal(5)
    e = group.sample(KEY, 16)
    scaled = G.Element(e.matrix * 1.01, e.shift)   # MᵀM − I = 0.0201 I
    assert not np.asarray(group.contains(scaled, atol=1e-4)).any()
    with jax_events() as recorded:
        loose = group.contains(scaled, atol=0.03)
    assert not any("trace" in ev or "compile" in ev for ev in recorded), recorded
    assert np.asarray(loose).all()


def test_checker_draws_products_from_its_factors_samplers(jax_events):
    """The checker samples a product as `Product.sample` does (the key split between the
    factors, one element of each composed), from the factors' own compiled samplers: a
    new product of sampled factors compiles no sampler."""
    from taxdl.testing import _engine as E

    prod = G.Product(G.Scaling(positive=True), G.SignedPermutation(), n=5)
    for f in prod.factors:
        E.sample_elements(f, None, KEY, 32, jnp.float32)
    E.sample_elements(G.Product(G.PointReflection(), G.Permutation(), n=5), None, KEY, 32,
                      jnp.float32)   # compiles the composition for this shape
    with jax_events() as recorded:
        e, image = E.sample_elements(prod, None, KEY, 32, jnp.float32)
    assert not any("compile" in ev for ev in recorded), recorded
    assert image is e
    ref = prod.sample(KEY, 32)
    np.testing.assert_allclose(_np(e.matrix), _np(ref.matrix), rtol=1e-6)
    # scalars times signed permutations: every row has one non-zero entry, ±a
    m = _np(e.matrix)
    assert ((m != 0).sum(-1) == 1).all() and np.asarray(prod.contains(e)).all()


def test_supergroups_are_the_least_of_what_the_rules_list():
    """`supergroups()` keeps those listed supergroups that hold no other listed one, and
    each listed one it drops holds one it keeps (so maximality loses no test): checked
    on the first 60 groups reached upwards from the trivial group in dimension 4 (even:
    −I lies in Dₙ, so more of the listed groups are nested)."""
    for n in (4,):
        frontier, seen = [G.Trivial(n)], set()
        while frontier and len(seen) < 60:
            g = frontier.pop(0)
            if g.name in seen:
                continue
            seen.add(g.name)
            listed = G.immediate_supergroups(g) + G.shift_extensions(g)
            kept = g.supergroups()
            assert set(s.name for s in kept) <= set(s.name for s in listed), g.name
            for a in kept:
                assert G.is_subgroup(g, a) and not G.is_subgroup(a, g), (g.name, a.name)
                assert not any(b is not a and G.is_subgroup(b, a) and not G.is_subgroup(a, b)
                               for b in kept), (g.name, a.name)
            for s in listed:
                assert any(G.is_subgroup(k, s) for k in kept), (g.name, s.name)
            frontier += list(listed)
        assert len(seen) == 60


def test_subgroup_relation_matches_sampled_membership():
    """The declared order agrees with membership: samples of a subgroup lie in the
    supergroup."""
    pairs = [(G.Permutation(5), G.EvenSignedPermutation(5)),
             (G.EvenSignedPermutation(5), G.SignedPermutation(5)),
             (G.SignedPermutation(5), G.Orthogonal(5)), (G.Simplex(5), G.Orthogonal(5)),
             (G.Permutation(5), G.OrthogonalComplement(5)),
             (G.ConeGroup(8, cone_dim=4, scalings=False), G.Orthogonal(8)),
             (G.Scaling(5, positive=True), G.ScaleShift(5)),
             (G.Translation(5), G.ScaleShift(5, positive=True)),
             (G.Translation(5), G.Translations(5)), (G.Translations(5), G.Euclidean(5)),
             (G.Orthogonal(5), G.Euclidean(5)), (G.Euclidean(5), G.Affine(5)),
             (G.GeneralLinear(5), G.Affine(5)), (G.ScaleShift(5), G.Affine(5)),
             (G.Trivial(5), G.PointReflection(5)), (G.PointReflection(5), G.Scaling(5)),
             (G.PointReflection(5), G.SignFlips(5)), (G.SignFlips(5), G.SignedPermutation(5)),
             (G.SignFlips(5), G.Diagonal(5)),
             (G.BlockPermutation(6, 2), G.Permutation(6)),
             (G.BlockScaleShift(6, 2, scales=False), G.BlockScaleShift(6, 2, positive=True)),
             (G.BlockScaleShift(6, 2, scales=False), G.Translations(6)),
             (G.BlockScaleShift(6, 2, positive=True), G.BlockScaleShift(6, 2)),
             (G.BlockScaleShift(6, 2, positive=True), G.DiagonalAffine(6, positive=True)),
             (G.BlockScaleShift(6, 2), G.DiagonalAffine(6)),
             (G.ScaleShift(12), G.BlockScaleShift(12, 6)),
             (G.ScaleShift(12, positive=True), G.BlockScaleShift(12, 4, positive=True)),
             (G.Translation(8), G.BlockScaleShift(8, 4, scales=False)),
             (G.BlockScaleShift(12, 6, positive=True), G.BlockScaleShift(12, 3, positive=True)),
             (G.BlockScaleShift(12, 4, scales=False), G.BlockScaleShift(12, 2, scales=False)),
             (G.BlockScaleShift(6, 3, scales=False), G.BlockScaleShift(6, 3, scales=False,
                                                                       signs=True)),
             (G.BlockScaleShift(6, 3, scales=False, signs=True), G.BlockScaleShift(6, 3)),
             (G.BlockScaleShift(12, 6, scales=False, signs=True),
              G.BlockScaleShift(12, 3, scales=False, signs=True)),
             (G.BlockScaleShift(6, 3, scales=False, signs=True),
              G.BlockScaleShift(6, 1, scales=False, signs=True)),
             (G.Translations(6), G.BlockScaleShift(6, 1, scales=False, signs=True)),
             (G.BlockScaleShift(6, 1, scales=False, signs=True), G.Euclidean(6)),
             (G.BlockScaleShift(6, 1, scales=False, signs=True), G.DiagonalAffine(6)),
             (G.PointReflection(6), G.BlockScaleShift(6, 3, scales=False, signs=True))]
    for small, big in pairs:
        assert G.is_subgroup(small, big)
        assert bool(jnp.all(big.contains(small.sample(KEY, 64), atol=1e-4))), (small.name, big.name)


def test_a_sign_and_a_shift_per_block():
    """(±1,+λ1)^G: each block flipped or not and shifted as a whole; neither a subgroup of
    the shifts alone nor of the positive scales, inside the per-block scales and the
    per-coordinate signs and shifts."""
    g = G.BlockScaleShift(6, 3, scales=False, signs=True)
    e = g.sample(KEY, 256)
    d = np.asarray(jnp.diagonal(e.matrix, axis1=-2, axis2=-1)).reshape(256, 2, 3)
    t = np.asarray(e.shift).reshape(256, 2, 3)
    assert np.all(np.abs(d) == 1) and np.all(d == d[..., :1]) and np.all(t == t[..., :1])
    assert {-1.0, 1.0} <= set(d[:, 0, 0]) and np.any(d[:, 0, 0] != d[:, 1, 0])
    shifts = G.BlockScaleShift(6, 3, scales=False)
    assert not bool(jnp.all(shifts.contains(e, atol=1e-4)))
    assert not G.is_subgroup(g, shifts)
    assert not G.is_subgroup(g, G.BlockScaleShift(6, 3, positive=True))
    assert not G.is_subgroup(G.BlockScaleShift(6, 3), g)
    # with the sign flips of every coordinate in another factor, the per-coordinate signs
    # add nothing: (±1)ⁿ⋉ℝⁿ × Bₙ is Bₙ⋉T(n), not with Sₙ
    from taxdl.groups._hierarchy import simplify_product as simplify

    coordinate = G.BlockScaleShift(6, 1, scales=False, signs=True)
    assert G.same_group(simplify(G.Product(coordinate, G.SignedPermutation(6))),
                        G.Product(G.Translations(6), G.SignedPermutation(6)))
    assert G.same_group(simplify(G.Product(coordinate, G.Permutation(6))),
                        G.Product(coordinate, G.Permutation(6)))
    for bad in ({"signs": True}, {"scales": False, "signs": True, "positive": True}):
        with pytest.raises(ValueError, match="signs=True"):
            G.BlockScaleShift(6, 3, **bad)


def test_names():
    assert G.Orthogonal().name == "O(n)" and G.Orthogonal(8).name == "O(8)"
    assert G.Permutation().name == "S_n" and G.SignedPermutation(3).name == "B_3"
    assert G.OrthogonalComplement().name == "O(n-1)"
    assert G.ScaleShift().name == "ℝ×,+λ1"
    assert G.ScaleShift(positive=True).name == "ℝ×₊,+λ1" and G.Scaling(3).name == "ℝ×"
    assert G.OrthogonalComplement(5).name == "O(4)" and G.Lorentz().name == "O(1,n-1)"
    assert G.Lorentz(4).name == "O(1,3)" and G.Dihedral(2, k=6).name == "Ψ(D_6)"
    assert G.SU2().name == "SU(2)" and G.SU2(rep="adjoint").name == "SU(2)→SO(3)"
    assert G.ConeGroup().name == "S_G×O(3)^G×(ℝ×₊)^G"
    assert G.ConeGroup(7, cone_dim=4, shared_axis=True).name == "S_2×O(3)^2×ℝ×₊"
    assert G.RotatedConeGroup(8, cone_dim=4, scalings=False).name == "R[S_2×O(3)^2]"
    assert G.MonomialUnitary(3).name == "U(1)^3⋊S_3"
    assert G.BlockDiagonal(G.Orthogonal(2), G.Permutation(3)).name == "O(2) ⊕ S_3"
    assert G.Translations().name == "T(n)" and G.Translations(3).name == "T(3)"
    assert G.Euclidean().name == "E(n)" and G.Euclidean(3).name == "E(3)"
    assert G.Affine().name == "Aff(n)" and G.Affine(3).name == "Aff(3)"
    assert G.PointReflection().name == "±I_n" and G.SignFlips(3).name == "ℤ₂^3"
    assert G.BlockPermutation(12, 3).name == "S_3≀S_4"
    assert G.BlockPermutation(block=3).name == "S_3≀S_n/3"
    assert G.BlockScaleShift(12, 3, positive=True).name == "(ℝ×₊,+λ1)^4"
    assert G.BlockScaleShift(12, 3, scales=False).name == "(+λ1)^4"
    assert G.BlockScaleShift(12, 3, scales=False, signs=True).name == "(±1,+λ1)^4"
    assert G.BlockScaleShift(12, 1, scales=False, signs=True).name == "(±1)^12⋉ℝ^12"
    assert str(G.Product(G.Scaling(), G.Orthogonal())) == "ℝ× × O(n)"


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-3, ValueError), (True, TypeError)])
def test_dimension_errors(bad, error, library_checks_only):
    with pytest.raises(error, match="Orthogonal: `n` must be an integer >= 1"):
        G.Orthogonal(bad)
    with pytest.raises(error, match="Permutation: `n` must be an integer >= 1"):
        G.Permutation().on(bad)


def test_unbound_family_cannot_sample():
    with pytest.raises(ValueError, match=r"call `\.on\(n\)`"):
        G.Orthogonal().sample(KEY, 3)


def test_contains_rejects_wrong_shapes():
    g = G.Orthogonal(4)
    with pytest.raises(ValueError, match=r"\(4, 4\) matrix"):
        g.contains(G.linear_element(jnp.eye(3)))


def test_act_rejects_wrong_shapes():
    g = G.Orthogonal(4)
    with pytest.raises(ValueError, match="last axis of size 4"):
        g.act(g.sample(KEY, 1)[0], jnp.ones(3))


def test_cone_group_hyperparameter_errors():
    with pytest.raises(ValueError, match="divisible by the cone dimension S = 4"):
        G.ConeGroup(10, cone_dim=4)
    with pytest.raises(ValueError, match="S - 1 = 3"):
        G.ConeGroup(9, cone_dim=4, shared_axis=True)
    with pytest.raises(ValueError, match="ConeGroup: `cone_dim` must be an integer >= 2"):
        G.ConeGroup(cone_dim=1)


def test_scalar_extensions_in_the_hierarchy():
    """ℝ×₊ × G and {±I} × G lie above each linear group G that lacks them (scalars commute
    with every linear map); their products stay commuting, and the two scalar groups
    together are ℝ×."""
    names = lambda g: [s.name for s in g.supergroups()]  # noqa: E731
    assert "ℝ×₊ × B_3" in names(G.SignedPermutation(3))
    assert "±I_3 × B_3" not in names(G.SignedPermutation(3))   # −I ∈ Bₙ
    assert "ℝ×₊ × SO(3)" in names(G.SpecialOrthogonal(3))
    assert not any("±I" in s for s in names(G.SpecialOrthogonal(3)))   # O(3) already
    assert "±I_n × Ψ(D_3)" in names(G.Dihedral(k=3))
    assert "±I_n × Ψ(D_4)" not in names(G.Dihedral(k=4))   # rotation by π ∈ D₄
    assert "±I_3 × S_3⋉(ℝ×₊)^3" in names(G.PositiveMonomial(3))
    # above ℝ×₊ × Sₙ: ℝ× × Sₙ, (ℝ×₊,+λ1) × Sₙ (permutations fix 1), and the products with
    # Sₙ's own supergroups; never (ℝ×₊)ⁿ × Sₙ, which would not commute
    above = names(G.Product(G.Scaling(positive=True), G.Permutation(5)))
    assert above == ["ℝ× × S_5", "ℝ×₊,+λ1 × S_5", "ℝ×₊ × D_5", "ℝ×₊ × O(4)",
                     "S_5⋉(ℝ×₊)^5"]
    # in an even dimension {±I} × Sₙ is inside Dₙ; the sign and the positive scalars
    # together are ℝ×, and ℝ× × H is {±I} × H when H has the positive scalars
    assert "D_4" in names(G.Product(G.PointReflection(), G.Permutation(4)))
    from taxdl.groups._hierarchy import simplify_product as simplify
    both = simplify(G.Product(G.Scaling(positive=True), G.PointReflection(),
                              G.Permutation(), n=5))
    assert both.name == "ℝ× × S_5"
    assert simplify(G.Product(G.Scaling(), G.PositiveMonomial(), n=3)).name == (
        "±I_3 × S_3⋉(ℝ×₊)^3")
    for g in (G.Permutation(5), G.SignedPermutation(3), G.OrthogonalComplement(4)):
        for sup in g.supergroups():
            assert G.is_subgroup(g, sup) and not G.is_subgroup(sup, g), (g.name, sup.name)
    # sampled elements of a scalar extension are scalars times elements of the group, and
    # membership is decided by dividing out |det|^(1/n) (and trying both signs for ±I, ℝ×)
    pos = G.Product(G.Scaling(positive=True), G.Permutation(5))
    sign = G.Product(G.PointReflection(), G.Permutation(5))
    e = pos.sample(KEY, 64)
    m = np.asarray(e.matrix, np.float64)
    a = np.abs(m).sum(-1)[:, :1]
    assert np.all(a > 0) and np.allclose(np.abs(m).sum(-1), a) and not np.allclose(a, 1)
    assert np.asarray(G.Permutation(5).contains(G.Element(
        jnp.asarray(m / a[:, :, None], jnp.float32), e.shift))).all()
    assert np.asarray(pos.contains(e)).all()
    assert not np.asarray(sign.contains(e)).any()          # scales ≠ ±1
    flipped = G.Element(-e.matrix, e.shift)
    assert not np.asarray(pos.contains(flipped)).any()     # negative scalars
    assert np.asarray(G.Product(G.Scaling(), G.Permutation(5)).contains(flipped)).all()
    s = sign.sample(KEY, 64)
    assert np.asarray(sign.contains(s)).all()
    negative = np.asarray(s.matrix).sum((-2, -1)) < 0
    assert negative.any() and (~negative).any()
    np.testing.assert_array_equal(np.asarray(G.Permutation(5).contains(s)), ~negative)
    b = G.SignedPermutation(5).sample(KEY, 256)             # mixed signs are outside
    uniform = np.abs(np.asarray(b.matrix).sum((-2, -1))) == 5
    np.testing.assert_array_equal(np.asarray(sign.contains(b)), uniform)
    with pytest.raises(NotImplementedError):
        G.Product(G.Scaling(), G.Diagonal(5)).contains(e)


def test_products_in_the_hierarchy():
    conformal = G.Product(G.Scaling(), G.Orthogonal())
    assert G.is_subgroup(G.Scaling(), conformal) and G.is_subgroup(G.Orthogonal(), conformal)
    assert G.is_subgroup(G.Product(G.Scaling(), G.SignedPermutation()), conformal)
    assert not G.is_subgroup(conformal, G.Orthogonal())
    assert not G.is_subgroup(G.Lorentz(), conformal)
    # ℝ× × O(n) is the family of similarities, in both directions
    assert G.is_subgroup(conformal, G.ConformalLinear())
    assert G.is_subgroup(G.ConformalLinear(), conformal)
    sups = [s.name for s in G.Product(G.Scaling(), G.SignedPermutation()).supergroups()]
    assert "ℝ×·O(n)" in sups and "B_n" not in sups
    # a trivial factor is dropped: ℝ× × I has exactly ℝ×'s supergroups
    assert [s.name for s in G.Product(G.Scaling(), G.Trivial()).supergroups()] == [
        s.name for s in G.Scaling().supergroups()]
    # every listed supergroup really contains the product (sampled membership where
    # decidable) and is strictly larger in the order
    for sup in G.Product(G.Scaling(), G.SignedPermutation()).supergroups():
        assert G.is_subgroup(G.Product(G.Scaling(), G.SignedPermutation()), sup)
        assert not G.is_subgroup(sup, G.Product(G.Scaling(), G.SignedPermutation()))


# ---------------------------------------------------------------- affine families
AFFINE = [G.Translations(4), G.Euclidean(4), G.Affine(4)]


@pytest.mark.parametrize("group", AFFINE, ids=lambda g: g.name)
def test_affine_families_are_not_compact_and_sample_both_parts(group):
    assert not group.compact and not group.haar and not group.isometric
    assert not group.finite and group.field == "real"
    e = group.sample(KEY, 16)
    assert e.matrix.dtype == jnp.float32 and e.shift.dtype == jnp.float32
    assert e.matrix.shape == (16, 4, 4) and e.shift.shape == (16, 4)
    assert np.all(np.abs(_np(e.shift)) > 0)  # a genuine translation part


@pytest.mark.parametrize("group", AFFINE, ids=lambda g: g.name)
def test_affine_families_sample_float64(group):
    with jax.enable_x64(True):
        e = group.sample(KEY, 8, jnp.float64)
        assert e.matrix.dtype == jnp.float64 and e.shift.dtype == jnp.float64
        assert e.matrix.shape == (8, 4, 4) and e.shift.shape == (8, 4)
        assert bool(jnp.all(group.contains(e, atol=1e-10)))
        assert bool(jnp.all(group.contains(group.inverse(e), atol=1e-10)))
        m = np.asarray(e.matrix)
    if isinstance(group, G.Translations):
        np.testing.assert_array_equal(m, np.broadcast_to(np.eye(4), m.shape))
    if isinstance(group, G.Euclidean):
        gram = np.einsum("nki,nkj->nij", m, m)
        np.testing.assert_allclose(gram, np.broadcast_to(np.eye(4), gram.shape), rtol=0,
                                   atol=1e-12)


def _affine_element(matrix, shift):
    return G.Element(jnp.asarray(matrix, jnp.float32), jnp.asarray(shift, jnp.float32))


def test_affine_membership_of_chosen_elements():
    t = np.array([0.3, -1.0, 2.0, 0.5])
    rot = np.array([[0.0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    near_rot = rot @ np.diag([1.0, 1.0, 1.0, 1.01])  # not orthogonal
    singular = np.diag([1.0, 2.0, 0.0, 1.0])
    tr, eu, af = AFFINE
    # a translation by a generic vector is in all three, but not along 1 only
    assert bool(tr.contains(_affine_element(np.eye(4), t)))
    assert not bool(G.Translation(4).contains(_affine_element(np.eye(4), t)))
    assert bool(eu.contains(_affine_element(np.eye(4), t)))
    # a rotation with a shift: Euclidean, not a translation, not linear
    assert not bool(tr.contains(_affine_element(rot, t)))
    assert bool(eu.contains(_affine_element(rot, t)))
    assert not bool(G.Orthogonal(4).contains(_affine_element(rot, t)))
    # a non-orthogonal invertible map with a shift: affine only
    assert not bool(eu.contains(_affine_element(near_rot, t)))
    assert bool(af.contains(_affine_element(near_rot, t)))
    assert not bool(G.GeneralLinear(4).contains(_affine_element(near_rot, t)))
    # a singular matrix or a non-finite shift is in none of them
    assert not bool(af.contains(_affine_element(singular, t)))
    bad_shift = np.array([0.0, np.inf, 0.0, 0.0])
    for g in AFFINE:
        assert not bool(g.contains(_affine_element(np.eye(4), bad_shift))), g.name
    # an atol decides near-misses
    assert bool(eu.contains(_affine_element(rot @ np.diag([1, 1, 1, 1 + 1e-7]), t)))
    assert not bool(tr.contains(_affine_element(np.eye(4) + 1e-3, t), atol=1e-4))
    assert bool(tr.contains(_affine_element(np.eye(4) + 1e-5, t), atol=1e-4))


@pytest.mark.parametrize("n", [3, 6])
def test_euclidean_linear_part_is_haar_and_shift_standard_normal(n):
    e = G.Euclidean(n).sample(KEY, N)
    m = e.matrix
    assert _ks_pvalue(m[:, 0, 0], _entry_beta_cdf(n)) > ALPHA
    assert _ks_pvalue(m[:, n - 1, 1], _entry_beta_cdf(n)) > ALPHA
    tr = np.asarray(jnp.trace(m, axis1=1, axis2=2), np.float64)
    assert abs(tr.mean()) < 4 / np.sqrt(N)
    assert abs((tr**2).mean() - 1) < 0.15
    shift = np.asarray(e.shift, np.float64)
    assert _ks_pvalue(shift[:, 0], stats.norm.cdf) > ALPHA
    assert _ks_pvalue(shift[:, n - 1], stats.norm.cdf) > ALPHA
    # the shift is drawn independently of the linear part
    r = np.corrcoef(np.asarray(m[:, 0, 0], np.float64), shift[:, 0])[0, 1]
    assert abs(r) < 4 / np.sqrt(N)


def test_affine_linear_part_is_the_well_conditioned_gl_draw():
    e = G.Affine(6).sample(KEY, 256)
    m = _np(e.matrix)
    assert np.linalg.cond(m).max() <= 4.0 + 1e-3
    assert (np.linalg.det(m) < 0).any() and (np.linalg.det(m) > 0).any()
    assert not bool(jnp.all(G.Euclidean(6).contains(e)))


def test_affine_hierarchy_edges():
    T, E, A = G.Translations(), G.Euclidean(), G.Affine()
    DA, DAp = G.DiagonalAffine(), G.DiagonalAffine(positive=True)
    ST, STp = G.ScaleTranslation(), G.ScaleTranslation(positive=True)
    edges = [(G.Translation(), T), (T, E), (G.Orthogonal(), E), (E, A),
             (G.GeneralLinear(), A), (G.ScaleShift(), ST), (T, STp), (STp, ST), (STp, DAp),
             (ST, DA), (DAp, DA), (DA, G.MonomialAffine()), (G.MonomialAffine(), A)]
    for small, big in edges:
        assert G.is_subgroup(small, big), (small.name, big.name)
        assert not G.is_subgroup(big, small), (big.name, small.name)
        assert any(G.same_group(s, big) for s in G.immediate_supergroups(small.on(5))), (
            small.name)
    assert [s.name for s in G.Translation(5).supergroups()] == ["ℝ×₊,+λ1", "T(5)"]
    assert [s.name for s in G.Orthogonal(5).supergroups()] == ["ℝ×·O(5)", "E(5)"]
    assert [s.name for s in G.GeneralLinear(5).supergroups()] == ["Aff(5)"]
    assert [s.name for s in G.ScaleShift(5).supergroups()] == ["ℝ×⋉ℝ^5"]
    assert [s.name for s in G.ScaleShift(5, positive=True).supergroups()] == [
        "ℝ×,+λ1", "ℝ×₊⋉ℝ^5"]
    # T(n)'s rule lists E(n), which holds the sign flips and shifts (±1)ⁿ⋉ℝⁿ it lists too
    assert [s.name for s in G.Translations(5).supergroups()] == ["ℝ×₊⋉ℝ^5", "(±1)^5⋉ℝ^5"]
    assert G.is_subgroup(G.BlockScaleShift(5, 1, scales=False, signs=True), E.on(5))
    assert G.Affine(5).supergroups() == ()
    # transitive consequences, and what is not included
    for small in (G.Trivial(), G.Permutation(), G.SignedPermutation(), G.Simplex(),
                  G.Translation(), G.OrthogonalComplement()):
        assert G.is_subgroup(small, E), small.name
    for small in (G.Scaling(), G.Scaling(positive=True), G.ScaleShift(positive=True),
                  G.PositiveMonomial(), G.Lorentz(), G.ConeGroup(cone_dim=4)):
        assert G.is_subgroup(small, A) and not G.is_subgroup(small, E), small.name
    assert not G.is_subgroup(T, G.ScaleShift()) and not G.is_subgroup(G.ScaleShift(), E)
    assert not G.is_subgroup(E, G.GeneralLinear()) and not G.is_subgroup(T, G.Orthogonal())
    assert not G.is_subgroup(G.Unitary(), A)


def test_diagonal_groups():
    D, DA = G.Diagonal(), G.DiagonalAffine()
    Dp, DAp = G.Diagonal(positive=True), G.DiagonalAffine(positive=True)
    for small, big in [(G.Scaling(), D), (D, G.Monomial()), (D, DA), (G.ScaleShift(), DA),
                       (G.Translations(), DAp), (DA, G.Affine()), (G.Monomial(), G.Affine()),
                       (G.Scaling(positive=True), Dp), (Dp, D), (Dp, G.PositiveMonomial()),
                       (Dp, DAp), (G.ScaleShift(positive=True), DAp), (DAp, DA)]:
        assert G.is_subgroup(small, big) and not G.is_subgroup(big, small), (small, big)
    assert not G.is_subgroup(G.Scaling(), DAp) and not G.is_subgroup(D, DAp)
    # (ℝ×)ⁿ and ℝ×·O(n) lie above ℝ× too, but they hold ℝ× × ℤ₂ⁿ: not immediate
    # (ℝ×·O(n) is also ℝ× × SO(n) for odd n); ℝ× × H for the groups H just above I
    assert [s.name for s in G.Scaling(5).supergroups()] == [
        "ℝ× × ℤ₂^5", "ℝ×,+λ1", "ℝ× × S_5", "ℝ× × Ψ(A_5)"]
    for above in (D.on(5), G.ConformalLinear(5)):
        assert G.is_subgroup(G.Product(G.Scaling(), G.SignFlips(), n=5), above)
    assert [s.name for s in G.Scaling(5, positive=True).supergroups()] == [
        "ℝ×", "ℝ×₊,+λ1", "(ℝ×₊)^5", "ℝ×₊ × S_5", "ℝ×₊ × Ψ(A_5)", "ℝ×₊ × SO(5)"]
    # −I ∈ SO(4): ℝ× lies in ℝ×₊ × SO(4), and ℝ×₊ × SO(4) is not immediate above ℝ×₊
    assert "ℝ×₊ × SO(4)" in [s.name for s in G.Scaling(4).supergroups()]
    assert "ℝ×₊ × SO(4)" not in [s.name for s in G.Scaling(4, positive=True).supergroups()]
    assert [s.name for s in G.Diagonal(5).supergroups()] == ["S_5⋉(ℝ×)^5", "(ℝ×)^5⋉ℝ^5"]
    assert [s.name for s in Dp.on(5).supergroups()] == [
        "(ℝ×)^5", "S_5⋉(ℝ×₊)^5", "(ℝ×₊)^5⋉ℝ^5"]
    dp = np.asarray(Dp.on(6).sample(jax.random.key(4), 100).matrix)
    assert (np.diagonal(dp, axis1=1, axis2=2) > 0).all()
    assert not np.asarray(Dp.on(6).contains(D.on(6).sample(jax.random.key(5), 50))).all()
    assert not G.is_subgroup(D, G.Orthogonal()) and not G.is_subgroup(DA, G.Euclidean())
    assert not G.is_subgroup(G.Permutation(), DA)
    # samples: diagonal with entries of both signs in [½, 2] in magnitude; membership
    d = np.asarray(G.Diagonal(6).sample(jax.random.key(0), 200).matrix)
    diag = np.diagonal(d, axis1=1, axis2=2)
    np.testing.assert_array_equal(d, diag[:, :, None] * np.eye(6))
    assert np.all((np.abs(diag) >= 0.5 - 1e-6) & (np.abs(diag) <= 2 + 1e-6))
    assert (diag < 0).any() and (diag > 0).any()
    da = G.DiagonalAffine(6).sample(jax.random.key(1), 50)
    assert np.asarray(G.DiagonalAffine(6).contains(da)).all()
    assert not np.asarray(G.Diagonal(6).contains(da)).any()  # non-zero shifts
    assert not np.asarray(G.Diagonal(6).contains(G.Monomial(6).sample(
        jax.random.key(2), 50))).all()  # some permutation is not the identity
    assert not np.asarray(G.DiagonalAffine(6).contains(G.Affine(6).sample(
        jax.random.key(3), 20))).any()


def test_dilations_and_monomial_affine_maps():
    ST, STp, MA = G.ScaleTranslation(), G.ScaleTranslation(positive=True), G.MonomialAffine()
    assert [s.name for s in ST.on(5).supergroups()] == ["(ℝ×)^5⋉ℝ^5"]
    assert [s.name for s in STp.on(5).supergroups()] == ["ℝ×⋉ℝ^5", "(ℝ×₊)^5⋉ℝ^5"]
    assert [s.name for s in MA.on(5).supergroups()] == ["Aff(5)"]
    assert [s.name for s in G.Monomial(5).supergroups()] == ["GL(5)", "S_5⋉(ℝ×)^5⋉ℝ^5"]
    assert [s.name for s in G.DiagonalAffine(5).supergroups()] == ["S_5⋉(ℝ×)^5⋉ℝ^5"]
    for small in (G.Scaling(), G.Translation(), G.Translations(), G.ScaleShift(positive=True)):
        assert G.is_subgroup(small, ST), small.name
    for small in (G.Monomial(), G.SignedPermutation(), G.Diagonal(), ST, G.Translations()):
        assert G.is_subgroup(small, MA) and not G.is_subgroup(MA, small), small.name
    # not included: a dilation is no per-coordinate map with a 1-dimensional shift, a
    # rotation is no monomial, a general linear map no dilation
    assert not G.is_subgroup(ST, G.ScaleShift()) and not G.is_subgroup(ST, G.Euclidean())
    assert not G.is_subgroup(G.Orthogonal(), MA) and not G.is_subgroup(G.Diagonal(), ST)
    assert not G.is_subgroup(G.Scaling(), STp)
    # samples: a scalar multiple of I with a standard normal shift; x ↦ PDx + t
    e = ST.on(6).sample(jax.random.key(0), 400)
    m, t = np.asarray(e.matrix, np.float64), np.asarray(e.shift, np.float64)
    a = m[:, 0, 0]
    np.testing.assert_array_equal(m, a[:, None, None] * np.eye(6))
    assert np.all((np.abs(a) >= 0.25 - 1e-6) & (np.abs(a) <= 4 + 1e-6))  # as Scaling's
    assert (a < 0).any() and (a > 0).any()
    assert _ks_pvalue(t[:, 3], stats.norm.cdf) > ALPHA
    assert (np.asarray(STp.on(6).sample(jax.random.key(1), 200).matrix)[:, 0, 0] > 0).all()
    assert not np.asarray(STp.on(6).contains(e)).all()       # negative scales
    assert not np.asarray(G.ScaleShift(6).contains(e)).any()  # shifts not along 1
    assert not np.asarray(ST.on(6).contains(G.DiagonalAffine(6).sample(
        jax.random.key(2), 50))).any()
    ma = MA.on(6).sample(jax.random.key(3), 200)
    mm = np.asarray(ma.matrix, np.float64)
    assert ((mm != 0).sum(1) == 1).all() and ((mm != 0).sum(2) == 1).all()
    nz = np.abs(mm[mm != 0])
    assert np.all((nz >= 0.5 - 1e-6) & (nz <= 2 + 1e-6))
    assert np.asarray(MA.on(6).contains(ma)).all()
    assert not np.asarray(G.Monomial(6).contains(ma)).any()        # non-zero shifts
    assert not np.asarray(G.DiagonalAffine(6).contains(ma)).all()  # some P ≠ I


def test_positive_monomial_affine_maps():
    """Sₙ⋉(ℝ×₊)ⁿ⋉ℝⁿ: between the positive monomials (or positive per-coordinate affine
    maps) and Sₙ⋉(ℝ×)ⁿ⋉ℝⁿ; samples have positive entries and Gaussian shifts."""
    MAp, MA = G.MonomialAffine(positive=True), G.MonomialAffine()
    assert MAp.on(5).name == "S_5⋉(ℝ×₊)^5⋉ℝ^5"
    assert [s.name for s in MAp.on(5).supergroups()] == ["S_5⋉(ℝ×)^5⋉ℝ^5"]
    assert "S_5⋉(ℝ×₊)^5⋉ℝ^5" in [s.name for s in G.PositiveMonomial(5).supergroups()]
    assert "S_5⋉(ℝ×₊)^5⋉ℝ^5" in [
        s.name for s in G.DiagonalAffine(5, positive=True).supergroups()]
    for small in (G.PositiveMonomial(), G.DiagonalAffine(positive=True), G.Translations(),
                  G.ScaleTranslation(positive=True), G.Permutation()):
        assert G.is_subgroup(small, MAp) and not G.is_subgroup(MAp, small), small.name
    assert G.is_subgroup(MAp, MA) and not G.is_subgroup(MA, MAp)
    for other in (G.Monomial(), G.SignedPermutation(), G.ScaleTranslation(), G.Scaling()):
        assert not G.is_subgroup(other, MAp), other.name  # negative scalings
    e = MAp.on(6).sample(jax.random.key(5), 300)
    m, t = np.asarray(e.matrix, np.float64), np.asarray(e.shift, np.float64)
    assert ((m != 0).sum(1) == 1).all() and ((m != 0).sum(2) == 1).all()
    assert np.all((m[m != 0] >= 0.5 - 1e-6) & (m[m != 0] <= 2 + 1e-6))
    assert _ks_pvalue(t[:, 2], stats.norm.cdf) > ALPHA
    assert np.asarray(MAp.on(6).contains(e)).all()
    assert np.asarray(MA.on(6).contains(e)).all()
    assert not np.asarray(G.PositiveMonomial(6).contains(e)).any()  # non-zero shifts
    assert not np.asarray(MAp.on(6).contains(MA.on(6).sample(jax.random.key(6), 50))).all()
    assert not np.asarray(MA.on(6).contains(G.Affine(6).sample(jax.random.key(4), 20))).any()


def test_similarities():
    CO = G.ConformalLinear()
    assert [s.name for s in CO.on(5).supergroups()] == ["GL(5)"]
    for small in (G.Orthogonal(), G.SpecialOrthogonal(), G.SignedPermutation(), G.Scaling(),
                  G.Scaling(positive=True), G.Simplex()):
        assert G.is_subgroup(small, CO) and not G.is_subgroup(CO, small), small.name
    for other in (G.Diagonal(), G.Monomial(), G.Euclidean(), G.ScaleShift()):
        assert not G.is_subgroup(other, CO) and not G.is_subgroup(CO, other), other.name
    assert G.is_subgroup(CO, G.Affine()) and not G.is_subgroup(CO, G.Euclidean())
    # ℝ× × O(n) is the same group: a product of the two simplifies to it
    from taxdl.groups._hierarchy import simplify_product

    assert simplify_product(G.Product(G.Scaling(), G.Orthogonal(), n=4)).name == "ℝ×·O(4)"
    assert simplify_product(G.Product(G.Scaling(positive=True), G.Orthogonal(),
                                      n=4)).name == "ℝ×·O(4)"
    # samples: a Haar rotation times a positive scale, log-uniform in [¼, 4]
    e = CO.on(5).sample(jax.random.key(0), 2000)
    m = np.asarray(e.matrix, np.float64)
    gram = np.einsum("nki,nkj->nij", m, m)
    a2 = gram[:, 0, 0]
    np.testing.assert_allclose(gram, a2[:, None, None] * np.eye(5), atol=1e-5 * a2.max())
    a = np.sqrt(a2)
    assert np.all((a >= 0.25 - 1e-5) & (a <= 4 + 1e-5))
    assert _ks_pvalue(np.log(a), stats.uniform(np.log(0.25), np.log(16)).cdf) > ALPHA
    q = m / a[:, None, None]
    assert _ks_pvalue(q[:, 0, 0], _entry_beta_cdf(5)) > ALPHA   # Haar first entry
    assert (np.linalg.det(q) < 0).any() and (np.linalg.det(q) > 0).any()
    assert np.asarray(CO.on(5).contains(e)).all()
    assert not np.asarray(G.Orthogonal(5).contains(e)).all()
    assert not np.asarray(CO.on(5).contains(G.Diagonal(5).sample(jax.random.key(1), 50))).all()
    assert not np.asarray(CO.on(5).contains(G.Euclidean(5).sample(jax.random.key(2), 20))).any()


def test_affine_families_in_products():
    # +λ1 × O(n): its supergroups are simplified against the new families (+λ1 ⊂ E(n))
    prod = G.Product(G.Translation(), G.Orthogonal())
    names = [s.name for s in prod.supergroups()]
    assert "E(n)" in names and "+λ1 × E(n)" not in names
    assert G.is_subgroup(prod, G.Euclidean()) and not G.is_subgroup(prod, G.Orthogonal())
    assert [s.name for s in G.Product(G.Orthogonal(), G.Euclidean()).supergroups()] == [
        "Aff(n)"]


def test_sign_groups_are_not_permutation_groups():
    """ℤ₂ⁿ is not inside Dₙ (an odd number of flips), and neither sign group contains a
    non-trivial permutation or a scaling other than ±1."""
    assert not G.is_subgroup(G.SignFlips(), G.EvenSignedPermutation())
    assert not G.is_subgroup(G.SignFlips(), G.PointReflection())
    one_flip = G.Element(jnp.diag(jnp.array([-1.0, 1, 1, 1, 1]))[None], jnp.zeros((1, 5)))
    assert bool(G.SignFlips(5).contains(one_flip)[0])
    assert not bool(G.PointReflection(5).contains(one_flip)[0])
    assert not bool(G.EvenSignedPermutation(5).contains(one_flip)[0])
    swap = G.Permutation(5).sample(KEY, 64)
    moved = jnp.any(jnp.abs(swap.matrix - jnp.eye(5)) > 0.5, axis=(-2, -1))
    assert not bool(jnp.any(G.SignFlips(5).contains(swap) & moved))
    halves = G.Scaling(5, positive=True).sample(KEY, 64)
    assert not bool(jnp.any(G.PointReflection(5).contains(halves)
                            & (jnp.abs(halves.matrix[:, 0, 0] - 1) > 1e-3)))


def test_point_reflection_lies_in_so_n_and_d_n_exactly_in_even_dimensions():
    """det(−I) = (−1)ⁿ and −I flips n signs: the hierarchy's edges {±I} ⊂ SO(n), Dₙ exist
    for a group bound to an even n, and membership agrees."""
    for n in (2, 4, 5, 7):
        even = n % 2 == 0
        minus = G.Element(-jnp.eye(n)[None], jnp.zeros((1, n)))
        for big in (G.SpecialOrthogonal(n), G.EvenSignedPermutation(n)):
            assert G.is_subgroup(G.PointReflection(n), big) == even, (n, big.name)
            assert bool(big.contains(minus, atol=1e-6)[0]) == even, (n, big.name)
        names = [g.name for g in G.PointReflection(n).supergroups()]
        # Dₙ holds {±I} × Sₙ in even n: the product is the immediate supergroup
        assert (f"SO({n})" in names) == even and f"±I_{n} × S_{n}" in names
        assert f"D_{n}" not in names
        assert G.is_subgroup(G.Product(G.PointReflection(), G.Permutation(), n=n),
                             G.EvenSignedPermutation(n)) == even
    assert not G.is_subgroup(G.PointReflection(), G.SpecialOrthogonal())


def test_block_groups_are_ordered_by_refinement():
    """A scale/shift over blocks of c lies in the one over blocks of c′ exactly when c′
    divides c; the hierarchy lists the coarsest refinements (c/p, p prime) above it."""
    for n, c, finer in [(36, 12, (6, 4)), (36, 6, (3, 2)), (8, 8, (4,)), (8, 4, (2,)),
                        (36, 9, (3,)), (36, 3, ())]:
        names = [g.name for g in G.BlockScaleShift(n, c).supergroups()]
        assert [x for x in names if x.startswith("(ℝ×,+λ1)^")] == [
            f"(ℝ×,+λ1)^{n // b}" for b in finer]
    assert G.is_subgroup(G.BlockScaleShift(12, 6), G.BlockScaleShift(12, 3))
    assert not G.is_subgroup(G.BlockScaleShift(12, 4), G.BlockScaleShift(12, 6))
    assert not G.is_subgroup(G.BlockScaleShift(12, 6), G.BlockScaleShift(12, 4))
    six = G.BlockScaleShift(12, 6).sample(KEY, 64)
    assert not bool(jnp.any(G.BlockScaleShift(12, 4).contains(six, atol=1e-4)))
    # one block of a prime n has no per-block group above it but the per-coordinate one
    assert not any("+λ1)^" in g.name for g in G.ScaleShift(7).supergroups())


def test_block_groups_keep_blocks_together():
    """S_c≀S_G holds exactly the permutations that move blocks as wholes (its elements are
    1/(c!^G G!) of Sₙ's: uniform permutations of 12 almost never are), and the per-block
    scale-shift group holds a common scale and shift per block, nothing finer."""
    wreath = G.BlockPermutation(12, 3)
    swap_blocks = jnp.eye(12)[np.r_[3:6, 0:3, 6:12]]
    inner = jnp.eye(12)[np.r_[2, 0, 1, 3:12]]
    split = jnp.eye(12)[np.r_[0, 1, 3, 2, 4:12]]  # swaps coordinates of two blocks
    elems = G.Element(jnp.stack([swap_blocks, inner, split]), jnp.zeros((3, 12)))
    assert np.asarray(wreath.contains(elems)).tolist() == [True, True, False]
    assert not np.asarray(wreath.contains(G.Permutation(12).sample(KEY, 64))).any()
    sums = G.BlockPermutation(12, 3).sample(KEY, 200).matrix.sum(axis=(1, 2))
    assert sums.tolist() == [12.0] * 200
    with pytest.raises(ValueError, match="multiple of `block` = 5"):
        G.BlockPermutation(12, 5)
    with pytest.raises(ValueError, match="`block` must be an integer >= 1"):
        G.BlockScaleShift(block=0)
    per_block = G.BlockScaleShift(6, 3)
    d = jnp.array([2.0, 2, 2, -0.5, -0.5, -0.5])
    ok = G.Element(jnp.diag(d)[None], jnp.array([[1.0, 1, 1, 3, 3, 3]]))
    uneven_scale = G.Element(jnp.diag(d.at[0].set(3.0))[None], ok.shift)
    uneven_shift = G.Element(ok.matrix, ok.shift.at[0, 0].set(0.0))
    assert [bool(per_block.contains(e)[0]) for e in (ok, uneven_scale, uneven_shift)] == [
        True, False, False]
    assert not bool(G.BlockScaleShift(6, 3, positive=True).contains(ok)[0])
    assert not bool(G.BlockScaleShift(6, 3, scales=False).contains(ok)[0])


def test_general_linear_membership_does_not_depend_on_the_scale():
    """aI is invertible for every a ≠ 0 in every dimension (|det| = |a|ⁿ is not a test of
    invertibility); a rank-deficient matrix is not, at any scale."""
    for a in (0.1, 1e-3, 1e3):
        for n in (2, 8):
            e = G.linear_element(a * jnp.eye(n))
            assert bool(G.GeneralLinear(n).contains(e)), (a, n)
            assert bool(G.Affine(n).contains(G.Element(e.matrix, jnp.ones(n)))), (a, n)
    q = G.Orthogonal(8).sample(KEY, 16)
    small = G.linear_element(0.2 * q.matrix)  # a similarity of scale 0.2: in ℝ×·O(8) ⊂ GL(8)
    assert bool(jnp.all(G.ConformalLinear(8).contains(small)))
    assert bool(jnp.all(G.GeneralLinear(8).contains(small)))
    for a in (1e-3, 1.0, 1e3):
        singular = G.linear_element(a * jnp.array([[1.0, 2.0], [2.0, 4.0]]))
        assert not bool(G.GeneralLinear(2).contains(singular)), a
    assert not bool(G.GeneralLinear(3).contains(G.linear_element(jnp.zeros((3, 3)))))


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
@pytest.mark.parametrize("group", [
    G.Orthogonal(4), G.SpecialOrthogonal(4), G.GeneralLinear(4), G.Dihedral(2, k=6),
    G.Lorentz(3), G.SU2(3, rep="adjoint"), G.Product(G.Scaling(positive=True),
                                                     G.SignedPermutation(), n=4),
], ids=lambda g: g.name)
def test_half_precision_elements_are_tested_at_their_precision(group, dtype):
    """Membership of half-precision elements runs (determinants are taken in float32) and,
    by default, tolerates their rounding; an element off by far more is still rejected."""
    e = group.sample(KEY, 16, dtype)
    assert e.matrix.dtype == dtype and e.shift.dtype == dtype
    assert bool(jnp.all(group.contains(e)))
    if group.isometric:
        stretched = G.linear_element((e.matrix.astype(jnp.float32) * 1.25).astype(dtype))
        assert not bool(jnp.any(group.contains(stretched)))


@pytest.mark.parametrize("dtype", [jnp.int32, jnp.bool_])
def test_sample_rejects_a_non_floating_dtype(dtype):
    for group in (G.Orthogonal(3), G.Permutation(3)):
        with pytest.raises(TypeError, match="`dtype` must be a floating or complex dtype"):
            group.sample(KEY, 2, dtype)


def test_block_diagonal_supergroups_contain_its_elements():
    """A block-diagonal group with a translation factor lies in Aff(n), not in GL(n); one of
    linear factors lies in GL(n). Complex factors cannot be placed in its real matrices."""
    for group, expected in ((G.BlockDiagonal(G.Translations(2), G.Orthogonal(2)), "Aff(4)"),
                            (G.BlockDiagonal(G.Orthogonal(2), G.Permutation(3)), "GL(5)")):
        sups = group.supergroups()
        assert [s.name for s in sups] == [expected]
        e = group.sample(KEY, 16)
        assert all(bool(jnp.all(s.contains(e))) for s in sups)
        assert all(G.is_subgroup(group, s) for s in sups)
    with pytest.raises(ValueError, match="factors must be real groups; got U\\(2\\)"):
        G.BlockDiagonal(G.Unitary(2), G.Orthogonal(1))


def test_numpy_integers_bind_and_sample():
    """Dimensions and sample counts read from NumPy arrays are integers: the bound group
    stores a Python int and equals the one bound with a Python int."""
    import taxdl.groups as G

    for group in (G.Orthogonal(), G.Permutation(), G.Scaling(positive=True),
                  G.Product(G.Scaling(positive=True), G.Permutation())):
        bound = group.on(np.int64(4))
        assert type(bound.n) is int and bound == group.on(4)
        assert bound.sample(jax.random.key(0), np.int32(3)).matrix.shape == (3, 4, 4)
    with pytest.raises(ValueError, match="`n`"):
        G.Orthogonal().on(np.int64(0))


def _np_compose(a, b):
    """(M_a, t_a) ∘ (M_b, t_b) in float64 NumPy, batched."""
    ma, ta, mb, tb = (np.asarray(v, np.float64) for v in (a.matrix, a.shift, b.matrix,
                                                           b.shift))
    return ma @ mb, np.einsum("bij,bj->bi", ma, tb) + ta


COMMUTATION_CASES = [
    # (a, b, commute?, a normalises b?)
    (G.Scaling(), G.Orthogonal(), True, True),
    (G.PointReflection(), G.Permutation(), True, True),
    (G.ScaleShift(positive=True), G.Permutation(), True, True),
    (G.ScaleShift(), G.OrthogonalComplement(), True, True),
    (G.Translation(), G.OrthogonalComplement(), True, True),
    (G.EvenSignedPermutation(), G.ScaleShift(positive=True), False, False),
    (G.Orthogonal(), G.ScaleShift(), False, False),
    (G.PointReflection(), G.Translation(), False, True),
    (G.Scaling(), G.Translations(), False, True),
    (G.SignedPermutation(), G.Translations(), False, True),
    (G.EvenSignedPermutation(), G.ScaleTranslation(positive=True), False, True),
    (G.Permutation(), G.DiagonalAffine(), False, True),
    (G.Orthogonal(), G.DiagonalAffine(), False, False),
    (G.BlockPermutation(block=2), G.BlockScaleShift(block=2), False, True),
    (G.Permutation(), G.BlockScaleShift(block=2), False, False),
    (G.Permutation(), G.SignedPermutation(), False, True),
    (G.Orthogonal(), G.SignedPermutation(), False, False),
]


@pytest.mark.parametrize("a, b, commute, normal", COMMUTATION_CASES,
                         ids=[f"{a.name}|{b.name}" for a, b, *_ in COMMUTATION_CASES])
def test_commuting_and_normalises_agree_with_sampled_elements(a, b, commute, normal):
    """`commuting` / `normalises` claim exactly what sampled elements show (n = 4): a
    claimed relation holds for every sampled pair, a denied one fails for some pair."""
    n, num = 4, 64
    a, b = a.on(n), b.on(n)
    assert G.commuting(a, b) == commute == G.commuting(b, a)
    ea = a.sample(jax.random.key(0), num, jnp.float64 if jax.config.x64_enabled else
                  jnp.float32)
    eb = b.sample(jax.random.key(1), num, ea.matrix.dtype)
    ab, ba = _np_compose(ea, eb), _np_compose(eb, ea)
    close = np.all(np.isclose(ab[0], ba[0], atol=1e-4), axis=(-2, -1)) & np.all(
        np.isclose(ab[1], ba[1], atol=1e-4), axis=-1)
    assert close.all() == commute
    if b.n is not None and not G.moves_origin(a):
        assert G.normalises(a, b) == normal
        # a b a⁻¹ for a linear a: (M_a M_b M_a⁻¹, M_a t_b)
        ma = np.asarray(ea.matrix, np.float64)
        conj = (ma @ np.asarray(eb.matrix, np.float64) @ np.linalg.inv(ma),
                np.einsum("bij,bj->bi", ma, np.asarray(eb.shift, np.float64)))
        inside = np.asarray(b.contains(G.Element(jnp.asarray(conj[0], ea.matrix.dtype),
                                                 jnp.asarray(conj[1], ea.matrix.dtype)),
                                       atol=1e-3))
        assert inside.all() == normal


def test_product_names_say_how_the_factors_combine():
    """A × B only for commuting factors; H ⋉ N when the linear factors normalise those
    with translations; ⟨A, B⟩ (the group generated) otherwise."""
    assert G.Product(G.Scaling(positive=True), G.Permutation()).name == "ℝ×₊ × S_n"
    assert G.Product(G.ScaleShift(), G.OrthogonalComplement()).name == "ℝ×,+λ1 × O(n-1)"
    assert G.Product(G.Translations(), G.SignedPermutation()).name == "B_n⋉T(n)"
    assert G.Product(G.PointReflection(), G.Translation(), G.Permutation()).name == (
        "(±I_n × S_n)⋉+λ1")
    assert G.Product(G.ScaleTranslation(positive=True), G.EvenSignedPermutation(),
                     n=4).name == "D_4⋉(ℝ×₊⋉ℝ^4)"
    assert G.Product(G.ScaleShift(positive=True), G.EvenSignedPermutation(),
                     n=4).name == "⟨ℝ×₊,+λ1, D_4⟩"
    # every product the hierarchy reaches from ℝ×₊,+λ1 × S₄ is named by these rules
    names = {s.name for s in G.immediate_supergroups(
        G.Product(G.ScaleShift(positive=True), G.Permutation(), n=4))}
    assert "⟨ℝ×₊,+λ1, D_4⟩" in names and "ℝ×₊,+λ1 × D_4" not in names


def test_plane_lattice_group_inclusions_agree_with_membership():
    """On ℝ² the dihedral groups Ψ(D_k), the triangle's Ψ(A₂) and the coordinate groups
    (−I, ℤ₂², S₂, D₂, B₂) contain one another as their matrices do: `is_subgroup` answers
    exactly when every sampled element of the smaller group is a member of the larger one
    (finite groups, 128 draws cover them)."""
    plane = [G.PointReflection(2), G.SignFlips(2), G.Permutation(2),
             G.EvenSignedPermutation(2), G.SignedPermutation(2), G.Simplex(2)]
    dihedral = [G.Dihedral(k=k).on(2) for k in (*range(1, 9), 12)]
    for i, (a, b) in enumerate([(a, b) for a in plane + dihedral for b in dihedral]
                               + [(a, b) for a in dihedral for b in plane]):
        members = b.contains(a.sample(jax.random.key(i), 128), atol=1e-5)
        assert G.is_subgroup(a, b) == bool(np.asarray(members).all()), (a.name, b.name)
    assert G.is_subgroup(G.PointReflection(2), G.Dihedral(k=4).on(2))
    assert not G.is_subgroup(G.PointReflection(2), G.Dihedral(k=3).on(2))
    assert G.is_subgroup(G.Simplex(2), G.Dihedral(2, k=6))
    assert not G.is_subgroup(G.Simplex(2), G.Dihedral(2, k=3))  # its axes are rotated by 30°


def test_one_cone_isometries_lie_in_the_lorentz_group():
    """diag(1, O(S − 1)), the isometries of a single cone (axis first), preserve
    η = diag(1, −1, …): inside O(1, S − 1) by membership, and so by `is_subgroup`; several
    cones, or cones with their scalings, are not."""
    one = G.ConeGroup(4, cone_dim=4, scalings=False)
    e = one.sample(KEY, 64)
    eta = np.diag([1.0, -1.0, -1.0, -1.0])
    m = np.asarray(e.matrix, np.float64)
    assert np.allclose(np.einsum("bji,jk,bkl->bil", m, eta, m), eta, atol=1e-5)
    assert bool(jnp.all(G.Lorentz(4).contains(e, atol=1e-4)))
    assert G.is_subgroup(one, G.Lorentz(4)) and G.is_subgroup(one, G.Lorentz())
    for other in (G.ConeGroup(8, cone_dim=4, scalings=False), G.ConeGroup(4, cone_dim=4)):
        assert not bool(jnp.all(G.Lorentz(other.n).contains(other.sample(KEY, 64), atol=1e-4)))
        assert not G.is_subgroup(other, G.Lorentz(other.n))


def test_one_block_of_n_is_the_whole_vector_scale_shift():
    """A per-block scale-shift whose block is all n coordinates is (ℝ×,+λ1), (ℝ×₊,+λ1) or
    +λ1: each contains the other (by membership of samples, and by `is_subgroup`), while
    a sign and a shift of the whole vector does not hold the scalings."""
    pairs = [(G.BlockScaleShift(6, 6), G.ScaleShift(6)),
             (G.BlockScaleShift(6, 6, positive=True), G.ScaleShift(6, positive=True)),
             (G.BlockScaleShift(6, 6, scales=False), G.Translation(6))]
    for a, b in pairs:
        for small, big in ((a, b), (b, a)):
            assert bool(jnp.all(big.contains(small.sample(KEY, 64), atol=1e-4)))
            assert G.is_subgroup(small, big), (small.name, big.name)
    assert not G.is_subgroup(G.ScaleShift(6), G.BlockScaleShift(6, 6, positive=True))
    signs = G.BlockScaleShift(6, 6, scales=False, signs=True)
    assert not bool(jnp.all(signs.contains(G.ScaleShift(6, positive=True).sample(KEY, 64))))
    assert not G.is_subgroup(G.ScaleShift(6, positive=True), signs)
    # x ↦ ±x + λ1 holds +λ1 under either name and lies in (ℝ×,+λ1), as the rules list it
    for small, big in ((G.Translation(6), signs), (G.BlockScaleShift(6, 6, scales=False), signs),
                       (signs, G.ScaleShift(6)), (signs, G.BlockScaleShift(6, 6))):
        assert bool(jnp.all(big.contains(small.sample(KEY, 64), atol=1e-4)))
        assert G.is_subgroup(small, big), (small.name, big.name)
    assert signs.name in {g.name for g in G.immediate_supergroups(
        G.BlockScaleShift(6, 6, scales=False))}


def test_block_diagonal_groups_with_other_block_sizes_are_other_groups():
    """O(2)⊕S₃ and O(3)⊕S₂ have the same factor families but act on different blocks:
    neither is a subgroup of the other (a permutation of the last three coordinates moves
    coordinate 2 out of O(3)⊕S₂'s first block), as membership of samples shows."""
    a = G.BlockDiagonal(G.Orthogonal(2), G.Permutation(3))
    b = G.BlockDiagonal(G.Orthogonal(3), G.Permutation(2))
    for small, big in ((a, b), (b, a)):
        assert not bool(jnp.all(big.contains(small.sample(KEY, 200))))
        assert not G.is_subgroup(small, big) and not G.same_group(small, big)
    assert G.is_subgroup(G.BlockDiagonal(G.Orthogonal(2), G.Permutation(3)), a)


def test_block_diagonal_inclusions_agree_with_membership():
    """A block sum lies in O(n), Sₙ, … when each block does, and in another block sum with
    the same blocks factor by factor: `is_subgroup` answers as membership of 128 samples
    does, both ways."""
    o2, o3, s2, s3 = G.Orthogonal(2), G.Orthogonal(3), G.Permutation(2), G.Permutation(3)
    bd = G.BlockDiagonal
    pairs = [(bd(o2, o3), G.Orthogonal(5)), (bd(s2, s3), G.Permutation(5)),
             (bd(o3, s2), bd(o3, o2)), (bd(s2, s3), bd(o2, s3)),
             (bd(s2, s3), G.SignedPermutation(5)), (bd(o2, s3), G.Permutation(5)),
             (bd(o2, o3), G.SpecialOrthogonal(5)), (bd(o3, o2), bd(s3, o2)),
             (bd(G.SpecialOrthogonal(2), G.SpecialOrthogonal(3)), G.SpecialOrthogonal(5))]
    for i, (a, b) in enumerate(pairs):
        members = bool(jnp.all(b.contains(a.sample(jax.random.key(i), 128), atol=1e-4)))
        assert G.is_subgroup(a, b) == members, (a.name, b.name, members)


def test_remembered_products_keep_their_sampling_parameters():
    """Products remembered by family keep the caller's sampling parameters: ℝ×₊ × O(1,3)
    with wide boosts is not answered with the one seen first."""
    from taxdl.groups._hierarchy import simplify_product

    simplify_product(G.Product(G.Scaling(positive=True), G.Lorentz(4), n=4))
    wide = simplify_product(G.Product(G.Scaling(positive=True),
                                      G.Lorentz(4, max_rapidity=5.0), n=4))
    assert [getattr(f, "max_rapidity", None) for f in wide.factors] == [None, 5.0]


def test_real_groups_do_not_contain_complex_matrices():
    """iI is unitary, not orthogonal; e^{iφ}I is not ±I: real families refuse complex
    matrices (their imaginary part must vanish), complex ones keep them, and a complex
    dtype with a zero imaginary part is still a member."""
    u = G.Unitary(3).sample(KEY, 64)
    phase = G.linear_element(jnp.exp(0.7j) * jnp.eye(3, dtype=jnp.complex64))
    for group in (G.Orthogonal(3), G.SpecialOrthogonal(3), G.GeneralLinear(3)):
        assert not bool(jnp.any(group.contains(u)))
    for group in (G.SignedPermutation(3), G.SignFlips(3), G.PointReflection(3),
                  G.Permutation(3), G.Trivial(3), G.Scaling(3)):
        assert not bool(group.contains(phase)), group.name
    assert bool(jnp.all(G.Unitary(3).contains(u))) and bool(G.Unitary(3).contains(phase))
    real = G.Orthogonal(3).sample(KEY, 8)
    as_complex = G.Element(real.matrix.astype(jnp.complex64), real.shift.astype(jnp.complex64))
    assert bool(jnp.all(G.Orthogonal(3).contains(as_complex)))
    assert bool(G.Permutation(3).contains(G.linear_element(jnp.eye(3, dtype=jnp.complex64))))


def test_act_promotes_integer_inputs_and_takes_one_element():
    """An integer x is acted on in the element's dtype (M x + t against float64 NumPy),
    not with the matrix truncated to integers; a batch of elements is refused by name."""
    x = np.array([1, 2, 3])
    for group in (G.Orthogonal(3), G.Scaling(3), G.Translation(3)):
        e = jax.tree_util.tree_map(lambda a: a[0], group.sample(KEY, 1))
        want = np.asarray(e.matrix, np.float64) @ x + np.asarray(e.shift, np.float64)
        for given in (jnp.asarray(x), x.astype(np.int64)):
            y = group.act(e, given)
            assert jnp.issubdtype(y.dtype, jnp.floating)
            np.testing.assert_allclose(np.asarray(y, np.float64), want, rtol=1e-6)
    with pytest.raises(ValueError, match="act applies one element.*`element`"):
        G.Orthogonal(3).act(G.Orthogonal(3).sample(KEY, 2), jnp.ones(3))


def test_sampling_parameters_do_not_make_another_group():
    """A Lorentz group sampled with wider boosts has the same elements: the hierarchy
    treats the two as one group (both ways), and still tells it from O(1, n − 1) of
    another dimension."""
    wide = G.Lorentz(4, max_rapidity=3.0)
    assert bool(jnp.all(G.Lorentz(4).contains(wide.sample(KEY, 64), atol=1e-3)))
    assert G.is_subgroup(wide, G.Lorentz(4)) and G.is_subgroup(G.Lorentz(4), wide)
    assert G.same_group(wide, G.Lorentz()) and not G.is_subgroup(wide, G.Lorentz(5))


def test_positive_scalings_lie_in_cone_groups_with_scalings():
    # cI (c > 0) scales every cone alike: a member (checked by membership, float64), so
    # ℝ×₊ is a subgroup and the scalar part of the cone groups; not of their isometries
    from taxdl.groups._extra import RotatedConeGroup
    from taxdl.groups._hierarchy import is_subgroup, scalar_subgroup

    for group in (G.ConeGroup(8, cone_dim=4), G.ConeGroup(7, cone_dim=4, shared_axis=True),
                  RotatedConeGroup(8, 4)):
        n = group.n
        for c in (0.3, 2.0):
            assert bool(group.contains(G.linear_element(c * jnp.eye(n))))
        assert not bool(group.contains(G.linear_element(-jnp.eye(n))))
        assert is_subgroup(G.Scaling(n, positive=True), group)
        assert scalar_subgroup(group).name == "ℝ×₊"
    isometries = G.ConeGroup(8, cone_dim=4, scalings=False)
    assert not bool(isometries.contains(G.linear_element(2.0 * jnp.eye(8))))
    assert not is_subgroup(G.Scaling(8, positive=True), isometries)


def test_permutations_refuse_complex_non_permutations():
    p = np.eye(3)[[1, 0, 2]]
    for group in (G.Permutation(3), G.BlockPermutation(3, block=3)):
        assert bool(group.contains(G.linear_element(jnp.asarray(p, jnp.complex64))))
        assert not bool(group.contains(G.linear_element(jnp.asarray(1j * p, jnp.complex64))))
        assert not bool(group.contains(G.linear_element(jnp.asarray(1j * np.eye(3),
                                                                     jnp.complex64))))


@pytest.mark.parametrize("n", [3, 5])
def test_point_reflection_times_rotations_is_the_orthogonal_group_in_odd_dimension(n):
    # det(−I) = −1 for odd n: every element of O(n) is ±R with R a rotation (NumPy)
    from taxdl.groups._hierarchy import is_subgroup, simplify_product

    q = np.linalg.qr(np.random.default_rng(n).standard_normal((n, n)))[0]
    q = q if np.linalg.det(q) < 0 else -q
    assert np.linalg.det(-q) > 0  # −q is a rotation, so q = (−I)(−q)
    product = G.Product(G.PointReflection(), G.SpecialOrthogonal(), n=n)
    assert simplify_product(product) == G.Orthogonal(n)
    assert is_subgroup(G.Orthogonal(n), product) and is_subgroup(product, G.Orthogonal(n))
    even = G.Product(G.PointReflection(), G.SpecialOrthogonal(), n=n + 1)
    assert simplify_product(even) == G.SpecialOrthogonal(n + 1)  # −I ∈ SO(n) for even n


@pytest.mark.parametrize("kw, inside", [(dict(scales=False, signs=True), True), (dict(), True),
                                        (dict(positive=True), False), (dict(scales=False), False)])
def test_sign_flips_lie_in_per_coordinate_scale_shifts_with_signs(kw, inside):
    # the hierarchy agrees with membership of a sign flip diag(1, −1, 1, −1)
    from taxdl.groups._hierarchy import is_subgroup

    group = G.BlockScaleShift(4, 1, **kw)
    flip = G.linear_element(jnp.diag(jnp.array([1.0, -1.0, 1.0, -1.0])))
    assert bool(group.contains(flip)) is inside
    assert is_subgroup(G.SignFlips(4), group) is inside


@pytest.mark.parametrize("block, inside", [(4, True), (2, False)])
@pytest.mark.parametrize("scalings", [True, False])
def test_block_permutations_lie_in_the_rotated_cone_group_of_their_blocks(block, inside,
                                                                          scalings):
    # a permutation within a block fixes its all-ones axis orthogonally: the hierarchy
    # agrees with membership of sampled elements
    from taxdl.groups._extra import RotatedConeGroup
    from taxdl.groups._hierarchy import is_subgroup

    perms, cones = G.BlockPermutation(8, block=block), RotatedConeGroup(8, 4, scalings=scalings)
    members = np.asarray(cones.contains(perms.sample(jax.random.key(0), 64)))
    assert members.all() if inside else not members.all()
    assert is_subgroup(perms, cones) is inside


@pytest.mark.parametrize("n", [1, 2, 3, 16])
@pytest.mark.parametrize("complex_", [False, True])
def test_householder_q_is_the_qr_factor_with_positive_diagonal(n, complex_):
    """The Q of z = QR with diag(R) > 0 is unique: the written-out Householder
    factorisation equals NumPy's (LAPACK) Q times the phases of diag(R) (float64)."""
    from taxdl.groups._base import householder_q

    rng = np.random.default_rng(n)
    z = rng.standard_normal((7, n, n))
    if complex_:
        z = z + 1j * rng.standard_normal((7, n, n))
    with jax.enable_x64(True):
        q, det = householder_q(jnp.asarray(z), with_det=True)
    ref, r = np.linalg.qr(z)
    d = np.diagonal(r, axis1=-2, axis2=-1)
    np.testing.assert_allclose(np.asarray(q), ref * (d / np.abs(d))[:, None, :], atol=1e-13)
    np.testing.assert_allclose(np.asarray(det), np.linalg.det(np.asarray(q)), atol=1e-13)


@pytest.mark.parametrize("group", [G.Orthogonal(8), G.SpecialOrthogonal(5), G.Unitary(4),
                                   G.Lorentz(4)], ids=str)
def test_sampling_small_groups_calls_no_lapack_kernel(group):
    """Samples of small groups are factored in JAX operations: a program drawing many
    elements holds no batched LAPACK call, two of which (a Lorentz boost's rotations)
    could deadlock the CPU thread pool of a two-core machine under jax 0.10."""
    with jax.enable_x64(True):
        text = jax.jit(lambda k: group.sample(k, 20000, jnp.float64).matrix).lower(
            jax.random.key(0)).as_text()
    assert "lapack" not in text.lower()
