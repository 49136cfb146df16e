"""CostExplorer: alpha-beta closed forms of AllReduce algorithms on one or several nodes, and where
the fastest one changes.

Link parameters are given as latency (µs) and bandwidth (GB/s = 1e9 B/s): alpha = latency, beta =
1 / bandwidth (s/B). The machine is ``nodes`` x ``gpus_per_node`` GPUs (P = their product, so every
P it shows is one a machine can have) with ``nics_per_node`` NICs per node of the inter-node rate.

* One node: ring, tree (NCCL's double binary tree, 512 KiB pipeline chunks), recursive doubling and
  halving-doubling on the intra-node link (``collsim.cost.closed_form``, exact closed forms).
* Several nodes: the same flat algorithms as one ring or tree on one channel, every step paying the
  inter-node link of one NIC (lock-step: each step waits for its slowest hop); "ring (NCCL rails)":
  NCCL's ring on 2G channels over every NIC (``collsim.cost.rail_ring``, an approximation of the
  simulated rail rings); "hierarchical": reduce-scatter inside nodes, an inter-node ring of each
  GPU's shard (GPUs that share a NIC share its bandwidth), all-gather inside nodes.
"""
from __future__ import annotations

import html

import numpy as np

from collsim.core.collective import ALLREDUCE
from collsim.cost import closed_form, rail_ring
from collsim.errors import CollsimError
from collsim.sweep import sweep
from collsim.viz.curves import CurvesView
from collsim.viz.render import FramePNG
from collsim.widgets import settle_heap

FLAT = ("ring", "double-tree", "recursive-doubling", "halving-doubling")
RAILS, HIER = "ring (NCCL rails)", "hierarchical"
CURVES = FLAT + (RAILS, HIER)
MAX_NODES, MAX_GPUS = 128, 16


def closed_series(sizes, nodes: int, gpus_per_node: int, intra: tuple[float, float],
                  inter: tuple[float, float], nics_per_node: int = 1) -> dict[str, np.ndarray]:
    """Closed-form times (seconds) at ``sizes`` (bytes per rank) on ``nodes`` x ``gpus_per_node``
    GPUs; ``intra``/``inter`` are (alpha s, beta s/byte) of the intra-node link and of one NIC.

    One node: the ``FLAT`` algorithms on ``intra``. Several nodes: ``FLAT`` on ``inter`` (one NIC),
    ``RAILS`` (``collsim.cost.rail_ring`` with ``nics_per_node``) and ``HIER`` (inter-node beta
    times the GPUs sharing each NIC). One GPU per node: every link is a NIC, so ``FLAT`` on
    ``inter`` only.
    """

    g, n = int(gpus_per_node), int(nodes)
    if g < 1 or n < 1 or not 1 <= nics_per_node <= g:
        raise CollsimError(f"need nodes >= 1 and 1 <= NICs per node <= GPUs per node, got {n} x "
                           f"{g}, {nics_per_node} NICs")
    P = n * g
    if P < 2:
        raise CollsimError("an AllReduce needs at least 2 GPUs")
    flat_alpha, flat_beta = intra if n == 1 else inter
    t = sweep(list(FLAT), P, sizes, alpha=flat_alpha, beta=flat_beta, method="closed", itemsize=1)
    out = {name: t["time_s"][t["algo"] == name] for name in FLAT}
    if n > 1 and g > 1:
        nb = np.asarray(sizes, np.int64)
        out[RAILS] = np.asarray(rail_ring(P, nb, g, nics_per_node, *intra, *inter), float)
        out[HIER] = np.asarray(closed_form("hierarchical", P, nb, *intra, gpus_per_node=g,
                                           alpha_inter=inter[0],
                                           beta_inter=inter[1] * g / nics_per_node), float)
    return out


def size_grid(log2_min: int, log2_max: int, per_octave: int = 2) -> np.ndarray:
    """Sizes 2**log2_min .. 2**log2_max bytes, ``per_octave`` points per doubling (whole bytes)."""
    if not 0 <= log2_min < log2_max <= 40:
        raise CollsimError(f"size range 2^{log2_min}..2^{log2_max} B is not 0 <= min < max <= 40")
    n = (log2_max - log2_min) * per_octave + 1
    return np.unique(np.round(np.logspace(log2_min, log2_max, n, base=2)).astype(np.int64))


class CostExplorer:
    """Sliders for the links, nodes, GPUs and NICs per node, the size range; live curves.

    ``.widget`` is the box to display; the controls are attributes (set ``.value`` from code);
    ``.crossings`` holds the sizes where the fastest algorithm changes
    (``collsim.viz.curves.Crossover``), ``.series`` the plotted times and ``.ranks`` P. Every
    control value is valid by construction (P = nodes x GPUs per node; the NIC slider's range
    follows GPUs per node; the size range keeps min < max); should an update still fail, a
    message line says why and the picture and every control keep working (the time/busbw
    toggle redraws the last good curves).
    """

    def __init__(self, nodes: int = 8, gpus_per_node: int = 8, latency_us: float = 2.0,
                 bandwidth_GBps: float = 360.0, inter_latency_us: float = 8.0,
                 inter_bandwidth_GBps: float = 46.0, nics_per_node: int | None = None):
        import ipywidgets as W


        log = dict(base=10, continuous_update=False, readout_format=".3g")
        self.latency = W.FloatLogSlider(value=latency_us, min=-1, max=3,
                                        description="α intra (µs)", **log)
        self.bandwidth = W.FloatLogSlider(value=bandwidth_GBps, min=-1, max=3,
                                          description="intra GB/s", **log)
        self.inter_latency = W.FloatLogSlider(value=inter_latency_us, min=-1, max=3,
                                              description="α inter (µs)", **log)
        self.inter_bandwidth = W.FloatLogSlider(value=inter_bandwidth_GBps, min=-1, max=3,
                                                description="NIC GB/s", **log)
        self.nodes = W.IntSlider(value=nodes, min=1, max=MAX_NODES, description="nodes",
                                 continuous_update=False)
        self.gpus_per_node = W.IntSlider(value=gpus_per_node, min=1, max=MAX_GPUS,
                                         description="GPUs/node", continuous_update=False)
        nics = gpus_per_node if nics_per_node is None else nics_per_node
        self.nics = W.IntSlider(value=nics, min=1, max=gpus_per_node, description="NICs/node",
                                continuous_update=False)
        self.sizes = W.IntRangeSlider(value=(3, 32), min=0, max=36, description="log2 bytes",
                                      continuous_update=False)
        self.kind = W.ToggleButtons(options=["time", "busbw"], value="time")
        self.machine = W.HTML()
        self.status = W.HTML()
        self.image = W.Image(format="png")
        self.error = ""
        self.views = {k: CurvesView(CURVES, kind=k) for k in ("time", "busbw")}
        self._png = {k: FramePNG(v.fig, v.artists()) for k, v in self.views.items()}
        self.crossings, self.series, self._sizes = [], {}, None
        self._busy = False
        self.gpus_per_node.observe(self._on_gpus, names="value")
        self.sizes.observe(self._on_sizes, names="value")
        for w in (self.latency, self.bandwidth, self.inter_latency,
                  self.inter_bandwidth, self.nodes, self.nics, self.sizes, self.kind):
            w.observe(self._update, names="value")
        self._update()
        # draw the busbw view's background now: the first toggle is then a blit
        if self._sizes is not None:
            self._draw(self._sizes, self.series, self._P, kind="busbw", show=False)
        self._machine_row = W.HBox([self.nodes, self.gpus_per_node, self.nics])
        # the largest range a NICs slider's front end was created with
        self._nics_top = self.nics.max
        self.widget = W.VBox([W.HBox([self.latency, self.bandwidth]),
                              W.HBox([self.inter_latency, self.inter_bandwidth]),
                              self._machine_row,
                              W.HBox([self.sizes, self.kind]), self.machine, self.status,
                              self.image])
        settle_heap()

    @property
    def ranks(self) -> int:
        """P: nodes x GPUs per node."""
        return self.nodes.value * self.gpus_per_node.value

    def _on_gpus(self, change) -> None:
        """The NIC slider's range follows GPUs per node (its value clipped into it), then one
        update."""
        self._busy = True
        try:
            top = max(change["new"], 1)
            if top > self._nics_top:
                self._new_nics_slider(top)
            self.nics.max = top
            self.nics.value = min(self.nics.value, self.nics.max)
        finally:
            self._busy = False
        self._update()

    def _new_nics_slider(self, top: int) -> None:
        """A NICs slider of range 1..top in place of the old one: ipywidgets 8's slider keeps the
        range it was created with for its End key (``ScheduleExplorer._new_step_slider`` says why),
        so End would stop at the old maximum after the range grew."""
        import ipywidgets as W

        old = self.nics
        old.unobserve(self._update, names="value")
        self.nics = W.IntSlider(value=old.value, min=1, max=top, description="NICs/node",
                                continuous_update=False)
        self.nics.observe(self._update, names="value")
        self._machine_row.children = (self.nodes, self.gpus_per_node, self.nics)
        old.close()
        self._nics_top = top

    def _on_sizes(self, change) -> None:
        """Keep min < max: a range squeezed to one value widens by one octave."""
        lo, hi = change["new"]
        if lo >= hi:
            self.sizes.value = (lo, lo + 1) if lo < self.sizes.max else (hi - 1, hi)

    def _update(self, change=None) -> None:
        if self._busy:
            return
        g, n, nics = self.gpus_per_node.value, self.nodes.value, self.nics.value
        P = n * g
        self.machine.value = (f"P = {n} node(s) x {g} GPU(s) = <b>{P}</b> ranks"
                              + (f", {nics} NIC(s) per node: flat algorithms use one NIC per node "
                                 "boundary, NCCL's rails and hierarchical use all "
                                 f"{nics}" if n > 1 else ", one node"))
        try:
            sizes = size_grid(*self.sizes.value)
            series = closed_series(sizes, n, g,
                                   (self.latency.value * 1e-6, 1e-9 / self.bandwidth.value),
                                   (self.inter_latency.value * 1e-6,
                                    1e-9 / self.inter_bandwidth.value),
                                   nics)
        except CollsimError as e:
            self.error = str(e)
            self.status.value = (f"<b style='color:#b00'>{_esc(self.error)}</b> (showing the last "
                                 "valid curves)")
            if self._sizes is not None:
                self._draw(self._sizes, self.series, self._P)
            return
        self.error, self.series, self._sizes, self._P = "", series, sizes, P
        self._draw(sizes, series, P)
        rows = "".join(f"<li>{c.size:,.0f} B: {_esc(c.faster_below)} → {_esc(c.faster_above)}</li>"
                       for c in self.crossings) or "<li>none in this range</li>"
        self.status.value = ("where the fastest algorithm changes (faster below → faster "
                             f"above):<ul>{rows}</ul>")

    def _draw(self, sizes, series, P, kind: str | None = None, show: bool = True) -> None:

        kind = kind or self.kind.value
        view = self.views[kind]
        self.crossings = view.update(sizes, series, factor=ALLREDUCE.busbw_factor(P),
                                     fastest_only=True, title=f"alpha-beta closed forms, P={P}")
        png = self._png[kind]
        png.use(view.limits())                   # a background per limits: ticks drawn once each
        frame = png.frame()
        if show:
            self.image.value = frame

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


def _esc(text: str) -> str:

    return html.escape(text)
