"""Planar joints and drivers: their constraint rows in local coordinates (Haug ch. 3).

Every joint couples two bodies `i` and `j` (either may be ground) and is written as a
function of the six local coordinates `q_i = (x_i, y_i, φ_i)`, `q_j`, its own
parameters `jp` and, for drivers, the driving value `f = f(t, p)`:

    local(q_i, q_j, jp, f) -> (r,)

With `d = r_j + A_j s'_j − r_i − A_i s'_i` (the vector from point P on body i to point
Q on body j):

- revolute (Haug §3.3.1, eq. 3.3.10):      `−d = r_i + A_i s'_i − r_j − A_j s'_j = 0`
- translational (Haug §3.3.3):             `(A_i R v'_i)·d = 0`,  `φ_j − φ_i − angle = 0`
- distance (Haug §3.3.2, eq. 3.3.8):       `(dᵀd − length²)/2 = 0`
- fix (absolute constraints, Haug §3.2):   `q_k − value_k = 0`
- drive_angle (Haug §3.5.2):               `φ_j − φ_i − f(t, p) = 0`
- drive_distance (Haug §3.5.3):            `(dᵀd − f(t, p)²)/2 = 0`

The functions are pure JAX and are vmapped over all joints of one kind. Each kind
also has its Jacobian block `∂Φ_k/∂(q_i, q_j)`, shape `(r, 6)`, written out
analytically with `∂(A s')/∂φ = R A s'` and `∂(R A v')/∂φ = −A v'` (Haug §3.3); the
tests check every block against `jax.jacfwd` of the rows.

References: E. J. Haug, *Computer-Aided Kinematics and Dynamics of Mechanical
Systems*, ch. 3.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp

from ._geometry import perp, point, rotate


@dataclasses.dataclass(frozen=True, eq=False)
class JointSpec:
    """One joint or driver as the user described it (validated at build)."""

    name: str
    kind: str
    body_i: Any
    body_j: Any
    params: dict  # numeric defaults, written into params[name]
    drive: Callable | None = None
    coordinates: tuple = ()  # fix only: which of ("x", "y", "phi")


def _d(qi, qj, jp):
    return point(qj, jp["point_j"]) - point(qi, jp["point_i"])


def _revolute(qi, qj, jp, f):
    return -_d(qi, qj, jp)


def _translational(qi, qj, jp, f):
    n_i = perp(rotate(qi[2], jp["axis_i"]))
    return jnp.stack([jnp.dot(n_i, _d(qi, qj, jp)), qj[2] - qi[2] - jp["angle"]])


def _distance(qi, qj, jp, f):
    d = _d(qi, qj, jp)
    return jnp.stack([0.5 * (jnp.dot(d, d) - jp["length"] ** 2)])


def _fix(qi, qj, jp, f):
    return jnp.stack([jnp.dot(jp["select"], qi) - jp["value"]])


def _drive_angle(qi, qj, jp, f):
    return jnp.stack([qj[2] - qi[2] - f])


def _drive_distance(qi, qj, jp, f):
    d = _d(qi, qj, jp)
    return jnp.stack([0.5 * (jnp.dot(d, d) - f**2)])


# ------------------------------------------------------- analytic Jacobian blocks
def _zero():
    return jnp.zeros((), dtype=float)


def _one():
    return jnp.ones((), dtype=float)


def _lever(qb, s):
    """`R A(φ) s'`: the derivative of the point `r + A s'` with respect to `φ`."""
    return perp(rotate(qb[2], s))


def _revolute_jac(qi, qj, jp):
    bi, bj = _lever(qi, jp["point_i"]), _lever(qj, jp["point_j"])
    o, z = _one(), _zero()
    return jnp.stack([
        jnp.stack([o, z, bi[0], -o, z, -bj[0]]),
        jnp.stack([z, o, bi[1], z, -o, -bj[1]]),
    ])


def _translational_jac(qi, qj, jp):
    d = _d(qi, qj, jp)
    Av = rotate(qi[2], jp["axis_i"])
    n_i = perp(Av)
    bi, bj = _lever(qi, jp["point_i"]), _lever(qj, jp["point_j"])
    o, z = _one(), _zero()
    return jnp.stack([
        jnp.stack([-n_i[0], -n_i[1], -jnp.dot(Av, d) - jnp.dot(n_i, bi), n_i[0], n_i[1], jnp.dot(n_i, bj)]),
        jnp.stack([z, z, -o, z, z, o]),
    ])


def _distance_jac(qi, qj, jp):
    d = _d(qi, qj, jp)
    bi, bj = _lever(qi, jp["point_i"]), _lever(qj, jp["point_j"])
    return jnp.stack([jnp.stack([-d[0], -d[1], -jnp.dot(d, bi), d[0], d[1], jnp.dot(d, bj)])])


def _fix_jac(qi, qj, jp):
    return jnp.concatenate([jp["select"], jnp.zeros((3,), dtype=float)])[None, :]


def _angle_jac(qi, qj, jp):
    o, z = _one(), _zero()
    return jnp.stack([jnp.stack([z, z, -o, z, z, o])])


@dataclasses.dataclass(frozen=True)
class JointKind:
    """Static description of a joint type.

    suffixes: row-name suffixes (`"<name>" + suffix`), one per row.
    keys: the entries of `params[name]` the rows read.
    local: the row function `(q_i, q_j, jp, f) -> (r,)`.
    jac: its Jacobian block `(q_i, q_j, jp) -> (r, 6)` (columns `q_i` then `q_j`).
    driven: whether the rows take a driving value `f(t, p)`.
    point_key: the point about which the reaction torque is reported (None: centroid).
    """

    suffixes: tuple
    keys: tuple
    local: Callable
    jac: Callable
    driven: bool = False
    point_key: str | None = "point_i"

    @property
    def rows(self) -> int:
        return len(self.suffixes)


KINDS = {
    "revolute": JointKind((".x", ".y"), ("point_i", "point_j"), _revolute, _revolute_jac),
    "translational": JointKind((".perp", ".rot"), ("point_i", "point_j", "axis_i", "angle"), _translational,
                               _translational_jac),
    "distance": JointKind(("",), ("point_i", "point_j", "length"), _distance, _distance_jac),
    "drive_angle": JointKind(("",), (), _drive_angle, _angle_jac, driven=True, point_key=None),
    "drive_distance": JointKind(("",), ("point_i", "point_j"), _drive_distance, _distance_jac, driven=True),
    # one row per fixed coordinate; `select` (a one-hot constant) and `value` per row
    "fix": JointKind(("",), ("select", "value"), _fix, _fix_jac, point_key=None),
}

COORDINATE_AXES = ("x", "y", "phi")
