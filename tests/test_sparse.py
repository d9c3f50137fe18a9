"""JacobianPattern products against dense NumPy, on random patterns (hypothesis)."""

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mbdjax._sparse import JacobianPattern


@st.composite
def patterns(draw):
    m = draw(st.integers(1, 6))
    n = draw(st.integers(1, 7))
    cells = draw(st.lists(st.tuples(st.integers(0, m - 1), st.integers(0, n - 1)), min_size=1,
                          max_size=m * n, unique=True))
    seed = draw(st.integers(0, 2**31 - 1))
    return m, n, cells, seed


@settings(max_examples=40, deadline=None)
@given(patterns())
def test_products_match_dense(case):
    m, n, cells, seed = case
    rng = np.random.default_rng(seed)
    rows, cols = zip(*cells)
    pat = JacobianPattern(rows, cols, (m, n))
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


def test_bad_patterns_are_rejected():
    with pytest.raises(ValueError, match="share a position"):
        JacobianPattern([0, 0], [1, 1], (2, 2))
    with pytest.raises(ValueError, match="outside the shape"):
        JacobianPattern([0, 2], [0, 0], (2, 2))
