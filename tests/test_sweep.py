"""`sweep`: chunked, resumable sweeps to disk equal one `simulate_batch` over all members.

The model is a unit mass on a spring of stiffness k released from x = 1 at rest, so
x(t) = cos(√k t) and ẋ(t) = −√k sin(√k t) (closed form). Horizons are 1 s with two
output points, so every test stays small.
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd
from mbdjax._cli import main

KW = dict(t1=1.0, saveat=2, rtol=1e-10, atol=1e-12)
K = np.linspace(1.0, 4.0, 7)             # 7 members: chunks of 3 leave a short last one


def oscillator():
    return mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([1.0]),
                     potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2, params={"k": 1.0})


@pytest.fixture(scope="module")
def osc():
    return oscillator()


CALLS = []


def final_x(traj):
    """Outputs that count the chunks computed (the subprocess's version sleeps instead)."""
    CALLS.append(1)
    return {"x": traj.q[:, -1, 0], "v": traj.qd[:, -1, 0]}


def run(osc, out, samples=None, **kw):
    args = dict(chunk=3, outputs=final_x, q0=jnp.ones(1), progress=False, **KW)
    args.update(kw)
    return mbd.sweep(osc, {"k": K} if samples is None else samples, out=out, **args)


def sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sweep_equals_simulate_batch_and_the_closed_form(osc, tmp_path, capsys):
    """Chunks of 3 (the last one padded from 1 to 3) against one simulate_batch of all 7
    members: the same arithmetic per member, so 1e-12; against cos √k and −√k sin √k to
    1e-8 (Tsit5 at rtol 1e-10 over one period or less)."""
    res = mbd.sweep(osc, {"k": K}, out=tmp_path / "s", chunk=3, q0=jnp.ones(1), **KW)
    batch = mbd.simulate_batch(osc, jnp.ones(1), jnp.zeros(1), {"k": jnp.asarray(K)}, **KW)
    assert res.complete and res.outputs["q"].shape == (7, 1) and res.outputs["qd"].shape == (7, 1)
    np.testing.assert_array_equal(res.params["k"], K)
    np.testing.assert_array_equal(res.index, np.arange(7))
    np.testing.assert_allclose(res.outputs["q"], batch.q[:, -1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.outputs["qd"], batch.qd[:, -1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.outputs["q"][:, 0], np.cos(np.sqrt(K)), rtol=0, atol=1e-8)
    np.testing.assert_allclose(res.outputs["qd"][:, 0], -np.sqrt(K) * np.sin(np.sqrt(K)), rtol=0, atol=1e-8)
    err = capsys.readouterr().err
    assert "3/3 chunks, 7/7 members" in err and "sims/s" in err
    assert sorted(os.listdir(tmp_path / "s")) == ["chunk-00000.npz", "chunk-00001.npz", "chunk-00002.npz",
                                                 "manifest.json"]
    man = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert man["identity"]["parameters"] == ["k"] and man["identity"]["chunk"] == 3
    assert man["identity"]["settings"]["solver_class"] == "Tsit5" and man["model"]["coordinates"] == ["x"]
    assert {"jax", "diffrax", "numpy", "mbdjax"} <= set(man["versions"])
    for name, entry in man["finished"].items():
        assert sha(tmp_path / "s" / name) == entry["sha256"]
    loaded = mbd.load_sweep(tmp_path / "s")
    np.testing.assert_array_equal(loaded.outputs["q"], res.outputs["q"])


def test_padding_reuses_the_compilation(osc, tmp_path):
    """5 members in chunks of 2 (2, 2, 1 padded to 2): the sweep's compiled function is
    traced once (its jit cache holds one entry)."""
    from mbdjax._batch import batch as _batch

    model = oscillator()
    res = mbd.sweep(model, {"k": K[:5]}, out=tmp_path / "p", chunk=2, q0=jnp.ones(1), progress=False, **KW)
    assert res.outputs["q"].shape == (5, 1)
    compiled = [fn for (m, (fn, _)) in _batch._COMPILED.values() if m is model]
    assert [fn._cache_size() for fn in compiled] == [1]


def test_grid_initial_states_and_failures(osc, tmp_path):
    """sweep_grid orders members like itertools.product; batched q0 sweeps the
    amplitude (x = a cos √k t, linear in a); throw=False adds 'success'."""
    g = mbd.sweep_grid({"k": [1.0, 4.0], "c": [0.0, 1.0, 2.0]})
    assert g["k"].tolist() == [1.0] * 3 + [4.0] * 3 and g["c"].tolist() == [0.0, 1.0, 2.0] * 2
    a = np.array([[0.5], [1.0], [2.0]])
    res = mbd.sweep(osc, {"k": [4.0, 4.0, 4.0]}, out=tmp_path / "g", chunk=2, q0=a, progress=False,
                    throw=False, **KW)
    np.testing.assert_allclose(res.outputs["q"], a * np.cos(2.0), rtol=0, atol=1e-8)
    assert res.outputs["success"].dtype == bool and res.outputs["success"].all()
    # only initial states vary (samples empty)
    res = mbd.sweep(osc, {}, out=tmp_path / "q", q0=a, progress=False, **KW)
    np.testing.assert_allclose(res.outputs["q"], a * np.cos(1.0), rtol=0, atol=1e-8)
    assert res.params == {}


def test_failing_members(osc, tmp_path):
    """k = 1e4 needs about 3100 steps over 1 s (k = 1 about 30): with max_steps=500 it
    fails. throw=True stops the sweep at its chunk, naming the member (its sweep index:
    the padded chunk's copies map back to it) and the reason, keeping the finished ones; with
    throw=False its 'success' is False and the others are the closed form."""
    samples = {"k": [1.0, 2.0, 1e4]}
    with pytest.raises(mbd.SimulationError, match="chunk 1 .members 2–2. failed at member 2; the 1 finished "
                                                  "chunks are kept") as err:
        mbd.sweep(osc, samples, out=tmp_path / "t", chunk=2, q0=jnp.ones(1), progress=False, max_steps=500, **KW)
    assert err.value.member == 2 and err.value.reason == "max_steps" and "max_steps steps" in str(err.value)
    assert mbd.load_sweep(tmp_path / "t", partial=True).index.tolist() == [0, 1]
    res = mbd.sweep(osc, samples, out=tmp_path / "f", chunk=2, q0=jnp.ones(1), progress=False, max_steps=500,
                    throw=False, **KW)
    assert res.outputs["success"].tolist() == [True, True, False]
    np.testing.assert_allclose(res.outputs["q"][:2, 0], np.cos(np.sqrt([1.0, 2.0])), rtol=0, atol=1e-8)


_KILLED = r"""
import sys, time
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
import mbdjax as mbd

def final_x(traj):
    time.sleep(1.0)                        # a slow chunk, so the parent can kill us mid-sweep
    return {"x": traj.q[:, -1, 0], "v": traj.qd[:, -1, 0]}

osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([1.0]),
                potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2, params={"k": 1.0})
mbd.sweep(osc, {"k": np.linspace(1.0, 4.0, 7)}, out=sys.argv[1], chunk=3, outputs=final_x, q0=jnp.ones(1),
          progress=False, t1=1.0, saveat=2, rtol=1e-10, atol=1e-12)
"""


def test_resume_after_a_killed_run(osc, tmp_path):
    """A sweep killed (SIGKILL) after its first chunk resumes: the finished chunk is not
    recomputed (same inode, mtime and sha256; the outputs function runs only for the
    rest), a stray temporary file and an unlisted chunk file are not taken as finished,
    and the result equals an uninterrupted sweep into another folder (bit for bit)."""
    out = tmp_path / "killed"
    script = tmp_path / "sweep_script.py"
    script.write_text(_KILLED)
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.Popen([sys.executable, str(script), str(out)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        finished = {}
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                finished = json.loads((out / "manifest.json").read_text())["finished"]
            except (OSError, ValueError, KeyError):
                finished = {}
            if finished:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert finished, proc.stderr.read().decode()[-3000:]
    man = json.loads((out / "manifest.json").read_text())
    assert not man["complete"] and 1 <= len(man["finished"]) < 3
    # what a kill mid-write leaves: a temporary file, and a chunk written but not yet listed
    (out / ".chunk-00002.npz.tmp-99999").write_bytes(b"half a file")
    if "chunk-00002.npz" not in man["finished"]:
        (out / "chunk-00002.npz").write_bytes(b"not listed in the manifest")
    part = mbd.load_sweep(out, partial=True)
    assert not part.complete and len(part.index) == 3 * len(man["finished"])
    with pytest.raises(mbd.MbdjaxError, match="partial=True"):
        mbd.load_sweep(out)
    stamps = {n: ((out / n).stat().st_ino, (out / n).stat().st_mtime_ns, sha(out / n)) for n in man["finished"]}

    CALLS.clear()
    res = run(osc, out)
    assert len(CALLS) == 3 - len(stamps)                       # only the unfinished chunks ran
    assert {n: ((out / n).stat().st_ino, (out / n).stat().st_mtime_ns, sha(out / n)) for n in stamps} == stamps
    assert not any(".tmp-" in f for f in os.listdir(out))
    assert res.manifest["runs"][-1]["resumed_chunks"] == len(stamps)
    CALLS.clear()
    fresh = run(osc, tmp_path / "fresh")
    assert len(CALLS) == 3
    for key in ("x", "v"):
        np.testing.assert_array_equal(res.outputs[key], fresh.outputs[key])
    np.testing.assert_allclose(res.outputs["x"], np.cos(np.sqrt(K)), rtol=0, atol=1e-8)
    # a second rerun computes nothing
    CALLS.clear()
    run(osc, out)
    assert CALLS == []


def test_changed_arguments_overwrite_and_corruption(osc, tmp_path):
    out = tmp_path / "s"
    run(osc, out)
    (out / "notes.txt").write_text("mine")                  # a user's file in the sweep folder
    changes = [
        (dict(samples={"k": K + 1.0}), "samples_sha256"),
        (dict(chunk=2), "chunk"),
        (dict(t1=0.5), "settings.t1"),
        (dict(rtol=1e-9), "settings.rtol"),
        (dict(outputs=mbd._batch.sweep.final_state), "outputs"),
        (dict(q0=2.0 * jnp.ones(1)), "q0.sha256"),
    ]
    for kw, what in changes:
        with pytest.raises(mbd.MbdjaxError, match=r"other arguments \(.*" + what.replace(".", r"\.")):
            run(osc, out, **kw)
    other = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([1.0]),
                      potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2, params={"k": 2.0})
    with pytest.raises(mbd.MbdjaxError, match="model_fingerprint"):
        run(other, out)
    CALLS.clear()
    res = run(osc, out, t1=0.5, overwrite=True)
    assert len(CALLS) == 3 and (out / "notes.txt").read_text() == "mine"
    np.testing.assert_allclose(res.outputs["x"], np.cos(0.5 * np.sqrt(K)), rtol=0, atol=1e-8)
    # a damaged chunk is recomputed, with a warning; load_sweep leaves it out meanwhile
    data = bytearray((out / "chunk-00001.npz").read_bytes())
    data[-5] ^= 0xFF
    (out / "chunk-00001.npz").write_bytes(bytes(data))
    with pytest.warns(UserWarning, match="checksum"):
        assert not mbd.load_sweep(out, partial=True).complete
    CALLS.clear()
    with pytest.warns(UserWarning, match="chunk-00001.npz.*checksum"):
        again = run(osc, out, t1=0.5)
    assert len(CALLS) == 1
    np.testing.assert_array_equal(again.outputs["x"], res.outputs["x"])
    # other library versions resume with a warning (the finished chunks are kept)
    man = json.loads((out / "manifest.json").read_text())
    man["versions"]["numpy"] = "0.0"
    (out / "manifest.json").write_text(json.dumps(man))
    CALLS.clear()
    with pytest.warns(UserWarning, match="other library versions.*numpy 0.0"):
        run(osc, out, t1=0.5)
    assert CALLS == []


def test_foreign_folders_are_protected(osc, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "data.csv").write_text("1,2,3")
    with pytest.raises(mbd.MbdjaxError, match="not a sweep folder"):
        run(osc, out)
    assert os.listdir(out) == ["data.csv"]
    run(osc, out, overwrite=True)                       # written next to the file, which stays
    assert (out / "data.csv").read_text() == "1,2,3" and (out / "manifest.json").exists()
    (tmp_path / "afile").write_text("x")
    with pytest.raises(mbd.MbdjaxError, match="not a folder"):
        run(osc, tmp_path / "afile")
    with pytest.raises(mbd.MbdjaxError, match="not a sweep folder"):
        mbd.load_sweep(tmp_path)


def test_bad_inputs_are_clear_errors(osc, tmp_path):
    out = tmp_path / "bad"
    with pytest.raises(mbd.MbdjaxError, match=r"unknown parameters \['spring.k'\].*\['k'\]"):
        run(osc, out, samples={"spring.k": K})
    with pytest.raises(mbd.MbdjaxError, match="differ in number"):
        run(osc, out, q0=jnp.ones((3, 1)))
    with pytest.raises(mbd.MbdjaxError, match="must be 1-D"):
        run(osc, out, samples={"k": np.ones((2, 2))})
    with pytest.raises(mbd.MbdjaxError, match="nothing varies"):
        run(osc, out, samples={})
    with pytest.raises(mbd.MbdjaxError, match=r"q0 must have shape \(1,\)"):
        run(osc, out, q0=jnp.ones(2))
    with pytest.raises(mbd.MbdjaxError, match="give the initial positions q0"):
        run(osc, out, q0=None)
    with pytest.raises(mbd.MbdjaxError, match="chunk must be a positive"):
        run(osc, out, chunk=0)
    with pytest.raises(mbd.MbdjaxError, match="t1="):
        mbd.sweep(osc, {"k": K}, out=out, q0=jnp.ones(1))
    with pytest.raises(mbd.MbdjaxError, match="must return a non-empty dict"):
        run(osc, out, outputs=lambda traj: traj.q[:, -1], overwrite=True)
    with pytest.raises(mbd.MbdjaxError, match=r"'x' has shape \(\); its first axis must be the 3 members"):
        run(osc, out, outputs=lambda traj: {"x": traj.q[0, -1, 0]}, overwrite=True)
    assert not any(f.startswith("chunk-") for f in os.listdir(out))   # nothing written for bad outputs


_MODEL_FILE = """
import jax.numpy as jnp
import mbdjax as mbd

def make():
    osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([1.0]),
                    potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2, params={"k": 1.0})
    return osc, jnp.ones(1), jnp.zeros(1)
"""


def test_cli_sweep_writes_resumes_and_checks_the_file(tmp_path, capsys):
    """`mbdjax sweep` of a [grid] config: final x = cos √k (1e-8); a rerun resumes all
    chunks; unknown keys and coordinates are errors (exit 2)."""
    (tmp_path / "osc.py").write_text(_MODEL_FILE)
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(textwrap.dedent("""
        model = "osc.py:make"
        t1 = 1.0
        chunk = 2
        outputs = ["x"]
        [grid]
        k = [1.0, 4.0, 9.0]
        [options]
        saveat = 2
        rtol = 1e-10
        atol = 1e-12
    """))
    assert main(["sweep", str(cfg)]) == 0
    captured = capsys.readouterr()
    assert "swept 3 simulations (2 chunks of 2: 2 computed, 0 resumed)" in captured.out
    assert "2/2 chunks, 3/3 members" in captured.err
    res = mbd.load_sweep(tmp_path / "sweep-sweep")
    np.testing.assert_allclose(res.outputs["x"], np.cos([1.0, 2.0, 3.0]), rtol=0, atol=1e-8)
    assert res.manifest["identity"]["outputs"] == "final_coordinates(x)"
    assert main(["sweep", str(cfg), "--quiet"]) == 0
    assert "0 computed, 2 resumed" in capsys.readouterr().out
    cfg.write_text(cfg.read_text().replace("t1 = 1.0", "t1 = 0.5"))
    assert main(["sweep", str(cfg), "--quiet"]) == 2
    assert "settings.t1" in capsys.readouterr().err
    assert main(["sweep", str(cfg), "--quiet", "--overwrite"]) == 0
    assert "2 computed, 0 resumed" in capsys.readouterr().out
    # [random]: n uniform draws from a fixed seed, the same on every run
    rnd = tmp_path / "rnd.toml"
    rnd.write_text('model = "osc.py:make"\nt1 = 1.0\nout = "r"\n[random]\nn = 4\nseed = 1\n'
                   'k = { lo = 1.0, hi = 4.0 }\n[options]\nsaveat = 2\n')
    assert main(["sweep", str(rnd), "--quiet"]) == 0
    drawn = mbd.load_sweep(tmp_path / "r").params["k"]
    np.testing.assert_array_equal(drawn, np.random.default_rng(1).uniform(1.0, 4.0, 4))
    bad = tmp_path / "bad.toml"
    for text, msg in [
        ('model = "osc.py:make"\nt1 = 1.0\nstep = 3\n[grid]\nk = [1.0]\n', "unknown keys ['step']"),
        ('model = "osc.py:make"\nt1 = 1.0\n[grid]\nk = [1.0]\n[samples]\nk = [1.0]\n', "exactly one of"),
        ('model = "osc.py:make"\nt1 = 1.0\n[grid]\nk = [1.0]\n[options]\nrtoll = 1\n', "unknown [options]"),
        ('model = "osc.py:make"\nt1 = 1.0\noutputs = ["y"]\n[grid]\nk = [1.0]\n', "not coordinates"),
        ('model = "nope.py:make"\nt1 = 1.0\n[grid]\nk = [1.0]\n', "sweep: model file"),
        ('model = "osc.py:make"\n[grid]\nk = [1.0]\n', "must set ['t1']"),
    ]:
        bad.write_text(text)
        assert main(["sweep", str(bad), "--quiet"]) == 2
        assert msg in capsys.readouterr().err


def test_readme_sweep_snippet_runs(capsys):
    """The README's "Sweeps" snippet (four-bar, a 3 × 2 grid in chunks of 4) runs and
    gives one rocker angle per member; the same sweep's result read back from disk."""
    import re

    readme = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")).read()
    code = re.search(r"### Sweeps\n\n```python\n(.*?)```", readme, re.S).group(1)
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    res = namespace["res"]
    assert res.complete and res.outputs["phi"].shape == (6,) and np.all(np.isfinite(res.outputs["phi"]))
    assert res.params["gravity[1]"].tolist() == [-9.81, -1.62] * 3
    assert "(6,) (6,)" in capsys.readouterr().out
    # the README's config block is a valid sweep file
    from mbdjax._batch.sweep_config import read_config, samples_of

    toml = re.search(r"### Sweeps\n.*?\n```\n(model = .*?)```", readme, re.S).group(1)
    path = os.path.join(namespace["folder"], "sweep.toml")
    with open(path, "w") as fh:
        fh.write(toml)
    cfg = read_config(path)
    assert cfg["outputs"] == ["rocker.phi"] and samples_of(cfg)["coupler.mass"].tolist() == [0.5, 0.7, 0.9]
