"""Ranks x chunks grid of an AllReduce schedule, one picture per step.

A cell (rank r, chunk c) is coloured by which ranks' contributions rank r
holds for chunk c: pale = only its own, darker = more of them, green = the
full sum with every contribution exactly once, red = some contribution counted
more than once. The transfers of the step are drawn as arrows from the
sender's row to the receiver's row over the chunks they carry (orange =
reduce, blue = copy).

Chunks are the checker's atoms: the segments between all transfer boundaries
(elements that always move together), so the state is exact for any schedule.
It is obtained by executing the schedule with the checker's executor
(``collsim.checker.run_steps``) on one-hot data: rank r starts with the unit
vector e_r in every chunk, so after any step a chunk holds the multiplicity of
each rank's contribution (2 = counted twice).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collsim.checker import atoms_of, run_steps
from collsim.schedule import REDUCE, Schedule

LABEL_LIMIT = 48          # write the contributions into cells when ranks x chunks is at most this
_FULL_STATE_LIMIT = 4_000_000   # keep per-step multiplicities (for labels) below this many numbers


@dataclass
class GridStates:
    """Contribution state of every (rank, chunk) before each step and after the last.

    Attributes:
        bounds: chunk boundaries in elements (length n_chunks + 1).
        distinct: int array (n_steps + 1, ranks, n_chunks): how many ranks'
            contributions the cell holds; index s is the state at the start of step s.
        over: bool array, same shape: some contribution is held more than once.
        mult: float array (n_steps + 1, ranks, n_chunks, ranks) of multiplicities,
            or None when too large to keep.
        seg: chunk index of every transfer's first chunk, and n_seg its chunk count.
    """

    bounds: np.ndarray
    distinct: np.ndarray
    over: np.ndarray
    mult: np.ndarray | None
    seg: np.ndarray
    n_seg: np.ndarray

    @property
    def n_chunks(self) -> int:
        return len(self.bounds) - 1


def grid_states(schedule: Schedule) -> GridStates:
    """Execute ``schedule`` on one-hot contributions and record each step's grid state."""
    P = schedule.ranks
    bounds, first, end = atoms_of(schedule)
    C = len(bounds) - 1
    data = np.zeros((P, C, P))
    data[np.arange(P), :, np.arange(P)] = 1.0
    keep = (schedule.n_steps + 1) * P * C * P <= _FULL_STATE_LIMIT
    distinct = np.empty((schedule.n_steps + 1, P, C), np.int32)
    over = np.empty((schedule.n_steps + 1, P, C), bool)
    mult = np.empty((schedule.n_steps + 1, P, C, P)) if keep else None
    for s, buf in enumerate(run_steps(schedule, data)):
        distinct[s] = np.count_nonzero(buf, axis=2)
        over[s] = (buf > 1).any(axis=2)
        if keep:
            mult[s] = buf
    return GridStates(bounds, distinct, over, mult, first, end - first)


def cell_colors(distinct: np.ndarray, over: np.ndarray, ranks: int) -> np.ndarray:
    """RGBA (…, 4) per cell: blues by fraction held, green for the exact sum, red if over-counted."""
    from matplotlib import colormaps

    frac = distinct / max(ranks, 1)
    rgba = colormaps["Blues"](0.12 + 0.6 * frac)
    done = (distinct == ranks) & ~over
    rgba[done] = (0.17, 0.63, 0.17, 1.0)
    rgba[over] = (0.84, 0.15, 0.16, 1.0)
    return rgba


def cell_label(mult_row: np.ndarray) -> str:
    """'x0+2x1' style text of one cell's multiplicities ('Σ' for the exact sum)."""
    ranks = len(mult_row)
    if np.all(mult_row == 1) and ranks > 1:
        return "Σ"
    terms = [("" if m == 1 else f"{m:.0f}") + f"x{r}" for r, m in enumerate(mult_row) if m]
    return "+".join(terms)


def arrow_polygons(y0, y1, x, width=0.16, head=0.35) -> list[np.ndarray]:
    """Polygons (data coordinates) of vertical arrows from (x, y0) to (x, y1)."""
    polys = []
    for a, b, c in zip(np.atleast_1d(y0), np.atleast_1d(y1), np.atleast_1d(x)):
        d = np.sign(b - a) or 1.0
        h = min(head, abs(b - a) * 0.5)
        tip, base = b - d * 0.3, b - d * (0.3 + h)
        polys.append(np.array([[c - width / 2, a + d * 0.3], [c - width / 2, base],
                               [c - width, base], [c, tip], [c + width, base],
                               [c + width / 2, base], [c + width / 2, a + d * 0.3]]))
    return polys


def _legend_handles():
    from matplotlib.patches import Patch

    return [Patch(color=(0.78, 0.86, 0.94), label="own data only"),
            Patch(color=(0.19, 0.51, 0.74), label="more ranks' data"),
            Patch(color=(0.17, 0.63, 0.17), label="exact sum"),
            Patch(color=(0.84, 0.15, 0.16), label="a contribution\ncounted twice"),
            Patch(color=(1.0, 0.5, 0.05), label="reduce transfer"),
            Patch(color=(0.12, 0.47, 0.71), label="copy transfer")]


class GridView:
    """The grid of a schedule on a matplotlib Axes; ``show(step)`` updates the artists in place.

    ``set_schedule`` swaps in another schedule (other P or algorithm) on the
    same axes, so a widget keeps one figure for its whole life.
    """

    def __init__(self, schedule: Schedule, states: GridStates | None = None, ax=None):
        from matplotlib.collections import PolyCollection
        from matplotlib.figure import Figure

        if ax is None:
            ax = Figure(figsize=(7, 5), dpi=80, layout="constrained").add_subplot()
        self.ax, self.fig = ax, ax.figure
        self.image = ax.imshow(np.zeros((1, 1, 4)), aspect="auto", interpolation="nearest")
        self.arrows = PolyCollection([], closed=True, linewidths=0.4, edgecolors="k", zorder=3)
        ax.add_collection(self.arrows)
        ax.set_ylabel("rank")
        ax.legend(handles=_legend_handles(), loc="upper left", bbox_to_anchor=(1.01, 1),
                  fontsize=7, frameon=False)
        self.labels: list[list] = []
        self.set_schedule(schedule, states)

    def set_schedule(self, schedule: Schedule, states: GridStates | None = None) -> None:
        self.schedule = schedule
        self.states = states if states is not None else grid_states(schedule)
        P, C, ax = schedule.ranks, self.states.n_chunks, self.ax
        self.image.set_extent((-0.5, C - 0.5, P - 0.5, -0.5))
        for t in (t for row in self.labels for t in row):
            t.remove()
        self.labels = []
        if self.states.mult is not None and P * C <= LABEL_LIMIT:
            fs = max(5, min(9, 60 // max(P, C)))
            self.labels = [[ax.text(c, r, "", ha="center", va="center", fontsize=fs)
                            for c in range(C)] for r in range(P)]
        b = self.states.bounds
        ax.set_xlabel("chunk (elements " + ", ".join(f"{x}-{y - 1}" for x, y in zip(b[:4], b[1:5]))
                      + (", …)" if C > 4 else ")"))
        ax.set_yticks(range(P) if P <= 16 else range(0, P, max(1, P // 8)))
        ax.set_xticks(range(C) if C <= 16 else range(0, C, max(1, C // 8)))
        ax.set_xlim(-0.5, C - 0.5)
        ax.set_ylim(P - 0.5, -0.5)
        self.show(0)

    def artists(self) -> list:
        """The artists ``show`` changes (for ``FramePNG``)."""
        return [self.image, self.arrows, self.ax.title] + [t for row in self.labels for t in row]

    def show(self, step: int) -> None:
        """State at the start of ``step`` and its transfers (``step == n_steps``: final state)."""
        sch, st = self.schedule, self.states
        n = sch.n_steps
        if not 0 <= step <= n:
            raise ValueError(f"step must be between 0 and {n}, got {step}")
        self.step = step
        self.image.set_data(cell_colors(st.distinct[step], st.over[step], sch.ranks))
        if step < n:
            sl = sch.step_slice(step)
            src, dst = sch.src[sl], sch.dst[sl]
            x = st.seg[sl] + (st.n_seg[sl] - 1) / 2 + 0.12 * np.sign(dst - src)
            self.arrows.set_verts(arrow_polygons(src, dst, x))
            red = sch.op[sl] == REDUCE
            self.arrows.set_facecolors(np.where(red[:, None], [[1.0, 0.5, 0.05, 0.9]],
                                                [[0.12, 0.47, 0.71, 0.9]]))
            what = f"step {step + 1}/{n}: {len(src)} transfers " \
                   f"({int(red.sum())} reduce, {int((~red).sum())} copy)"
        else:
            self.arrows.set_verts([])
            what = f"after all {n} steps: " + ("every rank holds the sum" if self.correct()
                                               else "NOT the sum")
        for r, row in enumerate(self.labels):
            for c, t in enumerate(row):
                t.set_text(cell_label(st.mult[step, r, c]))
        self.ax.set_title(f"{sch.name or 'schedule'}, P={sch.ranks} — {what}", fontsize=10)

    def correct(self) -> bool:
        """True when every cell ends holding each contribution exactly once."""
        st = self.states
        return bool(np.all(st.distinct[-1] == self.schedule.ranks) and not st.over[-1].any())


def draw_grid(schedule: Schedule, step: int = 0, ax=None):
    """Draw one step of ``schedule``'s grid and return the matplotlib Figure."""
    view = GridView(schedule, ax=ax)
    view.show(step)
    return view.fig
