"""MuJoCo / MJX twins of the benchmark systems, and conversions to mbdjax's coordinates.

Both benchmark systems are planar serial chains of hinges (the four-bar is its open
crank–coupler–rocker chain plus one loop-closing ``connect`` equality), so one builder
and one converter cover both.

Conventions (checked by ``tests/test_bench_peers.py``):

- mbdjax's plane (x, y), y up, maps to MuJoCo's (x, z), z up; gravity (0, 0, −9.81).
- Every hinge axis is ``0 −1 0``: a positive joint angle turns the rod from +x towards
  +z, i.e. counter-clockwise in mbdjax's plane, so a link's absolute angle
  φ_k = ψ_k − offset_k with ψ_k = Σ_{j≤k} θ_j (the cumulative MuJoCo joint angles).
- Each body frame sits at the rod's proximal joint with its x axis along the rod; the
  rod's centre of mass is at local (c_k, 0, 0) and the next body at (L_k, 0, 0).
- Chains: all offsets 0, so mbdjax's all-zero angles (released along +x) are θ = 0.
  Four-bar: the open chain crank → coupler → rocker runs from the crank pivot to the
  rocker pivot, so the rocker body points from the coupler pin towards its ground
  pivot, opposite to mbdjax's rocker axis: offset π for the rocker.
- Inertias: ``<inertial pos="c 0 0" mass="m" diaginertia="ε J J"/>`` with J about the
  hinge axis (y) and ε = 1e-9·m (nothing depends on the x-axis value for planar motion;
  MuJoCo only needs a valid inertia). No geoms (nothing collides; contacts are
  disabled anyway), no damping, armature or joint limits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass
class SerialChain:
    """A planar serial chain of hinged rods from the origin, optionally closed to a
    ground point by one ``connect`` equality at the last body's tip."""

    name: str
    lengths: np.ndarray          # L_k, joint-to-joint (m)
    com: np.ndarray              # c_k, joint to centre of mass along the rod (m)
    mass: np.ndarray             # kg
    inertia: np.ndarray          # kg m², about the centre of mass
    offset: np.ndarray           # φ_k = ψ_k − offset_k (rad)
    closure: tuple | None = None  # ground point (x, y) the last tip is connected to
    gravity: float = 9.81
    mb_index: list = field(default_factory=list)  # mbdjax body order → chain index (identity here)

    @property
    def nb(self):
        return len(self.lengths)


def chain_twin(N: int) -> SerialChain:
    """The twin of ``mbdjax.models.pendulum_chain(N)``: N uniform 1 m, 1 kg rods."""
    return SerialChain("chain", np.ones(N), np.full(N, 0.5), np.ones(N), np.full(N, 1.0 / 12.0), np.zeros(N))


def four_bar_twin() -> SerialChain:
    """The twin of ``mbdjax.models.four_bar()`` (numbers from ``mbdjax.models._four_bar``)."""
    from mbdjax.models import _four_bar as fb

    L = np.array([fb.CRANK, fb.COUPLER, fb.ROCKER])
    m = fb.RHO * L
    return SerialChain("four-bar", L, 0.5 * L, m, m * L**2 / 12.0, np.array([0.0, 0.0, math.pi]),
                       closure=(fb.GROUND, 0.0))


def mjcf(sc: SerialChain, dt: float, integrator: str = "RK4", *, solref_timeconst: float | None = None,
         impratio: float = 1.0, iterations: int = 100, tolerance: float = 1e-12) -> str:
    """MJCF text of ``sc`` with time step ``dt`` and integrator ``"RK4"`` or ``"Euler"``.

    The loop closure (four-bar) is a site-to-site ``connect`` equality (MuJoCo's soft
    constraint) with a stiff setting: ``solimp="0.9999 0.9999 0.001 0.5 2"`` and
    ``solref="2·dt 1"`` (MuJoCo's stability limit for the time constant is 2·dt; pass
    ``solref_timeconst`` to override)."""
    tc = 2.0 * dt if solref_timeconst is None else solref_timeconst
    body, close = [], []
    indent = "    "
    for k in range(sc.nb):
        pos = "0 0 0" if k == 0 else f"{float(sc.lengths[k - 1])!r} 0 0"
        m, J = float(sc.mass[k]), float(sc.inertia[k])
        body.append(f'{indent * (k + 2)}<body name="b{k}" pos="{pos}">\n'
                    f'{indent * (k + 3)}<joint name="j{k}" type="hinge" axis="0 -1 0"/>\n'
                    f'{indent * (k + 3)}<inertial pos="{float(sc.com[k])!r} 0 0" mass="{m!r}" '
                    f'diaginertia="{1e-9 * m!r} {J!r} {J!r}"/>')
        close.append(f"{indent * (k + 2)}</body>")
    tip = ""
    equality = ""
    ground_site = ""
    if sc.closure is not None:
        tip = f'{indent * (sc.nb + 2)}<site name="tip" pos="{float(sc.lengths[-1])!r} 0 0"/>\n'
        ground_site = f'    <site name="pivot" pos="{float(sc.closure[0])!r} 0 {float(sc.closure[1])!r}"/>\n'
        equality = (f'  <equality>\n    <connect site1="tip" site2="pivot" solref="{tc!r} 1" '
                    f'solimp="0.9999 0.9999 0.001 0.5 2"/>\n  </equality>\n')
    return (
        f'<mujoco model="{sc.name}">\n'
        f'  <compiler angle="radian" autolimits="true"/>\n'
        f'  <option timestep="{dt!r}" integrator="{integrator}" gravity="0 0 {-sc.gravity!r}" '
        f'impratio="{impratio!r}" iterations="{iterations}" tolerance="{tolerance!r}">\n'
        f'    <flag contact="disable"/>\n  </option>\n'
        f'  <worldbody>\n{ground_site}'
        + "\n".join(body) + "\n" + tip + "\n".join(reversed(close)) + "\n"
        f'  </worldbody>\n{equality}</mujoco>\n'
    )


def model(sc: SerialChain, dt: float, integrator: str = "RK4", **kw):
    import mujoco

    return mujoco.MjModel.from_xml_string(mjcf(sc, dt, integrator, **kw))


# --------------------------------------------------------------------------- conversions
def _perp(u):
    return np.stack([-u[..., 1], u[..., 0]], -1)


def to_absolute(sc: SerialChain, qpos, qvel, qacc=None):
    """MuJoCo joint angles (..., nb) → mbdjax absolute coordinates (..., 3 nb):
    ``(x, y, φ)`` of each rod's centre of mass, and their rates (and accelerations
    when ``qacc`` is given). Vectorised over leading axes."""
    qpos, qvel = np.asarray(qpos, float), np.asarray(qvel, float)
    psi = np.cumsum(qpos, -1)
    w = np.cumsum(qvel, -1)
    u = np.stack([np.cos(psi), np.sin(psi)], -1)           # (..., nb, 2)
    up = _perp(u)
    L, c = sc.lengths[:, None], sc.com[:, None]
    joints = np.cumsum(L * u, -2) - L * u                  # proximal joint of each rod
    com = joints + c * u
    vj = np.cumsum(L * w[..., None] * up, -2) - L * w[..., None] * up
    vcom = vj + c * w[..., None] * up
    phi = psi - sc.offset
    q = np.concatenate([com, phi[..., None]], -1).reshape(*qpos.shape[:-1], 3 * sc.nb)
    qd = np.concatenate([vcom, w[..., None]], -1).reshape(*qpos.shape[:-1], 3 * sc.nb)
    if qacc is None:
        return q, qd
    al = np.cumsum(np.asarray(qacc, float), -1)
    acc_link = al[..., None] * up - (w**2)[..., None] * u   # d²u/dt²
    aj = np.cumsum(L * acc_link, -2) - L * acc_link
    acom = aj + c * acc_link
    qdd = np.concatenate([acom, al[..., None]], -1).reshape(*qpos.shape[:-1], 3 * sc.nb)
    return q, qd, qdd


def from_absolute(sc: SerialChain, q, qd):
    """mbdjax absolute coordinates (..., 3 nb) → MuJoCo joint angles and rates (..., nb).
    Uses only the angles (the positions follow from them for an assembled chain)."""
    phi = np.asarray(q, float)[..., 2::3] + sc.offset
    w = np.asarray(qd, float)[..., 2::3]
    rel = np.diff(phi, axis=-1, prepend=0.0)
    relw = np.diff(w, axis=-1, prepend=0.0)
    return rel, relw


def wrap(a):
    return (a + np.pi) % (2 * np.pi) - np.pi


def position_error(q, qref):
    """Largest coordinate difference ‖Δq‖∞ in mbdjax's absolute coordinates, angles
    compared modulo 2π."""
    d = np.asarray(q, float) - np.asarray(qref, float)
    d[..., 2::3] = wrap(d[..., 2::3])
    return np.max(np.abs(d), axis=-1)


def energy(sc: SerialChain, q, qd):
    """Kinetic plus gravitational energy (J) from absolute coordinates (..., 3 nb)."""
    q = np.asarray(q, float).reshape(*np.shape(q)[:-1], sc.nb, 3)
    qd = np.asarray(qd, float).reshape(*np.shape(qd)[:-1], sc.nb, 3)
    T = 0.5 * np.sum(sc.mass * (qd[..., 0] ** 2 + qd[..., 1] ** 2) + sc.inertia * qd[..., 2] ** 2, -1)
    V = np.sum(sc.mass * sc.gravity * q[..., 1], -1)
    return T + V


def energy_scale(sc: SerialChain, q0, qd0):
    """Scale for relative energy drift: |T0| + Σ m_k g r_k, r_k the largest distance of
    centre of mass k from the origin (the size of the potential-energy swing)."""
    reach = np.cumsum(sc.lengths) - sc.lengths + sc.com
    if sc.closure is not None:   # a closed loop cannot stretch out: use the link's own reach
        reach = np.minimum(reach, np.cumsum(sc.lengths))
    T0 = energy(sc, q0, qd0) - energy(sc, q0, 0 * np.asarray(qd0))
    return float(np.max(np.abs(T0)) + np.sum(sc.mass * sc.gravity * reach))


def closure_error(sc: SerialChain, q):
    """Four-bar: the largest pin separation (m) of the four revolutes in absolute
    coordinates (the crank pivot, the two moving pins and the rocker pivot), over
    leading axes. In MuJoCo's open chain only the rocker pivot can open."""
    if sc.closure is None:
        return None
    q = np.asarray(q, float).reshape(*np.shape(q)[:-1], sc.nb, 3)
    r, phi = q[..., :2], q[..., 2] + sc.offset           # ψ: the serial direction
    u = np.stack([np.cos(phi), np.sin(phi)], -1)
    start = r - sc.com[:, None] * u                       # proximal joint of each rod
    end = start + sc.lengths[:, None] * u
    gaps = [np.linalg.norm(start[..., 0, :], axis=-1)]
    for k in range(1, sc.nb):
        gaps.append(np.linalg.norm(start[..., k, :] - end[..., k - 1, :], axis=-1))
    gaps.append(np.linalg.norm(end[..., -1, :] - np.asarray(sc.closure), axis=-1))
    return np.max(np.stack(gaps, -1), -1)
