"""Annotations for numbers a user may pass as Python or NumPy scalars (e.g. read from a
configuration array); the functions that take them check the value and convert it."""

import numpy as np

IntLike = int | np.integer
"""An integer: a Python or NumPy integer (bool is rejected by the checks)."""

RealLike = int | float | np.integer | np.floating
"""A real number: a Python or NumPy integer or float."""

INT_TYPES = (int, np.integer)
REAL_TYPES = (int, float, np.integer, np.floating)


def as_real(value):
    """A static field's converter: a Python float for a Python or NumPy real number (so that
    arithmetic with it stays weakly typed), anything else unchanged for the module's checks
    to reject with a message that names the field."""
    if isinstance(value, REAL_TYPES) and not isinstance(value, (bool, np.bool_)):
        return float(value)
    return value
