"""Ring AllReduce: reduce-scatter then all-gather around a ring, 2(P-1) steps per channel.

The buffer is cut into C channel parts (``split_ranges``), each reduced by its own
ring on its own channel; every ring cuts its part into P chunks (so any count
works, also count < P); with ``slices`` S every chunk is cut again into S slices
and every ring step becomes S steps, one per slice (NCCL's pipelining of a chunk
into slices). Position i of a ring sends to position i+1. Reduce-scatter step k
(k = 0..P-2): position i sends chunk (i - k) mod P, the receiver adds it;
afterwards position i owns the full sum of chunk (i + 1) mod P. All-gather step k:
position i sends chunk (i + 1 - k) mod P, the receiver overwrites its copy. All
channels of a step are one schedule step, in channel order.

Ring orders (``ring_orders``):

* one node (no ``gpus_per_node``, or one node of them): every channel is the ring
  0, 1, ..., P-1;
* several nodes of G GPUs: NCCL 2.20+'s paired rail rings. Channel c follows search channel s = c
  mod G (coll channels repeat the search channels, NVIDIA/nccl src/graph/connect.cc:69-72); even s
  enters a node at GPU s and visits s, s-1, ..., s+1 (mod G), leaving from GPU s+1; odd s enters at
  s and visits s, s+1, ..., s-1 (src/graph/search.cc:559-574, 669-751, crossNic 2); odd nodes run
  the order of s^1 (connect.cc:392-405), so every hop between nodes joins two GPUs of one rail (one
  NIC index), except the wrap-around hop when the node count is odd; with K < G NICs of B GPUs each
  (B even), search channel s enters at a GPU of NIC s mod K (``entry_gpu``) and runs through the
  node so that it leaves from a GPU of the same NIC, the same order on every node;
* ``direct`` (GPUs linked without NVSwitch): channel c visits the GPUs of each
  node along Hamiltonian cycle c mod H (``hamiltonian_cycles``), so the channels
  spread over the pair links.

``ring_phases`` runs the same pattern on many disjoint rank groups at once, each
on its own element range and channel; the hierarchical algorithms reuse it.
"""
from __future__ import annotations

from functools import lru_cache
from itertools import permutations
from math import gcd

import numpy as np

from collsim.algorithms import Algorithm
from collsim.algorithms.timing import chain, step
from collsim.core.compose import ScheduleBuilder, split_ranges
from collsim.core.schedule import COPY, REDUCE, Schedule

# up to 7 GPUs a node: every Hamiltonian cycle; beyond, the rotations i -> i + d
MAX_ENUMERATED_CYCLES = 720


def ring_phases(b: ScheduleBuilder, groups: np.ndarray, offset, length, slices: int = 1,
                reduce_scatter: bool = True, all_gather: bool = True, channel=0,
                steps: int | None = None, chunks: tuple | None = None) -> None:
    """Append ring reduce-scatter and/or all-gather steps to ``b``.

    groups: (G, n) rank matrix; row g is one ring (position i sends to i+1).
    offset, length: (G,) element range each ring reduces (its own buffer part), cut in n chunks;
    or ``chunks``: (offsets, lengths), (G, n) arrays, chunk j of each ring where they lie elsewhere.
    channel: (G,) or scalar, the channel of each ring.
    steps: steps per phase (default n - 1; ``ring_quotient`` runs a longer ring's on n positions).
    Reduce-scatter step k: position i sends chunk (i - k) mod n, and owns chunk (i + 1) mod n after
    the phase; all-gather step k: position i sends chunk (i + 1 - k) mod n.
    """
    groups = np.atleast_2d(np.asarray(groups, np.int64))
    n = groups.shape[1]
    steps = n - 1 if steps is None else steps
    if n < 2:
        return
    chunk_off, chunk_len = split_ranges(offset, length, n) if chunks is None else chunks    # (G, n)
    g = groups.shape[0]
    phases = ([(REDUCE, 0)] if reduce_scatter else []) + ([(COPY, 1)] if all_gather else [])
    # step (phase, k, slice) x transfer (group, position):
    # chunk (position + shift - k) mod n of the group
    idx = np.int32 if g * n * slices < 1 << 31 else np.int64           # index width: half the bytes
    shift = np.array([sh for _, sh in phases], idx)[:, None]
    k = np.arange(steps, dtype=idx)[None, :]
    # (phases, steps, n)
    chunk = (np.arange(n, dtype=idx)[None, None, :] + (shift - k)[:, :, None]) % n
    # (phases, steps, G, n)
    flat = (np.arange(g, dtype=idx) * n)[None, None, :, None] + chunk[:, :, None, :]
    flat = flat.reshape(len(phases), steps, 1, g * n)
    if slices > 1:
        flat = flat * slices + np.arange(slices, dtype=idx)[None, None, :, None]
        chunk_off, chunk_len = (a.ravel() for a in split_ranges(chunk_off, chunk_len, slices))
    shape = (len(phases) * steps * slices, g * n)
    ops = np.repeat([op for op, _ in phases], steps * slices)[:, None]
    ch = np.repeat(np.broadcast_to(np.asarray(channel, np.int64), (g,)), n)[None, :]
    b.add_steps(groups.ravel()[None, :], np.roll(groups, -1, axis=1).ravel()[None, :],
                np.take(chunk_off, flat).reshape(shape), np.take(chunk_len, flat).reshape(shape),
                ops, ch)


@lru_cache(maxsize=16)
def hamiltonian_cycles(g: int) -> tuple[tuple[int, ...], ...]:
    """Directed Hamiltonian cycles of g fully linked GPUs, each from GPU 0: all of them while there
    are at most ``MAX_ENUMERATED_CYCLES`` (every directed pair link then lies on equally many), else
    the rotations i -> i + d for d coprime to g."""
    if g <= 2:
        return (tuple(range(g)),)
    count = 1
    for k in range(2, g):
        count *= k
    if count <= MAX_ENUMERATED_CYCLES:
        return tuple((0,) + p for p in permutations(range(1, g)))
    return tuple(tuple(i * d % g for i in range(g)) for d in range(1, g) if gcd(d, g) == 1)


def nic_block(g: int, nics: int | None) -> int:
    """GPUs a node has per NIC when each NIC serves two or
    more of them alike (else 1: a NIC per GPU, or more)."""
    return g // nics if nics and nics < g and g % nics == 0 and (g // nics) % 2 == 0 else 1


def entry_gpu(s: int, g: int, nics: int | None = None) -> int:
    """The local GPU where search channel s enters a node: GPU s with a NIC per GPU; with K NICs of
    B GPUs each, a GPU of NIC s mod K (NCCL's search starts channel c at net c mod K, search.cc
    ncclTopoSearchRecNet), the (s div K) mod B-th of its block."""
    b = nic_block(g, nics)
    return s % g if b == 1 else (s % nics) * b + (s // nics) % b


def node_order(s: int, g: int, nics: int | None = None) -> np.ndarray:
    """Local GPUs of rail ring search channel s in visiting order. A NIC per GPU: even s runs s,
    s-1, ..., s+1, odd s runs s, s+1, ..., s-1. K NICs of B GPUs: from ``entry_gpu`` down if its
    place in its NIC's block is even, else up, so that it leaves from a GPU of the same NIC."""
    e, b = entry_gpu(s, g, nics), nic_block(g, nics)
    step = (1 if s % 2 else -1) if b == 1 else (1 if (e % b) % 2 else -1)
    return (e + step * np.arange(g)) % g


def ring_orders(ranks: int, channels: int, gpus_per_node: int | None = None, direct: bool = False,
                nics_per_node: int | None = None) -> np.ndarray:
    """(channels, ranks) rank order of every channel's ring (see the module docstring)."""
    g = ranks if gpus_per_node is None else gpus_per_node
    nodes = ranks // g
    out = np.empty((channels, ranks), np.int64)
    for c in range(channels):
        if direct:
            local = [np.array(hamiltonian_cycles(g)[c % len(hamiltonian_cycles(g))])] * nodes
        elif nodes == 1:
            local = [np.arange(g)]
        # enters and leaves through one NIC: the same on every node
        elif nic_block(g, nics_per_node) > 1:
            local = [node_order(c % g, g, nics_per_node)] * nodes
        else:
            s = c % g
            local = [node_order(s ^ 1 if n % 2 and (s ^ 1) < g else s, g) for n in range(nodes)]
        out[c] = np.concatenate([n * g + order for n, order in enumerate(local)])
    return out


def ring(ranks: int, count: int, itemsize: int = 4, slices: int = 1, channels: int = 1,
         gpus_per_node: int | None = None, direct: bool = False, loops: int = 1,
         nics_per_node: int | None = None) -> Schedule:
    """Ring AllReduce of ``count`` elements on ``ranks`` ranks over ``channels`` rings,
    2(P-1)*slices steps per loop: with ``loops`` L every channel part is cut into L consecutive
    parts, reduced one after the other by the same ring (NCCL's loop over the buffer, nranks x
    chunkSize bytes at a time: device/all_reduce.h runRing)."""
    meta = {"slices": slices, "channels": channels}
    if loops > 1:
        meta["loops"] = loops
    if gpus_per_node is not None:
        meta["gpus_per_node"] = gpus_per_node
    if direct:
        meta["direct"] = True
    b = ScheduleBuilder(ranks, count, itemsize, name="ring", meta=meta)
    off, ln = split_ranges(np.array([0]), np.array([count]), channels)
    l_off, l_len = split_ranges(off[0], ln[0], loops)                          # (C, L)
    if nics_per_node is not None:
        meta["nics_per_node"] = nics_per_node
    orders = ring_orders(ranks, channels, gpus_per_node, direct, nics_per_node)
    for i in range(loops):
        ring_phases(b, orders, l_off[:, i], l_len[:, i], slices, channel=np.arange(channels))
    return b.build()


def ring_quotient(ranks: int, count: int, itemsize: int = 4, slices: int = 1, channels: int = 1,
                  gpus_per_node: int = 1, loops: int = 1, nodes: int = 2,
                  nics_per_node: int | None = None, reduce_scatter: bool = True,
                  all_gather: bool = True) -> Schedule:
    """The rail rings of ``ring(ranks, count, ..., gpus_per_node=G)`` seen from ``nodes``
    consecutive nodes: the quotient by the shift of every rank ``nodes`` nodes on, which maps NCCL's
    rings onto themselves when the rings repeat every ``nodes`` nodes and the node count is a
    multiple of it (``collsim.simulate.symmetry``).

    Positions 0..M-1 of every channel's ring (M = nodes x G ranks) run the whole ring's 2(P-1) steps
    per loop; the last sends to the first, which stands for the first position ``nodes`` nodes on.
    Chunks carry labels mod M (position i sends label (i - k) mod M at reduce-scatter step k), so
    each transfer waits for the one its predecessor sent a step before, as in the whole ring; a
    label's earlier use M steps back is a wait the ring's own chain already implies. Each chunk has
    the whole ring's size when the parts split evenly (then every transfer is the image of its whole
    ring's one, exactly), else the nearest whole count of elements.
    ``reduce_scatter``/``all_gather``: the phases it runs (one of them: the quotient of a ring
    ReduceScatter or AllGather, ``collsim.algorithms.ring_halves``, whose chunks are the segments'
    channel parts alike)."""
    m = nodes * gpus_per_node
    off, ln = split_ranges(np.array([0]), np.array([count]), channels)
    # (C, L)
    chunk = np.maximum(np.rint(split_ranges(off[0], ln[0], loops)[1] / ranks), 1).astype(np.int64)
    part = (m * chunk).T.ravel()                             # loop-major: loop i's parts one by one
    starts = np.concatenate([[0], np.cumsum(part)[:-1]]).reshape(loops, channels)
    meta = {"slices": slices, "channels": channels, "gpus_per_node": gpus_per_node,
            "quotient_of": ranks, "loops": loops}
    b = ScheduleBuilder(m, int(part.sum()), itemsize, name="ring", meta=meta)
    orders = ring_orders(ranks, channels, gpus_per_node, nics_per_node=nics_per_node)[:, :m]
    for i in range(loops):
        ring_phases(b, orders, starts[i], m * chunk[:, i], slices, reduce_scatter, all_gather,
                    channel=np.arange(channels), steps=ranks - 1)
    return b.build()


def ring_time(p: int, nb, links, params: dict):
    """Closed form on a uniform topology (``timing.chain``): per loop 2(P-1)S steps of m = N/(P S
    C L) bytes per transfer, the first (P-1)S reducing."""
    c, s, loops = params["channels"], params["slices"], params.get("loops", 1)
    if p == 1:
        return np.zeros_like(nb)
    m = nb / (p * s * c * loops)
    k = (p - 1) * s
    return chain([(*step(m, links.alpha, links.beta, links.gamma), k),
                  (*step(m, links.alpha, links.beta, 0.0), k)] * loops, c)


RING = Algorithm(
    "ring",
    "ring reduce-scatter + all-gather per channel, 2(P-1) steps; NCCL's rail rings across nodes",
    ring, lambda p, q: 2 * p * (p - 1) * q["slices"] * q["channels"] * q.get("loops", 1),
    params=("slices", "channels", "gpus_per_node", "direct", "loops", "nics_per_node"),
    closed_form=ring_time,
    granularity=lambda p, q: p * q["slices"] * q["channels"] * q.get("loops", 1),
    formula="K = 2(P-1)S steps of m = N/(P S C): d = alpha + m beta (+ m gamma in the first half), "
            "h = m beta; T = sum d + (C-1) h + sum_{k<K-1} max(0, (C-1) h - (d_k - h)); one "
            "channel: 2(P-1) S alpha + 2 (P-1)/P N beta + (P-1)/P N gamma",
    exact='policy "schedule" (ports serve in schedule order): slices 1 exact on a uniform topology '
          "for N a multiple of the granularity; slices > 1 an upper bound (the simulation sends a "
          "chunk's next slice as soon as the last has left: 2(P-1)(alpha + m beta) + (S-1) m beta "
          'on one channel). Policy "fair" (the default): the same on one channel; C channels share '
          "every port and pay their latencies together: with slices 1 between this form and the "
          "one-channel form, never above the one-channel, one-slice form",
    nccl_name="Ring")
