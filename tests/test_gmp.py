"""Geometric Parameterization: u(θ) (eq 11), the GmP unit (eq 13), conversion, the
initialisation (Remark 3.5), GmPConv and Input Mean Normalisation (Remark 3.6), against
independent NumPy float64 evaluations of the paper's formulas."""

import functools as ft
import pathlib
import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import taxdl.nn as tnn
from taxdl.groups import GL, Affine, B, Euclidean, linear_element
from taxdl.nn import GmPConv, GmPLinear, InputMeanNorm
from taxdl.nn.functional import gmp_angles, gmp_direction, gmp_linear
from taxdl.nn.layers._gmp_functional import sincos
from taxdl.taxonomy import Flavour, perturb, transport
from taxdl.testing import SymmetryViolation, assert_closure, check


# ------------------------------------------------------------------ NumPy references
def u_ref(theta):
    """Eq 11 in float64: u_i = cos θ_i Π_{j<i} sin θ_j, u_n = Π_j sin θ_j."""
    t = np.asarray(theta, np.float64)
    n = t.shape[-1] + 1
    u = np.ones(t.shape[:-1] + (n,))
    for i in range(n - 1):
        u[..., i] *= np.cos(t[..., i])
        u[..., i + 1:] *= np.sin(t[..., i:i + 1])
    return u


def jacobian_ref(theta):
    """∂u_i/∂θ_j from eq 11 without divisions (valid where sin θ_j = 0)."""
    t = np.asarray(theta, np.float64)
    m = t.shape[0]
    s, c = np.sin(t), np.cos(t)
    jac = np.zeros((m + 1, m))
    for i in range(m + 1):
        for j in range(min(i + 1, m)):
            factors = [s[k] for k in range(i) if k != j]
            if i < m:
                factors.append(c[i] if j != i else -s[i])
            if j < i:
                factors.append(c[j])
            jac[i, j] = np.prod(factors)
    return jac


def relu(z):
    return np.maximum(z, 0)


@eqx.filter_jit
def apply(layer, xs):
    return jax.vmap(layer)(xs)


@eqx.filter_jit
def grad_sum_sq(layer, x):
    return jax.grad(lambda l: jnp.sum(l(x) ** 2))(layer)


# ------------------------------------------------------------------ u(θ)
def test_direction_matches_eq_11_float64():
    rng = np.random.default_rng(0)
    theta = rng.uniform(-7, 7, (3, 4, 9))
    with jax.enable_x64(True):
        u = np.asarray(gmp_direction(jnp.asarray(theta)))
    np.testing.assert_allclose(u, u_ref(theta), rtol=0, atol=1e-14)
    np.testing.assert_allclose(np.linalg.norm(u, axis=-1), 1, atol=1e-14)


def test_direction_float32_accuracy_and_dtype():
    rng = np.random.default_rng(1)
    theta = rng.uniform(-50, 50, (16, 300)).astype(np.float32)
    u = gmp_direction(jnp.asarray(theta))
    assert u.dtype == jnp.float32 and u.shape == (16, 301)
    np.testing.assert_allclose(np.asarray(u), u_ref(theta), rtol=0, atol=2e-6)


def test_sincos_float32_matches_numpy():
    x = np.concatenate([np.linspace(-1000, 1000, 20001), [0.0, np.pi / 4, -np.pi / 2, 1e-30]])
    s, c = sincos(jnp.asarray(x, jnp.float32))
    x32 = x.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(np.asarray(s), np.sin(x32), rtol=0, atol=3e-7)
    np.testing.assert_allclose(np.asarray(c), np.cos(x32), rtol=0, atol=3e-7)


@pytest.mark.parametrize("theta", [
    [0.3, 1.2, -2.0, 2.9, 0.7],
    [0.0, 0.0, 0.0, 0.0, 0.0],          # u = e1: every sine is 0
    [np.pi, 0.5, 0.0, 1.0, np.pi],      # sines vanish in the middle and at the end
    [1.0, np.pi, 0.3, 0.0, -1.0],
])
def test_direction_gradient_matches_analytic_jacobian(theta):
    rng = np.random.default_rng(2)
    cot = rng.standard_normal(6)
    with jax.enable_x64(True):
        th = jnp.asarray(theta, jnp.float64)
        vjp = jax.grad(lambda t: jnp.sum(gmp_direction(t) * jnp.asarray(cot)))(th)
        assert np.all(np.isfinite(np.asarray(vjp)))
        np.testing.assert_allclose(np.asarray(vjp), jacobian_ref(theta).T @ cot, atol=1e-13)
    with_f32 = jax.grad(lambda t: jnp.sum(gmp_direction(t) * jnp.asarray(cot, jnp.float32)))(
        jnp.asarray(theta, jnp.float32))
    np.testing.assert_allclose(np.asarray(with_f32), jacobian_ref(theta).T @ cot, atol=2e-6)


def test_direction_batched_gradient_under_vmap():
    rng = np.random.default_rng(3)
    theta = rng.uniform(0, np.pi, (4, 3, 5))
    cot = rng.standard_normal((4, 3, 6))
    with jax.enable_x64(True):
        g = jax.vmap(jax.grad(lambda t, c: jnp.sum(gmp_direction(t) * c)))(
            jnp.asarray(theta), jnp.asarray(cot))
    for b in range(4):
        for k in range(3):
            np.testing.assert_allclose(np.asarray(g[b, k]),
                                       jacobian_ref(theta[b, k]).T @ cot[b, k], atol=1e-13)


def test_angles_invert_direction():
    rng = np.random.default_rng(4)
    w = rng.standard_normal((6, 7)) * rng.uniform(1e-3, 1e3, (6, 1))
    w[2] = [0, 0, 0, -1.5, 0, 0, 0]   # zero leading coordinates
    w[3] = 0                          # zero vector → u = e1, radius 0
    with jax.enable_x64(True):
        theta, radius = gmp_angles(jnp.asarray(w))
        theta = np.asarray(theta)
    np.testing.assert_allclose(np.asarray(radius), np.linalg.norm(w, axis=-1), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(radius)[:, None] * u_ref(theta), w, atol=1e-12)
    assert np.all((theta[:, :-1] >= 0) & (theta[:, :-1] <= np.pi))
    np.testing.assert_allclose(u_ref(theta[3]), np.eye(7)[0])
    with jax.enable_x64(True):
        big, r = gmp_angles(jnp.asarray([[3e300, 4e300]]))   # no overflow
    np.testing.assert_allclose(np.asarray(r), [5e300], rtol=1e-14)
    np.testing.assert_allclose(u_ref(np.asarray(big)), [[0.6, 0.8]], atol=1e-15)
    # float32 weights above 2¹²⁶, where a division by max|w| would multiply by a flushed
    # reciprocal (all angles and the radius 0)
    w32 = np.array([[2e38, -1e38, 5e37, 3e37]])
    theta, r = gmp_angles(jnp.asarray(w32, jnp.float32))
    w64 = np.asarray(jnp.asarray(w32, jnp.float32), np.float64)
    np.testing.assert_allclose(np.asarray(r, np.float64), np.linalg.norm(w64, axis=-1),
                               rtol=1e-6)
    np.testing.assert_allclose(u_ref(np.asarray(theta, np.float64)),
                               w64 / np.linalg.norm(w64, axis=-1, keepdims=True), atol=1e-6)


def test_angle_derivatives_are_finite_and_match_finite_differences():
    """gmp_angles' Jacobian against central differences at a generic point (float64), and
    finite at points with zero tails (w = e₁, w = (1, 1, 0, 0)), at 0 and at 1e-30 in
    float32, where ‖w_{i:}‖ and atan2(0, 0) have no derivative."""
    def flat(w):
        theta, radius = gmp_angles(w)
        return jnp.concatenate([theta, radius[None]])

    rng = np.random.default_rng(8)
    w = rng.standard_normal(5)
    with jax.enable_x64(True):
        jac = np.asarray(jax.jacrev(flat)(jnp.asarray(w)))
        h = 1e-6
        fd = np.stack([(np.asarray(flat(jnp.asarray(w + h * e)))
                        - np.asarray(flat(jnp.asarray(w - h * e)))) / (2 * h)
                       for e in np.eye(5)], axis=1)
    np.testing.assert_allclose(jac, fd, atol=1e-8)
    np.testing.assert_allclose(jac[-1], w / np.linalg.norm(w), atol=1e-12)   # d‖w‖ = ŵ
    for point in ([1.0, 0, 0, 0], [1.0, 1, 0, 0], [0.0, 0, 0, 0], [1e-30, -2e-30, 0, 3e-30]):
        for mode in (jax.jacrev, jax.jacfwd):
            j = np.asarray(mode(flat)(jnp.asarray(point, jnp.float32)))
            assert np.all(np.isfinite(j)), (point, mode.__name__)


# ------------------------------------------------------------------ the layer
def test_layer_matches_eq_13():
    layer = GmPLinear(5, 4, key=jax.random.key(0))
    rng = np.random.default_rng(5)
    layer = eqx.tree_at(lambda l: (l.lam, l.r), layer,
                        (jnp.asarray(rng.standard_normal(4), jnp.float32),
                         jnp.asarray(rng.standard_normal(4), jnp.float32)))
    x = rng.standard_normal(5).astype(np.float32)
    y = layer(jnp.asarray(x))
    u = u_ref(np.asarray(layer.theta))
    expected = np.asarray(layer.r, np.float64) * relu(u @ x + np.asarray(layer.lam, np.float64))
    assert y.dtype == jnp.float32 and y.shape == (4,)
    np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-5, atol=1e-6)
    tanh = GmPLinear(5, 4, jnp.tanh, key=jax.random.key(0))
    np.testing.assert_allclose(np.asarray(tanh(jnp.asarray(x))),
                               np.tanh(u_ref(np.asarray(tanh.theta)) @ x), rtol=1e-5, atol=1e-6)


def test_layer_float64_and_batched_pure_function():
    with jax.enable_x64(True):
        layer = GmPLinear(6, 3, key=jax.random.key(1), dtype=jnp.float64)
        xs = jax.random.normal(jax.random.key(2), (5, 6), jnp.float64)
        y = apply(layer, xs)
        assert y.dtype == jnp.float64
        direct = gmp_linear(xs, layer.theta, layer.lam, layer.r)
        ref = relu(np.asarray(xs) @ u_ref(np.asarray(layer.theta)).T)
    np.testing.assert_allclose(np.asarray(y), ref, atol=1e-14)
    np.testing.assert_allclose(np.asarray(direct), ref, atol=1e-14)


def test_directions_built_once_under_vmap():
    layer = GmPLinear(6, 4, key=jax.random.key(0))
    xs = jnp.ones((7, 6))
    jaxpr = jax.make_jaxpr(jax.vmap(layer))(xs)
    calls = [e for e in jaxpr.jaxpr.eqns if e.params.get("name") == "direction_parts_t"]
    assert len(calls) == 1, "the directions should be built by one call"
    (eqn,) = calls
    assert [v.aval.shape for v in eqn.invars] == [(5, 4)]
    # u_{1..5} and u_6 of the 4 units, unbatched
    assert [v.aval.shape for v in eqn.outvars] == [(5, 4), (4,)], "u(θ) was built per example"


def test_angles_are_stored_one_column_per_unit_and_nothing_is_transposed():
    layer = GmPLinear(6, 4, key=jax.random.key(0))
    assert layer.theta_t.shape == (5, 4) and layer.theta.shape == (4, 5)
    np.testing.assert_array_equal(np.asarray(layer.theta), np.asarray(layer.theta_t).T)
    # row i of direction() is u(θ_i) of the i-th column of theta_t
    np.testing.assert_allclose(np.asarray(layer.direction()),
                               u_ref(np.asarray(layer.theta_t).T), atol=1e-6)
    xs = jax.random.normal(jax.random.key(1), (3, 6))
    grads = eqx.filter_grad(lambda l: jnp.sum(jax.vmap(l)(xs) ** 2))(layer)
    assert grads.theta_t.shape == (5, 4)
    with pytest.raises(AttributeError, match="replace `theta_t`"):
        eqx.tree_at(lambda l: l.theta, layer, layer.theta + 1)
    # a stacked ensemble keeps its leading axis
    ensemble = eqx.filter_vmap(lambda k: GmPLinear(6, 4, key=k))(
        jax.random.split(jax.random.key(2), 3))
    assert ensemble.theta.shape == (3, 4, 5)
    np.testing.assert_array_equal(np.asarray(ensemble.theta[1]),
                                  np.asarray(ensemble.theta_t[1]).T)
    # forward and backward work in the stored layout: the compiled program has no
    # transposition of an array of the angles' size (neither a transpose nor a copy into
    # the column-major layout {0,1})
    params, static = eqx.partition(layer, eqx.is_inexact_array)

    def loss(p):
        return jnp.sum(jax.vmap(eqx.combine(p, static))(xs) ** 2)

    hlo = jax.jit(jax.value_and_grad(loss)).lower(params).compile().as_text()
    moves = [line.strip() for line in hlo.splitlines()
             if re.search(r"f32\[(5,4|4,5)\](\S* transpose|\{0,1\} copy)\(", line)]
    assert moves == [], moves


def test_gradients_finite_at_vanishing_sines():
    layer = GmPLinear(4, 3, key=jax.random.key(0))
    theta = jnp.asarray([[0.0, 0.0, 0.0], [np.pi, 0.0, np.pi], [0.5, np.pi, 0.0]], jnp.float32)
    layer = eqx.tree_at(lambda l: (l.theta_t, l.lam), layer, (theta.T, jnp.full(3, 0.5)))
    x = jnp.asarray([0.3, -1.0, 2.0, 0.5])
    grads = grad_sum_sq(layer, x)
    for leaf in jax.tree.leaves(grads):
        assert np.all(np.isfinite(np.asarray(leaf)))
    # dL/dθ = Σ_i 2 z_i r_i 1[pre_i > 0] x·∂u_i/∂θ: compare with the analytic Jacobian
    pre = u_ref(np.asarray(theta)) @ np.asarray(x, np.float64) + 0.5
    z = relu(pre)
    for i in range(3):
        expected = 2 * z[i] * (pre[i] > 0) * (jacobian_ref(np.asarray(theta[i])).T @ np.asarray(x))
        np.testing.assert_allclose(np.asarray(grads.theta_t[:, i]), expected, atol=1e-5)


def test_one_input_feature():
    layer = GmPLinear(1, 6, key=jax.random.key(3))
    assert layer.theta.shape == (6, 0) and set(np.asarray(layer.sign).tolist()) <= {-1.0, 1.0}
    layer = eqx.tree_at(lambda l: l.lam, layer, jnp.linspace(-1, 1, 6))
    x = jnp.asarray([0.7])
    expected = relu(np.asarray(layer.sign) * 0.7 + np.linspace(-1, 1, 6))
    np.testing.assert_allclose(np.asarray(layer(x)), expected, rtol=1e-6, atol=1e-7)
    g = eqx.filter_grad(lambda l: jnp.sum(l(x)))(layer)
    assert g.sign is None                                        # not a parameter
    expected_lam = 0.7 * np.asarray(layer.sign) + np.linspace(-1, 1, 6) > 0
    np.testing.assert_array_equal(np.asarray(g.lam), expected_lam.astype(np.float32))
    # an optimiser with weight decay leaves the fixed directions alone
    params = eqx.filter(layer, eqx.is_inexact_array)
    opt = optax.adamw(1e-1, weight_decay=0.5)
    state = opt.init(params)
    with jax.numpy_dtype_promotion("standard"):  # optax's bias correction needs it
        for _ in range(3):
            updates, state = opt.update(g, state, params)
            layer = eqx.apply_updates(layer, updates)
            params = eqx.filter(layer, eqx.is_inexact_array)
    np.testing.assert_array_equal(np.abs(np.asarray(layer.sign)), 1)
    np.testing.assert_allclose(np.abs(np.asarray(layer.direction())), 1)
    signs = np.asarray(GmPLinear(1, 4000, key=jax.random.key(4)).sign)
    assert abs(np.mean(signs)) < 0.06                            # ±1 with probability ½
    member = perturb(layer, jax.random.key(5))                   # a generic class member
    np.testing.assert_array_equal(np.asarray(member.sign), np.asarray(layer.sign))
    assert not np.allclose(np.asarray(member.lam), np.asarray(layer.lam))


def test_initialisation_uniform_on_the_sphere():
    layer = GmPLinear(1024, 64, key=jax.random.key(0))
    np.testing.assert_array_equal(np.asarray(layer.lam), 0)
    np.testing.assert_array_equal(np.asarray(layer.r), 1)
    u = np.asarray(layer.direction(), np.float64)
    assert np.mean(u == 0) == 0                                  # no underflowed weights
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1, atol=1e-5)
    np.testing.assert_allclose(np.mean(u**2), 1 / 1024, rtol=0.05)
    # n = 3: every coordinate of a uniform point on S² is uniform on [-1, 1]
    u3 = np.asarray(GmPLinear(3, 4000, key=jax.random.key(1)).direction(), np.float64)
    for k in range(3):
        ecdf = np.sort(u3[:, k])
        ks = np.max(np.abs((ecdf + 1) / 2 - (np.arange(1, 4001) - 0.5) / 4000))
        assert ks < 1.95 / np.sqrt(4000)                         # α ≈ 0.001


def test_conversion_round_trip_and_function():
    rng = np.random.default_rng(6)
    w = rng.standard_normal((5, 4))
    b = rng.standard_normal(5)
    with jax.enable_x64(True):
        layer = GmPLinear.from_weights(jnp.asarray(w), jnp.asarray(b))
        w2, b2 = layer.to_weights()
        x = rng.standard_normal((3, 4))
        y = apply(layer, jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(w2), w, atol=1e-14)
    np.testing.assert_allclose(np.asarray(b2), b, atol=1e-14)
    np.testing.assert_allclose(np.asarray(y), relu(x @ w.T + b), atol=1e-13)
    np.testing.assert_allclose(np.asarray(layer.r), np.linalg.norm(w, axis=1), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(layer.lam), b / np.linalg.norm(w, axis=1), rtol=1e-13)


@pytest.mark.parametrize("make", [lambda k: eqx.nn.Linear(3, 4, key=k),
                                  lambda k: tnn.Linear(3, 4, key=k)])
def test_from_linear_preserves_relu_function(make):
    lin = make(jax.random.key(7))
    gmp = GmPLinear.from_linear(lin)
    x = jax.random.normal(jax.random.key(8), (10, 3))
    w, b = np.asarray(lin.weight, np.float64), np.asarray(lin.bias, np.float64)
    np.testing.assert_allclose(np.asarray(apply(gmp, x)), relu(np.asarray(x) @ w.T + b),
                               rtol=1e-5, atol=1e-6)


def test_conversion_edge_cases():
    layer = GmPLinear.from_weights(jnp.asarray([[0.0, 0.0], [1.0, 2.0]]), jnp.zeros(2))
    np.testing.assert_allclose(np.asarray(layer.r), [0, np.sqrt(5)], rtol=1e-6)
    with pytest.raises(ValueError, match=r"rows \[0\] have a zero weight vector"):
        GmPLinear.from_weights(jnp.asarray([[0.0, 0.0], [1.0, 2.0]]), jnp.ones(2))
    one = GmPLinear.from_weights(jnp.asarray([[-2.0], [3.0]]), jnp.asarray([1.0, 1.0]))
    np.testing.assert_allclose(np.asarray(one.sign), [-1, 1])
    np.testing.assert_allclose(np.asarray(one(jnp.asarray([0.25]))), [0.5, 1.75], rtol=1e-6)
    with pytest.raises(TypeError, match="2-D `weight`"):
        GmPLinear.from_linear(tnn.Tanh())


def test_errors():
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="`in_features` must be an integer >= 1"):
        GmPLinear(0, 3, key=key)
    with pytest.raises((TypeError, ValueError)):   # annotated int: a type-check error in tests
        GmPLinear(3, 2.5, key=key)
    with pytest.raises(TypeError):
        GmPLinear(3, 3, "relu", key=key)
    with pytest.raises(TypeError, match="`dtype` must be a real floating dtype"):
        GmPLinear(3, 3, key=key, dtype=jnp.int32)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        GmPLinear(3, 2, key=key)(jnp.ones(4))
    with pytest.raises(ValueError, match="`kernel_size`"):
        GmPConv(2, 2, 0, key=key)
    with pytest.raises(ValueError, match="`padding`"):
        GmPConv(2, 2, 3, padding="FULL", key=key)
    with pytest.raises(ValueError, match=r"\(2, H, W\)"):
        GmPConv(2, 2, 3, key=key)(jnp.ones((3, 5, 5)))
    with pytest.raises(ValueError,
                       match=r"InputMeanNorm: `momentum` must be a finite number in \[0, 1\)"):
        InputMeanNorm(3, momentum=1.0)


def test_taxonomy_depends_on_the_activation():
    relu_layer = GmPLinear(4, 4, key=jax.random.key(0))
    tanh_layer = GmPLinear(4, 4, jnp.tanh, key=jax.random.key(0))
    # λ absorbs input translations: Aff(n) / E(n) on the right
    assert relu_layer.taxonomy.cell("closure", "R").name == "Aff(n)"
    assert tanh_layer.taxonomy.cell("closure", "R").name == "E(n)"
    forced = GmPLinear(4, 4, jnp.tanh, key=jax.random.key(0), positively_homogeneous=True)
    assert forced.taxonomy.cell("closure", "R").name == "Aff(n)"
    # zero padding does not move with a translation of the channels: GL(n) / O(n)
    assert GmPConv(2, 2, 3, key=jax.random.key(0)).taxonomy.cell(
        "closure", "R").name == "Aff(n)"
    assert GmPConv(2, 2, 3, padding="SAME", key=jax.random.key(0)).taxonomy.cell(
        "closure", "R").name == "GL(n)"
    assert relu_layer.taxonomy.cell("probabilistic", "L").name == "S_n"
    assert tanh_layer.taxonomy.cell("probabilistic", "E").name == "B_n"


def test_a_tagged_activation_declares_what_the_layer_needs_to_know():
    """A taxdl activation's algebraic E cell says whether it is odd (−I in it) and
    positively homogeneous (ℝ×₊ in it): the layer's taxonomy follows, and with taxdl's
    own Tanh it passes its check, maximality included (±I × Sₙ holds for an odd σ)."""
    tanh = GmPLinear(4, 4, tnn.Tanh(), key=jax.random.key(0))
    assert tanh.odd and not tanh.positively_homogeneous
    assert tanh.taxonomy == GmPLinear(4, 4, jnp.tanh, key=jax.random.key(0)).taxonomy
    relu = GmPLinear(4, 4, tnn.ReLU(), key=jax.random.key(0))
    assert relu.positively_homogeneous and not relu.odd
    assert relu.taxonomy == GmPLinear(4, 4, key=jax.random.key(0)).taxonomy
    sigmoid = GmPLinear(4, 4, tnn.Sigmoid(), key=jax.random.key(0))
    assert not sigmoid.odd and not sigmoid.positively_homogeneous
    # an explicit flag still wins, and so do the convolutions
    assert not GmPLinear(4, 4, tnn.Tanh(), key=jax.random.key(0), odd=False).odd
    assert GmPConv(2, 2, 3, activation=tnn.Tanh(), key=jax.random.key(0)).odd
    # an MLP in GmP form gets the same layers
    mlp = tnn.MLP(4, [4], 2, activation="Tanh", parameterization="gmp", key=jax.random.key(0))
    assert mlp.layers.layers[0].odd
    report = check(tanh, examples=8, samples=1024)
    assert report.passed
    assert report.cell("probabilistic", "E").group == "B_n"


def test_translations_are_absorbed_by_lambda_unless_the_convolution_pads():
    fast = dict(examples=5, batch=8)
    assert_closure(GmPLinear(4, 3, jnp.tanh, key=jax.random.key(0)), Euclidean(), "R", **fast)
    assert_closure(GmPConv(2, 2, 3, key=jax.random.key(0)), Affine(), "R", **fast)
    # negative control: zero padding breaks the translation transport
    with pytest.raises(SymmetryViolation):
        assert_closure(GmPConv(2, 2, 3, padding="SAME", key=jax.random.key(0)), Affine(),
                       "R", **fast)


@eqx.filter_jit
def _closure_sides(layer, flavour, group, element, xs):
    moved = transport(layer, flavour, element, group)
    m = element.matrix
    lhs = jax.vmap(moved)(xs)
    if flavour is Flavour.LEFT:
        return lhs, jax.vmap(layer)(xs) @ m.T
    fgx = jax.vmap(layer)(xs @ m.T)
    if flavour is Flavour.RIGHT:
        return lhs, fgx
    return lhs, fgx @ jnp.linalg.inv(m).T


def test_transport_moves_the_function():
    layer = GmPLinear(5, 5, key=jax.random.key(0))
    layer = eqx.tree_at(lambda l: (l.lam, l.r), layer,
                        (jnp.linspace(-0.5, 0.5, 5), jnp.linspace(-1.0, 2.0, 5)))
    xs = jax.random.normal(jax.random.key(2), (4, 5))
    rng = np.random.default_rng(1)
    signed_perm = np.eye(5)[rng.permutation(5)] * rng.choice([-1.0, 1.0], 5)[:, None]
    invertible = rng.standard_normal((5, 5)) + 2 * np.eye(5)
    for flavour, group, m in [("L", B(), signed_perm), ("R", GL(), invertible)]:
        e = linear_element(jnp.asarray(m, jnp.float32))   # the checker covers every cell
        lhs, rhs = _closure_sides(layer, Flavour(flavour), group.on(5), e, xs)
        np.testing.assert_allclose(np.asarray(lhs), np.asarray(rhs), rtol=1e-4, atol=1e-4)


def test_rotation_transport_keeps_equal_units_equal():
    # at initialisation (λ = 0, r = 1) every unit outputs σ(0) at x ≈ 0; a rotation moves
    # only the directions, so r and λ must stay exactly as they were: scales off by
    # rounding made LayerNorm of that constant vector O(1) instead of 0
    layer = GmPLinear(6, 12, activation=jax.nn.softplus, key=jax.random.key(0))
    q = np.linalg.qr(np.random.default_rng(3).standard_normal((6, 6)))[0]
    moved = transport(layer, Flavour.RIGHT, linear_element(jnp.asarray(q, jnp.float32)),
                      Euclidean(6))
    np.testing.assert_array_equal(np.asarray(moved.r), np.asarray(layer.r))
    np.testing.assert_array_equal(np.asarray(moved.lam), np.asarray(layer.lam))
    model = tnn.Sequential([layer, tnn.LayerNorm(12)])
    moved_model = tnn.Sequential([moved, tnn.LayerNorm(12)])
    x = jnp.zeros(6).at[0].set(1e-30)
    np.testing.assert_array_equal(np.asarray(moved_model(x)), np.asarray(model(q @ x)))
    # a non-orthogonal M still rescales r by ‖Mᵀu‖
    a = np.diag([2.0, 1, 1, 1, 1, 1]).astype(np.float32)
    scaled = transport(layer, Flavour.RIGHT, linear_element(jnp.asarray(a)), Affine(6))
    u = np.asarray(gmp_direction(layer.theta), np.float64)
    np.testing.assert_allclose(np.asarray(scaled.r), np.linalg.norm(u @ a, axis=-1),
                               rtol=1e-6)


# ------------------------------------------------------------------ GmPConv
def conv_ref(x, filters, lam, r, stride=1):
    c, h, w = x.shape
    o, _, kh, kw = filters.shape
    hh, ww = (h - kh) // stride + 1, (w - kw) // stride + 1
    y = np.zeros((o, hh, ww))
    for i in range(hh):
        for j in range(ww):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw]
            y[:, i, j] = np.tensordot(filters, patch, axes=3)
    return r[:, None, None] * relu(y + lam[:, None, None])


def test_conv_matches_patchwise_gmp():
    with jax.enable_x64(True):
        conv = GmPConv(3, 4, (2, 3), stride=2, key=jax.random.key(0), dtype=jnp.float64)
        conv = eqx.tree_at(lambda c: (c.lam, c.r), conv,
                           (jnp.linspace(-0.3, 0.3, 4), jnp.linspace(0.5, 2.0, 4)))
        x = np.random.default_rng(8).standard_normal((3, 7, 8))
        y = np.asarray(conv(jnp.asarray(x)))
        u = u_ref(np.asarray(conv.theta)).reshape(4, 3, 2, 3)
    np.testing.assert_allclose(np.linalg.norm(u.reshape(4, -1), axis=1), 1, atol=1e-14)
    np.testing.assert_allclose(y, conv_ref(x, u, np.linspace(-0.3, 0.3, 4),
                                           np.linspace(0.5, 2.0, 4), stride=2), atol=1e-13)


def test_conv_applies_an_isotropic_activation_across_channels():
    """GmPConv's σ acts on each pixel's channel vector: with isotropic tanh the output at
    every pixel is r ⊙ tanh(‖z‖) z/‖z‖ for z the pixel's pre-activations over the output
    channels (NumPy float64); it took the norm along the image width."""
    with jax.enable_x64(True):
        conv = GmPConv(3, 4, (2, 3), stride=2, activation=tnn.IsotropicTanh(),
                       key=jax.random.key(0), dtype=jnp.float64)
        lam, r = np.linspace(-0.3, 0.3, 4), np.linspace(0.5, 2.0, 4)
        conv = eqx.tree_at(lambda c: (c.lam, c.r), conv, (jnp.asarray(lam), jnp.asarray(r)))
        x = np.random.default_rng(8).standard_normal((3, 7, 8))
        y = np.asarray(conv(jnp.asarray(x)))
        u = u_ref(np.asarray(conv.theta)).reshape(4, 3, 2, 3)
    z = np.zeros((4, 3, 3))  # the pre-activations u ⋆ x + λ at the 3 × 3 output pixels
    for i in range(3):
        for j in range(3):
            patch = x[:, 2 * i:2 * i + 2, 2 * j:2 * j + 3]
            z[:, i, j] = np.tensordot(u, patch, axes=3) + lam
    norm = np.linalg.norm(z, axis=0, keepdims=True)
    np.testing.assert_allclose(y, r[:, None, None] * np.tanh(norm) * z / norm, atol=1e-13)


def test_conv_same_padding_shape_and_gradients():
    conv = GmPConv(2, 3, 3, padding="SAME", key=jax.random.key(1))
    x = jnp.ones((2, 6, 6))
    g = grad_sum_sq(conv, x)
    y = eqx.filter_jit(lambda c, x: c(x))(conv, x)
    assert y.shape == (3, 6, 6) and y.dtype == jnp.float32
    assert all(np.all(np.isfinite(np.asarray(leaf))) for leaf in jax.tree.leaves(g))


# ------------------------------------------------------------------ Input Mean Normalisation
def test_input_mean_norm_of_integer_inputs_is_not_truncated():
    from taxdl.nn.functional import input_mean_norm
    out = input_mean_norm(jnp.array([1, 2, 3, 4]), jnp.array([0.5, 2.5, -1.0, 3.75]))
    assert jnp.issubdtype(out.dtype, jnp.floating)
    np.testing.assert_allclose(np.asarray(out), [0.5, -0.5, 4.0, 0.25])
    with pytest.raises(TypeError):   # complex (the runtime type hooks may answer first)
        input_mean_norm(jnp.array([1 + 1j]), jnp.array([0.0]))


def test_input_mean_norm_training_and_inference():
    imn, state = eqx.nn.make_with_state(InputMeanNorm)(3, momentum=0.5)
    call = jax.vmap(imn, axis_name="batch", in_axes=(0, None), out_axes=(0, None))
    rng = np.random.default_rng(9)
    batches = [rng.standard_normal((5, 3)) + 2.0 for _ in range(3)]
    hidden = np.zeros(3)
    for t, xb in enumerate(batches, 1):
        y, state = call(jnp.asarray(xb, jnp.float32), state)
        np.testing.assert_allclose(np.asarray(y), xb - xb.mean(0), atol=1e-5)
        hidden = 0.5 * hidden + 0.5 * xb.mean(0)
    running = hidden / (1 - 0.5**3)
    np.testing.assert_allclose(np.asarray(imn.running_mean(state)), running, rtol=1e-5)
    x = jnp.asarray([1.0, 2.0, 3.0])
    y, same = imn(x, state, inference=True)
    np.testing.assert_allclose(np.asarray(y), np.asarray(x) - running, rtol=1e-5)
    with pytest.raises(NameError, match="vmap axis 'batch'"):
        imn(x, state)
    _, fresh = eqx.nn.make_with_state(InputMeanNorm)(3)
    np.testing.assert_array_equal(np.asarray(imn(x, fresh, inference=True)[0]), x)


@pytest.mark.parametrize("dtype, rows", [
    ("float16", 600 + np.random.default_rng(4).standard_normal((256, 4))),  # Σ > 65504
    ("float32", np.array([[3e38, 1.0], [3e38, 2.0]])),                    # Σ > 3.4e38
])
def test_input_mean_norm_batch_mean_does_not_overflow(dtype, rows):
    """The batch mean of values whose sum overflows the input dtype is finite, so the
    centred batch and the running mean are those of float64 NumPy."""
    x = jnp.asarray(rows, dtype)
    imn, state = eqx.nn.make_with_state(InputMeanNorm)(x.shape[1], dtype=dtype)
    call = jax.vmap(imn, axis_name="batch", in_axes=(0, None), out_axes=(0, None))
    y, state = call(x, state)
    x64 = np.asarray(x, np.float64)
    ref = x64 - x64.mean(0)
    ulp = float(jnp.finfo(dtype).eps)
    assert y.dtype == x.dtype
    # the mean's rounding in float32 (per column, relative to its largest entry) and the
    # final rounding to `dtype`
    tol = 8 * float(jnp.finfo(jnp.float32).eps) * np.abs(x64).max(0) + ulp * np.abs(ref)
    assert np.all(np.abs(np.asarray(y, np.float64) - ref) <= tol)
    np.testing.assert_allclose(np.asarray(imn.running_mean(state), np.float64),
                               x64.mean(0), rtol=4 * ulp)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_input_mean_norm_half_precision_running_mean_does_not_stall(dtype):
    """300 steps of batches with mean ≈ 1: the running mean is kept in float32, so it is
    the zero-debiased EMA of the batch means in float64 (closed form
    $Σ_s (1-ρ)ρ^{t-s} μ_s/(1 - ρ^t)$). Kept in the input dtype it was 0.88 (bfloat16) or
    1.02 (float16): EMA steps (1 − ρ)(μ − h) below half an ulp of h are lost. Outputs
    keep the input dtype."""
    steps, rho = 300, 0.99
    xs = jnp.asarray(1.0 + 0.1 * np.random.default_rng(5).standard_normal((steps, 16, 4)),
                     dtype)
    imn, state = eqx.nn.make_with_state(InputMeanNorm)(4, dtype=dtype)
    call = jax.vmap(imn, axis_name="batch", in_axes=(0, None), out_axes=(0, None))
    state, ys = jax.lax.scan(lambda st, x: call(x, st)[::-1], state, xs)
    assert ys.dtype == xs.dtype
    means = np.asarray(xs, np.float64).mean(1)
    weights = (1 - rho) * rho ** np.arange(steps - 1, -1, -1)
    ema = weights @ means / (1 - rho ** steps)
    np.testing.assert_allclose(np.asarray(imn.running_mean(state), np.float64), ema,
                               rtol=1e-5)
    y, _ = imn(jnp.asarray([1.0, 2.0, 3.0, 4.0], dtype), state, inference=True)
    assert y.dtype == jnp.dtype(dtype)
    np.testing.assert_allclose(np.asarray(y, np.float64), np.arange(1.0, 5.0) - ema,
                               rtol=float(jnp.finfo(dtype).eps), atol=1e-4)


def test_integer_inputs_are_promoted_not_truncated():
    conv = GmPConv(2, 3, 3, key=jax.random.key(3))
    x = jnp.arange(72).reshape(2, 6, 6) % 5 - 2
    np.testing.assert_allclose(np.asarray(conv(x)), np.asarray(conv(x.astype(jnp.float32))),
                               rtol=1e-6, atol=1e-6)
    theta, radius = gmp_angles(jnp.array([3, 4]))
    np.testing.assert_allclose(np.asarray(theta), [np.arctan2(4, 3)], rtol=1e-6)
    assert float(radius) == 5.0
    u = np.asarray(gmp_direction(jnp.array([1, 2])), np.float64)
    expected = [np.cos(1), np.sin(1) * np.cos(2), np.sin(1) * np.sin(2)]
    np.testing.assert_allclose(u, expected, rtol=1e-6, atol=1e-7)


def test_chart_errors_and_negative_zero():
    # (under the test suite's runtime type checking the annotation rejects these first)
    for f, name in ((gmp_angles, "w"), (gmp_direction, "theta")):
        with pytest.raises((ValueError, TypeError), match=f"`{name}`|'{name}'"):
            f(jnp.float32(1.0))
        with pytest.raises(TypeError, match=f"`{name}`|'{name}'"):
            f(jnp.array([1 + 1j, 2.0]))
    theta, radius = gmp_angles(jnp.array([-0.0, 0.0, -0.0]))
    np.testing.assert_array_equal(np.asarray(theta), 0)      # the zero vector maps to θ = 0
    assert float(radius) == 0
    with pytest.raises(ValueError, match="kernel_size"):
        GmPConv(2, 2, 3.0, key=jax.random.key(0))
    with pytest.raises(ValueError, match="stride"):
        GmPConv(2, 2, 3, stride=2.0, key=jax.random.key(0))
    with pytest.raises(ValueError, match="from_weights.*one row and one column"):
        GmPLinear.from_weights(jnp.zeros((2, 0)))


def test_sincos_stays_on_the_circle_at_any_angle():
    rng = np.random.default_rng(0)
    small = rng.uniform(-6434, 6434, 20000).astype(np.float32)
    s, c = sincos(jnp.asarray(small))
    np.testing.assert_allclose(np.asarray(s, np.float64), np.sin(small.astype(np.float64)),
                               atol=3e-7)
    np.testing.assert_allclose(np.asarray(c, np.float64), np.cos(small.astype(np.float64)),
                               atol=3e-7)
    big = np.concatenate([rng.uniform(lo, 3 * lo, 2000) * rng.choice([-1, 1], 2000)
                          for lo in (1e4, 1e6, 1e9, 1e20, 1e37)]).astype(np.float32)
    s, c = (np.asarray(t, np.float64) for t in sincos(jnp.asarray(big)))
    np.testing.assert_allclose(s * s + c * c, 1, atol=5e-7)
    u = gmp_direction(jnp.array([[1e9, 3e15], [1e12, -2e30]], jnp.float32))
    np.testing.assert_allclose(np.linalg.norm(np.asarray(u, np.float64), axis=-1), 1, atol=1e-6)


# ------------------------------------------------------------------ review fixes
def test_activation_must_commute_with_permutations_of_units():
    """GmP's unit-permutation symmetries need σ(Pz) = Pσ(z): CoLU mixes units within a
    cone (shown on its float64 formula), so GmPLinear, GmPConv and the GmP MLP refuse it
    (and RCoLU) with a ValueError naming `activation`; elementwise and isotropic
    activations build, and the isotropic layers pass their checks."""
    rng = np.random.default_rng(11)
    z = jnp.asarray(rng.standard_normal(8), jnp.float32)
    swap = np.array([1, 0, 2, 3, 4, 5, 6, 7])
    colu = tnn.CoLU()
    assert float(jnp.abs(colu(z[swap]) - colu(z)[swap]).max()) > 0.1   # the premise
    key = jax.random.key(0)
    pattern = r"GmPLinear: `activation` must commute with permutations of the units"
    for act in (tnn.CoLU(), tnn.RCoLU()):
        with pytest.raises(ValueError, match=pattern) as info:
            GmPLinear(8, 8, act, key=key)
        assert type(act).__name__ in str(info.value) and "S_8" in str(info.value)
        with pytest.raises(ValueError, match=r"GmPConv: `activation` must commute"):
            GmPConv(2, 8, 3, activation=act, key=key)
    with pytest.raises(ValueError, match=r"MLP\(parameterization='gmp'\): `activation` must "
                                         r"commute with permutations.*got CoLU"):
        tnn.MLP(8, [8], 3, activation="CoLU", parameterization="gmp", key=key)
    tnn.MLP(8, [8], 3, activation="CoLU", key=key)       # standard form: fine
    for act in (tnn.ReLU(), tnn.Tanh(), jax.nn.relu, lambda s: s * jax.nn.sigmoid(s),
                tnn.IsotropicTanh(), tnn.Squash()):
        GmPLinear(8, 8, act, key=key)
    for name in ("IsotropicTanh", "Squash"):
        mlp = tnn.MLP(4, [4], 2, activation=name, parameterization="gmp", key=key)
        # swapping two hidden units (θ, λ, r and the output layer's columns) keeps the
        # function, as the declared closure L promises
        gmp, out = mlp.layers.layers[0], mlp.layers.layers[1]
        p = np.array([1, 0, 2, 3])
        moved = eqx.tree_at(lambda m: (m.layers.layers[0].theta_t, m.layers.layers[0].lam,
                                       m.layers.layers[0].r, m.layers.layers[1].weight),
                            mlp, (gmp.theta_t[:, p], gmp.lam[p], gmp.r[p] * 2,
                                  out.weight[:, p] / 2))
        x = jnp.asarray(rng.standard_normal(4), jnp.float32)
        np.testing.assert_allclose(np.asarray(moved(x)), np.asarray(mlp(x)), atol=1e-5)
        report = check(GmPLinear(4, 4, getattr(tnn, name)(), key=key), examples=6,
                       samples=512)
        assert report.passed
        assert report.cell("closure", "L").group == "S_n⋉(ℝ×)^n"


def _angles_jacobian_ref(w):
    """∂θ/∂w of θ_i = atan2(‖w_{i+1:}‖, w_i), θ_{n−1} = atan2(w_n, w_{n−1}) in float64,
    norms by np.hypot and atan2'(y, x) as ((x/h)/h, −(y/h)/h) with h = hypot(x, y), so
    that nothing squares a tiny entry (0 where a norm or atan2 has no derivative)."""
    w = np.asarray(w, np.float64)
    n = w.size
    tails = [float(ft.reduce(np.hypot, np.abs(w[i:]), 0.0)) for i in range(n)]
    jac = np.zeros((n - 1, n))
    theta = np.zeros(n - 1)
    for i in range(n - 1):
        last = i == n - 2
        y, x = (w[n - 1] if last else tails[i + 1]), w[i]
        theta[i] = np.arctan2(y, x)
        h = np.hypot(x, y)
        if h == 0:
            continue
        d_y, d_x = (x / h) / h, -(y / h) / h
        jac[i, i] = d_x
        if last:
            jac[i, n - 1] = d_y
        elif y > 0:
            jac[i, i + 1:] = d_y * (w[i + 1:] / y)
    return theta, jac


@pytest.mark.parametrize("point, dtype", [
    ([1.0, 1e-25, 0.0], jnp.float32),
    ([1.0, 1e-25, 1e-25], jnp.float32),
    ([-2.0, 3e-22, -1e-25, 4e-24, 0.0], jnp.float32),
    ([1.0, 1.0, 0.0], jnp.float32),              # derivative in a zero entry: 1, not 0
    ([0.5, -1.5, 2.0, 0.25], jnp.float32),
    ([1.0, 1e-160, 0.0], jnp.float64),
    ([1.0, 1e-160, 1e-160], jnp.float64),
    ([3.0, -2e-170, 1e-160, -5e-165], jnp.float64),
])
def test_angle_derivatives_with_tiny_trailing_entries(point, dtype):
    """With trailing entries below √(smallest normal) relative to the largest, the squared
    tail underflows: the Jacobian of gmp_angles must still be finite and correct (e.g.
    ∂θ₁/∂w₂ = 1 at w = (1, 1e-25, 0)), in reverse and forward mode."""
    theta_ref, jac_ref = _angles_jacobian_ref(point)
    with jax.enable_x64(dtype == jnp.float64):
        w = jnp.asarray(point, dtype)
        theta, _ = gmp_angles(w)
        jacs = [np.asarray(mode(lambda v: gmp_angles(v)[0])(w), np.float64)
                for mode in (jax.jacrev, jax.jacfwd)]
    rtol = 1e-5 if dtype == jnp.float32 else 1e-12
    np.testing.assert_allclose(np.asarray(theta, np.float64), theta_ref, rtol=rtol, atol=0)
    for jac in jacs:
        assert np.all(np.isfinite(jac)), jac
        scale = np.abs(jac_ref).max(axis=1, keepdims=True)   # per angle, like its size
        scale = np.where(scale > 0, scale, 1)
        np.testing.assert_allclose(jac / scale, jac_ref / scale, rtol=0, atol=rtol)


def test_gmp_linear_rejects_wrong_shapes(library_checks_only):
    theta = jnp.zeros((3, 4))     # 3 units, 5 inputs
    lam, r, x = jnp.zeros(3), jnp.ones(3), jnp.ones(5)
    cases = [
        (dict(x=jnp.ones(4)), r"`x` must have shape \(\.\.\., 5\).*got shape \(4,\)"),
        (dict(x=jnp.ones((2, 6))), r"`x` must have shape \(\.\.\., 5\).*\(2, 6\)"),
        (dict(lam=jnp.zeros(4)), r"`lam` must have shape \(3,\).*got shape \(4,\)"),
        (dict(r=jnp.ones((3, 1))), r"`r` must have shape \(3,\).*got shape \(3, 1\)"),
        (dict(theta=jnp.zeros(4)), r"`theta` must have shape \(out, in − 1\).*\(4,\)"),
    ]
    for change, match in cases:
        args = dict(x=x, theta=theta, lam=lam, r=r) | change
        with pytest.raises(ValueError, match="gmp_linear: " + match):
            gmp_linear(**args)
        with pytest.raises(ValueError, match=match):    # static: also under jit
            jax.jit(lambda a: gmp_linear(**a))(args)
    # the right shapes: eq 13 against NumPy
    rng = np.random.default_rng(12)
    theta = rng.uniform(0, np.pi, (3, 4)).astype(np.float32)
    xs = rng.standard_normal((2, 5)).astype(np.float32)
    got = gmp_linear(jnp.asarray(xs), jnp.asarray(theta), lam, r)
    np.testing.assert_allclose(np.asarray(got), relu(xs @ u_ref(theta).T), atol=1e-6)


def test_layernorm_after_gmp_needs_a_positive_eps_and_the_docs_say_so():
    """A dying GmP unit leaves a tiny nonzero hidden vector, which LayerNorm with ε = 0
    normalises to an O(1) pattern (float64 reference); the docs and the MLP docstring
    warn about it and show a factory with ε > 0, which the MLP accepts."""
    docs = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "gmp.md").read_text()
    assert "ε > 0" in docs and "norm=lambda n: tnn.LayerNorm(n, eps=1e-5)" in docs
    assert "LayerNorm(n, eps=1e-5)" in tnn.MLP.__doc__
    with jax.enable_x64(True):
        for eps, jump in ((0.0, True), (1e-5, False)):
            mlp = tnn.MLP(3, [2], 1, parameterization="gmp", dtype=jnp.float64,
                          norm=lambda n, e=eps: tnn.LayerNorm(n, eps=e), key=jax.random.key(0))
            assert mlp.layers.layers[1].eps == eps
            u = np.asarray(mlp.layers.layers[0].direction())
            c = u[0] @ u[1]
            x = (u[0] - c * u[1]) - (u[1] - c * u[0])   # u₀ᵀx = 1 − c² = −u₁ᵀx
            h = np.maximum(u @ x, 0)
            assert h[0] > 0 and h[1] == 0
            out = mlp.layers.layers[2]
            w, b = np.asarray(out.weight), np.asarray(out.bias)
            ys = []
            for r0 in (0.0, 1e-200):     # a dead unit vs a dying one
                m = eqx.tree_at(lambda mm: mm.layers.layers[0].r, mlp,
                                jnp.asarray([r0, 1.0]))
                hid = np.array([r0 * h[0], 0.0])
                # γ = 1, β = 0; at ε = 0 scaled (hid² underflows), and LayerNorm(0) = β
                q = np.abs(hid).max()
                if eps > 0:
                    ln = (hid - hid.mean()) / np.sqrt(hid.var() + eps)
                else:
                    ln = np.zeros(2) if q == 0 else (hid - hid.mean()) / q / (hid / q).std()
                np.testing.assert_allclose(np.asarray(m(jnp.asarray(x))), w @ ln + b,
                                           atol=1e-12)
                ys.append(w @ ln + b)
            assert (np.abs(ys[1] - ys[0]).max() > 0.1) == jump


def _gmp_relu_grad_ref(theta, lam, r, x):
    """∂/∂θ of Σ_o r_o ReLU(u(θ_o)ᵀx + λ_o) in float64 NumPy, from eq 11 in closed form:
    ∂u_i/∂θ_j = cot θ_j · u_i for i > j and −sin θ_j Π_{k<j} sin θ_k for i = j < n, so
    θ̄_j = cot θ_j Σ_{i>j} ū_i u_i − ū_j sin θ_j Π_{k<j} sin θ_k with ū = r·1[z > 0]·x."""
    theta = np.asarray(theta, np.float64)
    u = u_ref(theta)
    active = (u @ x + lam) > 0
    ubar = (r * active)[:, None] * x[None, :]
    tail = np.cumsum((ubar * u)[:, ::-1], axis=1)[:, ::-1]      # Σ_{i≥j} ū_i u_i
    prefix = np.concatenate([np.ones((theta.shape[0], 1)),
                             np.cumprod(np.sin(theta), axis=1)[:, :-1]], axis=1)
    return (tail[:, 1:] / np.tan(theta)
            - ubar[:, :-1] * np.sin(theta) * prefix)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_directions_stay_on_the_sphere(dtype):
    """u(θ) (eq 11) of 1024-wide half-precision units is built in float32 and rounded
    once: each entry within one rounding (plus float32's error) of the float64 NumPy
    evaluation of eq 11 at the layer's own stored angles, ‖u‖ = 1 to rounding, and the
    layer's output (eq 13) and angle gradient within the dtype's ε of their float64
    references. Built in the half dtype, ‖u‖ was 1.04–1.12 in bfloat16 (u off by 15% of
    its largest entry, outputs by 10%, gradients by 19%). `gmp_direction`, `gmp_angles`
    (`from_weights`) and `GmPConv` filters likewise."""
    dt = jnp.dtype(dtype)
    half_ulp, eps = float(jnp.finfo(dt).eps) / 2, float(jnp.finfo(dt).eps)
    layer = GmPLinear(1024, 16, key=jax.random.key(0), dtype=dt)
    theta = np.asarray(layer.theta, np.float64)
    u, ref = np.asarray(layer.direction(), np.float64), u_ref(theta)
    assert layer.direction().dtype == dt
    np.testing.assert_array_less(np.abs(u - ref), half_ulp * np.abs(ref) * 1.001 + 1e-6)
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1, atol=2 * half_ulp)
    u_fn = np.asarray(gmp_direction(layer.theta), np.float64)
    np.testing.assert_array_less(np.abs(u_fn - ref), half_ulp * np.abs(ref) * 1.001 + 1e-6)

    x = jax.random.normal(jax.random.key(1), (1024,), dt)
    xn = np.asarray(x, np.float64)
    lam, r = np.asarray(layer.lam, np.float64), np.asarray(layer.r, np.float64)
    y, y_ref = np.asarray(layer(x), np.float64), r * relu(ref @ xn + lam)
    assert np.linalg.norm(y - y_ref) <= eps * np.linalg.norm(y_ref)
    g = eqx.filter_grad(lambda l: jnp.sum(l(x).astype(jnp.float32)))(layer)
    assert g.theta_t.dtype == dt
    g_ref = _gmp_relu_grad_ref(theta, lam, r, xn)
    assert np.linalg.norm(np.asarray(g.theta, np.float64) - g_ref) <= eps * np.linalg.norm(g_ref)

    # the inverse (eq 11 solved for θ): r = ‖w‖ and λ = b/‖w‖ within one rounding
    w = jax.random.normal(jax.random.key(2), (8, 1024), dt)
    wn = np.asarray(w, np.float64)
    converted = GmPLinear.from_weights(w, jnp.ones(8, dt))
    norms = np.linalg.norm(wn, axis=1)
    np.testing.assert_allclose(np.asarray(converted.r, np.float64), norms,
                               rtol=1.001 * half_ulp)
    np.testing.assert_allclose(np.asarray(converted.lam, np.float64), 1 / norms,
                               rtol=2.001 * half_ulp)
    filters = np.asarray(GmPConv(64, 2, 4, key=jax.random.key(3), dtype=dt).filters(),
                         np.float64)
    np.testing.assert_allclose(np.linalg.norm(filters.reshape(2, -1), axis=1), 1,
                               atol=2 * half_ulp)


@pytest.mark.parametrize("kwargs", [dict(kernel_size=5), dict(kernel_size=3, dilation=2),
                                    dict(kernel_size=(5, 2), stride=(1, 3))])
def test_check_of_a_conv_wider_than_four_pixels(kwargs):
    """`check` feeds GmPConv images of its signature's size: 4 × 4, too small for a
    5-wide (or dilated 3-wide) kernel, whose output was then empty and the check crashed
    (`zero-size array to reduction operation max`). The signature now leaves two output
    positions per axis (the VALID output size ⌊(H − d(k − 1) − 1)/s⌋ + 1, closed form),
    and the check runs and passes (small settings)."""
    from taxdl.taxonomy import signature

    layer = GmPConv(3, 3, key=jax.random.key(0), **kwargs)
    h, w, c = signature(layer).inputs[0]
    assert c == 3
    k, s, d = layer.kernel_size, layer.stride, layer.dilation
    out = [(size - d[a] * (k[a] - 1) - 1) // s[a] + 1 for a, size in enumerate((h, w))]
    assert out == [2, 2], (h, w, out)
    assert layer(jnp.ones((3, h, w))).shape == (3, *out)
    report = check(layer, examples=2, batch=8, samples=128, test_elements=1, members=1,
                   maximality=False)
    assert report.passed


def test_conv_refuses_an_image_smaller_than_its_dilated_kernel():
    """An input axis shorter than the dilated, padded kernel d(k − 1) + 1 − padding gives
    an empty output (the convolution does not complain): a ValueError naming the axis."""
    conv = GmPConv(2, 2, 5, key=jax.random.key(0))
    with pytest.raises(ValueError, match="GmPConv: input height 4 is smaller than the "
                                         "dilated kernel.*at least 5"):
        conv(jnp.ones((2, 4, 7)))
    dilated = GmPConv(2, 2, 3, dilation=(1, 3), key=jax.random.key(0))
    with pytest.raises(ValueError, match="input width 6 .*at least 7"):
        dilated(jnp.ones((2, 5, 6)))
    with pytest.raises(ValueError, match="input width 6"):   # static shapes: also under jit
        eqx.filter_jit(lambda c, x: c(x))(dilated, jnp.ones((2, 5, 6)))
    assert dilated(jnp.ones((2, 3, 7))).shape == (2, 1, 1)
    padded = GmPConv(2, 2, 5, padding=1, key=jax.random.key(0))
    assert padded(jnp.ones((2, 3, 3))).shape == (2, 1, 1)
    with pytest.raises(ValueError, match="input height 2 .*at least 3"):
        padded(jnp.ones((2, 2, 3)))
    assert GmPConv(2, 2, 5, padding="SAME", key=jax.random.key(0))(
        jnp.ones((2, 1, 1))).shape == (2, 1, 1)


class _ScaledTanh(eqx.Module):
    """σ(z) = tanh(βz), elementwise, with a trainable gain β shared by all units."""

    beta: jax.Array

    def __call__(self, z):
        return jnp.tanh(self.beta * z)


def test_a_trainable_activation_is_trained():
    """The activation is a normal field: the arrays of an activation module (here the
    gain β of σ(z) = tanh(βz)) are leaves of GmPLinear and GmPConv and get gradients,
    equal to central finite differences of the float64 NumPy evaluation of eq 13,
    $\\sum_o r_o \\tanh(β(u(θ_o)^T x + λ_o))$ (u from eq 11 at the layers' angles); an
    optimiser step moves β, and `jax.jit` traces it. As a static field β was no leaf and
    had no gradient."""
    rng = np.random.default_rng(13)
    with jax.enable_x64(True):
        act = _ScaledTanh(jnp.asarray(0.7, jnp.float64))
        layer = GmPLinear(5, 4, act, key=jax.random.key(0), dtype=jnp.float64)
        lam, r = rng.standard_normal(4), rng.uniform(0.5, 2, 4)
        layer = eqx.tree_at(lambda l: (l.lam, l.r), layer, (jnp.asarray(lam), jnp.asarray(r)))
        conv = GmPConv(2, 3, (2, 3), activation=act, key=jax.random.key(1), dtype=jnp.float64)
        x, img = rng.standard_normal(5), rng.standard_normal((2, 2, 3))
        assert conv.activation is act and layer.activation.beta is act.beta
        assert any(leaf is act.beta for leaf in jax.tree.leaves(layer))
        swapped = eqx.tree_at(lambda l: l.activation.beta, layer, jnp.asarray(2.0))
        assert float(swapped.activation.beta) == 2.0 and float(layer.activation.beta) == 0.7
        g = eqx.filter_grad(lambda l: jnp.sum(l(jnp.asarray(x))))(layer)
        gc = eqx.filter_grad(lambda c: jnp.sum(c(jnp.asarray(img))))(conv)
        u, uc = u_ref(np.asarray(layer.theta)), u_ref(np.asarray(conv.theta))
        lam_c, r_c = np.asarray(conv.lam), np.asarray(conv.r)
        step = jax.jit(lambda l, x: jax.tree.map(
            lambda p, d: p - 0.1 * d, l, jax.grad(lambda l: jnp.sum(l(x)))(l)))
        moved = step(layer, jnp.asarray(x))

    def f(beta):                        # eq 13 in float64
        return np.sum(r * np.tanh(beta * (u @ x + lam)))

    def f_conv(beta):                   # one output pixel: the filter covers the image
        return np.sum(r_c * np.tanh(beta * (uc @ img.ravel() + lam_c)))

    h = 1e-6
    for fn, grad in ((f, g), (f_conv, gc)):
        fd = (fn(0.7 + h) - fn(0.7 - h)) / (2 * h)
        assert abs(fd) > 1e-2
        np.testing.assert_allclose(float(grad.activation.beta), fd, rtol=1e-7)
    np.testing.assert_allclose(float(moved.activation.beta),
                               0.7 - 0.1 * (f(0.7 + h) - f(0.7 - h)) / (2 * h), rtol=1e-8)
    # a plain function stays out of the leaves: they are arrays, as `jax.grad` needs
    plain = GmPLinear(3, 2, jnp.tanh, key=jax.random.key(2))
    assert plain.activation is jnp.tanh and plain.odd
    assert all(eqx.is_array(leaf) for leaf in jax.tree.leaves(plain))
