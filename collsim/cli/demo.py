"""``collsim demo``: the quick-start job (see ``collsim.demo``)."""
from __future__ import annotations


def cmd_demo(args) -> int:
    from collsim.demo import run
    return run(args.out or None, args.preset, args.nodes)


def register(sub) -> None:
    p = sub.add_parser("demo", help="predicted times on a preset cluster next to the bundled H200 measurements")
    p.add_argument("--out", default="out/demo.png", help="figure to write (PNG); '' for none")
    p.add_argument("--preset", default="ib-400g", help="topology preset for the predictions")
    p.add_argument("--nodes", type=int, default=None, help="resize the preset to this many nodes")
    p.set_defaults(func=cmd_demo)
