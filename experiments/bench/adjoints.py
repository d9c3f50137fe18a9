"""Benchmark: diffrax's adjoints through `mbdjax.simulate` (time and memory).

For the N-link pendulum chain (`mbdjax.models.pendulum_chain`, N = 2, 5, 10) and the
loss `L = Σ q(t1)²` after 2 s of motion (rtol 1e-8, projection stabilization), one run
measures, after compilation (best of 3):

- the forward simulation alone;
- `jax.grad(L)` with respect to the N link masses with
  `diffrax.RecursiveCheckpointAdjoint()` (the default; exact gradient of the discrete
  solve, memory through checkpointing) and `diffrax.DirectAdjoint()`;
- `jax.jacfwd(L)` with `diffrax.ForwardMode()` (one tangent per parameter).

Reported: each time divided by the forward time, the peak temporary memory of the
compiled computation (XLA's memory analysis), and the largest difference of each
gradient from the checkpointed one. `diffrax.BacksolveAdjoint` (the continuous
adjoint, solved backwards) is run with stabilization "none" (the projection after
each step is not part of the continuous equations it differentiates), so its gradient
differs by the solver tolerance.

Run: python experiments/bench/adjoints.py [--quick]   (prints a table; --quick: N = 2)
"""

from __future__ import annotations

import argparse
import time

import diffrax
import jax
import jax.numpy as jnp
import numpy as np

import mbdjax as mbd
from mbdjax import models

jax.config.update("jax_enable_x64", True)


def timed(fn, *args):
    out = fn(*args)
    jax.block_until_ready(out)
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - start)
    return out, best


def memory(fn, *args):
    try:
        stats = jax.jit(fn).lower(*args).compile().memory_analysis()
        return stats.temp_size_in_bytes / 2**20
    except Exception:  # noqa: BLE001 - not every backend reports it
        return float("nan")


def study(N, t1=2.0):
    ex = models.pendulum_chain(N)
    model = ex.model
    masses = jnp.asarray([float(model.params[f"link{k}"]["mass"]) for k in range(1, N + 1)])

    def loss(m, adjoint=None, stabilization="projection"):
        p = {**model.params, **{f"link{k}": {**model.params[f"link{k}"], "mass": m[k - 1]} for k in range(1, N + 1)}}
        tr = mbd.simulate(model, ex.q0, ex.qd0, t1=t1, saveat=2, params=p, adjoint=adjoint,
                          stabilization=stabilization)
        return jnp.sum(tr.q[-1] ** 2)

    rows = []
    fwd = jax.jit(lambda m: loss(m))
    _, t_fwd = timed(fwd, masses)
    rows.append(("forward simulation", t_fwd, memory(lambda m: loss(m), masses), 0.0))
    ref_fn = jax.jit(jax.grad(lambda m: loss(m, diffrax.RecursiveCheckpointAdjoint())))
    ref, t = timed(ref_fn, masses)
    rows.append(("grad, RecursiveCheckpointAdjoint", t, memory(jax.grad(lambda m: loss(m)), masses), 0.0))
    for label, fn in (
        ("grad, DirectAdjoint", jax.grad(lambda m: loss(m, diffrax.DirectAdjoint()))),
        ("jacfwd, ForwardMode", jax.jacfwd(lambda m: loss(m, diffrax.ForwardMode()))),
        ("grad, BacksolveAdjoint (no stabilization)",
         jax.grad(lambda m: loss(m, diffrax.BacksolveAdjoint(), stabilization="none"))),
    ):
        try:
            g, t = timed(jax.jit(fn), masses)
            rows.append((label, t, memory(fn, masses), float(jnp.max(jnp.abs(g - ref)) / jnp.max(jnp.abs(ref)))))
        except Exception as err:  # noqa: BLE001 - report and go on
            rows.append((label + f": {type(err).__name__}", np.nan, np.nan, np.nan))
    return rows, t_fwd


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="N = 2 only")
    quick = parser.parse_args().quick
    for N in (2,) if quick else (2, 5, 10):
        rows, t_fwd = study(N)
        print(f"\npendulum chain N = {N} ({N} link masses), 2 s; forward run {t_fwd * 1e3:.1f} ms")
        print(f"  {'method':45s} {'time / forward':>15s} {'temp memory':>12s} {'rel. diff':>10s}")
        for label, t, mem, diff in rows:
            print(f"  {label:45s} {t / t_fwd:15.2f} {mem:10.2f} MB {diff:10.1e}")


if __name__ == "__main__":
    main()
