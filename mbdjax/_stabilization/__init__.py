"""Constraint stabilization: what keeps an integrated motion on Φ = 0, B q̇ = b.

The name registry lives here, above the stabilizations, so that the interface
(`base`) does not import its own subclasses.
"""

from .._errors import SimulationError
from .base import AbstractStabilization, NoStabilization
from .baumgarte import Baumgarte
from .projection import Projection

__all__ = ["AbstractStabilization", "NoStabilization", "Baumgarte", "Projection", "resolve_stabilization"]

#: name accepted by `simulate(stabilization=...)` -> stabilization class
_REGISTRY = {"none": NoStabilization, "baumgarte": Baumgarte, "projection": Projection}


def resolve_stabilization(stabilization):
    """Turn a name (`"none"`, `"baumgarte"`, `"projection"`) or object into a module."""
    if isinstance(stabilization, AbstractStabilization):
        return stabilization
    if stabilization is None:
        return NoStabilization()
    if isinstance(stabilization, str) and stabilization.lower() in _REGISTRY:
        return _REGISTRY[stabilization.lower()]()
    raise SimulationError(
        f"simulate: unknown stabilization {stabilization!r}; use one of {sorted(_REGISTRY)} "
        "or an instance such as mbdjax.Baumgarte(alpha=5.0, beta=5.0)."
    )
