"""Annotations for numbers a user may pass as Python or NumPy scalars (e.g. read from a
configuration array), and the checks that validate such a number and convert it."""

import math

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


def _is_number(value, types) -> bool:
    return isinstance(value, types) and not isinstance(value, (bool, np.bool_))


def _prefix(who: str | None) -> str:
    return f"{who}: " if who else ""


def _not_a_jax_value(value, message: str) -> None:
    """A `TypeError` for a JAX array or tracer passed as a hyperparameter, saying what is
    expected: hyperparameters are static Python or NumPy numbers (the checks and the
    compiled kernels need the number itself), so a traced one cannot be jitted over or
    differentiated, and a concrete one is passed as `float(value)`."""
    import jax

    if isinstance(value, jax.core.Tracer):
        raise TypeError(message[:-1] + ": a traced JAX value, but hyperparameters are "
                        "static Python or NumPy numbers (a learnable quantity belongs in a "
                        "module's array fields).")
    if isinstance(value, jax.Array):
        raise TypeError(message[:-1] + ": a JAX array, but hyperparameters are static "
                        "Python or NumPy numbers (pass float(value)).")


def check_callable(value, name: str, *, who: str | None = None, example: str = ""):
    """`value` if it is a callable instance; a `TypeError` naming `name` for a class (a
    module class such as `ReLU` is callable, but calling it builds a module) or anything
    else."""
    if isinstance(value, type):
        raise TypeError(f"{_prefix(who)}`{name}` must be an instance, not the class "
                        f"{value.__name__}: pass {value.__name__}(...).")
    if not callable(value):
        hint = f" (e.g. {example})" if example else ""
        raise TypeError(f"{_prefix(who)}`{name}` must be callable{hint}, got {value!r}.")
    return value


def check_bool(value, name: str, *, who: str | None = None) -> bool:
    """`value` as a Python bool when it is a Python or NumPy bool; otherwise a `TypeError`
    that names the argument (a string such as "no" would otherwise count as True)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{_prefix(who)}`{name}` must be True or False, got {value!r}.")
    return bool(value)


def resolve_inference(module, inference) -> bool:
    """The per-call `inference` flag of a module with an `inference` field: the call's
    value, or the module's when the call passes None; checked to be a bool, naming the
    module's class."""
    value = module.inference if inference is None else inference
    return check_bool(value, "inference", who=type(module).__name__)


def check_int(value, name: str, *, who: str | None = None, minimum: int = 1) -> int:
    """`value` as a Python int when it is a Python or NumPy integer (not a bool) of at
    least `minimum`. Otherwise a `TypeError` (not an integer) or `ValueError` (too small)
    that names the argument, the primitive `who` and the valid range."""
    message = (f"{_prefix(who)}`{name}` must be an integer >= {minimum}, got {value!r}.")
    if not _is_number(value, INT_TYPES):
        raise TypeError(message)
    if value < minimum:
        raise ValueError(message)
    return int(value)


def check_real(value, name: str, *, who: str | None = None, low=None, high=None,
               low_open: bool = False, high_open: bool = False) -> float:
    """`value` as a Python float when it is a finite Python or NumPy real number (not a
    bool) within the range from `low` to `high` (each bound closed unless `*_open`; `None`
    for no bound). Otherwise a `TypeError` (not a number) or `ValueError` (not finite or
    out of range) that names the argument, the primitive `who` and the valid range."""
    if low is not None and high is not None:
        rng = f" in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
    elif low is not None:
        rng = f" {'>' if low_open else '>='} {low}"
    elif high is not None:
        rng = f" {'<' if high_open else '<='} {high}"
    else:
        rng = ""
    message = f"{_prefix(who)}`{name}` must be a finite number{rng}, got {value!r}."
    if not _is_number(value, REAL_TYPES):
        _not_a_jax_value(value, message)
        raise TypeError(message)
    v = float(value)
    ok = math.isfinite(v)
    if low is not None:
        ok &= v > low if low_open else v >= low
    if high is not None:
        ok &= v < high if high_open else v <= high
    if not ok:
        raise ValueError(message)
    return v


def check_float_dtype(dtype, who: str, name: str = "dtype"):
    """`dtype` as a JAX dtype when it names a real floating dtype (float16, bfloat16,
    float32, float64); otherwise a `TypeError` naming the argument and the primitive `who`
    (integer parameters would be truncated at initialisation, complex ones are not
    supported by the real modules)."""
    import jax.numpy as jnp

    message = (f"{_prefix(who)}`{name}` must be a real floating dtype (float16, bfloat16, "
               f"float32 or float64), got {dtype!r}.")
    try:
        resolved = jnp.dtype(dtype)
    except TypeError:
        raise TypeError(message) from None
    if not jnp.issubdtype(resolved, jnp.floating):
        raise TypeError(message)
    return resolved
