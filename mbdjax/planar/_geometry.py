"""Planar kinematics of a point on a body (Haug §2.4, §3.1).

A body's configuration is `q_b = (x, y, φ)`: the global position of its centroid and
the angle of its local x axis from the global x axis, counter-clockwise. A point
with local coordinates `s'` is at `r + A(φ) s'` with

    A(φ) = [[cos φ, −sin φ], [sin φ, cos φ]],

and `R = A(π/2)` rotates a vector by +90°, so that `dA/dφ = R A`.
"""

from __future__ import annotations

import jax.numpy as jnp


def rotation(phi):
    """`A(φ)`, shape `(2, 2)`."""
    c, s = jnp.cos(phi), jnp.sin(phi)
    return jnp.stack([jnp.stack([c, -s]), jnp.stack([s, c])])


def rotate(phi, v):
    """`A(φ) v` for a `(2,)` vector."""
    c, s = jnp.cos(phi), jnp.sin(phi)
    return jnp.stack([c * v[0] - s * v[1], s * v[0] + c * v[1]])


def perp(v):
    """`R v`: `v` rotated by +90°."""
    return jnp.stack([-v[1], v[0]])


def cross(a, b):
    """Planar cross product `a × b = a_x b_y − a_y b_x` (a scalar)."""
    return a[0] * b[1] - a[1] * b[0]


def point(qb, s):
    """Global position `r + A(φ) s'` of the local point `s` on a body at `qb = (x, y, φ)`."""
    return qb[:2] + rotate(qb[2], s)


def point_velocity(qb, qbd, s):
    """Global velocity `ṙ + φ̇ R A(φ) s'` of the local point `s`."""
    return qbd[:2] + qbd[2] * perp(rotate(qb[2], s))


def safe_norm(d):
    """`|d|` with a zero (not NaN) derivative at `d = 0`."""
    dd = jnp.dot(d, d)
    pos = dd > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, dd, 1.0)), 0.0)
