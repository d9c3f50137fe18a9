"""Quasi-velocities: Greenwood's general dynamical equation in generalized coordinates.

Choose `f` independent quasi-velocities `u` with `q̇ = W(q, t) u + w₀(q, t)` satisfying
every velocity constraint (holonomic and nonholonomic). Then, with no multipliers and
no constraint equations at all (THEORY §5):

    q̇ = W u + w₀,
    (Wᵀ M W) u̇ = Wᵀ (Q − M (Ẇ u + ẇ₀)),

`n + f` first-order equations. `Ẇ u + ẇ₀` is one jvp of `(q, t) ↦ W u + w₀` along
`(q̇, 1)` at fixed `u`. (THEORY writes the map as Φ; here `W` avoids a clash with the
holonomic constraints.)

References: Greenwood, *Advanced Dynamics*, §4.2–4.4 (general dynamical equation,
quasi-velocities); Kane's equations; THEORY §5.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import _dynamics as dyn
from .. import _kinematics as kin
from .._errors import SimulationError
from .._stabilization.projection import Projection, project_positions
from .._first_order import refuse as refuse_first_order
from .._switching import refuse as refuse_switching
from .base import AbstractFormulation
from .._numerics.linalg import numerical_rank
from .._tracing import is_concrete
from .multiplier_free import MultiplierFree
from .partition import check_names, integrate_partitioned, named_partition, partition_basis


class QuasiVelocity(AbstractFormulation):
    """Integrate `(q, u)` with Greenwood's equations; the Trajectory also carries `u`.

    Arguments:
        velocity_map: `fn(q, t, p) -> (n, f)`, the columns `W` with `q̇ = W u + w₀`;
            None to use `definition` or the independent velocities of a coordinate
            partition (`W = [−B₁⁻¹ B₂; I]`, `w₀ = [B₁⁻¹ b; 0]`).
        offset: `fn(q, t, p) -> (n,)`, `w₀` (default zero) with a user map.
        definition: `fn(q, qd, t, p) -> (f,)`, the quasi-velocities as the user
            defines them, `u = Ψ(q, t) q̇ + ψ₀` (affine in q̇: body angular-velocity
            components, a spin about a symmetry axis, Euler-angle rates). mbdjax
            inverts them together with the constraints, `[B; Ψ] q̇ = [b; u − ψ₀]`, so
            `W = [B; Ψ]⁻¹ [0; I]` (Greenwood's `Φ = Ψ⁻¹` on the admissible
            velocities); the stacked matrix must be invertible along the motion.
        independent: with no map, the names of the `n − m` independent coordinates
            whose velocities are `u` at the start (default: chosen by column-pivoted
            QR of B at the initial configuration).
        growth, max_partitions: with no map, the independent coordinates are re-chosen
            along the motion as the null-space formulation re-chooses them: when the
            partition's condition `σ_max(B) / σ_min(B_u)` exceeds `growth` times its
            value where the partition was chosen (default 10), the solve ends at that
            step, `u` is re-expressed as the new independent velocities (`q̇` is
            unchanged), and the solve goes on, in at most `max_partitions` pieces
            (default 32). A fixed partition cannot follow a mechanism whose
            independent coordinate reaches a limit position (the Bricard loop): `u`
            would have to stay finite while the map `W` blows up. The trajectory's
            `partition_history()` tells which velocities `u` holds when.

    A user map is verified before integrating: on random `u` at the initial
    configuration, `W u + w₀` must satisfy every velocity constraint (else a
    `SimulationError`). Stabilization: `"projection"` projects `q` onto `Φ = 0` (the
    velocities stay admissible by construction); Baumgarte is ignored (there is no
    acceleration constraint to modify), with a warning.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> traj = mbd.simulate(pend, jnp.array([0.6, -0.8]), jnp.zeros(2), t1=0.5, saveat=2,
        ...                     formulation=mbd.QuasiVelocity())
        >>> round(float(traj.q[-1, 0]), 6), float(jnp.max(jnp.abs(traj.position_residual()))) < 1e-10
        (0.029328, True)
    """

    velocity_map: Callable | None = eqx.field(static=True, default=None)
    offset: Callable | None = eqx.field(static=True, default=None)
    independent: tuple[str, ...] | None = None
    definition: Callable | None = eqx.field(static=True, default=None)
    growth: float = 10.0
    max_partitions: int = 32

    def __check_init__(self):
        given = [k for k in ("velocity_map", "definition", "independent") if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"QuasiVelocity: give one of velocity_map, definition and independent, not {given}.")
        if self.offset is not None and self.velocity_map is None:
            raise ValueError("QuasiVelocity: `offset` belongs to a `velocity_map`.")
        if not float(self.growth) > 1.0:
            raise ValueError(f"QuasiVelocity: growth must be > 1, got {self.growth}.")
        if int(self.max_partitions) < 1:
            raise ValueError(f"QuasiVelocity: max_partitions must be >= 1, got {self.max_partitions}.")
    ignores = ("Baumgarte",)
    ignores_reason = "the quasi-velocity equations contain no acceleration constraint"

    # ------------------------------------------------------------------ set-up
    def _partition(self, model):
        ind = tuple(self.independent)
        return MultiplierFree(dependent=tuple(c for c in model.coordinates if c not in ind))

    def prepare(self, model, p, q0, t0):
        refuse_first_order(model, p, q0, t0, "QuasiVelocity")
        refuse_switching(model, "QuasiVelocity")
        if self.definition is not None:
            self._check_definition(model, p, q0, t0)
            return self
        if self.velocity_map is None:
            if self.independent is None:
                part = MultiplierFree().prepare(model, p, q0, t0)
            else:
                check_names(model, self.independent, model.n - model.m, "QuasiVelocity", "independent")
                part = self._partition(model).prepare(model, p, q0, t0)
            ind = tuple(c for c in model.coordinates if c not in part.dependent)
            return dataclasses.replace(self, independent=ind)   # a subclass keeps its own fields
        if is_concrete(p, q0, t0):
            W, w0 = self.map(model, q0, t0, p)
            if W.ndim != 2 or W.shape[0] != model.n or w0.shape != (model.n,):
                raise SimulationError(
                    f"QuasiVelocity: velocity_map must return shape ({model.n}, f) and offset "
                    f"({model.n},); got {W.shape} and {w0.shape}."
                )
            rng = np.random.default_rng(0)
            B = kin.constraint_jacobian(model, q0, t0, p)
            b = kin.velocity_rhs(model, q0, t0, p)
            scale = 1.0 + float(jnp.max(jnp.abs(W)))
            for _ in range(3):
                u = jnp.asarray(rng.standard_normal(W.shape[1]))
                res = B @ (W @ u + w0) - b
                worst = int(jnp.argmax(jnp.abs(res))) if res.size else 0
                if res.size and float(jnp.abs(res[worst])) > 1e-8 * scale * (1.0 + float(jnp.max(jnp.abs(u)))):
                    raise SimulationError(
                        "QuasiVelocity: q̇ = W u + w₀ violates the velocity constraints at the "
                        f"initial configuration (row {model.row_names[worst]!r}, residual "
                        f"{float(res[worst]):.3e} for a random u); the columns of velocity_map "
                        "must span admissible motions and offset must satisfy B w₀ = b."
                    )
            B_np = np.asarray(B)
            f_needed = model.n - (numerical_rank(np.linalg.svd(B_np, compute_uv=False), B_np.shape, 1e-9)[0] if model.m else 0)
            if W.shape[1] != f_needed:
                raise SimulationError(
                    f"QuasiVelocity: velocity_map has {W.shape[1]} columns but the system has "
                    f"{f_needed} velocity degrees of freedom; give one quasi-velocity per degree of freedom."
                )
        return self

    def _definition_terms(self, q, t, p):
        """`(Ψ (f, n), ψ₀ (f,))` of the user's definition `u = Ψ q̇ + ψ₀`."""
        fn = lambda v: jnp.asarray(self.definition(q, v, t, p), dtype=float)  # noqa: E731
        zero = jnp.zeros_like(q)
        return jax.jacfwd(fn)(zero), fn(zero)

    def _check_definition(self, model, p, q0, t0):
        if not is_concrete(p, q0, t0):
            return
        try:
            u = jnp.asarray(self.definition(q0, jnp.zeros_like(q0), t0, p), dtype=float)
        except Exception as err:  # noqa: BLE001 - reported with context
            raise SimulationError(f"QuasiVelocity: `definition(q, qd, t, p)` raised {type(err).__name__}: {err}") from err
        B = np.asarray(kin.constraint_jacobian(model, q0, t0, p))
        f_needed = model.n - (numerical_rank(np.linalg.svd(B, compute_uv=False), B.shape, 1e-9)[0] if model.m else 0)
        if u.shape != (f_needed,):
            raise SimulationError(
                f"QuasiVelocity: `definition` returned shape {u.shape}; the system has {f_needed} velocity "
                f"degrees of freedom, so it must return ({f_needed},), one quasi-velocity each."
            )
        hess = jax.jacfwd(jax.jacfwd(lambda v: jnp.asarray(self.definition(q0, v, t0, p), dtype=float)))(
            jnp.zeros_like(q0))
        if float(jnp.max(jnp.abs(hess))) > 1e-9:
            raise SimulationError("QuasiVelocity: `definition` must be affine in qd (u = Ψ(q, t) qd + ψ₀).")
        Psi, _ = self._definition_terms(q0, t0, p)
        K = np.concatenate([B, np.asarray(Psi)], axis=0) if model.m else np.asarray(Psi)
        s = np.linalg.svd(K, compute_uv=False)
        if not s[-1] > 1e-10 * s[0]:
            raise SimulationError(
                "QuasiVelocity: the quasi-velocities of `definition` and the velocity constraints do not "
                f"determine q̇ at the initial configuration ([B; Ψ] has condition {s[0] / max(s[-1], 1e-300):.1e}); "
                "some u repeats a constrained or another quasi-velocity: choose independent ones."
            )

    def map(self, model, q, t, p, perm=None):
        """`(W, w₀)` at `(q, t)`: shapes `(n, f)` and `(n,)`; with no user map, those of
        the partition `perm (n,)` (`perm[:m]` dependent, default: `independent`'s)."""
        if self.definition is not None:
            Psi, psi0 = self._definition_terms(q, t, p)
            f = Psi.shape[0]
            if model.m:
                K = jnp.concatenate([kin.constraint_jacobian(model, q, t, p), Psi], axis=0)
                rhs_b = kin.velocity_rhs(model, q, t, p)
            else:
                K, rhs_b = Psi, jnp.zeros((0,))
            E = jnp.concatenate([jnp.zeros((model.m, f)), jnp.eye(f)], axis=0)
            sol = jnp.linalg.solve(K, jnp.concatenate([E, jnp.concatenate([rhs_b, -psi0])[:, None]], axis=1))
            return sol[:, :f], sol[:, f]
        if self.velocity_map is not None:
            W = jnp.asarray(self.velocity_map(q, t, p), dtype=float)
            w0 = jnp.zeros((model.n,)) if self.offset is None else jnp.asarray(self.offset(q, t, p), dtype=float)
            return W, w0
        if model.m == 0:
            return jnp.eye(model.n), jnp.zeros((model.n,))
        if perm is None:
            dep, ind = self._partition(model)._split(model)
            perm = np.concatenate([dep, ind])
        B = kin.constraint_jacobian(model, q, t, p)
        dep = perm[:model.m]
        W = partition_basis(B, perm, model.m)
        w0 = jnp.zeros((model.n,)).at[dep].set(jnp.linalg.solve(B[:, dep], kin.velocity_rhs(model, q, t, p)))
        return W, w0

    def equation_count(self, model):
        f = model.n - model.m
        return model.n + f

    # ------------------------------------------------------------------ dynamics
    def _kinematics(self, model, q, u, t, p, perm=None):
        """`(W, q̇, a₀)`: the map, the rates, and `a₀ = Ẇ u + ẇ₀` (the acceleration at
        `u̇ = 0`), from one evaluation of the map: linearize it, then take the tangent
        along `(q̇, 1)`."""
        (W, w0), tangent = jax.linearize(lambda x, s: self.map(model, x, s, p, perm), q, t)
        qd = W @ u + w0
        dW, dw0 = tangent(qd, jnp.ones_like(t))
        return W, qd, dW @ u + dw0

    def _rates(self, model, q, u, t, p, perm=None):
        """`(q̇, u̇, q̈)` from the generalized-coordinate form of the equations."""
        W, qd, acc0 = self._kinematics(model, q, u, t, p, perm)
        M = dyn.mass_matrix(model, q, qd, t, p)
        Q = dyn.forcing(model, q, qd, t, p)
        ud = jnp.linalg.solve(W.T @ M @ W, W.T @ (Q - M @ acc0))
        return qd, ud, W @ ud + acc0

    def _check_ready(self):
        if self.velocity_map is None and self.independent is None and self.definition is None:
            raise SimulationError("QuasiVelocity: call through simulate (the partition is chosen there).")

    def initial_state(self, model, q0, qd0, t0, p, checks=None):
        self._check_ready()
        W, w0 = self.map(model, q0, t0, p)
        u0 = jnp.linalg.lstsq(W, qd0 - w0)[0]
        return jnp.concatenate([q0, u0])

    def vector_field(self, model, t, y, p, stabilization):
        n = model.n
        qd, ud, _ = self._rates(model, y[:n], y[n:], t, p)
        return jnp.concatenate([qd, ud])

    def project(self, model, t, y, p, stabilization):
        n = model.n
        if not isinstance(stabilization, Projection):
            return y
        # Only q is projected: q̇ = W u + w₀ stays admissible at the projected q.
        return jnp.concatenate([project_positions(model, y[:n], t, p, stabilization.iterations,
                                                  not stabilization.independent, stabilization.block_solves), y[n:]])

    def outputs_from_state(self, model, y, t, p, stabilization, aux=None):
        n = model.n
        q, u = y[:n], y[n:]
        qd, _, qdd = self._rates(model, q, u, t, p, aux)
        return q, qd, qdd, None, u

    def _repartitions(self, model):
        return self.velocity_map is None and self.definition is None and model.m > 0

    def integrate(self, model, stabilization, settings, y0, p, t0, t1, ts):
        """One solve with a user's map; with the partition map, pieces with the
        independent coordinates re-chosen along the motion (`integrate_partitioned`)."""
        if not self._repartitions(model):
            return AbstractFormulation.integrate(self, model, stabilization, settings, y0, p, t0, t1, ts)
        n, m = model.n, model.m

        def vector_field(t, y, args):
            p_, perm, _ = args
            qd, ud, _ = self._rates(model, y[:n], y[n:], t, p_, perm)
            return jnp.concatenate([qd, ud])

        def project(t, y, args, stabilization=stabilization):
            return self.project(model, t, y, args[0], stabilization)

        def project_step(t, y, args):
            return project(t, y, args, stabilization.with_block_solves())

        def remap(t, y, p_, old, new):
            # q̇ = W u + w₀ is the same motion in either partition; the new u is its
            # independent part (W[ind] = I, w₀[ind] = 0).
            W, w0 = self.map(model, y[:n], t, p_, old)
            return jnp.concatenate([y[:n], (W @ y[n:] + w0)[new[m:]]])

        perm0 = named_partition(model, self.independent, y0[:n], t0, p)
        return integrate_partitioned(model, settings, y0, p, t0, t1, ts, perm0, vector_field,
                                     project if self.projects(stabilization) else None, remap,
                                     growth=float(self.growth), max_partitions=self.max_partitions,
                                     watch=settings.adaptive, project_step=project_step)

    def accelerations(self, model, q, qd, t, p, stabilization):
        self._check_ready()
        W, w0 = self.map(model, q, t, p)
        u = jnp.linalg.lstsq(W, qd - w0)[0]
        return self._rates(model, q, u, t, p)[2], None
