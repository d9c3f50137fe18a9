"""The expansion (augmented, Lagrange multiplier) formulation (THEORY §5; Haug §6.3).

    [[M, Bᵀ], [B, 0]] [q̈; λ] = [Q; g]

With a constant diagonal mass matrix the Schur complement is used instead:

    (B M⁻¹ Bᵀ) λ = B M⁻¹ Q − g,    q̈ = M⁻¹ (Q − Bᵀ λ),

an `m × m` solve with no `n × n` work.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg  # noqa: F401  (cho_factor, cho_solve)

from .. import _dynamics as dyn
from .. import _kinematics as kin
from .._tracing import is_concrete
from .base import AbstractFormulation


class Augmented(AbstractFormulation):
    """Solve for `q̈` and the multipliers `λ` together at every right-hand-side call.

    Arguments:
        schur: `"auto"` (Schur complement when the model has a constant diagonal
            mass matrix with every entry positive), `True` (require it) or `False`
            (always the dense augmented matrix, needed with massless bodies).

    Multipliers follow THEORY §2: `M q̈ + Bᵀ λ = Q`, so the generalized constraint
    force is `−Bᵀ λ`.
    """

    schur: bool | str = "auto"

    def __check_init__(self):
        if self.schur not in ("auto", True, False):
            raise ValueError(f"Augmented: schur must be 'auto', True or False, got {self.schur!r}.")

    def equation_count(self, model):
        return model.n + model.m

    def prepare(self, model, p, q0, t0):
        if model.inertia_kind != "mass_diagonal" or model.m == 0:
            return Augmented(schur=False) if self.schur == "auto" else self
        if self.schur != "auto":
            return self
        diag = dyn.mass_diagonal(model, p)
        if is_concrete(diag):
            return Augmented(schur=bool(jnp.all(diag > 0)))
        # Traced parameters (grad, vmap, jit): decide from the model's own values, so a
        # structurally massless entry (a network's source edge) keeps the dense solve.
        with jax.ensure_compile_time_eval():
            positive = jnp.all(dyn.mass_diagonal(model, model.params) > 0)
        return Augmented(schur=bool(positive) if is_concrete(positive) else True)

    def check_params(self, model, p, x):
        if self.schur is not True:
            return x
        diag = dyn.mass_diagonal(model, p)
        return eqx.error_if(
            x, jnp.any(diag <= 0),
            "Augmented(schur=True): a mass-matrix entry is zero or negative (a massless "
            "body); use mbdjax.Augmented(schur=False).",
        )

    def accelerations(self, model, q, qd, t, p, stabilization):
        Q = dyn.forcing(model, q, qd, t, p)
        if model.m == 0:
            if model.inertia_kind == "mass_diagonal":
                return Q / dyn.mass_diagonal(model, p), None
            return jnp.linalg.solve(dyn.mass_matrix(model, q, qd, t, p), Q), None
        g = kin.acceleration_rhs(model, q, qd, t, p)
        g = stabilization.acceleration_rhs(model, q, qd, t, p, g)
        if self.schur is True:
            Minv = 1.0 / dyn.mass_diagonal(model, p)
            pattern = model.jacobian_pattern
            if pattern is not None and model.m_n == 0:
                # Sparse path: every product from the Jacobian's nonzeros; S is SPD.
                vals = kin.holonomic_jacobian_values(model, q, t, p)
                S = pattern.schur(vals, Minv)
                rhs = pattern.matvec(vals, Minv * Q) - g
                lam = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(S), rhs)
                return Minv * (Q - pattern.rmatvec(vals, lam)), lam
            B = kin.constraint_jacobian(model, q, t, p)
            BMinv = B * Minv[None, :]
            lam = jnp.linalg.solve(BMinv @ B.T, BMinv @ Q - g)
            return Minv * (Q - B.T @ lam), lam
        B = kin.constraint_jacobian(model, q, t, p)
        M = dyn.mass_matrix(model, q, qd, t, p)
        n, m = model.n, model.m
        K = jnp.block([[M, B.T], [B, jnp.zeros((m, m), dtype=float)]])
        sol = jnp.linalg.solve(K, jnp.concatenate([Q, g]))
        return sol[:n], sol[n:]
