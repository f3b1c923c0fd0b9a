"""Hypothesis settings for JAX property tests (STYLE rule 12)."""

import os


def _quiet():
    """The health checks that jitted property tests trip: compile time (too_slow),
    large arrays (data_too_large), one test run by several executors, and a `check` call
    (which runs its own Hypothesis search) inside the user's `@given` test."""
    from hypothesis import HealthCheck

    names = ("too_slow", "data_too_large", "differing_executors", "nested_given")
    return [getattr(HealthCheck, n) for n in names if hasattr(HealthCheck, n)]

PROFILES = ("taxdl-deterministic", "taxdl-dev")


def hypothesis_settings(max_examples: int = 100, **overrides):
    """Settings suited to jitted property tests: no deadline (compiles break deadlines),
    no example database, derandomised (the same examples on every run), and the health
    checks that jitted code trips suppressed (see `_quiet`), so that `taxdl.testing.check`
    may be called inside the decorated `@given` test. Use as a decorator:
    `@hypothesis_settings(200)`."""
    from hypothesis import settings

    kwargs = dict(max_examples=max_examples, database=None, derandomize=True, deadline=None,
                  suppress_health_check=_quiet())
    kwargs.update(overrides)
    return settings(**kwargs)


def register_profiles(load: bool = False) -> None:
    """Register the Hypothesis profiles `taxdl-deterministic` (derandomised, no database,
    no deadline; for CI) and `taxdl-dev` (random, no deadline). With `load=True`, load
    the one named by `$TAXDL_HYPOTHESIS_PROFILE` (default `taxdl-deterministic`)."""
    from hypothesis import settings

    quiet = _quiet()
    settings.register_profile("taxdl-deterministic", database=None, derandomize=True,
                              deadline=None, suppress_health_check=quiet)
    settings.register_profile("taxdl-dev", deadline=None, suppress_health_check=quiet)
    if load:
        settings.load_profile(os.environ.get("TAXDL_HYPOTHESIS_PROFILE", "taxdl-deterministic"))
