"""Mass matrix, generalized forces and energy of a Model (THEORY §2).

    M q̈ + Bᵀ λ = Q,   M = ∂²T/∂q̇²,
    Q = Q^A − ∂V/∂q − ∂D/∂q̇ + ∂T/∂q − (∂²T/∂q̇∂q) q̇ − ∂²T/∂q̇∂t

References: Haug §6.3; Greenwood, *Advanced Dynamics*, ch. 4.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def mass_matrix(model, q, qd, t, p):
    """`M(q, t)`, shape `(n, n)`, from whichever inertia description the model has."""
    q = jnp.asarray(q, dtype=float)
    t = jnp.asarray(t, dtype=float)
    kind = model.inertia_kind
    if kind == "mass_matrix":
        return jnp.asarray(model.mass_matrix_fn(q, t, p), dtype=float)
    if kind == "mass_diagonal":
        return jnp.diag(jnp.asarray(model.mass_diagonal_fn(p), dtype=float))
    qd = jnp.zeros_like(q) if qd is None else jnp.asarray(qd, dtype=float)
    return jax.hessian(lambda v: model.kinetic_energy_fn(q, v, t, p))(qd)


def mass_diagonal(model, p):
    """The constant diagonal of `M` for `mass_diagonal` models, shape `(n,)`."""
    return jnp.asarray(model.mass_diagonal_fn(p), dtype=float)


def kinetic_energy(model, q, qd, t, p):
    """`T(q, q̇, t)`; `½ q̇ᵀ M q̇` when inertia is given as a mass matrix."""
    if model.inertia_kind == "kinetic_energy":
        return jnp.asarray(model.kinetic_energy_fn(q, qd, t, p), dtype=float)
    if model.inertia_kind == "mass_diagonal":
        return 0.5 * jnp.sum(mass_diagonal(model, p) * qd * qd)
    return 0.5 * qd @ (mass_matrix(model, q, qd, t, p) @ qd)


def potential_energy(model, q, t, p):
    """`V(q, t)`, zero when the model has no potential."""
    if model.potential_fn is None:
        return jnp.zeros((), dtype=float)
    return jnp.asarray(model.potential_fn(q, t, p), dtype=float)


def energy(model, q, qd, t, p):
    """Total mechanical energy `T + V`."""
    q = jnp.asarray(q, dtype=float)
    qd = jnp.asarray(qd, dtype=float)
    t = jnp.asarray(t, dtype=float)
    return kinetic_energy(model, q, qd, t, p) + potential_energy(model, q, t, p)


def forcing(model, q, qd, t, p):
    """Generalized force vector `Q(q, q̇, t)`, shape `(n,)` (THEORY §2).

    Sums the applied forces, `−∂V/∂q`, `−∂D/∂q̇` and, for `kinetic_energy` models,
    the velocity-dependent inertial terms `∂T/∂q − d/dt(∂T/∂q̇)|_{q̈=0}`, the latter
    computed as one jvp of `∂T/∂q̇` in the direction `(q̇, 1)`.
    """
    q = jnp.asarray(q, dtype=float)
    qd = jnp.asarray(qd, dtype=float)
    t = jnp.asarray(t, dtype=float)
    Q = applied_forces(model, q, qd, t, p)
    if model.potential_fn is not None:
        Q = Q - jax.grad(lambda x: jnp.asarray(model.potential_fn(x, t, p), dtype=float))(q)
    if model.inertia_kind == "kinetic_energy":
        T = model.kinetic_energy_fn
        dT_dq = jax.grad(lambda x: T(x, qd, t, p))(q)
        momentum = lambda x, s: jax.grad(lambda v: T(x, v, s, p))(qd)  # noqa: E731
        _, dp = jax.jvp(momentum, (q, t), (qd, jnp.ones_like(t)))
        Q = Q + dT_dq - dp
    return Q


def applied_power(model, q, qd, t, p):
    """Power of the applied and dissipative forces, `(Q^A − ∂D/∂q̇)·q̇` (W).

    Excludes the potential (its work is in V) and, for `kinetic_energy` models, the
    inertial terms. Not defined for `mass_matrix` models, whose `forces` also hold
    the quadratic-velocity terms.
    """
    qd = jnp.asarray(qd, dtype=float)
    return applied_forces(model, q, qd, t, p) @ qd


def applied_forces(model, q, qd, t, p):
    """`Q^A − ∂D/∂q̇`, shape `(n,)`: applied forces plus the dampers' (content) forces."""
    q = jnp.asarray(q, dtype=float)
    qd = jnp.asarray(qd, dtype=float)
    t = jnp.asarray(t, dtype=float)
    F = jnp.zeros_like(q)
    if model.forces_fn is not None:
        F = F + jnp.asarray(model.forces_fn(q, qd, t, p), dtype=float)
    if model.dissipation_fn is not None:
        F = F - jax.grad(lambda v: jnp.asarray(model.dissipation_fn(q, v, t, p), dtype=float))(qd)
    return F
