"""Optimisers: AdaSGD against eq 52 computed in NumPy, normalised SGD, the primitives'
optax chains, symmetry of the update rules, numerics and errors."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import taxdl
from taxdl import optim

A = {"w": np.array([[1.0, 2.0], [0.5, 3.0]]), "b": np.array([0.2, 1.5, 4.0])}
THETA0 = {"w": np.array([[1.0, -2.0], [0.5, 1.0]]), "b": np.array([3.0, -1.0, 0.25])}


def adasgd_reference(theta, lr, b1, b2, eps, steps):
    """Eq 52 on the quadratic ½ Σ a θ² (gradient a ⊙ θ), flat over the tree, in float64."""
    keys = sorted(theta)
    flat = np.concatenate([theta[k].ravel() for k in keys])
    a = np.concatenate([A[k].ravel() for k in keys])
    d = flat.size
    m, v = np.zeros(d), 0.0
    for t in range(1, steps + 1):
        g = a * flat
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * np.sum(g * g)
        if eps == 0:
            eta_t = lr * np.sqrt((1 - b2**t) / (v / d))   # eq 52 verbatim
            flat = flat - eta_t * m
        else:
            flat = flat - lr * m / (np.sqrt(v / (1 - b2**t) / d) + eps)
    out, i = {}, 0
    for k in keys:
        out[k] = flat[i:i + theta[k].size].reshape(theta[k].shape)
        i += theta[k].size
    return out


@eqx.filter_jit
def _run(tx, params, steps):
    state = tx.init(params)
    for _ in range(steps):
        grads = {k: jnp.asarray(A[k], params[k].dtype) * params[k] for k in params}
        updates, state = tx.update(grads, state, params)
        params = optax.apply_updates(params, updates)
    return params, state


@pytest.mark.parametrize("eps", [0.0, 1e-3])
def test_adasgd_three_steps_on_a_quadratic(eps):
    with jax.enable_x64(True):
        params = {k: jnp.asarray(v) for k, v in THETA0.items()}
        out, state = _run(optim.adasgd(0.1, b1=0.8, b2=0.9, eps=eps), params, 3)
        expected = adasgd_reference(THETA0, 0.1, 0.8, 0.9, eps, 3)
        for k in expected:
            np.testing.assert_allclose(np.asarray(out[k]), expected[k], rtol=1e-13, atol=1e-14)
        assert isinstance(state[0], optim.ScaleByAdaSGDState)
        assert int(state[0].count) == 3 and state[0].nu_root.shape == ()


def test_adasgd_first_step_by_hand():
    # d = 1, θ₀ = 1, g = θ: m₁ = 0.1, v₁ = 0.001, η₁ = 0.1·√(0.001/0.001) = 0.1, θ₁ = 0.99;
    # m₂ = 0.9·0.1 + 0.1·0.99 = 0.189, v₂ = 0.999·0.001 + 0.001·0.9801 = 0.0019791,
    # η₂ = 0.1·√(0.001999/0.0019791), θ₂ = 0.99 − 0.189 η₂.
    with jax.enable_x64(True):
        tx = optim.adasgd(0.1, eps=0.0)
        p = jnp.asarray([1.0])
        s = tx.init(p)
        u, s = tx.update(p, s)
        p = p + u
        np.testing.assert_allclose(np.asarray(p), [0.99], rtol=1e-15)
        u, s = tx.update(p, s)
        p = p + u
    np.testing.assert_allclose(np.asarray(p), [0.99 - 0.189 * 0.1 * np.sqrt(0.001999 / 0.0019791)],
                               rtol=1e-14)


def test_adasgd_with_b2_within_float32_rounding_of_one():
    """β₂ = 1 − 1e-9 is 1.0 in float32: the first step is still eq 52's, −η g/‖g‖·√d
    (with β₁ = 0), not 0."""
    g = jnp.asarray([3.0, 4.0])
    tx = optim.adasgd(0.1, b1=0.0, b2=1 - 1e-9, eps=0.0)
    u, _ = tx.update(g, tx.init(g))
    np.testing.assert_allclose(np.asarray(u), -0.1 * np.array([3.0, 4.0]) / 5 * np.sqrt(2),
                               rtol=1e-4)


def test_adasgd_second_moment_is_global():
    tx = optim.scale_by_adasgd(b1=0.0, b2=0.5, eps=0.0)
    grads = {"a": jnp.asarray([3.0, 4.0]), "b": jnp.asarray([[12.0]])}
    out, state = tx.update(grads, tx.init(grads))
    # one scale for the whole tree: √(v̂/d) = √(169/3)
    scale = 1 / np.sqrt(169 / 3)
    np.testing.assert_allclose(np.asarray(out["a"]), np.array([3.0, 4.0]) * scale, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out["b"]), [[12.0 * scale]], rtol=1e-6)
    np.testing.assert_allclose(float(state.nu_root), np.sqrt(0.5 * 169), rtol=1e-6)


def test_normalised_sgd_matches_numpy():
    rng = np.random.default_rng(0)
    gs = rng.standard_normal((3, 5))
    tx = optim.normalised_sgd(0.2, momentum=0.5, eps=0.0)
    p = jnp.zeros(5)
    s = tx.init(p)
    trace = np.zeros(5)
    for g in gs:
        u, s = tx.update(jnp.asarray(g, jnp.float32), s, p)
        trace = 0.5 * trace + g / np.linalg.norm(g)
        np.testing.assert_allclose(np.asarray(u), -0.2 * trace, rtol=1e-5, atol=1e-7)


def _per_coordinate_reference(name, grads, lr, **h):
    """Eqs 49–51 in float64 NumPy: the updates θ_{t+1} − θ_t for a sequence of gradients."""
    out = []
    if name == "adam":     # eq 51: ε inside the root, bias-corrected moments
        v = s = 0.0
        for t, g in enumerate(grads, 1):
            v = h["b1"] * v + (1 - h["b1"]) * g
            s = h["b2"] * s + (1 - h["b2"]) * g * g
            vt, st = v / (1 - h["b1"] ** t), s / (1 - h["b2"] ** t)
            out.append(-lr * vt / np.sqrt(st + h["eps"]))
    elif name == "adagrad":  # eq 49 with s₀ = 0, the sum including g_t (Duchi et al.)
        s = 0.0
        for g in grads:
            s = s + g * g
            out.append(-lr * g / np.sqrt(s + h["eps"]))
    else:                  # eq 50, Δx accumulating the squared step g′ (Zeiler)
        s = dx = 0.0
        for g in grads:
            s = h["rho"] * s + (1 - h["rho"]) * g * g
            step = np.sqrt(dx + h["eps"]) / np.sqrt(s + h["eps"]) * g
            dx = h["rho"] * dx + (1 - h["rho"]) * step * step
            out.append(-lr * step)
    return np.array(out)


@pytest.mark.parametrize("name, opt, hyper", [
    ("adam", optim.Adam(0.1), dict(b1=0.9, b2=0.999, eps=1e-8)),
    ("adam", optim.Adam(0.1, b1=0.5, b2=0.8, eps_root=0.3), dict(b1=0.5, b2=0.8, eps=0.3)),
    ("adagrad", optim.Adagrad(0.1), dict(eps=1e-7)),
    ("adagrad", optim.Adagrad(0.1, eps=0.5), dict(eps=0.5)),
    ("adadelta", optim.AdaDelta(0.7, rho=0.8, eps=1e-2), dict(rho=0.8, eps=1e-2)),
])
def test_per_coordinate_rules_follow_their_equations(name, opt, hyper):
    """Adam, Adagrad and AdaDelta against eqs 51, 49 and 50 in float64 over five steps
    of gradients spanning 1e-3 to 1e2 (ε placement, s₀ = 0, bias correction)."""
    rng = np.random.default_rng(1)
    grads = rng.normal(size=(5, 6)) * np.logspace(-3, 2, 6)
    lr = float(opt.learning_rate)
    with jax.enable_x64(True):
        tx = opt.as_optax()
        params = jnp.zeros(6)
        state = tx.init(params)
        got = []
        for g in grads:
            u, state = tx.update(jnp.asarray(g), state, params)
            got.append(np.asarray(u))
    np.testing.assert_allclose(np.array(got), _per_coordinate_reference(name, grads, lr, **hyper),
                               rtol=1e-12, atol=1e-15)


OPTIMISERS = [optim.AdaSGD(0.1), optim.AdaSGD(0.1, eps=0.0), optim.NormalisedSGD(0.1, 0.9),
              optim.IsotropicClip(0.5), optim.SGD(0.1, 0.9, nesterov=True), optim.Adam(0.1),
              optim.Adagrad(0.1), optim.AdaDelta(1.0), optim.ElementwiseClip(0.3)]


@eqx.filter_jit
def _updates(opt, grads):
    return taxdl.taxonomy.as_function(opt)(grads, jnp.zeros(grads.shape[-1:], grads.dtype))


def test_primitives_delegate_to_optax_and_keep_dtype():
    grads = jax.random.normal(jax.random.key(0), (4, 6))
    for opt in (optim.NormalisedSGD(0.1, 0.9), optim.Adam(0.1)):
        tx = opt.as_optax()
        p = jnp.zeros(6)
        s1, s2 = opt.init(p), tx.init(p)
        for g in grads:
            u1, s1 = opt.update(g, s1, p)
            u2, s2 = tx.update(g, s2, p)
            np.testing.assert_array_equal(np.asarray(u1), np.asarray(u2))
        np.testing.assert_allclose(np.asarray(_updates(opt, grads)[-1]), np.asarray(u1),
                                   rtol=1e-6, atol=1e-7)
    for opt in OPTIMISERS:
        assert _updates(opt, grads).dtype == jnp.float32


def test_adasgd_class_is_the_factory():
    grads = jax.random.normal(jax.random.key(1), (4, 6))
    a = taxdl.taxonomy.as_function(optim.AdaSGD(0.3, 0.5, 0.7, 1e-4))(grads, jnp.zeros(6))
    tx = optim.adasgd(0.3, 0.5, 0.7, 1e-4)
    s, p = tx.init(jnp.zeros(6)), jnp.zeros(6)
    for t, g in enumerate(grads):
        u, s = tx.update(g, s, p)
        np.testing.assert_allclose(np.asarray(a[t]), np.asarray(u), rtol=1e-6)


def _matrix(kind, rng):
    if kind == "B":
        return np.eye(8)[rng.permutation(8)] * rng.choice([-1.0, 1.0], 8)[:, None]
    q, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    return q if kind == "O" else q @ np.diag(rng.uniform(0.5, 2.0, 8))


def _rotated_gap(opt, kind, key):
    grads = jax.random.normal(key, (4, 8))
    m = jnp.asarray(_matrix(kind, np.random.default_rng(0)), jnp.float32)
    lhs, rhs = _updates(opt, grads @ m.T), _updates(opt, grads) @ m.T
    return float(jnp.max(jnp.abs(lhs - rhs)) / jnp.max(jnp.abs(rhs)))


def test_update_rule_symmetries():
    # (the conformance check covers every optimiser and cell; this is a quick sanity test)
    key = jax.random.key(2)
    assert _rotated_gap(optim.AdaSGD(0.1), "O", key) < 1e-5
    assert _rotated_gap(optim.AdaSGD(0.1), "GL", key) > 1e-2
    assert _rotated_gap(optim.SGD(0.1, 0.9), "GL", key) < 1e-5
    assert _rotated_gap(optim.Adam(0.1), "B", key) < 1e-5
    assert _rotated_gap(optim.Adam(0.1), "O", key) > 1e-2


def test_scale_free_only_without_eps():
    grads = jax.random.normal(jax.random.key(3), (4, 8))
    free, eps = optim.AdaSGD(0.1, eps=0.0), optim.AdaSGD(0.1, eps=0.5)
    np.testing.assert_allclose(np.asarray(_updates(free, 3.0 * grads)),
                               np.asarray(_updates(free, grads)), rtol=1e-5)
    assert not np.allclose(np.asarray(_updates(eps, 3.0 * grads)), np.asarray(_updates(eps, grads)))
    assert free.taxonomy.cell("algebraic", "R").name == "ℝ×₊"
    assert eps.taxonomy.cell("algebraic", "R").name == "I_n"


def test_zero_gradients_are_finite():
    zeros = jnp.zeros((4, 5))
    for opt in OPTIMISERS + [optim.NormalisedSGD(0.1, eps=0.0)]:
        u = _updates(opt, zeros)
        assert np.all(np.isfinite(np.asarray(u))), type(opt).__name__
    np.testing.assert_array_equal(np.asarray(_updates(optim.AdaSGD(0.1, eps=0.0), zeros)), 0)


@pytest.mark.parametrize("make, remembers", [
    (lambda: optim.adasgd(0.1), True), (lambda: optim.adasgd(0.1, eps=0.0), True),
    (lambda: optim.normalised_sgd(0.1), False),
    (lambda: optim.normalised_sgd(0.1, eps=0.0), False),
    (lambda: optim.IsotropicClip(1.0).as_optax(), False),
], ids=["adasgd", "adasgd-eps0", "normalised-sgd", "normalised-sgd-eps0", "isotropic-clip"])
def test_a_nan_gradient_gives_nan_updates_not_silent_zeros(make, remembers):
    """A NaN anywhere in the gradient makes the global norm NaN, so every update is NaN,
    as the formulas (and optax's clipping and Adam) give: it was read as a zero
    denominator (a zero step, and AdaSGD's state stayed NaN, so every later step was
    zero too) or, for clipping, as a norm within the bound (passed unclipped). AdaSGD's
    NaN second moment keeps later updates NaN, as Adam's does."""
    tx = make()
    params = {"a": jnp.zeros(3), "b": jnp.zeros(2)}
    state = tx.init(params)
    bad = {"a": jnp.asarray([1.0, 2.0, 3.0]), "b": jnp.asarray([np.nan, 1.0])}
    updates, state = tx.update(bad, state, params)
    for leaf in jax.tree.leaves(updates):
        assert np.all(np.isnan(np.asarray(leaf)))
    good = {"a": jnp.asarray([1.0, 2.0, 3.0]), "b": jnp.asarray([1.0, 1.0])}
    updates, _ = tx.update(good, state, params)
    finite = [np.all(np.isfinite(np.asarray(leaf))) for leaf in jax.tree.leaves(updates)]
    assert not any(finite) if remembers else all(finite)


def test_chain_schedule_and_no_retrace():
    tx = optax.chain(optim.IsotropicClip(1.0).as_optax(),
                     optim.adasgd(optax.linear_schedule(0.1, 0.0, 10)))
    params = {"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}
    traces = []

    @jax.jit
    def step(params, state):
        traces.append(None)
        grads = jax.tree.map(lambda p: p + 1.0, params)
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    state = tx.init(params)
    for _ in range(3):
        params, state = step(params, state)
    assert len(traces) == 1
    assert all(leaf.dtype == jnp.float32 for leaf in jax.tree.leaves(params))


@pytest.mark.parametrize("make", [lambda: optim.normalised_sgd(0.1),
                                  lambda: optim.IsotropicClip(1.0).as_optax(),
                                  lambda: optim.adasgd(1e-3)],
                         ids=["normalised_sgd", "IsotropicClip", "adasgd"])
def test_updates_outside_jit_are_compiled_once(make, jax_events):
    """An update called outside `jax.jit` traces its global norm once per tree structure,
    shapes and dtype: a second update traces and compiles nothing (the norm's `lax.cond`
    was traced and compiled again at every step, ~0.16 s per normalised-SGD step)."""
    tx = make()
    params = {"w": jnp.ones((4, 3)), "b": jnp.zeros(3)}
    grads = jax.tree.map(lambda p: p + 0.5, params)
    state = tx.init(params)
    first, state = tx.update(grads, state, params)
    with jax_events() as recorded:
        again, _ = tx.update(grads, state, params)
    assert not any("trace" in e or "compile" in e for e in recorded), recorded
    assert jax.tree.structure(again) == jax.tree.structure(first)


def test_errors_name_the_argument(library_checks_only):
    with pytest.raises(ValueError, match=r"`b1` must be a finite number in \[0, 1\)"):
        optim.adasgd(0.1, b1=1.0)
    with pytest.raises(ValueError, match="`eps` must be a finite number >= 0"):
        optim.AdaSGD(0.1, eps=-1.0)
    with pytest.raises(ValueError, match="`learning_rate` must be a finite number"):
        optim.adasgd(-0.1)
    with pytest.raises(ValueError, match="one of `eps` .* and `eps_root` .* must be > 0"):
        optim.Adam(0.1, eps=0.0, eps_root=0.0)
    with pytest.raises(ValueError, match="`eps_root` must be a finite number >= 0"):
        optim.Adam(0.1, eps_root=-1e-8)
    with pytest.raises(TypeError, match="`nesterov` must be True or False"):
        optim.SGD(0.1, 0.9, nesterov="no")
    with pytest.raises(ValueError, match="`max_norm` must be a finite number > 0"):
        optim.IsotropicClip(0.0)
    with pytest.raises(ValueError,
                       match=r"normalised_sgd: `momentum` must be a finite number in \[0, 1\)"):
        optim.normalised_sgd(0.1, momentum=1.5)
    with pytest.raises(ValueError, match="pass the parameter count `n`"):
        taxdl.taxonomy.signature(optim.SGD(0.1), None)
    assert taxdl.taxonomy.signature(optim.SGD(0.1), 8).inputs == ((optim.CHECK_STEPS, 8), (8,))


def test_registered_with_declarations():
    reg = taxdl.registry()
    for name in ("AdaSGD", "NormalisedSGD", "IsotropicClip", "SGD", "Adam", "Adagrad",
                 "AdaDelta", "ElementwiseClip"):
        assert reg[name].family == "optimiser"
    table = {r.name: r.cells() for r in taxdl.table(family="optimiser").rows}
    assert table["AdaSGD"][-1] == "O(n)" and table["Adam"][-1] == "B_n"
    assert table["SGD"][-1] == "GL(n)"


def test_array_hyperparameters_and_inject_hyperparams():
    """NumPy/JAX scalars are accepted (and checked when concrete); traced ones, as
    `optax.inject_hyperparams` passes them, are used as given."""
    grads = {"a": jnp.array([1.0, -2.0, 2.0])}
    plain = optim.adasgd(0.1, b1=0.5)
    injected = optax.inject_hyperparams(optim.adasgd)(learning_rate=0.1, b1=0.5)
    s_plain, s_inj = plain.init(grads), injected.init(grads)
    for _ in range(2):
        u_plain, s_plain = plain.update(grads, s_plain)
        u_inj, s_inj = jax.jit(injected.update)(grads, s_inj)
        # (injected hyperparameters are float32 arrays: 1 − β₂ rounds differently)
        np.testing.assert_allclose(np.asarray(u_inj["a"]), np.asarray(u_plain["a"]), rtol=1e-4)
    nsgd = optax.inject_hyperparams(optim.normalised_sgd)(learning_rate=1.0, momentum=0.5)
    u, _ = jax.jit(nsgd.update)(grads, nsgd.init(grads))
    np.testing.assert_allclose(np.asarray(u["a"]), -np.array([1.0, -2.0, 2.0]) / 3, rtol=1e-6)
    optim.adasgd(jnp.float32(0.1), b1=np.float64(0.5), b2=jnp.float32(0.9))
    with pytest.raises(ValueError, match="`b1` must be a finite number in \\[0, 1\\)"):
        optim.scale_by_adasgd(b1=jnp.float32(1.5))
    with pytest.raises(ValueError, match="`mu_dtype`"):
        optim.scale_by_adasgd(mu_dtype=jnp.int32)


def test_complex_gradients_count_their_moduli():
    g = {"a": jnp.array([1 + 1j, 2 - 1j], jnp.complex64), "b": jnp.array([1.0], jnp.float32)}
    sq = 2 + 5 + 1                                               # Σ|g|², by hand
    tx = optim.normalised_sgd(1.0, eps=0.0)
    with jax.numpy_dtype_promotion("standard"):
        u, _ = tx.update(g, tx.init(g))
        np.testing.assert_allclose(np.asarray(u["a"]), -np.array([1 + 1j, 2 - 1j]) / np.sqrt(sq),
                                   rtol=1e-6)
        _, state = optim.scale_by_adasgd(b2=0.9, eps=0.0).update(g, optim.scale_by_adasgd(
            b2=0.9, eps=0.0).init(g))
    np.testing.assert_allclose(float(state.nu_root), np.sqrt(0.1 * sq), rtol=1e-6)


# ---------------------------------------------------------------- trees and dtypes
ISOTROPIC = [("adasgd", lambda: optim.adasgd(0.1)),
             ("normalised_sgd", lambda: optim.normalised_sgd(0.1, 0.9)),
             ("IsotropicClip", lambda: optim.IsotropicClip(1.0).as_optax())]


@pytest.mark.parametrize("name, make", ISOTROPIC)
def test_integer_leaves_are_rejected_naming_the_leaf(name, make):
    """An integer leaf has no gradient and would change ‖g‖ and d: a clear error, at init
    and at update; `optax.masked` passes such a leaf through untouched."""
    tx = make()
    params = {"w": jnp.ones(3), "n": jnp.arange(3)}
    with pytest.raises(TypeError, match=r"`params` must be a floating or complex array, "
                                        r"got dtype int32 at \['n'\]"):
        tx.init(params)
    state = tx.init({"w": jnp.ones(3), "n": jnp.ones(3)})
    with pytest.raises(TypeError, match=r"`updates` must be .* got dtype int32 at \['n'\]"):
        tx.update(params, state)
    masked = optax.masked(tx, {"w": True, "n": False})
    updates, _ = masked.update(params, masked.init(params), params)
    assert updates["n"].dtype == jnp.int32
    np.testing.assert_array_equal(np.asarray(updates["n"]), [0, 1, 2])


@pytest.mark.parametrize("name, make", ISOTROPIC)
def test_none_leaves_and_empty_trees(name, make):
    tx = make()
    params = {"w": jnp.ones(3), "frozen": None}
    updates, _ = tx.update(params, tx.init(params), params)
    assert updates["frozen"] is None and updates["w"].shape == (3,)
    empty, _ = tx.update({}, tx.init({}), {})
    assert empty == {}


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
def test_half_precision_tiny_gradients_do_not_overflow(dtype):
    """Gradients of size ~1e-5 in float16: 1/‖g‖ exceeds float16's range, the update
    m/‖g‖ does not."""
    g = jnp.full(3, 1e-5, dtype)
    g64 = np.asarray(g, np.float64)
    # AdaSGD, first step (eq 52 with ε added), β₁ = 0: m₁ = g, v̂₁ = ‖g‖²
    tx = optim.adasgd(0.1, b1=0.0, eps=1e-8)
    u, _ = tx.update(g, tx.init(g))
    expected = -0.1 * g64 / (np.sqrt(np.sum(g64 ** 2) / 3) + 1e-8)
    assert u.dtype == dtype
    np.testing.assert_allclose(np.asarray(u, np.float64), expected, rtol=2e-2)
    tx = optim.normalised_sgd(1.0, eps=0.0)
    u, _ = tx.update(g, tx.init(g))
    assert u.dtype == dtype
    np.testing.assert_allclose(np.asarray(u, np.float64), -g64 / np.linalg.norm(g64),
                               rtol=1e-2)


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
def test_per_coordinate_rules_in_half_precision(dtype):
    """Their statistics are kept in float32: in float16, ε = 1e-8 is 0 and g² of a 1e-3
    gradient underflows, so a zero gradient would give 0/0 and a small one ±∞."""
    g = jnp.asarray([0.0, 1e-3, -2.0], dtype)
    g64 = np.asarray(g, np.float64)
    first_steps = {  # first update of eqs 51, 49, 50 (β-corrected moments of one step)
        optim.Adam(0.1): -0.1 * g64 / np.sqrt(g64**2 + 1e-8),
        optim.Adagrad(0.1): -0.1 * g64 / np.sqrt(g64**2 + 1e-7),
        optim.AdaDelta(1.0, rho=0.9, eps=1e-6): -np.sqrt(1e-6) / np.sqrt(0.1 * g64**2 + 1e-6) * g64,
    }
    for opt, expected in first_steps.items():
        tx = opt.as_optax()
        u, state = tx.update(g, tx.init(g), g)
        assert u.dtype == dtype, opt
        np.testing.assert_allclose(np.asarray(u, np.float64), expected, rtol=1e-2, err_msg=str(opt))
        assert all(leaf.dtype != dtype for leaf in jax.tree.leaves(state)
                   if jnp.issubdtype(leaf.dtype, jnp.floating)), opt


def test_isotropic_clip_of_float16_gradients_whose_squares_overflow():
    dtype, value = jnp.float16, 3e4                 # value² > 65504, float16's maximum
    g = {"a": jnp.full(3, value, dtype), "b": jnp.full((1,), -value, dtype)}
    tx = optim.IsotropicClip(2.0)
    u, _ = tx.update(g, tx.init(g))
    # ‖g‖ = 2·value > 2: every entry scaled by 2/‖g‖ = 1/value → ±1
    for leaf, sign in ((u["a"], 1.0), (u["b"], -1.0)):
        assert leaf.dtype == dtype
        np.testing.assert_allclose(np.asarray(leaf, np.float64), sign, rtol=1e-2)
    small = {"a": jnp.asarray([0.5, -1.0], dtype)}
    u, _ = tx.update(small, tx.init(small))
    np.testing.assert_array_equal(np.asarray(u["a"], np.float64), [0.5, -1.0])  # untouched


@pytest.mark.parametrize("scale", [1e38, 1e25, 1e-25, 1e-35, 1.0])
def test_global_norm_of_huge_and_tiny_float32_gradients(scale):
    """A float32 sum of squares overflows above ‖g‖ ≈ 1.8e19 and underflows to 0 below
    ~1e-19 (so the plain norm would make these updates 0): the normalised update still
    has norm 1, the clipped one norm `max_norm`, and AdaSGD's two steps (ε = 0) are eq
    52's at every scale (float64 references). At 1e38 the norm itself (~4e38) is beyond
    float32's range, and so is AdaSGD's denominator, while the updates are not."""
    rng = np.random.default_rng(0)
    base = {"a": rng.normal(size=(3, 4)), "b": rng.normal(size=(5,))}
    g = {k: jnp.asarray(v * scale, jnp.float32) for k, v in base.items()}
    g64 = {k: np.asarray(v, np.float64) for k, v in g.items()}
    norm = np.sqrt(sum(np.sum(v ** 2) for v in g64.values()))
    assert 0 < norm < np.inf
    nsgd = optim.normalised_sgd(1.0, eps=0.0)
    clip = optim.IsotropicClip(0.5)
    u_n, _ = jax.jit(nsgd.update)(g, nsgd.init(g))
    u_c, _ = jax.jit(clip.update)(g, clip.init(g))
    for k in g:
        np.testing.assert_allclose(np.asarray(u_n[k], np.float64), -g64[k] / norm,
                                   rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(np.asarray(u_c[k], np.float64),
                                   g64[k] * min(1.0, 0.5 / norm), rtol=1e-5,
                                   atol=1e-7 * min(1.0, norm))
    # AdaSGD: g then −g/2, β = (0.9, 0.999), d = 17 entries; eq 52 with η_t from v_t
    ada = optim.adasgd(0.1, eps=0.0)
    state = ada.init(g)
    m, v, d = {k: 0.0 for k in g}, 0.0, 17
    for t, factor in ((1, 1.0), (2, -0.5)):
        gt = jax.tree.map(lambda x: x * jnp.float32(factor), g)
        u_a, state = jax.jit(ada.update)(gt, state)
        m = {k: 0.9 * m[k] + 0.1 * factor * g64[k] for k in g}
        v = 0.999 * v + 0.001 * factor ** 2 * norm ** 2
        eta = 0.1 * np.sqrt((1 - 0.999 ** t) / (v / d))
        for k in g:
            np.testing.assert_allclose(np.asarray(u_a[k], np.float64), -eta * m[k],
                                       rtol=1e-5, atol=1e-7)


def test_vmapped_updates_of_an_ensemble_keep_the_global_norm_branch():
    """Under `jax.vmap` over ensemble members the global norm's `lax.cond` is kept (its
    predicate spans the members; a per-member predicate would evaluate the max-scaled
    rescue at every step), and each member's update is its own, also when one member's
    gradient is tiny enough to send the ensemble down the rescue branch (a float64
    reference for the normalised step of that member)."""
    rng = np.random.default_rng(1)
    g = {"a": jnp.asarray(rng.normal(size=(3, 4, 5)), jnp.float32),
         "b": jnp.asarray(rng.normal(size=(3, 6)), jnp.float32)}
    tiny = jax.tree.map(lambda x: x.at[1].multiply(1e-30), g)
    for opt in (optim.adasgd(0.1), optim.normalised_sgd(1.0, eps=0.0)):
        step = jax.jit(jax.vmap(lambda g, s: opt.update(g, s)))
        assert "conditional(" in step.lower(g, jax.vmap(opt.init)(g)).compile().as_text()
        for grads in (g, tiny):
            u, _ = step(grads, jax.vmap(opt.init)(grads))
            for i in range(3):
                member = jax.tree.map(lambda x: x[i], grads)
                u_i, _ = jax.jit(opt.update)(member, opt.init(member))
                for k in g:
                    np.testing.assert_allclose(np.asarray(u[k][i]), np.asarray(u_i[k]),
                                               rtol=1e-6, atol=0)
    gi = jax.tree.map(lambda x: np.asarray(x[1], np.float64), tiny)
    norm = np.sqrt(sum(np.sum(v ** 2) for v in jax.tree.leaves(gi)))
    nsgd = optim.normalised_sgd(1.0, eps=0.0)
    u, _ = jax.jit(jax.vmap(nsgd.update))(tiny, jax.vmap(nsgd.init)(tiny))
    for k in g:
        np.testing.assert_allclose(np.asarray(u[k][1], np.float64), -gi[k] / norm, rtol=1e-5)


def test_inject_hyperparams_without_momentum_and_in_half_precision():
    """`optax.inject_hyperparams` builds the chain from concrete arrays in `init` and traced
    ones in a compiled `update`: both must build the same chain, and array
    hyperparameters must not promote float16 state or updates."""
    g = jnp.array([3.0, 4.0])
    nsgd = optax.inject_hyperparams(optim.normalised_sgd)(learning_rate=1.0)
    u, _ = jax.jit(nsgd.update)(g, nsgd.init(g))
    np.testing.assert_allclose(np.asarray(u), [-0.6, -0.8], rtol=1e-6)
    h = g.astype(jnp.float16)
    for factory in (optim.adasgd, optim.normalised_sgd):
        tx = optax.inject_hyperparams(factory)(learning_rate=0.5)
        u, state = jax.jit(tx.update)(h, tx.init(h))
        assert u.dtype == jnp.float16
    # AdaSGD, first step: −η (1 − β₁) g / (√(‖g‖²/d) + ε), ‖g‖² = 25, d = 2
    expected = -0.5 * 0.1 * np.array([3.0, 4.0]) / (np.sqrt(25 / 2) + 1e-8)
    tx = optax.inject_hyperparams(optim.adasgd)(learning_rate=0.5)
    u, state = jax.jit(tx.update)(h, tx.init(h))
    np.testing.assert_allclose(np.asarray(u, np.float64), expected, rtol=2e-3)
    assert state.inner_state[0].mu.dtype == jnp.float16


# ------------------------------------------------- derivatives through a step, leaves
def test_reverse_mode_through_a_step_at_the_zero_gradient_is_finite_and_exact():
    """Differentiating an update with respect to the gradient (hypergradients, unrolled
    meta-learning) at an all-zero gradient: closed forms from the update formulas, where
    the ‖g‖ term multiplies g = 0 (float64)."""
    with jax.enable_x64(True):
        w = jnp.array([1.0, -2.0, 0.5])
        z = jnp.zeros(3)
        wn = np.asarray(w)

        def grad_of(tx, warm=None):
            def f(g):
                state = tx.init(z)
                if warm is not None:
                    _, state = tx.update(warm, state, z)
                return jnp.dot(w, tx.update(g, state, z)[0])
            return np.asarray(jax.grad(f)(z))

        # g/(‖g‖ + ε): Jacobian I/ε at 0, times −η
        np.testing.assert_allclose(grad_of(optim.normalised_sgd(1.0, eps=1e-3)), -wn / 1e-3)
        # a clip is the identity below its threshold
        np.testing.assert_allclose(grad_of(optim.IsotropicClip(1.0)), wn)
        # AdaSGD, first step: m = (1−β₁)g over √(v̂/d) + ε with v̂ = ‖g‖², so −η(1−β₁)/ε
        np.testing.assert_allclose(grad_of(optim.adasgd(0.1, 0.9, 0.999, 1e-3)),
                                   -0.1 * 0.1 / 1e-3 * wn, rtol=1e-12)
        # second step after g₀: v₂ = β₂(1−β₂)‖g₀‖², denominator √(v₂/((1−β₂²)d)) + ε
        g0 = np.array([0.3, -0.1, 0.7])
        v2 = 0.999 * 0.001 * np.sum(g0 ** 2)
        den = np.sqrt(v2 / (1 - 0.999 ** 2) / 3) + 1e-8
        np.testing.assert_allclose(grad_of(optim.adasgd(0.1), warm=jnp.asarray(g0)),
                                   -0.1 * 0.1 / den * wn, rtol=1e-10)


def test_adasgd_takes_python_number_leaves():
    """A scalar hyperparameter kept as a Python float in the parameter tree, as optax's
    own transformations accept: the same update as for a 0-d array leaf."""
    params = {"w": jnp.ones(3), "temperature": 1.0}
    grads = {"w": jnp.array([0.1, -0.2, 0.3]), "temperature": 0.5}
    tx = optim.adasgd(0.1)
    updates, _ = tx.update(grads, tx.init(params), params)
    as_arrays = jax.tree.map(jnp.asarray, grads)
    expected, _ = tx.update(as_arrays, tx.init(jax.tree.map(jnp.asarray, params)))
    for key in ("w", "temperature"):
        np.testing.assert_allclose(updates[key], expected[key], rtol=1e-6)
    # eq 52, first step: −η(1−β₁)g/(‖g‖/√d + ε)
    g = np.array([0.1, -0.2, 0.3, 0.5])
    np.testing.assert_allclose(updates["temperature"],
                               -0.1 * 0.1 * 0.5 / (np.linalg.norm(g) / 2 + 1e-8), rtol=1e-5)
    for tx in (optim.NormalisedSGD(), optim.IsotropicClip(0.1), optim.normalised_sgd(0.1)):
        got, _ = tx.update(grads, tx.init(params), params)
        want, _ = tx.update(as_arrays, tx.init(jax.tree.map(jnp.asarray, params)))
        np.testing.assert_allclose(got["temperature"], want["temperature"], rtol=1e-6)


def test_inject_hyperparams_rounding_in_bfloat16_is_named():
    params = jnp.ones(4, jnp.bfloat16)
    opt = optax.inject_hyperparams(optim.adasgd)(learning_rate=0.1)
    with pytest.raises(ValueError, match=r"`b2`.*bfloat16 scalar.*hyperparam_dtype="
                                         r"jnp.float32"):
        opt.init(params)
    opt = optax.inject_hyperparams(optim.adasgd, hyperparam_dtype=jnp.float32)(learning_rate=0.1)
    updates, _ = opt.update(params, opt.init(params), params)
    assert updates.dtype == jnp.bfloat16 and bool(jnp.all(jnp.isfinite(updates)))


def _decay_first_coordinate(rate):
    """A weight decay on coordinate 0 only: a rule that reads the parameters and is not
    rotation-equivariant."""
    def update(updates, state, params):
        mask = (jnp.arange(params.shape[0]) == 0).astype(params.dtype)
        return updates + rate * params * mask, state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update)


class _AdaSGDWithAxisDecay(optim.AdaSGD):
    def as_optax(self):
        return optax.chain(optim.scale_by_adasgd(self.b1, self.b2, self.eps),
                           _decay_first_coordinate(0.1),
                           optax.scale_by_learning_rate(self.learning_rate))


def test_update_rules_are_checked_at_non_zero_parameters():
    """The checked update rule starts from θ₀ (acted on by the group with the gradients)
    and applies each update, so a parameter-dependent, basis-dependent step is refuted;
    the same rule without the decay passes. Independent check: for a Haar rotation Q,
    U(QG, Qθ₀) ≠ Q U(G, θ₀) in float64."""
    opt = _AdaSGDWithAxisDecay(0.1, eps=0.0)
    with jax.enable_x64(True):
        rng = np.random.default_rng(0)
        q, r = np.linalg.qr(rng.standard_normal((6, 6)))
        q = q * np.sign(np.diag(r))
        grads = rng.standard_normal((optim.CHECK_STEPS, 6))
        theta = rng.standard_normal(6)
        rule = taxdl.taxonomy.as_function(opt)
        moved = np.asarray(rule(jnp.asarray(grads @ q.T), jnp.asarray(q @ theta)))
        assert np.max(np.abs(moved - np.asarray(rule(jnp.asarray(grads),
                                                     jnp.asarray(theta))) @ q.T)) > 1e-3
    report = taxdl.testing.check(opt, n=6, raise_on_failure=False, maximality=False,
                                 examples=20)
    assert report.cell("algebraic", "E").status == "failed"
    report = taxdl.testing.check(optim.AdaSGD(0.1, eps=0.0), n=6, raise_on_failure=False,
                                 maximality=False, examples=20)
    assert report.passed
