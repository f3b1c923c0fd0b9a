"""Rows for the Geometric Parameterization layers and Input Mean Normalisation."""

import jax
import jax.numpy as jnp

import taxdl.nn as tnn

from ._case import Case

CASES = [
    Case("GmPLinear", lambda: tnn.GmPLinear(8, 8, key=jax.random.key(0))),
    # tanh: not positively homogeneous (right closure O(n), not GL(n)) and odd (the law is
    # Bₙ-invariant on the left). Its outputs are bounded while the rounding of transported
    # angles moves pre-activations by ~eps·‖x‖, so the float32 closure check needs rtol 1e-4.
    Case("GmPLinear", lambda: tnn.GmPLinear(8, 8, jnp.tanh, key=jax.random.key(1)),
         check_kwargs={"rtol": 1e-4}, float64=False),
    Case("GmPConv", lambda: tnn.GmPConv(3, 3, 2, key=jax.random.key(0)), float64=False),
    # x − μ with μ the mean of a standard Gaussian batch: closure T(n) / T(n) / Aff(n),
    # probabilistic I / I / E(n) (the law changes under Aff(n)), algebraic I / I / T(n).
    Case("InputMeanNorm", lambda: tnn.InputMeanNorm(8)),
]
