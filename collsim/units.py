"""Sizes and bandwidths in nccl-tests' vocabulary.

* sizes: bytes; text forms ``"8"``, ``"64K"``, ``"1M"``, ``"4G"`` (binary multiples, as nccl-tests'
  ``-b``/``-e``) through ``parse_size`` and ``format_size``;
* ``algbw_GBps = bytes / 1e9 / seconds`` (GB/s = 1e9 bytes/s);
* ``busbw_GBps = algbw x`` the collective's factor (nccl-tests' bus bandwidth, the same for every
  algorithm: ``collsim.core.collective.Collective.busbw``, which gives both for one measurement).
"""
from __future__ import annotations

import math

import numpy as np

from collsim.errors import CollsimError
from collsim.inputs import MAX_BYTES

_SUFFIX = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """``"8"``, ``"64K"``, ``"1M"``, ``"4G"`` (binary multiples, as nccl-tests) -> bytes, at most
    ``collsim.inputs.MAX_BYTES``."""
    t = str(text).strip().upper().removesuffix("IB").removesuffix("B") if str(text).strip() else ""
    num, suffix = (t[:-1], t[-1]) if t and t[-1] in _SUFFIX else (t, "")
    try:
        value = float(num) * _SUFFIX[suffix]
    except ValueError:
        raise CollsimError(f"bad size {text!r} (want bytes, e.g. 8, 64K, 1M, 4G)") from None
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise CollsimError(f"bad size {text!r}: must be a whole, non-negative number of bytes")
    if value > MAX_BYTES:
        raise CollsimError(f"bad size {text!r}: at most {MAX_BYTES} bytes ({MAX_BYTES >> 40}T)")
    return int(value)


def format_size(nbytes: int) -> str:
    """Bytes as nccl-tests-ish text: ``4096 -> "4K"``, ``3000 -> "3000"``."""
    for suffix in ("G", "M", "K"):
        if nbytes >= _SUFFIX[suffix] and nbytes % _SUFFIX[suffix] == 0:
            return f"{nbytes // _SUFFIX[suffix]}{suffix}"
    return str(nbytes)


def algbw_GBps(nbytes, time_s):
    """Algorithm bandwidth in GB/s (1e9 B/s): bytes / 1e9 / seconds; 0 for 0 bytes, inf for a
    zero time, NaN for a negative (invalid) time."""
    nb, t = np.asarray(nbytes, dtype=np.float64), np.asarray(time_s, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(t < 0, np.nan, np.where(nb == 0, 0.0, nb / 1e9 / t))
    return out if out.ndim else float(out)
