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


# The three issue-2 experiments run by default; the longer smoke runs of the
# other front ends are marked slow (their models are tested directly elsewhere).
_SLOW = pytest.mark.slow


@pytest.mark.parametrize("script", ["slider_crank.py", "four_bar.py", "double_pendulum.py",
                                    pytest.param("spatial_tops.py --quick", marks=_SLOW),
                                    pytest.param("networks.py --quick", marks=_SLOW),
                                    "stick_slip.py --quick"])
def test_experiment_runs(script):
    out = _run(script.split(), os.path.join(ROOT, "experiments"))
    assert "plot:" in out


@pytest.mark.slow
def test_benchmark_quick_run(tmp_path):
    out = _run([os.path.join("experiments", "bench", "core.py"), "--quick", "--out", str(tmp_path / "r.md")], ROOT)
    assert "pendulum chain" in out and (tmp_path / "r.md").exists()
