"""Characteristic activation boundaries: spatial locations (eqs 6, 10), the angular change
(eq 7), Proposition 2.3's instability and Theorem 3.7's bound, against NumPy float64."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import taxdl.nn as tnn
from taxdl import diagnostics as D


def test_spatial_location_eq_6():
    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((4, 3)), rng.standard_normal(4)
    with jax.enable_x64(True):
        phi = np.asarray(D.spatial_location(jnp.asarray(w), jnp.asarray(b)))
    expected = -b[:, None] * w / np.sum(w * w, axis=1, keepdims=True)
    np.testing.assert_allclose(phi, expected, rtol=1e-14)
    np.testing.assert_allclose(np.sum(w * phi, axis=1) + b, 0, atol=1e-14)  # φ on the CAB
    assert np.all(np.isinf(np.asarray(D.spatial_location(jnp.zeros((1, 3)), jnp.ones(1)))))


def test_gmp_location_eq_10_and_standard_correspondence():
    lin = eqx.nn.Linear(3, 5, key=jax.random.key(0))
    gmp = tnn.GmPLinear.from_linear(lin)
    std, geo = D.characteristic_boundary(lin), D.characteristic_boundary(gmp)
    w, b = np.asarray(lin.weight, np.float64), np.asarray(lin.bias, np.float64)
    expected = -b[:, None] * w / np.sum(w * w, axis=1, keepdims=True)
    np.testing.assert_allclose(np.asarray(std.location), expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(geo.location), expected, rtol=1e-5, atol=1e-7)
    direct = D.gmp_spatial_location(gmp.theta, gmp.lam)
    np.testing.assert_allclose(np.asarray(direct), expected, rtol=1e-5, atol=1e-7)
    for layer in (tnn.Linear(3, 5, key=jax.random.key(1)),
                  tnn.ElementwiseDense(3, 5, key=jax.random.key(1))):
        assert D.characteristic_boundary(layer).direction.shape == (5, 3)
    with pytest.raises(NotImplementedError, match="register one"):
        D.characteristic_boundary(tnn.Tanh())


def test_angular_change_eq_7():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((6, 4)), rng.standard_normal((6, 4))
    cos = np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    with jax.enable_x64(True):
        ang = np.asarray(D.angular_change(jnp.asarray(a), jnp.asarray(b)))
        tiny = float(D.angular_change(jnp.asarray([1.0, 0.0]),
                                      jnp.asarray([np.cos(1e-9), np.sin(1e-9)])))
    np.testing.assert_allclose(ang, np.arccos(cos), rtol=1e-12)
    np.testing.assert_allclose(tiny, 1e-9, rtol=1e-6)   # arccos of a cosine would give 0
    # Proposition 2.3: ε = −(1 + δ) w turns the boundary by π however small δ is
    w = jnp.asarray([0.3, -0.2, 0.1])
    turned = D.angular_change(w, -1e-4 * w)                   # w + ε = −δ w
    np.testing.assert_allclose(float(turned), np.pi, rtol=1e-6)
    assert float(D.angular_change(jnp.zeros(3), w)) == 0


def test_theorem_3_7_bound():
    rng = np.random.default_rng(2)
    theta = rng.uniform(0, np.pi, (20, 5))
    eps = 1e-5 * rng.standard_normal((20, 5))
    with jax.enable_x64(True):
        t, e = jnp.asarray(theta), jnp.asarray(eps)
        u0, u1 = tnn.functional.gmp_direction(t), tnn.functional.gmp_direction(t + e)
        exact = np.asarray(D.angular_change(u0, u1))
        bound = np.asarray(D.gmp_angular_bound(t, e))
    weights = np.cumprod(np.concatenate([np.ones((20, 1)), np.sin(theta[:, :-1]) ** 2], 1), 1)
    np.testing.assert_allclose(bound, np.sqrt(np.sum(weights * eps**2, 1)), rtol=1e-12)
    np.testing.assert_allclose(exact, bound, rtol=1e-4)       # first order in ε
    assert np.all(bound <= np.linalg.norm(eps, axis=1) * (1 + 1e-12))


def test_cab_change_after_a_perturbation():
    gmp = tnn.GmPLinear(2, 4, key=jax.random.key(0))
    gmp = eqx.tree_at(lambda l: l.lam, gmp, jnp.asarray([0.5, -1.0, 0.2, 0.0]))
    moved = eqx.tree_at(lambda l: (l.theta_t, l.lam), gmp,
                        (gmp.theta_t + 0.01, gmp.lam + 0.1))
    change = D.cab_change(gmp, moved)
    # in 2-D the direction angle is θ itself: each boundary turns by exactly 0.01
    np.testing.assert_allclose(np.asarray(change.angle), 0.01, rtol=1e-3)
    u0 = np.asarray(gmp.direction(), np.float64)
    u1 = np.asarray(moved.direction(), np.float64)
    lam0, lam1 = np.asarray(gmp.lam, np.float64), np.asarray(moved.lam, np.float64)
    expected = np.linalg.norm(-lam1[:, None] * u1 + lam0[:, None] * u0, axis=1)
    np.testing.assert_allclose(np.asarray(change.location), expected, rtol=1e-4, atol=1e-6)


def test_scale_free_in_float32():
    """Eqs 6–7 depend on b/‖w‖ and on directions only: no under- or overflow of ‖w‖²."""
    w = jnp.array([1.0, 2.0])
    assert float(D.angular_change(w, -1e-25 * w)) == pytest.approx(np.pi)
    assert float(D.angular_change(1e20 * w, -1e20 * w)) == pytest.approx(np.pi)
    assert float(D.angular_change(1e-30 * w, 1e30 * w)) == pytest.approx(0, abs=1e-6)
    np.testing.assert_allclose(np.asarray(D.spatial_location(1e-20 * w, jnp.float32(1e-20))),
                               [-0.2, -0.4], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(D.spatial_location(1e20 * w, jnp.float32(1e20))),
                               [-0.2, -0.4], rtol=1e-6)


def test_units_without_a_boundary_and_one_input_units():
    lin = eqx.nn.Linear(2, 3, key=jax.random.key(0))
    lin = eqx.tree_at(lambda l: l.weight, lin, lin.weight.at[0].set(0))
    loc = np.asarray(D.characteristic_boundary(lin).location)
    np.testing.assert_array_equal(loc, np.asarray(D.spatial_location(lin.weight, lin.bias)))
    assert np.all(np.isinf(loc[0])) and np.all(np.isfinite(loc[1:]))
    layer = tnn.GmPLinear(1, 8, key=jax.random.key(1))
    layer = eqx.tree_at(lambda l: l.lam, layer, jnp.linspace(-1, 1, 8))
    direct = D.gmp_spatial_location(layer.theta, layer.lam, layer.sign)
    np.testing.assert_array_equal(np.asarray(direct), np.asarray(layer.spatial_locations()))
    np.testing.assert_allclose(np.asarray(direct)[:, 0],
                               -np.linspace(-1, 1, 8) * np.asarray(layer.sign), rtol=1e-6)
    with pytest.raises(ValueError, match="`sign`"):
        D.gmp_spatial_location(jnp.zeros((2, 3)), jnp.zeros(2), jnp.ones(2))
