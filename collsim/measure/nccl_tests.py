"""Import nccl-tests output (``all_reduce_perf``) as collsim measurement records.

Two inputs, told apart by their first non-blank character:

* the text table nccl-tests prints (``# nThread ... nGpus ...`` and ``#  Rank``
  header lines, a column header, rows ``size count type redop root`` followed
  by ``time algbw busbw #wrong`` for out-of-place and again for in-place,
  ``# Avg bus bandwidth`` footer). NCCL log lines and other chatter may be
  interleaved; a line whose first word is a number is a result row and must
  parse, else ``CollsimError`` names ``file:line``.
* the ``-J FILE`` JSON (``config``, ``results[]`` with ``out_of_place`` /
  ``in_place`` objects holding ``time``, ``alg_bw``, ``bus_bw``, ``nwrong``).

Each row gives two records (``inplace`` false then true), tagged with
``harness: "nccl-tests"`` in the meta. Text logs do not say which algorithm or
protocol ran, so the caller gives a label ``ALGO/PROTO`` (``Ring/LL``,
``Tree``, ``default`` for NCCL's own choice) stored as ``algo``/``proto``; nor
which NCCL_* variables were set, so the caller may give them (``env``, stored as
meta ``env``; for ``-J`` JSON they add to the recorded ones). They matter to
``collsim.fit.points.harness_key``: NCCL_GRAPH_MIXING_SUPPORT changes a graph call's cost.
"""
from __future__ import annotations

import json
import re

from collsim.errors import CollsimError
from collsim.measure import Measurements, result_record
from collsim.nccl.log import VERSION_PATTERN, canonical_algo, canonical_proto

DTYPES = {"float": "float32", "half": "float16", "double": "float64", "bfloat16": "bfloat16",
          "int8": "int8", "uint8": "uint8", "int32": "int32", "uint32": "uint32",
          "int64": "int64", "uint64": "uint64", "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}
_PARAMS = re.compile(r"# nThread (\d+) nGpus (\d+) minBytes (\d+) maxBytes (\d+) .*?"
                     r"warmup iters: (\d+) iters: (\d+) .*?graph: (\d+)")
_RANK = re.compile(r"#\s+Rank\s+(\d+) Group\s+\d+ Pid\s+\d+ on\s+(\S+) device\s+(\d+) \[[^\]]*\] (.*)$")
_TESTS_VERSION = re.compile(r"# nccl-tests version (\S+) nccl-headers=(\d+) nccl-library=(\d+)")
_AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*(\S+)")


def parse_label(label: str | None) -> tuple[str | None, str | None]:
    """``"Ring/LL"`` -> ("Ring", "LL"); ``"Tree"`` -> ("Tree", None); ``"default"``/None -> (None, None)."""
    if label is None or label.strip().lower() in ("", "default"):
        return None, None
    algo, _, proto = label.partition("/")
    return (None if algo.strip().lower() in ("", "default") else canonical_algo(algo),
            canonical_proto(proto) if proto.strip() else None)


def _version_from_code(code: int) -> str:
    return f"{code // 10000}.{code // 100 % 100}.{code % 100}"


def _number(token: str, where: str, what: str) -> float:
    try:
        return float(token)
    except ValueError:
        raise CollsimError(f"{where}: bad {what} {token!r} in nccl-tests row") from None


def _records(size, count, type_name, results, ranks, where, meta_extra) -> list[dict]:
    if type_name not in DTYPES:
        raise CollsimError(f"{where}: unknown nccl-tests type {type_name!r}")
    recs = []
    for inplace, (time_us, algbw, busbw, wrong) in zip((False, True), results):
        rec = result_record(size, count, DTYPES[type_name], time_us, ranks or 0, wrong,
                            inplace=inplace, **meta_extra)
        rec["algbw_GBps"], rec["busbw_GBps"] = algbw, busbw  # as nccl-tests printed them
        if not ranks:
            del rec["ranks"]
        recs.append(rec)
    return recs


def _parse_text(lines, source, label, strict) -> Measurements:
    algo, proto = parse_label(label)
    meta = {"harness": "nccl-tests", "collective": "allreduce", "label": label, "algo": algo,
            "proto": proto, "hosts": [], "devices": []}
    m = Measurements(meta=meta, metas=[meta])
    group = 4
    for lineno, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        where = f"{source}:{lineno}"
        if meta.get("nccl_version") is None and (v := VERSION_PATTERN.search(line)):
            meta["nccl_version"] = v.group(1)
        if line.lstrip().startswith("#"):
            if p := _PARAMS.search(line):
                nthread, ngpus, mn, mx, warm, iters, graph = (int(x) for x in p.groups())
                meta.update(gpus_per_process=nthread * ngpus, min_bytes=mn, max_bytes=mx,
                            warmup=warm, iters=iters, graph=graph,
                            timing="graph" if graph > 0 else "eager")
            elif r := _RANK.search(line):
                meta["devices"].append({"rank": int(r.group(1)), "host": r.group(2),
                                        "device": int(r.group(3)), "gpu": r.group(4).strip()})
            elif t := _TESTS_VERSION.search(line):
                meta["tests_version"] = t.group(1)
                meta["nccl_library_version"] = _version_from_code(int(t.group(3)))
            elif a := _AVG.search(line):
                meta["avg_busbw_GBps"] = _number(a.group(1), where, "average bus bandwidth")
            elif "size" in line.split() and "count" in line.split():
                names = line.lstrip("#").split()
                group = (len(names) - 5 - ("timestamp" in names)) // 2
            continue
        tokens = line.split()
        if not tokens or not tokens[0].isdigit():
            continue  # NCCL log lines, blank lines, warnings
        try:
            if len(tokens) < 5 + 2 * group:
                raise CollsimError(f"{where}: nccl-tests row has {len(tokens)} fields, "
                                   f"expected {5 + 2 * group}")
            results = []
            for start in (5, 5 + group):
                t, alg, bus, wrong = tokens[start:start + 4]
                results.append((_number(t, where, "time"), _number(alg, where, "algbw"),
                                _number(bus, where, "busbw"),
                                None if wrong == "N/A" else int(_number(wrong, where, "#wrong"))))
            if not tokens[1].isdigit():
                raise CollsimError(f"{where}: bad count {tokens[1]!r} in nccl-tests row")
            ranks = len(meta["devices"]) or None
            m.records += _records(int(tokens[0]), int(tokens[1]), tokens[2], results, ranks, where,
                                  {"algo": algo, "proto": proto, "timing": meta.get("timing")})
        except CollsimError as e:
            if strict:
                raise
            m.error = str(e)
            break
    meta["world_size"] = len(meta["devices"]) or None
    meta["hosts"] = sorted({d["host"] for d in meta["devices"]})
    if strict and not m.records:
        raise CollsimError(f"{source}: no nccl-tests result rows found")
    return m


def _parse_json(text, source, label) -> Measurements:
    algo, proto = parse_label(label)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise CollsimError(f"{source}:{e.lineno}: not valid nccl-tests JSON ({e.msg})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise CollsimError(f"{source}: nccl-tests JSON has no 'results' list")
    cfg = doc.get("config") or {}
    ranks = len(cfg.get("devices", [])) * cfg.get("nthreads", 1) * cfg.get("ngpus", 1) or None
    timing = "graph" if cfg.get("graph", 0) else "eager"
    meta = {"harness": "nccl-tests", "collective": "allreduce", "label": label, "algo": algo,
            "proto": proto, "world_size": ranks, "timing": timing, "iters": cfg.get("iterations"),
            "gpus_per_process": cfg.get("nthreads", 1) * cfg.get("ngpus", 1),
            "warmup": cfg.get("warmup_iters"), "graph": cfg.get("graph"), "devices": cfg.get("devices"),
            "command": " ".join(doc.get("args", [])),
            "env": {k: v for k, _, v in (e.partition("=") for e in doc.get("env", []))
                    if k.startswith(("NCCL_", "TORCH_NCCL_"))},
            "avg_busbw_GBps": (doc.get("average_bus_bandwidth") or {}).get("bandwidth")}
    if isinstance(doc.get("nccl_version"), int):
        meta["nccl_library_version"] = _version_from_code(doc["nccl_version"])
    m = Measurements(meta=meta, metas=[meta])
    for i, row in enumerate(doc["results"]):
        where = f"{source}: results[{i}]"
        try:
            parts = [row["out_of_place"], row["in_place"]]
            results = [(p.get("time", p.get("cpu_time")), p["alg_bw"], p["bus_bw"],
                        None if p["nwrong"] is None else int(p["nwrong"])) for p in parts]
            m.records += _records(int(row["size"]), int(row["count"]), row["type"], results, ranks,
                                  where, {"algo": algo, "proto": proto, "timing": timing})
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise CollsimError(f"{where}: malformed nccl-tests result ({e})") from None
    return m


def import_nccl_tests(path, label: str | None = None, strict: bool = True,
                      env: dict | None = None) -> Measurements:
    """Read nccl-tests text output or ``-J`` JSON from ``path`` into ``Measurements``;
    ``env``: NCCL_* variables the run had (``{"NCCL_GRAPH_MIXING_SUPPORT": "0"}``)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if text.lstrip().startswith("{"):
        m = _parse_json(text, str(path), label)
    else:
        m = _parse_text(text.splitlines(), str(path), label, strict)
    if env:
        m.meta["env"] = {**(m.meta.get("env") or {}), **{str(k): str(v) for k, v in env.items()}}
    return m


def parse_env(items) -> dict:
    """``["NCCL_GRAPH_MIXING_SUPPORT=0", ...]`` -> dict; a malformed item is a one-line error."""
    env = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise CollsimError(f"--env {item!r}: expected NAME=VALUE, e.g. NCCL_GRAPH_MIXING_SUPPORT=0")
        env[key] = value
    return env
