"""Formulations: how a Model becomes a first-order vector field (THEORY §5).

The name registry lives here, above the formulations, so that the interface
(`base`) does not import its own subclasses.
"""

from .._errors import SimulationError
from .augmented import Augmented
from .augmented_lagrangian import AugmentedLagrangian
from .base import AbstractFormulation
from .greenwood import Greenwood
from .multiplier_free import MultiplierFree
from .nullspace import NullSpace
from .quasi_velocity import QuasiVelocity

__all__ = ["AbstractFormulation", "Augmented", "AugmentedLagrangian", "Greenwood", "MultiplierFree", "NullSpace",
           "QuasiVelocity", "resolve_formulation"]

#: name accepted by `simulate(formulation=...)` -> formulation class
_REGISTRY = {"augmented": Augmented, "nullspace": NullSpace, "multiplier_free": MultiplierFree,
             "quasi_velocity": QuasiVelocity, "augmented_lagrangian": AugmentedLagrangian, "greenwood": Greenwood}


def resolve_formulation(formulation):
    """Turn a name (`"augmented"`) or an instance into a formulation module."""
    if isinstance(formulation, AbstractFormulation):
        return formulation
    if isinstance(formulation, str) and formulation.lower() in _REGISTRY:
        return _REGISTRY[formulation.lower()]()
    raise SimulationError(
        f"simulate: unknown formulation {formulation!r}; available: {sorted(_REGISTRY)}."
    )
