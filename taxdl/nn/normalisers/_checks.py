"""Validation of the normalisers' hyperparameters and inputs: each error names the
argument (or the expected input shape) and the valid values."""

import jax
import jax.numpy as jnp

from ..._types import INT_TYPES, REAL_TYPES


def check_n(n, who: str, minimum: int = 1) -> int:
    if isinstance(n, bool) or not isinstance(n, INT_TYPES) or n < minimum:
        raise ValueError(f"{who}: `n` must be an integer >= {minimum}, got {n!r}.")
    return int(n)


def check_eps(eps, who: str) -> float:
    if isinstance(eps, bool) or not isinstance(eps, REAL_TYPES) or not (
            eps >= 0 and eps < float("inf")):
        raise ValueError(f"{who}: `eps` must be a finite number >= 0, got {eps!r}.")
    return float(eps)


def check_momentum(momentum, who: str) -> float:
    if isinstance(momentum, bool) or not isinstance(momentum, REAL_TYPES) or not (
            0 <= momentum < 1):
        raise ValueError(f"{who}: `momentum` must be a number in [0, 1), got {momentum!r}.")
    return float(momentum)


def _check_floating(x, who: str) -> None:
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f"{who}: `x` must be a real floating array, got dtype {x.dtype}.")


def check_input(x, n: int, who: str) -> None:
    """One unbatched real floating example of shape (n,)."""
    if not isinstance(x, jax.Array) or x.shape != (n,):
        shape = getattr(x, "shape", None)
        raise ValueError(f"{who} expects one unbatched input of shape ({n},), got {shape}; "
                         "use jax.vmap for batches.")
    _check_floating(x, who)


def check_channels(x, n: int, who: str) -> None:
    """A real floating input of shape (*spatial, n), channels last."""
    if not hasattr(x, "shape") or x.ndim < 1 or x.shape[-1] != n:
        raise ValueError(f"{who} expects an input of shape (*spatial, {n}) with channels "
                         f"last, got {getattr(x, 'shape', None)}.")
    _check_floating(x, who)
