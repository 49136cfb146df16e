"""What NCCL's topology search and channel set-up find for a ``Cluster``: ``search(cluster, env)``
-> ``Setup``.

The graphs come from ``collsim.nccl.graphs`` (outcome rules of ncclTopoCompute, checked against
NCCL's own search). The set-up follows NVIDIA/nccl src/graph/connect.cc ncclTopoPostset (lines of
v2.28.9-1 unless a tag is named) and src/transport/nvls.cc:

- coll channels: min(tree, ring) search channels, doubled (connect.cc:452; channel c + n copies c
  and uses the other double binary tree, connect.cc:147-164), +50% with CollNet
  (connect.cc:455-461), doubled again on Hopper+ across nodes when ring bwIntra > 45 and fewer than
  16 (connect.cc:473-475; 2 x n <= MAXCHANNELS and SM90 only up to 2.19, connect.cc:405@v2.18.6;
  SM90 only up to 2.24), cut by NCCL_MAX_NCHANNELS / NCCL_MAX_CTAS and copied up to
  NCCL_MIN_NCHANNELS / NCCL_MIN_CTAS (connect.cc:490-491); 2.20-2.27 raise them to the NVLS channels
  (connect.cc:493-495@v2.27.7).
- NVLS channels: NCCL_NVLS_NCHANNELS or 16 (SM90), 32 (SM100 across nodes, 2.25+) or 24 (SM100 on
  one node, 2.27+), clamped to [NCCL_MIN_CTAS, NCCL_MAX_CTAS] (nvls.cc:178-199).
- ring channel c of a node: enters at ``nic_in``'s GPU, leaves from the last GPU through
  ``nic_out``; odd nodes swap paired rings (``Setup.ring_channel``); tree channel c is headed by the
  ring channel's entry GPU (``Setup.tree_channel``); NVLS heads: every GPU on one node, each NIC's
  local GPU across nodes (search.cc:694-712).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from collsim.nccl.constants import since, vnum
from collsim.nccl.graphs import Graph, Hw, hw_of, ring_graph, tree_graph
from collsim.nccl.settings import Settings, read_settings
from collsim.nccl.switch_graphs import collnet_direct_graph, nvls_graph, nvls_support


@dataclass(frozen=True)
class RingChannel:
    """A ring search channel inside one node: local GPUs in ring order, NIC in and out (None on one
    node)."""
    gpus: tuple
    nic_in: int | None = None
    nic_out: int | None = None


@dataclass(frozen=True)
class Setup:
    """What NCCL's init found: graphs (None when not searched), channel counts and the per-channel
    layout.

    coll_channels: CTAs of Ring/Tree (connect.cc:452-491@v2.28.9 with the version's rules);
    comm_channels: ``comm->nChannels``, the ring plateau's divisor (larger than coll_channels only
    in 2.20-2.21, raised to the NVLS channels, connect.cc:474@v2.20.5 and enqueue.cc:1568@v2.21.5);
    nvls_channels: NVLS/NVLSTree CTAs; coll_map[c]: (search channel, double binary tree 0/1) of coll
    channel c; rings: node 0's view of each ring search channel (ring order, NIC in, NIC out;
    without GPUDirect NCCL may enter at another GPU of the same CPU); nvls_heads: (GPU, NIC or None)
    per head."""
    version: str
    gpu: str
    compcap: int
    cpu: str
    n_nodes: int
    gpus_per_node: int
    nics_per_node: int
    ring: Graph
    tree: Graph
    nvls: Graph | None
    collnet_chain: Graph | None
    collnet_direct: Graph | None
    coll_channels: int
    comm_channels: int
    nvls_channels: int
    nvswitch: bool
    coll_map: tuple
    rings: tuple
    nvls_heads: tuple
    settings: Settings = field(compare=False, default=None)

    @property
    def n_ranks(self) -> int:
        return self.n_nodes * self.gpus_per_node

    def ring_channel(self, node: int, c: int) -> RingChannel:
        """Coll channel ``c``'s ring inside ``node``: odd nodes swap paired crossNic rings 2k <->
        2k+1 (connect.cc:392-405@v2.28.9; 2.20 only with an even node count,
        connect.cc:383@v2.20.5)."""
        s = self.coll_map[c][0]
        swap = (self.ring.cross_nic == 2 if vnum(self.version) >= (2, 26)
                else self.ring.cross_nic > 0)
        swap = swap and self.ring.channels % 2 == 0 and node % 2 == 1 and vnum(self.version) >= (2,
                                                                                                 20)
        if vnum(self.version) < (2, 21):
            swap = swap and self.n_nodes % 2 == 0
        return self.rings[s ^ 1 if swap else s]

    def tree_channel(self, c: int) -> tuple:
        """(head GPU, NIC or None, double binary tree 0/1) of coll channel ``c``: the head talks to
        the network (connect.cc:52-62); channels [0, n) use tree 0, [n, 2n) tree 1
        (connect.cc:147-164). The head is the NIC's GPU; with two GPUs per NIC the second round of
        search channels starts at the other GPU (NCCL's search with 4 NICs on 8 GPUs: channels 4-7
        at GPUs 1, 3, 5, 7)."""
        s, tree = self.coll_map[c]
        ring = self.rings[s]
        second = self.gpus_per_node == 2 * self.nics_per_node and s >= self.nics_per_node
        return ring.gpus[0] + second, ring.nic_in, tree


def _local_gpu(c, k: int) -> int:
    return -(-k * c.gpus_per_node // max(c.nics_per_node, 1))


def _rings(c, hw: Hw, ring: Graph) -> tuple:
    G = hw.G
    if c.nodes == 1:
        return tuple(RingChannel(tuple(range(G))) for _ in range(ring.channels))
    out = []
    for j in range(ring.channels):
        k = j % hw.K
        e = _local_gpu(c, k)
        down = tuple((e - i) % G for i in range(G))
        up = tuple((e + i) % G for i in range(G))
        if ring.cross_nic == 2 or (ring.cross_nic == 1 and (2, 20) <= vnum(c.nccl) < (2, 23)):
            gpus, nic_out = (up, k - 1) if k % 2 else (down, (k + 1) % hw.K)
        elif ring.cross_nic == 1:
            gpus, nic_out = down, (k + 1) % hw.K
        else:
            partner_below = hw.shared and c.gpu == "A100" and hw.K == G and e % 2 == 1
            gpus, nic_out = (up if partner_below else down), k
        out.append(RingChannel(gpus, k, nic_out))
    return tuple(out)


def _with_latency(g: Graph, latency_us: float) -> Graph:
    return replace(g, latency_inter=float(latency_us)) if latency_us else g


def _copy(channels: list, end: int) -> list:
    """copyChannels (connect.cc:355-364@v2.28.9): channel c >= start copies channel c - start."""
    start = len(channels)
    return channels + [channels[c % start] for c in range(start, max(end, start))]


def collnet_on(c, s: Settings) -> bool:
    """CollNet is set up: the switches reduce (``sharp: true``: SHARP with NCCL's plugin, and
    NCCL_COLLNET_ENABLE=1 unless the environment says 0, init.cc:1732-1741@v2.28.9), more than one
    node (NCCL_COLLNET_NODE_THRESHOLD 2, init.cc:1200-1205) and at most NCCL_MAX_DIRECT_ARITY+1 = 8
    GPUs a node (init.cc:1196-1199@v2.21.5, enqueue.cc:1799-1801@v2.28.9)."""
    enabled = s.collnet_enable if s.collnet_set else c.sharp
    return bool(c.sharp and enabled and c.nodes > 1 and c.gpus_per_node <= 8)


def search(cluster, env: dict | None = None) -> Setup:
    """NCCL's search result and channel set-up for ``cluster`` (``collsim.machine.cluster.Cluster``,
    taken as NCCL sees it: ``Cluster.nccl_view``) under ``env`` (NCCL_* strings,
    ``collsim.nccl.settings``). CollNet graphs exist only where ``collnet_on``
    (init.cc:1040-1049@v2.28.9); every multi-node graph carries the net plugin's latency
    (search.cc:685)."""
    c = cluster.nccl_view()
    s = read_settings(env, c.nccl)
    v, cc, multi = c.nccl, c.gpu_info.compcap, c.nodes > 1
    maxch = since(v, (("2.18", 32), ("2.25", 64)))            # device.h MAXCHANNELS
    hw = hw_of(c, s)
    lat = (s.plugin_latency_us if s.plugin_latency_us is not None
           else c.net_info.plugin_latency_us) if multi else 0
    # ring maxChannels MAXCHANNELS/2 (init.cc:1019)
    ring = _with_latency(ring_graph(c, hw, s, maxch // 2), lat)
    tree = _with_latency(tree_graph(c, hw, ring.channels), lat)
    nvls = None
    if nvls_support(c, s):
        # NCCL_MAX_NVLS_ARITY (device.h:170@v2.21.5)
        arity = since(v, (("2.18", 8), ("2.21", 32)))
        # NVLS goes GPU -> NVSwitch, P2P or not (nvls.cc:154)
        nv = hw_of(c, replace(s, p2p_disable=False))
        nvls = _with_latency(nvls_graph(c, nv,
                                        min(hw.K, hw.G, arity) if multi else min(hw.G, arity)), lat)
    collnet = collnet_on(c, s)
    chain = _with_latency(tree_graph(c, hw, ring.channels, "TREE"), lat) if collnet else None
    direct = _with_latency(collnet_direct_graph(c, hw), lat) if collnet and hw.type_intra == "NVL" \
        and c.intra == "nvswitch" else None
    n = ring.channels
    chans = [(j % n, j // n) for j in range(min(maxch, 2 * n))]                  # connect.cc:452
    # connect.cc:455-461
    if collnet and chain.bw_intra > chain.bw_inter and c.ranks > c.nodes:
        chans = _copy(chans, min(maxch, len(chans) + len(chans) // 2))
    # connect.cc:473@v2.28.9
    hopper = cc >= 90 if vnum(v) >= (2, 25) else cc == 90
    # connect.cc:405@v2.18.6
    room = 2 * len(chans) <= maxch if vnum(v) < (2, 20) else len(chans) < 16
    if hopper and multi and ring.bw_intra > 45.0 and room:
        chans = _copy(chans, 2 * len(chans))
    max_ctas = s.max_ctas or maxch
    # init.cc:1770-1772
    min_ctas = min(s.min_ctas, max_ctas)
    # connect.cc:490-491
    chans = chans[:min(s.max_nchannels or maxch, max_ctas)]
    chans = _copy(chans, max(s.min_nchannels, min_ctas))
    nvls_ch = 0
    if nvls is not None:
        default = 16 if cc < 100 or vnum(v) < (2, 25) else (
            # nvls.cc:178-199@v2.28.9
            32 if vnum(v) < (2, 27) or multi else 24)
        nvls_ch = max(min_ctas, min(max_ctas, s.nvls_nchannels or default))
    coll = len(chans)
    # connect.cc:493-495@v2.27.7
    if (2, 20) <= vnum(v) < (2, 28) and nvls_ch > len(chans):
        chans = _copy(chans, nvls_ch)
    comm = len(chans)
    # enqueue.cc:1568@v2.21.5
    if not (2, 20) <= vnum(v) < (2, 22):
        coll = comm
    n_heads = nvls.channels if nvls is not None else 0
    heads = tuple((g, None) for g in range(n_heads)) if not multi else tuple(
        (_local_gpu(c, k), k) for k in range(n_heads))
    return Setup(v, c.gpu, cc, cpu=c.cpu, n_nodes=c.nodes, gpus_per_node=c.gpus_per_node,
                 nics_per_node=c.nics_per_node, ring=ring, tree=tree, nvls=nvls,
                 collnet_chain=chain, collnet_direct=direct,
                 coll_channels=coll, comm_channels=comm,
                 nvls_channels=nvls_ch, nvswitch=c.intra == "nvswitch", coll_map=tuple(chans),
                 rings=_rings(c, hw, ring),
                 nvls_heads=heads if nvls is not None else (), settings=s)
