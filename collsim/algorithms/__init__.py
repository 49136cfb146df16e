"""AllReduce schedules: ``build_schedule(name, ranks, count, ...)`` and ``ALGORITHMS``.

Every algorithm works for any P >= 1 and any count >= 0 (uneven splits use
``split_even``); every schedule it builds is proved correct by
``collsim.checker.check`` in the tests.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

from collsim.algorithms.hierarchical import hierarchical, hierarchical_nccl
from collsim.algorithms.classic import direct, halving_doubling, recursive_doubling
from collsim.algorithms.ring import ring
from collsim.algorithms.tree import binary_tree, double_tree
from collsim.errors import CollsimError
from collsim.schedule import Schedule

CHUNK_TARGET_BYTES = 1 << 16   # default pipeline chunk: 64 KiB ...
MAX_DEFAULT_CHUNKS = 64        # ... but at most 64 chunks per tree
MAX_TRANSFERS = 1 << 27        # larger schedules are refused (5 int64 columns: ~5 GB)
MAX_BYTES = 1 << 60            # buffer size limit (element offsets are int64)


@dataclass(frozen=True)
class AlgorithmInfo:
    """description: one line; params: the keyword parameters it takes; trees: how many
    trees share the buffer (0 for non-tree algorithms, used by ``default_chunks``)."""

    description: str
    params: tuple[str, ...] = ()
    trees: int = 0


ALGORITHMS: dict[str, AlgorithmInfo] = {
    "ring": AlgorithmInfo("ring reduce-scatter + all-gather, 2(P-1) steps, optional pipeline slices",
                          ("slices",)),
    "tree": AlgorithmInfo("NCCL double binary tree, each tree half the data, pipelined over chunks",
                          ("chunks",), 2),
    "binary-tree": AlgorithmInfo("one binary tree: reduce up, broadcast down, pipelined over chunks",
                                 ("chunks",), 1),
    "hierarchical": AlgorithmInfo("intra-node reduce-scatter, inter-node ring or tree AllReduce, "
                                  "intra-node all-gather", ("gpus_per_node", "inter", "slices", "chunks"), 2),
    "hierarchical-nccl": AlgorithmInfo("NCCL multi-node tree: intra-node chain + inter-node double "
                                       "binary tree, pipelined", ("gpus_per_node", "chunks"), 2),
    "halving-doubling": AlgorithmInfo("Rabenseifner: recursive-halving reduce-scatter + "
                                      "recursive-doubling all-gather"),
    "recursive-doubling": AlgorithmInfo("log2(P) steps exchanging the whole buffer"),
    "direct": AlgorithmInfo("one-shot: every rank sends its whole buffer to every other rank"),
}
INTER_ALGORITHMS = ("ring", "tree")


def default_chunks(name: str, nbytes: int) -> int:
    """Pipeline chunks per tree when none are given: 64 KiB each, 1 to 64."""
    per_tree = nbytes // max(ALGORITHMS[name].trees, 1)
    return int(min(max(per_tree // CHUNK_TARGET_BYTES, 1), MAX_DEFAULT_CHUNKS))


def _int(what: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise CollsimError(f"{what} must be an integer, got {value!r}")
    if value < minimum:
        raise CollsimError(f"{what} must be >= {minimum}, got {value}")
    return int(value)


def validate(name: str, ranks, *, gpus_per_node=None, slices=1, chunks=None, inter="ring") -> dict:
    """Check an algorithm name and its parameters; return the parameters it takes.

    Raises CollsimError (one line) for an unknown name, P < 1, a parameter the
    algorithm does not take, or gpus_per_node that does not divide P.
    """
    if name not in ALGORITHMS:
        raise CollsimError(f"unknown algorithm {name!r}; choose from {', '.join(ALGORITHMS)}")
    ranks = _int("ranks", ranks, 1)
    takes = ALGORITHMS[name].params
    given = {"gpus_per_node": gpus_per_node, "slices": slices if slices != 1 else None,
             "chunks": chunks, "inter": inter if inter != "ring" else None}
    for key, value in given.items():
        if value is not None and key not in takes:
            raise CollsimError(f"algorithm {name!r} takes no {key!r} parameter")
    params = {}
    if "gpus_per_node" in takes:
        if gpus_per_node is None:
            raise CollsimError(f"algorithm {name!r} needs gpus_per_node")
        g = _int("gpus_per_node", gpus_per_node, 1)
        if ranks % g:
            raise CollsimError(f"gpus_per_node {g} does not divide ranks {ranks}")
        params["gpus_per_node"] = g
    if "slices" in takes:
        params["slices"] = _int("slices", slices, 1)
    if "chunks" in takes and chunks is not None:
        params["chunks"] = _int("chunks", chunks, 1)
    if "inter" in takes:
        if inter not in INTER_ALGORITHMS:
            raise CollsimError(f"inter must be one of {', '.join(INTER_ALGORITHMS)}, got {inter!r}")
        params["inter"] = inter
    return params


def transfer_bound(name: str, ranks: int, params: dict) -> int:
    """Upper bound on the number of transfers of a schedule (before zero-length ones are dropped)."""
    p, s, c = ranks, params.get("slices", 1), params.get("chunks", 1)
    g = params.get("gpus_per_node", 1)
    n, lg = p // g, p.bit_length()
    if name == "hierarchical":
        inter = 2 * p * (n - 1) * s if params["inter"] == "ring" else 4 * g * (n - 1) * c
        return 2 * p * (g - 1) * s + inter
    return {"ring": 2 * p * (p - 1) * s, "tree": 4 * (p - 1) * c, "binary-tree": 2 * (p - 1) * c,
            "hierarchical-nccl": 4 * (p - 1) * c, "halving-doubling": 2 * p * (lg + 1),
            "recursive-doubling": p * (lg + 2), "direct": p * (p - 1)}[name]


_BUILDERS = {"ring": ring, "tree": double_tree, "binary-tree": binary_tree,
             "hierarchical": hierarchical, "hierarchical-nccl": hierarchical_nccl,
             "halving-doubling": halving_doubling, "recursive-doubling": recursive_doubling,
             "direct": direct}


def build_schedule(name: str, ranks: int, count: int, itemsize: int = 4, *, gpus_per_node=None,
                   slices=1, chunks=None, inter="ring") -> Schedule:
    """The AllReduce schedule of algorithm ``name`` for ``count`` elements of ``itemsize``
    bytes per rank on ``ranks`` ranks; chunks default to ``default_chunks``."""
    params = validate(name, ranks, gpus_per_node=gpus_per_node, slices=slices, chunks=chunks,
                      inter=inter)
    count = _int("count", count, 0)
    itemsize = _int("itemsize", itemsize, 1)
    if count * itemsize > MAX_BYTES:
        raise CollsimError(f"buffer of {count} x {itemsize} bytes is too large (limit {MAX_BYTES} bytes)")
    if "chunks" in ALGORITHMS[name].params and "chunks" not in params:
        params["chunks"] = default_chunks(name, count * itemsize)
    bound = transfer_bound(name, int(ranks), params)
    if bound > MAX_TRANSFERS:
        raise CollsimError(f"{name} on {ranks} ranks would build up to {bound} transfers (limit "
                           f"{MAX_TRANSFERS}): use fewer ranks, slices or chunks")
    return _BUILDERS[name](int(ranks), count, itemsize, **params)


__all__ = ["ALGORITHMS", "AlgorithmInfo", "build_schedule", "default_chunks", "transfer_bound",
           "validate"]
