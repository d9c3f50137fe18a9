"""Parameter identification from measured trajectories: `mbdjax.fit`.

Weighted least squares over the free parameters `θ`:

    L(θ) = ½ Σ_i Σ_j w_ij² (y_j(t_i; θ) − d_ij)²,

`y` the model's outputs at the measurement times, `d` the data. The default optimizer is
Levenberg–Marquardt (Gauss–Newton with Marquardt's diagonal damping), whose Jacobian
`J = ∂r/∂θ` of the weighted residuals comes from forward-mode sensitivities through the
whole trajectory; any optax optimizer may be used instead (gradient steps on `L`).

At the solution, the Gauss–Newton covariance `σ² (JᵀJ)⁻¹` (with `σ²` the residual
variance `2L/(N − P)` when no weights are given, 1 with weights = 1/standard
deviations) gives standard errors and correlations; the singular values of the
relative sensitivity matrix `J diag(θ)` tell which parameter combinations the data
resolve. Bounds are smooth reparametrisations: `(0, None)` optimizes `log θ`,
`(lo, hi)` a logistic map onto the interval, `(lo, None)` / `(None, hi)` a shifted log.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import diffrax
import jax
import jax.numpy as jnp
import numpy as np

from .._errors import MbdjaxError
from .._integrate import simulate
from .._params import float_params, get_values, path_name, resolve_names, set_values
from .._redundancy import select_rows
from .sensitivity import output_function, initial_state
from .shooting import shooting_residual
from .._tracing import CompiledCache

#: Relative singular values below this are reported as not identifiable.
IDENTIFIABILITY_TOL = 1e-6


# ----------------------------------------------------------------------------- data
def load_data(data, labels):
    """`(t (T,), y (T, k))` from `{"t": ..., "y": ...}`, a `(t, y)` pair, or a CSV /
    NPZ file with a column `t` and one column per output label."""
    if isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        if not os.path.exists(path):
            raise MbdjaxError(f"fit: data file {path!r} does not exist.")
        if path.endswith(".npz"):
            with np.load(path, allow_pickle=False) as f:
                columns = {k: np.asarray(f[k], dtype=float) for k in f.files}
        else:
            table = np.genfromtxt(path, delimiter=",", names=True)
            columns = {k: np.asarray(table[k], dtype=float) for k in table.dtype.names}
        if labels is None:
            raise MbdjaxError("fit: with a data file, name the outputs by coordinate so the columns can be matched.")
        missing = [c for c in ("t", *labels) if c not in columns]
        if missing:
            raise MbdjaxError(f"fit: the data file {path!r} has no columns {missing}; it has {sorted(columns)}.")
        t, y = columns["t"], np.stack([columns[c] for c in labels], axis=1)
    elif isinstance(data, dict):
        if "t" not in data or "y" not in data:
            raise MbdjaxError(f"fit: data must have keys 't' and 'y', got {sorted(data)}.")
        t, y = np.asarray(data["t"], dtype=float), np.asarray(data["y"], dtype=float)
    else:
        try:
            t, y = (np.asarray(a, dtype=float) for a in data)
        except (TypeError, ValueError):
            raise MbdjaxError("fit: data must be {'t': times, 'y': values}, a (t, y) pair, or a CSV/NPZ path.") from None
    y = y[:, None] if y.ndim == 1 else y
    if t.ndim != 1 or y.ndim != 2 or y.shape[0] != t.shape[0]:
        raise MbdjaxError(f"fit: data times (shape {t.shape}) and values (shape {y.shape}) do not match; "
                          "give t (T,) and y (T,) or (T, k).")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(y))):
        rows = sorted(set(np.argwhere(~np.isfinite(y))[:, 0].tolist()) | set(np.flatnonzero(~np.isfinite(t)).tolist()))
        raise MbdjaxError(f"fit: the data has non-finite entries (rows {rows[:5]}{'…' if len(rows) > 5 else ''}); "
                          "drop or fill them.")
    if np.any(np.diff(t) <= 0):
        raise MbdjaxError("fit: the measurement times must be strictly increasing.")
    return t, y


# ----------------------------------------------------------------------- transforms
def _transform(bounds, names, values):
    """Per-parameter `(to_free(θ), from_free(z))` maps from `bounds` (checked against
    the names and the start values), and the hashable bound kinds they were made of."""
    bounds = dict(bounds or {})
    unknown = sorted(set(bounds) - set(names))
    if unknown:
        raise MbdjaxError(f"fit: bounds name parameters that are not free: {unknown} (free: {list(names)}).")
    kinds = []
    for name, v in zip(names, values):
        lo, hi = bounds.get(name, (None, None))
        if lo is not None and hi is not None and not lo < hi:
            raise MbdjaxError(f"fit: bounds of {name!r} must have lo < hi, got ({lo}, {hi}).")
        if (lo is not None and not v > lo) or (hi is not None and not v < hi):
            raise MbdjaxError(f"fit: the initial value {v:g} of {name!r} is not inside its bounds ({lo}, {hi}).")
        kinds.append((None if lo is None else float(lo), None if hi is None else float(hi)))
    kinds = tuple(kinds)
    return _maps(kinds) + (kinds,)


def _maps(kinds):
    """`(to_free, from_free)` for bound kinds `((lo, hi), ...)`."""

    def to_free(theta):
        out = []
        for k, (lo, hi) in enumerate(kinds):
            x = theta[k]
            if lo is not None and hi is not None:
                s = (x - lo) / (hi - lo)
                out.append(jnp.log(s) - jnp.log1p(-s))
            elif lo is not None:
                out.append(jnp.log(x - lo))
            elif hi is not None:
                out.append(jnp.log(hi - x))
            else:
                out.append(x)
        return jnp.stack(out)

    def from_free(z):
        out = []
        for k, (lo, hi) in enumerate(kinds):
            x = z[k]
            if lo is not None and hi is not None:
                out.append(lo + (hi - lo) * jax.nn.sigmoid(x))
            elif lo is not None:
                out.append(lo + jnp.exp(x))
            elif hi is not None:
                out.append(hi - jnp.exp(x))
            else:
                out.append(x)
        return jnp.stack(out)

    return to_free, from_free


# ------------------------------------------------------------------------- result
@dataclasses.dataclass(frozen=True)
class FitResult:
    """Outcome of `mbdjax.fit`.

    Attributes:
        params: the full parameter pytree with the fitted values.
        names: the free parameter names; values: `(P,)` their fitted values;
            initial: `(P,)` their starting values.
        loss: final `L`; history: `L` after every accepted step (first entry: start).
        grad_norm: `‖∇_θ L‖` at the solution (natural parameters).
        steps: optimizer steps taken; converged: the tolerance was met.
        covariance, std_errors, correlation: Gauss–Newton estimates (`(P, P)`,
            `(P,)`, `(P, P)`); `sigma2` the residual variance used. Parameters in an
            unidentifiable combination get an infinite standard error.
        singular_values: of the relative sensitivity matrix `J diag(θ)`, largest
            first; unidentifiable: the parameter combinations (`"0.71 m1 + 0.71 m2"`)
            whose singular value is below 1e-6 of the largest, i.e. the data cannot
            resolve them.
        residuals: `(T, k)` weighted residuals at the solution (multiple shooting:
            `(S, L, k)` per segment, padding zero).

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([1.0]),
        ...                 potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2, params={"k": 4.0})
        >>> ts = jnp.linspace(0.0, 2.0, 21)
        >>> res = mbd.fit(osc, {"t": ts, "y": jnp.cos(2.0 * ts)}, {"k": 3.0}, free=["k"], outputs=["x"],
        ...               q0=jnp.ones(1), qd0=jnp.zeros(1), verbose=False)
        >>> res.converged, round(float(res.params["k"]), 6), float(res.loss) < 1e-12
        (True, 4.0, True)
    """

    params: dict
    names: tuple
    values: np.ndarray
    initial: np.ndarray
    loss: float
    history: tuple
    grad_norm: float
    steps: int
    converged: bool
    covariance: np.ndarray
    std_errors: np.ndarray
    correlation: np.ndarray
    sigma2: float
    singular_values: np.ndarray
    unidentifiable: tuple
    residuals: np.ndarray

    def report(self) -> str:
        """Readable summary: estimates with standard errors, correlations, and the
        identifiability verdict."""
        lines = [f"fit: {'converged' if self.converged else 'NOT converged'} after {self.steps} steps, "
                 f"loss {self.loss:.6e}, |grad| {self.grad_norm:.2e}, residual variance {self.sigma2:.3e}"]
        width = max(len(n) for n in self.names)
        for j, n in enumerate(self.names):
            lines.append(f"  {n.ljust(width)}  {self.values[j]: .8g}  ± {self.std_errors[j]:.3g}"
                         f"  (start {self.initial[j]:.6g})")
        if len(self.names) > 1:
            off = [(abs(self.correlation[i, j]), i, j) for i in range(len(self.names)) for j in range(i)]
            c, i, j = max(off)
            lines.append(f"  largest correlation {self.correlation[i, j]:+.3f} ({self.names[i]}, {self.names[j]})")
        sv = ", ".join(f"{s:.3g}" for s in self.singular_values)
        lines.append(f"  singular values of J·diag(θ): {sv}")
        if self.unidentifiable:
            lines.append("  ! not identifiable from these data: " + "; ".join(self.unidentifiable))
        return "\n".join(lines)


def _combination(vector, names):
    order = np.argsort(-np.abs(vector))
    terms = [f"{vector[i]:+.2f} {names[i]}" for i in order if abs(vector[i]) > 0.05]
    return " ".join(terms).lstrip("+")


# ------------------------------------------------------------------------- loss
def _with_start_rows(model, q0, qd0, p0, simulate_kwargs):
    """`simulate_kwargs` with `rows=`: the independent constraint rows read once, here,
    at the starting values (`mbdjax.select_rows`), unless the caller gave them. The
    trial runs of a fit simulate inside compiled functions whose start is staged
    (the initial state an argument, a function of the free parameters, or a shooting
    segment's start), where `simulate` cannot read the rank and would guard every
    constraint solve against redundant rows: a single-shooting fit's residual and
    Jacobian on the 10-link chain took twice as long that way."""
    if "rows" in simulate_kwargs or not model.m:
        return simulate_kwargs
    rows = select_rows(model, initial_state(q0, qd0, p0)[0], simulate_kwargs.get("t0", 0.0), p0)
    return simulate_kwargs if rows is None else {**simulate_kwargs, "rows": rows}


def _outputs_at_data(model, fn, paths, q0, simulate_kwargs):
    """`outputs(theta, p0, q0_, qd0_, ts, adjoint, throw=True) -> (y (T, k), traj)`:
    the outputs at the data times for free parameter values `theta` (natural units),
    the other parameters from `p0`. The start is `(q0_, qd0_)`, or `q0(params)` when
    `q0` is a function of the parameters. One definition for the loss, the fit's
    residuals and its start check."""

    def outputs(theta, p0, q0_, qd0_, ts, adjoint, throw=True):
        p = set_values(p0, paths, theta)
        start = initial_state(q0, None, p) if callable(q0) else (q0_, qd0_)
        traj = simulate(model, *start, t1=ts[-1], saveat=ts, params=p, adjoint=adjoint, throw=throw,
                        **simulate_kwargs)
        y = jnp.asarray(fn(traj), dtype=float)
        return (y[:, None] if y.ndim == 1 else y), traj

    return outputs


def fit_loss(model, data, params0=None, *, free, outputs, q0, qd0, weights=None, adjoint=None,
             **simulate_kwargs):
    """The loss `L(θ) = ½ Σ (w (y(θ) − d))²` that `fit` minimizes, as a JAX function
    of the free parameter vector (natural units, in the order of `free`), with its
    starting value: `(L, θ0)`. `adjoint` is any diffrax adjoint (default recursive
    checkpointing, for `jax.grad`; `diffrax.ForwardMode()` for `jax.jacfwd`).

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([1.0]),
        ...                 potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2, params={"k": 4.0})
        >>> import jax
        >>> ts = jnp.linspace(0.0, 2.0, 21)
        >>> L, theta0 = mbd.fit_loss(osc, {"t": ts, "y": jnp.cos(2.0 * ts)}, {"k": 3.0}, free=["k"],
        ...                          outputs=["x"], q0=jnp.ones(1), qd0=jnp.zeros(1))
        >>> float(L(jnp.array([4.0]))) < 1e-12, float(jax.grad(L)(theta0)[0]) < 0.0
        (True, True)
    """
    p0 = float_params(model, params0, "fit_loss")
    simulate_kwargs = _with_start_rows(model, q0, qd0, p0, simulate_kwargs)
    paths = resolve_names(p0, free, "fit_loss")
    fn, labels = output_function(model, outputs)
    t_data, y_data = load_data(data, labels)
    ts, d = jnp.asarray(t_data), jnp.asarray(y_data)
    w = jnp.ones_like(d) if weights is None else jnp.broadcast_to(jnp.asarray(weights, dtype=float), d.shape)
    adjoint = diffrax.RecursiveCheckpointAdjoint() if adjoint is None else adjoint

    outputs_at = _outputs_at_data(model, fn, paths, q0, simulate_kwargs)

    def L(theta):
        r = w * (outputs_at(theta, p0, q0, qd0, ts, adjoint)[0] - d)
        return 0.5 * jnp.sum(r * r)

    return L, get_values(p0, paths)


# ------------------------------------------------------------- compiled pieces
_COMPILED = CompiledCache(16)


def _single_shooting(model, fn, outputs, paths, kinds, q0, simulate_kwargs):
    """Jitted `residual(z, args)` and `(residual, Jacobian)(z, args)` of a single-shooting
    fit, `args = (p0, q0, qd0, ts, d, w)`. They are kept (16 at most) per model, outputs,
    free parameters, bounds and simulate settings, so repeated fits (new data, new
    start, Monte-Carlo draws) reuse the compilation."""
    forward = diffrax.ForwardMode()

    def build():
        _, from_free = _maps(kinds)
        outputs_at = _outputs_at_data(model, fn, paths, q0, simulate_kwargs)

        def residual(z, args):
            p0, q0_, qd0_, ts, d, w = args
            # A failed run (trial parameters far off) gives NaN residuals: LM rejects the step.
            y, traj = outputs_at(from_free(z), p0, q0_, qd0_, ts, forward, throw=False)
            return (w * (jnp.where(traj.success, y, jnp.nan) - d)).reshape(-1)

        return jax.jit(residual), jax.jit(lambda z, args: (residual(z, args), jax.jacfwd(residual)(z, args)))

    try:
        settings = tuple(sorted(simulate_kwargs.items()))
    except TypeError:   # settings that cannot be ordered: compile for this fit only
        return build()
    # Names as a tuple: a list of names kept as given would make the key unhashable,
    # and every fit compile anew.
    if callable(outputs):
        named = id(outputs)
    else:
        named = (outputs,) if isinstance(outputs, str) else tuple(outputs)
    key = (id(model), named, paths, kinds, id(q0) if callable(q0) else None, settings)
    return _COMPILED.get(key, (model, outputs, q0), build)


def trial_max_steps(start_steps: int) -> int:
    """The step limit of a fit's trial simulations when the user gives none: 16× the
    steps the start needed, rounded up to a power of two, between 4096 and 131 072."""
    return int(min(max(4096, 2 ** int(np.ceil(np.log2(16 * max(int(start_steps), 1))))), 131_072))


# ------------------------------------------------------------------ optimizer
def _levenberg_marquardt(residual, residual_and_jacobian, z, steps, tol, verbose, log_every, check):
    """Levenberg–Marquardt with Marquardt's diagonal scaling on `½‖r(z)‖²`; returns
    `(z, r, J, history, converged, steps)`. A trial whose simulation fails counts as a
    rejected step."""
    r, J = residual_and_jacobian(z)
    check(J, z)
    loss = 0.5 * float(r @ r)
    history = [loss]
    converged = False
    mu = 1e-3
    k = 0
    for k in range(1, int(steps) + 1):
        g = J.T @ r
        A = J.T @ J
        D = jnp.diag(jnp.maximum(jnp.diag(A), 1e-12 * jnp.max(jnp.diag(A)) + 1e-300))
        accepted = finite_trial = False
        for _ in range(30):
            dz = -jnp.linalg.solve(A + mu * D, g)
            try:
                r_new = residual(z + dz)
                loss_new = 0.5 * float(r_new @ r_new)
            except (RuntimeError, ValueError):   # the trial made the simulation fail: a shorter step
                loss_new = np.inf
            finite_trial = finite_trial or bool(np.isfinite(loss_new))
            if np.isfinite(loss_new) and loss_new <= loss:
                accepted = True
                break
            mu *= 10.0
        if not accepted:   # no decrease even with heavy damping: at a minimum (to round-off)
            converged = finite_trial
            break
        small_step = float(jnp.max(jnp.abs(dz) / (jnp.abs(z) + 1e-12))) <= tol
        small_drop = (loss - loss_new) <= tol * max(loss, 1e-300)
        z = z + dz
        mu = max(mu / 3.0, 1e-12)
        r, J = residual_and_jacobian(z)
        check(J, z)
        loss = 0.5 * float(r @ r)
        history.append(loss)
        if verbose and (k % max(int(log_every), 1) == 0):
            print(f"fit step {k}: loss {loss:.6e}, |grad| {float(jnp.linalg.norm(J.T @ r)):.3e}")
        if (small_step and small_drop) or loss == 0.0:
            converged = True
            break
    return z, r, J, history, converged, k


# ---------------------------------------------------------------------------- fit
def fit(model, data, params0=None, *, free: Sequence[str], outputs, q0, qd0, weights=None, bounds=None,
        optimizer=None, steps=100, tol=1e-10, shooting_segments=1, continuity_weight=1e3, verbose=True,
        log_every=10, **simulate_kwargs) -> FitResult:
    """Fit free parameters of `model` to a measured trajectory by weighted least squares.

    Arguments:
        model: a `mbdjax.Model`.
        data: measurements: `{"t": (T,), "y": (T,) or (T, k)}`, a `(t, y)` pair, or a
            CSV (header row) / NPZ file with a column `"t"` and one per output.
        params0: starting parameter pytree (default `model.params`); the parameters
            not named in `free` stay at these values.
        free: dotted names of the scalar parameters to fit (`"crank.mass"`).
        outputs: coordinate names, or `fn(traj) -> (T,)` / `(T, k)` of the Trajectory.
        q0, qd0: the initial state (held fixed), or `q0=fn(params) -> (q0, qd0)`
            (`qd0=None`) when it depends on the parameters (a re-assembled
            mechanism); with multiple shooting it gives the first segment's start.
        weights: None (unweighted; σ² estimated from the residuals), a scalar, or
            `(T, k)` / `(k,)` weights, typically 1/standard deviation of each value.
        bounds: `{name: (lo, hi)}` with None for an open end, by smooth
            reparametrisation (log for one-sided, logistic for two-sided bounds).
        optimizer: None for Levenberg–Marquardt, or an optax `GradientTransformation`
            (then `steps` gradient steps on the loss, in the reparametrised variables).
        steps: iteration limit; tol: stop when the relative decrease of the loss and
            the relative step are both below it.
        shooting_segments: `S > 1` cuts the horizon into S segments whose initial
            states are fitted too, joined by continuity defects weighted
            `continuity_weight` (multiple shooting, `mbdjax._identify.shooting`): long or
            chaotic horizons stay trainable. Levenberg–Marquardt only.
        verbose: print a log line every `log_every` steps (loss, gradient norm).
        simulate_kwargs: passed to `simulate` (t0, formulation, solver, rtol, atol, …);
            `adjoint` is chosen here (forward mode for Jacobians, recursive
            checkpointing for optax gradients). Without `max_steps`, trial
            simulations stop at 16× the steps of the starting one (a power of two,
            4096 to 131 072): a trial that far off fails fast and is rejected.

    Returns:
        A `FitResult` (fitted params, loss history, covariance, standard errors,
        correlations, identifiability; `report()` prints them).

    Raises:
        MbdjaxError: unknown free names, data that do not match the outputs or are not
            finite, bounds that exclude the start, or a non-finite Jacobian (naming
            the parameter and the first time where it is not finite).

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([1.0]),
        ...                 potential=lambda q, t, p: 0.5 * p["k"] * q[0] ** 2, params={"k": 4.0})
        >>> ts = jnp.linspace(0.0, 2.0, 21)
        >>> res = mbd.fit(osc, {"t": ts, "y": jnp.cos(2.0 * ts)}, {"k": 3.0}, free=["k"], outputs=["x"],
        ...               q0=jnp.ones(1), qd0=jnp.zeros(1), verbose=False)
        >>> res.names, round(float(res.values[0]), 6)
        (('k',), 4.0)
    """
    if "adjoint" in simulate_kwargs or "throw" in simulate_kwargs:
        raise MbdjaxError("fit: the adjoint and failure handling are chosen by the optimizer; do not pass "
                          "`adjoint=` or `throw=`.")
    problem = _problem(model, data, params0, free, outputs, q0, qd0, weights, bounds, simulate_kwargs)
    S = int(shooting_segments)
    if S < 1 or S > problem.ts.shape[0]:
        raise MbdjaxError(f"fit: shooting_segments must be between 1 and the number of data times "
                          f"({problem.ts.shape[0]}), got {shooting_segments}.")
    if S > 1 and optimizer is not None:
        raise MbdjaxError("fit: multiple shooting (shooting_segments > 1) uses Levenberg–Marquardt; "
                          "leave optimizer=None.")
    residual, residual_and_jacobian, stages, rows, z = _residuals(problem, outputs, S, continuity_weight)
    check_jacobian = _jacobian_check(problem, S)
    if optimizer is None:
        history, n_steps = [], 0
        for rho in stages:      # continuity weight raised in stages (multiple shooting)
            z, r, J, hist, converged, k = _levenberg_marquardt(
                lambda zz: residual(zz, rho), lambda zz: residual_and_jacobian(zz, rho), z, steps, tol,
                verbose, log_every, check_jacobian)
            history += hist if not history else hist[1:]
            n_steps += k
    else:
        z, history, converged, n_steps = _optax_steps(problem, optimizer, z, steps, tol, verbose, log_every,
                                                      lambda zz: check_jacobian(residual_and_jacobian(zz, 1.0)[1], zz))
        r, J = residual_and_jacobian(z, 1.0)
        check_jacobian(J, z)
    return _result(problem, z, r, J, S, rows, weights is None, history, n_steps, converged)


@dataclasses.dataclass(frozen=True)
class _Problem:
    """A fit's inputs, normalised: the model and its start, the free parameters and their
    reparametrisation, the outputs and the data on their times, the weights and the
    simulation settings of the trial runs."""

    model: object
    p0: dict
    q0: object
    qd0: object
    paths: tuple
    names: tuple
    fn: object                 # outputs: fn(traj) -> (T, k)
    ts: jax.Array              # (T,) data times
    d: jax.Array               # (T, k) data
    w: jax.Array               # (T, k) weights
    theta0: np.ndarray         # (P,) start values of the free parameters
    to_free: object
    from_free: object
    kinds: tuple
    simulate_kwargs: dict

    @property
    def P(self):
        return len(self.names)


def _problem(model, data, params0, free, outputs, q0, qd0, weights, bounds, simulate_kwargs):
    """The `_Problem` of a fit, every input checked (`MbdjaxError` naming the part), and
    the trial runs' step limit set from the start's run."""
    p0 = float_params(model, params0, "fit")
    simulate_kwargs = _with_start_rows(model, q0, qd0, p0, simulate_kwargs)
    paths = resolve_names(p0, free, "fit")
    names = tuple(path_name(p) for p in paths)
    fn, labels = output_function(model, outputs)
    t_data, y_data = load_data(data, labels)
    theta0 = np.asarray(get_values(p0, paths))
    to_free, from_free, kinds = _transform(bounds, names, theta0)
    ts = jnp.asarray(t_data)
    d = jnp.asarray(y_data)
    if weights is None:
        w = jnp.ones_like(d)
    else:
        w = jnp.broadcast_to(jnp.asarray(weights, dtype=float), d.shape)
        if not bool(jnp.all(jnp.isfinite(w)) & jnp.all(w >= 0)):
            raise MbdjaxError("fit: weights must be finite and non-negative.")
    y_start, traj = _outputs_at_data(model, fn, paths, q0, simulate_kwargs)(jnp.asarray(theta0), p0, q0, qd0, ts,
                                                                           diffrax.ForwardMode())
    if "max_steps" not in simulate_kwargs:
        # A trial far off (a stiff or singular motion) fails fast instead of running
        # the default 100 000 steps: 16× the start's steps, a power of two (so that
        # fits from nearby starts share the compilation), at least 4096.
        simulate_kwargs = {**simulate_kwargs, "max_steps": trial_max_steps(int(np.sum(np.asarray(traj.num_steps))))}
    if y_start.shape != d.shape:
        raise MbdjaxError(f"fit: the outputs have shape {tuple(y_start.shape)} at the data times but the data "
                          f"values have shape {tuple(d.shape)}; give one data column per output.")
    return _Problem(model, p0, q0, qd0, paths, names, fn, ts, d, w, theta0, to_free, from_free, kinds,
                    simulate_kwargs)


def _residuals(problem, outputs, S, continuity_weight):
    """`(residual(z, ρ), residual_and_jacobian(z, ρ), stages of ρ, (rows of data,
    values of data), z0)`: single shooting over the whole horizon, or `S` segments whose
    starts join `z` and whose continuity defects weigh `ρ` (raised in stages up to
    `continuity_weight`)."""
    pb = problem
    z0 = pb.to_free(jnp.asarray(pb.theta0))
    if S > 1:
        shoot, shoot_jac, initial_states, n_rows, n_real = shooting_residual(
            pb.model, pb.fn, pb.p0, pb.paths, pb.from_free, pb.P, pb.q0, pb.qd0,
            np.asarray(pb.ts), pb.d, pb.w, S, pb.simulate_kwargs.get("t0", 0.0), diffrax.ForwardMode(),
            {k: v for k, v in pb.simulate_kwargs.items() if k != "t0"})
        target = float(continuity_weight)
        if not target > 0:
            raise MbdjaxError(f"fit: continuity_weight must be positive, got {continuity_weight}.")
        stages = [min(10.0 ** k, target) for k in range(int(np.ceil(np.log10(max(target, 1.0)))) + 1)]
        z0 = jnp.concatenate([z0, initial_states(jnp.asarray(pb.theta0))])
        return jax.jit(shoot), jax.jit(shoot_jac), stages, (n_rows, n_real), z0
    single, both = _single_shooting(pb.model, pb.fn, outputs, pb.paths, pb.kinds, pb.q0, pb.simulate_kwargs)
    args = (pb.p0, None if callable(pb.q0) else jnp.asarray(pb.q0, dtype=float),
            None if callable(pb.q0) else jnp.asarray(pb.qd0, dtype=float), pb.ts, pb.d, pb.w)
    n = int(pb.d.size)
    return (lambda z, rho: single(z, args)), (lambda z, rho: both(z, args)), [1.0], (n, n), z0


def _jacobian_check(problem, S):
    """`check(J, z)`: a `MbdjaxError` naming the parameter (or the shooting segment)
    and the first data time whose sensitivity is not finite."""
    pb = problem

    def check(J, z):
        bad = ~np.isfinite(np.asarray(J))
        if bad.any():
            row, col = np.argwhere(bad)[0]
            if col >= pb.P:
                seg = 1 + (col - pb.P) // (2 * pb.model.n)
                raise MbdjaxError(f"fit: the gradient with respect to the initial state of shooting segment "
                                  f"{seg} is not finite; use fewer segments or a tighter rtol.")
            where = (f"from t = {float(pb.ts[row // pb.d.shape[1]]):.6g} on " if S == 1 else "")
            raise MbdjaxError(
                f"fit: the gradient with respect to {pb.names[col]!r} is not finite {where}"
                f"(at {pb.names[col]} = {float(pb.from_free(z[:pb.P])[col]):.6g}); the motion is singular there "
                "or the parameter left its physical range (give bounds=)."
            )

    return check


def _optax_steps(problem, optimizer, z, steps, tol, verbose, log_every, name_bad_gradient):
    """`(z, loss history, converged, steps taken)` of `steps` optax updates on the loss
    in the reparametrised variables (reverse mode, recursive checkpointing);
    `name_bad_gradient(z)` raises with the parameter and time where a gradient is not
    finite."""
    import optax   # on first use: only a fit with an optax optimizer needs it

    pb = problem
    checkpoint = diffrax.RecursiveCheckpointAdjoint()
    outputs_at = _outputs_at_data(pb.model, pb.fn, pb.paths, pb.q0, pb.simulate_kwargs)

    @jax.jit
    def loss_value(zz):
        rr = (pb.w * (outputs_at(pb.from_free(zz), pb.p0, pb.q0, pb.qd0, pb.ts, checkpoint)[0] - pb.d)).reshape(-1)
        return 0.5 * rr @ rr

    # A line search (optax.lbfgs) differentiates `value_fn` itself, so it gets the
    # plain loss, not a function that already holds a gradient computation.
    loss_and_grad = jax.jit(jax.value_and_grad(loss_value))
    optimizer = optax.with_extra_args_support(optimizer)

    @jax.jit
    def update(z, state, loss, g):
        # One compiled step: a line search's trial evaluations compile with it
        # instead of being traced anew at every step.
        updates, state = optimizer.update(g, state, z, value=loss, grad=g, value_fn=loss_value)
        z_new = optax.apply_updates(z, updates)
        return (z_new, state, *loss_and_grad(z_new))

    state = optimizer.init(z)
    loss, g = loss_and_grad(z)
    history = [float(loss)]
    converged, n_steps = False, 0
    for n_steps in range(1, int(steps) + 1):
        if not np.all(np.isfinite(np.asarray(g))):
            name_bad_gradient(z)      # forward mode names the parameter and time
            raise MbdjaxError("fit: the loss gradient is not finite (reverse mode) although the forward "
                              "sensitivities are; try the default optimizer or a tighter rtol.")
        z_new, state, loss_new, g = update(z, state, loss, g)
        drop = float(loss) - float(loss_new)
        z, loss = z_new, loss_new
        history.append(float(loss))
        if verbose and (n_steps % max(int(log_every), 1) == 0):
            print(f"fit step {n_steps}: loss {float(loss):.6e}, |grad| {float(jnp.linalg.norm(g)):.3e}")
        if abs(drop) <= tol * max(float(loss), 1e-300):
            converged = True
            break
    return z, history, converged, n_steps


def _result(problem, z, r, J, S, rows, unweighted, history, n_steps, converged):
    """The `FitResult` at the solution `z` with residuals `r` and Jacobian `J`: the
    covariance from the Gauss–Newton Hessian (σ² estimated from the residuals when
    unweighted), standard errors, correlations and the parameter combinations the
    data do not determine."""
    pb, P = problem, problem.P
    n_rows, N = rows
    # The Jacobian in the natural parameters by the chain rule through the
    # (diagonal) reparametrisation: J_θ = J_z / (dθ/dz).
    theta = pb.from_free(z[:P])
    slope = np.asarray(jnp.diag(jax.jacfwd(pb.from_free)(z[:P])))
    r = np.asarray(r)
    slope = np.where(slope == 0, np.finfo(float).tiny, slope)     # a parameter pinned at its bound
    J = np.asarray(J)
    Jn = J[:, :P] / slope[None, :]
    if S > 1:
        # The segment states are nuisance parameters: keep the part of the parameter
        # sensitivities they cannot absorb (the θ block of the joint covariance).
        U_y, s_y, _ = np.linalg.svd(J[:, P:], full_matrices=False)
        U_y = U_y[:, s_y > 1e-10 * max(float(s_y[0]), 1e-300)]
        Jn = Jn - U_y @ (U_y.T @ Jn)
    loss = 0.5 * float(r @ r)
    sigma2 = (2 * 0.5 * float(r[:n_rows] @ r[:n_rows]) / max(N - P, 1)) if unweighted else 1.0
    U, s, Vt = np.linalg.svd(Jn, full_matrices=False)
    cutoff = max(float(s[0]), 1e-300) * 1e-12
    inv_s2 = np.divide(1.0, s * s, out=np.zeros_like(s), where=s > cutoff)
    covariance = sigma2 * (Vt.T * inv_s2) @ Vt
    std = np.sqrt(np.maximum(np.diag(covariance), 0.0))
    denom = np.outer(std, std)
    correlation = np.where(denom > 0, covariance / np.where(denom > 0, denom, 1.0), 0.0)
    scaled = Jn * np.asarray(theta)[None, :]
    _, s_rel, Vt_rel = np.linalg.svd(scaled, full_matrices=False)
    weak = s_rel < IDENTIFIABILITY_TOL * max(float(s_rel[0]), 1e-300)
    unidentifiable = tuple(_combination(Vt_rel[i], pb.names) for i in np.flatnonzero(weak))
    if unidentifiable:
        std = np.where(np.isin(np.arange(P), np.flatnonzero(np.abs(Vt_rel[weak]).max(axis=0) > 0.05)),
                       np.inf, std)
    grad = (J[:, :P] / slope[None, :]).T @ r
    d = pb.d
    return FitResult(
        params=set_values(pb.p0, pb.paths, theta), names=pb.names, values=np.asarray(theta), initial=pb.theta0,
        loss=loss, history=tuple(history), grad_norm=float(np.linalg.norm(grad)), steps=int(n_steps),
        converged=bool(converged), covariance=covariance, std_errors=std, correlation=correlation,
        sigma2=float(sigma2), singular_values=s_rel, unidentifiable=unidentifiable,
        residuals=r.reshape(d.shape) if S == 1 else r[:n_rows].reshape(S, -1, d.shape[1]),
    )
