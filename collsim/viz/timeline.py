"""Per-link and per-rank timelines (Gantt charts) of a simulated schedule.

Each transfer is a bar from its simulated start to its end (seconds, shown in
microseconds). ``by="link"``: one row per directed link src->dst that carries
data; ``by="rank"``: one row per sending rank (its send port). Bars of
reduce transfers are orange, copies wine (``collsim.viz.palette``); with
``gpus_per_node`` given, transfers between nodes are drawn darker and their rows
are marked "(inter)". ``TimelineView.highlight(k)`` brings out the transfers of
step k + 1 (the step after k of n, as ``collsim.viz.grid`` counts) and shades
its time span by updating existing artists. ``draw_timelines`` puts several
simulations on one shared time axis, so their lengths compare at a glance.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collsim.core.schedule import REDUCE, Schedule
from collsim.errors import CollsimError
from collsim.viz import palette


@dataclass
class Rows:
    """Row of every transfer and the label of every row (rows sorted by busy time, busiest
    first)."""

    row: np.ndarray          # int, per transfer; -1 where the row was dropped (beyond max_rows)
    labels: list[str]
    busy_s: np.ndarray       # busy seconds per row shown
    dropped: int             # rows left out


def timeline_rows(schedule: Schedule, start, end, by: str = "link",
                  gpus_per_node: int | None = None, max_rows: int = 32) -> Rows:
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


def nice_ceil(x: float) -> float:
    """Smallest of 1, 1.5, 2, 3, 4, 5, 6, 8 x 10^k that is >= ``x`` (1 for x <= 0)."""
    if x <= 0:
        return 1.0
    scale = 10.0 ** np.floor(np.log10(x))
    return float(next(m * scale for m in (1, 1.5, 2, 3, 4, 5, 6, 8, 10)
                      if m * scale >= x * (1 - 1e-12)))


class TimelineView:
    """Gantt chart of one simulation on a matplotlib Axes.

    ``set_data`` shows another simulation on the same axes (ticks only set when
    they change); ``highlight(step)`` lays a pale veil over all bars and redraws
    that step's bars above it, so the bars themselves never change between
    steps. ``text=False`` leaves the title to ``caption`` (for widgets).
    """

    def __init__(self, schedule: Schedule, start, end, by: str = "link",
                 gpus_per_node: int | None = None, ax=None, max_rows: int = 32, text: bool = True):
        from matplotlib.collections import PolyCollection
        from matplotlib.figure import Figure
        from matplotlib.patches import Rectangle

        self.by, self.max_rows, self.text = by, max_rows, text
        if ax is None:
            rows = timeline_rows(schedule, start, end, by, gpus_per_node, max_rows)
            ax = Figure(figsize=(8, min(7, 1.2 + 0.25 * len(rows.labels))), dpi=80,
                        layout="constrained").add_subplot()
        self.ax, self.fig = ax, ax.figure
        self.bars = PolyCollection([], linewidths=0.3, edgecolors="k", zorder=1)
        self.veil = Rectangle((0, 0), 1, 1, transform=ax.transAxes, facecolor="w", alpha=0.7,
                              linewidth=0, zorder=1.5, visible=False)
        self.step_bars = PolyCollection([], linewidths=0.3, edgecolors="k", zorder=2)
        self.span = ax.axvspan(0, 0, color="0.5", alpha=0.25, visible=False, zorder=1.7)
        ax.add_collection(self.bars)
        ax.add_patch(self.veil)
        ax.add_collection(self.step_bars)
        ax.set_xlabel("time (µs)")
        self._ticks = None
        self.set_data(schedule, start, end, gpus_per_node)

    def set_data(self, schedule: Schedule, start, end, gpus_per_node: int | None = None) -> None:
        """Show transfers of ``schedule`` from ``start`` to ``end`` (seconds per transfer)."""
        self.schedule = schedule
        self.rows = timeline_rows(schedule, start, end, self.by, gpus_per_node, self.max_rows)
        n_rows = len(self.rows.labels)
        us = 1e6
        shown = self.rows.row >= 0
        self.index = np.nonzero(shown)[0]            # transfer index of every bar
        r = self.rows.row[shown]
        s, e = np.asarray(start)[shown] * us, np.asarray(end)[shown] * us
        self.bar_start, self.bar_end = s, e
        self.bar_step = schedule.step_index[self.index]
        self.verts = np.stack([np.stack([s, r - .4], 1), np.stack([e, r - .4], 1),
                               np.stack([e, r + .4], 1), np.stack([s, r + .4], 1)], axis=1)
        red = schedule.op[shown] == REDUCE
        base = np.where(red[:, None], [palette.rgba(palette.REDUCE)], [palette.rgba(palette.COPY)])
        if gpus_per_node:
            inter = schedule.src[shown] // gpus_per_node != schedule.dst[shown] // gpus_per_node
            base[inter, :3] *= 0.6
        self.base = base
        self.bars.set_verts(self.verts)
        self.bars.set_facecolors(base)
        self.total_us = float(np.max(end)) * us if len(end) else 0.0
        self.set_xmax(self.total_us)
        if self.rows.labels != self._ticks:   # ticks are the slow part of a redraw: only on change
            self._ticks = self.rows.labels
            self.ax.set_ylim(n_rows - 0.5, -0.5)
            self.ax.set_yticks(range(n_rows), self.rows.labels, fontsize=7 if n_rows > 16 else 9)
        what = "link (src→dst)" if self.by == "link" else "sending rank"
        more = f", {self.rows.dropped} quieter rows not shown" if self.rows.dropped else ""
        self.caption = (f"{schedule.name or 'schedule'}: simulated per-{what} timeline, "
                        f"total {self.total_us:.3g} µs{more}")
        if self.text:
            self.ax.set_title(self.caption, fontsize=10)
        self.highlight(None)

    def set_xmax(self, us: float) -> None:
        """Time axis from 0 to a round value at or above ``us`` (few distinct limits: their ticks
        are drawn once each); give several views the same value to compare them."""
        xmax = nice_ceil(us * 1.02)
        if xmax != self.ax.get_xlim()[1]:
            self.ax.set_xlim(0, xmax)

    def artists(self) -> list:
        """The artists ``highlight`` changes, and the frame above them (for ``FramePNG``)."""
        return [self.veil, self.span, self.step_bars, *self.ax.spines.values()]

    def highlight(self, step: int | None) -> None:
        """Pale all bars but those of step ``step + 1`` (0-based index ``step``: the step after
        ``step`` of n) and shade its time span (None, or ``step == n``: show all bars plainly)."""
        n = self.schedule.n_steps
        self.step_caption = (f"shaded: step {step + 1} of {n}" if step is not None and step < n
                             else f"all {n} steps")
        mine = (self.bar_step == step) if step is not None else np.zeros(len(self.bar_step), bool)
        self.veil.set_visible(step is not None and step < self.schedule.n_steps)
        self.step_bars.set_verts(self.verts[mine])
        self.step_bars.set_facecolors(self.base[mine])
        if mine.any():
            lo, hi = self.bar_start[mine].min(), self.bar_end[mine].max()
            self.span.set_x(lo)
            self.span.set_width(hi - lo)
        self.span.set_visible(bool(mine.any()))


def result_data(result) -> tuple:
    """(schedule, start, end, gpus_per_node) of a ``collsim.simulate.SimResult`` for
    ``TimelineView`` (gpus_per_node None on one node: no link is inter-node)."""
    return (result.schedule, result.start, result.end,
            result.topology.gpus_per_node if result.topology.nodes > 1 else None)


def timeline_view(result, by: str = "link", ax=None, max_rows: int = 32,
                  text: bool = True) -> TimelineView:
    """``TimelineView`` of a ``collsim.simulate.SimResult`` (inter-node links marked from its
    topology)."""
    schedule, start, end, gpn = result_data(result)
    return TimelineView(schedule=schedule, start=start, end=end, by=by, gpus_per_node=gpn, ax=ax,
                        max_rows=max_rows, text=text)


def draw_timeline(result, by: str = "link", ax=None, max_rows: int = 32):
    """Gantt chart of a ``SimResult`` per link (``by="link"``) or sending rank; returns the
    Figure."""
    return timeline_view(result, by, ax, max_rows).fig


def draw_timelines(results: dict, by: str = "link", max_rows: int = 16, width: float = 12.0):
    """A figure of one timeline per ``SimResult`` in ``results`` ({title: result}), stacked on one
    shared time axis (the longest run sets it), each titled with its name and simulated total
    time."""
    from matplotlib.figure import Figure

    rows = [min(max_rows, len(timeline_rows(r.schedule, r.start, r.end, by, None, max_rows).labels))
            for r in results.values()]
    fig = Figure(figsize=(width, 0.9 * len(rows) + 0.22 * sum(rows)), layout="constrained")
    axes = fig.subplots(len(rows), 1, sharex=True, height_ratios=[max(r, 2) for r in rows],
                        squeeze=False)[:, 0]
    views = [timeline_view(r, by, ax, max_rows) for r, ax in zip(results.values(), axes)]
    longest = max(v.total_us for v in views)
    for name, v in zip(results, views):
        v.set_xmax(longest)
        v.ax.set_title(f"{name}: {v.total_us:,.0f} µs simulated"
                       + (f" ({v.rows.dropped} quieter rows not shown)"
                                                           if v.rows.dropped else ""), fontsize=10)
    for ax in axes[:-1]:
        ax.set_xlabel("")
    return fig
