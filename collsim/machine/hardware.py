"""The cited hardware tables in one place: GPUs (``collsim.machine.gpus``), networks
(``collsim.machine.networks``) and PCIe generations (``PCIE``, here), read by cluster descriptions
and the NCCL models. Units: GB/s = 1e9 bytes/s per direction, Gb/s = 1e9 bits/s, microseconds,
bytes.

Numbers measured by other people (published nccl-tests logs, maintainers' answers) are used only
where an entry says so; the calibration logs are listed in data/public/README.md: ``L01`` (1 x 8
H100 SXM, NCCL 2.26.2, NCCL_ALGO=Ring; together-nccl-tests
``benchmarks/H100/results/20260305_220043/ all_reduce_ring.out``), ``L15`` (2 x 8 H100, 8 x 400G NDR
InfiniBand per node, NCCL_ALGO=Ring, NCCL_MIN_CTAS=24; NVIDIA/nccl-tests issue 309), P02 for PCIe
(``PCIE_RING_EFFICIENCY``) and P03 for EFA (``collsim.machine.networks``).
"""
from __future__ import annotations

from dataclasses import dataclass

from collsim.machine.gpus import GPU, GPUS, gpu_name
from collsim.machine.networks import NETS, Net

NCCL_TOPO_CC = "NVIDIA/nccl src/graph/topo.cc:423-426,489-491 (v2.28.9-1)"


@dataclass(frozen=True)
class PCIe:
    """One PCIe generation, x16: GBps per direction (PCI-SIG's rate after line coding, as NVIDIA's
    datasheets round it: Gen4 x16 "64 GB/s" bidirectional), nccl_GBps what NCCL's topology gives an
    x16 link (lanes x speed / 80 from the kernel's link speed, topo.cc:489-491)."""

    gen: int
    GBps: float
    nccl_GBps: float
    source: str


PCIE: dict[int, PCIe] = {
    3: PCIe(3, 16.0, 12.0,
            f"8 GT/s x 16 lanes x 128/130 / 8 = 15.75 GB/s, NVIDIA's '32 GB/s' bidirectional; NCCL "
            f"16 x 60 / 80 = 12 ({NCCL_TOPO_CC}; topo.h PCI_BW 12.0 'PCI Gen3 x16')"),
    4: PCIe(4, 32.0, 24.0,
            f"16 GT/s: 31.5 GB/s, NVIDIA's 'PCIe Gen4: 64 GB/s' bidirectional (A100, L40S "
            f"datasheets); NCCL 16 x 120 / 80 = 24 ({NCCL_TOPO_CC})"),
    5: PCIe(5, 64.0, 48.0,
            "32 GT/s: 63 GB/s, NVIDIA's 'PCIe Gen5: 128 GB/s' bidirectional (H100 PCIe datasheet); "
            f"NCCL 16 x 240 / 80 = 48 ({NCCL_TOPO_CC})"),
    6: PCIe(6, 128.0, 96.0,
            f"64 GT/s PAM4: PCI-SIG's 128 GB/s per direction x16 before FLIT overhead; NCCL "
            f"16 x 480 / 80 = 96 ({NCCL_TOPO_CC})"),
}

# Ring AllReduce busbw on a PCIe node over the GPU's x16 PCIe rate. With peer-to-peer: 25.95 GB/s
# busbw at 1 GiB on 4 x RTX 4090 (Gen4, 32 GB/s) with P2P through a patched kernel module, NCCL's
# default Ring (public log P02, tinygrad/open-gpu-kernel-modules#36; calibrated on it,
# data/public/README.md). Without (NCCL's SHM transport: every byte written to and read back from
# pinned host memory by the GPUs' kernels): no public log found, half of P2P's assumed.
PCIE_RING_EFFICIENCY = round(25.95 / 32.0, 3)
SHM_RING_EFFICIENCY = round(PCIE_RING_EFFICIENCY / 2, 3)

__all__ = ["GPU", "GPUS", "NETS", "Net", "PCIE", "PCIe", "PCIE_RING_EFFICIENCY",
           "SHM_RING_EFFICIENCY", "gpu_name"]
