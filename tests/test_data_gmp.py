"""The GmP paper's illustrative tasks, generated in-process."""

import numpy as np
import pytest

from taxdl.data import banana, digits_1d, hemisphere_rotation, levy, levy_regression, sklearn_digits


def test_levy_function_closed_form():
    assert levy(np.array([1.0]))[0] == pytest.approx(0.0, abs=1e-15)   # global minimum
    # x = 5: w = 2, sin²(2π) = 0, (w − 1)²(1 + sin²(4π)) = 1
    assert levy(np.array([5.0]))[0] == pytest.approx(1.0, abs=1e-12)
    # x = −3: w = 0, sin²(0) + 1·(1 + 0) = 1
    assert levy(np.array([-3.0]))[0] == pytest.approx(1.0, abs=1e-12)


def test_levy_regression_task():
    t = levy_regression(n_train=50, n_test=30, noise=0.0, seed=3)
    assert t.kind == "regression" and t.x_train.shape == (50, 1) and t.y_test.shape == (30, 1)
    assert t.x_train.dtype == np.float32 and t.y_train.dtype == np.float32
    np.testing.assert_allclose(t.y_train[:, 0], levy(t.x_train[:, 0]), rtol=1e-5, atol=1e-5)
    assert t.x_test.min() == -10 and t.x_test.max() == 10
    again = levy_regression(n_train=50, n_test=30, noise=0.0, seed=3)
    np.testing.assert_array_equal(t.x_train, again.x_train)
    with pytest.raises(ValueError, match="`high` must be a finite number > 1.0, got 0.0"):
        levy_regression(low=1.0, high=0.0)


def test_banana_task():
    t = banana(n_train=300, n_test=500, seed=1)
    assert t.kind == "classification" and t.num_classes == 2
    assert t.x_train.shape == (300, 2) and t.x_train.dtype == np.float32
    assert t.y_train.dtype == np.int32 and set(np.unique(t.y_train)) == {0, 1}
    assert abs(t.y_train.mean() - 0.5) < 0.01
    np.testing.assert_allclose(t.x_train.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(t.x_train.std(0), 1, atol=1e-5)
    # not linearly separable: the best least-squares hyperplane misclassifies many points
    x = np.c_[t.x_test, np.ones(len(t.x_test))]
    w = np.linalg.lstsq(np.c_[t.x_train, np.ones(300)], 2.0 * t.y_train - 1, rcond=None)[0]
    assert np.mean((x @ w > 0) == t.y_test) < 0.85
    with pytest.raises(ValueError, match="`noise` must be a finite number >= 0"):
        banana(noise=-1.0)


@pytest.mark.parametrize("make, match", [
    (lambda: levy_regression(n_train=True), "`n_train` must be an integer >= 1, got True"),
    (lambda: levy_regression(n_test=np.int64(0)), "`n_test` must be an integer >= 1"),
    (lambda: levy_regression(noise=float("inf")), "`noise` must be a finite number >= 0"),
    (lambda: levy_regression(high=float("inf")), "`high` must be a finite number"),
    (lambda: levy_regression(low=float("nan")), "`low` must be a finite number"),
    (lambda: banana(n_train=np.int64(1)), "`n_train` must be an integer >= 2"),
    (lambda: banana(noise=float("nan")), "`noise` must be a finite number >= 0"),
])
def test_bad_arguments_name_the_argument(make, match, library_checks_only):
    with pytest.raises((TypeError, ValueError), match=match):
        make()


def test_numpy_integers_are_integers():
    t = banana(n_train=np.int64(20), n_test=np.int32(10), seed=2)
    assert t.x_train.shape == (20, 2) and t.x_test.shape == (10, 2)
    np.testing.assert_array_equal(t.x_train, banana(n_train=20, n_test=10, seed=2).x_train)
    t = levy_regression(n_train=np.int64(5), n_test=np.int64(3), noise=np.float32(0.5),
                        low=np.float32(-1), high=2)
    assert t.x_test.shape == (3, 1) and t.x_test.min() == -1 and t.x_test.max() == 2


@pytest.mark.parametrize("make", [digits_1d, hemisphere_rotation, banana, levy_regression,
                                  sklearn_digits])
def test_seed_is_a_non_negative_integer(make, library_checks_only):
    """The data is a function of the seed: no `None` (fresh entropy on every call), no
    negative, fractional or string seeds; each is refused by name before any data is made
    (so also without scikit-learn)."""
    for bad, error in ((None, TypeError), (-1, ValueError), (1.5, TypeError),
                       ("0", TypeError), (True, TypeError)):
        with pytest.raises(error, match=rf"`seed` must be an integer >= 0, got {bad!r}\."):
            make(seed=bad)


def test_numpy_integer_seeds_are_seeds():
    t = banana(n_train=20, n_test=10, seed=np.int64(2))
    np.testing.assert_array_equal(t.x_train, banana(n_train=20, n_test=10, seed=2).x_train)
    t = digits_1d(n_train=10, n_test=10, seed=np.uint8(0))
    np.testing.assert_array_equal(t.x_test, digits_1d(n_train=10, n_test=10).x_test)
