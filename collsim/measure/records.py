"""The fields of a measurement file's records and their checks (``collsim.measure``'s docstring
holds the schema): ``result_record`` builds one result record, ``check_result`` and ``check_meta``
check what is read, ``FIELDS`` names the result fields with their numpy dtypes."""
from __future__ import annotations

import numbers

import numpy as np

from collsim.core.collective import ALLREDUCE, get
from collsim.errors import CollsimError, describe
from collsim.inputs import MAX_BYTES, MAX_CALLS, MAX_RANKS, read_field
from collsim.nccl.probe import check_probe

FIELDS = {  # name -> (numpy dtype, required)
    "size": (np.int64, True), "count": (np.int64, True), "dtype": (object, True),
    "time_us": (np.float64, True), "algbw_GBps": (np.float64, True),
    "busbw_GBps": (np.float64, True), "wrong": (np.int64, True),
    "inplace": (object, False), "algo": (object, False), "proto": (object, False),
    "timing": (object, False), "ranks": (np.int64, False),
}
_TIME = {"kind": float, "minimum": 0}
_ELEMENTS = {"kind": int, "minimum": 0, "maximum": MAX_BYTES}
# field -> collsim.inputs.read_field arguments (with the runner's time_us_min/mean)
_RESULT_CHECKS = {
    "size": _ELEMENTS, "count": _ELEMENTS, "dtype": {"kind": str}, "time_us": _TIME,
    "time_us_min": _TIME,
    "time_us_mean": _TIME, "wrong": _ELEMENTS, "inplace": {"kind": bool}, "algo": {"kind": str},
    "proto": {"kind": str}, "timing": {"kind": str},
    "ranks": {"kind": int, "minimum": 1, "maximum": MAX_RANKS},
}
_COUNT = {"kind": int, "minimum": 0, "maximum": MAX_CALLS}
_META_CHECKS = {  # the meta keys collsim reads -> collsim.inputs.read_field arguments
    "harness": {"kind": str}, "collective": {"kind": str}, "timing": {"kind": str},
    "clock_start": {"kind": str},
    "dtype": {"kind": str}, "algo": {"kind": str}, "proto": {"kind": str},
    "inplace": {"kind": bool},
    "rotate": {"kind": bool}, "world_size": {"kind": int, "minimum": 1, "maximum": MAX_RANKS},
    "nodes": {"kind": int, "minimum": 1, "maximum": MAX_RANKS},
    "gpus_per_process": {"kind": int, "minimum": 1, "maximum": MAX_RANKS},
    "iters": _COUNT, "warmup": _COUNT, "graph": _COUNT, "graph_calls": {**_COUNT, "minimum": 1},
    "min_bytes": {"kind": int, "minimum": 0, "maximum": MAX_BYTES},
    "max_bytes": {"kind": int, "minimum": 0, "maximum": MAX_BYTES}, "env": {"kind": dict},
    "nccl_probe": {"kind": dict},
}


def result_record(size, count, dtype, time_us, ranks, wrong, *, collective=ALLREDUCE,
                  **extra) -> dict:
    """One result record (fields above) with bandwidths computed from ``time_us`` with
    ``collective``'s bus bandwidth factor (a ``collsim.core.collective`` record or name)."""
    algbw, busbw = get(collective).bandwidths(size, time_us, ranks)
    return {"type": "result", "size": int(size), "count": int(count), "dtype": dtype,
            "time_us": float(time_us), "algbw_GBps": algbw, "busbw_GBps": busbw,
            "wrong": None if wrong is None else int(wrong), "ranks": int(ranks), **extra}


def check_result(rec: dict, where: str) -> None:
    """A result record's fields as the schema above wants them (required ones present; ``size``,
    ``count`` and ``dtype`` not null), else CollsimError naming ``where`` and the field."""
    for name, (_, required) in FIELDS.items():
        if required and name not in rec:
            raise CollsimError(f"{where}: result record lacks field {name!r}")
    for name, check in _RESULT_CHECKS.items():
        read_field(rec, name, where, required=name in ("size", "count", "dtype"), **check)
    for name in ("algbw_GBps", "busbw_GBps"):  # derived from the time: inf for a zero time
        v = rec[name]
        if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
            raise CollsimError(f"{where}: field {name!r} must be a number, got {describe(v)}")


def check_meta(meta: dict, where: str, drop: bool = False) -> list[str]:
    """The meta keys collsim reads (module docstring) as they must be, else CollsimError naming
    ``where`` and the key. With ``drop`` (lenient reading) a bad key is removed from ``meta``
    instead and its message returned: the rest of the meta, and every record, stay."""
    def env_value(key):
        if isinstance(env[key], bool) or not isinstance(env[key], (str, numbers.Real)):
            raise CollsimError(f"{where}: env {describe(key)} must be a string, got "
                               f"{describe(env[key])}")

    def probe(_key):
        if meta.get("nccl_probe"):
            check_probe(meta["nccl_probe"], f"{where}: nccl_probe")

    problems, env = [], meta["env"] if isinstance(meta.get("env"), dict) else {}
    tests = [(lambda n, c=c: read_field(meta, n, where, **c), meta, n)
             for n, c in _META_CHECKS.items()]
    tests += [(env_value, env, k) for k in list(env)] + [(probe, meta, "nccl_probe")]
    for test, holder, key in tests:
        try:
            test(key)
        except CollsimError as e:
            if not drop:
                raise
            problems.append(str(e))
            holder.pop(key, None)
    return problems
