"""Property-test any primitive's declared symmetry (DESIGN §3).

- [`check`][taxdl.testing.check]: verify a whole declaration (every cell, and the
  maximality of every declared group) and return a [`Report`][taxdl.testing.Report].
- Lower-level pieces, each usable alone: [`symmetry_error`][taxdl.testing.symmetry_error]
  (pure JAX, both sides of one relation), [`assert_algebraic`][taxdl.testing.assert_algebraic],
  [`assert_probabilistic`][taxdl.testing.assert_probabilistic],
  [`assert_closure`][taxdl.testing.assert_closure],
  [`assert_maximal`][taxdl.testing.assert_maximal].
- [`taxdl.testing.strategies`][taxdl.testing.strategies]: Hypothesis strategies for group
  elements and edge-case inputs.
- [`relieve_map_pressure`][taxdl.testing.relieve_map_pressure]: keeps a long checking
  session below the operating system's cap on memory mappings (compiled programs hold
  them); `check` calls it before it starts.

Needs Hypothesis (`pip install "taxdl[testing]"`); `import taxdl` does not.
"""

try:
    import hypothesis as _hypothesis  # noqa: F401
except ModuleNotFoundError as _missing:  # pragma: no cover - depends on the environment
    raise ModuleNotFoundError(
        'taxdl.testing needs Hypothesis: pip install "taxdl[testing]" (or hypothesis '
        '>= 6.170).', name=_missing.name) from _missing

from ._assertions import assert_algebraic as assert_algebraic
from ._assertions import assert_closure as assert_closure
from ._assertions import assert_maximal as assert_maximal
from ._assertions import assert_probabilistic as assert_probabilistic
from ._check import check as check
from ._engine import act as act
from ._engine import default_tolerances as default_tolerances
from ._engine import symmetry_error as symmetry_error
from ._hypothesis import hypothesis_settings as hypothesis_settings
from ._hypothesis import register_profiles as register_profiles
from ._memory import map_usage as map_usage
from ._memory import relieve_map_pressure as relieve_map_pressure
from ._report import CellResult as CellResult
from ._report import Counterexample as Counterexample
from ._report import MaximalityResult as MaximalityResult
from ._report import Report as Report
from ._report import SymmetryViolation as SymmetryViolation
from . import strategies as strategies
