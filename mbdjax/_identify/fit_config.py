"""`mbdjax fit CONFIG.toml`: a parameter fit described in a file.

The file names the model, the data and the free parameters; paths are relative to
the file's folder:

    model = "stick-slip"                 # a built-in example, or "file.py:function"
    data = "measured.csv"                # columns t and one per output (or .npz)
    outputs = ["x.x"]                    # coordinates compared with the data
    free = ["fr.mu_k", "k.k"]            # dotted parameter names
    out = "fit-result"                   # output folder (default: fit-<config name>)

    [start]                              # optional starting values
    "k.k" = 8.0

    [bounds]                             # optional: lo and/or hi per parameter
    "fr.mu_k" = { lo = 0.0, hi = 1.0 }

    [options]                            # optional: fit/simulate keywords
    steps = 50
    rtol = 1e-10
    atol = 1e-12

`function` in `file.py:function` returns a `mbdjax.models.Example` (model and initial
state) or a `(model, q0, qd0)` triple. The command writes `fit.json` (estimates,
standard errors, correlations, identifiability, loss history) and `fit.png` (data
against the fitted outputs, and the loss history) and prints the report.
"""

from __future__ import annotations

import importlib.util
import json
import os
import tomllib

import numpy as np

from .._errors import MbdjaxError

_KEYS = {"model", "data", "outputs", "free", "out", "start", "bounds", "options"}
_OPTIONS = {"steps", "tol", "weights", "rtol", "atol", "max_steps", "t0", "formulation", "stabilization",
            "log_every", "verbose"}


def read_toml(path, command):
    """The TOML file at `path` as a dict; a missing or malformed file is an
    `MbdjaxError` naming the `command` ("fit", "sweep") and the file."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise MbdjaxError(f"{command}: config file {path!r} does not exist.") from None
    except tomllib.TOMLDecodeError as err:
        raise MbdjaxError(f"{command}: {path!r} is not valid TOML: {err}.") from None


def read_config(path):
    """The validated config as a dict (paths resolved against the file's folder)."""
    cfg = read_toml(path, "fit")
    unknown = sorted(set(cfg) - _KEYS)
    if unknown:
        raise MbdjaxError(f"fit: unknown keys {unknown} in {path!r}; the keys are {sorted(_KEYS)}.")
    missing = [k for k in ("model", "data", "outputs", "free") if k not in cfg]
    if missing:
        raise MbdjaxError(f"fit: {path!r} must set {missing}.")
    bad = sorted(set(cfg.get("options", {})) - _OPTIONS)
    if bad:
        raise MbdjaxError(f"fit: unknown options {bad}; allowed: {sorted(_OPTIONS)}.")
    base = os.path.dirname(os.path.abspath(path))
    cfg["data"] = os.path.join(base, cfg["data"])
    stem = os.path.splitext(os.path.basename(path))[0]
    cfg["out"] = os.path.join(base, cfg.get("out", f"fit-{stem}"))
    cfg["base"] = base
    return cfg


def load_model(spec, base):
    """`(model, q0, qd0)` from a built-in example name or `"file.py:function"`."""
    # here, not at the top: a config's errors are reported before JAX and the models load
    from .. import models

    if ":" in spec and spec.split(":", 1)[0].endswith(".py"):
        file, func = spec.split(":", 1)
        file = os.path.join(base, file)
        if not os.path.exists(file):
            raise MbdjaxError(f"fit: model file {file!r} does not exist.")
        module_spec = importlib.util.spec_from_file_location("_mbdjax_fit_model", file)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        if not hasattr(module, func):
            raise MbdjaxError(f"fit: {file!r} has no function {func!r}.")
        made = getattr(module, func)()
    else:
        made = models.get(spec)
    if isinstance(made, models.Example):
        return made.model, made.q0, made.qd0
    try:
        model, q0, qd0 = made
    except (TypeError, ValueError):
        raise MbdjaxError(f"fit: {spec!r} must give an Example or a (model, q0, qd0) triple.") from None
    return model, q0, qd0


def run_config(path, force=False):
    """Run the fit of config `path`; returns `(FitResult, output folder)`."""
    # here, not at the top: a config's errors are reported before JAX loads (2–3 s)
    import jax.numpy as jnp

    from .fit import fit, load_data
    from .._integrate import simulate
    from .._params import resolve_names, set_values

    cfg = read_config(path)
    model, q0, qd0 = load_model(cfg["model"], cfg["base"])
    out = cfg["out"]
    if os.path.isdir(out) and os.listdir(out) and not force:
        raise MbdjaxError(f"fit: output folder {out!r} is not empty; choose another `out` or pass --force.")
    os.makedirs(out, exist_ok=True)
    start = dict(cfg.get("start", {}))
    params0 = model.params
    if start:
        paths = resolve_names(params0, tuple(start), "fit: [start]")
        params0 = set_values(params0, paths, jnp.asarray([float(v) for v in start.values()]))
    bounds = {k: (v.get("lo"), v.get("hi")) for k, v in cfg.get("bounds", {}).items()}
    options = dict(cfg.get("options", {}))
    outputs = tuple(cfg["outputs"])
    res = fit(model, cfg["data"], params0, free=tuple(cfg["free"]), outputs=outputs, q0=q0, qd0=qd0,
              bounds=bounds or None, **options)
    t, y = load_data(cfg["data"], outputs)
    sim_kw = {k: v for k, v in options.items() if k in ("rtol", "atol", "max_steps", "t0", "formulation",
                                                         "stabilization")}
    traj = simulate(model, q0, qd0, t1=float(t[-1]), saveat=jnp.asarray(t), params=res.params, **sim_kw)
    fitted = np.stack([np.asarray(traj.coordinate(c)) for c in outputs], axis=1)
    summary = {
        "config": os.path.abspath(path), "model": cfg["model"], "free": list(res.names),
        "values": res.values.tolist(), "initial": res.initial.tolist(),
        "std_errors": [float(s) if np.isfinite(s) else None for s in res.std_errors],
        "correlation": res.correlation.tolist(), "loss": res.loss, "history": list(res.history),
        "grad_norm": res.grad_norm, "steps": res.steps, "converged": res.converged,
        "singular_values": res.singular_values.tolist(), "unidentifiable": list(res.unidentifiable),
    }
    with open(os.path.join(out, "fit.json"), "w") as fh:
        json.dump(summary, fh, indent=2)
    # on first use: matplotlib, after the fit
    from ..plotting._plots import figure, pyplot, units_label, coordinate_unit, legend

    plt = pyplot()
    fig, (ax1, ax2) = figure(rows=2, height=6.0, sharex=False)    # time above, steps below
    for k, c in enumerate(outputs):
        ax1.plot(t, y[:, k], ".", ms=3, label=f"{c} data")
        ax1.plot(t, fitted[:, k], "-", label=f"{c} fitted")
    ax1.set(title="data and fitted outputs", xlabel="t [s]",
            ylabel=units_label([coordinate_unit(traj, c) for c in outputs], "output"))
    legend(ax1)
    ax1.grid(alpha=0.3)
    ax2.semilogy(np.maximum(np.asarray(res.history), 1e-300))
    ax2.set(title="loss", xlabel="Levenberg–Marquardt step", ylabel="weighted sum of squares [1]")
    ax2.grid(alpha=0.3)
    fig.savefig(os.path.join(out, "fit.png"), dpi=110)
    plt.close(fig)
    return res, out
