"""Symmetric positive definite solves whose derivatives reuse the factorization.

The Schur complement `S = B M⁻¹ Bᵀ` of the augmented equations (THEORY §5) and the
Gram matrix `J Jᵀ` of the projection are solved by Cholesky. Differentiating through
the factorization itself costs two triangular solves with m × m matrices per
tangent (O(m³)); differentiating the solve instead, `dx = S⁻¹(dr − dS x)`, costs two
triangular solves with a vector (O(m²)) and transposes just as cheaply for reverse
mode. That is what `spd_solve` does.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp


def _solve(L, S, r, fallback):
    """`S⁻¹ r` from the Cholesky factor `L`; with `fallback`, an SVD least-squares
    solve instead when `L` failed or is ill-conditioned (only that branch runs)."""
    chol = lambda _: jax.scipy.linalg.cho_solve((L, True), r)  # noqa: E731
    if not fallback:
        return chol(None)
    d = jnp.diagonal(L)
    good = jnp.all(jnp.isfinite(L)) & (jnp.min(d) > 1e-7 * jnp.max(d))
    return jax.lax.cond(good, chol, lambda _: jnp.linalg.lstsq(S, r)[0], None)


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def spd_solve(S, r, fallback=False):
    """`x = S⁻¹ r` for a symmetric positive definite `S (m, m)`, `r (m,)` or `(m, k)`.

    With `fallback=True` a singular or ill-conditioned `S` (redundant constraint rows;
    Cholesky pivots below 1e-7 of the largest) is solved by SVD least squares, which
    gives the minimum-norm solution of a consistent system. Derivatives, forward and
    reverse, are those of the solve, `dx = S⁻¹(dr − dS x)`, with the factorization of
    the primal reused (exact for nonsingular `S`).
    """
    return _solve(jnp.linalg.cholesky(S), S, r, fallback)


@spd_solve.defjvp
def _spd_solve_jvp(fallback, primals, tangents):
    S, r = primals
    dS, dr = tangents
    L = jnp.linalg.cholesky(S)
    x = _solve(L, S, r, fallback)
    return x, _solve(L, S, dr - dS @ x, fallback)
