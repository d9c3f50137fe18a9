"""XLA's CPU small-loop limit set at import (`mbdjax._numerics.xla_cpu`).

The flag handling is pure string work, tested directly; whether the setting reaches XLA
can only be seen in a fresh process (XLA reads its flags once), so those tests start one
and read the optimized program XLA dumps: a loop compiled into a single kernel carries
the frontend attribute `xla_cpu_small_call`.
"""

import json
import os
import subprocess
import sys

import pytest

from mbdjax import _xla_cpu as xc

OPT = "xla_cpu_small_while_loop_byte_threshold"

PROBE = r"""
import json, os, sys, warnings
warnings.simplefilter("always")
if sys.argv[1] == "late":
    import jax.numpy as jnp
    jnp.ones(2).block_until_ready()      # starts JAX's backend before mbdjax is imported
with warnings.catch_warnings(record=True) as caught:
    import mbdjax
out = {"flags": os.environ.get("XLA_FLAGS"), "setting": mbdjax.xla_loop_setting(),
       "emitters": mbdjax.xla_emitter_setting(), "warnings": [str(w.message) for w in caught]}
if sys.argv[1] == "compile":
    import glob
    from mbdjax.models import pendulum_chain
    ex = pendulum_chain(4)    # 8 rows: more than the unrolled Cholesky's 6
    mbdjax.simulate(ex.model, ex.q0, ex.qd0, t1=0.1, saveat=2)   # default projection
    (path,) = glob.glob(os.path.join(sys.argv[2], "*jit__simulate*after_optimizations.txt"))
    text = open(path).read()
    out["small_calls"] = text.count("xla_cpu_small_call")
    out["step_loop"] = any("xla_cpu_small_call" in line and "outer-loop/checkpointed-no-vjp/while" + '"' in line
                           for line in text.splitlines())
print("RESULT" + json.dumps(out))
"""


def _probe(mode, *args, **env):
    full = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", xc.ENV, xc.EMITTERS_ENV)}
    full.update(env)
    res = subprocess.run([sys.executable, "-c", PROBE, mode, *args], capture_output=True, text=True, env=full,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


def test_flag_is_added_or_merged_into_existing_extra_options():
    assert xc.with_loop_bytes("", 5) == f"--xla_backend_extra_options={OPT}=5"
    assert xc.with_loop_bytes("--xla_dump_to=/d", 5) == f"--xla_dump_to=/d --xla_backend_extra_options={OPT}=5"
    # XLA keeps only the last --xla_backend_extra_options, so the entry joins the existing one.
    merged = xc.with_loop_bytes("--a=1 --xla_backend_extra_options=foo=2 --b", 7)
    assert merged == f"--a=1 --xla_backend_extra_options=foo=2,{OPT}=7 --b"


def test_requested_limit_parsing():
    assert xc._requested_bytes(None) == xc.DEFAULT_LOOP_BYTES
    assert xc._requested_bytes(" ") == xc.DEFAULT_LOOP_BYTES
    assert xc._requested_bytes("off") is None
    assert xc._requested_bytes("4096") == 4096
    for bad in ("lots", "-3", "1e6"):
        with pytest.raises(ValueError, match=xc.ENV):
            xc._requested_bytes(bad)


def test_import_sets_the_limit_and_xla_compiles_the_loops_as_single_kernels(tmp_path):
    dump = f"--xla_dump_to={tmp_path / 'on'} --xla_dump_hlo_as_text"
    on = _probe("compile", str(tmp_path / "on"), XLA_FLAGS=dump)
    # Other user flags stay; the options are added beside them.
    assert on["flags"] == f"{dump} {xc.EMITTER_FLAG} --xla_backend_extra_options={OPT}={xc.DEFAULT_LOOP_BYTES}"
    assert on["emitters"] == {"fusion_emitters": False, "source": "mbdjax"}
    assert on["setting"] == {"loop_bytes": xc.DEFAULT_LOOP_BYTES, "source": "mbdjax"}
    dump_off = f"--xla_dump_to={tmp_path / 'off'} --xla_dump_hlo_as_text"
    off = _probe("compile", str(tmp_path / "off"), XLA_FLAGS=dump_off, **{xc.ENV: "off"})
    assert off["flags"] == f"{dump_off} {xc.EMITTER_FLAG}" and off["setting"]["source"] == f"{xc.ENV}=off"
    # With the limit raised the step loop (diffrax's outer loop, with the stage and save
    # loops inside it) becomes one kernel: the chain's solves, the projection's included,
    # are block cyclic reduction in jnp, and the step-size guard's rank check builds no
    # dense Jacobian and calls no LAPACK (`mbdjax._singular.rank_margin`). XLA's own 1 kB
    # limit admits none of them.
    assert on["step_loop"] and not off["step_loop"]
    assert on["small_calls"] >= 1 and off["small_calls"] < on["small_calls"]


def test_user_flags_win_and_a_late_import_warns():
    mine = f"--xla_backend_extra_options={OPT}=123"
    user = _probe("plain", XLA_FLAGS=mine)
    assert user["flags"] == f"{mine} {xc.EMITTER_FLAG}" and user["setting"]["loop_bytes"] is None
    assert not user["warnings"]
    # The emitter choice: a user's flag wins, and MBDJAX_XLA_CPU_EMITTERS=off leaves XLA's.
    theirs = "--xla_cpu_use_fusion_emitters=true"
    user = _probe("plain", XLA_FLAGS=theirs)
    assert user["flags"].startswith(theirs + " ") and xc.EMITTER_FLAG not in user["flags"]
    assert user["emitters"] == {"fusion_emitters": None, "source": "XLA_FLAGS (set by the user)"}
    off = _probe("plain", **{xc.EMITTERS_ENV: "off"})
    assert xc.EMITTER_FLAG not in off["flags"] and off["emitters"]["source"] == f"{xc.EMITTERS_ENV}=off"
    late = _probe("late")
    assert late["flags"] is None
    assert late["setting"]["source"].startswith("not applied")
    assert late["emitters"]["source"] == "not applied: JAX's backend had started"
    assert any("Import mbdjax before" in w for w in late["warnings"])


# Two independent batched triangular solves, each large enough (101 x 62 x 62, above
# jaxlib's 2e5-flop chunk threshold) for jaxlib 0.10.0-0.11.1 to split it into tasks on
# XLA's intra-op pool: on a pool of two threads both block waiting for tasks no thread
# is left to run. Measured on the 2-core reference machine without the guard
# (MBDJAX_XLA_CPU_THREADS=off): 20 calls hung in 3 of 3 runs; with it they finish in
# about a second.
DEADLOCK = r"""
import json, os, sys
import mbdjax, jax, jax.numpy as jnp
B, n = 101, 62
As = [jnp.eye(n) * 3 + 0.1 * jax.random.normal(jax.random.PRNGKey(i), (B, n, n)) for i in range(4)]
b = jnp.ones((B, n, 1))
f = jax.jit(lambda As: sum(jax.scipy.linalg.solve_triangular(A, b, lower=True).sum() for A in As))
for _ in range(20):
    As = [A * 1.0001 for A in As]
    total = float(f(As))
print("RESULT" + json.dumps({"nproc": os.environ.get("NPROC"), "setting": mbdjax.xla_thread_setting(),
                             "total": total}))
"""


def _run(code, timeout=120, **env):
    full = {k: v for k, v in os.environ.items() if k not in ("NPROC", xc.THREADS_ENV, "XLA_FLAGS")}
    full.update(env)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=timeout)
    assert res.returncode == 0, res.stderr[-2000:]
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


def test_thread_guard_version_range_and_parsing():
    # jaxlib's batched LAPACK kernels block on the pool from 0.10.0 (commit "Add support
    # for parallelizing lapack invocations on the batch dimension") until 0.11.2.
    assert [xc.lapack_blocks_pool(v) for v in ("0.9.2", "0.10.0", "0.10.2", "0.11.1", "0.11.2", "1.0")] == [
        False, True, True, True, False, False]
    assert xc._requested_threads(None, True) == 1 and xc._requested_threads(None, False) is None
    assert xc._requested_threads("off", True) is None and xc._requested_threads("4", False) == 4
    for bad in ("many", "0", "-2"):
        with pytest.raises(ValueError, match=xc.THREADS_ENV):
            xc._requested_threads(bad, True)


@pytest.mark.skipif(not xc.lapack_blocks_pool(), reason="this jaxlib runs batched LAPACK calls serially")
def test_thread_guard_keeps_concurrent_batched_solves_from_deadlocking():
    # Reference: the sum of the four solutions computed in float64 NumPy, independent of
    # XLA's thread pool; the timeout turns a hang into a failure.
    out = _run(DEADLOCK, timeout=120)
    assert out["nproc"] == "1" and out["setting"] == {"threads": 1, "source": "mbdjax"}
    import numpy as np
    import scipy.linalg
    import jax

    B, n = 101, 62
    want = 0.0
    for i in range(4):
        A = (np.eye(n) * 3 + 0.1 * np.asarray(jax.random.normal(jax.random.PRNGKey(i), (B, n, n)))) * 1.0001 ** 20
        want += sum(scipy.linalg.solve_triangular(A[k], np.ones(n), lower=True).sum() for k in range(B))
    assert abs(out["total"] - want) <= 1e-10 * abs(want)


def test_thread_guard_leaves_a_users_nproc_and_can_be_turned_off():
    probe = ('import json, os, mbdjax; print("RESULT" + json.dumps({"nproc": os.environ.get("NPROC"), '
             '"setting": mbdjax.xla_thread_setting()}))')
    mine = _run(probe, NPROC="3")
    assert mine["nproc"] == "3" and mine["setting"]["threads"] is None
    off = _run(probe, **{xc.THREADS_ENV: "off"})
    assert off["nproc"] is None and off["setting"]["source"] == f"{xc.THREADS_ENV}=off"
    two = _run(probe, **{xc.THREADS_ENV: "2"})
    assert two["nproc"] == "2" and two["setting"] == {"threads": 2, "source": "mbdjax"}


def test_emitter_choice_only_for_jaxlib_releases_that_have_the_flag(monkeypatch):
    """XLA aborts on an unknown flag, so the emitter flag is set only for the jaxlib
    releases checked to have it: [0.6.0, 0.12)."""
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.delenv(xc.EMITTERS_ENV, raising=False)
    monkeypatch.setattr(xc, "_backend_started", lambda: False)
    monkeypatch.setattr(xc, "_emitters", dict(xc._emitters))     # this process's report stays as it was
    for version, applied in (((0, 5, 3), False), ((0, 6, 0), True), ((0, 10, 2), True), ((0, 12, 0), False)):
        monkeypatch.setattr(xc, "_jaxlib_version", lambda v=version: v)
        monkeypatch.delenv("XLA_FLAGS", raising=False)
        xc._apply_emitters()
        assert (xc.EMITTER_FLAG in os.environ.get("XLA_FLAGS", "")) is applied, version
