"""Parse NCCL's debug output (``NCCL_DEBUG=INFO``) into plain data.

Formats are those of NCCL 2.28 (``src/init.cc``, ``src/graph/tuning.cc``,
``src/graph/rings.cc``, ``src/graph/search.cc``, ``src/graph/connect.cc``,
``src/enqueue.cc``); they are unchanged back to 2.19 except the per-call line,
which 2.23 printed with integer codes. An INFO line is
``[timestamp ]host:pid:tid [dev] NCCL INFO <message>``; what is read from the
messages:

* ``NCCL version 2.28.9+cuda12.9`` (also the bare line of ``NCCL_DEBUG=WARN``
  or ``VERSION``): the runtime version;
* ``comm 0x.. rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0``;
* ``24 coll channels, 24 collnet channels, 0 nvls channels, ...``;
* ``Channel 00/24 : 0 1`` (rank 0 only): ring order per channel;
* ``Trees [0] -1/-1/-1->0->1 [1] ...``: per channel ``down0/down1/down2->rank->up``;
* ``Ring 00 : 1 -> 0 -> 1`` and ``Tree 0 : -1 -> 0 -> 1/-1/-1`` (GRAPH);
* ``Pattern 4, crossNic 0, nChannels 12, bw 30.000000/30.000000, type NVL/PIX,
  sameChannels 1`` (GRAPH search result);
* the TUNING table (rank 0, one per communicator, printed in blocks of three
  algorithms): ``Algorithm |``, ``Protocol |``, ``Max NThreads |`` rows and one
  row per collective of ``latency_us/bandwidth_GBps`` cells, where the bandwidth
  is NCCL's *algorithm* bandwidth in GB/s (1e9 B/s);
* per call (rank 0): ``AllReduce: 1048576 Bytes -> Algo RING proto LL
  channel{Lo..Hi}={0..23}`` (2.24+) or ``... -> Algo 1 proto 0 time 12.3`` (2.23).

Unknown lines are skipped; a line of a known kind that does not parse raises
``CollsimError`` naming the line number.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from collsim.errors import CollsimError
from collsim.inputs import read_text
from collsim.nccl import NCCL_ALGOS as ALGOS, PROTOS

# ALGOS: NCCL's index order (2.23 logs print the index)
_ALGO_NAMES = {a.upper(): a for a in ALGOS} | {"NVLS_TREE": "NVLSTree",
                                               "COLLNET_DIRECT": "CollNetDirect",
                                               "COLLNET_CHAIN": "CollNetChain"}
_PROTO_NAMES = {p.upper(): p for p in PROTOS}

_INFO = re.compile(r"(?:^|\s|\])(?P<host>[^\s:\[\]]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] "
                   r"NCCL INFO (?P<msg>.*)$")
VERSION_PATTERN = re.compile(r"NCCL version (\d+\.\d+\.\d+)(\S*)")
_COMM = re.compile(r"comm (\S+) rank (\d+) nRanks (\d+) nNodes (\d+) localRanks (\d+) localRank "
                   r"(\d+)")
_CHANNELS = re.compile(r"(\d+) coll channels, (\d+) collnet channels, (\d+) nvls channels, (\d+) "
                       r"p2p channels")
_RING_ORDER = re.compile(r"Channel (\d+)/(\d+) :((?: +\d+)*)( *\.\.\.)?$")
_TREES = re.compile(r"\[(\d+)\] (-?\d+)/(-?\d+)/(-?\d+)->(-?\d+)->(-?\d+)")
_RING_LINK = re.compile(r"Ring (\d+) : (-?\d+) -> (-?\d+) -> (-?\d+)$")
_TREE_LINK = re.compile(r"Tree (\d+) : (-?\d+) -> (-?\d+) -> (-?\d+)/(-?\d+)/(-?\d+)$")
_NUM = r"(?:\d+(?:\.\d*)?|\.\d+)"    # a number as NCCL prints it with %f: "1.2.3" is none
_PATTERN = re.compile(rf"Pattern (\d+), crossNic (\d+), nChannels (\d+), bw ({_NUM})/({_NUM}), "
                      r"type (\w+)/(\w+), sameChannels (\d+)")
_CHOICE_START = re.compile(r"^(\w+): \d+ Bytes -> Algo ")
_CHOICE = re.compile(r"^(\w+): (\d+) Bytes -> Algo (\w+) proto (\w+)"
                     rf"(?: channel\{{Lo\.\.Hi\}}=\{{(\d+)\.\.(\d+)\}}| time (-?{_NUM}))$")
_CELL = re.compile(rf"^\s*(-?{_NUM}|nan|inf)/\s*(-?{_NUM}|nan|inf)\s*$")


@dataclass
class NcclLog:
    """What one NCCL debug log says (fields are empty when the log lacks them).

    ``tuning`` is the first TUNING table: ``{collective: {algo: {proto:
    [latency_us, algbw_GBps]}}}``; ``tuning_tables`` holds every table seen.
    ``choices`` lists per-call decisions as dicts (``func``, ``bytes``,
    ``algo``, ``proto`` and ``channel_lo``/``channel_hi`` or ``time_us``).
    """

    version: str | None = None
    version_suffix: str = ""
    comms: list = field(default_factory=list)
    coll_channels: int | None = None
    nvls_channels: int | None = None
    p2p_channels: int | None = None
    rings: dict = field(default_factory=dict)
    ring_truncated: bool = False
    trees: list = field(default_factory=list)
    ring_links: list = field(default_factory=list)
    tree_links: list = field(default_factory=list)
    graphs: list = field(default_factory=list)
    tuning_tables: list = field(default_factory=list)
    max_threads: dict = field(default_factory=dict)
    choices: list = field(default_factory=list)

    @property
    def tuning(self) -> dict:
        return self.tuning_tables[0] if self.tuning_tables else {}

    @property
    def n_nodes(self) -> int | None:
        """nNodes reported by the communicator lines (None if none was seen)."""
        nodes = {c["nnodes"] for c in self.comms}
        if len(nodes) > 1:
            raise CollsimError(f"NCCL log reports inconsistent nNodes values {sorted(nodes)}")
        return nodes.pop() if nodes else None

    def choices_by_size(self, func: str = "AllReduce") -> dict:
        """``{bytes: (algo, proto)}`` for the per-call lines of ``func`` (last call wins)."""
        return {c["bytes"]: (c["algo"], c["proto"]) for c in self.choices if c["func"] == func}

    def to_dict(self) -> dict:
        """JSON-ready dict (what the runner stores as its ``nccl_probe`` metadata)."""
        return {
            "version": self.version, "version_suffix": self.version_suffix,
            "comms": self.comms, "n_nodes": self.n_nodes,
            "coll_channels": self.coll_channels, "nvls_channels": self.nvls_channels,
            "p2p_channels": self.p2p_channels,
            "rings": {str(k): v for k, v in sorted(self.rings.items())},
            "ring_truncated": self.ring_truncated, "trees": self.trees,
            "ring_links": self.ring_links, "tree_links": self.tree_links,
            "graphs": self.graphs, "tuning": self.tuning, "max_threads": self.max_threads,
            "n_tuning_tables": len(self.tuning_tables), "choices": self.choices,
        }


def _canonical(name: str, spellings: dict, choices: tuple, what: str) -> str:
    token = str(name).strip()
    if token.isdigit() and int(token) < len(choices):
        return choices[int(token)]
    if token.upper() not in spellings:
        raise CollsimError(f"unknown NCCL {what} {token!r} (known: {', '.join(choices)})")
    return spellings[token.upper()]


def canonical_algo(name: str) -> str:
    """NCCL algorithm name in NCCL's spelling (``ring`` / ``RING`` / ``1`` -> ``Ring``)."""
    return _canonical(name, _ALGO_NAMES, ALGOS, "algorithm")


def canonical_proto(name: str) -> str:
    """NCCL protocol name in NCCL's spelling (``simple`` / ``SIMPLE`` / ``2`` -> ``Simple``)."""
    return _canonical(name, _PROTO_NAMES, PROTOS, "protocol")


def _named(fn, token: str, lineno: int) -> str:
    try:
        return fn(token)
    except CollsimError as e:
        raise CollsimError(f"line {lineno}: {e}") from None


class _TableState:
    """Reads the TUNING table, which NCCL prints in blocks of three algorithms."""

    def __init__(self, log: NcclLog):
        self.log = log
        self.algos: list[str] = []
        self.protos: list[str] = []
        self.table_algos: set[str] = set()

    def algorithm_row(self, msg: str, lineno: int) -> None:
        algos = [c.strip() for c in msg.split("|")[1:] if c.strip()]
        if not algos:
            raise CollsimError(f"line {lineno}: TUNING 'Algorithm' row names no algorithm")
        if not self.log.tuning_tables or self.table_algos & set(algos):
            self.log.tuning_tables.append({})  # a new communicator's table
            self.table_algos = set()
        self.table_algos |= set(algos)
        self.algos, self.protos = algos, []

    def protocol_row(self, msg: str, lineno: int) -> None:
        cells = [c.strip() for c in msg.split("|")[1:] if c.strip()]
        protos: list[str] = []
        for c in cells:  # the row repeats the protocol names for each algorithm
            if c in protos:
                break
            protos.append(c)
        if not protos:
            raise CollsimError(f"line {lineno}: TUNING 'Protocol' row names no protocol")
        self.protos = protos

    def _cells(self, msg: str, lineno: int) -> list[str]:
        if not self.algos or not self.protos:
            raise CollsimError(f"line {lineno}: TUNING row before its Algorithm/Protocol header")
        cells = [c for c in msg.split("|")[1:] if c.strip()]
        if len(cells) != len(self.algos) * len(self.protos):
            raise CollsimError(f"line {lineno}: TUNING row has {len(cells)} cells, expected "
                               f"{len(self.algos) * len(self.protos)}")
        return cells

    def threads_row(self, msg: str, lineno: int) -> None:
        cells = self._cells(msg, lineno)
        for i, c in enumerate(cells):
            algo, proto = self.algos[i // len(self.protos)], self.protos[i % len(self.protos)]
            try:
                self.log.max_threads.setdefault(algo, {})[proto] = int(c)
            except ValueError:
                raise CollsimError(f"line {lineno}: bad Max NThreads cell {c.strip()!r}") from None

    def function_row(self, func: str, msg: str, lineno: int) -> None:
        cells = self._cells(msg, lineno)
        rows = self.log.tuning_tables[-1].setdefault(func, {})
        for i, c in enumerate(cells):
            m = _CELL.match(c)
            if not m:
                raise CollsimError(f"line {lineno}: bad TUNING cell {c.strip()!r} (want lat/bw)")
            algo, proto = self.algos[i // len(self.protos)], self.protos[i % len(self.protos)]
            rows.setdefault(algo, {})[proto] = [float(m.group(1)), float(m.group(2))]


def _parse_message(log: NcclLog, table: _TableState, msg: str, lineno: int) -> None:
    stripped = msg.strip()
    head = stripped.split("|", 1)[0].strip() if "|" in stripped else None
    if head == "Algorithm":
        return table.algorithm_row(stripped, lineno)
    if head == "Protocol":
        return table.protocol_row(stripped, lineno)
    if head == "Max NThreads":
        return table.threads_row(stripped, lineno)
    if head is not None and re.fullmatch(r"[A-Z][A-Za-z]+", head) and table.algos:
        return table.function_row(head, stripped, lineno)
    if _CHOICE_START.match(stripped):
        m = _CHOICE.match(stripped)
        if not m:
            raise CollsimError(f"line {lineno}: malformed NCCL per-call line {stripped!r}")
        choice = {"func": m.group(1), "bytes": int(m.group(2)),
                  "algo": _named(canonical_algo, m.group(3), lineno),
                  "proto": _named(canonical_proto, m.group(4), lineno)}
        if m.group(5) is not None:
            choice.update(channel_lo=int(m.group(5)), channel_hi=int(m.group(6)))
        elif m.group(7) is not None:
            choice["time_us"] = float(m.group(7))
        log.choices.append(choice)
        return None
    if stripped.startswith("Trees"):
        log.trees.extend({"channel": int(c), "down": [int(a), int(b), int(d)], "rank": int(r),
                          "up": int(u)} for c, a, b, d, r, u in _TREES.findall(stripped))
        return None
    if m := _COMM.search(stripped):
        log.comms.append({"comm": m.group(1), "rank": int(m.group(2)), "nranks": int(m.group(3)),
                          "nnodes": int(m.group(4)), "local_ranks": int(m.group(5)),
                          "local_rank": int(m.group(6))})
    elif m := _CHANNELS.match(stripped):
        log.coll_channels, log.nvls_channels, log.p2p_channels = (int(m.group(i))
                                                                  for i in (1, 3, 4))
    elif m := _RING_ORDER.match(stripped):
        ranks = [int(x) for x in m.group(3).split()]
        if m.group(4):  # dumpLine truncated the line: its last number may be cut
            ranks, log.ring_truncated = ranks[:-1], True
        log.rings[int(m.group(1))] = ranks
    elif m := _RING_LINK.match(stripped):
        log.ring_links.append({"channel": int(m.group(1)), "prev": int(m.group(2)),
                               "rank": int(m.group(3)), "next": int(m.group(4))})
    elif m := _TREE_LINK.match(stripped):
        log.tree_links.append({"channel": int(m.group(1)), "up": int(m.group(2)),
                               "rank": int(m.group(3)),
                               "down": [int(m.group(i)) for i in (4, 5, 6)]})
    elif m := _PATTERN.match(stripped):
        log.graphs.append({"pattern": int(m.group(1)), "cross_nic": int(m.group(2)),
                           "n_channels": int(m.group(3)), "bw_intra_GBps": float(m.group(4)),
                           "bw_inter_GBps": float(m.group(5)), "type_intra": m.group(6),
                           "type_inter": m.group(7), "same_channels": int(m.group(8))})
    return None


def parse_lines(lines, source: str = "<log>") -> NcclLog:
    """Parse an iterable of NCCL log lines; errors name ``source:line``."""
    log = NcclLog()
    table = _TableState(log)
    for lineno, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if log.version is None and (v := VERSION_PATTERN.search(line)):
            log.version, log.version_suffix = v.group(1), v.group(2)
        m = _INFO.search(line)
        if not m:
            continue
        try:
            _parse_message(log, table, m.group("msg"), lineno)
        except CollsimError as e:
            raise CollsimError(f"{source}:{e}") from None
    return log


def parse_text(text: str, source: str = "<log>") -> NcclLog:
    """Parse NCCL log text (a whole file's contents)."""
    return parse_lines(text.splitlines(), source)


def parse_file(path) -> NcclLog:
    """Parse an NCCL debug file (``NCCL_DEBUG_FILE``; bytes that are not UTF-8 read as U+FFFD);
    errors name ``path:line``."""
    return parse_text(read_text(path, "NCCL log", errors="replace"), str(path))
