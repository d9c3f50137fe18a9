"""Discrete modes switched at events: piecewise-smooth motion (stick–slip friction).

A model with modes keeps them as parameter leaves (a friction element's `stuck` flag
and sliding `direction`), so one compiled model covers every mode. `Switching` (in
`Model.switching`) says which leaves are modes, when a mode ends and what
follows:

- `conditions(q, qd, lam, t, p) -> (k,)`: one value per switching element, positive
  while its mode holds; the mode ends when it falls to zero or below. The conditions
  are evaluated with the time `t` of the point they are asked about, so a condition
  that depends on time only through a forcing (a sticking force growing under an
  effort source `e(t)` while the state stands still) is seen between steps.
- `transition(q, qd, lam, lam_in, t, p) -> p`: the parameters with the modes that
  follow at an event (the element with the smallest condition ended the piece);
  `lam` are the multipliers in the current modes, `lam_in(p')` those the state would
  have in the modes of `p'` (a sticking force, to test against the static limit).
- `initial(q, qd, lam, lam_in, t, p) -> p` (optional, default `transition`): the
  first modes, chosen from the state and the forcing at t0.
- `monitor(q, qd, lam, t, p) -> (k,)` (optional): quantities the conditions compare
  but the state does not carry (the sticking force, which varies with the forcing
  while the state is constant). Their time integrals ride along in each piece's state,
  so the step-size controller resolves their variation: without them a constant state
  has zero error estimate, the steps grow tenfold each, and a condition that dips
  below zero and back inside one long step is stepped over. (It costs one more
  evaluation of the multipliers per right-hand side.)

One event ends a piece: `min_j conditions_j` falling from positive to zero or below
(events of several elements are one continuous function, so a bracketing root
finder applies). It is located by bisection on the step's dense output, bracketed by
the step (`[t_prev, t_next]`, where the sign changed), to `1e-13 + 1e-14 |t|` s: a
bracket cannot wander off as Newton's method can on a long step, or on the kink of
`|λ|` at zero. Event-time derivatives come from the implicit function theorem
(optimistix), whatever the root finder. A piece's event needs its value positive at
the start of a step: a mode whose condition starts at zero (a slide from rest, `d v =
0`) is watched from the end of its first step on, so new modes should start with
their conditions positive where they can (a stick is entered only below the static
limit by a relative 1e-8).

References: B. Fabien, *Analytical System Dynamics*, ch. 1 (regulated sources:
Coulomb friction as an effort regulated by flow); THEORY §7.

`integrate_switched` runs at most `max_switches + 1` ordinary adaptive solves in a
`lax.scan` (unused ones of zero length), each ending at the next event, so the whole
run stays jit-compiled and reverse-differentiable; the modes at each output time come
back to `simulate` (and to the Trajectory, which evaluates everything with them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import diffrax
import jax
import jax.numpy as jnp
import optimistix as optx

from ._errors import SimulationError
from ._params import get_values, set_values
from ._numerics.solve import solve


@dataclasses.dataclass(frozen=True, eq=False)
class Switching:
    """Static description of a model's discrete modes (see the module docstring).

    Attributes:
        names: the switching elements, one per condition.
        keys: `((element, leaf), ...)`: the parameter leaves that hold modes.
        conditions, transition, initial, monitor: as in the module docstring
            (`initial` and `monitor` may be None).
        max_switches: default bound on the number of events in one run.
    """

    names: tuple
    keys: tuple
    conditions: Callable
    transition: Callable
    max_switches: int = 64
    initial: Callable | None = None
    monitor: Callable | None = None

    def modes(self, p):
        """`(len(keys),)` array of the mode leaves of `p`."""
        return get_values(p, self.keys)

    def with_modes(self, p, modes):
        """`p` with its mode leaves replaced by `modes (len(keys),)`."""
        return set_values(p, self.keys, modes)


def switching_of(model):
    """The model's `Switching`, or None."""
    return model.switching


def refuse(model, who):
    """Raise a `SimulationError` for a model with discrete modes: only the augmented
    formulation follows a constraint row whose coefficients change with the mode (a
    fixed coordinate partition cannot serve both a sticking and a sliding mode)."""
    switching = switching_of(model)
    if switching is not None:
        raise SimulationError(
            f"{who}: the model has discrete modes ({', '.join(switching.names)}: exact stick–slip "
            "friction), whose constraint rows change with the mode; use formulation='augmented' "
            "(or coulomb_friction(..., mode='smooth'))."
        )


class _Bracketed(optx.Bisection):
    """Bisection that stops on the width of the bracket alone.

    `optx.Bisection` also asks `|f| < atol`, in the units of whichever condition is
    smallest (N, m/s): a steep condition could then never stop. The event is known to
    lie in `[lower, upper]` (positive at `lower`, zero or below at `upper`: `flip=True`
    spares the check, which would raise in the compiled program)."""

    def terminate(self, fn, y, args, options, state, tags):
        del fn, args, options, tags
        return jnp.abs(state.upper - state.lower) < self.atol + self.rtol * jnp.abs(y), optx.RESULTS.successful


#: the root finder of every switching event (see the module docstring)
ROOT_FINDER = _Bracketed(rtol=1e-14, atol=1e-13, flip=True)


def integrate_switched(formulation, model, stabilization, settings, y0, p, t0, t1, ts, switching):
    """Piecewise integration across mode switches; returns `(ts, ys, result, steps,
    modes (T, k), log_t (S,), log_modes (S, k), exhausted)`.

    `formulation` provides `vector_field`, `project`, `projects` and
    `outputs_from_state` with the plain parameter pytree as `args`. Each piece
    integrates `[y; z]`, `z` the integrals of `switching.monitor` (none without one),
    from `z = 0`; only `y` comes back."""
    T = ts.shape[0]
    S = int(switching.max_switches) + 1
    projecting = formulation.projects(stabilization)
    ny = y0.shape[0]
    monitor = switching.monitor

    def state_outputs(y, t, p_):
        return formulation.outputs_from_state(model, y, t, p_, stabilization)

    def vector_field(t, Y, args):
        y = Y[:ny]
        dy = formulation.vector_field(model, t, y, args, stabilization)
        if monitor is None:
            return dy
        q, qd, _, lam, _ = state_outputs(y, t, args)
        return jnp.concatenate([dy, jnp.asarray(monitor(q, qd, lam, t, args), dtype=dy.dtype)])

    def project_y(t, y, args, stabilization=stabilization):
        return formulation.project(model, t, y, args, stabilization)

    def project(t, Y, args, stabilization=stabilization):
        return jnp.concatenate([project_y(t, Y[:ny], args, stabilization), Y[ny:]])

    def project_step(t, Y, args):
        return project(t, Y, args, stabilization.with_block_solves())

    def lam_in(y, t):
        def at(p_):
            return state_outputs(y, t, p_)[3]
        return at

    def condition(t, y, args, **kwargs):
        # evaluated at the event's own t (diffrax passes the time of the step end or,
        # in the root find, of the dense-output point): the forcing is current
        q, qd, _, lam, _ = state_outputs(y[:ny], t, args)
        return jnp.min(switching.conditions(q, qd, lam, t, args))

    event = diffrax.Event(condition, direction=False, root_finder=ROOT_FINDER)
    k_mon = 0 if monitor is None else len(switching.names)

    def extend(y):
        return jnp.concatenate([y, jnp.zeros((k_mon,), y.dtype)])

    def enter(y, t, p_, first=False):
        """Modes that follow at state `y`, and the state projected in them."""
        q, qd, _, lam, _ = state_outputs(y, t, p_)
        rule = switching.initial if (first and switching.initial is not None) else switching.transition
        p_next = rule(q, qd, lam, lam_in(y, t), t, p_)
        return p_next, (project_y(t, y, p_next) if projecting else y)

    p_start, y_start = enter(y0, t0, p, first=True)
    ok = diffrax.RESULTS.successful

    def piece(carry, _):
        t_s, y_s, modes_s, done, result, steps, ys, modes_ts = carry
        p_s = switching.with_modes(p, modes_s)
        sol = solve(vector_field, project if projecting else None, settings, t_s, t1, extend(y_s), p_s,
                    jnp.clip(ts, t_s, t1), event=event, save_final=True, project_step=project_step)
        ys_piece, t_end, y_end = sol.ys[0][:, :ny], sol.ts[1][0], sol.ys[1][0][:ny]
        covered = (~done) & (ts >= t_s) & (ts <= t_end) & jnp.all(jnp.isfinite(ys_piece), axis=1)
        ys = jnp.where(covered[:, None], ys_piece, ys)
        modes_ts = jnp.where(covered[:, None], modes_s[None, :], modes_ts)
        switched = (sol.result == diffrax.RESULTS.event_occurred) & ~done
        p_next, y_next = enter(y_end, t_end, p_s)
        good = switched & jnp.all(jnp.isfinite(y_next))
        log = (jnp.where(switched, t_end, jnp.inf), jnp.where(switched, switching.modes(p_next), jnp.nan))
        result = diffrax.RESULTS.where(done, result, sol.result)
        steps = steps + jnp.where(done, 0, sol.stats["num_steps"])
        t_next = jnp.where(good, t_end, t1)
        y_next = jnp.where(good, y_next, y_s)
        modes_next = jnp.where(good, switching.modes(p_next), modes_s)
        done = done | ~switched
        return (t_next, y_next, modes_next, done, result, steps, ys, modes_ts), log

    modes0 = switching.modes(p_start)
    init = (jnp.asarray(t0, dtype=float), y_start, modes0, jnp.asarray(False),
            diffrax.RESULTS.where(jnp.asarray(True), ok, ok), jnp.asarray(0),
            jnp.broadcast_to(y_start, (T, y_start.shape[0])), jnp.broadcast_to(modes0, (T, modes0.shape[0])))
    carry, (log_t, log_modes) = jax.lax.scan(piece, init, None, length=S)
    _, _, _, done, result, steps, ys, modes_ts = carry
    exhausted = ~done
    return ts, ys, result, steps, modes_ts, log_t, log_modes, exhausted
