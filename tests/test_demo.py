"""The embedded tasks and `taxdl demo` with tiny settings."""

import json
import math

import numpy as np
import pytest

from taxdl import cli
from taxdl.data import digits_1d, has_sklearn, hemisphere_rotation, load_task, rotation_matrix


# ---------------------------------------------------------------- tasks
def test_rotation_matrix_closed_form():
    c = math.cos(math.radians(30))
    s = math.sin(math.radians(30))
    np.testing.assert_allclose(rotation_matrix((0, 0, 30)),
                               [[c, -s, 0], [s, c, 0], [0, 0, 1]], atol=1e-12)
    np.testing.assert_allclose(rotation_matrix((30, 0, 0)),
                               [[1, 0, 0], [0, c, -s], [0, s, c]], atol=1e-12)
    r = rotation_matrix()
    np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)
    assert math.isclose(np.linalg.det(r), 1.0)


def test_hemisphere_rotation_task():
    t = hemisphere_rotation(n_polar=5, n_azimuth=8, n_test=64)
    assert t.kind == "regression" and t.in_features == 3 and t.out_features == 3
    # the pole appears once: 1 + 4 latitudes × 8 azimuths
    assert t.x_train.shape == (33, 3)
    for x in (t.x_train, t.x_test):
        np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-6)
        assert np.min(x[:, 2]) > -1e-6  # the upper hemisphere
    r = rotation_matrix((45, 45, 45))
    np.testing.assert_allclose(t.y_train, t.x_train @ r.T, atol=1e-6)
    np.testing.assert_allclose(t.y_test, t.x_test @ r.T, atol=1e-6)
    cap = hemisphere_rotation(cap_angle=30.0, n_polar=3, n_azimuth=4, n_test=16)
    assert np.min(cap.x_test[:, 2]) >= math.cos(math.radians(30)) - 1e-6
    with pytest.raises(ValueError, match="cap_angle"):
        hemisphere_rotation(cap_angle=0.0)


def test_digits_1d_task():
    a = digits_1d(n_train=200, n_test=50, seed=3)
    b = digits_1d(n_train=200, n_test=50, seed=3)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    assert a.x_train.shape == (200, 40) and a.x_test.shape == (50, 40)
    assert a.y_train.dtype == np.int32 and set(np.unique(a.y_train)) <= set(range(10))
    np.testing.assert_allclose(a.x_train.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(a.x_train.std(axis=0), 1.0, atol=1e-4)
    c = digits_1d(n_train=200, n_test=50, seed=4)
    assert not np.allclose(a.x_train, c.x_train)
    with pytest.raises(ValueError, match="length"):
        digits_1d(length=4)


@pytest.mark.parametrize("make, match", [
    (lambda: hemisphere_rotation(angles=(45.0, 45.0)), "`angles` must be three rotation"),
    (lambda: hemisphere_rotation(angles=(45.0, 45.0, "x")), "`angles` must be a finite"),
    (lambda: hemisphere_rotation(cap_angle=float("nan")), "`cap_angle` must be a finite"),
    (lambda: hemisphere_rotation(n_test=np.int64(1)), "`n_test` must be an integer >= 2"),
    (lambda: digits_1d(noise=float("inf")), "`noise` must be a finite number >= 0"),
])
def test_task_arguments_are_checked(make, match):
    with pytest.raises((TypeError, ValueError), match=match):
        make()


def test_tasks_accept_numpy_integers():
    t = hemisphere_rotation(n_polar=np.int64(5), n_azimuth=np.int32(8), n_test=np.int64(16))
    assert t.x_train.shape == (33, 3) and t.x_test.shape == (16, 3)
    d = digits_1d(n_train=np.int64(20), n_test=np.int64(10), length=np.int64(16),
                  noise=np.float32(0.1))
    assert d.x_train.shape == (20, 16) and d.x_test.shape == (10, 16)


def test_digits_1d_classes_are_separable_by_their_templates():
    # noise-free examples correlate best with their own class template (a sanity check
    # that the labels mean something), far above chance
    t = digits_1d(n_train=500, n_test=10, noise=0.0, seed=0)
    x = t.x_train
    best = []
    temps = t.extras["templates"]
    for row in x:
        scores = [np.max(np.correlate(row, tm, mode="valid")) for tm in temps]
        best.append(int(np.argmax(scores)))
    assert np.mean(np.array(best) == t.y_train) > 0.25  # chance is 0.1


def test_sklearn_digits_task():
    if not has_sklearn():
        with pytest.raises(ImportError, match="taxdl\\[digits\\]"):
            load_task("digits")
        return
    t = load_task("digits")
    assert t.x_train.shape[1] == 64 and t.num_classes == 10
    assert len(t.x_train) + len(t.x_test) == 1797
    assert 0.0 <= t.x_train.min() and t.x_train.max() <= 1.0


@pytest.mark.parametrize("fraction,expected", [(1e-6, 1), (0.5, 6), (1 - 1e-6, 11)])
def test_digits_split_keeps_both_sets_non_empty(monkeypatch, fraction, expected):
    """A stand-in for scikit-learn's loader (12 images): the test set has
    round(fraction · 12) images, at least one and at most 11."""
    import sys
    import types

    from taxdl.data import sklearn_digits

    fake = types.ModuleType("sklearn.datasets")
    fake.load_digits = lambda: types.SimpleNamespace(
        data=np.arange(12 * 64, dtype=float).reshape(12, 64) % 17,
        target=np.arange(12) % 10)
    monkeypatch.setitem(sys.modules, "sklearn", types.ModuleType("sklearn"))
    monkeypatch.setitem(sys.modules, "sklearn.datasets", fake)
    t = sklearn_digits(test_fraction=fraction)
    assert len(t.x_test) == expected and len(t.x_train) == 12 - expected


def test_boundary_distortion():
    import jax.numpy as jnp

    from taxdl._cli.demo import boundary_distortion

    t = hemisphere_rotation(n_polar=3, n_azimuth=4, n_test=8)
    ring = jnp.asarray(t.extras["rings"][-1])
    r = jnp.asarray(t.extras["rotation"])
    assert float(boundary_distortion(ring @ r.T, r)) < 1e-6          # the true rotation
    assert float(boundary_distortion(0.5 * ring @ r.T, r)) < 1e-6    # scaled: still round
    squashed = (ring * jnp.array([1.0, 0.5, 1.0])) @ r.T             # an ellipse
    rho = np.hypot(np.asarray(ring[:, 0]), 0.5 * np.asarray(ring[:, 1]))
    np.testing.assert_allclose(float(boundary_distortion(squashed, r)),
                               rho.std() / rho.mean(), rtol=1e-5)


def test_unknown_task():
    with pytest.raises(ValueError, match="rotation"):
        load_task("mnist")


# ---------------------------------------------------------------- demo
def test_demo_runs_with_tiny_settings(tmp_path, capsys):
    out = tmp_path / "demo"
    code = cli.main(["demo", "--tasks", "rotation,digits1d", "--variants", "tanh", "--steps",
                     "6", "--seeds", "2", "--output", str(out), "--quiet"])
    assert code == 0
    text = capsys.readouterr().out
    assert "rotation" in text and "digits1d" in text and "boundary distortion" in text
    results = json.loads((out / "results.json").read_text())
    assert {(r["task"], r["variant"]) for r in results} == {("rotation", "tanh"),
                                                            ("digits1d", "tanh")}
    for r in results:
        assert len(r["test_loss"]) == 2 and all(np.isfinite(r["test_loss"]))
        assert r["steps"] == 6 and r["symmetry"] == "B_n"
        assert len(r["curve_step"]) == len(r["curve_test"][0])
    acc = [r for r in results if r["task"] == "digits1d"][0]["metric"]
    assert all(0.0 <= a <= 1.0 for a in acc)
    for name in ("results.md", "learning_curves.png", "rotation.png",
                 "figure1_tanh_vs_isotropic.png", "deflection.png"):
        assert (out / name).exists(), name


def test_demo_trains_exactly_the_steps_asked(tmp_path, capsys):
    """21 steps in 20 curve points: chunks of 2 steps and a last chunk of 1 (the steps were
    rounded up to 22); results.json, the header and the curve report 21."""
    out = tmp_path / "demo"
    assert cli.main(["demo", "--tasks", "rotation", "--variants", "relu", "--steps", "21",
                     "--seeds", "2", "--no-plots", "--quiet", "--output", str(out)]) == 0
    assert "21 steps" in capsys.readouterr().out
    (r,) = json.loads((out / "results.json").read_text())
    assert r["steps"] == 21 and r["curve_step"][-1] == 21
    assert r["curve_step"] == sorted(set(r["curve_step"]))
    assert len(r["curve_step"]) == len(r["curve_test"][0])



def test_demo_results_of_a_diverged_run_are_standard_json(tmp_path, capsys):
    """A learning rate of 1e30 sends the losses to NaN: results.json stays RFC 8259 JSON
    (no NaN/Infinity tokens), with null for each non-finite number."""
    out = tmp_path / "demo"
    assert cli.main(["demo", "--tasks", "rotation", "--variants", "relu", "--steps", "3",
                     "--seeds", "1", "--learning-rate", "1e30", "--no-plots", "--quiet",
                     "--output", str(out)]) == 0
    capsys.readouterr()

    def refuse(token):
        raise AssertionError(f"{token} in results.json")

    (r,) = json.loads((out / "results.json").read_text(), parse_constant=refuse)
    assert r["train_loss"] == [None] and r["test_loss"] == [None]
    assert r["curve_test"] == [[None, None, None]] and r["curve_step"] == [1, 2, 3]
    assert r["steps"] == 3 and r["variant"] == "relu"

def test_train_variant_counts_every_step_once():
    from taxdl._cli.demo import VARIANTS, _Progress, train_variant

    progress = _Progress(5, quiet=True)
    r = train_variant(load_task("rotation"), VARIANTS[0], steps=5, seeds=1, batch_size=8,
                      learning_rate=1e-2, progress=progress, points=2)
    assert r.steps == 5 and r.curve_step == [3, 5] and progress.done == 5
    assert np.asarray(r.curve_test).shape == (1, 2)


def test_demo_runs_a_repeated_task_once(tmp_path, capsys):
    out = tmp_path / "demo"
    assert cli.main(["demo", "--tasks", "rotation,rotation", "--variants", "relu,relu",
                     "--steps", "1", "--seeds", "1", "--no-plots", "--quiet",
                     "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert "1 model × 1 task × 1 seed" in text and ", 1 step\n" in text
    assert text.count("rotation: rotation by") == 1
    results = json.loads((out / "results.json").read_text())
    assert [(r["task"], r["variant"]) for r in results] == [("rotation", "relu")]


def test_demo_removes_its_own_stale_files_only(tmp_path, capsys):
    """An earlier run's figures are removed (here --no-plots draws none); files that are
    not the demo's own, and a folder with a figure's name, stay."""
    out = tmp_path / "demo"
    out.mkdir()
    stale = ["rotation.png", "learning_curves.png", "figure1_tanh_vs_isotropic.png",
             "results.md"]
    for name in stale:
        (out / name).write_text("old")
    (out / "deflection.png").mkdir()
    keep = ["notes.txt", "rotation.png.bak", "my_results.json"]
    for name in keep:
        (out / name).write_text("mine")
    assert cli.main(["demo", "--tasks", "rotation", "--variants", "relu", "--steps", "1",
                     "--seeds", "1", "--no-plots", "--quiet", "--output", str(out)]) == 0
    assert "removed" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == sorted(
        keep + ["deflection.png", "results.json", "results.md"])
    assert (out / "results.md").read_text() != "old"
    assert all((out / name).read_text() == "mine" for name in keep)


@pytest.mark.parametrize("argv", [
    ["--tasks", "mnist"], ["--variants", "nope"], ["--steps", "0"], ["--seeds", "0"],
])
def test_demo_rejects_bad_arguments(argv, tmp_path, capsys):
    assert cli.main(["demo", *argv, "--output", str(tmp_path)]) == 2
    assert "taxdl demo:" in capsys.readouterr().err


@pytest.mark.parametrize("flag, value, limit", [("--seeds", 1025, 1024),
                                               ("--steps", 2**31, 2**31 - 1),
                                               ("--batch-size", 2**40, 2**31 - 1)])
def test_demo_names_the_range_of_its_counts(flag, value, limit, tmp_path, capsys):
    assert cli.main(["demo", flag, str(value), "--output", str(tmp_path)]) == 2
    assert f"{flag} must be in [1, {limit}], got {value}." in capsys.readouterr().err


def test_demo_rejects_a_non_finite_learning_rate_and_a_file_as_output(tmp_path, capsys):
    assert cli.main(["demo", "--learning-rate", "inf", "--output", str(tmp_path)]) == 2
    assert "--learning-rate must be a finite number > 0" in capsys.readouterr().err
    a_file = tmp_path / "results"
    a_file.write_text("")
    assert cli.main(["demo", "--tasks", "rotation", "--variants", "relu", "--steps", "1",
                     "--seeds", "1", "--no-plots", "--quiet", "--output", str(a_file)]) == 2
    assert "cannot use --output" in capsys.readouterr().err


# ---------------------------------------------------------------- bench
def test_bench_lists_and_validates(capsys, tmp_path):
    assert cli.main(["bench", "--list"]) == 0
    listed = capsys.readouterr().out.split()
    assert "activations" in listed
    assert cli.main(["bench", "--only", "no-such-benchmark"]) == 2
    assert "available" in capsys.readouterr().err
    script = tmp_path / "tiny.py"
    script.write_text("import sys\nprint('ratio 1.00x', sys.argv[1:])\n")
    assert cli.main(["bench", "--dir", str(tmp_path), "--", "--flag"]) == 0
    assert cli.main(["bench", "--dir", str(tmp_path / "missing")]) == 2
