"""Baumgarte stabilization of the acceleration equation (Haug §6.3; Baumgarte 1972)."""

from __future__ import annotations

import jax.numpy as jnp

from .. import _kinematics as kin
from .base import AbstractStabilization


class Baumgarte(AbstractStabilization):
    """Replace `g` by `g − 2α (B q̇ − b) − β² [Φ; 0]`.

    The constraint error `e = Φ` then obeys `ë + 2α ė + β² e = 0`, a damped
    oscillator (critically damped for `α = β`). Rates in 1/s; too large values make
    the equations stiff, too small ones let drift grow.

    Arguments:
        alpha: velocity feedback rate `α` (1/s), default 5.
        beta: position feedback rate `β` (1/s), default 5.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> traj = mbd.simulate(pend, jnp.array([0.6, -0.8]), jnp.zeros(2), t1=0.5, saveat=2,
        ...                     stabilization=mbd.Baumgarte(alpha=10.0, beta=10.0))
        >>> round(float(traj.q[-1, 0]), 6), float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-8
        (0.029328, True)
    """

    alpha: float = 5.0
    beta: float = 5.0

    def __check_init__(self):
        if not (float(self.alpha) >= 0 and float(self.beta) >= 0):
            raise ValueError(f"Baumgarte: alpha and beta must be >= 0, got {self.alpha}, {self.beta}.")

    def acceleration_rhs(self, model, q, qd, t, p, g):
        if model.m == 0:
            return g
        vel_err = kin.velocity_residual(model, q, qd, t, p)
        pos_err = kin.holonomic(model, q, t, p)
        pos_err = jnp.concatenate([pos_err, jnp.zeros((model.m_n,), dtype=float)])
        return g - 2.0 * self.alpha * vel_err - self.beta**2 * pos_err
