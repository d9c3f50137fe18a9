"""Network examples (Fabien ch. 1): a series RLC circuit, a DC motor driving the
planar slider-crank, a half-wave diode rectifier, a common-emitter transistor stage and
a mass on a moving belt with stick–slip friction, and a sinusoidally forced mass with
stick–slip friction."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from .._initial import initial_conditions
from .._tracing import device_array
from ..network import Network
from ._example import Example
from ._slider_crank import slider_crank_mechanism, slider_crank_configuration


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

    Example:

        >>> from mbdjax import models
        >>> models.rlc().model.coordinates
        ('E.q', 'R.q', 'L.q', 'C.q')
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

    Example:

        >>> from mbdjax import models
        >>> models.dc_motor_crank().model.coordinates[:2]
        ('crank.x', 'crank.y')
    """
    mech = slider_crank_mechanism()
    mech.spring_damper("spring", "ground", (0.6, 0.0), "slider", (0.0, 0.0), k=50.0, c=1.0, length0=0.3)
    crank = mech.build()
    net = Network()
    net.node("v", "electrical")
    net.node("shaft", "rotational")
    net.effort_source("V", "v", "ground", lambda t, p: p["V"]["V"], params={"V": V})
    net.dc_motor("dcm", "v", "ground", "shaft", K=K, R=R, L=L)
    model = net.build(mechanism=crank, attach={"shaft": "crank.phi"})
    theta0 = math.pi / 4
    guess = device_array(np.concatenate([np.asarray(slider_crank_configuration(theta0)), np.zeros(2)]))
    q0, qd0 = initial_conditions(model, guess, fix_q={"crank.phi": theta0, "dcm.q": 0.0, "V.q": 0.0},
                                 fix_qd={"crank.phi": 0.0, "dcm.q": 0.0})
    return Example("dc-motor-crank", "DC motor (6 V, K = 0.5 N·m/A, 2 Ω, 10 mH) driving the slider-crank "
                   "through its crank shaft.", model, q0, qd0, 2.0, net)


def diode_rectifier(V=5.0, f=50.0, R=1e3, C=10e-6) -> Example:
    """Half-wave rectifier: a sine source `V sin 2πft` (5 V, 50 Hz, "V1", node "in")
    feeds a junction diode "D1" (ngspice's default: I_s = 1e-14 A, n = 1) into node
    "out", loaded by "R1" (1 kΩ) parallel to "C1" (10 µF) to ground; starts with the
    capacitor empty, t1 = 60 ms (three periods; RC = 10 ms, so the ripple is large).

    No inductance anywhere: every current follows from the loop equations
    (first-order dynamics; formulation "augmented"). Charges are in coulombs (tens of
    µC), so `options` tightens `atol` to 1e-14.

    Example:

        >>> from mbdjax import models
        >>> models.diode_rectifier().model.coordinates
        ('V1.q', 'D1.q', 'R1.q', 'C1.q')
    """
    net = Network()
    for n in ("in", "out"):
        net.node(n, "electrical")
    net.effort_source("V1", "in", "ground", lambda t, p: p["V1"]["V"] * jnp.sin(2 * jnp.pi * p["V1"]["f"] * t),
                      params={"V": V, "f": f})
    net.diode("D1", "in", "out")
    net.resistor("R1", "out", "ground", R=R)
    net.capacitor("C1", "out", "ground", C=C)
    model = net.build()
    zero = jnp.zeros(model.n)
    return Example("diode-rectifier", "Half-wave diode rectifier (5 V, 50 Hz sine; 1 kΩ ∥ 10 µF load), "
                   "charging from empty.", model, zero, zero, 0.06, net, options={"atol": 1e-14})


def common_emitter(VCC=10.0, bias=1.5, amplitude=0.1, f=1e3) -> Example:
    """Common-emitter stage with emitter degeneration: NPN "Q1" (I_s = 1e-16 A, β_F =
    100, β_R = 1) with "RC" = 2 kΩ from "VCC" (10 V), "RE" = 1 kΩ to ground, base fed
    from "VIN" (1.5 V + 0.1 V sin 2π·1 kHz t) through "RB" = 10 kΩ, and a 100 nF
    load "CL" at the collector; starts with the load capacitor empty (the transistor
    saturated), t1 = 3 ms. Small-signal gain about −RC/RE = −2.

    Example:

        >>> from mbdjax import models
        >>> models.common_emitter().model.coordinates
        ('VCC.q', 'VIN.q', 'RB.q', 'RC.q', 'RE.q', 'CL.q', 'Q1.qF', 'Q1.qR')
    """
    net = Network()
    for n in ("vcc", "in", "b", "c", "e"):
        net.node(n, "electrical")
    net.effort_source("VCC", "vcc", "ground", lambda t, p: p["VCC"]["V"], params={"V": VCC})
    net.effort_source("VIN", "in", "ground",
                      lambda t, p: p["VIN"]["bias"] + p["VIN"]["amplitude"] * jnp.sin(2 * jnp.pi * p["VIN"]["f"] * t),
                      params={"bias": bias, "amplitude": amplitude, "f": f})
    net.resistor("RB", "in", "b", R=10e3)
    net.resistor("RC", "vcc", "c", R=2e3)
    net.resistor("RE", "e", "ground", R=1e3)
    net.capacitor("CL", "c", "ground", C=100e-9)
    net.bjt_npn("Q1", "c", "b", "e", I_s=1e-16, beta_f=100.0, beta_r=1.0)
    model = net.build()
    zero = jnp.zeros(model.n)
    return Example("common-emitter", "Common-emitter NPN stage (10 V supply, 2 kΩ / 1 kΩ, 100 nF load), "
                   "1.5 V + 0.1 V at 1 kHz on the base resistor.", model, zero, zero, 0.003, net,
                   options={"atol": 1e-14})


def stick_slip_events(t1, m=1.0, k=10.0, v_belt=0.2, mu_s=0.6, mu_k=0.4, g=9.81):
    """Closed-form switch times of `stick_slip()` up to `t1` (starting stuck at x = 0).

    Stuck, the mass rides the belt, `x = v_b t`, until the spring force reaches the
    static limit: `x_s = μ_s N/k`, `t = x_s/v_b` (N = m g). Sliding, `m ẍ = −k x + μ_k
    N`: a harmonic motion about `x_k = μ_k N/k` at `ω = √(k/m)` that returns to the belt
    speed after `(2π − 2 atan(A ω / v_b)) / ω`, `A = x_s − x_k`, at `x = 2 x_k − x_s`;
    it then sticks for `2A / v_b` and the cycle repeats. Returns `[(t, "slip" |
    "stick"), ...]`.
    """
    N = m * g
    xs, xk = mu_s * N / k, mu_k * N / k
    w, A = math.sqrt(k / m), xs - xk
    slip, stick = (2 * math.pi - 2 * math.atan(A * w / v_belt)) / w, 2 * A / v_belt
    out, t = [], xs / v_belt
    while t <= t1:
        out.append((t, "slip"))
        t += slip
        if t > t1:
            break
        out.append((t, "stick"))
        t += stick
    return out


def stick_slip(m=1.0, k=10.0, v_belt=0.2, mu_s=0.6, mu_k=0.4, g=9.81, mode="exact") -> Example:
    """A mass on a moving belt, held back by a spring: stick–slip oscillation.

    Node "x" (mass "m" = 1 kg, spring "k" = 10 N/m to the wall) rests on node
    "belt", driven at v_b = 0.2 m/s by the flow source "drive"; dry friction "fr"
    between them (μ_s = 0.6, μ_k = 0.4, N = m g), `mode="exact"` (stick and slip as
    switched modes) or `"smooth"` (regularized, velocity scale 1e-3 m/s). Starts
    riding the belt at x = 0; t1 = 12 s: sticks until x = μ_s N/k = 0.589 m, then
    alternates (`stick_slip_events`).

    Example:

        >>> from mbdjax import models
        >>> ex = models.stick_slip()
        >>> ex.model.coordinates, float(ex.model.params["fr"]["stuck"])
        (('x.x', 'belt.x', 'fr.stick'), 0.0)
    """
    net = Network()
    net.node("x", "translational")
    net.node("belt", "translational")
    net.mass("m", "x", m)
    net.spring("k", "x", "ground", k=k)
    net.flow_source("drive", "belt", "ground", lambda t, p: p["drive"]["v"], params={"v": v_belt})
    net.coulomb_friction("fr", "x", "belt", mu_k=mu_k, mu_s=mu_s, normal=m * g, mode=mode,
                         velocity_scale=1e-3)
    model = net.build()
    q0 = np.zeros(model.n)
    qd0 = q0.copy()
    qd0[[model.index("x.x"), model.index("belt.x")]] = v_belt
    q0, qd0 = device_array(q0), device_array(qd0)
    return Example("stick-slip", "Mass (1 kg) on a belt at 0.2 m/s held by a spring (10 N/m), Coulomb "
                   f"friction μ_s = 0.6, μ_k = 0.4 ({mode}).", model, q0, qd0, 12.0, net)


def forced_stick_slip(m=1.0, k=6.0, F0=8.0, omega=2.0, mu_s=0.6, mu_k=0.5, normal=10.0, v0=0.0,
                      mode="exact") -> Example:
    """A mass on a spring, pushed by a sinusoidal force, with Coulomb friction to the
    ground: stick–slip driven by the forcing.

    Node "x" with mass "m" (1 kg), spring "k" (6 N/m) to the wall, effort source "F"
    (`F0 sin ωt`, F0 = 8 N, ω = 2 rad/s; `params["F"]["F0"]`, `["omega"]`) and dry
    friction "fr" to the ground (μ_s = 0.6, μ_k = 0.5, N = 10 N, so μ_s N = 6 N and
    μ_k N = 5 N; `mode="exact"` or `"smooth"`). Starts at x = 0 with velocity `v0`
    (m/s); t1 = 10 s.

    With `h(t) = F(t) − k x` the force the friction must balance, the motion is `m ẍ
    = h − μ_k N d` sliding in direction `d`, and `ẋ = 0` while `|h| ≤ μ_s N`
    (sticking). While stuck the state stands still and only `F(t)` moves `h`: a stick
    ends when `|h(t)|` reaches μ_s N (slip in the direction of `h`), and a slide that
    comes to rest with `|h| > μ_s N` turns straight into a slide the other way. From
    rest the mass sticks until `8 sin 2t = 6` (t = 0.424 s), slides, sticks again
    (1.39 s), slips back (1.72 s), and so on (THEORY §7; Fabien ch. 1).
    """
    net = Network()
    net.node("x", "translational")
    net.mass("m", "x", m)
    net.spring("k", "x", "ground", k=k)
    net.effort_source("F", "x", "ground", lambda t, p: p["F"]["F0"] * jnp.sin(p["F"]["omega"] * t),
                      params={"F0": F0, "omega": omega})
    net.coulomb_friction("fr", "x", "ground", mu_k=mu_k, mu_s=mu_s, normal=normal, mode=mode,
                         velocity_scale=1e-3)
    model = net.build()
    q0 = jnp.zeros(model.n)
    qd0 = q0.at[model.index("x.x")].set(v0)
    return Example("forced-stick-slip", f"Mass ({m:g} kg) on a spring ({k:g} N/m) pushed by {F0:g} sin {omega:g}t N, "
                   f"Coulomb friction μ_s N = {mu_s * normal:g} N, μ_k N = {mu_k * normal:g} N ({mode}), from "
                   f"v0 = {v0:g} m/s.", model, q0, qd0, 10.0, net)
