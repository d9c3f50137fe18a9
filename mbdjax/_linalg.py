"""Symmetric positive (semi)definite solves whose derivatives reuse the factorization.

The Schur complement `S = B M⁻¹ Bᵀ` of the augmented equations (THEORY §5) and the
Gram matrix `J Jᵀ` of the projection are solved by Cholesky. Differentiating through
the factorization itself costs two triangular solves with m × m matrices per
tangent (O(m³)); differentiating the solve instead, `dx = S⁻¹(dr − dS x)`, costs two
triangular solves with a vector (O(m²)) and transposes just as cheaply for reverse
mode. That is what `spd_solve` does.

Semidefinite `S` (redundant constraint rows) needs a second way to solve. One
simulation branches to it (`lax.cond`, only the branch taken runs). Under `jax.vmap`
a branch becomes a select that runs both branches for every member at every step, so
batched simulations (`simulate_batch`), and single ones whose formulation has read full
row rank at the initial state, trace inside `batched_solves(...)`, which decides once,
from that rank: full row rank → plain Cholesky, no branch; redundant rows → for
m ≤ `UNROLL_MAX`, an unrolled Cholesky in `jnp` operations that skips zero pivots
(branch-free; larger m keep the branch).
"""

from __future__ import annotations

import contextlib
import functools

import jax
import jax.numpy as jnp

from ._blocktridiag import MAX_BLOCK, small_cholesky, small_cholesky_solve

UNROLL_MAX = 48
"""Largest `m` factored by the unrolled, pivot-skipping Cholesky (its program grows like m²)."""

SMALL_MAX = MAX_BLOCK
"""Largest `m` whose definite solves use the unrolled Cholesky of `mbdjax._blocktridiag`
instead of LAPACK: a few dozen scalar operations that XLA fuses, and no library call, so
XLA's CPU backend can compile a simulation's whole step loop into one kernel
(`mbdjax._xla_cpu`)."""

PIVOT_RTOL = 1e-14
"""In the unrolled Cholesky, a pivot below `PIVOT_RTOL · max diag(S)` marks a dependent row."""

_BATCHED = [None]


@contextlib.contextmanager
def batched_solves(semidefinite: bool):
    """While tracing inside this context (code that will be vmapped, or a simulation
    whose constraint rows are known to be independent), `fallback=True`
    solves have no branch: with `semidefinite=False` (the caller knows `S` is definite,
    e.g. the constraints have full row rank) a plain Cholesky; with `semidefinite=True`
    and m ≤ `UNROLL_MAX` the pivot-skipping unrolled Cholesky."""
    old = _BATCHED[0]
    _BATCHED[0] = "semidefinite" if semidefinite else "definite"
    try:
        yield
    finally:
        _BATCHED[0] = old


def batched_mode():
    """`"definite"`, `"semidefinite"` or None (not inside `batched_solves`)."""
    return _BATCHED[0]


def definite_solve(fallback: bool) -> bool:
    """Whether an `spd_solve(S, r, fallback)` traced here would be a plain Cholesky with
    no fallback (so a caller may solve a structured definite `S` its own way)."""
    return not fallback or _BATCHED[0] == "definite"


def _semidefinite_factor(S):
    """Lower Cholesky factor of a positive semidefinite `S (m, m)` by rank-one updates,
    unrolled, and the reciprocal pivots `(m,)`; a pivot below `PIVOT_RTOL · max diag(S)`
    (a row dependent on the earlier ones) gets a zero column and reciprocal zero."""
    m = S.shape[-1]
    tiny = PIVOT_RTOL * jnp.max(jnp.abs(jnp.diagonal(S)))
    idx = jnp.arange(m)
    A, cols, invs = S, [], []
    for k in range(m):
        d = A[k, k]
        ok = d > tiny
        inv = jnp.where(ok, jax.lax.rsqrt(jnp.where(ok, d, 1.0)), 0.0)
        col = jnp.where(idx >= k, A[:, k] * inv, 0.0)
        A = A - col[:, None] * col[None, :]
        cols.append(col)
        invs.append(inv)
    return jnp.stack(cols, axis=1), jnp.stack(invs)


def _semidefinite_solve(factor, r):
    """`x` with `L Lᵀ x = r` by column-oriented forward and back substitution; the
    unknowns of skipped pivots are zero. `r (m,)` or `(m, k)`."""
    L, inv = factor
    m = L.shape[0]
    shape = (slice(None),) + (None,) * (r.ndim - 1)
    y, ys = r, []
    for k in range(m):
        yk = y[k] * inv[k]
        ys.append(yk)
        y = y - L[:, k][shape] * yk
    x, xs = jnp.stack(ys), [None] * m
    for k in reversed(range(m)):
        xk = x[k] * inv[k]
        xs[k] = xk
        x = x - L[k, :][shape] * xk
    return jnp.stack(xs)


def _cholesky(S):
    # S is symmetric by construction (B W Bᵀ, J Jᵀ): LAPACK reads one triangle, so the
    # symmetrizing pass of jnp.linalg.cholesky is one fused kernel per call for nothing.
    return jax.lax.linalg.cholesky(S, symmetrize_input=False)


def _factor(S, fallback):
    if fallback and _BATCHED[0] == "semidefinite" and S.shape[-1] <= UNROLL_MAX:
        return ("unrolled", _semidefinite_factor(S))
    if definite_solve(fallback) and S.shape[-1] <= SMALL_MAX:
        return ("small", small_cholesky(S))
    if fallback and _BATCHED[0] == "definite":
        return ("definite", _cholesky(S))
    return ("lapack", _cholesky(S))


def _solve(factor, S, r, fallback):
    """`S⁻¹ r` from a `_factor`; with `fallback` and the LAPACK factor, an SVD
    least-squares solve instead when it failed or is ill-conditioned (`lax.cond`)."""
    kind, F = factor
    if kind == "unrolled":
        return _semidefinite_solve(F, r)
    if kind == "small":
        x = small_cholesky_solve(F, r[:, None] if r.ndim == 1 else r)
        return x[:, 0] if r.ndim == 1 else x
    chol = lambda _: jax.scipy.linalg.cho_solve((F, True), r)  # noqa: E731
    if not fallback or kind == "definite":
        return chol(None)
    d = jnp.diagonal(F)
    good = jnp.all(jnp.isfinite(F)) & (jnp.min(d) > 1e-7 * jnp.max(d))
    return jax.lax.cond(good, chol, lambda _: jnp.linalg.lstsq(S, r)[0], None)


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def spd_solve(S, r, fallback=False):
    """`x = S⁻¹ r` for a symmetric positive definite `S (m, m)`, `r (m,)` or `(m, k)`.

    Cholesky: LAPACK's, or for `m ≤ SMALL_MAX` without a fallback an unrolled one in
    `jnp` operations (no library call inside a compiled loop).

    With `fallback=True` a singular or ill-conditioned `S` (redundant constraint rows;
    Cholesky pivots below 1e-7 of the largest) is solved by SVD least squares, which
    gives the minimum-norm solution of a consistent system. Inside
    `batched_solves(semidefinite=True)` (m ≤ `UNROLL_MAX`) the pivot-skipping
    Cholesky solves it instead, giving a solution with the dependent unknowns zero
    (`Jᵀ x` for `S = J Jᵀ` is the same); inside `batched_solves(semidefinite=False)`
    the fallback is off.
    Derivatives, forward and reverse, are those of the solve, `dx = S⁻¹(dr − dS x)`,
    with the factorization of the primal reused (exact for nonsingular `S`).
    """
    return _solve(_factor(S, fallback), S, r, fallback)


@spd_solve.defjvp
def _spd_solve_jvp(fallback, primals, tangents):
    S, r = primals
    dS, dr = tangents
    factor = _factor(S, fallback)
    x = _solve(factor, S, r, fallback)
    return x, _solve(factor, S, dr - dS @ x, fallback)
