"""Quasi-isotropic activations (isotropic paper App. B, eqs 61–64): isotropy broken
slightly in many directions, so the symmetry is a finite rotation group Ψ of a lattice of
unit vectors (or, for trainable directions, O(n) only in distribution)."""

from collections.abc import Callable
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import named_scope
from jaxtyping import Array, Float, PRNGKeyArray

from ...groups import Dihedral, Orthogonal, SignedPermutation, Simplex
from ...taxonomy import (
    AbstractActivation,
    DimensionRequired,
    Flavour,
    Signature,
    Taxonomy,
    register,
    reinitialise,
    signature,
    transport,
)
from ..._types import check_bool, check_float_dtype, check_int, check_real
from . import _functional as F
from .._numerics import require_floating
from ._common import fixed, static_callable


@register(family="activation", formula="σ(‖x‖) Φ(x̂; α), Φ = [αx̂]/α + β(x̂ − [αx̂]/α)",
          reference="isotropic paper eqs 61–62")
class QuasiIsotropic(AbstractActivation):
    """Direction-rounding quasi-isotropic activation (isotropic paper eqs 61–62):
    $f(x) = σ(\\|x\\|)\\,Φ(\\hat x; α)$ with
    $Φ(\\hat x; α) = [α\\hat x]/α + φ(\\hat x - [α\\hat x]/α)$, $[\\cdot]$ rounding to the
    nearest integer (ties to even) and the anisotropic perturbation φ(v) = βv.

    **Arguments:**

    - `alpha`: the isotropy-breaking parameter α > ½ (default 4; α → ∞ is isotropic).
      For α ≤ ½ every coordinate of αx̂ (at most α in size) rounds to 0, and the map is
      the isotropic βσ(‖x‖)x̂ (`Isotropic`), so such α are refused.
    - `beta`: β ≠ 1 (default 0.5).
    - `normalise`: rescale Φ to unit norm (the exactly norm-1 variant the paper mentions).
    - `sigma`: radial function with σ(0) = 0 (default tanh).

    **Symmetry:** algebraically Bₙ-equivariant: rounding onto the cubic lattice
    $ℤ^n/α$ commutes with coordinate permutations and sign flips (rounding is odd), and
    the lattice's point group is exactly Bₙ.
    """

    alpha: float = eqx.field(static=True, default=4.0)
    beta: float = eqx.field(static=True, default=0.5)
    normalise: bool = eqx.field(static=True, default=False)
    sigma: Callable = eqx.field(static=True, default=jnp.tanh)
    taxonomy: ClassVar[Taxonomy] = fixed(SignedPermutation(),
                                         note="Ψ = Bₙ, the point group of the cubic lattice")

    def __check_init__(self):
        check_real(self.alpha, "alpha", low=0.5, low_open=True)
        if check_real(self.beta, "beta") == 1.0:
            raise ValueError("`beta` must differ from 1 (beta = 1 is the isotropic form).")
        check_bool(self.normalise, "normalise", who=type(self).__name__)
        static_callable(self.sigma, "sigma", type(self).__name__)

    @named_scope("taxdl.QuasiIsotropic")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        return F.quasi_isotropic(x, self.alpha, self.beta, self.sigma, self.normalise)


def _numpy_int_as_int(value):
    """A NumPy integer as the Python int it holds (a hyperparameter is hashed and shown);
    anything else as it is, for the checks."""
    if isinstance(value, np.integer) and not isinstance(value, np.bool_):
        return int(value)
    return value


@register(family="activation", formula="σ(‖x‖) x̂ / maxᵢ(b̂ᵢ·x̂)",
          example=lambda: LatticeIsotropic("cubic"), reference="isotropic paper eq 63")
class LatticeIsotropic(AbstractActivation):
    """Lattice-direction quasi-isotropic activation (isotropic paper eq 63):
    $f(x) = σ(\\|x\\|)\\,\\hat x / \\max_i(\\hat b_i \\cdot \\hat x)$ over a finite lattice of
    unit vectors $\\hat b_i$ (the direction is kept: no refraction).

    **Arguments:**

    - `lattice`: "cubic" ($\\pm e_i$; then $f(x) = σ(\\|x\\|)\\,x/\\|x\\|_\\infty$),
      "simplex" (the n + 1 vertices of a regular simplex) or "polygon" (k directions in
      ℝ²).
    - `k`: number of polygon directions (k ≥ 3; "polygon" only).
    - `sigma`: radial function with σ(0) = 0 (default tanh).

    **Symmetry:** algebraically equivariant under the lattice's symmetry group Ψ: Bₙ
    (cubic), S_{n+1} in its n-dimensional representation (simplex) or the dihedral group
    of order 2k (polygon); nothing larger.
    """

    lattice: str = eqx.field(static=True, default="cubic")
    k: int | None = eqx.field(static=True, default=None, converter=_numpy_int_as_int)
    sigma: Callable = eqx.field(static=True, default=jnp.tanh)

    def __check_init__(self):
        if self.lattice not in ("cubic", "simplex", "polygon"):
            raise ValueError(f"`lattice` must be 'cubic', 'simplex' or 'polygon', got "
                             f"{self.lattice!r}.")
        if self.lattice == "polygon":
            if (isinstance(self.k, (bool, np.bool_)) or not isinstance(self.k, (int, np.integer))
                    or self.k < 3):
                raise ValueError(f"the 'polygon' lattice needs an integer `k` >= 3, got "
                                 f"{self.k!r}.")
        elif self.k is not None:
            raise ValueError(f"`k` only applies to lattice='polygon', got k={self.k!r}.")
        static_callable(self.sigma, "sigma", type(self).__name__)

    @property
    def taxonomy(self) -> Taxonomy:
        if self.lattice == "cubic":
            return fixed(SignedPermutation(), note="Ψ = Bₙ (lattice ±eᵢ)")
        if self.lattice == "simplex":
            return fixed(Simplex(), note="Ψ = S_{n+1} (regular simplex)")
        return fixed(Dihedral(k=self.k), note=f"Ψ = dihedral group of order {2 * self.k}")

    @named_scope("taxdl.LatticeIsotropic")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        require_floating(x, "LatticeIsotropic")
        dirs = F.lattice_directions(self.lattice, x.shape[-1], self.k)
        return F.lattice_isotropic(x, jnp.asarray(dirs, x.dtype), self.sigma)


@signature.register
def _(prim: LatticeIsotropic, n=None) -> Signature:
    if prim.lattice == "polygon":
        return Signature(((2,),))
    if n is None:
        raise DimensionRequired("LatticeIsotropic")
    return Signature(((n,),))


@register(family="activation", formula="σ(‖x‖) x̂ / max(maxᵢ Ẑᵢ·x̂, δ)",
          example=lambda: TrainableDirection(8, key=jax.random.key(0)),
          reference="isotropic paper eq 64 (App. B.1)")
class TrainableDirection(AbstractActivation):
    """Trainable-direction quasi-isotropic activation (isotropic paper eq 64):
    $f(x) = σ(\\|x\\|)\\,\\hat x / \\max(\\max_i \\hat Z_{i}\\cdot\\hat x,\\; δ)$ with trainable
    directions $Z \\in ℝ^{m \\times n}$ normalised row-wise ($\\hat Z$) in the forward pass.

    Initialised with iid Gaussian rows, so $\\hat Z$ has rows uniform on the sphere and
    its law is invariant under $Z \\mapsto ZR$, $R \\in O(n)$: weakly (probabilistically)
    isotropic, breaking symmetry as it trains. The floor δ (default 0.05, a departure
    from eq 64) keeps values finite when no direction lies within 90° of $\\hat x$.

    **Arguments:**

    - `in_features`: n.
    - `num_directions`: m (default 4n).
    - `key`: PRNG key (keyword-only).
    - `sigma`: radial function with σ(0) = 0 (default tanh).
    - `floor`: δ ∈ (0, 1].
    - `dtype`: parameter dtype (default float32).

    **Symmetry:** closure O(n)-equivariant ($g^{-1}∘f_Z∘g = f_{Zg}$), probabilistically
    O(n)-equivariant under the initialisation, algebraically trivial.
    """

    directions: Float[Array, "m n"]
    in_features: int = eqx.field(static=True)
    sigma: Callable = eqx.field(static=True)
    floor: float = eqx.field(static=True)

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(None, None, Orthogonal()),
        probabilistic=(None, None, Orthogonal()),
        note="g⁻¹∘f_Z∘g = f_{Zg}; Gaussian Z is O(n)-invariant in law",
    )

    def __init__(self, in_features: int, num_directions: int | None = None, *,
                 key: PRNGKeyArray, sigma: Callable = jnp.tanh, floor: float = 0.05,
                 dtype=jnp.float32):
        dtype = check_float_dtype(dtype, type(self).__name__)
        who = "TrainableDirection"
        in_features = check_int(in_features, "in_features", who=who)
        m = check_int(4 * in_features if num_directions is None else num_directions,
                      "num_directions", who=who)
        static_callable(sigma, "sigma", "TrainableDirection")
        self.floor = check_real(floor, "floor", low=0, high=1, low_open=True)
        self.in_features, self.sigma = in_features, sigma
        self.directions = jax.random.normal(key, (m, in_features), dtype)

    @named_scope("taxdl.TrainableDirection")
    def __call__(self, x: Float[Array, "*b n"], *, key=None) -> Float[Array, "*b n"]:
        del key
        if x.ndim < 1 or x.shape[-1] != self.in_features:
            raise ValueError(f"TrainableDirection expects a last axis of size "
                             f"{self.in_features}, got shape {x.shape}.")
        return F.trainable_direction(x, self.directions.astype(x.dtype), self.sigma,
                                     self.floor)


@signature.register
def _(prim: TrainableDirection, n=None) -> Signature:
    return Signature(((prim.in_features,),))


@reinitialise.register
def _(prim: TrainableDirection, key) -> TrainableDirection:
    d = jax.random.normal(key, prim.directions.shape, prim.directions.dtype)
    return eqx.tree_at(lambda p: p.directions, prim, d)


@transport.register
def _(prim: TrainableDirection, flavour, element, group) -> TrainableDirection:
    if Flavour(flavour) is not Flavour.EQUIVARIANT:
        raise NotImplementedError("TrainableDirection is closed only under conjugation (E).")
    m = element.matrix.astype(prim.directions.dtype)
    # f_Z(g x) = g f_{Zg}(x) for orthogonal g, so g⁻¹∘f_Z∘g = f_{ZM}
    return eqx.tree_at(lambda p: p.directions, prim, prim.directions @ m)
