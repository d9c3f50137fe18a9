"""The planar `Mechanism` builder: bodies, joints, drivers and force elements -> Model."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .._builder import MechanismBuilder
from ._compile import compile_mechanism
from ._joints import COORDINATE_AXES, JointSpec
from ._validate import validate

GROUND = "ground"


class Mechanism(MechanismBuilder):
    """Build a planar multibody system in absolute (Cartesian) coordinates.

    Each body other than the built-in `"ground"` gets three coordinates, named
    `"<body>.x"`, `"<body>.y"` (global position of its centroid, m) and `"<body>.phi"`
    (angle of its local x axis from the global x axis, counter-clockwise, rad), in the
    order the bodies are created. Points on bodies are given in the body's local
    frame (m); ground's frame is the global frame. Joints and drivers add holonomic
    constraint rows, force elements add potential, dissipation and applied forces.
    `build()` compiles everything into a `mbdjax.Model` whose parameters are named
    after the parts (`params["crank"]["mass"]`, `params["pin"]["point_i"]`,
    `params["spring"]["k"]`, `params["gravity"]`), and every function reads its
    geometry from those parameters, so a fit can free a link length without
    recompiling.

    Reactions: `model.reaction_fns[joint](q, lam, p) -> (force (2,), torque ())` (and
    `Trajectory.reaction(joint)`) give the joint's reaction **on body_i**, also when
    body_i is ground: with `λ_k` the joint's multipliers, the generalized constraint
    force on body i is `−(∂Φ_k/∂q_i)ᵀ λ_k = (F_x, F_y, n)` (n about the centroid;
    Haug §6.6); the force is reported in global axes and the torque about the joint
    point P on body i, `n_P = n − (A_i s'_P) × F` (about the centroid for `fix` and
    `drive_angle`). The reaction on body_j is the opposite force (and, for a
    revolute, zero torque). Put the body you want reported first.

    Part names share one namespace (bodies, joints, elements), must be non-empty
    strings without `"."`, and may not be `"ground"` or `"gravity"`. Every builder
    method returns the part's name. Problems are collected and reported together
    by `build()` as one `mbdjax.ModelError`.

    Arguments:
        gravity: gravitational acceleration `g`, `(2,)` in m/s² (default
            `(0, −9.81)`); stored as `params["gravity"]`.

    Example:
        >>> import jax.numpy as jnp
        >>> from mbdjax.planar import Mechanism
        >>> mech = Mechanism()
        >>> mech.body("link", mass=1.0, inertia=1.0 / 12)
        'link'
        >>> mech.revolute("pin", "ground", (0.0, 0.0), "link", (-0.5, 0.0))
        'pin'
        >>> model = mech.build()
        >>> model.coordinates
        ('link.x', 'link.y', 'link.phi')
        >>> model.constraint_names
        ('pin.x', 'pin.y')

    References: E. J. Haug, *Computer-Aided Kinematics and Dynamics of Mechanical
    Systems*, ch. 3 (constraints) and §4.4 (force elements), §6.3 (equations of motion).
    """

    def __init__(self, gravity=(0.0, -9.81)):
        super().__init__()
        self._gravity = self._vector("Mechanism: `gravity`", gravity, (2,))
        self._joints: list[JointSpec] = []

    # ---------------------------------------------------------------- bodies
    def body(self, name: str, mass: float, inertia: float) -> str:
        """Add a rigid body.

        Arguments:
            name: the body's name (its coordinates are `"<name>.x"`, `".y"`, `".phi"`).
            mass: mass `m` (kg), ≥ 0; zero gives a massless link.
            inertia: polar moment of inertia `J` about the centroid (kg·m²), ≥ 0.

        The body's mass-matrix block is `diag(m, m, J)`; params `[name]["mass"]`,
        `[name]["inertia"]`.
        """
        label = f"body {name!r}"
        self._bodies.append((name, self._scalar(f"{label}: `mass`", mass),
                             self._scalar(f"{label}: `inertia`", inertia)))
        return name

    # ---------------------------------------------------------------- joints
    def _joint(self, name, kind, body_i, body_j, params, drive=None, coordinates=()):
        self._joints.append(JointSpec(name, kind, body_i, body_j, params, drive, coordinates))
        return name

    def revolute(self, name, body_i, point_i, body_j, point_j) -> str:
        """Pin joint: `r_i + A_i s'_i − r_j − A_j s'_j = 0`, rows `"<name>.x"`, `"<name>.y"`.

        `point_i`, `point_j`: the pin's local coordinates on each body (m). Haug §3.3.1.
        """
        label = f"revolute {name!r}"
        return self._joint(name, "revolute", body_i, body_j, {
            "point_i": self._vector(f"{label}: `point_i`", point_i, (2,)),
            "point_j": self._vector(f"{label}: `point_j`", point_j, (2,)),
        })

    def translational(self, name, body_i, point_i, body_j, point_j, axis_i, angle=0.0) -> str:
        """Prismatic joint: body j slides along `axis_i` of body i without rotating.

        Rows `"<name>.perp"`: `(A_i R v'_i)·d = 0` with `d = r_j + A_j s'_j − r_i − A_i s'_i`
        and `R` the +90° rotation (point Q on j stays on the line through P along
        `v'_i`), and `"<name>.rot"`: `φ_j − φ_i − angle = 0`. `axis_i` is a local
        direction on body i (any nonzero length). Haug §3.3.3.
        """
        label = f"translational {name!r}"
        return self._joint(name, "translational", body_i, body_j, {
            "point_i": self._vector(f"{label}: `point_i`", point_i, (2,)),
            "point_j": self._vector(f"{label}: `point_j`", point_j, (2,)),
            "axis_i": self._vector(f"{label}: `axis_i`", axis_i, (2,)),
            "angle": self._scalar(f"{label}: `angle`", angle),
        })

    def distance(self, name, body_i, point_i, body_j, point_j, length) -> str:
        """Massless rod of fixed `length` (m) > 0 between two points: row `"<name>"`,
        `(dᵀd − length²)/2 = 0`. Haug §3.3.2 (revolute-revolute composite)."""
        label = f"distance {name!r}"
        return self._joint(name, "distance", body_i, body_j, {
            "point_i": self._vector(f"{label}: `point_i`", point_i, (2,)),
            "point_j": self._vector(f"{label}: `point_j`", point_j, (2,)),
            "length": self._scalar(f"{label}: `length`", length),
        })

    def fix(self, name, body, coordinates: Sequence[str] = COORDINATE_AXES, values=None) -> str:
        """Absolute constraints `q_k − value_k = 0` on some of a body's coordinates.

        Arguments:
            coordinates: a subset of `("x", "y", "phi")`; rows `"<name>.x"` etc.
            values: the fixed values (default zeros), stored as `params[name]["values"]`.
        Haug §3.2.
        """
        label = f"fix {name!r}"
        coords = (coordinates,) if isinstance(coordinates, str) else tuple(coordinates)
        vals = np.zeros(len(coords)) if values is None else self._vector(
            f"{label}: `values`", values, (len(coords),))
        return self._joint(name, "fix", body, GROUND, {"values": vals}, coordinates=coords)

    def drive_angle(self, name, body_i, body_j, f: Callable, params=None) -> str:
        """Rotational driver: `φ_j − φ_i − f(t, p) = 0`, row `"<name>"`.

        `f(t, p)` is a JAX function of time and the full params pytree returning a
        scalar angle (rad). `params` (optional dict) adds entries to `p[name]`, for
        example `{"omega": 2π}` read as `p[name]["omega"]`. Haug §3.5.2.
        """
        label = f"drive_angle {name!r}"
        return self._joint(name, "drive_angle", body_i, body_j, self._extra(label, params, ()),
                           drive=self._function(f"{label}: `f`", f))

    def drive_distance(self, name, body_i, point_i, body_j, point_j, f: Callable, params=None) -> str:
        """Distance driver: `(dᵀd − f(t, p)²)/2 = 0`, row `"<name>"` (f in m). Haug §3.5.3."""
        label = f"drive_distance {name!r}"
        base = {
            "point_i": self._vector(f"{label}: `point_i`", point_i, (2,)),
            "point_j": self._vector(f"{label}: `point_j`", point_j, (2,)),
        }
        base.update(self._extra(label, params, base))
        return self._joint(name, "drive_distance", body_i, body_j, base,
                           drive=self._function(f"{label}: `f`", f))

    # -------------------------------------------------------- force elements

    def spring_damper(self, name, body_i, point_i, body_j, point_j, k, c, length0,
                      actuator: Callable | None = None, params=None) -> str:
        """Translational spring-damper-actuator between two points (Haug §4.4.2).

        Tension `f = k(ℓ − ℓ0) + c ℓ̇ + F`, positive `f` pulling the points together;
        `k` (N/m), `c` (N·s/m), free length `length0` (m, ≥ 0). The spring enters as
        the potential `½k(ℓ − ℓ0)²`, the damper as the dissipation `½cℓ̇²`, and the
        optional `actuator(l, ldot, t, p) -> F` (N) as an applied force. Params
        `[name]["point_i"]`, `["point_j"]`, `["k"]`, `["c"]`, `["length0"]` plus `params`.
        """
        return self._spring_damper(name, body_i, point_i, body_j, point_j, k, c, length0, actuator, params, 2)

    def rotational_spring_damper(self, name, body_i, body_j, k, c, angle0,
                                 actuator: Callable | None = None, params=None) -> str:
        """Rotational spring-damper-actuator on `θ = φ_j − φ_i` (Haug §4.4.3).

        `V = ½k(θ − θ0)²` (k in N·m/rad), `D = ½cθ̇²` (c in N·m·s/rad), and an optional
        `actuator(theta, thetadot, t, p) -> τ` (N·m) that resists like the spring: it
        applies `−τ` to body j and `+τ` to body i.
        """
        label = f"rotational_spring_damper {name!r}"
        base = {
            "k": self._scalar(f"{label}: `k`", k),
            "c": self._scalar(f"{label}: `c`", c),
            "angle0": self._scalar(f"{label}: `angle0`", angle0),
        }
        return self._element(label, name, "rotational_spring_damper", body_i, body_j, base, params,
                             self._function(f"{label}: `actuator`", actuator, required=False))

    def force(self, name, body, point, f: Callable, params=None) -> str:
        """Applied force `f(q, qd, t, p) -> (2,)` (N, global axes) at a local `point` of `body`.

        `q`, `qd` are the full coordinate vectors; pick entries with a static index,
        e.g. `i = mech.index("crank.phi")` (or `model.index(...)`, the same position)
        then `qd[i]`. Params `[name]["point"]` plus `params`.
        """
        return self._applied(name, "force", body, point, f, params, 2)

    def torque(self, name, body, f: Callable, params=None) -> str:
        """Applied torque `f(q, qd, t, p) -> ()` (N·m, counter-clockwise) on `body`.

        `q`, `qd` are the full coordinate vectors (see `index`).
        """
        return self._applied(name, "torque", body, None, f, params, 2)

    # ---------------------------------------------------------------- queries
    @property
    def coordinates(self) -> tuple[str, ...]:
        """`("<body>.x", "<body>.y", "<body>.phi", ...)` for the bodies added so far."""
        return tuple(f"{b}.{a}" for b in self.bodies for a in COORDINATE_AXES)

    @property
    def joints(self) -> tuple[str, ...]:
        """Names of the joints and drivers, in definition (row) order."""
        return tuple(j.name for j in self._joints)


    # ------------------------------------------------------------------ build
    def build(self, validate_at=None):
        """Compile the mechanism into a `mbdjax.Model`.

        The Model has `mass_diagonal` (`[m, m, J]` per body), `potential` (gravity and
        springs), `dissipation` (dampers, when any), `forces` (actuators and applied
        forces, None when there are none), `holonomic` with a structured
        `holonomic_jacobian` (per-joint blocks scattered into `(m_h, n)`), the
        `reactions` of every joint and `metadata["front_end"] == "planar"`.

        Arguments:
            validate_at: optional configuration `(n,)` at which the Model checks its
                functions (default: a generic point).

        Raises:
            ModelError: listing every problem found in the description.
        """
        return self._build(validate(self), compile_mechanism, validate_at)
