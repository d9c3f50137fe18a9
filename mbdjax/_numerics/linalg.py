"""Symmetric positive (semi)definite solves whose derivatives reuse the factorization.

The Schur complement `S = B M⁻¹ Bᵀ` of the augmented equations (THEORY §5) and the
Gram matrix `J Jᵀ` of the projection are solved by Cholesky. Differentiating through
the factorization itself costs two triangular solves with m × m matrices per
tangent (O(m³)); differentiating the solve instead, `dx = S⁻¹(dr − dS x)`, costs two
triangular solves with a vector (O(m²)) and transposes just as cheaply for reverse
mode. That is what `spd_solve` does.

A semidefinite `S` (dependent rows) only reaches these solves when the rank could not
be read before the run (the initial state staged by an enclosing `jit`): `simulate`
removes redundant rows once, at the initial state (`mbdjax._redundancy`), and then
tells the formulation and the stabilization that the rows are independent, so their
solves are plain Cholesky (`fallback=False`). With `fallback=True` an ill-conditioned
factor is caught and the system solved by least squares behind a `lax.cond`.

The numerical rank of a constraint Jacobian, and which of its rows are independent,
are read here too (`numerical_rank`, `independent_rows`, `dependent_rows`, on concrete NumPy
arrays), so that `check`, the row selection of `simulate`, the formulations and the
initial-condition solver share one rank procedure and one tolerance.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .blocktridiag import MAX_BLOCK, small_cholesky, small_cholesky_solve

SMALL_MAX = MAX_BLOCK
"""Largest `m` whose definite solves use the unrolled Cholesky of `mbdjax._numerics.blocktridiag`
instead of LAPACK: a few dozen scalar operations that XLA fuses, and no library call, so
XLA's CPU backend can compile a simulation's whole step loop into one kernel
(`mbdjax._numerics.xla_cpu`)."""


def _cholesky(S):
    # S is symmetric by construction (B W Bᵀ, J Jᵀ): LAPACK reads one triangle, so the
    # symmetrizing pass of jnp.linalg.cholesky is one fused kernel per call for nothing.
    return jax.lax.linalg.cholesky(S, symmetrize_input=False)


def cholesky_diagonal(S):
    """The diagonal of the Cholesky factor `L` of a symmetric `S (m, m)` (`L Lᵀ = S`),
    NaN from the first non-positive pivot on, as LAPACK's factor gives.

    Built from `jnp` arithmetic only (a `fori_loop` of `m` rank-one updates of the
    trailing block, O(m³) in all): no library call, so a loop that holds it (the
    step-size guard's rarely taken branch, `mbdjax._singular`) can still be compiled
    into one kernel (`mbdjax._numerics.xla_cpu`). Indices are one-hot masks, not scatters,
    which XLA also keeps out of such loops."""
    m = S.shape[-1]
    idx = jnp.arange(m)

    def column(j, carry):
        A, diag = carry
        e = (idx == j).astype(A.dtype)
        a = A @ e                                   # column j of the updated matrix
        d = jnp.sqrt(a @ e)
        below = jnp.where(idx > j, a / d, 0.0)
        return A - jnp.outer(below, below), jnp.where(idx == j, d, diag)

    return jax.lax.fori_loop(0, m, column, (S, jnp.zeros(m, dtype=S.dtype)))[1]


def _factor(S, fallback):
    if not fallback and S.shape[-1] <= SMALL_MAX:
        return ("small", small_cholesky(S))
    return ("lapack", _cholesky(S))


def _solve(factor, S, r, fallback):
    """`S⁻¹ r` from a `_factor`; with `fallback` and the LAPACK factor, an SVD
    least-squares solve instead when it failed or is ill-conditioned (`lax.cond`)."""
    kind, F = factor
    if kind == "small":
        x = small_cholesky_solve(F, r[:, None] if r.ndim == 1 else r)
        return x[:, 0] if r.ndim == 1 else x
    chol = lambda _: jax.scipy.linalg.cho_solve((F, True), r)  # noqa: E731
    if not fallback:
        return chol(None)
    d = jnp.diagonal(F)
    good = jnp.all(jnp.isfinite(F)) & (jnp.min(d) > 1e-7 * jnp.max(d))
    return jax.lax.cond(good, chol, lambda _: jnp.linalg.lstsq(S, r)[0], None)


def spd_factor(S):
    """A Cholesky factorization of an SPD `S (m, m)` (rows known to be independent: no
    least-squares fallback), for several `spd_factor_solve` at the cost of one."""
    return _factor(S, False)


def spd_factor_solve(factor, S, r):
    """`S⁻¹ r` from `factor = spd_factor(S)`; `r (m,)` or `(m, k)`. Derivatives, as for
    `spd_solve`, are those of the solve, `dx = S⁻¹(dr − dS x)` with the same factor:
    not through the factorization, whose tangent is never formed."""
    kind, F = factor
    return _factor_solve(kind, F, S, r)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _factor_solve(kind, F, S, r):
    return _solve((kind, F), S, r, False)


@_factor_solve.defjvp
def _factor_solve_jvp(kind, primals, tangents):
    F, S, r = primals
    _, dS, dr = tangents
    x = _solve((kind, F), S, r, False)
    return x, _solve((kind, F), S, dr - dS @ x, False)


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def spd_solve(S, r, fallback=False):
    """`x = S⁻¹ r` for a symmetric positive definite `S (m, m)`, `r (m,)` or `(m, k)`.

    Cholesky: LAPACK's, or for `m ≤ SMALL_MAX` without a fallback an unrolled one in
    `jnp` operations (no library call inside a compiled loop).

    With `fallback=True` a singular or ill-conditioned `S` (redundant constraint rows;
    Cholesky pivots below 1e-7 of the largest) is solved by SVD least squares, which
    gives the minimum-norm solution of a consistent system (only the branch taken
    runs; under `jax.vmap` both do, for every member).
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


def numerical_rank(s, shape, rtol):
    """`(rank, tol)` of a matrix of `shape` from its singular values `s` (descending):
    the count of singular values above `tol = rtol · max(shape) · max(σ_max, 1)`. The
    floor of 1 on σ_max keeps a matrix of tiny entries from counting as full rank."""
    if s.size == 0:
        return 0, 0.0
    tol = rtol * max(shape) * max(float(s[0]), 1.0)
    return int(np.sum(s > tol)), tol


def independent_rows(B, rtol=1e-9) -> list[int]:
    """Indices of the rows of `B (m, n)` kept greedily, in order: a row is kept when it
    raises the numerical rank of the rows kept before it (its Gram–Schmidt residual
    against their orthonormal basis exceeds the rank tolerance of `B`, the one
    `check` uses), and at most `rank(B)` rows are kept. The one rank procedure of
    the library: `simulate`'s row selection, `check`'s redundant rows and the
    singular-configuration error all read it."""
    B = np.asarray(B, dtype=float)
    m, n = B.shape
    if m == 0:
        return []
    rank, tol = numerical_rank(np.linalg.svd(B, compute_uv=False), B.shape, rtol)
    basis = np.zeros((0, n))
    kept: list[int] = []
    for k in range(m):
        if len(kept) == rank:
            break
        row = B[k] - basis.T @ (basis @ B[k])
        row = row - basis.T @ (basis @ row)  # re-orthogonalize (classical Gram–Schmidt twice)
        norm = np.linalg.norm(row)
        if norm > tol:
            kept.append(k)
            basis = np.vstack([basis, row / norm])
    return kept


def dependent_rows(B, names, rtol=1e-9):
    """Names of the rows of `B` that `independent_rows` does not keep: each a linear
    combination of rows before it, to the rank tolerance `rtol`."""
    kept = set(independent_rows(B, rtol))
    return tuple(names[k] for k in range(np.shape(B)[0]) if k not in kept)
