"""Tests of the spatial front end `mbdjax.spatial.Mechanism` (THEORY §6).

Every expected value comes from an independent source, named in each test: the
hand-written generic rolling-disk Model (Greenwood §4.4), the planar front end,
closed-form solutions (uniform acceleration, harmonic and damped oscillators,
torque-free spin-up), conservation laws (energy, vertical angular momentum about a
fixed pivot) or the joint's definition (Haug §9.3: how many freedoms it removes).
Integrations use rtol=1e-10, atol=1e-12 (`TIGHT`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd
from mbdjax import kinematics as kin
from mbdjax import planar
from mbdjax.models import rolling_disk as generic_rolling_disk
from mbdjax.spatial import (
    Mechanism,
    body_poses,
    contact_kinematics,
    euler313_from_matrix,
    euler313_matrix,
    perpendicular_pair,
    quaternion_from_matrix,
    quaternion_matrix,
    quaternion_rates,
)

G = 9.81
TIGHT = dict(rtol=1e-10, atol=1e-12)
A_DISK = 0.3  # disk radius (m), the generic model's value


def _max(x):
    return float(jnp.max(jnp.abs(jnp.asarray(x))))


def _frame_for_axis(axis):
    """Rotation `R = [f g â]` whose body z axis is the unit `axis` and whose body x, y
    axes are `perpendicular_pair(axis)`; with it a joint with body axis e_z (and, for
    the prismatic twist row, body pair (e_x, e_y)) is assembled exactly."""
    f, g = perpendicular_pair(jnp.asarray(axis, dtype=float))
    a = jnp.asarray(axis, dtype=float) / jnp.linalg.norm(jnp.asarray(axis, dtype=float))
    return jnp.stack([f, g, a], axis=1)


# ===================================================================== fixtures
@pytest.fixture(scope="module")
def spatial_disk():
    """Thin uniform disk m = 1, a = 0.3 (A = m a²/4, C = m a²/2) rolling on z = 0."""
    mech = Mechanism(gravity=(0.0, 0.0, -G))
    m = 1.0
    mech.body("disk", mass=m, inertia=(0.25 * m * A_DISK**2, 0.25 * m * A_DISK**2, 0.5 * m * A_DISK**2))
    mech.rolling_disk("contact", "disk", radius=A_DISK)
    return mech, mech.build()


@pytest.fixture(scope="module")
def quaternion_pendulum():
    """Spherical pendulum: a quaternion bob (m = 1, J = 1e-3 I) whose body point
    (0, 0, 1) is held at the pivot (the origin) — a 1 m massless rod."""
    mech = Mechanism(gravity=(0.0, 0.0, -G))
    mech.body("bob", mass=1.0, inertia=(1e-3, 1e-3, 1e-3), orientation="quaternion")
    mech.spherical("pivot", "ground", (0.0, 0.0, 0.0), "bob", (0.0, 0.0, 1.0))
    return mech, mech.build()


@pytest.fixture(scope="module")
def free_euler_body():
    """One free 3-1-3 Euler-angle body without gravity (no constraints at all)."""
    mech = Mechanism(gravity=(0.0, 0.0, 0.0))
    mech.body("b", mass=1.0, inertia=(0.1, 0.2, 0.3))
    return mech.build()


# ============================================== 1. rolling disk vs generic Model
def test_rolling_disk_equals_generic_model(spatial_disk):
    """Source: the hand-written generic Model `mbdjax.models.rolling_disk()` (same
    coordinates x, y, z, φ, θ, ψ with R = Rz(φ) Rx(θ) Rz(ψ), same m, a, g).

    The spatial contact's plane tangents are `perpendicular_pair(e_z) = (e_x, e_y)`,
    so its rows are in the generic order (height, slip x, slip y) with the same
    signs: M, forcing, B = [Φ_q; A] and g = [γ; γ_n] must agree entrywise to 1e-12
    at random states on the contact manifold (θ in [0.4, 2.7], away from 0 and π).
    Measured: 1e-16.
    """
    _, sp = spatial_disk
    gen = generic_rolling_disk().model
    assert sp.coordinates == ("disk.x", "disk.y", "disk.z", "disk.phi", "disk.theta", "disk.psi")
    assert sp.constraint_names == ("contact.height",)
    assert sp.nonholonomic_names == ("contact.slip1", "contact.slip2")
    assert (sp.n, sp.m_h, sp.m_n) == (gen.n, gen.m_h, gen.m_n) == (6, 1, 2)
    rng = np.random.default_rng(1)
    for _ in range(3):
        q = rng.uniform(-1.0, 1.0, 6)
        q[4] = rng.uniform(0.4, 2.7)
        q[2] = A_DISK * math.sin(q[4])  # on the contact height row
        q, qd = jnp.asarray(q), jnp.asarray(rng.uniform(-2.0, 2.0, 6))
        pairs = [
            (sp.mass_matrix(q), gen.mass_matrix(q)),
            (sp.forcing(q, qd), gen.forcing(q, qd)),
            (kin.constraint_jacobian(sp, q, 0.0, sp.params), kin.constraint_jacobian(gen, q, 0.0, gen.params)),
            (kin.acceleration_rhs(sp, q, qd, 0.0, sp.params), kin.acceleration_rhs(gen, q, qd, 0.0, gen.params)),
        ]
        for a, b in pairs:
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-12)


# ========================================================= 2. quaternion bodies
def test_quaternion_mass_matrix_singular_but_positive_on_nullspace(quaternion_pendulum):
    """Source: THEORY §6 / the builder docstring — with Euler parameters ė ∥ e carries
    no kinetic energy, so M is singular on Rⁿ, but positive on null(B) once the row
    `".norm"` is there (Haug's existence condition (2) holds). Checked for a free
    quaternion body (dof 6) and the quaternion spherical pendulum (dof 3)."""
    mech = Mechanism(gravity=(0.0, 0.0, -G))
    mech.body("b", mass=2.0, inertia=(0.1, 0.2, 0.3), orientation="quaternion")
    free = mech.build()
    assert free.constraint_names == ("b.norm",)
    e = np.array([0.9, 0.3, -0.2, 0.1])
    e /= np.linalg.norm(e)
    report = mbd.check(free, jnp.concatenate([jnp.array([0.1, 0.2, 0.3]), jnp.asarray(e)]))
    assert not report.mass_positive_definite
    assert report.mass_positive_on_nullspace
    assert report.ok and report.dof == 6

    _, pend = quaternion_pendulum
    beta = 0.6
    q = jnp.array([0.0, math.sin(beta), -math.cos(beta), math.cos(beta / 2), math.sin(beta / 2), 0.0, 0.0])
    report = mbd.check(pend, q)
    assert report.constraint_residual < 1e-15
    assert not report.mass_positive_definite
    assert report.mass_positive_on_nullspace
    assert report.ok and report.dof == 3


def test_quaternion_spherical_pendulum_conserves_energy_and_vertical_momentum(quaternion_pendulum):
    """Source: conservation laws. Gravity is conservative and the pivot reaction does
    no work, so T + V is constant; gravity's moment about the pivot is horizontal, so
    the vertical angular momentum `H_z = [m r × v + R J Rᵀ ω]_z` about the pivot is
    constant. Tolerances: relative 1e-9 on both (measured 3e-11 and 1e-10), and
    holonomic residuals (norm and pivot rows) below 1e-10 (measured 2e-16).

    Initial state: the bob tilted β = 0.6 rad about global x (e = (cos β/2, sin β/2,
    0, 0), centre at (0, sin β, −cos β)), angular velocity ω = (0.3, 0, 2) rad/s,
    v = ω × r so the pivot point is at rest; ė = ½ Eᵀ ω.
    """
    mech, pend = quaternion_pendulum
    beta = 0.6
    r0 = jnp.array([0.0, math.sin(beta), -math.cos(beta)])
    e0 = jnp.array([math.cos(beta / 2), math.sin(beta / 2), 0.0, 0.0])
    omega = jnp.array([0.3, 0.0, 2.0])
    q0 = jnp.concatenate([r0, e0])
    qd0 = jnp.concatenate([jnp.cross(omega, r0), quaternion_rates(e0, omega)])
    assert _max(kin.velocity_residual(pend, q0, qd0, 0.0, pend.params)) < 1e-15

    tr = mbd.simulate(pend, q0, qd0, t1=2.0, saveat=21, **TIGHT)
    e = tr.energy()
    assert _max(e - e[0]) / abs(float(e[0])) < 1e-9

    poses = body_poses(mech)
    J = pend.params["bob"]["inertia"]

    def h_z(q, qd):
        P = poses(q, qd)["bob"]
        return (1.0 * jnp.cross(P.r, P.v) + P.R @ (J @ P.w_body))[2]

    hz = jax.vmap(h_z)(tr.q, tr.qd)
    assert abs(float(hz[0])) > 0.1  # a real precession, not a planar swing
    assert _max(hz - hz[0]) / abs(float(hz[0])) < 1e-9
    assert _max(tr.position_residual()) < 1e-10
    # the bob really swings: its height changes by more than a centimetre
    assert float(jnp.max(tr.coordinate("bob.z")) - jnp.min(tr.coordinate("bob.z"))) > 1e-2


# ======================================================= 3. joint freedoms
JOINT_DOF = {"spherical": 3, "revolute": 1, "universal": 2, "cylindrical": 2, "prismatic": 1, "fixed": 0}


@pytest.mark.parametrize("orientation", ["euler313", "quaternion"])
@pytest.mark.parametrize("kind", sorted(JOINT_DOF))
def test_joint_degrees_of_freedom(kind, orientation):
    """Source: the joint definitions (Haug §9.3): a body joined to ground keeps
    6 − (freedoms removed) velocity degrees of freedom: spherical 3, revolute 1,
    universal 2, cylindrical 2, prismatic 1, fixed 0 (the quaternion's `.norm` row
    is counted by its extra coordinate). Exact integer comparison of `check().dof`.

    The configuration is assembled by construction: the body is turned by
    `R = [f g â]` (â = (1, 2, 2)/3, the joint axis on ground, so θ = acos(2/3) ≈ 0.84,
    away from the Euler-angle singularity), its joint axis is body e_z (body e_x for
    the universal's cross axis), its joint point is `Rᵀ(P − r)` and the fixed joint's
    `rotation` is R; the residual is checked below 1e-14.
    """
    axis = np.array([1.0, 2.0, 2.0]) / 3.0
    R = _frame_for_axis(axis)
    r = np.array([0.2, -0.3, 0.4])
    P = np.array([0.1, 0.5, -0.2])
    s = np.asarray(R.T @ (P - r))
    mech = Mechanism(gravity=(0.0, 0.0, -G))
    mech.body("b", mass=1.5, inertia=(0.1, 0.2, 0.3), orientation=orientation)
    if kind == "spherical":
        mech.spherical("j", "ground", P, "b", s)
    elif kind == "fixed":
        mech.fixed("j", "ground", P, "b", s, rotation=np.asarray(R))
    else:
        axis_j = (1.0, 0.0, 0.0) if kind == "universal" else (0.0, 0.0, 1.0)
        getattr(mech, kind)("j", "ground", P, axis, "b", s, axis_j)
    model = mech.build()
    if orientation == "euler313":
        angles = euler313_from_matrix(R)
        assert 0.5 < float(angles[1]) < 2.5
        np.testing.assert_allclose(euler313_matrix(angles), R, atol=1e-14)
        q = jnp.concatenate([jnp.asarray(r), angles])
    else:
        e = quaternion_from_matrix(R)
        np.testing.assert_allclose(quaternion_matrix(e), R, atol=1e-14)
        q = jnp.concatenate([jnp.asarray(r), e])
    report = mbd.check(model, q)
    assert report.constraint_residual < 1e-14
    assert report.dof == JOINT_DOF[kind]
    assert report.rank == report.m  # no redundant rows
    assert report.ok


# ============================================ 4. revolute pendulum vs planar
def test_revolute_pendulum_matches_planar_front_end():
    """Source: the planar front end (`mbdjax.planar.Mechanism`), the same physical
    pendulum: uniform rod m = 1 kg, L = 1 m, J = 1/12 kg·m² about its centre, hinged
    at one end, released from rest 0.8 rad from hanging down.

    Spatial: hinge axis on ground −e_y, body axis e_z; rod along body x with the
    hinge at body (−0.5, 0, 0). Then body z = −e_y, i.e. φ = 0, θ = π/2 (constant,
    far from the singularity), and R e_x = (cos ψ, 0, sin ψ): the swing plane x–z is
    the planar x–y plane turned by +90° about x (planar y → spatial z, planar
    normal e_z → spatial −e_y), so ψ(t) = φ_planar(t), x = x_planar, z = y_planar.
    Tolerance 1e-8 on every output over 2 s (measured: angle 2e-11, x and z 8e-12,
    angular rate 1.4e-10).
    """
    psi0 = -math.pi / 2 + 0.8
    mech = Mechanism(gravity=(0.0, 0.0, -G))
    mech.body("rod", mass=1.0, inertia=(0.0, 1.0 / 12, 1.0 / 12))  # thin rod along body x
    mech.revolute("hinge", "ground", (0.0, 0.0, 0.0), (0.0, -1.0, 0.0), "rod", (-0.5, 0.0, 0.0), (0.0, 0.0, 1.0))
    sp = mech.build()
    q0 = jnp.array([0.5 * math.cos(psi0), 0.0, 0.5 * math.sin(psi0), 0.0, math.pi / 2, psi0])
    assert mbd.check(sp, q0).ok and mbd.check(sp, q0).dof == 1

    pm = planar.Mechanism(gravity=(0.0, -G))
    pm.body("rod", mass=1.0, inertia=1.0 / 12)
    pm.revolute("pin", "ground", (0.0, 0.0), "rod", (-0.5, 0.0))
    pl = pm.build()
    p0 = jnp.array([0.5 * math.cos(psi0), 0.5 * math.sin(psi0), psi0])

    sp_tr = mbd.simulate(sp, q0, jnp.zeros(6), t1=2.0, saveat=21, **TIGHT)
    pl_tr = mbd.simulate(pl, p0, jnp.zeros(3), t1=2.0, saveat=21, **TIGHT)
    ts = sp_tr.coordinate("rod.psi")
    # the rod passes the bottom (ψ = −π/2) and swings out the other side
    assert float(jnp.max(ts)) > -math.pi / 2 + 0.7 and float(jnp.min(ts)) < -math.pi / 2 - 0.7
    np.testing.assert_allclose(ts, pl_tr.coordinate("rod.phi"), rtol=0, atol=1e-8)
    np.testing.assert_allclose(sp_tr.coordinate("rod.x"), pl_tr.coordinate("rod.x"), rtol=0, atol=1e-8)
    np.testing.assert_allclose(sp_tr.coordinate("rod.z"), pl_tr.coordinate("rod.y"), rtol=0, atol=1e-8)
    np.testing.assert_allclose(sp_tr.velocity("rod.psi"), pl_tr.velocity("rod.phi"), rtol=0, atol=1e-8)
    # locked directions stay locked
    assert _max(sp_tr.coordinate("rod.y")) < 1e-12
    assert _max(sp_tr.coordinate("rod.phi")) < 1e-10
    assert _max(sp_tr.coordinate("rod.theta") - math.pi / 2) < 1e-10


# ================================================ 5. prismatic joint on an incline
def test_prismatic_slide_on_incline():
    """Source: closed form for a frictionless slide. Along the axis
    â = (cos α, 0, sin α) gravity's component is −g sin α, so released from rest the
    displacement is s(t) = −½ g sin α t² (α = 0.5 rad), the motion across the axis is
    zero and the body does not rotate (the prismatic joint locks all rotation).
    Tolerances 1e-9 (measured 2e-14).

    Assembled by construction: body axes `R = [f g â]` (f, g = perpendicular_pair(â)),
    body axis e_z, so the twist row `f_i · R g_j = f · g = 0`; θ = π/2 − α.
    """
    alpha = 0.5
    axis = np.array([math.cos(alpha), 0.0, math.sin(alpha)])
    R = _frame_for_axis(axis)
    angles = euler313_from_matrix(R)
    assert abs(float(angles[1]) - (math.pi / 2 - alpha)) < 1e-12
    mech = Mechanism(gravity=(0.0, 0.0, -G))
    mech.body("b", mass=1.0, inertia=(0.1, 0.2, 0.3))
    mech.prismatic("slide", "ground", (0.0, 0.0, 0.0), axis, "b", (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    model = mech.build()
    assert model.constraint_names == ("slide.axis1", "slide.axis2", "slide.offset1", "slide.offset2", "slide.twist")
    q0 = jnp.concatenate([jnp.zeros(3), angles])
    assert _max(kin.holonomic(model, q0, 0.0, model.params)) < 1e-15

    tr = mbd.simulate(model, q0, jnp.zeros(6), t1=1.0, saveat=11, **TIGHT)
    pos = tr.q[:, :3]
    s = pos @ jnp.asarray(axis)
    np.testing.assert_allclose(s, -0.5 * G * math.sin(alpha) * tr.t**2, rtol=0, atol=1e-9)
    assert _max(pos - s[:, None] * jnp.asarray(axis)[None, :]) < 1e-9
    assert _max(tr.q[:, 3:] - angles[None, :]) < 1e-9


# ======================================================= 6. spring-damper
@pytest.fixture(scope="module")
def hanging_spring():
    """A free body (m = 2 kg, θ = π/2) hanging below ground's origin on a spring
    k = 50 N/m, ℓ₀ = 1 m, attached at its mass centre (so it exerts no moment)."""
    mech = Mechanism(gravity=(0.0, 0.0, -G))
    mech.body("b", mass=2.0, inertia=(0.1, 0.2, 0.3))
    mech.spring_damper("spring", "ground", (0.0, 0.0, 0.0), "b", (0.0, 0.0, 0.0), k=50.0, c=0.0, length0=1.0)
    return mech.build()


def _spring_run(model, c):
    m, k, l0 = 2.0, 50.0, 1.0
    z_eq = -(l0 + m * G / k)
    amp = 0.2
    q0 = jnp.array([0.0, 0.0, z_eq - amp, 0.3, math.pi / 2, -0.4])
    params = {**model.params, "spring": {**model.params["spring"], "c": jnp.asarray(c)}}
    tr = mbd.simulate(model, q0, jnp.zeros(6), t1=2.0, saveat=21, params=params, **TIGHT)
    return tr, q0, z_eq, -amp, math.sqrt(k / m), c / (2.0 * math.sqrt(k * m))


def test_spring_oscillation_matches_closed_form(hanging_spring):
    """Source: closed form of the undamped oscillator. With x = y = 0 the spring is
    vertical, ℓ = −z, and m z̈ = −k(z − z_eq), z_eq = −(ℓ₀ + m g / k): released from
    rest at z_eq + A, z(t) = z_eq + A cos(√(k/m) t). Tolerance 1e-8 (measured 1e-10);
    the spring passes through the mass centre, so the body does not rotate (1e-12)."""
    tr, q0, z_eq, amp, w0, _ = _spring_run(hanging_spring, 0.0)
    np.testing.assert_allclose(tr.coordinate("b.z"), z_eq + amp * jnp.cos(w0 * tr.t), rtol=0, atol=1e-8)
    assert _max(tr.q[:, 3:] - q0[None, 3:]) < 1e-12
    assert _max(tr.q[:, :2]) < 1e-12
    e = tr.energy()
    assert _max(e - e[0]) / abs(float(e[0])) < 1e-9  # conservative (c = 0)


def test_spring_damper_decays_as_closed_form(hanging_spring):
    """Source: closed form of the damped oscillator (the damper enters as the content
    ½ c ℓ̇², i.e. the force −c ż): with ζ = c/(2√(km)) = 0.1, ω_d = ω₀√(1 − ζ²),
    z − z_eq = A e^{−ζω₀t}(cos ω_d t + ζ/√(1−ζ²) sin ω_d t). Tolerance 1e-8
    (measured 3e-11). T + V decreases strictly between outputs (dissipation is
    ≥ 0 and zero only at isolated instants). c is changed through `params`, without
    rebuilding."""
    tr, _, z_eq, amp, w0, zeta = _spring_run(hanging_spring, 2.0)
    assert abs(zeta - 0.1) < 1e-15
    wd = w0 * math.sqrt(1.0 - zeta**2)
    expect = z_eq + amp * jnp.exp(-zeta * w0 * tr.t) * (
        jnp.cos(wd * tr.t) + zeta / math.sqrt(1.0 - zeta**2) * jnp.sin(wd * tr.t))
    np.testing.assert_allclose(tr.coordinate("b.z"), expect, rtol=0, atol=1e-8)
    assert bool(jnp.all(jnp.diff(tr.energy()) < 0.0))


# ============================================ 7. applied force and torque
def test_applied_force_and_torque_closed_form():
    """Source: closed forms without gravity. A constant force F at the mass centre
    gives r(t) = r₀ + ½ (F/m) t² and no moment; a constant global torque τ e_z on a
    body at rest whose principal axis body z (moment C) is along e_z gives the
    spin-up ω = (τ t / C) e_z, turning it by β = ½ τ t² / C about z, i.e.
    e(t) = (cos β/2, 0, 0, sin β/2). Quaternion body, R(0) = I. The torque law reads
    its magnitude from `params["spin"]["tau"]`. Tolerances 1e-9 (measured: r 3e-16, ω 1.6e-10,
    e 1.5e-11; β(1 s) = 2 rad)."""
    F = np.array([1.0, -2.0, 0.5])
    m, C, tau = 2.0, 0.05, 0.2  # β(1 s) = 2 rad
    mech = Mechanism(gravity=(0.0, 0.0, 0.0))
    mech.body("b", mass=m, inertia=(0.02, 0.03, C), orientation="quaternion")
    mech.force("push", "b", (0.0, 0.0, 0.0), lambda q, qd, t, p: jnp.asarray(F))
    mech.torque("spin", "b", lambda q, qd, t, p: p["spin"]["tau"] * jnp.array([0.0, 0.0, 1.0]),
                params={"tau": tau})
    model = mech.build()
    r0 = jnp.array([0.1, 0.2, 0.3])
    q0 = jnp.concatenate([r0, jnp.array([1.0, 0.0, 0.0, 0.0])])
    tr = mbd.simulate(model, q0, jnp.zeros(7), t1=1.0, saveat=11, **TIGHT)
    t = tr.t
    np.testing.assert_allclose(tr.q[:, :3], r0[None, :] + 0.5 * (F / m)[None, :] * t[:, None] ** 2,
                               rtol=0, atol=1e-9)
    poses = body_poses(mech)
    w = jax.vmap(lambda q, qd: poses(q, qd)["b"].w)(tr.q, tr.qd)
    np.testing.assert_allclose(w, jnp.stack([0 * t, 0 * t, tau * t / C], axis=1), rtol=0, atol=1e-9)
    beta = 0.5 * tau * t**2 / C
    expect_e = jnp.stack([jnp.cos(beta / 2), 0 * t, 0 * t, jnp.sin(beta / 2)], axis=1)
    np.testing.assert_allclose(tr.q[:, 3:], expect_e, rtol=0, atol=1e-9)


# ================================================================ 8. build errors
def _mech_with_body(**body):
    mech = Mechanism()
    mech.body("b", **{"mass": 1.0, "inertia": (0.1, 0.2, 0.3), **body})
    return mech


def _unknown_body():
    mech = _mech_with_body()
    mech.spherical("pin", "ground", (0, 0, 0), "nobody", (0, 0, 1))
    return mech


def _zero_axis():
    mech = _mech_with_body()
    mech.revolute("hinge", "ground", (0, 0, 0), (0, 0, 0), "b", (0, 0, 1), (0, 0, 1))
    return mech


def _bad_radius():
    mech = _mech_with_body()
    mech.rolling_disk("contact", "b", radius=0.0)
    return mech


def _bad_force_shape():
    mech = _mech_with_body()
    mech.force("push", "b", (0, 0, 0), lambda q, qd, t, p: jnp.ones(2))
    return mech


def _duplicate_name():
    mech = _mech_with_body()
    mech.spherical("b", "ground", (0, 0, 0), "b", (0, 0, 1))
    return mech


BUILD_ERRORS = {
    # (builder, regex naming the part and the fix)
    "unknown body": (_unknown_body, r"spherical 'pin': body_j 'nobody' is not a body; the bodies are \['ground', 'b'\]"),
    "bad orientation": (lambda: _mech_with_body(orientation="xyz"),
                        r"body 'b': orientation 'xyz' is not one of .*use 'euler313'.*or 'quaternion'"),
    "negative mass": (lambda: _mech_with_body(mass=-1.0), r"body 'b': mass -1\.0 kg is negative; use mass >= 0"),
    "non-symmetric inertia": (lambda: _mech_with_body(inertia=[[0.1, 0.01, 0], [0, 0.2, 0], [0, 0, 0.3]]),
                              r"body 'b': the inertia tensor is not symmetric; give J = Jᵀ"),
    "zero axis": (_zero_axis, r"revolute 'hinge': `axis_i` is the zero vector; give the joint axis direction"),
    "non-positive radius": (_bad_radius, r"rolling_disk 'contact': radius 0\.0 m must be positive"),
    "force shape": (_bad_force_shape,
                    r"force 'push': f\(q, qd, t, p\) returned shape \(2,\); it must return a global force of shape \(3,\)"),
    "duplicate name": (_duplicate_name, r"spherical 'b': the name is already used by a body;.*give each a unique name"),
}


@pytest.mark.parametrize("case", sorted(BUILD_ERRORS))
def test_build_errors_name_the_part_and_the_fix(case):
    """Source: the builder's validation contract (`Mechanism.build` raises one
    ModelError naming the part and the fix). Exact message fragments."""
    make, pattern = BUILD_ERRORS[case]
    with pytest.raises(mbd.ModelError, match=pattern):
        make().build()


# ===================================================== 9. Euler-angle singularity
def test_euler_singularity_reported_and_refused(free_euler_body):
    """Source: 3-1-3 Euler angles are singular at sin θ = 0 (Greenwood §7: φ and ψ
    turn about the same axis). `check` names the coordinate and is not ok; `simulate`
    refuses to start there with advice to use quaternions."""
    q = jnp.array([0.1, 0.2, 0.3, 0.4, 0.0, -0.2])
    report = mbd.check(free_euler_body, q)
    assert report.coordinate_singular == ("b.theta",)
    assert not report.ok
    assert any("quaternion" in s for s in report.problems)
    with pytest.raises(mbd.SimulationError, match="quaternion"):
        mbd.simulate(free_euler_body, q, jnp.zeros(6), t1=1.0, saveat=11, **TIGHT)
    # a regular configuration is fine
    assert mbd.check(free_euler_body, q.at[4].set(math.pi / 2)).ok


def _tumble(model, saveat):
    """Torque-free spin about the principal body x axis (node line at φ = ψ = 0):
    θ(t) = π/2 − t exactly (θ̇ = −1 rad/s), reaching the singularity θ = 0 at t = π/2."""
    q0 = jnp.array([0.0, 0.0, 0.0, 0.0, math.pi / 2, 0.0])
    qd0 = jnp.array([0.0, 0.0, 0.0, 0.0, -1.0, 0.0])
    return mbd.simulate(model, q0, qd0, t1=2.0, saveat=saveat, **TIGHT)


def test_euler_singularity_stops_motion_at_sampled_time(free_euler_body):
    """Source: θ(t) = π/2 − t (torque-free rotation about a principal axis), so θ = 0
    at t = π/2. With an output time at t = π/2 the margin |sin θ| ≈ 0 < 1e-3 there and
    simulate stops with the quaternion advice (an equinox runtime error)."""
    ts = np.linspace(0.0, 2.0, 21)
    ts[16] = math.pi / 2  # between 1.5 and 1.7
    with pytest.raises(Exception, match="quaternion"):
        _tumble(free_euler_body, jnp.asarray(ts))


def test_euler_singularity_stops_motion_between_outputs(free_euler_body):
    """Source: θ(t) = π/2 − t, so the body passes θ = 0 at t = π/2 < t1 = 2 s, between
    output times (the exact motion is linear: the solver takes a few long steps that
    jump across the zero of sin θ). The Model contract: simulate stops with an error
    at the first step that comes close to or steps across a singularity, whatever the
    output times, with the advice to use quaternions."""
    with pytest.raises(Exception, match="quaternion"):
        _tumble(free_euler_body, 21)


# ========================================================= 10. contact kinematics
def test_contact_kinematics_zero_slip_at_consistent_state(spatial_disk):
    """Source: rolling without slip — at a state from `initial_conditions` the
    material contact point's velocity `v + ω × ρ` is zero (all three components;
    tolerance 1e-12, measured 2e-16), and the contact point is the lowest rim point
    `r + a (sin φ cos θ, −cos φ cos θ, −sin θ)` on z = 0 (Greenwood §4.4, as in the
    generic model)."""
    _, model = spatial_disk
    phi, theta, psi = 0.4, 1.2, 0.3
    guess = jnp.array([0.1, -0.2, A_DISK * math.sin(theta), phi, theta, psi])
    q0, qd0 = mbd.initial_conditions(
        model, guess,
        fix_q={"disk.x": 0.1, "disk.y": -0.2, "disk.phi": phi, "disk.theta": theta, "disk.psi": psi},
        fix_qd={"disk.phi": 0.5, "disk.theta": 0.2, "disk.psi": 6.0})
    assert _max(kin.velocity_residual(model, q0, qd0, 0.0, model.params)) < 1e-12
    assert _max(qd0[:3]) > 0.5  # the centre moves: a real rolling state
    point, velocity = contact_kinematics(model, "contact")(q0, qd0, model.params)
    assert _max(velocity) < 1e-12
    rho = A_DISK * jnp.array([math.sin(phi) * math.cos(theta), -math.cos(phi) * math.cos(theta), -math.sin(theta)])
    np.testing.assert_allclose(point, q0[:3] + rho, rtol=0, atol=1e-12)
    assert abs(float(point[2])) < 1e-12
    with pytest.raises(mbd.ModelError, match="no contact named 'wheel'"):
        contact_kinematics(model, "wheel")
