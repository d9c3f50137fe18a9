"""Existence-theorem report (THEORY §3, Haug §6.3) on mechanisms with known answers."""

import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd
from mbdjax import models


@pytest.fixture(scope="module")
def zoo():
    return {name: models.get(name) for name in
            ("four-bar", "parallelogram-redundant", "slider-crank-dead-centre", "massless-four-bar", "slider-crank")}


def test_regular_four_bar(zoo):
    ex = zoo["four-bar"]
    r = mbd.check(ex.model, ex.q0)
    # 3 moving bars (n = 9), 4 revolutes (m = 8): one degree of freedom.
    assert (r.n, r.m, r.rank, r.dof) == (9, 8, 8, 1)
    assert r.ok and not r.singular and r.redundant == () and r.mass_positive_definite
    assert r.sigma_min > 1e-3 and np.isfinite(r.condition)
    assert "OK" in str(r) and "rank of B" in str(r)


def test_redundant_parallelogram_names_its_rows(zoo):
    # A parallelogram with a third parallel link: Φ_q (12 × 12) has rank 11 at every
    # configuration (Haug's redundant-constraint example); λ is not unique.
    ex = zoo["parallelogram-redundant"]
    r = mbd.check(ex.model, ex.q0)
    assert r.rank == r.m - 1 and not r.ok and not r.singular
    assert len(r.redundant) == 1 and r.redundant[0] in ex.model.constraint_names
    assert r.redundant[0] in str(r) and "redundant constraints" in r.problems[0]


def test_dead_centre_is_singular_not_redundant(zoo):
    # Slider-driven slider-crank at the outer dead centre: the slider's motion does not
    # determine the crank's there (Φ_q rank 8 of 9), but it does nearby.
    ex = zoo["slider-crank-dead-centre"]
    r = mbd.check(ex.model, ex.q0)
    assert r.singular and r.redundant == () and not r.ok
    assert r.rank == 8 and len(r.dependent) == 1
    assert "singular configuration" in r.problems[0]
    # Away from the dead centre the same model is regular.
    crank_driven = zoo["slider-crank"]
    q, _, _ = mbd.kinematic_analysis(crank_driven.model, crank_driven.q0, 0.1)
    assert mbd.check(ex.model, q, t=0.1).ok


def test_massless_link_is_harmless(zoo):
    # Massless coupler: M is singular on Rⁿ, but every admissible motion moves a body
    # with mass, so NᵀMN > 0 and the augmented matrix is nonsingular (THEORY §3).
    ex = zoo["massless-four-bar"]
    r = mbd.check(ex.model, ex.q0)
    assert not r.mass_positive_definite
    assert r.mass_positive_on_nullspace and r.ok
    tr = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.5, saveat=6)
    assert bool(jnp.all(jnp.isfinite(tr.q))) and float(jnp.max(jnp.abs(tr.position_residual()))) < 1e-10


def test_massless_body_that_is_not_harmless():
    # A massless body on a revolute (free to spin with no inertia): NᵀMN is singular.
    from mbdjax.planar import Mechanism

    mech = Mechanism()
    mech.body("wheel", mass=0.0, inertia=0.0)
    mech.revolute("axle", "ground", (0.0, 0.0), "wheel", (0.0, 0.0))
    model = mech.build()
    r = mbd.check(model, jnp.zeros(3))
    assert not r.mass_positive_definite and not r.mass_positive_on_nullspace and not r.ok
    assert "no inertia" in " ".join(r.problems)


def test_zero_dof_driven_system(zoo):
    ex = zoo["slider-crank"]
    r = mbd.check(ex.model, ex.q0)
    assert r.dof == 0 and r.ok
    assert "no admissible motion" in str(r)


def test_unassembled_configuration_is_reported(zoo):
    ex = zoo["four-bar"]
    r = mbd.check(ex.model, ex.q0 + 0.05)
    assert r.constraint_residual > 1e-3 and any("not assembled" in p for p in r.problems)


def test_nonholonomic_rows_are_named():
    # Two identical knife-edge rows: dependent everywhere -> redundant, by name.
    C = lambda q, qd, t, p: jnp.stack([jnp.sin(q[2]) * qd[0] - jnp.cos(q[2]) * qd[1]] * 2)  # noqa: E731
    model = mbd.Model(("x", "y", "th"), mass_diagonal=lambda p: jnp.ones(3), nonholonomic=C,
                      nonholonomic_names=("blade", "blade_copy"))
    r = mbd.check(model, jnp.array([0.0, 0.0, 0.3]))
    assert r.redundant == ("blade_copy",) and r.m_n == 2


def test_schur_path_refuses_massless_bodies(zoo):
    # B M⁻¹ Bᵀ needs M⁻¹: a clear run-time error, not a NaN trajectory.
    ex = zoo["massless-four-bar"]
    with pytest.raises(Exception, match="schur=False"):
        mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.1, formulation=mbd.Augmented(schur=True))
