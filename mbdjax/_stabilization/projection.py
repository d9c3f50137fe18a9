"""Projection of the state onto the constraint manifold after each step."""

from __future__ import annotations

import jax

from .. import _kinematics as kin
from .._linalg import spd_solve
from .base import AbstractStabilization


def _min_norm_correction(J, r):
    """`Jᵀ (J Jᵀ)⁻¹ r`: the smallest `dx` with `J dx = r` (least squares if J is deficient).

    `J Jᵀ` is solved by Cholesky (`mbdjax._linalg.spd_solve`), or by SVD least squares
    when it is singular (redundant rows): only the branch taken runs.
    """
    return J.T @ spd_solve(J @ J.T, r, True)


def project_positions(model, q, t, p, iterations=2):
    """Gauss–Newton steps `q ← q − Φ_qᵀ(Φ_q Φ_qᵀ)⁻¹ Φ` onto `Φ(q, t) = 0`."""
    if model.m_h == 0:
        return q

    def body(x, _):
        J = kin.holonomic_jacobian(model, x, t, p)
        return x - _min_norm_correction(J, kin.holonomic(model, x, t, p)), None

    q, _ = jax.lax.scan(body, q, None, length=iterations)
    return q


def project_velocities(model, q, qd, t, p):
    """Orthogonal projection of `q̇` onto `B q̇ = b`."""
    if model.m == 0:
        return qd
    B = kin.constraint_jacobian(model, q, t, p)
    return qd - _min_norm_correction(B, B @ qd - kin.velocity_rhs(model, q, t, p))


class Projection(AbstractStabilization):
    """After every step, project `q` onto `Φ = 0` and then `q̇` onto `B q̇ = b`.

    Positions take `iterations` Gauss–Newton (minimum-norm) steps, which converge
    quadratically from the step's small drift; velocities one exact linear
    projection. The integrator's error estimate is that of the unprojected step, and
    the first stage of the next step is re-evaluated at the projected state. Saved
    points are projected as well, so residuals at output times are at round-off.

    Arguments:
        iterations: Gauss–Newton steps for the positions (default 2).
        velocities: also project the velocities (default True).
    """

    iterations: int = 2
    velocities: bool = True
    projects = True

    def __check_init__(self):
        if int(self.iterations) < 1:
            raise ValueError(f"Projection: iterations must be >= 1, got {self.iterations}.")

    def project(self, model, q, qd, t, p):
        q = project_positions(model, q, t, p, self.iterations)
        if self.velocities:
            qd = project_velocities(model, q, qd, t, p)
        return q, qd
