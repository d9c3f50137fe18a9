"""Multi-domain networks in one effort/flow representation (Fabien; THEORY §7).

`Network` nodes and elements of the translational, rotational, electrical and fluid
domains compile into the same constrained Lagrangian `mbdjax.Model`, alone or coupled
to a mechanism (`Network.build(mechanism=model, attach={node: coordinate})`).
"""

from ._network import DOMAINS as DOMAINS, GROUND as GROUND, Network as Network
from ._laws import integral_of as integral_of

__all__ = ["DOMAINS", "GROUND", "Network", "integral_of"]
