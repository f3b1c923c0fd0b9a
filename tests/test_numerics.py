"""The shared numerical helpers: `materialise` is the identity in value and derivative,
powers of two are built exactly."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import taxdl.nn as tnn
import taxdl.nn.functional as F
from taxdl import optim
from taxdl.testing import check
from taxdl._types import check_int, check_real
from taxdl.nn._numerics import _power_of_two_scale, exp2_int, materialise


def test_materialise_is_the_identity_in_every_mode():
    x = jnp.asarray(np.random.default_rng(0).normal(size=(5, 3)), jnp.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(materialise)(x)), np.asarray(x))
    nan_first = x.at[0, 0].set(jnp.nan)  # the loop then runs once
    np.testing.assert_array_equal(np.asarray(jax.jit(materialise)(nan_first)),
                                  np.asarray(nan_first))
    assert jax.jit(materialise)(jnp.zeros((0, 3))).shape == (0, 3)
    f = lambda x: jnp.sum(jnp.sin(materialise(x * x)))  # noqa: E731
    g = lambda x: jnp.sum(jnp.sin(x * x))  # noqa: E731
    np.testing.assert_allclose(jax.grad(f)(x), jax.grad(g)(x), rtol=1e-6)
    np.testing.assert_allclose(jax.hessian(f)(x[0]), jax.hessian(g)(x[0]), rtol=1e-5)
    np.testing.assert_allclose(jax.jacrev(jax.jacrev(f))(x[0]), jax.hessian(g)(x[0]),
                               rtol=1e-5)
    np.testing.assert_allclose(jax.vmap(jax.grad(f))(x), jax.vmap(jax.grad(g))(x),
                               rtol=1e-6)


_WHOLE_BATCH = {
    "isotropic_tanh": F.isotropic_tanh,
    "isotropic_relu": lambda x: F.isotropic_relu(x, r0=0.5),
    "rms_norm": lambda x: F.rms_norm(x, jnp.ones(x.shape[-1]), 1e-6),
    "unit_vector": F.unit_vector,
    "isotropic_min": lambda x: F.isotropic_min(x, jnp.full(x.shape[-1], 0.3)),
    "isotropic_multiply": lambda x: F.isotropic_multiply(x, jnp.full(x.shape[-1], 0.3)),
}


@pytest.mark.parametrize("name", sorted(_WHOLE_BATCH))
def test_vmapped_calls_keep_the_whole_batch_cond(name):
    """Under `jax.vmap` (one example per call, as with Equinox modules) the overflow-safe
    kernels keep their whole-batch `lax.cond` (its predicate is taken over the mapped
    axis too; a batched predicate would evaluate both branches), and give the values of
    the batched call, also when one row (tiny) sends the batch down the max-scaled
    branch, in value and gradient."""
    f = _WHOLE_BATCH[name]
    x = jnp.asarray(np.random.default_rng(3).normal(size=(6, 5)), jnp.float32)
    assert "conditional(" in jax.jit(jax.vmap(f)).lower(x).compile().as_text()
    assert "conditional(" in jax.jit(jax.vmap(jax.vmap(f))).lower(
        x.reshape(2, 3, 5)).compile().as_text()
    for batch in (x, x.at[2].multiply(1e-30)):
        np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(f))(batch)),
                                      np.asarray(jax.jit(f)(batch)))
        loss = lambda z: jnp.sum(jnp.sin(f(z)))  # noqa: E731
        np.testing.assert_allclose(np.asarray(jax.vmap(jax.grad(loss))(batch)),
                                   np.asarray(jax.grad(loss)(batch)), rtol=1e-6, atol=0)


def test_materialise_keeps_its_loop_in_the_compiled_program():
    text = jax.jit(lambda x: materialise(jnp.exp(x)) + 1).lower(
        jnp.ones((64, 64))).compile().as_text()
    assert "while" in text


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16, jnp.float32, jnp.float64])
def test_powers_of_two_are_exact_over_the_normal_range(dtype):
    """exp2_int(k) = 2**k for every normal exponent; the scale p of a magnitude m puts
    m p in [1/2, 1) (1 at m = 0 and for non-finite m), clamped to normal p and 1/p."""
    with jax.enable_x64(dtype == jnp.float64):
        fi = jnp.finfo(dtype)
        k = np.arange(int(fi.minexp), int(fi.maxexp))
        got = np.asarray(jax.jit(exp2_int, static_argnums=1)(jnp.asarray(k), dtype),
                         np.float64)
        np.testing.assert_array_equal(got, 2.0 ** k.astype(np.float64))
        m = np.asarray([0.0, 0.3, 1.0, 3.0, float(fi.max), float(fi.tiny), np.inf, np.nan])
        p = np.asarray(jax.jit(_power_of_two_scale)(jnp.asarray(m, dtype)), np.float64)
        mid = m[1:4] * p[1:4]
        assert np.all((mid >= 0.5) & (mid < 1)), mid
        assert p[0] == p[6] == p[7] == 1
        assert np.isfinite(m[4] * p[4]) and 1 / p[5] >= float(fi.tiny)


@pytest.mark.parametrize("value, kwargs, message", [
    (0.0, dict(low=0, low_open=True), "C: `v` must be a finite number > 0, got 0.0."),
    (-1, dict(low=0), "C: `v` must be a finite number >= 0, got -1."),
    (2.0, dict(high=1, high_open=True), "C: `v` must be a finite number < 1, got 2.0."),
    (1.0, dict(low=0, high=1, high_open=True),
     "C: `v` must be a finite number in [0, 1), got 1.0."),
    (float("inf"), dict(), "C: `v` must be a finite number, got inf."),
    (float("nan"), dict(low=0), "C: `v` must be a finite number >= 0, got nan."),
])
def test_check_real_names_the_argument_and_range(value, kwargs, message):
    with pytest.raises(ValueError) as info:
        check_real(value, "v", who="C", **kwargs)
    assert str(info.value) == message


def test_check_real_and_check_int_accept_numpy_numbers_and_reject_other_types():
    assert check_real(np.float32(0.5), "v", low=0, high=1) == 0.5
    assert type(check_real(np.int64(2), "v")) is float
    assert check_int(np.int32(3), "k", minimum=3) == 3 and type(check_int(np.int64(3), "k")) is int
    for bad in (True, np.bool_(True), "1", None, jnp.float32(1.0), 1j):
        with pytest.raises(TypeError, match="`v` must be a finite number"):
            check_real(bad, "v")
    for bad in (True, 2.0, "2", np.float64(2.0)):
        with pytest.raises(TypeError, match="K: `k` must be an integer >= 1"):
            check_int(bad, "k", who="K")
    with pytest.raises(ValueError, match="`k` must be an integer >= 3, got 2."):
        check_int(2, "k", minimum=3)


def test_functional_and_module_forms_word_the_same_error_alike():
    """A hyperparameter rejected by a functional form and by its module gets one wording."""
    x = jnp.ones(4)
    with pytest.raises(ValueError, match="`bound` must be a finite number > 0, got -1.0") as f:
        F.elementwise_clip(x, -1.0)
    with pytest.raises(ValueError, match="`bound` must be a finite number > 0, got -1.0") as m:
        tnn.CoordinateClip(-1.0)
    # each names itself, then the same wording
    assert str(f.value) == "elementwise_clip: `bound` must be a finite number > 0, got -1.0."
    assert str(m.value) == "CoordinateClip: `bound` must be a finite number > 0, got -1.0."


@pytest.mark.parametrize("call,name", [
    (lambda: F.gelu(jnp.ones(3), approximate="no"), "approximate"),
    (lambda: tnn.GELU(approximate=1), "approximate"),
    (lambda: F.colu(jnp.ones((2, 12)), 4, shared_axis="no"), "shared_axis"),
    (lambda: tnn.CoLU(cone_dim=4, shared_axis=0), "shared_axis"),
    (lambda: tnn.QuasiIsotropic(normalise="yes"), "normalise"),
    (lambda: tnn.BatchNorm(4, inference="no"), "inference"),
    (lambda: tnn.ChiNorm(4, inference=1), "inference"),
    (lambda: tnn.BatchNorm(4)(jnp.ones(4), None, inference="no"), "inference"),
    (lambda: tnn.Dropout(0.5)(jnp.ones(4), inference="no"), "inference"),
    (lambda: tnn.GmPLinear(3, 2, key=jax.random.key(0), odd="no"), "odd"),
    (lambda: tnn.GmPLinear(3, 2, key=jax.random.key(0), positively_homogeneous=1),
     "positively_homogeneous"),
    (lambda: tnn.MLP(3, [4], 2, use_bias="no", key=jax.random.key(0)), "use_bias"),
    (lambda: tnn.Sequential([tnn.IsotropicTanh()], check_fit="no"), "check_fit"),
    (lambda: optim.normalised_sgd(0.1, 0.9, nesterov="no"), "nesterov"),
    (lambda: check(tnn.IsotropicTanh(), 3, maximality="no"), "maximality"),
    (lambda: check(tnn.IsotropicTanh(), 3, raise_on_failure=0), "raise_on_failure"),
])
def test_flags_must_be_bools(call, name, library_checks_only):
    """A string or integer flag would otherwise be read by its truthiness ("no" is True)."""
    with pytest.raises(TypeError, match=f"`{name}` must be True or False"):
        call()


@pytest.mark.parametrize("dtype", [jnp.complex64, jnp.bool_])
@pytest.mark.parametrize("make", [
    lambda: tnn.Linear(3, 2, key=jax.random.key(0)),
    lambda: tnn.ElementwiseDense(3, 2, key=jax.random.key(0)),
    lambda: tnn.InitialisedLinear(3, 2, None, key=jax.random.key(0)),
    lambda: tnn.GmPLinear(3, 2, key=jax.random.key(0)),
    lambda: (lambda x: F.gmp_linear(x, jnp.zeros((2, 2)), jnp.zeros(2), jnp.ones(2))),
    lambda: (lambda x: tnn.GmPConv(3, 2, 1, key=jax.random.key(0))(x.reshape(3, 1, 1))),
])
def test_affine_layers_refuse_complex_and_boolean_inputs(make, dtype, library_checks_only):
    """Against real parameters a complex input would give a complex output and a boolean
    one a 0/1 input, silently; integers (pixel values) are promoted, as for eqx.nn.Linear."""
    layer = make()
    with pytest.raises(TypeError, match="`x` must be a real floating or integer array"):
        layer(jnp.ones(3, dtype))
    y = layer(jnp.arange(3))
    assert y.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(y).ravel(), np.asarray(
        layer(jnp.arange(3, dtype=jnp.float32))).ravel(), rtol=1e-6)



@pytest.mark.parametrize("dtype", [jnp.complex64, jnp.bool_])
def test_input_mean_norm_refuses_complex_and_boolean_inputs(dtype, library_checks_only):
    """As the affine layers it precedes: integers are promoted, complex and boolean
    inputs refused by name."""
    norm, state = eqx.nn.make_with_state(tnn.InputMeanNorm)(3)

    def run(x):
        return jax.vmap(lambda v: norm(v, state), axis_name="batch", out_axes=(0, None))(x)[0]

    with pytest.raises(TypeError, match="InputMeanNorm: `x` must be a real floating or integer"):
        run(jnp.ones((2, 3), dtype))
    xs = jnp.arange(6).reshape(2, 3)
    xf = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(np.asarray(run(xs)), xf - xf.mean(0), rtol=1e-6)

_KEY = jax.random.key(0)


@pytest.mark.parametrize("dtype", [jnp.int32, jnp.complex64, "not a dtype"])
@pytest.mark.parametrize("make", [
    lambda d: tnn.Linear(3, 2, key=_KEY, dtype=d),
    lambda d: tnn.ElementwiseDense(3, 2, key=_KEY, dtype=d),
    lambda d: tnn.InitialisedLinear(3, 2, None, key=_KEY, dtype=d),
    lambda d: tnn.MLP(3, [4], 2, key=_KEY, dtype=d),
    lambda d: tnn.GmPLinear(3, 2, key=_KEY, dtype=d),
    lambda d: tnn.GmPConv(3, 2, 1, key=_KEY, dtype=d),
    lambda d: tnn.InputMeanNorm(3, dtype=d),
    lambda d: tnn.LayerNorm(3, dtype=d),
    lambda d: tnn.ScalarLayerNorm(3, dtype=d),
    lambda d: tnn.RMSNorm(3, dtype=d),
    lambda d: tnn.GroupNorm(4, 2, dtype=d),
    lambda d: tnn.InstanceNorm(3, dtype=d),
    lambda d: tnn.SimpleIsotropicLayerNorm(3, dtype=d),
    lambda d: tnn.IsotropicLayerNorm(3, key=_KEY, dtype=d),
    lambda d: tnn.BatchNorm(3, dtype=d),
    lambda d: tnn.ChiNorm(3, dtype=d),
    lambda d: tnn.MagnitudeEMANorm(3, dtype=d),
    lambda d: tnn.CorrelatedIsotropicDropout(3, key=_KEY, dtype=d),
    lambda d: tnn.TrainableDirection(3, key=_KEY, dtype=d),
    lambda d: tnn.MultiHeadSum(4, 2, key=_KEY, dtype=d),
    lambda d: tnn.MultiHeadAffineSum(4, 3, 2, key=_KEY, dtype=d),
])
def test_parameter_dtype_must_be_real_floating(make, dtype, library_checks_only):
    """Integer parameters would be truncated at initialisation (γ = 1, β = 0 stay, Gaussian
    weights become 0) and complex ones are not supported: each module says so by name."""
    with pytest.raises(TypeError, match="`dtype` must be a real floating dtype"):
        make(dtype)
    # the parameters take the dtype (the normalisers' running statistics, InputMeanNorm's
    # included, are kept in float32 by design: a bfloat16 moving average stalls; so is
    # the correlated dropout's random walk, whose matrix exponential has no
    # half-precision form); other modules without parameters keep their state in it
    module = make(jnp.bfloat16)
    leaves = jax.tree.leaves(module, is_leaf=lambda x: isinstance(x, eqx.nn.StateIndex))
    params = [x for x in leaves if eqx.is_inexact_array(x)] or [
        x for x in jax.tree.leaves(eqx.nn.State(module)) if eqx.is_inexact_array(x)]
    expected = (jnp.float32 if isinstance(module, (tnn.CorrelatedIsotropicDropout,
                                                   tnn.InputMeanNorm))
                else jnp.bfloat16)
    assert params and all(x.dtype == expected for x in params)


@pytest.mark.parametrize("f", [
    F.isotropic_tanh, F.isotropic_relu, F.squash, F.isotropic_sinusoid, F.unit_vector,
    tnn.LayerNorm(4), tnn.RMSNorm(4), tnn.SimpleIsotropicLayerNorm(4),
    tnn.TrainableDirection(4, key=jax.random.key(0)),
])
def test_a_nan_component_makes_the_whole_row_nan(f):
    """Every output component depends on the row's norm or spread, which a NaN component
    makes NaN: the row must be NaN throughout, not read as the zero vector (0 or finite
    values beside the NaN)."""
    x = jnp.array([[jnp.nan, 1.0, -2.0, 0.5], [1.0, 1.0, -2.0, 0.5]])
    y = np.asarray(jax.vmap(f)(x))
    assert np.all(np.isnan(y[0])) and np.all(np.isfinite(y[1]))


def test_nan_trainable_directions_give_nan_not_zero():
    """A parameter that became NaN in training must show in the output, not zero it."""
    m = tnn.TrainableDirection(4, key=jax.random.key(0))
    bad = eqx.tree_at(lambda m: m.directions, m, m.directions.at[0, 0].set(jnp.nan))
    assert np.all(np.isfinite(np.asarray(m(jnp.ones(4)))))
    assert np.all(np.isnan(np.asarray(bad(jnp.ones(4)))))


def test_unit_vector_derivatives_near_the_smallest_normal_number():
    """x̂ and ‖x‖ differentiated at float32 rows whose norm is a few times the smallest
    normal number (1.2e-38), where dx̂ ~ |dx|/‖x‖ is still representable: forward and
    reverse mode match the float64 formulas dx̂ = (dx − x̂ x̂·dx)/‖x‖, d‖x‖ = x̂·dx (not
    NaN through an intermediate 1/‖p x‖² for a clamped power of two p), and so do the
    forms built on them."""
    from taxdl.nn._numerics import unit_and_norm

    x = np.array([[1.3e-38, -1.5e-38, 2e-38, 1.2e-38], [1.2e-38, 0, 0, 0],
                  [3e-38, 1.2e-38, 0, -1.9e-38], [2.0, -1.0, 0.5, 0.25]], np.float32)
    t = np.array([[1.0, -2.0, 0.5, 3.0], [-2.0, 1.5, 1.0, 0.7], [0.3, 2.5, -1.0, -1.5],
                  [1.0, 1.0, -1.0, 0.0]], np.float32)
    x64 = x.astype(np.float64)
    r = np.linalg.norm(x64, axis=-1, keepdims=True)
    u = x64 / r
    along = np.sum(u * t, -1, keepdims=True)
    du = (t - u * along) / r
    (_, _), (got_du, got_dr) = jax.jit(lambda a, b: jax.jvp(unit_and_norm, (a,), (b,)))(x, t)
    scale = np.abs(du).max(-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(got_du) / scale, du / scale, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got_dr), along[:, 0], rtol=1e-6)
    # reverse mode: the cotangent t of x̂ pulls back to (t − x̂ x̂·t)/‖x‖ (the same matrix)
    g = jax.jit(jax.grad(lambda a: jnp.sum(unit_and_norm(a)[0] * t)))(x)
    np.testing.assert_allclose(np.asarray(g) / scale, du / scale, atol=1e-6)
    # complex rows: dx̂ = (dx − x̂ Re(x̂ᴴdx))/‖x‖
    z = x64[[0, 2]] + 1j * x64[[2, 0]]
    dz = t[[0, 2]] - 1j * t[[1, 3]]
    rz = np.linalg.norm(z, axis=-1, keepdims=True)
    uz = z / rz
    duz = (dz - uz * np.real(np.sum(np.conj(uz) * dz, -1, keepdims=True))) / rz
    got = jax.jvp(unit_and_norm, (jnp.asarray(z, jnp.complex64),),
                  (jnp.asarray(dz, jnp.complex64),))[1][0]
    sz = np.abs(duz).max(-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(got) / sz, duz / sz, atol=1e-6)
    for f in (lambda a: F.quasi_isotropic(a, 3.0),
              lambda a: F.lattice_isotropic(a, F.lattice_directions("cubic", 4))):
        assert np.isfinite(np.asarray(jax.jvp(f, (jnp.asarray(x),), (jnp.asarray(t),))[1])).all()
        assert np.isfinite(np.asarray(jax.grad(lambda a: jnp.sum(f(a) * t))(x))).all()
