"""XLA's CPU small-loop limit set at import (`mbdjax._xla_cpu`).

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
       "warnings": [str(w.message) for w in caught]}
if sys.argv[1] == "compile":
    import glob
    from mbdjax.models import pendulum_chain
    ex = pendulum_chain(3)
    mbdjax.simulate(ex.model, ex.q0, ex.qd0, t1=0.1, saveat=2)   # default projection
    (path,) = glob.glob(os.path.join(sys.argv[2], "*jit__simulate*after_optimizations.txt"))
    out["small_calls"] = open(path).read().count("xla_cpu_small_call")
print("RESULT" + json.dumps(out))
"""


def _probe(mode, *args, **env):
    full = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", xc.ENV)}
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
    # Other user flags stay; the option is added beside them.
    assert on["flags"] == f"{dump} --xla_backend_extra_options={OPT}={xc.DEFAULT_LOOP_BYTES}"
    assert on["setting"] == {"loop_bytes": xc.DEFAULT_LOOP_BYTES, "source": "mbdjax"}
    dump_off = f"--xla_dump_to={tmp_path / 'off'} --xla_dump_hlo_as_text"
    off = _probe("compile", str(tmp_path / "off"), XLA_FLAGS=dump_off, **{xc.ENV: "off"})
    assert off["flags"] == dump_off and off["setting"]["source"] == f"{xc.ENV}=off"
    # With the limit raised the step loop (the stage, projection and save loops inside
    # it) becomes one kernel: the chain's solves are block cyclic reduction in jnp, no
    # library call. XLA's own 1 kB limit admits none of them.
    assert on["small_calls"] >= 1 and off["small_calls"] < on["small_calls"]


def test_user_flags_win_and_a_late_import_warns():
    mine = f"--xla_backend_extra_options={OPT}=123"
    user = _probe("plain", XLA_FLAGS=mine)
    assert user["flags"] == mine and user["setting"]["loop_bytes"] is None and not user["warnings"]
    late = _probe("late")
    assert late["flags"] is None
    assert late["setting"]["source"].startswith("not applied")
    assert any("Import mbdjax before" in w for w in late["warnings"])
