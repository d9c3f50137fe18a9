"""Identify dry and viscous friction of a sliding mass from a noisy position trace.

A 2 kg block on a surface is pushed by a known force F(t) = 20 sin(2t) N. It feels
Coulomb friction μ_k N (smooth law, velocity scale 1e-3 m/s, μ_s = μ_k known to be
equal) and viscous damping c. We fit μ_k and c to 6 s of position sampled every
0.05 s with 1 % noise, starting from μ_k = 0.2 and c = 0.8 N·s/m (truth: 0.3 and
1.5). The gradient of the loss with respect to μ_k is nonzero and matches central
differences. Dry friction does not hide behind a zero gradient, because the smooth
law's content has an exact derivative.

Run: python experiments/fit_friction.py [--quick]   (plot: experiments/out/fit_friction.png)
"""

import argparse

import diffrax
import jax
import jax.numpy as jnp
import numpy as np

import mbdjax as mbd
from mbdjax.network import Network

from _common import check, finish, out_path, plt

TRUE = {"mu_k": 0.3, "c": 1.5}


def block():
    net = Network()
    net.node("x", "translational")
    net.mass("m", "x", 2.0)
    net.effort_source("F", "x", "ground", lambda t, p: 20.0 * jnp.sin(2.0 * t))
    net.coulomb_friction("dry", "x", "ground", mu_k=TRUE["mu_k"], mu_s=TRUE["mu_k"], normal=2.0 * 9.81,
                         velocity_scale=1e-3)
    net.damper("visc", "x", "ground", c=TRUE["c"])
    return net.build()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a shorter record (smoke test)")
    quick = parser.parse_args().quick
    model = block()
    t1 = 2.0 if quick else 6.0
    ts = jnp.arange(0.05, t1 + 1e-9, 0.05)
    kw = dict(rtol=1e-10, atol=1e-12, solver=diffrax.Kvaerno5(), max_steps=100_000)
    x0, v0 = jnp.zeros(1), jnp.zeros(1)
    clean = np.asarray(mbd.simulate(model, x0, v0, t1=ts[-1], saveat=ts, **kw).q[:, 0])
    rng = np.random.default_rng(1)
    noisy = clean + 0.01 * np.std(clean) * rng.standard_normal(clean.shape)
    data = {"t": np.asarray(ts), "y": noisy}
    start = {**model.params, "dry": {**model.params["dry"], "mu_k": 0.2, "mu_s": 0.3}, "visc": {"c": 0.8}}
    free = ("dry.mu_k", "visc.c")
    L, theta0 = mbd.fit_loss(model, data, start, free=free, outputs=("x.x",), q0=x0, qd0=v0, **kw)
    grad = np.asarray(jax.grad(L)(theta0))
    h = 1e-6
    fd = [(float(L(theta0.at[j].add(h * theta0[j]))) - float(L(theta0.at[j].add(-h * theta0[j]))))
          / (2 * h * float(theta0[j])) for j in range(2)]
    print(f"loss gradient at the start: dL/dμ_k = {grad[0]:.6e} (central differences {fd[0]:.6e}), "
          f"dL/dc = {grad[1]:.6e} ({fd[1]:.6e})")
    for j, (name, bound) in enumerate(zip(free, (1e-4, 1e-3))):
        check(f"dL/d{name} vs central differences, relative", abs(grad[j] - fd[j]) / abs(fd[j]), bound)
    res = mbd.fit(model, data, start, free=free, outputs=("x.x",), q0=x0, qd0=v0, log_every=5, **kw)
    print(res.report())
    for j, name in enumerate(free):
        truth = TRUE["mu_k"] if j == 0 else TRUE["c"]
        print(f"{name}: {res.values[j]:.5f} ± {res.std_errors[j]:.5f} (truth {truth}, "
              f"{abs(res.values[j] - truth) / res.std_errors[j]:.1f} standard errors)")
        check(f"{name} |estimate − truth| / SE", abs(res.values[j] - truth) / res.std_errors[j], 3.0)
    fitted = mbd.simulate(model, x0, v0, t1=ts[-1], saveat=ts, params=res.params, **kw)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 6), constrained_layout=True)
    ax1.plot(ts, noisy, ".", ms=3, label="measured (1 % noise)")
    ax1.plot(ts, np.asarray(fitted.q[:, 0]), label="fitted")
    ax1.set(title="sliding block: position", xlabel="t [s]", ylabel="x [m]")
    ax1.legend(fontsize="small")
    ax1.grid(alpha=0.3)
    ax2.semilogy(res.history, "o-")
    ax2.set(title="loss (Levenberg–Marquardt)", xlabel="step")
    ax2.grid(alpha=0.3)
    path = out_path("fit_friction.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
    finish()
