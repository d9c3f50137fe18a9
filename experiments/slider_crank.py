"""Slider-crank (Haug §3.6, ch. 6): kinematically driven, then free under gravity.

1. Crank driven at ω = 2π rad/s: kinematic analysis over one turn; slider position,
   velocity and acceleration against the closed form
   x = r cos θ + sqrt(L² − r² sin² θ); dynamic simulation of the same zero-dof system
   gives the driving torque from the driver's multiplier.
2. Free slider-crank (motor torque, slider spring-damper) under gravity for 2 s with
   projection: constraint residuals and joint reactions.

Run: python experiments/slider_crank.py   (plot: experiments/out/slider_crank.png)
"""

import time

import jax
import jax.numpy as jnp

import mbdjax as mbd
from mbdjax.models import slider_crank
from mbdjax.models._slider_crank import L_ROD, R_CRANK

from _common import check, finish, out_path, plt


def closed_form(theta, omega, r=R_CRANK, L=L_ROD):
    """Slider x, ẋ, ẍ at crank angle θ = ωt (differentiated by jax for ẋ, ẍ)."""
    x = lambda t: r * jnp.cos(omega * t) + jnp.sqrt(L**2 - (r * jnp.sin(omega * t)) ** 2)  # noqa: E731
    t = theta / omega
    return x(t), jax.vmap(jax.grad(x))(t), jax.vmap(jax.grad(jax.grad(x)))(t)


def main():
    ex = slider_crank(driven=True)
    model = ex.model
    omega = float(model.params["drive"]["omega"])
    ts = jnp.linspace(0.0, 1.0, 201)
    q, qd, qdd = mbd.kinematic_analysis(model, ex.q0, ts)
    i = model.index("slider.x")
    x, v, a = closed_form(omega * ts, omega)
    err = [float(jnp.max(jnp.abs(u - w))) for u, w in ((q[:, i], x), (qd[:, i], v), (qdd[:, i], a))]
    print("driven slider-crank, kinematic analysis over one turn (201 points)")
    print(f"  max |x − closed form|  {err[0]:.2e} m\n  max |v − closed form|  {err[1]:.2e} m/s\n"
          f"  max |a − closed form|  {err[2]:.2e} m/s²")

    traj = mbd.simulate(model, ex.q0, ex.qd0, t1=1.0, saveat=ts)
    torque = -traj.multiplier("drive")  # driver row φ_crank − ωt: reaction torque −λ on the crank
    print(f"  dynamic run: max |x − kinematic| {float(jnp.max(jnp.abs(traj.q[:, i] - q[:, i]))):.2e} m; "
          f"driving torque range [{float(jnp.min(torque)):.3f}, {float(jnp.max(torque)):.3f}] N·m")

    free = slider_crank(driven=False)
    t0 = time.perf_counter()
    tr = mbd.simulate(free.model, free.q0, free.qd0, t1=free.t1, saveat=401)
    jax.block_until_ready(tr.q)
    print(f"free slider-crank, {free.t1} s: {int(tr.num_steps)} steps, {time.perf_counter() - t0:.2f} s "
          f"(with compilation); max |Φ| {float(jnp.max(jnp.abs(tr.position_residual()))):.1e}, "
          f"max |Φ_q q̇ − ν| {float(jnp.max(jnp.abs(tr.velocity_residual()))):.1e}")
    for label, e in zip(("x", "v", "a"), err):
        check(f"driven {label} vs closed form", e, 1e-14)
    check("free max |Φ|", jnp.max(jnp.abs(tr.position_residual())), 1e-13)
    check("free max |Φ_q q̇ − ν|", jnp.max(jnp.abs(tr.velocity_residual())), 1e-13)

    fig, axes = plt.subplots(2, 2, figsize=(11, 7), constrained_layout=True)
    axes[0, 0].plot(ts, q[:, i], label="kinematic analysis")
    axes[0, 0].plot(ts, x, "--", label="closed form")
    axes[0, 0].set(title="driven: slider position", xlabel="t [s]", ylabel="x [m]")
    axes[0, 0].legend()
    axes[0, 1].plot(ts, torque)
    axes[0, 1].set(title="driven: driving torque from λ", xlabel="t [s]", ylabel="τ [N·m]")
    axes[1, 0].plot(tr.t, tr.coordinate("crank.phi"), label="crank φ [rad]")
    axes[1, 0].plot(tr.t, 10 * tr.coordinate("slider.x"), label="10 × slider x [m]")
    axes[1, 0].set(title="free: motion", xlabel="t [s]")
    axes[1, 0].legend()
    for joint in ("crank_pin", "rod_crank", "rod_slider", "guide"):
        f, _ = tr.reaction(joint)
        axes[1, 1].plot(tr.t, jnp.linalg.norm(f, axis=-1), label=joint)
    axes[1, 1].set(title="free: joint reaction forces", xlabel="t [s]", ylabel="|F| [N]")
    axes[1, 1].legend()
    fig.savefig(out_path("slider_crank.png"), dpi=110)
    print(f"plot: {out_path('slider_crank.png')}")
    return max(err)


if __name__ == "__main__":
    main()
    finish()
