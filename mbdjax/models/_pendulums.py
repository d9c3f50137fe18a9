"""Pendulums of uniform rods: the double pendulum and the N-link chain (benchmark).

Each link is a uniform rod of length 1 m and mass 1 kg along its local x axis
(inertia 1/12 kg·m² about the centroid), pinned at local (−0.5, 0) to the previous
link's (0.5, 0) or to the ground origin. Bodies "link1", "link2", ...; joints
"pin1", "pin2", ... (pin k joins link k−1, or ground, as body_i to link k as body_j).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from .._errors import ModelError
from ..planar import Mechanism
from ._example import Example


def _chain(n_links):
    mech = Mechanism(gravity=(0.0, -9.81))
    for k in range(1, n_links + 1):
        mech.body(f"link{k}", mass=1.0, inertia=1.0 / 12.0)
    for k in range(1, n_links + 1):
        if k == 1:
            mech.revolute("pin1", "ground", (0.0, 0.0), "link1", (-0.5, 0.0))
        else:
            mech.revolute(f"pin{k}", f"link{k - 1}", (0.5, 0.0), f"link{k}", (-0.5, 0.0))
    return mech


def chain_configuration(angles):
    """Assembled `q` of a chain of unit rods with absolute angles `angles` (closed form)."""
    q, tip = [], np.zeros(2)
    for phi in angles:
        u = np.array([math.cos(phi), math.sin(phi)])
        q.extend([*(tip + 0.5 * u), phi])
        tip = tip + u
    return jnp.asarray(np.array(q))


def double_pendulum() -> Example:
    """Double pendulum of two uniform 1 m, 1 kg rods in absolute coordinates.

    Released from rest with link1 at φ1 = −π/4 (45° below the +x axis) and link2
    horizontal, φ2 = 0; gravity (0, −9.81) m/s²; t1 = 10 s (chaotic).

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models
        >>> ex = models.double_pendulum()
        >>> ex.model.n, mbd.check(ex.model, ex.q0).dof
        (6, 2)
    """
    mech = _chain(2)
    model = mech.build()
    q0 = chain_configuration([-math.pi / 4, 0.0])
    return Example("double-pendulum", "Double pendulum of uniform 1 m, 1 kg rods released from rest "
                   "at φ = (−π/4, 0).", model, q0, jnp.zeros(model.n), 10.0, mech)


def pendulum_chain(n_links: int = 5) -> Example:
    """Chain of `n_links` uniform 1 m, 1 kg rods pinned end to end from the ground origin,
    released from rest straight along +x (all φ = 0); t1 = 10 s.

    n = 3·n_links coordinates, m = 2·n_links revolute rows, n_links degrees of freedom.
    The benchmark system (N = 10 and 20).

    Example:

        >>> import mbdjax as mbd
        >>> from mbdjax import models
        >>> ex = models.pendulum_chain(3)
        >>> ex.model.n, mbd.check(ex.model, ex.q0).dof
        (9, 3)
    """
    if not isinstance(n_links, (int, np.integer)) or n_links < 1:
        raise ModelError(f"pendulum_chain: n_links must be a positive integer, got {n_links!r}.")
    mech = _chain(int(n_links))
    model = mech.build()
    q0 = chain_configuration([0.0] * int(n_links))
    return Example("pendulum-chain", f"Chain of {n_links} uniform 1 m, 1 kg rods released horizontal.",
                   model, q0, jnp.zeros(model.n), 10.0, mech)
