"""Inputs the functional forms refuse by name (shapes, dtypes, parameters given as None or
complex, meaningless hyperparameters), inputs they accept in every form (array-likes,
inputs with no features) with the formula's value (NumPy float64 references), and a NaN
statistic, which gives NaN (docs/numerics.md: a NaN is never read as zero)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import taxdl.nn as tnn
import taxdl.nn.functional as tf
import taxdl.optim as optim
from taxdl.nn.normalisers._functional import batch_apply
from taxdl.nn.operations._functional import attention_scores, multi_head_affine_sum

X64 = lambda: jax.enable_x64(True)  # noqa: E731


def rng(seed=0):
    return np.random.default_rng(seed)


_X = rng(1).normal(size=(6, 4))
_X32 = jnp.asarray(_X, jnp.float32)


def np_layer_norm(x, gamma, beta):
    c = x - x.mean(-1, keepdims=True)
    return gamma * c / np.sqrt((c * c).mean(-1, keepdims=True)) + beta


def np_softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# ============================================================================ magnitude_normalise
def test_magnitude_normalise_of_a_nan_statistic_is_nan():
    """A NaN statistic is not read as 0 (which gave β, silently): the output is NaN, as
    for the other normalisers; a zero statistic (s + ε = 0) still gives β, and a finite
    one γ x/(s + ε) + β."""
    x = jnp.asarray([[1.0, 2.0, 3.0]])
    beta = jnp.asarray([0.5, -0.5, 0.25])
    for scale in (float("nan"), jnp.asarray(jnp.nan)):
        y = tf.magnitude_normalise(x, scale, 1.0, beta)
        assert np.all(np.isnan(np.asarray(y)))
    y = jax.jit(lambda s: tf.magnitude_normalise(x, s, 2.0, beta))(jnp.asarray(jnp.nan))
    assert np.all(np.isnan(np.asarray(y)))
    np.testing.assert_array_equal(tf.magnitude_normalise(x, 0.0, 1.0, beta), beta[None])
    np.testing.assert_allclose(tf.magnitude_normalise(x, 2.0, 3.0, beta, 0.5),
                               3.0 * np.asarray([[1.0, 2.0, 3.0]]) / 2.5 + np.asarray(beta),
                               rtol=1e-6)


def test_magnitude_ema_norm_after_a_nan_input_is_nan_not_beta():
    """The module's moving statistic holds the NaN of a NaN input; its outputs are then
    NaN, not β as if the statistic were 0."""
    import equinox as eqx

    m, state = eqx.nn.make_with_state(tnn.MagnitudeEMANorm)(3, axis_name=None)
    _, state = m(jnp.asarray([1.0, jnp.nan, 3.0]), state)
    y, _ = m(jnp.asarray([1.0, 2.0, 3.0]), state, inference=True)
    assert np.all(np.isnan(np.asarray(y)))


# ============================================================================ cross_entropy
@pytest.mark.parametrize("logits,target,err,match", [
    (_X32, jnp.ones((6, 3)) / 3, ValueError,
     r"^cross_entropy: `target` must be probabilities over the classes, broadcasting "
     r"against `logits` of shape \(6, 4\), got shape \(6, 3\)"),
    (_X32, jnp.zeros(6, jnp.int32), TypeError, r"`target` .*not class indices.*int32"),
    (_X32, jnp.zeros(6), ValueError, r"`target` .*not class indices.*class axis"),
    (_X32, [[0.25] * 4] * 6, TypeError, "`target` must be a real floating array"),
    (jnp.asarray(1.0), jnp.asarray(1.0), ValueError, "`logits` must have at least one axis"),
    (jnp.ones((6, 4), jnp.int32), jnp.ones((6, 4)) / 4, TypeError,
     "`logits` must be a real floating"),
])
def test_cross_entropy_checks_its_inputs(logits, target, err, match, library_checks_only):
    with pytest.raises(err, match=match):
        tf.cross_entropy(logits, target)


def test_cross_entropy_module_names_its_arguments(library_checks_only):
    with pytest.raises(TypeError, match=r"^CrossEntropy: `target` .*`prediction`.*class"):
        tnn.CrossEntropy()(jnp.ones(4), jnp.asarray(2))
    with pytest.raises(ValueError, match=r"^CrossEntropy: `target` .*got shape \(3,\)"):
        tnn.CrossEntropy()(jnp.ones(4), jnp.ones(3))


def test_cross_entropy_takes_exact_one_hots_and_shared_targets():
    """An integer or boolean one-hot is a distribution too (cast to the logits' dtype),
    and one target may serve a batch (broadcasting without enlarging the logits); the
    losses are those of the float one-hot, from float64 NumPy."""
    z = rng(4).normal(size=(2, 3))
    labels = np.array([2, 0])
    log_p = z - np.log(np.sum(np.exp(z), -1, keepdims=True))
    ref = -log_p[np.arange(2), labels]
    with X64():
        logits = jnp.asarray(z)
        for target in (jax.nn.one_hot(labels, 3, dtype=jnp.int32),
                       jnp.asarray(labels[:, None] == np.arange(3))):
            np.testing.assert_allclose(tf.cross_entropy(logits, target), ref, rtol=1e-13)
        shared = np.array([0.2, 0.3, 0.5])
        np.testing.assert_allclose(tf.cross_entropy(logits, jnp.asarray(shared)),
                                   -(log_p @ shared), rtol=1e-13)


def test_cross_entropy_of_valid_inputs_is_unchanged():
    z, p = rng(2).normal(size=(3, 5)), rng(3).dirichlet(np.ones(5), size=3)
    ref = -np.sum(p * (z - np.log(np.sum(np.exp(z), -1, keepdims=True))), -1)
    with X64():
        np.testing.assert_allclose(tf.cross_entropy(jnp.asarray(z), jnp.asarray(p)), ref,
                                   rtol=1e-13)


# ============================================================================ operations
_Q, _K, _V = _X32, jnp.ones((5, 4)), jnp.ones((5, 2))
_SHAPE_ERRORS = [
    (lambda: tf.softmax_attention(_Q, jnp.ones((5, 3)), _V),
     r"^softmax_attention: `key` must be of shape \(S, d\) = \(S, 4\).*got shape \(5, 3\)"),
    (lambda: tf.softmax_attention(_Q, _K, jnp.ones((6, 2))),
     r"^softmax_attention: `value` must be of shape \(S, v\) = \(5, v\).*got shape \(6, 2\)"),
    (lambda: tf.softmax_attention(_Q, _K, jnp.ones(5)),
     r"`value` must be of shape \(S, v\) = \(5, v\)"),
    (lambda: tf.softmax_attention(_Q[0], _K, _V),
     r"^softmax_attention: `query` must be of shape \(t, d\), got shape \(4,\)"),
    (lambda: tf.softmax_attention(_Q, jnp.ones(4), _V),
     r"^softmax_attention: `key` must be an \(S, d\) array"),
    (lambda: tf.isotropic_tanh_attention(_Q, jnp.ones((5, 3)), _V),
     r"^isotropic_tanh_attention: `key` must be of shape \(S, d\) = \(S, 4\)"),
    (lambda: attention_scores(_Q, jnp.ones((5, 3))),
     r"^attention_scores: `key` must be of shape \(S, d\) = \(S, 4\)"),
    (lambda: tf.rotated_dropout(_X32, jnp.eye(3), jnp.ones((6, 4)), 0.5),
     r"^rotated_dropout: `basis` must be of shape \(n, n\) = \(4, 4\).*got shape \(3, 3\)"),
    (lambda: tf.rotated_dropout(_X32, jnp.eye(4), jnp.ones(3), 0.5),
     r"^rotated_dropout: `keep` must be of shape \(\.\.\., 4\).*got shape \(3,\)"),
    (lambda: tf.rotated_dropout(_X32[0], jnp.eye(4), jnp.ones((6, 4)), 0.5),
     r"^rotated_dropout: `keep` must be of shape \(\.\.\., 4\).*got shape \(6, 4\)"),
    (lambda: tf.multi_head_sum(_X32[0], jnp.ones((2, 4, 3)), jnp.zeros((2, 4)), jnp.tanh),
     r"^multi_head_sum: `weight` must be of shape \(h, m, n\) = \(h, m, 4\).*\(2, 4, 3\)"),
    (lambda: tf.multi_head_sum(_X32[0], jnp.ones((4, 4)), jnp.zeros(4), jnp.tanh),
     r"^multi_head_sum: `weight` must be of shape \(h, m, n\)"),
    (lambda: tf.multi_head_sum(_X32[0], jnp.ones((2, 3, 4)), jnp.zeros((2, 4)), jnp.tanh),
     r"^multi_head_sum: `bias` must be of shape \(h, m\) = \(2, 3\).*got shape \(2, 4\)"),
    (lambda: tf.multi_head_sum(_X32, jnp.ones((2, 3, 4)), jnp.zeros((2, 3)), jnp.tanh),
     r"^multi_head_sum: `x` must be one unbatched input of shape \(n,\)"),
    (lambda: multi_head_affine_sum(_X32[0], jnp.ones((2, 3, 4)), jnp.zeros((2, 3)),
                                   jnp.ones((2, 5, 2)), jnp.zeros((2, 5)), jnp.tanh),
     r"^multi_head_affine_sum: `w_out` must be of shape \(h, m, k\) = \(2, m, 3\)"),
]


@pytest.mark.parametrize("call,match", _SHAPE_ERRORS)
def test_operations_check_shapes_by_name(call, match, library_checks_only):
    """Static shape checks before the einsums: the argument and its expected shape are
    named (not an einsum label), also under jit."""
    with pytest.raises(ValueError, match=match):
        call()
    with pytest.raises(ValueError, match=match):
        jax.jit(call)()


def test_operations_of_valid_shapes_match_numpy():
    r = rng(4)
    q, k, v = r.normal(size=(3, 4)), r.normal(size=(5, 4)), r.normal(size=(5, 2))
    b = np.linalg.qr(r.normal(size=(4, 4)))[0]
    keep = (r.random(size=(6, 4)) > 0.5).astype(float)
    w, bias, x = r.normal(size=(2, 3, 4)), r.normal(size=(2, 3)), r.normal(size=4)
    with X64():
        np.testing.assert_allclose(
            tf.softmax_attention(jnp.asarray(q), jnp.asarray(k), jnp.asarray(v)),
            np_softmax(q @ k.T / 2.0) @ v, rtol=1e-12)
        np.testing.assert_allclose(
            tf.rotated_dropout(jnp.asarray(_X), jnp.asarray(b), jnp.asarray(keep), 0.5),
            ((keep * (_X @ b.T)) @ b) / 0.5, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(
            tf.multi_head_sum(jnp.asarray(x), jnp.asarray(w), jnp.asarray(bias), jnp.tanh),
            np.tanh(np.einsum("hmn,n->hm", w, x) + bias).sum(0), rtol=1e-12)


# ============================================================================ no features
@pytest.mark.parametrize("dtype", [jnp.float16, jnp.float32])
@pytest.mark.parametrize("shape", [(3, 0), (0,)])
def test_quasi_isotropic_of_no_features_is_empty(shape, dtype):
    y = tf.quasi_isotropic(jnp.zeros(shape, dtype))
    assert y.shape == shape and y.dtype == dtype


@pytest.mark.parametrize("attention", [tf.softmax_attention, tf.isotropic_tanh_attention])
def test_attention_of_no_features_is_refused_by_axis(attention, library_checks_only):
    """The scores QKᵀ/√d are undefined for d = 0 (0/0), and the output (t, v) is not
    empty: a clear error naming the feature axis d."""
    with pytest.raises(ValueError, match=r"the feature axis d of `query` and `key`.*>= 1"):
        attention(jnp.zeros((6, 0)), jnp.ones((5, 0)), jnp.ones((5, 2)))


# ============================================================================ γ and β
_NORMALISERS = {
    "layer_norm": lambda x, g, b: tf.layer_norm(x, g, b),
    "rms_norm": lambda x, g, b: tf.rms_norm(x, g),
    "group_norm": lambda x, g, b: tf.group_norm(x, g, b, 2),
    "instance_norm": lambda x, g, b: tf.instance_norm(x, g, b),
    "batch_norm": lambda x, g, b: tf.batch_norm(x, g, b),
    "chi_norm": lambda x, g, b: tf.chi_norm(x, g, b),
    "batch_apply": lambda x, g, b: batch_apply(x, jnp.zeros(4), jnp.ones(4), g, b),
    "chi_apply": lambda x, g, b: tf.chi_apply(x, jnp.zeros(4), 2.0, g, b),
    "magnitude_normalise": lambda x, g, b: tf.magnitude_normalise(x, 2.0, g, b),
}


@pytest.mark.parametrize("who", list(_NORMALISERS))
def test_normalisers_take_gamma_and_beta_as_array_likes(who):
    """Lists and NumPy arrays give what the same values as JAX arrays give."""
    f = _NORMALISERS[who]
    g, b = [0.5, 1.0, 1.5, 2.0], [-1.0, 0.0, 0.5, 1.0]
    ref = np.asarray(f(_X32, jnp.asarray(g), jnp.asarray(b)))
    for gamma, beta in ((g, b), (np.asarray(g), np.asarray(b))):
        np.testing.assert_allclose(f(_X32, gamma, beta), ref, rtol=1e-6, atol=1e-6)


def test_list_parameters_match_numpy_float64():
    g, b = [0.5, 1.0, 1.5, 2.0], [-1.0, 0.0, 0.5, 1.0]
    with X64():
        x = jnp.asarray(_X)
        np.testing.assert_allclose(tf.layer_norm(x, g, b), np_layer_norm(_X, np.asarray(g),
                                                                         np.asarray(b)),
                                   rtol=1e-12)
        np.testing.assert_allclose(
            tf.rms_norm(x, g), np.asarray(g) * _X / np.sqrt((_X * _X).mean(-1, keepdims=True)),
            rtol=1e-12)
        np.testing.assert_allclose(tf.simple_isotropic_layer_norm(x, 2.0, b),
                                   2.0 * _X / np.linalg.norm(_X, axis=-1, keepdims=True)
                                   + np.asarray(b), rtol=1e-12)


@pytest.mark.parametrize("who,name", [(who, name) for who in _NORMALISERS
                                      for name in ("gamma", "beta")
                                      if (who, name) != ("rms_norm", "beta")])
def test_normalisers_refuse_none_and_complex_gamma_and_beta(who, name, library_checks_only):
    """None, and a complex γ or β (whose imaginary part chi_norm dropped and the others
    turned into a complex output), are refused by name."""
    f = _NORMALISERS[who]
    for bad, what in ((None, "None"), (jnp.full(4, 1 + 1j, jnp.complex64), "complex64"),
                      (np.full(4, 1 + 1j), "complex128")):
        args = {"gamma": 1.0, "beta": 0.0, name: bad}
        with pytest.raises(TypeError, match=rf"^{who}: `{name}` must be a real .*{what}"):
            f(_X32, args["gamma"], args["beta"])


def test_simple_isotropic_layer_norm_refuses_none(library_checks_only):
    with pytest.raises(TypeError, match=r"^simple_isotropic_layer_norm: `beta`.*None"):
        tf.simple_isotropic_layer_norm(_X32, 1.0, None)


# ============================================================================ lattice
@pytest.mark.parametrize("call,err,match", [
    (lambda: tf.lattice_directions("foo", 4), ValueError,
     r"^`kind` must be 'cubic', 'simplex' or 'polygon', got 'foo'"),
    (lambda: tf.lattice_directions(None, 4), ValueError, r"^`kind` must be"),
    (lambda: tf.lattice_directions("cubic", 4, -1), ValueError,
     r"`k` .*only applies to kind='polygon', got k=-1"),
    (lambda: tf.lattice_directions("simplex", 3, 2.5), ValueError,
     r"`k` .*only applies to kind='polygon', got k=2.5"),
    (lambda: tf.lattice_directions("cubic", 4, 4), ValueError, r"`k` .*only applies"),
    (lambda: tf.lattice_directions("polygon", 2, -1), ValueError,
     r"`k` must be an integer >= 3, got -1"),
    (lambda: tf.lattice_directions("polygon", 2, 2.5), TypeError,
     r"`k` must be an integer >= 3, got 2.5"),
])
def test_lattice_directions_name_kind_and_k(call, err, match, library_checks_only):
    with pytest.raises(err, match=match):
        call()


def test_lattice_directions_of_valid_arguments():
    np.testing.assert_array_equal(tf.lattice_directions("cubic", 2, None),
                                  [[1, 0], [0, 1], [-1, 0], [0, -1]])
    t = 2 * np.pi * np.arange(5) / 5
    np.testing.assert_allclose(tf.lattice_directions("polygon", 2, 5),
                               np.stack([np.cos(t), np.sin(t)], -1))


# ============================================================================ mu_dtype
@pytest.mark.parametrize("bad", [True, "0.5", 1.5, np.ones(2), jnp.ones(2), np.float32(0.5),
                                 jnp.int32, "int8"])
def test_mu_dtype_is_refused_by_name(bad, library_checks_only):
    for make in (lambda: optim.adasgd(0.1, mu_dtype=bad),
                 lambda: optim.scale_by_adasgd(mu_dtype=bad)):
        with pytest.raises(ValueError, match=r"`mu_dtype` must be None or a floating dtype, "
                                             r"got "):
            make()


@pytest.mark.parametrize("good", [None, jnp.bfloat16, "float32", jnp.dtype("float16")])
def test_mu_dtype_accepts_floating_dtypes(good):
    params = {"a": jnp.ones(3)}
    state = optim.scale_by_adasgd(mu_dtype=good).init(params)
    leaves = [leaf for leaf in jax.tree.leaves(state) if getattr(leaf, "shape", ()) == (3,)]
    expect = jnp.float32 if good is None else jnp.dtype(good)
    assert any(leaf.dtype == expect for leaf in leaves)
