"""A self-contained HTML page that animates a mechanism.

`page` fills the page template `_viewer.html` with the viewer script
`_viewer.js` and a scene (vertices per frame, drawing items, readouts): one file,
with no network access, that plays, scrubs, pans, zooms and (in 3D) orbits the
animation in any browser.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re

import numpy as np

from .._errors import MbdjaxError
from .._files import atomic_write
from ._drawing import TRACE_INK, drawing, saved_points, scene_of

_HERE = os.path.dirname(os.path.abspath(__file__))
_JS_SLOT = "/*MBDJAX_VIEWER_JS*/"
_SCENE_SLOT = "/*MBDJAX_SCENE_JSON*/"
_TITLE_SLOT = "MBDJAX_TITLE"


def _read(name: str) -> str:
    with open(os.path.join(_HERE, name), encoding="utf-8") as f:
        return f.read()


def page(scene: dict, title: str) -> str:
    """The interactive viewer page for `scene`, as one HTML string.

    `scene` is the viewer's scene dictionary (`scene_dict`): `dimension` (2 or 3),
    `up`, `times`, `nv`, `vertices` (base64 of frame-major float32 little-endian
    xyz), `items`, `trace`, `bounds`, `readouts` and `duration`. It is inlined as
    JSON (with `</` written `<\\/`, so no string in it can end the script), next to
    the viewer's script, in one page that needs no network; `title` is HTML-escaped
    into the page's title. The page opens paused at frame 0.

    Example:

        >>> scene = {"dimension": 2, "up": [0, 0, 1], "times": [0.0], "nv": 1,
        ...          "vertices": "AAAAAAAAAAAAAAAA", "trace": None, "readouts": [],
        ...          "items": [{"kind": "dot", "start": 0, "stop": 1, "radius": 0.1,
        ...                     "fill": "#1f77b4", "stroke": None, "width": 1}],
        ...          "bounds": [[-1, -1, 0], [1, 1, 0]], "duration": 0.0}
        >>> "<title>a &lt; b</title>" in page(scene, "a < b")
        True
    """
    template = _read("_viewer.html")
    script = _read("_viewer.js")
    scene_json = json.dumps(scene, separators=(",", ":")).replace("</", "<\\/").replace("<!--", "<\\u0021--")
    fills = {_JS_SLOT: script, _SCENE_SLOT: scene_json, _TITLE_SLOT: html.escape(title)}
    # One pass over the template, so text put into one slot is never read as another slot.
    return re.sub("|".join(re.escape(k) for k in fills), lambda m: fills[m.group(0)], template)


def scene_dict(pic, readouts=()):
    """The viewer's scene dictionary of a `mbdjax.plotting._drawing.Drawing`, with
    `readouts` a sequence of `(label, values (F,), unit, format)` (`"exp"` or
    `"significant"`) shown beside the scene at each frame."""
    items = []
    for it in pic.items:
        entry = {"kind": it.kind, "start": it.start, "stop": it.stop, "fill": it.fill, "stroke": it.stroke,
                 "width": it.width}
        if it.kind == "dot":
            entry["radius"] = it.radius
        if it.kind == "fill":
            entry["shade"] = bool(it.shade)
        if it.kind == "line":
            entry["closed"] = bool(it.closed)
        items.append(entry)
    vertices = np.ascontiguousarray(pic.vertices, dtype="<f4")
    return {
        "dimension": pic.dimension,
        "up": [float(x) for x in pic.up],
        "times": [float(t) for t in pic.times],
        "nv": int(vertices.shape[1]),
        "vertices": base64.b64encode(vertices.tobytes()).decode("ascii"),
        "items": items,
        "trace": None if pic.trace is None else {"vertex": int(pic.trace), "stroke": TRACE_INK, "width": 2.0},
        "bounds": pic.bounds.tolist(),
        "readouts": [{"label": label, "values": [float(v) for v in np.asarray(values)], "unit": unit,
                      "format": fmt} for label, values, unit, fmt in readouts],
        "duration": float(pic.times[-1] - pic.times[0]),
    }


def _readouts(traj, picked):
    """The constraint residuals and the energy at the saved points `picked`, where the
    model gives them."""
    out = []
    model = traj.model
    if model.m_h:
        res = np.max(np.abs(np.asarray(traj.position_residual())), axis=-1)[picked]
        out.append(("position residual |Φ|∞", res, "", "exp"))
    if model.m:
        res = np.max(np.abs(np.asarray(traj.velocity_residual())), axis=-1)[picked]
        out.append(("velocity residual", res, "", "exp"))
    try:
        energy = np.asarray(traj.energy())[picked]
    except MbdjaxError:   # models whose energy is not defined (no potential given, say)
        return out
    out.append(("energy", energy, "J", "significant"))
    return out


def viewer(traj, path, *, max_frames=600, trace=None, shapes=None, title=None, overwrite=False):
    """Write a self-contained interactive viewer of a planar or spatial trajectory: one
    HTML file with the scene and the trajectory inlined, that opens from a file://
    URL in any browser and makes no network request.

    It plays, pauses and scrubs the motion at a chosen speed (space: play/pause,
    arrow keys: one frame), pans and zooms (drag, wheel), and for spatial models
    orbits (drag; shift-drag pans). Beside the scene it shows the constraint
    residuals and the energy at the current time. The frames are the trajectory's
    saved points (at most `max_frames`, evenly picked), so the numbers shown are
    those computed at those points; the drawing is that of `animate`.

    Arguments:
        traj: a `Trajectory` of a model built by `mbdjax.planar.Mechanism` or
            `mbdjax.spatial.Mechanism`.
        path: the `.html` file to write.
        max_frames: the most frames to keep (default 600).
        trace, shapes: as for `animate`.
        title: the page title (default: the bodies and the run's length).
        overwrite: replace an existing file (default: refuse).

    Returns the path written.

    Example:

        >>> import os, tempfile, mbdjax as mbd
        >>> from mbdjax import models
        >>> from mbdjax.plotting import viewer
        >>> ex = models.four_bar()
        >>> traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.5, saveat=51)
        >>> out = viewer(traj, os.path.join(tempfile.mkdtemp(), "four_bar.html"))
        >>> open(out, encoding="utf-8").read().count("<script")
        2
    """
    path = os.fspath(path)
    if not path.lower().endswith((".html", ".htm")):
        raise MbdjaxError(f"viewer: cannot write {path!r}; give a path ending in .html.")
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"viewer: {path} exists; pass overwrite=True to replace it.")
    if int(max_frames) < 2:
        raise MbdjaxError(f"viewer: `max_frames` must be at least 2, got {max_frames}.")
    scene_of(traj)
    t = np.asarray(traj.t)
    saved = saved_points(traj)
    picked = saved[np.unique(np.round(np.linspace(0, len(saved) - 1, min(len(saved), int(max_frames)))).astype(int))]
    pic = drawing(traj, t[picked], shapes=shapes, trace=trace)
    if title is None:
        title = f"mbdjax: {', '.join(traj.model.scene.bodies)}, {float(t[picked[-1]] - t[picked[0]]):g} s"
    atomic_write(path, page(scene_dict(pic, _readouts(traj, picked)), title).encode("utf-8"))
    return path

