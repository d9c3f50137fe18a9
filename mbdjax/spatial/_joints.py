"""Spatial joints as holonomic constraint rows built from Haug's basic constraints.

With `P_i = r_i + R_i s'_i`, `d = P_j − P_i` and body directions `a'`, the joints are
made of the spherical constraint `P_i − P_j = 0` (3 rows), the dot-1 constraint
`(R_i u'_i)·(R_j v'_j) = 0` (two directions stay perpendicular) and the dot-2
constraint `(R_i u'_i)·d = 0` (a direction stays perpendicular to the line between
the points). `f', g'` are two unit directions perpendicular to a joint axis `a'`,
chosen by `perpendicular_pair`.

References: E. J. Haug, *Computer-Aided Kinematics and Dynamics of Mechanical
Systems*, §9.2–9.4 (basic spatial constraints and joints).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax.numpy as jnp


def _unit(a):
    return a / jnp.linalg.norm(a)


def perpendicular_pair(a):
    """Unit `(f, g)` with `(f, g, â)` right-handed and orthonormal, `â = a/|a|`.

    `f` is the component of the coordinate axis least aligned with `a` (x unless `a`
    is within 25° of x, then y) orthogonal to `a`, normalized; `g = â × f`.

    Example:

        >>> import jax.numpy as jnp
        >>> from mbdjax import spatial as sp
        >>> f, g = sp.perpendicular_pair(jnp.array([0.0, 0.0, 2.0]))
        >>> [float(v) for v in f], [float(v) for v in g]
        ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    """
    a = _unit(a)
    helper = jnp.where(jnp.abs(a[0]) < 0.9, jnp.array([1.0, 0.0, 0.0]), jnp.array([0.0, 1.0, 0.0]))
    f = _unit(helper - (helper @ a) * a)
    return f, jnp.cross(a, f)


def _spherical(pi, pj, prm):
    return pi.point(prm["point_i"]) - pj.point(prm["point_j"])


def _aligned(pi, pj, prm):
    """Two dot-1 rows: the axis of j stays along the axis of i."""
    f, g = perpendicular_pair(prm["axis_i"])
    aj = pj.axis(_unit(prm["axis_j"]))
    return jnp.stack([pi.axis(f) @ aj, pi.axis(g) @ aj])


def _on_axis(pi, pj, prm):
    """Two dot-2 rows: the point of j stays on the axis of i through the point of i."""
    f, g = perpendicular_pair(prm["axis_i"])
    d = pj.point(prm["point_j"]) - pi.point(prm["point_i"])
    return jnp.stack([pi.axis(f) @ d, pi.axis(g) @ d])


def _no_twist(pi, pj, prm):
    """One dot-1 row: no rotation of j about the common axis (f_i ⟂ g_j)."""
    f_i, _ = perpendicular_pair(prm["axis_i"])
    _, g_j = perpendicular_pair(prm["axis_j"])
    return jnp.stack([pi.axis(f_i) @ pj.axis(g_j)])


def _spherical_rows(pi, pj, prm):
    return _spherical(pi, pj, prm)


def _revolute(pi, pj, prm):
    return jnp.concatenate([_spherical(pi, pj, prm), _aligned(pi, pj, prm)])


def _universal(pi, pj, prm):
    cross = pi.axis(_unit(prm["axis_i"])) @ pj.axis(_unit(prm["axis_j"]))
    return jnp.concatenate([_spherical(pi, pj, prm), jnp.stack([cross])])


def _cylindrical(pi, pj, prm):
    return jnp.concatenate([_aligned(pi, pj, prm), _on_axis(pi, pj, prm)])


def _prismatic(pi, pj, prm):
    return jnp.concatenate([_aligned(pi, pj, prm), _on_axis(pi, pj, prm), _no_twist(pi, pj, prm)])


def _fixed(pi, pj, prm):
    # R_j = R_i C: the body axes of i and the axes of j rotated back by C stay equal,
    # three dot-1 rows (e_y·e_z, e_z·e_x, e_x·e_y) near that relative orientation.
    Ei = pi.R
    Ej = pj.R @ prm["rotation"].T
    rows = jnp.stack([Ei[:, 1] @ Ej[:, 2], Ei[:, 2] @ Ej[:, 0], Ei[:, 0] @ Ej[:, 1]])
    return jnp.concatenate([_spherical(pi, pj, prm), rows])


@dataclasses.dataclass(frozen=True)
class JointKind:
    """Row suffixes, parameter keys and the row function `fn(pose_i, pose_j, prm)`."""

    rows: tuple[str, ...]
    keys: tuple[str, ...]
    fn: Callable


_XYZ = (".x", ".y", ".z")
KINDS = {
    "spherical": JointKind(_XYZ, ("point_i", "point_j"), _spherical_rows),
    "revolute": JointKind(_XYZ + (".axis1", ".axis2"), ("point_i", "point_j", "axis_i", "axis_j"), _revolute),
    "universal": JointKind(_XYZ + (".cross",), ("point_i", "point_j", "axis_i", "axis_j"), _universal),
    "cylindrical": JointKind((".axis1", ".axis2", ".offset1", ".offset2"),
                             ("point_i", "point_j", "axis_i", "axis_j"), _cylindrical),
    "prismatic": JointKind((".axis1", ".axis2", ".offset1", ".offset2", ".twist"),
                           ("point_i", "point_j", "axis_i", "axis_j"), _prismatic),
    "fixed": JointKind(_XYZ + (".rx", ".ry", ".rz"), ("point_i", "point_j", "rotation"), _fixed),
}


@dataclasses.dataclass(frozen=True)
class JointSpec:
    """One joint as described by the user (numbers become `params[name]`)."""

    name: str
    kind: str
    body_i: str
    body_j: str
    params: dict
