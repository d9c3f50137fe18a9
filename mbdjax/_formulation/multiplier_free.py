"""Zhang's multiplier-free equations (THEORY §5; Zhang Jinfu, eqs. (9)–(10)).

From the general equation `Σ R_k δq_k = 0`, `R = Q − M q̈`, and the variational
constraints `B δq = 0` split as `B₁ δq̄ + B₂ δq̂ = 0` (`B₁` square and invertible, `q̄` the
dependent coordinates):

    R̂ − (B₁⁻¹ B₂)ᵀ R̄ = 0     (n − m equations, no multipliers)

closed by the `m_h` holonomic and `m_n` nonholonomic constraints at acceleration
level. With `D = [−B₁⁻¹ B₂; I]` (rows ordered as `[q̄; q̂]`, a basis of null(B)) this is
the square `n × n` system

    [[Dᵀ M], [B]] q̈ = [[Dᵀ Q], [g]].
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import _dynamics as dyn
from .. import _kinematics as kin
from .._errors import SimulationError
from .._tracing import is_concrete
from .._first_order import refuse as refuse_first_order
from .._switching import refuse as refuse_switching
from .base import AbstractFormulation
from .partition import check_names, check_partition, partition_basis, pivoted_dependent


class MultiplierFree(AbstractFormulation):
    """Zhang's equations without multipliers: `n` equations in the `n` accelerations.

    Arguments:
        dependent: names of the `m = m_h + m_n` dependent coordinates `q̄` (as in the
            paper), or None to choose them by column-pivoted QR of `B` at the initial
            configuration. The partition is fixed for the whole run: if `B₁` degenerates
            along the motion the solver fails (use the augmented form there).
        multipliers: also recover `λ` at the output times from `Bᵀλ = Q − M q̈` (least
            squares, exact for consistent data), for reactions and energy balances.
            Default False: the trajectory's `lam` is None.

    Raises (at `simulate`):
        SimulationError: unknown or wrongly counted `dependent` names, or `B₁`
            singular at the initial configuration (naming a well-conditioned choice).

    References: Zhang Jinfu, "A type of dynamic equations for systems subjected to ideal
    constraints without unknown multipliers", eqs. (9)–(10); THEORY §5.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> traj = mbd.simulate(pend, jnp.array([0.6, -0.8]), jnp.zeros(2), t1=0.5, saveat=2,
        ...                     formulation=mbd.MultiplierFree())
        >>> round(float(traj.q[-1, 0]), 6), float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-10
        (0.029328, True)
    """

    dependent: tuple[str, ...] | None = None
    multipliers: bool = False

    def __check_init__(self):
        if self.dependent is not None and (isinstance(self.dependent, str) or
                                           not all(isinstance(d, str) for d in self.dependent)):
            raise ValueError("MultiplierFree: `dependent` must be a tuple of coordinate names.")

    def equation_count(self, model):
        return model.n

    def prepare(self, model, p, q0, t0):
        refuse_first_order(model, p, q0, t0, "MultiplierFree")
        refuse_switching(model, "MultiplierFree")
        m = model.m
        if m == 0:
            return MultiplierFree(dependent=(), multipliers=self.multipliers)
        concrete = is_concrete(p, q0, t0)
        B = np.asarray(kin.constraint_jacobian(model, q0, t0, p)) if concrete else None
        if self.dependent is None:
            if not concrete:
                raise SimulationError(
                    "MultiplierFree: the initial state is traced (jit/vmap/grad over q0), so the "
                    "dependent coordinates cannot be chosen by pivoting; pass "
                    "mbdjax.MultiplierFree(dependent=(...)) explicitly."
                )
            return MultiplierFree(dependent=pivoted_dependent(B, model.coordinates),
                                  multipliers=self.multipliers)
        dep = tuple(self.dependent)
        check_names(model, dep, m, "MultiplierFree", "dependent")
        if concrete:
            check_partition(model, B, dep, "MultiplierFree", "dependent coordinates")
        return MultiplierFree(dependent=tuple(sorted(dep, key=model.index)), multipliers=self.multipliers)

    def _split(self, model):
        dep = np.array([model.index(d) for d in self.dependent], dtype=int)
        ind = np.array([k for k in range(model.n) if k not in set(dep.tolist())], dtype=int)
        return dep, ind

    def null_basis(self, model, B):
        """`D` in the original coordinate order, shape `(n, n − m)`: `B D = 0`."""
        dep, ind = self._split(model)
        return partition_basis(B, np.concatenate([dep, ind]), dep.size)

    def accelerations(self, model, q, qd, t, p, stabilization):
        if self.dependent is None:
            raise SimulationError("MultiplierFree: call through simulate (the partition is chosen there).")
        Q = dyn.forcing(model, q, qd, t, p)
        M = dyn.mass_matrix(model, q, qd, t, p)
        if model.m == 0:
            return jnp.linalg.solve(M, Q), None
        B = kin.constraint_jacobian(model, q, t, p)
        g = stabilization.acceleration_rhs(model, q, qd, t, p, kin.acceleration_rhs(model, q, qd, t, p))
        D = self.null_basis(model, B)
        K = jnp.concatenate([D.T @ M, B], axis=0)
        return jnp.linalg.solve(K, jnp.concatenate([D.T @ Q, g])), None

    def outputs(self, model, q, qd, t, p, stabilization):
        qdd, _ = self.accelerations(model, q, qd, t, p, stabilization)
        if not self.multipliers or model.m == 0:
            return qdd, None
        B = kin.constraint_jacobian(model, q, t, p)
        r = dyn.forcing(model, q, qd, t, p) - dyn.mass_matrix(model, q, qd, t, p) @ qdd
        return qdd, jnp.linalg.lstsq(B.T, r)[0]
