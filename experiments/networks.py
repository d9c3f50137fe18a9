"""Multi-domain networks (Fabien ch. 1) in the constrained Lagrangian core.

1. Series RLC step response, under- and over-damped, against the closed form.
2. A DC motor driving the planar slider-crank (one Model: mechanism + network):
   crank speed, armature current, and the power audit (electrical power in =
   mechanical power out + copper loss + rate of magnetic energy).

Run: python experiments/networks.py [--quick]   (plots: experiments/out/network_*.png;
--quick: one resistance and a short motor run, for a smoke test)
"""

import argparse
import math

import jax.numpy as jnp
import numpy as np

import mbdjax as mbd
from mbdjax import models
from mbdjax.models._networks import rlc_capacitor_voltage

from _common import check, finish, out_path, plt

TIGHT = dict(rtol=1e-10, atol=1e-12)


def rlc(quick=False):
    ex = models.get("rlc")
    fig, ax = plt.subplots(figsize=(7, 4), constrained_layout=True)
    for R in (1.0,) if quick else (0.5, 1.0, 4.0):
        p = {**ex.model.params, "R": {"R": R}}
        tr = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=ex.t1, saveat=401, params=p, **TIGHT)
        t = np.asarray(tr.t)
        v = np.asarray(tr.effort("C"))
        err = float(np.max(np.abs(v - rlc_capacitor_voltage(t, R, 0.5, 0.25))))
        audit = float(jnp.max(jnp.abs(tr.power_balance()["residual"])))
        zeta = R / 2 * math.sqrt(0.25 / 0.5)
        print(f"RLC R = {R:g} Ω (ζ = {zeta:.2f}): capacitor voltage within {err:.1e} V of the closed form; "
              f"power balance residual {audit:.1e} W")
        check(f"RLC R = {R:g}: max |v_C − closed form| [V]", err, 2e-10)
        check(f"RLC R = {R:g}: power balance residual [W]", audit, 1e-14)
        ax.plot(t, v, label=f"R = {R:g} Ω (ζ = {zeta:.2f})")
    ax.set(title="series RLC: capacitor voltage after a 1 V step", xlabel="t [s]", ylabel="v_C [V]")
    ax.legend()
    ax.grid(alpha=0.3)
    path = out_path("network_rlc.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def motor_crank(quick=False):
    ex = models.get("dc-motor-crank")
    t1 = 0.3 if quick else ex.t1
    a = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=t1, saveat=401, **TIGHT)
    b = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=t1, saveat=401, formulation="nullspace", **TIGHT)
    t = np.asarray(a.t)
    balance = a.power_balance()
    # The network's elements absorb the power they pass to the mechanism: the
    # residual is minus the power into the crank, which equals dE_mech/dt + losses.
    print(f"DC motor on the slider-crank: augmented and null space agree to "
          f"{float(jnp.max(jnp.abs(a.q - b.q))):.1e} in q; final crank speed "
          f"{float(a.velocity('crank.phi')[-1]):.2f} rad/s, current {float(a.flow('dcm')[-1, 0]):.3f} A")
    check("motor crank: augmented vs null space max |Δq|", jnp.max(jnp.abs(a.q - b.q)), 1e-10)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4), constrained_layout=True)
    axes[0].plot(t, a.velocity("crank.phi"))
    axes[0].set(title="crank speed", xlabel="t [s]", ylabel="rad/s")
    axes[1].plot(t, a.flow("dcm")[:, 0])
    axes[1].set(title="armature current", xlabel="t [s]", ylabel="A")
    axes[2].plot(t, -np.asarray(balance["V"]), label="source delivers")
    axes[2].plot(t, -np.asarray(balance["residual"]), label="into the mechanism")
    axes[2].set(title="power", xlabel="t [s]", ylabel="W")
    axes[2].legend()
    for ax in axes:
        ax.grid(alpha=0.3)
    path = out_path("network_motor_crank.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a shorter run (smoke test)")
    quick = parser.parse_args().quick
    for path in (rlc(quick), motor_crank(quick)):
        print(f"plot: {path}")
    finish()


if __name__ == "__main__":
    main()
