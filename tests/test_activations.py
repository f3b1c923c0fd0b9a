"""Elementwise and isotropic activations against independent float64 NumPy evaluations of
the papers' formulas (isotropic paper eqs 15–21, capsule squash), on random and edge-case
inputs; Jacobians against closed forms and finite differences; dtypes; bad input."""

import decimal
import functools as ft
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special

import taxdl.nn as tnn
import taxdl.nn.functional as F
from taxdl.groups import Affine
from taxdl.testing import assert_algebraic

RNG = np.random.default_rng(0)
X64 = RNG.normal(size=(6, 5)) * np.array([[0.1], [0.5], [1.0], [2.0], [4.0], [9.0]])


def _x64():
    return jax.enable_x64(True)


# ============================================================================ elementwise
ELEMENTWISE = {
    "relu": (F.relu, lambda x: np.maximum(x, 0)),
    "leaky_relu": (ft.partial(F.leaky_relu, negative_slope=0.2),
                   lambda x: np.where(x >= 0, x, 0.2 * x)),
    "elu": (ft.partial(F.elu, alpha=1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x))),
    "gelu": (F.gelu, lambda x: 0.5 * x * (1 + special.erf(x / np.sqrt(2)))),
    "silu": (F.silu, lambda x: x / (1 + np.exp(-x))),
    "softplus": (F.softplus, lambda x: np.log1p(np.exp(x))),
    "sigmoid": (F.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    "tanh": (F.tanh, np.tanh),
    "hard_tanh": (F.hard_tanh, lambda x: np.clip(x, -1, 1)),
    "sin": (F.sin, np.sin),
}


def test_elementwise_match_numpy_float64():
    x = np.concatenate([X64.ravel(), [0.0, -0.0, 1.0, -1.0, 30.0, -30.0]])
    with _x64():
        for name, (f, ref) in ELEMENTWISE.items():
            y = np.asarray(f(jnp.asarray(x, jnp.float64)))
            np.testing.assert_allclose(y, ref(x), rtol=1e-12, atol=1e-14, err_msg=name)
    for name, (f, ref) in ELEMENTWISE.items():
        y = np.asarray(f(jnp.asarray(x, jnp.float32)), np.float64)
        np.testing.assert_allclose(y, ref(x), rtol=2e-6, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16], ids=["float16", "bfloat16"])
def test_elementwise_half_precision_is_rounded_from_float32(dtype):
    """Half-precision inputs are computed in float32 and rounded once: every elementwise
    activation is within one unit in the last place of the float64 reference rounded to
    the half dtype (two roundings), or within float32's own absolute accuracy 1e-6 where
    float32 cancels (GELU's far negative tail), over [−14, 14] in steps. Computed in half
    precision, sigmoid(−12) and silu(−12) were 0 in float16 (e¹² overflows: 6e-6 and
    −7e-5 are representable) and GELU was five units off in bfloat16 at −3."""
    grid = np.asarray(jnp.linspace(-14, 14, 2801).astype(dtype))
    grid = np.unique(np.concatenate([grid, [-12.0, -3.0]]).astype(dtype))
    x64 = grid.astype(np.float64)
    refs = dict(ELEMENTWISE, gelu_tanh=(ft.partial(F.gelu, approximate=True), lambda x: 0.5 * x
                * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))))
    info = jnp.finfo(dtype)
    for name, (f, ref) in refs.items():
        y = np.asarray(f(jnp.asarray(grid)))
        assert y.dtype == grid.dtype, name
        want = ref(x64).astype(grid.dtype).astype(np.float64)
        got = y.astype(np.float64)
        # one unit in the last place at the reference's binade (the smallest normal's
        # below it), or float32's absolute accuracy
        ulp = np.maximum(2.0 ** np.floor(np.log2(np.maximum(np.abs(want), float(info.tiny))))
                         * float(info.eps), 1e-6)
        assert np.all(np.abs(got - want) <= ulp), (name, grid[np.abs(got - want) > ulp])


def test_elementwise_modules_delegate_and_keep_dtype():
    x = jnp.asarray(X64[2], jnp.float32)
    pairs = [(tnn.ReLU(), F.relu), (tnn.LeakyReLU(0.2), ELEMENTWISE["leaky_relu"][0]),
             (tnn.ELU(1.5), ELEMENTWISE["elu"][0]), (tnn.GELU(), F.gelu), (tnn.SiLU(), F.silu),
             (tnn.Softplus(), F.softplus), (tnn.Sigmoid(), F.sigmoid), (tnn.Tanh(), F.tanh),
             (tnn.HardTanh(), F.hard_tanh), (tnn.Sin(), F.sin)]
    for module, f in pairs:
        np.testing.assert_array_equal(np.asarray(module(x)), np.asarray(f(x)))
    for dtype in (jnp.bfloat16, jnp.float16):
        assert tnn.GELU()(x.astype(dtype)).dtype == dtype


def test_approximate_gelu_at_large_magnitudes():
    """The tanh form against float64 NumPy, and finite derivatives where x³ overflows
    (float16 at 1e3, float32 at 1e30): 1 for large positive x, 0 for large negative."""
    x64 = np.array([-40.0, -9.0, -3.0, -0.5, 0.0, 0.7, 3.0, 9.0, 40.0])
    ref = 0.5 * x64 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64**3)))
    y = F.gelu(jnp.asarray(x64, jnp.float32), approximate=True)
    np.testing.assert_allclose(np.asarray(y, np.float64), ref, rtol=2e-6, atol=1e-6)
    for dtype, big in ((jnp.float16, 1e3), (jnp.float32, 1e30)):
        x = jnp.asarray([-big, big], dtype)
        g = jax.grad(lambda x: jnp.sum(F.gelu(x, approximate=True)))(x)
        np.testing.assert_array_equal(np.asarray(g, np.float64), [0.0, 1.0])
        np.testing.assert_array_equal(np.asarray(F.gelu(x, approximate=True)),
                                      np.asarray(jnp.asarray([0.0, big], dtype)))


# ============================================================================ isotropic
def _radial_np(x, sigma):
    """σ(‖x‖) x̂ row-wise in float64, 0 at the origin (eq 11)."""
    r = np.linalg.norm(x, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = sigma(r) * x / r
    return np.where(r > 0, out, 0.0)


def _blend_np(t):
    t = np.clip(t, 0, 1)
    return t**2 / (t**2 + (1 - t) ** 2)


def _soft_sigma_np(r, alpha, r0, delta):
    """σ(r) = ∫₀ʳ σ' with σ' = α + (1 − α) w((u − R₀ + δ)/2δ), by adaptive quadrature
    (eq 20), independent of the closed form used by the library."""
    def dsig(u):
        return alpha + (1 - alpha) * _blend_np((u - r0 + delta) / (2 * delta))

    flat = np.ravel(r)
    lo, hi = r0 - delta, r0 + delta
    vals = []
    for v in flat:
        pieces = [alpha * min(v, lo)]
        if v > lo:
            pieces.append(integrate.quad(dsig, lo, min(v, hi), epsabs=1e-14, epsrel=1e-13)[0])
        if v > hi:
            pieces.append(v - hi)
        vals.append(sum(pieces))
    return np.reshape(vals, np.shape(r))


ISOTROPIC = {
    "tanh": (F.isotropic_tanh, np.tanh, 1.0),
    "relu": (ft.partial(F.isotropic_relu, r0=1.5), lambda r: np.maximum(r - 1.5, 0), 0.0),
    "relu_capped": (ft.partial(F.isotropic_relu, r0=1.0, r_max=2.0),
                    lambda r: np.minimum(np.maximum(r - 1.0, 0), 2.0), 0.0),
    "threshold": (ft.partial(F.isotropic_threshold, r0=2.0), lambda r: np.where(r < 2, 0, r),
                  0.0),
    "leaky": (ft.partial(F.isotropic_leaky_relu, alpha=0.1, r0=2.0),
              lambda r: np.where(r < 2, 0.1 * r, r - 0.9 * 2.0), 0.1),
    "soft": (ft.partial(F.isotropic_soft_relu, r0=2.0, delta=1.0),
             lambda r: _soft_sigma_np(r, 0.0, 2.0, 1.0), 0.0),
    "soft_leaky": (ft.partial(F.isotropic_soft_leaky_relu, alpha=0.2, r0=3.0, delta=1.5),
                   lambda r: _soft_sigma_np(r, 0.2, 3.0, 1.5), 0.2),
    "sinusoid": (ft.partial(F.isotropic_sinusoid, lam=1.7), lambda r: r + 1.7 * np.sin(r),
                 2.7),
    "squash": (F.squash, lambda r: r**2 / (1 + r**2), 0.0),
    "general": (ft.partial(F.isotropic, sigma=np.arctan), np.arctan, 1.0),
}


Q5, _ = np.linalg.qr(RNG.normal(size=(5, 5)))  # a Haar-like rotation for eq 13


def _all_at_once(f):
    """Values on the rows, on the rotated rows, and reverse/forward Jacobians on the first
    five rows, in one compiled program (one compile per profile and dtype)."""
    def run(x, xq):
        jr = jax.vmap(jax.jacrev(f))(x[:5])
        jf = jax.vmap(jax.jacfwd(f))(x[:5])
        return f(x), f(xq), jr, jf
    return jax.jit(run)


@pytest.mark.parametrize("name", list(ISOTROPIC))
def test_isotropic_values_jacobian_and_equivariance(name):
    """Against the NumPy float64 formula (eqs 15–21, squash) on random rows, the zero
    vector and a tiny row; J = g I + (σ' − g) x̂x̂ᵀ with g = σ(r)/r (σ' by central
    differences of the NumPy σ) and J(0) = σ'(0) I, reverse = forward mode; and
    f(Rx) = R f(x) for a rotation R (eq 13)."""
    f, sigma, dsig0 = ISOTROPIC[name]
    if name == "general":  # a JAX-traceable σ for the library, NumPy's for the reference
        f = ft.partial(F.isotropic, sigma=jnp.arctan)
    x = np.concatenate([np.zeros((1, 5)), X64[1:5], X64[5:], X64[:1], 1e-8 * X64[:1]])
    ref = _radial_np(x, sigma)
    with _x64():
        y, yq, jr, jf = map(np.asarray, _all_at_once(f)(jnp.asarray(x), jnp.asarray(x @ Q5.T)))
    np.testing.assert_allclose(y, ref, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(yq, y @ Q5.T, atol=1e-12)
    np.testing.assert_allclose(jf, jr, atol=1e-12)
    np.testing.assert_allclose(jr[0], dsig0 * np.eye(5), atol=1e-12)
    for xi, j in zip(x[1:5], jr[1:5]):
        r = np.linalg.norm(xi)
        h = 1e-6 * max(r, 1)
        dsig = (sigma(np.array(r + h)) - sigma(np.array(r - h))) / (2 * h)
        g = sigma(np.array(r)) / r
        u = xi / r
        np.testing.assert_allclose(j, g * np.eye(5) + (dsig - g) * np.outer(u, u), atol=1e-6)
    y32 = np.asarray(jax.jit(f)(jnp.asarray(x, jnp.float32)), np.float64)
    np.testing.assert_allclose(y32, ref, rtol=1e-5, atol=1e-5)


def test_soft_forms_derivative_is_the_blend_and_sigma_starts_at_zero():
    """σ' of eq 20 (α + (1 − α)w) recovered by finite differences of the library's σ;
    σ(0) = 0, continuity at the window ends, and eq 19 beyond the window."""
    alpha, r0, delta = 0.2, 3.0, 1.5
    f = ft.partial(F.isotropic_soft_leaky_relu, alpha=alpha, r0=r0, delta=delta)
    radii = np.array([0.5, 1.4, 1.5, 1.6, 2.3, 3.0, 3.9, 4.5, 4.6, 7.0])
    h = 1e-6
    beyond = np.array([4.5 + 1e-9, 6.0, 10.0])
    r = np.concatenate([radii + h, radii - h, beyond, [0.0]])
    with _x64():
        sig = np.asarray(jax.jit(f)(jnp.asarray(r[:, None] * np.eye(3)[0])))[:, 0]
    fd = (sig[:10] - sig[10:20]) / (2 * h)
    expect = alpha + (1 - alpha) * _blend_np((radii - r0 + delta) / (2 * delta))
    np.testing.assert_allclose(fd, expect, atol=1e-6)
    assert sig[-1] == 0.0
    # beyond the window: x − (1 − α)R₀ x̂ (eq 19)
    np.testing.assert_allclose(sig[20:23], beyond - (1 - alpha) * r0, atol=1e-12)


def _blend_integral_decimal(t: float) -> float:
    """W(t) = t/2 + ¼ log(2t² − 2t + 1) in 400-digit decimal arithmetic (no cancellation)."""
    with decimal.localcontext() as ctx:
        ctx.prec = 400
        d = decimal.Decimal(t)
        return float(d / 2 + (2 * d * d - 2 * d + 1).ln() / 4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_soft_relu_window_start_is_accurate(dtype):
    """σ(r) = 2δ W(t) just above R₀ − δ (eq 20), where W(t) ≈ t³/3: the closed form's two
    terms of size t/2 cancel, so σ is checked against a 400-digit evaluation of it, for t
    from 1e-12 to 1, to within 16 ε relative (where W is a normal number), and σ ≥ 0."""
    r0, delta = 1.0, 0.5
    t = np.concatenate([np.geomspace(1e-12, 1e-2, 41), np.linspace(0.02, 1.0, 50)])
    r = np.asarray(r0 - delta + 2 * delta * t, dtype)
    t_exact = (r.astype(np.float64) - (r0 - delta)) / (2 * delta)   # t of the rounded r
    keep = t_exact > 0
    r, t_exact = r[keep], t_exact[keep]
    expect = np.array([2 * delta * _blend_integral_decimal(v) for v in t_exact])
    with _x64():
        y = np.asarray(jax.jit(ft.partial(F.isotropic_soft_relu, r0=r0, delta=delta))(
            jnp.asarray(r[:, None] * np.eye(2, dtype=dtype)[0])))[:, 0].astype(np.float64)
    assert np.all(y >= 0)
    eps, tiny = np.finfo(dtype).eps, np.finfo(dtype).tiny
    normal = expect > tiny / eps
    np.testing.assert_allclose(y[normal], expect[normal], rtol=16 * eps)


def test_isotropic_extreme_magnitudes_float32():
    """|x| ∈ {1e-30, 1e30} in float32, in one batch with ordinary rows and the zero
    vector (the rescue path of the norm): a unit vector (not 0) at 1e30 and 3e38, ≈ x at
    1e-30, x − R₀x̂ for the relu profile at 1e30, finite values and gradients."""
    u = np.asarray(X64[2] / np.linalg.norm(X64[2]), np.float32)
    batch = jnp.asarray(np.stack([X64[1], 1e30 * u, 3e38 * u, 1e-30 * u, np.zeros(5)]),
                        jnp.float32)
    u64 = np.asarray(u, np.float64)
    fs = (F.isotropic_tanh, ft.partial(F.isotropic_relu, r0=1.0), F.squash,
          ft.partial(F.isotropic_sinusoid, lam=0.5),
          ft.partial(F.isotropic_soft_leaky_relu, alpha=0.1, r0=1.0, delta=0.5))

    @jax.jit
    def run(x):
        ordinary = x[jnp.array([0, 1, 3, 4])]  # (an output of norm 3e38 overflows a sum)
        return [jax.value_and_grad(lambda x: jnp.sum(f(x) * jnp.arange(5.0)))(ordinary)
                for f in fs], F.isotropic_tanh(x), F.isotropic_relu(x, 1.0)

    grads, yt, yr = run(batch)
    yt, yr = np.asarray(yt, np.float64), np.asarray(yr, np.float64)
    np.testing.assert_allclose(yt[0], _radial_np(X64[1:2], np.tanh)[0], rtol=1e-5)
    np.testing.assert_allclose(yt[1:3], [u64, u64], rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(yt[3], 1e-30 * u64, rtol=1e-6)
    np.testing.assert_allclose(yr[1], 1e30 * u64, rtol=1e-6)
    for y, g in grads:
        assert bool(jnp.all(jnp.isfinite(g))) and bool(jnp.isfinite(y))


def test_isotropic_jacobians_at_extreme_magnitudes_float32():
    """Reverse- and forward-mode Jacobians in float32 at |x| ∈ {1e-30, 1e-20, 5e19,
    1e30} against J = g I + (σ' − g) x̂x̂ᵀ, g = σ(r)/r, in float64 (closed-form σ'),
    relative to the largest entry of J: at 5e19 the radial term (k/r)(x·v) needs k/r ≈
    1/r², below float32's range, and at 1e-20 the plain sum of squares underflows to 0."""
    u = np.asarray(X64[3] / np.linalg.norm(X64[3]), np.float32)
    radii = np.array([1e-30, 1e-20, 5e19, 1e30], np.float32)
    x32 = radii[:, None] * u
    x64 = np.asarray(x32, np.float64)
    cases = {  # σ and σ' in float64
        "tanh": (F.isotropic_tanh, np.tanh, lambda r: 1 / np.cosh(np.minimum(r, 300)) ** 2),
        "squash": (F.squash, lambda r: r**2 / (1 + r**2), lambda r: 2 * r / (1 + r**2) ** 2),
        "relu": (ft.partial(F.isotropic_relu, r0=1.0), lambda r: np.maximum(r - 1, 0),
                 lambda r: (r > 1).astype(float)),
    }
    for name, (f, sigma, dsigma) in cases.items():
        jr, jf = jax.jit(lambda x: (jax.vmap(jax.jacrev(f))(x), jax.vmap(jax.jacfwd(f))(x)))(
            jnp.asarray(x32))
        for xi, a, b in zip(x64, np.asarray(jr, np.float64), np.asarray(jf, np.float64)):
            r = np.linalg.norm(xi)
            g, k = sigma(r) / r, dsigma(r) - sigma(r) / r
            ref = g * np.eye(5) + k * np.outer(xi / r, xi / r)
            scale = np.abs(ref).max() or 1.0   # relu inside R₀: J = 0 exactly
            for j in (a, b):
                np.testing.assert_allclose(j / scale, ref / scale, atol=1e-5,
                                           err_msg=f"{name} at |x| = {r:.1e}")


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_isotropic_infinite_components(dtype):
    """A row with infinite components points along their signs d (its other components
    vanish beside them): a bounded σ gives σ(∞) d/‖d‖ (tanh, squash: 1; relu with R_∞:
    R_∞), a linearly growing σ (relu, leaky, sinusoid: A(∞) = 1) keeps the infinite
    components and its other components, as x − R₀x̂ does at r → ∞. The other rows of
    the batch keep their values and finite gradients (derivatives at an infinite point
    are not defined)."""
    x = np.array([[np.inf, 1.0, 0.0], [-np.inf, np.inf, 2.0], [1.0, -2.0, 2.0]])
    d = np.array([[1.0, 0, 0], [-1 / np.sqrt(2), 1 / np.sqrt(2), 0]])
    cases = [(F.isotropic_tanh, 1.0, np.tanh), (F.squash, 1.0, lambda r: r * r / (1 + r * r)),
             (ft.partial(F.isotropic_relu, r0=1.0, r_max=2.0), 2.0,
              lambda r: np.clip(r - 1.0, 0, 2.0))]
    linear = [ft.partial(F.isotropic_relu, r0=1.0), ft.partial(F.isotropic_leaky_relu,
                                                                alpha=0.1, r0=1.0),
              ft.partial(F.isotropic_sinusoid, lam=0.5),
              ft.partial(F.isotropic_soft_leaky_relu, alpha=0.1, r0=1.0, delta=0.5)]
    with jax.enable_x64(dtype == jnp.float64):
        weights = jnp.arange(3.0, dtype=dtype)
        xs = jnp.asarray(x, dtype)
        for f, limit, sigma in cases:
            y = np.asarray(jax.jit(f)(xs), np.float64)
            np.testing.assert_allclose(y[:2], limit * d, rtol=1e-6, atol=1e-30)
            np.testing.assert_allclose(y[2], _radial_np(x[2:], sigma)[0], rtol=1e-5)
            g = jax.jit(jax.grad(lambda x: jnp.sum(f(x) * weights)))(xs)
            assert np.all(np.isfinite(np.asarray(g)[2]))
        for f in linear:
            y = np.asarray(jax.jit(f)(xs), np.float64)
            np.testing.assert_array_equal(y[:2], x[:2])  # x − (1 − α)R₀ d̂, to rounding
            g = jax.jit(jax.grad(lambda x: jnp.sum(f(x) * weights)))(xs)
            assert np.all(np.isfinite(np.asarray(g)[2]))
    z = jnp.asarray([[complex(np.inf, 1.0), 2.0 + 0j], [1j, 1.0 + 0j]], jnp.complex64)
    yz = np.asarray(F.unitary_isotropic(z))
    np.testing.assert_allclose(yz[0], [1.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(yz[1], np.tanh(np.sqrt(2)) * np.array([1j, 1]) / np.sqrt(2),
                               rtol=1e-6)


@pytest.mark.parametrize("trusted", [True, False])
def test_isotropic_nan_rows_stay_nan(trusted):
    """A row holding a NaN (with or without infinite components beside it) gives NaN in
    every component, never a silent number, whichever branch of the norm the batch
    takes (all rows in the trusted range, or one tiny row forcing the max-scaled pass);
    the other rows keep their values."""
    x = np.array([[np.nan, 1.0, 0.0], [np.inf, np.nan, 0.0], [1.0, -2.0, 2.0],
                  [1.0, 1.0, 1.0] if trusted else [1e-30, 0.0, 0.0]], np.float32)
    for f, sigma in [(F.isotropic_tanh, np.tanh),
                     (ft.partial(F.isotropic_relu, r0=1.0, r_max=2.0),
                      lambda r: np.clip(r - 1.0, 0, 2.0)),
                     (ft.partial(F.isotropic_leaky_relu, alpha=0.1, r0=1.0),
                      lambda r: np.where(r < 1.0, 0.1 * r, r - 0.9))]:
        y = np.asarray(jax.jit(f)(jnp.asarray(x)), np.float64)
        assert np.all(np.isnan(y[:2]))
        np.testing.assert_allclose(y[2:], _radial_np(x[2:].astype(np.float64), sigma),
                                   rtol=1e-5, atol=1e-37)


class _ScaledTanh(eqx.Module):
    """σ(r) = tanh(a r) with a trainable slope a."""

    a: jax.Array

    def __call__(self, r):
        return jnp.tanh(self.a * r)


def test_isotropic_sigma_with_parameters_gets_its_gradient():
    """A σ holding arrays is differentiated through: d/da Σᵢ wᵢ f(x)ᵢ = r sech²(ar) (w·x̂)
    in closed form, the values equal the fixed-σ kernel's, and J(0) = σ'(0) I = a I."""
    with jax.enable_x64(True):
        x = jnp.asarray(np.concatenate([X64[:4], np.zeros((1, 5))]), jnp.float64)
        w = jnp.arange(5.0, dtype=jnp.float64)
        sigma = _ScaledTanh(jnp.asarray(0.7, jnp.float64))
        y = jax.jit(F.isotropic)(x, sigma)
        np.testing.assert_allclose(np.asarray(y), _radial_np(X64[:4], lambda r: np.tanh(0.7 * r)
                                                              ).tolist() + [[0.0] * 5],
                                   rtol=1e-12, atol=1e-300)
        grad = jax.jit(jax.grad(lambda s, x: jnp.sum(F.isotropic(x, s) * w)))(sigma, x).a
        r = np.linalg.norm(X64[:4], axis=1)
        expect = np.sum(r / np.cosh(0.7 * r) ** 2 * (X64[:4] @ np.arange(5.0)) / r)
        np.testing.assert_allclose(float(grad), expect, rtol=1e-10)
        jac = jax.jacfwd(lambda v: F.isotropic(v, sigma))(jnp.zeros(5, jnp.float64))
        np.testing.assert_allclose(np.asarray(jac), 0.7 * np.eye(5), rtol=1e-6)
    # the modules keep σ static: one holding arrays is refused, not silently left untrained
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Equinox's own warning about a static array
        for make, who in ((lambda: tnn.Isotropic(sigma), "Isotropic"),
                          (lambda: tnn.Bloch(sigma), "Bloch"),
                          (lambda: tnn.LatticeIsotropic(sigma=sigma), "LatticeIsotropic")):
            with pytest.raises(TypeError, match=f"{who}: `sigma` holds arrays"):
                make()


class _ClosureScaledTanh(eqx.Module):
    """A module whose σ is a closure over its parameter: σ(r) = a tanh r."""

    a: jax.Array

    def __call__(self, x):
        return F.isotropic(x, lambda r: self.a * jnp.tanh(r))


def test_sigma_closing_over_a_parameter_gets_its_gradient():
    """A σ written as a closure over a traced parameter (`lambda r: self.a * tanh r` in a
    module) is differentiated through, jitted or not: d/da Σ‖f(x)‖² = 2a Σ tanh²(r), and
    d/da Σ f(x) = Σ tanh(r) Σᵢ x̂ᵢ (NumPy float64); the U(n) form alike."""
    xn = np.random.default_rng(7).normal(size=(3, 4))
    x = jnp.asarray(xn, jnp.float32)
    r = np.linalg.norm(xn, axis=-1)
    model = _ClosureScaledTanh(jnp.asarray(2.0))
    loss = lambda m: jnp.sum(m(x) ** 2)
    expect = 2 * 2.0 * np.sum(np.tanh(r) ** 2)
    for grad in (eqx.filter_grad(loss), eqx.filter_jit(eqx.filter_grad(loss))):
        np.testing.assert_allclose(float(grad(model).a), expect, rtol=1e-5)
    expect = np.sum(np.tanh(r) * xn.sum(-1) / r)
    grad = jax.jit(jax.grad(lambda a: F.isotropic(x, lambda r: a * jnp.tanh(r)).sum()))
    np.testing.assert_allclose(float(grad(2.0)), expect, rtol=1e-5)
    z = x.astype(jnp.complex64)
    grad = jax.jit(jax.grad(lambda a: jnp.real(F.unitary_isotropic(
        z, lambda s: a * jnp.tanh(jnp.sqrt(s)))).sum()))
    np.testing.assert_allclose(float(grad(2.0)), expect, rtol=1e-5)
    # a module refuses a static σ that closes over an array, as one that holds it
    scale = jnp.asarray(2.0)
    with pytest.raises(TypeError, match="`sigma` holds arrays"):
        tnn.Isotropic(lambda r: scale * jnp.tanh(r))


@pytest.mark.parametrize("scale", [1e-6, 1e-12, 1e-20, 1e-30, 1e-36])
def test_sigma_holding_arrays_has_finite_input_gradients_at_small_rows(scale):
    """The path for a σ holding arrays (differentiated by JAX) at rows of tiny norm in
    float32: J ≈ σ'(0) I = 2I for σ = 2 tanh, so the gradient of Σf is 2·1 and the
    forward-mode Jacobian is 2I (both were NaN below ‖x‖ ≈ 1e-12)."""
    sigma = ft.partial(lambda r, a: a * jnp.tanh(r), a=jnp.asarray(2.0))
    u = jnp.asarray([0.6, 0.8, 0.0, 0.0], jnp.float32) * scale
    grad = jax.grad(lambda z: F.isotropic(z, sigma).sum())(u)
    np.testing.assert_allclose(np.asarray(grad), 2.0, rtol=1e-5)
    jac = jax.jacfwd(lambda z: F.isotropic(z, sigma))(u)
    np.testing.assert_allclose(np.asarray(jac), 2 * np.eye(4), rtol=1e-5, atol=1e-6)


def test_isotropic_vmap_equals_batch_and_dtypes():
    x = jnp.asarray(np.concatenate([X64, [1e25 * X64[0]]]), jnp.float32)
    module = tnn.IsotropicLeakyReLU(0.1, 1.0)
    np.testing.assert_allclose(np.asarray(jax.jit(jax.vmap(module))(x)),
                               np.asarray(jax.jit(module)(x)), rtol=1e-6)
    tanh = jax.jit(tnn.IsotropicTanh())
    for dtype in (jnp.bfloat16, jnp.float16):
        y = tanh(x[:6].astype(dtype))
        assert y.dtype == dtype
        np.testing.assert_allclose(np.asarray(y, np.float64), _radial_np(X64, np.tanh),
                                   rtol=2e-2, atol=2e-2)
    with _x64():
        assert jax.jit(tnn.Squash())(jnp.asarray(X64)).dtype == jnp.float64


# ============================================================================ declarations
def test_identity_hyperparameters_declare_the_affine_group():
    gl = "Aff(n)"  # the identity commutes with every affine map
    assert tnn.IsotropicReLU(0.0).taxonomy.cell("algebraic", "E").name == gl
    assert tnn.IsotropicReLU(0.0, r_max=1.0).taxonomy.cell("algebraic", "E").name == "O(n)"
    assert tnn.IsotropicThreshold(0.0).taxonomy.cell("algebraic", "E").name == gl
    assert tnn.IsotropicLeakyReLU(0.1, 0.0).taxonomy.cell("algebraic", "E").name == gl
    assert tnn.IsotropicSinusoid(0.0).taxonomy.cell("algebraic", "E").name == gl
    x = jnp.asarray(X64, jnp.float32)
    ms = (tnn.IsotropicReLU(0.0), tnn.IsotropicThreshold(0.0),
          tnn.IsotropicLeakyReLU(0.1, 0.0), tnn.IsotropicSinusoid(0.0))
    for y in jax.jit(lambda x: [m(x) for m in ms])(x):
        np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=1e-6)
    assert_algebraic(tnn.IsotropicReLU(0.0), Affine(), "E", n=6, examples=5)


# ============================================================================ bad input
@pytest.mark.parametrize("make,match", [
    (lambda: tnn.IsotropicReLU(-1.0), r"`r0` must be a finite number >= 0"),
    (lambda: tnn.IsotropicReLU(1.0, r_max=0.0), r"`r_max` must be a finite number > 0"),
    (lambda: tnn.IsotropicLeakyReLU(1.5), r"`alpha` must be a finite number in \(0, 1\)"),
    (lambda: tnn.IsotropicLeakyReLU(0.0), r"`alpha`"),
    (lambda: tnn.IsotropicSoftReLU(1.0, 1.0), r"`delta` must be a finite number in \(0, 1.0\)"),
    (lambda: tnn.IsotropicSoftLeakyReLU(0.1, 0.0, 0.1), r"`r0`"),
    (lambda: tnn.IsotropicSinusoid(float("nan")), r"`lam` must be a finite number"),
    (lambda: tnn.IsotropicThreshold(float("inf")), r"`r0` must be a finite number"),
    (lambda: tnn.LeakyReLU(-0.1), r"`negative_slope` must be a finite number in \[0, 1\)"),
    (lambda: tnn.ELU(0.0), r"`alpha`"),
])
def test_bad_hyperparameters_name_the_argument(make, match, library_checks_only):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_inputs_raise_clear_errors(library_checks_only):
    # (under the test suite's runtime type checking the annotation catches it first)
    with pytest.raises(TypeError, match=r"`x` must be a real floating array"):
        F.isotropic_tanh(jnp.arange(3))
    with pytest.raises((TypeError, ValueError), match=r"at least one axis"):
        F.isotropic_tanh(jnp.asarray(1.0))
    with pytest.raises(ValueError, match=r"LatticeIsotropic: `x` must have at least one axis"):
        tnn.LatticeIsotropic("cubic")(jnp.asarray(1.0))
    with pytest.raises(TypeError, match=r"`sigma` must be a callable"):
        tnn.Isotropic(3.0)
    with pytest.raises(TypeError, match=r"`negative_slope` must be a finite number"):
        F.leaky_relu(jnp.ones(3), "0.1")


def test_hyperparameters_given_as_jax_values_say_they_are_static(library_checks_only):
    """A JAX array or a traced value passed as a hyperparameter is refused with a message
    that says hyperparameters are static Python or NumPy numbers (it called the value
    not a number); NumPy scalars are numbers."""
    x = jnp.asarray(X64, jnp.float32)
    with pytest.raises(TypeError, match=r"`lam` must be a finite number.*traced.*static"):
        jax.grad(lambda lam: F.isotropic_sinusoid(x, lam).sum())(1.0)
    with pytest.raises(TypeError, match=r"`negative_slope`.*traced.*static"):
        jax.jit(F.leaky_relu)(x, 0.1)
    with pytest.raises(TypeError, match=r"`negative_slope`.*a JAX array.*float\(value\)"):
        F.leaky_relu(x, jnp.asarray(0.25))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Equinox's own warning about a static array
        with pytest.raises(TypeError, match=r"`r0`.*a JAX array.*static"):
            tnn.IsotropicReLU(jnp.asarray(1.0))
    np.testing.assert_array_equal(np.asarray(F.leaky_relu(x, np.float32(0.25))),
                                  np.where(X64 >= 0, X64, 0.25 * X64).astype(np.float32))


def _sinusoid_sigma_decimal(r: float, lam: float) -> tuple[float, float]:
    """σ(r)/r = 1 + λ sin(r)/r and σ'(r) = 1 + λ cos r in 50-digit decimal arithmetic
    (Taylor series of sin and cos), free of the cancellation near λ = −1."""
    decimal.getcontext().prec = 50
    rd, ld = decimal.Decimal(r), decimal.Decimal(lam)
    sin, cos, term, k = decimal.Decimal(0), decimal.Decimal(0), decimal.Decimal(1), 0
    while k < 200:
        if k % 2 == 0:
            cos += term if k % 4 == 0 else -term
        else:
            sin += term if k % 4 == 1 else -term
        k += 1
        term = term * rd / k
    return float(1 + ld * sin / rd), float(1 + ld * cos)


@pytest.mark.parametrize("lam", [-1.0, -1.0 + 1e-7, -0.999, 0.5])
def test_isotropic_sinusoid_near_lambda_minus_one_is_accurate(lam):
    """σ(r) = r + λ sin r for λ near −1 is r³/6 + (1 + λ) r near 0: the factor
    σ(r)/r = (1 + λ) + λ (sin r/r − 1) and the slope σ'(r) = (1 + λ) − 2λ sin²(r/2) are
    formed without cancelling 1 against λ sin r/r or λ cos r (which in float32 gave ~35%
    error at r = 1e-3 for λ = −1). Values and the radial Jacobian entry against a
    50-digit reference, in float32 and float64."""
    rng = np.random.default_rng(11)
    for r in (1e-4, 1e-3, 0.05, 0.5, 0.99, 3.0):
        u = rng.normal(size=4)
        u /= np.linalg.norm(u)
        for dtype, rtol in ((jnp.float32, 2e-5), (jnp.float64, 1e-12)):
            with jax.enable_x64(dtype == jnp.float64):
                x = jnp.asarray(r * u, dtype)
                xr = np.asarray(x, np.float64)
                rr = float(np.linalg.norm(xr))
                g, d = _sinusoid_sigma_decimal(rr, lam)
                y = np.asarray(F.isotropic_sinusoid(x, lam), np.float64)
                np.testing.assert_allclose(y, g * xr, rtol=rtol, atol=0, err_msg=str(r))
                # the Jacobian along x̂ is σ'(r): x̂ᵀ J x̂ = σ'(r)
                jac = np.asarray(jax.jacfwd(lambda v: F.isotropic_sinusoid(v, lam))(x),
                                 np.float64)
                uh = xr / rr
                radial = uh @ jac @ uh
                assert abs(radial - d) <= 8 * rtol * abs(d), (r, radial, d)


def test_isotropic_second_derivatives_at_the_origin_and_elsewhere():
    """Hessians of Σf: 0 at the origin for isotropic tanh and the sinusoid (f(x) =
    c x + O(‖x‖³) there) and finite for the other radial forms; at a generic point equal
    to central differences of the gradient (float64)."""
    fs = [F.isotropic_tanh, F.isotropic_sinusoid, F.squash,
          lambda x: F.isotropic_leaky_relu(x, 0.1, 1.0)]
    for i, f in enumerate(fs):
        loss = lambda x: jnp.sum(f(x) * jnp.arange(1.0, 4.0))  # noqa: B023, E731
        h0 = np.asarray(jax.hessian(loss)(jnp.zeros(3)))
        assert np.all(np.isfinite(h0))
        if i < 2:
            np.testing.assert_array_equal(h0, 0)
        with jax.enable_x64(True):
            x = np.array([0.3, -0.7, 0.2])
            h = np.asarray(jax.hessian(loss)(jnp.asarray(x)))
            g = jax.grad(loss)
            step = 1e-6
            fd = np.stack([(np.asarray(g(jnp.asarray(x + step * e)))
                            - np.asarray(g(jnp.asarray(x - step * e)))) / (2 * step)
                           for e in np.eye(3)], -1)
        np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-7)


def _radial_hessian(x, b, a):
    """H[k, i, j] = ∂ᵢ∂ⱼ (g(r) x)_k = A xᵢxⱼx_k + B (δᵢⱼx_k + δⱼ_k xᵢ + δᵢ_k xⱼ), with
    B = g'/r and A = (g'' − g'/r)/r² (float64)."""
    eye = np.eye(x.size)
    return (a * np.einsum("i,j,k->kij", x, x, x)
            + b * (np.einsum("ij,k->kij", eye, x) + np.einsum("jk,i->kij", eye, x)
                   + np.einsum("ik,j->kij", eye, x)))


@pytest.mark.parametrize("name", ["tanh", "sinusoid", "sinusoid near -1"])
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_isotropic_hessians_near_the_origin_are_relatively_accurate(name, dtype):
    # entries are O(‖x‖) there. With g(r) = σ(r)/r = 1 + c₁s + c₂s² + c₃s³ + … (s = r²),
    # B = g'/r = 2c₁ + 4c₂s + 6c₃s² and A = (g'' − g'/r)/s = 8c₂ + 24c₃s, from the Taylor
    # series tanh r/r = 1 − s/3 + 2s²/15 − 17s³/315 and sin r/r = 1 − s/6 + s²/120 −
    # s³/5040 (isotropic sinusoid: g = 1 + λ(sin r/r − 1)); at r ≤ 1e-4 the terms left out
    # are below 1e-15 relative
    f, (c1, c2, c3) = {
        "tanh": (F.isotropic_tanh, (-1 / 3, 2 / 15, -17 / 315)),
        "sinusoid": (ft.partial(F.isotropic_sinusoid, lam=1.0), (-1 / 6, 1 / 120, -1 / 5040)),
        "sinusoid near -1": (ft.partial(F.isotropic_sinusoid, lam=-0.999),
                             (0.999 / 6, -0.999 / 120, 0.999 / 5040))}[name]
    u = np.array([0.3, -0.5, 0.2, 0.7, -0.1, 0.4])
    u /= np.linalg.norm(u)
    # every composition of forward and reverse mode (reverse over reverse goes through
    # the transpose of the derivative rule, and below ‖x‖ ≈ 1e-19 in float32 through the
    # max-scaled norm)
    scales = (1e-4, 1e-8, 1e-15, 1e-20, 1e-30) + ((1e-200,) if dtype == jnp.float64 else ())
    with jax.enable_x64(dtype == jnp.float64):
        for second in (jax.hessian, lambda g: jax.jacrev(jax.jacrev(g)),
                       lambda g: jax.jacrev(jax.jacfwd(g))):
            hess = jax.jit(second(f))
            for scale in scales:
                x = jnp.asarray(u * scale, dtype)
                xr = np.asarray(x, np.float64)
                sq = float(xr @ xr)
                want = _radial_hessian(xr, 2 * c1 + 4 * c2 * sq + 6 * c3 * sq * sq,
                                       8 * c2 + 24 * c3 * sq)
                got = np.asarray(hess(x), np.float64)
                tol = 1e-5 if dtype == jnp.float32 else 1e-12
                assert np.max(np.abs(got - want)) <= tol * np.max(np.abs(want)), scale


@pytest.mark.parametrize("name, c1", [("tanh", -1 / 3), ("sinusoid", -1 / 6)])
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_isotropic_third_derivatives_at_the_origin(name, c1, dtype):
    """f = g(s) x with g = 1 + c₁s + …, s = ‖x‖²: ∂ᵢ∂ⱼ∂ₖ f_l at 0 is
    2c₁(δ_lᵢδⱼₖ + δ_lⱼδᵢₖ + δ_lₖδᵢⱼ), symmetric in all four indices (tanh‴(0) = −2 along
    an axis)."""
    f = {"tanh": F.isotropic_tanh, "sinusoid": ft.partial(F.isotropic_sinusoid, lam=1.0)}[name]
    eye = np.eye(3)
    want = 2 * c1 * (np.einsum("li,jk->lijk", eye, eye) + np.einsum("lj,ik->lijk", eye, eye)
                     + np.einsum("lk,ij->lijk", eye, eye))
    with jax.enable_x64(dtype == jnp.float64):
        for third in (jax.jacfwd(jax.hessian(f)), jax.jacrev(jax.jacrev(jax.jacrev(f))),
                      jax.jacfwd(jax.jacfwd(jax.jacfwd(f)))):
            got = np.asarray(jax.jit(third)(jnp.zeros(3, dtype)), np.float64)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f", [ft.partial(F.isotropic_relu, r0=1.2),
                               ft.partial(F.isotropic_leaky_relu, alpha=0.1, r0=1.2)])
def test_isotropic_hessians_far_out_keep_their_relative_accuracy(f):
    """Beyond the threshold f = A x − R x̂ (A = 1, R = R₀; leaky: A = 1, R = (1 − α)R₀),
    whose Hessian is −R(3x̂ᵢx̂ⱼx̂ₖ − δᵢⱼx̂ₖ − δᵢₖx̂ⱼ − δⱼₖx̂ᵢ)/r²: relative accuracy at
    any r in float64 (σ' − g formed without the cancellation 1 − (1 − R₀/r))."""
    scale = 1.2 if f.keywords.get("alpha") is None else 0.9 * 1.2
    u = np.array([0.6, -0.48, 0.64])
    eye = np.eye(3)
    with jax.enable_x64(True):
        hess = jax.jit(jax.hessian(f))
        for r in (10.0, 1e8, 1e15, 1e30):
            x = u * r
            got = np.asarray(hess(jnp.asarray(x)))
            want = -scale * (3 * np.einsum("i,j,k->ijk", u, u, u)
                             - np.einsum("ij,k->ijk", eye, u) - np.einsum("ik,j->ijk", eye, u)
                             - np.einsum("jk,i->ijk", eye, u)) / r ** 2
            assert np.max(np.abs(got - want)) <= 1e-12 * np.max(np.abs(want)), r


@pytest.mark.parametrize("f", [ft.partial(F.isotropic_relu, r0=1.0),
                               ft.partial(F.isotropic_threshold, r0=1.0),
                               ft.partial(F.isotropic_relu, r0=0.0),
                               ft.partial(F.isotropic_leaky_relu, alpha=0.1, r0=1.0)])
def test_isotropic_hessians_vanish_where_the_map_is_linear(f):
    # 0 or the identity (or αx) on ‖x‖ < 1: second derivatives are exactly 0, also at
    # tiny inputs (where 1/r's derivative overflows float32)
    u = np.array([0.3, -0.5, 0.2, 0.7])
    hess = jax.jit(jax.hessian(f))
    for scale in (0.5, 1e-10, 1e-20, 1e-30, 0.0):
        np.testing.assert_array_equal(hess(jnp.asarray(u * scale, jnp.float32)), 0)


@pytest.mark.parametrize("f", [
    F.isotropic_tanh, ft.partial(F.isotropic_relu, r0=0.5, r_max=2.0),
    ft.partial(F.isotropic_leaky_relu, alpha=0.1), ft.partial(F.isotropic_threshold, r0=0.3),
    ft.partial(F.isotropic_soft_leaky_relu, alpha=0.1, r0=1.0, delta=0.5),
    ft.partial(F.isotropic_sinusoid, lam=0.5), F.squash, ft.partial(F.isotropic, sigma=jnp.tanh),
    ft.partial(F.colu, cone_dim=4), ft.partial(F.rcolu, cone_dim=4, projection="soft"),
], ids=lambda f: getattr(f, "func", f).__name__)
def test_calls_outside_jit_are_compiled_once(f, jax_events):
    """Called outside `jax.jit` (as in a notebook), an activation is compiled once per
    shape, dtype and hyperparameters: calling it again with equal hyperparameters, passed
    afresh, traces and compiles nothing (the isotropic kernel's `lax.cond` was traced and
    compiled again at every such call, ~0.15 s for a 256 × 64 input)."""
    x = jnp.asarray(np.random.default_rng(3).normal(size=(5, 8)), jnp.float32)
    first = f(x)
    with jax_events() as recorded:
        again = f(x)
    assert recorded == []
    np.testing.assert_array_equal(np.asarray(again), np.asarray(first))


def test_isotropic_takes_a_sigma_holding_arrays():
    """A σ that is not hashable (a module holding an array) still works: it is compiled at
    each call instead of once. Reference: NumPy float64."""

    class Scaled(eqx.Module):
        w: jax.Array

        def __call__(self, r):
            return jnp.tanh(self.w * r)

    x = np.random.default_rng(4).normal(size=(5, 8))
    y = F.isotropic(jnp.asarray(x, jnp.float32), Scaled(jnp.asarray(2.0)))
    np.testing.assert_allclose(np.asarray(y), _radial_np(x, lambda r: np.tanh(2 * r)),
                               rtol=1e-5, atol=1e-6)


def test_user_sigma_where_the_norm_overflows_is_taken_at_the_largest_float():
    """A bounded σ written as a formula (σ(r) = r/(1 + r), which is NaN at r = ∞) where
    ‖x‖ overflows float32 (finite components of 3e38, or an infinite one): σ is taken at
    the largest finite number, i.e. at its limit 1, so f(x) = x̂ as in float64 (where the
    norm does not overflow); the complex U(n) form, whose σ acts on ‖x‖², alike."""
    sigma = lambda r: r / (1 + r)  # noqa: E731
    x = np.array([[3e38, 3e38, 0.0], [1e38, -3e38, 2e38], [np.inf, 1.0, 0.0]])
    y = np.asarray(jax.jit(F.isotropic, static_argnums=1)(jnp.asarray(x, jnp.float32), sigma),
                   np.float64)
    want = _radial_np(x[:2], sigma)
    np.testing.assert_allclose(y[:2], want, rtol=1e-6)
    np.testing.assert_allclose(y[2], [1.0, 0.0, 0.0], rtol=1e-6)
    z = np.array([[3e19, 3e19j], [1e30j, -2e30]], np.complex64)
    yz = np.asarray(F.unitary_isotropic(jnp.asarray(z), sigma=sigma), np.complex128)
    unit = z.astype(np.complex128) / np.linalg.norm(z.astype(np.complex128), axis=-1,
                                                    keepdims=True)
    np.testing.assert_allclose(yz, unit, rtol=1e-6)


def test_user_sigma_growing_linearly_is_right_where_the_norm_overflows():
    """σ(r) = c r (and σ(r) = r + sin r) where ‖x‖ overflows float32 (components of
    2e38; the float64 norm is 3.5e38): f(x) = (σ(r)/r) x is representable, and taken as
    σ(max)/max times x it is c x to rounding, with Jacobian c I (as in float64). Taking
    σ at the largest float times x̂ gave max·x̂ instead, 2% short and a Jacobian of 0
    along x. The same for σ(r) = 2r, which overflows before f(x) = 2x does, and for the
    U(n) form with σ(s) = c √s."""
    x = np.array([[2e38, 2e38, -2e38, 0.0], [1.0, -2.0, 0.5, 3.0]])
    x32 = jnp.asarray(x, jnp.float32)
    xd = np.asarray(x32, np.float64)
    for c in (1.0, 0.5, 0.25):
        sigma = ft.partial(jnp.multiply, c)
        y = np.asarray(F.isotropic(x32, sigma), np.float64)
        np.testing.assert_allclose(y, c * xd, rtol=1e-6)
        jac = np.asarray(jax.jacrev(lambda a, s=sigma: F.isotropic(a, s))(x32[0]))
        np.testing.assert_allclose(jac, c * np.eye(4), atol=1e-6)
    y = np.asarray(F.isotropic(x32, lambda r: r + jnp.sin(r)), np.float64)
    want = _radial_np(xd[1:], lambda r: r + np.sin(r))
    np.testing.assert_allclose(y[1:], want, rtol=1e-6)
    np.testing.assert_allclose(y[0], xd[0], rtol=1e-6)   # sin is bounded: (σ/r) x → x
    # σ(r) = 2r overflows where r does not (r = 2e38) and where r does (5e38), while
    # f(x) = 2x is representable (components of 2e37 and 5e37 over 100 coordinates)
    for size in (2e37, 5e37):
        v = jnp.full((100,), size, jnp.float32).at[0].set(0.0)
        np.testing.assert_allclose(np.asarray(F.isotropic(v, lambda r: 2 * r), np.float64),
                                   2 * np.asarray(v, np.float64), rtol=1e-6)
        # a σ growing faster overflows with its true value (±∞, and 0 where x is 0)
        for fast in (jnp.exp, lambda r: r * r):
            np.testing.assert_array_equal(F.isotropic(v, fast), jnp.where(v == 0, 0, jnp.inf))
    np.testing.assert_array_equal(F.isotropic(jnp.asarray([100.0, 0.0, -3.0]), jnp.exp),
                                  [np.inf, 0.0, -np.inf])   # e¹⁰⁰ overflows float32
    # a tiny nonzero component of such a row is ±∞ as well, not 0·∞ = NaN (scaled by the
    # norm's power of two it underflows to 0)
    for fast in (jnp.exp, lambda r: r * r):
        np.testing.assert_array_equal(F.isotropic(jnp.asarray([3e19, -1e-30, 0.0]), fast),
                                      [np.inf, -np.inf, 0.0])
    # a σ holding arrays is differentiated by JAX itself (another path): the same value
    exp_of_scaled = ft.partial(lambda c, r: jnp.exp(c * r), jnp.asarray(1.0))
    np.testing.assert_array_equal(F.isotropic(jnp.asarray([100.0, 0.0, -3.0]), exp_of_scaled),
                                  [np.inf, 0.0, -np.inf])
    # the U(n) form, whose σ acts on ‖x‖² (overflowing from ‖x‖ ≈ 1.8e19): σ(s) = c √s
    z = np.array([[3e19, 3e19j, 1e19], [1e30j, -2e30, 0.0]], np.complex64)
    for c in (1.0, 0.5):
        yz = F.unitary_isotropic(jnp.asarray(z), sigma=lambda s, c=c: c * jnp.sqrt(s))
        np.testing.assert_allclose(np.asarray(yz, np.complex128), c * z.astype(np.complex128),
                                   rtol=1e-6)
    # σ(s) = c √s with a huge c overflows (c ‖x‖ = 4e38) where c x is representable
    # (components of 2e38), with ‖x‖ = 4e18 far below the largest float: its slope is
    # taken further in, as for σ(r) = 2r above (the test of "near the largest float"
    # compared ‖x‖ with float32's maximum rather than with the largest root, so this gave
    # ±∞ in every component)
    z = np.array([[2e18, 2e18j, -2e18, -2e18j]], np.complex64)
    yz = F.unitary_isotropic(jnp.asarray(z), sigma=lambda s: 1e20 * jnp.sqrt(s))
    np.testing.assert_allclose(np.asarray(yz, np.complex128), 1e20 * z.astype(np.complex128),
                               rtol=1e-6)
