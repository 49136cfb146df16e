"""Published nccl-tests logs in the project's JSON Lines form (data/public/README.md).

Line 1 is ``{"kind": "meta", ...}`` (source, gpu, nodes, gpus_per_node, ranks, nccl, ``collective``:
nccl-tests' name, all_reduce when absent; env: NCCL_*
settings as free text plus a ``launch`` description such as "one process, -g 8, -b 8 -e 8G -f 2,
-w 5 -n 20"), then one line per size ``{"size", "time_us", "algbw_GBps", "busbw_GBps", "inplace":
{...}}`` for the out-of-place columns with the in-place triple nested. ``load_public_log`` turns it
into ``collsim.measure.Measurements`` in nccl-tests vocabulary: the meta says harness nccl-tests,
nodes, world_size, gpus_per_process (the launch's -g), iters (-n), graph (-G), max_bytes (-e) and
the NCCL_* values (their first word: "Ring (file named ...)" is Ring); each size gives an
out-of-place and an in-place record (float32 elements, count = size / 4 / ranks for the
collectives whose size is ranks segments, as nccl-tests prints it; redop and root as nccl-tests
prints them for the collective; busbw with its factor; #wrong not published: None).
"""
from __future__ import annotations

import re

from collsim.core.collective import get
from collsim.errors import CollsimError
from collsim.inputs import parse_json, read_text
from collsim.measure import Measurements, check_meta, result_record
from collsim.measure.perf_names import columns
from collsim.units import parse_size

NCCL_TESTS_ITERS = 20   # all_reduce_perf's -n when the launch does not say

_FLAG = re.compile(r"(?:^|[\s,])-(g|n|G|e)\s+(\S+?)(?=[\s,]|$)")


def is_public_log(first_line: str) -> bool:
    """Whether a file's first line is the meta of a published log (``"kind": "meta"``)."""
    try:
        head = parse_json(first_line, "line 1")
    except CollsimError:
        return False
    return isinstance(head, dict) and head.get("kind") == "meta"


def _launch(text: str) -> dict:
    flags = {k: v for k, v in _FLAG.findall(str(text or ""))}
    out = {}
    for key, name in (("g", "gpus_per_process"), ("n", "iters"), ("G", "graph")):
        if key in flags and flags[key].isdigit():
            out[name] = int(flags[key])
    if "e" in flags:
        try:
            out["max_bytes"] = parse_size(flags["e"])
        except CollsimError:
            pass
    return out


def _meta(head: dict, where: str) -> dict:
    env = head.get("env") or {}
    if not isinstance(env, dict):
        raise CollsimError(f"{where}: meta env must be an object")
    nccl = {k: str(v).split()[0] for k, v in env.items() if str(k).startswith("NCCL_")
            and str(v).split()}
    try:
        ranks, nodes = int(head["ranks"]), int(head.get("nodes") or 1)
    except (KeyError, TypeError, ValueError):
        raise CollsimError(f"{where}: the meta needs integer ranks (and nodes)") from None
    if ranks < 1 or nodes < 1 or ranks % nodes:
        raise CollsimError(f"{where}: {ranks} ranks do not split over {nodes} nodes")
    launch = {"iters": NCCL_TESTS_ITERS, **_launch(env.get("launch"))}
    timing = "graph" if launch.get("graph") else "eager"
    return {"harness": "nccl-tests", "collective": get(head.get("collective") or "all_reduce").name,
            "source": head.get("source"), "id": head.get("id"),
            "gpu": head.get("gpu"), "world_size": ranks, "nodes": nodes,
            "ranks_per_node": ranks // nodes,
            "env": nccl, "timing": timing, "algo": nccl.get("NCCL_ALGO"),
            "proto": nccl.get("NCCL_PROTO"),
            "nccl_version": head.get("nccl"), **launch}


def load_public_log(path) -> Measurements:
    """Read a published log (module docstring); one-line CollsimError naming ``path:line``."""
    lines = [(n, line) for n, line in enumerate(read_text(path, "published log").split("\n"), 1)
             if line.strip()]
    if not lines or not is_public_log(lines[0][1]):
        raise CollsimError(f"{path}: not a published log (line 1 must be "
                           f"{{\"kind\": \"meta\", ...}})")
    meta = _meta(parse_json(lines[0][1], f"{path}:1"), str(path))
    check_meta(meta, str(path))
    m = Measurements(meta=meta, metas=[meta])
    coll = get(meta["collective"])
    segments = meta["world_size"] if coll.segmented else 1
    redop, root = columns(coll.name)
    for n, line in lines[1:]:
        where = f"{path}:{n}"
        try:
            row = parse_json(line, where)
            size = int(row["size"])
            parts = [(False, row), (True, row.get("inplace"))]
            for inplace, part in parts:
                if part is None:
                    continue
                t = float(part["time_us"])
                if not (size >= 1 and t > 0 and t < float("inf")):
                    raise ValueError("size and time must be positive")
                rec = result_record(size, size // 4 // segments, "float32", t, meta["world_size"],
                                    None,
                                    collective=coll, redop=redop, root=root, inplace=inplace,
                                    algo=meta["algo"], proto=meta["proto"], timing=meta["timing"])
                m.records.append(rec)
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            raise CollsimError(f"{where}: bad row ({type(e).__name__}: {e})") from None
    if not m.records:
        raise CollsimError(f"{path}: no rows")
    return m
