"""Every catalogued primitive's declaration, checked by `taxdl.testing.check` from the one
table of primitives (tests/primitives.py), in float32 and in float64."""

import jax.numpy as jnp
import pytest

import taxdl
from primitives import PRIMITIVES
from taxdl.testing import check

# float32: every generation, maximality included; ≥ 1000 (element, input) rows per
# algebraic/closure cell (32 Hypothesis examples × batches of 32); closure cells also
# searched for a witness of a larger closure group (`fit_closure`).
F32 = dict(examples=32, batch=32, samples=1024, fit_closure=True)
# float64: every generation too, maximality included; 4 Hypothesis examples × batches of
# 32 per algebraic/closure cell (the float32 leg gives the breadth, this one float64's
# tight tolerances).
F64 = dict(examples=4, batch=32, samples=1024)


def _kwargs(case, base, *extra):
    kwargs = dict(base)
    kwargs.update(case.check_kwargs)
    for more in extra:
        kwargs.update(more)
    return kwargs


@pytest.mark.parametrize("case", PRIMITIVES, ids=str)
def test_declaration_float32(case):
    check(case.make, case.n, dtype=jnp.float32, **_kwargs(case, F32, case.float32_kwargs))


@pytest.mark.parametrize("case", [c for c in PRIMITIVES if c.float64], ids=str)
def test_declaration_float64(case):
    check(case.make, case.n, dtype=jnp.float64, **_kwargs(case, F64))


def test_registry_and_table_agree():
    registered = set(taxdl.registry())
    table = {c.name for c in PRIMITIVES}
    assert registered - table == set(), f"registered but without a row: {registered - table}"
    assert table - registered == set(), f"rows without a registered primitive: {table - registered}"
