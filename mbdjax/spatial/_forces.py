"""Spatial force elements as energies and generalized forces.

- Gravity: `V = −Σ m_i gᵀ r_i`.
- Spring-damper-actuator between body points (`ℓ = |P_j − P_i|`): `V = ½k(ℓ − ℓ₀)²`,
  content `D = ½c ℓ̇²`, actuator tension `F(ℓ, ℓ̇, t, p)` as the generalized force
  `−F ∂ℓ̇/∂q̇` (positive tension pulls the points together).
- Applied force `f (3,)` (global) at a body point: `Q = (∂v_P/∂q̇)ᵀ f`; applied torque
  `τ (3,)` (global) on a body: `Q = (∂ω/∂q̇)ᵀ τ` (virtual power, Haug §11.2; both
  velocities are linear in q̇, so the transposes are one vjp each).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def spring_length(pi, pj, prm):
    """`(ℓ, ℓ̇)` between the element's two points (poses with velocities)."""
    d = pj.point(prm["point_j"]) - pi.point(prm["point_i"])
    dd = pj.point_velocity(prm["point_j"]) - pi.point_velocity(prm["point_i"])
    ell = jnp.sqrt(d @ d)
    return ell, (d @ dd) / ell


def spring_potential(pi, pj, prm):
    ell = jnp.linalg.norm(pj.point(prm["point_j"]) - pi.point(prm["point_i"]))
    return 0.5 * prm["k"] * (ell - prm["length0"]) ** 2


def spring_dissipation(pi, pj, prm):
    _, ell_dot = spring_length(pi, pj, prm)
    return 0.5 * prm["c"] * ell_dot ** 2


def generalized_force(velocity_of_qd, qd, vector):
    """`(∂v/∂q̇)ᵀ vector` for a velocity `v(q̇)` linear in q̇."""
    _, pullback = jax.vjp(velocity_of_qd, qd)
    return pullback(vector)[0]
