"""Singular configurations met during a run: watched at every step, reported by name.

At a singular configuration (THEORY §8) the constraint Jacobian `B` loses rank for
an instant: a four-bar or the IFToMM N four-bar lying flat, a slider-crank at dead
centre. The augmented, multiplier-free and quasi-velocity formulations solve with
`B` (or a basis built from it) and become ill-posed there; with the default
projection they usually step across, but without it (or at tight tolerances) the
step size can collapse next to the singular point and the run would grind on to
`max_steps`. Instead, for these formulations the step-size controller is wrapped
(`SingularityGuard`): when the step size collapses where `B` is close to losing rank,
the run stops there, and `simulate` raises `singular_configuration_error`, which
names the time, the rank and the dependent rows and recommends the augmented
Lagrangian formulation, which is well posed there (`mbdjax.AugmentedLagrangian`).
A run that steps across the singular configuration is not disturbed.

The closeness to rank loss is the smallest pivot of the Cholesky factor of `B Bᵀ`
relative to the largest (`rank_margin`): `det(B Bᵀ)` is the product of the squared
pivots, so it is small exactly when `B` is close to losing rank. It is evaluated only
when a step has collapsed.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import _kinematics as kin
from ._errors import SimulationError
from ._numerics.linalg import numerical_rank, cholesky_diagonal, dependent_rows

STALL_RTOL = 1e-9
"""A proposed step shorter than `STALL_RTOL · (t1 − t0)` counts as a collapse."""

MARGIN_TOL = 1e-3
"""...when `rank_margin` at the step's start is below this: `B` is close to losing rank."""


def rank_margin(model, q, t, p):
    """`min(diag L) / max(diag L)` for `L Lᵀ = B Bᵀ`, `B = B(q, t) (m, n)`: about
    σ_min/σ_max of `B`, 0 (or NaN) where `B` has lost rank. Uses the sparse Jacobian
    pattern when the model has one, and a factorization with no library call
    (`cholesky_diagonal`): this runs in the step-size guard, inside the step loop,
    and a LAPACK call there, or the planar front end's dense Jacobian, kept XLA from
    compiling the loop into one kernel (`mbdjax._numerics.xla_cpu`)."""
    pattern = model.jacobian_pattern
    if pattern is not None and model.m_n == 0:
        vals = kin.holonomic_jacobian_values(model, q, t, p)
        S = pattern.schur(vals, jnp.ones(model.n, dtype=vals.dtype))
    else:
        B = kin.constraint_jacobian(model, q, t, p)
        S = B @ B.T
    d = cholesky_diagonal(S)
    return jnp.min(d) / jnp.max(d)


def _margin_where(model, collapsed, q, t, p):
    """`rank_margin(model, q, t, p)` where `collapsed`, else 1, evaluated only when
    needed: a `lax.cond`, and under `jax.vmap` (a batch of runs) one `lax.cond` on
    whether any member's step collapsed, instead of the select a batched predicate
    makes of it, which computed the margin for every member at every step (a
    twelfth of a batch of 10-link chains' time). The inputs carry no derivatives
    (the margin only stops the run)."""

    def margin(q, t, p):
        return rank_margin(model, q, t, p)

    @jax.custom_batching.custom_vmap
    def where(collapsed, q, t, p):
        return jax.lax.cond(collapsed, lambda: margin(q, t, p), lambda: jnp.ones((), dtype=q.dtype))

    @where.def_vmap
    def _batched(size, batched, collapsed, q, t, p):
        collapsed, q, t = (x if b else jnp.broadcast_to(x, (size,) + jnp.shape(x))
                           for x, b in zip((collapsed, q, t), batched[:3]))
        p_axes = jax.tree_util.tree_map(lambda b: 0 if b else None, batched[3])
        value = jax.lax.cond(jnp.any(collapsed),
                             lambda: jnp.where(collapsed, jax.vmap(margin, in_axes=(0, 0, p_axes))(q, t, p), 1.0),
                             lambda: jnp.ones((size,), dtype=q.dtype))
        return value, True

    return where(collapsed, q, t, p)


class _GuardState(NamedTuple):
    inner: Any
    span: Any


class SingularityGuard(diffrax.AbstractAdaptiveStepSizeController):
    """A step-size controller that ends the solve (result `dt_min_reached`) when the
    step size of the wrapped controller collapses (below `STALL_RTOL` of the
    interval) next to a configuration where `B` is close to losing rank
    (`rank_margin` below `MARGIN_TOL`), instead of grinding on there to `max_steps`.
    Steps are otherwise those of the wrapped controller; the margin is evaluated
    only for collapsed steps. `packed`: the solve's `args` are `(p, ...)` (the
    partitioned formulations' pieces) rather than the parameters `p` alone."""

    controller: diffrax.AbstractAdaptiveStepSizeController
    model: Any
    packed: bool = eqx.field(static=True, default=False)

    @property
    def rtol(self):
        return self.controller.rtol

    @property
    def atol(self):
        return self.controller.atol

    @property
    def norm(self):
        return self.controller.norm

    def wrap(self, direction):
        return SingularityGuard(self.controller.wrap(direction), self.model, self.packed)

    def init(self, terms, t0, t1, y0, dt0, args, func, error_order):
        t_next, inner = self.controller.init(terms, t0, t1, y0, dt0, args, func, error_order)
        return t_next, _GuardState(inner, jnp.abs(t1 - t0))

    def adapt_step_size(self, t0, t1, y0, y1_candidate, args, y_error, error_order, controller_state):
        keep, next_t0, next_t1, jump, inner, result = self.controller.adapt_step_size(
            t0, t1, y0, y1_candidate, args, y_error, error_order, controller_state.inner)
        collapsed = jnp.abs(next_t1 - next_t0) < STALL_RTOL * controller_state.span
        n = self.model.n
        p = args[0] if self.packed else args
        margin = _margin_where(self.model, collapsed, *jax.lax.stop_gradient((y0[:n], t0, p)))
        stalled = collapsed & ~(margin >= MARGIN_TOL)
        result = diffrax.RESULTS.where(stalled, diffrax.RESULTS.dt_min_reached, result)
        return keep & ~stalled, next_t0, next_t1, jump, _GuardState(inner, controller_state.span), result


def singular_configuration_error(model, formulation_name, t, q, p):
    """The `SimulationError` for a run stopped at a singular configuration `q (n,)`
    at time `t` (concrete values): the time, the rank of `B` and its dependent rows
    (`mbdjax.check`'s tolerance), and the formulation to use instead; also as the
    error's fields (`reason="rank_lost"`, `time`, `names`: the dependent rows)."""
    B = np.asarray(kin.constraint_jacobian(model, jnp.asarray(q), float(t), p), dtype=float)
    rows = ()
    if np.all(np.isfinite(B)):
        s = np.linalg.svd(B, compute_uv=False)
        rank, _ = numerical_rank(s, B.shape, 1e-6)
        ratio = s[-1] / s[0]
        if rank < min(B.shape):
            rows = dependent_rows(B, model.row_names, 1e-6)
            detail = (f"B has numerical rank {rank} of {model.m} rows (σ_min/σ_max = {ratio:.1e}); "
                      f"dependent rows: {', '.join(rows)}")
        else:  # stopped just short of the rank loss: name the rows about to depend on others
            rows = dependent_rows(B, model.row_names, min(2.0 * ratio, 1e-3))
            detail = (f"B is about to lose rank (σ_min/σ_max = {ratio:.1e}, full rank {rank} at 1e-6); "
                      f"rows nearly dependent on the others: {', '.join(rows)}")
    else:
        detail = "B is not finite there"
    return SimulationError(
        f"simulate: the motion reached a singular configuration at t = {float(t):.9g} s, where the "
        f"constraint Jacobian loses rank and the {formulation_name} formulation is not defined: {detail}. "
        "Use formulation='augmented_lagrangian' (mbdjax.AugmentedLagrangian), which is well posed "
        "where B loses rank, or check the mechanism's geometry (mbdjax.check at that state).",
        reason="rank_lost", time=float(t), names=tuple(rows),
    )
