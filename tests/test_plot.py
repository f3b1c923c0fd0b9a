"""Figures and the deflection diagnostic (isotropic paper eq 7, Fig. 1)."""

import math

import jax.numpy as jnp
import numpy as np
import pytest

import taxdl.nn as tnn
from taxdl import plot


def test_deflection_of_elementwise_tanh_matches_eq_7():
    alphas = np.array([0.1, 1.0, 3.0, 30.0])
    d = np.array([1.0, 2.0]) / math.sqrt(5.0)
    got = plot.deflection(tnn.Tanh(), alphas, [1.0, 2.0])
    y = np.tanh(alphas[:, None] * d)
    want = np.arccos(y @ d / np.linalg.norm(y, axis=1))
    np.testing.assert_allclose(got, want, atol=1e-6)
    # saturated tanh points along (1, 1): the line is bent by atan(2) − 45°
    np.testing.assert_allclose(got[-1], math.atan(2.0) - math.pi / 4, atol=1e-4)


def test_isotropic_activation_does_not_deflect():
    rng = np.random.default_rng(0)
    for d in rng.normal(size=(5, 3)):
        got = plot.deflection(tnn.IsotropicTanh(), np.linspace(0.01, 20, 50), d)
        assert np.max(got) < 1e-3


def test_deflection_edge_cases():
    got = plot.deflection(lambda x: 0 * x, [1.0, 2.0], [1.0, 0.0])
    assert np.all(np.isnan(got))
    with pytest.raises(ValueError, match="direction"):
        plot.deflection(tnn.Tanh(), [1.0], [0.0, 0.0])


def test_plane_shapes():
    shapes = plot.plane_shapes(extent=2.0, num=50)
    assert set(shapes) == {"circles", "lines", "parallel", "axes"}
    radii = [np.linalg.norm(c, axis=1) for c in shapes["circles"]]
    assert all(np.allclose(r, r[0]) for r in radii) and math.isclose(radii[-1][0], 2.0)
    for line in shapes["lines"]:  # through the origin
        cross = line[:, 0] * line[-1, 1] - line[:, 1] * line[-1, 0]
        assert np.max(np.abs(cross)) < 1e-9


def test_figures_render(tmp_path):
    pytest.importorskip("matplotlib")
    figs = {
        "plane": plot.plane_figure(),
        "deflection": plot.deflection_figure({"tanh": tnn.Tanh(),
                                              "isotropic": tnn.IsotropicTanh()}),
        "curves": plot.learning_curves_figure(
            {"task": {"a": {"step": [1, 2, 3], "test_loss": [[1.0, 0.5, 0.2], [1.1, 0.6, 0.3]]}}}),
        "rotation": plot.rotation_figure(
            {"identity": lambda x: x}, np.eye(3),
            np.stack([np.stack([np.cos(t), np.sin(t), 0 * t], 1)
                      for t in [np.linspace(0, 6.28, 20)]])),
    }
    assert len(figs["plane"].axes) == 3
    assert len(figs["deflection"].axes) == 2
    for name, fig in figs.items():
        path = tmp_path / f"{name}.png"
        plot.save(fig, path)
        assert path.stat().st_size > 1000
    # Fig. 1: isotropic tanh keeps lines through the origin straight, tanh bends them
    line = plot.plane_shapes()["lines"][1]
    iso = np.asarray(tnn.IsotropicTanh()(jnp.asarray(line, jnp.float32)))
    ang = np.arctan2(iso[:, 1], iso[:, 0])
    ang = ang[np.linalg.norm(iso, axis=1) > 1e-3]
    assert np.ptp(np.mod(ang, np.pi)) < 1e-4


@pytest.mark.parametrize("draw, match", [
    (lambda: plot.rotation_figure({}, np.eye(3), np.zeros((1, 4, 3))), "`models`"),
    (lambda: plot.deflection_figure({}), "`activations`"),
    (lambda: plot.deflection_figure({"tanh": tnn.Tanh()}, directions=[]), "`directions`"),
    (lambda: plot.learning_curves_figure({}), "`curves`"),
    (lambda: plot.learning_curves_figure({"task": {}}), "`curves\\['task'\\]`"),
])
def test_figures_reject_empty_inputs(draw, match):
    with pytest.raises(ValueError, match=match + " must be non-empty"):
        draw()


@pytest.mark.parametrize("direction, match", [
    ([np.nan, 1.0], "`direction` must be finite"),
    ([np.inf, 1.0], "`direction` must be finite"),
    ([[1.0, 0.0]], "`direction` must be a vector of shape \\(n,\\)"),
])
def test_deflection_refuses_a_bad_direction(direction, match):
    with pytest.raises(ValueError, match=match):
        plot.deflection(tnn.Tanh(), [0.5, 1.0], direction)


def test_deflection_refuses_a_map_that_changes_the_dimension():
    with pytest.raises(ValueError, match="`f` must map ℝ\\^2 → ℝ\\^2 .*shape \\(1,\\)"):
        plot.deflection(lambda x: x[:1], [1.0], [1.0, 1.0])


def _ring(points=8):
    t = np.linspace(0.0, 2 * np.pi, points)
    return np.stack([np.cos(t), np.sin(t), 0 * t], 1)


@pytest.mark.parametrize("draw, error, match", [
    (lambda: plot.plane_figure({}, extent=-1.0), ValueError, "`extent` must be a finite "
     "number > 0, got -1.0"),
    (lambda: plot.plane_figure({}, extent=0.0), ValueError, "`extent` must be a finite "
     "number > 0"),
    (lambda: plot.plane_figure({}, extent=np.inf), ValueError, "`extent`"),
    (lambda: plot.plane_shapes(extent="3"), TypeError, "`extent` must be a number"),
    (lambda: plot.rotation_figure({"m": lambda x: x}, np.eye(3), _ring()), ValueError,
     "`rings` must have shape \\(rings, points, 3\\), got \\(8, 3\\)"),
    (lambda: plot.rotation_figure({"m": lambda x: x}, np.eye(2), _ring()[None]), ValueError,
     "`rotation` must be a 3×3 matrix, got shape \\(2, 2\\)"),
    (lambda: plot.rotation_figure({"m": lambda x: x[:2]}, np.eye(3), _ring()[None]),
     ValueError, "`models\\['m'\\]` must map ℝ\\^3 → ℝ\\^3"),
    (lambda: plot.learning_curves_figure({"t": {"m": {"step": [0, 1], "loss": [[1, 2]]}}}),
     ValueError, "`curves\\['t'\\]\\['m'\\]` has no 'test_loss' series \\(the `metric` "
     "drawn\\); it has \\['loss', 'step'\\]"),
    (lambda: plot.learning_curves_figure({"t": {"m": {"loss": [[1, 2]]}}}, "loss"),
     ValueError, "has no 'step' series"),
    (lambda: plot.learning_curves_figure({"t": {"m": {"step": [0, 1], "loss": [1, 2, 3]}}},
                                         "loss"),
     ValueError, "'loss' of shape \\(seeds, points\\).*got \\(2,\\) and \\(3,\\)"),
])
def test_figures_refuse_bad_inputs_by_name(draw, error, match, library_checks_only):
    pytest.importorskip("matplotlib")
    with pytest.raises(error, match=match):
        draw()
