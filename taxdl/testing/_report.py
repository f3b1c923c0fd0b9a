"""Results of checks: per-cell records, the report and the exceptions."""

import dataclasses
from typing import Any

import numpy as np


def _fmt(x) -> str:
    return np.array2string(np.asarray(x), precision=4, max_line_width=100, threshold=64,
                           floatmode="maxprec")


@dataclasses.dataclass
class Counterexample:
    """Where a relation fails: the group element, the input and both sides (algebraic
    and closure checks), or the two-sample statistic (probabilistic checks)."""

    group: str
    matrix: Any = None
    shift: Any = None
    inputs: tuple = ()
    lhs: Any = None
    rhs: Any = None
    error: float = float("nan")
    tolerance: float = float("nan")
    member: str = "the primitive"
    statistic: float = float("nan")
    p_value: float = float("nan")
    threshold: float = float("nan")
    probe: str = ""

    def describe(self, indent: str = "  ") -> str:
        if np.isfinite(self.statistic):
            return (f"{indent}two-sample test: Kolmogorov–Smirnov D = {self.statistic:.4g} "
                    f"on probe {self.probe}, p = {self.p_value:.3g} < {self.threshold:.3g}")
        shifted = self.shift is not None and np.any(np.asarray(self.shift) != 0)
        lines = [f"{indent}group element of {self.group} "
                 f"({'x ↦ M x + t' if shifted else 'x ↦ M x'}):",
                 _indent(f"M = {_fmt(self.matrix)}", indent * 2)]
        if shifted:
            lines.append(_indent(f"t = {_fmt(self.shift)}", indent * 2))
        lines.append(f"{indent}function: {self.member}")
        for i, x in enumerate(self.inputs):
            name = "input x" if len(self.inputs) == 1 else f"input x[{i}]"
            lines.append(_indent(f"{name} = {_fmt(x)}", indent))
        lines.append(_indent(f"lhs = {_fmt_tree(self.lhs)}", indent))
        lines.append(_indent(f"rhs = {_fmt_tree(self.rhs)}", indent))
        lines.append(f"{indent}max|lhs − rhs| = {self.error:.4g} > tolerance "
                     f"{self.tolerance:.4g} (ratio {self.error / self.tolerance:.3g})")
        return "\n".join(lines)


def _fmt_tree(tree) -> str:
    if isinstance(tree, (tuple, list)):
        return "(" + ", ".join(_fmt(t) for t in tree) + ")"
    return _fmt(tree)


def _indent(text: str, indent: str) -> str:
    return "\n".join(indent + line for line in text.splitlines())


@dataclasses.dataclass
class MaximalityResult:
    """The search for a counterexample under one immediate supergroup."""

    group: str
    found: bool | None
    counterexample: Counterexample | None = None
    note: str = ""
    declarable: bool = True
    group_family: Any = dataclasses.field(default=None, repr=False)
    searched: bool = False  # found is None after a search that settled nothing

    def __str__(self) -> str:
        if self.found is None:
            return f"{self.group}: {'inconclusive' if self.searched else 'not checked'} " \
                f"({self.note})"
        if not self.found and not self.declarable:
            return f"{self.group}: holds too (no counterexample), but {self.note}"
        if self.found:
            c = self.counterexample
            if c is not None and np.isfinite(c.statistic):
                return f"{self.group}: counterexample (p = {c.p_value:.2g})"
            ratio = c.error / c.tolerance if c is not None else float("nan")
            return f"{self.group}: counterexample (error/tol = {ratio:.3g})"
        return f"{self.group}: NO counterexample: declaration may not be maximal"


NOT_CHECKABLE = "not checkable"
"""The status of a cell whose check needs a hook the primitive does not register (the
cell's note names it); it does not pass, and the other cells are still checked."""


@dataclasses.dataclass
class CellResult:
    """The outcome for one cell of the declaration.

    `status` is `"passed"`, `"failed"` (a counterexample), `"not maximal"` (a supergroup
    also holds), `"not checkable"` (the check needs a hook the primitive does not
    register; `note` names it) or `"skipped"` (nothing to check; `note` says why). Only
    passed and skipped cells pass.
    """

    generation: str
    flavour: str
    group: str
    kind: str = ""
    status: str = "passed"  # passed | failed | not maximal | not checkable | skipped
    checks: int = 0
    max_error: float = 0.0
    tolerance: float = float("nan")
    artefacts: int = 0
    p_value: float = float("nan")
    maximality: list[MaximalityResult] = dataclasses.field(default_factory=list)
    counterexample: Counterexample | None = None
    note: str = ""

    @property
    def passed(self) -> bool:
        return self.status in ("passed", "skipped")

    @property
    def label(self) -> str:
        kind = f" [{self.kind}]" if self.kind else ""
        return f"{self.generation} {self.flavour} {self.group}{kind}"

    def summary(self) -> str:
        head = f"{self.status.upper():<11} {self.label}"
        if self.status in ("skipped", NOT_CHECKABLE):
            return f"{head}: {self.note}"
        parts = []
        if np.isfinite(self.p_value):
            parts.append(f"{self.checks} samples, min p = {self.p_value:.3g}")
        elif self.checks:
            parts.append(f"{self.checks} checks, max error {self.max_error:.3g} "
                         f"(tolerance {self.tolerance:.3g})")
            if self.artefacts:
                parts.append(f"{self.artefacts} boundary artefacts forgiven")
        if self.note:
            parts.append(self.note)
        lines = [head + (": " + "; ".join(parts) if parts else "")]
        for m in self.maximality:
            lines.append(f"{'':<14}maximality under {m}")
        return "\n".join(lines)


@dataclasses.dataclass
class Report:
    """What [`check`][taxdl.testing.check] found, cell by cell."""

    primitive: str
    dtype: str
    n: int | None
    cells: list[CellResult] = dataclasses.field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.cells)

    @property
    def failures(self) -> list[CellResult]:
        return [c for c in self.cells if not c.passed]

    def cell(self, generation: str, flavour: str) -> CellResult:
        for c in self.cells:
            if c.generation == generation and c.flavour == flavour:
                return c
        raise KeyError(f"no result for the {generation} {flavour} cell.")

    def __str__(self) -> str:
        verdict = "PASSED" if self.passed else "FAILED"
        lines = [f"taxdl check {self.primitive} (n={self.n}, {self.dtype}): {verdict}"]
        lines += ["  " + c.summary().replace("\n", "\n  ") for c in self.cells]
        return "\n".join(lines)


class SymmetryViolation(AssertionError):
    """A declared symmetry does not hold (or a declaration is not maximal).

    The message names the cell, the group element, the shrunk input, both
    sides of the relation and the error against the tolerance. Attributes: `cell` (a
    [`CellResult`][taxdl.testing.CellResult]), `counterexample`, `report` (the whole
    [`Report`][taxdl.testing.Report], when raised by `check`).
    """

    def __init__(self, message: str, cell: CellResult | None = None,
                 counterexample: Counterexample | None = None, report: Report | None = None):
        super().__init__(message)
        self.cell = cell
        self.counterexample = counterexample
        self.report = report


def violation_message(prim_name: str, cell: CellResult, ce: Counterexample,
                      relation: str) -> str:
    return (f"{prim_name}: the {cell.label} declaration does not hold: {relation}\n"
            + ce.describe())


def not_checkable_message(prim_name: str, cell: CellResult) -> str:
    return f"{prim_name}: the {cell.label} cell cannot be checked: {cell.note}"


def maximality_message(prim_name: str, cell: CellResult) -> str:
    missing = [m for m in cell.maximality if m.found is False and m.declarable]
    notes = "".join(f"\n  {m.group}: {m.note}" for m in missing if m.note)
    return (f"{prim_name}: the {cell.label} declaration may not be maximal: no "
            f"counterexample was found under the immediate supergroup(s) "
            f"{', '.join(m.group for m in missing)}. Declare the largest group that holds, "
            "or check the primitive really breaks it." + _more_samples(cell) + notes)


def _more_samples(cell: CellResult) -> str:
    """For a probabilistic cell: a law that differs from its moved image only weakly (in
    an odd moment, say) needs more random functions than the default to be told apart."""
    if cell.generation != "probabilistic" or not cell.checks:
        return ""
    return (f" A weak difference in law can pass unseen with {cell.checks} random functions "
            f"per side: check again with more (e.g. `samples={4 * cell.checks}`).")
