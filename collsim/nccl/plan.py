"""NCCL's plan for one channel of one call, ported once (NCCL 2.28; file references into
NVIDIA/nccl): the slot, the chunk, the slices and the loops each algorithm cuts a channel's part
into. The simulation (``collsim.predict.schedules``, ``collective_runs``) builds its schedules from
it and the fitted model (``collsim.fitted.layout``) counts its steps from it. Bytes throughout;
``part`` is the bytes one channel carries (``collsim.nccl.chunking.channel_bytes``).

- Slot: a connection's buffer over NCCL_STEPS, of which LL carries half and LL128 15/16
  (``payload_slot``).
- Ring (AllReduce, AllGather, ReduceScatter): a chunk of RING_CHUNKSTEPS slots (Simple 4, LL and
  LL128 1) sent as RING_SLICESTEPS slices (Simple 2), each loop over ranks x chunk bytes; the last
  loop's chunk is its remainder spread over the ranks (device/all_reduce.h runRing); a Simple slice
  is at least 1/32 of 2 slots (prims_simple.h) (``ring_plan``).
- Tree: one slot's payload a chunk; LL128 halves it while the channel's part is small
  (enqueue.cc calcCollChunking) (``tree_chunk``).
- Broadcast and Reduce: BROADCAST_/REDUCE_CHUNKSTEPS 1, one slot's payload a chunk
  (``chain_chunk``).
- NVLS and NVLSTree: loops of heads x 128 KiB (NCCL_NVLS_CHUNKSIZE, nvls.cc:153), smaller chunks
  for small parts (enqueue.cc:2041-2068) (``nvls_chunk``, ``nvls_loops``).
- CollNetDirect and CollNetChain: a Simple slot (Chain at most 256 KiB), halved while the loops
  are few for the pipeline's depth (enqueue.cc:2020-2041,2094) (``collnet_chunk``).
- PAT: one Simple slot a chunk, halved while chunk x channels x 32 (AllGather) or x 16
  (ReduceScatter) exceeds the call's bytes, down to 64 KiB (calcCollChunking) (``pat_chunk``).
"""
from __future__ import annotations

from dataclasses import dataclass

from collsim.nccl.chunking import DEFAULT_BUFFSIZE, GRAIN, NCCL_STEPS

RING_CHUNK_SLOTS = {"LL": 1, "LL128": 1, "Simple": 4}    # RING_CHUNKSTEPS (collectives.h)
RING_SLICES = {"LL": 1, "LL128": 1, "Simple": 2}         # RING_CHUNKSTEPS / RING_SLICESTEPS
PAT_FLOOR = 64 << 10      # calcCollChunking's smallest PAT chunk


def payload_slot(proto: str, buffsize: int) -> int:
    """Payload bytes of one slot of a connection's buffer (``buffsize``: NCCL_BUFFSIZE,
    Simple's)."""
    slot = (buffsize if proto == "Simple" else DEFAULT_BUFFSIZE[proto]) // NCCL_STEPS
    return {"LL": slot // 2, "LL128": slot // 16 * 15, "Simple": slot}[proto]


def _grains(nbytes: int, proto: str) -> int:
    """``nbytes`` rounded down to the protocol's grain, at least one grain."""
    return max(nbytes // GRAIN[proto] * GRAIN[proto], GRAIN[proto])


@dataclass(frozen=True)
class RingPlan:
    """One channel's ring over ``part`` bytes: ``loops`` over ranks x ``chunk`` bytes (at least
    one; the last one's chunk is ``last_chunk``), each chunk sent as ``slices`` slices (Simple 2,
    one where the part holds under two grains a rank and loop). ``sends`` counts the slices NCCL
    sends over all loops (the last loop's chunk sliced as prims_simple.h slices it) and
    ``largest`` is the payload of the largest of them, bytes."""
    chunk: int
    loops: int
    slices: int
    last_chunk: int
    sends: int
    largest: int


def ring_plan(proto: str, part: int, ranks: int, buffsize: int) -> RingPlan:
    """NCCL's ring pipeline for one channel's ``part`` bytes on ``ranks`` ranks (module
    docstring)."""
    slot = (buffsize if proto == "Simple" else DEFAULT_BUFFSIZE[proto]) // NCCL_STEPS
    chunk = payload_slot(proto, buffsize) * RING_CHUNK_SLOTS[proto] // GRAIN[proto] * GRAIN[proto]
    full_loops, rem = divmod(part, ranks * chunk)
    last = (-(-rem // ranks) + 15) // 16 * 16  # device/all_reduce.h: chunk of the last loop
    loops = max(1, full_loops + (1 if rem else 0))
    slices = min(RING_SLICES[proto], max(1, -(-part // (ranks * loops * GRAIN[proto]))))
    if proto == "Simple":  # prims_simple.h: 2 slices per chunk, a slice >= 2 slots / 32

        def split(c: int) -> tuple[int, int]:
            size = max(-(-c // 32) * 16, slot * 2 // 32)
            return (min(2, -(-c // size)) if c else 0), min(size, c)

        (n_full, s_full), (n_last, s_last) = split(chunk), split(last)
        sends, largest = n_full * full_loops + n_last, s_full if full_loops else s_last
    else:
        sends, largest = full_loops + (1 if last else 0), chunk if full_loops else last
    return RingPlan(chunk, loops, slices, last, sends, largest)


def tree_chunk(proto: str, part: int, ranks: int, nodes: int, buffsize: int) -> int:
    """Bytes of one chunk of a channel's tree pipeline over ``part`` bytes: one slot's payload,
    LL128's halved for small parts as calcCollChunking does."""
    chunk = payload_slot(proto, buffsize)
    if proto == "LL128":
        ppn = ranks / nodes
        n_ll128 = 1 + int(nodes).bit_length() - 1 + 0.1 * ppn
        while part // chunk < n_ll128 * 64 / ppn and chunk > 131072:
            chunk //= 2
        while part // chunk < n_ll128 * 16 / ppn and chunk > 32768:
            chunk //= 2
    return _grains(chunk, proto)


def tree_chunks(proto: str, part: int, ranks: int, nodes: int, buffsize: int) -> int:
    """Chunks (at least one) a channel's tree pipeline cuts ``part`` bytes into."""
    return max(1, -(-part // tree_chunk(proto, part, ranks, nodes, buffsize)))


def chain_chunk(proto: str, buffsize: int) -> int:
    """Bytes of one chunk of Broadcast's and Reduce's chain: one slot's payload."""
    return _grains(payload_slot(proto, buffsize), proto)


def nvls_chunk(algo: str, part: int, ranks: int, nodes: int) -> int:
    """Bytes each head takes of one loop of a channel's NVLS or NVLSTree over ``part`` bytes."""
    ppn = ranks // nodes
    if algo == "NVLS":
        chunk = 128 << 10
        for factor, smaller in ((2, 16 << 10), (8, 32 << 10), (64, 64 << 10)):
            if part < factor * ppn * chunk:
                return smaller
        return chunk
    chunk = (64 << 10) if nodes >= 4 else (128 << 10)
    for factor, smaller in ((1, 32 << 10), (4, 64 << 10), (16, 128 << 10), (32, 256 << 10)):
        if part < factor * ppn * chunk:
            return min(chunk, smaller)
    return chunk


def nvls_loops(algo: str, part: int, ranks: int, nodes: int) -> int:
    """Loops (at least one) of one channel's NVLS or NVLSTree over ``part`` bytes."""
    return max(1, -(-part // (ranks // nodes * nvls_chunk(algo, part, ranks, nodes))))


def collnet_chunk(algo: str, nbytes: int, channels: int, heads: int, depth: int,
                  buffsize: int) -> int:
    """CollNet's chunk bytes for a call of ``nbytes`` over ``channels`` x ``heads``: a Simple slot
    (Chain at most 256 KiB), halved while the loops are few for the pipeline's ``depth``
    (connect.cc:232 Direct 2, or 1 with one GPU a node; connect.cc:464 Chain: GPUs a node)."""
    chunk = buffsize // NCCL_STEPS
    if algo == "CollNetChain":
        chunk = min(256 << 10, chunk)
        steps = ((64, 131072), (8, 65536), (1, 32768))
    else:
        steps = ((64, 131072), (8, 65536), (8, 32768))
    for factor, floor in steps:
        while nbytes // (channels * heads * chunk) < depth * factor and chunk > floor:
            chunk //= 2
    return _grains(chunk, "Simple")


def pat_chunk(coll: str, nbytes: int, channels: int, buffsize: int) -> int:
    """Bytes of one chunk of PAT's AllGather or ReduceScatter of ``nbytes`` on ``channels``."""
    chunk = payload_slot("Simple", buffsize)
    while chunk * channels * (32 if coll == "all_gather" else 16) > nbytes and chunk > PAT_FLOOR:
        chunk //= 2
    return chunk
