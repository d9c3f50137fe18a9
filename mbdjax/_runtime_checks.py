"""Run-time checks of a compiled simulation, raised on the host where possible.

A check found while the numbers are being computed (a massless body under a Cholesky
solve, the solver giving up, NaN in the state) is attached with `check(x, bad,
message, sink)`. With a `sink` (a list `simulate` passes when its inputs are concrete)
the condition is returned as an ordinary output and `simulate` raises
`SimulationError(message)` after the call: the program holds no host callback,
so JAX's persistent compilation cache can store it. Elsewhere (the caller traces
`simulate` under its own `jit`, `vmap` or `grad`, where no host code can run between
the computation and the caller; `sink=None`) the check is an `equinox.error_if`, which
raises at run time with the same message.

Checks must be attached at the top level of the traced function (not inside a loop
body or a `vmap`), so that their conditions can be returned.

Example:

    >>> import jax.numpy as jnp
    >>> from mbdjax._runtime_checks import check
    >>> found = []
    >>> x = check(jnp.ones(2), jnp.array(True), "x is wrong", found)
    >>> [(bool(bad), message) for bad, message in found]
    [(True, 'x is wrong')]
"""

from __future__ import annotations

import contextlib

import equinox as eqx
import equinox._errors as eqx_errors
import jax.numpy as jnp
import numpy as np

def check(x, bad, message, sink=None):
    """`x`, with the failure condition `bad` (a scalar boolean) reported as `message`:
    appended to `sink` (a list of `(bad, message)` for the host) when one is given, an
    `equinox.error_if` otherwise."""
    if sink is None:
        return eqx.error_if(x, bad, message)
    sink.append((jnp.asarray(bad), message))
    return x


@contextlib.contextmanager
def checked_on_host():
    """Trace a program with equinox's run-time errors off.

    For `simulate` with concrete inputs only: it checks on the host, before the call,
    what diffrax would check at run time (the output times increasing and inside
    [t0, t1], the sign of dt0), and raises its own failures after the call, so the
    compiled program needs no callback and can be cached across processes. Affects
    only programs traced inside the block (a cached program is not traced again).
    """
    if not hasattr(eqx_errors, "EQX_ON_ERROR"):     # another equinox: keep its checks
        yield
        return
    before = eqx_errors.EQX_ON_ERROR
    eqx_errors.EQX_ON_ERROR = "off"
    try:
        yield
    finally:
        eqx_errors.EQX_ON_ERROR = before


def first_failure(flags, messages):
    """The message of the first true flag (host values), or None."""
    flags = np.asarray(flags)
    hit = np.flatnonzero(flags)
    return messages[int(hit[0])] if hit.size else None
