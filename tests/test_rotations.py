"""Spatial rotations: 3-1-3 Euler angles, Euler parameters and angular velocity.

References: Greenwood, *Advanced Dynamics*, §7 (3-1-3 angles, ω = G θ̇);
Haug, *Computer-Aided Kinematics and Dynamics*, §6.3 (Euler parameters, ω = 2Eė,
ω' = 2Gė). Every test batches random samples (numpy `default_rng(0)`) through
`jax.vmap` so that few functions are traced. Tolerances are absolute, in float64.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mbdjax.spatial._rotations import (
    angular_velocity,
    euler313_from_matrix,
    euler313_from_quaternion,
    euler313_matrix,
    euler313_rate_matrix,
    euler313_rates,
    quaternion_from_euler313,
    quaternion_from_matrix,
    quaternion_matrix,
    quaternion_rate_matrix,
    quaternion_rates,
    rotation_x,
    rotation_z,
    skew,
)

N = 64
FRAMES = ("global", "body")


def _rng():
    return np.random.default_rng(0)


def _angles(rng, n=N, margin=0.1):
    """(φ, θ, ψ) with φ, ψ ∈ (−π, π) and θ ∈ [margin, π − margin] (away from gimbal lock)."""
    phi = rng.uniform(-np.pi, np.pi, n)
    theta = rng.uniform(margin, np.pi - margin, n)
    psi = rng.uniform(-np.pi, np.pi, n)
    return np.stack([phi, theta, psi], axis=1)


def _unit_quaternions(rng, n=N):
    """Random unit quaternions; each quarter of the batch has a different largest
    component, so that every pivot of Shepperd's method is exercised."""
    e = rng.normal(size=(n, 4))
    for k in range(4):
        e[k * n // 4:(k + 1) * n // 4, k] *= 4.0
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    assert set(np.argmax(np.abs(e), axis=1)) == {0, 1, 2, 3}
    return e


def _tangent(rng, e):
    """Random rates ė with eᵀė = 0 (admissible for unit e)."""
    ed = rng.normal(size=e.shape)
    return ed - np.sum(ed * e, axis=1, keepdims=True) * e


def _matrix_fn(kind):
    return {"euler313": euler313_matrix, "quaternion": quaternion_matrix}[kind]


def _coordinates(kind, rng):
    if kind == "euler313":
        q = _angles(rng)
        return q, rng.normal(size=q.shape)
    e = _unit_quaternions(rng)
    return e, _tangent(rng, e)


def _skew_from_omega(omega):
    return _apply(skew, omega)


@functools.lru_cache(maxsize=None)
def _batched(f):
    return jax.jit(jax.vmap(f))


def _apply(f, *args):
    """`f` mapped over the leading axis of numpy batches (one jit compilation per `f`)."""
    return np.asarray(_batched(f)(*map(jnp.asarray, args)))


# ----------------------------------------------------------------------------- values


def test_skew_is_cross_product():
    """skew(a) b == numpy.cross(a, b) and skew(a)ᵀ = −skew(a); tolerance 1e-14."""
    rng = _rng()
    a, b = rng.normal(size=(N, 3)), rng.normal(size=(N, 3))
    S = _apply(skew, a)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", S, b), np.cross(a, b), rtol=0, atol=1e-14)
    np.testing.assert_array_equal(S, -np.swapaxes(S, 1, 2))


def test_known_values():
    """Hand values: Rz(π/2) e_x = e_y, Rx(π/2) e_y = e_z; the quaternion
    (cos(a/2), 0, 0, sin(a/2)) is Rz(a) and (cos(a/2), sin(a/2), 0, 0) is Rx(a)
    (Haug §6.3: e = (cos(χ/2), u sin(χ/2)) for angle χ about unit axis u); the 3-1-3 matrix
    of (a, 0, 0) is Rz(a) and of (0, a, 0) is Rx(a). Tolerance 1e-15 / 1e-14."""
    ex, ey, ez = np.eye(3)
    np.testing.assert_allclose(rotation_z(np.pi / 2) @ ex, ey, rtol=0, atol=1e-15)
    np.testing.assert_allclose(rotation_x(np.pi / 2) @ ey, ez, rtol=0, atol=1e-15)
    np.testing.assert_allclose(rotation_z(0.3), [[np.cos(0.3), -np.sin(0.3), 0], [np.sin(0.3), np.cos(0.3), 0],
                                                 [0, 0, 1]], rtol=0, atol=1e-15)

    a = np.linspace(-np.pi, np.pi, 17)
    z, c, s = np.zeros_like(a), np.cos(a / 2), np.sin(a / 2)
    Rz, Rx = _apply(rotation_z, a), _apply(rotation_x, a)
    np.testing.assert_allclose(_apply(quaternion_matrix, np.stack([c, z, z, s], 1)), Rz, rtol=0, atol=1e-14)
    np.testing.assert_allclose(_apply(quaternion_matrix, np.stack([c, s, z, z], 1)), Rx, rtol=0, atol=1e-14)
    np.testing.assert_allclose(_apply(euler313_matrix, np.stack([a, z, z], 1)), Rz, rtol=0, atol=1e-15)
    np.testing.assert_allclose(_apply(euler313_matrix, np.stack([z, a, z], 1)), Rx, rtol=0, atol=1e-15)


def test_euler313_matrix_closed_form():
    """Rz(φ)Rx(θ)Rz(ψ) against its expanded entries (Greenwood §7, type II angles),
    written out independently here; tolerance 1e-14."""
    q = _angles(_rng(), margin=0.0)
    cf, sf = np.cos(q[:, 0]), np.sin(q[:, 0])
    ct, st = np.cos(q[:, 1]), np.sin(q[:, 1])
    cp, sp = np.cos(q[:, 2]), np.sin(q[:, 2])
    expected = np.stack([
        np.stack([cf * cp - sf * ct * sp, -cf * sp - sf * ct * cp, sf * st], 1),
        np.stack([sf * cp + cf * ct * sp, -sf * sp + cf * ct * cp, -cf * st], 1),
        np.stack([st * sp, st * cp, ct], 1),
    ], 1)
    np.testing.assert_allclose(_apply(euler313_matrix, q), expected, rtol=0, atol=1e-14)


@pytest.mark.parametrize("kind", ["euler313", "quaternion"])
def test_matrices_are_rotations(kind):
    """RᵀR = I and det R = +1 for random angles / unit quaternions; tolerance 1e-12."""
    q, _ = _coordinates(kind, _rng())
    R = _apply(_matrix_fn(kind), q)
    np.testing.assert_allclose(np.einsum("nki,nkj->nij", R, R), np.broadcast_to(np.eye(3), R.shape),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(R), np.ones(len(R)), rtol=0, atol=1e-12)


# ------------------------------------------------------------------------ round trips


def test_euler313_round_trip():
    """angles → R → angles is the identity for θ ∈ [0.1, π − 0.1], φ, ψ ∈ (−π, π), where
    the decomposition is unique (tolerance 1e-11, conditioning ~ 1/sin θ); any rotation
    R (from random quaternions) → angles → R reproduces R (tolerance 1e-12), with
    θ ∈ [0, π] and φ, ψ ∈ (−π, π]."""
    rng = _rng()
    q = _angles(rng)
    np.testing.assert_allclose(_apply(lambda a: euler313_from_matrix(euler313_matrix(a)), q), q, rtol=0, atol=1e-11)

    R = _apply(quaternion_matrix, _unit_quaternions(rng))
    angles = _apply(euler313_from_matrix, R)
    np.testing.assert_allclose(_apply(euler313_matrix, angles), R, rtol=0, atol=1e-12)
    assert np.all((angles[:, 1] >= 0) & (angles[:, 1] <= np.pi))
    assert np.all((angles[:, [0, 2]] > -np.pi) & (angles[:, [0, 2]] <= np.pi))


_jacobian_from_matrix = jax.jacfwd(euler313_from_matrix)


def _reconstruct(R):
    return euler313_matrix(euler313_from_matrix(R))


def test_euler313_from_matrix_at_and_near_gimbal_lock():
    """At θ = 0 (θ = π) only φ + ψ (φ − ψ) is determined: the function returns finite
    values with ψ = 0, θ = 0 (π) and φ = φ + ψ (φ − ψ) wrapped to (−π, π]; their matrix
    reproduces R (tolerance 1e-12). Near the singularity (θ = 1e-9, π − 1e-9) R is still
    reproduced. Derivatives evaluate without NaN there."""
    rng = _rng()
    n = 16
    phi, psi = rng.uniform(-np.pi, np.pi, n), rng.uniform(-np.pi, np.pi, n)
    wrap = lambda x: np.angle(np.exp(1j * x))  # noqa: E731  (reference wrap to (−π, π])
    for theta, combined in [(0.0, wrap(phi + psi)), (np.pi, wrap(phi - psi))]:
        q = np.stack([phi, np.full(n, theta), psi], 1)
        R = _apply(euler313_matrix, q)
        angles = _apply(euler313_from_matrix, R)
        assert np.all(np.isfinite(angles))
        np.testing.assert_array_equal(angles[:, 2], 0.0)
        np.testing.assert_allclose(angles[:, 1], theta, rtol=0, atol=1e-15)
        # compare angles as points on the circle (±π are the same angle)
        np.testing.assert_allclose(np.exp(1j * angles[:, 0]), np.exp(1j * combined), rtol=0, atol=1e-14)
        np.testing.assert_allclose(_apply(euler313_matrix, angles), R, rtol=0, atol=1e-12)
        jac = _apply(_jacobian_from_matrix, R)
        assert np.all(np.isfinite(jac))

    for theta in (1e-9, np.pi - 1e-9):
        R = _apply(euler313_matrix, np.stack([phi, np.full(n, theta), psi], 1))
        np.testing.assert_allclose(_apply(_reconstruct, R), R, rtol=0, atol=1e-12)

    # identity and a half turn about z built as quaternions: the same gimbal-lock branch
    R = np.stack([np.eye(3), np.diag([-1.0, -1.0, 1.0])])
    angles = _apply(euler313_from_quaternion, _apply(quaternion_from_matrix, R))
    np.testing.assert_allclose(angles, [[0.0, 0.0, 0.0], [np.pi, 0.0, 0.0]], rtol=0, atol=1e-15)


def test_quaternion_round_trip():
    """e → R → e recovers e up to sign with e0 ≥ 0 for random unit e covering all four
    Shepperd pivots (tolerance 1e-12); half turns about x, y, z, (1, 1, 0)/√2 and the
    identity (e0 = 0 or pivot cases) give finite unit e with quaternion_matrix(e) == R."""
    e = _unit_quaternions(_rng())
    back = _apply(lambda x: quaternion_from_matrix(quaternion_matrix(x)), e)
    assert np.all(back[:, 0] >= 0)
    sign = np.sign(np.sum(back * e, axis=1, keepdims=True))
    np.testing.assert_allclose(back, sign * e, rtol=0, atol=1e-12)

    r = 1 / np.sqrt(2)
    special = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, r, r, 0], [r, 0, 0, r]], float)
    R = _apply(quaternion_matrix, special)
    back = _apply(quaternion_from_matrix, R)
    assert np.all(np.isfinite(back)) and np.all(back[:, 0] >= 0)
    np.testing.assert_allclose(np.abs(np.sum(back * special, axis=1)), 1.0, rtol=0, atol=1e-14)
    np.testing.assert_allclose(_apply(quaternion_matrix, back), R, rtol=0, atol=1e-14)


def test_euler313_quaternion_consistency():
    """quaternion_matrix(quaternion_from_euler313(a)) == euler313_matrix(a) (tolerance
    1e-12, also across gimbal lock); quaternion_from_euler313(a) is unit, has e0 ≥ 0 and
    equals quaternion_from_matrix(euler313_matrix(a)) (1e-12); and
    euler313_from_quaternion inverts it for θ away from 0, π (1e-11)."""
    q = _angles(_rng())
    q_all = np.concatenate([q, [[0.4, 0.0, -1.0], [0.4, np.pi, -1.0], [np.pi, 0.5, np.pi]]])
    e = _apply(quaternion_from_euler313, q_all)
    np.testing.assert_allclose(_apply(quaternion_matrix, e), _apply(euler313_matrix, q_all), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, rtol=0, atol=1e-14)
    assert np.all(e[:, 0] >= 0)
    np.testing.assert_allclose(e[:N], _apply(lambda a: quaternion_from_matrix(euler313_matrix(a)), q),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(_apply(euler313_from_quaternion, e[:N]), q, rtol=0, atol=1e-11)


def test_conversions_are_differentiable():
    """Left inverses have identity derivatives: d/da [from_matrix(matrix(a))] = I for
    3-1-3 angles off the singularity (tolerance 1e-10), and the jvp of
    e ↦ quaternion_from_matrix(quaternion_matrix(e)) along a tangent ė is ė for e0 > 0
    (tolerance 1e-11); by forward (jacfwd) and reverse (grad) mode."""
    rng = _rng()
    q = _angles(rng)
    J = _apply(jax.jacfwd(lambda a: euler313_from_matrix(euler313_matrix(a))), q)
    np.testing.assert_allclose(J, np.broadcast_to(np.eye(3), J.shape), rtol=0, atol=1e-10)
    g = _apply(jax.grad(lambda a: euler313_from_matrix(euler313_matrix(a))[1]), q)
    np.testing.assert_allclose(g, np.broadcast_to([0.0, 1.0, 0.0], g.shape), rtol=0, atol=1e-10)

    e = _unit_quaternions(rng)
    e = e * np.sign(e[:, :1])
    ed = _tangent(rng, e)
    f = lambda x: quaternion_from_matrix(quaternion_matrix(x))  # noqa: E731
    out = _apply(lambda x, v: jax.jvp(f, (x,), (v,))[1], e, ed)
    np.testing.assert_allclose(out, ed, rtol=0, atol=1e-11)


# ------------------------------------------------------------------ angular velocity


@pytest.mark.parametrize("kind", ["euler313", "quaternion"])
def test_angular_velocity_against_jvp_definition(kind):
    """skew(ω) = Ṙ Rᵀ and skew(ω') = Rᵀ Ṙ with Ṙ = jax.jvp of the matrix function along
    q̇ (the definition; Greenwood §7, Haug §6.3); unit e with eᵀė = 0. Tolerance 1e-12."""
    q, qd = _coordinates(kind, _rng())
    matrix = _matrix_fn(kind)
    R = _apply(matrix, q)
    Rd = _apply(lambda x, v: jax.jvp(matrix, (x,), (v,))[1], q, qd)
    for frame in FRAMES:
        S = np.asarray(_skew_from_omega(_apply(lambda x, v: angular_velocity(kind, x, v, frame), q, qd)))
        expected = (np.einsum("nij,nkj->nik", Rd, R) if frame == "global"
                    else np.einsum("nji,njk->nik", R, Rd))
        np.testing.assert_allclose(S, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", ["euler313", "quaternion"])
def test_angular_velocity_against_finite_differences(kind):
    """As above with Ṙ from central differences (R(q + h q̇) − R(q − h q̇)) / 2h,
    h = 1e-6 (truncation ~ h² ≈ 1e-12, rounding ~ ε/h ≈ 1e-10). Tolerance 1e-8."""
    h = 1e-6
    q, qd = _coordinates(kind, _rng())
    matrix = _matrix_fn(kind)
    R = _apply(matrix, q)
    Rd = (_apply(matrix, q + h * qd) - _apply(matrix, q - h * qd)) / (2 * h)
    for frame in FRAMES:
        omega = _apply(lambda x, v: angular_velocity(kind, x, v, frame), q, qd)
        S = np.asarray(_skew_from_omega(omega))
        expected = (np.einsum("nij,nkj->nik", Rd, R) if frame == "global"
                    else np.einsum("nji,njk->nik", R, Rd))
        np.testing.assert_allclose(S, expected, rtol=0, atol=1e-8)


def test_rate_matrix_identities():
    """Structure of the rate matrices: G' = Rᵀ G and det G = −sin θ (Greenwood §7);
    2G(e) = Rᵀ 2E(e), E e = G e = 0, E Eᵀ = I and R = E Gᵀ (Haug §6.3). Tolerance 1e-13."""
    rng = _rng()
    q = _angles(rng, margin=0.0)
    R = _apply(euler313_matrix, q)
    Gg = _apply(lambda a: euler313_rate_matrix(a, "global"), q)
    Gb = _apply(lambda a: euler313_rate_matrix(a, "body"), q)
    np.testing.assert_allclose(Gb, np.einsum("nji,njk->nik", R, Gg), rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.linalg.det(Gg), -np.sin(q[:, 1]), rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.linalg.det(Gb), -np.sin(q[:, 1]), rtol=0, atol=1e-13)

    e = _unit_quaternions(rng)
    R = _apply(quaternion_matrix, e)
    E = _apply(lambda x: quaternion_rate_matrix(x, "global"), e) / 2
    G = _apply(lambda x: quaternion_rate_matrix(x, "body"), e) / 2
    assert E.shape == G.shape == (N, 3, 4)
    np.testing.assert_allclose(G, np.einsum("nji,njk->nik", R, E), rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", E, e), 0.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", G, e), 0.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.einsum("nik,njk->nij", E, E), np.broadcast_to(np.eye(3), R.shape),
                               rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.einsum("nik,njk->nij", E, G), R, rtol=0, atol=1e-13)


@pytest.mark.parametrize("frame", FRAMES)
def test_inverse_rate_maps(frame):
    """euler313_rates(q, angular_velocity(q, q̇)) = q̇ for θ ∈ [0.1, π − 0.1] (tolerance 1e-11,
    conditioning 1/sin θ ≤ 10); quaternion_rates(e, angular_velocity(e, ė)) = ė for
    eᵀė = 0 and the result of quaternion_rates is tangent (tolerance 1e-13)."""
    rng = _rng()
    q, qd = _coordinates("euler313", rng)
    omega = _apply(lambda x, v: angular_velocity("euler313", x, v, frame), q, qd)
    np.testing.assert_allclose(_apply(lambda x, w: euler313_rates(x, w, frame), q, omega), qd, rtol=0, atol=1e-11)

    e, ed = _coordinates("quaternion", rng)
    omega = _apply(lambda x, v: angular_velocity("quaternion", x, v, frame), e, ed)
    back = _apply(lambda x, w: quaternion_rates(x, w, frame), e, omega)
    np.testing.assert_allclose(back, ed, rtol=0, atol=1e-13)
    w = rng.normal(size=(N, 3))
    np.testing.assert_allclose(np.sum(_apply(lambda x, v: quaternion_rates(x, v, frame), e, w) * e, axis=1), 0.0,
                               rtol=0, atol=1e-14)


def test_jit_compatible():
    """The public functions trace under jax.jit with static kind/frame strings (values
    compared with eager calls; tolerance 1e-15)."""
    a, ad = jnp.array([0.3, 1.1, -0.7]), jnp.array([0.2, -0.4, 0.9])
    f = jax.jit(lambda x, v: angular_velocity("euler313", x, v, "body"))
    np.testing.assert_allclose(f(a, ad), angular_velocity("euler313", a, ad, "body"), rtol=0, atol=1e-15)
    e = quaternion_from_euler313(a)
    np.testing.assert_allclose(jax.jit(quaternion_from_matrix)(quaternion_matrix(e)), e, rtol=0, atol=1e-15)


def test_invalid_kind_frame_and_shape():
    """Unknown kind or frame strings, and wrongly shaped inputs, raise ValueError."""
    e, ed = jnp.array([1.0, 0.0, 0.0, 0.0]), jnp.zeros(4)
    a = jnp.zeros(3)
    with pytest.raises(ValueError, match="kind"):
        angular_velocity("rodrigues", a, a)
    with pytest.raises(ValueError, match="frame"):
        angular_velocity("quaternion", e, ed, frame="inertial")
    with pytest.raises(ValueError, match="frame"):
        angular_velocity("euler313", a, a, frame="local")
    for call in (lambda: euler313_rate_matrix(a, "world"), lambda: quaternion_rate_matrix(e, "Global"),
                 lambda: euler313_rates(a, a, "space"), lambda: quaternion_rates(e, a, "")):
        with pytest.raises(ValueError, match="frame"):
            call()
    with pytest.raises(ValueError, match="shape"):
        angular_velocity("quaternion", a, a)
    with pytest.raises(ValueError, match="shape"):
        euler313_from_matrix(jnp.eye(4))
