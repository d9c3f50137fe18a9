"""A thin disk rolling without slip on a horizontal plane, as a generic Model.

Coordinates: centre (x, y, z) and 3-1-3 Euler angles (φ, θ, ψ) (Greenwood's type II):
`R = R_z(φ) R_x(θ) R_z(ψ)`, body z axis along the symmetry axis `n`, θ the angle
between `n` and the vertical (θ = π/2 upright). Angular velocity (global axes):

    ω = φ̇ e_Z + θ̇ e_N + ψ̇ n,   e_N = (cos φ, sin φ, 0),   n = (sin φ sin θ, −cos φ sin θ, cos θ)

The contact point is the lowest rim point, `ρ = r (sin φ cos θ, −cos φ cos θ, −sin θ)`
from the centre. Constraints: the holonomic contact height `z − r sin θ = 0` and the
two horizontal no-slip rows of `v + ω × ρ = 0` (the vertical row is the derivative of
the height constraint). Thin-disk inertia: `C = ½ m r²` about `n`, `A = ¼ m r²`
about any diameter; `T = ½ m |v|² + ½ A (|ω|² − (ω·n)²) + ½ C (ω·n)²`, `V = m g z`.

References: Greenwood, *Advanced Dynamics*, §4.4 (rolling disk); Zhang Jinfu,
example 2 (disk rolling on the ground).
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from .._initial import initial_conditions
from .._model import Model
from ._example import Example


def disk_kinematics(q, qd, r):
    """`(ω, n, ρ)` of the disk: angular velocity, symmetry axis, centre-to-contact vector."""
    _, _, _, phi, th, _ = q
    phid, thd, psid = qd[3], qd[4], qd[5]
    sphi, cphi, sth, cth = jnp.sin(phi), jnp.cos(phi), jnp.sin(th), jnp.cos(th)
    n = jnp.stack([sphi * sth, -cphi * sth, cth])
    e_node = jnp.stack([cphi, sphi, 0.0 * phi])
    e_z = jnp.array([0.0, 0.0, 1.0])
    omega = phid * e_z + thd * e_node + psid * n
    rho = r * jnp.stack([sphi * cth, -cphi * cth, -sth])
    return omega, n, rho


def contact_velocity(q, qd, r):
    """Velocity of the material contact point, `v + ω × ρ` (zero when rolling)."""
    omega, _, rho = disk_kinematics(q, qd, r)
    return qd[:3] + jnp.cross(omega, rho)


def rolling_disk(theta0=math.pi / 2 - 0.2, phid0=0.5, thd0=0.0, psid0=6.0) -> Example:
    """Thin uniform disk (m = 1 kg, r = 0.3 m, g = 9.81 m/s²) rolling on the plane z = 0.

    Starts at the origin with tilt θ0 (default 0.2 rad from upright), heading φ = 0,
    and rates (φ̇, θ̇, ψ̇) = (0.5, 0, 6) rad/s; t1 = 3 s. Params `m`, `r`, `g`.
    Coordinates "x", "y", "z", "phi", "theta", "psi"; rows "contact_height",
    "no_slip_x", "no_slip_y".

    Example:

        >>> from mbdjax import models
        >>> ex = models.rolling_disk()
        >>> ex.model.n, ex.model.m_h, ex.model.m_n
        (6, 1, 2)
    """

    def T(q, qd, t, p):
        omega, n, _ = disk_kinematics(q, qd, p["r"])
        A = 0.25 * p["m"] * p["r"] ** 2
        C = 0.5 * p["m"] * p["r"] ** 2
        spin = omega @ n
        return 0.5 * p["m"] * (qd[:3] @ qd[:3]) + 0.5 * A * (omega @ omega - spin**2) + 0.5 * C * spin**2

    model = Model(
        ("x", "y", "z", "phi", "theta", "psi"),
        kinetic_energy=T,
        potential=lambda q, t, p: p["m"] * p["g"] * q[2],
        holonomic=lambda q, t, p: jnp.stack([q[2] - p["r"] * jnp.sin(q[4])]),
        constraint_names=("contact_height",),
        nonholonomic=lambda q, qd, t, p: contact_velocity(q, qd, p["r"])[:2],
        nonholonomic_names=("no_slip_x", "no_slip_y"),
        params={"m": 1.0, "r": 0.3, "g": 9.81},
    )
    guess = jnp.array([0.0, 0.0, 0.3 * math.sin(theta0), 0.0, theta0, 0.0])
    q0, qd0 = initial_conditions(
        model, guess, fix_q={"x": 0.0, "y": 0.0, "phi": 0.0, "theta": theta0, "psi": 0.0},
        fix_qd={"phi": phid0, "theta": thd0, "psi": psid0})
    return Example("rolling-disk-generic", "Thin disk rolling without slip on a plane (3-1-3 Euler angles; one "
                   "holonomic, two nonholonomic rows).", model, q0, qd0, 3.0)
