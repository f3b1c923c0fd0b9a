"""Structured groups: finite rotation groups Ψ, block-diagonal and direct products, the
CoLU cone group, and the Lorentz group."""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .._types import IntLike, check_int, check_real
from ._base import (
    AbstractCompactGroup,
    AbstractGroup,
    AbstractNoncompactGroup,
    Element,
    Tolerance,
    _check_dimension,
    haar_orthogonal,
    helmert_basis,
    is_orthogonal,
    linear_element,
    log_uniform,
    permutation_matrices,
    random_permutations,
    work_dtype,
    zero_shift,
)
from ._real import PointReflection, Scaling, ones_complement_basis


# ============================================================== Ψ: finite rotation groups
class Dihedral(AbstractCompactGroup):
    """Ψ = the dihedral group of order 2k acting on ℝ²: the symmetries of the regular
    lattice of `k` unit vectors $\\hat b_j = (\\cos 2\\pi j/k, \\sin 2\\pi j/k)$.

    Sampled exactly (uniform over its 2k elements).
    """

    n: int | None = eqx.field(static=True, default=None)
    k: int = eqx.field(static=True, default=8)
    symbol: ClassVar[str] = "Ψ"
    name_template: ClassVar[str] = "Ψ(D_{k})"
    finite: ClassVar[bool] = True
    field: ClassVar[str] = "real"

    def __check_init__(self):
        check_int(self.k, "k", who="Dihedral")
        if self.n is not None and self.n != 2:
            raise ValueError(f"Dihedral acts on ℝ² only: `n` must be 2, got {self.n!r}.")

    def lattice(self) -> np.ndarray:
        """The k unit vectors whose symmetry group this is, shape (k, 2)."""
        t = 2 * np.pi * np.arange(self.k) / self.k
        return np.stack([np.cos(t), np.sin(t)], -1)

    def _sample(self, key, num, dtype):
        kr, kf = jax.random.split(key)
        j = jax.random.randint(kr, (num,), 0, self.k)
        t = (2 * jnp.pi / self.k) * j.astype(work_dtype(dtype))
        c, s = jnp.cos(t), jnp.sin(t)
        rot = jnp.stack([jnp.stack([c, -s], -1), jnp.stack([s, c], -1)], -2)
        flip = jax.random.bernoulli(kf, 0.5, (num,))
        refl = jnp.diag(jnp.array([1.0, -1.0], rot.dtype))
        m = jnp.where(flip[:, None, None], rot @ refl, rot)
        return linear_element(m.astype(dtype))

    def _contains(self, element, atol):
        return _maps_set_to_itself(element, jnp.asarray(self.lattice(), element.matrix.dtype), atol)


def simplex_vertices(n: int) -> np.ndarray:
    """The n+1 unit vertices of a regular simplex centred at the origin of ℝⁿ, (n+1, n)."""
    h = helmert_basis(n + 1)
    return h / np.linalg.norm(h, axis=1, keepdims=True)


class Simplex(AbstractCompactGroup):
    """Ψ = the symmetry group of the regular simplex in ℝⁿ: S_{n+1} acting through its
    standard n-dimensional representation $\\rho(P) = H^T P H$ ($H$ the Helmert basis of
    $\\mathbf 1^\\perp \\subset ℝ^{n+1}$). It permutes the n+1 simplex directions
    $\\hat b_i$ (a regular lattice of unit vectors), is a finite subgroup of O(n) not
    contained in Bₙ for n ≥ 2, and is sampled exactly (uniform over (n+1)! elements).
    """

    n: int | None = eqx.field(static=True, default=None)
    symbol: ClassVar[str] = "Ψ"
    name_template: ClassVar[str] = "Ψ(A_{n})"
    finite: ClassVar[bool] = True
    field: ClassVar[str] = "real"

    def lattice(self) -> np.ndarray:
        """The n+1 unit vectors permuted by the group, shape (n+1, n)."""
        return simplex_vertices(self._require_n())

    def _sample(self, key, num, dtype):
        n = self.n
        h = ones_complement_basis(n + 1, work_dtype(dtype))
        p = permutation_matrices(random_permutations(key, num, n + 1), h.dtype)
        return linear_element(jnp.einsum("ai,nab,bj->nij", h, p, h).astype(dtype))

    def _contains(self, element, atol):
        return _maps_set_to_itself(
            element, jnp.asarray(self.lattice(), element.matrix.dtype), atol
        )


def _maps_set_to_itself(element: Element, vecs, atol):
    m = element.matrix
    image = jnp.einsum("...ij,kj->...ki", m, vecs)
    dist = jnp.max(jnp.abs(image[..., :, None, :] - vecs[None, :, :]), axis=-1)
    hit = jnp.min(dist, axis=-1) <= atol
    return jnp.all(hit, axis=-1) & is_orthogonal(m, atol) & zero_shift(element, atol)


# ============================================================== products
class BlockDiagonal(AbstractGroup):
    """Block-diagonal product $G_1 \\times \\dots \\times G_k$, each factor acting on its own
    contiguous block of coordinates (dimension = sum of the factors' bound dimensions).

    Factors must be bound (e.g. `BlockDiagonal(Orthogonal(3), Permutation(2))`). Sampling
    is exact Haar when every factor's is.
    """

    factors: tuple[AbstractGroup, ...]
    symbol: ClassVar[str] = "⊕"
    name_template: ClassVar[str] = "{_factor_names}"
    finite: ClassVar[bool] = False
    compact: ClassVar[bool] = False
    haar: ClassVar[bool] = False
    field: ClassVar[str] = "real"
    isometric: ClassVar[bool] = False

    def __init__(self, *factors: AbstractGroup):
        if not factors:
            raise ValueError("BlockDiagonal needs at least one factor group.")
        for f in factors:
            if not isinstance(f, AbstractGroup) or not f.bound:
                raise ValueError(
                    "BlockDiagonal factors must be groups with a bound dimension, e.g. "
                    f"`Orthogonal(3)`; got {f!r}."
                )
            if f.field == "complex":
                raise ValueError(
                    "BlockDiagonal acts on real space: its factors must be real groups; "
                    f"got {f.name}, which acts on complex space."
                )
        self.factors = tuple(factors)

    @property
    def n(self) -> int:
        return sum(f.dim for f in self.factors)

    def on(self, n: IntLike) -> AbstractGroup:
        if n != self.n:
            raise ValueError(f"{self.name} acts on dimension {self.n}; cannot bind n={n}.")
        return self

    _factor_names = property(lambda self: " ⊕ ".join(f.name for f in self.factors))

    def _sample(self, key, num, dtype):
        keys = jax.random.split(key, len(self.factors))
        out = jnp.zeros((num, self.n, self.n), dtype)
        shift = jnp.zeros((num, self.n), dtype)
        start = 0
        for k, f in zip(keys, self.factors):
            e = f.sample(k, num, dtype)
            d = f.dim
            out = out.at[:, start:start + d, start:start + d].set(e.matrix)
            shift = shift.at[:, start:start + d].set(e.shift)
            start += d
        return Element(out, shift)

    def _contains(self, element, atol):
        m, s = element.matrix, element.shift
        ok = jnp.ones(m.shape[:-2], bool)
        start = 0
        mask = np.ones((self.n, self.n), bool)
        for f in self.factors:
            d = f.dim
            sub = Element(m[..., start:start + d, start:start + d], s[..., start:start + d])
            ok = ok & f.contains(sub, atol)
            mask[start:start + d, start:start + d] = False
            start += d
        off = jnp.max(jnp.where(mask, jnp.abs(m), 0), axis=(-2, -1)) <= atol
        return ok & off


class Product(AbstractGroup):
    """Product of groups acting on the same space, the direct product when they commute,
    e.g. Sₙ × U(1): an element is $g_1 \\circ g_2 \\circ \\dots$ with each factor sampled
    independently (exact Haar when the factors commute and are compact).

    Factors that do not commute (or are not known to: see
    [`commuting`][taxdl.groups.commuting]) make the product the group they *generate*.
    Its name is then H ⋉ N when the factors with translations (N) are normalised by the
    others (H, see [`normalises`][taxdl.groups.normalises]), e.g. Bₙ⋉T(n), and ⟨A, B, …⟩
    otherwise: the hierarchy's supergroup rules, which replace one factor by a
    supergroup, produce such products (e.g. ⟨ℝ×₊,+λ1, Dₙ⟩: Dₙ moves the direction of
    $\\mathbf 1$). A sample is then a product of one element of each factor: an element
    of the generated group, not drawn from a Haar measure.

    Membership is decided for a scalar extension of a group of isometries, ℝ×₊ × H,
    ℝ× × H or {±I} × H with H compact: $M$ belongs when $M/a$ or $-M/a$ (as the scalar
    factor allows) lies in H, with $a = |\\det M|^{1/n}$ (H's elements have
    $|\\det| = 1$); for other products `contains` raises `NotImplementedError`.
    """

    factors: tuple[AbstractGroup, ...]
    n: int | None = eqx.field(static=True)
    symbol: ClassVar[str] = "×"
    name_template: ClassVar[str] = "{_factor_names}"
    finite: ClassVar[bool] = False
    compact: ClassVar[bool] = False
    haar: ClassVar[bool] = False
    field: ClassVar[str] = "any"
    isometric: ClassVar[bool] = False

    def __init__(self, *factors: AbstractGroup, n: int | None = None):
        if len(factors) < 2:
            raise ValueError("Product needs at least two factor groups.")
        dims = {f.n for f in factors if f.n is not None}
        if n is None and len(dims) == 1:
            n = dims.pop()
        elif len(dims) > 1:
            raise ValueError(f"Product factors are bound to different dimensions {dims}.")
        self.factors = tuple(f if n is None else f.on(n) for f in factors)
        self.n = n

    def on(self, n: IntLike) -> AbstractGroup:
        _check_dimension(n, "Product")
        return Product(*self.factors, n=int(n))

    def real_elements(self) -> bool:
        return all(f.real_elements() for f in self.factors)

    @property
    def _factor_names(self) -> str:
        from ._hierarchy import moves_origin, normalises

        shown = [f for f in self.factors if type(f).__name__ != "Trivial"]
        if not shown:
            return self.factors[0].name
        if _all_commute(shown):
            return " × ".join(f.name for f in shown)
        linear = [f for f in shown if not moves_origin(f)]
        moving = [f for f in shown if moves_origin(f)]
        if (linear and moving and _all_commute(linear) and _all_commute(moving)
                and all(normalises(h, t) for h in linear for t in moving)):
            return f"{_joined(linear)}⋉{_joined(moving)}"
        return "⟨" + ", ".join(f.name for f in shown) + "⟩"

    def _sample(self, key, num, dtype):
        return self.combine(tuple(f.sample(k, num, dtype)
                                  for k, f in zip(self.factor_keys(key), self.factors)))

    def factor_keys(self, key):
        """The PRNG keys `sample` draws the factors' elements with, one per factor."""
        return jax.random.split(key, len(self.factors))

    @staticmethod
    def combine(elements: tuple[Element, ...]) -> Element:
        """The product's element made of one element of each factor (in the factors'
        order): their composition."""
        e = elements[0]
        for other in elements[1:]:
            e = e.compose(other)
        return e

    def scalar_extension(self, scalar_types: tuple = (Scaling, PointReflection)
                         ) -> tuple[AbstractGroup, AbstractGroup] | None:
        """(scalar factor, H) when this product is one group of `scalar_types` (ℝ×₊, ℝ×,
        {±I}, …) times one compact group H, else None."""
        scalars = [f for f in self.factors if isinstance(f, scalar_types)]
        rest = [f for f in self.factors if not isinstance(f, scalar_types)]
        if len(scalars) != 1 or len(rest) != 1 or not rest[0].compact:
            return None
        return scalars[0], rest[0]

    def _contains(self, element, atol):
        parts = self.scalar_extension()
        if parts is None:
            raise NotImplementedError(
                f"membership in the product {self.name} is not decidable from its factors; "
                "check membership of the factor elements instead."
            )
        c, inside = scalar_of(element, *parts, atol)
        return inside & (jnp.abs(c) > atol)


def _all_commute(groups) -> bool:
    from ._hierarchy import commuting

    return all(commuting(f, g) for i, f in enumerate(groups) for g in groups[i + 1:])


def _joined(groups) -> str:
    """One side of H ⋉ N, in parentheses unless it is a single plain name."""
    if len(groups) == 1 and "⋉" not in groups[0].name:
        return groups[0].name
    return "(" + " × ".join(g.name for g in groups) + ")"


def scalar_of(element, scalar: AbstractGroup, group: AbstractGroup, atol):
    """For $x ↦ Mx + t$ in a scalar extension of a compact group H (`group`, elements with
    |det| = 1): the scalar c ($|\\det M|^{1/n}$, or 1 for {±I}; negated where the scalar
    group has negatives and only $-M/c$ lies in H) and whether $(M/c, t/c)$ lies in H
    (H's own membership rule: this runs inside compiled membership tests)."""
    m = element.matrix
    if isinstance(scalar, PointReflection):
        a = jnp.ones(m.shape[:-2], m.dtype)
    else:
        a = jnp.exp(jnp.linalg.slogdet(m)[1] / m.shape[-1])

    def member(c):
        return group._contains(Element(m / c[..., None, None], element.shift / c[..., None]),
                               atol)

    inside = member(a)
    if getattr(scalar, "positive", False):
        return a, inside
    return jnp.where(inside, a, -a), inside | member(-a)


# ============================================================== CoLU cone group
def check_cone_dim(s, who: str, minimum: int) -> None:
    check_int(s, "cone_dim", who=who, minimum=minimum)


def cones_in_blocks(n: int, s: int, who: str) -> int:
    """G = C/S for C channels in contiguous cones of S (a `ValueError` unless S divides C)."""
    if n % s != 0:
        raise ValueError(
            f"{who}: the channel count C must be divisible by the cone dimension "
            f"S = {s}; got C = {n}."
        )
    return n // s


def cones_label(group, shared_axis: bool) -> str:
    """The name of a cone group (G, or its value when bound): S_G×O(S−1)^G, then ×ℝ×₊ (a
    shared axis) or ×(ℝ×₊)^G (one scaling per cone) when it has scalings."""
    g = "G" if group.n is None else str(group.num_cones)
    label = f"S_{g}×O({group.cone_dim - 1})^{g}"
    if not group.scalings:
        return label
    return label + ("×ℝ×₊" if shared_axis else "×(ℝ×₊)^" + g)


def cone_matrices(key, num: int, n: int, axes: np.ndarray, bodies: np.ndarray,
                  scalings: bool, shared_axis: bool, dtype) -> Array:
    """`num` cone-group matrices on ℝⁿ whose G cones have their axis coordinates at `axes`
    (G,) and body coordinates at `bodies` (G, S−1): output cone i is input cone π(i) with
    its axis scaled by $c_i$ and its body mapped by $c_i R_i$, where π is a uniform
    permutation, $R_i$ Haar on O(S−1) and the $c_i > 0$ log-uniform on [½, 2] (one common
    $c$ with a shared axis, all 1 without scalings)."""
    g, s = bodies.shape[0], bodies.shape[1] + 1
    kp, ko, ks = jax.random.split(key, 3)
    perm = random_permutations(kp, num, g)  # cone i of output <- cone perm[i] of input
    if s > 1:
        rots = haar_orthogonal(ko, num * g, s - 1, dtype).reshape(num, g, s - 1, s - 1)
    else:
        rots = jnp.zeros((num, g, 0, 0), dtype)
    if scalings:
        scale = log_uniform(ks, (num, 1) if shared_axis else (num, g), dtype)
        scale = jnp.broadcast_to(scale, (num, g))
    else:
        scale = jnp.ones((num, g), dtype)
    m = jnp.zeros((num, n, n), dtype)
    bi = jnp.asarray(bodies)
    ai = jnp.asarray(axes)
    rows_b = bi[None, :, :, None]  # (1,g,s-1,1)
    cols_b = bi[perm][:, :, None, :]  # (num,g,1,s-1)
    nidx = jnp.arange(num)[:, None, None, None]
    m = m.at[nidx, rows_b, cols_b].set(rots * scale[:, :, None, None])
    if shared_axis:
        return m.at[:, 0, 0].set(scale[:, 0])
    return m.at[jnp.arange(num)[:, None], ai[None, :], ai[perm]].set(scale)


def is_block_cone_matrix(m: Array, g: int, s: int, scalings: bool, atol: Tolerance) -> Array:
    """Whether each matrix, with its coordinates ordered cone by cone (axis first), is in
    the cone group without a shared axis: a block permutation whose blocks are
    $c\\,\\mathrm{diag}(1, R)$ with $R$ orthogonal and $c > 0$ ($c = 1$ without scalings)."""
    blocks = m.reshape(*m.shape[:-2], g, s, g, s)
    ax = blocks[..., :, 0, :, 0]  # (..., g, g)
    nonzero = jnp.abs(ax) > atol
    perm_ok = jnp.all(jnp.sum(nonzero, -1) == 1, -1) & jnp.all(jnp.sum(nonzero, -2) == 1, -1)
    positive = jnp.all(ax >= -atol, axis=(-2, -1))
    c = jnp.sum(ax, axis=-1)  # per output cone scaling
    if not scalings:
        positive = positive & jnp.all(jnp.abs(c - 1) <= atol, -1)
    # rescale each output cone's row block by 1/c: then the matrix must be orthogonal
    scaled = m / jnp.repeat(jnp.where(jnp.abs(c) > atol, c, 1), s, axis=-1)[..., :, None]
    orth = is_orthogonal(scaled, atol * 4)
    # axis rows/cols must not mix with bodies
    mixed = jnp.abs(blocks[..., :, 0, :, 1:]).max(axis=(-3, -2, -1), initial=0.0) + jnp.abs(
        blocks[..., :, 1:, :, 0]).max(axis=(-3, -2, -1), initial=0.0)
    # block sparsity: body blocks nonzero exactly where the axis entry is nonzero
    body_norm = jnp.sqrt(jnp.sum(blocks[..., :, 1:, :, 1:] ** 2, axis=(-3, -1)))
    sparsity = jnp.all(jnp.where(nonzero, True, body_norm <= atol), axis=(-2, -1))
    return perm_ok & positive & orth & (mixed <= atol) & sparsity


class ConeGroup(AbstractNoncompactGroup):
    """The symmetry group of multi-head CoLU (Fu & Cohen, Theorem 4.7).

    Channels are split into G cones of dimension S (C = G·S), each cone an axis coordinate
    and an (S−1)-dimensional body. The group is generated by permutations of the cones,
    positive per-cone scalings (when `scalings=True`), and an independent O(S−1) rotation
    of each cone body; its isometric part (`scalings=False`) is Perm(G) × O(S−1)^G.

    With `shared_axis=True` all cones share one axis coordinate (C − 1 = G(S − 1)); then
    only a single common positive scaling is allowed.

    **Arguments:**

    - `n`: the number of channels C (None for the family).
    - `cone_dim`: S ≥ 2.
    - `scalings`: include positive (per-cone) scalings.
    - `shared_axis`: the axis-sharing variant (eq 4).
    - `layout`: `"block"` (each cone is a contiguous block, axis first; shared: the common
      axis is coordinate 0 followed by G bodies of S−1) or `"axes_first"` (all G axes,
      then the G bodies, each contiguous).

    Sampling: cone permutation uniform, bodies Haar on O(S−1), log-scales uniform on
    [log ½, log 2] (scalings are non-compact, so not Haar).
    """

    n: int | None = eqx.field(static=True, default=None)
    cone_dim: int = eqx.field(static=True, default=4)
    scalings: bool = eqx.field(static=True, default=True)
    shared_axis: bool = eqx.field(static=True, default=False)
    layout: str = eqx.field(static=True, default="block")
    symbol: ClassVar[str] = "Cone"
    name_template: ClassVar[str] = "{_cones_label}"

    def __check_init__(self):
        check_cone_dim(self.cone_dim, "ConeGroup", 2)
        if self.layout not in ("block", "axes_first"):
            raise ValueError(
                f"ConeGroup: `layout` must be 'block' or 'axes_first', got {self.layout!r}."
            )
        if self.n is not None:
            _check_dimension(self.n, "ConeGroup")
            self.num_cones  # validates divisibility

    @property
    def num_cones(self) -> int:
        """G, the number of cones."""
        n, s = self._require_n(), self.cone_dim
        if self.shared_axis:
            if (n - 1) % (s - 1) != 0 or n < s:
                raise ValueError(
                    f"ConeGroup(shared_axis=True): C - 1 must be a positive multiple of "
                    f"S - 1 = {s - 1}; got C = {n}."
                )
            return (n - 1) // (s - 1)
        return cones_in_blocks(n, s, "ConeGroup")

    _cones_label = property(lambda self: cones_label(self, self.shared_axis))

    # index bookkeeping: positions of axis and body coordinates of each cone
    def _indices(self) -> tuple[np.ndarray, np.ndarray]:
        g, s = self.num_cones, self.cone_dim
        if self.shared_axis:
            axes = np.zeros((g,), int)
            bodies = 1 + np.arange(g * (s - 1)).reshape(g, s - 1)
            return axes, bodies
        if self.layout == "block":
            base = np.arange(g * s).reshape(g, s)
            return base[:, 0], base[:, 1:]
        axes = np.arange(g)
        bodies = g + np.arange(g * (s - 1)).reshape(g, s - 1)
        return axes, bodies

    def _sample(self, key, num, dtype):
        axes, bodies = self._indices()
        return linear_element(cone_matrices(key, num, self.n, axes, bodies, self.scalings,
                                            self.shared_axis, dtype))

    def inverse(self, element: Element) -> Element:
        """The inverse element: the transpose for the isometric part (`scalings=False`,
        permutations and rotations: orthogonal matrices), so that its derivative is
        too (a matrix inverse differentiates to −dP at the identity, not dPᵀ); a matrix
        inverse with scalings."""
        if not self.scalings:
            return linear_element(jnp.swapaxes(element.matrix, -1, -2))
        return super().inverse(element)

    def _contains(self, element, atol):
        m = element.matrix
        g, s = self.num_cones, self.cone_dim
        axes, bodies = self._indices()
        # The matrix between cones must be a (scaled) block permutation whose blocks are
        # diag(c, c·R) with R orthogonal, c > 0.
        if self.shared_axis:
            c = m[..., 0, 0]
            ok = c > atol
            if not self.scalings:
                ok = ok & (jnp.abs(c - 1) <= atol)
            body_idx = bodies.reshape(-1)
            sub = m[..., body_idx[:, None], body_idx[None, :]]
            blocks = sub.reshape(*sub.shape[:-2], g, s - 1, g, s - 1)
            norms = jnp.sqrt(jnp.sum(blocks**2, axis=(-3, -1)))  # (..., g, g)
            expected = c[..., None, None] * np.sqrt(s - 1)
            is_blk = jnp.abs(norms - expected) <= atol * np.sqrt(s - 1) * 4
            zero_blk = norms <= atol
            perm_ok = jnp.all(is_blk | zero_blk, axis=(-2, -1)) & jnp.all(
                jnp.sum(is_blk, -1) == 1, -1) & jnp.all(jnp.sum(is_blk, -2) == 1, -1)
            scaled = sub / jnp.where(jnp.abs(c) > atol, c, 1)[..., None, None]
            orth = is_orthogonal(scaled, atol * 4)
            cross = jnp.concatenate([m[..., 0, 1:], m[..., 1:, 0]], -1)
            return ok & perm_ok & orth & (jnp.max(jnp.abs(cross), -1) <= atol) & zero_shift(
                element, atol)

        order = np.concatenate([np.concatenate([[axes[i]], bodies[i]]) for i in range(g)])
        sub = m[..., order[:, None], order[None, :]]
        return is_block_cone_matrix(sub, g, s, self.scalings, atol) & zero_shift(element, atol)


# ============================================================== Lorentz group
def minkowski_metric(n: int, dtype=jnp.float32):
    """η = diag(+1, −1, …, −1) on ℝⁿ (one time-like coordinate first)."""
    return jnp.diag(jnp.concatenate([jnp.ones(1, dtype), -jnp.ones(n - 1, dtype)]))


class Lorentz(AbstractNoncompactGroup):
    """The Lorentz group O(1, n−1): matrices Λ with $Λ^T η Λ = η$, η = diag(1, −1, …, −1).

    Not compact: `sample` draws Λ = R₁ B(ζ) R₂ where R₁, R₂ are block-diag(±1, Haar
    O(n−1)) and B(ζ) is a boost along coordinate 1 with rapidity ζ uniform on [−1, 1]
    (all four connected components occur; **not Haar**).
    """

    n: int | None = eqx.field(static=True, default=None)
    max_rapidity: float = eqx.field(static=True, default=1.0)
    symbol: ClassVar[str] = "O(1,n-1)"
    sampling_fields: ClassVar[tuple[str, ...]] = ("max_rapidity",)
    name_template: ClassVar[str] = "O(1,{n-1})"

    def __check_init__(self):
        if self.n is not None and self.n < 2:
            raise ValueError("Lorentz needs n >= 2 (one time and >= 1 space coordinate).")
        # cosh ζ overflows float32 above ζ ≈ 89.4
        check_real(self.max_rapidity, "max_rapidity", who="Lorentz", low=0, low_open=True,
                   high=88)

    def _spatial(self, key, num, dtype):
        n = self.n
        kq, ks = jax.random.split(key)
        q = haar_orthogonal(kq, num, n - 1, dtype)
        sign = jnp.where(jax.random.bernoulli(ks, 0.5, (num,)), 1.0, -1.0).astype(dtype)
        m = jnp.zeros((num, n, n), dtype)
        m = m.at[:, 0, 0].set(sign)
        return m.at[:, 1:, 1:].set(q)

    def _sample(self, key, num, dtype):
        n = self.n
        k1, k2, kz = jax.random.split(key, 3)
        z = jax.random.uniform(kz, (num,), dtype, -self.max_rapidity, self.max_rapidity)
        b = jnp.broadcast_to(jnp.eye(n, dtype=dtype), (num, n, n))
        ch, sh = jnp.cosh(z), jnp.sinh(z)
        b = b.at[:, 0, 0].set(ch).at[:, 1, 1].set(ch).at[:, 0, 1].set(sh).at[:, 1, 0].set(sh)
        return linear_element(self._spatial(k1, num, dtype) @ b @ self._spatial(k2, num, dtype))

    def _contains(self, element, atol):
        m = element.matrix
        eta = minkowski_metric(m.shape[-1], m.dtype)
        g = jnp.swapaxes(m, -1, -2) @ eta @ m
        scale = 1 + jnp.max(jnp.abs(m), axis=(-2, -1)) ** 2
        return (jnp.max(jnp.abs(g - eta), axis=(-2, -1)) <= atol * scale) & zero_shift(
            element, atol)


