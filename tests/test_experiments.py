"""The experiment scripts and the benchmark still run (smoke tests, in subprocesses,
so each starts from a clean JAX configuration like a user's run)."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(args, cwd):
    proc = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc.stdout


@pytest.mark.parametrize("script", ["slider_crank.py", "four_bar.py", "double_pendulum.py",
                                    "spatial_tops.py --quick", "networks.py --quick",
                                    "stick_slip.py --quick"])
def test_experiment_runs(script):
    out = _run(script.split(), os.path.join(ROOT, "experiments"))
    assert "plot:" in out


def test_benchmark_quick_run(tmp_path):
    out = _run([os.path.join("experiments", "bench", "core.py"), "--quick", "--out", str(tmp_path / "r.md")], ROOT)
    assert "pendulum chain" in out and (tmp_path / "r.md").exists()
