"""MeasuredVsPredicted: one measured configuration beside collsim's fitted model and NCCL's own.

Inputs: measurement files (runner JSON Lines, or nccl-tests output labelled
``label`` such as "Ring/LL"; read by ``collsim.fit.load_points``), a
parameters file written by ``collsim fit`` (``collsim.fit.load_params``) and
optionally an NCCL probe (``nccl_log``: an NCCL_DEBUG log or a runner file
with ``--nccl-probe``) whose printed tuning table gives NCCL's model
(``collsim.fit.compare.predictions``; without one NCCL's table is computed from
hardware defaults). Times are microseconds per AllReduce, sizes bytes per rank.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collsim.errors import CollsimError
from collsim.widgets import settle_heap


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
    """Measured and predicted times (µs) at sorted sizes (bytes) and |relative error| per point
    (collsim's model; ``nccl_us`` / ``nccl_abs_rel_error``: NCCL's tuning model, nan where it
    has no answer)."""

    sizes: np.ndarray
    measured_us: np.ndarray
    predicted_us: np.ndarray
    abs_rel_error: np.ndarray
    nccl_us: np.ndarray
    nccl_abs_rel_error: np.ndarray


def compare_points(points, params) -> Comparison:
    """Predict every point of one configuration with both models (``collsim.fit.compare.predictions``)."""
    from collsim.fit.compare import predictions
    from collsim.fit import abs_rel_errors

    if not points:
        raise CollsimError("no points to compare")
    keys = {(p.algo, p.proto, p.config) for p in points}
    if len(keys) != 1:
        raise CollsimError("compare_points needs points of one configuration")
    pts = sorted(points, key=lambda p: p.size)
    sizes = np.array([p.size for p in pts], dtype=np.int64)
    meas = np.array([p.time_us for p in pts])
    ours, theirs, _ = predictions(params, pts)
    return Comparison(sizes, meas, ours, abs_rel_errors(ours, meas), theirs, abs_rel_errors(theirs, meas))


class MeasuredVsPredicted:
    """Pick a configuration from the measurements; see measured points, the model's curve and errors.

    ``MeasuredVsPredicted(files, params_file, label=None, nccl_log=None)``;
    ``.config`` is the dropdown (set ``.value`` to a label), ``.comparison``
    the current ``Comparison``.
    """

    def __init__(self, files, params_file, label: str | None = None, nccl_log=None):
        import ipywidgets as W
        from matplotlib.figure import Figure

        from collsim.fit.points import load_points
        from collsim.nccl.params import load_params
        from collsim.viz.render import FramePNG

        points = load_points(list(files), label=label)
        if nccl_log is not None:
            from collsim.fit.compare import attach_probe

            attach_probe(points, nccl_log)
        self.groups = configurations(points)
        self.params = load_params(params_file)
        self.config = W.Dropdown(options=list(self.groups), description="configuration",
                                 layout=W.Layout(width="95%"))
        self.status = W.HTML()
        self.image = W.Image(format="png")
        fig = Figure(figsize=(7.5, 5), dpi=72)           # fixed margins: no layout engine per draw
        fig.subplots_adjust(left=0.11, right=0.98, bottom=0.1, top=0.98, hspace=0.08)
        self.ax, self.err_ax = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
        self.meas_line = self.ax.plot([], [], "o", ms=4, label="measured")[0]
        self.pred_line = self.ax.plot([], [], "-", lw=2, label="collsim model")[0]
        self.nccl_line = self.ax.plot([], [], "--", lw=1.5, label="NCCL's tuning model")[0]
        self.err_line = self.err_ax.plot([], [], ".-", label="collsim")[0]
        self.nccl_err_line = self.err_ax.plot([], [], ".--", label="NCCL")[0]
        self.ax.set(xscale="log", yscale="log", ylabel="time per AllReduce (µs)")
        self.err_ax.set(xscale="log", xlabel="message size (bytes)", ylabel="|error| (%)")
        self.ax.legend(fontsize=8)
        self.err_ax.legend(fontsize=7)
        self._png = FramePNG(fig)
        self.comparison = None
        self.config.observe(self._update, names="value")
        self._update()
        self.widget = W.VBox([self.config, self.status, self.image])
        settle_heap()

    def _update(self, change=None) -> None:
        from collsim.fit import summary
        from collsim.viz.timeline import nice_ceil

        c = compare_points(self.groups[self.config.value], self.params)
        self.comparison = c
        self.meas_line.set_data(c.sizes, c.measured_us)
        self.pred_line.set_data(c.sizes, c.predicted_us)
        self.nccl_line.set_data(c.sizes, c.nccl_us)
        self.err_line.set_data(c.sizes, 100 * c.abs_rel_error)
        self.nccl_err_line.set_data(c.sizes, 100 * c.nccl_abs_rel_error)
        self.ax.set_xlim(*_decades(c.sizes))
        self.ax.set_ylim(*_decades(np.r_[c.measured_us, c.predicted_us, c.nccl_us]))
        errors = 100 * np.r_[c.abs_rel_error, c.nccl_abs_rel_error]
        self.err_ax.set_ylim(0, nice_ceil(1.1 * np.nanmax(errors[np.isfinite(errors)], initial=0)))
        e = summary(c.abs_rel_error)
        n = summary(c.nccl_abs_rel_error[np.isfinite(c.nccl_abs_rel_error)])
        theirs = (f"NCCL's model median {100 * n['median_abs_rel_error']:.1f}%, "
                  f"p90 {100 * n['p90_abs_rel_error']:.1f}%" if n["n"] else "NCCL's model: no answer")
        self.status.value = (f"{e['n']} sizes; collsim median |error| {100 * e['median_abs_rel_error']:.1f}%, "
                             f"p90 {100 * e['p90_abs_rel_error']:.1f}%; {theirs}")
        self._png.use(self.config.value, [self.ax, self.err_ax])   # one background per configuration
        self.image.value = self._png.frame()

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


def _decades(values) -> tuple[float, float]:
    """Whole powers of ten around the positive finite ``values`` (log axes; (1, 10) if none)."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v) & (v > 0)]
    if not len(v):
        return 1.0, 10.0
    lo, hi = np.floor(np.log10(v.min())), np.ceil(np.log10(v.max()))
    return 10.0 ** lo, 10.0 ** max(hi, lo + 1)
