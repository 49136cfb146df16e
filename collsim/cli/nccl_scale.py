"""``collsim predict-nccl --nodes 2,4,...,2048``: NCCL AllReduce as the cluster grows
(``collsim.predict.scale``).

    collsim predict-nccl --cluster ib-400g --nodes 2,4,...,2048 --bytes 1G            # NCCL's
    choice per count collsim predict-nccl --cluster ib-400g --nodes 2,4,...,512 --bytes 1G --algos
    all --plot scale.png --json

``--nodes`` takes one count (the usual table of sizes) or a list: "2,4,8", or "2,4,...,2048"
(doubling as the first two say; "4,8,...,24" steps by 4, as doubling does not reach 24). A list
prints, per node count and size, the busbw of NCCL's choice (marked *), and with ``--algos`` (a
comma list of Ring, Tree, NVLS, NVLSTree, or "all") the busbw of each forced beside it ("-": NCCL
cannot run it there). ``--json`` prints ``scale_nccl``'s ``{"nodes", "sizes", "algos", "rows":
[{"nodes", "ranks", "bytes", "algo", "proto", "channels", "time_us", "busbw_GBps", "nccl_choice",
"unavailable", ...}]}``; ``--plot`` draws busbw against the node count. A tqdm bar on stderr follows
the simulations when stderr is a terminal. """
from __future__ import annotations

import re
import sys

from collsim.errors import CollsimError
from collsim.machine.bounds import MAX_NODES
from collsim.predict.scale import scale_nccl
from collsim.units import format_size

MAX_COUNTS = 64        # node counts in one sweep


def parse_nodes(text: str) -> list[int]:
    """Node counts from "2,4,8" or "2,4,...,2048" (module docstring), increasing, each 1..MAX_NODES,
    at most MAX_COUNTS; anything else is a one-line CollsimError."""
    items = [x.strip() for x in str(text).split(",")]
    if "..." in items:
        at = items.index("...")
        if at < 2 or at != len(items) - 2:
            raise CollsimError(f"--nodes {text!r:.60}: write a range as FIRST,SECOND,...,LAST "
                               "(e.g. 2,4,...,2048)")
        head, last = [_count(x, text) for x in items[:at]], _count(items[-1], text)
        a, b = head[-2], head[-1]
        if b % a == 0 and b > a and _reaches(b, last, b // a):
            step, times = b // a, True
        elif b > a and (last - b) % (b - a) == 0 and last >= b:
            step, times = b - a, False
        else:
            raise CollsimError(f"--nodes {text!r:.60}: from {a}, {b} neither multiplying by "
                               f"{b}/{a} nor adding "
                               f"{b - a} reaches {last}")
        counts = list(head)
        while counts[-1] < last and len(counts) <= MAX_COUNTS:
            counts.append(counts[-1] * step if times else counts[-1] + step)
    else:
        counts = [_count(x, text) for x in items]
    if len(counts) > MAX_COUNTS:
        raise CollsimError(f"--nodes {text!r:.60}: at most {MAX_COUNTS} node counts in one sweep")
    if any(b <= a for a, b in zip(counts, counts[1:])):
        raise CollsimError(f"--nodes {text!r:.60}: list node counts in increasing order, each once")
    return counts


def _count(item: str, text: str) -> int:
    if not re.fullmatch(r"[0-9]{1,6}", item) or not 1 <= int(item) <= MAX_NODES:
        raise CollsimError(f"--nodes {text!r:.60}: {item!r:.20} is not a node count from 1 to "
                           f"{MAX_NODES}")
    return int(item)


def _reaches(start: int, last: int, ratio: int) -> bool:
    while start < last:
        start *= ratio
    return start == last


def cmd_scale(args, cluster, sizes, env) -> dict:
    """Run and print the sweep of ``args.nodes`` (a list) over ``sizes``; returns ``scale_nccl``'s
    result."""
    algos = [a.strip() for a in (args.algos or "").split(",") if a.strip()]
    total = len(args.nodes) * (1 + (4 if algos == ["all"] else len(algos)))
    bar = _bar(total)
    try:
        result = scale_nccl(cluster, args.nodes, sizes, algos=algos, algo=args.algo,
                            proto=args.proto, env=env, harness=args.harness, timing=args.timing,
                            gpus_per_process=args.gpus_per_process, progress=bar and bar.update,
                            coll=args.coll)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        return result
    print(f"{cluster.describe()}; resized to {', '.join(map(str, args.nodes))} nodes; harness "
          f"{result['harness']} "
          f"({result['timing']})")
    cols = result["algos"]
    print(f"{'nodes':>6} {'ranks':>7} {'bytes':>6}  {'NCCL chooses':<16} {'ch':>3} {'time us':>11} "
          f"{'busbw':>8}  "
          + "".join(f"{a:>10}" for a in cols) + ("  busiest resource" if not cols else ""))
    for n in args.nodes:
        for size in result["sizes"]:
            here = [r for r in result["rows"] if r["nodes"] == n and r["bytes"] == size]
            ch = next(r for r in here if r["nccl_choice"])
            line = (f"{n:6d} {ch['ranks']:7d} {format_size(size):>6}  "
                    f"{ch['algo'] + '/' + ch['proto']:<16} "
                    f"{ch['channels']:3d} {ch['time_us']:11.1f} {ch['busbw_GBps']:8.2f}  ")
            for a in cols:
                r = ch if ch["algo"] == a else next((x for x in here if x["algo"] == a), None)
                cell = "-" if r is None or r["busbw_GBps"] is None else f"{r['busbw_GBps']:.2f}"
                line += f"{cell + ('*' if r is ch else ' '):>10}"
            if not cols:
                line += f"{ch['busiest']} {100 * ch['busy']:.0f}%" if ch.get("busiest") else "-"
            print(line)
    if cols:
        print("busbw in GB/s (nccl-tests' busbw); * NCCL's choice; - NCCL cannot run it there")
    return result


def _bar(total: int):
    """A tqdm bar on stderr over ``total`` simulations, or None (no terminal, or tqdm missing)."""
    if not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="sim", file=sys.stderr, leave=False, desc="predict-nccl")
