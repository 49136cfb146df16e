"""NCCL's p2p channels: how many channels the sends and receives of AlltoAll and SendRecv run on.
File references into NVIDIA/nccl at the tags named.

- ``p2p_channels``: the channels p2p operations may use, the collective channels rounded up to a
  power of two (paths.cc:ncclTopoComputeP2pChannels, :857-880@v2.28.9; MAXCHANNELS 64 at most).
- ``channels_per_peer``: the fewest any peer gets, as a power of two (ncclTopoGetNchannels): an
  NVLink peer two per NVLink between the pair (paths.cc:829-831@v2.28.9), a PCIe peer two, a peer
  across the network, up to 2.28, two halved while 2 x ranks > 4 x p2p channels, at least the GPU's
  NICs (:836-849@v2.28.9), and from 2.29 the GPU's NICs or NIC GB/s / NCCL_P2P_PER_CHANNEL_NET_BW
  (14 GB/s), whichever is more, halved while it x ceil(ranks / 8) exceeds the p2p channels
  (paths.cc:918-1000@v2.29.7).
- ``op_channels``: one send's channels for its bytes (enqueue.cc:addP2pToPlan :889-900 and
  :1053-1056@v2.28.9): from the per-peer count halved while it x ranks exceeds the p2p channels,
  doubled (up to the per-peer count) while a part exceeds the largest, each part at least the
  smallest; parts of one step (NCCL_P2P_NET_CHUNKSIZE 128 KiB across nodes, NCCL_P2P_NVL_CHUNKSIZE
  512 KiB on an all-NVLink node, NCCL_P2P_PCI_CHUNKSIZE 128 KiB else, init.cc:704-721@v2.28.9), the
  smallest half (across nodes) or an eighth of it, the largest one step (across nodes) or 32.
"""
from __future__ import annotations

from collsim.machine.cluster import Cluster
from collsim.nccl.chunking import DEFAULT_BUFFSIZE, NCCL_STEPS

MAXCHANNELS = 64
PER_CHANNEL_NET_GBPS = 14          # NCCL_P2P_PER_CHANNEL_NET_BW (paths.cc:918@v2.29.7)
# NCCL_MAX_DEV_WORK_P2P_PER_BATCH (collsim.algorithms.p2p's lanes)
P2P_PER_BATCH = 8
NET_CHUNK, NVL_CHUNK, PCI_CHUNK = 128 << 10, 512 << 10, 128 << 10
P2P_LL_THRESHOLD = 16384           # NCCL_P2P_LL_THRESHOLD (enqueue.cc:779@v2.28.9)


def _pow2_up(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def p2p_channels(coll_channels: int) -> int:
    """The channels NCCL's p2p operations may use, for ``coll_channels`` collective channels."""
    return min(_pow2_up(max(1, coll_channels)), MAXCHANNELS)


def _newer(version: str) -> bool:
    return int(version.split(".")[1]) >= 29


def channels_per_peer(cluster: Cluster, p2p: int) -> int:
    """The p2p channels of each peer of ``cluster`` (NCCL's view of it) with ``p2p`` p2p
    channels."""
    c, g, p = cluster, cluster.gpus_per_node, cluster.ranks
    counts = []
    if g > 1:
        if c.intra in ("nvswitch", "nvlink") and c.gpu_info.nvlinks and c.p2p:
            links = c.nvlink_GBps / c.gpu_info.link_GBps / (1 if c.intra == "nvswitch" else g - 1)
            counts.append(2 * max(1, int(links)))
        else:
            counts.append(2)
    if c.nodes > 1:
        nics = max(1, c.nics_per_node // g)
        if _newer(c.nccl):
            counts.append(max(nics, -(-int(c.nic_GBps * nics) // PER_CHANNEL_NET_GBPS)))
        else:
            most = 2
            while most * p > 4 * p2p and most > 1:
                most //= 2
            counts.append(max(nics, most))
    per = min(_pow2_up(min([p2p, *counts]) if not _newer(c.nccl) else min(counts or [1])), p2p)
    if c.nodes > 1 and _newer(c.nccl):
        while per * -(-p // P2P_PER_BATCH) > p2p and per > 1:
            per //= 2
    return max(1, per)


def protocol(cluster: Cluster, nbytes: int, per_peer: int) -> str:
    """The protocol of one send of ``nbytes`` to a peer with ``per_peer`` p2p channels: LL up to
    per_peer x NCCL_P2P_LL_THRESHOLD (16 KiB) where the connection has LL buffers, else Simple
    (enqueue.cc:799-835@v2.28.9). Every intra-node transport allocates them (p2p.cc:447); the
    network's p2p connections only under NCCL_ALLOC_P2P_NET_LL_BUFFERS=1 (net.cc:893, init.cc:737,
    default 0), so across nodes the sends here are Simple (those to the node's own GPUs, LL in NCCL,
    are not the ones that take longest)."""
    ll = cluster.nodes == 1 and cluster.ranks > 1 and 0 < nbytes <= per_peer * P2P_LL_THRESHOLD
    return "LL" if ll else "Simple"


def step_bytes(cluster: Cluster, buffsize: int, proto: str = "Simple") -> int:
    """NCCL's p2p step (its chunk), bytes, under NCCL_BUFFSIZE ``buffsize`` (Simple) or LL's
    buffer (enqueue.cc:837-838@v2.28.9)."""
    if proto == "LL":
        return DEFAULT_BUFFSIZE["LL"] // NCCL_STEPS
    c = cluster
    nvlink = c.intra != "pcie" and c.p2p and c.gpu_info.nvlinks
    chunk = NET_CHUNK if c.nodes > 1 else NVL_CHUNK if nvlink else PCI_CHUNK
    return min(chunk, buffsize // NCCL_STEPS)


def op_channels(cluster: Cluster, nbytes: int, per_peer: int, p2p: int, buffsize: int,
                proto: str = "Simple") -> int:
    """The channels one send (or receive) of ``nbytes`` to one peer runs on under ``proto``."""
    if nbytes <= 0:
        return 1
    step = step_bytes(cluster, buffsize, proto)
    smallest, largest = (step // 2, step) if cluster.nodes > 1 else (step // 8, step * 32)
    low = per_peer
    while low * cluster.ranks > p2p and low > 1:
        low //= 2
    n = min(low, -(-nbytes // smallest))
    part = max(smallest, -(-nbytes // n))
    while part > largest and n <= per_peer // 2:
        n *= 2
        part = -(-nbytes // n)
    return n
