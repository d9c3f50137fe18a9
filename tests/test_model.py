"""Model construction: validation errors and the derived mass matrix / forcing."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd


def _pendulum(**over):
    kw = dict(
        coordinates=("x", "y"),
        mass_diagonal=lambda p: jnp.stack([p["m"], p["m"]]),
        potential=lambda q, t, p: p["m"] * 9.81 * q[1],
        holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - p["L"] ** 2)]),
        constraint_names=("rod",),
        params={"m": 1.0, "L": 1.0},
    )
    kw.update(over)
    return mbd.Model(**kw)


def test_builds_and_names():
    m = _pendulum()
    assert (m.n, m.m_h, m.m_n, m.m) == (2, 1, 0, 1)
    assert m.index("y") == 1
    with pytest.raises(mbd.ModelError, match="no coordinate named 'z'"):
        m.index("z")


def test_errors_are_collected():
    with pytest.raises(mbd.ModelError) as err:
        mbd.Model(("a", "a"), forces=lambda q, qd, t, p: jnp.zeros(3))
    text = str(err.value)
    assert "duplicate coordinate names ['a']" in text
    assert "exactly one of `mass_matrix=`" in text


@pytest.mark.parametrize(
    "over, fragment",
    [
        (dict(forces=lambda q, qd, t, p: jnp.zeros(3)), "`forces` returned shape (3,), expected (2,)"),
        (dict(potential=lambda q, t, p: q), "`potential` returned shape (2,), expected ()"),
        (dict(constraint_names=("a", "b")), "has 2 names but the function returns 1 rows"),
        (dict(holonomic=lambda q, t, p: jnp.log(q - 10.0)), "`holonomic` is not finite"),
        (dict(holonomic_jacobian=lambda q, t, p: jnp.ones((1, 2))), "does not match the derivative"),
        (dict(nonholonomic=lambda q, qd, t, p: jnp.stack([qd[0] ** 2])), "must be affine in qd"),
        (dict(forces=3.0), "`forces` must be a function"),
        (dict(potential=lambda q, t, p: p["missing"]), "`potential` raised KeyError"),
    ],
)
def test_each_bad_input_is_named(over, fragment):
    with pytest.raises(mbd.ModelError, match=None) as err:
        _pendulum(**over)
    assert fragment in str(err.value)


def test_kinetic_energy_gives_mass_matrix_and_forcing():
    # Pendulum angle th with a moving pivot x_p(t) = sin t: T = ½ m |v|^2,
    # v = (cos t + L cos th thd, L sin th thd). Hand derivation (Greenwood §4):
    # M = m L², Q = −m L cos(th) d²x_p/dt² = m L cos(th) sin(t)  (no gravity).
    def T(q, qd, t, p):
        vx = jnp.cos(t) + p["L"] * jnp.cos(q[0]) * qd[0]
        vy = p["L"] * jnp.sin(q[0]) * qd[0]
        return 0.5 * p["m"] * (vx**2 + vy**2)

    m = mbd.Model(("th",), kinetic_energy=T, params={"m": 2.0, "L": 0.5})
    q, qd, t = jnp.array([0.3]), jnp.array([0.7]), 0.4
    np.testing.assert_allclose(m.mass_matrix(q, qd, t), [[2.0 * 0.25]], rtol=1e-14)
    np.testing.assert_allclose(m.forcing(q, qd, t), [2.0 * 0.5 * np.cos(0.3) * np.sin(0.4)], rtol=1e-12)


def test_dissipation_and_forces_enter_forcing():
    m = mbd.Model(
        ("x",), mass_matrix=lambda q, t, p: jnp.eye(1),
        forces=lambda q, qd, t, p: jnp.stack([jnp.sin(t)]),
        dissipation=lambda q, qd, t, p: 0.5 * p["c"] * qd[0] ** 2,
        potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2,
        params={"c": 0.3, "k": 4.0},
    )
    # Q = sin t − c qd − k q (THEORY §2)
    np.testing.assert_allclose(m.forcing(jnp.array([0.2]), jnp.array([1.5]), 0.5),
                               [np.sin(0.5) - 0.45 - 0.8], rtol=1e-14)


def test_params_are_float_arrays():
    m = _pendulum(params={"m": 1, "L": 2})
    assert all(jnp.asarray(x).dtype == jnp.float64 for x in jax.tree_util.tree_leaves(m.params))
