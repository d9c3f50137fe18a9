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

from .. import _kinematics as kin
from .._integrate import simulate
from .._params import set_values
from .sensitivity import initial_state
from .._stabilization.projection import project_positions


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
    B = kin.constraint_jacobian(model, q, t, p)
    r = B @ qd - kin.velocity_rhs(model, q, t, p)
    return q, qd - B.T @ jnp.linalg.solve(B @ B.T, r)


def shooting_residual(model, fn, p0, paths, from_free, n_free, q0, qd0, t_data, d, w, segments, t0,
                      adjoint, simulate_kwargs):
    """`(residual(z, rho), residual_and_jacobian(z, rho), initial_states(theta) -> (S
    − 1) · 2n vector, n_rows, n_real)` for the free vector `z = [z_θ (n_free); states ((S − 1) · 2n)]` and the
    continuity weight `rho`: the first `n_rows` residuals are data (of which `n_real`
    real, the rest padding), then the defects."""
    n = model.n
    starts, save, rows, mask = layout(np.asarray(t_data), segments, float(t0))
    S = int(segments)
    d_seg = jnp.asarray(np.asarray(d)[rows])              # (S, L, k)
    w_seg = jnp.asarray(np.asarray(w)[rows] * mask[..., None])
    starts_j, save_j = jnp.asarray(starts), jnp.asarray(save)

    L, k = int(d_seg.shape[1]), int(d_seg.shape[2])

    def segment(z_theta, X, ta, ts, ds, ws):
        """Data residuals `(L k,)` and end state `(2n,)` of one segment from start `X`."""
        p = set_values(p0, paths, from_free(z_theta))
        traj = simulate(model, X[:n], X[n:], t0=ta, t1=ts[-1], saveat=ts, params=p, adjoint=adjoint,
                        throw=False, **simulate_kwargs)
        y = jnp.where(traj.success, jnp.asarray(fn(traj), dtype=float), jnp.nan)   # failed: LM rejects
        y = y[:, None] if y.ndim == 1 else y
        return (ws * (y[:-1] - ds)).reshape(-1), jnp.concatenate([traj.q[-1], traj.qd[-1]])

    def start(z_theta, Yraw, ta):
        p = set_values(p0, paths, from_free(z_theta))
        return jnp.concatenate(_project(model, Yraw[:n], Yraw[n:], ta, p))

    def first_start(z_theta):
        p = set_values(p0, paths, from_free(z_theta))
        a, b = initial_state(q0, qd0, p)
        return jnp.concatenate([jnp.asarray(a, dtype=float), jnp.asarray(b, dtype=float)])

    def residual(z, rho):
        zt = z[:n_free]
        Y = z[n_free:].reshape(S - 1, 2 * n)
        X = jax.vmap(lambda y, t: start(zt, y, t))(Y, starts_j[1:])
        Xall = jnp.concatenate([first_start(zt)[None], X])
        r, e = jax.vmap(lambda x, ta, ts, ds, ws: segment(zt, x, ta, ts, ds, ws))(Xall, starts_j, save_j, d_seg,
                                                                                 w_seg)
        return jnp.concatenate([r.reshape(-1), (rho * (e[:-1] - X)).reshape(-1)])

    def residual_and_jacobian(z, rho):
        """Residuals and their Jacobian, assembled from per-segment blocks: each
        segment is differentiated only with respect to the parameters and its own
        start state (`n_free + 2n` tangents per segment, not the whole vector)."""
        zt = z[:n_free]
        Y = z[n_free:].reshape(S - 1, 2 * n)
        X, dX_t, dX_y = jax.vmap(lambda y, t: (start(zt, y, t), jax.jacfwd(start, 0)(zt, y, t),
                                               jax.jacfwd(start, 1)(zt, y, t)))(Y, starts_j[1:])
        X0, dX0_t = first_start(zt), jax.jacfwd(first_start)(zt)
        Xall = jnp.concatenate([X0[None], X])
        dXall_t = jnp.concatenate([dX0_t[None], dX_t])

        def seg_with_jac(x, dx_t, ta, ts, ds, ws):
            r, e = segment(zt, x, ta, ts, ds, ws)
            (dr_z, dr_x), (de_z, de_x) = jax.jacfwd(segment, argnums=(0, 1))(zt, x, ta, ts, ds, ws)
            # the parameters act directly and through the start state's own dependence
            return r, e, (dr_z + dr_x @ dx_t, de_z + de_x @ dx_t), (dr_x, de_x)

        r, e, (dr_t, de_t), (dr_x, de_x) = jax.vmap(seg_with_jac)(Xall, dXall_t, starts_j, save_j, d_seg, w_seg)
        n_data = S * L * k
        n_state = (S - 1) * 2 * n
        rows = n_data + n_state
        J = jnp.zeros((rows, n_free + n_state))
        J = J.at[:n_data, :n_free].set(dr_t.reshape(n_data, n_free))
        for s_ in range(1, S):            # data rows of segment s against its start state Y_s
            block = dr_x[s_] @ dX_y[s_ - 1]
            J = J.at[s_ * L * k:(s_ + 1) * L * k, n_free + (s_ - 1) * 2 * n:n_free + s_ * 2 * n].set(block)
        defects = rho * (e[:-1] - X)
        for s_ in range(S - 1):           # defect s: end of segment s minus start of s + 1
            r0 = n_data + s_ * 2 * n
            J = J.at[r0:r0 + 2 * n, :n_free].set(rho * (de_t[s_] - dX_t[s_]))
            if s_ >= 1:
                J = J.at[r0:r0 + 2 * n, n_free + (s_ - 1) * 2 * n:n_free + s_ * 2 * n].set(
                    rho * de_x[s_] @ dX_y[s_ - 1])
            J = J.at[r0:r0 + 2 * n, n_free + s_ * 2 * n:n_free + (s_ + 1) * 2 * n].add(-rho * dX_y[s_])
        return jnp.concatenate([r.reshape(-1), defects.reshape(-1)]), J

    def initial_states(theta):
        p = set_values(p0, paths, theta)
        traj = simulate(model, *initial_state(q0, qd0, p), t0=t0, t1=starts[-1], saveat=jnp.asarray(starts[1:]),
                        params=p, **simulate_kwargs)
        return jnp.concatenate([traj.q, traj.qd], axis=1).reshape(-1)

    return (residual, residual_and_jacobian, initial_states, int(d_seg.size),
            int(mask.sum()) * int(d_seg.shape[-1]))
