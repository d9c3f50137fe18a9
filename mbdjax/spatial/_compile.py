"""Compile a validated spatial Mechanism into the Model's pure JAX functions.

Spatial systems are written body by body: every function first forms the `Pose` of
each body from `q` (and `q̇`), then sums energies or stacks constraint rows. The
kinetic energy is the only inertia input; the Model derives `M(q)` and the velocity
terms from it by autodiff (THEORY §2), and `Φ_q` by `jax.jacfwd`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._builder import call_problem, spring_damper_bounds
from .._errors import ModelError
from .._model import Model, sample_point
from .._scene import Scene, ScenePart, up_from_gravity
from .._tracing import device_array
from . import _contact as ct
from . import _forces as fe
from ._bodies import GROUND, BodySlot, RigidBodies, pose
from ._joints import KINDS


def layout(mech):
    """`{body: BodySlot}` in coordinate order, and the coordinate count `n`."""
    slots, start = {}, 0
    for name, _, _, orientation in mech._bodies:
        slots[name] = BodySlot(name, orientation, start)
        start += slots[name].size
    return slots, start


def default_params(mech):
    """The params pytree of a mechanism, named after its parts."""
    params = {"gravity": device_array(mech._gravity)}
    for name, mass, J, _ in mech._bodies:
        params[name] = {"mass": device_array(mass), "inertia": device_array(J)}
    for part in list(mech._joints) + list(mech._contacts) + list(mech._elements):
        if part.params:
            params[part.name] = {k: device_array(v) for k, v in part.params.items()}
    return params


def generic_configuration(mech, slots, n):
    """A generic `q`: positions from `sample_point`, Euler angles away from θ = 0, π,
    unit quaternions; used to check the functions at build time."""
    q = np.asarray(sample_point(n), dtype=float).copy()
    for slot in slots.values():
        s = slot.start + 3
        if slot.orientation == "euler313":
            q[s:s + 3] = (0.3, 1.1, -0.4)
        else:
            q[s:s + 4] = _GENERIC_QUATERNION
    return device_array(q)


# The Euler parameters of the 3-1-3 angles (0.3, 1.1, −0.4) (`rot.quaternion_from_euler313`,
# written out on the host: a constant needs no compiled program)
_GENERIC_QUATERNION = np.array([np.cos(0.55) * np.cos(-0.05), np.sin(0.55) * np.cos(0.35),
                                np.sin(0.55) * np.sin(0.35), np.cos(0.55) * np.sin(-0.05)])


def _rows(mech, slots):
    """Holonomic row names (quaternion normalizations, joints, contact heights) and
    nonholonomic row names (no slip)."""
    hol = [f"{b}.norm" for b, s in slots.items() if s.orientation == "quaternion"]
    for j in mech._joints:
        hol += [j.name + suffix for suffix in KINDS[j.kind].rows]
    hol += [f"{c.name}.height" for c in mech._contacts]
    non = [f"{c.name}.{r}" for c in mech._contacts for r in ("slip1", "slip2")]
    return tuple(hol), tuple(non)


def _functions(mech, slots):
    def poses(q, qd=None):
        out = {b: pose(s, q, qd) for b, s in slots.items()}
        out[GROUND] = pose(None, q)
        return out

    def kinetic_energy(q, qd, t, p):
        T = 0.0
        for b, P in poses(q, qd).items():
            if b != GROUND:
                T = T + 0.5 * p[b]["mass"] * (P.v @ P.v) + 0.5 * P.w_body @ (p[b]["inertia"] @ P.w_body)
        return T

    springs = [e for e in mech._elements if e.kind == "spring_damper"]

    def potential(q, t, p):
        P = poses(q)
        V = sum(-p[b]["mass"] * (p["gravity"] @ P[b].r) for b in slots)
        for e in springs:
            V = V + fe.spring_potential(P[e.body_i], P[e.body_j], p[e.name])
        return V

    def dissipation(q, qd, t, p):
        P = poses(q, qd)
        return sum(fe.spring_dissipation(P[e.body_i], P[e.body_j], p[e.name]) for e in springs)

    applied = [e for e in mech._elements if e.fn is not None]

    def forces(q, qd, t, p):
        Q = jnp.zeros_like(q)
        for e in applied:
            if e.kind == "spring_damper":
                P = poses(q, qd)
                ell, ell_dot = fe.spring_length(P[e.body_i], P[e.body_j], p[e.name])
                F = jnp.asarray(e.fn(ell, ell_dot, t, p), dtype=float).reshape(())

                def rate(v, e=e):
                    Pv = poses(q, v)
                    return fe.spring_length(Pv[e.body_i], Pv[e.body_j], p[e.name])[1]

                Q = Q - fe.generalized_force(rate, qd, F)
            elif e.kind == "force":
                f = jnp.asarray(e.fn(q, qd, t, p), dtype=float).reshape(3)
                Q = Q + fe.generalized_force(
                    lambda v, e=e: poses(q, v)[e.body_i].point_velocity(p[e.name]["point"]), qd, f)
            else:  # torque
                tau = jnp.asarray(e.fn(q, qd, t, p), dtype=float).reshape(3)
                Q = Q + fe.generalized_force(lambda v, e=e: poses(q, v)[e.body_i].w, qd, tau)
        return Q

    quats = [s for s in slots.values() if s.orientation == "quaternion"]

    def holonomic(q, t, p):
        P = poses(q)
        rows = [jnp.stack([0.5 * (s.split(q)[1] @ s.split(q)[1] - 1.0)]) for s in quats]
        rows += [KINDS[j.kind].fn(P[j.body_i], P[j.body_j], p[j.name]) for j in mech._joints]
        rows += [ct.contact_height(c.kind, P[c.body], p[c.name]) for c in mech._contacts]
        return jnp.concatenate(rows)

    def nonholonomic(q, qd, t, p):
        P = poses(q, qd)
        return jnp.concatenate([ct.slip_velocity(c.kind, P[c.body], p[c.name]) for c in mech._contacts])

    has_holonomic = bool(quats or mech._joints or mech._contacts)
    return dict(
        kinetic_energy=kinetic_energy,
        potential=potential,
        dissipation=dissipation if springs else None,
        forces=forces if applied else None,
        holonomic=holonomic if has_holonomic else None,
        nonholonomic=nonholonomic if mech._contacts else None,
    ), poses


def _check_user_functions(mech, params, q):
    problems = []
    qd = sample_point(q.shape[0], scale=0.2, phase=0.4)
    t = device_array(0.1)
    for e in mech._elements:
        if e.fn is None:
            continue
        if e.kind == "spring_damper":
            problem = call_problem(f"spring_damper {e.name!r}: actuator(l, ldot, t, p)", e.fn,
                                   (jnp.asarray(0.3), jnp.asarray(0.1), t, params), (), "a scalar force")
        else:
            what = "a global force" if e.kind == "force" else "a global torque"
            problem = call_problem(f"{e.kind} {e.name!r}: f(q, qd, t, p)", e.fn, (q, qd, t, params), (3,), what)
        if problem:
            problems.append(problem)
    return problems


def euler_singularity(slots):
    """`margin(q) -> (k,)`: `sin θ` of every Euler-angle body (0, changing sign, at
    the 3-1-3 singularity θ = 0 or π, where the angle rates are not determined by ω),
    or None."""
    thetas = [s.start + 4 for s in slots.values() if s.orientation == "euler313"]
    if not thetas:
        return None, ()
    idx = np.array(thetas)

    def margin(q):
        return jnp.sin(q[idx])

    return margin, tuple(f"{s.name}.theta" for s in slots.values() if s.orientation == "euler313")


def compile_mechanism(mech, validate_at=None):
    """`Model` of a validated mechanism (see `Mechanism.build`)."""
    slots, n = layout(mech)
    params = default_params(mech)
    q_generic = generic_configuration(mech, slots, n)
    problems = _check_user_functions(mech, params, q_generic)
    if problems:
        raise ModelError(problems)
    fns, fns_poses = _functions(mech, slots)
    hol_names, non_names = _rows(mech, slots)
    margin, margin_names = euler_singularity(slots)
    metadata = {
        "front_end": "spatial",
        "bodies": {b: {"orientation": s.orientation, "coordinates": tuple(range(s.start, s.start + s.size))}
                   for b, s in slots.items()},
        "joints": {j.name: {"kind": j.kind, "body_i": j.body_i, "body_j": j.body_j} for j in mech._joints},
        "contacts": {c.name: {"kind": c.kind, "body": c.body} for c in mech._contacts},
        "elements": {e.name: {"kind": e.kind, "body_i": e.body_i, "body_j": e.body_j} for e in mech._elements},
    }
    return Model(
        mech.coordinates,
        kinetic_energy=jax.jit(fns["kinetic_energy"]),
        potential=jax.jit(fns["potential"]),
        dissipation=fns["dissipation"] and jax.jit(fns["dissipation"]),
        forces=fns["forces"] and jax.jit(fns["forces"]),
        holonomic=fns["holonomic"] and jax.jit(fns["holonomic"]),
        constraint_names=hol_names or None,
        nonholonomic=fns["nonholonomic"] and jax.jit(fns["nonholonomic"]),
        nonholonomic_names=non_names or None,
        params=params,
        metadata=metadata,
        bodies=RigidBodies(tuple(mech.bodies), fns_poses),
        scene=_scene(mech, fns_poses),
        contacts=ct.Contacts(kinds={c.name: c.kind for c in mech._contacts},
                          bodies={c.name: c.body for c in mech._contacts},
                          kinematics={c.name: _contact_fn(c, slots[c.body]) for c in mech._contacts})
        if mech._contacts else None,
        coordinate_units=[_coordinate_unit(c) for c in mech.coordinates],
        validate_at=q_generic if validate_at is None else validate_at,
        singularity=margin,
        singularity_names=margin_names or None,
        singularity_advice=("3-1-3 Euler angles are singular at θ = 0 or π (φ and ψ turn about the same "
                            "axis); build the body with orientation='quaternion', or choose body axes "
                            "that keep θ away from 0 and π"),
        param_bounds=_bounds(mech, slots, params),
    )


def _scene(mech, poses):
    """The `mbdjax._scene.Scene` of the mechanism: each body's mass centre and `R`."""
    names = tuple(mech.bodies)

    def frames(q):
        at = poses(q)
        return jnp.stack([at[b].r for b in names]), jnp.stack([at[b].R for b in names])

    return Scene(
        dimension=3, bodies=names, frames=frames,
        joints=tuple(ScenePart(s.name, "ball", s.body_i, s.body_j) for s in mech._joints),
        elements=tuple(ScenePart(e.name, "coil" if e.kind == "spring_damper" else "", e.body_i, e.body_j or GROUND)
                       for e in mech._elements),
        contacts=tuple(ScenePart(c.name, {"rolling_disk": "disk", "rolling_sphere": "sphere"}[c.kind], c.body)
                       for c in mech._contacts),
        up=up_from_gravity(mech._gravity, (0.0, 0.0, 1.0)),
        inertia=lambda p, body: (p[body]["mass"], p[body]["inertia"]),
    )


def _bounds(mech, slots, params):
    """The admissible values of the mechanism's physical parameters (`Model(param_bounds=)`)."""
    out = {}
    for b in slots:
        out[f"{b}.mass"] = ("nonnegative", f"mass of body {b!r}, kg")
        out[f"{b}.inertia"] = ("psd", f"inertia tensor of body {b!r}, kg·m²")
    for c in mech._contacts:
        if "radius" in params.get(c.name, {}):
            out[f"{c.name}.radius"] = ("positive", f"radius of {c.kind} {c.name!r}, m")
    for e in mech._elements:
        if e.kind == "spring_damper":
            out.update(spring_damper_bounds(e.name))
    return {k: v for k, v in out.items() if _has(params, k)}


def _has(params, dotted):
    node = params
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def body_poses(mech):
    """`fn(q, qd=None) -> {body: Pose}` for models built from `mech` (ground included):
    each body's `r`, `R`, and with `qd` its `v`, `w` (global) and `w_body`.

    Example:

        >>> from mbdjax import models, spatial as sp
        >>> ex = models.heavy_top()
        >>> poses = sp.body_poses(ex.mechanism)(ex.q0, ex.qd0)
        >>> sorted(poses), poses["top"].R.shape
        (['ground', 'top'], (3, 3))
    """
    slots, _ = layout(mech)
    return _functions(mech, slots)[1]


def _contact_fn(spec, slot):
    def fn(q, qd, p):
        P = pose(slot, q, qd)
        return ct.contact_point(spec.kind, P, p[spec.name]), ct.contact_velocity(spec.kind, P, p[spec.name])

    return fn


def contact_kinematics(model, name):
    """`fn(q, qd, p) -> (contact point (3,), contact velocity (3,))` of the rolling
    contact `name` of a model built by `spatial.Mechanism` (the velocity is that of
    the body's material point at the contact: zero when rolling without slip).

    Example:

        >>> import jax.numpy as jnp
        >>> from mbdjax import models, spatial as sp
        >>> ex = models.disk()
        >>> point, velocity = sp.contact_kinematics(ex.model, "contact")(ex.q0, ex.qd0, ex.model.params)
        >>> abs(float(point[2])) < 1e-12, float(jnp.max(jnp.abs(velocity))) < 1e-12
        (True, True)
    """
    if model.contacts is None:
        raise ModelError("contact_kinematics: the model was not built by mbdjax.spatial.Mechanism with contacts.")
    if name not in model.contacts.kinematics:
        raise ModelError(f"contact_kinematics: no contact named {name!r}; contacts are {model.contacts.names()}.")
    return model.contacts.kinematics[name]


def _coordinate_unit(name):
    """SI unit of a body coordinate: position (`x`, `y`, `z`) m, Euler angle rad,
    Euler parameter 1."""
    last = name.rpartition(".")[2]
    return {"x": "m", "y": "m", "z": "m", "phi": "rad", "theta": "rad", "psi": "rad",
            "e0": "1", "e1": "1", "e2": "1", "e3": "1"}.get(last)
