"""Helpers shared by the model tests (test_models.py, test_compose.py)."""

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
