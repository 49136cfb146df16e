"""NCCL's own AllReduce decision for a cluster, in one call: what NCCL 2.18-2.28 would pick and
predict.

- ``cluster_table(cluster, env)``: NCCL's table (``TuningTable``: lat/bw per algorithm and protocol)
  for a ``collsim.machine.cluster.Cluster`` under NCCL_* settings ``env``: ``search`` then ``tune``.
- ``nccl_decision(cluster, sizes, env)``: per size NCCL's argmin ``Decision(algo, proto, channels,
  threads, time_us)`` (enqueue.cc topoGetAlgoInfo: the pick, then channels and threads per CTA).
  ``decide(table, sizes)`` gives the same from a table already tuned (``collsim.predict.context``
  searches and tunes once per call).
- ``nccl_time(cluster, algo, proto, sizes, env)``: NCCL's own predicted time for a forced pair, nan
  where NCCL disables it (as NCCL_ALGO/NCCL_PROTO would leave it nothing to run).
- For a measured run: ``nccl_table(meta, ranks, nodes, intra)``, the table NCCL printed in it (its
  probe) or else one from the hardware it recorded; ``measured_choice``, what NCCL ran at a size.

NCCL_MIN/MAX_NCHANNELS, NCCL_MIN/MAX_CTAS and NCCL_NVLS_NCHANNELS change the channels run (and the
Ring Simple plateau's divisor), never the table's bandwidths, as in NCCL (connect.cc:490-491@v2.28.9
act on comm->nChannels; tuning.cc:301 reads the search channels). Sizes are bytes per rank.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collsim.errors import CollsimError
from collsim.nccl import NCCL_ALGOS, PROTOS, canonical
from collsim.nccl.chunking import launch
from collsim.nccl.search import search
from collsim.nccl.tuning import (
    Hardware,
    TuningTable,
    algo_time_us,
    choose,
    table_from_printed,
    tune,
    tuning_table,
)


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
    if (
        nb.size == 0
        or not np.issubdtype(nb.dtype, np.number)
        or (nb < 0).any()
        or (nb != np.floor(nb)).any()
    ):
        raise CollsimError("sizes must be non-negative whole numbers of bytes")
    return nb.astype(np.int64)


def cluster_table(cluster, env: dict | None = None, coll: str = "AllReduce") -> TuningTable:
    """NCCL's table of function ``coll`` (NCCL's name) for ``cluster`` with NCCL_* settings ``env``
    (CollsimError if one is bad); a single GPU has no table (NCCL runs a copy)."""
    if cluster.ranks < 2:
        raise CollsimError("NCCL's tuning model needs at least 2 ranks")
    return tune(search(cluster, env), coll)


def nccl_decision(cluster, sizes, env: dict | None = None,
                  coll: str = "AllReduce") -> list[Decision]:
    """NCCL's choice per size (bytes: nccl-tests' size column, the nBytes NCCL costs) of function
    ``coll`` for ``cluster`` under ``env``."""
    return decide(cluster_table(cluster, env, coll), sizes)


def decide(table: TuningTable, sizes) -> list[Decision]:
    """NCCL's choice per size (bytes) from its ``table`` (one search and tuning serve every
    size)."""
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


def nccl_table(meta: dict, ranks: int, nodes: int,
               intra: str = "nvlink") -> tuple[TuningTable, str]:
    """NCCL's AllReduce table for a measured run of ``ranks`` on ``nodes`` (``intra``: nvlink or
    pcie): (table, "printed" when the run's meta holds the table NCCL printed, else "hardware")."""
    probe = meta.get("nccl_probe") or {}
    rows = (probe.get("tuning") or {}).get("AllReduce")
    channels = probe.get("coll_channels")
    if rows:
        return table_from_printed(rows, ranks, nodes, channels or 24), "printed"
    graphs = probe.get("graphs") or []
    if graphs:  # pattern 4 is NCCL_TOPO_PATTERN_RING, 1 to 3 the tree patterns
        g = next((x for x in graphs if x["pattern"] == 4), graphs[0])
        t = next((x for x in graphs if x["pattern"] in (1, 2, 3)), g)
        hw = Hardware(ranks, nodes, g["n_channels"], g["bw_intra_GBps"], g["bw_inter_GBps"],
                      intra=intra, tree_pattern_tree=t["pattern"] == 3, coll_channels=channels,
                      tree_channels=t["n_channels"], tree_bw_intra=t["bw_intra_GBps"])
    else:
        hw = Hardware(ranks, nodes, intra=intra)
    return tuning_table(hw), "hardware"


def measured_choice(meta: dict, algo, proto, size: int, ranks: int, nodes: int,
                    intra: str = "nvlink",
                    table: TuningTable | None = None) -> tuple[str, str]:
    """(algorithm, protocol) that ran in a measured run at ``size``: the forced ``algo``/``proto``
    when both are given, else NCCL's choice as the run's probe logged it, else the argmin of NCCL's
    table."""
    if algo and proto:
        return algo, proto
    logged = {int(c["bytes"]): (c["algo"], c["proto"])
              for c in (meta.get("nccl_probe") or {}).get("choices", [])
              if c.get("func", "AllReduce") == "AllReduce"}
    if size in logged:
        return logged[size]
    table = table or nccl_table(meta, ranks, nodes, intra)[0]
    a, p, _ = choose(table, [size])[0]
    return a, p
