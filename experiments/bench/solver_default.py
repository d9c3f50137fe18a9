"""Experiment: the default solver (Tsit5) against Dopri8 at the default settings.

Every speed target of the project holds with the defaults a user gets: the default
projection, rtol 1e-8, atol 1e-10 and the default solver, Tsit5. At those tolerances a
higher-order pair takes far fewer steps, and every step also pays for the projection
(two Jacobians and two factorizations), so the step count weighs more than the stages
per step. This experiment measures both solvers on the same systems with everything
else at its default, to inform the choice of the default solver.

Systems (built-in examples, `mbdjax.models`): the 10- and 20-link pendulum chains and the
free slider-crank over 10 s, the four-bar over 10 s, the rolling disk and the top over
5 s, the Bricard loop over 5 s, Andrews' squeezer over 0.03 s. Per system and solver:
compile time (first call minus the best later one, the persistent compilation cache
off), run time (best of `--repeat` after compilation), steps, and the largest
coordinate error at `min(1 s, t1)` and at `t1` against a reference run of the same
model (Dopri8 at rtol 1e-13, atol 1e-15). The chains are chaotic, so only the error at
1 s compares accuracy there. The reference is this library's own tight run: it
compares two solvers of one model, not the model against an independent solution.

Run: python experiments/bench/solver_default.py [--systems chain10 ...] [--repeat 5] [--out FILE]
(the full run writes experiments/bench/results_solver_default.md; about 4 minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import datetime
import os
import time

os.environ.setdefault("MBDJAX_COMPILATION_CACHE", "off")   # compile times without the disk cache
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import diffrax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import mbdjax as mbd  # noqa: E402
from mbdjax import models  # noqa: E402

from core import cpu_model, machine_line  # noqa: E402

jax.config.update("jax_enable_x64", True)

SYSTEMS = {
    "chain10": (lambda: models.pendulum_chain(10), 10.0),
    "chain20": (lambda: models.pendulum_chain(20), 10.0),
    "slider-crank-free": (lambda: models.get("slider-crank-free"), 10.0),
    "four-bar": (lambda: models.get("four-bar"), 10.0),
    "rolling-disk": (lambda: models.get("rolling-disk"), 5.0),
    "top": (lambda: models.get("top"), 5.0),
    "bricard": (lambda: models.get("bricard"), 5.0),
    "andrews": (lambda: models.get("andrews"), 0.03),
}
SOLVERS = {"Tsit5 (default)": diffrax.Tsit5, "Dopri8": diffrax.Dopri8}


def study(name, repeat):
    build, t1 = SYSTEMS[name]
    ex = build()
    ts = jnp.asarray(sorted({0.0, min(1.0, t1), t1}))
    kw = dict(t1=t1, saveat=ts, drift_tol=None)
    ref = mbd.simulate(ex.model, ex.q0, ex.qd0, solver=diffrax.Dopri8(), rtol=1e-13, atol=1e-15,
                       max_steps=10**6, **kw)
    rows = []
    for label, make in SOLVERS.items():
        def run():
            traj = mbd.simulate(ex.model, ex.q0, ex.qd0, solver=make(), **kw)
            jax.block_until_ready(traj.q)
            return traj

        start = time.perf_counter()
        traj = run()
        first = time.perf_counter() - start
        best = np.inf
        for _ in range(repeat):
            start = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - start)
        err = np.max(np.abs(np.asarray(traj.q) - np.asarray(ref.q)), axis=1)
        rows.append((label, first - best, best, int(traj.num_steps), float(err[-2] if len(err) > 2 else err[-1]),
                     float(err[-1])))
    return ex, t1, rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    lines = ["| system | t1 (s) | solver | compile (s) | run (ms) | steps | error at min(1 s, t1) | error at t1 "
             "| run Tsit5 / Dopri8 |", "|---|---|---|---|---|---|---|---|---|"]
    for name in args.systems:
        ex, t1, rows = study(name, args.repeat)
        ratio = rows[0][2] / rows[1][2]
        for k, (label, compile_s, run_s, steps, e1, e_end) in enumerate(rows):
            lines.append(f"| {name} | {t1:g} | {label} | {compile_s:.2f} | {run_s * 1e3:.1f} | {steps} | {e1:.1e} "
                         f"| {e_end:.1e} | {f'{ratio:.2f}' if k == 1 else ''} |")
            print(lines[-1], flush=True)
    out = args.out or (None if args.systems != list(SYSTEMS) else
                       os.path.join(os.path.dirname(os.path.abspath(__file__)), "results_solver_default.md"))
    if out:
        with open(out, "w") as fh:
            fh.write("# The default solver: Tsit5 against Dopri8 at the default settings\n\n")
            fh.write(f"- date: {datetime.datetime.now():%Y-%m-%d %H:%M}\n- machine: {cpu_model()}; "
                     f"{machine_line()}\n- command: `python experiments/bench/solver_default.py`\n"
                     "- settings: the defaults (projection, rtol 1e-8, atol 1e-10), the solver aside; "
                     f"best of {args.repeat}; compile without the persistent cache; errors against "
                     "Dopri8 at rtol 1e-13, atol 1e-15\n\n")
            fh.write("\n".join(lines) + "\n")
        print(f"results: {out}")


if __name__ == "__main__":
    main()
