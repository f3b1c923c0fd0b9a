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


def check_fits(value, name: str, x_shape, who: str, expected: str,
               against: str = "`x` of shape") -> None:
    """A parameter or statistic (γ, β, μ, …) that broadcasts against an input of shape
    `x_shape` without enlarging it; otherwise a `ValueError` naming it, with `expected`
    (the shape the primitive uses, e.g. "a scalar or of shape (4,)"), what it broadcasts
    against (`against`, followed by `x_shape`) and the shape given. Only static shapes
    are read, so the check is free under `jax.jit`."""
    shape, x_shape = tuple(jnp.shape(value)), tuple(x_shape)
    try:
        ok = jnp.broadcast_shapes(shape, x_shape) == x_shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{who}: `{name}` must be {expected}, broadcasting against "
                         f"{against} {x_shape}, got shape {shape}.")


def check_per_feature(x, who: str, **parameters) -> None:
    """Each of `parameters` (name → value) a scalar or a per-feature vector of shape (n,),
    n = x.shape[-1] (or any shape broadcasting against x without enlarging it)."""
    expected = f"a scalar or of shape ({x.shape[-1]},)" if x.ndim else "a scalar"
    for name, value in parameters.items():
        check_fits(value, name, x.shape, who, expected)
