"""Read NCCL Inspector's JSON output as collsim measurements: ``read_inspector``.

NCCL Inspector (NVIDIA/nccl plugins/profiler/inspector, NCCL 2.23 on: inspector_json.cc, README
"Output Example") writes one JSON object per completed operation of one communicator, as one rank
saw it: ``header`` {id, comm_name, rank, n_ranks, nnodes}, ``metadata`` {hostname, pid,
inspector_output_format_version, ...} and ``coll_perf`` {coll, coll_sn, coll_msg_size_bytes,
coll_exec_time_us, coll_timing_source, coll_algobw_gbs, coll_busbw_gbs} (``p2p_perf`` for sends and
receives, left out: no collective of nccl-tests' size). The objects follow one another, pretty
printed or one a line, in one file per process.

Each communicator and collective is one ``Measurements``: per message size, the median over its
calls (``coll_sn``) of the slowest rank's time, at nccl-tests' size convention (AllGather and
ReduceScatter: the per-rank message times the ranks, as inspector.cc inspectorComputeOpBw counts
their traffic), busbw from that time with the collective's factor. The time is the kernel's on the
GPU (``coll_timing_source`` kernel_gpu), no launch around it: meta ``harness`` "inspector".
"""
from __future__ import annotations

import statistics

from collsim.core.collective import get
from collsim.errors import CollsimError, describe
from collsim.inputs import MAX_BYTES, MAX_RANKS, read_field
from collsim.measure import Measurements
from collsim.measure.nccl_tests_json import json_documents

# the collectives whose nccl-tests size is the per-rank message times the ranks
PER_RANK = ("all_gather", "reduce_scatter")


def is_inspector(text: str) -> bool:
    """Whether ``text`` starts like Inspector output (a ``header`` then ``metadata`` object)."""
    head, body = text[:4096], text[:1 << 16]
    return '"header"' in head and '"metadata"' in head and ('"coll_perf"' in body
                                                            or '"p2p_perf"' in body)


def read_inspector(text: str, source: str) -> list[Measurements]:
    """Every communicator and collective of Inspector output ``text`` (module docstring), in the
    order they first appear; a malformed object is a one-line CollsimError naming it, a collective
collsim does not model (AllGatherV) is left out and named in the first run's ``skipped``."""
    calls: dict[tuple, dict] = {}
    left_out: dict[str, int] = {}
    for i, doc in enumerate(json_documents(text, f"{source}: NCCL Inspector output")):
        where = f"{source}: Inspector object {i + 1}"
        if not isinstance(doc, dict):
            raise CollsimError(f"{where} must be an object, got {describe(doc)}")
        perf = read_field(doc, "coll_perf", where, dict)
        if perf is None:
            continue                                           # p2p_perf: no collective size
        head = read_field(doc, "header", where, dict, required=True)
        at = f"{where}: header"
        comm = read_field(head, "id", at, str, required=True)
        ranks = read_field(head, "n_ranks", at, int, required=True, minimum=1, maximum=MAX_RANKS)
        nodes = read_field(head, "nnodes", at, int, minimum=1, maximum=MAX_RANKS) or 1
        host = read_field(read_field(doc, "metadata", where, dict) or {}, "hostname",
                          f"{where}: metadata", str)
        at = f"{where}: coll_perf"
        name = read_field(perf, "coll", at, str, required=True)
        try:
            coll = get(name)
        except CollsimError:
            left_out[name] = left_out.get(name, 0) + 1          # AllGatherV, ...: not modelled
            continue
        size = read_field(perf, "coll_msg_size_bytes", at, int, required=True, minimum=0,
                          maximum=MAX_BYTES)
        time_us = read_field(perf, "coll_exec_time_us", at, float, required=True, minimum=0)
        sn = read_field(perf, "coll_sn", at, int, minimum=0)
        run = calls.setdefault((comm, coll.name), {
            "meta": {"harness": "inspector", "collective": coll.name, "world_size": ranks,
                     "nodes": nodes, "comm_name": head.get("comm_name"), "comm_id": comm,
                     "timing": "kernel", "hosts": set(),
                     "timing_source": perf.get("coll_timing_source")},
            "times": {}})
        if host:
            run["meta"]["hosts"].add(host)
        nbytes = size * ranks if coll.name in PER_RANK else size
        slowest = run["times"].setdefault(nbytes, {})
        key = sn if sn is not None else len(slowest)
        slowest[key] = max(slowest.get(key, 0.0), time_us)
    out = [_measurements(run) for run in calls.values()]
    if out and left_out:
        out[0].skipped += [f"{n} Inspector objects of {name}, a collective collsim does not model"
                           for name, n in left_out.items()]
    return out


def _measurements(run: dict) -> Measurements:
    """One communicator's collective as ``Measurements``: a record per size (median over calls)."""
    meta = {**run["meta"], "hosts": sorted(run["meta"]["hosts"])}
    coll, ranks = get(meta["collective"]), meta["world_size"]
    records = []
    for nbytes in sorted(run["times"]):
        times = list(run["times"][nbytes].values())
        t = statistics.median(times)
        algbw, busbw = coll.bandwidths(nbytes, t, ranks) if t > 0 else (0.0, 0.0)
        records.append({"type": "result", "size": nbytes, "time_us": t, "algbw_GBps": algbw,
                        "busbw_GBps": busbw, "ranks": ranks, "inplace": False,
                        "calls": len(times)})
    return Measurements(meta=meta, metas=[meta], records=records)
