"""Overlap of gradient AllReduce with the backward pass, as PyTorch DDP does it.

Data-parallel training computes gradients layer by layer, last layer first.
DDP groups the gradient tensors into *buckets* and launches one AllReduce per
bucket as soon as the bucket's last gradient is ready, on a communication
stream of its own, while the compute stream goes on with the next layers'
backward. Only the part of the communication that is still running when the
backward ends is *exposed*: it is what overlap cannot hide.

The model (all times in seconds, sizes in bytes):

* ``layers`` are given in forward (definition) order, each with its backward
  compute time and its parameters' gradient sizes. The backward runs them in
  reverse, back to back, on the compute stream, after ``forward_s``.
* Buckets follow DDP's steady state (after its first iteration, when the
  Reducer rebuilds buckets in gradient-ready order): tensors in ready order
  (last layer first; inside a layer, last parameter first) fill a bucket until
  its size reaches the limit (``size >= limit`` closes it). The limits are
  ``[first_bucket_bytes, cap, cap, ...]`` with ``cap = int(bucket_cap_mb * 2**20)``.
  As in torch 2.3 and later (``_BucketCapacityConfig`` in
  torch/nn/parallel/distributed.py), the small first bucket
  (``torch.distributed._DEFAULT_FIRST_BUCKET_BYTES`` = 1 MiB) applies only when
  ``bucket_cap_mb`` is left at its default (None, meaning 25 MiB); an explicit
  ``bucket_cap_mb`` makes the first bucket as large as the others.
* Each bucket's AllReduce takes ``cost(nbytes)`` seconds, where ``cost`` is any
  callable bytes -> seconds (``closed_form_cost`` for a textbook formula,
  ``table_cost`` for measured times). The communication stream runs one
  AllReduce at a time, in bucket order: start = max(bucket ready, previous end).
* A compression hook (``BF16``/``FP16``) sends ``ratio`` x bytes. Its
  compress cast runs on the compute stream when the bucket is ready (delaying
  the next layer), its decompress cast on the communication stream after the
  AllReduce; each costs ``cast_s_per_byte`` per uncompressed byte.
* The optimizer step (``optimizer_s``) waits for every bucket.

Two baselines:

* ``one_stream_s``: the lecture's version, every AllReduce issued into the
  compute stream, so nothing overlaps: the plain sum of all work.
* ``no_overlap_s``: one fused AllReduce of all gradients after the backward
  (what a training loop does that calls all_reduce once on a flat buffer).

``simulate`` never does worse than ``one_stream_s`` (each AllReduce starts no
later than in the serial order), but it can lose to ``no_overlap_s`` when many
small buckets each pay the per-call latency that one fused call pays once.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from collsim.cost import closed_form
from collsim.errors import CollsimError

MIB = 1024 * 1024
DEFAULT_BUCKET_CAP_MB = 25          # torch.nn.parallel.distributed._DEFAULT_BUCKET_CAP_MB
DEFAULT_FIRST_BUCKET_BYTES = MIB    # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES

Cost = Callable[[int], float]


@dataclass(frozen=True)
class Layer:
    """One layer: backward compute time (s) and its gradient tensors (bytes, definition order)."""
    name: str
    backward_s: float
    param_bytes: tuple[int, ...]

    @property
    def grad_bytes(self) -> int:
        return int(sum(self.param_bytes))


@dataclass(frozen=True)
class CompressionHook:
    """A DDP communication hook that casts each bucket before its AllReduce."""
    name: str
    ratio: float                    # bytes on the wire / uncompressed bytes
    cast_s_per_byte: float = 0.0    # seconds per uncompressed byte, for each of the two casts

    def with_cast(self, cast_s_per_byte: float) -> "CompressionHook":
        return CompressionHook(self.name, self.ratio, cast_s_per_byte)


BF16 = CompressionHook("bf16", 0.5)  # default_hooks.bf16_compress_hook on float32 gradients
FP16 = CompressionHook("fp16", 0.5)  # default_hooks.fp16_compress_hook on float32 gradients


@dataclass(frozen=True)
class Bucket:
    """A bucket: its gradient tensors as (layer index, parameter index), in ready order."""
    index: int
    tensors: tuple[tuple[int, int], ...]
    nbytes: int
    limit: int

    @property
    def last_layer(self) -> int:
        """The layer whose backward completes this bucket (lowest layer index in it)."""
        return self.tensors[-1][0]


@dataclass(frozen=True)
class Event:
    """One interval on a stream: ``stream`` is "compute" or "comm"."""
    stream: str
    kind: str        # forward, backward, compress, allreduce, decompress, optimizer
    label: str
    start_s: float
    end_s: float
    nbytes: int = 0
    bucket: int = -1


@dataclass
class OverlapResult:
    """Iteration time and its parts, the two baselines and the timeline (seconds)."""
    iteration_s: float
    compute_s: float          # busy time of the compute stream
    comm_s: float             # busy time of the communication stream
    exposed_comm_s: float     # iteration_s - compute_s
    one_stream_s: float
    no_overlap_s: float
    buckets: list[Bucket]
    events: list[Event] = field(repr=False)

    @property
    def speedup_vs_one_stream(self) -> float:
        return self.one_stream_s / self.iteration_s

    @property
    def speedup_vs_no_overlap(self) -> float:
        return self.no_overlap_s / self.iteration_s


def _check_layers(layers: Sequence[Layer]) -> None:
    if len(layers) == 0:
        raise CollsimError("overlap needs at least one layer")
    for layer in layers:
        if not (math.isfinite(layer.backward_s) and layer.backward_s >= 0):
            raise CollsimError(f"layer {layer.name!r}: backward time must be >= 0 s, got "
                               f"{layer.backward_s}")
        if len(layer.param_bytes) == 0 or any(int(b) != b or b <= 0 for b in layer.param_bytes):
            raise CollsimError(f"layer {layer.name!r}: gradient sizes must be positive whole "
                               f"bytes, got {layer.param_bytes}")


def assign_buckets(layers: Sequence[Layer], bucket_cap_mb: float | None = None,
                   first_bucket_bytes: int | None = None) -> list[Bucket]:
    """DDP's steady-state buckets (see the module docstring), in launch order."""
    _check_layers(layers)
    if bucket_cap_mb is not None and not (bucket_cap_mb > 0):
        raise CollsimError(f"bucket_cap_mb must be > 0, got {bucket_cap_mb}")
    cap = int(DEFAULT_BUCKET_CAP_MB * MIB) if bucket_cap_mb is None else int(bucket_cap_mb * MIB)
    if first_bucket_bytes is None:
        first_bucket_bytes = DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None else cap
    if first_bucket_bytes <= 0:
        raise CollsimError(f"first_bucket_bytes must be > 0, got {first_bucket_bytes}")
    buckets, current, size, limit = [], [], 0, first_bucket_bytes
    for li in range(len(layers) - 1, -1, -1):
        for pi in range(len(layers[li].param_bytes) - 1, -1, -1):
            current.append((li, pi))
            size += int(layers[li].param_bytes[pi])
            if size >= limit:
                buckets.append(Bucket(len(buckets), tuple(current), size, limit))
                current, size, limit = [], 0, cap
    if current:
        buckets.append(Bucket(len(buckets), tuple(current), size, limit))
    return buckets


def _checked(cost: Cost, nbytes: int) -> float:
    t = float(cost(int(nbytes)))
    if not (math.isfinite(t) and t >= 0):
        raise CollsimError(f"cost function returned {t} s for {nbytes} B; it must be a finite time "
                           ">= 0")
    return t


def _wire_bytes(nbytes: int, hook: CompressionHook | None) -> int:
    return nbytes if hook is None else int(round(nbytes * hook.ratio))


def simulate(layers: Sequence[Layer], cost: Cost, bucket_cap_mb: float | None = None, *,
             first_bucket_bytes: int | None = None, hook: CompressionHook | None = None,
             forward_s: float = 0.0, optimizer_s: float = 0.0) -> OverlapResult:
    """Simulate one data-parallel iteration with DDP-style bucketed overlap."""
    if not (forward_s >= 0 and optimizer_s >= 0):
        raise CollsimError("forward_s and optimizer_s must be >= 0 s")
    if hook is not None and not (0 < hook.ratio and hook.cast_s_per_byte >= 0):
        raise CollsimError(f"hook {hook.name!r}: ratio must be > 0 and cast cost >= 0")
    buckets = assign_buckets(layers, bucket_cap_mb, first_bucket_bytes)
    cast = 0.0 if hook is None else hook.cast_s_per_byte
    closes = {}  # layer index -> buckets its backward completes
    for b in buckets:
        closes.setdefault(b.last_layer, []).append(b)

    events = [Event("compute", "forward", "forward", 0.0, forward_s)] if forward_s > 0 else []
    t = forward_s
    comm_free = 0.0
    for li in range(len(layers) - 1, -1, -1):
        layer = layers[li]
        events.append(Event("compute", "backward", layer.name, t, t + layer.backward_s))
        t += layer.backward_s
        for b in closes.get(li, []):
            if hook is not None:
                events.append(Event("compute", "compress", f"{hook.name} cast b{b.index}", t,
                                    t + cast * b.nbytes, b.nbytes, b.index))
                t += cast * b.nbytes
            start = max(t, comm_free)
            wire = _wire_bytes(b.nbytes, hook)
            end = start + _checked(cost, wire)
            events.append(Event("comm", "allreduce", f"AllReduce b{b.index}", start, end,
                                wire, b.index))
            if hook is not None:
                events.append(Event("comm", "decompress", f"decompress b{b.index}", end,
                                    end + cast * b.nbytes, b.nbytes, b.index))
                end += cast * b.nbytes
            comm_free = end
    step_start = max(t, comm_free)
    if optimizer_s > 0:
        events.append(Event("compute", "optimizer", "optimizer step", step_start,
                            step_start + optimizer_s))
    iteration = step_start + optimizer_s

    def busy(stream):
        return sum(e.end_s - e.start_s for e in events if e.stream == stream)

    compute, comm = busy("compute"), busy("comm")
    total = sum(b.nbytes for b in buckets)
    fused = 2 * cast * total + _checked(cost, _wire_bytes(total, hook))
    backward = sum(layer.backward_s for layer in layers)
    return OverlapResult(
        iteration_s=iteration, compute_s=compute, comm_s=comm,
        exposed_comm_s=iteration - compute, one_stream_s=compute + comm,
        no_overlap_s=forward_s + backward + fused + optimizer_s,
        buckets=buckets, events=events)


def sweep_bucket_caps(layers: Sequence[Layer], cost: Cost, caps_mb: Sequence[float],
                      **kwargs) -> np.ndarray:
    """Iteration time (s) for each bucket_cap_mb in ``caps_mb`` (other arguments as
    ``simulate``)."""
    return np.array([simulate(layers, cost, cap, **kwargs).iteration_s for cap in caps_mb])


def table_cost(sizes_bytes: Sequence[float], times_s: Sequence[float]) -> Cost:
    """AllReduce cost from measured (size, time) pairs: linear interpolation in size.

    Below the smallest size the smallest time is used; above the largest, the
    last segment's slope (inverse bandwidth) is extended.
    """
    s = np.asarray(sizes_bytes, dtype=float)
    t = np.asarray(times_s, dtype=float)
    if s.shape != t.shape or s.ndim != 1:
        raise CollsimError("table_cost needs two equally long lists of sizes and times")
    order = np.argsort(s)
    s, t = s[order], t[order]
    if len(s) < 2 or np.any(np.diff(s) <= 0):
        raise CollsimError("table_cost needs at least two distinct sizes")
    if np.any(~np.isfinite(t)) or np.any(t < 0) or np.any(s <= 0):
        raise CollsimError("table_cost needs sizes > 0 B and finite times >= 0 s")
    slope = (t[-1] - t[-2]) / (s[-1] - s[-2])

    def cost(nbytes: int) -> float:
        if nbytes > s[-1]:
            return float(t[-1] + (nbytes - s[-1]) * max(slope, 0.0))
        return float(np.interp(nbytes, s, t))
    return cost


def closed_form_cost(algorithm: str, ranks: int, alpha: float, beta: float, **params) -> Cost:
    """AllReduce cost from ``collsim.cost.closed_form`` (alpha in s, beta in s/byte)."""

    return lambda nbytes: closed_form(algorithm, ranks, nbytes, alpha, beta, **params)
