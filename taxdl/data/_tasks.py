"""Small tasks generated in-process (no downloads): the CoLU paper's hemisphere rotation,
a procedurally generated 1-D digit task, and scikit-learn's 8×8 handwritten digits."""

import dataclasses
import math

import numpy as np

from .._types import IntLike, RealLike, check_int, check_real

TASKS = ("rotation", "digits1d", "digits")



@dataclasses.dataclass(frozen=True)
class Task:
    """A supervised task held as NumPy arrays.

    - `name`, `kind` (`"regression"` or `"classification"`), `description`.
    - `x_train`, `y_train`, `x_test`, `y_test`: inputs (float32, shape (N, d)) and targets
      (float32 (N, k) for regression, int32 (N,) class labels for classification).
    - `num_classes`: for classification, else None.
    - `extras`: task-specific arrays (e.g. the rotation matrix, the rings used in plots).
    """

    name: str
    kind: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int | None = None
    description: str = ""
    extras: dict = dataclasses.field(default_factory=dict)

    @property
    def in_features(self) -> int:
        return self.x_train.shape[1]

    @property
    def out_features(self) -> int:
        return self.num_classes if self.kind == "classification" else self.y_train.shape[1]


# ----------------------------------------------------------------------- rotation
def rotation_matrix(angles_deg=(45.0, 45.0, 45.0)) -> np.ndarray:
    """$R = R_z(γ) R_y(β) R_x(α)$ for angles (α, β, γ) in degrees about the x, y, z axes."""
    a, b, c = (math.radians(float(t)) for t in angles_deg)
    rx = np.array([[1, 0, 0], [0, math.cos(a), -math.sin(a)], [0, math.sin(a), math.cos(a)]])
    ry = np.array([[math.cos(b), 0, math.sin(b)], [0, 1, 0], [-math.sin(b), 0, math.cos(b)]])
    rz = np.array([[math.cos(c), -math.sin(c), 0], [math.sin(c), math.cos(c), 0], [0, 0, 1]])
    return rz @ ry @ rx


def _cap_points(polar: np.ndarray, azimuth: np.ndarray) -> np.ndarray:
    return np.stack([np.sin(polar) * np.cos(azimuth), np.sin(polar) * np.sin(azimuth),
                     np.cos(polar)], axis=-1)


def hemisphere_rotation(n_polar: IntLike = 16, n_azimuth: IntLike = 48,
                        cap_angle: RealLike = 90.0, angles=(45.0, 45.0, 45.0),
                        n_test: IntLike = 1024, seed: IntLike = 0) -> Task:
    """Learn a fixed rotation of a spherical cap (CoLU paper §5.1, Figure 5).

    Inputs are the points of a polar grid on the cap of the unit sphere around the pole
    $e_z$ with polar angle up to `cap_angle` (90° is the hemisphere), targets their images
    $y = Rx$ under the rotation by `angles` degrees about the x, y and z axes (45° each in
    the paper). Test inputs are uniform on the same cap. The paper fits
    $x \\mapsto w\\,λ(w'x)$ with $w, w' \\in \\mathbb R^{3\\times 3}$; an O(2)-equivariant
    activation can keep the rotational symmetry about the cap's axis at every latitude,
    where ReLU bends the boundary circle into a triangle.

    **Arguments:**

    - `n_polar`, `n_azimuth`: grid size (polar angles from 0 to the cap edge inclusive).
    - `cap_angle`: polar angle of the cap's edge in degrees, in (0, 180].
    - `angles`: rotation angles in degrees; `n_test`: test points; `seed`: test sampling.

    **Returns:** a regression [`Task`][taxdl.data.Task]; `extras` holds `rotation` (3×3)
    and `rings` (a few latitude circles, shape (rings, points, 3), for plots).
    """
    cap_angle = check_real(cap_angle, "cap_angle", low=0, high=180, low_open=True)
    n_polar, n_azimuth, n_test = (check_int(value, name, minimum=2) for name, value in (
        ("n_polar", n_polar), ("n_azimuth", n_azimuth), ("n_test", n_test)))
    seed = check_int(seed, "seed", minimum=0)
    if np.ndim(angles) != 1 or np.size(angles) != 3:
        raise ValueError(f"`angles` must be three rotation angles in degrees (about x, y, z), "
                         f"got {angles!r}.")
    angles = tuple(check_real(a, "angles") for a in angles)
    edge = math.radians(cap_angle)
    r = rotation_matrix(angles)
    polar, azimuth = np.meshgrid(np.linspace(0.0, edge, n_polar),
                                 np.linspace(0.0, 2 * np.pi, n_azimuth, endpoint=False),
                                 indexing="ij")
    x_train = _cap_points(polar.ravel(), azimuth.ravel())
    x_train = np.unique(np.round(x_train, 12), axis=0)  # the pole appears once
    rng = np.random.default_rng(seed)
    # uniform on the cap: cos(polar) uniform on [cos(edge), 1]
    cos_p = rng.uniform(math.cos(edge), 1.0, n_test)
    x_test = _cap_points(np.arccos(cos_p), rng.uniform(0, 2 * np.pi, n_test))
    lat = np.linspace(edge / 4, edge, 4)
    phi = np.linspace(0, 2 * np.pi, 121)
    rings = np.stack([_cap_points(np.full_like(phi, t), phi) for t in lat])
    f32 = lambda a: np.asarray(a, np.float32)
    return Task("rotation", "regression", f32(x_train), f32(x_train @ r.T), f32(x_test),
                f32(x_test @ r.T),
                description=f"rotation by {tuple(angles)}° of a {cap_angle:g}° spherical cap "
                            "(CoLU paper §5.1)",
                extras={"rotation": f32(r), "rings": f32(rings), "cap_angle": cap_angle})


# ----------------------------------------------------------------------- 1-D digits
def _templates() -> np.ndarray:
    """Ten hand-made length-12 stroke templates in [-1, 1], one per class."""
    t = np.linspace(0.0, 1.0, 12)
    bump = lambda c, w: np.exp(-0.5 * ((t - c) / w) ** 2)
    shapes = [
        bump(0.5, 0.12),                                    # 0: one bump
        np.where(t > 0.5, 1.0, -1.0) * 0.8,                 # 1: step up
        np.where(t > 0.5, -1.0, 1.0) * 0.8,                 # 2: step down
        bump(0.25, 0.08) + bump(0.75, 0.08),                # 3: two bumps
        2 * t - 1,                                          # 4: ramp up
        1 - 2 * t,                                          # 5: ramp down
        bump(0.3, 0.1) - bump(0.7, 0.1),                    # 6: bump then dip
        bump(0.7, 0.1) - bump(0.3, 0.1),                    # 7: dip then bump
        bump(0.15, 0.06) + bump(0.5, 0.06) + bump(0.85, 0.06),  # 8: three bumps
        0.8 - 1.6 * bump(0.5, 0.1),                         # 9: plateau with a dip
    ]
    out = np.stack(shapes)
    return out / np.max(np.abs(out), axis=1, keepdims=True)


def _smooth_noise(rng, num: int, length: int, width: float) -> np.ndarray:
    k = np.exp(-0.5 * (np.arange(-10, 11) / width) ** 2)
    k /= np.sqrt(np.sum(k ** 2))
    z = rng.normal(size=(num, length + 20))
    return np.stack([np.convolve(row, k, mode="valid")[:length] for row in z])


def digits_1d(n_train: IntLike = 4000, n_test: IntLike = 1000, length: IntLike = 40,
              noise: RealLike = 0.1, seed: IntLike = 0) -> Task:
    """A procedurally generated 1-D digit-classification task (in the spirit of MNIST-1D).

    Each example is one of ten length-12 templates placed at a random position in a window
    three times as long, stretched in time (×0.8–1.25) and amplitude (×0.7–1.3), sampled
    at `length` points, sheared by a random linear trend, and perturbed by correlated noise
    and iid noise of standard deviation `noise`. Like MNIST-1D it separates models more
    than MNIST does: a linear classifier is far from perfect, a small MLP does much better.

    **Returns:** a classification [`Task`][taxdl.data.Task] with 10 classes; inputs are
    standardised with the training statistics.
    """
    n_train = check_int(n_train, "n_train", minimum=10)
    n_test = check_int(n_test, "n_test", minimum=10)
    length = check_int(length, "length", minimum=16)
    noise = check_real(noise, "noise", low=0)
    seed = check_int(seed, "seed", minimum=0)
    rng = np.random.default_rng(seed)
    templates = _templates()
    num = n_train + n_test
    labels = rng.integers(0, 10, num)
    canvas = 36.0  # in template samples: a template covers about a third of the window
    stretch = rng.uniform(0.8, 1.25, num)
    amp = rng.uniform(0.7, 1.3, num)
    start = rng.uniform(0.0, canvas - 11 * stretch)
    src = np.arange(12, dtype=np.float64)
    grid = np.linspace(0.0, canvas, length)
    x = np.zeros((num, length))
    for i in range(num):
        pos = start[i] + src * stretch[i]
        x[i] = np.interp(grid, pos, templates[labels[i]] * amp[i], left=0.0, right=0.0)
    x += rng.uniform(-0.5, 0.5, (num, 1)) * (grid / canvas - 0.5)  # shear
    x += 2.5 * noise * _smooth_noise(rng, num, length, 2.0)  # correlated noise
    x += rng.normal(scale=noise, size=x.shape)  # iid noise
    xt, xs = x[:n_train], x[n_train:]
    mu, sd = xt.mean(axis=0), xt.std(axis=0) + 1e-8
    f32 = lambda a: np.asarray(a, np.float32)
    return Task("digits1d", "classification", f32((xt - mu) / sd),
                labels[:n_train].astype(np.int32), f32((xs - mu) / sd),
                labels[n_train:].astype(np.int32), num_classes=10,
                description=f"procedural 1-D digits, {length} samples per example",
                extras={"templates": f32(templates)})


# ----------------------------------------------------------------------- 8×8 digits
def sklearn_digits(test_fraction: RealLike = 0.2, seed: IntLike = 0) -> Task:
    """scikit-learn's 8×8 handwritten digits (1797 images shipped inside the package; the
    optional extra `taxdl[digits]`), flattened to 64 inputs scaled to [0, 1] and split at
    random into training and test sets.

    Raises `ImportError` with the install command when scikit-learn is missing.
    """
    test_fraction = check_real(test_fraction, "test_fraction", low=0, high=1, low_open=True,
                               high_open=True)
    seed = check_int(seed, "seed", minimum=0)
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise ImportError(
            "the 'digits' task needs scikit-learn: python -m pip install 'taxdl[digits]'"
        ) from None
    data = load_digits()
    x = np.asarray(data.data, np.float64) / 16.0
    y = np.asarray(data.target, np.int32)
    order = np.random.default_rng(seed).permutation(len(x))
    # both sets non-empty for every fraction in (0, 1)
    n_test = min(max(int(round(test_fraction * len(x))), 1), len(x) - 1)
    test, train = order[:n_test], order[n_test:]
    f32 = lambda a: np.asarray(a, np.float32)
    return Task("digits", "classification", f32(x[train]), y[train], f32(x[test]), y[test],
                num_classes=10, description="scikit-learn 8×8 handwritten digits")


def has_sklearn() -> bool:
    """Whether the scikit-learn digits are available."""
    try:
        import sklearn.datasets  # noqa: F401
    except ImportError:
        return False
    return True


def load_task(name: str, **kwargs) -> Task:
    """One of the embedded tasks by name: `"rotation"`, `"digits1d"` or `"digits"`."""
    makers = {"rotation": hemisphere_rotation, "digits1d": digits_1d, "digits": sklearn_digits}
    if name not in makers:
        raise ValueError(f"unknown task {name!r}; expected one of {', '.join(TASKS)}.")
    return makers[name](**kwargs)
