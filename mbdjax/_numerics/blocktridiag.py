"""Symmetric positive definite block-tridiagonal solves: a block LDLᵀ sweep for one
system, block cyclic reduction for a batch of them.

A serial chain of joints (a pendulum chain, a manipulator arm) gives a Schur
complement `S = B M⁻¹ Bᵀ` that is block tridiagonal once its rows are grouped joint by
joint: the rows of one joint couple only with those of the joints that share a body
with it. Cholesky on the dense `m × m` matrix costs O(m³) and, for the small `m` of a
mechanism, mostly the overhead of general-purpose LAPACK code; cyclic reduction costs
O(k s³) for `k` blocks of size `s`, in ⌈log₂ k⌉ levels of operations batched over
the blocks (no loop of `k` dependent steps), built only from `jnp` arithmetic, so it
runs under `jax.jit`, `jax.vmap` and both modes of autodiff like the rest of a
right-hand side.

The system, with `D[i]` the diagonal blocks and `E[i] = S[i+1, i]` the blocks below
them (`S[i, i+1] = E[i]ᵀ`):

    E[i-1] x[i-1] + D[i] x[i] + E[i]ᵀ x[i+1] = r[i],     i = 0 … k-1.

One level solves the odd-numbered equations for their unknowns,
`x[o] = D[o]⁻¹ (r[o] − E[o-1] x[o-1] − E[o]ᵀ x[o+1])`, and substitutes them into the
even-numbered ones: a block-tridiagonal system of half the size (the Schur complement
on the even unknowns, so again positive definite). Back-substitution recovers the odd
unknowns level by level. Reference: Heller, "Some aspects of the cyclic reduction
algorithm for block tridiagonal linear systems", SIAM J. Numer. Anal. 13 (1976);
Golub & Van Loan, *Matrix Computations*, §4.5.

That is the batched solve (`jax.vmap`: a batch of runs). One system is solved by the
sequential block LDLᵀ factorization instead (block Gaussian elimination, the block
Thomas algorithm; Golub & Van Loan §4.5.1): pivots `P[0] = D[0]`,
`P[i+1] = D[i+1] − E[i] P[i]⁻¹ E[i]ᵀ`, then one forward and one backward sweep, each a
`lax.scan` of `k` steps of `s × s` work. Its program does not grow with `k`, while the
reduction's unrolled levels did: inside a simulation's step loop, which XLA compiles
into one kernel (`mbdjax._numerics.xla_cpu`), the reduction's code made the 10-link chain's
default run compile 5.1 s in XLA against 2.4 s with the sweeps, and the 20-link chain's
6.9 s against 4.1 s, at the same speed (a loop of `k` tiny steps costs nothing there).

A matrix that is not positive definite gives NaN (the square root of a negative
pivot, or a negative 2 × 2 determinant), as LAPACK's Cholesky does, which a
simulation's NaN check then reports.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

MAX_BLOCK = 6
"""Largest block size solved by the unrolled block Cholesky (its program grows like s³)."""


def _mT(X):
    return jnp.swapaxes(X, 1, 2)


def _mm(X, Y):
    """Block products, blocks on axes 1 and 2: `X (k, s, t, ...)`, `Y (k, t, r, ...)` →
    `(k, s, r, ...)`, the trailing axes (a batch) elementwise. As
    broadcast-multiply-sum: fuses with its neighbours, where a batched `dot` of 2 × 2
    blocks would be a separate, slower kernel."""
    return jnp.sum(X[:, :, :, None] * Y[:, None], axis=2)


def _at(first, *index):
    """The index of entry `index` of blocks whose axes start at `first`: `-2`, the last
    two (`(..., s, s)`), or `1`, after a leading block count (`(k, s, s, ...)`)."""
    return (Ellipsis, *index) if first < 0 else (slice(None),) * first + index


def small_cholesky(A, first=-2):
    """Cholesky factor of a batch of small SPD blocks `A (..., s, s)` (`first=1`:
    `A (k, s, s, ...)`), unrolled entry by entry (each entry a batch-shaped array, so
    the factorization is elementwise work over the batch, with no LAPACK call):
    `(L, inv)` with `L[i][j]` (i > j) the below-diagonal entries and `inv[j]` the
    reciprocal diagonal. Reads the lower triangle; a block that is not positive
    definite gives NaN."""
    s = A.shape[first]
    L = [[None] * s for _ in range(s)]
    inv = [None] * s
    for j in range(s):
        d = A[_at(first, j, j)]
        for k in range(j):
            d = d - L[j][k] * L[j][k]
        inv[j] = 1.0 / jnp.sqrt(d)
        for i in range(j + 1, s):
            v = A[_at(first, i, j)]
            for k in range(j):
                v = v - L[i][k] * L[j][k]
            L[i][j] = v * inv[j]
    return L, inv


def small_cholesky_solve(factor, R, first=-2):
    """`A⁻¹ R` from `small_cholesky(A, first)`: forward and back substitution, unrolled.
    `R (..., s, r)` (`first=1`: `R (k, s, r, ...)`)."""
    L, inv = factor
    s = len(inv)
    row = (lambda i: R[..., i, :]) if first < 0 else (lambda i: R[_at(first, i)])
    scale = (lambda a: a[..., None]) if first < 0 else (lambda a: a[_at(first, None)])
    y = []
    for i in range(s):
        v = row(i)
        for k in range(i):
            v = v - scale(L[i][k]) * y[k]
        y.append(v * scale(inv[i]))
    x = [None] * s
    for i in reversed(range(s)):
        v = y[i]
        for k in range(i + 1, s):
            v = v - scale(L[k][i]) * x[k]
        x[i] = v * scale(inv[i])
    return jnp.stack(x, axis=first)


def small_spd_solve(A, R):
    """`A⁻¹ R` for a batch of small SPD blocks: `A (..., s, s)`, `R (..., s, r)`.

    Blocks of size 1 and 2 in closed form (`_inverse_times`); larger ones (up to
    `MAX_BLOCK`) by the unrolled Cholesky (`small_cholesky`), so the whole solve is
    elementwise work over the batch.
    """
    if A.shape[-1] <= 2:
        return _inverse_times(A, R, -2)
    return small_cholesky_solve(small_cholesky(A), R)


def _inverse_times(A, R, first=1):
    """`A⁻¹ R` for SPD blocks of size 1 or 2 in closed form (blocks on the axes from
    `first`, as for `small_cholesky`): one reciprocal (of the determinant) and
    products, so XLA fuses the solve into its consumers where the Cholesky's chain of
    square roots would be separate kernels. A block that is not positive definite
    gives NaN, as the Cholesky does."""
    one, two = slice(0, 1), slice(1, 2)
    rows = (lambda i: R[..., i, :]) if first < 0 else (lambda i: R[_at(first, i)])
    if A.shape[first] == 1:
        a = A[_at(first, one, one)]
        return jnp.where(a > 0, R / jnp.where(a > 0, a, 1.0), jnp.nan)
    a, b, d = A[_at(first, one, one)], A[_at(first, two, one)], A[_at(first, two, two)]
    det = a * d - b * b
    ok = (a > 0) & (det > 0)
    rdet = jnp.where(ok, 1.0 / jnp.where(ok, det, 1.0), jnp.nan)
    r0, r1 = rows(one), rows(two)
    return jnp.concatenate([(d * r0 - b * r1) * rdet, (a * r1 - b * r0) * rdet], axis=first)


def _small_factor(A):
    """A factor of small SPD blocks `A (k, s, s, ...)` for repeated `_small_apply`: the
    blocks themselves for sizes 1 and 2 (closed form), else `small_cholesky`."""
    return ("closed", A) if A.shape[1] <= 2 else ("cholesky", small_cholesky(A, first=1))


def _small_apply(factor, R):
    """`A⁻¹ R` from `_small_factor(A)`, `R (k, s, r, ...)`."""
    kind, F = factor
    return _inverse_times(F, R) if kind == "closed" else small_cholesky_solve(F, R, first=1)


def _check_shapes(D, E, who):
    """`D (k, s, s)` and `E (k-1, s, s)` (with the same trailing batch axes, if any)."""
    k, s = D.shape[0], D.shape[1]
    if D.shape[:3] != (k, s, s) or E.shape[:3] != (max(k - 1, 0), s, s) or D.shape[3:] != E.shape[3:]:
        raise ValueError(
            f"{who}: shapes D {D.shape}, E {E.shape} do not describe k blocks of size s "
            f"(D (k, s, s), E (k-1, s, s))."
        )
    if s > MAX_BLOCK:
        raise ValueError(f"{who}: block size {s} exceeds MAX_BLOCK = {MAX_BLOCK}.")


# The reduction's arrays are `D (k, s, s, ...)`, `E (k-1, s, s, ...)` and right sides
# `(k, s, 1, ...)`: any trailing axes are a batch of systems, elementwise. A lone
# system has none; the batched rule of `block_tridiagonal_solve` puts the batch there,
# last, where every operation runs along contiguous memory across the members (with
# the batch first, as `vmap` has it, the blocks' 2 × 2 entries were innermost: a
# batch of 1024 10-block systems took 1.8 µs a member against 0.3 µs).

def cyclic_factor(D, E):
    """The block cyclic reduction of an SPD block-tridiagonal `S`, for solving with
    several right sides (`cyclic_factor_solve`) at the cost of one reduction: per
    level, the odd pivot blocks' factors and `D_odd⁻¹ [E_low, E_upᵀ]`; then the last
    (reduced) diagonal block's factor.

    Used for a batch of systems (the batched rule of `block_tridiagonal_solve`) and
    for one system whose right sides are tangents (the derivative rules: `jax.jacfwd`
    batches them, and reverse mode transposes the solves): there the unrolled levels
    were faster than the sweeps' loops, ten tangents through the 10-link chain's
    projection 22 against 45 µs, and `jax.jacfwd` of its 2 s run 103 against 138 ms.

    Arguments as for `block_tridiagonal_solve`: `D (k, s, s)`, `E (k-1, s, s)` and
    trailing batch axes (see above). Returns a tuple of arrays and static sizes (a
    pytree; pass it on unchanged).
    """
    _check_shapes(D, E, "block_tridiagonal_factor")
    k, s, rest = D.shape[0], D.shape[1], D.shape[3:]
    dtype = jnp.result_type(D, E)
    zero_block = jnp.zeros((1, s, s, *rest), dtype)
    E = jnp.concatenate([E.astype(dtype), zero_block])  # E[k-1] = 0: nothing below the last block
    D = D.astype(dtype)
    eye = jnp.broadcast_to(jnp.eye(s, dtype=dtype).reshape(1, s, s, *(1 for _ in rest)), (1, s, s, *rest))
    levels = []
    while k > 1:
        if k % 2:
            # An odd count gets a decoupled identity block (x = 0) so the levels stay uniform.
            D = jnp.concatenate([D, eye])
            E = jnp.concatenate([E, zero_block])
            k += 1
        low = E[0::2]         # odd block 2i+1 to even block 2i
        up = _mT(E[1::2])     # odd block 2i+1 to even block 2i+2 (zero for the last)
        pivot = _small_factor(D[1::2])
        X = _small_apply(pivot, jnp.concatenate([low, up], axis=2))
        x_low, x_up = X[:, :, :s], X[:, :, s:]
        low_t, up_t = _mT(low), _mT(up)
        D = D[0::2] - _mm(low_t, x_low) - _from_previous(_mm(up_t, x_up))
        E = -_mm(up_t, x_low)
        levels.append((pivot, low_t, up_t, x_low, x_up, k))
        k //= 2
    return levels, _small_factor(D)


def _from_previous(a):
    # The even block 2i takes this term from odd block 2i-1 (none for i = 0).
    return jnp.concatenate([jnp.zeros_like(a[:1]), a[:-1]])


def cyclic_factor_solve(factor, r):
    """`x` with `S x = r` from `cyclic_factor(D, E)`; `r (k, s)` → `x (k, s)` (and
    trailing batch axes). Costs a fraction of the reduction: small block solves and
    products with the stored blocks, level by level."""
    levels, last = factor
    blocks = r.shape[0]
    r = r[:, :, None]
    right = []
    for pivot, low_t, up_t, _, _, count in levels:
        if r.shape[0] < count:
            r = jnp.concatenate([r, jnp.zeros_like(r[:1])])
        x_r = _small_apply(pivot, r[1::2])
        r = r[0::2] - _mm(low_t, x_r) - _from_previous(_mm(up_t, x_r))
        right.append(x_r)
    x = _small_apply(last, r)
    for (_, _, _, x_low, x_up, count), x_r in zip(reversed(levels), reversed(right)):
        even = x[: count // 2]
        following = jnp.concatenate([even[1:], jnp.zeros_like(even[:1])])
        odd = x_r - _mm(x_low, even) - _mm(x_up, following)
        x = jnp.stack([even, odd], axis=1).reshape(count, *x.shape[1:])
    return x[:blocks, :, 0]


def block_tridiagonal_factor(D, E):
    """The block LDLᵀ factorization of one SPD block-tridiagonal `S`, for solving with
    several right sides (`block_tridiagonal_factor_solve`) at the cost of one: the
    pivot blocks `P[i]` (`P[0] = D[0]`, `P[i+1] = D[i+1] − E[i] X[i]`) and
    `X[i] = P[i]⁻¹ E[i]ᵀ`, by one `lax.scan` over the blocks (see the module
    docstring).

    Arguments as for `block_tridiagonal_solve`: `D (k, s, s)`, `E (k-1, s, s)`, no
    trailing batch axes (under `jax.vmap` the scan is batched as it stands). Returns
    `(P (k, s, s), X (k-1, s, s))`.
    """
    _check_shapes(D, E, "block_tridiagonal_factor")
    if D.ndim != 3:
        raise ValueError(f"block_tridiagonal_factor: D must be (k, s, s), got {D.shape} (one system; "
                         "vmap over a batch).")
    dtype = jnp.result_type(D, E)
    D, E = D.astype(dtype), E.astype(dtype)

    def pivot(P, blocks):
        D_next, E_i = blocks
        X = _small_apply(_small_factor(P[None]), _mT(E_i[None]))[0]       # P⁻¹ E_iᵀ
        return D_next - E_i @ X, (P, X)

    if D.shape[0] == 1:
        return D, E
    last, (P, X) = jax.lax.scan(pivot, D[0], (D[1:], E))
    return jnp.concatenate([P, last[None]]), X


def block_tridiagonal_factor_solve(factor, r):
    """`x` with `S x = r` from `block_tridiagonal_factor(D, E)`; `r (k, s)` → `x (k, s)`.

    Forward sweep `y[0] = r[0]`, `y[i+1] = r[i+1] − X[i]ᵀ y[i]` (`E[i] P[i]⁻¹ = X[i]ᵀ`),
    the pivot solves `w = P⁻¹ y` for all blocks at once, then the backward sweep
    `x[k-1] = w[k-1]`, `x[i] = w[i] − X[i] x[i+1]`."""
    P, X = factor
    pivots = _small_factor(P)
    if P.shape[0] == 1:
        return _small_apply(pivots, r[:, :, None])[:, :, 0]

    def forward(y, blocks):
        X_i, r_next = blocks
        return r_next - X_i.T @ y, y

    y_last, y = jax.lax.scan(forward, r[0], (X, r[1:]))
    w = _small_apply(pivots, jnp.concatenate([y, y_last[None]])[:, :, None])[:, :, 0]

    def backward(x_next, blocks):
        w_i, X_i = blocks
        x_i = w_i - X_i @ x_next
        return x_i, x_i

    _, x = jax.lax.scan(backward, w[-1], (w[:-1], X), reverse=True)
    return jnp.concatenate([x, w[-1:]])


def block_tridiagonal_matvec(D, E, x):
    """`S x` for the block-tridiagonal `S` with diagonal blocks `D (k, s, s)` (both
    triangles read: pass full blocks) and sub-diagonal blocks `E (k-1, s, s)`;
    `x (k, s)`."""
    y = jnp.sum(D * x[:, None, :], axis=-1)
    if E.shape[0]:
        below = jnp.sum(E * x[:-1, None, :], axis=-1)                   # E[i] x[i] into row i+1
        above = jnp.sum(_mT(E) * x[1:, None, :], axis=-1)                # E[i]ᵀ x[i+1] into row i
        y = y + jnp.concatenate([jnp.zeros_like(x[:1]), below]) + jnp.concatenate([above, jnp.zeros_like(x[:1])])
    return y


@jax.custom_batching.custom_vmap
def _solve(D, E, r):
    return block_tridiagonal_factor_solve(block_tridiagonal_factor(D, E), r)


@_solve.def_vmap
def _solve_batched(size, batched, D, E, r):
    # the batch last (see the layout note above): D (B, k, s, s) → (k, s, s, B)
    D, E, r = (jnp.moveaxis(x if b else jnp.broadcast_to(x, (size, *x.shape)), 0, -1)
               for x, b in zip((D, E, r), batched))
    return jnp.moveaxis(cyclic_factor_solve(cyclic_factor(D, E), r), -1, 0), True


@jax.custom_jvp
def block_tridiagonal_solve(D, E, r):
    """`x` with `S x = r` for an SPD block-tridiagonal `S`: one system by the block
    LDLᵀ sweeps, a batch by block cyclic reduction (see the module docstring).

    Arguments:
        D: `(k, s, s)` diagonal blocks (symmetric; only their lower triangles are read).
        E: `(k-1, s, s)` sub-diagonal blocks, `E[i] = S[i+1, i]`.
        r: `(k, s)` right side.

    Returns `x (k, s)`. Block sizes up to `MAX_BLOCK`. One right side: the
    factorization and the solve at once (`block_tridiagonal_factor` and
    `block_tridiagonal_factor_solve`). Under `jax.vmap` (a batch of runs) the systems
    are solved together by cyclic reduction, the batch the innermost axis.

    Derivatives, forward and reverse, are those of the solve, `dx = S⁻¹(dr − dS x)`,
    with the reduction of the primal reused: a tangent (or a cotangent) costs one more
    solve with the stored blocks, not a pass through the reduction itself.
    """
    _check_shapes(D, E, "block_tridiagonal_solve")
    if r.shape != D.shape[:2]:
        raise ValueError(f"block_tridiagonal_solve: r has shape {r.shape}, expected {D.shape[:2]} (k, s).")
    dtype = jnp.result_type(D, E, r)
    return _solve(D.astype(dtype), E.astype(dtype), r.astype(dtype))


@block_tridiagonal_solve.defjvp
def _block_tridiagonal_solve_jvp(primals, tangents):
    D, E, r = primals
    dD, dE, dr = tangents
    dtype = jnp.result_type(D, E, r)
    factor = cyclic_factor(D, E)
    x = cyclic_factor_solve(factor, r.astype(dtype))
    # only the lower triangles of the diagonal blocks are read: symmetrize their tangent
    lower = jnp.tril(dD)
    dD_full = lower + _mT(jnp.tril(dD, -1))
    return x, cyclic_factor_solve(factor, (dr - block_tridiagonal_matvec(dD_full, dE, x)).astype(dtype))
