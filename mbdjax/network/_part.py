"""The network part of a Model, and the efforts and flows read back from a trajectory.

`Network.build` compiles a network into a `Model` and records, in `Model.network`, what
is needed to name the results afterwards: the nodes and their domains, the elements
and their terminals, each element's port map `(q, q̇, q̈, μ, t, p) -> (efforts, flows)`,
the map from the model's multipliers to the junction and constraint multipliers `μ`,
and the rates of the mechanical nodes. `effort`, `flow`, `element_power` and
`power_balance` evaluate them on a simulated `Trajectory` (Fabien, *Analytical System
Dynamics*, ch. 1: efforts and flows; THEORY §7); the `Trajectory` methods of the same
names call them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import jax.numpy as jnp

from .._errors import MbdjaxError
from .._trajectory import per_member
from ._domains import GROUND, UNITS
from ._elements import KINDS


@dataclasses.dataclass(frozen=True)
class Element:
    """One network element as the results name it: its kind (`"resistor"`, ...) and its
    terminal nodes, in the order the element was declared with.

    Example:

        >>> from mbdjax import models
        >>> models.get("rlc").model.network.elements["L"]
        Element(kind='inductor', terminals=('n2', 'n3'))
    """

    kind: str
    terminals: tuple[str, ...]


@dataclasses.dataclass(frozen=True, eq=False)
class NetworkPart:
    """What `Network.build` records in `Model.network` (see the module docstring).

    Attributes:
        nodes: `{node: domain}` of the declared nodes (ground excluded).
        elements: `{element: Element}`.
        ports: `{element: fn(q, q̇, q̈, μ, t, p) -> (efforts (k,), flows (k,))}` per port,
            passive sign convention (`effort · flow` is the power absorbed).
        multipliers: `fn(lam) -> {row: multiplier}`: the network's junction and
            constraint multipliers (node efforts) from the model's `lam`.
        node_rate: `{node: fn(q̇) -> rate}` for the translational and rotational nodes.
        attached: `{node: mechanism coordinate}` of the nodes attached to a mechanism.
        carried_by_multipliers: the elements whose efforts are multipliers (flow
            sources, exact friction, ideal transformers and transducers): their ports
            need a trajectory with multipliers.

    Example:

        >>> from mbdjax import models
        >>> part = models.get("rlc").model.network
        >>> part.nodes["n3"], part.junctions(), part.flow_stores(), part.effort_unit("n3")
        ('electrical', ['n1', 'n2', 'n3'], ['L'], 'V')
    """

    nodes: Mapping[str, str]
    elements: Mapping[str, Element]
    ports: Mapping[str, Callable]
    multipliers: Callable
    node_rate: Mapping[str, Callable]
    attached: Mapping[str, str]
    carried_by_multipliers: frozenset

    def domain(self, node: str) -> str | None:
        """The domain of `node` (None for ground, which is every domain's reference)."""
        return self.nodes.get(node)

    def element_domain(self, name: str) -> str | None:
        """The domain of element `name`'s first terminal that is not ground."""
        found = [self.nodes[t] for t in self.elements[name].terminals if t in self.nodes]
        return found[0] if found else None

    def junctions(self) -> list[str]:
        """The nodes whose effort is a multiplier (electrical and fluid nodes, and the
        mechanical nodes attached by a constraint), in declaration order."""
        return [n for n in self.nodes if n not in self.node_rate]

    def flow_stores(self) -> list[str]:
        """The elements that store flow (inductors, inertances, masses, inertias, the
        DC motor's armature), in declaration order: the flows a network without
        multipliers is plotted by."""
        return [n for n, e in self.elements.items() if KINDS[e.kind].stores_flow]

    def frictions(self) -> list[str]:
        """The exact (stick–slip) Coulomb friction elements, in declaration order."""
        return [n for n, e in self.elements.items() if KINDS[e.kind].friction]

    def static_limit(self, name: str, p) -> float:
        """The static friction limit `μ_s N` of friction element `name` under
        parameters `p`."""
        return float(p[name]["mu_s"]) * float(p[name]["normal"])

    def sticking(self, traj, name: str):
        """`(T,)` bool: where friction element `name` sticks, from the trajectory's
        modes (None for a trajectory without them)."""
        if traj.modes is None or traj.model.switching is None:
            return None
        column = traj.model.switching.keys.index((name, "stuck"))
        return jnp.asarray(traj.modes)[:, column] > 0.5

    def effort_unit(self, node: str) -> str | None:
        """SI unit of the effort of `node` (V, Pa, N, N·m)."""
        return UNITS.get(self.domain(node), (None, None))[1]

    def coordinate_unit(self, name: str) -> str | None:
        """SI unit of the flow coordinate of element `name` (C, m³, m, rad)."""
        return UNITS.get(self.element_domain(name), (None, None))[0]

    # The Trajectory methods of the same names call these (the core reads a network
    # only through this interface); errors name the method the user called.
    def effort(self, traj, name):
        """`effort(traj, name)` (below), for `Trajectory.effort`."""
        return _effort(traj, name, "Trajectory.effort")

    def flow(self, traj, name):
        """`flow(traj, name)` (below), for `Trajectory.flow`."""
        return _flow(traj, name, "Trajectory.flow")

    def element_power(self, traj, name):
        """`element_power(traj, name)` (below), for `Trajectory.element_power`."""
        return _element_power(traj, name, "Trajectory.element_power")

    def power_balance(self, traj):
        """`power_balance(traj)` (below), for `Trajectory.power_balance`."""
        return _power_balance(traj, "Trajectory.power_balance")


def _network_of(traj, who) -> NetworkPart:
    model = traj.model
    if model is None:
        raise MbdjaxError(f"{who}: this trajectory has no model attached (it was loaded from a file); use "
                          "Trajectory.load(path, model=model).")
    if model.network is None:
        raise MbdjaxError(f"{who}: the model has no network (build one with mbdjax.network.Network).")
    return model.network


def _ports(traj, part, name, who):
    """`(efforts, flows)`, `(T, k)` each, of element `name` at every output time."""
    if name not in part.ports:
        raise MbdjaxError(f"{who}: no network element named {name!r}; elements are {sorted(part.ports)}.")
    fn = part.ports[name]
    if name in part.carried_by_multipliers and traj.lam is None:
        raise MbdjaxError(
            f"{who}: the effort of {name!r} is carried by a multiplier; simulate with "
            "formulation='augmented' or mbdjax.NullSpace(multipliers=True) / MultiplierFree(multipliers=True)."
        )
    lam = traj.lam if traj.lam is not None else jnp.zeros(traj.t.shape + (0,))
    multipliers = part.multipliers

    def one(q, qd, qdd, lam_k, t, p):
        mu = multipliers(lam_k) if lam_k.shape[-1] else {}
        return fn(q, qd, qdd, mu, t, p)

    return traj.evaluate(one, traj.q, traj.qd, traj.qdd, lam, traj.t)


def effort(traj, name: str):
    """Effort history of a network node or element (voltage, pressure, force, torque):
    `(T,)`, or `(T, k)` for a `k`-port element (transformers, transducers, DC motor).

    A node's effort is its junction multiplier (electrical and fluid nodes; ground is
    0). An element's effort follows the passive sign convention: the drop `e_a − e_b`
    in the direction of its flow, so that `effort · flow` is the power it absorbs
    (negative for a source that delivers). `Trajectory.effort(name)` is the same.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models, network
        >>> ex = models.get("rlc")
        >>> traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, saveat=11, **ex.options)
        >>> network.effort(traj, "E").shape
        (11,)
    """
    return _effort(traj, name, "mbdjax.network.effort")


@per_member
def _effort(traj, name, who):
    part = _network_of(traj, who)
    if name == GROUND:
        return jnp.zeros_like(traj.t)
    if name in part.nodes:
        if name not in part.multipliers(jnp.zeros((traj.model.m,))):
            raise MbdjaxError(
                f"{who}: {name!r} is a {part.nodes[name]} node: its force balance is part of the equations of "
                "motion, not a multiplier; read element efforts instead."
            )
        if traj.lam is None:
            raise MbdjaxError(f"{who}: node efforts are multipliers; simulate with formulation='augmented' or a "
                              "formulation with multipliers=True.")
        return part.multipliers(traj.lam)[name]
    efforts, _ = _ports(traj, part, name, who)
    return efforts[..., 0] if efforts.shape[-1] == 1 else efforts


def flow(traj, name: str):
    """Flow history of a network element (current, volume flow, relative velocity;
    `(T,)` or `(T, k)` per port) or of a translational/rotational node (its velocity).
    `Trajectory.flow(name)` is the same.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models, network
        >>> ex = models.get("rlc")                     # a 1 V step into a series RLC from rest
        >>> traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, saveat=11, **ex.options)
        >>> network.flow(traj, "L")[0], network.flow(traj, "L").shape
        (Array(0., dtype=float64), (11,))
    """
    return _flow(traj, name, "mbdjax.network.flow")


@per_member
def _flow(traj, name, who):
    part = _network_of(traj, who)
    if name in part.node_rate:
        return part.node_rate[name](traj.qd)
    if name in part.nodes:
        raise MbdjaxError(f"{who}: {name!r} is a junction; read the flows of its elements.")
    _, flows = _ports(traj, part, name, who)
    return flows[..., 0] if flows.shape[-1] == 1 else flows


def element_power(traj, name: str):
    """`(T,)` power absorbed by network element `name` (W), summed over its ports:
    stores give the rate of their energy, resistors their dissipation (≥ 0), sources
    minus what they deliver, ideal transformers and transducers zero.
    `Trajectory.element_power(name)` is the same.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> from mbdjax import models, network
        >>> ex = models.get("rlc")
        >>> traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, saveat=11, **ex.options)
        >>> bool(jnp.all(network.element_power(traj, "R") >= 0))   # a resistor only dissipates
        True
    """
    return _element_power(traj, name, "mbdjax.network.element_power")


@per_member
def _element_power(traj, name, who):
    efforts, flows = _ports(traj, _network_of(traj, who), name, who)
    return jnp.sum(efforts * flows, axis=-1)


def power_balance(traj) -> dict:
    """`{element: (T,) absorbed power}` for every network element, plus `"residual"`:
    their sum, zero (to round-off) by Tellegen's theorem when the network is not
    attached to a mechanism (then it is the power the network passes to the mechanism,
    with the opposite sign). `Trajectory.power_balance()` is the same.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> from mbdjax import models, network
        >>> ex = models.get("rlc")
        >>> traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, saveat=11, **ex.options)
        >>> float(jnp.max(jnp.abs(network.power_balance(traj)["residual"]))) < 1e-8
        True
    """
    return _power_balance(traj, "mbdjax.network.power_balance")


@per_member
def _power_balance(traj, who):
    part = _network_of(traj, who)
    out = {name: _element_power(traj, name, who) for name in part.ports}
    out["residual"] = sum(out.values())
    return out
