"""The graphs NCCL's topology search finds for a ``Cluster``: ring and tree ``Graph``s here, NVLS
and CollNet in ``collsim.nccl.switch_graphs``.

Not a graph search: the outcome rules for the standard layouts, re-derived from ncclTopoCompute
(search.cc:991-1198@v2.28.9) and checked against NCCL's own search compiled on the CPU (the
nccl_harness oracles; tests/nccl/test_search.py). NCCL walks a speed array from the fastest speed
<= ``maxBw`` down (stopping once a step is <= .49 of the best found, search.cc:1145), keeps the
best channels x bwIntra (search.cc:419-438; before 2.20 a crossNic solution must be 15% better,
search.cc:376@v2.19.4), doubles the channels at half the speed (``ncclTopoDupChannels``,
search.cc:961-974) and then tries faster speeds with the channel count fixed (search.cc:1168-1187:
rings raise both speeds, NVLS bwInter, trees bwIntra up to 2 x bwInter). Here the channels one speed
allows are closed forms of the layout:

- ``T``: NCCL's NVLink GB/s per GPU, links x per link (``nccl_nvlink_GBps``, topo.h:16-21@v2.28.9:
  SM90 20.6, 20.0 up to 2.19; SM100 40.1, 40.0 in 2.25-2.26; SM86 12; SM80 20). A ring channel
  crosses every GPU's NVLink once: channels x speed <= T (x G/(G-1) when every GPU is a ring's exit
  to a NIC); a tree chain likewise (2 x T on 2 GPUs, whose chains alternate direction); an NVLS head
  needs (heads + 1) x speed <= T.
- NIC: 400/200/100 Gb/s -> 50/25/12.5 GB/s (topo.cc:370-373), behind the GPU's PCIe x16 (Gen5 48,
  Gen4 24 GB/s, topo.cc:423-426,489-491: the GPU table's generation); each channel entering a NIC
  needs its speed there. Without GPUDirect (net tcp or NCCL_IB_DISABLE=1: the socket transport has
  no GPU pointers) the path crosses the CPU; the harness gives 20 GB/s per Gen5 NIC, modelled as
  PCIe x 5/12. A net plugin's latency (aws-ofi-nccl on EFA: 75 us, OFI_NCCL_NET_LATENCY) becomes
  every multi-node graph's latencyInter (search.cc:685). The cluster comes as NCCL sees it
  (``Cluster.nccl_view``: one node per NVLink domain, EFA NICs grouped per GPU by aws-ofi-nccl).
- PCIe nodes (no NVLink, or NCCL_P2P_DISABLE=1): GPU pairs share a PCIe switch (PIX) when
  peer-to-peer is allowed (paths.cc:318-330@v2.28.9: P2P up to PXB); between pairs, and everywhere
  without peer-to-peer (``p2p: false``: the path is diverted through the CPU, paths.cc:667-678, and
  NCCL uses its SHM transport), the ring crosses the CPU (PHB) at PCIe x 5/6 on Intel
  (search.cc:79-90).
- Rings (multi-node): a channel enters through a NIC at the NIC's local GPU and leaves from a GPU
  under the same PCIe switch (PIX), else through PXN (one more NVLink hop); from 2.20 with
  NCCL_CROSS_NIC=2 pairs of rings (2k, 2k+1) leave through each other's NIC (search.cc:559-574,
  681-682); odd nodes swap the pair (connect.cc:392-405@v2.28.9) so every hop stays on its rail.
- Trees: BALANCED_TREE when two GPUs share the NIC's switch, else the "simpler" TREE pattern (SM90+,
  search.cc:1117-1120); channels = the ring's; the head (intra[0]) of channel c is the NIC's GPU.
- NVLS (NVSwitch, SM90+, search.cc:1036): one head per GPU on one node, one per NIC-local GPU across
  nodes (search.cc:694-712).

Assumed layouts (not in the research where noted): NVSwitch or direct all-to-all NVLink boards;
NIC k sits in the PCIe switch of the GPUs that use it (``Cluster.nic_of_local``; A100: DGX A100's
two GPUs and two NICs per switch); "pcie" nodes put each GPU pair under one switch and all switches
under one CPU (PCIe = 3/4 of ``pcie_GBps``, the CPU crossing costs Intel's 6/5, search.cc:80-88).
Known differences from NCCL's own search: 4 x B200 on one node (NCCL finds 16 x 50 TREE, here 16 x
40), K < G NICs on Hopper before 2.21 (NCCL's tree bwIntra 45, here 48), sockets (no GPUDirect)
across nodes before 2.21 (NCCL's search stops at 2 channels, here 8), the GPU order inside a node of
2.18 multi-node rings (NICs and entry GPUs agree) and, before 2.27, the entry GPU of DGX A100 rings
at 100 Gb/s (the other GPU of the same switch).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import ceil, floor

from collsim.machine.hardware import PCIE
from collsim.nccl.constants import since, vnum
from collsim.nccl.settings import Settings

PATTERNS = {"BALANCED_TREE": 1, "SPLIT_TREE": 2, "TREE": 3, "RING": 4, "NVLS": 5,
            "COLLNET_DIRECT": 6}
# NCCL's x16 GB/s over the nominal one: Gen4 24 of 32 (width x 120 / 80, topo.cc:423-426)
PCIE_NCCL = 0.75
# search.cc:812@v2.18.6
_SM90_INTRA = (("2.18", (60, 40, 30, 24, 20, 15, 12, 6, 3)),
               # search.cc:843@v2.19.4
               ("2.19", (60, 50, 40, 30, 24, 20, 15, 12, 6, 3)),
               # search.cc:855@v2.21.5
               ("2.21", (60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3)))
# :813@v2.18.6
_SM90_INTER = (("2.18", (48, 45, 42, 40, 30, 24, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, .24, .12)),
               # :844@v2.19.4
               ("2.19", (48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, .24, .12)))
# search.cc:940@v2.25.1
_SM100_INTRA = (("2.25", (90, 80, 70, 60, 50, 40, 30, 24, 20, 19)),
                # search.cc:962@v2.27.7
                ("2.27", (90, 80, 70, 60, 50, 40, 30, 24, 20, 19, 18)))
# search.cc:941@v2.25.1
_SM100_INTER = (("2.25", _SM90_INTER[1][1]),
                # search.cc:963@v2.27.7
                ("2.27", (96, 48, 45.1) + _SM90_INTER[1][1][2:]))
_INTRA = (40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3)                     # search.cc:976@v2.28.9
# search.cc:977@v2.28.9
_INTER = (48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, .24, .12)


@dataclass(frozen=True)
class Graph:
    """One search result (ncclTopoGraph): pattern name (``PATTERNS``), search channels, GB/s per
    channel inside a node and to the network, path types (``constants.PATH_TYPES``), crossNic and
    the NIC latency property in us (0 for NCCL's IB and socket transports, net_ib.cc:945)."""
    pattern: str
    channels: int
    bw_intra: float
    bw_inter: float
    type_intra: str = "NVL"
    type_inter: str = "PIX"
    cross_nic: int = 0
    latency_inter: float = 0.0


@dataclass(frozen=True)
class Hw:
    """A node as the search budgets it: G GPUs, K NICs; T GB/s per GPU inside the node (NVLink, or
    PCIe through the CPU); max_bw and total_bw (``system->maxBw`` / ``totalBw``, search.cc:38-53);
    nic_cap GB/s per NIC path; shared: a second GPU sits in the NIC's PCIe switch (a PIX exit);
    every_exit: every GPU can be some ring's exit; pxn: GPU->NIC through another GPU is possible;
    path types inside the node and to the NICs."""
    G: int
    K: int
    T: float
    max_bw: float
    total_bw: float
    nic_cap: float
    shared: bool
    every_exit: bool
    pxn: bool
    type_intra: str
    type_inter: str


def nccl_nvlink_GBps(compcap: int, version: str) -> float:
    """ncclTopoNVLinkBw: NCCL's GB/s per NVLink by compute capability (topo.h:16-21,274-283@v2.28.9;
    SM90 20.0 up to 2.19, topo.h:17@v2.19.4; SM100 from 2.25, 40.0 until 2.26,
    topo.h:19@v2.25.1)."""
    if compcap >= 100 and vnum(version) >= (2, 25):
        return since(version, (("2.25", 40.0), ("2.27", 40.1)))
    if compcap >= 90:
        return since(version, (("2.18", 20.0), ("2.20", 20.6)))
    return 12.0 if compcap == 86 else 20.0


def hw_of(c, s: Settings) -> Hw:
    """``Hw`` of cluster ``c`` (as NCCL sees it) under settings ``s`` (layout assumptions in the
    module docstring)."""
    v, info = c.nccl, c.gpu_info
    gdr = c.net_info.rdma and not (s.ib_disable and c.net_info.transport == "verbs")
    G, K = c.gpus_per_node, c.nics_per_node
    via_pcie = c.intra == "pcie" or s.p2p_disable
    p2p = c.p2p and not s.p2p_disable
    if via_pcie:
        pcie = PCIE_NCCL * c.pcie_GBps
        T = pcie if G <= 2 and p2p else pcie * (5 / 6 if c.cpu == "intel" else 1)
    else:
        pcie = PCIE[c.pcie_gen].nccl_GBps
        T = min(18, round(c.nvlink_GBps / info.link_GBps)) * nccl_nvlink_GBps(info.compcap, v)
    multi = c.nodes > 1
    nic_cap = min(c.nic_GBps, pcie if gdr else pcie * 5 / 12)
    # DGX A100: 2 GPUs, 2 NICs a switch
    hgx_a100 = info.compcap == 80 and info.form == "sxm"
    shared = K > 0 and (G // K >= 2 or (hgx_a100 and K == G and G % 2 == 0))
    total = pcie if via_pcie else T
    return Hw(G, K, T, max_bw=min(c.nic_GBps, pcie) if multi else total, total_bw=total,
              nic_cap=nic_cap, shared=shared,
              every_exit=K == G or shared and G // max(K, 1) == 1, pxn=not via_pcie and gdr,
              type_intra="LOC" if G == 1 else "NVL" if not via_pcie else "PIX" if G <= 2 and p2p
              else "PHB",
              type_inter="PIX" if gdr or not multi else "PHB")


def speed_steps(c, multi: bool) -> tuple:
    v, cc = c.nccl, c.gpu_info.compcap
    if cc >= 100 and vnum(v) >= (2, 25):
        return since(v, _SM100_INTER if multi else _SM100_INTRA)
    if cc >= 90:
        return since(v, _SM90_INTER if multi else _SM90_INTRA)
    return _INTER if multi else _INTRA


def _walk(speeds, start_ok, options, done, better=lambda new, old: new > old):
    """Pass 1: speeds from the first ``start_ok`` down; ``options(s)`` yields (channels, mode) in
    NCCL's order; returns (channels, speed, mode) of the best channels x speed
    (search.cc:1070-1153)."""
    best = None
    for i, s in enumerate(speeds):
        if not start_ok(s) and i < len(speeds) - 1:
            continue
        if best and s / best[1] <= .49:
            break
        for n, mode in options(s):
            if n >= 1 and (best is None or better((n * s, mode), (best[0] * best[1], best[2]))):
                best = (n, s, mode)
            if best and done(*best):
                return best
    return best


def raise_speed(speeds, s, ok, limit=None):
    """Pass 2: faster speeds while ``ok(speed)`` (and below ``limit``), from ``s``
    (search.cc:1168-1187)."""
    for faster in sorted(x for x in speeds if x > s):
        if (limit is not None and s >= limit) or not ok(faster):
            break
        s = faster
    return s


def _dup(n: int, bw: float, cc: int, maxch: int) -> tuple[int, float]:
    """ncclTopoDupChannels (search.cc:961-974@v2.28.9)."""
    if bw < 25.0 or (cc > 80 and bw < 50.0 and n > 4):
        return n, bw
    dup = min(2 * n, maxch)
    return dup, bw / ceil(dup / n)


def ring_graph(c, hw: Hw, s: Settings, maxch: int) -> Graph:
    """The RING graph: the best channels x speed over NCCL's speed walk, then DupChannels and the
    pass-2 raise. Modes in NCCL's order: "rail" (exit GPU beside the NIC), "pxn" (exit through
    another GPU), then "paired" (crossNic 2, from 2.20) or "any" (crossNic 1); one node: "intra"."""
    v, multi, G = c.nccl, c.nodes > 1, hw.G
    speeds = speed_steps(c, multi)
    spread = hw.T * G / (G - 1) if G > 1 else hw.T
    every = {"intra": False, "pxn": False, "rail": hw.every_exit, "paired": True, "any": True}

    def nvl(sp, mode):
        return floor((spread if every[mode] else hw.T) / sp + 1e-9)

    def options(sp):
        if not multi:
            return [(min(maxch, nvl(sp, "intra")), "intra")]
        nics = hw.K * floor(hw.nic_cap / sp + 1e-9)
        # 2.20-2.22 pair rings whenever crossNic != 0 (search.cc:486@v2.21.5)
        if s.cross_nic == 1 and hw.K > 1:
            mode = "paired" if (2, 20) <= vnum(v) < (2, 23) else "any"
            return [(min(maxch, nics, nvl(sp, mode)), mode)]
        # one GPU: its own NIC (GH200: C2C)
        first = "rail" if hw.shared or not hw.pxn or G == 1 else "pxn"
        out = [(min(maxch, nics, nvl(sp, first)), first)]
        if s.cross_nic == 2 and hw.K > 1 and not hw.shared and hw.pxn:
            cross = "paired" if vnum(v) >= (2, 20) else "any"
            out.append((min(maxch, nics, nvl(sp, cross)), cross))
        return out

    def better(new, old):  # crossNic=1 solutions need 15% more before 2.20 (search.cc:376@v2.19.4)
        target = 1.0 - ((old[1] == "any") - (new[1] == "any")) * .15 if vnum(v) < (2, 20) else 1.0
        return new[0] > old[0] * target

    found = _walk(speeds, lambda x: x <= hw.max_bw and x <= hw.total_bw, options,
                  lambda n, x, m: n == maxch or n * x >= hw.total_bw, better)
    # no speed fits a channel: "falling back to simple order" (search.cc:1189-1196@v2.28.9)
    if found is None:
        return Graph("RING", 1, 0.1, 0.1, "SYS", "SYS")
    n, sp, mode = found
    n, sp = _dup(n, sp, c.gpu_info.compcap, maxch)
    if vnum(v) >= (2, 19):
        def fits(x):
            return n <= min(maxch, nvl(x, mode), hw.K * floor(hw.nic_cap / x + 1e-9) if multi
                            else maxch)
        sp = raise_speed(speeds, sp, fits)
    types = {"pxn": "PXN"}
    return Graph("RING", n, float(sp), float(sp), hw.type_intra,
                 types.get(mode, hw.type_inter) if multi else hw.type_inter,
                 {"paired": 2 if vnum(v) >= (2, 23) else 1, "any": 1}.get(mode, 0))


def tree_graph(c, hw: Hw, n: int, pattern: str | None = None) -> Graph:
    """The tree graph with the ring's ``n`` channels (init.cc:1023-1029): the fastest speed that
    fits, then bwIntra raised towards 2 x bwInter across nodes; BALANCED_TREE unless the NIC's
    switch holds one GPU on SM90+ (TREE) or the node has one GPU (search.cc:1041)."""
    multi, G = c.nodes > 1, hw.G
    speeds = speed_steps(c, multi)
    budget = hw.T * (2 if G == 2 and not multi else 1)
    if pattern is None:
        pattern = "TREE" if G == 1 or (multi and not hw.shared
                                       and c.gpu_info.compcap >= 90) else "BALANCED_TREE"

    def intra_ok(x):
        return n * x * ((G - 1) / G if multi else 1) <= budget + 1e-9

    def ok(x):
        return intra_ok(x) and (not multi or ceil(n / max(hw.K, 1)) * x <= hw.nic_cap + 1e-9)

    top = hw.total_bw * G / (G - 1) if G > 1 else hw.total_bw                  # search.cc:1074
    inter = next((x for x in speeds if x <= hw.max_bw and x * n <= top + 1e-9 and ok(x)),
                 speeds[-1])
    intra = raise_speed(speeds, inter, intra_ok, limit=2 * inter) if multi else inter
    return Graph(pattern, n, float(intra), float(inter), hw.type_intra, hw.type_inter)
