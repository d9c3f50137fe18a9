"""Library exceptions. Every message names the part at fault and how to fix it."""


class MbdjaxError(Exception):
    """Base class of every error raised by mbdjax."""


class ModelError(MbdjaxError, ValueError):
    """A model (or a front end's description of one) is malformed.

    Raised at build time, after every problem found has been collected, so the
    message lists all of them at once.
    """

    def __init__(self, problems):
        if isinstance(problems, str):
            problems = [problems]
        self.problems = tuple(problems)
        if len(self.problems) == 1:
            msg = self.problems[0]
        else:
            msg = f"{len(self.problems)} problems:\n" + "\n".join(
                f"  - {p}" for p in self.problems
            )
        super().__init__(msg)


class InitialConditionError(MbdjaxError, ValueError):
    """Consistent initial conditions cannot be found from what was given."""


class ParameterError(MbdjaxError, ValueError):
    """A parameter pytree does not match the model's: missing or unknown names, or a
    leaf of the wrong shape. `missing`, `unknown` and `shapes` (`{name: (given,
    expected)}`) hold what was found."""

    def __init__(self, message, missing=(), unknown=(), shapes=None):
        self.missing = tuple(missing)
        self.unknown = tuple(unknown)
        self.shapes = dict(shapes or {})
        super().__init__(message)


class SimulationError(MbdjaxError, RuntimeError):
    """A simulation was set up with options that cannot work together, or its run
    failed. A failed run carries `reason` (`"max_steps"`, `"solver"`, `"non_finite"`,
    `"drift"`, ...), `time` (s: where it happened or how far the run got), `names`
    (the coordinates or constraint rows concerned) and, in a batch, `member` (the index
    of the first member that failed) when they are known."""

    def __init__(self, message, reason=None, time=None, names=(), member=None):
        self.reason = reason
        self.time = time
        self.names = tuple(names)
        self.member = member
        super().__init__(message)
