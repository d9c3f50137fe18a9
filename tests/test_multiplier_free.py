"""Zhang's multiplier-free formulation (THEORY §5).

Expected values: hand-derived minimal-coordinate models integrated by scipy's DOP853
at rtol = atol = 1e-12 (`tests/_references.py`: the pendulum's θ̈ = −(g/L) sin θ and
its rod tension, the elliptic pendulum in (x, θ)), and the energy balance.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import _references as ref
import mbdjax as mbd
from mbdjax import models

TIGHT = dict(rtol=1e-10, atol=1e-12)


def test_equation_counts_of_the_elliptic_pendulum():
    # Zhang's comparison: 3 equations in (x, y, θ) against 5 (with two multipliers).
    ex = models.get("elliptic-pendulum")
    assert mbd.MultiplierFree().equation_count(ex.model) == 3
    assert mbd.Augmented().equation_count(ex.model) == 5


def test_recovered_multipliers_match_the_two_coordinate_model():
    """Reference: the elliptic pendulum in (x, θ) (y eliminated by the holonomic row, the
    nonholonomic row kept with its multiplier; `_references.elliptic_multipliers`),
    scipy DOP853 at 1e-12: λ_n is that multiplier, λ_h = −m₂(ÿ + g) + cos θ λ_n from the
    y row. Over 1 s at rtol 1e-10: measured 8.3e-11 N against multipliers of up to 23 N,
    asserted 5e-10 N; (x, θ) measured 8.7e-12, asserted 5e-11."""
    ex = models.get("elliptic-pendulum")
    b = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, saveat=11, formulation=mbd.MultiplierFree(multipliers=True),
                     **TIGHT)
    ts = np.linspace(0.0, 1.0, 11)
    Y = ref.solve(ref.elliptic_rhs, ref.elliptic_initial_state(), ts)
    np.testing.assert_allclose(b.q[:, ::2], Y[:2].T, rtol=0, atol=5e-11)
    np.testing.assert_allclose(b.lam, ref.elliptic_multipliers(ts, Y), rtol=0, atol=5e-10)


@pytest.fixture(scope="module")
def pendulum(unit_pendulum):
    return unit_pendulum


def test_singular_partition_names_a_better_one(pendulum):
    # At (1, 0) the rod row of B is (1, 0): with y dependent, B₁ = [0] is singular.
    with pytest.raises(mbd.SimulationError, match=r"singular.*dependent=\('x'\)"):
        mbd.simulate(pendulum, jnp.array([1.0, 0.0]), jnp.zeros(2), t1=0.1,
                     formulation=mbd.MultiplierFree(dependent=("y",)))


@pytest.mark.parametrize("dependent, fragment", [(("z",), "unknown coordinates"), (("x", "y"), "must name 1")])
def test_bad_dependent_names(pendulum, dependent, fragment):
    with pytest.raises(mbd.SimulationError, match=fragment):
        mbd.simulate(pendulum, jnp.array([1.0, 0.0]), jnp.zeros(2), t1=0.1,
                     formulation=mbd.MultiplierFree(dependent=dependent))


def test_traced_initial_state_needs_an_explicit_partition(pendulum):
    q0s = jnp.array([[1.0, 0.0], [0.0, -1.0]])
    run = lambda form: jax.vmap(lambda q0: mbd.simulate(pendulum, q0, jnp.zeros(2), t1=0.2, saveat=2,  # noqa: E731
                                                        formulation=form).q[-1])(q0s)
    with pytest.raises(mbd.SimulationError, match="explicitly"):
        run("multiplier_free")
    # With an explicit partition valid at every start (y dependent: ∂Φ/∂y = y ≠ 0), each
    # member follows θ̈ = −g sin θ from θ₀ = ±atan2(0.6, 0.8) at rest (scipy DOP853 at
    # 1e-12; (x, y) = (sin θ, −cos θ)) at the default rtol 1e-8: measured 8.4e-12 m,
    # asserted 5e-11 m; and its recovered multiplier is the rod tension λ = θ̇² + g cos θ
    # (m = L = 1, radial balance): measured 9.2e-10 N of 8 N, asserted 5e-9 N.
    q0s = jnp.array([[0.6, -0.8], [-0.6, -0.8]])
    out = jax.vmap(lambda q0: mbd.simulate(pendulum, q0, jnp.zeros(2), t1=0.2, saveat=2,
                                           formulation=mbd.MultiplierFree(dependent=("y",), multipliers=True)))(q0s)
    for k, sign in enumerate((1.0, -1.0)):
        th, om = ref.solve(ref.pendulum_rhs, [sign * math.atan2(0.6, 0.8), 0.0], [0.0, 0.2])
        np.testing.assert_allclose(out.q[k], np.stack([np.sin(th), -np.cos(th)], axis=1), rtol=0, atol=5e-11)
        np.testing.assert_allclose(out.lam[k, :, 0], ref.pendulum_tension(th, om), rtol=0, atol=5e-9)


def test_power_needs_multipliers_with_drivers():
    """The driven slider-crank's power includes the driver's work −λᵀb. Reference: the
    energy balance ∫₀ᵗ P dt = E(t) − E(0) (T and V have no explicit time dependence),
    P integrated by Simpson's rule over 401 points (quadrature error about 1e-11 J);
    measured 3.6e-12 J of a 0.41 J change, checked to 1e-9 J. A wrong sign or a
    missing driver term is off by the driver's whole work."""
    from scipy.integrate import simpson

    ex = models.get("slider-crank")
    tr = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.2, saveat=5, formulation="multiplier_free")
    with pytest.raises(mbd.MbdjaxError, match="multipliers=True"):
        tr.power()
    tr = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.2, saveat=401, formulation=mbd.MultiplierFree(multipliers=True),
                      rtol=1e-10, atol=1e-12)
    P, E = np.asarray(tr.power()), np.asarray(tr.energy())
    assert P.shape == (401,)
    gained = E[-1] - E[0]
    assert abs(gained) > 0.1                                  # the driver does work here
    assert abs(simpson(P, x=np.asarray(tr.t)) - gained) < 1e-9
