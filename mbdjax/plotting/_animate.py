"""Animations of planar and spatial trajectories: GIF (Pillow) or MP4 (ffmpeg)."""

from __future__ import annotations

import dataclasses
import io
import math
import os
import shutil
import subprocess
import tempfile

import numpy as np

from .._errors import MbdjaxError
from .._files import atomic_write
from ._drawing import TRACE_INK, drawing, reached

BACKGROUND = "#f4f6f8"
TEXT = "#333333"
AZIMUTH, ELEVATION = -60.0, 25.0  # degrees: the spatial view (about `up`, above the horizon)
_SUPERSAMPLE = 2
MAX_FRAMES = 1500   # a 640 × 480 GIF frame holds 0.3 MB while the file is assembled


def _rgb(colour):
    colour = colour.lstrip("#")
    return tuple(int(colour[i:i + 2], 16) for i in (0, 2, 4))


@dataclasses.dataclass(frozen=True, eq=False)
class View:
    """A fixed orthographic view of a drawing, fitted to a `size = (width, height)` image.

    Planar scenes are seen from +z (x right, y up); spatial ones from azimuth −60°
    about the scene's up direction and 25° above its horizon. `right`, `upward` and
    `toward` (towards the viewer) are the unit screen axes in global coordinates.
    """

    right: np.ndarray
    upward: np.ndarray
    toward: np.ndarray
    centre: np.ndarray
    scale: float
    size: tuple
    band: float = 22.0   # pixels kept free at the top for the time label

    @classmethod
    def fit(cls, drawing, size, margin=0.06, band=22):
        if drawing.dimension == 2:
            right, upward, toward = np.eye(3)
        else:
            up = drawing.up / np.linalg.norm(drawing.up)
            h1 = np.array([1.0, 0, 0]) - up[0] * up
            if np.linalg.norm(h1) < 1e-6:
                h1 = np.array([0, 1.0, 0]) - up[1] * up
            h1 /= np.linalg.norm(h1)
            h2 = np.cross(up, h1)
            az, el = math.radians(AZIMUTH), math.radians(ELEVATION)
            toward = math.cos(el) * (math.cos(az) * h1 + math.sin(az) * h2) + math.sin(el) * up
            right = np.cross(up, toward)
            right /= np.linalg.norm(right)
            upward = np.cross(toward, right)
        v = drawing.vertices.reshape(-1, 3)
        x, y = v @ right, v @ upward
        width, height = size
        span_x, span_y = max(float(np.ptp(x)), 1e-9), max(float(np.ptp(y)), 1e-9)
        scale = min(width * (1 - 2 * margin) / span_x, (height * (1 - 2 * margin) - band) / span_y)
        centre = np.array([0.5 * (x.min() + x.max()), 0.5 * (y.min() + y.max())])
        return cls(right, upward, toward, centre, float(scale), tuple(size), float(band))

    def pixels(self, points):
        """Pixel coordinates `(..., 2)` (x right, y down, from the top-left corner) of
        global points `(..., 3)` or, for a planar scene, `(..., 2)`."""
        points = np.asarray(points, dtype=float)
        if points.shape[-1] == 2:
            points = np.concatenate([points, np.zeros(points.shape[:-1] + (1,))], -1)
        width, height = self.size
        px = (points @ self.right - self.centre[0]) * self.scale + 0.5 * width
        py = 0.5 * (height + self.band) - (points @ self.upward - self.centre[1]) * self.scale
        return np.stack([px, py], -1)

    def depth(self, points):
        """Distance towards the viewer of global points `(..., 3)`."""
        return points @ self.toward


@dataclasses.dataclass(frozen=True, eq=False)
class Animation:
    """What `animate` wrote: the file, its frame count and times (s), its image size
    and the `View` (`pixels(points)` maps global points to the image, the same in
    every frame)."""

    path: str
    frames: int
    times: np.ndarray
    size: tuple
    view: View

    def pixels(self, points):
        """Pixel coordinates of global points (see `View.pixels`)."""
        return self.view.pixels(points)


def _palette(drawing):
    """A fixed GIF palette: every colour of the drawing, its blends with the background
    and the ink (antialiased edges), and shades of lit faces."""
    base = [BACKGROUND, TEXT, "#000000", "#ffffff"]
    shaded = set()
    for item in drawing.items:
        base += [c for c in (item.fill, item.stroke) if c]
        if item.shade and item.fill:
            shaded.add(item.fill)
    base += [TRACE_INK]
    exact = [np.array(_rgb(c), dtype=float) for c in dict.fromkeys(base)]
    blends = []
    for rgb in exact:
        for other in (BACKGROUND, "#222222"):
            for a in (0.25, 0.5, 0.75):
                blends.append(a * rgb + (1 - a) * np.array(_rgb(other), dtype=float))
    for c in shaded:
        blends += [np.array(_rgb(c), dtype=float) * s for s in np.linspace(0.35, 1.0, 14)]
    # the drawing's own colours first, so that they stay exact when the blends are cut
    rows = [tuple(int(x) for x in np.clip(np.round(c), 0, 255)) for c in exact + blends]
    colours = np.array(list(dict.fromkeys(rows))[:256], dtype=np.uint8)
    return colours


class _Indexer:
    """RGB images to palette images over `colours (K, 3)`: each pixel the nearest
    colour, so the drawing's exact colours stay exact (Pillow's own quantizer
    approximates them). A table over all 2²⁴ colours remembers the nearest of every
    colour met so far, so each frame computes only its new colours."""

    def __init__(self, colours):
        self.colours = colours.astype(np.float64)
        self.table = np.full(1 << 24, -1, dtype=np.int16)
        flat = colours.reshape(-1).tolist()
        self.palette = flat + flat[:3] * (256 - len(colours))

    def __call__(self, image, image_module):
        rgb = np.asarray(image, dtype=np.int32)
        keys = (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]
        index = self.table[keys]
        if np.any(index < 0):
            new = np.unique(keys[index < 0])
            seen = np.stack([new >> 16, (new >> 8) & 255, new & 255], -1).astype(np.float64)
            d = (seen ** 2).sum(1)[:, None] - 2 * seen @ self.colours.T + (self.colours ** 2).sum(1)[None]
            self.table[new] = np.argmin(d, axis=1)
            index = self.table[keys]
        out = image_module.fromarray(index.astype(np.uint8), mode="P")
        out.putpalette(self.palette)
        return out


def _render(drawing, view, k, image_module, draw_module, font):
    """The frames as RGB images, rendered at `_SUPERSAMPLE`× and reduced, one at a time
    (a generator: the caller keeps what it needs of each)."""
    width, height = view.size
    s = _SUPERSAMPLE
    px = view.pixels(drawing.vertices) * s
    depth = view.depth(drawing.vertices)
    order = list(range(len(drawing.items)))
    for f in range(k):
        img = image_module.new("RGB", (width * s, height * s), BACKGROUND)
        pen = draw_module.Draw(img)
        if drawing.trace is not None and f > 0:
            path = [tuple(p) for p in px[:f + 1, drawing.trace]]
            pen.line(path, fill=_rgb(TRACE_INK), width=2 * s, joint="curve")
        if drawing.dimension == 3:
            order.sort(key=lambda i, f=f: float(np.mean(depth[f, drawing.items[i].start:drawing.items[i].stop])))
        for i in order:
            _draw_item(pen, drawing.items[i], px[f], drawing.vertices[f], view, s)
        pen.text((8 * s, 6 * s), f"t = {drawing.times[f]:.3f} s", fill=_rgb(TEXT), font=font)
        yield img.reduce(s)


def _shade(colour, item, verts, view):
    rgb = np.array(_rgb(colour), dtype=float)
    if item.shade and len(verts) >= 3:
        n = np.cross(verts[1] - verts[0], verts[2] - verts[0])
        norm = np.linalg.norm(n)
        if norm > 0:
            rgb = rgb * (0.35 + 0.65 * abs(float(n @ view.toward)) / norm)
    return tuple(int(round(c)) for c in np.clip(rgb, 0, 255))


def _draw_item(pen, item, px, verts, view, s):
    pts = [tuple(p) for p in px[item.start:item.stop]]
    width = max(1, int(round(item.width * s)))
    if item.kind == "fill":
        pen.polygon(pts, fill=_shade(item.fill, item, verts[item.start:item.stop], view))
        if item.stroke:
            pen.line(pts + pts[:1], fill=_rgb(item.stroke), width=width, joint="curve")
    elif item.kind == "line":
        pen.line(pts + pts[:1] if item.closed else pts, fill=_rgb(item.stroke), width=width, joint="curve")
    elif item.kind == "dot":
        (x, y), r = pts[0], item.radius * view.scale * s
        pen.ellipse((x - r, y - r, x + r, y + r), fill=_shade(item.fill, item, verts[item.start:item.stop], view),
                    outline=_rgb(item.stroke) if item.stroke else None, width=width)


def frame_times(traj, fps, speed, frames):
    """The animation's frame times: the times `frames` (a sequence), `frames` evenly
    spaced over the reached run (an int), or one every `speed / fps` seconds of
    simulated time (the run shown at `speed`× real time)."""
    ts = reached(traj)[0]
    t0, t1 = float(ts[0]), float(ts[-1])
    if frames is not None and np.ndim(frames) == 1:
        times = np.asarray(frames, dtype=float)
        if len(times) == 0 or not np.all(np.isfinite(times)) or times.min() < t0 or times.max() > t1 \
                or np.any(np.diff(times) < 0):
            raise MbdjaxError(f"animate: the frame times must be increasing and within the run's saved "
                              f"times [{t0:g}, {t1:g}] s.")
        return times
    if frames is None:
        if not (fps > 0 and speed > 0):
            raise MbdjaxError(f"animate: `fps` ({fps}) and `speed` ({speed}) must be positive.")
        frames = int(round((t1 - t0) / speed * fps)) + 1
    if np.ndim(frames) != 0 or int(frames) < 1:
        raise MbdjaxError(f"animate: `frames` must be a count of at least 1 or a sequence of times, got {frames!r}.")
    frames = int(frames)
    return np.linspace(t0, t1, frames) if frames > 1 else np.array([t0])


def animate(traj, path, *, fps=25, speed=1.0, frames=None, size=(640, 480), trace=None, shapes=None,
            overwrite=False):
    """Render a planar or spatial trajectory's motion to a GIF, or to an MP4 with ffmpeg.

    The drawing comes from the model (see `mbdjax.plotting.viewer` for the
    interactive one): planar bodies as rounded outlines through their joint and
    attachment points, hatched ground supports, pins as circles, sliders as boxes on
    their guide, springs as zigzags, dampers as pistons; spatial bodies as their
    inertia-equivalent boxes (a rolling disk as a disk, a rolling sphere as a ball),
    joints as balls on sticks, contact planes as grids (`mbdjax.plotting._drawing`).
    States between saved points are interpolated linearly, so save enough points
    (`simulate(..., saveat=)`) for smooth motion.

    Arguments:
        traj: a `Trajectory` of a model built by `mbdjax.planar.Mechanism` or
            `mbdjax.spatial.Mechanism`.
        path: the file to write, `.gif` or `.mp4`.
        fps: frames per second of the file (default 25).
        speed: simulated seconds shown per second of the file (default 1: real time).
        frames: the number of frames, evenly spaced over the run, or the times
            to draw (s, increasing, within the saved times), instead of `fps` and
            `speed` deciding them (`fps` still sets the file's frame rate).
        size: `(width, height)` in pixels.
        trace: draw the path of a point: a joint name, a body name (its mass centre)
            or `(body, local point)`; default none (planar), the first contact
            point (spatial).
        shapes: `{body: shape}` overriding the default shape of a body: a planar
            outline `(k, 2)` in the body frame (m), or for a spatial body
            `("box", (a, b, c))` or `("ball", radius)`.
        overwrite: replace an existing file (default: refuse).

    Returns:
        An `Animation`: the path, the frame count and times, the size and the view
        (`Animation.pixels(points)` gives where a global point is drawn).

    Example:

        >>> import os, tempfile, mbdjax as mbd
        >>> from mbdjax import models
        >>> from mbdjax.plotting import animate
        >>> ex = models.slider_crank()
        >>> traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, saveat=101)
        >>> anim = animate(traj, os.path.join(tempfile.mkdtemp(), "slider_crank.gif"), fps=10)
        >>> anim.frames, anim.size
        (11, (640, 480))
    """
    from PIL import Image, ImageDraw, ImageFont   # on first use: only animations need Pillow

    path = os.fspath(path)
    kind = os.path.splitext(path)[1].lower()
    if kind not in (".gif", ".mp4"):
        raise MbdjaxError(f"animate: cannot write {path!r}; give a path ending in .gif or .mp4.")
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"animate: {path} exists; pass overwrite=True to replace it.")
    ffmpeg = shutil.which("ffmpeg") if kind == ".mp4" else None
    if kind == ".mp4" and ffmpeg is None:
        raise MbdjaxError("animate: writing .mp4 needs ffmpeg on the PATH (Debian: apt-get install ffmpeg); "
                          "write a .gif instead, which needs nothing more.")
    width, height = (int(x) for x in size)
    if width < 16 or height < 16:
        raise MbdjaxError(f"animate: `size` must be at least (16, 16) pixels, got {tuple(size)}.")
    if kind == ".mp4":
        width, height = width + width % 2, height + height % 2   # the encoder's 4:2:0 needs even sides
    times = frame_times(traj, fps, speed, frames)
    if len(times) > MAX_FRAMES:
        raise MbdjaxError(f"animate: {len(times)} frames asked for (the run at {speed:g}× real time and {fps:g} "
                          f"frames/s); at most {MAX_FRAMES}: raise `speed`, lower `fps`, or give `frames`.")
    pic = drawing(traj, times, shapes=shapes, trace=trace)
    view = View.fit(pic, (width, height))
    font = ImageFont.load_default(size=12 * _SUPERSAMPLE)
    images = _render(pic, view, len(times), Image, ImageDraw, font)
    if kind == ".gif":
        index = _Indexer(_palette(pic))
        indexed = [index(im, Image) for im in images]   # a palette frame is a third of an RGB one
        buffer = io.BytesIO()
        indexed[0].save(buffer, format="GIF", save_all=True, append_images=indexed[1:], loop=0,
                        duration=max(20, int(round(1000.0 / fps))), optimize=False, disposal=1)
        atomic_write(path, buffer.getvalue())
    else:
        _write_mp4(ffmpeg, path, images, (width, height), fps)
    return Animation(path, len(times), times, (width, height), view)


def _write_mp4(ffmpeg, path, images, size, fps):
    """Stream the RGB frames to ffmpeg (H.264), into a temporary file renamed at the end."""
    width, height = size
    folder, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(folder, f".{name}.tmp-{os.getpid()}.mp4")
    cmd = [ffmpeg, "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{width}x{height}",
           "-r", str(fps), "-i", "-", "-pix_fmt", "yuv420p", "-vcodec", "libx264", tmp]
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log)
        try:
            for im in images:
                proc.stdin.write(im.tobytes())
        except BrokenPipeError:   # ffmpeg stopped early: its message says why
            pass
        finally:
            proc.stdin.close()
            code = proc.wait()
        log.seek(0)
        message = log.read().decode(errors="replace").strip()
    if code != 0:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise MbdjaxError(f"animate: ffmpeg failed writing {path!r}: {message}")
    os.replace(tmp, path)
