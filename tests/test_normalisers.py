"""Normalisers: NumPy float64 references of the paper's formulas (App. A.1, eqs 42–47),
stateful behaviour (train/inference like eqx.nn.BatchNorm), numerics and errors."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

import taxdl
import taxdl.nn as tnn
import taxdl.nn.functional as tf

X64 = lambda: jax.enable_x64(True)  # noqa: E731


def rng(seed=0):
    return np.random.default_rng(seed)


# ----------------------------------------------------------------- NumPy references
def np_layer_norm(x, gamma, beta, eps=0.0):
    c = x - x.mean(-1, keepdims=True)
    return gamma * c / np.sqrt(eps + (c * c).mean(-1, keepdims=True)) + beta


def np_unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def np_iso_tanh(h):
    r = np.linalg.norm(h, axis=-1, keepdims=True)
    return np.tanh(r) * h / r


def np_chi(xb, gamma, beta, eps):
    n = xb.shape[-1]
    c = xb - xb.mean(0)
    rho2 = np.mean(np.sum(c * c, -1))
    return gamma * math.sqrt(n) / scipy.stats.chi(n).mean() * c / np.sqrt(rho2 + eps) + beta


def np_group_norm(x, gamma, beta, groups, eps=0.0):
    *s, n = x.shape
    c = n // groups
    xg = x.reshape(*s, groups, c)
    axes = tuple(range(len(s))) + (len(s) + 1,)
    mu = xg.mean(axis=axes, keepdims=True)
    var = ((xg - mu) ** 2).mean(axis=axes, keepdims=True)
    return gamma * ((xg - mu) / np.sqrt(var + eps)).reshape(x.shape) + beta


# ----------------------------------------------------------------- pure functions
def test_layer_norm_matches_eq_43():
    r = rng(1)
    x, g, b = r.normal(size=(6, 8)), r.normal(size=8), r.normal(size=8)
    with X64():
        for eps in (0.0, 0.3):
            y = tf.layer_norm(jnp.asarray(x), jnp.asarray(g), jnp.asarray(b), eps)
            np.testing.assert_allclose(y, np_layer_norm(x, g, b, eps), rtol=1e-12, atol=1e-12)


def test_unit_vector_and_simple_isotropic_layer_norm():
    r = rng(2)
    x, b = r.normal(size=(6, 8)), r.normal(size=8)
    with X64():
        np.testing.assert_allclose(tf.unit_vector(jnp.asarray(x)), np_unit(x), rtol=1e-13)
        y = tf.simple_isotropic_layer_norm(jnp.asarray(x), jnp.asarray(1.7), jnp.asarray(b))
        np.testing.assert_allclose(y, 1.7 * np_unit(x) + b, rtol=1e-13)
        m = eqx.tree_at(lambda m: (m.gamma, m.beta), tnn.SimpleIsotropicLayerNorm(8),
                        (jnp.asarray(1.7), jnp.asarray(b)))
        np.testing.assert_allclose(m(jnp.asarray(x[0])), 1.7 * np_unit(x[0]) + b, rtol=1e-13)


@pytest.mark.parametrize("normalisation", ["unit", "tanh"])
def test_isotropic_layer_norm_bottleneck(normalisation):
    r = rng(3)
    x = r.normal(size=(6, 8))
    with X64():
        m = tnn.IsotropicLayerNorm(8, normalisation=normalisation, key=jax.random.key(1),
                                   dtype=jnp.float64)
        w_in, w_out = np.asarray(m.w_in), np.asarray(m.w_out)
        assert w_in.shape == (6, 8) and w_out.shape == (8, 6)
        np.testing.assert_allclose(w_in @ w_in.T, np.eye(6), atol=1e-12)  # Haar rows
        np.testing.assert_allclose(w_out, math.sqrt(8) * w_in.T, rtol=1e-13)  # tied init
        sigma = np_unit if normalisation == "unit" else np_iso_tanh
        ref = sigma(x @ w_in.T) @ w_out.T
        np.testing.assert_allclose(jax.vmap(m)(jnp.asarray(x)), ref, rtol=1e-12, atol=1e-13)
    assert tnn.IsotropicLayerNorm(8, 3, key=jax.random.key(0)).w_in.shape == (3, 8)


def test_isotropic_layer_norm_init_keeps_the_factored_group():
    """Each initial draw commutes with O(k) on the row space of W_in times O(n−k) on its
    complement (the 'factored group that survives'), though the class declares nothing."""
    with X64():
        m = tnn.IsotropicLayerNorm(8, key=jax.random.key(2), dtype=jnp.float64)
        w_in = np.asarray(m.w_in)
        q, _ = np.linalg.qr(np.concatenate([w_in.T, rng(4).normal(size=(8, 2))], 1))
        basis = np.concatenate([w_in.T, q[:, 6:]], 1)        # orthonormal, row space first
        a, _ = np.linalg.qr(rng(5).normal(size=(6, 6)))
        c, _ = np.linalg.qr(rng(6).normal(size=(2, 2)))
        blk = np.zeros((8, 8))
        blk[:6, :6], blk[6:, 6:] = a, c
        rot = basis @ blk @ basis.T
        x = rng(7).normal(size=8)
        np.testing.assert_allclose(m(jnp.asarray(rot @ x)), rot @ np.asarray(m(jnp.asarray(x))),
                                   atol=1e-12)
        generic, _ = np.linalg.qr(rng(8).normal(size=(8, 8)))
        assert np.abs(m(jnp.asarray(generic @ x)) - generic @ m(jnp.asarray(x))).max() > 1e-3


def test_chi_mean_is_the_chi_distribution_mean():
    for n in (1, 2, 3, 8, 100, 4096):
        assert tf.chi_mean(n) == pytest.approx(scipy.stats.chi(n).mean(), rel=1e-12)
    with pytest.raises(ValueError, match="`n`"):
        tf.chi_mean(0)


def test_chi_norm_matches_eqs_46_47_and_standardises_gaussian_magnitudes():
    r = rng(9)
    xb, b = r.normal(size=(6, 8)) * 3 + 1, r.normal(size=8)
    with X64():
        y = tf.chi_norm(jnp.asarray(xb), 0.7, jnp.asarray(b), 1e-3)
        np.testing.assert_allclose(y, np_chi(xb, 0.7, b, 1e-3), rtol=1e-12)
        big = jax.random.normal(jax.random.key(0), (20000, 8), jnp.float64) * 5 + 2
        mags = jnp.linalg.norm(tf.chi_norm(big, 1.0, 0.0), axis=-1)
        assert float(jnp.mean(mags)) == pytest.approx(1.0, abs=0.01)


def test_chi_norm_of_a_batch_whose_magnitude_exceeds_float32():
    """A float32 batch of entries ±(1.5e38 to 3e38): its RMS magnitude ρ ≈ √n·3e38 is
    beyond float32's range although (x − μ)/ρ is not; chi_norm never forms ρ, so values
    match eq 47 in float64 (they were NaN) and gradients are finite."""
    r = rng(31)
    x = jnp.asarray(r.choice([-1, 1], size=(5, 8)) * r.uniform(0.5, 1, size=(5, 8)) * 3e38,
                    jnp.float32)
    b = r.normal(size=8)
    x64 = np.asarray(x, np.float64)
    for eps in (0.0, 1e-5):
        np.testing.assert_allclose(np.asarray(tf.chi_norm(x, 0.7, jnp.asarray(b), eps)),
                                   np_chi(x64, 0.7, b, eps), rtol=1e-5, atol=1e-6)
        g = jax.grad(lambda a: jnp.sum(tf.chi_norm(a, 0.7, 0.0, eps) * jnp.arange(8.0)))(x)
        assert np.isfinite(np.asarray(g)).all()


def test_batch_group_instance_rms_norm_references():
    r = rng(10)
    g, b = r.normal(size=8), r.normal(size=8)
    with X64():
        xb = r.normal(size=(6, 8))
        c = xb - xb.mean(0)
        ref = g * c / np.sqrt((c * c).mean(0) + 1e-2) + b
        np.testing.assert_allclose(tf.batch_norm(jnp.asarray(xb), g, b, 1e-2), ref, rtol=1e-12)
        xs = r.normal(size=(6, 8))
        for groups in (1, 4):
            np.testing.assert_allclose(tf.group_norm(jnp.asarray(xs), g, b, groups, 0.1),
                                       np_group_norm(xs, g, b, groups, 0.1), rtol=1e-12)
        np.testing.assert_allclose(tf.instance_norm(jnp.asarray(xs), g, b),
                                   np_group_norm(xs, g, b, 8), rtol=1e-12)
        np.testing.assert_allclose(tf.group_norm(jnp.asarray(xs[0]), g, b, 1),
                                   np_layer_norm(xs[0], g, b), rtol=1e-12)
        x = r.normal(size=8)
        np.testing.assert_allclose(tf.rms_norm(jnp.asarray(x), g, 0.5),
                                   g * x / np.sqrt(0.5 + (x * x).mean()), rtol=1e-12)
        m = tnn.GroupNorm(8, 2, dtype=jnp.float64)
        np.testing.assert_allclose(m(jnp.asarray(xs)), np_group_norm(xs, 1, 0, 2), rtol=1e-12)


# ----------------------------------------------------------------- stateful normalisers
def _batched(model, x, state, **kw):
    return jax.vmap(lambda xi, s: model(xi, s, **kw), axis_name="batch",
                    in_axes=(0, None), out_axes=(0, None))(x, state)


def test_chinorm_training_inference_and_running_statistics():
    r = rng(11)
    with X64():
        model, state = eqx.nn.make_with_state(tnn.ChiNorm)(8, momentum=0.5, dtype=jnp.float64)
        batches = [r.normal(size=(6, 8)) * (i + 1) + i for i in range(3)]
        for xb in batches:
            y, state = _batched(model, jnp.asarray(xb), state)
            np.testing.assert_allclose(y, np_chi(xb, 1.0, 0.0, model.eps), rtol=1e-11)
        # zero-debiased EMA of the batch mean and RMS magnitude (momentum 0.5, 3 steps)
        w = np.array([0.25, 0.5, 1.0]) * 0.5 / (1 - 0.5 ** 3)
        mean = sum(wi * xb.mean(0) for wi, xb in zip(w, batches))
        rms = sum(wi * np.sqrt(np.mean(np.sum((xb - xb.mean(0)) ** 2, -1)))
                  for wi, xb in zip(w, batches))
        got_mean, got_rms = model.statistics(state)
        np.testing.assert_allclose(got_mean, mean, rtol=1e-12)
        np.testing.assert_allclose(got_rms, rms, rtol=1e-12)
        x = r.normal(size=8)
        inf_model = eqx.nn.inference_mode(model)
        y, state2 = inf_model(jnp.asarray(x), state)
        expect = math.sqrt(8) / scipy.stats.chi(8).mean() * (x - mean) / math.sqrt(
            rms ** 2 + model.eps)
        np.testing.assert_allclose(y, expect, rtol=1e-11)
        assert state2 is state


def test_batchnorm_matches_eq_42_per_coordinate():
    r = rng(12)
    with X64():
        model, state = eqx.nn.make_with_state(tnn.BatchNorm)(8, eps=1e-3, dtype=jnp.float64)
        xb = r.normal(size=(6, 8)) * np.arange(1, 9)
        y, state = _batched(model, jnp.asarray(xb), state)
        c = xb - xb.mean(0)
        np.testing.assert_allclose(y, c / np.sqrt((c * c).mean(0) + 1e-3), rtol=1e-11)
        mean, std = model.statistics(state)
        np.testing.assert_allclose(mean, xb.mean(0), rtol=1e-12)      # one debiased step
        np.testing.assert_allclose(std, c.std(0), rtol=1e-12)


@pytest.mark.parametrize("cls", [tnn.BatchNorm, tnn.ChiNorm])
def test_momentum_within_float32_rounding_of_one_still_debiases(cls):
    """ρ = 1 − 1e-9 is 1.0 in float32, so a plain 1 − ρᵗ is 0 (NaN statistics); one
    training step must still give the batch's own statistics (debiased EMA of one step)."""
    r = rng(13)
    model, state = eqx.nn.make_with_state(cls)(8, momentum=1 - 1e-9)
    xb = np.asarray(r.normal(size=(6, 8)) * np.arange(1, 9) + 3, np.float32)
    _, state = _batched(model, jnp.asarray(xb), state)
    mean, _ = model.statistics(state)
    np.testing.assert_allclose(np.asarray(mean), xb.astype(np.float64).mean(0), rtol=1e-4)


def test_magnitude_ema_norm_time_like_recursion_and_no_gradient_through_statistic():
    r = rng(13)
    rho = 0.9
    with X64():
        model, state = eqx.nn.make_with_state(tnn.MagnitudeEMANorm)(
            8, eps=0.0, momentum=rho, dtype=jnp.float64)
        hidden = 0.0
        for t in range(1, 4):
            xb = r.normal(size=(6, 8)) * t
            y, state = _batched(model, jnp.asarray(xb), state)
            hidden = rho * hidden + (1 - rho) * np.linalg.norm(xb, axis=-1).mean()
            s = hidden / (1 - rho ** t)
            np.testing.assert_allclose(y, xb / s, rtol=1e-12)
        np.testing.assert_allclose(model.statistic(state), s, rtol=1e-12)
        # the statistic is a constant for autodiff: the Jacobian is I/s exactly
        single = tnn.MagnitudeEMANorm(8, axis_name=None, eps=0.0, dtype=jnp.float64)
        st = eqx.nn.State(single)
        x = jnp.asarray(r.normal(size=8))
        jac = jax.jacobian(lambda v: single(v, st)[0])(x)
        s1 = float(jnp.linalg.norm(x))
        np.testing.assert_allclose(jac, np.eye(8) / s1, rtol=1e-12)


def test_stateful_norms_need_the_named_axis():
    for cls in (tnn.ChiNorm, tnn.BatchNorm, tnn.MagnitudeEMANorm):
        model, state = eqx.nn.make_with_state(cls)(8)
        with pytest.raises(NameError, match="axis_name='batch'"):
            model(jnp.ones(8), state)
        y, _ = model(jnp.ones(8), state, inference=True)       # inference needs no batch
        assert y.shape == (8,)


# ----------------------------------------------------------------- numerics
@eqx.filter_jit
def _value_and_grad_batched(model, xb, state):
    return jax.value_and_grad(lambda v: jnp.sum(_batched(model, v, state)[0] ** 2))(xb), \
        _batched(model, xb, state)[0]


def test_batch_of_one_and_equal_rows_give_beta_with_finite_gradients():
    for cls in (tnn.ChiNorm, tnn.BatchNorm):
        model, state = eqx.nn.make_with_state(cls)(8, eps=0.0)
        model = eqx.tree_at(lambda m: m.beta, model, jnp.arange(8.0))
        for xb in (jnp.ones((1, 8)), jnp.full((6, 8), 2.5)):
            (_, g), y = _value_and_grad_batched(model, xb, state)
            np.testing.assert_allclose(y, jnp.broadcast_to(jnp.arange(8.0), xb.shape))
            assert jnp.all(jnp.isfinite(g))


@pytest.mark.parametrize("cls", [tnn.BatchNorm, tnn.ChiNorm])
def test_a_feature_constant_over_the_batch_maps_to_beta_with_eps(cls):
    """With the default ε = 1e-5, a feature constant over the batch (c = 1e5, 1e6) has
    x − μ_B = 0 exactly and maps to its β (it gave −2.47 and −19.8 when x − fl(μ_B) was
    formed again), the other features follow the float64 formula (eq 42; eqs 45–47), and
    the gradient of Σ w⊙f through that feature is the closed form
    γ k (w − E_B w)/√(s² + ε) (k = 1, or √n/E_χn for ChiNorm; s² does not move to first
    order there, its derivative being 2(x − μ_B) = 0). Identical rows of 1e30 give β."""
    r = rng(31)
    n, eps = 4, 1e-5
    model, state = eqx.nn.make_with_state(cls)(n)
    beta = np.asarray(r.normal(size=n), np.float32)
    model = eqx.tree_at(lambda m: m.beta, model, jnp.asarray(beta))
    w = r.normal(size=(7, n))
    run = jax.jit(lambda v: _batched(model, v, state)[0])
    for c in (1e5, 1e6):
        xb = np.asarray(r.normal(size=(7, n)), np.float32)
        xb[:, 0] = c
        y = np.asarray(run(jnp.asarray(xb)), np.float64)
        x64 = xb.astype(np.float64)
        cen = x64 - x64.mean(0)
        if cls is tnn.BatchNorm:
            ref = beta + cen / np.sqrt((cen * cen).mean(0) + eps)
            k, denom = 1.0, np.sqrt((cen * cen).mean(0)[0] + eps)
        else:
            ref = np_chi(x64, 1.0, beta.astype(np.float64), eps)
            k = math.sqrt(n) / scipy.stats.chi(n).mean()
            denom = np.sqrt(np.mean(np.sum(cen * cen, -1)) + eps)
        np.testing.assert_array_equal(y[:, 0], beta[0])
        np.testing.assert_allclose(y[:, 1:], ref[:, 1:], rtol=1e-5, atol=1e-5)
        g = np.asarray(jax.grad(lambda v: jnp.sum(jnp.asarray(w, jnp.float32) * run(v)))(
            jnp.asarray(xb)), np.float64)
        np.testing.assert_allclose(g[:, 0], k * (w[:, 0] - w[:, 0].mean()) / denom,
                                   rtol=1e-4)
    y = run(jnp.full((3, n), 1e30, jnp.float32))
    np.testing.assert_array_equal(y, np.broadcast_to(beta, (3, n)))


def test_magnitude_ema_batch_mean_of_norms_near_float32_max_is_finite():
    """64 rows of norm 1e37: their sum (6.4e38) exceeds float32, their mean does not. The
    statistic is the float64 mean of the norms (one debiased step) and the output
    x/(s + ε), not inf and 0 (which the state then kept for good)."""
    r = rng(32)
    x = r.normal(size=(64, 4))
    x = np.asarray(x / np.linalg.norm(x, axis=1, keepdims=True) * 1e37, np.float32)
    model, state = eqx.nn.make_with_state(tnn.MagnitudeEMANorm)(4)
    y, state = _batched(model, jnp.asarray(x), state)
    x64 = x.astype(np.float64)
    s = np.linalg.norm(x64, axis=1).mean()
    np.testing.assert_allclose(float(model.statistic(state)), s, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(y, np.float64), x64 / (s + 1e-5), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("make", [
    lambda: tnn.LayerNorm(8), lambda: tnn.RMSNorm(8), lambda: tnn.SimpleIsotropicLayerNorm(8),
    lambda: tnn.IsotropicLayerNorm(8, key=jax.random.key(0)), lambda: tnn.GroupNorm(8, 4),
    lambda: tnn.InstanceNorm(8),
])
def test_zero_constant_huge_and_tiny_inputs_are_finite(make):
    m = make()
    base = jnp.asarray(rng(14).normal(size=8), jnp.float32)
    top = (3e38 / jnp.max(jnp.abs(base))) * base
    xs = jnp.stack([jnp.zeros(8), jnp.full(8, 3.0), 1e30 * base, 1e-30 * base, top, base])
    ys, gs = eqx.filter_jit(jax.vmap(lambda v: (m(v), jax.grad(lambda u: jnp.sum(m(u) ** 2))(v))))(
        xs)
    assert jnp.all(jnp.isfinite(ys)) and jnp.all(jnp.isfinite(gs))
    # scale invariance survives huge magnitudes (no overflow of the squares), up to
    # components near float32's maximum (1/max|x| would be flushed to 0 there)
    np.testing.assert_allclose(ys[2], ys[5], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(ys[4], ys[5], rtol=2e-5, atol=1e-6)


def test_outputs_keep_the_input_dtype():
    for m in (tnn.LayerNorm(8), tnn.RMSNorm(8), tnn.SimpleIsotropicLayerNorm(8)):
        for d in (jnp.float16, jnp.bfloat16, jnp.float32):
            assert m(jnp.ones(8, d).at[0].set(2)).dtype == d


# ----------------------------------------------------------------- transport / table
def test_vector_layer_norm_conjugation_leaves_the_class():
    """g⁻¹∘LN∘g for g ∈ O(n−1): exact in-class transport for permutations and for γ ∝ 1,
    impossible for a generic γ (why closure E is Sₙ, not Table 5.2's O(n−1))."""
    from taxdl.groups import OrthogonalComplement, Permutation
    from taxdl.taxonomy import transport

    ln = eqx.tree_at(lambda m: (m.gamma, m.beta), tnn.LayerNorm(8),
                     (jnp.asarray(rng(15).normal(size=8), jnp.float32),
                      jnp.asarray(rng(16).normal(size=8), jnp.float32)))
    x = jnp.asarray(rng(17).normal(size=8), jnp.float32)
    k = jax.random.key(3)
    for group, gamma_generic, ok in ((Permutation(8), True, True),
                                     (OrthogonalComplement(8), False, True),
                                     (OrthogonalComplement(8), True, False)):
        e = group.sample(k, 1)[0]
        m = ln if gamma_generic else eqx.tree_at(lambda l: l.gamma, ln, 1.3 * jnp.ones(8))
        lhs = transport(m, "E", e, group)(x)
        rhs = e.matrix.T @ m(e.matrix @ x)
        assert bool(jnp.allclose(lhs, rhs, atol=1e-5)) is ok


def test_table_rows_and_kinds():
    rows = {r.name: r.cells() for r in taxdl.table(family="normaliser").rows}
    assert rows["ChiNorm"][5] == "O(n) [data]"
    assert rows["MagnitudeEMANorm"][5] == "O(n) [time]"
    assert rows["BatchNorm"][5] == "B_n [data]"
    assert rows["SimpleIsotropicLayerNorm"] == ["ℝ×⋉ℝ^n", "ℝ×", "ℝ×·O(n)", "I_n", "ℝ×₊", "O(n)",
                                                "I_n", "ℝ×₊", "I_n"]
    assert rows["ChiNorm"][:3] == ["ℝ×⋉ℝ^n", "ℝ×⋉ℝ^n", "Aff(n)"]
    assert rows["MagnitudeEMANorm"][:3] == ["ℝ×⋉ℝ^n", "±I_n", "O(n)"]  # f(−x): γ ↦ −γ
    assert rows["BatchNorm"][:3] == ["(ℝ×)^n⋉ℝ^n"] * 2 + ["S_n⋉(ℝ×)^n⋉ℝ^n"]
    # the output bias absorbs translations on the left; σ(W_in x) does not on the right
    assert rows["IsotropicLayerNorm"][:6] == ["Aff(n)"] + ["GL(n)"] * 2 + ["I_n", "ℝ×₊",
                                                                          "O(n)"]
    tanh = taxdl.taxonomy(tnn.IsotropicLayerNorm(8, normalisation="tanh", key=jax.random.key(0)))
    assert tanh.cell("algebraic", "R").trivial


def _radial_cosines(f, xs):
    """|cos| of the angle between h(x) − h(0) and x for each row of `xs`: 1 for a scalar
    gain with a vector bias, whatever the scalar's dependence on x."""
    d = jax.vmap(lambda x: f(x) - f(jnp.zeros_like(x)))(xs)
    return jnp.abs(jnp.sum(d * xs, -1)) / (jnp.linalg.norm(d, axis=-1)
                                            * jnp.linalg.norm(xs, axis=-1))


def _off_diagonal_jacobian(f, x):
    """Largest off-diagonal entry of f's Jacobian at x relative to its largest entry."""
    j = jax.jacfwd(f)(x)
    return jnp.max(jnp.abs(j - jnp.diag(jnp.diag(j)))) / jnp.max(jnp.abs(j))


@pytest.mark.parametrize("build,flavour", [
    (lambda: tnn.ChiNorm(6), "L"), (lambda: tnn.ChiNorm(6), "R"),
    (lambda: tnn.MagnitudeEMANorm(6), "L"), (lambda: tnn.SimpleIsotropicLayerNorm(6), "L"),
])
def test_dilation_closure_cells_are_maximal(build, flavour):
    # Every member of these classes maps x to h(0) + (a scalar)·x. Each dilation of ℝ×⋉ℝⁿ
    # keeps that form (the declared cell, checked with its transport by the conformance
    # rows); the immediate supergroup (ℝ×)ⁿ⋉ℝⁿ breaks it, so no transport can exist.
    from taxdl.taxonomy import as_function

    norm = build()
    norm = eqx.tree_at(lambda m: (m.gamma, m.beta), norm,
                       (jnp.asarray(1.7, jnp.float32), jnp.linspace(-1.0, 2.0, 6)))
    f = as_function(norm)
    xs = jnp.asarray(rng(20).normal(size=(16, 6)), jnp.float32)

    @jax.jit
    @jax.vmap
    def worst(m, t):   # the smallest |cos| over the inputs after moving by x ↦ Mx + t
        moved = (lambda x: m @ f(x) + t) if flavour == "L" else (lambda x: f(m @ x + t))
        return jnp.min(_radial_cosines(moved, xs))

    assert np.all(np.asarray(_radial_cosines(f, xs)) > 1 - 1e-5)
    cell = norm.taxonomy.cell("closure", flavour).group
    assert cell.name == "ℝ×⋉ℝ^n"
    sups = cell.on(6).supergroups()
    assert [g.name for g in sups] == ["(ℝ×)^6⋉ℝ^6"]
    bigger = sups[0].sample(jax.random.key(5), 4)
    assert np.all(np.asarray(worst(bigger.matrix, bigger.shift)) < 1 - 1e-3)
    same = cell.on(6).sample(jax.random.key(6), 4)
    assert np.all(np.asarray(worst(same.matrix, same.shift)) > 1 - 1e-5)


def test_batch_norm_closure_e_is_maximal():
    # With its statistics as parameters BatchNorm is a per-coordinate affine map (diagonal
    # Jacobian); conjugation by a monomial affine map keeps it diagonal, by the immediate
    # supergroup Aff(n) (a generic linear part) not.
    from taxdl.taxonomy import as_function

    f = as_function(eqx.tree_at(lambda m: m.gamma, tnn.BatchNorm(5), jnp.linspace(0.5, 2, 5)))
    x = jnp.asarray(rng(21).normal(size=5), jnp.float32)

    @jax.jit
    @jax.vmap
    def off(m, t):
        return _off_diagonal_jacobian(lambda z: jnp.linalg.solve(m, f(m @ z + t) - t), x)

    assert float(_off_diagonal_jacobian(f, x)) <= 1e-5
    cell = tnn.BatchNorm.taxonomy.cell("closure", "E").group.on(5)
    assert [g.name for g in cell.supergroups()] == ["Aff(5)"]
    e = cell.sample(jax.random.key(7), 3)
    assert np.all(np.asarray(off(e.matrix, e.shift)) <= 1e-5)
    e = cell.supergroups()[0].sample(jax.random.key(7), 3)
    assert np.all(np.asarray(off(e.matrix, e.shift)) > 1e-2)


# ----------------------------------------------------------------- errors
@pytest.mark.parametrize("build,match", [
    (lambda: tnn.SimpleIsotropicLayerNorm(0), "`n`"),
    (lambda: tnn.IsotropicLayerNorm(1, key=jax.random.key(0)), "`n`"),
    (lambda: tnn.IsotropicLayerNorm(6, 7, key=jax.random.key(0)), "`bottleneck`"),
    (lambda: tnn.IsotropicLayerNorm(6, normalisation="erf", key=jax.random.key(0)),
     "`normalisation`"),
    (lambda: tnn.ChiNorm(4, eps=-1.0), "`eps`"),
    (lambda: tnn.ChiNorm(4, momentum=1.0), "`momentum`"),
    (lambda: tnn.BatchNorm(4, momentum=-0.1), "`momentum`"),
    (lambda: tnn.MagnitudeEMANorm(4, eps=float("nan")), "`eps`"),
    (lambda: tnn.RMSNorm(4, eps=-1e-3), "`eps`"),
    (lambda: tnn.GroupNorm(6, 4), "`groups`"),
    (lambda: tnn.LayerNorm(4, eps=-1.0), "`eps`"),
])
def test_bad_hyperparameters_name_the_argument(build, match, library_checks_only):
    with pytest.raises(ValueError, match=match):
        build()


def test_bad_inputs_name_the_argument(library_checks_only):
    with pytest.raises(ValueError, match=r"shape \(6,\)"):
        tnn.SimpleIsotropicLayerNorm(6)(jnp.ones(5))
    with pytest.raises(ValueError, match="channels"):
        tnn.GroupNorm(6, 2)(jnp.ones((3, 5)))
    with pytest.raises(TypeError, match="Float|floating"):
        tnn.RMSNorm(3)(jnp.ones(3, jnp.int32))
    with pytest.raises((ValueError, TypeError), match=r"\(b, n\)|b n"):
        tf.chi_norm(jnp.ones(4), 1.0, 0.0)


def test_constant_inputs_map_to_beta_under_jit():
    """XLA's reciprocal-multiply mean leaves rounding-level centred values; they must count
    as zero variance, not be normalised up to unit scale."""
    for v in (2.5, 7.3):
        x = jnp.full((6, 8), v)
        outs = jax.jit(lambda a: (tf.layer_norm(a, 1.0, 0.5), tf.group_norm(a, 1.0, 0.5, 2),
                                  tf.chi_norm(a, 1.0, 0.5), tf.batch_norm(a, 1.0, 0.5)))(x)
        for y in outs:
            np.testing.assert_array_equal(y, 0.5)


def test_instance_norm_equivariance_closure_is_monomial_affine_at_eps_zero():
    """ε = 0: conjugating InstanceNorm by x ↦ PDx + t gives γ' = P⁻¹γ/|d| and
    β' = (PD)⁻¹(β − t) (the statistics remove |d| and t per channel), so its class is
    closed under Sₙ⋉(ℝ×)ⁿ⋉ℝⁿ; checked here in NumPy float64, and by the checker on the
    declaration. With ε > 0 the cell is Bₙ⋉T(n) (the per-channel signs and shifts of
    closure R with Bₙ), and no per-channel scaling is reproduced by a fit (ε breaks
    scale invariance at small inputs)."""
    from taxdl.testing import assert_maximal

    n, r = 5, rng(11)
    gamma, beta = r.normal(size=n), r.normal(size=n)
    perm, d, t = r.permutation(n), r.choice([-1, 1], n) * r.uniform(0.3, 3, n), r.normal(size=n)
    m = np.eye(n)[perm] * d  # x ↦ M x: channel j scaled by d_j, then permuted
    x = r.normal(size=(4, n))
    moved = np.linalg.solve(m, (np_group_norm(x @ m.T + t, gamma, beta, n) - t).T).T
    gamma2 = np.linalg.solve(m, np.diag(gamma) @ m).diagonal() / np.abs(d)
    beta2 = np.linalg.solve(m, beta - t)
    np.testing.assert_allclose(moved, np_group_norm(x, gamma2, beta2, n), rtol=1e-10,
                               atol=1e-12)
    assert tnn.InstanceNorm(8).taxonomy.cell("closure", "E").name == "S_n⋉(ℝ×)^n⋉ℝ^n"
    with_eps = tnn.InstanceNorm(8, eps=1e-5)
    assert with_eps.taxonomy.cell("closure", "E").name == "B_8⋉T(8)"
    # (the ε = 0 declaration is checked by its row in the conformance table)
    result = assert_maximal(with_eps, with_eps.taxonomy.cell("closure", "E").group, "E",
                            generation="closure", examples=8, fit_closure=True)
    # no witness under the dilations (ε breaks them); the monomial affine maps hold
    # those and are not searched on their own
    tested = {m.group: m for m in result.maximality}
    assert "(S_8⋉(ℝ×)^8)⋉T(8)" not in tested
    dilations = tested["(ℝ×₊ × B_8)⋉T(8)"]
    assert dilations.found is None and dilations.searched


def test_layer_norm_equivariance_closure_absorbs_dilations_along_ones():
    """ε = 0: conjugating LayerNorm by x ↦ aMx + λ1, with M a permutation (vector γ, β)
    or a reflection fixing 1 (scalar γ, β), gives γ' = diag(M⁻¹diag(γ)M)/|a| and
    β' = (aM)⁻¹(β − λ1); checked in NumPy float64. The checker verifies the declared
    cells (ℝ×,+λ1) × Sₙ and (ℝ×,+λ1) × O(n−1) in the conformance table."""
    n, r = 6, rng(12)
    a, lam = -2.5, 0.7
    x = r.normal(size=(5, n))
    v = r.normal(size=n)
    v -= v.mean()
    reflect = np.eye(n) - 2 * np.outer(v, v) / (v @ v)  # orthogonal, fixes 1
    for mat, gamma, beta in ((np.eye(n)[r.permutation(n)], r.normal(size=n), r.normal(size=n)),
                             (reflect, 1.7 * np.ones(n), -0.4 * np.ones(n))):
        g = a * mat
        moved = np.linalg.solve(g, (np_layer_norm(x @ g.T + lam, gamma, beta) - lam).T).T
        gamma2 = np.linalg.solve(mat, np.diag(gamma) @ mat).diagonal() / abs(a)
        beta2 = np.linalg.solve(g, beta - lam)
        np.testing.assert_allclose(moved, np_layer_norm(x, gamma2, beta2), rtol=1e-10,
                                   atol=1e-12)
    assert tnn.LayerNorm(8).taxonomy.cell("closure", "E").name == "ℝ×,+λ1 × S_n"
    assert tnn.ScalarLayerNorm(8).taxonomy.cell("closure", "E").name == "ℝ×,+λ1 × O(n-1)"
    assert tnn.LayerNorm(8, eps=1e-5).taxonomy.cell("closure", "E").name == (
        "(±I_n × S_n)⋉+λ1")


def test_standardising_normalisers_are_odd():
    """With any ε ≥ 0 the standardisation is odd: conjugating LayerNorm and GroupNorm by
    −I maps β to −β (so −I is in closure E, also with ε > 0), and at the initialisation
    β = 0 the layer itself is odd (probabilistic E ±I × Sₙ, ±I × O(n−1) for scalar γ, β,
    ±I × S_c≀S_G); NumPy float64."""
    n, r = 6, rng(21)
    x = 0.05 * r.normal(size=(5, n))   # variance ~ ε: ε matters
    gamma, beta = r.normal(size=n), r.normal(size=n)
    for eps in (0.0, 1e-3):
        np.testing.assert_allclose(-np_layer_norm(-x, gamma, beta, eps),
                                   np_layer_norm(x, gamma, -beta, eps), rtol=1e-12)
        np.testing.assert_allclose(-np_group_norm(-x, gamma, beta, 2, eps),
                                   np_group_norm(x, gamma, -beta, 2, eps), rtol=1e-12)
    assert tnn.LayerNorm(8).taxonomy.cell("probabilistic", "E").name == "±I_n × S_n"
    assert tnn.ScalarLayerNorm(8).taxonomy.cell("probabilistic", "E").name == (
        "±I_n × O(n-1)")
    assert tnn.GroupNorm(8, 2).taxonomy.cell("probabilistic", "E").name == "±I_8 × S_4≀S_2"
    # (GroupNorm's closure E with ε > 0 is asserted with its other closure cells below)
    # with one channel per group, Bₙ already holds −I
    assert tnn.GroupNorm(8, 8).taxonomy.cell("probabilistic", "E").name == "B_n"


def test_rms_and_group_norm_equivariance_closures_absorb_commuting_dilations():
    """ε = 0, NumPy float64: conjugating RMSNorm by aS (S a signed permutation) gives
    γ' = |S|⁻¹γ/|a|, and GroupNorm by x ↦ DBx + t, with B permuting channels within and
    groups as blocks and (D, t) a scale and a shift per group, gives γ' = B⁻¹γ/|d| and
    β' = (DB)⁻¹(β − t)."""
    n, r = 6, rng(13)
    a, lam = -1.8, 0.9
    x = r.normal(size=(4, n))
    gamma, beta = r.normal(size=n), r.normal(size=n)
    signed = np.eye(n)[r.permutation(n)] * r.choice([-1.0, 1.0], n)
    g = a * signed

    def np_rms(v, gam):
        return gam * v / np.sqrt(np.mean(v * v, -1, keepdims=True))

    moved = np.linalg.solve(g, np_rms(x @ g.T, gamma).T).T
    np.testing.assert_allclose(moved, np_rms(x, np.abs(signed).T @ gamma / abs(a)),
                               rtol=1e-10, atol=1e-12)
    block = np.kron(np.eye(2)[[1, 0]], np.eye(3)[[2, 0, 1]])  # swap groups, cycle inside
    d, t = np.repeat([a, 0.4], 3), np.repeat([lam, -1.3], 3)  # per group, after B
    g = np.diag(d) @ block
    moved = np.linalg.solve(g, (np_group_norm(x @ g.T + t, gamma, beta, 2) - t).T).T
    gamma2 = np.linalg.solve(g, np.diag(gamma) @ g).diagonal() / np.abs(g).sum(0)
    np.testing.assert_allclose(
        moved, np_group_norm(x, gamma2, np.linalg.solve(g, beta - t), 2),
        rtol=1e-10, atol=1e-12)
    assert tnn.RMSNorm(8).taxonomy.cell("closure", "E").name == "ℝ× × B_n"
    assert tnn.GroupNorm(8, 2).taxonomy.cell("closure", "E").name == "S_4≀S_2⋉(ℝ×,+λ1)^2"
    assert tnn.GroupNorm(8, 2, eps=1e-3).taxonomy.cell("closure", "E").name == \
        "S_4≀S_2⋉(±1,+λ1)^2"


def test_instance_norm_right_cells_follow_eps():
    # Per-channel statistics: with ε > 0 every per-channel shift is removed (T(n)), and
    # only shifts (γ absorbs a sign per channel as well, in the closure cell); the
    # checker confirms the cells and that their supergroups fail.
    from taxdl.testing import check

    m = tnn.InstanceNorm(4, eps=1e-5)
    assert m.taxonomy.cell("algebraic", "R").name == "T(n)"
    assert m.taxonomy.cell("closure", "R").name == "(±1)^4⋉ℝ^4"
    assert tnn.InstanceNorm(4).taxonomy.cell("closure", "R").name == "(ℝ×)^n⋉ℝ^n"
    report = check(m, examples=8)
    assert report.passed
    x = jnp.asarray(np.random.default_rng(0).normal(size=(4, 4)), jnp.float32)
    t = jnp.asarray([3.0, -1.0, 0.5, 2.0], jnp.float32)
    np.testing.assert_allclose(np.asarray(m(x + t)), np.asarray(m(x)), atol=1e-5)
    small = 0.01 * x  # variance ~1e-4, so ε = 1e-5 visibly breaks scale invariance
    assert not np.allclose(np.asarray(m(2 * small)), np.asarray(m(small)), atol=1e-3, rtol=0)


def test_group_norm_declares_its_per_group_groups():
    """GroupNorm with 3 groups of 4 is algebraically invariant to a positive scale and a
    shift per group (not only global ones) and, at γ = 1, β = 0, equivariant to moving
    groups as blocks; its cells name exactly these groups, whose supergroups the
    conformance check refutes. Checked here on explicit elements in float64 against the
    NumPy reference."""
    G = taxdl.groups
    n, groups = 12, 3
    m = tnn.GroupNorm(n, groups)
    table = m.taxonomy
    assert G.same_group(table.cell("algebraic", "R").group,
                        G.BlockScaleShift(n, 4, positive=True))
    assert G.same_group(table.cell("closure", "R").group, G.BlockScaleShift(n, 4))
    assert G.same_group(table.cell("probabilistic", "E").group,
                        G.Product(G.PointReflection(), G.BlockPermutation(n, 4)))
    eps_table = tnn.GroupNorm(n, groups, eps=1e-3).taxonomy
    assert G.same_group(eps_table.cell("algebraic", "R").group,
                        G.BlockScaleShift(n, 4, scales=False))
    x = rng(5).normal(size=(7, n))
    scale = np.repeat([0.5, 3.0, 2.0], 4)
    shift = np.repeat([1.0, -2.0, 0.25], 4)
    ref = np_group_norm(x, 1, 0, groups)
    np.testing.assert_allclose(np_group_norm(x * scale + shift, 1, 0, groups), ref,
                               atol=1e-12)
    blocks = np.r_[8:12, 0:4, 4:8]  # groups moved as wholes, with a swap inside one
    blocks[[0, 1]] = blocks[[1, 0]]
    np.testing.assert_allclose(np_group_norm(x[:, blocks], 1, 0, groups), ref[:, blocks],
                               atol=1e-12)
    with X64():
        y = tnn.GroupNorm(n, groups, dtype=jnp.float64)(jnp.asarray(x * scale + shift))
    np.testing.assert_allclose(np.asarray(y), ref, atol=1e-10)


def _np_standardise(x, axes):
    c = x - x.mean(axis=axes, keepdims=True)
    return c / np.sqrt((c * c).mean(axis=axes, keepdims=True))


def test_small_spread_inputs_are_standardised_not_dropped():
    """Only an exactly constant input has zero variance: a spread that is small against
    the mean (a large offset), and every bfloat16 input, must be standardised as eq 43 /
    eq 44 / eqs 46–47 say, not mapped to β. References: NumPy float64 on the rounded
    inputs."""
    r = rng(31)
    x = jnp.asarray(r.normal(size=64), jnp.bfloat16)
    ref = _np_standardise(np.asarray(x, np.float64), -1)
    np.testing.assert_allclose(np.asarray(tnn.LayerNorm(64)(x), np.float64), ref, atol=0.03)
    x = jnp.asarray(100 + 0.01 * r.normal(size=1024), jnp.float32)
    ref = _np_standardise(np.asarray(x, np.float64), -1)
    np.testing.assert_allclose(tnn.LayerNorm(1024)(x), ref, atol=5e-3)
    x = jnp.asarray(50 + 0.01 * r.normal(size=(64, 64, 4)), jnp.float32)
    ref = _np_standardise(np.asarray(x, np.float64), (0, 1))
    np.testing.assert_allclose(tnn.InstanceNorm(4)(x), ref, atol=5e-3)
    xb = jnp.asarray(1000 + r.normal(size=(256, 64)), jnp.float32)
    ref = np_chi(np.asarray(xb, np.float64), 1.0, 0.0, 0.0)
    model, state = eqx.nn.make_with_state(tnn.ChiNorm)(64, eps=0.0)
    np.testing.assert_allclose(_batched(model, xb, state)[0], ref, atol=2e-3)
    np.testing.assert_allclose(tf.chi_norm(xb, 1.0, 0.0), ref, atol=2e-3)
    xb = jnp.asarray(1e4 + r.normal(size=(4096, 4)), jnp.float32)
    ref = _np_standardise(np.asarray(xb, np.float64), 0)
    model, state = eqx.nn.make_with_state(tnn.BatchNorm)(4, eps=0.0)
    np.testing.assert_allclose(_batched(model, xb, state)[0], ref, atol=0.02)
    np.testing.assert_allclose(tf.batch_norm(xb, 1.0, 0.0), ref, atol=0.02)


def test_half_precision_subnormal_and_zero_inputs_are_finite_and_correct():
    """float16 subnormals (and ε = 1e-5, itself subnormal in float16) are normal numbers in
    the float32 computation: the direction of a subnormal input is kept, and the gradient
    at the zero vector is finite."""
    v = np.array([1.0, -2.0, 3.0, 0.5, -1.5, 2.5, -0.5, 1.0])
    x = jnp.asarray(v * 1.2e-7, jnp.float16)          # subnormal in float16
    xv = np.asarray(x, np.float64)
    np.testing.assert_allclose(np.asarray(tf.unit_vector(x), np.float64), np_unit(xv),
                               atol=2e-3)
    np.testing.assert_allclose(np.asarray(tnn.LayerNorm(8)(x), np.float64),
                               _np_standardise(xv, -1), atol=1e-2)
    np.testing.assert_allclose(np.asarray(tnn.RMSNorm(8)(x), np.float64),
                               xv / np.sqrt((xv * xv).mean()), atol=1e-2)
    for m in (tnn.LayerNorm(8), tnn.RMSNorm(8), tnn.RMSNorm(8, eps=1e-5),
              tnn.SimpleIsotropicLayerNorm(8), tnn.LayerNorm(8, eps=1e-5)):
        for u in (x, jnp.zeros(8, jnp.float16)):
            y = m(u)
            g = jax.grad(lambda w: jnp.sum(m(w).astype(jnp.float32) ** 2))(u)
            assert y.dtype == jnp.float16
            assert jnp.all(jnp.isfinite(y)) and jnp.all(jnp.isfinite(g)), m
    for cls in (tnn.ChiNorm, tnn.BatchNorm, tnn.MagnitudeEMANorm):
        model, state = eqx.nn.make_with_state(cls)(8, eps=0.0)
        xb = jnp.stack([x, -x, 2 * x])
        y, state = _batched(model, xb, state)
        assert y.dtype == jnp.float16 and jnp.all(jnp.isfinite(y)), cls
        assert float(jnp.max(jnp.abs(y.astype(jnp.float32)))) > 0.1, cls



@pytest.mark.parametrize("normalisation", ["unit", "tanh"])
def test_isotropic_layer_norm_computes_half_precision_in_float32(normalisation):
    """The bottleneck's W_in x overflows float16 for entries of a few ten thousand (and
    its normalisation then gives NaN): it is computed in float32, so the output is the
    float64 evaluation of W_out σ(W_in x) + b rounded to float16."""
    m = tnn.IsotropicLayerNorm(8, normalisation=normalisation, key=jax.random.key(0))
    x = jnp.asarray(6e4 * np.array([1.0, -1.0, 0.5, 1.0, -0.75, 1.0, -1.0, 0.25]),
                    jnp.float16)
    y = m(x)
    assert y.dtype == jnp.float16
    w_in, w_out = np.asarray(m.w_in, np.float64), np.asarray(m.w_out, np.float64)
    h = w_in @ np.asarray(x, np.float64)
    r = np.linalg.norm(h)
    h = h / r if normalisation == "unit" else np.tanh(r) * h / r
    ref = w_out @ h + np.asarray(m.bias, np.float64)
    np.testing.assert_allclose(np.asarray(y, np.float64), ref, rtol=2e-3, atol=2e-3)

@pytest.mark.parametrize("normalisation", ["unit", "tanh"])
def test_isotropic_layer_norm_at_the_ends_of_float32(normalisation):
    """Rows from 1e-30 to 3e38 in float32: W_in x is formed from x scaled by a power of
    two, so neither its partial sums overflow (NaN before at 3e38) nor its products
    underflow (and the tanh form caps ‖W_in x‖ where tanh is 1); values match the
    float64 formula and gradients are finite."""
    m = tnn.IsotropicLayerNorm(8, normalisation=normalisation, key=jax.random.key(2))
    w_in, w_out = np.asarray(m.w_in, np.float64), np.asarray(m.w_out, np.float64)
    u = np.sign(w_in[0]) * rng(11).uniform(0.9, 1, size=(8,))  # (W_in x)_0 > max at 3e38
    for scale in (1e-30, 1.0, 1e20, 3e38):
        x64 = np.asarray(jnp.asarray(scale * u, jnp.float32), np.float64)
        h = w_in @ x64
        r = np.linalg.norm(h)
        h = h / r if normalisation == "unit" else np.tanh(r) * h / r
        ref = w_out @ h + np.asarray(m.bias, np.float64)
        x = jnp.asarray(x64, jnp.float32)
        np.testing.assert_allclose(np.asarray(m(x), np.float64), ref, rtol=1e-5, atol=1e-6)
        assert np.isfinite(np.asarray(jax.grad(lambda v: jnp.sum(m(v)))(x))).all()


def _batch_maps(dtype):
    """The batch normalisers as maps of a batch (b, n), with parameters in `dtype`."""
    one, zero = jnp.ones((), dtype), jnp.zeros(4, dtype)
    maps = {"chi_norm": lambda x: tf.chi_norm(x, one, zero, 0.0),
            "batch_norm": lambda x: tf.batch_norm(x, one, zero, 0.0)}
    for cls in (tnn.ChiNorm, tnn.BatchNorm):
        model, state = eqx.nn.make_with_state(cls)(4, eps=0.0, dtype=dtype)
        maps[cls.__name__] = lambda x, m=model, s=state: _batched(m, x, s)[0]
    return maps


@pytest.mark.parametrize("scale", [1e-6, 1.2e-7])
def test_half_precision_gradients_overflow_to_inf_not_nan(scale):
    """For a float16 batch of subnormal size the true gradient (~1/scale) exceeds float16's
    range. It must round as the float32 gradient does (±inf where that is beyond 65504,
    equal to float16 rounding elsewhere), not be NaN from adding the overflowed paths
    through x and through the batch statistics."""
    x16 = jnp.asarray(rng(40).normal(size=(8, 4)) * scale, jnp.float16)
    x32 = x16.astype(jnp.float32)
    maps16, maps32 = _batch_maps(jnp.float16), _batch_maps(jnp.float32)
    for name in maps16:
        g16 = jax.grad(lambda x: jnp.sum(jnp.sin(maps16[name](x).astype(jnp.float32))))(x16)
        g32 = jax.grad(lambda x: jnp.sum(jnp.sin(maps32[name](x))))(x32)
        g16, g32 = np.asarray(g16, np.float64), np.asarray(g32, np.float64)
        assert not np.any(np.isnan(g16)), name
        big = np.abs(g32) > 65504 * 1.001
        assert np.all(np.isinf(g16[big])) and np.all(np.sign(g16[big]) == np.sign(g32[big])), name
        small = np.abs(g32) < 65504 * 0.999
        np.testing.assert_allclose(g16[small], g32[small], rtol=2e-2,
                                   atol=2e-2 * np.abs(g32).max(), err_msg=name)


@pytest.mark.parametrize("call", [
    lambda x: tf.layer_norm(x, 1.0, 0.0, -1.0),
    lambda x: tf.layer_norm(x, 1.0, 0.0, float("nan")),
    lambda x: tf.centred_standardise(x, float("inf")),
    lambda x: tf.rms_norm(x, 1.0, -1e-3),
    lambda x: tf.group_norm(x, 1.0, 0.0, 2, -1.0),
    lambda x: tf.instance_norm(x, 1.0, 0.0, -1.0),
    lambda x: tf.batch_norm(x, 1.0, 0.0, -1.0),
    lambda x: tf.chi_norm(x, 1.0, 0.0, -1.0),
    lambda x: tf.magnitude_normalise(x, jnp.ones(()), 1.0, 0.0, -1.0),
])
def test_functional_eps_is_validated(call, library_checks_only):
    """A negative or non-finite ε would make the denominator vanish (the output silently
    becomes β); the pure functions reject it like the modules do."""
    x = jnp.asarray(rng(32).normal(size=(4, 8)), jnp.float32)
    with pytest.raises(ValueError, match="`eps`"):
        call(x)


def test_batch_norm_needs_a_batch_axis():
    # (under the test suite's runtime annotation checks the annotation rejects it first)
    with pytest.raises((ValueError, TypeError), match=r"\(b, \*spatial, n\)|b \*s n"):
        tf.batch_norm(jnp.ones(8), 1.0, 0.0)


@pytest.mark.parametrize("make", [
    lambda i, f: tnn.LayerNorm(i(6), eps=f(1e-5)),
    lambda i, f: tnn.RMSNorm(i(6), eps=f(1e-5)),
    lambda i, f: tnn.GroupNorm(i(6), i(3), eps=f(1e-5)),
    lambda i, f: tnn.InstanceNorm(i(6), eps=f(1e-5)),
    lambda i, f: tnn.SimpleIsotropicLayerNorm(i(6)),
    lambda i, f: tnn.ChiNorm(i(6), eps=f(1e-5), momentum=f(0.9)),
    lambda i, f: tnn.BatchNorm(i(6), eps=f(1e-5), momentum=f(0.9)),
], ids=["LayerNorm", "RMSNorm", "GroupNorm", "InstanceNorm", "SimpleIsotropicLayerNorm",
        "ChiNorm", "BatchNorm"])
def test_numpy_scalar_hyperparameters_are_numbers(make):
    """NumPy integers and floats (e.g. read from a config array) build the same module as
    Python numbers."""
    a, b = make(int, float), make(np.int64, np.float32)
    assert a.n == b.n and type(b.n) is int
    for field in ("eps", "momentum", "groups"):
        if hasattr(a, field):
            assert getattr(b, field) == pytest.approx(getattr(a, field), rel=1e-6)


@pytest.mark.parametrize("x, error, match", [
    (jnp.ones(4), ValueError, r"`x` must be a batch of shape \(b, n\), got shape \(4,\)"),
    (jnp.ones((2, 3), bool), TypeError, r"`x` must be a real floating array"),
    (jnp.ones((2, 3), jnp.complex64), TypeError, r"`x` must be a real floating array"),
])
def test_batch_statistics_name_a_bad_batch(x, error, match, library_checks_only):
    """A boolean batch would be averaged as 0/1 and a complex one lose its imaginary
    part silently; a single example has no batch axis."""
    from taxdl.nn.normalisers._functional import batch_statistics
    for f, who in ((tf.chi_statistics, "chi_statistics"), (batch_statistics, "batch_statistics")):
        with pytest.raises(error, match=f"{who}: {match}"):
            f(x)


@pytest.mark.parametrize("name,call", [
    ("unit_vector", lambda x: tf.unit_vector(x)),
    ("layer_norm", lambda x: tf.layer_norm(x, 2.0, 0.5, 1e-3)),
    ("rms_norm", lambda x: tf.rms_norm(x, 2.0, 1e-3)),
    ("group_norm", lambda x: tf.group_norm(x, 2.0, 0.5, 1)),
    ("instance_norm", lambda x: tf.instance_norm(x, 2.0, 0.5)),
    ("batch_norm", lambda x: tf.batch_norm(x, 2.0, 0.5)),
    ("chi_norm", lambda x: tf.chi_norm(x, 2.0, 0.5)),
])
def test_empty_feature_axes_and_batches_give_empty_outputs(name, call):
    """No features (shape (2, 0)) or no rows (shape (0, 3)): nothing to normalise, so the
    output is empty of the input's shape and dtype (ℝ⁰ holds only the zero vector), and so
    is the gradient; reductions over an empty axis would have no identity."""
    for shape in ((2, 0), (0, 3)):
        for dtype in (jnp.float32, jnp.bfloat16):
            x = jnp.zeros(shape, dtype)
            y = call(x)
            assert y.shape == shape and y.dtype == dtype, (name, shape, dtype)
        g = jax.grad(lambda x: jnp.sum(call(x)))(jnp.zeros(shape))
        assert g.shape == shape


def test_statistics_of_no_rows_are_refused_and_of_no_features_are_empty(library_checks_only):
    from taxdl.nn.normalisers._functional import batch_statistics
    for f, who in ((tf.chi_statistics, "chi_statistics"), (batch_statistics, "batch_statistics")):
        with pytest.raises(ValueError, match=f"{who}: `x` must hold at least one row"):
            f(jnp.zeros((0, 3)))
    mean, rms = tf.chi_statistics(jnp.ones((4, 0)))
    assert mean.shape == (0,) and float(rms) == 0.0
    mean, std = batch_statistics(jnp.ones((4, 0)))
    assert mean.shape == std.shape == (0,)


@pytest.mark.parametrize("call,who", [
    (lambda: tf.chi_norm(jnp.ones((2, 3)), 1.0, 0.0, eps=-1.0), "chi_norm"),
    (lambda: tf.layer_norm(jnp.ones(3), 1.0, 0.0, eps=-1.0), "layer_norm"),
    (lambda: tf.group_norm(jnp.ones((2, 4)), 1.0, 0.0, 3), "group_norm"),
])
def test_errors_name_the_function_called(call, who, library_checks_only):
    with pytest.raises(ValueError, match=f"^{who}: `(eps|groups)`"):
        call()


def test_batch_apply_refuses_integer_inputs(library_checks_only):
    """An integer batch would come back truncated to integers."""
    from taxdl.nn.normalisers._functional import batch_apply
    with pytest.raises(TypeError, match="batch_apply: `x` must be a real floating"):
        batch_apply(jnp.array([[1, 2, 3], [4, 5, 6]]), jnp.ones(3), jnp.ones(3), 1.0, 0.0)


def test_isotropic_layer_norm_refuses_integer_inputs(library_checks_only):
    """Computed in float32 and cast back to x's dtype, an integer x would come back
    truncated: refused by name instead."""
    w = jnp.ones((2, 3))
    with pytest.raises(TypeError, match="isotropic_layer_norm: `x` must be a real floating"):
        tf.isotropic_layer_norm(jnp.arange(3), w, w.T, jnp.zeros(3))


def test_chi_statistics_of_a_half_precision_batch_do_not_overflow():
    """ρ = √(E‖x − μ‖²) of a float16 batch with entries ±60000 in 64 channels is
    60000·8 = 480000 (closed form: every centred row is ±60000 per channel), beyond
    float16's 65504: the statistics come back in float32."""
    x = np.where(np.arange(64) % 2 == 0, 60000.0, -60000.0)[None] * np.array([[1.0], [-1.0]])
    mu, rho = tnn.functional.chi_statistics(jnp.asarray(x, jnp.float16))
    assert rho.dtype == jnp.float32 and mu.dtype == jnp.float32
    np.testing.assert_allclose(float(rho), 60000.0 * 8, rtol=1e-3)
    np.testing.assert_allclose(np.asarray(mu), 0.0, atol=1e-3)


_EPS_NORMS = {
    "LayerNorm": (lambda: tnn.LayerNorm(4, eps=1e-2), "centred"),
    "ScalarLayerNorm": (lambda: tnn.ScalarLayerNorm(4, eps=1e-2), "centred"),
    "GroupNorm": (lambda: tnn.GroupNorm(4, 1, eps=1e-2), "centred"),
    "layer_norm": (lambda: (lambda x: tf.layer_norm(x, 1.0, 0.0, 1e-2)), "centred"),
    "RMSNorm": (lambda: tnn.RMSNorm(4, eps=1e-2), "rms"),
}


def _np_eps_norm(x, kind, eps=1e-2):
    if kind == "rms":
        return x / np.sqrt(eps + np.mean(x * x))
    return np_layer_norm(x, 1.0, 0.0, eps)


@pytest.mark.parametrize("name", list(_EPS_NORMS))
def test_eps_gradients_at_constant_and_tiny_inputs(name):
    """With ε > 0 the map is smooth everywhere: at a constant input the Jacobian of the
    centred forms is (I − J/n)/√ε (it was 0), and at inputs of size 1e-22 in float32,
    where ε/max|x|² overflowed, values and gradients match the float64 formula."""
    make, kind = _EPS_NORMS[name]
    m = make()
    w = np.arange(1.0, 5.0)
    # RMSNorm: at 0 the Jacobian is I/√ε (a nonzero constant is an ordinary point)
    for x in (np.full(4, 2.0), np.zeros(4)) if kind == "centred" else (np.zeros(4),):
        g = np.asarray(jax.grad(lambda v: jnp.sum(jnp.asarray(w, jnp.float32) * m(v)))(
            jnp.asarray(x, jnp.float32)))
        want = (w - w.mean()) / 0.1 if kind == "centred" else w / 0.1
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-4)
    x = 1e-22 * np.array([0.3, -1.2, 2.0, 0.7])
    x32 = np.asarray(x, np.float32).astype(np.float64)
    y = np.asarray(m(jnp.asarray(x32, jnp.float32)), np.float64)
    np.testing.assert_allclose(y, _np_eps_norm(x32, kind), rtol=1e-5, atol=0)
    g = np.asarray(jax.grad(lambda v: jnp.sum(jnp.asarray(w, jnp.float32) * m(v)))(
        jnp.asarray(x32, jnp.float32)), np.float64)
    h = 1e-28
    fd = np.array([(np.sum(w * _np_eps_norm(x32 + h * e, kind))
                    - np.sum(w * _np_eps_norm(x32 - h * e, kind))) / (2 * h) for e in np.eye(4)])
    np.testing.assert_allclose(g, fd, rtol=1e-4)


def _np_rms_hvp(x, w, v, eps):
    """Closed-form Hessian-vector product of $x \\mapsto w \\cdot x ρ$,
    $ρ = (\\overline{x^2} + ε)^{-1/2}$ (float64): with $p = w\\cdot x$,
    $Hv = -\\tfrac{ρ^3}{n}[(x\\cdot v)w + (w\\cdot v)x + p\\,v]
    + \\tfrac{3ρ^5}{n^2}p(x\\cdot v)x$."""
    n = x.size
    rho = 1 / np.sqrt(np.mean(x * x) + eps)
    p = w @ x
    return (-rho ** 3 / n * ((x @ v) * w + (w @ v) * x + p * v)
            + 3 * rho ** 5 / n ** 2 * p * (x @ v) * x)


def _np_centred_hvp(x, w, v, eps):
    """The same for the centred form $w \\cdot g(Px)$, $P = I - \\tfrac1n J$: $P H_g(Px) P v$."""
    centre = lambda a: a - a.mean()  # noqa: E731
    return centre(_np_rms_hvp(centre(x), w, centre(v), eps))


@pytest.mark.parametrize("eps,scale", [(1e-5, 1e-16), (1e-5, 1e-21), (1e-5, 1e-22),
                                       (1e-5, 1e-30), (1e-12, 1e-24)])
def test_eps_hessian_vector_products_at_inputs_far_below_sqrt_eps(eps, scale):
    """Float32 inputs far below √ε: the HVP (of size ~scale/ε^{3/2}, a normal number)
    matches the float64 closed form. Scaled by max|x| alone, e = √ε/m was huge and the ρ³
    of the second derivative underflowed (relative errors 0.4 to 1); scaled near √ε, the
    mean square s is ~1e-36 there, where √s must not be differentiated (its own second
    derivative overflows: NaN at 1e-21 with ε = 1e-5)."""
    r = rng(33)
    n = 5
    x = np.asarray(scale * r.normal(size=(4, n)), np.float32).astype(np.float64)
    w, v = r.normal(size=(4, n)), r.normal(size=(4, n))

    def hvp(f):
        g = jax.grad(lambda a: jnp.sum(jnp.asarray(w, jnp.float32) * f(a)))
        out = jax.jvp(g, (jnp.asarray(x, jnp.float32),), (jnp.asarray(v, jnp.float32),))[1]
        return np.asarray(out, np.float64)

    bn, state = eqx.nn.make_with_state(tnn.BatchNorm)(n, eps=eps)
    cases = {
        "rms_norm": (lambda a: tf.rms_norm(a, 1.0, eps),
                     np.stack([_np_rms_hvp(x[i], w[i], v[i], eps) for i in range(4)])),
        "layer_norm": (lambda a: tf.layer_norm(a, 1.0, 0.0, eps),
                       np.stack([_np_centred_hvp(x[i], w[i], v[i], eps) for i in range(4)])),
        "batch_norm": (lambda a: tf.batch_norm(a, 1.0, 0.0, eps),
                       np.stack([_np_centred_hvp(x[:, j], w[:, j], v[:, j], eps)
                                 for j in range(n)], 1)),
    }
    cases["BatchNorm"] = (lambda a: _batched(bn, a, state)[0], cases["batch_norm"][1])
    for name, (f, want) in cases.items():
        got = hvp(f)
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err < 1e-5, (name, err)


def test_inverse_root_second_derivative_where_the_mean_square_vanishes():
    """1/√(s + e²) with e = 1: its second derivative in s is ¾(s + 1)^{-5/2}, also at s = 0
    and at s ~ 1e-36 (float32), in forward-over-reverse and reverse-over-reverse mode."""
    from taxdl.nn.normalisers._functional import _inverse_root

    f = lambda s: _inverse_root(s, jnp.float32(1.0))  # noqa: E731
    for s in (0.0, 1e-36, 1e-30, 0.5):
        want = 0.75 * (s + 1) ** -2.5
        for second in (jax.jacfwd(jax.grad(f)), jax.grad(jax.grad(f))):
            assert float(second(jnp.float32(s))) == pytest.approx(want, rel=1e-6)


def test_no_spread_at_a_large_magnitude_has_zero_second_derivatives():
    """Features constant over the batch at 1e10 with ε = 1e-5: y = k c/√(E c² + ε) is odd
    in the centred values c, which are 0, so every Hessian-vector product is exactly 0
    (in both modes), for the functions and the modules, not NaN (the ε-dominated form's
    second derivative, ~e⁻⁵ with e = √ε/1e10, overflows and met the zero c)."""
    r = rng(34)
    n, eps = 6, 1e-5
    x = jnp.asarray(np.tile(r.normal(size=(1, n)), (4, 1)) * 1e10, jnp.float32)
    w, v = (jnp.asarray(r.normal(size=(4, n)), jnp.float32) for _ in range(2))
    chi, chi_state = eqx.nn.make_with_state(tnn.ChiNorm)(n, eps=eps)
    bn, bn_state = eqx.nn.make_with_state(tnn.BatchNorm)(n, eps=eps)
    maps = {"chi_norm": lambda a: tf.chi_norm(a, 1.0, 0.0, eps),
            "batch_norm": lambda a: tf.batch_norm(a, 1.0, 0.0, eps),
            "ChiNorm": lambda a: _batched(chi, a, chi_state)[0],
            "BatchNorm": lambda a: _batched(bn, a, bn_state)[0]}
    for name, f in maps.items():
        g = jax.grad(lambda a: jnp.sum(w * f(a)))
        forward = jax.jvp(g, (x,), (v,))[1]
        reverse = jax.grad(lambda a: jnp.sum(g(a) * v))(x)
        for hvp in (forward, reverse):
            np.testing.assert_array_equal(np.asarray(hvp), 0, err_msg=name)


def test_half_precision_running_statistics_do_not_overflow():
    """A float16 ChiNorm's running RMS magnitude of inputs of size 5e3 (√256·5e3 = 8e4 >
    65504) is kept in float32, so inference does not divide by an infinite scale."""
    m = tnn.ChiNorm(256, dtype=jnp.float16, momentum=0.0)
    state = eqx.nn.State(m)
    xb = jnp.asarray(5e3 * rng(21).normal(size=(16, 256)), jnp.float16)
    _, state = jax.vmap(m, in_axes=(0, None), out_axes=(0, None), axis_name="batch")(xb, state)
    mean, rms = m.statistics(state)
    assert np.isfinite(float(rms)) and float(rms) > 65504
    y, _ = eqx.nn.inference_mode(m)(xb[0], state)
    assert y.dtype == jnp.float16
    want = np_chi(np.asarray(xb, np.float64), 1.0, 0.0, 1e-5)[0]
    np.testing.assert_allclose(np.asarray(y, np.float64), want, rtol=2e-2, atol=2e-2)


def test_numpy_integers_bind_sizes():
    """Sizes read from NumPy arrays are integers like any other."""
    m = tnn.IsotropicLayerNorm(np.int64(4), np.int64(2), key=jax.random.key(0))
    assert (m.n, m.bottleneck) == (4, 2) and m.w_in.shape == (2, 4)
    assert tf.chi_mean(np.int64(3)) == tf.chi_mean(3)
    assert math.isclose(tf.chi_mean(3), 2 * math.sqrt(2 / math.pi))  # closed form, χ₃


class _GroupNormWithoutSigns(tnn.GroupNorm):
    """GroupNorm with ε > 0 declaring closure R as a shift per group only (no signs)."""

    @property
    def taxonomy(self):
        t = tnn.GroupNorm(self.n, self.groups, self.eps).taxonomy
        shifts = taxdl.groups.BlockScaleShift(self.n, self.n // self.groups, scales=False)
        return taxdl.taxonomy.Taxonomy(closure=(t.closure.L, shifts, t.closure.E),
                                       probabilistic=t.probabilistic,
                                       algebraic=t.algebraic)


def test_grouped_norms_with_eps_keep_a_sign_per_group_in_closure_r():
    """With ε > 0 the standardisation is still odd in each group (each channel for
    InstanceNorm), so γ absorbs a sign per group on top of the shift per group the
    statistics remove: closure R is (±1,+λ1)^G, per channel (±1)ⁿ⋉ℝⁿ. NumPy float64
    identity; the cells' supergroups are a scale per group, finer blocks and E(n), and the
    checker reports the shifts alone as possibly not maximal, the signs being the
    witness."""
    from taxdl.testing import SymmetryViolation, assert_maximal

    G = taxdl.groups
    r = rng(41)
    x = 0.05 * r.normal(size=(5, 8))   # variance ~ ε: ε matters
    gamma, beta = r.normal(size=8), r.normal(size=8)
    for groups, c in ((2, 4), (8, 1)):
        d = np.repeat(r.choice([-1.0, 1.0], groups), c)
        d[:c] = -1.0
        t = np.repeat(r.normal(size=groups), c)
        np.testing.assert_allclose(np_group_norm(x * d + t, gamma, beta, groups, 1e-3),
                                   np_group_norm(x, gamma * d, beta, groups, 1e-3),
                                   rtol=1e-10, atol=1e-12)
        # a scale per group is not absorbed with ε > 0
        assert not np.allclose(np_group_norm(3 * x, gamma, beta, groups, 1e-3),
                               np_group_norm(x, gamma, beta, groups, 1e-3), atol=1e-3)
    group_norm, instance_norm = tnn.GroupNorm(8, 2, eps=1e-3), tnn.InstanceNorm(8, eps=1e-3)
    assert G.same_group(group_norm.taxonomy.cell("closure", "R").group,
                        G.BlockScaleShift(8, 4, scales=False, signs=True))
    assert group_norm.taxonomy.cell("closure", "R").name == "(±1,+λ1)^2"
    assert instance_norm.taxonomy.cell("closure", "R").name == "(±1)^8⋉ℝ^8"
    # the supergroups the checker fits a witness under (the full check of both cells,
    # fit_closure included, is their row in the conformance table)
    for m, sups in ((group_norm, {"(ℝ×,+λ1)^2", "(±1,+λ1)^4"}),
                    (instance_norm, {"(ℝ×)^8⋉ℝ^8", "E(8)"})):
        cell = m.taxonomy.cell("closure", "R").group.on(8)
        assert {g.name for g in G.immediate_supergroups(cell)} == sups
    weaker = _GroupNormWithoutSigns(8, 2, eps=1e-3)
    shifts = weaker.taxonomy.cell("closure", "R").group
    with pytest.raises(SymmetryViolation, match="may not be maximal") as info:
        assert_maximal(weaker, shifts, "R", generation="closure", examples=8,
                       fit_closure=True)
    cell = info.value.cell
    assert cell.status == "not maximal"
    assert {m.group for m in cell.maximality if m.found is False} == {"(±1,+λ1)^2"}



def test_layer_norm_derivatives_near_the_smallest_normal_number():
    """LayerNorm (ε = 0) and the centred standardisation differentiated at float32 rows
    whose norm is a few times the smallest normal number: forward and reverse mode match
    the float64 Jacobian √n (I − ĉĉᵀ)/‖c‖ (I − J/n) of the centred vector c where its
    entries are representable, and are ±∞ beyond, instead of NaN from an intermediate
    ρ³ of a clamped scale."""
    x = np.array([[1.2e-38, 0, 0, 0, 0, 0], [1.3e-38, -1.5e-38, 2e-38, 1.2e-38, 0, 0],
                  [3e-38, 1.2e-38, 0, -1.9e-38, 0, 2.5e-38], [1.0, -2.0, 0.5, 3.0, 0, 1.0]],
                 np.float32)
    t = rng(21).uniform(-1.5, 1.5, size=x.shape).astype(np.float32)
    n = x.shape[1]
    ones = jnp.ones(n)

    def jac(v):
        centre = np.eye(n) - 1 / n
        c = centre @ v
        r = np.linalg.norm(c)
        u = c / r
        return math.sqrt(n) * (np.eye(n) - np.outer(u, u)) / r @ centre

    for f in (lambda a: tf.layer_norm(a, ones, 0 * ones), tf.centred_standardise):
        jvp = np.asarray(jax.jit(lambda a, v: jax.jvp(f, (a,), (v,))[1])(x, t))
        vjp = np.asarray(jax.jit(lambda a, v: jax.vjp(f, a)[1](v)[0])(x, t))
        assert not np.isnan(jvp).any() and not np.isnan(vjp).any()
        for i, row in enumerate(x.astype(np.float64)):
            j = jac(row)
            for got, want in ((jvp[i], j @ t[i]), (vjp[i], j.T @ t[i])):
                # entries beyond float32's range may be ±∞; the others must be right
                fits = np.abs(want) < 1e38
                scale = np.abs(want[fits]).max()
                np.testing.assert_allclose(got[fits] / scale, want[fits] / scale, atol=2e-6)
                assert np.all(np.abs(got[~fits]) > 1e37)


def test_magnitude_normalise_refuses_a_negative_concrete_statistic(library_checks_only):
    """A magnitude statistic is ≥ 0: a concrete negative one is refused by name instead
    of silently giving β. Traced (under jit) it cannot be checked without a host sync, so
    the jitted function still runs, and a valid statistic gives γx/(s + ε) + β."""
    x = jnp.asarray([3.0, -1.0, 2.0])
    with pytest.raises(ValueError, match="^magnitude_normalise: `scale` must be >= 0"):
        tf.magnitude_normalise(x, jnp.asarray(-1.0), 1.0, 0.0)
    with pytest.raises(ValueError, match="^magnitude_normalise: `scale`"):
        tf.magnitude_normalise(x, -0.5, 1.0, 0.0)
    f = jax.jit(lambda s: tf.magnitude_normalise(x, s, 2.0, 0.5, 0.25))
    np.testing.assert_allclose(f(jnp.asarray(4.0)), 2.0 * np.asarray(x) / 4.25 + 0.5,
                               rtol=1e-6)
    assert np.all(np.isfinite(np.asarray(f(jnp.asarray(-1.0)))))


def test_statistics_may_be_numbers():
    # the statistics are scalars or per-feature vectors, Python numbers included
    # (float64 NumPy references of γ x/(s + ε) + β and of γ √n/E_χn (x − μ)/√(s² + ε) + β)
    x = np.asarray([[3.0, 4.0], [-1.0, 0.5]])
    xs = jnp.asarray(x, jnp.float32)
    np.testing.assert_allclose(tf.magnitude_normalise(xs, 2.5, 2.0, 0.5, 0.5),
                               2.0 * x / 3.0 + 0.5, rtol=1e-6)
    chi = math.sqrt(2) * math.gamma(1.5) / math.gamma(1.0)
    for mean in (0.25, jnp.asarray(0.25)):
        np.testing.assert_allclose(tf.chi_apply(xs, mean, 5.0, 1.0, 0.0, 11.0),
                                   math.sqrt(2) / chi * (x - 0.25) / 6.0, rtol=1e-6)


_X34 = jnp.asarray(rng(40).normal(size=(3, 4)), jnp.float32)
_BAD_PARAMETERS = [
    ("layer_norm", "gamma", lambda: tf.layer_norm(_X34, jnp.ones(3), 0.0)),
    ("layer_norm", "beta", lambda: tf.layer_norm(_X34, 1.0, jnp.zeros((2, 4)))),
    ("rms_norm", "gamma", lambda: tf.rms_norm(_X34, jnp.ones(5))),
    ("group_norm", "gamma", lambda: tf.group_norm(_X34, jnp.ones(3), 0.0, 2)),
    ("group_norm", "beta", lambda: tf.group_norm(_X34, 1.0, jnp.zeros(2), 2)),
    ("instance_norm", "beta", lambda: tf.instance_norm(_X34, 1.0, jnp.zeros(3))),
    ("batch_norm", "gamma", lambda: tf.batch_norm(_X34, jnp.ones(3), 0.0)),
    ("chi_norm", "beta", lambda: tf.chi_norm(_X34, 1.0, jnp.zeros(3))),
    ("chi_apply", "gamma", lambda: tf.chi_apply(_X34, jnp.zeros(4), jnp.ones(()),
                                                jnp.ones(3), 0.0)),
    ("chi_apply", "mean", lambda: tf.chi_apply(_X34, jnp.zeros(3), jnp.ones(()), 1.0, 0.0)),
    ("magnitude_normalise", "beta",
     lambda: tf.magnitude_normalise(_X34, jnp.ones(()), 1.0, jnp.zeros(5))),
    ("simple_isotropic_layer_norm", "beta",
     lambda: tf.simple_isotropic_layer_norm(jnp.ones(4), 1.0, jnp.ones(3))),
    ("simple_isotropic_layer_norm", "gamma",
     lambda: tf.simple_isotropic_layer_norm(jnp.ones(4), jnp.ones(4), jnp.zeros(4))),
    ("isotropic_layer_norm", "w_in",
     lambda: tf.isotropic_layer_norm(_X34, jnp.ones((2, 3)), jnp.ones((4, 2)), jnp.zeros(4))),
    ("isotropic_layer_norm", "w_out",
     lambda: tf.isotropic_layer_norm(_X34, jnp.ones((2, 4)), jnp.ones((4, 3)), jnp.zeros(4))),
    ("isotropic_layer_norm", "b_out",
     lambda: tf.isotropic_layer_norm(_X34, jnp.ones((2, 4)), jnp.ones((4, 2)), jnp.zeros(2))),
]


@pytest.mark.parametrize("who,name,call", _BAD_PARAMETERS,
                         ids=[f"{w}-{n}" for w, n, _ in _BAD_PARAMETERS])
def test_functional_normalisers_name_parameters_of_the_wrong_shape(who, name, call,
                                                                   library_checks_only):
    """γ, β (and the statistics and weights) of a shape that does not fit x are refused
    by name, with the expected and the given shape, instead of a broadcasting error deep
    inside; the check is on static shapes, so it also fires under jit."""
    with pytest.raises(ValueError, match=rf"^{who}: `{name}` must .*got shape"):
        call()
    with pytest.raises(ValueError, match=rf"^{who}: `{name}`"):
        jax.jit(call)()


def test_functional_normalisers_take_parameters_that_fit(library_checks_only):
    """Scalars, per-feature vectors and arrays of x's own shape are accepted, and give the
    formula's value (NumPy float64 references)."""
    x = np.asarray(_X34, np.float64)
    g, b = np.linspace(0.5, 2.0, 4), np.linspace(-1.0, 1.0, 4)
    bb = rng(41).normal(size=(3, 4))
    for gamma, beta in ((2.0, 0.5), (g, b), (g, bb)):
        np.testing.assert_allclose(
            tf.layer_norm(_X34, jnp.asarray(gamma, jnp.float32), jnp.asarray(beta, jnp.float32)),
            np_layer_norm(x, gamma, beta), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        tf.simple_isotropic_layer_norm(_X34, jnp.asarray(2.0), jnp.asarray(bb, jnp.float32)),
        2.0 * np_unit(x) + bb, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tf.chi_norm(_X34, 1.5, jnp.asarray(b, jnp.float32)),
                               np_chi(x, 1.5, b, 0.0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cls", [tnn.ChiNorm, tnn.BatchNorm])
def test_the_checked_data_function_is_the_modules_own_training_call(cls):
    """The checker's `data_call`/`as_function` hooks build the map from the batch
    statistics (`statistics_of`, `apply_statistics`); the module's training call computes
    them on its own. Both must be the same map, or the checked declaration says nothing
    about the module users call."""
    from taxdl.taxonomy import data_call

    with jax.enable_x64(True):
        norm, state = eqx.nn.make_with_state(cls)(6, dtype=jnp.float64)
        norm = eqx.tree_at(lambda m: (m.gamma, m.beta), norm,
                           (norm.gamma * 1.5, norm.beta + 0.25))
        key = jax.random.key(3)
        f = data_call(norm, key, (64,))
        # the hook's Gaussian batch, redrawn the same way
        from taxdl.nn.normalisers._stateful import _gaussian_batch

        batch = _gaussian_batch(key, (64,), 6, jnp.float64)
        call = jax.vmap(norm, axis_name=norm.axis_name, in_axes=(0, None),
                        out_axes=(0, None))
        y, _ = call(batch, state)
        np.testing.assert_allclose(np.asarray(y), np.asarray(jax.vmap(f)(batch)),
                                   rtol=1e-12, atol=1e-12)
