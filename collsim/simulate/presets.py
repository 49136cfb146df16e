"""Preset machines for the simulator, each with the source of its figures (``Topology.source``).

``get_preset(name, nodes=None, gpus_per_node=None)``. Rules behind the numbers, so they can be checked:

* beta (bandwidth): measured-level, not raw line rate. The ring AllReduce bus
  bandwidth of the Hockney model tends to 1/beta, so an NVLink beta is the
  measured ring busbw plateau. Network links use the measured/raw ratio of
  NDR InfiniBand (46 of 50 GB/s = 0.92) for every InfiniBand speed, and an
  assumed 0.8 for Ethernet through TCP sockets (NCCL's Socket transport).
* alpha (per-message latency): the midpoint of NCCL's per-hop latencies for
  its LL and Simple protocols on that link class (NVIDIA/nccl
  src/graph/tuning.cc: NVLink 0.6 / 3.4 us, PCI 1.0 / 5.7 us, NET 2.7 / 14.0
  us); Ethernet sockets get an assumed 15 us (kernel TCP path).
These are starting points: ``collsim fit`` calibrates alpha and beta against
measurements. GB/s = 1e9 bytes/s; Gb/s = 1e9 bits/s.
"""
from __future__ import annotations

from dataclasses import replace

from collsim.errors import CollsimError
from collsim.simulate.topology import Link, Topology


_TUNING = "NCCL per-hop latency midpoint of LL and Simple (src/graph/tuning.cc)"
IB_EFFICIENCY = 46.0 / 50.0   # NDR 400 Gb/s gives 46-48 GB/s per NIC with rings (nccl.md)
ETH_EFFICIENCY = 0.8          # assumption for TCP sockets: framing, TCP/IP and copies
ALPHA_NVLINK_US = (0.6 + 3.4) / 2
ALPHA_PCI_US = (1.0 + 5.7) / 2
ALPHA_IB_US = (2.7 + 14.0) / 2
ALPHA_ETH_US = 15.0           # assumption: kernel TCP round trip on 100-400 GbE

NVLINK4 = Link.from_GBps(360.0, ALPHA_NVLINK_US)
NVLINK4_SOURCE = ("H100/H200 SXM NVLink4: raw 18 links x 26.6 GB/s = ~478 GB/s per direction; measured "
                  "ring AllReduce busbw plateaus at 350-370 GB/s on 2-8 GPUs (nccl-tests), so 360 GB/s; "
                  f"alpha {ALPHA_NVLINK_US:.2f} us = {_TUNING}")
NVLINK3 = Link.from_GBps(230.0, ALPHA_NVLINK_US)
NVLINK3_SOURCE = ("A100 SXM NVLink3: raw 12 links x 25 GB/s = 300 GB/s per direction; published nccl-tests "
                  "ring AllReduce busbw on 8 x A100 is ~230 GB/s (the same ~77% of raw as H100); "
                  f"alpha {ALPHA_NVLINK_US:.2f} us = {_TUNING}")
PCIE4 = Link.from_GBps(24.0, ALPHA_PCI_US)
PCIE4_SOURCE = ("PCIe Gen4 x16: raw 31.5 GB/s per direction; 24 GB/s assumes the ~77% of raw that NVLink "
                f"rings reach; alpha {ALPHA_PCI_US:.2f} us = {_TUNING}")


def ib(gbit: int) -> tuple[Link, str]:
    """InfiniBand link of ``gbit`` Gb/s line rate at NDR's measured efficiency."""
    gbps = gbit / 8 * IB_EFFICIENCY
    return Link.from_GBps(gbps, ALPHA_IB_US), (
        f"InfiniBand {gbit} Gb/s = {gbit / 8:g} GB/s raw x {IB_EFFICIENCY:.2f} (NDR measures 46-48 GB/s "
        f"per NIC, nccl.md) = {gbps:.3g} GB/s; alpha {ALPHA_IB_US:.2f} us = {_TUNING}")


def eth(gbit: int) -> tuple[Link, str]:
    """Ethernet link (TCP sockets) of ``gbit`` Gb/s line rate."""
    gbps = gbit / 8 * ETH_EFFICIENCY
    return Link.from_GBps(gbps, ALPHA_ETH_US), (
        f"Ethernet {gbit} Gb/s = {gbit / 8:g} GB/s raw x {ETH_EFFICIENCY} (assumed TCP socket efficiency) "
        f"= {gbps:.3g} GB/s; alpha {ALPHA_ETH_US:g} us (assumed kernel TCP latency)")


def _make() -> dict[str, Topology]:
    ib400, ib400_src = ib(400)
    ib200, ib200_src = ib(200)
    eth100, eth100_src = eth(100)
    presets = {
        "h100-nvlink": Topology(1, 8, NVLINK4, ib400, 8, "h100-nvlink",
                                f"8 x H100 SXM node (DGX H100 layout, 8 NICs). Intra: {NVLINK4_SOURCE}. "
                                f"Inter: {ib400_src}"),
        "h200-nvlink": Topology(1, 8, NVLINK4, ib400, 8, "h200-nvlink",
                                f"8 x H200 SXM node (same NVLink4 as H100, 8 NICs). Intra: {NVLINK4_SOURCE}. "
                                f"Inter: {ib400_src}"),
        "a100-nvlink": Topology(1, 8, NVLINK3, ib200, 8, "a100-nvlink",
                                f"8 x A100 SXM node (DGX A100 layout, 8 HDR NICs). Intra: {NVLINK3_SOURCE}. "
                                f"Inter: {ib200_src}"),
        "pcie-box": Topology(1, 8, PCIE4, eth100, 1, "pcie-box",
                             f"8 GPUs on PCIe Gen4 without NVLink, one 100 GbE NIC. Intra: {PCIE4_SOURCE}. "
                             f"Inter: {eth100_src}"),
    }
    for gbit in (100, 200, 400):
        for kind, make, nics, what in (("ib", ib, 8, "one NIC per GPU (rail-optimised, DGX/SuperPOD style)"),
                                       ("eth", eth, 1, "one NIC per node shared by its 8 GPUs")):
            link, src = make(gbit)
            name = f"{kind}-{gbit}g"
            presets[name] = Topology(4, 8, NVLINK4, link, nics, name,
                                     f"4 nodes of 8 H100 GPUs, {what}. Intra: {NVLINK4_SOURCE}. Inter: {src}")
    return presets


PRESETS: dict[str, Topology] = _make()


def get_preset(name: str, nodes: int | None = None, gpus_per_node: int | None = None) -> Topology:
    """Preset ``name`` resized to ``nodes`` x ``gpus_per_node`` (None keeps the preset's).

    A preset with one NIC per GPU keeps one NIC per GPU; otherwise the NIC count
    is capped at the new ``gpus_per_node``.
    """
    if name not in PRESETS:
        raise CollsimError(f"unknown topology preset {name!r} (known: {', '.join(PRESETS)})")
    base = PRESETS[name]
    nodes = base.nodes if nodes is None else nodes
    gpn = base.gpus_per_node if gpus_per_node is None else gpus_per_node
    for field, v in (("nodes", nodes), ("gpus_per_node", gpn)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise CollsimError(f"preset {name}: {field} must be an integer >= 1, got {v!r}")
    nics = gpn if base.nics_per_node == base.gpus_per_node else min(base.nics_per_node, gpn)
    return replace(base, nodes=nodes, gpus_per_node=gpn, nics_per_node=nics)
