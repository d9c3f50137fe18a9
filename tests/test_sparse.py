"""JacobianPattern products against dense NumPy, on random patterns (hypothesis), and the
block-tridiagonal form of B diag(w) Bᵀ on banded ones."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mbdjax._numerics.sparse import JacobianPattern


@st.composite
def patterns(draw):
    m = draw(st.integers(1, 6))
    n = draw(st.integers(1, 7))
    cells = draw(st.lists(st.tuples(st.integers(0, m - 1), st.integers(0, n - 1)), min_size=1,
                          max_size=m * n, unique=True))
    seed = draw(st.integers(0, 2**31 - 1))
    return m, n, cells, seed


def built(case):
    """`(m, n, cells, pattern, rng)` from a drawn case."""
    m, n, cells, seed = case
    rows, cols = zip(*cells)
    return m, n, cells, JacobianPattern(rows, cols, (m, n)), np.random.default_rng(seed)


@settings(max_examples=40, deadline=None)
@given(patterns())
def test_products_match_dense(case):
    m, n, cells, pat, rng = built(case)
    rows, cols = zip(*cells)
    vals = rng.standard_normal(len(cells))
    dense = np.zeros((m, n))
    dense[list(rows), list(cols)] = vals
    x, y, w = rng.standard_normal(n), rng.standard_normal(m), rng.uniform(0.5, 2.0, n)
    v = jnp.asarray(vals)
    # exact identities up to round-off of sums of a few products
    np.testing.assert_allclose(pat.dense(v), dense, atol=0)
    np.testing.assert_allclose(pat.matvec(v, jnp.asarray(x)), dense @ x, atol=1e-12)
    np.testing.assert_allclose(pat.rmatvec(v, jnp.asarray(y)), dense.T @ y, atol=1e-12)
    np.testing.assert_allclose(pat.schur(v, jnp.asarray(w)), dense @ np.diag(w) @ dense.T, atol=1e-12)


@st.composite
def banded_patterns(draw):
    """Random patterns whose rows touch a window of columns moving down the matrix, as a
    chain's joints do, so that B Bᵀ is banded."""
    m = draw(st.integers(4, 14))
    n = m + draw(st.integers(0, 3))
    width = draw(st.integers(1, 3))
    cells = set()
    for i in range(m):
        lo = min(i * n // m, n - 1)
        for j in range(lo, min(lo + width, n)):
            if draw(st.booleans()) or j == lo:
                cells.add((i, j))
    return m, n, sorted(cells), draw(st.integers(0, 2**31 - 1))


@settings(max_examples=20, deadline=None)
@given(banded_patterns())
def test_schur_blocks_reassemble_the_schur_complement(case):
    m, n, cells, pat, rng = built(case)
    v, w = jnp.asarray(rng.standard_normal(len(cells))), jnp.asarray(rng.uniform(0.5, 2.0, n))
    S = np.asarray(jax.jit(pat.schur)(v, w))
    size = pat.schur_block_size
    if size is None:
        with pytest.raises(ValueError, match="not block tridiagonal"):
            pat.schur_blocks(v, w)
        return
    D, E = (np.asarray(a) for a in jax.jit(pat.schur_blocks)(v, w))
    k = D.shape[0]
    assert k == -(-m // size) and D.shape == (k, size, size) and E.shape == (k - 1, size, size)
    full = np.zeros((k * size, k * size))
    for i in range(k):
        full[i * size:(i + 1) * size, i * size:(i + 1) * size] = D[i]
        if i + 1 < k:
            full[(i + 1) * size:(i + 2) * size, i * size:(i + 1) * size] = E[i]
            full[i * size:(i + 1) * size, (i + 1) * size:(i + 2) * size] = E[i].T
    # the same products, summed over each block row's columns instead of per entry pair
    np.testing.assert_allclose(full[:m, :m], S, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(full[m:, m:], np.eye(k * size - m))  # padding rows: identity
    np.testing.assert_array_equal(full[:m, m:], 0.0)


def test_bad_patterns_are_rejected():
    with pytest.raises(ValueError, match="share a position"):
        JacobianPattern([0, 0], [1, 1], (2, 2))
    with pytest.raises(ValueError, match="outside the shape"):
        JacobianPattern([0, 2], [0, 0], (2, 2))
