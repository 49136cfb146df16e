"""How NCCL cuts one AllReduce into channels and pipeline steps (NCCL 2.28; file references into
NVIDIA/nccl). Sizes in bytes.

- Buffers: every connection has ``NCCL_STEPS`` = 8 slots (src/include/device.h); the buffer per
  protocol is ``DEFAULT_BUFFSIZE`` (src/init.cc:697-699; Simple follows NCCL_BUFFSIZE), of which LL
  carries half and LL128 15/16 as payload (``EFFICIENCY``); data moves in multiples of ``GRAIN``
  bytes (device.h ncclProtoGrainSize).
- Channels: NCCL first picks channels and threads for the size (``collsim.nccl.tuning.nccl_channels``,
  enqueue.cc topoGetAlgoInfo), then splits the traffic in 16 KiB cells over them
  (enqueue.cc scheduleCollTasksToPlan): ``split_channels`` and ``channel_bytes``.
"""
from __future__ import annotations

from collsim.nccl.tuning import nccl_channels

NCCL_STEPS = 8
DEFAULT_BUFFSIZE = {"LL": 524288, "LL128": 4915200, "Simple": 4194304}  # init.cc:697-699
EFFICIENCY = {"LL": 0.5, "LL128": 120 / 128, "Simple": 1.0}
GRAIN = {"LL": 16, "LL128": 1920, "Simple": 512}  # device.h ncclProtoGrainSize, bytes


def _cells(nbytes: int, channels: int, proto: str) -> tuple[int, int]:
    """(channels used, bytes on the busiest channel) of NCCL's split of an AllReduce's traffic in
    16 KiB cells over ``channels`` (enqueue.cc scheduleCollTasksToPlan)."""
    tpb = 2 * (4 if proto == "LL" else 1)
    cell = -(-(-(-16384 // tpb)) // 16) * 16
    cells = max(1, -(-nbytes // cell))
    per_channel_traffic = max(16384, nbytes * tpb // channels)
    cpc = min(cells, -(-per_channel_traffic // (cell * tpb)))
    return -(-cells // cpc), min(nbytes, cpc * cell)


def split_channels(nbytes: int, channels: int, proto: str) -> int:
    """Channels an AllReduce of ``nbytes`` spreads over when ``channels`` run (16 KiB traffic cells)."""
    return _cells(nbytes, channels, proto)[0]


def channel_bytes(algo: str, proto: str, nbytes: int, channels: int, ranks: int) -> tuple[int, int, int]:
    """(channels used, threads, bytes on the busiest channel) for one Ring/Tree AllReduce of nbytes."""
    nc, nt = nccl_channels(algo, proto, nbytes, channels, ranks)
    used, bc = _cells(nbytes, nc, proto)
    return used, nt, bc
