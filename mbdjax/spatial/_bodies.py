"""Spatial body kinematics: where each body's coordinates sit in `q` and what they mean.

A body has its centre-of-mass position `r = (x, y, z)` (global, m) followed by its
orientation: 3-1-3 Euler angles `(phi, theta, psi)` or Euler parameters
`(e0, e1, e2, e3)`. `R` maps body components to global ones; `ω` is the global and
`ω' = Rᵀ ω` the body-frame angular velocity (THEORY §6).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax.numpy as jnp

from . import _rotations as rot

ORIENTATIONS = {"euler313": ("phi", "theta", "psi"), "quaternion": ("e0", "e1", "e2", "e3")}
POSITION = ("x", "y", "z")
GROUND = "ground"


@dataclasses.dataclass(frozen=True)
class BodySlot:
    """A body's name, orientation kind and first index in `q`."""

    name: str
    orientation: str
    start: int

    @property
    def size(self) -> int:
        return 3 + len(ORIENTATIONS[self.orientation])

    @property
    def coordinates(self) -> tuple[str, ...]:
        return tuple(f"{self.name}.{c}" for c in POSITION + ORIENTATIONS[self.orientation])

    def split(self, x):
        """`(position (3,), orientation (3,) or (4,))` entries of a coordinate-sized vector."""
        s = self.start
        return x[s:s + 3], x[s + 3:s + self.size]


@dataclasses.dataclass(frozen=True)
class Pose:
    """Position `r (3,)`, rotation `R (3, 3)`, velocity `v (3,)`, angular velocity
    `w (3,)` (global) and `w_body (3,)` of one body; velocities zero when only the
    configuration was asked for."""

    r: jnp.ndarray
    R: jnp.ndarray
    v: jnp.ndarray
    w: jnp.ndarray
    w_body: jnp.ndarray

    def point(self, s):
        """Global position of the body point with body components `s (3,)`."""
        return self.r + self.R @ s

    def point_velocity(self, s):
        """Global velocity of the body point `s`: `v + ω × (R s)`."""
        return self.v + jnp.cross(self.w, self.R @ s)

    def axis(self, a):
        """Global components of the body direction `a (3,)`."""
        return self.R @ a


def rotation(orientation, o):
    """`R` from the orientation coordinates `o` of kind `orientation`."""
    if orientation == "euler313":
        return rot.euler313_matrix(o)
    return rot.quaternion_matrix(o)


def rate_matrix(orientation, o, frame):
    """`(3, 3)` or `(3, 4)` map from orientation rates to `ω` (`frame="global"`) or `ω'`."""
    if orientation == "euler313":
        return rot.euler313_rate_matrix(o, frame=frame)
    return rot.quaternion_rate_matrix(o, frame=frame)


def pose(slot, q, qd=None):
    """The `Pose` of the body in `slot` (ground when `slot` is None)."""
    if slot is None:
        z = jnp.zeros(3, dtype=q.dtype)
        return Pose(z, jnp.eye(3, dtype=q.dtype), z, z, z)
    r, o = slot.split(q)
    R = rotation(slot.orientation, o)
    if qd is None:
        z = jnp.zeros(3, dtype=q.dtype)
        return Pose(r, R, z, z, z)
    v, od = slot.split(qd)
    w_body = rate_matrix(slot.orientation, o, "body") @ od
    return Pose(r, R, v, R @ w_body, w_body)


@dataclasses.dataclass(frozen=True, eq=False)
class RigidBodies:
    """The rigid bodies of a model built by `spatial.Mechanism` (`Model.bodies`), as the
    body-level equations (`mbdjax.Greenwood`) read them.

    Attributes:
        names: the bodies, in declaration order (ground excluded).
        poses: `fn(q, qd=None) -> {body: Pose}` (ground included).

    Example:

        >>> from mbdjax import models
        >>> ex = models.heavy_top()
        >>> table = ex.model.bodies
        >>> table.names, table.poses(ex.q0, ex.qd0)["top"].w_body.shape, table.inertia(ex.model.params, "top")[1].shape
        (('top',), (3,), (3, 3))
    """

    names: tuple
    poses: Callable

    def inertia(self, p, body):
        """`(m, J (3, 3))`: the mass and the inertia tensor about the mass centre in
        body axes of `body` under parameters `p`."""
        return p[body]["mass"], p[body]["inertia"]
