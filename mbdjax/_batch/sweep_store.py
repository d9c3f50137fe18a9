"""The sweep folder: `manifest.json`, the chunk files, the identity of a sweep, `load_sweep`.

A sweep folder holds `manifest.json` and `chunk-00000.npz`, ... Both are written
atomically (a temporary name in the same folder, fsync, `os.replace`, fsync of the
folder), so a killed sweep leaves every file either whole or absent; the manifest
lists a chunk only after its file is in place, with its sha256. The manifest's
`identity` (members, parameter names and a hash of the samples, hashes of the initial
states and base parameters, chunk size, simulate settings, outputs function, model
fingerprint) decides whether a rerun resumes the folder.

Files a sweep writes, and the only ones it ever deletes: `manifest.json`,
`chunk-*.npz` and their temporaries `.manifest.json.tmp-*`, `.chunk-*.npz.tmp-*`.
Chunk files hold `index` (member indices), `param:<name>` (sample values) and
`output:<key>` (the outputs, one row per member).
"""

from __future__ import annotations

import dataclasses
import datetime
import glob
import hashlib
import json
import os
import sys
import warnings
from importlib import metadata

import numpy as np

from .._errors import MbdjaxError
from .._files import atomic_write
from .._params import flatten_params

_FORMAT = "mbdjax-sweep/1"
_MANIFEST = "manifest.json"
_OURS = ("manifest.json", "chunk-*.npz", ".manifest.json.tmp-*", ".chunk-*.npz.tmp-*")


# ------------------------------------------------------------------ identity of a sweep
def sha(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a, dtype="<f8"))
        h.update(repr(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def fingerprint(model) -> str:
    """sha256 of the model's names and default parameters (not of its equations)."""
    flat = flatten_params(model.params)
    data = {"coordinates": list(model.coordinates), "constraint_names": list(model.constraint_names),
            "nonholonomic_names": list(model.nonholonomic_names), "inertia_kind": model.inertia_kind,
            "params": {k: sha(v) for k, v in sorted(flat.items())}}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def versions():
    out = {"python": sys.version.split()[0]}
    for pkg in ("mbdjax", "jax", "jaxlib", "diffrax", "equinox", "numpy"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:  # pragma: no cover
            out[pkg] = None
    return out


def outputs_name(fn):
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


# ------------------------------------------------------------------ files
def _file_sha(path):
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def _ours(folder):
    """The files in `folder` a sweep writes (the only ones it deletes)."""
    return sorted({p for pat in _OURS for p in glob.glob(os.path.join(folder, pat))})


def write_manifest(folder, manifest):
    atomic_write(os.path.join(folder, _MANIFEST), json.dumps(manifest, indent=1).encode())


def _read_manifest(folder, who):
    path = os.path.join(folder, _MANIFEST)
    try:
        with open(path) as fh:
            manifest = json.load(fh)
    except FileNotFoundError:
        raise MbdjaxError(f"{who}: {folder!r} is not a sweep folder (no {_MANIFEST}).") from None
    except (OSError, ValueError) as err:
        raise MbdjaxError(f"{who}: {path!r} cannot be read ({err}); rerun the sweep with overwrite=True.") from None
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT:
        raise MbdjaxError(f"{who}: {path!r} is not an mbdjax sweep manifest (format {_FORMAT!r}).")
    return manifest


def _differences(old, new):
    """Readable `name: old → new` lines for the identity entries that differ."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out += [f"{key}.{line}" for line in _differences(a, b)]
        else:
            short = lambda v: (v[:12] + "…") if isinstance(v, str) and len(v) == 64 else v  # noqa: E731
            out.append(f"{key}: {short(a)!r} in the folder, {short(b)!r} now")
    return out


# ------------------------------------------------------------------ results
@dataclasses.dataclass(frozen=True, eq=False)
class SweepResult:
    """The results of a sweep, in member order.

    Attributes:
        folder: the sweep folder.
        params: `{dotted name: (B_done,) sample values}` of the finished members.
        outputs: `{key: (B_done, ...) array}`, the `outputs` function's arrays,
            concatenated over the finished chunks in member order (with `throw=False`
            also `"success"`, `(B_done,)` bool).
        index: `(B_done,)` member indices (`arange(B)` when complete).
        manifest: the parsed `manifest.json`.
        complete: whether every chunk is finished (B_done = B).

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([1.0]),
        ...                 potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2, params={"k": 4.0})
        >>> import tempfile
        >>> res = mbd.sweep(osc, {"k": [1.0, 4.0, 9.0]}, out=tempfile.mkdtemp(), chunk=2, q0=jnp.ones(1),
        ...                 qd0=jnp.zeros(1), t1=1.0, saveat=2)
        >>> res.complete, res.index.tolist(), res.outputs["q"].shape
        (True, [0, 1, 2], (3, 1))
    """

    folder: str
    params: dict
    outputs: dict
    index: np.ndarray
    manifest: dict
    complete: bool

    def __repr__(self):
        shapes = ", ".join(f"{k}: {v.shape}" for k, v in self.outputs.items())
        return (f"SweepResult({self.folder!r}, {len(self.index)} of {self.manifest['identity']['members']} "
                f"members, params {list(self.params)}, outputs {{{shapes}}})")


def load_sweep(folder, *, partial: bool = False) -> SweepResult:
    """Load the results of a sweep folder written by `mbdjax.sweep`.

    Every chunk is checked against the sha256 in the manifest. With `partial=False`
    (default) a missing or damaged chunk is an error; with `partial=True` the finished
    chunks are returned (`result.index` says which members, `result.complete` whether
    all).

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([1.0]),
        ...                 potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2, params={"k": 4.0})
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> _ = mbd.sweep(osc, {"k": [1.0, 4.0]}, out=folder, q0=jnp.ones(1), qd0=jnp.zeros(1), t1=1.0, saveat=2)
        >>> res = mbd.load_sweep(folder)
        >>> res.complete, res.params["k"].tolist(), [round(float(x), 6) for x in res.outputs["q"][:, 0]]
        (True, [1.0, 4.0], [0.540302, -0.416147])
    """
    folder = os.fspath(folder)
    manifest = _read_manifest(folder, "load_sweep")
    ident = manifest["identity"]
    names = ident["parameters"]
    parts, missing = [], []
    for i in range(ident["chunks"]):
        name = f"chunk-{i:05d}.npz"
        entry = manifest["finished"].get(name)
        path = os.path.join(folder, name)
        if entry is None:
            missing.append(i)
            continue
        if _file_sha(path) != entry["sha256"]:
            warnings.warn(f"load_sweep: {path!r} does not match its checksum in the manifest; it is left out "
                          "(rerun the sweep with the same arguments to recompute it).", stacklevel=2)
            missing.append(i)
            continue
        with np.load(path) as z:
            parts.append({k: z[k] for k in z.files})
    if missing and not partial:
        raise MbdjaxError(f"load_sweep: {len(missing)} of {ident['chunks']} chunks of {folder!r} are not finished "
                          f"(chunks {missing[:10]}{' …' if len(missing) > 10 else ''}); rerun mbdjax.sweep with the "
                          "same arguments to finish them, or pass partial=True for the finished ones.")
    keys = list(manifest.get("output_shapes", {}))

    def cat(key, tail, dtype):
        if parts:
            return np.concatenate([p[key] for p in parts])
        return np.zeros((0, *tail), dtype=dtype)

    shapes = manifest.get("output_shapes", {})
    return SweepResult(
        folder=folder,
        params={n: cat(f"param:{n}", (), float) for n in names},
        outputs={k: cat(f"output:{k}", tuple(shapes[k][0]), shapes[k][1]) for k in keys},
        index=cat("index", (), np.int64),
        manifest=manifest,
        complete=not missing,
    )


def open_folder(folder, identity, model, overwrite):
    """Create or reopen the sweep folder; returns the manifest (finished chunks verified)."""
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise MbdjaxError(f"sweep: out={folder!r} exists and is not a folder; choose another out=.")
    os.makedirs(folder, exist_ok=True)
    ours = set(_ours(folder))
    foreign = sorted(set(glob.glob(os.path.join(folder, "*")) + glob.glob(os.path.join(folder, ".*"))) - ours)
    has_manifest = os.path.exists(os.path.join(folder, _MANIFEST))
    manifest = None
    if has_manifest:
        try:
            manifest = _read_manifest(folder, "sweep")
        except MbdjaxError:
            if not overwrite:
                raise
        if manifest is not None and manifest["identity"] != identity:
            diff = _differences(manifest["identity"], identity)
            if not overwrite:
                raise MbdjaxError(f"sweep: {folder!r} holds a sweep with other arguments ("
                                  + "; ".join(diff) + "). Choose another out=, or pass overwrite=True to delete its "
                                  f"{len(manifest['finished'])} finished chunks and start again.")
            manifest = None
    elif foreign and not overwrite:
        raise MbdjaxError(f"sweep: {folder!r} is not empty and is not a sweep folder (no {_MANIFEST}; it holds "
                          f"{[os.path.basename(f) for f in foreign[:5]]}); choose another out=. With overwrite=True "
                          "the sweep is written next to those files (they are never deleted).")
    if manifest is None:       # a new sweep: remove only what a sweep writes
        for path in ours:
            os.remove(path)
        manifest = {"format": _FORMAT, "identity": identity,
                    "model": {"coordinates": list(model.coordinates),
                              "constraint_names": list(model.constraint_names),
                              "nonholonomic_names": list(model.nonholonomic_names)},
                    "versions": versions(),
                    "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                    "finished": {}, "complete": False}
        write_manifest(folder, manifest)
        return manifest
    for path in glob.glob(os.path.join(folder, ".*.tmp-*")):    # left by a killed run
        if path in ours:
            os.remove(path)
    now = versions()
    if manifest.get("versions") != now:
        changed = [f"{k} {manifest.get('versions', {}).get(k)} → {v}" for k, v in now.items()
                   if manifest.get("versions", {}).get(k) != v]
        warnings.warn(f"sweep: resuming {folder!r} with other library versions ({', '.join(changed)}); the "
                      "finished chunks were computed with the old ones.", stacklevel=3)
    for name, entry in list(manifest["finished"].items()):
        path = os.path.join(folder, name)
        if _file_sha(path) != entry["sha256"]:
            warnings.warn(f"sweep: {path!r} is missing or does not match its checksum in the manifest; "
                          "recomputing that chunk.", stacklevel=3)
            del manifest["finished"][name]
    manifest["complete"] = len(manifest["finished"]) == identity["chunks"]
    return manifest
