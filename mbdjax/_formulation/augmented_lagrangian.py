"""The augmented Lagrangian formulation with iterated multipliers and mass-orthogonal
projections (THEORY §8; García de Jalón & Bayo; Bayo & Ledesma; Cuadrado et al.).

Every solve of this formulation uses the penalty-augmented leading matrix

    M̂ = M + Bᵀ α B,     α = diag(α_j),   α_j = penalty · max_k |M_kk| / ‖B_j‖²,

which is positive definite whenever `M` is positive on `null(B)`, for every rank of
`B`: redundant rows (rank-deficient everywhere) and singular configurations (rank
lost for an instant) need no special case, and nothing built from `B` alone is ever
inverted. The penalty of each row is scaled by its length so that `Bᵀ α B` is
`penalty` times the largest mass in every row direction.

Accelerations (the ODE form of García de Jalón & Bayo): with the stabilized
acceleration residual

    r(q̈) = B q̈ − ĝ,   ĝ = g − 2ξω (B q̇ − b) − ω² [Φ; 0]

(nonholonomic rows have no `Φ` term), solve `M q̈ + Bᵀ λ = Q`, `r(q̈) = 0` by the
multiplier iteration from `λ₀ = 0`

    M̂ q̈ᵢ₊₁ = Q − Bᵀ λᵢ + Bᵀ α ĝ,      λᵢ₊₁ = λᵢ + α r(q̈ᵢ₊₁),

a fixed number of times (`iterations`, one Cholesky factorization of `M̂` per
right-hand side, one triangular solve per iteration). Where the rows are independent
and well conditioned, each iteration shrinks the constraint error by about
`1/penalty`; in a direction where `B` loses rank the constraint is enforced only as
far as the penalty reaches, smoothly, which is what carries the solution through a
singular configuration. The result is a smooth, differentiable function of the state
(a fixed number of solves), so `jax.grad` passes through.

Projections (the "P" of ALI3-P), used when the stabilization projects (the default):
the corrections smallest in the kinetic metric, defined for any rank of `B`:

- positions: Newton steps on `min ½ (q − q*)ᵀ M (q − q*)` subject to `Φ(q) = 0`,
  each solved by the same multiplier iteration with `M̂ = M + Φ_qᵀ α Φ_q`;
- velocities: `min ½ (q̇ − q̇*)ᵀ M (q̇ − q̇*)` subject to `B q̇ = b`, likewise.

Multipliers at the output times are the minimum-norm solution of `Bᵀ λ = Q − M q̈`
(least squares): with redundant rows the multipliers are not unique, and this is the
set with the smallest `‖λ‖`; with independent rows it is the unique one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import _dynamics as dyn
from .. import _first_order as fo_
from .. import _kinematics as kin
from .._errors import SimulationError
from .._tracing import is_concrete
from .base import AbstractFormulation


class Leading(NamedTuple):
    """A factorization of the penalty-augmented problem at one state, in one of two
    equivalent forms (THEORY §8):

    - primal (any `M`): `L Lᵀ = M̂ = M + Bᵀ α B`, `(n, n)`, with
      `α_j = penalty · max_k |M_kk| / ‖B_j‖²`;
    - dual (a constant diagonal `M` with every entry positive): `L Lᵀ = B M⁻¹ Bᵀ + α⁻¹`,
      `(m, m)`, with `α_j⁻¹ = (B M⁻¹ Bᵀ)_jj / penalty`, formed from the nonzeros of a
      sparse `B` when the model gives them (`mbdjax._numerics.sparse`). By Woodbury's identity
      the multiplier iteration below is the same in both forms; the dual one never
      forms the `n × n` product `Bᵀ α B`.

    Both matrices are positive definite for every rank of `B`. The penalties `α` are
    held constant for derivatives: they change how fast the iteration converges, not
    what it converges to.
    """

    factor: jax.Array
    alpha: jax.Array
    matvec: Callable  # v (n,) -> B v (m,)
    rmatvec: Callable  # y (m,) -> Bᵀ y (n,)
    minv: jax.Array | None  # (n,) in the dual form, None in the primal one
    M: jax.Array | None = None  # (n, n) in the primal form, None in the dual one


def _cholesky(A):
    return jax.lax.linalg.cholesky(A, symmetrize_input=False)


DUAL_PENALTY = 1e9
PRIMAL_PENALTY = 1e7


def leading(model, q, t, p, penalty=None, holonomic_only=False, M=None):
    """The `Leading` factorization at `(q, t)` for the rows `B = [Φ_q; A]` (or `Φ_q`
    alone with `holonomic_only`); `M` is the mass matrix when already computed;
    `penalty=None` takes `DUAL_PENALTY` or `PRIMAL_PENALTY`."""
    pattern = model.jacobian_pattern
    if model.inertia_kind == "mass_diagonal" and is_positive_diagonal(model, p):
        penalty = DUAL_PENALTY if penalty is None else penalty
        minv = 1.0 / dyn.mass_diagonal(model, p)
        if pattern is not None and model.holonomic_jacobian_fn is None and (holonomic_only or model.m_n == 0):
            vals = kin.holonomic_jacobian_values(model, q, t, p)
            matvec = lambda v: pattern.matvec(vals, v)  # noqa: E731
            rmatvec = lambda y: pattern.rmatvec(vals, y)  # noqa: E731
            S = pattern.schur(vals, minv)
        else:
            B = kin.holonomic_jacobian(model, q, t, p) if holonomic_only else kin.constraint_jacobian(model, q, t, p)
            matvec, rmatvec = (lambda v: B @ v), (lambda y: B.T @ y)
            S = (B * minv[None, :]) @ B.T
        d = jax.lax.stop_gradient(jnp.diagonal(S))
        reg = (d + 1e-12 * jnp.max(d) + 1e-300) / penalty
        return Leading(_cholesky(S + jnp.diag(reg)), 1.0 / reg, matvec, rmatvec, minv)
    penalty = PRIMAL_PENALTY if penalty is None else penalty
    if M is None:
        M = dyn.mass_matrix(model, q, None, t, p)
    B = kin.holonomic_jacobian(model, q, t, p) if holonomic_only else kin.constraint_jacobian(model, q, t, p)
    Ms, Bs = jax.lax.stop_gradient(M), jax.lax.stop_gradient(B)
    rows = jnp.sum(Bs * Bs, axis=1)
    alpha = penalty * jnp.max(jnp.abs(jnp.diagonal(Ms))) / (rows + 1e-12 * jnp.max(rows) + 1e-300)
    return Leading(_cholesky(M + B.T @ (alpha[:, None] * B)), alpha, (lambda v: B @ v), (lambda y: B.T @ y), None, M)


def is_positive_diagonal(model, p):
    """Whether the model's constant diagonal mass matrix has every entry positive
    (decided from the model's own values when `p` is traced)."""
    with jax.ensure_compile_time_eval():
        diag = dyn.mass_diagonal(model, p)
        if not is_concrete(diag):
            diag = dyn.mass_diagonal(model, model.params)
        return bool(jnp.all(diag > 0)) if is_concrete(diag) else True


def multiplier_iteration(lead, f, c, iterations):
    """`(x, λ)` with `M x + Bᵀ λ = f` and `B x ≈ c`, by `iterations` solves with a
    `Leading` factorization (THEORY §8). Primal form, from `λ₀ = 0`:

        M̂ x₁ = f + Bᵀ α c,   then   x ← x + M̂⁻¹ (f − M x − Bᵀ λ − Bᵀ α (B x − c)),

    accumulating `λ = Σ α (B xᵢ − c)` (the first three terms vanish in exact
    arithmetic and refine what round-off lost); dual form (the same iterates):

        (B M⁻¹ Bᵀ + α⁻¹) λᵢ₊₁ = α⁻¹ λᵢ + B M⁻¹ f − c,   x = M⁻¹ (f − Bᵀ λ).

    Either way `M x + Bᵀ λ = f` holds for the returned pair, and each iteration
    shrinks `B x − c` by about `1/penalty` along well-conditioned rows. Shapes:
    `f (n,)`, `c (m,)`.
    """
    solve = lambda v: jax.scipy.linalg.cho_solve((lead.factor, True), v)  # noqa: E731
    if lead.minv is not None:
        r0 = lead.matvec(lead.minv * f) - c
        lam = solve(r0)
        for _ in range(iterations - 1):
            lam = solve(lam / lead.alpha + r0)
        return lead.minv * (f - lead.rmatvec(lam)), lam
    x = solve(f + lead.rmatvec(lead.alpha * c))
    lam = lead.alpha * (lead.matvec(x) - c)
    for _ in range(iterations - 1):
        # The stationarity residual f − M x − Bᵀλ is zero in exact arithmetic; carried
        # along, it refines the digits the factorization of M̂ lost (iterative refinement).
        r = lead.alpha * (lead.matvec(x) - c)
        x = x + solve(f - lead.M @ x - lead.rmatvec(lam + r))
        lam = lam + lead.alpha * (lead.matvec(x) - c)
    return x, lam


class AugmentedLagrangian(AbstractFormulation):
    """Penalty-augmented leading matrix `M + Bᵀ α B` with iterated multipliers, and
    mass-orthogonal projections (THEORY §8; see the module docstring).

    Well posed where `B` loses rank, for good (redundant joints) or for an instant
    (singular configurations), as long as `M` is positive on `null(B)`; the other
    formulations need `B` to have full row rank at every step.

    Arguments:
        penalty: the penalty relative to the mass the row moves (see `Leading`).
            `None` (the default) means 1e9 in the dual form (constant diagonal
            `M`: the factored `B M⁻¹ Bᵀ + α⁻¹` is as well conditioned as the rows
            allow) and 1e7 in the primal form (`M̂` itself, which loses about
            log10(penalty) digits; the iterations refine the constraint part). The
            field uses 1e5 to 1e9; measured on the IFToMM A02 N four-bar (N = 10,
            rtol 1e-8), 1e7 takes 709 steps and 1e9 512 (the augmented formulation
            506), and 1e12 fails on the redundant parallelogram (the regularization
            falls below round-off).
        iterations: multiplier iterations (solves with the factorization) per
            acceleration solve and per projection step (default 3).
        omega, xi: natural frequency (1/s) and damping ratio of the constraint-error
            dynamics in the acceleration residual. `omega=None` (the default) means 0
            when the stabilization projects (the projection controls the drift, and
            the extra terms only cost steps: 616 against 1142 on the IFToMM A02
            N four-bar at N = 10) and 10 otherwise; `xi` defaults to 1.
        position_iterations: Newton steps of the position projection (default 2).

    References: J. García de Jalón, E. Bayo, *Kinematic and Dynamic Simulation of
    Multibody Systems* (1994), ch. on augmented Lagrangian formulations; E. Bayo,
    R. Ledesma, Nonlinear Dynamics 9 (1996); J. Cuadrado, J. Cardenal, P. Morer,
    E. Bayo, Multibody System Dynamics 4 (2000).

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> traj = mbd.simulate(pend, jnp.array([0.6, -0.8]), jnp.zeros(2), t1=0.5, saveat=2,
        ...                     formulation=mbd.AugmentedLagrangian())
        >>> round(float(traj.q[-1, 0]), 6), float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-10
        (0.029328, True)
    """

    watches_rank: ClassVar[bool] = False  # well posed where B loses rank

    penalty: float | None = None
    iterations: int = eqx.field(static=True, default=3)
    omega: float | None = None
    xi: float = 1.0
    position_iterations: int = eqx.field(static=True, default=2)

    def __check_init__(self):
        bad = []
        if self.penalty is not None and not (isinstance(self.penalty, (int, float)) and self.penalty > 0):
            bad.append(f"penalty must be a positive number, got {self.penalty!r}")
        if not (isinstance(self.iterations, int) and self.iterations >= 1):
            bad.append(f"iterations must be an integer >= 1, got {self.iterations!r}")
        if not (isinstance(self.position_iterations, int) and self.position_iterations >= 1):
            bad.append(f"position_iterations must be an integer >= 1, got {self.position_iterations!r}")
        for name in ("omega", "xi"):
            v = getattr(self, name)
            if name == "omega" and v is None:
                continue
            if not (isinstance(v, (int, float)) and v >= 0):
                bad.append(f"{name} must be a number >= 0, got {v!r}")
        if bad:
            raise ValueError("AugmentedLagrangian: " + "; ".join(bad) + ".")

    def equation_count(self, model):
        return model.n

    def prepare(self, model, p, q0, t0):
        if model.m and fo_.first_order_structure(model, p, q0, t0) is not None:
            raise SimulationError(
                "simulate: formulation 'augmented_lagrangian' needs M positive on the null space "
                "of the constraints; this model has massless coordinates whose rates the "
                "constraints leave free (a resistive loop), which only formulation='augmented' "
                "integrates (as first-order dynamics)."
            )
        return self

    def _solve(self, model, q, qd, t, p, stabilization):
        """`(q̈, λ, Q, M)` from the multiplier iteration (λ None without constraints)."""
        Q = dyn.forcing(model, q, qd, t, p)
        M = dyn.mass_matrix(model, q, qd, t, p)
        if model.m == 0:
            return jnp.linalg.solve(M, Q), None, Q, M
        lead = leading(model, q, t, p, self.penalty, M=M)
        g = kin.acceleration_rhs(model, q, qd, t, p)
        g = stabilization.acceleration_rhs(model, q, qd, t, p, g)
        omega = self.omega if self.omega is not None else (0.0 if stabilization.projects else 10.0)
        target = g
        if omega:
            target = target - 2.0 * self.xi * omega * (lead.matvec(qd) - kin.velocity_rhs(model, q, t, p))
            if model.m_h:
                phi = kin.holonomic(model, q, t, p)
                target = target - omega**2 * jnp.concatenate([phi, jnp.zeros(model.m_n, dtype=phi.dtype)])
        qdd, lam = multiplier_iteration(lead, Q, target, self.iterations)
        return qdd, lam, Q, M

    def accelerations(self, model, q, qd, t, p, stabilization):
        qdd, lam, _, _ = self._solve(model, q, qd, t, p, stabilization)
        return qdd, lam

    def outputs(self, model, q, qd, t, p, stabilization):
        qdd, lam, Q, M = self._solve(model, q, qd, t, p, stabilization)
        if lam is None:
            return qdd, None
        B = kin.constraint_jacobian(model, q, t, p)
        # Minimum-norm multipliers: the least-squares solution of Bᵀ λ = Q − M q̈.
        return qdd, jnp.linalg.lstsq(B.T, Q - M @ qdd)[0]

    def project(self, model, t, y, p, stabilization):
        n = model.n
        q, qd = project_mass_orthogonal(model, y[:n], y[n:], t, p, self.penalty, self.iterations,
                                        self.position_iterations)
        return jnp.concatenate([q, qd])


def project_mass_orthogonal(model, q, qd, t, p, penalty=None, iterations=3, position_iterations=2):
    """`(q, q̇)` projected onto `Φ = 0` and `B q̇ = b` by the corrections smallest in
    the kinetic metric `M` (ALI3-P's projections, THEORY §8), defined for any rank of
    `B`. Positions: `position_iterations` Newton steps, each factoring
    `M̂ = M + Φ_qᵀ α Φ_q` at the current iterate (a factorization kept from `q*`
    changes the fixed point of the dual iteration and can make the primal one
    diverge); velocities: one multiplier iteration with `M̂ = M + Bᵀ α B` at the
    projected `q`."""
    if model.m == 0:
        return q, qd
    q_star = q
    if model.m_h:
        zero = jnp.zeros_like(q)
        for _ in range(position_iterations):
            # Newton step for x = q_new − q*:  min ½ xᵀ M x  subject to
            # Φ(q) + Φ_q(q) (q* + x − q) = 0, factored at the current iterate.
            lead = leading(model, q, t, p, penalty, holonomic_only=True)
            c = lead.matvec(q - q_star) - kin.holonomic(model, q, t, p)
            x, _ = multiplier_iteration(lead, zero, c, iterations)
            q = q_star + x
    lead = leading(model, q, t, p, penalty)
    dv, _ = multiplier_iteration(lead, jnp.zeros_like(qd), kin.velocity_rhs(model, q, t, p) - lead.matvec(qd),
                                 iterations)
    return q, qd + dv
