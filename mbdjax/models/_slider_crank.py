"""Slider-crank mechanisms (Haug §3.6 and §6.x slider-crank examples, with our values).

Geometry: the crank (a balanced flywheel, centroid at its pivot) turns about the
ground origin; its pin at local (r, 0) carries the connecting rod (uniform, length
L, centroid at mid-length), whose other end is pinned to the slider's centroid; the
slider moves on a translational joint along the global x axis. With crank angle θ:

    x_slider = r cos θ + sqrt(L² − r² sin² θ)

θ = 0 is the outer dead centre (crank and rod aligned).
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from ..planar import Mechanism
from .._initial import initial_conditions
from .._tracing import device_array
from ._example import Example

R_CRANK = 0.1  # m
L_ROD = 0.3  # m
OMEGA = 2.0 * math.pi  # rad/s, crank drive
MASS = {"crank": (1.0, 0.01), "rod": (0.5, 0.5 * L_ROD**2 / 12.0), "slider": (0.5, 1e-4)}  # (kg, kg·m²)


def slider_crank_configuration(theta, r=R_CRANK, L=L_ROD):
    """Assembled `q` (crank, rod, slider) at crank angle `theta` (closed form)."""
    s, c = math.sin(theta), math.cos(theta)
    w = math.sqrt(L * L - r * r * s * s)
    x = r * c + w
    beta = math.atan2(-r * s, w)
    return device_array([0.0, 0.0, theta, 0.5 * (r * c + x), 0.5 * r * s, beta, x, 0.0, 0.0])


def slider_crank_mechanism():
    mech = Mechanism(gravity=(0.0, -9.81))
    for name, (m, J) in MASS.items():
        mech.body(name, mass=m, inertia=J)
    mech.revolute("crank_pin", "ground", (0.0, 0.0), "crank", (0.0, 0.0))
    mech.revolute("rod_crank", "crank", (R_CRANK, 0.0), "rod", (-0.5 * L_ROD, 0.0))
    mech.revolute("rod_slider", "rod", (0.5 * L_ROD, 0.0), "slider", (0.0, 0.0))
    mech.translational("guide", "ground", (0.0, 0.0), "slider", (0.0, 0.0), (1.0, 0.0))
    return mech


def _slider_position(t, p):
    r, L = R_CRANK, L_ROD
    th = p["drive"]["omega"] * t
    return r * jnp.cos(th) + jnp.sqrt(L * L - (r * jnp.sin(th)) ** 2)


def slider_crank(driven: bool = True) -> Example:
    """Slider-crank: crank r = 0.1 m, rod L = 0.3 m, slider on the global x axis.

    Masses (kg) / inertias (kg·m²): crank 1.0 / 0.01 (flywheel, centroid on the
    pivot), rod 0.5 / 0.00375 (uniform), slider 0.5 / 1e-4. Gravity (0, −9.81) m/s².

    - `driven=True` ("slider-crank"): `drive_angle` "drive", φ_crank = ω t with
      `params["drive"]["omega"]` = 2π rad/s; zero degrees of freedom (kinematic
      analysis). Starts at the outer dead centre θ = 0, t1 = 1 s (one turn).
    - `driven=False` ("slider-crank-free"): one degree of freedom under gravity with
      a motor torque "motor" on the crank, τ = τ0 − c_m θ̇ (`params["motor"]["tau0"]`
      = 0.5 N·m, `["c"]` = 0.02 N·m·s/rad), and a spring-damper "spring" from the
      slider to ground point (0.6, 0) m (`params["spring"]["k"]` = 50 N/m, `["c"]` =
      1.0 N·s/m, `["length0"]` = 0.3 m). Released from rest at θ = π/4, t1 = 2 s.

    References: Haug, *Computer-Aided Kinematics and Dynamics of Mechanical Systems*,
    §3.6 (slider-crank kinematics) and ch. 6 (its dynamics); values are ours.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models
        >>> ex = models.slider_crank(driven=False)
        >>> mbd.check(ex.model, ex.q0).dof
        1
    """
    mech = slider_crank_mechanism()
    i_phi = mech.index("crank.phi")
    if driven:
        mech.drive_angle("drive", "ground", "crank", lambda t, p: p["drive"]["omega"] * t,
                         params={"omega": OMEGA})
        model = mech.build()
        q0, qd0 = initial_conditions(model, slider_crank_configuration(0.0))
        return Example("slider-crank", "Crank-driven slider-crank (r = 0.1 m, L = 0.3 m, ω = 2π rad/s); "
                       "zero degrees of freedom.", model, q0, qd0, 1.0, mech)
    mech.torque("motor", "crank", lambda q, qd, t, p: p["motor"]["tau0"] - p["motor"]["c"] * qd[i_phi],
                params={"tau0": 0.5, "c": 0.02})
    mech.spring_damper("spring", "ground", (0.6, 0.0), "slider", (0.0, 0.0), k=50.0, c=1.0, length0=0.3)
    model = mech.build()
    theta0 = math.pi / 4
    q0, qd0 = initial_conditions(model, slider_crank_configuration(theta0), fix_q={"crank.phi": theta0},
                                 fix_qd={"crank.phi": 0.0})
    return Example("slider-crank-free", "Slider-crank under gravity driven by a motor torque "
                   "0.5 − 0.02 θ̇ N·m against a slider spring-damper (k = 50 N/m, c = 1 N·s/m); "
                   "one degree of freedom, released from rest at θ = π/4.", model, q0, qd0, 2.0, mech)


def slider_crank_dead_centre(driver: str | None = "slider") -> Example:
    """The slider-crank of `slider_crank` at its outer dead centre θ = 0 (crank and rod
    aligned, slider at r + L = 0.4 m), for singular-configuration checks.

    - `driver="slider"`: the slider is driven, `drive_distance` "drive" from the ground
      origin with f(t) = r cos ωt + sqrt(L² − r² sin² ωt) (the motion of the
      crank-driven mechanism). Φ_q is square (9 × 9) and **singular** at t = 0 (rank
      8): the slider's motion does not determine the crank's there.
    - `driver="crank"`: crank driven as in `slider_crank()`; Φ_q is regular.
    - `driver=None`: free (one degree of freedom); B (8 × 9) keeps full row rank.

    `qd0` is the crank-driven motion's velocity (θ̇ = ω = 2π rad/s), which satisfies
    every velocity equation in all three cases; t1 = 0.5 s.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models
        >>> ex = models.slider_crank_dead_centre()
        >>> mbd.check(ex.model, ex.q0).ok
        False
    """
    if driver not in ("slider", "crank", None):
        raise ValueError(f"slider_crank_dead_centre: driver must be 'slider', 'crank' or None, got {driver!r}.")
    mech = slider_crank_mechanism()
    if driver == "slider":
        mech.drive_distance("drive", "ground", (0.0, 0.0), "slider", (0.0, 0.0), _slider_position,
                            params={"omega": OMEGA})
    elif driver == "crank":
        mech.drive_angle("drive", "ground", "crank", lambda t, p: p["drive"]["omega"] * t,
                         params={"omega": OMEGA})
    model = mech.build()
    # With the slider driven, Φ_q is singular here: the crank angle and speed are
    # conditioned as well (a consistent, rank-deficient system solved by least squares).
    fix = None if driver == "crank" else {"crank.phi": 0.0}
    fix_v = None if driver == "crank" else {"crank.phi": OMEGA}
    q0, qd0 = initial_conditions(model, slider_crank_configuration(0.0), fix_q=fix, fix_qd=fix_v)
    return Example("slider-crank-dead-centre", f"Slider-crank at the outer dead centre (driver: {driver}).",
                   model, q0, qd0, 0.5, mech)
