"""The spatial `Mechanism` builder: rigid bodies, joints, rolling contacts, force
elements -> Model."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._builder import MechanismBuilder
from ._bodies import ORIENTATIONS, POSITION
from ._compile import compile_mechanism
from ._contact import ContactSpec
from ._joints import JointSpec
from ._validate import validate

_PLANE = ((0.0, 0.0, 0.0), (0.0, 0.0, 1.0))


class Mechanism(MechanismBuilder):
    """Build a spatial multibody system in absolute coordinates.

    Each body other than the built-in `"ground"` gets the coordinates
    `"<body>.x"`, `".y"`, `".z"` (global position of its mass centre, m) followed by
    its orientation: 3-1-3 Euler angles `".phi"`, `".theta"`, `".psi"`
    (`R = R_z(φ) R_x(θ) R_z(ψ)`, Greenwood's type II; singular where sin θ = 0) or
    Euler parameters `".e0"` … `".e3"` (a unit quaternion; the normalization
    `½(eᵀe − 1) = 0` is added as the holonomic row `"<body>.norm"`). Points and
    directions on a body are given in its body axes (through the mass centre);
    ground's axes are the global ones.

    The kinetic energy `Σ ½ m v·v + ½ ω'ᵀ J ω'` is written from the body velocities
    and the Model derives the mass matrix and the velocity terms by autodiff
    (THEORY §2). With Euler parameters that mass matrix is singular (the direction
    `ė ∥ e` carries no energy), positive on the constraint null space.

    Parameters are named after the parts (`params["disk"]["mass"]`,
    `params["disk"]["inertia"]` (3, 3), `params["pin"]["point_i"]`,
    `params["contact"]["radius"]`, `params["gravity"]` (3,)), so any number can be
    fitted without recompiling. Part names share one namespace, must be non-empty
    strings without `"."`, and may not be `"ground"` or `"gravity"`; every builder
    method returns the part's name, and `build()` reports all problems together as
    one `mbdjax.ModelError`.

    Arguments:
        gravity: gravitational acceleration `(3,)` (m/s², default `(0, 0, −9.81)`).

    Example (a spherical pendulum: a point-like bob on a 1 m rod):
        >>> from mbdjax.spatial import Mechanism
        >>> mech = Mechanism()
        >>> mech.body("bob", mass=1.0, inertia=(1e-3, 1e-3, 1e-3), orientation="quaternion")
        'bob'
        >>> mech.spherical("pivot", "ground", (0, 0, 0), "bob", (0, 0, 1.0))
        'pivot'
        >>> model = mech.build()
        >>> model.coordinates[:4], model.constraint_names
        (('bob.x', 'bob.y', 'bob.z', 'bob.e0'), ('bob.norm', 'pivot.x', 'pivot.y', 'pivot.z'))

    References: E. J. Haug, *Computer-Aided Kinematics and Dynamics of Mechanical
    Systems*, ch. 9–11; D. T. Greenwood, *Advanced Dynamics*, ch. 4 and 7.
    """

    def __init__(self, gravity=(0.0, 0.0, -9.81)):
        super().__init__()
        self._gravity = self._vector("Mechanism: `gravity`", gravity, (3,))
        self._joints: list[JointSpec] = []
        self._contacts: list[ContactSpec] = []

    # ---------------------------------------------------------------- bodies
    def body(self, name: str, mass: float, inertia, orientation: str = "euler313") -> str:
        """Add a rigid body.

        Arguments:
            name: the body's name (its coordinates are `"<name>.x"` …).
            mass: mass (kg), ≥ 0.
            inertia: inertia tensor about the mass centre in body axes (kg·m²), a
                symmetric positive semi-definite `(3, 3)`, or a 3-vector of principal
                moments.
            orientation: `"euler313"` (φ, θ, ψ) or `"quaternion"` (e0 … e3).

        Params `[name]["mass"]`, `[name]["inertia"]` (3, 3).
        """
        label = f"body {name!r}"
        J = np.asarray(inertia, dtype=float) if _numeric(inertia) else None
        if J is not None and J.shape == (3,):
            J = np.diag(J)
        J = self._vector(f"{label}: `inertia`", J if J is not None else inertia, (3, 3))
        if orientation not in ORIENTATIONS:
            self._problems.append(
                f"{label}: orientation {orientation!r} is not one of {sorted(ORIENTATIONS)}; use "
                "'euler313' (3-1-3 Euler angles) or 'quaternion' (Euler parameters)."
            )
            orientation = "euler313"
        self._bodies.append((name, self._scalar(f"{label}: `mass`", mass), J, orientation))
        return name

    # ---------------------------------------------------------------- joints
    def _joint(self, name, kind, body_i, body_j, **numbers):
        label = f"{kind} {name!r}"
        shapes = {"point_i": (3,), "point_j": (3,), "axis_i": (3,), "axis_j": (3,), "rotation": (3, 3)}
        prm = {k: self._vector(f"{label}: `{k}`", v, shapes[k]) for k, v in numbers.items()}
        self._joints.append(JointSpec(name, kind, body_i, body_j, prm))
        return name

    def spherical(self, name, body_i, point_i, body_j, point_j) -> str:
        """Ball joint: `P_i = P_j`, rows `"<name>.x"`, `".y"`, `".z"` (Haug §9.3.1)."""
        return self._joint(name, "spherical", body_i, body_j, point_i=point_i, point_j=point_j)

    def revolute(self, name, body_i, point_i, axis_i, body_j, point_j, axis_j) -> str:
        """Hinge: spherical at the points, and `axis_j` of body j stays along `axis_i`
        of body i (rows `".x"`, `".y"`, `".z"`, `".axis1"`, `".axis2"`; Haug §9.3.3)."""
        return self._joint(name, "revolute", body_i, body_j, point_i=point_i, point_j=point_j,
                           axis_i=axis_i, axis_j=axis_j)

    def universal(self, name, body_i, point_i, axis_i, body_j, point_j, axis_j) -> str:
        """Hooke joint: spherical at the points, and the two cross axes stay
        perpendicular, `(R_i a'_i)·(R_j a'_j) = 0` (row `".cross"`; Haug §9.3.2)."""
        return self._joint(name, "universal", body_i, body_j, point_i=point_i, point_j=point_j,
                           axis_i=axis_i, axis_j=axis_j)

    def cylindrical(self, name, body_i, point_i, axis_i, body_j, point_j, axis_j) -> str:
        """Axes aligned and the point of j on the axis of i through the point of i:
        free rotation about and translation along the axis (rows `".axis1"`,
        `".axis2"`, `".offset1"`, `".offset2"`; Haug §9.3.4)."""
        return self._joint(name, "cylindrical", body_i, body_j, point_i=point_i, point_j=point_j,
                           axis_i=axis_i, axis_j=axis_j)

    def prismatic(self, name, body_i, point_i, axis_i, body_j, point_j, axis_j) -> str:
        """Cylindrical joint with the rotation about the axis locked (row `".twist"`:
        `f'_i` of body i stays perpendicular to `g'_j` of body j, the perpendicular
        pairs of the two axes); translation along the axis only (Haug §9.3.5)."""
        return self._joint(name, "prismatic", body_i, body_j, point_i=point_i, point_j=point_j,
                           axis_i=axis_i, axis_j=axis_j)

    def fixed(self, name, body_i, point_i, body_j, point_j, rotation=None) -> str:
        """Weld: `P_i = P_j` and `R_j = R_i C` (`rotation` C, default identity; rows
        `".x"`, `".y"`, `".z"`, `".rx"`, `".ry"`, `".rz"`)."""
        C = np.eye(3) if rotation is None else rotation
        return self._joint(name, "fixed", body_i, body_j, point_i=point_i, point_j=point_j, rotation=C)

    # ------------------------------------------------------------ contacts
    def _plane(self, label, plane):
        try:
            point, normal = plane
        except (TypeError, ValueError):
            self._problems.append(f"{label}: `plane` must be (point, normal), two 3-vectors; got {plane!r}.")
            point, normal = _PLANE
        normal = self._vector(f"{label}: plane normal", normal, (3,))
        if not np.linalg.norm(normal) > 0:
            self._problems.append(f"{label}: the plane normal is zero; give the direction pointing to the body.")
            normal = np.array(_PLANE[1])
        return {"plane_point": self._vector(f"{label}: plane point", point, (3,)), "plane_normal": normal}

    def rolling_disk(self, name, body, radius, plane=_PLANE, axis=(0.0, 0.0, 1.0)) -> str:
        """Thin disk rolling without slip on a fixed plane (Greenwood §4.6).

        Arguments:
            body: the disk body (its mass centre is the disk centre).
            radius: disk radius (m) > 0.
            plane: `(point, normal)` of the fixed plane, the normal pointing to the
                disk's side (default the ground plane z = 0, normal +z).
            axis: the disk's symmetry axis in body axes (default body z).

        Rows: holonomic `"<name>.height"` (lowest rim point on the plane),
        nonholonomic `"<name>.slip1"`, `"<name>.slip2"` (no slip). Params
        `[name]["radius"]`, `["plane_point"]`, `["plane_normal"]`, `["axis"]`.
        """
        label = f"rolling_disk {name!r}"
        prm = {"radius": self._scalar(f"{label}: `radius`", radius), **self._plane(label, plane),
               "axis": self._vector(f"{label}: `axis`", axis, (3,))}
        self._contacts.append(ContactSpec(name, "rolling_disk", body, prm))
        return name

    def rolling_sphere(self, name, body, radius, plane=_PLANE, centre=(0.0, 0.0, 0.0)) -> str:
        """A spherical surface of the body rolling without slip on a fixed plane.

        Arguments:
            body: the rolling body.
            radius: sphere radius (m) > 0.
            plane: `(point, normal)` as for `rolling_disk`.
            centre: the sphere's centre in body axes (default the mass centre: a
                ball); off the mass centre for a body with a spherical base, such as
                Greenwood's top with a hemispherical base (§4.7).

        Rows as for `rolling_disk`. Params `[name]["radius"]`, `["plane_point"]`,
        `["plane_normal"]`, `["centre"]`.
        """
        label = f"rolling_sphere {name!r}"
        prm = {"radius": self._scalar(f"{label}: `radius`", radius), **self._plane(label, plane),
               "centre": self._vector(f"{label}: `centre`", centre, (3,))}
        self._contacts.append(ContactSpec(name, "rolling_sphere", body, prm))
        return name

    # -------------------------------------------------------- force elements

    def spring_damper(self, name, body_i, point_i, body_j, point_j, k, c, length0,
                      actuator: Callable | None = None, params=None) -> str:
        """Spring-damper-actuator between two body points.

        Tension `k(ℓ − ℓ₀) + c ℓ̇ + F`, positive pulling the points together; the spring
        enters as `½k(ℓ − ℓ₀)²`, the damper as the content `½cℓ̇²`, and the optional
        `actuator(l, ldot, t, p) -> F` (N) as an applied force. Params `[name]`:
        `point_i`, `point_j`, `k`, `c`, `length0`, plus `params`.
        """
        return self._spring_damper(name, body_i, point_i, body_j, point_j, k, c, length0, actuator, params, 3)

    def force(self, name, body, point, f: Callable, params=None) -> str:
        """Applied force `f(q, qd, t, p) -> (3,)` (N, global axes) at the body point
        `point`; params `[name]["point"]` plus `params`."""
        return self._applied(name, "force", body, point, f, params, 3)

    def torque(self, name, body, f: Callable, params=None) -> str:
        """Applied torque `f(q, qd, t, p) -> (3,)` (N·m, global axes) on `body`."""
        return self._applied(name, "torque", body, None, f, params, 3)

    # ---------------------------------------------------------------- queries
    @property
    def coordinates(self) -> tuple[str, ...]:
        """The coordinate names of the bodies added so far, in order."""
        return tuple(f"{b[0]}.{c}" for b in self._bodies for c in POSITION + ORIENTATIONS[b[3]])


    # ------------------------------------------------------------------ build
    def build(self, validate_at=None):
        """Compile the mechanism into a `mbdjax.Model` (`kinetic_energy`, `potential`,
        optional `dissipation` and `forces`, holonomic rows of the joints, quaternion
        normalizations and contact heights, nonholonomic no-slip rows,
        `metadata["front_end"] == "spatial"`).

        Arguments:
            validate_at: configuration `(n,)` at which the Model checks its functions
                (default: every body at a generic position and orientation).

        Raises:
            ModelError: listing every problem found in the description.
        """
        return self._build(validate(self), compile_mechanism, validate_at)


def _numeric(x):
    try:
        np.asarray(x, dtype=float)
        return True
    except (TypeError, ValueError):
        return False



