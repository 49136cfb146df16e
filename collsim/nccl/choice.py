"""NCCL's choice for one AllReduce on a cluster: algorithm, protocol, channels, and NCCL's own time.

``nccl_env(env, cluster)`` reads the NCCL_* variables that change the choice into ``Settings``;
``decide(cluster, sizes, settings, algo, proto)`` gives a ``Decision`` per size: NCCL's argmin over the
enabled (algorithm, protocol) pairs of its own tuning model (``collsim.nccl.tuning``; NVLS and
NVLSTree as tuning.cc:285-300 of v2.28.9-1 computes them), restricted to ``algo``/``proto`` when given.

What NCCL's topology search finds is taken from src/graph/search.cc and connect.cc as the research
note of the project reproduced them on an HGX H100 topology: one node of 8 NVSwitch GPUs runs 12
search channels (A100, H100: 12 x bwIntra 20/30 GB/s; B200 16 x 45) doubled to 24 coll channels
(connect.cc:452); several nodes with one NIC per GPU 8 search channels at 48 GB/s (400G behind PCIe
Gen5; 24 GB/s at 200G), 16 coll channels; NVLS 16 channels on SM90 (nvls.cc:148-150), 24 on SM100.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from collsim.errors import CollsimError
from collsim.nccl import NCCL_ALGOS, PROTOS, canonical
from collsim.nccl.tuning import Hardware, algo_time_us, nccl_channels, tuning_table
from collsim.simulate.cluster import Cluster

MAX_CHANNELS = 64


@dataclass(frozen=True)
class Settings:
    """What the environment asks of NCCL: allowed algorithms and protocols, a pinned channel count
    (None: NCCL's), NCCL_BUFFSIZE (None: 4 MiB), NVLS on or off, sockets instead of IB; and the coll
    and NVLS channel counts NCCL then runs."""

    algos: tuple
    protos: tuple
    channels: int | None
    buffsize: int | None
    nvls: bool
    sockets: bool
    coll_channels: int
    nvls_channels: int
    ignored: tuple = ()

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Decision:
    algo: str
    proto: str
    channels: int
    time_us: float


def _names(value: str, choices: tuple, what: str) -> tuple:
    """NCCL's list syntax: comma-separated names, case-insensitive, a leading ^ excludes them."""
    text = str(value).strip()
    exclude = text.startswith("^")
    names = {canonical(n.strip(), choices) for n in text.lstrip("^").split(",") if n.strip()}
    if not names:
        raise CollsimError(f"{what}={value!r:.40}: no names")
    return tuple(c for c in choices if (c in names) != exclude)


def _int_env(env: dict, name: str, lo: int, hi: int) -> int | None:
    if name not in env:
        return None
    try:
        v = int(str(env[name]).strip())
    except ValueError:
        raise CollsimError(f"{name}={env[name]!r:.40} is not an integer") from None
    if not lo <= v <= hi:
        raise CollsimError(f"{name}={v} is outside {lo}..{hi}")
    return v


def search_channels(cluster: Cluster) -> tuple[int, float, float]:
    """(search channels, bwIntra, bwInter GB/s per channel) of NCCL's ring graph on ``cluster``."""
    info = cluster.gpu_info
    if cluster.nodes == 1:
        per_gpu = info.nccl_link_GBps * info.nvlinks if cluster.intra != "pcie" else 24.0
        n = 16 if info.compcap >= 100 else 12
        return n, per_gpu // n, per_gpu // n
    inter = 48.0 if cluster.nic_GBps >= 48 else min(24.0, cluster.nic_GBps)
    return 8, inter, inter


def nccl_env(env: dict, cluster: Cluster) -> Settings:
    """``Settings`` from NCCL_* variables (one-line CollsimError for a bad value)."""
    env = {k: v for k, v in env.items() if k.startswith("NCCL_")}
    algos = _names(env["NCCL_ALGO"], NCCL_ALGOS, "NCCL_ALGO") if "NCCL_ALGO" in env else NCCL_ALGOS
    protos = _names(env["NCCL_PROTO"], PROTOS, "NCCL_PROTO") if "NCCL_PROTO" in env else PROTOS
    lo = max(x for x in (_int_env(env, "NCCL_MIN_NCHANNELS", 1, MAX_CHANNELS),
                         _int_env(env, "NCCL_MIN_CTAS", 1, MAX_CHANNELS), 0) if x is not None)
    hi = min(x for x in (_int_env(env, "NCCL_MAX_NCHANNELS", 1, MAX_CHANNELS),
                         _int_env(env, "NCCL_MAX_CTAS", 1, MAX_CHANNELS), MAX_CHANNELS) if x is not None)
    buff = _int_env(env, "NCCL_BUFFSIZE", 1 << 15, 1 << 31)
    nvls = cluster.nvls and str(env.get("NCCL_NVLS_ENABLE", "2")).strip() != "0"
    sockets = str(env.get("NCCL_IB_DISABLE", "0")).strip() == "1" and cluster.nodes > 1
    search, _, _ = search_channels(cluster)
    coll = min(MAX_CHANNELS, 2 * search)
    pinned = coll if lo == 0 and hi == MAX_CHANNELS else min(max(coll, lo), hi)
    nvls_ch = _int_env(env, "NCCL_NVLS_NCHANNELS", 1, MAX_CHANNELS) or (24 if cluster.gpu_info.compcap >= 100 else 16)
    known = {"NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MIN_CTAS", "NCCL_MAX_NCHANNELS", "NCCL_MAX_CTAS",
             "NCCL_BUFFSIZE", "NCCL_NVLS_ENABLE", "NCCL_IB_DISABLE", "NCCL_NVLS_NCHANNELS"}
    return Settings(algos, protos, None if pinned == coll else pinned, buff, nvls, sockets, pinned,
                    min(nvls_ch, hi), tuple(sorted(set(env) - known)))


def _table(cluster: Cluster, settings: Settings):
    n_ch, bw_intra, bw_inter = search_channels(cluster)
    hw = Hardware(cluster.ranks, cluster.nodes, n_ch, bw_intra, bw_inter if cluster.nodes > 1 else None,
                  cluster.gpu_info.compcap, "pci" if cluster.intra == "pcie" else "nvlink", cluster.cpu,
                  tree_pattern_tree=cluster.nodes > 1, coll_channels=settings.coll_channels)
    return tuning_table(hw)


def _nvls_time(cluster: Cluster, algo: str, nbytes: np.ndarray) -> np.ndarray:
    """NCCL 2.28's NVLS / NVLSTree time (tuning.cc:285-300, 391-395): 8 heads of 40 GB/s bwIntra,
    nvlsEfficiency, x2 for AllReduce, algBw = busBw x nRanks / (2 (nRanks-1))."""
    info, ppn = cluster.gpu_info, cluster.gpus_per_node
    heads = ppn if cluster.nodes == 1 else max(cluster.nics_per_node, 1)
    intra = 40.0 * info.nccl_link_GBps / 20.6 * info.nvls_efficiency * (heads - 1) / heads * 2
    if algo == "NVLS":
        bw, lat = min(intra, 60.0), 25.0
    else:
        inter = min(48.0, cluster.nic_GBps) * (2 if cluster.nodes <= 2 else 1)
        bw = min(intra, inter, 57.7 if cluster.nodes <= 2 else 45.5)
        lat = 25.0 + 2 * int(np.log2(cluster.nodes)) * 20.9
    alg = heads * bw * cluster.ranks / (2 * (cluster.ranks - 1))
    return lat + nbytes / (1000.0 * alg)


def decide(cluster: Cluster, sizes, settings: Settings, algo: str | None = None,
           proto: str | None = None) -> list[Decision]:
    """NCCL's (algorithm, protocol, channels, its own time in us) per size."""
    nb = np.asarray(sizes, dtype=np.int64)
    table = _table(cluster, settings)
    candidates = {}
    for a in ("Tree", "Ring", "NVLS", "NVLSTree"):
        if a not in settings.algos or (algo and a != algo):
            continue
        if a in ("NVLS", "NVLSTree") and (not settings.nvls or (a == "NVLS") != (cluster.nodes == 1)):
            continue
        for p in PROTOS:
            if p not in settings.protos or (proto and p != proto) or (a.startswith("NVLS") and p != "Simple"):
                continue
            candidates[(a, p)] = _nvls_time(cluster, a, nb) if a.startswith("NVLS") else algo_time_us(table, a, p, nb)
    if not candidates:
        raise CollsimError(f"no enabled algorithm/protocol for {algo or 'any algorithm'}/{proto or 'any protocol'} "
                           f"on {cluster.describe()}")
    keys = list(candidates)
    times = np.vstack([np.where(np.isnan(candidates[k]), np.inf, candidates[k]) for k in keys])
    out = []
    for i, size in enumerate(nb.tolist()):
        k = keys[int(np.argmin(times[:, i]))]
        if k[0].startswith("NVLS"):
            channels = settings.nvls_channels
        else:
            channels = nccl_channels(k[0], k[1], size, settings.coll_channels, cluster.ranks)[0]
        out.append(Decision(k[0], k[1], channels, float(times[:, i].min())))
    return out
