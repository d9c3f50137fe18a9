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
import functools

import jax.numpy as jnp
import numpy as np

from .._model import Model
from ._domains import DOMAINS, GROUND
from ._elements import KINDS, SUFFIX, edge_domain, flow_edges
from ._part import Element, NetworkPart
from ._structure import structure_problems
from ._validate import NONNEGATIVE, NONZERO, POSITIVE


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


def _layout(net, mechanism, attach):
    """Coordinates and their roles, in the order users see: the mechanism's, one
    displacement per unattached mechanical node, then, by the element records
    (`_elements.KINDS`), every element's edge coordinates in element order, then every
    tap coordinate (transistor junctions), then every idle coordinate (friction)."""
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

    def add(label):
        edge_index[label] = len(coords)
        coords.append(label)
        return edge_index[label]

    for e in net._elements:
        for suffix, frm, to in flow_edges(net, e):
            edges.append((add(f"{e.name}.{suffix}"), frm, to))
    taps, links = [], []
    for e in net._elements:
        kind = KINDS[e.kind]
        if kind.taps is None:
            continue
        for junction, weights in kind.taps(e).items():
            index = add(f"{e.name}.{junction}")
            taps += [(index, node, coef) for node, coef in weights]
        links += [(edge_index[f"{e.name}.{suffix}"], e.terminals[a], e.terminals[b]) for suffix, a, b in kind.links]
    for e in net._elements:
        for suffix in KINDS[e.kind].idle:
            add(f"{e.name}.{suffix}")
    inertia = []
    for e in net._elements:
        if KINDS[e.kind].inertia is not None:
            coordinate, key = KINDS[e.kind].inertia
            index = node_index[e.terminals[0]] if coordinate is None else edge_index[f"{e.name}.{coordinate}"]
            inertia.append((index, (e.name, key)))
    return _Layout(n_mech, coords, node_index, edge_index, edges, inertia, taps, links)


class _Parts:
    """Per-element energies, forces, flow rows and effort/flow/power accessors, each
    the sum or list of the element records' (`_elements.KINDS`) in element order."""

    def __init__(self, net, lay):
        self.net, self.lay = net, lay
        self.members = [(e, KINDS[e.kind]) for e in net._elements]   # (element, its record)

    # --------------------------------------------------------------- reading q
    def disp(self, x, node):
        return jnp.zeros((), x.dtype) if node == GROUND else x[self.lay.node_index[node]]

    def index(self, e, suffix=None):
        """Index of element `e`'s coordinate `"<name>.<suffix>"` (default: its edge
        domain's suffix, `q` or `V`)."""
        if suffix is None:
            suffix = SUFFIX[edge_domain(self.net, e)]
        return self.lay.edge_index[f"{e.name}.{suffix}"]

    def edge(self, x, e, suffix=None):
        return x[self.index(e, suffix)]

    def rel(self, x, e):
        a, b = e.terminals[:2]
        return self.disp(x, a) - self.disp(x, b)

    def push(self, Q, node, value):
        """`Q` with `value` added at the displacement of mechanical `node` (none at ground)."""
        return Q if node == GROUND else Q.at[self.lay.node_index[node]].add(value)

    # --------------------------------------------------------------- energies
    def potential(self, q, t, p):
        V = jnp.zeros((), q.dtype)
        for e, kind in self.members:
            if kind.potential is not None:
                V = V + kind.potential(self, e, q, t, p)
        return V

    def dissipation(self, q, qd, t, p):
        D = jnp.zeros((), q.dtype)
        for e, kind in self.members:
            if kind.dissipation is not None:
                D = D + kind.dissipation(self, e, q, qd, t, p)
        return D

    def forces(self, q, qd, t, p):
        Q = jnp.zeros_like(q)
        for e, kind in self.members:
            if kind.forces is not None:
                Q = kind.forces(self, e, Q, q, qd, t, p)
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
        for e, kind in self.members:
            if kind.row is not None:
                out.append((e.name, e, functools.partial(kind.row, self, e)))
        return out

    # --------------------------------------------------- efforts, flows, powers
    def ports(self, e):
        """`fn(q, qd, qdd, lam_rows, t, p) -> (efforts (k,), flows (k,))` of element `e`,
        passive sign convention (power absorbed = Σ effort · flow)."""
        return functools.partial(KINDS[e.kind].ports, self, e)


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
        carried_by_multipliers=frozenset(e.name for e in net._elements if KINDS[e.kind].carried_by_multipliers),
    )
    metadata = {
        "front_end": "network" if mechanism is None else f"{(mechanism.metadata or {}).get('front_end', 'model')}+network",
        "network": {"nodes": dict(net._nodes),
                    "elements": {e.name: {"kind": e.kind, "terminals": e.terminals} for e in net._elements},
                    "attached": dict(attach)},
    }
    if mechanism is not None and mechanism.metadata:
        metadata = {**mechanism.metadata, **metadata}
    frictions = [e for e in net._elements if KINDS[e.kind].friction]
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
        scene=_mechanism_scene(mechanism, n_mech),
        structure_problems=problems,
        coordinate_units=units,
        param_bounds=bounds,
        **kwargs,
    )


def _mechanism_scene(mechanism, n_mech):
    """The coupled mechanism's `Scene`, its frames read from the leading `n_mech`
    coordinates (the mechanism's come first in `q`); None without a mechanism or scene."""
    if mechanism is None or mechanism.scene is None:
        return None
    frames = mechanism.scene.frames
    return dataclasses.replace(mechanism.scene, frames=lambda q: frames(q[:n_mech]))


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
    # on first use: _switching imports diffrax, which `mbdjax check` on a network does without
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
