"""The NCCL versions whose tuning logic collsim ports (``collsim.nccl``), and the one a description
of another version follows."""
from __future__ import annotations

import re

NCCL_VERSIONS = tuple(f"2.{m}" for m in range(18, 31))
NEWEST_NCCL = NCCL_VERSIONS[-1]


def nearest_ported(version: str) -> str:
    """``version`` ("2.N") when its tuning logic is ported, else the closest ported 2.x (2.12 ->
    2.18, 2.30 -> 2.28); anything that is not 2.N comes back unchanged (and the cluster refuses
    it)."""
    m = re.fullmatch(r"2\.(\d{1,3})", version)
    if version in NCCL_VERSIONS or not m:
        return version
    minors = [int(v.split(".")[1]) for v in NCCL_VERSIONS]
    return f"2.{min(max(int(m.group(1)), minors[0]), minors[-1])}"
