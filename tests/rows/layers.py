"""Rows for the Geometric Parameterization layers and Input Mean Normalisation."""

import jax
import jax.numpy as jnp

import taxdl.nn as tnn

from ._case import Case

CASES = [
    Case("GmPLinear", lambda: tnn.GmPLinear(8, 8, key=jax.random.key(0))),
    # tanh: not positively homogeneous (right closure O(n), not GL(n)) and odd (the law is
    # Bₙ-invariant on the left). Rounding of the transported angles moves a pre-activation
    # that cancels to ≈ 0 at g·x; the checker's conditioning term, taken at x and at g·x,
    # covers it.
    Case("GmPLinear", lambda: tnn.GmPLinear(8, 8, jnp.tanh, key=jax.random.key(1))),
    Case("GmPConv", lambda: tnn.GmPConv(3, 3, 2, key=jax.random.key(0)), float64=False),
    # x − μ with μ the mean of a standard Gaussian batch: closure T(n) / T(n) / Aff(n),
    # probabilistic I / I / E(n) (the law changes under Aff(n)), algebraic I / I / T(n).
    Case("InputMeanNorm", lambda: tnn.InputMeanNorm(8)),
]
