"""Arguments shared by the core sub-commands: sizes, counts, algorithm and topology options.

Units: sizes in bytes (suffixes K, M, G = binary multiples, as nccl-tests), alpha in seconds,
beta and gamma in seconds per byte. Every number has a range (``collsim.inputs``' bounds: sizes
``MAX_BYTES``, ranks and nodes ``MAX_RANKS``, channels ``MAX_CHANNELS``, alpha ``MAX_SECONDS``,
beta and gamma ``MAX_SECONDS_PER_BYTE``), checked when the arguments are parsed, before any work;
so is the format of a figure to write (``plot_path``). Bad values raise
``argparse.ArgumentTypeError`` (argparse's one-line error) or ``CollsimError`` (the CLI's
one-line error, exit 2). ``emit`` prints JSON that is always valid (no NaN or Infinity).
"""
from __future__ import annotations

import argparse
import json
import math

from collsim.algorithms import BY_COLLECTIVE, build_schedule
from collsim.core.collective import get as get_collective
from collsim.core.document import MAX_ITEMSIZE
from collsim.errors import CollsimError, require_number
from collsim.inputs import (
    MAX_BYTES,
    MAX_CHANNELS,
    MAX_RANKS,
    MAX_SECONDS,
    MAX_SECONDS_PER_BYTE,
    int_text,
)
from collsim.machine import load_cluster, load_machine, machine_kind, to_topology
from collsim.machine.topology import Link, Topology
from collsim.outputs import plot_format
from collsim.simulate.reference import POLICIES
from collsim.units import parse_size


def _argument_type(parse):
    """``parse`` as an argparse type: a CollsimError becomes argparse's one-line error."""
    def typed(text: str):
        try:
            return parse(text)
        except CollsimError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return typed


# for other commands' own parsers (collsim.cli.nccl_scale.parse_nodes)
argument_type = _argument_type


def _size(text: str) -> int:
    return parse_size(text)


size_arg = _argument_type(_size)


def int_in(minimum: int, maximum: int):
    """An argparse type: a whole number from ``minimum`` to ``maximum``."""
    return _argument_type(lambda text: int_text(text, "the value", minimum, maximum))


positive_int = int_in(1, MAX_RANKS)     # ranks, nodes, GPUs, slices, chunks, ...
nonneg_int = int_in(0, MAX_BYTES)       # element counts


def float_in(minimum: float, maximum: float, positive: bool = False):
    """An argparse type: a finite number from ``minimum`` to ``maximum`` (> 0 with ``positive``)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise CollsimError(f"expected a number, got {text!r}") from None
        return require_number("the value", value, minimum, positive, maximum)
    return _argument_type(parse)


seconds = float_in(0.0, MAX_SECONDS)                             # alpha
seconds_per_byte = float_in(0.0, MAX_SECONDS_PER_BYTE)           # gamma
positive_seconds_per_byte = float_in(0.0, MAX_SECONDS_PER_BYTE, positive=True)  # beta


def _figure(text: str) -> str:
    plot_format(text)
    return text


plot_path = _argument_type(_figure)  # a figure file of a known format (collsim.outputs)


def collective_name(text: str) -> str:
    """--coll's value: a collective's nccl-tests name (``collsim.core.collective``), one-line error
    otherwise."""
    try:
        return get_collective(text).name
    except CollsimError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_algo_args(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--coll", type=collective_name, default=None,
                   help="the collective, as nccl-tests names it: all_reduce (default), all_gather, "
                        "reduce_scatter, broadcast, reduce, alltoall, sendrecv")
    p.add_argument("--algo", required=required,
                   help="algorithm name (see `collsim schedule --list`; default with --coll: the "
                        "collective's first)")
    p.add_argument("--ranks", type=positive_int, help="number of ranks P >= 1")
    p.add_argument("--gpus-per-node", type=positive_int,
                   help="GPUs per node (hierarchical algorithms)")
    p.add_argument("--slices", type=positive_int, default=1, help="ring pipeline slices per chunk")
    p.add_argument("--chunks", type=positive_int, help="tree pipeline chunks (default: by size)")
    p.add_argument("--inter", choices=("ring", "tree"), default="ring",
                   help="inter-node algorithm of `hierarchical`")
    p.add_argument("--channels", type=int_in(1, MAX_CHANNELS),
                   help="channels C >= 1: the buffer in C parts, each its own ring or tree (NCCL's "
                        "channels; default 1, or NCCL's own count where `simulate --cluster` runs "
                        "NCCL's schedule)")
    p.add_argument("--itemsize", type=int_in(1, MAX_ITEMSIZE), default=4,
                   help="bytes per element (default 4)")


def algo_params(args) -> dict:
    return {"gpus_per_node": args.gpus_per_node, "slices": args.slices, "chunks": args.chunks,
            "inter": args.inter, "channels": args.channels or 1,
            "direct": getattr(args, "direct", False)}


def fit_to_topology(args, topo) -> None:
    """Defaults the topology implies: gpus_per_node for algorithms that need it (and for ``ring``
    across nodes: NCCL's rail rings), ``direct`` rings on boards without NVSwitch."""
    algo = BY_COLLECTIVE[coll_of(args)].get(args.algo)
    if algo is None or args.gpus_per_node is not None:
        pass
    elif "gpus_per_node" in algo.needs or ("gpus_per_node" in algo.params and topo.nodes > 1):
        args.gpus_per_node = topo.gpus_per_node
    if algo is not None and "direct" in algo.params and topo.links_per_pair:
        args.direct = True


def element_count(args) -> int:
    """Element count from --count or --bytes (which must be a multiple of --itemsize)."""
    if getattr(args, "count", None) is not None:
        return args.count
    nbytes = args.bytes
    if nbytes is None:
        raise CollsimError("give the buffer size with --bytes (or --count elements)")
    if nbytes % args.itemsize:
        raise CollsimError(f"--bytes {nbytes} is not a multiple of --itemsize {args.itemsize}")
    return nbytes // args.itemsize


def require_ranks(args) -> int:
    if args.ranks is None:
        raise CollsimError("--ranks is required (or a machine: --cluster)")
    return args.ranks


def coll_of(args) -> str:
    """The collective the arguments name (--coll; all_reduce without it)."""
    return getattr(args, "coll", None) or "all_reduce"


def algo_of(args) -> str | None:
    """--algo, or with --coll and no --algo that collective's first algorithm (all_reduce: ring)."""
    if args.algo is None and getattr(args, "coll", None):
        return next(iter(BY_COLLECTIVE[args.coll]))
    return args.algo


def build_from_args(args):
    """The schedule the arguments ask for; with --cluster, ranks and the layout come from the
    machine."""
    if getattr(args, "cluster", None):
        topo = topology_from_args(args, args.ranks)
        fit_to_topology(args, topo)
        args.ranks = topo.ranks
    return build_schedule(args.algo, require_ranks(args), element_count(args), args.itemsize,
                          collective=coll_of(args), **algo_params(args))


CLUSTER_HELP = ("the machine: a preset name (`collsim simulate --list-presets`), a cluster "
                "YAML/JSON file (collsim.machine.cluster) or a link-level topology file "
                "(collsim.machine.topology)")


def add_cluster_args(g) -> None:
    g.add_argument("--cluster", help=CLUSTER_HELP)
    g.add_argument("--nodes", type=positive_int, help="resize the cluster to this many nodes")


def add_topology_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("machine (--cluster, or --alpha/--beta for a uniform one)")
    add_cluster_args(g)
    g.add_argument("--alpha", type=seconds, help="latency per message, seconds")
    g.add_argument("--beta", type=positive_seconds_per_byte,
                   help="seconds per byte (1 / bandwidth), > 0")
    g.add_argument("--alpha-inter", type=seconds, help="inter-node alpha, seconds (hierarchical)")
    g.add_argument("--beta-inter", type=positive_seconds_per_byte,
                   help="inter-node beta, seconds per byte (hierarchical)")
    g.add_argument("--gamma", type=seconds_per_byte, default=0.0,
                   help="reduction cost, seconds per byte (default 0)")
    g.add_argument("--policy", choices=POLICIES, default=POLICIES[0],
                   help="how a port serves the transfers on it: fair (shares its rate among them, "
                        "default) or schedule (one at a time in schedule order: what the closed "
                        "forms assume)")


def _cluster_topology(args, ranks: int | None):
    """--cluster's machine: a preset or cluster file resized by --nodes, --gpus-per-node, or --ranks
    (whole nodes of it); a link-level topology file as it is."""
    if machine_kind(args.cluster) == "topology":
        return load_machine(args.cluster, args.nodes)
    return to_topology(cluster_from_args(args, ranks))


def cluster_from_args(args, ranks: int | None):
    """--cluster's described machine (a preset or cluster file, ``collsim.machine.cluster.Cluster``)
    resized by --nodes, --gpus-per-node, or --ranks (whole nodes of it); None for a link-level
    topology file."""
    if machine_kind(args.cluster) == "topology":
        return None
    cluster = load_cluster(args.cluster).resized(gpus_per_node=args.gpus_per_node)
    nodes = args.nodes
    if nodes is None and ranks is not None:
        if ranks % cluster.gpus_per_node:
            raise CollsimError(f"--ranks {ranks} is not a multiple of the cluster's "
                               f"{cluster.gpus_per_node} GPUs per node (give --gpus-per-node)")
        nodes = ranks // cluster.gpus_per_node
    return cluster.resized(nodes=nodes)


def topology_from_args(args, ranks: int | None):
    """The topology the arguments ask for, checked against ``ranks`` (None: the machine's GPUs)."""
    for key in ("cluster", "alpha", "beta", "alpha_inter", "beta_inter", "nodes", "gpus_per_node"):
        if not hasattr(args, key):
            # commands that take only some of the options
            setattr(args, key, None)
    chosen = [x for x in ("cluster",) if getattr(args, x)]
    if args.alpha is not None or args.beta is not None:
        chosen.append("alpha/beta")
    if len(chosen) != 1:
        raise CollsimError("give exactly one machine: --cluster SPEC, or --alpha and --beta"
                           + (f" (got {', '.join(chosen)})" if chosen else ""))
    if args.nodes is not None and not args.cluster:
        raise CollsimError("--nodes resizes a --cluster")
    if args.cluster:
        topo = _cluster_topology(args, ranks)
        ranks = topo.ranks if ranks is None else ranks
    else:
        ranks = require_ranks(args) if ranks is None else ranks
        if args.alpha is None or args.beta is None:
            raise CollsimError("a uniform topology needs both --alpha and --beta")
        if args.gpus_per_node and args.gpus_per_node < ranks:
            if args.alpha_inter is None or args.beta_inter is None:
                raise CollsimError("--gpus-per-node with --alpha/--beta needs --alpha-inter and "
                                   "--beta-inter")
            if ranks % args.gpus_per_node:
                raise CollsimError(f"--ranks {ranks} is not a multiple of --gpus-per-node "
                                   f"{args.gpus_per_node}")
            gpn = args.gpus_per_node
            topo = Topology(ranks // gpn, gpn, Link(args.alpha, args.beta),
                            Link(args.alpha_inter, args.beta_inter), gpn, "two-level",
                            "from --alpha/--beta/--alpha-inter/--beta-inter",
                            nvls=Link(args.alpha, args.beta),
                            sharp_us=0.0)     # switches at the links' costs
        else:
            topo = Topology.uniform(ranks, args.alpha, args.beta)
    if topo.ranks != ranks:
        raise CollsimError(f"the topology has {topo.ranks} GPUs ({topo.nodes} nodes x "
                           f"{topo.gpus_per_node}), but --ranks is {ranks}")
    return topo


def round_seconds(t: float) -> float:
    """A time rounded to 12 significant digits: the closed form and the simulation add the same
    terms in different orders, so they agree to ~1e-16 relative, and print identically."""
    return float(f"{t:.12g}")


def finite_json(obj) -> str:
    """``obj`` as JSON whose NaN and infinite numbers are null (JSON has neither: a parser would
    refuse the file Python's default writes)."""
    def clean(x):
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        return [clean(v) for v in x] if isinstance(x, (list, tuple)) else x
    return json.dumps(clean(obj), allow_nan=False)


def emit(args, obj: dict, text: str) -> None:
    print(finite_json(obj) if args.json else text)
