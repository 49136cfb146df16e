"""The measurement sets that calibrate and check the simulation's per-transfer costs
(``collsim.fit.simulated``), each predicted from a cluster description alone as ``collsim compare
--cluster`` does (``collsim.fit.cluster_compare``), and their errors per set.

Sets (paths relative to the repository; the cluster each ran on; in-place or out-of-place as the
commands in docs/accuracy.md and data/public/README.md score them):

- ``h200/...``: our 2 x H200 (``H200_CLUSTER``, described only), run 1 (data/h200x2/nccl-tests:
  nccl-tests -g 2, graph and eager; data/h200x2/runner: the runner, graph and eager) and runs 2, 4,
  5, 6 (other pairs of the same kind: nccl-tests imports with one process per GPU, the runner in
  graph timing; run 3 has only small-message alternations, data/h200x2/README.md);
- ``L01``, ``L15``: the two public calibration logs (data/public/README.md);
- ``P01``-``P06``: public checks, never fitted (descriptions from data/public/README.md's table).

``CALIBRATION`` names the sets the fit may train on (and then only on their even powers of two,
``collsim.fit.simulated.train_mask``); every other set, and every odd power of two, is held out.
"""
from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from collsim.fit import summary
from collsim.fit.cluster_compare import MIB, _series, as_ran, nccl_args
from collsim.machine import load_cluster
from collsim.machine.cluster import Cluster
from collsim.measure.files import load_file
from collsim.predict import predict_nccl

ROOT = Path(__file__).resolve().parents[2]
# data/h200x2/README.md, described only
H200_CLUSTER = Cluster("H200", 2, intra="nvswitch", nvls=False)
# (name, cluster, glob patterns, in-place)
SETS = [
    ("h200/nccl-tests graph", H200_CLUSTER, ["data/h200x2/nccl-tests/graph_*.log"], True),
    ("h200/nccl-tests eager", H200_CLUSTER, ["data/h200x2/nccl-tests/eager_*.log"], True),
    ("h200/runner graph", H200_CLUSTER, ["data/h200x2/runner/nvlink_*_graph.jsonl"], True),
    ("h200/runner eager", H200_CLUSTER, ["data/h200x2/runner/nvlink_*_eager.jsonl"], True),
    *[(f"h200/run{k}", H200_CLUSTER,
       [f"data/h200x2/run{k}/nccl-tests/*.jsonl", f"data/h200x2/run{k}/runner/*.jsonl"],
       True) for k in (2, 4, 5, 6)],
    ("L01", ("h100-nvlink", 1), ["data/public/L01_*.jsonl"], True),
    ("L15", ("h100-nvlink", 2), ["data/public/L15_*.jsonl"], False),
    ("P01", ("a3-mega", 2), ["data/public/P01_*.jsonl"], False),
    ("P02", Cluster("RTX4090", 4, p2p=True, cpu="amd"), ["data/public/P02_*.jsonl"], False),
    ("P03", ("p4d", 2), ["data/public/P03_*.jsonl"], False),
    ("P04", ("p4d", 3), ["data/public/P04_*.jsonl"], False),
    ("P05", ("p4d", 4), ["data/public/P05_*.jsonl"], False),
    ("P06", ("p4d", 2), ["data/public/P06_*.jsonl"], False),
]
CALIBRATION = ("h200/nccl-tests graph", "h200/nccl-tests eager", "h200/runner eager", "L01", "L15")


@dataclass(frozen=True)
class Series:
    """One measured file as ``compare --cluster`` predicts it: its cluster, the arguments of
    ``predict_nccl`` after the sizes, its sizes (bytes) and measured times (us)."""

    set: str
    file: str
    cluster: Cluster
    args: tuple
    sizes: np.ndarray
    times: np.ndarray

    def predict(self, base=None) -> np.ndarray:
        """collsim's times (us) of the series' sizes, the simulation starting from ``base``
        (``predict_nccl``)."""
        rows = predict_nccl(self.cluster, self.sizes, *self.args, base=base)["rows"]
        return np.array([r["time_us"] for r in rows])


def _cluster(spec) -> Cluster:
    return spec if isinstance(spec, Cluster) else load_cluster(*spec)


def load_series(names=None) -> list[Series]:
    """Every file of the sets ``names`` (default all of ``SETS``) as ``Series``."""
    out = []
    for name, spec, patterns, inplace in SETS:
        if names is not None and name not in names:
            continue
        cluster = _cluster(spec)
        for path in sorted(p for pat in patterns for p in glob.glob(str(ROOT / pat))):
            out.append(file_series(name, cluster, path, inplace, str(Path(path).relative_to(ROOT))))
    return out


def file_series(name: str, cluster: Cluster, path, inplace: bool, shown: str | None = None,
                label: str | None = None) -> Series:
    """The measured file ``path`` (``label``: its ALGO/PROTO where its name does not say) as a
    ``Series`` of set ``name`` on ``cluster`` as the file ran it
    (``collsim.fit.cluster_compare.as_ran``); ``shown``: its name."""
    m = load_file(path, label)
    meta = m.meta
    sizes, times = _series(m, inplace)
    harness, env = nccl_args(meta)
    args = (meta.get("algo") or "default", meta.get("proto") or "default", env, harness,
            meta.get("timing") or "eager", meta.get("gpus_per_process"))
    return Series(name, shown or str(path), as_ran(cluster, meta), args, sizes, times)


def score(series: list[Series], base=None, predicted: dict | None = None) -> dict:
    """Per set: median and p90 |time error| over all sizes, from 1 MiB, and over the held-out (odd
    power of two or not a power of two) sizes; ``predicted``: times already computed, by file."""
    by_set: dict = {}
    for s in series:
        pred = predicted[s.file] if predicted is not None else s.predict(base)
        err = np.abs(pred / s.times - 1)
        by_set.setdefault(s.set, []).append((err, s.sizes))
    out = {}
    for name, parts in by_set.items():
        err, sizes = np.concatenate([e for e, _ in parts]), np.concatenate([z for _, z in parts])
        odd = np.log2(sizes) % 2 != 0
        out[name] = {"all": summary(err), "from_1MiB": summary(err[sizes >= MIB]),
                     "held_out": summary(err[odd])}
    return out


def table(before: dict, after: dict | None = None) -> str:
    """A Markdown table of ``score`` results (median / p90 in %), side by side when ``after`` is
    given."""
    def cell(s):
        return f"{100 * s['median_abs_rel_error']:.1f} / {100 * s['p90_abs_rel_error']:.1f}" if s[
            "n"] else "-"
    cols = ("all", "from_1MiB", "held_out")
    head = "| set | n | " + " | ".join(f"{c} before" + (f" | {c} after" if after else "")
                                       for c in cols) + " |"
    lines = [head, "|" + "---|" * (2 + len(cols) * (2 if after else 1))]
    for name, b in before.items():
        cells = [cell(b[c]) + (f" | {cell(after[name][c])}" if after else "") for c in cols]
        lines.append(f"| {name} | {b['all']['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
