"""Greenwood's quasi-velocity formulation against the augmented one (THEORY §5)."""

import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd

TIGHT = dict(rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def pendulum(unit_pendulum):
    return unit_pendulum


# The angular rate u with q̇ = (−y, x) u is an admissible quasi-velocity of the unit
# pendulum (Greenwood §4.2).
ROT = mbd.QuasiVelocity(velocity_map=lambda q, t, p: jnp.stack([-q[1], q[0]])[:, None])


def test_user_velocity_map(pendulum):
    q0, qd0 = jnp.array([1.0, 0.0]), jnp.zeros(2)
    a = mbd.simulate(pendulum, q0, qd0, t1=2.0, saveat=21, **TIGHT)
    b = mbd.simulate(pendulum, q0, qd0, t1=2.0, saveat=21, formulation=ROT, **TIGHT)
    np.testing.assert_allclose(b.q, a.q, atol=1e-8)
    # u is the angular velocity: q̇ = (−y, x) u
    np.testing.assert_allclose(b.qd[:, 0], -b.q[:, 1] * b.u[:, 0], atol=1e-12)
    e = b.energy()
    assert float(jnp.max(jnp.abs(e - e[0]))) / 9.81 < 1e-8


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


def test_definition_of_u_gives_the_same_motion(pendulum):
    # [B; Ψ] q̇ = [b; u] inverted along the motion: same motion as the augmented form
    # (1e-8, as for the map above) and u is the angular rate.
    q0, qd0 = jnp.array([1.0, 0.0]), jnp.zeros(2)
    a = mbd.simulate(pendulum, q0, qd0, t1=2.0, saveat=21, **TIGHT)
    b = mbd.simulate(pendulum, q0, qd0, t1=2.0, saveat=21, formulation=ANGULAR_RATE, **TIGHT)
    np.testing.assert_allclose(b.q, a.q, atol=1e-8)
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
