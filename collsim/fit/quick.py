"""A quick run of the user's own machine calibrates what its description cannot know: ``fit_quick``
(``collsim fit --cluster my.yaml quick.txt -o fitted.yaml``).

The run: nccl-tests output or the runner's JSON Lines, NCCL's default choice (or whatever the file
forced), a few sizes (``collsim.inputs.QUICK_SIZES``: 8 B, 64 KiB, 8 MiB, 256 MiB, 1 GiB, what
``runners/allreduce_bench.py --quick`` measures; any sizes will do). The inputs fitted
(``collsim.machine.provenance.FITTED``): the ring's efficiency inside a node (``intra_efficiency``)
and the GPU-side per-step costs (``step_scale``), and on several nodes the share of a NIC's line
rate (``nic_efficiency``) and the network hop of a small message (``hop_us``).

Method: ``scipy.optimize.least_squares`` ("trf", bounds ``FITTED``'s, 2-point differences of
relative step ``DIFF_STEP``, the robust ``LOSS`` of scale ``F_SCALE``) on log(predicted / measured)
of ``collsim.predict.predict_nccl`` through the simulation, over every measured size, each input in
log space with a weak pull (``PRIOR`` x sqrt(points)) to the description's own value, so that an
input the sizes cannot see (the NICs on a run of one size) stays where the description put it. A run
under a harness whose per-call cost collsim never measured (nccl-tests -G with one process per GPU,
``collsim.predict.ranges.harness_input``) fits that cost instead of the per-step cost, which would
absorb it: written as that harness's (``calibrated``'s ``harness`` and ``harness_us``: added to that
harness's rows only). The result is the description with a ``calibrated`` record
(``Cluster.calibrated``): predict-nccl, simulate and diagnose read it, and its ranges narrow
(``collsim.predict.ranges``: those inputs now come from a run of this machine). Report the error on
sizes and algorithms the fit did not see (``collsim compare``; docs/accuracy.md, "Quick run", leaves
each public log's other sizes out).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from collsim.errors import CollsimError
from collsim.fit import summary
from collsim.fit.sim_sets import Series, file_series
from collsim.machine.cluster import Cluster
from collsim.machine.provenance import FITTED
from collsim.nccl import PROTOS
from collsim.predict import predict_nccl
from collsim.predict.costs import NET_LAT
from collsim.predict.ranges import harness_key

PRIOR = 0.3         # pull per e-fold away from the description's value, x sqrt(points)
# a size the model misses (a plugin's ramp, a choice NCCL made otherwise) hardly pulls
LOSS = "cauchy"
F_SCALE = 0.05      # from 5% of misfit on, a size's pull fades (ln(1 + (r / 0.05)^2))
DIFF_STEP = 1e-2    # relative step of the finite differences (the simulation is piecewise smooth)
MAX_NFEV = 30       # least-squares evaluations (each one simulation of the run's sizes)
MACHINE = ("intra_efficiency", "nic_efficiency", "hop_us", "step_scale")
ONE_NODE = ("intra_efficiency", "step_scale")
# bound of the per-call cost fitted for a harness collsim never measured (us)
HARNESS_US = 50.0
HARNESS_SCALE_US = 10.0  # its prior's unit (us)
SMALL_BYTES = 64 << 10   # sizes whose gap starts that cost


def quick_series(cluster: Cluster, paths, label: str | None = None,
                 inplace: bool = True) -> list[Series]:
    """The measured files ``paths`` as ``Series`` on ``cluster`` (one line naming the file where one
    is not a run of this cluster's size)."""
    out = []
    for path in paths:
        try:
            s = file_series(Path(path).name, cluster, path, inplace, str(path), label)
        except CollsimError as e:
            raise CollsimError(f"{path}: {e}") from None
        out.append(s)
    return out


def start_values(cluster: Cluster) -> dict:
    """The description's own value of each input ``fit_quick`` fits (``FITTED``'s names)."""
    hop = cluster.hop_us if cluster.hop_us is not None else NET_LAT["Ring"][PROTOS.index("LL")]
    names = ONE_NODE if cluster.nccl_view().nodes == 1 else MACHINE
    values = {"intra_efficiency": cluster.intra_efficiency, "step_scale": cluster.step_scale,
              "nic_efficiency": cluster.nic_efficiency, "hop_us": hop}
    return {k: float(values[k]) for k in names}


def calibrated(cluster: Cluster, values: dict, source: str) -> Cluster:
    """``cluster`` whose ``calibrated`` record holds ``values`` (fitted on ``source``)."""
    return replace(cluster, calibrated={"source": source, **values})


def fit_quick(cluster: Cluster, paths, label: str | None = None, inplace: bool = True,
              max_nfev: int = MAX_NFEV) -> dict:
    """{"cluster": the calibrated Cluster, "values": fitted inputs, "start": the description's,
    "before" and "after": median/p90 |time error| over the run's sizes, "points"} (module
    docstring)."""
    series = quick_series(cluster, paths, label, inplace)
    return fit_series(cluster, series, ", ".join(Path(p).name for p in paths), max_nfev)


def fit_series(cluster: Cluster, series: list[Series], source: str,
               max_nfev: int = MAX_NFEV) -> dict:
    """``fit_quick`` on measured ``series`` (``source``: what they are, for the ``calibrated``
    record)."""
    from scipy.optimize import least_squares
    n = sum(len(s.sizes) for s in series)
    if n < 2:
        raise CollsimError("a quick run needs at least 2 measured sizes "
                           "(runners/allreduce_bench.py --quick measures 5)")
    start = start_values(cluster)
    harness = next((h for h in map(_unmeasured_harness, series) if h), None)
    # its per-call cost, not the GPUs' per-step costs, is what is not known
    if harness:
        start.pop("step_scale")
    names = list(start)
    x0 = np.append(np.log([start[k] for k in names]), 0.0)
    lo = np.append(np.log([FITTED[k][1] for k in names]) + 1e-6, -HARNESS_US if harness else -1e-9)
    hi = np.append(np.log([FITTED[k][2] for k in names]) - 1e-6, HARNESS_US if harness else 1e-9)
    times = np.concatenate([s.times for s in series])
    scale = np.append(np.ones(len(names)), 1 / HARNESS_SCALE_US)

    def values_of(x):
        out = {k: float(f"{v:.4g}") for k, v in zip(names, np.exp(x[:-1]))}
        return {**out, "harness": harness, "harness_us": round(float(x[-1]), 2)} if harness else out

    def predicted(x):
        c = calibrated(cluster, values_of(x), source)
        return np.concatenate([replace(s, cluster=replace(c, extra=s.cluster.extra)).predict()
                               for s in series])

    def residuals(x):
        return np.concatenate([np.log(predicted(x) / times), PRIOR * np.sqrt(n) * scale * (x - x0)])

    first = x0.copy()
    # start from the small sizes' gap, which a robust loss alone would reject
    if harness:
        small = np.concatenate([s.sizes for s in series]) <= SMALL_BYTES
        gap = times - np.concatenate([s.predict() for s in series])
        first[-1] = float(np.clip(np.median(gap[small]), -HARNESS_US + 1,
                                  HARNESS_US - 1)) if small.any() else 0.0
    res = least_squares(residuals, first, bounds=(lo, hi), diff_step=DIFF_STEP, max_nfev=max_nfev,
                        method="trf",
                        loss=LOSS, f_scale=F_SCALE)
    values = values_of(np.clip(res.x, lo, hi))
    before = np.abs(np.concatenate([s.predict() for s in series]) / times - 1)
    after = np.abs(predicted(np.clip(res.x, lo, hi)) / times - 1)
    return {"cluster": calibrated(cluster, values, source), "values": {k: values[k] for k in names},
            "start": start, "before": summary(before), "after": summary(after), "points": n,
            "harness": harness, "harness_us": values.get("harness_us")}


def _unmeasured_harness(s: Series) -> str | None:
    """The harness ``s`` ran under (``collsim.predict.ranges.harness_key``) where collsim never
    measured its per-call cost (``collsim.predict.ranges.harness_input``), else None."""
    r = predict_nccl(s.cluster, s.sizes[:1], *s.args)
    return harness_key(r["harness"], r["timing"], r["gpus_per_process"]) if r["inputs"]["harness"][
        "kind"] == "assumed" else None
