"""The two-sample test of probabilistic cells (NumPy; no SciPy needed).

Each probe (a scalar functional of a random function at one input, or at a pair of inputs)
gives two samples: under P(f) and
under the transformed distribution. They are compared with the two-sample
Kolmogorov–Smirnov test; the asymptotic p-value is the Kolmogorov distribution
$Q(\\lambda) = 2\\sum_{k\\ge1}(-1)^{k-1}e^{-2k^2\\lambda^2}$ at
$\\lambda = (\\sqrt{m} + 0.12 + 0.11/\\sqrt{m})D$, $m = n_1n_2/(n_1+n_2)$ (Stephens' small
sample correction). With P probes and G group elements, the cell is rejected when the
smallest p-value is below α/(P·G) (Bonferroni), so the false-positive rate per cell is at
most α.

Before the test, both samples get the same small independent jitter (10⁻³ of the pooled
mean magnitude): a point mass and the same point mass moved by rounding error are then
indistinguishable, while real differences (above 0.1% of the scale) still are. The
scale of a distance between the outputs at two inputs is that of the outputs (the mean
of their norms), not its own: where f(x) = f(x') for every draw (a scale-invariant f at
two inputs on one ray) the distance is a point mass at 0, and a transformed draw that
moves both inputs by rounding makes it ~10⁻⁷ of the outputs, not a different law.
"""

import dataclasses

import numpy as np

JITTER = 1e-3
PROBE_NAMES = ("a·f(x)", "b·f(x)", "f(x)[0]", "‖f(x)‖", "‖f(x)‖₄⁴/‖f(x)‖₂⁴",
               "Σf(x)³/‖f(x)‖₂³")
SCALAR_PROBE_NAMES = ("f(x)", "|f(x)|")
INPUT_NAMES = ("x = ê₀", "x Gaussian", "x Gaussian + ½", "x Gaussian / 4")
PAIRS = ((0, 1), (1, 2), (0, 2), (1, 3))
"""The pairs of probe inputs (indices into INPUT_NAMES) compared by the pair probes."""
PAIR_NAMES = tuple(f"{probe} at x {INPUT_NAMES[i][2:]}, x' {INPUT_NAMES[j][2:]}"
                   for i, j in PAIRS for probe in ("cos∠(f(x), f(x'))", "‖f(x) − f(x')‖"))
SCALAR_PAIR_NAMES = tuple(name.replace("cos∠(f(x), f(x'))", "f(x)·f(x')").replace(
    "‖f(x) − f(x')‖", "|f(x) − f(x')|") for name in PAIR_NAMES)
CROSS_NAMES = tuple(f"(a·f(x))(b·f(x'))/‖f(x)‖‖f(x')‖ at x {INPUT_NAMES[i][2:]}, "
                    f"x' {INPUT_NAMES[j][2:]}" for i, j in PAIRS)
ORIENTATION_INPUTS = 32
"""The most outputs (real components) whose orientation is probed: m = output size fixed
inputs give an m × m determinant."""
ORIENTATION_NAME = "det[f(x₁) … f(x_m)]/∏‖f(x_i)‖ at m Gaussian x_i (m = output size)"
JOINT_NAMES = PAIR_NAMES + CROSS_NAMES + (ORIENTATION_NAME,)
"""The probes of a random function at several inputs, after the per-input ones."""
PROBE_COUNT = len(INPUT_NAMES) * len(PROBE_NAMES) + len(JOINT_NAMES)
"""Probes per group element of a vector-valued primitive (the Bonferroni factor)."""


@dataclasses.dataclass
class Outcome:
    rejected: bool
    p_value: float
    threshold: float
    statistic: float
    probe: str
    samples: int


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """sup |F_a − F_b| of the two empirical distribution functions."""
    a, b = np.sort(a), np.sort(b)
    pooled = np.concatenate([a, b])
    fa = np.searchsorted(a, pooled, side="right") / a.size
    fb = np.searchsorted(b, pooled, side="right") / b.size
    return float(np.max(np.abs(fa - fb)))


def ks_pvalue(d: float, n1: int, n2: int) -> float:
    """Asymptotic two-sided p-value of the two-sample KS statistic `d`."""
    m = np.sqrt(n1 * n2 / (n1 + n2))
    lam = (m + 0.12 + 0.11 / m) * d
    if lam < 0.2:
        return 1.0
    k = np.arange(1, 101)
    q = 2 * np.sum((-1.0) ** (k - 1) * np.exp(-2 * k**2 * lam**2))
    return float(np.clip(q, 0.0, 1.0))


def _probe_label(index: int, total: int) -> str:
    """The name of probe `index` of `total`: the per-input probes at each input of
    INPUT_NAMES, then the pair probes (the layout of `probe_samples`)."""
    scalar = total == len(INPUT_NAMES) * len(SCALAR_PROBE_NAMES) + len(JOINT_NAMES)
    names = SCALAR_PROBE_NAMES if scalar else PROBE_NAMES
    j, p = divmod(index, len(names))
    if j < len(INPUT_NAMES):
        return f"{names[p]} at {INPUT_NAMES[j]}"
    k = index - len(INPUT_NAMES) * len(names)
    joint = (SCALAR_PAIR_NAMES if scalar else PAIR_NAMES) + JOINT_NAMES[len(PAIR_NAMES):]
    return joint[k] if k < len(joint) else f"probe {index}"


def _scale_columns(p: int) -> list[tuple[int, ...]]:
    """For each of `p` probes (the layout of `probe_samples`), the probe columns whose
    pooled mean magnitude sets its jitter: itself, except for the distance between the
    outputs at a pair of inputs, which takes the norms (|f| for scalar outputs) at both,
    and the cosine between them, the cross products and the orientation, which take none
    (an empty tuple: scale 1). These are scale-free, in [−1, 1], with an absolute rounding
    error (~1e-7 in float32 whatever their value): a law that gives one of them one value
    near 0 (an orthogonal map at two fixed inputs) would otherwise be jittered below that
    error, and two samples that differ by rounding only would be told apart."""
    scalar = p == len(INPUT_NAMES) * len(SCALAR_PROBE_NAMES) + len(JOINT_NAMES)
    names = SCALAR_PROBE_NAMES if scalar else PROBE_NAMES
    norm = len(names) - 1 if scalar else names.index("‖f(x)‖")
    per_input = len(INPUT_NAMES) * len(names)
    out = []
    for j in range(p):
        k = j - per_input
        if 0 <= k < len(PAIR_NAMES) and k % 2 == 1:
            a, b = PAIRS[k // 2]
            out.append((a * len(names) + norm, b * len(names) + norm))
        elif (0 <= k < len(PAIR_NAMES) and not scalar) or k >= len(PAIR_NAMES):
            out.append(())
        else:
            out.append((j,))
    return out


def two_sample_test(base: np.ndarray, moved: np.ndarray, alpha: float,
                    rng: np.random.Generator) -> Outcome:
    """Compare `base` (N, P) with each of `moved` (G, N, P), probe by probe."""
    g, n, p = moved.shape
    scale_columns = _scale_columns(p)
    threshold = alpha / (p * g)
    finite = np.isfinite(base).all() and np.isfinite(moved).all()
    if not finite:
        bad_base = ~np.isfinite(base).all(axis=0)
        bad_moved = ~np.isfinite(moved).all(axis=(0, 1))
        if np.any(bad_base != bad_moved):
            j = int(np.argmax(bad_base != bad_moved))
            return Outcome(True, 0.0, threshold, 1.0, _probe_label(j, p) +
                           " (non-finite on one side only)", n)
    best = Outcome(False, 1.0, threshold, 0.0, "", n)
    for j in range(p):
        a = base[:, j]
        for k in range(g):
            b = moved[k, :, j]
            keep_a, keep_b = a[np.isfinite(a)], b[np.isfinite(b)]
            if keep_a.size < 2 or keep_b.size < 2:
                continue
            scale = 1.0
            if scale_columns[j]:
                cols = list(scale_columns[j])
                pooled = np.concatenate([base[:, cols].ravel(), moved[k][:, cols].ravel()])
                pooled = pooled[np.isfinite(pooled)]
                scale = (np.mean(np.abs(pooled)) if pooled.size else 0.0) + 1e-30
            ja = keep_a + JITTER * scale * rng.standard_normal(keep_a.size)
            jb = keep_b + JITTER * scale * rng.standard_normal(keep_b.size)
            d = ks_statistic(ja, jb)
            pv = ks_pvalue(d, ja.size, jb.size)
            if pv < best.p_value or (pv == best.p_value and d > best.statistic):
                best = Outcome(pv < threshold, pv, threshold, d,
                               _probe_label(j, p), n)
    return best
