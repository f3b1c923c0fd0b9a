"""Taxonomy declarations, the consistency law, the registry and the catalogue table."""

import subprocess
import sys

import equinox as eqx
import jax
import pytest

import taxdl
from taxdl.groups import (
    GL,
    B,
    DiagonalAffine,
    I,
    O,
    OrthogonalComplement,
    Permutation,
    ScaleShift,
    SignedPermutation,
)
from taxdl.taxonomy import Cell, Flavour, Generation, InconsistentTaxonomyError, Kind, Taxonomy

# Table 5.2 of the isotropic paper, as the groups' display names (L, R, E per generation).
# ℝ×₊ appears where the paper writes ℝ× but a negative scale flips LayerNorm's output.
TABLE_5_2 = {
    # the bias absorbs translations: closure Aff(n) ⊃ GL(n) on every side (the paper's
    # hierarchy has no translations); conjugation by aQ leaves the law of W and the zero
    # initial bias unchanged: probabilistic E is the similarity group ℝ×·O(n) ⊃ O(n)
    "Linear": ["Aff(n)", "Aff(n)", "Aff(n)", "O(n)", "O(n)", "ℝ×·O(n)", "I_n", "I_n", "I_n"],
    "Tanh": ["I_n", "I_n", "B_n", "I_n", "I_n", "B_n", "I_n", "I_n", "B_n"],
    # ReLU is positively homogeneous: the closure L/E cells also absorb positive per-unit
    # scalings, and with the zero initial bias conjugation by a > 0 keeps the law (the
    # paper gives Sₙ, a subgroup, for all three)
    "Composed": ["S_n⋉(ℝ×₊)^n", "Aff(n)", "S_n⋉(ℝ×₊)^n", "S_n", "O(n)", "ℝ×₊ × S_n",
                 "I_n", "I_n", "I_n"],
    "CrossEntropy": ["I_n", "S_n", "I_n", "I_n", "S_n", "I_n", "I_n", "S_n", "I_n"],
    "IsotropicTanh": ["I_n", "I_n", "O(n)", "I_n", "I_n", "O(n)", "I_n", "I_n", "O(n)"],
    # vector γ: Table 5.2's O(n−1) in closure/probabilistic E is refuted by the checker on
    # a generic γ (R⁻¹ diag(γ) R is not diagonal): the class is closed under Sₙ only; on
    # the left γ ⊙ y + β absorbs any D y + t with D diagonal. Both forms' closure E also
    # absorbs the commuting dilations x ↦ ax + λ1 (γ ↦ γ/|a|, β moves; ε = 0), and both
    # are odd at the initial β = 0 (probabilistic E gains ±I).
    "LayerNorm (vector γ,β)": ["(ℝ×)^n⋉ℝ^n", "ℝ×,+λ1", "ℝ×,+λ1 × S_n", "I_n", "ℝ×₊,+λ1",
                               "±I_n × S_n", "I_n", "ℝ×₊,+λ1", "I_n"],
    "LayerNorm (scalar γ,β)": ["ℝ×,+λ1", "ℝ×,+λ1", "ℝ×,+λ1 × O(n-1)", "I_n", "ℝ×₊,+λ1",
                               "±I_n × O(n-1)", "I_n", "ℝ×₊,+λ1", "O(n-1)"],
}


def test_table_reproduces_table_5_2():
    rows = {r.name: r.cells() for r in taxdl.table().rows}
    for name, expected in TABLE_5_2.items():
        assert rows[name] == expected, name


def test_table_renderings_contain_every_row():
    t = taxdl.table()
    text, md, html = str(t), t.to_markdown(), t.to_html()
    for name in TABLE_5_2:
        assert name in text and name in md
        assert name.replace("γ", "γ") in html
    assert sum(line.startswith("| ") for line in md.splitlines()) == len(t) + 1
    assert html.count("<tr>") == len(t) + 1


def test_table_marks_every_departure_from_the_paper():
    """The reference rows agree with Table 5.2 as printed except where the checker refutes
    the paper (vector-γ LayerNorm's E cells), the paper's ℝ× holds only for a > 0, or the
    paper names a subgroup of the verified cell (Composed closure L/R/E and probabilistic
    E, Linear closure and probabilistic E, LayerNorm closure E and scalar LayerNorm's
    probabilistic E); each departure is marked and footnoted."""
    from taxdl.taxonomy._paper import TABLE_5_2 as PAPER

    t = taxdl.table()
    diffs = {(name, header) for name, header, _, _ in t.paper_differences()}
    assert diffs == {
        ("LayerNorm (vector γ,β)", "C-L"),
        ("LayerNorm (vector γ,β)", "C-E"), ("LayerNorm (vector γ,β)", "P-E"),
        ("LayerNorm (vector γ,β)", "P-R"), ("LayerNorm (vector γ,β)", "A-R"),
        ("LayerNorm (scalar γ,β)", "P-R"), ("LayerNorm (scalar γ,β)", "A-R"),
        ("LayerNorm (scalar γ,β)", "C-E"), ("LayerNorm (scalar γ,β)", "P-E"),
        ("Composed", "C-L"), ("Composed", "C-R"), ("Composed", "C-E"), ("Composed", "P-E"),
        ("Linear", "C-L"), ("Linear", "C-R"), ("Linear", "C-E"), ("Linear", "P-E"),
    }
    for name in PAPER:
        assert name in t.names()
    text = str(t)
    assert "LayerNorm (vector γ,β) C-E: paper O(n-1), here ℝ×,+λ1 × S_n" in text
    assert "ℝ×,+λ1 × S_n†" in t.to_markdown() and "paper O(n-1)" in t.to_html()


def test_table_filters():
    iso = taxdl.table(generation="algebraic", flavour="E", group=O())
    assert "IsotropicTanh" in iso.names() and "Tanh" not in iso.names()
    bn = taxdl.table(generation="algebraic", flavour="E", group="B_n")
    assert {"Tanh", "IsotropicTanh"} <= set(bn.names())
    assert set(taxdl.table(family="normaliser").names()) >= {"LayerNorm (vector γ,β)",
                                                            "LayerNorm (scalar γ,β)"}
    assert taxdl.table(name="isotropic").names() == [n for n in taxdl.table().names()
                                                      if "isotropic" in n.lower()]


def test_table_group_class_name_is_its_default_construction():
    """`group="Scaling"` is `Scaling()` = ℝ×, not its ℝ×₊ variant (which would also keep
    rows whose cells hold only the positive scalings, such as ReLU's)."""
    from taxdl.groups import Diagonal, Scaling

    for name, group in (("Scaling", Scaling()), ("ScaleShift", ScaleShift()),
                        ("Diagonal", Diagonal())):
        for generation in ("algebraic", "closure"):
            by_name = taxdl.table(generation=generation, flavour="R", group=name).names()
            assert by_name == taxdl.table(generation=generation, flavour="R",
                                          group=group).names(), (name, generation)
    assert "ReLU" in taxdl.table(generation="algebraic", flavour="E", group="ℝ×₊").names()
    assert "ReLU" not in taxdl.table(generation="algebraic", flavour="E",
                                     group="Scaling").names()


def test_group_filter_compares_bound_cells_in_their_dimension():
    # GroupNorm's right cells are a scale and a shift per block of 4 in ℝ⁸: they contain
    # the global (ℝ×, +λ1) of LayerNorm (one block), so the "contains" filter keeps it
    from taxdl.groups import BlockScaleShift, is_subgroup

    assert is_subgroup(ScaleShift(8), BlockScaleShift(8, block=4))
    closure_r = taxdl.table(generation="closure", flavour="R", group="ℝ×,+λ1").names()
    assert {"GroupNorm", "LayerNorm (vector γ,β)", "Linear"} <= set(closure_r)
    algebraic_r = taxdl.table(generation="algebraic", flavour="R", group="ℝ×₊,+λ1").names()
    assert "GroupNorm" in algebraic_r
    # generation / flavour filters alone keep rows with a non-trivial selected cell
    alg_l = taxdl.table(generation="algebraic", flavour="L").names()
    assert alg_l == [r.name for r in taxdl.table().rows
                     if not r.taxonomy.cell("algebraic", "L").trivial]


@pytest.mark.parametrize("kwargs,match", [
    ({"colour": "red"}, "unknown table filter"),
    ({"generation": ""}, "unknown generation ''"),
    ({"name": 3}, "`name` must be a string"),
    ({"family": "widget"}, "unknown family 'widget'"),
    ({"family": 3}, "`family` must be a string or a sequence of strings .*activation"),
    ({"family": ("activation", None)}, "`family` must be a string or a sequence of strings"),
    ({"group": "Q(n)"}, "unknown group 'Q\\(n\\)'"),
    ({"generation": "strong"}, "unknown generation 'strong'"),
])
def test_table_rejects_unknown_filters(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        taxdl.table(**kwargs)


def test_consistency_law_compares_bound_cells_in_their_dimensions():
    # O(5) does not lie in O(4): a probabilistic O(5) under a closure O(4) is refused
    with pytest.raises(InconsistentTaxonomyError, match="probabilistic cell declares O\\(5\\)"):
        Taxonomy(closure=(None, None, O(4)), probabilistic=(None, None, O(5)),
                 algebraic=(None, None, O(5)))
    # in one dimension, or against an unbound family, the order is the usual one
    Taxonomy(closure=(None, None, O(5)), probabilistic=(None, None, B(5)))
    Taxonomy(closure=(None, None, O()), probabilistic=(None, None, B(5)))


def test_consistency_law_names_the_cell():
    with pytest.raises(InconsistentTaxonomyError, match="flavour E.*algebraic cell declares O"):
        Taxonomy(closure=(None, None, O()), probabilistic=(None, None, B()),
                 algebraic=(None, None, O()))
    with pytest.raises(InconsistentTaxonomyError, match="flavour L.*probabilistic cell"):
        Taxonomy(closure=(Permutation(), None, None), probabilistic=(O(), None, None))
    # a consistent declaration builds
    t = Taxonomy(closure=(GL(), GL(), GL()), probabilistic=(O(), O(), O()))
    assert t.cell("probabilistic", "L").kinds == (Kind.INITIALISATION,)
    assert t.cell(Generation.ALGEBRAIC, Flavour.RIGHT).trivial


def test_declaration_cells_and_kinds():
    t = Taxonomy(closure=(None, None, O()),
                 probabilistic=(None, None, Cell(O(), (Kind.DATA,))), kind="time")
    assert t.cell("probabilistic", "E").kinds == (Kind.DATA,)
    assert len(t.nontrivial()) == 2
    with pytest.raises(ValueError, match="only probabilistic cells have kinds"):
        Taxonomy(closure=(None, None, Cell(O(), (Kind.DATA,))))
    with pytest.raises(ValueError, match="unknown probabilistic kind"):
        Taxonomy(kind="weekly")
    with pytest.raises(ValueError, match="3 entries"):
        Taxonomy(closure=(O(), O()))
    r = t.replace(algebraic_E=SignedPermutation())
    assert r.cell("algebraic", "E").group == SignedPermutation()
    with pytest.raises(InconsistentTaxonomyError):
        t.replace(algebraic_E=GL())


def test_taxonomy_of_classes_and_instances():
    assert taxdl.taxonomy(taxdl.nn.IsotropicTanh).cell("algebraic", "E").group == O()
    ln = taxdl.nn.LayerNorm(6, "scalar")
    assert taxdl.taxonomy(ln).cell("algebraic", "E").group == OrthogonalComplement()
    # ε > 0 breaks the scale invariance: the declaration follows the hyperparameter
    ln_eps = taxdl.nn.LayerNorm(6, "scalar", eps=1e-5)
    assert taxdl.taxonomy(ln_eps).cell("algebraic", "R").name == "+λ1"
    assert taxdl.taxonomy(taxdl.nn.LayerNorm).cell("closure", "L").group == DiagonalAffine()
    assert taxdl.taxonomy(ln).cell("closure", "L").group == ScaleShift()
    with pytest.raises(TypeError, match="carries no taxonomy"):
        taxdl.taxonomy(object())


def test_registry_entries_have_working_examples():
    for name, entry in taxdl.registry().items():
        inst = entry.instance()
        assert isinstance(inst, entry.cls), name
        assert isinstance(entry.taxonomy(), Taxonomy), name


def test_register_rejects_bad_family_and_duplicates():
    with pytest.raises(ValueError, match="unknown family 'gadget'"):
        taxdl.register(family="gadget")
    with pytest.raises(ValueError, match="already registered"):
        taxdl.register(type("Other", (), {"taxonomy": Taxonomy()}), family="activation",
                       name="Tanh")


def test_identity_is_in_every_group():
    assert taxdl.is_subgroup(I(), O()) and taxdl.is_subgroup(I(), Permutation())


def test_cli_table_prints_the_catalogue():
    out = subprocess.run([sys.executable, "-m", "taxdl", "table", "--format", "markdown",
                          "--family", "activation"], capture_output=True, text=True, check=True)
    assert "| IsotropicTanh | activation |" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "taxdl", "table", "--group", "Q"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown group" in bad.stderr


def test_primitives_run_under_jit(getkey):
    x = jax.random.normal(getkey(), (8,))
    for entry in taxdl.registry().values():
        inst = entry.instance()
        sig = taxdl.taxonomy.signature(inst, 8)
        if sig.inputs != ((8,),) or sig.field != "real":
            continue  # e.g. complex or fixed-size inputs (Bloch: ℂ²)
        if entry.family in ("activation", "layer", "normaliser"):
            if isinstance(inst, eqx.nn.StatefulLayer) and inst.is_stateful():
                y, _ = eqx.filter_jit(inst)(x, eqx.nn.State(inst), inference=True)
            else:
                y = eqx.filter_jit(inst)(x)
            assert y.shape == (8,)


def test_table_group_filter_takes_every_displayed_group_name():
    """Every group name the catalogue displays in a cell is a valid `group=` filter, and
    selects at least the rows that display it (ℤ₂ⁿ, ±I, products and the complex forms
    were refused as unknown)."""
    table = taxdl.table()
    shown = {}
    for row in table.rows:
        for g in ("closure", "probabilistic", "algebraic"):
            for f in ("L", "R", "E"):
                cell = row.taxonomy.cell(g, f)
                shown.setdefault(cell.group.name, set()).add(row.name)
                shown.setdefault(cell.name, set()).add(row.name)  # "SU(2)→SO(3)" too
    names = ("ℤ₂^n", "±I_n", "ℝ×₊ × S_n", "U(1)^n⋊S_n", "SU(2)→SO(3)")
    for name in names:
        assert name in shown, name
    # every displayed name parses (cheap); a few also filter
    known = taxdl.taxonomy._table._displayed_groups()
    assert {n.replace(" ", "") for n in shown} <= set(known) | set(
        taxdl.taxonomy._table.known_groups())
    for name in names:
        assert shown[name] <= set(taxdl.table(group=name).names()), name
