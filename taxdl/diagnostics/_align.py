"""Aligning two models along their parameter symmetries, and the loss barrier of the
linear interpolation between them (CoLU paper App. D, eq 37, and App. G, Algorithms 1–2).

Two networks trained from different initialisations often sit in the same loss basin
*modulo* the group of their parameter symmetries. `align` moves the second model along
that group (permutations by linear assignment, orthogonal maps by Procrustes) so that its
parameters or hidden states match the first one; `loss_barrier` then measures how much the
loss rises along the straight line between them.
"""

import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..groups import (
    AbstractGroup,
    ConeGroup,
    Element,
    EvenSignedPermutation,
    Orthogonal,
    OrthogonalComplement,
    Permutation,
    PointReflection,
    Product,
    ScaleShift,
    Scaling,
    SignedPermutation,
    SpecialOrthogonal,
    Translation,
    Trivial,
    linear_element,
)
from ..groups._base import helmert_basis
from .._types import IntLike, RealLike, check_int
from ..nn.models import apply_hidden, hidden_states, parameter_symmetries
from ..taxonomy import AbstractNormaliser

# ----------------------------------------------------------------------- assignment
def linear_assignment(score: np.ndarray) -> np.ndarray:
    """The permutation `perm` maximising $\\sum_i S_{i,\\,perm_i}$ over a square score
    matrix (Hungarian algorithm with potentials, $O(n^3)$).

    **Arguments:** `score`: an (n, n) array.

    **Returns:** `perm`, an integer array of length n.
    """
    s = _finite_score(score)
    n = s.shape[0]
    cost = s.max(initial=0.0) - s  # minimise
    inf = np.inf
    u, v = np.zeros(n + 1), np.zeros(n + 1)
    match = np.zeros(n + 1, dtype=int)  # match[j] = row assigned to column j (1-based)
    way = np.zeros(n + 1, dtype=int)
    for i in range(1, n + 1):
        match[0] = i
        j0 = 0
        minv = np.full(n + 1, inf)
        used = np.zeros(n + 1, dtype=bool)
        while True:
            used[j0] = True
            i0 = match[j0]
            cur = cost[i0 - 1, :] - u[i0] - v[1:]
            free = ~used[1:]
            better = free & (cur < minv[1:])
            minv[1:][better] = cur[better]
            way[1:][better] = j0
            cand = np.where(free, minv[1:], inf)
            j1 = int(np.argmin(cand)) + 1
            delta = cand[j1 - 1]
            u[match[used]] += delta
            v[used] -= delta
            minv[1:][free] -= delta
            j0 = j1
            if match[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            match[j0] = match[j1]
            j0 = j1
    perm = np.zeros(n, dtype=int)
    for j in range(1, n + 1):
        perm[match[j] - 1] = j - 1
    return perm


def _finite_score(score: Any) -> np.ndarray:
    """`score` as a square float64 array; a `ValueError` when it is not square or holds NaN
    or infinite entries."""
    s = np.asarray(score, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] != s.shape[1]:
        raise ValueError(f"`score` must be a square matrix, got shape {s.shape}.")
    if not np.all(np.isfinite(s)):
        raise ValueError(_NOT_FINITE)
    return s


_NOT_FINITE = "`score` must be finite; it holds NaN or infinite entries (a diverged model?)."


_ENUMERATED = 8  # Dₙ by enumeration of the n! permutations up to this n


def _best_even_signed_permutation(s: np.ndarray, offset: np.ndarray | None = None
                                  ) -> np.ndarray:
    """The maximiser of tr(Pᵀ S) + Σᵢ offset[i, πᵢ] over Dₙ by enumeration: for each
    permutation π the best signs are those of the matched entries, less the weakest one's
    when they hold an odd number of −1s."""
    n = s.shape[0]
    perms = np.array(list(itertools.permutations(range(n))), dtype=int).reshape(-1, n)
    picked = s[np.arange(n), perms]  # (n!, n)
    mags = np.abs(picked)
    odd = np.sum(picked < 0, axis=1) % 2 == 1
    values = mags.sum(axis=1) - np.where(odd, 2 * mags.min(axis=1), 0.0)
    if offset is not None:
        values = values + offset[np.arange(n), perms].sum(axis=1)
    perm = perms[int(np.argmax(values))]
    return _signed(s, perm, even=True)


def _signed(s: np.ndarray, perm: np.ndarray, even: bool) -> np.ndarray:
    """The signed permutation matrix on `perm` with the signs of the matched entries of
    `s`; with `even`, the weakest sign flipped when they hold an odd number of −1s."""
    matched = s[np.arange(len(perm)), perm]
    signs = np.where(matched < 0, -1.0, 1.0)
    if even and np.sum(signs < 0) % 2 == 1:
        signs[int(np.argmin(np.abs(matched)))] *= -1
    return signs[:, None] * np.eye(len(perm))[perm]


def best_element(group: AbstractGroup, score: Any) -> np.ndarray:
    """The matrix $P$ of the bound `group` maximising $\\operatorname{tr}(P^\\top S)$.

    Permutations (Sₙ) by linear assignment; signed permutations (Bₙ) by assignment on
    $|S|$ with the signs of the matched entries; Dₙ (an even number of −1s) exactly by
    enumeration for n ≤ 8, above that as Bₙ's maximiser with its weakest sign flipped when
    it has an odd number of −1s (within $2\\min_i |S_{i\\,π_i}|$ of the maximum); O(n) by
    Procrustes ($P = UV^\\top$ for
    $S = U\\Sigma V^\\top$, the maximiser nearest the identity when S is singular), SO(n)
    with the last singular direction flipped if needed, and O(n−1) (fixing the all-ones
    direction) by Procrustes in its complement basis.
    Raises `NotImplementedError` for other groups, and `ValueError` when `score` is not
    a finite square matrix.
    """
    s = _finite_score(score)
    n = s.shape[0]
    if isinstance(group, Trivial):
        return np.eye(n)
    if isinstance(group, Permutation):
        return np.eye(n)[linear_assignment(s)]
    if isinstance(group, EvenSignedPermutation) and n <= _ENUMERATED:
        return _best_even_signed_permutation(s)
    if isinstance(group, (SignedPermutation, EvenSignedPermutation)):
        return _signed(s, linear_assignment(np.abs(s)),
                       even=isinstance(group, EvenSignedPermutation))
    if isinstance(group, (Orthogonal, SpecialOrthogonal)):
        return _procrustes(s, special=isinstance(group, SpecialOrthogonal))
    if isinstance(group, OrthogonalComplement):
        h = helmert_basis(n)
        q = _procrustes(h.T @ s @ h, special=False)
        return np.full((n, n), 1.0 / n) + h @ q @ h.T
    if isinstance(group, ConeGroup):
        return _cone_element(group, s)
    if type(group).__name__ == "PositiveMonomial":
        # S_n ⋉ (ℝ×₊)^n: the score is unbounded along the scalings, so align by its
        # permutation part
        return np.eye(n)[linear_assignment(s)]
    raise NotImplementedError(
        f"alignment along {group.name} is not implemented; supported: permutations, signed "
        "permutations, positive monomials (their permutations), O(n), SO(n), O(n-1) and "
        "the CoLU cone groups (their isometric part)."
    )


def _cone_element(group: ConeGroup, s: np.ndarray) -> np.ndarray:
    """Perm(G) × O(S−1)^G (the cone group's isometric part, CoLU paper App. G): the cones
    are matched by assignment on (axis score + nuclear norm of the body block), then each
    matched body pair by Procrustes; a shared axis stays fixed."""
    axes, bodies = group._indices()
    g = len(bodies)
    score = np.zeros((g, g))
    for i in range(g):
        for j in range(g):
            block = s[np.ix_(bodies[i], bodies[j])]
            score[i, j] = np.linalg.svd(block, compute_uv=False).sum()
            if not group.shared_axis:
                score[i, j] += s[axes[i], axes[j]]
    perm = linear_assignment(score)
    out = np.zeros_like(s)
    if group.shared_axis:
        out[axes[0], axes[0]] = 1.0
    for i, j in enumerate(perm):
        if not group.shared_axis:
            out[axes[i], axes[j]] = 1.0
        out[np.ix_(bodies[i], bodies[j])] = _procrustes(s[np.ix_(bodies[i], bodies[j])],
                                                       special=False)
    return out


def _best_monomial(group: AbstractGroup, plus: np.ndarray, minus: np.ndarray
                   ) -> np.ndarray:
    """The signed permutation matrix P of the bound `group` (Sₙ, Bₙ or Dₙ) maximising
    $\\sum_i V^{σ_i}_{i\\,π_i}$ for $P_{i\\,π_i} = σ_i$, with `plus` = $V^+$ and `minus` =
    $V^-$ the value of each matched entry with either sign: tr(PᵀS) when $V^± = ±S$, and
    also when part of the value does not change with the sign (a normaliser's gain)."""
    plus, minus = _finite_score(plus), _finite_score(minus)
    n = plus.shape[0]
    if isinstance(group, Permutation):
        return np.eye(n)[linear_assignment(plus)]
    linear, offset = (plus - minus) / 2, (plus + minus) / 2
    even = isinstance(group, EvenSignedPermutation)
    if even and n <= _ENUMERATED:
        return _best_even_signed_permutation(linear, offset)
    return _signed(linear, linear_assignment(offset + np.abs(linear)), even=even)


def _procrustes(s: np.ndarray, special: bool) -> np.ndarray:
    """The orthogonal P maximising tr(PᵀS) (SO(n) when `special`), and among several
    maximisers the one nearest the identity: when S is singular (a hidden space wider
    than what its neighbours use), P = U_r V_rᵀ on the range of S and the rotation of the
    null spaces closest to I, so aligning a model to itself leaves it unchanged."""
    u, sig, vt = np.linalg.svd(s)
    n = sig.shape[0]
    rank = int(np.sum(sig > _NULL_RTOL * sig[0])) if n and sig[0] > 0 else 0
    p = u[:, :rank] @ vt[:rank]
    if rank < n:
        u0, v0 = u[:, rank:], vt[rank:].T
        # maximise tr(u0 Q v0ᵀ) = tr(Q v0ᵀu0) over orthogonal Q
        a, _, bt = np.linalg.svd(v0.T @ u0)
        p = p + u0 @ (bt.T @ a.T) @ v0.T
    if special and np.linalg.det(p) < 0:
        # reflect along the weakest left singular direction (free when S is singular)
        p = p - 2.0 * np.outer(u[:, -1], u[:, -1] @ p)
    return p


# singular values below this fraction of the largest are treated as zero (scores come
# from float32 parameters and states)
_NULL_RTOL = 1e-5

# weight matching keeps a site's new element unless ⟨θ₀, P·θ₁⟩ falls by more than this
# many units of rounding (of the parameters' dtype) times ‖θ₀‖‖θ₁‖
_ROUNDING = 64


# ----------------------------------------------------------------------- alignment
@dataclasses.dataclass(frozen=True)
class Alignment:
    """The result of [`align`][taxdl.diagnostics.align].

    - `model`: the second model moved along its parameter symmetries (same function).
    - `elements`: per site, the accumulated matrix applied to that hidden space.
    - `sweeps`: how many passes over the sites were made.
    - `converged`: whether the last pass moved no site (weight matching stops there or at
      `max_sweeps`; a result with `converged` False may improve with more sweeps). State
      matching is one pass and always converged.
    """

    model: Any
    elements: dict
    sweeps: int
    converged: bool = True


def _inexact(tree):
    return eqx.filter(tree, eqx.is_inexact_array)


def _inner(a, b) -> jnp.ndarray:
    la, lb = jax.tree_util.tree_leaves(_inexact(a)), jax.tree_util.tree_leaves(_inexact(b))
    return sum(jnp.vdot(x, y) for x, y in zip(la, lb))


def _dtype(model) -> np.dtype:
    """The dtype the elements applied to `model` are built in: that of its floating-point
    parameters, at least float32."""
    bits = [jnp.finfo(x.dtype).bits for x in jax.tree_util.tree_leaves(_inexact(model))]
    return np.dtype(jnp.float64 if max(bits, default=0) >= 64 else jnp.float32)


@eqx.filter_jit
def _objective(reference, model):
    return _inner(reference, model)


def _objective_and_scale(reference, model) -> tuple[float, float]:
    """⟨θ₀, θ₁⟩ and the rounding scale of its evaluation, ‖θ₀‖‖θ₁‖ times the dtype's
    unit of rounding."""
    value = float(_objective(reference, model))
    scale = np.sqrt(float(_objective(reference, reference)) * float(_objective(model, model)))
    return value, scale * float(jnp.finfo(_dtype(model)).eps)


@eqx.filter_jit
def _weight_score_jit(reference, model, site: int, dim: int, group, dtype):
    def objective(p):
        moved = apply_hidden(model, site, Element(p, jnp.zeros((dim,), p.dtype)), group)
        return _inner(reference, moved)

    return jax.grad(objective)(jnp.eye(dim, dtype=dtype))


def _weight_score(reference, model, site: int, dim: int, group) -> np.ndarray:
    """$S_{ij} = \\partial_{P_{ij}} \\langle θ_0, P·θ_1\\rangle$ at P = I (exact when the
    neighbours of the site are affine layers, whose parameters are linear in P)."""
    return np.asarray(_weight_score_jit(reference, model, site, dim, group, _dtype(model)),
                      np.float64)


@eqx.filter_jit
def _site_coordinates(model, site: int, dim: int, group, dtype):
    """For every floating-point parameter entry, the coordinate of the site's hidden
    space (dim ≥ 3) it moves with, −1 when it moves with none or with several: the
    coordinate i whose entries, and only those, change under the transpositions
    (i−1 i) and (i i+1) (cyclically), found on parameters whose entries are distinct
    within each leaf (1 + k/size, k shuffled), so that every move is seen."""
    params, static = eqx.partition(model, eqx.is_inexact_array)
    leaves, treedef = jax.tree_util.tree_flatten(params)
    keys = jax.random.split(jax.random.key(0), max(len(leaves), 1))
    probe_leaves = [(1 + jax.random.permutation(k, x.size).reshape(x.shape) / max(x.size, 1)
                     ).astype(dtype) for k, x in zip(keys, leaves)]
    probe = eqx.combine(jax.tree_util.tree_unflatten(treedef, probe_leaves), static)
    rows = jnp.arange(dim)

    def changed(j):
        """Which entries the transposition (j j+1 mod dim) changes."""
        swap = jnp.where(rows == j, (j + 1) % dim, jnp.where(rows == (j + 1) % dim, j, rows))
        p = jnp.eye(dim, dtype=dtype)[swap]
        out = apply_hidden(probe, site, Element(p, jnp.zeros((dim,), dtype)), group)
        # distinct entries differ by at least 1/size: a quarter of it is far above rounding
        return [jnp.abs(b - a) > 0.25 / max(a.size, 1)
                for a, b in zip(probe_leaves, jax.tree_util.tree_leaves(_inexact(out)))]

    def step(carry, j):
        counts, coords, previous = carry
        now = changed(j)
        # an entry of coordinate j changes under (j−1 j) and (j j+1)
        return ([c + b.astype(jnp.int32) for c, b in zip(counts, now)],
                [c + jnp.where(b & q, j, 0) for c, b, q in zip(coords, now, previous)],
                now), None

    zeros = [jnp.zeros(x.shape, jnp.int32) for x in leaves]
    (counts, coords, _), _ = jax.lax.scan(step, (zeros, list(zeros), changed(dim - 1)), rows)
    return [jnp.where(n == 2, c, -1) for c, n in zip(coords, counts)]


@eqx.filter_jit
def _monomial_values_jit(reference, model, site: int, dim: int, group, dtype, sign: int,
                         coords):
    """$V^σ_{i\\,π_i}$: the part of ⟨θ₀, P·θ₁⟩ carried by the entries moving with site
    coordinate i, for P the cyclic shifts (with all signs σ), so that on the signed
    permutations ⟨θ₀, P·θ₁⟩ = c + Σᵢ V^{σᵢ}_{i π_i} exactly."""
    ref = jax.tree_util.tree_leaves(_inexact(reference))
    rows = jnp.arange(dim)

    def shifted(k):
        p = sign * jnp.eye(dim, dtype=dtype)[(rows + k) % dim]
        out = apply_hidden(model, site, Element(p, jnp.zeros((dim,), dtype)), group)
        total = jnp.zeros((dim,), dtype)
        for a, b, c in zip(ref, jax.tree_util.tree_leaves(_inexact(out)), coords):
            prod = jnp.where(c >= 0, a * b, 0).astype(dtype).ravel()
            total = total + jax.ops.segment_sum(prod, jnp.maximum(c, 0).ravel(), dim)
        return total

    diagonals = jax.lax.map(shifted, rows)  # [k, i] = V[i, (i + k) mod n]
    return jnp.zeros((dim, dim), dtype).at[rows[None, :], (rows[None, :] + rows[:, None])
                                           % dim].set(diagonals)


def _monomial_element(reference, model, site: int, dim: int, group, coords=None
                      ) -> np.ndarray:
    """The signed permutation of the bound `group` (Sₙ, Bₙ, Dₙ) maximising ⟨θ₀, P·θ₁⟩
    exactly, also where a neighbour's parameters are not linear in P (a normaliser's gain,
    conjugated by P: quadratic in P, so its derivative at I does not see the
    permutations). `coords`: the site's `_site_coordinates`, when known."""
    dtype = _dtype(model)
    if dim <= 2:
        return _enumerated_element(reference, model, site, dim, group, dtype)
    if coords is None:
        coords = _site_coordinates(model, site, dim, group, dtype)
    values = [np.asarray(_monomial_values_jit(reference, model, site, dim, group, dtype,
                                              sign, coords), np.float64)
              for sign in ((1,) if isinstance(group, Permutation) else (1, -1))]
    return _best_monomial(group, values[0], values[-1])


def _enumerated_element(reference, model, site: int, dim: int, group, dtype
                        ) -> np.ndarray:
    """The maximiser of ⟨θ₀, P·θ₁⟩ over the bound `group` (Sₙ, Bₙ, Dₙ with n ≤ 2) by
    applying each of its elements."""
    signs = (np.ones((1, dim)) if isinstance(group, Permutation)
             else np.array(list(itertools.product([1.0, -1.0], repeat=dim))))
    if isinstance(group, EvenSignedPermutation):
        signs = signs[np.prod(signs, axis=1) > 0]
    best, best_value = np.eye(dim), -np.inf
    for perm in itertools.permutations(range(dim)):
        for sign in signs:
            p = sign[:, None] * np.eye(dim)[list(perm)]
            value = float(_objective(reference, _apply_hidden(
                model, site, jnp.asarray(p, dtype), group)))
            if not np.isfinite(value):
                raise ValueError(_NOT_FINITE)
            if value > best_value:
                best, best_value = p, value
    return best


def _has_normalisers(model) -> bool:
    """Whether `model` holds a normaliser (whose gain is conjugated by a site's element,
    not linear in it)."""
    def norm(x):
        return isinstance(x, AbstractNormaliser)

    return any(norm(leaf) for leaf in jax.tree_util.tree_leaves(model, is_leaf=norm))


@eqx.filter_jit
def _state_score_jit(reference, model, site: int, data):
    z0 = jax.vmap(lambda x: hidden_states(reference, x, site))(data)
    z1 = jax.vmap(lambda x: hidden_states(model, x, site))(data)
    return z0.T @ z1


def _state_score(reference, model, site: int, data) -> np.ndarray:
    return np.asarray(_state_score_jit(reference, model, site, data), np.float64)


_apply_hidden = eqx.filter_jit(apply_hidden)


def _has_gmp_layers(model) -> bool:
    """Whether `model` holds a layer in geometric parameterisation (GmP*)."""
    def gmp(x):
        return isinstance(x, eqx.Module) and type(x).__name__.startswith("GmP")

    return any(gmp(leaf) for leaf in jax.tree_util.tree_leaves(model, is_leaf=gmp))


def _isometric_part(group: AbstractGroup) -> AbstractGroup:
    """The group alignment searches: the isometric part of a site's group (permutations of
    the positive monomials, signed permutations of the monomials, the cone group without
    its scalings), and for a product with scalars or shifts along 1 (a normaliser's site,
    (ℝ×,+λ1) × O(n−1) or {±I} × O(n−1)) that of its other factor. The weight score is the
    derivative of a score linear in P only when P⁻¹ = Pᵀ, and `best_element` returns
    isometries anyway. A product of scalars and shifts alone (±I ⋉ +λ1) has no
    isometric part but {I}: its site is left."""
    if isinstance(group, Product):
        rest = [f for f in group.factors if not isinstance(
            f, (Scaling, PointReflection, ScaleShift, Translation))]
        if not rest:
            return Trivial()
        if len(rest) == 1:
            return _isometric_part(rest[0])
        return group
    if type(group).__name__ == "PositiveMonomial":
        return Permutation()
    if type(group).__name__ == "Monomial":
        return SignedPermutation()
    if isinstance(group, ConeGroup) and group.scalings:
        return dataclasses.replace(group, n=None, scalings=False)
    return group


def align(reference: Any, model: Any, *, method: str = "weights", data=None,
          max_sweeps: IntLike = 20, tol: float = 1e-4, seed: int = 0) -> Alignment:
    """Align `model` to `reference` along the parameter symmetry of every hidden site.

    Both must be [`Sequential`][taxdl.nn.Sequential] or [`MLP`][taxdl.nn.MLP] models of
    the same architecture. For each site reported by
    [`parameter_symmetries`][taxdl.nn.parameter_symmetries] (Sₙ, Bₙ, O(n), …) the element
    $P$ of the group maximising a matching score is applied with
    [`apply_hidden`][taxdl.nn.apply_hidden], which leaves the model's function unchanged.

    - `method="weights"` (CoLU paper App. G, Algorithm 1, weight matching): the score is
      $\\langle θ_0, P·θ_1\\rangle$ over the parameters around the site; sites are visited
      in random order until no site moves by more than `tol` (max-norm of $P - I$), at
      most `max_sweeps` passes (an integer ≥ 1). A site's new element is kept only when
      the score does not fall (up to rounding), so the passes cannot cycle. Next to a
      normaliser, whose gain is conjugated by P (not linear in it), a site of
      permutations or signed permutations is also scored exactly, by its value on each
      matched pair of units, and the better of the two elements is taken; other sites
      are scored by the derivative of the score at P = I. Moving one site at a time, it
      can stop short where two sites' signs trade against a normaliser's gain (state
      matching recovers such twins).
    - For both, a site moves along the isometric part of its group: the permutations of
      ReLU's positive monomials, the signed permutations of the monomials (a GmP layer's
      site), the cone group of CoLU without its scalings, and for a normaliser's site
      ((ℝ×,+λ1) × O(n−1), {±I} × O(n−1)) the factor without scalars and shifts.
      Weight matching needs affine layers around the sites and refuses GmP layers.
    - `method="states"` (Algorithm 2, state matching): the score is
      $\\sum_x z_0(x)^\\top P z_1(x)$ over the hidden states at the site for the inputs
      `data` (a batch, shape (N, d)), sites in forward order, one pass (a site whose
      $P$ is within `tol` of the identity is left).

    **Returns:** an [`Alignment`][taxdl.diagnostics.Alignment].
    """
    if method not in ("weights", "states"):
        raise ValueError(f"`method` must be 'weights' or 'states', got {method!r}.")
    max_sweeps = check_int(max_sweeps, "max_sweeps", who="align", minimum=1)
    if method == "states" and data is None:
        raise ValueError("method='states' needs `data`: a batch of inputs, shape (N, d).")
    syms = parameter_symmetries(model)
    ref_syms = parameter_symmetries(reference)
    if [(s.site, s.dim, s.group.name) for s in syms] != [
            (s.site, s.dim, s.group.name) for s in ref_syms]:
        raise ValueError("`reference` and `model` have different parameter-symmetry sites "
                         "(hidden widths or groups); align two models of the same "
                         "architecture.")
    _same_parameters(eqx.filter(reference, eqx.is_inexact_array),
                     eqx.filter(model, eqx.is_inexact_array), ("reference", "model"))
    if method == "weights" and _has_gmp_layers(model):
        raise ValueError("weight matching needs affine layers around each site (its score "
                         "⟨θ₀, P·θ₁⟩ is linear in P only then); this model has GmP layers, "
                         "whose angles are not: use method='states'.")
    elements = {s.site: np.eye(s.dim) for s in syms}
    rng = np.random.default_rng(seed)
    dtype = _dtype(model)
    if method == "states":
        for s in syms:
            family = _isometric_part(s.group)
            if isinstance(family, Trivial):
                continue
            score = _state_score(reference, model, s.site, jnp.asarray(data))
            p = best_element(family.on(s.dim), score)
            if np.max(np.abs(p - np.eye(s.dim))) <= tol:
                continue
            model = _apply_hidden(model, s.site, jnp.asarray(p, dtype), family)
            elements[s.site] = p @ elements[s.site]
        return Alignment(model, elements, 1)
    exact = _has_normalisers(model)
    coords = {}  # per site, which hidden unit each parameter entry moves with
    value, rounding = _objective_and_scale(reference, model)
    for sweeps in range(1, max_sweeps + 1):
        changed = False
        for idx in rng.permutation(len(syms)):
            s = syms[idx]
            family = _isometric_part(s.group)
            if isinstance(family, Trivial):
                continue
            candidates = []
            if exact and isinstance(family, (Permutation, SignedPermutation,
                                             EvenSignedPermutation)):
                if s.site not in coords and s.dim > 2:
                    coords[s.site] = _site_coordinates(model, s.site, s.dim, family, dtype)
                candidates.append(_monomial_element(reference, model, s.site, s.dim, family,
                                                    coords.get(s.site)))
                if np.max(np.abs(candidates[0] - np.eye(s.dim))) <= tol:
                    continue  # the exact maximiser stays
            candidates.append(best_element(family.on(s.dim), _weight_score(
                reference, model, s.site, s.dim, family)))
            best = None
            for p in candidates:
                if np.max(np.abs(p - np.eye(s.dim))) <= tol:
                    continue
                moved = _apply_hidden(model, s.site, jnp.asarray(p, dtype), family)
                new = float(_objective(reference, moved))
                if best is None or new > best[0]:
                    best = (new, p, moved)
            # keep the site as it is when no candidate moves it, or when the score's
            # prediction failed (⟨θ₀, P·θ₁⟩ fell)
            if best is None or best[0] < value - _ROUNDING * rounding:
                continue
            changed = True
            value, p, model = best
            elements[s.site] = p @ elements[s.site]
        if not changed:
            break
    return Alignment(model, elements, sweeps, converged=not changed)


# ----------------------------------------------------------------------- barrier
def interpolate(model0: Any, model1: Any, s: RealLike | np.ndarray | jax.Array) -> Any:
    """The model with parameters $(1-s)\\,θ_0 + s\\,θ_1$ (floating-point array leaves;
    everything else is taken from `model0`), exactly θ₁ at s = 1, in each leaf's dtype.
    `s` may be a Python or NumPy real number or a JAX scalar, traced too (`jax.vmap` over
    a grid of s, `jax.grad` with respect to it)."""
    p0, static = eqx.partition(model0, eqx.is_inexact_array)
    p1, _ = eqx.partition(model1, eqx.is_inexact_array)
    _same_parameters(p0, p1, ("model0", "model1"))
    if jnp.ndim(s) != 0:
        raise ValueError(f"interpolate: `s` must be a scalar, got shape {jnp.shape(s)}.")
    # θ₀ + s(θ₁ − θ₀): exactly θ₀ when the models are equal ((1 − s)θ₀ + sθ₀ is not, by
    # rounding, which eq 37's ratio magnifies where the end losses are near 0)
    if isinstance(s, (jax.core.Tracer, jax.Array)):
        def mix(a, b):
            t = a + s.astype(a.dtype) * (b - a)
            # exactly θ₁ at s = 1, with the derivative θ₁ − θ₀ there too
            return t + jax.lax.stop_gradient(jnp.where(s == 1, b - t, 0))

        return eqx.combine(jax.tree_util.tree_map(mix, p0, p1), static)
    if s == 1:
        return eqx.combine(p1, static)
    # a NumPy scalar (np.float32(0.5)) would promote each leaf to its dtype: cast it as
    # the traced branch does
    mixed = jax.tree_util.tree_map(lambda a, b: a + jnp.asarray(s, a.dtype) * (b - a), p0, p1)
    return eqx.combine(mixed, static)


def _same_parameters(p0, p1, names: tuple[str, str]) -> None:
    """A `ValueError` naming the caller's arguments `names` unless `p0` and `p1` have the
    same structure and leaf shapes."""
    s0, s1 = jax.tree_util.tree_structure(p0), jax.tree_util.tree_structure(p1)
    shapes = [(a.shape, b.shape) for a, b in zip(jax.tree_util.tree_leaves(p0),
                                                  jax.tree_util.tree_leaves(p1))]
    if s0 != s1 or any(a != b for a, b in shapes):
        raise ValueError(f"`{names[0]}` and `{names[1]}` must have the same structure and "
                         "parameter shapes (two models of one architecture).")


@dataclasses.dataclass(frozen=True)
class Barrier:
    """The loss barrier of [`loss_barrier`][taxdl.diagnostics.loss_barrier].

    - `barrier`: $\\sup_s B(s)$ (eq 37).
    - `s`: the interpolation points; `losses`: $L$ at each; `ratios`: $B(s)$ at each.
    """

    barrier: float
    s: np.ndarray
    losses: np.ndarray
    ratios: np.ndarray


def loss_barrier(loss: Callable[[Any], Any], model0: Any, model1: Any,
                 num: IntLike = 11) -> Barrier:
    """The loss barrier of the linear interpolation between two models (CoLU paper eq 37):

    $$\\sup_{s\\in[0,1]} B(s),\\qquad
    B(s) = \\frac{L((1-s)θ_0 + sθ_1)}{(1-s)L(θ_0) + sL(θ_1)} - 1.$$

    **Arguments:**

    - `loss`: model ↦ scalar loss (e.g. the mean loss over a fixed data set).
    - `model0`, `model1`: the two models (same structure).
    - `num`: number of equally spaced points $s$ in [0, 1] (≥ 2; the supremum is taken over
      them).

    **Returns:** a [`Barrier`][taxdl.diagnostics.Barrier]; `barrier` is 0 at the end points
    and positive when the loss rises between the models (+inf where both end losses are
    0 and the path's is not). Raises `ValueError` when an end loss is negative, infinite
    or NaN.
    """
    num = check_int(num, "num", who="loss_barrier", minimum=2)
    s = np.linspace(0.0, 1.0, num)
    losses = np.array([float(loss(interpolate(model0, model1, float(t)))) for t in s])
    if not (0 <= losses[0] < np.inf and 0 <= losses[-1] < np.inf):
        raise ValueError(
            "`loss` must be non-negative and finite at both models (eq 37 is a relative "
            "increase over the interpolated end losses); got "
            f"L(θ₀) = {losses[0]}, L(θ₁) = {losses[-1]}.")
    base = (1 - s) * losses[0] + s * losses[-1]
    # where the interpolated end loss is 0 (both models fit exactly), B(s) is 0 when the
    # path keeps the loss at 0 and +inf when it rises
    ratios = np.where(base > 0, losses / np.where(base > 0, base, 1.0) - 1.0,
                      np.where(losses > 0, np.inf, 0.0))
    return Barrier(float(np.max(ratios)), s, losses, ratios)


def permutation_matrix(perm: Any) -> Element:
    """The element $x \\mapsto Px$ with $(Px)_i = x_{perm_i}$. Raises `ValueError` unless
    `perm` is a permutation of range(n) (integers)."""
    given = np.asarray(perm)
    if (given.ndim != 1 or not (np.issubdtype(given.dtype, np.integer) or given.size == 0)
            or sorted(given.tolist()) != list(range(given.size))):
        raise ValueError(f"`perm` must be a permutation of range(n) (integers), got {perm!r}.")
    return linear_element(jnp.asarray(np.eye(given.size)[given.astype(int)], jnp.float32))
