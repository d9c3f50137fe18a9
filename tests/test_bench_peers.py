"""The peer benchmark (experiments/bench/peers.py): its twins are the same systems,
and its quick run writes a table of finite numbers.

Speed is not asserted (DESIGN.md: speed is measured in experiments/bench/, never in
unit tests). Expected values: the MuJoCo chain twin must give mbdjax's accelerations
to 1e-8 relative (measured ~1e-15); the closed four-bar, whose loop MuJoCo closes with
a soft constraint (solimp 0.9999: the constraint keeps 1 − 0.9999 of the unconstrained
acceleration), to 1e-3 (measured 2.9e-5), and its open chain to 1e-8.
"""

import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "experiments" / "bench"
sys.path.insert(0, str(BENCH))

from _ci import require_module  # noqa: E402


def _mujoco():
    """MuJoCo, the twins' reference (in the `[test]` extra; skipped only outside CI)."""
    return require_module("mujoco", "pip install -e '.[test]'")


def _accelerations(model, q, qd):
    from core import model_accelerations

    return model_accelerations(model, jnp.asarray(q), jnp.asarray(qd))[2]


@pytest.mark.parametrize("N", [2, 5, 10])
def test_mujoco_chain_is_the_same_system(N):
    mujoco = _mujoco()
    import peers_mujoco as pm
    from mbdjax.models import pendulum_chain

    ex, sc = pendulum_chain(N), pm.chain_twin(N)
    m = pm.model(sc, 1e-3)
    d = mujoco.MjData(m)
    # the zoo's initial state is all-zero joint angles (released along +x)
    q0, qd0 = pm.to_absolute(sc, np.zeros(N), np.zeros(N))
    np.testing.assert_allclose(q0, np.asarray(ex.q0), atol=1e-15)
    rng = np.random.default_rng(N)
    for th, thd in ((np.zeros(N), np.zeros(N)), (rng.normal(size=N), rng.normal(size=N))):
        d.qpos[:], d.qvel[:] = th, thd
        mujoco.mj_forward(m, d)
        q, qd, qdd = pm.to_absolute(sc, d.qpos, d.qvel, d.qacc)
        assert np.max(np.abs(np.asarray(ex.model.holonomic_constraints(jnp.asarray(q))))) < 1e-12
        a = _accelerations(ex.model, q, qd)
        assert np.max(np.abs(a - qdd)) <= 1e-8 * max(1.0, np.max(np.abs(a)))


def test_mujoco_four_bar_is_the_same_system():
    mujoco = _mujoco()
    import peers_mujoco as pm
    from mbdjax.models import four_bar
    from mbdjax.models import _four_bar as fb
    from mbdjax.planar import Mechanism

    ex, sc = four_bar(), pm.four_bar_twin()
    th, thd = pm.from_absolute(sc, np.asarray(ex.q0), np.asarray(ex.qd0))
    q, qd = pm.to_absolute(sc, th, thd)
    np.testing.assert_allclose(q, np.asarray(ex.q0), atol=1e-14)
    np.testing.assert_allclose(qd, np.asarray(ex.qd0), atol=1e-12)
    assert pm.closure_error(sc, q) < 1e-14

    # Open chain (no loop closure) against the same three bars in mbdjax.planar.
    open_mech = Mechanism(gravity=(0.0, -9.81))
    for name, L in (("crank", fb.CRANK), ("coupler", fb.COUPLER), ("rocker", fb.ROCKER)):
        open_mech.body(name, mass=fb.RHO * L, inertia=fb.RHO * L**3 / 12.0)
    open_mech.revolute("crank_pivot", "ground", (0.0, 0.0), "crank", (-0.5 * fb.CRANK, 0.0))
    open_mech.revolute("crank_coupler", "crank", (0.5 * fb.CRANK, 0.0), "coupler", (-0.5 * fb.COUPLER, 0.0))
    open_mech.revolute("coupler_rocker", "coupler", (0.5 * fb.COUPLER, 0.0), "rocker", (0.5 * fb.ROCKER, 0.0))
    open_model = open_mech.build()
    assert open_model.coordinates == ex.model.coordinates
    m_open = mujoco.MjModel.from_xml_string(pm.mjcf(pm.SerialChain(
        "open", sc.lengths, sc.com, sc.mass, sc.inertia, sc.offset), 1e-3))
    d = mujoco.MjData(m_open)
    rng = np.random.default_rng(0)
    for a0, w0 in ((th, thd), (rng.normal(size=3), rng.normal(size=3))):
        d.qpos[:], d.qvel[:] = a0, w0
        mujoco.mj_forward(m_open, d)
        q, qd, qdd = pm.to_absolute(sc, d.qpos, d.qvel, d.qacc)
        a = _accelerations(open_model, q, qd)
        assert np.max(np.abs(a - qdd)) <= 1e-8 * max(1.0, np.max(np.abs(a)))

    # Closed loop: MuJoCo's soft connect (see the module docstring for the tolerance).
    m = pm.model(sc, 1e-3)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = th, thd
    mujoco.mj_forward(m, d)
    q, qd, qdd = pm.to_absolute(sc, d.qpos, d.qvel, d.qacc)
    a = _accelerations(ex.model, q, qd)
    assert np.max(np.abs(a - qdd)) <= 1e-3 * max(1.0, np.max(np.abs(a)))


def _run(tmp_path, *extra):
    out, plot = tmp_path / "results_quick.md", tmp_path / "wp.png"
    proc = subprocess.run([sys.executable, str(BENCH / "peers.py"), "--quick", "--out", str(out), "--plot", str(plot),
                           *extra], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out.read_text(), plot, proc.stdout


def _rows(text, start):
    """Rows of the main table (12 columns) for one system."""
    return [ln for ln in text.splitlines() if ln.startswith("| " + start) and len(ln.strip("|").split("|")) == 12]


def _check_finite(rows):
    for ln in rows:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        if "failed" in ln or "skipped" in ln:
            continue
        wall, thr, eT, e1 = cells[5].split()[0], cells[6], cells[7], cells[8]
        assert all(np.isfinite(float(x)) for x in (wall, thr, eT, e1)), ln


@pytest.mark.slow
def test_quick_run_without_mujoco_peers(tmp_path):
    text, plot, _ = _run(tmp_path, "--peers", "mbdjax", "scipy")
    rows = _rows(text, "chain N=2") + _rows(text, "four-bar")
    assert any("mbdjax simulate Tsit5" in r for r in rows)
    assert any("NumPy+SciPy" in r and "extrapolated" in r for r in rows)
    assert not any("MuJoCo" in r for r in rows)
    assert not any("failed" in r for r in rows), rows
    _check_finite(rows)
    assert "## Targets" in text and "## Work-precision" in text and plot.exists()


@pytest.mark.slow
def test_quick_run_with_mujoco(tmp_path):
    _mujoco()
    try:        # MJX is the separate mujoco-mjx package from mujoco 4 on (the `[bench]` extra)
        from mujoco import mjx  # noqa: F401
        mjx_missing = False
    except ImportError:
        mjx_missing = True
    text, plot, _ = _run(tmp_path, "--no-wp")
    rows = _rows(text, "chain N=2") + _rows(text, "four-bar")
    for name in ("mbdjax simulate", "mbdjax simulate_batch", "MuJoCo mj_step RK4", "MuJoCo rollout RK4",
                 "MJX (CPU)", "NumPy+SciPy"):
        assert any(name in r for r in rows), name
    failed = [r for r in rows if "failed" in r and not (mjx_missing and "MJX" in r and "ImportError" in r)]
    assert not failed, failed
    _check_finite(rows)
    fb = [r for r in rows if r.startswith("| four-bar") and "mbdjax" in r and "projection" in r]
    assert fb and all(float(r.strip("|").split("|")[9]) < 1e-9 for r in fb)   # loop closure column
