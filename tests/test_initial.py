"""Consistent initial conditions and every InitialConditionError case (THEORY §4)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd


@pytest.fixture(scope="module")
def pendulum():
    # Point mass on a rod of length L in Cartesian coordinates: Φ = ½(x² + y² − L²).
    return mbd.Model(
        ("x", "y"), mass_diagonal=lambda p: jnp.stack([p["m"], p["m"]]),
        potential=lambda q, t, p: p["m"] * 9.81 * q[1],
        holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - p["L"] ** 2)]),
        constraint_names=("rod",), params={"m": 1.0, "L": 1.0},
    )


@pytest.fixture(scope="module")
def knife():
    # Knife edge (x, y, th): one nonholonomic row sin(th) xd − cos(th) yd = 0, no
    # holonomic rows: 3 position and 2 velocity degrees of freedom.
    return mbd.Model(
        ("x", "y", "th"), mass_diagonal=lambda p: jnp.array([1.0, 1.0, 0.1]),
        nonholonomic=lambda q, qd, t, p: jnp.stack([jnp.sin(q[2]) * qd[0] - jnp.cos(q[2]) * qd[1]]),
        constraint_names=(), nonholonomic_names=("no_slip",),
    )


def test_solves_positions_and_velocities(pendulum):
    # Closed form: x = 0.6 on the unit circle below the pivot gives y = −0.8; with
    # ẋ = 1, x ẋ + y ẏ = 0 gives ẏ = 0.75.
    q0, qd0 = mbd.initial_conditions(pendulum, jnp.array([0.5, -0.5]), fix_q={"x": 0.6}, fix_qd={"x": 1.0})
    np.testing.assert_allclose(q0, [0.6, -0.8], atol=1e-12)
    np.testing.assert_allclose(qd0, [1.0, 0.75], atol=1e-12)


def test_projection_when_no_conditions(pendulum):
    q0, qd0 = mbd.initial_conditions(pendulum, jnp.array([0.5, -0.5]), qd_guess=jnp.array([1.0, 1.0]))
    np.testing.assert_allclose(q0, [2**-0.5, -(2**-0.5)], atol=1e-12)
    assert abs(float(q0 @ qd0)) < 1e-12


def test_nonholonomic_velocity_dof(knife):
    q0, qd0 = mbd.initial_conditions(knife, jnp.array([0.0, 0.0, 0.3]), fix_q={"x": 0.0, "y": 0.0, "th": 0.3},
                                     fix_qd={"x": 2.0, "th": 1.0})
    np.testing.assert_allclose(qd0, [2.0, 2.0 * np.tan(0.3), 1.0], rtol=1e-12)


def test_condition_value_is_differentiable(pendulum):
    # y = −sqrt(1 − x²)  =>  dy/dx = x / sqrt(1 − x²) = 0.75 at x = 0.6
    g = jax.grad(lambda x: mbd.initial_conditions(pendulum, jnp.array([0.5, -0.5]), fix_q={"x": x})[0][1])(0.6)
    np.testing.assert_allclose(g, 0.75, rtol=1e-10)


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(fix_q={}), "too few position conditions"),
        (dict(fix_q={"x": 0.6, "y": -0.8}), "too many position conditions"),
        (dict(fix_q={"z": 1.0}), "unknown coordinates ['z']"),
        (dict(fix_q={"x": 0.6}, fix_qd={}), "too few velocity conditions"),
        (dict(fix_q={"x": 0.6}, fix_qd={"x": 1.0, "y": 0.0}), "too many velocity conditions"),
        (dict(fix_q={"x": 2.0}), "fix_q cannot be reached: no assembled configuration near the guess has x = 2."),
        (dict(fix_q=[("x", 1.0)]), "must be a dict"),
    ],
)
def test_errors(pendulum, kwargs, fragment):
    with pytest.raises(mbd.InitialConditionError) as err:
        mbd.initial_conditions(pendulum, jnp.array([0.5, -0.5]), **kwargs)
    assert fragment in str(err.value)


def test_unreachable_position_is_named_with_the_closest_assembly(pendulum):
    # |x| = 2 > L: the rod cannot be assembled. The least-squares compromise between
    # Φ = ½(x² + y² − 1) and x − 2 has y = 0 and x the real root of x³ + x − 4 = 0
    # (stationarity of ¼(x² − 1)² + (x − 2)²): x = 1.3788, rod residual ½(x² − 1) = 0.4506.
    root = np.roots([1.0, 0.0, 1.0, -4.0])
    x = float(root[np.abs(root.imag) < 1e-12].real[0])
    with pytest.raises(mbd.InitialConditionError) as err:
        mbd.initial_conditions(pendulum, jnp.array([0.5, -0.5]), fix_q={"x": 2.0})
    text = str(err.value)
    assert "fix_q cannot be reached" in text and "outside the range of motion" in text
    assert f"has x = {x:.4g}" in text and f"rod = {0.5 * (x * x - 1):.3g}" in text, text


def test_dependent_position_condition(pendulum):
    # At (1, 0) the rod is horizontal: Φ_q = (1, 0), so fixing x repeats the
    # constraint's information; y must be conditioned instead.
    with pytest.raises(mbd.InitialConditionError, match=r"\['fix_q\[x\]'\] are dependent.*\['y'\]"):
        mbd.initial_conditions(pendulum, jnp.array([1.0, 0.0]), fix_q={"x": 1.0})


def test_dependent_velocity_condition(pendulum):
    # At (0, −1) the velocity constraint is −ẏ = 0: conditioning ẏ is dependent.
    with pytest.raises(mbd.InitialConditionError, match=r"velocity conditions \['fix_qd\[y\]'\] are dependent"):
        mbd.initial_conditions(pendulum, jnp.array([0.0, -1.0]), fix_q={"x": 0.0}, fix_qd={"y": 0.0})


def test_bad_guess_shape(pendulum):
    with pytest.raises(mbd.InitialConditionError, match=r"expected \(2,\)"):
        mbd.initial_conditions(pendulum, jnp.zeros(3))


def test_redundant_constraints_accept_the_true_dof():
    # Parallelogram with a third parallel link: 12 rows of rank 11, so one position and
    # one velocity condition determine the state (solved by least squares).
    from mbdjax import models

    ex = models.get("parallelogram-redundant")
    q0, qd0 = mbd.initial_conditions(ex.model, ex.q0 + 0.01, fix_q={"crank.phi": 1.0},
                                     fix_qd={"crank.phi": 2.0})
    assert float(jnp.max(jnp.abs(ex.model.holonomic_constraints(q0)))) < 1e-12
    assert float(jnp.max(jnp.abs(ex.model.constraint_jacobian(q0) @ qd0))) < 1e-12
    np.testing.assert_allclose([q0[ex.model.index("crank.phi")], qd0[ex.model.index("crank.phi")]], [1.0, 2.0])
    # ... and with no condition the message explains the count.
    with pytest.raises(mbd.InitialConditionError, match="1 position degree"):
        mbd.initial_conditions(ex.model, ex.q0, fix_q={})
