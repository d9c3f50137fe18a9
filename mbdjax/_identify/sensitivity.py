"""Trajectory sensitivities `∂y(t)/∂p` by forward or reverse mode through `simulate`.

`y(t)` are outputs of the motion at the times `t` (coordinates by name, or any
function of the Trajectory); `p` scalar parameters named by dotted paths. Forward mode
(`jax.jacfwd` with diffrax's `ForwardMode` adjoint) costs about one tangent solve per
parameter; reverse mode (`jax.jacrev` through recursive checkpointing) one adjoint
sweep per output value, so it suits few outputs and many parameters. The normalized
sensitivities `∂ln y/∂ln p = (p / y) ∂y/∂p` compare parameters of different units.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import diffrax
import jax
import jax.numpy as jnp
import numpy as np

from .._errors import MbdjaxError
from .._integrate import simulate
from .._params import float_params, get_values, path_name, resolve_names, set_values
from ..plotting._plots import axes, legend

#: Below this fraction of max |y| the relative sensitivity of an output is undefined.
_RELATIVE_FLOOR = 1e-9


@dataclasses.dataclass(frozen=True)
class Sensitivity:
    """Sensitivities of outputs along a trajectory (see `mbdjax.sensitivity`).

    Attributes:
        t: `(T,)` output times.
        values: `(T, k)` outputs `y` at the parameter values.
        raw: `(T, k, P)` `∂y/∂p`.
        normalized: `(T, k, P)` `∂ln y/∂ln p = (p/y) ∂y/∂p`; zero where it is undefined
            (see `defined`).
        defined: `(T, k)` False where `|y|` is below 1e-9 of its largest value (a zero
            crossing), where a relative change has no meaning.
        params: `(P,)` the parameter values.
        names: the `P` parameter names; outputs: the `k` output labels; mode:
            `"forward"` or `"reverse"`.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([1.0]),
        ...                 potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2, params={"k": 4.0})
        >>> s = mbd.sensitivity(osc, jnp.array([1.0]), jnp.zeros(1), t=jnp.array([0.5, 1.0]),
        ...                     outputs=("x",), wrt=("k",), rtol=1e-10, atol=1e-12)
        >>> s.raw.shape, s.names, s.outputs
        ((2, 1, 1), ('k',), ('x',))
    """

    t: np.ndarray
    values: np.ndarray
    raw: np.ndarray
    normalized: np.ndarray
    defined: np.ndarray
    params: np.ndarray
    names: tuple
    outputs: tuple
    mode: str

    def ranking(self):
        """`[(name, score), ...]` from most to least influential: the RMS of the
        normalized sensitivity over the times and outputs where it is defined."""
        w = self.defined[..., None]
        count = max(int(np.sum(self.defined)), 1)
        score = np.sqrt(np.sum(np.where(w, self.normalized, 0.0) ** 2, axis=(0, 1)) / count)
        order = np.argsort(-score)
        return [(self.names[i], float(score[i])) for i in order]

    def table(self) -> str:
        """Ranked text table: RMS and peak normalized sensitivity per parameter, and the
        peak raw sensitivity with the time it occurs."""
        rows = []
        for name, score in self.ranking():
            j = self.names.index(name)
            norm = np.where(self.defined, self.normalized[..., j], 0.0)
            peak = float(np.max(np.abs(norm)))
            raw = np.abs(self.raw[..., j])
            ti, _ = np.unravel_index(int(np.argmax(raw)), raw.shape)
            rows.append((name, f"{float(self.params[j]):.4g}", f"{score:.3e}", f"{peak:.3e}",
                         f"{float(np.max(raw)):.3e}", f"{float(self.t[ti]):.4g}"))
        head = ("parameter", "value", "rms ∂ln y/∂ln p", "peak ∂ln y/∂ln p", "peak |∂y/∂p|", "at t")
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
        return "\n".join(lines)

    def plot(self, ax=None, output=0):
        """Normalized sensitivities of output `output` (index or label) against time,
        one line per parameter; returns the axes."""
        k = self.outputs.index(output) if isinstance(output, str) else int(output)
        ax = axes(ax)
        for j, name in enumerate(self.names):
            ax.plot(self.t, np.where(self.defined[:, k], self.normalized[:, k, j], np.nan), label=name)
        ax.set(title=f"normalized sensitivity of {self.outputs[k]}", xlabel="t [s]", ylabel="∂ln y / ∂ln p")
        legend(ax)
        ax.grid(alpha=0.3)
        return ax


def initial_state(q0, qd0, p):
    """`(q0, qd0)`: the given arrays, or `q0(p)` when `q0` is a function of the params."""
    if callable(q0):
        start = q0(p)
        if not (isinstance(start, tuple) and len(start) == 2):
            raise MbdjaxError("the initial-state function q0(params) must return a pair (q0, qd0).")
        return start
    return q0, qd0


def output_function(model, outputs):
    """`(fn(traj) -> (T, k), labels)` from coordinate names or a function."""
    if callable(outputs):
        return outputs, None
    names = (outputs,) if isinstance(outputs, str) else tuple(outputs)
    unknown = [n for n in names if n not in model.coordinates]
    if not names or unknown:
        raise MbdjaxError(f"sensitivity: outputs {list(unknown) or names} are not coordinates; name "
                          f"coordinates of {list(model.coordinates)} or pass a function of the Trajectory.")
    idx = jnp.asarray([model.coordinates.index(n) for n in names])
    return (lambda traj: traj.q[:, idx]), names


def sensitivity(model, q0, qd0, params=None, *, t, outputs, wrt: Sequence[str], mode="forward",
                **simulate_kwargs) -> Sensitivity:
    """Sensitivities `∂y(t)/∂p` of trajectory outputs to scalar parameters.

    Arguments:
        model, q0, qd0, params: as for `mbdjax.simulate` (`params` default: the
            model's). `q0`, `qd0` are held fixed; or pass `q0=fn(params) -> (q0,
            qd0)` (and `qd0=None`) when the initial state depends on the parameters,
            e.g. a mechanism re-assembled with `mbdjax.initial_conditions` for each
            link length; its derivative then enters the sensitivities.
        t: `(T,)` output times (increasing; the run starts at `simulate`'s `t0`, 0 by
            default, and ends at `t[-1]`).
        outputs: coordinate names (`("rocker.phi",)`) or a function `fn(traj) ->
            (T,)` or `(T, k)` of the Trajectory (node voltages, reactions, …).
        wrt: dotted names of the scalar parameters (`"crank.mass"`, `"spring.k"`).
        mode: `"forward"` (default; cost grows with the number of parameters) or
            `"reverse"` (cost grows with the number of output values `T·k`).
        simulate_kwargs: passed to `simulate` (formulation, solver, rtol, atol, …);
            `adjoint` is chosen by `mode`.

    Returns:
        A `Sensitivity` (`raw (T, k, P)`, `normalized`, `ranking()`, `table()`,
        `plot()`).

    Raises:
        MbdjaxError: unknown or non-scalar parameter names, bad outputs, an unknown
            mode, or non-finite sensitivities (naming the first parameter and time).

    Example (x = cos ωt, ω² = k/m: ∂x/∂k = −t sin(ωt) / (2 m ω)):
        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([p["m"]]),
        ...                 potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2,
        ...                 params={"m": 1.0, "k": 4.0})
        >>> s = mbd.sensitivity(osc, jnp.array([1.0]), jnp.zeros(1), t=jnp.array([0.5, 1.0]),
        ...                     outputs=("x",), wrt=("k",), rtol=1e-10, atol=1e-12)
        >>> [round(float(v), 6) for v in s.raw[:, 0, 0]]
        [-0.105184, -0.227324]
    """
    if mode not in ("forward", "reverse"):
        raise MbdjaxError(f"sensitivity: mode must be 'forward' or 'reverse', got {mode!r}.")
    if "adjoint" in simulate_kwargs:
        raise MbdjaxError("sensitivity: the adjoint follows `mode`; do not pass `adjoint=`.")
    p0 = float_params(model, params, "sensitivity")
    paths = resolve_names(p0, wrt, "sensitivity")
    names = tuple(path_name(path) for path in paths)
    ts = jnp.asarray(t, dtype=float)
    if ts.ndim != 1 or ts.shape[0] < 1:
        raise MbdjaxError(f"sensitivity: t must be a 1-D array of output times, got shape {ts.shape}.")
    fn, labels = output_function(model, outputs)
    adjoint = diffrax.ForwardMode() if mode == "forward" else diffrax.RecursiveCheckpointAdjoint()
    t1 = ts[-1]

    def y_of(theta):
        p = set_values(p0, paths, theta)
        start = initial_state(q0, qd0, p)
        traj = simulate(model, *start, t1=t1, saveat=ts, params=p, adjoint=adjoint, **simulate_kwargs)
        y = jnp.asarray(fn(traj), dtype=float)
        return y[:, None] if y.ndim == 1 else y

    theta0 = get_values(p0, paths)
    y = y_of(theta0)
    if y.ndim != 2 or y.shape[0] != ts.shape[0]:
        raise MbdjaxError(f"sensitivity: outputs must give shape (T,) or (T, k) with T = {ts.shape[0]} output "
                          f"times; got {y.shape}.")
    jac = (jax.jacfwd if mode == "forward" else jax.jacrev)(y_of)(theta0)       # (T, k, P)
    raw = np.asarray(jac)
    bad = ~np.isfinite(raw)
    if bad.any():
        ti, _, pj = np.argwhere(bad)[0]
        raise MbdjaxError(
            f"sensitivity: the sensitivity to {names[pj]!r} is not finite from t = {float(ts[ti]):.6g} on "
            "(the motion or its derivative is singular there); check the model at that time, or use "
            "the other mode or a tighter rtol."
        )
    values = np.asarray(y)
    scale = np.max(np.abs(values), axis=0, keepdims=True)
    defined = np.abs(values) > _RELATIVE_FLOOR * np.where(scale > 0, scale, 1.0)
    safe = np.where(defined, values, 1.0)
    normalized = np.where(defined[..., None], raw * np.asarray(theta0)[None, None, :] / safe[..., None], 0.0)
    labels = labels or tuple(f"y[{i}]" for i in range(values.shape[1]))
    return Sensitivity(t=np.asarray(ts), values=values, raw=raw, normalized=normalized, defined=defined,
                       params=np.asarray(theta0), names=names, outputs=tuple(labels), mode=mode)
