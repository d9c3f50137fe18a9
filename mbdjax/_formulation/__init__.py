"""Formulations: how a Model becomes a first-order vector field (THEORY §5)."""

from .augmented import Augmented
from .base import AbstractFormulation, resolve_formulation

__all__ = ["AbstractFormulation", "Augmented", "resolve_formulation"]
