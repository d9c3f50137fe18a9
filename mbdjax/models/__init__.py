"""The model zoo: each standard system written once, shared by the CLI, the
experiments, the tests and the benchmark.

Every function returns an `Example` (model, consistent initial state, end time, and
the planar or spatial `Mechanism` or the `Network` it was built from, None for
generic Models). `EXAMPLES` maps the CLI names to
zero-argument constructors; `get(name)` builds one.

    >>> from mbdjax import models
    >>> ex = models.get("double-pendulum")
    >>> ex.model.coordinates[:3]
    ('link1.x', 'link1.y', 'link1.phi')
"""

from __future__ import annotations

from .._errors import ModelError
from ._example import Example as Example
from ._elliptic import elliptic_pendulum as elliptic_pendulum
from ._four_bar import four_bar as four_bar, massless_link_four_bar as massless_link_four_bar
from ._four_bar import parallelogram_redundant as parallelogram_redundant
from ._rolling_disk import rolling_disk as rolling_disk
from ._networks import common_emitter as common_emitter, dc_motor_crank as dc_motor_crank, rlc as rlc
from ._networks import diode_rectifier as diode_rectifier, stick_slip as stick_slip
from ._spatial import disk as disk, heavy_top as heavy_top, quasi_velocities as quasi_velocities
from ._spatial import rolling_hemisphere as rolling_hemisphere
from ._andrews import andrews as andrews
from ._iftomm import bricard as bricard, n_four_bar as n_four_bar
from ._pendulums import double_pendulum as double_pendulum, pendulum_chain as pendulum_chain
from ._slider_crank import slider_crank as slider_crank, slider_crank_dead_centre as slider_crank_dead_centre

EXAMPLES = {
    "slider-crank": lambda: slider_crank(driven=True),
    "slider-crank-free": lambda: slider_crank(driven=False),
    "four-bar": four_bar,
    "double-pendulum": double_pendulum,
    "elliptic-pendulum": elliptic_pendulum,
    "pendulum-chain": lambda: pendulum_chain(5),
    "rolling-disk-generic": rolling_disk,
    "top": heavy_top,
    "rolling-disk": disk,
    "rolling-hemisphere": rolling_hemisphere,
    "rlc": rlc,
    "dc-motor-crank": dc_motor_crank,
    "diode-rectifier": diode_rectifier,
    "common-emitter": common_emitter,
    "stick-slip": stick_slip,
    "massless-four-bar": massless_link_four_bar,
    "parallelogram-redundant": parallelogram_redundant,
    "slider-crank-dead-centre": slider_crank_dead_centre,
    "n-four-bar": n_four_bar,
    "bricard": bricard,
    "andrews": andrews,
}


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
    "EXAMPLES", "Example", "andrews", "bricard", "dc_motor_crank", "disk", "double_pendulum", "elliptic_pendulum", "four_bar", "get", "heavy_top",
    "massless_link_four_bar", "n_four_bar", "parallelogram_redundant", "pendulum_chain", "quasi_velocities", "rlc", "diode_rectifier", "common_emitter", "stick_slip", "rolling_disk",
    "rolling_hemisphere", "slider_crank", "slider_crank_dead_centre",
]
