"""GmPLinear vs eqx.nn.Linear: forward + backward of a 1024 → 1024 layer on a batch of 256
(target: GmP ≤ 1.5× the Linear), with the naive `jnp.cumprod` construction of u(θ) for
reference. Run: `python benchmarks/gmp.py [--repeats N]`.

Timings are the best of interleaved rounds of jitted calls (the machine may be shared)."""

import argparse
import time

import equinox as eqx
import jax
import jax.numpy as jnp

import taxdl.nn as tnn


def best_times(cases, rounds: int, calls: int = 5) -> list[float]:
    """Best time per call of each `(f, args)`, measured in interleaved rounds so that load
    from other processes affects every case alike."""
    for f, args in cases:
        jax.block_until_ready(f(*args))
    best = [float("inf")] * len(cases)
    for _ in range(rounds):
        for i, (f, args) in enumerate(cases):
            t = time.perf_counter()
            for _ in range(calls):
                out = f(*args)
            jax.block_until_ready(out)
            best[i] = min(best[i], (time.perf_counter() - t) / calls)
    return best


def loss(layer, x):
    return jnp.sum(jax.vmap(layer)(x) ** 2)


def cumprod_direction(theta):
    s, c = jnp.sin(theta), jnp.cos(theta)
    one = jnp.ones(theta.shape[:-1] + (1,), theta.dtype)
    return jnp.cumprod(jnp.concatenate([one, s], -1), -1) * jnp.concatenate([c, one], -1)


def cumprod_loss(params, x):
    theta, lam, r = params
    return jnp.sum((r * jax.nn.relu(x @ cumprod_direction(theta).T + lam)) ** 2)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args(argv)
    n, b = args.size, args.batch
    k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
    x = jax.random.normal(k1, (b, n))
    linear = eqx.nn.Linear(n, n, key=k2)
    gmp = tnn.GmPLinear(n, n, key=k3)
    grad = jax.jit(jax.value_and_grad(loss))
    naive = jax.jit(jax.value_and_grad(cumprod_loss))
    t_lin, t_gmp, t_naive = best_times(
        [(grad, (linear, x)), (grad, (gmp, x)), (naive, ((gmp.theta, gmp.lam, gmp.r), x))],
        args.repeats)
    print(f"forward+backward, {n} → {n}, batch {b} (best of {args.repeats} rounds)")
    print(f"  eqx.nn.Linear            {1e3 * t_lin:8.2f} ms   1.00×")
    print(f"  taxdl.nn.GmPLinear       {1e3 * t_gmp:8.2f} ms   "
          f"{t_gmp / t_lin:.2f}×   (target ≤ 1.5×)")
    print(f"  GmP via jnp.cumprod      {1e3 * t_naive:8.2f} ms   {t_naive / t_lin:.2f}×")
    return t_gmp / t_lin


if __name__ == "__main__":
    main()
