"""Structural checks of a Network before it is compiled (collect all, raise once)."""

from __future__ import annotations

from .._builder import unique_name_problems
from ._domains import GROUND
from ._elements import KINDS, R, T

POSITIVE = {"m": "mass", "J": "inertia", "L": "inductance", "I": "inertance", "C": "capacitance",
            "I_s": "saturation current", "n": "emission coefficient", "V_T": "thermal voltage",
            "beta_f": "forward current gain", "beta_r": "reverse current gain",
            "gmin": "junction conductance"}
NONNEGATIVE = {"R": "resistance", "c": "damping", "k": "stiffness"}
NONZERO = ("arm_a", "arm_b", "r_a", "r_b", "N1", "N2", "A1", "A2", "r", "A", "K")


def validate(net, mechanism, attach) -> list[str]:
    """Every structural problem of `net` (and of its coupling), naming the part and the fix."""
    problems = list(net._problems)
    nodes = net._nodes
    problems.extend(unique_name_problems(
        [("node", n) for n in nodes] + [(e.kind, e.name) for e in net._elements]))
    if not net._elements:
        problems.append("Network: there are no elements; add some between the nodes.")

    for e in net._elements:
        label = f"{e.kind} {e.name!r}"
        kind = KINDS[e.kind]
        wanted = kind.terminals
        domains = []
        for term, want in zip(e.terminals, wanted):
            if term == GROUND:
                domains.append(None)
                continue
            if term not in nodes:
                problems.append(f"{label}: terminal {term!r} is not a node; add it with node({term!r}, domain) "
                                f"(nodes: {sorted(nodes)} and 'ground').")
                domains.append(None)
                continue
            domains.append(nodes[term])
            if want is not None and nodes[term] != want:
                problems.append(f"{label}: terminal {term!r} is a {nodes[term]} node; this element needs a "
                                f"{want} node there.")
        if kind.check_domains is not None:
            problems.extend(kind.check_domains(e, domains))
        if None in wanted:  # sources: both terminals in one domain
            found = {d for d in domains if d is not None}
            if len(found) > 1:
                problems.append(f"{label}: its terminals are in different domains {sorted(found)}; a source "
                                "acts within one domain.")
        pairs = [e.terminals[i:i + 2] for i in range(0, 2 * (len(e.terminals) // 2), 2)]
        if kind.distinct and any(a == b for a, b in pairs):
            problems.append(f"{label}: both terminals are {pairs[0][0]!r}; connect it between two different nodes.")
        for key, value in e.params.items():
            v = float(value) if value.shape == () else None
            if v is None:
                continue
            if key in POSITIVE and not v > 0 and e.fn is None:
                problems.append(f"{label}: {POSITIVE[key]} `{key}` = {v:g} must be positive.")
            if key in NONNEGATIVE and v < 0:
                problems.append(f"{label}: {NONNEGATIVE[key]} `{key}` = {v:g} must be >= 0.")
            if key in NONZERO and v == 0:
                problems.append(f"{label}: `{key}` must be nonzero.")
        if kind.check is not None:
            problems.extend(kind.check(e))

    if attach and mechanism is None:
        problems.append("Network.build: `attach` names mechanism coordinates, but no `mechanism` was given.")
    for node, coordinate in attach.items():
        if nodes.get(node) not in (T, R):
            problems.append(f"Network.build: attach {node!r}: only translational and rotational nodes can be "
                            "attached to a mechanism coordinate.")
        if mechanism is not None and coordinate not in mechanism.coordinates:
            problems.append(f"Network.build: attach {node!r} to {coordinate!r}: the mechanism has no such "
                            f"coordinate; its coordinates are {list(mechanism.coordinates)}.")
    if mechanism is not None:
        clash = sorted(set(mechanism.params) & ({e.name for e in net._elements} | set(nodes)))
        if clash:
            problems.append(f"Network.build: names {clash} are used by the mechanism's parameters too; rename "
                            "the network parts.")
    return problems
