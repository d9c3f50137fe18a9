"""Hand-derived minimal-coordinate references for the standard test systems.

Each system is written here in its own minimal coordinates, from the geometry and the
masses stated in its `mbdjax.models` docstring, with no mbdjax code, and integrated
by scipy's DOP853 at rtol = atol = 1e-12 (`solve`). The formulation tests compare
mbdjax's redundant-coordinate runs with these solutions.

- `pendulum_rhs`: point mass on a rod, θ from the downward vertical,
  θ̈ = −(g/L) sin θ; rod tension T = m(L θ̇² + g cos θ) (radial balance).
- `four_bar_rhs`: the Grashof crank-rocker of `models.four_bar()` in the crank angle,
  Kane's equation with kinematic coefficients from the loop-closure equation.
- `elliptic_rhs`: Zhang's elliptic pendulum in (x, θ) after eliminating y with the
  holonomic row, the nonholonomic row kept with its multiplier.
- `slider_crank_free_rhs`: the free slider-crank of `models.slider_crank(False)` in
  the crank angle, Lagrange's equation with the closed-form slider position.
- `double_pendulum_rhs`: two uniform rods, the two-angle Lagrangian.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.integrate import solve_ivp

G = 9.81


def double_pendulum_rhs(t, y, m=1.0, length=1.0, g=G):
    """Two uniform rods (mass m, length L) hinged in series, angles from the downward
    vertical: `(θ1, θ2, θ̇1, θ̇2) -> rates` from the two-angle Lagrangian."""
    th1, th2, w1, w2 = y
    s, c = np.sin(th1 - th2), np.cos(th1 - th2)
    mass = np.array([[4 / 3, 0.5 * c], [0.5 * c, 1 / 3]]) * m * length**2
    rhs = -0.5 * m * length**2 * s * np.array([w2**2, -(w1**2)]) - m * g * length * np.array(
        [1.5 * np.sin(th1), 0.5 * np.sin(th2)])
    return np.concatenate([[w1, w2], np.linalg.solve(mass, rhs)])


def solve(rhs, y0, ts):
    """`rhs` integrated from `ts[0]` with DOP853 at rtol = atol = 1e-12; `(len(y0), len(ts))`."""
    ts = np.asarray(ts, dtype=float)
    sol = solve_ivp(rhs, (ts[0], ts[-1]), np.asarray(y0, dtype=float), method="DOP853", rtol=1e-12,
                    atol=1e-12, t_eval=ts)
    assert sol.success, sol.message
    return sol.y


# ----------------------------------------------------------------------------- pendulum
def pendulum_rhs(t, y, g=G, L=1.0):
    """θ̈ = −(g/L) sin θ, θ from the downward vertical: the mass is at L(sin θ, −cos θ)."""
    return [y[1], -g / L * math.sin(y[0])]


def pendulum_tension(theta, omega, m=1.0, g=G, L=1.0):
    """Rod tension from the radial balance T − m g cos θ = m L θ̇² (positive pulling)."""
    return m * (L * omega**2 + g * np.cos(theta))


# ----------------------------------------------------------------------------- four-bar
FOUR_BAR = dict(a=0.1, b=0.35, c=0.3, d=0.4, rho=2.0)  # crank, coupler, rocker, ground (m); kg/m


def four_bar_angles(theta, a=0.1, b=0.35, c=0.3, d=0.4):
    """Coupler angle β (crank pin B → rocker pin C) and rocker angle ψ (pivot D → C) of
    the open branch (C to the left of the directed line B → D)."""
    bx, by = a * math.cos(theta), a * math.sin(theta)
    ex, ey = d - bx, -by
    e = math.hypot(ex, ey)
    along = (b * b - c * c + e * e) / (2.0 * e)
    h = math.sqrt(b * b - along * along)
    cx, cy = bx + (along * ex - h * ey) / e, by + (along * ey + h * ex) / e
    return math.atan2(cy - by, cx - bx), math.atan2(cy, cx - d)


def _four_bar_terms(theta, omega, a=0.1, b=0.35, c=0.3, d=0.4, rho=2.0, g=G):
    """(m_eff, quadratic term, V', V, β, ψ, k_β, k_ψ) of the one-angle model.

    Loop a e^{iθ} + b e^{iβ} − c e^{iψ} = d. Velocity coefficients (Im of the rate
    equation times e^{−iψ}, e^{−iβ}): k_β = −a sin(θ−ψ)/(b sin(β−ψ)),
    k_ψ = a sin(θ−β)/(c sin(ψ−β)). Quadratic accelerations at θ̈ = 0, with
    R = −aθ̇²e^{iθ} − bβ̇²e^{iβ} + cψ̇²e^{iψ}: β̈₀ = Re(R e^{−iψ})/(b sin(β−ψ)),
    ψ̈₀ = −Re(R e^{−iβ})/(c sin(ψ−β)). Kane: Σ m aᵢ·∂vᵢ/∂θ̇ + J αᵢ ∂ωᵢ/∂θ̇ = −V'.
    """
    ma, mb, mc = rho * a, rho * b, rho * c
    Ja, Jb, Jc = ma * a * a / 12, mb * b * b / 12, mc * c * c / 12
    beta, psi = four_bar_angles(theta, a, b, c, d)
    et, eb, ep = np.exp(1j * theta), np.exp(1j * beta), np.exp(1j * psi)
    kb = -a * math.sin(theta - psi) / (b * math.sin(beta - psi))
    kp = a * math.sin(theta - beta) / (c * math.sin(psi - beta))
    bd, pd = kb * omega, kp * omega
    R = -a * omega**2 * et - b * bd**2 * eb + c * pd**2 * ep
    bdd0 = (R * np.conj(ep)).real / (b * math.sin(beta - psi))
    pdd0 = -(R * np.conj(eb)).real / (c * math.sin(psi - beta))

    def dot(z1, z2):
        return (z1 * np.conj(z2)).real

    # partial velocities of the centroids, and their accelerations at θ̈ = 0
    va, vb, vc = 0.5j * a * et, 1j * (a * et + 0.5 * b * kb * eb), 0.5j * c * kp * ep
    ab0 = -a * omega**2 * et + 0.5 * b * (1j * bdd0 - bd**2) * eb
    ac0 = 0.5 * c * (1j * pdd0 - pd**2) * ep
    m_eff = ma * abs(va) ** 2 + Ja + mb * abs(vb) ** 2 + Jb * kb**2 + mc * abs(vc) ** 2 + Jc * kp**2
    quad = mb * dot(ab0, vb) + Jb * bdd0 * kb + mc * dot(ac0, vc) + Jc * pdd0 * kp
    V = g * (ma * 0.5 * a * math.sin(theta) + mb * (a * math.sin(theta) + 0.5 * b * math.sin(beta))
             + mc * 0.5 * c * math.sin(psi))
    dV = g * (ma * 0.5 * a * math.cos(theta) + mb * (a * math.cos(theta) + 0.5 * b * math.cos(beta) * kb)
              + mc * 0.5 * c * math.cos(psi) * kp)
    return m_eff, quad, dV, V, beta, psi, kb, kp


def four_bar_rhs(t, y):
    """Crank angle θ of `models.four_bar()` (uniform bars of 2 kg/m, gravity −y)."""
    m_eff, quad, dV, *_ = _four_bar_terms(y[0], y[1])
    return [y[1], -(quad + dV) / m_eff]


def four_bar_rocker_limits(t1, theta0=math.pi / 3, omega0=5.0):
    """Times in (0, t1] at which the rocker reaches a limit position (ψ̇ = k_ψ θ̇ = 0:
    crank and coupler aligned, sin(θ − β) = 0), located as DOP853 events at 1e-12."""
    sol = solve_ivp(four_bar_rhs, (0.0, t1), [theta0, omega0], method="DOP853", rtol=1e-12, atol=1e-12,
                    events=lambda t, y: math.sin(y[0] - four_bar_angles(y[0])[0]))
    assert sol.success, sol.message
    return sol.t_events[0]


def four_bar_energy(theta, omega):
    """T + V = ½ m_eff(θ) θ̇² + V(θ) of the one-angle model."""
    m_eff, _, _, V, *_ = _four_bar_terms(theta, omega)
    return 0.5 * m_eff * omega**2 + V


# ----------------------------------------------------------------------- elliptic pendulum
ELLIPTIC = dict(m1=1.0, m2=2.0, l=1.0, g=G, Fx=0.5, M=0.2)


def _elliptic_solve(t, y, m1=1.0, m2=2.0, l=1.0, g=G, Fx=0.5, M=0.2):
    """(ẍ, θ̈, μ) from the two-coordinate equations in (x, θ).

    With y = (l/2) sin θ eliminated: T = ½ m₁ (ẋ + (l/2) sin θ θ̇)² + ½ m₂ (ẋ² +
    (l²/4) cos²θ θ̇²) + ½ (m₂ l²/12) θ̇², V = m₂ g (l/2) sin θ, Q = (F_x, M);
    nonholonomic row a·q̇ = ẋ sin θ − (l/2) cos²θ θ̇ = 0 with multiplier μ:
    M₂ q̈ + h + aᵀμ = Q − ∇V, a·q̈ = −(cos θ θ̇ ẋ + l sin θ cos θ θ̇²).
    """
    x, th, xd, thd = y
    s, c, h2 = math.sin(th), math.cos(th), 0.5 * l
    M2 = np.array([[m1 + m2, m1 * h2 * s],
                   [m1 * h2 * s, m1 * h2**2 * s * s + m2 * h2**2 * c * c + m2 * l * l / 12]])
    h = np.array([m1 * h2 * c * thd**2, (m1 - m2) * h2**2 * s * c * thd**2])
    Q = np.array([Fx * math.sin(2.0 * t), M * math.cos(t) - m2 * g * h2 * c])
    arow = np.array([s, -h2 * c * c])
    gam = -(c * thd * xd + l * s * c * thd**2)
    K = np.block([[M2, arow[:, None]], [arow[None, :], np.zeros((1, 1))]])
    return np.linalg.solve(K, np.concatenate([Q - h, [gam]]))


def elliptic_rhs(t, y):
    """State (x, θ, ẋ, θ̇) of `models.elliptic_pendulum()`."""
    xdd, thdd, _ = _elliptic_solve(t, y)
    return [y[2], y[3], xdd, thdd]


def elliptic_initial_state(theta0=math.pi / 4, omega0=1.0, l=1.0):
    """x = 0, θ = θ₀, θ̇ = ω₀ and ẋ from the nonholonomic row: ẋ = (l/2) cos²θ θ̇ / sin θ."""
    return [0.0, theta0, 0.5 * l * math.cos(theta0) ** 2 * omega0 / math.sin(theta0), omega0]


def elliptic_multipliers(ts, Y, m2=2.0, l=1.0, g=G):
    """(λ_h, λ_n) in mbdjax's sign (M q̈ + Bᵀλ = Q, rows [Φ; C]) along the solution `Y`.

    λ_n = μ (the reduced row is the nonholonomic row times ∂q/∂(x, θ)); λ_h from the
    y row of the full equations (Φ_y = 1, C_ẏ = −cos θ, and the slider's vertical
    velocity is identically zero): λ_h = −m₂(ÿ + g) + cos θ λ_n,
    ÿ = (l/2)(cos θ θ̈ − sin θ θ̇²).
    """
    out = []
    for t, y in zip(ts, Y.T):
        _, thdd, mu = _elliptic_solve(t, y)
        th, thd = y[1], y[3]
        ydd = 0.5 * l * (math.cos(th) * thdd - math.sin(th) * thd**2)
        out.append([-m2 * (ydd + g) + math.cos(th) * mu, mu])
    return np.array(out)


# --------------------------------------------------------------------- free slider-crank
def slider_crank_free_rhs(t, y, r=0.1, L=0.3, m_rod=0.5, m_slider=0.5, J_crank=0.01, g=G,
                          tau0=0.5, c_motor=0.02, k=50.0, c=1.0, length0=0.3, anchor=0.6):
    """Crank angle θ of `models.slider_crank(driven=False)`.

    Slider x = r cos θ + w, w = √(L² − r² sin²θ); rod centroid ((r cos θ + x)/2,
    (r sin θ)/2), rod angle β with sin β = −r sin θ / L (β' = −r cos θ / w); crank a
    flywheel about its pivot. T = ½ m_eff(θ) θ̇², Lagrange: m_eff θ̈ + ½ m_eff' θ̇² = Q,
    Q = τ₀ − c_m θ̇ − m_rod g Y' − (k(ℓ − ℓ₀) + c ℓ̇) ℓ', ℓ = anchor − x.
    """
    th, thd = y
    s, co = math.sin(th), math.cos(th)
    J_rod = m_rod * L * L / 12
    w = math.sqrt(L * L - r * r * s * s)
    w1 = -r * r * s * co / w
    w2 = -r * r * (co * co - s * s) / w - r**4 * s * s * co * co / w**3
    x1, x2 = -r * s + w1, -r * co + w2
    X1, X2 = 0.5 * (-r * s + x1), 0.5 * (-r * co + x2)
    Y1, Y2 = 0.5 * r * co, -0.5 * r * s
    b1 = -r * co / w
    b2 = r * s / w + r * co * w1 / w**2
    m_eff = J_crank + m_rod * (X1**2 + Y1**2) + J_rod * b1**2 + m_slider * x1**2
    half_dm = m_rod * (X1 * X2 + Y1 * Y2) + J_rod * b1 * b2 + m_slider * x1 * x2
    ell, ell1 = anchor - (r * co + w), -x1
    Q = tau0 - c_motor * thd - m_rod * g * Y1 - (k * (ell - length0) + c * ell1 * thd) * ell1
    return [thd, (Q - half_dm * thd**2) / m_eff]
