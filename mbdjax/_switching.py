"""Discrete modes switched at events: piecewise-smooth motion (stick–slip friction).

A model with modes keeps them as parameter leaves (a friction element's `stuck` flag
and sliding `direction`), so one compiled model covers every mode. `Switching` (in
`model.metadata["switching"]`) says which leaves are modes, when a mode ends and what
follows:

- `conditions(q, qd, lam, t, p) -> (k,)`: one value per switching element, positive
  while its mode holds; the mode ends when it falls to zero or below (a diffrax event,
  located in time by Newton's method on the dense output).
- `transition(q, qd, lam, lam_in, t, p) -> p`: the parameters with the modes that
  follow at an event (and at t0, where it sets the first modes from the initial
  state); `lam` are the multipliers in the current modes, `lam_in(p')` those the state
  would have in the modes of `p'` (a sticking force, to test against the static
  limit).

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

from ._params import get_values, set_values
from ._solve import solve


@dataclasses.dataclass(frozen=True, eq=False)
class Switching:
    """Static description of a model's discrete modes (see the module docstring).

    Attributes:
        names: the switching elements, one per condition.
        keys: `((element, leaf), ...)`: the parameter leaves that hold modes.
        conditions, transition: as in the module docstring.
        max_switches: default bound on the number of events in one run.
    """

    names: tuple
    keys: tuple
    conditions: Callable
    transition: Callable
    max_switches: int = 64

    def modes(self, p):
        """`(len(keys),)` array of the mode leaves of `p`."""
        return get_values(p, self.keys)

    def with_modes(self, p, modes):
        """`p` with its mode leaves replaced by `modes (len(keys),)`."""
        return set_values(p, self.keys, modes)


def switching_of(model):
    """The model's `Switching`, or None."""
    return (model.metadata or {}).get("switching")


def refuse(model, who):
    """Raise a `SimulationError` for a model with discrete modes: only the augmented
    formulation follows a constraint row whose coefficients change with the mode (a
    fixed coordinate partition cannot serve both a sticking and a sliding mode)."""
    switching = switching_of(model)
    if switching is not None:
        from ._errors import SimulationError

        raise SimulationError(
            f"{who}: the model has discrete modes ({', '.join(switching.names)}: exact stick–slip "
            "friction), whose constraint rows change with the mode; use formulation='augmented' "
            "(or coulomb_friction(..., mode='smooth'))."
        )


def integrate_switched(formulation, model, stabilization, settings, y0, p, t0, t1, ts, switching):
    """Piecewise integration across mode switches; returns `(ts, ys, result, steps,
    modes (T, k), log_t (S,), log_modes (S, k), exhausted)`.

    `formulation` provides `vector_field`, `project`, `projects` and
    `outputs_from_state` with the plain parameter pytree as `args`."""
    n = model.n
    T = ts.shape[0]
    S = int(switching.max_switches) + 1
    projecting = formulation.projects(stabilization)

    def vector_field(t, y, args):
        return formulation.vector_field(model, t, y, args, stabilization)

    def project(t, y, args):
        return formulation.project(model, t, y, args, stabilization)

    def state_outputs(y, t, p_):
        return formulation.outputs_from_state(model, y, t, p_, stabilization)

    def lam_in(y, t):
        def at(p_):
            return state_outputs(y, t, p_)[3]
        return at

    def cond(j):
        def fn(t, y, args, **kwargs):
            q, qd, _, lam, _ = state_outputs(y, t, args)
            return switching.conditions(q, qd, lam, t, args)[j]
        return fn

    event = diffrax.Event([cond(j) for j in range(len(switching.names))], direction=False,
                          root_finder=optx.Newton(rtol=1e-10, atol=1e-12))

    def enter(y, t, p_):
        """Modes that follow at state `y`, and the state projected in them."""
        q, qd, _, lam, _ = state_outputs(y, t, p_)
        p_next = switching.transition(q, qd, lam, lam_in(y, t), t, p_)
        return p_next, (project(t, y, p_next) if projecting else y)

    p_start, y_start = enter(y0, t0, p)
    ok = diffrax.RESULTS.successful

    def piece(carry, _):
        t_s, y_s, modes_s, done, result, steps, ys, modes_ts = carry
        p_s = switching.with_modes(p, modes_s)
        sol = solve(vector_field, project if projecting else None, settings, t_s, t1, y_s, p_s,
                    jnp.clip(ts, t_s, t1), event=event, save_final=True)
        ys_piece, t_end, y_end = sol.ys[0], sol.ts[1][0], sol.ys[1][0]
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
    del n
    return ts, ys, result, steps, modes_ts, log_t, log_modes, exhausted
