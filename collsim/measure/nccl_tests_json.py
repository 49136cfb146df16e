"""Read nccl-tests' ``-J FILE`` JSON (nccl-tests 2.17.x on: src/util.cu jsonOutputInit,
jsonRankInfo, writeBenchmarkLineBody): ``read_nccl_tests_json``.

A document holds ``config`` (threads and GPUs per process, iterations, graph launches) with one
``devices`` entry per process (rank, hostname, device, device_info), ``results[]`` with
``out_of_place`` / ``in_place`` objects holding ``time``, ``alg_bw``, ``bus_bw`` and ``nwrong`` (a
double, null without validation), and ``args``, ``env``, ``nccl_version``. Several documents one
after another (``json_documents``) are several runs. Values are checked as the text importer
checks them (``collsim.measure.nccl_tests``); the devices are kept in its vocabulary (host, gpu).
"""
from __future__ import annotations

import json
import re

from collsim.errors import CollsimError, describe
from collsim.inputs import MAX_BYTES, MAX_CALLS, MAX_RANKS, int_text, parse_json, read_field
from collsim.measure import Measurements, check_meta
from collsim.measure.nccl_tests_rows import itemsize, parse_label, records, version_from_code
from collsim.measure.perf_names import from_program, resolve

_SPACE = re.compile(r"\s*")


def json_documents(text: str, where: str) -> list:
    """The JSON values ``text`` holds one after another (``-J`` files pasted together: several
    collectives, or one run per node), each read by ``collsim.inputs.parse_json``; a value cut
    short or not JSON is its one-line error."""
    decoder, out, at = json.JSONDecoder(), [], _SPACE.match(text).end()
    while at < len(text):
        try:
            end = decoder.raw_decode(text, at)[1]
        except (json.JSONDecodeError, ValueError, RecursionError):
            end = len(text)                          # parse_json says what is wrong with the rest
        line = text.count("\n", 0, at) + 1
        out.append(parse_json(text[at:end], f"{where} (document {len(out) + 1}, from line {line})"
                              if out else where))
        at = _SPACE.match(text, end).end()
    return out


def read_nccl_tests_json(text: str, source: str, label: str | None = None,
                         coll: str | None = None) -> list[Measurements]:
    """Every ``-J`` document of ``text`` as ``Measurements`` (its collective the program's, else
    ``coll``, else what its rows fit)."""
    out = []
    for doc in json_documents(text, f"{source}: nccl-tests -J output"):
        m = _parse_json(doc, source, label)
        m.meta["collective"] = resolve(from_program(m.meta.get("program")), coll, m.records,
                                       itemsize, source)
        out.append(m)
    return out


def _parse_json(doc, source, label) -> Measurements:
    algo, proto = parse_label(label)
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise CollsimError(f"{source}: nccl-tests JSON has no 'results' list")
    cfg = read_field(doc, "config", source, dict) or {}
    at = f"{source}: config"
    # one per process, as nccl-tests writes them (rank, hostname, device, device_info), in the text
    # log's vocabulary
    devices = [{"rank": d.get("rank"), "host": d.get("hostname"), "device": d.get("device"),
                "gpu": d.get("device_info")}
               for d in read_field(cfg, "devices", at, list) or [] if isinstance(d, dict)]
    hosts = sorted({d["host"] for d in devices if isinstance(d["host"], str) and d["host"]})
    per_process = [read_field(cfg, k, at, int, minimum=1, maximum=MAX_RANKS) or 1
                   for k in ("nthreads", "ngpus")]
    graph = read_field(cfg, "graph", at, int, minimum=0, maximum=MAX_CALLS)
    args, env = (read_field(doc, k, source, list) or [] for k in ("args", "env"))
    for k, items in (("args", args), ("env", env)):
        if not all(isinstance(x, str) for x in items):
            raise CollsimError(f"{source}: field {k!r} must be a list of strings, got "
                               f"{describe(items)}")
    timing = "graph" if graph else "eager"
    meta = {"harness": "nccl-tests", "collective": None, "label": label, "algo": algo,
            "proto": proto, "world_size": len(devices) * per_process[0] * per_process[1] or None,
            "timing": timing,
            "iters": read_field(cfg, "iterations", at, int, minimum=0, maximum=MAX_CALLS),
            "gpus_per_process": per_process[0] * per_process[1],
            "warmup": read_field(cfg, "warmup_iters", at, int, minimum=0, maximum=MAX_CALLS),
            "graph": graph,
            "devices": devices, "command": " ".join(args), "hosts": hosts,
            "nodes": len(hosts) or 1,
            "env": {k: v for k, _, v in (e.partition("=") for e in env)
                    if k.startswith(("NCCL_", "TORCH_NCCL_"))},
            "avg_busbw_GBps": read_field(read_field(doc, "average_bus_bandwidth", source, dict)
                                         or {}, "bandwidth",
                                         f"{source}: average_bus_bandwidth", float)}
    version = read_field(doc, "nccl_version", source, int, minimum=0, maximum=10**9)
    if version is not None:
        meta["nccl_library_version"] = version_from_code(version)
    check_meta(meta, source)
    m = Measurements(meta=meta, metas=[meta])
    for i, row in enumerate(doc["results"]):
        where = f"{source}: results[{i}]"
        if not isinstance(row, dict):
            raise CollsimError(f"{where} must be an object, got {describe(row)}")
        results = []
        for place in ("out_of_place", "in_place"):
            part = read_field(row, place, where, dict, required=True)
            at = f"{where}.{place}"
            time_key = "time" if part.get("time") is not None else "cpu_time"
            results.append((read_field(part, time_key, at, float, required=True, minimum=0),
                            read_field(part, "alg_bw", at, float, required=True, minimum=0),
                            read_field(part, "bus_bw", at, float, required=True, minimum=0),
                            _wrong(read_field(part, "nwrong", at, float, minimum=0), at)))
        m.records += records(read_field(row, "size", where, int, required=True, minimum=0,
                                         maximum=MAX_BYTES),
                              read_field(row, "count", where, int, required=True, minimum=0,
                                         maximum=MAX_BYTES),
                              read_field(row, "type", where, str, required=True), results,
                              meta["world_size"],
                              where, {**_json_columns(row, where), "algo": algo, "proto": proto,
                                      "timing": timing})
    meta["program"] = args[0] if args else None
    return m


def _wrong(value: float | None, where: str) -> int | None:
    """``nwrong``, which nccl-tests writes as a double (``0.0``; null without validation): a whole
    count, or a one-line error."""
    if value is not None and value != int(value):
        raise CollsimError(f"{where}: field 'nwrong' must be a whole count, got {value:g}")
    return None if value is None else int(value)


def _json_columns(row: dict, where: str) -> dict:
    """A ``-J`` result's redop and root (the root printed as text: "-1", "0")."""
    out = {}
    if isinstance(row.get("redop"), str):
        out["redop"] = row["redop"]
    if isinstance(row.get("root"), (str, int)) and not isinstance(row.get("root"), bool):
        out["root"] = int_text(row["root"], f"{where}: root", -1, MAX_RANKS)
    return out
