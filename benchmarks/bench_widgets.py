"""Update times of the notebook widgets (target: every update within 50 ms for P up to 64).

Run: ``.venv/bin/python benchmarks/bench_widgets.py`` (prints a table; no
browser involved: it times the kernel side of one update, i.e. the callback
that recomputes the state and renders the new PNG frames, which is what the
browser then shows).

ScheduleExplorer, per algorithm and P: every *first visit* of a configuration
(changing the algorithm, P, the size or the topology to a setting not seen
before: build, execute, simulate, full redraw where ticks change), a *revisit*
(a configuration seen before: cached exploration and backgrounds), and step
changes (slider jumps to random steps, Play's +1 moves). Figures are the
median and the maximum in milliseconds. The updates run inside an asyncio
loop, as in a Jupyter kernel: a first visit shows the grid at once and
simulates on the loop's next tick; "timeline ready" is the time from the
control change until that tick has shown the timeline too.

CostExplorer on 8 nodes x 8 GPUs: alpha moves, node-count moves (P = nodes x GPUs per node), the
time/busbw toggle. ChunksExplorer (notebook 02): chunk-slider moves, and P or size moves (a new
background).

MeasuredVsPredicted on the bundled 2 x H200 runs (as notebook 05): every run's first visit
(loading and comparing its files), every configuration's first visit on the first run, then
revisits.

Execution: ``grid_states`` (the grid of every step: the checker's execution,
``collsim.core.checker.contribution_states``) and ``check`` of ring and tree on 64
ranks, the best of 7 calls each.
"""
from __future__ import annotations

import asyncio
import gc
import statistics
import time
from pathlib import Path

import numpy as np

_GC_MS = [0.0]          # milliseconds spent in full (generation 2) garbage collections so far
_SLOW: list[tuple] = []  # (update ms, of which full garbage collection ms) of updates over 50 ms


def _gc_timer(phase, info, _start=[0.0]):
    if info["generation"] == 2:
        if phase == "start":
            _start[0] = time.perf_counter()
        else:
            _GC_MS[0] += (time.perf_counter() - _start[0]) * 1e3


def _ms(fn) -> float:
    gc0, t = _GC_MS[0], time.perf_counter()
    fn()
    ms = (time.perf_counter() - t) * 1e3
    if ms > 50:
        _SLOW.append((ms, _GC_MS[0] - gc0))
    return ms


def _set(widget, value):
    return lambda: setattr(widget, "value", value)


def _stats(ts) -> str:
    return f"{statistics.median(ts):6.1f} /{max(ts):6.1f}"


async def _drain() -> float:
    """Milliseconds until the work deferred by the last update (timeline) has run."""
    t = time.perf_counter()
    for _ in range(3):
        await asyncio.sleep(0)
    return (time.perf_counter() - t) * 1e3


async def schedule_explorer_rows(ranks=(4, 8, 16, 32, 64)) -> list[tuple]:
    from collsim.algorithms import ALGORITHMS
    from collsim.widgets.exploration import valid_ranks
    from collsim.widgets.schedule_explorer import ScheduleExplorer

    rng = np.random.default_rng(0)
    rows = []
    for algo in ALGORITHMS:
        ex = ScheduleExplorer("ring", ranks[0], 2**20, "h200-nvlink")
        await _drain()
        for P in ranks:
            if P not in valid_ranks(algo, "h200-nvlink") or P not in valid_ranks(algo, "ib-400g"):
                continue                      # the P slider does not offer it (NVLS: one node)
            first, ready = [], []
            for fn in (_set(ex.algo, algo) if P == ranks[0] else _set(ex.ranks, P),
                       _set(ex.size, 2**24), _set(ex.preset, "ib-400g")):
                first.append(_ms(fn))
                ready.append(first[-1] + await _drain())
            again = [_ms(_set(ex.preset, "h200-nvlink")), _ms(_set(ex.size, 2**20)),
                     _ms(_set(ex.size, 2**24)), _ms(_set(ex.preset, "ib-400g"))]
            n = ex.step.max
            steps = [_ms(_set(ex.step, int(k))) for k in rng.integers(0, n + 1, 10)]
            ex.preset.value, ex.size.value = "h200-nvlink", 2**20
            ex.step.value = 0
            steps += [_ms(_set(ex.step, k)) for k in range(1, min(n, 10) + 1)]
            rows.append((algo, P, ex.state.schedule.n_transfers, first, ready, again, steps))
    return rows


def measured_rows() -> tuple[list, list, list]:
    """(run first visits, configuration first visits, revisits) of MeasuredVsPredicted over
    notebook 05's bundled runs."""
    from collsim.widgets.measured import MeasuredVsPredicted

    data = Path(__file__).resolve().parent.parent / "data" / "h200x2"
    w = MeasuredVsPredicted(data)
    runs = list(w.run.options)
    run_first = [_ms(_set(w.run, v)) for v in runs[1:] + runs[:1]]
    labels = list(w.config.options)
    first = [_ms(_set(w.config, v)) for v in labels[1:] + labels[:1]]
    again = [_ms(_set(w.config, v)) for v in labels]
    return run_first, first, again


def execution_rows(ranks: int = 64, repeats: int = 7) -> list[tuple]:
    """(algorithm, transfers, grid_states ms, check ms), the best of ``repeats`` calls."""
    from collsim.algorithms import build_schedule
    from collsim.core.checker import check
    from collsim.viz.grid import grid_states

    rows = []
    for algo in ("ring", "double-tree"):
        s = build_schedule(algo, ranks, 2**18)
        best = [min(_ms(lambda: fn(s)) for _ in range(repeats)) for fn in (grid_states, check)]
        rows.append((algo, s.n_transfers, *best))
    return rows


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from collsim.widgets.cost_explorer import CostExplorer

    gc.callbacks.append(_gc_timer)

    print(f"{'ScheduleExplorer':18} {'P':>3} {'transfers':>9}  {'first visit ms':>15}  "
          f"{'timeline ready':>15}  {'revisit ms':>15}  {'step ms':>15}   (median / max)")
    worst, ready_all = [], []
    for algo, P, n, first, ready, again, steps in asyncio.run(schedule_explorer_rows()):
        worst += first + again + steps
        ready_all += ready
        print(f"{algo:18} {P:>3} {n:>9}  {_stats(first)}  {_stats(ready)}  {_stats(again)}  {_stats(steps)}")
    print(f"ScheduleExplorer: {len(worst)} updates, median {statistics.median(worst):.1f} ms, "
          f"max {max(worst):.1f} ms, {sum(t > 50 for t in worst)} over 50 ms; timeline ready after a "
          f"first visit: max {max(ready_all):.1f} ms, {sum(t > 50 for t in ready_all)} of "
          f"{len(ready_all)} over 50 ms")
    cost = CostExplorer(nodes=8, gpus_per_node=8)
    alpha = [_ms(_set(cost.latency, v)) for v in [1.0, 3.0, 10.0, 30.0] * 3]
    nodes = [_ms(_set(cost.nodes, v)) for v in [4, 8] * 6]
    kind = [_ms(_set(cost.kind, v)) for v in ["busbw", "time"] * 6]
    print(f"CostExplorer P=64: alpha {_stats(alpha)} ms, P (nodes) {_stats(nodes)} ms, time/busbw "
          f"{_stats(kind)} ms (median / max)")
    from collsim.widgets.chunks_explorer import ChunksExplorer

    chunks = ChunksExplorer()
    moves = [_ms(_set(chunks.chunks, k)) for k in [2, 4, 8, 16, 32, 64, 6, 1] * 2]
    configs = [_ms(_set(chunks.ranks, v)) for v in [31, 63, 15]] + [_ms(_set(chunks.size, v)) for v in
                                                                   [1 << 24, 1 << 26, 1 << 23]]
    print(f"ChunksExplorer: chunks {_stats(moves)} ms, P or size {_stats(configs)} ms (median / max)")
    run_first, first, again = measured_rows()
    print(f"MeasuredVsPredicted: {len(run_first)} runs, first visit {_stats(run_first)} ms; "
          f"{len(first)} configurations, first visit {_stats(first)} ms, revisit {_stats(again)} ms (median / max)")
    for algo, n, grid_ms, check_ms in execution_rows():
        print(f"{algo} P=64 ({n} transfers): grid_states {grid_ms:.1f} ms, check {check_ms:.1f} ms (best of 7)")
    gc_only = sum(t - g <= 50 < t for t, g in _SLOW)
    worst = ", ".join(f"{t:.0f} ms with {g:.0f} ms of GC" for t, g in sorted(_SLOW, reverse=True)[:5])
    print(f"updates over 50 ms, all widgets: {len(_SLOW)}, of which {gc_only} only because a full "
          f"garbage collection of the Python process ran inside them" + (f" (worst: {worst})" if worst else ""))


if __name__ == "__main__":
    main()
