"""XLA's CPU runtime settings applied when mbdjax is imported: small loops compiled as
single kernels, and the LAPACK thread guard.

XLA's CPU runtime executes a compiled program as a sequence of kernels ("thunks"), one
per fused operation, at a fixed cost of tens of nanoseconds to a microsecond each. A
simulation is two nested `while` loops (diffrax's step loop and its stage loop) whose
bodies hold a few hundred tiny kernels, so on the CPU that fixed cost, not arithmetic,
is most of the time of a step. XLA can instead compile a whole `while` loop into one
kernel (its *small while loop* pass), but only when the loop touches fewer bytes than
`xla_cpu_small_while_loop_byte_threshold`, 1 kB by default: too small for any
mechanism. mbdjax raises that limit to `DEFAULT_LOOP_BYTES` (10 MB) before JAX starts
its backend, which covers a single simulation of every model in the zoo and leaves
large batched loops (where per-kernel parallelism can pay) as they are. On the
pendulum chain with 10 links this halves the time of a 10 s run (93 → 48 ms, 2 cores).

The pass skips loops that contain custom calls (LAPACK solves, host callbacks), sort or
scatter, so those run as before; results agree to rounding.

Control, through the environment, read once at import:

- `XLA_FLAGS` that already name `xla_cpu_small_while_loop_byte_threshold` are left
  untouched (the user's value wins);
- `MBDJAX_XLA_CPU_LOOP_BYTES=N` sets the limit to `N` bytes instead of the default;
  `MBDJAX_XLA_CPU_LOOP_BYTES=off` leaves `XLA_FLAGS` alone.

**LAPACK thread guard.** jaxlib 0.10.0 to 0.11.1 split a batched LAPACK call (a
vmapped `solve`, `cholesky`, `svd`, ...; a batch of saved points projected at once, a
`simulate_batch`) into tasks on XLA's intra-op thread pool and block the calling pool
thread until they finish. When as many such calls run at once as the pool has threads
(two independent batched solves on a 2-core machine), every thread waits on tasks no
thread is left to run, and the program hangs with 0 % CPU. (jaxlib 0.11.2 and later
no longer parallelize these kernels.) The kernels run serially when the pool has one
thread, which the CPU client sizes from the `NPROC` environment variable, so with an
affected jaxlib mbdjax sets `NPROC=1` at import. On the 2-core reference machine this
costs nothing (`simulate_batch` of 512 pendulum chains: 1.71 → 1.61 s; 64 Bricard
loops: 2.23 → 2.28 s): a simulation's work is a long chain of small kernels, not
large parallel ones. Control, read once at import:

- an `NPROC` already in the environment is left as it is (the user's value wins);
- `MBDJAX_XLA_CPU_THREADS=N` sets `NPROC=N` instead (at your own risk above 1 with an
  affected jaxlib); `MBDJAX_XLA_CPU_THREADS=off` leaves `NPROC` alone.

**Fusion emitters.** Since 2025 XLA's CPU compiler emits fused operations through its
new MLIR "fusion emitters". For mbdjax's programs (a few hundred small fusions in
nested loops) the older elemental emitters compile in about three quarters of the
time with the same speed at run time: on the 2-core reference machine, six zoo
models' simulations compile in 26 s instead of 34 s (slider-crank 2.3 → 1.5 s,
rolling disk 5.2 → 3.1 s, rectifier 7.5 → 4.8 s) and run in 659 ms instead of
666 ms in all; results agree to rounding. mbdjax therefore sets
`--xla_cpu_use_fusion_emitters=false` for the jaxlib releases known to have the flag
(`_EMITTER_JAXLIB`, 0.6.0 up to 0.12; an unknown flag is a fatal error in XLA).
Control, read once at import:

- `XLA_FLAGS` that already name `xla_cpu_use_fusion_emitters` are left untouched;
- `MBDJAX_XLA_CPU_EMITTERS=off` leaves XLA's choice (the fusion emitters).

`thread_setting()` reports what applies to the thread pool, `emitter_setting()` to the
emitters. Both settings are read by XLA once, when
JAX's backend starts (the first array or compile), so they only take effect when mbdjax is imported before any JAX computation has
run in the process; otherwise a warning says so. `loop_setting()` reports what applies.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from importlib import metadata

OPTION = "xla_cpu_small_while_loop_byte_threshold"
DEFAULT_LOOP_BYTES = 10_000_000
ENV = "MBDJAX_XLA_CPU_LOOP_BYTES"
_EXTRA = "--xla_backend_extra_options="

_state = {"loop_bytes": None, "source": "not applied"}

THREADS_ENV = "MBDJAX_XLA_CPU_THREADS"
# jaxlib releases whose batched LAPACK kernels block a pool thread on tasks queued to
# the same pool (from 0.10.0; 0.11.2 builds them serial again).
_BLOCKING_LAPACK = ((0, 10, 0), (0, 11, 2))
_threads = {"threads": None, "source": "not applied"}

EMITTERS_ENV = "MBDJAX_XLA_CPU_EMITTERS"
EMITTER_FLAG = "--xla_cpu_use_fusion_emitters=false"
# jaxlib releases that have the flag (checked in their binaries), upper bound exclusive
_EMITTER_JAXLIB = ((0, 6, 0), (0, 12, 0))
_emitters = {"fusion_emitters": None, "source": "not applied"}


def _version_tuple(text: str) -> tuple:
    """`"0.10.2"` → `(0, 10, 2)`; missing parts are 0 and a suffix (`rc1`, `.dev…`) is
    ignored."""
    parts = re.match(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", text.strip())
    return tuple(int(x or 0) for x in parts.groups()) if parts else (0, 0, 0)


def lapack_blocks_pool(version: str | None = None) -> bool:
    """Whether this jaxlib (or `version`) runs batched LAPACK calls as blocking tasks on
    XLA's intra-op pool, which can deadlock (see the module docstring)."""
    if version is None:
        try:
            version = metadata.version("jaxlib")
        except metadata.PackageNotFoundError:
            return False
    lo, hi = _BLOCKING_LAPACK
    return lo <= _version_tuple(version) < hi


def _requested_threads(value: str | None, blocking: bool) -> int | None:
    """The `NPROC` asked for in `MBDJAX_XLA_CPU_THREADS` (None: leave it alone)."""
    if value is None or value.strip() == "":
        return 1 if blocking else None
    if value.strip().lower() in ("off", "none", "no", "false"):
        return None
    try:
        n = int(value.strip())
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(
            f"{THREADS_ENV}={value!r}: expected a number of threads for XLA's CPU pool (a positive "
            "integer; 1 avoids the batched-LAPACK deadlock of jaxlib 0.10.0-0.11.1) or 'off' to "
            "leave NPROC alone."
        )
    return n


def _requested_bytes(value: str | None) -> int | None:
    """The limit asked for in `MBDJAX_XLA_CPU_LOOP_BYTES` (None for `off`)."""
    if value is None or value.strip() == "":
        return DEFAULT_LOOP_BYTES
    if value.strip().lower() in ("off", "none", "no", "false"):
        return None
    try:
        n = int(value.strip())
    except ValueError:
        n = -1
    if n < 0:
        raise ValueError(
            f"{ENV}={value!r}: expected a number of bytes (a non-negative integer, e.g. "
            f"{DEFAULT_LOOP_BYTES}) or 'off' to leave XLA_FLAGS alone."
        )
    return n


def with_loop_bytes(flags: str, n: int) -> str:
    """`flags` (an `XLA_FLAGS` string) with the small-loop limit set to `n` bytes.

    The option lives inside XLA's `--xla_backend_extra_options=k=v,k2=v2` flag, so an
    existing one gets the entry appended instead of a second flag (which would replace
    the first).
    """
    entry = f"{OPTION}={n}"
    parts = flags.split()
    for i, part in enumerate(parts):
        if part.startswith(_EXTRA):
            value = part[len(_EXTRA):]
            parts[i] = _EXTRA + (f"{value},{entry}" if value else entry)
            return " ".join(parts)
    return " ".join(parts + [_EXTRA + entry])


def _backend_started() -> bool:
    if "jax" not in sys.modules:        # JAX not even imported: its backend cannot run
        return False
    try:
        # only once JAX is imported (`import mbdjax` sets XLA's flags before it), and inside
        # the try: a JAX without this private module counts as not started
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except Exception:  # a JAX without this helper: assume not started
        return False


def _jaxlib_version():
    try:
        return _version_tuple(metadata.version("jaxlib"))
    except metadata.PackageNotFoundError:
        return None


def _apply_emitters() -> None:
    """Choose XLA's elemental emitters over its fusion emitters (module docstring)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_use_fusion_emitters" in flags:
        _emitters.update(fusion_emitters=None, source="XLA_FLAGS (set by the user)")
        return
    if os.environ.get(EMITTERS_ENV, "").strip().lower() in ("off", "none", "no", "false"):
        _emitters.update(fusion_emitters=None, source=f"{EMITTERS_ENV}=off")
        return
    version = _jaxlib_version()
    lo, hi = _EMITTER_JAXLIB
    if version is None or not lo <= version < hi:
        _emitters.update(fusion_emitters=None, source="not applied: this jaxlib is not known to have the flag")
        return
    if _backend_started():
        _emitters.update(fusion_emitters=None, source="not applied: JAX's backend had started")
        return
    os.environ["XLA_FLAGS"] = (flags + " " + EMITTER_FLAG).strip()
    _emitters.update(fusion_emitters=False, source="mbdjax")


def emitter_setting() -> dict:
    """What mbdjax did with XLA's CPU fusion emitters at import.

    Returns `{"fusion_emitters": False | None, "source": str}`: False when mbdjax
    turned them off (elemental emitters: shorter compiles), None when it left XLA's
    choice, and why (`"mbdjax"`, `"XLA_FLAGS (set by the user)"`,
    `"MBDJAX_XLA_CPU_EMITTERS=off"`, `"not applied: …"`).

    Example:

        >>> import mbdjax as mbd
        >>> sorted(mbd.xla_emitter_setting())
        ['fusion_emitters', 'source']
    """
    return dict(_emitters)


def apply() -> None:
    """Set the small-loop limit in `XLA_FLAGS`, the emitter choice and the LAPACK
    thread guard (`NPROC`) as described in the module docstring."""
    _apply_threads()
    _apply_emitters()
    flags = os.environ.get("XLA_FLAGS", "")
    if OPTION in flags:
        _state.update(loop_bytes=None, source="XLA_FLAGS (set by the user)")
        return
    n = _requested_bytes(os.environ.get(ENV))
    if n is None:
        _state.update(loop_bytes=None, source=f"{ENV}=off")
        return
    if _backend_started():
        _state.update(loop_bytes=None, source="not applied: JAX's backend had started")
        warnings.warn(
            "mbdjax was imported after JAX had started its backend, so XLA's CPU setting "
            f"for small loops ({OPTION}) could not be applied; simulations on the CPU "
            "then run slower (half the speed for the 10-link pendulum chain). Import mbdjax before running any JAX computation, or "
            f"set XLA_FLAGS='{_EXTRA}{OPTION}={n}' before starting Python "
            f"({ENV}=off silences this).",
            stacklevel=3,
        )
        return
    os.environ["XLA_FLAGS"] = with_loop_bytes(flags, n)
    _state.update(loop_bytes=n, source="mbdjax")


def loop_setting() -> dict:
    """What mbdjax did with XLA's CPU small-loop limit at import.

    Returns `{"loop_bytes": int | None, "source": str}`: the limit mbdjax set (None when
    it set none) and why (`"mbdjax"`, `"XLA_FLAGS (set by the user)"`,
    `"MBDJAX_XLA_CPU_LOOP_BYTES=off"` or `"not applied: JAX's backend had started"`).

    Example:

        >>> import mbdjax as mbd
        >>> sorted(mbd.xla_loop_setting())
        ['loop_bytes', 'source']
    """
    return dict(_state)


def _apply_threads() -> None:
    """Set `NPROC` for the LAPACK thread guard (module docstring)."""
    if "NPROC" in os.environ:
        _threads.update(threads=None, source=f"NPROC={os.environ['NPROC']} (already set)")
        return
    blocking = lapack_blocks_pool()
    n = _requested_threads(os.environ.get(THREADS_ENV), blocking)
    if n is None:
        _threads.update(threads=None, source=(f"{THREADS_ENV}=off" if os.environ.get(THREADS_ENV)
                                              else "not needed: this jaxlib runs batched LAPACK serially"))
        return
    if _backend_started():
        _threads.update(threads=None, source="not applied: JAX's backend had started")
        if blocking:
            warnings.warn(
                "mbdjax was imported after JAX had started its backend, so it could not limit XLA's "
                "CPU thread pool; with this jaxlib (0.10.0-0.11.1) two batched linear solves running "
                "at once can hang the process (simulate_batch, many saved points). Import mbdjax "
                f"before running any JAX computation, or set NPROC={n} before starting Python "
                f"({THREADS_ENV}=off silences this).",
                stacklevel=3,
            )
        return
    os.environ["NPROC"] = str(n)
    _threads.update(threads=n, source="mbdjax")


def thread_setting() -> dict:
    """What mbdjax did with the size of XLA's CPU thread pool (`NPROC`) at import.

    Returns `{"threads": int | None, "source": str}`: the pool size mbdjax set (None
    when it set none) and why (`"mbdjax"`, `"NPROC=… (already set)"`,
    `"MBDJAX_XLA_CPU_THREADS=off"`, `"not needed: …"` or `"not applied: …"`).

    Example:

        >>> import mbdjax as mbd
        >>> sorted(mbd.xla_thread_setting())
        ['source', 'threads']
    """
    return dict(_threads)
