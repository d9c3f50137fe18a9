"""Benchmark: the cost of the robust (augmented Lagrangian) formulation on the field's
hard cases, against every other formulation in the same run.

Systems: IFToMM A02, the N four-bar at the benchmark's N = 40 (243 coordinates, 242
rows, flat and rank-deficient twice a revolution; 10 s, default settings: projection,
Tsit5, rtol 1e-8, atol 1e-10), and the A04 kind, Bricard's overconstrained 6R loop
(35 Euler-parameter coordinates, one redundant row; 10 s from rest, rtol 1e-10, atol
1e-12; `mbdjax.models._iftomm`). Each formulation runs once to compile, then
`--repeat` times in alternation with the others (one call each per round); reported:
compile time, the best run, steps, and the ratio of the best run to the augmented
formulation's (the default) in the same run, together with the median of the per-round
ratios, which a slow spell of the machine affects on both sides. Target (issue): the
augmented Lagrangian at most 2× the augmented formulation on runs that both complete.

Run: python experiments/bench/robust.py [--quick] [--repeat 3] [--out FILE]
(--quick: A02 at N = 10 and Bricard over 2 s; the full run writes
experiments/bench/results_robust.md)
"""

from __future__ import annotations

import argparse
import datetime
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # as in core.py: one BLAS thread next to XLA

import jax  # noqa: E402
import numpy as np  # noqa: E402

import mbdjax as mbd  # noqa: E402
from mbdjax.models._iftomm import bricard, n_four_bar  # noqa: E402

from core import cpu_model, machine_line  # noqa: E402

jax.config.update("jax_enable_x64", True)

FORMULATIONS = ("augmented", "augmented_lagrangian", "nullspace", "multiplier_free", "quasi_velocity")
HERE = os.path.dirname(os.path.abspath(__file__))


def cases(quick):
    a02 = n_four_bar(10 if quick else 40)
    bric = bricard(t1=2.0 if quick else 10.0)
    return [(f"A02 N = {10 if quick else 40}, {a02.t1:g} s", a02, dict(t1=a02.t1)),
            (f"A04 Bricard, {bric.t1:g} s", bric, dict(t1=bric.t1, rtol=1e-10, atol=1e-12))]


def call(ex, formulation, kw):
    traj = mbd.simulate(ex.model, ex.q0, ex.qd0, formulation=formulation, saveat=2, throw=False,
                        max_steps=20_000, **kw)
    jax.block_until_ready(traj.q)
    return traj


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--formulations", nargs="+", default=list(FORMULATIONS), choices=FORMULATIONS)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    out = args.out or os.path.join(HERE, "results_robust_quick.md" if args.quick else "results_robust.md")
    lines = [f"# The robust formulation's cost ({'quick' if args.quick else 'full'} run)", "",
             f"{datetime.date.today()}, {machine_line()}, CPU {cpu_model()}; best of {args.repeat} runs after "
             "compilation, formulations in alternation. Ratio: best run / the augmented formulation's best "
             "run; paired: median over rounds of the same ratio within a round.", ""]
    for title, ex, kw in cases(args.quick):
        compile_s, status, steps = {}, {}, {}
        for form in args.formulations:
            start = time.perf_counter()
            traj = call(ex, form, kw)
            first = time.perf_counter() - start
            start = time.perf_counter()
            traj = call(ex, form, kw)
            second = time.perf_counter() - start
            compile_s[form] = first - second
            status[form] = "ok" if bool(traj.success) else str(traj.result).split("<")[-1].rstrip(">")[:40]
            steps[form] = int(traj.num_steps)
        rounds = {form: [] for form in args.formulations}
        for _ in range(args.repeat):
            for form in args.formulations:
                start = time.perf_counter()
                call(ex, form, kw)
                rounds[form].append(time.perf_counter() - start)
        base = rounds.get("augmented")
        lines += [f"## {title}", "", "| formulation | outcome | steps | compile (s) | run (s) | ratio | paired |",
                  "|---|---|---|---|---|---|---|"]
        for form in args.formulations:
            best = min(rounds[form])
            ok = status[form] == "ok" and base is not None and status.get("augmented") == "ok"
            ratio = f"{best / min(base):.2f}" if ok else "–"
            paired = f"{np.median(np.array(rounds[form]) / np.array(base)):.2f}" if ok else "–"
            row = f"| {form} | {status[form]} | {steps[form]} | {compile_s[form]:.1f} | {best:.3f} | {ratio} | {paired} |"
            lines.append(row)
            print(title, row, flush=True)
        lines.append("")
    with open(out, "w") as fh:
        fh.write("\n".join(lines))
    print("table:", out)


if __name__ == "__main__":
    main()
