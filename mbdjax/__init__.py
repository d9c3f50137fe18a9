"""mbdjax: differentiable simulation of constrained dynamical systems on JAX.

Every system is a constrained Lagrangian `Model` in generalized coordinates; front
ends (`mbdjax.planar`) compile into it, formulations consume it, and `simulate` is one
pure, jit-compiled, differentiable call.

Importing mbdjax sets up JAX (float64, XLA's CPU settings) but loads the parts of the
library only when they are first used (`mbdjax.simulate`, `from mbdjax import fit`, ...),
so a command that needs none of them (`mbdjax list`) starts at once.
"""

import importlib as _importlib
import os as _os
import sys as _sys
from importlib import metadata as _metadata

from ._numerics import xla_cpu as _xla_cpu

_xla_cpu.apply()  # before JAX starts its backend: XLA reads its flags only then

# float64 throughout: through the environment when JAX is not imported yet (it reads
# the variable at import), through its config when it is.
if "jax" in _sys.modules:
    _sys.modules["jax"].config.update("jax_enable_x64", True)
else:
    _os.environ["JAX_ENABLE_X64"] = "1"

from . import _compilation_cache as _compilation_cache  # noqa: E402

_compilation_cache.apply()  # a second process reuses the programs the first compiled

from ._errors import (  # noqa: E402
    InitialConditionError as InitialConditionError,
    MbdjaxError as MbdjaxError,
    ModelError as ModelError,
    ParameterError as ParameterError,
    SimulationError as SimulationError,
)

#: public name -> the module that defines it (imported on first use)
_LAZY = {
    "Model": "._model",
    "AbstractFormulation": "._formulation", "Augmented": "._formulation",
    "AugmentedLagrangian": "._formulation", "MultiplierFree": "._formulation", "NullSpace": "._formulation",
    "QuasiVelocity": "._formulation", "Greenwood": "._formulation",
    "AbstractStabilization": "._stabilization", "Baumgarte": "._stabilization",
    "NoStabilization": "._stabilization", "Projection": "._stabilization",
    "Trajectory": "._trajectory",
    "simulate": "._integrate",
    "UnrolledRK": "._numerics.rk",
    "simulate_batch": "._batch.batch",
    "sweep": "._batch.sweep", "sweep_grid": "._batch.sweep",
    "SweepResult": "._batch.sweep_store", "load_sweep": "._batch.sweep_store",
    "kinematic_analysis": "._kinematics",
    "CheckReport": "._checks", "check": "._checks",
    "RowSelection": "._redundancy", "select_rows": "._redundancy",
    "initial_conditions": "._initial",
    "Sensitivity": "._identify.sensitivity", "sensitivity": "._identify.sensitivity",
    "FitResult": "._identify.fit", "fit": "._identify.fit", "fit_loss": "._identify.fit",
}
_RENAMED = {"xla_loop_setting": ("._numerics.xla_cpu", "loop_setting"), "xla_thread_setting": ("._numerics.xla_cpu", "thread_setting"),
            "xla_emitter_setting": ("._numerics.xla_cpu", "emitter_setting"),
            "compilation_cache_setting": ("._compilation_cache", "cache_setting"),
            "kinematics": ("._kinematics", None)}
_SUBPACKAGES = ("models", "planar", "spatial", "network", "plotting")


def __getattr__(name):
    if name in _LAZY:
        value = getattr(_importlib.import_module(_LAZY[name], __name__), name)
    elif name in _RENAMED:
        module, attr = _RENAMED[name]
        value = _importlib.import_module(module, __name__)
        value = value if attr is None else getattr(value, attr)
    elif name in _SUBPACKAGES:
        value = _importlib.import_module(f".{name}", __name__)
    elif name == "__version__":
        try:
            value = _metadata.version("mbdjax")
        except _metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
            value = "0.0.0"
    else:
        raise AttributeError(f"module 'mbdjax' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_RENAMED) | set(_SUBPACKAGES))


__all__ = sorted([*_LAZY, *_RENAMED, "InitialConditionError", "MbdjaxError", "ModelError", "ParameterError", "SimulationError"])
