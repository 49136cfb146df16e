"""How much memory a schedule's work will hold, estimated from counts before the work starts.

The bounds of ``collsim.inputs`` are counts (ranks, channels, transfers, bytes); the work they admit
can still outgrow a machine (a ring on 4,096 ranks is 33 million transfers). Each estimate here is a
function of counts alone, so that it survives changes to the code that does the work, and is checked
by ``collsim.inputs.check_memory`` against ``memory_budget()`` (4 GB unless lifted) before anything
is built, executed or simulated. The per-transfer and per-cell figures are peak resident bytes
measured on collsim's own schedules (``tests/core/test_budget.py`` holds every estimate within 2x of
the peak RSS it predicts):

* ``schedule_bytes(transfers)``: building a schedule (its columns and the builder's pieces);
* ``check_bytes(moved, state_bytes, step_bytes)``: the checker
  (``collsim.core.execution.Execution``): the schedule, each transfer's atoms, its state of (rank,
  atom) cells and the largest step's share;
* ``simulation_bytes(endpoints, channels, transfers, segments)``: the event simulation: numba's
  compiled engine, the schedule and everything the engine keeps per transfer, and a table of
  (endpoint, segment) cells.

``require_*`` raise the one-line error; ``BASE_BYTES`` is
what the interpreter holds before any work.
"""
from __future__ import annotations

import numpy as np

from collsim.inputs import check_memory

BASE_BYTES = 50e6  # python, numpy and collsim imported (numba and scipy only when used)
SCHEDULE_BYTES_PER_TRANSFER = 80   # 45 B of columns, and the builder's pieces beside them
CHECK_BYTES_PER_MOVE = 160  # per (transfer, atom) moved: the schedule, the plan's rows, sorts
STEP_COPIES = 4                    # a step's moved state: gathered, merged, compared, written back
SIMULATE_BASE_BYTES = 120e6        # numba and its compiled engine loaded (collsim.simulate.jit)
# transfers from which the engine runs compiled (below: plain Python, no numba)
COMPILE_FROM = 40_000
# the schedule, routes, costs, jobs and their ports' state, deps, heaps, times
SIMULATE_BYTES_PER_TRANSFER = 520
SIMULATE_BYTES_PER_CELL = 44  # per (endpoint, segment): its last writers and the segment tables


def schedule_bytes(transfers: int) -> float:
    return BASE_BYTES + SCHEDULE_BYTES_PER_TRANSFER * transfers


def check_bytes(moved: int, state_bytes: int, step_bytes: int) -> float:
    """``moved``: the (transfer, atom) pairs of the schedule; ``state_bytes``: the cells' state;
    ``step_bytes``: the state of the cells the largest step moves (gathered a few times over)."""
    return BASE_BYTES + CHECK_BYTES_PER_MOVE * moved + state_bytes + STEP_COPIES * step_bytes


def simulation_bytes(endpoints: int, channels: int, transfers: int, segments: int) -> float:
    """Channels count through the routes (a row per channel and link), a small term; numba's share
    only where the engine runs compiled (``COMPILE_FROM`` transfers or more)."""
    return (BASE_BYTES + SIMULATE_BASE_BYTES * (transfers >= COMPILE_FROM)
            + SIMULATE_BYTES_PER_TRANSFER * transfers
            + SIMULATE_BYTES_PER_CELL * (endpoints * (segments + 1) + 4 * endpoints * channels))


def segments_of(schedule) -> int:
    """The segments between all element boundaries of ``schedule`` (what the simulation's table has
    per endpoint), counted without the simulation."""
    n = schedule.n_transfers
    if not n:
        return 0
    # every boundary once, sorted in place (a large schedule's estimate must not cost its memory)
    ends = np.empty(2 * n, np.int32 if schedule.count < 2**31 else np.int64)
    ends[:n] = schedule.offset
    np.add(schedule.offset, schedule.length, out=ends[n:], casting="unsafe")
    ends.sort()
    return int(np.count_nonzero(ends[1:] != ends[:-1]))


def require_schedule(name: str, ranks: int, transfers: int) -> None:
    check_memory(schedule_bytes(transfers), f"{name} on {ranks} ranks ({transfers} transfers)")


def require_simulation_bound(name: str, ranks: int, channels: int, transfers: int) -> None:
    """Before a schedule is built: its simulation's estimate from the algorithm's transfer bound
    (one segment per endpoint, the least it can have), so that building is not the first thing
    refused late."""
    check_memory(simulation_bytes(ranks, channels, transfers, 1),
                 f"simulating {name} on {ranks} ranks (up to {transfers} transfers)")


def require_simulation(schedule, what: str = "simulating it") -> None:
    """Refuse to simulate ``schedule`` when ``simulation_bytes`` is over the budget."""
    channels = int(schedule.channel.max()) + 1 if schedule.n_transfers else 1
    segments = segments_of(schedule)
    check_memory(simulation_bytes(schedule.endpoints, channels, schedule.n_transfers, segments),
                 f"{what} ({schedule.endpoints} endpoints x {segments} element ranges, "
                 f"{schedule.n_transfers} transfers)")


def simulable(schedules):
    """``schedules`` (an iterable, consumed lazily), each
    checked by ``require_simulation`` first."""
    for schedule in schedules:
        require_simulation(schedule)
        yield schedule
