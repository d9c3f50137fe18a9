"""IFToMM benchmark A02, the N four-bar, through every formulation.

A row of N parallelogram loops of 1 m, 1 kg rods under gravity, B0 started at 1 m/s;
every link lies flat twice per revolution, and there Φ_q loses rank (N + 1 degrees
of freedom for an instant). Each formulation runs 10 s with the default settings
(projection, Tsit5, rtol 1e-8, atol 1e-10) under a step budget; the script prints,
per run, the crank-angle error against the reference, the energy drift, the loop
closure and the wall time after compilation, and writes the table to
its section of `experiments/iftomm/results.md` (with `--write`).

Reference: not the benchmark library's data file (not reachable here) but an
independent one: the mechanism moves as one parallelogram, so its crank angle obeys
the hand-derived one-angle Lagrange equation (`mbdjax.models._iftomm.
n_four_bar_reference`), integrated by scipy's DOP853 at rtol = atol = 1e-12.

Run: python experiments/iftomm/a02_n_four_bar.py [--n 10 40] [--formulations ...]
     [--max-steps 20000] [--write]
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.integrate import solve_ivp

from _table import fmt, timed_run, write_section
from mbdjax.models._iftomm import n_four_bar, n_four_bar_reference

FORMULATIONS = ("augmented", "nullspace", "multiplier_free", "quasi_velocity", "augmented_lagrangian")


def reference(n, ts):
    rhs, y0 = n_four_bar_reference(n)
    return solve_ivp(rhs, (0.0, float(ts[-1])), y0, t_eval=ts, rtol=1e-12, atol=1e-12, method="DOP853").y[0]


def run_one(ex, formulation, ts, max_steps):
    """`(status, steps, trajectory or None, wall s after compilation or None)`."""
    return timed_run(ex, t1=float(ts[-1]), saveat=ts, formulation=formulation, max_steps=max_steps)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[10])
    parser.add_argument("--formulations", nargs="+", default=list(FORMULATIONS), choices=FORMULATIONS)
    parser.add_argument("--max-steps", type=int, default=20_000)
    parser.add_argument("--t1", type=float, default=10.0)
    parser.add_argument("--write", action="store_true", help="replace the A02 section of results.md")
    args = parser.parse_args(argv)
    rows = []
    for n in args.n:
        ex = n_four_bar(n)
        ts = np.linspace(0.0, args.t1, 401)
        ref = reference(n, ts)
        for form in args.formulations:
            status, steps, traj, wall = run_one(ex, form, ts, args.max_steps)
            err = drift = closure = None
            if traj is not None:
                theta = np.unwrap(np.asarray(traj.coordinate("crank0.phi")))
                err = float(np.max(np.abs(theta - ref)))
                energy = np.asarray(traj.energy())
                drift = float(np.max(np.abs(energy - energy[0])))
                closure = float(np.max(np.abs(np.asarray(traj.position_residual()))))
            row = (n, form, status, steps, err, drift, closure, wall)
            rows.append(row)
            print(f"N = {n:3d}  {form:22s} {status:10.60s} steps {steps!s:>6}  "
                  f"error {fmt(err)} rad  energy drift {fmt(drift)} J  closure {fmt(closure)} m  "
                  f"wall {fmt(wall, '.3f')} s", flush=True)
    if args.write:
        body = (f"{args.t1:g} s from the benchmark's initial state, default settings (projection, Tsit5, rtol "
                f"1e-8, atol 1e-10), at most {args.max_steps} steps; error: largest |θ − θ_ref| of crank 0 over "
                "401 output times against the one-angle reference (scipy DOP853, rtol 1e-12); energy drift: "
                "largest |E − E(0)|; closure: largest |Φ|; wall: one run after compilation, 2-core machine.\n\n"
                "| N | formulation | outcome | steps | error (rad) | energy drift (J) | closure (m) | wall (s) |\n"
                "|---|---|---|---|---|---|---|---|\n" + "".join(_row(*row) for row in rows))
        print("table:", write_section("A02, the N four-bar", body))


def _row(n, form, status, steps, err, drift, closure, wall):
    return (f"| {n} | {form} | {status} | {steps if steps is not None else '–'} | {fmt(err)} | "
            f"{fmt(drift)} | {fmt(closure)} | {fmt(wall, '.3f')} |\n")


if __name__ == "__main__":
    main()
