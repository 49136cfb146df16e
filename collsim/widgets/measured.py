"""MeasuredVsPredicted: one measured configuration beside collsim's fitted NCCL-shaped model.

Inputs: measurement files (runner JSON Lines, or nccl-tests output labelled
``label`` such as "Ring/LL"; read by ``collsim.fit.load_points``) and a
parameters file written by ``collsim fit`` (``collsim.fit.load_params``).
Times are microseconds per AllReduce, sizes bytes per rank.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collsim.errors import CollsimError


def config_label(point) -> str:
    """Human label of a point's configuration: 'Ring/LL, 2 ranks on 1 node, graph (...)'."""
    c = point.config
    what = f"{point.algo}/{point.proto}" if point.algo else "NCCL's choice"
    text = f"{what}, {c.ranks} ranks on {c.nodes} node(s), {c.intra}, {c.timing}"
    if c.buffsize:
        text += f", NCCL_BUFFSIZE={c.buffsize}"
    if c.channels:
        text += f", {c.channels} channels"
    return text


def configurations(points) -> dict[str, list]:
    """Points grouped by configuration label; only labelled (algorithm/protocol) ones are predictable."""
    out: dict[str, list] = {}
    for p in points:
        if p.algo is not None and p.proto is not None:
            out.setdefault(config_label(p), []).append(p)
    if not out:
        raise CollsimError("no measurement names its algorithm and protocol: nothing to predict")
    return dict(sorted(out.items()))


@dataclass
class Comparison:
    """Measured and predicted times (µs) at sorted sizes (bytes) and |relative error| per point."""

    sizes: np.ndarray
    measured_us: np.ndarray
    predicted_us: np.ndarray
    abs_rel_error: np.ndarray


def compare_points(points, params) -> Comparison:
    """Predict every point of one configuration with ``collsim.nccl_model.predict``."""
    from collsim.fit import abs_rel_errors
    from collsim.nccl_model import predict

    if not points:
        raise CollsimError("no points to compare")
    keys = {(p.algo, p.proto, p.config) for p in points}
    if len(keys) != 1:
        raise CollsimError("compare_points needs points of one configuration")
    algo, proto, cfg = keys.pop()
    pts = sorted(points, key=lambda p: p.size)
    sizes = np.array([p.size for p in pts], dtype=np.int64)
    meas = np.array([p.time_us for p in pts])
    pred = np.asarray(predict(params, algo, proto, sizes, cfg), dtype=float)
    return Comparison(sizes, meas, pred, abs_rel_errors(pred, meas))


class MeasuredVsPredicted:
    """Pick a configuration from the measurements; see measured points, the model's curve and errors.

    ``MeasuredVsPredicted(files, params_file, label=None)``; ``.config`` is the
    dropdown (set ``.value`` to a label), ``.comparison`` the current
    ``Comparison``.
    """

    def __init__(self, files, params_file, label: str | None = None):
        import ipywidgets as W
        from matplotlib.figure import Figure

        from collsim.fit import load_params, load_points
        from collsim.viz.render import FramePNG

        self.groups = configurations(load_points(list(files), label=label))
        self.params = load_params(params_file)
        self.config = W.Dropdown(options=list(self.groups), description="configuration",
                                 layout=W.Layout(width="95%"))
        self.status = W.HTML()
        self.image = W.Image(format="png")
        fig = Figure(figsize=(7.5, 5), dpi=72, layout="constrained")
        self.ax, self.err_ax = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
        self.meas_line = self.ax.plot([], [], "o", ms=4, label="measured")[0]
        self.pred_line = self.ax.plot([], [], "-", lw=2, label="collsim model")[0]
        self.err_line = self.err_ax.plot([], [], ".-")[0]
        self.ax.set(xscale="log", yscale="log", ylabel="time per AllReduce (µs)")
        self.err_ax.set(xscale="log", xlabel="message size (bytes)", ylabel="|error| (%)")
        self.ax.legend(fontsize=8)
        self._png = FramePNG(fig)
        self.comparison = None
        self.config.observe(self._update, names="value")
        self._update()
        self.widget = W.VBox([self.config, self.status, self.image])

    def _update(self, change=None) -> None:
        from collsim.fit import summary

        c = compare_points(self.groups[self.config.value], self.params)
        self.comparison = c
        self.meas_line.set_data(c.sizes, c.measured_us)
        self.pred_line.set_data(c.sizes, c.predicted_us)
        self.err_line.set_data(c.sizes, 100 * c.abs_rel_error)
        for ax in (self.ax, self.err_ax):
            ax.relim()
            ax.autoscale_view()
        e = summary(c.abs_rel_error)
        self.status.value = (f"{e['n']} sizes; median |error| {100 * e['median_abs_rel_error']:.1f}%, "
                             f"p90 {100 * e['p90_abs_rel_error']:.1f}%")
        self._png.use(self.config.value)         # one background per configuration, drawn once
        self.image.value = self._png.frame()

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
