"""The machine a schedule runs on: GPUs on each node's NVSwitch, NICs on rails, and the chunks of
one step moving between them (``MachineView``; ``animate_machine`` plays a schedule step by step).

The picture is drawn from the same schedule the grid draws (``collsim.viz.grid``) and the checker
proves (``collsim.core.checker.contribution_states``), with the grid's step convention: ``show(k)``
is the state after k of the n steps, with the transfers of step k + 1 on their way. A GPU is a box
whose fill rises with the share of the buffer it already holds as the exact sum (yellow, as the
grid's cells) over a blue for the ranks' data it holds on average; the transfers are paths with an
arrowhead (orange: the receiver adds, wine: it overwrites), a dot on each path marking where the
chunk is. A transfer inside a node runs GPU -> NVSwitch -> GPU; one between nodes runs from the GPU
to its NIC (over PCIe), along the NIC's rail to the same rail's NIC on the other node, and up to the
GPU.

NICs: with ``nics_per_node`` K equal to the GPUs per node G, GPU g uses NIC g (a rail per local
index, NCCL's layout on DGX-like nodes); with K < G, channel c's transfers use NIC c mod K (how
collsim's simulator and NCCL's search place rings on such nodes), or NIC g x K / G for a schedule of
one channel. Large schedules stay legible: at most ``MAX_PATHS`` transfers of a step are drawn.
"""
from __future__ import annotations

import numpy as np

from collsim.core.checker import contribution_states
from collsim.core.schedule import REDUCE, Schedule
from collsim.errors import CollsimError
from collsim.viz import palette
from collsim.viz.grid_colors import COPY_RGBA, REDUCE_RGBA, held_color

MAX_PATHS = 96
GPU_Y, SWITCH_Y, NIC_Y, RAIL_Y = 2.2, 1.25, 0.45, -0.35     # heights of the layers (data units)
BOX_W, BOX_H = 0.72, 0.62


def _nic_of(gpu_local: np.ndarray, channel: np.ndarray, G: int, K: int) -> np.ndarray:
    if K == G:
        return gpu_local
    if channel.max(initial=0) > 0:
        return channel % K
    return gpu_local * K // G


class MachineView:
    """A schedule's machine on a matplotlib Axes; ``show(step, progress)`` moves the artists in
    place.

    ``gpus_per_node`` G (default: all ranks on one node), ``nics_per_node`` K (default G; only drawn
    with more than one node). ``progress`` (0-1) places the chunk dots along their paths, for
    animation frames between two states."""

    def __init__(self, schedule: Schedule, gpus_per_node: int | None = None,
                 nics_per_node: int | None = None, ax=None, states=None):
        from matplotlib.collections import LineCollection, PatchCollection, PolyCollection
        from matplotlib.figure import Figure
        from matplotlib.patches import FancyBboxPatch, Rectangle

        P = schedule.ranks
        G = gpus_per_node or P
        if P % G:
            raise CollsimError(f"{P} ranks do not fill nodes of {G} GPUs")
        N, K = P // G, nics_per_node or G
        if N > 1 and not 1 <= K <= G:
            raise CollsimError(f"nics_per_node must be 1 to {G}, got {K}")
        self.schedule, self.G, self.N, self.K = schedule, G, N, K
        if ax is None:
            ax = Figure(figsize=(max(6.0, 1.1 * P + 0.8 * N), 3.6 if N > 1 else 3.0), dpi=80,
                        layout="constrained").add_subplot()
        self.ax, self.fig = ax, ax.figure
        self.states = states if states is not None else contribution_states(schedule)
        # each atom's share of the buffer
        self.weights = np.diff(self.states.bounds) / schedule.count
        self.gx = np.array([(r // G) * (G + 1) + r % G + 0.5 for r in range(P)])
        # node frame, NVSwitch, NICs
        for n in range(N):
            x0 = n * (G + 1)
            ax.add_patch(FancyBboxPatch((x0 - 0.15,
                                         (RAIL_Y + NIC_Y) / 2 if N > 1 else SWITCH_Y - 0.45),
                                        G + 0.3,
                                        GPU_Y + 0.75
                                        - ((RAIL_Y + NIC_Y) / 2 if N > 1 else SWITCH_Y - 0.45),
                                        boxstyle="round,pad=0.02,rounding_size=0.15", fc="0.97",
                                        ec="0.5", zorder=0))
            ax.add_patch(Rectangle((x0 + 0.1, SWITCH_Y - 0.12), G - 0.2, 0.24, fc="0.75",
                                   ec="0.4", zorder=1))
            ax.text(x0 + G / 2, SWITCH_Y, "NVSwitch", ha="center", va="center",
                    fontsize=7, zorder=2)
            ax.text(x0 + G / 2, GPU_Y + 0.55, f"node {n}", ha="center", fontsize=8)
        self.nic_x = np.array([[n * (G + 1) + (j + 0.5) * G / K for j in range(K)]
                               for n in range(N)])
        if N > 1:
            for n in range(N):
                for j in range(K):
                    ax.add_patch(Rectangle((self.nic_x[n, j] - 0.28, NIC_Y - 0.16), 0.56,
                                           0.32, fc="white", ec="0.3", zorder=2))
                    ax.text(self.nic_x[n, j], NIC_Y, f"NIC{j}", ha="center", va="center",
                            fontsize=6, zorder=3)
            rails = [[(self.nic_x[0, j], self._rail_y(j)), (self.nic_x[-1, j], self._rail_y(j))]
                     for j in range(K)]
            rails += [[(self.nic_x[n, j], NIC_Y - 0.16), (self.nic_x[n, j], self._rail_y(j))]
                      for n in range(N) for j in range(K)]
            ax.add_collection(LineCollection(rails, colors=palette.OKABE_ITO["sky"],
                                             linewidths=1.5, zorder=1))
            ax.text(self.nic_x[-1, -1] + 0.4, self._rail_y(K - 1), "rails", fontsize=7, va="center")
        self.boxes = PatchCollection([Rectangle((x - BOX_W / 2, GPU_Y - BOX_H / 2), BOX_W, BOX_H)
                                      for x in self.gx],
                                     edgecolors="k", linewidths=0.8, zorder=3)
        self.done = PolyCollection([], facecolors=palette.EXACT, linewidths=0, zorder=4)
        ax.add_collection(self.boxes)
        ax.add_collection(self.done)
        for r, x in enumerate(self.gx):
            ax.text(x, GPU_Y, str(r), ha="center", va="center",
                    fontsize=8 if P <= 16 else 6, zorder=5)
        self.paths = LineCollection([], linewidths=1.6, zorder=6)
        self.heads = ax.scatter([], [], marker=(3, 0, 0), s=40, zorder=7)
        self.dots = ax.scatter([], [], s=28, edgecolors="k", linewidths=0.5, zorder=8)
        ax.add_collection(self.paths)
        ax.set_xlim(-0.5, N * (G + 1) - 0.5)
        ax.set_ylim((RAIL_Y - 0.15 * K - 0.3) if N > 1 else SWITCH_Y - 0.6, GPU_Y + 0.85)
        ax.set_aspect("equal")
        ax.set_axis_off()
        self.show(0)

    def _rail_y(self, j: int) -> float:
        return RAIL_Y - 0.15 * j

    def route(self, t: int) -> np.ndarray:
        """The polyline (m, 2) transfer ``t`` of the schedule follows, from sender to receiver."""
        s = self.schedule
        a, b = int(s.src[t]), int(s.dst[t])
        lane = (t % 5) - 2                              # parallel transfers side by side
        # out left, in right
        xa, xb = self.gx[a] - 0.17 + 0.025 * lane, self.gx[b] + 0.17 + 0.025 * lane
        top = GPU_Y - BOX_H / 2
        if a // self.G == b // self.G:
            y = SWITCH_Y + 0.2 + 0.05 * (lane + 2)
            return np.array([(xa, top), (xa, y), (xb, y), (xb, top)])
        ch = np.array([int(s.channel[t])])
        j = int(_nic_of(np.array([a % self.G]), ch, self.G, self.K)[0])
        na, nb = a // self.G, b // self.G
        y = self._rail_y(j) + 0.04 * np.sign(nb - na)
        xna, xnb = self.nic_x[na, j] - 0.1 + 0.02 * lane, self.nic_x[nb, j] + 0.1 + 0.02 * lane
        return np.array([(xa, top), (xa, SWITCH_Y - 0.3), (xna, NIC_Y + 0.16), (xna, y), (xnb, y),
                         (xnb, NIC_Y + 0.16), (xb, SWITCH_Y - 0.3), (xb, top)])

    def show(self, step: int, progress: float = 0.5) -> None:
        """State after ``step`` of the n steps; step ``step + 1``'s transfers drawn, their chunks
        ``progress`` of the way along."""
        s, st = self.schedule, self.states
        n = s.n_steps
        if not 0 <= step <= n:
            raise ValueError(f"step must be between 0 and {n}, got {step}")
        self.step = step
        P = s.ranks
        # share held as the sum
        exact = ((st.distinct[step] == P) & ~st.over[step]) @ self.weights
        held = (st.distinct[step] / P) @ self.weights
        self.boxes.set_facecolors(held_color(held))
        self.done.set_verts([_rect(x - BOX_W / 2, GPU_Y - BOX_H / 2, BOX_W, BOX_H * e)
                             for x, e in zip(self.gx, exact)])
        if step == n:
            self.paths.set_segments([])
            self.heads.set_offsets(np.zeros((0, 2)))
            self.dots.set_offsets(np.zeros((0, 2)))
            self.caption = (f"after {n} of {n} steps: "
                            + ("every GPU holds the sum" if st.complete() else "NOT the sum"))
            return
        sl = s.step_slice(step)
        ts = np.arange(sl.start, sl.stop)
        if len(ts) > MAX_PATHS:
            ts = ts[np.linspace(0, len(ts) - 1, MAX_PATHS).astype(int)]
        routes = [self.route(int(t)) for t in ts]
        colours = np.where(s.op[ts, None] == REDUCE, [REDUCE_RGBA], [COPY_RGBA])
        self.paths.set_segments(routes)
        self.paths.set_colors(colours)
        self.heads.set_offsets([r[-1] - (0, 0.06) for r in routes])
        self.heads.set_facecolors(colours)
        self.dots.set_offsets([_along(r, progress) for r in routes])
        self.dots.set_facecolors(colours)
        crossing = int(sum(s.src[t] // self.G != s.dst[t] // self.G for t in ts))
        self.caption = (f"after {step} of {n} steps; moving: step {step + 1}, {sl.stop - sl.start} "
                        "transfers"
                        + (f" ({crossing} between nodes)" if self.N > 1 else "")
                        + (f", {len(ts)} drawn" if len(ts) < sl.stop - sl.start else ""))

    def artists(self) -> list:
        return [self.boxes, self.done, self.paths, self.heads, self.dots]


def _rect(x, y, w, h) -> list:
    return [(x, y), (x + w, y), (x + w, y + h), (x, y + h)]


def _along(route: np.ndarray, f: float) -> np.ndarray:
    """The point a fraction ``f`` of the way along a polyline."""
    seg = np.linalg.norm(np.diff(route, axis=0), axis=1)
    d = np.clip(f, 0, 1) * seg.sum()
    i = min(int(np.searchsorted(np.cumsum(seg), d)), len(seg) - 1)
    before = seg[:i].sum()
    return route[i] + (route[i + 1] - route[i]) * ((d - before) / seg[i] if seg[i] else 0.0)


def animate_machine(schedule: Schedule, gpus_per_node: int | None = None,
                    nics_per_node: int | None = None, substeps: int = 3, interval_ms: int = 300,
                    max_frames: int = 200):
    """A ``FuncAnimation`` of ``MachineView``: for every step, ``substeps`` frames with its chunks
    moving along their paths, then the state after it; the last frame is the result."""
    from matplotlib.animation import FuncAnimation
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    frames = [(k, (i + 1) / (substeps + 1)) for k in range(schedule.n_steps)
              for i in range(substeps)]
    frames.append((schedule.n_steps, 0.0))
    if len(frames) > max_frames:
        raise CollsimError(f"{len(frames)} frames is too many to animate (at most {max_frames}): "
                           "fewer ranks, steps or substeps")
    view = MachineView(schedule, gpus_per_node, nics_per_node)
    FigureCanvasAgg(view.fig)
    # laid out with room for the title
    view.ax.set_title(f"{schedule.name}: {view.caption}", fontsize=9)
    view.fig.canvas.draw()
    view.fig.set_layout_engine("none")

    def update(i):
        view.show(*frames[i])
        view.ax.set_title(f"{schedule.name or 'schedule'}, P={schedule.ranks}: {view.caption}",
                          fontsize=9)
        return view.artists()

    anim = FuncAnimation(view.fig, update, frames=len(frames), interval=interval_ms, blit=False,
                         repeat=True)
    anim.view = view
    return anim
