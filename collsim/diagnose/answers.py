"""The five questions users ask of a run, each answered from a report of
``collsim.diagnose.verdict``: what busbw this hardware should give, why it is below, why NCCL picked
its algorithm, whether another NCCL version changes it, and how to model it (``answer(report,
cluster, nccl)``).

* ``expected``: per size band the expected busbw range (``predict-nccl``'s, with the band's
  tolerance), and the measured busbw as a share of the expected ("% of achievable") beside its share
  of the line rate (the NICs' per node on several nodes, ``nics_per_node x nic_GBps``; one GPU's
  NVLink or PCIe on one node);
* ``why_below``: the verdict and the ranked causes' labels (their evidence, fix and source are
  ``causes``);
* ``nccl_choice``: per band of the measured sizes, NCCL's algorithm, protocol and channels against
  the simulated best (``collsim.predict.best``), with the gain where NCCL's choice loses (simulated
  times);
* ``versions``: with two NCCL versions (``--nccl 2.22,2.25``) the sizes where the algorithm,
  protocol or channels change, or the simulated time by more than ``VERSION_CHANGE``;
* ``model``: the commands that print the schedule NCCL runs here and its simulation.
"""

from __future__ import annotations

from collsim.errors import CollsimError
from collsim.machine import Cluster
from collsim.machine.cluster import KEYS
from collsim.predict import predict_nccl
from collsim.predict.best import bands, best
from collsim.units import format_size

VERSION_CHANGE = 0.10


def line_rate(cluster) -> tuple:
    """(busbw GB/s, what it is) the wires allow: the NICs of a node on several nodes, a GPU's link
    on one.
    """
    if cluster.nodes > 1:
        return cluster.nics_per_node * cluster.nic_GBps, (
            f"{cluster.nics_per_node} x {cluster.nic_Gbps:g} Gb/s NICs per node"
        )
    return cluster.intra_GBps, f"{cluster.intra_GBps:g} GB/s {cluster.intra} per GPU"


def expected(report: dict, cluster) -> list[dict]:
    rate, what = line_rate(cluster) if cluster is not None else (None, "")
    out = []
    for b in report["bands"]:
        if "range_GBps" not in b:
            continue
        out.append(
            {
                "band": b["band"],
                "sizes": b["sizes"],
                "run": b["run"],
                "range_GBps": b["range_GBps"],
                "expected_busbw_GBps": b["expected_busbw_GBps"],
                "measured_busbw_GBps": b["measured_busbw_GBps"],
                "pct_of_achievable": 100 * b["ratio"],
                "pct_of_line_rate": 100 * b["measured_busbw_GBps"] / rate if rate else None,
                "line_rate_GBps": rate,
                "line_rate": what,
            }
        )
    return out


def nccl_choice(cluster, sizes, env=None, coll: str = "all_reduce") -> list[dict]:
    rows = best(cluster, sizes, coll=coll, env=env)
    out = []
    for nccl in bands(rows, "nccl"):
        inside = [r for r in rows if nccl["lo"] <= r["bytes"] <= nccl["hi"]]
        worst = max(inside, key=lambda r: r["gain"])
        out.append(
            {
                "sizes": f"{format_size(nccl['lo'])}-{format_size(nccl['hi'])}",
                "nccl": f"{nccl['algo']}/{nccl['proto']} x {nccl['channels']}",
                "best": f"{worst['best']['algo']}/{worst['best']['proto']} x "
                        f"{worst['best']['channels']}",
                "gain": worst["gain"],
                "at_bytes": worst["bytes"],
            }
        )
    return out


def _cluster(d: dict, **changes):
    """A ``Cluster`` from its ``to_dict`` (less what the cluster derived, such as ``nccl_asked``).
    """
    known = {k: v for k, v in {**d, **changes}.items() if k in KEYS}
    return Cluster.from_dict(known, where="the machine compared with")


def versions(cluster, sizes, pair, env=None, coll: str = "all_reduce") -> dict:
    """NCCL ``pair[0]`` against ``pair[1]`` on ``cluster`` at ``sizes`` (module docstring)."""
    runs = []
    for v in pair:
        c = _cluster(cluster.to_dict(), nccl=v)
        runs.append(predict_nccl(c, sizes, env=env, coll=coll)["rows"])
    changes = []
    for a, b in zip(*runs):
        moved = (a["algo"], a["proto"], a["channels"]) != (b["algo"], b["proto"], b["channels"])
        ratio = b["time_us"] / a["time_us"]
        if moved or abs(ratio - 1) > VERSION_CHANGE:
            changes.append(
                {
                    "bytes": a["bytes"],
                    pair[0]: f"{a['algo']}/{a['proto']} x {a['channels']}",
                    pair[1]: f"{b['algo']}/{b['proto']} x {b['channels']}",
                    "time_ratio": ratio,
                }
            )
    return {"versions": list(pair), "sizes": len(sizes), "changes": changes}


def model(cluster_arg: str | None, report: dict) -> list[str]:
    spec = cluster_arg or "<cluster.yaml: the machine line above>"
    coll = report.get("collective") or "all_reduce"
    spec += "" if coll == "all_reduce" else f" --coll {coll}"
    return [
        f"collsim predict-nccl --cluster {spec} -b 8 -e 8G   # NCCL's choice, its schedule's "
        "simulated time",
        f"collsim simulate --cluster {spec} --bytes 1G   # the schedule NCCL runs, simulated event "
        "by event",
        "notebooks/10*: why NCCL picked it, and the tuner file (collsim export-tuner)",
    ]


SIZES = [8 << (2 * k) for k in range(15)]  # 8 B to 2 GiB by 4x, where nothing was measured


def answer(report: dict, cluster_arg=None, nccl=None) -> dict:
    """The five answers (module docstring) for a ``diagnose`` report; without a machine to compare
    with only ``why_below`` and ``model``. Sizes: the measured ones, else ``SIZES``.
    """
    spec = report["machine"].get("spec")
    cluster = _cluster(spec) if spec else None
    env = report["machine"].get("env") or None
    sizes = sorted({m["bytes"] for m in report["measured"]}) or SIZES
    out = {
        "expected": expected(report, cluster),
        "why_below": {
            "verdict": report["verdict"],
            "causes": [c["label"] for c in report["causes"]],
        },
        "nccl_choice": [],
        "versions": None,
        "model": model(cluster_arg, report),
    }
    if cluster is None:
        if nccl:
            raise CollsimError(
                "--nccl compares versions on a machine: give --cluster or files that describe it"
            )
        return out
    coll = report.get("collective") or "all_reduce"
    out["nccl_choice"] = nccl_choice(cluster, sizes, env, coll)
    if nccl:
        out["versions"] = versions(cluster, sizes, nccl, env, coll)
    return out
