"""Operation rows (App. A.4, C, D): binary operations act on both arguments; the
attention rows act on the key axis (see taxdl/nn/operations/_attention.py)."""

import jax

import taxdl.nn as tnn

from ._case import Case

CASES = [
    Case("IsotropicMin", tnn.IsotropicMin, n=8),
    Case("IsotropicMax", tnn.IsotropicMax, n=8),
    Case("IsotropicMultiply", tnn.IsotropicMultiply, n=8),
    Case("ElementwiseMin", tnn.ElementwiseMin, n=8),
    Case("ElementwiseMax", tnn.ElementwiseMax, n=8),
    Case("Hadamard", tnn.Hadamard, n=8),
    Case("CoordinateClip", tnn.CoordinateClip, n=8),
    Case("BoxClip", tnn.BoxClip, n=8),
    Case("Dropout", lambda: tnn.Dropout(0.5), n=8),
    Case("StochasticIsotropicDropout", lambda: tnn.StochasticIsotropicDropout(0.5), n=8),
    Case("CorrelatedIsotropicDropout",
         lambda: tnn.CorrelatedIsotropicDropout(8, 0.5, 0.2, key=jax.random.key(0))),
    # float32 atol 1e-6: an output that cancels to 0 (values orthogonal to the weights,
    # e.g. scores of 1e30 along one key) carries the rounding of the rotated values and
    # weights, ~eps·Σ|w||v| ≈ 1e-7 at unit values, which relative input perturbations
    # (the conditioning estimate) cannot show where the inputs are sparse
    Case("IsotropicTanhAttention", tnn.IsotropicTanhAttention, n=8,
         float32_kwargs={"atol": 1e-6}),
    Case("SoftmaxAttention", tnn.SoftmaxAttention, n=8, float32_kwargs={"atol": 1e-6}),
    # gain 0.25 keeps isotropic tanh near-linear on the probes, so that the two-sample
    # test can see GL maps change the pre-activation scale (saturation would hide it)
    Case("MultiHeadSum", lambda: tnn.MultiHeadSum(8, 3, gain=0.25, key=jax.random.key(0))),
    Case("MultiHeadAffineSum",
         lambda: tnn.MultiHeadAffineSum(8, 8, 4, 8, gain=0.1, key=jax.random.key(0))),
]
