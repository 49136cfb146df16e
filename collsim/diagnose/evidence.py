"""What the files reveal, joined across files: GPUs, hosts, ranks and nodes, NICs and their ports,
the transports NCCL chose, the NCCL_* settings, NCCL's version and channels, and the measured runs.

Every fact keeps where it was seen (``file:line``) so that a cause can show its evidence line;
``Evidence.lines`` walks every line of every file for the patterns of ``collsim.diagnose.causes``.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from collsim.diagnose.sources import Run, Source

_HOST = re.compile(
    r"(?:^|\s|\])([A-Za-z0-9][^\s:\[\]]*):(\d+):(\d+) \[(\d+)\] NCCL (?:INFO|WARN|TRACE)")
_NET_USING = re.compile(
    r"NET/(IB|Socket|IBext\S*|AWS Libfabric|OFI)\s*:\s*Using (.*?)(?:\s*;\s*OOB.*)?$")
_IB_DEVICE = re.compile(r"\[\d+\]\s*=?\{?\s*(?:\[\d+\]\s*)?([A-Za-z0-9_]+):\d+/(IB|RoCE)")
_NO_IB = re.compile(r"NET/IB : No device found")
_VIA = re.compile(
    r"via (NET/(?:IB\w*|Socket|AWS Libfabric|OFI)[^\s]*|P2P/\S+|SHM/\S+|direct shared memory"
    r"|NVLS|CollNet)")
_GDR = re.compile(r"use ring PXN (\d) GDR (\d)")
_USING_NETWORK = re.compile(r"Using network (\S+)")


@dataclass
class Evidence:
    """Facts of all files (module docstring); each value is ``(value, where)`` or a list of them."""

    sources: list = field(default_factory=list)
    runs: list = field(default_factory=list)
    gpu: tuple | None = None
    hosts: dict = field(default_factory=dict)           # host -> where first seen
    nodes: tuple | None = None
    gpus_per_node: tuple | None = None
    ranks: tuple | None = None
    nics: list = field(default_factory=list)            # (device, link layer, where) NCCL uses
    ports: list = field(default_factory=list)           # ib_ports records with "where"
    # "NET/IB", "NET/Socket", "P2P", "SHM", ... -> [where]
    transports: dict = field(default_factory=dict)
    # (0 or 1, where) from "use ring PXN . GDR ."
    gdr: list = field(default_factory=list)
    env: dict = field(default_factory=dict)             # name -> (value, where)
    version: tuple | None = None
    coll_channels: tuple | None = None
    nvls_channels: tuple | None = None
    commands: list = field(default_factory=list)        # parsers.commands records with "where"
    topo: tuple | None = None                           # (topo dict, source name)
    pairs: list = field(default_factory=list)           # host_pairs records with "where"
    kinds: set = field(default_factory=set)
    nccl_hosts: set = field(default_factory=set)
    channels: list = field(default_factory=list)        # parsers.channels records with "where"
    stated_rates: list = field(default_factory=list)    # (Gb/s, where) the user states
    versions: dict = field(default_factory=dict)        # NCCL version -> where first named
    rows_ranks: tuple | None = None                     # (ranks, where): another collective's rows

    def lines(self):
        """``(where, text)`` for every line of every file."""
        for src in self.sources:
            for n, text in enumerate(src.lines, 1):
                yield f"{src.name}:{n}", text

    def line(self, where: str) -> str:
        """The text of the line at ``where`` (``name:line``), or ""."""
        name, _, n = where.rpartition(":")
        for src in self.sources:
            if src.name == name and n.isdigit() and 0 < int(n) <= len(src.lines):
                return src.lines[int(n) - 1].strip()
        return ""

    def measured_runs(self) -> list:
        return [r for r in self.runs if r.rows]


def gather(sources: list[Source], measured: list | None = None) -> Evidence:
    """The ``Evidence`` of ``sources``; ``measured``: ``(bytes, busbw_GBps)`` pairs given by hand.
    """
    ev = Evidence(sources=list(sources))
    gpus, per_host = Counter(), Counter()
    for src in sources:
        ev.kinds.update(src.kinds)
        ev.runs += src.runs
        for run in src.runs:
            for name, n in run.gpus:
                gpus[name] += 1
                ev.gpu = ev.gpu or (name, f"{src.name}:{n}")
            for group in run.groups:
                for host, count in Counter(group).items():
                    per_host[host] = max(per_host[host], count)
            for h in run.hosts:
                ev.hosts.setdefault(h, f"{src.name}:{run.groups and _rank_line(src, h) or 1}")
            if run.version and not ev.version:
                ev.version = (run.version[0], f"{src.name}:{run.version[1]}")
            for key, value in (run.meta.get("env") or {}).items():
                if str(key).startswith("NCCL_"):
                    ev.env.setdefault(key, (str(value), f"{src.name}:1"))
        for name, n in src.gpus:
            gpus[name] += 1
        _log_facts(ev, src)
        for key, (value, n) in src.env.items():
            ev.env[key] = (value, f"{src.name}:{n}")
        ev.commands += [{**c, "where": f"{src.name}:{c['line']}"} for c in src.commands]
        ev.ports += [{**p, "where": f"{src.name}:{p.get('rate_line', p['line'])}"}
                     for p in src.ports]
        ev.pairs += [{**p, "where": f"{src.name}:{p['line']}"} for p in src.pairs]
        ev.channels += [{**c, "where": f"{src.name}:{c['line']}"} for c in src.channels]
        ev.stated_rates += [(g, f"{src.name}:{n}") for g, n in src.stated]
        for run in src.runs:
            if run.version:
                ev.versions.setdefault(run.version[0], f"{src.name}:{run.version[1]}")
        if src.log is not None and src.log.version:
            ev.versions.setdefault(src.log.version, f"{src.name}:1")
        if src.rows_ranks and not ev.rows_ranks:
            ev.rows_ranks = (src.rows_ranks[0], f"{src.name}:{src.rows_ranks[1]}")
        if src.topo and not ev.topo:
            ev.topo = (src.topo, src.name)
    if gpus:
        best = gpus.most_common(1)[0][0]
        ev.gpu = next(((n, w) for n, w in _gpu_sites(sources) if n == best), ev.gpu)
    if measured:
        ev.runs.append(Run("--measured", rows=[{"bytes": b, "busbw_GBps": v,
                                                "time_us": 0.0, "line": 0}
                                               for b, v in measured]))
        ev.kinds.add("measured")
    for c in ev.commands:
        for h in c["hosts"] or []:
            ev.hosts.setdefault(h, c["where"])
    if not ev.nodes and len(ev.hosts) > 1:
        ev.nodes = (len(ev.hosts), next(iter(ev.hosts.values())))
    if not ev.gpus_per_node and per_host:
        ev.gpus_per_node = (max(per_host.values()), ev.gpu[1] if ev.gpu else "")
    if not ev.gpus_per_node and ev.topo:
        topo, name = ev.topo
        ev.gpus_per_node = (len(topo["gpus"]), f"{name}:{topo['header']}")
    return ev


def _rank_line(src: Source, host: str) -> int:
    for n, line in enumerate(src.lines, 1):
        if "Rank" in line and f" {host} " in f" {line} ":
            return n
    return 1


def _gpu_sites(sources):
    for src in sources:
        for run in src.runs:
            for name, n in run.gpus:
                yield name, f"{src.name}:{n}"
        for name, n in src.gpus:
            yield name, f"{src.name}:{n}"


def _log_facts(ev: Evidence, src: Source) -> None:
    """Facts of NCCL's own lines: hosts, NICs, transports, GDR, version, communicator shape,
    channels.
    """
    for n, line in enumerate(src.lines, 1):
        where = f"{src.name}:{n}"
        if h := _HOST.search(line):
            ev.nccl_hosts.add(h.group(1))
        if m := _NET_USING.search(line):
            kind = "NET/Socket" if m.group(1) == "Socket" else "NET/IB"
            if kind == "NET/IB":
                found = _IB_DEVICE.findall(m.group(2))
                if len(found) > len(ev.nics):
                    ev.nics = [(d, layer, where) for d, layer in found]
        if _NO_IB.search(line):
            ev.transports.setdefault("no IB device", []).append(where)
        for via in _VIA.findall(line):
            ev.transports.setdefault(_transport(via), []).append(where)
        if m := _USING_NETWORK.search(line):
            ev.transports.setdefault(
                "network " + ("Socket" if m.group(1) == "Socket" else "IB"), []).append(where)
        if m := _GDR.search(line):
            ev.gdr.append((int(m.group(2)), where))
    log = src.log
    if log is None:
        return
    if log.version and not ev.version:
        n = next((i for i, line in enumerate(src.lines, 1) if log.version in line), 1)
        ev.version = (log.version, f"{src.name}:{n}")
    for c in log.comms:
        n = next((i for i, line in enumerate(src.lines, 1)
                  if f"nRanks {c['nranks']} nNodes" in line), 1)
        where = f"{src.name}:{n}"
        if not ev.ranks or c["nranks"] > ev.ranks[0]:
            ev.ranks = (c["nranks"], where)
        if not ev.nodes or c["nnodes"] > ev.nodes[0]:
            ev.nodes = (c["nnodes"], where)
        if not ev.gpus_per_node or c["local_ranks"] > ev.gpus_per_node[0]:
            ev.gpus_per_node = (c["local_ranks"], where)
    if log.coll_channels is not None and ev.coll_channels is None:
        n = next((i for i, line in enumerate(src.lines, 1) if " coll channels," in line), 1)
        ev.coll_channels = (log.coll_channels, f"{src.name}:{n}")
        ev.nvls_channels = (log.nvls_channels, f"{src.name}:{n}")


def _transport(via: str) -> str:
    if via.startswith("NET/Socket"):
        return "NET/Socket"
    if via.startswith("NET/"):
        return "NET/IB/GDRDMA" if "GDRDMA" in via else "NET/IB"
    if via.startswith("SHM") or via == "direct shared memory":
        return "SHM"
    return via.split("/")[0]
