"""What every front-end builder shares: checked conversion of user input, problems
collected and reported together at `build()`, and part-name rules."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._errors import ModelError
from ._model import call_advice, first_line


def name_problems(label, name, reserved=("ground", "gravity")):
    """Problems with a part name: empty, reserved, or containing the separator `"."`."""
    if not isinstance(name, str) or not name:
        return [f"{label}: every part needs a non-empty string name, got {name!r}; give it one."]
    out = []
    if name in reserved:
        if label == "body":
            out.append(f"body {name!r}: the name is reserved (ground is built in and fixed at the "
                       "origin; refer to it as 'ground' in joints); choose another name.")
        else:
            out.append(f"{label} {name!r}: the name is reserved; choose another name.")
    if "." in name:
        out.append(f"{label} {name!r}: names may not contain '.' (it separates a part from its "
                   "coordinate or parameter, as in 'crank.phi'); rename it, e.g. with '_'.")
    return out


def unique_name_problems(parts):
    """Problems for `[(label, name), ...]`: each name valid and used once (one namespace)."""
    problems, seen = [], {}
    for label, name in parts:
        problems.extend(name_problems(label, name))
        if isinstance(name, str) and name:
            if name in seen:
                problems.append(
                    f"{label} {name!r}: the name is already used by a {seen[name]}; bodies, joints "
                    "and force elements share one namespace, so give each a unique name."
                )
            else:
                seen[name] = label
    return problems


class Builder:
    """Collects problems while a description is assembled; `build()` raises them at once."""

    def __init__(self):
        self._problems: list[str] = []

    def _build(self, problems, compile_model, *args):
        """The Model of this description, `compile_model(self, *args)`, once `problems`
        (every problem the front end's checks found in it) is empty; otherwise a
        `ModelError` listing them all. Every front end's `build` is this call with its
        own checks and compiler."""
        if problems:
            raise ModelError(problems)
        return compile_model(self, *args)

    def _vector(self, label, value, shape):
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            self._problems.append(f"{label} must be numbers of shape {shape}, got {value!r}.")
            return np.zeros(shape)
        if arr.shape != shape:
            self._problems.append(f"{label} must have shape {shape}, got shape {arr.shape} ({value!r}).")
            return np.zeros(shape)
        if not np.all(np.isfinite(arr)):
            self._problems.append(f"{label} must be finite, got {value!r}.")
            return np.zeros(shape)
        return arr

    def _scalar(self, label, value):
        return self._vector(label, value, ())

    def _function(self, label, fn, required=True):
        if fn is None and not required:
            return None
        if not callable(fn):
            self._problems.append(f"{label} must be a function, got {type(fn).__name__}.")
            return None
        return fn

    def _extra(self, label, params, builtin):
        if params is None:
            return {}
        if not isinstance(params, dict):
            self._problems.append(f"{label}: `params` must be a dict of numbers, got {type(params).__name__}.")
            return {}
        clash = sorted(set(params) & set(builtin))
        if clash:
            self._problems.append(
                f"{label}: extra `params` keys {clash} clash with the built-in parameters; rename them."
            )
        out = {}
        for key, value in params.items():
            try:
                out[key] = np.asarray(value, dtype=float)
            except (TypeError, ValueError):
                self._problems.append(f"{label}: extra parameter {key!r} must be numeric, got {value!r}.")
        return out


def call_problem(label, fn, args, shape, unit):
    """Trace a user function once, as the simulation will (abstract values, so Python
    control flow on a traced value is caught here, under the function's own name); a
    problem string (raised, or the wrong shape) or None."""
    try:
        out = jax.eval_shape(lambda *a: jnp.asarray(fn(*a), dtype=float), *args)
    except Exception as err:  # noqa: BLE001 - reported with context
        return f"{label} raised {type(err).__name__}: {first_line(err)}{call_advice(err, args[-1])}"
    if out.shape != shape:
        return f"{label} returned shape {out.shape}; it must return {unit} of shape {shape}."
    return None


@dataclasses.dataclass(frozen=True)
class ElementSpec:
    """One force element of a mechanism as the user described it (validated at build):
    kind, the bodies it acts on (`body_j` None for applied forces and torques), its
    numbers (`params[name]`) and the user function (actuator, force or torque law)."""

    name: str
    kind: str
    body_i: Any
    body_j: Any
    params: dict
    fn: Callable | None = None


class MechanismBuilder(Builder):
    """What the planar and spatial `Mechanism` builders share: bodies, force elements
    and coordinate lookup (subclasses define `coordinates`)."""

    def __init__(self):
        super().__init__()
        self._bodies: list[tuple] = []
        self._elements: list[ElementSpec] = []

    def _element(self, label, name, kind, body_i, body_j, base, extra, fn):
        """Record a force element: built-in params `base`, user params `extra` merged in."""
        params = dict(base)
        params.update(self._extra(label, extra, base))
        self._elements.append(ElementSpec(name, kind, body_i, body_j, params, fn))
        return name

    def _spring_damper(self, name, body_i, point_i, body_j, point_j, k, c, length0, actuator, params, dim):
        """Record a spring-damper-actuator between two body points of dimension `dim`."""
        label = f"spring_damper {name!r}"
        base = {
            "point_i": self._vector(f"{label}: `point_i`", point_i, (dim,)),
            "point_j": self._vector(f"{label}: `point_j`", point_j, (dim,)),
            "k": self._scalar(f"{label}: `k`", k),
            "c": self._scalar(f"{label}: `c`", c),
            "length0": self._scalar(f"{label}: `length0`", length0),
        }
        return self._element(label, name, "spring_damper", body_i, body_j, base, params,
                             self._function(f"{label}: `actuator`", actuator, required=False))

    def _applied(self, name, kind, body, point, f, params, dim):
        """Record an applied force at a body point (`kind="force"`, point of dimension
        `dim`) or an applied torque (`kind="torque"`, `point` None)."""
        label = f"{kind} {name!r}"
        base = {} if point is None else {"point": self._vector(f"{label}: `point`", point, (dim,))}
        return self._element(label, name, kind, body, None, base, params, self._function(f"{label}: `f`", f))

    @property
    def bodies(self) -> tuple[str, ...]:
        """Names of the moving bodies, in coordinate order (ground excluded)."""
        return tuple(b[0] for b in self._bodies)

    @property
    def elements(self) -> tuple[str, ...]:
        """Names of the force elements."""
        return tuple(e.name for e in self._elements)

    def index(self, name: str) -> int:
        """Position of the coordinate `name` (e.g. `"crank.phi"`) in `q`."""
        coords = self.coordinates
        if name not in coords:
            raise ModelError(f"Mechanism: no coordinate named {name!r}; the coordinates are {list(coords)}.")
        return coords.index(name)


def spring_damper_bounds(name):
    """`Model(param_bounds=)` entries of a translational spring-damper `name`: its
    stiffness, damping and free length are >= 0."""
    return {f"{name}.k": ("nonnegative", f"stiffness of {name!r}, N/m"),
            f"{name}.c": ("nonnegative", f"damping of {name!r}, N·s/m"),
            f"{name}.length0": ("nonnegative", f"free length of {name!r}, m")}
