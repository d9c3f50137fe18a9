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

from .blocktridiag import (block_tridiagonal_factor, block_tridiagonal_factor_solve, block_tridiagonal_solve,
                            cyclic_factor, cyclic_factor_solve)


def _block_size(keys, m):
    """The smallest block size `s` with every structural nonzero `(i, j)` of a symmetric
    `m × m` matrix in the same or neighbouring blocks of `s` rows, when block cyclic
    reduction on those blocks is the faster solve; None otherwise.

    Measured on a CPU against LAPACK's dense Cholesky and solve: blocks of up to 3 rows
    win at any block count (2 × 2 blocks 2–3× from k = 2 to 20, the call overhead of
    LAPACK dominates small m), 4-row blocks from about 8 blocks on, larger blocks not
    before several tens of rows, where a mechanism's Schur complement is rarely that
    banded.
    """
    for size in range(1, 5):
        if all(abs(i // size - j // size) <= 1 for i, j in keys):
            return size if size <= 3 or -(-m // size) >= 8 else None
    return None


def _padded(groups, count, fill):
    """`(count, K)` int array of each group's members, padded with `fill`."""
    width = max([len(g) for g in groups] + [1])
    out = np.full((count, width), fill, dtype=np.int32)
    for k, members in enumerate(groups):
        out[k, : len(members)] = members
    return out


def _block_row_layout(rows, cols, m, n, s):
    """Index arrays for the blocks of `B diag(w) Bᵀ` with rows grouped `s` at a time.

    Block row `I` (rows `I s … I s + s − 1`) touches the columns `C_I`; the Schur
    blocks are `D[I] = B[I, C_I] W B[I, C_I]ᵀ` and, when every structural nonzero of
    `S` lies in neighbouring blocks, `E[I] = S[I+1, I] = B[I+1, C_I] W B[I, C_I]ᵀ`
    (entries of block `I + 1` outside `C_I` meet zeros of block `I`). Returns
    `entries (k, 2s, c)`, the position in `vals` (or the appended zero) of
    `B[I s + a, C_I[j]]` for `a < s` and of `B[(I+1) s + a − s, C_I[j]]` for `a ≥ s`;
    `columns (k, c)`, `C_I` padded with `n` (an appended zero weight); and `padding
    (k, s, s)`, ones on the diagonal of the rows past `m`.
    """
    k = -(-m // s)
    position = {(int(i), int(j)): e for e, (i, j) in enumerate(zip(rows, cols))}
    touched = [sorted({int(j) for i, j in zip(rows, cols) if i // s == block}) for block in range(k)]
    c = max([len(t) for t in touched] + [1])
    entries = np.full((k, 2 * s, c), len(rows), dtype=np.int32)
    columns = np.full((k, c), n, dtype=np.int32)
    padding = np.zeros((k, s, s))
    for block, cs in enumerate(touched):
        columns[block, : len(cs)] = cs
        for a in range(2 * s):
            row = block * s + a
            for jj, j in enumerate(cs):
                entries[block, a, jj] = position.get((row, j), len(rows))
    for i in range(m, k * s):
        padding[i // s, i % s, i % s] = 1.0
    return entries, columns, padding


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
        # Schur products: every pair of entries of rows i ≥ j sharing a column adds to
        # S[i, j] (S is symmetric: the upper triangle reads the same sums). The keys are
        # grouped by their number of terms so no group is padded.
        pairs = defaultdict(list)
        for j in range(n):
            for a in by_col[j]:
                for b in by_col[j]:
                    if rows[a] >= rows[b]:
                        pairs[(int(rows[a]), int(rows[b]))].append((a, b))
        keys = sorted(pairs, key=lambda key: (len(pairs[key]), key))
        self._pair_groups = []
        for width in sorted({len(v) for v in pairs.values()}):
            group = [key for key in keys if len(pairs[key]) == width]
            a = np.array([[a for a, _ in pairs[key]] for key in group], dtype=np.int32)
            b = np.array([[b for _, b in pairs[key]] for key in group], dtype=np.int32)
            self._pair_groups.append((a, b))
        slot = {key: u for u, key in enumerate(keys)}
        source = np.full(m * m, len(keys), dtype=np.int32)  # an appended zero sum
        for (i, j), u in slot.items():
            source[i * m + j] = source[j * m + i] = u
        self._schur_source = source
        # Block-tridiagonal form of S, when its nonzeros lie within neighbouring blocks
        # of some small size s (a serial chain of joints): see `schur_blocks`.
        self.schur_block_size = _block_size(list(slot), m)
        if self.schur_block_size is not None:
            self._block_rows = _block_row_layout(rows, cols, m, n, self.schur_block_size)
        dense_source = np.full(m * n, zero, dtype=np.int32)
        dense_source[rows * n + cols] = np.arange(self.nnz, dtype=np.int32)
        self._dense_source = dense_source

    def _ext(self, vals):
        return jnp.concatenate([vals, jnp.zeros((1,), dtype=vals.dtype)])

    def dense(self, vals):
        """The `(m, n)` matrix."""
        m, n = self.shape
        return self._ext(vals)[self._dense_source].reshape(m, n)

    def dense_on_host(self, vals):
        """The `(m, n)` matrix as a NumPy array, from concrete `vals` (no program to
        compile: the construction-time checks)."""
        return np.append(np.asarray(vals, dtype=float), 0.0)[self._dense_source].reshape(self.shape)

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

    def _schur_sums(self, vals, w):
        """The sums of the lower-triangle keys, then a zero."""
        v = self._ext(vals)
        vw = self._ext(vals * w[self.cols])
        sums = [jnp.sum(vw[a] * v[b], axis=1) for a, b in self._pair_groups]
        return jnp.concatenate(sums + [jnp.zeros((1,), dtype=v.dtype)])

    def schur(self, vals, w):
        """`B diag(w) Bᵀ`, shape `(m, m)`."""
        m = self.shape[0]
        return self._schur_sums(vals, w)[self._schur_source].reshape(m, m)

    def schur_blocks(self, vals, w):
        """`B diag(w) Bᵀ` as the blocks of a block-tridiagonal matrix (only when
        `schur_block_size` is not None): `D (k, s, s)` on the diagonal and
        `E (k-1, s, s)` below it, `k = ⌈m / s⌉`, `s = schur_block_size`; rows past `m`
        (padding of the last block) are identity rows. For
        `mbdjax._numerics.blocktridiag.block_tridiagonal_solve`.

        Both come from one product over the block rows (`_block_row_layout`): with
        `G[I] (2s, c)` the rows of blocks `I` and `I + 1` on the `c` columns that block
        `I` touches, `G[I] diag(w) G[I, :s]ᵀ` stacks `D[I]` over `E[I]`.
        """
        if self.schur_block_size is None:
            raise ValueError("JacobianPattern.schur_blocks: B diag(w) Bᵀ is not block tridiagonal.")
        entries, columns, padding = self._block_rows
        s = self.schur_block_size
        G = self._ext(vals)[entries]                                     # (k, 2s, c)
        Gw = G * jnp.concatenate([w, jnp.zeros((1,), dtype=w.dtype)])[columns][:, None, :]
        P = sum(Gw[:, :, None, j] * G[:, None, :s, j] for j in range(G.shape[-1]))  # (k, 2s, s)
        return P[:, :s] + jnp.asarray(padding, dtype=P.dtype), P[:-1, s:]

    def block_schur_solve(self, vals, w, rhs):
        """`x = (B diag(w) Bᵀ)⁻¹ rhs` from the block-tridiagonal form (`schur_blocks`)
        by the block-tridiagonal solve; `rhs (m,)`. NaN where a pivot block is not positive
        definite (dependent rows make it singular: check before relying on it)."""
        D, E = self.schur_blocks(vals, w)
        return self._unblocked(block_tridiagonal_solve(D, E, self._blocked(rhs)))

    def block_schur_factor(self, vals, w, tangents=False):
        """A factorization of the block-tridiagonal `B diag(w) Bᵀ`, for several
        `block_schur_factor_solve` at the cost of one: the block LDLᵀ sweeps, or with
        `tangents` (solves for the tangents of a derivative rule) the block cyclic
        reduction (`mbdjax._numerics.blocktridiag.cyclic_factor`)."""
        if tangents:
            return "cyclic", cyclic_factor(*self.schur_blocks(vals, w))
        return "sweeps", block_tridiagonal_factor(*self.schur_blocks(vals, w))

    def block_schur_factor_solve(self, factor, rhs):
        """`(B diag(w) Bᵀ)⁻¹ rhs` from `block_schur_factor(vals, w)`; `rhs (m,)`."""
        kind, F = factor
        solve = cyclic_factor_solve if kind == "cyclic" else block_tridiagonal_factor_solve
        return self._unblocked(solve(F, self._blocked(rhs)))

    def _blocked(self, rhs):
        """`rhs (m,)` as `(k, s)` blocks of `schur_block_size`, zero-padded."""
        s, m = self.schur_block_size, self.shape[0]
        k = -(-m // s)
        return jnp.concatenate([rhs, jnp.zeros((k * s - m,), dtype=rhs.dtype)]).reshape(k, s)

    def _unblocked(self, x):
        return x.reshape(-1)[: self.shape[0]]
