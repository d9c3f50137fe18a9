"""`simulate_batch`: one compiled call (members vectorized or one after another) equals a loop of
`simulate`."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbdjax as mbd
from mbdjax import models

jax.config.update("jax_enable_x64", True)

KW = dict(t1=1.0, saveat=11, rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def four_bar():
    return models.get("four-bar")


def test_batch_equals_a_loop_of_simulate(four_bar):
    """Three crank rates (the initial state re-solved for each) and three coupler
    masses, batched together, against three separate `simulate` calls: the same
    computation member by member, so 1e-10 (issue value)."""
    model = four_bar.model
    phi = model.index("crank.phi")
    rates = (0.5, 1.0, 2.0)
    starts = [mbd.initial_conditions(model, four_bar.q0, fix_q={"crank.phi": float(four_bar.q0[phi])},
                                     fix_qd={"crank.phi": w}) for w in rates]
    q0 = jnp.stack([s[0] for s in starts])
    qd0 = jnp.stack([s[1] for s in starts])
    masses = jnp.array([0.8, 1.0, 1.3]) * float(model.params["coupler"]["mass"])
    params = {**model.params, "coupler": {**model.params["coupler"], "mass": masses}}
    batch = mbd.simulate_batch(model, q0, qd0, params, **KW)
    assert batch.q.shape == (3, 11, model.n) and batch.lam.shape == (3, 11, model.m)
    for k in range(3):
        p = {**model.params, "coupler": {**model.params["coupler"], "mass": masses[k]}}
        one = mbd.simulate(model, q0[k], qd0[k], params=p, **KW)
        np.testing.assert_allclose(batch.q[k], one.q, rtol=0, atol=1e-10)
        np.testing.assert_allclose(batch.qd[k], one.qd, rtol=0, atol=1e-10)
        np.testing.assert_allclose(batch.lam[k], one.lam, rtol=1e-10, atol=1e-10)
    # A shared state with batched parameters only broadcasts the state.
    shared = mbd.simulate_batch(model, q0[1], qd0[1], params, **KW)
    np.testing.assert_allclose(shared.q[1], batch.q[1], atol=1e-12)


def test_redundant_batch_equals_a_loop_of_simulate():
    """The parallelogram with a redundant link (Φ_q of rank 11 for 12 rows) batched
    with projection: the batch drops the redundant row once, read at the first
    member, as each lone `simulate` does at its own start, so q, q̇ and the
    (minimum-norm) multipliers agree; 1e-9 allows for rounding. 0.3 s stays before
    the linkage first lies flat (θ = 0 near 0.39 s, a singular configuration on top
    of the redundancy)."""
    from mbdjax._batch import batch as _batch

    ex = models.get("parallelogram-redundant")
    model = ex.model
    masses = jnp.array([0.7, 1.0, 1.6]) * float(model.params["link"]["mass"])
    params = {**model.params, "link": {**model.params["link"], "mass": masses}}
    kw = dict(KW, t1=0.3, stabilization="projection")
    axes = [0 if jnp.ndim(x) > jnp.ndim(base) else None
            for x, base in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(model.params))]
    assert _batch._rows_at_start(model, ex.q0, None, params, axes, 0.0).dropped == ("link_coupler.y",)
    batch = mbd.simulate_batch(model, ex.q0, ex.qd0, params, **kw)
    for k in range(3):
        p = {**model.params, "link": {**model.params["link"], "mass": masses[k]}}
        one = mbd.simulate(model, ex.q0, ex.qd0, params=p, **kw)
        np.testing.assert_allclose(batch.q[k], one.q, rtol=0, atol=1e-9)
        np.testing.assert_allclose(batch.qd[k], one.qd, rtol=0, atol=1e-9)
        np.testing.assert_allclose(batch.lam[k], one.lam, rtol=0, atol=1e-8)
        closure = jax.vmap(model.holonomic_constraints)(batch.q[k])
        assert float(jnp.max(jnp.abs(closure))) < 1e-9      # projection keeps Φ = 0


def test_float32_batch(four_bar):
    """dtype='float32' traces and runs the whole batch in single precision (x64 off
    inside the call): float32 arrays out, the loop still closed by projection to
    float32 resolution, the motion within 5e-3 of float64 over 1 s at rtol 1e-6
    (measured 7e-4: single-precision rounding in every step, not the step control,
    dominates). An rtol finer than float32 resolves is refused."""
    model = four_bar.model
    qd0 = jnp.stack([four_bar.qd0, 1.1 * four_bar.qd0])
    kw = dict(t1=1.0, saveat=5, rtol=1e-6, atol=1e-8)
    single = mbd.simulate_batch(model, four_bar.q0, qd0, dtype="float32", **kw)
    double = mbd.simulate_batch(model, four_bar.q0, qd0, **dict(kw, rtol=1e-10, atol=1e-12))
    assert single.q.dtype == jnp.float32 and single.lam.dtype == jnp.float32
    assert double.q.dtype == jnp.float64
    closure = jax.vmap(jax.vmap(lambda q: model.holonomic_constraints(q.astype(float))))(single.q)
    assert float(jnp.max(jnp.abs(closure))) < 1e-6
    assert float(jnp.max(jnp.abs(single.q.astype(float) - double.q))) < 5e-3
    with pytest.raises(mbd.SimulationError, match="float32.*rtol=1e-08"):
        mbd.simulate_batch(model, four_bar.q0, qd0, dtype="float32", t1=1.0)
    with pytest.raises(mbd.SimulationError, match="dtype must be"):
        mbd.simulate_batch(model, four_bar.q0, qd0, dtype="float16", t1=1.0)


def test_batch_input_errors_name_the_part(four_bar):
    model = four_bar.model
    q, v = four_bar.q0, four_bar.qd0
    with pytest.raises(mbd.SimulationError, match="nothing carries a batch axis"):
        mbd.simulate_batch(model, q, v, **KW)
    with pytest.raises(mbd.SimulationError, match="differ in length"):
        mbd.simulate_batch(model, jnp.stack([q, q]), jnp.stack([v, v, v]), **KW)
    with pytest.raises(mbd.SimulationError, match="q0 must have shape"):
        mbd.simulate_batch(model, q[:-1], v, **KW)
    bad = {**model.params, "coupler": {**model.params["coupler"], "mass": jnp.ones((2, 2))}}
    with pytest.raises(mbd.ParameterError, match=r"coupler.mass of shape \(2, 2\) instead of \(\)"):
        mbd.simulate_batch(model, q, v, bad, **KW)
    with pytest.raises(mbd.SimulationError, match="t1="):
        mbd.simulate_batch(model, jnp.stack([q, q]), v)


@pytest.mark.parametrize("members", ["sequential", "vectorized"])
def test_a_failed_member_is_named(capfd, members):
    """Three pendulums, the middle one under 100× gravity: with 400 steps allowed the
    two at g = 9.81 finish in 61 steps and the stiff one runs out (reference: the same
    batch with throw=False, member by member). The error is an mbdjax SimulationError
    naming member 1, the reason and how far it got (the last output time the
    throw=False run reached for it), read from the program's outputs: nothing is
    printed (no run-time callback, no equinox banner). Both ways of running the
    members report alike."""
    pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2), potential=lambda q, t, p: p["g"] * q[1],
                     holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]), constraint_names=("rod",),
                     params={"g": 9.81})
    q0, g = jnp.stack([jnp.array([1.0, 0.0])] * 3), {"g": jnp.array([9.81, 981.0, 9.81])}
    quiet = mbd.simulate_batch(pend, q0, jnp.zeros(2), g, t1=1.0, saveat=11, max_steps=400, throw=False,
                               members=members)
    assert dict(quiet.settings)["members"] == members
    assert np.asarray(quiet.success).tolist() == [True, False, True]
    with pytest.raises(mbd.SimulationError, match=r"simulate_batch: member 1 \(of 3; 1 failed in all\): the solver "
                                                  r"took max_steps steps") as err:
        mbd.simulate_batch(pend, q0, jnp.zeros(2), g, t1=1.0, saveat=11, max_steps=400, members=members)
    assert err.value.member == 1 and err.value.reason == "max_steps"
    t = np.asarray(quiet.t[1])
    reached = float(t[np.all(np.isfinite(np.asarray(quiet.q[1])), axis=1) & np.isfinite(t)][-1])
    assert 0.0 < reached < 1.0 and err.value.time == reached and f"t = {reached:.6g} s of t1 = 1 s" in str(err.value)
    assert capfd.readouterr().err == ""


def test_members_one_after_another_or_vectorized():
    """`members=`: both ways give the closed form of three oscillators,
    x = cos(√k t) (rtol 1e-10, so 1e-8). `"auto"` runs the members one after another
    on a CPU when the solver loops of a lone run hold no library call (each then
    compiles into one kernel: the 10-link chain, whose projection solves by the
    block-tridiagonal sweeps), and vectorized otherwise (the slider-crank's dense
    Cholesky); the choice is in the settings. An unknown value is refused."""
    osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([1.0]),
                    potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2, params={"k": 1.0})
    k = jnp.array([1.0, 4.0, 9.0])
    t = np.linspace(0.0, 2.0, 5)
    for members in ("sequential", "vectorized"):
        traj = mbd.simulate_batch(osc, jnp.array([1.0]), jnp.zeros(1), {"k": k}, t1=2.0, saveat=5,
                                  rtol=1e-10, atol=1e-12, members=members)
        assert dict(traj.settings)["members"] == members
        np.testing.assert_allclose(np.asarray(traj.q[:, :, 0]), np.cos(np.sqrt(np.asarray(k))[:, None] * t),
                                   rtol=0, atol=1e-8)
    for name, expected in (("pendulum-chain", "sequential"), ("slider-crank", "vectorized")):
        ex = models.pendulum_chain(10) if name == "pendulum-chain" else models.get(name)
        qd0 = jnp.stack([ex.qd0, ex.qd0])
        traj = mbd.simulate_batch(ex.model, ex.q0, qd0, t1=0.01, saveat=2)
        assert dict(traj.settings)["members"] == expected, name
    with pytest.raises(mbd.SimulationError, match="members must be one of 'auto', 'sequential', 'vectorized'"):
        mbd.simulate_batch(osc, jnp.array([1.0]), jnp.zeros(1), {"k": k}, t1=1.0, members="parallel")


def test_new_values_reuse_the_compilation(four_bar):
    """New parameter values, initial states and end times run the same compiled
    function: one entry in its jit cache after three different batches."""
    from mbdjax._batch import batch as _batch

    model = four_bar.model
    q0 = jnp.stack([four_bar.q0, four_bar.q0])
    qd0 = jnp.stack([four_bar.qd0, 1.1 * four_bar.qd0])
    before = {id(fn) for (m, (fn, _)) in _batch._COMPILED.values()}
    for scale, t1 in ((1.0, 0.5), (1.2, 0.5), (0.9, 0.7)):
        params = {**model.params, "coupler": {**model.params["coupler"],
                                              "mass": scale * jnp.array([0.7, 0.8])}}
        mbd.simulate_batch(model, q0, scale * qd0, params, t1=t1, saveat=7, drift_tol=None)
    # Exactly one function was built for the three batches, and it was traced once.
    built = [fn for (m, (fn, _)) in _batch._COMPILED.values() if m is model and id(fn) not in before]
    assert [fn._cache_size() for fn in built] == [1]


_TWO_DEVICES = r"""
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
import mbdjax as mbd
from mbdjax import models
assert len(jax.devices()) == 2, jax.devices()
ex = models.get("four-bar")
model = ex.model
masses = jnp.array([0.6, 0.7, 0.8])            # three members on two devices: one padded
params = {**model.params, "coupler": {**model.params["coupler"], "mass": masses}}
kw = dict(t1=0.5, saveat=6, rtol=1e-10, atol=1e-12)
both = mbd.simulate_batch(model, ex.q0, ex.qd0, params, **kw)
one = mbd.simulate_batch(model, ex.q0, ex.qd0, params, devices=jax.devices()[:1], **kw)
assert both.q.shape == (3, 6, model.n), both.q.shape
assert both.q.devices() == one.q.devices() == {jax.devices()[0]}   # gathered onto the first device
np.testing.assert_allclose(np.asarray(both.q), np.asarray(one.q), rtol=0, atol=1e-12)
np.testing.assert_allclose(np.asarray(both.lam), np.asarray(one.lam), rtol=1e-12, atol=1e-12)
print("ok")
"""


def test_two_host_devices_give_the_single_device_result():
    """The batch sharded over two forced CPU devices (a subprocess, so that the XLA
    flag takes effect before JAX starts) equals the one-device batch to 1e-12, in
    order, including the padding of an odd batch."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", _TWO_DEVICES], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-4000:]


def test_multihost_example_runs_on_two_processes(tmp_path):
    """`experiments/multihost_batch.py` on two local CPU processes joined by
    `jax.distributed` (gloo collectives) gives the one-process numbers: every member's
    final rocker angle to 1e-12 rad (the same arithmetic, member by member)."""
    import os
    import socket
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "experiments",
                          "multihost_batch.py")
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    env.pop("XLA_FLAGS", None)
    args = [sys.executable, script, "--coordinator", f"localhost:{port}", "--processes", "2", "--batch", "5"]
    other = subprocess.Popen(args + ["--id", "1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        main = subprocess.run(args + ["--id", "0", "--save", str(tmp_path / "two.npy")], env=env,
                              capture_output=True, text=True, timeout=300)
        other.wait(timeout=120)
    finally:
        other.kill()
    single = subprocess.run([sys.executable, script, "--batch", "5", "--save", str(tmp_path / "one.npy")], env=env,
                            capture_output=True, text=True, timeout=300)
    assert main.returncode == 0 and single.returncode == 0, main.stderr[-3000:] + single.stderr[-3000:]
    assert "2 process(es), 2 device(s)" in main.stdout
    two, one = np.load(tmp_path / "two.npy"), np.load(tmp_path / "one.npy")
    assert two.shape == one.shape == (5,)
    np.testing.assert_allclose(two, one, rtol=0, atol=1e-12)
    assert np.ptp(one) > 1e-3                 # the members differ: the comparison is per member
