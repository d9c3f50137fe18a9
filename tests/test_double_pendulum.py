"""One double pendulum, four descriptions, one motion.

Reference: the hand-derived two-angle Lagrangian of two uniform rods (m, l, J = ml²/12),
absolute angles θ from the downward vertical:

    M = [[4/3 m l², ½ m l² cos(θ1−θ2)], [½ m l² cos(θ1−θ2), 1/3 m l²]]
    c = ½ m l² sin(θ1−θ2) [θ̇2², −θ̇1²],   V = −m g l (3/2 cos θ1 + 1/2 cos θ2)
    M θ̈ + c = −∂V/∂θ

integrated independently with scipy's DOP853 at rtol = atol = 1e-12. Tolerance of the
comparison: 1e-8 rad in the angles over 5 s (the issue's acceptance value).
"""

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mbdjax as mbd
from mbdjax.planar import Mechanism

from _references import double_pendulum_rhs

M_, L_, G_ = 1.0, 1.0, 9.81
TH0 = np.array([0.6, -0.4])
T1 = 5.0
TS = np.linspace(0.0, T1, 26)
TOL = dict(rtol=1e-11, atol=1e-12)


def _hand_rhs(t, y):
    return double_pendulum_rhs(t, y, M_, L_, G_)


@pytest.fixture(scope="module")
def reference():
    sol = solve_ivp(_hand_rhs, (0, T1), np.concatenate([TH0, [0, 0]]), method="DOP853",
                    rtol=1e-12, atol=1e-12, t_eval=TS)
    return sol.y[:2].T


def _theta_T(th, thd):
    c = jnp.cos(th[0] - th[1])
    return 0.5 * M_ * L_**2 * (4 / 3 * thd[0] ** 2 + c * thd[0] * thd[1] + 1 / 3 * thd[1] ** 2)


def _theta_V(th):
    return -M_ * G_ * L_ * (1.5 * jnp.cos(th[0]) + 0.5 * jnp.cos(th[1]))


S = jnp.array([[1.0, 0.0], [1.0, 1.0]])  # θ = S a, a = (θ1, θ2 − θ1)


def test_planar_absolute_coordinates(reference):
    mech = Mechanism(gravity=(0.0, -G_))
    mech.body("rod1", mass=M_, inertia=M_ * L_**2 / 12)
    mech.body("rod2", mass=M_, inertia=M_ * L_**2 / 12)
    mech.revolute("pin1", "ground", (0.0, 0.0), "rod1", (-L_ / 2, 0.0))
    mech.revolute("pin2", "rod1", (L_ / 2, 0.0), "rod2", (-L_ / 2, 0.0))
    model = mech.build()
    phi = TH0 - np.pi / 2  # rod axis angle from global x
    r1 = 0.5 * L_ * np.array([np.cos(phi[0]), np.sin(phi[0])])
    r2 = 2 * r1 + 0.5 * L_ * np.array([np.cos(phi[1]), np.sin(phi[1])])
    guess = jnp.array([r1[0], r1[1], phi[0], r2[0], r2[1], phi[1]])
    q0, qd0 = mbd.initial_conditions(model, guess, fix_q={"rod1.phi": phi[0], "rod2.phi": phi[1]},
                                     fix_qd={"rod1.phi": 0.0, "rod2.phi": 0.0})
    np.testing.assert_allclose(q0, guess, atol=1e-12)
    tr = mbd.simulate(model, q0, qd0, t1=T1, saveat=jnp.asarray(TS), **TOL)
    th = np.stack([tr.coordinate("rod1.phi"), tr.coordinate("rod2.phi")], axis=1) + np.pi / 2
    np.testing.assert_allclose(th, reference, atol=1e-8)


def test_relative_angles_kinetic_energy(reference):
    model = mbd.Model(("a1", "a2"), kinetic_energy=lambda a, ad, t, p: _theta_T(S @ a, S @ ad),
                      potential=lambda a, t, p: _theta_V(S @ a))
    a0 = jnp.array([TH0[0], TH0[1] - TH0[0]])
    tr = mbd.simulate(model, a0, jnp.zeros(2), t1=T1, saveat=jnp.asarray(TS), **TOL)
    np.testing.assert_allclose(np.asarray(tr.q) @ np.asarray(S).T, reference, atol=1e-8)


def test_relative_angles_mass_matrix(reference):
    def mass(a, t, p):
        th = S @ a
        c = jnp.cos(th[0] - th[1])
        Mt = M_ * L_**2 * jnp.array([[4 / 3, 0.5 * c], [0.5 * c, 1 / 3]])
        return S.T @ Mt @ S

    def forces(a, ad, t, p):  # every velocity-dependent term lives here (DAE form)
        th, thd = S @ a, S @ ad
        s = jnp.sin(th[0] - th[1])
        return -S.T @ (0.5 * M_ * L_**2 * s * jnp.stack([thd[1] ** 2, -(thd[0] ** 2)]))

    model = mbd.Model(("a1", "a2"), mass_matrix=mass, forces=forces,
                      potential=lambda a, t, p: _theta_V(S @ a))
    a0 = jnp.array([TH0[0], TH0[1] - TH0[0]])
    tr = mbd.simulate(model, a0, jnp.zeros(2), t1=T1, saveat=jnp.asarray(TS), **TOL)
    np.testing.assert_allclose(np.asarray(tr.q) @ np.asarray(S).T, reference, atol=1e-8)
