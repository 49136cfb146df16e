"""What each GPU and each network brings, with the source of every number.

``GPUS[name]`` (A100, H100, H200, B200: the SXM parts of 8-GPU HGX boards) and ``NETS[name]``
(ib, roce, tcp) are read by ``collsim.machine.cluster`` (cluster descriptions) and by the
NCCL models. Units: GB/s = 1e9 bytes/s per direction, Gb/s = 1e9 bits/s, microseconds, bytes.
Numbers measured by other people (published nccl-tests logs, maintainers' answers) are used only
where the entry says so; the two calibration logs are ``L01`` (1 x 8 H100 SXM, NCCL 2.26.2,
NCCL_ALGO=Ring; together-nccl-tests ``benchmarks/H100/results/20260305_220043/all_reduce_ring.out``)
and ``L15`` (2 x 8 H100, 8 x 400G NDR InfiniBand per node, NCCL_ALGO=Ring, NCCL_MIN_CTAS=24;
NVIDIA/nccl-tests issue 309).
"""
from __future__ import annotations

from dataclasses import dataclass

NCCL_TOPO_H = "NVIDIA/nccl src/graph/topo.h:19-21 (v2.28.9-1)"
NCCL_TUNING_CC = "NVIDIA/nccl src/graph/tuning.cc:134-139 (v2.28.9-1)"


@dataclass(frozen=True)
class GPU:
    """One GPU generation.

    nvlinks x link_GBps = NVLink bandwidth per GPU per direction (NVIDIA's figure, half of the
    "bidirectional" one); nccl_link_GBps: the per-link figure NCCL's topology search uses;
    compcap: CUDA compute capability x 10; sms: streaming multiprocessors; l2_bytes: L2 cache;
    nvls: whether its NVSwitch generation can reduce and multicast (NVLink SHARP); nvls_efficiency:
    NCCL's nvlsEfficiency for the architecture; ring_efficiency: measured ring AllReduce busbw
    plateau / NVLink bandwidth (what a ring gets of the line rate on an 8-GPU board);
    latency_scale: GPU-side latencies relative to the 2 x H200 where collsim's model was fitted
    (the SM clock ratio: those runs held 1980 MHz, data/h200x2/run5/dmon.txt); source: where each
    number comes from.
    """

    name: str
    compcap: int
    nvlinks: int
    link_GBps: float
    nccl_link_GBps: float
    sms: int
    l2_bytes: int
    nvls: bool
    nvls_efficiency: float
    ring_efficiency: float
    latency_scale: float
    source: str

    @property
    def nvlink_GBps(self) -> float:
        """NVLink bandwidth per GPU per direction, GB/s (links x per-link rate)."""
        return self.nvlinks * self.link_GBps


_HOPPER_TUNING = ("NVIDIA Hopper tuning guide 1.4.3 (18 NVLinks x 50 GB/s bidirectional = 900 GB/s) and "
                  "'NVIDIA Hopper architecture in depth' (132 SMs, 50 MB L2 on H100 SXM5)")
# L01's Ring busbw at 8 GiB, 368.09 GB/s, over 18 x 25 GB/s = 450 GB/s; sjeaugey on nccl-tests#212:
# "450GB/s is the line rate ... protocol overhead (~20%)", ring ~370 GB/s.
_HOPPER_RING = 368.09 / 450.0

GPUS: dict[str, GPU] = {
    "A100": GPU("A100", 80, 12, 25.0, 20.0, 108, 40 * 2**20, False, 0.0, 230.0 / 300.0, 1980.0 / 1410.0,
                "A100 whitepaper 7 and Ampere tuning guide 1.4.3 (12 NVLinks x 25 GB/s per direction); "
                "108 SMs, 40 MB L2 (A100 whitepaper 3.3.2); NCCL per-link 20.0 GB/s (" + NCCL_TOPO_H + "); "
                "no NVLink SHARP (nvlsEfficiency 0 for Ampere, " + NCCL_TUNING_CC + "); ring plateau "
                "~230 GB/s on 8 x A100 (sjeaugey, NVIDIA/nccl-tests#149); boost clock 1410 MHz (A100 whitepaper "
                "table 1), so latencies x 1980/1410"),
    "H100": GPU("H100", 90, 18, 25.0, 20.6, 132, 50 * 2**20, True, 0.85, _HOPPER_RING, 1.0,
                _HOPPER_TUNING + "; NCCL per-link 20.6 GB/s (" + NCCL_TOPO_H + "); third-generation "
                "NVSwitch with NVLink SHARP, nvlsEfficiency 0.85 (" + NCCL_TUNING_CC + "); ring plateau "
                "368.09 GB/s busbw at 8 GiB (calibration log L01); the GH100 die of our H200, same clock"),
    "H200": GPU("H200", 90, 18, 25.0, 20.6, 132, 50 * 2**20, True, 0.85, _HOPPER_RING, 1.0,
                "NVIDIA H200 page ('18x 4th Gen NVLink, 900GB/s'; the GH100 die of H100, so SMs, L2 and the "
                "ring efficiency are H100's; l2CacheSize 52428800 B read on our 2 x H200, data/h200x2); "
                "NCCL per-link 20.6 GB/s (" + NCCL_TOPO_H + "); NVLink SHARP as H100"),
    "B200": GPU("B200", 100, 18, 50.0, 40.1, 148, 126 * 2**20, True, 0.74, _HOPPER_RING, 1.0,
                "NVIDIA NVLink page (18 NVLink5 links x 100 GB/s bidirectional = 1.8 TB/s); 148 SMs and "
                "126 MB L2 (Blackwell tuning guide 1.4.2; deviceQuery in pytorch/ao#4002); NCCL per-link "
                "40.1 GB/s (" + NCCL_TOPO_H + "); NVLink SHARP, nvlsEfficiency 0.74 (" + NCCL_TUNING_CC + "); "
                "ring efficiency and latencies assumed Hopper's (no published 8 x B200 ring plateau from NVIDIA)"),
}


@dataclass(frozen=True)
class Net:
    """One network class between nodes.

    efficiency: bandwidth NCCL's ring reaches per NIC / the NIC's line rate; rdma: whether GPU
    memory goes to the wire without the host (GPUDirect RDMA).
    """

    name: str
    efficiency: float
    rdma: bool
    source: str


NETS: dict[str, Net] = {
    # L15: 392.69 GB/s ring busbw at 8 GiB across 8 x 400 Gb/s NICs = 49.1 GB/s per 50 GB/s NIC;
    # AddyLaddy (NVIDIA/nccl-tests#319): "up to ~396GB/s with the RING protocol" on 8 x CX-7 400G.
    "ib": Net("ib", 392.69 / 400.0, True,
              "InfiniBand with GPUDirect RDMA: 392.69 GB/s ring busbw on 8 x 400 Gb/s NICs (calibration log "
              "L15), 0.98 of line rate; AddyLaddy on NVIDIA/nccl-tests#319: ~396 GB/s"),
    # RoCE runs the same NCCL IB transport (verbs) over Ethernet; no maintainer figure per NIC
    # (user reports 320-430 GB/s busbw on 8 x 400G RoCE, NVIDIA/nccl#1221): taken as InfiniBand.
    "roce": Net("roce", 392.69 / 400.0, True,
                "RoCE v2 uses NCCL's IB (verbs) transport; no maintainer figure per NIC, user reports of "
                "320-430 GB/s busbw on 8 x 400G RoCE (NVIDIA/nccl#1221): InfiniBand's efficiency assumed"),
    # NCCL's socket transport copies through host memory with NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD
    # connections; no published per-NIC figure: an assumed half of line rate.
    "tcp": Net("tcp", 0.5, False,
               "NCCL socket transport (TCP through host memory): no published per-NIC figure; half the line "
               "rate assumed"),
}
