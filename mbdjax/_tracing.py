"""Tracing helpers: whether values are concrete (eager) or traced (inside jit, vmap or
grad), and a small store of compiled functions keyed by the settings they depend on."""

import collections
import contextlib
import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax._src import core as jax_src_core


def is_concrete(*trees) -> bool:
    """True when no leaf of the given pytrees is a JAX tracer, so Python-level checks
    (ranks, pivoting, error messages with values) can inspect the numbers."""
    return not any(isinstance(leaf, jax.core.Tracer) for tree in trees for leaf in jax.tree_util.tree_leaves(tree))


class _Staged(Exception):
    """A leaf whose value exists only when a compiled program runs."""


def _unwrap(x):
    """`(axes, value)`: the batch axes of the vmaps wrapping `x` (outermost first) and
    the value underneath its differentiation and vmap tracers, None where a staging
    trace (jit) holds it."""
    axes = []
    while isinstance(x, jax.core.Tracer):
        if hasattr(x, "primal"):        # jax.jvp / jax.jacfwd (JVPTracer), jax.grad (LinearizeTracer)
            x = x.primal
        elif hasattr(x, "batch_dim"):   # jax.vmap (BatchTracer)
            if isinstance(x.batch_dim, int):
                axes.append(x.batch_dim)
            x = x.val
        else:                           # staged for compilation (jit): no value yet
            return axes, None
    return axes, x


def _leaf_value(x):
    axes, x = _unwrap(x)
    if x is None:
        raise _Staged
    x = np.asarray(x)
    for axis in reversed(axes):         # the innermost value carries every batch axis
        x = np.take(x, 0, axis=axis)    # a vmap's first member
    return x


def is_batched(*trees) -> bool:
    """True when a leaf of the given pytrees is batched by an enclosing `jax.vmap`
    (a vmap tracer, directly or under differentiation tracers), as the members of a
    vectorized `simulate_batch` are. Leaves that are only staged by `jax.jit` (the
    members of a sequential batch, a caller's jit) are not batched."""
    return any(_unwrap(leaf)[0] for tree in trees for leaf in jax.tree_util.tree_leaves(tree))


def picked_leaves(tree, pick):
    """`(picked, rebuild)`: the leaves of `tree` for which `pick(position)` is true, and
    a function that takes new values for them and returns `tree` with those leaves
    replaced (the others kept as they are)."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    chosen = [k for k in range(len(leaves)) if pick(k)]

    def rebuild(*values):
        full = list(leaves)
        for k, x in zip(chosen, values):
            full[k] = x
        return jax.tree_util.tree_unflatten(treedef, full)

    return [leaves[k] for k in chosen], rebuild


def host_value(tree):
    """The values of `tree` for a host-side decision, or None where they do not exist
    yet.

    Concrete leaves are read as they are. A tracer of differentiation (`jax.grad`,
    `jax.jvp`, `jax.jacfwd`, ...) carries its primal value, which is read; a tracer of
    `jax.vmap` gives its first member (as `simulate_batch` reads its first member).
    Under `jax.jit` (and any other staging trace) a leaf has no value until the
    compiled program runs: then None. The result is NumPy arrays, for decisions such
    as the rank of the constraint Jacobian at the initial state
    (`mbdjax._redundancy.select_rows`), never for values that flow into the
    computation (they would carry no derivative)."""
    try:
        return jax.tree_util.tree_map(_leaf_value, tree)
    except _Staged:
        return None


def jvp_of_perturbed(fn, primals, tangents):
    """`jax.jvp(fn, primals, tangents)` inside a derivative rule registered with
    `defjvp(..., symbolic_zeros=True)`: tangent leaves that are
    `jax.custom_derivatives.SymbolicZero` (inputs the caller does not differentiate)
    are held fixed instead of carrying explicit zeros through `fn`.

    A rule without symbolic zeros receives zeros for every input without a tangent,
    and differentiates along them: under `jax.jacfwd` with respect to the link masses
    of the 10-link chain, the Schur solve's rule also propagated the lengths, the
    gravity and the model's own arrays through the second derivatives of `Φ`.

    Arguments: `primals` a tuple of the arguments of `fn`, `tangents` the same
    structure with arrays or SymbolicZero leaves. Returns `(fn(*primals), tangent)`;
    the tangent is zeros where nothing is perturbed."""
    dleaves = jax.tree_util.tree_structure(tuple(primals)).flatten_up_to(tuple(tangents))
    perturbed = [not isinstance(d, jax.custom_derivatives.SymbolicZero) for d in dleaves]
    if not any(perturbed):
        out = fn(*primals)
        return out, jax.tree_util.tree_map(jnp.zeros_like, out)
    xs, rebuild = picked_leaves(tuple(primals), perturbed.__getitem__)
    return jax.jvp(lambda *xs: fn(*rebuild(*xs)), xs, [d for d, on in zip(dleaves, perturbed) if on])


def device_array(x, dtype=float):
    """`x` as a JAX array on the default device, converted on the host: `jnp.asarray`
    of host data compiles a small conversion program per shape (traced, lowered and
    looked up in the compilation cache, in every process), `device_put` of a NumPy
    array does not. Traced values pass through `jnp.asarray`; host values stay concrete
    under an enclosing trace, so the host-side decisions of the callers still see
    numbers."""
    if isinstance(x, jax.core.Tracer):
        return jnp.asarray(x, dtype=dtype)
    dtype = jax.dtypes.canonicalize_dtype(dtype)      # float32 where x64 is off, silently
    if isinstance(x, jax.Array) and x.dtype == dtype and not x.weak_type:
        return x            # (a weakly typed array would make a different program)
    # concrete also inside an enclosing trace (under a caller's jit, device_put of host
    # data would be staged into the caller's program, and nothing about it readable)
    with concrete_evaluation():
        return jax.device_put(np.asarray(x, dtype=dtype))


#: XLA options for the small programs that run once per call on little data (a
#: model's construction checks, the assembly, `check`, the start-up decisions of
#: `simulate`, the per-time outputs): LLVM's optimisation level 0 compiles them in
#: about half the time, and their run time (microseconds to milliseconds) does not
#: matter. The simulation's own loop keeps XLA's default. JAX takes options for a
#: top-level program only: called under an enclosing trace (the caller's `jit`,
#: `grad`, `vmap`), these functions are plain `jit`s inlined into the caller's program.
ONE_SHOT = {"xla_backend_optimization_level": 0}


def concrete_evaluation():
    """A context in which JAX operations on concrete values give concrete values also
    under an enclosing trace (a caller's `jit` or `grad`: `jax.ensure_compile_time_eval`,
    which evaluates operation by operation), so host-side decisions can read them; at
    the top level nothing changes, and compiled functions run as compiled programs."""
    return contextlib.nullcontext() if top_level() else jax.ensure_compile_time_eval()


def top_level():
    """Whether no JAX trace is under way (a call here starts its own program)."""
    clean = getattr(jax_src_core, "trace_state_clean", None)
    return clean is not None and clean()


def _one_shot(plain, tuned, fun):
    @functools.wraps(fun)
    def call(*args, **kwargs):
        return (tuned if top_level() else plain)(*args, **kwargs)

    return call


def one_shot_jit(fun):
    """`jax.jit(fun)`, compiled with `ONE_SHOT` when called at top level."""
    return _one_shot(jax.jit(fun), jax.jit(fun, compiler_options=ONE_SHOT), fun)


def one_shot_filter_jit(fun):
    """`equinox.filter_jit(fun)`, compiled with `ONE_SHOT` when called at top level."""
    return _one_shot(eqx.filter_jit(fun), eqx.filter_jit(fun, compiler_options=ONE_SHOT), fun)


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
