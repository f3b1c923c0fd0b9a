"""Quasi-isotropic (isotropic paper eqs 61–64), complex (eqs 28, 29), Bloch/Hopf (eq 41)
and Lorentz pseudo-norm activations against float64 NumPy evaluations; their symmetries
on explicit group elements; parameter hooks; bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import taxdl.groups as G
import taxdl.nn as tnn
import taxdl.nn.functional as F
from taxdl.taxonomy import Flavour, reinitialise, transport

RNG = np.random.default_rng(2)
X = RNG.normal(size=(10, 4)) * RNG.choice([0.2, 1.0, 5.0], size=(10, 1))
X[0] = 0.0


def _x64():
    return jax.enable_x64(True)


def _unit(x):
    r = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.divide(x, r, out=np.zeros_like(x), where=r > 0), r[..., 0]


# ============================================================================ quasi-isotropic
def quasi_np(x, alpha, beta, normalise=False):
    """Eqs 61–62 with φ(v) = βv and σ = tanh; rounding half to even."""
    u, r = _unit(x)
    grid = np.round(alpha * u) / alpha
    phi = grid + beta * (u - grid)
    if normalise:
        phi, _ = _unit(phi)
    return np.tanh(r)[:, None] * phi


def lattice_np(x, dirs):
    """Eq 63 with σ = tanh."""
    u, r = _unit(x)
    m = np.max(u @ dirs.T, axis=-1)
    return np.divide(np.tanh(r)[:, None] * u, m[:, None], out=np.zeros_like(x),
                     where=r[:, None] > 0)


def test_quasi_isotropic_matches_numpy_and_is_bn_equivariant():
    b = np.diag([1.0, -1.0, 1.0, -1.0])[[2, 0, 3, 1]]  # a signed permutation
    both = np.concatenate([X, X @ b.T])
    with _x64():
        for alpha, beta, norm in [(3.0, 0.5, False), (2.0, -0.3, True)]:
            f = jax.jit(lambda x: F.quasi_isotropic(x, alpha, beta, normalise=norm))
            y = np.asarray(f(jnp.asarray(both)))
            np.testing.assert_allclose(y[:10], quasi_np(X, alpha, beta, norm), atol=1e-13)
            np.testing.assert_allclose(y[10:], y[:10] @ b.T, atol=1e-13)
            q, _ = np.linalg.qr(RNG.normal(size=(4, 4)))
            assert np.abs(np.asarray(f(jnp.asarray(X @ q.T))) - y[:10] @ q.T).max() > 1e-3
    assert tnn.QuasiIsotropic().taxonomy.cell("algebraic", "E").name == "B_n"


def test_quasi_isotropic_below_alpha_one_half_is_isotropic_and_refused():
    # |αx̂ᵢ| ≤ α ≤ ½ rounds to 0: Φ = βx̂ and f = β tanh(‖x‖) x̂ (NumPy float64), which
    # Bₙ would misdeclare (it is O(n)-equivariant), so the module refuses such α
    with _x64():
        y = np.asarray(F.quasi_isotropic(jnp.asarray(X), 0.5, 0.3))
    r = np.linalg.norm(X, axis=-1, keepdims=True)
    want = 0.3 * np.tanh(r) * np.divide(X, r, out=np.zeros_like(X), where=r > 0)
    np.testing.assert_allclose(y, want, rtol=1e-13, atol=1e-300)
    with pytest.raises(ValueError, match="> 0.5"):
        tnn.QuasiIsotropic(alpha=0.5)
    # a NumPy integer is an integer (k of the polygon lattice)
    lattice = tnn.LatticeIsotropic("polygon", k=np.int64(6))
    assert lattice.k == 6 and type(lattice.k) is int
    assert lattice.taxonomy == tnn.LatticeIsotropic("polygon", k=6).taxonomy


@pytest.mark.parametrize("lattice,n,k,group", [
    ("cubic", 4, None, G.SignedPermutation(4)), ("simplex", 3, None, G.Simplex(3)),
    ("polygon", 2, 6, G.Dihedral(2, k=6)),
])
def test_lattice_isotropic_matches_numpy_and_its_group(lattice, n, k, group):
    dirs = F.lattice_directions(lattice, n, k)
    np.testing.assert_allclose(np.linalg.norm(dirs, axis=-1), 1, atol=1e-12)
    x = X[:, :n]
    e = np.asarray(group.sample(jax.random.key(3), 4).matrix, np.float64)
    m = tnn.LatticeIsotropic(lattice, k=k)
    with _x64():
        f = jax.jit(m)
        y = np.asarray(f(jnp.asarray(x)))
        np.testing.assert_allclose(y, lattice_np(x, dirs), atol=1e-13)
        for g in e:
            g = np.round(g, 6)  # exact lattice symmetries
            np.testing.assert_allclose(np.asarray(f(jnp.asarray(x @ g.T))), y @ g.T, atol=1e-5)
    if lattice == "cubic":  # σ(‖x‖) x / ‖x‖_∞
        u, r = _unit(x)
        np.testing.assert_allclose(y[1:], np.tanh(r[1:])[:, None] * x[1:]
                                   / np.abs(x[1:]).max(-1, keepdims=True), atol=1e-6)
    assert m.taxonomy.cell("algebraic", "E").group.name.startswith(
        {"cubic": "B_", "simplex": "Ψ(A", "polygon": "Ψ(D"}[lattice])


def test_trainable_direction_formula_hooks_and_floor():
    m = tnn.TrainableDirection(4, 12, key=jax.random.key(0))
    z = np.asarray(m.directions, np.float64)
    zhat = z / np.linalg.norm(z, axis=-1, keepdims=True)
    u, r = _unit(X)
    denom = np.maximum(np.max(u @ zhat.T, axis=-1), 0.05)
    ref = np.tanh(r)[:, None] * u / denom[:, None]
    np.testing.assert_allclose(np.asarray(m(jnp.asarray(X, jnp.float32)), np.float64), ref,
                               rtol=1e-5, atol=1e-6)
    # closure transport: g⁻¹∘f_Z∘g = f_{Zg} for an orthogonal g
    q, _ = np.linalg.qr(RNG.normal(size=(4, 4)))
    el = G.linear_element(jnp.asarray(q, jnp.float32))
    moved = transport(m, Flavour.EQUIVARIANT, el, G.Orthogonal(4))
    lhs = np.asarray(moved(jnp.asarray(X, jnp.float32)), np.float64)
    rhs = np.asarray(m(jnp.asarray(X @ q.T, jnp.float32)), np.float64) @ q
    np.testing.assert_allclose(lhs, rhs, rtol=1e-4, atol=1e-5)
    fresh = reinitialise(m, jax.random.key(1))
    assert fresh.directions.shape == m.directions.shape
    assert not np.allclose(fresh.directions, m.directions)
    with pytest.raises(ValueError, match="last axis of size 4"):
        m(jnp.ones(5))


# ============================================================================ complex
def _complex(shape, scale=1.0):
    return scale * (RNG.normal(size=shape) + 1j * RNG.normal(size=shape))


def test_unitary_and_phase_forms_match_numpy_and_their_groups():
    x = _complex((6, 3))
    x[0] = 0
    x[1, 1] = 0
    r = np.linalg.norm(x, axis=-1, keepdims=True)
    ref28 = np.divide(np.tanh(r) * x, r, out=np.zeros_like(x), where=r > 0)
    a = np.abs(x)
    ref29 = np.divide(np.tanh(a) * x, a, out=np.zeros_like(x), where=a > 0)
    u = G.Unitary(3).sample(jax.random.key(4), 1).matrix[0]
    mono = G.MonomialUnitary(3).sample(jax.random.key(5), 1).matrix[0]
    with _x64():
        u, mono = np.asarray(u, np.complex128), np.asarray(mono, np.complex128)
        u, _ = np.linalg.qr(u)  # exactly unitary in float64
        f28, f29 = jax.jit(F.unitary_isotropic), jax.jit(F.phase_elementwise)
        y28, y29 = np.asarray(f28(jnp.asarray(x))), np.asarray(f29(jnp.asarray(x)))
        np.testing.assert_allclose(y28, ref28, atol=1e-13)
        np.testing.assert_allclose(y29, ref29, atol=1e-13)
        np.testing.assert_allclose(np.asarray(f28(jnp.asarray(x @ u.T))), y28 @ u.T, atol=1e-12)
        mono = np.round(np.abs(mono)) * np.exp(1j * np.angle(mono))
        np.testing.assert_allclose(np.asarray(f29(jnp.asarray(x @ mono.T))), y29 @ mono.T,
                                   atol=1e-12)
        assert np.abs(np.asarray(f29(jnp.asarray(x @ u.T))) - y29 @ u.T).max() > 1e-3
        custom = np.asarray(jax.jit(lambda x: F.unitary_isotropic(x, jnp.arctan))(
            jnp.asarray(x)))
        np.testing.assert_allclose(custom, np.divide(np.arctan(r**2) * x, r,
                                   out=np.zeros_like(x), where=r > 0), atol=1e-13)
        j0 = jax.jit(jax.jacfwd(lambda v: F.unitary_isotropic(
            jax.lax.complex(v, jnp.zeros(3)))))(jnp.zeros(3))
        np.testing.assert_allclose(np.asarray(j0), np.eye(3), atol=1e-12)  # Jacobian I at 0
    y32 = jax.jit(F.unitary_isotropic)(jnp.asarray(x, jnp.complex64) * 1e30)
    assert y32.dtype == jnp.complex64
    np.testing.assert_allclose(np.linalg.norm(np.asarray(y32)[2:], axis=-1), 1, rtol=1e-5)


def bloch_np(x):
    """Eq 41 with σ = tanh: tanh(x†x) n(x/‖x‖), n(ψ) = ψ†σ⃗ψ/ψ†ψ."""
    pauli = np.array([[[0, 1], [1, 0]], [[0, -1j], [1j, 0]], [[1, 0], [0, -1]]])
    s = np.sum(np.abs(x) ** 2, axis=-1)
    n = np.real(np.einsum("...a,iab,...b->...i", np.conj(x), pauli, x))
    return np.divide(np.tanh(s)[:, None] * n, s[:, None], out=np.zeros(x.shape[:-1] + (3,)),
                     where=s[:, None] > 0)


def test_bloch_matches_numpy_equivariance_and_phase_invariance():
    x = np.concatenate([_complex((5, 2), 0.3), _complex((5, 2), 2.0), np.zeros((1, 2))])
    k = jax.random.key(6)
    uel = G.SU2().on(2).sample(k, 3)
    rel = G.SU2(rep="adjoint").on(3).represent(uel)
    with _x64():
        f = jax.jit(F.bloch)
        y = np.asarray(f(jnp.asarray(x)))
        np.testing.assert_allclose(y, bloch_np(x), atol=1e-13)
        for u, rot in zip(np.asarray(uel.matrix, np.complex128),
                          np.asarray(rel.matrix, np.float64)):
            np.testing.assert_allclose(np.asarray(f(jnp.asarray(x @ u.T))), y @ rot.T,
                                       atol=1e-5)
        phase = np.exp(1.3j)
        np.testing.assert_allclose(np.asarray(f(jnp.asarray(phase * x))), y, atol=1e-13)
        g = jax.jit(jax.grad(lambda v: jnp.sum(F.bloch(v))))(jnp.zeros(2, jnp.complex128))
        np.testing.assert_array_equal(np.asarray(g), 0)
    big = jax.jit(F.bloch)(jnp.asarray(1e30 * x[5:10], jnp.complex64))
    assert big.dtype == jnp.float32
    np.testing.assert_allclose(np.linalg.norm(np.asarray(big), axis=-1), 1, rtol=1e-5)
    with pytest.raises((TypeError, ValueError), match="last axis of size 2|'x'"):
        F.bloch(jnp.ones((3,), jnp.complex64))


def test_bloch_at_infinite_spinors_takes_its_limit():
    """A spinor with infinite real or imaginary parts gives σ(∞) times the Bloch vector of
    the unit spinor of their signs (eq 41's limit), for the default σ and a bounded user σ
    whose formula is NaN at ∞; a NaN anywhere in the spinor gives NaN."""
    inf, nan = np.inf, np.nan
    re = np.array([[inf, 1], [0, 0], [inf, -inf], [inf, 1], [nan, 1]], np.float32)
    im = np.array([[0, 1], [inf, 0], [inf, 0], [nan, 0], [0, 0]], np.float32)
    x = jax.lax.complex(jnp.asarray(re), jnp.asarray(im))
    signs = np.where(np.isinf(re), np.sign(re), 0) + 1j * np.where(np.isinf(im), np.sign(im), 0)
    unit = signs[:3] / np.linalg.norm(signs[:3], axis=-1, keepdims=True)
    want = bloch_np(unit) / np.tanh(1.0)  # n(û), |û| = 1
    for sigma in (None, lambda s: s / (1 + s)):
        y = np.asarray(jax.jit(lambda v: F.bloch(v, sigma))(x))
        np.testing.assert_allclose(y[:3], want, rtol=1e-6, atol=1e-7)
        assert np.all(np.isnan(y[3:]))


def test_complex_forms_where_a_modulus_overflows():
    """Spinors and vectors whose parts are finite but whose moduli exceed float32's
    maximum (|3e38 + 3e38i| ≈ 4.2e38): the scale is taken from the largest part, so the
    direction is right (eq 28, eq 41's Bloch vector, eq 29 per coordinate), and the
    derivatives are finite (Bloch: none of its s = ‖x‖² overflow reaches a gradient)."""
    x64 = np.array([[3e38 + 3e38j, 3e38 - 1.5e38j], [-2e38 + 3.3e38j, 1e30 + 0j]])
    x = jnp.asarray(x64, jnp.complex64)
    u = x64 / np.linalg.norm(x64, axis=-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(F.unitary_isotropic(x)), u, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(F.phase_elementwise(x)), x64 / np.abs(x64),
                               rtol=1e-6, atol=1e-7)
    want = bloch_np(u) / np.tanh(1.0)  # σ(∞) n(û) with σ = tanh
    for sigma in (None, lambda s: s / (1 + s)):
        np.testing.assert_allclose(np.asarray(F.bloch(x, sigma)), want, rtol=1e-6, atol=1e-7)
        g = jax.grad(lambda v: jnp.sum(F.bloch(v, sigma) * jnp.arange(1.0, 4.0)))(x)
        assert np.isfinite(np.asarray(g)).all()


def test_lorentz_form_matches_numpy_and_boosts():
    eta = np.diag([1.0, -1, -1, -1])
    s = np.einsum("...i,ij,...j->...", X, eta, X)
    ref = np.where(s[:, None] != 0, np.tanh(s)[:, None] / np.where(s != 0, s, 1)[:, None], 1) * X
    z = 0.8
    boost = np.eye(4)
    boost[:2, :2] = [[np.cosh(z), np.sinh(z)], [np.sinh(z), np.cosh(z)]]
    light = np.array([[2.0, 2.0, 0, 0]])  # on the light cone: f = identity there
    with _x64():
        f = jax.jit(F.lorentz_isotropic)
        y = np.asarray(f(jnp.asarray(X)))
        np.testing.assert_allclose(y, ref, atol=1e-13)
        np.testing.assert_allclose(np.asarray(f(jnp.asarray(X @ boost.T))), y @ boost.T,
                                   atol=1e-11)
        np.testing.assert_allclose(np.asarray(f(jnp.asarray(light))), light, atol=1e-14)
        gl = jax.jit(jax.jacrev(F.lorentz_isotropic))(jnp.asarray(light[0]))
        assert np.all(np.isfinite(np.asarray(gl)))
        q, _ = np.linalg.qr(RNG.normal(size=(4, 4)))
        assert np.abs(np.asarray(f(jnp.asarray(X @ q.T))) - y @ q.T).max() > 1e-3
    vg = jax.jit(jax.value_and_grad(lambda x: jnp.sum(F.lorentz_isotropic(x))))
    for scale in (1e-30, 1e30):
        v, g = vg(jnp.asarray(scale * X, jnp.float32))
        assert bool(jnp.isfinite(v)) and bool(jnp.all(jnp.isfinite(g)))


# ============================================================================ bad input
@pytest.mark.parametrize("call,exc,match", [
    (lambda: tnn.QuasiIsotropic(alpha=0.0), ValueError, "`alpha` must be a finite number > 0"),
    (lambda: tnn.QuasiIsotropic(alpha=0.5), ValueError, r"`alpha` must be a finite number > 0\.5"),
    (lambda: tnn.QuasiIsotropic(beta=1.0), ValueError, "`beta` must differ from 1"),
    (lambda: tnn.LatticeIsotropic("hexagonal"), ValueError, "`lattice` must be"),
    (lambda: tnn.LatticeIsotropic("polygon"), ValueError, "integer `k` >= 3"),
    (lambda: tnn.LatticeIsotropic("cubic", k=4), ValueError, "`k` only applies"),
    (lambda: F.lattice_directions("polygon", 3, 5), ValueError, "`n` must be 2"),
    (lambda: tnn.TrainableDirection(4, key=jax.random.key(0), floor=0.0), ValueError,
     "`floor`"),
    (lambda: F.unitary_isotropic(jnp.ones(3)), TypeError, "complex"),
    (lambda: F.lorentz_isotropic(jnp.ones(1)), ValueError, "size >= 2"),
    (lambda: F.quasi_isotropic(jnp.ones(3), normalise="no"), TypeError,
     "`normalise` must be True or False"),
    (lambda: F.lattice_isotropic(jnp.ones(3), jnp.ones((4, 2))), (TypeError, ValueError),
     r"`directions` must have shape \(m, 3\)"),
])
def test_bad_input_names_the_argument(call, exc, match, library_checks_only):
    with pytest.raises(exc, match=match):
        call()


def _spans_plane(b):
    """Unit vectors positively span ℝ² iff no angular gap between neighbours reaches π."""
    t = np.sort(np.arctan2(b[:, 1], b[:, 0]))
    gaps = np.diff(np.concatenate([t, t[:1] + 2 * np.pi]))
    return bool(np.max(gaps) < np.pi - 1e-9)


def test_lattice_isotropic_accepts_exactly_the_positively_spanning_directions():
    """Eq 63 divides by max_i b̂ᵢ·x̂, positive for every x only when the directions
    positively span the space: random sets in ℝ² are accepted exactly when no angular gap
    reaches π (an independent criterion), and a rejection names an x that every
    direction meets at an angle ≥ 90°."""
    rng = np.random.default_rng(5)
    seen = set()
    for _ in range(60):
        m = int(rng.integers(2, 6))
        t = rng.uniform(-np.pi, np.pi, m)
        b = np.stack([np.cos(t), np.sin(t)], -1)
        expected = _spans_plane(b)
        seen.add(expected)
        if expected:
            y = F.lattice_isotropic(jnp.asarray(X[:, :2]), b)
            assert np.all(np.isfinite(np.asarray(y)))
            continue
        with pytest.raises(ValueError, match="positively span") as info:
            F.lattice_isotropic(jnp.ones(2), b)
        witness = np.array(str(info.value).split("x = [")[1].split("]")[0].split(), float)
        assert np.linalg.norm(witness) > 0.5 and np.max(b @ witness) <= 1e-3
    assert seen == {True, False}
    for b in (np.eye(3), np.concatenate([np.eye(3), -np.eye(3)[:2]])):
        with pytest.raises(ValueError, match="positively span"):
            F.lattice_isotropic(jnp.ones(3), b)
    with pytest.raises(ValueError, match="unit vectors"):
        F.lattice_isotropic(jnp.ones(2), 2 * F.lattice_directions("cubic", 2))
    with pytest.raises(ValueError, match="finite"):
        F.lattice_isotropic(jnp.ones(2), np.full((4, 2), np.nan))


_TINY = [
    ("quasi_isotropic", lambda z: F.quasi_isotropic(z)),
    ("lattice_isotropic", lambda z: F.lattice_isotropic(z, F.lattice_directions("cubic", 4))),
    ("trainable_direction", lambda z: F.trainable_direction(z, jnp.eye(4, dtype=z.dtype) + 0.1)),
    ("lorentz_isotropic", lambda z: F.lorentz_isotropic(z)),
]


@pytest.mark.parametrize("name,f", _TINY, ids=[t[0] for t in _TINY])
@pytest.mark.parametrize("scale", [1e-30, 1e-12])
def test_gradients_at_tiny_inputs_match_float64(name, f, scale):
    """float32 gradients at |x| ≈ 1e-30 and 1e-12 are finite and equal the float64 ones
    (where nothing underflows)."""
    x = np.array([1.0, -2.0, 0.5, 3.0]) * scale
    w = np.arange(1.0, 5.0)
    g32 = jax.grad(lambda z: jnp.sum(f(z) * jnp.asarray(w, jnp.float32)))(
        jnp.asarray(x, jnp.float32))
    with _x64():
        g64 = jax.grad(lambda z: jnp.sum(f(z) * jnp.asarray(w)))(jnp.asarray(x))
    assert np.all(np.isfinite(np.asarray(g32)))
    np.testing.assert_allclose(np.asarray(g32, np.float64), np.asarray(g64), rtol=2e-5,
                               atol=1e-6)


def test_complex_and_lorentz_forms_at_extreme_magnitudes():
    # bloch (default σ = tanh): f(x) = (tanh s / s) x†σx ≈ x†σx near 0, so the gradient of
    # Σ_k f_k is that of L = 2(ac + bd) + 2(ad − bc) + a² + b² − c² − d² (x₀ = a + ib,
    # x₁ = c + id); JAX returns ∂L/∂Re − i ∂L/∂Im per coordinate
    xb = np.array([1 + 0.5j, 2 - 1j])
    for scale in (1e-30, 1e-20, 1e-12):
        (a, b), (c, d) = ((v.real, v.imag) for v in xb * scale)
        expected = [(2 * c + 2 * d + 2 * a) - 1j * (2 * d - 2 * c + 2 * b),
                    (2 * a - 2 * b - 2 * c) - 1j * (2 * b + 2 * a - 2 * d)]
        g = np.asarray(jax.grad(lambda z: jnp.sum(F.bloch(z)))(
            jnp.asarray(xb * scale, jnp.complex64)))
        np.testing.assert_allclose(g, expected, rtol=1e-5)
    # Lorentz form: x·tanh(s)/s stays exact when s = xᵀηx overflows in float32
    x = np.array([2.0, 1.0, 0.5]) * 1e20
    s = x[0] ** 2 - x[1] ** 2 - x[2] ** 2
    np.testing.assert_allclose(np.asarray(F.lorentz_isotropic(jnp.asarray(x, jnp.float32)),
                                          np.float64), x * np.tanh(s) / s, rtol=1e-6)
    # a user φ where s overflows: φ ≡ 1 gives x, the bounded φ = 1 + tanh gives 2x (time-
    # and space-like rows)
    xs = jnp.asarray(np.stack([x, x[::-1]]), jnp.float32)
    for phi, factor in ((jnp.ones_like, 1.0), (lambda s: 1 + jnp.tanh(s), [[2.0], [0.0]])):
        np.testing.assert_allclose(np.asarray(F.lorentz_isotropic(xs, phi), np.float64),
                                   np.asarray(factor) * np.stack([x, x[::-1]]), rtol=1e-6)
    # a user σ(s) ≈ c√s (as the docstring asks): f(0) = 0 with Jacobian c·I, no NaN
    sig = lambda s: jnp.tanh(jnp.sqrt(s))  # noqa: E731
    np.testing.assert_array_equal(np.asarray(F.unitary_isotropic(jnp.zeros(3, jnp.complex64),
                                                                 sig)), 0)
    y = np.asarray(F.phase_elementwise(jnp.array([1 + 1j, 0j], jnp.complex64), sig))
    np.testing.assert_allclose(y, [np.tanh(np.sqrt(2)) * (1 + 1j) / np.sqrt(2), 0], rtol=1e-6)
    jac = jax.jacrev(lambda z: jnp.real(F.unitary_isotropic(z.astype(jnp.complex64), sig)))(
        jnp.zeros(3))
    np.testing.assert_allclose(np.asarray(jac), np.eye(3), atol=1e-6)


def test_directional_forms_at_the_largest_magnitudes():
    """Quasi-isotropic, lattice and trainable-direction forms keep the direction of inputs
    whose largest component is near the dtype's maximum (1.3e38 in float32, 1e308 in
    float64), where a reciprocal 1/max|x| is flushed to 0, and a user σ that is bounded
    gives σ(r) x̂ there (σ(r)/r is below the smallest normal number)."""
    u = np.array([[0.6, -0.8, 0.0, 0.0], [0.1, 0.2, -0.3, 0.9]])
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    dirs = F.lattice_directions("cubic", 4)
    z = RNG.normal(size=(6, 4))
    zhat = z / np.linalg.norm(z, axis=-1, keepdims=True)
    trainable = u / np.maximum(np.max(u @ zhat.T, axis=-1), 0.05)[:, None]
    for scale, dtype in ((1.3e38, jnp.float32), (1e308, jnp.float64)):
        with jax.enable_x64(dtype == jnp.float64):
            x = jnp.asarray(scale * u, dtype)
            cases = [(F.quasi_isotropic(x, 3.0, 0.5), quasi_np(u * 1e3, 3.0, 0.5)),
                     (F.lattice_isotropic(x, dirs), lattice_np(u * 1e3, dirs)),
                     (F.trainable_direction(x, z), trainable)]
            if dtype == jnp.float32:
                cases.append((F.isotropic(x, jnp.arctan), np.pi / 2 * u))
            for got, want in cases:
                np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-5)
    # norm beyond float32's range (4.2e38) with a bounded σ(r) = r/(1 + r), whose formula
    # is NaN at ∞: σ → 1, so f(x) = Φ(x̂) (eqs 61–63)
    x = jnp.asarray([3e38, 3e38, 0.0, 0.0], jnp.float32)
    xhat = np.array([1.0, 1.0, 0.0, 0.0]) / np.sqrt(2)
    bounded = lambda r: r / (1 + r)  # noqa: E731
    big = xhat[None] * 1e3
    for got, want in [(F.quasi_isotropic(x, 3.0, 0.5, bounded), quasi_np(big, 3.0, 0.5)[0]),
                      (F.lattice_isotropic(x, dirs, bounded), lattice_np(big, dirs)[0]),
                      (F.trainable_direction(x, z, bounded),
                       xhat / max(np.max(zhat @ xhat), 0.05))]:
        np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-5)

    # rows with infinite components take their limit, the value at the same signs near
    # float32's maximum (σ = tanh is 1 there); a row that also holds a NaN is NaN
    inf = np.inf
    rows = jnp.asarray([[inf, 0, 0, 0], [inf, -inf, 0, 0], [inf, np.nan, 0, 0]], jnp.float32)
    near = jnp.asarray([[3e38, 0, 0, 0], [3e38, -3e38, 0, 0]], jnp.float32)
    for f in (lambda x: F.quasi_isotropic(x, 3.0, 0.5), lambda x: F.lattice_isotropic(x, dirs),
              lambda x: F.trainable_direction(x, z)):
        y = np.asarray(f(rows))
        np.testing.assert_array_equal(y[:2], np.asarray(f(near)))
        assert np.all(np.isnan(y[2]))

def test_bloch_with_a_root_like_sigma_is_zero_at_the_origin():
    """σ(s) = tanh √s has σ'(0) = ∞; eq 41 still gives f(0) = 0, with finite gradients,
    and f(x) = tanh(‖x‖) n(x̂) elsewhere."""
    sig = lambda s: jnp.tanh(jnp.sqrt(s))  # noqa: E731
    zero = jnp.zeros(2, jnp.complex64)
    np.testing.assert_array_equal(np.asarray(F.bloch(zero, sig)), 0)
    g = jax.grad(lambda v: jnp.sum(F.bloch(v, sig)))(zero)
    assert np.all(np.isfinite(np.asarray(g)))
    x = np.array([[0.3 + 0.1j, -0.2j], [1.0, 2.0 - 1.0j]])
    n = bloch_np(x) / np.linalg.norm(bloch_np(x), axis=-1, keepdims=True)
    want = np.tanh(np.linalg.norm(x, axis=-1))[:, None] * n
    np.testing.assert_allclose(np.asarray(F.bloch(jnp.asarray(x, jnp.complex64), sig)),
                               want, rtol=1e-5, atol=1e-6)


def test_series_branch_is_float64_accurate_below_its_switch():
    """tanh(s)/s is a series below s = 0.1: Bloch (s = x†x) and the Lorentz form
    (s = xᵀηx) just below the switch and well inside it agree with the float64 quotient to
    a few ulp."""
    x = np.array([[np.sqrt(0.0999), 0.0], [0.2 + 0.1j, 0.2j], [0.05, 0.01j]])
    xl = np.array([[np.sqrt(0.0999), 0.0], [0.3, 0.1], [0.0, 0.2]])
    s = xl[:, 0] ** 2 - xl[:, 1] ** 2
    with _x64():
        y = np.asarray(F.bloch(jnp.asarray(x)))
        yl = np.asarray(F.lorentz_isotropic(jnp.asarray(xl)))
    np.testing.assert_allclose(y, bloch_np(x), rtol=4e-16, atol=0)
    np.testing.assert_allclose(yl, xl * (np.tanh(s) / s)[:, None], rtol=4e-16, atol=0)
