"""Planar force elements: springs, dampers, actuators, applied forces and torques.

Conservative parts enter the Model as a potential `V`, viscous parts as a Rayleigh
dissipation content `D` (THEORY §2: `Q = Q^A − ∂V/∂q − ∂D/∂q̇`), and everything given
as a user function as the applied force `Q^A`.

- translational spring-damper-actuator (TSDA, Haug §4.4.2, eq. 4.4.17): with
  `d = r_j + A_j s'_j − r_i − A_i s'_i`, `ℓ = |d|`, `ℓ̇ = dᵀḋ/ℓ`, the tension
  `f = k(ℓ − ℓ0) + c ℓ̇ + F(ℓ, ℓ̇, t, p)` acts along the line and positive `f` pulls the
  two points together. Here `V = ½k(ℓ − ℓ0)²`, `D = ½cℓ̇²` and the actuator `F` is the
  applied force `Q^A = −F ∂ℓ/∂q`.
- rotational spring-damper-actuator (RSDA, Haug §4.4.3) on `θ = φ_j − φ_i`:
  `V = ½k(θ − θ0)²`, `D = ½cθ̇²`, actuator torque `τ(θ, θ̇, t, p)` with `Q^A = −τ ∂θ/∂q`.
- a force `F = f(q, q̇, t, p)` (global axes) at local point `s'` of body b:
  `Q_b = (F_x, F_y, (A_b s')×F)` (Haug §4.4.1); a torque `τ = f(q, q̇, t, p)`: `Q_{φ_b} = τ`.
- gravity: `V = −Σ_b m_b g·r_b` (Haug §4.4.1).

References: E. J. Haug, *Computer-Aided Kinematics and Dynamics of Mechanical
Systems*, §4.4.
"""

from __future__ import annotations

import jax.numpy as jnp

from ._geometry import cross, point, point_velocity, rotate, safe_norm


# --------------------------------------------------------------------- TSDA
def _line(qi, qj, ep):
    return point(qj, ep["point_j"]) - point(qi, ep["point_i"])


def spring_potential(qi, qj, ep):
    """`½k(ℓ − ℓ0)² = ½k(dᵀd − 2ℓ0ℓ + ℓ0²)`: smooth at `ℓ = 0` when `ℓ0 = 0`."""
    d = _line(qi, qj, ep)
    l0 = ep["length0"]
    return 0.5 * ep["k"] * (jnp.dot(d, d) - 2.0 * l0 * safe_norm(d) + l0 * l0)


def spring_dissipation(qi, qj, vi, vj, ep):
    """`½cℓ̇² = ½c (dᵀḋ)²/dᵀd` (zero at `d = 0`)."""
    d = _line(qi, qj, ep)
    dv = point_velocity(qj, vj, ep["point_j"]) - point_velocity(qi, vi, ep["point_i"])
    dd = jnp.dot(d, d)
    pos = dd > 0
    return 0.5 * ep["c"] * jnp.where(pos, jnp.dot(d, dv) ** 2 / jnp.where(pos, dd, 1.0), 0.0)


def spring_state(qi, qj, vi, vj, ep):
    """`(ℓ, ℓ̇, u)` with `u = d/ℓ` the unit vector from point i to point j."""
    d = _line(qi, qj, ep)
    dv = point_velocity(qj, vj, ep["point_j"]) - point_velocity(qi, vi, ep["point_i"])
    length = safe_norm(d)
    pos = length > 0
    inv = jnp.where(pos, 1.0 / jnp.where(pos, length, 1.0), 0.0)
    return length, jnp.dot(d, dv) * inv, d * inv


def tension_forces(qi, qj, u, f, ep):
    """Generalized forces `(Q_i, Q_j)`, each `(3,)`, of a tension `f` along `u`."""
    si = rotate(qi[2], ep["point_i"])
    sj = rotate(qj[2], ep["point_j"])
    Fi = f * u  # pulls point i towards j
    Fj = -f * u
    return (jnp.concatenate([Fi, cross(si, Fi)[None]]), jnp.concatenate([Fj, cross(sj, Fj)[None]]))


# --------------------------------------------------------------------- RSDA
def rotational_potential(qi, qj, ep):
    """`½k(θ − θ0)²`, `θ = φ_j − φ_i`."""
    return 0.5 * ep["k"] * (qj[2] - qi[2] - ep["angle0"]) ** 2


def rotational_dissipation(qi, qj, vi, vj, ep):
    """`½cθ̇²`."""
    return 0.5 * ep["c"] * (vj[2] - vi[2]) ** 2


# ---------------------------------------------------------------- point force
def point_force(qb, F, s):
    """Generalized force `(F_x, F_y, (A s')×F)` of a global force `F` at local point `s'`."""
    return jnp.concatenate([F, cross(rotate(qb[2], s), F)[None]])
