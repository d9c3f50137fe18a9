"""Animations (`mbdjax.plotting.animate`): frame counts, and the geometry drawn where
closed-form kinematics put it."""

import math
import shutil

import numpy as np
import pytest
from PIL import Image

import mbdjax as mbd
from mbdjax import models
from mbdjax._errors import MbdjaxError
from mbdjax.plotting import animate
from mbdjax.plotting._animate import BACKGROUND
from mbdjax.plotting._drawing import drawing, inertia_box

R_CRANK, L_ROD, OMEGA = 0.1, 0.3, 2.0 * math.pi   # the built-in slider-crank (models._slider_crank)


@pytest.fixture(scope="module")
def slider_crank():
    ex = models.slider_crank()
    return mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.0, saveat=201)


def _frame(path, k):
    with Image.open(path) as im:
        im.seek(k)
        return np.asarray(im.convert("RGB")).astype(int)


def _blob_centre(rgb, near, colour, window=14):
    """The centroid (x, y) of the pixels of exactly `colour` within `window` px of `near`."""
    x0, y0 = (int(round(v)) for v in near)
    box = rgb[y0 - window:y0 + window + 1, x0 - window:x0 + window + 1]
    ys, xs = np.nonzero(np.all(box == colour, axis=-1))
    assert len(xs) > 10, f"nothing of colour {colour} drawn near {near}"
    return np.array([xs.mean() + x0 - window, ys.mean() + y0 - window])


def test_slider_crank_gif_frames_and_pin_positions(slider_crank, tmp_path):
    """The 1 s run at 20 frames/s has 21 frames. In sampled frames the crank pin and the
    slider pin are drawn (white discs) within 2 px of where the closed-form kinematics
    put them: crank pin r(cos ωt, sin ωt), slider pin (r cos ωt + √(L² − r² sin² ωt), 0)
    (Haug §3.6; r = 0.1 m, L = 0.3 m, ω = 2π rad/s), mapped by the animation's view."""
    anim = animate(slider_crank, tmp_path / "sc.gif", fps=20)
    assert anim.frames == 21
    with Image.open(anim.path) as im:
        assert im.n_frames == 21
        assert im.size == (640, 480)
    for k in (3, 8, 14):
        t = anim.times[k]
        assert t == pytest.approx(0.05 * k)
        th = OMEGA * t
        crank_pin = (R_CRANK * math.cos(th), R_CRANK * math.sin(th))
        slider_pin = (R_CRANK * math.cos(th) + math.sqrt(L_ROD**2 - (R_CRANK * math.sin(th)) ** 2), 0.0)
        rgb = _frame(anim.path, k)
        for point in (crank_pin, slider_pin):
            expected = anim.pixels(np.array(point))
            drawn = _blob_centre(rgb, expected, (255, 255, 255))
            assert np.max(np.abs(drawn - expected)) <= 2.0, (k, point, drawn, expected)


def test_frames_follow_speed_and_frames_arguments(slider_crank, tmp_path):
    assert animate(slider_crank, tmp_path / "slow.gif", fps=10, speed=0.5).frames == 21
    anim = animate(slider_crank, tmp_path / "seven.gif", frames=7, size=(200, 150))
    assert anim.frames == 7 and anim.size == (200, 150)
    np.testing.assert_allclose(anim.times, np.linspace(0.0, 1.0, 7))
    assert animate(slider_crank, tmp_path / "two.gif", frames=[0.1, 0.35]).times.tolist() == [0.1, 0.35]
    for bad in ([0.5, 0.1], [2.0], 0):
        with pytest.raises(MbdjaxError, match="frame times|`frames`"):
            animate(slider_crank, tmp_path / "bad.gif", frames=bad)


def _ink(rgb):
    return np.any(rgb != np.array([int(BACKGROUND[i:i + 2], 16) for i in (1, 3, 5)]), axis=-1)


def test_four_bar_and_rolling_disk_render(tmp_path):
    """A planar and a spatial example: every frame has the mechanism on it and the
    frames change as it moves; the rolling disk's contact point is traced by default."""
    for name, t1 in (("four-bar", 0.5), ("rolling-disk", 1.0)):
        ex = models.get(name)
        traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=t1, saveat=51, **ex.options)
        anim = animate(traj, tmp_path / f"{name}.gif", frames=5, size=(320, 240))
        first, last = _frame(anim.path, 0), _frame(anim.path, 4)
        assert _ink(first).mean() > 0.02 and _ink(last).mean() > 0.02
        assert np.mean(np.any(first != last, axis=-1)) > 0.005
    pic = drawing(traj, np.linspace(0.0, 1.0, 3))
    assert pic.dimension == 3 and pic.trace is not None
    # the traced contact point lies on the plane z = 0 and one radius from the centre
    contact = pic.vertices[:, pic.trace]
    centre = pic.vertices[:, pic.marks["disk"]]
    np.testing.assert_allclose(contact[:, 2], 0.0, atol=1e-9)
    radius = float(np.asarray(ex.model.params["contact"]["radius"]))
    np.testing.assert_allclose(np.linalg.norm(contact - centre, axis=-1), radius, rtol=1e-9)


def test_inertia_box_recovers_a_box():
    """The uniform box of sides (a, b, c) has J = m/12 diag(b² + c², a² + c², a² + b²)
    (any rigid-body text); rotated, its axes come back as the eigenvectors."""
    m, sides = 2.0, np.array([0.3, 0.1, 0.05])
    a, b, c = sides
    J = m / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    Q = np.linalg.qr(np.array([[1.0, 0.2, 0.1], [0.3, 1.0, -0.2], [0.0, 0.4, 1.0]]))[0]
    got, axes = inertia_box(m, Q @ J @ Q.T)
    order = np.argsort(-got)
    np.testing.assert_allclose(got[order], sides, rtol=1e-12)
    np.testing.assert_allclose(np.abs(axes[:, order[0]] @ Q[:, 0]), 1.0, rtol=1e-12)


def test_shapes_and_trace_options(slider_crank):
    square = [(-0.02, -0.02), (0.02, -0.02), (0.02, 0.02), (-0.02, 0.02)]
    pic = drawing(slider_crank, [0.0, 0.25], shapes={"slider": square}, trace="rod_slider")
    slider = pic.vertices[1, pic.marks["slider"]]
    assert pic.trace == pic.marks["rod_slider"]
    # the square's corners sit around the slider's centre, rotated by its angle (0)
    fills = [it for it in pic.items if it.kind == "fill" and it.stop - it.start == 4]
    assert any(np.allclose(pic.vertices[1, it.start:it.stop, :2], slider[:2] + np.array(square)) for it in fills)
    on_rod = drawing(slider_crank, [0.25], trace=("rod", (0.15, 0.0)))
    np.testing.assert_allclose(on_rod.vertices[0, on_rod.trace, :2], pic.vertices[1, pic.marks["rod_slider"], :2],
                               atol=1e-12)


def test_bad_requests_get_named_errors(slider_crank, tmp_path, monkeypatch):
    with pytest.raises(MbdjaxError, match=r"\.gif or \.mp4"):
        animate(slider_crank, tmp_path / "x.avi")
    target = tmp_path / "keep.gif"
    target.write_bytes(b"user data")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        animate(slider_crank, target)
    assert target.read_bytes() == b"user data"
    with pytest.raises(MbdjaxError, match="not bodies of the model"):
        animate(slider_crank, tmp_path / "y.gif", shapes={"flywheel": [(0, 0), (1, 0)]})
    with pytest.raises(MbdjaxError, match="neither a joint nor a body"):
        animate(slider_crank, tmp_path / "y.gif", trace="nowhere")
    with pytest.raises(MbdjaxError, match="must be positive"):
        animate(slider_crank, tmp_path / "y.gif", fps=0)
    with pytest.raises(MbdjaxError, match="raise `speed`"):
        animate(slider_crank, tmp_path / "y.gif", speed=0.01)
    import jax

    batch = jax.tree_util.tree_map(lambda x: np.stack([x, x]), slider_crank)
    with pytest.raises(MbdjaxError, match="one trajectory"):
        animate(batch, tmp_path / "batch.gif")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(MbdjaxError, match="needs ffmpeg"):
        animate(slider_crank, tmp_path / "y.mp4")
    monkeypatch.setattr(shutil, "which", lambda name: "/bin/false")      # an encoder that fails at once
    with pytest.raises(MbdjaxError, match="ffmpeg failed"):
        animate(slider_crank, tmp_path / "y.mp4", frames=3)
    assert not any(p.name.endswith(".mp4") for p in tmp_path.iterdir())   # no partial file left
    ex = models.get("rlc")
    traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.01, saveat=3, **ex.options)
    with pytest.raises(MbdjaxError, match="no geometry to draw"):
        animate(traj, tmp_path / "z.gif")


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg is not installed")
def test_mp4_where_ffmpeg_is_present(slider_crank, tmp_path):
    anim = animate(slider_crank, tmp_path / "sc.mp4", frames=5, size=(321, 241))
    assert anim.size == (322, 242)
    with open(anim.path, "rb") as fh:
        assert b"ftyp" in fh.read(64)


def test_a_network_coupled_to_a_mechanism_draws_the_mechanism():
    """The DC motor driving the slider-crank: the scene is the mechanism's, read from the
    leading coordinates, so the crank pin is drawn at r(cos φ, sin φ) with φ the crank
    angle the run saved (the crank turns about the origin; r = 0.1 m)."""
    ex = models.get("dc-motor-crank")
    traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.2, saveat=5, **ex.options)
    times = np.asarray(traj.t)[1:]
    pic = drawing(traj, times)
    phi = np.asarray(traj.coordinate("crank.phi"))[1:]
    expected = np.stack([R_CRANK * np.cos(phi), R_CRANK * np.sin(phi)], -1)
    np.testing.assert_allclose(pic.vertices[:, pic.marks["rod_crank"], :2], expected, atol=1e-12)
