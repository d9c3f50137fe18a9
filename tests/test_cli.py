"""The `mbdjax` command: list, check, run (files written, folders protected)."""

import json
import os
import time

import numpy as np

import mbdjax as mbd
from mbdjax._cli import main


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "slider-crank" in out and "four-bar" in out and "double-pendulum" in out
    assert "n=63  m=62" in out            # n-four-bar: 10 loops, from the static catalogue


def test_check_exit_codes(capsys, monkeypatch):
    """0 when the motion is defined (also with redundant rows alone, which leave the
    accelerations unique: the parallelogram's third link, THEORY §8), 1 when the
    existence theorem fails (the Cartesian pendulum at its pivot: B = 0, rank 0 of 1),
    2 for a usage error."""
    assert main(["check", "four-bar"]) == 0
    assert "verdict" in capsys.readouterr().out
    assert main(["check", "parallelogram-redundant"]) == 0
    assert "multipliers not (redundant rows)" in capsys.readouterr().out
    assert main(["check", "no-such-example"]) == 2
    assert "`mbdjax list` shows all" in capsys.readouterr().err
    import types

    import jax.numpy as jnp

    import mbdjax as mbd
    from mbdjax import _cli

    pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2), potential=lambda q, t, p: 9.81 * q[1],
                     holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]), constraint_names=("rod",))
    at_pivot = types.SimpleNamespace(name="pendulum", description="at its pivot", model=pend, q0=jnp.zeros(2))
    monkeypatch.setattr(_cli, "_example", lambda name: at_pivot)
    assert _cli._cmd_check(types.SimpleNamespace(name="pendulum")) == 1
    assert "NOT OK" in capsys.readouterr().out


USAGE = r"""
import sys
from mbdjax import models
from mbdjax._cli import main

def refuse(*args, **kwargs):
    raise AssertionError("a model was built")

models.get = refuse
for name in list(models.EXAMPLES):
    models.EXAMPLES[name] = refuse
codes = [main(["list"]), main(["run", "four-barr"]), main(["check", "tripple-pendulum"]),
         main(["run", "four-bar", "--t1", "0"]), main(["run", "four-bar", "--t1", "nan"]),
         main(["run", "--points", "1"]), main(["fit", "missing.toml"]), main(["sweep", "missing.toml"])]
print("CODES", codes)
heavy = sorted(k for k in sys.modules if k.split(".")[0] in ("jax", "jaxlib", "diffrax", "equinox", "numpy",
                                                            "scipy", "matplotlib", "optax")
               or (k.startswith("mbdjax.") and k not in ("mbdjax._cli", "mbdjax._errors", "mbdjax._numerics",
                                                         "mbdjax._numerics.xla_cpu",
                                                         "mbdjax._compilation_cache",
                                                         "mbdjax.models", "mbdjax.models._catalogue",
                                                         "mbdjax.models._example")))
print("HEAVY", heavy)
"""


def test_usage_errors_come_before_any_model_is_built(tmp_path):
    """`mbdjax list` and the command-line mistakes (unknown example, t1 ≤ 0 or NaN,
    fewer than 2 points, a missing config file) are answered from the static
    catalogue: in a fresh process whose model builders all raise, list prints and every
    mistake gets exit code 2 with a message; neither JAX nor NumPy nor any part of
    mbdjax beyond the command line and the catalogue is imported (0.14 s instead of
    the 3 s import of the JAX stack)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", USAGE], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "CODES [0, 2, 2, 2, 2, 2, 2, 2]" in proc.stdout, proc.stdout + proc.stderr
    assert "HEAVY []" in proc.stdout, proc.stdout
    err = proc.stderr
    assert "no example named 'four-barr'; did you mean 'four-bar'?" in err
    assert "no example named 'tripple-pendulum'" in err
    assert "--t1 must be a positive number of seconds, got 0" in err and "got nan" in err
    assert "--points must be at least 2" in err
    assert "mbdjax fit: config file 'missing.toml' does not exist" in err
    assert "mbdjax sweep: config file 'missing.toml' does not exist" in err


def test_run_writes_outputs_and_protects_the_folder(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "slider-crank", "--t1", "0.25", "--points", "101", "--out", str(out)]) == 0
    files = set(os.listdir(out))
    assert {"trajectory.npz", "summary.json", "coordinates.png", "residuals.png", "energy.png",
            "reactions.png", "animation.gif", "viewer.html"} <= files
    printed = capsys.readouterr().out
    assert f"animation {out / 'animation.gif'}" in printed and f"viewer    {out / 'viewer.html'}" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["max_position_residual"] < 1e-10
    # Driven system: the energy changes by the driver's work; the balance holds to the
    # trapezoidal quadrature's accuracy over 101 points.
    assert summary["energy_balance_error_relative"] < 1e-3
    traj = mbd.Trajectory.load(out / "trajectory.npz")
    assert traj.q.shape == (101, 9)
    stamp = (out / "summary.json").stat().st_mtime_ns
    assert main(["run", "slider-crank", "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert (out / "summary.json").stat().st_mtime_ns == stamp  # nothing overwritten
    assert main(["run", "slider-crank", "--t1", "0.25", "--points", "11", "--out", str(out), "--force"]) == 0
    assert mbd.Trajectory.load(out / "trajectory.npz").q.shape == (11, 9)


def test_run_animation_files_and_their_opt_out(tmp_path, capsys):
    """`--no-animation` writes neither file; a network has no bodies, so its run says
    why there is no animation instead of failing."""
    out = tmp_path / "quiet"
    assert main(["run", "four-bar", "--t1", "0.1", "--points", "11", "--out", str(out), "--no-animation"]) == 0
    assert not {"animation.gif", "viewer.html"} & set(os.listdir(out))
    assert main(["run", "rlc", "--t1", "0.5", "--points", "11", "--out", str(tmp_path / "rlc")]) == 0
    assert "no animation: this example is not built by the planar or spatial front end" in capsys.readouterr().out
    assert "animation.gif" not in os.listdir(tmp_path / "rlc")


def test_energy_balance_converges_at_second_order():
    # W(t) is a trapezoidal integral of the power: halving the spacing divides the
    # balance error by about 4 (slope 2 in log-log).
    from mbdjax import models

    ex = models.get("slider-crank-free")
    errs = []
    for points in (101, 201, 401):
        tr = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.5, saveat=points, rtol=1e-11, atol=1e-12)
        e = np.asarray(tr.energy())
        errs.append(np.max(np.abs(e - e[0] - np.asarray(tr.work()))))
    slopes = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all(slopes > 1.8), (errs, slopes)


def test_run_with_other_formulations(tmp_path, capsys):
    # Without multipliers the driver's work is unknown: the run still succeeds and
    # reports no energy balance. `--progress` reports the run's progress up to the end.
    out = tmp_path / "mf"
    assert main(["run", "slider-crank", "--formulation", "multiplier_free", "--t1", "0.1", "--points", "11",
                 "--out", str(out), "--progress"]) == 0
    shown = capsys.readouterr()
    assert "100" in shown.out + shown.err            # tqdm's bar (stderr) or the text meter's 100.00%
    summary = json.loads((out / "summary.json").read_text())
    assert summary["work_input"] is None and summary["max_position_residual"] < 1e-10
    assert main(["run", "rolling-disk", "--formulation", "quasi_velocity", "--t1", "0.2", "--points", "11",
                 "--out", str(tmp_path / "qv")]) == 0


def test_run_simulates_a_redundant_mechanism(tmp_path, capsys):
    """Redundant rows alone leave the motion unique: `run` simulates and says the
    multipliers are the minimum-norm set (`check` exits 0 with that verdict, above)."""
    out = tmp_path / "par"
    assert main(["run", "parallelogram-redundant", "--t1", "0.2", "--points", "11", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "redundant constraint rows: link_coupler.y" in text and "minimum-norm" in text
    assert (out / "trajectory.npz").exists()


def test_a_long_call_is_announced_once_and_its_source_reported(capsys):
    from mbdjax._cli import _CompileNotice

    with _CompileNotice("the simulation", after=0.0):
        time.sleep(0.2)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("compiling the simulation … (first run;") and out[1].startswith("  ready in")
    with _CompileNotice("the simulation", after=5.0):    # a quick call prints nothing
        pass
    assert capsys.readouterr().out == ""


def test_the_command_exits_with_its_code_and_complete_output(tmp_path):
    """`python -m mbdjax` (the installed `mbdjax` command's entry) ends the process
    right after the command, skipping the interpreter's teardown: the exit code is the
    command's, everything printed arrives (the last line of `run`'s report), the files
    are complete (the trajectory loads), and a usage error still says why on stderr."""
    import subprocess
    import sys

    out = tmp_path / "fb"
    proc = subprocess.run([sys.executable, "-m", "mbdjax", "run", "four-bar", "--t1", "0.05", "--points", "3",
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.rstrip().splitlines()[-1].startswith("  viewer    ")
    assert "  wrote trajectory.npz, summary.json" in proc.stdout
    assert mbd.Trajectory.load(out / "trajectory.npz").q.shape == (3, 9)
    assert (out / "viewer.html").read_text(encoding="utf-8").rstrip().endswith("</html>")
    assert json.loads((out / "summary.json").read_text())["example"] == "four-bar"
    bad = subprocess.run([sys.executable, "-m", "mbdjax", "check", "no-such-example"], capture_output=True,
                         text=True, timeout=600)
    assert bad.returncode == 2 and "no example named 'no-such-example'" in bad.stderr
