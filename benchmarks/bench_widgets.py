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
median and the maximum in milliseconds.
"""
from __future__ import annotations

import statistics
import time

import numpy as np


def _ms(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def _set(widget, value):
    return lambda: setattr(widget, "value", value)


def _stats(ts) -> str:
    return f"{statistics.median(ts):6.1f} /{max(ts):6.1f}"


def schedule_explorer_rows(ranks=(4, 8, 16, 32, 64)) -> list[tuple]:
    from collsim.algorithms import ALGORITHMS
    from collsim.widgets.schedule_explorer import ScheduleExplorer

    rng = np.random.default_rng(0)
    rows = []
    for algo in ALGORITHMS:
        ex = ScheduleExplorer("ring", ranks[0], 2**20, "h200-nvlink")
        for P in ranks:
            first = [_ms(_set(ex.algo, algo)) if P == ranks[0] else _ms(_set(ex.ranks, P)),
                     _ms(_set(ex.size, 2**24)), _ms(_set(ex.preset, "ib-400g"))]
            again = [_ms(_set(ex.preset, "h200-nvlink")), _ms(_set(ex.size, 2**20)),
                     _ms(_set(ex.size, 2**24)), _ms(_set(ex.preset, "ib-400g"))]
            n = ex.step.max
            steps = [_ms(_set(ex.step, int(k))) for k in rng.integers(0, n + 1, 10)]
            ex.preset.value, ex.size.value = "h200-nvlink", 2**20
            ex.step.value = 0
            steps += [_ms(_set(ex.step, k)) for k in range(1, min(n, 10) + 1)]
            rows.append((algo, P, ex.state.schedule.n_transfers, first, again, steps))
    return rows


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from collsim.widgets.cost_explorer import CostExplorer

    print(f"{'ScheduleExplorer':18} {'P':>3} {'transfers':>9}  {'first visit ms':>15}  "
          f"{'revisit ms':>15}  {'step ms':>15}   (median / max)")
    worst = []
    for algo, P, n, first, again, steps in schedule_explorer_rows():
        worst += first + again + steps
        print(f"{algo:18} {P:>3} {n:>9}  {_stats(first)}  {_stats(again)}  {_stats(steps)}")
    print(f"ScheduleExplorer: {len(worst)} updates, median {statistics.median(worst):.1f} ms, "
          f"max {max(worst):.1f} ms, {sum(t > 50 for t in worst)} over 50 ms")
    cost = CostExplorer(ranks=64)
    alpha = [_ms(_set(cost.latency, v)) for v in [1.0, 3.0, 10.0, 30.0] * 3]
    ranks = [_ms(_set(cost.ranks, v)) for v in [32, 64] * 6]
    print(f"CostExplorer P=64: alpha {_stats(alpha)} ms, P {_stats(ranks)} ms (median / max)")


if __name__ == "__main__":
    main()
