"""Parameter sweeps to disk: `sweep` runs many simulations in chunks, resumably.

A sweep is a list of B members (one value per member for each swept parameter, and
optionally one initial state per member). The members are cut into chunks of `chunk`;
each chunk is one `mbdjax.simulate_batch` call (the last, shorter chunk is padded by
repeating its last member, so every chunk reuses one compilation), reduced by an
`outputs` function to a few arrays per member, and written to `DIR/chunk-00000.npz`
atomically (a temporary name in the same folder, fsync, `os.replace`). `DIR/manifest.json`
(also written atomically) records what the sweep is (parameter names, hashes of the
samples and initial states, settings, the outputs function, a model fingerprint,
library versions) and, per finished chunk, its file and sha256. A rerun with the same
arguments skips the finished chunks, so a killed sweep resumes where it stopped.

The folder's files and their checks live in `mbdjax._batch.sweep_store`.
"""

from __future__ import annotations

import datetime
import hashlib
import inspect
import io
import itertools
import json
import os
import sys
import time

import diffrax
import jax
import jax.numpy as jnp
import numpy as np

from .batch import simulate_batch
from .._errors import MbdjaxError, SimulationError
from .._integrate import simulate
from .._params import checked_params, flatten_params, path_name, resolve_names, set_values
from .._numerics.rk import repr_solver
from .sweep_store import SweepResult, load_sweep, open_folder
from .._files import atomic_write
from .sweep_store import outputs_name, sha, fingerprint, write_manifest
from ..models._example import Example


# ------------------------------------------------------------------ identity of a sweep
def _describe(value):
    """A JSON-able description of a simulate keyword: numbers and strings as they are,
    arrays by shape and hash, anything else (solvers, formulations) by its repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.ndarray, jax.Array, list, tuple)):
        try:
            arr = np.asarray(value, dtype=float)
            return {"shape": list(arr.shape), "sha256": sha(arr)}
        except (TypeError, ValueError):
            pass
    return repr(value)


def settings(simulate_kwargs):
    sig = inspect.signature(simulate)
    out = {k: p.default for k, p in sig.parameters.items()
           if p.kind is p.KEYWORD_ONLY and k != "params" and p.default is not p.empty}
    out.update({k: v for k, v in simulate_kwargs.items() if k != "devices"})
    if out.get("solver") is None:
        out["solver"] = diffrax.Tsit5()
    desc = {k: _describe(v) for k, v in sorted(out.items())}
    desc["solver_class"] = repr_solver(out["solver"])
    return desc


# ------------------------------------------------------------------ samples
def sweep_grid(axes: dict) -> dict[str, np.ndarray]:
    """The Cartesian product of per-parameter value lists, as sweep samples.

    Arguments:
        axes: `{dotted name: 1-D values}`; `len(values)` may differ per name.

    Returns:
        `{name: (B,) array}` with `B = prod(len(values))`; the first name varies
        slowest (the order of `itertools.product`, `numpy.meshgrid(indexing="ij")`).

        >>> import mbdjax as mbd
        >>> g = mbd.sweep_grid({"k": [1.0, 4.0], "c": [0.0, 0.1, 0.2]})
        >>> g["k"].tolist(), g["c"].tolist()
        ([1.0, 1.0, 1.0, 4.0, 4.0, 4.0], [0.0, 0.1, 0.2, 0.0, 0.1, 0.2])
    """
    if not isinstance(axes, dict) or not axes:
        raise MbdjaxError("sweep_grid: give a non-empty dict {dotted parameter name: list of values}.")
    values = {}
    for name, v in axes.items():
        arr = np.asarray(v, dtype=float)
        if arr.ndim != 1 or arr.size == 0:
            raise MbdjaxError(f"sweep_grid: {name!r} must be a non-empty 1-D list of values; got shape {arr.shape}.")
        values[name] = arr
    rows = np.array(list(itertools.product(*values.values())), dtype=float)
    return {name: rows[:, k].copy() for k, name in enumerate(values)}


def _samples(model, base, samples, q0, qd0):
    """Validated `(names, paths, values (B, k), q0, qd0, B)`; q0/qd0 are numpy, (n,) or (B, n)."""
    if samples is None:
        samples = {}
    if not isinstance(samples, dict):
        raise MbdjaxError("sweep: samples must be a dict {dotted parameter name: (B,) values} "
                          "(mbdjax.sweep_grid(...) forms a Cartesian product).")
    sizes, problems = {}, []
    names = tuple(samples)
    cols = []
    for name in names:
        try:
            arr = np.asarray(samples[name], dtype=float)
        except (TypeError, ValueError):
            problems.append(f"samples[{name!r}] is not numeric")
            continue
        if arr.ndim != 1:
            problems.append(f"samples[{name!r}] must be 1-D (one value per member); got shape {arr.shape}")
        else:
            sizes[f"samples[{name!r}]"] = arr.shape[0]
        cols.append(arr)
    n = model.n
    states = []
    for label, x in (("q0", q0), ("qd0", qd0)):
        x = np.asarray(x, dtype=float)
        if x.ndim == 2 and x.shape[1] == n:
            sizes[label] = x.shape[0]
        elif x.shape != (n,):
            problems.append(f"{label} must have shape ({n},) (shared) or (B, {n}) (one row per member) for "
                            f"coordinates {list(model.coordinates)}; got {x.shape}")
        states.append(x)
    if not problems and len(set(sizes.values())) > 1:
        problems.append("the members differ in number: " + ", ".join(f"{k}: {v}" for k, v in sizes.items()))
    if not problems and not sizes:
        problems.append("nothing varies: give samples {name: values} or q0/qd0 of shape (B, n)")
    if not problems and 0 in sizes.values():
        problems.append("the sweep has no members (B = 0)")
    if problems:
        raise MbdjaxError([f"sweep: {p}." for p in problems])
    paths = resolve_names(base, names, "sweep") if names else ()
    B = next(iter(sizes.values()))
    values = np.stack(cols, axis=1) if cols else np.zeros((B, 0))
    return names, paths, values, states[0], states[1], B


def _chunk_params(base, paths, values):
    """`base` with the swept leaves replaced by `(C, *shape)` batched leaves from `values (C, k)`."""
    leaves = {}
    for k, path in enumerate(paths):
        leaf_path = path[:-1] if isinstance(path[-1], int) else path
        if leaf_path not in leaves:
            node = base
            for key in leaf_path:
                node = node[key]
            node = np.asarray(node, dtype=float)
            leaves[leaf_path] = np.array(np.broadcast_to(node, (values.shape[0],) + node.shape))
        if isinstance(path[-1], int):
            leaves[leaf_path][:, path[-1]] = values[:, k]
        else:
            leaves[leaf_path][:] = values[:, k]
    return set_values(base, tuple(leaves), [jnp.asarray(v) for v in leaves.values()])


# ------------------------------------------------------------------ the sweep
def final_state(traj):
    """The default sweep outputs: `{"q": (C, n), "qd": (C, n)}`, the state at the last output time."""
    return {"q": traj.q[:, -1], "qd": traj.qd[:, -1]}


def _check_outputs(got, C, who):
    if not isinstance(got, dict) or not got:
        raise MbdjaxError(f"{who} must return a non-empty dict {{name: array with one row per member}}; "
                          f"got {type(got).__name__}.")
    out, problems = {}, []
    for key, value in got.items():
        if not isinstance(key, str) or not key or "/" in key:
            problems.append(f"key {key!r} is not a plain non-empty string")
            continue
        try:
            arr = np.asarray(value)
        except Exception as err:  # noqa: BLE001 - report anything that is not an array
            problems.append(f"{key!r} is not an array ({err})")
            continue
        if arr.dtype == object or arr.ndim == 0 or arr.shape[0] != C:
            problems.append(f"{key!r} has shape {arr.shape}; its first axis must be the {C} members of the chunk "
                            "(traj.q[:, -1] is (C, n))")
        out[key] = arr
    if problems:
        raise MbdjaxError([f"{who}: {p}." for p in problems])
    return out


def _progress(stream, label, done, total, members, B, rate, left, final=False):
    eta = f"~{left:.0f} s left" if left is not None else "estimating"
    speed = f"{rate:.1f} sims/s" if rate else "compiling"
    line = f"sweep {label}: {done}/{total} chunks, {members}/{B} members, {speed}, {eta}"
    if final:
        line = f"sweep {label}: {done}/{total} chunks, {members}/{B} members, {speed}, done"
    tty = getattr(stream, "isatty", lambda: False)()
    stream.write(("\r" + line.ljust(78) + ("\n" if final else "")) if tty else line + "\n")
    stream.flush()


def sweep(model, samples=None, *, out, chunk: int = 256, outputs=None, q0=None, qd0=None, params=None,
          overwrite: bool = False, progress: bool = True, **simulate_kwargs) -> SweepResult:
    """Simulate many parameter sets (and initial states) in chunks, saved to disk, resumably.

    Arguments:
        model: a `mbdjax.Model`, or a `mbdjax.models.Example` (its `q0`, `qd0` are the
            default initial state).
        samples: `{dotted parameter name: (B,) values}` (member `b` gets `values[b]` of
            every name; names as `mbdjax.Trajectory.save` writes them, `"spring.k"`,
            or a vector entry `"joint.point_i[0]"`). `mbdjax.sweep_grid({...})` forms a
            Cartesian product; random designs are any arrays you draw. May be empty
            when `q0` or `qd0` carry the members.
        out: the sweep folder (created if needed).
        chunk: members per `simulate_batch` call (the memory of a chunk is
            `chunk × saveat × n` floats per array); `min(chunk, B)` is used. The last
            chunk is padded to the chunk size by repeating its last member (the padding
            is dropped), so all chunks run one compiled function.
        outputs: `fn(traj) -> {name: array}` applied to each chunk's batched
            `Trajectory` (`traj.q (C, T, n)`); each array's first axis is the chunk's
            members. Default `final_state`: `{"q": traj.q[:, -1], "qd": traj.qd[:, -1]}`.
            The function is identified by its qualified name in the manifest.
        q0, qd0: `(n,)` shared or `(B, n)` per-member initial states (default the
            Example's; `qd0` defaults to rest, zeros). Each must be consistent
            (`mbdjax.initial_conditions`).
        params: the base parameter pytree for the parameters not swept (default
            `model.params`).
        overwrite: delete the sweep files (`manifest.json`, `chunk-*.npz`) of a sweep
            with other arguments in `out` and start again. Files the sweep did not write
            are never deleted.
        progress: print chunks done, members, simulations per second and the estimated
            time left on stderr.
        simulate_kwargs: as for `mbdjax.simulate_batch` (`t1` required; `saveat=2` is
            enough for final-state outputs; `devices=`). `throw` keeps simulate's
            meaning: with `throw=True` (default) a failing member stops the sweep (the
            finished chunks stay); with `throw=False` the outputs gain `"success"`
            `(B,)`, True where the member's solve succeeded.

    Returns:
        `load_sweep(out)`: a `SweepResult` (`.params`, `.outputs`, `.index`,
        `.manifest`, `.complete`).

    Resuming: a rerun with the same arguments skips every chunk the manifest lists
    whose file matches its sha256; a damaged chunk is recomputed with a warning. A
    rerun with other samples, initial states, chunk size, settings, outputs function
    or model (names and default parameters) raises an `MbdjaxError` naming what
    differs, unless `overwrite=True`. One process per folder at a time.

    Raises:
        MbdjaxError: unknown parameter names (listing the model's), members of unequal
        number, bad outputs, a folder that holds other files but no sweep, or a sweep
        folder with other arguments.

    Example (x(1) = cos √k for a unit mass on a spring):

        >>> import tempfile, jax.numpy as jnp, mbdjax as mbd
        >>> osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([1.0]),
        ...                 potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2, params={"k": 1.0})
        >>> res = mbd.sweep(osc, {"k": [1.0, 4.0, 9.0]}, out=tempfile.mkdtemp(), chunk=2, q0=jnp.ones(1),
        ...                 t1=1.0, saveat=2, progress=False)
        >>> [round(float(x), 6) for x in res.outputs["q"][:, 0]]
        [0.540302, -0.416147, -0.989992]

    References: THEORY §5 (each member's equations); `mbdjax.simulate_batch`.
    """
    if isinstance(model, Example):
        q0 = model.q0 if q0 is None else q0
        qd0 = model.qd0 if qd0 is None else qd0
        model = model.model
    if q0 is None:
        raise MbdjaxError(f"sweep: give the initial positions q0= ((n,) or (B, n), coordinates "
                          f"{list(model.coordinates)}), or pass a mbdjax.models.Example as the model.")
    qd0 = np.zeros(np.shape(q0)) if qd0 is None else qd0
    if "t1" not in simulate_kwargs:
        raise SimulationError("sweep: give the end time t1= (as for simulate).")
    if not isinstance(chunk, (int, np.integer)) or isinstance(chunk, bool) or chunk < 1:
        raise MbdjaxError(f"sweep: chunk must be a positive number of members; got {chunk!r}.")
    outputs = final_state if outputs is None else outputs
    if not callable(outputs):
        raise MbdjaxError("sweep: outputs must be a function traj -> {name: array} (default mbdjax.sweep final state).")
    base = checked_params(model, params, "sweep")
    names, paths, values, q0, qd0, B = _samples(model, base, samples, q0, qd0)
    names = tuple(path_name(p) for p in paths)
    C = min(int(chunk), B)
    n_chunks = -(-B // C)
    throw = simulate_kwargs.get("throw", True)
    identity = {
        "members": B, "parameters": list(names), "samples_sha256": sha(values),
        "q0": {"shape": list(q0.shape), "sha256": sha(q0)}, "qd0": {"shape": list(qd0.shape), "sha256": sha(qd0)},
        "base_params_sha256": sha(*[v for _, v in sorted(flatten_params(base).items())]),
        "chunk": C, "chunks": n_chunks, "settings": settings(simulate_kwargs), "outputs": outputs_name(outputs),
        "model_fingerprint": fingerprint(model),
    }
    identity = json.loads(json.dumps(identity))
    folder = os.fspath(out)
    manifest = open_folder(folder, identity, model, overwrite)

    label = os.path.basename(os.path.normpath(folder))
    stream = sys.stderr
    done = {name for name in manifest["finished"]}
    members_done = sum(e["members"][1] - e["members"][0] for e in manifest["finished"].values())
    computed, compute_time, computed_members = 0, 0.0, 0
    run = {"started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "resumed_chunks": len(done), "computed_chunks": 0, "wall_s": 0.0}
    manifest.setdefault("runs", []).append(run)
    wall = time.perf_counter()
    if progress and done:
        stream.write(f"sweep {label}: resuming, {len(done)} of {n_chunks} chunks already finished\n")
    for i in range(n_chunks):
        name = f"chunk-{i:05d}.npz"
        if name in done:
            continue
        start, stop = i * C, min((i + 1) * C, B)
        idx = np.concatenate([np.arange(start, stop), np.full(C - (stop - start), stop - 1)])
        tic = time.perf_counter()
        p = _chunk_params(base, paths, values[idx]) if paths else base
        try:
            traj = simulate_batch(model, q0[idx] if q0.ndim == 2 else q0, qd0[idx] if qd0.ndim == 2 else qd0, p,
                                  **simulate_kwargs)
            jax.block_until_ready(traj)      # a run-time failure (throw=True) surfaces here
        except SimulationError as err:
            if err.member is None:           # a set-up error, not a failed member
                raise
            k = int(idx[err.member])
            raise SimulationError(
                f"sweep: chunk {i} (members {start}–{stop - 1}) failed at member {k}; the {len(done)} finished "
                "chunks are kept. Run with throw=False to record failing members in outputs['success'] "
                f"instead. {err}", reason=err.reason, time=err.time, names=err.names, member=k) from None
        except MbdjaxError:
            raise
        except Exception as err:
            raise SimulationError(f"sweep: chunk {i} (members {start}–{stop - 1}) failed; the {len(done)} finished "
                                  "chunks are kept. Run with throw=False to record failing members in "
                                  f"outputs['success'] instead. The error was:\n{err}") from err
        got = _check_outputs(outputs(traj), C, f"sweep: outputs function {identity['outputs']!r}")
        if not throw:
            if "success" in got:
                raise MbdjaxError("sweep: with throw=False the output 'success' is the solver's; rename yours.")
            got["success"] = np.asarray(traj.success).reshape(C)
        shapes = {k: [list(v.shape[1:]), v.dtype.str] for k, v in got.items()}
        if manifest.get("output_shapes") not in (None, shapes):
            raise MbdjaxError(f"sweep: the outputs function returned {shapes} for chunk {i}, but "
                              f"{manifest['output_shapes']} before; it must return the same names and shapes "
                              "(per member) for every chunk.")
        manifest["output_shapes"] = shapes
        arrays = {"index": np.arange(start, stop)}
        arrays.update({f"param:{n}": values[start:stop, k] for k, n in enumerate(names)})
        arrays.update({f"output:{k}": v[: stop - start] for k, v in got.items()})
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        data = buf.getvalue()
        atomic_write(os.path.join(folder, name), data)
        manifest["finished"][name] = {"index": i, "members": [start, stop],
                                      "sha256": hashlib.sha256(data).hexdigest()}
        manifest["complete"] = len(manifest["finished"]) == n_chunks
        computed += 1
        run.update(computed_chunks=computed, wall_s=round(time.perf_counter() - wall, 3))
        write_manifest(folder, manifest)
        done.add(name)
        members_done += stop - start
        computed_members += stop - start
        compute_time += time.perf_counter() - tic
        if progress:
            rate = computed_members / compute_time if compute_time > 0 else None
            left = (B - members_done) / rate if rate else None
            _progress(stream, label, len(done), n_chunks, members_done, B, rate, left, final=len(done) == n_chunks)
    run["wall_s"] = round(time.perf_counter() - wall, 3)
    write_manifest(folder, manifest)
    return load_sweep(folder)
