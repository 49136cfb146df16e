"""MeasuredVsPredicted: one measured configuration beside collsim's fitted model and NCCL's own.

Inputs: measurement files (runner JSON Lines, or nccl-tests output labelled
``label`` such as "Ring/LL"; read by ``collsim.fit.points.load_points``), a
parameters file written by ``collsim fit`` (``collsim.nccl.params.load_params``) and
optionally an NCCL probe (``nccl_log``: an NCCL_DEBUG log or a runner file
with ``--nccl-probe``) whose printed tuning table gives NCCL's model
(``collsim.fit.compare.predictions``; without one NCCL's table is computed from
hardware defaults). Times are microseconds per AllReduce, sizes bytes per rank.

Every point is compared once, when the widget is built (``collsim.fit.compare.compare``,
all points); a configuration is one entry of that result, drawn by
``collsim.viz.measured.MeasuredPanel`` (the panel of ``collsim compare --plot`` and
``collsim demo``). Points that name no algorithm (NCCL's choice) are predicted with the
(algorithm, protocol) NCCL chose.
"""
from __future__ import annotations

from collsim.widgets import settle_heap


class MeasuredVsPredicted:
    """Pick a configuration from the measurements; see its measured points, both models' curves
    and their errors.

    ``MeasuredVsPredicted(files, params_file, label=None, nccl_log=None)``; ``.config`` is the
    dropdown (set ``.value`` to a configuration name, as ``collsim.fit.compare.config_name``),
    ``.result`` the ``compare`` result over every point and ``.comparison`` the shown
    configuration's entry of it (sizes, measured_us, collsim_us, nccl_model_us, and the error
    summaries collsim and nccl_model).
    """

    def __init__(self, files, params_file, label: str | None = None, nccl_log=None):
        import ipywidgets as W
        from matplotlib.figure import Figure

        from collsim.fit.compare import attach_probe, compare
        from collsim.fit.points import load_points
        from collsim.nccl.params import load_params
        from collsim.viz.measured import MeasuredPanel
        from collsim.viz.render import FramePNG

        points = load_points(list(files), label=label)
        if nccl_log is not None:
            attach_probe(points, nccl_log)
        self.params = load_params(params_file)
        self.result = compare(self.params, points, holdout="all")
        self.config = W.Dropdown(options=[c["config"] for c in self.result["configs"]],
                                 description="configuration", layout=W.Layout(width="95%"))
        self.status = W.HTML()
        self.image = W.Image(format="png")
        fig = Figure(figsize=(7.5, 5), dpi=72)           # fixed margins: no layout engine per draw
        fig.subplots_adjust(left=0.11, right=0.98, bottom=0.1, top=0.94, hspace=0.08)
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
        self.panel = MeasuredPanel(top, bottom, self.result, self.params, points)
        self._png = FramePNG(fig, [top.title])           # the title names the configuration
        self.comparison = None
        self.config.observe(self._update, names="value")
        self._update()
        self.widget = W.VBox([self.config, self.status, self.image])
        settle_heap()

    def _update(self, change=None) -> None:
        c = self.comparison = self.panel.show([self.config.value])[0]
        ours, theirs = c["collsim"], c["nccl_model"]
        nccl = (f"NCCL's model median {100 * theirs['median_abs_rel_error']:.1f}%, "
                f"p90 {100 * theirs['p90_abs_rel_error']:.1f}%" if theirs["n"] else "NCCL's model: no answer")
        self.status.value = (f"{len(c['sizes'])} sizes; collsim median |error| "
                             f"{100 * ours['median_abs_rel_error']:.1f}%, p90 {100 * ours['p90_abs_rel_error']:.1f}%; "
                             + nccl)
        self._png.use(self.config.value, [self.panel.top, self.panel.bottom])   # a background per configuration
        self.image.value = self._png.frame()

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
