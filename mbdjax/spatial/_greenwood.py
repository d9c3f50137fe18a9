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

References: Greenwood, *Advanced Dynamics*, §4.4, eq. (4.144) and examples 4.5–4.7;
Kane's equations.
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import _dynamics as dyn
from .._formulation.quasi_velocity import QuasiVelocity
from ._compile import body_poses


class Greenwood(QuasiVelocity):
    """The quasi-velocity formulation with Greenwood's body-level equation.

    Arguments:
        mechanism: the `mbdjax.spatial.Mechanism` the model was built from (its
            bodies, their poses and inertias).
        definition: `fn(q, qd, t, p) -> (f,)`, the quasi-velocities, affine in q̇
            (as for `QuasiVelocity(definition=...)`); for example body
            angular-velocity components from `mbdjax.spatial.body_poses(mech)`.

    Everything else (state `(q, u)`, `traj.u`, the check of the definition, the
    stabilization options) is that of `QuasiVelocity`.

    Example:

        >>> from mbdjax import models
        >>> qv = models.quasi_velocities(models.heavy_top())
        >>> type(qv).__name__, qv.bodies
        ('Greenwood', ('top',))
    """

    poses: Callable = eqx.field(static=True, default=None)
    bodies: tuple = eqx.field(static=True, default=())

    def __init__(self, mechanism, definition):
        self.definition = definition
        self.velocity_map = None
        self.offset = None
        self.independent = None
        self.poses = body_poses(mechanism)
        self.bodies = tuple(mechanism.bodies)

    def _rates(self, model, q, u, t, p, perm=None):
        # `perm` (a coordinate partition) is never given: the map is the definition's.
        W, qd, acc0 = self._kinematics(model, q, u, t, p)

        def body_velocities(x, s, uu):
            Wx, w0 = self.map(model, x, s, p)
            P = self.poses(x, Wx @ uu + w0)
            return jnp.stack([P[b].v for b in self.bodies]), jnp.stack([P[b].w_body for b in self.bodies])

        (v, wb), (a0, alpha0) = jax.jvp(lambda x, s: body_velocities(x, s, u), (q, t), (qd, jnp.ones_like(t)))
        # Partial velocities: the body velocities are linear in u at fixed (q, t), so
        # differentiate through q̇ = W u + w₀ with the map already evaluated.
        w0 = qd - W @ u

        def at_fixed_q(uu):
            P = self.poses(q, W @ uu + w0)
            return jnp.stack([P[b].v for b in self.bodies]), jnp.stack([P[b].w_body for b in self.bodies])

        gamma, beta = jax.jacfwd(at_fixed_q)(u)  # (nb, 3, f) each
        f = u.shape[0]
        lhs = jnp.zeros((f, f))
        rhs = W.T @ (dyn.applied_forces(model, q, qd, t, p)
                     - jax.grad(lambda x: dyn.potential_energy(model, x, t, p))(q))
        for k, b in enumerate(self.bodies):
            m, J = p[b]["mass"], p[b]["inertia"]
            lhs = lhs + m * gamma[k].T @ gamma[k] + beta[k].T @ J @ beta[k]
            rhs = rhs - m * gamma[k].T @ a0[k] - beta[k].T @ (J @ alpha0[k] + jnp.cross(wb[k], J @ wb[k]))
        ud = jnp.linalg.solve(lhs, rhs)
        return qd, ud, W @ ud + acc0
