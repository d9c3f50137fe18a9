"""IFToMM benchmark A05, the stiff flyball governor (`mbdjax.models._governor`),
against the hand-derived symmetric model (`flyball_governor_reference`).

The reference is independent of mbdjax: Lagrange's equations in (ψ, θ, s) with a
Rayleigh function for the two dampers, written by hand and integrated by scipy's
DOP853 at rtol = atol = 1e-12 (agreeing with scipy's Radau to 1e-12 over 10 s).
"""

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mbdjax as mbd
from mbdjax import _dynamics as dyn
from mbdjax.models._governor import (flyball_governor, flyball_governor_configuration,
                                     flyball_governor_reference, governor_outputs)


def test_governor_structure_and_energies_match_the_hand_model():
    """A tree: 24 independent rows, 4 degrees of freedom, no redundant row; and the
    model's T and T + V equal the hand model's at symmetric states away from the start
    (same geometry, inertias, springs: agreement to rounding, 1e-12 relative)."""
    ex = flyball_governor()
    report = mbd.check(ex.model, ex.q0)
    assert report.rank == 24 and report.dof == 4 and not report.redundant
    ref = flyball_governor_reference()
    p = ex.model.params
    for y in ([0.7, 0.2, 0.43, 3.0, -1.2, 0.8], [-2.0, -0.4, 0.61, 5.5, 0.3, -0.2], ref.y0):
        q, qd = flyball_governor_configuration(*y)
        E_ref, T_ref = ref.energy(y)
        assert abs(float(dyn.energy(ex.model, q, qd, 0.0, p)) - E_ref) < 1e-12 * abs(E_ref)
        assert abs(float(dyn.kinetic_energy(ex.model, q, qd, 0.0, p)) - T_ref) < 1e-12 * abs(T_ref)


@pytest.mark.slow  # about 50 s, mostly compilation of the 28-coordinate spatial model
def test_governor_augmented_follows_the_hand_reference():
    """0.25 s from the benchmark's state (the stiff dampers' start-up transient and a
    quarter of the first swing: θ 30° → 22°, s 0.50 → 0.62 m; the balls then swing
    between 15° and 30° with a period near 1 s), augmented formulation, Tsit5, rtol 1e-10,
    atol 1e-12. Measured: shaft angle, both rod angles and slider height within
    2e-14 of the reference (rad, m), closure 3e-16 m; asserted: 1e-9 and 1e-12."""
    ex = flyball_governor(t1=0.25)
    ts = np.linspace(0.0, 0.25, 11)
    ref = flyball_governor_reference()
    y = solve_ivp(ref.rhs, (0.0, 0.25), ref.y0, t_eval=ts, rtol=1e-12, atol=1e-12, method="DOP853").y
    traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.25, saveat=jnp.asarray(ts), rtol=1e-10, atol=1e-12,
                        max_steps=20_000)
    psi, theta_ac, theta_bd, s = governor_outputs(traj.q)
    assert np.max(np.abs(psi - y[0])) < 1e-9
    assert np.max(np.abs(theta_ac - y[1])) < 1e-9 and np.max(np.abs(theta_bd - y[1])) < 1e-9
    assert np.max(np.abs(s - y[2])) < 1e-9
    assert abs(s[-1] - s[0]) > 1e-5  # the slider has moved: the comparison is not of a rest state
    assert float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-12
