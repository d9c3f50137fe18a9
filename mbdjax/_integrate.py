"""`simulate`: integrate a Model with diffrax (the library's jit boundary)."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import warnings

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import export

from . import _exported
from . import _kinematics as kin
from ._errors import SimulationError
from ._exported import example_name
from ._formulation import resolve_formulation
from ._initial import nearest_state
from ._params import float_params, nonfinite_entries
from ._redundancy import expand, restrict, rows_of_jacobian, select_rows
from ._numerics.rk import repr_solver
from ._runtime_checks import checked_on_host, first_failure
from ._singular import singular_configuration_error
from ._numerics.solve import SolveSettings, over_times
from ._stabilization import resolve_stabilization
from ._switching import switching_of
from ._tracing import (concrete_evaluation, device_array, host_value, is_batched, is_concrete, one_shot_filter_jit,
                       top_level)
from ._trajectory import Trajectory


class Failure(eqx.Enumeration):
    """Why a run failed, each reason with the message `simulate` raises (a
    `SimulationError` whose `reason` is the member's name)."""

    max_steps = (
        "mbdjax.simulate: the solver took max_steps steps before reaching t1; raise "
        "`max_steps=`, loosen `rtol`/`atol`, or shorten the interval. If the model is stiff "
        "(small inductances, masses or capacitances next to large stiffness or damping, fast "
        "diodes), an explicit solver needs tiny steps: use an implicit one, "
        "solver=diffrax.Kvaerno5()."
    )
    solver = (
        "mbdjax.simulate: the solver failed (the step size collapsed or the state became non-"
        "finite); the model may pass a singular configuration (run mbdjax.check on the last "
        "good state) or be too stiff for an explicit solver."
    )
    non_finite = (
        "mbdjax.simulate: the trajectory contains NaN or inf values; check the model's "
        "functions and parameters at the initial state (mbdjax.check)."
    )
    drift = (
        "mbdjax.simulate: the holonomic constraint residual exceeded `drift_tol`; use "
        "stabilization='projection' or 'baumgarte', tighten rtol/atol, or raise drift_tol."
    )
    max_partitions = (
        "mbdjax.simulate: the formulation re-partitioned its coordinates max_partitions times"
        " before t1; raise max_partitions= (or the growth= threshold) of mbdjax.NullSpace / "
        "mbdjax.QuasiVelocity, or use formulation='augmented'."
    )
    coordinate_singularity = (
        "mbdjax.simulate: the motion reached a singularity of the coordinates (a model "
        "singularity margin fell below singularity_tol; for spatial bodies, 3-1-3 Euler "
        "angles at θ = 0 or π), where the angle rates are not defined; build the body with "
        "orientation='quaternion' (Euler parameters have no singularity)."
    )
    max_switches = (
        "mbdjax.simulate: the modes switched max_switches times before t1 (stick–slip "
        "friction sticking and slipping); raise the model's switching bound "
        "(coulomb_friction(..., max_switches=)) or shorten the interval."
    )
    rank_lost = (
        "mbdjax.simulate: the motion reached a singular configuration (the constraint "
        "Jacobian B lost rank), where this formulation is not defined; use "
        "formulation='augmented_lagrangian', which is well posed there (run outside jit for "
        "the time, rank and dependent rows)."
    )

#: the names of `Failure`'s members
REASONS = ('max_steps', 'solver', 'non_finite', 'drift', 'max_partitions', 'coordinate_singularity', 'max_switches', 'rank_lost')
_BY_MESSAGE = {Failure[getattr(Failure, r)]: r for r in REASONS}


def save_times(saveat, t0, t1):
    if isinstance(saveat, (int,)) and not isinstance(saveat, bool):
        if saveat < 2:
            raise SimulationError(f"simulate: saveat={saveat} must be at least 2 output points.")
        if is_concrete(t0, t1):     # on the host: no program to compile
            return device_array(np.linspace(float(t0), float(t1), saveat))
        return jnp.linspace(t0, t1, saveat)
    ts = device_array(saveat)
    if ts.ndim != 1 or ts.shape[0] < 1:
        raise SimulationError("simulate: saveat must be an int (number of points) or a 1-D array of times.")
    return ts


def check_times(t0, t1, ts, dt0):
    """On the host, what diffrax would otherwise check in the compiled program."""
    a, b, times = float(t0), float(t1), np.asarray(ts)
    if not (np.isfinite(a) and np.isfinite(b) and b > a):
        raise SimulationError(f"simulate: t1 must be a finite time after t0, got t0 = {a:g}, t1 = {b:g}.")
    if np.any(np.diff(times) < 0) or np.any((times < a) | (times > b)) or not np.all(np.isfinite(times)):
        raise SimulationError("simulate: the output times (saveat) must be increasing and lie between t0 and t1.")
    if dt0 is not None and not float(dt0) > 0:
        raise SimulationError(f"simulate: dt0 must be a positive first step, got {dt0!r}.")


def simulate(
    model,
    q0,
    qd0,
    *,
    t0=0.0,
    t1,
    params=None,
    formulation="augmented",
    stabilization="projection",
    saveat=200,
    solver=None,
    rtol=1e-8,
    atol=1e-10,
    dt0=None,
    fixed_step=None,
    max_steps=100_000,
    adjoint=None,
    drift_tol=1e-6,
    throw=True,
    rows=None,
    progress=False,
    consistent="check",
):
    """Integrate the equations of motion of `model` from `(q0, qd0)` at `t0` to `t1`.

    Pure in `q0`, `qd0`, `params`, `t0` and `t1`: works under `jax.jit`, `jax.vmap` and
    `jax.grad` (the model, formulation, stabilization and solver are static).

    Arguments:
        model: a `mbdjax.Model`.
        q0, qd0: `(n,)` consistent initial state (see `mbdjax.initial_conditions`).
        t0, t1: start and end time (s).
        params: parameter pytree (default `model.params`).
        formulation: `"augmented"`, `"nullspace"`, `"multiplier_free"`,
            `"quasi_velocity"`, or an instance (`mbdjax.Augmented()`,
            `mbdjax.NullSpace(...)`, `mbdjax.MultiplierFree(...)`,
            `mbdjax.QuasiVelocity(...)`); THEORY §5.
        stabilization: `"projection"` (default), `"baumgarte"`, `"none"`, or an
            instance (`mbdjax.Baumgarte(alpha, beta)`, `mbdjax.Projection()`).
        saveat: number of equally spaced output points (including both ends) or a
            1-D array of output times.
        solver: a diffrax solver (default `diffrax.Tsit5()`). For small models with
            cheap right-hand sides, `mbdjax.UnrolledRK(diffrax.Tsit5())` (or any
            explicit Runge–Kutta solver) is the same method without diffrax's
            per-stage loop: faster steps, longer compile; implicit solvers
            (`diffrax.Kvaerno5()`) work with every formulation, for stiff models.
        rtol, atol: tolerances of the adaptive step-size controller.
        dt0: initial step (default: chosen by diffrax).
        fixed_step: a step size `h` (s) for fixed steps instead of adaptive ones
            (`diffrax.ConstantStepSize`; rtol/atol and dt0 are then unused): a fixed,
            predictable cost per run, for throughput in batches. The accuracy is the
            solver's at that step, with no error control; `max_steps` must cover
            `(t1 − t0)/h`.
        max_steps: solver step limit.
        adjoint: a diffrax adjoint (default `diffrax.RecursiveCheckpointAdjoint()`).
        drift_tol: largest admissible holonomic residual `max |Φ|` at the output
            times, or None to skip the check.
        throw: raise on solver failure, non-finite states or drift (an
            `equinox` runtime error). With `throw=False` inspect `traj.success` (the
            run-time parameter checks are skipped too: a failure shows in the result).
        rows: which constraint rows to integrate with (a `RowSelection`); default:
            read from the rank of `B` at the initial state, outside the compiled run
            (`simulate_batch` passes the one read at its first member). Redundant rows
            (dependent on the others) are dropped from the equations for every
            formulation and stabilization; the multipliers reported are the
            minimum-norm set over all rows (see the README, "Redundant constraints").
        progress: show the run's progress from t0 to t1 on the terminal: `True` (a
            tqdm bar if tqdm is installed, else percentages printed as text), `"text"`,
            `"tqdm"`, or a diffrax progress meter. The meter is a host callback inside
            the compiled program, so a run with it is compiled separately from one
            without and is not kept in the persistent compilation cache; leave it off
            for short runs and inside batches.

        consistent: what to do with an initial state off the constraints (`|Φ(q0, t0)|`
            or `|B q̇0 − b|` above the consistency tolerance, `drift_tol` or 1e-6, the
            velocity rows scaled by `max(1, |q̇0|)`): `"check"` (default) raises a
            `SimulationError` naming the violated rows and pointing to
            `mbdjax.initial_conditions`; `"project"` moves the state onto the
            constraints (nearest positions, then the orthogonal projection of the
            velocities) and warns with what changed. Checked only when the state is
            concrete (not under an enclosing `jit`/`vmap`/`grad`, where the run starts
            from the formulation's own projection).

    Returns:
        A `mbdjax.Trajectory` with `t (T,)`, `q, qd, qdd (T, n)` and `lam (T, m)`.

    Example (a unit mass on a spring k = 4 N/m, so x = cos 2t):

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([p["m"]]),
        ...                 potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2,
        ...                 params={"m": 1.0, "k": 4.0})
        >>> traj = mbd.simulate(osc, jnp.array([1.0]), jnp.zeros(1), t1=1.0, saveat=3)
        >>> [round(float(x), 6) for x in traj.q[:, 0]]
        [1.0, 0.540302, -0.416147]

    References: Haug §6.3 (mixed differential-algebraic equations), THEORY §5.
    """
    return _run(None, **locals())


def simulate_reporting(report, model, q0, qd0, **kwargs):
    """`simulate(model, q0, qd0, **kwargs)` (with `throw=True`) traced so that it reports
    its failures instead of raising them: it returns its trajectory and leaves in the
    dict `report` `flags` (a boolean array, one entry per message), `messages` (static),
    `stop` (None, or `(rank_lost, t, y)` where a singular configuration stopped the
    run), `work` (the model it integrated, redundant rows removed) and `formulation`
    (its class name). The conditions are array outputs, not host callbacks, so a caller
    that traces `simulate` under its own `vmap` can return them per member and raise on
    the host after the call (`simulate_batch`), and the compiled program stays in the
    persistent compilation cache. The caller checks the output times on the host first
    (`check_times`), as `simulate` does."""
    arguments = inspect.signature(simulate).bind(model, q0, qd0, **kwargs)
    arguments.apply_defaults()
    return _run(report, **arguments.arguments)


def _run(report, model, q0, qd0, *, t0, t1, params, formulation, stabilization, saveat, solver, rtol, atol, dt0,
         fixed_step, max_steps, adjoint, drift_tol, throw, rows, progress, consistent):
    """`simulate`'s work, with its arguments all given; `report` as for
    `simulate_reporting` (None: failures are raised)."""
    _check_options(solver, adjoint, rtol, atol, max_steps, drift_tol, t0, t1)
    formulation = resolve_formulation(formulation)
    stabilization = resolve_stabilization(stabilization)
    if type(stabilization).__name__ in formulation.ignores:
        warnings.warn(
            f"simulate: {type(formulation).__name__} ignores {type(stabilization).__name__} "
            f"stabilization ({formulation.ignores_reason}); use 'projection' or 'none'.",
            stacklevel=3,
        )
    # Every parameter leaf becomes an array so new values never trigger a recompile.
    p = float_params(model, params, "simulate")
    solver = diffrax.Tsit5() if solver is None else solver
    solver_name = repr_solver(solver)
    meter = progress_meter(progress)
    adjoint = diffrax.RecursiveCheckpointAdjoint() if adjoint is None else adjoint
    q0 = device_array(q0)
    qd0 = device_array(qd0)
    if q0.shape != (model.n,) or qd0.shape != (model.n,):
        raise SimulationError(
            f"simulate: q0 and qd0 must have shape ({model.n},) for coordinates "
            f"{list(model.coordinates)}; got {q0.shape} and {qd0.shape}."
        )
    t0 = device_array(t0)
    t1 = device_array(t1)
    _check_finite(model, q0, qd0)
    if consistent not in ("check", "project"):
        raise SimulationError(f"simulate: consistent must be 'check' or 'project', got {consistent!r}.")
    B0 = None
    if model.m and is_concrete(q0, qd0, p, t0):
        q0, qd0, B0 = _consistent_start(model, q0, qd0, t0, p, consistent,
                                        1e-6 if drift_tol is None else float(drift_tol))
    if is_concrete(q0):
        near = model.singular_coordinates(q0, p)
        if near:
            raise SimulationError(
                "simulate: the initial configuration is at a singularity of the coordinates ("
                + ", ".join(f"{nm}: margin {v:.1e} < {model.singularity_tol:g}" for nm, v in near)
                + "), where the equations of motion are not defined"
                + (f"; {model.singularity_advice}." if model.singularity_advice else ".")
            )
    if fixed_step is not None:
        if not (isinstance(fixed_step, (int, float)) and fixed_step > 0):
            raise SimulationError(f"simulate: fixed_step must be a positive step size in seconds, got {fixed_step!r}.")
        if is_concrete(t0, t1) and float(t1 - t0) / fixed_step > int(max_steps):
            raise SimulationError(
                f"simulate: fixed_step={fixed_step:g} needs {float(t1 - t0) / fixed_step:.0f} steps from t0 to t1, "
                f"more than max_steps={int(max_steps)}; raise max_steps or the step."
            )
        dt0 = float(fixed_step)
    # Redundant rows: decided once, here, and handed to the formulation and to the
    # stabilization alike (the rows kept are independent: plain Cholesky solves).
    if rows is None:
        rows = rows_of_jacobian(model, B0) if B0 is not None else select_rows(model, q0, t0, p)
        if rows is None and model.m and host_value((q0, t0)) is None:
            warnings.warn(_STAGED_ROWS, stacklevel=3)
    work = model if rows is None else restrict(model, rows)
    formulation = formulation.with_rows(rows is not None).prepare(work, p, q0, t0)
    stabilization = stabilization.with_rows(rows is not None)
    ts = save_times(saveat, t0, t1)
    settings = (
        ("formulation", type(formulation).__name__),
        ("stabilization", type(stabilization).__name__),
        ("solver", solver_name),
        ("rtol", float(rtol)),
        ("atol", float(atol)),
        ("max_steps", int(max_steps)),
    ) + ((("fixed_step", float(fixed_step)),) if fixed_step is not None else ())
    if rows is not None and rows.dropped:
        settings += (("redundant_rows", ", ".join(rows.dropped)),)
    # A stop at a singular configuration is reported from here, with its time, rank
    # and dependent rows, when the values can be read (not under an enclosing trace).
    # Failures are raised here, on the host, after the call (the compiled program holds
    # no callback, so the persistent compilation cache can keep it); under an
    # enclosing trace they stay in-graph checks (`_runtime_checks`).
    on_host = bool(throw) and (report is not None or (is_concrete(q0, qd0, p, t0, t1, ts) and top_level()))
    if on_host and report is None:
        check_times(t0, t1, ts, dt0)
    # The tolerances and the first (or fixed) step enter the compiled program as values,
    # not constants, so a tolerance study or a step-size sweep compiles one program; the
    # trajectory gets their values after the call.
    keys = tuple((k, None if k in _VALUED else v) for k, v in settings)
    # Inputs batched by a vmap (a member of a vectorized `simulate_batch`, a caller's
    # vmap): the per-output-time work one time after another (`mbdjax._numerics.solve.over_times`).
    # A run only staged by jit (a member of a sequential batch) is a lone run: all at once
    # (1024 sequential 10-link chains, 51 outputs each: 1.42 → 1.27 s).
    stream = is_batched(q0, qd0, p)
    run_with = _solve_settings(solver, adjoint, fixed_step is not None, device_array(rtol), device_array(atol),
                               None if dt0 is None else device_array(dt0), int(max_steps), meter, stream)
    args = (model, work, rows, formulation, stabilization, run_with, q0, qd0, p, t0, t1, ts, drift_tol, bool(throw),
            keys, on_host)
    # A built-in example's program is reused across processes without tracing it
    # (`mbdjax._exported`); every other run traces (and compiles once per process).
    name = (example_name(model) if on_host and report is None and isinstance(meter, diffrax.NoProgressMeter)
            else None)
    with checked_on_host() if on_host else contextlib.nullcontext():
        ran = _simulate_exported(name, args) if name is not None else None
        traj, stop, failure = ran if ran is not None else _simulate(*args)
    traj = dataclasses.replace(traj, settings=settings)
    if on_host and report is not None:
        report.update(flags=failure[0], messages=failure[1], stop=stop, work=work,
                      formulation=type(formulation).__name__)
        return traj
    if on_host and stop is not None and bool(stop[0]):
        t_stop, y_stop = stop[1], stop[2]
        raise singular_configuration_error(work, type(formulation).__name__, t_stop, y_stop[:model.n], p)
    if failure is not None:
        message = first_failure(*failure)
        if message is not None:
            raise failure_error(message, traj, model, float(t0), float(t1))
    return traj


_STAGED_ROWS = (
    "simulate: the initial state is staged inside jax.jit, so the rank of the constraint Jacobian cannot be "
    "read before the run, and every constraint solve guards against redundant rows (least-squares fallbacks, "
    "derivatives through the projection's Newton steps): 2-4x slower than with the rows known. Pass "
    "rows=mbdjax.select_rows(model, q0, t0, params), read once at a representative start outside jit, or "
    "differentiate or vmap simulate without an enclosing jit (it jit-compiles itself)."
)

_REASONS = ("max_steps", "solver", "non_finite", "drift", "max_partitions", "coordinate_singularity",
            "max_switches", "rank_lost")


def failure_error(message, traj, model, t0, t1):
    """The `SimulationError` of a failed run, its message followed by what the saved
    outputs tell (host values): how far the run got; the first output time with a
    non-finite value and the coordinates that went; the constraint row that drifted
    most and when."""
    if message not in _BY_MESSAGE:
        return SimulationError(message)
    reason = _BY_MESSAGE[message]
    t = np.asarray(traj.t)
    state = np.concatenate([np.asarray(traj.q), np.asarray(traj.qd)], axis=1)
    finite_rows = np.all(np.isfinite(state), axis=1) & np.isfinite(t)
    reached = float(t[finite_rows][-1]) if finite_rows.any() else t0
    detail, time, names = "", None, ()
    if reason in ("max_steps", "solver", "max_partitions", "max_switches"):
        time = reached
        detail = f" The run got to t = {reached:.6g} s of t1 = {t1:.6g} s (the last output time reached)."
    if reason in ("non_finite", "solver") and not finite_rows.all():
        k = int(np.flatnonzero(~finite_rows)[0])
        n = model.n
        went = [f"q[{model.coordinates[i]}]" for i in np.flatnonzero(~np.isfinite(state[k, :n]))]
        went += [f"qd[{model.coordinates[i]}]" for i in np.flatnonzero(~np.isfinite(state[k, n:]))]
        if np.isfinite(t[k]) and went:
            time, names = float(t[k]), tuple(went)
            detail += (f" First non-finite output at t = {t[k]:.6g} s: {', '.join(went[:6])}"
                       + (f" (+{len(went) - 6} more)" if len(went) > 6 else "")
                       + (f"; the last finite one at t = {reached:.6g} s." if k > 0 else "."))
    if reason == "drift" and model.m_h:
        residual = np.abs(np.asarray(traj.position_residual()))
        residual = np.where(np.isfinite(residual), residual, np.inf)
        k, row = np.unravel_index(int(np.argmax(residual)), residual.shape)
        time, names = float(t[k]), (model.constraint_names[row],)
        detail = (f" Worst: row {model.constraint_names[row]} with |Φ| = {residual[k, row]:.3g} at "
                  f"t = {t[k]:.6g} s.")
    return SimulationError(message + detail, reason=reason, time=time, names=names)


def _check_options(solver, adjoint, rtol, atol, max_steps, drift_tol, t0, t1):
    """Raise a `SimulationError` naming a solver option of the wrong kind: a solver or
    adjoint that is not a diffrax one, negative (or both zero) tolerances, a
    step limit that is not a positive integer, a negative drift tolerance, or a start
    or end time that is not a scalar."""
    if solver is not None and not isinstance(solver, diffrax.AbstractSolver):
        raise SimulationError(f"simulate: solver must be a diffrax solver instance such as diffrax.Tsit5() or "
                              f"diffrax.Kvaerno5(), got {solver!r}.")
    if adjoint is not None and not isinstance(adjoint, diffrax.AbstractAdjoint):
        raise SimulationError(f"simulate: adjoint must be a diffrax adjoint instance such as "
                              f"diffrax.RecursiveCheckpointAdjoint(), got {adjoint!r}.")
    tolerances = []
    for name, value in (("rtol", rtol), ("atol", atol)):
        if not isinstance(value, (str, bytes)) and not is_concrete(value):
            continue
        if isinstance(value, (str, bytes)) or np.ndim(value) != 0 or not (np.isfinite(value) and float(value) >= 0):
            raise SimulationError(f"simulate: {name} must be a number >= 0, got {value!r}.")
        tolerances.append(float(value))
    if len(tolerances) == 2 and not sum(tolerances) > 0:
        raise SimulationError("simulate: rtol and atol are both 0, which admits no error at all; give "
                              "rtol > 0 (relative) or atol > 0 (absolute).")
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
        raise SimulationError(f"simulate: max_steps must be a positive integer, got {max_steps!r}.")
    if drift_tol is not None and (isinstance(drift_tol, (str, bytes)) or not float(drift_tol) > 0):
        raise SimulationError(f"simulate: drift_tol must be a positive residual bound or None (no check), "
                              f"got {drift_tol!r}.")
    for name, value in (("t0", t0), ("t1", t1)):
        if isinstance(value, (str, bytes)) or np.ndim(value) != 0:
            raise SimulationError(f"simulate: {name} must be a scalar time in seconds, got {value!r}.")


@one_shot_filter_jit
def _start_residuals(model, q0, qd0, t0, p):
    """`(Φ, B q̇ − b, B)` at the initial state: what the consistency check and the row
    selection read, in one program."""
    return (kin.holonomic(model, q0, t0, p), kin.velocity_residual(model, q0, qd0, t0, p),
            kin.constraint_jacobian(model, q0, t0, p))


def _consistent_start(model, q0, qd0, t0, p, mode, tol):
    """`(q0, qd0, B)`: the initial state checked against the constraints (THEORY §4),
    unchanged when they hold to `tol` (velocity rows to `tol·max(1, |q̇0|)`), with
    its constraint Jacobian `B` (host values); otherwise a `SimulationError` naming the
    violated rows (`mode="check"`), or the state moved onto the constraints with a
    warning saying what changed (`mode="project"`; `B` is then None). Concrete also
    under a caller's trace: the inputs are concrete."""
    with concrete_evaluation():
        phi, vel, B = (np.asarray(x) for x in jax.device_get(_start_residuals(model, q0, qd0, t0, p)))
    vtol = tol * max(1.0, float(np.max(np.abs(np.asarray(qd0)), initial=0.0)))
    names = model.row_names
    bad = [(names[k], float(phi[k])) for k in np.flatnonzero(~(np.abs(phi) <= tol))]
    bad_v = [(names[k], float(vel[k])) for k in np.flatnonzero(~(np.abs(vel) <= vtol))]
    if not bad and not bad_v:
        return q0, qd0, B

    def listing(rows):
        rows = sorted(rows, key=lambda r: -abs(r[1]))
        return ", ".join(f"{nm} = {v:.3g}" for nm, v in rows[:4]) + (f" (+{len(rows) - 4} more)" if len(rows) > 4 else "")

    what = "; ".join(part for part in (
        f"position constraints Φ(q0, t0): {listing(bad)}" if bad else "",
        f"velocity constraints B q̇0 − b: {listing(bad_v)}" if bad_v else "") if part)
    if mode == "check":
        raise SimulationError(
            f"simulate: the initial state is not on the constraints ({what}; tolerance {tol:g}). Solve a "
            "consistent one with mbdjax.initial_conditions(model, q_guess, fix_q=..., fix_qd=...), or pass "
            "consistent='project' to move this one onto the constraints.")
    with concrete_evaluation():
        q1, _, _, qd1 = nearest_state(model, q0, qd0, t0, p, 8)
    dq, dv = np.asarray(q1 - q0), np.asarray(qd1 - qd0)
    moved = [f"q0[{model.coordinates[k]}] {float(q0[k]):.6g} → {float(q1[k]):.6g}"
             for k in np.flatnonzero(np.abs(dq) > 1e-12)]
    moved += [f"qd0[{model.coordinates[k]}] {float(qd0[k]):.6g} → {float(qd1[k]):.6g}"
              for k in np.flatnonzero(np.abs(dv) > 1e-12)]
    warnings.warn(f"simulate: projected the initial state onto the constraints ({what}): " + ", ".join(moved) + ".",
                  stacklevel=4)
    return q1, qd1, None


def _check_finite(model, q0, qd0):
    """Raise a `SimulationError` naming every non-finite initial coordinate or rate,
    when the values are concrete (non-finite parameters are refused by
    `checked_params`). Without it a NaN input shows only after the run: as a NaN state
    with fixed steps, or (adaptive steps, every error estimate NaN, every step
    rejected) as `max_steps` after 100 000 rejections."""
    bad = nonfinite_entries(model, "q0", q0) + nonfinite_entries(model, "qd0", qd0)
    if bad:
        raise SimulationError("simulate: non-finite input: " + "; ".join(bad) + ". Give finite values.")


def progress_meter(progress):
    """The diffrax progress meter for `simulate(progress=...)`: False/None none, True
    a tqdm bar (text percentages without tqdm), `"text"`, `"tqdm"`, or a meter."""
    if progress is None or progress is False:
        return diffrax.NoProgressMeter()
    if isinstance(progress, diffrax.AbstractProgressMeter):
        return progress
    if progress is True:
        try:
            import tqdm  # noqa: F401 - on first use, as a probe: without tqdm, the text meter
        except ImportError:
            return diffrax.TextProgressMeter(minimum_increase=0.1)
        return diffrax.TqdmProgressMeter()
    if progress == "text":
        return diffrax.TextProgressMeter(minimum_increase=0.1)
    if progress == "tqdm":
        try:
            import tqdm  # noqa: F401 - on first use, as a probe: tqdm is optional
        except ImportError:
            raise SimulationError("simulate: progress='tqdm' needs the tqdm package (pip install tqdm); "
                                  "progress=True or 'text' prints percentages without it.") from None
        return diffrax.TqdmProgressMeter()
    raise SimulationError(f"simulate: progress must be True, False, 'text', 'tqdm' or a diffrax progress "
                          f"meter, got {progress!r}.")


def _simulate_exported(name, args):
    """`_simulate(*args)` for the built-in example `name` through its exported program
    (`mbdjax._exported`): deserialized when stored under the same key, else traced,
    exported and stored. None when the cache is off, `jax.export` cannot serialize here,
    or an argument has no reproducible description (a fresh trace is then cheaper than
    a key that never matches)."""
    model, work, rows, formulation, stabilization, run_with, q0, qd0, p, t0, t1, ts, drift_tol, throw, keys, on_host = args
    solver, adjoint, dt0, max_steps, stream = (run_with.solver, run_with.adjoint, run_with.dt0, run_with.max_steps,
                                               run_with.stream)
    fixed = not run_with.adaptive
    # fixed steps: the tolerances are unused, but keep their places in the signature
    rtol, atol = (device_array(0.0), device_array(0.0)) if fixed else (run_with.controller.rtol,
                                                                        run_with.controller.atol)
    where = _exported.folder()
    if where is None or not _exported.available():
        return None
    values = (q0, qd0, p, t0, formulation, stabilization, solver, adjoint)
    statics = (rows, max_steps, drift_tol, keys, tuple(ts.shape), dt0 is None, type(formulation).__name__, stream)
    k = _exported.key(name, values, statics)
    if k is None:
        return None
    dynamic = (q0, qd0, p, t0, t1, ts, rtol, atol) + (() if dt0 is None else (dt0,))
    found = _EXPORTED.get(k) or _exported.load(where, k)
    if found is not None and found[0] is None:       # does not export in this process
        return None
    if found is None:
        messages = []

        def flat(q0, qd0, p, t0, t1, ts, rtol, atol, dt0=None):
            settings = _solve_settings(solver, adjoint, fixed, rtol, atol, dt0, max_steps, run_with.meter, stream)
            traj, stop, failure = _simulate(model, work, rows, formulation, stabilization, settings, q0, qd0, p, t0,
                                            t1, ts, drift_tol, throw, keys, on_host)
            messages[:] = failure[1]
            return ({name: getattr(traj, name) for name in Trajectory.COMPUTED}, traj.result._value,
                    failure[0], stop)

        try:
            exported = export.export(jax.jit(flat))(*dynamic)
        except NotImplementedError:
            # The program holds a host callback: an inner compiled function traced
            # earlier in this process under an enclosing trace (its in-graph checks
            # kept) is reused by JAX's trace cache. Traced as usual, here only.
            _EXPORTED[k] = (None, {})
            return None
        found = (exported, {"messages": list(messages)})
        _exported.store(where, k, *found)
    _EXPORTED[k] = found
    exported, info = found
    computed, result, flags, stop = exported.call(*dynamic)
    result = jax.tree_util.tree_structure(diffrax.RESULTS.successful).unflatten([result])
    traj = Trajectory.of_model(model, p, keys, result, **computed)
    return traj, stop, (flags, tuple(info["messages"]))


#: exported programs loaded in this process, by key
_EXPORTED = {}

#: Settings whose values are arguments of the compiled program (see `simulate`).
_VALUED = ("rtol", "atol", "fixed_step")


def _solve_settings(solver, adjoint, fixed, rtol, atol, dt0, max_steps, meter, stream):
    """The `SolveSettings` of a run: fixed steps of `dt0` (`fixed`), or steps chosen by a
    PID controller with the tolerances `rtol`, `atol` (arrays, so that new values do
    not compile anew)."""
    controller = diffrax.ConstantStepSize() if fixed else diffrax.PIDController(rtol=rtol, atol=atol)
    return SolveSettings(solver, adjoint, controller, dt0, max_steps, meter, stream)


@eqx.filter_jit
def _simulate(model, work, rows, formulation, stabilization, run_with, q0, qd0, p, t0, t1, ts, drift_tol, throw,
              settings, on_host):
    # `model` is the user's model (reported, checked for drift); `work` the same model
    # restricted to the independent rows `rows` (what the formulation integrates).
    # run-time checks: collected as outputs for the host, or in-graph errors (`_runtime_checks`)
    found = [] if on_host else None
    if throw:  # with throw=False a bad parameter shows as an unsuccessful result instead
        q0 = formulation.check_params(work, p, q0, found)
    # The state is one flat vector (y = [q; q̇] for most formulations): a single leaf
    # halves the solver's per-stage array operations (about 2 µs per step on a CPU).
    y0 = formulation.initial_state(work, q0, qd0, t0, p, found)
    if isinstance(run_with.adjoint, diffrax.BacksolveAdjoint) and formulation.projects(stabilization):
        raise SimulationError(
            "simulate: BacksolveAdjoint solves the continuous adjoint equations backwards, and the "
            "projection after each step is not part of them; use stabilization='none' or 'baumgarte' "
            "with it, or the default adjoint (RecursiveCheckpointAdjoint) with the projection."
        )
    formulation = formulation.for_adjoint(run_with.adjoint)
    run = formulation.integrate(work, stabilization, run_with, y0, p, t0, t1, ts)
    switching = switching_of(work)

    def outputs(yi, ti, aux):
        pi = switching.with_modes(p, aux) if switching is not None else p
        qi, qdi, qddi, lam, u = formulation.outputs_from_state(
            work, yi, ti, pi, stabilization, None if switching is not None else aux)
        if lam is not None and rows is not None and rows.dropped:
            lam = expand(model, rows, qi, ti, pi, lam)  # minimum-norm over all rows
        return qi, qdi, qddi, lam, u

    q, qd, qdd, lam, u = over_times(outputs, (run.ys, run.ts, run.aux), run_with.stream)
    if throw:
        ok = run.result == diffrax.RESULTS.successful
        max_steps_hit = run.result == diffrax.RESULTS.max_steps_reached
        partitions_hit = run.result == diffrax.RESULTS.event_occurred
        finite = jnp.all(jnp.isfinite(q)) & jnp.all(jnp.isfinite(qd))
        if drift_tol is not None and model.m_h:
            drift = jnp.max(jnp.abs(jax.vmap(lambda qi, ti: kin.holonomic(model, qi, ti, p))(q, run.ts)))
            drift_bad = ~(drift <= drift_tol)
        else:
            drift_bad = jnp.asarray(False)
        chart_bad = jnp.asarray(run.singular)
        switches_bad = jnp.asarray(run.switches["exhausted"]) if run.switches is not None else jnp.asarray(False)
        rank_lost = jnp.asarray(run.rank_lost)
        bad = (~ok) | (~finite) | drift_bad | chart_bad | switches_bad
        if on_host:  # raised by `simulate` with the values
            bad = bad & ~rank_lost
        # the first that applies, in this order
        failure = Failure.drift
        for cause, reason in ((~finite, Failure.non_finite), (~ok, Failure.solver),
                              (partitions_hit, Failure.max_partitions), (max_steps_hit, Failure.max_steps),
                              (chart_bad, Failure.coordinate_singularity), (switches_bad, Failure.max_switches),
                              (rank_lost, Failure.rank_lost)):
            failure = Failure.where(cause, reason, failure)
        if on_host:
            found += [(bad & (failure == getattr(Failure, r)), Failure[getattr(Failure, r)]) for r in REASONS]
        else:
            q = failure.error_if(q, bad)
    failure = None
    if on_host:   # the conditions as one array, the messages static (held by the jit's cache)
        failure = (jnp.stack([c for c, _ in found]) if found else jnp.zeros((0,), bool),
                   tuple(message for _, message in found))
    stop = None if run.final is None else (jnp.asarray(run.rank_lost), run.final[0], run.final[1])
    traj = Trajectory.of_model(
        model, p, settings, run.result, t=run.ts, q=q, qd=qd, qdd=qdd, lam=lam, u=u, num_steps=run.num_steps,
        partitions=run.partitions, modes=run.aux if switching is not None else None, switches=run.switches,
    )
    return traj, stop, failure
