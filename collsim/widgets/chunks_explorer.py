"""ChunksExplorer: the pipelined tree AllReduce, one chunk count at a time.

A chunks slider (with P, the size, binary vs double binary tree and the simulator's contention
policy) on a uniform alpha-beta machine. The upper picture is the simulated per-rank timeline,
always on the time axis of the unpipelined tree's closed form (1 chunk), so the bars visibly shrink
as the pipeline fills; the lower one is the closed-form time against the chunk count
(``collsim.cost.closed_form``: every step pays its whole alpha + m beta, an upper bound of the
simulation under policy "schedule", no bound under the default "fair"), with the chunk count shown,
the best one and NCCL's (512 KiB chunks per tree, ``collsim.algorithms.tree.tree_chunks``) marked,
and the ring's time for comparison. Every control value is valid (the tree runs on any P).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from collsim.algorithms import build_schedule, get
from collsim.algorithms.tree import up_down_steps
from collsim.cost import closed_form
from collsim.errors import CollsimError
from collsim.machine.topology import Topology
from collsim.simulate import simulate
from collsim.simulate.reference import POLICIES
from collsim.units import format_size
from collsim.viz.palette import OKABE_ITO
from collsim.viz.render import FramePNG
from collsim.viz.timeline import TimelineView, result_data
from collsim.widgets import settle_heap

RANKS = [3, 4, 7, 8, 15, 16, 31, 32, 63, 64]
SIZES = [2**k for k in range(16, 29)]             # 64 KiB .. 256 MiB
MAX_CHUNKS = 64


@lru_cache(maxsize=64)
def chunk_curve(algo: str, ranks: int, nbytes: int, alpha: float, beta: float,
                max_chunks: int = MAX_CHUNKS) -> dict:
    """Closed-form times (s) of ``algo`` for 1..``max_chunks`` chunks, the best count, NCCL's count
    and the ring's time, for ``nbytes`` bytes per rank on a uniform machine."""

    if algo not in ("binary-tree", "double-tree"):
        raise CollsimError(f"ChunksExplorer shows binary-tree or tree, not {algo!r}")
    ks = np.arange(1, max_chunks + 1)
    t = np.array([closed_form(algo, ranks, nbytes, alpha, beta, chunks=int(k)) for k in ks])
    nccl = int(get(algo).default_chunks(nbytes, ranks, {"channels": 1}))
    return {"chunks": ks, "time_s": t, "best": int(ks[np.argmin(t)]), "nccl": nccl,
            "ring_s": float(closed_form("ring", ranks, nbytes, alpha, beta))}


class ChunksExplorer:
    """``.widget`` to display; controls ``.algo``, ``.ranks``, ``.size``, ``.chunks``, ``.policy``
    (the simulation's contention policy, ``collsim.simulate``; set ``.value`` from code);
    ``.result`` the current simulation, ``.curve`` the current ``chunk_curve``."""

    def __init__(self, algo: str = "binary-tree", ranks: int = 15, nbytes: int = 8 << 20,
                 chunks: int = 1, alpha: float = 5e-6, beta: float = 1e-11, policy: str = "fair"):
        import ipywidgets as W
        from matplotlib.figure import Figure


        self.alpha, self.beta = alpha, beta
        self.algo = W.ToggleButtons(options=["binary-tree", "double-tree"], value=algo,
                                    description="tree")
        self.ranks = W.SelectionSlider(options=RANKS, value=ranks, description="P (ranks)",
                                       continuous_update=False)
        self.size = W.SelectionSlider(options=[(format_size(s), s) for s in SIZES], value=nbytes,
                                      description="bytes/rank", continuous_update=False)
        self.chunks = W.IntSlider(value=chunks, min=1, max=MAX_CHUNKS, description="chunks",
                                  continuous_update=False)
        if policy not in POLICIES:
            raise CollsimError(f"contention policy {policy!r:.30} is not one of "
                               f"{', '.join(POLICIES)}")
        self.policy = W.ToggleButtons(options=list(POLICIES), value=policy, description="ports")
        self.status = W.HTML()
        self.image = W.Image(format="png")
        self.fig = Figure(figsize=(8, 6.2), dpi=72)
        self.fig.subplots_adjust(left=0.12, right=0.97, bottom=0.08, top=0.95, hspace=0.45)
        self._png = FramePNG(self.fig)
        self.ax_time, self.ax_curve = self.fig.subplots(2, 1, height_ratios=[3, 2])
        self._timeline = None
        ax = self.ax_curve
        self._line = ax.plot([], [], "-", color=OKABE_ITO["orange"], lw=2,
                             label="tree, closed form")[0]
        self._ring = ax.axhline(1, color=OKABE_ITO["blue"], ls="--", lw=1.5, label="ring")
        self._now = ax.plot([], [], "o", ms=9, color="k", label="shown above")[0]
        self._best = ax.plot([], [], "*", ms=13, color=OKABE_ITO["green"], label="fastest")[0]
        self._nccl = ax.plot([], [], "s", ms=8, mfc="none", mec=OKABE_ITO["vermillion"], mew=2,
                             label="NCCL's 512 KiB chunks")[0]
        ax.set(xlabel="pipeline chunks", ylabel="time (µs)", xscale="log",
               xlim=(0.9, MAX_CHUNKS * 1.1))
        ax.legend(fontsize=8, loc="upper center", ncols=3)
        self.result = self.curve = None
        for w in (self.algo, self.ranks, self.size, self.chunks, self.policy):
            w.observe(self._update, names="value")
        self._update()
        self.widget = W.VBox([W.HBox([self.algo, self.ranks]), W.HBox([self.size, self.chunks]),
                              self.policy, self.status, self.image])
        settle_heap()

    def _update(self, change=None) -> None:

        algo, P, S, k, policy = (self.algo.value, self.ranks.value, self.size.value,
                                 self.chunks.value, self.policy.value)
        try:
            curve = chunk_curve(algo, P, S, self.alpha, self.beta)
            result = simulate(build_schedule(algo, P, S // 4, chunks=k),
                              Topology.uniform(P, self.alpha, self.beta), policy=policy)
        except CollsimError as e:
            self.status.value = f"<b style='color:#b00'>{e}</b>"
            return
        self.curve, self.result = curve, result
        data = result_data(result)
        if self._timeline is None:
            self._timeline = TimelineView(*data[:3], "rank", None, ax=self.ax_time, max_rows=16)
        else:
            self._timeline.set_data(*data)
        self._timeline.set_xmax(curve["time_s"][0] * 1e6)      # the unpipelined tree's time axis
        t_us = curve["time_s"] * 1e6
        self._line.set_data(curve["chunks"], t_us)
        self._ring.set_ydata([curve["ring_s"] * 1e6] * 2)
        for mark, kk in ((self._now, k), (self._best, curve["best"]),
                         (self._nccl, min(curve["nccl"], MAX_CHUNKS))):
            mark.set_data([kk], [t_us[kk - 1]])
        lo, hi = min(t_us.min(), curve["ring_s"] * 1e6), max(t_us.max(), curve["ring_s"] * 1e6)
        self.ax_curve.set_ylim(lo * 0.8, hi * 1.25)
        self.ax_curve.set_yscale("log")
        self.ax_time.set_title(f"{algo}, P={P}, {S:,} B per rank, {k} chunk(s): simulated "
                               f"({policy}) {result.time_s * 1e6:,.0f} µs (x axis: the 1-chunk "
                               "form)", fontsize=10)
        up, down = up_down_steps(algo.split("-")[0], P, k)
        self.status.value = (f"{k} chunk(s): {up} steps up, {down} down; simulated ({policy} "
                             f"ports) {result.time_s * 1e6:,.1f} µs, closed form "
                             f"{t_us[k - 1]:,.1f} µs; the form is fastest with {curve['best']} "
                             f"chunks ({t_us[curve['best'] - 1]:,.1f} µs); NCCL's 512 KiB chunks: "
                             f"{curve['nccl']}; the ring: {curve['ring_s'] * 1e6:,.1f} µs")
        # the curve and both axes are a background per (algorithm, P, size, timeline rows); the
        # bars, the current chunk count's marker and the title are drawn over it
        # (collsim.viz.render.FramePNG)
        self._png.set_animated([self._timeline.bars, self._now, self.ax_time.title])
        self._png.use((algo, P, S, tuple(self._timeline.rows.labels)))
        self.image.value = self._png.frame()

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
