"""`mbdjax sweep CONFIG.toml`: a parameter sweep described in a file.

The file names the model, the members and the outputs; paths are relative to the
file's folder, and unknown keys are errors:

    model = "four-bar"                   # a built-in example, or "file.py:function"
    t1 = 2.0                             # end time (s)
    out = "sweep-result"                 # the sweep folder (default: sweep-<config name>)
    chunk = 256                          # members per compiled batch
    outputs = "final"                    # final q and qd, or a list of coordinate names
    overwrite = false                    # or the --overwrite flag

    [grid]                               # the Cartesian product of the lists, or
    "coupler.mass" = [0.5, 0.7, 0.9]
    "crank.length" = [0.1, 0.2]

    # [samples]                          # the members listed one by one (equal lengths), or
    # "coupler.mass" = [0.5, 0.7, 0.9]
    # [random]                           # n members drawn uniformly in [lo, hi)
    # n = 100                            #   (log = true: log-uniform), numpy's
    # seed = 0                           #   default_rng(seed), so a rerun draws the same
    # "coupler.mass" = { lo = 0.5, hi = 1.5 }

    [options]                            # simulate keywords, the same for every member
    saveat = 2
    rtol = 1e-8

Exactly one of `[grid]`, `[samples]` and `[random]` is given. The initial state is the
example's (`function` in `file.py:function` returns a `mbdjax.models.Example` or a
`(model, q0, qd0)` triple). A rerun of the same file resumes the sweep
(`mbdjax.sweep`); the folder holds `manifest.json` and `chunk-*.npz`
(`mbdjax.load_sweep(folder)` reads them).
"""

from __future__ import annotations

import os

import numpy as np

from .._errors import MbdjaxError
from .._identify.fit_config import read_toml

_KEYS = {"model", "t1", "out", "chunk", "outputs", "overwrite", "progress", "grid", "samples", "random", "options"}
_OPTIONS = {"t0", "saveat", "rtol", "atol", "max_steps", "formulation", "stabilization", "fixed_step", "dt0",
            "drift_tol", "throw"}


def read_config(path):
    """The validated config as a dict (paths resolved against the file's folder)."""
    cfg = read_toml(path, "sweep")
    problems = []
    unknown = sorted(set(cfg) - _KEYS)
    if unknown:
        problems.append(f"unknown keys {unknown} in {path!r}; the keys are {sorted(_KEYS)}")
    missing = [k for k in ("model", "t1") if k not in cfg]
    if missing:
        problems.append(f"{path!r} must set {missing}")
    elif not isinstance(cfg["t1"], (int, float)) or isinstance(cfg["t1"], bool):
        problems.append(f"t1 must be a number (the end time in s); got {cfg['t1']!r}")
    designs = [k for k in ("grid", "samples", "random") if k in cfg]
    if len(designs) != 1:
        problems.append(f"give exactly one of [grid], [samples], [random]; {path!r} has {designs or 'none'}")
    bad = sorted(set(cfg.get("options", {})) - _OPTIONS)
    if bad:
        problems.append(f"unknown [options] {bad}; allowed: {sorted(_OPTIONS)}")
    outputs = cfg.get("outputs", "final")
    if not (outputs == "final" or (isinstance(outputs, list) and outputs and all(isinstance(c, str) for c in outputs))):
        problems.append(f"outputs must be \"final\" or a list of coordinate names; got {outputs!r}")
    if problems:
        raise MbdjaxError(f"sweep: {problems[0]}." if len(problems) == 1 else
                          f"sweep: {len(problems)} problems in the config:\n" + "\n".join(f"  - {p}." for p in problems))
    base = os.path.dirname(os.path.abspath(path))
    stem = os.path.splitext(os.path.basename(path))[0]
    cfg["out"] = os.path.join(base, cfg.get("out", f"sweep-{stem}"))
    cfg["base"] = base
    cfg["outputs"] = outputs
    return cfg


def samples_of(cfg):
    """`{dotted name: (B,) values}` from the config's `[grid]`, `[samples]` or `[random]`."""
    # here, not at the top: a config's errors are reported before JAX loads (2–3 s)
    from .sweep import sweep_grid

    if "grid" in cfg:
        return sweep_grid(cfg["grid"])
    if "samples" in cfg:
        return {k: np.asarray(v, dtype=float) for k, v in cfg["samples"].items()}
    table = dict(cfg["random"])
    n, seed = table.pop("n", None), table.pop("seed", 0)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise MbdjaxError(f"sweep: [random] needs n = the number of members (a positive integer); got {n!r}.")
    rng = np.random.default_rng(seed)
    out = {}
    for name, spec in table.items():
        if not isinstance(spec, dict) or set(spec) - {"lo", "hi", "log"} or not {"lo", "hi"} <= set(spec):
            raise MbdjaxError(f"sweep: [random] {name!r} must be {{ lo = ..., hi = ... }} (optionally log = true); "
                              f"got {spec!r}.")
        lo, hi = float(spec["lo"]), float(spec["hi"])
        if spec.get("log", False):
            if lo <= 0 or hi <= 0:
                raise MbdjaxError(f"sweep: [random] {name!r} with log = true needs lo, hi > 0.")
            out[name] = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
        else:
            out[name] = rng.uniform(lo, hi, n)
    if not out:
        raise MbdjaxError("sweep: [random] names no parameter; add e.g. \"spring.k\" = { lo = 1.0, hi = 2.0 }.")
    return out


def coordinate_outputs(model, names):
    """An outputs function giving the final value of each named coordinate, `(C,)` each."""
    unknown = [c for c in names if c not in model.coordinates]
    if unknown:
        raise MbdjaxError(f"sweep: outputs {unknown} are not coordinates of the model; the coordinates are "
                          f"{list(model.coordinates)}.")
    index = {c: model.coordinates.index(c) for c in names}

    def outputs(traj):
        return {c: traj.q[:, -1, i] for c, i in index.items()}

    outputs.__qualname__ = outputs.__name__ = f"final_coordinates({', '.join(names)})"
    return outputs


def run_config(path, overwrite=False, progress=True):
    """Run the sweep of config `path`; returns the `SweepResult`."""
    # here, not at the top: a config's errors are reported before JAX loads (2–3 s)
    from .._identify.fit_config import load_model
    from .sweep import sweep

    cfg = read_config(path)
    try:
        model, q0, qd0 = load_model(cfg["model"], cfg["base"])
    except MbdjaxError as err:
        msg = str(err)
        raise MbdjaxError("sweep: " + msg.removeprefix("fit: ")) from None
    outputs = None if cfg["outputs"] == "final" else coordinate_outputs(model, cfg["outputs"])
    return sweep(model, samples_of(cfg), out=cfg["out"], chunk=cfg.get("chunk", 256), outputs=outputs,
                 q0=q0, qd0=qd0, overwrite=bool(cfg.get("overwrite", False)) or overwrite,
                 progress=bool(cfg.get("progress", True)) and progress, t1=float(cfg["t1"]),
                 **dict(cfg.get("options", {})))
