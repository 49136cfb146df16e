"""Ranks x chunks grid of an AllReduce schedule, one picture per step.

Steps are counted from 1: picture k shows the state *after k of the n steps* (k = 0: every
rank holds only its own data; k = n: the result), and arrows for the transfers of the next
step, step k + 1, from the sender's row to the receiver's row over the chunks they carry
(orange = reduce, wine = copy). The checker (``collsim.core.checker``) and the widgets
count the same way. A cell (rank r, chunk c) is coloured by the fraction of the ranks whose
contributions rank r holds for chunk c (pale blue = few, dark blue = most), yellow = the full
sum with every contribution exactly once, vermillion with a cross = some contribution counted
more than once (``collsim.viz.palette``: safe for colour-blind readers). With
``gpus_per_node`` the rows are cut into nodes by black lines.

Chunks are the checker's atoms: the segments between all transfer boundaries
(elements that always move together), so the state is exact for any schedule.
The colours are the checker's own execution, counted after every step
(``collsim.core.checker.contribution_states``: contribution bitsets, a reduce ORs the
sender's bits into the receiver's and flags "more than once" where they overlap,
a copy overwrites both), so the last picture is all green exactly when
``collsim.core.checker.check`` passes. Per-step multiplicities (for cell text, small
schedules only) come from the plain executor (``collsim.core.atoms.run_steps``)
on one-hot data: rank r starts with the unit vector e_r in every chunk, so after
any step a chunk holds the multiplicity of each rank's contribution (2 = counted twice).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collsim.core.atoms import atoms_of, run_steps
from collsim.core.checker import ContributionStates, contribution_states
from collsim.core.schedule import REDUCE, Schedule
from collsim.viz.grid_bins import arrow_columns, binned, column_bins
from collsim.viz.grid_colors import COPY_RGBA, REDUCE_RGBA, cell_colors, legend_handles

LABEL_LIMIT = 48          # write the contributions into cells when ranks x chunks is at most this
# draw at most this many arrows per step (evenly spread over its transfers)
MAX_ARROWS = 256
_FULL_STATE_LIMIT = 250_000     # keep per-step multiplicities (for labels) below this many numbers


@dataclass
class GridStates(ContributionStates):
    """``collsim.core.checker.ContributionStates`` (bounds, distinct, over: chunks are the checker's
    atoms) and ``mult``: float array (n_steps + 1, ranks, n_chunks, ranks) of multiplicities, or
    None when too large to keep."""

    mult: np.ndarray | None

    @property
    def n_chunks(self) -> int:
        return len(self.bounds) - 1


def grid_states(schedule: Schedule) -> GridStates:
    """Every step's grid state: ``collsim.core.checker.contribution_states`` plus multiplicities.

    A schedule the checker stops early (bad rank or element range, a copy and
    another write to the same elements in one step) raises ``CollsimError``
    with the checker's message. Multiplicities (``mult``) are kept when
    (steps + 1) x ranks^2 x chunks is below ``_FULL_STATE_LIMIT``.
    """
    st = contribution_states(schedule)
    P, C = schedule.ranks, st.distinct.shape[2]
    mult = None
    if (schedule.n_steps + 1) * P * C * P <= _FULL_STATE_LIMIT:
        one_hot = np.zeros((P, C, P))
        one_hot[np.arange(P), :, np.arange(P)] = 1.0
        mult = np.stack(list(run_steps(schedule, one_hot)))
    return GridStates(st.bounds, st.distinct, st.over, mult)


def cell_label(mult_row: np.ndarray) -> str:
    """'x0+2x1' style text of one cell's multiplicities ('Σ' for the exact sum)."""
    ranks = len(mult_row)
    if np.all(mult_row == 1) and ranks > 1:
        return "Σ"
    terms = [("" if m == 1 else f"{m:.0f}") + f"x{r}" for r, m in enumerate(mult_row) if m]
    return "+".join(terms)


def arrow_polygons(y0, y1, x, width=0.16, head=0.35) -> np.ndarray:
    """Polygons (n, 7, 2) in data coordinates of vertical arrows from (x, y0) to (x, y1)."""
    y0, y1, x = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (y0, y1, x))
    d = np.sign(y1 - y0)
    d[d == 0] = 1.0
    h = np.minimum(head, np.abs(y1 - y0) * 0.5)
    tail, tip, base = y0 + d * 0.3, y1 - d * 0.3, y1 - d * (0.3 + h)
    xs = x[:, None] + np.array([-0.5, -0.5, -1.0, 0.0, 1.0, 0.5, 0.5]) * width
    ys = np.stack([tail, base, base, tip, base, base, tail], axis=1)
    return np.stack([xs, ys], axis=2)


class GridView:
    """The grid of a schedule on a matplotlib Axes; ``show(k)`` updates the artists in place.

    ``show(k)`` draws the state after k of the n steps and the arrows of step k + 1 (steps
    counted from 1, as the checker counts them). ``set_schedule`` swaps in another schedule
    (other P or algorithm) on the same axes, so a widget keeps one figure for its whole life;
    ticks and limits are only set when they change. ``gpus_per_node``: draw a line between
    the nodes' rows. ``text=False`` leaves the title, chunk ranges and legend off the figure (a
    widget shows ``caption``, ``chunk_text`` and a legend as HTML: text is the slowest thing to
    draw); cells hold their contributions as text while ranks x chunks <= ``label_limit``.
    """

    def __init__(self, schedule: Schedule, states: GridStates | None = None, ax=None,
                 text: bool = True, label_limit: int = LABEL_LIMIT,
                 gpus_per_node: int | None = None):
        from matplotlib.collections import LineCollection, PolyCollection
        from matplotlib.figure import Figure

        if ax is None:
            ax = Figure(figsize=(7, 5), dpi=80, layout="constrained").add_subplot()
        self.ax, self.fig, self.text, self.label_limit = ax, ax.figure, text, label_limit
        self.image = ax.imshow(np.zeros((1, 1, 4), np.uint8), aspect="auto",
                               interpolation="nearest")
        self.crosses = ax.scatter([], [], marker="x", s=30, c="k", linewidths=1.2, zorder=2.5)
        self.nodes = LineCollection([], colors="k", linewidths=2.0, zorder=2.6)
        ax.add_collection(self.nodes)
        self.arrows = PolyCollection([], closed=True, linewidths=0.4, edgecolors="k", zorder=3)
        ax.add_collection(self.arrows)
        ax.set_ylabel("rank")
        if text:
            ax.legend(handles=legend_handles(), loc="upper left", bbox_to_anchor=(1.01, 1),
                      fontsize=7, frameon=False)
        else:
            ax.set_xlabel("chunk")
        self.labels: list[list] = []
        self._ticks = None
        self.set_schedule(schedule, states, gpus_per_node)

    def set_schedule(self, schedule: Schedule, states=None,
                     gpus_per_node: int | None = None) -> None:
        """Show ``schedule``; ``states``: its ``GridStates``, a function returning them (called
        when a step after 0 is first shown), or None (``grid_states`` then); ``gpus_per_node``:
        the node size whose boundaries to draw (None or >= ranks: none)."""
        self.schedule, self._states = schedule, states
        b, self._seg, self._end = atoms_of(schedule)
        self._bins, self._weights = column_bins(b), np.diff(b).astype(float)
        P, atoms, ax = schedule.ranks, len(b) - 1, self.ax
        # columns drawn: atoms, or bins of them (grid_bins)
        C = int(self._bins.max()) + 1
        held = np.arange(P + 1)           # colour of every (over, distinct) pair, as uint8 RGBA
        self._lut = np.round(255 * np.stack([cell_colors(held, held < 0, P),
                                             cell_colors(held, held >= 0, P)])).astype(np.uint8)
        for t in (t for row in self.labels for t in row):
            t.remove()
        self.labels = []
        if P * C <= self.label_limit and C == atoms and self.states.mult is not None:
            fs = max(5, min(9, 60 // max(P, C)))
            self.labels = [[ax.text(c, r, "", ha="center", va="center", fontsize=fs)
                            for c in range(C)] for r in range(P)]
        self.chunk_text = ("chunk (elements "
                           + ", ".join(f"{x}-{y - 1}" for x, y in zip(b[:4], b[1:5]))
                           + (", …)" if C > 4 else ")"))
        if C < atoms:
            self.chunk_text = (f"chunks: {atoms} in {C} columns of about {atoms // C} (elements "
                               f"0-{b[-1] - 1})")
        self.gpus_per_node = gpus_per_node if gpus_per_node and gpus_per_node < P else None
        cuts = (np.arange(self.gpus_per_node, P, self.gpus_per_node) - 0.5 if self.gpus_per_node
                else [])
        self.nodes.set_segments([[(-0.5, y), (C - 0.5, y)] for y in cuts])
        if (P, C) != self._ticks:            # ticks are the slow part of a redraw: only on change
            self._ticks = (P, C)
            self.image.set_extent((-0.5, C - 0.5, P - 0.5, -0.5))
            ax.set_yticks(_tick_positions(P))
            ax.set_xticks(_tick_positions(C))
            ax.set_xlim(-0.5, C - 0.5)
            ax.set_ylim(P - 0.5, -0.5)
        if self.text:
            ax.set_xlabel(self.chunk_text)
        self.show(0)

    @property
    def states(self) -> GridStates:
        """The ``GridStates`` shown (computed on first use)."""
        if not isinstance(self._states, GridStates):
            self._states = self._states() if callable(self._states) else grid_states(self.schedule)
        return self._states

    def artists(self) -> list:
        """The artists ``show`` changes, and the frame above them (for ``FramePNG``)."""
        return ([self.image, self.crosses, self.nodes, self.arrows]
                + ([self.ax.title] if self.text else [])
                + [t for row in self.labels for t in row] + list(self.ax.spines.values()))

    def show(self, step: int) -> None:
        """The state after ``step`` of the n steps, with the arrows of step ``step + 1`` (none after
        the last step: ``step == n`` shows the result)."""
        sch = self.schedule
        n = sch.n_steps
        if not 0 <= step <= n:
            raise ValueError(f"step must be between 0 and {n}, got {step}")
        self.step = step
        if step == 0 and not self.labels:      # every rank holds its own data: no execution needed
            self.image.set_data(np.broadcast_to(self._lut[0, 1], (sch.ranks, self._ticks[1], 4)))
            self.crosses.set_offsets(np.zeros((0, 2)))
        elif len(self._bins) > self._ticks[1]:              # binned columns (grid_bins)
            st = self.states
            mean, over = binned(st.distinct[step], st.over[step], self._bins,
                                self._weights, sch.ranks)
            self.image.set_data(np.round(255 * cell_colors(mean, over, sch.ranks)).astype(np.uint8))
            r, c = np.nonzero(over)
            self.crosses.set_offsets(np.c_[c - 0.3, r - 0.25])
        else:
            st = self.states
            self.image.set_data(self._lut[st.over[step].astype(np.intp), st.distinct[step]])
            r, c = np.nonzero(st.over[step])
            # a corner: clear of the cell text
            self.crosses.set_offsets(np.c_[c - 0.3, r - 0.25])
        if step < n:
            sl = sch.step_slice(step)
            red = sch.op[sl] == REDUCE
            n_t = len(red)
            drawn = np.arange(sl.start, sl.stop)
            if n_t > MAX_ARROWS:             # thousands of overlapping arrows only cost time
                drawn = drawn[np.linspace(0, n_t - 1, MAX_ARROWS).astype(int)]
            src, dst = sch.src[drawn], sch.dst[drawn]
            x, width, keep = arrow_columns(self._seg[drawn], self._end[drawn], src, dst,
                                           sch.op[drawn], self._bins, sch.ranks)
            self.arrows.set_verts(arrow_polygons(src[keep], dst[keep], x, width=width[:, None]))
            # thin arrows: no black edge
            self.arrows.set_linewidths(np.where(width < 0.05, 0.0, 0.4))
            self.arrows.set_facecolors(np.where(sch.op[drawn[keep], None] == REDUCE, [REDUCE_RGBA],
                                                [COPY_RGBA]))
            what = (f"after {step} of {n} steps; arrows: step {step + 1}, {n_t} transfers "
                    f"({int(red.sum())} reduce, {int((~red).sum())} copy)")
            if n_t > MAX_ARROWS:
                what += f", {MAX_ARROWS} of them drawn"
        else:
            self.arrows.set_verts([])
            what = f"after {n} of {n} steps: " + ("every rank holds the sum" if self.correct()
                                                  else "NOT the sum")
        for r, row in enumerate(self.labels):
            for c, t in enumerate(row):
                t.set_text(cell_label(self.states.mult[step, r, c]))
        nodes = f", {sch.ranks // self.gpus_per_node} nodes" if self.gpus_per_node else ""
        self.caption = f"{sch.name or 'schedule'}, P={sch.ranks}{nodes} — {what}"
        self.title = f"{sch.name or 'schedule'}, P={sch.ranks}{nodes}\n{what}"
        if self.text:
            self.ax.set_title(self.title, fontsize=10)

    def correct(self) -> bool:
        """True when every cell ends holding each contribution exactly once."""
        return self.states.complete()


def _tick_positions(n: int) -> range:
    """Every index up to 8, else every 2^k-th (4 to 7 labels: tick text is slow to draw)."""
    return range(0, n, 1 if n <= 8 else 2 ** int(np.ceil(np.log2(n / 7))))
