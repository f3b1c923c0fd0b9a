import contextlib
import importlib.util
import os
import pathlib
import shutil
import tempfile


def _quick_compile_flags() -> str:
    """`check`'s options for small programs (taxdl/_compile.py, read as a file so that jax
    is not imported yet), as XLA flags, except that Eigen's thread pool stays on, as users
    run it."""
    path = pathlib.Path(__file__).resolve().parents[1] / "taxdl" / "_compile.py"
    spec = importlib.util.spec_from_file_location("taxdl_small_program_options", path)
    options = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(options)
    return "".join(f" --{name}={str(value).lower() if isinstance(value, bool) else value}"
                   for name, value in options.SMALL_PROGRAM_OPTIONS.items()
                   if name != "xla_cpu_multi_thread_eigen")


# Two fake CPU devices, so sharding code paths run in the test suite (set before jax loads).
# The suite compiles thousands of programs, most of them run once or a few times on small
# inputs, so compiling is most of its time: XLA compiles them for a quick compile, with
# `_quick_compile_flags`. Measured on two cores, they cut the suite's XLA compile time by
# about 40% and its wall time by about a sixth. They change how XLA optimises, not what
# the programs compute. TAXDL_TEST_XLA=default runs the suite under XLA's default
# pipeline; an XLA_FLAGS set by the caller is kept as it is.
os.environ.setdefault(
    "XLA_FLAGS", "--xla_force_host_platform_device_count=2"
    + ("" if os.environ.get("TAXDL_TEST_XLA") == "default" else _quick_compile_flags()))

# One on-disk compilation cache per test run, shared by the xdist workers (they inherit
# this process's environment): checks of different primitives compile many of the same
# programs (group samplers, probes), and programs released by `relieve_map_pressure`
# are reloaded instead of recompiled. Set before jax loads; a cache the caller chose is
# kept.
_OWN_CACHE = None
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    _OWN_CACHE = tempfile.mkdtemp(prefix="taxdl-test-jax-cache-")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _OWN_CACHE
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")

import jax  # noqa: E402
import pytest  # noqa: E402

# Strict dtype promotion catches silent float32/float64 mixing. Rank promotion is left
# at its default: group elements are batched by design and broadcast against fixed
# matrices, and explicit expand_dims everywhere would obscure the maths. x64 is *not*
# switched on globally: float64 legs enable it locally (see taxdl.testing).
jax.config.update("jax_numpy_dtype_promotion", "strict")

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "deterministic",
        database=None,
        derandomize=True,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors],
    )
    settings.register_profile(
        "dev", deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                     HealthCheck.differing_executors]
    )
    settings.load_profile(os.environ.get("TAXDL_HYPOTHESIS_PROFILE", "deterministic"))
except ImportError:  # pragma: no cover
    pass


@pytest.fixture(autouse=True)
def _bounded_compiled_code():
    """Every test may compile programs; release them once the worker nears its memory-map
    limit (see `taxdl.testing.relieve_map_pressure`)."""
    yield
    try:
        from taxdl.testing import relieve_map_pressure
    except ImportError:  # pragma: no cover - hypothesis not installed
        return
    relieve_map_pressure()


_EVENTS: list[str] = []
_RECORDING = [False]


def _record_event(name, *args, **kwargs):
    if _RECORDING[0]:
        _EVENTS.append(name)


jax.monitoring.register_event_listener(_record_event)
jax.monitoring.register_event_duration_secs_listener(_record_event)


@pytest.fixture
def jax_events():
    """A context manager collecting the names of the events JAX reports inside it
    (tracing, lowering, compiling, cache lookups) into the list it yields."""

    @contextlib.contextmanager
    def recording():
        _EVENTS.clear()
        _RECORDING[0] = True
        seen: list[str] = []
        try:
            yield seen
        finally:
            _RECORDING[0] = False
            seen.extend(_EVENTS)
            _EVENTS.clear()

    return recording


@pytest.fixture
def getkey():
    """Fresh PRNG keys, deterministic per test."""
    state = {"key": jax.random.key(0)}

    def _next():
        state["key"], sub = jax.random.split(state["key"])
        return sub

    return _next


def pytest_unconfigure(config):
    """The run's compilation cache is removed by the process that made it (the xdist
    controller, or the only process), after every worker has finished."""
    if _OWN_CACHE is not None and not hasattr(config, "workerinput"):
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


@pytest.fixture
def library_checks_only():
    """Runtime type checking of annotations (the jaxtyping import hook the suite runs
    with) off for one test, so that what raises on bad input is the library's own check:
    the error a user without the hook sees."""
    import jaxtyping

    before = jaxtyping.config.jaxtyping_disable
    jaxtyping.config.update("jaxtyping_disable", True)
    try:
        yield
    finally:
        jaxtyping.config.update("jaxtyping_disable", before)
