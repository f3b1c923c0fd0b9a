"""Rows for the optimisers: update rules checked as maps from a (T, n) gradient sequence to
the (T, n) update sequence.

The scale-free rules are checked with ε = 0 (right-invariant under ℝ×₊ exactly) and the
others with an ε large enough that the declared trivial right cell is refutable at
O(1) gradients (with ε ≈ 1e-8 the rules are scale-free up to rounding)."""

from taxdl import optim

from ._case import Case

CASES = [
    Case("AdaSGD", lambda: optim.AdaSGD(0.1, eps=0.0), n=8),
    Case("AdaSGD", lambda: optim.AdaSGD(0.1, eps=0.5), n=8, float64=False),
    Case("NormalisedSGD", lambda: optim.NormalisedSGD(0.1, 0.9, eps=0.0), n=8),
    Case("IsotropicClip", lambda: optim.IsotropicClip(1.0), n=8),
    Case("SGD", lambda: optim.SGD(0.1, 0.9), n=8),
    Case("Adam", lambda: optim.Adam(0.1, eps_root=1e-2), n=8),
    Case("Adagrad", lambda: optim.Adagrad(0.1, eps=1e-2), n=8),
    Case("AdaDelta", lambda: optim.AdaDelta(1.0, eps=1e-2), n=8),
    Case("ElementwiseClip", lambda: optim.ElementwiseClip(1.0), n=8),
]
