"""The `mbdjax` command: list, check and run the built-in examples; fit parameters; sweep."""

from __future__ import annotations

import argparse
import atexit
import gc
import json
import math
import os
import sys
import threading
import time

# the static catalogue and the cache setting: `mbdjax list` and the usage errors need
# nothing more (no JAX, no NumPy)
from . import models
from ._compilation_cache import cache_setting, disable
from ._errors import MbdjaxError
from .models._catalogue import FACTS


def _example(name):
    """The built example `name` (validated against the static catalogue first)."""
    return models.get(name)


def _cmd_list(args):
    width = max(len(k) for k in FACTS)
    for name in sorted(FACTS):
        f = FACTS[name]
        print(f"{name.ljust(width)}  n={f.n:<3d} m={f.m:<3d}  {f.description}")
    return 0


def _cmd_check(args):
    from ._checks import check   # on first use: it imports JAX, which `mbdjax list` must not load

    ex = _example(args.name)
    report = check(ex.model, ex.q0)
    print(f"{ex.name}: {ex.description}")
    print(report)
    # 0: the motion is defined (redundant rows alone leave it unique, as `run` does);
    # 1: the existence check fails.
    return 0 if report.motion_unique else 1


class _CompileNotice:
    """Prints one line when a call runs longer than `after` seconds (a compile), and on
    leaving, whether the program came from the persistent compilation cache."""

    def __init__(self, what, after=1.0):
        self.what, self.after, self.hits, self.misses, self.shown = what, after, 0, 0, False

    def _listen(self, event, **kwargs):
        if event == "/jax/compilation_cache/cache_hits":
            self.hits += 1
        elif event == "/jax/compilation_cache/cache_misses":
            self.misses += 1

    def _show(self):
        folder = cache_setting()["folder"]
        later = f"cached in {folder} for next time" if folder else "persistent cache off"
        print(f"compiling {self.what} … (first run; {later})", flush=True)
        self.shown = True

    def __enter__(self):
        import jax   # on first use: `mbdjax list` and the usage errors must not load JAX

        jax.monitoring.register_event_listener(self._listen)
        self.timer = threading.Timer(self.after, self._show)
        self.timer.daemon = True
        self.start = time.perf_counter()
        self.timer.start()
        return self

    def __exit__(self, *exc):
        import jax   # on first use (__enter__ loaded it): `mbdjax list` must not load JAX

        self.timer.cancel()
        jax.monitoring.unregister_event_listener(self._listen)
        if self.shown and exc[0] is None:
            source = ("loaded from the persistent cache" if self.hits and not self.misses else "compiled")
            print(f"  ready in {time.perf_counter() - self.start:.1f} s ({source})", flush=True)
        return False


def _prepare_out(path, force):
    if os.path.isdir(path) and os.listdir(path):
        if not force:
            print(
                f"mbdjax run: output folder {path!r} is not empty; choose another --out or pass "
                "--force to overwrite the files mbdjax writes there.",
                file=sys.stderr,
            )
            return False
    elif os.path.exists(path) and not os.path.isdir(path):
        print(f"mbdjax run: {path!r} exists and is not a folder.", file=sys.stderr)
        return False
    os.makedirs(path, exist_ok=True)
    return True


def _cmd_run(args):
    # on first use: JAX, NumPy and the simulation stack, which `mbdjax list` and the
    # usage errors must not load
    import jax
    import numpy as np

    from ._checks import check
    from ._integrate import simulate
    from .plotting import save_standard_plots

    ex = _example(args.name)
    out = args.out or os.path.join("mbdjax-runs", ex.name)
    if not _prepare_out(out, args.force):
        return 2
    t1 = ex.t1 if args.t1 is None else float(args.t1)
    print(f"{ex.name}: {ex.description}")
    report = check(ex.model, ex.q0)
    print(report)
    # Redundant rows alone (rank lost everywhere near q0, M positive on null(B)) leave
    # the motion unique: simulate it, and say that the multipliers are not unique.
    only_redundant = report.motion_unique and not report.ok
    if not report.motion_unique:
        print("mbdjax run: the existence check failed at the initial state; not simulating.", file=sys.stderr)
        return 1
    if only_redundant:
        print(f"redundant constraint rows: {', '.join(report.redundant)}. The motion is unique; the "
              "multipliers and joint reactions are not, and are reported as the minimum-norm set.")
    start = time.perf_counter()
    with _CompileNotice("the simulation"):
        traj = simulate(ex.model, ex.q0, ex.qd0, t1=t1, formulation=args.formulation,
                        stabilization=args.stabilization, saveat=args.points, progress=args.progress,
                        **ex.options)
        jax.block_until_ready(traj.q)
    first = time.perf_counter() - start
    start = time.perf_counter()
    traj = simulate(ex.model, ex.q0, ex.qd0, t1=t1, formulation=args.formulation,
                    stabilization=args.stabilization, saveat=args.points, **ex.options)
    jax.block_until_ready(traj.q)
    wall = time.perf_counter() - start
    pos = np.asarray(traj.position_residual()) if ex.model.m_h else np.zeros((1, 0))
    vel = np.asarray(traj.velocity_residual()) if ex.model.m else np.zeros((1, 0))
    energy = np.asarray(traj.energy())
    scale = max(float(np.max(np.abs(energy))), float(np.max(np.abs(np.asarray(traj.kinetic_energy())))), 1e-300)
    try:
        work = np.asarray(traj.work())
    except MbdjaxError:  # mass_matrix models, or drivers without multipliers
        work = None
    summary = {
        "example": ex.name,
        "description": ex.description,
        "t1": t1,
        "formulation": args.formulation,
        "stabilization": args.stabilization,
        "solver_steps": int(traj.num_steps),
        "max_position_residual": float(np.max(np.abs(pos))) if pos.size else 0.0,
        "max_velocity_residual": float(np.max(np.abs(vel))) if vel.size else 0.0,
        "energy_initial": float(energy[0]),
        "energy_change_max": float(np.max(np.abs(energy - energy[0]))),
        "energy_change_relative": float(np.max(np.abs(energy - energy[0])) / scale),
        "work_input": float(work[-1]) if work is not None else None,
        "energy_balance_error_relative": (
            float(np.max(np.abs(energy - energy[0] - work)) / max(scale, float(np.max(np.abs(work)))))
            if work is not None else None),
        "wall_time_s": wall,
        "compile_and_first_run_s": first,
        "check": {"ok": report.ok, "rank": report.rank, "dof": report.dof,
                  "sigma_min": report.sigma_min, "condition": report.condition},
    }
    traj.save(os.path.join(out, "trajectory.npz"), overwrite=True)
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=2)
    plots = save_standard_plots(traj, out)
    motion = [] if args.no_animation else _write_motion(traj, out)
    print(
        f"\nsimulated {t1:g} s in {wall * 1e3:.1f} ms after compilation ({first:.2f} s with it), "
        f"{summary['solver_steps']} solver steps"
    )
    print(f"  max constraint residual  {summary['max_position_residual']:.2e} (position), "
          f"{summary['max_velocity_residual']:.2e} (velocity)")
    print(f"  energy change            {summary['energy_change_max']:.3e} J "
          f"(relative {summary['energy_change_relative']:.2e})")
    if work is not None:
        print(f"  energy balance           E(t) − E(0) − W(t) within "
              f"{summary['energy_balance_error_relative']:.1e} (relative; W = work of forces, dampers "
              "and drivers, trapezoidal over the output points)")
    print(f"  wrote {', '.join(os.path.basename(p) for p in ['trajectory.npz', 'summary.json'] + plots)} to {out}")
    for label, path in motion:
        print(f"  {label:<9} {path}")
    return 0


def _write_motion(traj, out):
    """The animation (`animation.gif`, at most 10 s long: real time or faster) and the
    interactive viewer (`viewer.html`) of a mechanism's run, as `(label, path)` pairs;
    none, with a note, for a model no front end drew (a network, a hand-written Model)."""
    from .plotting import animate, viewer   # on first use: Pillow and the drawing
    from .plotting._drawing import reached   # on first use, with the drawing

    if traj.model.scene is None:
        print("  (no animation: this example is not built by the planar or spatial front end, so it has no "
              "geometry to draw; its plots show the motion)")
        return []
    t = reached(traj)[0]
    duration = float(t[-1] - t[0])
    gif = animate(traj, os.path.join(out, "animation.gif"), speed=max(1.0, duration / 10.0), overwrite=True)
    page = viewer(traj, os.path.join(out, "viewer.html"), overwrite=True)
    return [("animation", gif.path), ("viewer", f"{page} (open it in a browser)")]


def _cmd_fit(args):
    from ._identify.fit_config import run_config   # on first use: it imports JAX, which `mbdjax list` must not load

    res, out = run_config(args.config, args.force)
    print(res.report())
    print(f"  wrote fit.json, fit.png to {out}")
    return 0 if res.converged else 1


def _cmd_sweep(args):
    # on first use: NumPy and the sweep (JAX), which `mbdjax list` must not load
    import numpy as np

    from ._batch.sweep_config import run_config

    res = run_config(args.config, overwrite=args.overwrite, progress=not args.quiet)
    ident, run = res.manifest["identity"], res.manifest["runs"][-1]
    print(f"swept {ident['members']} simulations ({ident['chunks']} chunks of {ident['chunk']}: "
          f"{run['computed_chunks']} computed, {run['resumed_chunks']} resumed) in {run['wall_s']:.2f} s")
    failed = int(np.sum(~res.outputs["success"])) if "success" in res.outputs else 0
    if failed:
        print(f"  {failed} members failed (outputs['success'] is False)")
    print(f"  outputs {sorted(res.outputs)} in {res.folder} (mbdjax.load_sweep(folder) reads them)")
    return 1 if failed else 0


def build_parser():
    parser = argparse.ArgumentParser(prog="mbdjax", description="Differentiable constrained dynamics on JAX.")
    parser.add_argument("--no-cache", action="store_true",
                        help="compile without JAX's persistent compilation cache (default: on, in "
                             "~/.cache/mbdjax/jax; MBDJAX_COMPILATION_CACHE=off turns it off too)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the built-in examples").set_defaults(func=_cmd_list)
    p_check = sub.add_parser("check", help="existence-theorem report of an example at its initial state")
    p_check.add_argument("name")
    p_check.set_defaults(func=_cmd_check)
    p_run = sub.add_parser("run", help="simulate an example, write trajectory, summary and plots")
    p_run.add_argument("name", nargs="?", default="slider-crank")
    p_run.add_argument("--t1", type=float, default=None, help="end time in s (default: the example's)")
    p_run.add_argument("--formulation", default="augmented",
                       choices=["augmented", "nullspace", "multiplier_free", "quasi_velocity",
                                "augmented_lagrangian"])
    p_run.add_argument("--stabilization", default="projection", choices=("projection", "baumgarte", "none"))
    p_run.add_argument("--points", type=int, default=400, help="number of output points")
    p_run.add_argument("--out", default=None, help="output folder (default mbdjax-runs/NAME)")
    p_run.add_argument("--force", action="store_true", help="write into a non-empty output folder")
    p_run.add_argument("--no-animation", action="store_true",
                       help="skip animation.gif and viewer.html (written by default for mechanisms)")
    p_run.add_argument("--progress", action="store_true",
                       help="show the simulation's progress (a separately compiled program, not kept "
                            "in the persistent cache)")
    p_run.set_defaults(func=_cmd_run)
    p_fit = sub.add_parser("fit", help="fit parameters to measured data as described in a TOML file")
    p_fit.add_argument("config", help="the fit description (see mbdjax._identify.fit_config)")
    p_fit.add_argument("--force", action="store_true", help="write into a non-empty output folder")
    p_fit.set_defaults(func=_cmd_fit)
    p_sweep = sub.add_parser("sweep", help="a resumable parameter sweep to disk, as described in a TOML file")
    p_sweep.add_argument("config", help="the sweep description (see mbdjax._batch.sweep_config)")
    p_sweep.add_argument("--overwrite", action="store_true",
                         help="delete a sweep with other arguments in the folder and start again")
    p_sweep.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p_sweep.set_defaults(func=_cmd_sweep)
    return parser


def _usage_error(args):
    """What is wrong with the command line, found before any model is built or JAX
    starts (the example name, the numbers, the config file), or None."""
    name = getattr(args, "name", None)
    if name is not None and name not in FACTS:
        close = [k for k in sorted(FACTS) if name.lower() in k or k in name.lower()]
        hint = f"did you mean {close[0]!r}? " if close else ""
        return f"no example named {name!r}; {hint}`mbdjax list` shows all {len(FACTS)}."
    t1 = getattr(args, "t1", None)
    if t1 is not None and not (math.isfinite(t1) and t1 > 0):
        return f"--t1 must be a positive number of seconds, got {t1:g}."
    points = getattr(args, "points", None)
    if points is not None and points < 2:
        return f"--points must be at least 2 (the start and the end), got {points}."
    config = getattr(args, "config", None)
    if config is not None and not os.path.isfile(config):
        return f"config file {config!r} does not exist."
    return None


def main(argv=None):
    args = build_parser().parse_args(argv)
    problem = _usage_error(args)
    if problem is not None:
        print(f"mbdjax {args.command}: {problem}", file=sys.stderr)
        return 2
    if args.no_cache:
        disable("--no-cache")
    try:
        return args.func(args)
    except MbdjaxError as err:
        text = str(err)
        for prefix in (f"{args.command}: ", f"mbdjax.{args.command}: "):     # no doubled prefix
            text = text.removeprefix(prefix)
        print(f"mbdjax {args.command}: {text}", file=sys.stderr)
        return 2


def entry():
    """The `mbdjax` command (and `python -m mbdjax`): `main`, then a quick exit.

    Once the command has returned, its files are written and closed; what is left is
    the interpreter's own teardown (JAX's runtime, thousands of objects), which took
    0.4 s of the main job's 3 s. The exit handlers run (the compilation cache's bound
    among them), the output streams are flushed, and the process ends with the
    command's exit code without that teardown. An exception ends the normal way,
    with its traceback.

    `run`, `check` and `list` also run without Python's cyclic garbage collector:
    tracing and lowering JAX programs allocates millions of short-lived objects, and
    the collector's passes over everything JAX imported took 0.3–0.5 s of the main
    job, while the memory it would reclaim from a bounded command is negligible
    (peak 372 MB against 370 MB with it). `fit` and `sweep`, which may run for long,
    keep it."""
    command = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    if command in ("run", "check", "list"):
        gc.disable()
    code = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    entry()
