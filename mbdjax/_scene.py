"""What a front end knows of a model's shape, recorded for drawing it (`Model.scene`).

The planar and spatial `Mechanism` builders record their bodies, joints, force
elements and rolling contacts here. The record holds structure only: every number
(a joint's points, a spring's stiffness, a disk's radius) stays in the parameters,
under the part's name, so a drawing made from a fitted model's trajectory shows the
fitted geometry. `mbdjax.plotting.animate` and `mbdjax.plotting.viewer` read it.

Conventions of the parameters a drawing reads (those of the front ends):

- a joint or spring-damper between bodies `i` and `j`: `p[name]["point_i"]`,
  `p[name]["point_j"]` in the body frames (the global frame for ground);
  `p[name]["axis_i"]` for joints with an axis;
- a spring-damper: `p[name]["k"]`, `p[name]["c"]`;
- a rolling contact: `p[name]["radius"]`, `["plane_point"]`, `["plane_normal"]`,
  and `["axis"]` (disk) or `["centre"]` (sphere).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

GROUND = "ground"


@dataclasses.dataclass(frozen=True)
class ScenePart:
    """One joint, force element or contact: its name (also the key of its numbers in
    the parameters), how it is drawn and the bodies it connects (`"ground"` for the
    fixed frame; `body_j` None for a contact).

    `symbol`, chosen by the front end from the part's kind:

    - `"pin"`: a circle at `point_i` (a planar revolute joint);
    - `"slider"`: a box at `point_j` on a guide along `axis_i` of body i;
    - `"link"`: a line from `point_i` to `point_j` (a distance constraint);
    - `"ball"`: a ball at `point_i` joined by sticks to both mass centres (a spatial joint);
    - `"coil"`: a zigzag (stiffness `k`) and/or a piston (damping `c`) between the points;
    - `"disk"`, `"sphere"`: the solid of a rolling contact (radius, axis or centre);
    - `""`: nothing drawn (drivers, applied loads).
    """

    name: str
    symbol: str
    body_i: str
    body_j: str | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class Scene:
    """The shape of a mechanism as its front end knows it.

    Attributes:
        dimension: 2 (planar: x right, y up) or 3 (spatial).
        bodies: the moving bodies, in coordinate order.
        frames: `fn(q (n,)) -> (r (B, d), R (B, d, d))`: the position of each body's
            frame origin (its mass centre in both front ends) and the rotation from
            body to global components, `d = dimension`, bodies in `bodies` order.
        joints, elements, contacts: `ScenePart`s, in the order they were added.
        up: the global "up" direction for views (opposite to gravity where there is
            gravity), `(d,)`.
        inertia: `fn(p, body) -> (m, J (3, 3))` for a spatial scene (its bodies are
            drawn as their inertia-equivalent boxes), None for a planar one.

    Example:

        >>> from mbdjax import models
        >>> scene = models.slider_crank().model.scene
        >>> scene.dimension, scene.bodies, [j.symbol for j in scene.joints]
        (2, ('crank', 'rod', 'slider'), ['pin', 'pin', 'pin', 'slider', ''])
    """

    dimension: int
    bodies: tuple[str, ...]
    frames: Callable
    joints: tuple[ScenePart, ...] = ()
    elements: tuple[ScenePart, ...] = ()
    contacts: tuple[ScenePart, ...] = ()
    up: tuple[float, ...] = (0.0, 1.0)
    inertia: Callable | None = None


def up_from_gravity(gravity, default):
    """The unit vector opposite to `gravity` (a sequence of floats), or `default` where
    gravity is zero."""
    norm = sum(float(g) ** 2 for g in gravity) ** 0.5
    if norm == 0.0:
        return tuple(default)
    return tuple(-float(g) / norm + 0.0 for g in gravity)  # + 0.0: no negative zeros
