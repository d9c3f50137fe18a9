"""Formulations: how a Model becomes a first-order vector field (THEORY §5)."""

from .augmented import Augmented
from .augmented_lagrangian import AugmentedLagrangian
from .base import AbstractFormulation, resolve_formulation
from .multiplier_free import MultiplierFree
from .nullspace import NullSpace
from .quasi_velocity import QuasiVelocity

__all__ = ["AbstractFormulation", "Augmented", "AugmentedLagrangian", "MultiplierFree", "NullSpace", "QuasiVelocity", "resolve_formulation"]
