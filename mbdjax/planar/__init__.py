"""Planar mechanisms in absolute coordinates (Haug, *Computer-Aided Kinematics and
Dynamics of Mechanical Systems*, ch. 3, 4 and 6).

    >>> from mbdjax.planar import Mechanism
    >>> mech = Mechanism(gravity=(0.0, -9.81))
    >>> mech.body("crank", mass=1.0, inertia=0.01)
    'crank'
    >>> mech.revolute("pin", "ground", (0.0, 0.0), "crank", (0.0, 0.0))
    'pin'
    >>> model = mech.build()   # a mbdjax.Model

See `Mechanism` for the parts (bodies, joints, drivers, force elements), the
coordinate and parameter names, and the sign conventions.
"""

from ._mechanism import Mechanism as Mechanism

__all__ = ["Mechanism"]
