"""Foundation rows: the Table 5.2 reference primitives."""

import jax

import taxdl.nn as tnn

from ._case import Case

CASES = [
    Case("Tanh", tnn.Tanh, n=8),
    Case("IsotropicTanh", tnn.IsotropicTanh, n=8),
    Case("Linear", lambda: tnn.Linear(8, 8, key=jax.random.key(0))),
    Case("Composed", lambda: tnn.ElementwiseDense(8, 8, key=jax.random.key(0))),
    Case("CrossEntropy", tnn.CrossEntropy, n=8),
    # γ = 1 at initialisation makes the law O(n-1)-invariant, but eq 30 caps the
    # probabilistic E cell at the closure group Sₙ (a generic γ is not closed under
    # O(n-1)): the checker reports O(n-1) as holding in law but not declarable.
    Case("LayerNorm (vector γ,β)", lambda: tnn.LayerNorm(8, "vector")),
    # ε > 0: closure R is ±I⋉+λ1 (the standardisation is odd, γ ↦ −γ absorbs −I)
    Case("LayerNorm (vector γ,β)", lambda: tnn.LayerNorm(8, "vector", eps=1e-3),
         float64=False),
    Case("LayerNorm (scalar γ,β)", lambda: tnn.ScalarLayerNorm(8)),
]
