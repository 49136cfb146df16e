"""NVLink SHARP AllReduce: NCCL's NVLS (one node, or across nodes with CollNet) and NVLSTree, with
switch endpoints.

A node's NVSwitch is a switch endpoint of the schedule (``Schedule.switches``: the switch of node n
is endpoint P + n): a reduce into it accumulates (``multimem.ld_reduce``), a copy out of it
delivers its value (``multimem.st``).

Every GPU of a node is a head (a single-node NVLS search makes every GPU a head, NVIDIA/nccl
src/graph/search.cc:1043-1046; on H100 with 8 NICs every GPU heads its NIC's channel,
search.cc:694-712). The buffer is cut into C channel parts; each part is processed in ``chunks``
loops, each loop's range cut into one chunk per head (NCCL's loop of nHeads x chunkSize,
enqueue.cc:2094-2136; default chunk 128 KiB, ``NCCL_NVLS_CHUNKSIZE``, src/transport/nvls.cc:153).
Per channel and loop:

1. every GPU reduce-sends the loop's range to its node's switch;
2. the switch copies chunk h of the sum to head h (the head's ``multimem.ld_reduce``);
3. NVLSTree: per head index h, NCCL's double binary tree over nodes reduces and broadcasts
   chunk h between the heads over their NICs, tree c mod 2 for channel c (connect.cc:304-311);
   ``nvls-sharp`` (NCCL's NVLS across nodes, which runs only with CollNet, enqueue.cc:1803): head h
   reduce-sends chunk h to the network's switch (``Schedule.network``, endpoint P + nodes;
   ``nvls->out``, connect.cc:261) and the switch returns the sum of every node
   (all_reduce.h:485-515: "Reduce, send to network", "Recv from network, broadcast"), as
   ``collsim.algorithms.collnet`` does;
4. head h copies chunk h back to the switch (``multimem.st``);
5. the switch copies the loop's range to every GPU of the node.

Lanes (``Schedule.lane``, NCCL's warp groups, device/all_reduce.h runNvls/runNvlsTree): 0 scatters
(1), 1 reduces (2, then 4 on one node; across nodes 2 and the tree up or the send to the network), 2
broadcasts (across nodes the tree down and 4), 3 gathers (5), 4 the network's sum landing in the
head (its NIC writes it).

Per GPU per direction that is S (n+1)/n bytes for S bytes per rank and n GPUs a node, as sjeaugey
describes NVLS (NVIDIA/nccl-tests PR 239); a ring moves 2 (n-1)/n S. The loops form a wavefront
(``compose.wavefront``): loop i starts one step after loop i - 1, so the stages of consecutive loops
overlap as NCCL's scatter, reduce and gather warps do (device/all_reduce.h:387-454).

NVLS across nodes needs CollNet (a SHARP plugin); without it NCCL runs NVLSTree across nodes
(tuning.cc:466-471). Not modelled: its channels' interleaved loops (loopSize nChannels x nHeads x
chunk, all_reduce.h:456-460): each channel here loops over its own part, which moves the same bytes.
"""
from __future__ import annotations

import numpy as np

from collsim.algorithms import Algorithm
from collsim.algorithms.timing import step
from collsim.algorithms.tree import MAX_DEFAULT_CHUNKS, channel_parts
from collsim.algorithms.tree_pipeline import tree_phase, tree_steps
from collsim.core.compose import ScheduleBuilder, interleave, split_ranges, wavefront
from collsim.core.schedule import COPY, REDUCE, Schedule

NVLS_CHUNK_BYTES = 128 << 10    # NCCL_NVLS_CHUNKSIZE default, src/transport/nvls.cc:153 (v2.28.9-1)


def nvls_loops(part_bytes: int, heads: int, chunk_bytes: int = NVLS_CHUNK_BYTES) -> int:
    """Loops of a channel part of ``part_bytes``: ceil(bytes / (heads x chunk_bytes)), 1 to
    MAX_DEFAULT_CHUNKS."""
    return int(min(max(-(-int(part_bytes) // (heads * chunk_bytes)), 1), MAX_DEFAULT_CHUNKS))


def _stages(ranks: int, count: int, itemsize: int, g: int, chunks: int, channels: int,
            on: np.ndarray,
            name: str) -> Schedule:
    """The steps of channels ``on`` with every loop in step (no wavefront yet); across nodes tree
    ``on[0] % 2``, or the network's switch (``nvls-sharp``)."""
    nodes, net = ranks // g, name == "nvls-sharp"
    b = ScheduleBuilder(ranks, count, itemsize, name=name, switches=nodes, network=int(net),
                        meta={"gpus_per_node": g, "chunks": chunks, "channels": channels})
    part_off, part_len = channel_parts(count, channels)
    # (C, L): a loop's range
    l_off, l_len = split_ranges(part_off[on], part_len[on], chunks)
    # (C, L, G): head h's chunk
    h_off, h_len = split_ranges(l_off, l_len, g)
    shape = (len(on), chunks, nodes, g)
    c = np.broadcast_to(on[:, None, None, None], shape).ravel()
    gpu = np.broadcast_to(np.arange(ranks).reshape(1, 1, nodes, g), shape).ravel()
    switch = ranks + gpu // g
    whole = [np.broadcast_to(a[:, :, None, None], shape).ravel() for a in (l_off, l_len)]
    mine = [np.broadcast_to(a[:, :, None, :], shape).ravel() for a in (h_off, h_len)]
    # lanes: scatter 0, gather 3
    up, down = (1, 2) if nodes > 1 else (1, 1)
    b.add_step(gpu, switch, *whole, REDUCE, channel=c, lane=0)                # 1. into the switch
    # 2. the sum of chunk h to head h
    b.add_step(switch, gpu, *mine, COPY, channel=c, lane=up)
    # 3. through the network's switch
    if net:
        b.add_step(gpu, ranks + nodes, *mine, REDUCE, channel=c, lane=up)
        # its NIC writes it
        b.add_step(np.full_like(gpu, ranks + nodes), gpu, *mine, COPY, channel=c, lane=4)
    # 3. heads of index h across nodes
    elif nodes > 1:
        heads = np.arange(nodes)[None, :] * g + np.arange(g)[:, None]         # (G, nodes)
        groups = np.broadcast_to(heads, (len(on), chunks, g, nodes)).reshape(-1, nodes)
        tree_phase(b, tree_steps(f"double{on[0] % 2}", nodes, 1, 1), groups, h_off.reshape(-1, 1),
                   h_len.reshape(-1, 1), np.repeat(on, chunks * g), lanes=(up, down), fan=4)
    # 4. head h's chunk back to the switch
    b.add_step(gpu, switch, *mine, COPY, channel=c, lane=down)
    # 5. the loop's range to every GPU
    b.add_step(switch, gpu, *whole, COPY, channel=c, lane=3)
    return b.build()


def _build(name: str, ranks: int, count: int, itemsize: int, g: int, chunks: int,
           channels: int) -> Schedule:
    """Channels on tree 0 and tree 1 built apart and run side by side, then the loops as a
    wavefront."""
    ch = np.arange(channels)
    s = interleave(_stages(ranks, count, itemsize, g=g, chunks=chunks, channels=channels,
                           on=ch[ch % 2 == t], name=name)
                   for t in range(min(channels, 2)))
    part_off, part_len = channel_parts(count, channels)
    l_off, l_len = split_ranges(part_off, part_len, chunks)
    # loops lie in order
    loop = np.searchsorted((l_off + l_len).ravel(), s.offset, side="right") % chunks
    return wavefront(s, loop)


def nvls(ranks: int, count: int, itemsize: int = 4, chunks: int = 1, channels: int = 1) -> Schedule:
    """NVLS on one node of ``ranks`` GPUs (switch endpoint
    ``ranks``), ``chunks`` loops per channel."""
    return _build("nvls", ranks, count, itemsize, ranks, chunks, channels)


def nvlstree(ranks: int, count: int, itemsize: int = 4, gpus_per_node: int = 1, chunks: int = 1,
             channels: int = 1) -> Schedule:
    """NVLSTree on ranks // gpus_per_node nodes (switch of node n: endpoint ranks + n)."""
    return _build("nvlstree", ranks, count, itemsize, gpus_per_node, chunks, channels)


def nvls_sharp(ranks: int, count: int, itemsize: int = 4, gpus_per_node: int = 1, chunks: int = 1,
               channels: int = 1) -> Schedule:
    """NVLS on ranks // gpus_per_node nodes joined by the network's switch (endpoint ranks + nodes):
    NCCL's NVLS with CollNet (switch of node n: endpoint ranks + n)."""
    return _build("nvls-sharp", ranks, count, itemsize, gpus_per_node, chunks, channels)


def nvls_time(p: int, nb, links, q: dict):
    """An upper bound: the L + 3 wavefront steps one after another. In a step a GPU's send side
    holds stages 1 (loop t, G x bytes, reducing) and 4 (loop t - 2, x bytes), its receive side
    stages 2 (loop t - 1, x) and 5 (loop t - 3, G x), x = N/(C L G); with every resource free at the
    step's start a side ends within sum over its stages of d + (C-1) h (each channel's slot at most
    once per stage, the port serving C transfers of each), and the simulation, which never waits for
    a whole step, is no later."""
    c, loops = q["channels"], q["chunks"]
    x = nb / (c * loops * p)
    a, b = links.nvls()
    stages = [(0, 0, step(p * x, a, b, links.gamma)), (1, 1, step(x, a, b, 0.0)),
              (2, 0, step(x, a, b, 0.0)),
              # (local step, side: 0 send / 1 receive, (d, h))
              (3, 1, step(p * x, a, b, 0.0))]
    total = np.zeros_like(nb)
    middle = max(0, loops - 3)                          # steps 3 .. loops-1 hold every stage
    for t in sorted(set(range(min(3, loops + 3))) | set(range(max(3, loops), loops + 3))
                    | ({3} if middle else set())):
        sides = [np.zeros_like(nb), np.zeros_like(nb)]
        for j, side, (d, h) in stages:
            if 0 <= t - j < loops:
                sides[side] = sides[side] + d + (c - 1) * h
        total = total + np.maximum(*sides) * (middle if 3 <= t < loops else 1)
    return total


NVLS = Algorithm(
    "nvls", "NVLink SHARP on one node: reduce into the NVSwitch, heads fetch and store back, the "
            "switch multicasts (per channel, pipelined in 128 KiB chunks)", nvls,
    lambda p, q: 4 * p * q["chunks"] * q["channels"], params=("chunks", "channels"),
    default_chunks=lambda nbytes, p, q: nvls_loops(nbytes // q["channels"], p),
    closed_form=nvls_time, granularity=lambda p, q: p * q["chunks"] * q["channels"],
    formula="L + 3 steps of the loops' wavefront, each at most max(send side, receive side) with a "
            "side's stages costing d + (C-1) h (stage 1: G x bytes reducing, 2 and 4: x, 5: G x; x "
            "= N/(C L G)) on the nvls link; bandwidth-bound: S (G+1)/G bytes per GPU per direction",
    exact='an upper bound but for up to 3% under policy "schedule" (the simulation overlaps the '
          'steps, and its ports queue on their own); no stated bound under policy "fair" (the '
          "default)",
    switches=True, nccl_name="NVLS")
NVLSTREE = Algorithm(
    "nvlstree", "NVLS inside nodes, per head index a double binary tree across nodes over the "
                "head's NIC (NCCL's NVLSTree)", nvlstree,
    lambda p, q: q["chunks"] * q["channels"]
    * (4 * p + 2 * (p // q["gpus_per_node"] - 1) * q["gpus_per_node"]),
    params=("gpus_per_node", "chunks", "channels"), needs=("gpus_per_node",),
    default_chunks=lambda nbytes, p, q: nvls_loops(nbytes // q["channels"], q["gpus_per_node"]),
    granularity=lambda p, q: q["gpus_per_node"] * q["chunks"] * q["channels"],
    formula="none: the loops' switch stages and the heads' trees over the NICs interleave; "
            "simulate it (bandwidth-bound: S (G+1)/G bytes per GPU per direction on NVLink, 2 S/G "
            "per head NIC and tree)",
    exact="no closed form", switches=True, nccl_name="NVLSTree")
NVLS_SHARP = Algorithm(
    "nvls-sharp", "NVLS inside nodes, the network's switches (SHARP) between them: each head "
                  "reduces its chunk into the network and stores the sum back (NCCL's NVLS across "
                  "nodes, with CollNet)", nvls_sharp,
    lambda p, q: q["chunks"] * q["channels"] * 6 * p,
    params=("gpus_per_node", "chunks", "channels"),
    needs=("gpus_per_node",),
    default_chunks=lambda nbytes, p, q: nvls_loops(nbytes // q["channels"],
                                                                            q["gpus_per_node"]),
    granularity=lambda p, q: q["gpus_per_node"] * q["chunks"] * q["channels"],
    formula="none: simulate it (bandwidth-bound: S (G+1)/G bytes per GPU per direction on NVLink, "
            "S/G per head "
            "NIC each way)", exact="no closed form", switches=True, network=True, nccl_name="NVLS")
