"""What the simulator computes, as one readable loop (``collsim.simulate.simulate`` is the fast version and
agrees with this to the last bit on every schedule the tests throw at both).

Transfer i (step, then position in the step) of b bytes from ``src`` to ``dst`` on channel c, with durations
from ``collsim.simulate.costs`` (overhead, work, port hold, latency; the connection window W):

1. Its *data* is ready when, for every element it reads (on its sender; on its receiver too if it reduces), the
   transfers of the last earlier step that wrote that element have *arrived*: it reads the latest values.
2. Its *engine* is the channel's thread block on the GPU that runs it, ``(gpu, c, lane)``: the sender, or the
   GPU side of a transfer to or from its node's NVSwitch; lane is 0, or the op when the schedule's meta says
   ``lanes: "op"`` (NCCL's trees reduce up and broadcast down in separate warps). An engine runs its transfers
   one at a time in schedule order.
3. Its *window*: at most W transfers in flight per connection (src, dst, c): it waits for the arrival of the
   transfer W places before it on that connection (W = 0: no limit; NCCL_STEPS slots per connection).
4. At q = max(data ready, its engine free, window) it asks for its *ports*: inside a node the sender's "gpuR.send" and the receiver's "gpuR.recv" (or the
   directed pair link "gpuA-gpuB" on a board without NVSwitch), across nodes the two NICs
   ("nodeN.nicK.out"/"in"), to or from a switch the GPU side's port only. Each port serves one transfer at a
   time: on each, the bytes start when it is free (and at q at the earliest) and hold it for ``port`` seconds.
   Its bytes are done at e = max(q + ``work``, the last port done): they have crossed every port, at no more
   than one channel's rate. The data arrives at e + ``latency``; the engine is free at end = e + ``overhead``
   (the step's fixed cost: flags, fences, barriers, overlapping the latency). Latency delays the arrival and
   holds nothing. (Ports are queues of their own: the sender's port does not wait idle for the receiver's.)
5. Contention policy, the order in which a port serves the transfers that ask for it: "ready" (the default)
   by the time q at which they ask (ties in schedule order), so a port never waits for a transfer that is not
   ready while another is; "schedule" in schedule order (an upper bound where transfers become ready out of
   schedule order).
"""
from __future__ import annotations

import numpy as np

from collsim.core.schedule import REDUCE, Schedule
from collsim.errors import CollsimError
from collsim.machine.topology import Topology
from collsim.simulate.costs import transfer_costs
from collsim.simulate.resources import route

POLICIES = ("ready", "schedule")


def _ports(topo: Topology, ranks: int, src: int, dst: int) -> list[str]:
    """The ports a transfer's bytes cross, spelled out."""
    g = topo.gpus_per_node
    if src >= ranks:
        return [f"gpu{dst}.recv"]
    if dst >= ranks:
        return [f"gpu{src}.send"]
    if src // g != dst // g:
        nic = lambda r: f"node{r // g}.nic{topo.local_of(r) * topo.nics_per_node // g}"  # noqa: E731
        return [nic(src) + ".out", nic(dst) + ".in"]
    if topo.links_per_pair:
        return [f"gpu{src}-gpu{dst}"]
    return [f"gpu{src}.send", f"gpu{dst}.recv"]


def _latest_writes(s: Schedule, step, i: int, rank: int) -> list[int]:
    """The transfers of the last earlier step that wrote each element of i's range on ``rank``."""
    out = set()
    for x in range(int(s.offset[i]), int(s.offset[i] + s.length[i])):
        writers = [j for j in range(s.step_ptr[step[i]]) if s.dst[j] == rank and s.offset[j] <= x < s.offset[j]
                   + s.length[j]]
        if writers:
            last = step[writers[-1]]
            out.update(j for j in writers if step[j] == last)
    return sorted(out)


def simulate_reference(s: Schedule, topo: Topology, gamma: float = 0.0, protocol: str | None = None,
                       policy: str = "ready") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start of its bytes b0, end, arrive) in seconds of every transfer (module docstring), O(n^2) or worse."""
    if policy not in POLICIES:
        raise CollsimError(f"contention policy {policy!r:.30} is not one of {', '.join(POLICIES)}")
    n, step = s.n_transfers, s.step_index
    c = transfer_costs(s, topo, route(s.src, s.dst, s.channel, s.ranks, topo), gamma, protocol)
    lanes = s.meta.get("lanes") == "op"
    deps, last_on_engine, sent_on = [], {}, {}
    for i in range(n):
        src, dst, ch = int(s.src[i]), int(s.dst[i]), int(s.channel[i])
        d = _latest_writes(s, step, i, src) + (_latest_writes(s, step, i, dst) if s.op[i] == REDUCE else [])
        engine = (dst if src >= s.ranks else src, ch, int(s.op[i]) if lanes else 0)
        before = last_on_engine.get(engine)
        on_conn = sent_on.setdefault((src, dst, ch), [])
        window = on_conn[-c.window] if c.window and len(on_conn) >= c.window else None
        deps.append((d, before, window))
        last_on_engine[engine] = i
        on_conn.append(i)
    start, end, arrive = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    free: dict[str, float] = {}
    left = list(range(n))
    while left:
        ready = [i for i in left if all(not np.isnan(arrive[j]) for j in deps[i][0])
                 and (deps[i][1] is None or not np.isnan(end[deps[i][1]]))
                 and (deps[i][2] is None or not np.isnan(arrive[deps[i][2]]))]

        def asks(i):
            d, before, window = deps[i]
            return max([0.0] + [arrive[j] for j in d] + ([end[before]] if before is not None else [])
                       + ([arrive[window]] if window is not None else []))
        i = min(ready, key=lambda k: (asks(k), k)) if policy == "ready" else left[0]
        request = asks(i)
        ports = _ports(topo, s.ranks, int(s.src[i]), int(s.dst[i]))
        begins = [max(request, free.get(p, 0.0)) for p in ports]
        for p, b in zip(ports, begins):
            free[p] = b + c.port[i]
        start[i] = max(begins)
        done = max(request + c.work[i], start[i] + c.port[i])
        arrive[i] = done + c.latency[i]
        end[i] = done + c.overhead[i]
        left.remove(i)
    return start, end, arrive
