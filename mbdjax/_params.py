"""Naming scalar parameters by dotted paths (`"crank.mass"`, `"spring.k"`).

Parameter pytrees are nested dicts (`params["crank"]["mass"]`); studies that vary some
of them (sensitivities, fits) name them by the keys joined with dots, as
`Trajectory.save` writes them, and an entry of a vector leaf by an index
(`"crank_coupler.point_i[0]"`, the x of a joint point). The helpers here turn names
into paths, read the values as one vector and write a vector back, purely (the pytree
is copied, never mutated).
"""

from __future__ import annotations

import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._errors import MbdjaxError, ParameterError
from ._tracing import device_array, is_concrete

_INDEX = re.compile(r"^(.*)\[(\d+)\]$")


def flatten_params(params) -> dict[str, Any]:
    """`{"crank.mass": value, ...}` from a nested parameter pytree (dict keys joined by dots)."""
    out = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
        parts = []
        for key in path:
            if isinstance(key, jax.tree_util.DictKey):
                parts.append(str(key.key))
            elif isinstance(key, jax.tree_util.SequenceKey):
                parts.append(str(key.idx))
            else:
                parts.append(str(getattr(key, "name", key)))
        out[".".join(parts)] = leaf
    return out


def unflatten_params(flat: dict[str, Any]) -> dict:
    """Inverse of `flatten_params` for nested dicts."""
    out: dict = {}
    for name, value in flat.items():
        node = out
        parts = name.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = jnp.asarray(value, dtype=float)
    return out


def scalar_names(params) -> list[str]:
    """Dotted names of every scalar of `params` (vector leaves entry by entry)."""
    out = []
    for k, v in flatten_params(params).items():
        if jnp.ndim(v) == 0:
            out.append(k)
        elif jnp.ndim(v) == 1:
            out += [f"{k}[{i}]" for i in range(jnp.shape(v)[0])]
    return out


def resolve_names(params, names, who) -> tuple[tuple[str, ...], ...]:
    """Paths (tuples of keys) of the scalar parameters `names`; raises an `MbdjaxError`
    naming the unknown, repeated or non-scalar ones and listing the available names."""
    if isinstance(names, str):
        names = (names,)
    names = tuple(names)
    if not names:
        raise MbdjaxError(f"{who}: name at least one parameter (available: {scalar_names(params)}).")
    available = scalar_names(params)
    unknown = [n for n in names if n not in available]
    if unknown:
        raise MbdjaxError(f"{who}: unknown parameters {unknown}; the scalar parameters are {available}.")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise MbdjaxError(f"{who}: parameters {repeated} are named more than once.")
    paths = []
    for n in names:
        match = _INDEX.match(n)
        paths.append(tuple(match.group(1).split(".")) + (int(match.group(2)),) if match else tuple(n.split(".")))
    return tuple(paths)


def path_name(path) -> str:
    """The dotted name of a path from `resolve_names`."""
    if isinstance(path[-1], int):
        return ".".join(path[:-1]) + f"[{path[-1]}]"
    return ".".join(path)


def get_values(params, paths):
    """`(len(paths),)` float vector of the parameters at `paths`."""
    out = []
    for path in paths:
        node = params
        for key in path:
            node = jnp.asarray(node)[key] if isinstance(key, int) else node[key]
        out.append(jnp.asarray(node, dtype=float))
    return jnp.stack(out)


def set_values(params, paths, values):
    """A copy of `params` with the leaves at `paths` replaced by `values`."""

    def put(node, path, value):
        if not path:
            return value
        if isinstance(path[0], int):
            return jnp.asarray(node, dtype=float).at[path[0]].set(value)
        copy = dict(node)
        copy[path[0]] = put(node[path[0]], path[1:], value)
        return copy

    for k, path in enumerate(paths):
        params = put(params, path, values[k])
    return params


def float_params(model, params, who, batched=False):
    """`checked_params`, its leaves as float arrays on the device (converted on the
    host where concrete: `mbdjax._tracing.device_array`), as every entry point that
    computes with them needs; new values then never make a new program."""
    return jax.tree_util.tree_map(device_array, checked_params(model, params, who, batched))


def checked_params(model, params, who, batched=False):
    """`params` (or `model.params` when None) after checking it against the model's
    declared parameters: the same dotted names, and each leaf of the declared shape
    (with `batched`, also that shape behind one leading batch axis).

    A model that declares no parameters accepts any pytree (its functions read what
    they need). Raises a `ParameterError` naming the missing and unknown names and the
    leaves of the wrong shape, with the expected names and shapes listed.

    Example:

        >>> import jax.numpy as jnp, mbdjax as mbd
        >>> from mbdjax._params import checked_params
        >>> osc = mbd.Model(("x",), mass_diagonal=lambda p: jnp.array([p["m"]]),
        ...                 params={"m": 1.0, "k": 4.0})
        >>> checked_params(osc, {"m": 2.0, "c": 0.1}, "simulate")
        Traceback (most recent call last):
        ...
        mbdjax._errors.ParameterError: simulate: params is missing ['k'] and has unknown names ['c']; the model's parameters are {'k': (), 'm': ()}.
    """
    if params is None:
        return model.params
    declared = flatten_params(model.params)
    if not declared:
        if is_concrete(params):
            bad = nonfinite_problems(params)
            if bad:
                raise ParameterError(f"{who}: " + "; ".join(bad) + ".")
        return params
    if not isinstance(params, dict):
        raise ParameterError(f"{who}: params must be a dict like model.params, got {type(params).__name__}; "
                             f"the model's parameters are {_shapes(declared)}.")
    given = flatten_params(params)
    missing = sorted(set(declared) - set(given))
    unknown = sorted(set(given) - set(declared))
    shapes = {}
    for name in sorted(set(declared) & set(given)):
        want, got = tuple(jnp.shape(declared[name])), tuple(jnp.shape(given[name]))
        if got != want and not (batched and len(got) == len(want) + 1 and got[1:] == want):
            shapes[name] = (got, want)
    if not (missing or unknown or shapes):
        if is_concrete(params):
            host = jax.device_get(params)               # one transfer for both checks
            outside = nonfinite_problems(host, declared if batched else None) or bound_problems(model, host)
            if outside:
                raise ParameterError(f"{who}: " + "; ".join(outside) + ".")
        return params
    parts = []
    if missing:
        parts.append(f"is missing {missing}")
    if unknown:
        parts.append(f"has unknown names {unknown}")
    if shapes:
        parts.append("has " + ", ".join(f"{k} of shape {g} instead of {w}" for k, (g, w) in shapes.items()))
    raise ParameterError(f"{who}: params " + " and ".join(parts) + f"; the model's parameters are {_shapes(declared)}.",
                         missing=missing, unknown=unknown, shapes=shapes)


def _shapes(flat):
    return {k: tuple(jnp.shape(v)) for k, v in sorted(flat.items())}


def nonfinite_problems(params, declared=None) -> list[str]:
    """`"parameter k = nan"` for every leaf of `params` (concrete) holding a NaN or an
    infinity, after one transfer of all leaves to the host; `"parameter k = nan (batch
    member 1)"` for a leaf with one more axis than its `declared` value (a dict of
    dotted name to value: the model's parameters, for a batch)."""
    out = []
    for name, value in jax.device_get(flatten_params(params)).items():
        value = np.asarray(value, dtype=float)
        if np.all(np.isfinite(value)):
            continue
        bad = value[~np.isfinite(value)].ravel()[0]
        where = ""
        if declared is not None and name in declared and value.ndim == np.ndim(declared[name]) + 1:
            member = int(np.flatnonzero(~np.all(np.isfinite(value.reshape(value.shape[0], -1)), axis=1))[0])
            where = f" (batch member {member})"
        out.append(f"parameter {name} = {bad}{where}")
    if out:
        out[-1] += ". Give finite values"
    return out


def nonfinite_entries(model, label, x) -> list[str]:
    """`"label[coordinate] = value"` for each non-finite entry of a state `x` (`(n,)`,
    or `(B, n)` with `" (batch member i)"` added), concrete values; `[]` when all are
    finite or `x` is traced."""
    if x is None or not is_concrete(x):
        return []
    x = np.asarray(x, dtype=float)
    rows = np.atleast_2d(x)
    return [f"{label}[{model.coordinates[k]}] = {rows[i, k]}" + (f" (batch member {i})" if x.ndim == 2 else "")
            for i, k in np.argwhere(~np.isfinite(rows))]


def bound_problems(model, params) -> list[str]:
    """The parameters of `params` (concrete values; a leading batch axis is allowed)
    outside the bounds the model declares (`Model(param_bounds=)`), one sentence each,
    naming the parameter, its value and what it is."""
    if not model.param_bounds:
        return []
    flat = flatten_params(params)
    problems = []
    for name, kind, what in model.param_bounds:
        if name not in flat:
            continue
        v = np.asarray(flat[name], dtype=float)
        if kind == "psd":
            if v.ndim < 2 or v.shape[-1] != v.shape[-2]:
                continue
            sym = 0.5 * (v + np.swapaxes(v, -1, -2))
            low = float(np.min(np.linalg.eigvalsh(sym)))
            scale = max(1.0, float(np.max(np.abs(v), initial=0.0)))
            if low < -1e-12 * scale:
                problems.append(f"parameter {name} ({what}) has a negative principal value {low:.3g}; it must be "
                                "positive semi-definite")
            continue
        bad = {"positive": ~(v > 0), "nonnegative": ~(v >= 0), "nonzero": ~(v != 0)}[kind]
        if np.any(bad):
            first = v[bad].ravel()[0]
            rule = {"positive": "> 0", "nonnegative": ">= 0", "nonzero": "nonzero"}[kind]
            problems.append(f"parameter {name} = {first:g} ({what}) must be {rule}")
    return problems
