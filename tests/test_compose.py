"""Taxonomy inference for composed models against hand-derived expectations."""

import dataclasses
import warnings
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _models import np_chain

import taxdl
import taxdl.nn as tnn
from taxdl.groups import (
    GL,
    SO,
    B,
    ConformalLinear,
    D,
    Element,
    O,
    OrthogonalComplement,
    Permutation,
    Product,
    ScaleShift,
    Scaling,
    Translation,
    Trivial,
    linear_element,
    same_group,
)
from taxdl.taxonomy import (
    RULES,
    AbstractLayer,
    AbstractPrimitive,
    CompositionWarning,
    GENERATIONS,
    Flavour,
    Generation,
    Taxonomy,
    meet,
    reinitialise,
    signature,
    transport,
)
from taxdl.taxonomy._compose import (Part, _joins, _linear_part, _meets, compose, part,
                                     residual)
from taxdl.testing import SymmetryViolation, check

N = 6


def cells(obj) -> list[str]:
    t = taxdl.taxonomy(obj)
    return [t.cell(g, f).name for g in ("closure", "probabilistic", "algebraic")
            for f in "LRE"]


def lin(n=N, m=None, seed=0):
    return tnn.Linear(n, m or n, key=jax.random.key(seed))


# ---------------------------------------------------------------- group lattice
@pytest.mark.parametrize("a, b, expected", [
    (B(), OrthogonalComplement(), "S_n"),   # signed permutations fixing 1 are permutations
    (SO(), B(), "I_n"),                     # not a family of the hierarchy: sound fallback
    (O(), GL(), "O(n)"),
    (D(), B(), "D_n"),
    (ScaleShift(positive=True), Scaling(), "ℝ×₊"),
    (Translation(), Permutation(), "I_n"),
])
def test_meet(a, b, expected):
    assert meet(a, b).name == expected
    assert meet(b, a).name == expected


def test_linear_part_drops_translations():
    assert _linear_part(ScaleShift()).name == "ℝ×"
    assert _linear_part(Translation()).name == "I_n"
    assert _linear_part(O()).name == "O(n)"


def test_rules_table_is_complete():
    names = {r.name for r in RULES}
    assert names == {"outer-left", "commute-left", "inner-right", "commute-right",
                     "both-equivariant", "sandwich"}
    for flavour in Flavour:
        assert any(r.flavour is flavour for r in RULES)


# ---------------------------------------------------------------- hand-derived rows
def test_composed_row_of_table_5_2():
    # σ(Wx + b) with σ elementwise and algebraically G-equivariant: closure G/Aff/G,
    # probabilistic G∩O / O / G∩O, algebraic trivial (Table 5.2 with G = Sₙ for ReLU;
    # tanh is odd, so G = Bₙ). Closure R is Aff(n), not the paper's GL(n): an input map
    # x ↦ Ax + t is absorbed by W ↦ WA, b ↦ Wt + b.
    assert cells(tnn.Sequential([lin(), tnn.Tanh()])) == [
        "B_n", "Aff(n)", "B_n", "B_n", "O(n)", "B_n", "I_n", "I_n", "I_n"]
    assert cells(tnn.Sequential([lin(), tnn.IsotropicTanh()])) == [
        "O(n)", "Aff(n)", "O(n)", "O(n)", "O(n)", "O(n)", "I_n", "I_n", "I_n"]


def test_composed_row_matches_the_catalogue_for_relu():
    # Linear then ReLU is exactly the "Composed" row of Table 5.2 (the catalogue's
    # ElementwiseDense); its closure L/E cells include the positive per-unit scalings
    # that ReLU commutes with, and its probabilistic E cell the positive scalars (the
    # zero initial bias keeps it positively homogeneous; the paper gives Sₙ for both).
    relu = getattr(tnn, "ReLU", None)
    if relu is None:
        pytest.skip("ReLU not available")
    seq = tnn.Sequential([lin(), relu()])
    assert cells(seq) == cells(tnn.ElementwiseDense(N, N, key=jax.random.key(0))) == [
        "S_n⋉(ℝ×₊)^n", "Aff(n)", "S_n⋉(ℝ×₊)^n", "S_n", "O(n)", "ℝ×₊ × S_n", "I_n", "I_n",
        "I_n"]


def test_chain_of_square_maps_intersects_equivariance():
    # Bₙ ∩ O(n) = Bₙ; Bₙ ∩ O(n−1) = Sₙ.
    assert taxdl.taxonomy(tnn.Sequential([tnn.Tanh(), tnn.IsotropicTanh()])).cell(
        "algebraic", "E").name == "B_n"
    seq = tnn.Sequential([tnn.ScalarLayerNorm(N), tnn.Tanh()])
    t = taxdl.taxonomy(seq)
    assert t.cell("algebraic", "E").name == "S_n"
    # the normaliser's right invariance survives (inner-right rule)
    assert t.cell("algebraic", "R").name == "ℝ×₊,+λ1"
    assert t.cell("algebraic", "L").name == "I_n"


def test_affine_sandwich_is_affine_equivariant_in_closure():
    # g⁻¹∘(W₂σ(W₁x + b₁) + b₂)∘g for g(x) = Ax + t: W₁ ↦ W₁A, b₁ ↦ W₁t + b₁ inside and
    # W₂ ↦ A⁻¹W₂, b₂ ↦ A⁻¹(b₂ − t) outside, so every closure cell is Aff(n).
    t = taxdl.taxonomy(tnn.Sequential([lin(), tnn.Tanh(), lin(seed=1)]))
    assert cells(t_obj := tnn.Sequential([lin(), tnn.Tanh(), lin(seed=1)])) == [
        "Aff(n)", "Aff(n)", "Aff(n)", "O(n)", "O(n)", "O(n)", "I_n", "I_n", "I_n"]
    assert t == taxdl.taxonomy(t_obj)


def test_meets_follow_a_rule_registered_after_the_first_composition():
    # a user's family joining the hierarchy later is a candidate of the meets too
    from taxdl.groups import PointReflection, Trivial, immediate_supergroups
    from taxdl.taxonomy._compose import _hierarchy

    class HalfTurn(PointReflection):  # −I under another name: a family of its own
        pass

    meet(O(), Scaling())  # the hierarchy is built once here (the meet is {±I})
    assert not any(isinstance(g, HalfTurn) for g in _hierarchy())
    trivial_rule = immediate_supergroups.dispatch(Trivial)
    try:
        immediate_supergroups.register(Trivial)(
            lambda g: trivial_rule(g) + (HalfTurn(g.n),))
        immediate_supergroups.register(HalfTurn)(lambda g: (O(g.n), Scaling(g.n)))
        assert any(isinstance(g, HalfTurn) for g in _hierarchy())
        assert any(isinstance(g, HalfTurn) for g in _meets(O(), Scaling()))
    finally:
        immediate_supergroups.register(Trivial)(trivial_rule)
    assert not any(isinstance(g, HalfTurn) for g in _hierarchy())


def test_rectangular_chain_keeps_its_scalar_equivariance():
    # between different dimensions only scalars act on both sides. With biases and tanh:
    # a⁻¹f(ax) is an MLP again (W₁ ↦ aW₁, W₂, b₂ ↦ W₂/a, b₂/a: closure ℝ×), and with
    # symmetric weights and a zero initial bias f(−x) has the law of −f(x) (±I).
    t = taxdl.taxonomy(tnn.MLP(3, [5], 2, activation="Tanh", key=jax.random.key(0)))
    assert [t.cell(g, "E").name for g in ("closure", "probabilistic", "algebraic")] == [
        "ℝ×", "±I_n", "I_n"]
    assert t.cell("closure", "E").out is not None  # paired with the output's scalars
    assert t.cell("closure", "L").name == "Aff(n)"  # the last layer's bias takes t
    # bias-free ReLU layers: positively homogeneous, f(ax) = af(x) for a > 0 (algebraic)
    relu = tnn.MLP(3, [5, 4], 2, use_bias=False, key=jax.random.key(1))
    t = taxdl.taxonomy(relu)
    assert [t.cell(g, "E").name for g in ("closure", "probabilistic", "algebraic")] == [
        "ℝ×", "ℝ×", "ℝ×₊"]
    x = np.random.default_rng(0).normal(size=3)
    f = lambda v: np.asarray(relu(jnp.asarray(v, jnp.float32)), np.float64)  # noqa: E731
    np.testing.assert_allclose(f(2.5 * x), 2.5 * f(x), rtol=1e-5, atol=1e-6)
    assert not np.allclose(f(-x), -f(x), atol=1e-3)  # not odd: ℝ×₊ is maximal


class _HalfRelu(AbstractPrimitive):
    """ℝ⁶ → ℝ³, relu(x[:3]) − ½ relu(x[3:]): positively homogeneous, not odd."""

    taxonomy: ClassVar[Taxonomy]

    def __call__(self, x, *, key=None):
        return jax.nn.relu(x[:3]) - 0.5 * jax.nn.relu(x[3:])


def _half_relu(e_cell):
    cls = type("HalfRelu", (_HalfRelu,), {
        "taxonomy": Taxonomy(closure=(None, None, e_cell), probabilistic=(None, None, e_cell),
                             algebraic=(None, None, e_cell))})
    return cls()


def test_scalar_cells_of_a_map_between_dimensions_are_checked_and_maximal():
    # ℝ×₊ holds (paired with the output's scalars), ℝ× is refuted, and the trivial
    # cell is not maximal: the checker pairs aI₆ with aI₃
    report = check(_half_relu(Scaling(positive=True)), n=6, examples=4, batch=16)
    cell = report.cell("algebraic", "E")
    assert cell.status == "passed" and cell.checks > 0
    assert {m.group: m.found for m in cell.maximality}.get("ℝ×") is True
    with pytest.raises(SymmetryViolation, match="algebraic E ℝ×"):
        check(_half_relu(Scaling()), n=6, examples=4, batch=16, maximality=False)
    with pytest.raises(SymmetryViolation, match="may not be maximal") as info:
        check(_half_relu(None), n=6, examples=4, batch=16)
    assert "ℝ×₊" in {m.group for m in info.value.cell.maximality if m.found is False}
    # a composed bias-free ReLU model between dimensions passes with its inferred cells
    report = check(tnn.MLP(6, [7], 3, use_bias=False, key=jax.random.key(2)), examples=2,
                   samples=1024)
    assert report.cell("algebraic", "E").group == "ℝ×₊"
    assert report.cell("closure", "E").group == "ℝ×"


def test_residual_keeps_the_inner_equivariance():
    # closure: the Linear's bias absorbs any shift (b ↦ b + Wt), the odd tanh commutes with
    # signed permutations, and together they generate Bₙ⋉T(n)
    assert cells(tnn.Residual([lin(), tnn.Tanh()])) == [
        "I_n", "I_n", "B_n⋉T(n)", "I_n", "I_n", "B_n", "I_n", "I_n", "I_n"]
    assert cells(tnn.Residual(tnn.IsotropicTanh())) == [
        "I_n", "I_n", "O(n)", "I_n", "I_n", "O(n)", "I_n", "I_n", "O(n)"]


def test_residual_rule_removes_translations():
    """h(ax + t1) = a h(x) + t1 but h is not invariant to shifts: x + h(x) keeps the
    scalings only (a shift t becomes 2t in the output)."""
    from taxdl.groups import Trivial

    inner = Part({(g, f): (ScaleShift(),) if f is Flavour.EQUIVARIANT else (Trivial(),)
                  for g in taxdl.taxonomy.GENERATIONS for f in Flavour}, N, N, "h")
    out = residual(inner)
    assert out.taxonomy().cell("algebraic", "E").name == "ℝ×"
    assert out.taxonomy().cell("algebraic", "L").name == "I_n"


class BlockMean(taxdl.AbstractPrimitive):
    """x ↦ the mean of each block of 4 coordinates, repeated: h(ax + t) = a h(x) + t for a
    scale and a shift per block (algebraic E = (ℝ×, +λ1)^G)."""

    def __call__(self, x, *, key=None):
        return jnp.repeat(x.reshape(-1, 4).mean(axis=1), 4)

    @property
    def taxonomy(self):
        from taxdl.groups import BlockScaleShift

        g = BlockScaleShift(n=8, block=4)
        return Taxonomy(closure=(None, None, g), probabilistic=(None, None, g),
                        algebraic=(None, None, g))


def test_residual_of_block_scale_shift_drops_the_shifts():
    # x + h(x) with h(x + t) = h(x) + t gives x + t + h(x) + t: the block shifts are lost,
    # the common scale stays (h(ax) = a h(x)). Every element of the inferred group must
    # commute with f (checked in float64 against the formula, independent of the rules).
    block = tnn.Residual(BlockMean())
    group = taxdl.taxonomy(block).cell("algebraic", "E").group
    f = lambda x: x + np.repeat(x.reshape(-1, 4).mean(axis=1), 4)  # noqa: E731
    bound = group if group.bound else group.on(8)
    els = bound.sample(jax.random.key(0), 4, jnp.float32)
    x = np.random.default_rng(0).normal(size=8)
    for m, t in zip(np.asarray(els.matrix, np.float64), np.asarray(els.shift, np.float64)):
        np.testing.assert_allclose(f(m @ x + t), m @ f(x) + t, atol=1e-9)
    assert group.name == "ℝ×"


def test_rectangular_residual_is_rejected():
    with pytest.raises(ValueError, match="itself"):
        tnn.Residual(lin(N, N + 1))


def test_candidates_join_into_the_group_they_generate():
    # Closure L of LayerNorm ∘ Linear (vector γ, β): outer-left gives (ℝ×)ⁿ⋉ℝⁿ (absorbed
    # by γ, β) and commute-left gives LayerNorm's closure E ∩ Aff = (ℝ×,+λ1) × Sₙ. Both
    # hold, so the group they generate holds: Sₙ⋉(ℝ×)ⁿ⋉ℝⁿ (closure E likewise).
    t = taxdl.taxonomy(tnn.Sequential([lin(), tnn.LayerNorm(N)]))
    assert t.cell("closure", "L").name == "S_n⋉(ℝ×)^n⋉ℝ^n"
    assert t.cell("closure", "E").name == "S_n⋉(ℝ×)^n⋉ℝ^n"
    assert t.cell("probabilistic", "L").name == "±I_n × S_n"
    # independently: x ↦ PD(γ⊙z(Wx + b) + β) + t is the member (PW, Pb, PDγ, PDβ + t)
    rng = np.random.default_rng(0)
    w, b = rng.normal(size=(N, N)), rng.normal(size=N)
    gamma, beta = rng.normal(size=N), rng.normal(size=N)
    perm, d, shift = rng.permutation(N), rng.choice([-1, 1], N) * rng.uniform(0.5, 2, N), \
        rng.normal(size=N)

    def member(w, b, gamma, beta, x):
        v = w @ x + b
        return gamma * (v - v.mean()) / v.std() + beta

    x = rng.normal(size=N)
    moved = (d * member(w, b, gamma, beta, x))[perm] + shift
    np.testing.assert_allclose(member(w[perm], b[perm], (d * gamma)[perm],
                                      (d * beta)[perm] + shift, x), moved, rtol=1e-12)
    # the hidden units before the norm are then permutable (with a common scale/shift)
    sites = tnn.parameter_symmetries(
        tnn.MLP(N, [N], 2, activation="Tanh", norm="LayerNorm", key=jax.random.key(0)))
    assert sites[0].group.name == "ℝ×,+λ1 × S_n" and sites[1].group.name == "B_n"
    # and acting on them keeps the function (the transport splits a signed permutation
    # into sign flips, absorbed by γ and β, and a permutation, commuted through the norm)
    mlp = tnn.MLP(N, [N], 2, activation="Tanh", norm="LayerNorm", key=jax.random.key(1))
    mlp = eqx.tree_at(lambda m: (m.layers[1].gamma, m.layers[1].beta), mlp,
                      (jnp.asarray(rng.normal(size=N), jnp.float32),
                       jnp.asarray(rng.normal(size=N), jnp.float32)))
    for site in sorted(s.site for s in tnn.parameter_symmetries(mlp)):
        sym = next(s for s in tnn.parameter_symmetries(mlp) if s.site == site)
        g = sym.group.on(N).sample(jax.random.key(site), 1)
        moved = tnn.apply_hidden(mlp, site, Element(g.matrix[0], g.shift[0]))
        xs = jnp.asarray(rng.normal(size=(5, N)), jnp.float32)
        np.testing.assert_allclose(np.asarray(jax.vmap(moved)(xs)),
                                   np.asarray(jax.vmap(mlp)(xs)), rtol=2e-4, atol=2e-5)
        assert not np.allclose(np.asarray(moved.layers[0].weight),
                               np.asarray(mlp.layers[0].weight))
    # with scalar γ, β the two candidates ℝ×,+λ1 and (ℝ×,+λ1) × O(n−1) are nested: the
    # larger one is the cell and nothing is noted
    t = taxdl.taxonomy(tnn.Sequential([lin(), tnn.ScalarLayerNorm(N)]))
    assert t.cell("closure", "L").name == "ℝ×,+λ1 × O(n-1)"
    assert "closure L also" not in t.note


def test_data_like_cells_compose_as_their_algebraic_part():
    class DataNorm(taxdl.AbstractPrimitive):
        taxonomy: ClassVar[Taxonomy] = Taxonomy(
            closure=(None, None, O()), probabilistic=(None, None, O()),
            algebraic=(None, None, B()), kind="data")

        def __call__(self, x, *, key=None):
            return x

    seq = tnn.Sequential([DataNorm(), tnn.IsotropicTanh()])
    t = taxdl.taxonomy(seq)
    assert t.cell("probabilistic", "E").name == "B_n"
    assert t.cell("closure", "E").name == "O(n)"


def test_compose_rejects_mismatched_dimensions():
    with pytest.raises(ValueError, match="dimension"):
        tnn.Sequential([lin(3, 4), lin(5, 2)])


def test_untagged_parts_are_rejected():
    with pytest.raises(TypeError, match="no symmetry declaration"):
        tnn.Sequential([lin(), jax.nn.relu])


# ---------------------------------------------------------------- fit warnings
class OrthogonalLayer(AbstractLayer):
    """A test layer x ↦ Qx with Q orthogonal: closed under O(n) only."""

    q: jax.Array
    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(O(), O(), O()), probabilistic=(O(), O(), O()))

    def __init__(self, n, *, key):
        self.q = O(n).sample(key, 1).matrix[0]

    def __call__(self, x, *, key=None):
        return self.q @ x


def test_elementwise_activation_between_orthogonal_layers_warns():
    k1, k2 = jax.random.split(jax.random.key(0))
    with pytest.warns(CompositionWarning, match="B_n.*O\\(n\\)"):
        tnn.Sequential([OrthogonalLayer(N, key=k1), tnn.Tanh(), OrthogonalLayer(N, key=k2)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tnn.Sequential([OrthogonalLayer(N, key=k1), tnn.IsotropicTanh(),
                        OrthogonalLayer(N, key=k2)])
        tnn.Sequential([lin(), tnn.Tanh(), lin(seed=1)])
        tnn.Sequential([OrthogonalLayer(N, key=k1), tnn.Tanh(), OrthogonalLayer(N, key=k2)],
                       check_fit=False)


def test_isotropic_activation_between_permutation_closed_layers_warns():
    dense = tnn.ElementwiseDense(N, N, key=jax.random.key(0))  # closure L = Sₙ
    with pytest.warns(CompositionWarning, match="O\\(n\\)"):
        tnn.Sequential([dense, tnn.IsotropicTanh(), lin()])


# ---------------------------------------------------------------- inferred cells hold
def _np_chain(model):
    """An independent float64 NumPy evaluation of a Linear/Tanh/IsotropicTanh chain."""
    return lambda x: np_chain(model.layers, x)


def _signed_perm(rng, n):
    return np.eye(n)[rng.permutation(n)] * rng.choice([-1.0, 1.0], n)[:, None]


def _rotation(rng, n):
    q, r = np.linalg.qr(rng.normal(size=(n, n)))
    return q * np.sign(np.diag(r))


def test_inferred_algebraic_equivariance_holds_and_is_not_larger():
    rng = np.random.default_rng(0)
    seq = tnn.Sequential([tnn.Tanh(), tnn.IsotropicTanh()])
    f = _np_chain(seq)
    for _ in range(20):
        x, p = rng.normal(size=N) * 2, _signed_perm(rng, N)
        np.testing.assert_allclose(f(p @ x), p @ f(x), atol=1e-12)
    errs = [np.max(np.abs(f((q := _rotation(rng, N)) @ x) - q @ f(x)))
            for x in rng.normal(size=(20, N)) * 2]
    assert max(errs) > 1e-2  # O(n) does not hold: the inferred Bₙ is the right answer


def test_closure_transport_follows_the_rules():
    # Tanh ∘ Linear is closed on the left under Bₙ through the commute-left rule: the
    # transported model must equal g∘f exactly, and (an O(n) element) must not.
    rng = np.random.default_rng(1)
    seq = tnn.Sequential([lin(), tnn.Tanh()])
    f = _np_chain(seq)
    p = _signed_perm(rng, N)
    moved = transport(seq, Flavour.LEFT, linear_element(jnp.asarray(p, jnp.float32)),
                      B().on(N))
    g = _np_chain(moved)
    for x in rng.normal(size=(10, N)):
        np.testing.assert_allclose(g(x), p @ f(x), atol=1e-5)
    # E (sandwich) for Linear∘Tanh∘Linear under GL: g⁻¹∘f∘g
    seq = tnn.Sequential([lin(), tnn.Tanh(), lin(seed=1)])
    f = _np_chain(seq)
    a = rng.normal(size=(N, N)) + 3 * np.eye(N)
    moved = transport(seq, Flavour.EQUIVARIANT, linear_element(jnp.asarray(a, jnp.float32)),
                      GL().on(N))
    g = _np_chain(moved)
    for x in rng.normal(size=(10, N)):
        np.testing.assert_allclose(g(x), np.linalg.solve(a, f(a @ x)), rtol=1e-4, atol=1e-4)


def test_reinitialise_redraws_every_part():
    seq = tnn.Sequential([lin(), tnn.Tanh(), lin(seed=1)])
    new = reinitialise(seq, jax.random.key(5))
    assert not np.allclose(new.layers[0].weight, seq.layers[0].weight)
    assert not np.allclose(new.layers[2].weight, seq.layers[2].weight)


def test_user_can_compose_parts_directly():
    t = taxdl.taxonomy
    p = compose(t.part(tnn.Tanh(), N), t.part(lin(), N))
    assert p.taxonomy().cell("closure", "L").name == "B_n"
    assert (p.in_dim, p.out_dim) == (N, N)


# ---------------------------------------------------------------- checked by taxdl.testing
def _check():
    testing = pytest.importorskip("taxdl.testing")
    check = getattr(testing, "check", None)
    if check is None:
        pytest.skip("taxdl.testing.check not available")
    return check


def test_inferred_taxonomy_passes_check():
    # The catalogue rows (tests/rows/models.py) check Sequential, Residual and MLP with the
    # conformance suite, maximality included; here a chain whose cells are all algebraic.
    check = _check()
    report = check(tnn.Sequential([tnn.Tanh(), tnn.IsotropicTanh()]), n=N, examples=4,
                   maximality=False)
    assert report.passed


@pytest.mark.parametrize("make", [
    lambda: tnn.Sequential([tnn.Bloch(), tnn.IsotropicTanh()]),
    lambda: eqx.nn.Sequential([tnn.Bloch(), tnn.IsotropicTanh()]),
    lambda: tnn.Residual(tnn.PhaseElementwise()),
])
def test_a_chain_is_checked_on_the_inputs_its_first_part_reads(make):
    # a chain starting with a complex part takes complex inputs: its checks must draw
    # them (on real ones its first part raises), and so must a residual around one
    model = make()
    first = model.inner if isinstance(model, tnn.Residual) else model.layers[0]
    sig = signature(model, 2)
    assert sig == signature(first, 2) and sig.field == "complex"
    report = _check()(model, n=2, examples=4, generations="algebraic", maximality=False)
    assert report.passed and "complex64" in str(report).splitlines()[0]


def test_equinox_sequential_gets_the_same_rules():
    parts = [lin(), tnn.Tanh()]
    ours, theirs = tnn.Sequential(parts), eqx.nn.Sequential(parts)
    assert taxdl.taxonomy(theirs) == taxdl.taxonomy(ours)
    moved = transport(theirs, Flavour.LEFT, linear_element(jnp.asarray(
        _signed_perm(np.random.default_rng(0), N), jnp.float32)), B().on(N))
    assert isinstance(moved, eqx.nn.Sequential)
    x = jnp.linspace(-1.0, 1.0, N)
    np.testing.assert_allclose(np.abs(moved(x)).sum(), np.abs(theirs(x)).sum(), rtol=1e-5)
    with pytest.raises(TypeError, match="carries no taxonomy"):
        taxdl.taxonomy(eqx.nn.Sequential([eqx.nn.Linear(2, 2, key=jax.random.key(0))]))


def test_factorisations_split_elements_into_their_generators():
    from taxdl.taxonomy import factorisation
    from taxdl.taxonomy._compose import _hierarchy

    # one family of each kind of split (every family with a factorisation in the hierarchy
    # is one of these kinds)
    names = {"S_n⋉(ℝ×)^n⋉ℝ^n", "E(n)", "S_n⋉(ℝ×)^n", "S_n⋉(ℝ×₊)^n", "B_n", "ℝ×·O(n)",
             "ℝ×,+λ1", "ℝ×,+λ1 × S_n", "±I_n × O(n-1)", "ℝ×₊ × SO(n)"}
    n, checked = 4, 0
    for family in _hierarchy():
        fac = factorisation(family)
        if fac is None or family.name not in names:
            continue
        group = family.on(n)
        elements = group.sample(jax.random.key(checked), 1)
        for i in range(1):
            g = Element(elements.matrix[i], elements.shift[i])
            pieces = fac.split(g)
            assert len(pieces) == len(fac.groups)
            m, t = np.eye(n), np.zeros(n)
            for h, piece in zip(fac.groups, pieces):               # g = h₁ ∘ … ∘ h_k
                assert bool(h.on(n).contains(piece)), (family.name, h.name)
                m, t = m @ np.asarray(piece.matrix), m @ np.asarray(piece.shift) + t
            np.testing.assert_allclose(m, np.asarray(g.matrix), atol=1e-5)
            np.testing.assert_allclose(t, np.asarray(g.shift), atol=1e-5)
        checked += 1
    assert checked == len(names)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_closure_transport_lets_the_first_part_absorb_its_factors(dtype):
    """LayerNorm → Linear is closed on the right under ℝ×,+λ1 × Sₙ: LayerNorm absorbs
    the scale and shift itself, only the permutation passes through it into the
    Linear. Carrying a shift of ~1e28 through LayerNorm's bias for the Linear to take
    back is exact in theory but loses everything to cancellation at inputs of norm
    1e30, which the checker draws."""
    from taxdl.testing import check

    model = tnn.Sequential([tnn.LayerNorm(6), tnn.Linear(6, 6, key=jax.random.key(0))])
    report = check(model, dtype=dtype, generations=["closure"], maximality=False,
                   raise_on_failure=False)
    assert report.passed, str(report)


def test_negative_scalings_are_generated_by_positive_ones_and_the_point_reflection():
    """LayerNorm → Linear at initialisation: LayerNorm absorbs positive scalings and
    shifts of its input, −x passes through it as −LayerNorm(x), and at γ = 1, β = 0 so
    does every rotation fixing 1, which the Linear's Gaussian weights absorb in law: its
    probabilistic R cell is ℝ×,+λ1 × O(n−1), generated by ℝ×₊,+λ1 and ±I × O(n−1)
    (ℝ× = ℝ×₊ · {±I}). The checker confirms the cell, maximality included."""
    from taxdl.groups import PointReflection
    from taxdl.testing import check

    model = tnn.Sequential([tnn.LayerNorm(6), tnn.Linear(6, 6, key=jax.random.key(0))])
    cell = taxdl.taxonomy(model).cell("probabilistic", "R").group
    assert same_group(cell.on(6), Product(ScaleShift(positive=False),
                                          OrthogonalComplement()).on(6))
    assert _joins([Scaling(positive=True), PointReflection()])[-1] == Scaling(positive=False)
    report = check(model, generations=["probabilistic"], raise_on_failure=False)
    assert report.passed, str(report)


def test_residual_keeps_the_translations_its_inner_map_is_invariant_to():
    """A pre-norm block f(x) = x + W·LayerNorm(x) + b: LayerNorm ignores shifts along 1,
    so f(x + t1) − t1 = f(x) for every parameter value (algebraic E ⊇ +λ1), which the
    rules get from the translations of the inner map's R cell. Checked directly and by
    the checker (closure transport moves h by the shift, then conjugates it)."""
    from taxdl.groups import Translation
    from taxdl.testing import check

    model = tnn.Residual([tnn.LayerNorm(6), tnn.Linear(6, 6, key=jax.random.key(0))])
    assert taxdl.taxonomy(model).cell("algebraic", "E").group == Translation()
    x = np.random.default_rng(0).normal(size=6)
    for t in (-3.0, 0.5, 40.0):
        np.testing.assert_allclose(np.asarray(model(jnp.asarray(x + t, jnp.float32))) - t,
                                   np.asarray(model(jnp.asarray(x, jnp.float32))), atol=1e-4)
    report = check(model, raise_on_failure=False)
    assert report.passed, str(report)


def _moved_gains(n, seed=0, eps=0.0):
    """A LayerNorm / RMSNorm with a generic vector γ (and β) instead of the initial 1, 0."""
    rng = np.random.default_rng(seed)
    gamma = jnp.asarray(rng.uniform(0.5, 2.0, n) * rng.choice([-1, 1], n), jnp.float32)
    beta = jnp.asarray(rng.normal(size=n), jnp.float32)
    ln = eqx.tree_at(lambda l: (l.gamma, l.beta), tnn.LayerNorm(n, eps=eps), (gamma, beta))
    rms = eqx.tree_at(lambda l: l.gamma, tnn.RMSNorm(n, eps=eps), gamma)
    return ln, rms


def test_factor_out_writes_normalisers_as_an_affine_map_after_a_fixed_core():
    """factor_out(N) = (c, cells, K, k) with N = k∘c, k ∈ K, and c a fixed function with
    the stated symmetries (float64 NumPy reference for the core's)."""
    from taxdl.taxonomy import factor_out

    x = np.random.default_rng(1).normal(size=(5, N))
    for norm in _moved_gains(N):
        fac = factor_out(norm)
        k = fac.element
        assert bool(fac.group.contains(k, atol=1e-6))
        for row in x:
            xr = jnp.asarray(row, jnp.float32)
            np.testing.assert_allclose(np.asarray(norm(xr)),
                                       np.asarray(k.matrix @ fac.core(xr) + k.shift),
                                       rtol=1e-5, atol=1e-5)
        # the core's E cell: c(gx) = g c(x) for g in it (a rotation fixing 1 for LayerNorm)
        g = np.asarray(fac.cells[2].on(N).sample(jax.random.key(2), 1).matrix[0], np.float64)
        c = lambda v: np.asarray(fac.core(jnp.asarray(v, jnp.float32)), np.float64)  # noqa: E731
        for row in x:
            np.testing.assert_allclose(c(g @ row), g @ c(row), atol=1e-5)
    assert factor_out(tnn.ScalarLayerNorm(N)) is None and factor_out(tnn.ReLU()) is None


@pytest.mark.parametrize("eps", [0.0, 1e-5])
def test_a_linear_after_a_normaliser_absorbs_its_gains(eps):
    """LayerNorm(vector γ) alone is closed under (ℝ×,+λ1) × Sₙ by conjugation, but
    followed by a Linear, which absorbs γ ⊙ y + β, the pair is closed under every rotation
    fixing 1 on the right (ε = 0: (ℝ×,+λ1) × O(n−1)); RMSNorm → Linear under ℝ×·O(n)
    (O(n) with ε > 0; LayerNorm with ε > 0: (±I × O(n−1))⋉+λ1, generated by +λ1 and
    ±I × O(n−1)). The transports (through the normaliser's core γ = 1, β = 0) are
    checked numerically at generic gains, also into fewer outputs; the translations pass
    through LayerNorm alone (carried through its bias for the Linear to take back, a
    shift cancels catastrophically at inputs of norm 1e30)."""
    ln, rms = _moved_gains(N, eps=eps)
    key = jax.random.key(0)
    expected = {
        0.0: ("ℝ×,+λ1 × O(n-1)", "ℝ×·O(n)"),
        1e-5: ("(±I_n × O(n-1))⋉+λ1", "O(n)"),
    }[eps]
    for norm, right in zip((ln, rms), expected):
        square = tnn.Sequential([norm, tnn.Linear(N, N, key=key)])
        assert taxdl.taxonomy(square).cell("closure", "R").name == right
        for model in (square, tnn.Sequential([norm, tnn.Linear(N, 4, key=key)])):
            report = check(model, examples=6, generations=["closure"], maximality=False,
                           raise_on_failure=False)
            assert report.passed, str(report)


def test_abstract_models_with_factored_normalisers_get_the_same_taxonomy():
    """Composition rules accept modules with ShapeDtypeStruct leaves (from
    `eqx.filter_eval_shape` of a constructor), also when a part is factored
    (`factor_out`), and infer what they infer for the concrete module."""
    def build():
        return tnn.Sequential([tnn.LayerNorm(N), tnn.Linear(N, 3, key=jax.random.key(0)),
                               tnn.ReLU(), tnn.RMSNorm(3), tnn.Linear(3, 3, key=jax.random.key(1))])

    abstract = eqx.filter_eval_shape(build)
    assert isinstance(abstract.layers[0].gamma, jax.ShapeDtypeStruct)
    assert taxdl.taxonomy(abstract) == taxdl.taxonomy(build())


# ---------------------------------------------------------------- rays into rays
@pytest.mark.parametrize("norm", ["SimpleIsotropicLayerNorm", "LayerNorm"])
def test_a_scale_invariant_part_after_rays_makes_the_chain_scale_invariant(norm):
    # Linear → isotropic tanh → normaliser → Linear at initialisation (zero biases):
    # W₁(sx) = s·W₁x, isotropic tanh keeps the ray, the normaliser removes the scale, so
    # f∘s = f for every draw: in law ℝ×·O(n) on the right, not only O(n)
    keys = jax.random.split(jax.random.key(0))
    model = tnn.Sequential([tnn.Linear(N, N, key=keys[0]), tnn.IsotropicTanh(),
                            getattr(tnn, norm)(N), tnn.Linear(N, N, key=keys[1])])
    decl = taxdl.taxonomy(model)
    assert same_group(decl.probabilistic.R.group, ConformalLinear())
    assert isinstance(decl.algebraic.R.group, Trivial)  # a non-zero bias breaks it
    check(model, generations=("probabilistic",))  # the cells hold and are maximal
    # independent of the rules: f(sx) = f(x) for the drawn model (zero biases)
    x = np.random.default_rng(0).standard_normal(N)
    fx = np.asarray(model(jnp.asarray(x, jnp.float32)))
    for s in (1e-3, 0.5, 7.0):
        np.testing.assert_allclose(np.asarray(model(jnp.asarray(s * x, jnp.float32))), fx,
                                   rtol=1e-5, atol=1e-6)


def test_rays_rule_needs_every_ray_kept():
    # isotropic ReLU is 0 below R₀, so it does not map rays into rays: after it a
    # normaliser does not make the chain scale-invariant, and the rules do not say so
    assert not taxdl.taxonomy.maps_rays(tnn.IsotropicReLU())
    assert not taxdl.taxonomy.keeps_rays(tnn.IsotropicReLU())
    model = tnn.Sequential([tnn.IsotropicReLU(), tnn.RMSNorm(N)])
    assert isinstance(taxdl.taxonomy(model).algebraic.R.group, Trivial)
    x = np.full(N, 1.0 / np.sqrt(N))  # ‖x‖ = 1 = R₀: 0 at x, not at 2x
    assert not np.allclose(np.asarray(model(jnp.asarray(2 * x, jnp.float32))),
                           np.asarray(model(jnp.asarray(x, jnp.float32))))
    ray = tnn.Sequential([tnn.IsotropicTanh(), tnn.RMSNorm(N)])
    assert same_group(taxdl.taxonomy(ray).algebraic.R.group, Scaling(positive=True))
    check(ray, examples=4, generations=("algebraic",))


@pytest.mark.parametrize("make", [
    tnn.IsotropicTanh, tnn.IsotropicLeakyReLU, tnn.IsotropicSoftLeakyReLU,
    lambda: tnn.IsotropicSinusoid(-0.9), tnn.IsotropicSinusoid,
    lambda: tnn.IsotropicSinusoid(3.0), lambda: tnn.IsotropicSinusoid(4.6),
], ids=["IsotropicTanh", "IsotropicLeakyReLU", "IsotropicSoftLeakyReLU",
        "IsotropicSinusoid(-0.9)", "IsotropicSinusoid(1)", "IsotropicSinusoid(3)",
        "IsotropicSinusoid(4.6)"])
def test_activations_declared_to_map_rays_into_rays_do(make):
    # `keeps_rays`: f(x) = c(x)·x with c(x) > 0, each ray into itself (so also
    # `maps_rays`, f(sx) = c'·f(x), c' > 0); radii around r* ≈ 4.4934, where sin(r)/r is
    # least
    prim = make()
    assert taxdl.taxonomy.keeps_rays(prim) and taxdl.taxonomy.maps_rays(prim)
    rng = np.random.default_rng(0)
    radii = np.concatenate([np.exp(rng.uniform(-4, 4, 30)), 4.4934 + rng.normal(0, 0.2, 10)])
    for r in radii:
        x = rng.standard_normal(N)
        x *= r / np.linalg.norm(x)
        fx = np.asarray(prim(jnp.asarray(x)), np.float64)
        c = fx @ x / (x @ x)
        assert c > 0
        np.testing.assert_allclose(fx, c * x, rtol=1e-5, atol=1e-30)


@pytest.mark.parametrize("lam, keeps", [
    (-1.5, False),   # σ(r) = r − 1.5 sin r < 0 near 0
    (-1.0, False),   # σ(r) = r − sin r > 0, but c(x) → 0 at 0: rounds to 0 near the origin
    (-0.5, True), (0.0, True), (1.0, True), (4.6, True),
    (4.61, False),   # σ(r*) = r*(1 + 4.61·(−0.21723…)) < 0 at r* ≈ 4.4934
    (6.0, False),
])
def test_isotropic_sinusoid_maps_rays_exactly_where_its_radial_function_is_positive(
        lam, keeps):
    prim = tnn.IsotropicSinusoid(lam)
    assert taxdl.taxonomy.keeps_rays(prim) is keeps
    assert taxdl.taxonomy.maps_rays(prim) is keeps
    r = np.linspace(1e-3, 40, 400_001)
    sigma = r + lam * np.sin(r)
    assert bool(sigma.min() > 0) == (keeps or lam == -1.0)


@pytest.mark.parametrize("make, keeps, tiny", [
    (tnn.Squash, False, 1e-20),                                   # c = r/(1 + r²) → 0
    (lambda: tnn.IsotropicLeakyReLU(alpha=1e-30), False, 1e-9),   # c = α underflows
    (lambda: tnn.IsotropicSoftLeakyReLU(alpha=1e-30), False, 1e-9),
    (lambda: tnn.IsotropicLeakyReLU(alpha=1e-6), True, 1e-30),
])
def test_maps_whose_rays_round_to_zero_do_not_keep_rays(make, keeps, tiny):
    """f(x) = c(x)·x keeps each ray only while c(x)·x does not round to 0: squash's
    c → 0 at the origin (f = 0 in float32 at ‖x‖ = 1e-20, so a normaliser after it is not
    scale-invariant there), and a leaky slope of 1e-30 underflows at ‖x‖ = 1e-9; a slope
    of at least 1e-6 keeps rays down to the checked magnitudes."""
    prim = make()
    assert taxdl.taxonomy.keeps_rays(prim) is keeps
    x = np.array([0.3, -0.5, 0.2, 0.7])
    y = np.asarray(prim(jnp.asarray(tiny * x / np.linalg.norm(x), jnp.float32)))
    assert bool(np.any(y != 0)) == keeps
    model = tnn.Sequential([prim, tnn.ScalarLayerNorm(4)])
    positive = same_group(taxdl.taxonomy(model).algebraic.R.group, ScaleShift(positive=True))
    assert positive is keeps


def test_a_residual_of_a_map_keeping_rays_keeps_rays():
    """x + c(x)·x = (1 + c(x))·x: a residual around isotropic tanh keeps rays, so an
    RMSNorm after it makes the chain scale-invariant on the right (float64 NumPy:
    RMSNorm(x + tanh(r)x̂) at x and at s·x)."""
    model = tnn.Sequential([tnn.Residual(tnn.IsotropicTanh()), tnn.RMSNorm(N)])
    assert same_group(taxdl.taxonomy(model).algebraic.R.group, Scaling(positive=True))

    def f(x):
        r = np.linalg.norm(x)
        y = x + np.tanh(r) * x / r
        return y / np.sqrt(np.mean(y * y))

    rng = np.random.default_rng(5)
    for _ in range(20):
        x, s = rng.standard_normal(N), float(np.exp(rng.uniform(-5, 5)))
        np.testing.assert_allclose(f(s * x), f(x), rtol=1e-12)
    assert check(model, n=N, examples=4, generations=("algebraic",)).passed


def test_a_scale_invariant_part_after_a_map_keeping_rays_is_that_part():
    # p(x) = c(x)·x, c > 0 (isotropic tanh), then q with q(cy) = q(y) for c > 0 (LayerNorm
    # with scalar γ, β): q∘p = q, so the pair has all of q's cells, algebraic R
    # (ℝ×₊,+λ1) included, not only the ℝ×₊ of the rays rule
    q = tnn.ScalarLayerNorm(4)
    for p in (tnn.IsotropicTanh(), tnn.IsotropicSinusoid(),
              tnn.Sequential([tnn.IsotropicLeakyReLU(), tnn.IsotropicSinusoid(3.0)])):
        model = tnn.Sequential([p, q])
        assert cells(model) == cells(q), type(p).__name__
        assert check(model, n=4, examples=4, generations=("algebraic",)).passed
    # a third part after the pair: closure transport goes through the pair
    model = tnn.Sequential([tnn.IsotropicTanh(), q, lin(4, 3)])
    assert cells(model) == cells(tnn.Sequential([q, lin(4, 3)]))
    assert check(model, n=4, examples=4, samples=256).passed


def test_a_map_keeping_rays_only_up_to_sign_does_not_vanish_before_a_normaliser():
    # σ(r) < 0 somewhere (isotropic sinusoid with λ = 6): not q∘p = q; the composite
    # keeps the cells the other rules give, and they hold
    model = tnn.Sequential([tnn.IsotropicSinusoid(6.0), tnn.ScalarLayerNorm(4)])
    assert cells(model) != cells(tnn.ScalarLayerNorm(4))
    assert isinstance(taxdl.taxonomy(model).algebraic.R.group, Trivial)
    x = np.full(4, 0.5) * 4.4934 + np.array([0.1, 0.0, 0.0, 0.0])  # σ < 0 there
    y = np.asarray(model(jnp.asarray(x, jnp.float32)))
    np.testing.assert_allclose(
        y, -np.asarray(tnn.ScalarLayerNorm(4)(jnp.asarray(x, jnp.float32))), atol=1e-5)
    report = check(model, n=4, examples=4, maximality=False)
    assert report.passed
    # in the rules: a part mapping rays into rays without keeping each one (a rays flag
    # from a positively homogeneous cell) adds only ℝ×₊ on the right
    outer = Part({(g, f): (ScaleShift(positive=True),) if f is Flavour.RIGHT else (Trivial(),)
                  for g in GENERATIONS for f in Flavour}, 4, 4, "q", True)
    homogeneous = Part({(g, f): (Scaling(positive=True),) if f is Flavour.EQUIVARIANT
                        else (Trivial(),) for g in GENERATIONS for f in Flavour}, 4, 4, "p",
                       False, rays=frozenset(GENERATIONS))
    assert not homogeneous.keeps_rays
    assert same_group(compose(outer, homogeneous).get(Generation.ALGEBRAIC, Flavour.RIGHT)[0],
                      Scaling(positive=True))
    keeping = dataclasses.replace(homogeneous, keeps_rays=True)
    assert same_group(compose(outer, keeping).get(Generation.ALGEBRAIC, Flavour.RIGHT)[0],
                      ScaleShift(positive=True))


def test_parts_whose_fields_do_not_chain_are_refused():
    """A complex output cannot feed a real part (nor a real output a complex one): refused
    when the chain is built, naming both parts; complex → Bloch (ℂ² → ℝ³) → real chains."""
    with pytest.raises(ValueError, match=r"part 1 \(Linear\) takes real vectors, but part "
                                         r"0 \(UnitaryIsotropic\) outputs complex ones"):
        tnn.Sequential([tnn.UnitaryIsotropic(), lin(4, 4)])
    with pytest.raises(ValueError, match=r"part 1 \(UnitaryIsotropic\) takes complex "
                                         r"vectors, but part 0 \(Linear\) outputs real ones"):
        tnn.Sequential([lin(4, 4), tnn.UnitaryIsotropic()])
    inner, outer = part(tnn.UnitaryIsotropic(), 4), part(lin(4, 4), 4)
    with pytest.raises(ValueError, match="UnitaryIsotropic outputs complex vectors but "
                                         "Linear takes real ones"):
        compose(outer, inner)
    model = tnn.Sequential([tnn.UnitaryIsotropic(), tnn.Bloch(), tnn.IsotropicTanh()])
    z = jnp.asarray([0.3 + 0.1j, -0.2 + 0.4j], jnp.complex64)
    assert model(z).shape == (3,) and not jnp.iscomplexobj(model(z))


def test_sequential_names_a_layers_argument_that_is_not_a_sequence(library_checks_only):
    with pytest.raises(TypeError, match="`layers` must be a sequence of primitives, got ReLU"):
        tnn.Sequential(tnn.ReLU())
