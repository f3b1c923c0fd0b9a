"""The catalogue table: rows of (primitive, family, 9 cells), filters and rendering."""

import dataclasses
import html

from ..groups import AbstractGroup, is_subgroup
from ._paper import TABLE_5_2
from ._registry import FAMILIES, registry
from ._symmetry import FLAVOURS, GENERATIONS, Taxonomy, as_flavour, as_generation

_ABBREV = {"closure": "C", "probabilistic": "P", "algebraic": "A"}


@dataclasses.dataclass(frozen=True)
class TableRow:
    """One primitive's row: name, family, formula, reference and its declaration."""

    name: str
    family: str
    formula: str
    reference: str
    taxonomy: Taxonomy

    def cells(self) -> list[str]:
        """The 9 cell names in order closure L, R, E, probabilistic L, R, E, algebraic
        L, R, E (probabilistic cells carry their kind, e.g. `O(n) [data]`, unless
        initialisation-like)."""
        out = []
        for gen in GENERATIONS:
            for fl in FLAVOURS:
                c = self.taxonomy.cell(gen, fl)
                label = c.name
                extra = [k.value for k in c.kinds if k.value != "initialisation"]
                if extra:
                    label += " [" + ",".join(extra) + "]"
                out.append(label)
        return out


HEADERS = ["primitive", "family"] + [f"{_ABBREV[g.value]}-{f.value}" for g in GENERATIONS
                                     for f in FLAVOURS]


class Table:
    """The catalogue (or a filtered part of it).

    `str(table)` is aligned text; `to_markdown()` and `to_html()` render the same rows;
    `rows` is the list of [`TableRow`][taxdl.TableRow].
    """

    def __init__(self, rows: list[TableRow]):
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def names(self) -> list[str]:
        return [r.name for r in self.rows]

    def paper_differences(self) -> list[tuple[str, str, str, str]]:
        """Cells whose verified declaration differs from the isotropic paper's Table 5.2:
        (primitive, cell header, declared here, printed in the paper)."""
        out = []
        for r in self.rows:
            paper = TABLE_5_2.get(r.name)
            if paper is None:
                continue
            for header, ours, theirs in zip(HEADERS[2:], r.cells(), paper):
                if ours != theirs:
                    out.append((r.name, header, ours, theirs))
        return out

    def _matrix(self) -> list[list[str]]:
        marked = {(name, header) for name, header, _, _ in self.paper_differences()}
        return [[r.name, r.family, *(c + ("†" if (r.name, h) in marked else "")
                                      for c, h in zip(r.cells(), HEADERS[2:]))]
                for r in self.rows]

    def _footnotes(self) -> list[str]:
        diffs = self.paper_differences()
        if not diffs:
            return []
        lines = ["† differs from the isotropic paper's Table 5.2 (the declaration here is the "
                 "one the checker verifies):"]
        lines += [f"  {name} {header}: paper {theirs}, here {ours}"
                  for name, header, ours, theirs in diffs]
        return lines

    def __str__(self) -> str:
        body = self._matrix()
        widths = [max(len(h), *(len(row[i]) for row in body)) if body else len(h)
                  for i, h in enumerate(HEADERS)]
        fmt = lambda row: "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
        legend = "C/P/A = closure / probabilistic / algebraic; L/R/E = left / right / equivariant"
        lines = [fmt(HEADERS), fmt(["-" * w for w in widths])]
        lines += [fmt(row) for row in body]
        return "\n".join(lines + ["", legend, *self._footnotes()])

    __repr__ = __str__

    def to_markdown(self) -> str:
        esc = lambda s: s.replace("|", "\\|")
        lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
        lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in self._matrix()]
        notes = self._footnotes()
        if notes:
            lines += ["", notes[0], ""] + ["- " + n.strip() for n in notes[1:]]
        return "\n".join(lines)

    def to_html(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADERS)
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
            for row in self._matrix()
        )
        notes = self._footnotes()
        foot = ""
        if notes:
            items = "".join(f"<li>{html.escape(n.strip())}</li>" for n in notes[1:])
            foot = f"<p>{html.escape(notes[0])}</p><ul>{items}</ul>"
        return (f'<table class="taxdl-table"><thead><tr>{head}</tr></thead>'
                f"<tbody>{rows}</tbody></table>{foot}")


_FILTERS = ("family", "generation", "flavour", "group", "name")


def table(**filters) -> Table:
    """The catalogue of registered primitives as a [`Table`][taxdl.Table].

    **Filters** (all optional, combined with "and"):

    - `family`: e.g. `"activation"` (or a tuple of families).
    - `generation`: `"closure"`, `"probabilistic"` or `"algebraic"`.
    - `flavour`: `"L"`, `"R"` or `"E"`.
    - `group`: a group family (e.g. `taxdl.groups.O()`) or its display name (e.g.
      `"O(n)"`): keep rows where some selected cell's declared group *contains* it (a
      cell bound to a dimension, such as GroupNorm's blocks, is compared in that
      dimension).

    `generation` and `flavour` select the cells `group` looks at (all nine by default);
    without `group` they keep the rows where some selected cell is non-trivial.
    - `name`: substring of the primitive's name (case-insensitive).

    Example: every primitive algebraically O(n)-equivariant:
    `table(generation="algebraic", flavour="E", group=O())`.
    """
    unknown = set(filters) - set(_FILTERS)
    if unknown:
        raise TypeError(
            f"unknown table filter(s) {sorted(unknown)}; valid filters are "
            f"{', '.join(_FILTERS)}."
        )
    entries = registry().values()
    fam = filters.get("family")
    if fam is not None:
        fams = (fam,) if isinstance(fam, str) else _strings(fam)
        if fams is None:
            raise TypeError(f"table filter `family` must be a string or a sequence of strings "
                            f"(each one of {', '.join(FAMILIES)}), got {fam!r}.")
        bad = [f for f in fams if f not in FAMILIES]
        if bad:
            raise ValueError(f"unknown family {bad[0]!r}; expected one of {', '.join(FAMILIES)}.")
        entries = [e for e in entries if e.family in fams]
    if filters.get("name") is not None:
        if not isinstance(filters["name"], str):
            raise TypeError(f"table filter `name` must be a string (a substring of primitive "
                            f"names), got {filters['name']!r}.")
        entries = [e for e in entries if filters["name"].lower() in e.name.lower()]
    rows = [TableRow(e.name, e.family, e.formula, e.reference, e.taxonomy()) for e in entries]
    selected = {k: filters.get(k) is not None for k in ("generation", "flavour")}
    gens = (as_generation(filters["generation"]),) if selected["generation"] else GENERATIONS
    fls = (as_flavour(filters["flavour"]),) if selected["flavour"] else FLAVOURS
    group = filters.get("group")
    if group is not None:
        group = _parse_group(group)
        rows = [r for r in rows if any(
            _contains_family(r.taxonomy.cell(g, f).group, group) for g in gens for f in fls)]
    elif selected["generation"] or selected["flavour"]:
        rows = [r for r in rows if any(
            not r.taxonomy.cell(g, f).trivial for g in gens for f in fls)]
    return Table(rows)


def _strings(value) -> tuple[str, ...] | None:
    """`value` as a tuple of strings, or None when it is not an iterable of strings."""
    try:
        items = tuple(value)
    except TypeError:
        return None
    return items if all(isinstance(v, str) for v in items) else None


def _contains_family(declared: AbstractGroup, wanted: AbstractGroup) -> bool:
    if wanted.__class__.__name__ == "Trivial":
        return True
    if declared.bound and not wanted.bound:
        # a cell bound to its dimension (e.g. GroupNorm's blocks of 8 = 2 × 4) is compared
        # with the wanted family in that dimension, where the block groups are ordered
        try:
            wanted = wanted.on(declared.n)
        except (TypeError, ValueError):
            return False
    return is_subgroup(wanted, declared)


def known_groups() -> dict[str, AbstractGroup]:
    """Display names of the group families understood by `table(group=...)`."""
    from .. import groups as G

    fams = [G.Trivial(), G.Permutation(), G.EvenSignedPermutation(), G.SignedPermutation(),
            G.SignFlips(), G.PointReflection(),
            G.Orthogonal(), G.SpecialOrthogonal(), G.GeneralLinear(), G.OrthogonalComplement(),
            G.Scaling(), G.Scaling(positive=True), G.Translation(), G.ScaleShift(),
            G.ScaleShift(positive=True), G.Simplex(), G.Lorentz(), G.Unitary(),
            G.PermutationPhase(), G.SU2(), G.Translations(), G.Euclidean(), G.Affine(),
            G.Diagonal(), G.DiagonalAffine(), G.Diagonal(positive=True),
            G.DiagonalAffine(positive=True), G.Monomial(), G.PositiveMonomial(),
            G.ScaleTranslation(), G.ScaleTranslation(positive=True), G.MonomialAffine(),
            G.MonomialAffine(positive=True),
            G.ConformalLinear()]
    out = {g.name: g for g in fams}
    for g in fams:   # a class name is its default construction (Scaling: ℝ×, not ℝ×₊)
        out.setdefault(type(g).__name__, g)
    return out


def _displayed_groups() -> dict[str, AbstractGroup]:
    """The groups of every registered declaration's cells, by display name without
    spaces (the names `taxdl table` prints)."""
    out = {}
    for entry in registry().values():
        decl = entry.taxonomy()
        for g in GENERATIONS:
            for f in FLAVOURS:
                cell = decl.cell(g, f)
                out.setdefault(cell.group.name.replace(" ", ""), cell.group)
                # a mismatched representation shows as "SU(2)→SO(3)": its input group
                out.setdefault(cell.name.replace(" ", ""), cell.group)
    return out


def _parse_group(group) -> AbstractGroup:
    if isinstance(group, AbstractGroup):
        return group
    names = known_groups()
    key = str(group).replace(" ", "")
    aliases = {"O": "O(n)", "S": "S_n", "B": "B_n", "D": "D_n", "GL": "GL(n)", "SO": "SO(n)",
               "I": "I_n", "U": "U(n)", "Sn": "S_n", "Bn": "B_n", "Dn": "D_n"}
    key = aliases.get(key, key)
    if key not in names:
        # any group the catalogue itself displays in a cell (ℤ₂^n, ±I_n, products, …)
        names = {**_displayed_groups(), **names}
    if key not in names:
        raise ValueError(
            f"unknown group {group!r}; expected a taxdl.groups group or one of "
            f"{', '.join(sorted(set(names)))}."
        )
    return names[key]
