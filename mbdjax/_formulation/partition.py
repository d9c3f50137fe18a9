"""Choosing a coordinate partition `q = [q_u (dependent, m); q_w (independent, n − m)]`.

Two choosers: `pivoted_dependent` (NumPy/SciPy, at a concrete configuration, for the
partitions fixed before a run) and `select_partition` (traceable JAX, for the
re-partitions inside a run). Both pick columns of `B` as column-pivoted QR does.
"""

from __future__ import annotations

import diffrax
import jax
import jax.numpy as jnp
import numpy as np

from .. import _kinematics as kin
from .._errors import SimulationError
from .._singular import SingularityGuard
from .._numerics.solve import solve
from .base import Integrated, singularity_event

_COND_MAX = 1e10


def pivoted_dependent(B, coordinates):
    """Names of `m` coordinates whose columns of `B` are best conditioned (column-pivoted
    QR of B: the first `m` pivots), a good dependent set `q̄` at this configuration."""
    m = B.shape[0]
    import scipy.linalg   # on first use: only the partitioning formulations need scipy; simulate does not load it

    _, _, piv = scipy.linalg.qr(np.asarray(B), pivoting=True, mode="economic")
    return tuple(coordinates[k] for k in sorted(piv[:m]))


def check_names(model, names, count, who, arg):
    """Raise a `SimulationError` unless `names` are `count` distinct coordinates of
    `model` (`count` None: any number); `arg` names the argument in the message."""
    unknown = [c for c in names if c not in model.coordinates]
    if unknown:
        raise SimulationError(
            f"{who}: unknown coordinates {unknown} in `{arg}`; the coordinates are "
            f"{list(model.coordinates)}."
        )
    if count is not None and len(set(names)) != count:
        raise SimulationError(
            f"{who}: `{arg}` must name {count} distinct coordinates (n = {model.n} coordinates, "
            f"m = {model.m_h} holonomic + {model.m_n} nonholonomic constraint rows), got {len(set(names))}."
        )


def check_partition(model, B, dependent, who, what, suggest="dependent"):
    """Raise a `SimulationError` naming a better choice if `B_u = B[:, dependent]` is
    singular (condition above 1e10) at this concrete configuration.

    `who` names the formulation, `what` describes `dependent`; the suggested fix is
    phrased for the argument `suggest` (`"dependent"` or `"independent"`).
    """
    B = np.asarray(B)
    cols = [model.index(d) for d in dependent]
    s = np.linalg.svd(B[:, cols], compute_uv=False)
    if s.size and s[-1] > s[0] / _COND_MAX and np.isfinite(s).all():
        return
    cond = s[0] / max(s[-1], 1e-300) if s.size else float("inf")
    better = pivoted_dependent(B, model.coordinates)
    sb = np.linalg.svd(B[:, [model.index(d) for d in better]], compute_uv=False)
    if not (sb[-1] > sb[0] / _COND_MAX):
        raise SimulationError(
            f"{who}: the constraint rows are dependent at the initial configuration (B has "
            f"rank below {model.m}), so no coordinate partition exists; remove the redundant "
            "constraints (mbdjax.check names them) or use formulation='augmented'."
        )
    names = better if suggest == "dependent" else tuple(c for c in model.coordinates if c not in better)
    raise SimulationError(
        f"{who}: B₁ (the columns of B for the {what} {list(dependent)}) is singular at the "
        f"initial configuration (condition {cond:.1e}); choose "
        f"{suggest}=({', '.join(repr(b) for b in names)}) instead."
    )


def _greedy_columns(R, k, taken):
    """Indices of `k` columns of `R` picked as a column-pivoted QR (modified Gram–Schmidt)
    would: each time the column of largest norm after removing the directions already
    chosen. Columns with `taken[j]` are never picked. Returns `(indices (k,), taken)`."""

    def body(i, state):
        R, taken, sel = state
        norms = jnp.where(taken, -1.0, jnp.sum(R * R, axis=0))
        j = jnp.argmax(norms)
        v = R[:, j] / jnp.sqrt(jnp.maximum(norms[j], 1e-300))
        return R - jnp.outer(v, v @ R), taken.at[j].set(True), sel.at[i].set(j)

    sel = jnp.zeros((k,), dtype=int)
    if k == 0:
        return sel, taken
    _, taken, sel = jax.lax.fori_loop(0, k, body, (R, taken, sel))
    return sel, taken


def complete_partition(model, dep):
    """`perm (n,)`: the dependent indices `dep` followed by the others in ascending order."""
    n = model.n
    taken = jnp.zeros((n,), dtype=bool).at[dep].set(True)
    rest = jnp.argsort(jnp.where(taken, n, 0) + jnp.arange(n))[: n - dep.shape[0]]
    return jnp.concatenate([dep, rest]).astype(int)


def order_dependent(model, B, dep):
    """Reorder the `m` dependent indices `dep` so that the first `m_h` make the holonomic
    block `Φ_q[:, dep[:m_h]]` best conditioned (greedy pivoting among `dep`)."""
    mh = model.m_h
    if mh == 0 or model.m_n == 0:
        return dep
    Phi_u = B[:mh][:, dep]
    first, taken = _greedy_columns(Phi_u, mh, jnp.zeros((dep.shape[0],), dtype=bool))
    others = jnp.argsort(jnp.where(taken, dep.shape[0], 0) + jnp.arange(dep.shape[0]))[: model.m_n]
    return dep[jnp.concatenate([first, others])]


def named_partition(model, independent, q, t, p):
    """`perm (n,)` of the partition whose independent coordinates are the names
    `independent`, the dependent ones ordered as `select_partition` orders them."""
    ind = set(independent)
    dep = jnp.array([k for k, c in enumerate(model.coordinates) if c not in ind], dtype=int)
    B = jax.lax.stop_gradient(kin.constraint_jacobian(model, q, t, p))
    return complete_partition(model, order_dependent(model, B, dep))


def select_partition(model, q, t, p):
    """`perm (n,)` of a well-conditioned partition at `(q, t)`: `perm[:m_h]` the
    holonomically dependent coordinates (pivoted on `Φ_q`), `perm[m_h:m]` the
    nonholonomically dependent ones (pivoted on the nonholonomic rows after
    eliminating the first set), `perm[m:]` the independent ones. Traceable."""
    B = jax.lax.stop_gradient(kin.constraint_jacobian(model, q, t, p))
    mh, mn, n = model.m_h, model.m_n, model.n
    taken = jnp.zeros((n,), dtype=bool)
    sel_h, taken = _greedy_columns(B[:mh], mh, taken)
    if mn == 0:
        return complete_partition(model, sel_h)
    A = B[mh:]
    if mh:
        Phi_q = B[:mh]
        A = A - A[:, sel_h] @ jnp.linalg.solve(Phi_q[:, sel_h], Phi_q)
    sel_n, _ = _greedy_columns(A, mn, taken)
    return complete_partition(model, jnp.concatenate([sel_h, sel_n]))


def partition_condition(model, q, t, p, perm):
    """How close the partition is to singular at `(q, t)`: `σ_max(B) / σ_min(B_u)`, and
    with nonholonomic rows the larger of that and `σ_max(Φ_q) / σ_min(Φ_u)` (the
    Newton matrix). Unlike the condition number of `B_u` alone this sees a scalar
    `B_u` shrinking (a pendulum's `x` as it passes the bottom), and it is never below
    the best attainable `κ(B)`."""
    B = jax.lax.stop_gradient(kin.constraint_jacobian(model, q, t, p))
    m, mh = model.m, model.m_h

    def ratio(full, block):
        top = jnp.linalg.svd(full, compute_uv=False)[0]
        return top / jnp.linalg.svd(block, compute_uv=False)[-1]

    kappa = ratio(B, B[:, perm[:m]])
    if mh and model.m_n:
        kappa = jnp.maximum(kappa, ratio(B[:mh], B[:mh][:, perm[:mh]]))
    return jnp.where(jnp.isfinite(kappa), kappa, jnp.inf)


def partition_basis(B, perm, m):
    """`D (n, n − m)` with `D[perm[m:]] = I`, `D[perm[:m]] = −B_u⁻¹ B_w`: `B D = 0`."""
    n = B.shape[1]
    dep, ind = perm[:m], perm[m:]
    C = jnp.linalg.solve(B[:, dep], B[:, ind])
    f = n - m
    return jnp.zeros((n, f), dtype=B.dtype).at[dep].set(-C).at[ind].set(jnp.eye(f, dtype=B.dtype))




def integrate_partitioned(model, settings, y0, p, t0, t1, ts, perm0, vector_field, project, remap, *,
                          growth, max_partitions, watch=False, project_step=None):
    """Integrate with coordinate partitions re-chosen along the motion: shared by the
    null-space and quasi-velocity formulations, whose states are tied to a partition.

    A diffrax `Event` ends a piece at the end of the first step where the partition's
    condition (`partition_condition`) exceeds `growth` times its value at the piece's
    start; a new partition is chosen there by column pivoting (`select_partition`), the
    state is carried over to it by `remap`, and the next piece starts, up to
    `max_partitions` pieces (a `lax.scan` over solves, unused ones of zero length, so
    the whole call stays reverse-differentiable). A coordinate singularity of the model
    (`singularity_event`) also ends the run.

    Arguments:
        settings: a `mbdjax._numerics.solve.SolveSettings`.
        y0 (state,): the state at `t0`, already consistent with `perm0`.
        perm0 (n,): the first partition (`perm[:m]` dependent, `perm[m:]` independent).
        vector_field, project: `(t, y, args) -> y` with `args = (p, perm, κ₀)`;
            `project` None for no map after each step.
        remap: `(t, y, p, perm_old, perm_new) -> y`, the state expressed in the new
            partition (the identity for a state `[q; q̇]`).
        watch: wrap the step-size controller in `SingularityGuard` (a collapse of the
            steps where `B` is close to losing rank ends the run, `rank_lost`).
        project_step: the projection after every step where it differs from
            `project` (`mbdjax._numerics.solve.solve`).

    Returns an `Integrated` with `aux` the partition at each output time and
    `partitions = {"t": (K,), "independent": (K, n − m)}` (t = inf for unused pieces);
    `final` is `(t, y)` where the last piece ended.
    """
    n, m = model.n, model.m
    if watch:
        settings = settings.with_controller(SingularityGuard(settings.controller, model, packed=True))

    def degraded(t, y, args, **kwargs):
        p_, perm, kappa0 = args
        return partition_condition(model, y[:n], t, p_, perm) > growth * kappa0

    # A coordinate singularity (reached or stepped across) also ends a piece; the
    # run then stops.
    chart = singularity_event(model, n)
    event = diffrax.Event([degraded] + (list(chart.cond_fn) if chart is not None else []))
    crossed = (lambda sol: jnp.any(jnp.stack(sol.event_mask[1:]))) if chart is not None else (
        lambda sol: jnp.asarray(False))
    T = ts.shape[0]

    def piece(carry, _):
        t_start, y_start, perm, done, result, steps, ys, perms, singular, t_last, y_last = carry
        kappa0 = partition_condition(model, y_start[:n], t_start, p, perm)
        sol = solve(vector_field, project, settings, t_start, t1, y_start, (p, perm, kappa0),
                    jnp.clip(ts, t_start, t1), event=event, save_final=True, project_step=project_step)
        ys_piece, t_end, y_end = sol.ys[0], sol.ts[1][0], sol.ys[1][0]
        covered = (~done) & (ts >= t_start) & (ts <= t_end) & jnp.all(jnp.isfinite(ys_piece), axis=1)
        ys = jnp.where(covered[:, None], ys_piece, ys)
        perms = jnp.where(covered[:, None], perm[None, :], perms)
        stopped = sol.result == diffrax.RESULTS.event_occurred
        hit_singular = stopped & crossed(sol) & ~done
        switched = stopped & ~hit_singular
        log = (jnp.where(done, jnp.inf, t_start), perm[m:])
        finite_end = jnp.all(jnp.isfinite(y_end))
        t_last = jnp.where(done, t_last, t_end)
        y_last = jnp.where(done | ~finite_end, y_last, y_end)
        y_next = jnp.where(done | ~finite_end, y_start, y_end)
        t_next = jnp.where(done, t_start, jnp.where(switched, t_end, t1))
        perm_new = select_partition(model, y_next[:n], t_next, p)
        take = ~done & switched
        perm_next = jnp.where(take, perm_new, perm)
        y_next = jnp.where(take, remap(t_next, y_next, p, perm, perm_new), y_next)
        result = diffrax.RESULTS.where(done, result, sol.result)
        steps = steps + jnp.where(done, 0, sol.stats["num_steps"])
        done = done | ~switched
        return (t_next, y_next, perm_next, done, result, steps, ys, perms, singular | hit_singular,
                t_last, y_last), log

    ok = diffrax.RESULTS.successful
    init = (t0, y0, perm0, jnp.asarray(False), diffrax.RESULTS.where(jnp.asarray(True), ok, ok),
            jnp.asarray(0), jnp.broadcast_to(y0, (T, y0.shape[0])),
            jnp.broadcast_to(perm0, (T, n)), jnp.asarray(False), jnp.asarray(t0, dtype=ts.dtype), y0)
    carry, (log_t, log_ind) = jax.lax.scan(piece, init, None, length=int(max_partitions))
    _, _, _, _, result, steps, ys, perms, singular, t_last, y_last = carry
    return Integrated(ts, ys, result, steps, aux=perms, partitions={"t": log_t, "independent": log_ind},
                      singular=singular, rank_lost=result == diffrax.RESULTS.dt_min_reached,
                      final=(t_last, y_last))
