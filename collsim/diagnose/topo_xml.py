"""NCCL's topology dump (``NCCL_TOPO_DUMP_FILE``, XML; fragments too) read as ``nvidia-smi topo -m``
is (``collsim.diagnose.parsers.topo_matrix``): ``topo_xml(lines)`` -> the same matrix, or None."""
from __future__ import annotations

import re

_TAG_XML = re.compile(r"<(/?)(system|cpu|pci|gpu|nic|net|nvlink)\b([^>]*?)(/?)>")
_ATTR = re.compile(r'(\w+)="([^"]*)"')


def _xml_cell(gpu: dict, nic: dict) -> str:
    """nvidia-smi's relation of a GPU and a NIC from their PCI paths (lists of bridge bus ids, CPU
    first).
    """
    if gpu["cpu"] != nic["cpu"]:
        return "SYS"
    common = 0
    for a, b in zip(gpu["path"], nic["path"]):
        if a != b:
            break
        common += 1
    if common == 0:
        return "NODE"
    return "PIX" if common == min(len(gpu["path"]), len(nic["path"])) else "PXB"


def topo_xml(lines) -> dict | None:
    """The ``topo_matrix`` dict of an NCCL topology dump (module docstring) plus ``"xml": {"gpus",
    "nics"}`` (each with its line, attributes and PCI path; NIC ``speed_Gbps`` from the dump's
    Mb/s), or None.
    """
    stack, gpus, nics, cpu = [], [], [], None
    for lineno, line in enumerate(lines, 1):
        for close, tag, attrs, empty in _TAG_XML.findall(line):
            a = dict(_ATTR.findall(attrs))
            if close:
                while stack and stack.pop()[0] != tag:
                    pass
                continue
            path = [x.get("busid", "") for t, x in stack if t == "pci"]
            if tag == "cpu":
                cpu = a.get("numaid", cpu)
            elif tag == "gpu" and a.get("dev", "").isdigit():
                gpus.append(
                    {
                        "dev": int(a["dev"]),
                        "sm": a.get("sm"),
                        "gdr": a.get("gdr"),
                        "line": lineno,
                        "path": path[:-1],
                        "cpu": cpu,
                        "nvlinks": 0,
                    }
                )
            elif tag == "nvlink" and gpus and a.get("count", "").isdigit():
                gpus[-1]["nvlinks"] += int(a["count"])
            elif tag == "net" and a.get("name"):
                speed = a.get("speed", "")
                nics.append(
                    {
                        "name": a["name"],
                        "gdr": a.get("gdr"),
                        "line": lineno,
                        "path": path[:-1],
                        "cpu": cpu,
                        "speed_Gbps": int(speed) / 1000 if speed.isdigit() else None,
                    }
                )
            if not empty and tag not in ("net", "nvlink"):
                stack.append((tag, a))
    if not gpus and not nics:
        return None
    names = {f"GPU{g['dev']}": g for g in gpus}
    nic_names = {f"NIC{i}": n for i, n in enumerate(nics)}
    cells = {(g, n): _xml_cell(gd, nd) for g, gd in names.items() for n, nd in nic_names.items()}
    cells.update(
        {
            (g, h): f"NV{min(gd['nvlinks'], hd['nvlinks'])}"
            if gd["nvlinks"] and hd["nvlinks"]
            else _xml_cell(gd, hd)
            for g, gd in names.items()
            for h, hd in names.items()
            if g != h
        }
    )
    first = min([g["line"] for g in gpus] + [n["line"] for n in nics])
    return {
        "devices": list(names) + list(nic_names),
        "gpus": list(names),
        "nics": list(nic_names),
        "cells": cells,
        "rows": {d: x["line"] for d, x in {**names, **nic_names}.items()},
        "header": first,
        "names": {k: n["name"] for k, n in nic_names.items()},
        "numa": {g: x["cpu"] for g, x in names.items()},
        "xml": {"gpus": gpus, "nics": nics},
    }
