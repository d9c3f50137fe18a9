"""The stabilization interface and the no-op stabilization (THEORY §5, drift control)."""

from __future__ import annotations

import equinox as eqx


class AbstractStabilization(eqx.Module):
    """How constraint drift is controlled during integration.

    Two hooks, both identities by default:

    - `acceleration_rhs(model, q, qd, t, p, g)`: modify the acceleration right side
      `g` of `B q̈ = g` (Baumgarte).
    - `project(model, q, qd, t, p)`: map a state back onto the constraint manifold
      after each step (projection). `projects` tells `simulate` to wrap the solver.
    """

    projects = False

    def acceleration_rhs(self, model, q, qd, t, p, g):
        return g

    def project(self, model, q, qd, t, p):
        return q, qd

    def with_rows(self, independent):
        """This stabilization told whether the constraint rows handed to it are known
        to be independent (`simulate` decides once: `mbdjax._redundancy`)."""
        return self

    def with_block_solves(self):
        """This stabilization as it projects inside a solver's step loop or for the
        members of a batch, where a serial chain's Gram matrix is solved by the
        block-tridiagonal solve at any size (`Projection.block_solves`); unchanged
        for stabilizations that solve nothing."""
        return self


class NoStabilization(AbstractStabilization):
    """Integrate the index-1 equations as they are; drift grows with time.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> traj = mbd.simulate(pend, jnp.array([0.6, -0.8]), jnp.zeros(2), t1=0.5, saveat=2,
        ...                     stabilization=mbd.NoStabilization())
        >>> round(float(traj.q[-1, 0]), 6), float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-8
        (0.029328, True)
    """
