"""UnrolledRK: the explicit Runge–Kutta methods of diffrax with their stages unrolled.

The expected values are diffrax's own looped solvers on the same problem: the method,
its error estimate and its dense output are the same, so the step counts must be
equal and the states agree to rounding (1e-10 over 1 s of a non-chaotic motion: the
stage sums are added in another order, which the step-size controller amplifies a
little).
"""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd
from mbdjax.models import double_pendulum


@pytest.fixture(scope="module")
def pendulum2():
    return double_pendulum()


def _run(ex, solver, **kw):
    # dt0 set: diffrax's own first step (0.01 s here) has an error estimate at the
    # rounding level for Dopri8, where the order of the stage sums decides the second
    # step size and the two step sequences part (both valid).
    opts = dict(t1=1.0, saveat=7, stabilization="none", drift_tol=None, dt0=0.05)
    opts.update(kw)
    return mbd.simulate(ex.model, ex.q0, ex.qd0, solver=solver, **opts)


@pytest.mark.parametrize("make", [diffrax.Tsit5, diffrax.Dopri8, diffrax.Heun])
def test_unrolled_matches_looped_solver(pendulum2, make):
    # Heun is not first-same-as-last and its solution is not its last stage (b_sol used).
    kw = dict(rtol=1e-5, atol=1e-7) if make is diffrax.Heun else {}
    ref = _run(pendulum2, make(), **kw)
    got = _run(pendulum2, mbd.UnrolledRK(make()), **kw)
    assert int(got.num_steps) == int(ref.num_steps)
    np.testing.assert_allclose(got.t, ref.t, atol=0)
    # Saved points between steps come from the solver's own dense output.
    np.testing.assert_allclose(got.q, ref.q, atol=1e-10, rtol=0)
    np.testing.assert_allclose(got.qd, ref.qd, atol=1e-9, rtol=0)
    assert dict(got.settings)["solver"] == f"UnrolledRK({make.__name__})"


def test_unrolled_with_projection_grad_and_vmap():
    # Projection wraps the unrolled solver (every step re-evaluates its first stage);
    # reverse-mode gradients and vmap go through the unrolled stages. A point mass on
    # a rod (Cartesian) pushed sideways by a force F; the expected d(final x²)/dF is a
    # central difference (h = 1e-4: truncation ~1e-8, integration noise ~1e-8/h, so a
    # relative 1e-5 check).
    model = mbd.Model(
        ("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        potential=lambda q, t, p: 9.81 * q[1],
        forces=lambda q, qd, t, p: jnp.stack([p["F"], 0.0 * p["F"]]),
        holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        constraint_names=("rod",), params={"F": 0.0},
    )
    solver = mbd.UnrolledRK(diffrax.Tsit5())

    def loss(F):
        tr = mbd.simulate(model, jnp.array([1.0, 0.0]), jnp.zeros(2), t1=0.5, saveat=2,
                          params={"F": F}, solver=solver)
        return tr.q[-1, 0] ** 2

    h = 1e-4
    fd = (loss(jnp.asarray(2.0 + h)) - loss(jnp.asarray(2.0 - h))) / (2 * h)
    np.testing.assert_allclose(jax.grad(loss)(jnp.asarray(2.0)), fd, rtol=1e-5)
    forces = jnp.array([0.5, 2.0])
    looped = jnp.stack([loss(F) for F in forces])
    np.testing.assert_allclose(jax.vmap(loss)(forces), looped, rtol=1e-9)


def test_unrolled_refuses_implicit_solver():
    with pytest.raises(ValueError, match="not an explicit Runge–Kutta"):
        mbd.UnrolledRK(diffrax.Kvaerno5())
    with pytest.raises(ValueError, match="Euler"):
        mbd.UnrolledRK(diffrax.Euler())
