"""Greenwood's general dynamical equation written body by body (THEORY §5).

With quasi-velocities `u` (`q̇ = W u + w₀`), each body's mass-centre velocity
`v_i(q, u, t)` and body-axis angular velocity `ω'_i(q, u, t)` are linear in `u`; their
coefficients are the partial velocities `γ_i = ∂v_i/∂u` and partial angular
velocities `β_i = ∂ω'_i/∂u` (`(3, f)` each, by `jax.jacfwd`). With the accelerations
split as `a_i = γ_i u̇ + a_i⁰` and `ω̇'_i = β_i u̇ + α_i⁰` (the `u̇`-free parts by one
`jax.jvp` along `(q̇, 1)` at fixed `u`), the general dynamical equation

    Σ_i [m_i a_i·γ_ij + (J_i ω̇'_i + ω'_i × J_i ω'_i)·β_ij] = Q_j,   j = 1 … f,

becomes the `f × f` linear system

    Σ_i (m_i γ_iᵀγ_i + β_iᵀ J_i β_i) u̇ = Wᵀ Q^A − Σ_i [m_i γ_iᵀ a_i⁰ + β_iᵀ (J_i α_i⁰ + ω'_i × J_i ω'_i)],

`Q^A` the generalized applied forces (gravity and springs through `−∂V/∂q`, dampers,
actuators, forces, torques). Constraint forces never appear: `u` spans the admissible
motions. The equations are those of `QuasiVelocity` (which forms `Wᵀ M W` from the
Lagrangian) computed another way, so the two check each other.

The bodies come from the model's body table (`Model.bodies`, which the spatial front
end records): each body's pose and velocities as functions of `(q, q̇)` and its mass and
inertia tensor from the parameters.

References: Greenwood, *Advanced Dynamics*, §4.4, eq. (4.144) and examples 4.5–4.7;
Kane's equations.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import _dynamics as dyn
from .._errors import SimulationError
from .quasi_velocity import QuasiVelocity


class Greenwood(QuasiVelocity):
    """The quasi-velocity formulation with Greenwood's body-level equation.

    Arguments: those of `QuasiVelocity` (a `definition` of `u`, a `velocity_map`, or
    none: the independent velocities of a coordinate partition, re-chosen along the
    motion), and
        bodies: the bodies to sum over (default: every body of the model's body table).

    The model must carry a body table (`Model.bodies`): models built by
    `mbdjax.spatial.Mechanism` do. `simulate(..., formulation="greenwood")` uses the
    partition's velocities as `u`; `mbdjax.spatial.Greenwood(mechanism, definition)`
    gives Greenwood's own choices (body angular-velocity components, a spin).

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models
        >>> ex = models.heavy_top()
        >>> traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.2, saveat=3, formulation="greenwood")
        >>> traj.settings[0], traj.u.shape
        (('formulation', 'Greenwood'), (3, 3))
    """

    bodies: tuple = eqx.field(static=True, default=())

    def prepare(self, model, p, q0, t0):
        if model.bodies is None:
            raise SimulationError(
                "Greenwood: the model has no body table (the bodies' poses, masses and inertias); build it "
                "with mbdjax.spatial.Mechanism, or use formulation='quasi_velocity', which needs only the "
                "Lagrangian.")
        unknown = sorted(set(self.bodies) - set(model.bodies.names))
        if unknown:
            raise SimulationError(f"Greenwood: bodies {unknown} are not in the model; its bodies are "
                                  f"{list(model.bodies.names)}.")
        return super().prepare(model, p, q0, t0)

    def _rates(self, model, q, u, t, p, perm=None):
        W, qd, acc0 = self._kinematics(model, q, u, t, p, perm)
        table = model.bodies
        names = self.bodies or table.names

        def velocities(x, q_dot):
            P = table.poses(x, q_dot)
            return jnp.stack([P[b].v for b in names]), jnp.stack([P[b].w_body for b in names])

        def body_velocities(x, s, uu):
            Wx, w0 = self.map(model, x, s, p, perm)
            return velocities(x, Wx @ uu + w0)

        (v, wb), (a0, alpha0) = jax.jvp(lambda x, s: body_velocities(x, s, u), (q, t), (qd, jnp.ones_like(t)))
        # Partial velocities: the body velocities are linear in u at fixed (q, t), so
        # differentiate through q̇ = W u + w₀ with the map already evaluated.
        w0 = qd - W @ u
        gamma, beta = jax.jacfwd(lambda uu: velocities(q, W @ uu + w0))(u)  # (nb, 3, f) each
        f = u.shape[0]
        lhs = jnp.zeros((f, f))
        rhs = W.T @ (dyn.applied_forces(model, q, qd, t, p)
                     - jax.grad(lambda x: dyn.potential_energy(model, x, t, p))(q))
        for k, b in enumerate(names):
            m, J = table.inertia(p, b)
            lhs = lhs + m * gamma[k].T @ gamma[k] + beta[k].T @ J @ beta[k]
            rhs = rhs - m * gamma[k].T @ a0[k] - beta[k].T @ (J @ alpha0[k] + jnp.cross(wb[k], J @ wb[k]))
        ud = jnp.linalg.solve(lhs, rhs)
        return qd, ud, W @ ud + acc0
