"""One diffrax solve of a formulation's first-order system, optionally projected."""

from __future__ import annotations

import dataclasses
from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp

from .rk import SolverOf


class SolveSettings(eqx.Module):
    """How one diffrax solve runs (`solve`): what `simulate` chose from its options.

    Attributes:
        solver: the diffrax solver (Tsit5 by default).
        adjoint: the diffrax adjoint (how reverse mode differentiates the solve).
        controller: the step-size controller (`PIDController(rtol, atol)`, or
            `ConstantStepSize` for fixed steps), possibly wrapped by a formulation
            (`SingularityGuard`).
        dt0: the first (or fixed) step, or None for diffrax's own choice.
        max_steps: the step limit (static).
        meter: a diffrax progress meter.
        stream: compute the per-output-time work one time after another (inputs
            batched by a vmap; see `over_times`), static.
    """

    solver: diffrax.AbstractSolver
    adjoint: diffrax.AbstractAdjoint
    controller: diffrax.AbstractStepSizeController
    dt0: Any = None
    max_steps: int = eqx.field(static=True, default=100_000)
    meter: diffrax.AbstractProgressMeter = diffrax.NoProgressMeter()
    stream: bool = eqx.field(static=True, default=False)

    def with_controller(self, controller):
        """The same settings with another step-size controller."""
        return dataclasses.replace(self, controller=controller)

    @property
    def adaptive(self) -> bool:
        """Whether the steps are chosen by error control (a PID controller)."""
        return isinstance(self.controller, diffrax.PIDController)


class ProjectedSolver(SolverOf, diffrax.AbstractWrappedSolver):
    """Wraps a diffrax solver and maps each step's result back onto the constraints.

    The wrapped solver's error estimate (of the unprojected step) drives step-size
    control. Every step re-evaluates its first stage (`made_jump=True`), so a
    first-same-as-last solver never reuses a derivative taken off the manifold.

    That costs one right-hand side a step. Reusing the last stage instead made a
    20-link chain's 10 s run 15 % faster (129 against 151 ms), but the derivative at
    the unprojected state, and its tangent, which the projection has not yet moved
    back into the constraints' tangent space, cost accuracy where it matters: forward
    sensitivities of the four-bar (rtol 1e-10) moved from 3.0e-8 to 1.1e-7 off central
    differences taken at rtol 1e-12, and the quasi-velocity formulation through the
    flat passage of the redundant parallelogram from 1.5e-8 to 5.1e-8 rad off its
    reference.
    """

    solver: diffrax.AbstractSolver
    project: callable = eqx.field(static=True)

    @property
    def scan_kind(self):
        # diffrax sees through the wrapper (its solver metaclass) and sets the wrapped
        # Runge–Kutta solver's `scan_kind` for forward-mode autodiff through this.
        return self.solver.scan_kind

    # Implicit solvers (Kvaerno, …): diffrax reads and may replace these on the solver
    # it is given, which the metaclass makes look like the wrapped one.
    @property
    def root_finder(self):
        return self.solver.root_finder

    @property
    def root_find_max_steps(self):
        return self.solver.root_find_max_steps

    @property
    def term_compatible_contr_kwargs(self):
        return self.solver.term_compatible_contr_kwargs

    def strong_order(self, terms):
        return self.solver.strong_order(terms)

    def init(self, terms, t0, t1, y0, args):
        return self.solver.init(terms, t0, t1, y0, args)

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        y1, y_error, dense_info, solver_state, result = self.solver.step(
            terms, t0, t1, y0, args, solver_state, True
        )
        y1 = self.project(t1, y1, args)
        return y1, y_error, dense_info, solver_state, result

    def func(self, terms, t0, y0, args):
        return self.solver.func(terms, t0, y0, args)


def over_times(fn, xs, stream):
    """`fn(*x_k)` at every output time `k`, stacked; `xs` a tuple of pytrees with the
    times on their leading axis. All at once (`vmap`), or with `stream` one time after
    another (`lax.map`).

    Streaming is for runs inside an enclosing `vmap` (`simulate_batch`): there, all at
    once makes every intermediate (a constraint Jacobian, a Gram matrix) an array over
    members × output times, which falls out of the cache; a batch of 1024 10-link
    chains projected its 51 saved states in 1.0 s all at once against 0.23 s one time
    after another. A lone run is the other way round: all at once, 201 outputs of the
    slider-crank took 4.1 ms against 4.9 ms streamed."""
    if stream:
        return jax.lax.map(lambda x: fn(*x), xs)
    return jax.vmap(fn)(*xs)


def solve(vector_field, project, settings, t0, t1, y0, args, ts, *, event=None, save_final=False,
          project_step=None):
    """`diffrax.diffeqsolve` of `dy/dt = vector_field(t, y, args)` saved at `ts`.

    Arguments:
        vector_field, project: `(t, y, args) -> y`; `project` is None or the map back
            onto the constraints after every step and at every saved point.
        project_step: the projection after every step, where it differs from the one
            at the saved points (one built with the stabilization's
            `with_block_solves()`, which keeps LAPACK calls out of the step loop so
            that XLA compiles the loop into one kernel); default `project`.
        settings: a `SolveSettings`.
        event: an optional `diffrax.Event` ending the solve early.
        save_final: also save the state at the final (or event) time as `sol.ys[-1]`.

    Returns the diffrax `Solution` (`throw=False`: inspect `result`); with
    `save_final`, `sol.ts` and `sol.ys` are pairs `(at ts, at the final time)`.

    The states saved at `ts` (dense-output interpolants between steps) are projected
    after the solve, all at once (`vmap`), not inside the step loop: inside diffrax's
    save loop a projection that factors matrices (the augmented Lagrangian's) cost
    about 80 ms a saved point on a 62-coordinate model, 30× the whole run. Times the
    solve did not reach (filled with inf), and a point whose projection is not finite
    (exactly at a singular configuration), are left as they are.
    """
    solver, stream = settings.solver, settings.stream
    if project is not None:
        solver = ProjectedSolver(solver=solver, project=project if project_step is None else project_step)
    if save_final:
        save = diffrax.SaveAt(subs=[diffrax.SubSaveAt(ts=ts), diffrax.SubSaveAt(t1=True)])
    else:
        save = diffrax.SaveAt(ts=ts)
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(vector_field), solver, t0, t1, settings.dt0, y0, args=args, saveat=save,
        stepsize_controller=settings.controller, max_steps=settings.max_steps, adjoint=settings.adjoint,
        event=event, throw=False, progress_meter=settings.meter,
    )
    if project is None:
        return sol

    def projected(t, y):
        # A saved point exactly at a singular configuration (the N four-bar's flat
        # position) makes the Gram matrix singular and its projection non-finite:
        # there the interpolated state, already within the step's tolerance, is kept.
        on = project(t, y, args)
        return jnp.where(jnp.all(jnp.isfinite(on)), on, y)

    def all_projected(ts_, ys_):
        return over_times(projected, (ts_, ys_), stream)

    if save_final:
        (ts_, t_end), (ys_, y_end) = sol.ts, sol.ys
        return eqx.tree_at(lambda s: s.ys, sol, (all_projected(ts_, ys_), all_projected(t_end, y_end)))
    return eqx.tree_at(lambda s: s.ys, sol, all_projected(sol.ts, sol.ys))
