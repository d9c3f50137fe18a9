"""A trajectory's mechanism as drawing items over time (what `animate` rasterizes and
`viewer` sends to the browser).

Everything comes from the model's `Scene` (`mbdjax._scene`) and the trajectory's
parameters; the user adds nothing unless they want to:

- a planar body is the rounded outline through its joint and attachment points
  (a bar for two points, a disk for one), in the body frame;
- ground supports are hatched; revolute joints are circles, sliders are boxes on a
  hatched guide; springs are zigzags and dampers pistons between their points;
- a spatial body is the box with its mass and principal moments of inertia (sides
  `a² = 6(J₂ + J₃ − J₁)/m`, ...), a rolling disk a thin cylinder, a rolling sphere
  a ball; spatial joints are balls joined to the mass centres by sticks; a rolling
  contact's plane is a grid, and its contact point is traced by default.

All vertices are global coordinates in metres, `(frames, vertices, 3)` (z = 0 for
planar models); items index contiguous vertex ranges, so the topology is fixed and
only the vertices move.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._errors import MbdjaxError

BODY_COLOURS = ("#4878cf", "#d65f5f", "#6acc65", "#b47cc7", "#c4ad66", "#77bedb", "#e39e54", "#8c8c8c")
INK = "#222222"
GROUND_INK = "#555555"
SPRING_INK = "#2a7f62"
DAMPER_INK = "#7a4d1c"
PIN_FILL = "#ffffff"
TRACE_INK = "#e07b00"
GRID_INK = "#c8c8c8"


@dataclasses.dataclass(frozen=True)
class Item:
    """One drawing item over vertices `[start, stop)`: a filled polygon (`"fill"`), a
    polyline (`"line"`, `closed` for a loop) or a circle about vertex `start`
    (`"dot"`, `radius` in metres). `width` is a stroke width in pixels; `shade`
    lights a spatial face by its normal."""

    kind: str
    start: int
    stop: int
    fill: str | None = None
    stroke: str | None = None
    width: float = 1.0
    closed: bool = False
    radius: float = 0.0
    shade: bool = False


@dataclasses.dataclass(frozen=True, eq=False)
class Drawing:
    """A mechanism's drawing over `F` frames.

    Attributes:
        dimension: 2 or 3.
        times: `(F,)` simulation times (s).
        vertices: `(F, V, 3)` global positions (m).
        items: the `Item`s, in drawing order for a planar scene.
        marks: `{name: vertex}`: the vertex of each joint's point (on body i), of
            each rolling contact's contact point and of each body's frame origin,
            for tests and `trace=`.
        trace: the traced vertex, or None.
        up: `(3,)` the view's up direction.
    """

    dimension: int
    times: np.ndarray
    vertices: np.ndarray
    items: tuple
    marks: dict
    trace: int | None
    up: np.ndarray

    @property
    def bounds(self):
        """`(2, 3)`: the least and greatest vertex coordinates over all frames."""
        v = self.vertices.reshape(-1, 3)
        return np.stack([v.min(0), v.max(0)])


class _Sheet:
    """Collects vertex blocks `(F, k, 3)` and the items that draw them."""

    def __init__(self, frames):
        self.frames, self.blocks, self.items, self.count = frames, [], [], 0

    def add(self, verts, kind, **style):
        verts = np.asarray(verts, dtype=float)
        if verts.ndim == 2:
            verts = verts[None]
        verts = np.broadcast_to(verts, (self.frames,) + verts.shape[1:])   # ground: the same in every frame
        if verts.shape[-1] == 2:
            verts = np.concatenate([verts, np.zeros(verts.shape[:-1] + (1,))], -1)
        start = self.count
        self.blocks.append(verts)
        self.count += verts.shape[1]
        if kind is not None:
            self.items.append(Item(kind, start, self.count, **style))
        return start

    def vertices(self):
        return np.concatenate(self.blocks, axis=1) if self.blocks else np.zeros((self.frames, 0, 3))


def _numbers(tree):
    import jax   # on first use: the drawing's frames are computed by the model's JAX functions

    return jax.tree_util.tree_map(np.asarray, tree)


def _interpolate(ts, xs, times):
    """`xs (K, n)` at `ts (K,)` linearly interpolated to `times`, column by column."""
    return np.stack([np.interp(times, ts, xs[:, i]) for i in range(xs.shape[1])], -1)


def scene_of(traj):
    """The trajectory's `Scene`, or a named error saying which models have one."""
    model = getattr(traj, "model", None)
    if model is None:
        raise MbdjaxError("Drawing a trajectory needs its model: a trajectory loaded from a file has "
                          "none; load it with Trajectory.load(path, model=model).")
    if model.scene is None:
        raise MbdjaxError("This model has no geometry to draw: animations and the viewer show models "
                          "built by mbdjax.planar.Mechanism or mbdjax.spatial.Mechanism (a hand-written "
                          "Model or a network has no bodies); plot its coordinates instead "
                          "(mbdjax.plotting.plot_coordinates).")
    return model.scene


def saved_points(traj):
    """`(K,)` indices of the saved points the solve reached (finite time and state)."""
    t = np.asarray(traj.t)
    if t.ndim != 1:
        raise MbdjaxError(f"Drawing takes one trajectory; this one has times of shape {t.shape} (a batch): "
                          "simulate the member to draw on its own (mbd.simulate with its q0, qd0 and parameters).")
    ok = np.nonzero(np.isfinite(t) & np.all(np.isfinite(np.asarray(traj.q)), axis=-1))[0]
    if len(ok) == 0:
        raise MbdjaxError("The trajectory has no finite saved state to draw.")
    return ok


def reached(traj):
    """`(t (K,), q (K, n), qd (K, n))` at the saved points the solve reached."""
    ok = saved_points(traj)
    return np.asarray(traj.t)[ok], np.asarray(traj.q)[ok], np.asarray(traj.qd)[ok]


def drawing(traj, times, *, shapes=None, trace=None):
    """The `Drawing` of `traj` at `times (F,)` (states linearly interpolated between
    saved points).

    Arguments:
        shapes: optional `{body: outline}` overriding a body's default shape: planar,
            an `(k, 2)` polygon in the body frame (m); spatial, `("box", (a, b, c))`
            (side lengths along the body axes, m) or `("ball", radius)`.
        trace: draw the path of a point: a joint name (its point on body i), a body
            name (its mass centre) or `(body, local point)`; default none for planar
            scenes and the first contact point for spatial ones.
    """
    import jax   # on first use: the body frames are the front end's JAX function

    scene = scene_of(traj)
    ts, qs, qds = reached(traj)
    times = np.asarray(times, dtype=float)
    q, qd = _interpolate(ts, qs, times), _interpolate(ts, qds, times)
    p = _numbers(traj.params)
    r, R = (np.asarray(x) for x in jax.vmap(scene.frames)(q))
    if scene.dimension == 2:
        r = np.concatenate([r, np.zeros(r.shape[:-1] + (1,))], -1)
        R3 = np.zeros(R.shape[:-2] + (3, 3))
        R3[..., :2, :2], R3[..., 2, 2] = R, 1.0
        R = R3
    frames = {b: (r[:, k], R[:, k]) for k, b in enumerate(scene.bodies)}
    shapes = dict(shapes or {})
    unknown = sorted(set(shapes) - set(scene.bodies))
    if unknown:
        raise MbdjaxError(f"drawing: `shapes` names {unknown}, which are not bodies of the model; its "
                          f"bodies are {list(scene.bodies)}.")
    build = _planar if scene.dimension == 2 else _spatial
    sheet, marks = build(scene, frames, p, shapes, len(times), q, qd, traj.model)
    for b, (rb, _) in frames.items():
        marks.setdefault(b, sheet.add(rb[:, None], None))
    traced = _trace(trace, scene, frames, p, sheet, marks)
    if traced is None and trace is None and scene.contacts:
        traced = marks.get(scene.contacts[0].name)
    up = np.zeros(3)
    up[:scene.dimension] = scene.up
    return Drawing(scene.dimension, times, sheet.vertices(), tuple(sheet.items), marks, traced, up)


def _global(frames, body, s):
    """`(F, 3)` global positions of the body-frame point `s` (ground: `s` itself)."""
    s = np.zeros(3) + np.pad(np.asarray(s, dtype=float), (0, 3 - len(s)))
    if body not in frames:
        return s[None]
    rb, Rb = frames[body]
    return rb + Rb @ s


def _trace(trace, scene, frames, p, sheet, marks):
    if trace is None:
        return None
    if isinstance(trace, str):
        if trace in marks:
            return marks[trace]
        raise MbdjaxError(f"drawing: `trace` {trace!r} is neither a joint nor a body; joints "
                          f"{[j.name for j in scene.joints]}, bodies {list(scene.bodies)}.")
    body, point = trace
    if body not in frames:
        raise MbdjaxError(f"drawing: `trace` body {body!r} is not a body of the model; its bodies are "
                          f"{list(scene.bodies)}.")
    return sheet.add(_global(frames, body, point)[:, None], None)


def _size(frames, points):
    """A length for the drawing's details: a sixtieth of the scene's extent."""
    allp = np.concatenate([x.reshape(-1, 3) for x in points] + [rb for rb, _ in frames.values()])
    return max(float(np.max(np.ptp(allp, axis=0))), 1e-3) / 60.0


# ------------------------------------------------------------------ planar
def _rounded_outline(points, w, k=10):
    """The convex hull of `points (m, 2)` grown by `w`: a rounded polygon, `(K, 2)`."""
    a = np.linspace(0, 2 * np.pi, k, endpoint=False)
    ring = w * np.stack([np.cos(a), np.sin(a)], -1)
    cloud = (points[:, None, :] + ring[None]).reshape(-1, 2)
    return _hull(cloud)


def _cross2(a, b):
    return a[0] * b[1] - a[1] * b[0]


def _hull(pts):
    """Convex hull (counter-clockwise) of `pts (m, 2)` by the monotone chain."""
    pts = np.unique(np.round(pts, 12), axis=0)
    if len(pts) < 3:
        return pts

    def half(seq):
        out = []
        for pt in seq:
            while len(out) >= 2 and _cross2(out[-1] - out[-2], pt - out[-2]) <= 0:
                out.pop()
            out.append(pt)
        return out[:-1]

    return np.array(half(pts) + half(pts[::-1]))


def _hatch(base_a, base_b, down, w, count=6):
    """A hatched ground line from `base_a` to `base_b` (global 2-vectors), the hatching
    on the `down` side: a list of segments `(2, 2)`."""
    segs = [np.array([base_a, base_b])]
    along = (base_b - base_a) / max(np.linalg.norm(base_b - base_a), 1e-12)
    for s in np.linspace(0.0, 1.0, count):
        x = base_a + s * (base_b - base_a)
        segs.append(np.array([x, x + 1.6 * w * (down - along) / np.sqrt(2)]))
    return segs


def _lines(sheet, segments, **style):
    """One line item per segment."""
    for seg in segments:
        sheet.add(seg, "line", **style)


def _zigzag(a, b, w, coils=6):
    """`(F, 2·coils + 4, 3)` zigzag from `a` to `b` (each `(F, 3)`, in the plane z = 0)."""
    d = b - a
    length = np.linalg.norm(d, axis=-1, keepdims=True)
    u = d / np.maximum(length, 1e-12)
    n = np.stack([-u[:, 1], u[:, 0], np.zeros(len(u))], -1)
    lead = np.minimum(1.5 * w, 0.2 * length)
    s = np.linspace(0.0, 1.0, 2 * coils + 1)[1:-1]
    side = np.where(np.arange(len(s)) % 2 == 0, 1.0, -1.0)
    body = a[:, None] + u[:, None] * (lead + s[None, :] * (length - 2 * lead))[..., None] \
        + 1.5 * w * side[None, :, None] * n[:, None]
    return np.concatenate([a[:, None], (a + u * lead)[:, None], body, (b - u * lead)[:, None], b[:, None]], 1)


def _piston(a, b, w):
    """A damper from `a` to `b` (`(F, 3)` each) as polylines: the stub on `a`, the open
    cylinder, and the piston plate and rod to `b`."""
    d = b - a
    length = np.linalg.norm(d, axis=-1, keepdims=True)
    u = d / np.maximum(length, 1e-12)
    n = np.stack([-u[:, 1], u[:, 0], np.zeros(len(u))], -1) * 1.6 * w
    base, mouth, plate = a + 0.25 * d, a + 0.6 * d, a + 0.45 * d
    return [np.stack([a, base], 1), np.stack([mouth + n, base + n, base - n, mouth - n], 1),
            np.stack([plate + 0.8 * n, plate - 0.8 * n], 1), np.stack([plate, b], 1)]


def _planar(scene, frames, p, shapes, F, q, qd, model):
    joints, elements = scene.joints, scene.elements
    points = {b: [] for b in scene.bodies}
    for part in joints + elements:
        prm = p.get(part.name, {})
        for body, key in ((part.body_i, "point_i"), (part.body_j, "point_j")):
            if body in points and key in prm:
                points[body].append(np.asarray(prm[key], dtype=float))
    globals_ = [_global(frames, b, s) for b in points for s in points[b]]
    w = _size(frames, globals_ or [np.zeros((1, 3))])
    sheet, marks = _Sheet(F), {}
    down = -np.asarray(scene.up, dtype=float)

    # ground supports and guides, under everything else
    for j in joints:
        prm = p.get(j.name, {})
        grounded = "ground" in (j.body_i, j.body_j)
        if j.symbol == "pin" and grounded:
            at = np.asarray(prm["point_i" if j.body_i == "ground" else "point_j"], dtype=float)
            side = np.array([-down[1], down[0]])
            foot = at + 2.4 * w * down
            sheet.add(np.array([at, foot - 1.4 * w * side, foot + 1.4 * w * side]), "fill",
                      fill="#dddddd", stroke=GROUND_INK, width=1.2)
            _lines(sheet, _hatch(foot - 2.2 * w * side, foot + 2.2 * w * side, down, w),
                   stroke=GROUND_INK, width=1.2)
        elif j.symbol == "slider":
            _guide(sheet, j, prm, frames, w, down)
    for e in elements:
        prm = p.get(e.name, {})
        if e.symbol != "coil":
            continue
        a, b = _global(frames, e.body_i, prm["point_i"]), _global(frames, e.body_j, prm["point_j"])
        a, b = np.broadcast_to(a, (F, 3)), np.broadcast_to(b, (F, 3))
        for body, end in ((e.body_i, a), (e.body_j, b)):
            if body == "ground":
                at = end[0, :2]
                side = np.array([-down[1], down[0]])
                _lines(sheet, _hatch(at - 1.5 * w * side, at + 1.5 * w * side, down, w, 4),
                       stroke=GROUND_INK, width=1.2)
        k, c = float(np.asarray(prm.get("k", 0.0))), float(np.asarray(prm.get("c", 0.0)))
        d = b - a
        u = d / np.maximum(np.linalg.norm(d, axis=-1, keepdims=True), 1e-12)
        off = 2.2 * w * np.stack([-u[:, 1], u[:, 0], np.zeros(F)], -1) if (k and c) else 0.0
        if k or not c:
            sheet.add(_zigzag(a + off, b + off, w), "line", stroke=SPRING_INK, width=1.6)
        if c:
            _lines(sheet, _piston(a - off, b - off, w), stroke=DAMPER_INK, width=1.6)
        if k and c:
            for end in (a, b):
                sheet.add(np.stack([end + off, end - off], 1), "line", stroke=INK, width=1.4)

    # bodies
    for n, b in enumerate(scene.bodies):
        if b in shapes:
            outline = np.asarray(shapes[b], dtype=float)
            if outline.ndim != 2 or outline.shape[1] != 2 or len(outline) < 2:
                raise MbdjaxError(f"drawing: `shapes[{b!r}]` must be a (k, 2) outline in the body frame "
                                  f"(k ≥ 2), got shape {outline.shape}.")
        else:
            pts = np.array(points[b]) if points[b] else np.zeros((1, 2))
            if len(np.unique(np.round(pts, 9), axis=0)) == 1 and not np.allclose(pts[0], 0.0):
                pts = np.vstack([pts, np.zeros(2)])     # one point off the centroid: a bar to it
            outline = _rounded_outline(pts, 1.6 * w if len(pts) > 1 else 2.5 * w)
        rb, Rb = frames[b]
        verts = rb[:, None, :] + np.einsum("fij,kj->fki", Rb[:, :, :2], outline)
        sheet.add(verts, "fill", fill=BODY_COLOURS[n % len(BODY_COLOURS)], stroke=INK, width=1.2)

    # sliders, distance links, then pins on top
    for j in joints:
        prm = p.get(j.name, {})
        if j.symbol == "slider":
            centre = _global(frames, j.body_j, prm["point_j"])
            axis = _axis(frames, j.body_i, prm["axis_i"])
            normal = np.stack([-axis[:, 1], axis[:, 0], np.zeros(len(axis))], -1)
            corners = [(-2.8, -1.7), (2.8, -1.7), (2.8, 1.7), (-2.8, 1.7)]
            box = np.stack([centre + w * (a * axis + c * normal) for a, c in corners], 1)
            marks[j.name] = sheet.add(box, "fill", fill="#9aa5b1", stroke=INK, width=1.4)
        elif j.symbol == "link":
            a, b = _global(frames, j.body_i, prm["point_i"]), _global(frames, j.body_j, prm["point_j"])
            sheet.add(np.stack(np.broadcast_arrays(a, b), 1), "line", stroke=INK, width=2.0)
    for j in joints:
        prm = p.get(j.name, {})
        if j.symbol == "pin":
            at = np.broadcast_to(_global(frames, j.body_i, prm["point_i"]), (F, 3))
            marks[j.name] = sheet.add(at[:, None], "dot", fill=PIN_FILL, stroke=INK, width=1.4, radius=1.1 * w)
        elif "point_i" in prm and j.name not in marks:
            marks[j.name] = sheet.add(np.broadcast_to(_global(frames, j.body_i, prm["point_i"]), (F, 3))[:, None],
                                      None)
    return sheet, marks


def _axis(frames, body, a):
    """`(F, 3)` global unit direction of the body-frame direction `a`."""
    a = np.asarray(a, dtype=float)
    g = _global(frames, body, a) - _global(frames, body, np.zeros_like(a))
    return g / np.maximum(np.linalg.norm(g, axis=-1, keepdims=True), 1e-12)


def _guide(sheet, j, prm, frames, w, down):
    """A translational joint's guide on body i: a line along `axis_i` through `point_i`
    over the slider's travel, hatched on the side away from `up` when i is ground."""
    origin = _global(frames, j.body_i, prm["point_i"])
    axis = _axis(frames, j.body_i, prm["axis_i"])
    slider = _global(frames, j.body_j, prm["point_j"])
    s = np.sum((slider - origin) * axis, -1)
    lo, hi = float(np.min(s)) - 4.5 * w, float(np.max(s)) + 4.5 * w
    origin, axis = np.broadcast_to(origin, axis.shape), axis
    normal = np.stack([-axis[:, 1], axis[:, 0], np.zeros(len(axis))], -1)
    below = 1.0 if j.body_i != "ground" or float(normal[0, :2] @ down) >= 0 else -1.0
    offset = 1.7 * w * below * normal
    a, b = origin + lo * axis + offset, origin + hi * axis + offset
    sheet.add(np.stack([a, b], 1), "line", stroke=GROUND_INK, width=1.6)
    if j.body_i == "ground":
        side = normal[0, :2] * below
        _lines(sheet, _hatch(a[0, :2], b[0, :2], side, w, max(6, int((hi - lo) / (2 * w)))),
               stroke=GROUND_INK, width=1.0)


# ------------------------------------------------------------------ spatial
def _box_faces(size):
    """The 6 faces (4 corners each, body frame) of a box with sides `size (3,)`."""
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * 0.5 * size
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return [corners[list(f)] for f in quads]


def _cylinder_faces(radius, length, axis, k=28):
    """The side quads and two caps of a cylinder along the unit `axis` (body frame)."""
    axis = np.asarray(axis, dtype=float)
    axis = axis / np.linalg.norm(axis)
    e1 = np.cross(axis, [1.0, 0, 0] if abs(axis[0]) < 0.9 else [0, 1.0, 0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(axis, e1)
    a = np.linspace(0, 2 * np.pi, k, endpoint=False)
    ring = radius * (np.cos(a)[:, None] * e1 + np.sin(a)[:, None] * e2)
    top, bottom = ring + 0.5 * length * axis, ring - 0.5 * length * axis
    sides = [np.array([bottom[i], bottom[(i + 1) % k], top[(i + 1) % k], top[i]]) for i in range(k)]
    return sides + [top, bottom[::-1]]


def inertia_box(mass, J):
    """Side lengths `(3,)` and axes `(3, 3)` (columns, body frame) of the uniform box with
    mass `mass` and inertia tensor `J` about its centre: `J₁ = m(b² + c²)/12`, ...;
    sides no thinner than a twentieth of the longest."""
    moments, axes = np.linalg.eigh(np.asarray(J, dtype=float))
    mass = max(float(mass), 1e-12)
    sq = np.array([6.0 * (moments[1] + moments[2] - moments[0]), 6.0 * (moments[0] + moments[2] - moments[1]),
                   6.0 * (moments[0] + moments[1] - moments[2])]) / mass
    sides = np.sqrt(np.maximum(sq, 0.0))
    longest = max(float(sides.max()), 1e-3)
    return np.maximum(sides, longest / 20.0), axes


def _spatial(scene, frames, p, shapes, F, q, qd, model):
    import jax   # on first use: the contact points are the front end's JAX functions

    sheet, marks = _Sheet(F), {}
    contacts_of = {c.body_i: c for c in scene.contacts}
    joint_points = []
    for j in scene.joints:
        prm = p.get(j.name, {})
        if "point_i" in prm:
            joint_points.append(_global(frames, j.body_i, prm["point_i"]))
    contact_paths = {}
    for c in scene.contacts:
        kin = model.contacts.kinematics[c.name]
        point, _ = jax.vmap(lambda qk, qdk, fn=kin: fn(qk, qdk, p))(q, qd)
        contact_paths[c.name] = np.asarray(point)
    w = _size(frames, joint_points + list(contact_paths.values()) or [np.zeros((1, 3))])

    # the contact planes: a grid over the region the contacts cover
    for c in scene.contacts:
        prm = p[c.name]
        path = contact_paths[c.name]
        n = np.asarray(prm["plane_normal"], dtype=float)
        n = n / np.linalg.norm(n)
        e1 = np.cross(n, [1.0, 0, 0] if abs(n[0]) < 0.9 else [0, 1.0, 0])
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(n, e1)
        origin = np.asarray(prm["plane_point"], dtype=float)
        u, v = (path - origin) @ e1, (path - origin) @ e2
        pad = 0.3 * max(float(np.ptp(u)), float(np.ptp(v)), 20 * w)
        lines = []
        for a in np.linspace(u.min() - pad, u.max() + pad, 9):
            lines.append([origin + a * e1 + (v.min() - pad) * e2, origin + a * e1 + (v.max() + pad) * e2])
        for b in np.linspace(v.min() - pad, v.max() + pad, 9):
            lines.append([origin + (u.min() - pad) * e1 + b * e2, origin + (u.max() + pad) * e1 + b * e2])
        for seg in lines:
            sheet.add(np.array(seg), "line", stroke=GRID_INK, width=1.0)
        marks[c.name] = sheet.add(path[:, None], None)

    # bodies
    for n, b in enumerate(scene.bodies):
        rb, Rb = frames[b]
        colour = BODY_COLOURS[n % len(BODY_COLOURS)]
        faces = _solid(b, shapes.get(b), contacts_of.get(b), p, scene.inertia)
        for face in faces:
            if face is None:
                continue
            if isinstance(face, tuple):                      # a ball: (centre, radius)
                centre, radius = face
                sheet.add((rb + Rb @ centre)[:, None], "dot", fill=colour, stroke=INK, width=1.0, radius=radius)
                continue
            verts = rb[:, None, :] + np.einsum("fij,kj->fki", Rb, face)
            sheet.add(verts, "fill", fill=colour, stroke=INK, width=0.6, shade=True)

    # joints: sticks from the mass centres and balls at the joint points
    for j in scene.joints:
        prm = p.get(j.name, {})
        if "point_i" not in prm:
            continue
        at = np.broadcast_to(_global(frames, j.body_i, prm["point_i"]), (F, 3))
        for body in (j.body_i, j.body_j):
            if body in frames:
                sheet.add(np.stack([frames[body][0], at], 1), "line", stroke=INK, width=2.4)
        marks[j.name] = sheet.add(at[:, None], "dot", fill=PIN_FILL, stroke=INK, width=1.2, radius=1.2 * w)
    for e in scene.elements:
        prm = p.get(e.name, {})
        if e.symbol == "coil":
            a = np.broadcast_to(_global(frames, e.body_i, prm["point_i"]), (F, 3))
            b = np.broadcast_to(_global(frames, e.body_j, prm["point_j"]), (F, 3))
            sheet.add(np.stack([a, b], 1), "line", stroke=SPRING_INK, width=2.0)
    return sheet, marks


def _solid(body, shape, contact, p, inertia):
    """The faces (body frame) of a spatial body: a user shape, a contact's disk or
    ball, or the inertia-equivalent box."""
    if shape is not None:
        kind = shape[0] if isinstance(shape, tuple) and shape else None
        if kind == "box" and np.shape(shape[1]) == (3,):
            return _box_faces(np.asarray(shape[1], dtype=float))
        if kind == "ball" and np.ndim(shape[1]) == 0:
            return [(np.zeros(3), float(shape[1]))]
        raise MbdjaxError(f"drawing: `shapes[{body!r}]` must be ('box', (a, b, c)) or ('ball', radius) "
                          f"for a spatial body, got {shape!r}.")
    if contact is not None:
        prm = p[contact.name]
        radius = float(prm["radius"])
        if contact.symbol == "disk":
            return _cylinder_faces(radius, 0.08 * radius, prm["axis"])
        out = [(np.asarray(prm["centre"], dtype=float), radius)]
        sides, axes = inertia_box(*inertia(p, body))
        return out + [face @ axes.T for face in _box_faces(sides * 0.6)]
    sides, axes = inertia_box(*inertia(p, body))
    return [face @ axes.T for face in _box_faces(sides)]
