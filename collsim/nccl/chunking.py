"""How NCCL cuts one call into channels (NCCL 2.28; file references into NVIDIA/nccl; each
channel's pipeline: ``collsim.nccl.plan``). Sizes in bytes.

- Buffers: every connection has ``NCCL_STEPS`` = 8 slots (src/include/device.h); the buffer per
  protocol is ``DEFAULT_BUFFSIZE`` (src/init.cc:697-699; Simple follows NCCL_BUFFSIZE), of which LL
  carries half and LL128 15/16 as payload (``EFFICIENCY``); data moves in multiples of ``GRAIN``
  bytes (device.h ncclProtoGrainSize).
- Channels: NCCL first picks channels and threads for the size (``nccl_channels`` for Ring and
  Tree from the coll channels, ``launch`` for every algorithm from NCCL's table; enqueue.cc
  topoGetAlgoInfo), then splits the traffic in 16 KiB cells over them (enqueue.cc
  scheduleCollTasksToPlan): ``split_channels`` and ``channel_bytes``.
"""
from __future__ import annotations

from collsim.nccl import PROTOS, canonical
from collsim.nccl.constants import NCCL_MAX_NTHREADS, THREAD_THRESHOLD, vnum

NCCL_STEPS = 8
DEFAULT_BUFFSIZE = {"LL": 524288, "LL128": 4915200, "Simple": 4194304}  # init.cc:697-699
EFFICIENCY = {"LL": 0.5, "LL128": 120 / 128, "Simple": 1.0}
GRAIN = {"LL": 16, "LL128": 1920, "Simple": 512}  # device.h ncclProtoGrainSize, bytes
# threads per channel before any shrink (enqueue.cc:1866-1907)
MAX_THREADS = {("Ring", "LL"): 512, ("Ring", "LL128"): 640, ("Ring", "Simple"): 512,
               ("Tree", "LL"): 512, ("Tree", "LL128"): 640, ("Tree", "Simple"): 512}


def _cells(nbytes: int, channels: int, proto: str) -> tuple[int, int]:
    """(channels used, bytes on the busiest channel) of NCCL's split of an AllReduce's traffic in
    16 KiB cells over ``channels`` (enqueue.cc scheduleCollTasksToPlan)."""
    tpb = 2 * (4 if proto == "LL" else 1)
    cell = -(-(-(-16384 // tpb)) // 16) * 16
    cells = max(1, -(-nbytes // cell))
    per_channel_traffic = max(16384, nbytes * tpb // channels)
    cpc = min(cells, -(-per_channel_traffic // (cell * tpb)))
    return -(-cells // cpc), min(nbytes, cpc * cell)


def split_channels(nbytes: int, channels: int, proto: str) -> int:
    """Channels an AllReduce of ``nbytes`` spreads over when ``channels`` run (16 KiB traffic
    cells)."""
    return _cells(nbytes, channels, proto)[0]


def channel_bytes(algo: str, proto: str, nbytes: int, channels: int,
                  ranks: int) -> tuple[int, int, int]:
    """(channels used, threads, bytes on the busiest channel) for one Ring/Tree AllReduce of
    nbytes."""
    nc, nt = nccl_channels(algo, proto, nbytes, channels, ranks)
    used, bc = _cells(nbytes, nc, proto)
    return used, nt, bc


def shrink(nbytes: int, nc: int, nt: int, threshold: int) -> tuple[int, int]:
    """Fewer channels, then fewer threads, while nBytes < nc x nt x threshold
    (enqueue.cc:1886-1900)."""
    while nbytes < nc * nt * threshold and nc >= 2:
        nc -= 1
    while nbytes < nc * nt * threshold and nt % 128 == 0:
        nt //= 2
    return nc, nt


def nccl_channels(algo: str, proto: str, nbytes: int, coll_channels: int, n_ranks: int,
                  max_threads: dict | None = None) -> tuple[int, int]:
    """Channels and threads NCCL runs for a Ring/Tree AllReduce (enqueue.cc:1866-1907).

    Drops a channel while ``nbytes < channels * threads * threshold`` (down to 1), then halves
    threads (while a multiple of 128). Returns ``(channels, threads)``, threads before NCCL adds
    its synchronisation warps.
    """
    algo, proto = canonical(algo, ("Tree", "Ring")), canonical(proto, PROTOS)
    thr = THREAD_THRESHOLD[proto] * (n_ranks if (algo, proto) == ("Ring", "LL") else 1)
    return shrink(
        int(nbytes), int(coll_channels), (max_threads or MAX_THREADS)[(algo, proto)], thr
    )


def launch(table, algo: str, proto: str, nbytes: int) -> tuple[int, int]:
    """(channels, threads per CTA) NCCL launches for (algo, proto) at ``nbytes`` from its ``table``
    (``collsim.nccl.tuning.TuningTable``; topoGetAlgoInfo,
    enqueue.cc:1865-1911): Ring/Tree/CollNetChain from the coll channels with ``shrink``; NVLS and
    NVLSTree the NVLS channels (the coll channels when fewer, for NVLS across nodes, from 2.28),
    CollNetDirect steps down per head count; then +32 threads for Ring Simple, +128 for Tree Simple,
    at least 96, and Tree always 640 from 2.22 (enqueue.cc:1655@v2.22.3, :1907)."""
    nc, nt = table.coll_channels, table.max_threads.get((algo, proto), NCCL_MAX_NTHREADS)
    thr = table.thread_threshold.get((algo, proto), THREAD_THRESHOLD[proto])
    v = vnum(table.version)
    if algo in ("NVLS", "NVLSTree"):
        nc = table.nvls_channels
        if algo == "NVLS" and table.n_nodes > 1 and v >= (2, 28):
            nc = min(nc, table.comm_channels or table.coll_channels)
    elif algo == "CollNetDirect":
        switch, flag = 16, True
        while switch >= 1 and flag:
            while (flag := nbytes < nc * nt * table.collnet_heads * thr) and nc > switch:
                thr //= 2 if nc == switch + switch // 2 else 1
                nc -= 1
            switch //= 2
    else:
        nc, nt = shrink(int(nbytes), nc, nt, thr)
    if proto == "Simple":
        nt += {"Ring": 32, "Tree": 128}.get(algo, 0)
    nt = max(nt, 96)
    if (algo == "Tree" and v >= (2, 22)) or (algo == "PAT"):
        nt = NCCL_MAX_NTHREADS
    return nc, nt
