"""Initialisers (isotropic paper App. A.2, eq 48): closed-form moments, Haar-ness, the
audits' true groups, Equinox/jax.nn.initializers compatibility, no Python loops, errors."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

import taxdl.nn as tnn
import taxdl.nn.functional as tf


def draws(init, shape, num=4000, seed=0, dtype=jnp.float32):
    keys = jax.random.split(jax.random.key(seed), num)
    return np.asarray(jax.jit(jax.vmap(lambda k: init(k, shape, dtype)))(keys), np.float64)


def test_haar_orthogonal_is_semi_orthogonal_with_gain():
    k = jax.random.key(0)
    with jax.enable_x64(True):
        for shape in ((9, 4), (3, 4, 9)):
            w = np.asarray(tnn.HaarOrthogonal(gain=2.5)(k, shape, jnp.float64))
            assert w.shape == shape
            m, n = shape[-2:]
            gram = np.swapaxes(w, -1, -2) @ w if m >= n else w @ np.swapaxes(w, -1, -2)
            np.testing.assert_allclose(gram, 6.25 * np.eye(min(m, n)) * np.ones_like(gram),
                                       atol=1e-12)


def test_haar_orthogonal_has_the_haar_moments_and_qr_without_sign_fix_does_not():
    """For Haar O(n): E W₁₁ = 0, E W₁₁² = 1/n, E tr W = 0, E (tr W)² = 1 (n ≥ 2)."""
    n = 5
    w = draws(tnn.HaarOrthogonal(), (n, n))
    se = 4 / math.sqrt(len(w))
    assert abs(w[:, 0, 0].mean()) < se
    assert w[:, 0, 0].var() == pytest.approx(1 / n, abs=4 * se / n)
    tr = np.trace(w, axis1=1, axis2=2)
    assert abs(tr.mean()) < 2 * se and tr.var() == pytest.approx(1.0, abs=0.1)
    assert 0.45 < (w[:, 0, 0] < 0).mean() < 0.55
    q = draws(tnn.QROrthogonal(), (n, n), num=500)
    np.testing.assert_allclose(q @ np.swapaxes(q, 1, 2), np.broadcast_to(np.eye(n), q.shape),
                               atol=1e-5)
    assert np.all(q[:, 0, 0] < 0)          # Householder's sign convention: not Haar


def test_householder_qr_commutes_with_conjugation_by_sign_flips():
    """The reason QROrthogonal's law keeps W ↦ DWD (its E cell ℝ× × ℤ₂ⁿ): LAPACK's QR of
    DZD is (DQD, DRD), in float64 NumPy, while a left or right flip alone changes Q
    otherwise (its left and right cells are trivial)."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        z = rng.standard_normal((6, 6))
        d = np.diag(rng.choice([-1.0, 1.0], 6))
        q, r = np.linalg.qr(z)
        qd, rd = np.linalg.qr(d @ z @ d)
        np.testing.assert_allclose(qd, d @ q @ d, atol=1e-12)
        np.testing.assert_allclose(rd, d @ r @ d, atol=1e-12)
    d = np.diag([-1.0, 1, 1, 1, 1, 1])
    assert not np.allclose(np.linalg.qr(d @ z)[0], d @ q)
    assert not np.allclose(np.linalg.qr(z @ d)[0], q @ d)


VARIANCES = [
    (tnn.IsotropicNormal(), 1 / 10),
    (tnn.IsotropicNormal("fan_out", 2.0), 4 / 6),
    (tnn.IsotropicNormal("fan_avg"), 2 / 16),
    (tnn.GlorotNormal(), 2 / 16),
    (tnn.HeNormal(), 2 / 10),
    (tnn.GlorotUniform(), 2 / 16),
    (tnn.HeUniform(), 2 / 10),
    (tnn.TruncatedNormal(0.5), 0.25),
    (tnn.SphereUniform(3.0), 9 / 10),
]


def test_variances_match_the_closed_forms():
    """Fan rules: fan_in = 10, fan_out = 6 for shape (6, 10) (Equinox's (out, in))."""
    keys = jax.random.split(jax.random.key(3), 1000)
    ws = jax.jit(lambda ks: [jax.vmap(lambda k, i=i: i(k, (6, 10)))(ks) for i, _ in VARIANCES])(
        keys)
    for (init, var), w in zip(VARIANCES, ws):
        w = np.asarray(w, np.float64)
        assert abs(w.mean()) < 4 * math.sqrt(var / w.size), init
        assert w.var() == pytest.approx(var, rel=0.03), init


def test_uniform_bounds_truncation_and_sphere_norms():
    a = math.sqrt(6 / 160)
    k = jax.random.key(4)
    w = np.asarray(tnn.GlorotUniform()(k, (60, 100)))
    assert np.abs(w).max() <= a and np.abs(w).max() > 0.99 * a
    t = np.asarray(tnn.TruncatedNormal(1.0, -2.0, 2.0)(k, (60, 100)))
    scale = 1 / math.sqrt(0.7737413)          # std of N(0,1) truncated to [−2, 2]
    assert np.abs(t).max() <= 2 * scale + 1e-5
    s = np.asarray(tnn.SphereUniform(2.0)(k, (50, 7, 5)))
    np.testing.assert_allclose(np.linalg.norm(s, axis=-1), 2.0, rtol=1e-5)
    assert tnn.Zeros()(jax.random.key(0), (3, 2)).sum() == 0
    asym = tnn.TruncatedNormal(lower=-1.0, upper=3.0)
    assert asym.taxonomy.cell("probabilistic", "L").name == "S_n"


def test_dtypes_and_jax_initializer_protocol():
    k = jax.random.key(1)
    for init in (tnn.HaarOrthogonal(), tnn.SphereUniform(), tnn.Zeros()):
        assert init(k, (4, 3), jnp.bfloat16).dtype == jnp.bfloat16
        assert init(k, (4, 3)).dtype == jnp.float32          # dtype defaults like jax.nn
        fn = tnn.as_init_fn(init)
        assert fn(k, (2, 2)).shape == (2, 2)
    assert tf.isotropic_normal(k, 5).shape == (5,)


def test_construction_has_no_python_loop_over_rows():
    """The traced program does not grow with the matrix (16 vs 128, and 256 vs 512, the
    sizes from which Haar sampling off the CPU switches to Cholesky-QR)."""
    for init in (tnn.HaarOrthogonal(), tnn.SphereUniform(), tnn.IsotropicNormal(),
                 tnn.GlorotUniform()):
        for small, large in ((16, 128), (256, 512)):
            sizes = [len(jax.make_jaxpr(lambda k, n=n: init(k, (n, n)))(jax.random.key(0)).eqns)
                     for n in (small, large)]
            assert sizes[0] == sizes[1]


def test_init_linear_and_init_weights_reinitialise_layers():
    k1, k2 = jax.random.split(jax.random.key(2))
    layer = tnn.Linear(6, 6, key=k1)
    new = tnn.init_linear(layer, tnn.HaarOrthogonal(), k2)
    np.testing.assert_allclose(new.weight @ new.weight.T, np.eye(6), atol=1e-5)
    np.testing.assert_array_equal(new.bias, layer.bias)
    eqx_layer = eqx.nn.Linear(4, 3, key=k1)
    new = tnn.init_linear(eqx_layer, jax.nn.initializers.zeros, k2, bias=tnn.SphereUniform())
    assert float(jnp.abs(new.weight).max()) == 0
    assert float(jnp.linalg.norm(new.bias)) == pytest.approx(1.0, rel=1e-5)
    mlp = eqx.nn.MLP(5, 2, 8, 2, key=k1)
    new = tnn.init_weights(mlp, tnn.SphereUniform(0.5), k2)
    for old_layer, layer in zip(mlp.layers, new.layers):
        np.testing.assert_allclose(jnp.linalg.norm(layer.weight, axis=-1), 0.5, rtol=1e-5)
        np.testing.assert_array_equal(layer.bias, old_layer.bias)
    assert not np.allclose(new.layers[1].weight[0], new.layers[2].weight[0])
    with pytest.raises(TypeError, match="`weight`"):
        tnn.init_linear(tnn.IsotropicTanh(), tnn.Zeros(), k2)


@pytest.mark.parametrize("call,err,match", [
    (lambda: tnn.HaarOrthogonal()(jax.random.key(0), (4,)), ValueError, r"\(\.\.\., out, in\)"),
    (lambda: tnn.IsotropicNormal()(jax.random.key(0), (0, 3)), ValueError, "`shape`"),
    (lambda: tnn.IsotropicNormal()(jax.random.key(0), (3, 3), jnp.int32), TypeError, "`dtype`"),
    (lambda: tnn.HaarOrthogonal(gain=0.0), ValueError, "`gain`"),
    (lambda: tnn.IsotropicNormal(mode="fan"), ValueError, "`mode`"),
    (lambda: tnn.SphereUniform(radius=-1.0), ValueError, "`radius`"),
    (lambda: tnn.TruncatedNormal(lower=1.0, upper=1.0), ValueError, "`lower`"),
    (lambda: tnn.functional.truncated_normal(jax.random.key(0), (3,), lower=2.0, upper=1.0),
     ValueError, "^truncated_normal: `lower` must be < `upper`"),
    (lambda: tnn.functional.truncated_normal(jax.random.key(0), (3,), lower="a"), TypeError,
     "^truncated_normal: `lower`"),
])
def test_bad_arguments_are_named(call, err, match, library_checks_only):
    with pytest.raises(err, match=match):
        call()


def test_checker_shows_uniform_initialisers_fail_orthogonal_invariance():
    """Bₙ is maximal for Glorot-uniform: its immediate supergroups O(n) and ℝ×₊ × Bₙ are
    rejected by the two-sample test (the iid-uniform law is neither rotation- nor
    scale-invariant; Haar and Gaussian initialisers pass O(n) in the conformance rows).
    The monomials hold ℝ×₊ × Bₙ, so they are not tested on their own."""
    from taxdl.testing import check

    kw = dict(examples=2, samples=1024, maximality=True, generations=("probabilistic",))
    report = check(tnn.GlorotUniform(), 8, **kw)
    left = next(c for c in report.cells if c.generation == "probabilistic" and c.flavour == "L")
    assert left.group == "B_n" and [m.found for m in left.maximality] == [True, True]
    assert [m.group for m in left.maximality] == ["O(8)", "ℝ×₊ × B_8"]


def test_large_haar_factors_are_the_sign_corrected_qr_factor():
    """From 256 columns the Q factor is computed by Householder QR on the CPU and by
    shifted Cholesky-QR3 elsewhere; both must give the unique QR factor with diag R > 0
    (Mezzadri's Haar construction), checked against NumPy's Householder QR with the signs
    corrected, for a tall and a batched factor (the Cholesky path called directly)."""
    from taxdl.nn.initialisers._functional import _cholesky_qr_or_householder, _positive_qr

    with jax.enable_x64(True):
        z = np.random.default_rng(5).normal(size=(2, 300, 256))
        qs = [np.asarray(f(jnp.asarray(z))) for f in (_positive_qr,
                                                      _cholesky_qr_or_householder)]
    qn, r = np.linalg.qr(z)
    qn = qn * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]
    for q in qs:
        np.testing.assert_allclose(q, qn, atol=1e-9)


def test_vmapped_large_haar_initialisation_does_not_hang():
    """`jit(vmap(HaarOrthogonal()))` over keys with 256-column factors (an ensemble of
    layers) must finish and give orthogonal matrices: the accuracy fallback must not run
    Householder and Cholesky factorisations side by side in one program (XLA's CPU
    runtime can deadlock on that). Run in a subprocess with a time limit."""
    import subprocess
    import sys

    code = (
        "import jax, numpy as np, taxdl.nn as tnn\n"
        "keys = jax.random.split(jax.random.key(1), 8)\n"
        "w = jax.jit(jax.vmap(lambda k: tnn.HaarOrthogonal()(k, (256, 256))))(keys)\n"
        "w = np.asarray(w, np.float64)\n"
        "print(np.abs(np.einsum('bij,bik->bjk', w, w) - np.eye(256)).max())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    assert float(out.stdout.split()[-1]) < 1e-5


def test_convolution_kernels_are_refused(library_checks_only):
    """Equinox convolution kernels are (out, in, *kernel), not stacks of (out, in)
    matrices: redrawn as such they would be orthogonal per 3×3 kernel slice with fans
    taken from the kernel size."""
    k = jax.random.key(0)
    conv = eqx.nn.Conv2d(3, 8, 3, key=k)
    with pytest.raises(TypeError, match="convolution kernel"):
        tnn.init_weights(eqx.nn.Sequential([conv]), tnn.HaarOrthogonal(), k)
    with pytest.raises(TypeError, match="convolution kernel"):
        tnn.init_linear(conv, tnn.IsotropicNormal(), k)


@pytest.mark.parametrize("name,kwargs,arg", [
    ("haar_orthogonal", dict(gain=float("nan")), "gain"),
    ("qr_orthogonal", dict(gain=0.0), "gain"),
    ("isotropic_normal", dict(gain=-1.0), "gain"),
    ("sphere_uniform", dict(radius=float("inf")), "radius"),
    ("uniform", dict(limit=0.0), "limit"),
    ("truncated_normal", dict(stddev=float("nan")), "stddev"),
    ("truncated_normal", dict(lower=float("-inf")), "lower"),
])
def test_functional_initialisers_validate_their_scales(name, kwargs, arg, library_checks_only):
    """A NaN, infinite, zero or negative scale would give NaN, infinite or degenerate
    weights silently; the error names the argument."""
    from taxdl.nn.initialisers import _functional as F

    with pytest.raises(ValueError, match=f"`{arg}`"):
        getattr(F, name)(jax.random.key(0), (3, 3), **kwargs)
    ok = {k: 2.0 if k != "lower" else -2.0 for k in kwargs}
    assert np.all(np.isfinite(np.asarray(getattr(F, name)(jax.random.key(0), (3, 3), **ok))))


@pytest.mark.parametrize("name,arg,bound", [
    ("haar_orthogonal", "gain", 1.0),
    ("qr_orthogonal", "gain", 1.0),
    ("isotropic_normal", "gain", 10.0),
    ("sphere_uniform", "radius", 1.0),
    ("uniform", "limit", 1.0),
    ("truncated_normal", "stddev", 2.0),
])
@pytest.mark.parametrize("dtype", [jnp.float16, jnp.float32])
def test_scales_that_overflow_the_dtype_are_refused(name, arg, bound, dtype, library_checks_only):
    """A finite scale can still give infinite weights in the requested dtype (gain 1e39 in
    float32, 1e5 in float16): refused by name. Just inside the range the weights are
    finite (a Gaussian's scale is allowed up to max/10, where |z| > 10 has probability
    ~1e-23)."""
    from taxdl.nn.initialisers import _functional as F

    largest = float(jnp.finfo(dtype).max)
    per_gain = math.sqrt(3) if name == "isotropic_normal" else 1.0   # std = gain/√fan_in
    with pytest.raises(ValueError, match=f"`{arg}`.*beyond the largest"):
        getattr(F, name)(jax.random.key(0), (3, 3), dtype, **{arg: 2 * largest})
    w = getattr(F, name)(jax.random.key(0), (3, 3), dtype,
                         **{arg: 0.5 * largest / bound * per_gain})
    assert np.all(np.isfinite(np.asarray(w, np.float64)))


def test_initialiser_arguments_must_be_callable(library_checks_only):
    from taxdl.nn.initialisers import as_init_fn, init_linear, init_weights

    layer = tnn.Linear(3, 2, key=jax.random.key(0))
    for call in (lambda: init_weights(layer, "haar", jax.random.key(1)),
                 lambda: init_linear(layer, "haar", jax.random.key(1)),
                 lambda: as_init_fn(3)):
        with pytest.raises(TypeError, match="`initialiser` must be callable"):
            call()


@pytest.mark.parametrize("lower, upper", [(3.0, 3.0001), (-8.2, -8.1), (1.0, 1.001),
                                          (-0.3, 0.1), (2.0, 2.4)])
def test_truncated_normal_on_a_narrow_interval(lower, upper):
    # the draws span the interval in units of the truncated law's standard deviation,
    # which is taken (independently) by float64 trapezoidal quadrature about the midpoint
    from taxdl.nn.initialisers import _functional as F

    c = (lower + upper) / 2
    t = np.linspace(lower, upper, 200_001)
    dens = np.exp(-(t * t - c * c) / 2)
    mean = np.trapezoid(dens * (t - c), t) / np.trapezoid(dens, t)
    sd = np.sqrt(np.trapezoid(dens * (t - c - mean) ** 2, t) / np.trapezoid(dens, t))
    w = np.asarray(F.truncated_normal(jax.random.key(0), (20_000,), jnp.float32, 1.0,
                                      lower, upper), np.float64)
    tol = 0.01 * (upper - lower)  # float32 rounding near 3 is 0.24 % of 1e-4
    assert lower - tol <= w.min() * sd and w.max() * sd <= upper + tol
    assert w.max() * sd > upper - 5 * tol and w.min() * sd < lower + 5 * tol


def test_truncated_normal_in_one_tail():
    """An interval in one tail ([4, 6] holds 3.2e-5) is rescaled to the asked standard
    deviation; one without mass in float64 ([50, 60]) is refused by name instead of a
    division by zero."""
    from taxdl.nn.initialisers import _functional as F

    w = np.asarray(F.truncated_normal(jax.random.key(1), (100_000,), jnp.float32, 0.5, 4.0, 6.0))
    assert abs(w.std() - 0.5) < 0.01
    with pytest.raises(ValueError, match="`lower`, `upper`.*no probability mass"):
        F.truncated_normal(jax.random.key(0), (3,), jnp.float32, 1.0, 50.0, 60.0)
    # deeper in a tail, where P(Z ≤ lower) rounds to 1 in float32: the draws still follow
    # the truncated normal (Kolmogorov–Smirnov against scipy's float64 CDF) with the asked
    # standard deviation, on either side
    for lower, upper in ((5.0, 6.0), (-6.0, -5.0), (10.0, 12.0), (30.0, 37.0)):
        law = scipy.stats.truncnorm(lower, upper)
        w = np.asarray(F.truncated_normal(jax.random.key(2), (100_000,), jnp.float32, 0.5,
                                          lower, upper), np.float64)
        z = w / 0.5 * law.std()   # back to the standard normal's scale
        slack = 1e-5 * max(abs(lower), abs(upper))   # the rescaling's rounding
        assert lower - slack <= z.min() and z.max() <= upper + slack
        assert abs(w.std() - 0.5) < 0.01
        assert scipy.stats.kstest(z, law.cdf).pvalue > 1e-3


def test_haar_draws_outside_jit_are_compiled_once(jax_events):
    """Building a model outside `jax.jit` draws its orthogonal weights eagerly: a second
    draw of the same shape traces and compiles nothing (the Cholesky-QR with its
    `lax.cond` fallback was traced again at every draw, ~0.14 s for 512 × 512), even with
    another gain (an argument of the compiled draw, not a constant of it)."""
    shape = (300, 260)   # wide enough for the Cholesky-QR path
    first = tf.haar_orthogonal(jax.random.key(0), shape, gain=2.0)
    with jax_events() as recorded:
        again = tf.haar_orthogonal(jax.random.key(1), shape, gain=3.0)
    assert not any("trace" in e or "compile" in e for e in recorded), recorded
    w = np.asarray(again, np.float64) / 3
    np.testing.assert_allclose(w.T @ w, np.eye(260), atol=1e-4)
    assert not np.allclose(np.asarray(first), np.asarray(again))


def _positive_qr_np(z):
    """NumPy's Householder Q with the signs of diag R made positive (Mezzadri's Haar
    construction), in float64."""
    q, r = np.linalg.qr(np.asarray(z, np.float64))
    return q * np.sign(np.diagonal(r))


def _reference_draw(name, key, shape, g):
    """Independent float64 references of the functional initialisers at scale `g`, from
    the same JAX random draws: the formula of each docstring, written out."""
    m, n = shape
    z = np.asarray(jax.random.normal(key, shape, jnp.float32), np.float64)
    u = lambda a: np.asarray(jax.random.uniform(key, shape, jnp.float32, -a, a), np.float64)
    if name == "haar_orthogonal":
        return g * _positive_qr_np(z)
    if name == "isotropic_normal":
        return g / math.sqrt(n) * z
    if name == "sphere_uniform":
        return g * z / np.linalg.norm(z, axis=-1, keepdims=True)
    if name == "glorot_uniform":
        return u(g * math.sqrt(6 / (m + n)))
    if name == "he_uniform":
        return u(g * math.sqrt(3 / n))
    if name == "uniform":
        return u(g)
    if name == "truncated_normal":
        t = np.asarray(jax.random.truncated_normal(key, -2.0, 2.0, shape, jnp.float32))
        return g / scipy.stats.truncnorm(-2, 2).std() * t
    raise AssertionError(name)


_SCALES = [("haar_orthogonal", "gain"), ("qr_orthogonal", "gain"),
           ("isotropic_normal", "gain"), ("sphere_uniform", "radius"),
           ("glorot_uniform", "gain"), ("he_uniform", "gain"), ("uniform", "limit"),
           ("truncated_normal", "stddev")]


@pytest.mark.parametrize("name,arg", _SCALES)
@pytest.mark.parametrize("how", ["float", "concrete", "traced", "traced-x64"])
def test_functional_scales_may_be_concrete_or_traced_jax_scalars(name, arg, how):
    """Every functional initialiser takes its gain (radius, limit, stddev) as a number, a
    concrete JAX scalar or a traced one (under `jax.jit`), and draws the weights of the
    formula with that scale; a float64 traced gain under x64 gives float32 weights."""
    from taxdl.nn.initialisers import _functional as F

    key, shape, g = jax.random.key(3), (4, 3), 2.5
    f = getattr(F, name)
    with jax.enable_x64(how == "traced-x64"):
        if how == "float":
            w = f(key, shape, jnp.float32, **{arg: g})
        elif how == "concrete":
            w = f(key, shape, jnp.float32, **{arg: jnp.asarray(g)})
        else:
            w = jax.jit(lambda s: f(key, shape, jnp.float32, **{arg: s}))(jnp.asarray(g))
        assert w.dtype == jnp.float32 and w.shape == shape
        w = np.asarray(w, np.float64)
    if name == "qr_orthogonal":   # Householder's signs: check the law's support instead
        np.testing.assert_allclose(w.T @ w, g * g * np.eye(3), atol=1e-5)
    else:
        np.testing.assert_allclose(w, _reference_draw(name, key, shape, g), rtol=2e-5,
                                   atol=2e-6)


def test_haar_gain_is_differentiable():
    """A traced gain is applied outside the compiled draw, so gradients reach it:
    d/dg Σ W = Σ W / g (W is linear in g)."""
    key = jax.random.key(4)
    grad = jax.grad(lambda g: jnp.sum(tf.haar_orthogonal(key, (4, 3), gain=g)))(2.0)
    z = np.asarray(jax.random.normal(key, (4, 3), jnp.float32), np.float64)
    assert float(grad) == pytest.approx(_positive_qr_np(z).sum(), rel=1e-5)


@pytest.mark.parametrize("name,arg", _SCALES)
@pytest.mark.parametrize("value,err,match", [
    (jnp.asarray(-2.0), ValueError, "finite number > 0"),
    (jnp.asarray(float("nan")), ValueError, "finite number > 0"),
    (jnp.asarray(0), ValueError, "finite number > 0"),
    (jnp.ones(2), TypeError, "real scalar"),
    (jnp.asarray(True), TypeError, "real scalar"),
    (np.asarray(7e38), ValueError, "beyond the largest"),
])
def test_concrete_jax_scales_are_validated_by_name(name, arg, value, err, match,
                                                   library_checks_only):
    """A concrete array scale is checked like a number (positive, finite, fits the
    dtype), the error naming the function and the argument; a traced one cannot be."""
    from taxdl.nn.initialisers import _functional as F

    with pytest.raises(err, match=f"^{name}: `{arg}`.*{match}"):
        getattr(F, name)(jax.random.key(0), (3, 3), jnp.float32, **{arg: value})


@pytest.mark.parametrize("name", ["haar_orthogonal", "qr_orthogonal", "isotropic_normal",
                                  "sphere_uniform", "uniform", "glorot_uniform",
                                  "he_uniform", "truncated_normal", "zeros"])
def test_shapes_may_hold_numpy_integers(name, library_checks_only):
    """Shapes read from a NumPy array (NumPy integers) are shapes of Python ints; bools,
    floats and non-positive sizes are still refused by name."""
    from taxdl.nn.initialisers import _functional as F

    f, key = getattr(F, name), jax.random.key(5)
    w = f(key, (np.int64(4), np.int32(3)))
    assert w.shape == (4, 3) and all(type(d) is int for d in w.shape)
    if name not in ("qr_orthogonal", "zeros"):
        np.testing.assert_allclose(np.asarray(w, np.float64),
                                   _reference_draw(name, key, (4, 3), math.sqrt(2) if
                                                   name == "he_uniform" else 1.0),
                                   rtol=2e-5, atol=2e-6)
    if name not in ("haar_orthogonal", "qr_orthogonal"):
        assert f(key, np.int64(5)).shape == (5,)
    for bad in ((np.bool_(True), 3), (True, 3), (3.0, 3), (np.float32(3), 3),
                (np.int64(0), 3), (3, np.int8(-1))):
        with pytest.raises(ValueError, match=f"^{name}: `shape`"):
            f(key, bad)


def test_traced_truncation_bounds_are_refused_by_name(library_checks_only):
    """The bounds choose the sampling method on the host: a concrete JAX scalar is used as
    a number, a traced one is refused with a message naming it."""
    key = jax.random.key(6)
    w = np.asarray(tf.truncated_normal(key, (5000,), jnp.float32, 1.0, jnp.asarray(-1.0),
                                       jnp.asarray(1.5)), np.float64)
    scale = 1 / scipy.stats.truncnorm(-1.0, 1.5).std()
    assert -scale * (1 + 1e-5) <= w.min() < 0 < w.max() <= 1.5 * scale * (1 + 1e-5)
    assert abs(w.std() - 1.0) < 0.03
    with pytest.raises(TypeError, match="^truncated_normal: `lower` must be a concrete"):
        jax.jit(lambda a: tf.truncated_normal(key, (3,), lower=a))(-1.0)


def test_module_scales_are_static_numbers(library_checks_only):
    """A module's scale is a static hyperparameter: a concrete JAX scalar becomes a Python
    float (as a NumPy one does); a traced one is refused with a message saying so and
    pointing to the functional form."""
    m = tnn.HaarOrthogonal(gain=jnp.asarray(2.0))
    assert type(m.gain) is float and m.gain == 2.0
    assert type(tnn.SphereUniform(radius=np.float32(2.0)).radius) is float
    w = np.asarray(m(jax.random.key(7), (3, 3)), np.float64)
    np.testing.assert_allclose(w.T @ w, 4 * np.eye(3), atol=1e-5)
    with pytest.raises(ValueError, match="`gain`"):
        tnn.HaarOrthogonal(gain=jnp.asarray(-1.0))
    with pytest.raises(TypeError, match="HaarOrthogonal: `gain` is a static hyperparameter"):
        jax.jit(lambda g: tnn.HaarOrthogonal(gain=g)(jax.random.key(0), (3, 3)))(2.0)
