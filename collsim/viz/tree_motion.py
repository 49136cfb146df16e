"""A tree schedule animated on its trees: ``TreesView`` draws every tree of ``collsim.viz.trees``
(ranks as circles, parent edges as lines) and moves, step by step, the transfers of the schedule
along the edges; ``animate_trees`` plays it (NCCL's double binary tree: both trees at once, each on
its half of the buffer).

The same schedule and step convention as the grid (``collsim.viz.grid``): ``show(k)`` is the state
after k of the n steps (the checker's ``contribution_states``) with the transfers of step k + 1 as
arrows (orange: up the tree, the receiver adds; wine: down, it overwrites). In the panel of tree t a
rank's circle is coloured by the share of the ranks' data it holds in tree t's part of the buffer
(the grid's blues), yellow once it holds that part's exact sum. A schedule of T trees gives tree t
the elements ``[t count / T, (t + 1) count / T)``, as collsim's ``double-tree`` and ``binary-tree``
do; a transfer is drawn in the panel of the part its elements belong to.
"""
from __future__ import annotations

import numpy as np

from collsim.core.checker import contribution_states
from collsim.core.schedule import REDUCE, Schedule
from collsim.errors import CollsimError
from collsim.viz import palette
from collsim.viz.grid_colors import COPY_RGBA, REDUCE_RGBA, held_color
from collsim.viz.trees import tree_layout


def arrow_between(p0, p1, width: float = 0.07, head: float = 0.22, gap: float = 0.2) -> np.ndarray:
    """Polygon (7, 2) of an arrow from point ``p0`` to ``p1`` (data units), stopping ``gap`` short
    of both ends (the circles)."""
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    d = p1 - p0
    length = float(np.hypot(*d)) or 1.0
    u = d / length
    n = np.array([-u[1], u[0]])
    tail, tip = p0 + u * gap, p1 - u * gap
    base = tip - u * min(head, 0.5 * max(length - 2 * gap, 1e-9))
    return np.array([tail - n * width / 2, base - n * width / 2, base - n * width, tip,
                     base + n * width, base + n * width / 2, tail + n * width / 2])


class TreesView:
    """Panels of ``parents`` ({title: parent array}, as ``collsim.viz.trees.tree_parents`` gives)
    with ``schedule`` moving on them; ``show(step)`` updates the artists in place."""

    def __init__(self, schedule: Schedule, parents: dict, fig=None, states=None):
        from matplotlib.collections import LineCollection, PolyCollection
        from matplotlib.figure import Figure

        if not parents:
            raise CollsimError("no trees to draw")
        P = schedule.ranks
        if any(len(p) != P for p in parents.values()):
            raise CollsimError(f"every tree must have the schedule's {P} ranks")
        self.schedule, self.parents = schedule, list(parents.values())
        T = len(self.parents)
        if fig is None:
            fig = Figure(figsize=(6 * T, 3.4), dpi=80, layout="constrained")
        self.fig = fig
        self.axes = np.atleast_1d(fig.subplots(1, T))
        self.states = states if states is not None else contribution_states(schedule)
        b = self.states.bounds
        mid = (b[:-1] + b[1:]) / 2
        self.part = np.minimum((mid * T // schedule.count).astype(int), T - 1)      # atom -> tree
        self.weights = np.diff(b).astype(float)
        # transfer -> tree
        self.tree_of = np.minimum(schedule.offset * T // schedule.count, T - 1)
        self.pos, self.dots, self.arrows = [], [], []
        for ax, (title, par) in zip(self.axes, parents.items()):
            par = np.asarray(par, np.int64)
            x, depth = tree_layout(par)
            xy = np.c_[x, -depth.astype(float)]
            child = np.flatnonzero(par >= 0)
            ax.add_collection(LineCollection([[xy[c], xy[par[c]]] for c in child], colors="0.7",
                                             linewidths=1.0, zorder=1))
            size = max(90, min(420, 5000 // max(P, 1)))
            self.dots.append(ax.scatter(xy[:, 0], xy[:, 1], s=size, edgecolors="k", zorder=2))
            for r in range(P):
                ax.text(*xy[r], str(r), ha="center", va="center",
                        fontsize=9 if P <= 16 else 7, zorder=3)
            arrows = PolyCollection([], closed=True, linewidths=0.4, edgecolors="k", zorder=4)
            ax.add_collection(arrows)
            self.arrows.append(arrows)
            self.pos.append(xy)
            ax.set_xlim(x.min() - 0.7, x.max() + 0.7)
            ax.set_ylim(-depth.max() - 0.6, 0.6)
            ax.set_axis_off()
            ax.set_title(title, fontsize=9)
        self.show(0)

    def show(self, step: int) -> None:
        """The state after ``step`` of the n steps, with step ``step + 1``'s transfers as arrows."""
        s, st = self.schedule, self.states
        n, P = s.n_steps, s.ranks
        if not 0 <= step <= n:
            raise ValueError(f"step must be between 0 and {n}, got {step}")
        self.step = step
        ts = np.arange(*s.step_slice(step).indices(s.n_transfers)) if step < n else np.zeros(0, int)
        for t, (dots, arrows, xy) in enumerate(zip(self.dots, self.arrows, self.pos)):
            atoms = self.part == t
            w = self.weights[atoms] / self.weights[atoms].sum()
            held = (st.distinct[step][:, atoms] / P) @ w
            exact = np.all((st.distinct[step][:, atoms] == P) & ~st.over[step][:, atoms], axis=1)
            colours = held_color(held)
            colours[exact] = palette.rgba(palette.EXACT)
            dots.set_facecolors(colours)
            mine = ts[self.tree_of[ts] == t]
            arrows.set_verts([arrow_between(xy[s.src[i]], xy[s.dst[i]]) for i in mine])
            arrows.set_facecolors(np.where(s.op[mine, None] == REDUCE, [REDUCE_RGBA], [COPY_RGBA]))
        if step < n:
            red = int((s.op[ts] == REDUCE).sum())
            self.caption = (f"after {step} of {n} steps; arrows: step {step + 1}, {len(ts)} "
                            f"transfers ({red} reduce up, {len(ts) - red} copy down)")
        else:
            self.caption = (f"after {n} of {n} steps: "
                            + ("every rank holds the sum" if st.complete() else "NOT the sum"))

    def artists(self) -> list:
        return self.dots + self.arrows


def animate_trees(schedule: Schedule, parents: dict, interval_ms: int = 700, max_frames: int = 200):
    """A ``FuncAnimation`` of ``TreesView``: one frame per step plus the result."""
    from matplotlib.animation import FuncAnimation
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    frames = schedule.n_steps + 1
    if frames > max_frames:
        raise CollsimError(f"{frames} frames is too many to animate (at most {max_frames}): fewer "
                           "ranks or chunks")
    view = TreesView(schedule, parents)
    FigureCanvasAgg(view.fig)
    # laid out with room for the caption
    view.fig.suptitle(f"{schedule.name}: {view.caption}", fontsize=9)
    view.fig.canvas.draw()
    view.fig.set_layout_engine("none")

    def update(k):
        view.show(k)
        view.fig.suptitle(f"{schedule.name or 'schedule'}, P={schedule.ranks}: {view.caption}",
                          fontsize=9)
        return view.artists()

    anim = FuncAnimation(view.fig, update, frames=frames, interval=interval_ms, blit=False,
                         repeat=True)
    anim.view = view
    return anim
