"""Strict JAX for every test: float64, and rank promotion is an error; and XLA's CPU
code generator at optimisation level 0, to compile in two thirds of the time.

The suite compiles some two thousand small programs and runs each for milliseconds,
so most of its time is XLA compiling; LLVM's optimisation passes are a third of that.
Level 0 keeps every XLA (HLO) pass and changes only how the machine code is
optimised, so results agree to rounding, while compiled programs run about half as
fast: six zoo simulations compile in 18 s instead of 28 s and run in 1.3 s instead of
0.7 s (2 cores). It is set here, before JAX starts, for this process and the
subprocesses the tests start; `XLA_FLAGS` that already name
`xla_backend_optimization_level` (for instance `=2`, to test with the code users get)
are left as they are.

Python's cyclic garbage collector is off while a test module runs and collects once at
its end (`_release_compiled_programs`): tracing and lowering allocate millions of
short-lived objects, and the collector's passes over everything JAX holds took about a
tenth of the suite's time, while a module's garbage stays small (peak memory of a
worker unchanged, 1.4 GB).
"""

import gc
import os

_OPT = "xla_backend_optimization_level"
if _OPT not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --{_OPT}=0").strip()

import jax  # noqa: E402  (after XLA_FLAGS, which the backend reads when it starts)
import jax.numpy as jnp  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")
gc.disable()


@pytest.fixture(scope="module")
def unit_pendulum():
    """Point mass (1 kg) on a massless unit rod in Cartesian coordinates, g = 9.81:
    Φ = ½(x² + y² − 1), one degree of freedom."""
    import mbdjax as mbd

    return mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2), potential=lambda q, t, p: 9.81 * q[1],
                     holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]), constraint_names=("rod",))


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop every compiled program after each test module.

    A full run compiles thousands of XLA programs; each keeps its machine code mapped,
    and a single process can exhaust the kernel's memory-map limit (vm.max_map_count,
    65530 by default), which crashes the compiler. Modules share nothing compiled, so
    clearing between them costs nothing but keeps the process small.
    """
    yield
    jax.clear_caches()
    gc.collect()
