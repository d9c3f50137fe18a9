"""IFToMM A03, Andrews' squeezing mechanism (`mbdjax.models._andrews`), against the
published data of the Test Set for IVP Solvers (Bari), problem "andrews" (andrews.f):
the consistent initial accelerations and multipliers (subroutine INITIAL, given to
30 digits) and the reference state at t = 0.03 s (subroutine SOLN, PSIDE at
rtol = atol = 1e-14). Same problem as Hairer & Wanner II, §VII.7."""

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import mbdjax as mbd  # noqa: E402
from mbdjax.models._andrews import andrews, andrews_reference  # noqa: E402

# andrews.f, INITIAL: y(15), y(16) = β̈(0), Θ̈(0) (the other five are 0) and
# y(22), y(23) = λ1(0), λ2(0) (the other four are 0).
QDD0 = np.array([14222.4439199541138705911625887, -10666.8329399655854029433719415, 0, 0, 0, 0, 0])
LAM0 = np.array([98.5668703962410896057654982170, -6.12268834425566265503114393122, 0, 0, 0, 0])


def test_initial_accelerations_and_multipliers():
    """At the published state (at rest), [[M, Φ_qᵀ], [Φ_q, 0]] [q̈; λ] = [Q; γ] gives the
    published q̈(0) and λ(0) (andrews.f, INITIAL): relative 1e-12 of their largest
    entries (measured 1e-15), which also fixes the sign of λ (M q̈ + Φ_qᵀ λ = Q);
    the loops close to 1e-15 m and the existence check passes (rank 6, one dof)."""
    ex = andrews()
    m = ex.model
    assert float(jnp.max(jnp.abs(m.holonomic_constraints(ex.q0)))) < 1e-15
    M, Q = np.asarray(m.mass_matrix(ex.q0)), np.asarray(m.forcing(ex.q0, ex.qd0))
    B = np.asarray(m.constraint_jacobian(ex.q0))
    K = np.block([[M, B.T], [B, np.zeros((6, 6))]])
    sol = np.linalg.solve(K, np.concatenate([Q, np.zeros(6)]))  # γ = 0 at rest
    np.testing.assert_allclose(sol[:7], QDD0, rtol=0, atol=1e-12 * np.max(np.abs(QDD0)))
    np.testing.assert_allclose(sol[7:], LAM0, rtol=0, atol=1e-12 * np.max(np.abs(LAM0)))
    report = mbd.check(m, ex.q0)
    assert report.ok and report.rank == 6 and report.dof == 1


def test_augmented_matches_published_reference():
    """Augmented formulation, default settings (projection, Tsit5, rtol 1e-8,
    atol 1e-10), 0 to 0.03 s, against the published reference at t = 0.03.

    Measured: max angle error 4.7e-9 rad (the reference itself is accurate to about
    1.4e-9 rad, see `andrews_reference`), rate error 1.3e-9 of max |q̇_ref|
    (1424 rad/s), λ error 7.4e-8 of max |λ_ref|, closure 4e-17 m, |ΔE| 6e-9 of
    max T, 334 steps. Tolerances: angles 3e-8 rad, rates 1e-8 relative, λ 5e-7
    relative, closure 1e-12 m, energy 1e-7 of max T.
    """
    ex = andrews()
    _, q_ref, qd_ref, lam_ref = andrews_reference()
    traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.03, saveat=31, max_steps=200_000)
    assert bool(traj.success)
    assert float(traj.t[-1]) == 0.03
    np.testing.assert_allclose(np.asarray(traj.q[-1]), q_ref, rtol=0, atol=3e-8)
    np.testing.assert_allclose(np.asarray(traj.qd[-1]), qd_ref, rtol=0, atol=1e-8 * np.max(np.abs(qd_ref)))
    np.testing.assert_allclose(np.asarray(traj.lam[-1]), lam_ref, rtol=0, atol=5e-7 * np.max(np.abs(lam_ref)))
    assert float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-12
    energy, kinetic = np.asarray(traj.energy()), np.asarray(traj.kinetic_energy())
    assert np.max(np.abs(energy - energy[0])) < 1e-7 * np.max(kinetic)
