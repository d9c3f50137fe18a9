"""Massless coordinates with first-order dynamics: resistive loops (THEORY §7).

A coordinate is *massless* when its row and column of the mass matrix vanish
structurally (a resistor's or capacitor's charge, a spring–damper's free node). Where
the constraint rows fix every massless rate (a resistor in series with an inductor),
the augmented matrix is still nonsingular and nothing here is needed. Where they do
not, i.e. loops (or free nodes) made only of massless elements, `NᵀMN` is singular and
the rates along those loops follow from the massless equations themselves:

    M q̈ + Bᵀ λ = Q(q, q̇, t),        B q̇ = b,

with the massless rows `0 + B₀ᵀ λ = Q₀` algebraic in `q̇`. Let the columns of `B₀`
(the massless columns of `B`) split into `r₀` *dependent* ones, fixed by `r₀`
independent *rows* of `B`, and `k` *independent* ones; `W (n, k)`, zero on the
massive coordinates, `I` on the independent and `−B₀[rows, dep]⁻¹ B₀[rows, ind]` on
the dependent ones, is a basis of the loop space (`B W = 0`). Multiplying the massless
rows by `Wᵀ` eliminates `λ`:

    G(q, q̇, t) = Wᵀ Q(q, q̇, t) = 0                 (k algebraic equations)

— Kirchhoff's voltage law around every massless loop. It is index 1 when
`Wᵀ (∂Q/∂q̇) W` is nonsingular (every such loop has resistance). The state stays
`y = [q; q̇]`; the rates `q̈` of the independent massless coordinates come from `Ġ = 0`,
which replaces their (algebraic) rows in the augmented matrix:

    [[M, Bᵀ], [B, 0]] [q̈; λ] = [Q; g],   rows `ind` ← [−Wᵀ Q_q̇, 0] [q̈; λ] = Wᵀ (Q_q q̇ + Q_t),

a square system that is nonsingular under the existence conditions on the massive part
and the index-1 condition. The massless rates are not integrated: every right-hand side
solves them from `G = 0` by Newton (`solve_rates`, started from the values stored in
the state, which are refreshed after every step), so `G` has no drift. Integrating them
instead would put currents into the error control whose voltages they fix with a
sensitivity of `1/gmin` (10¹² V/A for a junction in reverse bias).

`B₀` must not depend on `q` or `t` (a network's junction laws and transformers); it may
depend on parameters (a transformer ratio), which keeps `W` differentiable.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import _dynamics as dyn
from . import _kinematics as kin
from ._errors import SimulationError
from ._tracing import concrete_evaluation, is_concrete, one_shot_filter_jit


class FirstOrder(NamedTuple):
    """Index sets of the massless coordinates (static, fixed before a run).

    `massless`: every structurally massless coordinate; `dependent` (`r₀`) their rates
    fixed by the constraint `rows` (`r₀`); `independent` (`k ≥ 1`) the loop rates that
    the algebraic equations `G = Wᵀ Q = 0` determine."""

    massless: tuple
    dependent: tuple
    independent: tuple
    rows: tuple


def _evaluation_point(model, p, q0, t0):
    """Concrete `(p, q, t)` for structural decisions: the run's own values when
    concrete, else the model's parameters and (for traced `q0`) a generic point."""
    if is_concrete(p, q0, t0):
        return p, jnp.asarray(q0), jnp.asarray(t0)
    q = jnp.asarray(q0) if is_concrete(q0) else jnp.linspace(0.1, 0.3, model.n)
    t = jnp.asarray(t0) if is_concrete(t0) else jnp.asarray(0.0)
    return model.params, q, t


def first_order_structure(model, p, q0, t0):
    """`FirstOrder` index sets of `model`, or None when every massless rate (if any)
    is fixed by the constraints. Raises a `SimulationError` when the massless columns
    of `B` depend on `q` or `t`, or (at a concrete state) when a massless loop has no
    resistance (index above 1)."""
    # Under an enclosing trace the structure is read at concrete stand-in values (the
    # model's parameters); with concrete inputs, the compiled programs below run as such.
    traced = not is_concrete(p, q0, t0)
    with jax.ensure_compile_time_eval() if traced else concrete_evaluation():
        pe, q, t = _evaluation_point(model, p, q0, t0)
        M = np.asarray(_mass_matrix(model, q, t, pe))
        massless = np.flatnonzero(np.all(M == 0, axis=0) & np.all(M == 0, axis=1))
        if massless.size == 0:
            return None
        if model.m == 0:
            dependent, rows = np.zeros(0, int), np.zeros(0, int)
        else:
            B, Qv = (np.asarray(x) for x in _jacobian_and_damping(model, q, t, pe))
            B0 = B[:, massless]
            s = np.linalg.svd(B0, compute_uv=False)
            r0 = int(np.sum(s > 1e-10 * max(float(s[0]) if s.size else 0.0, 1.0)))
            if r0 == massless.size:
                return None
            # A "normal tree": sources, capacitors and small resistances become dependent
            # (their rates follow from the rows), stiff laws such as junctions stay loop
            # variables, so Newton resolves their currents directly (no cancellation in
            # a sum of larger currents).
            weight = 1.0 / (1.0 + np.abs(np.diag(Qv)[massless]))
            import scipy.linalg   # on first use: only models with massless coordinates need scipy

            _, _, cpiv = scipy.linalg.qr(B0 * weight[None, :], pivoting=True, mode="economic")
            dependent = np.sort(massless[cpiv[:r0]])
            _, _, rpiv = scipy.linalg.qr(B0[:, np.searchsorted(massless, dependent)].T, pivoting=True,
                                         mode="economic")
            rows = np.sort(rpiv[:r0])
            # The loop basis is only valid if the massless columns are constant in q and t.
            dq, dt = (np.asarray(x) for x in _column_derivatives(model, q, t, pe, jnp.asarray(massless)))
            if np.any(dq != 0) or np.any(dt != 0):
                names = [model.coordinates[i] for i in massless]
                raise SimulationError(
                    "simulate: the constraint coefficients of the massless coordinates "
                    f"{names} change with the configuration or time, which the resistive-loop "
                    "(first-order) treatment does not support; give those coordinates a small "
                    "inertia (an inductance or mass)."
                )
        independent = np.setdiff1d(massless, dependent)
        fo = FirstOrder(tuple(int(i) for i in massless), tuple(int(i) for i in dependent),
                        tuple(int(i) for i in independent), tuple(int(i) for i in rows))
        if is_concrete(p, q0, t0):
            _check_index_one(model, fo, jnp.asarray(q0), jnp.asarray(t0), p)
    return fo


# The structural evaluations above as compiled programs (one each, kept in the
# persistent compilation cache) rather than their operations dispatched one by one.
@one_shot_filter_jit
def _mass_matrix(model, q, t, p):
    return dyn.mass_matrix(model, q, jnp.zeros(model.n), t, p)


@one_shot_filter_jit
def _jacobian_and_damping(model, q, t, p):
    """`(B (m, n), ∂Q/∂q̇ (n, n))` at rest."""
    Qv = jax.jacfwd(lambda v: dyn.forcing(model, q, v, t, p))(jnp.zeros(model.n))
    return kin.constraint_jacobian(model, q, t, p), Qv


@one_shot_filter_jit
def _column_derivatives(model, q, t, p, cols):
    """`(∂B[:, cols]/∂q, ∂B[:, cols]/∂t)`: zero when those columns are constant."""
    dq = jax.jacfwd(lambda x: kin.constraint_jacobian(model, x, t, p)[:, cols])(q)
    dt = jax.jacfwd(lambda s_: kin.constraint_jacobian(model, q, s_, p)[:, cols])(t)
    return dq, dt


@one_shot_filter_jit
def _loop_damping(model, fo, q, t, p):
    """`Wᵀ (∂Q/∂q̇) W (k, k)` at rest: singular when a massless loop has no resistance."""
    W = loop_basis(model, fo, kin.constraint_jacobian(model, q, t, p))
    return _G_jacobian(model, W, q, jnp.zeros(model.n), t, p)


def refuse(model, p, q0, t0, who):
    """Raise a `SimulationError` if `model` has resistive massless loops, which only the
    augmented formulation integrates (called by the other formulations' `prepare`)."""
    fo = first_order_structure(model, p, q0, t0)
    if fo is not None:
        names = [model.coordinates[i] for i in fo.independent]
        raise SimulationError(
            f"{who}: the model has massless loops with first-order dynamics (rates of {names} "
            "follow from resistive loop equations, e.g. an RC circuit or a diode); use "
            "formulation='augmented'."
        )


def _check_index_one(model, fo, q, t, p):
    J = np.asarray(_loop_damping(model, fo, q, t, p))
    s = np.linalg.svd(J, compute_uv=False)
    if s.size and s[-1] > 1e-12 * max(float(s[0]), 1e-300) and np.all(np.isfinite(s)):
        return
    names = [model.coordinates[i] for i in fo.independent]
    raise SimulationError(
        "simulate: a loop of massless elements has no resistance (the rates of "
        f"{names} are not determined: Wᵀ ∂Q/∂q̇ W is singular), e.g. capacitors or effort "
        "sources alone in a loop; add a resistance (or an inductance) to the loop."
    )


def loop_basis(model, fo, B):
    """`W (n, k)`: zero on massive coordinates, identity on `fo.independent`,
    `−B[rows, dep]⁻¹ B[rows, ind]` on `fo.dependent`; `B W = 0`."""
    n, k = model.n, len(fo.independent)
    ind = jnp.asarray(fo.independent, dtype=int)
    W = jnp.zeros((n, k), dtype=float).at[ind, jnp.arange(k)].set(1.0)
    if fo.dependent:
        rows = jnp.asarray(fo.rows, dtype=int)
        dep = jnp.asarray(fo.dependent, dtype=int)
        Br = B[rows]
        W = W.at[dep].set(-jnp.linalg.solve(Br[:, dep], Br[:, ind]))
    return W


def _G_jacobian(model, W, q, qd, t, p):
    """`Wᵀ (∂Q/∂q̇) W (k, k)`."""
    _, pull = jax.vjp(lambda v: dyn.forcing(model, q, v, t, p), qd)
    WQv = jax.vmap(lambda w: pull(w)[0])(W.T)
    return WQv @ W


def residual(model, fo, q, qd, t, p):
    """`G = Wᵀ Q (k,)`: the voltage (effort) sum around every massless loop."""
    W = loop_basis(model, fo, kin.constraint_jacobian(model, q, t, p))
    return W.T @ dyn.forcing(model, q, qd, t, p)


@eqx.filter_jit     # traced once for the solver's stages and the outputs (see solve_rates)
def accelerations(model, fo, q, qd, t, p, stabilization):
    """`(q̈ (n,), λ (m,))` at a state whose massless rates solve the loop equations
    (`solve_rates`), with the independent massless rows replaced by `Ġ = 0`; the
    massless entries of `q̈` are the rates of change of those rates."""
    n, m = model.n, model.m
    B = kin.constraint_jacobian(model, q, t, p)
    W = loop_basis(model, fo, B)
    t = jnp.asarray(t, dtype=float)
    Q, Q_dot = jax.jvp(lambda x, s: dyn.forcing(model, x, qd, s, p), (q, t), (qd, jnp.ones_like(t)))
    _, pull = jax.vjp(lambda v: dyn.forcing(model, q, v, t, p), qd)
    WQv = jax.vmap(lambda w: pull(w)[0])(W.T)                       # (k, n)
    M = dyn.mass_matrix(model, q, qd, t, p)
    ind = jnp.asarray(fo.independent, dtype=int)
    if m:
        g = stabilization.acceleration_rhs(model, q, qd, t, p, kin.acceleration_rhs(model, q, qd, t, p))
        K = jnp.block([[M, B.T], [B, jnp.zeros((m, m), dtype=float)]])
        rhs = jnp.concatenate([Q, g])
    else:
        K, rhs = M, Q
    K = K.at[ind].set(jnp.concatenate([-WQv, jnp.zeros((len(fo.independent), m))], axis=1))
    rhs = rhs.at[ind].set(W.T @ Q_dot)
    sol = jnp.linalg.solve(K, rhs)
    return sol[:n], (sol[n:] if m else None)


_NEWTON_MAX = 60


# Compiled as one function: a simulation evaluates the rates at a dozen places (the
# solver's stages, the projection, the outputs), and JAX then traces this Newton loop
# once and reuses it at every one of them.
@eqx.filter_jit
def solve_rates(model, fo, q, qd, t, p):
    """`q̇` with the massless rates solved at `(q, t)`: the dependent ones from their
    constraint rows, the independent (loop) ones by Newton on `G = Wᵀ Q = 0`; the given
    massless entries of `qd` only start the iteration, the massive ones are kept.

    Newton runs on gradient-stopped values until `max |G|` is below `1e-12 (1 +
    max |Q|)` (efforts: the loop voltages) or every step component is below 1e-13 of
    its rate (round-off), at most 60 iterations. The residual test matters for
    junctions in reverse bias, whose voltage moves by volts for femtoamperes. A last Newton step on the live values carries the
    implicit-function derivative. If Newton fails the massless rates come back NaN
    (the solver then rejects the step, or simulate reports the failure).
    """
    rows = jnp.asarray(fo.rows, dtype=int)
    dep = jnp.asarray(fo.dependent, dtype=int)

    def place(x, q_, qd_, t_, p_):
        """`x (k,)` as the loop rates, the dependent rates from the rows."""
        v = qd_.at[jnp.asarray(fo.independent, dtype=int)].set(x)
        if not fo.dependent:
            return v
        B = kin.constraint_jacobian(model, q_, t_, p_)
        v = v.at[dep].set(0.0)
        return v.at[dep].set(jnp.linalg.solve(B[rows][:, dep], kin.velocity_rhs(model, q_, t_, p_)[rows]
                                              - B[rows] @ v))

    def loop(x, q_, qd_, t_, p_):
        v = place(x, q_, qd_, t_, p_)
        Q = dyn.forcing(model, q_, v, t_, p_)
        W = loop_basis(model, fo, kin.constraint_jacobian(model, q_, t_, p_))
        return W.T @ Q, Q, W, v

    ind = jnp.asarray(fo.independent, dtype=int)
    qs, qds, ts, ps = jax.lax.stop_gradient((q, qd, t, p))

    def body(state):
        x, it, _ = state
        G, Q, W, v = loop(x, qs, qds, ts, ps)
        dx = jnp.linalg.solve(_G_jacobian(model, W, qs, v, ts, ps), G)
        # Converged: the loop efforts vanish, or the step is at round-off in every
        # component (the attainable accuracy when a rate is a sum of larger ones).
        small = (jnp.max(jnp.abs(G)) <= 1e-12 * (1.0 + jnp.max(jnp.abs(Q)))) | jnp.all(
            jnp.abs(dx) <= 1e-13 * jnp.abs(x))
        return jnp.where(small, x, x - dx), it + 1, small

    def keep_going(state):
        _, it, small = state
        return (it < _NEWTON_MAX) & ~small

    x, _, converged = jax.lax.while_loop(keep_going, body, (qds[ind], 0, jnp.asarray(False)))
    x = jax.lax.stop_gradient(x)
    G, Q, W, v = loop(x, q, qd, t, p)
    J = jax.lax.stop_gradient(_G_jacobian(model, W, qs, v, ts, ps))
    x = x - jnp.linalg.solve(J, G)
    out = place(x, q, qd, t, p)
    massless = jnp.asarray(fo.massless, dtype=int)
    return out.at[massless].set(jnp.where(converged, out[massless], jnp.nan))
