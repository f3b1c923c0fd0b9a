"""Chains and residuals of tagged primitives, with their taxonomy inferred by the
composition rules of [`taxdl.taxonomy`][taxdl.taxonomy.RULES]."""

from collections.abc import Iterable, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import named_scope
from jaxtyping import Array, Inexact, PRNGKeyArray

from ..._types import check_bool
from ...taxonomy import (
    AbstractPrimitive,
    Flavour,
    Signature,
    Taxonomy,
    as_function,
    register,
    reinitialise,
    signature,
    taxonomy,
    transport,
)
from ...taxonomy._compose import (
    CLOSURE,
    Part,
    chain,
    chain_function,
    chain_parts,
    chain_signature,
    inverse_element,
    part,
    residual,
    translation_part,
    transport_chain,
    warn_fit,
)
from ...taxonomy._compose import _linear_part as linear_part
from ...groups import Element

L, R, E = Flavour.LEFT, Flavour.RIGHT, Flavour.EQUIVARIANT


def _check_tagged(layers: Sequence[Any], who: str) -> None:
    for i, layer in enumerate(layers):
        if not callable(layer):
            raise TypeError(f"{who}: part {i} ({layer!r}) is not callable.")
        if isinstance(layer, eqx.nn.StatefulLayer) and layer.is_stateful():
            raise ValueError(
                f"{who}: part {i} ({type(layer).__name__}) is stateful (it threads an "
                "`eqx.nn.State`), but parts are called as `part(x, key=...)`; use it in your "
                "own module next to the stateless parts (see the guide 'Compose models').")
        try:
            taxonomy(layer)
        except TypeError as err:
            raise TypeError(
                f"{who}: part {i} ({type(layer).__name__}) carries no symmetry declaration, so "
                "the model's taxonomy cannot be inferred. Use a taxdl primitive, or subclass "
                "taxdl.AbstractPrimitive and declare `taxonomy` (see the guide 'Test your own "
                f"primitive'). ({err})"
            ) from None


@named_scope("taxdl.Sequential")
def _run(layers, x, key):
    keys = (None,) * len(layers) if key is None else tuple(jax.random.split(key, len(layers)))
    for layer, k in zip(layers, keys):
        x = layer(x, key=k)
    return x


class Sequential(AbstractPrimitive):
    """A chain of tagged primitives $f = f_k \\circ \\dots \\circ f_1$, called in order.

    **Symmetry:** inferred from the parts by the chain rules (`taxdl.taxonomy.RULES`):
    e.g. the algebraic E cell of a chain of ℝⁿ → ℝⁿ maps is the intersection of theirs,
    and `Sequential([Linear(n, n), ReLU()])` has the "Composed" row of Table 5.2
    (isotropic paper §5.2). `taxdl.taxonomy(model)` returns it and
    `taxdl.testing.check(model)` verifies it.

    **Arguments:**

    - `layers`: the parts, in call order: taxdl primitives, models, or a user's own tagged
      primitives (anything `taxdl.taxonomy` accepts), each called as `layer(x, key=...)` on
      one unbatched vector.
    - `check_fit`: warn (`taxdl.taxonomy.CompositionWarning`) when an activation sits
      between layers whose declared closure group differs from the activation's group
      (default True).

    Raises `TypeError` for a part without a declaration and `ValueError` when consecutive
    parts disagree on a dimension.
    """

    layers: tuple[Any, ...]

    def __init__(self, layers: Iterable[Any], *, check_fit: bool = True):
        try:
            layers = tuple(layers)
        except TypeError:
            raise TypeError(f"Sequential: `layers` must be a sequence of primitives, got "
                            f"{type(layers).__name__}; wrap a single part in a list.") from None
        if not layers:
            raise ValueError("Sequential needs at least one layer.")
        _check_tagged(layers, "Sequential")
        parts = chain_parts(layers)
        if check_bool(check_fit, "check_fit", who="Sequential"):
            warn_fit(parts, layers, stacklevel=4)
        self.layers = layers

    @property
    def taxonomy(self) -> Taxonomy:
        return chain(chain_parts(self.layers)).taxonomy()

    def __call__(self, x: Inexact[Array, " n"], *, key: PRNGKeyArray | None = None
                 ) -> Inexact[Array, " m"]:
        return _run(self.layers, x, key)

    def __len__(self) -> int:
        return len(self.layers)

    def __getitem__(self, index: int) -> Any:
        return self.layers[index]


class Residual(AbstractPrimitive):
    """A residual block $f(x) = x + h(x)$ around a map $h: \\mathbb R^n \\to \\mathbb R^n$.

    **Symmetry:** the identity commutes with every linear map, so $f$ keeps the
    equivariant (E) cells of $h$ restricted to their linear part; its L and R cells are
    trivial (isotropic paper §5.2, on residuals).

    **Arguments:**

    - `inner`: the map $h$ (a tagged primitive or model; a list is wrapped in
      [`Sequential`][taxdl.nn.Sequential]).
    """

    inner: Any

    def __init__(self, inner: Any):
        if isinstance(inner, (list, tuple)):
            inner = Sequential(inner)
        _check_tagged((inner,), "Residual")
        residual(part(inner))  # validates that h maps a space to itself
        self.inner = inner

    @property
    def taxonomy(self) -> Taxonomy:
        return residual(part(self.inner)).taxonomy()

    @named_scope("taxdl.Residual")
    def __call__(self, x: Inexact[Array, " n"], *, key: PRNGKeyArray | None = None
                 ) -> Inexact[Array, " n"]:
        return x + self.inner(x, key=key)


def _example_chain() -> Sequential:
    from ..activations import ReLU
    from ..layers import Linear

    return Sequential([Linear(8, 8, key=jax.random.key(0)), ReLU(),
                       Linear(8, 8, key=jax.random.key(1))])


def _example_residual() -> Residual:
    from ..activations import IsotropicTanh
    from ..layers import Linear

    return Residual([Linear(8, 8, key=jax.random.key(0)), IsotropicTanh()])


register(Sequential, family="model", formula="f_k∘…∘f_1", example=_example_chain,
         reference="isotropic paper §5.2 (compositions, Table 5.2 Composed)")
register(Residual, family="model", formula="x + h(x)", example=_example_residual,
         reference="isotropic paper §5.2 (residuals)")


# ----------------------------------------------------------------------- rules and hooks
@part.register
def _(model: Sequential, in_dim: int | None = None) -> Part:
    return chain(chain_parts(model.layers, in_dim))


@part.register
def _(model: Residual, in_dim: int | None = None) -> Part:
    return residual(part(model.inner, in_dim))


@as_function.register
def _(model: Sequential):
    return chain_function(model.layers)


@as_function.register
def _(model: Residual):
    h = as_function(model.inner)
    return lambda x: x + h(x)


@signature.register
def _(model: Sequential, n=None) -> Signature:
    return chain_signature(model.layers, n, "this Sequential")


@signature.register
def _(model: Residual, n=None) -> Signature:
    return chain_signature([model.inner], n, "this Residual")


def _with_layers(model: Sequential, layers: Sequence[Any]) -> Sequential:
    return eqx.tree_at(lambda m: m.layers, model, tuple(layers))


@reinitialise.register
def _(model: Sequential, key) -> Sequential:
    keys = jax.random.split(key, len(model.layers))
    return _with_layers(model, [reinitialise(layer, k) for layer, k in zip(model.layers, keys)])


@reinitialise.register
def _(model: Residual, key) -> Residual:
    return eqx.tree_at(lambda m: m.inner, model, reinitialise(model.inner, key))


@transport.register
def _(model: Sequential, flavour, element, group) -> Sequential:
    flavour = Flavour(flavour)
    layers = transport_chain(model.layers, chain_parts(model.layers), flavour, element,
                             inverse_element(group, element), group)
    return _with_layers(model, layers)


@transport.register
def _(model: Residual, flavour, element, group) -> Residual:
    # g⁻¹∘(id + h)∘g = id + M⁻¹h(M · + t) for g(x) = Mx + t: h moved on the right by the
    # translation t (a translation of its R cell), then conjugated by the linear M. L and
    # R cells are trivial, so other flavours only occur as maximality probes: the block
    # is left unchanged.
    if Flavour(flavour) is not E:
        return model
    m = element.matrix
    n = m.shape[-1]
    inner = model.inner
    shifts = [translation_part(g) for g in part(inner, n).get(CLOSURE, R)]
    shift_group = next((t for t in shifts if t is not None), None)
    if shift_group is not None:
        eye = jnp.eye(n, dtype=m.dtype)
        inner = transport(inner, R, Element(eye, element.shift), shift_group.on(n))
    linear = linear_part(group) if group is not None else None
    if linear is not None and not linear.bound:
        linear = linear.on(n)
    inner = transport(inner, E, Element(m, jnp.zeros_like(element.shift)), linear)
    return eqx.tree_at(lambda m_: m_.inner, model, inner)
