"""User mistakes, one per case: each raises an mbdjax error of the stated class whose
message names the culprit (the part, parameter, argument or file) and, where it fits,
the fix.

The reference is the mistake itself: every case is a call a user could make, with one
thing wrong, and the expected text names that thing. Nothing here compiles a
simulation: each mistake is caught before the run (the point of the checks), so the
whole table runs in seconds.
"""

import math
import re

import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd
from mbdjax import spatial
from mbdjax.network import Network
from mbdjax.planar import Mechanism


def _pendulum(**changes):
    """Point mass on a rod of length L in Cartesian coordinates, with named parameters."""
    spec = dict(mass_diagonal=lambda p: p["m"] * jnp.ones(2), potential=lambda q, t, p: p["m"] * p["g"] * q[1],
                holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - p["L"] ** 2)]), constraint_names=("rod",),
                params={"m": 1.0, "g": 9.81, "L": 1.0})
    spec.update(changes)
    return mbd.Model(("x", "y"), **spec)


PEND = _pendulum()
Q0, QD0 = jnp.array([0.6, -0.8]), jnp.array([0.8, 0.6])
TS = jnp.linspace(0.1, 1.0, 5)
DATA = {"t": TS, "y": jnp.zeros(5)}


def _planar(*steps, gravity=(0.0, -9.81)):
    mech = Mechanism(gravity=gravity)
    mech.body("a", mass=1.0, inertia=0.1)
    for step in steps:
        step(mech)
    return mech.build()


def _spatial(*steps, **body):
    mech = spatial.Mechanism(gravity=(0.0, 0.0, -9.81))
    mech.body("d", **{"mass": 1.0, "inertia": (0.1, 0.1, 0.2), **body})
    for step in steps:
        step(mech)
    return mech.build()


def _network(*steps):
    net = Network()
    net.node("a", "electrical")
    for step in steps:
        step(net)
    return net.build()


def _model_and_params(model, path, value):
    """`(model, q, params)`: the model's parameters with the leaf at `path` replaced."""
    params = {k: dict(v) if isinstance(v, dict) else v for k, v in model.params.items()}
    params[path[0]][path[1]] = value
    return model, jnp.zeros(model.n), params


def _with_params(model, path, value):
    model, q, params = _model_and_params(model, path, value)
    return mbd.simulate(model, q, q, t1=0.1, params=params)


def _check_with(model, path, value):
    model, q, params = _model_and_params(model, path, value)
    return mbd.check(model, q, params=params)


def _simulate(**kw):
    q0, qd0 = kw.pop("q0", Q0), kw.pop("qd0", QD0)
    return mbd.simulate(PEND, q0, qd0, **{"t1": 0.1, **kw})


M, P, I, S, E = mbd.ModelError, mbd.ParameterError, mbd.InitialConditionError, mbd.SimulationError, mbd.MbdjaxError

# (id, call, error class, text the message must contain: a regular expression)
CASES = [
    # ------------------------------------------------------------------ Model
    ("model duplicate coordinate", lambda: mbd.Model(("x", "x"), mass_diagonal=lambda p: jnp.ones(2)), M,
     r"duplicate coordinate names \['x'\]"),
    ("model coordinates not strings", lambda: mbd.Model((1, 2), mass_diagonal=lambda p: jnp.ones(2)), M,
     r"coordinate names must be non-empty strings"),
    ("model no inertia", lambda: mbd.Model(("x",), potential=lambda q, t, p: q[0] ** 2), M,
     r"mass_matrix=.*kinetic_energy=.*mass_diagonal=.*got none"),
    ("model two inertias", lambda: mbd.Model(("x",), mass_diagonal=lambda p: jnp.ones(1),
                                             mass_matrix=lambda q, t, p: jnp.eye(1)), M, r"\['mass_matrix', 'mass_diagonal'\]"),
    ("model mass_diagonal shape", lambda: mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(3)), M,
     r"`mass_diagonal` returned shape \(3,\), expected \(2,\)"),
    ("model mass_matrix shape", lambda: mbd.Model(("x", "y"), mass_matrix=lambda q, t, p: jnp.eye(3)), M,
     r"`mass_matrix` returned shape \(3, 3\), expected \(2, 2\)"),
    ("model kinetic_energy vector", lambda: mbd.Model(("x",), kinetic_energy=lambda q, qd, t, p: qd), M,
     r"`kinetic_energy` returned shape \(1,\), expected \(\)"),
    ("model holonomic matrix", lambda: _pendulum(holonomic=lambda q, t, p: jnp.ones((1, 1))), M,
     r"`holonomic` must return a vector"),
    ("model holonomic not callable", lambda: _pendulum(holonomic=3.0), M, r"`holonomic` must be a function"),
    ("model constraint_names length", lambda: _pendulum(constraint_names=("a", "b")), M,
     r"`constraint_names` has 2 names but the function returns 1 rows"),
    ("model potential vector", lambda: _pendulum(potential=lambda q, t, p: q), M,
     r"`potential` returned shape \(2,\), expected \(\)"),
    ("model forces shape", lambda: _pendulum(forces=lambda q, qd, t, p: jnp.ones(3)), M,
     r"`forces` returned shape \(3,\), expected \(2,\)"),
    ("model dissipation vector", lambda: _pendulum(dissipation=lambda q, qd, t, p: qd), M,
     r"`dissipation` returned shape \(2,\), expected \(\)"),
    ("model python if on a traced value", lambda: _pendulum(potential=lambda q, t, p: q[1] if q[1] > 0 else 0.0), M,
     r"`potential` raised TracerBoolConversionError.*use jnp.where or jax.lax.cond instead of `if`"),
    ("model function reads a missing parameter", lambda: _pendulum(potential=lambda q, t, p: p["gravity"] * q[1]), M,
     r"`potential` raised KeyError: 'gravity' \(.*its parameters are \['L', 'g', 'm'\]"),
    ("model nonholonomic not affine", lambda: _pendulum(nonholonomic=lambda q, qd, t, p: jnp.stack([qd[0] ** 2])), M,
     r"`nonholonomic` must be affine in qd"),
    ("model nonholonomic_names length", lambda: _pendulum(nonholonomic=lambda q, qd, t, p: jnp.stack([qd[0]]),
                                                          nonholonomic_names=("a", "b")), M,
     r"`nonholonomic_names` has 2 names but the function returns 1 rows"),
    ("model string parameter", lambda: _pendulum(params={"m": "one", "g": 9.81, "L": 1.0}), M,
     r"params must hold numbers.*\['m'\] = 'one'"),
    ("model None parameter", lambda: _pendulum(params={"m": None, "g": 9.81, "L": 1.0}), M,
     r"not a number: \['m'\] = None"),
    # ---------------------------------------------------------- planar front end
    ("planar negative mass", lambda: _planar(lambda m: m.body("b", mass=-1.0, inertia=0.1)), M,
     r"body 'b': mass -1.0 kg is negative"),
    ("planar NaN mass", lambda: _planar(lambda m: m.body("b", mass=math.nan, inertia=0.1)), M,
     r"body 'b': `mass` must be finite"),
    ("planar negative inertia", lambda: _planar(lambda m: m.body("b", mass=1.0, inertia=-0.1)), M,
     r"body 'b': inertia -0.1 kg·m² is negative"),
    ("planar duplicate body", lambda: _planar(lambda m: m.body("a", 1.0, 0.1)), M,
     r"body 'a': the name is already used"),
    ("planar body named ground", lambda: _planar(lambda m: m.body("ground", 1.0, 0.1)), M,
     r"body 'ground': the name is reserved"),
    ("planar unknown body in a joint", lambda: _planar(lambda m: m.revolute("j", "ground", (0, 0), "b", (0, 0))), M,
     r"revolute 'j': unknown body 'b' for `body_j`"),
    ("planar point of length 3", lambda: _planar(lambda m: m.revolute("j", "ground", (0, 0, 0), "a", (0, 0))), M,
     r"revolute 'j': `point_i` must have shape \(2,\)"),
    ("planar duplicate joint", lambda: _planar(lambda m: m.revolute("j", "ground", (0, 0), "a", (0, 0)),
                                               lambda m: m.revolute("j", "ground", (1, 0), "a", (1, 0))), M,
     r"revolute 'j': the name is already used"),
    ("planar joint to itself", lambda: _planar(lambda m: m.revolute("j", "a", (0, 0), "a", (1, 0))), M,
     r"revolute 'j': body_i and body_j are both 'a'"),
    ("planar no bodies", lambda: Mechanism().build(), M, r"there are no bodies"),
    ("planar gravity of length 3", lambda: _planar(gravity=(0.0, -9.81, 0.0)), M,
     r"`gravity` must have shape \(2,\)"),
    ("planar negative spring constant", lambda: _planar(
        lambda m: m.spring_damper("s", "ground", (0, 0), "a", (0, 0), k=-1.0, c=0.0, length0=1.0)), M,
     r"spring_damper 's': `k` = -1.0 N/m is negative"),
    ("planar negative damping", lambda: _planar(
        lambda m: m.spring_damper("s", "ground", (0, 0), "a", (0, 0), k=1.0, c=-0.5, length0=1.0)), M,
     r"spring_damper 's': `c` = -0.5 N·s/m is negative"),
    ("planar negative rotational spring", lambda: _planar(
        lambda m: m.rotational_spring_damper("s", "ground", "a", k=-2.0, c=0.0, angle0=0.0)), M,
     r"rotational_spring_damper 's': `k` = -2.0 N·m/rad is negative"),
    ("planar negative free length", lambda: _planar(
        lambda m: m.spring_damper("s", "ground", (0, 0), "a", (0, 0), k=1.0, c=0.0, length0=-1.0)), M,
     r"spring_damper 's': free length length0 -1.0 m is negative"),
    ("planar drive not a function", lambda: _planar(lambda m: m.revolute("j", "ground", (0, 0), "a", (0, 0)),
                                                    lambda m: m.drive_angle("d", "ground", "a", 3.0)), M,
     r"drive_angle 'd': `f` must be a function"),
    ("planar drive branching in Python", lambda: _planar(lambda m: m.revolute("j", "ground", (0, 0), "a", (0.5, 0)),
                                                         lambda m: m.drive_angle("d", "ground", "a",
                                                                                 lambda t, p: t if t > 0 else 0.0)), M,
     r"drive_angle 'd': f\(t, p\) raised TracerBoolConversionError.*use jnp.where"),
    ("planar actuator reading a missing parameter", lambda: _planar(
        lambda m: m.spring_damper("s", "ground", (0, 0), "a", (0, 0), k=1.0, c=0.0, length0=1.0,
                                  actuator=lambda l, ld, t, p: p["force"])), M,
     r"spring_damper 's': actuator\(l, ldot, t, p\) raised KeyError: 'force'.*does not declare"),
    ("planar fix of an unknown axis", lambda: _planar(lambda m: m.fix("f", "a", ("z",))), M,
     r"fix 'f': coordinates must be a non-empty subset of \['x', 'y', 'phi'\]"),
    # --------------------------------------------------------- spatial front end
    ("spatial inertia of length 2", lambda: _spatial(inertia=(0.1, 0.1)), M,
     r"body 'd': `inertia` must have shape \(3, 3\)"),
    ("spatial negative principal moment", lambda: _spatial(inertia=(0.1, -0.1, 0.2)), M,
     r"body 'd': the inertia tensor has a negative principal moment"),
    ("spatial triangle inequality", lambda: _spatial(inertia=(0.1, 0.1, 0.5)), M,
     r"body 'd': principal moments .* break the triangle inequality"),
    ("spatial unsymmetric tensor", lambda: _spatial(inertia=[[0.1, 0.01, 0], [0, 0.1, 0], [0, 0, 0.2]]), M,
     r"body 'd': the inertia tensor is not symmetric"),
    ("spatial negative mass", lambda: _spatial(mass=-2.0), M, r"body 'd': mass -2.0 kg is negative"),
    ("spatial unknown orientation", lambda: _spatial(orientation="euler123"), M,
     r"body 'd': orientation 'euler123' is not one of \['euler313', 'quaternion'\]"),
    ("spatial rolling disk on an unknown body", lambda: _spatial(lambda m: m.rolling_disk("c", "e", radius=0.3)), M,
     r"rolling_disk 'c': body 'e' is not a body"),
    ("spatial negative radius", lambda: _spatial(lambda m: m.rolling_disk("c", "d", radius=-0.3)), M,
     r"rolling_disk 'c': radius -0.3 m must be positive"),
    ("spatial zero disk axis", lambda: _spatial(lambda m: m.rolling_disk("c", "d", radius=0.3, axis=(0, 0, 0))), M,
     r"rolling_disk 'c': `axis` is the zero vector"),
    ("spatial negative spring", lambda: _spatial(
        lambda m: m.spring_damper("s", "ground", (0, 0, 0), "d", (0, 0, 0), k=-1.0, c=0.0, length0=1.0)), M,
     r"spring_damper 's': `k` = -1.0 must be >= 0"),
    ("spatial joint to an unknown body", lambda: _spatial(lambda m: m.spherical("j", "ground", (0, 0, 0), "e", (0, 0, 0))), M,
     r"spherical 'j': body_j 'e' is not a body"),
    # --------------------------------------------------------- network front end
    ("network unknown domain", lambda: _network(lambda n: n.node("b", "magnetic")), M,
     r"node 'b': unknown domain 'magnetic'"),
    ("network unknown node", lambda: _network(lambda n: n.resistor("R", "a", "b", R=1.0)), M,
     r"resistor 'R': terminal 'b' is not a node"),
    ("network duplicate element", lambda: _network(lambda n: n.resistor("R", "a", "ground", R=1.0),
                                                   lambda n: n.resistor("R", "a", "ground", R=2.0)), M,
     r"resistor 'R': the name is already used"),
    ("network duplicate node", lambda: _network(lambda n: n.node("a", "electrical"),
                                                lambda n: n.resistor("R", "a", "ground", R=1.0)), M,
     r"node 'a': defined twice"),
    ("network negative resistance", lambda: _network(lambda n: n.resistor("R", "a", "ground", R=-1.0)), M,
     r"resistor 'R': resistance `R` = -1 must be >= 0"),
    ("network zero capacitance", lambda: _network(lambda n: n.capacitor("C", "a", "ground", C=0.0)), M,
     r"capacitor 'C': capacitance `C` = 0 must be positive"),
    ("network inductor on a mechanical node", lambda: _network(lambda n: n.node("b", "translational"),
                                                               lambda n: n.inductor("L", "b", "ground", L=1.0)), M,
     r"inductor 'L': terminal 'b' is a translational node"),
    ("network source not a function", lambda: _network(lambda n: n.effort_source("E", "a", "ground", 5.0)), M,
     r"effort_source 'E': `e` must be a function"),
    ("network no elements", lambda: Network().build(), M, r"there are no elements"),
    # ------------------------------------------------------------------ check
    ("check q of the wrong shape", lambda: mbd.check(PEND, jnp.zeros(3)), M,
     r"check: q has shape \(3,\), expected \(2,\) for \['x', 'y'\]"),
    ("check NaN state", lambda: mbd.check(PEND, jnp.array([math.nan, 1.0])), M, r"check: non-finite state \(q\[x\] = nan\)"),
    ("check infinite rate", lambda: mbd.check(PEND, Q0, qd=jnp.array([0.0, math.inf])), M,
     r"check: non-finite state \(qd\[y\] = inf\)"),
    ("check missing parameters", lambda: mbd.check(PEND, Q0, params={"m": 1.0}), P, r"check: params is missing \['L', 'g'\]"),
    # ------------------------------------------------------- initial_conditions
    ("initial guess of the wrong shape", lambda: mbd.initial_conditions(PEND, jnp.zeros(3)), I,
     r"q_guess has shape \(3,\), expected \(2,\)"),
    ("initial fix_q unknown coordinate", lambda: mbd.initial_conditions(PEND, Q0, fix_q={"z": 1.0}), I,
     r"`fix_q` names unknown coordinates \['z'\]"),
    ("initial fix_qd unknown coordinate", lambda: mbd.initial_conditions(PEND, Q0, fix_qd={"z": 1.0}), I,
     r"`fix_qd` names unknown coordinates \['z'\]"),
    ("initial too many position conditions", lambda: mbd.initial_conditions(PEND, Q0, fix_q={"x": 0.6, "y": -0.8}), I,
     r"too many position conditions.*\['x', 'y'\]"),
    ("initial unreachable position", lambda: mbd.initial_conditions(PEND, Q0, fix_q={"x": 2.0}), I,
     r"fix_q cannot be reached: no assembled configuration near the guess has x = 2\b"),
    ("initial fix_q not a dict", lambda: mbd.initial_conditions(PEND, Q0, fix_q=[0.6]), I,
     r"`fix_q` must be a dict \{coordinate: value\}"),
    ("initial unknown parameter", lambda: mbd.initial_conditions(PEND, Q0, params={**PEND.params, "z": 1.0}), P,
     r"initial_conditions: params has unknown names \['z'\]"),
    # ---------------------------------------------------------------- simulate
    ("simulate q0 of the wrong shape", lambda: _simulate(q0=jnp.zeros(3)), S, r"q0 and qd0 must have shape \(2,\)"),
    ("simulate t1 before t0", lambda: _simulate(t1=-1.0), S, r"t1 must be a finite time after t0.*t1 = -1"),
    ("simulate t1 NaN", lambda: _simulate(t1=math.nan), S, r"t1 must be a finite time after t0.*t1 = nan"),
    ("simulate t0 array", lambda: _simulate(t0=jnp.zeros(2)), S, r"t0 must be a scalar time"),
    ("simulate one output point", lambda: _simulate(saveat=1), S, r"saveat=1 must be at least 2 output points"),
    ("simulate fractional saveat", lambda: _simulate(saveat=10.5), S, r"saveat must be an int"),
    ("simulate saveat outside", lambda: _simulate(saveat=jnp.array([0.0, 0.2])), S,
     r"output times \(saveat\) must be increasing and lie between t0 and t1"),
    ("simulate saveat decreasing", lambda: _simulate(saveat=jnp.array([0.05, 0.0])), S,
     r"output times \(saveat\) must be increasing"),
    ("simulate unknown formulation", lambda: _simulate(formulation="lagrange"), S, r"unknown formulation 'lagrange'"),
    ("simulate unknown stabilization", lambda: _simulate(stabilization="projectio"), S,
     r"unknown stabilization 'projectio'"),
    ("simulate negative rtol", lambda: _simulate(rtol=-1e-6), S, r"rtol must be a number >= 0, got -1e-06"),
    ("simulate rtol as text", lambda: _simulate(rtol="1e-6"), S, r"rtol must be a number >= 0, got '1e-6'"),
    ("simulate NaN atol", lambda: _simulate(atol=math.nan), S, r"atol must be a number >= 0, got nan"),
    ("simulate zero tolerances", lambda: _simulate(rtol=0.0, atol=0.0), S, r"rtol and atol are both 0"),
    ("simulate solver by name", lambda: _simulate(solver="tsit5"), S, r"solver must be a diffrax solver instance"),
    ("simulate adjoint by name", lambda: _simulate(adjoint="checkpoint"), S, r"adjoint must be a diffrax adjoint"),
    ("simulate negative fixed step", lambda: _simulate(fixed_step=-0.1), S, r"fixed_step must be a positive step"),
    ("simulate fixed step needs more steps", lambda: _simulate(fixed_step=1e-3, max_steps=10), S,
     r"fixed_step=0.001 needs 100 steps.*more than max_steps=10"),
    ("simulate negative dt0", lambda: _simulate(dt0=-0.1), S, r"dt0 must be a positive first step"),
    ("simulate zero max_steps", lambda: _simulate(max_steps=0), S, r"max_steps must be a positive integer, got 0"),
    ("simulate fractional max_steps", lambda: _simulate(max_steps=10.5), S, r"max_steps must be a positive integer"),
    ("simulate negative drift_tol", lambda: _simulate(drift_tol=-1.0), S, r"drift_tol must be a positive residual bound"),
    ("simulate unknown progress", lambda: _simulate(progress="bar"), S, r"progress must be True, False.*got 'bar'"),
    ("simulate missing parameter", lambda: _simulate(params={"m": 1.0, "g": 9.81}), P,
     r"simulate: params is missing \['L'\]"),
    ("simulate unknown parameter", lambda: _simulate(params={**PEND.params, "k": 1.0}), P,
     r"simulate: params has unknown names \['k'\]"),
    ("simulate parameter of the wrong shape", lambda: _simulate(params={**PEND.params, "m": jnp.ones(3)}), P,
     r"simulate: params has m of shape \(3,\) instead of \(\)"),
    ("simulate params not a dict", lambda: _simulate(params=[1.0, 9.81, 1.0]), P, r"params must be a dict like model.params"),
    ("simulate NaN parameter", lambda: _simulate(params={**PEND.params, "m": math.nan}), P,
     r"simulate: parameter m = nan. Give finite values"),
    ("check infinite parameter", lambda: mbd.check(PEND, Q0, params={**PEND.params, "g": math.inf}), P,
     r"check: parameter g = inf"),
    ("initial NaN guess", lambda: mbd.initial_conditions(PEND, jnp.array([math.nan, -0.8])), I,
     r"non-finite input: q_guess\[x\] = nan"),
    ("initial infinite condition", lambda: mbd.initial_conditions(PEND, Q0, fix_q={"x": math.inf}), I,
     r"non-finite input: fix_q\[x\] = inf"),
    ("initial NaN parameter", lambda: mbd.initial_conditions(PEND, Q0, params={**PEND.params, "L": math.nan}), P,
     r"initial_conditions: parameter L = nan"),
    ("batch NaN parameter of one member", lambda: mbd.simulate_batch(
        PEND, Q0, QD0, t1=0.1, params={**PEND.params, "m": jnp.array([1.0, math.nan])}), P,
     r"simulate_batch: parameter m = nan \(batch member 1\)"),
    ("simulate NaN q0", lambda: _simulate(q0=jnp.array([math.nan, -0.8])), S, r"non-finite input: q0\[x\] = nan"),
    ("simulate infinite qd0", lambda: _simulate(qd0=jnp.array([0.0, math.inf])), S, r"non-finite input: qd0\[y\] = inf"),
    ("simulate negative body mass", lambda: _with_params(_planar(), ("a", "mass"), -1.0), P,
     r"simulate: parameter a.mass = -1 \(mass of body 'a', kg\) must be >= 0"),
    ("simulate negative body inertia", lambda: _with_params(_planar(), ("a", "inertia"), -0.1), P,
     r"parameter a.inertia = -0.1 \(polar moment of inertia of body 'a', kg·m²\) must be >= 0"),
    ("simulate negative spring constant", lambda: _with_params(_planar(
        lambda m: m.spring_damper("s", "ground", (0, 0), "a", (0, 0), k=1.0, c=0.0, length0=1.0)), ("s", "k"), -5.0), P,
     r"parameter s.k = -5 \(stiffness of 's', N/m\) must be >= 0"),
    ("simulate zero capacitance", lambda: _with_params(_network(lambda n: n.capacitor("C", "a", "ground", C=1.0),
                                                                lambda n: n.resistor("R", "a", "ground", R=1.0)),
                                                       ("C", "C"), 0.0), P,
     r"parameter C.C = 0 \(capacitance of capacitor 'C'\) must be > 0"),
    ("simulate negative resistance", lambda: _with_params(_network(lambda n: n.capacitor("C", "a", "ground", C=1.0),
                                                                   lambda n: n.resistor("R", "a", "ground", R=1.0)),
                                                          ("R", "R"), -2.0), P,
     r"parameter R.R = -2 \(resistance of resistor 'R'\) must be >= 0"),
    ("simulate inertia tensor not positive", lambda: _with_params(_spatial(), ("d", "inertia"), -jnp.eye(3)), P,
     r"parameter d.inertia \(inertia tensor of body 'd', kg·m²\) has a negative principal value"),
    ("check negative body mass", lambda: _check_with(_planar(), ("a", "mass"), -1.0), P,
     r"check: parameter a.mass = -1"),
    ("model default outside its bounds", lambda: _pendulum(param_bounds={"m": ("positive", "mass, kg")},
                                                           params={"m": 0.0, "g": 9.81, "L": 1.0}), M,
     r"Model: parameter m = 0 \(mass, kg\) must be > 0"),
    ("model bounds on an unknown parameter", lambda: _pendulum(param_bounds={"mass": "positive"}), M,
     r"`param_bounds` names 'mass', which is not a parameter"),
    ("model bounds of an unknown kind", lambda: _pendulum(param_bounds={"m": "big"}), M,
     r"`param_bounds\['m'\]` is 'big'"),
    # ---------------------------------------------------------- simulate_batch
    ("batch q0 of the wrong width", lambda: mbd.simulate_batch(PEND, jnp.zeros((2, 3)), QD0, t1=0.1), S,
     r"simulate_batch: q0 must have shape \(2,\) \(shared\) or \(B, 2\)"),
    ("batch axes of different lengths", lambda: mbd.simulate_batch(PEND, jnp.stack([Q0] * 2), jnp.stack([QD0] * 3),
                                                                    t1=0.1), S, r"batch axes differ in length: q0: 2, qd0: 3"),
    ("batch without a batch axis", lambda: mbd.simulate_batch(PEND, Q0, QD0, t1=0.1), S, r"nothing carries a batch axis"),
    ("batch unknown parameter", lambda: mbd.simulate_batch(PEND, jnp.stack([Q0] * 2), QD0, t1=0.1,
                                                           params={**PEND.params, "z": 1.0}), P,
     r"simulate_batch: params has unknown names \['z'\]"),
    ("batch parameter of the wrong shape", lambda: mbd.simulate_batch(PEND, jnp.stack([Q0] * 2), QD0, t1=0.1,
                                                                      params={**PEND.params, "m": jnp.ones((2, 2))}), P,
     r"simulate_batch: params has m of shape \(2, 2\) instead of \(\)"),
    # ------------------------------------------------------- sensitivity, fit
    ("sensitivity unknown parameter", lambda: mbd.sensitivity(PEND, Q0, QD0, t=TS, outputs=("x",), wrt=("mass",)), E,
     r"sensitivity: unknown parameters \['mass'\]"),
    ("sensitivity unknown output", lambda: mbd.sensitivity(PEND, Q0, QD0, t=TS, outputs=("z",), wrt=("m",)), E,
     r"outputs \['z'\] are not coordinates"),
    ("sensitivity unknown mode", lambda: mbd.sensitivity(PEND, Q0, QD0, t=TS, outputs=("x",), wrt=("m",),
                                                         mode="central"), E, r"mode must be 'forward' or 'reverse'"),
    ("sensitivity parameter named twice", lambda: mbd.sensitivity(PEND, Q0, QD0, t=TS, outputs=("x",), wrt=("m", "m")), E,
     r"parameters \['m'\] are named more than once"),
    ("fit unknown free parameter", lambda: mbd.fit(PEND, DATA, PEND.params, free=("mass",), outputs=("x",), q0=Q0,
                                                   qd0=QD0), E, r"fit: unknown parameters \['mass'\]"),
    ("fit bounds on a fixed parameter", lambda: mbd.fit(PEND, DATA, PEND.params, free=("m",), outputs=("x",), q0=Q0,
                                                        qd0=QD0, bounds={"g": (0, None)}), E,
     r"bounds name parameters that are not free: \['g'\]"),
    ("fit data without times", lambda: mbd.fit(PEND, {"y": jnp.zeros(5)}, PEND.params, free=("m",), outputs=("x",),
                                               q0=Q0, qd0=QD0), E, r"data must have keys 't' and 'y'"),
    ("fit data of different lengths", lambda: mbd.fit(PEND, {"t": TS, "y": jnp.zeros(4)}, PEND.params, free=("m",),
                                                      outputs=("x",), q0=Q0, qd0=QD0), E,
     r"data times \(shape \(5,\)\) and values \(shape \(4, 1\)\) do not match"),
    ("fit missing data file", lambda: mbd.fit(PEND, "no-such-data.csv", PEND.params, free=("m",), outputs=("x",),
                                              q0=Q0, qd0=QD0), E, r"data file 'no-such-data.csv' does not exist"),
    ("fit unknown start parameter", lambda: mbd.fit(PEND, DATA, {**PEND.params, "z": 1.0}, free=("m",), outputs=("x",),
                                                    q0=Q0, qd0=QD0), P, r"fit: params has unknown names \['z'\]"),
    ("fit adjoint given", lambda: mbd.fit(PEND, DATA, PEND.params, free=("m",), outputs=("x",), q0=Q0, qd0=QD0,
                                          throw=False), E, r"do not pass `adjoint=` or `throw=`"),
]


def _sweep_cases():
    return [
        ("sweep zero chunk", lambda tmp: mbd.sweep(PEND, {"m": jnp.ones(2)}, out=tmp / "s", q0=Q0, qd0=QD0, t1=0.1,
                                                   chunk=0), E, r"chunk must be a positive number of members; got 0"),
        ("sweep without t1", lambda tmp: mbd.sweep(PEND, {"m": jnp.ones(2)}, out=tmp / "s", q0=Q0, qd0=QD0), S,
         r"give the end time t1="),
        ("sweep unknown parameter", lambda tmp: mbd.sweep(PEND, {"mass": jnp.ones(2)}, out=tmp / "s", q0=Q0, qd0=QD0,
                                                          t1=0.1), E, r"sweep: unknown parameters \['mass'\]"),
        ("sweep outputs not a function", lambda tmp: mbd.sweep(PEND, {"m": jnp.ones(2)}, out=tmp / "s", q0=Q0,
                                                               qd0=QD0, t1=0.1, outputs="final"), E,
         r"outputs must be a function traj"),
        ("sweep without q0", lambda tmp: mbd.sweep(PEND, {"m": jnp.ones(2)}, out=tmp / "s", t1=0.1), E,
         r"give the initial positions q0="),
    ]


def _file_cases():
    def write(tmp, name, content):
        path = tmp / name
        (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
        return path

    return [
        ("load missing file", lambda tmp: mbd.Trajectory.load(tmp / "none.npz"), E,
         r"Trajectory.load: '.*none.npz' does not exist"),
        ("load a text file", lambda tmp: mbd.Trajectory.load(write(tmp, "text.npz", "hello")), E,
         r"Trajectory.load: '.*text.npz' cannot be read as an mbdjax trajectory file"),
        ("load a truncated archive", lambda tmp: mbd.Trajectory.load(write(tmp, "cut.npz", b"PK\x03\x04garbage")), E,
         r"Trajectory.load: '.*cut.npz' cannot be read.*truncated"),
        ("load another npz", lambda tmp: (np.savez(tmp / "other.npz", a=np.ones(3)),
                                          mbd.Trajectory.load(tmp / "other.npz")), E,
         r"Trajectory.load: '.*other.npz' is not an mbdjax trajectory file \(no header\)"),
        ("load a folder", lambda tmp: mbd.Trajectory.load(tmp), E, r"does not exist \(or is not a file\)"),
    ]


@pytest.mark.parametrize("name, call, error, text", CASES, ids=[c[0] for c in CASES])
def test_mistake_is_named(name, call, error, text):
    with pytest.raises(error) as info:
        call()
    assert isinstance(info.value, mbd.MbdjaxError)
    assert re.search(text, str(info.value), re.S), f"{name}: {info.value}"


@pytest.mark.parametrize("name, call, error, text", _sweep_cases() + _file_cases(),
                         ids=[c[0] for c in _sweep_cases() + _file_cases()])
def test_mistake_with_files_is_named(name, call, error, text, tmp_path):
    with pytest.raises(error) as info:
        call(tmp_path)
    assert isinstance(info.value, mbd.MbdjaxError)
    assert "allow_pickle" not in str(info.value)
    assert re.search(text, str(info.value), re.S), f"{name}: {info.value}"


CLI = [
    ("cli unknown example", ["run", "four-barr"], r"no example named 'four-barr'; did you mean 'four-bar'\?"),
    ("cli negative t1", ["run", "slider-crank", "--t1", "-1"], r"--t1 must be a positive number of seconds, got -1"),
    ("cli zero points", ["run", "slider-crank", "--points", "0"], r"--points must be at least 2"),
    ("cli missing fit config", ["fit", "missing.toml"], r"config file 'missing.toml' does not exist"),
    ("cli missing sweep config", ["sweep", "missing.toml"], r"config file 'missing.toml' does not exist"),
    ("cli unknown check example", ["check", "bricardd"], r"no example named 'bricardd'"),
    ("cli fit config unknown key", ["fit", "{tmp}/f.toml", 'model = "slider-crank"\nwhat = 1\n'],
     r"unknown keys \['what'\]"),
    ("cli fit config missing keys", ["fit", "{tmp}/f.toml", 'model = "slider-crank"\n'],
     r"must set \['data', 'outputs', 'free'\]"),
    ("cli fit config bad TOML", ["fit", "{tmp}/f.toml", 'model = "slider-crank\n'], r"is not valid TOML"),
    ("cli fit config unknown option", ["fit", "{tmp}/f.toml", 'model = "slider-crank"\ndata = "d.csv"\n'
                                       'outputs = ["crank.phi"]\nfree = ["x"]\n[options]\nspeed = 1\n'],
     r"unknown options \['speed'\]"),
    ("cli sweep config two designs", ["sweep", "{tmp}/s.toml", 'model = "slider-crank"\nt1 = 1.0\n[grid]\nk = [1.0]\n'
                                      '[samples]\nk = [1.0]\n'], r"exactly one of \[grid\], \[samples\], \[random\]"),
    ("cli sweep config t1 text", ["sweep", "{tmp}/s.toml", 'model = "slider-crank"\nt1 = "one"\n[grid]\nk = [1.0]\n'],
     r"t1 must be a number"),
    ("cli sweep config two problems", ["sweep", "{tmp}/s.toml", 'model = "slider-crank"\nt1 = 1.0\nwhat = 1\n'],
     r"2 problems in the config:\n  - unknown keys \['what'\].*\n  - give exactly one of"),
]


@pytest.mark.parametrize("name, argv, text", CLI, ids=[c[0] for c in CLI])
def test_command_line_mistake_is_named(name, argv, text, tmp_path, capsys, monkeypatch):
    from mbdjax._cli import main

    monkeypatch.chdir(tmp_path)
    if len(argv) == 3:          # a config file with this content
        path = argv[1].format(tmp=tmp_path)
        with open(path, "w") as f:
            f.write(argv[2])
        argv = argv[:1] + [path]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert re.search(text, err, re.S), f"{name}: {err}"


def test_cli_rejects_an_unknown_formulation(capsys):
    from mbdjax._cli import main

    with pytest.raises(SystemExit) as info:
        main(["run", "slider-crank", "--formulation", "lagrange"])
    assert info.value.code == 2
    assert "invalid choice: 'lagrange'" in capsys.readouterr().err


def test_at_least_a_hundred_distinct_mistakes():
    """The issue's count: at least 100 distinct mistakes across the public entry points."""
    names = [c[0] for c in CASES + _sweep_cases() + _file_cases() + CLI] + ["cli unknown formulation"]
    assert len(set(names)) == len(names)
    assert len(names) >= 100, len(names)
