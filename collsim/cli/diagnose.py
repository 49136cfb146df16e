"""``collsim diagnose``: is this AllReduce as fast as the hardware allows, and if not, why?

    collsim diagnose [FILE ...] [--cluster SPEC] [--algo ALGO] [--measured SIZE=BUSBW_GBps ...]
                     [--json] [--top N] [--plot PNG]

FILEs are whatever a user has, in any order, recognised by content (``collsim.diagnose.sources``):
nccl-tests output (any version, launcher tags, truncated), NCCL_DEBUG lines, ``nvidia-smi topo -m``,
ibstatus/ibstat/ibv_devinfo, NCCL_* settings and command lines, collsim records. A file that cannot
be read is named and skipped. Without ``--cluster`` the machine comes from what the files reveal,
and the report says what was assumed. Prints per size band the measured busbw against collsim's
expected range (and NCCL's own model), a verdict and the likely causes ranked with their evidence
lines, the fix, the file that would settle each and its source; then the five answers
(``collsim.diagnose.answers``: expected busbw per band, why below, NCCL's choice against the
simulated best, ``--nccl A,B`` version against version, how to model it; ``--json`` key
``answers``); ``--json`` prints ``{"verdict", "bands", "causes": [{"label", "score", "evidence",
"fix", "source", ...}], ...}``, most likely first; ``--plot`` writes the measured busbw against the
expected range (``collsim.viz.diagnose``).
"""
from __future__ import annotations

from collsim.cli.args import finite_json, plot_path, positive_int
from collsim.diagnose import diagnose
from collsim.diagnose.answers import answer
from collsim.diagnose.report import answers_text, text
from collsim.errors import CollsimError, require_number
from collsim.nccl.constants import VERSIONS
from collsim.outputs import check_output
from collsim.units import parse_size
from collsim.viz.diagnose import diagnose_figure


def _measured(items) -> list:
    out = []
    for item in items or ():
        size, sep, value = item.partition("=")
        if not sep:
            raise CollsimError(f"--measured {item!r:.60}: expected SIZE=BUSBW_GBps, e.g. 1G=42.5")
        try:
            busbw = float(value)
        except ValueError:
            raise CollsimError(f"--measured {item!r:.60}: busbw {value!r:.20} is not a "
                               "number") from None
        nbytes = parse_size(size)
        if nbytes < 1:
            raise CollsimError(f"--measured {item!r:.60}: the size must be at least 1 byte")
        out.append((nbytes, require_number(f"--measured {size} busbw", busbw, minimum=0)))
    return out


def cmd_diagnose(args) -> int:
    measured = _measured(args.measured)
    if args.plot:
        check_output(args.plot, args.files, "figure")
    pair = _versions(args.nccl)
    report = diagnose(args.files, args.cluster, measured, args.algo)
    report["answers"] = answer(report, args.cluster, pair)
    if args.plot:
        diagnose_figure(report, args.plot)
    if args.json:
        print(finite_json(report))
        return 0
    for line in text(report, args.top) + answers_text(report["answers"]):
        print(line)
    return 0


def _versions(text):
    if text is None:
        return None
    pair = tuple(v.strip() for v in text.split(","))
    if len(pair) != 2 or not all(pair):
        raise CollsimError(f"--nccl {text!r:.40}: expected two versions, e.g. 2.22,2.25")
    for v in pair:
        if not v.replace(".", "").isdigit() or v not in VERSIONS:
            raise CollsimError(f"--nccl {v!r:.20}: not one of the ported NCCL versions "
                               f"({', '.join(VERSIONS)})")
    return pair


def register(sub) -> None:
    p = sub.add_parser("diagnose",
                       help="is my AllReduce as fast as this hardware allows, and if not, why?",
                       description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="nccl-tests output, NCCL_DEBUG logs, nvidia-smi topo -m, ibstatus, env "
                        "dumps, command lines, collsim records (any order)")
    p.add_argument("--cluster", help="preset name or cluster file (default: what the files reveal)")
    p.add_argument("--measured", nargs="+", metavar="SIZE=BUSBW_GBps",
                   help="busbw you measured, e.g. 1G=42.5")
    p.add_argument("--nccl", metavar="A,B", help="two NCCL versions to compare on this machine, "
                                                 "e.g. 2.22,2.25")
    p.add_argument("--algo", help="the algorithm the run used, NCCL's name (default: NCCL_ALGO or "
                                  "NCCL's per-call TUNING lines in the files; else NCCL's choice, "
                                  "with Ring and Tree forced beside it)")
    p.add_argument("--top", type=positive_int, default=5, help="causes to print (default 5)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--plot", type=plot_path,
                   help="write a figure (.png, .pdf, .svg, ...): measured busbw against the "
                        "expected range")
    p.set_defaults(func=cmd_diagnose)
