"""The formulation interface and its name registry."""

from __future__ import annotations

import abc

import equinox as eqx

from .._errors import SimulationError


class AbstractFormulation(eqx.Module):
    """Turns a Model into accelerations (and multipliers where the method has them).

    One method: `accelerations(model, q, qd, t, p, stabilization) -> (qdd, lam)`,
    `qdd` shape `(n,)`, `lam` shape `(m,)` or None.
    """

    @abc.abstractmethod
    def accelerations(self, model, q, qd, t, p, stabilization):
        raise NotImplementedError

    def check_params(self, model, p, x):
        """Attach run-time checks of the parameters to `x` (once per simulation, not per
        right-hand side); returns `x`."""
        return x

    def prepare(self, model, p, q0, t0):
        """Return a version of this formulation fitted to the model and the initial
        configuration (called once per `simulate`, outside its jit boundary; `p` and
        `q0` may be traced under an enclosing transformation)."""
        return self

    def outputs(self, model, q, qd, t, p, stabilization):
        """`(qdd, lam)` reported at the output times (default: `accelerations`)."""
        return self.accelerations(model, q, qd, t, p, stabilization)

    #: Number of equations solved for the accelerations (and multipliers), for reports.
    def equation_count(self, model):
        return model.n


def _registry():
    from .augmented import Augmented
    from .multiplier_free import MultiplierFree

    return {"augmented": Augmented, "multiplier_free": MultiplierFree}


def resolve_formulation(formulation):
    """Turn a name (`"augmented"`) or an instance into a formulation module."""
    if isinstance(formulation, AbstractFormulation):
        return formulation
    reg = _registry()
    if isinstance(formulation, str) and formulation.lower() in reg:
        return reg[formulation.lower()]()
    raise SimulationError(
        f"simulate: unknown formulation {formulation!r}; available: {sorted(reg)}."
    )
