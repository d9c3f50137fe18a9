"""Tests of the model zoo `mbdjax.models`."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd
from mbdjax import kinematics as kin
from mbdjax import models
from mbdjax.planar import Mechanism


@pytest.fixture(scope="module")
def examples():
    return {name: models.get(name) for name in models.EXAMPLES}


def _rank(A):
    return int(np.linalg.matrix_rank(np.asarray(A), tol=1e-9 * max(1.0, float(np.abs(A).max()))))


def test_cli_names_are_present():
    for name in ("slider-crank", "slider-crank-free", "four-bar", "double-pendulum", "pendulum-chain"):
        assert name in models.EXAMPLES


def test_static_catalogue_matches_the_built_examples(examples):
    """`models.FACTS` (what `mbdjax list` prints without building anything) holds each
    built example's n, m and description; regenerate it with
    `python -m mbdjax.models._catalogue` after changing an example."""
    assert set(models.FACTS) == set(examples)
    for name, ex in examples.items():
        facts = models.FACTS[name]
        assert (facts.n, facts.m, facts.description) == (ex.model.n, ex.model.m, ex.description), name
        assert ex.name == name


def test_get_unknown_name_lists_the_examples():
    with pytest.raises(mbd.ModelError) as info:
        models.get("tripple-pendulum")
    for name in models.EXAMPLES:
        assert name in str(info.value)


GENERIC_MODELS = ("elliptic-pendulum", "rolling-disk-generic", "andrews")
SPATIAL_MODELS = ("top", "rolling-disk", "rolling-hemisphere", "bricard")
NETWORK_MODELS = ("rlc", "dc-motor-crank", "diode-rectifier", "common-emitter", "stick-slip")


def test_every_example_starts_consistent(examples):
    """Φ(q0, 0) = 0 and Φ_q q̇0 = ν to 1e-12 (closed-form assembly polished by Newton)."""
    for name, ex in examples.items():
        m = ex.model
        assert isinstance(ex, models.Example) and ex.name == name
        if name in SPATIAL_MODELS:
            assert m.metadata["front_end"] == "spatial"
        elif name in NETWORK_MODELS:
            assert m.metadata["front_end"].endswith("network")
        elif ex.mechanism is not None:  # planar front end; generic Models carry no mechanism
            assert isinstance(ex.mechanism, Mechanism) and m.metadata["front_end"] == "planar"
        else:
            assert name in GENERIC_MODELS
        assert ex.q0.shape == ex.qd0.shape == (m.n,) and ex.t1 > 0 and ex.description
        if m.m_h:
            assert float(jnp.max(jnp.abs(kin.holonomic(m, ex.q0, 0.0, m.params)))) < 1e-12, name
        if m.m:
            assert float(jnp.max(jnp.abs(kin.velocity_residual(m, ex.q0, ex.qd0, 0.0, m.params)))) < 1e-12, name


def test_structure_of_each_system(examples):
    """Row counts and ranks: Grübler counts, plus the designed defects (THEORY §3)."""
    def jac(name):
        ex = examples[name]
        return kin.holonomic_jacobian(ex.model, ex.q0, 0.0, ex.model.params)

    sc = examples["slider-crank"].model
    assert (sc.n, sc.m_h) == (9, 9) and _rank(jac("slider-crank")) == 9  # zero dof, regular
    free = examples["slider-crank-free"].model
    assert (free.n, free.m_h) == (9, 8) and _rank(jac("slider-crank-free")) == 8
    assert float(free.params["spring"]["k"]) == 50.0 and float(free.params["spring"]["c"]) == 1.0
    fb = examples["four-bar"].model
    assert (fb.n, fb.m_h) == (9, 8) and _rank(jac("four-bar")) == 8
    assert (examples["double-pendulum"].model.n, examples["pendulum-chain"].model.n) == (6, 15)
    # redundant parallelogram: 12 rows, rank 11 at every configuration
    par = examples["parallelogram-redundant"]
    assert par.model.m_h == 12 and _rank(jac("parallelogram-redundant")) == 11
    # dead centre, slider driven: square Φ_q loses rank
    assert _rank(jac("slider-crank-dead-centre")) == 8
    assert _rank(kin.holonomic_jacobian((d := models.slider_crank_dead_centre("crank")).model, d.q0, 0.0,
                                        d.model.params)) == 9


def test_four_bar_is_a_grashof_crank_rocker(examples):
    """s + l < p + q with the shortest link as the crank (Grashof's criterion)."""
    p = examples["four-bar"].model.params
    a = float(p["crank_coupler"]["point_i"][0] * 2)
    b = float(p["coupler_rocker"]["point_i"][0] * 2)
    c = float(p["coupler_rocker"]["point_j"][0] * 2)
    d = float(p["rocker_pivot"]["point_i"][0])
    links = sorted([a, b, c, d])
    assert links[0] + links[3] < links[1] + links[2] and a == links[0]


def test_massless_coupler_mass_matrix_positive_on_null_space(examples):
    """M is singular but Nᵀ M N > 0 with N spanning null(Φ_q) (THEORY §3, condition 2)."""
    ex = examples["massless-four-bar"]
    m = ex.model
    M = np.asarray(m.mass_matrix(ex.q0))
    assert np.min(np.diag(M)) == 0.0
    J = np.asarray(m.constraint_jacobian(ex.q0))
    N = np.linalg.svd(J)[2][m.m_h:].T
    assert np.min(np.linalg.eigvalsh(N.T @ M @ N)) > 1e-6


def test_pendulum_chain_geometry():
    ex = models.pendulum_chain(4)
    m = ex.model
    assert m.coordinates[-3:] == ("link4.x", "link4.y", "link4.phi")
    np.testing.assert_allclose(ex.q0[m.index("link4.x")], 3.5, rtol=1e-15)
    assert m.constraint_names[:2] == ("pin1.x", "pin1.y")
    with pytest.raises(mbd.ModelError):
        models.pendulum_chain(0)


def test_dead_centre_rejects_unknown_driver():
    with pytest.raises(ValueError, match="driver"):
        models.slider_crank_dead_centre("rod")


@pytest.mark.parametrize("name, make", [
    ("double-pendulum", models.double_pendulum),
    ("pendulum-chain-3", lambda: models.pendulum_chain(3)),
])
def test_simulation_stays_on_the_constraints(name, make):
    """Default projection keeps |Φ| < 1e-10 at the outputs; energy is conserved to
    ~1e-6 (no dissipation; Tsit5 at rtol 1e-8 plus projection)."""
    ex = make()
    traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, saveat=11)
    assert bool(traj.success)
    assert float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-10
    assert float(jnp.max(jnp.abs(traj.velocity_residual()))) < 1e-8
    E = np.asarray(traj.energy())
    assert np.max(np.abs(E - E[0])) < 1e-6 * max(1.0, abs(E[0]))


def test_double_pendulum_initial_acceleration_matches_lagrange_equations(examples):
    """Two uniform rods (m = 1 kg, L = 1 m) in relative angles: the textbook Lagrange
    equations for a compound double pendulum, solved at rest, give θ̈1, θ̈2; the
    absolute-coordinate model must agree (absolute angles, here θ = φ + π/2) to 1e-10."""
    ex = examples["double-pendulum"]
    form = mbd.Augmented().prepare(ex.model, ex.model.params, ex.q0, 0.0)
    qdd, _ = form.accelerations(ex.model, ex.q0, ex.qd0, 0.0, ex.model.params, mbd.NoStabilization())
    g, L = 9.81, 1.0
    th1, th2 = float(ex.q0[2]) + math.pi / 2, float(ex.q0[5]) + math.pi / 2  # from the downward vertical
    # M θ̈ = −G for two uniform rods, at rest (no velocity terms)
    M = np.array([[4 / 3 * L**2, 0.5 * L**2 * math.cos(th1 - th2)],
                  [0.5 * L**2 * math.cos(th1 - th2), 1 / 3 * L**2]])
    Gv = np.array([1.5 * g * L * math.sin(th1), 0.5 * g * L * math.sin(th2)])
    expect = np.linalg.solve(M, -Gv)
    np.testing.assert_allclose([qdd[2], qdd[5]], expect, rtol=1e-10)


# ---------------------------------------------------------------- through trajectories
@pytest.fixture(scope="module")
def free_crank():
    return models.get("slider-crank-free")


def _final_slider(ex, rod_mass):
    p = jax.tree_util.tree_map(lambda x: x, ex.model.params)
    p["rod"] = dict(p["rod"], mass=rod_mass)
    tr = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.5, params=p, saveat=2, rtol=1e-11, atol=1e-12)
    return tr.q[-1, ex.model.index("slider.x")]


def test_grad_wrt_body_mass_matches_finite_differences(free_crank):
    # Central differences with h = 1e-5 kg (truncation ~h², round-off ~1e-11/h):
    # agreement to 1e-5 relative is the acceptance value.
    g = jax.grad(lambda m: _final_slider(free_crank, m))(0.5)
    h = 1e-5
    fd = (_final_slider(free_crank, 0.5 + h) - _final_slider(free_crank, 0.5 - h)) / (2 * h)
    assert abs(float(fd)) > 1e-4
    np.testing.assert_allclose(g, fd, rtol=1e-5)


def test_vmap_over_eight_masses_equals_a_loop(free_crank):
    masses = jnp.linspace(0.3, 1.0, 8)
    batched = jax.vmap(lambda m: _final_slider(free_crank, m))(masses)
    looped = jnp.stack([_final_slider(free_crank, m) for m in masses])
    np.testing.assert_allclose(batched, looped, rtol=0, atol=1e-12)


def test_conservative_four_bar_energy_and_closure_over_10_s():
    # No dampers or drivers: T + V is conserved. rtol 1e-10 keeps the integration
    # error below the 1e-8 relative target; projection keeps closure at round-off.
    ex = models.get("four-bar")
    tr = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=10.0, saveat=201, rtol=1e-10, atol=1e-12)
    e = tr.energy()
    scale = float(jnp.max(tr.kinetic_energy()))
    assert float(jnp.max(jnp.abs(e - e[0]))) / scale < 1e-8
    assert float(jnp.max(jnp.abs(tr.position_residual()))) < 1e-10
