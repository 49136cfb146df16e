"""The measurement's own errors, for the ``measurement_error`` cause of ``collsim.diagnose.causes``:
separate runs pasted as one (headers or footers one after the other, interleaved ``# Rank 0``
blocks, ``-J`` files of one host each), per-call logging among the timed rows, a sweep that stops
before busbw peaks.
``measurement(ctx)`` returns ``collsim.diagnose.checks.Hit`` s, as every check there does."""
from __future__ import annotations

from collsim.diagnose.hits import LARGE, Hit


def _headers_together(src, run) -> list:
    """Two nccl-tests headers with only comments between them: processes that each ran their own
    test.
    """
    h = run.headers
    if len(h) < 2 or not all(not t.strip() or t.lstrip().startswith("#") and _RANK_TEXT not in t
                             for t in src.lines[h[0]:h[1] - 1]):
        return []
    return [Hit(f"{run.source}:{h[1]}",
                f"{len(h)} nccl-tests headers one after the other: {len(h)} processes each ran a "
                "test of its own (nccl-tests without MPI=1, or one launch per node), not one run "
                "across the nodes", 3.0)]


_RANK_TEXT = "Rank "


def _json_per_node(src) -> list:
    """Several ``-J`` documents of one collective in one file, each of one host and the hosts all
    different: a launch per node, each its own test."""
    runs = src.runs if "nccl-tests-json" in src.kinds else []
    hosts = [tuple(r.hosts) for r in runs]
    if (len(runs) < 2 or any(len(h) != 1 for h in hosts) or len(set(hosts)) < len(hosts)
            or len({r.meta.get("collective") for r in runs}) > 1):
        return []
    return [Hit(src.name, f"{len(runs)} nccl-tests -J files of {runs[0].meta.get('collective')}, "
                f"each on one host ({', '.join(h for (h,) in hosts)}): a launch per node, each its "
                "own test, not one run across the nodes", 3.0)]


def measurement(ctx):
    hits = []
    firsts = [(src, r) for src in ctx.ev.sources for r in src.runs[:1] if r.source == src.name]
    for src in ctx.ev.sources:
        hits += _json_per_node(src)
    for src, run in firsts:
        hits += _headers_together(src, run)
        a = run.averages
        between = src.lines[a[0]:a[1] - 1] if len(a) > 1 else ["-"]
        if (len(run.groups) <= 1
                and all(not t.strip() or t.lstrip().startswith("#") for t in between)):
            # footers one after the other, only comments between them: runs that ended together
            hits.append(Hit(f"{run.source}:{run.averages[0]}",
                            f"{len(run.averages)} '# Avg bus bandwidth' footers with no result row "
                            "between them: separate runs that ended together, not one run", 3.0))
        first_row = min((r["line"] for r in src.runs for r in r.rows), default=None)
        # interleaved
        if len(run.groups) > 1 and (first_row is None or run.group_lines[1] < first_row):
            hosts = ", ".join(sorted({h for g in run.groups for h in g}))
            where = f"{run.source}:{run.headers[0]}" if run.headers else run.source
            hits.append(Hit(where,
                            f"{len(run.groups)} separate runs ('# Rank 0' {len(run.groups)} times, "
                            f"{len(run.averages)} averages) on {hosts}: not one run across the "
                            "nodes", 3.0))
    ev = ctx.ev
    hosts = set(ev.hosts) | ev.nccl_hosts
    if ev.nodes and ev.nodes[0] == 1 and len(hosts) > 1 and not hits:
        hits.append(Hit(ev.nodes[1],
                        f"NCCL counts nNodes 1 while the files name {len(hosts)} hosts", 2.5))
    for src in ev.sources:
        calls = [n for n, line in enumerate(src.lines, 1) if "Bytes -> Algo" in line]
        if calls and any(run.rows for run in src.runs):
            hits.append(Hit(f"{src.name}:{calls[0]}",
                            f"{len(calls)} per-call NCCL log lines among the timed rows: "
                            "logging every call (NCCL_DEBUG_SUBSYS=COLL/TUNING) slows every call",
                            1.5))
    big = max((r["bytes"] for res in ctx.results for r in res.run.rows), default=0)
    if 0 < big < LARGE and ctx.shortfall:
        hits.append(Hit(ctx.results[0].run.source,
                        f"the largest size is {big} B: busbw reaches its peak only "
                        "near 1 GB (use -e 8G)", 1.0))
    return hits
