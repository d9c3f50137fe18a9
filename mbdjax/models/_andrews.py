"""IFToMM benchmark A03: Andrews' squeezing mechanism (the seven-body "squeezer").

Seven rigid bodies in a plane, joined by frictionless revolutes, described by seven
angles `q = (β, Θ, γ, Φ, δ, Ω, ε)` (rad): β the crank angle of body 1 about the
origin O (where the drive torque acts), Θ the angle of body 2 relative to body 1,
γ the angle of the triangle, body 3, about the ground point B (it carries the spring
to C), Φ and δ the angles of the pair 4–5 hinged to ground at A, Ω and ε those of the
pair 6–7, also hinged at A. The three paths from O to the joint E (O–1–2–E meets
B–3–E, 4–5–A and 6–7–A) close three loops: six holonomic rows, one degree of freedom.

Equations, as in the benchmark (sign convention of THEORY §2):

    M(q) q̈ + Φ_qᵀ λ = f(q, q̇),    Φ(q) = 0   (6 rows),

with the published 7×7 mass matrix (it depends on Θ, Φ and Ω), the published
quadratic-velocity terms, a constant drive torque `mom` = 0.033 N·m on β, and a spring
(c0 = 4530 N/m, free length l0 = 0.07785 m) from the point D of body 3,
`D = B + sd (cos γ, sin γ) + sc (sin γ, −cos γ)`, to the ground point C. Here the
quadratic-velocity terms are `forces` and the torque and the spring are a potential,

    V(q) = −mom β + ½ c0 (|D − C| − l0)²,

so the total `f` is exactly the benchmark's and `T + V` (T = ½ q̇ᵀ M q̇) is conserved:
a check of every formulation's accuracy.

Units: m, kg, s; angles in rad. The motion is fast: in 0.03 s the crank turns
about 2.5 times (β from −0.0617 to 15.81 rad, β̇ up to about 1.4·10³ rad/s).

References: E. Hairer, G. Wanner, *Solving Ordinary Differential Equations II*,
§VII.7 (the seven-body mechanism, eqs. (7.4)–(7.11)); F. Mazzia, C. Magherini et al.,
*Test Set for IVP Solvers*, problem "andrews" (andrews.f: data, initial values and the
reference solution at t = 0.03); G.C. Andrews, "The vector-network model" (Giles 1978,
Manning 1981); IFToMM benchmark library, problem A03.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._model import Model
from ._example import Example

COORDINATES = ("beta", "theta", "gamma", "phi", "delta", "omega", "epsilon")

# The test set's data (andrews.f, Hairer & Wanner Table 7.1), SI units.
PARAMS = {
    "m1": 0.04325, "m2": 0.00365, "m3": 0.02373, "m4": 0.00706, "m5": 0.07050, "m6": 0.00706,
    "m7": 0.05498,
    "i1": 2.194e-6, "i2": 4.410e-7, "i3": 5.255e-6, "i4": 5.667e-7, "i5": 1.169e-5, "i6": 5.667e-7,
    "i7": 1.912e-5,
    "xa": -0.06934, "ya": -0.00227, "xb": -0.03635, "yb": 0.03273, "xc": 0.014, "yc": 0.072,
    "d": 28e-3, "da": 115e-4, "e": 2e-2, "ea": 1421e-5, "rr": 7e-3, "ra": 92e-5,
    "ss": 35e-3, "sa": 1874e-5, "sb": 1043e-5, "sc": 18e-3, "sd": 2e-2,
    "ta": 2308e-5, "tb": 916e-5, "u": 4e-2, "ua": 1228e-5, "ub": 449e-5,
    "zf": 2e-2, "zt": 4e-2, "fa": 1421e-5,
    "c0": 4530.0, "l0": 7785e-5, "mom": 33e-3,
}

# Consistent initial position (velocities zero) of the test set, to 30 digits.
Q0 = (-0.0617138900142764496358948458001, 0.0, 0.455279819163070380255912382449,
      0.222668390165885884674473185609, 0.487364979543842550225598953530,
      -0.222668390165885884674473185609, 1.23054744454982119249735015568)

# Reference solution at t = 0.03 s (test set, andrews.f SOLN: PSIDE at rtol = atol =
# 1e-14 on a Cray C90): angles, angular velocities, and the six multipliers.
REFERENCE_T = 0.03
REFERENCE_Q = (0.1581077119629904e2, -0.1575637105984298e2, 0.4082224013073101e-1,
               -0.5347301163226948e0, 0.5244099658805304e0, 0.5347301163226948e0,
               0.1048080741042263e1)
REFERENCE_QD = (0.1139920302151208e4, -0.1424379294994111e4, 0.1103291221937134e2,
                0.1929337464421385e2, 0.5735699284790808e0, -0.1929337464421385e2,
                0.3231791658026955e0)
REFERENCE_LAM = (0.1991753333731910e3, -0.2975531228015052e2, 0.2306654119098399e2,
                 0.3145271365475927e2, 0.2264249232082739e2, 0.1161740700019673e2)

CONSTRAINT_NAMES = ("loop3.x", "loop3.y", "loop45.x", "loop45.y", "loop67.x", "loop67.y")


def andrews_reference():
    """The published reference state at t = 0.03 s: `(t, q, q̇, λ)` as numpy arrays of
    shapes `()`, `(7,)`, `(7,)`, `(6,)` (rad, rad/s, and the multipliers of
    `Φ_qᵀ λ` in the rows `CONSTRAINT_NAMES`, same sign convention as mbdjax).

    Source: Test Set for IVP Solvers (Mazzia, Magherini et al., Bari), andrews.f,
    subroutine SOLN: PSIDE at rtol = atol = 1e-14, Cray double precision, printed to
    16 digits. Its own accuracy is lower: mbdjax (augmented, rtol 1e-12) and scipy's
    DOP853 at rtol = atol = 1e-13 on `andrews_index1_rhs` agree with each other to
    2e-13 rad, and both differ from it by up to 1.4e-9 rad in the angles (β, Θ),
    4e-10 of max |q̇| in the rates and 7e-8 of max |λ| in the multipliers.
    """
    return (np.float64(REFERENCE_T), np.array(REFERENCE_Q), np.array(REFERENCE_QD),
            np.array(REFERENCE_LAM))


def andrews_index1_rhs(t, y):
    """The benchmark's equations written again in plain numpy, independently of mbdjax,
    as the index-1 ODE for scipy's `solve_ivp`: `y = [q, q̇]`, shape `(14,)`, returns
    `[q̇, q̈]` from

        [[M, Gᵀ], [G, 0]] [q̈; λ] = [f; −(d/dt G) q̇],   G = Φ_q,

    with M, f (torque, spring and quadratic-velocity terms) and G as printed in
    andrews.f and the acceleration right-hand side differentiated by hand. No drift
    control: at rtol = atol = 1e-13 the closure stays below 1e-13 m over 0.03 s.
    Used as a second, independent reference (`andrews_index1_multipliers(y)` gives λ).

    References: Hairer & Wanner II, §VII.7; Test Set for IVP Solvers, andrews.f.
    """
    return np.concatenate([y[7:], _index1_solve(y)[:7]])


def andrews_index1_multipliers(y):
    """λ, shape `(6,)`, of the plain-numpy index-1 equations at `y = [q, q̇]`
    (see `andrews_index1_rhs`; mbdjax's sign convention M q̈ + Gᵀ λ = f)."""
    return _index1_solve(np.asarray(y, dtype=float))[7:]


def _index1_solve(y):
    """`[q̈, λ]`, shape `(13,)`, of the plain-numpy index-1 equations at `y = [q, q̇]`."""
    P = PARAMS
    be, th, ga, ph, de, om, ep = y[:7]
    b1, t1, g1, p1, d1, o1, e1 = y[7:]
    m1, m2, m3, m4, m5, m6, m7 = (P[f"m{k}"] for k in range(1, 8))
    i1, i2, i3, i4, i5, i6, i7 = (P[f"i{k}"] for k in range(1, 8))
    rr, da, d, ra, e, ea, zt, zf, fa, u = (P[k] for k in ("rr", "da", "d", "ra", "e", "ea", "zt", "zf", "fa", "u"))
    ss, sc, sd = P["ss"], P["sc"], P["sd"]
    M = np.zeros((7, 7))
    M[0, 0] = m1 * ra**2 + m2 * (rr**2 - 2 * da * rr * np.cos(th) + da**2) + i1 + i2
    M[0, 1] = M[1, 0] = m2 * (da**2 - da * rr * np.cos(th)) + i2
    M[1, 1] = m2 * da**2 + i2
    M[2, 2] = m3 * (P["sa"] ** 2 + P["sb"] ** 2) + i3
    M[3, 3] = m4 * (e - ea) ** 2 + i4
    M[3, 4] = M[4, 3] = m4 * ((e - ea) ** 2 + zt * (e - ea) * np.sin(ph)) + i4
    M[4, 4] = m4 * (zt**2 + 2 * zt * (e - ea) * np.sin(ph) + (e - ea) ** 2) + m5 * (P["ta"] ** 2 + P["tb"] ** 2) \
        + i4 + i5
    M[5, 5] = m6 * (zf - fa) ** 2 + i6
    M[5, 6] = M[6, 5] = m6 * ((zf - fa) ** 2 - u * (zf - fa) * np.sin(om)) + i6
    M[6, 6] = m6 * ((zf - fa) ** 2 - 2 * u * (zf - fa) * np.sin(om) + u**2) + m7 * (P["ua"] ** 2 + P["ub"] ** 2) \
        + i6 + i7
    xd = sd * np.cos(ga) + sc * np.sin(ga) + P["xb"]
    yd = sd * np.sin(ga) - sc * np.cos(ga) + P["yb"]
    length = np.hypot(xd - P["xc"], yd - P["yc"])
    fx, fy = -P["c0"] * (length - P["l0"]) / length * np.array([xd - P["xc"], yd - P["yc"]])
    f = np.array([
        P["mom"] - m2 * da * rr * t1 * (t1 + 2 * b1) * np.sin(th),
        m2 * da * rr * b1**2 * np.sin(th),
        fx * (sc * np.cos(ga) - sd * np.sin(ga)) + fy * (sd * np.cos(ga) + sc * np.sin(ga)),
        m4 * zt * (e - ea) * d1**2 * np.cos(ph),
        -m4 * zt * (e - ea) * p1 * (p1 + 2 * d1) * np.cos(ph),
        -m6 * u * (zf - fa) * e1**2 * np.cos(om),
        m6 * u * (zf - fa) * o1 * (o1 + 2 * e1) * np.cos(om),
    ])
    G = np.zeros((6, 7))
    G[0::2, 0] = -rr * np.sin(be) + d * np.sin(be + th)
    G[0::2, 1] = d * np.sin(be + th)
    G[1::2, 0] = rr * np.cos(be) - d * np.cos(be + th)
    G[1::2, 1] = -d * np.cos(be + th)
    G[0, 2], G[1, 2] = -ss * np.cos(ga), -ss * np.sin(ga)
    G[2, 3], G[2, 4] = -e * np.cos(ph + de), -e * np.cos(ph + de) + zt * np.sin(de)
    G[3, 3], G[3, 4] = -e * np.sin(ph + de), -e * np.sin(ph + de) - zt * np.cos(de)
    G[4, 5], G[4, 6] = zf * np.sin(om + ep), zf * np.sin(om + ep) - u * np.cos(ep)
    G[5, 5], G[5, 6] = -zf * np.cos(om + ep), -zf * np.cos(om + ep) - u * np.sin(ep)
    # −(d/dt G) q̇: each term a·cos(w) or a·sin(w) of Φ gives a·cos(w)·ẇ² or a·sin(w)·ẇ².
    ex = rr * np.cos(be) * b1**2 - d * np.cos(be + th) * (b1 + t1) ** 2
    ey = rr * np.sin(be) * b1**2 - d * np.sin(be + th) * (b1 + t1) ** 2
    rhs = np.array([
        ex - ss * np.sin(ga) * g1**2,
        ey + ss * np.cos(ga) * g1**2,
        ex - e * np.sin(ph + de) * (p1 + d1) ** 2 - zt * np.cos(de) * d1**2,
        ey + e * np.cos(ph + de) * (p1 + d1) ** 2 - zt * np.sin(de) * d1**2,
        ex - zf * np.cos(om + ep) * (o1 + e1) ** 2 - u * np.sin(ep) * e1**2,
        ey - zf * np.sin(om + ep) * (o1 + e1) ** 2 + u * np.cos(ep) * e1**2,
    ])
    K = np.block([[M, G.T], [G, np.zeros((6, 6))]])
    return np.linalg.solve(K, np.concatenate([f, rhs]))


def _mass_matrix(q, t, p):
    """The published `M(q)`, shape `(7, 7)` (kg·m²), symmetric positive definite."""
    th, ph, om = q[1], q[3], q[5]
    e_ea, zf_fa = p["e"] - p["ea"], p["zf"] - p["fa"]
    m11 = p["m1"] * p["ra"] ** 2 + p["m2"] * (p["rr"] ** 2 - 2 * p["da"] * p["rr"] * jnp.cos(th) + p["da"] ** 2) \
        + p["i1"] + p["i2"]
    m21 = p["m2"] * (p["da"] ** 2 - p["da"] * p["rr"] * jnp.cos(th)) + p["i2"]
    m22 = p["m2"] * p["da"] ** 2 + p["i2"]
    m33 = p["m3"] * (p["sa"] ** 2 + p["sb"] ** 2) + p["i3"]
    m44 = p["m4"] * e_ea**2 + p["i4"]
    m54 = p["m4"] * (e_ea**2 + p["zt"] * e_ea * jnp.sin(ph)) + p["i4"]
    m55 = p["m4"] * (p["zt"] ** 2 + 2 * p["zt"] * e_ea * jnp.sin(ph) + e_ea**2) \
        + p["m5"] * (p["ta"] ** 2 + p["tb"] ** 2) + p["i4"] + p["i5"]
    m66 = p["m6"] * zf_fa**2 + p["i6"]
    m76 = p["m6"] * (zf_fa**2 - p["u"] * zf_fa * jnp.sin(om)) + p["i6"]
    m77 = p["m6"] * (zf_fa**2 - 2 * p["u"] * zf_fa * jnp.sin(om) + p["u"] ** 2) \
        + p["m7"] * (p["ua"] ** 2 + p["ub"] ** 2) + p["i6"] + p["i7"]
    zero = 0.0 * th
    rows = [
        [m11, m21, zero, zero, zero, zero, zero],
        [m21, m22, zero, zero, zero, zero, zero],
        [zero, zero, m33, zero, zero, zero, zero],
        [zero, zero, zero, m44, m54, zero, zero],
        [zero, zero, zero, m54, m55, zero, zero],
        [zero, zero, zero, zero, zero, m66, m76],
        [zero, zero, zero, zero, zero, m76, m77],
    ]
    return jnp.stack([jnp.stack(r) for r in rows])


def _quadratic_velocity(q, qd, t, p):
    """The published velocity-dependent terms of `f` (the torque and the spring are in
    the potential), shape `(7,)` (N·m): they equal `∂T/∂q − Ṁ q̇` for T = ½ q̇ᵀ M q̇."""
    bep, thp, php, dep, omp, epp = qd[0], qd[1], qd[3], qd[4], qd[5], qd[6]
    th, ph, om = q[1], q[3], q[5]
    k2 = p["m2"] * p["da"] * p["rr"]
    k4 = p["m4"] * p["zt"] * (p["e"] - p["ea"])
    k6 = p["m6"] * p["u"] * (p["zf"] - p["fa"])
    zero = 0.0 * bep
    return jnp.stack([
        -k2 * thp * (thp + 2 * bep) * jnp.sin(th),
        k2 * bep**2 * jnp.sin(th),
        zero,
        k4 * dep**2 * jnp.cos(ph),
        -k4 * php * (php + 2 * dep) * jnp.cos(ph),
        -k6 * epp**2 * jnp.cos(om),
        k6 * omp * (omp + 2 * epp) * jnp.cos(om),
    ])


def spring_point(q, p):
    """The spring's end D on body 3, shape `(2,)` (m): `B + sd (cos γ, sin γ) +
    sc (sin γ, −cos γ)`."""
    ga = q[2]
    return jnp.stack([p["sd"] * jnp.cos(ga) + p["sc"] * jnp.sin(ga) + p["xb"],
                      p["sd"] * jnp.sin(ga) - p["sc"] * jnp.cos(ga) + p["yb"]])


def _potential(q, t, p):
    """`V = −mom β + ½ c0 (|D − C| − l0)²` (J): the drive torque and the spring."""
    D = spring_point(q, p)
    length = jnp.sqrt((D[0] - p["xc"]) ** 2 + (D[1] - p["yc"]) ** 2)
    return -p["mom"] * q[0] + 0.5 * p["c0"] * (length - p["l0"]) ** 2


def _loops(q, t, p):
    """The six loop closures `Φ(q)` (m), rows `CONSTRAINT_NAMES`: the joint E reached
    from O through bodies 1–2 minus E reached from B (body 3), from A through 4–5, and
    from A through 6–7, each as (x, y)."""
    be, th, ga, ph, de, om, ep = (q[k] for k in range(7))
    ex = p["rr"] * jnp.cos(be) - p["d"] * jnp.cos(be + th)
    ey = p["rr"] * jnp.sin(be) - p["d"] * jnp.sin(be + th)
    return jnp.stack([
        ex - p["ss"] * jnp.sin(ga) - p["xb"],
        ey + p["ss"] * jnp.cos(ga) - p["yb"],
        ex - p["e"] * jnp.sin(ph + de) - p["zt"] * jnp.cos(de) - p["xa"],
        ey + p["e"] * jnp.cos(ph + de) - p["zt"] * jnp.sin(de) - p["ya"],
        ex - p["zf"] * jnp.cos(om + ep) - p["u"] * jnp.sin(ep) - p["xa"],
        ey - p["zf"] * jnp.sin(om + ep) + p["u"] * jnp.cos(ep) - p["ya"],
    ])


def andrews_model() -> Model:
    """Andrews' mechanism as a generic `mbdjax.Model` (see the module docstring):
    coordinates `COORDINATES`, `mass_matrix`, quadratic-velocity `forces`, the torque
    and spring `potential`, six `holonomic` rows `CONSTRAINT_NAMES`; parameters
    `params[name]` with the test set's names (`"mom"`, `"c0"`, `"l0"`, `"m1"`, ...)."""
    return Model(COORDINATES, mass_matrix=_mass_matrix, forces=_quadratic_velocity, potential=_potential,
                 holonomic=_loops, constraint_names=CONSTRAINT_NAMES, params=dict(PARAMS),
                 validate_at=jnp.asarray(Q0))


def andrews(t1: float = 0.03) -> Example:
    """IFToMM benchmark A03, Andrews' squeezing mechanism, from the published consistent
    state (`Q0`, at rest) at t = 0; t1 = 0.03 s, the benchmark's end time, where the
    reference solution (`andrews_reference()`) is given.

    7 coordinates, 6 rows of full rank, one degree of freedom; `T + V` is conserved.

    References: Hairer & Wanner II, §VII.7; Test Set for IVP Solvers, "andrews";
    IFToMM benchmark library, problem A03.

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models
        >>> ex = models.andrews()
        >>> ex.model.n, ex.model.m, mbd.check(ex.model, ex.q0).dof
        (7, 6, 1)
    """
    model = andrews_model()
    q0 = jnp.asarray(np.array(Q0))
    return Example("andrews", "IFToMM A03, Andrews' squeezing mechanism: seven bodies, six loop rows, a "
                   "0.033 N·m drive torque and a 4530 N/m spring, from rest; 0.03 s (Hairer & Wanner II §VII.7).",
                   model, q0, jnp.zeros(7), float(t1))
