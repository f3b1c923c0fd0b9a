"""Parameter symmetries of composed models: which groups act on the hidden spaces without
changing the function, and how to apply one of their elements."""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...groups import AbstractGroup, Element, Permutation, is_subgroup, linear_element
from ...taxonomy import Flavour
from ...taxonomy._compose import ParameterSymmetry
from ...taxonomy._compose import parameter_symmetries as _parameter_symmetries
from ._mlp import MLP
from ._sequential import Residual, Sequential, chain_parts, transport_chain

L, R = Flavour.LEFT, Flavour.RIGHT


def _layers(model: Any) -> tuple[Any, ...]:
    if isinstance(model, MLP):
        return model.layers.layers
    if isinstance(model, (Sequential, eqx.nn.Sequential)):
        # an eqx.nn.Sequential of tagged parts gets the same chain rules (taxdl.taxonomy)
        return tuple(model.layers)
    if isinstance(model, Residual) and isinstance(model.inner, (MLP, Sequential,
                                                                eqx.nn.Sequential)):
        # x + h(x): a reparameterisation of h that keeps h keeps the block
        return _layers(model.inner)
    raise TypeError(f"`model` must be a taxdl.nn.Sequential, taxdl.nn.MLP or "
                    f"equinox.nn.Sequential (or a taxdl.nn.Residual around one), got "
                    f"{type(model).__module__}.{type(model).__qualname__}.")


def _rebuild(model: Any, layers: tuple[Any, ...]) -> Any:
    if isinstance(model, Residual):
        return eqx.tree_at(lambda m: m.inner, model, _rebuild(model.inner, layers))
    if isinstance(model, MLP):
        return eqx.tree_at(lambda m: m.layers.layers, model, layers)
    return eqx.tree_at(lambda m: m.layers, model, layers)


def parameter_symmetries(model: Any) -> list[ParameterSymmetry]:
    """The parameter symmetries of a [`Sequential`][taxdl.nn.Sequential],
    [`MLP`][taxdl.nn.MLP] or `eqx.nn.Sequential` of tagged parts (or a
    [`Residual`][taxdl.nn.Residual] block around one: the sites of its inner map), one per
    hidden site with a non-trivial group.

    Site i is the hidden space between parts i − 1 and i. The parts before it are closed on
    the left and the parts after it on the right under G (by the composition rules: with
    affine layers around an algebraically G-equivariant activation), so for every g ∈ G
    the parameters of (suffix∘g⁻¹, g∘prefix) compute the same function (isotropic paper
    eq 40): a discrete orbit of |G| points for Sₙ or Bₙ, a continuous manifold for O(n).
    Pre- and post-activation spaces count as one hidden layer. See
    [`apply_hidden`][taxdl.nn.apply_hidden].
    """
    return _parameter_symmetries(chain_parts(_layers(model)))


def _concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


def _check_site(site: Any) -> int:
    if isinstance(site, bool) or not isinstance(site, (int, np.integer)):
        raise TypeError(f"`site` must be an integer (the hidden space before part `site`), "
                        f"got {site!r}.")
    return int(site)


def _member(group: AbstractGroup, element: Element) -> bool:
    """Whether `element` is in `group` (True where membership is not decidable, e.g. a
    product whose factors' elements are not given separately)."""
    try:
        return bool(group.contains(element))
    except NotImplementedError:
        return True


def _check_group(group: Any, dim: int) -> AbstractGroup:
    if not isinstance(group, AbstractGroup):
        raise TypeError(f"`group` must be a taxdl.groups group (the site's group or a "
                        f"subgroup of it), got {group!r}.")
    try:
        return group.on(dim)
    except ValueError as err:
        raise ValueError(f"`group` = {group.name} cannot act on the site's hidden space of "
                         f"dimension {dim}: {err}") from None


def _as_element(element: Any, dim: int) -> Element:
    if isinstance(element, Element):
        e = element
    else:
        m = jnp.asarray(element)
        if m.ndim == 1:  # a permutation of range(dim)
            if not jnp.issubdtype(m.dtype, jnp.integer):
                raise TypeError(f"a 1-D `element` is a permutation of range({dim}) and must "
                                f"hold integers, got dtype {m.dtype}.")
            if m.shape != (dim,) or (_concrete(m) and sorted(np.asarray(m).tolist())
                                     != list(range(dim))):
                raise ValueError(f"`element` must be a permutation of range({dim}) (the "
                                 f"hidden dimension at this site), got {np.asarray(m)}.")
            m = jnp.eye(dim, dtype=jnp.float32)[m]
        e = linear_element(m)
    if e.matrix.shape != (dim, dim):
        raise ValueError(f"the hidden space at this site has dimension {dim}; got an element "
                         f"with matrix shape {e.matrix.shape}.")
    return e


def apply_hidden(model: Any, site: int, element: Any, group: AbstractGroup | None = None
                 ) -> Any:
    """Act with a group element on a hidden space of `model` without changing its function.

    The parts before `site` become g∘prefix and the parts from `site` on suffix∘g⁻¹ (each
    through the parameter transport of the composition rule that makes it closed), so
    the function suffix∘g⁻¹∘g∘prefix is unchanged.

    **Arguments:**

    - `model`: a [`Sequential`][taxdl.nn.Sequential], [`MLP`][taxdl.nn.MLP] or
      `eqx.nn.Sequential` of tagged parts (or a [`Residual`][taxdl.nn.Residual] around
      one).
    - `site`: the hidden space between parts `site − 1` and `site` (see
      [`parameter_symmetries`][taxdl.nn.parameter_symmetries]).
    - `element`: a `taxdl.groups.Element`, a matrix, or a permutation (integer vector).
    - `group`: the group the element belongs to: the site's reported group (default) or a
      subgroup of it (e.g. `Permutation()` at a Bₙ site).

    **Returns:** the reparameterised model (same type).

    Raises `ValueError` when the site has no parameter symmetry, when `group` is not a
    subgroup of the site's group (acting with its elements would change the function),
    and when a concrete `element` is not in `group`. Under `jax.jit` (a traced `element`)
    membership cannot be checked: the element is then taken to be in `group`, and one
    outside it changes the model's function.
    """
    site = _check_site(site)
    layers = _layers(model)
    parts = chain_parts(layers)
    syms = {s.site: s for s in _parameter_symmetries(parts)}
    if site not in syms:
        valid = sorted(syms) or "none"
        raise ValueError(f"site {site} has no parameter symmetry; sites with one: {valid}.")
    sym = syms[site]
    dim = sym.dim
    site_group = sym.group.on(dim)
    given = group is not None
    group = site_group if group is None else _check_group(group, dim)
    if given and not is_subgroup(group, site_group):
        raise ValueError(
            f"`group` = {group.name} is not a subgroup of {site_group.name}, the group of "
            f"site {site}: acting with its elements would change the model's function. Pass "
            f"the site's group or a subgroup of it (or leave `group` out).")
    g = _as_element(element, dim)
    g = Element(g.matrix.astype(jnp.float32) if not jnp.issubdtype(g.matrix.dtype, jnp.inexact)
                else g.matrix, g.shift.astype(jnp.float32) if not jnp.issubdtype(
                    g.shift.dtype, jnp.inexact) else g.shift)
    # a permutation vector (validated above) is in every group containing Sₙ: no need to
    # compile a membership test for it
    permutation = not isinstance(element, Element) and np.ndim(element) == 1
    known = permutation and is_subgroup(Permutation(), group)
    if not known and _concrete(g.matrix) and _concrete(g.shift) and not _member(group, g):
        where = f"{group.name} (`group`)" if given else (
            f"{group.name}, the group of site {site}")
        raise ValueError(
            f"`element` is not in {where}: acting with it would change the model's "
            f"function. Pass an element of {site_group.name}, the site's group (e.g. "
            f"`{type(site_group).__name__}({dim}).sample(key, 1)[0]`), or a subgroup of it "
            "as `group` with an element of that subgroup.")
    g_inv = group.inverse(g)
    prefix = transport_chain(layers[:site], parts[:site], L, g, g_inv, group)
    suffix = transport_chain(layers[site:], parts[site:], R, g_inv, g, group)
    return _rebuild(model, prefix + suffix)


def hidden_states(model: Any, x, site: int):
    """The input of part `site` (the hidden state the site's group acts on) for one
    unbatched input `x`."""
    layers = _layers(model)
    site = _check_site(site)
    if not 0 <= site <= len(layers):
        raise ValueError(f"`site` must be between 0 and {len(layers)} (the number of parts), "
                         f"got {site}.")
    for layer in layers[:site]:
        x = layer(x)
    return x
