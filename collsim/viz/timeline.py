"""Per-link and per-rank timelines (Gantt charts) of a simulated schedule.

Each transfer is a bar from its simulated start to its end (seconds, shown in
microseconds). ``by="link"``: one row per directed link src->dst that carries
data; ``by="rank"``: one row per sending rank (its send port). Bars of
reduce transfers are orange, copies blue; with ``gpus_per_node`` given,
transfers between nodes are drawn darker and their rows are marked "(inter)".
``TimelineView.highlight(step)`` shades one step's transfers and its time span
by updating existing artists.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collsim.errors import CollsimError
from collsim.schedule import REDUCE, Schedule


@dataclass
class Rows:
    """Row of every transfer and the label of every row (rows sorted by busy time, busiest first)."""

    row: np.ndarray          # int, per transfer; -1 where the row was dropped (beyond max_rows)
    labels: list[str]
    busy_s: np.ndarray       # busy seconds per row shown
    dropped: int             # rows left out


def timeline_rows(schedule: Schedule, start, end, by: str = "link", gpus_per_node: int | None = None,
                  max_rows: int = 32) -> Rows:
    """Group transfers into rows (links or sending ranks), keep the ``max_rows`` busiest.

    Links between nodes (with ``gpus_per_node``) get up to half the rows, so a
    capped chart still shows both link classes.
    """
    start, end = np.asarray(start, float), np.asarray(end, float)
    if start.shape != (schedule.n_transfers,) or end.shape != start.shape:
        raise CollsimError("start and end need one time per transfer of the schedule")
    if by == "link":
        key = schedule.src * schedule.ranks + schedule.dst
    elif by == "rank":
        key = schedule.src
    else:
        raise CollsimError(f"timeline 'by' must be 'link' or 'rank', got {by!r}")
    uniq, inv = np.unique(key, return_inverse=True)
    busy = np.bincount(inv, weights=end - start, minlength=len(uniq))
    order = np.argsort(-busy, kind="stable")
    if by == "link" and gpus_per_node and len(uniq) > max_rows:
        # keep both link classes in view: up to half the rows for the busiest inter-node links
        s, d = np.divmod(uniq[order], schedule.ranks)
        inter = s // gpus_per_node != d // gpus_per_node
        first = np.r_[order[inter][:max_rows // 2], order[~inter]]
        order = np.r_[first, order[~np.isin(order, first)]]
    order = order[:max_rows]
    order = order[np.argsort(uniq[order])]           # shown rows in natural order
    pos = np.full(len(uniq), -1)
    pos[order] = np.arange(len(order))
    labels = []
    for k in uniq[order]:
        if by == "link":
            s, d = divmod(int(k), schedule.ranks)
            inter = gpus_per_node and s // gpus_per_node != d // gpus_per_node
            labels.append(f"{s}→{d}" + (" (inter)" if inter else ""))
        else:
            labels.append(f"rank {int(k)}")
    return Rows(pos[inv], labels, busy[order], len(uniq) - len(order))


class TimelineView:
    """Gantt chart of one simulation on a matplotlib Axes."""

    def __init__(self, schedule: Schedule, start, end, by: str = "link",
                 gpus_per_node: int | None = None, ax=None, max_rows: int = 32):
        from matplotlib.collections import PolyCollection
        from matplotlib.figure import Figure

        self.schedule = schedule
        self.rows = timeline_rows(schedule, start, end, by, gpus_per_node, max_rows)
        n_rows = len(self.rows.labels)
        if ax is None:
            ax = Figure(figsize=(8, min(7, 1.2 + 0.25 * n_rows)), dpi=80,
                        layout="constrained").add_subplot()
        self.ax, self.fig = ax, ax.figure
        us = 1e6
        shown = self.rows.row >= 0
        self.index = np.nonzero(shown)[0]            # transfer index of every bar
        r = self.rows.row[shown]
        s, e = np.asarray(start)[shown] * us, np.asarray(end)[shown] * us
        self.bar_start, self.bar_end = s, e
        self.bar_step = schedule.step_index[self.index]
        self.bars = PolyCollection([np.array([[a, y - .4], [b, y - .4], [b, y + .4], [a, y + .4]])
                                    for a, b, y in zip(s, e, r)], linewidths=0.3, edgecolors="k")
        red = schedule.op[shown] == REDUCE
        base = np.where(red[:, None], [[1.0, 0.5, 0.05, 1.0]], [[0.12, 0.47, 0.71, 1.0]])
        if gpus_per_node:
            inter = schedule.src[shown] // gpus_per_node != schedule.dst[shown] // gpus_per_node
            base[inter, :3] *= 0.6
        self.base = base
        self.bars.set_facecolors(base)
        ax.add_collection(self.bars)
        total = float(np.max(end)) * us if len(end) else 0.0
        self.span = ax.axvspan(0, 0, color="0.5", alpha=0.25, visible=False)
        ax.set_xlim(0, total * 1.02 or 1)
        ax.set_ylim(n_rows - 0.5, -0.5)
        ax.set_yticks(range(n_rows), self.rows.labels, fontsize=7 if n_rows > 16 else 9)
        ax.set_xlabel("time (µs)")
        what = "link (src→dst)" if by == "link" else "sending rank"
        more = f", {self.rows.dropped} quieter rows not shown" if self.rows.dropped else ""
        ax.set_title(f"{schedule.name or 'schedule'}: per-{what} timeline, total {total:.3g} µs{more}",
                     fontsize=10)

    def artists(self) -> list:
        """The artists ``highlight`` changes (for ``FramePNG``)."""
        return [self.bars, self.span]

    def highlight(self, step: int | None) -> None:
        """Shade ``step``'s transfers and time span (None: show all bars plainly)."""
        if step is None or step >= self.schedule.n_steps:
            self.bars.set_facecolors(self.base)
            self.span.set_visible(False)
            return
        mine = self.bar_step == step
        colors = self.base.copy()
        colors[~mine, 3] = 0.25
        self.bars.set_facecolors(colors)
        if mine.any():
            lo, hi = self.bar_start[mine].min(), self.bar_end[mine].max()
            self.span.set_x(lo)
            self.span.set_width(hi - lo)
            self.span.set_visible(True)
        else:
            self.span.set_visible(False)


def timeline_view(result, by: str = "link", ax=None, max_rows: int = 32) -> TimelineView:
    """``TimelineView`` of a ``collsim.simulate.SimResult`` (inter-node links marked from its topology)."""
    return TimelineView(result.schedule, result.start, result.end, by,
                        result.topology.gpus_per_node if result.topology.nodes > 1 else None,
                        ax, max_rows)


def draw_timeline(result, by: str = "link", ax=None, max_rows: int = 32):
    """Gantt chart of a ``SimResult`` per link (``by="link"``) or sending rank; returns the Figure."""
    return timeline_view(result, by, ax, max_rows).fig
