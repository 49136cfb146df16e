"""NCCL's own AllReduce decision for a cluster, in one call: what NCCL 2.18-2.28 would pick and predict.

- ``cluster_table(cluster, env)``: NCCL's table (``TuningTable``: lat/bw per algorithm and protocol)
  for a ``collsim.simulate.cluster.Cluster`` under NCCL_* settings ``env``: ``search`` then ``tune``.
- ``nccl_decision(cluster, sizes, env)``: per size NCCL's argmin ``Decision(algo, proto, channels,
  threads, time_us)`` (enqueue.cc topoGetAlgoInfo: the pick, then channels and threads per CTA).
- ``nccl_time(cluster, algo, proto, sizes, env)``: NCCL's own predicted time for a forced pair, nan
  where NCCL disables it (as NCCL_ALGO/NCCL_PROTO would leave it nothing to run).

NCCL_MIN/MAX_NCHANNELS, NCCL_MIN/MAX_CTAS and NCCL_NVLS_NCHANNELS change the channels run (and the
Ring Simple plateau's divisor), never the table's bandwidths, as in NCCL (connect.cc:490-491@v2.28.9
act on comm->nChannels; tuning.cc:301 reads the search channels). Sizes are bytes per rank.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collsim.errors import CollsimError
from collsim.nccl import NCCL_ALGOS, PROTOS, canonical
from collsim.nccl.search import search
from collsim.nccl.tuning import TuningTable, algo_time_us, choose, launch, tune


@dataclass(frozen=True)
class Decision:
    """NCCL's choice for one AllReduce: algorithm and protocol (NCCL's spelling), CTAs (channels),
    threads per CTA, and NCCL's own predicted time in us."""
    size: int
    algo: str
    proto: str
    channels: int
    threads: int
    time_us: float


def _sizes(sizes) -> np.ndarray:
    nb = np.atleast_1d(np.asarray(sizes))
    if nb.size == 0 or not np.issubdtype(nb.dtype, np.number) or (nb < 0).any() or (nb != np.floor(nb)).any():
        raise CollsimError("sizes must be non-negative whole numbers of bytes")
    return nb.astype(np.int64)


def cluster_table(cluster, env: dict | None = None) -> TuningTable:
    """NCCL's AllReduce table for ``cluster`` with NCCL_* settings ``env`` (CollsimError if one is
    bad); a single GPU has no table (NCCL runs a copy)."""
    if cluster.ranks < 2:
        raise CollsimError("NCCL's tuning model needs at least 2 ranks")
    return tune(search(cluster, env))


def nccl_decision(cluster, sizes, env: dict | None = None) -> list[Decision]:
    """NCCL's choice per size (bytes) for ``cluster`` under ``env``."""
    table = cluster_table(cluster, env)
    nb = _sizes(sizes)
    out = []
    for size, (a, p, t) in zip(nb.tolist(), choose(table, nb)):
        nc, nt = launch(table, a, p, size)
        out.append(Decision(size, a, p, nc, nt, t))
    return out


def nccl_time(cluster, algo: str, proto: str, sizes, env: dict | None = None) -> np.ndarray:
    """NCCL's own time (us) per size for ``algo``/``proto`` on ``cluster``; nan where disabled."""
    algo, proto = canonical(algo, NCCL_ALGOS), canonical(proto, PROTOS)
    table = cluster_table(cluster, env)
    if (algo, proto) not in table.bw:
        return np.full(_sizes(sizes).shape, np.nan)
    return algo_time_us(table, algo, proto, _sizes(sizes))
