"""Many simulations in one compiled call: `simulate_batch`.

Any of the initial positions, the initial velocities and the parameter leaves may
carry a leading batch axis; the others are shared by every member. The batch is one
jit-compiled call of `simulate` over the members, run in one of two ways
(`members=`):

- **vectorized** (`jax.vmap`): every operation acts on all members at once. With an
  adaptive solver the members advance in lockstep: every member takes a step of its
  own size at each iteration, and the loop runs until the slowest member reaches
  `t1` (finished members idle), so the batch costs what its hardest member costs.
  This is what an accelerator wants, and what a CPU wants where a lone run's solver
  loop calls a library (LAPACK): the call then serves all members.
- **sequential** (`jax.lax.map`): one member after another, each a lone run with its
  own steps. On a CPU, a lone run whose loops hold no library call compiles into one
  kernel (`mbdjax._numerics.xla_cpu`), and one member after another then beats the vectorized
  batch, whose arrays over all members fall out of the cache: 1024 10-link chains
  over 0.25 s took 1.07 s against 1.74 s, 1024 four-bars over 1 s 1.60 against
  2.31 s; with LAPACK in the loop the other way round (the slider-crank 0.56 against
  0.27 s for 256, the top 4.8 against 1.8 s).

`"auto"` (the default) picks sequential on one CPU device when the lone run's solver
loops hold no library call (read from its traced program, `_loops_call_libraries`),
and vectorized otherwise; the choice is in the trajectory's settings.
"""

from __future__ import annotations

import contextlib
import dataclasses

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .._errors import SimulationError
from .._integrate import failure_error, check_times, save_times, simulate, simulate_reporting
from .._stabilization import resolve_stabilization
from .._params import flatten_params, float_params, nonfinite_entries
from .._runtime_checks import checked_on_host, first_failure
from .._singular import singular_configuration_error
from .._redundancy import select_rows
from .._tracing import CompiledCache, is_concrete, picked_leaves
from .._trajectory import Trajectory


_COMPILED = CompiledCache(16)


def _rows_at_start(model, q0, q_ax, p, p_axes, t0):
    """The independent constraint rows at the first member's initial state
    (`mbdjax._redundancy.select_rows`): decided once, outside the compiled call, and
    used by every member (read through `jax.grad`/`jax.vmap` tracers as `select_rows`
    does). None when the inputs are staged (simulate_batch inside `jax.jit`): the
    members then solve with a least-squares fallback, and warn."""
    first = lambda x, ax: x if ax is None else x[0]  # noqa: E731
    leaves, treedef = jax.tree_util.tree_flatten(p)
    p1 = jax.tree_util.tree_unflatten(treedef, [first(x, ax) for x, ax in zip(leaves, p_axes)])
    return select_rows(model, first(q0, q_ax), t0, p1)


def _compiled(model, axes, static, dynamic_keys, rows, report, members):
    """The jitted `simulate` over the members for this model, batch layout and
    settings, and a dict the trace fills with the static parts of the members' failure
    report and how the members run (`"members"`); kept (16 at most) so repeated batches
    with new values reuse the compilation. The model and the hashable settings are
    closed over (static); arrays are arguments.

    `members`: `"vectorized"` (`jax.vmap`), `"sequential"` (`jax.lax.map`), or
    `"auto"`: the sequential program is traced at the first call and kept when its
    solver loops hold no library call (`_loops_call_libraries`); otherwise the
    vectorized one is built (`_AutoMembers`).

    With `report`, each member's `simulate` runs as `mbdjax._integrate.simulate_reporting`:
    the program returns `(traj, flags, stop)`, the failure conditions as arrays (no host
    callback), for `_first_failure` to read after the call. Otherwise it returns the
    trajectory alone, and a failure is an in-graph error (the caller's trace)."""

    def build():
        q_ax, v_ax, p_axes = axes
        p_axes = jax.tree_util.tree_unflatten(p_axes[0], list(p_axes[1]))
        info = {}

        def program(vectorized):
            def one(q, v, pp, kwargs):
                # The members project by the block solve, at the saved points too,
                # vectorized or not (`Projection.block_solves`; 1024 sequential 10-link
                # chains with 51 outputs each: 1.25 → 1.05 s against the dense Cholesky).
                stabilization = resolve_stabilization(kwargs.get("stabilization", "projection"))
                kwargs = {**kwargs, "stabilization": stabilization.with_block_solves()}
                if not report:
                    return simulate(model, q, v, params=pp, rows=rows, **kwargs)
                found = {}
                traj = simulate_reporting(found, model, q, v, params=pp, rows=rows, **kwargs)
                info.update(messages=found["messages"], work=found["work"], formulation=found["formulation"])
                return traj, found["flags"], found["stop"]

            def run(q0, qd0, p, dynamic):
                kwargs = {**dict(static), **dynamic}
                fn = lambda q, v, pp: one(q, v, pp, kwargs)  # noqa: E731
                if vectorized:
                    return jax.vmap(fn, in_axes=(q_ax, v_ax, p_axes))(q0, qd0, p)
                return _one_after_another(fn, (q_ax, v_ax, p_axes), (q0, qd0, p))

            return jax.jit(run)

        if members == "auto":
            return _AutoMembers(program, info), info
        info["members"] = members
        return program(members == "vectorized"), info

    return _COMPILED.get((id(model), axes, static, dynamic_keys, rows, report, members), model, build)


class _AutoMembers:
    """The batch program for `members="auto"`, chosen at its first call: the
    sequential program is traced for the arguments (`jax.jit(...).trace`; the call
    that follows reuses the trace) and kept when its solver loops hold no library
    call, else the vectorized program is used. `info["members"]` says which."""

    def __init__(self, program, info):
        self.program, self.info, self.chosen = program, info, None

    def __call__(self, *args):
        if self.chosen is None:
            sequential = self.program(False)
            if _loops_call_libraries(sequential.trace(*args).jaxpr.jaxpr):
                self.chosen, self.info["members"] = self.program(True), "vectorized"
            else:
                self.chosen, self.info["members"] = sequential, "sequential"
        return self.chosen(*args)

    def _cache_size(self):
        return 0 if self.chosen is None else self.chosen._cache_size()


def _one_after_another(fn, in_axes, args):
    """`jax.vmap(fn, in_axes)(*args)` computed one member after another (`lax.map`):
    the leaves with a batch axis (0) are mapped over, the others (None) shared."""
    axes = jax.tree_util.tree_structure(args).flatten_up_to(in_axes)
    mapped, rebuild = picked_leaves(args, lambda k: axes[k] is not None)
    return jax.lax.map(lambda xs: fn(*rebuild(*xs)), mapped)


# Primitives that XLA's CPU backend runs as library calls (LAPACK) or host callbacks:
# a loop holding one is not compiled into a single kernel (`mbdjax._numerics.xla_cpu`).
_LIBRARY_CALLS = frozenset({"cholesky", "triangular_solve", "lu", "lu_pivots_to_permutation", "qr", "geqrf",
                            "householder_product", "svd", "eigh", "eig", "schur", "hessenberg", "tridiagonal",
                            "tridiagonal_solve", "pure_callback", "io_callback", "debug_callback"})


def _loops_call_libraries(jaxpr):
    """Whether a `while` loop of the program `jaxpr` (a `jax.extend.core.Jaxpr`) holds
    a library call or a host callback (`_LIBRARY_CALLS`)."""

    inner = jax.extend.core.jaxprs_in_params

    def calls(jaxpr):
        return any(e.primitive.name in _LIBRARY_CALLS or any(calls(j) for j in inner(e.params)) for e in jaxpr.eqns)

    def loops_call(jaxpr):
        for e in jaxpr.eqns:
            subs = list(inner(e.params))
            if e.primitive.name == "while" and any(calls(j) for j in subs):
                return True
            if any(loops_call(j) for j in subs):
                return True
        return False

    return loops_call(jaxpr)


def _first_failure(model, traj, flags, stop, info, t0, t1):
    """The `SimulationError` naming the first failed member of a batch and why (the
    same reasons and details as `simulate` gives a lone run: `failure_error`, or the
    singular-configuration report), or None when every member succeeded. Host values:
    `flags (B, K)` in `info["messages"]` order, `stop` None or `(rank_lost (B,), t (B,),
    y (B, ...))`."""
    flags = np.asarray(flags)
    B = flags.shape[0]
    rank_lost = np.zeros(B, bool) if stop is None else np.asarray(stop[0]).reshape(B)
    failed = flags.reshape(B, -1).any(axis=1) | rank_lost
    if not failed.any():
        return None
    k = int(np.flatnonzero(failed)[0])
    member = jax.tree_util.tree_map(lambda x: x[k], traj)
    if rank_lost[k]:
        err = singular_configuration_error(info["work"], info["formulation"], float(stop[1][k]),
                                           jnp.asarray(stop[2][k][:model.n]), member.params)
    else:
        err = failure_error(first_failure(flags[k], info["messages"]), member, model, t0, t1)
    text = str(err).removeprefix("mbdjax.simulate: ").removeprefix("simulate: ")
    return SimulationError(f"simulate_batch: member {k} (of {B}; {int(failed.sum())} failed in all): {text}",
                           reason=err.reason, time=err.time, names=err.names, member=k)


_MEMBERS = ("auto", "sequential", "vectorized")


def _members_mode(members, devices):
    """`members` of `simulate_batch` checked and resolved for `devices`: `"auto"`
    stays `"auto"` (decided at the first call, `_AutoMembers`) on one CPU device and
    becomes `"vectorized"` otherwise."""
    if members not in _MEMBERS:
        raise SimulationError(f"simulate_batch: members must be one of {', '.join(map(repr, _MEMBERS))}; "
                              f"got {members!r}.")
    if members != "auto":
        if members == "sequential" and len(devices) > 1:
            raise SimulationError("simulate_batch: members='sequential' runs on one device; give one device "
                                  "(devices=[jax.devices()[0]]) or members='vectorized' to split the batch.")
        return members
    return "auto" if len(devices) == 1 and devices[0].platform == "cpu" else "vectorized"


def _shard(devices, B, leaves_axes):
    """Place the inputs on a one-axis mesh over `devices`: batched leaves split along
    their first axis (padded by repeating the last member to a multiple of the device
    count), shared leaves replicated. Returns the placed leaves and the padding."""
    mesh = Mesh(np.asarray(devices), ("batch",))
    pad = (-B) % len(devices)
    out = []
    for x, ax in leaves_axes:
        if ax is None:
            out.append(jax.device_put(x, NamedSharding(mesh, PartitionSpec())))
        else:
            if pad:
                x = jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)])
            out.append(jax.device_put(x, NamedSharding(mesh, PartitionSpec("batch"))))
    return out, pad


def simulate_batch(model, q0, qd0, params=None, *, devices=None, dtype="float64", members="auto",
                   **simulate_kwargs) -> Trajectory:
    """Simulate a batch of initial states and parameter sets in one compiled call.

    Arguments:
        model: a `mbdjax.Model`.
        q0, qd0: `(n,)` (shared) or `(B, n)` (one row per member) initial states,
            each consistent with the constraints (`mbdjax.initial_conditions`).
        params: a parameter pytree of the model's structure (default `model.params`)
            whose leaves are either of the model's own shape (shared) or carry a
            leading batch axis of length B (`params["spring"]["k"]` of shape `(B,)`).
        devices: the devices to split the batch over (default `jax.devices()`). With
            more than one, the batch axis is sharded over a one-axis `jax.sharding`
            mesh (padded to a multiple of the device count, the padding dropped from
            the result) and XLA partitions the compiled call; the members are gathered
            in order onto the first device, the same as the one-device result. Several hosts: start every process with
            `jax.distributed.initialize()` and pass `devices=jax.devices()` (all
            hosts' devices; see `experiments/multihost_batch.py`).
        members: `"auto"` (default), `"sequential"` or `"vectorized"`: how the members
            run (see the module docstring): vectorized (`jax.vmap`, in lockstep) or one
            after another (`jax.lax.map`, each with its own steps; one device only).
            `"auto"` runs them one after another on one CPU device when a lone run's
            solver loops hold no library call, else vectorized. The choice is reported
            as `dict(traj.settings)["members"]`.
        dtype: `"float64"` (default) or `"float32"`: the whole batch traced and run
            in single precision (x64 off inside the call; inputs cast, results
            float32), for accelerators whose float64 is slow. Needs `rtol ≥ 1e-6` (or
            `fixed_step=`); expect errors near 1e-3 over a second of motion, with the
            constraints held to ~1e-7 by projection (see the README).
        simulate_kwargs: as for `mbdjax.simulate` (`t1` required; `t0`, `saveat`,
            `formulation`, `solver`, `rtol`, `atol`, `throw`, ...), the same for
            every member. `t0` and `t1` are traced, so new values do not recompile.

    Returns:
        A `mbdjax.Trajectory` whose arrays carry the batch axis first: `t (B, T)`,
        `q (B, T, n)`, ...; member `k` is `jax.tree_util.tree_map(lambda x: x[k], traj)`.
        With `throw=True` (default) a failure of any member raises a
        `SimulationError` naming the first failed member (`member`, `reason`, `time`,
        `names`, and the details `simulate` gives a lone run), read on the host from
        the batch's outputs; with `throw=False`, `traj.success` is `(B,)`. Inside the
        caller's own `jit`/`grad`, failures are in-graph errors.

    Linear algebra: a vectorized branch runs both sides for every member, so the batch
    decides which constraint rows to keep before compiling, from the rank of `B` at
    the first member's initial state (redundant rows dropped, as in `simulate`), and
    every member solves with plain Cholesky, no branch. A member that then reaches a
    configuration where the kept rows lose rank (a singular configuration) gets NaN
    from the solve and fails with a clear error; simulate it with
    `formulation="augmented_lagrangian"`.

    Raises:
        SimulationError: when nothing carries a batch axis, the batch lengths differ,
        a state or parameter leaf has neither the shared nor the batched shape, or
        `dtype` is unknown or too coarse for `rtol`.

    Example (three spring constants, x = cos(√k t)):

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([1.0]),
        ...                 potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2, params={"k": 1.0})
        >>> traj = mbd.simulate_batch(osc, jnp.array([1.0]), jnp.zeros(1), {"k": jnp.array([1.0, 4.0, 9.0])},
        ...                           t1=1.0, saveat=2)
        >>> [round(float(x), 6) for x in traj.q[:, -1, 0]]
        [0.540302, -0.416147, -0.989992]

    References: THEORY §5 (the equations each member integrates).
    """
    if "t1" not in simulate_kwargs:
        raise SimulationError("simulate_batch: give the end time t1= (as for simulate).")
    return _run_batch(model, q0, qd0, params, devices, dtype, members, simulate_kwargs)


def _run_batch(model, q0, qd0, params, devices, dtype, members, simulate_kwargs):
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = repr(dtype)
    if name not in ("float64", "float32"):
        raise SimulationError(f"simulate_batch: dtype must be 'float64' or 'float32', got {dtype!r}.")
    if name == "float64":
        return _simulate_batch(model, q0, qd0, params, devices, members, simulate_kwargs)
    rtol = float(simulate_kwargs.get("rtol", 1e-8))
    if simulate_kwargs.get("fixed_step") is None and rtol < 1e-6:
        raise SimulationError(
            f"simulate_batch: dtype='float32' resolves about 1e-7 relative, so the step control cannot meet "
            f"rtol={rtol:g}; give rtol= of at least 1e-6 (and a matching atol=), or fixed_step=, or use float64.")
    with jax.enable_x64(False):       # every array the trace creates is float32 (int32)
        out = _simulate_batch(model, q0, qd0, params, devices, members, simulate_kwargs)
        return jax.block_until_ready(out)


def _simulate_batch(model, q0, qd0, params, devices, members, simulate_kwargs):
    n = model.n
    sizes = {}

    def state_axis(x, name):
        x = jnp.asarray(x, dtype=float)
        if x.shape == (n,):
            return x, None
        if x.ndim == 2 and x.shape[1] == n:
            sizes[name] = x.shape[0]
            return x, 0
        raise SimulationError(f"simulate_batch: {name} must have shape ({n},) (shared) or (B, {n}) (one row per "
                              f"member) for coordinates {list(model.coordinates)}; got {x.shape}.")

    q0, q_ax = state_axis(q0, "q0")
    qd0, v_ax = state_axis(qd0, "qd0")
    bad = nonfinite_entries(model, "q0", q0)[:1] + nonfinite_entries(model, "qd0", qd0)[:1]
    if bad:
        raise SimulationError("simulate_batch: non-finite input: " + "; ".join(bad) + ". Give finite values.")
    ref = jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype=float), model.params)
    p = float_params(model, params, "simulate_batch", batched=True)
    if jax.tree_util.tree_structure(p) != jax.tree_util.tree_structure(ref):
        raise SimulationError("simulate_batch: params must have the structure of model.params (the same nested "
                              f"keys); the model's parameters are {sorted(flatten_params(model.params))}.")
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(p)
    names = [".".join(str(getattr(k, "key", getattr(k, "idx", k))) for k in path) for path, _ in with_paths]
    leaves_p = [leaf for _, leaf in with_paths]
    leaves_ref = jax.tree_util.tree_leaves(ref)
    axes = []
    for name, leaf, base in zip(names, leaves_p, leaves_ref):
        if leaf.shape == base.shape:
            axes.append(None)
        elif leaf.ndim == base.ndim + 1 and leaf.shape[1:] == base.shape:
            axes.append(0)
            sizes[f"params {name!r}"] = leaf.shape[0]
        else:
            raise SimulationError(f"simulate_batch: parameter {name!r} has shape {leaf.shape}; give its own shape "
                                  f"{base.shape} (shared) or (B, *{base.shape}) (one value per member).")
    if not sizes:
        raise SimulationError("simulate_batch: nothing carries a batch axis; give q0, qd0 or a parameter leaf a "
                              "leading axis of length B (or call simulate for a single run).")
    if len(set(sizes.values())) > 1:
        raise SimulationError("simulate_batch: the batch axes differ in length: "
                              + ", ".join(f"{k}: {v}" for k, v in sizes.items()) + ".")
    dynamic, static = {}, []
    for key, value in simulate_kwargs.items():
        if key in ("t0", "t1") or isinstance(value, (jax.Array, np.ndarray)):
            dynamic[key] = jnp.asarray(value, dtype=float)
        else:
            static.append((key, value))
    rows = _rows_at_start(model, q0, q_ax, p, axes, simulate_kwargs.get("t0", 0.0))
    # Concrete inputs and throw=True: failures come back as arrays and are raised here,
    # naming the member (no callback in the program: it is cached across processes).
    report = bool(simulate_kwargs.get("throw", True)) and is_concrete(q0, qd0, p, dynamic)
    t0, t1 = simulate_kwargs.get("t0", 0.0), simulate_kwargs["t1"]
    if report:
        first = simulate_kwargs.get("fixed_step", simulate_kwargs.get("dt0"))
        check_times(t0, t1, save_times(simulate_kwargs.get("saveat", 200), t0, t1), first)
    devices = list(jax.devices() if devices is None else devices)
    if not devices:
        raise SimulationError("simulate_batch: devices= is empty; give at least one device (jax.devices()).")
    members = _members_mode(members, devices)
    fn, info = _compiled(model, (q_ax, v_ax, (treedef, tuple(axes))), tuple(sorted(static, key=lambda kv: kv[0])),
                         tuple(sorted(dynamic)), rows, report, members)
    B = next(iter(sizes.values()))
    with checked_on_host() if report else contextlib.nullcontext():
        if len(devices) == 1:
            out = fn(*jax.device_put((q0, qd0, p), devices[0]), dynamic)
        else:
            placed, pad = _shard(devices, B, [(q0, q_ax), (qd0, v_ax)] + list(zip(leaves_p, axes)))
            out = fn(placed[0], placed[1], jax.tree_util.tree_unflatten(treedef, placed[2:]), dynamic)
            if jax.process_count() > 1:      # several hosts: every process gets the whole batch
                from jax.experimental import multihost_utils   # on first use: only several hosts need it

                out = multihost_utils.process_allgather(out, tiled=True)
            if pad:
                out = jax.tree_util.tree_map(lambda x: x[:B], out)
            if jax.process_count() == 1:
                out = jax.device_put(out, devices[0])      # gathered, in order, onto the first device
    if not report:
        return _with_members(out, info)
    traj, flags, stop = out
    error = _first_failure(model, traj, flags, stop, info, float(t0), float(t1))
    if error is not None:
        raise error
    return _with_members(traj, info)


def _with_members(traj, info):
    """The batch's trajectory with how its members ran in its settings."""
    return dataclasses.replace(traj, settings=tuple(traj.settings) + (("members", info["members"]),))
