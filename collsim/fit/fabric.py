"""What a description cannot know, fitted from one measurement: ``fit_fabric(cluster, files)``.

A fabric that delivers less than its NICs' line rate (congested spine, adaptive routing off, a slow
plugin, ...) is described by ``Cluster.fabric_efficiency`` (0 < x <= 1). ``fit_fabric`` finds the x that
makes collsim's prediction from the description (``collsim.fit.cluster_compare.compare_cluster``) fit
measured multi-node runs best: the least squares of log(predicted / measured) over sizes from
``FROM_BYTES`` (where the network's bandwidth decides the time), by golden-section search on log x in
[``LOWEST``, 1]. Report the error on other measurements than the one fitted (``collsim compare``).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from collsim.errors import CollsimError
from collsim.fit.cluster_compare import compare_cluster
from collsim.machine.cluster import Cluster

FROM_BYTES = 256 << 20     # from here the network's bandwidth decides the time (256 MiB at 8 x 50 GB/s: 0.6 ms)
LOWEST = 0.02           # below 2% of line rate a fabric is broken, not inefficient
ROUNDS = 24             # golden-section rounds: the bracket shrinks to 0.618^24 of log(1/LOWEST), about 4e-5


def _misfit(cluster: Cluster, paths, label, inplace: bool, x: float) -> tuple[float, dict]:
    res = compare_cluster(replace(cluster, fabric_efficiency=x), paths, label, inplace)
    rows = [r for f in res["files"] for r in f["rows"] if r["bytes"] >= FROM_BYTES]
    if not rows:
        raise CollsimError(f"no measured size from {FROM_BYTES >> 20} MiB up: the network's share of the "
                           "time cannot be seen")
    pred = np.array([r["simulated_us"] for r in rows])
    meas = np.array([r["measured_us"] for r in rows])
    return float(np.mean(np.log(pred / meas) ** 2)), res


def fit_fabric(cluster: Cluster, paths, label: str | None = None, inplace: bool = True) -> dict:
    """{"fabric_efficiency": x, "before": summary at the description's own value, "after": at x,
    "cluster": the description with x, "points": sizes used} (module docstring)."""
    if cluster.nodes < 2:
        raise CollsimError("fabric_efficiency describes the network between nodes: the cluster has one node")
    lo, hi = math.log(LOWEST), 0.0
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = (_misfit(cluster, paths, label, inplace, math.exp(t))[0] for t in (a, b))
    for _ in range(ROUNDS):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = _misfit(cluster, paths, label, inplace, math.exp(a))[0]
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = _misfit(cluster, paths, label, inplace, math.exp(b))[0]
    best = min(1.0, round(math.exp((lo + hi) / 2), 3))
    _, before = _misfit(cluster, paths, label, inplace, cluster.fabric_efficiency)
    _, after = _misfit(cluster, paths, label, inplace, best)
    return {"fabric_efficiency": best, "before": before["simulated_from_1MiB"], "after": after["simulated_from_1MiB"],
            "cluster": replace(cluster, fabric_efficiency=best).to_dict(),
            "points": sum(1 for f in after["files"] for r in f["rows"] if r["bytes"] >= FROM_BYTES)}
