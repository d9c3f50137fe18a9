"""Projection of the state onto the constraint manifold after each step."""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import _kinematics as kin
from .._linalg import spd_solve
from .base import AbstractStabilization


def _min_norm_correction(J, r, fallback=True):
    """`Jᵀ (J Jᵀ)⁻¹ r`: the smallest `dx` with `J dx = r` (least squares if J is deficient).

    `J Jᵀ` is solved by Cholesky (`mbdjax._linalg.spd_solve`); with `fallback` (rows
    not known to be independent) by SVD least squares when it is singular: only the
    branch taken runs.
    """
    return J.T @ spd_solve(J @ J.T, r, fallback)


RESIDUAL_RTOL = 1e-6
"""A block-tridiagonal Gram solve is kept when `‖J Jᵀ y − r‖∞ ≤ RESIDUAL_RTOL ‖r‖∞`."""


def _sparse_min_norm_correction(model, vals, r, fallback=True):
    """`Jᵀ (J Jᵀ)⁻¹ r` from the nonzeros `vals` of `J = Φ_q` (`model.jacobian_pattern`).

    A block-tridiagonal `J Jᵀ` (a serial chain) is solved by block cyclic reduction in
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


def _uses_pattern(model, holonomic_only):
    return model.jacobian_pattern is not None and model.holonomic_jacobian_fn is None and (
        holonomic_only or model.m_n == 0)


def project_positions(model, q, t, p, iterations=2, fallback=True):
    """Gauss–Newton steps `q ← q − Φ_qᵀ(Φ_q Φ_qᵀ)⁻¹ Φ` onto `Φ(q, t) = 0`; `fallback`:
    least squares where `Φ_q Φ_qᵀ` is singular (False when the rows are known to be
    independent)."""
    if model.m_h == 0:
        return q

    def body(x, _):
        phi = kin.holonomic(model, x, t, p)
        if _uses_pattern(model, True):
            dx = _sparse_min_norm_correction(model, kin.holonomic_jacobian_values(model, x, t, p), phi, fallback)
        else:
            dx = _min_norm_correction(kin.holonomic_jacobian(model, x, t, p), phi, fallback)
        return x - dx, None

    q, _ = jax.lax.scan(body, q, None, length=iterations)
    return q


def project_velocities(model, q, qd, t, p, fallback=True):
    """Orthogonal projection of `q̇` onto `B q̇ = b` (`fallback` as for `project_positions`)."""
    if model.m == 0:
        return qd
    if _uses_pattern(model, False):
        vals = kin.holonomic_jacobian_values(model, q, t, p)
        r = model.jacobian_pattern.matvec(vals, qd) - kin.velocity_rhs(model, q, t, p)
        return qd - _sparse_min_norm_correction(model, vals, r, fallback)
    B = kin.constraint_jacobian(model, q, t, p)
    return qd - _min_norm_correction(B, B @ qd - kin.velocity_rhs(model, q, t, p), fallback)


class Projection(AbstractStabilization):
    """After every step, project `q` onto `Φ = 0` and then `q̇` onto `B q̇ = b`.

    Positions take `iterations` Gauss–Newton (minimum-norm) steps, which converge
    quadratically from the step's small drift; velocities one exact linear
    projection. The integrator's error estimate is that of the unprojected step, and
    the first stage of the next step is re-evaluated at the projected state. Saved
    points are projected as well, so residuals at output times are at round-off.

    Arguments:
        iterations: Gauss–Newton steps for the positions (default 2).
        velocities: also project the velocities (default True).
        independent: whether the constraint rows are known to be independent (set by
            `simulate`, which removes redundant rows first: `mbdjax._redundancy`);
            then every solve is a plain Cholesky, otherwise singular Gram matrices
            fall back to least squares.

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
    projects = True

    def __check_init__(self):
        if int(self.iterations) < 1:
            raise ValueError(f"Projection: iterations must be >= 1, got {self.iterations}.")

    def project(self, model, q, qd, t, p):
        q = project_positions(model, q, t, p, self.iterations, not self.independent)
        if self.velocities:
            qd = project_velocities(model, q, qd, t, p, not self.independent)
        return q, qd

    def with_rows(self, independent):
        return dataclasses.replace(self, independent=bool(independent))
