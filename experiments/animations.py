"""Animations of the built-in mechanisms, and the IFToMM A02 N four-bar drawn through
its flat (singular) position.

1. The README's stills: the slider-crank, the four-bar and the rolling disk are
   simulated with the defaults and animated (`mbdjax.plotting.animate`); one frame of
   each GIF is saved as a PNG (in experiments/out/, or with `--readme` in
   docs/images/, where the README shows them). Each animation's cost is printed (the
   main job's target: under 3 s for the 1 s slider-crank).
2. A02 with N = 10 loops: released with the cranks vertical and B₀ at 1 m/s, every
   link lies flat at the same instant, where Φ_q loses N ranks. The flat time comes
   from an independent reference, the hand-derived one-degree-of-freedom equation
   (`mbdjax.models._iftomm.n_four_bar_reference`) integrated by scipy to its event θ = 0. The
   run is drawn at that time; the check is that every pin (pivots and tips, 31 of
   them) lies on the ground line there, in metres and in the animation's pixels.
   The GIF covers the run through the flat passage and out the other side.

Run: python experiments/animations.py [--readme]   (GIFs in experiments/out/)
"""

import os
import sys
import time

import numpy as np
from PIL import Image
from scipy.integrate import solve_ivp

import mbdjax as mbd
from mbdjax import models
from mbdjax.models._iftomm import n_four_bar_reference
from mbdjax.plotting import animate
from mbdjax.plotting._drawing import drawing

from _common import check, finish, out_path

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "images")
STILLS = {"slider-crank": 0.15, "four-bar": 0.4, "rolling-disk": 3.0}   # the time of each still (s)


def stills(folder):
    os.makedirs(folder, exist_ok=True)
    for name, at in STILLS.items():
        ex = models.get(name)
        traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=ex.t1, saveat=401, **ex.options)
        start = time.perf_counter()
        anim = animate(traj, out_path(f"{name}.gif"), overwrite=True)
        cost = time.perf_counter() - start
        k = int(np.argmin(np.abs(anim.times - at)))
        with Image.open(anim.path) as im:
            im.seek(k)
            im.convert("RGB").save(os.path.join(folder, f"{name}.png"), optimize=True)
        print(f"table: {name}: {anim.frames} frames, {ex.t1:g} s at 1×, GIF written in {cost:.2f} s; "
              f"still at t = {anim.times[k]:.3f} s")
        if name == "slider-crank":
            check("slider-crank animation cost [s]", cost, 3.0)


def a02():
    n = 10
    rhs, y0 = n_four_bar_reference(n)

    def flat(t, y):
        return y[0]

    ref = solve_ivp(rhs, (0.0, 2.0), y0, events=flat, rtol=1e-12, atol=1e-12)
    t_flat = float(ref.t_events[0][0])
    ex = models.n_four_bar(n, t1=1.5)
    times = np.sort(np.concatenate([np.linspace(0.0, 1.5, 61), [t_flat]]))
    traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=1.5, saveat=times)
    print(f"table: A02 N = {n}: {int(traj.num_steps)} steps over 1.5 s; flat at t = {t_flat:.6f} s (scipy, "
          "hand-derived 1-dof equation)")
    anim = animate(traj, out_path("a02_n_four_bar.gif"), frames=times, fps=20, overwrite=True)
    pic = drawing(traj, [t_flat])
    pins = [j.name for j in ex.model.scene.joints if j.symbol == "pin"]
    at = np.array([pic.vertices[0, pic.marks[p]] for p in pins])
    height = float(np.max(np.abs(at[:, 1])))
    pixels = anim.pixels(at)
    spread = float(np.ptp(pixels[:, 1]))
    ground = anim.pixels(np.zeros(3))[1]
    print(f"table: at the flat time the {len(pins)} pins are within {height:.1e} m of the ground line; drawn "
          f"rows {pixels[:, 1].min():.2f}–{pixels[:, 1].max():.2f} px (ground line at {ground:.2f} px)")
    check("A02: largest pin height at the flat time [m]", height, 1e-6)
    check("A02: spread of the pins' drawn rows at the flat time [px]", spread, 1.0)
    check("A02: passed the flat position (final crank angle below 0) [rad]",
          float(np.asarray(traj.coordinate("crank0.phi"))[-1]), 0.0)


if __name__ == "__main__":
    stills(DOCS if "--readme" in sys.argv[1:] else os.path.dirname(out_path("x")))
    a02()
    print(f"plot: {out_path('a02_n_four_bar.gif')}")
    finish()
