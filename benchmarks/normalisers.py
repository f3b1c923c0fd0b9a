"""Normaliser speed as a ratio to `eqx.nn.LayerNorm`, measured in the same process.

Every normaliser is applied to a batch of shape (B, n) under `jax.vmap` (with the named
batch axis for the stateful ones, in training mode) and jitted; forward time and
forward+backward time (`jax.vjp` with a fixed cotangent, gradients with respect to the
input and the parameters) are each divided by `eqx.nn.LayerNorm`'s. Timings are
interleaved (baseline, candidate, baseline, ...) and the median of the per-round ratios
is reported, which is robust to other load on the machine.

Run: `python benchmarks/normalisers.py [--rounds N] [--batch B] [--n N] [--only NAME,...]`.
"""

import argparse
import pathlib
import sys
import time

import equinox as eqx
import jax
import numpy as np

try:
    import taxdl.nn as tnn
except ModuleNotFoundError:  # running from a source checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import taxdl.nn as tnn


def candidates(n: int) -> dict:
    key = jax.random.key(0)
    return {
        "LayerNorm (vector)": lambda: tnn.LayerNorm(n, "vector", 1e-5),
        "LayerNorm (scalar)": lambda: tnn.ScalarLayerNorm(n, 1e-5),
        "SimpleIsotropicLayerNorm": lambda: tnn.SimpleIsotropicLayerNorm(n),
        "IsotropicLayerNorm (unit)": lambda: tnn.IsotropicLayerNorm(n, key=key),
        "IsotropicLayerNorm (tanh)": lambda: tnn.IsotropicLayerNorm(n, normalisation="tanh",
                                                                    key=key),
        "RMSNorm": lambda: tnn.RMSNorm(n, 1e-6),
        "GroupNorm (8 groups)": lambda: tnn.GroupNorm(n, 8, 1e-5),
        "InstanceNorm (n, no spatial)": lambda: tnn.InstanceNorm(n, 1e-5),
        "ChiNorm": lambda: tnn.ChiNorm(n),
        "BatchNorm": lambda: tnn.BatchNorm(n),
        "MagnitudeEMANorm": lambda: tnn.MagnitudeEMANorm(n),
    }


def program(model):
    """(parameters, forward, forward+backward) jitted over a batch, for a stateless or a
    stateful model (the state is an argument, so every call starts from the same one)."""
    stateful = isinstance(model, eqx.nn.StatefulLayer) and model.is_stateful()
    state = eqx.nn.State(model) if stateful else None

    def apply(m, x, st):
        if stateful:
            return jax.vmap(lambda xi: m(xi, st), axis_name="batch", out_axes=(0, None))(x)[0]
        return jax.vmap(m)(x)

    params, static = eqx.partition(model, eqx.is_inexact_array)

    @jax.jit
    def forward(p, x, st):
        return apply(eqx.combine(p, static), x, st)

    @jax.jit
    def both(p, x, ct, st):
        y, vjp = jax.vjp(lambda p_, x_: apply(eqx.combine(p_, static), x_, st), p, x)
        return y, vjp(ct)

    def clone():
        if state is None:
            return None
        leaves, treedef = jax.tree_util.tree_flatten(state)
        return jax.tree_util.tree_unflatten(treedef, leaves)

    return params, (lambda p, x: forward(p, x, clone())), (lambda p, x, ct: both(p, x, ct,
                                                                                 clone()))


def timed(fn, *args) -> float:
    t = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    n, b = args.n, args.batch
    kx, kc = jax.random.split(jax.random.key(1))
    x = jax.random.normal(kx, (b, n))
    ct = jax.random.normal(kc, (b, n))
    base = program(eqx.nn.LayerNorm(n))
    runs = [base]
    names = []
    for name, make in candidates(n).items():
        if args.only and not any(o.strip() in name for o in args.only.split(",")):
            continue
        names.append(name)
        runs.append(program(make()))
    for p, fwd, both in runs:                      # compile and warm up
        jax.block_until_ready(fwd(p, x))
        jax.block_until_ready(both(p, x, ct))
    bp, bfwd, bboth = runs[0]
    print(f"batch {b} × n {n}, float32, {jax.devices()[0].platform}; median ratio to "
          f"eqx.nn.LayerNorm over {args.rounds} interleaved rounds")
    print(f"{'normaliser':<32}{'forward':>10}{'fwd+bwd':>10}")
    base_f = np.median([timed(bfwd, bp, x) for _ in range(args.rounds)])
    base_b = np.median([timed(bboth, bp, x, ct) for _ in range(args.rounds)])
    print(f"{'eqx.nn.LayerNorm (absolute)':<32}{base_f * 1e3:>8.2f}ms{base_b * 1e3:>8.2f}ms")
    for name, (p, fwd, both) in zip(names, runs[1:]):
        rf, rb = [], []
        for _ in range(args.rounds):
            tb = timed(bfwd, bp, x)
            rf.append(timed(fwd, p, x) / tb)
            tb = timed(bboth, bp, x, ct)
            rb.append(timed(both, p, x, ct) / tb)
        print(f"{name:<32}{np.median(rf):>10.2f}{np.median(rb):>10.2f}")


if __name__ == "__main__":
    main()
