"""CoLU (Fu & Cohen eqs 1–4) and RCoLU (eq 5) against independent float64 NumPy
evaluations: every projection, both layouts (block, and the authors' axes-first
arrangement), axis sharing, the paper's edge cases (G = 0, S = 1, S = 2), gradients
against finite differences (including a zero cone body and cone boundaries), any channel
axis, extreme magnitudes, Theorem 4.7 equivariance, and bad input."""

import functools as ft

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special

import taxdl.nn as tnn
import taxdl.nn.functional as F
from _models import fd_jacobian

RNG = np.random.default_rng(1)


def _x64():
    return jax.enable_x64(True)


def _weight(r, projection):
    if projection == "hard":
        return np.clip(r, 0, 1)
    if projection == "firm":
        return special.expit(4 * r - 2)
    return special.expit(r - 0.5)


def _cone_indices(c, s, layout, shared):
    if shared:
        g = (c - 1) // (s - 1)
        return [0] * g, [1 + (s - 1) * i + np.arange(s - 1) for i in range(g)]
    g = c // s
    if layout == "block":
        return [s * i for i in range(g)], [s * i + 1 + np.arange(s - 1) for i in range(g)]
    # the authors' published arrangement: the G axes, then the G bodies of S − 1
    return list(range(g)), [g + (s - 1) * i + np.arange(s - 1) for i in range(g)]


def colu_np(x, s, projection="hard", eps=1e-7, layout="block", shared=False, rectify=None):
    """Eq 1 / eq 2 / firm weight per cone, cone by cone, in float64."""
    x = np.asarray(x, np.float64)
    y = x.copy()
    axes, bodies = _cone_indices(x.shape[-1], s, layout, shared)
    for a_i, b_i in zip(axes, bodies):
        a, b = x[..., a_i], x[..., b_i]
        d = np.linalg.norm(b, axis=-1) + eps
        with np.errstate(divide="ignore", invalid="ignore"):  # ε = 0: ρ = ±∞ at b = 0
            r = np.where(d > 0, a / d, np.where(a > 0, np.inf, -np.inf))
        y[..., b_i] = _weight(r, projection)[..., None] * b
        if rectify == "relu":
            y[..., a_i] = np.maximum(a, 0)
        elif rectify == "silu":
            y[..., a_i] = a * special.expit(a)
    return y


def rcolu_np(x, s, projection="hard", eps=1e-7):
    """Eq 5 per block: x_n = (x·e)e, x_r = x − x_n, λ = x_n + W((x·e)/(‖x_r‖ + ε)) x_r."""
    x = np.asarray(x, np.float64)
    z = x.reshape(x.shape[:-1] + (-1, s))
    e = np.ones(s) / np.sqrt(s)
    a = z @ e
    xn = a[..., None] * e
    xr = z - xn
    w = _weight(a / (np.linalg.norm(xr, axis=-1) + eps), projection)
    return (xn + w[..., None] * xr).reshape(x.shape)


def _inputs(c, rows=24):
    x = RNG.normal(size=(rows, c)) * RNG.choice([0.3, 1.0, 3.0], size=(rows, 1))
    x[0] = 0.0
    x[1, 1:] = 0.0  # zero cone bodies (block layout)
    x[1, 0] = 0.7
    return x


CONFIGS = [
    dict(s=4, projection="hard"),
    dict(s=4, projection="soft"),
    dict(s=3, projection="firm", layout="axes_first"),
    dict(s=4, projection="hard", shared=True, rectify="relu"),
    dict(s=3, projection="soft", shared=True),
    dict(s=4, projection="soft", rectify="silu", eps=0.0),
    dict(s=5, projection="hard", eps=0.0, layout="axes_first", rectify="silu"),
    dict(s=3, projection="firm", shared=True, rectify="silu"),
]


def _call(x, cfg, **kw):
    return F.colu(x, cone_dim=cfg["s"], projection=cfg["projection"],
                  layout=cfg.get("layout", "block"), shared_axis=cfg.get("shared", False),
                  rectify_axis=cfg.get("rectify"), eps=cfg.get("eps", 1e-7), **kw)


def _ref(x, cfg):
    return colu_np(x, cfg["s"], cfg["projection"], cfg.get("eps", 1e-7),
                   cfg.get("layout", "block"), cfg.get("shared", False), cfg.get("rectify"))


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
def test_colu_matches_numpy_and_finite_differences(cfg):
    c = 1 + 3 * (cfg["s"] - 1) if cfg.get("shared") else 3 * cfg["s"]
    x = _inputs(c)
    ref = _ref(x, cfg)
    v = RNG.normal(size=x.shape)
    with _x64():
        f = jax.jit(lambda x: _call(x, cfg))
        np.testing.assert_allclose(np.asarray(f(jnp.asarray(x))), ref, rtol=1e-12, atol=1e-14)
        grad = jax.jit(jax.grad(lambda x: jnp.sum(_call(x, cfg) * jnp.asarray(v))))
        g = np.asarray(grad(jnp.asarray(x)))
    y32 = np.asarray(_call(jnp.asarray(x, jnp.float32), cfg), np.float64)
    np.testing.assert_allclose(y32, ref, rtol=1e-5, atol=1e-5)
    assert np.all(np.isfinite(g))
    # central differences of the NumPy reference on rows away from kinks
    h = 1e-6
    for i in range(2, 8):
        fd = np.array([(np.sum(_ref(x[i] + h * d, cfg) * v[i])
                        - np.sum(_ref(x[i] - h * d, cfg) * v[i])) / (2 * h)
                       for d in np.eye(c)])
        np.testing.assert_allclose(g[i], fd, rtol=1e-5, atol=1e-6)


def test_resolve_cones_rejects_a_non_integer_channel_count_and_modules_take_numpy_axes(
        library_checks_only):
    with pytest.raises(TypeError, match="`channels` must be an integer >= 0, got 4.5"):
        F.resolve_cones(4.5, cone_dim=2)
    x = jnp.asarray(RNG.normal(size=(3, 8)), jnp.float32)
    for module, function in ((tnn.CoLU, F.colu), (tnn.RCoLU, F.rcolu)):
        m = module(4, axis=np.int64(-2))
        assert type(m.axis) is int
        np.testing.assert_array_equal(np.asarray(m(x.T)), np.asarray(function(x, 4).T))


@pytest.mark.parametrize("fn", ["colu", "rcolu"])
def test_an_eps_below_the_smallest_normal_number_is_finite_at_a_zero_cone(fn):
    """ε = 1e-40 is flushed to 0 in float32, so d = ‖b‖ + ε is 0 at a zero cone: values
    and gradients are those of ε = 1e-30 (ρ = 0 there, W(0) on the body; the axis passes
    through), not 0/0."""
    f = getattr(F, fn)
    x = jnp.asarray(np.concatenate([np.zeros(4), [0.5, 0, 0, 0], RNG.normal(size=4)]),
                    jnp.float32)
    v = jnp.asarray(RNG.normal(size=12), jnp.float32)
    for projection in ("hard", "firm", "soft"):
        def run(eps):
            loss = lambda x: jnp.sum(f(x, 4, projection=projection, eps=eps) * v)  # noqa: E731
            return f(x, 4, projection=projection, eps=eps), jax.grad(loss)(x)
        (y, g), (y_ref, g_ref) = run(1e-40), run(1e-30)
        assert np.all(np.isfinite(y)) and np.all(np.isfinite(g))
        np.testing.assert_allclose(np.asarray(y), np.asarray(y_ref), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(g), np.asarray(g_ref), rtol=1e-6)


def test_colu_gradient_at_zero_body_and_cone_boundaries():
    """At a zero cone body the body's Jacobian is W(a/ε)·I and the axis passes through
    (the authors' code returns NaN here); on the boundaries ρ ∈ {0, 1} gradients are
    finite."""
    v = RNG.normal(size=8)
    x = np.array([0.5, 0, 0, 0, -0.5, 0, 0, 0])
    boundary = np.array([1.0, 0.6, 0.8, 0.0, 0.0, 1.0, 2.0, 2.0])  # ρ ≈ 1, ρ = 0
    with _x64():
        grad = jax.jit(jax.grad(lambda x, v: jnp.sum(F.colu(x, 4) * v)))
        g = np.asarray(grad(jnp.asarray(x), jnp.asarray(v)))
        gb = np.asarray(grad(jnp.asarray(boundary), jnp.asarray(v)))
        gs = np.asarray(jax.grad(lambda x, v: jnp.sum(F.colu(x, 4, projection="soft") * v))(
            jnp.asarray(x), jnp.asarray(v)))
    expect = v.copy()
    expect[5:] = 0.0  # second cone: a < 0, W = 0
    np.testing.assert_allclose(g, expect, atol=1e-12)
    w_soft = special.expit(np.array([0.5, -0.5]) / 1e-7 - 0.5)  # = (1, 0)
    np.testing.assert_allclose(gs[1:4], w_soft[0] * v[1:4], atol=1e-12)
    np.testing.assert_allclose(gs[[0, 4]], v[[0, 4]], atol=1e-12)
    assert np.all(np.isfinite(gb))


def test_colu_paper_edge_cases():
    x = jnp.asarray(_inputs(12), jnp.float32)
    np.testing.assert_array_equal(np.asarray(F.colu(x, num_cones=0)), np.asarray(x))
    np.testing.assert_array_equal(np.asarray(F.colu(x, cone_dim=1)), np.asarray(x))
    np.testing.assert_array_equal(np.asarray(F.colu(x, cone_dim=2)), np.asarray(jax.nn.relu(x)))
    np.testing.assert_array_equal(np.asarray(F.colu(x, 2, projection="soft")),
                                  np.asarray(jax.nn.silu(x)))
    np.testing.assert_array_equal(np.asarray(F.colu(x, num_cones=3)),
                                  np.asarray(F.colu(x, cone_dim=4)))
    np.testing.assert_array_equal(np.asarray(F.colu(x[:, :13 - 1], num_cones=1)),
                                  np.asarray(F.colu(x, cone_dim=12)))
    assert F.resolve_cones(13, num_cones=4, shared_axis=True) == (4, 4)
    assert F.resolve_cones(12, cone_dim=4) == (4, 3)
    for m in (tnn.CoLU(num_cones=0), tnn.CoLU(cone_dim=1)):
        assert m.taxonomy.cell("algebraic", "E").name == "Aff(n)"  # the identity map
    assert tnn.CoLU(cone_dim=2).taxonomy.cell("algebraic", "E").name == "S_n⋉(ℝ×₊)^n"
    assert tnn.CoLU(cone_dim=2, projection="soft").taxonomy.cell("algebraic", "E").name == "S_n"


def test_colu_any_channel_axis_and_extreme_magnitudes():
    x = RNG.normal(size=(2, 8, 3, 5))  # N, C, H, W
    ref = np.moveaxis(colu_np(np.moveaxis(x, 1, -1), 4, "soft"), -1, 1)
    y = F.colu(jnp.asarray(x, jnp.float32), 4, projection="soft", axis=1)
    np.testing.assert_allclose(np.asarray(y, np.float64), ref, rtol=1e-5, atol=1e-6)
    m = tnn.CoLU(cone_dim=4, projection="soft", axis=-3)
    np.testing.assert_allclose(np.asarray(jax.vmap(m)(jnp.asarray(x, jnp.float32)),
                                          np.float64), ref, rtol=1e-5, atol=1e-6)
    # |x| ∈ {1e-30, 1e30} in float32: finite values and gradients, reference values
    u = RNG.normal(size=(3, 8))
    for scale in (1e30, 1e-30):
        xs = jnp.asarray(scale * u, jnp.float32)
        for projection in ("hard", "soft"):
            y, g = jax.jit(jax.value_and_grad(
                lambda x: jnp.sum(F.colu(x, 4, projection=projection) / scale)))(xs)
            assert bool(jnp.isfinite(y)) and bool(jnp.all(jnp.isfinite(g)))
            got = np.asarray(F.colu(xs, 4, projection=projection), np.float64) / scale
            want = colu_np(np.asarray(xs, np.float64), 4, projection) / scale
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for dtype in (jnp.bfloat16, jnp.float16):
        assert F.colu(jnp.asarray(u, dtype), 4).dtype == dtype


def _cone_element(rng, g, s, scale):
    """A Theorem 4.7 group element in the block layout (float64)."""
    perm = rng.permutation(g)
    m = np.zeros((g * s, g * s))
    for i, j in enumerate(perm):
        q, _ = np.linalg.qr(rng.normal(size=(s - 1, s - 1)))
        c = np.exp(rng.uniform(np.log(0.5), np.log(2))) if scale else 1.0
        m[i * s, j * s] = c
        m[i * s + 1:(i + 1) * s, j * s + 1:(j + 1) * s] = c * q
    return m


def test_theorem_4_7_equivariance_and_orthogonal_failure():
    x = _inputs(12)[2:]
    with _x64():
        f = jax.jit(lambda x: F.colu(x, 4, projection="soft", eps=0.0))
        fe = jax.jit(lambda x: F.colu(x, 4, projection="soft"))
        for scale in (False, True):
            m = _cone_element(RNG, 3, 4, scale)
            np.testing.assert_allclose(np.asarray(f(jnp.asarray(x @ m.T))),
                                       np.asarray(f(jnp.asarray(x))) @ m.T, atol=1e-12)
        q, _ = np.linalg.qr(RNG.normal(size=(12, 12)))
        err = np.abs(np.asarray(f(jnp.asarray(x @ q.T))) - np.asarray(f(jnp.asarray(x))) @ q.T)
        assert err.max() > 1e-2  # O(C) is not a symmetry
        # ε > 0 breaks the positive scalings: visible where ‖x₋₁‖ is comparable to ε
        small = 1e-7 * x
        lhs, rhs = np.asarray(fe(jnp.asarray(2 * small))), 2 * np.asarray(fe(jnp.asarray(small)))
        assert np.abs(lhs - rhs).max() > 1e-3 * np.abs(rhs).max()


def test_cones_with_components_near_the_float32_maximum():
    """Cone bodies with components above 1/tiny ≈ 8.5e37 (whose reciprocal float32 flushes
    to 0, which read their norm as 0 and returned x unchanged), and RCoLU's axis part
    x·e, taken from the mean of x/S (a sum of x overflowed: NaN). Float64 references."""
    x = np.array([[1e38, 1e38, 1e38, 1e38], [2e38, 1e38, 1.5e38, 2.5e38],
                  [1e38, -5e37, 2e37, 8e37], [1e38, 9e37, -5e37, 2e37]], np.float32)
    x64 = x.astype(np.float64)
    y = np.asarray(jax.jit(lambda x: F.rcolu(x, 4))(jnp.asarray(x)), np.float64)
    np.testing.assert_allclose(y, rcolu_np(x64, 4, "hard"), rtol=1e-5)
    y = np.asarray(jax.jit(lambda x: F.colu(x, 4))(jnp.asarray(x)), np.float64)
    np.testing.assert_allclose(y, colu_np(x64, 4, "hard"), rtol=1e-5)


@pytest.mark.parametrize("eps", [1e-7, 0.0])
@pytest.mark.parametrize("projection", ["hard", "soft", "firm"])
def test_cone_bodies_whose_norm_exceeds_the_float32_maximum(projection, eps):
    """Bodies of norm ~5e38, beyond float32's maximum, with axis values inside it: ρ is
    ~0.2–1.2, not 0 (a norm that overflowed to ∞ gave the weight of ρ = 0, hence a zero
    body, and a Jacobian without its W' terms). RCoLU's blocks have residual norms
    beyond the maximum too; in the first its axis value x·e = 4e38 as well (the product
    √S·mean overflowed to ∞, the weight of ρ = ∞), and in the third the residual
    x − mean has a component of -3.75e38 (which overflowed: NaN). With ε = 0 too (whose value
    is computed scale-free, a/m over ‖b‖/m for the largest body component m). Values and
    Jacobians against float64, with central differences for the Jacobian."""
    x = np.array([1e38, 3e38, -3e38, 2.5e38, 3e38, 3e38, 3e38, 3e38], np.float32)
    r = np.array([3e38, 3e38, 3e38, -1e38, 3e38, -1.5e38, 3e38, 2e38,
                  3e38, -3e38, 1e38, 2e38], np.float32)
    kw = dict(projection=projection, eps=eps)
    for f, ref, p in [(ft.partial(F.colu, cone_dim=4, **kw), ft.partial(colu_np, s=4, **kw), x),
                      (ft.partial(F.rcolu, cone_dim=4, **kw), ft.partial(rcolu_np, s=4, **kw),
                       r)]:
        p64 = p.astype(np.float64)
        want = ref(p64)
        y = np.asarray(jax.jit(f)(jnp.asarray(p)), np.float64)
        np.testing.assert_allclose(y / 3e38, want / 3e38, rtol=1e-5, atol=1e-6)
        jac = np.asarray(jax.jacrev(f)(jnp.asarray(p)), np.float64)
        np.testing.assert_allclose(jac, fd_jacobian(ref, p64, 3e32), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("projection", ["hard", "soft"])
def test_rcolu_matches_numpy_and_finite_differences(projection):
    x = _inputs(12)
    x[1] = 1.3  # x_r = 0 in every block
    v = RNG.normal(size=x.shape)
    with _x64():
        y = np.asarray(jax.jit(lambda x: F.rcolu(x, 4, projection=projection))(jnp.asarray(x)))
        g = np.asarray(jax.jit(jax.grad(
            lambda x: jnp.sum(F.rcolu(x, 4, projection=projection) * jnp.asarray(v))))(
            jnp.asarray(x)))
        one = np.asarray(F.rcolu(jnp.asarray(x), num_cones=1, projection=projection))
    np.testing.assert_allclose(y, rcolu_np(x, 4, projection), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(one, rcolu_np(x, 12, projection), rtol=1e-12, atol=1e-14)
    assert np.all(np.isfinite(g))
    h = 1e-6
    for i in range(2, 7):
        fd = np.array([(np.sum(rcolu_np(x[i] + h * d, 4, projection) * v[i])
                        - np.sum(rcolu_np(x[i] - h * d, 4, projection) * v[i])) / (2 * h)
                       for d in np.eye(12)])
        np.testing.assert_allclose(g[i], fd, rtol=1e-5, atol=1e-6)


def _weight_jnp(r, projection):
    if projection == "hard":
        return jnp.clip(r, 0, 1)
    if projection == "firm":
        return jax.nn.sigmoid(4 * r - 2)
    return jax.nn.sigmoid(r - 0.5)


def colu_jnp(x, cfg):
    """Eqs 1–4 cone by cone with plain jnp indexing (a second, autodiff-able reference
    for the derivatives the kernels write out by hand)."""
    s, eps = cfg["s"], cfg.get("eps", 1e-7)
    axes, bodies = _cone_indices(x.shape[-1], s, cfg.get("layout", "block"),
                                 cfg.get("shared", False))
    y = x
    for a_i, b_i in zip(axes, bodies):
        a, b = x[..., a_i], x[..., b_i]
        w = _weight_jnp(a / (jnp.linalg.norm(b, axis=-1) + eps), cfg["projection"])
        y = y.at[..., b_i].set(w[..., None] * b)
        if cfg.get("rectify") == "relu":
            y = y.at[..., a_i].set(jax.nn.relu(a))
        elif cfg.get("rectify") == "silu":
            y = y.at[..., a_i].set(jax.nn.silu(a))
    return y


def rcolu_jnp(x, s, projection):
    z = x.reshape(x.shape[:-1] + (-1, s))
    e = jnp.ones(s, x.dtype) / np.sqrt(s)
    a = z @ e
    xr = z - a[..., None] * e
    w = _weight_jnp(a / (jnp.linalg.norm(xr, axis=-1) + 1e-7), projection)
    return (a[..., None] * e + w[..., None] * xr).reshape(x.shape)


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
def test_colu_forward_mode_second_order_and_vmap(cfg):
    """jvp against finite differences of the NumPy reference; jacfwd = jacrev; Hessians
    (forward-over-reverse and reverse-over-reverse) against autodiff of a plain-jnp
    reference; per-example gradients under vmap."""
    c = 1 + 3 * (cfg["s"] - 1) if cfg.get("shared") else 3 * cfg["s"]
    x = _inputs(c, rows=8)[2:]  # no zero rows: the plain reference is not smooth there
    t, v = RNG.normal(size=x.shape), RNG.normal(size=x.shape)
    h = 1e-6
    with _x64():
        f = lambda x: _call(x, cfg)  # noqa: E731
        _, jt = jax.jit(lambda x, t: jax.jvp(f, (x,), (t,)))(jnp.asarray(x), jnp.asarray(t))
        fd = (_ref(x + h * t, cfg) - _ref(x - h * t, cfg)) / (2 * h)
        np.testing.assert_allclose(np.asarray(jt), fd, rtol=1e-5, atol=1e-6)
        row = jnp.asarray(x[0])
        np.testing.assert_allclose(np.asarray(jax.jacfwd(f)(row)),
                                   np.asarray(jax.jacrev(f)(row)), rtol=1e-12, atol=1e-14)
        hess = jax.jit(jax.hessian(lambda r: jnp.sum(jnp.sin(f(r)))))(row)
        hess_ref = jax.jit(jax.hessian(lambda r: jnp.sum(jnp.sin(colu_jnp(r, cfg)))))(row)
        np.testing.assert_allclose(np.asarray(hess), np.asarray(hess_ref), rtol=1e-9,
                                   atol=1e-11)
        hess_rev = jax.jit(jax.jacrev(jax.jacrev(lambda r: jnp.sum(jnp.sin(f(r))))))(row)
        np.testing.assert_allclose(np.asarray(hess_rev), np.asarray(hess_ref), rtol=1e-9,
                                   atol=1e-11)
        v0 = jnp.asarray(v[0])
        per_example = jax.vmap(jax.grad(lambda r: jnp.sum(f(r) * v0)))(jnp.asarray(x))
        whole = jax.grad(lambda X: jnp.sum(f(X) * v0))(jnp.asarray(x))
        np.testing.assert_allclose(np.asarray(per_example), np.asarray(whole), rtol=1e-12,
                                   atol=1e-14)


@pytest.mark.parametrize("projection", ["hard", "soft"])
def test_rcolu_forward_mode_and_second_order(projection):
    x = _inputs(12, rows=6)[2:]
    t = RNG.normal(size=x.shape)
    h = 1e-6
    with _x64():
        f = lambda x: F.rcolu(x, 4, projection=projection)  # noqa: E731
        _, jt = jax.jvp(f, (jnp.asarray(x),), (jnp.asarray(t),))
        fd = (rcolu_np(x + h * t, 4, projection) - rcolu_np(x - h * t, 4, projection)) / (2 * h)
        np.testing.assert_allclose(np.asarray(jt), fd, rtol=1e-5, atol=1e-6)
        row = jnp.asarray(x[0])
        hess = jax.jit(jax.hessian(lambda r: jnp.sum(jnp.sin(f(r)))))(row)
        hess_ref = jax.jit(jax.hessian(
            lambda r: jnp.sum(jnp.sin(rcolu_jnp(r, 4, projection)))))(row)
        np.testing.assert_allclose(np.asarray(hess), np.asarray(hess_ref), rtol=1e-9,
                                   atol=1e-11)
        hess_rev = jax.jit(jax.jacrev(jax.jacrev(lambda r: jnp.sum(jnp.sin(f(r))))))(row)
        np.testing.assert_allclose(np.asarray(hess_rev), np.asarray(hess_ref), rtol=1e-9,
                                   atol=1e-11)


@pytest.mark.parametrize("projection", ["hard", "firm", "soft"])
def test_second_derivatives_at_zero_small_and_large_cones_float32(projection):
    """Hessians of v·f(x) in float32 (default ε): at cones of size 1e-30 … 1e20 against
    autodiff of the plain-jnp references in float64 at the same (rounded) points; at the
    zero cone the only non-zero entries are H[a, b_k] = W'(0) v_k/ε (λ_b ≈ W(0) b +
    (W'(0)/ε) a b near 0), and at a zero body inside the cone (ρ > 1, hard: W ≡ 1
    nearby) the Hessian is 0 (hard has a kink at the zero cone: finite there). Autodiff
    through √ at a zero body, or through 1/m² for m beyond ~1e±19, gave NaN or dropped
    terms here."""
    v = RNG.normal(size=8)
    base = RNG.normal(size=8)
    rows = np.stack([s * base for s in (1e-30, 1e-20, 1e-10, 1.0, 1e20)]).astype(np.float32)
    cfg = {"s": 4, "projection": projection}

    def hessians(f, x):
        return jax.jit(jax.vmap(jax.hessian(lambda r: jnp.dot(f(r), jnp.asarray(v, r.dtype)))))(
            x)

    for fn, ref in ((lambda r: F.colu(r, 4, projection=projection), lambda r: colu_jnp(r, cfg)),
                    (lambda r: F.rcolu(r, 4, projection=projection),
                     lambda r: rcolu_jnp(r, 4, projection))):
        got = np.asarray(hessians(fn, jnp.asarray(rows)), np.float64)
        with _x64():
            want = np.asarray(hessians(ref, jnp.asarray(rows, jnp.float64)))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, atol=1e-5 * np.max(np.abs(w)))
        edges = hessians(fn, jnp.asarray([np.zeros(8), [0.8, 0, 0, 0, 0, 0, 0, 0]], jnp.float32))
        assert np.all(np.isfinite(np.asarray(edges)))
    h0, h_inside = np.asarray(hessians(lambda r: F.colu(r, 4, projection=projection),
                                       jnp.asarray([np.zeros(8), [0.8] + [0] * 7], jnp.float32)),
                              np.float64)
    if projection == "hard":  # a kink at the zero cone (W = clip): finite is all we ask
        np.testing.assert_array_equal(h_inside[:4, :4], 0)
        return
    slope = {"firm": 4 * special.expit(-2.0) * special.expit(2.0),
             "soft": special.expit(-0.5) * special.expit(0.5)}[projection]
    expect = np.zeros((8, 8))
    for cone in (0, 4):
        expect[cone, cone + 1:cone + 4] = expect[cone + 1:cone + 4, cone] = \
            slope / 1e-7 * v[cone + 1:cone + 4]
    np.testing.assert_allclose(h0, expect, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("call,match", [
    (lambda x: F.colu(x, cone_dim=5), "divisible by cone_dim S = 5"),
    (lambda x: F.colu(x, num_cones=5), "divisible by num_cones G = 5"),
    (lambda x: F.colu(x, cone_dim=5, shared_axis=True), "C - 1 = G"),
    (lambda x: F.colu(x, cone_dim=0), "`cone_dim` must be an integer >= 1"),
    (lambda x: F.colu(x, cone_dim=4, num_cones=3), "exactly one"),
    (lambda x: F.colu(x, 4, projection="sharp"), "`projection` must be one of"),
    (lambda x: F.colu(x, 4, layout="cones_first"), "`layout` must be one of"),
    (lambda x: F.colu(x, 4, eps=-1.0), r"`eps` must be a finite number >= 0"),
    (lambda x: F.colu(x, 4, eps=float("nan")), "`eps` must be a finite number"),
    (lambda x: F.colu(x, 4, axis=3), "`axis` must be an integer in"),
    (lambda x: F.colu(x, 4, rectify_axis="gelu"), "`rectify_axis` must be one of"),
    (lambda x: F.rcolu(x, cone_dim=5), "divisible by cone_dim S = 5"),
    (lambda x: tnn.CoLU(cone_dim=4, channels=10), "divisible by cone_dim S = 4"),
    (lambda x: tnn.CoLU(cone_dim=1, shared_axis=True), "`cone_dim` must be >= 2"),
    (lambda x: tnn.CoLU(cone_dim=4, channels=8)(x), "built for channels=8"),
    (lambda x: tnn.CoLU(num_cones=2).taxonomy, "pass `channels=C`"),
    (lambda x: F.colu(x[:, :0], num_cones=2), "C = 0 cannot hold num_cones G = 2"),
    (lambda x: F.rcolu(x[:, :0], num_cones=2), "C = 0 cannot hold num_cones G = 2"),
    (lambda x: F.resolve_cones(-4, cone_dim=4), "`channels` must be an integer >= 0"),
])
def test_colu_bad_input_names_the_argument(call, match, library_checks_only):
    with pytest.raises(ValueError, match=match):
        call(jnp.ones((2, 12)))


@pytest.mark.parametrize("layout,shared", [("axes_first", False), ("block", True)])
def test_eps_zero_cones_1e40_apart_in_one_channel_vector(layout, shared):
    """ε = 0, cones of size ~1e20 and ~1e-20 in one float32 channel vector: the derivative
    rule scales each cone by its own power of two (one scale for the vector flushed the
    small cone, giving weight 0 in the jvp's output and its Jacobian): the jvp's output is
    the forward value, and the gradient and Jacobian match autodiff of the plain-jnp
    reference in float64."""
    if shared:  # channel 0 is the common axis; cone 0 is huge, cone 1 tiny
        x = np.array([1e-20, 1e20, -1e20, 1e-20, 1e-20])
    else:  # axes (1e20, 2e-20), then bodies (1e20, 1e20) and (1e-20, 1e-20)
        x = np.array([1e20, 2e-20, 1e20, 1e20, 1e-20, 1e-20])
    cfg = {"s": 3, "projection": "soft", "eps": 0.0, "layout": layout, "shared": shared}
    f = lambda z: F.colu(z, 3, projection="soft", eps=0.0, layout=layout,  # noqa: E731
                         shared_axis=shared)
    x32 = jnp.asarray(x, jnp.float32)
    y, _ = jax.jvp(f, (x32,), (jnp.ones_like(x32),))
    np.testing.assert_array_equal(np.asarray(y), np.asarray(f(x32)))
    jac = np.asarray(jax.jacrev(f)(x32), np.float64)
    with _x64():
        jac_ref = np.asarray(jax.jacrev(lambda z: colu_jnp(z, cfg))(jnp.asarray(x)))
    np.testing.assert_allclose(jac, jac_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(f(x32), np.float64),
                               colu_np(x[None], 3, "soft", 0.0, layout, shared)[0], rtol=1e-5)


@pytest.mark.parametrize("kind", ["colu", "colu_axes_first", "colu_relu_axis", "rcolu"])
def test_eps_zero_gradients_at_tiny_and_huge_inputs(kind):
    """With ε = 0 these are positively homogeneous, so the Jacobian at s·x equals the
    Jacobian at x for every s > 0: finite and equal at |x| ≈ 1e-30 and 1e30 in float32."""
    f = {"colu": lambda z: F.colu(z, 4, eps=0.0),
         "colu_axes_first": lambda z: F.colu(z, 4, eps=0.0, layout="axes_first"),
         "colu_relu_axis": lambda z: F.colu(z, 4, eps=0.0, rectify_axis="relu"),
         "rcolu": lambda z: F.rcolu(z, 4, eps=0.0)}[kind]
    x = jnp.asarray(np.random.default_rng(5).normal(size=8), jnp.float32)
    jac = np.asarray(jax.jacrev(f)(x))
    for scale in (1e-30, 1e-20, 1e20, 1e30):
        j = np.asarray(jax.jacrev(f)(x * scale))
        assert np.all(np.isfinite(j))
        np.testing.assert_allclose(j, jac, rtol=1e-4, atol=1e-5)


def test_eps_zero_silu_axis_gradients_at_tiny_inputs_match_float64():
    """A SiLU axis is not homogeneous: compare with central differences of the float64
    values at the same tiny point."""
    x = np.random.default_rng(6).normal(size=8) * 1e-25
    f = ft.partial(F.colu, cone_dim=4, eps=0.0, rectify_axis="silu")
    j32 = np.asarray(jax.jacrev(f)(jnp.asarray(x, jnp.float32)), np.float64)
    h = 1e-32
    with jax.enable_x64(True):
        fd = np.stack([(np.asarray(f(jnp.asarray(x + h * e))) - np.asarray(
            f(jnp.asarray(x - h * e)))) / (2 * h) for e in np.eye(8)], -1)
    assert np.all(np.isfinite(j32))
    np.testing.assert_allclose(j32, fd, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["hard", "soft", "firm", "axes_first", "shared", "rcolu"])
def test_default_eps_gradients_correct_at_huge_and_mixed_magnitudes(kind):
    """With ε > 0 the body's part of the Jacobian, −W'(ρ)ρ b bᵀ/(d‖b‖), has a coefficient
    of size 1/|x|², which underflows in float32 for |x| ≳ 1e19 (the Jacobian then lost
    that term) and overflows for a body of size 1e-37 beside an axis value of size ε;
    W'(ρ)/d and ρ/‖b‖ themselves flush to 0 for cone norms of ~1e37 and above, and a
    quotient by d > 2¹²⁶ computed through its reciprocal is 0 (the differentiated
    output then had the weight of ρ = 0). The float32 Jacobian and the output returned
    with it must match the float64 reference (central differences for the Jacobian), up
    to float32's largest components."""
    x = np.random.default_rng(11).normal(size=8)
    x /= np.max(np.abs(x))
    if kind == "shared":
        x = x[:7]
    cfg = {"hard": dict(s=4, projection="hard"), "soft": dict(s=4, projection="soft"),
           "firm": dict(s=4, projection="firm"),
           "axes_first": dict(s=4, projection="soft", layout="axes_first"),
           "shared": dict(s=4, projection="soft", shared=True)}.get(kind)
    if kind == "rcolu":
        f = ft.partial(F.rcolu, cone_dim=4, projection="soft")
        ref = ft.partial(rcolu_np, s=4, projection="soft")
    else:
        f, ref = ft.partial(_call, cfg=cfg), ft.partial(_ref, cfg=cfg)
    points = [x * scale for scale in (1e20, 1e30, 1e37, 1e38, 2e38)]
    if kind in ("hard", "soft", "firm"):
        # axis values of size ~ε = 1e-7 (ρ in the ramp) with bodies of size 1e-37
        points.append(np.array([5e-8, 1e-37, -2e-37, 0.0, 3e-8, 0.0, 0.0, 1e-37]))
    for p in points:
        p32 = np.asarray(p, np.float32).astype(np.float64)  # the float32 point itself
        jac = np.asarray(jax.jacrev(f)(jnp.asarray(p32, jnp.float32)), np.float64)
        want = fd_jacobian(ref, p32, 1e-6 * np.max(np.abs(p32)))
        assert np.all(np.isfinite(jac))
        np.testing.assert_allclose(jac, want, rtol=1e-4, atol=1e-5)
        y, _ = jax.vjp(f, jnp.asarray(p32, jnp.float32))
        top = np.max(np.abs(p32))
        np.testing.assert_allclose(np.asarray(y, np.float64) / top, ref(p32) / top,
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("projection", ["hard", "soft", "firm"])
def test_default_eps_weight_saturates_exactly_for_huge_ratios(projection):
    """An axis value far beyond ε beside a tiny body (ρ ≈ ±1e37, which the kernel's
    quotient in units of 2³² reports as ±∞): the weight is exactly W(±∞) ∈ {1, 0}, so
    the body passes through or vanishes, and the Jacobian is the closed form
    diag(1, I, 1, 0) (W' = 0 there)."""
    x = np.array([3e30, 1e-10, 2e-10, 0.0, -3e30, 1e-10, 0.0, 0.0], np.float32)
    f = ft.partial(F.colu, cone_dim=4, projection=projection)
    y = np.asarray(jax.jit(f)(jnp.asarray(x)))
    np.testing.assert_array_equal(y, colu_np(x.astype(np.float64), 4, projection)
                                  .astype(np.float32))
    np.testing.assert_array_equal(y, x * np.array([1, 1, 1, 1, 1, 0, 0, 0], np.float32))
    jac = np.asarray(jax.jacrev(f)(jnp.asarray(x)))
    np.testing.assert_array_equal(jac, np.diag([1.0, 1, 1, 1, 1, 0, 0, 0]))


@pytest.mark.parametrize("eps", [1e-7, 0.0])
@pytest.mark.parametrize("layout", ["block", "axes_first"])
def test_hard_projection_slope_survives_a_flushed_ratio(eps, layout):
    """Hard CoLU with an axis value 1e-40…1e-38 times its body's norm (float32): ρ = a/‖b‖
    is flushed to 0, but the slope W'(ρ) is 1 (0 < ρ < 1), so ∂y_b/∂a = b̂ exactly as
    the closed form y_b = a b̂ gives; it was 0 (the b̂ column lost). A negative axis value
    keeps slope 0."""
    bhat = np.array([0.6, 0.8, 0.0])
    for a, scale in ((1e-20, 1e20), (1e-30, 1e30), (1.0, 3e38)):
        for sign in (1.0, -1.0):
            cone = np.concatenate([[sign * a], scale * bhat])
            x = jnp.asarray(cone, jnp.float32)  # one cone: both layouts read it alike
            f = lambda z: F.colu(z, 4, eps=eps, layout=layout)  # noqa: E731
            jac = np.asarray(jax.jacfwd(f)(x), np.float64)[1:, 0]
            grad = np.asarray(jax.grad(lambda z: f(z)[1:] @ jnp.asarray(bhat, jnp.float32))(x),
                              np.float64)[0]
            want = bhat if sign > 0 else np.zeros(3)
            np.testing.assert_allclose(jac, want, rtol=1e-6, atol=1e-7, err_msg=str(cone))
            np.testing.assert_allclose(grad, want @ bhat, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("axis", [-4, 3])
def test_a_channel_axis_beyond_the_third_is_checked(axis):
    # the checker draws inputs with as many axes as the channel axis needs; the
    # declaration (cone permutations × O(S − 1)^G × positive cone scalings) holds there
    # and O(C) does not (its counterexample is the maximality line)
    from taxdl.testing import check

    prim = tnn.CoLU(cone_dim=3, axis=axis)
    x = jnp.ones((6, 2, 4, 5)) if axis == -4 else jnp.ones((2, 4, 5, 6))
    assert prim(x).shape == x.shape
    report = check(prim, n=6, examples=4, generations="algebraic", raise_on_failure=False)
    assert report.passed
    cell = next(c for c in report.cells if c.flavour == "E")
    assert any(m.group == "O(6)" and m.found for m in cell.maximality)
