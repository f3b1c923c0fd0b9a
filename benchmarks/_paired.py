"""Paired timing shared by the benchmark scripts: a candidate and its baseline are
compiled once, then called back to back in every round, so that load from other
processes affects both sides of each ratio alike."""

import time

import jax
import numpy as np


def forward_backward(f):
    """`(args, cotangent) -> (f(*args), cotangents of all args)` through `jax.vjp`."""
    def g(args, v):
        y, vjp = jax.vjp(f, *args)
        return y, vjp(v)

    return g


def elapsed(compiled, args) -> float:
    start = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    return time.perf_counter() - start


def fusion_count(f, *args) -> int:
    """Number of fusions in the optimised HLO of `jit(f)(*args)`."""
    text = jax.jit(f).lower(*args).compile().as_text()
    entry = text.split("ENTRY")[1]
    return sum(" fusion(" in line for line in entry.splitlines())


def paired_ratios(pairs, rounds: int, warmup: int = 3) -> list[tuple[float, float]]:
    """For each `(candidate, baseline, args)` in `pairs` (functions of `*args`): the
    median over `rounds` of candidate time / baseline time (timed back to back), and the
    ratio of the minimum times over the same calls. Every program is compiled and warmed
    up first; the pairs are interleaved within each round."""
    compiled = [(jax.jit(c).lower(*a).compile(), jax.jit(b).lower(*a).compile(), a)
                for c, b, a in pairs]
    for c, b, a in compiled:
        for _ in range(warmup):
            jax.block_until_ready(c(*a))
            jax.block_until_ready(b(*a))
    times = np.empty((rounds, len(pairs), 2))
    for i in range(rounds):
        for j, (c, b, a) in enumerate(compiled):
            times[i, j] = elapsed(c, a), elapsed(b, a)
    best = times.min(axis=0)
    return [(float(np.median(times[:, j, 0] / times[:, j, 1])), float(best[j, 0] / best[j, 1]))
            for j in range(len(pairs))]
