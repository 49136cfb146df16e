"""AllReduce measurements as JSON Lines records, in nccl-tests vocabulary.

A measurement file (what ``runners/allreduce_bench.py`` writes) is JSON Lines:

* line 1, ``{"type": "meta", ...}``: how it was measured. Keys the runner
  writes: ``harness`` ("collsim" or "nccl-tests"), ``collective``, ``backend``,
  ``timing`` ("eager" or "graph"), ``dtype``, ``inplace``, ``rotate`` (calls move
  through the buffer as nccl-tests does; absent in older files: one slice), ``clock_start``
  ("gated": the ranks' clocks start together with the timed calls queued; "barrier": the gloo
  backend's host clocks after a barrier; absent in NCCL files from before run 6: the start
  event after a host barrier, before the first launch), ``world_size``,
  ``nodes``, ``ranks_per_node``, ``hosts``, ``gpu``, ``gpu_count``, ``driver``,
  ``cuda``, ``torch``, ``nccl_version`` (NCCL's runtime log line),
  ``env`` (every ``NCCL_*``/``TORCH_NCCL_*`` variable), ``command``,
  ``git_commit``, ``time_combine``, and with a probe ``nccl_probe`` (see
  ``collsim.nccl.log.NcclLog.to_dict``).
* then one ``{"type": "result", ...}`` per message size, written as measured:

  ============  ======  ===================================================
  field         type    meaning
  ============  ======  ===================================================
  size          int     message size in bytes (per rank buffer)
  count         int     elements per rank buffer
  dtype         str     element type ("float32", ...; nccl-tests "float")
  time_us       float   microseconds per call: max over ranks of each
                        rank's average (nccl-tests convention)
  algbw_GBps    float   size / time, GB/s (1e9 B/s)
  busbw_GBps    float   algbw x 2(n-1)/n (AllReduce, n ranks)
  wrong         int     elements that differ from the exact expected sum,
                        summed over ranks; null when not checked
  inplace       bool    in-place (true) or out-of-place call
  algo, proto   str     NCCL_ALGO / NCCL_PROTO asked for (null: NCCL's choice)
  timing        str     "eager" or "graph"
  ranks         int     ranks taking part
  ============  ======  ===================================================

``JsonlWriter`` writes such files record by record (the runners; ``Measurements.save``);
``load`` returns a ``Measurements`` with one numpy array per field;
``collsim.measure.nccl_tests.import_nccl_tests`` turns nccl-tests output into
the same records.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from collsim.errors import CollsimError
from collsim.units import bandwidths

FIELDS = {  # name -> (numpy dtype, required)
    "size": (np.int64, True), "count": (np.int64, True), "dtype": (object, True),
    "time_us": (np.float64, True), "algbw_GBps": (np.float64, True),
    "busbw_GBps": (np.float64, True), "wrong": (np.int64, True),
    "inplace": (object, False), "algo": (object, False), "proto": (object, False),
    "timing": (object, False), "ranks": (np.int64, False),
}
def result_record(size, count, dtype, time_us, ranks, wrong, **extra) -> dict:
    """One result record (fields above) with bandwidths computed from ``time_us``."""
    algbw, busbw = bandwidths(size, time_us, ranks)
    return {"type": "result", "size": int(size), "count": int(count), "dtype": dtype,
            "time_us": float(time_us), "algbw_GBps": algbw, "busbw_GBps": busbw,
            "wrong": None if wrong is None else int(wrong), "ranks": int(ranks), **extra}


TABLE_HEADER = (f"{'size(B)':>12} {'count':>12} {'type':>9} {'algo/proto':>12} {'place':>5} "
                f"{'time(us)':>10} {'algbw':>8} {'busbw':>8} {'#wrong':>7}")


def format_row(rec: dict) -> str:
    """One record as a table row under ``TABLE_HEADER`` (nccl-tests style, GB/s)."""
    label = "/".join(x for x in (rec.get("algo"), rec.get("proto")) if x) or "default"
    place = {True: "in", False: "out"}.get(rec.get("inplace"), "?")
    wrong = "N/A" if rec.get("wrong") is None else rec["wrong"]
    num = [math.nan if rec.get(k) is None else rec[k] for k in ("time_us", "algbw_GBps", "busbw_GBps")]
    return (f"{rec['size']:>12} {rec['count']:>12} {rec['dtype']:>9} {label:>12} {place:>5} "
            f"{num[0]:>10.2f} {num[1]:>8.2f} {num[2]:>8.2f} {wrong:>7}")


def _check_result(rec: dict, where: str) -> None:
    for name, (kind, required) in FIELDS.items():
        if name not in rec:
            if required:
                raise CollsimError(f"{where}: result record lacks field {name!r}")
            continue
        v = rec[name]
        if v is None and name in ("wrong", "time_us", "algbw_GBps", "busbw_GBps") or v is None and not required:
            continue
        if kind is object:
            ok = isinstance(v, bool) if name == "inplace" else isinstance(v, str)
        elif kind is np.int64:
            ok = isinstance(v, int) and not isinstance(v, bool) and v >= 0
        else:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        if not ok:
            raise CollsimError(f"{where}: field {name!r} has bad value {v!r}")


@dataclass
class Measurements:
    """Records of one or more runs: ``meta`` (the first meta record), ``metas``
    (all of them), ``records`` (result dicts, as on their lines) and ``m["field"]`` / ``m.field``
    numpy arrays (NaN / None where a record lacks the field). ``error`` is the
    message of the line where a non-strict load stopped, else None."""

    meta: dict = field(default_factory=dict)
    records: list = field(default_factory=list)
    metas: list = field(default_factory=list)
    error: str | None = None

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in FIELDS and not any(name in r for r in self.records):
            raise KeyError(name)
        kind = FIELDS.get(name, (object, False))[0]
        values = [r.get(name) for r in self.records]
        if kind is object:
            return np.array(values, dtype=object)
        return np.array([math.nan if v is None else v for v in values],
                        dtype=np.float64 if any(v is None for v in values) else kind)

    def __getattr__(self, name: str) -> np.ndarray:
        if name.startswith("_") or name not in FIELDS:
            raise AttributeError(name)
        return self[name]

    def columns(self) -> list[str]:
        """Field names present in the records, schema fields first."""
        seen = [f for f in FIELDS if any(f in r for r in self.records)]
        extra = sorted({k for r in self.records for k in r} - set(FIELDS) - {"type"})
        return seen + extra

    def to_pandas(self):
        """A pandas DataFrame of the records (needs pandas)."""
        import pandas as pd
        return pd.DataFrame([{k: r.get(k) for k in self.columns()} for r in self.records])

    def save(self, path) -> None:
        """Write as JSON Lines (meta first)."""
        with JsonlWriter(path) as out:
            out.write("meta", self.meta)
            for r in self.records:
                out.write("result", r)


class JsonlWriter:
    """Writes a JSON Lines file record by record: each line is ``{"type": kind, **record}``
    ("type" first), flushed as written, so a run that dies keeps every line written before.
    The folder must exist. A context manager; or call ``close``."""

    def __init__(self, path):
        self._f = open(path, "w", encoding="utf-8")

    def write(self, kind: str, record: dict) -> None:
        """One line: ``kind`` as "type", then the record's other fields in order."""
        line = {"type": kind, **record}
        line["type"] = kind
        self._f.write(json.dumps(line) + "\n")
        self._f.flush()

    def close(self) -> None:
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def write_jsonl(path, records) -> None:
    """Write records that each carry their ``"type"`` as JSON Lines, creating the folder."""
    untyped = [i for i, r in enumerate(records) if "type" not in r]
    if untyped:
        raise CollsimError(f"record {untyped[0]} has no \"type\" (meta, result, ...): nothing written to {path}")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with JsonlWriter(path) as out:
        for r in records:
            out.write(r["type"], r)


def to_csv(m: Measurements, path) -> None:
    """Write the result records of ``m`` as CSV (one row per record)."""
    cols = m.columns()
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in m.records:
            w.writerow(["" if r.get(c) is None else r.get(c) for c in cols])


def _json_line(line: str, where: str):
    try:
        return json.loads(line)
    except json.JSONDecodeError as e:
        raise CollsimError(f"{where}: not valid JSON ({e.msg})") from None


def read_records(path) -> list[dict]:
    """Every record of any JSON Lines file (one JSON object a line, blank lines skipped); a line
    that is not a JSON object raises ``CollsimError`` naming ``path:line``."""
    out = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                out.append(_json_line(line, f"{path}:{lineno}"))
                if not isinstance(out[-1], dict):
                    raise CollsimError(f"{path}:{lineno}: expected a JSON object")
    return out


def parse_jsonl(lines, source: str, strict: bool = True) -> Measurements:
    """Parse measurement JSON Lines; see ``load``."""
    m = Measurements()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source}:{lineno}"
        try:
            rec = _json_line(line, where)
            if not isinstance(rec, dict) or rec.get("type") not in ("meta", "result"):
                raise CollsimError(f"{where}: expected an object with type 'meta' or 'result'")
            if rec["type"] == "meta":
                m.metas.append({k: v for k, v in rec.items() if k != "type"})
                m.meta = m.meta or m.metas[0]
                continue
            if not m.metas:
                raise CollsimError(f"{where}: result record before any meta record")
            _check_result(rec, where)
            m.records.append(rec)
        except CollsimError as e:
            if strict:
                raise
            m.error = str(e)
            break
    if strict and not m.metas:
        raise CollsimError(f"{source}: no meta record (empty measurement file)")
    return m


def load(path, strict: bool = True) -> Measurements:
    """Load a measurement file. A malformed line raises ``CollsimError`` naming
    ``path:line``; with ``strict=False`` loading stops there, keeps every valid
    record before it and sets ``.error``."""
    with open(path, encoding="utf-8") as f:
        return parse_jsonl(f, str(path), strict)
