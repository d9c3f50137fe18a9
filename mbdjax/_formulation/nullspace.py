"""Null-space formulation with Wehage–Haug coordinate partitioning (THEORY §5).

Split the coordinates into `m = m_h + m_n` dependent ones `q_u` and `f = n − m`
independent ones `q_w`, so that `B = [B_u B_w]` with `B_u` square and invertible. The
columns of `D = [−B_u⁻¹ B_w; I]` span `null(B)`, and with the independent velocities
`v = q̇_w`

    q̇ = D v + d,                 d = [B_u⁻¹ b; 0],
    (Dᵀ M D) v̇ = Dᵀ (Q − M a_p),  a_p = Ḋ v + ḋ = [B_u⁻¹ g; 0],

(`B a_p = g` and `a_p` has no independent part, so `a_p` needs no derivative of `D`).
Only the independent coordinates carry information: at every right-hand side the
`m_h` holonomically dependent positions are recovered by Newton on `Φ(q, t) = 0`
(the independent ones held fixed) and the `m` dependent velocities by the linear
velocity equations. The holonomic constraints therefore hold to the Newton tolerance
at every step, with no drift to stabilize.

References: Wehage & Haug (1982), generalized coordinate partitioning; Haug,
*Computer Aided Kinematics and Dynamics of Mechanical Systems*, §6.4 and §7.3;
THEORY §5.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import _dynamics as dyn
from .. import _kinematics as kin
from .._tracing import is_concrete
from .._first_order import refuse as refuse_first_order
from .._switching import refuse as refuse_switching
from .base import AbstractFormulation
from .partition import (check_names, check_partition, integrate_partitioned, named_partition, partition_basis,
                        pivoted_dependent, select_partition)

_NEWTON_MAX = 12
_NEWTON_TOL = 1e-14


# ---------------------------------------------------------------------------- recovery
def recover_positions(model, q, t, p, dep_h):
    """`q` with the entries `dep_h (m_h,)` solved from `Φ(q, t) = 0`, the other entries
    held fixed; the given dependent entries are only the Newton starting guess.

    Newton iterates on constant (gradient-stopped) values until the step is below
    1e-14 relative (at most 12 iterations); one last Newton step on the live values
    gives the implicit-function derivative `∂q_u = −Φ_u⁻¹ (Φ_w ∂q_w + Φ_t ∂t + Φ_p ∂p)`
    exactly at convergence, so jvp, vjp and vmap pass through without unrolling the
    iteration. If Newton does not converge the dependent entries come back NaN (the
    solver then rejects the step, or simulate reports the failure).
    """
    if model.m_h == 0:
        return q
    qs, ts, ps = jax.lax.stop_gradient((q, t, p))

    def jac(x):
        return kin.holonomic_jacobian(model, x, ts, ps)[:, dep_h]

    def body(state):
        x, it, _ = state
        dx = jnp.linalg.solve(jac(x), kin.holonomic(model, x, ts, ps))
        x = x.at[dep_h].add(-dx)
        small = jnp.max(jnp.abs(dx)) <= _NEWTON_TOL * (1.0 + jnp.max(jnp.abs(x[dep_h])))
        return x, it + 1, small

    def keep_going(state):
        _, it, small = state
        return (it < _NEWTON_MAX) & ~small

    x, _, converged = jax.lax.while_loop(keep_going, body, (qs, 0, jnp.asarray(False)))
    x = jax.lax.stop_gradient(x)
    live = q.at[dep_h].set(x[dep_h])
    step = jnp.linalg.solve(jax.lax.stop_gradient(jac(x)), kin.holonomic(model, live, t, p))
    out = live.at[dep_h].add(-step)
    return jnp.where(converged | (jnp.max(jnp.abs(step)) <= 1e-10), out, jnp.nan)


def recover_velocities(model, q, qd, t, p, perm):
    """`q̇` with its dependent entries `perm[:m]` solved from `B q̇ = b`."""
    m = model.m
    dep, ind = perm[:m], perm[m:]
    B = kin.constraint_jacobian(model, q, t, p)
    rhs = kin.velocity_rhs(model, q, t, p) - B[:, ind] @ qd[ind]
    return qd.at[dep].set(jnp.linalg.solve(B[:, dep], rhs))


# ---------------------------------------------------------------------------- formulation
class NullSpace(AbstractFormulation):
    """Coordinate partitioning: integrate the independent coordinates, recover the rest.

    The state is `[q; q̇]`, but only its independent entries are integrated
    information: every right-hand side first recovers the dependent positions by
    Newton on `Φ = 0` and the dependent velocities from `B q̇ = b`, then solves the
    `f × f` null-space equations (module docstring). The same recovery maps each
    step's result and every saved point back, so holonomic residuals stay at the
    Newton tolerance (about 1e-15) with no stabilization.

    Re-partitioning. A partition degrades when the motion approaches a configuration
    where `B_u` is singular (a four-bar whose independent coordinate is the rocker
    angle, as the rocker reaches a limit position). Once the partition's condition
    `σ_max(B) / σ_min(B_u)` grows past `growth` times its value when the partition was
    chosen,
    a diffrax `Event` ends the current solve at the end of that step; a new partition
    is chosen there by column pivoting, and the solve restarts from that state, up to
    `max_partitions` pieces in one `simulate` call. Why this design: the dependent
    set is an integer choice, so it cannot change inside a smooth vector field; an
    event restart keeps each piece an ordinary adaptive solve with its own error
    control, and the bounded number of pieces (a `lax.scan` over solves, unused ones
    of zero length) keeps the whole call reverse-differentiable, which an unbounded
    `while_loop` would not be. The recovery is exact on either side of the switch,
    so the motion does not depend on where it happens; a relative threshold adapts
    to the mechanism's scaling (unit choices change the absolute condition numbers).

    Arguments:
        independent: names of the `n − m` coordinates whose velocities are
            integrated first (as a user would pick them), or None to choose them by
            column pivoting of `B` at the initial configuration. With nonholonomic
            rows the positions of the `m_n` nonholonomically dependent coordinates are
            integrated too (they cannot be recovered from positions).
        growth: re-partition when the partition's condition `σ_max(B) / σ_min(B_u)`
            exceeds this factor times its value at the start of the piece (default 10).
        max_partitions: most pieces (partitions) in one call (default 32: the Bricard
            loop needs 9 in 10 s, its one independent coordinate reaching limit
            positions); running out
            is a `simulate` error.
        multipliers: also recover `λ` at the output times from `B_uᵀ λ = (Q − M q̈)_u`,
            for reactions and energy balances (default False: `lam` is None).

    Stabilization: none is needed; `"projection"` and `"none"` give the same result,
    and Baumgarte is ignored with a warning. The trajectory's `partitions` and
    `partition_history()` tell which coordinates were independent when.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> traj = mbd.simulate(pend, jnp.array([0.6, -0.8]), jnp.zeros(2), t1=0.5, saveat=2,
        ...                     formulation=mbd.NullSpace())
        >>> round(float(traj.q[-1, 0]), 6), float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-10
        (0.029328, True)
    """

    independent: tuple[str, ...] | None = None
    growth: float = 10.0
    max_partitions: int = 32
    multipliers: bool = False
    ignores = ("Baumgarte",)
    ignores_reason = "coordinate partitioning satisfies the constraints exactly, with no drift"

    def __check_init__(self):
        if self.independent is not None and (isinstance(self.independent, str) or
                                             not all(isinstance(c, str) for c in self.independent)):
            raise ValueError("NullSpace: `independent` must be a tuple of coordinate names.")
        if not float(self.growth) > 1.0:
            raise ValueError(f"NullSpace: growth must be > 1, got {self.growth}.")
        if int(self.max_partitions) < 1:
            raise ValueError(f"NullSpace: max_partitions must be >= 1, got {self.max_partitions}.")

    def equation_count(self, model):
        return model.n - model.m

    # ------------------------------------------------------------------ set-up
    def prepare(self, model, p, q0, t0):
        refuse_first_order(model, p, q0, t0, "NullSpace")
        refuse_switching(model, "NullSpace")
        if self.independent is None:
            if model.m and is_concrete(p, q0, t0):
                # The automatic choice must be usable: a rank-deficient B has none.
                B = np.asarray(kin.constraint_jacobian(model, q0, t0, p))
                check_partition(model, B, pivoted_dependent(B, model.coordinates), "NullSpace",
                                "dependent coordinates chosen by pivoting")
            return self
        ind = tuple(self.independent)
        check_names(model, ind, model.n - model.m, "NullSpace", "independent")
        if is_concrete(p, q0, t0):
            B = np.asarray(kin.constraint_jacobian(model, q0, t0, p))
            dep = tuple(c for c in model.coordinates if c not in ind)
            check_partition(model, B, dep, "NullSpace", "dependent coordinates (all but `independent`)",
                            suggest="independent")
        return NullSpace(independent=tuple(sorted(ind, key=model.index)), growth=self.growth,
                         max_partitions=self.max_partitions, multipliers=self.multipliers)

    def _first_partition(self, model, q, t, p):
        if self.independent is None:
            return select_partition(model, q, t, p)
        return named_partition(model, self.independent, q, t, p)

    # ------------------------------------------------------------------ dynamics
    def _recover(self, model, y, t, p, perm):
        n = model.n
        q = recover_positions(model, y[:n], t, p, perm[: model.m_h])
        return q, recover_velocities(model, q, y[n:], t, p, perm)

    def _solve(self, model, q, qd, t, p, perm, with_multipliers=False):
        m = model.m
        M = dyn.mass_matrix(model, q, qd, t, p)
        Q = dyn.forcing(model, q, qd, t, p)
        B = kin.constraint_jacobian(model, q, t, p)
        g = kin.acceleration_rhs(model, q, qd, t, p)
        dep = perm[:m]
        D = partition_basis(B, perm, m)
        a_p = jnp.zeros_like(q).at[dep].set(jnp.linalg.solve(B[:, dep], g))
        v_dot = jnp.linalg.solve(D.T @ M @ D, D.T @ (Q - M @ a_p))
        qdd = D @ v_dot + a_p
        if not with_multipliers:
            return qdd, None
        return qdd, jnp.linalg.solve(B[:, dep].T, (Q - M @ qdd)[dep])

    def accelerations(self, model, q, qd, t, p, stabilization):
        if model.m == 0:
            return jnp.linalg.solve(dyn.mass_matrix(model, q, qd, t, p), dyn.forcing(model, q, qd, t, p)), None
        return self._solve(model, q, qd, t, p, self._first_partition(model, q, t, p), self.multipliers)

    def vector_field(self, model, t, y, args, stabilization):
        if model.m == 0:  # nothing to partition: args is the parameter pytree
            return AbstractFormulation.vector_field(self, model, t, y, args, stabilization)
        p, perm, _ = args
        q, qd = self._recover(model, y, t, p, perm)
        qdd, _ = self._solve(model, q, qd, t, p, perm)
        return jnp.concatenate([qd, qdd])

    def outputs_from_state(self, model, y, t, p, stabilization, aux=None):
        n = model.n
        if model.m == 0:
            qdd, _ = self.accelerations(model, y[:n], y[n:], t, p, stabilization)
            return y[:n], y[n:], qdd, None, None
        q, qd = self._recover(model, y, t, p, aux)
        qdd, lam = self._solve(model, q, qd, t, p, aux, self.multipliers)
        return q, qd, qdd, lam, None

    # ------------------------------------------------------------------ integration
    def integrate(self, model, stabilization, settings, y0, p, t0, t1, ts):
        if model.m == 0:
            return AbstractFormulation.integrate(self, model, stabilization, settings, y0, p, t0, t1, ts)
        n = model.n

        def vector_field(t, y, args):
            return self.vector_field(model, t, y, args, stabilization)

        def project(t, y, args):
            p_, perm, _ = args
            return jnp.concatenate(self._recover(model, y, t, p_, perm))

        perm0 = self._first_partition(model, y0[:n], t0, p)
        y0 = project(t0, y0, (p, perm0, None))
        # The state [q; q̇] means the same in every partition: nothing to carry over.
        return integrate_partitioned(model, settings, y0, p, t0, t1, ts, perm0, vector_field, project,
                                     lambda t, y, p_, old, new: y, growth=float(self.growth),
                                     max_partitions=self.max_partitions,
                                     watch=settings.adaptive)
