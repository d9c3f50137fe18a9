"""IFToMM multibody benchmark problems (González, Dopico, Lugrís, Cuadrado 2006).

A02, the N four-bar: a row of N parallelogram loops, 2N + 1 uniform rods of 1 m and
1 kg under gravity 9.81 m/s² in −y. Crank i (i = 0 … N) is pinned to ground at
A_i = (i, 0) and carries B_i at its tip; coupler j (j = 1 … N) joins B_{j−1} to B_j.
It starts with the cranks vertical (B_i = (i, 1)) and B_0 moving at 1 m/s in +x.
Every link lies flat twice per revolution, and there the constraint Jacobian loses
rank: the mechanism has N + 1 degrees of freedom for an instant instead of one.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from ..planar import Mechanism
from .._tracing import device_array
from ._example import Example

GRAVITY = 9.81  # m/s²


def n_four_bar_configuration(theta, n):
    """`q` of the N four-bar with every crank at angle `theta` from +x (the
    parallelogram branch): cranks first (`crank0 … crankN`), then couplers."""
    c, s = math.cos(theta), math.sin(theta)
    cranks = [[i + 0.5 * c, 0.5 * s, theta] for i in range(n + 1)]
    couplers = [[j - 0.5 + c, s, 0.0] for j in range(1, n + 1)]
    return jnp.asarray(np.array(cranks + couplers, dtype=float).reshape(-1))


def n_four_bar_reference(n):
    """The one-degree-of-freedom equation of the N four-bar's parallelogram motion,
    written by hand (Lagrange's equation in the crank angle θ):

        T = ½ [(N + 1)/3 + N] θ̇²  (cranks about their pivots, m ℓ²/3; couplers in
            translation with the tip speed ℓ θ̇),
        V = g [(N + 1)/2 + N] sin θ,

    so `θ̈ = −g cos θ · [(N + 1)/2 + N] / [(N + 1)/3 + N]`. Returns the function
    `(t, [θ, θ̇]) -> [θ̇, θ̈]` (for scipy's `solve_ivp`) and the initial state
    `[π/2, −1]` (B_0 at 1 m/s in +x)."""
    ratio = GRAVITY * ((n + 1) / 2 + n) / ((n + 1) / 3 + n)

    def rhs(t, y):
        return [y[1], -ratio * math.cos(y[0])]

    return rhs, [math.pi / 2, -1.0]


def n_four_bar(n: int = 10, t1: float = 10.0) -> Example:
    """IFToMM benchmark A02: the N four-bar (see the module docstring).

    Bodies `"crank0"` … `"crank{N}"` and `"coupler1"` … `"coupler{N}"` (uniform rods,
    1 kg, inertia 1/12 kg m² about the centroid); joints `"pivot{i}"` (ground–crank i),
    `"tip{j}"` (crank j−1 – coupler j) and `"tip{j}b"` (coupler j – crank j).
    3(2N + 1) coordinates and 2(3N + 1) rows: one degree of freedom, N + 1 at the flat
    configurations. t1 = 10 s (the benchmark asks for 20 s).

    References: IFToMM benchmark library, problem A02; M. González et al., Multibody
    System Dynamics 16 (2006) 179–190.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models
        >>> ex = models.n_four_bar(3)
        >>> report = mbd.check(ex.model, ex.q0)
        >>> ex.model.n, report.dof, len(report.dependent)
        (21, 1, 0)
    """
    if int(n) < 1:
        raise ValueError(f"n_four_bar: n must be at least 1, got {n!r}.")
    n = int(n)
    mech = Mechanism(gravity=(0.0, -GRAVITY))
    for i in range(n + 1):
        mech.body(f"crank{i}", mass=1.0, inertia=1.0 / 12.0)
    for j in range(1, n + 1):
        mech.body(f"coupler{j}", mass=1.0, inertia=1.0 / 12.0)
    for i in range(n + 1):
        mech.revolute(f"pivot{i}", "ground", (float(i), 0.0), f"crank{i}", (-0.5, 0.0))
    for j in range(1, n + 1):
        mech.revolute(f"tip{j}", f"crank{j - 1}", (0.5, 0.0), f"coupler{j}", (-0.5, 0.0))
        mech.revolute(f"tip{j}b", f"coupler{j}", (0.5, 0.0), f"crank{j}", (0.5, 0.0))
    model = mech.build()
    theta0, omega0 = math.pi / 2, -1.0
    q0 = n_four_bar_configuration(theta0, n)
    # Cranks rotate at ω about their pivots, couplers translate with the tips.
    s, c = math.sin(theta0), math.cos(theta0)
    crank_rate = [-0.5 * s * omega0, 0.5 * c * omega0, omega0]
    coupler_rate = [-s * omega0, c * omega0, 0.0]
    qd0 = jnp.asarray(np.array([crank_rate] * (n + 1) + [coupler_rate] * n, dtype=float).reshape(-1))
    return Example(f"n-four-bar-{n}" if n != 10 else "n-four-bar",
                   f"IFToMM A02: {n} parallelogram loops of 1 m, 1 kg rods under gravity, B0 at "
                   "1 m/s; every link passes the flat (singular) configuration twice a turn.",
                   model, q0, qd0, float(t1), mech)


# The orthogonal Bricard loop on the edges of a unit cube: joints J0 … J5 in order,
# consecutive edges perpendicular, each revolute axis perpendicular to the two edges
# it joins, consecutive axes perpendicular (all twists 90°, equal lengths, no offsets).
_BRICARD_JOINTS = ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (1.0, 1.0, 0.0), (1.0, 1.0, 1.0),
                   (0.0, 1.0, 1.0), (0.0, 0.0, 1.0))
_BRICARD_AXES = ((0.0, -1.0, 0.0), (0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, -1.0, 0.0),
                 (0.0, 0.0, 1.0), (1.0, 0.0, 0.0))


def bricard(t1: float = 10.0, revolute_at_j5: bool = True) -> Example:
    """A Bricard 6R loop (the IFToMM A04 kind): five uniform rods of 1 m and 1 kg with a
    0.1 m square section, and ground as the sixth link, under gravity 9.81 m/s² in −y,
    released from rest.

    The joints sit at the corners (0,0,0), (1,0,0), (1,1,0), (1,1,1), (0,1,1), (0,0,1) m
    of a unit cube; rod k runs from joint k to joint k+1, and ground joins joints 5
    and 0. Every revolute axis is perpendicular to the two links it joins and to the
    next axis (Bricard's orthogonal linkage). Grübler's count gives 0 degrees of
    freedom; the loop moves with one, so one row of the 35 is redundant at every
    configuration (`mbd.check` names it). The benchmark library's own point
    coordinates could not be reached here; this is the same kind of mechanism
    (five rods, six revolutes, rank deficiency 1), not its data.

    Bodies `"bar0"` … `"bar4"` with Euler parameters (35 coordinates); joints `"j0"`
    (ground–bar0) … `"j5"` (bar4–ground). `revolute_at_j5=False` makes j5 a universal
    joint (its second axis along bar 4), which removes exactly the redundant row.

    References: R. Bricard (1897); IFToMM benchmark library, problem A04.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models
        >>> ex = models.bricard()
        >>> report = mbd.check(ex.model, ex.q0)
        >>> ex.model.n, ex.model.m, report.rank, report.dof
        (35, 35, 34, 1)
    """
    # on first use: only this example is spatial; the spatial front end loads diffrax,
    # which the planar ones (`mbdjax check n-four-bar`) do without
    from ..spatial import Mechanism as SpatialMechanism

    J, Z = np.array(_BRICARD_JOINTS), np.array(_BRICARD_AXES)
    m, length, side = 1.0, 1.0, 0.1
    mech = SpatialMechanism(gravity=(0.0, -GRAVITY, 0.0))
    q0 = []
    for k in range(5):
        d = J[k + 1] - J[k]
        transverse = m * (length**2 + side**2) / 12.0
        inertia = transverse * np.eye(3) + (m * side**2 / 6.0 - transverse) * np.outer(d, d)
        mech.body(f"bar{k}", mass=m, inertia=inertia, orientation="quaternion")
        q0 += list(0.5 * (J[k] + J[k + 1])) + [1.0, 0.0, 0.0, 0.0]  # body axes = global at t = 0

    def point(k, j):
        return tuple(J[j] - 0.5 * (J[k] + J[k + 1]))

    mech.revolute("j0", "ground", tuple(J[0]), tuple(Z[0]), "bar0", point(0, 0), tuple(Z[0]))
    for k in range(1, 5):
        mech.revolute(f"j{k}", f"bar{k - 1}", point(k - 1, k), tuple(Z[k]), f"bar{k}", point(k, k), tuple(Z[k]))
    if revolute_at_j5:
        mech.revolute("j5", "bar4", point(4, 5), tuple(Z[5]), "ground", tuple(J[5]), tuple(Z[5]))
    else:
        mech.universal("j5", "bar4", point(4, 5), tuple(J[5] - J[4]), "ground", tuple(J[5]), tuple(Z[5]))
    q0 = device_array(np.array(q0))
    return Example("bricard" if revolute_at_j5 else "bricard-universal",
                   "Bricard 6R loop: five 1 m, 1 kg rods and ground on the edges of a unit cube, under "
                   "gravity from rest; overconstrained (Grübler 0, mobility 1, one redundant row).",
                   mech.build(), q0, device_array(np.zeros(q0.shape)), float(t1), mech)
