"""Network examples (Fabien ch. 1): a series RLC circuit and a DC motor driving the
planar slider-crank."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from .._initial import initial_conditions
from ..network import Network
from ._example import Example
from ._slider_crank import _mechanism, slider_crank_configuration


def rlc_capacitor_voltage(t, R=1.0, L=0.5, C=0.25, V=1.0):
    """Closed-form capacitor voltage of the series RLC switched onto V at t = 0 from
    rest: with α = R/2L and ω₀² = 1/LC, underdamped
    `V [1 − e^{−αt} (cos ω_d t + (α/ω_d) sin ω_d t)]`, ω_d² = ω₀² − α², overdamped
    `V [1 + (s₂ e^{s₁t} − s₁ e^{s₂t}) / (s₁ − s₂)]`, s₁,₂ = −α ± √(α² − ω₀²)."""
    t = np.asarray(t, dtype=float)
    a, w0sq = R / (2 * L), 1.0 / (L * C)
    if a * a < w0sq:
        wd = math.sqrt(w0sq - a * a)
        return V * (1 - np.exp(-a * t) * (np.cos(wd * t) + a / wd * np.sin(wd * t)))
    s1, s2 = -a + math.sqrt(a * a - w0sq), -a - math.sqrt(a * a - w0sq)
    return V * (1 + (s2 * np.exp(s1 * t) - s1 * np.exp(s2 * t)) / (s1 - s2))


def rlc(R=1.0, L=0.5, C=0.25, V=1.0) -> Example:
    """Series RLC circuit switched onto a V = 1 V source at t = 0 from rest.

    Nodes "n1" (source +), "n2", "n3" (capacitor +); elements "E" (effort source,
    `params["E"]["V"]`), "R" (1 Ω), "L" (0.5 H), "C" (0.25 F): ζ = (R/2)√(C/L) = 0.35,
    underdamped; t1 = 10 s. The capacitor voltage is `traj.effort("C")` (or the node
    effort `traj.effort("n3")`).
    """
    net = Network()
    for n in ("n1", "n2", "n3"):
        net.node(n, "electrical")
    net.effort_source("E", "n1", "ground", lambda t, p: p["E"]["V"], params={"V": V})
    net.resistor("R", "n1", "n2", R=R)
    net.inductor("L", "n2", "n3", L=L)
    net.capacitor("C", "n3", "ground", C=C)
    model = net.build()
    zero = jnp.zeros(model.n)
    return Example("rlc", "Series RLC (1 Ω, 0.5 H, 0.25 F) switched onto 1 V at t = 0.", model, zero, zero,
                   10.0, net)


def dc_motor_crank(V=6.0, K=0.5, R=2.0, L=0.01) -> Example:
    """A permanent-magnet DC motor on the crank shaft of the free slider-crank.

    The slider-crank of `slider_crank(driven=False)` (gravity, slider spring-damper
    "spring"), without its torque element; the network: a V = 6 V source "V" across
    the armature of "dcm" (K = 0.5 N·m/A, R = 2 Ω, L = 0.01 H), whose shaft node
    "shaft" is the coordinate "crank.phi". Starts from rest at θ = π/4 with zero
    current; t1 = 2 s.
    """
    mech = _mechanism()
    mech.spring_damper("spring", "ground", (0.6, 0.0), "slider", (0.0, 0.0), k=50.0, c=1.0, length0=0.3)
    crank = mech.build()
    net = Network()
    net.node("v", "electrical")
    net.node("shaft", "rotational")
    net.effort_source("V", "v", "ground", lambda t, p: p["V"]["V"], params={"V": V})
    net.dc_motor("dcm", "v", "ground", "shaft", K=K, R=R, L=L)
    model = net.build(mechanism=crank, attach={"shaft": "crank.phi"})
    theta0 = math.pi / 4
    guess = jnp.concatenate([slider_crank_configuration(theta0), jnp.zeros(2)])
    q0, qd0 = initial_conditions(model, guess, fix_q={"crank.phi": theta0, "dcm.q": 0.0, "V.q": 0.0},
                                 fix_qd={"crank.phi": 0.0, "dcm.q": 0.0})
    return Example("dc-motor-crank", "DC motor (6 V, K = 0.5 N·m/A, 2 Ω, 10 mH) driving the slider-crank "
                   "through its crank shaft.", model, q0, qd0, 2.0, net)
