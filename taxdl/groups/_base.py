"""The abstract group and its elements.

Every group in taxdl acts on the *last axis* of an array. An element is stored in its
affine matrix form ``x ↦ M x + t`` (an [`Element`][taxdl.groups.Element]), so that all
groups share one action, one inverse and one batching rule, and a batch of elements is
simply an `Element` whose arrays carry a leading axis (vmap-able, jit-able).

A group is a *family* until its dimension is bound: `Orthogonal()` is O(n), the family
used in declarations; `Orthogonal(8)` (or `Orthogonal().on(8)`) is O(8), which can be
sampled and can act on arrays.
"""

import abc
import dataclasses
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Inexact, PRNGKeyArray, Shaped

from .._compile import SMALL_PROGRAM_OPTIONS
from .._types import IntLike, check_int



# A membership tolerance: a number, or a scalar array (traced inside compiled tests).
Tolerance = float | Float[Array, ""]


class Element(eqx.Module):
    """A group element in affine matrix form, acting as $x \\mapsto M x + t$.

    **Arguments:**

    - `matrix`: the representation matrix $M$, shape `(..., d, d)`.
    - `shift`: the translation $t$, shape `(..., d)` (zeros for linear groups).

    Leading axes index a batch of elements.
    """

    matrix: Inexact[Array, "*batch d d"]
    shift: Inexact[Array, "*batch d"]

    def __getitem__(self, index) -> "Element":
        return Element(self.matrix[index], self.shift[index])

    def __len__(self) -> int:
        if self.matrix.ndim < 3:
            raise TypeError("a single Element has no length; batches have a leading axis")
        return self.matrix.shape[0]

    def compose(self, other: "Element") -> "Element":
        """The element self ∘ other: $x \\mapsto M(M'x + t') + t$ (batches pair up)."""
        return Element(
            self.matrix @ other.matrix,
            jnp.einsum("...ij,...j->...i", self.matrix, other.shift) + self.shift,
        )


def linear_element(matrix: Inexact[Array, "*batch d d"]) -> Element:
    """Wrap a (batch of) matrices as linear elements (zero shift)."""
    return Element(matrix, jnp.zeros(matrix.shape[:-1], matrix.dtype))


class AbstractGroup(eqx.Module):
    """A matrix group acting on the last axis of arrays.

    Concrete groups are final classes that set the class variables and implement
    `_sample` and `_contains`; acting, inverting and naming are shared here. Most set the
    traits through `AbstractCompactGroup` or `AbstractNoncompactGroup`, which also bind a
    family to a dimension (`on`, which a group built from bound factors implements
    itself).

    **Class variables:**

    - `symbol`: short symbol of the family, e.g. `"O"`.
    - `name_template`: the display name `name`, e.g. `"O({n})"` gives `"O(n)"` for the
      family and `"O(8)"` when bound. `{n}` and `{n-1}` are the bound dimension and one
      less (the letters `n`, `n-1` for a family); any other `{x}` is the group's
      attribute `x` (a hyperparameter, or a property naming a variable part).
    - `finite`: whether the group is finite.
    - `compact`: whether it is compact (then `sample` draws from the Haar measure).
    - `haar`: whether `sample` draws exactly from the Haar (uniform) measure.
    - `field`: `"real"`, `"complex"` or `"any"`: the field of the space acted on.
    - `isometric`: whether every element is orthogonal/unitary with zero shift.
    - `sampling_fields`: names of fields that only shape `sample`'s distribution (a
      non-compact group's spread), not the set of elements: groups that differ only in
      them are the same group to the hierarchy (`same_group`, `is_subgroup`).
    """

    n: eqx.AbstractVar[int | None]

    symbol: eqx.AbstractClassVar[str]
    name_template: eqx.AbstractClassVar[str]
    finite: eqx.AbstractClassVar[bool]
    compact: eqx.AbstractClassVar[bool]
    haar: eqx.AbstractClassVar[bool]
    field: eqx.AbstractClassVar[str]
    isometric: eqx.AbstractClassVar[bool]
    sampling_fields: ClassVar[tuple[str, ...]] = ()

    def __check_init__(self):
        # Runs for every concrete group (Equinox calls each class's __check_init__).
        if self.n is not None:
            _check_dimension(self.n, type(self).__name__)

    # ------------------------------------------------------------------ binding
    @abc.abstractmethod
    def on(self, n: "IntLike") -> "AbstractGroup":
        """Return the same group bound to dimension `n` of the space acted on (a family
        with a field `n` is rebound; a group whose dimension its factors fix accepts only
        that dimension)."""

    @property
    def bound(self) -> bool:
        """Whether the dimension is bound (the group can be sampled)."""
        return self.n is not None

    @property
    def dim(self) -> int:
        """Dimension of the representation space the elements act on."""
        return self._require_n()

    @property
    def name(self) -> str:
        """The display name, e.g. `"O(n)"` for the family or `"O(8)"` when bound."""
        return self.name_template.format_map(_NameFields(self))

    def _require_n(self) -> int:
        if self.n is None:
            raise ValueError(
                f"{self.name} is a group family with no dimension bound; call "
                f"`.on(n)` (e.g. `{type(self).__name__}().on(8)`) before sampling or acting."
            )
        return self.n

    def __str__(self) -> str:
        return self.name

    # ------------------------------------------------------------------ elements
    def sample(
        self, key: PRNGKeyArray, num: IntLike, dtype=jnp.float32
    ) -> Element:
        """Draw `num` elements (a batched `Element`).

        For compact groups the draw is exact from the Haar measure; for non-compact ones
        it follows the distribution documented on the concrete class.
        """
        self._require_n()
        num = check_int(num, "num", who=f"{type(self).__name__}.sample")
        dtype = jnp.dtype(dtype)
        if not jnp.issubdtype(dtype, jnp.inexact):
            raise TypeError(f"{self.name}: `dtype` must be a floating or complex dtype "
                            f"(e.g. float32), got {dtype}.")
        return _jit_sample(self, key, num, dtype)

    def identity(self, dtype=jnp.float32) -> Element:
        """The identity element of the bound group."""
        d = self.dim
        return linear_element(jnp.eye(d, dtype=dtype))

    def act(self, element: Element, x: Shaped[ArrayLike, "*b d"]) -> Shaped[Array, "*b d"]:
        """Apply one element to `x` along its last axis: $M x + t$."""
        x = jnp.asarray(x)
        d = element.matrix.shape[-1]
        if x.shape[-1:] != (d,):
            raise ValueError(
                f"{self.name} acts on a last axis of size {d}; got `x` with shape {x.shape}."
            )
        m = element.matrix
        if m.ndim != 2:
            raise ValueError(
                f"{self.name}.act applies one element; got `element` with a matrix of shape "
                f"{m.shape} (a batch: index it, or `jax.vmap` over it)."
            )
        if not jnp.issubdtype(x.dtype, jnp.inexact):
            dtype = m.dtype   # an integer x is acted on in M's dtype (M is not truncated)
        elif jnp.issubdtype(m.dtype, jnp.inexact):
            dtype = jnp.result_type(m.dtype, x.dtype)
        else:
            dtype = x.dtype
        y = jnp.einsum("ij,...j->...i", m.astype(dtype), x.astype(dtype),
                       precision=jax.lax.Precision.HIGHEST)
        return y + element.shift.astype(dtype)

    def inverse(self, element: Element) -> Element:
        """The inverse element $x \\mapsto M^{-1}(x - t)$ (the conjugate transpose for
        groups of isometries, a matrix inverse otherwise)."""
        if self.isometric:
            return linear_element(jnp.conj(jnp.swapaxes(element.matrix, -1, -2)))
        inv = jnp.linalg.inv(element.matrix)
        return Element(inv, -jnp.einsum("...ij,...j->...i", inv, element.shift))

    def compose(self, a: Element, b: Element) -> Element:
        """The element $a \\circ b$."""
        return a.compose(b)

    def contains(self, element: Element, atol: Tolerance | None = None
                 ) -> Bool[Array, "*batch"]:
        """Whether `element` (or each element of a batch) belongs to the bound group.

        `atol` is the tolerance of the defining equations (e.g. $\\|M^TM - I\\|_{\\max}$);
        by default 1e-5, widened for half-precision elements to what their rounding
        allows (`membership_atol`). Half-precision elements are tested in float32.

        Raises `ValueError` if the element's matrix is not `(..., d, d)` for this group.
        """
        d = self.dim
        if element.matrix.shape[-2:] != (d, d) or element.shift.shape[-1:] != (d,):
            raise ValueError(
                f"{self.name} has elements with a ({d}, {d}) matrix and a ({d},) shift; "
                f"got matrix shape {element.matrix.shape} and shift shape "
                f"{element.shift.shape}."
            )
        if atol is None:
            atol = max(membership_atol(element.matrix.dtype),
                       membership_atol(element.shift.dtype))
        element = Element(_widen_half(element.matrix), _widen_half(element.shift))
        # a traced tolerance, not a compile-time constant: one program per group and
        # element shape serves every tolerance
        atol = jnp.asarray(atol, jnp.finfo(element.matrix.dtype).dtype)
        complex_element = jnp.iscomplexobj(element.matrix) or jnp.iscomplexobj(element.shift)
        if complex_element and self.real_elements():
            # iI is unitary, not orthogonal; e^{iφ}I is not ±I: the real families' tests
            # (MᵀM = I through conj, |a| = 1) would otherwise pass complex matrices
            real = ((jnp.max(jnp.abs(jnp.imag(element.matrix)), axis=(-2, -1)) <= atol)
                    & (jnp.max(jnp.abs(jnp.imag(element.shift)), axis=-1) <= atol))
            element = Element(jnp.real(element.matrix), jnp.real(element.shift))
            return _jit_contains(self, element, atol) & real
        return _jit_contains(self, element, atol)

    def real_elements(self) -> bool:
        """Whether every element has a real matrix and shift: the real families, and
        the groups that act on complex spaces by real matrices (the trivial group,
        permutations). A complex matrix is a member only if its imaginary part is 0
        (within the tolerance)."""
        return self.field == "real"

    @abc.abstractmethod
    def _sample(self, key: PRNGKeyArray, num: int, dtype) -> Element: ...

    @abc.abstractmethod
    def _contains(self, element: Element, atol: Tolerance) -> Bool[Array, "*batch"]: ...

    # ------------------------------------------------------------------ hierarchy
    def is_subgroup(self, other: "AbstractGroup") -> bool:
        """Whether this family is a subgroup of `other` (partial order, reflexive)."""
        from ._hierarchy import is_subgroup

        return is_subgroup(self, other)

    def supergroups(self) -> tuple["AbstractGroup", ...]:
        """The immediate supergroups (bound to the same dimension) that a maximality check
        tests: those the hierarchy's rule lists and, for a group fixing the all-ones
        direction, +λ1 × G (`shift_extensions`), less any that holds another one."""
        from ._hierarchy import immediate_supergroups, least, shift_extensions

        return least(immediate_supergroups(self) + shift_extensions(self))


class AbstractCompactGroup(AbstractGroup):
    """A compact group of isometries (orthogonal or unitary, zero shift) whose `sample`
    draws exactly from the Haar measure. Concrete subclasses set `symbol`,
    `name_template`, `finite` and `field`."""

    compact: ClassVar[bool] = True
    haar: ClassVar[bool] = True
    isometric: ClassVar[bool] = True

    def on(self, n: IntLike) -> AbstractGroup:
        return _rebind(self, n)


class AbstractNoncompactGroup(AbstractGroup):
    """A non-compact (so infinite) group acting on real space, not made of isometries.
    There is no Haar probability measure: `sample` follows the distribution documented
    on the concrete class. Concrete subclasses set `symbol` and `name_template`."""

    finite: ClassVar[bool] = False
    compact: ClassVar[bool] = False
    haar: ClassVar[bool] = False
    field: ClassVar[str] = "real"
    isometric: ClassVar[bool] = False

    def on(self, n: IntLike) -> AbstractGroup:
        return _rebind(self, n)


def scalars_label(group: AbstractGroup) -> str:
    """"ℝ×₊" for a group with `positive=True`, else "ℝ×" (for name templates)."""
    return "ℝ×₊" if group.positive else "ℝ×"


def _rebind(group: AbstractGroup, n: IntLike) -> AbstractGroup:
    """`group` with its dimension field set to `n`."""
    _check_dimension(n, type(group).__name__)
    return dataclasses.replace(group, n=int(n))


class _NameFields:
    """The fields of a `name_template` (see `AbstractGroup`), looked up on demand."""

    def __init__(self, group: AbstractGroup):
        self.group = group

    def __getitem__(self, key: str):
        n = self.group.n
        if key == "n":
            return "n" if n is None else n
        if key == "n-1":
            return "n-1" if n is None else n - 1
        return getattr(self.group, key)


# Sampling and membership are compiled once per (group, num, dtype): groups hold only
# static fields, so filter_jit treats them as compile-time constants. They are small
# programs, compiled for a quick compile rather than a fast run (see `taxdl._compile`).
def _sample(group: AbstractGroup, key, num: int, dtype) -> Element:
    return group._sample(key, num, dtype)


def _contains(group: AbstractGroup, element: Element, atol: Tolerance):
    return group._contains(element, atol)


def _small_program(fun):
    """`fun` compiled with `SMALL_PROGRAM_OPTIONS` when called outside any trace, and as a
    plain nested `filter_jit` inside one (JAX accepts XLA options on top-level programs
    only). A call under a trace whose arguments are all constants is recognised by JAX's
    refusal of the options and repeated as a nested program."""
    light = eqx.filter_jit(fun, compiler_options=SMALL_PROGRAM_OPTIONS)
    plain = eqx.filter_jit(fun)

    def call(*args):
        if any(isinstance(a, jax.core.Tracer) for a in jax.tree.leaves(args)):
            return plain(*args)
        try:
            return light(*args)
        except ValueError:
            return plain(*args)  # raises again if the error was not about the options

    return call


_jit_sample = _small_program(_sample)
_jit_contains = _small_program(_contains)


_HALF = (jnp.dtype(jnp.float16), jnp.dtype(jnp.bfloat16))


def membership_atol(dtype) -> float:
    """The default tolerance of `contains` for elements stored in `dtype`: 1e-5, or four
    machine epsilons for half precisions (whose rounding alone moves, e.g., the Gram
    matrix of an orthogonal matrix by about one epsilon)."""
    dtype = jnp.dtype(dtype)
    return 4 * float(jnp.finfo(dtype).eps) if dtype in _HALF else 1e-5


def _widen_half(a: Array) -> Array:
    """`a` in float32 if it is half precision (membership tests use determinants, which
    have no half-precision kernels), else unchanged."""
    return a.astype(jnp.float32) if a.dtype in _HALF else a


def _check_dimension(n, who: str) -> None:
    check_int(n, "n", who=who)


def block_count(group: AbstractGroup) -> int:
    """The number of blocks n / `block` of a bound block group (validating divisibility)."""
    n, block = group._require_n(), group.block
    if n % block != 0:
        raise ValueError(f"{type(group).__name__}: the dimension n = {n} must be a multiple "
                         f"of `block` = {block}.")
    return n // block


def check_block_group(group: AbstractGroup) -> None:
    """Validate a block group's `block` and, when bound, that it divides `n`."""
    who, block = type(group).__name__, group.block
    check_int(block, "block", who=who)
    if group.n is not None:
        _check_dimension(group.n, who)
        block_count(group)


def blocks_label(group: AbstractGroup) -> str:
    """The exponent G of a block group's name: n/`block` for the family, else G."""
    return f"n/{group.block}" if group.n is None else str(block_count(group))


# ---------------------------------------------------------------------- helpers
def is_identity(m: Array, atol: Tolerance) -> Bool[Array, "*batch"]:
    eye = jnp.eye(m.shape[-1], dtype=m.dtype)
    return jnp.max(jnp.abs(m - eye), axis=(-2, -1)) <= atol


def is_orthogonal(m: Inexact[Array, "*batch d d"], atol: Tolerance) -> Bool[Array, "*batch"]:
    mtm = jnp.einsum("...ki,...kj->...ij", jnp.conj(m), m)
    return is_identity(mtm, atol)


def zero_shift(e: Element, atol: Tolerance) -> Bool[Array, "*batch"]:
    return jnp.max(jnp.abs(e.shift), axis=-1, initial=0.0) <= atol


def diagonal_part(m: Array, atol: Tolerance) -> tuple[Array, Bool[Array, "*batch"]]:
    """The diagonal $d$ of $M$ and whether $M = \\operatorname{diag}(d)$ (to `atol`)."""
    d = jnp.diagonal(m, axis1=-2, axis2=-1)
    off = m - d[..., :, None] * jnp.eye(m.shape[-1], dtype=m.dtype)
    return d, jnp.max(jnp.abs(off), axis=(-2, -1)) <= atol


def diagonal_matrices(d: Array, n: int, dtype) -> Array:
    """The matrices $\\operatorname{diag}(d)$ for rows `d` of shape (num, n), or $d\\,I$
    for shape (num, 1)."""
    return d[:, :, None] * jnp.eye(n, dtype=dtype)


def scalar_part(m: Array, atol: Tolerance) -> tuple[Array, Bool[Array, "*batch"]]:
    """The entry $a = M_{11}$ and whether $M = aI$ (to `atol`)."""
    a = m[..., 0, 0]
    eye = jnp.eye(m.shape[-1], dtype=m.dtype)
    return a, jnp.max(jnp.abs(m - a[..., None, None] * eye), axis=(-2, -1)) <= atol


def unit_monomial(m: Array, atol: Tolerance) -> tuple[Array, Bool[Array, "*batch"]]:
    """Where the entries have modulus 1, and whether `m` has exactly one such entry per row
    and column and zeros elsewhere (a signed permutation for real `m`; a permutation with
    unit phases for complex `m`)."""
    a = jnp.abs(m)
    near_one = jnp.abs(a - 1) <= atol
    near_zero = a <= atol
    entries_ok = jnp.all(near_one | near_zero, axis=(-2, -1))
    rows = jnp.sum(near_one, axis=-1) == 1
    cols = jnp.sum(near_one, axis=-2) == 1
    return near_one, entries_ok & jnp.all(rows, axis=-1) & jnp.all(cols, axis=-1)


def is_signed_permutation(m: Array, atol: Tolerance) -> Bool[Array, "*batch"]:
    """Exactly one entry of magnitude 1 per row and column, zeros elsewhere."""
    return unit_monomial(m, atol)[1]


def nonnegative_real(m: Array, atol: Tolerance) -> Bool[Array, "*batch"]:
    """Every entry real (imaginary part within `atol`) and ≥ −`atol`: the real part of a
    complex entry such as i is 0, so its imaginary part is what rules it out."""
    return jnp.all((jnp.real(m) >= -atol) & (jnp.abs(jnp.imag(m)) <= atol), axis=(-2, -1))


def work_dtype(dtype) -> jnp.dtype:
    """The real dtype sampling is computed in for elements of `dtype`: float64 for 64-bit
    dtypes (float64, complex128), float32 otherwise (half precisions are computed in
    float32 and cast). Chosen explicitly, so no implicit dtype promotion is involved."""
    wide = jnp.dtype(dtype) in (jnp.dtype(jnp.float64), jnp.dtype(jnp.complex128))
    return jnp.dtype(jnp.float64 if wide else jnp.float32)


def complex_work_dtype(dtype) -> jnp.dtype:
    """The complex counterpart of `work_dtype`: complex128 or complex64."""
    wide = work_dtype(dtype) == jnp.dtype(jnp.float64)
    return jnp.dtype(jnp.complex128 if wide else jnp.complex64)


HOUSEHOLDER_MAX_N = 16
"""Largest n for which Haar samples are factored by Householder reflections written in
JAX operations (`householder_q`) rather than by LAPACK's batched QR."""


def householder_q(z: Array, with_det: bool = False):
    """The Q factor of a batch of square matrices, `z = Q R` with diag(R) real and
    positive (unique for invertible z), by Householder reflections written in JAX
    operations, real or complex. For Gaussian z that Q is exactly Haar distributed on
    O(n) or U(n) (Mezzadri 2007: the QR factorisation made unique by a positive diag R).

    Used for n ≤ `HOUSEHOLDER_MAX_N`: group samples are batches of many small matrices,
    for which a batched LAPACK factorisation is split over the CPU thread pool, and two
    such factorisations in one program (a Lorentz boost's two rotations, say) can
    deadlock that pool on a machine with few cores (jax 0.10). Written out (a loop over
    the columns, compiled once whatever n), the factorisation is a handful of fused
    elementwise and reduction passes per column and runs unchanged on any backend.
    With `with_det`, also det Q (±1 for real z; each reflection contributes −1, each
    column's phase its own)."""
    n = z.shape[-1]
    rows = jnp.arange(n)

    def reflect(k, carry):
        a, q, det, flips = carry
        col = jax.lax.dynamic_index_in_dim(a, k, axis=-1, keepdims=False)
        x = jnp.where(rows >= k, col, 0)  # the column from row k down
        norm = jnp.sqrt(jnp.sum(jnp.real(x * jnp.conj(x)), axis=-1))
        x0 = jax.lax.dynamic_index_in_dim(col, k, axis=-1, keepdims=False)
        mag0 = jnp.abs(x0)
        # the unit phase of x_k (1 at x_k = 0): v = x + phase‖x‖e_k avoids cancellation,
        # and H = I − 2vv*/(v*v) maps x to −phase‖x‖e_k
        phase = jnp.where(mag0 > 0, x0 / jnp.where(mag0 > 0, mag0, 1).astype(z.dtype),
                          jnp.ones((), z.dtype))
        v = x + jnp.where(rows == k, (phase * norm.astype(z.dtype))[:, None], 0)
        vv = jnp.sum(jnp.real(v * jnp.conj(v)), axis=-1)
        beta = jnp.where(vv > 0, 2 / jnp.where(vv > 0, vv, 1), 0).astype(z.dtype)
        w = jnp.einsum("bi,bij->bj", jnp.conj(v), a)
        a = a - beta[:, None, None] * v[:, :, None] * w[:, None, :]
        u = jnp.einsum("bij,bj->bi", q, v)
        q = q - beta[:, None, None] * u[:, :, None] * jnp.conj(v)[:, None, :]
        # R_kk = −phase‖x‖: column k of Q is multiplied by −phase at the end
        flips = jnp.where(rows == k, -phase[:, None], flips)
        det = det * jnp.where(vv > 0, phase, -phase)  # det H = −1 (1 when H = I)
        return a, q, det, flips

    start = (z, jnp.broadcast_to(jnp.eye(n, dtype=z.dtype), z.shape),
             jnp.ones(z.shape[:1], z.dtype), jnp.ones(z.shape[:2], z.dtype))
    _, q, det, flips = jax.lax.fori_loop(0, n, reflect, start)
    q = q * flips[:, None, :]
    return (q, det) if with_det else q


def haar_orthogonal(key: PRNGKeyArray, num: int, n: int, dtype,
                    special: bool = False) -> Float[Array, "_ n n"]:
    """Exact Haar sample of O(n): QR of a Gaussian matrix with the sign of diag(R) fixed
    (Mezzadri 2007), computed in float64 for 64-bit `dtype`, in float32 otherwise (by
    `householder_q` for n ≤ `HOUSEHOLDER_MAX_N`, else LAPACK). With `special`, Haar on
    SO(n): the first column's sign is flipped where det = −1."""
    work = work_dtype(dtype)
    z = jax.random.normal(key, (num, n, n), dtype=work)
    if n <= HOUSEHOLDER_MAX_N:
        q, det = householder_q(z, with_det=True)
    else:
        q, r = jnp.linalg.qr(z)
        d = jnp.sign(jnp.diagonal(r, axis1=-2, axis2=-1))
        q = q * jnp.where(d == 0, 1, d)[..., None, :]
        det = jnp.linalg.det(q) if special else None
    if special:
        q = q.at[..., :, 0].multiply(jnp.where(det < 0, -1, 1).astype(work)[..., None])
    return q.astype(dtype)


def haar_unitary(key: PRNGKeyArray, num: int, n: int, dtype) -> Array:
    """Exact Haar sample of U(n): QR of a complex Gaussian with diag(R) phases removed
    (by `householder_q` for n ≤ `HOUSEHOLDER_MAX_N`, else LAPACK)."""
    cdtype = complex_work_dtype(dtype)
    rdtype = work_dtype(dtype)
    kr, ki = jax.random.split(key)
    z = jax.lax.complex(jax.random.normal(kr, (num, n, n), rdtype),
                        jax.random.normal(ki, (num, n, n), rdtype))
    if n <= HOUSEHOLDER_MAX_N:
        return householder_q(z)
    q, r = jnp.linalg.qr(z)
    diag = jnp.diagonal(r, axis1=-2, axis2=-1)
    mag = jnp.abs(diag)
    safe = jnp.where(mag == 0, 1, mag).astype(cdtype)
    phase = jnp.where(mag == 0, jnp.ones((), cdtype), diag / safe)
    return q * phase[..., None, :]


def random_signs(key: PRNGKeyArray, num: int, n: int, dtype) -> Array:
    """`num` vectors of n independent uniform signs ±1, shape (num, n)."""
    return jnp.where(jax.random.bernoulli(key, 0.5, (num, n)), 1, -1).astype(dtype)


def log_uniform(key: PRNGKeyArray, shape, dtype, low: float = 0.5, high: float = 2.0):
    """Positive factors with log uniform on [log low, log high] (well conditioned, not
    Haar: the positive scalings are not compact)."""
    return jnp.exp(jax.random.uniform(key, shape, dtype, jnp.log(low), jnp.log(high)))


def helmert_basis(n: int):
    """The Helmert basis of the hyperplane orthogonal to the all-ones vector of ℝⁿ: an
    orthonormal NumPy float64 array of shape (n, n−1) whose column k−1 is
    $(1, …, 1, −k, 0, …, 0)/\\sqrt{k(k+1)}$ (k ones)."""
    h = np.zeros((n, n - 1))
    for k in range(1, n):
        h[:k, k - 1] = 1.0
        h[k, k - 1] = -float(k)
        h[:, k - 1] /= np.sqrt(k * (k + 1))
    return h


def random_phases(key: PRNGKeyArray, shape, dtype) -> Array:
    """Independent uniform unit phases $e^{i\\varphi}$ in the complex dtype for `dtype`."""
    phi = jax.random.uniform(key, shape, work_dtype(dtype), 0, 2 * jnp.pi)
    return jax.lax.complex(jnp.cos(phi), jnp.sin(phi)).astype(complex_work_dtype(dtype))


def random_permutations(key: PRNGKeyArray, num: int, n: int) -> Array:
    """`num` uniform permutations of range(n), shape (num, n)."""
    keys = jax.random.split(key, num)
    return jax.vmap(lambda k: jax.random.permutation(k, n))(keys)


def permutation_matrices(perms: Array, dtype) -> Array:
    """Matrices P with (P x)_i = x_{perm_i}."""
    n = perms.shape[-1]
    return jax.nn.one_hot(perms, n, dtype=dtype)


