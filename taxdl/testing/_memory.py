"""Keeping long checking sessions within the operating system's memory-map limit.

Every program XLA compiles for the CPU keeps its machine code in a few memory mappings
of its own, and JAX keeps every compiled program for reuse. A process that checks many
primitives (a test suite, a sweep over the catalogue) compiles thousands of programs; on
Linux the number of mappings per process is capped (`vm.max_map_count`, 65530 by
default), and past the cap the next compilation fails inside XLA's compiler with a
segmentation fault rather than an error. `relieve_map_pressure` clears JAX's caches of
compiled programs, which releases their mappings, once a process has used a given
fraction of that cap; `check` and the assertions call it before they start.
"""

import gc

import jax

_LIMIT_FILE = "/proc/sys/vm/max_map_count"
_MAPS_FILE = "/proc/self/maps"


def map_usage() -> tuple[int, int] | None:
    """`(mappings in use, limit)` for this process, or None where the operating system
    does not expose them (anything but Linux)."""
    try:
        with open(_LIMIT_FILE) as f:
            limit = int(f.read())
        with open(_MAPS_FILE, "rb") as f:
            used = sum(1 for _ in f)
    except (OSError, ValueError):
        return None
    return used, limit


def relieve_map_pressure(fraction: float = 0.5) -> bool:
    """Clear JAX's caches of compiled programs (`jax.clear_caches`) if this process uses
    more than `fraction` of its memory-map limit; returns whether it did. Later calls
    compile again what they need; results are unaffected."""
    if not 0 < fraction <= 1:
        raise ValueError(f"`fraction` must be in (0, 1], got {fraction!r}.")
    usage = map_usage()
    if usage is None or usage[0] <= fraction * usage[1]:
        return False
    jax.clear_caches()
    gc.collect()
    return True
