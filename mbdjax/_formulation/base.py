"""The formulation interface and its name registry."""

from __future__ import annotations

import abc
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from .._errors import SimulationError


class AbstractFormulation(eqx.Module):
    """Turns a Model into a first-order vector field (THEORY §5).

    One abstract method: `accelerations(model, q, qd, t, p, stabilization) -> (qdd,
    lam)`, `qdd` shape `(n,)`, `lam` shape `(m,)` or None. The state handling below
    defaults to the flat state `y = [q; q̇]`; a formulation with another state (the
    quasi-velocities' `[q; u]`) overrides `initial_state`, `vector_field`, `project`
    and `outputs_from_state`.
    """

    #: Stabilizations this formulation cannot use (documented, warned about, ignored).
    ignores: ClassVar[tuple] = ()
    ignores_reason: ClassVar[str] = ""

    def initial_state(self, model, q0, qd0, t0, p):
        """Flat state vector at `t0`."""
        return jnp.concatenate([q0, qd0])

    def vector_field(self, model, t, y, p, stabilization):
        """`dy/dt` of the flat state."""
        n = model.n
        qdd, _ = self.accelerations(model, y[:n], y[n:], t, p, stabilization)
        return jnp.concatenate([y[n:], qdd])

    def project(self, model, t, y, p, stabilization):
        """The state mapped back onto the constraints (used with a projecting stabilization)."""
        n = model.n
        return jnp.concatenate(stabilization.project(model, y[:n], y[n:], t, p))

    def outputs_from_state(self, model, y, t, p, stabilization):
        """`(q, qd, qdd, lam, extra)` at one output time; `extra` is None or the
        formulation's own velocities (quasi-velocities `u`)."""
        n = model.n
        qdd, lam = self.outputs(model, y[:n], y[n:], t, p, stabilization)
        return y[:n], y[n:], qdd, lam, None

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
    from .quasi_velocity import QuasiVelocity

    return {"augmented": Augmented, "multiplier_free": MultiplierFree, "quasi_velocity": QuasiVelocity}


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
