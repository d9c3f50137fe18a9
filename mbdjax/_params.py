"""Naming scalar parameters by dotted paths (`"crank.mass"`, `"spring.k"`).

Parameter pytrees are nested dicts (`params["crank"]["mass"]`); studies that vary some
of them (sensitivities, fits) name them by the keys joined with dots, as
`Trajectory.save` writes them. The helpers here turn names into paths, read the values
as one vector and write a vector back, purely (the pytree is copied, never mutated).
"""

from __future__ import annotations

import jax.numpy as jnp

from ._errors import MbdjaxError
from ._trajectory import flatten_params


def scalar_names(params) -> list[str]:
    """Dotted names of every scalar leaf of `params`."""
    return [k for k, v in flatten_params(params).items() if jnp.ndim(v) == 0]


def resolve_names(params, names, who) -> tuple[tuple[str, ...], ...]:
    """Paths (tuples of keys) of the scalar parameters `names`; raises an `MbdjaxError`
    naming the unknown, repeated or non-scalar ones and listing the available names."""
    if isinstance(names, str):
        names = (names,)
    names = tuple(names)
    if not names:
        raise MbdjaxError(f"{who}: name at least one parameter (available: {scalar_names(params)}).")
    flat = flatten_params(params)
    unknown = [n for n in names if n not in flat]
    if unknown:
        raise MbdjaxError(f"{who}: unknown parameters {unknown}; the scalar parameters are "
                          f"{scalar_names(params)}.")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise MbdjaxError(f"{who}: parameters {repeated} are named more than once.")
    shaped = [f"{n} {tuple(jnp.shape(flat[n]))}" for n in names if jnp.ndim(flat[n]) != 0]
    if shaped:
        raise MbdjaxError(f"{who}: parameters {shaped} are not scalars; name scalar leaves.")
    return tuple(tuple(n.split(".")) for n in names)


def get_values(params, paths):
    """`(len(paths),)` float vector of the parameters at `paths`."""
    out = []
    for path in paths:
        node = params
        for key in path:
            node = node[key]
        out.append(jnp.asarray(node, dtype=float))
    return jnp.stack(out)


def set_values(params, paths, values):
    """A copy of `params` with the leaves at `paths` replaced by `values`."""

    def put(node, path, value):
        if not path:
            return value
        copy = dict(node)
        copy[path[0]] = put(node[path[0]], path[1:], value)
        return copy

    for k, path in enumerate(paths):
        params = put(params, path, values[k])
    return params
