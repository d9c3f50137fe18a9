"""Null-space formulation with coordinate partitioning (THEORY §5; Wehage–Haug).

Expected values: the augmented form's motion (same equations, THEORY §5), holonomic
residuals at the Newton tolerance (issue acceptance 1e-12 with no stabilization), and
partition changes where the dependent block of B must become singular.
"""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd
from mbdjax import models

TIGHT = dict(rtol=1e-10, atol=1e-12)
ROCKER_FIRST = mbd.NullSpace(independent=("rocker.phi",))


@functools.lru_cache(maxsize=None)
def _four_bar(formulation, rtol):
    ex = models.get("four-bar")
    return ex, mbd.simulate(ex.model, ex.q0, ex.qd0, t1=3.0, saveat=61, formulation=formulation,
                            stabilization="none", rtol=rtol, atol=rtol * 1e-2, max_steps=200_000)


def test_four_bar_repartitions_when_the_rocker_reaches_a_limit():
    # The crank turns fully, so the rocker angle reverses twice per revolution; there
    # d(rocker.phi)/d(crank.phi) = 0 and the rocker angle cannot carry the motion:
    # B_u (all coordinates but rocker.phi) becomes singular. The first reversal is
    # near t = 0.4 s (rocker angle maximum of the augmented solution).
    ex, tr = _four_bar(ROCKER_FIRST, 1e-10)
    history = tr.partition_history()
    assert history[0] == (0.0, ("rocker.phi",))
    assert len(history) >= 2 and history[1][1] != ("rocker.phi",)
    _, ref = _four_bar("augmented", 1e-10)
    t_max = float(ref.t[int(jnp.argmax(ref.coordinate("rocker.phi")[:20]))])
    assert 0.1 < history[1][0] < t_max + 0.05
    # No stabilization, yet every output lies on Φ = 0 (Newton tolerance) across the switch.
    assert float(jnp.max(jnp.abs(tr.position_residual()))) < 1e-12
    assert float(jnp.max(jnp.abs(tr.velocity_residual()))) < 1e-12


def test_four_bar_motion_across_repartition_matches_augmented():
    # Both at rtol 1e-12: over 3 s of this gravity-driven four-bar errors grow by about
    # 1e3, so the rocker-first partition (error amplified near the rocker limits, where
    # a rocker error maps to a large crank error) is compared at a tighter tolerance
    # than the 1e-10 of the agreement tests; observed difference 3e-10.
    _, a = _four_bar("augmented", 1e-12)
    _, b = _four_bar(ROCKER_FIRST, 1e-12)
    np.testing.assert_allclose(b.q, a.q, atol=1e-7)


@pytest.fixture(scope="module")
def pendulum(unit_pendulum):
    return unit_pendulum


def test_pendulum_repartitions_through_the_bottom(pendulum):
    # Released from (1, 0) with y independent: x is dependent, B_u = [x] → 0 at the
    # bottom (x = 0), so the partition must switch to x independent before it.
    tr = mbd.simulate(pendulum, jnp.array([1.0, 0.0]), jnp.zeros(2), t1=1.5, saveat=31,
                      formulation=mbd.NullSpace(independent=("y",)), stabilization="none", **TIGHT)
    names = [ind for _, ind in tr.partition_history()]
    assert names[:2] == [("y",), ("x",)]
    assert float(jnp.max(jnp.abs(tr.position_residual()))) < 1e-12
    ref = mbd.simulate(pendulum, jnp.array([1.0, 0.0]), jnp.zeros(2), t1=1.5, saveat=31, **TIGHT)
    np.testing.assert_allclose(tr.q, ref.q, atol=1e-8)


def test_multipliers_on_request_match_augmented():
    ex = models.get("elliptic-pendulum")
    a = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, saveat=11, **TIGHT)
    b = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, saveat=11, formulation=mbd.NullSpace(multipliers=True),
                     **TIGHT)
    np.testing.assert_allclose(b.lam, a.lam, atol=1e-8)
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


def test_unconstrained_model_integrates_plainly():
    osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.ones(1), potential=lambda q, t, p: 2.0 * q[0] ** 2)
    tr = mbd.simulate(osc, jnp.ones(1), jnp.zeros(1), t1=1.0, saveat=3, formulation="nullspace", **TIGHT)
    np.testing.assert_allclose(tr.q[:, 0], np.cos(2.0 * np.array([0.0, 0.5, 1.0])), atol=1e-9)


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
