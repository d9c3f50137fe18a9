"""Greenwood's quasi-velocity formulation (THEORY §5).

Expected values: the unit pendulum's one-angle equation θ̈ = −(g/L) sin θ (θ from the
downward vertical), integrated by scipy's DOP853 at rtol = atol = 1e-12
(`tests/_references.py`), and energy conservation.
"""

import math

import jax.numpy as jnp
import numpy as np
import pytest

import _references as ref
import mbdjax as mbd

TIGHT = dict(rtol=1e-10, atol=1e-12)
TS = np.linspace(0.0, 2.0, 21)


@pytest.fixture(scope="module")
def pendulum(unit_pendulum):
    return unit_pendulum


@pytest.fixture(scope="module")
def swing():
    """(θ, θ̇) at `TS` of the unit pendulum released at rest from (1, 0) (θ₀ = π/2)."""
    return ref.solve(ref.pendulum_rhs, [math.pi / 2, 0.0], TS)


def _check_against_swing(tr, swing):
    th, om = swing
    np.testing.assert_allclose(tr.q, np.stack([np.sin(th), -np.cos(th)], axis=1), rtol=0, atol=2e-10)
    np.testing.assert_allclose(tr.u[:, 0], om, rtol=0, atol=5e-10)


# The angular rate u with q̇ = (−y, x) u is an admissible quasi-velocity of the unit
# pendulum (Greenwood §4.2).
ROT = mbd.QuasiVelocity(velocity_map=lambda q, t, p: jnp.stack([-q[1], q[0]])[:, None])


def test_user_velocity_map(pendulum, swing):
    """Reference: θ̈ = −g sin θ from θ₀ = π/2 at rest (scipy DOP853 at 1e-12), with
    (x, y) = (sin θ, −cos θ) and u = θ̇ (for this map q̇ = (−y, x) u = (cos θ, sin θ) θ̇).
    Over 2 s at rtol 1e-10: measured 2.3e-11 m in q and 6.6e-11 rad/s in u, asserted
    2e-10 and 5e-10. Energy conserved: measured drift 3.1e-10 J (3.2e-11 of m g L),
    asserted 2e-10 of m g L."""
    q0, qd0 = jnp.array([1.0, 0.0]), jnp.zeros(2)
    b = mbd.simulate(pendulum, q0, qd0, t1=2.0, saveat=21, formulation=ROT, **TIGHT)
    _check_against_swing(b, swing)
    # u is the angular velocity: q̇ = (−y, x) u
    np.testing.assert_allclose(b.qd[:, 0], -b.q[:, 1] * b.u[:, 0], atol=1e-12)
    e = b.energy()
    assert float(jnp.max(jnp.abs(e - e[0]))) / 9.81 < 2e-10


def test_map_that_violates_the_constraints_is_rejected(pendulum):
    bad = mbd.QuasiVelocity(velocity_map=lambda q, t, p: jnp.stack([q[0], q[1]])[:, None])  # radial
    with pytest.raises(mbd.SimulationError, match="violates the velocity constraints.*'rod'"):
        mbd.simulate(pendulum, jnp.array([1.0, 0.0]), jnp.zeros(2), t1=0.1, formulation=bad)


def test_map_with_wrong_column_count_is_rejected(pendulum):
    two = mbd.QuasiVelocity(velocity_map=lambda q, t, p: jnp.stack([-q[1], q[0]])[:, None] * jnp.ones((1, 2)))
    with pytest.raises(mbd.SimulationError, match="1 velocity degrees of freedom"):
        mbd.simulate(pendulum, jnp.array([1.0, 0.0]), jnp.zeros(2), t1=0.1, formulation=two)


def test_baumgarte_is_ignored_with_a_warning(pendulum):
    with pytest.warns(UserWarning, match="ignores Baumgarte"):
        mbd.simulate(pendulum, jnp.array([1.0, 0.0]), jnp.zeros(2), t1=0.1, formulation=ROT, stabilization="baumgarte")


def test_unknown_independent_name(pendulum):
    with pytest.raises(mbd.SimulationError, match="unknown coordinates"):
        mbd.simulate(pendulum, jnp.array([1.0, 0.0]), jnp.zeros(2), t1=0.1,
                     formulation=mbd.QuasiVelocity(independent=("z",)))


# u defined as the user states it, u = x ẏ − y ẋ (the angular rate, affine in q̇).
ANGULAR_RATE = mbd.QuasiVelocity(definition=lambda q, qd, t, p: jnp.stack([q[0] * qd[1] - q[1] * qd[0]]))


def test_definition_of_u_gives_the_same_motion(pendulum, swing):
    """[B; Ψ] q̇ = [b; u] inverted along the motion. Reference as for the map above
    (θ̈ = −g sin θ, scipy DOP853 at 1e-12; u = x ẏ − y ẋ = θ̇): measured 3.8e-11 m in q
    and 9.1e-11 rad/s in u over 2 s at rtol 1e-10, asserted 2e-10 and 5e-10."""
    q0, qd0 = jnp.array([1.0, 0.0]), jnp.zeros(2)
    b = mbd.simulate(pendulum, q0, qd0, t1=2.0, saveat=21, formulation=ANGULAR_RATE, **TIGHT)
    _check_against_swing(b, swing)
    np.testing.assert_allclose(b.u[:, 0], b.q[:, 0] * b.qd[:, 1] - b.q[:, 1] * b.qd[:, 0], atol=1e-12)


@pytest.mark.parametrize("definition, fragment", [
    (lambda q, qd, t, p: jnp.stack([qd[0] * qd[1]]), "affine in qd"),
    (lambda q, qd, t, p: qd, "must return \\(1,\\)"),
    # the radial rate x ẋ + y ẏ is the constraint itself: [B; Ψ] is singular
    (lambda q, qd, t, p: jnp.stack([q[0] * qd[0] + q[1] * qd[1]]), "do not determine"),
])
def test_bad_definitions_are_rejected(pendulum, definition, fragment):
    with pytest.raises(mbd.SimulationError, match=fragment):
        mbd.simulate(pendulum, jnp.array([1.0, 0.0]), jnp.zeros(2), t1=0.1,
                     formulation=mbd.QuasiVelocity(definition=definition))


def test_only_one_way_to_give_u():
    with pytest.raises(ValueError, match="give one of"):
        mbd.QuasiVelocity(definition=lambda q, qd, t, p: qd[:1], independent=("x",))
    with pytest.raises(ValueError, match="offset"):
        mbd.QuasiVelocity(offset=lambda q, t, p: q)


def test_greenwood_needs_a_body_table(pendulum):
    """`formulation="greenwood"` sums over the model's rigid bodies (`Model.bodies`, which
    `spatial.Mechanism` records); a hand-written Model has none, and the error says so
    and names the formulation that needs only the Lagrangian."""
    with pytest.raises(mbd.SimulationError, match="no body table.*quasi_velocity"):
        mbd.simulate(pendulum, jnp.array([1.0, 0.0]), jnp.zeros(2), t1=0.1, formulation="greenwood")
