"""One nccl-tests result row as collsim records (``collsim.measure.nccl_tests`` reads text and
``-J`` JSON with these): nccl-tests' element types (``DTYPES``), an ``ALGO/PROTO`` label, NCCL's
version code, a printed number, and the two records of a row."""
from __future__ import annotations

import numpy as np

from collsim.errors import CollsimError, describe, require_number
from collsim.measure import result_record
from collsim.nccl.log import canonical_algo, canonical_proto

DTYPES = {"float": "float32", "half": "float16", "double": "float64", "bfloat16": "bfloat16",
          "int8": "int8", "uint8": "uint8", "int32": "int32", "uint32": "uint32",
          "int64": "int64", "uint64": "uint64", "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}


def itemsize(dtype: str) -> int:
    """Bytes per element of a collsim dtype name (``DTYPES``' values)."""
    return {"bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}.get(dtype) or np.dtype(
        dtype
    ).itemsize


def parse_label(label: str | None) -> tuple[str | None, str | None]:
    """``"Ring/LL"`` -> ("Ring", "LL"); ``"Tree"`` -> ("Tree", None); ``"default"``/None -> (None,
    None)."""
    if label is None or label.strip().lower() in ("", "default"):
        return None, None
    algo, _, proto = label.partition("/")
    return (None if algo.strip().lower() in ("", "default") else canonical_algo(algo),
            canonical_proto(proto) if proto.strip() else None)


def version_from_code(code: int) -> str:
    """NCCL's version code (22703) as its version ("2.27.3")."""
    return f"{code // 10000}.{code // 100 % 100}.{code % 100}"


def number(token: str, where: str, what: str) -> float:
    """A time or bandwidth nccl-tests printed: a finite number >= 0."""
    try:
        value = float(token)
    except ValueError:
        raise CollsimError(f"{where}: bad {what} {describe(token)} in nccl-tests row") from None
    return require_number(f"{where}: {what} in nccl-tests row", value, minimum=0)


def records(size, count, type_name, results, ranks, where, meta_extra) -> list[dict]:
    """The two records (out of place, then in place) of one nccl-tests row of ``size`` bytes and
    ``count`` elements of nccl-tests type ``type_name``; ``results``: (time us, algbw, busbw,
    wrong) per placement, the bandwidths kept as nccl-tests printed them; ``ranks`` 0: unknown."""
    if type_name not in DTYPES:
        raise CollsimError(f"{where}: unknown nccl-tests type {describe(type_name)}")
    recs = []
    for inplace, (time_us, algbw, busbw, wrong) in zip((False, True), results):
        rec = result_record(size, count, DTYPES[type_name], time_us, ranks or 0, wrong,
                            inplace=inplace, **meta_extra)
        rec["algbw_GBps"], rec["busbw_GBps"] = algbw, busbw  # as nccl-tests printed them
        if not ranks:
            del rec["ranks"]
        recs.append(rec)
    return recs
