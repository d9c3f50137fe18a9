"""The `Network` builder: nodes and elements of four energy domains -> Model (Fabien ch. 1)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp

from .._builder import Builder
from ._compile import compile_network
from ._domains import DOMAINS, GROUND
from ._laws import THERMAL_VOLTAGE
from ._validate import validate


@dataclasses.dataclass(frozen=True)
class Element:
    """One network element: `kind`, its terminals `(a, b)` (or more, for two-port
    elements), its numbers (`params[name]`) and an optional user law or source
    function."""

    name: str
    kind: str
    terminals: tuple
    params: dict
    fn: Callable | None = None


class Network(Builder):
    """Build a multi-domain network in Fabien's effort/flow representation.

    Nodes belong to one domain: `"translational"`, `"rotational"`, `"electrical"` or
    `"fluid"`. The built-in node `"ground"` is the reference of every domain
    (electrical ground, the fixed frame, atmospheric pressure); its effort, or its
    displacement, is zero.

    How each domain becomes coordinates (all compile into one constrained Lagrangian
    `Model`, THEORY §7):

    - Electrical and fluid elements are edges from terminal `a` to terminal `b`, each
      with its own flow coordinate, the charge `"<element>.q"` (C) or volume
      `"<element>.V"` (m³) that has passed from a to b; the element's flow is its
      rate (current, volume flow) and its effort is `e_a − e_b` (voltage, pressure
      drop). Kirchhoff's current law / continuity at every other node is a flow
      constraint row named after the node, and its multiplier is the node's effort
      (voltage, pressure).
    - Translational and rotational nodes are points and shafts: each gets a
      displacement coordinate `"<node>.x"` (m) or `"<node>.theta"` (rad), and
      elements act between two nodes (a spring's deformation is `x_a − x_b`) or, for
      masses and inertias, between a node and the fixed frame. The force (torque)
      balance at a node comes out of Lagrange's equations.

    Flow stores (mass, inertia, inductor, inertance) give the co-energy T*, effort
    stores (spring, capacitor) the potential V, resistors and dampers the content D;
    transformers and transducers are ideal flow constraints whose multipliers carry
    their effort relation; effort sources are generalized forces, flow sources
    driving flow constraints. Nonlinear laws are JAX functions `law(x, p)` (effort
    of a deformation or charge) or `law(f, p)` (effort of a flow), entered through
    their energy or content.

    Parameters are named after the elements (`params["R1"]["R"]`,
    `params["motor"]["K"]`, …). Names share one namespace and may not contain ".";
    every builder method returns the element's name; `build()` reports all problems
    together as one `mbdjax.ModelError`.

    Example (series RLC driven by a 1 V step):
        >>> from mbdjax.network import Network
        >>> net = Network()
        >>> for n in ("n1", "n2", "n3"):
        ...     _ = net.node(n, "electrical")
        >>> _ = net.effort_source("E", "n1", "ground", lambda t, p: 1.0)
        >>> _ = net.resistor("R", "n1", "n2", R=1.0)
        >>> _ = net.inductor("L", "n2", "n3", L=0.5)
        >>> _ = net.capacitor("C", "n3", "ground", C=0.25)
        >>> model = net.build()
        >>> model.coordinates
        ('E.q', 'R.q', 'L.q', 'C.q')
        >>> model.nonholonomic_names
        ('n1', 'n2', 'n3')

    References: B. Fabien, *Analytical System Dynamics*, ch. 1 (unified system
    representation); THEORY §7.
    """

    def __init__(self):
        super().__init__()
        self._nodes: dict[str, str] = {}
        self._elements: list[Element] = []
        self._switch_bounds: dict[str, int] = {}

    # ----------------------------------------------------------------- nodes
    def node(self, name: str, domain: str) -> str:
        """Add a junction of `domain` (`"translational"`, `"rotational"`,
        `"electrical"`, `"fluid"`)."""
        if domain not in DOMAINS:
            self._problems.append(f"node {name!r}: unknown domain {domain!r}; use one of {sorted(DOMAINS)}.")
        elif name in self._nodes:
            self._problems.append(f"node {name!r}: defined twice; give each node one name.")
        elif name == GROUND:
            self._problems.append("node 'ground': it is built in (the reference of every domain); do not add it.")
        else:
            self._nodes[name] = domain
        return name

    def _add(self, name, kind, terminals, numbers=None, fn=None, fn_label=None, extra=None):
        label = f"{kind} {name!r}"
        prm = {k: self._scalar(f"{label}: `{k}`", v) for k, v in (numbers or {}).items()}
        prm.update(self._extra(label, extra, prm))
        if fn_label is not None:
            fn = self._function(f"{label}: `{fn_label}`", fn, required=False)
        self._elements.append(Element(name, kind, tuple(terminals), prm, fn))
        return name

    # --------------------------------------------------- translational, rotational
    def mass(self, name, node, m) -> str:
        """Mass `m` (kg) at a translational node (moving against the fixed frame):
        co-energy `½ m v²`."""
        return self._add(name, "mass", (node, GROUND), {"m": m})

    def spring(self, name, a, b, k=0.0, law=None, params=None) -> str:
        """Spring between translational nodes: `V = ½ k (x_a − x_b)²`, or with
        `law(x, p) -> force` (N) the energy `∫ law dx`; force positive in tension."""
        return self._add(name, "spring", (a, b), {"k": k}, law, "law", params)

    def damper(self, name, a, b, c=0.0, law=None, params=None) -> str:
        """Damper between translational nodes: content `D = ½ c (v_a − v_b)²` (c in
        N·s/m; THEORY's b), or with `law(v, p) -> force` the content `∫ law dv`."""
        return self._add(name, "damper", (a, b), {"c": c}, law, "law", params)

    def inertia(self, name, node, J) -> str:
        """Rotor inertia `J` (kg·m²) at a rotational node: co-energy `½ J ω²`."""
        return self._add(name, "inertia", (node, GROUND), {"J": J})

    def torsion_spring(self, name, a, b, k=0.0, law=None, params=None) -> str:
        """Torsion spring between rotational nodes: `V = ½ k (θ_a − θ_b)²` (k in N·m/rad),
        or `law(angle, p) -> torque`."""
        return self._add(name, "torsion_spring", (a, b), {"k": k}, law, "law", params)

    def rotational_damper(self, name, a, b, c=0.0, law=None, params=None) -> str:
        """Rotational damper: content `½ c (ω_a − ω_b)²` (c in N·m·s/rad), or
        `law(ω, p) -> torque`."""
        return self._add(name, "rotational_damper", (a, b), {"c": c}, law, "law", params)

    def coulomb_friction(self, name, a, b, mu_k, normal, mu_s=None, velocity_scale=1e-3, mode="smooth",
                         max_switches=64, rest_tolerance=1e-9) -> str:
        """Dry friction between translational (or rotational) nodes, `v = v_a − v_b`,
        `N = normal` (N; a torque-arm product for rotation), `μ_s ≥ μ_k`.

        `mode="smooth"` (default): a regularized law entered through its content, like
        a damper. With `x = v / v_s`, `v_s = velocity_scale`, `F(v) = N σ(x) [μ_k +
        (μ_s − μ_k) exp(−(|x| − 1)₊²)]`, `σ(x) = x (3 − x²)/2` for `|x| ≤ 1` and
        `sign x` beyond: it rises to exactly μ_s N at `|v| = v_s` and falls to the
        kinetic value μ_k N within a few v_s, so it tends to Coulomb's law with static
        friction as v_s → 0. Smaller v_s is closer but stiffer (use an implicit solver
        below about 1e-3 m/s).

        `mode="exact"`: Coulomb's law with sticking, an effort source regulated by
        flow (Fabien ch. 1; THEORY §7), as discrete modes switched at diffrax events
        (`Trajectory.switch_history()`). Sliding in direction `d = ±1`: the force
        `μ_k N d` against node a. Sticking: the row `"<name>"` (v_a − v_b = 0), whose
        multiplier `λ` is the holding force (`m_a v̇_a = … − λ`). Sticking ends when
        `|λ|` reaches `μ_s N` (then slide with `d = sign λ`), so it never exceeds it;
        `λ` is evaluated at the event's own time, and its time integral joins the
        step-size control, so a holding force raised by a time-varying source while
        the state stands still (an `effort_source` `e(t)`) is found between steps.
        When a slide reaches `v = 0` the nodes stick if the force that would hold them
        is below `μ_s N`, else they slide straight on the other way (no stick of zero
        length). Events are bisected on the dense output to about 1e-13 s. The row is
        kept full rank while sliding by a coordinate `"<name>.stick"` of unit mass
        with no forces, which never moves. Formulation `"augmented"` only. Modes live
        in the params (`stuck` 0/1, `direction` ±1) and are set from the state and the
        forcing at t0: at rest (within `rest_tolerance`, m/s or rad/s) stick if the
        holding force is below `μ_s N`, else slide in its direction; moving, slide in
        the direction of `v`. `max_switches` bounds the events of one run.

        Params `[name]`: `mu_k`, `mu_s` (default μ_k), `normal`, and `velocity_scale`
        (smooth) or `stuck`, `direction`, `m_stick` (exact).
        """
        label = f"coulomb_friction {name!r}"
        mu_s = mu_k if mu_s is None else mu_s
        if float(mu_k) < 0 or float(normal) < 0:
            self._problems.append(f"{label}: mu_k and normal must be >= 0.")
        if float(mu_s) < float(mu_k):
            self._problems.append(f"{label}: the static coefficient mu_s = {float(mu_s):g} is below the "
                                  f"kinetic one mu_k = {float(mu_k):g}; give mu_s >= mu_k.")
        domain = self._nodes.get(a if a != GROUND else b)
        if mode == "exact":
            if int(max_switches) < 1:
                self._problems.append(f"{label}: max_switches must be at least 1.")
            numbers = {"mu_k": mu_k, "mu_s": mu_s, "normal": normal, "stuck": 0.0, "direction": 1.0,
                       "m_stick": 1.0, "rest_tolerance": rest_tolerance}
            name = self._add(name, "stick_slip", (a, b), numbers)
            self._switch_bounds[name] = int(max_switches)
            return name
        if mode != "smooth":
            self._problems.append(f"{label}: mode must be 'smooth' or 'exact', got {mode!r}.")

        def law(v, p):
            f = p[name]
            x = v / f["velocity_scale"]
            inside = jnp.clip(x, -1.0, 1.0)
            rise = jnp.where(jnp.abs(x) <= 1.0, 0.5 * inside * (3.0 - inside * inside), jnp.sign(x))
            beyond = jnp.maximum(jnp.abs(x) - 1.0, 0.0)
            return f["normal"] * rise * (f["mu_k"] + (f["mu_s"] - f["mu_k"]) * jnp.exp(-beyond * beyond))

        kind = "rotational_damper" if domain == "rotational" else "damper"
        numbers = {"c": 0.0, "mu_k": mu_k, "mu_s": mu_s, "normal": normal, "velocity_scale": velocity_scale}
        if not float(velocity_scale) > 0:
            self._problems.append(f"{label}: velocity_scale must be positive (m/s or rad/s).")
        return self._add(name, kind, (a, b), numbers, law, "law")

    # ------------------------------------------------------------ electrical
    def inductor(self, name, a, b, L) -> str:
        """Inductor `L` (H) from a to b: co-energy `½ L i²`, coordinate `"<name>.q"`."""
        return self._add(name, "inductor", (a, b), {"L": L})

    def capacitor(self, name, a, b, C=1.0, law=None, params=None) -> str:
        """Capacitor `C` (F) from a to b: `V = q² / 2C`, or `law(q, p) -> voltage`."""
        return self._add(name, "capacitor", (a, b), {"C": C}, law, "law", params)

    def resistor(self, name, a, b, R=1.0, law=None, params=None) -> str:
        """Resistor `R` (Ω) from a to b: content `½ R i²`, or `law(i, p) -> voltage`."""
        return self._add(name, "resistor", (a, b), {"R": R}, law, "law", params)

    def diode(self, name, a, b, I_s=1e-14, n=1.0, V_T=None, gmin=1e-12) -> str:
        """Junction diode from anode a to cathode b (`"<name>.q"`), Shockley's law with
        SPICE's parallel conductance: `i = I_s (e^{v / n V_T} − 1) + gmin v`.

        Entered through its content `D(i) = ∫ v(i) di` (the law inverted for `v(i)`
        by a monotone Newton solve, derivatives exact by implicit differentiation).
        Params `[name]`: `I_s` (A, default 1e-14), `n` (emission coefficient, 1),
        `V_T` (V, default k·300.15 K/q = 25.865 mV) and `gmin` (S, 1e-12), which
        match ngspice's default diode model. A diode has no inertia: in a loop
        without an inductor its current follows from the loop equation
        (first-order dynamics, formulation `"augmented"`).
        """
        numbers = {"I_s": I_s, "n": n, "V_T": THERMAL_VOLTAGE if V_T is None else V_T, "gmin": gmin}
        return self._add(name, "diode", (a, b), numbers)

    def bjt_npn(self, name, c, b, e, I_s=1e-16, beta_f=100.0, beta_r=1.0, V_T=None, gmin=1e-12) -> str:
        """NPN bipolar transistor (collector c, base b, emitter e), Ebers–Moll model.

        Two junction diodes carry the injection currents `i_F = I_ES (e^{v_BE/V_T} −
        1)` and `i_R = I_CS (e^{v_BC/V_T} − 1)` (plus `gmin v`), `I_ES = I_s/α_F`,
        `I_CS = I_s/α_R`, `α = β/(1 + β)`; the controlled sources give the terminal
        currents `i_C = α_F i_F − i_R`, `i_E = i_F − α_R i_R`, `i_B = i_E − i_C`
        (this is SPICE's Gummel–Poon model with its default, ideal parameters).
        Coordinates `"<name>.qF"`, `"<name>.qR"` (the injected charges); the
        controlled sources enter the junction laws as velocity-dependent forces, so
        the element is active (not a content). Ports: `(v_BE − α_F v_BC, i_F)` and
        `(v_BC − α_R v_BE, i_R)`, whose power sum is the transistor's `v_BE i_B +
        v_CE i_C`. Params `[name]`: `I_s` (A), `beta_f`, `beta_r`, `V_T` (V),
        `gmin` (S).
        """
        return self._bjt(name, "bjt_npn", c, b, e, I_s, beta_f, beta_r, V_T, gmin)

    def bjt_pnp(self, name, c, b, e, I_s=1e-16, beta_f=100.0, beta_r=1.0, V_T=None, gmin=1e-12) -> str:
        """PNP bipolar transistor (collector c, base b, emitter e), Ebers–Moll model:
        `bjt_npn` with every junction voltage and terminal current reversed (`v_EB`,
        `v_CB` drive the junctions; current flows out of the collector)."""
        return self._bjt(name, "bjt_pnp", c, b, e, I_s, beta_f, beta_r, V_T, gmin)

    def _bjt(self, name, kind, c, b, e, I_s, beta_f, beta_r, V_T, gmin):
        numbers = {"I_s": I_s, "beta_f": beta_f, "beta_r": beta_r,
                   "V_T": THERMAL_VOLTAGE if V_T is None else V_T, "gmin": gmin}
        if len({c, b, e}) < 3:
            self._problems.append(f"{kind} {name!r}: collector, base and emitter must be three different "
                                  f"nodes, got {(c, b, e)}.")
        return self._add(name, kind, (c, b, e), numbers)

    # ----------------------------------------------------------------- fluid
    def inertance(self, name, a, b, I) -> str:  # noqa: E741 - the textbook symbol
        """Fluid inertance `I` (kg/m⁴) from a to b: co-energy `½ I Q²`, coordinate `"<name>.V"`."""
        return self._add(name, "inertance", (a, b), {"I": I})

    def fluid_capacitor(self, name, a, b, C=1.0, law=None, params=None) -> str:
        """Fluid capacitance `C` (m³/Pa) from a to b: `V = vol² / 2C`, or `law(vol, p) -> pressure`."""
        return self._add(name, "fluid_capacitor", (a, b), {"C": C}, law, "law", params)

    def fluid_resistor(self, name, a, b, R=1.0, law=None, params=None) -> str:
        """Fluid resistance `R` (Pa·s/m³) from a to b: content `½ R Q²`, or `law(Q, p) -> pressure`."""
        return self._add(name, "fluid_resistor", (a, b), {"R": R}, law, "law", params)

    def check_valve(self, name, a, b, R_open, R_closed, flow_scale=1e-6) -> str:
        """Check valve from a to b as a smooth nonlinear fluid resistor: pressure drop
        `ΔP(Q) = Q [R_open + (R_closed − R_open) σ(−Q / Q_s)]`, `σ` the logistic function,
        so forward flow sees `R_open`, reverse flow `R_closed ≫ R_open`, with the switch
        spread over a few `Q_s = flow_scale` (m³/s). Entered through its content. Params
        `[name]`: `R_open`, `R_closed`, `flow_scale`.
        """
        def law(Q, p):
            v = p[name]
            closed = jax.nn.sigmoid(-Q / v["flow_scale"])
            return Q * (v["R_open"] + (v["R_closed"] - v["R_open"]) * closed)

        label = f"check_valve {name!r}"
        if not (float(R_closed) >= float(R_open) >= 0):
            self._problems.append(f"{label}: need 0 <= R_open <= R_closed (Pa·s/m³).")
        if not float(flow_scale) > 0:
            self._problems.append(f"{label}: flow_scale must be positive (m³/s).")
        return self._add(name, "fluid_resistor", (a, b),
                         {"R": 0.0, "R_open": R_open, "R_closed": R_closed, "flow_scale": flow_scale}, law, "law")

    # ------------------------------------------------------ constraint elements
    def lever(self, name, a, b, arm_a, arm_b) -> str:
        """Lever between translational nodes (Fabien §1.2): `arm_b v_a + arm_a v_b = 0`
        (the ends move in opposite directions), forces `F_a arm_a = F_b arm_b`."""
        return self._add(name, "lever", (a, b), {"arm_a": arm_a, "arm_b": arm_b})

    def gear(self, name, a, b, r_a, r_b) -> str:
        """Gear pair between rotational nodes: `r_a ω_a + r_b ω_b = 0` (external
        gears turn opposite ways), torques `τ_a / r_a = τ_b / r_b`."""
        return self._add(name, "gear", (a, b), {"r_a": r_a, "r_b": r_b})

    def transformer(self, name, a1, b1, a2, b2, N1, N2) -> str:
        """Ideal electrical transformer: primary a1→b1 (`"<name>.q1"`), secondary a2→b2
        (`"<name>.q2"`), `N1 i1 + N2 i2 = 0` with currents into the dotted terminals
        a1, a2; voltages `v1 / N1 = v2 / N2`."""
        return self._add(name, "transformer", (a1, b1, a2, b2), {"N1": N1, "N2": N2})

    def piston_transformer(self, name, a1, b1, a2, b2, A1, A2) -> str:
        """Fluid transformer (two pistons on one rod): `Q1 / A1 + Q2 / A2 = 0`,
        pressures `P1 A1 = P2 A2`; volumes `"<name>.V1"`, `"<name>.V2"`."""
        return self._add(name, "piston_transformer", (a1, b1, a2, b2), {"A1": A1, "A2": A2})

    def rack_pinion(self, name, shaft, rack, radius) -> str:
        """Rack and pinion: the rack (translational node) moves with `v = r ω` of the
        pinion (rotational node); force and torque `τ = r F`."""
        return self._add(name, "rack_pinion", (shaft, rack), {"r": radius})

    def hydraulic_piston(self, name, a, b, rod, area) -> str:
        """Hydraulic cylinder: volume flow `Q` from fluid node a to b through the
        chamber (`"<name>.V"`) moves the rod (translational node) with `Q = A v`; the
        rod force is `A (P_a − P_b)`."""
        return self._add(name, "hydraulic_piston", (a, b, rod), {"A": area})

    def dc_motor(self, name, a, b, shaft, K, R=0.0, L=0.0) -> str:
        """Permanent-magnet DC motor: armature from a to b (`"<name>.q"`, resistance
        `R`, inductance `L`) and a rotor at the rotational node `shaft`. Back-emf
        `K ω` opposes the armature current, torque `K i` drives the shaft (a
        gyrator: workless, `K i ω − K ω i = 0`). Add the rotor inertia with
        `inertia(...)` at the shaft."""
        return self._add(name, "dc_motor", (a, b, shaft), {"K": K, "R": R, "L": L})

    # --------------------------------------------------------------- sources
    def effort_source(self, name, a, b, e: Callable, params=None) -> str:
        """Ideal effort source `e(t, p)`. Electrical/fluid: a battery or pressure
        source with `e_a − e_b = e(t)` (a is the + terminal), coordinate `"<name>.q"`
        / `".V"` (what passes from b to a through it). Translational/rotational: a
        force or torque `e(t)` on node a (against node b, usually ground)."""
        return self._add(name, "effort_source", (a, b), {}, e, "e", params)

    def flow_source(self, name, a, b, f: Callable, params=None) -> str:
        """Ideal flow source `f(t, p)`: a current source or pump driving `f` from a to
        b (`"<name>.q"` / `".V"`), or a prescribed velocity `v_a − v_b = f(t)` between
        mechanical nodes; a driving flow constraint row `"<name>"`, whose multiplier
        is the effort the source must supply."""
        return self._add(name, "flow_source", (a, b), {}, f, "f", params)

    # ------------------------------------------------------------------ queries
    @property
    def nodes(self) -> dict[str, str]:
        """`{node: domain}` for the nodes added so far (ground excluded)."""
        return dict(self._nodes)

    @property
    def elements(self) -> tuple[str, ...]:
        return tuple(e.name for e in self._elements)

    # ------------------------------------------------------------------ build
    def build(self, mechanism=None, attach=None):
        """Compile the network into a `mbdjax.Model`.

        Arguments:
            mechanism: optional Model (from `planar.Mechanism`, `spatial.Mechanism` or
                written by hand) to couple with: the result has its coordinates
                first, then the network's.
            attach: `{node: coordinate}`: translational or rotational nodes that are
                coordinates of `mechanism` (a motor shaft on `"crank.phi"`); those
                nodes get no coordinate of their own.

        Raises:
            ModelError: listing every problem found in the description.
        """
        attach = dict(attach or {})
        return self._build(validate(self, mechanism, attach), compile_network, mechanism, attach)
