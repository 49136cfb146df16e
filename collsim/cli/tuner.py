"""``collsim export-tuner``: the simulated best algorithm, protocol and channels per size band, as
the CSV NCCL's example tuner plugin reads (``NCCL_TUNER_CONFIG_FILE``; ``collsim.predict.tuner``).

    collsim export-tuner --cluster SPEC [--coll AllReduce ...] [-b MIN] [-e MAX]
                         [--timing eager|graph] -o FILE
"""

from __future__ import annotations

from collsim import __version__
from collsim.cli.args import size_arg
from collsim.core.collective import COLLECTIVES
from collsim.errors import CollsimError
from collsim.machine import load_cluster
from collsim.outputs import atomic_write, check_output
from collsim.predict.tuner import tuner_csv, tuner_rows
from collsim.sweep import sizes as size_range

# the collectives NCCL's tuner plugins choose for: those with a cost table (not AlltoAll, SendRecv)
TUNABLE = {n.lower(): c.nccl_name for c in COLLECTIVES.values() if c.algorithms
           for n in (c.name, c.nccl_name)}


def cmd_export_tuner(args) -> int:
    inputs = [args.cluster] if args.cluster.endswith((".yaml", ".yml", ".json")) else []
    check_output(args.output, inputs, "tuner file")
    unknown = [c for c in args.coll if str(c).lower() not in TUNABLE]
    if unknown:
        raise CollsimError(f"--coll {unknown[0]!r:.40}: not one NCCL's tuner chooses for "
                           f"({', '.join(sorted(set(TUNABLE.values())))})")
    cluster = load_cluster(args.cluster)
    rows = tuner_rows(
        cluster, args.coll, size_range(args.minbytes, args.maxbytes, 2).tolist(), timing=args.timing
    )
    comments = [
        f"collsim {__version__} export-tuner --cluster {args.cluster}: the simulated best per size "
        "band",
        f"for {cluster.describe()}"[:200],
        "load: NCCL_TUNER_PLUGIN=<path>/libnccl-tuner-example.so NCCL_TUNER_CONFIG_FILE=<this "
        "file>",
        "rows apply to this nNodes x nRanks only; every size has a row (unmatched: the plugin runs "
        "1 channel)",
    ]
    with atomic_write(args.output, "tuner file") as f:
        f.write(tuner_csv(rows, comments))
    for r in rows:
        print(
            f"{r['collective']} {r['min_bytes']}-{r['max_bytes']}: "
            f"{r['algorithm']}/{r['protocol']} "
            f"{r['channels']} channels (up to {r['max_gain']:.2f}x NCCL's own choice, simulated)"
        )
    print(f"wrote {len(rows)} rows to {args.output}")
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "export-tuner",
        help="the simulated best per size band as NCCL's example tuner plugin CSV",
        description=__doc__.splitlines()[0],
    )
    p.add_argument("--cluster", required=True, help="preset name or cluster file")
    p.add_argument(
        "--coll", nargs="+", default=["AllReduce"], help="collectives (default AllReduce)"
    )
    p.add_argument(
        "-b", "--minbytes", type=size_arg, default=8, help="smallest size simulated (default 8)"
    )
    p.add_argument(
        "-e",
        "--maxbytes",
        type=size_arg,
        default=8 << 30,
        help="largest size simulated (default 8G)",
    )
    p.add_argument(
        "--timing", choices=("eager", "graph"), default="eager", help="the harness's timing"
    )
    p.add_argument(
        "-o", "--output", required=True, help="the CSV to write (NCCL_TUNER_CONFIG_FILE)"
    )
    p.set_defaults(func=cmd_export_tuner)
