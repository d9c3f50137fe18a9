"""Explicit Runge–Kutta steps with the stages unrolled (same tableau, same results).

diffrax runs the stages of a Runge–Kutta step in a `while_loop` (one body for every
stage, which keeps compile time low for large vector fields and lets one loop serve
explicit, implicit and FSAL schemes). On a CPU every loop iteration costs about a
microsecond of bookkeeping: with Tsit5 on a 60-entry state that is 7–9 µs per step,
more than the whole right-hand side of a small mechanism. `UnrolledRK` takes any
explicit diffrax solver with a Butcher tableau (Tsit5, Dopri5, Dopri8, Bosh3, Heun,
Ralston, Midpoint) and writes its stages out in sequence: the same coefficients, the
same error estimate, the same dense output (`k` in diffrax's layout, so the solver's
own interpolation is used), with no loop. Results agree with the looped solver to
rounding (the stage sums are added in another order).

The trade: the vector field is traced once per stage, so compile time grows with the
stage count (about 1.5–2× for Tsit5 on the models of `mbdjax.models`), and for large
right-hand sides (networks with inner Newton solves) the unrolled step can even run
slower. It pays for small mechanisms with cheap right-hand sides, batched or run many
times: `simulate(..., solver=mbdjax.UnrolledRK(diffrax.Tsit5()))`.

Reference: Hairer, Nørsett & Wanner, *Solving Ordinary Differential Equations I*,
§II.1 (explicit Runge–Kutta methods, FSAL) and §II.4 (embedded error estimates).
"""

from __future__ import annotations

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu


def _weighted_sum(weights, ks, base=None):
    """`base + Σ_j weights[j] ks[j]` over pytrees, skipping zero weights (static floats)."""
    pairs = [(float(w), k) for w, k in zip(weights, ks) if float(w) != 0.0]
    if not pairs:
        return base if base is not None else jtu.tree_map(jnp.zeros_like, ks[0])

    def leaf(*xs):
        acc = xs[0] if base is not None else None
        for (w, _), x in zip(pairs, xs[1:] if base is not None else xs):
            acc = w * x if acc is None else acc + w * x
        return acc

    trees = ([base] if base is not None else []) + [k for _, k in pairs]
    return jtu.tree_map(leaf, *trees)


def unrollable(solver) -> bool:
    """Whether `solver` is an explicit diffrax Runge–Kutta method with one Butcher tableau."""
    tableau = getattr(solver, "tableau", None)
    return (
        isinstance(solver, diffrax.AbstractERK)
        and isinstance(tableau, diffrax.ButcherTableau)
        and not tableau.implicit
        and (tableau.ssal or not tableau.fsal)
    )


def repr_solver(solver) -> str:
    """A solver's class name, `"UnrolledRK(Tsit5)"` for an unrolled one (for run settings)."""
    if isinstance(solver, UnrolledRK):
        return f"UnrolledRK({type(solver.solver).__name__})"
    return type(solver).__name__


class SolverOf(diffrax.AbstractSolver):
    """A solver that takes its description from the diffrax solver it holds
    (`solver`): the term structure, the interpolation, the order and the error order.
    Shared by `UnrolledRK` (which steps the held tableau itself) and the projecting
    wrapper `mbdjax._numerics.solve.ProjectedSolver` (which steps with the held solver)."""

    solver: eqx.AbstractVar[diffrax.AbstractSolver]

    @property
    def term_structure(self):
        return self.solver.term_structure

    @property
    def interpolation_cls(self):
        return self.solver.interpolation_cls

    def order(self, terms):
        return self.solver.order(terms)

    def error_order(self, terms):
        return self.solver.error_order(terms)


class UnrolledRK(SolverOf, diffrax.AbstractAdaptiveSolver):
    """An explicit diffrax Runge–Kutta solver, stepped with its stages unrolled.

    Arguments:
        solver: the solver whose tableau, order, error order and interpolation are
            used, e.g. `diffrax.Tsit5()` or `diffrax.Dopri8()`.

    Per step with `s` stages: `k_1 = h f(t₀, y₀)` (reused from the previous step for
    first-same-as-last tableaus unless a jump was made), `k_i = h f(t₀ + c_i h,
    y₀ + Σ_{j<i} a_ij k_j)`, `y₁ = y₀ + Σ b_j k_j` (the last stage for tableaus whose
    solution is their last stage), error `Σ (b_j − b̂_j) k_j`, dense output from
    `k (s, …)`. Works with `ODETerm`s (any vector field whose `prod` is a scaling
    by `h`) and under `jit`, `vmap`, `grad` and forward mode.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([1.0]),
        ...                 potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2, params={"k": 4.0})
        >>> import diffrax
        >>> traj = mbd.simulate(osc, jnp.ones(1), jnp.zeros(1), t1=1.0, saveat=3, solver=mbd.UnrolledRK(diffrax.Tsit5()))
        >>> [round(float(x), 6) for x in traj.q[:, 0]]
        [1.0, 0.540302, -0.416147]
    """

    solver: diffrax.AbstractSolver

    def __check_init__(self):
        if not unrollable(self.solver):
            raise ValueError(
                f"UnrolledRK: {type(self.solver).__name__} is not an explicit Runge–Kutta "
                "solver with a Butcher tableau (Tsit5, Dopri5, Dopri8, Bosh3, Heun, ...); "
                "pass it to simulate as it is."
            )

    def init(self, terms, t0, t1, y0, args):
        # First-same-as-last: the state carries f(t, y) at the start of the next step.
        return terms.vf(t0, y0, args) if self.solver.tableau.fsal else None

    def func(self, terms, t0, y0, args):
        return terms.vf(t0, y0, args)

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        tab = self.solver.tableau
        control = terms.contr(t0, t1)
        h = t1 - t0
        if not tab.fsal or made_jump is True:
            f0 = terms.vf(t0, y0, args)
        elif made_jump is False:
            f0 = solver_state
        else:  # a traced flag (jumps in the step-size controller)
            f0 = jax.lax.cond(made_jump, lambda: terms.vf(t0, y0, args), lambda: solver_state)
        ks = [terms.prod(f0, control)]
        fi, yi = f0, y0
        for a_row, c in zip(tab.a_lower, tab.c):
            yi = _weighted_sum(a_row, ks, y0)
            fi = terms.vf(t0 + float(c) * h, yi, args)
            ks.append(terms.prod(fi, control))
        y1 = yi if tab.ssal else _weighted_sum(tab.b_sol, ks, y0)
        y_error = _weighted_sum(tab.b_error, ks)
        k = jtu.tree_map(lambda *leaves: jnp.stack(leaves), *ks)
        state = fi if tab.fsal else None
        return y1, y_error, dict(y0=y0, y1=y1, k=k), state, diffrax.RESULTS.successful
