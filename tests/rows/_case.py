import dataclasses
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class Case:
    """One row of the primitive table.

    - `name`: the primitive's registry name (`taxdl.registry()` key).
    - `make`: zero-argument factory of the instance to check (fixed keys).
    - `n`: dimension for dimension-free primitives (None when the instance fixes it).
    - `check_kwargs`: extra keyword arguments for `taxdl.testing.check` (both legs).
    - `float32_kwargs`: extra keyword arguments for the float32 leg only (e.g. maximality
      off where a hyperparameter is below float32 resolution).
    - `float64`: also run the float64 leg.
    """

    name: str
    make: Callable[[], Any]
    n: int | None = None
    check_kwargs: dict = dataclasses.field(default_factory=dict)
    float32_kwargs: dict = dataclasses.field(default_factory=dict)
    float64: bool = True

    def __str__(self) -> str:
        return self.name
