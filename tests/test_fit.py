"""`mbdjax.fit`: recovery from noise-free data, the identifiability report, the loss
gradient against finite differences, and clear errors."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd

jax.config.update("jax_enable_x64", True)

TIGHT = dict(rtol=1e-11, atol=1e-13)
TS = jnp.linspace(0.1, 4.0, 40)
TRUE = {"body": {"m": 1.5}, "spring": {"k": 4.0}, "damper": {"c": 0.3}}


def _oscillator(split_mass=False):
    """m ẍ + c ẋ + k x = F sin(1.3 t), F = 1 N (known: without a force of known size
    only k/m and c/m would show in the motion); with `split_mass` the mass is m1 + m2
    (only the sum acts)."""
    if split_mass:
        mass = lambda p: jnp.array([p["body"]["m1"] + p["body"]["m2"]])  # noqa: E731
        params = {"body": {"m1": 0.5, "m2": 1.0}, "spring": {"k": 4.0}, "damper": {"c": 0.3}}
    else:
        mass = lambda p: jnp.array([p["body"]["m"]])  # noqa: E731
        params = TRUE
    params = {**params, "drive": {"F": 1.0}}
    return mbd.Model(("x",), mass_diagonal=mass,
                     forces=lambda q, qd, t, p: jnp.array([p["drive"]["F"] * jnp.sin(1.3 * t)]),
                     potential=lambda q, t, p: 0.5 * p["spring"]["k"] * q[0] ** 2,
                     dissipation=lambda q, qd, t, p: 0.5 * p["damper"]["c"] * qd[0] ** 2, params=params)


@pytest.fixture(scope="module")
def model():
    return _oscillator()


@pytest.fixture(scope="module")
def data(model):
    traj = mbd.simulate(model, jnp.array([1.0]), jnp.zeros(1), t1=TS[-1], saveat=TS, **TIGHT)
    return {"t": np.asarray(TS), "y": np.asarray(traj.q[:, 0])}


def test_noise_free_data_recover_the_parameters(model, data):
    """From 30 % off, Levenberg–Marquardt recovers m, k, c to 1e-6 relative (the data
    are the model's own motion, so the true values are exact)."""
    start = {"body": {"m": 1.2}, "spring": {"k": 5.0}, "damper": {"c": 0.2}, "drive": {"F": 1.0}}
    res = mbd.fit(model, data, start, free=("body.m", "spring.k", "damper.c"), outputs=("x",),
                  q0=jnp.array([1.0]), qd0=jnp.zeros(1), bounds={"body.m": (0.0, None)}, verbose=False, **TIGHT)
    np.testing.assert_allclose(res.values, [1.5, 4.0, 0.3], rtol=1e-6)
    assert res.converged and res.loss < 1e-16 and res.history[0] > res.history[-1]
    assert float(res.params["spring"]["k"]) == pytest.approx(4.0, rel=1e-6)
    assert not res.unidentifiable and "body.m" in res.report()


def test_multiple_shooting_recovers_the_parameters(model, data):
    """Four segments with free initial states (noise-free data): the parameters to 1e-6
    relative and the continuity defects to round-off, and the standard errors agree
    with single shooting's (the segment states are nuisance parameters)."""
    start = {"body": {"m": 1.2}, "spring": {"k": 5.0}, "damper": {"c": 0.2}, "drive": {"F": 1.0}}
    kw = dict(free=("body.m", "spring.k", "damper.c"), outputs=("x",), q0=jnp.array([1.0]), qd0=jnp.zeros(1),
              verbose=False, **TIGHT)
    noisy = {"t": data["t"], "y": data["y"] + 1e-3 * np.sin(7.0 * data["t"])}    # a fixed "noise"
    single = mbd.fit(model, noisy, start, **kw)
    multi = mbd.fit(model, noisy, start, shooting_segments=4, **kw)
    np.testing.assert_allclose(multi.values, single.values, rtol=1e-5)
    np.testing.assert_allclose(multi.std_errors, single.std_errors, rtol=0.05)
    exact = mbd.fit(model, data, start, shooting_segments=4, **kw)
    np.testing.assert_allclose(exact.values, [1.5, 4.0, 0.3], rtol=1e-6)
    assert exact.loss < 1e-14 and exact.residuals.shape[0] == 4


def test_identifiability_report_flags_a_mass_split_in_two():
    """Only m1 + m2 enters the motion: the relative sensitivity matrix has a zero
    singular value along m1·(∂/∂m1) − m2·(∂/∂m2); the report names it."""
    split = _oscillator(split_mass=True)
    traj = mbd.simulate(split, jnp.array([1.0]), jnp.zeros(1), t1=TS[-1], saveat=TS, **TIGHT)
    data = (np.asarray(TS), np.asarray(traj.q[:, 0]))
    res = mbd.fit(split, data, free=("body.m1", "body.m2", "spring.k"), outputs=("x",), q0=jnp.array([1.0]),
                  qd0=jnp.zeros(1), steps=5, verbose=False, **TIGHT)
    assert len(res.unidentifiable) == 1
    combo = res.unidentifiable[0]
    assert "body.m1" in combo and "body.m2" in combo and "spring.k" not in combo
    assert np.isinf(res.std_errors[0]) and np.isinf(res.std_errors[1]) and np.isfinite(res.std_errors[2])
    assert "not identifiable" in res.report()


def test_loss_gradient_matches_finite_differences(model, data):
    """`fit_loss` gradients with every diffrax adjoint: recursive checkpointing and
    DirectAdjoint (jax.grad), forward mode (jax.jacfwd) and the continuous backsolve
    (jax.grad; without the projection, which it refuses with a clear error) against
    central differences of the loss (step 1e-6 relative): 1e-5."""
    import diffrax

    start = {"body": {"m": 1.2}, "spring": {"k": 5.0}, "damper": {"c": 0.2}, "drive": {"F": 1.0}}
    kw = dict(free=("spring.k", "damper.c"), outputs=("x",), q0=jnp.array([1.0]), qd0=jnp.zeros(1), **TIGHT)
    L, theta0 = mbd.fit_loss(model, data, start, **kw)
    L_fwd, _ = mbd.fit_loss(model, data, start, adjoint=diffrax.ForwardMode(), **kw)
    fd = []
    for j in range(2):
        h = 1e-6 * float(theta0[j])
        e = jnp.zeros(2).at[j].set(h)
        fd.append((float(L(theta0 + e)) - float(L(theta0 - e))) / (2 * h))
    np.testing.assert_allclose(jax.grad(L)(theta0), fd, rtol=1e-5)
    np.testing.assert_allclose(jax.jacfwd(L_fwd)(theta0), fd, rtol=1e-5)
    for adjoint, stabilization in ((diffrax.DirectAdjoint(), "projection"), (diffrax.BacksolveAdjoint(), "none")):
        L_adj, _ = mbd.fit_loss(model, data, start, adjoint=adjoint, stabilization=stabilization, **kw)
        np.testing.assert_allclose(jax.grad(L_adj)(theta0), fd, rtol=1e-5, err_msg=type(adjoint).__name__)
    with pytest.raises(mbd.SimulationError, match="stabilization='none'"):
        mbd.simulate(model, jnp.array([1.0]), jnp.zeros(1), t1=1.0, adjoint=diffrax.BacksolveAdjoint())


def test_bad_input_gets_clear_errors(model, data, tmp_path):
    kw = dict(outputs=("x",), q0=jnp.array([1.0]), qd0=jnp.zeros(1), verbose=False)
    with pytest.raises(mbd.MbdjaxError, match="unknown parameters"):
        mbd.fit(model, data, free=("spring.kk",), **kw)
    with pytest.raises(mbd.MbdjaxError, match="non-finite"):
        bad = {"t": data["t"], "y": np.where(np.arange(40) == 3, np.nan, data["y"])}
        mbd.fit(model, bad, free=("spring.k",), **kw)
    with pytest.raises(mbd.MbdjaxError, match="do not match|one data column per output"):
        mbd.fit(model, {"t": data["t"], "y": np.stack([data["y"], data["y"]], 1)}, free=("spring.k",), **kw)
    with pytest.raises(mbd.MbdjaxError, match="not inside its bounds"):
        mbd.fit(model, data, free=("spring.k",), bounds={"spring.k": (5.0, 9.0)}, **kw)
    path = tmp_path / "data.csv"
    np.savetxt(path, np.stack([data["t"], data["y"]], 1), delimiter=",", header="t,y", comments="")
    with pytest.raises(mbd.MbdjaxError, match="no columns \\['x'\\]"):
        mbd.fit(model, str(path), free=("spring.k",), **kw)


MODEL_FILE = '''
import jax.numpy as jnp
import mbdjax as mbd

def oscillator():
    model = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([p["body"]["m"]]),
                      forces=lambda q, qd, t, p: jnp.array([jnp.sin(1.3 * t)]),
                      potential=lambda q, t, p: 0.5 * p["spring"]["k"] * q[0] ** 2,
                      dissipation=lambda q, qd, t, p: 0.5 * p["damper"]["c"] * qd[0] ** 2,
                      params={"body": {"m": 1.5}, "spring": {"k": 4.0}, "damper": {"c": 0.3}})
    return model, jnp.array([1.0]), jnp.zeros(1)
'''

CONFIG = '''
model = "oscillator.py:oscillator"
data = "measured.csv"
outputs = ["x"]
free = ["spring.k", "damper.c"]
out = "result"

[start]
"spring.k" = 5.0
"damper.c" = 0.2

[bounds]
"damper.c" = { lo = 0.0 }

[options]
rtol = 1e-11
atol = 1e-13
verbose = false
'''


def test_fit_command_runs_a_config_file(model, data, tmp_path, capsys):
    """`mbdjax fit CONFIG.toml` with a model from a Python file and CSV data: recovers k
    and c (noise-free, 1e-6), writes fit.json and fit.png, refuses to overwrite."""
    import json

    from mbdjax._cli import main

    (tmp_path / "oscillator.py").write_text(MODEL_FILE)
    np.savetxt(tmp_path / "measured.csv", np.stack([data["t"], data["y"]], 1), delimiter=",", header="t,x",
               comments="")
    (tmp_path / "fit.toml").write_text(CONFIG)
    assert main(["fit", str(tmp_path / "fit.toml")]) == 0
    result = json.loads((tmp_path / "result" / "fit.json").read_text())
    np.testing.assert_allclose(result["values"], [4.0, 0.3], rtol=1e-6)
    assert (tmp_path / "result" / "fit.png").exists() and "spring.k" in capsys.readouterr().out
    assert main(["fit", str(tmp_path / "fit.toml")]) == 2          # the folder is not empty
    assert "not empty" in capsys.readouterr().err


def test_standard_errors_match_the_spread_over_noise_draws(model, data):
    """40 draws of 1 % noise on the forced oscillator: every estimate within 3 of its
    standard errors of the truth, and the mean standard error within a factor 1.5 of
    the sample standard deviation of the estimates (Gauss–Newton covariance, σ² from
    the residuals; 40 draws, since a sample standard deviation from 20 scatters by
    ±16 %: measured ratios 1.17–1.20). The fits share one compilation."""
    rng = np.random.default_rng(7)
    sigma = 0.01 * float(np.std(data["y"]))
    start = {"body": {"m": 1.4}, "spring": {"k": 4.3}, "damper": {"c": 0.25}, "drive": {"F": 1.0}}
    values, errors = [], []
    for _ in range(40):
        noisy = {"t": data["t"], "y": data["y"] + sigma * rng.standard_normal(data["y"].shape)}
        res = mbd.fit(model, noisy, start, free=("body.m", "spring.k", "damper.c"), outputs=("x",),
                      q0=jnp.array([1.0]), qd0=jnp.zeros(1), verbose=False, **TIGHT)
        assert res.converged
        values.append(res.values)
        errors.append(res.std_errors)
    values, errors = np.array(values), np.array(errors)
    truth = np.array([1.5, 4.0, 0.3])
    assert np.all(np.abs(values - truth) < 3 * errors)
    ratio = errors.mean(axis=0) / values.std(axis=0, ddof=1)
    assert np.all((ratio > 1 / 1.5) & (ratio < 1.5)), ratio


def test_repeated_fits_reuse_the_compiled_residual(model, data):
    """Outputs given as a list (as in the README) key the store of compiled residuals
    like a tuple: a second fit from another starting value finds the same compiled
    functions and traces nothing new (before, the unhashable key compiled anew on
    every fit: 1.8 s of a 1.9 s repeated fit of the 10-link chain). Both fits recover
    k = 4 (the data's value) to 1e-6."""
    from mbdjax._identify.fit import _COMPILED

    def one(k0):
        res = mbd.fit(model, {"t": data["t"], "y": data["y"]}, {**model.params, "spring": {"k": k0}},
                      free=["spring.k"], outputs=["x"], q0=jnp.array([1.0]), qd0=jnp.zeros(1),
                      verbose=False, **TIGHT)
        np.testing.assert_allclose(res.values, [4.0], rtol=1e-6)

    one(3.0)
    assert any(kept[0] is model for kept, _ in _COMPILED.values())     # stored for this model
    entries = [fn for _, fn in _COMPILED.values()]
    traces = [f._cache_size() for pair in entries for f in pair]
    one(3.5)
    after = [fn for _, fn in _COMPILED.values()]
    assert len(after) == len(entries) and all(a is b for a, b in zip(after, entries))
    assert [f._cache_size() for pair in after for f in pair] == traces


def test_trial_simulations_get_a_step_limit_from_the_start():
    """Without `max_steps`, a fit's trials stop at 16× the start's steps (a power of
    two, 4096 to 131 072), so a trial far off fails in about a second instead of
    running 100 000 steps (measured on the slider-crank: 1 s instead of 8–12 s)."""
    from mbdjax._identify.fit import trial_max_steps

    assert trial_max_steps(1) == 4096
    assert trial_max_steps(300) == 8192        # 4800 → next power of two
    assert trial_max_steps(1024) == 16384
    assert trial_max_steps(10**6) == 131072


# ------------------------------------------------------------ constrained fits
def _rod_pendulum():
    """Point mass m = 1 kg on a rod of length L in Cartesian coordinates (x, y), gravity
    9.81 along −y, viscous damping c on both velocities: Φ = ½(x² + y² − L²)."""
    return mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2), potential=lambda q, t, p: 9.81 * q[1],
                     dissipation=lambda q, qd, t, p: 0.5 * p["c"] * (qd @ qd),
                     holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - p["L"] ** 2)]),
                     constraint_names=("rod",), params={"L": 0.8, "c": 0.2})


def test_shooting_segment_starts_are_projected_onto_the_constraints():
    """Multiple shooting on a constrained model. The segment start states are free
    variables, so each is projected before it is integrated. Reference (closed form): the
    projection onto the circle x² + y² = L² moves q along its ray to L q/|q| (every
    Gauss–Newton correction is along ∇Φ = q), and the velocity loses its radial part
    (q̂·q̂)q̂. Checked to 1e-12 from a state 5 % off the circle. Then a 3-segment fit
    of L and c from noise-free data (start 10 % and 50 % off, so the initial segment
    states lie on the wrong circle) recovers both to 1e-6 relative."""
    from mbdjax._identify.shooting import _project

    model = _rod_pendulum()
    p = model.params
    q = jnp.array([0.5, -0.7])            # |q| = 0.860, 7.5 % off L = 0.8
    qd = jnp.array([0.3, 0.4])
    qp, qdp = _project(model, q, qd, 0.0, p)
    u = q / jnp.linalg.norm(q)
    np.testing.assert_allclose(qp, 0.8 * u, atol=1e-12)
    np.testing.assert_allclose(qdp, qd - (qd @ u) * u, atol=1e-12)

    theta0 = 0.9
    q0 = 0.8 * jnp.array([jnp.sin(theta0), -jnp.cos(theta0)])
    ts = jnp.linspace(0.05, 3.0, 60)
    truth = mbd.simulate(model, q0, jnp.zeros(2), t1=ts[-1], saveat=ts, **TIGHT)
    data = {"t": np.asarray(ts), "y": np.asarray(truth.q)}

    def start_state(params):               # released from rest at θ0 on the rod of length L
        return params["L"] * jnp.array([jnp.sin(theta0), -jnp.cos(theta0)]), jnp.zeros(2)

    # The trial runs integrate the rows read once at the start, not the rank-guarded
    # solves `simulate` falls back to when its start is staged (it would warn).
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="simulate: the initial state is staged")
        res = mbd.fit(model, data, {"L": 0.88, "c": 0.3}, free=("L", "c"), outputs=("x", "y"), q0=start_state,
                      qd0=None, shooting_segments=3, verbose=False, **TIGHT)
    np.testing.assert_allclose(res.values, [0.8, 0.2], rtol=1e-6)
    assert res.converged and res.residuals.shape == (3, 20, 2)


def test_optax_optimizer_with_data_from_an_npz_file(model, data, tmp_path):
    """The optax path (L-BFGS, gradients by reverse mode through the trajectory) with the
    data read from an NPZ file with columns t and x: from 20 % off, k and c recovered to
    1e-6 relative (noise-free data from the model itself, so the truth is exact)."""
    import optax

    path = tmp_path / "measured.npz"
    np.savez(path, t=data["t"], x=data["y"])
    start = {"body": {"m": 1.5}, "spring": {"k": 4.8}, "damper": {"c": 0.24}, "drive": {"F": 1.0}}
    res = mbd.fit(model, str(path), start, free=("spring.k", "damper.c"), outputs=("x",), q0=jnp.array([1.0]),
                  qd0=jnp.zeros(1), optimizer=optax.lbfgs(), steps=200, tol=1e-14, verbose=False, **TIGHT)
    np.testing.assert_allclose(res.values, [4.0, 0.3], rtol=1e-6)
    assert res.loss < 1e-14 and res.history[-1] < 1e-6 * res.history[0]


def test_non_finite_gradient_names_the_parameter():
    """A damping force −√c ẋ at c = 0: the motion is finite but d√c/dc is not. Both the
    Levenberg–Marquardt and the optax path stop with an error naming the parameter
    (instead of stepping to NaN)."""
    import optax

    osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.ones(1),
                    potential=lambda q, t, p: 0.5 * 4.0 * q[0] ** 2,
                    forces=lambda q, qd, t, p: -jnp.sqrt(p["c"]) * qd, params={"c": 0.0})
    ts = jnp.linspace(0.1, 2.0, 20)
    data = {"t": ts, "y": jnp.cos(2.0 * ts)}
    kw = dict(free=("c",), outputs=("x",), q0=jnp.ones(1), qd0=jnp.zeros(1), verbose=False)
    with pytest.raises(mbd.MbdjaxError, match=r"gradient with respect to 'c' is not finite from t = 0\.1"):
        mbd.fit(osc, data, **kw)
    with pytest.raises(mbd.MbdjaxError, match="gradient with respect to 'c' is not finite"):
        mbd.fit(osc, data, optimizer=optax.adam(1e-2), **kw)
