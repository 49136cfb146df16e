"""NCCL's tuning constants for AllReduce, per NCCL version (2.18 to 2.30).

``constants(version)`` returns a ``Constants`` record; ``since(version, table)`` reads a
"from this version on" table. Each version is read at the newest tag of its minor release
(``TAGS``; a cluster names only major.minor): 2.28 is v2.28.9-1, whose NET NVLSTree hop (20.9),
Blackwell 2-node Ring LL128 cap (34.6) and NVLSTree cap (43.8) differ from v2.28.3-1's 14, 73.4
and 43.1 (tuning.cc:165,179,197@v2.28.9). ``file:line@tag`` points into NVIDIA/nccl at that tag
(``src/graph/`` for tuning.cc, search.cc, connect.cc, topo.h; ``src/`` for enqueue.cc, init.cc;
``src/include/`` for device.h; ``src/transport/`` for nvls.cc). Latencies are microseconds per
(LL, LL128, Simple); bandwidths GB/s (1e9 B/s).

What changes between versions (earlier value -> later value):

- Tree Simple base latency 0 -> 8.4 (tuning.cc:57@v2.22.3 -> :57@v2.23.4); Tree Simple hop latency
  4/6/14 (NVLink/PCI/NET, tuning.cc:67-75@v2.18.6) -> 28/28/28 (2.19-2.22, :67-75@v2.19.4) ->
  4/4/14 (:67-75@v2.23.4).
- NVLS/NVLSTree: base 23 and NET hops 18/19 (tuning.cc:59,77@v2.18.6); NVLink hop 23 (2.19-2.20,
  :69@v2.19.4), 25 (:69@v2.21.5); NET NVLSTree hop 14 (:77@v2.19.4) -> 20.9 (tuning.cc:165@v2.28.9).
- CollNet hops (tuning.cc:68-76@v2.18.6 -> :68-76@v2.19.4); arity latency 0.5 -> 0.4 us per local
  rank (tuning.cc:232@v2.18.6 -> :236@v2.19.4).
- Hopper 1-node LL cap 87.7 -> 141 (tuning.cc:89@v2.20.5 -> :89@v2.21.5); Blackwell rows from 2.25
  (tuning.cc:155-174@v2.25.1, :169-198@v2.28.9).
- Ring LL bus factor 1/4 -> 1/2 (tuning.cc:181@v2.20.5 -> :180@v2.21.5); Ring LL128 x0.7 at one GPU
  per node dropped (tuning.cc:179@v2.22.3 -> :188@v2.23.4); ring net steps 2 nNodes -> 2(nNodes-1)
  (tuning.cc:161@v2.18.6 -> :258@v2.23.4); one GPU per node uses the Tree NET hop (:236@v2.23.4).
- NVLS bandwidth: 2.18 nCh x bw, algbw ratio 5/6 and NVLSTree .7 nNodes/(2(nNodes-1))
  (tuning.cc:174-198@v2.18.6); 2.19-2.27 min(bwIntra, bwInter) (NVLSTree bwInter/2 beyond 2 nodes),
  ratio 5/6 (tuning.cc:175-199@v2.19.4); 2.28 nvlsEfficiency, (nCh-1)/nCh, x2 for AllReduce,
  perChMaxNVLSTreeBw, ratio nRanks/nsteps (tuning.cc:285-300,348@v2.28.9).
- MAXCHANNELS 32 -> 64 (device.h:62@v2.24.3 -> :62@v2.25.1); NVLink per link on SM90 20.0 -> 20.6
  (topo.h:17@v2.19.4 -> :17@v2.20.5); SM100 links and speed arrays from 2.25 (topo.h:19@v2.25.1,
  search.cc:940-941@v2.25.1; 40.1 GB/s and a 96 GB/s inter speed from 2.27, topo.h:21@v2.27.7,
  search.cc:962-963@v2.27.7).
- Blackwell Ring LL128 per-channel caps 73.4/34.6/73.4 -> 40/40/40 (tuning.cc:179@v2.28.9 ->
  :180@v2.29.7); NVLSTree bandwidth x treeCorrectionFactor on Blackwell x86 hosts from 2.29
  (tuning.cc:596@v2.29.7, 24 sizes up to 512 MiB); Blackwell NVLSTree cap beyond 2 nodes 43.8 ->
  80.0 (tuning.cc:198@v2.29.7 -> :210@v2.30.7). 2.29-2.30 otherwise choose as 2.28.
"""
from __future__ import annotations

from dataclasses import dataclass

from collsim.errors import CollsimError

VERSIONS = tuple(f"2.{m}" for m in range(18, 31))
TAGS = dict(zip(VERSIONS, ("v2.18.6-1", "v2.19.4-1", "v2.20.5-1", "v2.21.5-1", "v2.22.3-1",
                           "v2.23.4-1", "v2.24.3-1", "v2.25.1-1", "v2.26.6-1", "v2.27.7-1",
                           "v2.28.9-1", "v2.29.7-1", "v2.30.7-1")))
ARCHS = ("Volta", "Ampere", "Hopper", "Blackwell")  # compCapIndex order (tuning.cc:249@v2.28.9)


def vnum(version: str) -> tuple[int, int]:
    """``"2.23"`` -> (2, 23); CollsimError for a version outside ``VERSIONS``."""
    if version not in VERSIONS:
        raise CollsimError(f"NCCL version {version!r:.20} is not one of {', '.join(VERSIONS)}")
    major, minor = version.split(".")
    return int(major), int(minor)


def since(version: str, table):
    """The value of ``table`` ((first_version, value), ... oldest first) that holds at
    ``version``."""
    value = None
    for first, v in table:
        if vnum(version) >= vnum(first):
            value = v
    return value


Z = (0.0, 0.0, 0.0)
# baseLat[algo]: tuning.cc:56-59@v2.18.6, :56-59@v2.19.4, :57@v2.23.4, :143-148@v2.28.9
BASE_LAT = {
    "Tree": (("2.18", (6.8, 14.0, 0.0)), ("2.23", (6.8, 14.0, 8.4))),
    "Ring": (("2.18", (6.6, 14.0, 8.4)),),
    "CollNetDirect": (("2.18", (6.8, 14.0, 0.0)), ("2.19", Z)),
    "CollNetChain": (("2.18", (6.8, 14.0, 0.0)), ("2.19", Z)),
    "NVLS": (("2.18", (0.0, 0.0, 23.0)), ("2.19", Z)),
    "NVLSTree": (("2.18", (0.0, 0.0, 23.0)), ("2.19", Z)),
}
_TREE_SIMPLE_HOP = {"nvlink": 4.0, "pcie": 6.0, "net": 14.0}
# hwLat[hw][algo]: tuning.cc:65-78@v2.18.6, :65-78@v2.19.4, :69@v2.21.5, :67-75@v2.23.4,
# :149-167@v2.28.9
HW_LAT = {
    hw: {
        "Tree": (("2.18", tree[:2] + (_TREE_SIMPLE_HOP[hw],)), ("2.19", tree[:2] + (28.0,)),
                 ("2.23", tree[:2] + (14.0 if hw == "net" else 4.0,))),
        "Ring": (("2.18", ring),),
        "CollNetDirect": (("2.18", (0.0, 0.0, cnd18)), ("2.19", (0.0, 0.0, cnd))),
        "CollNetChain": (("2.18", (0.0, 0.0, cnc18)), ("2.19", (0.0, 0.0, cnc))),
        "NVLS": nvls,
        "NVLSTree": nvlstree,
    }
    for hw, tree, ring, cnd18, cnd, cnc18, cnc, nvls, nvlstree in (
        ("nvlink", (0.6, 1.25), (0.6, 1.9, 3.4), 8.0, 3.7, 4.75, 2.8,
         (("2.18", Z), ("2.19", (0.0, 0.0, 23.0)), ("2.21", (0.0, 0.0, 25.0))),
         (("2.18", Z), ("2.19", (0.0, 0.0, 23.0)), ("2.21", (0.0, 0.0, 25.0)))),
        ("pcie", (1.0, 1.9), (1.0, 2.5, 5.7), 8.0, 3.7, 8.0, 2.8, (("2.18", Z),), (("2.18", Z),)),
        ("net", (5.0, 8.5), (2.7, 4.0, 14.0), 10.7, 31.0, 14.0, 30.0, (("2.18", (0.0, 0.0, 18.0)),),
         (("2.18", (0.0, 0.0, 19.0)), ("2.19", (0.0, 0.0, 14.0)), ("2.28", (0.0, 0.0, 20.9)))),
    )
}
# Rows: ARCHS; columns: 1 node, 2 nodes, more (index2, tuning.cc:250@v2.28.9). On more than one node
# the
# LL cap row is the CPU's instead: 0 Intel/other, 1 AMD or mixed (tuning.cc:252-253@v2.28.9).
# tuning.cc:86-90@v2.18.6
LL_MAX_BW = (("2.18", ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (87.7, 22.5, 19.0))),
             # tuning.cc:86-90@v2.21.5
             ("2.21", ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0))),
             ("2.25",
              ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (282.0, 90.0, 70.0))))
_OLD = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0))
# tuning.cc:92-96@v2.18.6
RING_LL128_BW = (("2.18", _OLD + ((36.7, 36.7, 36.7),)),
                 # tuning.cc:158-163@v2.25.1
                 ("2.25", _OLD + ((36.7, 36.7, 36.7), (73.4, 73.4, 73.4))),
                 # tuning.cc:175-180@v2.28.9, :176-181@v2.29.7
                 ("2.28", _OLD + ((36.7, 36.7, 36.7), (73.4, 34.6, 73.4))),
                 ("2.29", _OLD + ((36.7, 36.7, 36.7), (40.0, 40.0, 40.0))))
# tuning.cc:97-101@v2.18.6
TREE_LL128_BW = (("2.18", _OLD + ((36.7, 36.7, 29.0),)),
                 # tuning.cc:164-169@v2.25.1
                 ("2.25", _OLD + ((36.7, 36.7, 29.0), (73.4, 73.4, 58.0))),
                 # tuning.cc:181-186@v2.28.9
                 ("2.28", _OLD + ((36.7, 36.7, 29.0), (55.6, 31.67, 20.0))))
_TREE = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0))
# tuning.cc:102-106@v2.18.6
TREE_BW = (("2.18", _TREE),
           # tuning.cc:170-175@v2.25.1
           ("2.25", _TREE + ((77.4, 82.8, 72.0),)),
           # tuning.cc:187-192@v2.28.9
           ("2.28", _TREE + ((70.0, 42.8, 24.0),)))
# tuning.cc:193-198@v2.28.9, :205-210@v2.30.7
NVLS_TREE_BW = (("2.28", _TREE[:2] + ((0.0, 57.7, 45.5), (0.0, 96.0, 43.8))),
                ("2.30", _TREE[:2] + ((0.0, 57.7, 45.5), (0.0, 96.0, 80.0))))
# tuning.cc:134-139@v2.28.9
NVLS_EFFICIENCY = (0.0, 0.0, 0.85, 0.74)
# treeCorrectionFactor[proto][log2(nBytes >> 6)], 64 B to 256 MiB, same in every version
# (tuning.cc:375-379@v2.18.6, :578-582@v2.28.9); the 24th column (512 MiB), read by NVLSTree only,
# from 2.29 (tuning.cc:581-585@v2.29.7).
TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0,
     1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0,
     1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9,
     .9),
)
# Threads: NCCL_SIMPLE/LL/LL128_MAX_NTHREADS 512/512/640, NCCL_MAX_NTHREADS 640 (device.h); Ring
# Simple
# 256 when ring bwIntra x nCh <= PCI_BW 12 (tuning.cc:231-243@v2.28.9); thresholds in bytes per
# thread
# LL 8 (Ring LL x nRanks), LL128 8, Simple 64, CollNet Simple 512 (tuning.cc:542-549@v2.28.9).
MAX_THREADS = {"LL": 512, "LL128": 640, "Simple": 512}
THREAD_THRESHOLD = {"LL": 8, "LL128": 8, "Simple": 64}
NCCL_MAX_NTHREADS = 640
PCI_BW = 12.0
# topo.h:62-92@v2.28.9
PATH_TYPES = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET")


@dataclass(frozen=True)
class Constants:
    """The constants ``tuning`` reads for one NCCL version (see the module docstring for sources).

    base_lat[algo], hw_lat[link][algo]: (LL, LL128, Simple) us, link "nvlink" | "pcie" | "net";
    ll_max_bw, ring_ll128_bw, tree_ll128_bw, tree_bw, nvls_tree_bw: rows by ``ARCHS`` (LL: also CPU
    rows), columns by nodes 1 / 2 / more; max_channels: MAXCHANNELS."""
    version: str
    base_lat: dict
    hw_lat: dict
    ll_max_bw: tuple
    ring_ll128_bw: tuple
    tree_ll128_bw: tuple
    tree_bw: tuple
    nvls_tree_bw: tuple | None
    max_channels: int

    @property
    def v(self) -> tuple[int, int]:
        return vnum(self.version)

    def arch_index(self, compcap: int) -> int:
        """compCapIndex: Blackwell only from 2.25 (tuning.cc:210@v2.24.3 -> :215@v2.25.1)."""
        top = 3 if self.v >= (2, 25) else 2
        return min(top, 3 if compcap >= 100 else 2 if compcap >= 90 else 1 if compcap >= 80 else 0)


def constants(version: str) -> Constants:
    """The ``Constants`` of NCCL ``version`` ("2.18" .. "2.30")."""
    return Constants(
        version,
        {a: since(version, t) for a, t in BASE_LAT.items()},
        {hw: {a: since(version, t) for a, t in algos.items()} for hw, algos in HW_LAT.items()},
        ll_max_bw=since(version, LL_MAX_BW), ring_ll128_bw=since(version, RING_LL128_BW),
        tree_ll128_bw=since(version, TREE_LL128_BW),
        tree_bw=since(version, TREE_BW), nvls_tree_bw=since(version, NVLS_TREE_BW),
        max_channels=since(version, (("2.18", 32), ("2.25", 64))))
