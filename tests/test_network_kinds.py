"""The table of network element kinds (`mbdjax.network._elements.KINDS`): a kind is
added in one place, every kind the builder creates has a record, and the records
drive the validation and the coordinate order users see (Fabien ch. 1; THEORY §7)."""

import inspect

import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd
from mbdjax import ModelError
from mbdjax.network import Network
from mbdjax.network._elements import KINDS, ElementKind

E, G, C = 2.0, 1e-3, 1e-6   # RC charging: 2 V step, 1 mS (R = 1 kΩ), 1 µF (RC = 1 ms)


def _conductance_ports(parts, e, q, qd, qdd, mu, t, p):
    i = parts.edge(qd, e)
    return jnp.stack([i / p[e.name]["G"]]), jnp.stack([i])


def _conductance_content(parts, e, q, qd, t, p):
    i = parts.edge(qd, e)
    return 0.5 * i * i / p[e.name]["G"]


#: a linear conductance `G` (S) between two electrical nodes, content `½ i² / G`:
#: a resistor `R = 1/G` described by its conductance, added by this record alone
CONDUCTANCE = ElementKind(terminals=("electrical", "electrical"), ports=_conductance_ports, edges=((None, 0, 1),),
                          dissipation=_conductance_content)


def conductance(net, name, a, b, G):
    """The builder method the new kind would get on `Network`."""
    return net._add(name, "conductance", (a, b), {"G": G})


@pytest.fixture
def with_conductance():
    """`KINDS` with the conductance registered for the test, and without it after."""
    assert "conductance" not in KINDS
    KINDS["conductance"] = CONDUCTANCE
    try:
        yield
    finally:
        del KINDS["conductance"]


def _rc(load):
    """`E` step through a load from node a to b, capacitor `C` from b to ground."""
    net = Network()
    for n in ("a", "b"):
        net.node(n, "electrical")
    net.effort_source("E", "a", "ground", lambda t, p: E)
    load(net)
    net.capacitor("C", "b", "ground", C=C)
    model = net.build()
    zero = jnp.zeros(model.n)
    return mbd.simulate(model, zero, zero, t1=5e-3, saveat=21, rtol=1e-10, atol=1e-16)


def test_a_kind_registered_in_one_place_builds_and_simulates(with_conductance):
    """RC charging through the new conductance: `v_C = E (1 − e^{−t G/C})` (closed form
    of the RC circuit with R = 1/G), 1e-8 relative; the same trajectory as the circuit
    built with the existing `resistor(R = 1/G)` to 1e-12 relative; its power `i²/G` is
    what it dissipates (Tellegen: the balance closes)."""
    traj = _rc(lambda net: conductance(net, "G", "a", "b", G))
    assert traj.model.coordinates == ("E.q", "G.q", "C.q")
    exact = E * (1 - np.exp(-np.asarray(traj.t) * G / C))
    assert np.max(np.abs(np.asarray(traj.effort("C")) - exact)) < 1e-8 * E
    reference = _rc(lambda net: net.resistor("G", "a", "b", R=1 / G))
    np.testing.assert_allclose(traj.q, reference.q, rtol=1e-12, atol=1e-12 * C * E)
    i = np.asarray(traj.flow("G"))
    np.testing.assert_allclose(traj.element_power("G"), i * i / G, rtol=1e-12, atol=1e-15)
    assert float(jnp.max(jnp.abs(traj.power_balance()["residual"]))) < 1e-12 * E * E * G


def test_a_registered_kind_is_validated_by_its_terminals(with_conductance):
    net = Network()
    net.node("x", "translational")
    conductance(net, "G", "x", "ground", G)
    with pytest.raises(ModelError, match=r"conductance 'G': terminal 'x' is a translational node; this element "
                                         r"needs a electrical node there\."):
        net.build()


#: example calls of every public builder method of `Network` (a method that creates
#: elements of several kinds has one call per kind)
BUILDERS = {
    "mass": [lambda n: n.mass("m", "x", 1.0)],
    "spring": [lambda n: n.spring("k", "x", "y", k=1.0)],
    "damper": [lambda n: n.damper("d", "x", "y", c=1.0)],
    "inertia": [lambda n: n.inertia("J", "w", 1.0)],
    "torsion_spring": [lambda n: n.torsion_spring("kt", "w", "v", k=1.0)],
    "rotational_damper": [lambda n: n.rotational_damper("dt", "w", "v", c=1.0)],
    "coulomb_friction": [lambda n: n.coulomb_friction("fx", "x", "y", 0.3, 1.0),
                         lambda n: n.coulomb_friction("fw", "w", "v", 0.3, 1.0),
                         lambda n: n.coulomb_friction("fe", "x", "y", 0.3, 1.0, mode="exact")],
    "inductor": [lambda n: n.inductor("L", "a", "b", L=1.0)],
    "capacitor": [lambda n: n.capacitor("C", "a", "b", C=1.0)],
    "resistor": [lambda n: n.resistor("R", "a", "b", R=1.0)],
    "diode": [lambda n: n.diode("D", "a", "b")],
    "bjt_npn": [lambda n: n.bjt_npn("Qn", "a", "b", "c")],
    "bjt_pnp": [lambda n: n.bjt_pnp("Qp", "a", "b", "c")],
    "inertance": [lambda n: n.inertance("I", "f", "g", I=1.0)],
    "fluid_capacitor": [lambda n: n.fluid_capacitor("Cf", "f", "g", C=1.0)],
    "fluid_resistor": [lambda n: n.fluid_resistor("Rf", "f", "g", R=1.0)],
    "check_valve": [lambda n: n.check_valve("cv", "f", "g", 1.0, 10.0)],
    "lever": [lambda n: n.lever("lv", "x", "y", 1.0, 2.0)],
    "gear": [lambda n: n.gear("gr", "w", "v", 1.0, 2.0)],
    "transformer": [lambda n: n.transformer("T", "a", "ground", "b", "ground", 1.0, 2.0)],
    "piston_transformer": [lambda n: n.piston_transformer("PT", "f", "ground", "g", "ground", 1.0, 2.0)],
    "rack_pinion": [lambda n: n.rack_pinion("rp", "w", "x", 0.1)],
    "hydraulic_piston": [lambda n: n.hydraulic_piston("hp", "f", "g", "x", 0.01)],
    "dc_motor": [lambda n: n.dc_motor("M", "a", "ground", "w", K=0.5, L=0.01)],
    "effort_source": [lambda n: n.effort_source("Es", "a", "ground", lambda t, p: 1.0)],
    "flow_source": [lambda n: n.flow_source("Fs", "a", "ground", lambda t, p: 1.0)],
}


def _created_kinds():
    """`{method: {kinds its example calls created}}`."""
    out = {}
    for method, calls in BUILDERS.items():
        net = Network()
        for node, domain in (("x", "translational"), ("y", "translational"), ("w", "rotational"),
                             ("v", "rotational"), ("a", "electrical"), ("b", "electrical"), ("c", "electrical"),
                             ("f", "fluid"), ("g", "fluid")):
            net.node(node, domain)
        for call in calls:
            call(net)
        out[method] = {e.kind for e in net._elements}
    return out


def test_every_kind_the_builder_creates_has_a_record():
    """Every public builder method has an example call here, every kind they create has
    a record in `KINDS`, and every record is reachable from the builder."""
    public = {name for name, fn in inspect.getmembers(Network, inspect.isfunction)
              if not name.startswith("_") and name not in ("node", "build")}
    assert public == set(BUILDERS), f"add example calls of Network.{sorted(public - set(BUILDERS))} to BUILDERS"
    created = _created_kinds()
    missing = {method: sorted(kinds - set(KINDS)) for method, kinds in created.items() if kinds - set(KINDS)}
    assert not missing, f"add a record to mbdjax.network._elements.KINDS for the kinds {missing}"
    assert set().union(*created.values()) == set(KINDS)


def test_terminal_domains_come_from_the_table():
    """The message of an inductor on a translational node (as in tests/test_bad_inputs.py),
    with the domain the record asks for; the distinct-terminal rule and its exemptions
    (a hydraulic cylinder's chamber may have one node on both sides)."""
    net = Network()
    net.node("b", "translational")
    net.inductor("L", "b", "ground", L=1.0)
    wanted = KINDS["inductor"].terminals[0]
    with pytest.raises(ModelError) as err:
        net.build()
    assert str(err.value) == f"inductor 'L': terminal 'b' is a translational node; this element needs a {wanted} " \
                             "node there."
    assert wanted == "electrical"

    net = Network()
    net.node("a", "electrical")
    net.resistor("R", "a", "a", R=1.0)
    assert KINDS["resistor"].distinct
    with pytest.raises(ModelError, match=r"resistor 'R': both terminals are 'a'; connect it between two different"):
        net.build()

    net = Network()
    net.node("f", "fluid")
    net.node("x", "translational")
    net.mass("m", "x", 1.0)
    net.hydraulic_piston("hp", "f", "f", "x", 0.01)
    assert not KINDS["hydraulic_piston"].distinct
    net.build()


def test_coordinates_keep_the_three_pass_order():
    """Node displacements, then every edge coordinate in element order, then the
    transistor's injection charges, then the friction's idle coordinate, whatever the
    order the elements were declared in (the order users see; it is part of the API)."""
    net = Network()
    net.node("x", "translational")
    net.node("a", "electrical")
    net.node("b", "electrical")
    net.bjt_npn("Q", "a", "b", "ground")
    net.coulomb_friction("f", "x", "ground", 0.3, 1.0, mode="exact")
    net.mass("m", "x", 1.0)
    net.effort_source("E", "a", "ground", lambda t, p: 1.0)
    net.resistor("R", "b", "ground", R=1.0)
    model = net.build()
    assert model.coordinates == ("x.x", "E.q", "R.q", "Q.qF", "Q.qR", "f.stick")
    assert model.nonholonomic_names == ("a", "b", "f")
    assert model.network.flow_stores() == ["m"] and model.network.frictions() == ["f"]
    assert model.network.carried_by_multipliers == frozenset({"f"})
