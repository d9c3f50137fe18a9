"""Rolling without slip on a fixed plane: one holonomic and two nonholonomic rows.

The plane passes through `p₀` with unit normal `n` (pointing to the side the body is
on) and tangents `t₁, t₂`. With `ρ` from the mass centre to the contact point `c` and
`v_c = v + ω × ρ` the velocity of the body's material point at `c` (THEORY §6):

- contact (holonomic): `n·(c − p₀) = 0`, row `"<name>.height"`;
- no slip (nonholonomic): `t₁·v_c = 0`, `t₂·v_c = 0`, rows `"<name>.slip1"`, `".slip2"`.

The normal component `n·v_c` is the time derivative of the contact row (the
contact point moves along the body's surface tangentially), so it is not repeated.
Spinning about the normal is free.

Contact points from the geometry:

- thin disk of radius `a` with unit symmetry axis `k = R k'`: the lowest rim point,
  `ρ = a ĥ`, `ĥ` the unit vector along `−n + (n·k) k` (in the disk plane, towards
  the plane). Undefined when the disk lies flat (`k ∥ n`).
- sphere (or spherical base) of radius `a` centred at the body point `s'`:
  `c = r + R s' − a n`; `ρ = R s' − a n`. A hemispherical base whose centre is
  off the mass centre (Greenwood's rolling top) is the case `s' ≠ 0`.

References: Greenwood, *Advanced Dynamics*, §4.6 (rolling disk) and §4.7 (top with
a hemispherical base); THEORY §6.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from ._joints import perpendicular_pair


def _plane(prm):
    n = prm["plane_normal"] / jnp.linalg.norm(prm["plane_normal"])
    t1, t2 = perpendicular_pair(n)
    return prm["plane_point"], n, t1, t2


def disk_offset(pose, prm):
    """`ρ (3,)` from the disk's centre to its contact point (global)."""
    _, n, _, _ = _plane(prm)
    k = pose.axis(prm["axis"] / jnp.linalg.norm(prm["axis"]))
    h = -n + (n @ k) * k
    return prm["radius"] * h / jnp.linalg.norm(h)


def sphere_offset(pose, prm):
    """`ρ (3,)` from the mass centre to the contact point of the spherical surface."""
    _, n, _, _ = _plane(prm)
    return pose.axis(prm["centre"]) - prm["radius"] * n


OFFSETS = {"rolling_disk": disk_offset, "rolling_sphere": sphere_offset}


def contact_height(kind, pose, prm):
    """The contact row `n·(c − p₀)` (m)."""
    p0, n, _, _ = _plane(prm)
    return jnp.stack([n @ (pose.r + OFFSETS[kind](pose, prm) - p0)])


def slip_velocity(kind, pose, prm):
    """The two no-slip rows `(t₁·v_c, t₂·v_c)` (m/s); `pose` must carry velocities."""
    _, _, t1, t2 = _plane(prm)
    vc = pose.v + jnp.cross(pose.w, OFFSETS[kind](pose, prm))
    return jnp.stack([t1 @ vc, t2 @ vc])


def contact_point(kind, pose, prm):
    """Global position of the contact point `c (3,)`."""
    return pose.r + OFFSETS[kind](pose, prm)


def contact_velocity(kind, pose, prm):
    """Velocity of the body's material point at the contact, `v_c (3,)` (all three
    components: zero in rolling without slip)."""
    return pose.v + jnp.cross(pose.w, OFFSETS[kind](pose, prm))


@dataclasses.dataclass(frozen=True)
class ContactSpec:
    """One rolling contact: kind `"rolling_disk"` or `"rolling_sphere"`, the body and
    its numbers (`params[name]`: radius, plane_point, plane_normal, axis or centre)."""

    name: str
    kind: str
    body: str
    params: dict


@dataclasses.dataclass(frozen=True, eq=False)
class Contacts:
    """The rolling contacts of a model built by `spatial.Mechanism` (`Model.contacts`).

    Attributes:
        kinds: `{contact: "rolling_disk" | "rolling_sphere"}`.
        bodies: `{contact: body}`.
        kinematics: `{contact: fn(q, qd, p) -> (contact point (3,), velocity (3,))}`:
            the global contact point and the velocity of the body's material point
            there (zero while rolling without slip).
    """

    kinds: dict
    bodies: dict
    kinematics: dict

    def names(self) -> list[str]:
        """The contacts' names, sorted."""
        return sorted(self.kinematics)
