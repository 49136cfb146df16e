"""The bounds of every number in a cluster description, each with its reason (README "Limits").

``BOUNDS[key] = (low, high, reason)``: a value outside is refused with one line naming the key, the
bound and the reason (``check``). They keep every time computed from a description finite and
printable (the largest: 2^50 bytes at the slowest link, 0.1 GB/s, is 1.1e7 s) and refuse numbers no
machine has. ``low`` is exclusive where ``OPEN_LOW`` names the key.
"""
from __future__ import annotations

from collsim.errors import CollsimError, require_int, require_number

# no host holds more GPUs (an NVLink domain is described by nvlink_domain)
MAX_GPUS_PER_NODE = 1024
MAX_NODES = 1 << 16
MAX_NVLINK_DOMAIN = 1024       # NVIDIA's largest announced NVLink domain is 576 GPUs (NVL576)
MAX_NICS_PER_GPU = 8           # p5: 4 EFA NICs per GPU; more is no machine sold
BOUNDS: dict[str, tuple[float, float, str]] = {
    "nvlink_GBps": (0.1, 10_000.0,
                    "NVLink per GPU per direction: below PCIe Gen1 x1, or 10x NVLink5's 900 GB/s"),
    "pcie_GBps": (0.1, 1_000.0, "PCIe per GPU per direction: below Gen1 x1, or 8x a Gen6 x16 link"),
    "nic_Gbps": (0.1, 100_000.0,
                 "one NIC's line rate: below 100 Mb/s Ethernet, or 100x an 800 Gb/s NIC"),
    "call_us": (0.0, 1e6,
                "fixed cost per collective call: a call costing more than a second is a hang"),
    "fabric_efficiency": (0.0, 1.0, "share of the NICs' line rate the fabric delivers: 0 < x <= 1"),
}
OPEN_LOW = {"fabric_efficiency"}


def check(key: str, value) -> float:
    """``value`` of numeric ``key`` as a float within ``BOUNDS``, or one-line CollsimError."""
    low, high, why = BOUNDS[key]
    x = require_number(f"cluster {key}", value)
    if x < low or x > high or (key in OPEN_LOW and x <= low):
        side = ">" if key in OPEN_LOW else ">="
        raise CollsimError(f"cluster {key} must be {side} {low:g} and <= {high:g} ({why}), got "
                           f"{x:g}")
    return x


def check_int(key: str, value, low: int, high: int) -> int:
    """``value`` of integer ``key`` within [low, high], or one-line CollsimError."""
    return require_int(f"cluster {key}", value, low, high)
