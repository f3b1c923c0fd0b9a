"""Attention with isotropic tanh in place of softmax (isotropic paper App. D.1, eq 68)
and the softmax baseline.

Both take `(query, keys, values)` of shapes `(T, d)`, `(S, d)`, `(S, d_v)`. The symmetry
that separates them acts on the *key axis* S: mixing the S key–value pairs by an
orthogonal $U$ ($K \\mapsto UK$, $V \\mapsto UV$) leaves isotropic-tanh attention unchanged
(the scores rotate, isotropic tanh commutes with the rotation, and $U^TU = I$), while
softmax attention is only invariant to permuting the pairs. For the checker, whose groups
act on last axes, the `as_function` hook presents keys and values transposed —
$(Q, K^T, V^T)$ — so that a right-invariance cell acting on arguments 1 and 2 is exactly
this key-axis action. Both are also invariant to a common rotation of the query and key
features ($QK^T = QR^TRK^T$), which is tested in the library's own tests.
"""

from collections.abc import Callable
from typing import ClassVar

import jax.numpy as jnp
from jax import named_scope
from jaxtyping import Array, Float

from ...groups import Orthogonal, Permutation
from ...taxonomy import (
    AbstractOperation,
    Cell,
    DimensionRequired,
    Signature,
    Taxonomy,
    as_function,
    register,
    signature,
)
from . import _functional as F

# Fixed sizes of the non-acted axes in the checker's signature (T queries, d features,
# d_v value features); the key axis S is the checked dimension n.
_T, _D, _DV = 3, 4, 5


def _check_qkv(q, k, v, who: str):
    for name, a in (("query", q), ("keys", k), ("values", v)):
        if not hasattr(a, "shape") or a.ndim != 2:
            raise ValueError(f"{who}: `{name}` must be a 2-D array, got shape "
                             f"{getattr(a, 'shape', None)}.")
        if not jnp.issubdtype(a.dtype, jnp.floating):
            raise TypeError(f"{who}: `{name}` must be a real floating array, got {a.dtype}.")
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"{who}: `query` and `keys` need the same feature size, got shapes "
                         f"{q.shape} and {k.shape}.")
    if k.shape[0] != v.shape[0]:
        raise ValueError(f"{who}: `keys` and `values` need the same length S, got shapes "
                         f"{k.shape} and {v.shape}.")
    if k.shape[0] == 0:
        raise ValueError(f"{who}: `keys` must hold at least one key (S >= 1), got shape "
                         f"{k.shape}.")


def _attention_taxonomy(group, note: str) -> Taxonomy:
    cell = Cell(group, args=(1, 2))
    return Taxonomy(closure=(None, cell, None), probabilistic=(None, cell, None),
                    algebraic=(None, cell, None), note=note)


@register(family="operation", formula="IsoTanh(QKᵀ/√d_k) V", reference="isotropic paper eq 68")
class IsotropicTanhAttention(AbstractOperation):
    """Isotropic-tanh attention (isotropic paper eq 68):
    $\\text{Attention}(Q, K, V) = \\text{Isotropic-Tanh}(QK^T/\\sqrt{d_k})\\,V$, isotropic
    tanh applied to each query's score vector over the keys: weights of norm below 1 that
    can be negative (a value can be expressed with either sign).

    **Symmetry:** algebraically invariant to mixing the key–value pairs by any $U ∈ O(S)$
    (checked as R over the transposed keys and values, see the module notes); softmax
    attention only to permutations.
    """

    taxonomy: ClassVar[Taxonomy] = _attention_taxonomy(
        Orthogonal(), "R acts on the key axis S of (keys, values) jointly; also invariant "
                      "to a common rotation of query and key features")

    @named_scope("taxdl.IsotropicTanhAttention")
    def __call__(self, query: Float[Array, "t d"], keys: Float[Array, "s d"],
                 values: Float[Array, "s v"], *, key=None) -> Float[Array, "t v"]:
        del key
        _check_qkv(query, keys, values, "IsotropicTanhAttention")
        return F.isotropic_tanh_attention(query, keys, values)


@register(family="operation", formula="softmax(QKᵀ/√d_k) V",
          reference="isotropic paper App. D.1 (baseline of eq 68)")
class SoftmaxAttention(AbstractOperation):
    """Softmax attention $\\operatorname{softmax}(QK^T/\\sqrt{d_k})\\,V$ (the baseline the
    isotropic paper replaces in App. D.1).

    **Symmetry:** algebraically invariant to permuting the key–value pairs only (Sₛ on the
    key axis): softmax is basis-dependent over the keys.
    """

    taxonomy: ClassVar[Taxonomy] = _attention_taxonomy(
        Permutation(), "R acts on the key axis S of (keys, values) jointly")

    @named_scope("taxdl.SoftmaxAttention")
    def __call__(self, query: Float[Array, "t d"], keys: Float[Array, "s d"],
                 values: Float[Array, "s v"], *, key=None) -> Float[Array, "t v"]:
        del key
        _check_qkv(query, keys, values, "SoftmaxAttention")
        return F.softmax_attention(query, keys, values)


def _signature(attn, n=None) -> Signature:
    if n is None:
        raise DimensionRequired(type(attn).__name__, "`n`, the number of keys S on which "
                                "the group acts")
    return Signature(((_T, _D), (_D, n), (_DV, n)), acted=(False, True, True))


def _transposed(attn) -> Callable:
    return lambda q, kt, vt: attn(q, kt.T, vt.T)


for _cls in (IsotropicTanhAttention, SoftmaxAttention):
    signature.register(_cls)(_signature)
    as_function.register(_cls)(_transposed)
