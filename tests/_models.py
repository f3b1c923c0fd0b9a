"""Helpers shared by the tests: NumPy evaluation of layer chains (test_models.py,
test_compose.py), declarations of test primitives (test_testing*.py) and central
differences of float64 NumPy maps (test_activations_conic.py, test_operations.py)."""

import numpy as np

import taxdl.nn as tnn


def np_chain(layers, x):
    """An independent float64 NumPy evaluation of a chain of Linear, Tanh and
    IsotropicTanh layers applied to `x`, first layer first."""
    for layer in layers:
        if isinstance(layer, tnn.Linear):
            x = np.asarray(layer.weight, np.float64) @ x + np.asarray(layer.bias, np.float64)
        elif isinstance(layer, tnn.Tanh):
            x = np.tanh(x)
        elif isinstance(layer, tnn.IsotropicTanh):
            r = np.linalg.norm(x)
            x = x if r == 0 else np.tanh(r) * x / r
        else:
            raise TypeError(layer)
    return x


def equivariant_taxonomy(group):
    """A declaration with `group` in the E cell of every generation (L and R trivial)."""
    from taxdl import Taxonomy

    return Taxonomy(closure=(None, None, group), probabilistic=(None, None, group),
                    algebraic=(None, None, group))


def fd_jacobian(ref, x, h):
    """Central differences of a float64 NumPy map at x (columns: input coordinates)."""
    return np.stack([(ref(x + h * e) - ref(x - h * e)) / (2 * h) for e in np.eye(x.size)], -1)
