"""The energy domains of a network and its reference node.

Shared by the builder (`_network`), its checks (`_validate`, `_structure`) and its
compiler (`_compile`), which all need them and none of which should import another
only for these constants.
"""

GROUND = "ground"
"""The built-in node every domain is measured against (electrical ground, the fixed
frame, atmospheric pressure): its effort, or its displacement, is zero."""

#: domain -> (effort, flow, displacement coordinate suffix, how nodes work)
DOMAINS = {
    "translational": ("force", "velocity", "x", "node"),
    "rotational": ("torque", "angular velocity", "theta", "node"),
    "electrical": ("voltage", "current", "q", "edge"),
    "fluid": ("pressure", "volume flow", "V", "edge"),
}

#: domain -> (SI unit of its displacement coordinate (the integral of its flow), of its effort)
UNITS = {
    "translational": ("m", "N"),
    "rotational": ("rad", "N·m"),
    "electrical": ("C", "V"),
    "fluid": ("m³", "Pa"),
}
