"""Alignment and loss barrier: normaliser sites, exact weight matching next to a vector
gain, float64 models, and the refusal of bad arguments and diverged models."""

import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import taxdl.nn as tnn
from taxdl.diagnostics import (align, best_element, interpolate, loss_barrier,
                               permutation_matrix)
from taxdl.diagnostics._align import _monomial_element, _site_coordinates
from taxdl.groups import (OrthogonalComplement, Permutation, SignedPermutation,
                          linear_element)


def _leaves(m):
    return [np.asarray(x, np.float64)
            for x in jax.tree_util.tree_leaves(eqx.filter(m, eqx.is_inexact_array))]


def _distance(a, b) -> float:
    return max(float(np.max(np.abs(x - y))) for x, y in zip(_leaves(a), _leaves(b)))


def _inner(a, b) -> float:
    return sum(float(np.vdot(x, y)) for x, y in zip(_leaves(a), _leaves(b)))


def _with_random_gains(model, key):
    """`model` with its normaliser's vector γ drawn away from 1 (a trained model's)."""
    norm = model.layers.layers[1]
    gamma = 1.0 + 0.5 * jax.random.normal(key, norm.gamma.shape, norm.gamma.dtype)
    return eqx.tree_at(lambda m: m.layers.layers[1].gamma, model, gamma)


# ------------------------------------------------------------------ normaliser sites
@pytest.mark.parametrize("norm", [
    lambda n: tnn.LayerNorm(n, affine="scalar", eps=1e-5),
    lambda n: tnn.ScalarLayerNorm(n, eps=1e-5),
    lambda n: tnn.LayerNorm(n, eps=1e-5),
])
@pytest.mark.parametrize("act", ["ReLU", "IsotropicTanh"])
def test_align_leaves_a_normaliser_site_without_isometries(norm, act):
    """The site before a LayerNorm has ±I ⋉ +λ1 (no isometry but I): it is left, and an
    exact twin moved along the other site's isometries is moved back to distance 0."""
    m0 = tnn.MLP(4, [8], 3, activation=act, norm=norm, key=jax.random.key(0))
    syms = tnn.parameter_symmetries(m0)
    assert syms[0].group.name == "±I_n⋉+λ1"
    site = syms[1]
    if act == "ReLU":
        group = Permutation(8)
        m1 = tnn.apply_hidden(m0, site.site, jnp.asarray(np.random.default_rng(0)
                                                         .permutation(8)), group)
    elif "O(n-1)" in site.group.name:
        group = OrthogonalComplement(8)
        m1 = tnn.apply_hidden(m0, site.site, group.sample(jax.random.key(1), 1)[0], group)
    else:
        group = SignedPermutation(8)
        m1 = tnn.apply_hidden(m0, site.site, group.sample(jax.random.key(1), 1)[0], group)
    assert _distance(m0, m1) > 0.1
    result = align(m0, m1)
    assert result.converged
    assert _distance(m0, result.model) < 1e-5
    np.testing.assert_array_equal(result.elements[syms[0].site], np.eye(8))
    x = jax.random.normal(jax.random.key(5), (16, 4))
    np.testing.assert_allclose(jax.vmap(result.model)(x), jax.vmap(m0)(x), atol=1e-5)


# ------------------------------------------------- weight matching next to vector gains
@pytest.mark.parametrize("act", ["ReLU", "IsotropicTanh"])
def test_weight_matching_recovers_a_twin_through_rmsnorm(act):
    """RMSNorm's vector γ is conjugated by a site's element (quadratic in P): an exact
    twin, moved at both sites, is matched back to distance 0 (the derivative score at
    P = I oscillated at distance ~1 without converging)."""
    m0 = _with_random_gains(tnn.MLP(4, [8], 3, activation=act,
                                    norm=lambda n: tnn.RMSNorm(n, eps=1e-5),
                                    key=jax.random.key(0)), jax.random.key(9))
    rng = np.random.default_rng(0)
    signed = np.eye(8)[rng.permutation(8)] * rng.choice([-1.0, 1.0], 8)[:, None]
    m1 = tnn.apply_hidden(m0, 1, jnp.asarray(signed, jnp.float32), SignedPermutation(8))
    m1 = tnn.apply_hidden(m1, 2, jnp.asarray(rng.permutation(8)), Permutation(8))
    assert _distance(m0, m1) > 0.5
    result = align(m0, m1)
    assert result.converged
    assert _distance(m0, result.model) < 1e-6
    np.testing.assert_allclose(_inner(m0, result.model), _inner(m0, m0), rtol=1e-6)


def test_exact_monomial_element_is_the_brute_force_maximiser():
    """At each site of an RMSNorm MLP, the element weight matching picks maximises
    ⟨θ₀, P·θ₁⟩ over all of the site's Sₙ or Bₙ (evaluated by applying every element)."""
    norm = lambda n: tnn.RMSNorm(n, eps=1e-5)  # noqa: E731
    m0 = _with_random_gains(tnn.MLP(3, [4], 2, activation="ReLU", norm=norm,
                                    key=jax.random.key(0)), jax.random.key(1))
    m1 = _with_random_gains(tnn.MLP(3, [4], 2, activation="ReLU", norm=norm,
                                    key=jax.random.key(2)), jax.random.key(3))
    apply = eqx.filter_jit(tnn.apply_hidden)
    for site, group in ((1, SignedPermutation(4)), (2, Permutation(4))):
        signs = (itertools.product([-1.0, 1.0], repeat=4) if site == 1 else [np.ones(4)])
        candidates = [np.asarray(sg)[:, None] * np.eye(4)[list(pm)]
                      for sg in signs for pm in itertools.permutations(range(4))]
        values = [_inner(m0, apply(m1, site, jnp.asarray(p, jnp.float32), group))
                  for p in candidates]
        coords = _site_coordinates(m1, site, 4, group, np.dtype(np.float32))
        p = _monomial_element(m0, m1, site, 4, group, coords)
        got = _inner(m0, apply(m1, site, jnp.asarray(p, jnp.float32), group))
        np.testing.assert_allclose(got, max(values), rtol=1e-5)


def test_weight_matching_never_lowers_its_score():
    """Between two independent RMSNorm models, weight matching converges, and the aligned
    model scores at least as high as the unaligned one."""
    norm = lambda n: tnn.RMSNorm(n, eps=1e-5)  # noqa: E731
    m0 = _with_random_gains(tnn.MLP(4, [8], 3, activation="ReLU", norm=norm,
                                    key=jax.random.key(0)), jax.random.key(1))
    m1 = _with_random_gains(tnn.MLP(4, [8], 3, activation="ReLU", norm=norm,
                                    key=jax.random.key(2)), jax.random.key(3))
    result = align(m0, m1)
    assert result.converged and result.sweeps < 20
    assert _inner(m0, result.model) >= _inner(m0, m1) - 1e-5
    x = jax.random.normal(jax.random.key(5), (16, 4))
    np.testing.assert_allclose(jax.vmap(result.model)(x), jax.vmap(m1)(x), atol=1e-5)


# ------------------------------------------------------------------------- float64
@pytest.mark.parametrize("method", ["weights", "states"])
def test_float64_models_are_aligned_in_float64(method):
    with jax.enable_x64(True):
        x = jax.random.normal(jax.random.key(2), (64, 3), jnp.float64)
        m0 = tnn.MLP(3, [8], 2, activation="IsotropicTanh", key=jax.random.key(0),
                     dtype=jnp.float64)
        m1 = tnn.MLP(3, [8], 2, activation="IsotropicTanh", key=jax.random.key(1),
                     dtype=jnp.float64)
        result = align(m0, m1, method=method, data=x)
        out1, out = np.asarray(jax.vmap(m1)(x)), np.asarray(jax.vmap(result.model)(x))
    p = result.elements[1]
    np.testing.assert_allclose(p.T @ p, np.eye(8), atol=1e-13)
    # the moved first layer is P W (NumPy float64) and the function is unchanged
    w = np.asarray(m1.layers.layers[0].weight, np.float64)
    np.testing.assert_allclose(np.asarray(result.model.layers.layers[0].weight), p @ w,
                               atol=1e-13)
    np.testing.assert_allclose(out, out1, atol=1e-13)


def test_orthogonal_complement_element_is_exact_in_float64():
    rng = np.random.default_rng(0)
    for n in (4, 6, 16):
        p = best_element(OrthogonalComplement(n), rng.normal(size=(n, n)))
        np.testing.assert_allclose(p @ np.ones(n), np.ones(n), atol=1e-13)
        np.testing.assert_allclose(p.T @ p, np.eye(n), atol=1e-13)


# ----------------------------------------------------------------- bad arguments
@pytest.mark.parametrize("bad, error", [(0, ValueError), (-1, ValueError),
                                        (2.5, TypeError), (np.int64(0), ValueError)])
def test_align_refuses_bad_max_sweeps(bad, error):
    m = tnn.MLP(3, [4], 2, key=jax.random.key(0))
    # (a float is refused by the runtime type check, when on, before `check_int`)
    with pytest.raises(error, match="max_sweeps"):
        align(m, m, max_sweeps=bad)
    assert align(m, m, max_sweeps=np.int64(1)).sweeps == 1


def test_align_names_its_own_arguments_for_mismatched_parameters():
    def net(*tail):
        return tnn.Sequential([tnn.Linear(3, 4, key=jax.random.key(0)), tnn.ReLU(),
                               tnn.Linear(4, 2, key=jax.random.key(1)), *tail])

    m, other = net(), net(tnn.Tanh())
    assert ([s.group.name for s in tnn.parameter_symmetries(m)]
            == [s.group.name for s in tnn.parameter_symmetries(other)])
    with pytest.raises(ValueError, match="`reference` and `model` must have the same"):
        align(m, other)
    with pytest.raises(ValueError, match="`model0` and `model1` must have the same"):
        interpolate(m, other, 0.5)


@pytest.mark.parametrize("act", ["ReLU", "IsotropicTanh", "CoLU"])
@pytest.mark.parametrize("method", ["weights", "states"])
def test_diverged_models_are_refused_clearly(act, method):
    activation = tnn.CoLU(cone_dim=4) if act == "CoLU" else act
    m0 = tnn.MLP(3, [8], 2, activation=activation, key=jax.random.key(0))
    m1 = tnn.MLP(3, [8], 2, activation=activation, key=jax.random.key(1))
    m1 = eqx.tree_at(lambda m: m.layers.layers[0].weight, m1,
                     m1.layers.layers[0].weight.at[0, 0].set(jnp.nan))
    x = jax.random.normal(jax.random.key(2), (10, 3))
    with pytest.raises(ValueError, match="`score` must be finite.*diverged model"):
        align(m0, m1, method=method, data=x)


def test_best_element_refuses_non_finite_scores():
    s = np.eye(3)
    s[0, 1] = np.nan
    for group in (SignedPermutation(3), OrthogonalComplement(3)):
        with pytest.raises(ValueError, match="`score` must be finite"):
            best_element(group, s)
    from taxdl.groups import Orthogonal
    with pytest.raises(ValueError, match="`score` must be finite"):
        best_element(Orthogonal(3), np.full((3, 3), np.inf))


@pytest.mark.parametrize("perm", [[0, 0, 1], [1.5, 0], [0, 3], [[0, 1], [1, 0]],
                                  [True, False]])
def test_permutation_matrix_refuses_non_permutations(perm):
    with pytest.raises(ValueError, match=r"`perm` must be a permutation of range\(n\)"):
        permutation_matrix(perm)


def test_permutation_matrix_of_a_permutation():
    e = permutation_matrix(np.array([2, 0, 1]))
    x = np.array([10.0, 20.0, 30.0])
    np.testing.assert_array_equal(np.asarray(e.matrix) @ x, x[[2, 0, 1]])
    assert bool(Permutation(3).contains(linear_element(e.matrix)))


@pytest.mark.parametrize("s", [np.float32(0.5), np.float64(0.25), np.array(0.75)])
@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float32])
def test_interpolate_keeps_leaf_dtypes_for_numpy_scalars(s, dtype):
    m0 = tnn.MLP(3, [4], 2, key=jax.random.key(0), dtype=dtype)
    m1 = tnn.MLP(3, [4], 2, key=jax.random.key(1), dtype=dtype)
    mixed = interpolate(m0, m1, s)
    t = float(s)
    for a, b, c in zip(jax.tree_util.tree_leaves(eqx.filter(m0, eqx.is_inexact_array)),
                       jax.tree_util.tree_leaves(eqx.filter(m1, eqx.is_inexact_array)),
                       jax.tree_util.tree_leaves(eqx.filter(mixed, eqx.is_inexact_array))):
        assert c.dtype == a.dtype
        a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
        np.testing.assert_allclose(np.asarray(c, np.float64), a64 + t * (b64 - a64),
                                   atol=2e-2 if dtype == jnp.bfloat16 else 1e-6)


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_loss_barrier_refuses_a_non_finite_end_loss(bad):
    class Scale(eqx.Module):
        w: jax.Array

    def loss(m):
        return jnp.where(m.w == 2.0, bad, (m.w - 1.0) ** 2)

    with pytest.raises(ValueError, match="`loss` must be non-negative and finite"):
        loss_barrier(loss, Scale(jnp.array(0.0)), Scale(jnp.array(2.0)), num=5)
    with pytest.raises(ValueError, match="`loss` must be non-negative and finite"):
        loss_barrier(loss, Scale(jnp.array(2.0)), Scale(jnp.array(0.0)), num=5)
