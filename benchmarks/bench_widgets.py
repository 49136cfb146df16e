"""Update times of the notebook widgets (target: every update within 50 ms for P up to 64).

Run: ``.venv/bin/python benchmarks/bench_widgets.py`` (prints a table; no
browser involved: it times the kernel side of one update, i.e. the callback
that recomputes the state and renders the new PNG frame, which is what the
browser then shows).

Measured per update: the median and the maximum over repeats, in milliseconds.
"""
from __future__ import annotations

import statistics
import time


def _time(fn, repeats: int) -> tuple[float, float]:
    ts = []
    for i in range(repeats):
        t = time.perf_counter()
        fn(i)
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts), max(ts)


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from collsim.widgets.cost_explorer import CostExplorer
    from collsim.widgets.schedule_explorer import ScheduleExplorer

    rows = []
    ex = ScheduleExplorer("ring", 4, 2**20, "h200-nvlink")
    for algo in ("ring", "tree", "hierarchical", "halving-doubling"):
        for P in (8, 16, 32, 64):
            ex.algo.value = algo
            # configuration change: alternate P and P/2 so each repeat really recomputes
            med, mx = _time(lambda i: setattr(ex.ranks, "value", P if i % 2 == 0 else P // 2), 4)
            ex.ranks.value = P
            n = ex.step.max
            smed, smx = _time(lambda i: setattr(ex.step, "value", (i + 1) % (n + 1)), 20)
            rows.append((f"ScheduleExplorer {algo}", P, f"{ex.state.schedule.n_transfers}",
                         med, mx, smed, smx))
    cost = CostExplorer(ranks=64)
    values = [1.0, 3.0, 10.0, 30.0]
    med, mx = _time(lambda i: setattr(cost.latency, "value", values[i % 4]), 12)
    pmed, pmx = _time(lambda i: setattr(cost.ranks, "value", 64 if i % 2 else 32), 12)
    rows.append(("CostExplorer alpha", 64, "-", med, mx, pmed, pmx))
    print(f"{'widget':32} {'P':>3} {'transfers':>9}  {'config ms (med/max)':>20}  "
          f"{'step or 2nd control ms (med/max)':>32}")
    for name, P, n, med, mx, smed, smx in rows:
        print(f"{name:32} {P:>3} {n:>9}  {med:9.1f} /{mx:7.1f}   {smed:17.1f} /{smx:7.1f}")


if __name__ == "__main__":
    main()
