"""The model zoo: each standard system written once, shared by the CLI, the
experiments, the tests and the benchmark.

Every function returns an `Example` (model, consistent initial state, end time, and
the planar or spatial `Mechanism` or the `Network` it was built from, None for
generic Models). `EXAMPLES` maps the CLI names to
zero-argument constructors; `get(name)` builds one. `FACTS` holds each example's
coordinate and constraint counts and description, known without building it (what
`mbdjax list` prints); a builder's module is imported only when its example is built.

    >>> from mbdjax import models
    >>> ex = models.get("double-pendulum")
    >>> ex.model.coordinates[:3]
    ('link1.x', 'link1.y', 'link1.phi')
"""

from __future__ import annotations

import importlib

from .._errors import ModelError
from ._catalogue import BUILDERS as _BUILDERS, FACTS as FACTS, builder as _builder
from ._example import Example as Example

#: CLI name -> zero-argument constructor; a builder's module (and its front end) is
#: imported only when the example is built.
EXAMPLES = {name: _builder(name) for name in _BUILDERS}

# The builder functions, importable as `models.four_bar` etc. without importing every
# front end with the package.
_FUNCTIONS = {
    "andrews": "_andrews", "bricard": "_iftomm", "common_emitter": "_networks", "dc_motor_crank": "_networks",
    "diode_rectifier": "_networks", "disk": "_spatial", "double_pendulum": "_pendulums",
    "elliptic_pendulum": "_elliptic", "four_bar": "_four_bar", "heavy_top": "_spatial",
    "massless_link_four_bar": "_four_bar", "n_four_bar": "_iftomm", "parallelogram_redundant": "_four_bar",
    "pendulum_chain": "_pendulums", "quasi_velocities": "_spatial", "rlc": "_networks",
    "rolling_disk": "_rolling_disk", "rolling_hemisphere": "_spatial", "slider_crank": "_slider_crank",
    "slider_crank_dead_centre": "_slider_crank", "stick_slip": "_networks",
}


def __getattr__(name):
    if name in _FUNCTIONS:
        return getattr(importlib.import_module(f"{__name__}.{_FUNCTIONS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_FUNCTIONS))


_BUILT: dict[str, Example] = {}


def get(name: str) -> Example:
    """The example called `name` (a key of `EXAMPLES`), built once per process (an
    `Example` and its Model are immutable, so every caller may share it).

    Raises:
        ModelError: for an unknown name, listing the available ones.

    Example:

        >>> from mbdjax import models
        >>> models.get("double-pendulum").model.n
        6
    """
    try:
        make = EXAMPLES[name]
    except (KeyError, TypeError):
        raise ModelError(f"models.get: no example named {name!r}; available: {sorted(EXAMPLES)}.") from None
    if name not in _BUILT:
        _BUILT[name] = make()
    return _BUILT[name]


__all__ = [
    "EXAMPLES", "Example", "FACTS", "andrews", "bricard", "dc_motor_crank", "disk", "double_pendulum", "elliptic_pendulum", "four_bar", "get", "heavy_top",
    "massless_link_four_bar", "n_four_bar", "parallelogram_redundant", "pendulum_chain", "quasi_velocities", "rlc", "diode_rectifier", "common_emitter", "stick_slip", "rolling_disk",
    "rolling_hemisphere", "slider_crank", "slider_crank_dead_centre",
]
