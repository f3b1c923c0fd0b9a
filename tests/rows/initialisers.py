"""Initialiser rows: each is checked as the random linear map x ↦ W x, W = init(key, (8, 8))."""

import taxdl.nn as tnn

from ._case import Case

CASES = [
    Case("HaarOrthogonal", tnn.HaarOrthogonal, n=8),
    Case("IsotropicNormal", tnn.IsotropicNormal, n=8),
    Case("SphereUniform", tnn.SphereUniform, n=8),
    Case("GlorotUniform", tnn.GlorotUniform, n=8),
    Case("GlorotNormal", tnn.GlorotNormal, n=8),
    Case("HeUniform", tnn.HeUniform, n=8),
    Case("HeNormal", tnn.HeNormal, n=8),
    # truncation at ±1σ (the default ±2σ is close to Gaussian: the two-sample test needs
    # many more samples to refute O(n) on both sides; the declared group is the same)
    Case("TruncatedNormal", lambda: tnn.TruncatedNormal(1.0, -1.0, 1.0), n=8),
    # asymmetric bounds (Sₙ): the law differs from its image under the rotations fixing
    # the all-ones vector only in odd moments, which 1024 samples per side cannot resolve
    Case("TruncatedNormal", lambda: tnn.TruncatedNormal(1.0, -2.0, 1.0), n=6,
         check_kwargs={"samples": 4096}, float64=False),
    Case("Zeros", tnn.Zeros, n=8),
    Case("QROrthogonal (no sign fix)", tnn.QROrthogonal, n=8),
]
