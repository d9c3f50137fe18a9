"""Benchmark: mbdjax against a hand-written NumPy + SciPy implementation.

Both sides integrate the same augmented (Lagrange multiplier) equations
(THEORY §2, §5) for the same systems at the same tolerances (rtol 1e-8, atol 1e-10):

- baseline: ``baseline_numpy`` (analytic Φ_q and γ, dense ``numpy.linalg.solve`` of the
  augmented matrix per RHS call, ``scipy.integrate.solve_ivp(method="RK45")``), without
  constraint stabilization;
- mbdjax: ``mbdjax.simulate(model, q0, qd0, t1, stabilization=S, saveat=2, ...)``
  (jit-compiled diffrax loop; default solver Tsit5; ``--solver`` takes several of
  tsit5, dopri5 (the same Dormand–Prince pair as SciPy's RK45), dopri8, and
  ``unrolled-X`` = ``mbdjax.UnrolledRK(X)``, each timed against the same baseline run),
  with each stabilization S of ``--stabilization``: by default ``projection`` (what a
  user gets: the targets hold for it) and ``none`` (the baseline's own equations, to
  compare like for like).

Systems: the N-link pendulum chain (N = 2, 5, 10, 20, ``mbdjax.models.pendulum_chain``),
the zoo's free slider-crank (``mbdjax.models.slider_crank(driven=False)``: damped motor
and slider spring-damper) and a slider-crank with slender links (slender-rod crank and
connecting rod, a 1 kg slider, a constant 0.5 N·m torque; ``slender_slider_crank``, built
with ``mbdjax.planar``), 10 s of motion each. The baseline twin of every model is read off the model itself
(``baseline_from_example``). Reported per system: baseline wall time (best of ``--repeat``), RHS
calls and µs per call; mbdjax compile time (first call minus second call), run time
after compilation (best of ``--repeat``), steps; the ratio baseline/mbdjax, best against
best and paired within rounds that alternate the two (``run_interleaved``); and the largest
coordinate difference between the two at t = 1 s (separate short runs: the chains are
chaotic, so 10 s end states are not comparable) and at t1 (informative only).

Before timing, each pair of models is checked to be the same system: at consistent
states (the initial state and a state 0.5 s into the baseline motion) the mass
diagonal, the generalized forces and the accelerations of both implementations must
agree.

OpenBLAS is limited to one thread (``OPENBLAS_NUM_THREADS=1`` unless already set).

Run:  python experiments/bench/core.py            (full; writes results_core.md)
      python experiments/bench/core.py --quick    (N = 2, 5 and 2 s; results_core_quick.md)
      options: --solver tsit5 unrolled-dopri8 ..., --profile (per-RHS cost breakdown), --N 10 20, --out FILE
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# One BLAS thread (set before NumPy loads OpenBLAS). On 2 cores, OpenBLAS's threaded
# 100×100 solve is slower than the serial one and, right after XLA has been busy,
# contends with XLA's thread pool (10× slowdowns were observed). jaxlib's CPU LAPACK
# kernels come from SciPy's OpenBLAS too, so both sides share this setting.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import mbdjax  # noqa: E402

import baseline_numpy as bl  # noqa: E402

RTOL, ATOL = 1e-8, 1e-10


# --------------------------------------------------------------------------- models
def baseline_from_example(ex):
    """The baseline twin of a zoo ``Example`` built with ``mbdjax.planar``.

    Structure (bodies in coordinate order, joint and element kinds and the bodies they
    connect) comes from ``ex.mechanism``; every number (masses, inertias, points, axes,
    spring constants, torques, gravity) from ``ex.model.params``, i.e. exactly what the
    mbdjax model integrates. Supported parts: revolute and translational joints,
    spring-dampers without actuator, and torques of the form ``τ0 − c φ̇`` (params
    ``tau0`` and optional ``c``; the zoo's motor; the form of a torque *function* cannot
    be read, so ``check_same_system`` is what verifies it).

    Returns:
        ``(mechanism, perm)`` with ``q_baseline = q_mbdjax[perm]``.
    """
    pm = ex.mechanism
    p = jax.tree_util.tree_map(np.asarray, ex.model.params)
    bodies = list(pm.bodies)
    idx = {b: k for k, b in enumerate(bodies)}
    idx["ground"] = bl.GROUND
    mech = bl.Mechanism(
        names=bodies,
        mass=np.array([float(p[b]["mass"]) for b in bodies]),
        inertia=np.array([float(p[b]["inertia"]) for b in bodies]),
        gravity=tuple(float(g) for g in p["gravity"]),
    )
    for js in pm._joints:  # noqa: SLF001 - the planar front end keeps its parts private
        jp = p[js.name]
        i, j = idx[js.body_i], idx[js.body_j]
        if js.kind == "revolute":
            mech.revolutes.append(bl.Revolute(i, j, tuple(jp["point_i"]), tuple(jp["point_j"]), js.name))
        elif js.kind == "translational":
            mech.translationals.append(bl.Translational(
                i, j, v=tuple(jp["axis_i"]), si=tuple(jp["point_i"]), sj=tuple(jp["point_j"]),
                phi0=float(jp["angle"]), name=js.name))
        else:
            raise NotImplementedError(f"baseline: joint kind {js.kind!r} ({js.name}) is not implemented")
    for es in pm._elements:  # noqa: SLF001
        ep = p.get(es.name, {})
        if es.kind == "spring_damper" and es.fn is None:
            mech.springs.append(bl.SpringDamper(
                idx[es.body_i], idx[es.body_j], tuple(ep["point_i"]), tuple(ep["point_j"]),
                k=float(ep["k"]), c=float(ep["c"]), length0=float(ep["length0"]), name=es.name))
        elif es.kind == "torque" and "tau0" in ep:
            mech.torques.append(bl.Torque(idx[es.body_i], float(ep["tau0"]), float(ep.get("c", 0.0)), es.name))
        else:
            raise NotImplementedError(f"baseline: force element {es.name!r} ({es.kind}) is not implemented")
    mech.prepare()
    perm = np.array([ex.model.index(c) for c in mech.coordinates])
    return mech, perm


def slender_slider_crank():
    """A free slider-crank with slender links, built with ``mbdjax.planar``.

    Crank r = 0.1 m (1 kg, slender rod, pinned to ground at its end), connecting rod
    L = 0.3 m (2 kg, slender rod), slider 1 kg (5 cm block inertia) on the global x
    axis, constant torque 0.5 N·m on the crank, gravity; released from rest at
    θ = π/4. Same numbers as ``baseline_numpy.slider_crank()``.
    """
    from types import SimpleNamespace

    from mbdjax.planar import Mechanism

    d = bl.SLIDER_CRANK_DEFAULTS
    r, L = d["crank_length"], d["rod_length"]
    ref, q0, qd0 = bl.slider_crank()
    pm = Mechanism(gravity=d["gravity"])
    for k, name in enumerate(ref.names):
        pm.body(name, mass=float(ref.mass[k]), inertia=float(ref.inertia[k]))
    pm.revolute("crank_pin", "ground", (0.0, 0.0), "crank", (-r / 2, 0.0))
    pm.revolute("crank_rod", "crank", (r / 2, 0.0), "rod", (-L / 2, 0.0))
    pm.revolute("rod_slider", "rod", (L / 2, 0.0), "slider", (0.0, 0.0))
    pm.translational("guide", "ground", (0.0, 0.0), "slider", (0.0, 0.0), (1.0, 0.0))
    i_phi = pm.index("crank.phi")
    pm.torque("motor", "crank", lambda q, qd, t, p: p["motor"]["tau0"] - p["motor"]["c"] * qd[i_phi],
              params={"tau0": d["torque"], "c": 0.0})
    model = pm.build()
    return SimpleNamespace(name="slider-crank-slender", model=model, q0=jnp.asarray(q0), qd0=jnp.asarray(qd0),
                           t1=10.0, mechanism=pm)


def systems(Ns):
    """``[(label, N, example)]``: the chains, the zoo's free slider-crank and the slender-link one."""
    from mbdjax.models import pendulum_chain, slider_crank

    out = [("pendulum chain", N, lambda N=N: pendulum_chain(N)) for N in Ns]
    out.append(("slider-crank (zoo, free)", 3, lambda: slider_crank(driven=False)))
    out.append(("slider-crank (slender links)", 3, slender_slider_crank))
    return out


def model_accelerations(model, q, qd):
    """mbdjax's ``(M diag, Q, q̈)`` at one state (the formulation that simulate uses)."""
    p = model.params
    form = mbdjax.Augmented().prepare(model, p, q, 0.0)
    qdd, _ = form.accelerations(model, q, qd, 0.0, p, mbdjax.NoStabilization())
    M = model.mass_matrix(q, qd)
    return np.diag(np.asarray(M)), np.asarray(model.forcing(q, qd)), np.asarray(qdd)


def check_same_system(label, ex, mech, perm, q0b, qd0b):
    """Compare both implementations at consistent states: the initial state and the
    baseline's state 0.5 s later. Returns the worst relative differences of the mass
    diagonal, Q and q̈, and the zoo's constraint residual at the baseline's states."""
    ref = bl.simulate(mech, q0b, qd0b, t1=0.5, saveat=2)
    inv = np.argsort(perm)
    worst = {"M": 0.0, "Q": 0.0, "qdd": 0.0, "Phi": 0.0}
    rel = lambda a, b: float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))  # noqa: E731
    for qb, qdb in ((q0b, qd0b), (ref.q[-1], ref.qd[-1])):
        qm, qdm = jnp.asarray(qb[inv]), jnp.asarray(qdb[inv])
        Mz, Qz, az = model_accelerations(ex.model, qm, qdm)
        ab, _ = mech.accelerations(qb, qdb)
        worst["M"] = max(worst["M"], rel(Mz[perm], mech.Mdiag))
        worst["Q"] = max(worst["Q"], rel(Qz[perm], mech.forces(qb, qdb)))
        worst["qdd"] = max(worst["qdd"], rel(az[perm], ab))
        worst["Phi"] = max(worst["Phi"], float(np.max(np.abs(np.asarray(ex.model.holonomic_constraints(qm))))))
    print(f"  same-system check: rel|ΔM| {worst['M']:.1e}  rel|ΔQ| {worst['Q']:.1e}  "
          f"rel|Δq̈| {worst['qdd']:.1e}  |Φ_mbdjax(baseline states)| {worst['Phi']:.1e}")
    if max(worst["M"], worst["Q"], worst["qdd"]) > 1e-8 or worst["Phi"] > 1e-6:
        raise RuntimeError(f"{label}: the baseline and mbdjax models are not the same system ({worst})")
    return worst


# --------------------------------------------------------------------------- runners
def baseline_call(mech, q0, qd0, t1):
    """One baseline ``solve_ivp`` run (raises if it fails)."""
    res = bl.simulate(mech, q0, qd0, t1=t1, rtol=RTOL, atol=ATOL, saveat=2)
    if res.status != 0:
        raise RuntimeError(f"solve_ivp failed: {res.message}")
    return res


def mbdjax_call(ex, t1, solver, stabilization="projection"):
    """One blocking ``mbdjax.simulate`` call; returns ``(trajectory, seconds)``."""
    start = time.perf_counter()
    traj = mbdjax.simulate(
        ex.model, ex.q0, ex.qd0, t1=t1, stabilization=stabilization, saveat=2,
        rtol=RTOL, atol=ATOL, drift_tol=None, solver=solver,
    )
    jax.block_until_ready(traj)
    return traj, time.perf_counter() - start


def run_interleaved(ex, mech, q0b, qd0b, t1, solvers, repeat):
    """Compile every solver (first call minus second is the compile time), then
    ``repeat`` rounds, each one baseline run followed by one run of every solver.

    The VM's speed drifts by up to 2× within minutes, so besides the best of each
    side (*ratio*) the ratio is also taken within each round and its median reported
    (*paired*): a slow spell then slows both sides of the same pair.
    Returns ``(best baseline result, {solver: (trajectory, compile_s, best_s, paired)})``.
    """
    first = {name: mbdjax_call(ex, t1, *spec) for name, spec in solvers.items()}
    base_runs, runs = [], {name: [] for name in solvers}
    for _ in range(repeat):
        base_runs.append(baseline_call(mech, q0b, qd0b, t1))
        for name, spec in solvers.items():
            runs[name].append(mbdjax_call(ex, t1, *spec))
    base = min(base_runs, key=lambda r: r.wall)
    out = {}
    for name in solvers:
        times = [dt for _, dt in runs[name]]
        paired = float(np.median([b.wall / dt for b, dt in zip(base_runs, times)]))
        out[name] = (runs[name][-1][0], first[name][1] - times[0], min(times), paired)
    return base, out


SOLVERS = ("tsit5", "dopri5", "dopri8", "unrolled-tsit5", "unrolled-dopri5", "unrolled-dopri8")


def make_solver(name):
    """A diffrax solver by name; ``unrolled-X`` is ``mbdjax.UnrolledRK(X)`` (no stage loop)."""
    import diffrax

    base = {"tsit5": diffrax.Tsit5, "dopri5": diffrax.Dopri5, "dopri8": diffrax.Dopri8}
    if name.startswith("unrolled-"):
        return mbdjax.UnrolledRK(base[name.removeprefix("unrolled-")]())
    return base[name]()


def _per_call_us(f, q, qd, reps=2000):
    """µs per call of ``f(q, qd)`` inside one jitted ``fori_loop`` (no dispatch cost)."""

    @jax.jit
    def loop(q, qd):
        def body(k, acc):
            # A data dependence on both arguments keeps every call inside the loop
            # (XLA would otherwise hoist the loop-invariant parts).
            out = f(q + 1e-300 * acc, qd + 1e-300 * acc)
            return acc + jnp.sum(jax.tree_util.tree_leaves(out)[0]) * 1e-30

        return jax.lax.fori_loop(0, reps, body, jnp.zeros(()))

    loop(q, qd).block_until_ready()
    start = time.perf_counter()
    loop(q, qd).block_until_ready()
    return 1e6 * (time.perf_counter() - start) / reps


def profile_rhs(ex, mech, q0b, qd0b, perm):
    """Where one right-hand-side call spends its time, mbdjax (compiled) and baseline.

    Evaluated at the baseline's state 0.5 s into the motion (nonzero velocities). The
    mbdjax pieces are the ones its augmented formulation uses: with a planar Jacobian
    pattern, the Schur complement ``S = B M⁻¹ Bᵀ`` is formed from the Jacobian's nonzeros
    (``mbdjax._numerics.sparse``, gathers only) and factored with a dense Cholesky
    (``jax.scipy.linalg.cho_factor``/``cho_solve``), or, for a serial chain whose S is
    block tridiagonal, assembled as blocks and solved by block cyclic reduction
    (``mbdjax._numerics.blocktridiag``, what the RHS then does). For models with a dissipation
    function, ``∂D/∂q̇`` alone and the RHS with the dissipation removed are timed too.
    """
    import copy
    import timeit

    import jax.scipy.linalg as jsl

    from mbdjax import _dynamics as dyn
    from mbdjax import _kinematics as kin

    ref = bl.simulate(mech, q0b, qd0b, t1=0.5, saveat=2)
    qb, qdb = ref.q[-1], ref.qd[-1]
    inv = np.argsort(perm)
    q, qd = jnp.asarray(qb[inv]), jnp.asarray(qdb[inv])
    model, p = ex.model, ex.model.params
    form = mbdjax.Augmented().prepare(model, p, q, 0.0)
    stab = mbdjax.NoStabilization()
    Minv = 1.0 / dyn.mass_diagonal(model, p)
    pat = model.jacobian_pattern
    parts = {
        "RHS (q̈, λ)": lambda q, qd: form.accelerations(model, q, qd, 0.0, p, stab),
        "Φ_q": lambda q, qd: kin.constraint_jacobian(model, q, 0.0, p),
        "γ": lambda q, qd: kin.acceleration_rhs(model, q, qd, 0.0, p),
        "Q": lambda q, qd: dyn.forcing(model, q, qd, 0.0, p),
    }
    if pat is not None:
        vals0 = kin.holonomic_jacobian_values(model, q, 0.0, p)
        S0 = pat.schur(vals0, Minv)

        def chol(S, r):
            return jsl.cho_solve(jsl.cho_factor(S), r)

        def schur_chol(q, qd):
            vals = kin.holonomic_jacobian_values(model, q, 0.0, p)
            return chol(pat.schur(vals, Minv), pat.matvec(vals, qd))

        parts["Φ_q nonzeros"] = lambda q, qd: kin.holonomic_jacobian_values(model, q, 0.0, p)
        parts["S (sparse)"] = lambda q, qd: pat.schur(vals0 * (1.0 + 0.0 * q[0]), Minv)
        parts["Cholesky"] = lambda q, qd: chol(S0 + 0.0 * q[0] * jnp.eye(S0.shape[0]), qd[: S0.shape[0]])
        parts["Φ_q nz + S + Cholesky"] = schur_chol
        if pat.schur_block_size is not None:
            def schur_blocks(q, qd):
                vals = kin.holonomic_jacobian_values(model, q, 0.0, p)
                return pat.block_schur_solve(vals, Minv, pat.matvec(vals, qd))

            parts["Φ_q nz + S blocks + cyclic reduction"] = schur_blocks
    if model.dissipation_fn is not None:
        D = model.dissipation_fn
        parts["∂D/∂q̇"] = lambda q, qd: jax.grad(lambda v: jnp.asarray(D(q, v, 0.0, p), dtype=float))(qd)
        bare = copy.copy(model)
        object.__setattr__(bare, "dissipation_fn", None)
        parts["RHS without D"] = lambda q, qd: form.accelerations(bare, q, qd, 0.0, p, stab)
    cost = {k: _per_call_us(f, q, qd) for k, f in parts.items()}
    print("  mbdjax per call (µs, compiled): " + ", ".join(f"{k} {v:.2f}" for k, v in cost.items()))
    y = np.concatenate([qb, qdb])
    g = {"mech": mech, "qb": qb, "qdb": qdb, "y": y, "np": np}
    tm = lambda st: 1e6 * min(timeit.repeat(st, number=500, repeat=3, globals=g)) / 500  # noqa: E731
    n, m = mech.n, mech.m
    K = np.eye(n + m)
    g["K"], g["r"] = K, np.ones(n + m)
    print(f"  baseline per call (µs): RHS {tm('mech.rhs(0.0, y)'):.1f}, Φ_q and γ "
          f"{tm('mech.jacobian_and_gamma(qb, qdb)'):.1f}, Q {tm('mech.forces(qb, qdb)'):.1f}, "
          f"solve ({n + m}×{n + m}) {tm('np.linalg.solve(K, r)'):.1f}")


# --------------------------------------------------------------------------- main
def machine_line():
    cores = os.cpu_count()
    return (f"{platform.processor() or platform.machine()}, {cores} cores, {platform.system()}; "
            f"Python {platform.python_version()}, NumPy {np.__version__}, "
            f"SciPy {__import__('scipy').__version__}, JAX {jax.__version__} "
            f"({jax.default_backend()}), diffrax {__import__('diffrax').__version__}; "
            f"XLA CPU small-loop limit: {xla_loop_line()}")


def xla_loop_line():
    """What mbdjax set for XLA's CPU small-loop limit (``mbdjax.xla_loop_setting()``)."""
    s = mbdjax.xla_loop_setting()
    return f"{s['loop_bytes']} bytes (by mbdjax)" if s["loop_bytes"] is not None else s["source"]


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="N = 2, 5 and 2 s of motion (smoke test)")
    ap.add_argument("--solver", choices=SOLVERS, nargs="+", default=["tsit5"],
                    help="mbdjax solvers, each timed against the same baseline run "
                         "(default tsit5 = mbdjax's default)")
    ap.add_argument("--stabilization", choices=("projection", "none", "baumgarte"), nargs="+",
                    default=["projection", "none"],
                    help="mbdjax stabilizations, each with every solver (default: projection, "
                         "mbdjax's default, and none, the baseline's equations)")
    ap.add_argument("--repeat", type=int, default=3, help="baseline and mbdjax runs to take the best of")
    ap.add_argument("--N", type=int, nargs="+", default=None, help="chain sizes (default 2 5 10 20)")
    ap.add_argument("--profile", action="store_true", help="also time the pieces of one mbdjax RHS call")
    ap.add_argument("--out", default=None, help="markdown output (default results_core[_quick].md)")
    args = ap.parse_args(argv)

    Ns = args.N or ((2, 5) if args.quick else (2, 5, 10, 20))
    t1 = 2.0 if args.quick else 10.0
    t_cmp = 1.0
    solvers = {f"{name} ({stab})": (make_solver(name), stab) for name in args.solver for stab in args.stabilization}
    print(f"machine: {cpu_model()}; {machine_line()}")
    print(f"models: mbdjax.models (+ the slender-link slider-crank via mbdjax.planar); mbdjax solvers: {', '.join(solvers)}; baseline: solve_ivp RK45; "
          f"rtol={RTOL:g}, atol={ATOL:g}, t1={t1:g} s")
    bl.self_check(verbose=True)

    rows = []
    for label, N, make in systems(Ns):
        print(f"\n== {label}" + (f" N={N}" if label.startswith("pendulum") else ""))
        ex = make()
        mech, perm = baseline_from_example(ex)
        q0b, qd0b = np.asarray(ex.q0)[perm], np.asarray(ex.qd0)[perm]
        same = check_same_system(label, ex, mech, perm, q0b, qd0b)

        base, results = run_interleaved(ex, mech, q0b, qd0b, t1, solvers, args.repeat)
        base_1 = bl.simulate(mech, q0b, qd0b, t1=t_cmp, rtol=RTOL, atol=ATOL, saveat=2)
        for sname, spec in solvers.items():
            traj, compile_s, run_s, paired = results[sname]
            steps = int(traj.num_steps)
            # Accuracy: separate runs to t = 1 s, and the end states of the timed runs.
            traj_1, _ = mbdjax_call(ex, t_cmp, *spec)
            d1 = float(np.max(np.abs(np.asarray(traj_1.q[-1])[perm] - base_1.q[-1])))
            dT = float(np.max(np.abs(np.asarray(traj.q[-1])[perm] - base.q[-1])))
            drift = float(np.max(np.abs(np.asarray(ex.model.holonomic_constraints(traj.q[-1])))))
            row = dict(
                system=label, N=N, chain=label.startswith("pendulum"), n=mech.n, m=mech.m,
                solver=sname, base_s=base.wall, nfev=base.nfev, us_rhs=base.us_per_rhs,
                compile_s=compile_s, run_s=run_s, steps=steps, us_step=1e6 * run_s / max(steps, 1),
                ratio=base.wall / run_s, paired=paired, d1=d1, dT=dT, drift=drift,
                same=max(same["M"], same["Q"], same["qdd"]),
            )
            rows.append(row)
            print(f"  baseline {base.wall:.3f} s ({base.nfev} RHS, {base.us_per_rhs:.1f} µs/RHS) | "
                  f"mbdjax {sname}: compile {compile_s:.2f} s, run {run_s:.4f} s ({steps} steps, "
                  f"{row['us_step']:.1f} µs/step) | ratio {row['ratio']:.1f}x (paired {paired:.1f}x) | "
                  f"|Δq|(1 s) {d1:.1e}, |Δq|(t1) {dT:.1e}, mbdjax |Φ|(t1) {drift:.1e}")
        if args.profile:
            profile_rhs(ex, mech, q0b, qd0b, perm)

    table = format_table(rows, t1)
    growth = growth_lines(rows)
    print("\n" + table)
    for line in growth:
        print(line)
    out = Path(args.out) if args.out else HERE / ("results_core_quick.md" if args.quick else "results_core.md")
    with open(out, "w") as fh:
        fh.write(f"# mbdjax vs NumPy/SciPy baseline{' (quick)' if args.quick else ''}\n\n")
        fh.write(f"- date: {time.strftime('%Y-%m-%d %H:%M')}\n- machine: {cpu_model()}; {machine_line()}\n")
        fh.write("- models: `mbdjax.models.pendulum_chain(N)`, `mbdjax.models.slider_crank(driven=False)`, "
                 "and the slender-link slider-crank built with `mbdjax.planar` (`core.slender_slider_crank`)\n")
        fh.write(f"- mbdjax solvers (stabilization): {', '.join(solvers)} (diffrax PID controller; unrolled-X = "
                 "`mbdjax.UnrolledRK(X)`; projection is mbdjax's default); "
                 f"baseline: solve_ivp RK45; rtol={RTOL:g}, atol={ATOL:g}, no stabilization, "
                 f"t1 = {t1:g} s, best of {args.repeat}\n\n")
        fh.write(table + "\n\n")
        for line in growth:
            fh.write(f"- {line}\n")
        fh.write(NOTES)
    print(f"\nwrote {out}")
    return rows


NOTES = """
Columns: *baseline* = solve_ivp wall time; *RHS* = its right-hand-side calls and µs per
call (integrator overhead included); *compile* = first mbdjax call minus the second;
*run* = best mbdjax call after compilation; *steps* = diffrax steps (accepted + rejected)
and run time per step; *ratio* = best baseline / best mbdjax run; *paired* = the median
over rounds of baseline / mbdjax within one round (each round runs the baseline, then
every solver once, so a slow spell of the machine slows both sides of a pair); *‖Δq‖∞ at 1 s* = largest coordinate
difference between the two at t = 1 s (separate runs to 1 s); *‖Δq‖∞ at t1* = the same at the
end of the timed runs (chaotic chains diverge, informative only); *same* = largest
relative difference of M, Q and q̈ between the two models at consistent states.
"""


def format_table(rows, t1):
    head = ("| system | N | n / m | baseline (s) | RHS calls | µs/RHS | mbdjax solver | mbdjax compile (s) | "
            "mbdjax run (s) | steps (µs/step) | ratio | paired | ‖Δq‖∞ at 1 s | ‖Δq‖∞ at t1 | same |")
    sep = "|" + "---|" * 15
    lines = [head, sep]
    for r in rows:
        lines.append(
            f"| {r['system']} | {r['N']} | {r['n']} / {r['m']} | {r['base_s']:.3f} | {r['nfev']} | "
            f"{r['us_rhs']:.1f} | {r['solver']} | {r['compile_s']:.2f} | {r['run_s']:.4f} | "
            f"{r['steps']} ({r['us_step']:.1f}) | {r['ratio']:.1f}x | {r['paired']:.1f}x | {r['d1']:.1e} | {r['dT']:.1e} | "
            f"{r['same']:.0e} |"
        )
    return "\n".join(lines)


def growth_lines(rows):
    out = []
    for solver in dict.fromkeys(r["solver"] for r in rows):
        by_n = {r["N"]: r for r in rows if r["chain"] and r["solver"] == solver}
        if 10 not in by_n or 20 not in by_n:
            continue
        a, b = by_n[10], by_n[20]
        out.append(
            f"growth N=10→20 ({solver}): mbdjax run ×{b['run_s'] / a['run_s']:.2f} (per step ×{b['us_step'] / a['us_step']:.2f}, "
            f"steps ×{b['steps'] / a['steps']:.2f}), compile ×{b['compile_s'] / a['compile_s']:.2f}; "
            f"baseline ×{b['base_s'] / a['base_s']:.2f} (per RHS ×{b['us_rhs'] / a['us_rhs']:.2f})"
        )
    return out


if __name__ == "__main__":
    main()
