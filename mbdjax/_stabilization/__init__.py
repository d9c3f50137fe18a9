"""Constraint stabilization: what keeps an integrated motion on Φ = 0, B q̇ = b."""

from .base import AbstractStabilization, NoStabilization, resolve_stabilization
from .baumgarte import Baumgarte
from .projection import Projection

__all__ = ["AbstractStabilization", "NoStabilization", "Baumgarte", "Projection", "resolve_stabilization"]
