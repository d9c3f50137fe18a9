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

import jax.numpy as jnp

from ._errors import MbdjaxError
from ._trajectory import flatten_params

_INDEX = re.compile(r"^(.*)\[(\d+)\]$")


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
