"""The illustrative tasks of the GmP paper (§4.1), generated in-process: 2-D banana
classification and 1-D Levy regression."""

import math

import numpy as np

from .._types import IntLike, RealLike, check_int, check_real
from ._tasks import Task


def levy(x: np.ndarray) -> np.ndarray:
    """The 1-D Levy function, $f(x) = \\sin^2(π w) + (w - 1)^2\\,(1 + \\sin^2(2π w))$ with
    $w = 1 + (x - 1)/4$ (the d = 1 case of the Levy benchmark function; global minimum
    f(1) = 0)."""
    w = 1.0 + (np.asarray(x, np.float64) - 1.0) / 4.0
    return np.sin(np.pi * w) ** 2 + (w - 1.0) ** 2 * (1.0 + np.sin(2 * np.pi * w) ** 2)


def levy_regression(n_train: IntLike = 200, n_test: IntLike = 1000, noise: RealLike = 0.1,
                    low: RealLike = -10.0, high: RealLike = 10.0, seed: IntLike = 0) -> Task:
    """1-D Levy regression (GmP paper §4.1.1, Fig 2): inputs uniform on [low, high],
    targets $f(x) + \\mathcal N(0, \\text{noise}^2)$ for training; the test set is a
    uniform grid with noise-free targets, so its RMSE measures how well f is recovered.

    Inputs are kept in their natural units (centred, as the characteristic analysis
    assumes), so the units' characteristic points are on the data's scale.

    **Returns:** a regression [`Task`][taxdl.data.Task] with x `(N, 1)`, y `(N, 1)`.
    """
    n_train = check_int(n_train, "n_train", minimum=1)
    n_test = check_int(n_test, "n_test", minimum=1)
    noise = check_real(noise, "noise", low=0)
    low = check_real(low, "low")
    high = check_real(high, "high", low=low, low_open=True)
    seed = check_int(seed, "seed", minimum=0)
    rng = np.random.default_rng(seed)
    x_train = rng.uniform(low, high, (n_train, 1))
    y_train = levy(x_train) + noise * rng.standard_normal((n_train, 1))
    x_test = np.linspace(low, high, n_test)[:, None]
    return Task("levy", "regression", x_train.astype(np.float32), y_train.astype(np.float32),
                x_test.astype(np.float32), levy(x_test).astype(np.float32),
                description=f"1-D Levy regression on [{low:g}, {high:g}], noise σ={noise:g}",
                extras={"function": levy, "noise": noise})


def _crescent(rng, num: int, centre, radius: float, start: float, stop: float,
              noise: float) -> np.ndarray:
    t = rng.uniform(start, stop, num)
    points = np.stack([centre[0] + radius * np.cos(t), centre[1] + radius * np.sin(t)], -1)
    return points + noise * rng.standard_normal((num, 2))


def banana(n_train: IntLike = 400, n_test: IntLike = 2000, noise: RealLike = 0.25,
           seed: IntLike = 0) -> Task:
    """2-D banana classification (GmP paper §4.1.2, Fig 3): two noisy, interleaved
    banana-shaped classes (a crescent opening downwards and one opening upwards nested
    in it), standardised to zero mean and unit variance per coordinate.

    The original Banana benchmark cannot be downloaded at run time; this generator
    reproduces its character (two curved, overlapping classes that no single hyperplane
    separates and a handful of ReLU units can), not its exact points.

    **Returns:** a classification [`Task`][taxdl.data.Task] with x `(N, 2)` float32 and
    labels `(N,)` int32 in {0, 1}, balanced.
    """
    n_train = check_int(n_train, "n_train", minimum=2)
    n_test = check_int(n_test, "n_test", minimum=2)
    noise = check_real(noise, "noise", low=0)
    seed = check_int(seed, "seed", minimum=0)
    rng = np.random.default_rng(seed)

    def draw(num):
        a, b = num // 2, num - num // 2
        upper = _crescent(rng, a, (0.0, 0.0), 2.0, 0.1 * math.pi, 0.9 * math.pi, noise)
        lower = _crescent(rng, b, (0.0, 2.3), 2.0, 1.1 * math.pi, 1.9 * math.pi, noise)
        x = np.concatenate([upper, lower])
        y = np.concatenate([np.zeros(a, np.int32), np.ones(b, np.int32)])
        order = rng.permutation(num)
        return x[order], y[order]

    x_train, y_train = draw(n_train)
    x_test, y_test = draw(n_test)
    mean, std = x_train.mean(0), x_train.std(0)
    standardise = lambda x: ((x - mean) / std).astype(np.float32)  # noqa: E731
    return Task("banana", "classification", standardise(x_train), y_train,
                standardise(x_test), y_test, num_classes=2,
                description=f"2-D banana classification, noise σ={noise:g}",
                extras={"mean": mean, "std": std})
