"""NCCL's own AllReduce time model, as NCCL 2.28 computes it.

Constants and formulas come from NVIDIA/nccl tag v2.28.9-1:

- ``src/graph/tuning.cc`` lines 141-199: ``ncclTunerConstantsDefaults`` (base latencies,
  per-hop hardware latencies for NVLink/PCI/NET, LL and LL128 bandwidth caps, tree caps);
  lines 230-404 ``ncclTopoTuneModel`` (bandwidth refinements, bus -> algorithm bandwidth,
  ring and tree latencies); lines 576-601 ``treeCorrectionFactor`` and
  ``ncclTopoGetAlgoTime`` (``time = lat * latCount + nBytes / (1000 * bw)``).
- ``src/enqueue.cc`` lines 1822-1912 ``topoGetAlgoInfo``: argmin over (algorithm, protocol),
  then fewer channels and threads for small messages (thread thresholds from
  ``src/include/comm.h``: LL 8, LL128 8, Simple 64 bytes per thread; Ring LL x nRanks).

Units: latency in microseconds, bandwidth in GB/s (1e9 B/s; NCCL's "bw" is algorithm
bandwidth: bytes / time), sizes in bytes. Only Tree and Ring are modelled from hardware
inputs (NVLS, CollNet and PAT are not used by AllReduce on one or two GPUs per node); a table
NCCL printed may hold any algorithm and ``choose`` considers them all.

Two ways to get a table: ``tuning_table(Hardware(...))`` from hardware inputs (what NCCL's
graph search found: channels and per-channel bandwidth), or ``table_from_printed(rows, ...)``
from the "AllReduce | lat/bw" line NCCL prints with NCCL_DEBUG_SUBSYS=TUNING.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from collsim.errors import CollsimError
from collsim.nccl import NCCL_ALGOS, PROTOS, canonical

BASE_LAT = {"Tree": (6.8, 14.0, 8.4), "Ring": (6.6, 14.0, 8.4)}  # tuning.cc:143-144
HW_LAT = {  # tuning.cc:149-167, per link type then algorithm, (LL, LL128, Simple) in us
    "nvlink": {"Tree": (0.6, 1.25, 4.0), "Ring": (0.6, 1.9, 3.4)},
    "pci": {"Tree": (1.0, 1.9, 4.0), "Ring": (1.0, 2.5, 5.7)},
    "net": {"Tree": (5.0, 8.5, 14.0), "Ring": (2.7, 4.0, 14.0)},
}
# Rows: arch (LL: for multi-node rows 0 = Intel, 1 = AMD); columns: nNodes 1, 2, >2.
LL_MAX_BW = ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (282.0, 90.0, 70.0))
PER_CH_RING_LL128 = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7), (73.4, 34.6, 73.4))
PER_CH_TREE_LL128 = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0), (55.6, 31.67, 20.0))
PER_CH_TREE = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0))
# tuning.cc:578-582: powers of two from 64 B (index log2(nBytes >> 6)) to 256 MiB.
TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9),
)
MAX_THREADS = {("Ring", "LL"): 512, ("Ring", "LL128"): 640, ("Ring", "Simple"): 512,
               ("Tree", "LL"): 512, ("Tree", "LL128"): 640, ("Tree", "Simple"): 512}
THREAD_THRESHOLD = {"LL": 8, "LL128": 8, "Simple": 64}  # bytes per thread (comm.h:41-43)
PCI_BW = 12.0  # GB/s, src/graph/topo.h: below it Ring Simple runs 256 threads




@dataclass(frozen=True)
class Hardware:
    """What NCCL's topology search found, the inputs of ``ncclTopoTuneModel``.

    channels: graph channels (``graph->nChannels``; 12 on 2 x H100/H200 NVLink); the
    communicator runs ``coll_channels`` (default twice that). bw_intra/bw_inter: GB/s per
    channel (``graph->bwIntra``/``bwInter``; 30 on 2 x H200). compcap: 90 for Hopper.
    intra: "nvlink" or "pci". cpu_vendor picks the multi-node LL cap ("intel" or "amd").
    latency_inter: ``graph->latencyInter`` (us). tree_pattern_tree: the tree graph used
    NCCL_TOPO_PATTERN_TREE (x0.85). ll128: whether NCCL enables LL128 on this path.
    tree_channels / tree_bw_intra: the tree graph's own result when it differs from the ring's
    (2 x H200: tree 12 channels x 60 GB/s, ring 12 x 30).
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
            raise CollsimError(f"need n_ranks >= 2 divisible by n_nodes, got {self.n_ranks}/{self.n_nodes}")
        if self.channels < 1 or self.bw_intra <= 0:
            raise CollsimError("channels and bw_intra must be positive")
        if self.intra not in ("nvlink", "pci"):
            raise CollsimError(f"intra link must be nvlink or pci, got {self.intra!r}")


@dataclass
class TuningTable:
    """NCCL's AllReduce table: ``lat[(algo, proto)]`` in us, ``bw[(algo, proto)]`` in GB/s
    (algorithm bandwidth; 0 means disabled), plus what ``ncclTopoGetAlgoTime`` reads."""
    lat: dict
    bw: dict
    n_ranks: int
    n_nodes: int = 1
    coll_channels: int = 24
    compcap: int = 90
    max_threads: dict = field(default_factory=lambda: dict(MAX_THREADS))

    def rows(self) -> dict:
        """``{algo: {proto: (lat_us, bw_GBps)}}``, the printed table's layout."""
        out: dict = {}
        for (a, p), lat in self.lat.items():
            out.setdefault(a, {})[p] = (lat, self.bw[(a, p)])
        return out


def _arch_index(compcap: int) -> int:
    return 3 if compcap >= 100 else 2 if compcap >= 90 else 1 if compcap >= 80 else 0


def tuning_table(hw: Hardware) -> TuningTable:
    """NCCL's AllReduce latencies and bandwidths for Tree and Ring (tuning.cc:245-404)."""
    n, nodes = hw.n_ranks, hw.n_nodes
    nsteps = 2 * (n - 1)
    ci = _arch_index(hw.compcap)
    i2 = nodes - 1 if nodes <= 2 else 2
    i1 = ci if nodes == 1 else (1 if hw.cpu_vendor in ("amd", "mixed") else 0)
    ll_max = LL_MAX_BW[i1][i2]
    ppn = n / nodes
    lat, bw = {}, {}
    for a in ("Tree", "Ring"):
        for pi, p in enumerate(PROTOS):
            tree = a == "Tree" and hw.tree_bw_intra is not None
            per_ch = hw.tree_bw_intra if tree else hw.bw_intra
            if nodes > 2 and hw.bw_inter is not None:
                per_ch = hw.bw_inter
            nch = hw.tree_channels if a == "Tree" and hw.tree_channels else hw.channels
            bus = nch * per_ch
            if a == "Ring" and p == "LL":
                bus = min(ll_max, bus * .5)
            if a == "Ring" and p == "LL128":
                bus = min(bus * .92, nch * PER_CH_RING_LL128[ci][i2])
            if a == "Tree":
                bus = min(bus * .92, nch * PER_CH_TREE[ci][i2])
            if a == "Tree" and p == "LL":
                bus = min(bus / 3.8, ll_max)
            if a == "Tree" and p == "LL128":
                bus = min(bus * (7.0 / 9.0 if nodes == 1 else 120.0 / 128.0),
                          nch * PER_CH_TREE_LL128[ci][i2])
            if a == "Tree" and hw.tree_pattern_tree:
                bus *= .85
            bus *= n / nsteps if a == "Ring" else .5
            if p == "LL128" and not hw.ll128:
                bus = 0.0
            intra_lat = HW_LAT[hw.intra][a][pi]
            inter_lat = HW_LAT["net"]["Tree" if ppn == 1 else a][pi] + hw.latency_inter
            if p == "Simple":
                inter_lat += hw.latency_inter
            t = BASE_LAT[a][pi]
            if a == "Ring":
                over = 0.0
                if nodes > 1:
                    over = hw.net_overhead_us if hw.net_overhead_us is not None else (
                        2.0 if hw.cpu_vendor == "amd" else 1.0)
                    over *= 3 if p == "Simple" else 1
                n_inter = 0 if nodes == 1 else 2 * (nodes - 1)
                t += (nsteps - n_inter) * max(intra_lat, over) + n_inter * inter_lat
            else:
                t += 2 * ((n // nodes - 1) * intra_lat + int(np.log2(nodes)) * inter_lat)
            lat[(a, p)], bw[(a, p)] = t, bus
    max_threads = dict(MAX_THREADS)
    if hw.bw_intra * hw.channels <= PCI_BW:
        max_threads[("Ring", "Simple")] = 256
    return TuningTable(lat, bw, n, nodes, hw.coll_channels or 2 * hw.channels, hw.compcap, max_threads)


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
                raise CollsimError(f"tuning table entry {a}/{p} must be (lat_us, bw_GBps), got {val!r}") from None
    return TuningTable(lat, bw, int(n_ranks), int(n_nodes), int(coll_channels), int(compcap))


def algo_time_us(table: TuningTable, algo: str, proto: str, nbytes, num_pipe_ops: int = 1) -> np.ndarray:
    """``ncclTopoGetAlgoTime`` for AllReduce (tuning.cc:584-601): us per size, nan if disabled."""
    algo, proto = canonical(algo, NCCL_ALGOS), canonical(proto, PROTOS)
    nb = np.atleast_1d(np.asarray(nbytes, dtype=np.int64))
    if (algo, proto) not in table.bw:
        raise CollsimError(f"the tuning table has no {algo}/{proto} entry")
    bw = np.full(nb.shape, table.bw[(algo, proto)], dtype=float)
    lat = np.full(nb.shape, table.lat[(algo, proto)], dtype=float)
    if algo == "Tree":
        shifted = nb >> 6
        log_size = np.where(shifted > 0, np.floor(np.log2(np.maximum(shifted, 1))), -1).astype(int)
        ok = (log_size >= 0) & (log_size < 23)
        factors = np.asarray(TREE_CORRECTION[PROTOS.index(proto)])
        bw = np.where(ok, bw * factors[np.clip(log_size, 0, 22)], bw)
    if algo == "Ring" and proto == "Simple" and table.n_nodes > 1:
        plateau = nb // (table.coll_channels * table.n_ranks) >= 64
        lat = np.where(plateau, lat * (1.9 if table.compcap < 80 else 1.4), lat)
    # NCCL_MAX_DEV_WORK_BATCH_COLLS = 1024 B / sizeof(ncclDevWorkColl) (96 B) = 10 (device.h:362)
    lat_count = num_pipe_ops if algo == "Ring" else -(-num_pipe_ops // 10)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = lat * lat_count + nb / (1000.0 * bw)
    return np.where(bw > 0, t, np.nan)


def choose(table: TuningTable, nbytes) -> list[tuple[str, str, float]]:
    """NCCL's pick per size: ``(algo, proto, time_us)``, the first minimum in NCCL's order."""
    nb = np.atleast_1d(np.asarray(nbytes, dtype=np.int64))
    keys = [(a, p) for a in NCCL_ALGOS for p in PROTOS if (a, p) in table.bw]
    times = np.vstack([algo_time_us(table, a, p, nb) for a, p in keys])
    times = np.where(np.isnan(times), np.inf, times)
    if not np.isfinite(times).any(axis=0).all():
        raise CollsimError("no enabled algorithm/protocol in the tuning table")
    best = np.argmin(times, axis=0)
    return [(*keys[k], float(times[k, i])) for i, k in enumerate(best)]


def nccl_channels(algo: str, proto: str, nbytes: int, coll_channels: int, n_ranks: int,
                  max_threads: dict | None = None) -> tuple[int, int]:
    """Channels and threads NCCL runs for a Ring/Tree AllReduce (enqueue.cc:1866-1907).

    Drops a channel while ``nbytes < channels * threads * threshold`` (down to 1), then halves
    threads (while a multiple of 128). Returns ``(channels, threads)``, threads before NCCL adds
    its synchronisation warps.
    """
    algo, proto = canonical(algo, ("Tree", "Ring")), canonical(proto, PROTOS)
    nt = (max_threads or MAX_THREADS)[(algo, proto)]
    thr = THREAD_THRESHOLD[proto] * (n_ranks if (algo, proto) == ("Ring", "LL") else 1)
    nc = int(coll_channels)
    while nbytes < nc * nt * thr and nc >= 2:
        nc -= 1
    while nbytes < nc * nt * thr and nt % 128 == 0:
        nt //= 2
    return nc, nt
