"""The HTML mechanism viewer on its own, with synthetic scenes (a 2D bar rotating about
a pin; a 3D box of six shaded faces spinning about its vertical axis), in headless
Chromium: the page loads from a file with no error and no network request, draws
something, changes with the frame, and shows each frame's readouts. Without Chromium
or Playwright the browser tests skip, except under `CI=true`, where they fail."""

import base64
import io
import os
import pathlib

import numpy as np
import pytest
from _browser import capture, require_browser

from mbdjax.plotting._viewer import page


def write_viewer_html(scene, path, title):
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(page(scene, title))
    return path


# ---- synthetic scenes ---------------------------------------------------------

F2 = 40
RESIDUALS = [1.5e-10 * (i + 1) for i in range(F2)]
ENERGIES = [12.3456789 - 0.01 * i for i in range(F2)]
# What the readout panel shows at frames 0 and 10 (JS toExponential(2) / toPrecision(6)).
EXPECTED_READOUTS = {0: ("1.50e-10", "12.3457 J"), 10: ("1.65e-9", "12.2457 J")}
SCRUB_2D = [0, 10]


def _encode(frames):
    """base64 of the vertices `frames` (F, V, 3), float32 little-endian, frame-major."""
    return base64.b64encode(np.asarray(frames, dtype="<f4").tobytes()).decode("ascii")


def _bounds(frames, pad=0.0):
    frames = np.asarray(frames)
    return [(frames.min(axis=(0, 1)) - pad).tolist(), (frames.max(axis=(0, 1)) + pad).tolist()]


def _bar_scene():
    """A bar of length 1 turning about a pin at the origin, half a turn per second,
    with a ground line and the trace of its tip."""
    times = np.linspace(0.0, 2.0, F2)
    corners = np.array([[0.0, -0.05], [1.0, -0.05], [1.0, 0.05], [0.0, 0.05]])
    frames = []
    for t in times:
        c, s = np.cos(np.pi * t), np.sin(np.pi * t)
        rot = np.array([[c, -s], [s, c]])
        xy = np.vstack([corners @ rot.T, [[0.0, 0.0]], rot @ [0.95, 0.0], [[-0.3, -0.15], [0.3, -0.15]]])
        frames.append(np.column_stack([xy, np.zeros(len(xy))]))
    return {
        "dimension": 2, "up": [0, 0, 1], "times": times.tolist(), "nv": 8, "vertices": _encode(frames),
        "items": [
            {"kind": "line", "start": 6, "stop": 8, "stroke": "#444444", "width": 2, "closed": False},
            {"kind": "fill", "start": 0, "stop": 4, "fill": "#4c78a8", "stroke": "#1f3b5a", "width": 1.5,
             "shade": False},
            {"kind": "dot", "start": 4, "stop": 5, "radius": 0.04, "fill": "#ffffff", "stroke": "#000000",
             "width": 1.5},
            {"kind": "dot", "start": 5, "stop": 6, "radius": 0.03, "fill": "#e45756", "stroke": None, "width": 1},
        ],
        "trace": {"vertex": 5, "stroke": "#f58518", "width": 1.5},
        "bounds": _bounds(frames, pad=0.05),
        "readouts": [
            {"label": "constraint residual", "values": RESIDUALS, "unit": "", "format": "exp"},
            {"label": "energy", "values": ENERGIES, "unit": "J", "format": "significant"},
        ],
        "duration": float(times[-1] - times[0]),
    }


def _box_scene():
    """A 1 m box tilted 20° about x and spinning about z, its six faces shaded, with
    its spin axis drawn as a line; no readouts."""
    F = 20
    times = np.linspace(0.0, 1.0, F)
    faces = []
    for axis in range(3):
        for sign in (-0.5, 0.5):
            quad = np.array([[-0.5, -0.5], [0.5, -0.5], [0.5, 0.5], [-0.5, 0.5]])
            if sign < 0:
                quad = quad[::-1]
            faces.append(np.insert(quad, axis, sign, axis=1))
    local = np.vstack(faces + [np.array([[0.0, 0.0, -0.9], [0.0, 0.0, 0.9]])])
    a = np.radians(20.0)
    tilt = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    frames = []
    for k in range(F):
        c, s = np.cos(0.15 * k), np.sin(0.15 * k)
        spin = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
        frames.append(local @ (spin @ tilt).T)
    colours = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2"]
    items = [{"kind": "fill", "start": 4 * i, "stop": 4 * i + 4, "fill": colours[i], "stroke": "#333333",
              "width": 1, "shade": True} for i in range(6)]
    items.append({"kind": "line", "start": 24, "stop": 26, "stroke": "#000000", "width": 2, "closed": False})
    return {
        "dimension": 3, "up": [0, 0, 1], "times": times.tolist(), "nv": 26, "vertices": _encode(frames),
        "items": items, "trace": None, "bounds": _bounds(frames), "readouts": [],
        "duration": float(times[-1] - times[0]),
    }


# ---- the page, without a browser ------------------------------------------------

def test_page_is_self_contained_and_escaped(tmp_path):
    scene = _bar_scene()
    scene["readouts"][0]["label"] = "</script><script>alert(1)</script> <!-- x"
    path = write_viewer_html(scene, str(tmp_path / "v.html"), 'bar & "pin" <2D>')
    assert path == str(tmp_path / "v.html")
    page = pathlib.Path(path).read_text(encoding="utf-8")
    assert "<title>bar &amp; &quot;pin&quot; &lt;2D&gt;</title>" in page
    assert "MBDJAX_VIEWER_JS" not in page and "MBDJAX_SCENE_JSON" not in page and "MBDJAX_TITLE" not in page
    assert page.count("</script>") == 2 and "<!--" not in page
    assert "http:" not in page and "https:" not in page


# ---- the page in headless Chromium -------------------------------------------------

def _write(tmp_path_factory, scene, name):
    path = str(tmp_path_factory.mktemp("viewer") / name)
    return write_viewer_html(scene, path, name)


@pytest.fixture(scope="module")
def bar(tmp_path_factory):
    require_browser()
    path = _write(tmp_path_factory, _bar_scene(), "bar.html")
    return path, capture(path, SCRUB_2D)


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    require_browser()
    path = _write(tmp_path_factory, _box_scene(), "box.html")
    return path, capture(path, [0, 6])


def _pixels(png):
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def _colours(png):
    """The number of distinct colours in the image `png`."""
    from PIL import Image

    return len(Image.open(io.BytesIO(png)).convert("RGB").getcolors(maxcolors=1 << 24))


def _changed_fraction(png_a, png_b):
    a, b = _pixels(png_a), _pixels(png_b)
    assert a.shape == b.shape
    return float(np.mean(np.any(a != b, axis=-1)))


@pytest.mark.parametrize("which", ["bar", "box"])
def test_page_loads_without_errors_or_requests(which, request):
    path, out = request.getfixturevalue(which)
    assert out["errors"] == []
    page_url = pathlib.Path(os.path.abspath(path)).as_uri()
    assert page_url in out["requests"]
    assert [u for u in out["requests"] if u != page_url and not u.startswith("data:")] == []


def test_2d_canvas_is_drawn(bar):
    _, out = bar
    png = out["screenshots"][0]
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert _colours(png) > 1
    # the background is white, and the bar, pin and ground cover part of the canvas
    pixels = _pixels(png)
    assert tuple(pixels[0, 0]) == (255, 255, 255)
    assert 0.01 < np.mean(np.any(pixels != 255, axis=-1)) < 0.5


def test_2d_frames_differ(bar):
    _, out = bar
    assert _changed_fraction(out["screenshots"][0], out["screenshots"][1]) > 0.005


def test_3d_box_renders_and_turns(box):
    _, out = box
    first, later = out["screenshots"]
    # white background, outlines and at least two differently shaded faces
    assert _colours(first) >= 4
    assert 0.02 < np.mean(np.any(_pixels(first) != 255, axis=-1)) < 0.8
    assert _changed_fraction(first, later) > 0.005
    assert out["readouts"] == ["", ""]


def test_readout_shows_the_current_frame(bar):
    _, out = bar
    for frame, text in zip(SCRUB_2D, out["readouts"]):
        residual, energy = EXPECTED_READOUTS[frame]
        assert text == f"constraint residual: {residual}\nenergy: {energy}", text
