"""Compile a validated Network (optionally coupled to a mechanism Model) into a Model.

Layout of `q`: the mechanism's coordinates (if any), then one displacement per
unattached translational/rotational node, then one flow coordinate per electrical or
fluid edge (elements, source edges, transformer and piston windings, motor
armatures). Every network inertia is a constant diagonal entry (`½ d f²`), so the
network alone has `mass_diagonal`; coupled to a mechanism the inertia takes the
mechanism's form (diagonal, matrix or kinetic energy) extended by the network's
diagonal. Flow constraints (junction laws, transformers, transducers, flow sources)
are nonholonomic rows, affine in q̇ with constant coefficients (except flow sources'
`f(t)`), so the node efforts are multipliers.
"""

from __future__ import annotations

import dataclasses


import jax.numpy as jnp
import numpy as np

from .._model import Model
from ._domains import DOMAINS, GROUND
from ._laws import integral_of, junction_content, junction_voltage
from ._part import Element, NetworkPart
from ._structure import structure_problems
from ._validate import NONNEGATIVE, NONZERO, POSITIVE

_SUFFIX = {"electrical": "q", "fluid": "V"}


@dataclasses.dataclass
class _Layout:
    n_mech: int
    coordinates: list
    node_index: dict      # mechanical node -> coordinate index
    edge_index: dict      # coordinate name -> index
    edges: list           # (index, from, to) for the junction laws
    inertia: list         # (index, params key path) diagonal entries
    taps: list = dataclasses.field(default_factory=list)  # (index, node, coef(p)) weighted flows into nodes
    links: list = dataclasses.field(default_factory=list)  # (index, from, to) graph-only edges (transistors)


def _edge_domain(net, element):
    for t in element.terminals:
        if t != GROUND and t in net._nodes:
            return net._nodes[t]
    return None


def _layout(net, mechanism, attach):
    coords = list(mechanism.coordinates) if mechanism is not None else []
    n_mech = len(coords)
    node_index = {}
    for node, domain in net._nodes.items():
        if DOMAINS[domain][3] != "node":
            continue
        if node in attach:
            node_index[node] = mechanism.index(attach[node])
        else:
            node_index[node] = len(coords)
            coords.append(f"{node}.{DOMAINS[domain][2]}")
    edge_index, edges = {}, []

    def add_edge(label, frm, to):
        edge_index[label] = len(coords)
        coords.append(label)
        edges.append((edge_index[label], frm, to))

    for e in net._elements:
        k, t = e.kind, e.terminals
        if k in ("inductor", "capacitor", "resistor", "diode", "inertance", "fluid_capacitor", "fluid_resistor"):
            add_edge(f"{e.name}.{_SUFFIX[_edge_domain(net, e)]}", t[0], t[1])
        elif k in ("effort_source", "flow_source") and _edge_domain(net, e) in _SUFFIX:
            frm, to = (t[1], t[0]) if k == "effort_source" else (t[0], t[1])
            add_edge(f"{e.name}.{_SUFFIX[_edge_domain(net, e)]}", frm, to)
        elif k == "transformer":
            add_edge(f"{e.name}.q1", t[0], t[1])
            add_edge(f"{e.name}.q2", t[2], t[3])
        elif k == "piston_transformer":
            add_edge(f"{e.name}.V1", t[0], t[1])
            add_edge(f"{e.name}.V2", t[2], t[3])
        elif k == "hydraulic_piston":
            add_edge(f"{e.name}.V", t[0], t[1])
        elif k == "dc_motor":
            add_edge(f"{e.name}.q", t[0], t[1])
    taps, links = [], []
    for e in net._elements:
        if e.kind in ("bjt_npn", "bjt_pnp"):
            c, b, em = e.terminals
            for junction, (to_b, to_c, to_e) in _bjt_taps(e).items():
                edge_index[f"{e.name}.{junction}"] = len(coords)
                coords.append(f"{e.name}.{junction}")
                for node, coef in ((b, to_b), (c, to_c), (em, to_e)):
                    taps.append((edge_index[f"{e.name}.{junction}"], node, coef))
            links += [(edge_index[f"{e.name}.qF"], b, em), (edge_index[f"{e.name}.qR"], b, c)]
    for e in net._elements:
        if e.kind == "stick_slip":   # bookkeeping coordinate of the sticking row
            edge_index[f"{e.name}.stick"] = len(coords)
            coords.append(f"{e.name}.stick")
    inertia = []
    for e in net._elements:
        if e.kind == "stick_slip":
            inertia.append((edge_index[f"{e.name}.stick"], (e.name, "m_stick")))
        if e.kind == "mass":
            inertia.append((node_index[e.terminals[0]], (e.name, "m")))
        elif e.kind == "inertia":
            inertia.append((node_index[e.terminals[0]], (e.name, "J")))
        elif e.kind == "inductor":
            inertia.append((edge_index[f"{e.name}.q"], (e.name, "L")))
        elif e.kind == "inertance":
            inertia.append((edge_index[f"{e.name}.V"], (e.name, "I")))
        elif e.kind == "dc_motor":
            inertia.append((edge_index[f"{e.name}.q"], (e.name, "L")))
    return _Layout(n_mech, coords, node_index, edge_index, edges, inertia, taps, links)


def _alpha(beta):
    return beta / (1.0 + beta)


def _bjt_taps(e):
    """`{junction: (coef(p) into base, into collector, into emitter)}` of the injection
    flows `i_F`, `i_R` of a transistor (NPN: `i_C = α_F i_F − i_R`, `i_E = i_F −
    α_R i_R` leave the collector node and enter the emitter node; PNP reversed)."""
    s, nm = (1.0 if e.kind == "bjt_npn" else -1.0), e.name
    aF = lambda p: _alpha(p[nm]["beta_f"])  # noqa: E731
    aR = lambda p: _alpha(p[nm]["beta_r"])  # noqa: E731
    return {
        "qF": (lambda p: -s * (1 - aF(p)), lambda p: -s * aF(p), lambda p: s * 1.0),
        "qR": (lambda p: -s * (1 - aR(p)), lambda p: s * 1.0, lambda p: -s * aR(p)),
    }


def _bjt_junctions(e, qd, p, edge):
    """`(v_F, v_R, α_F, α_R)`: junction voltages (v_BE, v_BC for NPN; v_EB, v_CB for
    PNP) of the injection flows, from the inverted junction laws."""
    f = p[e.name]
    aF, aR = _alpha(f["beta_f"]), _alpha(f["beta_r"])
    vF = junction_voltage(edge(qd, e, "qF"), f["I_s"] / aF, f["V_T"], f["gmin"])
    vR = junction_voltage(edge(qd, e, "qR"), f["I_s"] / aR, f["V_T"], f["gmin"])
    return vF, vR, aF, aR


class _Parts:
    """Per-element energies, forces, flow rows and effort/flow/power accessors."""

    def __init__(self, net, lay):
        self.net, self.lay = net, lay

    # --------------------------------------------------------------- reading q
    def disp(self, x, node):
        return jnp.zeros((), x.dtype) if node == GROUND else x[self.lay.node_index[node]]

    def edge(self, x, e, suffix=None):
        if suffix is None:
            suffix = _SUFFIX[_edge_domain(self.net, e)]
        return x[self.lay.edge_index[f"{e.name}.{suffix}"]]

    def rel(self, x, e):
        a, b = e.terminals[:2]
        return self.disp(x, a) - self.disp(x, b)

    # --------------------------------------------------------------- energies
    def potential(self, q, t, p):
        V = jnp.zeros((), q.dtype)
        for e in self.net._elements:
            if e.kind in ("spring", "torsion_spring"):
                x = self.rel(q, e)
                V = V + (integral_of(e.fn)(x, p) if e.fn else 0.5 * p[e.name]["k"] * x * x)
            elif e.kind in ("capacitor", "fluid_capacitor"):
                x = self.edge(q, e)
                V = V + (integral_of(e.fn)(x, p) if e.fn else 0.5 * x * x / p[e.name]["C"])
        return V

    def dissipation(self, q, qd, t, p):
        D = jnp.zeros((), q.dtype)
        for e in self.net._elements:
            if e.kind in ("damper", "rotational_damper"):
                v = self.rel(qd, e)
                D = D + (integral_of(e.fn)(v, p) if e.fn else 0.5 * p[e.name]["c"] * v * v)
            elif e.kind in ("resistor", "fluid_resistor"):
                f = self.edge(qd, e)
                D = D + (integral_of(e.fn)(f, p) if e.fn else 0.5 * p[e.name]["R"] * f * f)
            elif e.kind == "dc_motor":
                f = self.edge(qd, e)
                D = D + 0.5 * p[e.name]["R"] * f * f
            elif e.kind == "diode":
                d = p[e.name]
                D = D + junction_content(self.edge(qd, e), d["I_s"], d["n"] * d["V_T"], d["gmin"])
        return D

    def forces(self, q, qd, t, p):
        Q = jnp.zeros_like(q)
        for e in self.net._elements:
            if e.kind == "effort_source":
                value = jnp.asarray(e.fn(t, p), dtype=float).reshape(())
                if _edge_domain(self.net, e) in _SUFFIX:
                    Q = Q.at[self.lay.edge_index[f"{e.name}.{_SUFFIX[_edge_domain(self.net, e)]}"]].add(value)
                else:
                    a, b = e.terminals
                    if a != GROUND:
                        Q = Q.at[self.lay.node_index[a]].add(value)
                    if b != GROUND:
                        Q = Q.at[self.lay.node_index[b]].add(-value)
            elif e.kind == "stick_slip":   # kinetic friction while sliding
                f = p[e.name]
                force = -(1.0 - f["stuck"]) * f["mu_k"] * f["normal"] * f["direction"]
                a, b = e.terminals
                if a != GROUND:
                    Q = Q.at[self.lay.node_index[a]].add(force)
                if b != GROUND:
                    Q = Q.at[self.lay.node_index[b]].add(-force)
            elif e.kind in ("bjt_npn", "bjt_pnp"):
                vF, vR, aF, aR = _bjt_junctions(e, qd, p, self.edge)
                Q = Q.at[self.lay.edge_index[f"{e.name}.qF"]].add(-vF + aF * vR)
                Q = Q.at[self.lay.edge_index[f"{e.name}.qR"]].add(-vR + aR * vF)
            elif e.kind == "dc_motor":
                K = p[e.name]["K"]
                i = self.lay.edge_index[f"{e.name}.q"]
                shaft = e.terminals[2]
                Q = Q.at[i].add(-K * self.disp(qd, shaft))          # back-emf
                if shaft != GROUND:
                    Q = Q.at[self.lay.node_index[shaft]].add(K * qd[i])  # torque
        return Q

    # ------------------------------------------------------------- flow rows
    def rows(self):
        """`[(row name, element or node, fn(q, qd, t, p) -> ())]` in order: junction
        laws of the edge-domain nodes, then constraint elements and flow sources."""
        out = []
        for node, domain in self.net._nodes.items():
            if DOMAINS[domain][3] != "edge":
                continue
            into = [i for i, _, to in self.lay.edges if to == node]
            out_ = [i for i, frm, _ in self.lay.edges if frm == node]
            taps = [(i, coef) for i, nd, coef in self.lay.taps if nd == node]
            if not into and not out_ and not taps:
                continue
            fi, fo = np.array(into, dtype=int), np.array(out_, dtype=int)

            def kcl(q, qd, t, p, fi=fi, fo=fo, taps=tuple(taps)):
                total = jnp.sum(qd[fi]) - jnp.sum(qd[fo])
                for i, coef in taps:
                    total = total + coef(p) * qd[i]
                return total
            out.append((node, node, kcl))
        for e in self.net._elements:
            fn = self._row(e)
            if fn is not None:
                out.append((e.name, e, fn))
        return out

    def _row(self, e):
        k, t, nm = e.kind, e.terminals, e.name
        if k == "lever":
            return lambda q, qd, tt, p: (p[nm]["arm_b"] * self.disp(qd, t[0]) + p[nm]["arm_a"] * self.disp(qd, t[1]))
        if k == "gear":
            return lambda q, qd, tt, p: p[nm]["r_a"] * self.disp(qd, t[0]) + p[nm]["r_b"] * self.disp(qd, t[1])
        if k == "transformer":
            return lambda q, qd, tt, p: (p[nm]["N1"] * self.edge(qd, e, "q1") + p[nm]["N2"] * self.edge(qd, e, "q2"))
        if k == "piston_transformer":
            return lambda q, qd, tt, p: self.edge(qd, e, "V1") / p[nm]["A1"] + self.edge(qd, e, "V2") / p[nm]["A2"]
        if k == "rack_pinion":
            return lambda q, qd, tt, p: self.disp(qd, t[1]) - p[nm]["r"] * self.disp(qd, t[0])
        if k == "hydraulic_piston":
            return lambda q, qd, tt, p: self.edge(qd, e, "V") - p[nm]["A"] * self.disp(qd, t[2])
        if k == "stick_slip":
            def stick(q, qd, tt, p):
                s = p[nm]["stuck"]
                return s * self.rel(qd, e) + (1.0 - s) * self.edge(qd, e, "stick")
            return stick
        if k == "flow_source":
            def row(q, qd, tt, p):
                f = jnp.asarray(e.fn(tt, p), dtype=float).reshape(())
                flow = self.edge(qd, e) if _edge_domain(self.net, e) in _SUFFIX else self.rel(qd, e)
                return flow - f
            return row
        return None

    # --------------------------------------------------- efforts, flows, powers
    def ports(self, e):
        """`fn(q, qd, qdd, lam_rows, t, p) -> (efforts (k,), flows (k,))` of element `e`,
        passive sign convention (power absorbed = Σ effort · flow)."""
        k, t, nm = e.kind, e.terminals, e.name
        edge_domain = _edge_domain(self.net, e) in _SUFFIX

        def one(effort, flow):
            return jnp.stack([effort]), jnp.stack([flow])

        if k in ("mass", "inertia"):
            key = "m" if k == "mass" else "J"
            return lambda q, qd, qdd, mu, tt, p: one(p[nm][key] * self.disp(qdd, t[0]), self.disp(qd, t[0]))
        if k in ("spring", "torsion_spring"):
            return lambda q, qd, qdd, mu, tt, p: one(
                e.fn(self.rel(q, e), p) if e.fn else p[nm]["k"] * self.rel(q, e), self.rel(qd, e))
        if k in ("damper", "rotational_damper"):
            return lambda q, qd, qdd, mu, tt, p: one(
                e.fn(self.rel(qd, e), p) if e.fn else p[nm]["c"] * self.rel(qd, e), self.rel(qd, e))
        if k in ("inductor", "inertance"):
            key = "L" if k == "inductor" else "I"
            return lambda q, qd, qdd, mu, tt, p: one(p[nm][key] * self.edge(qdd, e), self.edge(qd, e))
        if k in ("capacitor", "fluid_capacitor"):
            return lambda q, qd, qdd, mu, tt, p: one(
                e.fn(self.edge(q, e), p) if e.fn else self.edge(q, e) / p[nm]["C"], self.edge(qd, e))
        if k == "stick_slip":
            def friction(q, qd, qdd, mu, tt, p):
                f = p[nm]
                resisting = f["stuck"] * mu[nm] + (1.0 - f["stuck"]) * f["mu_k"] * f["normal"] * f["direction"]
                return one(resisting, self.rel(qd, e))
            return friction
        if k == "diode":
            def diode(q, qd, qdd, mu, tt, p):
                d, i = p[nm], self.edge(qd, e)
                return one(junction_voltage(i, d["I_s"], d["n"] * d["V_T"], d["gmin"]), i)
            return diode
        if k in ("bjt_npn", "bjt_pnp"):
            def bjt(q, qd, qdd, mu, tt, p):
                vF, vR, aF, aR = _bjt_junctions(e, qd, p, self.edge)
                return (jnp.stack([vF - aF * vR, vR - aR * vF]),
                        jnp.stack([self.edge(qd, e, "qF"), self.edge(qd, e, "qR")]))
            return bjt
        if k in ("resistor", "fluid_resistor"):
            return lambda q, qd, qdd, mu, tt, p: one(
                e.fn(self.edge(qd, e), p) if e.fn else p[nm]["R"] * self.edge(qd, e), self.edge(qd, e))
        if k == "effort_source":
            if edge_domain:  # coordinate counts b -> a (out of the + terminal)
                return lambda q, qd, qdd, mu, tt, p: one(jnp.asarray(e.fn(tt, p), dtype=float).reshape(()),
                                                         -self.edge(qd, e))
            return lambda q, qd, qdd, mu, tt, p: one(-jnp.asarray(e.fn(tt, p), dtype=float).reshape(()),
                                                     self.rel(qd, e))
        if k == "flow_source":
            flow = (lambda qd: self.edge(qd, e)) if edge_domain else (lambda qd: self.rel(qd, e))
            return lambda q, qd, qdd, mu, tt, p: one(mu[nm], flow(qd))
        if k == "dc_motor":
            def motor(q, qd, qdd, mu, tt, p):
                i, w = self.edge(qd, e, "q"), self.disp(qd, t[2])
                v = p[nm]["R"] * i + p[nm]["L"] * self.edge(qdd, e, "q") + p[nm]["K"] * w
                return jnp.stack([v, -p[nm]["K"] * i]), jnp.stack([i, w])
            return motor
        # flow-constraint elements: port k carries effort a_k μ and flow f_k
        coefficient_flows = {
            "lever": lambda qd, p: ((p[nm]["arm_b"], self.disp(qd, t[0])), (p[nm]["arm_a"], self.disp(qd, t[1]))),
            "gear": lambda qd, p: ((p[nm]["r_a"], self.disp(qd, t[0])), (p[nm]["r_b"], self.disp(qd, t[1]))),
            "transformer": lambda qd, p: ((p[nm]["N1"], self.edge(qd, e, "q1")), (p[nm]["N2"], self.edge(qd, e, "q2"))),
            "piston_transformer": lambda qd, p: ((1 / p[nm]["A1"], self.edge(qd, e, "V1")),
                                                 (1 / p[nm]["A2"], self.edge(qd, e, "V2"))),
            "rack_pinion": lambda qd, p: ((-p[nm]["r"], self.disp(qd, t[0])), (1.0, self.disp(qd, t[1]))),
            "hydraulic_piston": lambda qd, p: ((1.0, self.edge(qd, e, "V")), (-p[nm]["A"], self.disp(qd, t[2]))),
        }[k]

        def constraint_ports(q, qd, qdd, mu, tt, p):
            pairs = coefficient_flows(qd, p)
            return (jnp.stack([jnp.asarray(a) * mu[nm] for a, _ in pairs]),
                    jnp.stack([f for _, f in pairs]))
        return constraint_ports


#: element kinds whose efforts are junction or constraint multipliers
_CARRIED_BY_MULTIPLIERS = ("flow_source", "stick_slip", "lever", "gear", "transformer", "piston_transformer",
                           "rack_pinion", "hydraulic_piston")


def default_params(net):
    return {e.name: {k: jnp.asarray(v) for k, v in e.params.items()} for e in net._elements if e.params}


def compile_network(net, mechanism, attach):
    """`Model` of a validated network (see `Network.build`)."""
    lay = _layout(net, mechanism, attach)
    parts = _Parts(net, lay)
    rows = parts.rows()
    n, n_mech = len(lay.coordinates), lay.n_mech
    diag_idx = np.array([i for i, _ in lay.inertia], dtype=int)
    diag_keys = [key for _, key in lay.inertia]

    def net_diagonal(p):
        d = jnp.zeros((n,))
        if diag_keys:
            d = d.at[diag_idx].add(jnp.stack([p[a][b] for a, b in diag_keys]))
        return d

    def nonholonomic(q, qd, t, p):
        own = jnp.stack([fn(q, qd, t, p) for _, _, fn in rows]) if rows else jnp.zeros((0,))
        if mechanism is not None and mechanism.nonholonomic_fn is not None:
            return jnp.concatenate([jnp.asarray(mechanism.nonholonomic_fn(q[:n_mech], qd[:n_mech], t, p)), own])
        return own

    params = default_params(net)
    m_h = 0
    kwargs = {}
    if mechanism is None:
        kwargs["mass_diagonal"] = net_diagonal
        kwargs["potential"] = parts.potential
        kwargs["dissipation"] = parts.dissipation
        kwargs["forces"] = parts.forces
        non_names = tuple(r for r, _, _ in rows)
    else:
        kwargs.update(_coupled(mechanism, parts, net_diagonal, n_mech))
        params = {**mechanism.params, **params}
        m_h = mechanism.m_h
        non_names = tuple(mechanism.nonholonomic_names) + tuple(r for r, _, _ in rows)
    m_n_mech = len(non_names) - len(rows)
    row_of = {r: k for k, (r, _, _) in enumerate(rows)}

    def multipliers(lam):
        """`{row: multiplier}` of the network's own rows from the model's `lam`."""
        start = m_h + m_n_mech
        return {r: lam[..., start + k] for r, k in row_of.items()}

    ports = {e.name: parts.ports(e) for e in net._elements}
    owner = {}
    for label, index in lay.edge_index.items():
        owner[index] = label.rsplit(".", 1)[0]
    part = NetworkPart(
        nodes=dict(net._nodes),
        elements={e.name: Element(e.kind, tuple(e.terminals)) for e in net._elements},
        ports=ports,
        multipliers=multipliers,
        node_rate={nd: (lambda qd, i=i: qd[..., i]) for nd, i in lay.node_index.items()},
        attached=dict(attach),
        carried_by_multipliers=frozenset(e.name for e in net._elements if e.kind in _CARRIED_BY_MULTIPLIERS),
    )
    metadata = {
        "front_end": "network" if mechanism is None else f"{(mechanism.metadata or {}).get('front_end', 'model')}+network",
        "network": {"nodes": dict(net._nodes),
                    "elements": {e.name: {"kind": e.kind, "terminals": e.terminals} for e in net._elements},
                    "attached": dict(attach)},
    }
    if mechanism is not None and mechanism.metadata:
        metadata = {**mechanism.metadata, **metadata}
    frictions = [e for e in net._elements if e.kind == "stick_slip"]
    switching = _stick_slip(net, parts, frictions, multipliers) if frictions else None
    problems = tuple(structure_problems(net, lay.edges + lay.links, owner))
    if mechanism is not None:
        switching = switching if switching is not None else mechanism.switching
        problems = tuple(mechanism.structure_problems) + problems
    units = [_coordinate_unit(part, c) for c in lay.coordinates]
    if mechanism is not None and mechanism.coordinate_units is not None:
        units[:n_mech] = mechanism.coordinate_units
    bounds = _bounds(net, params)
    if mechanism is not None:
        bounds = {**{n: (k, w) for n, k, w in mechanism.param_bounds}, **bounds}
    return Model(
        tuple(lay.coordinates),
        nonholonomic=nonholonomic if non_names else None,
        nonholonomic_names=non_names or None,
        params=params,
        metadata=metadata,
        switching=switching,
        network=part,
        contacts=mechanism.contacts if mechanism is not None else None,
        structure_problems=problems,
        coordinate_units=units,
        param_bounds=bounds,
        **kwargs,
    )


def _coordinate_unit(part, name):
    """SI unit of coordinate `name` of a network model: an element's flow coordinate
    by its domain (`"C.q"`: C), a node's displacement (m or rad) and a mechanism's
    coordinates by their names (`x`, `y`, `z`: m; angles: rad; Euler parameters: 1)."""
    base, _, last = name.rpartition(".")
    if base in part.elements:
        return part.coordinate_unit(base)
    if last in ("phi", "theta", "psi"):
        return "rad"
    if last in ("e0", "e1", "e2", "e3"):
        return "1"
    return "m" if last in ("x", "y", "z") else None


def _bounds(net, params):
    """The admissible values of the elements' scalar parameters (`Model(param_bounds=)`),
    by the same rules as the build-time checks (`_validate`): for example R >= 0, C > 0."""
    out = {}
    for e in net._elements:
        own = params.get(e.name, {})
        for key in e.params:
            if key not in own or jnp.shape(own[key]) != ():
                continue
            name = f"{e.name}.{key}"
            if key in POSITIVE and e.fn is None:
                out[name] = ("positive", f"{POSITIVE[key]} of {e.kind} {e.name!r}")
            elif key in NONNEGATIVE:
                out[name] = ("nonnegative", f"{NONNEGATIVE[key]} of {e.kind} {e.name!r}")
            elif key in NONZERO:
                out[name] = ("nonzero", f"{key} of {e.kind} {e.name!r}")
    return out


def _coupled(mech, parts, net_diagonal, n_mech):
    """Model arguments of the mechanism extended by the network."""
    def split(x):
        return x[:n_mech]

    out = {}
    kind = mech.inertia_kind
    if kind == "mass_diagonal":
        out["mass_diagonal"] = lambda p: net_diagonal(p).at[:n_mech].add(jnp.asarray(mech.mass_diagonal_fn(p)))
    elif kind == "mass_matrix":
        def M(q, t, p):
            base = jnp.diag(net_diagonal(p))
            return base.at[:n_mech, :n_mech].add(jnp.asarray(mech.mass_matrix_fn(split(q), t, p)))
        out["mass_matrix"] = M
    else:
        out["kinetic_energy"] = lambda q, qd, t, p: (mech.kinetic_energy_fn(split(q), split(qd), t, p)
                                                     + 0.5 * qd @ (net_diagonal(p) * qd))

    def potential(q, t, p):
        V = parts.potential(q, t, p)
        return V + mech.potential_fn(split(q), t, p) if mech.potential_fn is not None else V

    def dissipation(q, qd, t, p):
        D = parts.dissipation(q, qd, t, p)
        return D + mech.dissipation_fn(split(q), split(qd), t, p) if mech.dissipation_fn is not None else D

    def forces(q, qd, t, p):
        Q = parts.forces(q, qd, t, p)
        if mech.forces_fn is not None:
            Q = Q.at[:n_mech].add(jnp.asarray(mech.forces_fn(split(q), split(qd), t, p)))
        return Q

    out.update(potential=potential, dissipation=dissipation, forces=forces)
    if mech.holonomic_fn is not None:
        out["holonomic"] = lambda q, t, p: mech.holonomic_fn(split(q), t, p)
        out["constraint_names"] = mech.constraint_names
        if mech.holonomic_jacobian_fn is not None:
            def jac(q, t, p):
                J = jnp.asarray(mech.holonomic_jacobian_fn(split(q), t, p))
                return jnp.concatenate([J, jnp.zeros((J.shape[0], q.shape[0] - n_mech), J.dtype)], axis=1)
            out["holonomic_jacobian"] = jac
    if mech.reaction_fns:
        out["reactions"] = {j: (lambda q, lam, p, fn=fn: fn(split(q), lam, p)) for j, fn in mech.reaction_fns.items()}
    if mech.singularity_fn is not None:
        out["singularity"] = lambda q: mech.singularity_fn(split(q))
        out["singularity_names"] = mech.singularity_names
        out["singularity_advice"] = mech.singularity_advice
    return out





def _stick_slip(net, parts, frictions, multipliers):
    """`Switching` of the exact Coulomb friction elements (see `coulomb_friction`).

    Per element, with `v = v_a − v_b`, `F_s = μ_s N`, `d = direction` and `λ` the
    multiplier of its sticking row `v = 0` (the force the friction exerts against
    node a while sticking: `m_a v̇_a = … − λ`), a regulated effort source (Fabien
    ch. 1; THEORY §7):

    - modes: stick (`stuck` = 1, row `v = 0`), slip `d = ±1` (`stuck` = 0, force
      `μ_k N d` against a, the row holding the idle coordinate `"<name>.stick"`).
    - conditions, positive while the mode holds: stick `F_s − |λ(t)|` (λ evaluated
      at the condition's own t, so a forcing `e(t)` that raises the holding force
      while the state stands still is seen), slip `d v`.
    - monitor: `stuck λ`, whose integral joins each piece's state so that the steps
      resolve the holding force while the state is constant.
    - initial modes (t0): at rest (`|v| ≤ rest_tolerance`) stick if the holding
      force `λ_h` (the sticking multiplier of the state and the forcing at t0, every
      element at rest held) has `|λ_h| < F_s`, else slip with `d = sign λ_h`;
      moving, slip with `d = sign v`.
    - transitions (at an event, the element whose condition is the smallest having
      ended the piece): a sticking element whose `|λ|` reached `F_s` slips with `d =
      sign λ`; a sliding element whose `d v` reached zero (or `≤ rest_tolerance`)
      sticks if `|λ_h| < F_s`, else slips with `d = sign λ_h`: the reversal `d → −d`
      goes straight through `v = 0`, without a stick of zero length. Other elements
      keep their modes. The static test carries a relative margin of 1e-8 (an element
      sticks only below `F_s (1 − 1e-8)`), so a new stick starts with a positive
      condition and its event cannot be missed at its first step.
    """
    from .._switching import Switching

    names = tuple(e.name for e in frictions)
    margin = 1.0 - 1e-8

    def conditions(q, qd, lam, t, p):
        mu = multipliers(lam)
        out = []
        for e in frictions:
            f = p[e.name]
            sliding = f["direction"] * parts.rel(qd, e)
            holding = f["mu_s"] * f["normal"] - jnp.abs(mu[e.name])
            out.append((1.0 - f["stuck"]) * sliding + f["stuck"] * holding)
        return jnp.stack(out)

    def monitor(q, qd, lam, t, p):
        mu = multipliers(lam)
        return jnp.stack([p[e.name]["stuck"] * mu[e.name] for e in frictions])

    def sign(x):
        return jnp.where(x >= 0, 1.0, -1.0)

    def holding(p, lam_in, e):
        """The sticking multiplier the state would have with `e` stuck (the others
        in their modes of `p`)."""
        f = p[e.name]
        return multipliers(lam_in({**p, e.name: {**f, "stuck": jnp.ones_like(f["stuck"])}}))[e.name]

    def copy(p):
        return {k: (dict(v) if isinstance(v, dict) else v) for k, v in p.items()}

    def rest_rule(f, held):
        """`(stuck, direction)` at zero relative velocity."""
        stick = jnp.abs(held) < f["mu_s"] * f["normal"] * margin
        return jnp.where(stick, 1.0, 0.0), jnp.where(stick, f["direction"], sign(held))

    def initial(q, qd, lam, lam_in, t, p):
        # every element at rest held at once, every moving one sliding with its
        # velocity: the holding forces then see the other elements' true forces
        trial = copy(p)
        rest = {}
        for e in frictions:
            f = dict(p[e.name])
            v = parts.rel(qd, e)
            rest[e.name] = jnp.abs(v) <= f["rest_tolerance"]
            f["stuck"] = jnp.where(rest[e.name], 1.0, 0.0)
            f["direction"] = sign(v)
            trial[e.name] = f
        held = multipliers(lam_in(trial))
        out = copy(trial)
        for e in frictions:
            f = dict(trial[e.name])
            stuck, direction = rest_rule(f, held[e.name])
            f["stuck"] = jnp.where(rest[e.name], stuck, 0.0)
            f["direction"] = jnp.where(rest[e.name], direction, f["direction"])
            out[e.name] = f
        return out

    def transition(q, qd, lam, lam_in, t, p):
        out = copy(p)
        mu = multipliers(lam)
        c = conditions(q, qd, lam, t, p)
        for j, e in enumerate(frictions):
            f = dict(p[e.name])
            was_stuck = f["stuck"] > 0.5
            fired = c[j] <= jnp.min(c)        # the element whose condition ended the piece
            # sticking: its event is |λ| reaching F_s
            breaks = fired | (jnp.abs(mu[e.name]) >= f["mu_s"] * f["normal"] * margin)
            # sliding: its event is d v reaching zero
            stopped = fired | (f["direction"] * parts.rel(qd, e) <= f["rest_tolerance"])
            rest_stuck, rest_direction = rest_rule(f, holding(p, lam_in, e))
            f["stuck"] = jnp.where(was_stuck, jnp.where(breaks, 0.0, 1.0), jnp.where(stopped, rest_stuck, 0.0))
            f["direction"] = jnp.where(was_stuck, jnp.where(breaks, sign(mu[e.name]), f["direction"]),
                                       jnp.where(stopped, rest_direction, f["direction"]))
            out[e.name] = f
        return out

    bound = max(net._switch_bounds[nm] for nm in names)
    return Switching(names=names, keys=tuple((nm, leaf) for nm in names for leaf in ("stuck", "direction")),
                     conditions=conditions, transition=transition, max_switches=bound, initial=initial,
                     monitor=monitor)
