"""Which link a transfer takes and which resources it holds: the simulator's routing, vectorised.

Link classes (``Routes.link``): ``INTRA`` (two GPUs of one node), ``INTER`` (GPUs of two nodes, or a
GPU and the network's switch endpoint over the GPU's NIC), ``NVLS`` (a GPU and its node's NVSwitch
endpoint; the topology's ``nvls`` link).

Resource kinds, one key column each (``Routes.keys[k]``, a row of a table of ``Routes.sizes[k]``
rows whose last row is a spare meaning "holds nothing of this kind"):

0. engine of (GPU, channel, lane): the sender, or the GPU side of a switch transfer; rows
   ``(rank x channels + channel) x lanes + lane`` (``Schedule.lane``);
1. channel of (GPU, channel): the sender's thread block, whose rate (what one channel moves by
   itself) its lanes share (NCCL's tree splits one block's warps between reduce-up and
   broadcast-down); rows ``rank x channels + channel`` (held only off the switch:
   ``collsim.simulate.jobs``);
2. out port: the sender's NVLink port "gpuR.send" (rows 0..R-1, R = the topology's GPUs), or
   across nodes its NIC "nodeN.nicK.out" (rows R + global NIC), or on a board without
   NVSwitch (``links_per_pair`` > 0) the directed pair link "gpuA-gpuB" (rows R + NICs +
   A x G + local B);
3. in port: the receiver's "gpuR.recv" (rows 0..R-1) or its NIC "nodeN.nicK.in" (R + NIC);
   none for a direct pair link (the pair link is both ends).

A degraded NIC (``Topology.slow_nics``) holds its transfers
``factor`` times as long (``nic_factor``).

Above the NICs (``Topology.fabric``, ``collsim.machine.fabric``): a transfer between NICs under
different switches of a tier (another group of ``Tier.nodes`` nodes, or another plane: NIC v of a
node is on plane v mod planes) holds the sender's switch's uplink and the receiver's switch's
downlink of that tier, rows of their own table (``Routes.fabric``: an up and a down column per tier,
``Routes.fabric_size`` rows, the last spare), in the order tier, group, plane, up then down.

A switch endpoint holds no engine and no port: a transfer to or from it holds the GPU side's engine,
channel and port only. Engines are held for the transfer's overhead and work, channels for its wire
bytes at the channel's rate, ports for its wire bytes (``collsim.simulate.costs``). An inter-node
transfer holds the two NICs, not the GPUs' NVLink ports: a GPU reaches its own NIC over PCIe, not
NVLink (NVIDIA/nccl src/graph/paths.cc:719-741, PIX).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collsim.errors import CollsimError
from collsim.machine.topology import Topology

INTRA, INTER, NVLS = 0, 1, 2
KINDS = ("engine", "channel", "out port", "in port")


@dataclass(frozen=True)
class Routes:
    """Per transfer: ``link`` class (int8) and ``keys`` (4 int32 columns); ``sizes``: rows per kind
    (the last one spare); ``channels``: slots per rank; ``fabric``: the up and down rows of every
    fabric tier (int32 columns, 2 per tier), of a table of ``fabric_size`` rows (the last spare)."""

    link: np.ndarray
    keys: tuple
    sizes: tuple
    channels: int
    merged: bool = False
    fabric: tuple = ()
    fabric_size: int = 1

    def valid(self, kind: int) -> np.ndarray:
        """Which transfers hold a resource of ``kind``."""
        return self.keys[kind] != self.sizes[kind] - 1


def route(src: np.ndarray, dst: np.ndarray, channel: np.ndarray, ranks: int, topo: Topology,
          channels: int | None = None, lane: np.ndarray | None = None, merged: bool = False,
          network: int | None = None) -> Routes:
    """Routes of transfers ``src -> dst`` on ``channel`` of a schedule of ``ranks`` ranks (endpoints
    from ``ranks`` on are switches: endpoint ranks + n is node n's NVSwitch, ``network`` the
    network's, shared by every node: ``Schedule.network_endpoint``); one-line CollsimError for a
    switch transfer on a machine without NVLink SHARP or across nodes, or a network transfer on one
    whose switches do not reduce (``sharp_us`` None). ``merged``: every GPU port of a node is its
    first GPU's, every NIC its first NIC (``collsim.simulate.symmetry.permute_channels``'s
    quotient).

    A transfer between a GPU and the network's switch is of class ``INTER`` and holds the GPU's NIC
    only (out when it sends, in when it receives): the switch reduces at line rate and adds its
    latency (``sharp_us``, ``collsim.simulate.costs``), no bandwidth limit of its own."""
    src, dst, channel = (np.asarray(a).astype(np.int32, copy=False) for a in (src, dst, channel))
    c = int(channels if channels is not None else (channel.max() + 1 if len(channel) else 1))
    g, r_all, nn = topo.gpus_per_node, topo.ranks, topo.nodes * topo.nics_per_node
    node_s, node_d = src // g, dst // g
    on_net = np.zeros(len(src), bool) if network is None else (src == network) | (dst == network)
    if on_net.any() and topo.sharp_us is None:
        raise CollsimError(f"transfers to the network's switch need switches that reduce (SHARP), "
                           f"which topology {topo.name or ''} does not have (no sharp_us)")
    if (on_net & (src >= ranks) & (dst >= ranks)).any():
        raise CollsimError("a transfer between two switch endpoints: switches only talk to their "
                           "GPUs")
    switched = bool((((src >= ranks) | (dst >= ranks)) & ~on_net).any())
    sw_src, sw_dst = (((src >= ranks) & ~on_net, (dst >= ranks) & ~on_net) if switched
                      else (None, None))
    cross = (node_s != node_d) | on_net
    if switched:
        nvls = sw_src | sw_dst
        if topo.nvls is None:
            raise CollsimError(f"switch transfers need NVLink SHARP, which topology "
                               f"{topo.name or ''} does not have (no nvls link)")
        if (sw_src & sw_dst).any():
            raise CollsimError("a transfer between two switch endpoints: switches only talk to "
                               "their GPUs")
        gpu_node = np.where(sw_src, node_d, node_s)[nvls]
        sw_node = np.where(sw_src, src, dst)[nvls] - ranks
        if (sw_node >= topo.nodes).any() or (gpu_node != sw_node).any():
            raise CollsimError(f"a switch transfer between a GPU and the NVSwitch of another node "
                               f"(switch of node n is endpoint {ranks} + n; nvls runs on one node, "
                               f"nvlstree across nodes)")
        cross &= ~nvls
    link = cross.astype(np.int8)
    lane = (np.zeros(len(src), np.int32) if lane is None
            else np.asarray(lane).astype(np.int32, copy=False))
    lanes = int(lane.max(initial=0)) + 1
    slot_spare = ranks * c * lanes
    gpu = np.where(src >= ranks, dst, src) if switched or on_net.any() else src
    engine = (gpu * c + channel) * lanes + lane
    block = gpu * c + channel
    pairs = r_all * g if topo.links_per_pair else 0
    out_spare, in_spare = r_all + nn + pairs, r_all + nn
    out, inn = src.copy(), dst.copy()
    x = np.flatnonzero(cross)
    # as Topology.nic_of
    nic = lambda r: (r_all + r // g * topo.nics_per_node  # noqa: E731
                     + r % g * topo.nics_per_node // g)
    out[x], inn[x] = nic(src[x]), nic(dst[x])
    # the switch: no port
    out[on_net & (src >= ranks)], inn[on_net & (dst >= ranks)] = out_spare, in_spare
    if topo.links_per_pair:
        direct = np.flatnonzero(link == INTRA)
        out[direct] = r_all + nn + src[direct] * g + dst[direct] % g
        inn[direct] = in_spare
    if switched:
        link[nvls] = NVLS
        out[sw_src] = out_spare
        inn[sw_dst] = in_spare
    # GPU to GPU
    fabric, fabric_size = fabric_rows(topo, src, dst, np.flatnonzero(cross & ~on_net), merged)
    if merged:
        for rows, spare in ((out, out_spare), (inn, in_spare)):
            gpu_row, nic_row = rows < r_all, (rows >= r_all) & (rows < r_all + nn)
            rows[gpu_row] = rows[gpu_row] // g * g
            rows[nic_row] = (r_all
                             + (rows[nic_row] - r_all) // topo.nics_per_node * topo.nics_per_node)
    return Routes(link, (engine, block, out, inn),
                  (slot_spare + 1, ranks * c + 1, out_spare + 1, in_spare + 1), c, merged, fabric,
                  fabric_size)


def fabric_groups(topo: Topology) -> list[int]:
    """Switch groups per tier of ``topo.fabric`` (a partial last group counts)."""
    return [-(-topo.nodes // t.nodes) for t in topo.fabric]


def fabric_rows(topo: Topology, src: np.ndarray, dst: np.ndarray, cross: np.ndarray,
                merged: bool = False) -> tuple[tuple, int]:
    """(up and down rows of every tier, table size) of transfers ``src -> dst`` whose indices
    ``cross`` go between nodes (module docstring); ``merged``: a node's NICs are its first NIC
    (plane 0), crossings as unmerged."""
    g, k = topo.gpus_per_node, topo.nics_per_node
    cols, base = [], 0
    for t, groups in zip(topo.fabric, fabric_groups(topo)):
        spare_up = np.full(len(src), -1, np.int32)
        up, down = spare_up, spare_up.copy()
        ends = []
        for r in (src[cross], dst[cross]):
            nic = r % g * k // g
            ends.append((r // g // t.nodes, nic % t.planes))
        (gs, ps), (gd, pd) = ends
        over = np.flatnonzero((gs != gd) | (ps != pd))
        at = cross[over]
        if merged:
            ps, pd = np.zeros_like(ps), np.zeros_like(pd)
        up[at] = base + (gs[over] * t.planes + ps[over]) * 2
        down[at] = base + (gd[over] * t.planes + pd[over]) * 2 + 1
        cols += [up, down]
        base += groups * t.planes * 2
    for col in cols:
        col[col < 0] = base
    return tuple(cols), base + 1


def port_names(topo: Topology, merged: bool = False) -> tuple[list[str], list[str]]:
    """Names of the out-port and in-port rows (spare rows excluded), in row order; ``merged``
    (``route``): a node's first GPU and NIC stand for all of its, "node1.gpu*.send",
    "node1.nic*.out"."""
    r_all, g, k = topo.ranks, topo.gpus_per_node, topo.nics_per_node
    nics = [f"node{n}.nic{'*' if merged else i}" for n in range(topo.nodes) for i in range(k)]
    gpus = [f"node{r // g}.gpu*" if merged else f"gpu{r}" for r in range(r_all)]
    out = [f"{x}.send" for x in gpus] + [f"{x}.out" for x in nics]
    if topo.links_per_pair:
        out += [f"gpu{a}-gpu{a // g * g + b}" for a in range(r_all) for b in range(g)]
    return out, [f"{x}.recv" for x in gpus] + [f"{x}.in" for x in nics]


def fabric_names(topo: Topology, merged: bool = False) -> list[str]:
    """Names of the fabric rows (spare excluded), in row
    order: "leaf3.rail1.up", "leaf3.down", "pod0.up"."""
    return [t.port_name(n, p, up, merged) for t, groups in zip(topo.fabric, fabric_groups(topo))
            for n in range(groups) for p in range(t.planes) for up in (True, False)]


def nic_factor(topo: Topology, rows: np.ndarray) -> np.ndarray | None:
    """Per transfer, how many times longer the port of ``rows`` (an out-port or in-port column of
    ``route``) holds it: a slow NIC's factor (``Topology.slow_nics``), else 1; None when every NIC
    is alike."""
    if not topo.slow_nics:
        return None
    factor = np.ones(max(int(rows.max(initial=0)) + 1,
                         topo.ranks + topo.nodes * topo.nics_per_node))
    for nic, f in topo.slow_nics:
        factor[topo.ranks + nic] = f
    return factor[rows]
