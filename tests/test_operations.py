"""Operations (isotropic paper App. A.4, C, D): NumPy float64 references of eqs 53–60 and
66–70, multi-argument equivariance, dropout statistics (eqs 65–67), numerics and errors."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import taxdl.nn as tnn
import taxdl.nn.functional as tf
from _models import fd_jacobian
from taxdl.nn.operations._dropout import overlap_probability

X64 = lambda: jax.enable_x64(True)  # noqa: E731


def rng(seed=0):
    return np.random.default_rng(seed)


def haar(r, n):
    q, rr = np.linalg.qr(r.normal(size=(n, n)))
    return q * np.sign(np.diag(rr))


# ----------------------------------------------------------------- NumPy references
def np_iso_min(x, n):
    d, nn = x @ n, n @ n
    if d == 0:
        return x
    return min(np.sign(d), abs(nn / d)) * np.sign(d) * x          # eq 55


def np_iso_max(x, n):
    d, nn = x @ n, n @ n
    if d == 0:
        return x
    return max(np.sign(d), abs(nn / d)) * np.sign(d) * x          # eq 56


def np_iso_mul(x, n):
    r = np.linalg.norm(n)
    u = n / r
    return x + ((r - 1) * (x @ u)) * u                              # eq 58


def np_iso_tanh(s):
    r = np.linalg.norm(s, axis=-1, keepdims=True)
    return np.tanh(r) * s / r


def test_binary_operations_match_eqs_53_to_58():
    r = rng(1)
    with X64():
        cases = [(r.normal(size=8), r.normal(size=8) * s) for s in (0.3, 1.0, 3.0)]
        x0 = r.normal(size=8)
        cases += [(x0, -x0), (x0, 0.2 * x0), (x0, 5 * x0), (1e-3 * x0, r.normal(size=8))]
        for x, n in cases:
            jx, jn = jnp.asarray(x), jnp.asarray(n)
            np.testing.assert_allclose(tf.isotropic_min(jx, jn), np_iso_min(x, n), rtol=1e-12)
            np.testing.assert_allclose(tf.isotropic_max(jx, jn), np_iso_max(x, n), rtol=1e-12)
            np.testing.assert_allclose(tf.isotropic_multiply(jx, jn), np_iso_mul(x, n),
                                       rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(tf.elementwise_min(jx, jn), np.minimum(x, n))
            np.testing.assert_allclose(tf.elementwise_max(jx, jn), np.maximum(x, n))
            np.testing.assert_allclose(tf.hadamard(jx, jn), x * n)


def test_isotropic_min_max_geometry():
    """min keeps the origin side of x·n = ‖n‖² and moves other points along their ray onto
    the plane; max does the opposite; both are the identity when x·n = 0."""
    r = rng(2)
    with X64():
        for _ in range(20):
            x, n = jnp.asarray(r.normal(size=8) * 3), jnp.asarray(r.normal(size=8))
            lo, hi = tf.isotropic_min(x, n), tf.isotropic_max(x, n)
            nn = float(n @ n)
            assert float(lo @ n) <= nn + 1e-9 and float(hi @ n) >= nn - 1e-9 or float(x @ n) < 0
            for y in (lo, hi):                      # on the line through 0 and x
                np.testing.assert_allclose(y * float(x @ x), x * float(x @ y), atol=1e-9)
        x = jnp.asarray([1.0, 0.0, 0.0])
        n = jnp.asarray([0.0, 2.0, 0.0])
        np.testing.assert_array_equal(tf.isotropic_min(x, n), x)
        np.testing.assert_array_equal(tf.isotropic_max(x, n), x)
        np.testing.assert_array_equal(tf.isotropic_multiply(x, jnp.zeros(3)), x)


def test_multi_argument_equivariance_and_scalings():
    """f(Rx, Rn) = R f(x, n) for R ∈ O(n) and f(ax, an) = a f(x, n) for a ≠ 0; the
    elementwise forms only for permutations."""
    r = rng(3)
    with X64():
        x, n = r.normal(size=8), r.normal(size=8)
        q = haar(r, 8)
        for f in (tf.isotropic_min, tf.isotropic_max):
            for a in (2.5, -0.3):
                np.testing.assert_allclose(f(jnp.asarray(a * x), jnp.asarray(a * n)),
                                           a * np.asarray(f(jnp.asarray(x), jnp.asarray(n))),
                                           rtol=1e-12)
        for f in (tf.isotropic_min, tf.isotropic_max, tf.isotropic_multiply):
            np.testing.assert_allclose(f(jnp.asarray(q @ x), jnp.asarray(q @ n)),
                                       q @ np.asarray(f(jnp.asarray(x), jnp.asarray(n))),
                                       rtol=1e-11, atol=1e-12)
        p = np.eye(8)[r.permutation(8)]
        for f in (tf.elementwise_min, tf.hadamard):
            np.testing.assert_allclose(f(jnp.asarray(p @ x), jnp.asarray(p @ n)),
                                       p @ np.asarray(f(jnp.asarray(x), jnp.asarray(n))))
            assert np.abs(f(jnp.asarray(q @ x), jnp.asarray(q @ n))
                          - q @ np.asarray(f(jnp.asarray(x), jnp.asarray(n)))).max() > 1e-3


def test_clipping_eqs_59_60():
    r = rng(4)
    with X64():
        x = jnp.asarray(r.normal(size=(50, 8)) * 2)
        box = tf.box_clip(x, 1.5)
        assert float(jnp.max(jnp.abs(box))) <= 1.5 + 1e-12
        factor = np.minimum(1.5 / np.abs(np.asarray(x)).max(-1, keepdims=True), 1)
        np.testing.assert_allclose(box, factor * np.asarray(x), rtol=1e-13)  # same ray
        np.testing.assert_allclose(tf.elementwise_clip(x, 1.5), np.clip(x, -1.5, 1.5))
        neg = jnp.asarray([-3.0, -2.0, -0.5])          # largest coordinate negative: eq 60 as
        np.testing.assert_allclose(tnn.BoxClip()(neg), neg / 3)   # printed would flip it
        np.testing.assert_array_equal(tnn.BoxClip()(jnp.zeros(3)), jnp.zeros(3))


# ----------------------------------------------------------------- dropout
def test_dropouts_are_unbiased_and_respect_inference_mode():
    x = jnp.asarray(rng(5).normal(size=8), jnp.float32)
    keys = jax.random.split(jax.random.key(0), 2000)
    for drop in (tnn.Dropout(0.3), tnn.StochasticIsotropicDropout(0.3)):
        ys = jax.jit(jax.vmap(lambda k, d=drop: d(x, key=k)))(keys)
        np.testing.assert_allclose(ys.mean(0), x, atol=0.1)
        np.testing.assert_array_equal(drop(x, inference=True), x)
        np.testing.assert_array_equal(eqx.nn.inference_mode(drop)(x), x)
        with pytest.raises(ValueError, match="`key=`"):
            drop(x)
    # standard dropout zeroes ~30% of the coordinates; the isotropic one none (a.s.)
    ys = jax.vmap(lambda k: tnn.Dropout(0.3)(x, key=k))(keys[:500])
    assert float(jnp.mean(ys == 0)) == pytest.approx(0.3, abs=0.03)


def test_stochastic_isotropic_dropout_matches_eq_66_in_the_drawn_basis():
    r = rng(6)
    with X64():
        x = r.normal(size=8)
        drop = tnn.StochasticIsotropicDropout(0.4)
        b = haar(r, 8)
        y = drop(jnp.asarray(x), key=jax.random.key(1), basis=jnp.asarray(b))
        keep = np.asarray(jax.random.bernoulli(jax.random.split(jax.random.key(1))[1], 0.6,
                                               (8,)), float)
        np.testing.assert_allclose(y, b.T @ (keep * (b @ x)) / 0.6, rtol=1e-12)
        basis = drop.sample_basis(jax.random.key(2), 8, jnp.float64)
        np.testing.assert_allclose(basis @ basis.T, np.eye(8), atol=1e-12)


def test_overlap_probability_is_eq_67():
    def ref(lam, gam, a, i):
        if a == 0 or i == 0:
            return lam, lam
        g = max(0, max(lam + a / i * (lam - 1), min(1, min(lam + a / i * lam, gam))))
        return g, lam + i / a * (lam - g)

    for lam in (0.1, 0.5, 0.9):
        for gam in (0.0, 0.2, 0.95):
            for a, i in ((0, 8), (8, 0), (3, 5), (7, 1), (1, 7)):
                g, q = overlap_probability(lam, gam, jnp.asarray(float(a)), jnp.asarray(float(i)))
                eg, eq = ref(lam, gam, a, i)
                assert float(g) == pytest.approx(eg, abs=1e-6)
                assert float(q) == pytest.approx(eq, abs=1e-6)
                assert -1e-6 <= float(q) <= 1 + 1e-6 and 0 <= float(g) <= 1
                assert a * float(q) + i * float(g) == pytest.approx((a + i) * lam, abs=1e-5)


def test_correlated_dropout_walk_rate_and_coherence():
    n, steps = 8, 200
    x = jnp.ones(n)

    def run(overlap):
        drop, state = eqx.nn.make_with_state(tnn.CorrelatedIsotropicDropout)(
            n, 0.3, overlap, 0.05, key=jax.random.key(1))

        def step(state, k):
            _, state = drop(x, state, key=k)
            return state, state.get(drop.state_index)

        _, (bases, dropped) = jax.lax.scan(step, state, jax.random.split(jax.random.key(2), steps))
        return bases, dropped

    (bases, coherent), (_, independent) = jax.jit(lambda: (run(0.05), run(0.3)))()
    for d in (coherent, independent):
        assert float(d.mean()) == pytest.approx(0.3, abs=0.03)     # E|D| = nλ
    same = lambda d: float(jnp.mean(d[1:] == d[:-1]))  # noqa: E731
    assert same(coherent) > same(independent) + 0.2                # longer coherence
    gram = jnp.einsum("tij,tkj->tik", bases, bases)
    np.testing.assert_allclose(gram[-1], np.eye(n), atol=1e-4)     # the walk stays in O(n)
    assert float(jnp.abs(bases[-1] - bases[0]).max()) > 0.1        # and moves


def test_correlated_dropout_shares_its_state_across_a_batch():
    drop, state = eqx.nn.make_with_state(tnn.CorrelatedIsotropicDropout)(8, key=jax.random.key(0))
    xs = jnp.asarray(rng(7).normal(size=(3, 8)), jnp.float32)
    ys, new = eqx.filter_jit(jax.vmap(lambda x: drop(x, state, key=jax.random.key(5)),
                                      out_axes=(0, None)))(xs)
    basis, dropped = new.get(drop.state_index)
    expect = jax.vmap(lambda x: tf.rotated_dropout(x, basis, 1 - dropped, 0.5))(xs)
    np.testing.assert_allclose(ys, expect, rtol=1e-5, atol=1e-6)
    y, same = drop(xs[0], state, inference=True)
    assert same is state and bool(jnp.all(y == xs[0]))


# ----------------------------------------------------------------- attention, multi-head
def test_attention_references_and_key_axis_symmetry():
    r = rng(8)
    with X64():
        q, k, v = r.normal(size=(3, 4)), r.normal(size=(8, 4)), r.normal(size=(8, 5))
        s = q @ k.T / 2.0
        soft = np.exp(s - s.max(-1, keepdims=True))
        soft /= soft.sum(-1, keepdims=True)
        iso, sm = tnn.IsotropicTanhAttention(), tnn.SoftmaxAttention()
        args = tuple(map(jnp.asarray, (q, k, v)))
        np.testing.assert_allclose(sm(*args), soft @ v, rtol=1e-12)
        np.testing.assert_allclose(iso(*args), np_iso_tanh(s) @ v, rtol=1e-12)
        u, p = haar(r, 8), np.eye(8)[r.permutation(8)]
        mixed = (jnp.asarray(q), jnp.asarray(u @ k), jnp.asarray(u @ v))
        np.testing.assert_allclose(iso(*mixed), iso(*args), rtol=1e-11)     # O(S)
        assert np.abs(sm(*mixed) - sm(*args)).max() > 1e-3                   # only S_S
        np.testing.assert_allclose(sm(jnp.asarray(q), jnp.asarray(p @ k), jnp.asarray(p @ v)),
                                   sm(*args), rtol=1e-12)
        rot = haar(r, 4)                                      # common feature rotation
        for f in (iso, sm):
            np.testing.assert_allclose(f(jnp.asarray(q @ rot.T), jnp.asarray(k @ rot.T),
                                         jnp.asarray(v)), f(*args), rtol=1e-11)


def test_half_precision_attention_scores_do_not_overflow():
    """In float16, q·k of entries 200 over 3 features is 1.2e5 > 65504: the scores are
    taken in float32, the output keeps the values' dtype (float64 reference)."""
    r = rng(10)
    q, k = 200 * r.uniform(0.5, 1.0, size=(2, 3)), 200 * r.uniform(0.5, 1.0, size=(4, 3))
    v = r.normal(size=(4, 2))
    args = [jnp.asarray(a, jnp.float16) for a in (q, k, v)]
    q16, k16, v16 = (np.asarray(a, np.float64) for a in args)
    s16 = q16 @ k16.T / np.sqrt(3)
    for f, weights in ((tf.softmax_attention, np.exp(s16 - s16.max(-1, keepdims=True))),
                       (tf.isotropic_tanh_attention, np_iso_tanh(s16))):
        if f is tf.softmax_attention:
            weights = weights / weights.sum(-1, keepdims=True)
        y = f(*args)
        assert y.dtype == jnp.float16
        np.testing.assert_allclose(np.asarray(y, np.float64), weights @ v16, rtol=2e-2,
                                   atol=2e-3)
        g = jax.grad(lambda q: jnp.sum(f(q, args[1], args[2]).astype(jnp.float32)))(args[0])
        assert np.all(np.isfinite(np.asarray(g, np.float64)))



@pytest.mark.parametrize("scale", [1e20, 1e30])
def test_attention_scores_beyond_float32_are_neither_nan_nor_wrong(scale):
    """Queries and keys of 1e20 give scores of ~1e40, beyond float32: softmax attention
    becomes the hard attention the scores order, isotropic-tanh attention the unit score
    direction; both match the float64 formulas and have finite derivatives. At unit scale
    the scores are bit for bit the plain QKᵀ/√d."""
    from taxdl.nn.operations._functional import attention_scores
    r = rng(13)
    q, k, v = (jnp.asarray(r.normal(size=s), jnp.float32) for s in ((3, 4), (5, 4), (5, 2)))
    scores = attention_scores(q, k)
    for f, weights in ((tf.softmax_attention, jax.nn.softmax(scores, -1)),
                       (tf.isotropic_tanh_attention, tf.isotropic_tanh(scores))):
        np.testing.assert_array_equal(np.asarray(f(q, k, v)),
                                      np.asarray(jnp.einsum("ts,sv->tv", weights, v)))
    qs, ks = q * scale, k * scale
    q64, k64, v64 = (np.asarray(a, np.float64) for a in (qs, ks, v))
    sc = q64 @ k64.T / 2.0
    w = np.exp(sc - sc.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    norm = np.linalg.norm(sc, axis=-1, keepdims=True)
    for f, ref in ((tf.softmax_attention, w @ v64),
                   (tf.isotropic_tanh_attention, (np.tanh(norm) * sc / norm) @ v64)):
        # eagerly and compiled: under jit XLA once computed the scores twice, rounded
        # differently, so that no shifted score was 0 and every softmax weight was 0/0
        for g in (f, jax.jit(f)):
            np.testing.assert_allclose(np.asarray(g(qs, ks, v), np.float64), ref, atol=1e-6)
        grads = jax.jit(jax.grad(lambda a, b, f=f: jnp.sum(f(a, b, v)), argnums=(0, 1)))(qs, ks)
        assert all(bool(jnp.all(jnp.isfinite(g))) for g in grads), f
    # queries near float32's maximum against unit keys: the hard attention of q·k
    kb = jnp.asarray(np.random.default_rng(0).normal(size=(6, 8)), jnp.float32)
    vb = jnp.asarray(r.normal(size=(6, 3)), jnp.float32)
    qb = jnp.asarray(np.concatenate([np.full((1, 8), 3e38), np.clip(
        r.normal(size=(3, 8)), -1, 1) * 3e38]), jnp.float32)
    hard = np.asarray(vb)[np.argmax(np.asarray(qb, np.float64) @ np.asarray(kb, np.float64).T,
                                    axis=-1)]
    np.testing.assert_allclose(np.asarray(jax.jit(tf.softmax_attention)(qb, kb, vb)), hard,
                               atol=1e-6)

def test_multi_head_layers_match_eqs_69_70():
    r = rng(9)
    with X64():
        x = r.normal(size=8)
        m = tnn.MultiHeadSum(8, 3, key=jax.random.key(0), dtype=jnp.float64)
        m = eqx.tree_at(lambda l: l.bias, m, jnp.asarray(r.normal(size=(3, 8))))
        w, b = np.asarray(m.weight), np.asarray(m.bias)
        ref = sum(np_iso_tanh(w[j] @ x + b[j]) for j in range(3))
        np.testing.assert_allclose(m(jnp.asarray(x)), ref, rtol=1e-12)
        a = tnn.MultiHeadAffineSum(8, 2, 3, hidden=4, activation=jnp.tanh,
                                   key=jax.random.key(1), dtype=jnp.float64)
        ref = sum(np.asarray(a.w_out[j]) @ np.tanh(np.asarray(a.w_in[j]) @ x) for j in range(3))
        np.testing.assert_allclose(a(jnp.asarray(x)), ref, rtol=1e-12)
        assert np.asarray(m.weight).std() == pytest.approx(1 / math.sqrt(8), rel=0.3)


# ----------------------------------------------------------------- numerics
def test_binary_operations_are_finite_at_edge_cases():
    base = jnp.asarray(rng(10).normal(size=8), jnp.float32)
    top = (3e38 / jnp.max(jnp.abs(base))) * base
    pairs = [(jnp.zeros(8), jnp.zeros(8)), (base, jnp.zeros(8)), (jnp.zeros(8), base),
             (1e30 * base, 1e30 * base[::-1]), (1e-30 * base, base), (top, -top),
             (base, jnp.full(8, 1e-30)), (base, base * (1 + 1e-7))]
    xs = jnp.stack([p[0] for p in pairs])
    ns = jnp.stack([p[1] for p in pairs])
    # isotropic multiplication scales like ‖x‖‖n‖ (as x·y does): only pairs whose true
    # result is representable
    fine = jnp.asarray([0, 1, 2, 4, 6, 7])
    for f in (tf.isotropic_min, tf.isotropic_max, tf.isotropic_multiply, tf.box_clip):
        if f is tf.isotropic_multiply:
            xs, ns = jnp.concatenate([xs[fine], top[None] / 1e10]), jnp.concatenate(
                [ns[fine], base[None]])
        g = jax.vmap(jax.grad(lambda x, n, f=f: jnp.sum(f(x, n) if f is not tf.box_clip
                                                       else f(x + n)), argnums=(0, 1)))
        ys = jax.vmap(f)(xs, ns) if f is not tf.box_clip else jax.vmap(f)(xs + ns)
        grads = jax.jit(g)(xs, ns)
        assert not jnp.any(jnp.isnan(ys)), f
        assert all(not jnp.any(jnp.isnan(gr)) for gr in grads), f
    np.testing.assert_allclose(tf.isotropic_max(top, -top), -top, rtol=1e-6)
    np.testing.assert_allclose(tf.isotropic_min(1e30 * base, 1e30 * base[::-1]),
                               1e30 * tf.isotropic_min(base, base[::-1]), rtol=1e-5)


def test_ray_operations_and_box_clip_propagate_nan_rows():
    """A NaN in x or in n makes x·n undefined: the whole row is NaN (not x passed through
    with one NaN component, as if the point were on the kept side), in every branch of
    the norm (a tiny row forces the max-scaled pass); the other rows keep their values
    (eq 55/56 in float64 NumPy)."""
    x = np.array([[np.nan, 1.0, 0.5], [1.0, 2.0, 3.0], [0.2, -0.1, 0.3], [1e-30, 0.0, 1e-30]],
                 np.float32)
    n = np.array([[1.0, 1.0, 1.0], [1.0, np.nan, 0.0], [1.0, 1.0, 1.0], [1.0, 0.0, 0.0]],
                 np.float32)

    def reference(x, n, side):
        d, nn = x @ n, n @ n
        moves = (d > nn) if side == "min" else (d < nn) & (d != 0)
        return np.where(moves, nn / np.where(d != 0, d, 1) * x, x)

    for f, side in ((tf.isotropic_min, "min"), (tf.isotropic_max, "max")):
        for rows in (slice(0, 3), slice(0, 4)):
            y = np.asarray(jax.jit(f)(jnp.asarray(x[rows]), jnp.asarray(n[rows])))
            assert np.all(np.isnan(y[:2])), side
            for i in range(2, y.shape[0]):
                np.testing.assert_allclose(
                    y[i], reference(x[i].astype(np.float64), n[i].astype(np.float64), side),
                    rtol=1e-6, atol=1e-37)
    # the direction-preserving box clip (eq 60) likewise
    y = np.asarray(jax.jit(tf.box_clip)(jnp.asarray(x[[0, 1, 3]] * 4)))
    assert np.all(np.isnan(y[0])) and np.all(np.isfinite(y[1:]))
    np.testing.assert_allclose(y[1], [4 / 12, 8 / 12, 1.0], rtol=1e-6)



@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_isotropic_multiply_keeps_the_component_along_a_tiny_n(dtype):
    """‖n‖ below the dtype's ε: the component of x along n̂ is scaled by ‖n‖, not lost
    (x + (‖n‖ − 1)(x·n̂)n̂ rounds ‖n‖ − 1 to −1 there). f(x, n) and its Jacobian in x
    against eq 58 in float64 for x ∥ n, where the projection is exact."""
    with jax.enable_x64(dtype == jnp.float64):
        for scale in (1e-8, 1e-20):
            x = jnp.asarray([1.0, 0.0, 0.0], dtype)
            n = jnp.asarray([scale, 0.0, 0.0], dtype)
            np.testing.assert_allclose(np.asarray(tf.isotropic_multiply(x, n), np.float64),
                                       [scale, 0.0, 0.0], rtol=1e-6)
            jac = np.asarray(jax.jacfwd(tf.isotropic_multiply)(x, n), np.float64)
            np.testing.assert_allclose(jac, np.diag([scale, 1.0, 1.0]), rtol=1e-6)
            grad = np.asarray(jax.grad(lambda v: tf.isotropic_multiply(v, n)[0])(x))
            np.testing.assert_allclose(grad, [scale, 0.0, 0.0], rtol=1e-6)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_isotropic_multiply_along_n_is_a_product(dtype):
    """x ∥ n: f(x, n) = ‖n‖x (x has no part off n̂), a well-conditioned product, also
    for ‖n‖ far below ε and x not a power of two, where x − (x·n̂)n̂ rounds to ~ε‖x‖
    along n̂ (0.1 e₁ with n = 1e-8 e₁ gave 8.5e-9 e₁ in float32, and in one dimension a
    sign flip: 6.07e26 with n = −1.1e-28 gave −3.7e19). Values, Jacobians in x
    (diag(‖n‖, 1, …)) and gradients against ‖n‖x computed in float64 from the rounded
    inputs."""
    info = np.finfo(dtype)
    with jax.enable_x64(dtype == jnp.float64):
        cases = [((0.1,), (1e-8,)), ((3.0,), (1e-3,)), ((6.0747017e26,), (-1.1450413e-28,)),
                 ((0.3,), (1e-17,)), ((-0.7,), (2.5,)),
                 ((0.1, 0.0, 0.0), (1e-8, 0.0, 0.0)), ((0.0, -0.3), (0.0, 1e-17)),
                 ((0.0, 0.7, 0.0, 0.0), (0.0, -3e-30, 0.0, 0.0))]
        for x, n in cases:
            x, n = jnp.asarray(x, dtype), jnp.asarray(n, dtype)
            xd, nd = np.asarray(x, np.float64), np.asarray(n, np.float64)
            r = np.linalg.norm(nd)
            y = np.asarray(tf.isotropic_multiply(x, n), np.float64)
            np.testing.assert_allclose(y, r * xd, rtol=8 * info.eps, atol=0)
            k = int(np.argmax(np.abs(nd)))
            want = np.eye(x.shape[0])
            want[k, k] = r
            for jac in (jax.jacfwd(tf.isotropic_multiply), jax.jacrev(tf.isotropic_multiply)):
                np.testing.assert_allclose(np.asarray(jac(x, n), np.float64), want,
                                           rtol=8 * info.eps, atol=0)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_isotropic_multiply_derivative_along_n_itself(dtype):
    """Moving n along n̂ keeps n̂: the derivative of f in n along n̂ is (x·n̂)n̂, of size
    ‖x‖ however small ‖n‖ (in one dimension f = |n|x and df/dn = sign(n) x). It was
    formed from terms of size ‖x‖/‖n‖ that cancel, after the O(‖x‖) term had been
    rounded away (0 in float32 at n = 1e-8). Checked in forward and reverse mode, in one
    dimension and for n on an axis of ℝ³ (where n̂ is exact)."""
    with jax.enable_x64(dtype == jnp.float64):
        for scale in (1e-3, 1e-8, -1e-8, 1e-20):
            x, n = jnp.asarray([3.0], dtype), jnp.asarray([scale], dtype)
            want = np.sign(scale) * 3.0
            assert float(jax.jacfwd(tf.isotropic_multiply, argnums=1)(x, n)[0, 0]) == \
                pytest.approx(want, rel=1e-6)
            assert float(jax.grad(lambda m: tf.isotropic_multiply(x, m)[0])(n)[0]) == \
                pytest.approx(want, rel=1e-6)
            x3 = jnp.asarray([3.0, 1.0, -2.0], dtype)
            n3 = jnp.asarray([0.0, 0.0, scale], dtype)
            e3 = jnp.asarray([0.0, 0.0, 1.0], dtype)
            dy = jax.jvp(lambda m: tf.isotropic_multiply(x3, m), (n3,), (e3,))[1]
            np.testing.assert_allclose(np.asarray(dy, np.float64),
                                       [0.0, 0.0, -2.0 * np.sign(scale)], rtol=1e-6, atol=0)


def test_isotropic_multiply_overflows_only_along_n():
    """Where (‖n‖ − 1)(x·n̂) overflows, the true result is ±∞ only in the components
    along n̂: the others keep x's (here 0 off the support of n, where an ∞·0 would give
    NaN). Checked against eq 58 in float64."""
    x = 1e30 * jnp.asarray([1.0, 0.0, -1.0, 1.0, 0.0, -1.0, 1.0, 0.0], jnp.float32)
    y = np.asarray(tf.isotropic_multiply(x, x))
    xd = np.asarray(x, np.float64)
    r = np.linalg.norm(xd)
    ref = xd + (r - 1) * (xd @ (xd / r)) * (xd / r)
    assert not np.any(np.isnan(y))
    big = np.abs(ref) > np.finfo(np.float32).max
    assert big.any() and (~big).any()
    np.testing.assert_array_equal(y[big], np.sign(ref[big]) * np.inf)
    np.testing.assert_array_equal(y[~big], ref[~big])



def test_box_clip_of_infinite_rows_is_the_limit():
    """A row with infinite components is clipped to b times their signs, the limit of
    b x/‖x‖∞ (∞/∞ gave NaN there); finite and NaN rows as before."""
    inf = np.inf
    x = jnp.asarray([[inf, 1.0, 0.0], [-inf, inf, 3.0], [np.nan, 1.0, 0.0], [3.0, 1.0, 0.0]],
                    jnp.float32)
    y = np.asarray(jax.jit(lambda v: tf.box_clip(v, 2.0))(x))
    np.testing.assert_array_equal(y[:2], [[2.0, 0.0, 0.0], [-2.0, 2.0, 0.0]])
    assert np.all(np.isnan(y[2]))
    np.testing.assert_allclose(y[3], [2.0, 2.0 / 3.0, 0.0], rtol=1e-6)


def test_ray_operations_and_box_clip_near_the_largest_float32():
    """At magnitudes above 2¹²⁶ a division by the largest component would multiply by a
    reciprocal that CPUs flush to 0 (turning isotropic min/max into the identity and the
    box clip into 0). Against eqs 55, 56 and 60 in float64: equal where the true result
    is representable, ±∞ with its sign where it is not."""
    r = rng(12)
    fmax = float(np.finfo(np.float32).max)
    for _ in range(10):
        x32 = jnp.asarray(2e38 * r.uniform(-1, 1, 6), jnp.float32)
        n32 = jnp.asarray(2e38 * r.uniform(-1, 1, 6), jnp.float32)
        x, n = np.asarray(x32, np.float64), np.asarray(n32, np.float64)
        m = np.abs(x).max()
        for f, ref in ((tf.isotropic_min, np_iso_min(x, n)), (tf.isotropic_max, np_iso_max(x, n)),
                       (lambda a, _: tf.box_clip(a, 3.0), x * min(3.0 / m, 1.0))):
            with np.errstate(over="ignore"):
                y = np.asarray(f(x32, n32), np.float64)
            big = np.abs(ref) > fmax
            np.testing.assert_array_equal(y[big], np.sign(ref[big]) * np.inf)
            np.testing.assert_allclose(y[~big], ref[~big], rtol=1e-5,
                                       atol=1e-6 * np.abs(ref[~big]).max())

def _central_jacobians(f, x, n, h=1e-6):
    """Jacobians of a NumPy f(x, n) in x and in n by central differences (float64)."""
    return fd_jacobian(lambda v: f(v, n), x, h), fd_jacobian(lambda v: f(x, v), n, h)


def test_ray_operation_derivatives_match_eqs_55_56_up_to_the_largest_float32():
    """Eqs 55–56 are homogeneous (f(cx, cn) = c f(x, n)), so both Jacobians are the same
    at every scale c: float32 jacfwd and jacrev at c up to 1e38 match central differences
    of the float64 NumPy formula at c = 1, on points that are moved (clipped onto the
    hyperplane) and points that are kept. (At c = 1e38 a reverse mode that sums v·x
    over the components overflows, giving ±∞ or NaN where the derivative is O(1).)"""
    r = rng(31)
    cases = []
    for _ in range(6):
        x, n = r.normal(size=5), r.normal(size=5)
        t = (x @ n) / (n @ n)   # x·(t n) = ‖t n‖²: on the hyperplane
        cases += [(x, 0.5 * t * n), (x, 2 * t * n)]   # beyond it, and on the origin's side
    for f, ref in ((tf.isotropic_min, np_iso_min), (tf.isotropic_max, np_iso_max)):
        moved = 0
        for x, n in cases:
            jx, jn = _central_jacobians(ref, x, n)
            moved += not np.allclose(jx, np.eye(5))
            for c in (1.0, 1e30, 1e38):
                args = (jnp.asarray(c * x, jnp.float32), jnp.asarray(c * n, jnp.float32))
                for jacobian in (jax.jacfwd, jax.jacrev):
                    gx, gn = jax.jit(jacobian(f, argnums=(0, 1)))(*args)
                    scale = 1 + np.abs(jx).max() + np.abs(jn).max()
                    np.testing.assert_allclose(gx, jx, atol=2e-5 * scale, err_msg=f"{f} {c}")
                    np.testing.assert_allclose(gn, jn, atol=2e-5 * scale, err_msg=f"{f} {c}")
        assert moved >= 5, f   # the check covers points that eq 55/56 moves


def test_isotropic_multiply_derivatives_match_eq_58_up_to_the_largest_float32():
    """Eq 58 is linear in x, so $J_x(cx, n) = J_x(x, n)$ and $J_n(cx, n) = c\\,J_n(x, n)$:
    float32 jacfwd and jacrev at c up to 4e37 match c times central differences of the
    float64 NumPy formula at c = 1, and where c J_n is beyond float32's largest number
    they give ±∞ with its sign (a reverse mode that sums terms of size ‖x‖ gave NaN
    there, and at c = 4e37 also where the derivative is finite)."""
    r = rng(32)
    fmax = float(np.finfo(np.float32).max)
    overflowed = 0
    for scale in (1e-3, 0.5, 2.0, 1e3, 1e-3, 1.0):
        x, n = r.normal(size=4), r.normal(size=4) * scale
        jx, jn = _central_jacobians(np_iso_mul, x, n, h=1e-7 * np.linalg.norm(n))
        for c in (1.0, 1e30, 4e37 / np.abs(x).max()):
            args = (jnp.asarray(c * x, jnp.float32), jnp.asarray(n, jnp.float32))
            for jacobian in (jax.jacfwd, jax.jacrev):
                gx, gn = (np.asarray(g, np.float64)
                          for g in jax.jit(jacobian(tf.isotropic_multiply, argnums=(0, 1)))(*args))
                np.testing.assert_allclose(gx, jx, rtol=1e-4, atol=1e-4 * np.abs(jx).max())
                ref = c * jn
                big = np.abs(ref) > fmax
                overflowed += big.sum()
                np.testing.assert_array_equal(gn[big], np.sign(ref[big]) * np.inf)
                np.testing.assert_allclose(gn[~big], ref[~big], rtol=1e-3,
                                           atol=1e-4 * c * np.abs(jn).max())
    assert overflowed > 0   # the ±∞ case is covered


def test_binary_operations_over_thirty_orders_of_magnitude():
    """Rows of x and n with magnitudes 10ᵏ, k uniform in [−30, 30] (most take the
    rescaled path) and a batch of ordinary rows alone (the plain sums): eqs 55, 56 and 58
    in float32 against float64, up to float32 rounding, and never NaN."""
    r = rng(34)
    rows = 400
    x = r.normal(size=(rows, 7)) * 10.0 ** r.uniform(-30, 30, (rows, 1))
    n = r.normal(size=(rows, 7)) * 10.0 ** r.uniform(-30, 30, (rows, 1))
    for xs, ns in ((x, n), (r.normal(size=(rows, 7)), r.normal(size=(rows, 7)))):
        x32, n32 = jnp.asarray(xs, jnp.float32), jnp.asarray(ns, jnp.float32)
        xd, nd = np.asarray(x32, np.float64), np.asarray(n32, np.float64)
        for f, ref in ((tf.isotropic_min, np_iso_min), (tf.isotropic_max, np_iso_max),
                       (tf.isotropic_multiply, np_iso_mul)):
            y = np.asarray(f(x32, n32), np.float64)
            assert not np.isnan(y).any(), f
            want = np.stack([ref(a, b) for a, b in zip(xd, nd)])
            fine = np.all(np.abs(want) < 3e38, axis=-1)
            assert fine.mean() > 0.5, f
            scale = np.abs(want[fine]).max(axis=-1, keepdims=True)   # per row
            err = np.abs(y[fine] - want[fine]) / (1e-4 * np.abs(want[fine]) + 1e-5 * scale)
            assert err.max() <= 1, (f, err.max())


def test_binary_operations_rows_do_not_depend_on_the_batch():
    """Ordinary rows take plain sums; a batch with a row beyond [2⁻⁴⁰, 2⁴⁰] in squared
    norm (or a zero row) takes the rescaled path for it. Each row's value and gradient
    are the same bit for bit whether it is alone or beside such rows, and match eqs
    55, 56 and 58 in float64."""
    r = rng(33)
    x = r.normal(size=(5, 6)) * np.array([1, 1e30, 1e-30, 0, 1])[:, None]
    n = r.normal(size=(5, 6)) * np.array([1, 1, 1e25, 1, 0])[:, None]
    x32, n32 = jnp.asarray(x, jnp.float32), jnp.asarray(n, jnp.float32)
    for f, ref in ((tf.isotropic_min, np_iso_min), (tf.isotropic_max, np_iso_max),
                   (tf.isotropic_multiply, np_iso_mul)):
        def grad(a, b, f=f):
            return jax.grad(lambda a, b: jnp.sum(jnp.tanh(f(a, b) * 1e-3)), argnums=(0, 1))(a, b)
        batch, gx, gn = f(x32, n32), *grad(x32, n32)
        for i in range(5):
            np.testing.assert_array_equal(f(x32[i:i + 1], n32[i:i + 1])[0], batch[i])
            hx, hn = grad(x32[i:i + 1], n32[i:i + 1])
            np.testing.assert_array_equal(hx[0], gx[i])
            np.testing.assert_array_equal(hn[0], gn[i])
            xd, nd = np.asarray(x32[i], np.float64), np.asarray(n32[i], np.float64)
            expect = ref(xd, nd) if f is not tf.isotropic_multiply or nd.any() else xd
            np.testing.assert_allclose(batch[i], expect, rtol=2e-5,
                                       atol=1e-6 * np.abs(expect).max())


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
def test_rotated_dropouts_compute_half_precision_in_float32(dtype):
    """Entries of 3e4 in float16: rotating in float16 overflows B x and rotating back
    gives NaN. The result is eq 66 evaluated in float64, rounded to the input's dtype
    (±∞ where that overflows); the correlated variant builds and runs its walk with a
    half-precision dtype (its state in float32)."""
    r = rng(11)
    n = 8
    b = haar(r, n)
    keep = (r.uniform(size=n) < 0.6).astype(float)
    x = jnp.asarray(3e4 * r.normal(size=n), dtype)
    y = tf.rotated_dropout(x, jnp.asarray(b, jnp.float32), jnp.asarray(keep, dtype), 0.4)
    assert y.dtype == dtype and not jnp.any(jnp.isnan(y))
    xd = np.asarray(x.astype(jnp.float32), np.float64)
    ref = np.asarray(jnp.asarray(b.T @ (keep * (b @ xd)) / 0.6, jnp.float32).astype(dtype))
    np.testing.assert_allclose(np.asarray(y.astype(jnp.float32)),
                               ref.astype(np.float32), rtol=2e-2 if dtype == jnp.bfloat16
                               else 2e-3, atol=0.0)
    drop, state = eqx.nn.make_with_state(tnn.CorrelatedIsotropicDropout)(
        n, key=jax.random.key(0), dtype=dtype)
    y, state = drop(x, state, key=jax.random.key(1))
    basis, dropped = state.get(drop.state_index)
    assert basis.dtype == jnp.float32 and y.dtype == dtype
    bd = np.asarray(basis, np.float64)
    ref = bd.T @ ((1 - np.asarray(dropped, np.float64)) * (bd @ xd)) / 0.5
    finite = np.abs(ref) < float(jnp.finfo(dtype).max) / 2
    np.testing.assert_allclose(np.asarray(y.astype(jnp.float32))[finite], ref[finite],
                               rtol=2e-2 if dtype == jnp.bfloat16 else 2e-3,
                               atol=1e-2 * np.abs(ref).max())

# ----------------------------------------------------------------- errors
@pytest.mark.parametrize("call,err,match", [
    (lambda: tnn.IsotropicMin()(jnp.ones(3), jnp.ones(4)), ValueError, "same last axis"),
    (lambda: tnn.IsotropicMultiply()(jnp.ones(3), jnp.ones(3, jnp.float16)), TypeError,
     "same dtype"),
    (lambda: tnn.Dropout(1.0), ValueError, "`rate`"),
    (lambda: tnn.StochasticIsotropicDropout(-0.1), ValueError, "`rate`"),
    (lambda: tnn.CorrelatedIsotropicDropout(4, 0.5, 1.5, key=jax.random.key(0)), ValueError,
     "`overlap`"),
    (lambda: tnn.CorrelatedIsotropicDropout(4, step=-1.0, key=jax.random.key(0)), ValueError,
     "`step`"),
    (lambda: tnn.CorrelatedIsotropicDropout(4, step=1e30, key=jax.random.key(0)), ValueError,
     r"`step` must be a finite number in \[0, 10"),
    (lambda: tnn.BoxClip(0.0), ValueError, "`bound`"),
    (lambda: tnn.SoftmaxAttention()(jnp.ones((2, 3)), jnp.ones((4, 2)), jnp.ones((4, 5))),
     ValueError, "feature size"),
    (lambda: tnn.IsotropicTanhAttention()(jnp.ones((2, 3)), jnp.ones((4, 3)), jnp.ones((5, 5))),
     ValueError, "same length"),
    (lambda: tnn.SoftmaxAttention()(jnp.ones((2, 3)), jnp.ones((0, 3)), jnp.ones((0, 5))),
     ValueError, r"`keys` must hold at least one key \(S >= 1\), got shape \(0, 3\)"),
    (lambda: tf.isotropic_tanh_attention(jnp.ones((2, 3)), jnp.ones((0, 3)), jnp.ones((0, 5))),
     ValueError, "`key` must be an \\(S, d\\) array with S >= 1 keys"),
    (lambda: tnn.MultiHeadSum(4, 0, key=jax.random.key(0)), ValueError, "`heads`"),
    (lambda: tnn.MultiHeadSum(4, 2, gain=0.0, key=jax.random.key(0)), ValueError, "`gain`"),
    (lambda: tnn.StochasticIsotropicDropout(0.5)(jnp.ones(3), key=jax.random.key(0),
                                                 basis=jnp.eye(4)), ValueError, "`basis`"),
    # the functional forms check their hyperparameters as the modules do
    (lambda: tf.elementwise_min(jnp.arange(3), jnp.ones(3)), TypeError,
     "`x` must be a real floating"),
    (lambda: tf.hadamard(jnp.ones(3), jnp.ones(3, jnp.float16)), TypeError, "same dtype"),
    (lambda: tf.elementwise_max(jnp.ones(3), jnp.ones(4)), ValueError, "same last axis"),
    (lambda: tf.elementwise_clip(jnp.arange(3), 1.0), TypeError, "`x` must be a real floating"),
    (lambda: tf.isotropic_min(jnp.ones(3), jnp.ones(3, jnp.float16)), TypeError, "same dtype"),
    (lambda: tf.softmax_attention(jnp.ones((2, 3)), jnp.ones((4, 3)), jnp.ones((4, 5), jnp.int32)),
     TypeError, "`value` must be a real floating"),
    (lambda: tf.isotropic_tanh_attention(jnp.ones((2, 3), jnp.int32), jnp.ones((4, 3)),
                                         jnp.ones((4, 5))), TypeError,
     "`query` must be a real floating"),
    (lambda: tf.multi_head_sum(jnp.ones(3, jnp.complex64), jnp.ones((2, 4, 3)),
                               jnp.ones((2, 4)), jnp.tanh), TypeError,
     "`x` must be a real floating"),
    (lambda: tf.rotated_dropout(jnp.ones(3), jnp.eye(3, dtype=jnp.complex64), jnp.ones(3), 0.5),
     TypeError, "`basis` must be a real floating"),
    (lambda: tf.box_clip(jnp.array([0.5, 0.2]), -1.0), ValueError, "^box_clip: `bound`"),
    (lambda: tf.box_clip(jnp.array([0.5, 0.2]), 0.0), ValueError, "`bound`"),
    (lambda: tf.elementwise_clip(jnp.array([0.5, 0.2]), -1.0), ValueError,
     "^elementwise_clip: `bound`"),
    (lambda: tf.rotated_dropout(jnp.ones(2), jnp.eye(2), jnp.ones(2), rate=1.0), ValueError,
     "`rate`"),
])
def test_bad_arguments_are_named(call, err, match, library_checks_only):
    with pytest.raises(err, match=match):
        call()


def test_box_clip_of_no_coordinates_is_empty():
    for shape in ((2, 0), (0, 3)):
        assert tf.box_clip(jnp.zeros(shape), 1.0).shape == shape
        assert jax.grad(lambda x: jnp.sum(tf.box_clip(x, 1.0)))(jnp.zeros(shape)).shape == shape


@pytest.mark.parametrize("call", [
    lambda x: tf.unit_vector(x), lambda x: tf.centred_standardise(x),
    lambda x: tf.box_clip(x), lambda x: tf.isotropic_multiply(x, x),
    lambda x: tf.isotropic_min(x, x), lambda x: tf.isotropic_max(x, x),
    lambda x: tnn.BoxClip()(x)])
def test_integer_inputs_raise_instead_of_truncating(call, library_checks_only):
    with pytest.raises(TypeError, match="`x` must be a real floating array"):
        call(jnp.array([3, -4, 1, 2]))


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
def test_isotropic_min_max_in_half_precision_near_the_orthogonal_plane(dtype):
    """x·n = 0.005‖x‖‖n‖ is far from orthogonal at half precision: eq 56 moves x by the
    factor ‖n‖²/(x·n) ≈ 200 and eq 55 clips 300x back to the plane (not the identity)."""
    x, n = np.array([1.0, 0.0]), np.array([0.005, 1.0])
    for f, ref, xs in ((tf.isotropic_max, np_iso_max, x), (tf.isotropic_min, np_iso_min, 300 * x)):
        y = f(jnp.asarray(xs, dtype), jnp.asarray(n, dtype))
        assert y.dtype == dtype
        expect = ref(np.asarray(jnp.asarray(xs, dtype), np.float64),
                     np.asarray(jnp.asarray(n, dtype), np.float64))
        np.testing.assert_allclose(np.asarray(y, np.float64), expect, rtol=1e-2)
        g = jax.grad(lambda a, f=f: jnp.sum(f(a, jnp.asarray(n, dtype)).astype(jnp.float32)))(
            jnp.asarray(xs, dtype))
        assert g.dtype == dtype and not bool(jnp.any(jnp.isnan(g)))


def test_multi_head_sum_cells_follow_a_non_isometric_activation():
    """With ReLU (algebraic E = Sₙ⋉(ℝ×₊)ⁿ) eq 69 keeps the positive monomials in closure
    ($PD\\,\\mathrm{ReLU}(z) = \\mathrm{ReLU}(PDz)$), Sₙ in law on the left and ℝ×₊ × Sₙ in
    law for E (the scale cancels in the conjugation)."""
    m = tnn.MultiHeadSum(5, 3, activation=tnn.ReLU(), key=jax.random.key(0))
    t = m.taxonomy
    assert t.cell("closure", "L").group.name == "S_n⋉(ℝ×₊)^n"
    assert t.cell("closure", "E").group.name == "S_n⋉(ℝ×₊)^n"
    assert t.cell("probabilistic", "L").group.name == "S_n"
    assert t.cell("probabilistic", "E").group.name == "ℝ×₊ × S_n"
    # the identities behind the cells, in NumPy
    r = rng(11)
    w, b, x = r.normal(size=(3, 5, 5)), r.normal(size=(3, 5)), r.normal(size=5)
    relu = lambda z: np.maximum(z, 0)  # noqa: E731
    f = lambda w, b, x: sum(relu(w[j] @ x + b[j]) for j in range(3))  # noqa: E731
    pd = np.eye(5)[r.permutation(5)] * np.array([0.5, 2.0, 1.0, 3.0, 0.25])
    np.testing.assert_allclose(pd @ f(w, b, x), f(pd @ w, b @ pd.T, x), rtol=1e-12)
    ap = 2.5 * np.eye(5)[r.permutation(5)]
    zero = np.zeros((3, 5))
    np.testing.assert_allclose(np.linalg.solve(ap, f(w, zero, ap @ x)),
                               f(np.linalg.solve(ap, w) @ ap, zero, x), rtol=1e-12)
    tanh = tnn.MultiHeadSum(5, 2, activation=tnn.Tanh(), key=jax.random.key(0)).taxonomy
    assert tanh.cell("probabilistic", "E").group.name == "B_n"


def test_numpy_scalar_hyperparameters_are_accepted():
    """Hyperparameters read from NumPy arrays (np.float32) are numbers like any other."""
    x = jnp.array([3.0, -4.0])
    assert tnn.Dropout(np.float32(0.5)).rate == 0.5
    np.testing.assert_allclose(np.asarray(tnn.BoxClip(np.float32(2.0))(x)), [1.5, -2.0])
    m = tnn.MultiHeadSum(4, 2, gain=np.float32(2.0), key=jax.random.key(0))
    assert m.gain == 2.0
    w = tnn.HaarOrthogonal(gain=np.float32(2.0))(jax.random.key(1), (3, 3))
    np.testing.assert_allclose(np.asarray(w @ w.T), 4 * np.eye(3), atol=1e-5)
    drop = tnn.CorrelatedIsotropicDropout(4, np.float32(0.5), np.float32(0.5),
                                          step=np.float32(0.1), key=jax.random.key(2))
    assert drop.rate == 0.5


def test_cross_entropy_against_numpy_and_at_infinite_logits():
    """−Σ p log softmax(z) in float64; a logit of −∞ where the target is 0 adds 0·log 0 = 0
    (value and gradient finite)."""
    rng = np.random.default_rng(5)
    z, p = rng.normal(size=(3, 5)), rng.dirichlet(np.ones(5), size=3)
    ref = -np.sum(p * (z - np.log(np.sum(np.exp(z), -1, keepdims=True))), -1)
    with jax.enable_x64(True):
        np.testing.assert_allclose(np.asarray(tf.cross_entropy(jnp.asarray(z), jnp.asarray(p))),
                                   ref, rtol=1e-13)
    z = jnp.asarray([0.0, -jnp.inf, 1.0])
    p = jnp.asarray([0.5, 0.0, 0.5])
    loss, grad = jax.value_and_grad(tf.cross_entropy)(z, p)
    lse = np.log(1 + np.e)
    np.testing.assert_allclose(float(loss), 0.5 * lse + 0.5 * (lse - 1), rtol=1e-6)
    assert np.all(np.isfinite(np.asarray(grad))) and float(grad[1]) == 0.0


def test_correlated_dropout_largest_step_keeps_the_basis_orthogonal():
    """At the largest accepted walk step the matrix exponential is still accurate: the
    basis stays orthogonal to float32 rounding after a step (it is NaN at σ ≈ 1e4)."""
    n = 64
    drop = tnn.CorrelatedIsotropicDropout(n, step=10.0, key=jax.random.key(0))
    state = eqx.nn.State(drop)
    _, state = jax.jit(lambda x, s: drop(x, s, key=jax.random.key(1)))(jnp.ones(n), state)
    basis = np.asarray(state.get(drop.state_index)[0], np.float64)
    assert np.abs(basis.T @ basis - np.eye(n)).max() < 1e-4
