"""ScheduleExplorer: pick an algorithm, rank count, size and topology; step through the schedule.

The logic is in pure functions (``collsim.widgets.exploration``: ``valid_ranks``, ``topology_for``,
``explore``); the widget
only wires controls to them and shows two PNG images (the chunk grid and the
per-link timeline) whose artists are updated in place: one figure each for the
widget's whole life, so Play does not flicker. In a Jupyter kernel a new
configuration shows its grid at once and is simulated on the event loop's
next tick (the timeline follows); outside a running loop both come at once.

The P slider offers only the rank counts the algorithm can run on the preset
(``valid_ranks``): up to one node's GPUs, then whole nodes. Steps count from 1
everywhere (the checker's messages, the grid, the slider): slider value k shows
the state after k of the n steps and the transfers of step k + 1.
"""
from __future__ import annotations

import html
from collections import OrderedDict

from collsim.algorithms import ALGORITHMS, get
from collsim.errors import CollsimError
from collsim.machine.presets import PRESETS
from collsim.units import format_size
from collsim.viz.grid import GridView
from collsim.viz.grid_colors import legend_html
from collsim.viz.render import FramePNG
from collsim.viz.timeline import TimelineView, result_data
from collsim.widgets import running_loop, settle_heap
from collsim.widgets.exploration import SIZES, explore, valid_ranks

LABEL_LIMIT = 16          # cells written as text (each costs ~1-4 ms a frame) up to this many
SPEEDS = [("slow: 1.5 s a step", 1500), ("0.7 s a step", 700), ("0.3 s a step", 300),
          ("fast: 0.1 s a step", 100)]       # Play's interval (ms) choices


class ScheduleExplorer:
    """Controls (algorithm, P, size, topology, step slider with Play and its speed) and two live
    pictures.

    ``.widget`` is the ipywidgets box to display; ``.algo``, ``.ranks``, ``.size``, ``.preset``,
    ``.step``, ``.speed`` are the controls (set ``.value`` to drive it from code; ``.ranks`` offers
    only ``valid_ranks``); ``.state`` is the current ``Exploration`` and ``.error`` the last
    error (shown in the status line; the pictures keep the last valid configuration and every
    control keeps working). Explorations of the last ``CACHE`` configurations are kept, and so are
    the pictures' backgrounds (``collsim.viz.render.FramePNG``). While a new configuration waits
    for its simulation the timeline keeps the previous picture under the caption "simulating…".
    """

    CACHE = 32

    def __init__(self, algo: str = "ring", ranks: int = 4, nbytes: int = 2**20,
                 preset: str = "h200-nvlink"):
        import ipywidgets as W
        from matplotlib.figure import Figure


        self.algo = W.Dropdown(options=list(ALGORITHMS), value=algo, description="algorithm")
        self.preset = W.Dropdown(options=list(PRESETS), value=preset, description="topology")
        options = valid_ranks(algo, preset) or [ranks]
        self.ranks = W.SelectionSlider(options=options,
                                       value=min(options, key=lambda p: abs(p - ranks)),
                                       description="P (ranks)", continuous_update=False)
        self.size = W.SelectionSlider(options=[(format_size(s), s) for s in SIZES], value=nbytes,
                                      description="bytes/rank", continuous_update=False)
        self.step = W.IntSlider(value=0, min=0, max=1, description="steps done")
        self.play = W.Play(value=0, min=0, max=1, interval=700, description="play")
        self.speed = W.Dropdown(options=SPEEDS, value=700, description="speed")
        self._link = W.jslink((self.play, "value"), (self.step, "value"))
        self._controls = W.HBox([self.play, self.step, self.speed])
        self._step_top = 1            # the largest range a step slider's front end was created with
        self.speed.observe(lambda c: setattr(self.play, "interval", int(c["new"])), names="value")
        self.status = W.HTML()
        self.about = W.HTML()
        self.grid_caption = W.HTML()
        self.time_caption = W.HTML()
        self.error = ""
        self.grid_img = W.Image(format="png")
        self.time_img = W.Image(format="png")
        # fixed margins that fit the longest tick labels (a layout engine would re-run per draw)
        self._grid_fig = Figure(figsize=(6.4, 4.2), dpi=72)
        self._grid_fig.subplots_adjust(left=0.09, right=0.98, bottom=0.11, top=0.98)
        self._time_fig = Figure(figsize=(6.4, 3.2), dpi=72)
        self._time_fig.subplots_adjust(left=0.17, right=0.97, bottom=0.15, top=0.97)
        self._grid_png = FramePNG(self._grid_fig)
        self._time_png = FramePNG(self._time_fig)
        self._grid = self._timeline = self._timeline_state = None
        self._cache: OrderedDict = OrderedDict()
        self.state = None
        self._configuring = False
        for w in (self.algo, self.preset):
            w.observe(self._on_choice, names="value")
        for w in (self.ranks, self.size):
            w.observe(self._on_config, names="value")
        self.step.observe(self._on_step, names="value")
        self._on_config()
        self.widget = W.VBox([W.HBox([self.algo, self.preset]), W.HBox([self.ranks, self.size]),
                              self._controls, self.status, self.about,
                              W.HTML(legend_html()), self.grid_caption, self.grid_img,
                              self.time_caption, self.time_img])
        settle_heap()

    def _on_choice(self, change=None) -> None:
        """Algorithm or preset changed: offer the rank counts it allows (keeping P where it can,
        else the nearest allowed), then show the configuration."""
        options = valid_ranks(self.algo.value, self.preset.value)
        if not options:
            record = get(self.algo.value)
            self.error = (f"{self.algo.value} needs switches that reduce (SHARP in the network), "
                          f"which {self.preset.value} does not have: pick h100-sharp, or another "
                          "algorithm"
                          if record.network and PRESETS[self.preset.value].sharp_us is None else
                          f"{self.algo.value} needs NVLink SHARP, which {self.preset.value} does "
                          "not have: pick an H100, H200 or B200 preset, or another algorithm")
            self.status.value = f"<b style='color:#b00'>{_esc(self.error)}</b>"
            return
        if list(self.ranks.options) != options:
            keep = min(options, key=lambda p: (abs(p - self.ranks.value), p))
            self._configuring = True              # one update below, not one per trait
            try:
                self.ranks.options = options
                self.ranks.value = keep
            finally:
                self._configuring = False
        self._on_config()

    def _explore(self, key):
        """``explore`` of configuration ``key``, from the cache when seen recently."""
        if key in self._cache:
            self._cache.move_to_end(key)
        else:
            self._cache[key] = explore(*key)
            while len(self._cache) > self.CACHE:
                self._cache.popitem(last=False)
        return self._cache[key]

    def _on_config(self, change=None) -> None:

        if self._configuring:
            return
        key = (self.algo.value, self.ranks.value, self.size.value, self.preset.value)
        try:
            state = self._explore(key)
        except CollsimError as e:
            self.error = str(e)
            self.status.value = f"<b style='color:#b00'>{_esc(self.error)}</b>"
            return
        self.error, self.state = "", state
        self.about.value = f"<i>{_esc(key[0])}</i>: {_esc(get(key[0]).description)}"
        topo = state.topology
        gpn = topo.gpus_per_node if topo.nodes > 1 else None
        if self._grid is None:
            self._grid = GridView(state.schedule, lambda: state.states,
                                  ax=self._grid_fig.add_subplot(), text=False,
                                  label_limit=LABEL_LIMIT, gpus_per_node=gpn)
        else:
            self._grid.set_schedule(state.schedule, lambda: state.states, gpn)
        self._grid_png.set_animated(self._grid.artists())
        self._grid_png.use(None, [self._grid.ax])       # all in the axes is animated; ticks by PIL
        n = state.schedule.n_steps
        self._configuring = True          # the step reset below must not render twice
        try:
            if n > self._step_top:
                self._new_step_slider(n)
            self.step.value = self.play.value = 0
            self.step.max = self.play.max = n
        finally:
            self._configuring = False
        loop = running_loop()
        if state.simulated or loop is None or self._timeline is None:
            self._show_timeline(key, state)
            self._render(0)
        else:                             # grid first; simulate once this update has been sent
            self.status.value = _esc(f"{key[0]}, P={key[1]}: simulating on "
                                     f"{state.topology.describe()}…")
            self.time_caption.value = "simulating…"
            self._render(0)
            loop.call_soon(self._show_timeline, key, state, True)

    def _new_step_slider(self, n: int) -> None:
        """A new step slider of range 0..n in place of the old one. ipywidgets 8's slider
        (noUiSlider) keeps the range it was created with for its Home and End keys
        (``updateOptions`` leaves ``options.spectrum`` stale), so End would stop at the first
        configuration's last step after the range grew; a slider created with the larger range
        reaches it (a smaller range later is fine: End then lands past the end and is clamped to
        it)."""
        import ipywidgets as W

        old = self.step
        old.unobserve(self._on_step, names="value")
        self._link.unlink()
        self.step = W.IntSlider(value=0, min=0, max=n, description="steps done")
        self._link = W.jslink((self.play, "value"), (self.step, "value"))
        self.step.observe(self._on_step, names="value")
        self._controls.children = (self.play, self.step, self.speed)
        old.close()
        self._step_top = n

    def flush(self) -> None:
        """Simulate now what waits for the event loop's next tick, so that the widget's state (and
        an executed notebook's saved state) shows the timeline of the configuration on screen."""
        if self.state is not None and self._timeline_state is not self.state and not self.error:
            key = (self.algo.value, self.ranks.value, self.size.value, self.preset.value)
            self._show_timeline(key, self.state, render=True)

    def _show_timeline(self, key, state, render: bool = False) -> None:
        """Simulate ``state`` (if not yet) and put it on the timeline, unless the controls moved on;
        a simulation that fails leaves its message in the status line and the previous timeline."""
        from matplotlib.ticker import MaxNLocator


        if state is not self.state:
            return
        try:
            data = result_data(state.result)
        except CollsimError as e:
            self.error = str(e)
            self.status.value = f"<b style='color:#b00'>{_esc(self.error)}</b>"
            self.time_caption.value = "(no simulation for this configuration)"
            return
        if self._timeline is None:
            ax = self._time_fig.add_subplot()
            ax.xaxis.set_major_locator(MaxNLocator(4))
            self._timeline = TimelineView(*data[:3], "link", data[3], ax=ax, max_rows=8, text=False)
        else:
            self._timeline.set_data(*data)
        self._time_png.set_animated(self._timeline.artists())
        self._time_png.use(key, [self._timeline.ax])    # the bars belong to this configuration
        self._timeline_state = state
        self.status.value = _esc(state.summary)
        if render:
            self._render_timeline(min(self.step.value, state.schedule.n_steps))

    def _on_step(self, change) -> None:
        if self.play.value != change["new"]:
            # Play and the slider agree in the kernel's state too
            self.play.value = change["new"]
        if not self._configuring and self.state is not None:
            self._render(min(change["new"], self.state.schedule.n_steps))

    def _render(self, k: int) -> None:
        self._grid.show(k)
        self.grid_caption.value = _esc(f"{self._grid.caption}; {self._grid.chunk_text}")
        self.grid_img.value = self._grid_png.frame()
        if self._timeline_state is self.state:
            self._render_timeline(k)

    def _render_timeline(self, k: int) -> None:
        self._timeline.highlight(k)
        self.time_caption.value = _esc(f"{self._timeline.caption}; {self._timeline.step_caption}")
        self.time_img.value = self._time_png.frame()

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


def _esc(text: str) -> str:

    return html.escape(text)
