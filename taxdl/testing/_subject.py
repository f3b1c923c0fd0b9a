"""What is checked: resolving a primitive from a class, instance or factory, casting it to
the check's dtype, and seeing an initialiser as the random linear map it induces."""

import inspect
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array

from ..taxonomy import (
    AbstractInitialiser,
    AbstractPrimitive,
    DimensionRequired,
    Flavour,
    registry,
    reinitialise,
    transport,
)
from ..taxonomy._registry import has_taxonomy
from ._engine import complex_dtype, real_dtype


def resolve(obj: Any) -> Any:
    """The primitive instance to check, from an instance, a class (its registered example
    or default constructor) or a zero-argument factory."""
    if isinstance(obj, type):
        for entry in registry().values():
            if entry.cls is obj and entry.example is not None:
                return entry.example()
        try:
            return obj()
        except TypeError as err:
            raise TypeError(
                f"cannot build {obj.__name__} with its default constructor ({err}); pass "
                "an instance or a zero-argument factory instead."
            ) from None
    if has_taxonomy(obj):
        return obj
    if callable(obj):
        if not _takes_no_arguments(obj):
            raise TypeError(
                f"{obj!r} carries no taxonomy and is not a zero-argument factory of a "
                "primitive: pass a primitive (an instance, a class or a zero-argument "
                "factory). To test a plain function, use `taxdl.testing.assert_algebraic(f, "
                "group, flavour, n=...)` (or `assert_maximal`).")
        made = obj()
        if not has_taxonomy(made):
            raise TypeError(f"the factory {getattr(obj, '__name__', None) or repr(obj)} "
                            f"returned a {type(made).__name__}, which carries no taxonomy.")
        return made
    raise TypeError(f"{obj!r} is not a primitive: it carries no taxonomy.")


def _takes_no_arguments(fn) -> bool:
    """Whether `fn` can be called without arguments (True when its signature is not
    known: it is then called, as a factory)."""
    try:
        inspect.signature(fn).bind()
    except TypeError:
        return False
    except ValueError:   # no signature available
        return True
    return True


def cast(tree, dtype):
    """Cast every floating leaf of a pytree to `dtype` (complex leaves to the complex
    dtype of the same precision)."""
    real, cplx = real_dtype(dtype), complex_dtype(dtype)

    def one(leaf):
        if eqx.is_inexact_array(leaf):
            return leaf.astype(cplx if jnp.iscomplexobj(leaf) else real)
        return leaf

    return jax.tree.map(one, tree)


class InitialisedLinear(eqx.Module):
    """An initialiser seen as a primitive: the linear map $x \\mapsto W x$ with
    $W$ = `init(key, (n, n))` (an initialiser's taxonomy is that of this map)."""

    weight: Array
    init: AbstractInitialiser

    def __call__(self, x, *, key=None):
        del key
        return jnp.einsum("ij,...j->...i", self.weight, x.astype(self.weight.dtype),
                          precision=jax.lax.Precision.HIGHEST)


def as_linear(init: AbstractInitialiser, n: int | None, dtype, key) -> InitialisedLinear:
    if n is None:
        raise DimensionRequired(
            type(init).__name__, "the dimension `n` (an initialiser is checked as the random "
            "linear map x ↦ W x with W = init(key, (n, n)))")
    return InitialisedLinear(jnp.asarray(init(key, (n, n), real_dtype(dtype))), init)


@reinitialise.register
def _(prim: InitialisedLinear, key) -> InitialisedLinear:
    shape, dtype = prim.weight.shape, prim.weight.dtype
    return eqx.tree_at(lambda p: p.weight, prim, jnp.asarray(prim.init(key, shape, dtype),
                                                            dtype))


@transport.register
def _(prim: InitialisedLinear, flavour, element, group) -> InitialisedLinear:
    m = element.matrix.astype(prim.weight.dtype)
    w = prim.weight
    flavour = Flavour(flavour)
    if flavour is Flavour.LEFT:
        w = m @ w
    elif flavour is Flavour.RIGHT:
        w = w @ m
    else:
        w = jnp.linalg.solve(m, w @ m)
    return eqx.tree_at(lambda p: p.weight, prim, w)


def display_name(obj: Any) -> str:
    cls = obj if isinstance(obj, type) else type(obj)
    for name, entry in registry().items():
        if entry.cls is cls:
            return name
    return cls.__name__


def is_primitive(obj: Any) -> bool:
    return isinstance(obj, AbstractPrimitive)
