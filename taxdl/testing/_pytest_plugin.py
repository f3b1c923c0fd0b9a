"""What taxdl's pytest plugin runs (the plugin itself, `taxdl_pytest_plugin`, is the
`taxdl` pytest11 entry point; it imports this module only when a test uses its fixture
or marker).

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
