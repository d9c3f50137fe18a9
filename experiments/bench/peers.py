"""Benchmark: mbdjax against MuJoCo (mj_step, rollout), MJX (CPU) and NumPy + SciPy.

The same systems in every implementation, in one run (issue 7, items 6 and 7):

- planar N-link pendulum chain, N = 2, 5, 10, 20 (uniform 1 m, 1 kg rods, released
  horizontal at rest, g = 9.81): ``mbdjax.models.pendulum_chain(N)``;
- the closed Grashof four-bar under gravity: ``mbdjax.models.four_bar()`` (crank 0.1,
  coupler 0.35, rocker 0.3, ground 0.4 m; 2 kg/m bars; θ0 = π/3, 5 rad/s).

MuJoCo/MJX twins come from ``peers_mujoco`` (hinges about −y, the four-bar closed by a
soft site-to-site ``connect``); the SciPy twin is ``baseline_numpy`` read off the
mbdjax model (``core.baseline_from_example``). Before timing, every twin is checked to
be the same system: at a consistent state its accelerations, converted to mbdjax's
absolute coordinates, must equal mbdjax's (1e-8 relative; the closed four-bar in
MuJoCo to 1e-3, its soft constraint being what it is).

Batches: member 0 is the zoo's initial state; the others perturb the initial absolute
angles by up to ±1e-3 rad (chains: every link; four-bar: the crank angle, the rest by
closed-form position analysis and a velocity solve at 5 rad/s). All peers get the same
batch. Horizons: 10 s at B = 1, 1 s at B = 64, 0.25 s at B = 1024 (``--horizons``; chosen so
that the full run fits in about 12 minutes on 2 cores, MJX on the CPU being the slowest part).

Per (system, peer setting, B): compile time (JAX sides: first call minus second), wall
time after compilation, throughput (simulated seconds per wall second summed over the
batch), ‖Δq‖∞ against a reference (mbdjax ``simulate`` at rtol = atol = 1e-12, on the
first ``--nref`` members) at the horizon and at min(1 s, horizon), the loop-closure
error (four-bar, max over 51 output times and members) and the relative energy drift.

Run:  python experiments/bench/peers.py            (full; results.md, work_precision.png)
      python experiments/bench/peers.py --quick    (< 1 min; results_quick.md)
      GPU: experiments/bench/gpu.sh (``--batches 1 1024 100000 --peers mbdjax mjx ...``)
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import mbdjax  # noqa: E402

import baseline_numpy as bl  # noqa: E402
import peers_mujoco as pmj  # noqa: E402
from core import baseline_from_example, cpu_model, machine_line, model_accelerations  # noqa: E402

try:  # MuJoCo is optional: without it the mbdjax and SciPy parts still run
    import contextlib
    import io

    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        import mujoco  # noqa: F401  (mujoco 4 prints a warning when mujoco_warp is absent)
    MUJOCO_ERROR = None
except ImportError as exc:  # pragma: no cover - depends on the environment
    mujoco = None
    MUJOCO_ERROR = str(exc)

NSAVE = 51
SYSTEMS = ("chain2", "chain5", "chain10", "chain20", "four-bar")
PEERS = ("mbdjax", "mujoco", "mjx", "scipy")


# --------------------------------------------------------------------------- systems
class System:
    """One benchmark system in every implementation."""

    def __init__(self, key):
        from mbdjax.models import four_bar, pendulum_chain

        self.key = key
        if key.startswith("chain"):
            self.N = int(key[5:])
            self.ex = pendulum_chain(self.N)
            self.sc = pmj.chain_twin(self.N)
            self.label = f"chain N={self.N}"
        elif key == "four-bar":
            self.N = 3
            self.ex = four_bar()
            self.sc = pmj.four_bar_twin()
            self.label = "four-bar"
        else:
            raise SystemExit(f"unknown system {key!r}; choose from {SYSTEMS}")
        self.model = self.ex.model
        self.closed = self.sc.closure is not None
        self.mech, self.perm = baseline_from_example(self.ex)
        self.escale = pmj.energy_scale(self.sc, np.asarray(self.ex.q0), np.asarray(self.ex.qd0))

    def batch(self, B, spread=1e-3, seed=0):
        """``(q0, qd0)`` of shape (B, n): member 0 the zoo's state, the others with initial
        angles perturbed uniformly in ±spread (consistent by construction)."""
        q0, qd0 = np.asarray(self.ex.q0), np.asarray(self.ex.qd0)
        if B == 1:
            return q0[None], qd0[None]
        rng = np.random.default_rng(seed)
        Q, V = np.tile(q0, (B, 1)), np.tile(qd0, (B, 1))
        if not self.closed:
            from mbdjax.models._pendulums import chain_configuration

            d = rng.uniform(-spread, spread, size=(B, self.N))
            d[0] = 0.0
            for b in range(1, B):
                Q[b] = np.asarray(chain_configuration(list(q0[2::3] + d[b])))
            return Q, V
        from mbdjax.models._four_bar import four_bar_configuration

        d = rng.uniform(-spread, spread, size=B)
        theta0, omega0 = float(q0[2]), float(qd0[2])
        for b in range(1, B):
            q = np.asarray(four_bar_configuration(theta0 + d[b]))
            Bm, _ = self.mech.jacobian_and_gamma(q[self.perm], np.zeros(9))
            A = np.vstack([Bm[:, np.argsort(self.perm)], np.eye(9)[2]])
            rhs = np.zeros(A.shape[0])
            rhs[-1] = omega0
            Q[b], V[b] = q, np.linalg.lstsq(A, rhs, rcond=None)[0]
        return Q, V

    # ---------------------------------------------------------------- metrics
    def metrics(self, q, qd, ref, t1):
        """``q, qd`` (B, NSAVE, n) absolute coordinates; ``ref`` the reference (K, NSAVE, n)."""
        K = min(q.shape[0], ref.shape[0])
        i1 = int(round(min(1.0, t1) / t1 * (NSAVE - 1)))
        err_T = float(np.max(pmj.position_error(q[:K, -1], ref[:K, -1])))
        err_1 = float(np.max(pmj.position_error(q[:K, i1], ref[:K, i1])))
        E = pmj.energy(self.sc, q, qd)
        drift = float(np.max(np.abs(E - E[:, :1]))) / self.escale
        clos = float(np.max(pmj.closure_error(self.sc, q))) if self.closed else None
        return dict(err_T=err_T, err_1=err_1, drift=drift, closure=clos)


def same_system_checks(sy, verbose=True):
    """mbdjax vs SciPy twin vs MuJoCo twin at consistent states; raises on mismatch.
    Returns the measured relative differences."""
    rng = np.random.default_rng(1)
    out = {}
    # SciPy twin (as core.py): accelerations at the initial state.
    q0, qd0 = np.asarray(sy.ex.q0), np.asarray(sy.ex.qd0)
    _, _, a = model_accelerations(sy.model, jnp.asarray(q0), jnp.asarray(qd0))
    ab, _ = sy.mech.accelerations(q0[sy.perm], qd0[sy.perm])
    out["scipy"] = float(np.max(np.abs(a[sy.perm] - ab)) / max(1.0, np.max(np.abs(ab))))
    if mujoco is not None:
        m = pmj.model(sy.sc, 1e-3)
        d = mujoco.MjData(m)
        worst = 0.0
        states = [pmj.from_absolute(sy.sc, q0, qd0)]
        if not sy.closed:
            states.append((rng.normal(size=sy.N), rng.normal(size=sy.N)))
        for th, thd in states:
            d.qpos[:], d.qvel[:] = th, thd
            mujoco.mj_forward(m, d)
            q, qd, qdd = pmj.to_absolute(sy.sc, d.qpos, d.qvel, d.qacc)
            _, _, a = model_accelerations(sy.model, jnp.asarray(q), jnp.asarray(qd))
            worst = max(worst, float(np.max(np.abs(a - qdd)) / max(1.0, np.max(np.abs(a)))))
        out["mujoco"] = worst
    tol = {"scipy": 1e-8, "mujoco": 1e-3 if sy.closed else 1e-8}
    if verbose:
        print("  same-system check (rel |Δq̈| vs mbdjax): "
              + ", ".join(f"{k} {v:.1e} (tol {tol[k]:g})" for k, v in out.items()))
    for k, v in out.items():
        if not v <= tol[k]:
            raise RuntimeError(f"{sy.label}: the {k} twin is not the same system (rel |Δq̈| {v:.2e})")
    return out


# --------------------------------------------------------------------------- reference
def reference(sy, Q, V, t1, K):
    """mbdjax ``simulate`` at rtol = atol = 1e-12 for the first K members: (K, NSAVE, n)."""
    out = []
    for b in range(K):
        tr = mbdjax.simulate(sy.model, jnp.asarray(Q[b]), jnp.asarray(V[b]), t1=t1, saveat=NSAVE, rtol=1e-12,
                             atol=1e-12, stabilization="none", drift_tol=None, max_steps=10_000_000)
        out.append(np.asarray(tr.q))
    return np.stack(out)


# --------------------------------------------------------------------------- timing helpers
def timed(fn, repeat_budget=1.0, max_repeat=3, warm=True):
    """Call ``fn`` (blocking) once to compile/warm (``warm=False``: that call counts as
    a timed one), then again until ``repeat_budget`` seconds or ``max_repeat`` timed
    calls. Returns (result, first, best)."""
    t = time.perf_counter()
    res = fn()
    first = time.perf_counter() - t
    times = [] if warm else [first]
    while len(times) < max_repeat and (not times or sum(times) < repeat_budget):
        t = time.perf_counter()
        res = fn()
        times.append(time.perf_counter() - t)
    return res, first, min(times)


def _tree_block(x):
    return jax.block_until_ready(x)


# --------------------------------------------------------------------------- mbdjax
def run_mbdjax(sy, Q, V, t1, setting, dtype="float64"):
    """One mbdjax setting: ``setting`` dict with stabilization, rtol/atol or fixed_step+solver."""
    import diffrax

    kw = dict(t1=t1, saveat=NSAVE, stabilization=setting["stab"], drift_tol=None, max_steps=1_000_000)
    if "h" in setting:
        kw.update(fixed_step=setting["h"], solver={"tsit5": diffrax.Tsit5, "dopri5": diffrax.Dopri5}[setting["solver"]]())
    else:
        kw.update(rtol=setting["rtol"], atol=setting["atol"])
    B = Q.shape[0]
    note = ""
    if B == 1:
        q0, qd0 = jnp.asarray(Q[0]), jnp.asarray(V[0])
        fn = lambda: _tree_block(mbdjax.simulate(sy.model, q0, qd0, **kw))  # noqa: E731
    else:
        q0, qd0 = jnp.asarray(Q), jnp.asarray(V)
        if dtype != "float64":
            kw["dtype"] = dtype
            if "rtol" in kw and kw["rtol"] < 1e-6:    # float32 resolves ~1e-7: the finest usable rtol
                kw.update(rtol=1e-6, atol=max(kw["atol"], 1e-8))
                note = "float32 at rtol 1e-6, atol 1e-8; "
        fn = lambda: _tree_block(mbdjax.simulate_batch(sy.model, q0, qd0, **kw))  # noqa: E731
    tr, first, best = timed(fn)
    q, qd = np.asarray(tr.q, dtype=float), np.asarray(tr.qd, dtype=float)
    if B == 1:
        q, qd = q[None], qd[None]
    steps = np.asarray(tr.num_steps)
    return q, qd, max(first - best, 0.0), best, note + f"{int(np.max(steps))} steps"


def mbdjax_settings(B, quick):
    """The mbdjax settings timed at batch size B."""
    tight = {"name": "simulate Tsit5 rtol 1e-8, projection", "stab": "projection", "rtol": 1e-8, "atol": 1e-10}
    if B == 1:
        none = {"name": "simulate Tsit5 rtol 1e-8, no stabilization", "stab": "none", "rtol": 1e-8, "atol": 1e-10}
        return [none] if quick else [none, tight]
    return [{**tight, "name": "simulate_batch Tsit5 rtol 1e-8, projection"},
            {"name": "simulate_batch Tsit5 fixed h=1e-3, projection", "stab": "projection", "h": 1e-3,
             "solver": "tsit5"}]


# --------------------------------------------------------------------------- MuJoCo
def _mj_initial(sy, Q, V):
    return pmj.from_absolute(sy.sc, Q, V)


def _steps_per_output(t1, dt):
    nstep = int(round(t1 / dt))
    if nstep % (NSAVE - 1) or abs(nstep * dt - t1) > 1e-9 * t1:
        raise ValueError(f"dt={dt:g} must divide t1/{NSAVE - 1} = {t1 / (NSAVE - 1):g} s")
    return nstep, nstep // (NSAVE - 1)


def run_mujoco_step(sy, Q, V, t1, dt, integrator):
    """``mujoco.mj_step`` in a Python loop, one member at a time (B = 1)."""
    m = pmj.model(sy.sc, dt, integrator)
    d = mujoco.MjData(m)
    th, thd = _mj_initial(sy, Q, V)
    nstep, per = _steps_per_output(t1, dt)
    B = Q.shape[0]
    qs = np.zeros((B, NSAVE, m.nq))
    vs = np.zeros((B, NSAVE, m.nv))

    def go():
        step = mujoco.mj_step
        for b in range(B):
            mujoco.mj_resetData(m, d)
            d.qpos[:], d.qvel[:] = th[b], thd[b]
            qs[b, 0], vs[b, 0] = d.qpos, d.qvel
            for s in range(1, NSAVE):
                for _ in range(per):
                    step(m, d)
                qs[b, s], vs[b, s] = d.qpos, d.qvel

    _, _, best = timed(go, repeat_budget=0.5, max_repeat=2)
    return (*pmj.to_absolute(sy.sc, qs, vs), 0.0, best, f"{nstep} steps")


def run_mujoco_rollout(sy, Q, V, t1, dt, integrator, nthread):
    """``mujoco.rollout`` over the batch, in NSAVE − 1 chunks (so that the outputs at
    the save times are kept without storing every step)."""
    from mujoco import rollout

    m = pmj.model(sy.sc, dt, integrator)
    th, thd = _mj_initial(sy, Q, V)
    B = Q.shape[0]
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    datas = [mujoco.MjData(m) for _ in range(max(nthread, 1))]
    d = datas[0]
    x0 = np.zeros((B, mujoco.mj_stateSize(m, spec)))
    for b in range(B):
        mujoco.mj_resetData(m, d)
        d.qpos[:], d.qvel[:] = th[b], thd[b]
        mujoco.mj_getState(m, d, x0[b], spec)
    nq, nv = m.nq, m.nv
    assert np.allclose(x0[:, 1:1 + nq], th) and np.allclose(x0[:, 1 + nq:1 + nq + nv], thd)
    nstep, per = _steps_per_output(t1, dt)
    qs = np.zeros((B, NSAVE, nq))
    vs = np.zeros((B, NSAVE, nv))
    qs[:, 0], vs[:, 0] = th, thd
    out = np.zeros((B, per, x0.shape[1]))
    runner = rollout.Rollout(nthread=nthread if nthread > 1 else 0)
    try:
        def go():
            x = x0
            for s in range(1, NSAVE):
                runner.rollout(m, datas if nthread > 1 else d, x, nstep=per, state=out, skip_checks=False)
                x = out[:, -1].copy()
                qs[:, s], vs[:, s] = x[:, 1:1 + nq], x[:, 1 + nq:1 + nq + nv]

        _, _, best = timed(go, repeat_budget=1.0, max_repeat=2)
    finally:
        runner.close()
    return (*pmj.to_absolute(sy.sc, qs, vs), 0.0, best, f"{nstep} steps")


def run_mjx(sy, Q, V, t1, dt, integrator, dtype):
    """MJX on the host CPU: jit of vmap over the batch of a ``lax.scan`` (NSAVE − 1
    outputs) of ``fori_loop`` steps of ``mjx.step``; all arrays cast to ``dtype``."""
    # mbdjax turns JAX's x64 mode on for the process; MJX in float32 needs it off
    # (its internal scans mix default-dtype arrays into the carry otherwise).
    with jax.enable_x64(dtype == "float64"):
        return _run_mjx(sy, Q, V, t1, dt, integrator, dtype)


def _run_mjx(sy, Q, V, t1, dt, integrator, dtype):
    from mujoco import mjx

    m = pmj.model(sy.sc, dt, integrator)
    dt_ = jnp.dtype(dtype)
    cast = lambda t: jax.tree_util.tree_map(  # noqa: E731
        lambda x: x.astype(dt_) if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jnp.floating) else x, t)
    mx = cast(mjx.put_model(m))
    d0 = cast(mjx.make_data(mx))
    nstep, per = _steps_per_output(t1, dt)

    def member(qp, qv):
        dx = d0.replace(qpos=qp, qvel=qv)

        def chunk(dx, _):
            dx = jax.lax.fori_loop(0, per, lambda i, d: mjx.step(mx, d), dx)
            return dx, (dx.qpos, dx.qvel)

        _, (qs, vs) = jax.lax.scan(chunk, dx, None, length=NSAVE - 1)
        return qs, vs

    f = jax.jit(jax.vmap(member))
    th, thd = _mj_initial(sy, Q, V)
    qp, qv = jnp.asarray(th, dt_), jnp.asarray(thd, dt_)
    t = time.perf_counter()
    fc = f.lower(qp, qv).compile()          # ahead of time: compile time without a second long run
    comp = time.perf_counter() - t
    (qs, vs), _, best = timed(lambda: _tree_block(fc(qp, qv)), repeat_budget=1.0, max_repeat=2, warm=False)
    qs = np.concatenate([th[:, None], np.asarray(qs, float)], 1)
    vs = np.concatenate([thd[:, None], np.asarray(vs, float)], 1)
    return (*pmj.to_absolute(sy.sc, qs, vs), comp, best, f"{nstep} steps, {dtype}")


# --------------------------------------------------------------------------- SciPy
def run_scipy(sy, Q, V, t1, rtol=1e-8, atol=1e-10, members=1):
    """``baseline_numpy.simulate`` (solve_ivp RK45) for the first ``members`` members."""
    qs, vs, wall = [], [], 0.0
    for b in range(members):
        best = None
        for _ in range(2 if t1 <= 2 else 1):
            r = bl.simulate(sy.mech, Q[b][sy.perm], V[b][sy.perm], t1=t1, rtol=rtol, atol=atol, saveat=NSAVE)
            best = r if best is None or r.wall < best.wall else best
        inv = np.argsort(sy.perm)
        qs.append(best.q[:, inv])
        vs.append(best.qd[:, inv])
        wall += best.wall
    return np.stack(qs), np.stack(vs), 0.0, wall, f"{best.nfev} RHS calls"


# --------------------------------------------------------------------------- table
def settings_for(peer, B, quick, args):
    """[(label, callable(sy, Q, V, t1) -> (q, qd, compile, wall, note), extrapolate)]."""
    out = []
    if peer == "mbdjax":
        for s in mbdjax_settings(B, quick):
            name = s["name"]
            if B > 1 and args.dtype == "float32":      # run_mbdjax raises a finer rtol to 1e-6
                name = name.replace("rtol 1e-8", "rtol 1e-6") + " [float32]"
            out.append((f"mbdjax {name}",
                        lambda sy, Q, V, t1, s=s: run_mbdjax(sy, Q, V, t1, s, args.dtype), False))
    elif peer == "mujoco":
        if B == 1:
            dts = (1e-3,) if quick else (1e-2, 1e-3, 1e-4)
            for integ in ("RK4", "Euler"):
                for dt in dts:
                    out.append((f"MuJoCo mj_step {integ} dt={dt:g}",
                                lambda sy, Q, V, t1, dt=dt, integ=integ: run_mujoco_step(sy, Q, V, t1, dt, integ),
                                False))
        for integ in ("RK4",) if quick else ("RK4", "Euler"):
            for nt in (1, 2):
                out.append((f"MuJoCo rollout {integ} dt=0.001, {nt} thread{'s' if nt > 1 else ''}",
                            lambda sy, Q, V, t1, nt=nt, integ=integ: run_mujoco_rollout(sy, Q, V, t1, 1e-3, integ, nt),
                            False))
    elif peer == "mjx":
        for integ in args.mjx_integrators:
            out.append((f"MJX (CPU) {integ} dt=0.001, {args.mjx_dtype}",
                        lambda sy, Q, V, t1, integ=integ: run_mjx(sy, Q, V, t1, 1e-3, integ, args.mjx_dtype), False))
    elif peer == "scipy":
        out.append(("NumPy+SciPy solve_ivp RK45 rtol 1e-8", lambda sy, Q, V, t1: run_scipy(sy, Q, V, t1), B > 1))
    return out


def skip_reason(peer, label, sy, B, args):
    if peer in ("mujoco", "mjx") and mujoco is None:
        return "mujoco not installed"
    if peer == "mjx" and args.quick and (B == 1 or sy.key != "chain2"):
        return "skipped in --quick (MJX compiles take 10–25 s each)"
    if peer == "mjx" and not (args.quick or args.gpu or args.all_mjx) and sy.key not in ("chain5", "four-bar"):
        return "skipped (MJX CPU only on the target systems chain N=5 and four-bar; --all-mjx for all)"
    if peer == "mjx" and B >= 1024 and sy.N >= 20 and not args.gpu:
        return "skipped (MJX CPU at B=1024, N=20: too slow for the time budget)"
    return None


def fmt(x, f="{:.1e}"):
    return "—" if x is None else f.format(x)


def run_table(args, systems, peers, batches, horizons):
    rows = []
    for key in systems:
        sy = System(key)
        print(f"\n== {sy.label} (n = {sy.model.n}, m = {sy.model.m})")
        same_system_checks(sy)
        for B in batches:
            t1 = horizons[B]
            Q, V = sy.batch(B)
            K = min(B, args.nref)
            t = time.perf_counter()
            ref = reference(sy, Q, V, t1, K)
            print(f"  B={B}, t1={t1:g} s: reference (rtol=atol=1e-12, {K} member{'s' if K > 1 else ''}) "
                  f"{time.perf_counter() - t:.1f} s")
            for peer in peers:
                for label, fn, extrap in settings_for(peer, B, args.quick, args):
                    why = skip_reason(peer, label, sy, B, args)
                    row = dict(system=sy.label, B=B, t1=t1, peer=peer, setting=label)
                    if why:
                        row["skip"] = why
                        rows.append(row)
                        print(f"  {label:58s} {why}")
                        continue
                    try:
                        q, qd, comp, wall, note = fn(sy, Q, V, t1)
                    except Exception as exc:  # a peer failing must not stop the benchmark
                        row["skip"] = f"failed: {type(exc).__name__}: {str(exc)[:120]}"
                        rows.append(row)
                        print(f"  {label:58s} {row['skip']}")
                        continue
                    mem = q.shape[0]
                    if extrap:
                        wall = wall * B / mem
                        note += f"; extrapolated ×{B} from {mem} member"
                    met = sy.metrics(q, qd, ref, t1)
                    row.update(met, compile=comp if peer in ("mbdjax", "mjx") else None, wall=wall,
                               thr=B * t1 / wall, note=note, extrapolated=extrap)
                    rows.append(row)
                    print(f"  {label:58s} compile {fmt(row['compile'], '{:.2f}')} s, wall {wall:.4g} s, "
                          f"{row['thr']:.4g} sim-s/s, err(t1) {met['err_T']:.1e}, err(≤1 s) {met['err_1']:.1e}, "
                          f"closure {fmt(met['closure'])}, drift {met['drift']:.1e}  [{note}]")
    return rows


def format_rows(rows):
    head = ("| system | B | horizon (s) | peer / setting | compile (s) | wall (s) | sim-s / wall-s | "
            "‖Δq‖∞ at t1 | ‖Δq‖∞ at min(1 s, t1) | loop closure (m) | energy drift | notes |")
    lines = [head, "|" + "---|" * 12]
    for r in rows:
        if "skip" in r:
            lines.append(f"| {r['system']} | {r['B']} | {r['t1']:g} | {r['setting']} | — | — | — | — | — | — | — | "
                         f"{r['skip']} |")
            continue
        lines.append(
            f"| {r['system']} | {r['B']} | {r['t1']:g} | {r['setting']} | {fmt(r['compile'], '{:.2f}')} | "
            f"{r['wall']:.4g}{' (extrapolated)' if r['extrapolated'] else ''} | {r['thr']:.4g} | {r['err_T']:.1e} | "
            f"{r['err_1']:.1e} | {fmt(r['closure'])} | {r['drift']:.1e} | {r['note']} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- targets
def _find(rows, system, B, prefix):
    c = [r for r in rows if r["system"] == system and r["B"] == B and r["setting"].startswith(prefix)
         and "skip" not in r]
    return c


def target_lines(rows, bmax):
    out = []

    def best_mbdjax(system, B, closure_tol=None):
        c = [r for r in _find(rows, system, B, "mbdjax")
             if closure_tol is None or (r["closure"] is not None and r["closure"] < closure_tol)]
        return min(c, key=lambda r: r["wall"]) if c else None

    # 1: B = 1, N = 10, vs SciPy: with the defaults (projection) against 40x, and without
    # stabilization (the baseline's own equations) against 20x
    sp = _find(rows, "chain N=10", 1, "NumPy")
    for setting, goal in (("projection", 40), ("no stabilization", 20)):
        mb = _find(rows, "chain N=10", 1, f"mbdjax simulate Tsit5 rtol 1e-8, {setting}")
        if sp and mb:
            ratio = sp[0]["wall"] / mb[0]["wall"]
            out.append(f"single trajectory, chain N=10, {setting}, ≥ {goal}× the NumPy/SciPy baseline: "
                       f"{ratio:.1f}× ({sp[0]['wall']:.3f} s vs {mb[0]['wall']:.4f} s) — "
                       f"**{'met' if ratio >= goal else 'not met'}**")
        else:
            out.append(f"single trajectory, chain N=10, {setting}, vs NumPy/SciPy: not measured in this run")
    # 2: B = 1, N = 20, defaults against MuJoCo mj_step RK4 dt 1e-3, at equal or better
    # accuracy at 1 s
    mj = _find(rows, "chain N=20", 1, "MuJoCo mj_step RK4 dt=0.001")
    mb = _find(rows, "chain N=20", 1, "mbdjax simulate Tsit5 rtol 1e-8, projection")
    if mj and mb:
        ratio = mj[0]["wall"] / mb[0]["wall"]
        accurate = mb[0]["err_1"] <= mj[0]["err_1"]
        out.append(f"single trajectory, chain N=20, defaults, faster than MuJoCo mj_step RK4 dt 1e-3 at equal or "
                   f"better accuracy at 1 s: {ratio:.2f}× ({mj[0]['wall']:.4f} s vs {mb[0]['wall']:.4f} s; error at "
                   f"1 s {mb[0]['err_1']:.1e} vs {mj[0]['err_1']:.1e}) — "
                   f"**{'met' if ratio > 1 and accurate else 'not met'}**")
    else:
        out.append("single trajectory, chain N=20 vs MuJoCo mj_step: not measured in this run")
    for system in ("chain N=5", "four-bar"):
        mjx_r = _find(rows, system, bmax, "MJX")
        tol = 1e-9 if system == "four-bar" else None
        mb = best_mbdjax(system, bmax, tol)
        if mjx_r and mb:
            ratio = mjx_r[0]["wall"] / mb["wall"]
            out.append(f"B={bmax}, {system}, ≥ 10× MJX CPU: {ratio:.1f}× ({mjx_r[0]['wall']:.3g} s vs "
                       f"{mb['wall']:.3g} s, {mb['setting']}) — **{'met' if ratio >= 10 else 'not met'}**")
        else:
            out.append(f"B={bmax}, {system}, vs MJX CPU: not measured in this run"
                       + (" (no mbdjax setting with closure < 1e-9)" if mjx_r and not mb else ""))
    mj = _find(rows, "four-bar", bmax, "MuJoCo rollout RK4 dt=0.001, 2 threads")
    mb = best_mbdjax("four-bar", bmax, 1e-9)
    if mj and mb:
        ratio = mj[0]["wall"] / mb["wall"]
        out.append(f"B={bmax}, four-bar, ≥ 2× MuJoCo rollout (2 threads, RK4 dt 1e-3) with mbdjax closure < 1e-9: "
                   f"{ratio:.2f}× ({mj[0]['wall']:.3g} s vs {mb['wall']:.3g} s; closure mbdjax {mb['closure']:.1e}, "
                   f"MuJoCo {mj[0]['closure']:.1e}) — **{'met' if ratio >= 2 else 'not met'}**")
    else:
        out.append(f"B={bmax}, four-bar vs MuJoCo 2-thread rollout: not measured in this run")
    return out


# --------------------------------------------------------------------------- work-precision
def work_precision(args, quick):
    """Wall time vs final position error for the four-bar and the 10-link chain."""
    cases = [("four-bar", 0.5)] if quick else [("four-bar", 10.0), ("chain10", 1.0)]
    rtols = (1e-4, 1e-8) if quick else (1e-4, 1e-6, 1e-8, 1e-10, 1e-12)
    srtols = (1e-4, 1e-6) if quick else (1e-4, 1e-6, 1e-8, 1e-10)
    dts = (1e-2, 1e-3) if quick else (1e-2, 1e-3, 1e-4, 1e-5)
    curves = {}
    for key, t1 in cases:
        sy = System(key)
        Q, V = sy.batch(1)
        # The reference here is tighter than every mbdjax point: rtol = atol = 1e-13.
        ref = np.asarray(mbdjax.simulate(sy.model, jnp.asarray(Q[0]), jnp.asarray(V[0]), t1=t1, saveat=NSAVE,
                                         rtol=1e-13, atol=1e-13, stabilization="none", drift_tol=None,
                                         max_steps=10_000_000).q)[None]
        print(f"\n== work-precision: {sy.label}, t1 = {t1:g} s")
        cur = {}
        if "mbdjax" in args.peers:
            for stab in ("none",) if quick else ("none", "projection"):
                pts = []
                for rt in rtols:
                    s = {"name": "", "stab": stab, "rtol": rt, "atol": rt}
                    q, qd, _, wall, _ = run_mbdjax(sy, Q, V, t1, s)
                    pts.append((wall, sy.metrics(q, qd, ref, t1)["err_T"]))
                cur[f"mbdjax Tsit5 ({stab}), rtol {rtols[0]:g}…{rtols[-1]:g}"] = pts
        if "scipy" in args.peers:
            pts = []
            for rt in srtols:
                q, qd, _, wall, _ = run_scipy(sy, Q, V, t1, rtol=rt, atol=rt)
                pts.append((wall, sy.metrics(q, qd, ref, t1)["err_T"]))
            cur[f"SciPy RK45, rtol {srtols[0]:g}…{srtols[-1]:g}"] = pts
        if "mujoco" in args.peers and mujoco is not None:
            for integ in ("RK4", "Euler"):
                pts = []
                for dt in dts:
                    # one-thread rollout: MuJoCo's own loop, no Python per step
                    q, qd, _, wall, _ = run_mujoco_rollout(sy, Q, V, t1, dt, integ, 1)
                    pts.append((wall, sy.metrics(q, qd, ref, t1)["err_T"]))
                cur[f"MuJoCo rollout {integ}, dt {dts[0]:g}…{dts[-1]:g}"] = pts
        for k, pts in cur.items():
            print(f"  {k:46s} " + "  ".join(f"({w:.3g} s, {e:.1e})" for w, e in pts))
        curves[(sy.label, t1)] = cur
    return curves


def time_to_reach(pts, target):
    """Wall time to reach ``target`` error, interpolated log-log between measured
    points (ordered by wall time); None when never reached."""
    pts = sorted(pts)
    for (w0, e0), (w1, e1) in zip([(None, None)] + pts[:-1], pts):
        if e1 <= target:
            if w0 is None or e0 <= target or e0 == e1:
                return w1
            f = (math.log(target) - math.log(e0)) / (math.log(e1) - math.log(e0))
            return math.exp(math.log(w0) + f * (math.log(w1) - math.log(w0)))
    return None


def wp_table(curves):
    lines = ["| system | horizon (s) | method | time to 1e-3 (s) | time to 1e-6 (s) | time to 1e-9 (s) | "
             "best error reached |", "|" + "---|" * 7]
    for (label, t1), cur in curves.items():
        for k, pts in cur.items():
            cells = [fmt(time_to_reach(pts, tg), "{:.3g}") for tg in (1e-3, 1e-6, 1e-9)]
            cells = [c if c != "—" else "not reached" for c in cells]
            lines.append(f"| {label} | {t1:g} | {k} | " + " | ".join(cells) + f" | {min(e for _, e in pts):.1e} |")
    return "\n".join(lines)


def wp_plot(curves, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(6 * len(curves), 4.5))
    axes = np.atleast_1d(axes)
    for ax, ((label, t1), cur) in zip(axes, curves.items()):
        for k, pts in cur.items():
            w, e = zip(*sorted(pts))
            ax.loglog(w, np.maximum(e, 1e-16), "o-", label=k)
        for tg in (1e-3, 1e-6, 1e-9):
            ax.axhline(tg, color="0.8", lw=0.8, zorder=0)
        ax.set_xlabel("wall time (s)")
        ax.set_ylabel(f"‖Δq‖∞ at t = {t1:g} s")
        ax.set_title(f"{label}, {t1:g} s")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- main
def versions():
    mj = getattr(mujoco, "__version__", "not installed") if mujoco is not None else "not installed"
    try:
        from importlib.metadata import version

        mjx_v = version("mujoco-mjx")
    except Exception:  # noqa: BLE001
        mjx_v = "not installed"
    return f"mujoco {mj}, mujoco-mjx {mjx_v}, jax {jax.__version__}, mbdjax {mbdjax.__version__}"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny run (about 1 min): chain2 + four-bar, B = 1, 4, short horizons")
    ap.add_argument("--systems", nargs="+", default=None, choices=SYSTEMS)
    ap.add_argument("--peers", nargs="+", default=list(PEERS), choices=PEERS)
    ap.add_argument("--batches", nargs="+", type=int, default=None)
    ap.add_argument("--horizons", nargs="+", type=float, default=None,
                    help="one horizon (s) per batch size (default 10 s at B=1, 1 s at B≤64, 0.25 s above)")
    ap.add_argument("--nref", type=int, default=8, help="members compared against the reference (default 8)")
    ap.add_argument("--dtype", default="float64", choices=("float64", "float32"),
                    help="mbdjax batch dtype (float32 passes dtype= to simulate_batch where supported)")
    ap.add_argument("--mjx-dtype", default="float32", choices=("float64", "float32"))
    ap.add_argument("--all-mjx", action="store_true", help="MJX on every system (default: chain5 and four-bar)")
    ap.add_argument("--no-wp", action="store_true", help="skip the work-precision part")
    ap.add_argument("--gpu", action="store_true", help="GPU run (no CPU-time skips)")
    ap.add_argument("--out", default=None, help="markdown output (default results[_quick].md here)")
    ap.add_argument("--mjx-integrators", nargs="+", default=["RK4"], choices=("RK4", "Euler"),
                    help="MJX integrators to time (the issue's orientation figures are Euler)")
    ap.add_argument("--plot", default=None, help="work-precision PNG (default work_precision[_quick].png)")
    return ap.parse_args(argv)


def default_horizon(B, quick):
    if quick:
        return 0.5 if B == 1 else 0.2
    return 10.0 if B == 1 else 1.0 if B <= 64 else 0.25


def main(argv=None):
    args = parse_args(argv)
    t_start = time.perf_counter()
    systems = args.systems or (("chain2", "four-bar") if args.quick else SYSTEMS)
    batches = args.batches or ((1, 4) if args.quick else (1, 64, 1024))
    if args.horizons:
        if len(args.horizons) != len(batches):
            raise SystemExit("--horizons needs one value per batch size")
        horizons = dict(zip(batches, args.horizons))
    else:
        horizons = {B: default_horizon(B, args.quick) for B in batches}
    peers = list(args.peers)
    print(f"machine: {cpu_model()}; {machine_line()}")
    print(f"versions: {versions()}; devices: {jax.devices()}")
    skipped_note = ""
    if mujoco is None and any(p in peers for p in ("mujoco", "mjx")):
        skipped_note = (f"MuJoCo is not installed ({MUJOCO_ERROR}): the MuJoCo and MJX peers are skipped; "
                        "install them with `pip install -e .[bench]`.")
        print("NOTE: " + skipped_note)
    rows = run_table(args, systems, peers, batches, horizons)
    table = format_rows(rows)
    targets = target_lines(rows, max(batches))
    curves = None
    if not args.no_wp:
        curves = work_precision(args, args.quick)
    print("\n" + table + "\n")
    for line in targets:
        print("- " + line)
    if curves:
        wpt = wp_table(curves)
        print("\n" + wpt)
        plot = Path(args.plot) if args.plot else HERE / ("work_precision_quick.png" if args.quick
                                                         else "work_precision.png")
        wp_plot(curves, plot)
        print(f"wrote {plot}")
    total = time.perf_counter() - t_start
    out = Path(args.out) if args.out else HERE / ("results_quick.md" if args.quick else "results.md")
    with open(out, "w") as fh:
        fh.write(f"# mbdjax vs MuJoCo, MJX and NumPy/SciPy{' (quick)' if args.quick else ''}\n\n")
        fh.write(f"- date: {time.strftime('%Y-%m-%d %H:%M')}; total run time {total:.0f} s\n")
        fh.write(f"- machine: {cpu_model()}; {machine_line()}\n- versions: {versions()}; devices: {jax.devices()}\n")
        fh.write(f"- systems: {', '.join(systems)}; batch sizes and horizons: "
                 + ", ".join(f"B={B}: {horizons[B]:g} s" for B in batches) + "\n")
        fh.write(f"- peers: {', '.join(peers)}; mbdjax batch dtype {args.dtype}; MJX dtype {args.mjx_dtype}; "
                 f"errors against mbdjax `simulate` at rtol = atol = 1e-12 on the first {args.nref} members; "
                 f"{NSAVE} output times per run\n")
        if skipped_note:
            fh.write(f"- **{skipped_note}**\n")
        fh.write("\n## Timings and accuracy\n\n" + table + "\n\n## Targets\n\n")
        for line in targets:
            fh.write(f"- {line}\n")
        if curves:
            fh.write("\n## Work-precision\n\n" + wp_table(curves) + f"\n\nPlot: `{plot.name}`.\n")
        fh.write(NOTES)
    print(f"wrote {out} (total {total:.0f} s)")
    return rows


NOTES = """
## Notes

- *compile* = first call minus the best later call (mbdjax), or the ahead-of-time
  `lower().compile()` time (MJX); MuJoCo and SciPy have none.
  *wall* = best call after compilation (each call includes the 51 outputs).
  *sim-s / wall-s* = B × horizon / wall. SciPy rows at B > 1 are member 0's time × B
  ("extrapolated"): solve_ivp has no batch mode.
- *‖Δq‖∞* is the largest difference of mbdjax's absolute coordinates (x, y of every
  centre of mass, angles modulo 2π) against mbdjax `simulate` at rtol = atol = 1e-12,
  over the first members of the batch. The chains are chaotic: at a 10 s horizon the
  error against any reference is dominated by the amplification of round-off and
  tolerance errors (an error of order 1 says nothing about the method), so the error at
  min(1 s, horizon) is the meaningful one for them. The four-bar is not chaotic.
- *loop closure*: four-bar only, the largest pin separation of its four revolutes,
  max over the 51 output times and all members. MuJoCo's open chain closes the loop
  with a soft `connect` equality (solref 2·dt, solimp 0.9999): its closure error is
  the constraint violation its regularisation allows; mbdjax's augmented formulation
  with projection holds it to the projection tolerance.
- *energy drift* = max over time and members of |E − E0| / (|T0| + Σ m g r_max), E the
  kinetic plus gravitational energy computed from the absolute coordinates, r_max the
  largest distance of a centre of mass from the origin.
- MuJoCo conventions: hinges about −y so that positive joint angles are
  counter-clockwise in mbdjax's x–y plane (MuJoCo's x–z); joint angles are relative, so
  they are converted (cumulative sums) to mbdjax's absolute coordinates. The four-bar's
  rocker body points from the coupler pin to its ground pivot (angle offset π).
- MJX: `mujoco.mjx` on the CPU, jit(vmap(scan(fori_loop(mjx.step)))), all model and
  data arrays cast to the MJX dtype shown. float32 (MJX's default, `--mjx-dtype`) runs
  inside `jax.enable_x64(False)`: mbdjax turns JAX's x64 mode on for the process, and
  MJX's RK4 scan fails with mixed float32/float64 carries under x64.
- MJX's four-bar is less accurate than MuJoCo's C solver on the same MJCF (about 1e-3
  against 7e-7 at RK4 dt 1e-3 over 0.5 s in float64); not investigated (MJX's own
  constraint solver and its iteration/line-search settings differ from the C one).
- mbdjax's fixed-step rows use diffrax's Tsit5 with `fixed_step=h` (diffrax has no
  classical RK4); the projection runs after every step.
"""


if __name__ == "__main__":
    main()
