"""The catalogue of registered primitives and `taxonomy(obj)`.

Primitives are registered explicitly (no subclass scanning) with `register`, which
records the family, a description and an example factory (for classes whose declaration
depends on hyperparameters).
"""

import dataclasses
import functools as ft
from collections.abc import Callable
from typing import Any

from ._primitive import AbstractPrimitive
from ._symmetry import Taxonomy

FAMILIES = (
    "activation",
    "layer",
    "normaliser",
    "initialiser",
    "operation",
    "loss",
    "optimiser",
    "model",
)


@dataclasses.dataclass(frozen=True)
class Entry:
    """One catalogue entry.

    - `name`: display name (defaults to the class name).
    - `cls`: the primitive class.
    - `family`: one of `FAMILIES`.
    - `formula`: a short formula shown in the table.
    - `example`: zero-argument factory of a representative instance (used when the
      declaration is instance-level, by the table, the CLI and the test suite).
    - `reference`: where the primitive comes from (paper and equation).
    """

    name: str
    cls: type
    family: str
    formula: str = ""
    example: Callable[[], Any] | None = None
    reference: str = ""

    def instance(self) -> Any:
        if self.example is not None:
            return self.example()
        return self.cls()

    def taxonomy(self) -> Taxonomy:
        declared = vars_taxonomy(self.cls)
        if isinstance(declared, Taxonomy):
            return declared
        return taxonomy(self.instance())


_REGISTRY: dict[str, Entry] = {}


def vars_taxonomy(cls: type):
    """The class-level declaration, or None when it is a property (instance-level)."""
    for klass in cls.__mro__:
        if "taxonomy" in vars(klass):
            value = vars(klass)["taxonomy"]
            return value if isinstance(value, Taxonomy) else None
    return None


def register(cls=None, *, family: str, name: str | None = None, formula: str = "",
             example: Callable[[], Any] | None = None, reference: str = ""):
    """Add a primitive class to the catalogue (usable as a decorator).

    **Arguments:**

    - `family`: one of "activation", "layer", "normaliser", "initialiser", "operation",
      "loss", "optimiser", "model".
    - `name`: display name; defaults to the class name. Names are unique.
    - `formula`: short formula for tables.
    - `example`: zero-argument factory for a representative instance; required when the
      class's `taxonomy` is a property (depends on hyperparameters).
    - `reference`: paper and equation.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; expected one of {', '.join(FAMILIES)}.")

    def wrap(klass):
        entry_name = name or klass.__name__
        if entry_name in _REGISTRY and _REGISTRY[entry_name].cls is not klass:
            raise ValueError(f"a primitive named {entry_name!r} is already registered "
                             f"({_REGISTRY[entry_name].cls.__qualname__}).")
        if vars_taxonomy(klass) is None and example is None and not hasattr(klass, "taxonomy"):
            raise TypeError(f"{klass.__name__} has no `taxonomy`; declare one before "
                            "registering.")
        _REGISTRY[entry_name] = Entry(entry_name, klass, family, formula, example, reference)
        return klass

    return wrap if cls is None else wrap(cls)


def registry() -> dict[str, Entry]:
    """All catalogue entries by name (a copy), importing taxdl's own primitives first."""
    _load_builtin()
    return dict(_REGISTRY)


def _load_builtin() -> None:
    import importlib

    for module in ("taxdl.nn", "taxdl.optim"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:  # pragma: no cover - partial installs
            if err.name != module:
                raise


@ft.singledispatch
def taxonomy(obj: Any) -> Taxonomy:
    """The symmetry declaration of a primitive class, a primitive instance, or a composed
    model (whose declaration is inferred from its parts by registered rules).

    Raises `TypeError` for objects that carry no declaration.
    """
    if isinstance(obj, type):
        declared = vars_taxonomy(obj)
        if declared is not None:
            return declared
        for entry in registry().values():
            if entry.cls is obj:
                return taxonomy(entry.instance())
        raise TypeError(
            f"{obj.__name__}'s taxonomy depends on its hyperparameters; pass an instance."
        )
    declared = getattr(obj, "taxonomy", None)
    if isinstance(declared, Taxonomy):
        return declared
    raise TypeError(
        f"{type(obj).__name__} carries no taxonomy: subclass taxdl.AbstractPrimitive and "
        "declare `taxonomy`, or register an inference rule with "
        "`taxdl.taxonomy.taxonomy.register`."
    )


@taxonomy.register
def _(obj: AbstractPrimitive) -> Taxonomy:
    return obj.taxonomy


def has_taxonomy(obj: Any) -> bool:
    """Whether `taxonomy(obj)` gives a declaration (instead of raising `TypeError`)."""
    try:
        return isinstance(taxonomy(obj), Taxonomy)
    except TypeError:
        return False
