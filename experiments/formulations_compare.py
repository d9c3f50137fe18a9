"""Formulations side by side (THEORY §5): augmented (Haug), null space with coordinate
partitioning (Wehage–Haug), multiplier-free (Zhang), quasi-velocities (Greenwood), on the
same systems, at rtol 1e-10, over 3 s.

For each formulation × example: the largest difference in q from the augmented
result, the position and velocity constraint residuals, solver steps (Tsit5 with
projection evaluates the right-hand side 7 times per step), run time after
compilation, and the number of equations solved per right-hand side.

Run: python experiments/formulations_compare.py   (table: experiments/out/formulations.md)
"""

import time

import jax
import jax.numpy as jnp

import mbdjax as mbd
from mbdjax import models

from _common import check, finish, out_path

EXAMPLES = ["slider-crank-free", "four-bar", "double-pendulum", "elliptic-pendulum", "rolling-disk-generic"]
FORMULATIONS = {"augmented": mbd.Augmented(), "nullspace": mbd.NullSpace(), "multiplier_free": mbd.MultiplierFree(),
                "quasi_velocity": mbd.QuasiVelocity()}


def run(ex, form):
    kw = dict(t1=3.0, saveat=61, rtol=1e-10, atol=1e-12, formulation=form)
    jax.block_until_ready(mbd.simulate(ex.model, ex.q0, ex.qd0, **kw).q)
    start = time.perf_counter()
    tr = mbd.simulate(ex.model, ex.q0, ex.qd0, **kw)
    jax.block_until_ready(tr.q)
    return tr, time.perf_counter() - start


def main():
    rows = ["| example | formulation | max |Δq| vs augmented | max |Φ| | max |Bq̇ − b| | steps | run (ms) | equations |",
            "|---|---|---|---|---|---|---|---|"]
    for name in EXAMPLES:
        ex = models.get(name)
        ref, worst = None, 0.0
        for label, form in FORMULATIONS.items():
            tr, wall = run(ex, form)
            ref = tr if ref is None else ref
            dq = float(jnp.max(jnp.abs(tr.q - ref.q)))
            worst = max(worst, dq)
            pos = float(jnp.max(jnp.abs(tr.position_residual())))
            vel = float(jnp.max(jnp.abs(tr.velocity_residual())))
            eqs = form.equation_count(ex.model)
            f = ex.model.n - ex.model.m
            unknowns = {"augmented": f"{ex.model.n} q̈ + {ex.model.m} λ", "multiplier_free": f"{ex.model.n} q̈",
                        "nullspace": f"{f} v̇, {ex.model.m_h} positions by Newton",
                        "quasi_velocity": f"{ex.model.n} q̇ + {f} u̇"}[label]
            if label == "nullspace":
                label += f" ({len(tr.partition_history())} partitions)"
            rows.append(f"| {name} | {label} | {dq:.1e} | {pos:.1e} | {vel:.1e} | {int(tr.num_steps)} | "
                        f"{wall * 1e3:.1f} | {eqs} ({unknowns}) |")
            print(rows[-1], flush=True)
        check(f"{name}: max |Δq| of every formulation vs augmented", worst, 1e-7)
        if name == "elliptic-pendulum":  # the README's equation counts, 3 against 5
            for label, count in (("multiplier_free", 3), ("augmented", 5)):
                check(f"{name}: {label} equations", FORMULATIONS[label].equation_count(ex.model), count, lower=count)
    table = "\n".join(rows)
    with open(out_path("formulations.md"), "w") as fh:
        fh.write(table + "\n")
    print(f"\ntable: {out_path('formulations.md')}")
    finish()


if __name__ == "__main__":
    main()
