"""A static sparsity pattern for the constraint Jacobian, and the products the
augmented formulation needs, all as gathers (no scatters, no dense `m × n` work).

For planar and spatial mechanisms each constraint row touches at most two bodies, so
`Φ_q` has a handful of nonzeros per row. With the pattern fixed at build time:

    B x            per row:     Σ_k vals[e_k] x[col(e_k)]
    Bᵀ y           per column:  Σ_k vals[e_k] y[row(e_k)]
    B diag(w) Bᵀ   per structurally nonzero (i, j):  Σ over entries a of row i and
                   b of row j in the same column: vals[a] w[col(a)] vals[b]

References: Haug §6.3 (the Schur complement of the augmented matrix is `B M⁻¹ Bᵀ`);
Baraff, "Linear-time dynamics using Lagrange multipliers" (1996) on its sparsity.
"""

from __future__ import annotations

from collections import defaultdict

import jax.numpy as jnp
import numpy as np


def _padded(groups, count, fill):
    """`(count, K)` int array of each group's members, padded with `fill`."""
    width = max([len(g) for g in groups] + [1])
    out = np.full((count, width), fill, dtype=np.int32)
    for k, members in enumerate(groups):
        out[k, : len(members)] = members
    return out


class JacobianPattern:
    """Positions `(rows[e], cols[e])` of the `nnz` structural nonzeros of an `(m, n)` matrix.

    A plain object compared by identity, so it can sit in a static field of a Model.
    Values are a `(nnz,)` array in the same order as `rows`/`cols`.
    """

    def __init__(self, rows, cols, shape):
        rows = np.asarray(rows, dtype=np.int32).reshape(-1)
        cols = np.asarray(cols, dtype=np.int32).reshape(-1)
        m, n = (int(s) for s in shape)
        if rows.shape != cols.shape:
            raise ValueError("JacobianPattern: rows and cols must have the same length.")
        if rows.size and (rows.min() < 0 or rows.max() >= m or cols.min() < 0 or cols.max() >= n):
            raise ValueError(f"JacobianPattern: an index lies outside the shape {(m, n)}.")
        if len(set(zip(rows.tolist(), cols.tolist()))) != rows.size:
            raise ValueError("JacobianPattern: two entries share a position.")
        self.rows, self.cols, self.shape, self.nnz = rows, cols, (m, n), int(rows.size)
        zero = self.nnz  # index of an appended zero value
        by_row, by_col = defaultdict(list), defaultdict(list)
        for e, (i, j) in enumerate(zip(rows.tolist(), cols.tolist())):
            by_row[i].append(e)
            by_col[j].append(e)
        self._row_entries = _padded([by_row[i] for i in range(m)], m, zero)
        self._col_entries = _padded([by_col[j] for j in range(n)], n, zero)
        # Schur products: every pair of entries sharing a column contributes to S[i, j].
        pairs = defaultdict(list)
        for j in range(n):
            for a in by_col[j]:
                for b in by_col[j]:
                    pairs[(rows[a], rows[b])].append((a, b))
        keys = sorted(pairs)
        self._pair_a = _padded([[a for a, _ in pairs[k]] for k in keys], len(keys), zero)
        self._pair_b = _padded([[b for _, b in pairs[k]] for k in keys], len(keys), zero)
        source = np.full(m * m, len(keys), dtype=np.int32)
        for u, (i, j) in enumerate(keys):
            source[i * m + j] = u
        self._schur_source = source
        dense_source = np.full(m * n, zero, dtype=np.int32)
        dense_source[rows * n + cols] = np.arange(self.nnz, dtype=np.int32)
        self._dense_source = dense_source

    def _ext(self, vals):
        return jnp.concatenate([vals, jnp.zeros((1,), dtype=vals.dtype)])

    def dense(self, vals):
        """The `(m, n)` matrix."""
        m, n = self.shape
        return self._ext(vals)[self._dense_source].reshape(m, n)

    def matvec(self, vals, x):
        """`B x`, shape `(m,)`."""
        v = self._ext(vals)
        xc = jnp.concatenate([x[self.cols], jnp.zeros((1,), dtype=x.dtype)])
        e = self._row_entries
        return jnp.sum(v[e] * xc[e], axis=1)

    def rmatvec(self, vals, y):
        """`Bᵀ y`, shape `(n,)`."""
        v = self._ext(vals)
        yr = jnp.concatenate([y[self.rows], jnp.zeros((1,), dtype=y.dtype)])
        e = self._col_entries
        return jnp.sum(v[e] * yr[e], axis=1)

    def schur(self, vals, w):
        """`B diag(w) Bᵀ`, shape `(m, m)`."""
        m = self.shape[0]
        v = self._ext(vals)
        vw = self._ext(vals * w[self.cols])
        s = jnp.sum(vw[self._pair_a] * v[self._pair_b], axis=1)
        return self._ext(s)[self._schur_source].reshape(m, m)
