"""XLA's CPU runtime setting for small loops, applied when mbdjax is imported.

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

XLA reads its flags once, when JAX's backend starts (the first array or compile), so
the setting only takes effect when mbdjax is imported before any JAX computation has
run in the process; otherwise a warning says so. `loop_setting()` reports what applies.
"""

from __future__ import annotations

import os
import warnings

OPTION = "xla_cpu_small_while_loop_byte_threshold"
DEFAULT_LOOP_BYTES = 10_000_000
ENV = "MBDJAX_XLA_CPU_LOOP_BYTES"
_EXTRA = "--xla_backend_extra_options="

_state = {"loop_bytes": None, "source": "not applied"}


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
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except Exception:  # a JAX without this helper: assume not started
        return False


def apply() -> None:
    """Set the small-loop limit in `XLA_FLAGS` as described in the module docstring."""
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
    """
    return dict(_state)
