"""One relation at a time: `assert_algebraic`, `assert_probabilistic`, `assert_closure`,
`assert_maximal`. Each builds the same machinery `check` uses, for one cell."""

import contextlib

import jax
import jax.numpy as jnp

from ..groups import AbstractGroup
from ..taxonomy import Cell, Generation
from . import _check as C
from . import _engine as E
from ._report import CellResult, SymmetryViolation, maximality_message


def _context(f, n, dtype, shapes, field, **kwargs):
    if shapes is None and not C._has_declaration(f):
        if n is None:
            raise ValueError("pass `n` (one input of shape (n,)) or `shapes` for a plain "
                             "function.")
        shapes = ((n,),)
    ctx, _ = C.make_context(f, n, dtype, shapes=shapes, field=field, **kwargs)
    return ctx


def _x64(dtype):
    wide = E.real_dtype(dtype) == jnp.float64
    return jax.enable_x64(True) if wide else contextlib.nullcontext()


def _run(generation: Generation, f, group: AbstractGroup, flavour, n, *, dtype, shapes,
         field, out, args, kind, maximality, **kwargs) -> CellResult:
    flavour = E.as_flavour(flavour)
    with _x64(dtype):
        ctx = _context(f, n, dtype, shapes, field, **kwargs)
        cell = Cell(group, out=out, args=None if args is None else tuple(args))
        result = C.check_cell(ctx, generation, flavour, cell, kind, maximality)
    if result.status in ("failed", C.NOT_CHECKABLE):
        raise C.failure_for_cell(ctx.name, result)
    if result.status == "not maximal":
        raise SymmetryViolation(maximality_message(ctx.name, result), result)
    return result


def assert_algebraic(f, group: AbstractGroup, flavour="E", n: int | None = None, *,
                     dtype=jnp.float32, shapes=None, field: str = "real",
                     out: AbstractGroup | None = None, args=None, examples: int = 50,
                     batch: int = 32, key=None, maximality: bool = False,
                     rtol: float | None = None, atol: float | None = None) -> CellResult:
    """Assert $f(g\\cdot x) = g\\cdot f(x)$ (E), $f(g\\cdot x) = f(x)$ (R) or
    $g\\cdot f(x) = f(x)$ (L) for all $g$ in `group`.

    **Arguments:**

    - `f`: a primitive (its `signature` hook gives the inputs) or any function of
      unbatched arrays (then give `n` for one input of shape `(n,)`, or `shapes`).
    - `group`: a group family (bound to the input dimension) or a bound group.
    - `flavour`: `"L"`, `"R"` or `"E"`.
    - `out`: the group acting on outputs for mismatched representations.
    - `args`: indices of the arguments the group acts on (default all).
    - `examples`, `batch`, `key`, `rtol`, `atol`: as for [`check`][taxdl.testing.check].
    - `maximality`: also require a counterexample under every immediate supergroup.

    **Returns:** the [`CellResult`][taxdl.testing.CellResult]; raises
    [`SymmetryViolation`][taxdl.testing.SymmetryViolation] with a shrunk counterexample.
    """
    return _run(Generation.ALGEBRAIC, f, group, flavour, n, dtype=dtype, shapes=shapes,
                field=field, out=out, args=args, kind="", maximality=maximality,
                examples=examples, batch=batch, key=key, rtol=rtol, atol=atol)


def assert_closure(primitive, group: AbstractGroup, flavour="E", n: int | None = None, *,
                   dtype=jnp.float32, examples: int = 50, batch: int = 32, key=None,
                   rtol: float | None = None, atol: float | None = None,
                   members: int = 2) -> CellResult:
    """Assert the closure relation through the primitive's `transport` hook:
    $f_{g\\cdot θ} = g∘f_θ$ (L), $f_θ∘g$ (R) or $g^{-1}∘f_θ∘g$ (E), at the primitive's
    parameters and at `members` generic members of its class (the `perturb` hook)."""
    return _run(Generation.CLOSURE, primitive, group, flavour, n, dtype=dtype, shapes=None,
                field="real", out=None, args=None, kind="", maximality=False,
                examples=examples, batch=batch, key=key, rtol=rtol, atol=atol,
                members=members)


def assert_probabilistic(primitive, group: AbstractGroup, flavour="E", n: int | None = None,
                         *, kind: str = "initialisation", dtype=jnp.float32,
                         samples: int = 1024, test_elements: int = 3, alpha: float = 1e-3,
                         data_batch: int = 64, key=None, maximality: bool = False
                         ) -> CellResult:
    """Assert $P(g∘f) = P(f)$ (L), $P(f∘g) = P(f)$ (R) or $P(g^{-1}∘f∘g) = P(f)$ (E):
    `samples` random functions (from `reinitialise`, `random_call` or `data_call`
    according to `kind`) are compared with as many transformed by each of
    `test_elements` group elements, by Kolmogorov–Smirnov tests on scalar probes at a
    fixed seed; the false-positive rate is at most `alpha`."""
    return _run(Generation.PROBABILISTIC, primitive, group, flavour, n, dtype=dtype,
                shapes=None, field="real", out=None, args=None, kind=kind,
                maximality=maximality, samples=samples, test_elements=test_elements,
                alpha=alpha, data_batch=data_batch, key=key)


def assert_maximal(f, group: AbstractGroup, flavour="E", n: int | None = None, *,
                   generation="algebraic", kind: str = "initialisation", dtype=jnp.float32,
                   shapes=None, field: str = "real", out: AbstractGroup | None = None,
                   args=None, examples: int = 50, batch: int = 32, samples: int = 1024,
                   key=None, fit_closure: bool = False) -> CellResult:
    """Assert that `group` is maximal for the relation: every immediate supergroup in
    the hierarchy yields a counterexample (the relation for `group` itself is not
    re-verified). Raises [`SymmetryViolation`][taxdl.testing.SymmetryViolation] naming
    the supergroups under which none was found ("declaration may not be maximal").
    For a closure relation, `fit_closure=True` searches for witnesses as
    [`check`][taxdl.testing.check] does. `out` and `args` are as for
    [`assert_algebraic`][taxdl.testing.assert_algebraic] (by default the group acts on
    the arguments the primitive's `signature` names)."""
    gen = generation if isinstance(generation, Generation) else Generation(generation)
    with _x64(dtype):
        ctx = _context(f, n, dtype, shapes, field, examples=examples, batch=batch,
                       samples=samples, key=key, fit_closure=fit_closure)
        flav = E.as_flavour(flavour)
        kind = kind if gen is Generation.PROBABILISTIC else ""
        mode = C._mode(ctx, gen, kind or "initialisation")
        cell = Cell(group, out=out, args=None if args is None else tuple(args))
        result = CellResult(gen.value, flav.value, cell.name, kind)
        try:
            plan = C.make_plan(ctx, flav, group, out, C._acted(ctx, cell))
        except C.NotApplicable as err:
            raise ValueError(f"{ctx.name}: maximality of the {result.label} cell cannot be "
                             f"checked: {str(err).rstrip('.')}.") from None
        result.group = plan.sample.name
        result.maximality = C._maximal(ctx, mode, kind or "initialisation", flav, plan)
    if any(m.found is False for m in result.maximality):
        result.status = "not maximal"
        raise SymmetryViolation(maximality_message(ctx.name, result), result)
    return result


__all__ = ["assert_algebraic", "assert_closure", "assert_maximal", "assert_probabilistic"]
