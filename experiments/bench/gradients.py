"""Benchmark: gradients and sensitivities through `mbdjax.simulate` (time and memory).

For the N-link pendulum chain (`mbdjax.models.pendulum_chain`, N = 2, 5, 10, 20;
uniform 1 m, 1 kg rods released from the horizontal), 2 s of motion at rtol 1e-8, and
the N link masses as parameters, one run measures after compilation (best of 7):

- the forward simulation alone (default projection stabilization, and without);
- `jax.grad` of `L = Σ q(t1)²` with each diffrax adjoint:
  `RecursiveCheckpointAdjoint()` (the default: exact gradient of the discrete solve,
  memory by O(log max_steps) checkpoints), the same with one checkpoint per step
  (`checkpoints=` the step count: no recomputation), `DirectAdjoint()` (N ≤ 10),
  and `BacksolveAdjoint()` (the continuous adjoint solved backwards; stabilization
  "none", since the projection is not part of the equations it differentiates);
- the forward sensitivities of the whole trajectory, ∂q(t)/∂m at the 41 output times,
  by `jax.jacfwd` with `ForwardMode()` (N tangents in one solve), against N + 1
  simulations for one-sided finite differences (step 1e-6 relative).

Reported: each time divided by the forward time (of the same stabilization), the peak
temporary memory of the compiled computation (XLA's memory analysis), and each
gradient's largest difference from the default one (for the sensitivities: the
largest difference of finite differences from forward mode, relative to the largest
sensitivity). Targets (issue): the reverse-mode gradient at most 3× the forward
time at N = 10; forward sensitivities for 10 parameters cheaper than 11 simulations.

Run: python experiments/bench/gradients.py [--quick] [--N 10 20] [--out FILE]
(--quick: N = 2; the full run writes experiments/bench/results_gradients.md)
"""

from __future__ import annotations

import argparse
import datetime
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # as in core.py: one BLAS thread next to XLA

import diffrax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import mbdjax as mbd  # noqa: E402
from mbdjax import models  # noqa: E402

from core import cpu_model, machine_line  # noqa: E402

jax.config.update("jax_enable_x64", True)

T1 = 2.0


def timed(fn, *args, repeats=7):
    """(output, best of `repeats` wall times after one warm-up call: on a shared
    machine fewer repeats let one slow forward run inflate every ratio)."""
    out = fn(*args)
    jax.block_until_ready(out)
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - start)
    return out, best


def memory(fn, *args):
    """Peak temporary memory (MB) of `fn` compiled, or NaN where not reported."""
    try:
        stats = jax.jit(fn).lower(*args).compile().memory_analysis()
        return stats.temp_size_in_bytes / 2**20
    except Exception:  # noqa: BLE001 - not every backend reports it
        return float("nan")


def study(N):
    ex = models.pendulum_chain(N)
    model = ex.model
    masses = jnp.asarray([float(model.params[f"link{k}"]["mass"]) for k in range(1, N + 1)])

    def params(m):
        return {**model.params, **{f"link{k}": {**model.params[f"link{k}"], "mass": m[k - 1]}
                                   for k in range(1, N + 1)}}

    def run(m, adjoint=None, stabilization="projection", saveat=2):
        return mbd.simulate(model, ex.q0, ex.qd0, t1=T1, saveat=saveat, params=params(m), adjoint=adjoint,
                            stabilization=stabilization)

    def loss(m, adjoint=None, stabilization="projection"):
        return jnp.sum(run(m, adjoint, stabilization).q[-1] ** 2)

    steps = int(jax.jit(lambda m: run(m).num_steps)(masses))
    rows = []
    _, t_fwd = timed(jax.jit(loss), masses)
    _, t_none = timed(jax.jit(lambda m: loss(m, stabilization="none")), masses)
    rows.append(("forward simulation (projection)", t_fwd, 1.0, memory(loss, masses), None))
    rows.append(("forward simulation (no stabilization)", t_none, 1.0, memory(
        lambda m: loss(m, stabilization="none"), masses), None))
    default = jax.grad(loss)
    ref, t = timed(jax.jit(default), masses)
    rows.append(("grad, RecursiveCheckpointAdjoint()", t, t / t_fwd, memory(default, masses), 0.0))
    candidates = [
        (f"grad, RecursiveCheckpointAdjoint(checkpoints={steps})",
         jax.grad(lambda m: loss(m, diffrax.RecursiveCheckpointAdjoint(checkpoints=steps))), t_fwd),
        ("grad, BacksolveAdjoint() (no stabilization)",
         jax.grad(lambda m: loss(m, diffrax.BacksolveAdjoint(), stabilization="none")), t_none),
        ("jacfwd, ForwardMode() (gradient only)", jax.jacfwd(lambda m: loss(m, diffrax.ForwardMode())), t_fwd),
    ]
    if N <= 10:   # compiles the whole unrolled reverse pass: slow to build beyond that
        candidates.insert(1, ("grad, DirectAdjoint()", jax.grad(lambda m: loss(m, diffrax.DirectAdjoint())), t_fwd))
    for label, fn, base in candidates:
        try:
            g, t = timed(jax.jit(fn), masses)
            diff = float(jnp.max(jnp.abs(g - ref)) / jnp.max(jnp.abs(ref)))
            rows.append((label, t, t / base, memory(fn, masses), diff))
        except Exception as err:  # noqa: BLE001 - report and go on
            rows.append((f"{label}: {type(err).__name__}", np.nan, np.nan, np.nan, None))

    # Sensitivities of the trajectory: forward mode against N + 1 runs.
    ts = jnp.linspace(0.0, T1, 41)
    traj = jax.jit(lambda m: run(m, saveat=ts).q)
    sens_fn = jax.jit(jax.jacfwd(lambda m: run(m, diffrax.ForwardMode(), saveat=ts).q))
    sens, t_sens = timed(sens_fn, masses)
    h = 1e-6

    def finite_differences(m):
        base = traj(m)
        cols = [(traj(m.at[j].add(h * m[j])) - base) / (h * m[j]) for j in range(N)]
        return jnp.stack(cols, axis=-1)

    fd, t_fd = timed(finite_differences, masses)
    scale = float(jnp.max(jnp.abs(sens)))
    sens_row = (t_sens, t_fd, float(jnp.max(jnp.abs(fd - sens))) / scale)
    return rows, t_fwd, steps, sens_row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="N = 2 only")
    parser.add_argument("--N", type=int, nargs="+", default=None, help="chain sizes (default 2 5 10 20)")
    parser.add_argument("--out", default=None, help="markdown file for the results")
    args = parser.parse_args()
    sizes = args.N or ((2,) if args.quick else (2, 5, 10, 20))
    lines = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    summary = []
    for N in sizes:
        rows, t_fwd, steps, (t_sens, t_fd, fd_diff) = study(N)
        say(f"\npendulum chain N = {N} ({N} link masses), {T1:g} s, {steps} steps; "
            f"forward run {t_fwd * 1e3:.1f} ms")
        say(f"  {'method':58s} {'time':>9s} {'/ forward':>9s} {'temp memory':>12s} {'vs default':>10s}")
        for label, t, ratio, mem, diff in rows:
            d = "" if diff is None else ("reference" if label == rows[2][0] else f"{diff:.1e}")
            say(f"  {label:58s} {t * 1e3:7.1f}ms {ratio:9.2f} {mem:9.2f} MB {d:>10s}")
        say(f"  sensitivities dq(t)/dm at 41 times: forward mode {t_sens * 1e3:.1f} ms; {N + 1} runs for "
            f"finite differences {t_fd * 1e3:.1f} ms (ratio {t_fd / t_sens:.2f}); finite differences "
            f"differ by {fd_diff:.1e} of the largest sensitivity")
        summary.append((N, rows[2][2], t_fd / t_sens))
    say("\nsummary (targets: gradient <= 3x forward at N = 10; forward sensitivities cheaper than N + 1 runs)")
    for N, ratio, gain in summary:
        say(f"  N = {N:2d}: reverse-mode gradient {ratio:.2f}x forward; (N + 1 runs) / forward sensitivities "
            f"{gain:.2f}")
    out = args.out or (None if args.quick or args.N else
                       os.path.join(os.path.dirname(os.path.abspath(__file__)), "results_gradients.md"))
    if out:
        with open(out, "w") as fh:
            fh.write("# Gradients and sensitivities through simulate\n\n")
            fh.write(f"- date: {datetime.datetime.now():%Y-%m-%d %H:%M}\n- machine: {cpu_model()}; "
                     f"{machine_line()}\n- command: `python experiments/bench/gradients.py`\n\n")
            fh.write("```\n" + "\n".join(lines).strip("\n") + "\n```\n")
        print(f"results: {out}")


if __name__ == "__main__":
    main()
