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
    `∂F/∂x = law(x, p)` exactly (derivatives in `p` are those of the quadrature)."""

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
