"""Operation speed as a ratio to the elementwise or standard counterpart, measured in the
same process.

Binary operations on (x, n) and the clips on x, at (4096, 1024) and (65536, 64) float32:
isotropic min/max (eqs 55–56) over `jnp.minimum`/`jnp.maximum` (eqs 53–54), isotropic
multiplication (eq 58) over the Hadamard product (eq 57), the direction-preserving box
clip (eq 60) over `jnp.clip` (eq 59), and rotated dropout (eq 66, a Haar basis) over a
plain dropout mask. Attention (a batch of 16 sequences of 256 tokens, 64 features): taxdl's
softmax attention and isotropic-tanh attention (eq 68) over `jax.nn.dot_product_attention`.
Forward time and forward+backward time (`jax.vjp`, cotangents of every input) under jit,
each the median of paired ratios (candidate and baseline timed back to back) and the
ratio of the minimum times ("best").

Run: `python benchmarks/operations.py [--rounds N] [--only NAME,...]`.
"""

import argparse
import functools as ft
import pathlib
import sys

import jax
import jax.numpy as jnp
from _paired import forward_backward, paired_ratios

try:
    import taxdl.nn.functional as F
except ModuleNotFoundError:  # running from a source checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import taxdl.nn.functional as F

SHAPES = ((4096, 1024), (65536, 64))
RATE = 0.1


def plain_dropout(x, basis, keep):
    return x * keep / (1 - RATE)


def rotated_dropout(x, basis, keep):
    return F.rotated_dropout(x, basis, keep, RATE)


def dot_product_attention(q, k, v):
    return jax.nn.dot_product_attention(q[:, :, None], k[:, :, None], v[:, :, None])[:, :, 0]


# name: (candidate, baseline, kind); kind picks the arguments
CANDIDATES = {
    "isotropic_min / minimum": (F.isotropic_min, jnp.minimum, "pair"),
    "isotropic_max / maximum": (F.isotropic_max, jnp.maximum, "pair"),
    "isotropic_multiply / x*n": (F.isotropic_multiply, jnp.multiply, "pair"),
    "box_clip / clip": (F.box_clip, ft.partial(jnp.clip, min=-1.0, max=1.0), "single"),
    "rotated_dropout / dropout": (rotated_dropout, plain_dropout, "dropout"),
    "softmax_attention / jax": (jax.vmap(F.softmax_attention), dot_product_attention,
                                "attention"),
    "isotropic_tanh_attention / jax": (jax.vmap(F.isotropic_tanh_attention),
                                       dot_product_attention, "attention"),
}


def arguments(kind, shape, key):
    """The inputs of one case and the cotangent of its output."""
    k1, k2, k3 = jax.random.split(key, 3)
    if kind == "attention":
        q, k, v = (jax.random.normal(kk, (16, 256, 64)) for kk in (k1, k2, k3))
        return (q, k, v), jax.random.normal(jax.random.fold_in(key, 1), (16, 256, 64))
    x = jax.random.normal(k1, shape)
    cotangent = jax.random.normal(k3, shape)
    if kind == "single":
        return (2 * x,), cotangent
    if kind == "pair":
        return (x, jax.random.normal(k2, shape)), cotangent
    basis = F.haar_orthogonal(k2, (shape[1], shape[1]))
    keep = jax.random.bernoulli(k3, 1 - RATE, shape).astype(x.dtype)
    return (x, basis, keep), cotangent


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--only", type=str, default="")
    args = parser.parse_args()
    names = [n for n in CANDIDATES if not args.only or any(
        o.strip() == n.split(" /")[0] for o in args.only.split(","))]
    if args.only and not names:
        raise SystemExit(f"--only: no operation named {args.only!r}; choose from "
                         f"{', '.join(n.split(' /')[0] for n in CANDIDATES)}")
    print(f"jax {jax.__version__}, {jax.devices()[0].device_kind}, float32, ratios to the "
          f"baseline after the slash (median of {args.rounds} paired calls; best: ratio "
          "of minimum times)")
    print(f"{'operation / baseline':32s}" + "".join(
        f"  {str(s):>13s} fwd  {'f+b':>5s}  {'best':>10s}" for s in SHAPES))
    key = jax.random.key(0)
    for name in names:
        candidate, baseline, kind = CANDIDATES[name]
        line = f"{name:32s}"
        for shape in SHAPES if kind != "attention" else SHAPES[:1]:
            inputs, cotangent = arguments(kind, shape, jax.random.fold_in(key, shape[1]))
            (fwd, fwd_best), (both, both_best) = paired_ratios(
                [(candidate, baseline, inputs),
                 (forward_backward(candidate), forward_backward(baseline),
                  (inputs, cotangent))], args.rounds)
            line += f"  {fwd:17.2f}  {both:5.2f}  {fwd_best:4.2f}/{both_best:4.2f}"
        if kind == "attention":
            line += "  (16 × 256 tokens × 64)"
        print(line, flush=True)


if __name__ == "__main__":
    main()
