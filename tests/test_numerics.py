"""The shared numerical helpers: `materialise` is the identity in value and derivative."""

import jax
import jax.numpy as jnp
import numpy as np

from taxdl.nn._numerics import materialise


def test_materialise_is_the_identity_in_every_mode():
    x = jnp.asarray(np.random.default_rng(0).normal(size=(5, 3)), jnp.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(materialise)(x)), np.asarray(x))
    nan_first = x.at[0, 0].set(jnp.nan)  # the loop then runs once
    np.testing.assert_array_equal(np.asarray(jax.jit(materialise)(nan_first)),
                                  np.asarray(nan_first))
    assert jax.jit(materialise)(jnp.zeros((0, 3))).shape == (0, 3)
    f = lambda x: jnp.sum(jnp.sin(materialise(x * x)))  # noqa: E731
    g = lambda x: jnp.sum(jnp.sin(x * x))  # noqa: E731
    np.testing.assert_allclose(jax.grad(f)(x), jax.grad(g)(x), rtol=1e-6)
    np.testing.assert_allclose(jax.hessian(f)(x[0]), jax.hessian(g)(x[0]), rtol=1e-5)
    np.testing.assert_allclose(jax.jacrev(jax.jacrev(f))(x[0]), jax.hessian(g)(x[0]),
                               rtol=1e-5)
    np.testing.assert_allclose(jax.vmap(jax.grad(f))(x), jax.vmap(jax.grad(g))(x),
                               rtol=1e-6)


def test_materialise_keeps_its_loop_in_the_compiled_program():
    text = jax.jit(lambda x: materialise(jnp.exp(x)) + 1).lower(
        jnp.ones((64, 64))).compile().as_text()
    assert "while" in text
