"""The Trajectory pytree: what `simulate` returns, with derived outputs and save/load."""

from __future__ import annotations

import functools
import io
import json
import os
import zipfile
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import _dynamics as dyn
from . import _kinematics as kin
from ._errors import MbdjaxError
from ._files import atomic_write
from ._params import flatten_params, unflatten_params
from ._tracing import CompiledCache, device_array, is_concrete, one_shot_jit, top_level

_FORMAT = "mbdjax-trajectory/1"

#: compiled per-output-time maps (`Trajectory.evaluate`), by call site and closure
_MAPPED = CompiledCache(64)
#: the standard outputs of the last few trajectories (`Trajectory._standard`), by id
_STANDARD = CompiledCache(4)


def _standard_outputs(model, with_power, with_reactions):
    """`fn(q, qd, t, lam, p) -> dict`: the standard outputs at one output time (the
    residuals, the energies, the applied power and the joint reactions, as far as the
    model and the trajectory have them), for `Trajectory._standard`."""

    def outputs(q, qd, t, lam, p):
        out = {"energy": dyn.energy(model, q, qd, t, p), "kinetic_energy": dyn.kinetic_energy(model, q, qd, t, p)}
        if model.m_h:
            out["position_residual"] = kin.holonomic(model, q, t, p)
        if model.m:
            out["velocity_residual"] = kin.velocity_residual(model, q, qd, t, p)
        if with_power:
            P = dyn.applied_power(model, q, qd, t, p)
            out["power"] = P - lam @ kin.velocity_rhs(model, q, t, p) if model.m else P
        if with_reactions:
            out["reactions"] = {j: f(q, lam, p) for j, f in model.reaction_fns.items()}
        return out

    return outputs


def per_member(method):
    """Derived outputs of a batched trajectory (from `jax.vmap(simulate)`, `t` of shape
    `(B, T)`) are computed member by member with the member's own parameters."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if self.t.ndim > 1:
            return jax.vmap(lambda tr: wrapper(tr, *args, **kwargs))(self)
        return method(self, *args, **kwargs)

    return wrapper


class Trajectory(eqx.Module):
    """A simulated (or loaded) motion.

    Attributes:
        t: `(T,)` output times.
        q, qd, qdd: `(T, n)` coordinates, velocities and accelerations.
        lam: `(T, m)` Lagrange multipliers (THEORY §2 sign: `M q̈ + Bᵀλ = Q`), or None
            where the formulation has none.
        result: the diffrax result code (`diffrax.RESULTS`); see `success`.
        num_steps: accepted plus rejected solver steps.
        params: the parameter pytree the motion was computed with.
        model: the Model (None for a trajectory loaded without one).
        coordinates, constraint_names, nonholonomic_names: names of `q` and `lam` rows.
        settings: solver settings (formulation, stabilization, tolerances, solver).
        u: `(T, f)` quasi-velocities for the quasi-velocity formulation, else None.
        modes: `(T, k)` values of the model's discrete modes at each output time
            (stick–slip friction), else None; derived outputs use them.
        switches: the switch log of a model with modes (see `switch_history`).
        partitions: the coordinate partitions of the null-space formulation and of
            the quasi-velocity formulation with its partition map, else None: a
            dict with `"t" (K,)` the time each partition took over (inf for unused
            slots) and `"independent" (K, n − m)` the indices of its independent
            coordinates; see `partition_history()`.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> pend = mbd.Model(("x", "y"), mass_diagonal=lambda p: jnp.ones(2),
        ...                  potential=lambda q, t, p: 9.81 * q[1],
        ...                  holonomic=lambda q, t, p: jnp.stack([0.5 * (q @ q - 1.0)]),
        ...                  constraint_names=("rod",))
        >>> traj = mbd.simulate(pend, jnp.array([0.6, -0.8]), jnp.zeros(2), t1=0.5, saveat=3)
        >>> traj.t.shape, traj.q.shape, traj.lam.shape
        ((3,), (3, 2), (3, 1))
        >>> [round(float(x), 6) for x in traj.coordinate("x")]
        [0.6, 0.450342, 0.029328]
        >>> float(jnp.max(jnp.abs(traj.energy() - traj.energy()[0]))) < 1e-6
        True
    """

    t: jax.Array
    q: jax.Array
    qd: jax.Array
    qdd: jax.Array
    lam: jax.Array | None
    result: Any
    num_steps: jax.Array
    params: Any
    model: Any
    coordinates: tuple[str, ...] = eqx.field(static=True)
    constraint_names: tuple[str, ...] = eqx.field(static=True)
    nonholonomic_names: tuple[str, ...] = eqx.field(static=True)
    settings: tuple = eqx.field(static=True, default=())
    u: jax.Array | None = None
    partitions: Any = None
    modes: Any = None
    switches: Any = None

    #: the fields a simulation computes (arrays or containers of arrays)
    COMPUTED = ("t", "q", "qd", "qdd", "lam", "u", "num_steps", "partitions", "modes", "switches")

    @classmethod
    def of_model(cls, model, params, settings, result, **computed):
        """The trajectory of `model` from a simulation's `computed` fields
        (`COMPUTED`) and its diffrax `result`: names read from the model."""
        return cls(result=result, params=params, model=model, coordinates=model.coordinates,
                   constraint_names=model.constraint_names, nonholonomic_names=model.nonholonomic_names,
                   settings=settings, **computed)

    # ------------------------------------------------------------ accessors
    @property
    def success(self):
        """True where the solver reached `t1` without failing."""
        # on first use: `Trajectory.load` and the network front end (`mbdjax check rlc`) load
        # this module and need no diffrax
        import diffrax

        if self.result is None:
            return True
        if is_concrete(self.result):        # on the host: no program to compile
            return device_array(np.asarray(self.result._value) == diffrax.RESULTS.successful._value, bool)
        return self.result == diffrax.RESULTS.successful

    def coordinate(self, name: str) -> jax.Array:
        """`(T,)` history of the coordinate `name`."""
        k = self._index(name)
        return device_array(np.asarray(self.q)[..., k]) if is_concrete(self.q) else self.q[..., k]

    def velocity(self, name: str) -> jax.Array:
        """`(T,)` history of the velocity of coordinate `name`."""
        return self.qd[..., self._index(name)]

    def acceleration(self, name: str) -> jax.Array:
        """`(T,)` history of the acceleration of coordinate `name`."""
        return self.qdd[..., self._index(name)]

    def multiplier(self, name: str) -> jax.Array:
        """`(T,)` history of the multiplier of constraint row `name`."""
        rows = self.constraint_names + self.nonholonomic_names
        if self.lam is None:
            raise MbdjaxError("Trajectory: this formulation computes no multipliers.")
        if name not in rows:
            raise MbdjaxError(f"Trajectory: no constraint row named {name!r}; rows are {list(rows)}.")
        return self.lam[..., rows.index(name)]

    def partition_history(self) -> list[tuple[float, tuple[str, ...]]]:
        """`[(t_start, independent coordinate names), ...]`: the partitions the
        null-space (or quasi-velocity) formulation used, in order (a re-partition starts
        a new entry)."""
        if self.partitions is None:
            raise MbdjaxError("Trajectory.partition_history: only the null-space and quasi-velocity "
                              "formulations (the latter with its partition map) partition.")
        if self.t.ndim > 1:
            raise MbdjaxError("Trajectory.partition_history: index one member of a batched trajectory first.")
        ts = np.asarray(self.partitions["t"])
        ind = np.asarray(self.partitions["independent"])
        return [(float(t), tuple(self.coordinates[k] for k in row)) for t, row in zip(ts, ind) if np.isfinite(t)]

    def _index(self, name):
        if name not in self.coordinates:
            raise MbdjaxError(
                f"Trajectory: no coordinate named {name!r}; coordinates are {list(self.coordinates)}."
            )
        return self.coordinates.index(name)

    def _need_model(self, what):
        if self.model is None:
            raise MbdjaxError(
                f"Trajectory.{what}: this trajectory has no model attached (it was loaded "
                "from a file); use Trajectory.load(path, model=model)."
            )
        return self.model

    def evaluate(self, fn, *arrays):
        """`fn(*arrays_k, p_k)` at every output time `k`, stacked on a leading axis:
        `arrays` have the output times on their leading axis (`traj.q`, `traj.t`, ...)
        and `p_k` are the trajectory's parameters at time k (the model's discrete
        modes, where it has any, vary with time). For outputs a Trajectory has no
        method for:

            >>> import jax.numpy as jnp, mbdjax as mbd
            >>> from mbdjax import models
            >>> ex = models.pendulum_chain(2)                  # 1 m rods pinned at the origin
            >>> traj = mbd.simulate(ex.model, ex.q0, ex.qd0, t1=0.5, saveat=3)
            >>> centre = lambda q, p: jnp.hypot(q[0], q[1])     # first rod's centre from the pin
            >>> traj.evaluate(centre, traj.q).round(9).tolist()
            [0.5, 0.5, 0.5]

        One compiled call, not the model's operations dispatched one by one (each of
        those is a program of its own: the slider-crank's reactions were 80 of them);
        the parameters and modes are arguments, so the program is the same in every
        process and comes from the persistent compilation cache."""
        switching = self.model.switching if self.model is not None else None
        moded = switching is not None and self.modes is not None

        def build():
            if not moded:
                return one_shot_jit(lambda p, *a: jax.vmap(lambda *ak: fn(*ak, p))(*a))

            def with_modes(p, modes, *a):
                return jax.vmap(lambda m, *ak: fn(*ak, switching.with_modes(p, m)))(modes, *a)

            return one_shot_jit(with_modes)

        # The same output of the same model (a call site's code and the objects its
        # closure holds) reuses its compiled function: an output asked for again (the
        # energy for the summary, then for the plot) is not traced again.
        cells = tuple(id(c.cell_contents) for c in (fn.__closure__ or ()))
        compiled = _MAPPED.get((fn.__code__, cells, moded), fn, build)
        return compiled(self.params, self.modes, *arrays) if moded else compiled(self.params, *arrays)

    def _standard(self, name):
        """Output `name` of the standard set (`_standard_outputs`), all of them computed
        in one compiled call the first time one is asked for and kept for the last few
        trajectories: a run's summary and its plots read the residuals, the energies,
        the power and the reactions, and one program compiles in about two thirds of
        the time of one per output. None where the set does not hold `name` or does not
        apply: a traced or batched trajectory, a model without the functions it needs
        (the output's own method then computes it alone, or says why not)."""
        if self.model is None or self.t.ndim != 1 or not top_level() or not is_concrete(self):
            return None
        model = self.model
        with_power = model.inertia_kind != "mass_matrix" and (self.lam is not None or not model.m)
        with_reactions = self.lam is not None and bool(model.reaction_fns)

        def build():
            fn = _standard_outputs(model, with_power, with_reactions)
            lam = self.lam if self.lam is not None else jnp.zeros(self.t.shape + (0,))
            try:
                return self.evaluate(fn, self.q, self.qd, self.t, lam)
            except Exception:  # noqa: BLE001 - each output alone names its own problem
                return {}

        return _STANDARD.get((id(self),), self, build).get(name)

    def switch_history(self) -> list[tuple[float, dict]]:
        """`[(t, {leaf: value}), ...]`: the mode switches of a model with discrete modes
        (stick–slip friction): the time and the modes entered (`"<element>.stuck"`,
        `"<element>.direction"`); empty for models without modes."""
        if self.switches is None:
            return []
        if self.t.ndim > 1:
            raise MbdjaxError("Trajectory.switch_history: index one member of a batched trajectory first.")
        switching = self.model.switching
        names = [f"{a}.{b}" for a, b in switching.keys]
        ts = np.asarray(self.switches["t"])
        modes = np.asarray(self.switches["modes"])
        return [(float(t), dict(zip(names, (float(v) for v in row)))) for t, row in zip(ts, modes) if np.isfinite(t)]

    # ------------------------------------------------------------ derived outputs
    @per_member
    def position_residual(self) -> jax.Array:
        """`(T, m_h)` holonomic residual `Φ(q, t)` at each output time."""
        model = self._need_model("position_residual")
        found = self._standard("position_residual")
        if found is not None:
            return found
        return self.evaluate(lambda q, t, p: kin.holonomic(model, q, t, p), self.q, self.t)

    @per_member
    def velocity_residual(self) -> jax.Array:
        """`(T, m)` velocity residual `B q̇ − b` (nonholonomic rows included)."""
        model = self._need_model("velocity_residual")
        found = self._standard("velocity_residual")
        if found is not None:
            return found
        return self.evaluate(
            lambda q, qd, t, p: kin.velocity_residual(model, q, qd, t, p), self.q, self.qd, self.t
        )

    @per_member
    def acceleration_residual(self) -> jax.Array:
        """`(T, m)` acceleration residual `B q̈ − g`."""
        model = self._need_model("acceleration_residual")

        def res(q, qd, qdd, t, p):
            B = kin.constraint_jacobian(model, q, t, p)
            return B @ qdd - kin.acceleration_rhs(model, q, qd, t, p)

        return self.evaluate(res, self.q, self.qd, self.qdd, self.t)

    @per_member
    def energy(self) -> jax.Array:
        """`(T,)` total energy `T + V` (applied non-potential forces make it vary)."""
        model = self._need_model("energy")
        found = self._standard("energy")
        if found is not None:
            return found
        return self.evaluate(lambda q, qd, t, p: dyn.energy(model, q, qd, t, p), self.q, self.qd, self.t)

    @per_member
    def kinetic_energy(self) -> jax.Array:
        """`(T,)` kinetic energy."""
        model = self._need_model("kinetic_energy")
        found = self._standard("kinetic_energy")
        if found is not None:
            return found
        return self.evaluate(
            lambda q, qd, t, p: dyn.kinetic_energy(model, q, qd, t, p), self.q, self.qd, self.t
        )

    @per_member
    def power(self) -> jax.Array:
        """`(T,)` power put into the system by applied forces, dampers and drivers (W).

        `P = (Q^A − ∂D/∂q̇)·q̇ − λᵀ b`: the second term is the power of the constraint
        forces, nonzero only for rheonomic (driving) constraints since `B q̇ = b`.
        For models whose T and V do not depend on time explicitly, `dE/dt = P`.
        Not available for `mass_matrix` models (their `forces` hold inertial terms).
        """
        model = self._need_model("power")
        if model.inertia_kind == "mass_matrix":
            raise MbdjaxError(
                "Trajectory.power: a `mass_matrix` model's forces include the quadratic-velocity "
                "terms, so the applied power is not defined; use kinetic_energy= for energy balances."
            )
        found = self._standard("power")
        if found is not None:
            return found

        def power(q, qd, t, lam, p):
            P = dyn.applied_power(model, q, qd, t, p)
            if lam is not None and model.m:
                P = P - lam @ kin.velocity_rhs(model, q, t, p)
            return P

        if self.lam is None:
            if model.m:
                b = self.evaluate(lambda q, t, p: kin.velocity_rhs(model, q, t, p), self.q, self.t)
                if is_concrete(b) and float(jnp.max(jnp.abs(b))) > 0:
                    raise MbdjaxError(
                        "Trajectory.power: the model has driving (rheonomic) constraints, whose work "
                        "needs the multipliers; simulate with formulation='augmented' or "
                        "mbdjax.MultiplierFree(multipliers=True)."
                    )
            return self.evaluate(lambda q, qd, t, p: power(q, qd, t, None, p), self.q, self.qd, self.t)
        return self.evaluate(power, self.q, self.qd, self.t, self.lam)

    @per_member
    def work(self) -> jax.Array:
        """`(T,)` work done by applied forces, dampers and drivers since `t[0]` (J),
        the trapezoidal integral of `power()` over the output times."""
        P = self.power()
        xp = np if is_concrete(P, self.t) else jnp      # on the host: no program to compile
        P, t = (np.asarray(P), np.asarray(self.t)) if xp is np else (P, self.t)
        steps = 0.5 * xp.diff(t, axis=-1) * (P[..., 1:] + P[..., :-1])
        out = xp.concatenate([xp.zeros_like(P[..., :1]), xp.cumsum(steps, axis=-1)], axis=-1)
        return device_array(out) if xp is np else out

    @per_member
    def reaction(self, joint: str):
        """Reaction of joint `joint` on its first body: `(force (T, 2), torque (T,))`.

        The force is in global axes (N), the torque (N·m) is about the joint point,
        both acting on `body_i` from the joint (generalized constraint force
        `−Bᵀλ`, Haug §6.6). For a revolute joint the torque is zero.
        """
        return self.reactions((joint,))[joint]

    @per_member
    def reactions(self, joints=None) -> dict:
        """`{joint: (force (T, 2), torque (T,))}` for every joint with reactions (or those
        in `joints`), as in `reaction`, all computed in one compiled call (the same
        program whichever joints are asked for)."""
        model = self._need_model("reaction")
        if self.lam is None:
            raise MbdjaxError("Trajectory.reaction: this formulation computes no multipliers.")
        fns = model.reaction_fns or {}
        joints = sorted(fns) if joints is None else list(joints)
        for joint in joints:
            if joint not in fns:
                raise MbdjaxError(
                    f"Trajectory.reaction: no joint named {joint!r} with reactions; available: {sorted(fns)}."
                )
        # every joint's, in the one program per model (reused by later calls), then chosen
        every = self._standard("reactions")
        every = every if every is not None else self.evaluate(lambda q, lam, p: {j: f(q, lam, p) for j, f in fns.items()}, self.q, self.lam)
        return {j: every[j] for j in joints}

    # ------------------------------------------------------------ networks
    # The network part of the model (`Model.network`, built by `mbdjax.network`) reads
    # these; the functions live with it (`mbdjax.network.effort`, ...).
    def _network(self, what):
        model = self._need_model(what)
        if model.network is None:
            raise MbdjaxError(f"Trajectory.{what}: the model has no network (build one with mbdjax.network.Network).")
        return model.network

    def effort(self, name: str) -> jax.Array:
        """Effort history of a network node or element (voltage, pressure, force,
        torque): `(T,)`, or `(T, k)` for a `k`-port element (transformers,
        transducers, DC motor); `mbdjax.network.effort(traj, name)`, whose docstring
        gives the sign convention."""
        return self._network("effort").effort(self, name)

    def flow(self, name: str) -> jax.Array:
        """Flow history of a network element (current, volume flow, relative
        velocity; `(T,)` or `(T, k)` per port) or of a translational/rotational node
        (its velocity); `mbdjax.network.flow(traj, name)`."""
        return self._network("flow").flow(self, name)

    def element_power(self, name: str) -> jax.Array:
        """`(T,)` power absorbed by network element `name` (W), summed over its ports;
        `mbdjax.network.element_power(traj, name)`."""
        return self._network("element_power").element_power(self, name)

    def power_balance(self) -> dict:
        """`{element: (T,) absorbed power}` for every network element, plus
        `"residual"`, their sum (zero by Tellegen's theorem for a network alone);
        `mbdjax.network.power_balance(traj)`."""
        return self._network("power_balance").power_balance(self)

    # ------------------------------------------------------------ persistence
    def save(self, path, *, overwrite: bool = False) -> str:
        """Write the trajectory to `path` (`.npz`: arrays plus a JSON header).

        The header holds the coordinate and constraint names, the parameters and the
        solver settings. An existing file is never replaced unless `overwrite=True`.
        """
        path = os.fspath(path)
        if not path.endswith(".npz"):
            path = path + ".npz"
        if os.path.exists(path) and not overwrite:
            raise FileExistsError(f"Trajectory.save: {path} exists; pass overwrite=True to replace it.")
        header = {
            "format": _FORMAT,
            "coordinates": list(self.coordinates),
            "constraint_names": list(self.constraint_names),
            "nonholonomic_names": list(self.nonholonomic_names),
            "params": {k: np.asarray(v).tolist() for k, v in flatten_params(self.params).items()},
            "settings": {k: v for k, v in self.settings},
            "success": bool(np.all(np.asarray(self.success))),
            "num_steps": np.asarray(self.num_steps).tolist(),
        }
        arrays = {"t": self.t, "q": self.q, "qd": self.qd, "qdd": self.qdd}
        if self.lam is not None:
            arrays["lam"] = self.lam
        if self.u is not None:
            arrays["u"] = self.u
        if self.modes is not None:
            arrays["modes"] = self.modes
        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        buffer = io.BytesIO()
        np.savez(buffer, header=np.array(json.dumps(header)), **arrays)
        atomic_write(path, buffer.getvalue())
        return path

    @classmethod
    def load(cls, path, model=None) -> "Trajectory":
        """Read a trajectory written by `save`; attach `model` to use derived outputs."""
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise MbdjaxError(f"Trajectory.load: {path!r} does not exist (or is not a file); give the path "
                              "that Trajectory.save wrote.")
        try:
            with np.load(path, allow_pickle=False) as data:
                if not hasattr(data, "files") or "header" not in data.files:
                    raise MbdjaxError(f"Trajectory.load: {path!r} is not an mbdjax trajectory file (no header); "
                                      "it was not written by Trajectory.save.")
                header = json.loads(str(data["header"]))
                if not isinstance(header, dict) or header.get("format") != _FORMAT:
                    raise MbdjaxError(f"Trajectory.load: {path!r} is not an mbdjax trajectory file.")
                missing = [k for k in ("t", "q", "qd", "qdd") if k not in data.files]
                if missing:
                    raise MbdjaxError(f"Trajectory.load: {path!r} lacks the arrays {missing}; the file is "
                                      "incomplete. Save the trajectory again.")
                arrays = {k: jnp.asarray(data[k]) for k in ("t", "q", "qd", "qdd")}
                lam = jnp.asarray(data["lam"]) if "lam" in data.files else None
                u = jnp.asarray(data["u"]) if "u" in data.files else None
                modes = jnp.asarray(data["modes"]) if "modes" in data.files else None
        except MbdjaxError:
            raise
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as err:
            raise MbdjaxError(f"Trajectory.load: {path!r} cannot be read as an mbdjax trajectory file "
                              f"(truncated, or not an .npz archive: {type(err).__name__}); give a file "
                              "written by Trajectory.save.") from None
        if model is not None and tuple(model.coordinates) != tuple(header["coordinates"]):
            raise MbdjaxError(
                "Trajectory.load: the model's coordinates do not match the file's "
                f"({list(model.coordinates)} vs {header['coordinates']})."
            )
        return cls(
            t=arrays["t"], q=arrays["q"], qd=arrays["qd"], qdd=arrays["qdd"], lam=lam,
            result=None, num_steps=jnp.asarray(header.get("num_steps", 0)),
            params=unflatten_params(header["params"]), model=model,
            coordinates=tuple(header["coordinates"]),
            constraint_names=tuple(header["constraint_names"]),
            nonholonomic_names=tuple(header["nonholonomic_names"]),
            settings=tuple(sorted(header["settings"].items())), u=u, modes=modes,
        )
