"""Ill-posed network structures found from the graph alone, named by element.

Edges are the electrical and fluid elements (and windings, armatures, source edges);
`ground` joins every domain's reference.

- A floating node: no path to ground through edges. Its junction law and those of
  the nodes it is connected to sum to zero (dependent rows), and its effort level is
  undetermined.
- A loop of effort sources and effort stores only (voltage sources and capacitors;
  pressure sources and fluid capacitances): their efforts around the loop are not
  independent and the loop's flow has no law that determines it.
- A cut set of flow sources and flow stores only (current sources and inductors;
  pumps and inertances): the stores' flows are dictated by the sources, so their
  initial flows must match and their efforts are derivatives of the sources' flows.
"""

from __future__ import annotations

from ._domains import GROUND
from ._elements import KINDS

#: the `ElementKind.structure` roles of the loop and of the cut-set checks
_EFFORT_LOOP = ("effort source", "effort store")
_FLOW_CUT = ("flow source", "flow store")


class _Components:
    def __init__(self, nodes):
        self.parent = {n: n for n in nodes}

    def find(self, x):
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self.parent[ra] = rb
        return True


def structure_problems(net, edges, edge_owner):
    """Sentences naming every ill-posed structure of `net`.

    `edges`: `(coordinate index, from, to)`; `edge_owner[index]`: the element it
    belongs to."""
    nodes = [n for n, d in net._nodes.items() if d in ("electrical", "fluid")] + [GROUND]
    role = {e.name: KINDS[e.kind].structure for e in net._elements}
    problems = []

    everything = _Components(nodes)
    for _, a, b in edges:
        everything.union(a, b)
    floating = sorted(n for n in nodes if n != GROUND and everything.find(n) != everything.find(GROUND))
    if floating:
        problems.append(
            f"floating nodes {floating}: no path to ground through elements, so their efforts are "
            "undetermined; connect them to ground (a resistor or capacitor to ground fixes the level)."
        )

    loop = _Components(nodes)
    for i, a, b in edges:
        owner = edge_owner[i]
        if role[owner] in _EFFORT_LOOP and not loop.union(a, b):
            members = sorted({edge_owner[j] for j, x, y in edges if role[edge_owner[j]] in _EFFORT_LOOP
                              and loop.find(x) == loop.find(a)})
            problems.append(
                f"a loop of effort sources and capacitors only ({', '.join(members)}): their efforts around "
                "the loop are not independent; put a resistor or an inductor (inertance) into the loop."
            )
            break

    rest = _Components(nodes)
    for i, a, b in edges:
        if role[edge_owner[i]] not in _FLOW_CUT:
            rest.union(a, b)
    cut = sorted({edge_owner[i] for i, a, b in edges
                  if role[edge_owner[i]] in _FLOW_CUT and rest.find(a) != rest.find(b)})
    if cut and any(role[c] == "flow source" for c in cut):
        problems.append(
            f"a cut set of flow sources and inductors (inertances) only ({', '.join(cut)}): the sources "
            "dictate the stores' flows; put a resistor or a capacitor across, or drive with an effort source."
        )
    return problems
