"""What the checker needs to know about a primitive beyond its declaration.

These are `functools.singledispatch` free functions, not methods, so that a user's own
primitive can supply them with `register` without subclassing anything beyond
`AbstractPrimitive`. The checker (`taxdl.testing`) calls them; primitives register them
next to their definition.

- `as_function(primitive)`: the pure function the relations are about, called as
  `fn(*xs)` on unbatched inputs. Default: the primitive itself (modules are callable).
  Optimisers register the map from a gradient sequence to the update sequence.
- `signature(primitive, n)`: the input shapes (the group acts on the last axis of each
  argument) and the field. Default: one input of shape `(n,)`, real.
- `reinitialise(primitive, key)`: the same primitive with parameters redrawn from its
  initialisation distribution P (needed by initialisation-like probabilistic cells).
- `transport(primitive, flavour, element, group)`: the primitive with parameters θ
  replaced by g·θ so that f_{g·θ} = g∘f_θ (L), f_θ∘g (R), or g⁻¹∘f_θ∘g (E) (needed by
  closure cells).
- `random_call(primitive, key)`: for time-like cells, the function applied at one step
  (one draw of the primitive's internal randomness). Default: `partial(primitive, key=key)`.
- `data_call(primitive, key, batch_shape)`: for data-like cells, the per-example function
  obtained with statistics from one random data batch.
- `factor_out(primitive)`: for a primitive that is $k∘c$ with $k$ in a group K acting on
  its output and $c$ a fixed core (a normaliser's elementwise affine output $γ ⊙ y + β$
  after a standardisation), the core, the core's symmetry and $k$ (see `Factored`). The
  composition rules use it where the next part absorbs K (a Linear absorbs any affine
  map): there the pair's class is the next part after the core alone. Default: None.
- `perturb(primitive, key)`: a generic member of the primitive's functional class F near
  it. Algebraic and closure claims hold for *every* f ∈ F, so the checker also tests them
  (and searches maximality counterexamples) there. Default: every floating-point
  parameter leaf plus independent Gaussian noise; primitives whose parameters are
  constrained (e.g. must stay orthogonal or positive) register their own.
"""

import functools as ft
from collections.abc import Callable
from typing import Any, NamedTuple


class Signature(NamedTuple):
    """Input description used by checks.

    **Fields:**

    - `inputs`: shape of each positional argument (the group acts on the last axis).
    - `field`: `"real"` or `"complex"` inputs.
    - `acted`: for each argument, whether the group acts on it (default: all).
    """

    inputs: tuple[tuple[int, ...], ...]
    field: str = "real"
    acted: tuple[bool, ...] | None = None


def _foreign(what: str, primitive: Any) -> None:
    name = type(primitive).__name__
    if type(primitive).__module__.startswith("taxdl."):
        raise AssertionError(f"taxdl primitive {name} declares a cell that needs `{what}` "
                             "but registers none")
    raise NotImplementedError(
        f"{name} declares a cell that needs `{what}`; register one with "
        f"`taxdl.taxonomy.{what}.register({name})`."
    )


@ft.singledispatch
def as_function(primitive: Any) -> Callable:
    if not callable(primitive):
        _foreign("as_function", primitive)
    return primitive


class DimensionRequired(ValueError):
    """A primitive that works in any dimension was asked for its signature without one:
    pass the dimension `n` (a caller may choose a default by catching this error)."""

    def __init__(self, who: str, what: str = "the dimension `n`"):
        super().__init__(f"{who} works in any dimension: pass {what}.")


@ft.singledispatch
def signature(primitive: Any, n: int | None) -> Signature:
    if n is None:
        raise DimensionRequired(type(primitive).__name__)
    return Signature(((n,),))


def _parameter_free(primitive: Any) -> bool:
    import equinox as eqx
    import jax

    return not jax.tree_util.tree_leaves(eqx.filter(primitive, eqx.is_array))


@ft.singledispatch
def reinitialise(primitive: Any, key) -> Any:
    """Default: a parameter-free primitive is its own (point-mass) distribution."""
    if _parameter_free(primitive):
        return primitive
    _foreign("reinitialise", primitive)


@ft.singledispatch
def transport(primitive: Any, flavour, element, group) -> Any:
    """Default: a parameter-free primitive's class is {f}, so the transported function
    is f itself and the closure check reduces to the algebraic relation."""
    if _parameter_free(primitive):
        return primitive
    _foreign("transport", primitive)


class Factored(NamedTuple):
    """A primitive written as $k∘c$ (see `factor_out`).

    **Fields:**

    - `core`: the primitive with its factored-out parameters at their neutral values
      (the core $c$; the same type, so a model keeps its structure).
    - `cells`: the core's groups as a fixed function, `(L, R, E)` (None for trivial):
      $g∘c = c$, $c∘g = c$, $g^{-1}∘c∘g = c$. They are what the core's parameter-free
      class is closed under.
    - `group`: K, a group acting on the primitive's output that contains $k$.
    - `element`: $k$, with primitive = $k∘c$ (an unbatched `Element`).
    - `initial`: whether the primitive's initialisation is the core itself ($k = I$, e.g.
      γ = 1, β = 0), so that in law at initialisation it *is* the core.
    """

    core: Any
    cells: tuple
    group: Any
    element: Any
    initial: bool = False


@ft.singledispatch
def factor_out(primitive: Any) -> Factored | None:
    """Default: not factored (None)."""
    return None


@ft.singledispatch
def maps_rays(primitive: Any) -> bool:
    """Whether every member of the primitive's class maps each open ray into an open ray:
    $f(sx) = c\\,f(x)$ with $c = c(s, x) > 0$ for every $s > 0$, e.g. an isotropic
    activation $σ(r)\\hat x$ with $σ(r) > 0$ for $r > 0$ (isotropic tanh; not isotropic
    ReLU, which is 0 below $R_0$). Default False (or what
    [`keeps_rays`][taxdl.taxonomy.keeps_rays] answers: a map keeping each ray maps rays
    into rays). Maps whose algebraic E or R cell holds the positive scalings (positively
    homogeneous or scale-invariant) map rays into rays without registering. The
    composition rules use it: a part that is scale-invariant after a chain that maps
    rays into rays makes the chain scale-invariant."""
    return False


@ft.singledispatch
def keeps_rays(primitive: Any) -> bool:
    """Whether every member of the primitive's class maps each open ray into *itself*:
    $f(x) = c(x)\\,x$ with $c(x) > 0$ for every $x \\ne 0$, and $f(0) = 0$, e.g. an
    isotropic activation $σ(r)\\hat x$ with $σ(r) > 0$ for every $r > 0$ (isotropic tanh,
    isotropic sinusoid for −1 < λ < 4.6033…; not isotropic ReLU, which is 0 below $R_0$,
    nor $-x$ or any map that sends a ray onto its opposite or onto 0). Default False.

    The composition rules use it: a part $q$ that is scale-invariant
    ($q(cy) = q(y)$, $c > 0$) after a chain of maps that keep rays is that chain's whole
    function, $q(c(x)\\,x) = q(x)$, so the pair has all of $q$'s cells. Registering a
    map that keeps rays only up to sign, or sends some ray to 0, makes the inferred
    taxonomy wrong."""
    return False


@ft.singledispatch
def random_call(primitive: Any, key) -> Callable:
    return ft.partial(primitive, key=key)


@ft.singledispatch
def data_call(primitive: Any, key, batch_shape) -> Callable:
    _foreign("data_call", primitive)


@ft.singledispatch
def perturb(primitive: Any, key) -> Any:
    """Default: add N(0, σ²) noise to every inexact array leaf, σ = 0.5·rms(leaf) + 0.1."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    leaves, treedef = jax.tree_util.tree_flatten(primitive)
    keys = jax.random.split(key, max(len(leaves), 1))
    out = []
    for k, leaf in zip(keys, leaves):
        if eqx.is_inexact_array(leaf):
            real = jnp.finfo(leaf.dtype).dtype
            scale = (0.5 * jnp.sqrt(jnp.mean(jnp.abs(leaf) ** 2)) + 0.1).astype(real)
            noise = jax.random.normal(k, leaf.shape, leaf.dtype)
            leaf = leaf + scale.astype(leaf.dtype) * noise
        out.append(leaf)
    return jax.tree_util.tree_unflatten(treedef, out)
