"""The schedule NCCL runs for one AllReduce, as a collsim schedule: algorithm, channels, and the
pipeline NCCL cuts each channel's part into (``collsim.nccl.plan``: slot, chunk, slices and loops;
file references into NVIDIA/nccl 2.28).

- Ring (``ring`` with ``loops`` and ``slices``): each channel loops over its part nranks x chunk
  bytes at a time (device/all_reduce.h runRing; ``collsim.nccl.plan.ring_plan``).
- Tree (``nccl-tree``): a chain in each node, the double binary tree between nodes, pipelined one
  chunk at a time (``collsim.nccl.plan.tree_chunks``).
- NVLS and NVLSTree (``nvls``, ``nvlstree``; NVLS across nodes ``nvls-sharp``, on every channel NCCL
  chose): loops of heads x chunk (``collsim.nccl.plan.nvls_loops``; not NCCL's 32 KiB cap where its
  NVLS bandwidth across nodes is under 150 GB/s).
- CollNetDirect and CollNetChain (``collnet-direct``, ``collnet-chain``): every channel NCCL chose
  (CollNet takes no split in cells, enqueue.cc:568-578), loops of channels x heads x chunk (chain:
  one chunk a channel; ``collsim.nccl.plan.collnet_chunk``), one slot per chunk.

``window``: the transfers a connection keeps in flight, NCCL_STEPS (8) slots over the slots one
transfer takes (Ring Simple: a slice of 2 slots, so 4).

Rings on an even number of nodes, 4 or more, run as their quotient by the shift of every rank two
nodes on (``collsim.algorithms.ring.ring_quotient``: two nodes' ranks run the whole ring's steps),
which gives every transfer the time of its image in the whole ring, exactly when every chunk holds
as many elements (else within an element a chunk: a chunk of under one element carries one, 4 bytes
on a step whose cost is its latency), and simulates P / 2G times fewer transfers; the rings of an
odd number of nodes (whose wrap-around hop breaks the pattern) run whole. So do the rings on a
fabric whose ports can slow their hops (``ring_fabric``): leaf groups break the shift's symmetry,
and the quotient stays exact only where the fabric changes no time
(``collsim.simulate.symmetry.fabric_binds``), and those of a cluster with a degraded NIC
(``degraded_nics``: the shift does not map it onto the others); ``NcclRun.whole`` says why a ring
runs whole. Channels known alike are built once, each standing for ``NcclRun.weight``: NVLS's two
trees, and a ring's orders c mod G (one order on one node) where the chunks split evenly
(``_ring_built``); ``collapse_channels`` would class them together, at the cost of building them
(a 131,072-GPU ring's 16 channels: 8 built, the peak 5.2 -> 3.7 GB). """
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collsim.algorithms import build_schedule
from collsim.algorithms.collnet import heads_of
from collsim.algorithms.ring import ring_orders, ring_quotient
from collsim.core.budget import require_schedule
from collsim.core.schedule import Schedule
from collsim.errors import CollsimError
from collsim.machine.cluster import Cluster, to_topology
from collsim.nccl.chunking import EFFICIENCY, NCCL_STEPS, channel_bytes, split_channels
from collsim.nccl.plan import RING_CHUNK_SLOTS, collnet_chunk, nvls_loops, ring_plan, tree_chunks
from collsim.simulate.symmetry import LENGTH_TOLERANCE, fabric_binds

ITEMSIZE = 4           # nccl-tests' default type (float): sizes are counts of 4-byte elements
# NVLS, NVLSTree and CollNet run NCCL_MAX_NTHREADS per CTA (tuning.cc:236-237, enqueue.cc:1865)
NVLS_THREADS = 640
COLLNET = ("CollNetDirect", "CollNetChain")
# NCCL's rail rings repeat every 2 nodes (odd nodes run search channel s^1's order)
QUOTIENT_NODES = 2


@dataclass(frozen=True)
class NcclRun:
    """What NCCL runs for one size: the schedule, the channels it uses, its pipeline (loops or
    chunks per channel), the connection window in transfers and the threads per channel (fewer for
    small messages, enqueue.cc topoGetAlgoInfo: ``collsim.nccl.chunking.channel_bytes``); NVLS and
    NVLSTree build two of their channels, each standing for ``weight`` alike
    (``collsim.simulate.symmetry.stand_for``)."""

    schedule: Schedule
    channels: int
    pipeline: int
    window: int
    threads: int
    # the nodes the schedule spans (fewer than the cluster's: a quotient); 0: all
    nodes: int = 0
    # the channels each channel of the schedule stands for (built once: alike)
    weight: int = 1
    whole: str = ""         # why a ring across nodes runs whole, not as its quotient
    # the channels that share one GPU's port at once (0: all of ``channels``; the p2p operations
    # keep most of NCCL's p2p channels idle: ``collsim.predict.collective_runs``)
    sharing: int = 0
    # bytes of one of NCCL's steps where a transfer stands for several, pipelined (the p2p sends:
    # ``collsim.nccl.p2p.step_bytes``): the receiver's fill covers one; 0: a transfer is a step
    step_bytes: int = 0


def nccl_run(cluster: Cluster, algo: str, proto: str, nbytes: int, channels: int, buffsize: int,
             pipeline: int | None = None, alike: bool = True) -> NcclRun:
    """The schedule of NCCL's ``algo``/``proto`` AllReduce of ``nbytes`` on ``cluster`` with
    ``channels`` (NCCL's channel count for the algorithm at this size, before the split in 16 KiB
    cells). ``pipeline``: run only that many of its loops (tree: chunks) of the same bytes each, on
    the same channels (``collsim.predict. extrapolate`` times the rest); ``NcclRun.pipeline`` is the
    full run's. ``alike``: channels known to repeat each other (NVLS and NVLSTree: tree c mod 2;
    Ring: order c mod G, ``_ring_built``) are built once, each standing for ``NcclRun.weight``;
    False builds every channel (the whole schedule the reductions are measured against)."""
    p, g, nodes = cluster.ranks, cluster.gpus_per_node, cluster.nodes
    count = max(1, nbytes // ITEMSIZE)
    if algo in ("NVLS", "NVLSTree"):
        # with CollNet: every channel (enqueue.cc:402-411,568)
        across = algo == "NVLS" and nodes > 1
        used = channels if across else split_channels(nbytes, channels, "Simple")
        part = -(-nbytes // used)
        full = nvls_loops(algo, part, p, nodes)
        k, count = _shortened(full, pipeline, count)
        # channel c runs tree c mod 2: two stand for all
        built = 2 if alike and used > 2 and used % 2 == 0 else used
        count = max(built, count * built // used)
        name = "nvlstree" if algo == "NVLSTree" else "nvls-sharp" if across else "nvls"
        s = build_schedule(name, p, count, ITEMSIZE, chunks=k, channels=built,
                           gpus_per_node=g if name != "nvls"
                           else None)
        return NcclRun(s, used, full, NCCL_STEPS, NVLS_THREADS, weight=used // built)
    if algo in COLLNET:
        heads = len(heads_of(g, cluster.nics_per_node)) if algo == "CollNetDirect" else 1
        depth = (2 if g > 1 else 1) if algo == "CollNetDirect" else g
        chunk = collnet_chunk(algo, nbytes, channels, heads, depth, buffsize)
        full = max(1, -(-nbytes // (channels * heads * chunk)))
        k, count = _shortened(full, pipeline, count)
        s = build_schedule("collnet-direct" if algo == "CollNetDirect" else "collnet-chain", p,
                           count, ITEMSIZE,
                           gpus_per_node=g, chunks=k, channels=channels,
                           nics_per_node=cluster.nics_per_node)
        return NcclRun(s, channels, full, NCCL_STEPS, NVLS_THREADS)
    used, threads, part = channel_bytes(algo, proto, nbytes, channels, p)
    if algo == "Ring":
        plan = ring_plan(proto, part, p, buffsize)
        full, slices = plan.loops, plan.slices
        k, count = _shortened(full, pipeline, count)
        slots = RING_CHUNK_SLOTS[proto] // slices
        whole = ("fewer than 4 nodes" if nodes < 2 * QUOTIENT_NODES else "an odd node count"
                 if nodes % QUOTIENT_NODES else "")
        slow = ", ".join(f"node{n}.nic{k} at {r:g} Gb/s" for n, k, r in cluster.degraded_nics)
        whole = whole or (slow and f"{slow}: the shift of every rank two nodes on does not map the "
                                   "NICs onto "
                                   "themselves")
        binds = ring_fabric(cluster, p, used) if nodes > 1 and not whole else None
        if binds:
            whole = f"the fabric can slow its hops ({binds})"
        built = _ring_built(used, count, p, g if nodes > 1 else 1, k * slices) if alike else used
        count = max(built, count * built // used)
        if not whole:
            s = ring_quotient(p, count, ITEMSIZE, slices=slices, channels=built, gpus_per_node=g,
                              loops=k, nodes=QUOTIENT_NODES, nics_per_node=cluster.nics_per_node)
            return NcclRun(s, used, full, NCCL_STEPS // slots, threads, QUOTIENT_NODES,
                           weight=used // built)
        try:
            require_schedule("NCCL's ring", p, 2 * (p - 1) * p * built * k * slices)
        except CollsimError as e:
            raise CollsimError(f"{e} (it runs whole: {whole})") from None
        s = build_schedule("ring", p, count, ITEMSIZE, channels=built, slices=slices, loops=k,
                           gpus_per_node=g if nodes > 1 else None,
                           nics_per_node=cluster.nics_per_node if nodes > 1
                           else None)
        return NcclRun(s, used, full, NCCL_STEPS // slots, threads, weight=used // built,
                       whole=whole if nodes > 1 else "")
    full = tree_chunks(proto, part, p, nodes, buffsize)
    k, count = _shortened(full, pipeline, count)
    s = build_schedule("nccl-tree", p, count, ITEMSIZE, gpus_per_node=g, chunks=k, channels=used,
                       nics_per_node=cluster.nics_per_node or None)
    return NcclRun(s, used, full, NCCL_STEPS, threads)


def ring_fabric(cluster: Cluster, ranks: int, channels: int) -> str | None:
    """None when the cluster's fabric cannot slow any hop of NCCL's rail rings on ``channels``
    channels (each hop is one engine: ``collsim.simulate.symmetry.fabric_binds``), else the port
    that can, said."""
    topo = to_topology(cluster)
    if not topo.fabric:
        return None
    orders = ring_orders(ranks, channels, cluster.gpus_per_node,
                         nics_per_node=cluster.nics_per_node)
    src, dst = orders.ravel(), np.roll(orders, -1, axis=1).ravel()
    return fabric_binds(src, dst, src * channels + np.repeat(np.arange(channels), ranks), topo)


def _ring_built(used: int, count: int, ranks: int, period: int, steps: int) -> int:
    """The channels of NCCL's ring to build: channel c runs channel c mod ``period``'s order
    (``ring_orders``: the node's GPU count across nodes, 1 on one node), so where ``used`` is a
    multiple of ``period`` and every chunk holds 1 / ``LENGTH_TOLERANCE`` elements or more (the
    channels' chunks then differ by under that: ``collapse_channels`` would class them together),
    ``period`` channels stand for all; else all ``used`` are built."""
    alike = used > period and used % period == 0
    return period if alike and count * LENGTH_TOLERANCE >= used * ranks * steps else used


def _shortened(full: int, pipeline: int | None, count: int) -> tuple[int, int]:
    """(loops, elements) of a run cut to ``pipeline`` of its ``full`` loops, each loop's bytes
    kept."""
    if pipeline is None or pipeline >= full:
        return full, count
    return pipeline, max(pipeline, count * pipeline // full)


def wire_bytes(proto: str, payload: float) -> float:
    """Bytes on the wire for ``payload`` bytes under ``proto``."""
    return payload / EFFICIENCY[proto]
