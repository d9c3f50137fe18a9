"""Greenwood's spatial examples (§4.5–4.7) with the spatial front end.

1. Heavy symmetric top on a fixed point: from steady-precession initial conditions θ
   stays constant; released without precession it nutates, and the energy and the
   momenta p_φ (vertical) and p_ψ = C Ω (axial) stay constant.
2. Thin disk rolling on a plane: steady circular rolling keeps its tilt; started
   1e-3 rad from upright it stays up above the critical spin Ω_c = √(g / 3a) and
   falls below it.
3. Unsymmetrical top with a hemispherical base rolling on a plane: energy, rolling
   contact, and the quasi-velocity formulation with Greenwood's u = ω' against the
   augmented one.

Each example gets a figure (Euler angles, contact path on the plane, energy).

Run: python experiments/spatial_tops.py [--quick]   (plots: experiments/out/spatial_*.png;
--quick: shorter runs, for a smoke test)
"""

import argparse
import math

import jax
import jax.numpy as jnp
import numpy as np

import mbdjax as mbd
from mbdjax import models
from mbdjax.models import _spatial as sp
from mbdjax.spatial import body_poses, contact_kinematics

from _common import check, finish, out_path, plt

TIGHT = dict(rtol=1e-10, atol=1e-12)
SPAN = {"full": 5.0}  # seconds of motion; --quick shortens it


def relative_drift(values):
    values = np.asarray(values)
    return float(np.max(np.abs(values - values[:1])) / np.max(np.abs(values[0])))


def contact_path(ex, tr, name):
    fn = contact_kinematics(ex.model, name)
    points, vel = jax.vmap(lambda q, qd: fn(q, qd, ex.model.params))(tr.q, tr.qd)
    return np.asarray(points), float(jnp.max(jnp.abs(vel)))


def figure(ex, tr, title, filename, contact=None):
    body = ex.mechanism.bodies[0]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4), constrained_layout=True)
    for angle in ("phi", "theta", "psi"):
        axes[0].plot(tr.t, tr.coordinate(f"{body}.{angle}"), label=angle)
    axes[0].set(title=f"{title}: 3-1-3 Euler angles", xlabel="t [s]", ylabel="rad")
    axes[0].legend()
    if contact:
        points, _ = contact_path(ex, tr, contact)
        axes[1].plot(points[:, 0], points[:, 1])
        axes[1].plot(points[:1, 0], points[:1, 1], "o")
        axes[1].set(title="contact path on the plane", xlabel="x [m]", ylabel="y [m]", aspect="equal")
    else:
        axis = jax.vmap(lambda q: body_poses(ex.mechanism)(q)[body].R[:, 2])(tr.q)
        axes[1].plot(axis[:, 0], axis[:, 1])
        axes[1].set(title="symmetry axis seen from above", xlabel="x", ylabel="y", aspect="equal")
    e = np.asarray(tr.energy())
    axes[2].plot(tr.t, (e - e[0]) / abs(e[0]))
    axes[2].set(title="relative energy change", xlabel="t [s]")
    for ax in axes:
        ax.grid(alpha=0.3)
    path = out_path(filename)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def top():
    ex = models.get("top")
    tr = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=SPAN["full"], saveat=201, **TIGHT)
    theta = np.asarray(tr.coordinate("top.theta"))
    print(f"top, steady precession (φ̇ = {sp.top_precession_rate(0.5, 60.0):.4f} rad/s from the closed form): "
          f"θ varies by {np.ptp(theta):.1e} rad over {SPAN['full']:g} s")
    check("steady top: θ range [rad]", np.ptp(theta), 1e-12)
    ex = sp.heavy_top(precession=0.0)
    tr = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=SPAN["full"], saveat=201, **TIGHT)
    p = ex.model.params
    poses = body_poses(ex.mechanism)

    def momenta(q, qd):
        P = poses(q, qd)["top"]
        H = p["top"]["mass"] * jnp.cross(P.r, P.v) + P.R @ (p["top"]["inertia"] @ P.w_body)
        return jnp.stack([H[2], H @ P.R[:, 2]])

    mom = jax.vmap(momenta)(tr.q, tr.qd)
    print(f"top, released without precession: nutation {np.ptp(np.asarray(tr.coordinate('top.theta'))):.3f} rad; "
          f"relative drift of E {relative_drift(tr.energy()):.1e}, p_φ {relative_drift(mom[:, 0]):.1e}, "
          f"p_ψ {relative_drift(mom[:, 1]):.1e}")
    check("nutating top: relative drift of E", relative_drift(tr.energy()), 5e-12)
    check("nutating top: relative drift of p_φ", relative_drift(mom[:, 0]), 5e-12)
    check("nutating top: relative drift of p_ψ", relative_drift(mom[:, 1]), 5e-12)
    return figure(ex, tr, "nutating top", "spatial_top.png")


def disk():
    ex = models.get("rolling-disk")
    tr = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=SPAN["full"], saveat=201, **TIGHT)
    _, slip = contact_path(ex, tr, "contact")
    print(f"disk, steady circular rolling: tilt varies by {np.ptp(np.asarray(tr.coordinate('disk.theta'))):.1e} "
          f"rad over {SPAN['full']:g} s; energy drift {relative_drift(tr.energy()):.1e}; contact velocity {slip:.1e} m/s")
    check("steady disk: tilt range [rad]", np.ptp(np.asarray(tr.coordinate("disk.theta"))), 5e-13)
    path = figure(ex, tr, "rolling disk", "spatial_disk.png", contact="contact")
    crit = sp.disk_critical_spin()
    for factor in (1.3, 1.1, 0.9, 0.7) if SPAN["full"] >= 5 else (1.3, 0.7):
        e2 = sp.disk(theta0=math.pi / 2 - 1e-3, precession=0.0, spin=factor * crit)
        t2 = mbd.simulate(e2.model, e2.q0, e2.qd0, t1=6.0 * SPAN["full"] / 5.0, saveat=201, **TIGHT)
        tilt = float(jnp.max(jnp.abs(t2.coordinate("disk.theta") - math.pi / 2)))
        print(f"  upright at {factor:.1f} × Ω_c (Ω_c = {crit:.3f} rad/s): largest tilt {tilt:.3f} rad "
              f"({'stays up' if tilt < 0.05 else 'falls'})")
        if factor > 1:
            check(f"upright disk at {factor:.1f} × Ω_c stays up: largest tilt [rad]", tilt, 0.05)
        else:
            check(f"upright disk at {factor:.1f} × Ω_c falls: largest tilt [rad]", tilt, lower=0.05)
    return path


def hemisphere():
    ex = models.get("rolling-hemisphere")
    t1 = min(ex.t1, SPAN["full"])
    tr = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=t1, saveat=201, **TIGHT)
    qv = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=t1, saveat=201, formulation=models.quasi_velocities(ex),
                      **TIGHT)
    _, slip = contact_path(ex, tr, "base")
    print(f"rolling hemisphere: energy drift {relative_drift(tr.energy()):.1e}; contact velocity {slip:.1e} m/s; "
          f"quasi-velocities u = ω' against augmented: max |Δq| {float(jnp.max(jnp.abs(qv.q - tr.q))):.1e}")
    check("hemisphere: relative energy drift", relative_drift(tr.energy()), 2e-11)
    check("hemisphere: contact velocity [m/s]", slip, 1e-14)
    check("hemisphere: quasi-velocity vs augmented max |Δq|", jnp.max(jnp.abs(qv.q - tr.q)), 5e-10)
    return figure(ex, tr, "rolling hemisphere", "spatial_hemisphere.png", contact="base")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 s runs instead of 5 s (smoke test)")
    if parser.parse_args().quick:
        SPAN["full"] = 1.0
    for path in (top(), disk(), hemisphere()):
        print(f"plot: {path}")
    finish()


if __name__ == "__main__":
    main()
