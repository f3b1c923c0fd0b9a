"""Validation of the normalisers' hyperparameters and inputs: each error names the
argument (or the expected input shape) and the valid values."""

import jax
import jax.numpy as jnp

from ..._types import check_int, check_real


def check_n(n, who: str, minimum: int = 1) -> int:
    return check_int(n, "n", who=who, minimum=minimum)


def check_eps(eps, who: str) -> float:
    return check_real(eps, "eps", who=who, low=0)


def check_momentum(momentum, who: str) -> float:
    return check_real(momentum, "momentum", who=who, low=0, high=1, high_open=True)


def _check_floating(x, who: str) -> None:
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f"{who}: `x` must be a real floating array, got dtype {x.dtype}.")


def check_input(x, n: int, who: str) -> None:
    """One unbatched real floating example of shape (n,)."""
    if not isinstance(x, jax.Array):
        raise TypeError(f"{who} expects a JAX array of shape ({n},), got "
                        f"{type(x).__name__} (convert it with jnp.asarray).")
    if x.shape != (n,):
        raise ValueError(f"{who} expects one unbatched input of shape ({n},), got "
                         f"{x.shape}; use jax.vmap for batches.")
    _check_floating(x, who)


def check_channels(x, n: int, who: str) -> None:
    """A real floating input of shape (*spatial, n), channels last."""
    if not hasattr(x, "shape") or x.ndim < 1 or x.shape[-1] != n:
        raise ValueError(f"{who} expects an input of shape (*spatial, {n}) with channels "
                         f"last, got {getattr(x, 'shape', None)}.")
    _check_floating(x, who)
