"""Launch overhead, and what CUDA graphs save: a host/device pipeline model.

Eager PyTorch issues every operation from the host: each costs ``host_s`` seconds of
CPU time (Python, the dispatcher, the CUDA/NCCL launch) before the GPU can start it.
The GPU runs operations in order, each when it has been issued and the previous one
has ended. So a stream of small operations is *host-bound* (one op per ``host_s``)
and a stream of large ones *device-bound*. A CUDA graph records the operations once;
a replay costs one ``graph_launch_s`` for the whole graph and ``graph_node_s`` of
device time per recorded operation, so small operations run back to back.

* ``pipeline(ops, model, graph)``: run a list of ``Op`` (host and device seconds)
  eagerly or as one graph replay; returns the total time and a timeline.
* ``per_call_s(device_s, model, calls, graph)``: seconds per call of ``calls``
  back-to-back calls of one operation (a benchmark loop, or nccl-tests -G).
* ``graph_gain(sizes, cost, model, calls)``: eager/graph time ratio per message size
  for an AllReduce whose device time is ``cost(bytes)``; ``graphs_matter_below``
  gives the largest size where graphs still save a given fraction.
* ``fit_host_s(eager_s, graph_s)``: the host cost per call read off measured eager
  and graph timings (the sizes where eager is clearly host-bound).

All times are seconds, sizes bytes. Deterministic; numpy only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from collsim.errors import CollsimError


@dataclass(frozen=True)
class LaunchModel:
    host_s: float               # host seconds to issue one eager operation
    graph_launch_s: float = 0.0  # seconds before a graph replay's first operation starts
    graph_node_s: float = 0.0    # device seconds added per operation inside a graph

    def __post_init__(self):
        for name in ("host_s", "graph_launch_s", "graph_node_s"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise CollsimError(f"LaunchModel.{name} must be a time >= 0 s, got {v}")


@dataclass(frozen=True)
class Op:
    name: str
    device_s: float
    host_s: float | None = None   # None: the model's host_s


@dataclass(frozen=True)
class Span:
    """One operation on the timeline: when the host issued it and when the GPU ran it."""
    name: str
    host_start_s: float
    host_end_s: float
    device_start_s: float
    device_end_s: float


def pipeline(ops: Sequence[Op], model: LaunchModel,
             graph: bool = False) -> tuple[float, list[Span]]:
    """Total seconds from the first host call to the last device end, and the timeline."""
    if not ops:
        raise CollsimError("pipeline needs at least one operation")
    spans, host, dev = [], 0.0, 0.0
    if graph:
        host = dev = model.graph_launch_s
    for op in ops:
        if not (math.isfinite(op.device_s) and op.device_s >= 0):
            raise CollsimError(f"op {op.name!r}: device time must be >= 0 s, got {op.device_s}")
        if graph:
            start, dur, issued = dev, op.device_s + model.graph_node_s, host
        else:
            issued = host + (model.host_s if op.host_s is None else op.host_s)
            start, dur = max(issued, dev), op.device_s
        spans.append(Span(op.name, host, issued, start, start + dur))
        host, dev = issued, start + dur
    return dev, spans


def per_call_s(device_s: float, model: LaunchModel, calls: int, graph: bool = False) -> float:
    """Seconds per call of ``calls`` back-to-back calls (one graph of ``calls`` ops if graph)."""
    if calls < 1:
        raise CollsimError(f"calls must be >= 1, got {calls}")
    total, _ = pipeline([Op("call", device_s)] * calls, model, graph)
    return total / calls


def graph_gain(sizes: Sequence[float], cost: Callable[[int], float], model: LaunchModel,
               calls: int = 20) -> np.ndarray:
    """Eager / graph seconds per call for each message size (bytes); 1 means graphs save nothing."""
    return np.array([per_call_s(cost(int(s)), model, calls)
                     / per_call_s(cost(int(s)), model, calls, True)
                     for s in sizes])


def graphs_matter_below(sizes: Sequence[float], cost: Callable[[int], float], model: LaunchModel,
                        calls: int = 20, saving: float = 0.1) -> float | None:
    """Largest size (bytes) in ``sizes`` where graphs cut the time per call by at least
    ``saving``."""
    gain = graph_gain(sizes, cost, model, calls)
    hits = [s for s, g in zip(sizes, gain) if 1 - 1 / g >= saving]
    return max(hits) if hits else None


def fit_host_s(eager_s: Sequence[float], graph_s: Sequence[float], ratio: float = 1.5) -> float:
    """Host seconds per eager call: the median eager time where eager > ratio x graph
    (host-bound)."""
    e, g = np.asarray(eager_s, dtype=float), np.asarray(graph_s, dtype=float)
    if e.shape != g.shape or e.size == 0:
        raise CollsimError("fit_host_s needs equally long, non-empty eager and graph timings")
    bound = e > ratio * g
    if not bound.any():
        raise CollsimError(f"eager is never {ratio}x slower than graph: launch cost is not visible "
                           "in these sizes")
    return float(np.median(e[bound]))
