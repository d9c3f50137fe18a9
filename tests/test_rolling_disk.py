"""The rolling disk as a generic Model: the nonholonomic path on a real rolling body.

Sources: no-slip kinematics and thin-disk inertia from Greenwood §4.4; the motion is
conservative (rolling contact does no work), so T + V is constant.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd
from mbdjax import models
from mbdjax.models._rolling_disk import contact_velocity

TIGHT = dict(rtol=1e-10, atol=1e-12)
FORMULATIONS = ["augmented", "nullspace", "multiplier_free", "quasi_velocity"]


@pytest.fixture(scope="module")
def disk():
    return models.get("rolling-disk-generic")


@pytest.fixture(scope="module")
def runs(disk):
    return {f: mbd.simulate(disk.model, disk.q0, disk.qd0, t1=3.0, saveat=61, formulation=f, **TIGHT)
            for f in FORMULATIONS}


def test_structure_and_check(disk):
    m = disk.model
    assert (m.n, m.m_h, m.m_n) == (6, 1, 2)
    r = mbd.check(m, disk.q0)
    assert r.ok and r.rank == 3 and r.dof == 3


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_energy_and_rolling_contact(runs, disk, formulation):
    tr = runs[formulation]
    e = tr.energy()
    assert float(jnp.max(jnp.abs(e - e[0]))) / abs(float(e[0])) < 1e-8
    cv = jax.vmap(lambda q, qd: contact_velocity(q, qd, disk.model.params["r"]))(tr.q, tr.qd)
    assert float(jnp.max(jnp.abs(cv))) < 1e-9
    assert float(jnp.max(jnp.abs(tr.position_residual()))) < 1e-10


@pytest.mark.parametrize("formulation", FORMULATIONS[1:])
def test_formulations_agree(runs, formulation):
    np.testing.assert_allclose(runs[formulation].q, runs["augmented"].q, atol=1e-7)


def test_disk_initial_condition_counts(disk):
    # 5 position and 3 velocity degrees of freedom (n − m_h, n − m_h − m_n).
    with pytest.raises(mbd.InitialConditionError, match="has 3 velocity degree"):
        mbd.initial_conditions(disk.model, disk.q0, fix_q={"x": 0.0, "y": 0.0, "phi": 0.0, "theta": 1.3, "psi": 0.0},
                               fix_qd={"psi": 1.0})
