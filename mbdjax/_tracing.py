"""Whether values are concrete (eager) or traced (inside jit, vmap or grad)."""

import jax


def is_concrete(*trees) -> bool:
    """True when no leaf of the given pytrees is a JAX tracer, so Python-level checks
    (ranks, pivoting, error messages with values) can inspect the numbers."""
    return not any(isinstance(leaf, jax.core.Tracer) for tree in trees for leaf in jax.tree_util.tree_leaves(tree))
