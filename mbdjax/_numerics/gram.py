"""`J diag(w) Jᵀ` of the constraint Jacobian at one state, factored once.

The augmented formulation's Schur complement (`w = M⁻¹`, THEORY §5) and the
projection's Gram matrix (`w = 1`) are the same object: a symmetric positive definite
matrix built from the rows of `B = [Φ_q; A]`, solved several times with one
factorization (the primal solve and the solves of its derivative rules). Rows must be
independent: a plain Cholesky (`mbdjax._numerics.linalg.spd_factor`), or the block-tridiagonal solve
when the model's sparse pattern makes the matrix block tridiagonal (a serial chain,
`mbdjax._numerics.blocktridiag`).
"""

from __future__ import annotations

import jax.numpy as jnp

from .. import _kinematics as kin
from .linalg import spd_factor, spd_factor_solve


class ConstraintGram:
    """`G = J diag(w) Jᵀ` at `(q, t, p)`, factored once; used inside one trace.

    Arguments:
        holonomic_only: `J = Φ_q` (`m_h` rows) instead of `B = [Φ_q; A]` (`m` rows).
        w: `(n,)` positive weights (default ones).
        use_pattern: build `J` from the nonzeros of `model.jacobian_pattern` (which
            covers the holonomic rows only: with `holonomic_only` or `m_n = 0`) instead
            of the dense Jacobian.
        tangents: the factor serves a derivative rule's tangent solves: a block
            tridiagonal `G` is then factored by cyclic reduction, not by the sweeps
            (`JacobianPattern.block_schur_factor`).
    """

    def __init__(self, model, q, t, p, *, holonomic_only, w=None, use_pattern, tangents=False):
        pat = self.pattern = model.jacobian_pattern if use_pattern else None
        self.blocks = pat is not None and pat.schur_block_size is not None
        if pat is None:
            jacobian = kin.holonomic_jacobian if holonomic_only else kin.constraint_jacobian
            self.J = jacobian(model, q, t, p)
            self.G = self.J @ self.J.T if w is None else (self.J * w[None, :]) @ self.J.T
            self.factor = spd_factor(self.G)
            return
        self.J = kin.holonomic_jacobian_values(model, q, t, p)
        w = jnp.ones(model.n, dtype=self.J.dtype) if w is None else w
        self.G = None if self.blocks else pat.schur(self.J, w)
        self.factor = pat.block_schur_factor(self.J, w, tangents) if self.blocks else spd_factor(self.G)

    def matvec(self, v):
        """`J v`, `v (n,)`."""
        return self.J @ v if self.pattern is None else self.pattern.matvec(self.J, v)

    def transpose_matvec(self, y):
        """`Jᵀ y`, `y (m,)`."""
        return self.J.T @ y if self.pattern is None else self.pattern.rmatvec(self.J, y)

    def solve(self, r):
        """`G⁻¹ r`, `r (m,)`."""
        if self.blocks:
            return self.pattern.block_schur_factor_solve(self.factor, r)
        return spd_factor_solve(self.factor, self.G, r)

    def correction(self, r):
        """`Jᵀ G⁻¹ r`: with `w = 1`, the smallest `dx` with `J dx = r`."""
        return self.transpose_matvec(self.solve(r))
