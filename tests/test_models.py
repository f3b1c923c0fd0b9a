"""Sequential, Residual and MLP: construction, calling, parameter symmetries, alignment."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import taxdl
import taxdl.nn as tnn
from _models import np_chain
from taxdl.diagnostics import align, best_element, interpolate, linear_assignment, loss_barrier
from taxdl.groups import (B, ConeGroup, EvenSignedPermutation, O, OrthogonalComplement,
                          Permutation, SignedPermutation)

N = 6


def leaves_close(a, b, atol):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    return max(float(jnp.max(jnp.abs(x - y))) for x, y in zip(la, lb)) <= atol


def np_mlp(model, x):
    """Independent float64 evaluation of an MLP of Linear / Tanh / IsotropicTanh."""
    return np_chain(model.layers.layers, x)


# ---------------------------------------------------------------- building and calling
def test_mlp_structure_and_call():
    m = tnn.MLP(3, [5, 4], 2, activation="Tanh", key=jax.random.key(0))
    kinds = [type(layer).__name__ for layer in m.layers.layers]
    assert kinds == ["Linear", "Tanh", "Linear", "Tanh", "Linear"]
    x = jnp.array([0.3, -1.0, 2.0])
    np.testing.assert_allclose(m(x), np_mlp(m, np.asarray(x, np.float64)), rtol=1e-5,
                               atol=1e-6)
    ys = jax.jit(jax.vmap(m))(jnp.ones((7, 3)))
    assert ys.shape == (7, 2) and ys.dtype == jnp.float32


def test_mlp_accepts_classes_instances_factories_and_norm():
    key = jax.random.key(0)
    a = tnn.MLP(4, [4], 4, activation=tnn.IsotropicTanh, key=key)
    b = tnn.MLP(4, [4], 4, activation=tnn.IsotropicTanh(), key=key)
    c = tnn.MLP(4, [4], 4, activation=lambda width: tnn.IsotropicTanh(), key=key)
    x = jnp.arange(4.0)
    np.testing.assert_allclose(a(x), b(x))
    np.testing.assert_allclose(a(x), c(x))
    d = tnn.MLP(4, [5], 2, activation="Tanh", norm=tnn.LayerNorm, key=key)
    assert [type(layer).__name__ for layer in d.layers.layers] == [
        "Linear", "LayerNorm", "Tanh", "Linear"]
    assert d(x).shape == (2,)


def test_mlp_with_an_initialiser_takes_its_probabilistic_cells():
    def ortho(key, shape, dtype):
        return O(shape[0]).sample(key, 1, dtype).matrix[0][:, : shape[1]]

    m = tnn.MLP(N, [N], N, activation="Tanh", init=ortho, key=jax.random.key(0))
    w = m.layers.layers[0].weight
    np.testing.assert_allclose(w @ w.T, np.eye(N), atol=1e-5)
    # an untagged initialiser: nothing probabilistic is known
    t = taxdl.taxonomy(m)
    assert t.cell("probabilistic", "L").name == "I_n"
    assert t.cell("closure", "L").name == "Aff(n)"  # biased layers absorb translations


@pytest.mark.parametrize("kwargs, match", [
    (dict(in_features=0, widths=[4], out_features=2), "in_features"),
    (dict(in_features=3, widths=[0], out_features=2), "widths"),
    (dict(in_features=3, widths=[4], out_features=2, parameterization="polar"),
     "parameterization"),
    (dict(in_features=3, widths=[4], out_features=2, activation="NoSuchThing"),
     "NoSuchThing"),
    (dict(in_features=3, widths=[4], out_features=2, activation="Linear"),
     "'Linear' is in the layer family, not the activation family"),
    (dict(in_features=3, widths=[4], out_features=2, norm="ReLU"),
     "'ReLU' is in the activation family, not the normaliser family"),
])
def test_mlp_bad_arguments(kwargs, match, library_checks_only):
    with pytest.raises(ValueError, match=match):
        tnn.MLP(**kwargs, key=jax.random.key(0))


def test_mlp_refuses_a_non_floating_dtype(library_checks_only):
    with pytest.raises(TypeError, match="`dtype` must be a real floating dtype"):
        tnn.MLP(3, [4], 2, key=jax.random.key(0), dtype=jnp.int32)


def test_mlp_wrong_input_shape():
    m = tnn.MLP(3, [4], 2, activation="Tanh", key=jax.random.key(0))
    with pytest.raises(ValueError, match="shape \\(3,\\)"):
        m(jnp.ones(4))


def test_gmp_parameterization():
    if not hasattr(tnn, "GmPLinear"):
        pytest.skip("GmPLinear not available")
    m = tnn.MLP(3, [8], 2, activation=getattr(tnn, "ReLU", tnn.Tanh),
                parameterization="gmp", key=jax.random.key(0))
    assert type(m.layers.layers[0]).__name__ == "GmPLinear"
    assert m(jnp.ones(3)).shape == (2,)


def test_sequential_indexing_and_keys():
    s = tnn.Sequential([tnn.Linear(3, 3, key=jax.random.key(0)), tnn.Tanh()])
    assert len(s) == 2 and isinstance(s[1], tnn.Tanh)
    np.testing.assert_allclose(s(jnp.ones(3), key=jax.random.key(1)), s(jnp.ones(3)))


def test_residual_call():
    r = tnn.Residual(tnn.IsotropicTanh())
    x = jnp.array([3.0, 4.0])
    np.testing.assert_allclose(r(x), x + np.tanh(5.0) * np.array([0.6, 0.8]), rtol=1e-6)


# ---------------------------------------------------------------- parameter symmetries
def test_parameter_symmetries_are_reported():
    tanh = tnn.MLP(3, [N, N], 2, activation="Tanh", key=jax.random.key(0))
    syms = tnn.parameter_symmetries(tanh)
    assert [s.site for s in syms] == [1, 3]
    s = syms[0]
    assert s.group.name == "B_n" and s.discrete and s.dim == N
    assert s.order == 2 ** N * math.factorial(N)
    iso = tnn.MLP(3, [N], 2, activation="IsotropicTanh", key=jax.random.key(0))
    (s,) = tnn.parameter_symmetries(iso)
    assert s.group.name == "O(n)" and not s.discrete and s.manifold_dim == N * (N - 1) // 2
    assert "O(n)" in str(s)


@pytest.mark.parametrize("act, group", [("Tanh", B), ("IsotropicTanh", O)])
def test_apply_hidden_keeps_the_function(act, group):
    m = tnn.MLP(4, [N, N], 3, activation=act, key=jax.random.key(0))
    moved = m
    for site, k in zip((1, 3), jax.random.split(jax.random.key(1))):
        moved = tnn.apply_hidden(moved, site, group(N).sample(k, 1)[0])
    assert not leaves_close(m, moved, 1e-2)  # the parameters did move
    xs = np.random.default_rng(0).normal(size=(16, 4)) * 3
    for x in xs:
        np.testing.assert_allclose(np_mlp(moved, x), np_mlp(m, x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("drop", [tnn.Dropout(0.5), tnn.StochasticIsotropicDropout(0.5)],
                         ids=lambda d: type(d).__name__)
def test_apply_hidden_keeps_a_dropout_model_a_dropout_model(drop):
    # the moved dropout is called as a dropout: the identity in inference mode, the
    # same realisation as the original's for the same key in training, and an error
    # without a key
    k0, k1 = jax.random.split(jax.random.key(0))
    lin0, lin1 = tnn.Linear(N, N, key=k0), tnn.Linear(N, N, key=k1)
    model = tnn.Sequential([lin0, tnn.Tanh(), drop, lin1])
    perm = np.roll(np.eye(N, dtype=np.float32), 1, axis=0)
    moved = tnn.apply_hidden(model, 1, jnp.asarray(perm))
    x = np.linspace(-1.0, 2.0, N)
    want = np_chain([lin0, tnn.Tanh(), lin1], x)  # dropout is the identity at inference
    np.testing.assert_allclose(eqx.nn.inference_mode(moved)(jnp.asarray(x, jnp.float32)),
                               want, rtol=1e-5, atol=1e-6)
    key = jax.random.key(2)
    xs = jnp.asarray(x, jnp.float32)
    np.testing.assert_allclose(moved(xs, key=key), model(xs, key=key), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="pass `key=`"):
        moved(xs)


def test_apply_hidden_refuses_a_group_outside_the_sites_group(library_checks_only):
    # Tanh is not O(n)-equivariant: an O(n) element would change f, so `group=O()` (not a
    # subgroup of the site's Bₙ) is refused by name, before any element is looked at
    m = tnn.MLP(4, [N], 3, activation="Tanh", key=jax.random.key(0))
    g = O(N).sample(jax.random.key(2), 1)[0]
    with pytest.raises(ValueError, match=f"`group` = O\\({N}\\) is not a subgroup of "
                       f"B_{N}, the group of site 1"):
        tnn.apply_hidden(m, 1, g, group=O())
    with pytest.raises(ValueError, match="`group`"):
        tnn.apply_hidden(m, 1, jnp.arange(N), group=O(N))
    # the message for an element outside the group no longer offers any group: it asks for
    # an element of the site's group or a subgroup of it
    with pytest.raises(ValueError, match=f"`element` is not in B_{N}") as err:
        tnn.apply_hidden(m, 1, g)
    assert f"an element of B_{N}" in str(err.value)
    assert "or a subgroup of it as `group`" in str(err.value)
    assert "the group it belongs to" not in str(err.value)
    # a subgroup of the site's group is accepted, and its members keep the function
    x = np.ones(4)
    for sub in (Permutation(), SignedPermutation(), B(N)):
        moved = tnn.apply_hidden(m, 1, sub.on(N).sample(jax.random.key(3), 1)[0], group=sub)
        np.testing.assert_allclose(np_mlp(moved, x), np_mlp(m, x), rtol=1e-5, atol=1e-6)
    # an element outside the given subgroup is refused, naming that subgroup
    flip = -jnp.eye(N)
    with pytest.raises(ValueError, match=f"`element` is not in S_{N} \\(`group`\\)"):
        tnn.apply_hidden(m, 1, flip, group=Permutation())


def test_apply_hidden_bad_site(library_checks_only):
    m = tnn.MLP(4, [N], 3, activation="Tanh", key=jax.random.key(0))
    with pytest.raises(ValueError, match="sites with one: \\[1\\]"):
        tnn.apply_hidden(m, 0, jnp.arange(N))


def test_apply_hidden_refuses_elements_outside_the_group(library_checks_only):
    # each of these would change the function silently: a repeated index, an index out of
    # range, a matrix outside Bₙ (a scaling by 2 does not commute with tanh)
    m = tnn.MLP(3, [4], 2, activation="Tanh", key=jax.random.key(0))
    with pytest.raises(ValueError, match="`element` must be a permutation of range\\(4\\)"):
        tnn.apply_hidden(m, 1, jnp.array([0, 0, 1, 2]))
    with pytest.raises(ValueError, match="`element` must be a permutation of range\\(4\\)"):
        tnn.apply_hidden(m, 1, jnp.array([0, 1, 2, 5]))
    with pytest.raises(ValueError, match="`element` is not in B_4"):
        tnn.apply_hidden(m, 1, 2.0 * jnp.eye(4))
    with pytest.raises(TypeError, match="`site` must be an integer"):
        tnn.apply_hidden(m, 1.0, jnp.array([1, 0, 3, 2]))
    with pytest.raises(ValueError, match="`site` must be between 0 and 3"):
        tnn.hidden_states(m, jnp.ones(3), 7)
    # a valid element still goes through, and the function is kept
    x = np.arange(3.0)
    moved = tnn.apply_hidden(m, 1, -jnp.eye(4)[jnp.array([1, 0, 3, 2])])
    np.testing.assert_allclose(np_mlp(moved, x), np_mlp(m, x), rtol=1e-5, atol=1e-6)


def test_parameter_symmetries_of_a_single_hidden_unit():
    # on ℝ¹: O(1) = {±1} is finite with 2 elements (tanh's B₁ likewise), S₁ is trivial,
    # the positive scalings of ReLU stay a 1-dimensional continuous orbit
    def syms(act):
        return tnn.parameter_symmetries(tnn.MLP(3, [1], 2, activation=act,
                                                key=jax.random.key(0)))

    (iso,) = syms("IsotropicTanh")
    assert iso.discrete and iso.order == 2 and iso.manifold_dim is None
    assert "discrete, 2 elements" in str(iso)
    (tanh,) = syms("Tanh")
    assert tanh.discrete and tanh.order == 2
    assert syms("Sigmoid") == []
    (relu,) = syms("ReLU")
    assert not relu.discrete and relu.manifold_dim == 1
    # the two elements of O(1) keep the function
    m = tnn.MLP(3, [1], 2, activation="IsotropicTanh", key=jax.random.key(0))
    x = np.array([0.3, -1.0, 2.0])
    flipped = tnn.apply_hidden(m, 1, -jnp.eye(1))
    np.testing.assert_allclose(np_mlp(flipped, x), np_mlp(m, x), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- alignment
def test_linear_assignment_against_brute_force():
    import itertools

    rng = np.random.default_rng(0)
    for n in (1, 2, 4, 6):
        for _ in range(5):
            s = rng.normal(size=(n, n))
            p = linear_assignment(s)
            best = max(s[np.arange(n), list(q)].sum() for q in itertools.permutations(range(n)))
            assert np.isclose(s[np.arange(n), p].sum(), best)
            assert sorted(p) == list(range(n))


def test_best_element_recovers_the_group_element():
    rng = np.random.default_rng(0)
    n = 5
    perm = np.eye(n)[rng.permutation(n)]
    signed = perm * rng.choice([-1.0, 1.0], n)[:, None]
    q, r = np.linalg.qr(rng.normal(size=(n, n)))
    rot = q * np.sign(np.diag(r))
    # the score tr(Pᵀ S) with S = G is maximised by P = G for each of these groups
    np.testing.assert_allclose(best_element(Permutation(n), perm), perm)
    np.testing.assert_allclose(best_element(SignedPermutation(n), signed), signed)
    np.testing.assert_allclose(best_element(O(n), rot), rot, atol=1e-10)
    comp = np.asarray(OrthogonalComplement(n).sample(jax.random.key(0), 1).matrix[0],
                      np.float64)
    np.testing.assert_allclose(best_element(OrthogonalComplement(n), comp), comp, atol=1e-6)


@pytest.mark.parametrize("act, group, atol", [("Tanh", B, 1e-6), ("IsotropicTanh", O, 2e-3)])
@pytest.mark.parametrize("method", ["weights", "states"])
def test_align_undoes_a_hidden_reparameterisation(act, group, atol, method):
    m0 = tnn.MLP(8, [N, N], 3, activation=act, key=jax.random.key(0))
    m1 = m0
    for site, k in zip((1, 3), jax.random.split(jax.random.key(1))):
        m1 = tnn.apply_hidden(m1, site, group(N).sample(k, 1)[0])
    data = jax.random.normal(jax.random.key(3), (64, 8))
    result = align(m0, m1, method=method, data=data)
    assert leaves_close(m0, result.model, atol)


def test_weight_matching_undoes_a_permutation_of_relu_units():
    # ReLU's site group is the positive monomials; weight matching aligns their
    # permutations (the score of a non-isometric element is not linear in P)
    m0 = tnn.MLP(8, [N, N], 3, activation="ReLU", key=jax.random.key(0))
    rng = np.random.default_rng(1)
    m1 = m0
    for site in (1, 3):
        m1 = tnn.apply_hidden(m1, site, jnp.asarray(rng.permutation(N)))
    assert not leaves_close(m0, m1, 1e-2)
    assert leaves_close(m0, align(m0, m1).model, 1e-6)


@pytest.mark.parametrize("method", ["weights", "states"])
def test_aligning_a_model_to_itself_leaves_it(method):
    # 6 hidden units fed by 2 inputs: the score is singular, and any rotation of the
    # directions no parameter uses scores the same; nothing may move
    m = tnn.MLP(2, [N], 1, activation="IsotropicTanh", key=jax.random.key(0))
    data = jax.random.normal(jax.random.key(1), (4, 2))
    result = align(m, m, method=method, data=data)
    assert result.sweeps == 1
    np.testing.assert_array_equal(result.elements[1], np.eye(N))
    assert leaves_close(m, result.model, 0.0)


def test_loss_barrier_of_models_with_zero_loss():
    class Scale(eqx.Module):
        w: jax.Array

    # both ends fit exactly: B = 0 along a path at zero loss, +inf where the loss rises
    flat = loss_barrier(lambda m: 0.0 * m.w, Scale(jnp.array(0.0)), Scale(jnp.array(2.0)),
                        num=3)
    np.testing.assert_array_equal(flat.ratios, [0.0, 0.0, 0.0])
    assert flat.barrier == 0.0
    bump = loss_barrier(lambda m: m.w * (2.0 - m.w), Scale(jnp.array(0.0)),
                        Scale(jnp.array(2.0)), num=3)
    np.testing.assert_array_equal(bump.ratios, [0.0, np.inf, 0.0])
    with pytest.raises(ValueError, match="`loss` must be non-negative"):
        loss_barrier(lambda m: m.w - 5.0, Scale(jnp.array(0.0)), Scale(jnp.array(2.0)))


def test_loss_barrier_definition():
    # eq 37 on a model where the loss along the line is known in closed form:
    # f_θ(x) = w x with loss (w - 1)² + 1: L(0.5·(0) + 0.5·(2)) = 1, ends 2 and 2.
    class Scale(eqx.Module):
        w: jax.Array

    loss = lambda m: (m.w - 1.0) ** 2 + 1.0
    b = loss_barrier(loss, Scale(jnp.array(0.0)), Scale(jnp.array(2.0)), num=3)
    np.testing.assert_allclose(b.losses, [2.0, 1.0, 2.0])
    np.testing.assert_allclose(b.ratios, [0.0, -0.5, 0.0])
    assert b.barrier == 0.0
    b = loss_barrier(lambda m: 2.0 - (m.w - 1.0) ** 2, Scale(jnp.array(0.0)),
                     Scale(jnp.array(2.0)), num=3)
    np.testing.assert_allclose(b.barrier, 1.0)
    np.testing.assert_allclose(interpolate(Scale(jnp.array(0.0)), Scale(jnp.array(2.0)),
                                           0.25).w, 0.5)
    with pytest.raises(ValueError, match="num"):
        loss_barrier(loss, Scale(jnp.array(0.0)), Scale(jnp.array(2.0)), num=1)
    # s may be traced: a vmapped sweep, and the derivative (w₁ − w₀)·dL/dw = 2·2(w − 1)
    m0, m1 = Scale(jnp.array(0.0)), Scale(jnp.array(2.0))
    along = lambda t: loss(interpolate(m0, m1, t))  # noqa: E731
    np.testing.assert_allclose(jax.vmap(along)(jnp.array([0.0, 0.25, 1.0])),
                               [2.0, 1.25, 2.0])
    for t in (0.25, 1.0):
        np.testing.assert_allclose(jax.grad(along)(jnp.asarray(t)), 4 * (2 * t - 1))
    np.testing.assert_array_equal(interpolate(Scale(jnp.array(0.1)), Scale(jnp.array(0.3)),
                                              jnp.asarray(1.0)).w, np.float32(0.3))
    with pytest.raises(ValueError, match="`s` must be a scalar"):
        interpolate(m0, m1, jnp.ones(2))


def test_aligned_models_have_no_barrier():
    m0 = tnn.MLP(4, [N], 2, activation="Tanh", key=jax.random.key(0))
    m1 = tnn.apply_hidden(m0, 1, SignedPermutation(N).sample(jax.random.key(1), 1)[0])
    x = jax.random.normal(jax.random.key(2), (32, 4))
    y = jax.vmap(m0)(x) + 0.1
    loss = lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2)
    before = loss_barrier(loss, m0, m1).barrier
    after = loss_barrier(loss, m0, align(m0, m1).model).barrier
    assert before > 0.1 and abs(after) < 1e-4


@pytest.mark.parametrize("method", ["weights", "states"])
def test_colu_alignment_leaves_a_model_and_undoes_a_cone_isometry(method):
    """CoLU's sites move along Perm(G) × O(S−1)^G, whose inverse is the transpose: aligned
    to itself a CoLU model stays in one sweep, and a copy moved by an element of that
    group is moved back (weight matching scored with a matrix inverse, whose derivative
    at I is −dP, moved the model away from itself and never converged)."""
    m0 = tnn.MLP(5, [8], 3, activation=tnn.CoLU(cone_dim=4), key=jax.random.key(0))
    data = jax.random.normal(jax.random.key(3), (64, 5))
    same = align(m0, m0, method=method, data=data)
    assert same.sweeps == 1 and same.converged
    assert leaves_close(m0, same.model, 0.0)
    group = ConeGroup(8, cone_dim=4, scalings=False)
    m1 = tnn.apply_hidden(m0, 1, group.sample(jax.random.key(1), 1)[0], group)
    assert not leaves_close(m0, m1, 1e-2)
    moved_back = align(m0, m1, method=method, data=data)
    assert moved_back.converged and leaves_close(m0, moved_back.model, 1e-5)


def test_best_even_signed_permutation_is_the_maximiser():
    """Dₙ (an even number of −1s): `best_element` maximises tr(Pᵀ S), against a
    brute-force search over all of Dₙ (flipping the weakest sign of Bₙ's maximiser is
    not always optimal)."""
    import itertools

    rng = np.random.default_rng(5)
    for _ in range(60):
        n = int(rng.integers(2, 5))
        s = rng.normal(size=(n, n))
        p = best_element(EvenSignedPermutation(n), s)
        assert bool(EvenSignedPermutation(n).contains(
            taxdl.groups.linear_element(jnp.asarray(p[None], jnp.float32)))[0])
        best = max(sum(sg[i] * s[i, pm[i]] for i in range(n))
                   for pm in itertools.permutations(range(n))
                   for sg in itertools.product([-1, 1], repeat=n) if np.prod(sg) == 1)
        np.testing.assert_allclose(np.trace(p.T @ s), best, rtol=1e-12)


def test_loss_barrier_of_a_model_with_itself_is_zero():
    """The interpolation θ₀ + s(θ₁ − θ₀) is exactly θ₀ for equal models, so the barrier
    of a model with itself is 0 even where its loss is ~0 (the rounding of
    (1 − s)θ₀ + sθ₀ made it +∞ or 110%)."""
    lin = eqx.tree_at(lambda m: m.weight, eqx.nn.Linear(2, 1, use_bias=False,
                                                         key=jax.random.key(0)),
                      jnp.array([[0.1, 0.3]], jnp.float32))
    x = jnp.eye(2)
    y = jax.vmap(lin)(x)
    loss = lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2)
    b = loss_barrier(loss, lin, lin)
    assert b.barrier == 0.0 and np.all(b.losses == 0.0)
    m = tnn.MLP(5, [8], 3, activation="Tanh", key=jax.random.key(2))
    xs = jax.random.normal(jax.random.key(4), (16, 5))
    ys = jax.vmap(m)(xs)
    assert loss_barrier(lambda k: jnp.mean((jax.vmap(k)(xs) - ys) ** 2), m, m,
                        num=np.int64(5)).barrier == 0.0


def test_alignment_and_barrier_refuse_mismatched_models():
    narrow = tnn.MLP(5, [6], 3, activation="Tanh", key=jax.random.key(0))
    wide = tnn.MLP(5, [8], 3, activation="Tanh", key=jax.random.key(0))
    relu = tnn.MLP(5, [8], 3, activation="ReLU", key=jax.random.key(0))
    for other in (narrow, relu):
        with pytest.raises(ValueError, match="same architecture"):
            align(wide, other)
    with pytest.raises(ValueError, match="same structure and parameter shapes"):
        loss_barrier(lambda m: 0.0, wide, narrow)
    with pytest.raises(ValueError, match="`score` must be finite"):
        linear_assignment(np.array([[1.0, np.nan], [0.0, 1.0]]))


def test_alignment_through_normaliser_and_gmp_sites():
    """A normaliser's site ((ℝ×,+λ1) × O(n−1) before a scalar LayerNorm, {±I} × O(n−1)
    after it) is aligned along O(n−1), and a GmP MLP's sites (Bₙ, Sₙ⋉(ℝ×)ⁿ) along signed
    permutations by state matching: each moved copy is moved back (both raised
    NotImplementedError). Weight matching refuses GmP layers, whose angles are not
    linear in P."""
    def normalised(k):
        return tnn.Sequential([tnn.Linear(4, N, key=jax.random.key(k)), tnn.ScalarLayerNorm(N),
                               tnn.IsotropicTanh(), tnn.Linear(N, 3, key=jax.random.key(k + 1))])

    m0, group = normalised(0), OrthogonalComplement(N)
    m1 = m0
    for site, k in ((1, 5), (2, 6)):
        m1 = tnn.apply_hidden(m1, site, group.sample(jax.random.key(k), 1)[0], group)
    assert not leaves_close(m0, m1, 1e-2)
    result = align(m0, m1, max_sweeps=50)
    assert result.converged and leaves_close(m0, result.model, 1e-5)
    gm = tnn.MLP(4, [N, N], 3, activation="Tanh", parameterization="gmp",
                 key=jax.random.key(0))
    moved = gm
    for site, k in zip((1, 2), jax.random.split(jax.random.key(1))):
        moved = tnn.apply_hidden(moved, site, SignedPermutation(N).sample(k, 1)[0],
                                 SignedPermutation(N))
    assert not leaves_close(gm, moved, 1e-2)
    data = jax.random.normal(jax.random.key(3), (64, 4))
    assert leaves_close(gm, align(gm, moved, method="states", data=data).model, 1e-5)
    with pytest.raises(ValueError, match="GmP layers.*method='states'"):
        align(gm, moved)


def test_weight_matching_reports_whether_it_converged():
    m0 = tnn.MLP(5, [8, 8], 3, activation="IsotropicTanh", key=jax.random.key(0))
    m1 = m0
    for site, k in zip((1, 3), jax.random.split(jax.random.key(1))):
        m1 = tnn.apply_hidden(m1, site, O(8).sample(k, 1)[0])
    short = align(m0, m1, max_sweeps=1)
    assert short.sweeps == 1 and not short.converged


def test_stateful_parts_and_bad_arguments_are_refused_when_built(library_checks_only):
    key = jax.random.key(0)
    for name in ("ChiNorm", "BatchNorm"):
        with pytest.raises(ValueError, match="MLP: `norm` must be a stateless normaliser"):
            tnn.MLP(4, [8], 2, norm=name, key=key)
    with pytest.raises(ValueError, match="Sequential: part 1 \\(ChiNorm\\) is stateful"):
        tnn.Sequential([tnn.Linear(4, 4, key=key), tnn.ChiNorm(4)])
    with pytest.raises(TypeError, match="MLP: `widths` must be a sequence"):
        tnn.MLP(4, 8, 2, key=key)
    with pytest.raises(TypeError, match="InitialisedLinear: `init` must be None or"):
        tnn.InitialisedLinear(4, 4, init=3, key=key)
    # a plain function is not a factory of primitives; a class is not an activation
    for param in ("standard", "gmp"):
        with pytest.raises(TypeError, match="MLP: `activation` relu was called as a factory"):
            tnn.MLP(4, [8], 2, activation=jax.nn.relu, parameterization=param, key=key)
    for make in (lambda: tnn.GmPLinear(4, 3, tnn.ReLU, key=key),
                 lambda: tnn.MultiHeadSum(4, 2, tnn.IsotropicTanh, key=key),
                 lambda: tnn.MultiHeadAffineSum(4, 3, 2, activation=tnn.IsotropicTanh,
                                                key=key)):
        with pytest.raises(TypeError, match="`activation` must be an instance, not the class"):
            make()
    mlp = tnn.MLP(4, [8], 2, norm="LayerNorm", key=key)                  # stateless: fine
    assert mlp(jnp.ones(4)).shape == (2,)
    assert taxdl.AbstractInitialiser is taxdl.taxonomy.AbstractInitialiser


def test_residual_block_reports_and_applies_its_inner_symmetries():
    key = jax.random.key(0)
    inner = tnn.Sequential([tnn.Linear(4, 4, key=key), tnn.Tanh(),
                            tnn.Linear(4, 4, key=jax.random.key(1))])
    block = tnn.Residual(inner)
    syms = tnn.parameter_symmetries(block)
    assert [str(s) for s in syms] == [str(s) for s in tnn.parameter_symmetries(inner)]
    moved = tnn.apply_hidden(block, syms[0].site, jnp.array([2, 0, 3, 1]))
    assert isinstance(moved, tnn.Residual)
    x = jnp.arange(4.0)
    np.testing.assert_allclose(np.asarray(moved(x)), np.asarray(block(x)), rtol=1e-6)
    assert not np.allclose(np.asarray(moved.inner.layers[0].weight),
                           np.asarray(block.inner.layers[0].weight))


@pytest.mark.parametrize("act, group", [(tnn.Tanh, B), (tnn.IsotropicTanh, O)])
def test_equinox_sequential_has_the_parameter_symmetries_of_taxdl_sequential(act, group):
    # taxdl.taxonomy accepts an eqx.nn.Sequential of tagged parts; its parameter symmetries
    # are those of the same chain in a taxdl.nn.Sequential, and applying one keeps f
    k0, k1 = jax.random.split(jax.random.key(0))
    layers = [tnn.Linear(3, N, key=k0), act(), tnn.Linear(N, 3, key=k1)]
    plain, ours = eqx.nn.Sequential(layers), tnn.Sequential(layers)
    syms = tnn.parameter_symmetries(plain)
    assert [str(s) for s in syms] == [str(s) for s in tnn.parameter_symmetries(ours)]
    assert [s.site for s in syms] == [1]
    x = np.array([0.3, -1.0, 2.0])
    np.testing.assert_allclose(tnn.hidden_states(plain, jnp.asarray(x, jnp.float32), 1),
                               np_chain(layers[:1], x), rtol=1e-5, atol=1e-6)
    for model in (plain, tnn.Residual(plain)):
        moved = tnn.apply_hidden(model, 1, group(N).sample(jax.random.key(1), 1)[0])
        assert type(moved) is type(model)
        moved_layers = moved.layers if model is plain else moved.inner.layers
        assert not leaves_close(tuple(layers), tuple(moved_layers), 1e-2)
        np.testing.assert_allclose(np_chain(moved_layers, x), np_chain(layers, x),
                                   rtol=1e-5, atol=1e-6)


def test_parameter_symmetries_name_the_models_they_take(library_checks_only):
    with pytest.raises(TypeError, match="`model` must be a taxdl.nn.Sequential, taxdl.nn.MLP "
                       "or equinox.nn.Sequential .*got equinox\\..*Linear"):
        tnn.parameter_symmetries(eqx.nn.Linear(3, 3, key=jax.random.key(0)))


def test_mlp_norm_by_name_receives_a_key_when_it_has_parameters_to_draw():
    """IsotropicLayerNorm draws its bottleneck (Haar) at construction: given by name, it
    gets a key derived from its layer's, so the model is reproducible from `key`."""
    make = lambda k: tnn.MLP(4, [6], 2, activation="IsotropicTanh", norm="IsotropicLayerNorm",
                             key=jax.random.key(k))
    a, b, c = make(0), make(0), make(1)
    wa, wb, wc = (m.layers.layers[1].w_in for m in (a, b, c))
    np.testing.assert_array_equal(np.asarray(wa), np.asarray(wb))
    assert not np.allclose(np.asarray(wa), np.asarray(wc))
    np.testing.assert_allclose(np.asarray(wa @ wa.T), np.eye(wa.shape[0]), atol=1e-5)


@pytest.mark.parametrize("use_bias", [True, False])
def test_initialised_linear_declares_the_scalings_a_linear_map_commutes_with(use_bias):
    """W(cx) = cWx: without a bias for every W (algebraic E ⊇ ℝ×), and in law at the
    zero initial bias (probabilistic E = ℝ×·O(n) for the Gaussian default); the checker
    confirms the cells, maximality included."""
    from taxdl.groups import ConformalLinear, Scaling
    from taxdl.testing import check

    layer = tnn.InitialisedLinear(5, 5, use_bias=use_bias, key=jax.random.key(0))
    t = taxdl.taxonomy(layer)
    assert t.cell("probabilistic", "E").group == ConformalLinear()
    assert (t.cell("algebraic", "E").group == Scaling()) is (not use_bias)
    report = check(layer, raise_on_failure=False)
    assert report.passed, str(report)


@pytest.mark.parametrize("wrap", ["Sequential", "Residual", "eqx.nn.Sequential"])
def test_models_with_a_dropout_are_checked_at_its_fixed_realisation(wrap):
    from taxdl.taxonomy import as_function
    from taxdl.testing import check

    keys = jax.random.split(jax.random.key(0))
    drop = tnn.Dropout(0.3)
    layers = [tnn.Linear(N, N, key=keys[0]), tnn.Tanh(), drop, tnn.Linear(N, N, key=keys[1])]
    model = {"Sequential": tnn.Sequential, "Residual": tnn.Residual,
             "eqx.nn.Sequential": eqx.nn.Sequential}[wrap](layers)
    with pytest.raises(ValueError, match="pass `key=`"):
        model(jnp.ones(N))  # called directly, a training-mode dropout needs a key
    # the checker's function: the parts' own, the dropout at its fixed realisation (a
    # mask zeroing some units, in float64 NumPy)
    x = np.random.default_rng(0).standard_normal(N)
    mask = np.asarray(as_function(drop)(jnp.ones(N)), np.float64)
    assert 0 < np.sum(mask == 0) < N
    w1, b1 = (np.asarray(a, np.float64) for a in (layers[0].weight, layers[0].bias))
    w2, b2 = (np.asarray(a, np.float64) for a in (layers[3].weight, layers[3].bias))
    want = w2 @ (mask * np.tanh(w1 @ x + b1)) + b2 + (x if wrap == "Residual" else 0)
    got = as_function(model)(jnp.asarray(x, jnp.float32))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    if wrap == "Sequential":  # (one check: the others run the same machinery)
        assert check(model, examples=2, generations=("algebraic", "closure")).passed
