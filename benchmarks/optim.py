"""One optimiser step (update + apply, jitted, state and parameters donated) on a
10M-parameter tree: taxdl.optim.adasgd vs optax.adam (target: AdaSGD ≤ 0.8×; it keeps one
moment tree and a scalar instead of two trees). Run: `python benchmarks/optim.py`.

Timings are the best of interleaved rounds (the machine may be shared)."""

import argparse
import time

import jax
import jax.numpy as jnp
import optax

from taxdl import optim


def make_tree(total: int, key):
    """A tree of ten leaves of mixed shapes holding ~`total` float32 parameters."""
    sizes = [(total // 10 // 1000, 1000)] * 9 + [(total - 9 * (total // 10 // 1000) * 1000,)]
    keys = jax.random.split(key, len(sizes))
    return {f"p{i}": jax.random.normal(k, s) for i, (k, s) in enumerate(zip(keys, sizes))}


class Runner:
    """A donated, jitted `params, state = step(params, state, grads)` loop for one `tx`."""

    def __init__(self, tx, params, grads):
        def step(params, state, grads):
            updates, state = tx.update(grads, state, params)
            return optax.apply_updates(params, updates), state

        self.step = jax.jit(step, donate_argnums=(0, 1))
        self.grads = grads
        self.params = jax.tree.map(jnp.copy, params)
        self.state = tx.init(self.params)
        self.run(1)

    def run(self, calls: int) -> float:
        t = time.perf_counter()
        for _ in range(calls):
            self.params, self.state = self.step(self.params, self.state, self.grads)
        jax.block_until_ready(self.params)
        return (time.perf_counter() - t) / calls


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--params", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    k1, k2 = jax.random.split(jax.random.key(0))
    params, grads = make_tree(args.params, k1), make_tree(args.params, k2)
    d = sum(x.size for x in jax.tree.leaves(params))
    with jax.numpy_dtype_promotion("standard"):   # optax.adam relies on int → float promotion
        runners = [Runner(optax.adam(1e-3), params, grads),
                   Runner(optim.adasgd(1e-3), params, grads),
                   Runner(optax.sgd(1e-3, momentum=0.9), params, grads)]
        best = [float("inf")] * len(runners)
        for _ in range(args.repeats):
            for i, r in enumerate(runners):
                best[i] = min(best[i], r.run(5))
    t_adam, t_ada, t_sgd = best
    print(f"one optimiser step on {d / 1e6:.1f}M parameters (best of {args.repeats} "
          "interleaved rounds)")
    print(f"  optax.adam               {1e3 * t_adam:8.2f} ms   1.00×")
    print(f"  taxdl.optim.adasgd       {1e3 * t_ada:8.2f} ms   "
          f"{t_ada / t_adam:.2f}×   (target ≤ 0.8×)")
    print(f"  optax.sgd (momentum)     {1e3 * t_sgd:8.2f} ms   "
          f"{t_sgd / t_adam:.2f}×   (lower bound)")
    return t_ada / t_adam


if __name__ == "__main__":
    main()
