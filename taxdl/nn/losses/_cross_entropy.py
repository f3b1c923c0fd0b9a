"""Cross-entropy loss between logits and a target distribution."""

from typing import ClassVar

import jax
import jax.numpy as jnp
from jax import named_scope
from jaxtyping import Array, Float

from ...groups import Permutation
from ...taxonomy import (AbstractLoss, DimensionRequired, Signature, Taxonomy, register,
                         signature)
from .._numerics import require_floating


def cross_entropy(logits: Float[Array, "*b n"], target: Float[Array, "*b n"]
                  ) -> Float[Array, "*b"]:
    """$\\mathcal L(z, p) = -\\sum_i p_i \\log \\operatorname{softmax}(z)_i$, with
    $0 \\log 0 = 0$: a logit of −∞ where the target is 0 contributes nothing (not NaN).

    `logits` and `target` are real floating arrays of one shape (..., n), the target a
    distribution over the n classes (e.g. `jax.nn.one_hot(labels, n)`); integer class
    indices are refused with a `TypeError` or `ValueError` that says so."""
    _check_pair(logits, target, "cross_entropy")
    log_p = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.sum(target * jnp.where(target == 0, 0, log_p), axis=-1)


def _check_pair(logits, target, who: str, name: str = "logits") -> None:
    """Real floating `logits` (called `name`) and `target` of one shape (..., n), n the
    class axis; an integer target, or one without the class axis, is named as class
    indices."""
    require_floating(logits, who, name)
    shape = logits.shape
    expected = f"probabilities of the shape of `{name}`, (..., n) = {shape}"
    hint = "not class indices (use jax.nn.one_hot(labels, n))"
    if not hasattr(target, "dtype"):
        raise TypeError(f"{who}: `target` must be a real floating array of {expected}, got "
                        f"{type(target).__name__}.")
    if jnp.issubdtype(target.dtype, jnp.integer) and target.shape != shape:
        raise TypeError(f"{who}: `target` must be {expected}, {hint}; got an array of dtype "
                        f"{target.dtype} and shape {target.shape}.")
    if target.ndim == len(shape) - 1 and target.shape == shape[:-1]:
        raise ValueError(f"{who}: `target` must be {expected}, {hint}; got shape "
                         f"{target.shape}, which lacks the class axis.")
    require_floating(target, who, "target")
    if target.shape != shape:
        raise ValueError(f"{who}: `target` must be {expected}, got shape {target.shape}.")


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
    def __call__(self, prediction: Float[Array, " n"], target: Float[Array, " n"]
                 ) -> Float[Array, ""]:
        _check_pair(prediction, target, "CrossEntropy", "prediction")
        return cross_entropy(prediction, target)


@signature.register
def _(loss: CrossEntropy, n=None) -> Signature:
    if n is None:
        raise DimensionRequired("CrossEntropy", "the class count `n`")
    return Signature(((n,), (n,)))
