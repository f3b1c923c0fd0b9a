"""Conic linear units: CoLU (Fu & Cohen §3, eqs 1–4) and rotated RCoLU (eq 5)."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jax import named_scope
from jaxtyping import Array, Float

from ...groups import (
    Affine,
    ConeGroup,
    Permutation,
    PositiveMonomial,
    RotatedConeGroup,
)
from ...taxonomy import (
    AbstractActivation,
    DimensionRequired,
    Signature,
    Taxonomy,
    as_function,
    register,
    signature,
)
from ..._types import check_bool, check_real
from . import _functional as F
from ._common import fixed

_PROJECTIONS = ("hard", "firm", "soft")


def _check_choice(value, name, options):
    if value not in options:
        raise ValueError(f"`{name}` must be one of {', '.join(map(repr, options))}, got "
                         f"{value!r}.")


def _check_axis(axis):
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise ValueError(f"`axis` must be an integer (the channel axis), got {axis!r}.")


def _check_cones(cone_dim, num_cones, channels, projection, axis, eps
                 ) -> tuple[int | None, int | None, int | None, float]:
    """Validate the hyperparameters CoLU and RCoLU share. Returns S (4 when neither S nor
    G is given), G, C (as Python integers) and ε."""
    if cone_dim is None and num_cones is None:
        cone_dim = 4
    if cone_dim is not None and num_cones is not None:
        raise ValueError("give exactly one of `cone_dim` (S) and `num_cones` (G).")
    cone_dim = F._int_or_none(cone_dim, "cone_dim", 1)
    num_cones = F._int_or_none(num_cones, "num_cones", 0)
    channels = F._int_or_none(channels, "channels", 1)
    _check_choice(projection, "projection", _PROJECTIONS)
    _check_axis(axis)
    return cone_dim, num_cones, channels, check_real(eps, "eps", low=0)


def _resolved(prim, channels: int | None, shared_axis: bool) -> tuple[int, int]:
    """(S, G) of a CoLU or RCoLU for `channels` (default: its `channels`); G = -1 when the
    channel count is unknown."""
    c = prim.channels if channels is None else channels
    if prim.num_cones == 0:
        return (c or 1), 0
    if c is None:
        if prim.cone_dim is None:
            raise ValueError(
                f"{type(prim).__name__}(num_cones=G): the cone dimension depends on the "
                "channel count; pass `channels=C` to know the declaration before a call.")
        return prim.cone_dim, -1
    return F.resolve_cones(c, prim.cone_dim, prim.num_cones, shared_axis)


def _check_call(prim, x) -> None:
    if x.ndim and not -x.ndim <= prim.axis < x.ndim:
        raise ValueError(f"{type(prim).__name__}: `axis` must be an integer in [{-x.ndim}, "
                         f"{x.ndim}) for an input of shape {x.shape}, got {prim.axis}.")
    if prim.channels is not None and x.ndim and x.shape[prim.axis] != prim.channels:
        raise ValueError(f"{type(prim).__name__} was built for channels={prim.channels} on "
                         f"axis {prim.axis}; got input shape {x.shape}.")


@register(family="activation", name="CoLU", formula="(x₁, W(x₁/(‖x₋₁‖ + ε)) x₋₁) per cone",
          example=lambda: CoLU(cone_dim=4), reference="CoLU paper eqs 1–4, Theorem 4.7")
class CoLU(AbstractActivation):
    """Conic linear unit (Fu & Cohen, "Conic Linear Units", §3).

    The C channels (on `axis`) form G cones of dimension S, each an axis coordinate
    $x_1$ and a body $x_{-1} \\in ℝ^{S-1}$; per cone
    $λ(x) = (x_1,\\; W(x_1/(\\|x_{-1}\\| + ε))\\,x_{-1})$ with
    $W(r) = \\min(\\max(r, 0), 1)$ (hard, eq 1), $\\mathrm{sigmoid}(4r - 2)$ (firm) or
    $\\mathrm{sigmoid}(r - ½)$ (soft, eq 2). Multi-head: C = G·S (eq 3); shared axis:
    C − 1 = G(S − 1) (eq 4). G = 0 and S = 1 are the identity; S = 2 is the
    component-wise activation (SiLU for soft, ReLU otherwise), as the paper specifies.

    **Arguments:**

    - `cone_dim`: S ≥ 1 (default 4 when neither S nor G is given).
    - `num_cones`: G ≥ 0, instead of S (S is then resolved from the channel count; give
      `channels` for the declaration to be known before a call).
    - `channels`: C, optional; validated against S/G and sharing when given.
    - `projection`: "hard" (default), "firm" or "soft".
    - `shared_axis`: all cones share coordinate 1 as their axis (eq 4).
    - `layout`: "block" (default: each cone a contiguous block, axis first) or
      "axes_first" (all G axes, then the G bodies: the authors' published layout).
    - `rectify_axis`: None (eq 1), "relu" or "silu": pass the axis coordinate through
      that function, a documented departure from eq 1.
    - `eps`: ε ≥ 0 (default 1e-7, eq 1).
    - `axis`: channel axis of the unbatched input (default -1; e.g. -3 for CHW).

    **Symmetry (Theorem 4.7):** algebraically equivariant under the cone group:
    permutations of the cones × O(S−1) on each cone body (the isometric part
    Perm(G) × O(S−1)^G), × positive per-cone scalings (one common scaling with a shared
    axis) when the map is exactly positively homogeneous, i.e. ε = 0 and the axis is not
    passed through SiLU. With ε > 0 the ratio $x_1/(\\|x_{-1}\\| + ε)$ is not scale
    invariant, so only the isometric part holds exactly. O(C) fails. S = 2 falls back to
    ReLU (Sₙ ⋉ (ℝ×₊)ⁿ) or SiLU (Sₙ); the identity cases are GL(C).

    Derivatives are hand-written (`jax.custom_jvp`): every transformation works
    (`jax.grad`, `jax.jvp`, `jax.jacfwd`, Hessians, `jax.vmap` of any of them), with
    finite gradients at a zero cone body.
    """

    cone_dim: int | None = eqx.field(static=True, default=None)
    num_cones: int | None = eqx.field(static=True, default=None)
    channels: int | None = eqx.field(static=True, default=None)
    projection: str = eqx.field(static=True, default="hard")
    shared_axis: bool = eqx.field(static=True, default=False)
    layout: str = eqx.field(static=True, default="block")
    rectify_axis: str | None = eqx.field(static=True, default=None)
    eps: float = eqx.field(static=True, default=1e-7)
    axis: int = eqx.field(static=True, default=-1)

    def __init__(self, cone_dim: int | None = None, num_cones: int | None = None, *,
                 channels: int | None = None, projection: str = "hard",
                 shared_axis: bool = False, layout: str = "block",
                 rectify_axis: str | None = None, eps: float = 1e-7, axis: int = -1):
        cone_dim, num_cones, channels, self.eps = _check_cones(
            cone_dim, num_cones, channels, projection, axis, eps)
        _check_choice(layout, "layout", ("block", "axes_first"))
        _check_choice(rectify_axis, "rectify_axis", (None, "relu", "silu"))
        shared_axis = check_bool(shared_axis, "shared_axis", who=type(self).__name__)
        if shared_axis and cone_dim is not None and cone_dim < 2:
            raise ValueError(f"`cone_dim` must be >= 2 with shared_axis=True, got {cone_dim}.")
        if channels is not None:
            F.resolve_cones(channels, cone_dim, num_cones, shared_axis)
        self.cone_dim, self.num_cones, self.channels = cone_dim, num_cones, channels
        self.projection, self.shared_axis, self.layout = projection, shared_axis, layout
        self.rectify_axis, self.axis = rectify_axis, int(axis)

    def resolved(self, channels: int | None = None) -> tuple[int, int]:
        """(S, G) for `channels` (default: the `channels` given at construction)."""
        return _resolved(self, channels, self.shared_axis)

    @property
    def taxonomy(self) -> Taxonomy:
        s, g = self.resolved()
        if g == 0 or s == 1:
            return fixed(Affine(), note="G = 0 or S = 1: the identity map")
        if s == 2:
            if self.projection == "soft":
                return fixed(Permutation(), note="S = 2: component-wise SiLU (paper §3.2)")
            return fixed(PositiveMonomial(), note="S = 2: component-wise ReLU (paper §3.2)")
        homogeneous = self.eps == 0 and self.rectify_axis != "silu"
        group = ConeGroup(cone_dim=s, scalings=homogeneous, shared_axis=self.shared_axis,
                          layout=self.layout)
        note = ("Theorem 4.7: cone permutations × O(S−1) per cone"
                + (" × positive cone scalings" if homogeneous else
                   "; positive scalings only hold for ε = 0 (and no SiLU axis)"))
        return fixed(group, note=note)

    @named_scope("taxdl.CoLU")
    def __call__(self, x: Float[Array, "..."], *, key=None) -> Float[Array, "..."]:
        del key
        _check_call(self, x)
        return F.colu(x, self.cone_dim, self.num_cones, projection=self.projection,
                      shared_axis=self.shared_axis, layout=self.layout,
                      rectify_axis=self.rectify_axis, eps=self.eps, axis=self.axis)


@register(family="activation", name="RCoLU", formula="x_n + W((x·e)/(‖x_r‖ + ε)) x_r per cone",
          example=lambda: RCoLU(cone_dim=4), reference="CoLU paper eq 5")
class RCoLU(AbstractActivation):
    """Rotated (homogeneous-axis) conic linear unit, Fu & Cohen eq 5.

    Each block of S channels is a cone whose axis is its all-ones direction
    $e = \\mathbf 1/\\sqrt S$: with $x_n = (x\\cdot e)e$ and $x_r = x - x_n$,
    $λ(x) = x_n + W\\big((x\\cdot e)/(\\|x_r\\| + ε)\\big)\\,x_r$ with $W$ as in `CoLU`.
    (Printed eq 5 swaps the clip bounds and the ratio; this is eq 1 rotated, as the
    text states.) Axis sharing is the single cone G = 1.

    **Arguments:** `cone_dim` (S ≥ 1) or `num_cones` (G ≥ 0), `channels`, `projection`,
    `eps`, `axis` as for `CoLU`.

    **Symmetry:** the CoLU cone group conjugated by the rotation taking each block's
    $e_1$ to $\\mathbf 1/\\sqrt S$: block permutations × O(S−1) on each block's
    $\\mathbf 1^\\perp$ (× positive block scalings when ε = 0); for G = 1 that is O(n−1)
    fixing $\\mathbf 1$. The identity cases are GL(C).
    """

    cone_dim: int | None = eqx.field(static=True, default=None)
    num_cones: int | None = eqx.field(static=True, default=None)
    channels: int | None = eqx.field(static=True, default=None)
    projection: str = eqx.field(static=True, default="hard")
    eps: float = eqx.field(static=True, default=1e-7)
    axis: int = eqx.field(static=True, default=-1)

    def __init__(self, cone_dim: int | None = None, num_cones: int | None = None, *,
                 channels: int | None = None, projection: str = "hard", eps: float = 1e-7,
                 axis: int = -1):
        cone_dim, num_cones, channels, self.eps = _check_cones(
            cone_dim, num_cones, channels, projection, axis, eps)
        if channels is not None:
            F.resolve_cones(channels, cone_dim, num_cones, False)
        self.cone_dim, self.num_cones, self.channels = cone_dim, num_cones, channels
        self.projection, self.axis = projection, int(axis)

    def resolved(self, channels: int | None = None) -> tuple[int, int]:
        """(S, G) for `channels` (default: the `channels` given at construction)."""
        return _resolved(self, channels, False)

    @property
    def taxonomy(self) -> Taxonomy:
        s, g = self.resolved()
        if g == 0 or s == 1:
            return fixed(Affine(), note="G = 0 or S = 1: the identity map")
        return fixed(RotatedConeGroup(cone_dim=s, scalings=self.eps == 0),
                     note="eq 5: the cone group of Theorem 4.7 rotated to the all-ones axes")

    @named_scope("taxdl.RCoLU")
    def __call__(self, x: Float[Array, "..."], *, key=None) -> Float[Array, "..."]:
        del key
        _check_call(self, x)
        return F.rcolu(x, self.cone_dim, self.num_cones, projection=self.projection,
                       eps=self.eps, axis=self.axis)


# ------------------------------------------------------------------ checker hooks
_SPATIAL = (2, 3)  # spatial extent used by checks of a non-last channel axis


def _spatial(prim) -> tuple[int, ...]:
    """The non-channel extent of the inputs a check draws: (2, 3), and axes of 2 more
    where the channel axis needs them (axis = −4 or 3 needs four dimensions)."""
    ndim = max(len(_SPATIAL) + 1, prim.axis + 1 if prim.axis >= 0 else -prim.axis)
    return _SPATIAL + (2,) * (ndim - 1 - len(_SPATIAL))


def _signature(prim, n):
    c = prim.channels if prim.channels is not None else n
    if c is None:
        raise DimensionRequired(type(prim).__name__, "the channel count `n`")
    if prim.axis in (-1,):
        return Signature(((c,),))
    return Signature((_spatial(prim) + (c,),))


def _channels_last(prim):
    """The map with the channel axis moved last, so groups act on the last axis."""
    if prim.axis == -1:
        return prim
    ndim = len(_spatial(prim)) + 1
    ax = prim.axis % ndim

    def f(x):
        return jnp.moveaxis(prim(jnp.moveaxis(x, -1, ax)), ax, -1)

    return f


for _cls in (CoLU, RCoLU):
    signature.register(_cls)(_signature)
    as_function.register(_cls)(_channels_last)
