"""Cross-entropy loss between logits and a target distribution."""

from typing import ClassVar

import jax
import jax.numpy as jnp
from jax import named_scope
from jaxtyping import Array, Float

from ...groups import Permutation
from ...taxonomy import (AbstractLoss, DimensionRequired, Signature, Taxonomy, register,
                         signature)


def cross_entropy(logits: Float[Array, "*b n"], target: Float[Array, "*b n"]
                  ) -> Float[Array, "*b"]:
    """$\\mathcal L(z, p) = -\\sum_i p_i \\log \\operatorname{softmax}(z)_i$, with
    $0 \\log 0 = 0$: a logit of −∞ where the target is 0 contributes nothing (not NaN)."""
    log_p = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.sum(target * jnp.where(target == 0, 0, log_p), axis=-1)


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
        if prediction.shape != target.shape:
            raise ValueError(
                f"CrossEntropy: `prediction` {prediction.shape} and `target` {target.shape} "
                "must have the same shape."
            )
        return cross_entropy(prediction, target)


@signature.register
def _(loss: CrossEntropy, n=None) -> Signature:
    if n is None:
        raise DimensionRequired("CrossEntropy", "the class count `n`")
    return Signature(((n,), (n,)))
