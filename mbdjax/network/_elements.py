"""What each kind of network element contributes: one record per kind (Fabien ch. 1;
THEORY §7).

A record (`ElementKind`) holds everything the validation (`_validate`), the graph
checks (`_structure`), the compiler (`_compile`) and the results (`_part`) know about a
kind: the domain of each terminal, the flow coordinates it adds, its diagonal inertia
entry, its contributions to the potential `V`, the content `D` and the generalized
forces `Q`, its flow-constraint row, its port map (efforts, flows) and its flags. They
loop over the elements and call the records; none of them tests an element's kind.

The record functions receive `parts`, the compiler's reader of one network (its
`disp(x, node)`, `edge(x, e, suffix=None)`, `rel(x, e)`, `index(e, suffix=None)` and
`push(Q, node, value)`; `parts.net` is the `Network`), and the element `e` (its
`name`, `terminals`, `params` and user function `fn`); `p` is the model's params pytree
(the element's numbers are `p[e.name]`), `t` the time, `q`, `qd`, `qdd` the
coordinates and their rates, shape `(n,)`, and `mu` the `{row: multiplier}` of the
network's rows.

Adding a kind: one record in `KINDS` and a builder method on `Network` that calls
`self._add(name, kind, terminals, numbers, fn, ...)`; nothing else changes. Give it a
test against an independent reference (a closed form, ngspice, or the same system built
from existing elements), as `tests/test_network_kinds.py` does for a kind registered at
run time; that file also checks that every kind `Network` creates has a record.

Example:

    >>> from mbdjax.network._elements import KINDS
    >>> KINDS["resistor"].terminals, KINDS["resistor"].edges
    (('electrical', 'electrical'), ((None, 0, 1),))
    >>> KINDS["mass"].inertia, KINDS["mass"].stores_flow
    ((None, 'm'), True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax.numpy as jnp

from ._domains import GROUND
from ._laws import integral_of, junction_content, junction_voltage

T, R, E, F = "translational", "rotational", "electrical", "fluid"

#: edge domain -> suffix of its flow coordinates (`"<element>.q"`, `"<element>.V"`)
SUFFIX = {E: "q", F: "V"}


def edge_domain(net, element):
    """The domain of `element`'s first terminal that is a declared node (None if none)."""
    for t in element.terminals:
        if t != GROUND and t in net._nodes:
            return net._nodes[t]
    return None


@dataclasses.dataclass(frozen=True)
class ElementKind:
    """What one kind of network element contributes (see the module docstring for the
    arguments `parts`, `e`, `q`, `qd`, `qdd`, `mu`, `t`, `p` of its functions)."""

    terminals: tuple
    """Required domain of each terminal, in declaration order (None: any domain, the
    same for all such terminals: a source acts within one domain)."""

    ports: Callable
    """`(parts, e, q, qd, qdd, mu, t, p) -> (efforts (k,), flows (k,))`, one entry per
    port, passive sign convention (`Σ effort · flow` is the power absorbed)."""

    distinct: bool = True
    """Whether the terminals of each pair `(0, 1)`, `(2, 3)` must be different nodes."""

    edges: tuple = ()
    """Flow coordinates added in the first pass of the layout, each an edge of the
    junction laws: `(suffix, from, to)` with `from`, `to` terminal positions; the
    coordinate is `"<name>.<suffix>"`. Suffix None: the edge domain's suffix (`q`,
    `V`), and the coordinate exists only when the element is in an edge domain
    (electrical, fluid): a source between mechanical nodes has none."""

    taps: Callable | None = None
    """`e -> {junction: ((terminal node, coef(p)), ...)}`: flow coordinates added in
    the second pass (after every edge coordinate), each feeding the junction laws of
    the nodes with the weights `coef(p)` (a transistor's injection flows)."""

    links: tuple = ()
    """`(suffix, from, to)` graph-only edges over tap coordinates (terminal positions),
    seen by the floating-node check and nowhere else."""

    idle: tuple = ()
    """Suffixes of bookkeeping coordinates added in the third pass (after every tap
    coordinate), with no edge (the friction's `"<name>.stick"`)."""

    inertia: tuple | None = None
    """`(coordinate, parameter key)` of its constant diagonal inertia entry `½ d f²`:
    the coordinate's suffix, or None for the node of the first terminal."""

    potential: Callable | None = None
    """`(parts, e, q, t, p) -> ()`: its part of the potential energy `V`."""

    dissipation: Callable | None = None
    """`(parts, e, q, qd, t, p) -> ()`: its part of the content `D`."""

    forces: Callable | None = None
    """`(parts, e, Q, q, qd, t, p) -> Q`: `Q (n,)` with its generalized forces added."""

    row: Callable | None = None
    """`(parts, e, q, qd, t, p) -> ()`: its flow-constraint row `"<name>"`, affine in
    `qd` (constraint elements, flow sources, exact friction)."""

    carried_by_multipliers: bool = False
    """Whether its efforts are multipliers (its ports need a trajectory with them)."""

    stores_flow: bool = False
    """Whether it stores flow (kinetic co-energy `½ d f²`): the flows a network
    without multipliers is plotted by."""

    friction: bool = False
    """Whether it is exact (stick–slip) Coulomb friction, whose modes the network's
    `Switching` switches."""

    structure: str | None = None
    """Its role in the graph checks (`_structure`): `"effort source"`, `"effort
    store"` (a loop of these only is ill-posed), `"flow source"`, `"flow store"` (a
    cut set of these only, with a source, is ill-posed), or None."""

    check_domains: Callable | None = None
    """`(e, domains) -> [problem]`: its own rule on the domains of its terminals
    (`domains`: one per terminal, None for ground and unknown nodes)."""

    check: Callable | None = None
    """`e -> [problem]`: its own further checks, reported after the generic ones."""


# ------------------------------------------------------------------ helpers
def _one(effort, flow):
    """A one-port element's `(efforts (1,), flows (1,))`."""
    return jnp.stack([effort]), jnp.stack([flow])


def _label(e):
    return f"{e.kind} {e.name!r}"


def _rel(parts, x, e):
    return parts.rel(x, e)


def _edge(parts, x, e):
    return parts.edge(x, e)


def _content(e, x, p, linear):
    """`∫ law` of a law element at `x` (energy or content), else the linear one."""
    return integral_of(e.fn)(x, p) if e.fn else linear(x, p[e.name])


def _effort(e, x, p, linear):
    """The effort of a law element at `x`: its user law, else the linear one."""
    return e.fn(x, p) if e.fn else linear(x, p[e.name])


def _effort_store(read, effort, energy):
    """`potential` and `ports` of a spring-like element: energy of the deformation
    `read(parts, q, e)`, effort of the deformation, flow its rate."""
    def potential(parts, e, q, t, p):
        return _content(e, read(parts, q, e), p, energy)

    def ports(parts, e, q, qd, qdd, mu, t, p):
        return _one(_effort(e, read(parts, q, e), p, effort), read(parts, qd, e))

    return {"potential": potential, "ports": ports}


def _resistive(read, effort, content):
    """`dissipation` and `ports` of a damper-like element: content and effort of the
    flow `read(parts, qd, e)`."""
    def dissipation(parts, e, q, qd, t, p):
        return _content(e, read(parts, qd, e), p, content)

    def ports(parts, e, q, qd, qdd, mu, t, p):
        return _one(_effort(e, read(parts, qd, e), p, effort), read(parts, qd, e))

    return {"dissipation": dissipation, "ports": ports}


def _flow_store(read, key):
    """`ports` of a constant inertia `d = p[name][key]` on the flow `read(parts, qd, e)`:
    effort `d ḟ`."""
    def ports(parts, e, q, qd, qdd, mu, t, p):
        return _one(p[e.name][key] * read(parts, qdd, e), read(parts, qd, e))
    return ports


def _node(parts, x, e):
    return parts.disp(x, e.terminals[0])


def _constraint(pairs, row=None):
    """`row` and `ports` of an ideal flow-constraint element `Σ a_k f_k = 0`:
    `pairs(parts, e, qd, p) -> ((a_k, f_k), ...)`; port k carries effort `a_k μ` and
    flow `f_k`. The row is `a_0 f_0 + a_1 f_1 + …` unless written out as `row`."""
    def weighted(parts, e, q, qd, t, p):
        (a, f), *rest = pairs(parts, e, qd, p)
        total = a * f
        for a, f in rest:
            total = total + a * f
        return total

    def ports(parts, e, q, qd, qdd, mu, t, p):
        found = pairs(parts, e, qd, p)
        return (jnp.stack([jnp.asarray(a) * mu[e.name] for a, _ in found]),
                jnp.stack([f for _, f in found]))

    return {"row": weighted if row is None else row, "ports": ports, "carried_by_multipliers": True}


# ----------------------------------------------------------------- sources
def _source_value(e, t, p):
    return jnp.asarray(e.fn(t, p), dtype=float).reshape(())


def _in_edge_domain(parts, e):
    return edge_domain(parts.net, e) in SUFFIX


def _needs_function(e):
    return [f"{_label(e)}: give the source function of (t, p)."] if e.fn is None else []


def _effort_source_forces(parts, e, Q, q, qd, t, p):
    value = _source_value(e, t, p)
    if _in_edge_domain(parts, e):
        return Q.at[parts.index(e)].add(value)
    a, b = e.terminals
    return parts.push(parts.push(Q, a, value), b, -value)


def _effort_source_ports(parts, e, q, qd, qdd, mu, t, p):
    if _in_edge_domain(parts, e):  # coordinate counts b -> a (out of the + terminal)
        return _one(_source_value(e, t, p), -parts.edge(qd, e))
    return _one(-_source_value(e, t, p), parts.rel(qd, e))


def _source_flow(parts, e, qd):
    return parts.edge(qd, e) if _in_edge_domain(parts, e) else parts.rel(qd, e)


def _flow_source_row(parts, e, q, qd, t, p):
    f = _source_value(e, t, p)
    return _source_flow(parts, e, qd) - f


def _flow_source_ports(parts, e, q, qd, qdd, mu, t, p):
    return _one(mu[e.name], _source_flow(parts, e, qd))


# ------------------------------------------------------------ stick–slip friction
def _friction_domains(e, domains):
    wrong = sorted({d for d in domains if d in (E, F)})
    if not wrong:
        return []
    return [f"{_label(e)}: friction acts between translational or rotational nodes, not {wrong} ones."]


def _friction_forces(parts, e, Q, q, qd, t, p):   # kinetic friction while sliding
    f = p[e.name]
    force = -(1.0 - f["stuck"]) * f["mu_k"] * f["normal"] * f["direction"]
    a, b = e.terminals
    return parts.push(parts.push(Q, a, force), b, -force)


def _friction_row(parts, e, q, qd, t, p):
    s = p[e.name]["stuck"]
    return s * parts.rel(qd, e) + (1.0 - s) * parts.edge(qd, e, "stick")


def _friction_ports(parts, e, q, qd, qdd, mu, t, p):
    f = p[e.name]
    resisting = f["stuck"] * mu[e.name] + (1.0 - f["stuck"]) * f["mu_k"] * f["normal"] * f["direction"]
    return _one(resisting, parts.rel(qd, e))


# ------------------------------------------------------------- semiconductors
def _diode_dissipation(parts, e, q, qd, t, p):
    d = p[e.name]
    return junction_content(parts.edge(qd, e), d["I_s"], d["n"] * d["V_T"], d["gmin"])


def _diode_ports(parts, e, q, qd, qdd, mu, t, p):
    d, i = p[e.name], parts.edge(qd, e)
    return _one(junction_voltage(i, d["I_s"], d["n"] * d["V_T"], d["gmin"]), i)


def _alpha(beta):
    return beta / (1.0 + beta)


def _bjt_taps(e, s):
    """`{junction: ((base, coef(p)), (collector, coef(p)), (emitter, coef(p)))}` of the
    injection flows `i_F`, `i_R` of a transistor, `s` = 1 (NPN) or −1 (PNP) (NPN:
    `i_C = α_F i_F − i_R`, `i_E = i_F − α_R i_R` leave the collector node and enter the
    emitter node; PNP reversed)."""
    c, b, em = e.terminals
    nm = e.name
    aF = lambda p: _alpha(p[nm]["beta_f"])  # noqa: E731
    aR = lambda p: _alpha(p[nm]["beta_r"])  # noqa: E731
    return {
        "qF": ((b, lambda p: -s * (1 - aF(p))), (c, lambda p: -s * aF(p)), (em, lambda p: s * 1.0)),
        "qR": ((b, lambda p: -s * (1 - aR(p))), (c, lambda p: s * 1.0), (em, lambda p: -s * aR(p))),
    }


def _bjt_junctions(parts, e, qd, p):
    """`(v_F, v_R, α_F, α_R)`: junction voltages (v_BE, v_BC for NPN; v_EB, v_CB for
    PNP) of the injection flows, from the inverted junction laws."""
    f = p[e.name]
    aF, aR = _alpha(f["beta_f"]), _alpha(f["beta_r"])
    vF = junction_voltage(parts.edge(qd, e, "qF"), f["I_s"] / aF, f["V_T"], f["gmin"])
    vR = junction_voltage(parts.edge(qd, e, "qR"), f["I_s"] / aR, f["V_T"], f["gmin"])
    return vF, vR, aF, aR


def _bjt_forces(parts, e, Q, q, qd, t, p):
    vF, vR, aF, aR = _bjt_junctions(parts, e, qd, p)
    Q = Q.at[parts.index(e, "qF")].add(-vF + aF * vR)
    return Q.at[parts.index(e, "qR")].add(-vR + aR * vF)


def _bjt_ports(parts, e, q, qd, qdd, mu, t, p):
    vF, vR, aF, aR = _bjt_junctions(parts, e, qd, p)
    return (jnp.stack([vF - aF * vR, vR - aR * vF]),
            jnp.stack([parts.edge(qd, e, "qF"), parts.edge(qd, e, "qR")]))


def _transistor(s):
    """The record of a bipolar transistor of polarity `s` (1: NPN, −1: PNP)."""
    return ElementKind(terminals=(E, E, E), ports=_bjt_ports, distinct=False, taps=lambda e: _bjt_taps(e, s),
                       links=(("qF", 1, 2), ("qR", 1, 0)), forces=_bjt_forces)


# ------------------------------------------------------------------ DC motor
def _motor_dissipation(parts, e, q, qd, t, p):
    f = parts.edge(qd, e)
    return 0.5 * p[e.name]["R"] * f * f


def _motor_forces(parts, e, Q, q, qd, t, p):
    K = p[e.name]["K"]
    i = parts.index(e, "q")
    shaft = e.terminals[2]
    Q = Q.at[i].add(-K * parts.disp(qd, shaft))          # back-emf
    return parts.push(Q, shaft, K * qd[i])                # torque


def _motor_ports(parts, e, q, qd, qdd, mu, t, p):
    i, w = parts.edge(qd, e, "q"), parts.disp(qd, e.terminals[2])
    v = p[e.name]["R"] * i + p[e.name]["L"] * parts.edge(qdd, e, "q") + p[e.name]["K"] * w
    return jnp.stack([v, -p[e.name]["K"] * i]), jnp.stack([i, w])


# ------------------------------------------------------- constraint elements
def _lever(parts, e, qd, p):
    t, v = e.terminals, p[e.name]
    return (v["arm_b"], parts.disp(qd, t[0])), (v["arm_a"], parts.disp(qd, t[1]))


def _gear(parts, e, qd, p):
    t, v = e.terminals, p[e.name]
    return (v["r_a"], parts.disp(qd, t[0])), (v["r_b"], parts.disp(qd, t[1]))


def _transformer(parts, e, qd, p):
    v = p[e.name]
    return (v["N1"], parts.edge(qd, e, "q1")), (v["N2"], parts.edge(qd, e, "q2"))


def _pistons(parts, e, qd, p):
    v = p[e.name]
    return (1 / v["A1"], parts.edge(qd, e, "V1")), (1 / v["A2"], parts.edge(qd, e, "V2"))


def _pistons_row(parts, e, q, qd, t, p):
    return parts.edge(qd, e, "V1") / p[e.name]["A1"] + parts.edge(qd, e, "V2") / p[e.name]["A2"]


def _rack(parts, e, qd, p):
    t = e.terminals
    return (-p[e.name]["r"], parts.disp(qd, t[0])), (1.0, parts.disp(qd, t[1]))


def _rack_row(parts, e, q, qd, t, p):
    return parts.disp(qd, e.terminals[1]) - p[e.name]["r"] * parts.disp(qd, e.terminals[0])


def _cylinder(parts, e, qd, p):
    return (1.0, parts.edge(qd, e, "V")), (-p[e.name]["A"], parts.disp(qd, e.terminals[2]))


def _cylinder_row(parts, e, q, qd, t, p):
    return parts.edge(qd, e, "V") - p[e.name]["A"] * parts.disp(qd, e.terminals[2])


# -------------------------------------------------------------------- table
_SPRING = _effort_store(_rel, lambda x, v: v["k"] * x, lambda x, v: 0.5 * v["k"] * x * x)
_DAMPER = _resistive(_rel, lambda x, v: v["c"] * x, lambda x, v: 0.5 * v["c"] * x * x)
_CAPACITOR = _effort_store(_edge, lambda x, v: x / v["C"], lambda x, v: 0.5 * x * x / v["C"])
_RESISTOR = _resistive(_edge, lambda x, v: v["R"] * x, lambda x, v: 0.5 * v["R"] * x * x)
_EDGE = ((None, 0, 1),)

#: element kind -> its record (see `ElementKind`)
KINDS: dict[str, ElementKind] = {
    # translational and rotational
    "mass": ElementKind((T, None), _flow_store(_node, "m"), inertia=(None, "m"), stores_flow=True),
    "spring": ElementKind((T, T), **_SPRING),
    "damper": ElementKind((T, T), **_DAMPER),
    "inertia": ElementKind((R, None), _flow_store(_node, "J"), inertia=(None, "J"), stores_flow=True),
    "torsion_spring": ElementKind((R, R), **_SPRING),
    "rotational_damper": ElementKind((R, R), **_DAMPER),
    "lever": ElementKind((T, T), **_constraint(_lever)),
    "gear": ElementKind((R, R), **_constraint(_gear)),
    "stick_slip": ElementKind((None, None), _friction_ports, idle=("stick",), inertia=("stick", "m_stick"),
                              forces=_friction_forces, row=_friction_row, carried_by_multipliers=True,
                              friction=True, check_domains=_friction_domains),
    # electrical
    "inductor": ElementKind((E, E), _flow_store(_edge, "L"), edges=_EDGE, inertia=("q", "L"), stores_flow=True,
                            structure="flow store"),
    "capacitor": ElementKind((E, E), edges=_EDGE, structure="effort store", **_CAPACITOR),
    "resistor": ElementKind((E, E), edges=_EDGE, **_RESISTOR),
    "transformer": ElementKind((E, E, E, E), edges=(("q1", 0, 1), ("q2", 2, 3)), **_constraint(_transformer)),
    "diode": ElementKind((E, E), _diode_ports, edges=_EDGE, dissipation=_diode_dissipation),
    "bjt_npn": _transistor(1.0),
    "bjt_pnp": _transistor(-1.0),
    # fluid
    "inertance": ElementKind((F, F), _flow_store(_edge, "I"), edges=_EDGE, inertia=("V", "I"), stores_flow=True,
                             structure="flow store"),
    "fluid_capacitor": ElementKind((F, F), edges=_EDGE, structure="effort store", **_CAPACITOR),
    "fluid_resistor": ElementKind((F, F), edges=_EDGE, **_RESISTOR),
    "piston_transformer": ElementKind((F, F, F, F), edges=(("V1", 0, 1), ("V2", 2, 3)),
                                      **_constraint(_pistons, _pistons_row)),
    # transducers
    "rack_pinion": ElementKind((R, T), distinct=False, **_constraint(_rack, _rack_row)),
    "hydraulic_piston": ElementKind((F, F, T), distinct=False, edges=(("V", 0, 1),),
                                    **_constraint(_cylinder, _cylinder_row)),
    "dc_motor": ElementKind((E, E, R), _motor_ports, distinct=False, edges=(("q", 0, 1),), inertia=("q", "L"),
                            dissipation=_motor_dissipation, forces=_motor_forces, stores_flow=True),
    # sources
    "effort_source": ElementKind((None, None), _effort_source_ports, edges=((None, 1, 0),),
                                 forces=_effort_source_forces, structure="effort source", check=_needs_function),
    "flow_source": ElementKind((None, None), _flow_source_ports, edges=_EDGE, row=_flow_source_row,
                               carried_by_multipliers=True, structure="flow source", check=_needs_function),
}


def flow_edges(net, e):
    """`[(suffix, from node, to node)]`: the edge coordinates element `e` adds (its
    record's `edges`, with the domain's suffix filled in)."""
    out = []
    for suffix, a, b in KINDS[e.kind].edges:
        if suffix is None:
            domain = edge_domain(net, e)
            if domain not in SUFFIX:
                continue
            suffix = SUFFIX[domain]
        out.append((suffix, e.terminals[a], e.terminals[b]))
    return out
