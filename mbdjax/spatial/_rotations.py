"""Spatial rotations: 3-1-3 Euler angles, Euler parameters, angular velocity.

Conventions (used by every function here):

* A rotation matrix `R` maps body-frame components to global ones,
  `v_global = R @ v_body`; its columns are the body axes written in the global frame.
* `skew(v) @ w == cross(v, w)`.
* 3-1-3 Euler angles (Greenwood's "type II" angles), `angles = (φ, θ, ψ)`:

      R = Rz(φ) Rx(θ) Rz(ψ),
      Rz(a) = [[c, −s, 0], [s, c, 0], [0, 0, 1]],  Rx(a) = [[1, 0, 0], [0, c, −s], [0, s, c]].

  They are singular (the rates cannot be recovered from ω) where `sin θ = 0`.
* Euler parameters (a unit quaternion, scalar first) `e = (e0, e1, e2, e3)`,
  `ē = (e1, e2, e3)`:

      R(e) = (2 e0² − 1) I + 2 (ē ēᵀ + e0 skew(ē)).

  `e` and `−e` give the same `R`.
* Angular velocity: global `ω` with `skew(ω) = Ṙ Rᵀ`; body components `ω' = Rᵀ ω`,
  `skew(ω') = Rᵀ Ṙ`.

      3-1-3 angles:     ω = G(φ, θ, ψ) (φ̇, θ̇, ψ̇),   ω' = G'(φ, θ, ψ) (φ̇, θ̇, ψ̇),  G' = Rᵀ G
      Euler parameters: ω = 2 E(e) ė,                ω' = 2 G(e) ė
                        E(e) = [−ē, skew(ē) + e0 I],  G(e) = [−ē, −skew(ē) + e0 I]   (3×4)

  `E(e) e = G(e) e = 0`, `E Eᵀ = G Gᵀ = I` and `R = E Gᵀ` for unit `e`.

All functions take single (unbatched) arrays, are pure `jax.numpy`, contain no Python
branching on traced values, and work under `jax.jit`, `jax.vmap`, `jax.grad` and
`jax.jacfwd`. String arguments (`kind`, `frame`) are static Python values.

References: D. T. Greenwood, *Advanced Dynamics* (Cambridge, 2003), §7 (Euler angles,
angular velocity); E. J. Haug, *Computer-Aided Kinematics and Dynamics of Mechanical
Systems* (Allyn and Bacon, 1989), §6.3 (Euler parameters); S. W. Shepperd, "Quaternion
from rotation matrix", *J. Guidance and Control* 1(3), 1978.
"""

from __future__ import annotations

import jax.numpy as jnp

_FRAMES = ("global", "body")
_KINDS = ("euler313", "quaternion")

# Below this value of sin θ a matrix is treated as gimbal-locked by
# `euler313_from_matrix` (ψ is set to 0). The reconstruction error this introduces is at
# most about 2 sin θ, i.e. at rounding level.
_GIMBAL_LOCK_SIN = 1e-13


def _vector(x, n, name):
    x = jnp.asarray(x, dtype=float)
    if x.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {x.shape}")
    return x


def _matrix3(R):
    R = jnp.asarray(R, dtype=float)
    if R.shape != (3, 3):
        raise ValueError(f"R must have shape (3, 3), got {R.shape}")
    return R


def _scalar(a):
    a = jnp.asarray(a, dtype=float)
    if a.shape != ():
        raise ValueError(f"the angle must be a scalar, got shape {a.shape}")
    return a


def _check_frame(frame):
    if frame not in _FRAMES:
        raise ValueError(f"frame must be one of {_FRAMES}, got {frame!r}")


def _wrap(x):
    """Map an angle to (−π, π] (differentiable; the shift is locally constant)."""
    return x - 2.0 * jnp.pi * jnp.ceil((x - jnp.pi) / (2.0 * jnp.pi))


def skew(v):
    """Skew-symmetric cross-product matrix of a vector.

    `v` has shape `(3,)`; the result has shape `(3, 3)` and satisfies
    `skew(v) @ w == cross(v, w)` and `skew(v).T == -skew(v)` (Haug's "tilde" operator).

    >>> import jax.numpy as jnp
    >>> from mbdjax.spatial._rotations import skew
    >>> skew(jnp.array([1.0, 2.0, 3.0])).tolist()
    [[0.0, -3.0, 2.0], [3.0, 0.0, -1.0], [-2.0, 1.0, 0.0]]
    """
    x, y, z = _vector(v, 3, "v")
    o = jnp.zeros_like(x)
    return jnp.stack([jnp.stack([o, -z, y]), jnp.stack([z, o, -x]), jnp.stack([-y, x, o])])


def rotation_z(a):
    """Rotation by the scalar angle `a` (radians) about the z axis, shape `(3, 3)`.

    `Rz(a) = [[cos a, −sin a, 0], [sin a, cos a, 0], [0, 0, 1]]`: it maps body components
    to global ones for a body frame turned by `+a` about z (Greenwood §7).

    >>> import jax.numpy as jnp
    >>> from mbdjax.spatial._rotations import rotation_z
    >>> bool(jnp.allclose(rotation_z(jnp.pi / 2) @ jnp.array([1.0, 0.0, 0.0]), jnp.array([0.0, 1.0, 0.0])))
    True
    """
    a = _scalar(a)
    c, s = jnp.cos(a), jnp.sin(a)
    o, i = jnp.zeros_like(a), jnp.ones_like(a)
    return jnp.stack([jnp.stack([c, -s, o]), jnp.stack([s, c, o]), jnp.stack([o, o, i])])


def rotation_x(a):
    """Rotation by the scalar angle `a` (radians) about the x axis, shape `(3, 3)`.

    `Rx(a) = [[1, 0, 0], [0, cos a, −sin a], [0, sin a, cos a]]` (Greenwood §7).

    Example:

        >>> import jax.numpy as jnp
        >>> from mbdjax import spatial as sp
        >>> [round(float(x), 12) for x in sp.rotation_x(jnp.pi / 2) @ jnp.array([0.0, 1.0, 0.0])]
        [0.0, 0.0, 1.0]
    """
    a = _scalar(a)
    c, s = jnp.cos(a), jnp.sin(a)
    o, i = jnp.zeros_like(a), jnp.ones_like(a)
    return jnp.stack([jnp.stack([i, o, o]), jnp.stack([o, c, -s]), jnp.stack([o, s, c])])


def euler313_matrix(angles):
    """Rotation matrix of 3-1-3 Euler angles, shape `(3, 3)`.

    `angles = (φ, θ, ψ)`, shape `(3,)`, radians; `R = Rz(φ) Rx(θ) Rz(ψ)` maps body
    components to global ones (Greenwood §7, "type II" angles: precession φ, nutation
    θ, spin ψ).

    Example:

        >>> import jax.numpy as jnp
        >>> from mbdjax import spatial as sp
        >>> bool(jnp.allclose(sp.euler313_matrix(jnp.array([0.3, 0.0, 0.0])), sp.rotation_z(0.3)))
        True
    """
    phi, theta, psi = _vector(angles, 3, "angles")
    return rotation_z(phi) @ rotation_x(theta) @ rotation_z(psi)


def quaternion_matrix(e):
    """Rotation matrix of Euler parameters, shape `(3, 3)`.

    `e = (e0, e1, e2, e3)`, shape `(4,)`, scalar first, assumed to be of unit length (it is
    not normalised here; for a non-unit `e` the result is not orthogonal).
    `R = (2 e0² − 1) I + 2 (ē ēᵀ + e0 skew(ē))` with `ē = (e1, e2, e3)` (Haug §6.3),
    so that `R(e) = R(−e)`.

    >>> import jax.numpy as jnp
    >>> from mbdjax.spatial._rotations import quaternion_matrix
    >>> quaternion_matrix(jnp.array([1.0, 0.0, 0.0, 0.0])).tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    e = _vector(e, 4, "e")
    e0, eb = e[0], e[1:]
    return (2.0 * e0 * e0 - 1.0) * jnp.eye(3) + 2.0 * (jnp.outer(eb, eb) + e0 * skew(eb))


def euler313_from_matrix(R):
    """3-1-3 Euler angles `(φ, θ, ψ)` of a rotation matrix, shape `(3,)`.

    `R` (shape `(3, 3)`, assumed orthogonal with determinant +1) is decomposed as
    `R = Rz(φ) Rx(θ) Rz(ψ)` (Greenwood §7) with `θ ∈ [0, π]` and `φ, ψ ∈ (−π, π]`.
    Away from the singularity the decomposition is unique:

        θ = atan2(sin θ, R33),   ψ = atan2(R31, R32),

    with `sin θ ≥ 0` taken from `R13, R23, R31, R32`, and φ from whichever of

        φ + ψ = atan2(R21 − R12, R11 + R22)    (used when R33 ≥ 0, θ ≤ π/2)
        φ − ψ = atan2(R21 + R12, R11 − R22)    (used when R33 < 0,  θ > π/2)

    is well conditioned (the radii are `1 + |cos θ| ≥ 1`), which keeps
    `euler313_matrix(euler313_from_matrix(R))` equal to `R` to rounding even close to the
    singularity.

    Singularity (gimbal lock), `sin θ = 0`: at θ = 0 only φ + ψ, at θ = π only φ − ψ is
    determined by `R`. There (numerically: `sin θ < 1e-13`) this function returns ψ = 0
    and puts the whole angle into φ; the values are finite and their matrix reproduces
    `R`. The result is not differentiable there (the map has no derivative), but the
    derivative evaluates without NaN.

    >>> import jax.numpy as jnp
    >>> from mbdjax.spatial._rotations import euler313_from_matrix, euler313_matrix
    >>> a = jnp.array([0.3, 1.2, -2.0])
    >>> bool(jnp.allclose(euler313_from_matrix(euler313_matrix(a)), a))
    True
    """
    R = _matrix3(R)
    sq = 0.5 * (R[0, 2] ** 2 + R[1, 2] ** 2 + R[2, 0] ** 2 + R[2, 1] ** 2)
    positive = sq > 0.0
    sin_theta = jnp.where(positive, jnp.sqrt(jnp.where(positive, sq, 1.0)), 0.0)
    theta = jnp.arctan2(sin_theta, R[2, 2])

    regular = sin_theta >= _GIMBAL_LOCK_SIN
    # Double `where`: at the singularity atan2 sees a harmless (0, 1) so its derivative is finite.
    psi = jnp.where(regular, jnp.arctan2(jnp.where(regular, R[2, 0], 0.0), jnp.where(regular, R[2, 1], 1.0)), 0.0)
    psi = _wrap(psi)

    upper = R[2, 2] >= 0.0  # θ ≤ π/2: φ + ψ is well conditioned; otherwise φ − ψ is
    y = jnp.where(upper, R[1, 0] - R[0, 1], R[1, 0] + R[0, 1])
    x = jnp.where(upper, R[0, 0] + R[1, 1], R[0, 0] - R[1, 1])
    combined = jnp.arctan2(y, x)
    phi = _wrap(jnp.where(upper, combined - psi, combined + psi))
    return jnp.stack([phi, theta, psi])


def quaternion_from_matrix(R):
    """Euler parameters `e = (e0, e1, e2, e3)` of a rotation matrix, shape `(4,)`, `e0 ≥ 0`.

    `R` has shape `(3, 3)` and is assumed orthogonal with determinant +1; the result
    satisfies `quaternion_matrix(e) == R` (Haug §6.3 convention). Shepperd's method: with
    `t = trace R`, the symmetric matrix `K = 4 e eᵀ` is known from `R`,

        K00 = 1 + t,  Kii = 1 + 2 Rii − t,
        K0i = (R − Rᵀ) entries,  Kij = Rij + Rji  (i ≠ j ≥ 1),

    and its row with the largest diagonal entry (at least 1, since `trace K = 4`) gives
    `e` up to sign without any ill-conditioned square root or division, for every
    rotation. The sign is then chosen so that `e0 ≥ 0`; for half-turns (`e0 = 0`) both
    `±e` qualify and the sign that makes the pivot component positive is returned.

    >>> import jax.numpy as jnp
    >>> from mbdjax.spatial._rotations import quaternion_from_matrix
    >>> quaternion_from_matrix(jnp.eye(3)).tolist()
    [1.0, 0.0, 0.0, 0.0]
    """
    R = _matrix3(R)
    t = R[0, 0] + R[1, 1] + R[2, 2]
    a1, a2, a3 = R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]  # 4 e0 ē
    s12, s13, s23 = R[0, 1] + R[1, 0], R[0, 2] + R[2, 0], R[1, 2] + R[2, 1]  # 4 ei ej
    K = jnp.stack([
        jnp.stack([1.0 + t, a1, a2, a3]),
        jnp.stack([a1, 1.0 + 2.0 * R[0, 0] - t, s12, s13]),
        jnp.stack([a2, s12, 1.0 + 2.0 * R[1, 1] - t, s23]),
        jnp.stack([a3, s13, s23, 1.0 + 2.0 * R[2, 2] - t]),
    ])
    k = jnp.argmax(jnp.diagonal(K))
    row = K[k]
    e = row / (2.0 * jnp.sqrt(row[k]))  # row = 4 e_k e, row[k] = 4 e_k² ≥ 1
    return jnp.where(e[0] < 0.0, -e, e)


def quaternion_from_euler313(angles):
    """Euler parameters of 3-1-3 Euler angles, shape `(4,)`, `e0 ≥ 0`.

    `angles = (φ, θ, ψ)`, shape `(3,)`. Composing the half-angle quaternions of
    `Rz(φ) Rx(θ) Rz(ψ)` gives (Greenwood §7, Haug §6.3)

        e = (cos(θ/2) cos((φ+ψ)/2), sin(θ/2) cos((φ−ψ)/2),
             sin(θ/2) sin((φ−ψ)/2), cos(θ/2) sin((φ+ψ)/2)),

    which is returned with its sign flipped where needed so that `e0 ≥ 0`, matching
    `quaternion_from_matrix(euler313_matrix(angles))` (up to the sign of half-turns,
    where `e0 = 0`). `quaternion_matrix` of the result equals `euler313_matrix(angles)`.

    Example:

        >>> import jax.numpy as jnp
        >>> from mbdjax import spatial as sp
        >>> a = jnp.array([0.3, 0.4, 0.5])
        >>> bool(jnp.allclose(sp.quaternion_matrix(sp.quaternion_from_euler313(a)), sp.euler313_matrix(a)))
        True
    """
    phi, theta, psi = _vector(angles, 3, "angles")
    ch, sh = jnp.cos(0.5 * theta), jnp.sin(0.5 * theta)
    plus, minus = 0.5 * (phi + psi), 0.5 * (phi - psi)
    e = jnp.stack([ch * jnp.cos(plus), sh * jnp.cos(minus), sh * jnp.sin(minus), ch * jnp.sin(plus)])
    return jnp.where(e[0] < 0.0, -e, e)


def euler313_from_quaternion(e):
    """3-1-3 Euler angles `(φ, θ, ψ)` of unit Euler parameters `e`, shape `(3,)`.

    Computed as `euler313_from_matrix(quaternion_matrix(e))`; ranges and the behaviour at
    the singularity `sin θ = 0` are those of `euler313_from_matrix`. `e` and `−e` give
    the same angles.

    Example:

        >>> import jax.numpy as jnp
        >>> from mbdjax import spatial as sp
        >>> e = sp.quaternion_from_euler313(jnp.array([0.3, 0.4, 0.5]))
        >>> [round(float(x), 12) for x in sp.euler313_from_quaternion(e)]
        [0.3, 0.4, 0.5]
    """
    return euler313_from_matrix(quaternion_matrix(e))


def euler313_rate_matrix(angles, frame="global"):
    """Matrix mapping 3-1-3 Euler angle rates to angular velocity, shape `(3, 3)`.

    `angles = (φ, θ, ψ)`, shape `(3,)`. With `frame="global"` it returns `G` with
    `ω = G (φ̇, θ̇, ψ̇)`: its columns are the rotation axes `e_z`, `Rz(φ) e_x` and
    `Rz(φ) Rx(θ) e_z` in global components,

        G = [[0, cos φ, sin φ sin θ], [0, sin φ, −cos φ sin θ], [1, 0, cos θ]].

    With `frame="body"` it returns `G' = Rᵀ G` with `ω' = G' (φ̇, θ̇, ψ̇)`,

        G' = [[sin θ sin ψ, cos ψ, 0], [sin θ cos ψ, −sin ψ, 0], [cos θ, 0, 1]].

    `det G = det G' = −sin θ`: both are singular at θ = 0, π (Greenwood §7). `frame`
    must be the Python string "global" or "body" (ValueError otherwise).

    Example:

        >>> import jax.numpy as jnp
        >>> from mbdjax import spatial as sp
        >>> G = sp.euler313_rate_matrix(jnp.array([0.3, 0.4, 0.5]))
        >>> [round(float(x), 12) for x in G @ jnp.array([2.0, 0.0, 0.0])]
        [0.0, 0.0, 2.0]
    """
    _check_frame(frame)
    phi, theta, psi = _vector(angles, 3, "angles")
    st, ct = jnp.sin(theta), jnp.cos(theta)
    o, i = jnp.zeros_like(theta), jnp.ones_like(theta)
    if frame == "global":
        cp, sp = jnp.cos(phi), jnp.sin(phi)
        return jnp.stack([jnp.stack([o, cp, sp * st]), jnp.stack([o, sp, -cp * st]), jnp.stack([i, o, ct])])
    cs, ss = jnp.cos(psi), jnp.sin(psi)
    return jnp.stack([jnp.stack([st * ss, cs, o]), jnp.stack([st * cs, -ss, o]), jnp.stack([ct, o, i])])


def quaternion_rate_matrix(e, frame="global"):
    """Matrix mapping Euler parameter rates to angular velocity, shape `(3, 4)`.

    `e = (e0, e1, e2, e3)`, shape `(4,)`, unit length. With `frame="global"` it returns
    `2 E(e)`, `E(e) = [−ē, skew(ē) + e0 I]`, so that `ω = 2 E ė`; with `frame="body"` it
    returns `2 G(e)`, `G(e) = [−ē, −skew(ē) + e0 I]`, so that `ω' = 2 G ė` (Haug §6.3).
    Both annihilate `e` (`E e = G e = 0`), so only the part of `ė` tangent to the unit
    sphere (`eᵀ ė = 0`) contributes. `frame` must be "global" or "body" (ValueError
    otherwise).

    Example:

        >>> import jax.numpy as jnp
        >>> from mbdjax import spatial as sp
        >>> e = sp.quaternion_from_euler313(jnp.array([0.3, 0.4, 0.5]))
        >>> w = jnp.array([0.1, -0.2, 0.3])
        >>> bool(jnp.allclose(sp.quaternion_rate_matrix(e) @ sp.quaternion_rates(e, w), w))
        True
    """
    _check_frame(frame)
    e = _vector(e, 4, "e")
    e0, eb = e[0], e[1:]
    sign = 1.0 if frame == "global" else -1.0
    right = sign * skew(eb) + e0 * jnp.eye(3)
    return 2.0 * jnp.concatenate([-eb[:, None], right], axis=1)


def angular_velocity(kind, q, qd, frame="global"):
    """Angular velocity from orientation coordinates and their rates, shape `(3,)`.

    `kind="euler313"`: `q = (φ, θ, ψ)`, `qd = (φ̇, θ̇, ψ̇)`, shapes `(3,)`; returns
    `euler313_rate_matrix(q, frame) @ qd` (Greenwood §7).
    `kind="quaternion"`: `q = e` (unit Euler parameters), `qd = ė`, shapes `(4,)`; returns
    `quaternion_rate_matrix(q, frame) @ qd`, i.e. `2 E ė` or `2 G ė` (Haug §6.3).

    `frame="global"` gives `ω` with `skew(ω) = Ṙ Rᵀ`; `frame="body"` gives `ω' = Rᵀ ω`
    with `skew(ω') = Rᵀ Ṙ`. An unknown `kind` or `frame` raises ValueError.

    >>> import jax.numpy as jnp
    >>> from mbdjax.spatial._rotations import angular_velocity
    >>> angular_velocity("euler313", jnp.zeros(3), jnp.array([1.0, 0.0, 0.0])).tolist()
    [0.0, 0.0, 1.0]
    """
    if kind == "euler313":
        return euler313_rate_matrix(q, frame) @ _vector(qd, 3, "qd")
    if kind == "quaternion":
        return quaternion_rate_matrix(q, frame) @ _vector(qd, 4, "qd")
    raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")


def euler313_rates(angles, omega, frame="global"):
    """3-1-3 Euler angle rates `(φ̇, θ̇, ψ̇)` from an angular velocity, shape `(3,)`.

    Solves `G (φ̇, θ̇, ψ̇) = ω` (`frame="global"`) or `G' (φ̇, θ̇, ψ̇) = ω'`
    (`frame="body"`) with the matrices of `euler313_rate_matrix`. Since `det G = −sin θ`
    the rates scale like `1/sin θ`: they are inaccurate near, and infinite or NaN at,
    θ = 0, π (gimbal lock; Greenwood §7). Use Euler parameters there.

    Example:

        >>> import jax.numpy as jnp
        >>> from mbdjax import spatial as sp
        >>> [round(float(x), 12) + 0.0 for x in sp.euler313_rates(jnp.array([0.3, 0.4, 0.5]), jnp.array([0.0, 0.0, 2.0]))]
        [2.0, 0.0, 0.0]
    """
    return jnp.linalg.solve(euler313_rate_matrix(angles, frame), _vector(omega, 3, "omega"))


def quaternion_rates(e, omega, frame="global"):
    """Euler parameter rates `ė` from an angular velocity, shape `(4,)`.

    For unit `e` (shape `(4,)`): `ė = ½ E(e)ᵀ ω` for the global `ω` (`frame="global"`) or
    `ė = ½ G(e)ᵀ ω'` for body components (`frame="body"`), `ω` of shape `(3,)`
    (Haug §6.3). The result is tangent to the unit sphere (`eᵀ ė = 0`) and is the inverse
    of `angular_velocity("quaternion", e, ·, frame)` on such rates, because
    `E Eᵀ = G Gᵀ = I`. Defined for every orientation (no singularity).

    Example:

        >>> import jax.numpy as jnp
        >>> from mbdjax import spatial as sp
        >>> [round(float(x), 12) for x in sp.quaternion_rates(jnp.array([1.0, 0.0, 0.0, 0.0]), jnp.array([0.0, 0.0, 2.0]))]
        [0.0, 0.0, 0.0, 1.0]
    """
    return 0.25 * quaternion_rate_matrix(e, frame).T @ _vector(omega, 3, "omega")
