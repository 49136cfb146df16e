"""Channels that do the same thing are simulated once:
``collapse_channels`` and ``permute_channels``.

NCCL's channels often repeat each other: on one NVSwitch node every ring channel visits the GPUs in
the same order, across nodes the channels that share a NIC do. Channels with the same structure (the
same senders, receivers, lanes, operations and order of steps, lengths within ``LENGTH_TOLERANCE``)
form a class. When every class has the same number g > 1 of channels, simulating one channel per
class on a machine whose ports move g times less (each of its transfers stands for g that share the
ports with the same share) and whose proxies take g times longer gives every transfer of the kept
channels the times it has in the full simulation: fair shares are per transfer, so g equal transfers
on a port get what one transfer of g times the port time gets; engines, windows and the channel's
own rate are per channel and stay as they are. Exact for equal classes up to the lengths' tolerance;
any other case is simulated whole.

``permute_channels`` goes further where NCCL's channels do the same thing from different GPUs of
each node: channel c is a channel of its class with every GPU's local index mapped by a permutation
pi_c, the same on every node (a tree channel c starts its chains at GPU c mod G: a rotation; a rail
ring's search channel s enters at GPU s and runs down for even s, up for odd s: a rotation or a
reflection). When, in every class, each position of the kept channel lands on every GPU equally
often (m times) and the NICs are one per GPU or one per node, each GPU's port carries, from every
class, m transfers of each position of its channel at every moment. So one channel per class on a
machine where the GPUs of a node share one send port, one receive port, one NIC and one proxy
(``simulate(..., merged=True)``), each m times slower (the NIC m G / K times), gives every kept
transfer its time in the full simulation. A fabric above the NICs (``Topology.fabric``) keeps both
exact: its ports' times are the NICs' times scaled (``Tier.uplink_ratio``), and a permutation of
every node's GPUs maps a rail onto a rail where each NIC is its own rail, or the fabric has one
plane (else ``permute_channels`` does not apply); a degraded NIC (``Topology.slow_nics``) is not
mapped onto another, so it keeps ``permute_channels`` out (``collapse_channels``, whose channels
share their ports, stays exact).

``fabric_binds``: where no fabric port can ever serve a transfer more slowly than its NIC does
(every uplink or downlink carries at most n transfers at once, one per engine, and moves at least n
NICs' rate), the fabric changes no time of the simulation (a transfer is done when its slowest port
is, and each fabric port serves its jobs no slower than their NICs), so the machine without it, and
every reduction exact on that machine, gives the same times (to the rounding of ties: a fabric port
that finishes a job at the instant its NIC does).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from collsim.core.schedule import Schedule
from collsim.machine.topology import Link, Topology
from collsim.simulate.resources import fabric_names, fabric_rows

# channel parts differ by a few elements when the buffer does not split evenly
LENGTH_TOLERANCE = 0.01


def channel_classes(s: Schedule) -> list[list[int]]:
    """The channels of ``s`` grouped by structure (module
    docstring), each class in channel order."""
    step = s.step_index
    return _classes(s, lambda idx: _structure(s, idx, s.src[idx], s.dst[idx], step))


def _classes(s: Schedule, key_of) -> list[list[int]]:
    """Channels grouped by ``key_of(transfer indices of the
    channel)``, lengths within ``LENGTH_TOLERANCE``."""
    # stable: each channel's transfers in schedule order; 16-bit keys sort by radix
    order = np.argsort(s.channel.astype(np.int16 if s.n_channels < 1 << 15 else np.int64),
                       kind="stable")
    ch = s.channel[order]
    bounds = np.flatnonzero(np.diff(ch)) + 1
    classes: dict[bytes, list[tuple[int, np.ndarray]]] = {}
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(ch)]):
        idx = order[lo:hi]
        classes.setdefault(key_of(idx), []).append((int(ch[lo]), s.length[idx]))
    out = []
    for members in classes.values():
        first = members[0][1].astype(float)
        same = [c for c, ln in members
                if np.all(np.abs(ln - first) <= LENGTH_TOLERANCE * np.maximum(first, 1))]
        out.append(same)
        out.extend([c] for c, _ in members if c not in same)
    return sorted(out)


def _structure(s: Schedule, idx: np.ndarray, src: np.ndarray, dst: np.ndarray,
               step: np.ndarray) -> bytes:
    """One channel's transfers ``idx`` (in schedule order) as bytes: ends, lanes, ops and its steps
    numbered 0, 1, ... (``step``: every transfer's step in the schedule)."""
    at = step[idx]
    steps = np.zeros(len(idx), np.int64)
    np.cumsum(at[1:] != at[:-1], out=steps[1:])
    return b"".join(a.tobytes() for a in (src, dst, s.lane[idx], s.op[idx], steps))


def _keep(s: Schedule, classes: list[list[int]], factor: int) -> Schedule:
    """The first channel of every class, renumbered 0..k-1."""
    keep = np.array([c[0] for c in classes])
    renumber = np.full(int(s.channel.max()) + 1, -1, np.int64)
    renumber[keep] = np.arange(len(keep))
    mask = renumber[s.channel] >= 0
    steps = np.repeat(np.arange(s.n_steps), np.diff(s.step_ptr))[mask]
    step_ptr = np.r_[0, np.cumsum(np.bincount(steps, minlength=s.n_steps))]
    return s.take(mask, step_ptr, meta={**s.meta, "channels_per_kept": factor},
                  channel=renumber[s.channel[mask]])


def _slowed(topology: Topology, ports: float, nics: float, merged_nics: int = 1) -> Topology:
    """``topology`` with GPU and NVLS ports ``ports`` times and NICs and proxies ``nics`` times
    slower; the fabric's ports as much as the NICs, and ``merged_nics`` / planes times more (a
    node's NICs merged into one)."""
    slow = lambda link, k: None if link is None else Link(link.alpha, link.beta * k)   # noqa: E731
    protocols = tuple(replace(p, inter=replace(p.inter, proxy=p.inter.proxy * ports))
                      for p in topology.protocols)
    fabric = tuple(replace(t, oversubscription=t.oversubscription * merged_nics / t.planes)
                   if merged_nics > 1 else t for t in topology.fabric)
    return replace(topology, intra=slow(topology.intra, ports), inter=slow(topology.inter, nics),
                   nvls=slow(topology.nvls, ports), protocols=protocols, fabric=fabric)


def _canonical(local: np.ndarray, g: int) -> np.ndarray:
    """The permutation of 0..g-1 that numbers local GPU indices in the order they first appear in
    ``local`` (indices that never appear after, in their order): two channels related by a
    permutation of local GPUs get the same canonical form."""
    first = len(local) + np.arange(g)              # where each index first appears; absent: after
    for v in np.flatnonzero(np.bincount(local, minlength=g)):
        first[v] = np.argmax(local == v)
    perm = np.empty(g, np.int64)
    perm[np.argsort(first)] = np.arange(g)
    return perm


def permute_channels(s: Schedule, topology: Topology) -> tuple[Schedule, Topology, int] | None:
    """(schedule, topology, channels each kept one stands for) of the quotient by permutations of
    every node's GPUs (module docstring), to be simulated with ``merged=True``; None where it does
    not apply."""
    g, k = topology.gpus_per_node, topology.nics_per_node
    if (s.n_transfers == 0 or g < 2 or topology.links_per_pair or k not in (1, g) or s.ranks % g
            or s.n_channels < g or any(t.planes not in (1, k) for t in topology.fabric)
            or topology.slow_nics):
        return None                                      # (a class holds m G channels)
    perm_of: dict[int, np.ndarray] = {}

    def mapped(x: np.ndarray, perm: np.ndarray) -> np.ndarray:
        return np.where(x < s.ranks, x // g * g + perm[x % g], x)

    step = s.step_index

    def key(idx: np.ndarray) -> bytes:
        ends = np.stack([s.src[idx], s.dst[idx]], axis=1).ravel()
        perm = _canonical(ends[ends < s.ranks] % g, g)
        perm_of[int(s.channel[idx[0]])] = perm
        return _structure(s, idx, mapped(s.src[idx], perm), mapped(s.dst[idx], perm), step)

    classes = _classes(s, key)
    m = len(classes[0]) // g
    for cl in classes:             # each canonical position on every GPU m times: counts[x, y] == m
        counts = np.zeros((g, g), np.int64)
        for c in cl:
            counts[perm_of[c], np.arange(g)] += 1
        if m < 1 or (counts != m).any():
            return None
    return _keep(s, classes, m * g), _slowed(topology, m, m * g / k, k), m * g


def stand_for(topology: Topology, g: int) -> Topology:
    """The machine on which each channel of a schedule
    stands for ``g`` channels alike (module docstring)."""
    return _slowed(topology, g, g)


def collapse_channels(s: Schedule, topology: Topology) -> tuple[Schedule, Topology, int]:
    """(schedule, topology, g): one channel per class of ``s`` on ``topology`` slowed as the module
    docstring says, when every class has g > 1 channels; else ``(s, topology, 1)``."""
    if s.n_transfers == 0:
        return s, topology, 1
    classes = channel_classes(s)
    g = len(classes[0])
    if g < 2 or any(len(c) != g for c in classes):
        return s, topology, 1
    return _keep(s, classes, g), stand_for(topology, g), g


def fabric_binds(src: np.ndarray, dst: np.ndarray, engine: np.ndarray, topology: Topology,
                 copies: int = 1) -> str | None:
    """None when no fabric port of ``topology`` can serve transfers ``src -> dst`` (run by
    ``engine``, one at a time each; ``copies``: each stands for that many alike on other engines)
    more slowly than their NICs (module docstring); else says which port can: "leaf0.rail1.up: 3
    transfers at once, 1.5x a NIC's rate"."""
    if not topology.fabric:
        return None
    g = topology.gpus_per_node
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    cross = np.flatnonzero((src // g != dst // g) & (src < topology.ranks) & (dst < topology.ranks))
    cols, size = fabric_rows(topology, src, dst, cross)
    names, span = None, int(np.max(engine, initial=0)) + 1
    for t, col in enumerate(cols):
        tier = topology.fabric[t // 2]
        held = cross[col[cross] != size - 1]
        pairs = np.unique(col[held].astype(np.int64) * span + np.asarray(engine)[held])
        at_once = np.bincount(pairs // span, minlength=size) * copies
        nics = 1.0 / tier.uplink_ratio(topology.nics_per_node)
        worst = int(np.argmax(at_once))
        if at_once[worst] > nics:
            names = names or fabric_names(topology)
            return f"{names[worst]}: {at_once[worst]} transfers at once, {nics:g}x a NIC's rate"
    return None


def without_fabric(topology: Topology) -> Topology:
    """``topology`` with a non-blocking fabric (only the NICs limit)."""
    return replace(topology, fabric=())
