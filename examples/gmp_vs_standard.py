"""Geometric Parameterization vs the standard parameterization on the GmP paper's two
illustrative tasks (§4.1): 1-D Levy regression with 100 ReLU units and 2-D banana
classification with 10 ReLU units, one hidden layer, full-batch Adam.

For every step it records how far the hidden units' characteristic activation boundaries
move (taxdl.diagnostics.cab_change): the largest change of a spatial location
max_i |Δφ_i| (Fig 2c) and the largest turn of a boundary max_i Δθ_i (Fig 3i). It prints
the test RMSE / accuracy and these CAB stability statistics (median and maximum over the
training steps of the per-step maximum over units).

    python examples/gmp_vs_standard.py            # a few minutes on a CPU
    python examples/gmp_vs_standard.py --quick    # seconds: a smoke run
"""

import argparse
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

import taxdl.nn as tnn
from taxdl import optim
from taxdl.data import banana, levy_regression
from taxdl.diagnostics import cab_change


def make_model(kind: str, in_features: int, hidden: int, out: int, key):
    """(hidden layer, output layer): ReLU units in standard (eqx.nn.Linear) or GmP form
    (taxdl.nn.GmPLinear, Remark 3.5 initialisation), then a linear read-out."""
    k1, k2 = jax.random.split(key)
    if kind == "SP":
        layer = eqx.nn.Linear(in_features, hidden, key=k1)
    else:
        layer = tnn.GmPLinear(in_features, hidden, key=k1)
    return layer, eqx.nn.Linear(hidden, out, key=k2)


def forward(model, x):
    layer, head = model
    z = layer(x)
    if isinstance(layer, eqx.nn.Linear):
        z = jax.nn.relu(z)
    return head(z)


def loss_fn(model, x, y, task_kind):
    pred = jax.vmap(lambda xi: forward(model, xi))(x)
    if task_kind == "regression":
        return jnp.mean((pred - y) ** 2)
    return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(pred, y))


@eqx.filter_jit
def train(model, x, y, lr, steps: int, task_kind: str):
    """Full-batch Adam for `steps` steps; returns the trained model and, per step, the
    largest CAB location change and turn over the hidden units."""
    params, static = eqx.partition(model, eqx.is_inexact_array)
    # Kingma & Ba's ε placement (optax.adam's default), as the GmP paper trains
    opt = optim.Adam(lambda count: lr, eps=1e-8, eps_root=0.0).as_optax()

    def step(carry, _):
        params, state = carry
        model = eqx.combine(params, static)
        # differentiate the trainable arrays only (a 1-D GmP unit's ±1 sign is an integer)
        grads = jax.grad(lambda p: loss_fn(eqx.combine(p, static), x, y, task_kind))(params)
        updates, state = opt.update(grads, state, params)
        new = optax.apply_updates(params, updates)
        change = cab_change(model[0], eqx.combine(new, static)[0])
        finite = jnp.where(jnp.isfinite(change.location), change.location, jnp.inf)
        return (new, state), (jnp.max(finite), jnp.max(change.angle))

    (params, _), (moved, turned) = jax.lax.scan(step, (params, opt.init(params)), None,
                                                length=steps)
    return eqx.combine(params, static), moved, turned


def evaluate(model, task) -> float:
    pred = jax.vmap(lambda xi: forward(model, xi))(jnp.asarray(task.x_test))
    if task.kind == "regression":
        return float(jnp.sqrt(jnp.mean((pred - jnp.asarray(task.y_test)) ** 2)))
    return float(jnp.mean(jnp.argmax(pred, -1) == jnp.asarray(task.y_test)))


def run(task, hidden: int, configs, steps: int, seeds: int):
    rows = []
    for kind, lr in configs:
        metric, moved, turned = [], [], []
        for seed in range(seeds):
            model = make_model(kind, task.in_features, hidden, task.out_features,
                               jax.random.key(seed))
            y = task.y_train if task.kind == "regression" else task.y_train.astype(np.int32)
            model, mv, tn = train(model, jnp.asarray(task.x_train), jnp.asarray(y),
                                  jnp.asarray(lr, jnp.float32), steps, task.kind)
            metric.append(evaluate(model, task))
            moved.append(np.asarray(mv))
            turned.append(np.asarray(tn))
        moved, turned = np.concatenate(moved), np.degrees(np.concatenate(turned))
        rows.append((kind, lr, float(np.mean(metric)), float(np.std(metric)),
                     float(np.median(moved)), float(np.max(moved)),
                     float(np.median(turned)), float(np.max(turned))))
    return rows


def report(title: str, metric: str, rows) -> str:
    lines = [title,
             f"  {'model':<5} {'lr':>6} {metric:>16}   {'max_i|Δφ_i| per step':>24}   "
             f"{'max_i Δθ_i per step (°)':>24}",
             f"  {'':<5} {'':>6} {'':>16}   {'median':>11} {'max':>12}   {'median':>11} "
             f"{'max':>12}"]
    for kind, lr, m, s, mmed, mmax, tmed, tmax in rows:
        lines.append(f"  {kind:<5} {lr:>6g} {m:>9.4f} ± {s:<5.3f}   {mmed:>11.3g} {mmax:>12.3g}"
                     f"   {tmed:>11.3g} {tmax:>12.3g}")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny smoke run (seconds)")
    parser.add_argument("--steps", type=int, default=None, help="training steps per run")
    parser.add_argument("--seeds", type=int, default=None, help="seeds per configuration")
    parser.add_argument("--task", choices=("both", "levy", "banana"), default="both")
    args = parser.parse_args(argv)
    steps = args.steps or (20 if args.quick else 10000)
    seeds = args.seeds or (1 if args.quick else 3)
    configs = ([("SP", 0.01), ("GmP", 0.1)] if args.quick else
               [("SP", 0.01), ("SP", 0.1), ("GmP", 0.01), ("GmP", 0.1)])
    start = time.perf_counter()
    results = {}
    if args.task in ("both", "levy"):
        levy = levy_regression(n_train=200 if not args.quick else 40, n_test=500)
        results["levy"] = run(levy, 100, configs, steps, seeds)
        print(report(f"1-D Levy regression, 100 ReLU units, {steps} full-batch Adam steps, "
                     f"{seeds} seed(s)", "test RMSE", results["levy"]) + "\n")
    if args.task in ("both", "banana"):
        ban = banana(n_train=400 if not args.quick else 60, n_test=2000)
        results["banana"] = run(ban, 10, configs, steps, seeds)
        print(report(f"2-D banana classification, 10 ReLU units, {steps} full-batch Adam "
                     f"steps, {seeds} seed(s)", "test accuracy", results["banana"]) + "\n")
    print(f"({time.perf_counter() - start:.0f} s; in 1-D a GmP unit's direction is a fixed "
          "sign, so its boundary never turns)")
    return results


if __name__ == "__main__":
    main()
