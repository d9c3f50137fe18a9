"""Multi-domain networks (Fabien ch. 1; THEORY §7) against closed forms.

Every expected value is a closed-form solution of the linear network's ODE (series
RLC, reflected inertia of a gear train, the DC motor's second-order system through
the matrix exponential of its 2 × 2 state matrix, a hydraulic press reduced by hand to
a damped oscillator) or a conservation statement (Tellegen: absorbed powers sum to
zero; ideal transformers and transducers absorb nothing).
"""

import math

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

import mbdjax as mbd
from mbdjax import models
from mbdjax.models._networks import rlc_capacitor_voltage
from mbdjax.network import Network

TIGHT = dict(rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------ series RLC
@pytest.fixture(scope="module")
def rlc():
    net = Network()
    for n in ("n1", "n2", "n3"):
        net.node(n, "electrical")
    net.effort_source("E", "n1", "ground", lambda t, p: p["E"]["V"], params={"V": 1.0})
    net.resistor("R", "n1", "n2", R=1.0)
    net.inductor("L", "n2", "n3", L=0.5)
    net.capacitor("C", "n3", "ground", C=0.25)
    return net.build()


def _rlc_params(model, R, L, C, V=1.0):
    return {**model.params, "R": {"R": R}, "L": {"L": L}, "C": {"C": C}, "E": {"V": V}}


@pytest.mark.parametrize("R", [1.0, 4.0], ids=["underdamped", "overdamped"])
def test_series_rlc_step_response(rlc, R):
    # ζ = (R/2)√(C/L) = 0.35 and 1.41; capacitor voltage v_C = q_C / C and the node
    # voltage at n3 (a multiplier) both match the closed form to 1e-8 relative.
    p = _rlc_params(rlc, R, 0.5, 0.25)
    tr = mbd.simulate(rlc, jnp.zeros(4), jnp.zeros(4), t1=6.0, saveat=61, params=p, **TIGHT)
    exact = rlc_capacitor_voltage(np.asarray(tr.t), R, 0.5, 0.25)
    np.testing.assert_allclose(tr.effort("C"), exact, atol=1e-8)
    np.testing.assert_allclose(tr.effort("n3"), exact, atol=1e-8)
    np.testing.assert_allclose(tr.effort("n1"), 1.0, atol=1e-12)
    # Tellegen: the absorbed powers of all elements sum to zero; the resistor only
    # dissipates; the source's net work is the stored energy plus the dissipated.
    balance = tr.power_balance()
    assert float(jnp.max(jnp.abs(balance["residual"]))) < 1e-10
    assert float(jnp.min(balance["R"])) >= 0.0 and float(balance["E"][1]) < 0.0


def test_node_voltage_gradients_match_finite_differences(rlc):
    # d v_C(1 s) / d(R, L, C): reverse mode against central differences (h = 1e-6,
    # relative 1e-5).
    def v_at_1(theta):
        p = _rlc_params(rlc, theta[0], theta[1], theta[2])
        tr = mbd.simulate(rlc, jnp.zeros(4), jnp.zeros(4), t1=1.0, saveat=2, params=p, **TIGHT)
        return tr.q[-1, 3] / theta[2]

    theta = jnp.array([1.0, 0.5, 0.25])
    g = jax.grad(v_at_1)(theta)
    for k in range(3):
        h = 1e-6 * float(theta[k])
        e = jnp.zeros(3).at[k].set(h)
        fd = (v_at_1(theta + e) - v_at_1(theta - e)) / (2 * h)
        np.testing.assert_allclose(g[k], fd, rtol=1e-5)


# ------------------------------------------------------------ transformers
def test_ideal_transformer_passes_power_and_scales_voltage():
    # Source 2 sin(3t) on the primary (N1 = 100), secondary (N2 = 25) into L–R:
    # v2 = (N2/N1) v1 at every instant, the transformer absorbs no power (1e-10), and
    # the load current follows L di/dt + R i = v2 (closed form of the first-order ODE).
    net = Network()
    for n in ("p", "s", "m"):
        net.node(n, "electrical")
    net.effort_source("E", "p", "ground", lambda t, p: 2.0 * jnp.sin(3.0 * t))
    net.transformer("T", "p", "ground", "s", "ground", N1=100.0, N2=25.0)
    net.inductor("L", "s", "m", L=0.1)
    net.resistor("R", "m", "ground", R=2.0)
    model = net.build()
    tr = mbd.simulate(model, jnp.zeros(model.n), jnp.zeros(model.n), t1=2.0, saveat=41, **TIGHT)
    t = np.asarray(tr.t)
    v = tr.effort("T")                                     # (T, 2): primary, secondary
    np.testing.assert_allclose(v[:, 0], 2.0 * np.sin(3.0 * t), atol=1e-10)
    np.testing.assert_allclose(v[:, 1], 0.25 * v[:, 0], atol=1e-10)
    assert float(jnp.max(jnp.abs(tr.element_power("T")))) < 1e-10
    # i' = (v2 − R i)/L with v2 = 0.5 sin 3t: i = A (sin 3t·R/L... ) via the exact formula
    a, w, amp = 2.0 / 0.1, 3.0, 0.5 / 0.1
    i_exact = amp * (a * np.sin(w * t) - w * np.cos(w * t) + w * np.exp(-a * t)) / (a * a + w * w)
    np.testing.assert_allclose(tr.flow("R"), i_exact, atol=1e-9)


def test_gear_train_reflects_inertia_and_passes_power():
    # Constant torque τ on shaft a (J_a), gear r_a = 0.02, r_b = 0.06 to shaft b (J_b):
    # ω_a = τ t / (J_a + J_b (r_a/r_b)²), ω_b = −(r_a/r_b) ω_a; torques in the ratio of
    # the radii; gear power zero (1e-10).
    net = Network()
    net.node("a", "rotational")
    net.node("b", "rotational")
    net.inertia("Ja", "a", J=0.01)
    net.inertia("Jb", "b", J=0.09)
    net.effort_source("tau", "a", "ground", lambda t, p: 0.5)
    net.gear("G", "a", "b", r_a=0.02, r_b=0.06)
    model = net.build()
    tr = mbd.simulate(model, jnp.zeros(model.n), jnp.zeros(model.n), t1=1.0, saveat=11, **TIGHT)
    t = np.asarray(tr.t)
    J_eff = 0.01 + 0.09 * (1 / 3) ** 2
    np.testing.assert_allclose(tr.flow("a"), 0.5 * t / J_eff, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tr.flow("b"), -tr.flow("a") / 3, rtol=1e-10, atol=1e-12)
    torques = tr.effort("G")
    np.testing.assert_allclose(torques[1:, 0] / torques[1:, 1], 0.02 / 0.06, rtol=1e-10)  # τ_a/r_a = τ_b/r_b
    assert float(jnp.max(jnp.abs(tr.element_power("G")))) < 1e-10
    assert float(jnp.max(jnp.abs(tr.power_balance()["residual"]))) < 1e-10


# ---------------------------------------------------------------- DC motor
def test_dc_motor_with_gear_and_load_matches_the_second_order_solution():
    # Armature R = 1 Ω, L = 0.5 H, K = 0.05 N·m/A; rotor J_m = 1e-4; gear 1:4
    # (r_a = 0.01, r_b = 0.04); load J_L = 2e-3 with damper c = 1e-3 on the load side.
    # Reflected to the motor: J = J_m + J_L/16, c_eq = c/16;
    #   L i' + R i + K ω = V,  J ω' + c_eq ω = K i,
    # solved exactly by x(t) = A⁻¹ (e^{At} − I) b V for a 12 V step.
    net = Network()
    net.node("v", "electrical")
    net.node("m", "rotational")
    net.node("l", "rotational")
    net.effort_source("V", "v", "ground", lambda t, p: 12.0)
    net.dc_motor("motor", "v", "ground", "m", K=0.05, R=1.0, L=0.5)
    net.inertia("Jm", "m", J=1e-4)
    net.gear("gear", "m", "l", r_a=0.01, r_b=0.04)
    net.inertia("JL", "l", J=2e-3)
    net.rotational_damper("c", "l", "ground", c=1e-3)
    model = net.build()
    tr = mbd.simulate(model, jnp.zeros(model.n), jnp.zeros(model.n), t1=2.0, saveat=21, **TIGHT)
    J, ceq = 1e-4 + 2e-3 / 16, 1e-3 / 16
    A = np.array([[-1.0 / 0.5, -0.05 / 0.5], [0.05 / J, -ceq / J]])
    b = np.array([12.0 / 0.5, 0.0])
    exact = np.stack([np.linalg.solve(A, (scipy.linalg.expm(A * t) - np.eye(2)) @ b) for t in np.asarray(tr.t)])
    np.testing.assert_allclose(tr.flow("motor")[:, 0], exact[:, 0], rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(tr.flow("m"), exact[:, 1], rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(tr.flow("l"), -exact[:, 1] / 4, rtol=1e-8, atol=1e-9)
    # the motor converts power: electrical in = mechanical out + R i² + d/dt(½ L i²)
    assert float(jnp.max(jnp.abs(tr.power_balance()["residual"]))) < 1e-9


# ------------------------------------------------------------ hydraulic press
def test_hydraulic_press_matches_hand_derived_equation():
    # Pressure step P0 = 2e5 Pa through a line resistance R_f = 1e9 Pa·s/m³ into a
    # cylinder (A = 5e-4 m²) pushing a rod: mass m = 10 kg, spring k = 2e4 N/m. With
    # Q = A v and (P_line − R_f Q) A = m ẍ + k x:
    #     m ẍ + R_f A² ẋ + k x = A P0   (a damped oscillator; closed form below).
    net = Network()
    net.node("supply", "fluid")
    net.node("chamber", "fluid")
    net.node("rod", "translational")
    net.effort_source("P", "supply", "ground", lambda t, p: 2e5)
    net.fluid_resistor("line", "supply", "chamber", R=1e9)
    net.hydraulic_piston("cyl", "chamber", "ground", "rod", area=5e-4)
    net.mass("load", "rod", m=10.0)
    net.spring("k", "rod", "ground", k=2e4)
    model = net.build()
    tr = mbd.simulate(model, jnp.zeros(model.n), jnp.zeros(model.n), t1=1.0, saveat=41, **TIGHT)
    m, c, k, F = 10.0, 1e9 * 25e-8, 2e4, 5e-4 * 2e5
    a, w0 = c / (2 * m), math.sqrt(k / m)
    wd = math.sqrt(w0 * w0 - a * a)
    t = np.asarray(tr.t)
    x = F / k * (1 - np.exp(-a * t) * (np.cos(wd * t) + a / wd * np.sin(wd * t)))
    np.testing.assert_allclose(tr.coordinate("rod.x"), x, atol=1e-8 * F / k)
    np.testing.assert_allclose(tr.flow("cyl")[:, 0], 5e-4 * tr.flow("rod"), atol=1e-14)
    assert float(jnp.max(jnp.abs(tr.element_power("cyl")))) < 1e-10 * F * float(jnp.max(tr.flow("rod")))


# ------------------------------------------------------------- coupling
@pytest.fixture(scope="module")
def motor_crank():
    ex = models.get("dc-motor-crank")
    return models.slider_crank(driven=False), ex.model, ex.q0, ex.qd0


def test_dc_motor_drives_the_slider_crank(motor_crank):
    # One Model: slider-crank coordinates then the armature charge; the augmented and
    # null-space formulations agree (1e-7 over 1 s) and the motor's torque turns the
    # crank (it has turned by more than a radian).
    crank, model, q0, qd0 = motor_crank
    assert model.coordinates[:crank.model.n] == crank.model.coordinates and model.coordinates[-1] == "dcm.q"
    a = mbd.simulate(model, q0, qd0, t1=1.0, saveat=21, **TIGHT)
    b = mbd.simulate(model, q0, qd0, t1=1.0, saveat=21, formulation="nullspace", **TIGHT)
    np.testing.assert_allclose(b.q, a.q, atol=1e-7)
    assert float(a.coordinate("crank.phi")[-1] - a.coordinate("crank.phi")[0]) > 1.0
    assert float(jnp.max(jnp.abs(a.position_residual()))) < 1e-10


def test_slider_position_gradient_wrt_motor_constant(motor_crank):
    # d(slider x at 0.5 s)/dK by forward mode (one tangent; reverse mode through networks
    # is checked in test_circuits.py) against central differences (relative 1e-5).
    crank, model, q0, qd0 = motor_crank
    i = model.index("slider.x")

    def x_end(K, adjoint=None):
        p = {**model.params, "dcm": {**model.params["dcm"], "K": K}}
        return mbd.simulate(model, q0, qd0, t1=0.5, saveat=2, params=p, adjoint=adjoint, **TIGHT).q[-1, i]

    g = jax.jacfwd(lambda K: x_end(K, diffrax.ForwardMode()))(0.5)
    fd = (x_end(0.5 + 1e-6) - x_end(0.5 - 1e-6)) / 2e-6
    assert abs(float(fd)) > 1e-4
    np.testing.assert_allclose(g, fd, rtol=1e-5)


# ------------------------------------------------------------- structure
def _circuit(*elements):
    net = Network()
    for n in ("a", "b"):
        net.node(n, "electrical")
    for add in elements:
        add(net)
    return net.build()


def test_check_names_ill_posed_structures():
    # a voltage source directly across a capacitor: a loop of effort sources and capacitors
    loop = _circuit(lambda n: n.effort_source("E", "a", "ground", lambda t, p: 1.0),
                    lambda n: n.capacitor("C", "a", "ground", C=1.0),
                    lambda n: n.inductor("L", "a", "b", L=1.0), lambda n: n.resistor("R", "b", "ground", R=1.0))
    r = mbd.check(loop, jnp.zeros(loop.n))
    assert not r.ok and any("loop of effort sources and capacitors only (C, E)" in s for s in r.problems)
    # a current source in series with an inductor: a cut set of flow sources and inductors
    cut = _circuit(lambda n: n.flow_source("I", "ground", "a", lambda t, p: 1.0),
                   lambda n: n.inductor("L", "a", "b", L=1.0), lambda n: n.resistor("R", "b", "ground", R=1.0))
    r = mbd.check(cut, jnp.zeros(cut.n))
    assert not r.ok and any("cut set of flow sources and inductors" in s and "I, L" in s for s in r.problems)
    # node b hangs on a capacitor pair between a and b only: floating
    net = Network()
    for n in ("a", "b", "c"):
        net.node(n, "electrical")
    net.effort_source("E", "a", "ground", lambda t, p: 1.0)
    net.inductor("L", "a", "ground", L=1.0)
    net.inductor("L2", "b", "c", L=1.0)
    net.resistor("R2", "c", "b", R=1.0)
    floating = net.build()
    r = mbd.check(floating, jnp.zeros(floating.n))
    assert not r.ok and any("floating nodes ['b', 'c']" in s for s in r.problems)


@pytest.mark.parametrize("make, fragment", [
    (lambda n: n.resistor("R", "a", "nowhere", R=1.0), "terminal 'nowhere' is not a node"),
    (lambda n: n.mass("m", "a", m=1.0), "is a electrical node; this element needs a translational"),
    (lambda n: n.resistor("R", "a", "ground", R=-1.0), "resistance `R` = -1 must be >= 0"),
    (lambda n: n.capacitor("C", "a", "ground", C=0.0), "capacitance `C` = 0 must be positive"),
    (lambda n: n.resistor("R", "a", "a", R=1.0), "both terminals are 'a'"),
])
def test_build_errors_name_the_part(make, fragment):
    net = Network()
    net.node("a", "electrical")
    make(net)
    with pytest.raises(mbd.ModelError, match=fragment):
        net.build()


def test_attach_errors():
    net = Network()
    net.node("s", "rotational")
    net.inertia("J", "s", J=1.0)
    with pytest.raises(mbd.ModelError, match="no such coordinate"):
        net.build(mechanism=models.double_pendulum().model, attach={"s": "crank.phi"})


# ------------------------------------------------------------------- stiffness
@pytest.mark.parametrize("formulation", ["augmented", "nullspace", "multiplier_free", "quasi_velocity"])
def test_implicit_solver_runs_every_formulation(rlc, formulation):
    # Kvaerno5 (implicit, through the projecting wrapper) reproduces the closed form of
    # the underdamped RLC (1e-6 at rtol 1e-8).
    tr = mbd.simulate(rlc, jnp.zeros(4), jnp.zeros(4), t1=4.0, saveat=9, solver=diffrax.Kvaerno5(),
                      formulation=formulation, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(tr.q[:, 3] / 0.25, rlc_capacitor_voltage(np.asarray(tr.t), 1.0, 0.5, 0.25), atol=1e-6)


def test_stiff_network_with_an_explicit_solver_suggests_an_implicit_one(rlc):
    # L = 1 µH against R = 1 Ω: time constant 1 µs, so Tsit5 needs ~1e6 steps for 5 s.
    p = _rlc_params(rlc, 1.0, 1e-6, 1.0)
    with pytest.raises(Exception, match="Kvaerno5"):
        mbd.simulate(rlc, jnp.zeros(4), jnp.zeros(4), t1=5.0, params=p, max_steps=2000)


# -------------------------------------------------------------------- friction
def test_regularized_coulomb_friction_converges_to_the_sliding_solution():
    # A block (m = 2 kg) sliding at v0 = 1 m/s on dry friction μ_k = 0.3, N = m g:
    # Coulomb's law gives v(t) = v0 − μ_k g t until it stops at t* = v0 / (μ_k g).
    # While sliding (t = 0.2 s, v = 0.41 m/s ≫ v_s) the smooth law with μ_s = μ_k is
    # exactly μ_k N (it only differs for |v| < v_s), so v(0.2) is Coulomb's to the
    # integration's accuracy (1e-8 at rtol 1e-10); just after t* the block has stopped
    # to within a speed that shrinks with v_s.
    net = Network()
    net.node("block", "translational")
    net.mass("m", "block", m=2.0)
    net.coulomb_friction("dry", "block", "ground", mu_k=0.3, normal=2.0 * 9.81, velocity_scale=1e-2)
    model = net.build()
    t_stop = 1.0 / (0.3 * 9.81)
    errors = []
    for vs in (1e-2, 1e-3):
        p = {**model.params, "dry": {**model.params["dry"], "velocity_scale": vs}}
        tr = mbd.simulate(model, jnp.zeros(1), jnp.ones(1), t1=t_stop + 0.02,
                          saveat=jnp.array([0.0, 0.2, t_stop + 0.02]), params=p, **TIGHT)
        v = tr.flow("block")
        assert abs(float(v[1]) - (1.0 - 0.3 * 9.81 * 0.2)) < 1e-8
        errors.append(abs(float(v[2])))
    assert errors[1] < errors[0] < 1e-2


def test_check_valve_passes_forward_and_blocks_reverse_flow():
    # Pressure source ±1e5 Pa through an inertance (1e6 kg/m⁴) and a check valve
    # (R_open = 1e8, R_closed = 1e12 Pa·s/m³): the steady flow is P / R (the inertance
    # drops nothing at steady state), forward ≈ 1e-3 m³/s, reverse ≈ −1e-7 m³/s (1 %).
    # Closed, the line's time constant I/R is 1 µs: stiff, so an implicit solver.
    net = Network()
    net.node("s", "fluid")
    net.node("v", "fluid")
    net.effort_source("P", "s", "ground", lambda t, p: p["P"]["P"], params={"P": 1e5})
    net.inertance("pipe", "s", "v", I=1e6)
    net.check_valve("cv", "v", "ground", R_open=1e8, R_closed=1e12, flow_scale=1e-8)
    model = net.build()
    for P, R in ((1e5, 1e8), (-1e5, 1e12)):
        p = {**model.params, "P": {"P": P}}
        tr = mbd.simulate(model, jnp.zeros(model.n), jnp.zeros(model.n), t1=0.5, saveat=3, params=p,
                          solver=diffrax.Kvaerno5(), rtol=1e-7, atol=1e-14)
        np.testing.assert_allclose(tr.flow("cv")[-1], P / R, rtol=1e-2)
