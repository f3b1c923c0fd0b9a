"""An affine (or linear) layer whose weights are drawn by a given initialiser."""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import named_scope
from jaxtyping import Array, Float, PRNGKeyArray, Real

from ..._types import check_bool, check_float_dtype, check_int
from ...groups import Affine, ConformalLinear, GeneralLinear, Orthogonal, Scaling
from ...taxonomy import (
    AbstractLayer,
    Flavour,
    Signature,
    Taxonomy,
    reinitialise,
    signature,
    taxonomy,
    transport,
)
from .._numerics import require_real
from ..layers._linear import affine_transport


class InitialisedLinear(AbstractLayer):
    """Affine layer $f(x) = Wx + b$ (or linear, $f(x) = Wx$, with `use_bias=False`) with
    $W$ drawn by `init` and $b = 0$.

    **Symmetry:** closed under Aff(n) on every side with a bias (as
    [`Linear`][taxdl.nn.Linear]), under GL(n) without one; the
    probabilistic cells are those of the initialiser (whose declaration is that of
    $x \\mapsto Wx$ with $W$ so drawn, isotropic paper App. A.2), O(n) / O(n) / ℝ×·O(n)
    for the default Gaussian (the initial bias is zero, so every draw commutes with
    scalings; ℝ× for an untagged initialiser); algebraically trivial with a bias and
    ℝ×-equivariant without one ($W(cx) = cWx$).

    **Arguments:**

    - `in_features`, `out_features`: dimensions.
    - `init`: the initialiser, called as `init(key, (out_features, in_features), dtype)`;
      a taxdl initialiser carries the declaration used here. Default (None): isotropic
      Gaussian $W_{ij} \\sim \\mathcal N(0, 1/n_{in})$, as `Linear`.
    - `use_bias`: whether the layer has a bias $b$ (default True).
    - `key`: PRNG key (keyword-only); `dtype`: parameter dtype.
    """

    weight: Float[Array, "out in"]
    bias: Float[Array, " out"] | None
    init: Any
    in_features: int = eqx.field(static=True)
    out_features: int = eqx.field(static=True)

    def __init__(self, in_features: int, out_features: int, init: Callable | None = None, *,
                 use_bias: bool = True, key: PRNGKeyArray, dtype=jnp.float32):
        dtype = check_float_dtype(dtype, type(self).__name__)
        in_features = check_int(in_features, "in_features", who="InitialisedLinear")
        out_features = check_int(out_features, "out_features", who="InitialisedLinear")
        use_bias = check_bool(use_bias, "use_bias", who="InitialisedLinear")
        if init is not None and not callable(init):
            raise TypeError("InitialisedLinear: `init` must be None or an initialiser called "
                            f"as init(key, shape, dtype), got {init!r}.")
        self.in_features, self.out_features = in_features, out_features
        self.init = init
        if init is None:
            weight = jax.random.normal(key, (out_features, in_features), dtype) / jnp.sqrt(
                jnp.asarray(in_features, dtype))
        else:
            weight = jnp.asarray(init(key, (out_features, in_features), dtype))
        if weight.shape != (out_features, in_features):
            raise ValueError(f"InitialisedLinear: `init` returned shape {weight.shape}, expected "
                             f"{(out_features, in_features)}.")
        self.weight = weight.astype(dtype)
        self.bias = jnp.zeros((out_features,), dtype) if use_bias else None

    @property
    def taxonomy(self) -> Taxonomy:
        gl = GeneralLinear() if self.bias is None else Affine()
        # a linear map commutes with scalings: always without a bias, in law at the zero
        # initial bias with one
        alg = (None, None, Scaling()) if self.bias is None else None
        if self.init is None:
            o = Orthogonal()
            return Taxonomy(closure=(gl, gl, gl), probabilistic=(o, o, ConformalLinear()),
                            algebraic=alg, note="isotropic Gaussian initialisation")
        try:
            prob = taxonomy(self.init).probabilistic
        except TypeError:
            prob = (None, None, Scaling())  # untagged: only the scalings are known
        return Taxonomy(closure=(gl, gl, gl), probabilistic=prob, algebraic=alg,
                        note="probabilistic cells from the initialiser")

    @named_scope("taxdl.InitialisedLinear")
    def __call__(self, x: Real[Array, " in"], *, key=None) -> Float[Array, " out"]:
        del key
        x = require_real(x, "InitialisedLinear", self.weight.dtype)
        if x.shape != (self.in_features,):
            raise ValueError(f"InitialisedLinear expects shape ({self.in_features},), got "
                             f"{x.shape}; use jax.vmap for batches.")
        y = self.weight @ x
        return y if self.bias is None else y + self.bias


@signature.register
def _(layer: InitialisedLinear, n=None) -> Signature:
    return Signature(((layer.in_features,),))


@reinitialise.register
def _(layer: InitialisedLinear, key) -> InitialisedLinear:
    return InitialisedLinear(layer.in_features, layer.out_features, layer.init, key=key,
                             use_bias=layer.bias is not None, dtype=layer.weight.dtype)


@transport.register
def _(layer: InitialisedLinear, flavour, element, group) -> InitialisedLinear:
    # Without a bias only linear elements (t = 0) keep the class: a shift is dropped.
    d = layer.weight.dtype
    b = jnp.zeros((layer.out_features,), d) if layer.bias is None else layer.bias
    w, b = affine_transport(layer.weight, b, Flavour(flavour), element.matrix.astype(d),
                            element.shift.astype(d))
    if layer.bias is None:
        return eqx.tree_at(lambda l: l.weight, layer, w)
    return eqx.tree_at(lambda l: (l.weight, l.bias), layer, (w, b))
