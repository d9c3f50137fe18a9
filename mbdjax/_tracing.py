"""Tracing helpers: whether values are concrete (eager) or traced (inside jit, vmap or
grad), and a small store of compiled functions keyed by the settings they depend on."""

import collections

import jax


def is_concrete(*trees) -> bool:
    """True when no leaf of the given pytrees is a JAX tracer, so Python-level checks
    (ranks, pivoting, error messages with values) can inspect the numbers."""
    return not any(isinstance(leaf, jax.core.Tracer) for tree in trees for leaf in jax.tree_util.tree_leaves(tree))


class CompiledCache:
    """A small least-recently-used store of compiled functions.

    Keys name the settings a compilation depends on, including `id()`s of objects
    (models, output functions); each entry keeps those objects alive, so an id cannot
    be reused by a new object while its entry exists. `get(key, keep, build)` returns
    the stored function or builds, stores and returns a new one; an unhashable key
    builds one for this call only.
    """

    def __init__(self, size: int = 16):
        self.size = int(size)
        self._entries = collections.OrderedDict()

    def get(self, key, keep, build):
        try:
            hash(key)
        except TypeError:
            return build()
        if key in self._entries:
            self._entries.move_to_end(key)
            return self._entries[key][1]
        fn = build()
        self._entries[key] = (keep, fn)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return fn

    def values(self):
        """The stored `(kept objects, function)` pairs, oldest first."""
        return list(self._entries.values())
