"""JAX's persistent compilation cache, on by default in a per-user folder.

A simulation compiles once per model and settings; with the cache, a second process
running the same model with the same settings loads the compiled program from disk
instead of compiling it again (the main job of the README compiles
its simulation in 8–10 s; see `experiments/bench/latency.py`). `import mbdjax` points JAX at the folder:

- `$MBDJAX_COMPILATION_CACHE` if set to a path; `off` (or `0`, `no`, `false`)
  turns the cache off;
- else `$XDG_CACHE_HOME/mbdjax/jax`, by default `~/.cache/mbdjax/jax`.

The folder is kept near 2 GiB (`MAX_BYTES`): a process that added programs removes
the oldest ones when it exits, until the folder is within the bound (`prune`). JAX's
own bound (`jax_compilation_cache_max_size`) is not used: it takes a lock and reads
every entry's access-time file on each write, which grows with the folder (thousands
of entries once small programs are kept) and serializes parallel processes. A size the
user gave JAX wins, and then JAX evicts. Deleting the folder is always safe. A cache folder the user gave JAX (`JAX_COMPILATION_CACHE_DIR` or
`jax.config.update("jax_compilation_cache_dir", ...)`) wins. `mbdjax --no-cache ...`
turns it off for one command.

JAX stores only programs whose compilation took at least
`jax_persistent_cache_min_compile_time_secs` (1 s by default). mbdjax lowers that to
`MIN_COMPILE_SECS` (0: every program) where the user has not set it: building an
example, checking it and computing its outputs compile dozens of small programs of
20–100 ms each (the slider-crank's assembly 65 of them, 4 s in all), which the
default would compile again in every process. JAX stores no program that holds a host
callback: `simulate` raises its run-time failures on the host after the call for that
reason (`mbdjax._runtime_checks`).
"""

from __future__ import annotations

import atexit
import os
import sys

ENV = "MBDJAX_COMPILATION_CACHE"
#: The folder is kept near this size (oldest programs go first; see `prune`).
MAX_BYTES = 2 * 1024**3
#: Programs that took at least this long to compile are stored (JAX's default is 1 s).
MIN_COMPILE_SECS = 0.0
_MIN_ENV = "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"
_OFF = ("off", "0", "no", "false", "none")
_state = {"folder": None, "source": "not applied"}
_SIZE_ENV = "JAX_COMPILATION_CACHE_MAX_SIZE"
_ENTRY, _ATIME = "-cache", "-atime"       # the suffixes of JAX's entries
#: The subfolder of the exported example programs (`mbdjax._exported`); defined here
#: so that pruning at exit reads it without importing `_exported` (and JAX).
EXPORTED_SUBFOLDER = "mbdjax-exported"


def default_folder() -> str:
    """The per-user cache folder: `$XDG_CACHE_HOME/mbdjax/jax` or `~/.cache/mbdjax/jax`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mbdjax", "jax")


def _jax_folder():
    """The folder JAX is already set to use, if any (without importing JAX)."""
    if "jax" in sys.modules:
        return sys.modules["jax"].config.jax_compilation_cache_dir
    return os.environ.get("JAX_COMPILATION_CACHE_DIR")


def _point_jax_at(folder):
    if "jax" in sys.modules:
        config = sys.modules["jax"].config
        config.update("jax_compilation_cache_dir", folder)
        if folder is not None and _MIN_ENV not in os.environ and config.jax_persistent_cache_min_compile_time_secs == 1.0:
            config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECS)
    elif folder is None:
        os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)
    else:
        os.environ["JAX_COMPILATION_CACHE_DIR"] = folder    # JAX reads them at import
        os.environ.setdefault(_MIN_ENV, str(MIN_COMPILE_SECS))


def apply() -> None:
    """Turn the cache on as described in the module docstring (called by `import mbdjax`)."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() in _OFF:
        _state.update(folder=None, source=f"{ENV}={value}")
        return
    given = _jax_folder()
    if given:
        _state.update(folder=given, source="JAX's setting (set by the user)")
        return
    folder = value or default_folder()
    _point_jax_at(folder)
    _state.update(folder=folder, source=ENV if value else "mbdjax default", stamp=_stamp(folder))
    atexit.register(_prune_at_exit)


def _stamp(folder):
    """The folder's modification time (it changes when an entry is added), or None."""
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return None


def _jax_bounds_it() -> bool:
    """Whether the user gave JAX a size bound of its own (then JAX evicts)."""
    if "jax" in sys.modules:
        return sys.modules["jax"].config.jax_compilation_cache_max_size != -1
    return os.environ.get(_SIZE_ENV, "-1").strip() != "-1"


def _prune_at_exit():
    folder = _state.get("folder")
    if folder and _state["source"] in ("mbdjax default", ENV) and not _jax_bounds_it():
        stamp = _stamp(folder)
        if stamp is not None and stamp != _state.get("stamp"):
            try:
                prune(folder, MAX_BYTES)
            except OSError:
                pass        # an unreadable folder is left as it is; the cache stays correct


def prune(folder: str, max_bytes: int = MAX_BYTES) -> int:
    """Remove the oldest compiled programs in `folder` until it holds at most
    `max_bytes`; return how many were removed.

    Age is the entry's modification time (when it was written). Only JAX's entries
    (`*-cache`, with their `*-atime` companions) and the exported example programs
    (`mbdjax-exported/*.exported`, with their `.json`; `mbdjax._exported`) are
    touched; one that another process removed first is skipped. A process that added
    programs calls this when it exits.

    Example:

        >>> import os, tempfile
        >>> from mbdjax._compilation_cache import prune
        >>> d = tempfile.mkdtemp()
        >>> for i, name in enumerate(("old", "new")):
        ...     with open(os.path.join(d, name + "-cache"), "wb") as f:
        ...         _ = f.write(bytes(100))
        ...     os.utime(os.path.join(d, name + "-cache"), (i, i))
        >>> prune(d, max_bytes=150), sorted(os.listdir(d))
        (1, ['new-cache'])
    """
    entries, total = [], 0
    for where, suffix, companion in ((folder, _ENTRY, _ATIME),
                                     (os.path.join(folder, EXPORTED_SUBFOLDER), ".exported", ".json")):
        try:
            with os.scandir(where) as found:
                for entry in found:
                    if entry.name.endswith(suffix) and entry.is_file(follow_symlinks=False):
                        info = entry.stat(follow_symlinks=False)
                        entries.append((info.st_mtime_ns, entry.path, info.st_size, suffix, companion))
                        total += info.st_size
        except FileNotFoundError:
            continue
    removed = 0
    for _, path, size, suffix, companion in sorted(entries):
        if total <= max_bytes:
            break
        try:
            os.remove(path)
        except FileNotFoundError:
            continue
        try:
            os.remove(path[: -len(suffix)] + companion)
        except FileNotFoundError:
            pass
        total -= size
        removed += 1
    return removed


def disable(reason: str = "turned off") -> None:
    """Turn off the cache mbdjax turned on (`mbdjax --no-cache`); a folder the user gave
    JAX is left alone."""
    if _state["source"] in ("mbdjax default", ENV):
        _point_jax_at(None)
        _state.update(folder=None, source=reason)


def cache_setting() -> dict:
    """Where compiled programs are cached across processes.

    Returns `{"folder": str | None, "source": str}`: the folder (None: no persistent
    cache) and who chose it (`"mbdjax default"`, `"MBDJAX_COMPILATION_CACHE"`,
    `"JAX's setting (set by the user)"`, `"MBDJAX_COMPILATION_CACHE=off"`, `"--no-cache"`).

    Example:

        >>> import mbdjax as mbd
        >>> sorted(mbd.compilation_cache_setting())
        ['folder', 'source']
    """
    return {"folder": _state["folder"], "source": _state["source"]}
