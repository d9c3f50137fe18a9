"""`mbdjax.plotting.viewer` on the built-in examples, in headless Chromium: the page
opens from a file:// URL with no network request, the mechanism is drawn where the
closed-form kinematics put it, the scrubber moves it, and the readouts are the
trajectory's own residuals and energy. Without Chromium or Playwright these skip,
except under `CI=true` (`.ci/run` installs them), where they fail."""

import io
import math
import os
import pathlib

import numpy as np
import pytest
from _browser import capture, require_browser
from PIL import Image

import mbdjax as mbd
from mbdjax import models
from mbdjax._errors import MbdjaxError
from mbdjax.plotting import viewer
from mbdjax.plotting._drawing import BODY_COLOURS

R_CRANK, L_ROD, OMEGA = 0.1, 0.3, 2.0 * math.pi   # the built-in slider-crank (models._slider_crank)
FRAMES = (30, 70)                                  # saved points 30 and 70 of 201 over 1 s: t = 0.15, 0.35 s


@pytest.fixture(scope="module")
def slider_crank():
    ex = models.slider_crank()
    return mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, saveat=201)


def _rgb(png):
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def _crank_point(t, s):
    """The point a distance `s` along the crank at time `t` (Haug §3.6: θ = ωt)."""
    return (s * math.cos(OMEGA * t), s * math.sin(OMEGA * t), 0.0)


def test_slider_crank_page_in_a_browser(slider_crank, tmp_path):
    require_browser()
    path = viewer(slider_crank, tmp_path / "viewer.html")
    times = [0.005 * k for k in FRAMES]
    middles = [_crank_point(t, 0.5 * R_CRANK) for t in times]
    out = capture(path, FRAMES, size=(800, 600), points=middles)
    assert out["errors"] == []
    page = pathlib.Path(os.path.abspath(path)).as_uri()
    assert [u for u in out["requests"] if u != page and not u.startswith("data:")] == []
    a, b = (_rgb(png) for png in out["screenshots"])
    for shot in (a, b):                                   # not blank: the scene is drawn
        assert np.mean(np.any(shot != shot[0, 0], axis=-1)) > 0.01
    crank = np.array([int(BODY_COLOURS[0][i:i + 2], 16) for i in (1, 3, 5)])
    for k, (x, y) in enumerate(out["projected"]):
        # the crank's fill colour at its own midpoint, and not there in the other frame
        near = lambda shot: np.abs(shot[int(round(y)) - 1:int(round(y)) + 2, int(round(x)) - 1:int(round(x)) + 2]
                                   - crank).max()
        here, there = (a, b) if k == 0 else (b, a)
        assert near(here) <= 3, f"the crank is not drawn at its midpoint in frame {FRAMES[k]}"
        assert near(there) > 40
    # the readouts are the run's residual and energy at those saved points
    energy = np.asarray(slider_crank.energy())
    for k, text in zip(FRAMES, out["readouts"]):
        assert "position residual" in text and "energy" in text
        shown = float(text.split("energy:")[1].split()[0])
        assert shown == pytest.approx(float(energy[k]), rel=1e-5)


def test_rolling_disk_page_in_a_browser(tmp_path):
    require_browser()
    ex = models.get("rolling-disk")                           # the spatial front end's disk
    traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=2.0, saveat=41, **ex.options)
    path = viewer(traj, tmp_path / "disk.html")
    out = capture(path, (5, 35), size=(640, 480))
    assert out["errors"] == []
    a, b = (_rgb(png) for png in out["screenshots"])
    assert len(np.unique(a.reshape(-1, 3), axis=0)) > 8        # shaded faces, grid, trace
    assert np.mean(np.any(a != b, axis=-1)) > 0.002


def test_viewer_refuses_what_it_cannot_write(slider_crank, tmp_path):
    with pytest.raises(MbdjaxError, match=r"\.html"):
        viewer(slider_crank, tmp_path / "viewer.txt")
    kept = tmp_path / "mine.html"
    kept.write_text("mine")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        viewer(slider_crank, kept)
    assert kept.read_text() == "mine"
    path = viewer(slider_crank, kept, overwrite=True, max_frames=20)
    assert "mbdjaxViewer" in pathlib.Path(path).read_text(encoding="utf-8")
