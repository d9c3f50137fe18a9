"""Greenwood's formulation for a spatial mechanism with his own quasi-velocities.

The formulation itself (the general dynamical equation body by body, partial
velocities by autodiff) is `mbdjax.Greenwood`, which reads the bodies from the model's
body table (`Model.bodies`, recorded by `spatial.Mechanism.build`). Here it is set up
for one mechanism with a definition of `u` in body terms (Greenwood, *Advanced
Dynamics*, §4.4 and examples 4.5–4.7).
"""

from __future__ import annotations

from .._formulation import Greenwood as _Greenwood


def Greenwood(mechanism, definition):  # noqa: N802 - named as the formulation it returns
    """The `mbdjax.Greenwood` formulation over the bodies of `mechanism`, with the
    quasi-velocities `definition`.

    Arguments:
        mechanism: the `mbdjax.spatial.Mechanism` the model was built from.
        definition: `fn(q, qd, t, p) -> (f,)`, the quasi-velocities, affine in q̇
            (as for `QuasiVelocity(definition=...)`); for example body
            angular-velocity components from `mbdjax.spatial.body_poses(mech)`.

    Everything else (state `(q, u)`, `traj.u`, the check of the definition, the
    stabilization options) is that of `mbdjax.QuasiVelocity`.

    Example:

        >>> from mbdjax import models
        >>> qv = models.quasi_velocities(models.heavy_top())
        >>> type(qv).__name__, qv.bodies
        ('Greenwood', ('top',))
    """
    return _Greenwood(definition=definition, bodies=tuple(mechanism.bodies))
