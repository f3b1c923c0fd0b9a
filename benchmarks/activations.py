"""Activation speed as a ratio to `jax.nn.relu`, measured in the same process.

For each activation and each shape ((4096, 1024) and (65536, 64), float32, under jit):
forward time and forward+backward time (the output and the input cotangent for a fixed
random cotangent, `jax.vjp`), each divided by relu's. Relu runs at memory bandwidth, so
1.0 is the physical floor. Each candidate call is timed back to back with a relu call and
the median of these paired ratios is reported, so that load from other processes on the
machine affects both sides of each ratio alike; the "best" columns give the ratio of the
minimum times over the same calls (fwd/f+b), which interference can only raise. On a
loaded machine the two statistics can differ by more than the effects being measured.

With `--cache`, each candidate's forward is also timed in a loop of its own, beside relu
in a loop of its own: at these sizes relu's input and output (16 MiB each) together are
about the size of a server CPU's last-level cache, so relu timed alone runs largely from
cache, and the ratio to it is the larger one; called right after another kernel (as in
the paired loop) relu reads from memory.

Run: `python benchmarks/activations.py [--rounds N] [--only NAME,...] [--hlo] [--cache]`.
"""

import argparse
import functools as ft
import pathlib
import sys

import jax
import jax.numpy as jnp
import numpy as np
from _paired import elapsed, forward_backward, fusion_count, paired_ratios

try:
    import taxdl.nn.functional as F
except ModuleNotFoundError:  # running from a source checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import taxdl.nn.functional as F

SHAPES = ((4096, 1024), (65536, 64))


def authors_colu(x, s=4, eps=1e-7):
    """The slice/norm/concat formulation (axes first, as in the authors' code), for
    comparison: autodiff through narrow slices and short reductions."""
    g = x.shape[-1] // s
    a, b = x[..., :g], x[..., g:].reshape(x.shape[:-1] + (g, s - 1))
    nb = jnp.linalg.norm(b, axis=-1)
    w = jnp.clip(a / (nb + eps), 0, 1)
    return jnp.concatenate([a, (w[..., None] * b).reshape(x.shape[:-1] + (-1,))], -1)


def naive_isotropic_tanh(x):
    """Straightforward jnp isotropic tanh (overflows above |x| ≈ 1.8e19 in float32)."""
    r = jnp.sqrt(jnp.sum(x * x, axis=-1, keepdims=True))
    return jnp.tanh(r) / r * x


CANDIDATES = {
    # elementwise
    "tanh": F.tanh,
    "gelu": F.gelu,
    "silu": F.silu,
    # isotropic
    "isotropic_tanh": F.isotropic_tanh,
    "isotropic_relu": ft.partial(F.isotropic_relu, r0=1.0),
    "isotropic_leaky_relu": ft.partial(F.isotropic_leaky_relu, alpha=0.1, r0=1.0),
    "isotropic_soft_leaky_relu": ft.partial(F.isotropic_soft_leaky_relu, alpha=0.1, r0=1.0,
                                            delta=0.5),
    "isotropic_sinusoid": ft.partial(F.isotropic_sinusoid, lam=1.0),
    "squash": F.squash,
    "isotropic_tanh vmap": jax.vmap(F.isotropic_tanh),  # one row per call, as eqx modules
    "naive isotropic_tanh": naive_isotropic_tanh,
    # conic
    "colu hard S=4": ft.partial(F.colu, cone_dim=4),
    "colu soft S=4": ft.partial(F.colu, cone_dim=4, projection="soft"),
    "colu firm S=4": ft.partial(F.colu, cone_dim=4, projection="firm"),
    "colu hard S=4 eps=0": ft.partial(F.colu, cone_dim=4, eps=0.0),
    "colu hard S=4 axes_first": ft.partial(F.colu, cone_dim=4, layout="axes_first"),
    "colu soft S=4 shared": ft.partial(F.colu, cone_dim=4, projection="soft",
                                       shared_axis=True),
    "rcolu hard S=4": ft.partial(F.rcolu, cone_dim=4),
    "colu hard S=4 vmap": jax.vmap(ft.partial(F.colu, cone_dim=4)),
    "authors' colu hard S=4": authors_colu,
}


def ratios(f, x, v, rounds):
    """Forward and forward+backward ratios to relu: the median over `rounds` of the
    paired ratio (candidate call / relu call, timed back to back), then the ratio of the
    best (minimum) times over the same calls."""
    (fwd, fwd_best), (both, both_best) = paired_ratios(
        [(f, jax.nn.relu, (x,)),
         (forward_backward(f), forward_backward(jax.nn.relu), ((x,), v))], rounds)
    return fwd, both, fwd_best, both_best


def cache_effect(f, x, rounds):
    """Forward times in ms (medians): relu and the candidate each in a loop of its own,
    then both alternating; and the two ratios."""
    cand = jax.jit(f).lower(x).compile()
    relu = jax.jit(jax.nn.relu).lower(x).compile()
    for c in (cand, relu):
        for _ in range(3):
            elapsed(c, (x,))

    def loop(c):
        return float(np.median([elapsed(c, (x,)) for _ in range(rounds)]))

    relu_alone, cand_alone = loop(relu), loop(cand)
    pairs = np.array([(elapsed(cand, (x,)), elapsed(relu, (x,))) for _ in range(rounds)])
    relu_paired = float(np.median(pairs[:, 1]))
    return (1e3 * relu_alone, 1e3 * relu_paired, 1e3 * cand_alone,
            cand_alone / relu_alone, float(np.median(pairs[:, 0] / pairs[:, 1])))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--only", type=str, default="")
    parser.add_argument("--hlo", action="store_true", help="also print fusion counts")
    parser.add_argument("--cache", action="store_true",
                        help="also compare with relu timed in a loop of its own (forward)")
    args = parser.parse_args()
    names = [n for n in CANDIDATES if not args.only or any(
        o.strip() == n for o in args.only.split(","))]
    if args.only and not names:
        raise SystemExit(f"--only: no activation named {args.only!r}; choose from "
                         f"{', '.join(CANDIDATES)}")
    print(f"jax {jax.__version__}, {jax.devices()[0].device_kind}, float32, ratios to "
          f"jax.nn.relu (median of {args.rounds} paired calls; best: ratio of minimum times)")
    header = f"{'activation':28s}" + "".join(
        f"  {str(s):>13s} fwd  {'f+b':>5s}  {'best':>10s}" for s in SHAPES)
    if args.hlo:
        header += "   fusions fwd/f+b"
    print(header)
    key = jax.random.key(0)
    data = []
    for shape in SHAPES:
        kx, kv = jax.random.split(jax.random.fold_in(key, shape[1]))
        data.append((jax.random.normal(kx, shape), jax.random.normal(kv, shape)))
    for name in names:
        f = CANDIDATES[name]
        line = f"{name:28s}"
        for x, v in data:
            r = ratios(f, x, v, args.rounds)
            line += f"  {r[0]:17.2f}  {r[1]:5.2f}  {r[2]:4.2f}/{r[3]:4.2f}"
        if args.hlo:
            x, v = data[0]
            line += f"   {fusion_count(f, x):3d}/{fusion_count(forward_backward(f), (x,), v):3d}"
        print(line, flush=True)
    if args.cache:
        print("\nforward, relu timed in a loop of its own (from cache) vs right after the "
              "candidate (as above): ms and ratios")
        print(f"{'activation':28s}  {'shape':>12s}  {'relu alone':>10s}  {'relu after':>10s}"
              f"  {'candidate':>9s}  {'ratio alone':>11s}  {'paired':>6s}")
        for name in names:
            for x, _ in data:
                r = cache_effect(CANDIDATES[name], x, args.rounds)
                print(f"{name:28s}  {str(x.shape):>12s}  {r[0]:10.3f}  {r[1]:10.3f}  "
                      f"{r[2]:9.3f}  {r[3]:11.2f}  {r[4]:6.2f}", flush=True)


if __name__ == "__main__":
    main()
