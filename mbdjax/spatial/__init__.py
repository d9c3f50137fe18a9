"""Spatial rigid bodies (THEORY §6): rotation utilities and the `Mechanism` builder.

Orientation by 3-1-3 Euler angles (Greenwood's type II) or Euler parameters; spatial
joints, rolling contact on a plane, force elements; `Mechanism.build()` returns a
`mbdjax.Model` whose kinetic energy comes from the body velocities. `Greenwood`
is the quasi-velocity formulation written body by body (partial velocities γ, β).
"""

from ._compile import body_poses as body_poses, contact_kinematics as contact_kinematics
from ._greenwood import Greenwood as Greenwood
from ._joints import perpendicular_pair as perpendicular_pair
from ._mechanism import Mechanism as Mechanism
from ._rotations import (
    angular_velocity as angular_velocity,
    euler313_from_matrix as euler313_from_matrix,
    euler313_from_quaternion as euler313_from_quaternion,
    euler313_matrix as euler313_matrix,
    euler313_rate_matrix as euler313_rate_matrix,
    euler313_rates as euler313_rates,
    quaternion_from_euler313 as quaternion_from_euler313,
    quaternion_from_matrix as quaternion_from_matrix,
    quaternion_matrix as quaternion_matrix,
    quaternion_rate_matrix as quaternion_rate_matrix,
    quaternion_rates as quaternion_rates,
    rotation_x as rotation_x,
    rotation_z as rotation_z,
    skew as skew,
)

__all__ = [
    "Greenwood", "Mechanism", "angular_velocity", "body_poses", "contact_kinematics", "euler313_from_matrix",
    "euler313_from_quaternion", "euler313_matrix", "euler313_rate_matrix", "euler313_rates",
    "perpendicular_pair", "quaternion_from_euler313", "quaternion_from_matrix", "quaternion_matrix",
    "quaternion_rate_matrix", "quaternion_rates", "rotation_x", "rotation_z", "skew",
]
