"""Greenwood's spatial examples, built with `mbdjax.spatial.Mechanism`.

- `heavy_top`: symmetric top with a fixed point (Greenwood example 4.5);
- `disk`: thin uniform disk rolling on a horizontal plane (example 4.6);
- `rolling_hemisphere`: unsymmetrical top with a hemispherical base rolling on a
  horizontal plane (example 4.7).

All three use 3-1-3 Euler angles (φ, θ, ψ) for the body, `R = R_z(φ) R_x(θ) R_z(ψ)`,
with the symmetry (or base) axis along body z, so θ is the angle between that axis
and the vertical. Each function also gives Greenwood's quasi-velocities for the
quasi-velocity formulation (`quasi_velocities(example)`). Values are ours (the text
has none).
"""

from __future__ import annotations

import functools
import math

import jax.numpy as jnp

from .._initial import initial_conditions
from .._formulation.quasi_velocity import QuasiVelocity
from ..spatial import Greenwood, Mechanism, body_poses
from ..spatial import _rotations as rot
from ._example import Example

G = 9.81


# ------------------------------------------------------------------------------ top
TOP = {"mass": 0.5, "A": 1.2e-3, "C": 2.0e-3, "l": 0.05}


def top_precession_rate(theta, spin, mass=TOP["mass"], A=TOP["A"], C=TOP["C"], l=TOP["l"], g=G):
    """Slow steady-precession rate `φ̇` of the heavy symmetric top at nutation `θ`
    and spin `Ω = ψ̇ + φ̇ cos θ` about its axis.

    From the θ equation of the Euler-angle Lagrangian `T = ½ I (θ̇² + φ̇² sin²θ) + ½ C Ω²`,
    `V = m g l cos θ`, `I = A + m l²` (transverse moment about the fixed point): with
    θ̇ = θ̈ = 0, `I φ̇² cos θ − C Ω φ̇ + m g l = 0`; the smaller root (Greenwood §4.4,
    example 4.5; also his §8 on the top).
    """
    inertia = A + mass * l * l
    a, b, c = inertia * math.cos(theta), -C * spin, mass * g * l
    disc = b * b - 4 * a * c
    if disc < 0:
        raise ValueError("top_precession_rate: no steady precession at this spin (spin too slow).")
    return (-b - math.sqrt(disc)) / (2 * a)


@functools.lru_cache(maxsize=None)
def _top_model(orientation):
    # One model per orientation kind, shared by every initial state (no recompiling).
    mech = Mechanism(gravity=(0.0, 0.0, -G))
    mech.body("top", mass=TOP["mass"], inertia=(TOP["A"], TOP["A"], TOP["C"]), orientation=orientation)
    mech.spherical("tip", "ground", (0.0, 0.0, 0.0), "top", (0.0, 0.0, -TOP["l"]))
    return mech, mech.build()


def heavy_top(theta0=0.5, spin=60.0, precession=None, nutation_rate=0.0, orientation="euler313") -> Example:
    """Heavy symmetric top with its tip fixed at the origin (Greenwood example 4.5).

    m = 0.5 kg, centre of mass l = 0.05 m from the tip along the symmetry axis,
    moments about the centre of mass A = 1.2e-3 (transverse) and C = 2.0e-3 kg·m²
    (axial), g = 9.81. Body "top" (3-1-3 Euler angles, or Euler parameters with
    `orientation="quaternion"`: the same motion), spherical joint "tip" to ground.
    Starts at φ = ψ = 0, nutation θ0, spin Ω about the axis; the precession rate
    defaults to the steady value `top_precession_rate(θ0, Ω)`. t1 = 5 s.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models
        >>> ex = models.heavy_top()
        >>> ex.model.n, mbd.check(ex.model, ex.q0).dof
        (6, 3)
    """
    mech, model = _top_model(orientation)
    phid = top_precession_rate(theta0, spin) if precession is None else precession
    psid = spin - phid * math.cos(theta0)
    angles, rates = jnp.array([0.0, theta0, 0.0]), jnp.array([phid, nutation_rate, psid])
    centre = TOP["l"] * jnp.array([0.0, -math.sin(theta0), math.cos(theta0)])  # body z at φ = 0
    if orientation == "quaternion":
        e = rot.quaternion_from_euler313(angles)
        ed = rot.quaternion_rates(e, rot.euler313_rate_matrix(angles) @ rates)
        names = ("top.e1", "top.e2", "top.e3")
        fix_q = {n: float(v) for n, v in zip(names, e[1:])}
        fix_qd = {n: float(v) for n, v in zip(names, ed[1:])}
        guess = jnp.concatenate([centre, e])
    else:
        fix_q = {"top.phi": 0.0, "top.theta": theta0, "top.psi": 0.0}
        fix_qd = {"top.phi": phid, "top.theta": nutation_rate, "top.psi": psid}
        guess = jnp.concatenate([centre, angles])
    q0, qd0 = initial_conditions(model, guess, fix_q=fix_q, fix_qd=fix_qd)
    return Example("top", "Heavy symmetric top on a fixed point (Greenwood 4.5), 3-1-3 Euler angles, "
                   f"θ0 = {theta0:g} rad, spin {spin:g} rad/s.", model, q0, qd0, 5.0, mech)


# ----------------------------------------------------------------------------- disk
DISK = {"mass": 1.0, "radius": 0.3}


def disk_spin_for_circle(theta, precession, mass=DISK["mass"], radius=DISK["radius"], g=G):
    """Spin `Ω = ψ̇ + φ̇ cos θ` for steady circular rolling of the thin disk at tilt θ
    (from the vertical; upright θ = π/2) and precession rate `φ̇`.

    Steady motion (θ̇ = 0, φ̇ and Ω constant): the centre moves with `v = −a Ω e₁` and
    the angular-momentum balance about the centre gives
    `(C + m a²) Ω φ̇ sin θ − A φ̇² sin θ cos θ + m g a cos θ = 0`, with `A = m a²/4`,
    `C = m a²/2` (Greenwood example 4.6, eqs. (4.174)–(4.176) at θ̇ = 0).
    """
    A, C = 0.25 * mass * radius**2, 0.5 * mass * radius**2
    s, c = math.sin(theta), math.cos(theta)
    return (A * precession**2 * s * c - mass * g * radius * c) / ((C + mass * radius**2) * precession * s)


def disk_critical_spin(mass=DISK["mass"], radius=DISK["radius"], g=G):
    """Spin above which straight upright rolling of the thin disk is stable:
    `Ω² > m g a A / (C (C + m a²)) = g / (3a)` (linearized tilt equation)."""
    A, C = 0.25 * mass * radius**2, 0.5 * mass * radius**2
    return math.sqrt(mass * g * radius * A / (C * (C + mass * radius**2)))


@functools.lru_cache(maxsize=None)
def _disk_model():
    mech = Mechanism(gravity=(0.0, 0.0, -G))
    a, m = DISK["radius"], DISK["mass"]
    mech.body("disk", mass=m, inertia=(0.25 * m * a * a, 0.25 * m * a * a, 0.5 * m * a * a))
    mech.rolling_disk("contact", "disk", radius=a)
    return mech, mech.build()


def disk(theta0=math.pi / 2 - 0.3, precession=1.0, spin=None, tilt_rate=0.0) -> Example:
    """Thin uniform disk rolling without slip on the plane z = 0 (Greenwood example 4.6).

    m = 1 kg, radius a = 0.3 m, g = 9.81; body "disk" (3-1-3 Euler angles, symmetry
    axis body z), contact "contact" (rows "contact.height", "contact.slip1",
    "contact.slip2"). Starts at the origin with heading φ = 0, tilt θ0 from the
    vertical and precession rate φ̇; the spin Ω defaults to the steady circular
    rolling value `disk_spin_for_circle(θ0, φ̇)`. t1 = 5 s.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models
        >>> ex = models.disk()
        >>> ex.model.m_h, ex.model.m_n, mbd.check(ex.model, ex.q0).dof
        (1, 2, 3)
    """
    a = DISK["radius"]
    mech, model = _disk_model()
    omega = disk_spin_for_circle(theta0, precession) if spin is None else spin
    psid = omega - precession * math.cos(theta0)
    guess = jnp.array([0.0, 0.0, a * math.sin(theta0), 0.0, theta0, 0.0])
    q0, qd0 = initial_conditions(
        model, guess, fix_q={"disk.x": 0.0, "disk.y": 0.0, "disk.phi": 0.0, "disk.theta": theta0, "disk.psi": 0.0},
        fix_qd={"disk.phi": precession, "disk.theta": tilt_rate, "disk.psi": psid})
    return Example("rolling-disk", "Thin disk rolling without slip on a plane (Greenwood 4.6), spatial "
                   f"front end, tilt {theta0:g} rad, precession {precession:g} rad/s.", model, q0, qd0, 5.0, mech)


# ----------------------------------------------------------------------- hemisphere
HEMISPHERE = {"mass": 0.3, "radius": 0.05, "offset": 0.02, "inertia": (1.0e-4, 1.5e-4, 2.0e-4)}


def rolling_hemisphere(theta0=0.3, spin=25.0) -> Example:
    """Unsymmetrical top with a hemispherical base rolling on the plane z = 0
    (Greenwood example 4.7).

    m = 0.3 kg, base radius a = 0.05 m, the sphere's centre 0.02 m above the centre
    of mass along body z, principal moments (1.0, 1.5, 2.0)e-4 kg·m² (all
    different), g = 9.81. Body "top", contact "base". Starts with its axis tilted θ0
    from the vertical, spinning at ψ̇ = `spin` about it, the contact point at the
    origin. t1 = 3 s.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models
        >>> ex = models.rolling_hemisphere()
        >>> ex.model.m_h, ex.model.m_n, mbd.check(ex.model, ex.q0).dof
        (1, 2, 3)
    """
    h = HEMISPHERE
    mech = Mechanism(gravity=(0.0, 0.0, -G))
    mech.body("top", mass=h["mass"], inertia=h["inertia"])
    mech.rolling_sphere("base", "top", radius=h["radius"], centre=(0.0, 0.0, h["offset"]))
    model = mech.build()
    axis = (0.0, -math.sin(theta0), math.cos(theta0))
    centre_height = h["radius"] - h["offset"] * axis[2]
    guess = jnp.array([-h["offset"] * axis[0], -h["offset"] * axis[1], centre_height, 0.0, theta0, 0.0])
    q0, qd0 = initial_conditions(model, guess,
                                 fix_q={"top.phi": 0.0, "top.theta": theta0, "top.psi": 0.0,
                                        "top.x": float(guess[0]), "top.y": float(guess[1])},
                                 fix_qd={"top.phi": 0.0, "top.theta": 0.0, "top.psi": spin})
    return Example("rolling-hemisphere", "Unsymmetrical top with a hemispherical base rolling on a plane "
                   f"(Greenwood 4.7), tilt {theta0:g} rad, spin {spin:g} rad/s.", model, q0, qd0, 3.0, mech)


# ------------------------------------------------------------------ quasi-velocities
def quasi_velocities(example, body_level=True):
    """Greenwood's quasi-velocities for the spatial examples: a `spatial.Greenwood`
    formulation (his body-level general dynamical equation, γ and β by autodiff), or
    with `body_level=False` the same `u` in `QuasiVelocity(definition=...)`
    (generalized-coordinate form `Wᵀ M W u̇ = …`).

    - top (4.5): `u = (φ̇, θ̇, Ω)`, Ω the body's spin `ω'_z` about its symmetry axis;
    - rolling disk (4.6): `u = (θ̇, φ̇ sin θ, Ω)`, the angular velocity of the disk in the
      frame (node line, in-plane, symmetry axis) that does not spin with it;
    - rolling hemisphere (4.7): `u = ω'`, the body-axis angular-velocity components.

    Example:

        >>> from mbdjax import models
        >>> type(models.quasi_velocities(models.heavy_top())).__name__
        'Greenwood'
        >>> type(models.quasi_velocities(models.heavy_top(), body_level=False)).__name__
        'QuasiVelocity'
    """
    mech = example.mechanism
    poses = body_poses(mech)
    body = mech.bodies[0]
    i_phi, i_theta = mech.index(f"{body}.phi"), mech.index(f"{body}.theta")

    if example.name == "top":
        def definition(q, qd, t, p):
            return jnp.stack([qd[i_phi], qd[i_theta], poses(q, qd)[body].w_body[2]])
    elif example.name == "rolling-disk":
        def definition(q, qd, t, p):
            return jnp.stack([qd[i_theta], qd[i_phi] * jnp.sin(q[i_theta]), poses(q, qd)[body].w_body[2]])
    elif example.name == "rolling-hemisphere":
        def definition(q, qd, t, p):
            return poses(q, qd)[body].w_body
    else:
        raise ValueError(f"quasi_velocities: no Greenwood choice for example {example.name!r}.")
    return Greenwood(mech, definition) if body_level else QuasiVelocity(definition=definition)
