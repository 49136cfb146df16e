"""What the simulator computes, as one readable loop (``collsim.simulate.simulate`` is the fast
version and agrees with this to the last bit on every schedule the tests throw at both).

Transfer i, in schedule order (step, then position in the step), of b bytes on channel c:

1. It is *ready* when every transfer j of an earlier step has ended that wrote elements
   overlapping i's range on i's sender (what i reads), or, if i reduces, on i's receiver.
2. Its *link*: intra-node between two GPUs of a node, inter-node between nodes, NVLS between a
   GPU and its node's NVSwitch (a switch endpoint, ``Schedule.switches``).
3. It holds, for alpha + b x beta (+ b x gamma if it reduces) on its link, its channel's *slots*:
   (sender, c, send) and (receiver, c, recv) -- a channel's thread block waits for its own
   flags, so latency is paid per channel; and for b x beta only the *ports* its bytes cross:
   the sender's "gpuR.send" and receiver's "gpuR.recv" inside a node (or the directed pair link
   "gpuA-gpuB" on a board without NVSwitch), the two NICs ("nodeN.nicK.out"/"in",
   ``Topology.nic_of``) across nodes -- bandwidth is shared by all channels. A switch endpoint
   holds nothing: only the GPU side's slot and port are held.
4. Each resource serves one transfer at a time in schedule order; i starts at max(ready, when
   each of its resources is free) and ends at start + alpha + b x beta (+ b x gamma).
"""
from __future__ import annotations

import numpy as np

from collsim.core.schedule import REDUCE, Schedule
from collsim.errors import CollsimError
from collsim.machine.topology import Topology


def _holds(topo: Topology, ranks: int, src: int, dst: int, ch: int):
    """(link, slot names, port names) of one transfer, spelled out."""
    g = topo.gpus_per_node
    if src >= ranks or dst >= ranks:                      # a GPU and its node's switch
        if topo.nvls is None:
            raise CollsimError("switch transfers need NVLink SHARP")
        if src >= ranks:
            return topo.nvls, [f"gpu{dst}.ch{ch}.recv"], [f"gpu{dst}.recv"]
        return topo.nvls, [f"gpu{src}.ch{ch}.send"], [f"gpu{src}.send"]
    slots = [f"gpu{src}.ch{ch}.send", f"gpu{dst}.ch{ch}.recv"]
    if src // g != dst // g:
        nic = lambda r: f"node{r // g}.nic{topo.local_of(r) * topo.nics_per_node // g}"  # noqa: E731
        return topo.inter, slots, [nic(src) + ".out", nic(dst) + ".in"]
    if topo.links_per_pair:
        return topo.intra, slots, [f"gpu{src}-gpu{dst}"]
    return topo.intra, slots, [f"gpu{src}.send", f"gpu{dst}.recv"]


def simulate_reference(s: Schedule, topo: Topology, gamma: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) in seconds of every transfer, one at a time in schedule order, O(n^2)."""
    step = s.step_index
    start, end = np.zeros(s.n_transfers), np.zeros(s.n_transfers)
    free = {}
    for i in range(s.n_transfers):
        src, dst, lo, ln, op, ch = (int(x[i]) for x in (s.src, s.dst, s.offset, s.length, s.op, s.channel))
        ready = 0.0
        for j in range(i):
            if step[j] < step[i] and lo < s.offset[j] + s.length[j] and s.offset[j] < lo + ln and \
                    (s.dst[j] == src or (op == REDUCE and s.dst[j] == dst)):
                ready = max(ready, end[j])
        link, slots, ports = _holds(topo, s.ranks, src, dst, ch)
        nb = ln * s.itemsize
        wire = nb * link.beta
        dur = link.alpha + wire
        if gamma and op == REDUCE:
            dur += nb * gamma
        start[i] = max([ready] + [free.get(r, 0.0) for r in slots + ports])
        end[i] = start[i] + dur
        for r in slots:
            free[r] = end[i]
        for r in ports:
            free[r] = start[i] + wire
    return start, end
