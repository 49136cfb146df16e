"""The graphs NCCL's search finds through a switch: NVLS (the NVSwitch's multicast, SM90+,
search.cc:1036: one head per GPU on one node, one per NIC-local GPU across nodes,
search.cc:694-712) and COLLNET_DIRECT (the network's reduction), by the speed rules of
``collsim.nccl.graphs``."""
from __future__ import annotations

from math import ceil

from collsim.nccl.constants import vnum
from collsim.nccl.graphs import Graph, Hw, raise_speed, speed_steps
from collsim.nccl.settings import Settings


def nvls_graph(c, hw: Hw, heads: int) -> Graph:
    """The NVLS graph with ``heads`` heads: the fastest speed with (heads + 1) x speed <= T (and
    within a NIC across nodes); from 2.19 bwInter raised towards 2 x bwIntra
    (search.cc:1175-1178)."""
    multi, v = c.nodes > 1, c.nccl
    speeds = speed_steps(c, multi)

    def ok(x):
        return (heads + 1) * x <= hw.T + 1e-9 and (not multi or x <= hw.nic_cap + 1e-9)

    top = hw.total_bw * hw.G / (hw.G - 1)
    s = next((x for x in speeds if x <= hw.max_bw and x * (1 if multi else heads) <= top and ok(x)),
             speeds[-1])
    if vnum(v) < (2, 19):
        return Graph("NVLS", heads, float(s), float(s), hw.type_intra, hw.type_inter)
    inter = raise_speed(speeds, s, lambda x: not multi or x <= hw.nic_cap + 1e-9, limit=2 * s)
    return Graph("NVLS", heads, float(s), float(inter), hw.type_intra, hw.type_inter)


def nvls_support(c, s: Settings) -> bool:
    """nvls.cc ncclNvlsInit: NCCL_NVLS_ENABLE, more than 2 GPUs (>= 2 from 2.28,
    nvls.cc:161@v2.28.9), one node only in 2.20 (nvls.cc:240@v2.20.5); the search needs an NVSwitch
    and SM90 (search.cc:1036)."""
    few = c.gpus_per_node < 2 if vnum(c.nccl) >= (2, 28) else c.gpus_per_node <= 2
    return bool(
        c.nvls
        and s.nvls_enable
        and not few
        and c.intra == "nvswitch"
        and c.gpu_info.compcap >= 90
        and not (c.nccl == "2.20" and c.nodes > 1)
    )


def collnet_direct_graph(c, hw: Hw) -> Graph:
    """COLLNET_DIRECT (search.cc:1039): up to NCCL_MAX_DIRECT_ARITY+1 = 8 channels spread over the
    NICs (harness: 8 x 48 with 8 NICs, 8 x 24 with 4)."""
    n = min(hw.G, 8)
    s = next((x for x in speed_steps(c, True) if x <= hw.max_bw
              and ceil(n / hw.K) * x <= hw.nic_cap + 1e-9), .12)
    return Graph("COLLNET_DIRECT", n, float(s), float(s), hw.type_intra, hw.type_inter)
