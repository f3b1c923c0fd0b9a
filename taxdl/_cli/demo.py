"""`taxdl demo`: train small models that differ only in their primitives, compare them.

Every model is a [`taxdl.nn.MLP`][taxdl.nn.MLP]; the models of one task share widths,
optimiser settings, data, seeds and number of steps and differ only in the named
primitive (activation, parameterisation or optimiser). All seeds of one model train
together in one compiled program (`vmap` over seeds, `scan` over steps).
"""

import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any

DEFAULT_OUTPUT = "taxdl-demo-output"
# every file the demo writes into --output; an earlier run's files among these that a new
# run does not write (e.g. rotation.png when the rotation task is not run) are removed
RESULT_FILES = ("results.md", "results.json")
FIGURE_FILES = ("learning_curves.png", "rotation.png", "figure1_tanh_vs_isotropic.png",
                "deflection.png")
DEFAULT_STEPS = {"rotation": 2000, "digits1d": 3000, "digits": 2000}
WIDTHS = {"rotation": (3,), "digits1d": (64, 64), "digits": (64,)}
# the rotation MLP is the paper's x ↦ w λ(w'x), without biases (CoLU paper §5.1)
USE_BIAS = {"rotation": False}
BATCH = 128
LEARNING_RATE = {"rotation": 1e-2, "digits1d": 3e-3, "digits": 3e-3}


@dataclasses.dataclass(frozen=True)
class Variant:
    """One model of the comparison: what differs from the baseline."""

    name: str
    activation: str
    parameterization: str = "standard"
    optimiser: str = "adam"
    description: str = ""


VARIANTS = (
    Variant("relu", "ReLU", description="elementwise ReLU (Sₙ)"),
    Variant("colu", "CoLU", description="conic linear unit, soft projection (eq 2)"),
    Variant("isotropic-tanh", "IsotropicTanh", description="isotropic tanh (O(n))"),
    Variant("tanh", "Tanh", description="elementwise tanh (Bₙ)"),
    Variant("gmp", "ReLU", parameterization="gmp", description="ReLU in GmP form"),
    Variant("isotropic-tanh+adasgd", "IsotropicTanh", optimiser="adasgd",
            description="isotropic tanh trained with AdaSGD instead of Adam"),
)


def add_arguments(parser) -> None:
    from ..data import TASKS

    names = ", ".join(v.name for v in VARIANTS)
    parser.add_argument("--tasks", default=None,
                        help=f"comma-separated tasks among {', '.join(TASKS)} (default: all "
                             "available; 'digits' needs scikit-learn)")
    parser.add_argument("--variants", default=None,
                        help=f"comma-separated models among {names} (default: all available)")
    parser.add_argument("--steps", type=int, default=None,
                        help="training steps per model (default: per task, "
                             + ", ".join(f"{k} {v}" for k, v in DEFAULT_STEPS.items()) + ")")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per model (default 3)")
    parser.add_argument("--batch-size", type=int, default=BATCH,
                        help=f"mini-batch size (default {BATCH})")
    parser.add_argument("--learning-rate", type=float, default=None,
                        help="Adam/AdaSGD learning rate (default: per task, "
                             + ", ".join(f"{k} {v:g}" for k, v in LEARNING_RATE.items()) + ")")
    parser.add_argument("--output", default=DEFAULT_OUTPUT,
                        help=f"folder for plots and results (default {DEFAULT_OUTPUT}/); "
                             "the demo's own files from an earlier run there ("
                             + ", ".join(RESULT_FILES + FIGURE_FILES) + ") are replaced, "
                             "or removed when this run does not write them; no other file "
                             "is touched")
    parser.add_argument("--no-plots", action="store_true", help="skip the figures")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


# ----------------------------------------------------------------------- availability
def _activation_factory(variant: Variant, task: str) -> Callable[[int], Any] | None:
    from .. import nn

    cls = getattr(nn, variant.activation, None)
    if cls is None:
        return None
    if variant.activation == "CoLU":
        # one cone over the 3 hidden units of the rotation MLP (the paper's setting);
        # cones of dimension 4 on the digit tasks (the poster's S = 4)
        cone = 3 if task == "rotation" else 4

        def make(width: int):
            if width % cone:
                return cls(num_cones=1, projection="soft")
            return cls(cone_dim=cone, projection="soft")

        return make
    return lambda width: cls()


def unavailable_reason(variant: Variant) -> str | None:
    """Why a variant cannot run in this installation (None when it can)."""
    from .. import nn

    if getattr(nn, variant.activation, None) is None:
        return f"taxdl.nn.{variant.activation} is not available"
    if variant.parameterization == "gmp" and getattr(nn, "GmPLinear", None) is None:
        return "taxdl.nn.GmPLinear is not available"
    if variant.optimiser == "adasgd" and _adasgd() is None:
        return "taxdl.optim.adasgd is not available"
    return None


def _adasgd():
    try:
        from ..optim import adasgd
    except ImportError:
        return None
    return adasgd


def _optimiser(variant: Variant, lr: float):
    import optax

    if variant.optimiser == "adasgd":
        opt = _adasgd()(lr)
        return opt.as_optax() if hasattr(opt, "as_optax") else opt
    return optax.adam(lr)


# ----------------------------------------------------------------------- progress
class _Progress:
    def __init__(self, total: int, quiet: bool):
        self.total, self.done, self.quiet = total, 0, quiet
        self.bar = None
        self.start = time.perf_counter()
        if quiet:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return
        self.bar = tqdm(total=total, unit="step", dynamic_ncols=True, file=sys.stderr)

    def describe(self, text: str) -> None:
        if self.bar is not None:
            self.bar.set_description(text)
        self.label = text

    def update(self, n: int) -> None:
        self.done += n
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.update(n)
            return
        frac = self.done / max(self.total, 1)
        filled = int(30 * frac)
        elapsed = time.perf_counter() - self.start
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {100 * frac:5.1f}% "
                         f"{elapsed:6.1f}s {getattr(self, 'label', '')[:40]:<40}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif not self.quiet:
            sys.stderr.write("\n")


# ----------------------------------------------------------------------- training
@dataclasses.dataclass
class Result:
    task: str
    variant: str
    seeds: int
    steps: int
    train_loss: list
    test_loss: list
    metric_name: str
    metric: list
    seconds: float
    symmetry: str
    curve_step: list
    curve_test: list
    model: Any = None  # the first seed's trained model (for figures)
    models: Any = None  # every seed's trained model, stacked along a leading axis


def _build(task, variant: Variant, key):
    from ..nn import MLP

    factory = _activation_factory(variant, task.name)
    return MLP(task.in_features, WIDTHS[task.name], task.out_features, activation=factory,
               parameterization=variant.parameterization,
               use_bias=USE_BIAS.get(task.name, True), key=key)


def _symmetry_label(model) -> str:
    from ..nn import parameter_symmetries

    groups = []
    for s in parameter_symmetries(model):
        if s.group.name not in groups:
            groups.append(s.group.name)
    return ", ".join(groups) or "—"


def train_variant(task, variant: Variant, *, steps: int, seeds: int, batch_size: int,
                  learning_rate: float, progress: _Progress | None = None,
                  points: int = 20) -> Result:
    """Train one model on one task for every seed at once; return losses and curves."""
    import jax

    # optax's bias corrections mix Python floats with int32 step counts: allow the
    # standard promotion rules here even when a caller (e.g. a test suite) made them strict
    with jax.numpy_dtype_promotion("standard"):
        return _train(task, variant, steps, seeds, batch_size, learning_rate, progress,
                      points)


def boundary_distortion(images, rotation):
    """How far the image of the cap's boundary circle is from a circle (CoLU paper §5.1,
    Fig. 5): with $u = R^\\top f(x)$ for the boundary points $x$ and $ρ$ the distance of $u$
    from the cap's axis $e_z$, the relative spread std(ρ)/mean(ρ); 0 for a map that keeps
    the rotational symmetry about the axis, large when ReLU folds the circle into a
    triangle."""
    import jax.numpy as jnp

    u = images @ rotation
    rho = jnp.sqrt(u[:, 0] ** 2 + u[:, 1] ** 2)
    return jnp.std(rho) / jnp.maximum(jnp.mean(rho), 1e-12)


def _train(task, variant, steps, seeds, batch_size, learning_rate, progress, points):
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    from ..nn.functional import cross_entropy

    t0 = time.perf_counter()
    build = lambda key: _build(task, variant, key)
    symmetry = _symmetry_label(eqx.filter_eval_shape(build, jax.random.key(0)))
    # every seed's model, built in one compiled call (one model per key, stacked)
    keys = jax.random.split(jax.random.key(0), seeds)
    stacked, static = eqx.partition(eqx.filter_jit(eqx.filter_vmap(build))(keys),
                                    eqx.is_inexact_array)
    opt = _optimiser(variant, learning_rate)
    states = jax.jit(jax.vmap(opt.init))(stacked)

    x_train, y_train = jnp.asarray(task.x_train), jnp.asarray(task.y_train)
    x_test, y_test = jnp.asarray(task.x_test), jnp.asarray(task.y_test)
    classify = task.kind == "classification"
    k = task.num_classes

    def outputs(p, x):
        return jax.vmap(eqx.combine(p, static))(x)

    def loss_fn(p, x, y):
        out = outputs(p, x)
        if classify:
            return jnp.mean(cross_entropy(out, jax.nn.one_hot(y, k, dtype=out.dtype)))
        return jnp.mean(jnp.sum((out - y) ** 2, axis=-1))

    def one_step(p, s, key):
        idx = jax.random.randint(key, (batch_size,), 0, x_train.shape[0])
        loss, grads = jax.value_and_grad(loss_fn)(p, x_train[idx], y_train[idx])
        updates, s = opt.update(grads, s, p)
        return optax.apply_updates(p, updates), s, loss

    points = max(1, min(points, steps))
    chunk = math.ceil(steps / points)
    # whole chunks of `chunk` steps and a shorter last chunk when `chunk` does not divide
    # `steps`: exactly `steps` steps in all
    sizes = [min(chunk, steps - start) for start in range(0, steps, chunk)]

    if not classify:
        ring = jnp.asarray(task.extras["rings"][-1])
        rot = jnp.asarray(task.extras["rotation"])

    def evaluate(p):
        tr = jax.vmap(lambda q: loss_fn(q, x_train, y_train))(p)
        te = jax.vmap(lambda q: loss_fn(q, x_test, y_test))(p)
        if classify:
            me = jax.vmap(lambda q: jnp.mean(jnp.argmax(outputs(q, x_test), -1) == y_test))(p)
        else:
            me = jax.vmap(lambda q: boundary_distortion(outputs(q, ring), rot))(p)
        return tr, te, me

    @jax.jit
    def run(p, s, key, size):
        """The first `size` (≤ `chunk`) steps of a chunk for every seed, then the
        evaluation: one compiled program for every chunk, the shorter last one included
        (the steps past `size` are skipped)."""
        def step(carry, k):
            p, s, _ = jax.vmap(one_step)(*carry, jax.random.split(k, seeds))
            return p, s

        def body(carry, xs):
            i, k = xs
            return jax.lax.cond(i < size, step, lambda c, _: c, carry, k), None

        xs = (jnp.arange(chunk), jax.random.split(key, chunk))
        p, s = jax.lax.scan(body, (p, s), xs)[0]
        return p, s, evaluate(p)

    key = jax.random.key(1234)
    curve_step, curve_test = [], []
    if progress is not None:
        progress.describe(f"{task.name}/{variant.name}")
    done = 0
    for size in sizes:
        key, sub = jax.random.split(key)
        stacked, states, metrics = run(stacked, states, sub, size)
        done += size
        curve_step.append(done)
        curve_test.append(np.asarray(metrics[1], np.float64))
        if progress is not None:
            progress.update(size)
    tr, te, me = (np.asarray(a, np.float64) for a in metrics)
    first = eqx.combine(jax.jit(lambda p: jax.tree_util.tree_map(lambda a: a[0], p))(stacked),
                        static)
    return Result(task.name, variant.name, seeds, done, tr.tolist(), te.tolist(),
                  "accuracy" if classify else "boundary distortion", me.tolist(),
                  time.perf_counter() - t0, symmetry, curve_step,
                  np.stack(curve_test, axis=1).tolist(), first, eqx.combine(stacked, static))


# ----------------------------------------------------------------------- reporting
def _count(k: int, noun: str) -> str:
    return f"{k} {noun}" + ("" if k == 1 else "s")


def _fmt(values, digits: int = 4) -> str:
    import numpy as np

    v = np.asarray(values, np.float64)
    if v.size == 1:
        return f"{v[0]:.{digits}g}"
    return f"{v.mean():.{digits}g} ± {v.std():.2g}"


def results_table(results: list[Result]) -> list[list[str]]:
    """Rows (with a header row) of the results table."""
    rows = [["task", "model", "hidden symmetry", "train loss", "test loss", "metric", "value",
             "time (s)"]]
    for r in results:
        value = (_fmt([100 * m for m in r.metric], 3) + " %" if r.metric_name == "accuracy"
                 else _fmt(r.metric))
        rows.append([r.task, r.variant, r.symmetry, _fmt(r.train_loss), _fmt(r.test_loss),
                     r.metric_name, value, f"{r.seconds:.1f}"])
    return rows


def results_json(results: list[Result]) -> list[dict]:
    """The results as JSON values (what `results.json` holds): every field but the
    models, with a non-finite number (the loss of a diverged run) as `null`, so that the
    file is standard JSON."""

    def finite(value):
        if isinstance(value, float):
            return value if math.isfinite(value) else None
        if isinstance(value, (list, tuple)):
            return [finite(v) for v in value]
        return value

    return [{k: finite(getattr(r, k)) for k in r.__dataclass_fields__
             if k not in ("model", "models")} for r in results]


def format_text(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    line = lambda row: "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
    return "\n".join([line(rows[0]), line(["-" * w for w in widths])] +
                     [line(r) for r in rows[1:]])


def format_markdown(rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(out)


def _plots(results: list[Result], tasks: dict, out: str, written: list[str]) -> None:
    """Draw the figures (names in `FIGURE_FILES`) into `out`; append each path written to
    `written` as soon as it is written."""
    from .. import plot

    def save(fig, name):
        path = os.path.join(out, name)
        plot.save(fig, path)
        written.append(path)

    curves: dict = {}
    for r in results:
        curves.setdefault(r.task, {})[r.variant] = {"step": r.curve_step,
                                                   "test_loss": r.curve_test}
    save(plot.learning_curves_figure(curves), "learning_curves.png")
    rot = [r for r in results if r.task == "rotation"]
    if rot:
        task = tasks["rotation"]
        save(plot.rotation_figure(
            {r.variant: r.model for r in rot}, task.extras["rotation"], task.extras["rings"],
            titles={r.variant: f"distortion {_fmt(r.metric, 2)}" for r in rot}),
            "rotation.png")
    save(plot.plane_figure(), "figure1_tanh_vs_isotropic.png")
    # deflection curves (eq 7) in the plane for the activations that were compared
    acts = {}
    ran = {r.variant for r in results}
    for v in VARIANTS:
        if v.name in ran and v.parameterization == "standard" and v.optimiser == "adam":
            acts[v.name] = _activation_factory(v, "plane")(2)
    if acts:
        save(plot.deflection_figure(acts), "deflection.png")


# ----------------------------------------------------------------------- entry point
def _select(text: str | None, valid: list[str], what: str) -> list[str] | None:
    if text is None:
        return None
    # repeated names count once, in the order of their first appearance
    chosen = list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    bad = [c for c in chosen if c not in valid]
    if bad or not chosen:
        raise ValueError(f"unknown {what} {bad or text!r}; choose from {', '.join(valid)}.")
    return chosen


MAX_SEEDS = 1024  # seeds train together (vmapped), so their count bounds memory
MAX_COUNT = 2**31 - 1  # steps and batch sizes are int32 in the compiled programs


def run(args) -> int:
    from ..data import TASKS, has_sklearn, load_task

    try:
        tasks = _select(args.tasks, list(TASKS), "task")
        names = _select(args.variants, [v.name for v in VARIANTS], "model")
        for flag, limit in (("seeds", MAX_SEEDS), ("batch_size", MAX_COUNT),
                            ("steps", MAX_COUNT)):
            value = getattr(args, flag)
            if value is not None and not 1 <= value <= limit:  # (--steps may be unset)
                raise ValueError(f"--{flag.replace('_', '-')} must be in [1, {limit}], got "
                                 f"{value}.")
        if args.learning_rate is not None and not 0 < args.learning_rate < math.inf:
            raise ValueError(f"--learning-rate must be a finite number > 0, got "
                             f"{args.learning_rate}.")
    except ValueError as err:
        print(f"taxdl demo: {err}", file=sys.stderr)
        return 2
    notes = []
    if tasks is None:
        tasks = [t for t in TASKS if t != "digits" or has_sklearn()]
        if "digits" not in tasks:
            notes.append("task 'digits' skipped: python -m pip install 'taxdl[digits]' adds "
                         "scikit-learn's 8×8 digits")
    elif "digits" in tasks and not has_sklearn():
        print("taxdl demo: the 'digits' task needs scikit-learn: "
              "python -m pip install 'taxdl[digits]'", file=sys.stderr)
        return 2
    variants = []
    for v in VARIANTS:
        if names is not None and v.name not in names:
            continue
        reason = unavailable_reason(v)
        if reason is None:
            variants.append(v)
        else:
            notes.append(f"model '{v.name}' skipped: {reason}")
    if not variants:
        print("taxdl demo: no model can run: " + "; ".join(notes), file=sys.stderr)
        return 2
    try:
        os.makedirs(args.output, exist_ok=True)
    except OSError as err:
        print(f"taxdl demo: cannot use --output {args.output!r} as a folder: {err}",
              file=sys.stderr)
        return 2
    loaded = {t: load_task(t) for t in tasks}
    steps = {t: args.steps or DEFAULT_STEPS[t] for t in tasks}
    print(f"taxdl demo: {_count(len(variants), 'model')} × {_count(len(tasks), 'task')} × "
          f"{_count(args.seeds, 'seed')}")
    for t in tasks:
        print(f"  {t}: {loaded[t].description}; {len(loaded[t].x_train)} train / "
              f"{len(loaded[t].x_test)} test examples, MLP widths {list(WIDTHS[t])}, "
              f"{_count(steps[t], 'step')}")
    for note in notes:
        print(f"  note: {note}")
    progress = _Progress(sum(steps[t] for t in tasks) * len(variants), args.quiet)
    start = time.perf_counter()
    results = []
    try:
        for t in tasks:
            for v in variants:
                results.append(train_variant(
                    loaded[t], v, steps=steps[t], seeds=args.seeds,
                    batch_size=args.batch_size,
                    learning_rate=args.learning_rate or LEARNING_RATE[t],
                    progress=progress))
    finally:
        progress.close()
    rows = results_table(results)
    print()
    print(format_text(rows))
    print(f"\nmean ± std over {args.seeds} seed(s); metric: test accuracy (classification) or "
          "the boundary circle's distortion std(ρ)/mean(ρ) (rotation, 0 = round). Total "
          f"{time.perf_counter() - start:.1f}s.")
    with open(os.path.join(args.output, "results.md"), "w", encoding="utf-8") as fh:
        fh.write(format_markdown(rows) + "\n")
    with open(os.path.join(args.output, "results.json"), "w", encoding="utf-8") as fh:
        json.dump(results_json(results), fh, indent=1, allow_nan=False)
    written = [os.path.join(args.output, n) for n in RESULT_FILES]
    if not args.no_plots:
        try:
            _plots(results, loaded, args.output, written)
        except ImportError as err:
            print(f"taxdl demo: no figures ({err}).", file=sys.stderr)
    print("wrote " + ", ".join(written))
    removed = _remove_stale(args.output, written)
    if removed:
        print("removed " + ", ".join(removed) + " (an earlier run's; not written by this one)")
    return 0


def _remove_stale(out: str, written: list[str]) -> list[str]:
    """Remove the demo's own files (`RESULT_FILES`, `FIGURE_FILES`) in `out` that this run
    did not write; only regular files (and links) of those names, nothing else."""
    keep = {os.path.normpath(p) for p in written}
    removed = []
    for name in RESULT_FILES + FIGURE_FILES:
        path = os.path.join(out, name)
        if os.path.normpath(path) in keep:
            continue
        if os.path.islink(path) or os.path.isfile(path):
            try:
                os.remove(path)
            except OSError as err:
                print(f"taxdl demo: cannot remove the earlier run's {path}: {err}",
                      file=sys.stderr)
                continue
            removed.append(path)
    return removed
