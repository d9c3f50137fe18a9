"""The `Example` record of the model zoo."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the zoo's catalogue is read without starting JAX
    import jax


@dataclasses.dataclass(frozen=True, eq=False)
class Example:
    """A standard system ready to simulate.

    Attributes:
        name: the CLI name (`"slider-crank"`, ...).
        description: one paragraph: the system, its values and units, the source.
        model: the `mbdjax.Model`.
        q0, qd0: `(n,)` consistent initial state at `t = 0`: `Φ(q0, 0) = 0` and
            `Φ_q q̇0 = ν` to about 1e-12.
        t1: a sensible end time (s) for a demonstration run.
        mechanism: the `mbdjax.planar.Mechanism` the model was built from (None for
            models from other front ends).
        options: keyword arguments for `mbdjax.simulate` that suit this system (a
            circuit's `atol` in coulombs), used by `mbdjax run`.

    Example:

        >>> from mbdjax import models
        >>> ex = models.get("four-bar")
        >>> ex.name, ex.model.n, ex.q0.shape, ex.t1
        ('four-bar', 9, (9,), 2.0)
    """

    name: str
    description: str
    model: Any
    q0: jax.Array
    qd0: jax.Array
    t1: float
    mechanism: Any = None
    options: dict = dataclasses.field(default_factory=dict)

    def assembly(self, *held):
        """`fn(params) -> (q0, qd0)`: the example re-assembled for other parameter values
        (link lengths, joint locations) with the named coordinates kept at their
        initial values and rates (`mbdjax.initial_conditions`, differentiable), for
        `q0=fn` in `simulate`-based studies (`sensitivity`, `fit`).

        Example:

            >>> from mbdjax import models
            >>> ex = models.get("four-bar")
            >>> q0, qd0 = ex.assembly("crank.phi")(ex.model.params)
            >>> bool(abs(q0 - ex.q0).max() < 1e-10)
            True
        """
        from .._initial import initial_conditions   # on first use: `mbdjax list` loads this module, not JAX

        index = [self.model.index(name) for name in held]
        fix_q = {name: float(self.q0[i]) for name, i in zip(held, index)}
        fix_qd = {name: float(self.qd0[i]) for name, i in zip(held, index)}

        def assemble(params):
            return initial_conditions(self.model, self.q0, fix_q=fix_q, fix_qd=fix_qd, params=params)

        return assemble
