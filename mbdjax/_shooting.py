"""Multiple shooting for `fit`: the horizon cut into segments with free initial states.

With `S` segments the measurement times are split into `S` consecutive chunks; segment
`s ≥ 1` starts at the first time of its chunk from a free state `(q_s, q̇_s)`, projected
onto the constraints (`Φ = 0` by Gauss–Newton, `B q̇ = b` exactly) before it is
integrated, segment 0 from the given initial state. The residual vector stacks the
weighted data residuals of every segment and the continuity defects `ρ (y_s(τ_{s+1}) −
y_{s+1}(τ_{s+1}))` between the end of each segment and the start of the next. Every
segment is an ordinary `simulate` call, all of them in one `vmap` (the chunks are
padded to one length, the padding weighted zero). Short segments keep the sensitivities
of a long or chaotic horizon bounded. `fit` raises the weight ρ from 1 to its target
in decades, each stage warm-started from the last (a large weight from the start
makes a narrow curved valley that Levenberg–Marquardt crosses slowly), so at the end
the defects are small and the pieces join into one motion.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._integrate import simulate
from ._params import set_values
from ._sensitivity import initial_state
from ._stabilization.projection import project_positions


def layout(t_data, segments, t0):
    """`(starts (S,), save (S, L + 1), rows (S, L), mask (S, L))`: segment start
    times, save times (the chunk padded by repeating its last time, then the next
    segment's start), the data rows of each chunk (padding repeats the last row) and
    which entries are real data."""
    T = t_data.shape[0]
    S = int(segments)
    chunks = np.array_split(np.arange(T), S)
    L = max(len(c) for c in chunks)
    starts = np.array([t0] + [t_data[c[0]] for c in chunks[1:]], dtype=float)
    save, rows, mask = [], [], []
    for s, c in enumerate(chunks):
        pad = np.concatenate([c, np.full(L - len(c), c[-1])])
        end = starts[s + 1] if s + 1 < S else t_data[c[-1]]
        save.append(np.concatenate([t_data[pad], [end]]))
        rows.append(pad)
        mask.append(np.arange(L) < len(c))
    return starts, np.asarray(save), np.asarray(rows), np.asarray(mask, dtype=float)


def _project(model, q, qd, t, p):
    """`(q, q̇)` on `Φ(q, t) = 0` (Gauss–Newton) and `B q̇ = b` (exact linear solve)."""
    q = project_positions(model, q, t, p, iterations=4)
    if model.m == 0:
        return q, qd
    from . import _kinematics as kin

    B = kin.constraint_jacobian(model, q, t, p)
    r = B @ qd - kin.velocity_rhs(model, q, t, p)
    return q, qd - B.T @ jnp.linalg.solve(B @ B.T, r)


def shooting_residual(model, fn, p0, paths, from_free, n_free, q0, qd0, t_data, d, w, segments, t0,
                      adjoint, simulate_kwargs):
    """`(residual(z, rho), initial_states(theta) -> (S − 1) · 2n vector, n_rows,
    n_real)` for the free vector `z = [z_θ (n_free); states ((S − 1) · 2n)]` and the
    continuity weight `rho`: the first `n_rows` residuals are data (of which `n_real`
    real, the rest padding), then the defects."""
    n = model.n
    starts, save, rows, mask = layout(np.asarray(t_data), segments, float(t0))
    S = int(segments)
    d_seg = jnp.asarray(np.asarray(d)[rows])              # (S, L, k)
    w_seg = jnp.asarray(np.asarray(w)[rows] * mask[..., None])
    starts_j, save_j = jnp.asarray(starts), jnp.asarray(save)

    def run(p, Q0, V0):
        def one(qa, va, ta, ts):
            traj = simulate(model, qa, va, t0=ta, t1=ts[-1], saveat=ts, params=p, adjoint=adjoint, **simulate_kwargs)
            y = jnp.asarray(fn(traj), dtype=float)
            y = y[:, None] if y.ndim == 1 else y
            return y, traj.q[-1], traj.qd[-1]
        return jax.vmap(one)(Q0, V0, starts_j, save_j)

    def residual(z, rho):
        p = set_values(p0, paths, from_free(z[:n_free]))
        Y = z[n_free:].reshape(S - 1, 2 * n)
        qs, vs = jax.vmap(lambda a, b, t: _project(model, a, b, t, p))(Y[:, :n], Y[:, n:], starts_j[1:])
        first_q, first_v = initial_state(q0, qd0, p)
        Q0 = jnp.concatenate([jnp.asarray(first_q, dtype=float)[None, :], qs])
        V0 = jnp.concatenate([jnp.asarray(first_v, dtype=float)[None, :], vs])
        y, q_end, v_end = run(p, Q0, V0)
        data = (w_seg * (y[:, :-1] - d_seg)).reshape(-1)
        defects = rho * (jnp.concatenate([q_end[:-1], v_end[:-1]], axis=1) - jnp.concatenate([qs, vs], axis=1))
        return jnp.concatenate([data, defects.reshape(-1)])

    def initial_states(theta):
        p = set_values(p0, paths, theta)
        traj = simulate(model, *initial_state(q0, qd0, p), t0=t0, t1=starts[-1], saveat=jnp.asarray(starts[1:]),
                        params=p, **simulate_kwargs)
        return jnp.concatenate([traj.q, traj.qd], axis=1).reshape(-1)

    return residual, initial_states, int(d_seg.size), int(mask.sum()) * int(d_seg.shape[-1])
