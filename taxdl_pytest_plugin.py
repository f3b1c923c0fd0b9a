"""pytest entry point of taxdl (the `taxdl` pytest11 entry point).

pytest loads it in every run of an environment where taxdl is installed, so it imports
neither taxdl nor Hypothesis: it registers the `taxdl_check` marker and fixture, and
imports `taxdl.testing` only when a test uses one of them. That also leaves
jaxtyping's pytest plugin (`--jaxtyping-packages=taxdl,...`) free to install its import
hook before taxdl is first imported. What the fixture and the marker run is in
`taxdl.testing._pytest_plugin`; without Hypothesis (the `testing` extra) a test using
them fails with the command that installs it, and every other test runs as usual.

When Hypothesis is installed, the plugin registers its profiles `taxdl-deterministic`
and `taxdl-dev` before Hypothesis's own plugin reads `--hypothesis-profile`.
"""

import importlib.util
import os

import pytest


def _find_spec(name):
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def _register_profiles():
    """Run `taxdl.testing.register_profiles` from its file, so that neither taxdl nor
    JAX is imported (it needs Hypothesis only)."""
    package = _find_spec("taxdl")
    if package is None or not package.submodule_search_locations:
        return
    for location in package.submodule_search_locations:
        path = os.path.join(location, "testing", "_hypothesis.py")
        if os.path.exists(path):
            break
    else:
        return
    spec = importlib.util.spec_from_file_location("taxdl_pytest_plugin_profiles", path)
    profiles = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(profiles)
    profiles.register_profiles()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    config.addinivalue_line(
        "markers", "taxdl_check(primitive, n=None, **kwargs): check the primitive's declared "
        "symmetry with taxdl.testing.check before the test body runs")
    if _find_spec("hypothesis") is not None:
        try:
            _register_profiles()
        except ImportError:  # pragma: no cover - a broken Hypothesis installation
            pass


@pytest.fixture
def taxdl_check(request):
    """`taxdl_check(primitive, n=None, **kwargs)`: run `taxdl.testing.check` and return its
    report; a violated or non-maximal declaration fails the test with the report."""
    from taxdl.testing._pytest_plugin import _checker

    return _checker(request.config)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    markers = list(item.iter_markers("taxdl_check"))
    if not markers:
        return
    if any(not marker.args for marker in markers):
        raise pytest.UsageError("@pytest.mark.taxdl_check needs the primitive to check.")
    from taxdl.testing._pytest_plugin import _checker

    for marker in markers:
        _checker(item.config)(*marker.args, **marker.kwargs)
