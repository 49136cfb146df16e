"""Recognise and read each file a user gives ``collsim diagnose``, by its content, whatever its
name.

A file may hold several kinds at once (nccl-tests output with NCCL INFO lines and the command line
in it): ``read_source`` looks for each and keeps what it finds in one ``Source``:

* ``nccl-tests``: the text table of any nccl-tests version, launcher tags and truncation included
  (``collsim.measure.nccl_tests.import_nccl_tests``, lenient), split into ``Run`` s: one per header,
  so that two single-node runs printed into one file show as two; rows whose columns are broken by
  interleaved tags (``[0]`` inside a row) are read loosely when the importer keeps none;
* ``nccl-tests-json`` (``-J``; several files pasted one after another: a run each),
  ``nccl-inspector`` (NCCL Inspector's JSON: a run per communicator and collective,
  ``collsim.measure.inspector``) and ``collsim-records`` (runner JSON Lines, published logs);
* ``nccl-log``: NCCL_DEBUG lines (INFO, TRACE, WARN) through ``collsim.nccl.log.parse_lines``; a
  line it cannot read is left out and named in ``notes``;
* ``topology`` (nvidia-smi topo -m or NCCL's XML topology dump), ``ib-status`` (ibstatus, ibstat,
  ibv_devinfo), ``environment`` (NCCL_* settings, launcher command lines) and ``host-pairs``:
  ``collsim.diagnose.parsers``;
* ``lspci`` (``lspci -vvv``: ACSCtl, LnkSta) and ``kernel`` (``/proc/cmdline``, dmesg's IOMMU
  lines), read only by the causes' line patterns, ``post`` (what a user wrote about the machine: a
  stated rate, or a line naming GPUDirect, RDMA, ACS, NCCL, NVLink, InfiniBand, PCIe, IOMMU, a NIC
  or HCA), and ``gpu-list`` (``nvidia-smi -L`` or ``nvlink -s``: ``GPU 0: NAME (UUID``).

Files are read only through ``collsim.inputs.read_text`` (bounded; bytes that are not UTF-8 read as
U+FFFD). A file that cannot be read, is empty, is binary or holds none of these kinds raises a
one-line ``CollsimError`` naming it, which the caller turns into a skip.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from collsim.core.collective import get as get_collective, named
from collsim.diagnose import parsers, runs, topo_xml
from collsim.errors import CollsimError, CollsimWarning
from collsim.inputs import read_text
from collsim.measure import parse_jsonl
from collsim.measure.inspector import is_inspector, read_inspector
from collsim.measure.nccl_tests import DTYPES, import_nccl_tests
from collsim.measure.nccl_tests_json import read_nccl_tests_json
from collsim.measure.public_log import is_public_log, load_public_log
from collsim.nccl.log import VERSION_PATTERN, parse_lines

_HEADER = re.compile(r"#\s*nThread\s+\d+\s+nGpus\s+\d+")
_RANK = re.compile(
    r"#\s+Rank\s+(\d+)(?:\s+Group\s+\d+)?\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+"
    r"\[[^\]]*\]\s*(.*)$")
_AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*([\d.]+)")
_NCCL_LINE = re.compile(r"NCCL (?:INFO|WARN|TRACE)|NCCL version \d")
_PROSE = re.compile(r"\b(?:GPU ?Direct|RDMA|ACS|NCCL|NVLink|InfiniBand|PCIe|IOMMU|NIC|HCA)\b", re.I)
_GPU_LIST = re.compile(r"^GPU \d+: (.+?) \(UUID")
_BAD_LINE = re.compile(r":(?:line )?(\d+): ")
# kinds read only by the causes' line patterns: lspci -vvv (ACS, link status), kernel command line
# and log
OTHER_KINDS = (("lspci", re.compile(r"ACSCtl:|LnkSta:|LnkCap:")),
               ("kernel", re.compile(r"BOOT_IMAGE=|DMAR:|AMD-Vi|\biommu[=:]|IO_PAGE_FAULT", re.I)))


@dataclass
class Run:
    """One measured run: its rows (``bytes``, ``busbw_GBps``, ``time_us``, ``line``) and what it
    says of itself; ``groups`` lists the hosts of each ``Rank 0...`` block (more than one: separate
    runs).
    """

    source: str
    rows: list = field(default_factory=list)
    hosts: list = field(default_factory=list)
    gpus: list = field(default_factory=list)       # (device name, line)
    groups: list = field(default_factory=list)     # [[host, ...], ...] one per "Rank 0" block
    group_lines: list = field(default_factory=list)  # the line of each block's "Rank 0"
    headers: list = field(default_factory=list)    # lines of "# nThread ..." headers
    ranks: list = field(default_factory=list)      # (rank, line) of each "# Rank" line
    averages: list = field(default_factory=list)   # lines of "# Avg bus bandwidth" footers
    meta: dict = field(default_factory=dict)
    version: tuple | None = None                   # (version, line)
    label: str = ""                                # "name#k" when the file holds several runs

    @property
    def name(self) -> str:
        return self.label or self.source


@dataclass
class Source:
    """What one file holds; ``name`` is how evidence names it (``name:line``)."""

    path: str
    name: str
    lines: list
    kinds: list = field(default_factory=list)
    runs: list = field(default_factory=list)
    log: object = None
    topo: dict | None = None
    ports: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    commands: list = field(default_factory=list)
    pairs: list = field(default_factory=list)
    channels: list = field(default_factory=list)
    stated: list = field(default_factory=list)     # (Gb/s, line) rates the user states in prose
    rows_ranks: tuple | None = None                # (ranks, line) another collective's rows imply
    gpus: list = field(default_factory=list)
    notes: list = field(default_factory=list)


def read_text_file(path) -> str:
    """The text of ``path`` (``read_text``, bad bytes replaced), refused when it is binary or empty.
    """
    text = read_text(path, "file", errors="replace")
    if "\x00" in text or text.count("\ufffd") > max(16, len(text) // 100):
        raise CollsimError(f"file {path}: not a text file (binary content)")
    if not text.strip():
        raise CollsimError(f"file {path}: empty")
    return text


def read_source(path, name: str | None = None) -> Source:
    """Every kind ``path`` holds (module docstring), or a one-line CollsimError when none."""
    text = read_text_file(path)
    src = Source(str(path), name or Path(path).name, text.split("\n"))
    stripped = text.lstrip()
    if stripped.startswith("{"):
        _json_kinds(src, path, text)
    if (any(_HEADER.search(line) or _AVG.search(line) for line in src.lines)
            or _row_lines(src.lines)):
        _nccl_tests(src, path)
    if any(_NCCL_LINE.search(line) for line in src.lines):
        _nccl_log(src)
    if (topo := parsers.topo_matrix(src.lines) or topo_xml.topo_xml(src.lines)) is not None:
        src.topo = topo
        src.kinds.append("topology")
    if ports := parsers.ib_ports(src.lines):
        src.ports = ports
        src.kinds.append("ib-status")
    src.env, src.commands = parsers.nccl_env(src.lines), parsers.commands(src.lines)
    src.channels, src.stated = parsers.channels(src.lines), parsers.stated_rates(src.lines)
    if (src.env or src.commands) and "environment" not in src.kinds:
        src.kinds.append("environment")
    if pairs := parsers.host_pairs(src.lines):
        src.pairs = pairs
        src.kinds.append("host-pairs")
    for kind, regex in OTHER_KINDS:
        if any(regex.search(line) for line in src.lines):
            src.kinds.append(kind)
    src.gpus = [(m.group(1), n) for n, line in enumerate(src.lines, 1)
                if (m := _GPU_LIST.match(line.strip()))]
    if src.gpus:
        src.kinds.append("gpu-list")
    prose = any(_PROSE.search(line) and len(line.split()) >= 3 for line in src.lines)
    if not src.kinds and (src.stated or prose):
        src.kinds.append("post")   # what the user wrote: read by the causes' line patterns
    if not src.kinds:
        raise CollsimError(f"file {path}: no nccl-tests output, NCCL log, nvidia-smi output, "
                           "ibstatus, lspci, kernel log, NCCL_* settings or command line found in "
                           "it")
    return src


def _json_kinds(src: Source, path, text: str) -> None:
    first = text.lstrip().split("\n", 1)[0]
    try:
        if is_public_log(first):
            found, kind = [load_public_log(path)], "collsim-records"
        elif '"type"' in first and '"meta"' in first:
            found, kind = [parse_jsonl(src.lines, src.name, strict=False)], "collsim-records"
        elif is_inspector(text):
            found, kind = read_inspector(text, src.name), "nccl-inspector"
        elif '"results"' in text[:1 << 20]:
            # several -J files pasted one after another: a run each
            found, kind = read_nccl_tests_json(text, src.name, label="default"), "nccl-tests-json"
        else:
            return
    # the loaders' errors, and values they pass
    except (CollsimError, ValueError, TypeError, OverflowError) as e:
        src.notes.append(f"measurements not read: {str(e)[:160]}")
        return
    for k, m in enumerate(found, 1):
        _json_run(src, m, kind, f"{src.name}#{k}" if len(found) > 1 else "")
    src.kinds.append(kind)


def _json_run(src: Source, m, kind: str, label: str) -> None:
    """``m`` (a JSON file's measurements) as one of ``src``'s runs."""
    run = Run(src.name, meta=dict(m.meta), label=label)
    run.hosts = sorted({h for h in m.meta.get("hosts") or [] if isinstance(h, str)})
    gpus = ([d.get("gpu") for d in m.meta.get("devices") or [] if isinstance(d, dict)]
            + [m.meta.get("gpu")])
    run.gpus = [(g, 1) for g in gpus if isinstance(g, str)][:1]
    for key in ("nccl_version", "nccl_library_version"):
        if v := re.match(r"\d+\.\d+(?:\.\d+)?", str(m.meta.get(key) or "")):
            run.version = (v.group(0), 1)
            break
    lines = [n for n, line in enumerate(src.lines, 1) if '"result"' in line or '"size"' in line]
    per_line = len(m.records) // len(lines) if lines and len(m.records) % len(lines) == 0 else 0
    # a published log holds both places of a size on one line
    at = ([n for n in lines for _ in range(per_line)]
          if kind == "collsim-records" and per_line in (1, 2) else [1] * len(m.records))
    pairs = ([(r, n) for r, n in zip(m.records, at) if not r.get("inplace")]
             or list(zip(m.records, at)))
    # out-of-place rows (the runner's calls are in-place)
    run.rows = [_row(r, n, m.meta) for r, n in pairs]
    src.runs.append(run)
    src.notes += [f"skipped {s}" for s in m.skipped[:3]]


def _row(rec: dict, line: int, meta: dict) -> dict:
    bus = rec.get("busbw_GBps")
    if bus is None and rec.get("time_us"):
        ranks = rec.get("ranks") or meta.get("world_size") or 1
        factor = get_collective(meta.get("collective") or "all_reduce").busbw_factor(ranks)
        bus = rec["size"] / 1e3 / rec["time_us"] * factor
    return {"bytes": int(rec["size"]), "busbw_GBps": float(bus or 0.0),
            "time_us": float(rec.get("time_us") or 0), "line": line}


def _row_lines(lines) -> list[int]:
    """Lines that look like nccl-tests result rows (size count type ...), tags removed."""
    out = []
    for n, line in enumerate(lines, 1):
        t = runs.clean(line).split()
        if len(t) >= 8 and t[0].isdigit() and t[1].isdigit() and t[2] in DTYPES:
            out.append(n)
    return out


def _nccl_tests(src: Source, path) -> None:
    rows = _row_lines(src.lines)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CollsimWarning)
            m = import_nccl_tests(path, label="default", strict=False)
        bad = {int(b.group(1)) for s in m.skipped if (b := _BAD_LINE.search(s[len(str(path)):]))}
        records = [r for r in m.records if not r.get("inplace")]
        good = [n for n in rows if n not in bad]
        parsed = [_row(r, good[i] if i < len(good) else 1, m.meta) for i, r in enumerate(records)]
        meta = m.meta
        src.notes += [f"skipped {s}" for s in m.skipped[:3]]
    except (CollsimError, ValueError, TypeError, OverflowError) as e:
        src.notes.append(f"nccl-tests rows not read by the importer: {str(e)[:160]}")
        parsed, meta = [], {}
    if not parsed and rows:
        parsed = runs.loose_rows(src.lines, rows)
        if parsed:
            src.notes.append(f"{len(parsed)} nccl-tests rows read loosely (their columns are "
                             "broken by tags)")
    coll = named(meta.get("collective"))
    if coll == "all_reduce":   # the rows of a log naming no other collective: AllReduce's or none
        parsed = runs.allreduce_rows(src, parsed, records if parsed and meta else [])
    elif parsed and get_collective(coll).segmented and records and records[0]["count"]:
        # size = ranks x count x type size: the rows tell the ranks
        cell = records[0]["count"] * runs.ITEMSIZE.get(records[0]["dtype"], 4)
        src.rows_ranks = (records[0]["size"] // cell, parsed[0]["line"])
    run = Run(src.name, rows=parsed, meta={**{k: meta.get(k) for k in ("timing", "gpus_per_process",
                                                                         "graph")},
                                           "collective": coll})
    for n, line in enumerate(src.lines, 1):
        c = runs.clean(line)
        if _HEADER.search(c):
            run.headers.append(n)
        elif r := _RANK.search(c):
            if r.group(1) == "0" or not run.groups:
                run.groups.append([])
                run.group_lines.append(n)
            run.groups[-1].append(r.group(2))
            run.ranks.append((int(r.group(1)), n))
            run.gpus.append((r.group(4).strip(), n))
        elif _AVG.search(c):
            run.averages.append(n)
        if run.version is None and (v := VERSION_PATTERN.search(c)):
            run.version = (v.group(1), n)
    if run.version is None and meta.get("nccl_library_version"):
        run.version = (meta["nccl_library_version"], run.headers[0] if run.headers else 1)
    run.hosts = sorted({h for g in run.groups for h in g})
    src.runs += runs.split(src, run)
    src.kinds.append("nccl-tests")


def _nccl_log(src: Source) -> None:
    lines = list(src.lines)
    for _ in range(20):   # leave out each line NCCL's parser cannot read, and say so
        try:
            src.log = parse_lines(lines, src.name)
            break
        except CollsimError as e:
            m = re.search(r":line (\d+):", str(e))
            if not m:
                src.notes.append(f"NCCL log not read: {e}")
                return
            lines[int(m.group(1)) - 1] = ""
            src.notes.append(f"left out {e}")
        # a TUNING cell that is not a number: leave the tables out
        except (ValueError, OverflowError) as e:
            lines = [line if "|" not in line else "" for line in lines]
            src.notes.append(f"left out the TUNING tables ({str(e)[:60]})")
    src.kinds.append("nccl-log")
