"""The formulation interface: what every formulation provides and the defaults it inherits."""

from __future__ import annotations

import abc
from typing import Any, ClassVar, NamedTuple

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp

from .._singular import SingularityGuard
from .._numerics.solve import solve
from .._switching import integrate_switched, switching_of


class Integrated(NamedTuple):
    """What `AbstractFormulation.integrate` hands back to `simulate`.

    `ts (T,)` and `ys (T, state)` at the output times, the diffrax `result` code, the
    step count, `aux` (per output time, passed to `outputs_from_state`; None if
    unused), `partitions` (the null-space formulation's partition log, else None) and
    `singular` (True when the run stopped because the coordinates reached a
    singularity of the model's `singularity` margins) and `switches` (for models with
    discrete modes: `{"t": (S,), "modes": (S, k), "exhausted": bool}`, the switch log;
    `aux` then holds the modes at each output time), `rank_lost` (True when the
    run stopped at a singular configuration, `mbdjax._singular`) and `final`
    (`(t, y)` where the run stopped, when it can stop early; else None).
    """

    ts: jax.Array
    ys: jax.Array
    result: Any
    num_steps: jax.Array
    aux: Any = None
    partitions: Any = None
    singular: Any = False
    switches: Any = None
    rank_lost: Any = False
    final: Any = None


def singular_state(model, q):
    """True where a coordinate-singularity margin of `model` at `q` is below its
    tolerance in magnitude (False for models without margins)."""
    if model.singularity_fn is None:
        return jnp.asarray(False)
    return ~(jnp.min(jnp.abs(model.singularity_fn(q))) >= model.singularity_tol)


def singularity_event(model, n):
    """A diffrax `Event` ending the solve at the first step whose state `y` (with
    `q = y[:n]`) is at a coordinate singularity, or that stepped across one (a margin
    changed sign within the step); None for models without margins."""
    if model.singularity_fn is None:
        return None
    k = len(model.singularity_names)

    def crossing(j):
        return lambda t, y, args, **kwargs: model.singularity_fn(y[:n])[j]

    return diffrax.Event([lambda t, y, args, **kwargs: singular_state(model, y[:n])]
                         + [crossing(j) for j in range(k)])


class AbstractFormulation(eqx.Module):
    """Turns a Model into a first-order vector field (THEORY §5).

    One abstract method: `accelerations(model, q, qd, t, p, stabilization) -> (qdd,
    lam)`, `qdd` shape `(n,)`, `lam` shape `(m,)` or None. The state handling below
    defaults to the flat state `y = [q; q̇]`; a formulation with another state (the
    quasi-velocities' `[q; u]`) overrides `initial_state`, `vector_field`, `project`
    and `outputs_from_state`, and one that integrates in several pieces (the null
    space's re-partitioning) overrides `integrate`.
    """

    #: Stabilizations this formulation cannot use (documented, warned about, ignored).
    ignores: ClassVar[tuple] = ()
    ignores_reason: ClassVar[str] = ""
    #: Whether the run stops at a singular configuration (`B` losing rank) with a named
    #: error instead of stepping into it (`mbdjax._singular`); False for formulations
    #: that are well posed there.
    watches_rank: ClassVar[bool] = True

    def initial_state(self, model, q0, qd0, t0, p, checks=None):
        """Flat state vector at `t0`; `checks`: where run-time checks go
        (`mbdjax._runtime_checks.check`)."""
        return jnp.concatenate([q0, qd0])

    def vector_field(self, model, t, y, p, stabilization):
        """`dy/dt` of the flat state."""
        n = model.n
        qdd, _ = self.accelerations(model, y[:n], y[n:], t, p, stabilization)
        return jnp.concatenate([y[n:], qdd])

    def project(self, model, t, y, p, stabilization):
        """The state mapped back onto the constraints (used with a projecting stabilization)."""
        n = model.n
        return jnp.concatenate(stabilization.project(model, y[:n], y[n:], t, p))

    def with_rows(self, independent):
        """This formulation told whether the constraint rows of the model it is handed
        are known to be independent (`simulate` decides once, at the initial state,
        after removing redundant rows: `mbdjax._redundancy`); None: unknown (the
        initial state staged by an enclosing jit). Default: the formulation does not use it."""
        return self

    def for_adjoint(self, adjoint):
        """This formulation set up for the diffrax `adjoint` the run is differentiated
        with. Default: unchanged."""
        return self

    def projects(self, stabilization):
        """Whether every step's result passes through `project` (default: when the
        stabilization projects)."""
        return stabilization.projects

    def integrate(self, model, stabilization, settings, y0, p, t0, t1, ts):
        """Integrate the state from `y0` at `t0` to `t1`, saved at `ts`; returns an
        `Integrated`. `settings` is a `mbdjax._numerics.solve.SolveSettings`. Default: one diffrax solve, projected after every step when the
        stabilization projects; for a model with discrete modes, one solve per mode
        (`mbdjax._switching`)."""
        switching = switching_of(model)
        if switching is not None:
            ts_, ys, result, steps, modes, log_t, log_modes, exhausted = integrate_switched(
                self, model, stabilization, settings, y0, p, t0, t1, ts, switching)
            return Integrated(ts_, ys, result, steps, aux=modes,
                              switches={"t": log_t, "modes": log_modes, "exhausted": exhausted})

        def vector_field(t, y, args):
            return self.vector_field(model, t, y, args, stabilization)

        def project(t, y, args, stabilization=stabilization):
            return self.project(model, t, y, args, stabilization)

        def project_step(t, y, args):
            return project(t, y, args, stabilization.with_block_solves())

        # The coordinates' own singularities (3-1-3 Euler angles at sin θ = 0) and, for
        # formulations not defined there, configurations where B loses rank are watched
        # at every step, not only at the output times.
        event = singularity_event(model, model.n)
        # (not with the continuous adjoint, which cannot save the final state apart)
        watch = (self.watches_rank and model.m > 0 and settings.adaptive
                 and not isinstance(settings.adjoint, diffrax.BacksolveAdjoint))
        if watch:
            settings = settings.with_controller(SingularityGuard(settings.controller, model))
        sol = solve(vector_field, project if self.projects(stabilization) else None, settings, t0, t1, y0, p, ts,
                    event=event, save_final=watch, project_step=project_step)
        singular = (sol.result == diffrax.RESULTS.event_occurred) if event is not None else False
        if not watch:
            return Integrated(sol.ts, sol.ys, sol.result, sol.stats["num_steps"], singular=singular)
        (ts_, t_end), (ys, y_end) = sol.ts, sol.ys
        return Integrated(ts_, ys, sol.result, sol.stats["num_steps"], singular=singular,
                          rank_lost=sol.result == diffrax.RESULTS.dt_min_reached, final=(t_end[-1], y_end[-1]))

    def outputs_from_state(self, model, y, t, p, stabilization, aux=None):
        """`(q, qd, qdd, lam, extra)` at one output time; `extra` is None or the
        formulation's own velocities (quasi-velocities `u`); `aux` is this time's
        entry of `Integrated.aux`."""
        n = model.n
        qdd, lam = self.outputs(model, y[:n], y[n:], t, p, stabilization)
        return y[:n], y[n:], qdd, lam, None

    @abc.abstractmethod
    def accelerations(self, model, q, qd, t, p, stabilization):
        raise NotImplementedError

    def check_params(self, model, p, x, checks=None):
        """Attach run-time checks of the parameters to `x` (once per simulation, not per
        right-hand side; `checks` as for `initial_state`); returns `x`."""
        return x

    def prepare(self, model, p, q0, t0):
        """Return a version of this formulation fitted to the model and the initial
        configuration (called once per `simulate`, outside its jit boundary; `p` and
        `q0` may be traced under an enclosing transformation)."""
        return self

    def outputs(self, model, q, qd, t, p, stabilization):
        """`(qdd, lam)` reported at the output times (default: `accelerations`)."""
        return self.accelerations(model, q, qd, t, p, stabilization)

    #: Number of equations solved for the accelerations (and multipliers), for reports.
    def equation_count(self, model):
        return model.n
