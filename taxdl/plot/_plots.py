"""Figures: the isotropic paper's Fig. 1, deflection curves (eq 7), learning curves and the
hemisphere rotation of the CoLU paper (Fig. 5).

Matplotlib (the optional extra `taxdl[plot]`) is imported only inside the functions that
draw, and only its object-oriented API is used (`matplotlib.figure.Figure`), so no
backend or global state is touched. Every drawing function returns the `Figure`.
"""

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def _figure(width: float, height: float):
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(
            "plotting needs matplotlib: python -m pip install 'taxdl[plot]'"
        ) from None
    return Figure(figsize=(width, height), layout="constrained")


def save(fig, path) -> None:
    """Write a figure to `path` (PNG, PDF or SVG from the extension) at 150 dpi."""
    fig.savefig(path, dpi=150)


def _non_empty(value, name: str) -> None:
    """A clear error for an empty mapping or sequence (matplotlib's own is about columns)."""
    if len(value) == 0:
        raise ValueError(f"`{name}` must be non-empty: there is nothing to draw.")


def _positive(value: Any, name: str) -> float:
    """`value` as a float, refused by name unless it is a finite number > 0."""
    a = np.asarray(value)
    if a.ndim != 0 or a.dtype.kind not in "iuf":
        raise TypeError(f"`{name}` must be a number, got {value!r}.")
    value = float(a)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"`{name}` must be a finite number > 0, got {value}.")
    return value


def _check_image(y: np.ndarray, shape: tuple[int, ...], name: str, n: int) -> None:
    """A clear error for a map that does not send ℝⁿ to ℝⁿ (NumPy's is about matmul)."""
    if y.shape != shape:
        raise ValueError(f"{name} must map ℝ^{n} → ℝ^{n} (one unbatched vector of shape "
                         f"({n},) to one of the same shape), got an output of shape "
                         f"{y.shape[1:]}.")


def _apply(f: Callable, points: np.ndarray) -> np.ndarray:
    """`f` on each row of `points`, in one compiled call."""
    import equinox as eqx

    return np.asarray(eqx.filter_jit(_vmap_call)(f, jnp.asarray(points, jnp.float32)),
                      np.float64)


def _vmap_call(f, x):
    return jax.vmap(f)(x)


def _apply_curves(f: Callable, curves: Sequence[np.ndarray]) -> list[np.ndarray]:
    """`f` on every point of every polyline, batched into one call."""
    if not curves:
        return []
    flat = _apply(f, np.concatenate(curves, axis=0))
    return np.split(flat, np.cumsum([len(c) for c in curves])[:-1])


# ----------------------------------------------------------------------- deflection
def deflection(f: Callable, alphas: Any, direction: Any) -> np.ndarray:
    """The deflection angle of a line through the origin (isotropic paper eq 7):

    $$θ(α; \\hat x, \\mathbf f) = \\arccos\\frac{\\mathbf f(α\\hat x)\\cdot\\hat x}
    {\\|\\mathbf f(α\\hat x)\\|}.$$

    **Arguments:**

    - `f`: a map ℝⁿ → ℝⁿ on one unbatched vector (e.g. a taxdl activation).
    - `alphas`: magnitudes α (1-D).
    - `direction`: the direction $x$ (normalised here), shape (n,).

    **Returns:** θ in radians for each α (NaN where $\\mathbf f(α\\hat x) = 0$). An
    isotropic activation $σ(\\|x\\|)\\hat x$ with σ > 0 gives θ ≡ 0 for every direction; an
    elementwise one bends lines that are not along a symmetry axis.

    **Raises:** `ValueError` when `direction` is not a finite non-zero vector, or when `f`
    does not return a vector of the same shape.
    """
    d = np.asarray(direction, np.float64)
    if d.ndim != 1 or d.size == 0:
        raise ValueError(f"`direction` must be a vector of shape (n,), got shape {d.shape}.")
    if not np.all(np.isfinite(d)):
        raise ValueError(f"`direction` must be finite, got {d}.")
    norm = np.linalg.norm(d)
    if norm == 0:
        raise ValueError(f"`direction` must be a non-zero vector, got {d}.")
    d = d / norm
    a = np.asarray(alphas, np.float64).reshape(-1)
    y = _apply(f, a[:, None] * d[None, :])
    _check_image(y, (len(a), len(d)), "`f`", len(d))
    along = y @ d
    across = np.linalg.norm(y - along[:, None] * d[None, :], axis=1)
    # atan2 of the two components is the same angle as eq 7's arccos, but accurate for
    # small angles (arccos(1 − ε) amplifies rounding to √ε)
    theta = np.arctan2(across, along)
    return np.where(np.linalg.norm(y, axis=1) > 0, theta, np.nan)


def deflection_figure(activations: Mapping[str, Callable], alphas: Any = None,
                      directions: Sequence[Any] | None = None):
    """θ(α) (eq 7) for each activation along a few directions of the plane.

    **Arguments:**

    - `activations`: name → map ℝ² → ℝ² (any n works; the directions set n).
    - `alphas`: magnitudes (default 0.01 … 6).
    - `directions`: default: angles 15°, 60° and 120° from the first axis (the last one
      outside the positive quadrant, where ReLU refracts).

    **Returns:** a matplotlib `Figure` with one panel per activation.

    **Raises:** `ValueError` when `activations` or `directions` is empty.
    """
    _non_empty(activations, "activations")
    if alphas is None:
        alphas = np.linspace(0.01, 6.0, 200)
    if directions is None:
        directions = [(math.cos(math.radians(t)), math.sin(math.radians(t)))
                      for t in (15.0, 60.0, 120.0)]
    _non_empty(directions, "directions")
    fig = _figure(3.2 * len(activations), 2.8)
    axes = fig.subplots(1, len(activations), squeeze=False)[0]
    for ax, (name, f) in zip(axes, activations.items()):
        for d in directions:
            ang = math.degrees(math.atan2(d[1], d[0])) if len(d) == 2 else None
            label = f"{ang:.0f}°" if ang is not None else str(tuple(np.round(d, 2)))
            ax.plot(alphas, np.degrees(deflection(f, alphas, d)), label=label)
        ax.set_title(name)
        ax.set_xlabel("α (magnitude)")
        ax.set_ylim(bottom=-1.0, top=max(5.0, ax.get_ylim()[1]))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("deflection θ (degrees)")
    axes[0].legend(title="direction", fontsize=8)
    return fig


# ----------------------------------------------------------------------- Fig. 1
def plane_shapes(extent: float = 3.0, num: int = 400) -> dict[str, list[np.ndarray]]:
    """The shapes of the isotropic paper's Fig. 1 as polylines in ℝ²: concentric circles
    (`"circles"`), lines through the origin (`"lines"`), parallel lines (`"parallel"`) and
    the coordinate axes (`"axes"`), in the square of half-width `extent` (> 0)."""
    extent = _positive(extent, "extent")
    t = np.linspace(0.0, 2 * np.pi, num)
    s = np.linspace(-extent, extent, num)
    circles = [r * np.stack([np.cos(t), np.sin(t)], 1) for r in np.linspace(extent / 6,
                                                                             extent, 6)]
    lines = [np.stack([s * math.cos(a), s * math.sin(a)], 1)
             for a in np.linspace(0, np.pi, 8, endpoint=False) + np.pi / 16]
    parallel = [np.stack([s, np.full_like(s, c)], 1) for c in np.linspace(-extent, extent, 7)
                if abs(c) > 1e-9]
    axes = [np.stack([s, 0 * s], 1), np.stack([0 * s, s], 1)]
    return {"circles": circles, "lines": lines, "parallel": parallel, "axes": axes}


_STYLE = {"circles": dict(color="black", lw=1.0), "lines": dict(color="tab:green", lw=1.2),
          "parallel": dict(color="tab:red", lw=1.0), "axes": dict(color="0.75", lw=0.8)}


def plane_figure(activations: Mapping[str, Callable] | None = None, extent: float = 3.0):
    """The isotropic paper's Fig. 1: a plane of circles, lines through the origin and
    parallel lines (left), and its images under each activation.

    **Arguments:**

    - `activations`: name → map ℝ² → ℝ²; default elementwise tanh and isotropic tanh
      (`taxdl.nn.Tanh`, `taxdl.nn.IsotropicTanh`), as in the paper.
    - `extent`: half-width of the square drawn (a finite number > 0).

    Elementwise tanh bends the green lines towards the corners of its image square
    (neural refraction); isotropic tanh keeps them straight and the circles round. The
    coordinate axes stay untransformed (faint), as in the paper.

    **Returns:** a matplotlib `Figure`.

    **Raises:** `ValueError` when `extent` is not a finite number > 0 (`TypeError` when
    it is not a number).
    """
    extent = _positive(extent, "extent")
    if activations is None:
        from ..nn import IsotropicTanh, Tanh

        activations = {"elementwise tanh": Tanh(), "isotropic tanh": IsotropicTanh()}
    shapes = plane_shapes(extent)
    panels = [("input plane ℝ²", None)] + list(activations.items())
    fig = _figure(3.0 * len(panels), 3.1)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    kinds = [k for k in shapes if k != "axes"]
    for ax, (name, f) in zip(axes, panels):
        mapped = {k: shapes[k] for k in shapes}
        if f is not None:  # one compiled call per activation for all shapes
            flat = [c for k in kinds for c in shapes[k]]
            out = iter(_apply_curves(f, flat))
            mapped.update({k: [next(out) for _ in shapes[k]] for k in kinds})
        for kind, curves in mapped.items():
            for y in curves:
                ax.plot(y[:, 0], y[:, 1], **_STYLE[kind])
        ax.set_title(name)
        ax.set_aspect("equal")
        lim = extent * 1.05 if f is None else 1.1 * max(
            1.0, float(np.max(np.abs(mapped["circles"][-1]))))
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        ax.set_xticks([])
        ax.set_yticks([])
    return fig


# ----------------------------------------------------------------------- training
def learning_curves_figure(curves: Mapping[str, Mapping[str, Mapping[str, Any]]],
                           metric: str = "test_loss", log: bool = True):
    """Learning curves: one panel per task, one line per model (mean over seeds, band =
    min–max).

    **Arguments:**

    - `curves`: task → model name → `{"step": (points,), metric: (seeds, points)}`.
    - `metric`: which series to draw; `log`: logarithmic y axis.

    **Returns:** a matplotlib `Figure`.

    **Raises:** `ValueError` when `curves`, or a task's models, is empty, and when a
    model's curves lack `"step"` or `metric` or their shapes do not match.
    """
    _non_empty(curves, "curves")
    for task, models in curves.items():
        _non_empty(models, f"curves[{task!r}]")
        for name, c in models.items():
            where = f"curves[{task!r}][{name!r}]"
            for key, what in (("step", ""), (metric, " (the `metric` drawn)")):
                if key not in c:
                    raise ValueError(f"`{where}` has no {key!r} series{what}; it has "
                                     f"{sorted(map(str, c))}.")
            step = np.asarray(c["step"])
            vals = np.asarray(c[metric])
            if step.ndim != 1 or vals.ndim not in (1, 2) or vals.shape[-1] != len(step):
                raise ValueError(
                    f"`{where}` must hold \"step\" of shape (points,) and {metric!r} of "
                    f"shape (seeds, points) or (points,), got {step.shape} and "
                    f"{vals.shape}.")
    fig = _figure(4.0 * len(curves), 3.2)
    axes = fig.subplots(1, len(curves), squeeze=False)[0]
    for ax, (task, models) in zip(axes, curves.items()):
        for name, c in models.items():
            step = np.asarray(c["step"])
            vals = np.atleast_2d(np.asarray(c[metric], np.float64))
            mean = vals.mean(axis=0)
            (line,) = ax.plot(step, mean, label=name)
            if vals.shape[0] > 1:
                ax.fill_between(step, vals.min(axis=0), vals.max(axis=0),
                                color=line.get_color(), alpha=0.2, lw=0)
        ax.set_title(task)
        ax.set_xlabel("step")
        ax.set_ylabel(metric.replace("_", " "))
        if log:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return fig


def rotation_figure(models: Mapping[str, Callable], rotation: Any, rings: Any,
                    titles: Mapping[str, str] | None = None):
    """The learned hemisphere rotation (CoLU paper §5.1, Fig. 5), seen from the cap's pole.

    Each latitude ring of the cap is mapped through the model, rotated back by $R^\\top$
    and projected onto the plane orthogonal to the pole; the true rotation gives back the
    concentric circles (dashed). ReLU flattens the boundary circle towards a triangle,
    an O(2)-symmetric model keeps it round.

    **Arguments:**

    - `models`: name → trained map ℝ³ → ℝ³ (one unbatched vector).
    - `rotation`: the 3×3 rotation R; `rings`: latitude circles, shape (rings, points, 3).
    - `titles`: optional extra title text per model (e.g. the boundary error).

    **Returns:** a matplotlib `Figure`.

    **Raises:** `ValueError` when `models` is empty, when `rotation` or `rings` has the
    wrong shape, and when a model does not map ℝ³ → ℝ³.
    """
    _non_empty(models, "models")
    r = np.asarray(rotation, np.float64)
    rings = np.asarray(rings, np.float64)
    if r.shape != (3, 3):
        raise ValueError(f"`rotation` must be a 3×3 matrix, got shape {r.shape}.")
    if rings.ndim != 3 or rings.shape[2] != 3:
        raise ValueError(f"`rings` must have shape (rings, points, 3), got {rings.shape}.")
    fig = _figure(2.8 * len(models), 3.0)
    axes = fig.subplots(1, len(models), squeeze=False)[0]
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple"]
    for ax, (name, f) in zip(axes, models.items()):
        images = _apply_curves(f, list(rings))
        for image in images:
            _check_image(image, rings.shape[1:], f"`models[{name!r}]`", 3)
        for i, ring in enumerate(rings):
            back = images[i] @ r  # Rᵀ f(x), row-wise
            c = colours[i % len(colours)]
            ax.plot(ring[:, 0], ring[:, 1], ls="--", color=c, lw=0.8, alpha=0.6)
            ax.plot(back[:, 0], back[:, 1], color=c, lw=1.4)
        ax.set_aspect("equal")
        ax.set_xlim(-1.25, 1.25)
        ax.set_ylim(-1.25, 1.25)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(name + ("\n" + titles[name] if titles and name in titles else ""),
                     fontsize=9)
    return fig
