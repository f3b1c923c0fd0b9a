"""Witnesses for the closure of a parameterised class under a larger group.

A closure cell says that $g∘f_θ$ (L), $f_θ∘g$ (R) or $g^{-1}∘f_θ∘g$ (E) is again a member
$f_{θ'}$ of the class. Its maximality cannot be refuted numerically (that would need a
proof that *no* θ' exists), but it can be contradicted: fitting θ' by least squares and
finding $f_{θ'}$ equal to the moved function on fresh inputs, to rounding level, is a
constructive witness that the class is closed under (the sampled elements of) a larger
group, i.e. that the declared closure group is not maximal. A failed fit proves nothing
and is reported as such.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..groups import Element
from ..taxonomy import Flavour, as_function
from . import _engine as E

FIT_STEPS = 300     # at most this many L-BFGS iterations per fit
FIT_PATIENCE = 10   # ... stopping once this many in a row leave the loss undecreased
FIT_INPUTS = 64     # inputs the fit sees; as many fresh ones validate it
FIT_BACKTRACKS = 40  # step halvings per line search (down to 2⁻⁴⁰ of its first step)


def _moved_targets(f, flavour: Flavour, act_out: bool, acted, ein: Element, eout: Element,
                   xs: tuple):
    """The moved function's values on a batch of inputs (one group element)."""
    if flavour is Flavour.LEFT:
        fx = jax.vmap(f)(*xs)
        return jax.vmap(lambda t: E.act_tree(eout, t))(fx) if act_out else fx
    gx = jax.vmap(lambda *x: E._act_args(ein, x, acted))(*xs)
    fgx = jax.vmap(f)(*gx)
    if flavour is Flavour.EQUIVARIANT and act_out:
        return jax.vmap(lambda t: E.act_tree(eout, t))(fgx)
    return fgx


def _sq(tree):
    return sum(jnp.sum(jnp.abs(leaf) ** 2) for leaf in jax.tree.leaves(tree))


@eqx.filter_jit(**E.JIT_OPTIONS)
def _fit_one(prim, flavour: Flavour, act_out: bool, acted, ein: Element, eout: Element,
             x_fit: tuple, x_val: tuple):
    """Fit θ' so that f_{θ'} matches the moved f_θ on `x_fit`, starting from θ; return
    the largest relative residual ‖f_{θ'}(x) − target(x)‖ / ‖target(x)‖ over the rows x
    of `x_val`.

    L-BFGS runs for at most `FIT_STEPS` iterations and stops early once `FIT_PATIENCE`
    iterations in a row have not lowered the loss. A fit in that state has stalled: its
    line search finds no decrease, so each further iteration costs a full, failing
    search and leaves θ' (nearly) where it is, far from the rounding-level residual a
    witness needs unless it is there already.

    The line search backtracks (halving the step until the Armijo decrease holds)
    rather than zooming in on the Wolfe conditions: the fit is a least-squares problem
    whose quasi-Newton step is well scaled, and a fit with the backtracking search
    compiles in about two thirds of the time (compiling is most of a fit's cost: one
    program per primitive and cell)."""
    params, static = eqx.partition(prim, eqx.is_inexact_array)
    f = as_function(prim)
    target_fit = _moved_targets(f, flavour, act_out, acted, ein, eout, x_fit)
    target_val = _moved_targets(f, flavour, act_out, acted, ein, eout, x_val)
    scale = _sq(target_fit) + jnp.finfo(jnp.result_type(*jax.tree.leaves(params))).tiny

    def loss(p):
        g = as_function(eqx.combine(p, static))
        fx = jax.vmap(g)(*x_fit)
        return _sq(jax.tree.map(jnp.subtract, fx, target_fit)) / scale

    opt = optax.lbfgs(linesearch=optax.scale_by_backtracking_linesearch(
        max_backtracking_steps=FIT_BACKTRACKS, decrease_factor=0.5, store_grad=True))
    value_and_grad = optax.value_and_grad_from_state(loss)

    def running(carry):
        i, _, _, _, stalls = carry
        return (i < FIT_STEPS) & (stalls < FIT_PATIENCE)

    def step(carry):
        i, p, state, last, stalls = carry
        value, grad = value_and_grad(p, state=state)
        updates, state = opt.update(grad, state, p, value=value, grad=grad, value_fn=loss)
        stalls = jnp.where(value < last, 0, stalls + 1)
        return i + 1, optax.apply_updates(p, updates), state, value, stalls

    start = (jnp.int32(0), params, opt.init(params), jnp.asarray(jnp.inf, scale.dtype),
             jnp.int32(0))
    _, fitted, _, _, _ = jax.lax.while_loop(running, step, start)
    g = as_function(eqx.combine(fitted, static))
    diff = jax.tree.map(jnp.subtract, jax.vmap(g)(*x_val), target_val)
    rel = jnp.sqrt(jax.vmap(_sq)(diff) / (jax.vmap(_sq)(target_val)
                                         + jnp.finfo(scale.dtype).tiny))
    return jnp.max(jnp.where(jnp.isfinite(rel), rel, jnp.inf))


def closure_residuals(members, flavour: Flavour, act_out: bool, acted, ein, eout,
                      seed: int, shapes, dtype) -> np.ndarray:
    """Per group element (rows of the host arrays `ein`, `eout`; for E, `eout` is the
    inverse acting on outputs), moving member i mod len(`members`): the largest relative
    residual of the best fit found. The fit sees standard Gaussian inputs (least squares is
    best conditioned at unit scale); the fresh inputs that validate it have scales
    log-uniform in [1e-3, 1e3], so a class that only approximates the moved function (an
    ε > 0 that breaks scale invariance at small inputs) gives no witness."""
    rng = np.random.default_rng([seed, 0xF17])
    x_fit = tuple(jnp.asarray(rng.standard_normal((FIT_INPUTS, *s)), dtype) for s in shapes)
    scales = np.exp(rng.uniform(np.log(1e-3), np.log(1e3), FIT_INPUTS))
    x_val = tuple(jnp.asarray(rng.standard_normal((FIT_INPUTS, *s))
                              * scales.reshape((-1,) + (1,) * len(s)), dtype) for s in shapes)
    out = []
    for i in range(np.asarray(ein.matrix).shape[0]):
        e_in = Element(jnp.asarray(ein.matrix[i]), jnp.asarray(ein.shift[i]))
        e_out = Element(jnp.asarray(eout.matrix[i]), jnp.asarray(eout.shift[i]))
        prim = members[i % len(members)]
        out.append(float(_fit_one(prim, flavour, act_out, acted, e_in, e_out, x_fit, x_val)))
    return np.asarray(out)
