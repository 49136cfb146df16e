"""ScheduleExplorer: pick an algorithm, rank count, size and topology; step through the schedule.

The logic is in pure functions (``topology_for``, ``explore``); the widget
only wires controls to them and shows two PNG images (the chunk grid and the
per-link timeline) whose artists are updated in place: one figure each for the
widget's whole life, so Play does not flicker.
"""
from __future__ import annotations

from dataclasses import dataclass

from collsim.errors import CollsimError

SIZES = [2**k for k in range(10, 31, 2)]          # 1 KiB .. 1 GiB, bytes per rank
MAX_RANKS = 64


def topology_for(preset: str, ranks: int):
    """The preset resized to ``ranks`` GPUs: one node when ranks fit in a node, else full nodes."""
    from collsim.topology import PRESETS, get_preset

    if preset not in PRESETS:
        raise CollsimError(f"unknown topology preset {preset!r}")
    gpn = min(ranks, PRESETS[preset].gpus_per_node)
    if ranks % gpn:
        raise CollsimError(f"{ranks} ranks do not fill nodes of {gpn} GPUs on {preset}: "
                           f"pick a multiple of {gpn}")
    return get_preset(preset, nodes=ranks // gpn, gpus_per_node=gpn)


@dataclass
class Exploration:
    """Everything the explorer shows for one configuration."""

    schedule: object        # collsim.schedule.Schedule
    topology: object        # collsim.topology.Topology
    result: object          # collsim.simulate.SimResult
    report: object          # collsim.checker.CheckReport
    summary: str


def explore(algo: str, ranks: int, nbytes: int, preset: str, itemsize: int = 4) -> Exploration:
    """Build, check and simulate ``algo`` on ``ranks`` GPUs of ``preset`` for ``nbytes`` per rank."""
    from collsim.algorithms import ALGORITHMS, build_schedule
    from collsim.checker import check
    from collsim.simulate import simulate

    if not 1 <= ranks <= MAX_RANKS:
        raise CollsimError(f"ranks must be between 1 and {MAX_RANKS}, got {ranks}")
    topo = topology_for(preset, ranks)
    if algo not in ALGORITHMS:
        raise CollsimError(f"unknown algorithm {algo!r}")
    two_level = "gpus_per_node" in ALGORITHMS[algo].params
    sched = build_schedule(algo, ranks, nbytes // itemsize, itemsize,
                           gpus_per_node=topo.gpus_per_node if two_level else None)
    report = check(sched)
    result = simulate(sched, topo)
    verdict = "checker: every rank ends with the sum" if report.ok else f"checker: WRONG ({report.error})"
    summary = (f"{algo}, P={ranks}, {nbytes} B per rank on {topo.describe()}: "
               f"{sched.n_steps} steps, {sched.n_transfers} transfers, "
               f"simulated {result.time_s * 1e6:.4g} µs; {verdict}")
    return Exploration(sched, topo, result, report, summary)


class ScheduleExplorer:
    """Controls (algorithm, P, size, topology, step slider with Play) and two live pictures.

    ``.widget`` is the ipywidgets box to display; ``.algo``, ``.ranks``,
    ``.size``, ``.preset``, ``.step`` are the controls (set ``.value`` to drive it
    from code); ``.state`` is the current ``Exploration`` and ``.error`` the last
    configuration error (shown in the status line; the pictures keep the last
    valid configuration).
    """

    def __init__(self, algo: str = "ring", ranks: int = 4, nbytes: int = 2**20,
                 preset: str = "h200-nvlink"):
        import ipywidgets as W
        from matplotlib.figure import Figure

        from collsim.algorithms import ALGORITHMS
        from collsim.measurements import format_size
        from collsim.topology import PRESETS
        from collsim.viz.render import FramePNG

        self.algo = W.Dropdown(options=list(ALGORITHMS), value=algo, description="algorithm")
        self.ranks = W.IntSlider(value=ranks, min=1, max=MAX_RANKS, description="P (ranks)",
                                 continuous_update=False)
        self.size = W.SelectionSlider(options=[(format_size(s), s) for s in SIZES], value=nbytes,
                                      description="bytes/rank", continuous_update=False)
        self.preset = W.Dropdown(options=list(PRESETS), value=preset, description="topology")
        self.step = W.IntSlider(value=0, min=0, max=1, description="step")
        self.play = W.Play(value=0, min=0, max=1, interval=700, description="play")
        W.jslink((self.play, "value"), (self.step, "value"))
        self.status = W.HTML()
        self.error = ""
        self.grid_img = W.Image(format="png")
        self.time_img = W.Image(format="png")
        self._grid_fig = Figure(figsize=(7.5, 4.6), dpi=72, layout="constrained")
        self._time_fig = Figure(figsize=(7.5, 3.4), dpi=72, layout="constrained")
        self._grid_png = FramePNG(self._grid_fig)
        self._time_png = FramePNG(self._time_fig)
        self._grid = self._timeline = None
        self.state = None
        self._configuring = False
        for w in (self.algo, self.ranks, self.size, self.preset):
            w.observe(self._on_config, names="value")
        self.step.observe(self._on_step, names="value")
        self._on_config()
        self.widget = W.VBox([W.HBox([self.algo, self.preset]), W.HBox([self.ranks, self.size]),
                              W.HBox([self.play, self.step]), self.status,
                              self.grid_img, self.time_img])

    def _on_config(self, change=None) -> None:
        from collsim.viz.grid import GridView
        from collsim.viz.timeline import timeline_view

        try:
            state = explore(self.algo.value, self.ranks.value, self.size.value, self.preset.value)
        except CollsimError as e:
            self.error = str(e)
            self.status.value = f"<b style='color:#b00'>{_esc(self.error)}</b>"
            return
        self.error, self.state = "", state
        if self._grid is None:
            self._grid = GridView(state.schedule, ax=self._grid_fig.add_subplot())
        else:
            self._grid.set_schedule(state.schedule)
        self._time_fig.clear()
        self._timeline = timeline_view(state.result, ax=self._time_fig.add_subplot(), max_rows=16)
        self._grid_png.set_animated(self._grid.artists())
        self._time_png.set_animated(self._timeline.artists())
        self.status.value = _esc(state.summary)
        n = state.schedule.n_steps
        self._configuring = True          # the step reset below must not render twice
        try:
            self.step.value = self.play.value = 0
            self.step.max = self.play.max = n
        finally:
            self._configuring = False
        self._render(0)

    def _on_step(self, change) -> None:
        if not self._configuring and self.state is not None:
            self._render(min(change["new"], self.state.schedule.n_steps))

    def _render(self, k: int) -> None:
        self._grid.show(k)
        self._timeline.highlight(k)
        self.grid_img.value = self._grid_png.frame()
        self.time_img.value = self._time_png.frame()

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


def _esc(text: str) -> str:
    import html

    return html.escape(text)
