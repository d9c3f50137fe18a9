"""What every front-end builder shares: checked conversion of user input, problems
collected and reported together at `build()`, and part-name rules."""

from __future__ import annotations

import numpy as np


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
    """Evaluate a user function once; a problem string (raised, or the wrong shape) or None."""
    import jax.numpy as jnp

    try:
        out = jnp.asarray(fn(*args), dtype=float)
    except Exception as err:  # noqa: BLE001 - reported with context
        return f"{label} raised {type(err).__name__}: {err}"
    if out.shape != shape:
        return f"{label} returned shape {out.shape}; it must return {unit} of shape {shape}."
    return None
