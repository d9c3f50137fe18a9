"""Compiled programs reused across processes (JAX's persistent compilation cache), and
run-time failures raised on the host so that the compiled simulation holds no
callback and can be cached.

Reference: JAX's own cache log (`jax._src.compiler` at DEBUG: "Persistent
compilation cache hit for 'jit__simulate'", or "Not writing ... because it uses host
callbacks") and the cache folder's entries. Every run is a fresh process with its own
cache folder, and every compiled program is stored
(`JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0`), so the outcome does not depend on
how fast this machine compiles.
"""

import os
import subprocess
import sys

SCRIPT = r"""
import logging, sys
logging.basicConfig(stream=sys.stdout, level=logging.WARNING, format="LOG %(message)s")
for name in ("jax._src.compiler", "jax._src.compilation_cache"):
    logging.getLogger(name).setLevel(logging.DEBUG)
import jax.numpy as jnp
import mbdjax as mbd

pendulum = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2), potential=lambda q, t, p: 9.81 * q[1],
                     holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]))
q0, qd0 = jnp.array([1.0, 0.0]), jnp.zeros(2)
print("SETTING", mbd.compilation_cache_setting())
case = sys.argv[1]
kwargs = {"run": {}, "max_steps": {"max_steps": 3},
          "drift": {"stabilization": "none", "drift_tol": 1e-14, "rtol": 1e-3, "atol": 1e-3},
          "nan": {"fixed_step": 0.01}}[case]
if case == "nan":   # gravity turns NaN after t = 0.5 s (fixed steps: the state turns NaN)
    pendulum = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
                         potential=lambda q, t, p: 9.81 * jnp.sqrt(0.5 - t) * q[1],
                         holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]))
try:
    traj = mbd.simulate(pendulum, q0, qd0, t1=1.0, **kwargs)
    print("FINAL", float(traj.q[-1, 0]))
except mbd.SimulationError as err:
    print("RAISED", type(err).__name__, str(err))
"""


def _run(tmp_path, case, *extra_env):
    env = {**os.environ, "MBDJAX_COMPILATION_CACHE": str(tmp_path / "cache"),
           "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "JAX_PLATFORMS": "cpu"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env.update(dict(extra_env))
    proc = subprocess.run([sys.executable, "-c", SCRIPT, case], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout


def _simulate_entries(tmp_path):
    folder = tmp_path / "cache"
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("jit__simulate") and p.name.endswith("-cache")) \
        if folder.exists() else []


def test_a_second_process_is_served_from_the_cache(tmp_path):
    """The first process compiles `simulate` and writes it to the folder; a second
    process with the same model and settings loads it (a cache hit, no compilation)
    and gets the same result."""
    first = _run(tmp_path, "run")
    assert f"'folder': '{tmp_path / 'cache'}'" in first
    assert "Writing jit__simulate to persistent compilation cache" in first, first[-3000:]
    assert len(_simulate_entries(tmp_path)) == 1
    second = _run(tmp_path, "run")
    assert "Persistent compilation cache hit for 'jit__simulate'" in second, second[-3000:]
    assert "Writing jit__simulate" not in second
    final = [line for line in first.splitlines() if line.startswith("FINAL")]
    assert final and final == [line for line in second.splitlines() if line.startswith("FINAL")]


def test_failures_are_named_errors_from_a_program_without_callbacks(tmp_path):
    """Max steps, drift beyond drift_tol and a non-finite state (forces that turn NaN
    during the run, fixed steps) each raise SimulationError
    with its reason (throw=True, the default), and each program is written to the
    cache: it holds no host callback."""
    reasons = {"max_steps": "took max_steps steps", "drift": "exceeded `drift_tol`",
               "nan": "contains NaN or inf"}
    import re

    for case, reason in reasons.items():
        out = _run(tmp_path, case)
        raised = [line for line in out.splitlines() if line.startswith("RAISED SimulationError")]
        assert raised and re.search(reason, raised[0]), out[-3000:]
        assert "uses host callbacks" not in out, out[-3000:]
    assert len(_simulate_entries(tmp_path)) == 3


def test_the_cache_can_be_turned_off(tmp_path):
    """`MBDJAX_COMPILATION_CACHE=off` and `mbdjax --no-cache` leave JAX without a
    persistent cache (nothing written)."""
    out = _run(tmp_path, "run", ("MBDJAX_COMPILATION_CACHE", "off"))
    assert "'folder': None" in out and "MBDJAX_COMPILATION_CACHE=off" in out
    assert not (tmp_path / "cache").exists()
    env = {**os.environ, "MBDJAX_COMPILATION_CACHE": str(tmp_path / "cache")}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    code = ("from mbdjax._cli import main; main(['--no-cache', 'list']); import mbdjax, jax; "
            "print('AFTER', mbdjax.compilation_cache_setting(), jax.config.jax_compilation_cache_dir)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert "AFTER {'folder': None, 'source': '--no-cache'} None" in proc.stdout, proc.stdout[-1000:] + proc.stderr


def test_a_process_that_added_programs_trims_the_folder_to_its_bound(tmp_path):
    """The folder's bound (`MAX_BYTES`) is kept at exit, oldest entries first, without
    JAX's per-write eviction (no lock, no access-time files). Reference: the bound
    itself and the entries' modification times."""
    import mbdjax._compilation_cache as cc

    folder = tmp_path / "cache"
    folder.mkdir()
    old = folder / "stale-program-cache"
    old.write_bytes(bytes(65536))
    os.utime(old, (1, 1))                                     # written long ago
    script = ("import mbdjax._compilation_cache as cc; cc.MAX_BYTES = 65536\n"
              "import jax, jax.numpy as jnp, mbdjax\n"
              "assert jax.config.jax_compilation_cache_max_size == -1\n"
              "print(float(jnp.sin(jnp.arange(3.0)).sum()))\n")
    env = {**os.environ, "MBDJAX_COMPILATION_CACHE": str(folder), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    left = [p for p in folder.iterdir()]
    assert not old.exists()                                   # the oldest went first
    assert sum(p.stat().st_size for p in left) <= 65536 and left   # the new program fits and stays
    assert not [p for p in left if p.name.endswith("-atime")]
    assert cc.prune(str(folder), max_bytes=0) == len(left) and not list(folder.iterdir())


def test_the_bound_covers_the_exported_example_programs(tmp_path):
    """Exported example programs (`mbdjax._exported`) count towards the bound and go
    oldest first with their description file. Reference: the files' sizes and times."""
    import mbdjax._compilation_cache as cc
    from mbdjax._exported import SUBFOLDER

    sub = tmp_path / SUBFOLDER
    sub.mkdir()
    for stem, when in (("old", 1), ("new", 3)):
        (sub / f"{stem}.exported").write_bytes(bytes(1000))
        (sub / f"{stem}.json").write_text("{}")
        os.utime(sub / f"{stem}.exported", (when, when))
    (tmp_path / "mid-cache").write_bytes(bytes(1000))
    os.utime(tmp_path / "mid-cache", (2, 2))
    assert cc.prune(str(tmp_path), max_bytes=2500) == 1
    assert sorted(p.name for p in sub.iterdir()) == ["new.exported", "new.json"]
    assert cc.prune(str(tmp_path), max_bytes=1500) == 1 and not (tmp_path / "mid-cache").exists()
