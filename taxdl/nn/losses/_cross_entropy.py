"""Cross-entropy loss between logits and a target distribution."""

from typing import ClassVar

import jax
import jax.numpy as jnp
from jax import named_scope
from jaxtyping import Array, Float, Shaped

from ...groups import Permutation
from ...taxonomy import (AbstractLoss, DimensionRequired, Signature, Taxonomy, register,
                         signature)
from .._numerics import require_floating


def cross_entropy(logits: Float[Array, "*b n"], target: Shaped[Array, "*#b n"]
                  ) -> Float[Array, "*b"]:
    """$\\mathcal L(z, p) = -\\sum_i p_i \\log \\operatorname{softmax}(z)_i$, with
    $0 \\log 0 = 0$: a logit of −∞ where the target is 0 contributes nothing (not NaN).

    `logits` is a real floating array of shape (..., n) and `target` a distribution over
    the n classes broadcasting against it (e.g. `jax.nn.one_hot(labels, n)`; an integer
    or boolean one-hot is cast to the logits' dtype); integer class indices are refused
    with an error that says so."""
    target = _check_pair(logits, target, "cross_entropy")
    log_p = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.sum(target * jnp.where(target == 0, 0, log_p), axis=-1)


def _check_pair(logits, target, who: str, name: str = "logits"):
    """Real floating `logits` (called `name`) of shape (..., n), n the class axis, and a
    `target` distribution over the classes that broadcasts against them without enlarging
    them (an integer or boolean one-hot is cast to the logits' dtype); returns the target.
    Integer class indices (the logits' shape without the class axis) are refused by name,
    with the one-hot hint."""
    require_floating(logits, who, name)
    shape = logits.shape
    expected = f"probabilities over the classes, broadcasting against `{name}` of shape {shape}"
    hint = "not class indices (use jax.nn.one_hot(labels, n))"
    if not hasattr(target, "dtype"):
        raise TypeError(f"{who}: `target` must be a real floating array of {expected}, got "
                        f"{type(target).__name__}.")
    exact = jnp.issubdtype(target.dtype, jnp.integer) or jnp.issubdtype(target.dtype, jnp.bool_)
    lacks = bool(shape) and tuple(target.shape) == tuple(shape[:-1])  # no class axis
    if exact and lacks:
        raise TypeError(f"{who}: `target` must be {expected}, {hint}; got an array of dtype "
                        f"{target.dtype} and shape {target.shape}.")
    if exact:
        target = target.astype(logits.dtype)
    require_floating(target, who, "target")
    try:
        fits = jnp.broadcast_shapes(tuple(target.shape), tuple(shape)) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{who}: `target` must be {expected}"
                         + (f", {hint}; got shape {target.shape}, which lacks the class axis."
                            if lacks else f", got shape {target.shape}."))
    return target


@register(family="loss", formula="−Σᵢ pᵢ log softmax(z)ᵢ",
          reference="isotropic paper Table 5.2 (CE Loss)")
class CrossEntropy(AbstractLoss):
    """Cross-entropy of logits $z$ against a target distribution $p$ (e.g. one-hot).

    **Symmetry:** algebraically Sₙ right-invariant, the permutation acting on logits and
    target together (Table 5.2, "CE Loss"); no larger group of the hierarchy.
    """

    taxonomy: ClassVar[Taxonomy] = Taxonomy(
        closure=(None, Permutation(), None),
        probabilistic=(None, Permutation(), None),
        algebraic=(None, Permutation(), None),
    )

    @named_scope("taxdl.CrossEntropy")
    def __call__(self, prediction: Float[Array, " n"], target: Shaped[Array, "*#n"]
                 ) -> Float[Array, ""]:
        target = _check_pair(prediction, target, "CrossEntropy", "prediction")
        return cross_entropy(prediction, target)


@signature.register
def _(loss: CrossEntropy, n=None) -> Signature:
    if n is None:
        raise DimensionRequired("CrossEntropy", "the class count `n`")
    return Signature(((n,), (n,)))
