"""What the simulator computes, as one readable loop (``collsim.simulate.simulate`` is the fast
version and agrees with this to the last bit on every schedule the tests throw at both).

Transfer i, in schedule order (step, then position in the step):

1. It is *ready* when every transfer j of an earlier step has ended that wrote elements
   overlapping i's range on i's sender (what i reads), or, if i reduces, on i's receiver.
2. It needs its *resources*: the sender's send port, the receiver's receive port and, across
   nodes, the two NICs (``Topology.nic_of``). Each resource serves one transfer at a time, in
   schedule order (first come, first served; no sharing).
3. It starts at max(ready, when each of its resources is free) and lasts
   alpha + bytes x beta on its link (intra- or inter-node), plus bytes x gamma if it reduces.
"""
from __future__ import annotations

import numpy as np

from collsim.schedule import REDUCE, Schedule
from collsim.simulate.topology import Topology


def simulate_reference(s: Schedule, topo: Topology, gamma: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) in seconds of every transfer, one at a time in schedule order, O(n^2)."""
    step = s.step_index
    start, end = np.zeros(s.n_transfers), np.zeros(s.n_transfers)
    free = {}
    for i in range(s.n_transfers):
        src, dst, lo, ln, op = (int(s.src[i]), int(s.dst[i]), int(s.offset[i]), int(s.length[i]), int(s.op[i]))
        ready = 0.0
        for j in range(i):
            if step[j] < step[i] and lo < s.offset[j] + s.length[j] and s.offset[j] < lo + ln and \
                    (s.dst[j] == src or (op == REDUCE and s.dst[j] == dst)):
                ready = max(ready, end[j])
        res = [("send", src), ("recv", dst)]
        cross = topo.node_of(src) != topo.node_of(dst)
        if cross:
            res += [("out", topo.nic_of(src)), ("in", topo.nic_of(dst))]
        link = topo.inter if cross else topo.intra
        nb = ln * s.itemsize
        dur = link.alpha + nb * link.beta
        if gamma and op == REDUCE:
            dur += nb * gamma
        start[i] = max([ready] + [free.get(r, 0.0) for r in res])
        end[i] = start[i] + dur
        for r in res:
            free[r] = end[i]
    return start, end
