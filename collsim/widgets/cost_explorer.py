"""CostExplorer: alpha-beta closed forms of ring, tree and hierarchical AllReduce, and where they cross.

Link parameters are given as latency (µs) and bandwidth (GB/s = 1e9 B/s):
alpha = latency, beta = 1 / bandwidth (s/B). With ``gpus_per_node`` below P
the machine has two levels; the flat algorithms (ring, tree, ...) then pay the
inter-node link at every step (their slowest hop), while hierarchical uses the
intra-node link inside nodes and the inter-node link between them.
"""
from __future__ import annotations

import numpy as np

from collsim.errors import CollsimError
from collsim.widgets import settle_heap

CURVES = ("ring", "tree", "recursive-doubling", "hierarchical")


def closed_series(sizes, ranks: int, gpus_per_node: int, intra: tuple[float, float],
                  inter: tuple[float, float]) -> dict[str, np.ndarray]:
    """Closed-form times (seconds) of each of ``CURVES`` at ``sizes`` (bytes per rank) from
    ``collsim.sweep.sweep(method="closed")``; ``intra``/``inter`` are (alpha s, beta s/byte).

    On two levels (1 < gpus_per_node < ranks) the flat algorithms pay the inter-node link and
    hierarchical appears (intra-node link inside nodes); on one level every curve but
    hierarchical uses ``intra``.
    """
    from collsim.sweep import sweep

    two_level = 1 < gpus_per_node < ranks
    flat_alpha, flat_beta = inter if two_level else intra
    tables = [sweep([c for c in CURVES if c != "hierarchical"], ranks, sizes, alpha=flat_alpha,
                    beta=flat_beta, method="closed", itemsize=1)]
    if two_level:
        tables.append(sweep("hierarchical", ranks, sizes, alpha=intra[0], beta=intra[1], method="closed",
                            itemsize=1, gpus_per_node=gpus_per_node, alpha_inter=inter[0],
                            beta_inter=inter[1]))
    return {name: t["time_s"][t["algo"] == name] for t in tables for name in dict.fromkeys(t["algo"])}


def size_grid(log2_min: int, log2_max: int, per_octave: int = 2) -> np.ndarray:
    """Sizes 2**log2_min .. 2**log2_max bytes, ``per_octave`` points per doubling (whole bytes)."""
    if not 0 <= log2_min < log2_max <= 40:
        raise CollsimError(f"size range 2^{log2_min}..2^{log2_max} B is not 0 <= min < max <= 40")
    n = (log2_max - log2_min) * per_octave + 1
    return np.unique(np.round(np.logspace(log2_min, log2_max, n, base=2)).astype(np.int64))


class CostExplorer:
    """Sliders for alpha, bandwidth, P, GPUs per node, inter-node link and size range; live curves.

    ``.widget`` is the box to display; the controls are attributes (set
    ``.value`` from code); ``.crossings`` holds the current crossovers
    (``collsim.viz.curves.Crossover``) and ``.series`` the plotted times.
    """

    def __init__(self, ranks: int = 16, latency_us: float = 2.0, bandwidth_GBps: float = 360.0,
                 gpus_per_node: int = 8, inter_latency_us: float = 8.0, inter_bandwidth_GBps: float = 46.0):
        import ipywidgets as W

        from collsim.viz.curves import CurvesView
        from collsim.viz.render import FramePNG

        log = dict(base=10, continuous_update=False, readout_format=".3g")
        self.latency = W.FloatLogSlider(value=latency_us, min=-1, max=3, description="α intra (µs)", **log)
        self.bandwidth = W.FloatLogSlider(value=bandwidth_GBps, min=-1, max=3,
                                          description="intra GB/s", **log)
        self.inter_latency = W.FloatLogSlider(value=inter_latency_us, min=-1, max=3,
                                              description="α inter (µs)", **log)
        self.inter_bandwidth = W.FloatLogSlider(value=inter_bandwidth_GBps, min=-1, max=3,
                                                description="inter GB/s", **log)
        self.ranks = W.IntSlider(value=ranks, min=2, max=1024, description="P (ranks)",
                                 continuous_update=False)
        self.gpus_per_node = W.IntSlider(value=gpus_per_node, min=1, max=16,
                                         description="GPUs/node", continuous_update=False)
        self.sizes = W.IntRangeSlider(value=(3, 32), min=0, max=36, description="log2 bytes",
                                      continuous_update=False)
        self.kind = W.ToggleButtons(options=["time", "busbw"], value="time")
        self.status = W.HTML()
        self.image = W.Image(format="png")
        self.error = ""
        self.views = {k: CurvesView(CURVES, kind=k) for k in ("time", "busbw")}
        self._png = {k: FramePNG(v.fig, v.artists()) for k, v in self.views.items()}
        self.crossings, self.series = [], {}
        for w in (self.latency, self.bandwidth, self.inter_latency, self.inter_bandwidth,
                  self.ranks, self.gpus_per_node, self.sizes, self.kind):
            w.observe(self._update, names="value")
        self._update()
        self.widget = W.VBox([W.HBox([self.latency, self.bandwidth]),
                              W.HBox([self.inter_latency, self.inter_bandwidth]),
                              W.HBox([self.ranks, self.gpus_per_node]),
                              W.HBox([self.sizes, self.kind]), self.status, self.image])
        settle_heap()

    def _update(self, change=None) -> None:
        from collsim.units import busbw_factor

        P = self.ranks.value
        try:
            sizes = size_grid(*self.sizes.value)
            series = closed_series(sizes, P, self.gpus_per_node.value,
                                   (self.latency.value * 1e-6, 1e-9 / self.bandwidth.value),
                                   (self.inter_latency.value * 1e-6, 1e-9 / self.inter_bandwidth.value))
        except CollsimError as e:
            self.error = str(e)
            self.status.value = f"<b style='color:#b00'>{e}</b>"
            return
        self.error, self.series = "", series
        view = self.views[self.kind.value]
        self.crossings = view.update(sizes, series, factor=busbw_factor(P),
                                     title=f"alpha-beta closed forms, P={P}")
        rows = "".join(f"<li>{c.size:,.0f} B: {c.faster_below} → {c.faster_above}</li>"
                       for c in self.crossings) or "<li>none in this range</li>"
        self.status.value = f"crossovers (faster below → faster above):<ul>{rows}</ul>"
        png = self._png[self.kind.value]
        png.use(view.limits())                   # a background per limits: ticks drawn once each
        self.image.value = png.frame()

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
