"""The 3 generations × 3 flavours symmetry declaration (DESIGN §1; isotropic paper §5.2,
eqs 30–39)."""

import enum
from collections.abc import Iterator
from typing import NamedTuple

import equinox as eqx

from ..groups import AbstractGroup, Trivial, is_subgroup


class Generation(enum.Enum):
    """How strongly a symmetry holds (isotropic paper §5.2, eq 30: algebraic ⇒
    probabilistic ⇒ closure)."""

    CLOSURE = "closure"
    PROBABILISTIC = "probabilistic"
    ALGEBRAIC = "algebraic"


class Flavour(enum.Enum):
    """Where the group acts: left (output, g∘f), right (input, f∘g) or both
    (equivariant, g⁻¹∘f∘g)."""

    LEFT = "L"
    RIGHT = "R"
    EQUIVARIANT = "E"


class Kind(enum.Enum):
    """What a probabilistic claim is a probability over (isotropic paper §5.2)."""

    INITIALISATION = "initialisation"
    DATA = "data"
    TIME = "time"


GENERATIONS = (Generation.CLOSURE, Generation.PROBABILISTIC, Generation.ALGEBRAIC)
FLAVOURS = (Flavour.LEFT, Flavour.RIGHT, Flavour.EQUIVARIANT)


def _as_enum(cls, value, what):
    if isinstance(value, cls):
        return value
    for member in cls:
        if value in (member.value, member.name, member.name.lower()):
            return member
    valid = ", ".join(repr(m.value) for m in cls)
    raise ValueError(f"unknown {what} {value!r}; expected one of {valid}.")


def as_generation(value) -> Generation:
    return _as_enum(Generation, value, "generation")


def as_flavour(value) -> Flavour:
    return _as_enum(Flavour, value, "flavour")


def as_kind(value) -> Kind:
    return _as_enum(Kind, value, "probabilistic kind")


class Cell(eqx.Module):
    """One cell of a declaration: the maximal group for a (generation, flavour).

    **Arguments:**

    - `group`: the group family (unbound), e.g. `Orthogonal()`.
    - `kinds`: for probabilistic cells, what the probability is over
      (initialisation-, data- or time-like; several allowed).
    - `out`: for mismatched representations, the group acting on the output (e.g.
      `SU2(rep="adjoint")` for the Bloch activation); `None` means the same as `group`.
    - `args`: which positional arguments the group acts on (`None` = all of them), for
      multi-argument primitives.
    """

    group: AbstractGroup
    kinds: tuple[Kind, ...] = ()
    out: AbstractGroup | None = None
    args: tuple[int, ...] | None = None

    def __check_init__(self):
        if not isinstance(self.group, AbstractGroup):
            raise TypeError(f"a taxonomy cell needs a group, got {self.group!r}.")
        if self.out is not None and not isinstance(self.out, AbstractGroup):
            raise TypeError(f"`out` must be a group or None, got {self.out!r}.")

    @property
    def trivial(self) -> bool:
        return isinstance(self.group, Trivial)

    @property
    def name(self) -> str:
        if self.out is not None and self.out.name != self.group.name:
            out = self.out.name  # e.g. "SU(2)→SO(3)" already names the input group
            return out if out.startswith(self.group.name + "→") else f"{self.group.name}→{out}"
        return self.group.name

    def __str__(self) -> str:
        return self.name


class Row(NamedTuple):
    """The three flavours of one generation; each entry a group or a `Cell`."""

    L: AbstractGroup | Cell = Trivial()
    R: AbstractGroup | Cell = Trivial()
    E: AbstractGroup | Cell = Trivial()


def _as_cell(value, generation: Generation, flavour: Flavour, default_kinds) -> Cell:
    if isinstance(value, Cell):
        cell = value
    elif isinstance(value, AbstractGroup):
        cell = Cell(value)
    elif value is None:
        cell = Cell(Trivial())
    else:
        raise TypeError(
            f"taxonomy cell {generation.value} {flavour.value}: expected a group or a Cell, "
            f"got {value!r}."
        )
    if generation is Generation.PROBABILISTIC:
        if not cell.kinds and not cell.trivial:
            cell = Cell(cell.group, tuple(default_kinds), cell.out, cell.args)
    elif cell.kinds:
        raise ValueError(
            f"taxonomy cell {generation.value} {flavour.value}: only probabilistic cells "
            "have kinds (initialisation/data/time)."
        )
    return cell


def _as_row(value, generation: Generation) -> Row:
    if value is None:
        return Row()
    if isinstance(value, Row):
        return value
    if isinstance(value, dict):
        unknown = set(value) - {"L", "R", "E"}
        if unknown:
            raise ValueError(f"{generation.value} row: unknown flavour keys {sorted(unknown)}; "
                             "use 'L', 'R', 'E'.")
        return Row(**value)
    if isinstance(value, (tuple, list)):
        if len(value) != 3:
            raise ValueError(
                f"{generation.value} row must have 3 entries (L, R, E), got {len(value)}."
            )
        return Row(*value)
    raise TypeError(f"{generation.value} row: expected a Row, dict or 3-tuple, got {value!r}.")


class InconsistentTaxonomyError(ValueError):
    """A declaration violates algebraic ⊆ probabilistic ⊆ closure (eq 30)."""


class Taxonomy(eqx.Module):
    """A primitive's symmetry declaration: the maximal group for each of the 3 generations
    (closure, probabilistic, algebraic) × 3 flavours (left, right, equivariant).

    Definitions (isotropic paper §5.2, eqs 31–39), for all f ∈ F and g ∈ G:

    | generation | L | R | E |
    |---|---|---|---|
    | closure | g∘f ∈ F | f∘g ∈ F | g⁻¹∘f∘g ∈ F |
    | probabilistic | P(g∘f) = P(f) | P(f∘g) = P(f) | P(g⁻¹∘f∘g) = P(f) |
    | algebraic | g∘f = f | f∘g = f | f∘g = g∘f |

    Construction enforces eq 30 per flavour: algebraic ⊆ probabilistic ⊆ closure.

    **Arguments:**

    - `closure`, `probabilistic`, `algebraic`: each a `Row(L=..., R=..., E=...)`, a dict
      with keys `"L"`, `"R"`, `"E"`, or a 3-tuple; entries are groups or `Cell`s;
      omitted entries are the trivial group.
    - `kind`: default kind(s) of the probabilistic cells: `"initialisation"`, `"data"`,
      `"time"` or a tuple of them.
    - `note`: free text shown in tables (e.g. where the declaration departs from a paper).

    **Example:**

    ```python
    from taxdl.groups import GL, O, I
    affine = Taxonomy(closure=(GL(), GL(), GL()), probabilistic=(O(), O(), O()))
    ```
    """

    closure: Row
    probabilistic: Row
    algebraic: Row
    note: str = eqx.field(static=True, default="")

    def __init__(self, closure=None, probabilistic=None, algebraic=None, *,
                 kind="initialisation", note: str = ""):
        kinds = tuple(as_kind(k) for k in ((kind,) if isinstance(kind, (str, Kind)) else kind))
        rows = {}
        for gen, value in ((Generation.CLOSURE, closure),
                           (Generation.PROBABILISTIC, probabilistic),
                           (Generation.ALGEBRAIC, algebraic)):
            row = _as_row(value, gen)
            rows[gen] = Row(*(_as_cell(v, gen, f, kinds) for v, f in zip(row, FLAVOURS)))
        self.closure = rows[Generation.CLOSURE]
        self.probabilistic = rows[Generation.PROBABILISTIC]
        self.algebraic = rows[Generation.ALGEBRAIC]
        self.note = note
        self._check_consistency()

    def _check_consistency(self) -> None:
        for flavour in FLAVOURS:
            chain = [(g, self.cell(g, flavour)) for g in
                     (Generation.ALGEBRAIC, Generation.PROBABILISTIC, Generation.CLOSURE)]
            for (g_small, small), (g_big, big) in zip(chain, chain[1:]):
                if not is_subgroup(small.group, big.group):
                    raise InconsistentTaxonomyError(
                        f"inconsistent declaration in flavour {flavour.value}: the "
                        f"{g_small.value} cell declares {small.name}, which is not a subgroup "
                        f"of the {g_big.value} cell's {big.name}. Algebraic ⇒ probabilistic ⇒ "
                        f"closure (eq 30): widen the {g_big.value} {flavour.value} cell to "
                        f"contain {small.name}, or narrow the {g_small.value} one."
                    )

    def row(self, generation) -> Row:
        return getattr(self, as_generation(generation).value)

    def cell(self, generation, flavour) -> Cell:
        return getattr(self.row(generation), as_flavour(flavour).value)

    def __iter__(self) -> Iterator[tuple[Generation, Flavour, Cell]]:
        for gen in GENERATIONS:
            for fl in FLAVOURS:
                yield gen, fl, self.cell(gen, fl)

    def nontrivial(self) -> list[tuple[Generation, Flavour, Cell]]:
        """The cells that declare more than the trivial group (what a check verifies)."""
        return [(g, f, c) for g, f, c in self if not c.trivial]

    def replace(self, **cells) -> "Taxonomy":
        """A copy with some cells replaced, keyed like `algebraic_E=O()`.

        The result is checked for consistency like any declaration.
        """
        rows = {g: dict(zip("LRE", self.row(g))) for g in GENERATIONS}
        for key, value in cells.items():
            try:
                gname, fname = key.rsplit("_", 1)
                gen, fl = as_generation(gname), as_flavour(fname)
            except ValueError:
                raise ValueError(
                    f"unknown cell {key!r}; use '<generation>_<flavour>', e.g. 'algebraic_E'."
                ) from None
            rows[gen][fl.value] = value
        return Taxonomy(*(Row(**rows[g]) for g in GENERATIONS), note=self.note)

    def __str__(self) -> str:
        head = f"{'':<14}{'L':<22}{'R':<22}{'E':<22}"
        lines = [head]
        for gen in GENERATIONS:
            r = self.row(gen)
            lines.append(f"{gen.value:<14}" + "".join(f"{c.name:<22}" for c in r))
        return "\n".join(lines)
