"""The formulas of ``ncclTopoTuneModel`` per (algorithm, protocol), for
``collsim.nccl.tuning.tune``.

Lines are NVIDIA/nccl src/graph/tuning.cc at v2.28.9-1 unless another tag is named; the constants
and their version history are in ``collsim.nccl.constants``. ``k`` is a ``Constants``, ``setup`` a
``collsim.nccl.search.Setup``, ``g`` the algorithm's ``Graph``.
"""
from __future__ import annotations

import numpy as np

from collsim.core.collective import COLLECTIVES
from collsim.nccl import PROTOS
from collsim.nccl.constants import NVLS_EFFICIENCY, PATH_TYPES
from collsim.nccl.graphs import Graph
from collsim.nccl.search import Setup

COLLNET = ("CollNetDirect", "CollNetChain")
# the algorithms NCCL costs per function (tuning.cc:271-277@v2.28.9: each record's ``algorithms``);
# AlltoAll and SendRecv have no cost table
FUNC_ALGOS = {c.nccl_name: c.algorithms for c in COLLECTIVES.values() if c.algorithms}
HALVES = ("AllGather", "ReduceScatter")
# tuning.cc:147@v2.28.9 (hard-coded 8 from 2.23)
PAT_BASE_US = 8.0
PAT_HW_US = {"nvlink": 4.0, "pcie": 4.0, "net": 14.0}     # Simple; tuning.cc:154,160,166@v2.28.9


def nsteps(coll: str, n: int) -> int:
    """Ring steps NCCL counts per function (tuning.cc:267-269@v2.28.9)."""
    return 2 * (n - 1) if coll == "AllReduce" else n - 1 if coll in HALVES else n


def pat_enabled(k, setup: Setup, p: str) -> bool:
    """``ncclPatEnable`` (tuning.cc:202-209@v2.28.9): from 2.23, Simple, SM60+, one GPU per node
    (NCCL_PAT_ENABLE is left at its default; a host network device is assumed)."""
    return k.v >= (2, 23) and p == "Simple" and setup.compcap >= 60 and setup.gpus_per_node == 1


def log2i(n: int) -> int:
    """NCCL's log2i (utils.h:42): floor(log2 n), 0 for n <= 1."""
    return max(int(n).bit_length() - 1, 0)


def bus_bw(k, a: str, p: str, g: Graph, setup: Setup, caps: dict, coll: str = "AllReduce") -> float:
    """Bus bandwidth of (a, p) for function ``coll`` before the algorithm-bandwidth ratio
    (tuning.cc:284-344)."""
    nodes, ppn, ci = setup.n_nodes, setup.gpus_per_node, k.arch_index(setup.compcap)
    bw = g.bw_intra if nodes <= 2 or a in COLLNET else g.bw_inter
    if a in ("NVLS", "NVLSTree"):
        if k.v >= (2, 28):                                                # tuning.cc:285-300
            intra = g.bw_intra * NVLS_EFFICIENCY[ci] * (g.channels - 1) / g.channels
            # AllReduce pipelines two operations
            intra *= 2.0 if coll == "AllReduce" else (ppn - 1) / ppn
            inter = g.bw_inter * (2 if nodes <= 2 and a == "NVLSTree" else 1)
            bw = min(intra, inter, k.nvls_tree_bw[ci][caps["i2"]] if a == "NVLSTree" else np.inf)
        # tuning.cc:175-176@v2.19.4
        elif k.v >= (2, 19):
            bw = min(g.bw_intra, g.bw_inter if a == "NVLS" or nodes <= 2 else g.bw_inter / 2)
    bus = g.channels * bw
    if a == "Ring" and p == "LL":
        bus = min(caps["ll"], bus * (.5 if k.v >= (2, 21) else .25))
    if a == "Ring" and p == "LL128":
        bus = min(bus * (.7 if k.v < (2, 23) and ppn < 2 else .92),
                  g.channels * k.ring_ll128_bw[ci][caps["i2"]])
    if a == "PAT":
        return bus * (.85 if k.v < (2, 24) else .75)                      # tuning.cc:310
    if a == "CollNetDirect" and p == "Simple" and coll in HALVES:          # tuning.cc:314-316
        return ppn * min(g.bw_intra, g.bw_inter * .9) if _one_nic_each(setup) else 0.0
    if a == "NVLS" and coll in HALVES and nodes > 1 and not _one_nic_each(setup):
        return 0.0                                                        # tuning.cc:327-343
    if a == "Tree":
        bus = min(bus * .92, g.channels * k.tree_bw[ci][caps["i2"]])
        if p == "LL":
            bus = min(bus / 3.8, caps["ll"])
        if p == "LL128":
            bus = min(bus * (7.0 / 9.0 if nodes == 1 else 120.0 / 128.0),
                      g.channels * k.tree_ll128_bw[ci][caps["i2"]])
        bus *= .85 if g.pattern == "TREE" else 1.0
    if a in COLLNET and p != "Simple":
        bus = 0.0
    if a == "CollNetDirect" and p == "Simple" and g.channels:
        f = ppn / g.channels
        bus /= f - (f - 1) / 2
        bus *= .85 if setup.compcap >= 90 else 1.0
    return bus


def _one_nic_each(setup: Setup) -> bool:
    """AllGather/ReduceScatter through CollNet need CollNet and no more local ranks than heads
    ("requires 1:1 GPU:NIC", tuning.cc:324-343)."""
    return setup.collnet_chain is not None and setup.gpus_per_node <= max(setup.nics_per_node, 1)


def algbw_ratio(k, a: str, setup: Setup, coll: str = "AllReduce") -> float:
    """Bus -> algorithm bandwidth (tuning.cc:345-351: none for AllGather/ReduceScatter but Ring's;
    NVLS 5/6 up to 2.27, tuning.cc:196-199@v2.18.6)."""
    n, nodes = setup.n_ranks, setup.n_nodes
    if coll != "AllReduce" and (a == "Ring" or coll not in HALVES):
        return n / nsteps(coll, n) if a in ("Ring", "NVLS", "NVLSTree") else .5
    if coll != "AllReduce":
        return 1.0
    if a == "Ring" or (a in ("NVLS", "NVLSTree") and k.v >= (2, 28)):
        return n / (2.0 * (n - 1))
    if a == "NVLSTree" and k.v < (2, 19):
        return .7 * nodes / (2 * (nodes - 1)) if nodes > 1 else 0.0
    return 5.0 / 6.0 if a in ("NVLS", "NVLSTree") else .5


def latency(k, a: str, p: str, g: Graph, setup: Setup, overhead: float,
            coll: str = "AllReduce") -> float:
    """tuning.cc:353-401 for function ``coll`` (NVLS/NVLSTree before 2.19:
    tuning.cc:235-238@v2.18.6). Broadcast and Reduce pay one hop where the ring's channels are all
    alike (``sameChannels``: taken as one node, where every channel is the same ring), else n hops,
    Simple's on the Tree row (tuning.cc:361-369)."""
    pi, nodes, ppn = PROTOS.index(p), setup.n_nodes, setup.gpus_per_node
    link = "nvlink" if g.type_intra == "NVL" else "pcie"
    if a == "PAT":                                                        # tuning.cc:396-400
        inter = k.hw_lat["net"]["Tree"][pi] + 2 * g.latency_inter
        return PAT_BASE_US + log2i(nodes) * (inter / 3.5) + setup.n_ranks * 2.8
    lat = k.base_lat[a][pi]
    intra = k.hw_lat[link][a][pi]
    inter = k.hw_lat["net"]["Tree" if ppn == 1 and k.v >= (2, 23) else a][pi] + g.latency_inter
    inter += g.latency_inter if p == "Simple" else 0.0
    if a == "Ring" and coll in ("Broadcast", "Reduce"):
        hw = link if nodes == 1 else "net"
        if nodes == 1:
            return lat + k.hw_lat[hw]["Ring"][pi]
        return lat + setup.n_ranks * k.hw_lat[hw]["Tree" if p == "Simple" else "Ring"][pi]
    if a == "Ring":
        steps = nsteps(coll, setup.n_ranks)
        hops = 2 * (nodes - 1) if k.v >= (2, 23) else 2 * nodes
        n_inter = 0 if nodes == 1 else hops // (2 if coll in HALVES else 1)
        ov = overhead * (3 if p == "Simple" else 1) if nodes > 1 else 0.0
        return lat + (steps - n_inter) * max(intra, ov) + n_inter * inter
    if a == "Tree":
        return lat + 2 * ((ppn - 1) * intra + log2i(nodes) * inter)
    if a == "CollNetDirect":
        return lat + 2 * (min(1,
                              ppn - 1) * intra + (ppn - 1) * (.4 if k.v >= (2, 19) else .5)) + inter
    if a == "CollNetChain":
        return lat + 2 * (ppn - 1) * intra + inter
    if k.v < (2, 19):
        net = k.hw_lat["net"][a][pi]
        return lat + (net if nodes > 1 else 0) if a == "NVLS" else lat + 2 * (nodes - 1) * net
    if a == "NVLS":
        return intra + (inter if nodes > 1 else 0.0)
    return lat + intra + 2 * log2i(nodes) * inter


def ll128_ok(k, g: Graph, cc: int) -> bool:
    """LL128's default enable (tuning.cc:478-494; compute-capability switch up to 2.26,
    tuning.cc:285-293@v2.18.6, :431-437@v2.25.1; CUDA 11.8's 2-rank Hopper ring case not
    modelled)."""
    inter, intra = PATH_TYPES.index(g.type_inter), PATH_TYPES.index(g.type_intra)
    if k.v >= (2, 27):
        ok = inter <= PATH_TYPES.index("PXN" if cc >= 90 else "PXB") and cc >= 70
    else:
        ok = inter <= PATH_TYPES.index("PXB") or (cc >= 90 and inter <= PATH_TYPES.index("PXN"))
        ok = ok and cc in ((70, 80, 90, 100, 120) if k.v >= (2, 25) else (70, 80, 90))
    return ok and intra <= PATH_TYPES.index("NVB")


def enabled(k, setup: Setup, graphs: dict) -> tuple[dict, dict]:
    """({algo: on}, {(algo, proto): protocol on}) after NCCL_ALGO/NCCL_PROTO and NCCL's own rules
    (tuning.cc:406-497); an entry runs when both are on."""
    st = setup.settings
    algo = dict(st.algo)
    collnet = setup.collnet_chain is not None
    if setup.n_nodes == 1:
        algo["NVLSTree"] = 0
    if not collnet:
        algo.update({"CollNetDirect": 0, "CollNetChain": 0})
        algo["NVLS"] = 0 if setup.n_nodes > 1 else algo["NVLS"]
        if k.v < (2, 24) and not any(algo[a] for a in ("Ring", "Tree", "NVLS", "NVLSTree")):
            algo.update(Ring=1, Tree=1)                                  # tuning.cc:309-314@v2.23.4
    if not setup.nvswitch:
        algo["CollNetDirect"] = 0
    proto = {(a,
              p): bool(ll128_ok(k, graphs[a], setup.compcap) if st.proto[p] == 2 else st.proto[p])
             for a in algo for p in PROTOS}
    return {a: bool(on) for a, on in algo.items()}, proto
