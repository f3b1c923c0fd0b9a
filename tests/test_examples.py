"""Smoke runs of the examples (`--quick`), each in its own process as a user would run it."""

import importlib.util
import math
import os
import pathlib
import re
import subprocess
import sys
import warnings

import jax

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ["custom_primitive.py", "composed_taxonomy.py", "demo_tasks.py",
            "sharded_training.py", "gmp_vs_standard.py"]


def _run(name: str, *args: str, env: dict | None = None) -> str:
    """Run an example in its own process (needed when it sets XLA_FLAGS)."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.pop("XLA_FLAGS", None)
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / name), "--quick", *args],
                          capture_output=True, text=True, env=full_env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _run_here(name: str, capsys) -> str:
    """Run an example's `main(["--quick"])` in this process (no second JAX start-up)."""
    spec = importlib.util.spec_from_file_location(name.removesuffix(".py"),
                                                  ROOT / "examples" / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # as a user runs it: JAX's standard dtype promotion (optax mixes Python floats with
    # int32 step counts), not the test suite's strict mode
    with warnings.catch_warnings(), jax.numpy_dtype_promotion("standard"):
        warnings.simplefilter("ignore", DeprecationWarning)
        assert module.main(["--quick"]) == 0
    return capsys.readouterr().out


def test_custom_primitive(capsys):
    out = _run_here("custom_primitive.py", capsys)
    assert "PASSED" in out and "refuted" in out


def test_composed_taxonomy(capsys):
    out = _run_here("composed_taxonomy.py", capsys)
    assert "S_n" in out and "O(n)" in out and "CompositionWarning" in out
    assert "computes the same function: True" in out


def test_demo_tasks(capsys):
    out = _run_here("demo_tasks.py", capsys)
    assert "rotation" in out and "hidden symmetry" in out and "O(n)" in out


def test_gmp_vs_standard_levy_task():
    """The 1-D task: GmP units hold an integer ±1 direction next to their trainable arrays."""
    spec = importlib.util.spec_from_file_location("gmp_vs_standard",
                                                  ROOT / "examples" / "gmp_vs_standard.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with warnings.catch_warnings(), jax.numpy_dtype_promotion("standard"):
        warnings.simplefilter("ignore", DeprecationWarning)
        results = module.main(["--quick", "--steps", "2", "--task", "levy"])
    assert [row[0] for row in results["levy"]] == ["SP", "GmP"]
    assert all(math.isfinite(v) for row in results["levy"] for v in row[2:])


def test_sharded_training_matches_one_device():
    out = _run("sharded_training.py",
               env={"XLA_FLAGS": "--xla_force_host_platform_device_count=8"})
    assert "8 devices" in out and "every sharded step matches the single-device step" in out


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_have_a_docstring_with_the_command(name):
    text = (ROOT / "examples" / name).read_text()
    assert text.startswith('"""') and f"python examples/{name}" in text


@pytest.mark.parametrize("script, flag, header", [
    ("activations.py", "--rounds", r"median of (\d+) paired calls"),
    ("operations.py", "--rounds", r"median of (\d+) paired calls"),
    ("gmp.py", "--repeats", r"best of (\d+) rounds"),
    ("optim.py", "--repeats", r"best of (\d+) interleaved rounds"),
    ("normalisers.py", "--rounds", r"over (\d+) interleaved rounds"),
])
def test_recorded_benchmark_outputs_state_their_flags(script, flag, header):
    """The number of rounds in each output recorded in docs/benchmarks.md is the script's
    default, or the flag given in the command stated above the output."""
    doc = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    section = doc.split(f"### `{script}`\n", 1)[1]
    before, block = section.split("```text\n", 1)
    recorded = int(re.search(header, block.split("```", 1)[0]).group(1))
    source = (ROOT / "benchmarks" / script).read_text(encoding="utf-8")
    default = int(re.search(rf'add_argument\("{flag}", type=int, default=(\d+)\)',
                            source).group(1))
    stated = re.search(rf"`python benchmarks/{re.escape(script)} [^`]*{flag} (\d+)", before)
    assert recorded == (int(stated.group(1)) if stated else default), (script, recorded)
