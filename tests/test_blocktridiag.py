"""Block cyclic reduction (`mbdjax._numerics.blocktridiag`) and its use for the block-tridiagonal
Schur complement of serial chains (the blocks themselves: tests/test_sparse.py).

Expected values: dense NumPy solves and the dense Schur complement `B diag(w) Bᵀ` of
the same pattern; tolerances are round-off of well-conditioned systems (≤ 1e-12).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mbdjax._numerics.blocktridiag import (block_tridiagonal_factor, block_tridiagonal_factor_solve,
                                  block_tridiagonal_solve, small_spd_solve)
from mbdjax._numerics.sparse import JacobianPattern


def random_block_tridiagonal(k, s, rng):
    """A random SPD block-tridiagonal matrix (diagonally dominant blocks), its blocks."""
    m = k * s
    A = np.zeros((m, m))
    for i in range(k):
        G = rng.standard_normal((s, 3 * s))
        A[i * s:(i + 1) * s, i * s:(i + 1) * s] = G @ G.T + 4 * s * np.eye(s)
        if i + 1 < k:
            C = rng.standard_normal((s, s))
            A[(i + 1) * s:(i + 2) * s, i * s:(i + 1) * s] = C
            A[i * s:(i + 1) * s, (i + 1) * s:(i + 2) * s] = C.T
    D = np.stack([A[i * s:(i + 1) * s, i * s:(i + 1) * s] for i in range(k)])
    E = np.zeros((k - 1, s, s))
    for i in range(k - 1):
        E[i] = A[(i + 1) * s:(i + 2) * s, i * s:(i + 1) * s]
    return A, D, E


solve = jax.jit(block_tridiagonal_solve)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 13), st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_cyclic_reduction_matches_dense_solve(k, s, seed):
    rng = np.random.default_rng(seed)
    A, D, E = random_block_tridiagonal(k, s, rng)
    r = rng.standard_normal(k * s)
    x = solve(jnp.asarray(D), jnp.asarray(E), jnp.asarray(r).reshape(k, s))
    np.testing.assert_allclose(np.asarray(x).reshape(-1), np.linalg.solve(A, r), rtol=0, atol=1e-12)


@jax.jit
def _factor_then_solve(D, E, R):
    factor = block_tridiagonal_factor(D, E)
    return jnp.stack([block_tridiagonal_factor_solve(factor, r) for r in R])


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 11), st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_one_reduction_serves_several_right_sides(k, s, seed):
    """`block_tridiagonal_factor` once, then three right sides (as the projection's
    Newton steps use it), each against NumPy's dense solve (round-off, 1e-12)."""
    rng = np.random.default_rng(seed)
    A, D, E = random_block_tridiagonal(k, s, rng)
    R = rng.standard_normal((3, k * s))
    X = _factor_then_solve(jnp.asarray(D), jnp.asarray(E), jnp.asarray(R).reshape(3, k, s))
    np.testing.assert_allclose(np.asarray(X).reshape(3, -1), np.linalg.solve(A, R.T).T, rtol=0, atol=1e-12)


@pytest.mark.parametrize("s", [2, 3])
def test_a_batch_of_systems_under_vmap(s):
    """`jax.vmap` over systems takes the batched rule (the batch the innermost axis):
    each member against NumPy's dense solve (round-off, 1e-12), the sub-diagonal
    blocks shared by every member; a member with an indefinite pivot gets NaN alone.
    Block sizes 2 (closed form) and 3 (unrolled Cholesky)."""
    rng = np.random.default_rng(11 + s)
    k, B = 7, 5
    systems = [random_block_tridiagonal(k, s, rng) for _ in range(B)]
    E = systems[0][2]
    A = np.stack([a for a, _, _ in systems])
    D = np.stack([d for _, d, _ in systems])
    for b in range(B):                   # the shared E in every dense matrix
        for i in range(k - 1):
            A[b, (i + 1) * s:(i + 2) * s, i * s:(i + 1) * s] = E[i]
            A[b, i * s:(i + 1) * s, (i + 1) * s:(i + 2) * s] = E[i].T
    r = rng.standard_normal((B, k * s))
    batched = jax.jit(jax.vmap(block_tridiagonal_solve, in_axes=(0, None, 0)))
    x = batched(jnp.asarray(D), jnp.asarray(E), jnp.asarray(r).reshape(B, k, s))
    np.testing.assert_allclose(np.asarray(x).reshape(B, -1), np.linalg.solve(A, r[..., None])[..., 0],
                               rtol=0, atol=1e-12)
    D[2, 3] = -np.eye(s)
    x = np.asarray(batched(jnp.asarray(D), jnp.asarray(E), jnp.asarray(r).reshape(B, k, s)))
    assert np.isnan(x[2]).any() and np.isfinite(np.delete(x, 2, axis=0)).all()


def test_small_spd_solve_batches():
    rng = np.random.default_rng(3)
    G = rng.standard_normal((5, 3, 3))
    A = G @ np.swapaxes(G, 1, 2) + np.eye(3)
    R = rng.standard_normal((5, 3, 2))
    np.testing.assert_allclose(small_spd_solve(jnp.asarray(A), jnp.asarray(R)), np.linalg.solve(A, R), atol=1e-12)


def test_derivatives_are_those_of_the_solve():
    # d(S⁻¹ r) = S⁻¹ (dr − dS x), forward mode through the reduction, against dense NumPy.
    rng = np.random.default_rng(7)
    k, s = 7, 2
    A, D, E = random_block_tridiagonal(k, s, rng)
    _, dD, dE = random_block_tridiagonal(k, s, rng)
    dA = np.zeros_like(A)
    for i in range(k):
        dA[i * s:(i + 1) * s, i * s:(i + 1) * s] = dD[i]
        if i + 1 < k:
            dA[(i + 1) * s:(i + 2) * s, i * s:(i + 1) * s] = dE[i]
            dA[i * s:(i + 1) * s, (i + 1) * s:(i + 2) * s] = dE[i].T
    r, dr = rng.standard_normal(k * s), rng.standard_normal(k * s)
    f = lambda D, E, r: block_tridiagonal_solve(D, E, r.reshape(k, s)).reshape(-1)  # noqa: E731
    primals = tuple(jnp.asarray(a) for a in (D, E, r))
    tangents = tuple(jnp.asarray(a) for a in (dD, dE, dr))
    x, dx = jax.jit(lambda p, t: jax.jvp(f, p, t))(primals, tangents)
    xs = np.linalg.solve(A, r)
    np.testing.assert_allclose(dx, np.linalg.solve(A, dr - dA @ xs), atol=1e-11)
    # reverse mode: the gradient of cᵀx with respect to r is S⁻¹ c (S symmetric)
    c = rng.standard_normal(k * s)
    g = jax.jit(jax.grad(lambda r: f(jnp.asarray(D), jnp.asarray(E), r) @ c))(jnp.asarray(r))
    np.testing.assert_allclose(g, np.linalg.solve(A, c), atol=1e-12)


def test_indefinite_gives_nan_and_bad_shapes_are_rejected():
    D = jnp.stack([jnp.eye(2), -jnp.eye(2), jnp.eye(2)])
    x = block_tridiagonal_solve(D, jnp.zeros((2, 2, 2)), jnp.ones((3, 2)))
    assert bool(jnp.any(jnp.isnan(x)))
    for s in (1, 3):  # the closed-form 1 × 1 and the unrolled Cholesky 3 × 3 blocks too
        D = jnp.stack([jnp.eye(s), -jnp.eye(s)])
        assert bool(jnp.any(jnp.isnan(block_tridiagonal_solve(D, jnp.zeros((1, s, s)), jnp.ones((2, s))))))
    with pytest.raises(ValueError, match="do not describe"):
        block_tridiagonal_solve(D, jnp.zeros((3, 2, 2)), jnp.ones((3, 2)))
    with pytest.raises(ValueError, match="MAX_BLOCK"):
        block_tridiagonal_solve(jnp.ones((2, 7, 7)), jnp.ones((1, 7, 7)), jnp.ones((2, 7)))


def test_pendulum_chain_uses_blocks_and_matches_the_dense_solve():
    from mbdjax import _dynamics as dyn, _kinematics as kin
    from mbdjax._numerics.linalg import spd_solve
    from mbdjax.models import pendulum_chain

    ex = pendulum_chain(6)
    model, p = ex.model, ex.model.params
    pat = model.jacobian_pattern
    assert pat.schur_block_size == 2  # one revolute joint (two rows) per block
    rng = np.random.default_rng(0)
    q = ex.q0
    vals = kin.holonomic_jacobian_values(model, q, 0.0, p)
    w = 1.0 / dyn.mass_diagonal(model, p)
    rhs = jnp.asarray(rng.standard_normal(model.m))
    np.testing.assert_allclose(pat.block_schur_solve(vals, w, rhs), spd_solve(pat.schur(vals, w), rhs),
                               rtol=1e-12, atol=1e-12)
    import mbdjax as mbd

    traj_block = mbd.simulate(model, ex.q0, ex.qd0, t1=0.5, saveat=3)
    traj_dense = mbd.simulate(model, ex.q0, ex.qd0, t1=0.5, saveat=3,
                              formulation=mbd.Augmented(redundant=True))  # dense S, Cholesky branch
    np.testing.assert_allclose(traj_block.q, traj_dense.q, atol=1e-12)
    np.testing.assert_allclose(traj_block.lam, traj_dense.lam, rtol=1e-9, atol=1e-9)


def test_projection_correction_with_blocks_is_the_minimum_norm_one():
    # J⁺ r (NumPy pinv) for a tridiagonal J Jᵀ, with independent rows (the reduction is
    # kept) and with two equal rows (singular pivots: the dense least-squares fallback).
    import types

    from mbdjax._stabilization.projection import _sparse_min_norm_correction

    rows, cols = [0, 1, 1, 2, 2, 3, 3], [0, 0, 1, 1, 2, 2, 3]
    pat = JacobianPattern(rows, cols, (4, 4))
    assert pat.schur_block_size == 1
    model = types.SimpleNamespace(jacobian_pattern=pat, n=4)
    correction = jax.jit(lambda v, r: _sparse_min_norm_correction(model, v, r))
    rng = np.random.default_rng(5)
    for vals in (rng.uniform(0.5, 2.0, 7), np.array([1.0, 1.0, 0.0, 0.0, 0.5, 0.3, 1.0])):
        J = np.zeros((4, 4))
        J[rows, cols] = vals
        r = J @ rng.standard_normal(4)  # consistent, as a drift of the constraints is
        np.testing.assert_allclose(correction(jnp.asarray(vals), jnp.asarray(r)), np.linalg.pinv(J) @ r,
                                   atol=1e-12)


def test_cholesky_diagonal_without_a_library_call():
    """`mbdjax._numerics.linalg.cholesky_diagonal` (the step-size guard's rank margin, kept free
    of LAPACK calls so the step loop compiles into one kernel) against NumPy's Cholesky
    factor's diagonal (reference: `numpy.linalg.cholesky`, LAPACK), to 1e-12 relative,
    for SPD matrices of 1 to 20 rows; an indefinite matrix gives NaN from its first
    non-positive pivot on, as LAPACK's factor does; and its program holds no
    `cholesky` primitive."""
    from mbdjax._numerics.linalg import cholesky_diagonal

    rng = np.random.default_rng(11)
    f = jax.jit(cholesky_diagonal)
    for m in (1, 2, 5, 8, 20):
        A = rng.standard_normal((m, m + 3))
        S = A @ A.T + 0.1 * np.eye(m)
        np.testing.assert_allclose(f(jnp.asarray(S)), np.diag(np.linalg.cholesky(S)), rtol=1e-12)
    d = np.asarray(f(jnp.asarray(np.diag([4.0, 1.0, -1.0, 2.0]))))
    np.testing.assert_allclose(d[:2], [2.0, 1.0], rtol=1e-15)
    assert np.all(np.isnan(d[2:]))
    assert "cholesky" not in str(jax.make_jaxpr(cholesky_diagonal)(jnp.eye(3)))


def test_one_system_sweeps_in_a_program_that_does_not_grow_with_the_blocks():
    """One system is factored and solved by block LDLᵀ sweeps (`lax.scan` over the
    blocks), so its program is the same size for 5 and for 40 blocks (the unrolled
    cyclic reduction's grew with every level and made a 10-link chain's step loop
    compile twice as long); it matches NumPy's dense solve (1e-12), and an indefinite
    pivot gives NaN, as LAPACK's Cholesky does."""
    def size(k):
        D, E, r = jnp.ones((k, 2, 2)), jnp.ones((k - 1, 2, 2)), jnp.ones((k, 2))
        return len(jax.make_jaxpr(
            lambda D, E, r: block_tridiagonal_factor_solve(block_tridiagonal_factor(D, E), r))(D, E, r).eqns)

    assert size(5) == size(40)
    rng = np.random.default_rng(8)
    A, D, E = random_block_tridiagonal(40, 2, rng)
    r = rng.standard_normal(80)
    np.testing.assert_allclose(np.asarray(solve(jnp.asarray(D), jnp.asarray(E), jnp.asarray(r).reshape(40, 2))).reshape(-1),
                               np.linalg.solve(A, r), rtol=0, atol=1e-12)
    D[20] = -np.eye(2)
    assert np.isnan(np.asarray(solve(jnp.asarray(D), jnp.asarray(E), jnp.asarray(r).reshape(40, 2)))).any()
