"""The augmented Lagrangian formulation (THEORY §8): singular configurations, redundant
rows, minimum-norm multipliers, mass-orthogonal projections and gradients, each
against an independent reference named in the test."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mbdjax as mbd
from mbdjax import models
from mbdjax._formulation.augmented_lagrangian import project_mass_orthogonal
from mbdjax.models._iftomm import n_four_bar, n_four_bar_reference


def _a02_reference(n, ts):
    """Crank angle θ(ts) of the N four-bar from its hand-derived one-angle Lagrangian
    (`n_four_bar_reference`), scipy DOP853 at rtol = atol = 1e-12."""
    rhs, y0 = n_four_bar_reference(n)
    return solve_ivp(rhs, (0.0, float(ts[-1])), y0, t_eval=ts, rtol=1e-12, atol=1e-12, method="DOP853").y[0]


@pytest.fixture(scope="module")
def a02():
    return n_four_bar(10)


@pytest.mark.parametrize("formulation", ["augmented_lagrangian", "augmented", "nullspace", "multiplier_free",
                                         "quasi_velocity"])
def test_n_four_bar_passes_its_flat_configurations(a02, formulation):
    """IFToMM A02 at N = 10 over 10 s (six flat, rank-deficient passages) with the
    default settings: every crank within 1e-3 rad of the one-degree-of-freedom
    reference (the benchmark's high-precision bar), energy kept to 1e-4 J.

    The augmented Lagrangian formulation is well posed where B loses rank and must
    pass. The classical ones are not defined at the flat instant itself: they pass when
    no step lands close enough to it to collapse (measured with the default code
    generation: 1e-7 to 1.4e-6 rad), and otherwise stop with the named
    singular-configuration error, whose time must then be a flat time of the reference
    (within 1e-3 s) and whose rows must be the loops' dependent ones. Which of the two
    happens depends on rounding: at XLA's optimisation level 0 the multiplier-free run
    stops at t = 2.6818 s (σ_min/σ_max = 3e-8), never on max_steps."""
    ts = np.linspace(0.0, 10.0, 101)
    ref = _a02_reference(10, ts)
    try:
        traj = mbd.simulate(a02.model, a02.q0, a02.qd0, t1=10.0, saveat=ts, formulation=formulation)
    except mbd.SimulationError as err:
        if formulation == "augmented_lagrangian" or err.reason != "rank_lost":
            raise
        rhs, y0 = n_four_bar_reference(10)
        flat = solve_ivp(rhs, (0.0, 10.0), y0, events=lambda t, y: math.sin(y[0]), rtol=1e-12, atol=1e-12,
                         method="DOP853").t_events[0]
        assert np.min(np.abs(flat - err.time)) < 1e-3
        assert err.names and all(name.startswith("tip") for name in err.names)
        return
    for i in (0, 5, 10):
        theta = np.unwrap(np.asarray(traj.coordinate(f"crank{i}.phi")))
        assert np.max(np.abs(theta - ref)) < 1e-3
    assert np.sum(np.abs(np.diff(np.sign(np.cos(ref))))) >= 10  # it did pass flat positions
    energy = np.asarray(traj.energy())
    assert np.max(np.abs(energy - energy[0])) < 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("formulation", ["augmented_lagrangian", "augmented"])
def test_n_four_bar_with_forty_loops(formulation):
    """IFToMM A02 at the benchmark's N = 40 (243 coordinates, 242 rows), 10 s, default
    settings: crank 0 within 1e-3 rad of the one-angle reference."""
    ex = n_four_bar(40)
    ts = np.linspace(0.0, 10.0, 101)
    traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=10.0, saveat=ts, formulation=formulation)
    theta = np.unwrap(np.asarray(traj.coordinate("crank0.phi")))
    assert np.max(np.abs(theta - _a02_reference(40, ts))) < 1e-3


def test_redundant_parallelogram_through_its_flat_positions():
    """The parallelogram with a third parallel link (12 rows of rank 11 everywhere)
    over 2 s, which includes the flat positions θ = 0 and π where the rank drops
    further. Reference: its one-angle Lagrangian (three 0.5 m, 1 kg rods about their
    pivots, I = m a²/3, and a 2 kg coupler translating on a circle of radius a),
    θ̈ = −(3ma/2 + m_c a) g cos θ / (m a² + m_c a²), scipy at rtol 1e-12; 1e-8 rad."""
    ex = models.get("parallelogram-redundant")
    ts = np.linspace(0.0, 2.0, 21)
    traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=2.0, saveat=ts, rtol=1e-11, atol=1e-13,
                        formulation="augmented_lagrangian")
    a, m, mc, g = 0.5, 1.0, 2.0, 9.81
    k = (1.5 * m * a + mc * a) * g / (m * a**2 + mc * a**2)
    ref = solve_ivp(lambda t, y: [y[1], -k * np.cos(y[0])], (0.0, 2.0), [np.pi / 3, 0.0], t_eval=ts,
                    rtol=1e-12, atol=1e-14).y[0]
    assert ref.min() < -np.pi / 2 + 0.1 and ref.max() > np.pi / 3 - 1e-9  # swings through θ = 0
    for name in ("crank.phi", "link.phi", "rocker.phi"):
        np.testing.assert_allclose(traj.coordinate(name), ref, rtol=0, atol=1e-8)
    assert float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-10
    # Minimum-norm multipliers: λ solves Bᵀλ = Q − M q̈ and has no part in the left
    # null space of B (the redundant row's direction), checked with numpy's SVD.
    lam = np.asarray(traj.lam[5])
    B = np.asarray(mbd.kinematics.constraint_jacobian(ex.model, traj.q[5], traj.t[5], traj.params))
    u, s, _ = np.linalg.svd(B)
    left_null = u[:, s < 1e-9 * s[0]]
    assert left_null.shape[1] == 1
    assert abs(float(left_null[:, 0] @ lam)) < 1e-8 * np.linalg.norm(lam)


def test_rod_tension_is_the_radial_balance(unit_pendulum):
    """Point mass on a unit rod, Φ = ½(x² + y² − 1): with M q̈ + Φ_qᵀ λ = Q the radial
    balance gives λ = |v|² − g y (m = 1, |q| = 1), to 1e-8."""
    q0 = jnp.array([math.sin(0.8), -math.cos(0.8)])
    traj = mbd.simulate(unit_pendulum, q0, jnp.zeros(2), t1=1.5, saveat=16, formulation="augmented_lagrangian")
    v2 = np.sum(np.asarray(traj.qd) ** 2, axis=1)
    np.testing.assert_allclose(traj.lam[:, 0], v2 - 9.81 * np.asarray(traj.q[:, 1]), rtol=0, atol=1e-8)


def _anisotropic_pendulum(dense):
    """Unit rod, masses 1 and 4 on x and y: the mass-orthogonal projections differ
    from the Euclidean ones. `dense`: given as a full mass matrix (the primal form)
    instead of a constant diagonal (the dual form)."""
    inertia = (dict(mass_matrix=lambda q, t, p: jnp.diag(jnp.array([1.0, 4.0]))) if dense
               else dict(mass_diagonal=lambda p: jnp.array([1.0, 4.0])))
    return mbd.Model(("x", "y"), holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]), **inertia)


@pytest.mark.parametrize("dense", [False, True], ids=["dual", "primal"])
def test_projections_are_the_smallest_in_the_kinetic_metric(dense):
    """Closed forms (Lagrange conditions of min ½ Δᵀ M Δ): the velocity correction
    is `−M⁻¹Bᵀ(BM⁻¹Bᵀ)⁻¹(Bq̇* − b)`; the projected position lies on the circle and
    `M (q − q*)` is parallel to `Φ_q(q) = q` (to 1e-12; two Newton steps from a
    drift of 1e-4)."""
    model = _anisotropic_pendulum(dense)
    Mi = np.array([1.0, 0.25])
    # a step's drift: 1e-4 off the circle and along it
    q_star = jnp.array([0.8, 0.6]) * (1 + 1e-4) + 1e-4 * jnp.array([-0.6, 0.8])
    qd_star = jnp.array([0.3, -0.7])
    q, qd = jax.jit(lambda a, b: project_mass_orthogonal(model, a, b, 0.0, model.params))(q_star, qd_star)
    q, qd = np.asarray(q), np.asarray(qd)
    assert abs(q @ q - 1.0) < 1e-12
    d = np.array([1.0, 4.0]) * (q - np.asarray(q_star))
    assert abs(d[0] * q[1] - d[1] * q[0]) < 1e-12
    B = q[None, :]
    want = np.asarray(qd_star) - Mi * B[0] * (B @ np.asarray(qd_star)) / (B @ (Mi * B[0]))
    np.testing.assert_allclose(qd, want, rtol=0, atol=1e-12)


def test_gradient_across_a_singular_passage_matches_finite_differences():
    """∂θ(1 s)/∂m for the A02 N four-bar at N = 2, whose links lie flat (rank drop) at
    t ≈ 0.4 s: reverse mode against central differences with Richardson's
    extrapolation (h = 1e-3 and 2e-3), to 1e-6 relative."""
    ex = n_four_bar(2, t1=1.0)
    model = ex.model
    i = model.index("crank0.phi")

    def final_angle(mass):
        p = {**model.params, "coupler1": {**model.params["coupler1"], "mass": mass}}
        traj = mbd.simulate(model, ex.q0, ex.qd0, t1=1.0, params=p, saveat=2, rtol=1e-12, atol=1e-12,
                            formulation="augmented_lagrangian")
        return traj.q[-1, i]

    f = jax.jit(final_angle)
    assert float(f(1.0)) < -0.5  # past the flat position θ = 0
    grad = float(jax.jit(jax.grad(final_angle))(1.0))

    def central(h):
        return (float(f(1.0 + h)) - float(f(1.0 - h))) / (2 * h)

    fd = (4 * central(1e-3) - central(2e-3)) / 3
    assert abs(grad - fd) <= 1e-6 * abs(fd)


def test_selected_by_name_and_settings_checked():
    from mbdjax._formulation import resolve_formulation

    assert isinstance(resolve_formulation("augmented_lagrangian"), mbd.AugmentedLagrangian)
    for bad in (dict(penalty=-1.0), dict(iterations=0), dict(omega=-1.0), dict(position_iterations=0)):
        with pytest.raises(ValueError, match="AugmentedLagrangian"):
            mbd.AugmentedLagrangian(**bad)
