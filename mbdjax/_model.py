"""The constrained Lagrangian model: the one description every front end compiles into.

References: THEORY.md §1–2; Haug, *Computer-Aided Kinematics and Dynamics of
Mechanical Systems*, §6.3.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import _dynamics as dyn
from . import _kinematics as kin
from ._errors import ModelError
from ._params import bound_problems, flatten_params
from ._numerics.sparse import JacobianPattern
from ._tracing import concrete_evaluation, device_array, one_shot_jit

_INERTIA_KINDS = ("mass_matrix", "kinetic_energy", "mass_diagonal")


def _as_float_tree(tree):
    return jax.tree_util.tree_map(device_array, tree)


def _params_tree(params):
    """The default parameter pytree with float leaves; a leaf that is not a number (a
    string, None, an object) is a `ModelError` naming it."""
    if params is None:
        return {}
    bad = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(params, is_leaf=lambda x: x is None)[0]:
        try:
            if leaf is None or isinstance(leaf, (str, bytes)):
                raise TypeError
            np.asarray(leaf, dtype=float)
        except (TypeError, ValueError):
            bad.append(f"{jax.tree_util.keystr(path)} = {leaf!r}")
    if bad:
        raise ModelError(f"Model: params must hold numbers (scalars or arrays); not a number: {', '.join(bad)}.")
    return _as_float_tree(params)


#: the admissible values a parameter can be declared to have (`Model(param_bounds=)`)
BOUND_KINDS = ("positive", "nonnegative", "nonzero", "psd")


def _bounds(param_bounds, params):
    """`((name, kind, what), ...)` from `{dotted name: kind or (kind, what)}`, checked
    against the parameter names and `BOUND_KINDS`."""
    if not param_bounds:
        return ()
    names = flatten_params(params)
    out, problems = [], []
    for name, spec in param_bounds.items():
        kind, what = (spec, name) if isinstance(spec, str) else tuple(spec)
        if name not in names:
            problems.append(f"Model: `param_bounds` names {name!r}, which is not a parameter; the parameters are "
                            f"{sorted(names)}.")
        elif kind not in BOUND_KINDS:
            problems.append(f"Model: `param_bounds[{name!r}]` is {kind!r}; use one of {list(BOUND_KINDS)}.")
        else:
            out.append((name, kind, str(what)))
    if problems:
        raise ModelError(problems)
    return tuple(sorted(out))


def first_line(err):
    """The first line of an exception's message (JAX's tracer errors run to a page)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else ""


def call_advice(err, params):
    """What to do about the usual exceptions a model function raises while traced."""
    if isinstance(err, KeyError) and isinstance(params, dict):
        return (f" (the function reads a parameter the model does not declare; its parameters are "
                f"{sorted(params)}: add it to params=)")
    if type(err).__name__ in ("TracerBoolConversionError", "ConcretizationTypeError",
                              "TracerIntegerConversionError"):
        return (" (the function branches in Python on a traced value: use jnp.where or jax.lax.cond instead of "
                "`if`, and jnp functions instead of math/float())")
    return ""


def sample_point(n: int, scale: float = 0.1, phase: float = 0.0) -> jnp.ndarray:
    """A deterministic, generic point of R^n (no coincidences, no zeros).

    Used to evaluate user functions once at construction, where `q = 0` could hit a
    singularity (two coincident points, a zero-length spring) that the real motion
    never visits.
    """
    k = np.arange(1, n + 1, dtype=float)
    return device_array(scale * np.sin(1.3 * k + 0.7 + phase) + 0.05 * k / n)


class Model(eqx.Module):
    """A constrained mechanical (or multi-domain) system in generalized coordinates.

    Equations of motion (THEORY §2, Routh's equations with multipliers):

        M(q) q̈ + Bᵀ λ = Q(q, q̇, t),    B q̈ = g,

    with `B = [Φ_q; A]` stacking the holonomic Jacobian and the nonholonomic
    coefficients. All user functions are pure JAX functions of arrays and the
    parameter pytree `p`.

    Inertia is given in exactly one of three ways:

    - `mass_matrix(q, t, p) -> (n, n)`: the textbook DAE form. `forces` must then
      contain *every* velocity-dependent inertial term (quadratic-velocity vector),
      as in Haug's planar equations.
    - `kinetic_energy(q, qd, t, p) -> ()`: Lagrangian modelling. `M = ∂²T/∂q̇²` and the
      terms `∂T/∂q − (∂²T/∂q̇∂q) q̇ − ∂²T/∂q̇∂t` are derived by autodiff and added to Q.
    - `mass_diagonal(p) -> (n,)`: a constant diagonal mass matrix (planar bodies in
      Cartesian coordinates). Enables the Schur-complement solve.

    Arguments:
        coordinates: names of the `n` generalized coordinates.
        forces: `Q^A(q, qd, t, p) -> (n,)`, applied generalized forces.
        potential: `V(q, t, p) -> ()`; enters as `−∂V/∂q`.
        dissipation: Rayleigh content `D(q, qd, t, p) -> ()`; enters as `−∂D/∂q̇`.
        holonomic: `Φ(q, t, p) -> (m_h,)`, kinematic and driving constraints.
        holonomic_jacobian: optional `Φ_q(q, t, p) -> (m_h, n)`; when omitted it is
            `jax.jacfwd` of `holonomic` (front ends pass a structured one).
        jacobian_pattern, holonomic_jacobian_values: optional sparse form of `Φ_q`:
            a `JacobianPattern` (or `(rows, cols)`) of its structural nonzeros and
            `fn(q, t, p) -> (nnz,)` their values in that order. With a constant
            diagonal mass matrix the augmented formulation then forms `B M⁻¹ Bᵀ` from
            the nonzeros alone.
        constraint_names: names of the `m_h` holonomic rows (default `"phi[k]"`).
        nonholonomic: `C(q, qd, t, p) = A(q,t) q̇ + a(q,t) -> (m_n,)`, affine in q̇.
        nonholonomic_names: names of the `m_n` nonholonomic rows.
        params: default parameter pytree (leaves converted to float arrays).
        reactions: optional `{joint: fn(q, lam, p) -> (force, torque)}` used by
            `Trajectory.reaction`; front ends provide it.
        param_bounds: optional `{dotted parameter name: kind or (kind, what)}` with
            kind one of `"positive"`, `"nonnegative"`, `"nonzero"`, `"psd"`
            (symmetric positive semi-definite matrix) and `what` a description
            ("mass of body 'rod' (kg)"); `simulate`, `check` and the other entry points
            refuse parameter values outside them, naming the parameter. The front ends
            declare their masses, inertias, stiffnesses, resistances, capacitances, ...
        singularity: optional `fn(q) -> (k,)` signed margins, zero (and changing
            sign) where the coordinates themselves are singular (3-1-3 Euler angles:
            sin θ, the rates are not determined at θ = 0, π); `check` reports them,
            `simulate` refuses to start where a margin is below `singularity_tol`
            (default 1e-3) in magnitude, and stops with an error at the first step
            that comes that close or steps across a zero. `singularity_names` label the margins and
            `singularity_advice` says what to do instead (front ends set all three).
        metadata: optional description of the model for its users (the front ends
            record `"front_end"`, their bodies, joints and elements); the library
            reads none of it.
        switching: the model's discrete modes (`mbdjax._switching.Switching`: exact
            stick–slip friction), or None.
        network: the multi-domain network part of a model built by
            `mbdjax.network.Network.build` (`mbdjax.network.NetworkPart`: its nodes,
            elements and ports, read by `Trajectory.effort`, `flow`,
            `element_power` and `power_balance`), or None.
        contacts: the rolling contacts of a spatial model (`mbdjax.spatial.Contacts`:
            each contact point and its velocity, read by
            `mbdjax.plotting.plot_contact_path`), or None.
        bodies: the rigid bodies of a spatial model (`mbdjax.spatial.RigidBodies`:
            each body's pose and velocities from `(q, q̇)`, its mass and inertia
            tensor from the parameters, read by the `Greenwood` formulation), or None.
        scene: the shape of a planar or spatial mechanism as its front end knows it
            (`mbdjax._scene.Scene`: bodies, body frames from `q`, joints, force elements,
            contacts), read by `mbdjax.plotting.animate` and `viewer`, or None.
        structure_problems: problems of the model's structure that its front end
            found (a floating network node, a loop of effort sources), reported by
            `check`.
        coordinate_units: optional unit of each coordinate (`"m"`, `"rad"`, `"C"`,
            None where unknown), for axis labels; the front ends set it.
        validate_at: a configuration at which to evaluate every function once for
            shape and finiteness checks (default: a generic point).

    Raises:
        ModelError: listing every problem found (missing or conflicting inertia,
            wrong shapes, non-finite values, duplicate names, non-affine C).

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> pend.n, pend.m, pend.row_names
        (2, 1, ('rod',))
    """

    coordinates: tuple[str, ...] = eqx.field(static=True)
    constraint_names: tuple[str, ...] = eqx.field(static=True)
    nonholonomic_names: tuple[str, ...] = eqx.field(static=True)
    inertia_kind: str = eqx.field(static=True)
    params: Any
    mass_matrix_fn: Callable | None = eqx.field(static=True, default=None)
    kinetic_energy_fn: Callable | None = eqx.field(static=True, default=None)
    mass_diagonal_fn: Callable | None = eqx.field(static=True, default=None)
    forces_fn: Callable | None = eqx.field(static=True, default=None)
    potential_fn: Callable | None = eqx.field(static=True, default=None)
    dissipation_fn: Callable | None = eqx.field(static=True, default=None)
    holonomic_fn: Callable | None = eqx.field(static=True, default=None)
    holonomic_jacobian_fn: Callable | None = eqx.field(static=True, default=None)
    jacobian_pattern: Any = eqx.field(static=True, default=None)
    holonomic_jacobian_values_fn: Callable | None = eqx.field(static=True, default=None)
    nonholonomic_fn: Callable | None = eqx.field(static=True, default=None)
    reaction_fns: Mapping[str, Callable] | None = eqx.field(static=True, default=None)
    metadata: Mapping[str, Any] | None = eqx.field(static=True, default=None)
    switching: Any = eqx.field(static=True, default=None)
    network: Any = eqx.field(static=True, default=None)
    contacts: Any = eqx.field(static=True, default=None)
    bodies: Any = eqx.field(static=True, default=None)
    scene: Any = eqx.field(static=True, default=None)
    structure_problems: tuple[str, ...] = eqx.field(static=True, default=())
    coordinate_units: tuple[str | None, ...] | None = eqx.field(static=True, default=None)
    singularity_fn: Callable | None = eqx.field(static=True, default=None)
    singularity_names: tuple[str, ...] = eqx.field(static=True, default=())
    singularity_tol: float = eqx.field(static=True, default=1e-3)
    singularity_advice: str = eqx.field(static=True, default="")
    param_bounds: tuple = eqx.field(static=True, default=())

    def __init__(
        self,
        coordinates,
        *,
        mass_matrix=None,
        kinetic_energy=None,
        mass_diagonal=None,
        forces=None,
        potential=None,
        dissipation=None,
        holonomic=None,
        holonomic_jacobian=None,
        jacobian_pattern=None,
        holonomic_jacobian_values=None,
        constraint_names=None,
        nonholonomic=None,
        nonholonomic_names=None,
        params=None,
        reactions=None,
        metadata=None,
        switching=None,
        network=None,
        contacts=None,
        bodies=None,
        scene=None,
        structure_problems=(),
        coordinate_units=None,
        validate_at=None,
        singularity=None,
        singularity_names=None,
        singularity_tol=1e-3,
        singularity_advice="",
        param_bounds=None,
    ):
        coordinates = tuple((coordinates,) if isinstance(coordinates, str) else coordinates)
        fns = {"mass_matrix": mass_matrix, "kinetic_energy": kinetic_energy, "mass_diagonal": mass_diagonal,
               "forces": forces, "potential": potential, "dissipation": dissipation, "holonomic": holonomic,
               "holonomic_jacobian": holonomic_jacobian, "holonomic_jacobian_values": holonomic_jacobian_values,
               "nonholonomic": nonholonomic, "singularity": singularity}
        problems = _argument_problems(coordinates, fns, jacobian_pattern, coordinate_units)
        if problems:
            raise ModelError(problems)

        self.coordinates = coordinates
        self.inertia_kind = next(k for k in _INERTIA_KINDS if fns[k] is not None)
        self.params = _params_tree(params)
        self.mass_matrix_fn = mass_matrix
        self.kinetic_energy_fn = kinetic_energy
        self.mass_diagonal_fn = mass_diagonal
        self.forces_fn = forces
        self.potential_fn = potential
        self.dissipation_fn = dissipation
        self.holonomic_fn = holonomic
        self.holonomic_jacobian_fn = holonomic_jacobian
        self.holonomic_jacobian_values_fn = holonomic_jacobian_values
        self.nonholonomic_fn = nonholonomic
        self.reaction_fns = dict(reactions) if reactions else None
        self.metadata = dict(metadata) if metadata else None
        self.switching = switching
        self.network = network
        self.contacts = contacts
        self.bodies = bodies
        self.scene = scene
        self.structure_problems = tuple(str(x) for x in structure_problems)
        self.coordinate_units = None if coordinate_units is None else tuple(coordinate_units)
        self.singularity_fn = singularity
        self.singularity_tol = float(singularity_tol)
        self.singularity_advice = str(singularity_advice)
        self.param_bounds = _bounds(param_bounds, self.params)
        if self.param_bounds:
            outside = bound_problems(self, self.params)
            if outside:
                raise ModelError([f"Model: {p}." for p in outside])

        # Every function evaluated once at a generic state: shapes, finiteness, the
        # given derivatives against autodiff, and the row counts.
        n = len(coordinates)
        q = sample_point(n) if validate_at is None else jnp.asarray(validate_at, dtype=float)
        if q.shape != (n,):
            raise ModelError(f"Model: `validate_at` has shape {q.shape}, expected ({n},).")
        probe = _Probe(fns, q, sample_point(n, scale=0.2, phase=0.4), device_array(0.1), self.params)
        probe.check_inertia_and_forces(n)
        m_h, self.jacobian_pattern = probe.holonomic(n, jacobian_pattern)
        self.constraint_names = _row_names("constraint_names", constraint_names, m_h, "phi", probe.problems)
        m_n = probe.nonholonomic()
        self.nonholonomic_names = _row_names("nonholonomic_names", nonholonomic_names, m_n, "nh", probe.problems)
        k = probe.margins()
        self.singularity_names = () if k is None else _row_names("singularity_names", singularity_names, k,
                                                                 "singular", probe.problems)
        clash = sorted(set(self.constraint_names) & set(self.nonholonomic_names))
        if clash:
            probe.problems.append(f"Model: names {clash} are used for both holonomic and nonholonomic rows.")
        if probe.problems:
            raise ModelError(probe.problems)

    def singular_coordinates(self, q, params=None):
        """`[(name, margin), ...]` of the coordinate singularities within
        `singularity_tol` of `q` (concrete values; empty when none or no `singularity`)."""
        if self.singularity_fn is None:
            return []
        with concrete_evaluation():
            margins = np.abs(np.asarray(self.singularity_fn(jnp.asarray(q, dtype=float))))
        return [(nm, float(v)) for nm, v in zip(self.singularity_names, margins) if not v >= self.singularity_tol]

    # ------------------------------------------------------------------ sizes
    @property
    def n(self) -> int:
        """Number of generalized coordinates."""
        return len(self.coordinates)

    @property
    def m_h(self) -> int:
        """Number of holonomic constraint rows."""
        return len(self.constraint_names)

    @property
    def m_n(self) -> int:
        """Number of nonholonomic constraint rows."""
        return len(self.nonholonomic_names)

    @property
    def m(self) -> int:
        """Total number of constraint rows, `m_h + m_n`."""
        return self.m_h + self.m_n

    @property
    def row_names(self) -> tuple[str, ...]:
        """Names of the rows of `B`: holonomic first, then nonholonomic."""
        return self.constraint_names + self.nonholonomic_names

    def index(self, name: str) -> int:
        """Position of the coordinate `name` in `q`."""
        try:
            return self.coordinates.index(name)
        except ValueError:
            raise ModelError(
                f"Model: no coordinate named {name!r}; the coordinates are {list(self.coordinates)}."
            ) from None

    def resolve_params(self, params):
        """`params` if given, else the model's default parameter pytree."""
        return self.params if params is None else params

    # ------------------------------------------------ sympy.mechanics-style names
    def mass_matrix(self, q, qd=None, t=0.0, params=None):
        """`M(q)`, shape `(n, n)` (THEORY §2)."""
        return dyn.mass_matrix(self, q, qd, t, self.resolve_params(params))

    def forcing(self, q, qd, t=0.0, params=None):
        """`Q(q, q̇, t)`, shape `(n,)`, every non-constraint force (THEORY §2)."""
        return dyn.forcing(self, q, qd, t, self.resolve_params(params))

    def holonomic_constraints(self, q, t=0.0, params=None):
        """`Φ(q, t)`, shape `(m_h,)`."""
        return kin.holonomic(self, q, t, self.resolve_params(params))

    def nonholonomic_constraints(self, q, qd, t=0.0, params=None):
        """`A q̇ + a`, shape `(m_n,)`."""
        return kin.nonholonomic(self, q, qd, t, self.resolve_params(params))

    def constraint_jacobian(self, q, t=0.0, params=None):
        """`B = [Φ_q; A]`, shape `(m, n)`."""
        return kin.constraint_jacobian(self, q, t, self.resolve_params(params))

    def energy(self, q, qd, t=0.0, params=None):
        """Total mechanical energy `T + V` (scalar)."""
        return dyn.energy(self, q, qd, t, self.resolve_params(params))



def _argument_problems(coordinates, fns, jacobian_pattern, coordinate_units):
    """Every problem of `Model`'s arguments that shows without calling them: the
    coordinate names, one way of giving the inertia, functions where functions are
    due, the Jacobian's companions and the units' count."""
    problems = []
    if len(coordinates) == 0:
        problems.append("Model: `coordinates` is empty; give at least one name.")
    bad = [c for c in coordinates if not isinstance(c, str) or not c]
    if bad:
        problems.append(f"Model: coordinate names must be non-empty strings, got {bad!r}.")
    dup = sorted({c for c in coordinates if coordinates.count(c) > 1})
    if dup:
        problems.append(f"Model: duplicate coordinate names {dup}; each must be unique.")
    given = [k for k in _INERTIA_KINDS if fns[k] is not None]
    if len(given) != 1:
        problems.append(
            "Model: give exactly one of `mass_matrix=`, `kinetic_energy=` or "
            f"`mass_diagonal=` (got {given or 'none'})."
        )
    for label in ("mass_matrix", "kinetic_energy", "mass_diagonal", "forces", "potential", "dissipation",
                  "holonomic", "holonomic_jacobian", "nonholonomic"):
        if fns[label] is not None and not callable(fns[label]):
            problems.append(f"Model: `{label}` must be a function, got {type(fns[label]).__name__}.")
    if fns["holonomic_jacobian"] is not None and fns["holonomic"] is None:
        problems.append("Model: `holonomic_jacobian` given without `holonomic`.")
    if (jacobian_pattern is None) != (fns["holonomic_jacobian_values"] is None):
        problems.append("Model: give `jacobian_pattern` and `holonomic_jacobian_values` together.")
    if fns["holonomic_jacobian_values"] is not None and fns["holonomic"] is None:
        problems.append("Model: `holonomic_jacobian_values` given without `holonomic`.")
    if coordinate_units is not None and len(tuple(coordinate_units)) != len(coordinates):
        problems.append(f"Model: `coordinate_units` has {len(tuple(coordinate_units))} entries for "
                        f"{len(coordinates)} coordinates; give one unit (or None) per coordinate.")
    return problems


#: the arguments each model function takes at the sample state (q, v = q̇, t, p)
_SIGNATURES = {"mass_matrix": "qtp", "kinetic_energy": "qvtp", "mass_diagonal": "p", "forces": "qvtp",
               "potential": "qtp", "dissipation": "qvtp", "holonomic": "qtp", "holonomic_jacobian": "qtp",
               "holonomic_jacobian_values": "qtp", "nonholonomic": "qvtp", "singularity": "q"}


class _Probe:
    """A Model's functions evaluated at one generic state `(q, q̇, t, p)`, for the checks
    at construction; `problems` collects what they find.

    Every function, and the derivatives the checks compare with, run in one compiled
    program (kept in the persistent compilation cache) instead of one program each;
    when that program cannot be traced, each function is evaluated alone, so the one
    that fails is named."""

    def __init__(self, fns, q, qd, t, p):
        self.fns = {k: f for k, f in fns.items() if f is not None}
        self.q, self.qd, self.t, self.p = q, qd, t, p
        self.problems = []
        try:
            self.probed = one_shot_jit(self._all)(q, qd, t, p)
        except Exception:  # noqa: BLE001 - each function is tried alone, and named
            self.probed = None

    def _args(self, label, q, qd, t, p):
        return tuple({"q": q, "v": qd, "t": t, "p": p}[c] for c in _SIGNATURES[label])

    def _all(self, q, qd, t, p):
        out = {label: jnp.asarray(fn(*self._args(label, q, qd, t, p))) for label, fn in self.fns.items()}
        holonomic, nonholonomic = self.fns.get("holonomic"), self.fns.get("nonholonomic")
        if holonomic is not None and ("holonomic_jacobian" in self.fns or "holonomic_jacobian_values" in self.fns):
            out["holonomic: jacobian"] = jax.jacfwd(lambda x: jnp.asarray(holonomic(x, t, p)))(q)
        if nonholonomic is not None:
            out["nonholonomic: hessian"] = jax.jacfwd(jax.jacfwd(lambda v: jnp.asarray(nonholonomic(q, v, t, p))))(qd)
        return out

    def evaluate(self, label):
        """The value of function `label` at the sample state, or None (and a problem)."""
        if self.probed is not None:
            return self.probed[label]
        # Compiled, as every use of the function will be, and a function that cannot
        # be traced is named here.
        try:
            return one_shot_jit(lambda *a: jnp.asarray(self.fns[label](*a)))(
                *self._args(label, self.q, self.qd, self.t, self.p))
        except Exception as err:  # noqa: BLE001 - reported with context
            self.problems.append(f"Model: `{label}` raised {type(err).__name__}: {first_line(err)}"
                                 f"{call_advice(err, self.p)}")
            return None

    def _jacobian(self):
        if self.probed is not None:
            return self.probed["holonomic: jacobian"]
        holonomic, t, p = self.fns["holonomic"], self.t, self.p
        return one_shot_jit(jax.jacfwd(lambda x: jnp.asarray(holonomic(x, t, p))))(self.q)

    def _hessian(self):
        if self.probed is not None:
            return self.probed["nonholonomic: hessian"]
        nonholonomic, q, t, p = self.fns["nonholonomic"], self.q, self.t, self.p
        return one_shot_jit(jax.jacfwd(jax.jacfwd(lambda v: jnp.asarray(nonholonomic(q, v, t, p)))))(self.qd)

    def expect(self, label, out, shape):
        """Whether `out` has `shape` and is finite (else a problem)."""
        if out is None:
            return False
        if out.shape != shape:
            self.problems.append(f"Model: `{label}` returned shape {out.shape}, expected {shape}.")
            return False
        if not np.all(np.isfinite(np.asarray(out))):
            self.problems.append(
                f"Model: `{label}` is not finite at the sample configuration; fix the "
                "function or pass `validate_at=` a regular configuration."
            )
            return False
        return True

    def check_inertia_and_forces(self, n):
        """The inertia (M, T or the diagonal) and the applied forces, V and D."""
        for label, shape in (("mass_matrix", (n, n)), ("kinetic_energy", ()), ("mass_diagonal", (n,)),
                             ("forces", (n,)), ("potential", ()), ("dissipation", ())):
            if label in self.fns:
                self.expect(label, self.evaluate(label), shape)

    def _vector(self, label, what="a vector"):
        """`(k,)` of function `label`'s vector value, or None (and a problem)."""
        out = self.evaluate(label)
        if out is not None and out.ndim != 1:
            self.problems.append(f"Model: `{label}` must return {what}, got shape {out.shape}.")
            return None
        return out

    def holonomic(self, n, jacobian_pattern):
        """`(m_h, JacobianPattern or None)`: the holonomic rows, and the given Jacobian
        (dense, or its pattern and nonzeros) against autodiff."""
        if "holonomic" not in self.fns:
            return 0, None
        out = self._vector("holonomic")
        if out is None:
            return 0, None
        m_h = out.shape[0]
        self.expect("holonomic", out, (m_h,))
        if "holonomic_jacobian" in self.fns and m_h:
            jac = self.evaluate("holonomic_jacobian")
            if self.expect("holonomic_jacobian", jac, (m_h, n)) and not np.allclose(
                    np.asarray(jac), np.asarray(self._jacobian()), rtol=1e-6, atol=1e-9):
                self.problems.append("Model: `holonomic_jacobian` does not match the derivative of "
                                     "`holonomic`; omit it to use autodiff.")
        if "holonomic_jacobian_values" not in self.fns or not m_h:
            return m_h, None
        pattern = jacobian_pattern
        if not isinstance(pattern, JacobianPattern):
            try:
                pattern = JacobianPattern(pattern[0], pattern[1], (m_h, n))
            except (ValueError, TypeError, IndexError) as err:
                self.problems.append(f"Model: bad `jacobian_pattern`: {err}")
                return m_h, None
        if pattern.shape != (m_h, n):
            self.problems.append(f"Model: `jacobian_pattern` has shape {pattern.shape}, expected {(m_h, n)}.")
            return m_h, None
        vals = self.evaluate("holonomic_jacobian_values")
        if self.expect("holonomic_jacobian_values", vals, (pattern.nnz,)) and not np.allclose(
                pattern.dense_on_host(vals), np.asarray(self._jacobian()), rtol=1e-6, atol=1e-9):
            self.problems.append("Model: `holonomic_jacobian_values` (with `jacobian_pattern`) do not "
                                 "match the derivative of `holonomic`.")
        return m_h, pattern

    def nonholonomic(self):
        """`m_n`: the nonholonomic rows, checked affine in q̇."""
        if "nonholonomic" not in self.fns:
            return 0
        out = self._vector("nonholonomic")
        if out is None:
            return 0
        m_n = out.shape[0]
        if self.expect("nonholonomic", out, (m_n,)) and float(
                np.max(np.abs(np.asarray(self._hessian())), initial=0.0)) > 1e-9:
            self.problems.append("Model: `nonholonomic` must be affine in qd (A(q,t) qd + a(q,t)); "
                                 "its second derivative with respect to qd is not zero.")
        return m_n

    def margins(self):
        """The number of coordinate-singularity margins, or None."""
        if "singularity" not in self.fns:
            return None
        out = self._vector("singularity", "a vector of margins")
        return None if out is None else out.shape[0]

def _row_names(label, names, m, prefix, problems):
    if names is None:
        return tuple(f"{prefix}[{k}]" for k in range(m))
    names = (names,) if isinstance(names, str) else tuple(names)
    if len(names) != m:
        problems.append(f"Model: `{label}` has {len(names)} names but the function returns {m} rows.")
        return tuple(f"{prefix}[{k}]" for k in range(m))
    dup = sorted({c for c in names if names.count(c) > 1})
    if dup:
        problems.append(f"Model: duplicate names in `{label}`: {dup}.")
    return names
