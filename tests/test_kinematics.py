"""Autodiff kinematics: ν, γ and γ_n against finite differences along a motion."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd
from mbdjax import _kinematics as kin


def _model():
    # Rheonomic holonomic rows and a nonholonomic (knife-edge-like) row, chosen to
    # exercise Φ_qt, Φ_tt and C_t terms.
    def Phi(q, t, p):
        return jnp.stack([
            q[0] ** 2 + jnp.sin(q[1]) * q[2] - p["a"] * jnp.cos(t),
            q[1] * q[2] - 0.3 * t**2 + q[0] * t,
        ])

    def C(q, qd, t, p):
        return jnp.stack([jnp.sin(q[2]) * qd[0] - jnp.cos(q[2]) * qd[1] + 0.2 * t * q[0]])

    return mbd.Model(("a", "b", "c"), mass_matrix=lambda q, t, p: jnp.eye(3), holonomic=Phi,
                     nonholonomic=C, params={"a": 0.7})


def _path(t):
    t = jnp.asarray(t, dtype=float)
    return jnp.stack([0.3 + 0.5 * jnp.sin(t), -0.2 + 0.4 * jnp.cos(1.3 * t), 0.1 + 0.25 * t**2])


@pytest.mark.parametrize("t", [0.0, 0.7, 1.9])
def test_gamma_matches_second_derivative_along_a_path(t):
    # Along any path, d²Φ/dt² = Φ_q q̈ − γ (THEORY §1); central differences with
    # h = 1e-4 have truncation error ~h² relative, so compare to 1e-6.
    m = _model()
    p = m.params
    q = _path(t)
    qd = jax.jacfwd(_path)(t)
    qdd = jax.jacfwd(jax.jacfwd(_path))(t)
    h = 1e-4
    phi = lambda s: kin.holonomic(m, _path(s), s, p)  # noqa: E731
    d2 = (phi(t + h) - 2 * phi(t) + phi(t - h)) / h**2
    rhs = kin.holonomic_jacobian(m, q, t, p) @ qdd - kin.gamma(m, q, qd, t, p)
    np.testing.assert_allclose(rhs, d2, rtol=1e-6, atol=1e-6 * float(jnp.max(jnp.abs(d2))))
    # ν: dΦ/dt = Φ_q q̇ − ν
    d1 = (phi(t + h) - phi(t - h)) / (2 * h)
    np.testing.assert_allclose(kin.holonomic_jacobian(m, q, t, p) @ qd - kin.nu(m, q, t, p), d1, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("t", [0.2, 1.1])
def test_gamma_nonholonomic_matches_derivative(t):
    # d/dt C(q(t), q̇(t), t) = A q̈ − γ_n (THEORY §1).
    m = _model()
    p = m.params
    C = lambda s: kin.nonholonomic(m, _path(s), jax.jacfwd(_path)(s), s, p)  # noqa: E731
    h = 1e-5
    d1 = (C(t + h) - C(t - h)) / (2 * h)
    q, qd, qdd = _path(t), jax.jacfwd(_path)(t), jax.jacfwd(jax.jacfwd(_path))(t)
    A, a = kin.nonholonomic_terms(m, q, t, p)
    np.testing.assert_allclose(A @ qdd - kin.gamma_nonholonomic(m, q, qd, t, p), d1, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(A @ qd + a, kin.nonholonomic(m, q, qd, t, p), rtol=1e-14)


def test_stacked_B_b_g_shapes_and_blocks():
    m = _model()
    p = m.params
    q, qd = _path(0.5), jax.jacfwd(_path)(0.5)
    t = 0.5
    B = kin.constraint_jacobian(m, q, t, p)
    assert B.shape == (3, 3)
    # Hand-derived from `_model`: Φ_q rows [2a, c cos b, sin b] and [t, c, b], then the
    # nonholonomic A row [sin c, −cos c, 0]; b = −Φ_t = [−0.7 sin t, 0.6 t − a] for the
    # holonomic rows and b = −a(q, t) = −0.2 t a for the nonholonomic one. To round-off.
    a_, b_, c_ = (float(x) for x in q)
    B_hand = np.array([[2 * a_, c_ * np.cos(b_), np.sin(b_)],
                       [t, c_, b_],
                       [np.sin(c_), -np.cos(c_), 0.0]])
    np.testing.assert_allclose(B, B_hand, rtol=1e-14, atol=1e-15)
    b_hand = np.array([-0.7 * np.sin(t), 0.6 * t - a_, -0.2 * t * a_])
    np.testing.assert_allclose(kin.velocity_rhs(m, q, t, p), b_hand, rtol=1e-14, atol=1e-15)
    assert kin.acceleration_rhs(m, q, qd, 0.5, p).shape == (3,)
    np.testing.assert_allclose(
        kin.velocity_residual(m, q, qd, 0.5, p), B @ qd - kin.velocity_rhs(m, q, 0.5, p), atol=1e-14
    )


def test_kinematic_analysis_rejects_free_systems():
    with pytest.raises(mbd.InitialConditionError, match="as many\nholonomic rows|as many"):
        mbd.kinematic_analysis(_model(), jnp.zeros(3), 0.0)
