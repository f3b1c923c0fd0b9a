"""An installation without the `testing` extra (no Hypothesis): the pytest plugin, which
pytest loads in every run, leaves unrelated test suites alone, and `taxdl check` says
which extra it needs. Each runs in a fresh process in which Hypothesis cannot be
imported (a `sys.meta_path` hook)."""

import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BLOCK = textwrap.dedent('''
    import sys


    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "hypothesis":
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None


    sys.meta_path.insert(0, Block())
''')


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["JAX_PLATFORMS"] = "cpu"
    env.pop("TAXDL_CHECK_EXAMPLES", None)
    return env


def _pytest(code, *options, tmp_path, block):
    """Run pytest on `code` in a fresh process, loading taxdl's plugin as its pytest11
    entry point does (with -p when taxdl is not installed)."""
    (tmp_path / "test_user.py").write_text(textwrap.dedent(code))
    installed = any(e.value == "taxdl_pytest_plugin" for e in entry_points(group="pytest11"))
    # without the extra, Hypothesis's own plugin is not installed either; plain asserts
    # keep pytest's import hook (which finds plugin distributions) out of the way
    args = ([] if installed else ["-p", "taxdl_pytest_plugin"]) + [
        "-q", "-p", "no:cacheprovider", *options, "test_user.py"]
    if block:
        args = ["-p", "no:hypothesispytest", "--assert=plain", *args]
    script = (BLOCK if block else "import sys\n") + (
        f"import pytest\nsys.exit(pytest.main({args!r}))\n")
    return subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=120)


def test_pytest_without_hypothesis_runs_other_tests_and_names_the_extra(tmp_path):
    run = _pytest('''
        import sys


        def test_unrelated():
            assert "taxdl" not in sys.modules and "jax" not in sys.modules


        def test_uses_the_fixture(taxdl_check):
            pass
    ''', tmp_path=tmp_path, block=True)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out  # a test error, not pytest's internal error (3)
    assert "INTERNALERROR" not in out, out
    assert "1 passed, 1 error" in out, out
    assert 'pip install "taxdl[testing]"' in out, out


def test_pytest_plugin_imports_taxdl_only_for_its_fixture_and_registers_profiles(tmp_path):
    """With Hypothesis: an unrelated test runs without importing taxdl or JAX, and the
    profiles are registered before `--hypothesis-profile` is read."""
    run = _pytest('''
        import sys

        from hypothesis import settings


        def test_unrelated():
            assert "taxdl" not in sys.modules and "jax" not in sys.modules


        def test_profiles():
            assert settings.get_current_profile_name() == "taxdl-dev"
            assert settings.default.deadline is None
            settings.load_profile("taxdl-deterministic")
            assert settings.default.derandomize and settings.default.database is None
    ''', "--hypothesis-profile=taxdl-dev", tmp_path=tmp_path, block=False)
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "2 passed" in out, out


def test_check_command_without_hypothesis_is_a_usage_error(tmp_path):
    script = BLOCK + textwrap.dedent('''
        import runpy

        sys.argv = ["taxdl", "check", "taxdl.nn:Tanh", "--n", "4", "--examples", "2"]
        runpy.run_module("taxdl", run_name="__main__", alter_sys=True)
    ''')
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=_env(),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    [line] = run.stderr.strip().splitlines()
    assert line.startswith("taxdl check: ") and 'pip install "taxdl[testing]"' in line, line
