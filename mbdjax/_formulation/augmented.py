"""The expansion (augmented, Lagrange multiplier) formulation (THEORY §5; Haug §6.3).

    [[M, Bᵀ], [B, 0]] [q̈; λ] = [Q; g]

With a constant diagonal mass matrix the Schur complement is used instead:

    (B M⁻¹ Bᵀ) λ = B M⁻¹ Q − g,    q̈ = M⁻¹ (Q − Bᵀ λ),

an `m × m` solve with no `n × n` work. With a sparse Jacobian (the planar and spatial
front ends) `S` is formed from the nonzeros of `B` only (`mbdjax._numerics.sparse`); when its
rows group into blocks that couple only with their neighbours (a serial chain: each
joint shares a body with the joints before and after it) and the rows are independent,
`S` is assembled as blocks and solved as a block-tridiagonal system
(`mbdjax._numerics.blocktridiag`), so the right-hand side costs O(m) instead of the O(m³) of a
dense Cholesky.

With independent rows the Schur solve has its own derivative rule
(`_schur_accelerations`): the equations are differentiated and the tangent system is
solved with the primal's factorization, so forward and reverse mode through a run never
differentiate `B`, `S` or the factorization (10-link chain, 2 s: `jax.grad` 70 → 59 ms,
`jax.jacfwd` over the 10 masses 110 → 100 ms, both with a forward run of 14 ms).
"""

from __future__ import annotations

import dataclasses
import functools

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import _dynamics as dyn
from .. import _first_order as fo_
from .. import _kinematics as kin
from .._first_order import FirstOrder
from .._numerics.gram import ConstraintGram
from .._tracing import jvp_of_perturbed
from .._numerics.linalg import spd_solve
from .._runtime_checks import check
from .._tracing import is_concrete
from .base import AbstractFormulation


class Augmented(AbstractFormulation):
    """Solve for `q̈` and the multipliers `λ` together at every right-hand-side call.

    Arguments:
        schur: `"auto"` (Schur complement when the model has a constant diagonal
            mass matrix with every entry positive), `True` (require it) or `False`
            (always the dense augmented matrix, needed with massless bodies).
        redundant: whether the constraint rows handed to it may be dependent. `None`
            (the default) is set by `simulate`, which removes redundant rows at the
            initial state (`mbdjax._redundancy`) and then solves by Cholesky (or
            the block-tridiagonal solve for a block-tridiagonal `S`, see above). Where the
            rank could not be read (the initial state staged by an enclosing jit), or
            with `True`, a singular `S` falls back to least squares (minimum-norm
            multipliers) behind a branch.
        derivative_rule: differentiate the Schur solve of independent rows by its
            own rule (`_schur_accelerations`, default True). `simulate` turns it off
            for `diffrax.BacksolveAdjoint`, which differentiates the vector field with
            respect to what it closes over.

    Massless coordinates whose rates the constraints leave free (resistive loops of a
    network: resistors, capacitors, diodes, sources without an inductor) are found by
    `prepare` and get first-order dynamics (`mbdjax._first_order`): their rates solve
    the loop equations `Wᵀ Q = 0`, differentiated along the motion, and the rates given
    for them in `qd0` only start the Newton solve that makes the initial state
    consistent.

    Multipliers follow THEORY §2: `M q̈ + Bᵀ λ = Q`, so the generalized constraint
    force is `−Bᵀ λ`.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> traj = mbd.simulate(pend, jnp.array([0.6, -0.8]), jnp.zeros(2), t1=0.5, saveat=2,
        ...                     formulation=mbd.Augmented())
        >>> round(float(traj.q[-1, 0]), 6), float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-10
        (0.029328, True)
    """

    schur: bool | str = "auto"
    first_order: FirstOrder | None = eqx.field(static=True, default=None)
    redundant: bool | None = eqx.field(static=True, default=None)
    derivative_rule: bool = eqx.field(static=True, default=True)

    def __check_init__(self):
        if self.schur not in ("auto", True, False):
            raise ValueError(f"Augmented: schur must be 'auto', True or False, got {self.schur!r}.")

    def equation_count(self, model):
        return model.n + model.m

    def for_adjoint(self, adjoint):
        # The continuous adjoint differentiates the vector field with respect to what it
        # closes over, which the Schur solve's derivative rule does not cover.
        if isinstance(adjoint, diffrax.BacksolveAdjoint):
            return dataclasses.replace(self, derivative_rule=False)
        return self

    def with_rows(self, independent):
        if self.redundant is not None or independent is None:
            return self
        return dataclasses.replace(self, redundant=not independent)

    def prepare(self, model, p, q0, t0):
        if self.first_order is None:
            fo = fo_.first_order_structure(model, p, q0, t0)
            if fo is not None:
                return Augmented(schur=False, first_order=fo, redundant=self.redundant)
        if model.inertia_kind != "mass_diagonal" or model.m == 0:
            return Augmented(schur=False, redundant=self.redundant) if self.schur == "auto" else self
        if self.schur != "auto":
            return self
        diag = dyn.mass_diagonal(model, p)
        if is_concrete(diag):
            return Augmented(schur=bool(np.all(np.asarray(diag) > 0)), redundant=self.redundant)
        # Traced parameters (grad, vmap, jit): decide from the model's own values, so a
        # structurally massless entry (a network's source edge) keeps the dense solve.
        with jax.ensure_compile_time_eval():
            positive = jnp.all(dyn.mass_diagonal(model, model.params) > 0)
        return Augmented(schur=bool(positive) if is_concrete(positive) else True, redundant=self.redundant)

    def check_params(self, model, p, x, checks=None):
        if self.schur is not True:
            return x
        diag = dyn.mass_diagonal(model, p)
        return check(
            x, jnp.any(diag <= 0),
            "Augmented(schur=True): a mass-matrix entry is zero or negative (a massless "
            "body); use mbdjax.Augmented(schur=False).", checks,
        )

    def initial_state(self, model, q0, qd0, t0, p, checks=None):
        if self.first_order is None:
            return super().initial_state(model, q0, qd0, t0, p, checks)
        qd0 = fo_.solve_rates(model, self.first_order, q0, qd0, t0, p)
        qd0 = check(
            qd0, ~jnp.all(jnp.isfinite(qd0)),
            "mbdjax.simulate: the rates of the massless (resistive-loop) coordinates could not "
            "be solved at t0 (Newton did not converge); check the element laws and parameters "
            "at the initial state, or give qd0 closer values for them.", checks,
        )
        return jnp.concatenate([q0, qd0])

    def projects(self, stabilization):
        # The massless rates are re-solved after every step (their stored values are the
        # next Newton start), with or without a projecting stabilization.
        return stabilization.projects or self.first_order is not None

    def project(self, model, t, y, p, stabilization):
        if self.first_order is None:
            return super().project(model, t, y, p, stabilization)
        n = model.n
        q, qd = stabilization.project(model, y[:n], y[n:], t, p) if stabilization.projects else (y[:n], y[n:])
        return jnp.concatenate([q, fo_.solve_rates(model, self.first_order, q, qd, t, p)])

    def vector_field(self, model, t, y, p, stabilization):
        if self.first_order is None:
            return super().vector_field(model, t, y, p, stabilization)
        # The massless entries of q̇ in the state are not integrated (derivative zero):
        # they are solved at every right-hand side, from the loop equations.
        n = model.n
        qd = fo_.solve_rates(model, self.first_order, y[:n], y[n:], t, p)
        qdd, _ = fo_.accelerations(model, self.first_order, y[:n], qd, t, p, stabilization)
        return jnp.concatenate([qd, qdd.at[jnp.asarray(self.first_order.massless)].set(0.0)])

    def outputs_from_state(self, model, y, t, p, stabilization, aux=None):
        if self.first_order is None:
            return super().outputs_from_state(model, y, t, p, stabilization, aux)
        n = model.n
        qd = fo_.solve_rates(model, self.first_order, y[:n], y[n:], t, p)
        qdd, lam = fo_.accelerations(model, self.first_order, y[:n], qd, t, p, stabilization)
        return y[:n], qd, qdd, lam, None

    def accelerations(self, model, q, qd, t, p, stabilization):
        if self.first_order is not None:
            return fo_.accelerations(model, self.first_order, q, qd, t, p, stabilization)
        Q = dyn.forcing(model, q, qd, t, p)
        if model.m == 0:
            if model.inertia_kind == "mass_diagonal":
                return Q / dyn.mass_diagonal(model, p), None
            return jnp.linalg.solve(dyn.mass_matrix(model, q, qd, t, p), Q), None
        if self.schur is True and self.redundant is False and self.derivative_rule:
            # Arrays of the model and the stabilization are differentiable arguments (a
            # continuous adjoint differentiates the vector field's closure).
            (m_dyn, s_dyn), (m_static, s_static) = eqx.partition((model, stabilization), eqx.is_array)
            return _schur_accelerations((m_static, s_static), q, qd, t, p, (m_dyn, s_dyn))
        g = kin.acceleration_rhs(model, q, qd, t, p)
        g = stabilization.acceleration_rhs(model, q, qd, t, p, g)
        if self.schur is True:
            return _schur_solution(model, q, t, p, Q, g, self.redundant is not False)
        B = kin.constraint_jacobian(model, q, t, p)
        M = dyn.mass_matrix(model, q, qd, t, p)
        n, m = model.n, model.m
        K = jnp.block([[M, B.T], [B, jnp.zeros((m, m), dtype=float)]])
        sol = jnp.linalg.solve(K, jnp.concatenate([Q, g]))
        return sol[:n], sol[n:]


def _schur_solution(model, q, t, p, Q, g, fallback):
    """`(q̈, λ)` by the Schur complement: `(B M⁻¹ Bᵀ) λ = B M⁻¹ Q − g`,
    `q̈ = M⁻¹(Q − Bᵀ λ)`. `fallback`: the rows may be dependent (least squares where `S`
    is singular); otherwise Cholesky, or the block-tridiagonal solve for a serial chain."""
    Minv = 1.0 / dyn.mass_diagonal(model, p)
    pattern = model.jacobian_pattern
    if pattern is not None and model.m_n == 0:
        # Sparse path: every product from the Jacobian's nonzeros; S is SPD.
        vals = kin.holonomic_jacobian_values(model, q, t, p)
        rhs = pattern.matvec(vals, Minv * Q) - g
        if pattern.schur_block_size is not None and not fallback:
            # A serial chain: S is block tridiagonal, solved in O(m) work (the
            # reduction and the solve in one).
            lam = pattern.block_schur_solve(vals, Minv, rhs)
        else:
            lam = spd_solve(pattern.schur(vals, Minv), rhs, fallback)
        return Minv * (Q - pattern.rmatvec(vals, lam)), lam
    B = kin.constraint_jacobian(model, q, t, p)
    BMinv = B * Minv[None, :]
    lam = spd_solve(BMinv @ B.T, BMinv @ Q - g, fallback)
    return Minv * (Q - B.T @ lam), lam


def _forcing_and_g(model, stabilization, q, qd, t, p):
    """`(Q, g)`: the applied forces and the (stabilized) acceleration right side."""
    Q = dyn.forcing(model, q, qd, t, p)
    g = stabilization.acceleration_rhs(model, q, qd, t, p, kin.acceleration_rhs(model, q, qd, t, p))
    return Q, g


def _kkt_residual(model, stabilization, q, qd, t, p, qdd, lam):
    """`(Q − M q̈ − Bᵀ λ, g − B q̈)` for given `q̈`, `λ`; zero at the solution."""
    Q, g = _forcing_and_g(model, stabilization, q, qd, t, p)
    Bqdd, BTlam = kin.constraint_products(model, q, t, p, qdd, lam)
    return Q - dyn.mass_diagonal(model, p) * qdd - BTlam, g - Bqdd


def _solve_kkt(schur, Minv, r1, r2):
    """`(x, y)` with `M x + Bᵀ y = r1`, `B x = r2`: `y = S⁻¹(B M⁻¹ r1 − r2)`,
    `x = M⁻¹(r1 − Bᵀ y)`."""
    y = schur.solve(schur.matvec(Minv * r1) - r2)
    return Minv * (r1 - schur.transpose_matvec(y)), y


def _accelerations(model, stabilization, q, qd, t, p):
    """`(S, M⁻¹, (q̈, λ))` for the derivative rule: the Schur complement `S` factored
    for tangent solves (`ConstraintGram(tangents=True)`) and the solution with it."""
    Q, g = _forcing_and_g(model, stabilization, q, qd, t, p)
    Minv = 1.0 / dyn.mass_diagonal(model, p)
    schur = ConstraintGram(model, q, t, p, holonomic_only=False, w=Minv,
                           use_pattern=model.jacobian_pattern is not None and model.m_n == 0, tangents=True)
    return schur, Minv, _solve_kkt(schur, Minv, Q, g)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _schur_accelerations(static, q, qd, t, p, dynamic):
    """`(q̈, λ)` of `M q̈ + Bᵀ λ = Q`, `B q̈ = g` for a constant diagonal `M` and
    independent rows, by the Schur complement (see the module docstring); the model
    and the stabilization are `eqx.combine(dynamic, static)`.

    Derivatives (`_schur_accelerations_jvp`): those of the linear system, solved with
    the same factorization. Differentiating the equations,

        M dq̈ + Bᵀ dλ = dQ − dM q̈ − dBᵀ λ,    B dq̈ = dg − dB q̈,

    whose right sides are one forward derivative of the residual `_kkt_residual` at
    the solution (with `q̈`, `λ` held), so neither `dB`, `dS` nor the factorization are
    formed: per tangent, the residual's derivative and one more solve with the
    factor (Haug §6.3 for the equations)."""
    model, stabilization = eqx.combine(dynamic, static)
    return _schur_solution(model, q, t, p, *_forcing_and_g(model, stabilization, q, qd, t, p), False)


def _schur_accelerations_jvp(static, primals, tangents):
    q, qd, t, p, dynamic = primals
    model, stabilization = eqx.combine(dynamic, static)
    schur, Minv, (qdd, lam) = _accelerations(model, stabilization, q, qd, t, p)
    _, (r1, r2) = jvp_of_perturbed(
        lambda q, qd, t, p, dynamic: _kkt_residual(*eqx.combine(dynamic, static), q, qd, t, p, qdd, lam),
        primals, tangents)
    return (qdd, lam), _solve_kkt(schur, Minv, r1, r2)


# Symbolic zeros: inputs without a tangent (under `jax.jacfwd` with respect to a few
# parameters: the other parameters, the time, the model's arrays) are held fixed in
# the residual's derivative instead of being differentiated along explicit zeros
# (10-link chain, 2 s: sensitivities to the 10 link masses at 41 times 89 → 79 ms,
# `jax.jacfwd` with respect to `q0` 237 → 196 ms, with the projection's rules alike).
_schur_accelerations.defjvp(_schur_accelerations_jvp, symbolic_zeros=True)
