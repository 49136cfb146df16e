"""MeasuredVsPredicted: measured AllReduce times beside collsim's fitted model and NCCL's own, and
where collsim says the time goes.

Pick a **run** (every bundled sweep of a data folder: ``bundled_runs``; or your own files, by path
or upload), then a **configuration** of it (an algorithm/protocol, or NCCL's choice). The figure
shows the measured points, collsim's curve (solid) and NCCL's model (dashed), both errors per size
(``collsim.viz.measured.MeasuredPanel``, the panel of ``collsim compare --plot``), and a stacked
bar per size of collsim's predicted time split into its terms (``collsim.fit.compare.term_shares``,
``collsim.fitted.model.explain``): latency, bandwidth, protocol (LL/LL128's flag bytes), channels,
fill, steps, sync (per-step barriers), harness, launch ...

Each run is compared once, when first shown (``collsim.fit.compare.compare``, all points); later
visits reuse it. Anything that goes wrong (a file that is not a measurement, a run whose files are
missing) is one line in the status and leaves the widget as it was. Times are microseconds per
AllReduce, sizes bytes per rank.
"""
from __future__ import annotations

import html
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from collsim.fit.compare import attach_probe, compare, config_name, term_shares
from collsim.fit.overheads import with_overheads
from collsim.fit.points import load_points
from collsim.fitted.params import load_params
from collsim.viz.measured import MeasuredPanel, SharesPanel
from collsim.viz.render import FramePNG
from collsim.widgets import in_widget, settle_heap

OWN = "your files"
# the CLI's phrases in the loaders' messages, as this widget says them
FIELDS = {"(nccl-tests logs: pass --label ALGO/PROTO)":
          "(nccl-tests logs: the configuration in the file's name)",
          "pass --label ALGO/PROTO":
          "put the configuration in the file's name (e.g. graph_Ring_LL.log)"}


@dataclass(frozen=True)
class Run:
    """One bundled run: its measurement files, the parameters file that predicts it, the NCCL probe
    whose table gives NCCL's model, and A/B files that measure a harness term the parameters
    lack."""

    files: tuple
    params: Path
    probe: Path | None = None
    overhead_from: tuple = field(default=())
    fitted: bool = False          # the parameters were fitted on this run's even sizes


def bundled_runs(data) -> dict[str, Run]:
    """Every bundled sweep of a data folder laid out as ``data/h200x2`` (its README): run 1's
    runner (graph, eager), nccl-tests (graph), emulated nodes and NCCL_* settings with
    ``params.json``; runs 2-6's runner and nccl-tests sweeps with ``run2/params.json`` (nccl-tests'
    per-call term measured from that run's two default sweeps). Runs whose files are absent are
    left out."""
    d = Path(data)
    probe = d / "runner" / "nvlink_default_eager.jsonl"
    probe = probe if probe.exists() else None
    p1, p2 = d / "params.json", d / "run2" / "params.json"
    runs = {}

    def add(name, files, params, overhead=(), fitted=False):
        files = tuple(sorted(files))
        if files and params.exists():
            runs[name] = Run(files, params, probe, tuple(overhead), fitted)

    add("run 1: runner, CUDA graphs", d.glob("runner/nvlink_*_graph.jsonl"), p1, fitted=True)
    add("run 1: runner, eager", d.glob("runner/nvlink_*_eager.jsonl"), p1)
    add("run 1: nccl-tests, CUDA graphs", d.glob("nccl-tests/graph_*_*.log"), p1)
    add("run 1: 2 emulated nodes (sockets)", d.glob("runner/emu2_*.jsonl"), p1)
    add("run 1: NCCL_* settings (vars/)", d.glob("vars/*.jsonl"), p1)
    for run in sorted(d.glob("run[0-9]*"), key=lambda x: int(x.name[3:])):
        n = run.name[3:]
        add(f"run {n}: runner, CUDA graphs", run.glob("runner/nvlink_*_graph.jsonl"), p2,
            fitted=n == "2")
        ab = (run / "runner" / "nvlink_default_graph.jsonl",
              run / "nccl-tests" / "graph_default.jsonl")
        add(f"run {n}: nccl-tests, CUDA graphs", run.glob("nccl-tests/graph_*.jsonl"), p2,
            ab if all(f.exists() for f in ab) else ())
        add(f"run {n}: runner --rotate, CUDA graphs",
            run.glob("rotate_sweeps/nvlink_*_graph_rotate.jsonl"), p2)
    return runs


class MeasuredVsPredicted:
    """Pick a run and a configuration; see its measured points, both models' curves, their errors
    and where collsim's predicted time goes.

    ``MeasuredVsPredicted(data=folder)`` (or ``MeasuredVsPredicted(folder)``) offers every run of
    ``bundled_runs(folder)``; ``MeasuredVsPredicted(files, params_file, nccl_log=...)`` shows your
    own files (with ``data`` too: both). ``.run`` and ``.config`` are the dropdowns (set
    ``.value``), ``.path`` + ``.load`` (a button: ``load_files()``) and ``.upload`` bring your own
    files (predicted with the parameters of the run shown, or ``params_file``), ``.status`` says
    what is shown or what went wrong, ``.result`` is the run's ``compare`` result, ``.comparison``
    the shown configuration's entry of it (sizes, measured_us, model_us, nccl_us, and the error
    summaries collsim and nccl_model) and ``.shares`` (sizes, {term: share}) the stacked bars.
    """

    def __init__(self, files=None, params_file=None, label: str | None = None,
                 nccl_log=None, data=None, run: str | None = None):
        import ipywidgets as W
        from matplotlib.figure import Figure


        if isinstance(files, (str, Path)) and Path(files).is_dir():
            data, files = files, None                      # MeasuredVsPredicted(folder)
        self.runs = bundled_runs(data) if data is not None else {}
        self._params_file, self._label, self._probe = params_file, label, nccl_log
        self._cache: dict = {}                     # run name -> (points, params, result)
        self.run = W.Dropdown(options=list(self.runs), description="run",
                              layout=W.Layout(width="95%"))
        self.config = W.Dropdown(options=[], description="configuration",
                                 layout=W.Layout(width="95%"))
        self.path = W.Text(placeholder="your measurement files: paths separated by spaces (runner "
                                       ".jsonl, nccl-tests output)", layout=W.Layout(width="75%"))
        self.load = W.Button(description="load", layout=W.Layout(width="12%"))
        self.upload = W.FileUpload(accept=".jsonl,.log,.txt,.out", multiple=True,
                                   description="upload")
        self.status = W.HTML()
        self.image = W.Image(format="png")
        # fixed margins: no layout engine per draw
        fig = Figure(figsize=(7.5, 6.6), dpi=72)
        fig.subplots_adjust(left=0.11, right=0.80, bottom=0.08, top=0.95, hspace=0.12)
        top, bottom, shares = fig.subplots(3, 1, sharex=True, height_ratios=[3, 1.1, 1.3])
        self.panel = MeasuredPanel(top, bottom, {"configs": [], "points": "all"}, None, [])
        bottom.set_xlabel("")
        self.shares_panel = SharesPanel(shares)
        self._png = FramePNG(fig, [top.title])             # the title names the configuration
        self.points = self.params = self.result = self.comparison = None
        self.shares = None
        self._tmp = None
        # own loads so far: part of the background key
        self._loads = 0
        self.run.observe(self._on_run, names="value")
        self.config.observe(self._on_config, names="value")
        self.load.on_click(lambda _: self.load_files(self.path.value.split()))
        self.upload.observe(self._on_upload, names="value")
        if files:
            self.load_files(files, params_file)
        elif self.runs:
            self.run.value = run or next(iter(self.runs))
            self._on_run()
        self.widget = W.VBox([self.run, self.config, W.HBox([self.path, self.load]), self.upload,
                              self.status, self.image])
        settle_heap()

    # ------------------------------------------------------------------ data
    def _select(self, name: str, points, params, result) -> None:
        """Show run ``name``: its points, parameters and comparison (first configuration)."""
        self.points, self.params, self.result = points, params, result
        self.panel.result, self.panel.params = result, params
        self.panel.by_name = {config_name(p): p for p in points}
        self._run_name = name
        options = [c["config"] for c in result["configs"]]
        self.config.unobserve(self._on_config, names="value")
        try:
            self.config.options = options
            self.config.value = options[0]
        finally:
            self.config.observe(self._on_config, names="value")
        self._draw()

    def _compare(self, files, params_file, probe, overhead=(), label=None):

        points = load_points([str(f) for f in files], label=label)
        if not points:
            raise ValueError("no measured AllReduce points in these files")
        if probe is not None:
            attach_probe(points, probe)
        params = load_params(params_file)
        if overhead:
            params = with_overheads(params, load_points([str(f) for f in overhead]))
        return points, params, compare(params, points, holdout="all")

    def _on_run(self, change=None) -> None:
        name = self.run.value
        if name is None:
            return
        try:
            if name not in self._cache:
                r = self.runs[name]
                self._cache[name] = self._compare(r.files, r.params, r.probe, r.overhead_from)
            self._select(name, *self._cache[name])
        except Exception as e:                      # noqa: BLE001 - one line, the widget goes on
            self._error(name, e)

    def load_files(self, files, params_file=None) -> bool:
        """Compare your own measurement files (paths); True when shown. Predicted with
        ``params_file``, else the parameters of the run shown (else ``bundled_runs``' run 2 fit)."""
        files = [str(f) for f in files]
        if not files:
            self._error("load", ValueError("give one or more file paths"))
            return False
        params_file = params_file or self._params_file or (
            self.runs[self.run.value].params if self.run.value in self.runs else None)
        if params_file is None:
            self._error("load", ValueError("no parameters file: pass params_file"))
            return False
        try:
            shown = self._compare(files, params_file, self._probe, (), self._label)
        except Exception as e:                      # noqa: BLE001
            self._error(", ".join(Path(f).name for f in files), e)
            return False
        self._loads += 1
        self._cache[OWN] = shown
        self._select(OWN, *shown)
        return True

    def _on_upload(self, change=None) -> None:
        items = self.upload.value
        if not items:
            return
        self._tmp = self._tmp or tempfile.TemporaryDirectory(prefix="collsim-upload-")
        paths = []
        for item in items:
            path = Path(self._tmp.name) / Path(item["name"]).name
            path.write_bytes(bytes(item["content"]))
            paths.append(path)
        self.load_files(paths)

    def _error(self, what: str, e: Exception) -> None:
        text = in_widget(str(e).splitlines()[0], FIELDS) if str(e) else type(e).__name__
        shown = f"; still showing {self._describe()}" if self.comparison is not None else ""
        self.status.value = (f"<span style='color:#b00'>could not show {html.escape(what)}: "
                             f"{html.escape(text)}</span>" + html.escape(shown))

    def _describe(self) -> str:
        return f"{self._run_name}, {self.comparison['config']}"

    # ------------------------------------------------------------------ drawing
    def _on_config(self, change=None) -> None:
        try:
            self._draw()
        except Exception as e:                      # noqa: BLE001
            self._error(f"configuration {self.config.value}", e)

    def _draw(self) -> None:

        name = self.config.value
        c = self.comparison = self.panel.show([name])[0]
        pts = [p for p in self.points if config_name(p) == name]
        self.shares = term_shares(self.params, pts)
        self.shares_panel.show(*self.shares)
        ours, theirs = c["model"], c["nccl"]
        nccl = (f"nccl_us (NCCL's model) median {100 * theirs['median_abs_rel_error']:.1f}%, "
                f"p90 {100 * theirs['p90_abs_rel_error']:.1f}%" if theirs["n"]
                else "nccl_us: no answer")
        ours_text = ("model_us (collsim's fitted model) median |error| "
                     f"{100 * ours['median_abs_rel_error']:.1f}%, "
                     f"p90 {100 * ours['p90_abs_rel_error']:.1f}%" if ours["n"]
                     else "model_us: no answer")
        run = self.runs.get(self._run_name)
        scored = ("all scored; the parameters were fitted on this run's even sizes"
                  if run is not None and run.fitted
                  else "all scored; none of them fitted")
        unknown = self.result.get("unknown_harness") or []
        warn = (f" (harness {', '.join(unknown)}: its per-call overhead is not in these "
                "parameters, predicted without it)" if unknown else "")
        self.status.value = (f"{self._run_name}: {len(c['sizes'])} sizes ({scored}); {ours_text}; "
                             f"{nccl}{warn}")
        axes = [self.panel.top, self.panel.bottom, self.shares_panel.ax]
        key = (self._run_name, self._loads if self._run_name == OWN else 0, name)
        self._png.use(key, axes)                           # a background per run and configuration
        self.image.value = self._png.frame()

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
