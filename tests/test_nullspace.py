"""Null-space formulation with coordinate partitioning (THEORY §5; Wehage–Haug).

Expected values: hand-derived minimal-coordinate models integrated by scipy's DOP853
at rtol = atol = 1e-12 (`tests/_references.py`: the pendulum's θ̈ = −(g/L) sin θ and
its rod tension, the four-bar in its crank angle, the elliptic pendulum in (x, θ));
holonomic residuals at the Newton tolerance (issue acceptance 1e-12 with no
stabilization); partition changes where the dependent block of B must become singular.
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
ROCKER_FIRST = mbd.NullSpace(independent=("rocker.phi",))
FOUR_BAR_TS = np.linspace(0.0, 3.0, 61)


@functools.lru_cache(maxsize=None)
def _four_bar(formulation, rtol):
    ex = models.get("four-bar")
    return ex, mbd.simulate(ex.model, ex.q0, ex.qd0, t1=3.0, saveat=61, formulation=formulation,
                            stabilization="none", rtol=rtol, atol=rtol * 1e-2, max_steps=200_000)


@functools.lru_cache(maxsize=None)
def _four_bar_reference():
    """(θ, θ̇) of the crank and the rocker angle ψ(θ) at `FOUR_BAR_TS`, from the hand model."""
    Y = ref.solve(ref.four_bar_rhs, [math.pi / 3, 5.0], FOUR_BAR_TS)
    return Y, np.array([ref.four_bar_angles(th)[1] for th in Y[0]])


def test_four_bar_repartitions_when_the_rocker_reaches_a_limit():
    """The crank turns fully, so the rocker angle reverses twice per revolution; there
    d(rocker.phi)/d(crank.phi) = 0 and the rocker angle cannot carry the motion: B_u
    (all coordinates but rocker.phi) becomes singular, so the partition must change
    before it. Reference for the first reversal: t* = 0.3657 s, the first root of
    sin(θ − β) (crank and coupler aligned) along the hand-derived crank-angle model
    (`_references.four_bar_rocker_limits`, a scipy DOP853 event at 1e-12). Measured
    switch 1.8 ms before t*; asserted within 10 ms before it."""
    ex, tr = _four_bar(ROCKER_FIRST, 1e-10)
    history = tr.partition_history()
    assert history[0] == (0.0, ("rocker.phi",))
    assert len(history) >= 2 and history[1][1] != ("rocker.phi",)
    t_limit = ref.four_bar_rocker_limits(1.0)[0]
    assert 0.0 < t_limit - history[1][0] < 0.01
    # No stabilization, yet every output lies on Φ = 0 (Newton tolerance) across the switch.
    assert float(jnp.max(jnp.abs(tr.position_residual()))) < 1e-12
    assert float(jnp.max(jnp.abs(tr.velocity_residual()))) < 1e-12


def test_four_bar_motion_across_repartition_matches_the_crank_angle_model():
    """Reference: the hand-derived one-angle (crank) model of the four-bar, scipy DOP853
    at 1e-12 (`_references.four_bar_rhs`), its rocker angle from the loop closure. At
    rtol 1e-12: over 3 s of this gravity-driven four-bar errors grow by about 1e3, and
    the rocker-first partition amplifies them near the rocker limits (a rocker error
    maps to a large crank error). Measured 2.4e-9 rad in the crank angle, 4e-10 rad in
    the rocker angle, 3.3e-8 rad/s in the crank rate; asserted 1e-8, 2e-9, 1e-7. The
    energy T + V (gravity only: conserved) against the hand model's ½ m_eff θ̇² + V at
    the reference state: measured 1.3e-11 J, asserted 1e-10 J."""
    _, b = _four_bar(ROCKER_FIRST, 1e-12)
    Y, psi = _four_bar_reference()
    np.testing.assert_allclose(b.coordinate("crank.phi"), Y[0], rtol=0, atol=1e-8)
    np.testing.assert_allclose(b.velocity("crank.phi"), Y[1], rtol=0, atol=1e-7)
    dpsi = np.angle(np.exp(1j * (np.asarray(b.coordinate("rocker.phi")) - psi)))
    assert np.max(np.abs(dpsi)) < 2e-9
    E_ref = np.array([ref.four_bar_energy(th, om) for th, om in Y.T])
    np.testing.assert_allclose(b.energy(), E_ref, rtol=0, atol=1e-10)


@pytest.fixture(scope="module")
def pendulum(unit_pendulum):
    return unit_pendulum


def test_pendulum_repartitions_through_the_bottom(pendulum):
    """Released from (1, 0) with y independent: x is dependent, B_u = [x] → 0 at the
    bottom (x = 0), so the partition must switch to x independent before it.
    Reference: θ̈ = −g sin θ (θ from the downward vertical, θ(0) = π/2, at rest), scipy
    DOP853 at 1e-12; (x, y) = (sin θ, −cos θ). Measured 4e-10 m in q, asserted 2e-9.
    The recovered multiplier is the rod tension (Φ = ½(|q|² − 1), m = L = 1: λ = T =
    θ̇² + g cos θ, radial balance) across the switch: measured 5.4e-9 N of up to 29 N,
    asserted 2e-8 N."""
    tr = mbd.simulate(pendulum, jnp.array([1.0, 0.0]), jnp.zeros(2), t1=1.5, saveat=31,
                      formulation=mbd.NullSpace(independent=("y",), multipliers=True), stabilization="none",
                      **TIGHT)
    names = [ind for _, ind in tr.partition_history()]
    assert names[:2] == [("y",), ("x",)]
    assert float(jnp.max(jnp.abs(tr.position_residual()))) < 1e-12
    th, om = ref.solve(ref.pendulum_rhs, [math.pi / 2, 0.0], np.linspace(0.0, 1.5, 31))
    np.testing.assert_allclose(tr.q, np.stack([np.sin(th), -np.cos(th)], axis=1), rtol=0, atol=2e-9)
    np.testing.assert_allclose(tr.multiplier("rod"), ref.pendulum_tension(th, om), rtol=0, atol=2e-8)


def test_multipliers_on_request_match_the_two_coordinate_model():
    """Reference: the elliptic pendulum in (x, θ) (y eliminated by the holonomic row, the
    nonholonomic row kept with its multiplier; `_references.elliptic_multipliers`),
    scipy DOP853 at 1e-12: λ_n is that multiplier, λ_h = −m₂(ÿ + g) + cos θ λ_n from the
    y row. Over 1 s at rtol 1e-10: measured 2.6e-10 N against multipliers of up to 23 N,
    asserted 1e-9 N; (x, θ) measured 1.4e-11, asserted 1e-10."""
    ex = models.get("elliptic-pendulum")
    b = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, saveat=11, formulation=mbd.NullSpace(multipliers=True),
                     **TIGHT)
    ts = np.linspace(0.0, 1.0, 11)
    Y = ref.solve(ref.elliptic_rhs, ref.elliptic_initial_state(), ts)
    np.testing.assert_allclose(b.q[:, ::2], Y[:2].T, rtol=0, atol=1e-10)
    np.testing.assert_allclose(b.lam, ref.elliptic_multipliers(ts, Y), rtol=0, atol=1e-9)
    assert mbd.NullSpace().equation_count(ex.model) == 1  # one independent velocity


def test_batched_initial_states_each_partition_on_their_own(pendulum):
    # vmap over the initial angle: each member chooses its partition by pivoting.
    angles = jnp.array([0.0, 0.3])
    q0s = jnp.stack([jnp.cos(angles), jnp.sin(angles)], axis=1)
    run = jax.vmap(lambda q0: mbd.simulate(pendulum, q0, jnp.zeros(2), t1=1.0, saveat=5,
                                           formulation="nullspace", **TIGHT))
    tr = run(q0s)
    assert tr.q.shape == (2, 5, 2)
    assert float(jnp.max(jnp.abs(tr.position_residual()))) < 1e-12
    one = mbd.simulate(pendulum, q0s[1], jnp.zeros(2), t1=1.0, saveat=5, formulation="nullspace", **TIGHT)
    np.testing.assert_allclose(tr.q[1], one.q, atol=1e-12)
    # Each member against θ̈ = −g sin θ (θ = angle + π/2 from the downward vertical),
    # scipy DOP853 at 1e-12: measured 2.6e-10 m, asserted 1e-9 m.
    for k, a in enumerate(np.asarray(angles)):
        th, _ = ref.solve(ref.pendulum_rhs, [a + math.pi / 2, 0.0], np.linspace(0.0, 1.0, 5))
        np.testing.assert_allclose(tr.q[k], np.stack([np.sin(th), -np.cos(th)], axis=1), rtol=0, atol=1e-9)


def test_unconstrained_model_integrates_plainly():
    """Reference: x = cos 2t (ẍ = −4x, unit mass, V = 2x²). Measured 2e-12, asserted 1e-11."""
    osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.ones(1), potential=lambda q, t, p: 2.0 * q[0] ** 2)
    tr = mbd.simulate(osc, jnp.ones(1), jnp.zeros(1), t1=1.0, saveat=3, formulation="nullspace", **TIGHT)
    np.testing.assert_allclose(tr.q[:, 0], np.cos(2.0 * np.array([0.0, 0.5, 1.0])), rtol=0, atol=1e-11)


# ------------------------------------------------------------------------------ errors
def test_singular_partition_names_a_better_one(pendulum):
    # At (1, 0) the rod row of B is (1, 0): with x independent, B_u = [y] = 0.
    with pytest.raises(mbd.SimulationError, match=r"singular.*independent=\('y'\)"):
        mbd.simulate(pendulum, jnp.array([1.0, 0.0]), jnp.zeros(2), t1=0.1,
                     formulation=mbd.NullSpace(independent=("x",)))


@pytest.mark.parametrize("independent, fragment", [(("z",), "unknown coordinates"),
                                                   (("x", "y"), "must name 1")])
def test_bad_independent_names(pendulum, independent, fragment):
    with pytest.raises(mbd.SimulationError, match=fragment):
        mbd.simulate(pendulum, jnp.array([1.0, 0.0]), jnp.zeros(2), t1=0.1,
                     formulation=mbd.NullSpace(independent=independent))


def test_running_out_of_partitions_is_an_error(pendulum):
    form = mbd.NullSpace(independent=("y",), max_partitions=1)
    with pytest.raises(Exception, match="re-partitioned"):
        mbd.simulate(pendulum, jnp.array([1.0, 0.0]), jnp.zeros(2), t1=1.5, formulation=form)


def test_baumgarte_is_ignored_with_a_warning(pendulum):
    with pytest.warns(UserWarning, match="ignores Baumgarte"):
        mbd.simulate(pendulum, jnp.array([math.sqrt(0.5), -math.sqrt(0.5)]), jnp.zeros(2), t1=0.1,
                     formulation="nullspace", stabilization="baumgarte")


@pytest.mark.parametrize("kwargs", [dict(growth=1.0), dict(max_partitions=0), dict(independent="x")])
def test_bad_settings(kwargs):
    with pytest.raises(ValueError):
        mbd.NullSpace(**kwargs)


def test_partition_history_needs_the_nullspace_formulation(pendulum):
    tr = mbd.simulate(pendulum, jnp.array([1.0, 0.0]), jnp.zeros(2), t1=0.1, saveat=3)
    with pytest.raises(mbd.MbdjaxError, match="null-space"):
        tr.partition_history()
