"""The `Example` record and a small consistent-state solver for the model zoo."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _kinematics as kin
from .._errors import InitialConditionError


@dataclasses.dataclass(frozen=True, eq=False)
class Example:
    """A standard system ready to simulate.

    Attributes:
        name: the CLI name (`"slider-crank"`, ...).
        description: one paragraph: the system, its values and units, the source.
        model: the `mbdjax.Model`.
        q0, qd0: `(n,)` consistent initial state at `t = 0`: `Φ(q0, 0) = 0` and
            `Φ_q q̇0 = ν` to about 1e-12.
        t1: a sensible end time (s) for a demonstration run.
        mechanism: the `mbdjax.planar.Mechanism` the model was built from (None for
            models from other front ends).
    """

    name: str
    description: str
    model: Any
    q0: jax.Array
    qd0: jax.Array
    t1: float
    mechanism: Any = None


def _indices(model, names):
    return [model.index(k) for k in names]


def consistent_positions(model, q_guess, fix=None, t=0.0, *, tol=1e-13, max_iter=30):
    """Newton–Raphson on `[Φ(q, t); q_k − value_k] = 0` (least-squares steps).

    `fix` maps coordinate names to values held exactly (the independent coordinates
    of THEORY §4). Least-squares steps (`numpy.linalg.lstsq`) accept redundant
    constraints. Raises InitialConditionError if the residual stays above `tol`.
    """
    fix = dict(fix or {})
    q = np.array(q_guess, dtype=float)
    idx = _indices(model, fix)
    for k, v in zip(idx, fix.values()):
        q[k] = v
    free = np.setdiff1d(np.arange(model.n), idx)
    p = model.params
    for _ in range(max_iter):
        phi = np.asarray(kin.holonomic(model, q, t, p))
        if phi.size == 0 or np.max(np.abs(phi)) <= tol:
            return jnp.asarray(q)
        J = np.asarray(kin.holonomic_jacobian(model, q, t, p))[:, free]
        q[free] -= np.linalg.lstsq(J, phi, rcond=None)[0]
    worst = np.argsort(-np.abs(phi))[:3]
    names = ", ".join(f"{model.constraint_names[k]} ({phi[k]:.3g})" for k in worst)
    raise InitialConditionError(f"models: position analysis did not converge; largest residuals {names}.")


def consistent_velocities(model, q, fix=None, t=0.0, *, tol=1e-12):
    """Solve `[Φ_q; E] q̇ = [ν; values]` (least squares) for the velocities.

    `fix` maps coordinate names to the velocities held exactly.
    """
    fix = dict(fix or {})
    p = model.params
    J = np.asarray(kin.holonomic_jacobian(model, q, t, p))
    nu = np.asarray(kin.nu(model, q, t, p))
    idx = _indices(model, fix)
    E = np.zeros((len(idx), model.n))
    E[np.arange(len(idx)), idx] = 1.0
    A = np.concatenate([J, E])
    b = np.concatenate([nu, np.array(list(fix.values()), dtype=float)])
    qd = np.linalg.lstsq(A, b, rcond=None)[0]
    res = A @ qd - b
    if res.size and np.max(np.abs(res)) > tol * max(1.0, np.max(np.abs(b))):
        raise InitialConditionError(
            f"models: velocity analysis is inconsistent (residual {np.max(np.abs(res)):.3g}); "
            f"the fixed velocities {list(fix)} contradict the constraints."
        )
    return jnp.asarray(qd)
