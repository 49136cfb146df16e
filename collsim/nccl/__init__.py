"""NCCL itself, ported with line references (NVIDIA/nccl 2.18-2.30): what NCCL would choose and
predict.

In loop order: ``settings`` (NCCL_* variables as a version reads them), ``graphs``,
``switch_graphs`` and ``search`` (what the topology search and channel set-up find for a
``collsim.machine.Cluster``), ``constants`` and ``formulas`` (per-version tuning constants and
formulas), ``tuning`` (the table, ``ncclTopoGetAlgoTime``, the argmin, channels and threads),
``chunking`` (how a call is cut into channels), ``plan`` (each channel's slot, chunk, slices and
loops), ``p2p`` (the channels of AlltoAll's and SendRecv's sends), ``decision`` (one call per
cluster: ``nccl_decision``, ``nccl_time``, ``cluster_table``; and for a measured run:
``nccl_table``, ``measured_choice``), ``log`` (NCCL_DEBUG output), ``probe`` (what a recorded probe
must hold) and ``env`` (NCCL_* variables checked for the lecture's mistakes). NCCL's own time is
``nccl_us`` in every result; it is drawn beside collsim's predictions, never used as one.

NCCL's names, spelled once: ``ALGOS`` (the algorithms collsim's predictors cover), ``PROTOS``,
``NCCL_ALGOS`` (NCCL's algorithm index order), ``canonical`` and ``canonical_pair``.
"""
from __future__ import annotations

from collsim.errors import CollsimError

PROTOS = ("LL", "LL128", "Simple")
# NCCL's algorithm index order (tie-breaking of NCCL's argmin follows it; 2.23 logs print the
# index).
NCCL_ALGOS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
ALGOS = ("Ring", "Tree", "NVLS", "NVLSTree")


def canonical(name: str, choices) -> str:
    """``name`` spelled as in ``choices`` (case-insensitive), else a one-line CollsimError."""
    for c in choices:
        if str(name).lower() == c.lower():
            return c
    raise CollsimError(f"unknown name {name!r}; expected one of {', '.join(choices)}")


def canonical_pair(algo: str, proto: str) -> tuple[str, str]:
    """(algorithm, protocol) spelled as in ALGOS and PROTOS (case-insensitive), else
    CollsimError."""
    return canonical(algo, ALGOS), canonical(proto, PROTOS)
