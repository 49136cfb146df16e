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

Values are checked as they are read (``check_meta``, ``check_result``, in ``records``): the types
above, times finite and >= 0, sizes and counts within ``collsim.inputs.MAX_BYTES``, rank and node
counts within ``MAX_RANKS``, iteration counts within ``MAX_CALLS``, ``env`` an object of strings or
numbers, ``nccl_probe`` as ``collsim.nccl.log.check_probe`` wants it; other meta keys are free.

``JsonlWriter`` writes such files record by record (the runners: a record is one line or
nothing, even when the disk fills); ``Measurements.save`` and ``write_jsonl`` write whole files
(``collsim.outputs.atomic_write``); ``load`` returns a ``Measurements`` with one numpy array per
field; ``collsim.measure.nccl_tests.import_nccl_tests`` turns nccl-tests output into the same
records.

Modules: ``records`` (the fields and their checks), ``nccl_tests`` (nccl-tests import; one row's
records: ``nccl_tests_rows``; its ``-J`` JSON: ``nccl_tests_json``), ``inspector`` (NCCL Inspector's
JSON objects), ``public_log`` (published logs), ``files`` (any measurement file;
CSV), ``table`` (a record as a table row), ``executed`` (what the schedule executor records),
``fidelity`` (one harness against another), ``bundled`` (where the bundled measurements are,
checkout or installed).

``perf_names`` tells which collective an nccl-tests log ran (its ``*_perf`` program line, the rows).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from collsim.core.budget import BASE_BYTES
from collsim.errors import CollsimError
from collsim.inputs import check_memory, parse_json, read_text
from collsim.measure.records import (
    FIELDS,
    check_meta,
    check_result,
    result_record,  # noqa: F401 - re-exported
)
from collsim.measure.table import TABLE_HEADER, format_row  # noqa: F401 - re-exported
from collsim.outputs import atomic_write

# a loaded record (a dict of ~20 fields), its point and per-point arrays downstream
RECORD_BYTES = 2500
@dataclass
class Measurements:
    """Records of one or more runs: ``meta`` (the first meta record), ``metas``
    (all of them), ``records`` (result dicts, as on their lines) and ``m["field"]`` / ``m.field``
    numpy arrays (NaN / None where a record lacks the field). ``skipped`` holds one message
    (naming ``file:line`` and the problem) per line a lenient load left out."""

    meta: dict = field(default_factory=dict)
    records: list = field(default_factory=list)
    metas: list = field(default_factory=list)
    skipped: list = field(default_factory=list)

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
        """Write as JSON Lines (meta first), in full or not at all (``atomic_write``)."""
        write_jsonl(path,
                    [{"type": "meta",
                      **self.meta}] + [{**r, "type": "result"} for r in self.records])


def _line(kind: str, record: dict) -> str:
    """One JSON Lines line: ``kind`` as "type" first, then the record's other fields in order."""
    return json.dumps({"type": kind, **{k: v for k, v in record.items() if k != "type"}}) + "\n"


class JsonlWriter:
    """Writes a JSON Lines file record by record (``_line``), each record in one write, so that
    a run that dies keeps every line written before. A write that fails (a full disk, a file
    size limit) is undone: the file is cut back to its last complete line and a CollsimError
    says how many records it keeps. The folder must exist. A context manager; or call ``close``."""

    def __init__(self, path):
        self.path = path
        self._f = open(path, "wb", buffering=0)
        self._end = self._records = 0

    def write(self, kind: str, record: dict) -> None:
        """Append one line (``_line``); on failure the file ends at its last complete line."""
        data = memoryview(_line(kind, record).encode("utf-8"))
        try:
            while data:  # a raw write may take part of the bytes (a disk filling up)
                data = data[self._f.write(data):]
        except OSError as e:
            try:
                self._f.truncate(self._end)
                self._f.seek(self._end)
                kept = f"it keeps its {self._records} complete records"
            except OSError:  # a device or a file that cannot be cut back
                kept = "its last line may be cut short"
            raise CollsimError(f"cannot write {self.path}: {e.strerror or e}; {kept}") from None
        self._end = self._f.tell()
        self._records += 1

    def close(self) -> None:
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def write_jsonl(path, records) -> None:
    """Write records that each carry their ``"type"`` as JSON Lines, creating the folder; in
    full or not at all (``collsim.outputs.atomic_write``)."""
    untyped = [i for i, r in enumerate(records) if "type" not in r]
    if untyped:
        raise CollsimError(f"record {untyped[0]} has no \"type\" (meta, result, ...): nothing "
                           f"written to {path}")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "measurement file") as f:
        for r in records:
            f.write(_line(r["type"], r))


def read_records(path) -> list[dict]:
    """Every record of any JSON Lines file (one JSON object a line, blank lines skipped); a line
    that is not a JSON object raises ``CollsimError`` naming ``path:line``."""
    out = []
    for lineno, line in enumerate(read_text(path, "measurement file").split("\n"), 1):
        if line.strip():
            out.append(parse_json(line, f"{path}:{lineno}"))
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
            rec = parse_json(line, where)
            if not isinstance(rec, dict) or rec.get("type") not in ("meta", "result"):
                raise CollsimError(f"{where}: expected an object with type 'meta' or 'result'")
            if rec["type"] == "meta":
                m.skipped += [f"{p} (left out of the meta; its other fields kept)"
                              for p in check_meta(rec, where, drop=not strict)]
                m.metas.append({k: v for k, v in rec.items() if k != "type"})
                m.meta = m.meta or m.metas[0]
                continue
            if not m.metas:
                raise CollsimError(f"{where}: result record before any meta record")
            check_result(rec, where)
            m.records.append(rec)
        except CollsimError as e:
            if strict:
                raise
            m.skipped.append(str(e))
    if strict and not m.metas:
        raise CollsimError(f"{source}: no meta record (empty measurement file)")
    return m


def load(path, strict: bool = True) -> Measurements:
    """Load a measurement file. A malformed line (not JSON, a field of the wrong type or out of
    range) raises ``CollsimError`` naming ``path:line``; with ``strict=False`` such lines are
    left out, every valid record before and after them kept, and ``.skipped`` names them."""
    text, lines = (t := read_text(path, "measurement file")), t.count("\n") + 1
    check_memory(BASE_BYTES + 3 * len(text) + RECORD_BYTES * lines,
                 f"reading {path} ({lines} lines)")
    return parse_jsonl(text.split("\n"), str(path), strict)
