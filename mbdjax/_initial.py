"""Consistent initial conditions (THEORY §4; Haug §6.3.4).

Position: Newton–Raphson on `[Φ(q, t₀); q_k − c_k] = 0`, the user's conditions `q_k = c_k`
as many as the position degrees of freedom `n − m_h`, from the user's guess.
Velocity: the linear system `[Φ_q; A; E] q̇ = [ν; −a; v]` with `n − m_h − m_n`
conditions `q̇_k = v_k`.
"""

from __future__ import annotations

import equinox as eqx
import lineax as lx
import jax.numpy as jnp
import numpy as np
import optimistix as optx

from . import _kinematics as kin
from ._numerics.linalg import numerical_rank, dependent_rows
from ._errors import InitialConditionError
from ._params import checked_params, nonfinite_entries
from ._stabilization.projection import project_positions, project_velocities
from ._tracing import device_array, one_shot_filter_jit
from ._tracing import is_concrete as _concrete



def _conditions(model, fix, needed, label, kind, rank_note=""):
    """Validate a `{name: value}` condition dict; return (indices, values)."""
    if not isinstance(fix, dict):
        raise InitialConditionError(f"initial_conditions: `{label}` must be a dict {{coordinate: value}}.")
    unknown = [k for k in fix if k not in model.coordinates]
    if unknown:
        raise InitialConditionError(
            f"initial_conditions: `{label}` names unknown coordinates {unknown}; the "
            f"coordinates are {list(model.coordinates)}."
        )
    free = [c for c in model.coordinates if c not in fix]
    if len(fix) < needed:
        raise InitialConditionError(
            f"initial_conditions: too few {kind} conditions: the model has {needed} {kind} "
            f"degree(s) of freedom but `{label}` gives {len(fix)}; add {needed - len(fix)} "
            f"more, chosen from {free}."
        )
    if len(fix) > needed:
        raise InitialConditionError(
            f"initial_conditions: too many {kind} conditions: the model has {needed} {kind} "
            f"degree(s) of freedom but `{label}` gives {len(fix)} ({list(fix)}); remove "
            f"{len(fix) - needed}{rank_note}."
        )
    idx = tuple(model.index(k) for k in fix)
    if _concrete(list(fix.values())):      # on the host: no program to compile
        return idx, device_array(np.array([np.asarray(v, dtype=float) for v in fix.values()]).reshape(len(fix)))
    vals = jnp.stack([jnp.asarray(v, dtype=float) for v in fix.values()]) if fix else jnp.zeros((0,))
    return idx, vals


def _unit_rows(idx, n):
    E = np.zeros((len(idx), n))
    for r, k in enumerate(idx):
        E[r, k] = 1.0
    return E


def _raise_dependent(model, J, idx, label, kind):
    """Explain which conditions are dependent on the constraints, and what to fix instead."""
    n = model.n
    rows = list(model.row_names[: J.shape[0]]) if kind == "velocity" else list(model.constraint_names)
    names = rows + [f"{label}[{model.coordinates[k]}]" for k in idx]
    E = _unit_rows(idx, n)
    dep = dependent_rows(np.vstack([J, E]), names)
    dep_cond = [d for d in dep if d.startswith(label)]
    dep_cons = [d for d in dep if not d.startswith(label)]
    if dep_cons and not dep_cond:
        rank = J.shape[0] - len(dep_cons)
        raise InitialConditionError(
            f"initial_conditions: the constraint rows {dep_cons} are dependent at the guess "
            "(redundant joints or a singular configuration; mbdjax.check tells which). With "
            f"redundant joints the model has {n - rank} {kind} degree(s) of freedom: give that "
            "many conditions; otherwise start from a regular configuration."
        )
    base = np.vstack([J] + [E[r] for r, k in enumerate(idx) if f"{label}[{model.coordinates[k]}]" not in dep])
    r0, _ = numerical_rank(np.linalg.svd(base, compute_uv=False), base.shape, 1e-9)
    better = []
    for k, name in enumerate(model.coordinates):
        if k in idx:
            continue
        trial = np.vstack([base, _unit_rows((k,), n)])
        if numerical_rank(np.linalg.svd(trial, compute_uv=False), trial.shape, 1e-9)[0] > r0:
            better.append(name)
    raise InitialConditionError(
        f"initial_conditions: the {kind} conditions {dep_cond} are dependent on the constraints "
        f"(the constraints and the other conditions already determine them); condition one of "
        f"{better} instead."
    )


def _raise_unreachable(model, idx, vals, q_ls, res_ls, res_names):
    """Raise an `InitialConditionError` saying which prescribed positions cannot be
    reached: the least-squares compromise `q_ls` between the constraints and the
    conditions leaves residuals `res_ls` (rows named by `res_names`)."""
    vals = np.asarray(vals)
    moved = [(model.coordinates[k], float(v), float(q_ls[k])) for k, v in zip(idx, vals)]
    moved.sort(key=lambda c: -abs(c[2] - c[1]))
    wanted = ", ".join(f"{nm} = {v:g}" for nm, v, _ in moved)
    closest = ", ".join(f"{nm} = {x:.4g}" for nm, _, x in moved)
    order = [k for k in np.argsort(-np.abs(res_ls)) if k < model.m_h][:3]
    rows = ", ".join(f"{res_names[k]} = {res_ls[k]:.3g}" for k in order)
    raise InitialConditionError(
        f"initial_conditions: fix_q cannot be reached: no assembled configuration near the guess has "
        f"{wanted}. The closest (least squares over constraints and conditions) has {closest}, with "
        f"constraint residuals {rows}. The value is probably outside the range of motion; give one within "
        "reach, or a guess near the assembly you mean."
    )


def _holonomic_rank(model, q_guess, fix, t0, p):
    """Numerical rank of `Φ_q` on the manifold near the guess; `m_h` when traced.

    Redundancy is a property of the constraint manifold (off it the rows are usually
    independent), so the guess, with the fixed values applied, is first projected
    onto `Φ = 0`.
    """
    if not model.m_h or not isinstance(fix, dict) or not _concrete(q_guess, p, list(fix.values())):
        return model.m_h
    q = np.array(q_guess, dtype=float)
    for name, value in fix.items():
        if name in model.coordinates:
            q[model.index(name)] = float(value)
    q, res, _ = _nearest(model, device_array(q), t0, p, 8)
    res = np.asarray(res)
    if not np.all(np.isfinite(res)) or float(np.max(np.abs(res), initial=0.0)) > 1e-8:
        return model.m_h
    J = np.asarray(_holonomic_jacobian(model, q, t0, p))
    return numerical_rank(np.linalg.svd(J, compute_uv=False), J.shape, 1e-9)[0]


def _rank_note(model, rank):
    if rank >= model.m_h:
        return ""
    return (f" (the {model.m_h} holonomic rows have rank {rank} at the guess: redundant "
            f"constraints leave {model.n - rank} position degrees of freedom, which is also accepted)")


# Compiled forms of the evaluations below (one program each, kept in the persistent
# compilation cache) rather than their operations dispatched one by one.
_holonomic_jacobian = one_shot_filter_jit(kin.holonomic_jacobian)
_constraint_jacobian = one_shot_filter_jit(kin.constraint_jacobian)
_velocity_rhs = one_shot_filter_jit(kin.velocity_rhs)
_project_velocities = one_shot_filter_jit(project_velocities)


@one_shot_filter_jit
def _newton(model, q_guess, idx, vals, t0, p, tol, max_iter, method="newton"):
    q_guess = q_guess.at[jnp.asarray(idx, dtype=int)].set(vals) if idx else q_guess

    def residual(q, args):
        r = kin.holonomic(model, q, t0, p)
        if idx:
            r = jnp.concatenate([r, q[jnp.asarray(idx, dtype=int)] - vals])
        return r

    if model.m_h == 0:
        return q_guess, residual(q_guess, None), jnp.asarray(True)
    if method == "levenberg_marquardt":   # the closest the conditions come, when they cannot be met
        sol = optx.least_squares(residual, optx.LevenbergMarquardt(rtol=tol, atol=tol), q_guess,
                                 max_steps=max_iter, throw=False)
    elif method == "gauss_newton":        # redundant rows: least squares
        solver = optx.GaussNewton(rtol=tol, atol=tol, linear_solver=lx.SVD())
        sol = optx.least_squares(residual, solver, q_guess, max_steps=max_iter, throw=False)
    else:
        sol = optx.root_find(
            residual, optx.Newton(rtol=tol, atol=tol), q_guess, max_steps=max_iter, throw=False
        )
    return sol.value, residual(sol.value, None), sol.result == optx.RESULTS.successful


@one_shot_filter_jit
def _nearest(model, q_guess, t0, p, iterations):
    q = project_positions(model, q_guess, t0, p, iterations)
    return q, kin.holonomic(model, q, t0, p), jnp.asarray(True)


@one_shot_filter_jit
def nearest_state(model, q_guess, qd_guess, t0, p, iterations):
    """`_nearest` and the guessed velocities projected onto `B q̇ = b` at its result,
    one program for the common case of no fixed values (one program compiles in about
    two thirds of the time of two)."""
    q, res, converged = _nearest(model, q_guess, t0, p, iterations)
    return q, res, converged, project_velocities(model, q, qd_guess, t0, p)


def initial_conditions(
    model,
    q_guess,
    *,
    fix_q=None,
    qd_guess=None,
    fix_qd=None,
    t0=0.0,
    params=None,
    tol=1e-12,
    max_iter=50,
):
    """Consistent `(q0, qd0)` satisfying every constraint at `t0`.

    Positions: with `fix_q={name: value}` (exactly `n − m_h` entries) the square
    system `[Φ(q, t0); q_k − value_k] = 0` is solved by Newton from `q_guess`. With
    `fix_q=None` the guess is projected onto `Φ = 0` (nearest point, Gauss–Newton).

    Redundant constraints (Φ_q of rank `r < m_h` at the guess) leave `n − r`
    position degrees of freedom; that many conditions are accepted too and solved by
    least-squares (Gauss–Newton) steps, and likewise for the velocities.

    Velocities: with `fix_qd={name: value}` (exactly `n − m_h − m_n` entries) the
    linear system `[Φ_q; A; E] q̇ = [ν; −a; v]` is solved. With `fix_qd=None`,
    `qd_guess` (default zeros) is projected orthogonally onto `B q̇ = b`.

    Condition values may be JAX arrays (traced under `jax.grad` or `jax.vmap`):
    the Newton solve is differentiated implicitly.

    Returns:
        `(q0, qd0)`, each `(n,)`.

    Raises:
        InitialConditionError: unknown coordinate names; too few or too many
            conditions for the degrees of freedom; conditions dependent on the
            constraints (naming them and suggesting coordinates to use instead);
            Newton not converging (with the residual and the worst constraints).

    References: Haug §6.3.4 (initial conditions); THEORY §4.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> q0, qd0 = mbd.initial_conditions(pend, jnp.array([0.9, -0.5]), fix_q={"x": 0.6}, fix_qd={"x": 0.8})
        >>> [round(float(v), 6) for v in (*q0, *qd0)]
        [0.6, -0.8, 0.8, 0.6]
    """
    p = checked_params(model, params, "initial_conditions")
    n = model.n
    q_guess = jnp.asarray(q_guess, dtype=float)
    if q_guess.shape != (n,):
        raise InitialConditionError(
            f"initial_conditions: q_guess has shape {q_guess.shape}, expected ({n},) for "
            f"{list(model.coordinates)}."
        )
    bad = nonfinite_entries(model, "q_guess", q_guess)
    for label, fix in (("fix_q", fix_q), ("fix_qd", fix_qd)):
        if isinstance(fix, dict):
            bad += [f"{label}[{k}] = {float(v)}" for k, v in fix.items()
                    if _concrete(v) and np.ndim(v) == 0 and not np.isfinite(float(v))]
    if bad:
        raise InitialConditionError("initial_conditions: non-finite input: " + "; ".join(bad) + ". Give finite values.")
    t0 = device_array(t0)

    qd_guess = device_array(np.zeros(n)) if qd_guess is None else jnp.asarray(qd_guess, dtype=float)
    if qd_guess.shape != (n,):
        raise InitialConditionError(f"initial_conditions: qd_guess has shape {qd_guess.shape}, expected ({n},).")

    # ---------------------------------------------------------------- positions
    qd_projected = None
    if fix_q is None and fix_qd is None:
        q0, res, converged, qd_projected = nearest_state(model, q_guess, qd_guess, t0, p, 8)
        idx = ()
    elif fix_q is None:
        q0, res, converged = _nearest(model, q_guess, t0, p, 8)
        idx = ()
    else:
        # Redundant constraints (rank r_h < m_h at the guess) leave n − r_h position
        # degrees of freedom; such a condition count is accepted and solved by
        # least-squares Newton steps.
        r_h = model.m_h
        if isinstance(fix_q, dict) and len(fix_q) != n - model.m_h:
            r_h = _holonomic_rank(model, q_guess, fix_q, t0, p)
        redundant = isinstance(fix_q, dict) and r_h < model.m_h and len(fix_q) == n - r_h
        idx, vals = _conditions(model, fix_q, n - (r_h if redundant else model.m_h), "fix_q", "position",
                                rank_note=_rank_note(model, r_h))
        if _concrete(q_guess, vals, p) and model.m_h:
            qg = np.array(q_guess, dtype=float)
            qg[list(idx)] = np.asarray(vals)
            J = np.asarray(_holonomic_jacobian(model, device_array(qg), t0, p))
            stacked = np.vstack([J, _unit_rows(idx, n)])
            if numerical_rank(np.linalg.svd(stacked, compute_uv=False), stacked.shape, 1e-9)[0] < n:
                _raise_dependent(model, J, idx, "fix_q", "position")
        q0, res, converged = _newton(model, q_guess, idx, vals, t0, p, tol, max_iter,
                                     "gauss_newton" if redundant else "newton")
    res_names = list(model.constraint_names) + [f"fix_q[{model.coordinates[k]}]" for k in idx]
    if _concrete(q0, res):
        res_np = np.asarray(res)
        worst = float(np.max(np.abs(res_np))) if res_np.size else 0.0
        if (not bool(converged) or not np.isfinite(worst) or worst > max(1e3 * tol, 1e-9)) and idx:
            # Newton failed from this guess: a least-squares search (Levenberg–Marquardt)
            # either finds an assembly after all, or shows how close one comes.
            q_ls, res_ls, _ = _newton(model, q_guess, idx, vals, t0, p, tol, 4 * max_iter, "levenberg_marquardt")
            res_ls = np.asarray(res_ls)
            worst_ls = float(np.max(np.abs(res_ls)))
            if np.isfinite(worst_ls) and worst_ls <= max(1e3 * tol, 1e-9):
                q0, res_np, worst, converged = q_ls, res_ls, worst_ls, True
            elif np.isfinite(worst_ls):
                _raise_unreachable(model, idx, vals, np.asarray(q_ls), res_ls, res_names)
        if not bool(converged) or not np.isfinite(worst) or worst > max(1e3 * tol, 1e-9):
            order = np.argsort(-np.nan_to_num(np.abs(res_np), nan=np.inf))[:3]
            detail = ", ".join(f"{res_names[k]} = {res_np[k]:.3g}" for k in order)
            raise InitialConditionError(
                f"initial_conditions: Newton did not converge to the constraints (max residual "
                f"{worst:.3g}; worst: {detail}). Start from a guess closer to an assembled "
                "configuration, or check that the conditions can be met."
            )
    else:
        q0 = eqx.error_if(
            q0, ~(jnp.max(jnp.abs(res), initial=0.0) <= max(1e3 * tol, 1e-9)),
            "initial_conditions: Newton did not converge to the constraints.",
        )

    # ---------------------------------------------------------------- velocities
    if qd_projected is not None:
        return q0, qd_projected
    if fix_qd is None:
        return q0, _project_velocities(model, q0, qd_guess, t0, p)
    B = _constraint_jacobian(model, q0, t0, p)
    r_b = model.m
    if _concrete(B) and model.m:
        r_b = numerical_rank(np.linalg.svd(np.asarray(B), compute_uv=False), B.shape, 1e-9)[0]
    redundant = r_b < model.m and isinstance(fix_qd, dict) and len(fix_qd) == n - r_b
    note = "" if r_b >= model.m else (
        f" (B has rank {r_b} < {model.m} rows: redundant constraints leave {n - r_b} velocity "
        "degrees of freedom, which is also accepted)")
    vidx, vvals = _conditions(model, fix_qd, n - (r_b if redundant else model.m), "fix_qd", "velocity",
                              rank_note=note)
    if _concrete(B, vvals, q0, p):          # on the host: no program to compile
        K = np.concatenate([np.asarray(B), _unit_rows(vidx, n)], axis=0)
        if numerical_rank(np.linalg.svd(K, compute_uv=False), K.shape, 1e-9)[0] < n:
            _raise_dependent(model, np.asarray(B), vidx, "fix_qd", "velocity")
        rhs = np.concatenate([np.asarray(_velocity_rhs(model, q0, t0, p)), np.asarray(vvals)])
        solved = np.linalg.lstsq(K, rhs, rcond=None)[0] if redundant else np.linalg.solve(K, rhs)
        return q0, device_array(solved)
    K = jnp.concatenate([B, jnp.asarray(_unit_rows(vidx, n))], axis=0)
    rhs = jnp.concatenate([_velocity_rhs(model, q0, t0, p), vvals])
    if redundant:  # consistent overdetermined system: least squares is exact
        return q0, jnp.linalg.lstsq(K, rhs)[0]
    return q0, jnp.linalg.solve(K, rhs)
