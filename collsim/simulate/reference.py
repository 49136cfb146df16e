"""What the simulator computes, as one readable loop (``collsim.simulate.simulate`` is the fast
version and agrees with this on every schedule the tests throw at both: to the last bit under policy
"schedule", to 1e-9 under policy "fair", whose shares the engine keeps on a virtual clock).

Transfer i (step, then position in the step) of b bytes from ``src`` to ``dst`` on channel c, with
durations from ``collsim.simulate.costs`` (port, alone, compute, overhead, latency; the connection
window W):

1. Its *data* is ready when, for every element it reads (on its sender; on its receiver too if it
   reduces), the transfers of the last earlier step that wrote that element have *arrived*: it reads
   the latest values.
2. Its *engine* is the warps of its channel and lane on the GPU that runs it, ``(gpu, c, lane)``:
   the sender, or the GPU side of a transfer to or from its node's NVSwitch or the network's switch
   (``Schedule.lane``: NCCL's trees reduce up and broadcast down in separate warps, NVLS scatters,
   reduces and gathers in three). An engine runs its transfers one at a time in schedule order.
3. Its *window*: at most W transfers in flight per connection (src, dst, c): it waits for the
   arrival of the transfer W places before it on that connection (W = 0: no limit; NCCL_STEPS slots
   per connection).
4. At q = max(data ready, its engine free, window) its bytes go onto its *ports*: inside a node the
   sender's "gpuR.send" and the receiver's "gpuR.recv" (or the directed pair link "gpuA-gpuB" on a
   board without NVSwitch), across nodes the two NICs ("nodeN.nicK.out"/"in") and, at every tier of
   the fabric above them whose switch differs, the sender's switch's uplink and the receiver's
   downlink ("leaf3.rail1.up"), to or from a switch the GPU side's port only (for the network's
   switch, ``Schedule.network``, the GPU's NIC: the switch reduces at line rate). Each port must
   serve it ``port`` seconds' worth of its rate (a degraded NIC, ``Topology.slow_nics``, its factor
   times that), at most ``port / alone`` of that rate at a time (what one channel moves by itself);
   where the protocol limits a channel, the sender's channel (its thread block, shared by its lanes)
   must also serve it ``alone`` seconds' worth, except to or from an NVSwitch (NVLS's warp groups
   each move a channel's rate) and out of the network's switch (the GPU's NIC writes it). Its bytes
   are done at e when every port has; then it reduces (``compute``); its data arrives ``latency``
   later, and its engine is free ``overhead`` after the compute (the step's fixed cost: flags,
   fences, barriers, which overlaps the latency; the receiver pays it again when it takes the data
   in, which ends the run after the last arrival: ``SimResult.taken``). Latency delays the arrival
   and holds nothing.
5. Contention policy, how a port serves the transfers on it: "fair" (the default) shares its rate
   max-min fairly among all of them at every moment (each the same share, or its own cap if less:
   processor sharing, as flow-level simulators such as SimGrid do), so channels that send together
   finish together; "schedule" serves them one at a time in schedule order, each at its own rate (an
   upper bound where transfers become ready out of schedule order).
"""
from __future__ import annotations

import numpy as np

from collsim.core.schedule import REDUCE, Schedule
from collsim.errors import CollsimError
from collsim.machine.topology import Topology
from collsim.simulate.costs import transfer_costs
from collsim.simulate.fair import EPS, rates
from collsim.simulate.resources import NVLS, route

POLICIES = ("fair", "schedule")


def _ports(topo: Topology, ranks: int, src: int, dst: int, network: int | None = None) -> list[str]:
    """The ports a transfer's bytes cross, spelled out (across nodes also the two proxies, which
    ``simulate_reference`` gives the proxy time instead of the port time, and the fabric's,
    ``_fabric``); to or from the network's switch ``network`` the GPU's NIC and proxy: the switch
    has neither)."""
    g = topo.gpus_per_node
    nic = lambda r: f"node{r // g}.nic{topo.local_of(r) * topo.nics_per_node // g}"  # noqa: E731
    if src == network:
        return [nic(dst) + ".in", f"gpu{dst}.proxy"]
    if dst == network:
        return [nic(src) + ".out", f"gpu{src}.proxy"]
    if src >= ranks:
        return [f"gpu{dst}.recv"]
    if dst >= ranks:
        return [f"gpu{src}.send"]
    if src // g != dst // g:
        fabric = [p for p, _ in _fabric(topo, src, dst)]
        return [nic(src) + ".out", nic(dst) + ".in", f"gpu{src}.proxy", f"gpu{dst}.proxy"] + fabric
    if topo.links_per_pair:
        return [f"gpu{src}-gpu{dst}"]
    return [f"gpu{src}.send", f"gpu{dst}.recv"]


def _fabric(topo: Topology, src: int, dst: int) -> list[tuple[str, int]]:
    """The fabric ports between the NICs of GPUs ``src`` and ``dst`` (on two nodes): at every tier
    whose switch differs (another group of its nodes, or another plane: NIC v on plane v mod
    planes), the sender's switch's uplink and the receiver's switch's downlink, each with its
    tier."""
    where = lambda r, t: (int(topo.node_of(r)) // t.nodes,  # noqa
                          int(topo.nic_of(r)) % topo.nics_per_node % t.planes)
    out = []
    for k, t in enumerate(topo.fabric):
        (gs, ps), (gd, pd) = where(src, t), where(dst, t)
        if (gs, ps) != (gd, pd):
            out += [(t.port_name(gs, ps, True), k), (t.port_name(gd, pd, False), k)]
    return out


def _channel(s: Schedule, i: int) -> str:
    """The sender's channel of transfer i (the GPU side of a
    switch transfer), whose rate its lanes share."""
    gpu = int(s.dst[i]) if s.src[i] >= s.ranks else int(s.src[i])
    return f"gpu{gpu}.ch{int(s.channel[i])}.block"


def _latest_writes(s: Schedule, step, i: int, rank: int, at) -> list[int]:
    """The transfers of the last earlier step that wrote each element of i's range at ``at`` (its
    read offsets, or its written ones) on ``rank``."""
    out, to = set(), s.dst_offset
    for x in range(int(at[i]), int(at[i] + s.length[i])):
        writers = [j for j in range(s.step_ptr[step[i]])
                   if s.dst[j] == rank and to[j] <= x < to[j] + s.length[j]]
        if writers:
            last = step[writers[-1]]
            out.update(j for j in writers if step[j] == last)
    return sorted(out)


def simulate_reference(s: Schedule, topo: Topology, gamma: float = 0.0, protocol: str | None = None,
                       policy: str = "fair") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, arrive) in seconds of every transfer (module docstring), O(n^2) or worse."""
    if policy not in POLICIES:
        raise CollsimError(f"contention policy {policy!r:.30} is not one of {', '.join(POLICIES)}")
    n, step = s.n_transfers, s.step_index
    routes = route(s.src, s.dst, s.channel, s.ranks, topo, network=s.network_endpoint)
    c = transfer_costs(s, topo, routes, gamma, protocol)
    share = c.share
    deps, last_on_engine, sent_on = [], {}, {}
    for i in range(n):
        src, dst, ch = int(s.src[i]), int(s.dst[i]), int(s.channel[i])
        d = (_latest_writes(s, step, i, src, s.offset)
             + (_latest_writes(s, step, i, dst, s.dst_offset) if s.op[i] == REDUCE else []))
        engine = (dst if src >= s.ranks else src, ch, int(s.lane[i]))
        before = last_on_engine.get(engine)
        on_conn = sent_on.setdefault((src, dst, ch), [])
        window = on_conn[-c.window] if c.window and len(on_conn) >= c.window else None
        deps.append((d, before, window))
        last_on_engine[engine] = i
        on_conn.append(i)
    start, end, arrive = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)

    def ready_at(i):
        """When i may start, or None while something it waits for has not happened."""
        d, before, window = deps[i]
        if (any(np.isnan(arrive[j]) for j in d) or (before is not None and np.isnan(end[before]))
                or (window is not None and np.isnan(arrive[window]))):
            return None
        return max([0.0] + [arrive[j] for j in d] + ([end[before]] if before is not None else [])
                   + ([arrive[window]] if window is not None else []))

    def done(i, e):
        e += c.compute[i]
        arrive[i], end[i] = e + c.latency[i], e + c.overhead[i]

    ports = [[p for p in _ports(topo, s.ranks, int(s.src[i]), int(s.dst[i]), s.network_endpoint)
              if not p.endswith(".proxy") or c.proxy[i] > 0]
             + ([_channel(s, i)] if c.alone[i] > 0 and routes.link[i] != NVLS and s.src[i] < s.ranks
                else []) for i in range(n)]
    tier = {p: t for i in range(n) for p, t in _fabric(topo, int(s.src[i]), int(s.dst[i]))
            if max(s.src[i], s.dst[i]) < s.ranks
            and topo.node_of(s.src[i]) != topo.node_of(s.dst[i])}
    fabric_share = c.fabric_share

    k = topo.nics_per_node
    slow = {f"node{nic // k}.nic{nic % k}.{way}": f for nic, f in topo.slow_nics
            for way in ("out", "in")}

    def size(i, p):
        if p in tier:
            return c.fabric[i, tier[p]]
        return {"proxy": c.proxy[i],
                "block": c.alone[i]}.get(p.rsplit(".", 1)[-1], c.port[i] * slow.get(p, 1.0))

    def cap(i, p):
        if p in tier:
            return fabric_share[i, tier[p]]
        if p in slow:                             # a degraded NIC: its own share of its slower rate
            return size(i, p) / c.alone[i] if c.alone[i] > size(i, p) else 1.0
        return 1.0 if p.endswith((".proxy", ".block")) else share[i]
    if policy == "schedule":
        free: dict[str, float] = {}
        for i in range(n):
            q = ready_at(i)
            begins = [max(q, free.get(p, 0.0)) for p in ports[i]]
            for p, b in zip(ports[i], begins):
                free[p] = b + size(i, p)
            start[i] = max(begins)
            done(i, max([q + c.alone[i]] + [b + size(i, p) for p, b in zip(ports[i], begins)]))
        return start, end, arrive
    left = {(i, p): size(i, p) for i in range(n) for p in ports[i]}   # service each port still owes
    now, waiting, running = 0.0, set(range(n)), set()
    while waiting or running:
        for i in sorted(waiting):                                     # start what can start by now
            q = ready_at(i)
            if q is not None and q <= now:
                waiting.discard(i)
                running.add(i)
                start[i] = now
        on = {}
        for i in running:
            for p in ports[i]:
                if left[(i, p)] > EPS:
                    on.setdefault(p, []).append(i)
        rate = {}
        for p, js in on.items():
            rate.update(((i, p), r) for i, r in zip(js, rates([cap(i, p) for i in js])))
        finished = [i for i in running if all(left[(i, p)] <= EPS for p in ports[i])]
        for i in finished:
            running.discard(i)
            done(i, now)
        if finished:
            continue
        upcoming = [q for q in (ready_at(i) for i in waiting) if q is not None]
        step_to = min([now + left[k] / r for k, r in rate.items()] + upcoming, default=None)
        if step_to is None:
            break
        for k, r in rate.items():
            left[k] -= r * (step_to - now)
        now = step_to
    return start, end, arrive
