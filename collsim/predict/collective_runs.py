"""The schedule NCCL runs for one call of a collective other than AllReduce (``collective_run``), as
``collsim.predict.schedules.nccl_run`` gives AllReduce's; file references into NVIDIA/nccl 2.28.

- AllGather, ReduceScatter, Ring (``collsim.algorithms.ring_halves``): RING_CHUNKSTEPS 4 and
  RING_SLICESTEPS 2 as AllReduce (src/include/collectives.h ALLGATHER_/REDUCESCATTER_CHUNKSTEPS),
  the channel's part of every segment looped over chunk by chunk (device/all_gather.h runRing): the
  same loops and slices as AllReduce's ring (``collsim.nccl.plan.ring_plan``); on an even number of
  nodes (4 or more) its quotient by the shift of two nodes (``ring_quotient`` with one phase), where
  AllReduce's would be.
- PAT (``collsim.algorithms.pat``): one slot per chunk (``ProtoSimple<1,1>``,
  ``collsim.nccl.plan.pat_chunk``), up to 16 chunks in flight per connection
  (NCCL_PAT_NWORKERS / 32).
- Broadcast, Reduce (``collsim.algorithms.chain``): one slot's payload per chunk
  (``collsim.nccl.plan.chain_chunk``), down the chain.
- AlltoAll, SendRecv (``collsim.algorithms.p2p``): every peer's bytes over the channels NCCL gives
  one send of that size (``collsim.nccl.p2p.op_channels``) among its p2p channels, one transfer
  each; a GPU's port is shared by the channels its sends use (``NcclRun.sharing``: SendRecv's
  op channels, AlltoAll's up to all p2p channels), not by the p2p channels left idle. AlltoAll on
  3 or more units (a node; the group under the top switches of a fabric that can slow a send) runs
  folded on two of them (``collsim.algorithms.p2p.alltoall_fold``, ``fold_unit``), exactly the
  whole run's time with nodes / (2 x unit) times fewer transfers.

The costs of PAT's and the p2p operations' transfers are the Ring's
(``collsim.predict.simulation``): no calibration log runs them. """
from __future__ import annotations

from collsim.algorithms import build_schedule
from collsim.algorithms.p2p import alltoall_fold
from collsim.algorithms.pat import MAX_IN_FLIGHT
from collsim.algorithms.ring import ring_quotient
from collsim.core.budget import require_schedule
from collsim.errors import CollsimError
from collsim.machine.cluster import Cluster
from collsim.machine.linkview import to_topology
from collsim.nccl.chunking import NCCL_STEPS, channel_bytes
from collsim.nccl.p2p import channels_per_peer, op_channels, step_bytes
from collsim.nccl.plan import RING_CHUNK_SLOTS, chain_chunk, pat_chunk, ring_plan
from collsim.predict.schedules import ITEMSIZE, QUOTIENT_NODES, NcclRun, _shortened, ring_fabric


def fold_unit(cluster: Cluster) -> int:
    """The nodes of one unit of ``alltoall_fold`` on ``cluster`` (a node; the group under the
    top switches of a fabric that can slow a transfer), 0 where the fold does not hold (fewer
    than 3 units, a partial unit, a degraded NIC)."""
    topo = to_topology(cluster)
    unit = topo.fabric[-1].nodes if topo.fabric else 1
    whole = (cluster.nodes % unit or cluster.nodes < 3 * unit or cluster.degraded_nics
             or topo.slow_nics)
    return 0 if whole else unit


def collective_run(cluster: Cluster, coll: str, algo: str, proto: str, nbytes: int, channels: int,
                   buffsize: int,
                   pipeline: int | None = None) -> NcclRun:
    """The schedule of NCCL's ``algo``/``proto`` run of collective ``coll`` (nccl-tests' name) for
    ``nbytes`` (its size column) on ``cluster`` with ``channels``; ``pipeline``: only that many
    loops or chunks (module docstring; ``collsim.predict.simulation`` extrapolates the rest)."""
    p, g, nodes = cluster.ranks, cluster.gpus_per_node, cluster.nodes
    count = max(p, nbytes // ITEMSIZE // p * p)
    layout = dict(gpus_per_node=g if nodes > 1 else None,
                  nics_per_node=cluster.nics_per_node if nodes > 1 else None)
    if algo == "P2P":
        peer = nbytes // p if coll == "alltoall" else nbytes
        chunks = op_channels(cluster, peer, channels_per_peer(cluster, channels), channels,
                             buffsize, proto)
        unit = fold_unit(cluster) if coll == "alltoall" and chunks <= channels else 0
        if unit:
            require_schedule("NCCL's alltoall, folded", p, 2 * unit * g * (p - 1) * chunks)
            s = alltoall_fold(p, count, ITEMSIZE, chunks=chunks, channels=channels,
                              unit=unit * g)
        else:
            s = build_schedule("p2p", p, count, ITEMSIZE, collective=coll, chunks=chunks,
                               channels=channels)
        busy = len(set(s.channel[s.src == 0].tolist()))
        # a fold joins the connections of many peers: no window (the whole's holds no send
        # back: each of its connections carries one send per peer on a channel)
        window = 0 if unit else NCCL_STEPS
        return NcclRun(s, channels, 1, window, 512, 2 * unit, sharing=busy,
                       step_bytes=step_bytes(cluster, buffsize, proto))
    used, threads, part = channel_bytes("Ring", "Simple" if algo == "PAT" else proto, nbytes,
                                        channels, p)
    if algo == "PAT":
        chunk = pat_chunk(coll, nbytes, used, buffsize)
        full = max(1, -(-part // (p * chunk)))
        k, count = _shortened(full, pipeline, count)
        count = max(p, count // p * p)
        s = build_schedule("pat", p, count, ITEMSIZE, collective=coll, chunks=k, channels=used)
        return NcclRun(s, used, full, MAX_IN_FLIGHT, threads)
    if algo != "Ring":
        raise CollsimError(f"collsim does not simulate NCCL's {algo} {coll}")
    if coll in ("broadcast", "reduce"):
        full = max(1, -(-part // chain_chunk(proto, buffsize)))
        k, count = _shortened(full, pipeline, count)
        s = build_schedule("ring", p, count, ITEMSIZE, collective=coll, chunks=k, channels=used,
                           **layout)
        return NcclRun(s, used, full, NCCL_STEPS, threads)
    plan = ring_plan(proto, part, p, buffsize)
    full, slices = plan.loops, plan.slices
    k, count = _shortened(full, pipeline, count)
    count = max(p, count // p * p)
    window = NCCL_STEPS // (RING_CHUNK_SLOTS[proto] // slices)
    quotient = (nodes >= 2 * QUOTIENT_NODES and nodes % QUOTIENT_NODES == 0
                and not cluster.degraded_nics
                and count // (used * k) >= p * slices and not ring_fabric(cluster, p, used))
    if quotient:
        s = ring_quotient(p, count, ITEMSIZE, slices=slices, channels=used, gpus_per_node=g,
                          loops=k, nodes=QUOTIENT_NODES, nics_per_node=cluster.nics_per_node,
                          reduce_scatter=coll == "reduce_scatter", all_gather=coll == "all_gather")
        return NcclRun(s, used, full, window, threads, QUOTIENT_NODES)
    s = build_schedule("ring", p, count, ITEMSIZE, collective=coll, channels=used, slices=slices,
                       loops=k, **layout)
    return NcclRun(s, used, full, window, threads)
