"""Tests of the planar front end `mbdjax.planar` (Haug, ch. 3, §4.4, §6.3)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd
from mbdjax import kinematics as kin
from mbdjax._stabilization import NoStabilization
from mbdjax.planar import Mechanism
from mbdjax.planar._joints import KINDS

G = 9.81


# ----------------------------------------------------------------- fixtures
def _every_joint_mechanism():
    """Three bodies and every joint and driver kind, some on ground, some body-body."""
    mech = Mechanism(gravity=(0.3, -9.81))
    mech.body("a", mass=1.0, inertia=0.1)
    mech.body("b", mass=2.0, inertia=0.2)
    mech.body("c", mass=0.5, inertia=0.05)
    mech.revolute("rev_ground", "ground", (0.1, -0.2), "a", (-0.3, 0.05))
    mech.revolute("rev", "a", (0.4, 0.1), "b", (-0.2, 0.3))
    mech.translational("slide", "b", (0.1, 0.2), "c", (-0.1, 0.05), (2.0, 0.5), angle=0.3)
    mech.translational("slide_ground", "ground", (0.2, 0.0), "c", (0.0, 0.1), (0.0, 1.0))
    mech.distance("rod", "a", (0.2, -0.1), "c", (0.1, 0.3), 0.7)
    mech.fix("hold", "b", ("x", "phi"), values=(0.4, -0.2))
    mech.drive_angle("motor", "a", "b", lambda t, p: p["motor"]["amp"] * jnp.sin(2.0 * t) + 0.1 * t**2,
                     params={"amp": 0.3})
    mech.drive_distance("piston", "ground", (0.5, 0.5), "c", (0.2, -0.1),
                        lambda t, p: 0.5 + 0.1 * jnp.cos(3.0 * t))
    return mech


@pytest.fixture(scope="module")
def every_joint():
    mech = _every_joint_mechanism()
    model = mech.build()
    p = model.params
    fns = {
        "phi": jax.jit(lambda q, t: kin.holonomic(model, q, t, p)),
        "jac": jax.jit(lambda q, t: kin.holonomic_jacobian(model, q, t, p)),
        "jacfwd": jax.jit(jax.jacfwd(lambda q, t: kin.holonomic(model, q, t, p))),
        "gamma": jax.jit(lambda q, qd, t: kin.gamma(model, q, qd, t, p)),
    }
    return mech, model, fns


def _rows_of(model, kind):
    meta = model.metadata["joints"]
    return [model.constraint_names.index(r) for name, info in meta.items() if info["kind"] == kind
            for r in info["rows"]]


def _path(n):
    """A smooth arbitrary motion q(t) and its exact derivatives."""
    k = np.arange(1, n + 1)
    qa, qb, qc = 0.2 * np.cos(k), 0.3 * np.sin(1.7 * k), 0.25 * np.cos(0.9 * k + 0.3)
    w = 0.5 + 0.1 * k

    def q(t):
        return qa + qb * np.sin(w * t) + qc * np.cos(2.0 * t)

    def qd(t):
        return qb * w * np.cos(w * t) - 2.0 * qc * np.sin(2.0 * t)

    def qdd(t):
        return -qb * w**2 * np.sin(w * t) - 4.0 * qc * np.cos(2.0 * t)

    return q, qd, qdd


ALL_KINDS = sorted(KINDS)


# ------------------------------------------------------------- structure
def test_coordinates_rows_and_params_are_named_after_parts(every_joint):
    mech, model, _ = every_joint
    assert model.coordinates == ("a.x", "a.y", "a.phi", "b.x", "b.y", "b.phi", "c.x", "c.y", "c.phi")
    assert mech.index("b.phi") == model.index("b.phi") == 5
    assert model.constraint_names == (
        "rev_ground.x", "rev_ground.y", "rev.x", "rev.y", "slide.perp", "slide.rot",
        "slide_ground.perp", "slide_ground.rot", "rod", "hold.x", "hold.phi", "motor", "piston",
    )
    p = model.params
    assert float(p["b"]["mass"]) == 2.0 and float(p["c"]["inertia"]) == 0.05
    np.testing.assert_array_equal(p["rev"]["point_j"], [-0.2, 0.3])
    np.testing.assert_array_equal(p["slide"]["axis_i"], [2.0, 0.5])
    assert float(p["slide"]["angle"]) == 0.3 and float(p["rod"]["length"]) == 0.7
    np.testing.assert_array_equal(p["hold"]["values"], [0.4, -0.2])
    assert float(p["motor"]["amp"]) == 0.3
    np.testing.assert_array_equal(p["gravity"], [0.3, -9.81])
    np.testing.assert_array_equal(model.mass_matrix(jnp.zeros(9)).diagonal(),
                                  [1, 1, 0.1, 2, 2, 0.2, 0.5, 0.5, 0.05])
    assert model.metadata["front_end"] == "planar"
    assert model.metadata["bodies"] == ("a", "b", "c")
    assert set(model.reaction_fns) == set(mech.joints)


def test_constraint_values_match_haug_formulas(every_joint):
    """Rows evaluated by hand from Haug ch. 3 (eqs. 3.3.8, 3.3.10, §3.3.3, §3.5) at one q."""
    _, model, fns = every_joint
    q = np.array([0.3, -0.1, 0.7, 0.9, 0.4, -0.5, 0.2, 0.8, 1.1])
    t = 0.4
    phi = np.asarray(fns["phi"](q, t))

    def A(a):
        return np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])

    r = {"a": q[0:2], "b": q[3:5], "c": q[6:8], "ground": np.zeros(2)}
    ang = {"a": q[2], "b": q[5], "c": q[8], "ground": 0.0}

    def P(body, s):
        return r[body] + A(ang[body]) @ np.array(s)

    Rot = np.array([[0.0, -1.0], [1.0, 0.0]])
    expect = np.concatenate([
        P("ground", (0.1, -0.2)) - P("a", (-0.3, 0.05)),
        P("a", (0.4, 0.1)) - P("b", (-0.2, 0.3)),
        [(Rot @ A(ang["b"]) @ np.array([2.0, 0.5])) @ (P("c", (-0.1, 0.05)) - P("b", (0.1, 0.2))),
         ang["c"] - ang["b"] - 0.3],
        [(Rot @ np.array([0.0, 1.0])) @ (P("c", (0.0, 0.1)) - P("ground", (0.2, 0.0))), ang["c"]],
        [0.5 * (np.sum((P("c", (0.1, 0.3)) - P("a", (0.2, -0.1))) ** 2) - 0.7**2)],
        [q[3] - 0.4, q[5] + 0.2],
        [ang["b"] - ang["a"] - (0.3 * np.sin(2 * t) + 0.1 * t**2)],
        [0.5 * (np.sum((P("c", (0.2, -0.1)) - P("ground", (0.5, 0.5))) ** 2) - (0.5 + 0.1 * np.cos(3 * t)) ** 2)],
    ])
    np.testing.assert_allclose(phi, expect, rtol=1e-13, atol=1e-14)  # same formulas: round-off only


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_jacobian_blocks_equal_jacfwd(every_joint, kind):
    """The assembled per-joint blocks equal jax.jacfwd of the rows (exact up to round-off)."""
    _, model, fns = every_joint
    rows = _rows_of(model, kind)
    assert rows
    q, _, _ = _path(model.n)
    for t in (0.0, 0.7, 2.3):
        J = np.asarray(fns["jac"](q(t), t))
        ref = np.asarray(fns["jacfwd"](q(t), t))
        np.testing.assert_allclose(J[rows], ref[rows], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_local_blocks_equal_jacfwd_of_local_rows(kind):
    """Each kind's analytic (r, 6) block equals jacfwd of its local rows, ground columns included."""
    spec = KINDS[kind]
    rng = np.random.default_rng(3)
    jp = {"point_i": rng.normal(size=2), "point_j": rng.normal(size=2), "axis_i": rng.normal(size=2),
          "angle": 0.4, "length": 0.8, "select": np.array([0.0, 0.0, 1.0]), "value": 0.3}
    jp = {k: jnp.asarray(jp[k]) for k in spec.keys}
    for _ in range(3):
        qi, qj = jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=3))
        Ji, Jj = jax.jacfwd(spec.local, argnums=(0, 1))(qi, qj, jp, 0.2)
        np.testing.assert_allclose(spec.jac(qi, qj, jp), np.concatenate([Ji, Jj], axis=1), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_gamma_equals_second_derivative_along_a_path(every_joint, kind):
    """Along any path, d²Φ/dt² = Φ_q q̈ − γ (THEORY §1). d²Φ/dt² by a 4th-order central
    difference, h = 1e-3: truncation ~h⁴ ≈ 1e-12, round-off ~1e-16/h² ≈ 1e-10; rel. tol 1e-6."""
    _, model, fns = every_joint
    rows = _rows_of(model, kind)
    q, qd, qdd = _path(model.n)
    h = 1e-3
    for t in (0.3, 1.1, 2.6):
        f = [np.asarray(fns["phi"](q(t + k * h), t + k * h)) for k in (-2, -1, 0, 1, 2)]
        fd = (-f[0] + 16 * f[1] - 30 * f[2] + 16 * f[3] - f[4]) / (12 * h * h)
        exact = np.asarray(fns["jac"](q(t), t)) @ qdd(t) - np.asarray(fns["gamma"](q(t), qd(t), t))
        np.testing.assert_allclose(exact[rows], fd[rows], rtol=1e-6, atol=1e-6)


def test_nu_is_minus_phi_t_of_the_drivers(every_joint):
    """ν = −Φ_t: only the driver rows depend on t; values differentiated by hand."""
    _, model, _ = every_joint
    q = jnp.asarray(_path(model.n)[0](0.5))
    t = 0.5
    nu = np.asarray(kin.nu(model, q, t, model.params))
    names = model.constraint_names
    f = 0.5 + 0.1 * np.cos(3 * t)
    expect = np.zeros(model.m_h)
    expect[names.index("motor")] = 0.6 * np.cos(2 * t) + 0.2 * t  # d/dt of the angle drive
    expect[names.index("piston")] = f * (-0.3 * np.sin(3 * t))  # −∂/∂t (dᵀd − f²)/2 = f f'
    np.testing.assert_allclose(nu, expect, rtol=1e-13, atol=1e-15)


# ------------------------------------------------------ slider-crank kinematics
def test_slider_crank_kinematics_match_closed_form():
    """x = r cosθ + sqrt(L² − r² sin²θ), θ = ωt, and its first two time derivatives
    (differentiated by hand); Newton converged to 1e-12, so agreement to 1e-10."""
    from mbdjax import models

    ex = models.slider_crank(driven=True)
    r, L, w = 0.1, 0.3, 2 * math.pi
    ts = np.linspace(0.0, 1.0, 23)
    q, qd, qdd = (np.asarray(a) for a in mbd.kinematic_analysis(ex.model, ex.q0, ts))
    i = ex.model.index("slider.x")
    th = w * ts
    s, c = np.sin(th), np.cos(th)
    root = np.sqrt(L**2 - r**2 * s**2)
    x = r * c + root
    xd = w * (-r * s - r**2 * s * c / root)
    xdd = w**2 * (-r * c - r**2 * (c**2 - s**2) / root - r**4 * s**2 * c**2 / root**3)
    np.testing.assert_allclose(q[:, i], x, atol=1e-10)
    np.testing.assert_allclose(qd[:, i], xd, atol=1e-10)
    np.testing.assert_allclose(qdd[:, i], xdd, atol=1e-10)
    np.testing.assert_allclose(q[:, ex.model.index("crank.phi")], th, atol=1e-10)
    np.testing.assert_allclose(q[:, ex.model.index("slider.y")], 0.0, atol=1e-12)


# ------------------------------------------------------------------ reactions
def _rod(body_i_is_rod, phi, extra=None):
    mech = Mechanism()
    mech.body("rod", mass=2.0, inertia=2.0 / 12.0)  # uniform rod, L = 1 m
    if body_i_is_rod:
        mech.revolute("pin", "rod", (-0.5, 0.0), "ground", (0.0, 0.0))
    else:
        mech.revolute("pin", "ground", (0.0, 0.0), "rod", (-0.5, 0.0))
    if extra:
        extra(mech)
    model = mech.build()
    q = jnp.array([0.5 * math.cos(phi), 0.5 * math.sin(phi), phi])
    return model, q


def _multipliers(model, q):
    form = mbd.Augmented(schur=False).prepare(model, model.params, q, 0.0)
    return form.accelerations(model, q, jnp.zeros_like(q), 0.0, model.params, NoStabilization())


def test_hanging_pendulum_reaction_holds_its_weight():
    """At rest hanging down, the pin carries the weight: (0, m g) on the rod, no torque (statics)."""
    model, q = _rod(True, -math.pi / 2)
    qdd, lam = _multipliers(model, q)
    F, n = model.reaction_fns["pin"](q, lam, model.params)
    np.testing.assert_allclose(qdd, 0.0, atol=1e-12)
    np.testing.assert_allclose(F, [0.0, 2.0 * G], atol=1e-12)
    assert abs(float(n)) < 1e-12


def test_reaction_with_ground_as_body_i_is_the_reaction_on_ground():
    """Documented convention: the reaction is on body_i, ground included: (0, −m g)."""
    model, q = _rod(False, -math.pi / 2)
    _, lam = _multipliers(model, q)
    F, n = model.reaction_fns["pin"](q, lam, model.params)
    np.testing.assert_allclose(F, [0.0, -2.0 * G], atol=1e-12)
    assert abs(float(n)) < 1e-12


def test_released_horizontal_rod_pin_reaction_is_quarter_weight():
    """A uniform rod pinned at one end, released from rest horizontal: α = 3g/2L and the
    pin force is m g/4 upward (classical rigid-body result, e.g. Meriam & Kraige)."""
    model, q = _rod(True, 0.0)
    qdd, lam = _multipliers(model, q)
    F, n = model.reaction_fns["pin"](q, lam, model.params)
    np.testing.assert_allclose(qdd[2], -1.5 * G, rtol=1e-12)
    np.testing.assert_allclose(F, [0.0, 2.0 * G / 4], atol=1e-12)
    assert abs(float(n)) < 1e-12


def test_driver_reaction_is_the_holding_torque():
    """A drive_angle holding the horizontal rod carries the torque m g L/2 on the rod;
    with ground as body_i it reports −m g L/2 (on ground), and no force."""
    model, q = _rod(True, 0.0, lambda m: m.drive_angle("hold", "ground", "rod", lambda t, p: 0.0))
    qdd, lam = _multipliers(model, q)
    F, n = model.reaction_fns["hold"](q, lam, model.params)
    np.testing.assert_allclose(qdd, 0.0, atol=1e-12)
    np.testing.assert_allclose(F, 0.0, atol=1e-14)
    np.testing.assert_allclose(n, -2.0 * G * 0.5, rtol=1e-12)
    Fp, npin = model.reaction_fns["pin"](q, lam, model.params)
    np.testing.assert_allclose(Fp, [0.0, 2.0 * G], atol=1e-12)  # pin now carries the full weight


def test_translational_reaction_torque_about_the_joint_point():
    """A block on a horizontal guide, held in x, with a force couple: the guide's reaction on
    the block balances weight and couple (statics: F = (0, m g); about P, n_P + τ + 0.6 g = 0)."""
    mech = Mechanism()
    mech.body("block", mass=3.0, inertia=0.1)
    mech.translational("guide", "block", (0.2, 0.1), "ground", (0.0, 0.0), (1.0, 0.0))
    mech.fix("stop", "block", ("x",), values=(0.7,))
    mech.torque("couple", "block", lambda q, qd, t, p: 1.5)
    model = mech.build()
    q = jnp.array([0.7, -0.1, 0.0])  # guide point P at y = 0
    assert float(jnp.max(jnp.abs(model.holonomic_constraints(q)))) < 1e-15
    qdd, lam = _multipliers(model, q)
    F, n = model.reaction_fns["guide"](q, lam, model.params)
    np.testing.assert_allclose(qdd, 0.0, atol=1e-12)
    np.testing.assert_allclose(F, [0.0, 3.0 * G], atol=1e-12)
    # moments about P = (0.9, 0): couple 1.5 + weight (0, −3g) at (−0.2, −0.1) from P, i.e.
    # (−0.2)(−3g) = 0.6 g, + n_P = 0
    np.testing.assert_allclose(n, -1.5 - 0.2 * 3.0 * G, atol=1e-12)


def test_trajectory_reaction_uses_the_front_end_functions():
    """Trajectory.reaction over a short simulate of the hanging pendulum: constant (0, m g)."""
    model, q = _rod(True, -math.pi / 2)
    traj = mbd.simulate(model, q, jnp.zeros(3), t1=0.2, saveat=5)
    F, n = traj.reaction("pin")
    np.testing.assert_allclose(F, np.tile([0.0, 2.0 * G], (5, 1)), atol=1e-9)
    np.testing.assert_allclose(n, 0.0, atol=1e-9)
    every = traj.reactions()                       # all joints in one call: the same statics
    assert list(every) == ["pin"]
    np.testing.assert_allclose(every["pin"][0], np.tile([0.0, 2.0 * G], (5, 1)), atol=1e-9)


# --------------------------------------------------------------- force elements
def _line_length(q, pi, pj, bi, bj):
    def pos(b, s):
        if b is None:
            return jnp.asarray(s)
        x, y, a = q[3 * b], q[3 * b + 1], q[3 * b + 2]
        return jnp.stack([x + jnp.cos(a) * s[0] - jnp.sin(a) * s[1], y + jnp.sin(a) * s[0] + jnp.cos(a) * s[1]])

    d = pos(bj, pj) - pos(bi, pi)
    return jnp.sqrt(d @ d)


def test_force_elements_generalized_forces_by_virtual_work():
    """Q of each element against its virtual work, written independently here:
    TSDA Q = −f ∂ℓ/∂q with f = k(ℓ−ℓ0) + c ℓ̇ + F (Haug eq. 4.4.17); RSDA Q = −τ ∂θ/∂q;
    point force Q = (∂r_P/∂q)ᵀ F; torque Q_φ = τ. Round-off tolerance 1e-12."""
    mech = Mechanism(gravity=(0.0, 0.0))
    mech.body("a", 1.0, 0.1)
    mech.body("b", 2.0, 0.3)
    mech.spring_damper("spring", "a", (0.1, 0.2), "b", (-0.3, 0.1), k=40.0, c=3.0, length0=0.2,
                       actuator=lambda l, ld, t, p: p["spring"]["gain"] * l + ld * t, params={"gain": 5.0})
    mech.spring_damper("tether", "ground", (0.5, -0.4), "b", (0.2, 0.0), k=7.0, c=0.5, length0=0.1)
    mech.rotational_spring_damper("torsion", "a", "b", k=2.0, c=0.4, angle0=0.3,
                                  actuator=lambda th, thd, t, p: 0.7 * th + thd)
    mech.force("push", "a", (0.3, -0.1), lambda q, qd, t, p: jnp.stack([1.0 + q[0], -2.0 * qd[1]]))
    mech.torque("motor", "b", lambda q, qd, t, p: 0.9 - 0.1 * qd[5])
    model = mech.build()
    q = jnp.array([0.1, 0.2, 0.3, 0.8, -0.3, 1.2])
    qd = jnp.array([0.5, -0.4, 0.3, 0.2, 0.9, -0.6])
    t = 0.7
    Q = np.asarray(model.forcing(q, qd, t))

    def tsda(pi, pj, bi, bj, k, c, l0, act):
        ell = lambda x: _line_length(x, pi, pj, bi, bj)  # noqa: E731
        length, grad = ell(q), jax.grad(ell)(q)
        rate = grad @ qd
        return -(k * (length - l0) + c * rate + act(length, rate)) * np.asarray(grad)

    expect = tsda((0.1, 0.2), (-0.3, 0.1), 0, 1, 40.0, 3.0, 0.2, lambda l, ld: 5.0 * l + ld * t)
    expect += tsda((0.5, -0.4), (0.2, 0.0), None, 1, 7.0, 0.5, 0.1, lambda l, ld: 0.0)
    th, thd = float(q[5] - q[2]), float(qd[5] - qd[2])
    dth = np.array([0, 0, -1.0, 0, 0, 1.0])
    expect += -(2.0 * (th - 0.3) + 0.4 * thd + 0.7 * th + thd) * dth
    rP = lambda x: jnp.stack([x[0] + jnp.cos(x[2]) * 0.3 + jnp.sin(x[2]) * 0.1,  # noqa: E731
                              x[1] + jnp.sin(x[2]) * 0.3 - jnp.cos(x[2]) * 0.1])
    expect += np.asarray(jax.jacfwd(rP)(q)).T @ np.array([1.0 + q[0], -2.0 * qd[1]])
    expect = np.asarray(expect).copy()
    expect[5] += 0.9 - 0.1 * float(qd[5])
    np.testing.assert_allclose(Q, expect, rtol=1e-12, atol=1e-12)


def test_gravity_potential_and_massless_bodies():
    """V = −Σ m g·r (Haug §4.4.1); a massless body adds nothing."""
    mech = Mechanism(gravity=(1.0, -9.81))
    mech.body("heavy", 2.0, 0.1)
    mech.body("ghost", 0.0, 0.0)
    model = mech.build()
    q = jnp.array([0.3, 0.4, 0.1, 5.0, 6.0, 0.2])
    V = float(model.energy(q, jnp.zeros(6)))
    assert V == pytest.approx(-2.0 * (0.3 * 1.0 - 9.81 * 0.4), rel=1e-14)
    np.testing.assert_allclose(model.forcing(q, jnp.zeros(6)), [2.0, -19.62, 0, 0, 0, 0], rtol=1e-14)


def test_spring_with_zero_free_length_is_smooth_at_coincidence():
    """length0 = 0: V = ½k dᵀd, finite force (zero) at coincident points."""
    mech = Mechanism(gravity=(0.0, 0.0))
    mech.body("a", 1.0, 0.1)
    mech.spring_damper("s", "ground", (0.0, 0.0), "a", (0.0, 0.0), k=3.0, c=1.0, length0=0.0)
    model = mech.build()
    Q = model.forcing(jnp.zeros(3), jnp.array([0.1, 0.0, 0.0]))
    assert bool(jnp.all(jnp.isfinite(Q)))
    np.testing.assert_allclose(model.forcing(jnp.array([0.2, 0.1, 0.0]), jnp.zeros(3)), [-0.6, -0.3, 0.0], rtol=1e-14)


def test_new_parameter_values_do_not_recompile():
    """Geometry lives in params: a new link length reruns simulate without retracing
    (the user torque is called only while tracing)."""
    calls = []

    def motor(q, qd, t, p):
        calls.append(1)
        return p["motor"]["tau"]

    mech = Mechanism()
    mech.body("rod", 1.0, 1.0 / 12)
    mech.revolute("pin", "ground", (0.0, 0.0), "rod", (-0.5, 0.0))
    mech.torque("motor", "rod", motor, params={"tau": 1.0})
    model = mech.build()
    q0 = jnp.array([0.0, -0.5, -math.pi / 2])
    t1 = mbd.simulate(model, q0, jnp.zeros(3), t1=0.2, saveat=3)
    traced = len(calls)
    p = jax.tree_util.tree_map(lambda x: x, model.params)
    p["pin"]["point_j"] = jnp.array([-0.7, 0.0])
    p["motor"]["tau"] = jnp.asarray(2.0)
    q1 = jnp.array([0.0, -0.7, -math.pi / 2])
    t2 = mbd.simulate(model, q1, jnp.zeros(3), t1=0.2, saveat=3, params=p)
    assert len(calls) == traced
    assert float(t2.position_residual().max()) < 1e-10
    assert not np.allclose(t1.q, t2.q)


# ----------------------------------------------------------------- build errors
def _error(build):
    mech = Mechanism()
    build(mech)
    with pytest.raises(mbd.ModelError) as info:
        mech.build()
    return str(info.value), info.value.problems


@pytest.mark.parametrize("build, words", [
    (lambda m: (m.body("a", 1, 1), m.revolute("j", "a", (0, 0), "wheel", (0, 0))),
     ["revolute 'j'", "unknown body 'wheel'", "'ground'", "'a'"]),
    (lambda m: (m.body("a", 1, 1), m.body("a", 2, 1)), ["body 'a'", "already used", "unique"]),
    (lambda m: (m.body("a", 1, 1), m.revolute("a", "ground", (0, 0), "a", (0, 0))),
     ["revolute 'a'", "already used by a body"]),
    (lambda m: (m.body("a", 1, 1), m.distance("d", "ground", (0, 0), "a", (0, 0), 0.0)),
     ["distance 'd'", "> 0", "revolute"]),
    (lambda m: (m.body("a", 1, 1), m.translational("t", "ground", (0, 0), "a", (0, 0), (0, 0))),
     ["translational 't'", "axis_i", "zero length"]),
    (lambda m: (m.body("a", 1, 1), m.spring_damper("s", "ground", (0, 0), "a", (0, 0), 1, 1, -0.2)),
     ["spring_damper 's'", "length0", "negative"]),
    (lambda m: m.body("a", -1.0, 1.0), ["body 'a'", "mass", "negative"]),
    (lambda m: m.body("a", 1.0, -0.5), ["body 'a'", "inertia", "negative"]),
    (lambda m: (m.body("a", 1, 1), m.drive_angle("d1", "ground", "a", lambda t, p: t),
                m.drive_angle("d2", "a", "ground", lambda t, p: -t)),
     ["drive_angle 'd2'", "conflicting drivers", "'d1'"]),
    (lambda m: (m.body("a", 1, 1), m.drive_distance("d1", "ground", (0, 0), "a", (1, 0), lambda t, p: 1 + t),
                m.drive_distance("d2", "a", (1, 0), "ground", (0, 0), lambda t, p: 1.0)),
     ["drive_distance 'd2'", "conflicting drivers", "'d1'"]),
    (lambda m: m.body("", 1, 1), ["body", "non-empty", "name"]),
    (lambda m: m.body(None, 1, 1), ["body", "non-empty", "name"]),
    (lambda m: m.body("ground", 1, 1), ["body 'ground'", "reserved"]),
    (lambda m: m.body("a.b", 1, 1), ["body 'a.b'", "'.'"]),
    (lambda m: (m.body("a", 1, 1), m.revolute("j", "a", (0, 0), "a", (1, 0))), ["revolute 'j'", "both 'a'"]),
    (lambda m: (m.body("a", 1, 1), m.revolute("j", "ground", (0, 0, 0), "a", (0, 0))),
     ["revolute 'j'", "point_i", "shape (2,)"]),
    (lambda m: (m.body("a", 1, 1), m.fix("f", "a", ("x", "theta"))), ["fix 'f'", "theta"]),
    (lambda m: (m.body("a", 1, 1), m.fix("f", "a", ("x",)), m.fix("g", "a", ("x", "y"))),
     ["fix 'g'", "already fixed by fix 'f'"]),
    (lambda m: (m.body("a", 1, 1), m.drive_angle("d", "ground", "a", 3.0)), ["drive_angle 'd'", "function"]),
    (lambda m: (m.body("a", 1, 1), m.torque("t", "a", lambda q, qd, t, p: jnp.ones(2))),
     ["torque 't'", "shape (2,)", "scalar"]),
    (lambda m: (m.body("a", 1, 1), m.force("f", "a", (0, 0), lambda q, qd, t, p: 1.0)),
     ["force 'f'", "shape (2,)"]),
    (lambda m: None, ["no bodies"]),
])
def test_build_errors_name_the_part_and_the_fix(build, words):
    msg, _ = _error(build)
    for word in words:
        assert word in msg, (word, msg)


def test_build_collects_every_problem_before_raising():
    def build(m):
        m.body("a", -1.0, 1.0)
        m.body("a", 1.0, 1.0)
        m.revolute("j", "a", (0, 0), "nowhere", (0, 0))
        m.distance("d", "ground", (0, 0), "a", (0, 0), -1.0)
        m.translational("t", "ground", (0, 0), "a", (0, 0), (0.0, 0.0))

    msg, problems = _error(build)
    assert len(problems) == 5, problems
    assert msg.startswith("5 problems")


def test_mechanism_index_unknown_coordinate():
    mech = Mechanism()
    mech.body("a", 1, 1)
    with pytest.raises(mbd.ModelError, match="a.phi"):
        mech.index("a.theta")


def test_large_mechanism_jacobian_assembly_matches_jacfwd():
    """Above `_GATHER_MAX` entries the blocks are scattered instead of gathered; both
    paths must equal jax.jacfwd exactly (30-link chain: 60 × 90 = 5400 entries)."""
    from mbdjax import models
    from mbdjax.planar import _compile

    ex = models.pendulum_chain(30)
    m = ex.model
    assert m.m_h * m.n > _compile._GATHER_MAX
    q = ex.q0 + 0.1 * jnp.sin(jnp.arange(m.n, dtype=float))
    J = kin.holonomic_jacobian(m, q, 0.0, m.params)
    ref = jax.jacfwd(lambda x: kin.holonomic(m, x, 0.0, m.params))(q)
    np.testing.assert_allclose(J, ref, rtol=1e-13, atol=1e-15)
