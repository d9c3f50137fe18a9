"""Redundant constraint rows: found once per simulation, removed from the equations of
motion, restored in the reported multipliers (THEORY §8; Haug §6.3).

A redundant mechanism (the parallelogram with an extra link, a Bricard loop, a
planar four-bar built from spatial revolutes, a nonholonomic row repeated) has a
constraint Jacobian `B = [Φ_q; A]` of rank `r < m` at every configuration: `m − r`
rows are linear combinations of the others. Its motion is unique, its multipliers
are not. `simulate` reads the rank once, at the initial state and outside the
compiled run (`select_rows`), keeps a maximal set of independent rows — holonomic rows
first, each in model order, a row kept when it is independent of those kept before
it — and hands the model restricted to those rows (`restrict`) to the formulation and
to the stabilization alike. Near the initial configuration the kept rows define the
same constraint manifold (constant rank), so every formulation then works with a
Jacobian of full row rank: plain Cholesky solves, a null space of the right size, a
coordinate partition that exists.

The multipliers reported are the **minimum-norm** set over all rows (`expand`): of
all `λ` with the same generalized constraint force `Bᵀλ`, the one of least Euclidean
norm. Any other set differing by a vector of the left null space of `B` produces the
same motion; the minimum-norm one shares the load between the dependent joints and
is continuous in time.

If the kept rows themselves lose rank later in the run, the motion has reached a
singular configuration (THEORY §8), which the formulations treat as such.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _kinematics as kin
from ._numerics.linalg import independent_rows
from ._numerics.sparse import JacobianPattern
from ._tracing import CompiledCache, concrete_evaluation, host_value, one_shot_filter_jit

RANK_RTOL = 1e-9
"""Relative tolerance of the rank decision (the same as `mbdjax.check`)."""

# B at the initial state, as one program compiled for a single use (`ONE_SHOT`)
_constraint_jacobian = one_shot_filter_jit(kin.constraint_jacobian)


class RowSelection(NamedTuple):
    """The independent rows of `B` chosen at the initial state.

    `holonomic (k_h,)` and `nonholonomic (k_n,)`: indices of the kept rows among the
    model's holonomic and nonholonomic rows; `dropped`: names of the others (empty
    when the rows are independent).

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> twice = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                   holonomic=lambda q, t, p: jnp.stack([q[0] - q[1], 2.0 * (q[0] - q[1])]),
        ...                   constraint_names=("a", "b"))
        >>> rows = mbd.select_rows(twice, jnp.zeros(2), 0.0, twice.params)
        >>> rows.holonomic, rows.dropped
        ((0,), ('b',))
    """

    holonomic: tuple[int, ...]
    nonholonomic: tuple[int, ...]
    dropped: tuple[str, ...]


def select_rows(model, q, t, p, rtol=RANK_RTOL) -> RowSelection | None:
    """The rows to keep at state `q`, time `t`: all of them when `B` has full row
    rank. Under `jax.grad`, `jax.jacfwd` or `jax.vmap` the values are read through the
    tracers (`mbdjax._tracing.host_value`; under vmap, the first member's). None when
    `q` or `t` are staged inside `jax.jit`, where the rank cannot be read before the
    program runs; parameters staged there are replaced by the model's own values.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> twice = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                   holonomic=lambda q, t, p: jnp.stack([q[0] - q[1], 2.0 * (q[0] - q[1])]),
        ...                   constraint_names=("a", "b"))
        >>> mbd.select_rows(twice, jnp.zeros(2), 0.0, twice.params)
        RowSelection(holonomic=(0,), nonholonomic=(), dropped=('b',))
    """
    if model.m == 0:
        return RowSelection((), (), ())
    q, t = host_value(q), host_value(t)
    if q is None or t is None:
        return None
    B = None
    for params in (host_value(p), model.params):
        if params is None:
            continue
        try:
            with concrete_evaluation():
                B = np.asarray(_constraint_jacobian(model, jnp.asarray(q, dtype=float), float(t), params),
                               dtype=float)
            break
        except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError, TypeError):
            B = None
    return rows_of_jacobian(model, B, rtol)


def rows_of_jacobian(model, B, rtol=RANK_RTOL) -> RowSelection | None:
    """The selection of `select_rows` from the constraint Jacobian `B = [Φ_q; A]`
    (host values, `(m, n)`) already evaluated at the state; None when `B` is None or
    not finite."""
    if model.m == 0:
        return RowSelection((), (), ())
    if B is None or not np.all(np.isfinite(B)):
        return None
    m_h = model.m_h
    kept_h = independent_rows(B[:m_h], rtol)
    # Nonholonomic rows are kept when independent of the holonomic rows kept and of
    # each other: greedy over the stacked rows with the holonomic ones first.
    stacked = np.vstack([B[kept_h], B[m_h:]])
    kept_all = independent_rows(stacked, rtol)
    kept_n = [k - len(kept_h) for k in kept_all if k >= len(kept_h)]
    if len(kept_all) < len(kept_h):  # cannot happen: the holonomic rows kept are independent
        return None
    names = model.row_names
    keep = set(kept_h) | {m_h + k for k in kept_n}
    dropped = tuple(names[k] for k in range(model.m) if k not in keep)
    return RowSelection(tuple(kept_h), tuple(kept_n), dropped)


_RESTRICTED = CompiledCache(32)


def restrict(model, rows: RowSelection):
    """`model` with only the rows of `rows` (the same object when nothing is dropped).

    Holonomic and nonholonomic functions, an explicit Jacobian, the sparse Jacobian
    pattern and the row names are restricted; everything else is shared. The result
    is kept per model and selection, so repeated simulations reuse one restricted
    model (its functions are static: a new one would compile anew)."""
    if not rows.dropped:
        return model
    return _RESTRICTED.get((id(model), rows), model, lambda: _restricted(model, rows))


def _restricted(model, rows):
    new = copy.copy(model)
    kh = np.asarray(rows.holonomic, dtype=np.int32)
    kn = np.asarray(rows.nonholonomic, dtype=np.int32)
    set_ = lambda name, value: object.__setattr__(new, name, value)  # noqa: E731
    if model.holonomic_fn is not None:
        h, hj = model.holonomic_fn, model.holonomic_jacobian_fn
        set_("holonomic_fn", lambda q, t, p: jnp.asarray(h(q, t, p))[kh])
        if hj is not None:
            set_("holonomic_jacobian_fn", lambda q, t, p: jnp.asarray(hj(q, t, p))[kh])
        if model.jacobian_pattern is not None:
            pat, vals_fn = model.jacobian_pattern, model.holonomic_jacobian_values_fn
            renumber = np.full(model.m_h, -1, dtype=np.int32)
            renumber[kh] = np.arange(kh.size, dtype=np.int32)
            entries = np.nonzero(renumber[pat.rows] >= 0)[0].astype(np.int32)
            set_("jacobian_pattern", JacobianPattern(renumber[pat.rows[entries]], pat.cols[entries],
                                                     (kh.size, model.n)))
            set_("holonomic_jacobian_values_fn", lambda q, t, p: jnp.asarray(vals_fn(q, t, p))[entries])
    if model.nonholonomic_fn is not None:
        c = model.nonholonomic_fn
        set_("nonholonomic_fn", (lambda q, qd, t, p: jnp.asarray(c(q, qd, t, p))[kn]) if kn.size else None)
    set_("constraint_names", tuple(model.constraint_names[k] for k in rows.holonomic))
    set_("nonholonomic_names", tuple(model.nonholonomic_names[k] for k in rows.nonholonomic))
    return new


def kept_indices(model, rows: RowSelection):
    """Positions of the kept rows among the rows of `B`, `(k,)` numpy ints."""
    return np.array(list(rows.holonomic) + [model.m_h + k for k in rows.nonholonomic], dtype=np.int32)


def expand(model, rows: RowSelection, q, t, p, lam_kept):
    """The minimum-norm multipliers `(m,)` over all rows of `model` that give the same
    generalized constraint force `Bᵀλ` as `lam_kept (k,)` on the kept rows.

    Each dropped row `b_r` is a combination `b_r = c_rᵀ B_k` of the kept rows `B_k`,
    so `v_r = e_r − Σ c_r,k e_k` spans the left null space of `B`; the minimum-norm
    set is the embedded `λ₀` minus its projection onto that space. Every solve here
    has full rank, so derivatives are those of smooth functions."""
    keep = kept_indices(model, rows)
    drop = np.array([k for k in range(model.m) if k not in set(keep.tolist())], dtype=np.int32)
    B = kin.constraint_jacobian(model, q, t, p)
    Bk = B[keep]
    C = jnp.linalg.solve(Bk @ Bk.T, Bk @ B[drop].T)            # (k, d): b_r = C[:, r]ᵀ B_k
    N = jnp.zeros((model.m, drop.size), dtype=B.dtype).at[keep].set(-C).at[drop].set(jnp.eye(drop.size))
    lam0 = jnp.zeros(model.m, dtype=B.dtype).at[keep].set(lam_kept)
    return lam0 - N @ jnp.linalg.solve(N.T @ N, N.T @ lam0)
