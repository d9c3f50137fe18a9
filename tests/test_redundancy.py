"""Redundant constraint rows in every formulation, and the named stop at a singular
configuration (THEORY §8), each against an independent reference named in the test."""

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mbdjax as mbd
from mbdjax import models
from mbdjax._redundancy import select_rows
from mbdjax.models._iftomm import bricard, n_four_bar, n_four_bar_reference

FORMULATIONS = ["augmented", "augmented_lagrangian", "nullspace", "multiplier_free", "quasi_velocity"]


@pytest.fixture(scope="module")
def parallelogram():
    return models.get("parallelogram-redundant")


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_redundant_parallelogram_in_every_formulation(parallelogram, formulation):
    """The parallelogram with a third parallel link (12 rows of rank 11 everywhere)
    over 0.3 s, before it first lies flat. Reference: its one-angle Lagrangian (three
    0.5 m, 1 kg rods about their pivots, I = m a²/3, and a 2 kg coupler translating on
    a circle of radius a), θ̈ = −(3ma/2 + m_c a) g cos θ / (m a² + m_c a²), scipy at
    rtol 1e-12; every crank angle within 1e-8 rad, closure to 1e-10."""
    ex = parallelogram
    ts = np.linspace(0.0, 0.3, 7)
    traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.3, saveat=ts, rtol=1e-11, atol=1e-13,
                        formulation=formulation)
    a, m, mc, g = 0.5, 1.0, 2.0, 9.81
    k = (1.5 * m * a + mc * a) * g / (m * a**2 + mc * a**2)
    ref = solve_ivp(lambda t, y: [y[1], -k * np.cos(y[0])], (0.0, 0.3), [np.pi / 3, 0.0], t_eval=ts,
                    rtol=1e-12, atol=1e-14).y[0]
    for name in ("crank.phi", "link.phi", "rocker.phi"):
        np.testing.assert_allclose(traj.coordinate(name), ref, rtol=0, atol=1e-8)
    assert float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-10
    assert dict(traj.settings)["redundant_rows"] == "link_coupler.y"
    if traj.lam is not None:
        # Minimum-norm multipliers over all 12 rows: no part along the left null
        # space of B (numpy's SVD), and the same constraint force Bᵀλ = Q − M q̈.
        B = np.asarray(mbd.kinematics.constraint_jacobian(ex.model, traj.q[3], traj.t[3], traj.params))
        u, s, _ = np.linalg.svd(B)
        lam = np.asarray(traj.lam[3])
        assert abs(float(u[:, s < 1e-9 * s[0]][:, 0] @ lam)) < 1e-9 * np.linalg.norm(lam)
        M = np.asarray(ex.model.mass_matrix(traj.q[3], traj.qd[3], traj.t[3], traj.params))
        Q = np.asarray(ex.model.forcing(traj.q[3], traj.qd[3], traj.t[3], traj.params))
        np.testing.assert_allclose(B.T @ lam, Q - M @ np.asarray(traj.qdd[3]), rtol=0, atol=1e-8)


def _skate(duplicate=True):
    """A knife edge (skate) on a horizontal plane: coordinates (x, y, θ), mass 2 kg,
    inertia 0.5 kg m² about the contact point, no applied forces; the blade cannot
    slide sideways, −sin θ ẋ + cos θ ẏ = 0. With `duplicate` the row is given twice
    (the second scaled by 3): two nonholonomic rows of rank 1."""
    def blade(q, qd, t, p):
        row = -jnp.sin(q[2]) * qd[0] + jnp.cos(q[2]) * qd[1]
        return jnp.stack([row, 3.0 * row]) if duplicate else jnp.stack([row])

    return mbd.Model(("x", "y", "theta"), mass_diagonal=lambda p: jnp.array([2.0, 2.0, 0.5]),
                     nonholonomic=blade,
                     nonholonomic_names=("blade", "blade_again") if duplicate else ("blade",))


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_redundant_nonholonomic_rows(formulation):
    """The skate given its no-slip row twice, from (0, 0, 0) at speed v = 1.5 m/s
    along the blade and turning at ω = 2 rad/s. Closed form (no force, no torque
    about the blade: ω and v stay constant): a circle of radius v/ω,
    x = (v/ω) sin ωt, y = (v/ω)(1 − cos ωt), θ = ωt; 1e-8 over 2 s (1e-7 for the
    quasi-velocity formulation, which is 2.4e-8 off on the skate with its row given
    once, at these tolerances). The lateral reaction is m v ω, shared by the two
    rows in minimum norm (ratio 1 : 3)."""
    v, w = 1.5, 2.0
    tol = 1e-7 if formulation == "quasi_velocity" else 1e-8
    model = _skate()
    ts = np.linspace(0.0, 2.0, 9)
    traj = mbd.simulate(model, jnp.zeros(3), jnp.array([v, 0.0, w]), t1=2.0, saveat=ts, rtol=1e-11,
                        atol=1e-13, formulation=formulation)
    np.testing.assert_allclose(traj.q[:, 0], v / w * np.sin(w * ts), rtol=0, atol=tol)
    np.testing.assert_allclose(traj.q[:, 1], v / w * (1.0 - np.cos(w * ts)), rtol=0, atol=tol)
    np.testing.assert_allclose(traj.q[:, 2], w * ts, rtol=0, atol=tol)
    assert dict(traj.settings)["redundant_rows"] == "blade_again"
    if traj.lam is not None:
        # λ₁ + 3 λ₂ carries the centripetal force (M q̈ + Bᵀλ = 0 along the blade's
        # normal n: m v ω = −(λ₁ + 3λ₂)); minimum norm splits it as (1, 3)/10.
        total = -2.0 * v * w
        np.testing.assert_allclose(traj.lam[:, 0], total / 10.0, rtol=0, atol=1e-7)
        np.testing.assert_allclose(traj.lam[:, 1], 3.0 * total / 10.0, rtol=0, atol=1e-7)


def test_rows_kept_are_independent_and_holonomic_first():
    """The selection keeps holonomic rows before nonholonomic ones, each in model
    order, and drops the rows that depend on those kept (numpy's rank as reference)."""
    ex = models.get("parallelogram-redundant")
    rows = select_rows(ex.model, ex.q0, 0.0, ex.model.params)
    assert rows.dropped == ("link_coupler.y",) and len(rows.holonomic) == 11 and rows.nonholonomic == ()
    B = np.asarray(mbd.kinematics.constraint_jacobian(ex.model, ex.q0, 0.0, ex.model.params))
    assert np.linalg.matrix_rank(B[list(rows.holonomic)]) == 11
    skate = _skate()
    rows = select_rows(skate, jnp.array([0.0, 0.0, 0.3]), 0.0, skate.params)
    assert rows.nonholonomic == (0,) and rows.dropped == ("blade_again",)


def test_rows_are_read_through_grad_jacfwd_and_vmap_but_not_inside_jit(parallelogram):
    """Under `jax.grad`, `jax.jacfwd` and `jax.vmap` (nested too) the initial state's
    values exist and the selection reads them (vmap: the first member), so the
    redundant link is found as at the top level (the row numpy's rank drops in the test
    above); inside `jax.jit` they do not exist before the run: None. `simulate` under
    `jax.grad` with respect to the initial state integrates the kept rows (its settings
    name the dropped one), and inside `jax.jit` it warns that its solves guard against
    redundant rows, naming `rows=` as the fix."""
    ex = parallelogram
    seen = []

    def grab(q):
        seen.append(select_rows(ex.model, q, 0.0, ex.model.params))
        return jnp.sum(q)

    jax.grad(grab)(ex.q0)
    jax.jacfwd(grab)(ex.q0)
    jax.vmap(grab)(jnp.stack([ex.q0, ex.q0 + 0.3]))
    jax.vmap(jax.vmap(grab))(jnp.stack([ex.q0, ex.q0])[None])
    jax.jit(grab)(ex.q0)
    assert [None if r is None else r.dropped for r in seen] == [("link_coupler.y",)] * 4 + [None]

    settings = []

    def final_angle(q0):
        traj = mbd.simulate(ex.model, q0, ex.qd0, t1=0.05, saveat=2)
        settings.append(dict(traj.settings))
        return traj.q[-1, 0]

    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="simulate: the initial state is staged")
        jax.grad(final_angle)(ex.q0)
    assert settings[-1]["redundant_rows"] == "link_coupler.y"
    with pytest.warns(UserWarning, match=r"staged inside jax.jit.*rows=mbdjax.select_rows"):
        jax.jit(final_angle)(ex.q0)
    assert "redundant_rows" not in settings[-1]


def test_bricard_loop_is_redundant_once():
    """The orthogonal Bricard loop: 35 rows for 35 Euler-parameter coordinates, rank 34
    (Grübler count 0, mobility 1); `check` calls the deficiency redundant, and a
    universal joint in place of the last revolute removes exactly that row."""
    ex = bricard()
    report = mbd.check(ex.model, ex.q0)
    assert (report.m, report.rank) == (35, 34) and report.redundant and not report.singular
    uni = bricard(revolute_at_j5=False)
    assert mbd.check(uni.model, uni.q0).rank == uni.model.m == 34


def _bricard_run(formulation, t1):
    ex = bricard(t1=t1)
    traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=t1, saveat=51, formulation=formulation,
                        rtol=1e-10, atol=1e-12)
    energy, kinetic = np.asarray(traj.energy()), np.asarray(traj.kinetic_energy())
    return traj, np.max(np.abs(energy - energy[0])) / np.max(kinetic)


def test_bricard_loop_falls_from_rest():
    """Bricard's loop released under gravity, 1 s through the default formulation:
    it moves (kinetic energy above 0.1 J), the energy drift stays below 1e-6 of the
    largest kinetic energy (a conservative system: the reference is conservation
    itself) and the closure below 1e-8."""
    traj, drift = _bricard_run("augmented", 1.0)
    assert float(np.max(np.asarray(traj.kinetic_energy()))) > 0.1
    assert drift < 1e-6
    assert float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-8


@pytest.mark.slow
@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_bricard_loop_in_every_formulation(formulation):
    """Bricard's loop for 10 s from rest through every formulation: energy drift below
    1e-6 of the largest kinetic energy, closure below 1e-8. Over 10 s the loop's
    independent coordinate reaches limit positions, so the null-space and
    quasi-velocity formulations must re-partition (at least 3 pieces)."""
    traj, drift = _bricard_run(formulation, 10.0)
    if formulation in ("nullspace", "quasi_velocity"):
        assert len(traj.partition_history()) >= 3
    assert drift < 1e-6
    assert float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-8


def _flat_times(n, t1):
    """The times the N four-bar lies flat (θ = 0 mod π) from its one-angle reference
    (`n_four_bar_reference`), scipy DOP853 with an event, rtol = atol = 1e-12."""
    rhs, y0 = n_four_bar_reference(n)
    sol = solve_ivp(rhs, (0.0, t1), y0, events=lambda t, y: math.sin(y[0]), rtol=1e-12, atol=1e-12,
                    method="DOP853")
    return np.asarray(sol.t_events[0])


def test_singular_configuration_is_a_named_stop():
    """IFToMM A02 (N = 10) with the augmented formulation and no stabilization cannot
    pass every flat configuration (the drift makes B q̈ = γ inconsistent where B
    loses rank). It stops at the first one it cannot pass with the named error,
    giving the time (a flat time of the reference, within 1e-3 s), the rank and the
    dependent rows, instead of grinding on to max_steps."""
    ex = n_four_bar(10)
    with pytest.raises(mbd.SimulationError, match="singular configuration") as err:
        mbd.simulate(ex.model, ex.q0, ex.qd0, t1=10.0, stabilization="none", saveat=11)
    message = str(err.value)
    t_stop = float(message.split("at t = ")[1].split(" s")[0])
    assert np.min(np.abs(_flat_times(10, 10.0) - t_stop)) < 1e-3
    assert "numerical rank" in message and "tip1b" in message and "augmented_lagrangian" in message


def test_a_saved_point_exactly_at_the_flat_position_is_finite():
    """IFToMM A02 with N = 2, saved exactly at its first flat time (the reference's
    event). There Φ_q loses rank, so projecting that saved point has a singular Gram
    matrix; the point keeps its interpolated state instead of becoming NaN, and lies
    on the flat configuration: every crank horizontal (φ = 0 mod π, within 1e-6 rad)."""
    t_flat = float(_flat_times(2, 2.0)[0])
    ex = n_four_bar(2)
    traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.2, saveat=np.array([0.0, t_flat, 1.2]))
    assert np.all(np.isfinite(np.asarray(traj.q)))
    for i in range(3):
        assert abs(math.sin(float(traj.coordinate(f"crank{i}.phi")[1]))) < 1e-6
    assert float(np.max(np.abs(np.asarray(traj.position_residual())[1]))) < 1e-8


@pytest.mark.parametrize("formulation", ["augmented", "nullspace", "multiplier_free", "quasi_velocity"])
def test_redundant_parallelogram_flat_passage_passes_or_stops_by_name(parallelogram, formulation):
    """The redundant parallelogram over 2 s at rtol 1e-11 through its flat position
    θ = 0, where B loses two more ranks (11 kept rows, rank 9). Each classical
    formulation either passes (every crank angle close to the one-angle Lagrangian
    of the test above; closure 1e-10) or stops with the named singular-configuration error within 1e-3 s of the
    reference's first flat time (scipy event on θ = 0, rtol 1e-12), never on
    max_steps. Measured: the quasi-velocity formulation passes (1.5e-8 rad, so held
    to 5e-8 here); the other three stop at 0.3857 s."""
    ex = parallelogram
    a, m, mc, g = 0.5, 1.0, 2.0, 9.81
    k = (1.5 * m * a + mc * a) * g / (m * a**2 + mc * a**2)
    ts = np.linspace(0.0, 2.0, 21)
    ref = solve_ivp(lambda t, y: [y[1], -k * np.cos(y[0])], (0.0, 2.0), [np.pi / 3, 0.0], t_eval=ts,
                    events=lambda t, y: y[0], rtol=1e-12, atol=1e-14)
    t_flat = float(ref.t_events[0][0])
    try:
        traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=2.0, saveat=ts, rtol=1e-11, atol=1e-13,
                            formulation=formulation, max_steps=20_000)
    except mbd.SimulationError as err:
        message = str(err)
        assert "singular configuration" in message and "augmented_lagrangian" in message
        t_stop = float(message.split("at t = ")[1].split(" s")[0])
        assert abs(t_stop - t_flat) < 1e-3
        return
    for name in ("crank.phi", "link.phi", "rocker.phi"):
        np.testing.assert_allclose(traj.coordinate(name), ref.y[0], rtol=0, atol=5e-8)
    assert float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-10
