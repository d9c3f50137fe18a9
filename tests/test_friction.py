"""Stick–slip friction: the exact (switched) mode against the closed form, and the
regularized law converging to it."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd
from mbdjax import models
from mbdjax.models._networks import stick_slip, stick_slip_events

jax.config.update("jax_enable_x64", True)

V_BELT, MU_S, N = 0.2, 0.6, 9.81


@pytest.fixture(scope="module")
def exact():
    ex = models.get("stick-slip")
    traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=ex.t1, saveat=601)
    return ex, traj


def test_exact_mode_reproduces_the_stick_intervals(exact):
    """Switch times against `stick_slip_events` (closed form, harmonic slip phases):
    2e-8 s, the README's claim (events bisected on the dense output to 1e-13 s; measured
    1e-9 s at the first stick growing to 1.3e-8 s at the sixth switch, the integration's
    rtol 1e-8)."""
    ex, traj = exact
    got = traj.switch_history()
    want = stick_slip_events(ex.t1)
    assert len(got) == len(want) == 6
    for (t, modes), (t_ref, kind) in zip(got, want):
        assert t == pytest.approx(t_ref, abs=2e-8)
        assert modes["fr.stuck"] == (1.0 if kind == "stick" else 0.0)
        if kind == "slip":
            assert modes["fr.direction"] == -1.0      # the mass falls behind the belt
    # stuck: the mass rides the belt (first stick phase x = v_b t, closed form)
    t = np.asarray(traj.t)
    first = t < want[0][0]
    np.testing.assert_allclose(traj.coordinate("x.x")[first], V_BELT * t[first], atol=1e-9)
    stuck = np.asarray(traj.modes[:, 0]) > 0.5
    np.testing.assert_allclose(traj.velocity("x.x")[stuck], V_BELT, atol=1e-9)


def test_sticking_force_never_exceeds_the_static_limit(exact):
    _, traj = exact
    force = np.asarray(traj.effort("fr"))
    stuck = np.asarray(traj.modes[:, 0]) > 0.5
    assert np.max(np.abs(force[stuck])) <= MU_S * N * (1 + 1e-9)
    assert np.max(np.abs(force[stuck])) > 0.95 * MU_S * N           # it does get close before slipping
    np.testing.assert_allclose(np.abs(force[~stuck]), 0.4 * N, rtol=1e-12)   # sliding: μ_k N
    power = traj.power_balance()
    assert float(jnp.max(jnp.abs(power["residual"]))) < 1e-8


def test_regularized_mode_converges_to_the_exact_one(exact):
    """max |x_smooth − x_exact| over 12 s shrinks as the velocity scale does (about
    fivefold per decade: 0.24, 0.047, 0.009 m for 1e-2, 1e-3, 1e-4 m/s)."""
    ex, traj = exact
    smooth = stick_slip(mode="smooth").model
    errors = []
    for vs in (1e-2, 1e-3, 1e-4):
        p = {**smooth.params, "fr": {**smooth.params["fr"], "velocity_scale": vs}}
        tr = mbd.simulate(smooth, ex.q0[:2], ex.qd0[:2], t1=ex.t1, saveat=601, params=p,
                          solver=diffrax.Kvaerno5(), max_steps=100_000)
        errors.append(float(jnp.max(jnp.abs(tr.coordinate("x.x") - traj.coordinate("x.x")))))
    assert errors[0] > errors[1] > errors[2] and errors[2] < 0.02


def test_exact_friction_needs_the_augmented_formulation_and_bounds_switches(exact):
    ex, _ = exact
    with pytest.raises(mbd.SimulationError, match="discrete modes"):
        mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, formulation="nullspace")
    from mbdjax.network import Network

    net = Network()
    net.node("x", "translational")
    net.node("belt", "translational")
    net.mass("m", "x", 1.0)
    net.spring("k", "x", "ground", k=10.0)
    net.flow_source("drive", "belt", "ground", lambda t, p: V_BELT)
    net.coulomb_friction("fr", "x", "belt", mu_k=0.4, mu_s=MU_S, normal=N, mode="exact", max_switches=2)
    model = net.build()
    with pytest.raises(Exception, match="switched max_switches times"):
        mbd.simulate(model, ex.q0, ex.qd0, t1=12.0)


def test_gradient_through_the_switches_matches_finite_differences(exact):
    """∂x(5 s)/∂μ_k across a stick→slip→stick sequence (event times move with μ_k):
    reverse mode against central differences (step 1e-6); 1e-6 relative."""
    ex, _ = exact

    def x_at(mu_k):
        p = {**ex.model.params, "fr": {**ex.model.params["fr"], "mu_k": mu_k}}
        traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=5.0, saveat=jnp.array([0.0, 5.0]), params=p)
        return traj.coordinate("x.x")[-1]

    grad = jax.grad(x_at)(0.4)
    fd = (x_at(0.4 + 1e-6) - x_at(0.4 - 1e-6)) / 2e-6
    assert float(grad) == pytest.approx(float(fd), rel=1e-6)
