"""`taxdl check` on a primitive defined in a user's file outside the package, and the
pytest plugin's fixture and marker, each in a fresh process."""

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

USER_FILE = textwrap.dedent('''
    from typing import ClassVar

    import jax
    import jax.numpy as jnp

    from taxdl import AbstractPrimitive, Taxonomy
    from taxdl.groups import O, SignedPermutation


    class Softsign(AbstractPrimitive):
        """x / (1 + |x|) elementwise: odd, so signed permutations commute with it."""

        taxonomy: ClassVar[Taxonomy] = Taxonomy(
            closure=(None, None, SignedPermutation()),
            probabilistic=(None, None, SignedPermutation()),
            algebraic=(None, None, SignedPermutation()))

        def __call__(self, x, *, key=None):
            return x / (1 + jnp.abs(x))


    class Overclaimed(AbstractPrimitive):
        """The same function declared O(n)-equivariant (false)."""

        taxonomy: ClassVar[Taxonomy] = Taxonomy(
            closure=(None, None, O()), probabilistic=(None, None, O()),
            algebraic=(None, None, O()))

        def __call__(self, x, *, key=None):
            return x / (1 + jnp.abs(x))


    def make_overclaimed():
        return Overclaimed()
''')


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["JAX_PLATFORMS"] = "cpu"
    return env


def _taxdl(*args, cwd):
    return subprocess.run([sys.executable, "-m", "taxdl", "check", *args], cwd=cwd,
                          env=_env(), capture_output=True, text=True, timeout=600)


def test_cli_checks_a_primitive_in_a_user_file(tmp_path):
    path = tmp_path / "my_prims.py"
    path.write_text(USER_FILE)
    # a class by absolute path, and the n=8 default for dimension-free primitives
    ok = _taxdl(f"{path}:Softsign", "--examples", "6", cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "PASSED" in ok.stdout and "algebraic E B_n" in ok.stdout and "(n=8," in ok.stdout
    # a zero-argument factory by relative path; the report shows where it breaks
    bad = _taxdl("my_prims.py:make_overclaimed", "--n", "4", "--examples", "6",
                 "--no-maximality", cwd=tmp_path)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "does not hold" in bad.stdout and "FAILED" in bad.stdout
    usage = _taxdl("my_prims.py:Missing", cwd=tmp_path)
    assert usage.returncode == 2 and "no attribute 'Missing'" in usage.stderr


PLUGIN_TESTS = textwrap.dedent('''
    import pytest
    from my_prims import Overclaimed, Softsign


    def test_fixture(taxdl_check):
        report = taxdl_check(Softsign(), n=4, examples=4)
        assert report.passed


    @pytest.mark.taxdl_check(Softsign, n=4)
    def test_marker_pass():
        pass


    @pytest.mark.taxdl_check(Overclaimed, n=4, maximality=False)
    def test_marker_fail():
        pass
''')


def test_pytest_plugin_fixture_and_marker(tmp_path):
    (tmp_path / "my_prims.py").write_text(USER_FILE)
    (tmp_path / "test_user.py").write_text(PLUGIN_TESTS)
    env = _env()
    env["TAXDL_CHECK_EXAMPLES"] = "4"
    # the module the `taxdl` pytest11 entry point names (loaded by -p when not installed)
    from importlib.metadata import entry_points

    installed = any(e.value == "taxdl_pytest_plugin"
                    for e in entry_points(group="pytest11"))
    load = [] if installed else ["-p", "taxdl_pytest_plugin"]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *load, "-q",
         "-p", "no:cacheprovider", "test_user.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    assert "1 failed, 2 passed" in out, out
    assert "test_marker_fail" in out and "algebraic E O(n) declaration does not hold" in out


def test_load_rejects_malformed_targets():
    from taxdl._cli.check import load

    with pytest.raises(ValueError, match="pkg.module:Name"):
        load("no_colon")
    assert load("taxdl.nn:IsotropicTanh").__name__ == "IsotropicTanh"


def test_fit_closure_flag_reaches_check(monkeypatch, capsys):
    """`taxdl check --fit-closure` asks `check` for the closure witness search."""
    import argparse

    import taxdl.testing
    from taxdl._cli import check as cli

    seen = {}

    def fake_check(obj, n, **kwargs):
        seen.update(kwargs)
        return "report"

    monkeypatch.setattr(taxdl.testing, "check", fake_check)
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    for flags, expected in (([], False), (["--fit-closure"], True)):
        seen.clear()
        assert cli.run(parser.parse_args(["taxdl.nn:LayerNorm", *flags])) == 0
        assert seen["fit_closure"] is expected
    assert "report" in capsys.readouterr().out


def test_check_reports_usage_errors_with_exit_code_2(tmp_path, capsys):
    """A target file that fails to import and out-of-range numbers are usage errors (exit 2,
    one line on stderr), not tracebacks or a vacuous pass."""
    from taxdl import cli

    broken = tmp_path / "broken.py"
    broken.write_text("def (\n")
    assert cli.main(["check", f"{broken}:Thing"]) == 2
    assert "could not import" in capsys.readouterr().err
    raising = tmp_path / "raising.py"
    raising.write_text("raise RuntimeError('no GPU here')\n")
    assert cli.main(["check", f"{raising}:Thing"]) == 2
    assert "RuntimeError: no GPU here" in capsys.readouterr().err
    for flag, value in (("--samples", "0"), ("--n", "0"), ("--batch", "1")):
        assert cli.main(["check", "taxdl.nn:ReLU", flag, value]) == 2
        assert f"{flag} must be an integer >=" in capsys.readouterr().err
    assert cli.main(["check", "taxdl.nn:ReLU", "--seed", str(2**63)]) == 2
    assert "--seed must be an integer in [-2**63, 2**63)" in capsys.readouterr().err
    # a factory that returns something else is named in one line
    assert cli.main(["check", "taxdl:table"]) == 2
    err = capsys.readouterr().err
    assert "the factory table returned a Table, which carries no taxonomy" in err
    assert len(err.splitlines()) == 1


def test_a_module_in_the_working_directory_is_found(tmp_path, monkeypatch, capsys):
    # as with `python -m taxdl`, also when the `taxdl` script's folder heads the path
    from taxdl import cli

    (tmp_path / "my_prims_cwd.py").write_text(USER_FILE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert cli.main(["check", "my_prims_cwd:Softsign", "--n", "3", "--examples", "4",
                     "--no-maximality"]) == 0
    assert "PASSED" in capsys.readouterr().out
    assert str(tmp_path) not in sys.path


UNDERCLAIMED_FILE = textwrap.dedent('''
    from typing import ClassVar

    import jax.numpy as jnp

    from taxdl import AbstractPrimitive, Taxonomy
    from taxdl.groups import Permutation


    class Underclaimed(AbstractPrimitive):
        """x / (1 + |x|) declared only Sₙ-equivariant (Bₙ holds: not maximal)."""

        taxonomy: ClassVar[Taxonomy] = Taxonomy(
            closure=(None, None, Permutation()), probabilistic=(None, None, Permutation()),
            algebraic=(None, None, Permutation()))

        def __call__(self, x, *, key=None):
            return x / (1 + jnp.abs(x))
''')


def test_a_float32_run_that_may_not_be_maximal_suggests_float64(tmp_path, capsys):
    """A supergroup broken only below float32 resolution (CoLU's scalings at ε = 1e-7) is
    not refuted in float32: with an explicit `--dtype float32` the CLI's "may not be
    maximal" report suggests `--dtype float64`; a float64 run has nothing to suggest;
    by default the CLI checks again in float64 itself, and a declaration that is truly
    not maximal fails there too."""
    from taxdl import cli

    path = tmp_path / "under.py"
    path.write_text(UNDERCLAIMED_FILE)
    args = ["check", f"{path}:Underclaimed", "--n", "4", "--examples", "4"]
    assert cli.main(args + ["--dtype", "float32"]) == 1
    out = capsys.readouterr().out
    assert "may not be maximal" in out and "--dtype float64" in out
    assert cli.main(args + ["--dtype", "float64"]) == 1
    out = capsys.readouterr().out
    assert "may not be maximal" in out and "--dtype float64" not in out
    assert cli.main(args) == 1
    out = capsys.readouterr().out
    assert "checking again in float64" in out and "(n=4, float64): FAILED" in out


def test_colu_checks_by_default_with_a_float64_retry(capsys):
    """`taxdl check taxdl.nn:CoLU` passes as documented: float32 cannot refute the cone
    scalings at ε = 1e-7, so the CLI checks again in float64, where they fail."""
    from taxdl import cli

    args = ["check", "taxdl.nn:CoLU", "--examples", "8", "--samples", "256"]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "checking again in float64" in out and "(n=8, float64): PASSED" in out
    assert cli.main(args + ["--dtype", "float32"]) == 1
    assert "--dtype float64" in capsys.readouterr().out


def test_check_defaults_n_only_when_the_dimension_is_required(monkeypatch, capsys):
    """Without --n, the CLI checks in n = 8 only a primitive that reports it needs a
    dimension (`DimensionRequired`); any other ValueError, even one that mentions `n`, is
    a usage error reported once, not retried in another dimension."""
    import argparse

    import taxdl.testing
    from taxdl._cli import check as cli
    from taxdl.taxonomy import DimensionRequired

    calls = []

    def fake_check(obj, n, **kwargs):
        calls.append(n)
        if n is None:
            raise error
        return "report"

    monkeypatch.setattr(taxdl.testing, "check", fake_check)
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    error = DimensionRequired("Thing")
    assert cli.run(parser.parse_args(["taxdl.nn:ReLU"])) == 0
    assert calls == [None, 8]
    calls.clear()
    error = ValueError("`n` must be even for this primitive")
    assert cli.run(parser.parse_args(["taxdl.nn:ReLU"])) == 2
    assert calls == [None]
    assert "must be even" in capsys.readouterr().err
    calls.clear()
    error = DimensionRequired("Thing")
    assert cli.run(parser.parse_args(["taxdl.nn:ReLU", "--n", "4"])) == 0
    assert calls == [4]


@pytest.mark.parametrize("name", ["IsotropicTanh", "CoLU", "LatticeIsotropic",
                                  "UnitaryIsotropic", "PhaseElementwise", "SoftmaxAttention",
                                  "StochasticIsotropicDropout", "Hadamard", "HaarOrthogonal",
                                  "Sequential", "CrossEntropy", "AdaSGD", "NormalisedSGD"])
def test_dimension_free_primitives_raise_dimension_required(name):
    """So `taxdl check` without `--n` checks each of them in n = 8."""
    import taxdl.nn as tnn
    import taxdl.optim
    from taxdl.taxonomy import DimensionRequired
    from taxdl.testing import check

    obj = (tnn.Sequential([tnn.Tanh(), tnn.IsotropicTanh()]) if name == "Sequential"
           else getattr(tnn, name, None) or getattr(taxdl.optim, name))
    with pytest.raises(DimensionRequired, match="any dimension: pass .*`n`"):
        check(obj, maximality=False, examples=1)
