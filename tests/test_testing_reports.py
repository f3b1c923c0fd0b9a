"""What `check` reports: shrunk counterexamples, cells that cannot be checked, validated
arguments, closure cells of classes with one member, and witnesses for trivial closure
cells."""

import math
from typing import ClassVar

import equinox as eqx
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _models import equivariant_taxonomy

import taxdl.nn as tnn
import taxdl.testing.strategies as ts
from taxdl import AbstractPrimitive, Taxonomy
from taxdl.groups import Orthogonal, Permutation, SignedPermutation
from taxdl.taxonomy import Flavour, reinitialise, transport
from taxdl.testing import SymmetryViolation, assert_algebraic, assert_probabilistic, check

FAST = dict(examples=8, batch=32)


class CumsumClaimedPermutation(AbstractPrimitive):
    """Negative control: a cumulative sum declared Sₙ-equivariant."""

    taxonomy: ClassVar[Taxonomy] = equivariant_taxonomy(Permutation())

    def __call__(self, x, *, key=None):
        return jnp.cumsum(x)


def _violates_cumsum(ce) -> bool:
    m, x = np.asarray(ce.matrix, np.float64), np.asarray(ce.inputs[0], np.float64)
    lhs, rhs = np.cumsum(m @ x), m @ np.cumsum(x)
    return np.max(np.abs(lhs - rhs)) > 1e-3 * max(np.linalg.norm(lhs), np.linalg.norm(rhs))


# ---------------------------------------------------------------- shrunk counterexamples
def test_reported_counterexample_is_the_shrunk_drawn_input():
    """The failing example is the Hypothesis-drawn input, shrunk: random rows (Gaussian
    directions, log-uniform scales) never have integer coordinates, shrunk inputs do."""
    with pytest.raises(SymmetryViolation) as info:
        check(CumsumClaimedPermutation(), n=6, examples=20, maximality=False)
    ce = info.value.counterexample
    x = np.asarray(ce.inputs[0], np.float64)
    assert np.all(x == np.round(x)) and np.max(np.abs(x)) <= 2, x
    assert _violates_cumsum(ce)
    assert f"input x = {np.array2string(x, precision=4)}" in str(info.value)


def test_a_violation_only_random_rows_see_is_reported_shrunk(monkeypatch):
    """When no drawn input fails (here all are zero, where a cumulative sum commutes with
    every permutation), the violated random row is reported with its input shrunk for
    the same group element: few non-zero coordinates, each ±1."""
    monkeypatch.setattr(ts, "argument_inputs", lambda shapes, dtype, **kw: st.just(
        tuple(np.zeros(s, dtype) for s in shapes)))
    with pytest.raises(SymmetryViolation) as info:
        check(CumsumClaimedPermutation(), n=6, examples=20, maximality=False)
    ce = info.value.counterexample
    x = np.asarray(ce.inputs[0], np.float64)
    assert np.count_nonzero(x) <= 2 and set(np.abs(x[x != 0])) == {1.0}, x
    assert _violates_cumsum(ce)


# ---------------------------------------------------------------- arguments
@pytest.mark.parametrize("name,value", [("n", 0), ("n", True), ("samples", 0),
                                        ("test_elements", 0), ("data_batch", 0),
                                        ("members", -1)])
def test_run_sizes_outside_their_range_are_rejected(name, value):
    kwargs = {"n": 4, **FAST, name: value}
    with pytest.raises(ValueError, match=f"`{name}`.*integer >="):
        check(tnn.Tanh(), **kwargs)


def test_too_few_samples_to_ever_reject_are_rejected():
    """With s samples per side the smallest Kolmogorov–Smirnov p-value is that of
    complete separation (D = 1), exactly 2/C(2s, s) under the null; when it is not below
    alpha/(probes × elements) no probabilistic cell could fail. The error names the
    smallest sufficient count (the checker's asymptotic p-values bracket the exact ones
    within two steps of s)."""
    with pytest.raises(ValueError, match="`samples` = 8 is too few") as info:
        check(tnn.LayerNorm(4), n=4, samples=8, **FAST)
    enough = int(str(info.value).split("at least ")[1].rstrip("."))
    from taxdl.testing._stats import PROBE_COUNT

    threshold = 1e-3 / (PROBE_COUNT * 3)  # alpha / (probes × test elements)
    exact = [2 / math.comb(2 * s, s) for s in (enough - 2, enough)]
    assert exact[1] < threshold < exact[0]
    check(tnn.LayerNorm(4), n=4, samples=enough, raise_on_failure=False, **FAST)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_alpha_outside_the_open_unit_interval_is_rejected(alpha):
    with pytest.raises(ValueError, match=r"`alpha`.*\(0, 1\)"):
        check(tnn.Tanh(), n=4, alpha=alpha, **FAST)
    with pytest.raises(ValueError, match=r"`alpha`.*\(0, 1\)"):
        assert_probabilistic(tnn.IsotropicNormal(), Orthogonal(), "E", n=4, alpha=alpha)


def test_an_n_that_conflicts_with_the_primitives_own_dimension_is_rejected():
    """A primitive that fixes its input dimension (Linear(3, 3), LayerNorm(4)) is checked
    in that dimension: a different `n` is refused by name, and without `n` (or with the
    same one) the report's header shows the dimension the check ran in."""
    lin = tnn.Linear(3, 3, key=jax.random.key(0))
    with pytest.raises(ValueError, match="`n` = 5 conflicts with Linear's input dimension 3"):
        check(lin, n=5, **FAST)
    with pytest.raises(ValueError, match="`n` = 6 conflicts with .*input dimension 4"):
        check(tnn.LayerNorm(4), n=6, **FAST)
    for n in (None, 3):
        report = check(lin, n=n, generations="algebraic", maximality=False, **FAST)
        assert report.n == 3 and str(report).startswith("taxdl check Linear (n=3, float32)")


@pytest.mark.parametrize("generations, match", [
    ("algebriac", "`generations`: unknown generation 'algebriac'; expected one of "
                  "'closure', 'probabilistic', 'algebraic'"),
    (["algebraic", 3], "`generations`: unknown generation 3"),
    ((), "`generations` selects no generation"),
    ([], "`generations` selects no generation"),
])
def test_generations_are_validated_by_name(generations, match):
    with pytest.raises(ValueError, match=match):
        check(tnn.Tanh(), n=4, generations=generations, **FAST)


def test_a_plain_function_is_refused_as_carrying_no_taxonomy():
    """A plain function is not a zero-argument factory: it is not called, and the error
    points to the assertions that take plain functions."""
    for f in (jnp.tanh, lambda x: x / (1 + jnp.abs(x))):
        with pytest.raises(TypeError, match="carries no taxonomy.*assert_algebraic"):
            check(f, n=4, **FAST)
    # a zero-argument factory is still called, and what it returns is checked
    report = check(lambda: tnn.Tanh(), n=4, generations="algebraic", maximality=False,
                   **FAST)
    assert report.passed and report.primitive == "Tanh"


@pytest.mark.parametrize("key", [0, np.uint32(7), "seed", jax.random.split(jax.random.key(0))])
def test_key_must_be_one_prng_key(key):
    with pytest.raises(TypeError, match="`key` must be a JAX PRNG key"):
        check(tnn.Tanh(), n=4, key=key, **FAST)
    with pytest.raises(TypeError, match="`key` must be a JAX PRNG key"):
        assert_algebraic(jnp.tanh, SignedPermutation(), "E", n=4, key=key, examples=2)


def test_legacy_uint32_keys_are_accepted():
    report = check(tnn.Tanh(), n=4, key=jax.random.PRNGKey(3), generations="algebraic",
                   maximality=False, **FAST)
    assert report.passed


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16, jnp.int32, jnp.complex64,
                                   "float8"])
def test_dtype_must_be_float32_or_float64(dtype):
    with pytest.raises(TypeError, match="`dtype` must be float32 or float64"):
        check(tnn.Tanh(), n=4, dtype=dtype, **FAST)
    # (a dtype that is not floating at all is refused as such first)
    floating = dtype in (jnp.float16, jnp.bfloat16, jnp.complex64)
    with pytest.raises(TypeError, match="`dtype` must be float32 or float64" if floating
                       else "`dtype` must be a floating-point dtype"):
        assert_algebraic(jnp.tanh, SignedPermutation(), "E", n=4, dtype=dtype, examples=2)


# ---------------------------------------------------------------- missing hooks
class GainTanh(AbstractPrimitive):
    """γ ⊙ tanh(x) with a parameter γ and no `reinitialise` or `transport` hook."""

    gamma: jax.Array
    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(None, None, SignedPermutation()),
        probabilistic=(None, None, SignedPermutation()))

    def __init__(self, n: int = 6):
        self.gamma = jax.random.normal(jax.random.key(1), (n,))

    def __call__(self, x, *, key=None):
        return self.gamma * jnp.tanh(x)


class GainTanhClaimedOrthogonal(GainTanh):
    """The same class, also (wrongly) declared algebraically O(n)-equivariant."""

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(None, None, Orthogonal()), probabilistic=(None, None, Orthogonal()),
        algebraic=(None, None, Orthogonal()))


def test_a_missing_hook_does_not_hide_a_violation():
    with pytest.raises(SymmetryViolation) as info:
        check(GainTanhClaimedOrthogonal(), n=6, **FAST)
    report = info.value.report
    assert info.value.cell.generation == "algebraic" and "does not hold" in str(info.value)
    assert report.cell("algebraic", "E").status == "failed"
    for generation, hook in (("probabilistic", "reinitialise"), ("closure", "transport")):
        cell = report.cell(generation, "E")
        assert cell.status == "not checkable" and not cell.passed
        assert f"taxdl.taxonomy.{hook}.register(GainTanhClaimedOrthogonal)" in cell.note
    assert "NOT CHECKABLE probabilistic E O(n)" in str(report)


def test_missing_hooks_alone_raise_not_implemented_with_the_report():
    with pytest.raises(NotImplementedError, match="reinitialise.register") as info:
        check(GainTanh(), n=6, maximality=False, **FAST)
    assert "NOT CHECKABLE closure E B_n" in str(info.value)
    report = check(GainTanh(), n=6, maximality=False, raise_on_failure=False, **FAST)
    assert not report.passed
    assert {c.status for c in report.failures} == {"not checkable"}
    with pytest.raises(NotImplementedError, match="reinitialise"):
        assert_probabilistic(GainTanh(), SignedPermutation(), "E", n=6)


# ---------------------------------------------------------------- classes with one member
def test_parameter_free_chain_reduces_closure_to_the_algebraic_relation():
    """A chain of parameter-free parts is one function, whatever its `transport` hook
    (the chain's own): its closure cells are its algebraic ones, maximality included,
    as for each part alone."""
    report = check(tnn.Sequential([tnn.Tanh(), tnn.IsotropicTanh()]), n=8, **FAST)
    for flavour in "LR":
        cell = report.cell("closure", flavour)
        assert cell.status == "passed" and cell.maximality
        assert all(m.found for m in cell.maximality)
    cell = report.cell("closure", "E")
    assert cell.note == "same relation as the algebraic cell"
    assert all(m.found for m in cell.maximality)


def test_a_transport_that_moves_hidden_randomness_keeps_the_closure_relation():
    """Dropout has no parameters, but its transport moves its mask: its class has many
    members, and its closure E cell is checked through the hook."""
    report = check(tnn.Dropout(0.5), n=6, generations=("closure",), maximality=False,
                   **FAST)
    cell = report.cell("closure", "E")
    assert cell.status == "passed" and cell.checks and "same relation" not in cell.note


# ---------------------------------------------------------------- wording
class TanhClaimedPermutation(AbstractPrimitive):
    taxonomy: ClassVar[Taxonomy] = equivariant_taxonomy(Permutation())

    def __call__(self, x, *, key=None):
        return jnp.tanh(x)


def test_undeclarable_probabilistic_supergroup_is_worded_without_contradiction():
    # (an odd n: for even n, −I ∈ Dₙ and Dₙ holds {±I} × Sₙ, tested in its place)
    report = check(TanhClaimedPermutation(), n=5, raise_on_failure=False, **FAST)
    assert report.cell("closure", "E").status == "not maximal"
    cell = report.cell("probabilistic", "E")
    assert cell.status == "passed"
    [line] = [str(m) for m in cell.maximality if m.group == "D_5"]
    assert line.startswith("D_5: holds too (no counterexample), but is not declarable")
    assert "closure cell S_n" in line and "itself reported as possibly not maximal" in line
    assert "no counterexample, but holds" not in str(report)


# ---------------------------------------------------------------- trivial closure cells
class ScaledTanh(AbstractPrimitive):
    """γ ⊙ tanh(x): closed under sign flips of the input (γ ⊙ tanh(Dx) = (Dγ) ⊙ tanh(x)),
    but its closure R cell is declared trivial."""

    gamma: jax.Array
    taxonomy: ClassVar[Taxonomy] = Taxonomy(closure=(None, None, SignedPermutation()))

    def __init__(self, n: int = 4):
        self.gamma = jax.random.normal(jax.random.key(2), (n,))

    def __call__(self, x, *, key=None):
        return self.gamma * jnp.tanh(x)


@reinitialise.register
def _(prim: ScaledTanh, key):
    return eqx.tree_at(lambda p: p.gamma, prim, jax.random.normal(key, prim.gamma.shape))


@transport.register
def _(prim: ScaledTanh, flavour, element, group):
    m = element.matrix.astype(prim.gamma.dtype)
    if Flavour(flavour) is Flavour.EQUIVARIANT:  # (PD)⁻¹(γ ⊙ tanh(PDx)) = |P|ᵀγ ⊙ tanh(x)
        return eqx.tree_at(lambda p: p.gamma, prim, jnp.abs(m).T @ prim.gamma)
    raise NotImplementedError("only the E cell is declared")


def test_trivial_closure_cells_are_searched_for_witnesses_with_fit_closure():
    prim = ScaledTanh()
    quiet = check(prim, n=4, generations=("closure",), **FAST)
    assert quiet.cell("closure", "R").status == "skipped"
    assert "fit_closure=True" in quiet.cell("closure", "R").note
    report = check(prim, n=4, generations=("closure",), fit_closure=True,
                   raise_on_failure=False, **FAST)
    cell = report.cell("closure", "R")
    assert cell.status == "not maximal"
    witnessed = {m.group for m in cell.maximality if m.found is False}
    assert "±I_4" in witnessed  # γ ⊙ tanh(−x) = (−γ) ⊙ tanh(x)
    assert all(m.note.startswith("witness") for m in cell.maximality if m.found is False)


def test_a_reported_translation_is_the_one_applied():
    """The engine scales a sampled shift to the input's magnitude; the counterexample
    shows the scaled one, so f(x + t) reproduces its left-hand side."""
    from taxdl.groups import Translations

    t_n = Translations()

    class ShiftedTanh(AbstractPrimitive):
        taxonomy = Taxonomy(closure=(None, t_n, None), probabilistic=(None, t_n, None),
                            algebraic=(None, t_n, None))

        def __call__(self, x, *, key=None):
            return jnp.tanh(x)

    with pytest.raises(SymmetryViolation) as info:
        check(ShiftedTanh(), n=3)
    ce = info.value.counterexample
    x = np.asarray(ce.inputs[0], np.float64)
    np.testing.assert_allclose(np.asarray(ce.lhs), np.tanh(x + np.asarray(ce.shift)),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ce.rhs), np.tanh(x), rtol=1e-5, atol=1e-6)


def test_a_distance_that_is_zero_in_every_draw_is_jittered_at_the_outputs_scale():
    # f(x) = f(x') for every draw (a scale-invariant map at two inputs on one ray): the
    # distance is a point mass at 0, and a transformed draw that moves both inputs by
    # rounding leaves ~1e-7 of the outputs; that is not a different law, while a distance
    # of 5% of the outputs is
    from taxdl.testing._stats import (INPUT_NAMES, PROBE_COUNT, PROBE_NAMES, _probe_label,
                                      two_sample_test)

    rng = np.random.default_rng(0)
    n = 1024
    base = rng.standard_normal((n, PROBE_COUNT))
    # ‖f(x) − f(x')‖ of the last pair (x, x/4), after the per-input probes
    dist = len(INPUT_NAMES) * len(PROBE_NAMES) + 7
    assert _probe_label(dist, PROBE_COUNT).startswith("‖f(x) − f(x')‖")
    norms = [i * 5 + 3 for i in (1, 3)]  # ‖f(x)‖ at both inputs of that pair
    base[:, norms] = 1 + 0.1 * rng.random((n, 2))
    base[:, dist] = 0.0
    rounding, real = base.copy()[None], base.copy()[None]
    rounding[0, :, dist] = 1e-7 * rng.random(n)
    real[0, :, dist] = 0.05 * rng.random(n)
    assert not two_sample_test(base, rounding, 1e-3, np.random.default_rng(1)).rejected
    out = two_sample_test(base, real, 1e-3, np.random.default_rng(1))
    assert out.rejected and out.probe.startswith("‖f(x) − f(x')‖")


def test_a_cosine_that_is_one_value_near_zero_is_jittered_on_its_own_scale():
    # An orthogonal map at two fixed inputs: cos∠(f(x), f(x')) is the same number in every
    # draw (here 6e-4) up to float32 rounding (~1e-7, absolute), which for a transformed
    # draw (one fixed element's products) is offset by ~1.5e-7; that is not a different
    # law, while a cosine spread by 0.05 is
    from taxdl.testing._stats import (INPUT_NAMES, PROBE_COUNT, PROBE_NAMES, _probe_label,
                                      two_sample_test)

    rng = np.random.default_rng(0)
    n = 1024
    base = rng.standard_normal((n, PROBE_COUNT))
    cos = len(INPUT_NAMES) * len(PROBE_NAMES)  # cos∠(f(x), f(x')) of the first pair
    assert _probe_label(cos, PROBE_COUNT).startswith("cos∠(f(x), f(x'))")
    base[:, cos] = 6.2e-4 + 5e-8 * rng.standard_normal(n)
    rounding, real = base.copy()[None], base.copy()[None]
    rounding[0, :, cos] = 6.2e-4 + 1.5e-7 + 1.2e-7 * rng.standard_normal(n)
    real[0, :, cos] = 6.2e-4 + 0.05 * rng.standard_normal(n)
    assert not two_sample_test(base, rounding, 1e-3, np.random.default_rng(1)).rejected
    out = two_sample_test(base, real, 1e-3, np.random.default_rng(1))
    assert out.rejected and out.probe.startswith("cos∠(f(x), f(x'))")


class KeyedDropout(AbstractPrimitive):
    """A random primitive whose call needs `key`, without an `as_function` hook."""

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(None, None, Orthogonal()), probabilistic=(None, None, Orthogonal()),
        kind="time")

    def __call__(self, x, *, key=None):
        return jax.random.bernoulli(key, 0.5, x.shape) * x * 2


def test_a_random_primitive_without_as_function_names_the_hook():
    with pytest.raises(NotImplementedError, match="taxdl.taxonomy.as_function") as info:
        check(KeyedDropout(), n=4, **FAST)
    assert "KeyedDropout" in str(info.value)


@pytest.mark.parametrize("tol", [dict(atol=math.nan), dict(rtol=math.nan), dict(atol=math.inf),
                                 dict(rtol=-1.0)])
def test_tolerances_must_be_finite_and_non_negative(tol):
    """A NaN or infinite tolerance would let every relation pass, a negative one fail."""
    name = next(iter(tol))
    with pytest.raises(ValueError, match=f"`{name}` must be a finite number >= 0"):
        check(tnn.Tanh(), n=3, **tol)


def test_inputs_the_primitive_rejects_raise_its_own_error():
    """A dimension the primitive refuses (7 channels for cones of 4) is the user's input
    error, reported with the primitive's message, not as a missing hook."""
    with pytest.raises(ValueError, match="shapes \\(\\(7,\\),\\).*divisible") as info:
        check(tnn.CoLU(cone_dim=4), n=7, **FAST)
    assert "as_function" not in str(info.value)


def test_a_probabilistic_cell_left_open_suggests_more_samples():
    """Asymmetric truncation: i.i.d. skewed weights whose law moves under the rotations
    fixing the all-ones vector only in odd moments. 1024 samples per side leave Sₙ's
    maximality open, and the message says what to do (4096 settle it: the conformance
    table's row)."""
    import jax

    import taxdl.nn as tnn
    from taxdl.testing import check

    with pytest.raises(Exception, match=r"may not be maximal.*A weak difference in law can "
                                        r"pass unseen with 1024 random functions per side: "
                                        r"check again with more \(e.g. `samples=4096`\)"):
        check(tnn.TruncatedNormal(1.0, -2.0, 1.0), n=6, key=jax.random.key(0),
              generations="probabilistic")
