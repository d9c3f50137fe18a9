"""Hand-written NumPy + SciPy baseline for planar multibody dynamics.

This is the reference against which ``mbdjax`` is timed (see ``core.py``). It
implements exactly the augmented (Lagrange multiplier) equations of THEORY §2/§5,

    [[M, Φ_qᵀ], [Φ_q, 0]] [q̈; λ] = [Q; γ],

for planar rigid bodies in absolute (Cartesian) coordinates ``(x, y, φ)`` per body,
``M = diag(m, m, J)`` per body, with the dense augmented matrix solved by
``numpy.linalg.solve`` at every right-hand-side call and the state integrated by
``scipy.integrate.solve_ivp`` (no constraint stabilization).

Everything is written out by hand (no automatic differentiation): the constraint
Jacobian ``Φ_q`` and the acceleration right side ``γ = −(Φ_q q̇)_q q̇`` of every joint
are analytic. ``self_check()`` verifies both against central finite differences.

Conventions (Haug, *Computer-Aided Kinematics and Dynamics of Mechanical Systems*,
ch. 6):

- ``A(φ) = [[cos φ, −sin φ], [sin φ, cos φ]]`` rotates body-fixed vectors into the
  global frame, ``dA/dφ = A R`` with ``R = [[0, −1], [1, 0]]`` (rotation by +90°),
  ``d²A/dφ² = −A``.
- A *body index* of ``-1`` denotes ground (no coordinates, ``r = 0``, ``φ = 0``).

Joints
------
Revolute joint between body ``i`` (point ``s_i``) and body ``j`` (point ``s_j``)::

    Φ = r_i + A_i s_i − r_j − A_j s_j = 0                                  (2 rows)
    Φ_q: ∂/∂r_i = I, ∂/∂φ_i = A_i R s_i, ∂/∂r_j = −I, ∂/∂φ_j = −A_j R s_j
    γ  = A_i s_i φ̇_i² − A_j s_j φ̇_j²

(derivation: d²/dt² (A_i s_i) = A_i R s_i φ̈_i − A_i s_i φ̇_i², so
``Φ̈ = Φ_q q̈ − A_i s_i φ̇_i² + A_j s_j φ̇_j² = 0`` gives ``Φ_q q̈ = γ`` with the γ above).

Translational (prismatic) joint: body ``j`` slides along an axis ``v`` fixed in body
``i``. With ``d = r_j + A_j s_j − r_i − A_i s_i`` (from point P on ``i`` to point Q on
``j``) and ``u = A_i R v`` the axis normal in the global frame::

    Φ₁ = uᵀ d = 0,        Φ₂ = φ_j − φ_i − φ₀ = 0                          (2 rows)
    Φ₁ rows: ∂/∂r_i = −uᵀ, ∂/∂r_j = uᵀ,
             ∂/∂φ_i = (A_i R R v)ᵀ d − uᵀ A_i R s_i = −(A_i v)ᵀ d − uᵀ A_i R s_i,
             ∂/∂φ_j = uᵀ A_j R s_j
    γ₁ = uᵀ d φ̇_i² − 2 u̇ᵀ ḋ + uᵀ (A_j s_j φ̇_j² − A_i s_i φ̇_i²),    γ₂ = 0
    with u̇ = −A_i v φ̇_i,  ḋ = ṙ_j + A_j R s_j φ̇_j − ṙ_i − A_i R s_i φ̇_i.

Forces (Haug §4.4): gravity ``m g`` on every body's ``(x, y)``; motor torques
``τ = τ₀ − c φ̇`` on a body's ``φ``; translational spring-dampers between two points,
tension ``f = k(ℓ − ℓ₀) + c ℓ̇`` (positive pulls the points together) with
``ℓ = |d|``, ``ℓ̇ = uᵀḋ``, ``u = d/ℓ``: generalized forces ``(f u, (A_i s_i) × f u)`` on
body i and ``(−f u, (A_j s_j) × (−f u))`` on body j. The quadratic-velocity vector is
zero in these coordinates (THEORY §2).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

GROUND = -1
_R = np.array([[0.0, -1.0], [1.0, 0.0]])


def rot(phi):
    """Rotation matrices ``A(φ)``; ``phi`` of shape ``(k,)`` gives ``(k, 2, 2)``."""
    c, s = np.cos(phi), np.sin(phi)
    return np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)


def _rotate(phi, v):
    """``A(φ_k) v_k`` for ``phi (k,)`` and ``v (k, 2)``, shape ``(k, 2)``."""
    c, s = np.cos(phi), np.sin(phi)
    return np.stack([c * v[:, 0] - s * v[:, 1], s * v[:, 0] + c * v[:, 1]], 1)


# --------------------------------------------------------------------------- model
@dataclass
class Revolute:
    """Revolute joint: point ``si`` of body ``i`` coincides with point ``sj`` of ``j``."""

    i: int
    j: int
    si: tuple[float, float]
    sj: tuple[float, float]
    name: str = "revolute"


@dataclass
class Translational:
    """Translational joint: body ``j`` slides along axis ``v`` (fixed in body ``i``)
    through point ``si`` of ``i``; ``sj`` is the sliding point on ``j`` and ``phi0``
    the fixed relative angle ``φ_j − φ_i``."""

    i: int
    j: int
    v: tuple[float, float] = (1.0, 0.0)
    si: tuple[float, float] = (0.0, 0.0)
    sj: tuple[float, float] = (0.0, 0.0)
    phi0: float = 0.0
    name: str = "translational"


@dataclass
class Torque:
    """Motor torque ``τ = tau0 − c φ̇`` (N·m, counter-clockwise) on body ``body``."""

    body: int
    tau0: float
    c: float = 0.0
    name: str = "torque"


@dataclass
class SpringDamper:
    """Translational spring-damper between point ``si`` of body ``i`` and ``sj`` of ``j``:
    tension ``k (ℓ − length0) + c ℓ̇``."""

    i: int
    j: int
    si: tuple[float, float]
    sj: tuple[float, float]
    k: float
    c: float = 0.0
    length0: float = 0.0
    name: str = "spring"


@dataclass
class Mechanism:
    """A planar mechanism in absolute coordinates ``q = [x₁, y₁, φ₁, x₂, ...]``.

    Attributes:
        names: body names (order = coordinate order).
        mass, inertia: per-body mass ``m`` and polar moment ``J`` about the centre.
        revolutes, translationals: the joints.
        gravity: global gravity vector ``(g_x, g_y)``.
        torques: motor torques (:class:`Torque`).
        springs: translational spring-dampers (:class:`SpringDamper`).

    Call :meth:`prepare` (done by :func:`simulate`) after editing the joints: it
    packs the revolute joints into arrays so that ``Φ_q`` and ``γ`` are assembled
    without a Python loop over joints.
    """

    names: list[str]
    mass: np.ndarray
    inertia: np.ndarray
    revolutes: list[Revolute] = field(default_factory=list)
    translationals: list[Translational] = field(default_factory=list)
    gravity: tuple[float, float] = (0.0, -9.81)
    torques: list[Torque] = field(default_factory=list)
    springs: list[SpringDamper] = field(default_factory=list)

    # ---------------------------------------------------------------- sizes
    @property
    def nb(self) -> int:
        """Number of bodies."""
        return len(self.names)

    @property
    def n(self) -> int:
        """Number of coordinates, ``3 nb``."""
        return 3 * self.nb

    @property
    def m(self) -> int:
        """Number of constraint rows."""
        return 2 * len(self.revolutes) + 2 * len(self.translationals)

    @property
    def coordinates(self) -> list[str]:
        """Coordinate names ``body.x, body.y, body.phi``."""
        return [f"{b}.{c}" for b in self.names for c in ("x", "y", "phi")]

    # ---------------------------------------------------------------- setup
    def prepare(self):
        """Pack constant data (mass diagonal, force vector, revolute arrays)."""
        self.mass = np.asarray(self.mass, float)
        self.inertia = np.asarray(self.inertia, float)
        self.Mdiag = np.stack([self.mass, self.mass, self.inertia], 1).ravel()
        Q = np.zeros(self.n)
        Q[0::3] = self.mass * self.gravity[0]
        Q[1::3] = self.mass * self.gravity[1]
        for tq in self.torques:
            Q[3 * tq.body + 2] += tq.tau0
        self.Q = Q  # the state-independent part of the generalized forces
        # Revolute joints as arrays. Ground is mapped to a phantom body with index nb
        # whose coordinates are identically zero; its Jacobian columns are dropped.
        nb, rv = self.nb, self.revolutes
        self._ri = np.array([r.i if r.i != GROUND else nb for r in rv], int)
        self._rj = np.array([r.j if r.j != GROUND else nb for r in rv], int)
        self._si = np.array([r.si for r in rv], float).reshape(-1, 2)
        self._sj = np.array([r.sj for r in rv], float).reshape(-1, 2)
        # The constant entries of Φ_q (the ±I blocks of revolute joints and the ±1 of
        # the translational angle rows) go into a template copied at each call; the
        # angle columns of revolute rows are filled by one fancy-indexed assignment.
        J0 = np.zeros((self.m, 3 * (nb + 1)))
        for k in range(len(rv)):
            for c in range(2):
                J0[2 * k + c, 3 * self._ri[k] + c] = 1.0
                J0[2 * k + c, 3 * self._rj[k] + c] = -1.0
        row = 2 * len(rv)
        for tj in self.translationals:
            i = tj.i if tj.i != GROUND else nb
            j = tj.j if tj.j != GROUND else nb
            J0[row + 1, 3 * j + 2] += 1.0
            J0[row + 1, 3 * i + 2] -= 1.0
            row += 2
        self._J0 = J0
        self._rev_rows = np.arange(2 * len(rv))
        self._rev_col_i = np.repeat(3 * self._ri + 2, 2)
        self._rev_col_j = np.repeat(3 * self._rj + 2, 2)
        return self

    # ---------------------------------------------------------------- kinematics
    def _padded(self, q):
        """``(nb+1, 3)`` array of body coordinates, the last row being ground."""
        return np.vstack([np.reshape(q, (self.nb, 3)), np.zeros((1, 3))])

    def constraints(self, q):
        """``Φ(q)``, shape ``(m,)``: revolute rows first, then translational rows."""
        P = self._padded(q)
        A = rot(P[:, 2])
        out = []
        if self.revolutes:
            pi = P[self._ri, :2] + np.einsum("kab,kb->ka", A[self._ri], self._si)
            pj = P[self._rj, :2] + np.einsum("kab,kb->ka", A[self._rj], self._sj)
            out.append((pi - pj).ravel())
        for tj in self.translationals:
            i = tj.i if tj.i != GROUND else self.nb
            j = tj.j if tj.j != GROUND else self.nb
            d = P[j, :2] + A[j] @ tj.sj - P[i, :2] - A[i] @ tj.si
            u = A[i] @ _R @ np.asarray(tj.v)
            out.append(np.array([u @ d, P[j, 2] - P[i, 2] - tj.phi0]))
        return np.concatenate(out) if out else np.zeros(0)

    def jacobian_and_gamma(self, q, qd):
        """Analytic ``Φ_q`` (shape ``(m, n)``) and ``γ`` (shape ``(m,)``).

        Revolute joints are vectorized over joints; translational joints are written
        with plain Python floats (a handful of joints: cheaper than tiny arrays).
        """
        nb = self.nb
        P = self._padded(q)
        V = self._padded(qd)
        Jp = self._J0.copy()  # includes the 3 ground columns
        g = np.zeros(self.m)
        nr = len(self.revolutes)
        if nr:
            ri, rj = self._ri, self._rj
            Asi = _rotate(P[ri, 2], self._si)  # A_i s_i, (k, 2)
            Asj = _rotate(P[rj, 2], self._sj)
            # ∂Φ/∂φ_i = A_i R s_i = R A_i s_i (planar rotations commute), ∂Φ/∂φ_j = −R A_j s_j
            Jp[self._rev_rows, self._rev_col_i] = np.stack([-Asi[:, 1], Asi[:, 0]], 1).ravel()
            Jp[self._rev_rows, self._rev_col_j] = np.stack([Asj[:, 1], -Asj[:, 0]], 1).ravel()
            wi, wj = V[ri, 2:3], V[rj, 2:3]
            g[: 2 * nr] = (Asi * wi**2 - Asj * wj**2).ravel()
        if self.translationals:
            Pl, Vl = P.tolist(), V.tolist()
            row = 2 * nr
            for tj in self.translationals:
                i = tj.i if tj.i != GROUND else nb
                j = tj.j if tj.j != GROUND else nb
                (xi, yi, fi), (xj, yj, fj) = Pl[i], Pl[j]
                (vxi, vyi, wi), (vxj, vyj, wj) = Vl[i], Vl[j]
                ci, sni, cj, snj = math.cos(fi), math.sin(fi), math.cos(fj), math.sin(fj)
                ai = (ci * tj.si[0] - sni * tj.si[1], sni * tj.si[0] + ci * tj.si[1])  # A_i s_i
                aj = (cj * tj.sj[0] - snj * tj.sj[1], snj * tj.sj[0] + cj * tj.sj[1])  # A_j s_j
                av = (ci * tj.v[0] - sni * tj.v[1], sni * tj.v[0] + ci * tj.v[1])  # A_i v
                u = (-av[1], av[0])  # A_i R v
                d = (xj + aj[0] - xi - ai[0], yj + aj[1] - yi - ai[1])
                Jp[row, 3 * i] -= u[0]
                Jp[row, 3 * i + 1] -= u[1]
                Jp[row, 3 * j] += u[0]
                Jp[row, 3 * j + 1] += u[1]
                # R a = (−a_y, a_x)
                Jp[row, 3 * i + 2] += -(av[0] * d[0] + av[1] * d[1]) - (-u[0] * ai[1] + u[1] * ai[0])
                Jp[row, 3 * j + 2] += -u[0] * aj[1] + u[1] * aj[0]
                udot = (-av[0] * wi, -av[1] * wi)
                ddot = (vxj - aj[1] * wj - vxi + ai[1] * wi, vyj + aj[0] * wj - vyi - ai[0] * wi)
                ud = u[0] * d[0] + u[1] * d[1]
                g[row] = (ud * wi * wi - 2.0 * (udot[0] * ddot[0] + udot[1] * ddot[1])
                          + u[0] * (aj[0] * wj * wj - ai[0] * wi * wi) + u[1] * (aj[1] * wj * wj - ai[1] * wi * wi))
                row += 2  # the angle row: constant Jacobian (template), γ = 0
        return Jp[:, : 3 * nb], g

    # ---------------------------------------------------------------- dynamics
    def forces(self, q, qd):
        """Generalized forces ``Q(q, q̇)``: gravity and ``tau0`` (precomputed) plus the
        motor damping and the spring-dampers."""
        if not self.springs and not any(tq.c for tq in self.torques):
            return self.Q
        Q = self.Q.copy()
        for tq in self.torques:
            Q[3 * tq.body + 2] -= tq.c * qd[3 * tq.body + 2]
        if self.springs:
            Pl, Vl = self._padded(q).tolist(), self._padded(qd).tolist()
            Qp = np.zeros((self.nb + 1, 3))
            for sd in self.springs:
                i = sd.i if sd.i != GROUND else self.nb
                j = sd.j if sd.j != GROUND else self.nb
                (xi, yi, fi), (xj, yj, fj) = Pl[i], Pl[j]
                (vxi, vyi, wi), (vxj, vyj, wj) = Vl[i], Vl[j]
                ci, sni, cj, snj = math.cos(fi), math.sin(fi), math.cos(fj), math.sin(fj)
                ai = (ci * sd.si[0] - sni * sd.si[1], sni * sd.si[0] + ci * sd.si[1])  # A_i s_i
                aj = (cj * sd.sj[0] - snj * sd.sj[1], snj * sd.sj[0] + cj * sd.sj[1])  # A_j s_j
                d = (xj + aj[0] - xi - ai[0], yj + aj[1] - yi - ai[1])
                ddot = (vxj - aj[1] * wj - vxi + ai[1] * wi, vyj + aj[0] * wj - vyi - ai[0] * wi)
                length = math.hypot(d[0], d[1])
                u = (d[0] / length, d[1] / length)
                f = sd.k * (length - sd.length0) + sd.c * (u[0] * ddot[0] + u[1] * ddot[1])
                F = (f * u[0], f * u[1])  # force on point i (towards j); −F on point j
                Qp[i] += (F[0], F[1], ai[0] * F[1] - ai[1] * F[0])
                Qp[j] -= (F[0], F[1], aj[0] * F[1] - aj[1] * F[0])
            Q += Qp[: self.nb].ravel()
        return Q

    def accelerations(self, q, qd):
        """Solve the dense augmented system; returns ``(q̈, λ)``."""
        n, m = self.n, self.m
        B, g = self.jacobian_and_gamma(q, qd)
        K = np.zeros((n + m, n + m))
        K[np.arange(n), np.arange(n)] = self.Mdiag
        K[:n, n:] = B.T
        K[n:, :n] = B
        sol = np.linalg.solve(K, np.concatenate([self.forces(q, qd), g]))
        return sol[:n], sol[n:]

    def rhs(self, t, y):
        """First-order right-hand side ``ẏ = [q̇, q̈]`` for ``solve_ivp``."""
        n = self.n
        qdd, _ = self.accelerations(y[:n], y[n:])
        return np.concatenate([y[n:], qdd])

    def energy(self, q, qd):
        """Kinetic plus gravitational energy ``T + V_g`` (``V_g = −Σ m g·r``; springs
        and torques excluded)."""
        T = 0.5 * np.sum(self.Mdiag * qd * qd)
        r = np.reshape(q, (self.nb, 3))[:, :2]
        V = -np.sum(self.mass * (r @ np.asarray(self.gravity)))
        return T + V


# --------------------------------------------------------------------------- systems
def pendulum_chain(N: int, length: float = 1.0, mass: float = 1.0, gravity=(0.0, -9.81)):
    """The N-link pendulum chain, released at rest from horizontal.

    N uniform rods (length ``length``, mass ``mass``, ``J = m l²/12``); rod 1 pinned to
    ground at the origin at its left end, rod k pinned to rod k−1's right end. All rods
    along +x at t = 0: rod k's centre at ``(k − ½) l, 0``, ``φ = 0``.

    Returns:
        ``(mechanism, q0, qd0)``.
    """
    half = 0.5 * length
    mech = Mechanism(
        names=[f"link{k}" for k in range(1, N + 1)],
        mass=np.full(N, mass),
        inertia=np.full(N, mass * length**2 / 12.0),
        gravity=tuple(gravity),
    )
    mech.revolutes.append(Revolute(GROUND, 0, (0.0, 0.0), (-half, 0.0), "pin0"))
    for k in range(1, N):
        mech.revolutes.append(Revolute(k - 1, k, (half, 0.0), (-half, 0.0), f"pin{k}"))
    mech.prepare()
    q0 = np.zeros(3 * N)
    q0[0::3] = (np.arange(1, N + 1) - 0.5) * length
    return mech, q0, np.zeros(3 * N)


SLIDER_CRANK_DEFAULTS = dict(
    crank_length=0.1, rod_length=0.3, crank_mass=1.0, rod_mass=2.0, slider_mass=1.0,
    slider_inertia=None, torque=0.5, theta0=np.pi / 4, gravity=(0.0, -9.81),
)


def slider_crank(crank_length=0.1, rod_length=0.3, crank_mass=1.0, rod_mass=2.0,
                 slider_mass=1.0, slider_inertia=None, torque=0.5, theta0=np.pi / 4,
                 gravity=(0.0, -9.81), crank_inertia=None, rod_inertia=None):
    """The free (torque-driven) slider-crank under gravity.

    Bodies: crank (pinned to ground at the origin at its end, centre at its middle),
    connecting rod (pinned to the crank tip at one end, to the slider at the other),
    slider (on the global x axis: translational joint to ground along x, no rotation).
    Crank and rod are slender rods (``J = m l²/12``); the slider's inertia defaults to
    ``m (0.05² + 0.05²)/12`` (a 5 cm block; it never rotates, so J only enters the
    reaction torque). A constant torque ``torque`` acts on the crank. Released at rest
    with the crank at angle ``theta0`` (consistent positions from closed-form position
    analysis).

    Returns:
        ``(mechanism, q0, qd0)`` with bodies ``crank, rod, slider``.
    """
    r, L = crank_length, rod_length
    if slider_inertia is None:
        slider_inertia = slider_mass * (0.05**2 + 0.05**2) / 12.0
    if crank_inertia is None:
        crank_inertia = crank_mass * r**2 / 12.0
    if rod_inertia is None:
        rod_inertia = rod_mass * L**2 / 12.0
    mech = Mechanism(
        names=["crank", "rod", "slider"],
        mass=np.array([crank_mass, rod_mass, slider_mass]),
        inertia=np.array([crank_inertia, rod_inertia, slider_inertia]),
        gravity=tuple(gravity),
        torques=[Torque(0, torque, name="motor")],
    )
    mech.revolutes += [
        Revolute(GROUND, 0, (0.0, 0.0), (-r / 2, 0.0), "crank_pin"),
        Revolute(0, 1, (r / 2, 0.0), (-L / 2, 0.0), "crank_rod"),
        Revolute(1, 2, (L / 2, 0.0), (0.0, 0.0), "rod_slider"),
    ]
    mech.translationals.append(Translational(GROUND, 2, v=(1.0, 0.0), name="slider_guide"))
    mech.prepare()
    th = theta0
    B = r * np.array([np.cos(th), np.sin(th)])  # crank tip
    xc = B[0] + np.sqrt(L**2 - B[1] ** 2)  # slider on the x axis
    beta = np.arctan2(-B[1], xc - B[0])  # rod angle
    q0 = np.array([
        B[0] / 2, B[1] / 2, th,
        (B[0] + xc) / 2, B[1] / 2, beta,
        xc, 0.0, 0.0,
    ])
    return mech, q0, np.zeros(9)


# --------------------------------------------------------------------------- integrate
@dataclass
class Result:
    """Output of :func:`simulate`."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    nfev: int
    wall: float
    status: int
    message: str

    @property
    def us_per_rhs(self) -> float:
        """Wall time per right-hand-side call, µs (integrator overhead included)."""
        return 1e6 * self.wall / max(self.nfev, 1)


def simulate(mech: Mechanism, q0, qd0, t1=10.0, rtol=1e-8, atol=1e-10, saveat=2, method="RK45"):
    """Integrate with ``solve_ivp`` (no stabilization) and time it.

    Arguments:
        saveat: number of equally spaced output times (including 0 and ``t1``);
            outputs come from the solver's dense output at those times (``t_eval``).

    Returns:
        :class:`Result` with ``q, qd`` of shape ``(saveat, n)``.
    """
    mech.prepare()
    n = mech.n
    y0 = np.concatenate([np.asarray(q0, float), np.asarray(qd0, float)])
    t_eval = np.linspace(0.0, t1, saveat)
    start = time.perf_counter()
    sol = solve_ivp(mech.rhs, (0.0, t1), y0, method=method, rtol=rtol, atol=atol, t_eval=t_eval)
    wall = time.perf_counter() - start
    return Result(sol.t, sol.y[:n].T, sol.y[n:].T, int(sol.nfev), wall, int(sol.status), sol.message)


# --------------------------------------------------------------------------- self-check
def self_check(seed: int = 0, verbose: bool = True) -> float:
    """Verify the analytic ``Φ_q`` and ``γ`` against central finite differences.

    For random states of a 3-link chain and the slider-crank (including a tilted
    translational joint between two moving bodies): ``Φ_q`` against differences of
    ``Φ``, and ``γ = −(Φ_q q̇)_q q̇`` against the second difference
    ``−d²/ds² Φ(q + s q̇)`` at ``s = 0``. Also checks that the accelerations satisfy
    ``Φ_q q̈ = γ``, and that the spring-damper and motor forces equal ``−∂V/∂q − ∂D/∂q̇``.

    Returns:
        The largest relative error found (raises ``AssertionError`` above 1e-5).
    """
    rng = np.random.default_rng(seed)
    chain, _, _ = pendulum_chain(3)
    crank, _, _ = slider_crank()
    tilted = Mechanism(
        names=["a", "b"], mass=np.array([1.0, 2.0]), inertia=np.array([0.1, 0.2]),
        revolutes=[Revolute(GROUND, 0, (0.0, 0.0), (-0.3, 0.1))],
        translationals=[Translational(0, 1, v=(0.6, 0.8), si=(0.2, -0.1), sj=(0.05, 0.3), phi0=0.4)],
    ).prepare()
    worst = 0.0
    # Spring-dampers and a damped motor: Q = −∂V/∂q − ∂D/∂q̇ with V = ½k(ℓ − ℓ₀)²,
    # D = ½cℓ̇² + ½c_m φ̇², checked by central differences of V and D.
    sprung = Mechanism(
        names=["a", "b"], mass=np.array([1.0, 2.0]), inertia=np.array([0.1, 0.2]), gravity=(0.0, 0.0),
        torques=[Torque(1, 0.0, c=0.3)],
        springs=[SpringDamper(0, 1, (0.2, -0.1), (0.05, 0.3), k=7.0, c=0.0, length0=0.4),
                 SpringDamper(GROUND, 0, (0.5, 0.5), (0.1, 0.0), k=0.0, c=1.5)],
    ).prepare()
    q, qd = rng.normal(size=6), rng.normal(size=6)

    def spring_V(x):
        P = sprung._padded(x)
        sd = sprung.springs[0]
        d = P[1, :2] + rot(P[1, 2]) @ np.asarray(sd.sj) - P[0, :2] - rot(P[0, 2]) @ np.asarray(sd.si)
        return 0.5 * sd.k * (np.hypot(*d) - sd.length0) ** 2

    def damper_D(v):
        sd = sprung.springs[1]
        eps = 1e-5  # ℓ̇ = d/ds ℓ(q + s v) at s = 0, by a central difference
        length = lambda x: np.hypot(*(sprung._padded(x)[0, :2] + rot(x[2]) @ np.asarray(sd.sj)  # noqa: E731
                                      - np.asarray(sd.si)))
        ldot = (length(q + eps * v) - length(q - eps * v)) / (2 * eps)
        return 0.5 * sd.c * ldot**2 + 0.5 * sprung.torques[0].c * v[5] ** 2

    h, hv = 1e-6, 1e-2  # D is quadratic in q̇: its central difference is exact for any hv
    Qfd = np.array([-(spring_V(q + h * e) - spring_V(q - h * e)) / (2 * h)
                    - (damper_D(qd + hv * e) - damper_D(qd - hv * e)) / (2 * hv) for e in np.eye(6)])
    eQ = np.max(np.abs(sprung.forces(q, qd) - Qfd)) / max(1.0, np.max(np.abs(Qfd)))
    worst = max(worst, eQ)
    if verbose:
        print(f"self_check {'spring-damper':18s} |Q − (−V_q − D_q̇) by FD| {eQ:.1e}")
    for label, mech in (("chain(3)", chain), ("slider_crank", crank), ("tilted prismatic", tilted)):
        q = rng.normal(size=mech.n)
        qd = rng.normal(size=mech.n)
        B, g = mech.jacobian_and_gamma(q, qd)
        h = 1e-6
        Bfd = np.column_stack([
            (mech.constraints(q + h * e) - mech.constraints(q - h * e)) / (2 * h) for e in np.eye(mech.n)
        ])
        h2 = 1e-4
        gfd = -(mech.constraints(q + h2 * qd) - 2 * mech.constraints(q) + mech.constraints(q - h2 * qd)) / h2**2
        eB = np.max(np.abs(B - Bfd)) / max(1.0, np.max(np.abs(B)))
        eg = np.max(np.abs(g - gfd)) / max(1.0, np.max(np.abs(g)))
        qdd, _ = mech.accelerations(q, qd)
        ea = np.max(np.abs(B @ qdd - g)) / max(1.0, np.max(np.abs(g)))
        worst = max(worst, eB, eg, ea)
        if verbose:
            print(f"self_check {label:18s} |Φ_q − FD| {eB:.1e}  |γ − FD| {eg:.1e}  |Φ_q q̈ − γ| {ea:.1e}")
    assert worst < 1e-5, f"baseline self-check failed: relative error {worst:.2e}"
    return worst


if __name__ == "__main__":
    self_check()
    for N in (2, 5):
        mech, q0, qd0 = pendulum_chain(N)
        res = simulate(mech, q0, qd0, t1=2.0)
        drift = np.max(np.abs(mech.constraints(res.q[-1])))
        print(f"chain N={N}: {res.wall:.3f} s, {res.nfev} RHS calls, {res.us_per_rhs:.1f} µs/call, "
              f"|Φ| at t1 {drift:.1e}")
    mech, q0, qd0 = slider_crank()
    res = simulate(mech, q0, qd0, t1=2.0)
    print(f"slider-crank: {res.wall:.3f} s, {res.nfev} RHS calls, {res.us_per_rhs:.1f} µs/call, "
          f"|Φ| at t1 {np.max(np.abs(mech.constraints(res.q[-1]))):.1e}")
