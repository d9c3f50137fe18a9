"""Multi-domain networks in one effort/flow representation (Fabien; THEORY §7).

`Network` nodes and elements of the translational, rotational, electrical and fluid
domains compile into the same constrained Lagrangian `mbdjax.Model`, alone or coupled
to a mechanism (`Network.build(mechanism=model, attach={node: coordinate})`). The
model keeps the network's description in `Model.network` (a `NetworkPart`), from
which `effort`, `flow`, `element_power` and `power_balance` read a trajectory's node
and element efforts and flows.
"""

from ._domains import DOMAINS as DOMAINS, GROUND as GROUND
from ._network import Network as Network
from ._laws import integral_of as integral_of
from ._part import (
    Element as Element,
    NetworkPart as NetworkPart,
    effort as effort,
    element_power as element_power,
    flow as flow,
    power_balance as power_balance,
)

__all__ = ["DOMAINS", "GROUND", "Element", "Network", "NetworkPart", "effort", "element_power", "flow",
           "integral_of", "power_balance"]
