"""Formulations: how a Model becomes a first-order vector field (THEORY §5)."""

from .augmented import Augmented
from .base import AbstractFormulation, resolve_formulation
from .multiplier_free import MultiplierFree
from .quasi_velocity import QuasiVelocity

__all__ = ["AbstractFormulation", "Augmented", "MultiplierFree", "QuasiVelocity", "resolve_formulation"]
