"""Every formulation gives the motion of the hand-derived minimal-coordinate model.

THEORY §5: all four formulations must give the same motion. Expected values are not
the augmented run but each example written by hand in its own minimal coordinates
(`tests/_references.py`) and integrated by scipy's DOP853 at rtol = atol = 1e-12;
the reference solutions are computed once and shared.
"""

import functools
import math

import jax

import jax.numpy as jnp
import numpy as np
import pytest

import _references as ref
import mbdjax as mbd
from mbdjax import models

TIGHT = dict(rtol=1e-10, atol=1e-12)
T1, N_OUT = 3.0, 31
TS = np.linspace(0.0, T1, N_OUT)
EXAMPLES = ["slider-crank-free", "four-bar", "double-pendulum", "elliptic-pendulum"]

# name: (hand-derived rhs, initial state, minimal coordinates of the mbdjax run, offset
# added to them to give the reference's coordinates)
MINIMAL = {
    "slider-crank-free": (ref.slider_crank_free_rhs, [math.pi / 4, 0.0], ("crank.phi",), 0.0),
    "four-bar": (ref.four_bar_rhs, [math.pi / 3, 5.0], ("crank.phi",), 0.0),
    # absolute rod angles from +x; the reference measures them from the downward vertical
    "double-pendulum": (ref.double_pendulum_rhs, [math.pi / 4, math.pi / 2, 0.0, 0.0], ("link1.phi", "link2.phi"),
                        math.pi / 2),
    "elliptic-pendulum": (ref.elliptic_rhs, ref.elliptic_initial_state(), ("x", "theta"), 0.0),
}
# (coordinates, rates) tolerances over 3 s at rtol 1e-10, from the measured largest
# |Δ| against the reference (in the comments: nullspace / multiplier_free /
# quasi_velocity) with a margin of 3 to 5; the four-bar's crank error grows about
# 1e3-fold over 3 s. Coordinates never looser than the README's 5e-8 (which leaves the
# quasi-velocity four-bar, measured 4.2e-8, a margin of 1.2).
TOLERANCE = {
    # q: 5.5e-10 / 6.7e-10 / 4.2e-10 rad; q̇: 3.0e-9 / 5.1e-9 / 1.0e-8 rad/s
    "slider-crank-free": {"nullspace": (2e-9, 1e-8), "multiplier_free": (2e-9, 2e-8), "quasi_velocity": (2e-9, 3e-8)},
    # q: 2.0e-9 / 1.0e-8 / 4.2e-8 rad; q̇: 2.6e-8 / 1.4e-7 / 6.0e-7 rad/s
    "four-bar": {"nullspace": (1e-8, 1e-7), "multiplier_free": (3e-8, 5e-7), "quasi_velocity": (5e-8, 2e-6)},
    # q: 8.7e-11 / 6.5e-11 / 1.5e-10 rad; q̇: 1.3e-9 / 9.0e-10 / 1.8e-9 rad/s
    "double-pendulum": dict.fromkeys(("nullspace", "multiplier_free", "quasi_velocity"), (5e-10, 5e-9)),
    # (x, θ): 6.4e-11 / 8.9e-12 / 7.0e-11; rates: 6.4e-11 / 3.5e-11 / 7.1e-11
    "elliptic-pendulum": dict.fromkeys(("nullspace", "multiplier_free", "quasi_velocity"), (3e-10, 3e-10)),
}
# E = T + V of the four-bar against the hand model's at the reference state: measured
# 1.9e-10 / 2.3e-10 / 1.0e-9 J (kinetic energy up to 1.5 J; the reference's own E
# is constant to 2e-11 J).
FOUR_BAR_ENERGY_TOL = 5e-9


@functools.lru_cache(maxsize=None)
def _reference(name):
    rhs, y0, _, _ = MINIMAL[name]
    return ref.solve(rhs, y0, TS)


def _minimal(name, tr):
    _, _, names, offset = MINIMAL[name]
    q = np.stack([np.asarray(tr.coordinate(c)) for c in names]) + offset
    qd = np.stack([np.asarray(tr.velocity(c)) for c in names])
    return q, qd


@pytest.mark.parametrize("name", EXAMPLES)
@pytest.mark.parametrize("formulation", ["nullspace", "multiplier_free", "quasi_velocity"])
def test_agrees_with_the_minimal_coordinate_model(name, formulation):
    """Reference: the hand-derived minimal-coordinate model of the example
    (`tests/_references.py`: crank angle of the slider-crank and of the four-bar, the
    two rod angles of the double pendulum, (x, θ) of the elliptic pendulum), scipy
    DOP853 at 1e-12. Tolerances per example and formulation in `TOLERANCE` (coordinates
    and rates over 3 s at rtol 1e-10; measured coordinate errors 4e-10 to 7e-10 rad for
    the slider-crank, 2e-9 to 4.2e-8 rad for the four-bar, 7e-11 to 1.5e-10 rad for the
    double pendulum, 9e-12 to 7e-11 for the elliptic pendulum), and for the four-bar's
    energy in `FOUR_BAR_ENERGY_TOL`. Also: no multipliers unless asked for, velocity
    rows satisfied to 1e-10, and for the null space Φ = 0 to the Newton tolerance 1e-12."""
    ex = models.get(name)
    tr = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=T1, saveat=N_OUT, formulation=formulation, **TIGHT)
    np.testing.assert_allclose(tr.t, TS, atol=1e-14)
    Y = _reference(name)
    q, qd = _minimal(name, tr)
    k = q.shape[0]
    tol_q, tol_qd = TOLERANCE[name][formulation]
    np.testing.assert_allclose(q, Y[:k], rtol=0, atol=tol_q)
    np.testing.assert_allclose(qd, Y[k:], rtol=0, atol=tol_qd)
    assert tr.lam is None
    assert float(jnp.max(jnp.abs(tr.velocity_residual()))) < 1e-10
    if formulation == "quasi_velocity":
        assert tr.u.shape == (N_OUT, ex.model.n - ex.model.m)
    if formulation == "nullspace" and ex.model.m_h:
        # Coordinate partitioning: no drift, with the default projection or without.
        assert float(jnp.max(jnp.abs(tr.position_residual()))) < 1e-12
    if name == "four-bar":
        # Conservative: E = T + V of the mbdjax run against the hand model's ½ m_eff θ̇² + V
        # at the reference state.
        E_ref = np.array([ref.four_bar_energy(th, om) for th, om in Y.T])
        np.testing.assert_allclose(np.asarray(tr.energy()), E_ref, rtol=0, atol=FOUR_BAR_ENERGY_TOL)


@pytest.mark.parametrize("formulation, param, value", [
    (mbd.NullSpace(independent=("theta",)), "m2", 2.0),
    (mbd.MultiplierFree(dependent=("y", "x")), "m2", 2.0),
    (mbd.QuasiVelocity(independent=("theta",)), "m1", 1.0),
])
def test_grad_matches_finite_differences(formulation, param, value):
    # Central differences with h = 1e-5 (truncation ~h²): relative 1e-5 (issue value).
    ex = models.get("elliptic-pendulum")

    def final_x(v):
        tr = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, params={**ex.model.params, param: v}, saveat=2,
                          formulation=formulation, **TIGHT)
        return tr.q[-1, 0]

    g = jax.grad(final_x)(value)
    h = 1e-5
    fd = (final_x(value + h) - final_x(value - h)) / (2 * h)
    assert abs(float(fd)) > 1e-4
    np.testing.assert_allclose(g, fd, rtol=1e-5)
