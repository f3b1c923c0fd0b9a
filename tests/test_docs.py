"""The documentation site builds in strict mode, and every public symbol is documented."""

import collections
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _coverage():
    spec = importlib.util.spec_from_file_location("docs_coverage", DOCS / "docs_coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_symbol_is_rendered_once():
    cov = _coverage()
    api = cov.api_page(DOCS)
    for module, names in cov.missing(DOCS).items():
        for name in names:
            assert f"{module}.{name}" in api, f"{module}.{name} is documented nowhere"
    seen = collections.defaultdict(list)
    for path, obj in cov.rendered(DOCS).items():
        assert obj is not None, f"`::: {path}` does not resolve to an object"
        if not isinstance(obj, (int, float, str, tuple)):
            seen[id(obj)].append(path)
    twice = [paths for paths in seen.values() if len(paths) > 1]
    assert not twice, f"rendered on more than one page: {twice}"


def test_my_pages_link_only_to_existing_pages_or_are_filtered():
    text = (ROOT / "mkdocs.yml").read_text()
    for page in ("index.md", "getting-started.md", "concepts.md", "catalogue.md",
                 "composition.md", "demo.md", "benchmarks.md", "api.md"):
        assert page in text and (DOCS / page).exists(), page


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs not installed")
def test_docs_build_strict(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f",
         str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    catalogue = (tmp_path / "site" / "catalogue" / "index.html").read_text()
    assert "IsotropicTanh" in catalogue and "Sequential" in catalogue
    assert ">Losses<" in catalogue and "Losss" not in catalogue
