"""Data-parallel training of a taxdl model sharded over devices with `jax.sharding`.

The batch is split over a one-axis device mesh ("data"), the parameters and optimiser
state are replicated; `jax.jit` inserts the gradient all-reduce. At every step the loss
and gradient are also computed on a single device, from the same parameters and batch,
and the two must agree to float32 round-off: sharding changes where the arithmetic
happens (and so the order of the sums), not what is computed. (Two runs trained
independently, one sharded and one not, drift apart slowly instead: Adam's normalised
steps amplify those round-off differences, about 1e-3 in the loss after 200 steps.)

On a CPU, fake devices stand in for accelerators:

    XLA_FLAGS=--xla_force_host_platform_device_count=8 python examples/sharded_training.py
    python examples/sharded_training.py --quick     # a few steps

Without an `XLA_FLAGS` that sets the device count, the script sets 8 CPU devices itself
(other flags in `XLA_FLAGS` are kept). The same script runs unchanged on several GPUs or
TPU cores.
"""

import os

# Must happen before JAX initialises its backends.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_force_host_platform_device_count=8").strip()

import argparse  # noqa: E402
import functools as ft  # noqa: E402

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import taxdl.nn as tnn  # noqa: E402
from taxdl.data import digits_1d  # noqa: E402


def make_loss_and_grad(static):
    def loss_fn(params, x, y):
        logits = jax.vmap(eqx.combine(params, static))(x)
        return jnp.mean(tnn.functional.cross_entropy(logits, jax.nn.one_hot(y, 10)))

    return jax.value_and_grad(loss_fn)


def train(model, x, y, steps: int, batch: int, devices):
    """Adam on fixed mini-batches, the batch sharded over `devices`. At every step the
    loss and gradient are computed a second time on `devices[0]` alone; returns the
    sharded losses and, per step, the relative differences of the loss and of the
    gradient (in norm) between the two."""
    mesh, one = Mesh(np.array(devices), ("data",)), Mesh(np.array(devices[:1]), ("data",))
    replicated, sharded = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    on_one = NamedSharding(one, P())
    params, static = eqx.partition(model, eqx.is_inexact_array)
    optimiser = optax.adam(1e-3)
    state = optimiser.init(params)
    params, state = jax.device_put((params, state), replicated)
    loss_and_grad = make_loss_and_grad(static)
    sharded_grad = jax.jit(loss_and_grad, out_shardings=replicated)
    single_grad = jax.jit(loss_and_grad, out_shardings=on_one)

    @ft.partial(jax.jit, out_shardings=replicated)
    def apply(grads, state, params):
        updates, state = optimiser.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    losses, loss_gaps, grad_gaps = [], [], []
    for i in range(steps):
        lo = (i * batch) % (len(x) - batch + 1)
        xb, yb = x[lo:lo + batch], y[lo:lo + batch]
        xs, ys = jax.device_put((xb, yb), sharded)
        assert len(xs.sharding.device_set) == len(devices)  # one slice per device
        loss, grads = sharded_grad(params, xs, ys)
        loss_1, grads_1 = single_grad(*jax.device_put((params, xb, yb), on_one))
        flat = np.concatenate([np.ravel(g) for g in jax.tree.leaves(grads)])
        flat_1 = np.concatenate([np.ravel(g) for g in jax.tree.leaves(grads_1)])
        losses.append(float(loss))
        loss_gaps.append(abs(float(loss) - float(loss_1)) / abs(float(loss_1)))
        grad_gaps.append(np.linalg.norm(flat - flat_1) / np.linalg.norm(flat_1))
        params, state = apply(grads, state, params)
    return np.array(losses), np.array(loss_gaps), np.array(grad_gaps)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few steps (smoke run)")
    parser.add_argument("--steps", type=int, default=None)
    args = parser.parse_args(argv)
    steps = args.steps or (5 if args.quick else 200)
    devices = jax.devices()
    if len(devices) < 2:
        print("only one device: set XLA_FLAGS=--xla_force_host_platform_device_count=8 "
              "before starting Python to see the sharded run.")
    batch = 64 * len(devices)
    task = digits_1d(n_train=2048, n_test=16)
    x, y = jnp.asarray(task.x_train), jnp.asarray(task.y_train)
    model = tnn.MLP(task.in_features, [128, 128], 10, activation="ReLU",
                    key=jax.random.key(0))

    losses, loss_gaps, grad_gaps = train(model, x, y, steps, batch, devices)
    print(f"{len(devices)} devices, global batch {batch}, {steps} steps")
    print(f"loss  first {losses[0]:.6f}  last {losses[-1]:.6f}")
    print("largest relative difference between the sharded and the single-device step, "
          f"same parameters and batch: loss {loss_gaps.max():.1e}, gradient "
          f"{grad_gaps.max():.1e}")
    if loss_gaps.max() > 1e-5 or grad_gaps.max() > 1e-4:
        raise SystemExit("the sharded step does not match the single-device step")
    print("every sharded step matches the single-device step.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
