"""Four-bar linkages: Grashof crank-rocker, massless coupler, redundant parallelogram.

Every link is a uniform bar along its local x axis, centroid at mid-length, ends at
local (±ℓ/2, 0); masses 2 kg/m × length unless stated, inertia mℓ²/12.
"""

from __future__ import annotations

import math


from ..planar import Mechanism
from .._initial import initial_conditions
from .._tracing import device_array
from ._example import Example

RHO = 2.0  # kg/m
CRANK, COUPLER, ROCKER, GROUND = 0.1, 0.35, 0.3, 0.4  # m (Grashof: 0.1 + 0.4 < 0.35 + 0.3)


def _bar(mech, name, length, massless=False):
    m = 0.0 if massless else RHO * length
    mech.body(name, mass=m, inertia=m * length**2 / 12.0)


def four_bar_configuration(theta, a=CRANK, b=COUPLER, c=ROCKER, d=GROUND):
    """Assembled `q` (crank, coupler, rocker) at crank angle `theta`, open branch
    (coupler-rocker pin above the line from the crank pin to the rocker pivot)."""
    bx, by = a * math.cos(theta), a * math.sin(theta)
    ex, ey = d - bx, -by
    e = math.hypot(ex, ey)
    along = (b * b - c * c + e * e) / (2.0 * e)
    h = math.sqrt(b * b - along * along)
    ux, uy = ex / e, ey / e
    cx, cy = bx + along * ux - h * uy, by + along * uy + h * ux
    return device_array([
        0.5 * bx, 0.5 * by, theta,
        0.5 * (bx + cx), 0.5 * (by + cy), math.atan2(cy - by, cx - bx),
        0.5 * (d + cx), 0.5 * cy, math.atan2(cy, cx - d),
    ])


def _four_bar_mechanism(massless_coupler=False):
    mech = Mechanism(gravity=(0.0, -9.81))
    _bar(mech, "crank", CRANK)
    _bar(mech, "coupler", COUPLER, massless=massless_coupler)
    _bar(mech, "rocker", ROCKER)
    mech.revolute("crank_pivot", "ground", (0.0, 0.0), "crank", (-0.5 * CRANK, 0.0))
    mech.revolute("crank_coupler", "crank", (0.5 * CRANK, 0.0), "coupler", (-0.5 * COUPLER, 0.0))
    mech.revolute("coupler_rocker", "coupler", (0.5 * COUPLER, 0.0), "rocker", (0.5 * ROCKER, 0.0))
    mech.revolute("rocker_pivot", "ground", (GROUND, 0.0), "rocker", (-0.5 * ROCKER, 0.0))
    return mech


def _released(mech, name, description, theta0, omega0, t1, q_of_theta):
    model = mech.build()
    q0, qd0 = initial_conditions(model, q_of_theta(theta0), fix_q={"crank.phi": theta0},
                                 fix_qd={"crank.phi": omega0})
    return Example(name, description, model, q0, qd0, t1, mech)


def four_bar() -> Example:
    """Grashof crank-rocker four-bar under gravity (one degree of freedom).

    Links: crank 0.1 m, coupler 0.35 m, rocker 0.3 m, ground pivots (0, 0) and
    (0.4, 0) m; uniform bars of 2 kg/m. Starts at crank angle π/3 with crank speed
    5 rad/s (open branch); t1 = 2 s. Bodies "crank", "coupler", "rocker"; joints
    "crank_pivot", "crank_coupler", "coupler_rocker", "rocker_pivot".

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models
        >>> ex = models.four_bar()
        >>> mbd.check(ex.model, ex.q0).dof
        1
    """
    return _released(_four_bar_mechanism(), "four-bar",
                     "Grashof crank-rocker four-bar (0.1, 0.35, 0.3, 0.4 m) under gravity, "
                     "from θ = π/3 at 5 rad/s.", math.pi / 3, 5.0, 2.0, four_bar_configuration)


def massless_link_four_bar() -> Example:
    """The `four_bar()` linkage with a massless coupler (mass 0, inertia 0).

    M is singular (the coupler's 3×3 block is zero) but positive on the null space of
    B, so the equations of motion are well posed (THEORY §3); use a dense
    (non-Schur) solve.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models
        >>> ex = models.massless_link_four_bar()
        >>> float(ex.model.params["coupler"]["mass"]), mbd.check(ex.model, ex.q0).ok
        (0.0, True)
    """
    return _released(_four_bar_mechanism(massless_coupler=True), "massless-four-bar",
                     "Four-bar with a massless coupler: M singular, positive on null(B).",
                     math.pi / 3, 5.0, 2.0, four_bar_configuration)


def parallelogram_redundant() -> Example:
    """A parallelogram linkage with an extra parallel link: redundant everywhere.

    Ground pivots (0, 0), (0.5, 0) and (1, 0) m carry three parallel links of 0.5 m
    ("crank", "link", "rocker"), pinned to a 1 m "coupler" at its ends and middle.
    Six revolutes give 12 rows for 12 coordinates, yet the linkage moves with one
    degree of freedom: Φ_q has rank 11 at every configuration (one redundant row;
    the multipliers are not unique, the motion is). Released from rest at θ = π/3
    under gravity; t1 = 2 s. Uniform bars of 2 kg/m.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models
        >>> ex = models.parallelogram_redundant()
        >>> report = mbd.check(ex.model, ex.q0)
        >>> report.dof, report.dependent
        (1, ('link_coupler.y',))
    """
    a, d = 0.5, 1.0
    mech = Mechanism(gravity=(0.0, -9.81))
    _bar(mech, "crank", a)
    _bar(mech, "coupler", d)
    _bar(mech, "rocker", a)
    _bar(mech, "link", a)
    mech.revolute("crank_pivot", "ground", (0.0, 0.0), "crank", (-0.5 * a, 0.0))
    mech.revolute("crank_coupler", "crank", (0.5 * a, 0.0), "coupler", (-0.5 * d, 0.0))
    mech.revolute("rocker_pivot", "ground", (d, 0.0), "rocker", (-0.5 * a, 0.0))
    mech.revolute("rocker_coupler", "rocker", (0.5 * a, 0.0), "coupler", (0.5 * d, 0.0))
    mech.revolute("link_pivot", "ground", (0.5 * d, 0.0), "link", (-0.5 * a, 0.0))
    mech.revolute("link_coupler", "link", (0.5 * a, 0.0), "coupler", (0.0, 0.0))

    def q_of_theta(theta):
        ux, uy = math.cos(theta), math.sin(theta)
        return device_array([
            0.5 * a * ux, 0.5 * a * uy, theta,
            a * ux + 0.5 * d, a * uy, 0.0,
            d + 0.5 * a * ux, 0.5 * a * uy, theta,
            0.5 * d + 0.5 * a * ux, 0.5 * a * uy, theta,
        ])

    return _released(mech, "parallelogram-redundant",
                     "Parallelogram linkage with a redundant third parallel link (rank-deficient Φ_q).",
                     math.pi / 3, 0.0, 2.0, q_of_theta)
