"""Projection of the state onto the constraint manifold after each step."""

from __future__ import annotations

import dataclasses
import functools

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import _kinematics as kin
from .._numerics.gram import ConstraintGram
from .._numerics.linalg import spd_solve
from .._tracing import jvp_of_perturbed
from .base import AbstractStabilization


def _min_norm_correction(J, r, fallback=True):
    """`Jᵀ (J Jᵀ)⁻¹ r`: the smallest `dx` with `J dx = r` (least squares if J is deficient).

    `J Jᵀ` is solved by Cholesky (`mbdjax._numerics.linalg.spd_solve`); with `fallback` (rows
    not known to be independent) by SVD least squares when it is singular: only the
    branch taken runs.
    """
    return J.T @ spd_solve(J @ J.T, r, fallback)


RESIDUAL_RTOL = 1e-6
"""A block-tridiagonal Gram solve is kept when `‖J Jᵀ y − r‖∞ ≤ RESIDUAL_RTOL ‖r‖∞`."""


def _sparse_min_norm_correction(model, vals, r, fallback=True):
    """`Jᵀ (J Jᵀ)⁻¹ r` from the nonzeros `vals` of `J = Φ_q` (`model.jacobian_pattern`).

    A block-tridiagonal `J Jᵀ` (a serial chain) is solved by the block-tridiagonal solve in
    O(m). Whether the rows are independent is not known here, so the solve is checked
    by its residual: dependent rows make the reduction's pivots singular (NaN or a
    solution far off), and then the dense Cholesky / least-squares correction is used
    instead (`lax.cond`: only the branch taken runs). Any `y` with `J Jᵀ y = r` gives
    the same `Jᵀ y`, so an accepted solve is the minimum-norm correction. Without
    `fallback` (rows known to be independent: `mbdjax._redundancy`) there is no check.
    """
    pat = model.jacobian_pattern
    ones = jnp.ones(model.n, dtype=vals.dtype)
    if pat.schur_block_size is None:
        return pat.rmatvec(vals, spd_solve(pat.schur(vals, ones), r, fallback))
    y = pat.block_schur_solve(vals, ones, r)
    if not fallback:
        return pat.rmatvec(vals, y)
    dx = pat.rmatvec(vals, y)
    residual = jnp.max(jnp.abs(pat.matvec(vals, dx) - r))
    good = residual <= RESIDUAL_RTOL * jnp.max(jnp.abs(r))  # False for NaN
    return jax.lax.cond(good, lambda _: dx, lambda _: _min_norm_correction(pat.dense(vals), r), None)


BLOCK_GRAM_MIN_ROWS = 32
"""From this many holonomic rows a block-tridiagonal Gram matrix is solved by the
block-tridiagonal solve even when the model also gives its dense `Φ_q` (the planar
front end does) and the projection is not asked for block solves
(`Projection.block_solves`: a step of a solver loop, the members of a batch): the
saved points of one trajectory, the initial state. There the dense Cholesky's program
compiles faster (0.2–0.7 s less for the 5- to 20-link pendulum chains' runs with 201
saved points, at the same run time)."""


def _uses_pattern(model, holonomic_only, blocks=False):
    """Whether to solve from the sparse pattern's nonzeros: always where the model
    gives no dense `Φ_q`; for a serial chain (block-tridiagonal Gram matrix) with
    `blocks` (see `Projection.block_solves`) or from `BLOCK_GRAM_MIN_ROWS` rows."""
    pat = model.jacobian_pattern
    if pat is None or not (holonomic_only or model.m_n == 0):
        return False
    return model.holonomic_jacobian_fn is None or (
        pat.schur_block_size is not None and (model.m_h >= BLOCK_GRAM_MIN_ROWS or blocks))


def project_positions(model, q, t, p, iterations=2, fallback=True, blocks=False):
    """Gauss–Newton steps `q ← q − Φ_qᵀ(Φ_q Φ_qᵀ)⁻¹ Φ` onto `Φ(q, t) = 0`; `fallback`:
    least squares where `Φ_q Φ_qᵀ` is singular (False when the rows are known to be
    independent); `blocks`: a serial chain's Gram matrix by the block solve at any size
    (`Projection.block_solves`)."""
    if model.m_h == 0:
        return q

    def body(x, _):
        phi = kin.holonomic(model, x, t, p)
        if _uses_pattern(model, True, blocks):
            dx = _sparse_min_norm_correction(model, kin.holonomic_jacobian_values(model, x, t, p), phi, fallback)
        else:
            dx = _min_norm_correction(kin.holonomic_jacobian(model, x, t, p), phi, fallback)
        return x - dx, None

    q, _ = jax.lax.scan(body, q, None, length=iterations)
    return q


def project_velocities(model, q, qd, t, p, fallback=True, blocks=False):
    """Orthogonal projection of `q̇` onto `B q̇ = b` (`fallback` and `blocks` as for
    `project_positions`)."""
    if model.m == 0:
        return qd
    if _uses_pattern(model, False, blocks):
        vals = kin.holonomic_jacobian_values(model, q, t, p)
        r = model.jacobian_pattern.matvec(vals, qd) - kin.velocity_rhs(model, q, t, p)
        return qd - _sparse_min_norm_correction(model, vals, r, fallback)
    B = kin.constraint_jacobian(model, q, t, p)
    return qd - _min_norm_correction(B, B @ qd - kin.velocity_rhs(model, q, t, p), fallback)


def _Gram(model, q, t, p, use_pattern, velocities=False, tangents=False):
    """`Φ_q` (with `velocities`: `B = [Φ_q; A]`) at one configuration with one
    factorization of its Gram matrix `G = J Jᵀ`, for several minimum-norm corrections
    `Jᵀ G⁻¹ r` (`mbdjax._numerics.gram.ConstraintGram` with unit weights; with `use_pattern`,
    from the sparse pattern's nonzeros and its block solve, as `_uses_pattern` chose
    when the projection was traced: a static argument, so the derivative rules, traced
    later, solve as their primal did)."""
    return ConstraintGram(model, q, t, p, holonomic_only=not velocities, use_pattern=use_pattern,
                          tangents=tangents)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 4, 5))
def _project_independent(model, q, t, p, iterations, use_pattern):
    """`q` projected onto `Φ = 0` for independent constraint rows, with one
    factorization of `G = Φ_q Φ_qᵀ` at the given `q`: a Gauss–Newton step
    `q ← q − Φ_qᵀ G⁻¹ Φ(q)`, then `iterations − 1` simplified Newton steps with the
    same `Φ_q` and factor (each only `Φ` and the solves with the factor). From a step's
    drift `δ` the first leaves `O(δ²)` and each further one multiplies what is left by
    `O(δ κ)` (`κ` the condition of `G`): at round-off after the two default steps,
    as with two full Gauss–Newton steps, for one Jacobian and one factorization
    instead of two of each.

    The velocities are not projected with this factor: near a singular configuration
    (`G` ill-conditioned) a factor from before the position step gave velocity
    corrections wrong enough to change the motion through the singular passage of
    the N-four-bar; `project_velocities` factors again at the projected `q`.

    Derivatives (`_project_independent_jvp`) are those of the projection onto the
    constraint manifold, not of the Newton iterations."""
    return _newton_steps(model, _Gram(model, q, t, p, use_pattern), q, t, p, iterations)


def _newton_steps(model, gram, q, t, p, iterations):
    for _ in range(iterations):
        q = q - gram.correction(kin.holonomic(model, q, t, p))
    return q


def _project_independent_jvp(model, iterations, use_pattern, primals, tangents):
    """The derivative of the projection `q* = π(q, t, p)` onto `Φ(·, t, p) = 0`:
    `dq* = dq − Φ_qᵀ G⁻¹ dΦ`, `dΦ = Φ_q(q*) dq + Φ_t dt + Φ_p dp`, the tangent moved
    back into the tangent space of the constraints by the same factorization as the
    steps. Its transpose (reverse mode) is as cheap, and neither differentiates the
    Jacobian or the factorization. The correction uses `Φ_q` and `G` at `q`, not at
    `q*`, and so differs from the derivative of the Newton steps themselves by terms of
    the order of the drift removed (the constraints' curvature times `|q − q*|`);
    gradients through whole runs still match central differences to 1e-6
    (`tests/test_gradients_default.py`)."""
    q, t, p = primals
    dq = tangents[0]
    gram = _Gram(model, q, t, p, use_pattern, tangents=True)
    projected = _newton_steps(model, gram, q, t, p, iterations)
    _, dphi = jvp_of_perturbed(lambda q, t, p: kin.holonomic(model, q, t, p), (projected, t, p), tangents)
    if isinstance(dq, jax.custom_derivatives.SymbolicZero):
        return projected, -gram.correction(dphi)
    return projected, dq - gram.correction(dphi)


# Symbolic zeros: inputs without a tangent (the parameters under a derivative with
# respect to the initial state, the time) are held fixed, not differentiated along zeros.
_project_independent.defjvp(_project_independent_jvp, symbolic_zeros=True)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 5))
def _project_velocities_independent(model, q, qd, t, p, use_pattern):
    """`q̇` projected orthogonally onto `B(q) q̇ = b(q, t)` for independent rows: the
    same values as `project_velocities(..., fallback=False)`.

    Derivatives: `_project_velocities_independent_jvp`, the exact derivative from the
    primal factorization, instead of differentiating `B`, `G = B Bᵀ` and the solve.
    Under `jax.jacfwd` with 10 tangents on the 10-link chain the projection's
    derivative went from 50 to 32 µs per step."""
    gram = _Gram(model, q, t, p, use_pattern, velocities=True)
    return qd - gram.correction(gram.matvec(qd) - kin.velocity_rhs(model, q, t, p))


def _velocity_terms(model, q, qd, y, t, p):
    """`(B q̇ − b, Bᵀ y)` at `(q, t, p)`, shapes `(m,)` and `(n,)`."""
    Bqd, BTy = kin.constraint_products(model, q, t, p, qd, y)
    return Bqd - kin.velocity_rhs(model, q, t, p), BTy


def _project_velocities_independent_jvp(model, use_pattern, primals, tangents):
    """The derivative of `q̇* = q̇ − Bᵀ y`, `y = G⁻¹ (B q̇ − b)`, `G = B Bᵀ`, built on the
    primal factorization: with `dc` the derivative of `c = B q̇ − b` at `q̇*` along
    `(dq, dq̇, dt, dp)` and `w = dBᵀ y`,

        dq̇* = dq̇ − w − Bᵀ G⁻¹ (dc − B w),

    which is the exact derivative (from `dy = G⁻¹(dB q̇ + B dq̇ − db − dG y)`,
    `dG y = dB Bᵀ y + B dBᵀ y`) with no `dB`, `dG` or factorization formed: one
    forward derivative of `(c, Bᵀ y)` and one more solve with the factor."""
    q, qd, t, p = primals
    dqd = tangents[1]
    gram = _Gram(model, q, t, p, use_pattern, velocities=True, tangents=True)
    y = gram.solve(gram.matvec(qd) - kin.velocity_rhs(model, q, t, p))
    projected = qd - gram.transpose_matvec(y)
    _, (dc, w) = jvp_of_perturbed(lambda q, v, t, p: _velocity_terms(model, q, v, y, t, p),
                                  (q, projected, t, p), tangents)
    moved = -w if isinstance(dqd, jax.custom_derivatives.SymbolicZero) else dqd - w
    return projected, moved - gram.correction(dc - gram.matvec(w))


_project_velocities_independent.defjvp(_project_velocities_independent_jvp, symbolic_zeros=True)


class Projection(AbstractStabilization):
    """After every step, project `q` onto `Φ = 0` and then `q̇` onto `B q̇ = b`.

    Positions take `iterations` minimum-norm Newton steps, which converge from the
    step's small drift to round-off: with rows known to be independent, one
    Gauss–Newton step and simplified Newton steps that reuse its Jacobian and the
    factorization of its Gram matrix (`_project_independent`), otherwise full
    Gauss–Newton steps with a least-squares fallback. Velocities take one exact
    linear projection at the projected positions. The integrator's error estimate is
    that of the unprojected step, and the first stage of the next step is
    re-evaluated at the projected state. Saved points are projected as well, so
    residuals at output times are at round-off. With independent rows both
    projections have derivative rules built on their own factorizations
    (`_project_independent_jvp`, `_project_velocities_independent_jvp`), so forward
    and reverse mode never differentiate a Jacobian, Gram matrix or factorization.

    Arguments:
        iterations: Newton steps for the positions (default 2).
        velocities: also project the velocities (default True).
        independent: whether the constraint rows are known to be independent (set by
            `simulate`, which removes redundant rows first: `mbdjax._redundancy`);
            then every solve is a plain Cholesky, otherwise singular Gram matrices
            fall back to least squares.
        block_solves: solve a serial chain's Gram matrix by the block-tridiagonal
            solve at any size (set for the projection in a solver's step loop and for
            the members of a batch: `with_block_solves`). A LAPACK call (the dense
            Cholesky) inside the step loop keeps XLA from compiling the loop into one
            kernel (`mbdjax._numerics.xla_cpu`): the 10-link pendulum chain's default 10 s run
            took 89 ms with the block solve against 106–139 ms. Over 1024 vectorized
            members the block solve projects a 10-link chain's state in 4.7 µs a member
            against 9.1 µs with the batched dense Cholesky; 1024 sequential chains with
            51 outputs each took 1.05 s against 1.25 s.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> traj = mbd.simulate(pend, jnp.array([0.6, -0.8]), jnp.zeros(2), t1=0.5, saveat=2,
        ...                     stabilization=mbd.Projection())
        >>> round(float(traj.q[-1, 0]), 6), float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-8
        (0.029328, True)
    """

    iterations: int = 2
    velocities: bool = True
    independent: bool = eqx.field(static=True, default=False)
    block_solves: bool = eqx.field(static=True, default=False)
    projects = True

    def __check_init__(self):
        if int(self.iterations) < 1:
            raise ValueError(f"Projection: iterations must be >= 1, got {self.iterations}.")

    def project(self, model, q, qd, t, p):
        if self.independent and model.m_h:
            q = _project_independent(model, q, t, p, int(self.iterations),
                                     _uses_pattern(model, True, self.block_solves))
        else:
            q = project_positions(model, q, t, p, self.iterations, not self.independent, self.block_solves)
        if self.velocities and self.independent and model.m:
            qd = _project_velocities_independent(model, q, qd, t, p, _uses_pattern(model, False, self.block_solves))
        elif self.velocities:
            qd = project_velocities(model, q, qd, t, p, not self.independent, self.block_solves)
        return q, qd

    def with_rows(self, independent):
        return dataclasses.replace(self, independent=bool(independent))

    def with_block_solves(self):
        return dataclasses.replace(self, block_solves=True)
