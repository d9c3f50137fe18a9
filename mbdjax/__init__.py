"""mbdjax: differentiable simulation of constrained dynamical systems on JAX.

Every system is a constrained Lagrangian `Model` in generalized coordinates; front
ends (`mbdjax.planar`) compile into it, formulations consume it, and `simulate` is one
pure, jit-compiled, differentiable call.
"""

from . import _xla_cpu as _xla_cpu

_xla_cpu.apply()  # before JAX starts its backend: XLA reads its flags only then

import jax as _jax  # noqa: E402

_jax.config.update("jax_enable_x64", True)

from importlib.metadata import PackageNotFoundError as _PNF, version as _version  # noqa: E402

from ._errors import (  # noqa: E402
    InitialConditionError as InitialConditionError,
    MbdjaxError as MbdjaxError,
    ModelError as ModelError,
    SimulationError as SimulationError,
)
from ._model import Model as Model  # noqa: E402
from ._formulation import (  # noqa: E402
    AbstractFormulation as AbstractFormulation,
    Augmented as Augmented,
    AugmentedLagrangian as AugmentedLagrangian,
    MultiplierFree as MultiplierFree,
    NullSpace as NullSpace,
    QuasiVelocity as QuasiVelocity,
)
from ._stabilization import (  # noqa: E402
    AbstractStabilization as AbstractStabilization,
    Baumgarte as Baumgarte,
    NoStabilization as NoStabilization,
    Projection as Projection,
)
from ._trajectory import Trajectory as Trajectory  # noqa: E402
from ._integrate import simulate as simulate  # noqa: E402
from ._rk import UnrolledRK as UnrolledRK  # noqa: E402
from ._batch import simulate_batch as simulate_batch  # noqa: E402
from ._sweep import sweep as sweep, sweep_grid as sweep_grid  # noqa: E402
from ._sweep_store import SweepResult as SweepResult, load_sweep as load_sweep  # noqa: E402
from ._xla_cpu import loop_setting as xla_loop_setting, thread_setting as xla_thread_setting  # noqa: E402
from ._kinematics import kinematic_analysis as kinematic_analysis  # noqa: E402
from ._checks import CheckReport as CheckReport, check as check  # noqa: E402
from ._redundancy import RowSelection as RowSelection, select_rows as select_rows  # noqa: E402
from ._initial import initial_conditions as initial_conditions  # noqa: E402
from ._sensitivity import Sensitivity as Sensitivity, sensitivity as sensitivity  # noqa: E402
from ._fit import FitResult as FitResult, fit as fit, fit_loss as fit_loss  # noqa: E402
from . import _kinematics as kinematics  # noqa: E402

try:
    __version__ = _version("mbdjax")
except _PNF:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"
