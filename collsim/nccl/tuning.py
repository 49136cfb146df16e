"""NCCL's own AllReduce time model, as NCCL 2.18-2.28 computes it (``ncclTopoTuneModel``).

``tune(setup)`` turns what NCCL's search found (``collsim.nccl.search.Setup``) into NCCL's table:
``lat[(algo, proto)]`` us and ``bw[(algo, proto)]`` algorithm GB/s (0 = disabled) for all seven
algorithms, with the version's constants (``collsim.nccl.constants``) and enable rules.
``algo_time_us`` is ``ncclTopoGetAlgoTime`` (``time = lat x latCount + nBytes / (1000 x bw)``) and
``choose`` NCCL's argmin. Files: NVIDIA/nccl src/graph/tuning.cc, lines of v2.28.9-1 unless another
tag is named (the per-version rules are listed in ``collsim.nccl.constants``):

- bandwidth (tuning.cc:284-352): ``bw = nodes <= 2 or CollNet ? bwIntra : bwInter``; NVLS/NVLSTree
  as the version computes it; ``busBw = nCh x bw``; Ring LL ``min(llMaxBw, busBw/2)`` (/4 before
  2.21), Ring LL128 ``min(.92 busBw, nCh x perChMaxRingLL128Bw)``, Tree ``min(.92 busBw, nCh x
  perChMaxTreeBw)``, Tree LL ``min(busBw/3.8, llMaxBw)``, Tree LL128 ``min(busBw x (7/9 on one node,
  120/128 else), nCh x perChMaxTreeLL128Bw)``, x.85 for the TREE pattern; CollNetDirect Simple
  ``busBw / (f - (f-1)/2)`` with ``f = ppn/nCh`` (x.85 on SM90+); algorithm bandwidth = bus x
  ``nRanks/(2(nRanks-1))`` (Ring, NVLS from 2.28) or x.5.
- latency (tuning.cc:353-401): Ring ``base + (2(n-1) - nInter) x max(intraHop, netOverhead) + nInter
  x interHop`` (net overhead 1 us Intel, 2 AMD, x3 for Simple, tuning.cc:211-219); Tree ``base +
  2((ppn-1) intraHop + log2 nNodes x interHop)``; NVLS ``intraHop (+ interHop)``; NVLSTree
  ``intraHop + 2 log2 nNodes x interHop``; CollNet chain/direct at tuning.cc:386-390.
- enabling (tuning.cc:406-497): NCCL_ALGO/NCCL_PROTO (``collsim.nccl.settings``); NVLSTree off on
  one node; CollNet, and NVLS across nodes, only with CollNet; CollNetDirect only with an NVSwitch;
  LL128 by default only where its path checks pass. Before 2.24 an all-disabled table falls back to
  Ring (tuning.cc:303-318@v2.19.4; CollNet-only lists, tuning.cc:263-272@v2.18.6); from 2.24 it is
  an error (enqueue.cc:1859).
- ``Hardware`` + ``tuning_table`` keep the hand-fed Ring/Tree entry (graph numbers from a log);
  ``table_from_printed`` reads the "AllReduce | lat/bw" row NCCL prints with
  NCCL_DEBUG_SUBSYS=TUNING.

Units: us, GB/s (1e9 B/s), bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from collsim.errors import CollsimError
from collsim.nccl import NCCL_ALGOS, PROTOS, canonical
from collsim.nccl.chunking import MAX_THREADS
from collsim.nccl.constants import (
    NCCL_MAX_NTHREADS,
    PCI_BW,
    THREAD_THRESHOLD,
    TREE_CORRECTION,
    constants,
    vnum,
)
from collsim.nccl.formulas import (
    COLLNET,
    FUNC_ALGOS,
    algbw_ratio,
    bus_bw,
    enabled,
    latency,
    pat_enabled,
)
from collsim.nccl.graphs import Graph
from collsim.nccl.search import Setup
from collsim.nccl.settings import algo_names, read_settings

# tuning.cc:143-144
BASE_LAT = {a: constants("2.28").base_lat[a] for a in ("Tree", "Ring")}
HW_LAT = {hw: {a: t[a] for a in ("Tree", "Ring")} for hw, t in constants("2.28").hw_lat.items()}
EMPTY = Graph("", 0, 0.0, 0.0, "LOC", "LOC")


@dataclass(frozen=True)
class Hardware:
    """Hand-fed inputs of ``ncclTopoTuneModel`` for Ring and Tree (NCCL 2.28), e.g. from a log.

    channels: ring graph channels (``graph->nChannels``; 12 on 2 x H100/H200 NVLink); the
    communicator runs ``coll_channels`` (default twice that). bw_intra/bw_inter: GB/s per channel
    (``graph->bwIntra``/``bwInter``). compcap: 90 for Hopper. intra: "nvlink" or "pcie". cpu_vendor
    picks the multi-node LL cap ("intel" or "amd"). latency_inter: ``graph->latencyInter`` (us).
    tree_pattern_tree: the tree graph used NCCL_TOPO_PATTERN_TREE (x0.85). ll128: whether NCCL
    enables LL128 on this path. tree_channels / tree_bw_intra: the tree graph's own result when it
    differs from the ring's (2 x H200: tree 12 channels x 60 GB/s, ring 12 x 30).
    """
    n_ranks: int
    n_nodes: int = 1
    channels: int = 12
    bw_intra: float = 30.0
    bw_inter: float | None = None
    compcap: int = 90
    intra: str = "nvlink"
    cpu_vendor: str = "intel"
    latency_inter: float = 0.0
    tree_pattern_tree: bool = False
    net_overhead_us: float | None = None
    coll_channels: int | None = None
    ll128: bool = True
    tree_channels: int | None = None
    tree_bw_intra: float | None = None

    def __post_init__(self):
        if self.n_ranks < 2 or self.n_nodes < 1 or self.n_ranks % self.n_nodes:
            raise CollsimError("need n_ranks >= 2 divisible by n_nodes, got "
                               f"{self.n_ranks}/{self.n_nodes}")
        if self.channels < 1 or self.bw_intra <= 0:
            raise CollsimError("channels and bw_intra must be positive")
        if self.intra not in ("nvlink", "pcie"):
            raise CollsimError(f"intra link must be nvlink or pcie, got {self.intra!r}")


@dataclass
class TuningTable:
    """NCCL's AllReduce table: ``lat[(algo, proto)]`` in us, ``bw[(algo, proto)]`` in GB/s
    (algorithm bandwidth; 0 means disabled), plus what ``ncclTopoGetAlgoTime`` and the channel and
    thread choice read: coll_channels (Ring/Tree CTAs), comm_channels (``comm->nChannels``, the
    ring plateau's divisor; default coll_channels), nvls_channels, max_threads and thread_threshold
    per (algo, proto), collnet_heads, version, cpu (the host: "arm" is not x86)."""
    lat: dict
    bw: dict
    n_ranks: int
    n_nodes: int = 1
    coll_channels: int = 24
    compcap: int = 90
    max_threads: dict = field(default_factory=lambda: dict(MAX_THREADS))
    version: str = "2.28"
    comm_channels: int | None = None
    nvls_channels: int = 0
    thread_threshold: dict = field(default_factory=dict)
    collnet_heads: int = 0
    cpu: str = "intel"
    # NCCL's function the table costs (``collsim.nccl.formulas.FUNC_ALGOS``)
    func: str = "AllReduce"

    def rows(self) -> dict:
        """``{algo: {proto: (lat_us, bw_GBps)}}``, the printed table's layout."""
        out: dict = {}
        for (a, p), lat in self.lat.items():
            out.setdefault(a, {})[p] = (lat, self.bw[(a, p)])
        return out


def tune(setup: Setup, coll: str = "AllReduce") -> TuningTable:
    """NCCL's table of function ``coll`` (NCCL's name, ``FUNC_ALGOS``) for ``setup``
    (``ncclTopoTuneModel``, tuning.cc:230-574): only the algorithms NCCL costs for it, PAT where
    ``pat_enabled``."""
    k, st = constants(setup.version), setup.settings
    nodes, n = setup.n_nodes, setup.n_ranks
    graphs = {"Tree": setup.tree, "Ring": setup.ring, "CollNetDirect": setup.collnet_direct
              or EMPTY,
              "CollNetChain": setup.collnet_chain or EMPTY, "NVLS": setup.nvls or EMPTY,
              "NVLSTree": setup.nvls or EMPTY, "PAT": setup.tree}
    i2 = nodes - 1 if nodes <= 2 else 2                                    # tuning.cc:250-254
    row = k.arch_index(setup.compcap) if nodes == 1 else (1 if setup.cpu == "amd" else 0)
    caps = {"i2": i2, "ll": k.ll_max_bw[row][i2]}
    overhead = st.net_overhead_us if st.net_overhead_us is not None else (2.0 if setup.cpu == "amd"
                                                                          else 1.0)
    lat, bw = {}, {}
    for a in (a for a in algo_names(setup.version) if a in FUNC_ALGOS[coll]):
        for p in PROTOS:
            g = graphs[a]
            nvls_skip = a in ("NVLS",
                              "NVLSTree") and (p != "Simple" or (k.v >= (2, 28) and g.channels < 2))
            pat_skip = a == "PAT" and (coll == "AllReduce" or not pat_enabled(k, setup, p))
            # left at 0 (tuning.cc:277-288)
            if pat_skip or nvls_skip:
                lat[(a, p)], bw[(a, p)] = 0.0, 0.0
                continue
            bw[(a, p)] = bus_bw(k, a, p, g, setup, caps, coll) * algbw_ratio(k, a, setup, coll)
            lat[(a, p)] = latency(k, a, p, g, setup, overhead, coll)
    algo_on, proto_on = enabled(k, setup, graphs)
    # Ring's backup bandwidths, zeroed for disabled protocols from 2.22 (tuning.cc:318@v2.22.3)
    backup = {p: bw[("Ring", p)] * (proto_on[("Ring", p)] or k.v < (2, 22)) for p in PROTOS}
    for (a, p), on in proto_on.items():
        if (a, p) in bw:
            bw[(a, p)] *= on and algo_on[a]
    if (2, 19) <= k.v < (2, 24) and not any(bw.values()):            # tuning.cc:303-318@v2.19.4
        bw.update({("Ring", p): b for p, b in backup.items()})
    threads = dict(MAX_THREADS)
    ring = setup.ring
    simple = st.nthreads or (256 if ring.bw_intra * ring.channels <= PCI_BW else 512)
    threads.update({("Ring", "Simple"): simple, ("Tree", "Simple"): st.nthreads or 512})
    for a in ("Ring", "Tree"):
        threads[(a, "LL")] = st.nthreads or 512
        threads[(a, "LL128")] = st.ll128_nthreads or 640
    threads.update({(a, "Simple"): NCCL_MAX_NTHREADS
                    for a in ("CollNetDirect", "CollNetChain", "NVLS", "NVLSTree")})
    thresholds = {(a, p): THREAD_THRESHOLD[p] for a in NCCL_ALGOS for p in PROTOS}
    thresholds[("Ring", "LL")] *= n                                       # tuning.cc:541-549
    thresholds.update({(a, "Simple"): 512 for a in COLLNET})
    heads = min(setup.collnet_direct.channels, setup.nics_per_node) if setup.collnet_direct else 0
    return TuningTable(lat=lat, bw=bw, n_ranks=n, n_nodes=nodes, coll_channels=setup.coll_channels,
                       compcap=setup.compcap, max_threads=threads,
                       version=setup.version,
                       comm_channels=setup.comm_channels,
                       nvls_channels=setup.nvls_channels,
                       thread_threshold=thresholds, collnet_heads=heads,
                       cpu=setup.cpu, func=coll)


def tuning_table(hw: Hardware) -> TuningTable:
    """NCCL 2.28's AllReduce table from hand-fed graph numbers (no NVLS, no CollNet)."""
    ring = Graph(pattern="RING", channels=hw.channels, bw_intra=hw.bw_intra,
                 bw_inter=hw.bw_inter or hw.bw_intra,
                 type_intra="NVL" if hw.intra == "nvlink" else "PIX",
                 type_inter="PIX" if hw.ll128 else "SYS", cross_nic=0,
                 latency_inter=hw.latency_inter)
    tree = replace(ring, pattern="TREE" if hw.tree_pattern_tree else "BALANCED_TREE",
                   channels=hw.tree_channels or hw.channels, bw_intra=hw.tree_bw_intra
                   or hw.bw_intra)
    settings = replace(read_settings(None, "2.28"), net_overhead_us=hw.net_overhead_us)
    coll = hw.coll_channels or 2 * hw.channels
    setup = Setup(version="2.28", gpu="", compcap=hw.compcap, cpu=hw.cpu_vendor, n_nodes=hw.n_nodes,
                  gpus_per_node=hw.n_ranks // hw.n_nodes, nics_per_node=0,
                  ring=ring, tree=tree, nvls=None, collnet_chain=None,
                  collnet_direct=None, coll_channels=coll, comm_channels=coll,
                  nvls_channels=0, nvswitch=hw.intra == "nvlink", coll_map=(),
                  rings=(), nvls_heads=(), settings=settings)
    return tune(setup)


def table_from_printed(rows: dict, n_ranks: int, n_nodes: int = 1, coll_channels: int = 24,
                       compcap: int = 90) -> TuningTable:
    """A table from the one NCCL printed: ``rows = {algo: {proto: (lat_us, bw_GBps)}}``
    (names case-insensitive, e.g. ``{"Ring": {"LL": (7.8, 141.0), ...}, ...}``)."""
    if not isinstance(rows, dict) or not rows:
        raise CollsimError("tuning table must be a non-empty {algo: {proto: (lat, bw)}} mapping")
    lat, bw = {}, {}
    for a, protos in rows.items():
        a = canonical(a, NCCL_ALGOS)
        if not isinstance(protos, dict):
            raise CollsimError(f"tuning table row {a} must map protocols to (lat, bw)")
        for p, val in protos.items():
            p = canonical(p, PROTOS)
            try:
                lat[(a, p)], bw[(a, p)] = float(val[0]), float(val[1])
            except (TypeError, ValueError, IndexError):
                raise CollsimError(f"tuning table entry {a}/{p} must be (lat_us, bw_GBps), got "
                                   f"{val!r}") from None
    return TuningTable(lat, bw, int(n_ranks), int(n_nodes), int(coll_channels), int(compcap))


def algo_time_us(table: TuningTable, algo: str, proto: str, nbytes,
                 num_pipe_ops: int = 1) -> np.ndarray:
    """``ncclTopoGetAlgoTime`` for AllReduce (tuning.cc:584-601): us per size, nan if disabled.

    Tree: bandwidth x treeCorrectionFactor[proto][log2i(nBytes >> 6)] below 512 MiB (NVLSTree too,
    below 1 GiB, from 2.29 on Blackwell x86 hosts, tuning.cc:596@v2.29.7); Ring Simple
    across nodes: latency x1.4 (x1.9 before SM80) once nBytes / (comm->nChannels x nRanks) >= 64.
    latCount = num_pipe_ops for Ring, else ceil(num_pipe_ops / NCCL_MAX_DEV_WORK_BATCH_COLLS = 10)
    (1024 B / 96 B, device.h:362-363; tags before 2.22 divide by NCCL_MAX_WORK_ELEMENTS instead: one
    call, num_pipe_ops = 1, is exact in every version)."""
    algo, proto = canonical(algo, NCCL_ALGOS), canonical(proto, PROTOS)
    nb = np.atleast_1d(np.asarray(nbytes, dtype=np.int64))
    if (algo, proto) not in table.bw:
        raise CollsimError(f"the tuning table has no {algo}/{proto} entry")
    bw = np.full(nb.shape, table.bw[(algo, proto)], dtype=float)
    lat = np.full(nb.shape, table.lat[(algo, proto)], dtype=float)
    nvls_tree = (algo == "NVLSTree" and vnum(table.version) >= (2, 29) and table.compcap >= 100
                 and table.cpu != "arm")
    if (algo == "Tree" and table.func == "AllReduce") or nvls_tree:
        log_size = np.array([max(int(x >> 6).bit_length() - 1, 0) for x in nb], dtype=int)
        factors = np.asarray(TREE_CORRECTION[PROTOS.index(proto)])
        top = 24 if nvls_tree else 23
        bw = np.where(log_size < top, bw * factors[np.clip(log_size, 0, top - 1)], bw)
    if algo == "Ring" and proto == "Simple" and table.n_nodes > 1 and table.func == "AllReduce":
        plateau = nb // ((table.comm_channels or table.coll_channels) * table.n_ranks) >= 64
        lat = np.where(plateau, lat * (1.9 if table.compcap < 80 else 1.4), lat)
    lat_count = num_pipe_ops if algo == "Ring" else -(-num_pipe_ops // 10)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = lat * lat_count + nb / (1000.0 * bw)
    return np.where(bw > 0, t, np.nan)


def choose(table: TuningTable, nbytes) -> list[tuple[str, str, float]]:
    """NCCL's pick per size: ``(algo, proto, time_us)``, the first minimum in NCCL's order
    (enqueue.cc:1822-1841); CollsimError when nothing is enabled (enqueue.cc:1859)."""
    nb = np.atleast_1d(np.asarray(nbytes, dtype=np.int64))
    keys = [(a, p) for a in NCCL_ALGOS for p in PROTOS if (a, p) in table.bw]
    times = np.vstack([algo_time_us(table, a, p, nb) for a, p in keys])
    times = np.where(np.isnan(times), np.inf, times)
    if not np.isfinite(times).any(axis=0).all():
        raise CollsimError("no enabled algorithm/protocol in the tuning table")
    best = np.argmin(times, axis=0)
    return [(*keys[k], float(times[k, i])) for i, k in enumerate(best)]
