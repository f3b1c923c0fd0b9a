"""pytest plugin of taxdl (loaded through the `taxdl` pytest11 entry point).

One line in a user's suite checks a primitive's whole declaration:

```python
def test_my_activation(taxdl_check):
    taxdl_check(MyActivation(), n=8)
```

or, without writing a function:

```python
@pytest.mark.taxdl_check(MyActivation, n=8)
def test_my_activation():
    pass
```

Both run [`taxdl.testing.check`][taxdl.testing.check] (keyword arguments are passed on)
and fail the test with the readable report on a violation. The environment variable
`TAXDL_CHECK_EXAMPLES` sets the number of Hypothesis examples of every such check that
does not set it. The plugin also registers the Hypothesis profiles
`taxdl-deterministic` and `taxdl-dev`.
"""

import os

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "taxdl_check(primitive, n=None, **kwargs): check the primitive's declared "
        "symmetry with taxdl.testing.check before the test body runs")
    try:
        from ._hypothesis import register_profiles

        register_profiles()
    except ImportError:  # pragma: no cover - hypothesis not installed
        pass


def _checker(config):
    del config

    def run(primitive, n=None, **kwargs):
        from . import check

        examples = os.environ.get("TAXDL_CHECK_EXAMPLES")
        if examples and "examples" not in kwargs:
            kwargs["examples"] = _examples_from_environment(examples)
        return check(primitive, n, **kwargs)

    return run


def _examples_from_environment(value: str) -> int:
    try:
        examples = int(value)
    except ValueError:
        examples = 0
    if examples < 1:
        raise pytest.UsageError(f"TAXDL_CHECK_EXAMPLES must be a positive integer, got "
                                f"{value!r}.")
    return examples


@pytest.fixture
def taxdl_check(request):
    """`taxdl_check(primitive, n=None, **kwargs)`: run `taxdl.testing.check` and return its
    report; a violated or non-maximal declaration fails the test with the report."""
    return _checker(request.config)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    for marker in item.iter_markers("taxdl_check"):
        if not marker.args:
            raise pytest.UsageError("@pytest.mark.taxdl_check needs the primitive to check.")
        _checker(item.config)(*marker.args, **marker.kwargs)
