"""A multilayer perceptron built from tagged primitives."""

import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import named_scope
from jaxtyping import Array, Float, PRNGKeyArray

from ..._types import check_bool, check_float_dtype, check_int
from ...taxonomy import (
    AbstractInitialiser,
    AbstractPrimitive,
    Signature,
    Taxonomy,
    as_function,
    register,
    reinitialise,
    signature,
    transport,
)
from ...taxonomy._compose import Part, part
from ...taxonomy._registry import has_taxonomy
from ._sequential import Sequential

PARAMETERIZATIONS = ("standard", "gmp")


def _nn():
    from ... import nn

    return nn


def _lookup(name: str, what: str):
    from ...taxonomy._registry import registry

    obj = getattr(_nn(), name, None)
    if obj is None:
        raise ValueError(f"MLP: unknown {what} {name!r}: taxdl.nn has no such primitive.")
    families = {e.family for e in registry().values() if e.cls is obj}
    if families and what not in families:
        a = "an" if what[0] in "aeiou" else "a"
        raise ValueError(f"MLP: {name!r} is in the {' / '.join(sorted(families))} family, "
                         f"not the {what} family: pass {a} {what} name here (see "
                         f"taxdl.table(family={what!r})).")
    return obj


def _make_activation(spec: Any, width: int) -> Any:
    if isinstance(spec, str):
        spec = _lookup(spec, "activation")
    if isinstance(spec, type):
        try:
            return spec()
        except TypeError:
            return spec(width)
    if isinstance(spec, AbstractPrimitive):
        return spec
    if callable(spec):
        made = spec(width)
        if not has_taxonomy(made):
            raise TypeError(
                f"MLP: `activation` {getattr(spec, '__name__', None) or repr(spec)} was called "
                "as a factory width -> primitive and "
                f"returned {type(made).__name__}, which carries no taxonomy; pass a taxdl "
                "primitive (e.g. taxdl.nn.ReLU()), its class or name, or a factory "
                "returning one (a plain function such as jax.nn.relu declares no "
                "symmetry).")
        return made
    raise TypeError(f"MLP: `activation` must be a primitive, a class, a name or a factory "
                    f"width -> primitive; got {spec!r}.")


def _make_norm(spec: Any, width: int, key, dtype) -> Any:
    if isinstance(spec, str):
        spec = _lookup(spec, "normaliser")
    if isinstance(spec, AbstractPrimitive):
        norm = spec
    elif isinstance(spec, type):  # a class: the width, and a key / dtype if it takes them
        params = inspect.signature(spec).parameters
        extra = {name: value for name, value in (("key", key), ("dtype", dtype))
                 if name in params}
        norm = spec(width, **extra)
    elif callable(spec):  # a factory, called with the width
        norm = spec(width)
    else:
        raise TypeError(f"MLP: `norm` must be a normaliser class, a name or a factory "
                        f"width -> normaliser; got {spec!r}.")
    if isinstance(norm, eqx.nn.StatefulLayer) and norm.is_stateful():
        raise ValueError(
            f"MLP: `norm` must be a stateless normaliser (e.g. LayerNorm, "
            f"IsotropicLayerNorm), got {type(norm).__name__}, which threads an "
            "`eqx.nn.State`: put it in your own module (see the guide 'Compose models').")
    return norm


class MLP(AbstractPrimitive):
    """A multilayer perceptron of tagged primitives:
    $x \\mapsto W_L\\,\\sigma(\\mathrm{norm}(W_{L-1} \\cdots \\sigma(\\mathrm{norm}(W_1 x + b_1))
    \\cdots) + b_L$.

    **Symmetry:** inferred from the parts (it is a [`Sequential`][taxdl.nn.Sequential]):
    e.g. with affine layers and an algebraically G-equivariant activation, every hidden
    layer carries a G-orbit of functionally identical parameters
    ([`parameter_symmetries`][taxdl.nn.parameter_symmetries]).

    **Arguments:**

    - `in_features`, `widths`, `out_features`: input size, hidden widths (a sequence, may
      be empty) and output size.
    - `activation`: a primitive instance (shared by every hidden layer), a primitive class
      (instantiated per layer), a name in `taxdl.nn` (e.g. `"ReLU"`, `"CoLU"`,
      `"IsotropicTanh"`) or a factory `width -> primitive`. Default `"ReLU"`.
    - `norm`: optional normaliser after each hidden affine map: a class or a factory called
      with the width (e.g. `taxdl.nn.LayerNorm`), or a name. With `parameterization="gmp"`
      it follows each GmP layer's activation, whose output is exactly zero when every
      unit is inactive (ReLU at initialisation: on average 2^−width of Gaussian inputs); a
      normaliser with ε = 0 (LayerNorm's default, also what a class or name builds) is
      singular there: outputs flip by O(1) under rounding and gradients blow up. Pass a
      factory with a positive ε, e.g. `norm=lambda n: taxdl.nn.LayerNorm(n, eps=1e-5)`.
    - `init`: optional weight initialiser (a `taxdl` initialiser, `init(key, shape, dtype)`)
      for every affine layer; the layers' probabilistic cells become the initialiser's.
    - `parameterization`: `"standard"` (affine layers `taxdl.nn.Linear`) or `"gmp"`
      (hidden layers `taxdl.nn.GmPLinear` in geometric parameterisation, Chen & Ge eq 13,
      with the activation inside the layer; the output layer stays affine). The
      activation must then commute with permutations of the units, elementwise (ReLU,
      Tanh) or isotropic (IsotropicTanh, Squash); CoLU and RCoLU, which mix units within
      a cone, raise `ValueError`.
    - `final_activation`: optional primitive applied to the output.
    - `use_bias`: whether the affine layers have biases (default True); without them the
      layers are linear maps $x \\mapsto Wx$ (e.g. the CoLU paper's $x \\mapsto wλ(w'x)$).
    - `key`: PRNG key (keyword-only); `dtype`: parameter dtype.
    """

    layers: Sequential
    in_features: int = eqx.field(static=True)
    widths: tuple[int, ...] = eqx.field(static=True)
    out_features: int = eqx.field(static=True)
    parameterization: str = eqx.field(static=True)

    def __init__(self, in_features: int, widths: Sequence[int], out_features: int,
                 activation: Any = "ReLU", norm: Any = None, init: Any = None,
                 parameterization: str = "standard", final_activation: Any = None,
                 use_bias: bool = True, *, key: PRNGKeyArray, dtype=jnp.float32):
        in_features = check_int(in_features, "in_features", who="MLP")
        out_features = check_int(out_features, "out_features", who="MLP")
        use_bias = check_bool(use_bias, "use_bias", who="MLP")
        if isinstance(widths, (int, str)) or not isinstance(widths, Iterable):
            raise TypeError(f"MLP: `widths` must be a sequence of hidden widths (e.g. [{widths!r}] "
                            f"for one hidden layer), got {widths!r}.")
        widths = tuple(check_int(w, "widths[i]", who="MLP") for w in widths)
        dtype = check_float_dtype(dtype, "MLP")
        if parameterization not in PARAMETERIZATIONS:
            raise ValueError(f"MLP: `parameterization` must be one of {PARAMETERIZATIONS}, got "
                             f"{parameterization!r}.")
        if init is not None and not isinstance(init, AbstractInitialiser) and not callable(init):
            raise TypeError(f"MLP: `init` must be a taxdl initialiser, got {init!r}.")
        nn = _nn()
        keys = jax.random.split(key, len(widths) + 1)
        layers: list[Any] = []
        prev = in_features
        for w, k in zip(widths, keys[:-1]):
            if parameterization == "gmp":
                gmp = _lookup("GmPLinear", "layer")
                act = _make_activation(activation, w)
                from ..layers._gmp import check_unit_activation

                check_unit_activation(act, w, "MLP(parameterization='gmp')")
                # (the layer reads σ's oddness and homogeneity from its declaration)
                layers.append(gmp(prev, w, act, key=k, dtype=dtype))
                if norm is not None:
                    layers.append(_make_norm(norm, w, jax.random.fold_in(k, 1), dtype))
            else:
                layers.append(_affine(nn, prev, w, init, use_bias, k, dtype))
                if norm is not None:
                    layers.append(_make_norm(norm, w, jax.random.fold_in(k, 1), dtype))
                layers.append(_make_activation(activation, w))
            prev = w
        layers.append(_affine(nn, prev, out_features, init, use_bias, keys[-1], dtype))
        if final_activation is not None:
            layers.append(_make_activation(final_activation, out_features))
        self.layers = Sequential(layers)
        self.in_features, self.widths, self.out_features = in_features, widths, out_features
        self.parameterization = parameterization

    @property
    def taxonomy(self) -> Taxonomy:
        return self.layers.taxonomy

    @named_scope("taxdl.MLP")
    def __call__(self, x: Float[Array, " in"], *, key: PRNGKeyArray | None = None
                 ) -> Float[Array, " out"]:
        if x.shape != (self.in_features,):
            raise ValueError(f"MLP expects one unbatched input of shape ({self.in_features},), "
                             f"got {x.shape}; use jax.vmap for batches.")
        return self.layers(x, key=key)


register(MLP, family="model", formula="W_L σ(…σ(W_1 x + b_1)…) + b_L",
         example=lambda: MLP(8, [8], 8, activation="ReLU", key=jax.random.key(0)),
         reference="isotropic paper §5.2 (parameter symmetries, eq 40)")


def _affine(nn, fan_in: int, fan_out: int, init: Callable | None, use_bias: bool, key, dtype):
    if init is None and use_bias:
        return nn.Linear(fan_in, fan_out, key=key, dtype=dtype)
    from ._initialised import InitialisedLinear

    return InitialisedLinear(fan_in, fan_out, init, use_bias=use_bias, key=key, dtype=dtype)


@part.register
def _(model: MLP, in_dim: int | None = None) -> Part:
    return part(model.layers, in_dim)


@as_function.register
def _(model: MLP):
    return as_function(model.layers)


@signature.register
def _(model: MLP, n=None) -> Signature:
    return Signature(((model.in_features,),))


@reinitialise.register
def _(model: MLP, key) -> MLP:
    return eqx.tree_at(lambda m: m.layers, model, reinitialise(model.layers, key))


@transport.register
def _(model: MLP, flavour, element, group) -> MLP:
    return eqx.tree_at(lambda m: m.layers, model, transport(model.layers, flavour, element, group))
