"""Simulation programs of the built-in examples kept as exported StableHLO across
processes, so that a second process skips tracing them.

JAX's persistent compilation cache (`mbdjax._compilation_cache`) spares a second
process the XLA compilation, but not the Python tracing and lowering that produce the
program and its cache key: for the slider-crank of the README's main job that is
1.3 s of a warm run's 5 s, while loading and running the compiled program takes 0.2 s.
For a model whose whole definition is known from its name and the installed code (a
built-in example from `mbdjax.models.get`), the traced program is stored with
`jax.export` the first time and deserialized the next time, under a key that holds
everything the trace depended on:

- the example's name, the digest of mbdjax's own source files and the versions of
  jax, jaxlib, diffrax, equinox, lineax and optimistix (a changed installation makes a
  new key);
- the values of the initial state and the parameters, and the start time (the
  formulation's preparation, the redundant rows and the coordinate partition are
  decided from them on the host);
- every other argument that shapes the program: the formulation, stabilization,
  solver and adjoint (their types and values), the number of output times, max_steps,
  drift_tol, the settings recorded in the trajectory, and JAX's float64 switch.

An object whose description is not reproducible (one that prints its memory address)
only makes the key new each time, never wrong. Models built by the user are not
stored: their functions cannot be named across processes. The files live next to the
compiled programs (`<cache folder>/mbdjax-exported`) and are on and off with that
cache (`MBDJAX_COMPILATION_CACHE=off`, `mbdjax --no-cache`); a file that cannot be read
is ignored and written again.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from importlib import metadata

import jax
import numpy as np
from jax import export

from ._compilation_cache import EXPORTED_SUBFOLDER, cache_setting

FORMAT = 2
SUBFOLDER = EXPORTED_SUBFOLDER
_PACKAGES = ("jax", "jaxlib", "diffrax", "equinox", "lineax", "optimistix")
_state = {"digest": None}


def _source_digest():
    """sha256 of mbdjax's source files (names and contents) and the versions of the
    packages whose code the programs contain; computed once per process."""
    if _state["digest"] is None:
        h = hashlib.sha256(f"format {FORMAT}".encode())
        root = os.path.dirname(os.path.abspath(__file__))
        for folder, dirs, files in sorted(os.walk(root)):
            dirs.sort()
            for name in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(folder, name)
                h.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as fh:
                    h.update(fh.read())
        for package in _PACKAGES:
            try:
                h.update(f"{package}={metadata.version(package)}".encode())
            except metadata.PackageNotFoundError:
                h.update(f"{package}=none".encode())
        _state["digest"] = h.hexdigest()
    return _state["digest"]


def example_name(model):
    """The name of the built-in example whose model is `model` (built by
    `mbdjax.models.get` in this process), or None."""
    models = sys.modules.get("mbdjax.models")
    if models is None:
        return None
    for name, ex in getattr(models, "_BUILT", {}).items():
        if ex.model is model:
            return name
    return None


def _describe(tree):
    """A reproducible description of a pytree: its structure, and each leaf's dtype,
    shape and bytes (arrays) or repr (anything else)."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    parts = [str(treedef)]
    for leaf in leaves:
        if isinstance(leaf, (jax.Array, np.ndarray, np.generic, float, int, bool)):
            a = np.asarray(leaf)
            parts.append(f"{a.dtype}{a.shape}:{hashlib.sha256(a.tobytes()).hexdigest()}")
        else:
            parts.append(repr(leaf))
    return "|".join(parts)


def folder():
    """The folder of the exported programs, or None when the compilation cache is off."""
    base = cache_setting()["folder"]
    return None if base is None else os.path.join(base, SUBFOLDER)


def key(name, values, statics):
    """The file key of a program: the example `name`, the arrays and objects it was
    traced with (`values`, described by value) and the hashable settings (`statics`);
    None when their description is not reproducible (an object printed with its
    memory address): a fresh trace is cheaper than a key that never matches."""
    described = _describe(values) + "|" + repr(statics)
    if " at 0x" in described:
        return None
    h = hashlib.sha256(_source_digest().encode())
    h.update(f"{name}|x64={jax.config.jax_enable_x64}|{jax.default_backend()}".encode())
    h.update(described.encode())
    return h.hexdigest()[:40]


def load(where, k):
    """`(exported, info)` stored under key `k`, or None (missing or unreadable)."""
    path = os.path.join(where, k)
    try:
        with open(path + ".json") as fh:
            info = json.load(fh)
        with open(path + ".exported", "rb") as fh:
            blob = bytearray(fh.read())
        return export.deserialize(blob), info
    except Exception:  # noqa: BLE001 - a missing or damaged file: trace again
        return None


def store(where, k, exported, info):
    """Write `exported` and its `info` (JSON) under key `k`, atomically; a folder that
    cannot be written is skipped (the run does not depend on it)."""
    path = os.path.join(where, k)
    files = [(".exported", exported.serialize(), "wb"), (".json", json.dumps(info), "w")]
    try:
        os.makedirs(where, exist_ok=True)
        for suffix, data, mode in files:
            tmp = f"{path}{suffix}.{os.getpid()}.tmp"
            with open(tmp, mode) as fh:
                fh.write(data)
            os.replace(tmp, path + suffix)
    except OSError:
        pass


def available():
    """Whether `jax.export` can serialize here (it needs the flatbuffers package)."""
    try:
        # here, as a probe: an ImportError means no serialization (flatbuffers missing)
        import flatbuffers  # noqa: F401
        import jax.export  # noqa: F401
    except ImportError:
        return False
    return True
