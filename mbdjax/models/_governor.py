"""IFToMM multibody benchmark A05, the (stiff) flyball governor.

Watt's centrifugal governor as the IFToMM benchmark library specifies it (problem
A05, "stiff flyball governor", M. González, Laboratorio de Ingeniería Mecánica,
Universidade da Coruña; data as restated in the OpenSim reproduction of the library,
RehabEngGroup/MBSbenchmarksInOpenSim, and in Exudyn's `stiffFlyballGovernorKT.py`):

- a vertical shaft, a 1 × 0.01 × 0.01 m bar of density 3000 kg/m³ (0.3 kg), turning
  freely about the global z axis in a revolute to ground at its lower end (0, 0, 0);
  its upper end is at height h = 1 m;
- a cubic slider, 0.1 m, 3000 kg/m³ (3 kg), in a prismatic joint on the shaft (it
  slides along the shaft and turns with it), its centre at height s, s(0) = 0.5 m;
- two rods AC and BD, 1 × 0.01 × 0.01 m bars (0.3 kg) with a 5 kg point mass (the
  ball) at their outer ends C and D, hinged to the shaft at A = (+0.05, 0, 1) and
  B = (−0.05, 0, 1) (shaft axes) about axes perpendicular to the plane through the
  shaft and the rod; at t = 0 both hang outwards at α = 30° below the horizontal;
- in place of the coupler links of Watt's governor, two spring-dampers (k = 8e5 N/m,
  c = 4e4 N·s/m, rest length 0.5 m) from the rods' midpoints to the slider points
  E = (+0.05, 0, 0) and F = (−0.05, 0, 0) (slider axes); they start at their rest
  length (0.5 m), so the start is a consistent, unstretched configuration;
- gravity 9.81 m/s² in −z; no drive torque: the shaft starts spinning at
  ω = 2π rad/s with every body turning rigidly with it, and then spins freely;
  10 s; the benchmark's output is the slider height s(t).

The stiff, heavily damped couplers give the slider a fast, overdamped mode (rate
about 2c sin²30°/m_slider ≈ 7e3 1/s) beside the slow swing of the balls (between
about 15° and 30° below the horizontal, period near 1 s, slowly damped), the point of
the problem for integrators. Since the couplers are force elements, the constraint
graph is a tree (shaft, slider, two rods; 4 degrees of freedom, no closed loop and no
redundant row), unlike a governor with rigid couplers.

The motion stays symmetric (the rods mirror each other through the shaft), so it has
an independent three-coordinate description, `flyball_governor_reference`, written
by hand with the same numbers (the module constants below are shared by both).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from ..spatial import Mechanism, quaternion_from_matrix, quaternion_rates
from ._example import Example

GRAVITY = 9.81  # m/s², in −z
DENSITY = 3000.0  # kg/m³ of shaft, rods and slider
SHAFT_LENGTH = 1.0  # m, also the height h of the hinges A, B
BAR_SIDE = 0.01  # m, square section of shaft and rods
ROD_LENGTH = 1.0  # m, hinge A to ball C
SLIDER_SIDE = 0.1  # m, cube
BALL_MASS = 5.0  # kg, point mass at C and at D
HINGE_OFFSET = 0.05  # m, |A_x| = |B_x| = half the distance AB
SLIDER_POINT = 0.05  # m, |E_x| = |F_x| = half the slider side
SPRING_POINT = 0.5  # m, rod point of the spring-damper, from the hinge (the midpoint)
STIFFNESS = 8.0e5  # N/m
DAMPING = 4.0e4  # N·s/m
REST_LENGTH = 0.5  # m
S0 = 0.5  # m, initial slider height
ALPHA0 = math.radians(30.0)  # initial rod angle below the horizontal
OMEGA0 = 2.0 * math.pi  # rad/s, initial spin


def _cuboid(mass, a, b, c):
    """Principal central inertia `(3,)` of a uniform a × b × c box (kg·m²)."""
    return np.array([b * b + c * c, a * a + c * c, a * a + b * b]) * mass / 12.0


class GovernorData(NamedTuple):
    """Masses (kg), principal central inertias `(3,)` (kg·m², body axes) and the rod's
    mass-centre distance from its hinge (m), derived from the module constants."""

    shaft_mass: float
    shaft_inertia: np.ndarray  # body z along the shaft
    slider_mass: float
    slider_inertia: np.ndarray
    rod_mass: float  # bar plus ball
    rod_inertia: np.ndarray  # body x along the rod, about the combined mass centre
    rod_com: float  # d: hinge to the combined mass centre, along the rod


def governor_data() -> GovernorData:
    """The inertial data of A05 from its dimensions, density and ball mass.

    Each rod is one rigid body: the 0.3 kg bar (centroid at ℓ/2 from the hinge) and
    the 5 kg point ball at ℓ; its mass centre lies at
    `d = (m_bar ℓ/2 + m_ball ℓ)/(m_bar + m_ball)` from the hinge, and its transverse
    moment about that centre is `m_bar(ℓ² + w²)/12 + m_bar(ℓ/2 − d)² + m_ball(ℓ − d)²`
    (parallel axes), its axial moment the bar's `m_bar·2w²/12`.
    """
    shaft_mass = DENSITY * SHAFT_LENGTH * BAR_SIDE**2
    slider_mass = DENSITY * SLIDER_SIDE**3
    bar_mass = DENSITY * ROD_LENGTH * BAR_SIDE**2
    rod_mass = bar_mass + BALL_MASS
    d = (bar_mass * ROD_LENGTH / 2 + BALL_MASS * ROD_LENGTH) / rod_mass
    bar = _cuboid(bar_mass, ROD_LENGTH, BAR_SIDE, BAR_SIDE)
    shift = bar_mass * (ROD_LENGTH / 2 - d) ** 2 + BALL_MASS * (ROD_LENGTH - d) ** 2
    rod_inertia = bar + np.array([0.0, shift, shift])
    return GovernorData(shaft_mass, _cuboid(shaft_mass, BAR_SIDE, BAR_SIDE, SHAFT_LENGTH), slider_mass,
                        _cuboid(slider_mass, SLIDER_SIDE, SLIDER_SIDE, SLIDER_SIDE), rod_mass, rod_inertia, d)


def _rotation_z(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _rotation_y(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _quaternion(R):
    """Unit quaternion (scalar first, e0 ≥ 0) of a rotation matrix."""
    e = np.asarray(quaternion_from_matrix(jnp.asarray(R)))
    return e if e[0] >= 0 else -e


def flyball_governor_configuration(psi, theta, s, psi_dot=0.0, theta_dot=0.0, s_dot=0.0):
    """`(q, q̇)` of the mbdjax model (28,) for a symmetric state: shaft angle ψ about z,
    both rods at θ below the horizontal, slider height s, and their rates.

    Body frames: shaft `R_z(ψ)` (origin at its centroid, height h/2); slider `R_z(ψ)`
    (centre at height s); rod AC `R_z(ψ) R_y(θ)` and rod BD `R_z(ψ + π) R_y(θ)`
    (origin at the rod's mass centre, x along the rod from the hinge outwards, y the
    hinge axis). Velocities from ω = ψ̇ e_z + θ̇ (rod hinge axis) and v = ṙ.
    """
    data = governor_data()
    d, h, a = data.rod_com, SHAFT_LENGTH, HINGE_OFFSET
    ez = np.array([0.0, 0.0, 1.0])
    q, qd = [], []

    def add(r, R, v, w):
        e = _quaternion(R)
        q.extend(list(r) + list(e))
        qd.extend(list(v) + list(np.asarray(quaternion_rates(jnp.asarray(e), jnp.asarray(w)))))

    w_spin = psi_dot * ez
    add([0.0, 0.0, h / 2], _rotation_z(psi), [0.0, 0.0, 0.0], w_spin)
    add([0.0, 0.0, s], _rotation_z(psi), [0.0, 0.0, s_dot], w_spin)
    for offset in (0.0, math.pi):
        Rz = _rotation_z(psi + offset)
        rho, z = a + d * math.cos(theta), h - d * math.sin(theta)
        r = Rz @ np.array([rho, 0.0, z])
        # d/dt of R_z(ψ)[ρ, 0, z]: ψ̇ e_z × r plus the in-plane rate (ρ̇, 0, ż).
        v = np.cross(w_spin, r) + Rz @ np.array([-d * math.sin(theta) * theta_dot, 0.0,
                                                 -d * math.cos(theta) * theta_dot])
        w = w_spin + theta_dot * (Rz @ np.array([0.0, 1.0, 0.0]))
        add(r, Rz @ _rotation_y(theta), v, w)
    return jnp.asarray(np.array(q)), jnp.asarray(np.array(qd))


def governor_outputs(q):
    """`(ψ, θ_AC, θ_BD, s)` of mbdjax configurations `q (..., 28)`: the shaft angle
    (unwrapped along the last-but-one axis when `q` is a trajectory), the rods' angles
    below the horizontal (`sin θ = −(rod x axis)·e_z`) and the slider height (m).
    NumPy arrays of shape `q.shape[:-1]`."""
    q = np.asarray(q)
    e_shaft = q[..., 3:7]
    psi = 2.0 * np.arctan2(e_shaft[..., 3], e_shaft[..., 0])
    if psi.ndim:
        psi = np.unwrap(psi)

    def angle(e):  # R[2, 0] = 2(e1 e3 − e0 e2) for R(e) of mbdjax.spatial.quaternion_matrix
        return np.arcsin(np.clip(2.0 * (e[..., 0] * e[..., 2] - e[..., 1] * e[..., 3]), -1.0, 1.0))

    return psi, angle(q[..., 17:21]), angle(q[..., 24:28]), q[..., 9]


def flyball_governor(t1: float = 10.0, damping: float = DAMPING) -> Example:
    """IFToMM benchmark A05, the stiff flyball governor (see the module docstring).

    Bodies `"shaft"`, `"slider"`, `"rod_ac"`, `"rod_bd"` with Euler parameters
    (28 coordinates; each rod body includes its ball); joints `"bearing"`
    (ground–shaft revolute about z at the origin), `"sleeve"` (shaft–slider
    prismatic along the shaft), `"hinge_a"`, `"hinge_b"` (shaft–rod revolutes);
    spring-dampers `"coupler_ac"`, `"coupler_bd"` (slider E, F to the rods'
    midpoints). 24 holonomic rows (4 normalizations, 5 + 5 + 5 + 5 joint rows) of full
    rank: 4 degrees of freedom, a tree. Gravity 9.81 m/s² in −z. Starts at the
    benchmark's state: s = 0.5 m, rods 30° below the horizontal, spin 2π rad/s.
    `damping` (N·s/m) replaces the couplers' c (0 gives a conservative variant).

    References: IFToMM benchmark library, problem A05 (stiff flyball governor);
    M. González, D. Dopico, U. Lugrís, J. Cuadrado, Multibody System Dynamics 16
    (2006) 179–190.
    """
    data = governor_data()
    d, h, a = data.rod_com, SHAFT_LENGTH, HINGE_OFFSET
    mech = Mechanism(gravity=(0.0, 0.0, -GRAVITY))
    mech.body("shaft", mass=data.shaft_mass, inertia=data.shaft_inertia, orientation="quaternion")
    mech.body("slider", mass=data.slider_mass, inertia=data.slider_inertia, orientation="quaternion")
    mech.body("rod_ac", mass=data.rod_mass, inertia=data.rod_inertia, orientation="quaternion")
    mech.body("rod_bd", mass=data.rod_mass, inertia=data.rod_inertia, orientation="quaternion")
    z = (0.0, 0.0, 1.0)
    mech.revolute("bearing", "ground", (0.0, 0.0, 0.0), z, "shaft", (0.0, 0.0, -h / 2), z)
    mech.prismatic("sleeve", "shaft", (0.0, 0.0, 0.0), z, "slider", (0.0, 0.0, 0.0), z)
    # Rod BD's frame is rod AC's turned by π about z: its hinge axis is −y of the shaft.
    mech.revolute("hinge_a", "shaft", (a, 0.0, h / 2), (0.0, 1.0, 0.0), "rod_ac", (-d, 0.0, 0.0), (0.0, 1.0, 0.0))
    mech.revolute("hinge_b", "shaft", (-a, 0.0, h / 2), (0.0, -1.0, 0.0), "rod_bd", (-d, 0.0, 0.0), (0.0, 1.0, 0.0))
    rod_point = (SPRING_POINT - d, 0.0, 0.0)
    mech.spring_damper("coupler_ac", "slider", (SLIDER_POINT, 0.0, 0.0), "rod_ac", rod_point,
                       k=STIFFNESS, c=float(damping), length0=REST_LENGTH)
    mech.spring_damper("coupler_bd", "slider", (-SLIDER_POINT, 0.0, 0.0), "rod_bd", rod_point,
                       k=STIFFNESS, c=float(damping), length0=REST_LENGTH)
    q0, qd0 = flyball_governor_configuration(0.0, ALPHA0, S0, OMEGA0)
    return Example("flyball-governor" if damping == DAMPING else "flyball-governor-undamped",
                   "IFToMM A05: stiff flyball governor; shaft, slider and two 1 m rods with 5 kg balls, "
                   f"couplers replaced by spring-dampers (k = 8e5 N/m, c = {damping:g} N s/m), spinning "
                   "freely from 2π rad/s under gravity.",
                   mech.build(), q0, qd0, float(t1), mech)


class GovernorReference(NamedTuple):
    """The hand-derived symmetric governor: `rhs(t, y) -> ẏ` for scipy's `solve_ivp`
    with `y = [ψ, θ, s, ψ̇, θ̇, ṡ]`, the benchmark's initial state `y0`, and
    `energy(y) -> (T + V, T)` (J, the same datum as the mbdjax model's)."""

    rhs: object
    y0: list
    energy: object


def flyball_governor_reference(damping: float = DAMPING) -> GovernorReference:
    """The flyball governor's symmetric motion, derived by hand (no mbdjax).

    Coordinates: shaft angle ψ, rod angle θ below the horizontal (both rods, by
    symmetry), slider height s. In the frame turning with the shaft, rod AC lies in
    the x–z plane: hinge at (a, h), mass centre at `ρ = a + d cos θ`, `z = h − d sin θ`,
    rod point of the coupler at `(a + b cos θ, h − b sin θ)`, slider point at `(e, s)`.

    Kinetic energy. The rod's angular velocity is ψ̇ e_z + θ̇ e_y(shaft), with body
    components `(−ψ̇ sin θ, θ̇, ψ̇ cos θ)` in rod axes (x along the rod; central
    moments I_a axial, I_t transverse); its mass centre moves at
    `v² = d²θ̇² + ρ²ψ̇²`. Shaft and slider turn about their axes (J_sh, J_sl) and the
    slider translates at ṡ. With rod BD the mirror image of AC,

        T = ½ J(θ) ψ̇² + ½ K θ̇² + ½ m_sl ṡ²,
        J(θ) = J_sh + J_sl + 2 [m_r (a + d cos θ)² + I_a sin²θ + I_t cos²θ],
        K = 2 (m_r d² + I_t).

    Potential (gravity g in −z, two springs of stiffness k and rest length ℓ₀):

        V = m_sh g h/2 + m_sl g s + 2 m_r g (h − d sin θ) + k (ℓ − ℓ₀)²,
        ℓ² = (a + b cos θ − e)² + (h − b sin θ − s)².

    Dissipation (two dampers c, Rayleigh content): `D = c ℓ̇²`, `ℓ̇ = ℓ_θ θ̇ + ℓ_s ṡ`.
    The coupler lies in the turning plane, so its force has no moment about the shaft
    and ℓ̇ has no ψ̇ part: ψ is cyclic and `p_ψ = J(θ) ψ̇` is conserved. Lagrange's
    equations `d/dt ∂T/∂q̇ − ∂T/∂q + ∂V/∂q + ∂D/∂q̇ = 0`:

        J ψ̈ = −J'(θ) θ̇ ψ̇,
        K θ̈ = ½ J'(θ) ψ̇² + 2 m_r g d cos θ − 2k(ℓ − ℓ₀) ℓ_θ − 2c ℓ̇ ℓ_θ,
        m_sl s̈ = −m_sl g − 2k(ℓ − ℓ₀) ℓ_s − 2c ℓ̇ ℓ_s,

    with `J'(θ) = 2[−2 m_r d (a + d cos θ) sin θ + 2 (I_a − I_t) sin θ cos θ]`,
    `ℓ_θ = −b[(a + b cos θ − e) sin θ + (h − b sin θ − s) cos θ]/ℓ`,
    `ℓ_s = −(h − b sin θ − s)/ℓ`. Numbers: the module constants through
    `governor_data()`, shared with `flyball_governor` (a = e = 0.05 m, b = 0.5 m,
    h = 1 m). Initial state `[0, 30°, 0.5, 2π, 0, 0]`.

    References: IFToMM benchmark library, problem A05; Lagrange's equations with a
    Rayleigh function (THEORY §2).
    """
    data = governor_data()
    m_r, d = data.rod_mass, data.rod_com
    I_a, I_t = float(data.rod_inertia[0]), float(data.rod_inertia[1])
    J_fixed = float(data.shaft_inertia[2] + data.slider_inertia[2])
    m_sl, m_sh = data.slider_mass, data.shaft_mass
    a, b, e, h, g = HINGE_OFFSET, SPRING_POINT, SLIDER_POINT, SHAFT_LENGTH, GRAVITY
    k, c, l0 = STIFFNESS, float(damping), REST_LENGTH
    K = 2.0 * (m_r * d * d + I_t)

    def spin_inertia(th):
        ct, st = math.cos(th), math.sin(th)
        J = J_fixed + 2.0 * (m_r * (a + d * ct) ** 2 + I_a * st * st + I_t * ct * ct)
        dJ = 2.0 * (-2.0 * m_r * d * (a + d * ct) * st + 2.0 * (I_a - I_t) * st * ct)
        return J, dJ

    def coupler(th, s):
        ct, st = math.cos(th), math.sin(th)
        dx, dz = a + b * ct - e, h - b * st - s
        ell = math.hypot(dx, dz)
        return ell, -b * (dx * st + dz * ct) / ell, -dz / ell

    def rhs(t, y):
        _, th, s, psi_d, th_d, s_d = y
        J, dJ = spin_inertia(th)
        ell, l_th, l_s = coupler(th, s)
        tension = 2.0 * (k * (ell - l0) + c * (l_th * th_d + l_s * s_d))  # both couplers
        psi_dd = -dJ * th_d * psi_d / J
        th_dd = (0.5 * dJ * psi_d**2 + 2.0 * m_r * g * d * math.cos(th) - tension * l_th) / K
        s_dd = (-m_sl * g - tension * l_s) / m_sl
        return [psi_d, th_d, s_d, psi_dd, th_dd, s_dd]

    def energy(y):
        _, th, s, psi_d, th_d, s_d = y
        J, _ = spin_inertia(th)
        ell, _, _ = coupler(th, s)
        T = 0.5 * J * psi_d**2 + 0.5 * K * th_d**2 + 0.5 * m_sl * s_d**2
        V = m_sh * g * h / 2 + m_sl * g * s + 2.0 * m_r * g * (h - d * math.sin(th)) + k * (ell - l0) ** 2
        return T + V, T

    return GovernorReference(rhs, [0.0, ALPHA0, S0, OMEGA0, 0.0, 0.0], energy)
