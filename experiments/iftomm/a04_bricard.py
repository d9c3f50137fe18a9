"""IFToMM benchmark A04 kind, Bricard's overconstrained 6R loop, through every formulation.

Five 1 m, 1 kg rods and ground on the edges of a unit cube, joined by six revolutes
whose axes are perpendicular to the links they join (`mbdjax.models._iftomm.bricard`):
Grübler's count gives 0 degrees of freedom, the loop moves with 1, so one of its 35
rows is redundant at every configuration. Released from rest under gravity, it runs
10 s (rtol 1e-10, atol 1e-12, projection, Tsit5) through every formulation; the
script prints the energy drift relative to the largest kinetic energy (the system is
conservative, so energy is the reference), the closure, the steps and the wall time
after compilation, and with `--write` replaces the A04 section of
`experiments/iftomm/results.md`. `--universal` runs the same loop with a universal
joint in place of the last revolute (no redundant row) for comparison.

The benchmark library's own A04 data could not be reached here; this is the same
kind of mechanism (five rods, six revolutes, rank deficiency 1), not its numbers.

Run: python experiments/iftomm/a04_bricard.py [--t1 10] [--formulations ...] [--write]
"""

from __future__ import annotations

import argparse

import numpy as np

from _table import fmt, timed_run, write_section
from mbdjax.models._iftomm import bricard

FORMULATIONS = ("augmented", "nullspace", "multiplier_free", "quasi_velocity", "augmented_lagrangian")


def run_one(ex, formulation, t1, max_steps):
    """`(status, steps, trajectory or None, wall s after compilation or None)`."""
    return timed_run(ex, t1=t1, saveat=201, formulation=formulation, rtol=1e-10, atol=1e-12,
                     max_steps=max_steps)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--t1", type=float, default=10.0)
    parser.add_argument("--formulations", nargs="+", default=list(FORMULATIONS), choices=FORMULATIONS)
    parser.add_argument("--max-steps", type=int, default=20_000)
    parser.add_argument("--universal", action="store_true", help="a universal joint at j5 (no redundant row)")
    parser.add_argument("--write", action="store_true", help="replace the A04 section of results.md")
    args = parser.parse_args(argv)
    ex = bricard(t1=args.t1, revolute_at_j5=not args.universal)
    lines = []
    for form in args.formulations:
        status, steps, traj, wall = run_one(ex, form, args.t1, args.max_steps)
        drift = closure = kmax = None
        if traj is not None:
            energy, kinetic = np.asarray(traj.energy()), np.asarray(traj.kinetic_energy())
            kmax = float(np.max(kinetic))
            drift = float(np.max(np.abs(energy - energy[0]))) / kmax
            closure = float(np.max(np.abs(np.asarray(traj.position_residual()))))
        print(f"{ex.name}  {form:22s} {status:10.60s} steps {steps!s:>6}  max K {fmt(kmax, '.3f')} J  "
              f"drift/max K {fmt(drift)}  closure {fmt(closure)} m  wall {fmt(wall, '.3f')} s", flush=True)
        lines.append(f"| {ex.name} | {form} | {status} | {steps if steps is not None else '–'} | "
                     f"{fmt(kmax, '.3f')} | {fmt(drift)} | {fmt(closure)} | {fmt(wall, '.2f')} |")
    if args.write:
        body = (f"Bricard's orthogonal 6R loop (35 coordinates, 35 rows of rank 34), {args.t1:g} s from rest "
                "under gravity, rtol 1e-10, atol 1e-12, projection, Tsit5. Drift: largest |E − E(0)| over the "
                "largest kinetic energy (the reference: a conservative system keeps E); closure: largest |Φ|; "
                "wall: one run after compilation, 2-core machine. The benchmark library's A04 data could not "
                "be reached; this is the same kind of loop, not its numbers.\n\n"
                "| model | formulation | outcome | steps | max K (J) | drift / max K | closure (m) | wall (s) |\n"
                "|---|---|---|---|---|---|---|---|\n" + "\n".join(lines) + "\n")
        print("table:", write_section("A04, Bricard's loop" + (" (universal joint)" if args.universal else ""),
                                      body))


if __name__ == "__main__":
    main()
