"""A torch profiler trace of DDP read as lanes: what the training thread and the communication
threads did, and how much of the AllReduce time ran during the backward pass.

``torch.profiler.profile(...).export_chrome_trace(path)`` writes Chrome trace JSON: complete events
(``"ph": "X"``) with a name, a thread id, a start ``ts`` and a duration ``dur`` (microseconds). With
the gloo backend the training thread records the autograd engine's backward functions
(``autograd::engine::evaluate_function: ...``) and DDP's launches of each bucket's AllReduce
(``c10d::allreduce_``), and gloo's worker threads record each AllReduce as it runs
(``gloo:all_reduce``). With NCCL on GPUs the AllReduce runs as a kernel on its own stream
(``ncclDevKernel_AllReduce...``, CUDA activity); ``trace_lanes`` takes both. This module only
reads JSON: it does not import torch.
"""
from __future__ import annotations

import numpy as np

from collsim.errors import CollsimError
from collsim.inputs import parse_json, read_text

BACKWARD = "autograd::engine::evaluate_function: "
LAUNCH = "c10d::allreduce_"
COMM = ("gloo:all_reduce", "ncclDevKernel_AllReduce", "ncclKernel_AllReduce", "nccl:all_reduce")


def trace_lanes(path) -> dict[str, list[tuple[float, float, str]]]:
    """{"backward": [...], "launch": [...], "allreduce": [...]}: (start_us, duration_us, name) per
    event, start relative to the first of them, sorted by start. Backward events are the outermost
    autograd functions of the training thread; allreduce events are gloo's (or NCCL's kernels)."""
    try:
        events = parse_json(read_text(path, "trace"), f"trace {path}")["traceEvents"]
    except (KeyError, TypeError) as e:
        raise CollsimError(f"{path}: not a Chrome trace from torch.profiler ({e})") from None
    lanes: dict[str, list] = {"backward": [], "launch": [], "allreduce": []}
    for e in events:
        if e.get("ph") != "X" or "dur" not in e:
            continue
        name = str(e.get("name", ""))
        if name.startswith(BACKWARD):
            lanes["backward"].append((float(e["ts"]), float(e["dur"]), name[len(BACKWARD):]))
        elif name == LAUNCH:
            lanes["launch"].append((float(e["ts"]), float(e["dur"]), name))
        elif name.startswith(COMM):
            lanes["allreduce"].append((float(e["ts"]), float(e["dur"]), name))
    if not lanes["allreduce"] or not lanes["backward"]:
        raise CollsimError(f"{path}: no backward pass or no AllReduce in this trace")
    t0 = min(ev[0] for lane in lanes.values() for ev in lane)
    return {k: sorted((s - t0, d, n) for s, d, n in v) for k, v in lanes.items()}


def _union(intervals) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def overlap(lanes: dict) -> dict:
    """AllReduce time (the union of its events, us), the part of it while a backward function ran,
    and that fraction; the backward's own span; the AllReduce count."""
    comm = _union((s, s + d) for s, d, _ in lanes["allreduce"])
    back = _union((s, s + d) for s, d, _ in lanes["backward"])
    total = sum(e - s for s, e in comm)
    hidden = 0.0
    for s, e in comm:
        for bs, be in back:
            hidden += max(0.0, min(e, be) - max(s, bs))
    return {"allreduce_us": total, "during_backward_us": hidden,
            "fraction": hidden / total if total else float("nan"),
            "backward_us": float(np.sum([e - s for s, e in back])),
            "allreduces": len(lanes["allreduce"])}
