"""The experiment scripts hold the numbers the README states for them: each script checks
its claims (`check:` lines from experiments/_common.py) and exits 1 if one fails. Run in
subprocesses, so each starts from a clean JAX configuration like a user's run; a run
passes when it exits 0 and prints every expected check as `ok` (a script that skips
its checks fails too)."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(args, cwd):
    proc = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc.stdout


def _checks(out):
    """`{label: 'ok' | 'FAILED'}` from the `check: <label> <value> (<bounds>) ok|FAILED` lines."""
    found = {}
    for line in out.splitlines():
        m = re.match(r"check: (.*) (\S+) \(([^()]*)\) (ok|FAILED)$", line)
        if m:
            found[m.group(1)] = m.group(4)
    return found


def _sens(name, stated):
    return f"{name}: RMS normalized sensitivity / stated {stated} − 1"


# script (with arguments) -> the labels of the checks it must print, all `ok`
CHECKS = {
    "animations.py": ["slider-crank animation cost [s]", "A02: largest pin height at the flat time [m]",
                      "A02: spread of the pins' drawn rows at the flat time [px]",
                      "A02: passed the flat position (final crank angle below 0) [rad]"],
    "slider_crank.py": ["driven x vs closed form", "driven v vs closed form", "driven a vs closed form",
                        "free max |Φ|", "free max |Φ_q q̇ − ν|"],
    "four_bar.py": ["energy drift / max T", "loop closure [m]"],
    "double_pendulum.py": ["max angle difference over 5 s [rad]"],
    "stick_slip.py": ["switch count minus closed form's", "max switch time difference [s]"]
    + [f"smooth v_s = {vs} max |x − x_exact| [m]" for vs in ("1e-02", "1e-03", "1e-04", "1e-05")],
    "spatial_tops.py": ["steady top: θ range [rad]", "nutating top: relative drift of E",
                        "nutating top: relative drift of p_φ", "nutating top: relative drift of p_ψ",
                        "steady disk: tilt range [rad]", "hemisphere: relative energy drift",
                        "hemisphere: contact velocity [m/s]", "hemisphere: quasi-velocity vs augmented max |Δq|"]
    + [f"upright disk at {f} × Ω_c stays up: largest tilt [rad]" for f in ("1.3", "1.1")]
    + [f"upright disk at {f} × Ω_c falls: largest tilt [rad]" for f in ("0.9", "0.7")],
    "networks.py": [f"RLC R = {R}: {what}" for R in ("0.5", "1", "4")
                    for what in ("max |v_C − closed form| [V]", "power balance residual [W]")]
    + ["motor crank: augmented vs null space max |Δq|"],
    "fit_friction.py": [f"dL/d{n} vs central differences, relative" for n in ("dry.mu_k", "visc.c")]
    + [f"{n} |estimate − truth| / SE" for n in ("dry.mu_k", "visc.c")],
    "four_bar_sensitivity.py": ["forward vs reverse mode max difference [rad/m]",
                                "forward mode vs central differences, worst relative difference",
                                _sens("ground link (rocker pivot x)", "1.4"),
                                _sens("coupler half-length (rocker end)", "0.67"),
                                _sens("crank length", "0.2"), _sens("rocker half-length (pivot end)", "0.11")],
    "formulations_compare.py": [f"{name}: max |Δq| of every formulation vs augmented"
                                for name in ("slider-crank-free", "four-bar", "double-pendulum",
                                             "elliptic-pendulum", "rolling-disk-generic")]
    + ["elliptic-pendulum: multiplier_free equations", "elliptic-pendulum: augmented equations"],
    "fit_slider_crank.py --quick": [f"first draw: {n} |estimate − truth| / SE"
                                    for n in ("rod.mass", "spring.c", "spring.k")],
    "fit_slider_crank.py": [f"first draw: {n} |estimate − truth| / SE" for n in ("rod.mass", "spring.c", "spring.k")]
    + [f"{n} mean SE / spread over 20 draws" for n in ("rod.mass", "spring.c", "spring.k")]
    + ["fraction of all 60 estimates within 2 SE (0.95 expected)"],
    "fit_double_pendulum.py": ["single shooting: largest |estimate − truth| / SE"]
    + [f"multiple shooting: {n} |estimate − truth| / SE" for n in ("link2.mass", "link1.inertia")],
}

# Default run: the scripts whose full run takes about a minute or less on 2 cores, and
# the quick mode of the slider-crank fit; the rest (compile-heavy, 1.5 to 6 minutes here) are slow.
_SLOW = pytest.mark.slow
SCRIPTS = [
    "slider_crank.py", "four_bar.py", "double_pendulum.py", "stick_slip.py", "fit_friction.py", "animations.py",
    "fit_slider_crank.py --quick",
    pytest.param("four_bar_sensitivity.py", marks=_SLOW),
    pytest.param("spatial_tops.py", marks=_SLOW),
    pytest.param("networks.py", marks=_SLOW),
    pytest.param("formulations_compare.py", marks=_SLOW),
    pytest.param("fit_slider_crank.py", marks=_SLOW),
    pytest.param("fit_double_pendulum.py", marks=_SLOW),
]


def _args(param):
    return param if isinstance(param, str) else param.values[0]


def test_every_readme_experiment_is_checked():
    """Each top-level script of the README's experiments table runs here in full, with
    its expected checks listed (experiments/mutation_check.py, which breaks the library
    in a fresh clone, is run by hand)."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        rows = re.findall(r"^\| `python experiments/([\w]+\.py)", fh.read(), flags=re.M)
    in_readme = set(rows) - {"mutation_check.py"}
    full_runs = {_args(s) for s in SCRIPTS if " " not in _args(s)}
    assert in_readme == full_runs
    assert set(CHECKS) == {_args(s) for s in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS)
def test_experiment_checks(script):
    out = _run(script.split(), os.path.join(ROOT, "experiments"))
    found = _checks(out)
    missing = [label for label in CHECKS[script] if label not in found]
    assert not missing, f"{script} printed no check for {missing}:\n{out[-3000:]}"
    assert all(v == "ok" for v in found.values()), out[-3000:]
    assert "plot:" in out or "table:" in out


@pytest.mark.slow
def test_benchmark_quick_run(tmp_path):
    out = _run([os.path.join("experiments", "bench", "core.py"), "--quick", "--out", str(tmp_path / "r.md")], ROOT)
    assert "pendulum chain" in out and (tmp_path / "r.md").exists()
