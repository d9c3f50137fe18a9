"""Massless (resistive) loops with first-order dynamics, junction diodes and bipolar
transistors: closed forms, ngspice and finite differences."""

import subprocess

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd
from mbdjax import models
from mbdjax.network import Network
from mbdjax.network._laws import junction_content, junction_current, junction_voltage

from _ci import require_program

jax.config.update("jax_enable_x64", True)

E, R, C = 2.0, 1e3, 1e-6   # RC charging: 2 V step, 1 kΩ, 1 µF (RC = 1 ms)


@pytest.fixture(scope="module")
def rc():
    net = Network()
    for n in ("a", "b"):
        net.node(n, "electrical")
    net.effort_source("E", "a", "ground", lambda t, p: E)
    net.resistor("R", "a", "b", R=R)
    net.capacitor("C", "b", "ground", C=C)
    return net.build()


def _vc(model, params, t1, saveat):
    zero = jnp.zeros(model.n)
    traj = mbd.simulate(model, zero, zero, t1=t1, saveat=saveat, params=params, rtol=1e-10, atol=1e-16)
    return traj


def test_rc_charging_matches_closed_form(rc):
    """V_C = E (1 − e^{−t/RC}) (closed form); 1e-8 relative at rtol 1e-10 (charges in C,
    so atol 1e-16 C = 1e-10 V)."""
    traj = _vc(rc, rc.params, 5e-3, 21)
    exact = E * (1 - np.exp(-np.asarray(traj.t) / (R * C)))
    vc = np.asarray(traj.effort("C"))
    assert np.max(np.abs(vc - exact)) < 1e-8 * E
    np.testing.assert_allclose(traj.effort("b"), vc, atol=1e-12)          # node effort = capacitor's
    # the loop rate solved at t0 from the loop equation, not taken from qd0 = 0
    assert float(traj.qd[0, rc.index("R.q")]) == pytest.approx(E / R, rel=1e-12)
    power = traj.power_balance()
    assert float(jnp.max(jnp.abs(power["residual"]))) < 1e-12 * E * E / R


def test_rc_gradients_match_closed_form(rc):
    """∂V_C/∂R = −E e^{−t/RC} t/(R²C), ∂V_C/∂C = −E e^{−t/RC} t/(RC²) at t = 1 ms
    (closed form); 1e-6 relative."""
    t1 = 1e-3

    def vc(Rv, Cv):
        p = {**rc.params, "R": {"R": Rv}, "C": {"C": Cv}}
        return _vc(rc, p, t1, 2).effort("C")[-1]

    dR, dC = jax.grad(vc, argnums=(0, 1))(R, C)
    decay = np.exp(-t1 / (R * C))
    assert float(dR) == pytest.approx(-E * decay * t1 / (R * R * C), rel=1e-6)
    assert float(dC) == pytest.approx(-E * decay * t1 / (R * C * C), rel=1e-6)


def test_massless_mechanical_node_relaxes_exponentially():
    """A node with no mass between a spring k and a damper c to the frame: c ẋ = −k x,
    x = x0 e^{−kt/c} (closed form); 1e-8 relative."""
    net = Network()
    net.node("x", "translational")
    net.spring("k", "x", "ground", k=4.0)
    net.damper("c", "x", "ground", c=2.0)
    model = net.build()
    traj = mbd.simulate(model, jnp.array([0.5]), jnp.zeros(1), t1=2.0, saveat=11, rtol=1e-10, atol=1e-14)
    t = np.asarray(traj.t)
    np.testing.assert_allclose(traj.q[:, 0], 0.5 * np.exp(-2.0 * t), rtol=1e-8)
    np.testing.assert_allclose(traj.qd[:, 0], -1.0 * np.exp(-2.0 * t), rtol=1e-8)
    assert mbd.check(model, jnp.array([0.5])).first_order == 1


def test_check_reports_first_order_loops_and_other_formulations_refuse(rc):
    report = mbd.check(rc, jnp.zeros(rc.n))
    assert report.ok and report.first_order == 1 and "first-order (massless) loops" in str(report)
    zero = jnp.zeros(rc.n)
    for formulation in ("nullspace", "multiplier_free", "quasi_velocity"):
        with pytest.raises(mbd.SimulationError, match="formulation='augmented'"):
            mbd.simulate(rc, zero, zero, t1=1e-3, formulation=formulation)


def test_massless_loop_without_resistance_is_reported():
    """Two capacitors in parallel on a source through nothing: the loop C1–C2 has no
    resistance, its current is undetermined."""
    net = Network()
    net.node("a", "electrical")
    net.node("b", "electrical")
    net.effort_source("E", "a", "ground", lambda t, p: 1.0)
    net.resistor("R", "a", "b", R=1.0)
    net.capacitor("C1", "b", "ground", C=1.0)
    net.capacitor("C2", "b", "ground", C=1.0)
    model = net.build()
    report = mbd.check(model, jnp.zeros(model.n))
    assert not report.ok and "resistor or an inductor" in " ".join(report.problems)
    with pytest.raises(mbd.SimulationError, match="no resistance"):
        mbd.simulate(model, jnp.zeros(model.n), jnp.zeros(model.n), t1=1.0)


def test_junction_law_inverse_and_derivatives():
    """v(i) inverts i(v) = I_s (e^{v/a} − 1) + gmin v across reverse bias, the knee,
    forward bias and the tangent continuation; dv/di = 1/i'(v), ∂D/∂i = v, and the
    parameter derivative by central differences (1e-6 relative)."""
    Is, a, g = 1e-14, 0.025865, 1e-12
    for i in (-1.0, -5e-12, -0.99e-14, 0.0, 1e-15, 1e-8, 1e-3, 10.0, 1e4):
        v = junction_voltage(i, Is, a, g)
        assert float(junction_current(v, Is, a, g)) == pytest.approx(i, rel=1e-12, abs=1e-27)
        slope = jax.grad(junction_current)(v, Is, a, g)
        assert float(jax.grad(junction_voltage)(i, Is, a, g)) == pytest.approx(1 / float(slope), rel=1e-10)
        assert float(jax.grad(junction_content)(i, Is, a, g)) == pytest.approx(float(v), rel=1e-12, abs=1e-15)
    f = lambda s: junction_voltage(1e-3, s, a, g)  # noqa: E731
    fd = (f(Is * (1 + 1e-6)) - f(Is * (1 - 1e-6))) / (2e-6 * Is)
    assert float(jax.grad(f)(Is)) == pytest.approx(float(fd), rel=1e-6)


def test_network_builder_rejects_bad_semiconductors():
    net = Network()
    for n in ("a", "b"):
        net.node(n, "electrical")
    net.diode("D", "a", "b", I_s=-1e-14)
    net.bjt_npn("Q", "a", "a", "b")
    with pytest.raises(mbd.ModelError) as info:
        net.build()
    text = str(info.value)
    assert "saturation current" in text and "three different nodes" in text


# ------------------------------------------------------------------ ngspice
# The only numerical check of the diode and the transistor (skipped only outside CI).
NGSPICE_INSTALL = "Debian: apt-get install ngspice; .ci/run installs it"

RECTIFIER = """half-wave rectifier
V1 in 0 SIN(0 5 50)
D1 in out DMOD
R1 out 0 1k
C1 out 0 10u
.model DMOD D(IS=1e-14 N=1)
.options reltol=1e-6 abstol=1e-12 vntol=1e-9
.tran 20u 60m 0 2u uic
.control
run
linearize v(out)
wrdata {out} v(out)
.endc
.end
"""

COMMON_EMITTER = """common-emitter stage
VCC vcc 0 DC 10
VIN in 0 SIN(1.5 0.1 1k)
RB in b 10k
RC vcc c 2k
RE e 0 1k
CL c 0 100n
Q1 c b e QMOD
.model QMOD NPN(IS=1e-16 BF=100 BR=1)
.options reltol=1e-6 abstol=1e-12 vntol=1e-9
.tran 2u 3m 0 0.1u uic
.control
run
linearize v(b) v(e) v(c)
wrdata {out} v(b) v(e) v(c)
.endc
.end
"""


def _ngspice(netlist, tmp_path, columns):
    """Run ngspice in batch mode; returns `(t, [v_node, ...])` on its linearized grid."""
    ngspice = require_program("ngspice", NGSPICE_INSTALL)
    out = tmp_path / "out.txt"
    cir = tmp_path / "circuit.cir"
    cir.write_text(netlist.format(out=out))
    run = subprocess.run([ngspice, "-b", str(cir)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.exists(), f"ngspice failed:\n{run.stdout}\n{run.stderr}"
    data = np.loadtxt(out)
    return data[:, 0], [data[:, 2 * k + 1] for k in range(columns)]


def _simulate_example(ex, ts, params=None):
    return mbd.simulate(ex.model, ex.q0, ex.qd0, t1=float(ts[-1]), saveat=jnp.asarray(ts),
                        params=params, max_steps=100_000, **ex.options)


def test_diode_rectifier_matches_ngspice(tmp_path):
    """Output node of the half-wave rectifier over three periods against ngspice
    (tightened tolerances, 2 µs steps): within 1e-4 of the peak voltage, the README's
    claim (measured 3.6e-6)."""
    ts, (v_out,) = _ngspice(RECTIFIER, tmp_path, 1)
    ex = models.get("diode-rectifier")
    traj = _simulate_example(ex, ts)
    ours = np.asarray(traj.effort("out"))
    assert np.max(np.abs(ours - v_out)) < 1e-4 * np.max(np.abs(v_out))
    assert 4.0 < np.max(ours) < 4.5                  # the capacitor charged to about 5 V − 0.7 V
    power = traj.power_balance()
    assert float(jnp.max(jnp.abs(power["residual"]))) < 1e-9 * float(jnp.max(jnp.abs(power["R1"])))


def test_common_emitter_matches_ngspice(tmp_path):
    """Base, emitter and collector voltages of the common-emitter stage, from
    saturation at power-on into the amplifying region, against ngspice's Gummel–Poon
    model with default (Ebers–Moll) parameters: within 1e-4 relative per node (measured
    1.2e-5 at the emitter, 1.3e-7 at the collector)."""
    ts, nodes = _ngspice(COMMON_EMITTER, tmp_path, 3)
    ex = models.get("common-emitter")
    traj = _simulate_example(ex, ts)
    for name, ref in zip(("b", "e", "c"), nodes):
        ours = np.asarray(traj.effort(name))
        assert np.max(np.abs(ours - ref)) < 1e-4 * np.max(np.abs(ref)), name
    # mbdjax's gain against the small-signal closed form RC / (RE + r_e + RB/(β+1)) =
    # 2000/1135 with the load pole 1/(2π RC CL) = 800 Hz: 1.76 / |1 + 1.26j| = 1.10 at
    # 1 kHz; the small-signal estimate ignores the 0.1 V swing's nonlinearity (measured
    # 1.126, ngspice 1.126), so within 5 %.
    collector = np.asarray(traj.effort("c"))
    gain = (np.max(collector[ts > 1e-3]) - np.min(collector[ts > 1e-3])) / 0.2
    assert abs(gain - 1.10) < 0.05 * 1.10
    power = traj.power_balance()
    assert float(jnp.max(jnp.abs(power["residual"]))) < 1e-9 * float(jnp.max(jnp.abs(power["RC"])))


def test_rectifier_output_gradient_matches_finite_differences():
    """∂v_out(30 ms)/∂R1 and ∂/∂C1 through the diode's switching: reverse mode against
    central differences (step 1e-4 relative); 1e-5 relative."""
    ex = models.get("diode-rectifier")
    base = ex.model.params

    def v_out(Rv, Cv):
        p = {**base, "R1": {"R": Rv}, "C1": {"C": Cv}}
        traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.03, saveat=jnp.array([0.0, 0.03]), params=p,
                            rtol=1e-10, atol=1e-14)
        return traj.effort("out")[-1]

    R1, C1 = 1e3, 10e-6
    dR, dC = jax.grad(v_out, argnums=(0, 1))(R1, C1)
    h = 1e-4
    fdR = (v_out(R1 * (1 + h), C1) - v_out(R1 * (1 - h), C1)) / (2 * h * R1)
    fdC = (v_out(R1, C1 * (1 + h)) - v_out(R1, C1 * (1 - h))) / (2 * h * C1)
    assert float(dR) == pytest.approx(float(fdR), rel=1e-5)
    assert float(dC) == pytest.approx(float(fdC), rel=1e-5)
