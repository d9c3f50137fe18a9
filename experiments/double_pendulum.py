"""Double pendulum: the planar front end (absolute coordinates, 6 coordinates and 4
constraints) against the hand-derived two-angle Lagrangian integrated by SciPy.

Run: python experiments/double_pendulum.py   (plot: experiments/out/double_pendulum.png)
"""

import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp

import mbdjax as mbd
from mbdjax.models import double_pendulum

from _common import check, finish, out_path, plt


def hand_rhs(t, y, m=1.0, l=1.0, g=9.81):
    """Two uniform rods, angles θ from the downward vertical (hand derivation)."""
    th1, th2, w1, w2 = y
    s, c = np.sin(th1 - th2), np.cos(th1 - th2)
    M = m * l * l * np.array([[4 / 3, 0.5 * c], [0.5 * c, 1 / 3]])
    rhs = -0.5 * m * l * l * s * np.array([w2**2, -(w1**2)]) - m * g * l * np.array(
        [1.5 * np.sin(th1), 0.5 * np.sin(th2)])
    return np.concatenate([[w1, w2], np.linalg.solve(M, rhs)])


def main(t1=5.0):
    ex = double_pendulum()
    ts = np.linspace(0.0, t1, 251)
    tr = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=t1, saveat=jnp.asarray(ts), rtol=1e-11, atol=1e-12)
    th = np.stack([tr.coordinate("link1.phi"), tr.coordinate("link2.phi")], axis=1) + np.pi / 2
    ref = solve_ivp(hand_rhs, (0, t1), np.concatenate([th[0], [0.0, 0.0]]), method="DOP853",
                    rtol=1e-12, atol=1e-12, t_eval=ts).y[:2].T
    err = float(np.max(np.abs(th - ref)))
    e = np.asarray(tr.energy())
    print(f"double pendulum over {t1} s: max angle difference to the two-angle Lagrangian {err:.2e} rad; "
          f"energy drift {np.max(np.abs(e - e[0])):.1e} J; max |Φ| "
          f"{float(jnp.max(jnp.abs(tr.position_residual()))):.1e}")
    check(f"max angle difference over {t1:g} s [rad]", err, 5e-11)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
    axes[0].plot(ts, th[:, 0], label="θ1 (mbdjax)")
    axes[0].plot(ts, th[:, 1], label="θ2 (mbdjax)")
    axes[0].plot(ts, ref[:, 0], "k:", ts, ref[:, 1], "k:", label="two-angle Lagrangian")
    axes[0].set(xlabel="t [s]", ylabel="rad", title="angles from the vertical")
    axes[0].legend()
    axes[1].semilogy(ts, np.abs(th - ref).max(axis=1) + 1e-18)
    axes[1].set(xlabel="t [s]", title="max angle difference [rad]")
    fig.savefig(out_path("double_pendulum.png"), dpi=110)
    print(f"plot: {out_path('double_pendulum.png')}")
    return err


if __name__ == "__main__":
    main()
    finish()
