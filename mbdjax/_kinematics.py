"""Constraint kinematics by automatic differentiation (THEORY §1).

Holonomic rows `Φ(q, t) = 0`:

    velocity      Φ_q q̇ = ν,   ν = −Φ_t
    acceleration  Φ_q q̈ = γ,   γ = −(Φ_q q̇)_q q̇ − 2 Φ_qt q̇ − Φ_tt = −φ''(0),
                  φ(s) = Φ(q + s q̇, t + s)   (a jvp of a jvp; no Hessian is formed)

Nonholonomic rows `C(q, q̇, t) = A(q,t) q̇ + a(q,t) = 0`:

    A = ∂C/∂q̇,  a = C(q, 0, t),  A q̈ = γ_n = −(C_q q̇ + C_t)  at fixed q̇.

Stacked: `B = [Φ_q; A]`, `B q̇ = b = [ν; −a]`, `B q̈ = g = [γ; γ_n]`.

References: Haug §3.2–3.4 and §6.3; Zhang (2) eqs. (1)–(7).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._errors import InitialConditionError
from ._params import checked_params


def _f(x):
    return jnp.asarray(x, dtype=float)


def holonomic(model, q, t, p):
    """`Φ(q, t)`, shape `(m_h,)` (empty when the model has none)."""
    if model.holonomic_fn is None:
        return jnp.zeros((0,), dtype=float)
    return _f(model.holonomic_fn(_f(q), _f(t), p))


def holonomic_jacobian(model, q, t, p):
    """`Φ_q(q, t)`, shape `(m_h, n)`: the model's own Jacobian or `jacfwd`/`jacrev`."""
    q = _f(q)
    t = _f(t)
    if model.holonomic_fn is None:
        return jnp.zeros((0, q.shape[0]), dtype=float)
    if model.holonomic_jacobian_fn is not None:
        return _f(model.holonomic_jacobian_fn(q, t, p))
    if model.jacobian_pattern is not None:
        return model.jacobian_pattern.dense(holonomic_jacobian_values(model, q, t, p))
    jac = jax.jacrev if model.m_h > 2 * q.shape[0] else jax.jacfwd
    return jac(lambda x: _f(model.holonomic_fn(x, t, p)))(q)


def holonomic_jacobian_values(model, q, t, p):
    """The `(nnz,)` nonzeros of `Φ_q` in the order of `model.jacobian_pattern`."""
    return _f(model.holonomic_jacobian_values_fn(_f(q), _f(t), p))


def nu(model, q, t, p):
    """`ν = −Φ_t`, shape `(m_h,)`: right side of the velocity equation."""
    q = _f(q)
    t = _f(t)
    if model.holonomic_fn is None:
        return jnp.zeros((0,), dtype=float)
    _, dphi_dt = jax.jvp(lambda s: _f(model.holonomic_fn(q, s, p)), (t,), (jnp.ones_like(t),))
    return -dphi_dt


def gamma(model, q, qd, t, p):
    """`γ = −φ''(0)` with `φ(s) = Φ(q + s q̇, t + s)`, shape `(m_h,)`."""
    q, qd, t = _f(q), _f(qd), _f(t)
    if model.holonomic_fn is None:
        return jnp.zeros((0,), dtype=float)
    one = jnp.ones_like(t)

    def first(x, s):
        return jax.jvp(lambda y, r: _f(model.holonomic_fn(y, r, p)), (x, s), (qd, one))[1]

    return -jax.jvp(first, (q, t), (qd, one))[1]


def nonholonomic(model, q, qd, t, p):
    """`C(q, q̇, t) = A q̇ + a`, shape `(m_n,)`."""
    if model.nonholonomic_fn is None:
        return jnp.zeros((0,), dtype=float)
    return _f(model.nonholonomic_fn(_f(q), _f(qd), _f(t), p))


def nonholonomic_terms(model, q, t, p):
    """`(A, a)` of the nonholonomic rows: shapes `(m_n, n)` and `(m_n,)`."""
    q, t = _f(q), _f(t)
    n = q.shape[0]
    if model.nonholonomic_fn is None:
        return jnp.zeros((0, n), dtype=float), jnp.zeros((0,), dtype=float)
    zero = jnp.zeros_like(q)
    C = lambda v: _f(model.nonholonomic_fn(q, v, t, p))  # noqa: E731
    return jax.jacfwd(C)(zero), C(zero)


def gamma_nonholonomic(model, q, qd, t, p):
    """`γ_n = −(C_q q̇ + C_t)` at fixed q̇, shape `(m_n,)` (one jvp along `(q̇, 1)`)."""
    q, qd, t = _f(q), _f(qd), _f(t)
    if model.nonholonomic_fn is None:
        return jnp.zeros((0,), dtype=float)
    C = lambda x, s: _f(model.nonholonomic_fn(x, qd, s, p))  # noqa: E731
    return -jax.jvp(C, (q, t), (qd, jnp.ones_like(t)))[1]


def constraint_jacobian(model, q, t, p):
    """`B = [Φ_q; A]`, shape `(m, n)`."""
    Phi_q = holonomic_jacobian(model, q, t, p)
    if model.nonholonomic_fn is None:
        return Phi_q
    A, _ = nonholonomic_terms(model, q, t, p)
    return jnp.concatenate([Phi_q, A], axis=0)


def constraint_products(model, q, t, p, v, y):
    """`(B v, Bᵀ y)`, shapes `(m,)` and `(n,)`, `B = [Φ_q; A]`: the holonomic part from
    one forward and one reverse derivative of Φ itself, with no Jacobian formed. The
    derivative rules of the Schur solve and of the velocity projection differentiate
    these products once more; through Φ that is cheaper than through the Jacobian's
    nonzeros, whose gathers dominated a batch of tangents."""
    phi = lambda x: holonomic(model, x, t, p)  # noqa: E731
    Bv = jax.jvp(phi, (_f(q),), (_f(v),))[1]
    BTy = jax.vjp(phi, _f(q))[1](y[:model.m_h])[0]
    if model.nonholonomic_fn is None:
        return Bv, BTy
    A, _ = nonholonomic_terms(model, q, t, p)
    return jnp.concatenate([Bv, A @ v]), BTy + A.T @ y[model.m_h:]


def velocity_rhs(model, q, t, p):
    """`b = [ν; −a]`, shape `(m,)`, so that admissible velocities satisfy `B q̇ = b`."""
    v = nu(model, q, t, p)
    if model.nonholonomic_fn is None:
        return v
    _, a = nonholonomic_terms(model, q, t, p)
    return jnp.concatenate([v, -a])


def acceleration_rhs(model, q, qd, t, p):
    """`g = [γ; γ_n]`, shape `(m,)`, so that `B q̈ = g`."""
    g = gamma(model, q, qd, t, p)
    if model.nonholonomic_fn is None:
        return g
    return jnp.concatenate([g, gamma_nonholonomic(model, q, qd, t, p)])


def velocity_residual(model, q, qd, t, p):
    """`B q̇ − b`, shape `(m,)`: zero for admissible velocities."""
    Phi_q = holonomic_jacobian(model, q, t, p)
    r = Phi_q @ _f(qd) - nu(model, q, t, p)
    if model.nonholonomic_fn is None:
        return r
    return jnp.concatenate([r, nonholonomic(model, q, qd, t, p)])


# ------------------------------------------------------------- kinematic analysis
def kinematic_analysis(model, q_guess, t, params=None, *, tol=1e-12, max_iter=50):
    """Kinematic analysis of a fully driven system (zero degrees of freedom).

    For each time in `t`, solves `Φ(q, t) = 0` by Newton–Raphson (starting from the
    previous solution), then `Φ_q q̇ = ν` and `Φ_q q̈ = γ` (Haug §3.4, §3.6).

    Arguments:
        model: a Model with `m_h == n` holonomic rows and no nonholonomic rows.
        q_guess: `(n,)` starting estimate for the first time.
        t: scalar or `(T,)` times.

    Returns:
        `(q, qd, qdd)`, each `(T, n)` (or `(n,)` for scalar `t`).

    Raises:
        InitialConditionError: the system is not fully driven, or Newton fails
            (with the residual and the worst constraint names).

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> driven = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                    holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0), q[0] - jnp.sin(t)]),
        ...                    constraint_names=("rod", "drive"))
        >>> q, qd, qdd = mbd.kinematic_analysis(driven, jnp.array([0.0, -1.0]), jnp.array([0.0, 0.5]))
        >>> [round(float(v), 6) for v in (q[1, 0], q[1, 1], qd[1, 0], qd[1, 1])]
        [0.479426, -0.877583, 0.877583, 0.479426]
    """
    p = checked_params(model, params, "kinematic_analysis")
    if model.m_n or model.m_h != model.n:
        raise InitialConditionError(
            f"kinematic_analysis: the model has {model.n} coordinates and {model.m_h} "
            f"holonomic (+{model.m_n} nonholonomic) rows; kinematic analysis needs as many "
            "holonomic rows (kinematic and driving constraints) as coordinates. Add drivers "
            "or use simulate() for a system with degrees of freedom."
        )
    ts = jnp.atleast_1d(_f(t))

    def newton(q, s):
        def body(carry, _):
            x = carry
            dx = jnp.linalg.solve(holonomic_jacobian(model, x, s, p), holonomic(model, x, s, p))
            return x - dx, None

        q, _ = jax.lax.scan(body, q, None, length=max_iter)
        return q

    def step(q_prev, s):
        q = newton(q_prev, s)
        J = holonomic_jacobian(model, q, s, p)
        qd = jnp.linalg.solve(J, nu(model, q, s, p))
        qdd = jnp.linalg.solve(J, gamma(model, q, qd, s, p))
        return q, (q, qd, qdd, holonomic(model, q, s, p))

    _, (qs, qds, qdds, res) = jax.jit(lambda q0, ts_: jax.lax.scan(step, q0, ts_))(_f(q_guess), ts)
    worst = jnp.max(jnp.abs(res), axis=0) if res.shape[1] else res
    if not bool(jnp.all(jnp.isfinite(qs))) or (res.shape[1] and float(jnp.max(worst)) > 1e3 * tol + 1e-9):
        order = [int(k) for k in jnp.argsort(-jnp.nan_to_num(worst, nan=jnp.inf))[:3]]
        names = ", ".join(f"{model.constraint_names[k]} ({float(worst[k]):.3g})" for k in order)
        raise InitialConditionError(
            f"kinematic_analysis: Newton did not converge; largest residuals {names}. "
            "Give a q_guess closer to an assembled configuration, or check that the "
            "mechanism can be assembled at every requested time."
        )
    if jnp.ndim(t) == 0:
        return qs[0], qds[0], qdds[0]
    return qs, qds, qdds
