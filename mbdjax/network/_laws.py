"""Energies and contents of nonlinear constitutive laws (THEORY §7).

A nonlinear spring or capacitor is given by its effort law `e(x)` (force of the
deformation, voltage of the charge) and enters the Lagrangian through its energy
`V(x) = ∫₀ˣ e(s) ds`; a nonlinear resistor or damper by its effort law `e(f)` and
enters through its content `D(f) = ∫₀ᶠ e(s) ds` (generalized force `−∂D/∂f = −e(f)`).

`integral_of(law)` returns that integral as a JAX function whose value is a
Gauss–Legendre quadrature (20 nodes: exact for polynomial laws up to degree 39) and
whose derivative is the law itself, exactly (`jax.custom_jvp`): the equations of
motion see `e(x)`, not the quadrature, and second derivatives (for implicit solvers)
are those of the law.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(20)
_S = 0.5 * (_NODES + 1.0)   # nodes on [0, 1]
_W = 0.5 * _WEIGHTS


def _quadrature(law, x, p):
    return x * jnp.sum(jnp.asarray(_W) * jax.vmap(lambda s: law(s * x, p))(jnp.asarray(_S)))


def integral_of(law):
    """`F(x, p) = ∫₀ˣ law(s, p) ds` for a scalar `x` and the params pytree `p`, with
    `∂F/∂x = law(x, p)` exactly (derivatives in `p` are those of the quadrature).

    Example:

        >>> import jax
        >>> from mbdjax.network import integral_of
        >>> F = integral_of(lambda x, p: p["k"] * x ** 3)
        >>> round(float(F(2.0, {"k": 1.0})), 10), float(jax.grad(F)(2.0, {"k": 1.0}))
        (4.0, 8.0)
    """

    @jax.custom_jvp
    def F(x, p):
        return _quadrature(law, x, p)

    @F.defjvp
    def F_jvp(primals, tangents):
        x, p = primals
        dx, dp = tangents
        value, through_p = jax.jvp(lambda pp: _quadrature(law, x, pp), (p,), (dp,))
        return value, law(x, p) * dx + through_p

    return F


# ------------------------------------------------------------ pn junctions
#: Thermal voltage k T / q at 27 °C (300.15 K), SPICE's nominal temperature (V).
THERMAL_VOLTAGE = 1.380649e-23 * 300.15 / 1.602176634e-19


#: Beyond `v = 40 a` the exponential continues as its tangent (currents above e⁴⁰ I_s).
EXP_LIMIT = 40.0


def junction_current(v, I_s, a, gmin):
    """Shockley junction with a parallel conductance: `i = I_s (e^{v/a} − 1) + gmin v`
    (A), `a = n V_T` (V). The conductance `gmin` (S, SPICE's 1e-12 by default) keeps
    the law invertible in reverse bias, where `i → −I_s` alone would be flat.

    Above `v = 40 a` (about 1 V, currents above `e⁴⁰ I_s`: 2 kA for 1e-14 A) the
    exponential continues along its tangent, so the law stays finite and convex at the
    far-off states an integrator's trial stages can visit; circuits that stay below
    that current see Shockley's law exactly (as SPICE, which has no such limit)."""
    x = v / a
    e = jnp.exp(jnp.minimum(x, EXP_LIMIT))
    grow = jnp.where(x > EXP_LIMIT, e * (1.0 + x - EXP_LIMIT), e)
    return I_s * (grow - 1.0) + gmin * v


def _junction_slope(v, I_s, a, gmin):
    return I_s / a * jnp.exp(jnp.minimum(v / a, EXP_LIMIT)) + gmin


@jax.custom_jvp
def junction_voltage(i, I_s, a, gmin):
    """The voltage `v(i)` of `junction_current` (its inverse; current-controlled form).

    `i(v)` is increasing and convex, so Newton's method started above the root
    descends monotonically to it, without overflow. Starting points (upper bounds of
    the root): `min(a ln(1 + i/I_s), (i + I_s)/gmin)` for `i ≥ 0` below the tangent
    continuation, its linear inverse above, `min(0, (i + I_s)/gmin)` for `i < 0`.
    Derivatives (in `i` and in the parameters) by the implicit function theorem:
    `dv = (di − ∂i/∂θ dθ) / i'(v)`."""
    upper = (i + I_s) / gmin
    big = I_s * jnp.exp(EXP_LIMIT)
    positive = jnp.where(i <= big, a * jnp.log1p(jnp.maximum(i, 0.0) / I_s),
                         a * (EXP_LIMIT + (i + I_s - big) / big))
    v0 = jnp.where(i >= 0, jnp.minimum(positive, upper), jnp.minimum(0.0, upper))

    def cond(state):
        v, dv, k = state
        return (jnp.abs(dv) > 1e-14 * (a + jnp.abs(v))) & (k < 200)

    def body(state):
        v, _, k = state
        dv = (junction_current(v, I_s, a, gmin) - i) / _junction_slope(v, I_s, a, gmin)
        return v - dv, dv, k + 1

    v, _, _ = jax.lax.while_loop(cond, body, (v0, jnp.full_like(v0, jnp.inf), 0))
    return v


@junction_voltage.defjvp
def _junction_voltage_jvp(primals, tangents):
    i, I_s, a, gmin = primals
    di, dI_s, da, dgmin = tangents
    v = junction_voltage(i, I_s, a, gmin)
    _, through = jax.jvp(lambda s, b, g: junction_current(v, s, b, g), (I_s, a, gmin), (dI_s, da, dgmin))
    return v, (di - through) / _junction_slope(v, I_s, a, gmin)


def junction_content(i, I_s, a, gmin):
    """Content `D(i) = ∫₀ⁱ v(s) ds = i v − G(v)` of the junction (J/s), with the
    co-content `G(v) = ∫₀ᵛ i(s) ds` (Legendre transform), so `∂D/∂i = v(i)`."""
    v = junction_voltage(i, I_s, a, gmin)
    x = v / a
    e = jnp.exp(jnp.minimum(x, EXP_LIMIT))
    beyond = jnp.maximum(x - EXP_LIMIT, 0.0)
    # ∫ of I_s e^{s/a} up to v, with the tangent continuation past 40 a
    integral = a * (e - 1.0) + a * e * (beyond + 0.5 * beyond * beyond)
    co_content = I_s * (integral - v) + 0.5 * gmin * v * v
    return i * v - co_content
