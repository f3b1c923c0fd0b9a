"""Helpers shared by the activation modules."""

from ...groups import AbstractGroup
from ...taxonomy import Cell, Taxonomy
from ._radial import holds_arrays


def fixed(equivariant: AbstractGroup | Cell | None = None,
          invariant: AbstractGroup | Cell | None = None,
          left: AbstractGroup | Cell | None = None, note: str = "") -> Taxonomy:
    """The declaration of a parameter-free map $f$: its class is {f} and its distribution a
    point mass, so closure, probabilistic and algebraic cells coincide (for all g:
    g∘f ∈ {f} ⟺ g∘f = f). `invariant` is the right (R) cell, `left` the left (L) one."""
    row = (left, invariant, equivariant)
    return Taxonomy(closure=row, probabilistic=row, algebraic=row, note=note)


def static_callable(fn, name: str, who: str, *, optional: bool = False, functional: str = ""):
    """Check a function kept in a static field: callable (or None when `optional`) and
    holding no arrays, which a static field would neither trace nor train (σ with
    trainable parameters belongs to the functional form, called from a module that
    holds σ as a field)."""
    if fn is None and optional:
        return fn
    if not callable(fn):
        kind = "a callable or None" if optional else "a callable"
        raise TypeError(f"{who}: `{name}` must be {kind}, got {fn!r}.")
    if holds_arrays(fn):
        hint = (f"; for trainable parameters call taxdl.nn.functional.{functional}(x, {name})"
                " from a module that holds them as fields") if functional else ""
        raise TypeError(f"{who}: `{name}` holds arrays, but it is a fixed (static) "
                        f"hyperparameter of the module, so they would be neither traced nor "
                        f"trained{hint}.")
    return fn
