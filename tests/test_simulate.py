"""simulate(): accuracy, stabilization, differentiability, batching, errors, persistence."""

import warnings

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd
from mbdjax import models


def _pendulum_model(force=0.0):
    # Point mass on a massless rod (Cartesian), optional constant horizontal push F.
    return mbd.Model(
        ("x", "y"), mass_diagonal=lambda p: jnp.stack([p["m"], p["m"]]),
        potential=lambda q, t, p: p["m"] * 9.81 * q[1],
        forces=lambda q, qd, t, p: jnp.stack([p["F"], 0.0 * p["F"]]),
        holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - p["L"] ** 2)]),
        constraint_names=("rod",), params={"m": 1.0, "L": 1.0, "F": force},
    )


@pytest.fixture(scope="module")
def pendulum():
    return _pendulum_model()


@pytest.fixture(scope="module")
def pushed():
    return _pendulum_model(force=2.0)


Q0 = jnp.array([1.0, 0.0])
QD0 = jnp.zeros(2)


def test_conservative_projection_keeps_energy_and_constraints(pendulum):
    # Energy scale m g L = 9.81 J (E(0) = 0 at this start); tolerances tightened so
    # that the integration error is below the 1e-8 relative target (rtol 1e-10 gives
    # ~4e-10 here).
    tr = mbd.simulate(pendulum, Q0, QD0, t1=10.0, rtol=1e-10, atol=1e-12, saveat=101)
    e = tr.energy()
    assert float(jnp.max(jnp.abs(e - e[0]))) / 9.81 < 1e-8
    assert float(jnp.max(jnp.abs(tr.position_residual()))) < 1e-10
    assert float(jnp.max(jnp.abs(tr.velocity_residual()))) < 1e-10
    # The multiplier against the rod tension in closed form. Φ = ½(r² − L²) gives
    # Φ_q = r, so the constraint force on the mass is −λ r, a pull λL toward the pivot.
    # Radial balance: λL + m g y/L = m v²/L; released at rest from y = 0, v² = −2 g y,
    # so λ = −3 m g y / L² (3 m g at the bottom). To 1e-8 of m g.
    y = np.asarray(tr.coordinate("y"))
    np.testing.assert_allclose(np.asarray(tr.lam[:, 0]), -3.0 * 9.81 * y, atol=1e-8 * 9.81)


def test_against_the_angle_form(pendulum):
    # Independent model: the same pendulum in its angle θ (T = ½ m L² θ̇²).
    ang = mbd.Model(("th",), kinetic_energy=lambda q, qd, t, p: 0.5 * qd[0] ** 2,
                    potential=lambda q, t, p: -9.81 * jnp.cos(q[0]))
    a = mbd.simulate(ang, jnp.array([jnp.pi / 2]), jnp.zeros(1), t1=3.0, rtol=1e-11, atol=1e-12, saveat=31)
    c = mbd.simulate(pendulum, Q0, QD0, t1=3.0, rtol=1e-11, atol=1e-12, saveat=31)
    np.testing.assert_allclose(jnp.arctan2(c.q[:, 0], -c.q[:, 1]), a.q[:, 0], atol=1e-8)


def test_default_projection_is_the_closest_point_and_the_tangential_velocity(pendulum):
    """The default stabilization's projection, against closed forms for the unit circle:
    positions go to the nearest point r/|r| (radially, the minimum-norm correction;
    2 Newton iterations from 1e-4 off leave ~1e-16), velocities lose exactly their
    radial part, q̇ − (r·q̇) r (B = rᵀ, b = 0). To 1e-12."""
    r = jnp.array([0.6, -0.8]) * (1.0 + 1e-4)
    v = jnp.array([0.3, 0.7])
    q, qd = mbd.Projection().project(pendulum, r, v, 0.0, pendulum.params)
    unit = r / jnp.linalg.norm(r)
    np.testing.assert_allclose(q, unit, atol=1e-12)
    np.testing.assert_allclose(qd, v - jnp.dot(q, v) * q, atol=1e-12)


@pytest.mark.parametrize("stab", ["none", "baumgarte", mbd.Baumgarte(alpha=10.0, beta=10.0), mbd.Projection(iterations=1)])
def test_stabilizations_bound_drift(pendulum, stab):
    tr = mbd.simulate(pendulum, Q0, QD0, t1=5.0, stabilization=stab, saveat=51, drift_tol=None)
    drift = float(jnp.max(jnp.abs(tr.position_residual())))
    assert drift < (1e-6 if stab == "none" else 1e-8)


def test_dense_and_schur_agree(pendulum):
    a = mbd.simulate(pendulum, Q0, QD0, t1=1.0, formulation=mbd.Augmented(schur=True), saveat=5)
    b = mbd.simulate(pendulum, Q0, QD0, t1=1.0, formulation=mbd.Augmented(schur=False), saveat=5)
    np.testing.assert_allclose(a.q, b.q, atol=1e-12)
    np.testing.assert_allclose(a.lam, b.lam, rtol=1e-9)


def test_grad_wrt_mass_matches_finite_differences(pushed):
    # With a constant push F the motion depends on m through F/m.
    def loss(mass):
        p = dict(pushed.params, m=mass)
        tr = mbd.simulate(pushed, Q0, QD0, t1=1.0, params=p, saveat=2, rtol=1e-11, atol=1e-12)
        return tr.q[-1, 0] + 0.3 * tr.qd[-1, 1]

    g = jax.grad(loss)(jnp.asarray(1.3))
    h = 1e-5
    fd = (loss(1.3 + h) - loss(1.3 - h)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-5)


def test_continuous_adjoint_through_a_constrained_run(pushed):
    """`adjoint=diffrax.BacksolveAdjoint()` (stabilization "none") on the constrained
    pushed pendulum: its gradient equals central differences (h = 1e-5) of the same
    run to 1e-5 relative (the continuous adjoint is as accurate as the tolerances).
    The watch for singular configurations is left out there: it saves the final
    state apart, which the continuous adjoint cannot."""
    def loss(mass, adjoint):
        p = dict(pushed.params, m=mass)
        tr = mbd.simulate(pushed, Q0, QD0, t1=1.0, params=p, saveat=2, rtol=1e-11, atol=1e-12,
                          stabilization="none", adjoint=adjoint)
        return tr.q[-1, 0] + 0.3 * tr.qd[-1, 1]

    g = jax.grad(loss)(jnp.asarray(1.3), diffrax.BacksolveAdjoint())
    h = 1e-5
    fd = (loss(1.3 + h, None) - loss(1.3 - h, None)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-5)


def test_grad_wrt_initial_state(pushed):
    """d y(t1) / d(θ0, ω0) of the pushed pendulum, the start placed on the constraint
    by angle and rate, through the Cartesian model with `jax.grad`; reference: central
    differences (h = 1e-5) of an independent one-angle model (T = ½ m L² θ̇², V = −m g L
    cos θ, generalized push F L cos θ; y = −L cos θ), both at rtol 1e-12. To 1e-6
    relative."""
    F = float(pushed.params["F"])
    tight = dict(rtol=1e-12, atol=1e-13)

    def cartesian(th0, om0):
        q0 = jnp.stack([jnp.sin(th0), -jnp.cos(th0)])
        qd0 = om0 * jnp.stack([jnp.cos(th0), jnp.sin(th0)])
        return mbd.simulate(pushed, q0, qd0, t1=0.5, saveat=2, **tight).q[-1, 1]

    angle = mbd.Model(("th",), kinetic_energy=lambda q, qd, t, p: 0.5 * qd[0] ** 2,
                      potential=lambda q, t, p: -9.81 * jnp.cos(q[0]),
                      forces=lambda q, qd, t, p: jnp.stack([F * jnp.cos(q[0])]))

    def minimal(th0, om0):
        tr = mbd.simulate(angle, jnp.array([th0]), jnp.array([om0]), t1=0.5, saveat=2, **tight)
        return -float(jnp.cos(tr.q[-1, 0]))

    th0, om0, h = 0.7, 0.4, 1e-5
    g = jax.grad(cartesian, argnums=(0, 1))(jnp.asarray(th0), jnp.asarray(om0))
    fd = ((minimal(th0 + h, om0) - minimal(th0 - h, om0)) / (2 * h),
          (minimal(th0, om0 + h) - minimal(th0, om0 - h)) / (2 * h))
    np.testing.assert_allclose(np.array([float(g[0]), float(g[1])]), np.array(fd), rtol=1e-6)


def test_vmap_over_masses_equals_loop(pushed):
    masses = jnp.linspace(0.5, 2.0, 8)

    def final(mass):
        return mbd.simulate(pushed, Q0, QD0, t1=1.0, params=dict(pushed.params, m=mass), saveat=3).q[-1]

    batched = jax.vmap(final)(masses)
    looped = jnp.stack([final(m) for m in masses])
    np.testing.assert_allclose(batched, looped, atol=1e-10)


def test_jit_and_no_recompile_for_new_parameters(pushed):
    compiles = []

    def listener(event, duration, **kw):
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(event)

    run = lambda mass: mbd.simulate(pushed, Q0, QD0, t1=0.5, params=dict(pushed.params, m=mass), saveat=4).q  # noqa: E731
    run(1.0).block_until_ready()
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        for mass in (1.1, 1.7, 2.5):
            run(mass).block_until_ready()  # Python floats: still no recompile
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert compiles == []
    jitted = jax.jit(lambda q0: mbd.simulate(pushed, q0, QD0, t1=0.5, saveat=4).q)
    with pytest.warns(UserWarning, match="staged inside jax.jit"):   # the rank cannot be read: rank-guarded solves
        np.testing.assert_allclose(jitted(Q0), run(jnp.asarray(1.0)), atol=1e-12)


def test_simulate_inside_a_callers_jit_with_inputs_it_closes_over():
    """Every input concrete but the call traced by the caller's `jit`: the start-up
    decisions (consistency check, row selection, massless rates) read the values all
    the same. A point driven along x by x − 0.5 t = 0 and falling under gravity:
    x = 0.5 t, y = −½ g t² in closed form (a quadratic, which Tsit5 integrates to
    rounding); tolerance 1e-10."""
    driven = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2), potential=lambda q, t, p: 9.81 * q[1],
                       holonomic=lambda q, t, p: jnp.stack([q[0] - 0.5 * t]), constraint_names=("drive",))
    run = jax.jit(lambda: mbd.simulate(driven, np.zeros(2), np.array([0.5, 0.0]), t1=0.5, saveat=3))
    with warnings.catch_warnings():      # host arrays: the rows are read, no rank-guarded solves
        warnings.filterwarnings("error", message="simulate: the initial state is staged")
        tr = run()
    t = np.asarray(tr.t)
    np.testing.assert_allclose(np.asarray(tr.q), np.stack([0.5 * t, -0.5 * 9.81 * t**2], axis=1), atol=1e-10)


def test_max_steps_is_a_clear_error(pendulum):
    with pytest.raises(mbd.SimulationError, match=r"max_steps.*The run got to t = [0-9.e-]+ s of t1 = 5 s") as err:
        mbd.simulate(pendulum, Q0, QD0, t1=5.0, max_steps=10)
    assert err.value.reason == "max_steps" and 0.0 <= err.value.time < 5.0
    tr = mbd.simulate(pendulum, Q0, QD0, t1=5.0, max_steps=10, throw=False)
    assert not bool(tr.success)
    assert tr.result == diffrax.RESULTS.max_steps_reached


def test_drift_beyond_tolerance_is_an_error(pendulum):
    with pytest.raises(mbd.SimulationError, match=r"drift_tol.*Worst: row rod with \|Φ\| = ") as err:
        mbd.simulate(pendulum, Q0, QD0, t1=5.0, stabilization="none", rtol=1e-4, atol=1e-6, drift_tol=1e-9)
    assert err.value.reason == "drift" and err.value.names == ("rod",) and 0.0 < err.value.time <= 5.0


def test_a_state_that_turns_non_finite_is_named_with_its_time():
    """Gravity 9.81·sqrt(0.5 − t) is NaN after t = 0.5 s (closed form): with fixed steps
    the state turns NaN there, and the error names the first output time after 0.5 s
    (outputs every 1/199 s: t = 100/199) and the coordinates that went."""
    model = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
                      potential=lambda q, t, p: 9.81 * jnp.sqrt(0.5 - t) * q[1],
                      holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]), constraint_names=("rod",))
    with pytest.raises(mbd.SimulationError, match=r"First non-finite output at t = 0.502513 s: q\[x\], q\[y\]") as err:
        mbd.simulate(model, Q0, QD0, t1=1.0, fixed_step=0.01)
    assert err.value.reason == "non_finite" and err.value.time == pytest.approx(100 / 199, abs=1e-12)
    assert "q[x]" in err.value.names and "qd[y]" in err.value.names


def test_nan_parameters_are_an_error(pendulum):
    # Named before the run, with adaptive steps too (they would otherwise reject every
    # step until max_steps); the inputs' own values are the reference.
    with pytest.raises(mbd.ParameterError, match=r"simulate: parameter m = nan. Give finite values"):
        mbd.simulate(pendulum, Q0, QD0, t1=1.0, params=dict(pendulum.params, m=jnp.nan))
    with pytest.raises(mbd.SimulationError, match=r"qd0\[y\] = inf"):
        mbd.simulate(pendulum, Q0, QD0.at[1].set(jnp.inf), t1=1.0)


def test_bad_arguments(pendulum):
    with pytest.raises(mbd.SimulationError, match="unknown formulation"):
        mbd.simulate(pendulum, Q0, QD0, t1=1.0, formulation="lagrange")
    with pytest.raises(mbd.SimulationError, match="unknown stabilization"):
        mbd.simulate(pendulum, Q0, QD0, t1=1.0, stabilization="magic")
    with pytest.raises(mbd.SimulationError, match="shape"):
        mbd.simulate(pendulum, jnp.zeros(3), QD0, t1=1.0)
    with pytest.raises(mbd.SimulationError, match="progress must be"):
        mbd.simulate(pendulum, Q0, QD0, t1=1.0, progress="bar")


def test_inconsistent_initial_state_is_refused_or_projected_by_request(pendulum):
    """An initial state off the rod raises by default, naming the row; with
    consistent="project" it starts from the nearest point on the unit circle, r/|r|,
    with the radial part of the velocity removed, v − (r̂·v) r̂ (closed forms, to 1e-12),
    and a warning says what moved. A consistent state runs with no warning."""
    import warnings

    r, v = jnp.array([0.9, 0.3]), jnp.array([0.4, 1.0])
    with pytest.raises(mbd.SimulationError, match=r"not on the constraints \(position constraints Φ\(q0, t0\): "
                                                  r"rod = -0.05; velocity constraints B q̇0 − b: rod = 0.66.*initial_conditions"):
        mbd.simulate(pendulum, r, v, t1=1.0, saveat=11)
    with pytest.warns(UserWarning, match=r"projected the initial state.*q0\[x\] 0.9 → 0.948683"):
        tr = mbd.simulate(pendulum, r, v, t1=1.0, saveat=11, consistent="project")
    unit = r / jnp.linalg.norm(r)
    np.testing.assert_allclose(tr.q[0], unit, atol=1e-12)
    np.testing.assert_allclose(tr.qd[0], v - jnp.dot(unit, v) * unit, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mbd.simulate(pendulum, Q0, QD0, t1=1.0, saveat=11)
    with pytest.raises(mbd.SimulationError, match="consistent must be 'check' or 'project'"):
        mbd.simulate(pendulum, Q0, QD0, t1=1.0, consistent="fix")


def test_save_and_load_roundtrip(pendulum, tmp_path):
    tr = mbd.simulate(pendulum, Q0, QD0, t1=1.0, saveat=11)
    path = tr.save(tmp_path / "traj.npz")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        tr.save(path)
    back = mbd.Trajectory.load(path)
    np.testing.assert_array_equal(back.q, tr.q)
    np.testing.assert_array_equal(back.lam, tr.lam)
    assert back.coordinates == ("x", "y") and back.constraint_names == ("rod",)
    np.testing.assert_allclose(back.params["L"], 1.0)
    with pytest.raises(mbd.MbdjaxError, match="no model attached"):
        back.energy()
    attached = mbd.Trajectory.load(path, model=pendulum)
    np.testing.assert_allclose(attached.energy(), tr.energy(), atol=1e-14)
    assert dict(back.settings)["formulation"] == "Augmented"


def test_unconstrained_model_and_accessors():
    osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([2.0]), potential=lambda q, t, p: 4.0 * q[0] ** 2)
    tr = mbd.simulate(osc, jnp.array([1.0]), jnp.zeros(1), t1=1.0, saveat=11, rtol=1e-11, atol=1e-12)
    # x'' = −(8/2) x  ⇒  x = cos(2 t)
    np.testing.assert_allclose(tr.coordinate("x"), jnp.cos(2 * tr.t), atol=1e-9)
    assert tr.lam is None


def test_derived_outputs_of_a_batched_trajectory(pushed):
    # Each member's energy uses its own mass: compare with separate runs.
    masses = jnp.array([0.7, 1.4])
    run = lambda m: mbd.simulate(pushed, Q0, QD0, t1=0.5, params=dict(pushed.params, m=m), saveat=5)  # noqa: E731
    batched = jax.vmap(run)(masses)
    assert batched.q.shape == (2, 5, 2)
    np.testing.assert_allclose(batched.energy()[1], run(masses[1]).energy(), atol=1e-10)
    assert batched.position_residual().shape == (2, 5, 1)
    np.testing.assert_allclose(batched.work()[0], run(masses[0]).work(), atol=1e-10)


def test_projection_correction_is_the_minimum_norm_one_for_full_and_deficient_rows():
    """The projection's correction `Jᵀ(JJᵀ)⁻¹r` (Cholesky when J has full row rank, SVD
    least squares when a row is redundant) equals the pseudo-inverse solution `J⁺r`
    (NumPy's SVD pinv as the reference; round-off tolerance 1e-12)."""
    from mbdjax._stabilization.projection import _min_norm_correction

    rng = np.random.default_rng(0)
    J = rng.standard_normal((4, 7))
    x = rng.standard_normal(7)
    for rows in (J, np.vstack([J, J[0] + J[1]])):      # full rank; one row the sum of two
        r = rows @ x
        dx = np.asarray(_min_norm_correction(jnp.asarray(rows), jnp.asarray(r)))
        np.testing.assert_allclose(dx, np.linalg.pinv(rows) @ r, atol=1e-12)
        np.testing.assert_allclose(rows @ dx, r, atol=1e-12)


def _chain_phi(q):
    """Φ of the planar chain of 1 m rods (coordinates: each rod's centre x, y and angle
    φ; rod 1 starts at the origin, rod i starts where rod i−1 ends), written out in
    NumPy: the reference for the projection test below."""
    x, y, phi = q[0::3], q[1::3], q[2::3]
    sx, sy = x - 0.5 * np.cos(phi), y - 0.5 * np.sin(phi)         # start points
    ex, ey = x + 0.5 * np.cos(phi), y + 0.5 * np.sin(phi)         # end points
    return np.concatenate([[sx[0], sy[0]], np.stack([sx[1:] - ex[:-1], sy[1:] - ey[:-1]], 1).reshape(-1)])


def _chain_jacobian(q):
    k = len(q) // 3
    J = np.zeros((2 * k, 3 * k))
    for i in range(k):
        c, s = 0.5 * np.cos(q[3 * i + 2]), 0.5 * np.sin(q[3 * i + 2])
        J[2 * i, 3 * i], J[2 * i, 3 * i + 2] = 1.0, s               # start of rod i
        J[2 * i + 1, 3 * i + 1], J[2 * i + 1, 3 * i + 2] = 1.0, -c
        if i + 1 < k:                                                 # minus the end of rod i
            J[2 * i + 2, 3 * i], J[2 * i + 2, 3 * i + 2] = -1.0, s
            J[2 * i + 3, 3 * i + 1], J[2 * i + 3, 3 * i + 2] = -1.0, -c
    return J


@pytest.mark.parametrize("members", [False, True])
def test_step_loop_and_batch_members_have_no_lapack_call(members):
    """A LAPACK call inside the step loop keeps XLA from compiling the loop into one
    kernel (`mbdjax._numerics.xla_cpu`), so a projected step of the 10-link chain (20 rows, below
    `BLOCK_GRAM_MIN_ROWS`) solves its Gram matrices by the block-tridiagonal solve: its
    program holds no `cholesky` or `triangular_solve`, for one trajectory and for a
    batch's members (whose stabilization has `block_solves`) alike. The projection of a
    saved point is traced outside the step: one trajectory's keeps the dense Cholesky
    (it compiles faster), a batch member's uses the block solve (half the batched dense
    Cholesky's cost)."""
    from mbdjax._integrate import resolve_formulation, resolve_stabilization
    from mbdjax._redundancy import restrict, select_rows
    from mbdjax._numerics.solve import ProjectedSolver

    ex = models.pendulum_chain(10)
    p = ex.model.params
    work = restrict(ex.model, select_rows(ex.model, ex.q0, 0.0, p))
    form = resolve_formulation("augmented").with_rows(True).prepare(work, p, ex.q0, 0.0)
    stab = resolve_stabilization("projection").with_rows(True)
    stab = stab.with_block_solves() if members else stab
    y0 = jnp.concatenate([ex.q0, ex.qd0])
    term = diffrax.ODETerm(lambda t, y, args: form.vector_field(work, t, y, args, stab))
    project = lambda t, y, args: form.project(work, t, y, args, stab)  # noqa: E731
    # the step's projection as the formulations build it (`AbstractFormulation.integrate`)
    project_step = lambda t, y, args: form.project(work, t, y, args, stab.with_block_solves())  # noqa: E731
    solver = ProjectedSolver(solver=diffrax.Tsit5(), project=project_step)
    state = solver.init(term, 0.0, 1e-3, y0, p)
    step = str(jax.make_jaxpr(lambda y: solver.step(term, 0.0, 1e-3, y, p, state, False)[0])(y0))
    saved = str(jax.make_jaxpr(lambda y: project(0.0, y, p))(y0))

    def lapack(jaxpr):
        return "cholesky" in jaxpr or "triangular_solve" in jaxpr

    assert not lapack(step)
    assert lapack(saved) == (not members)


@pytest.mark.parametrize("form", ["dense", "blocks"])
def test_projection_with_independent_rows_lands_on_the_constraints(form):
    """The default projection for independent rows (one Jacobian and one factorization
    per step, `_project_independent`) on a 4-rod chain displaced 1e-6 off its
    constraints: Φ (written out in NumPy, `_chain_phi`) is below 1e-15 after the two
    default Newton steps, and the correction lies in the row space of Φ_q at the start
    (the minimum-norm property: its least-squares remainder in NumPy below 1e-15).
    `blocks`: as the step of one trajectory's loop projects (`block_solves`), solving
    the chain's Gram matrix by the block-tridiagonal solve below `BLOCK_GRAM_MIN_ROWS`
    rows too."""
    from mbdjax._stabilization.projection import Projection, _uses_pattern

    ex = models.pendulum_chain(4)
    model = ex.model
    assert _uses_pattern(model, True, form == "blocks") == (form == "blocks")
    angles = np.array([0.3, -0.5, 1.1, 0.2])
    q = np.zeros(12)
    tip = np.zeros(2)
    for i, a in enumerate(angles):
        d = np.array([np.cos(a), np.sin(a)])
        q[3 * i:3 * i + 2], q[3 * i + 2] = tip + 0.5 * d, a
        tip = tip + d
    assert np.max(np.abs(_chain_phi(q))) < 1e-15
    q_off = q + 1e-6 * np.random.default_rng(1).standard_normal(12)
    qd = np.random.default_rng(2).standard_normal(12)
    stab = Projection().with_rows(True)
    stab = stab.with_block_solves() if form == "blocks" else stab
    qp, qdp = jax.jit(lambda q, qd: stab.project(model, q, qd, 0.0, model.params))(q_off, qd)
    qp, qdp = np.asarray(qp), np.asarray(qdp)
    assert np.max(np.abs(_chain_phi(qp))) < 1e-15
    J0 = _chain_jacobian(q_off)
    y = np.linalg.lstsq(J0.T, qp - q_off, rcond=None)[0]
    assert np.max(np.abs(J0.T @ y - (qp - q_off))) < 1e-15
    # velocities: on Φ_q q̇ = 0 (scleronomic) at the projected q, to round-off
    assert np.max(np.abs(_chain_jacobian(qp) @ qdp)) < 1e-13


@pytest.mark.parametrize("form", ["dense", "blocks"])
def test_velocity_projection_derivative_matches_finite_differences(form):
    """The velocity projection `q̇* = q̇ − Jᵀ(JJᵀ)⁻¹ J q̇` (scleronomic chain, so b = 0)
    has its own derivative rule (`_project_velocities_independent`): its Jacobian with
    respect to (q, q̇), by forward and by reverse mode, equals central differences
    (h = 1e-6) of the same projection written out in NumPy (`_chain_jacobian`), at a
    4-rod chain off its velocity constraints. Tolerance 1e-8 (central differences'
    truncation and round-off are near 1e-10 here)."""
    from mbdjax._stabilization.projection import _project_velocities_independent

    model = models.pendulum_chain(4).model
    rng = np.random.default_rng(3)
    q, qd = rng.standard_normal(12), rng.standard_normal(12)

    def reference(x):
        J = _chain_jacobian(x[:12])
        return x[12:] - J.T @ np.linalg.solve(J @ J.T, J @ x[12:])

    x = np.concatenate([q, qd])
    h = 1e-6
    fd = np.stack([(reference(x + h * e) - reference(x - h * e)) / (2 * h) for e in np.eye(24)], axis=1)
    blocks = form == "blocks"  # the pattern's block-tridiagonal solve, else the dense Cholesky
    f = lambda x: _project_velocities_independent(model, x[:12], x[12:], 0.0, model.params, blocks)  # noqa: E731
    np.testing.assert_allclose(np.asarray(f(x)), reference(x), atol=1e-13)
    for jac in (jax.jacfwd, jax.jacrev):
        np.testing.assert_allclose(np.asarray(jax.jit(jac(f))(x)), fd, atol=1e-8)


def _chain_accelerations(x, masses):
    """q̈ of the planar chain of 1 m rods (`_chain_phi`; inertia 1/12 kg m² each, masses
    given, gravity 9.81 m/s² along −y) at `x = [q; q̇]`, from the dense augmented system
    [[M, Φ_qᵀ], [Φ_q, 0]] [q̈; λ] = [Q; γ] in NumPy, with γ = −(Φ_q q̇)_q q̇ written out:
    the start point r − ½u(φ) of rod i contributes −½ φ̇ᵢ² uᵢ, the end point of rod
    i − 1 (subtracted) −½ φ̇ᵢ₋₁² uᵢ₋₁, u = (cos φ, sin φ)."""
    k = len(x) // 6
    q, qd = x[:3 * k], x[3 * k:]
    phi, w = q[2::3], qd[2::3]
    u = np.stack([np.cos(phi), np.sin(phi)], axis=1)
    gamma = -0.5 * (w[:, None] ** 2) * u
    gamma[1:] -= 0.5 * (w[:-1, None] ** 2) * u[:-1]
    M = np.diag(np.repeat(masses, 3) * np.tile([1.0, 1.0, 0.0], k) + np.tile([0.0, 0.0, 1.0 / 12.0], k))
    Q = np.zeros(3 * k)
    Q[1::3] = -9.81 * masses
    J = _chain_jacobian(q)
    K = np.block([[M, J.T], [J, np.zeros((2 * k, 2 * k))]])
    return np.linalg.solve(K, np.concatenate([Q, gamma.reshape(-1)]))[:3 * k]


@pytest.mark.parametrize("form", ["dense", "blocks"])
def test_schur_accelerations_derivative_matches_finite_differences(form):
    """The augmented formulation's Schur solve for independent rows has its own
    derivative rule (the linear system differentiated and solved with the primal
    factorization, `augmented._schur_accelerations`): on a 3-rod chain at a state off
    its constraints, q̈ equals the dense NumPy solve (`_chain_accelerations`) to 1e-12,
    and its Jacobian with respect to (q, q̇) and the three masses, by forward and by
    reverse mode, equals central differences (h = 1e-6) of that NumPy solve to 1e-7
    (the differences' own error is near 1e-9 here)."""
    import copy

    from mbdjax._formulation.augmented import Augmented
    from mbdjax._stabilization import resolve_stabilization

    model = models.pendulum_chain(3).model
    if form == "blocks":
        model = copy.copy(model)
        object.__setattr__(model, "holonomic_jacobian_fn", None)
    form_ = Augmented(schur=True, redundant=False)
    stab = resolve_stabilization("none")
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.uniform(-1.0, 1.0, 9), rng.standard_normal(9)])
    masses = np.array([1.0, 1.5, 0.7])

    def f(x, m):
        p = {**model.params, **{f"link{i + 1}": {**model.params[f"link{i + 1}"], "mass": m[i]} for i in range(3)}}
        return form_.accelerations(model, x[:9], x[9:], 0.0, p, stab)[0]

    np.testing.assert_allclose(np.asarray(f(x, masses)), _chain_accelerations(x, masses), atol=1e-12)
    z = np.concatenate([x, masses])
    ref = lambda z: _chain_accelerations(z[:18], z[18:])  # noqa: E731
    h = 1e-6
    fd = np.stack([(ref(z + h * e) - ref(z - h * e)) / (2 * h) for e in np.eye(21)], axis=1)
    g = lambda z: f(z[:18], z[18:])  # noqa: E731
    for jac in (jax.jacfwd, jax.jacrev):
        np.testing.assert_allclose(np.asarray(jax.jit(jac(g))(z)), fd, atol=1e-7 * np.max(np.abs(fd)))


def test_derivative_rules_along_some_inputs_only():
    """The derivative rules take symbolic zeros (inputs without a tangent are held
    fixed, `mbdjax._tracing.jvp_of_perturbed`), so each is checked along one input at
    a time, against central differences (h = 1e-6) of the NumPy references:
    the Schur solve's q̈ (`_chain_accelerations`) along the masses alone and along q̇
    alone, tolerance 1e-7 of the largest entry; the velocity projection along q alone
    and along q̇ alone, 1e-8 (3-rod chain, `_chain_jacobian`); and the position
    projection along q alone at a configuration on the constraints, where its
    derivative is the orthogonal projector onto the null space of Φ_q: its Jacobian
    times Φ_qᵀ vanishes to 1e-12 and it keeps Φ_q-null vectors (NumPy SVD), to 1e-12."""
    from mbdjax._formulation.augmented import Augmented
    from mbdjax._stabilization import resolve_stabilization
    from mbdjax._stabilization.projection import _project_independent, _project_velocities_independent

    model = models.pendulum_chain(3).model
    form_ = Augmented(schur=True, redundant=False)
    stab = resolve_stabilization("none")
    rng = np.random.default_rng(5)
    q, qd = rng.uniform(-1.0, 1.0, 9), rng.standard_normal(9)
    masses = np.array([1.0, 1.5, 0.7])

    def accelerations(q, qd, m):
        p = {**model.params, **{f"link{i + 1}": {**model.params[f"link{i + 1}"], "mass": m[i]} for i in range(3)}}
        return form_.accelerations(model, q, qd, 0.0, p, stab)[0]

    def central(f, x):
        h = 1e-6
        return np.stack([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(len(x))], axis=1)

    cases = [
        (lambda m: accelerations(q, qd, m), lambda m: _chain_accelerations(np.concatenate([q, qd]), m), masses, 1e-7),
        (lambda v: accelerations(q, v, masses), lambda v: _chain_accelerations(np.concatenate([q, v]), masses), qd,
         1e-7),
    ]

    def velocity_reference(x, v):
        J = _chain_jacobian(x)
        return v - J.T @ np.linalg.solve(J @ J.T, J @ v)

    for blocks in (False, True):
        cases += [
            (lambda x, b=blocks: _project_velocities_independent(model, x, qd, 0.0, model.params, b),
             lambda x: velocity_reference(x, qd), q, 1e-8),
            (lambda v, b=blocks: _project_velocities_independent(model, q, v, 0.0, model.params, b),
             lambda v: velocity_reference(q, v), qd, 1e-8),
        ]
    for f, reference, x, tol in cases:
        fd = central(reference, x)
        for jac in (jax.jacfwd, jax.jacrev):
            np.testing.assert_allclose(np.asarray(jax.jit(jac(f))(x)), fd, atol=tol * np.max(np.abs(fd)))
    # positions: on the constraints (after the projection) the derivative is the
    # orthogonal projector onto the null space of Φ_q
    q_on, tip = np.zeros(9), np.zeros(2)
    for i, a in enumerate([0.4, -0.7, 1.2]):
        d = np.array([np.cos(a), np.sin(a)])
        q_on[3 * i:3 * i + 2], q_on[3 * i + 2] = tip + 0.5 * d, a
        tip = tip + d
    assert np.max(np.abs(_chain_phi(q_on))) < 1e-15
    J = _chain_jacobian(q_on)
    null = np.linalg.svd(J)[2][J.shape[0]:].T
    for blocks in (False, True):
        P = np.asarray(jax.jit(jax.jacfwd(lambda x, b=blocks: _project_independent(model, x, 0.0, model.params, 2,
                                                                                     b)))(q_on))
        assert np.max(np.abs(P @ J.T)) < 1e-12
        np.testing.assert_allclose(P @ null, null, atol=1e-12)


def test_fixed_steps(pendulum):
    """`fixed_step=h` takes exactly (t1 − t0)/h steps; Tsit5 at h = 1 ms on the unit
    pendulum is within 1e-9 of the adaptive rtol-1e-11 run (fifth order: h⁵ ≈ 1e-15
    per step); bad steps are clear errors."""
    ref = mbd.simulate(pendulum, Q0, QD0, t1=1.0, saveat=5, rtol=1e-11, atol=1e-13)
    fixed = mbd.simulate(pendulum, Q0, QD0, t1=1.0, saveat=5, fixed_step=1e-3)
    assert int(fixed.num_steps) == 1000
    np.testing.assert_allclose(fixed.q, ref.q, atol=1e-9)
    assert dict(fixed.settings)["fixed_step"] == 1e-3
    with pytest.raises(mbd.SimulationError, match="positive step"):
        mbd.simulate(pendulum, Q0, QD0, t1=1.0, fixed_step=-1e-3)
    with pytest.raises(mbd.SimulationError, match="raise max_steps"):
        mbd.simulate(pendulum, Q0, QD0, t1=1.0, fixed_step=1e-4, max_steps=1000)


def test_redundant_mechanism_moves_as_its_one_degree_of_freedom():
    """The parallelogram with a third parallel link: 12 rows of rank 11, so the Schur
    complement is singular and the augmented solve takes least squares (the motion is
    unique, the multipliers are not). Reference: its one-angle Lagrangian, three
    0.5 m, 1 kg rods about their pivots (I = m a²/3 each) and a 2 kg coupler that
    translates on a circle of radius a, θ̈ = −(3 m a/2 + m_c a) g cos θ / (m a² + m_c a²),
    integrated by scipy at rtol 1e-12; 1e-8 in θ over 0.3 s (before the linkage
    lies flat, a singular configuration)."""
    from scipy.integrate import solve_ivp

    from mbdjax import models

    ex = models.get("parallelogram-redundant")
    model = ex.model
    ts = np.linspace(0.0, 0.3, 7)
    traj = mbd.simulate(model, ex.q0, ex.qd0, t1=0.3, saveat=ts, rtol=1e-11, atol=1e-13)
    assert dict(traj.settings)["redundant_rows"] == "link_coupler.y"
    a, m, mc, g = 0.5, 1.0, 2.0, 9.81
    k = (1.5 * m * a + mc * a) * g / (m * a**2 + mc * a**2)
    ref = solve_ivp(lambda t, y: [y[1], -k * np.cos(y[0])], (0.0, 0.3), [np.pi / 3, 0.0],
                    t_eval=ts, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(traj.q[:, model.index("crank.phi")], ref.y[0], rtol=0, atol=1e-8)
    np.testing.assert_allclose(traj.q[:, model.index("link.phi")], ref.y[0], rtol=0, atol=1e-8)
    assert float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-10
