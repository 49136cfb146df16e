"""CollNet AllReduce: NCCL's CollNetDirect and CollNetChain,
where the network's switches reduce (SHARP).

The network's reducing switches (InfiniBand SHARP through NCCL's CollNet plugin) are one endpoint of
the schedule shared by every node (``Schedule.network``: endpoint ranks + switches): a reduce into
it accumulates (the aggregation tree in the switches), a copy out of it delivers the sum of every
node (the plugin's result, back to each node's heads). A GPU reaches it over its NIC
(``collsim.simulate.resources``). File references point into NVIDIA/nccl v2.28.9-1.

Both cut the buffer in loops (NCCL's gridOffset loop of loopSize), each loop in one piece per
channel and the piece of a channel in chunks (enqueue.cc:568-582 sets ``collnet.count`` and
``chunkCount`` per channel from ``calcCollChunking``, enqueue.cc:2030-2041; the plain algorithms
here take NCCL's default chunk: ``DIRECT_CHUNK_BYTES``, ``CHAIN_CHUNK_BYTES``). Loop l's pieces are
its own elements, so loop l runs one step behind loop l - 1 (``compose.wavefront``), as NCCL's warp
groups process one chunk after another.

``collnet-direct`` (device/all_reduce.h:251-385, heads from connect.cc:176-235): the heads of a node
are the GPUs that front its NICs (head h: the first GPU of NIC h, every GPU with a NIC per GPU; all
channels share them, connect.cc:183-189,214-217). A loop's piece of a channel is one chunk per head.
Per loop and channel:

1. scatter (lane 0, all_reduce.h:273-295): every GPU reduce-sends chunk h to head h of its node (its
   own chunk stays: the head reduces its input with its peers', ``recvReduceDirectSend``,
   all_reduce.h:300-310);
2. reduce (lane 1, all_reduce.h:299-310): head h reduce-sends chunk h to the network
   (``direct->out`` = nRanks, connect.cc:199);
3. broadcast (lane 2, all_reduce.h:350-364): the network
   copies the sum of chunk h back to head h, which
4. copies it to every other GPU of its node (``directRecvCopyDirectSend`` to ``direct->down``; the
   receivers' gather warps, all_reduce.h:329-349, only wait for it).

Per GPU that is 2 (G-1)/G S over NVLink in each direction, and per head S/H through its NIC each way
(S bytes per rank, G GPUs and H heads a node): a ring moves 2 (P-1)/P S / G per NIC, twice as much.

``collnet-chain`` (all_reduce.h:628-752; chain from connect.cc:62-65): per channel a chain through
the GPUs of each node from its head, the GPU of the NIC the channel uses (``ring.entry_gpu``, as
``nccl-tree``'s chains), which talks to the network (``collnetChain.up`` = nRanks). Per loop and
channel one chunk (loopSize nChannels x chunkSize, all_reduce.h:635,674): reduce up the chain to the
head (lane 0), the head reduce-sends to the network, the network copies the sum to the head and the
head copies it down the chain (lane 1: NCCL's broadcast half of the threads, all_reduce.h:639-660).
2G steps per loop; per node the channel's NIC carries S/C each way.

Not modelled: registered buffers (``netRegUsed``), NCCL's shift of the scatter order
(``direct->shift``, connect.cc:231: every GPU sends to every head in one step here), and NVLS across
nodes (NVLS+CollNet, all_reduce.h:455-516), which ``collsim.algorithms.nvls`` runs with a tree
instead.
"""
from __future__ import annotations

import numpy as np

from collsim.algorithms import Algorithm
from collsim.algorithms.ring import entry_gpu
from collsim.algorithms.tree import MAX_DEFAULT_CHUNKS
from collsim.core.compose import ScheduleBuilder, split_ranges, wavefront
from collsim.core.schedule import COPY, REDUCE, Schedule

# NCCL_BUFFSIZE / NCCL_STEPS, one step per chunk (enqueue.cc:2020-2023)
DIRECT_CHUNK_BYTES = 512 << 10
CHAIN_CHUNK_BYTES = 256 << 10    # min(256 KiB, NCCL_BUFFSIZE / NCCL_STEPS) (enqueue.cc:2036-2037)


def collnet_loops(nbytes: int, channels: int, heads: int, chunk_bytes: int) -> int:
    """Loops of ``nbytes``: ceil(bytes / (channels x heads x
    chunk_bytes)), 1 to MAX_DEFAULT_CHUNKS."""
    return int(min(max(-(-int(nbytes) // (channels * heads * chunk_bytes)), 1), MAX_DEFAULT_CHUNKS))


def heads_of(g: int, nics: int | None) -> np.ndarray:
    """Local GPUs that head a node's CollNetDirect: the
    first GPU of each NIC (GPU l uses NIC l K // G)."""
    k = min(g, nics or g)
    return -(-np.arange(k) * g // k)


def _pieces(count: int, loops: int, channels: int, parts: int) -> tuple[np.ndarray, np.ndarray]:
    """(offset, length), shape (loops, channels, parts): loop-major as NCCL's gridOffset loop, each
    loop's piece of channel c (bid) cut in ``parts`` chunks (all_reduce.h:291-293,305-307)."""
    off, ln = split_ranges(np.array([0]), np.array([count]), loops)
    off, ln = split_ranges(off[0], ln[0], channels)
    return split_ranges(off, ln, parts)


def _loop_lag(s: Schedule, l_off: np.ndarray, l_len: np.ndarray) -> Schedule:
    """``s`` with every transfer of loop l moved l steps
    later (the loops' wavefront; loops lie in order)."""
    return wavefront(s, np.searchsorted(l_off + l_len, s.offset, side="right"))


def scatter_order(g: int, heads: np.ndarray) -> np.ndarray:
    """(G, H): the place of head h in local GPU l's scatter. NCCL's scatter visits ``up`` (the heads
    but itself) from ``shift`` = l mod H on (prims_simple.h:448-449, connect.cc:214-217,231: "so
    that leaves don't send to same head simultaneously"); -1 for a GPU's own chunk."""
    place = np.full((g, len(heads)), -1, np.int64)
    for local in range(g):
        up = [h for h in range(len(heads)) if heads[h] != local]
        for j in range(len(up)):
            place[local, up[(j + local % len(heads)) % len(up)]] = j
    return place


def collnet_direct(ranks: int, count: int, itemsize: int = 4, gpus_per_node: int = 1,
                   chunks: int = 1, channels: int = 1,
                   nics_per_node: int | None = None) -> Schedule:
    """CollNetDirect on ranks // gpus_per_node nodes, ``chunks`` loops per channel (module
    docstring). A GPU scatters in NCCL's order (``scatter_order``); a head sends the sum to its
    peers from the GPU after it on, round the node (NCCL writes them all in one pass,
    all_reduce.h:363: every GPU receives from one head at a time alike)."""
    g, nodes = gpus_per_node, ranks // gpus_per_node
    heads = heads_of(g, nics_per_node)
    meta = {"gpus_per_node": g, "chunks": chunks, "channels": channels, "heads": len(heads)}
    b = ScheduleBuilder(ranks, count, itemsize, name="collnet-direct", meta=meta, network=1)
    off, ln = _pieces(count, chunks, channels, len(heads))                           # (L, C, H)
    loop, ch, node, h = (a.ravel()
                         for a in np.meshgrid(np.arange(chunks), np.arange(channels),
                                              np.arange(nodes), np.arange(len(heads)),
                                              indexing="ij"))
    head, o, n = node * g + heads[h], off[loop, ch, h], ln[loop, ch, h]   # one per head's chunk
    each = lambda a: np.repeat(a, g)                                      # noqa: E731 - x every GPU
    local = np.tile(np.arange(g), len(head))
    peer = each(node * g) + local
    k = peer != each(head)                                              # a head keeps its own chunk
    up = np.lexsort((scatter_order(g, heads)[local, each(h)], peer, each(ch), each(loop)))
    up = up[k[up]]
    down = np.lexsort(((local - each(heads[h]) - 1) % g, each(head), each(ch), each(loop)))
    down = down[k[down]]
    b.add_step(peer[up], each(head)[up], each(o)[up], each(n)[up], REDUCE, channel=each(ch)[up],
               lane=0)  # scatter
    b.add_step(head, ranks, o, n, REDUCE, channel=ch, lane=1)                         # into the net
    b.add_step(np.full_like(head, ranks), head, o, n, COPY, channel=ch, lane=3)       # the sum back
    b.add_step(each(head)[down], peer[down], each(o)[down], each(n)[down], COPY,
               channel=each(ch)[down], lane=2)
    l_off, l_len = split_ranges(np.array([0]), np.array([count]), chunks)
    return _loop_lag(b.build(), l_off[0], l_len[0])


def collnet_chain(ranks: int, count: int, itemsize: int = 4, gpus_per_node: int = 1,
                  chunks: int = 1, channels: int = 1, nics_per_node: int | None = None) -> Schedule:
    """CollNetChain on ranks // gpus_per_node nodes,
    ``chunks`` loops per channel (module docstring)."""
    g, nodes = gpus_per_node, ranks // gpus_per_node
    meta = {"gpus_per_node": g, "chunks": chunks, "channels": channels}
    b = ScheduleBuilder(ranks, count, itemsize, name="collnet-chain", meta=meta, network=1)
    off, ln = _pieces(count, chunks, channels, 1)
    loop, ch, node = (a.ravel()
                      for a in np.meshgrid(np.arange(chunks), np.arange(channels), np.arange(nodes),
                                           indexing="ij"))
    o, n = off[loop, ch, 0], ln[loop, ch, 0]
    entry = np.array([entry_gpu(c, g, nics_per_node) for c in range(channels)], np.int64)
    at = lambda pos: node * g + (entry[ch] + pos) % g                  # noqa: E731 - chain position
    for pos in range(g - 1, 0, -1):                                    # reduce up the chain
        b.add_step(at(pos), at(pos - 1), o, n, REDUCE, channel=ch, lane=0)
    b.add_step(at(0), ranks, o, n, REDUCE, channel=ch, lane=0)           # the head into the network
    # the sum back to the head
    b.add_step(np.full_like(o, ranks), at(0), o, n, COPY, channel=ch, lane=2)
    for pos in range(g - 1):                                                    # and down the chain
        b.add_step(at(pos), at(pos + 1), o, n, COPY, channel=ch, lane=1)
    l_off, l_len = split_ranges(np.array([0]), np.array([count]), chunks)
    return _loop_lag(b.build(), l_off[0], l_len[0])


COLLNET_DIRECT = Algorithm(
    "collnet-direct",
    "NCCL's CollNetDirect: every GPU scatters to its node's heads (a GPU per NIC), the heads "
    "reduce in the network's switches (SHARP) and broadcast the sum to their node", collnet_direct,
    lambda p, q: 2 * q["chunks"] * q["channels"] * p * (min(q["gpus_per_node"],
                                                            q.get("nics_per_node") or p) + 1),
    params=("gpus_per_node", "chunks", "channels", "nics_per_node"), needs=("gpus_per_node",),
    default_chunks=lambda nbytes, p, q: collnet_loops(nbytes, q["channels"],
                                                      len(heads_of(q["gpus_per_node"],
                                                                   q.get("nics_per_node"))),
                                                      DIRECT_CHUNK_BYTES),
    formula="none: simulate it (bandwidth-bound: 2 (G-1)/G S per GPU per direction on NVLink, S/H "
            "per head NIC each way, the network's switch adding its latency, not its bandwidth)",
    exact="no closed form", network=True, nccl_name="CollNetDirect")
COLLNET_CHAIN = Algorithm(
    "collnet-chain",
    "NCCL's CollNetChain: per channel a chain in each node up to its head, the network's switches "
    "reduce (SHARP), the sum back down the chain", collnet_chain,
    lambda p, q: 2 * q["chunks"] * q["channels"] * p,
    params=("gpus_per_node", "chunks", "channels", "nics_per_node"), needs=("gpus_per_node",),
    default_chunks=lambda nbytes, p, q: collnet_loops(nbytes, q["channels"], 1, CHAIN_CHUNK_BYTES),
    formula="none: simulate it (2G steps a loop; bandwidth-bound: S per GPU per direction on "
            "NVLink, S/C per channel through its head's NIC each way)", exact="no closed form",
    network=True, nccl_name="CollNetChain")
