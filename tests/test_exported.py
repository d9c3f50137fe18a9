"""A built-in example's simulation is exported once and reused by the next process
without tracing (`mbdjax._exported`).

Reference: the same run traced in a process with the cache off, which must give the
same numbers to the last bit (the exported program is the traced one, serialized),
and a second process in which tracing the simulation raises, so any result it
returns came from the stored program. Failures keep their named errors.
"""

import json
import os
import subprocess
import sys

import jax.numpy as jnp

import mbdjax as mbd
from mbdjax import _exported, models

RUN = r"""
import json, sys
import jax
jax.config.update("jax_enable_x64", True)
import mbdjax as mbd
from mbdjax import _integrate, models
if sys.argv[1] == "refuse":
    def refuse(*args, **kwargs):
        raise AssertionError("the simulation was traced")
    _integrate._simulate = refuse
ex = models.get("four-bar")
traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.5, saveat=11, formulation="nullspace")
out = {"q": traj.q.tolist(), "qd": traj.qd.tolist(), "steps": int(traj.num_steps),
       "success": bool(traj.success), "partitions": traj.partitions is not None}
try:
    mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.5, saveat=11, max_steps=20)
except mbd.SimulationError as err:
    out["error"] = [err.reason, err.time, str(err).split(";")[0]]
print(json.dumps(out))
"""


def _run(mode, cache):
    env = {**os.environ, "MBDJAX_COMPILATION_CACHE": cache}
    proc = subprocess.run([sys.executable, "-c", RUN, mode], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_second_process_runs_the_stored_program_without_tracing(tmp_path):
    traced = _run("plain", "off")
    first = _run("plain", str(tmp_path))
    stored = sorted(os.listdir(tmp_path / _exported.SUBFOLDER))
    assert len(stored) == 4 and {name.rsplit(".", 1)[1] for name in stored} == {"exported", "json"}
    second = _run("refuse", str(tmp_path))
    assert first == traced and second == traced          # bit for bit, the nullspace partitions included
    assert sorted(os.listdir(tmp_path / _exported.SUBFOLDER)) == stored
    assert traced["error"][0] == "max_steps" and "max_steps steps" in traced["error"][2]


def test_only_built_in_examples_with_reproducible_arguments_are_exported():
    ex = models.get("four-bar")
    assert _exported.example_name(ex.model) == "four-bar"
    pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2), potential=lambda q, t, p: 9.81 * q[1],
                     holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]), constraint_names=("rod",))
    assert _exported.example_name(pend) is None
    # the key follows the values the program was traced with, and the settings
    base = _exported.key("four-bar", (ex.q0, ex.model.params), ("a",))
    assert base == _exported.key("four-bar", (jnp.asarray(ex.q0), ex.model.params), ("a",))
    assert base != _exported.key("four-bar", (ex.q0 + 1e-12, ex.model.params), ("a",))
    assert base != _exported.key("four-bar", (ex.q0, ex.model.params), ("b",))
    assert base != _exported.key("bricard", (ex.q0, ex.model.params), ("a",))
    # an argument printed with its address (a function) gives no key: traced instead
    assert _exported.key("four-bar", (ex.q0, lambda y: y), ("a",)) is None
