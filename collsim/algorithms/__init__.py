"""Schedules of every collective: one ``Algorithm`` record per algorithm; ``REGISTRY`` holds
AllReduce's, ``BY_COLLECTIVE`` every collective's (``collsim.core.collective``); ``build_schedule``.

Every algorithm works for any P >= 1, any count >= 0 (uneven splits use
``split_even``) and any number of channels C >= 1 (the buffer cut into C
contiguous parts, each its own ring or tree on its own channel, all channels of
a step in one schedule step); every schedule it builds is proved correct by
``collsim.core.checker.check`` in the tests. ``ALGORITHMS`` lists the algorithms
(``REGISTRY`` without the teaching-only lecture schedules, which are not
AllReduces).

Adding an algorithm: a module that ends with its ``Algorithm`` record, and one
entry in ``REGISTRY`` below.

Modules: ``ring`` (rail rings, Hamiltonian cycles), ``tree`` + ``tree_shapes`` + ``tree_plan`` +
``tree_pipeline`` (the double binary tree: shapes, edges and colours, pipelined), ``hierarchical``
(pipelined; NCCL's tree across nodes), ``nvls`` (NVLS, NVLSTree, NVLS across nodes), ``collnet``
(CollNetDirect, CollNetChain: the network's switches reduce), ``classic`` (halving-doubling,
recursive doubling, direct), ``lecture`` (the lecture's ring, tree and hierarchical AllReduce,
teaching only), ``timing`` (the closed forms' step chains); the other collectives: ``ring_halves``
(ring AllGather and ReduceScatter), ``chain`` (Broadcast and Reduce), ``pat`` (PAT AllGather and
ReduceScatter), ``p2p`` (AlltoAll, SendRecv).
"""
from __future__ import annotations

import numbers
import os
from dataclasses import dataclass
from typing import Callable

from collsim.core.budget import require_schedule
from collsim.core.collective import get as get_collective
from collsim.core.schedule import Schedule
from collsim.errors import CollsimError
from collsim.inputs import MAX_CHANNELS, MAX_RANKS

MAX_TRANSFERS = 1 << 26   # larger schedules are refused unless COLLSIM_MAX_TRANSFERS says otherwise
# schedule columns (6 x int64 + op) and what building and simulating hold besides
BYTES_PER_TRANSFER = 49 * 3
MAX_BYTES = 1 << 60       # buffer size limit (element offsets are int64)
DEFAULTS = {"gpus_per_node": None, "slices": 1, "chunks": None, "inter": "ring", "channels": 1,
            "direct": False, "loops": 1, "nics_per_node": None}
INTER_ALGORITHMS = ("ring", "tree")


@dataclass(frozen=True)
class Algorithm:
    """One algorithm of ``collective`` (AllReduce unless said), everything collsim knows about it
    in one place.

    name, description (one line); params: the keyword parameters ``build`` takes besides ranks,
    count, itemsize (names in ``DEFAULTS``); needs: those that have no default; build(ranks, count,
    itemsize, **params) -> Schedule; transfer_bound(ranks, params) -> an upper bound on its
    transfers (checked before building); default_chunks(nbytes, ranks, params) -> pipeline chunks
    when none are given (None: takes no chunks); closed_form(p, nbytes, links, params) ->
    seconds (``collsim.algorithms.timing.Links``; None: no closed form), exact or a stated bound
    (``exact``: a short statement of when it is exact); granularity(ranks, params) -> the element
    multiple for which the closed form holds; formula: the closed form in words; teaching_only: not
    an AllReduce (the lecture's pseudo-code), listed but never swept; switches: its schedules use
    NVSwitch endpoints (NVLink SHARP: a machine needs an ``nvls`` link); network: they use the
    network's reducing switch (SHARP, NCCL's CollNet: a machine needs ``Topology.sharp_us``); no
    backend can run either; nccl_name: NCCL's own name for the algorithm this schedule is (Ring,
    Tree, NVLS, NVLSTree, CollNetDirect, CollNetChain; None where NCCL has none)."""

    name: str
    description: str
    build: Callable[..., Schedule]
    transfer_bound: Callable[[int, dict], int]
    params: tuple[str, ...] = ("channels",)
    needs: tuple[str, ...] = ()
    default_chunks: Callable[[int, int, dict], int] | None = None
    closed_form: Callable | None = None
    granularity: Callable[[int, dict], int] = lambda ranks, params: 1
    formula: str = ""
    exact: str = ""
    teaching_only: bool = False
    switches: bool = False
    nccl_name: str | None = None
    network: bool = False
    collective: str = "all_reduce"


from collsim.algorithms.chain import CHAIN_BROADCAST, CHAIN_REDUCE  # noqa: E402
from collsim.algorithms.classic import DIRECT, HALVING_DOUBLING, RECURSIVE_DOUBLING  # noqa: E402
from collsim.algorithms.collnet import COLLNET_CHAIN, COLLNET_DIRECT  # noqa: E402
from collsim.algorithms.hierarchical import HIERARCHICAL, NCCL_TREE  # noqa: E402
from collsim.algorithms.lecture import (  # noqa: E402
    LECTURE_HIERARCHICAL,
    LECTURE_RING,
    LECTURE_TREE,
)
from collsim.algorithms.nvls import NVLS, NVLS_SHARP, NVLSTREE  # noqa: E402
from collsim.algorithms.p2p import P2P_ALLTOALL, P2P_SENDRECV  # noqa: E402
from collsim.algorithms.pat import PAT_ALLGATHER, PAT_REDUCESCATTER  # noqa: E402
from collsim.algorithms.ring import RING  # noqa: E402
from collsim.algorithms.ring_halves import RING_ALLGATHER, RING_REDUCESCATTER  # noqa: E402
from collsim.algorithms.tree import BINARY_TREE, TREE  # noqa: E402

REGISTRY: dict[str, Algorithm] = {a.name: a for a in (
    RING, TREE, BINARY_TREE, HIERARCHICAL, NCCL_TREE, NVLS, NVLSTREE, NVLS_SHARP, COLLNET_DIRECT,
    COLLNET_CHAIN, HALVING_DOUBLING, RECURSIVE_DOUBLING, DIRECT, LECTURE_RING, LECTURE_TREE,
    LECTURE_HIERARCHICAL)}
ALGORITHMS: dict[str, Algorithm] = {n: a for n, a in REGISTRY.items() if not a.teaching_only}
# every collective's algorithms, the first its default (``REGISTRY``: AllReduce's)
BY_COLLECTIVE: dict[str, dict[str, Algorithm]] = {"all_reduce": REGISTRY, **{
    c: {a.name: a for a in algos}
    for c, algos in (("all_gather", (RING_ALLGATHER, PAT_ALLGATHER)),
                     ("reduce_scatter", (RING_REDUCESCATTER, PAT_REDUCESCATTER)),
                     ("broadcast", (CHAIN_BROADCAST,)), ("reduce", (CHAIN_REDUCE,)),
                     ("alltoall", (P2P_ALLTOALL,)), ("sendrecv", (P2P_SENDRECV,)))}}


def _int(what: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise CollsimError(f"{what} must be an integer, got {value!r}")
    if value < minimum:
        raise CollsimError(f"{what} must be >= {minimum}, got {value}")
    return int(value)


def get(name: str, collective: str = "all_reduce") -> Algorithm:
    """The record of ``collective``'s algorithm ``name``, or
    the one-line "unknown algorithm" error."""
    coll = get_collective(collective).name
    algos = BY_COLLECTIVE[coll]
    if name not in algos:
        what = "algorithm" if coll == "all_reduce" else f"{coll} algorithm"
        raise CollsimError(f"unknown {what} {name!r}; choose from {', '.join(algos)}")
    return algos[name]


def validate(name: str, ranks, collective: str = "all_reduce", **given) -> dict:
    """Check an algorithm name and its parameters; return the parameters it takes (defaults filled
    in, chunks only when given).

    Raises CollsimError (one line) for an unknown name, P < 1, an unknown parameter or one the
    algorithm does not take (with a value other than its default), a missing needed one, or
    gpus_per_node that does not divide P.
    """
    algo = get(name, collective)
    ranks = _int("ranks", ranks, 1)
    for key, value in given.items():
        if key not in DEFAULTS:
            raise CollsimError(f"unknown parameter {key!r} (known: {', '.join(DEFAULTS)})")
        if key not in algo.params and value is not None and value != DEFAULTS[key]:
            raise CollsimError(f"algorithm {name!r} takes no {key!r} parameter")
    params = {}
    for key in algo.params:
        value = given.get(key, DEFAULTS[key])
        if value is None:
            if key in algo.needs:
                raise CollsimError(f"algorithm {name!r} needs {key}")
            continue
        if key == "inter":
            if value not in INTER_ALGORITHMS:
                raise CollsimError(f"inter must be one of {', '.join(INTER_ALGORITHMS)}, got "
                                   f"{value!r}")
        elif key == "direct":
            if not isinstance(value, bool):
                raise CollsimError(f"direct must be true or false, got {value!r}")
        else:
            value = _int(key, value, 1)
            if key == "channels" and value > MAX_CHANNELS:
                raise CollsimError(f"channels must be <= {MAX_CHANNELS} (NCCL's MAXCHANNELS, "
                                   f"collsim.inputs.MAX_CHANNELS), got {value}")
            if value > MAX_RANKS:
                raise CollsimError(f"{key} must be <= {MAX_RANKS} (collsim.inputs.MAX_RANKS), got "
                                   f"{value}")
        params[key] = value
    g = params.get("gpus_per_node")
    if g is not None and ranks % g:
        raise CollsimError(f"gpus_per_node {g} does not divide ranks {ranks}")
    return params


def transfer_limit() -> int:
    """MAX_TRANSFERS, or the COLLSIM_MAX_TRANSFERS environment variable."""
    text = os.environ.get("COLLSIM_MAX_TRANSFERS")
    if text is None:
        return MAX_TRANSFERS
    try:
        return _int("COLLSIM_MAX_TRANSFERS", int(text), 1)
    except ValueError:
        raise CollsimError(f"COLLSIM_MAX_TRANSFERS must be an integer, got {text!r}") from None


def resolve(name: str, ranks: int, count: int, itemsize: int = 4, collective: str = "all_reduce",
            **given) -> dict:
    """The parameters ``build_schedule`` uses: validated, chunks defaulted for ``count * itemsize``
    bytes, the transfer bound checked against ``transfer_limit`` (one-line error naming it and how
    to lift it)."""
    params = validate(name, ranks, collective, **given)
    count = _int("count", count, 0)
    itemsize = _int("itemsize", itemsize, 1)
    if count * itemsize > MAX_BYTES:
        raise CollsimError(f"buffer of {count} x {itemsize} bytes is too large (limit {MAX_BYTES} "
                           f"bytes)")
    get_collective(collective).check_count(int(ranks), count)
    algo = get(name, collective)
    if algo.default_chunks is not None and "chunks" not in params:
        params["chunks"] = algo.default_chunks(count * itemsize, int(ranks), params)
    bound, limit = algo.transfer_bound(int(ranks), params), transfer_limit()
    require_schedule(name, ranks, bound)          # the memory it will hold, then the count
    if bound > limit:
        raise CollsimError(f"{name} on {ranks} ranks would build up to {bound} transfers (about "
                           f"{bound * BYTES_PER_TRANSFER / 2**30:.1f} GiB; limit {limit}, set "
                           f"COLLSIM_MAX_TRANSFERS to lift it): use fewer ranks, channels, slices "
                           f"or chunks")
    return params


def build_schedule(name: str, ranks: int, count: int, itemsize: int = 4, *, gpus_per_node=None,
                   slices=1, chunks=None, inter="ring", channels=1, direct=False, loops=1,
                   nics_per_node=None, collective: str = "all_reduce") -> Schedule:
    """The schedule of ``collective``'s algorithm ``name`` (default AllReduce) for ``count``
    elements of ``itemsize`` bytes per rank on ``ranks`` ranks (the keyword parameters are
    ``DEFAULTS``; each algorithm takes those of its record); chunks default to the record's
    ``default_chunks``."""
    q = resolve(name, ranks, count, itemsize, collective, gpus_per_node=gpus_per_node,
                slices=slices, chunks=chunks, inter=inter, channels=channels, direct=direct,
                loops=loops, nics_per_node=nics_per_node)
    return get(name, collective).build(int(ranks), int(count), int(itemsize), **q)


__all__ = ["ALGORITHMS", "Algorithm", "BY_COLLECTIVE", "REGISTRY", "build_schedule", "get",
           "resolve", "transfer_limit", "validate"]
