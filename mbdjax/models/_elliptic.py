"""Zhang's example 1: the elliptic pendulum with a nonholonomic constraint.

A slider A (mass m₁) moves on the smooth horizontal line y = 0; a uniform rod AB
(mass m₂, length l) is hinged at A. Coordinates: the rod's midpoint C = (x, y) and the
rod angle θ from the x axis, so A = C − (l/2)(cos θ, sin θ). Constraints:

    holonomic     y − (l/2) sin θ = 0                 (A stays on the line)
    nonholonomic  ẋ sin θ − ẏ cos θ = 0               (C moves along AB; Zhang's
                                                       ẋ tan θ − ẏ = 0 times cos θ)

Kinetic energy T = ½ m₁ |v_A|² + ½ m₂ (ẋ² + ẏ²) + ½ (m₂ l²/12) θ̇²; applied forces
F_x(t), F_y(t) at C and a couple M(t) on the rod, plus gravity on the rod (the
slider's weight is carried by the line). One degree of freedom.
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from .._initial import initial_conditions
from .._model import Model
from ._example import Example


def elliptic_pendulum() -> Example:
    """Zhang's elliptic pendulum as a generic `Model` (values ours).

    m₁ = 1 kg, m₂ = 2 kg, l = 1 m, g = 9.81 m/s²; F_x = 0.5 sin(2t) N, F_y = 0,
    M = 0.2 cos t N·m (`params["Fx"]["amplitude"]`, `params["M"]["amplitude"]`).
    Starts at θ = π/4 with θ̇ = 1 rad/s; t1 = 3 s.

    References: Zhang Jinfu, example 1 (Fig. 1, eqs. (22)–(23)).

    Example:

        >>> from mbdjax import models
        >>> ex = models.elliptic_pendulum()
        >>> ex.model.coordinates, ex.model.m_h, ex.model.m_n
        (('x', 'y', 'theta'), 1, 1)
    """

    def T(q, qd, t, p):
        x, y, th = q
        xd, yd, thd = qd
        half = 0.5 * p["l"]
        vax = xd + half * jnp.sin(th) * thd
        vay = yd - half * jnp.cos(th) * thd
        return (0.5 * p["m1"] * (vax**2 + vay**2) + 0.5 * p["m2"] * (xd**2 + yd**2)
                + 0.5 * p["m2"] * p["l"] ** 2 / 12.0 * thd**2)

    def V(q, t, p):
        return p["m2"] * p["g"] * q[1]

    def forces(q, qd, t, p):
        return jnp.stack([p["Fx"]["amplitude"] * jnp.sin(2.0 * t), 0.0 * t, p["M"]["amplitude"] * jnp.cos(t)])

    def Phi(q, t, p):
        return jnp.stack([q[1] - 0.5 * p["l"] * jnp.sin(q[2])])

    def C(q, qd, t, p):
        return jnp.stack([qd[0] * jnp.sin(q[2]) - qd[1] * jnp.cos(q[2])])

    params = {"m1": 1.0, "m2": 2.0, "l": 1.0, "g": 9.81, "Fx": {"amplitude": 0.5}, "M": {"amplitude": 0.2}}
    model = Model(("x", "y", "theta"), kinetic_energy=T, potential=V, forces=forces, holonomic=Phi,
                  constraint_names=("slider_on_line",), nonholonomic=C, nonholonomic_names=("c_along_rod",),
                  params=params)
    th0 = math.pi / 4
    q0, qd0 = initial_conditions(model, jnp.array([0.0, 0.5 * math.sin(th0), th0]),
                                 fix_q={"x": 0.0, "theta": th0}, fix_qd={"theta": 1.0})
    return Example("elliptic-pendulum", "Zhang's elliptic pendulum: slider on a line, hinged rod whose "
                   "midpoint moves along the rod (one holonomic, one nonholonomic row).", model, q0, qd0, 3.0)
