"""`taxdl check pkg.module:Name` / `taxdl check path/to/file.py:Name`: property-test a
primitive's declared symmetry and print the report (exit 0 when it holds, 1 when not,
2 on a usage error)."""

import importlib
import importlib.util
import os
import sys


def add_arguments(parser) -> None:
    parser.add_argument("target", help="what to check: 'pkg.module:Name' or "
                        "'path/to/file.py:Name' (a primitive class with a default constructor, "
                        "an instance, or a zero-argument factory)")
    parser.add_argument("--n", type=int, default=None,
                        help="dimension, for primitives that work in any dimension (default 8 "
                        "when the primitive needs one)")
    parser.add_argument("--examples", type=int, default=200,
                        help="Hypothesis examples per algebraic/closure cell (default 200)")
    parser.add_argument("--batch", type=int, default=32,
                        help="(element, input) rows per example (default 32)")
    parser.add_argument("--samples", type=int, default=1024,
                        help="random functions per side of a probabilistic test (default 1024)")
    parser.add_argument("--dtype", choices=("float32", "float64"), default=None,
                        help="float32 or float64 (default float32, with the check run "
                             "again in float64 when float32 leaves a cell only possibly "
                             "non-maximal: a supergroup broken below float32 resolution)")
    parser.add_argument("--seed", type=int, default=0, help="PRNG seed (default 0)")
    parser.add_argument("--no-maximality", action="store_true",
                        help="skip the search for counterexamples under supergroups")
    parser.add_argument("--fit-closure", action="store_true",
                        help="search for witnesses that a closure cell is not maximal "
                             "(fit the parameters to the function moved by a supergroup)")


def load(target: str):
    """Import the object named by `module:Name` or `path/to/file.py:Name`."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected 'pkg.module:Name' or 'path/to/file.py:Name', got {target!r}.")
    if module_name.endswith(".py") or os.sep in module_name or "/" in module_name:
        path = os.path.abspath(module_name)
        if not os.path.isfile(path):
            raise ValueError(f"no such file: {module_name!r}.")
        name = "_taxdl_check_" + os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        sys.path.insert(0, os.path.dirname(path))
        try:
            spec.loader.exec_module(module)
        except Exception as err:  # the user's file failed to run: a usage error, not a report
            sys.modules.pop(name, None)
            raise ValueError(f"could not import {module_name!r}: "
                             f"{type(err).__name__}: {err}") from err
        finally:
            sys.path.remove(os.path.dirname(path))
    else:
        # as `python -m taxdl`, a module in the working directory is found (the `taxdl`
        # script's own folder comes first on the path instead)
        cwd_missing = os.getcwd() not in sys.path and "" not in sys.path
        if cwd_missing:
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(module_name)
        except Exception as err:
            raise ValueError(f"could not import {module_name!r}: "
                             f"{type(err).__name__}: {err}") from err
        finally:
            if cwd_missing:
                sys.path.remove(os.getcwd())
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"{module_name!r} has no attribute {attr!r}.") from None
    return obj


def run(args) -> int:
    import jax
    import jax.numpy as jnp

    from ..taxonomy import DimensionRequired

    try:
        from ..testing import SymmetryViolation, check
    except ImportError as err:  # installed without the `testing` extra (Hypothesis)
        print(f"taxdl check: {err}", file=sys.stderr)
        return 2

    for flag, minimum in (("n", 1), ("examples", 1), ("batch", 2), ("samples", 1)):
        value = getattr(args, flag)
        if value is not None and value < minimum:
            print(f"taxdl check: --{flag} must be an integer >= {minimum}, got {value}.",
                  file=sys.stderr)
            return 2
    if not -2**63 <= args.seed < 2**63:
        print(f"taxdl check: --seed must be an integer in [-2**63, 2**63), got {args.seed}.",
              file=sys.stderr)
        return 2
    try:
        obj = load(args.target)
    except (ValueError, ImportError) as err:
        print(f"taxdl check: {err}", file=sys.stderr)
        return 2
    kwargs = dict(examples=args.examples, batch=args.batch,
                  samples=args.samples, key=jax.random.key(args.seed),
                  maximality=not args.no_maximality, fit_closure=args.fit_closure)

    def run_check(dtype):
        try:
            return check(obj, args.n, dtype=dtype, **kwargs)
        except DimensionRequired:
            if args.n is not None:
                raise
            return check(obj, 8, dtype=dtype, **kwargs)

    try:
        try:
            report = run_check(jnp.float64 if args.dtype == "float64" else jnp.float32)
        except SymmetryViolation as err:
            if args.dtype is not None or not _only_unrefuted_supergroups(err):
                raise
            # every failure is a supergroup float32 could not refute (CoLU's cone
            # scalings at eps = 1e-7 change the output by ~1e-7 relative): search for
            # its counterexample in float64
            print("float32 found no counterexample under some supergroup (it may be "
                  "broken only below float32 resolution); checking again in float64.\n")
            report = run_check(jnp.float64)
    except SymmetryViolation as err:
        print(err)
        if args.dtype == "float32" and _unrefuted_supergroup(err):
            print("\nA supergroup broken only below float32 resolution is not refuted in "
                  "float32 (e.g. CoLU's cone scalings at eps = 1e-7): run again with "
                  "`--dtype float64` to search for its counterexample in float64.")
        return 1
    except (TypeError, ValueError, NotImplementedError) as err:
        print(f"taxdl check: {err}", file=sys.stderr)
        return 2
    print(report)
    return 0


def _failed_cells(err) -> list:
    report = getattr(err, "report", None)
    return list(report.failures) if report is not None else [getattr(err, "cell", None)]


def _unrefuted_supergroup(err) -> bool:
    """Whether a failed check includes a cell reported "may not be maximal"."""
    return any(getattr(c, "status", None) == "not maximal" for c in _failed_cells(err))


def _only_unrefuted_supergroups(err) -> bool:
    """Whether every failure of a check is a cell reported "may not be maximal" (no
    declared relation was violated)."""
    cells = _failed_cells(err)
    return bool(cells) and all(getattr(c, "status", None) == "not maximal" for c in cells)
