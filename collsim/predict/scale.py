"""NCCL AllReduce as a cluster grows: ``scale_nccl`` (``collsim predict-nccl --nodes
2,4,...,2048``).

For every node count the cluster is resized (``Cluster.with_nodes``: GPUs, NICs and fabric per node
kept) and ``collsim.predict.predict_nccl`` predicts each size: NCCL's choice of algorithm, protocol
and channels, simulated (the row with ``nccl_choice`` true). ``algos`` (or ["all"]) adds the
algorithms collsim simulates (Ring, Tree, NVLS, NVLSTree) forced one at a time (NCCL_ALGO; the
protocol and channels NCCL would pick for it), one row each; one NCCL cannot run there (NVLS across
nodes, NVLSTree on one node) gets a row without times saying why (``unavailable``), and one NCCL
chose is not simulated twice. Simulating is what costs: on this project's 2-core machine NCCL's ring
on 2,048 nodes of 8 GPUs takes about 5 s (its quotient of two nodes), NCCL's tree and NVLSTree,
which run whole over the nodes, 25-30 s; so by default only NCCL's choice is simulated. """
from __future__ import annotations

from collsim.errors import CollsimError
from collsim.machine.cluster import Cluster
from collsim.nccl import ALGOS, canonical
from collsim.predict import predict_nccl


def scale_nccl(cluster: Cluster, nodes: list[int], sizes, algos=(), algo: str = "default",
               proto: str = "default",
               env: dict | None = None, harness: str = "nccl-tests", timing: str = "eager",
               gpus_per_process: int | None = None, progress=None,
               coll: str = "all_reduce") -> dict:
    """``{"predictor", "cluster" (as given), "nodes", "sizes", "algos", "rows": [...]}``: per node
    count, size and algorithm a row of ``predict_nccl`` plus ``nodes``, ``ranks`` and
    ``nccl_choice`` (module docstring); ``progress``: called once per simulation done (a tqdm bar's
    ``update``), or None; ``coll``: the collective."""
    extra = list(dict.fromkeys(ALGOS if list(algos) == ["all"]
                               else [canonical(a, ALGOS) for a in algos]))
    rows, out = [], None
    for n in nodes:
        c = cluster.with_nodes(n)
        out = predict_nccl(c, sizes, algo, proto=proto, env=env, harness=harness, timing=timing,
                           gpus_per_process=gpus_per_process, coll=coll)
        chosen = out["rows"]
        rows += [{"nodes": n, "ranks": c.ranks, **r, "nccl_choice": True, "unavailable": None}
                 for r in chosen]
        _tick(progress)
        for a in extra:
            need = [int(s) for s, r in zip(sizes, chosen) if r["algo"] != a]
            if not need:
                continue
            try:
                forced = predict_nccl(c, need, a, proto=proto, env=env, harness=harness,
                                      timing=timing, gpus_per_process=gpus_per_process,
                                      coll=coll)["rows"]
                rows += [{"nodes": n, "ranks": c.ranks, **r, "nccl_choice": False,
                          "unavailable": None}
                         for r in forced]
            except CollsimError as e:
                rows += [{"nodes": n, "ranks": c.ranks, "bytes": int(s), "algo": a,
                          "nccl_choice": False,
                          "busbw_GBps": None, "time_us": None, "unavailable": str(e)} for s in need]
            _tick(progress)
    return {"predictor": out["predictor"] if out else "simulated_us", "collective": coll,
            "cluster": cluster.to_dict(), "nodes": nodes,
            "sizes": [int(s) for s in sizes], "algos": extra, "harness": harness, "timing": timing,
            "rows": rows}


def _tick(progress) -> None:
    if progress is not None:
        progress(1)
