"""Hierarchical AllReduce on nodes x gpus_per_node ranks (rank = node * G + local).

``hierarchical`` (pipelined): the buffer is cut into C channel parts and each
part into S ``slices``; slice j of part c is one unit on channel c S + j. A
unit runs (1) a ring reduce-scatter inside every node over G shards (afterwards
local GPU l owns shard (l + 1) mod G); (2) the GPUs with the same local index l
in all nodes AllReduce shard (l + 1) mod G across nodes with a ring
(``inter="ring"``) or NCCL's double binary tree (``inter="tree"``); (3) a ring
all-gather inside every node. The schedule is a wavefront (``compose.wavefront``):
slice j starts one step after slice j - 1 in schedule order, so where ports serve
in schedule order (``simulate(..., policy="schedule")``) the inter-node phase of
one slice overlaps the intra-node phases of others. Under the default fair policy
nothing orders the slices (each on its own channel, on its own elements): they
start together, share every port and go through the phases together, so slices
do not pipeline. ``slices=1`` is the classic, non-pipelined form (phases one
after the other).

``nccl-tree``: NCCL's tree (NVIDIA/nccl src/graph/connect.cc). Channel c runs a chain inside each
node from head GPU c mod G (the GPU whose NIC the channel uses: NIC c -> GPU c -> c+1 -> ...,
connect.cc:52-62 with the TREE pattern NCCL picks on multi-node H100, search.cc:1117-1120 and
``collsim.nccl.graphs``), the heads joined by NCCL's double binary tree over nodes
(trees.cc:31-109); channels c < C/2 use tree 0, the others tree 1 (connectTrees,
connect.cc:137-174). Each channel's part is pipelined over chunks (``tree_pipeline.tree_phase``). On
one node it is the chain.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from collsim.algorithms import Algorithm
from collsim.algorithms.ring import entry_gpu, ring_phases
from collsim.algorithms.timing import chain, step
from collsim.algorithms.tree import channel_parts, tree_chunks, up_down_steps
from collsim.algorithms.tree_pipeline import tree_phase, tree_plan, tree_steps
from collsim.core.compose import ScheduleBuilder, interleave, split_ranges, wavefront
from collsim.core.schedule import Schedule


def hierarchical(ranks: int, count: int, itemsize: int = 4, gpus_per_node: int = 1,
                 inter: str = "ring", slices: int = 1, chunks: int = 1,
                 channels: int = 1) -> Schedule:
    g = gpus_per_node
    nodes = ranks // g
    units = channels * slices
    b = ScheduleBuilder(ranks, count, itemsize, name="hierarchical",
                        meta={"gpus_per_node": g, "inter": inter, "slices": slices,
                              "chunks": chunks, "channels": channels})
    part_off, part_len = channel_parts(count, channels)
    u_off, u_len = (a.ravel() for a in split_ranges(part_off, part_len, slices))        # (units,)
    unit = np.arange(units)
    grid = np.arange(ranks).reshape(nodes, g)
    intra = np.tile(grid, (units, 1))                                           # (units * nodes, g)
    per_node = np.repeat(unit, nodes)
    ring_phases(b, intra, u_off[per_node], u_len[per_node], all_gather=False, channel=per_node)
    sh_off, sh_len = split_ranges(u_off, u_len, g)                          # (units, g)
    owned = (np.arange(g) + 1) % g                                          # shard owned by local l
    off, ln = sh_off[:, owned].ravel(), sh_len[:, owned].ravel()
    across = np.tile(grid.T, (units, 1))                                        # (units * g, nodes)
    per_local = np.repeat(unit, g)
    if inter == "ring":
        ring_phases(b, across, off, ln, channel=per_local)
    else:
        seg_off, seg_len = split_ranges(off, ln, 2)
        tree_phase(b, tree_steps("double", nodes, 1, chunks), across, seg_off, seg_len, per_local)
    ring_phases(b, intra, u_off[per_node], u_len[per_node], reduce_scatter=False, channel=per_node)
    s = b.build()
    return wavefront(s, s.channel % slices) if slices > 1 else s


def tree_of_channel(channels: int) -> np.ndarray:
    """NCCL's tree (0 or 1) of each channel: the first half
    of the channels on tree 0 (connect.cc:147-164)."""
    return 2 * np.arange(channels) // channels


def hierarchical_nccl(ranks: int, count: int, itemsize: int = 4, gpus_per_node: int = 1,
                      chunks: int = 1, channels: int = 1,
                      nics_per_node: int | None = None) -> Schedule:
    g = gpus_per_node
    meta = {"gpus_per_node": g, "chunks": chunks, "channels": channels}
    if nics_per_node is not None:
        meta["nics_per_node"] = nics_per_node
    pos = np.arange(ranks)
    heads = np.array([entry_gpu(c, g, nics_per_node) for c in range(channels)])[:, None]
    groups = pos // g * g + (pos % g + heads) % g             # channel c: chains from its entry GPU
    part_off, part_len = channel_parts(count, channels)
    tree = tree_of_channel(channels)

    def part(t: int) -> Schedule:                              # each tree pipelined on its own plan
        on = np.flatnonzero(tree == t)
        b = ScheduleBuilder(ranks, count, itemsize, name="nccl-tree", meta=meta)
        tree_phase(b, tree_steps(f"nccl{t}", ranks, g, chunks), groups[on], part_off[on, None],
                   part_len[on, None], on, fan=2)
        return b.build()
    return interleave(part(t) for t in np.unique(tree))


def _phases(p: int, nb, links, q: dict) -> tuple[list, list]:
    """(steps (d, h, count), wrap) of one unit of ``hierarchical`` (N/(C S) bytes): the intra-node
    ring reduce-scatter, the inter-node ring or trees, the intra-node ring all-gather. Phases use
    different ports (GPU ports, then NICs) on nodes x G with a NIC per GPU: no wrap at their
    ends."""
    g, c, s = q["gpus_per_node"], q["channels"], q["slices"]
    n, unit = p // g, nb / (c * s)
    a, b, gamma = links.alpha, links.beta, links.gamma
    ai, bi = links.inter()
    intra = unit / g
    phases = []
    if g > 1:
        phases.append([(*step(intra, a, b, gamma), g - 1)])
    if n > 1 and q["inter"] == "ring":
        m = intra / n
        phases.append([(*step(m, ai, bi, gamma), n - 1), (*step(m, ai, bi, 0.0), n - 1)])
    elif n > 1:
        (u, d), m = up_down_steps("double", n, q["chunks"]), intra / (2 * q["chunks"])
        phases.append([(*step(m, ai, bi, gamma), u), (*step(m, ai, bi, 0.0), d)])
    if g > 1:
        phases.append([(*step(intra, a, b, 0.0), g - 1)])
    steps = [x for ph in phases for x in ph]
    # n = 1: GPU ports throughout
    wrap = [j < len(ph) - 1 or n == 1 for ph in phases for j in range(len(ph))]
    return steps, wrap


def hierarchical_time(p: int, nb, links, q: dict):
    """Slices 1: the phases' ``timing.chain`` (exact). Slices S > 1: the wavefront's global steps,
    each costed at the slowest local step it holds, on C S channels with wrap everywhere: an upper
    bound."""
    steps, wrap = _phases(p, nb, links, q)
    if not steps:
        return np.zeros_like(nb)
    c, s = q["channels"], q["slices"]
    if s == 1:
        return chain(steps, c, wrap)
    local = [(d, h) for d, h, count in steps for _ in range(count)]
    glob = []
    for t in range(len(local) + s - 1):
        window = local[max(0, t - s + 1):t + 1]
        glob.append((np.max([d for d, _ in window], axis=0), np.max([h for _, h in window], axis=0),
                     1))
    return chain(glob, c * s)


@lru_cache(maxsize=1024)
def nccl_step_classes(p: int, g: int, chunks: int, trees: tuple) -> tuple:
    """Per step of ``nccl-tree`` with channels on ``trees``: (up, has intra-node, has inter-node
    transfers), the two trees' plans side by side (``compose.interleave``)."""
    rows = {}
    for t in trees:
        layout = f"nccl{t}"
        st, plan = tree_steps(layout, p, g, chunks), tree_plan(layout, p, g)
        cross = (plan.child // g != plan.parent // g)[st.edge]
        for k in range(len(st.up)):
            on = st.step == k
            up, intra, inter = rows.get(k, (False, False, False))
            rows[k] = (up or bool(st.up[k]), intra or bool((~cross[on]).any()),
                       inter or bool(cross[on].any()))
    return tuple(rows[k] for k in sorted(rows))


def nccl_time(p: int, nb, links, q: dict):
    """Every step costed at the slowest link class it holds
    (reduce if any tree reduces in it): ``timing.chain``."""
    c, k, g = q["channels"], q["chunks"], q["gpus_per_node"]
    m = nb / (c * k)
    ai, bi = links.inter()
    costs, steps = {}, []
    for cls in nccl_step_classes(p, g, k, tuple(np.unique(tree_of_channel(c)).tolist())):
        if cls not in costs:
            up, intra, inter = cls
            gamma = links.gamma if up else 0.0
            on = [step(m, a, b, gamma)
                  for a, b, there in ((links.alpha, links.beta, intra), (ai, bi, inter)) if there]
            costs[cls] = (np.max([d for d, _ in on], axis=0), np.max([h for _, h in on], axis=0))
        if steps and steps[-1][3] == cls:                # runs of alike steps: one entry
            steps[-1][2] += 1
        else:
            steps.append([*costs[cls], 1, cls])
    return chain([tuple(x[:3]) for x in steps], c) if steps else np.zeros_like(nb)


HIERARCHICAL = Algorithm(
    "hierarchical", "intra-node reduce-scatter, inter-node ring or tree AllReduce, intra-node "
                    "all-gather; slices pipelined on channels", hierarchical,
    lambda p, q: q["channels"] * q["slices"] * (2 * p * (q["gpus_per_node"] - 1) + (
        2 * p * (p // q["gpus_per_node"] - 1) if q["inter"] == "ring"
        else 4 * q["gpus_per_node"] * (p // q["gpus_per_node"] - 1) * q.get("chunks", 1))),
    params=("gpus_per_node", "inter", "slices", "chunks", "channels"), needs=("gpus_per_node",),
    default_chunks=lambda nbytes, p, q: (
        tree_chunks(nbytes // (2 * q["channels"] * q["slices"] * q["gpus_per_node"]))
        if q["inter"] == "tree" else 1),
    closed_form=hierarchical_time,
    granularity=lambda p, q: q["channels"] * q["slices"] * (
        p if q["inter"] == "ring" else 2 * q["gpus_per_node"] * q["chunks"]),
    formula="per unit of N/(C S): ring inside nodes on G shards [(G-1) steps of N/(C S G), "
            "reducing], the inter AllReduce on n nodes with alpha_i, beta_i [ring: 2(n-1) steps of "
            "N/(C S G n); tree: U up, U down of N/(2 C S G chunks)], ring all-gather inside nodes; "
            "timing.chain with no wrap between phases; one channel and slice: 2(G-1) alpha + 2 "
            "(G-1)/G N beta + (G-1)/G N gamma + 2(n-1) alpha_i + 2 (n-1)/n (N/G) beta_i + (n-1)/n "
            "(N/G) gamma",
    exact="slices 1, one channel and inter ring: exact on nodes x G with a NIC per GPU for N a "
          "multiple of the granularity (either policy); otherwise an upper bound under policy "
          "\"schedule\" (the wavefront's steps costed at their slowest transfer, every slice "
          'paying alpha). Policy "fair" (the default): slices, each on its own channel, share the '
          "ports and move together instead of pipelining: never above the form with one slice "
          "and one channel")
NCCL_TREE = Algorithm(
    "nccl-tree",
    "NCCL's tree: per channel a chain in each node from GPU c mod G, heads joined by the double "
    "binary tree over nodes (half the channels on each tree)", hierarchical_nccl,
    lambda p, q: 2 * (p - 1) * q["chunks"] * q["channels"],
    params=("gpus_per_node", "chunks", "channels", "nics_per_node"), needs=("gpus_per_node",),
    default_chunks=lambda nbytes, p, q: tree_chunks(nbytes // q["channels"]), closed_form=nccl_time,
    granularity=lambda p, q: q["chunks"] * q["channels"],
    formula="U up and U down steps of m = N/(C chunks), each costed at the slowest link class it "
            "holds: timing.chain; one channel on one link class: U (2 alpha + 2 m beta + m gamma)",
    exact='an upper bound under policy "schedule" (every chunk pays alpha in the form); no stated '
          'bound under policy "fair" (the default)', nccl_name="Tree")
