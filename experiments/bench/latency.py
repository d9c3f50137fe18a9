"""Latency benchmark: what a user waits for before the first result.

Every step runs in a fresh Python process (as a user's command does) and is timed from
the outside, wall clock, median of `--rounds`. The ratios are to the import of the JAX
stack mbdjax is built on (`import jax, diffrax, equinox`), measured in the same rounds,
so that the table compares across machines.

Steps:

- `import mbdjax`;
- `mbdjax list` (reads the static catalogue);
- a usage error (`mbdjax run no-such-example`, exit code 2);
- the main job of the README, `mbdjax run slider-crank --out DIR --force`, twice in a
  row with a new, empty compilation cache folder each round: "cold" is the first
  process, "warm" a second one right after it (the same model and settings: it loads
  the compiled simulation from the persistent cache);
- `mbdjax check bricard` (35 coordinates, spatial loop; it reports the loop's
  redundant row, which leaves the motion unique: exit 0).

Run:  python experiments/bench/latency.py [--rounds 3] [--quick] [--out FILE]
      (--quick: one round, no main job and no check; writes nothing unless --out)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(args, expect=0, env=None):
    """Wall time (s) of `python args...` in a fresh process; fails loudly on an
    unexpected exit code."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode != expect:
        raise SystemExit(f"latency: {' '.join(args)} exited {proc.returncode} (expected {expect}):\n"
                         f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return wall


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one round of the fast steps only")
    parser.add_argument("--out", default=None, help="markdown file for the table (default results_latency.md)")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    cli = ["-m", "mbdjax"]
    steps = [
        ("import jax, diffrax, equinox (reference)", ["-c", "import jax, diffrax, equinox"], 0),
        ("import mbdjax", ["-c", "import mbdjax"], 0),
        ("mbdjax list", [*cli, "list"], 0),
        ("usage error (unknown example)", [*cli, "run", "no-such-example"], 2),
    ]
    times = {name: [] for name, _, _ in steps}
    heavy = not args.quick
    if heavy:
        for name in ("main job, cold (first process)", "main job, warm (second process)", "mbdjax check bricard"):
            times[name] = []
    with tempfile.TemporaryDirectory() as tmp:
        run = [*cli, "run", "slider-crank", "--out", os.path.join(tmp, "run"), "--force"]
        for r in range(rounds):
            for name, a, expect in steps:
                times[name].append(timed(a, expect))
            if heavy:
                # a new, empty compilation cache each round: "cold" fills it, "warm" reads it
                env = {**os.environ, "MBDJAX_COMPILATION_CACHE": os.path.join(tmp, f"cache{r}")}
                times["main job, cold (first process)"].append(timed(run, env=env))
                times["main job, warm (second process)"].append(timed(run, env=env))
                times["mbdjax check bricard"].append(timed([*cli, "check", "bricard"], env=env))
            print(f"round {r + 1}/{rounds}: " + ", ".join(f"{k.split(' (')[0]} {v[-1]:.2f} s"
                                                         for k, v in times.items()), flush=True)
    ref = statistics.median(times[steps[0][0]])
    lines = [f"Latency, median of {rounds} round(s), {os.cpu_count()} CPUs, "
             f"{time.strftime('%Y-%m-%d')}; ratio to `import jax, diffrax, equinox` ({ref:.2f} s)", "",
             "| step | time | ratio |", "|---|---|---|"]
    for name, values in times.items():
        med = statistics.median(values)
        lines.append(f"| {name} | {med:.2f} s | {med / ref:.2f}× |")
    table = "\n".join(lines)
    print("\n" + table)
    out = args.out or (None if args.quick else os.path.join(HERE, "results_latency.md"))
    if out:
        with open(out, "w") as fh:
            fh.write(table + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
