"""Grashof crank-rocker four-bar under gravity (free, one degree of freedom).

Conservative (revolute joints, gravity only), so total energy must stay constant;
with projection the loop-closure residual stays at round-off. Also reports the
existence check along the motion (smallest singular value of Φ_q).

Run: python experiments/four_bar.py   (plot: experiments/out/four_bar.png)
"""

import jax.numpy as jnp
import numpy as np

import mbdjax as mbd
from mbdjax.models import four_bar

from _common import check, finish, out_path, plt


def main():
    ex = four_bar()
    model = ex.model
    print(mbd.check(model, ex.q0))
    tr = mbd.simulate(model, ex.q0, ex.qd0, t1=ex.t1, saveat=501, rtol=1e-10, atol=1e-12)
    e = tr.energy()
    scale = float(jnp.max(tr.kinetic_energy()))
    drift = float(jnp.max(jnp.abs(e - e[0]))) / scale
    closure = float(jnp.max(jnp.abs(tr.position_residual())))
    sig = [mbd.check(model, np.asarray(qk)).sigma_min for qk in tr.q[::25]]
    print(f"{ex.t1} s: {int(tr.num_steps)} steps; energy drift {drift:.2e} (relative to max T); "
          f"loop closure {closure:.1e} m; min σ_min(Φ_q) along the motion {min(sig):.3f}")
    check("energy drift / max T", drift, 1e-9)
    check("loop closure [m]", closure, 1e-14)
    # coupler midpoint path
    cx, cy = tr.coordinate("coupler.x"), tr.coordinate("coupler.y")
    fig, axes = plt.subplots(1, 3, figsize=(14, 4), constrained_layout=True)
    axes[0].plot(cx, cy)
    axes[0].set(title="coupler centroid path", xlabel="x [m]", ylabel="y [m]", aspect="equal")
    axes[1].plot(tr.t, tr.coordinate("crank.phi"), label="crank φ")
    axes[1].plot(tr.t, tr.coordinate("rocker.phi"), label="rocker φ")
    axes[1].set(title="link angles", xlabel="t [s]", ylabel="rad")
    axes[1].legend()
    axes[2].plot(tr.t, (e - e[0]) / scale)
    axes[2].set(title="relative energy change", xlabel="t [s]")
    fig.savefig(out_path("four_bar.png"), dpi=110)
    print(f"plot: {out_path('four_bar.png')}")
    return drift, closure


if __name__ == "__main__":
    main()
    finish()
