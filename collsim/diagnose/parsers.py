"""Small parsers for what users paste beside nccl-tests output: each takes a file's lines and
returns plain data with the line numbers (1-based) it came from, or nothing when the lines hold none
of it.

* ``topo_matrix``: ``nvidia-smi topo -m`` (the device header ``GPU0 GPU1 ... NIC0 ... CPU
  Affinity``, one row per device of ``X``, ``NV#``, ``PIX``, ``PXB``, ``PHB``, ``NODE``, ``SYS``,
  then the ``NIC Legend``);
* ``ib_ports``: ``ibstatus`` (``Infiniband device 'mlx5_0' port 1 status:`` with ``rate: 200
  Gb/sec``), ``ibstat`` (``CA 'mlx5_0'``, ``Port 1:``, ``Rate: 200``) and ``ibv_devinfo``
  (``hca_id:``, ``port:``, ``active_width: 4X``, ``active_speed: 50.0 Gbps``): one record per port,
  its state and rate in Gb/s;
* ``nccl_env``: NCCL_* variables as NCCL's log says it read them (``NCCL_IB_HCA set by environment
  to mlx5_0``), as a launcher passes them (``-x NCCL_ALGO=Ring``, ``--env``), as a shell sets them
  (``export NCCL_P2P_DISABLE=1``, ``NCCL_DEBUG=INFO ./all_reduce_perf``) or as an env dump lists
  them;
* ``commands``: launcher and nccl-tests command lines (mpirun, mpiexec, srun, torchrun, ``*_perf``)
  with the flags that matter here: ``--bind-to``, hosts, process counts, ``-g``;
* ``host_pairs``: tables of one busbw per set of hosts (``node1,node2  49.36``), what users write
  after testing nodes pair by pair (three such lines at least);
* ``topo_xml``: NCCL's topology dump (``NCCL_TOPO_DUMP_FILE``: ``<cpu numaid>``, ``<pci busid>``,
  ``<gpu dev sm gdr>`` with ``<nvlink count>``, ``<nic><net name speed gdr>``), fragments and
  unclosed tags included, read into the same dict as ``topo_matrix`` (GPU-NIC cells from the PCI
  tree: PIX under one bridge, PXB further down one CPU, NODE on one CPU, SYS across CPUs);
* ``channels``: NCCL's connection lines (``Channel 01/0 : 2[c7000] -> 0[87000] [receive] via
  NET/IB/5/GDRDMA``, ``via P2P/IPC/read``, ``via SHM/direct/direct``): host, local device,
  transport, NIC;
* ``stated_rates``: network rates a user states in prose (``There is 400 Gb/sec of bandwidth
  available``), not the fields of ibstatus or ib_send_bw tables.
"""
from __future__ import annotations

import re

RELATIONS = ("X", "PIX", "PXB", "PHB", "NODE", "SYS", "SOC")   # SOC: older drivers' SYS
_DEVICE = re.compile(
    r"^(GPU\d+|NIC\d+|mlx\d+_\d+|mlx\d+_bond_\d+|ibp\S+|rdma\d+|bnxt_re\d+|efa\d+)$")
_CELL = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$")
_NIC_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")


def topo_matrix(lines) -> dict | None:
    """``{"devices", "gpus", "nics", "cells": {(row, col): rel}, "rows": {device: line}, "names":
    {NIC0: mlx5_0}, "numa": {gpu: text}}`` of an ``nvidia-smi topo -m`` table, or None.
    """
    devices, out = None, None
    for lineno, line in enumerate(lines, 1):
        tokens = line.split()
        if devices is None:
            head = [t for t in tokens[:tokens.index("CPU")]] if "CPU" in tokens else tokens
            if len(head) >= 2 and head[0] == "GPU0" and all(_DEVICE.match(t) for t in head):
                devices = head
                out = {"devices": devices, "gpus": [d for d in devices if d.startswith("GPU")],
                       "nics": [d for d in devices if not d.startswith("GPU")],
                       "cells": {}, "rows": {}, "names": {}, "numa": {}, "header": lineno}
            continue
        if m := _NIC_LEGEND.match(line):
            out["names"][m.group(1)] = m.group(2)
            continue
        if not tokens or tokens[0] not in devices or tokens[0] in out["rows"]:
            continue
        cells = tokens[1:1 + len(devices)]
        if len(cells) < len(devices) or not all(_CELL.match(c) for c in cells):
            continue
        out["rows"][tokens[0]] = lineno
        for col, cell in zip(devices, cells):
            out["cells"][(tokens[0], col)] = cell
        rest = tokens[1 + len(devices):]
        if tokens[0].startswith("GPU") and len(rest) >= 2:
            out["numa"][tokens[0]] = rest[1]
    return out if out and out["rows"] else None


_IBSTATUS = re.compile(r"Infiniband device '([^']+)' port (\d+) status")
_IBSTAT_CA = re.compile(r"^CA '([^']+)'")
_IBSTAT_PORT = re.compile(r"^\s*Port (\d+):\s*$")
_HCA_ID = re.compile(r"^\s*hca_id:\s*(\S+)")
_DEVINFO_PORT = re.compile(r"^\s*port:\s*(\d+)\s*$")
_FIELD = re.compile(r"^\s*([A-Za-z_ ]+?)\s*:\s*(.*?)\s*$")
_WIDTH = {"1X": 1, "2X": 2, "4X": 4, "8X": 8, "12X": 12}


def ib_ports(lines) -> list[dict]:
    """One ``{"device", "port", "state", "rate_Gbps", "link_layer", "line"}`` per IB/RoCE port
    listed by ibstatus, ibstat or ibv_devinfo (``state`` upper case: ACTIVE, DOWN, INIT, ...; rate
    None if unread).
    """
    ports, device, current = [], None, None
    for lineno, line in enumerate(lines, 1):
        start = None
        if m := _IBSTATUS.search(line):
            start = (m.group(1), int(m.group(2)))
        elif m := (_IBSTAT_CA.match(line) or _HCA_ID.match(line)):
            device, current = m.group(1), None
            continue
        elif device and (m := (_IBSTAT_PORT.match(line) or _DEVINFO_PORT.match(line))):
            start = (device, int(m.group(1)))
        if start:
            current = {"device": start[0], "port": start[1], "state": None, "rate_Gbps": None,
                       "link_layer": None, "line": lineno, "width": None, "speed": None}
            ports.append(current)
            continue
        if current is None or not (f := _FIELD.match(line)):
            continue
        key, value = f.group(1).strip().lower().replace(" ", "_"), f.group(2)
        if key == "state":
            current["state"] = re.sub(r"^\d+:\s*|^PORT_|\s*\(\d+\)$", "", value).upper()
        elif key == "rate" and (r := re.match(r"(\d+(?:\.\d+)?)", value)):
            current["rate_Gbps"], current["rate_line"] = float(r.group(1)), lineno
        elif key == "link_layer":
            current["link_layer"] = value
        elif key == "active_width":
            current["width"] = _WIDTH.get(value.split()[0].upper()) if value else None
        elif key == "active_speed" and (r := re.match(r"(\d+(?:\.\d+)?)\s*Gbps", value)):
            current["speed"], current["rate_line"] = float(r.group(1)), lineno
        if current["rate_Gbps"] is None and current["width"] and current["speed"]:
            current["rate_Gbps"] = current["width"] * current["speed"]
    return ports


_SET_BY_ENV = re.compile(r"\b(NCCL_[A-Z0-9_]+) set (?:by environment )?to (\S+?)\.?\s*$")
_ASSIGN = re.compile(r"(?:^|[\s;'\"])(?:export\s+|-x\s+|--env\s+|-e\s+)?(NCCL_[A-Z0-9_]+)="
                     r"(\"[^\"]*\"|'[^']*'|[^\s;'\"]*)")


def nccl_env(lines) -> dict:
    """``{name: (value, line)}`` for every NCCL_* variable the lines set (the last setting wins)."""
    env = {}
    for lineno, line in enumerate(lines, 1):
        if m := _SET_BY_ENV.search(line):
            env[m.group(1)] = (m.group(2), lineno)
            continue
        for name, value in _ASSIGN.findall(line):
            env[name] = (value.strip("\"'"), lineno)
    return env


_LAUNCH = re.compile(
    r"(?:^|[\s/$#>])(mpirun|mpiexec|srun|torchrun|horovodrun|[a-z_]+_perf(?:_mpi)?)(?=\s|$)")
_BIND = re.compile(r"(?:^|\s)--?bind-to[\s=]+(\S+)|--cpu-bind[=\s]+(\S+)")
_HOSTS = re.compile(r"(?:^|\s)(?:-H|--host|-host|-hosts)[\s=]+(\S+)")
_NP = re.compile(r"(?:^|\s)(?:-np|-n|--np|--ntasks)[\s=]+(\d+)")
_PER_NODE = re.compile(
    r"(?:^|\s)(?:-N|--npernode|-npernode|--ntasks-per-node|--nproc-per-node|--nproc_per_node)"
    r"[\s=]+(\d+)|ppr:(\d+):node")
_GPUS = re.compile(r"_perf\S*\s.*?(?:^|\s)-g\s+(\d+)")


def commands(lines) -> list[dict]:
    """One ``{"line", "launcher", "bind_to", "hosts", "np", "per_node", "gpus_per_process",
    "text"}`` per launcher or nccl-tests command line (None where the line does not say).
    """
    out = []
    for lineno, line in enumerate(lines, 1):
        found = _LAUNCH.findall(line)
        if not found or "NCCL INFO" in line or "NCCL WARN" in line or "Collective test" in line:
            continue
        bind = _BIND.search(line)
        hosts = _HOSTS.search(line)
        per = _PER_NODE.search(line)
        g = _GPUS.search(line)
        np_ = _NP.search(line)
        host_list = [h.split(":")[0] for h in hosts.group(1).split(",") if h] if hosts else None
        out.append({"line": lineno, "launcher": found[0], "text": line.strip(),
                    "bind_to": (bind.group(1) or bind.group(2)) if bind else None,
                    "hosts": host_list, "np": int(np_.group(1)) if np_ else None,
                    "per_node": int(per.group(1) or per.group(2)) if per else None,
                    "gpus_per_process": int(g.group(1)) if g else None})
    return out


_PAIR = re.compile(
    r"^\s*([A-Za-z][\w.-]*(?:\s*[,+&/]\s*[A-Za-z][\w.-]*)+)\s*[:=]?\s+(\d+(?:\.\d+)?)\s*(?:#.*)?$")


def host_pairs(lines) -> list[dict]:
    """``[{"hosts": [a, b], "busbw_GBps", "line"}]`` from a table of host sets and one busbw each
    (at least three rows, else []).
    """
    rows = []
    for lineno, line in enumerate(lines, 1):
        if m := _PAIR.match(line):
            hosts = [h.strip() for h in re.split(r"[,+&/]", m.group(1))]
            if all(re.search(r"[A-Za-z]", h) and re.search(r"\d", h) for h in hosts):
                rows.append({"hosts": hosts, "busbw_GBps": float(m.group(2)), "line": lineno})
    return rows if len(rows) >= 3 else []


_CHANNEL = re.compile(
    r"(?:^|[\s\]])([^\s:\[\]]+):\d+:\d+ \[(\d+)\] NCCL INFO Channel "
    r"(\d+)(?:/\d+)? : (\d+)\[\w+\] -> "
    r"(\d+)\[\w+\](?: \[(send|receive)\])? via (\S+(?: pointer)?)"
)


def channels(lines) -> list[dict]:
    """One ``{"host", "dev", "channel", "src", "dst", "dir", "via", "nic", "line"}`` per NCCL
    connection line; ``nic``: the NIC index of ``NET/IB/<n>`` (or another NET transport), else None.
    """
    out = []
    for lineno, line in enumerate(lines, 1):
        if m := _CHANNEL.search(line):
            via = m.group(7)
            nic = re.match(r"NET/[^/]+/(\d+)", via)
            out.append({"host": m.group(1), "dev": int(m.group(2)), "channel": int(m.group(3)),
                        "src": int(m.group(4)), "dst": int(m.group(5)), "dir": m.group(6),
                        "via": via, "nic": int(nic.group(1)) if nic else None, "line": lineno})
    return out


_RATE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:Gb/sec|Gb/s|Gbps|Gbit/s)\b", re.I)
_TOOL_FIELD = re.compile(r"^\s*(?:rate|active_speed|Rate|speed|link_speed)\s*:|^\s*#|NCCL "
                         r"(?:INFO|WARN)|^\s*\d+\s+\d+")


def stated_rates(lines) -> list[tuple]:
    """``[(Gb/s, line)]`` of the rates prose lines state (module docstring)."""
    out = []
    for lineno, line in enumerate(lines, 1):
        if _TOOL_FIELD.search(line) or len(line.split()) < 5:
            continue
        out += [(float(m.group(1)), lineno) for m in _RATE.finditer(line)]
    return out
