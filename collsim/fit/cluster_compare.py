"""Score measurements against collsim's prediction from a cluster description alone
(``collsim compare --cluster SPEC --measured FILE...``): no parameters fitted on the files.

Each file (runner JSON Lines, nccl-tests output, a published log) is predicted as it ran: its
collective (its meta's ``collective``, nccl-tests' name as ``import-nccl-tests`` sets it; all_reduce
when absent), the algorithm and protocol it forced (its label or NCCL_ALGO/NCCL_PROTO), its NCCL_*
settings, its harness (nccl-tests or the runner), timing and GPUs per process; ``collsim.predict``
gives collsim's time (``simulated_us``: the simulation of the schedule NCCL runs, CollNet's too;
``timed_by`` says which) and NCCL's own (``nccl_us``). Errors are |predicted / measured - 1| per
size (fractions), summed up as median and p90 over all sizes and over sizes from 1 MiB up; each row
says whether the measured time is inside collsim's 80% range (``collsim.predict.ranges``),
``inside_range`` counts them. """
from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from collsim.core.collective import get as get_collective
from collsim.errors import CollsimError
from collsim.fit import abs_rel_errors, summary
from collsim.fit.points import harness_key
from collsim.machine.cluster import Cluster
from collsim.machine.versions import nearest_ported
from collsim.measure.files import load_file
from collsim.predict import predict_nccl

MIB = 1 << 20


def _series(m, inplace: bool, coll: str = "AllReduce"):
    """(sizes, times) of one file's records of the chosen placement (records that do not say: kept);
    ``coll``: NCCL's name of the file's collective, for the error on wrong elements."""
    chosen = [r for r in m.records if r.get("inplace") in (None, inplace)
              and r.get("executor") != "collsim"]
    bad = next((r for r in chosen if r.get("wrong")), None)
    if bad is not None:   # as compare --params refuses them (collsim.fit.points)
        raise CollsimError(f"size {bad['size']}: {bad['wrong']} wrong elements, not an {coll} "
                           "to fit or compare (measure it again)")
    rows = sorted((r["size"], r.get("time_us_min") or r["time_us"]) for r in chosen
                  if r.get("time_us"))
    if not rows:
        raise CollsimError("no records with a time")
    sizes, times = (np.array(c, dtype=float) for c in zip(*rows))
    return sizes.astype(np.int64), times


def _timed(errors: np.ndarray) -> dict:
    """``summary`` of the finite errors only (NCCL's model times no alltoall or sendrecv: NaN)."""
    return summary(errors[np.isfinite(errors)])


def nccl_args(meta: dict) -> tuple[str, dict]:
    """(harness, NCCL_* env) of a measured file for ``predict_nccl``: a runner file timed in CUDA
    graphs whose meta does not set NCCL_GRAPH_MIXING_SUPPORT ran with NCCL's default, 1 (the runner
    sets 0 since run 2, data/h200x2/README.md; ``collsim.fit.points.harness_key``)."""
    env = dict(meta.get("env") or {})
    timing = meta.get("timing") or "eager"
    if harness_key(meta, timing) == "torch-graph-mixing":
        env["NCCL_GRAPH_MIXING_SUPPORT"] = "1"
    return ("nccl-tests" if meta.get("harness") == "nccl-tests" else "runner"), env


def as_ran(cluster: Cluster, meta: dict) -> Cluster:
    """``cluster`` as a measured file ran it: where the file's NCCL (its meta's ``nccl`` or
    ``nccl_library_version``) is a version whose choices collsim does not port, the cluster follows
    the closest ported one and says so (``nccl_asked``: its range then counts NCCL's choice as
    assumed)."""
    ran = str(meta.get("nccl") or meta.get("nccl_library_version") or "")
    m = re.match(r"2\.\d+", ran)
    if not m or "nccl_asked" in cluster.extra or nearest_ported(m.group(0)) == m.group(0):
        return cluster
    return replace(cluster, extra={**cluster.extra, "nccl_asked": m.group(0)})


def compare_cluster(cluster: Cluster, paths, label: str | None = None, inplace: bool = False,
                    base=None) -> dict:
    """{"files": [{"file", "collective", "rows": [...], "simulated": summary, "nccl": summary,
    ...}], "simulated": ..., "nccl": ...} over every file's sizes (module docstring; NCCL's model
    has no time for alltoall and sendrecv, which it runs outside its cost table: their rows'
    ``nccl_us`` is NaN and its summaries count only the rows it times); ``base``: the parameters
    to rescale (``collsim.predict.predict_nccl``; default the packaged ones)."""
    files, ours, theirs, big = [], [], [], []
    for path in paths:
        m = load_file(path, label)
        meta = m.meta
        coll = get_collective(meta.get("collective") or "all_reduce")
        ranks = meta.get("world_size")
        if ranks and int(ranks) != cluster.ranks:
            raise CollsimError(f"{path}: ran {ranks} ranks, the cluster has {cluster.ranks} "
                               f"({cluster.nodes} x {cluster.gpus_per_node}; give --nodes)")
        try:
            sizes, times = _series(m, inplace, coll.nccl_name)
        except CollsimError as e:
            raise CollsimError(f"{path}: {e}") from None
        harness, env = nccl_args(meta)
        result = predict_nccl(as_ran(cluster, meta), sizes, meta.get("algo") or "default",
                              proto=meta.get("proto") or "default", env=env, harness=harness,
                              timing=meta.get("timing") or "eager",
                              gpus_per_process=meta.get("gpus_per_process"), base=base,
                              coll=coll.name)
        pred = np.array([r["time_us"] for r in result["rows"]])
        nccl = np.array([r["nccl_us"] for r in result["rows"]])
        e_ours, e_theirs = abs_rel_errors(pred, times), abs_rel_errors(nccl, times)
        rows = [{"bytes": int(s), "measured_us": float(t), "simulated_us": float(p),
                 "nccl_us": float(n),
                 "algo": r["algo"], "proto": r["proto"], "channels": r["channels"],
                 "timed_by": r["timed_by"],
                 "low_us": r["low_us"], "high_us": r["high_us"],
                 "bandwidth_share": r["bandwidth_share"],
                 "inside": bool(r["low_us"] <= t <= r["high_us"])}
                for s, t, p, n, r in zip(sizes, times, pred, nccl, result["rows"])]
        large = sizes >= MIB
        files.append({"file": str(path), "collective": coll.name, "harness": harness,
                      "timing": result["timing"], "range": result["range"],
                      "inputs": result["inputs"],
                      "gpus_per_process": result["gpus_per_process"], "rows": rows,
                      "simulated": summary(e_ours), "nccl": _timed(e_theirs),
                      "simulated_from_1MiB": summary(e_ours[large]),
                      "nccl_from_1MiB": _timed(e_theirs[large])})
        ours.append(e_ours)
        theirs.append(e_theirs)
        big.append(large)
    e_ours, e_theirs, large = np.concatenate(ours), np.concatenate(theirs), np.concatenate(big)
    inside = [r["inside"] for f in files for r in f["rows"]]
    return {"inside_range": {"n": len(inside), "inside": int(sum(inside))},
            "cluster": cluster.to_dict(),
            "files": files, "simulated": summary(e_ours), "nccl": _timed(e_theirs),
            "simulated_from_1MiB": summary(e_ours[large]),
            "nccl_from_1MiB": _timed(e_theirs[large])}
