"""Compile a validated Mechanism into the Model's pure JAX functions.

Structure (which body a joint touches, which rows and columns it owns) is resolved
once into static NumPy index arrays; numbers are read from the params pytree inside
the functions. Joints and force elements of one kind are grouped and `vmap`ped, so
the traced graph grows with the number of *kinds*, not of parts. The holonomic
Jacobian is assembled from per-joint blocks `∂Φ_k/∂(q_i, q_j)` (analytic, over the six
local coordinates; see `_joints`) placed into the `(m_h, n)` matrix by one gather
with a static index array; ground's coordinates are the constants `(0, 0, 0)`, and
its columns are dropped.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from .._builder import call_problem, spring_damper_bounds
from .._errors import ModelError
from .._model import Model, sample_point
from .._numerics.sparse import JacobianPattern
from .._scene import Scene, ScenePart, up_from_gravity
from .._tracing import device_array
from . import _forces as fe
from ._geometry import cross, rotate, rotation
from ._joints import COORDINATE_AXES, KINDS, JointKind

_GATHER_MAX = 3000  # m_h·n up to which the Jacobian is assembled by a gather (timed on CPU)
_ELEMENT_KEYS = {
    "spring_damper": ("point_i", "point_j", "k", "c", "length0"),
    "rotational_spring_damper": ("k", "c", "angle0"),
}
_ELEMENT_ENERGY = {
    "spring_damper": (fe.spring_potential, fe.spring_dissipation),
    "rotational_spring_damper": (fe.rotational_potential, fe.rotational_dissipation),
}


def _stack(trees):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


class _Layout:
    """Body order and the padded `(nb + 1, 3)` view of `q` (last row: ground)."""

    def __init__(self, bodies):
        self.bodies = tuple(bodies)
        self.nb = len(bodies)
        self.n = 3 * self.nb
        self.index = {b: k for k, b in enumerate(bodies)}
        self.index["ground"] = self.nb

    def pad(self, q):
        return jnp.concatenate([q, jnp.zeros((3,), dtype=q.dtype)]).reshape(self.nb + 1, 3)


@dataclasses.dataclass(frozen=True, eq=False)
class _Member:
    """One vmapped unit of a joint group: a whole joint, or one row of a `fix`."""

    spec: object
    kind: JointKind
    rows: tuple  # global row indices
    sub: int | None = None  # fix: which listed coordinate

    def params(self, p):
        if self.spec.kind == "fix":
            select = np.zeros(3)
            select[COORDINATE_AXES.index(self.spec.coordinates[self.sub])] = 1.0
            return {"select": jnp.asarray(select), "value": p[self.spec.name]["values"][self.sub]}
        return {k: p[self.spec.name][k] for k in self.kind.keys}


class _Group:
    """All members of one joint kind, with static body and row indices."""

    def __init__(self, kind, members, layout):
        self.kind = kind
        self.members = members
        self.idx_i = np.array([layout.index[m.spec.body_i] for m in members], dtype=np.int32)
        self.idx_j = np.array([layout.index[m.spec.body_j] for m in members], dtype=np.int32)
        self.rows = np.array([m.rows for m in members]).reshape(len(members), kind.rows)

    def params(self, p):
        return _stack([m.params(p) for m in self.members])

    def drive(self, t, p):
        if not self.kind.driven:
            return jnp.zeros((len(self.members),), dtype=float)
        return jnp.stack([jnp.asarray(m.spec.drive(t, p), dtype=float).reshape(()) for m in self.members])


def _joint_tables(mech, layout):
    names, groups, by_joint = [], {}, {}
    for spec in mech._joints:
        kind = KINDS[spec.kind]
        members = []
        if spec.kind == "fix":
            for sub, axis in enumerate(spec.coordinates):
                members.append(_Member(spec, kind, (len(names),), sub))
                names.append(f"{spec.name}.{axis}")
        else:
            rows = tuple(range(len(names), len(names) + kind.rows))
            names.extend(spec.name + s for s in kind.suffixes)
            members.append(_Member(spec, kind, rows))
        groups.setdefault(spec.kind, []).extend(members)
        by_joint[spec.name] = members
    return tuple(names), [_Group(KINDS[k], ms, layout) for k, ms in groups.items()], by_joint


def _holonomic_functions(layout, groups, m_h):
    order = np.concatenate([g.rows.reshape(-1) for g in groups])
    inverse = np.argsort(order)
    identity = bool(np.all(order == np.arange(m_h)))
    n = layout.n

    # static assembly pattern of the Jacobian blocks: entry k of the concatenated
    # blocks belongs at (rows[k], cols[k]); ground's columns are constants, dropped.
    rows, cols = [], []
    for g in groups:
        r, G = g.kind.rows, len(g.members)
        local_cols = np.concatenate([3 * g.idx_i[:, None] + np.arange(3), 3 * g.idx_j[:, None] + np.arange(3)], axis=1)
        rows.append(np.broadcast_to(g.rows[:, :, None], (G, r, 6)).reshape(-1))
        cols.append(np.broadcast_to(local_cols[:, None, :], (G, r, 6)).reshape(-1))
    rows = np.concatenate(rows)
    cols = np.concatenate(cols)
    keep = cols < n
    if len(set(zip(rows[keep].tolist(), cols[keep].tolist()))) != int(keep.sum()):  # pragma: no cover
        raise AssertionError("planar: two Jacobian block entries share a position")
    # Small matrices: one gather (flat position -> block entry, or the appended zero
    # for structurally empty positions), faster than a scatter on CPU; large ones: a
    # scatter into zeros, whose cost follows the nonzeros rather than m_h·n.
    use_gather = m_h * n <= _GATHER_MAX
    source = np.full(m_h * n, rows.size)
    source[rows[keep] * n + cols[keep]] = np.nonzero(keep)[0]
    # int32 index arrays: valid under both float64 and float32 (x64 off) tracing.
    source = source.astype(np.int32)
    inverse = inverse.astype(np.int32)
    rows_kept, cols_kept = rows[keep].astype(np.int32), cols[keep].astype(np.int32)
    keep_idx = np.nonzero(keep)[0].astype(np.int32)
    all_kept = bool(np.all(keep))

    def holonomic(q, t, p):
        Q = layout.pad(q)
        parts = [
            jax.vmap(g.kind.local)(Q[g.idx_i], Q[g.idx_j], g.params(p), g.drive(t, p)).reshape(-1)
            for g in groups
        ]
        phi = jnp.concatenate(parts) if len(parts) > 1 else parts[0]
        return phi if identity else phi[inverse]

    def holonomic_jacobian(q, t, p):
        Q = layout.pad(q)
        vals = [jax.vmap(g.kind.jac)(Q[g.idx_i], Q[g.idx_j], g.params(p)).reshape(-1) for g in groups]
        if use_gather:
            vals = jnp.concatenate(vals + [jnp.zeros((1,), dtype=Q.dtype)])
            return vals[source].reshape(m_h, n)
        vals = jnp.concatenate(vals) if len(vals) > 1 else vals[0]
        if not all_kept:
            vals = vals[keep_idx]
        return jnp.zeros((m_h, n), dtype=vals.dtype).at[rows_kept, cols_kept].set(
            vals, unique_indices=True)

    def holonomic_jacobian_values(q, t, p):
        Q = layout.pad(q)
        vals = [jax.vmap(g.kind.jac)(Q[g.idx_i], Q[g.idx_j], g.params(p)).reshape(-1) for g in groups]
        vals = jnp.concatenate(vals) if len(vals) > 1 else vals[0]
        return vals if all_kept else vals[keep_idx]

    pattern = JacobianPattern(rows_kept, cols_kept, (m_h, n))
    return holonomic, holonomic_jacobian, holonomic_jacobian_values, pattern


def _reaction_function(spec, members, layout):
    bi, bj = layout.index[spec.body_i], layout.index[spec.body_j]
    kind = members[0].kind
    point_key = kind.point_key

    def reaction(q, lam, p):
        Q = layout.pad(q)
        qi, qj = Q[bi], Q[bj]
        gen = jnp.zeros((3,), dtype=Q.dtype)
        for m in members:
            Ji = m.kind.jac(qi, qj, m.params(p))[:, :3]
            gen = gen - Ji.T @ lam[np.array(m.rows)]
        F, n = gen[:2], gen[2]
        if point_key is None:
            return F, n
        return F, n - cross(rotate(qi[2], p[spec.name][point_key]), F)

    return reaction


class _ElementGroup:
    def __init__(self, kind, specs, layout):
        self.kind = kind
        self.specs = specs
        self.keys = _ELEMENT_KEYS[kind]
        self.idx_i = np.array([layout.index[e.body_i] for e in specs], dtype=np.int32)
        self.idx_j = np.array([layout.index[e.body_j] for e in specs], dtype=np.int32)
        self.potential, self.dissipation = _ELEMENT_ENERGY[kind]

    def params(self, p):
        return _stack([{k: p[e.name][k] for k in self.keys} for e in self.specs])


def _force_functions(mech, layout):
    bodies = layout.bodies
    nb = layout.nb
    groups = {}
    for e in mech._elements:
        if e.kind in _ELEMENT_KEYS:
            groups.setdefault(e.kind, []).append(e)
    egroups = [_ElementGroup(k, es, layout) for k, es in groups.items()]
    applied = [e for e in mech._elements if e.fn is not None]

    def mass_diagonal(p):
        m = jnp.stack([p[b]["mass"] for b in bodies])
        J = jnp.stack([p[b]["inertia"] for b in bodies])
        return jnp.stack([m, m, J], axis=1).reshape(-1)

    def potential(q, t, p):
        Q = layout.pad(q)
        m = jnp.stack([p[b]["mass"] for b in bodies])
        V = -jnp.sum(m * (Q[:nb, :2] @ p["gravity"]))
        for g in egroups:
            V = V + jnp.sum(jax.vmap(g.potential)(_rows(Q, g.idx_i), _rows(Q, g.idx_j), g.params(p)))
        return V

    def dissipation(q, qd, t, p):
        Q, W = layout.pad(q), layout.pad(qd)
        D = jnp.zeros((), dtype=Q.dtype)
        for g in egroups:
            D = D + jnp.sum(jax.vmap(g.dissipation)(_rows(Q, g.idx_i), _rows(Q, g.idx_j), _rows(W, g.idx_i),
                                                    _rows(W, g.idx_j), g.params(p)))
        return D

    def forces(q, qd, t, p):
        Q, W = layout.pad(q), layout.pad(qd)
        # Each body's generalized force (Fx, Fy, torque) summed from its elements' terms
        # and stacked: no scatter (`.at[].add`), which XLA's CPU backend cannot compile
        # into a single-kernel loop (`mbdjax._numerics.xla_cpu`). Row nb is the ground's, dropped.
        terms = [[] for _ in range(nb + 1)]
        e_z = jnp.array([0.0, 0.0, 1.0], dtype=Q.dtype)
        for e in applied:
            i = layout.index[e.body_i]
            ep = p.get(e.name, {})
            if e.kind == "spring_damper":
                j = layout.index[e.body_j]
                length, rate, u = fe.spring_state(Q[i], Q[j], W[i], W[j], ep)
                F = jnp.asarray(e.fn(length, rate, t, p), dtype=float).reshape(())
                Gi, Gj = fe.tension_forces(Q[i], Q[j], u, F, ep)
                terms[i].append(Gi)
                terms[j].append(Gj)
            elif e.kind == "rotational_spring_damper":
                j = layout.index[e.body_j]
                tau = jnp.asarray(e.fn(Q[j, 2] - Q[i, 2], W[j, 2] - W[i, 2], t, p), dtype=float).reshape(())
                terms[i].append(tau * e_z)
                terms[j].append(-tau * e_z)
            elif e.kind == "force":
                F = jnp.asarray(e.fn(q, qd, t, p), dtype=float).reshape(2)
                terms[i].append(fe.point_force(Q[i], F, ep["point"]))
            else:  # torque
                terms[i].append(jnp.asarray(e.fn(q, qd, t, p), dtype=float).reshape(()) * e_z)
        zero = jnp.zeros(3, dtype=Q.dtype)
        G = jnp.stack([functools.reduce(jnp.add, rows) if rows else zero for rows in terms[:nb]])
        return G.reshape(-1)

    return mass_diagonal, potential, (dissipation if egroups else None), (forces if applied else None)


def _rows(X, idx):
    """`X[idx]` for a static index array, as static row slices stacked: the gradient of
    a gather is a scatter, which XLA's CPU backend cannot compile into a single-kernel
    loop (`mbdjax._numerics.xla_cpu`); that of a slice is a pad. Used where the right-hand side
    differentiates (potential and dissipation of the force elements)."""
    return jnp.stack([X[int(k)] for k in idx])


def default_params(mech):
    """The params pytree of a mechanism, named after its parts."""
    params = {"gravity": device_array(mech._gravity)}
    for name, mass, inertia in mech._bodies:
        params[name] = {"mass": device_array(mass), "inertia": device_array(inertia)}
    for part in list(mech._joints) + list(mech._elements):
        if part.params:
            params[part.name] = {k: device_array(v) for k, v in part.params.items()}
    return params


def _check_user_functions(mech, params, layout):
    """Evaluate each user function once; shape or evaluation problems name the part."""
    problems = []
    q = sample_point(layout.n)
    qd = sample_point(layout.n, scale=0.2, phase=0.4)
    t = device_array(0.1)

    def run(label, fn, args, shape, unit):
        problem = call_problem(label, fn, args, shape, unit)
        if problem:
            problems.append(problem)

    for j in mech._joints:
        if j.drive is not None:
            run(f"{j.kind} {j.name!r}: f(t, p)", j.drive, (t, params), (), "a scalar")
    for e in mech._elements:
        if e.fn is None:
            continue
        if e.kind == "spring_damper":
            run(f"spring_damper {e.name!r}: actuator(l, ldot, t, p)", e.fn,
                (jnp.asarray(0.3), jnp.asarray(0.1), t, params), (), "a scalar force")
        elif e.kind == "rotational_spring_damper":
            run(f"rotational_spring_damper {e.name!r}: actuator(theta, thetadot, t, p)", e.fn,
                (jnp.asarray(0.3), jnp.asarray(0.1), t, params), (), "a scalar torque")
        elif e.kind == "force":
            run(f"force {e.name!r}: f(q, qd, t, p)", e.fn, (q, qd, t, params), (2,), "a global force")
        else:
            run(f"torque {e.name!r}: f(q, qd, t, p)", e.fn, (q, qd, t, params), (), "a scalar torque")
    return problems


def _jit(fn):
    return None if fn is None else jax.jit(fn)


def compile_mechanism(mech, validate_at=None):
    """`Model` of a validated mechanism (see `Mechanism.build`)."""
    layout = _Layout(mech.bodies)
    params = default_params(mech)
    problems = _check_user_functions(mech, params, layout)
    if problems:
        raise ModelError(problems)
    names, groups, by_joint = _joint_tables(mech, layout)
    mass_diagonal, potential, dissipation, forces = _force_functions(mech, layout)
    holonomic = holonomic_jacobian = jacobian_values = pattern = reactions = None
    if names:
        holonomic, holonomic_jacobian, jacobian_values, pattern = _holonomic_functions(layout, groups, len(names))
        reactions = {s.name: _reaction_function(s, by_joint[s.name], layout) for s in mech._joints}
    row_of = {}
    for s in mech._joints:
        row_of[s.name] = tuple(names[r] for m in by_joint[s.name] for r in m.rows)
    metadata = {
        "front_end": "planar",
        "bodies": layout.bodies,
        "body_coordinates": {b: (3 * k, 3 * k + 1, 3 * k + 2) for k, b in enumerate(layout.bodies)},
        "joints": {s.name: {"kind": s.kind, "body_i": s.body_i, "body_j": s.body_j, "rows": row_of[s.name]}
                   for s in mech._joints},
        "elements": {e.name: {"kind": e.kind, "body_i": e.body_i, "body_j": e.body_j} for e in mech._elements},
        "reaction_convention": "force (global axes) and torque about the joint point, acting on body_i",
    }
    # Each function is jitted on its own: under `simulate` the inner jits are inlined,
    # and eager calls (the Model's build-time checks, position analysis) run one
    # compiled kernel instead of dispatching (and compiling) every primitive.
    return Model(
        mech.coordinates,
        mass_diagonal=_jit(mass_diagonal),
        potential=_jit(potential),
        dissipation=_jit(dissipation),
        forces=_jit(forces),
        holonomic=_jit(holonomic),
        holonomic_jacobian=_jit(holonomic_jacobian),
        jacobian_pattern=pattern,
        holonomic_jacobian_values=_jit(jacobian_values),
        constraint_names=names or None,
        params=params,
        reactions=reactions,
        metadata=metadata,
        scene=_scene(mech, layout),
        coordinate_units=[{"x": "m", "y": "m", "phi": "rad"}.get(c.rpartition(".")[2]) for c in mech.coordinates],
        validate_at=validate_at,
        param_bounds=_bounds(mech, layout),
    )


_SYMBOLS = {"revolute": "pin", "translational": "slider", "distance": "link", "drive_distance": "link",
            "spring_damper": "coil"}  # how each part is drawn (`mbdjax._scene.ScenePart`)


def _scene(mech, layout):
    """The `mbdjax._scene.Scene` of the mechanism: body frames `(x, y)` and `A(φ)`."""
    nb = layout.nb

    def frames(q):
        qb = q.reshape(nb, 3)
        return qb[:, :2], jax.vmap(rotation)(qb[:, 2])

    return Scene(
        dimension=2, bodies=layout.bodies, frames=frames,
        joints=tuple(ScenePart(s.name, _SYMBOLS.get(s.kind, ""), s.body_i, s.body_j) for s in mech._joints),
        elements=tuple(ScenePart(e.name, _SYMBOLS.get(e.kind, ""), e.body_i, e.body_j or "ground")
                       for e in mech._elements),
        up=up_from_gravity(mech._gravity, (0.0, 1.0)),
    )


def _bounds(mech, layout):
    """The admissible values of the mechanism's physical parameters (`Model(param_bounds=)`)."""
    out = {}
    for b in layout.bodies:
        out[f"{b}.mass"] = ("nonnegative", f"mass of body {b!r}, kg")
        out[f"{b}.inertia"] = ("nonnegative", f"polar moment of inertia of body {b!r}, kg·m²")
    for e in mech._elements:
        if e.kind == "spring_damper":
            out.update(spring_damper_bounds(e.name))
        elif e.kind == "rotational_spring_damper":
            out.update({f"{e.name}.k": ("nonnegative", f"stiffness of {e.name!r}, N·m/rad"),
                        f"{e.name}.c": ("nonnegative", f"damping of {e.name!r}, N·m·s/rad")})
    return out
