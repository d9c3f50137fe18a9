"""Strict JAX for every test: float64, and rank promotion is an error."""

import jax
import jax.numpy as jnp
import pytest

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")


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
    import gc

    jax.clear_caches()
    gc.collect()
