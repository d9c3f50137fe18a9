"""The existence-theorem report: is `[[M, Bᵀ], [B, 0]]` nonsingular here, and if not, why?

Haug's existence theorem (THEORY §3): if (1) `B` has full row rank and (2)
`q̇ᵀ M q̇ > 0` for every `q̇ ≠ 0` with `B q̇ = 0`, then the augmented matrix is
nonsingular and `q̈`, `λ` are unique. This module names the failure cases:

- **redundant** rows: rank deficiency that persists at nearby configurations on the
  constraint manifold (λ not unique, q̈ may still be);
- **singular** configuration: rank lost at this configuration only (a dead centre);
- **M not positive**: harmless when `Nᵀ M N` (N a basis of null(B)) is still positive
  definite, e.g. a massless link or Euler parameters; fatal otherwise.

References: Haug §6.3 (existence theorem), THEORY §3.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from . import _dynamics as dyn
from . import _kinematics as kin
from ._errors import ModelError, SimulationError
from ._first_order import first_order_structure
from ._numerics.linalg import numerical_rank, dependent_rows
from ._params import checked_params, nonfinite_entries
from ._tracing import device_array, one_shot_filter_jit


@dataclass(frozen=True)
class CheckReport:
    """Existence-theorem report at one configuration (see `mbdjax.check`).

    Attributes:
        n, m, m_h, m_n: coordinates and constraint rows (holonomic, nonholonomic).
        rank: numerical rank of `B` (relative tolerance `rtol`).
        dof: velocity degrees of freedom, `n − rank`.
        sigma_min, sigma_max, condition: extreme singular values of `B`, and their ratio.
        dependent: names of rows of B dependent on earlier rows at this configuration.
        redundant: the dependent rows when the deficiency persists nearby (a
            redundant mechanism); empty otherwise.
        singular: True when rank is lost at this configuration only.
        mass_positive_definite: `M` is positive definite on all of Rⁿ.
        mass_positive_on_nullspace: `Nᵀ M N` is positive definite (condition (2)).
        mass_min_eig, reduced_mass_min_eig: the smallest eigenvalues of `M`, `Nᵀ M N`.
        constraint_residual: `max |Φ(q, t)|` (a configuration off the manifold is
            reported, not fixed).
        first_order: massless loop rates (resistive loops of a network) that follow
            first-order dynamics from their loop equations; `NᵀMN` is then required to
            be positive on the other admissible velocities only.
        coordinate_singular: names of coordinate singularities within the model's
            `singularity_tol` of `q` (3-1-3 Euler angles at sin θ ≈ 0), where the
            coordinates themselves fail even if the mechanism does not.
        ok: conditions (1) and (2) both hold, and no coordinate singularity.
        motion_unique: the accelerations are unique even if `ok` is False because
            of redundant rows alone (THEORY §8: a redundant mechanism, rank lost at
            and near `q`, `M` positive on null(B), assembled, no coordinate
            singularity). `simulate` removes those rows; only the multipliers are not
            unique (minimum-norm ones are reported).
        problems: sentences naming every failure and its fix.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> bad = mbd.check(pend, jnp.zeros(2))
        >>> bad.ok, bad.rank, bad.dof
        (False, 0, 2)
    """

    n: int
    m: int
    m_h: int
    m_n: int
    rank: int
    dof: int
    sigma_min: float
    sigma_max: float
    condition: float
    dependent: tuple[str, ...]
    redundant: tuple[str, ...]
    singular: bool
    mass_positive_definite: bool
    mass_positive_on_nullspace: bool
    mass_min_eig: float
    reduced_mass_min_eig: float
    constraint_residual: float
    ok: bool
    problems: tuple[str, ...]
    t: float = 0.0
    coordinate_singular: tuple[str, ...] = ()
    first_order: int = 0

    @property
    def motion_unique(self) -> bool:
        redundant_only = (bool(self.redundant) and not self.singular and self.mass_positive_on_nullspace
                          and not self.coordinate_singular and len(self.problems) == 1)
        return self.ok or redundant_only

    def __str__(self) -> str:
        def yn(b):
            return "yes" if b else "no"

        rows = [
            ("coordinates n", f"{self.n}"),
            ("constraint rows m", f"{self.m} (holonomic {self.m_h}, nonholonomic {self.m_n})"),
            ("rank of B", f"{self.rank}"),
            ("degrees of freedom", f"{self.dof}"),
            ("smallest singular value", f"{self.sigma_min:.3e}"),
            ("condition number", f"{self.condition:.3e}"),
            ("constraint residual", f"{self.constraint_residual:.3e}"),
            ("redundant rows", ", ".join(self.redundant) or "none"),
            ("singular configuration", yn(self.singular) + (
                f" (dependent: {', '.join(self.dependent)})" if self.singular else "")),
            ("M positive definite", f"{yn(self.mass_positive_definite)} (min eig {self.mass_min_eig:.3e})"),
            ("M positive on null(B)", "yes (no admissible motion: dof = 0)" if not self.dof
             else "yes (every admissible motion is first-order)" if np.isinf(self.reduced_mass_min_eig)
             else f"{yn(self.mass_positive_on_nullspace)} (min eig {self.reduced_mass_min_eig:.3e})"),
            ("first-order (massless) loops", f"{self.first_order}" + (
                " (rates from the loop equations, resistive: index 1)" if self.first_order else "")),
            ("coordinate singularity", ", ".join(self.coordinate_singular) or "none"),
            ("verdict", "OK: accelerations and multipliers are unique" if self.ok
             else "OK for the motion: accelerations unique, multipliers not (redundant rows)"
             if self.motion_unique else "NOT OK"),
        ]
        width = max(len(k) for k, _ in rows)
        lines = [f"existence check at t = {self.t:g} (Haug §6.3)"]
        lines += [f"  {k.ljust(width)}  {v}" for k, v in rows]
        lines += [f"  ! {p}" for p in self.problems]
        return "\n".join(lines)


@one_shot_filter_jit
def _at(model, q, t, p, qd):
    """`(B, Φ, M)` at `(q, t)`, one compiled call instead of the operations of the
    Jacobian and mass matrix dispatched one by one (the model is static: a second
    `check` of it compiles nothing, another process loads it from the persistent
    compilation cache). `Φ` is `(0,)` without holonomic rows."""
    B = kin.constraint_jacobian(model, q, t, p)
    phi = kin.holonomic(model, q, t, p) if model.m_h else jnp.zeros((0,), dtype=B.dtype)
    return B, phi, dyn.mass_matrix(model, q, qd, t, p)


def _probe(model, q, t, p, iterations=20):
    """`(q', B(q'))`: `q (n,)` (host values) moved back onto `Φ = 0` by Gauss–Newton
    steps `q ← q − Φ_q⁺ Φ` (the minimum-norm step: least squares where rows are
    dependent) until `max |Φ| ≤ 1e-13 (1 + max |q|)` or `iterations` steps, and the
    constraint Jacobian there. Each evaluation is a call of `_at`'s compiled program,
    the steps are NumPy: no program of its own (on the 35-coordinate Bricard loop a
    compiled projection took 1.1 s to compile for a few milliseconds of work)."""
    m_h = model.m_h
    tt = device_array(t)
    for k in range(iterations + 1):
        B, phi, _ = (np.asarray(x) for x in _at(model, device_array(q), tt, p, None))
        size = float(np.max(np.abs(phi), initial=0.0))
        if k == iterations or not np.isfinite(size) or size <= 1e-13 * (1.0 + float(np.max(np.abs(q)))):
            return q, B
        q = q - np.linalg.lstsq(B[:m_h], phi, rcond=None)[0]


def check(model, q, t=0.0, params=None, *, qd=None, rtol=1e-9, probes=3, probe_step=1e-3, seed=0):
    """Existence-theorem report of `model` at configuration `q` and time `t`.

    Arguments:
        model: a `mbdjax.Model`.
        q: `(n,)` configuration (ideally on `Φ = 0`; the residual is reported).
        t: time.
        params: parameter pytree (default `model.params`).
        qd: velocities for velocity-dependent mass matrices (default zeros).
        rtol: relative tolerance for the numerical rank.
        probes, probe_step: when `B` is rank deficient, how many nearby
            configurations on the manifold (moved by `probe_step` along random
            admissible directions and projected back) decide between a redundant
            mechanism and a singular configuration.

    Returns:
        A `CheckReport`; `str(report)` is a readable table.

    References: Haug §6.3 (existence theorem); THEORY §3.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> report = mbd.check(pend, jnp.array([1.0, 0.0]))
        >>> report.ok, report.rank, report.dof
        (True, 1, 1)
        >>> twice = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                   holonomic=lambda q, t, p: jnp.stack([q[0] - q[1], 2.0 * (q[0] - q[1])]),
        ...                   constraint_names=("a", "b"))
        >>> mbd.check(twice, jnp.zeros(2)).dependent
        ('b',)
    """
    p = checked_params(model, params, "check")
    q = np.asarray(q, dtype=float)
    if q.shape != (model.n,):
        raise ModelError(f"check: q has shape {q.shape}, expected ({model.n},) for {list(model.coordinates)}.")
    bad = ", ".join(nonfinite_entries(model, "q", q) + (
        nonfinite_entries(model, "qd", qd) if np.shape(qd) == (model.n,) else []))
    if bad:
        raise ModelError(f"check: non-finite state ({bad}); the existence conditions are only defined at a "
                         "finite configuration. Give finite values.")
    t = float(t)
    names = model.row_names
    n, m = model.n, model.m
    B, phi, M = _at(model, device_array(q), device_array(t), p, None if qd is None else device_array(qd))
    B, residual, M = np.asarray(B), float(np.max(np.abs(np.asarray(phi)), initial=0.0)), np.asarray(M)
    problems = []
    if m:
        U, s, Vt = np.linalg.svd(B)
        rank, _ = numerical_rank(s, B.shape, rtol)
        sigma_max = float(s[0])
        sigma_min = float(s[-1]) if m <= n else 0.0
    else:
        s = np.zeros(0)
        Vt = np.eye(n)
        rank, sigma_max, sigma_min = 0, 0.0, 0.0
    condition = sigma_max / sigma_min if sigma_min > 0 else (np.inf if m else 1.0)
    if residual > 1e-6:
        problems.append(
            f"the configuration is not assembled (max |Φ| = {residual:.2e}); use "
            "mbdjax.initial_conditions to find one on the constraints."
        )

    dependent: tuple[str, ...] = ()
    redundant: tuple[str, ...] = ()
    singular = False
    if rank < m:
        dependent = dependent_rows(B, names, rtol)
        rng = np.random.default_rng(seed)
        persistent = True
        scale = probe_step * (1.0 + float(np.max(np.abs(q))))
        for _ in range(max(int(probes), 1)):
            Nq = np.asarray(Vt[rank:]).T if rank < n else np.zeros((n, 0))
            if Nq.shape[1] == 0:
                break
            direction = Nq @ rng.standard_normal(Nq.shape[1])
            direction /= np.linalg.norm(direction)
            _, Bp = _probe(model, q + scale * direction, t, p)
            sp = np.linalg.svd(Bp, compute_uv=False)
            if numerical_rank(sp, Bp.shape, rtol)[0] == m:
                persistent = False
                break
        if persistent:
            redundant = dependent
            problems.append(
                f"redundant constraints: rows {', '.join(dependent)} depend on the others at "
                "this and nearby configurations (λ is not unique); remove them or replace a "
                "joint by one that removes fewer freedoms."
            )
        else:
            singular = True
            problems.append(
                f"singular configuration: B loses rank here (rows {', '.join(dependent)} become "
                f"dependent; smallest singular value {sigma_min:.2e}) but not nearby; avoid "
                "starting or passing through this configuration (e.g. a dead centre)."
            )

    Ms = 0.5 * (M + M.T)
    eig = np.linalg.eigvalsh(Ms)
    mscale = max(float(np.max(np.abs(eig))), 1e-300)
    mass_min = float(eig[0])
    mass_pd = mass_min > 1e-10 * mscale
    N = np.asarray(Vt[rank:]).T if m else np.eye(n)
    if N.shape[1]:
        red = np.linalg.eigvalsh(N.T @ Ms @ N)
        reduced_min = float(red[0])
        mass_null = reduced_min > 1e-10 * mscale
    else:
        reduced_min = np.inf
        mass_null = True
    near = model.singular_coordinates(q, p)
    first_order = 0
    if not mass_null and not near:
        # Massless loops with resistance are well posed: their rates solve the loop
        # equations (first-order dynamics, mbdjax._first_order).
        try:
            fo = first_order_structure(model, p, device_array(q), device_array(t))
        except SimulationError:
            fo = None  # a loop without resistance: reported below as motion without inertia
        if fo is not None and int(np.sum(red <= 1e-10 * mscale)) == len(fo.independent):
            first_order = len(fo.independent)
            mass_null = True
            positive = red[red > 1e-10 * mscale]
            reduced_min = float(positive[0]) if positive.size else np.inf
    if not mass_null:
        cause = ("; here the coordinates themselves are singular (below), which makes M degenerate"
                 if near else ": some motion allowed by the constraints has no inertia; give the massless "
                 "bodies mass or constrain them (in a network, a loop of capacitors and sources only needs a "
                 "resistor or an inductor)")
        problems.append(
            f"the mass matrix is not positive on the admissible velocities (smallest eigenvalue "
            f"of NᵀMN = {reduced_min:.2e}){cause}."
        )
    if near:
        problems.append(
            "the coordinates are singular here: " + ", ".join(f"{nm} (margin {v:.1e})" for nm, v in near)
            + (f"; {model.singularity_advice}" if model.singularity_advice else "")
        )
    structural = model.structure_problems
    problems.extend(structural)
    ok = rank == m and mass_null and not near and not structural
    return CheckReport(
        n=n, m=m, m_h=model.m_h, m_n=model.m_n, rank=rank, dof=n - rank,
        sigma_min=sigma_min, sigma_max=sigma_max, condition=float(condition),
        dependent=dependent, redundant=redundant, singular=singular,
        mass_positive_definite=bool(mass_pd), mass_positive_on_nullspace=bool(mass_null),
        mass_min_eig=mass_min, reduced_mass_min_eig=float(reduced_min),
        constraint_residual=residual, ok=bool(ok), problems=tuple(problems), t=t,
        coordinate_singular=tuple(nm for nm, _ in near), first_order=first_order,
    )

