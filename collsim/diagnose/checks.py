"""Evidence computed from parsed facts, for the causes of ``collsim.diagnose.causes`` whose sign is
not one line but a relation: ports slower than their neighbours, a node common to every slow pair,
two NCCL versions at the same sizes, busbw above the network bound on two nodes, separate runs in
one file.

``CHECKS[label](ctx)`` returns ``Hit`` s (where, why, weight); ``ctx`` is the ``Context`` of
``collsim.diagnose.verdict``: the evidence, each run's comparison with its expected range, the
cluster.
"""
from __future__ import annotations

import re
import statistics

from collsim.diagnose.hits import LARGE, Hit
from collsim.diagnose.measurement_checks import measurement

FAR = ("NODE", "SYS", "SOC", "PHB")   # topo -m relations that go through a CPU


def _large_max(rows) -> tuple:
    """(busbw, row) of the fastest row of at least LARGE bytes, else of any row."""
    big = [r for r in rows if r["bytes"] >= LARGE] or list(rows)
    best = max(big, key=lambda r: r["busbw_GBps"], default=None)
    return (best["busbw_GBps"], best) if best else (None, None)


def _where(run, row) -> str:
    return run.source if not row or not row.get("line") else f"{run.source}:{row['line']}"


def sockets(ctx):
    ev = ctx.ev
    socket = ev.transports.get("NET/Socket") or ev.transports.get("network Socket")
    active = [p for p in ev.ports if (p["state"] or "").startswith("ACTIVE")]
    if socket and active:
        return [Hit(active[0]["where"],
                    f"IB port {active[0]['device']} is ACTIVE, yet NCCL used sockets", 1.0)]
    return []


def nic_far(ctx):
    ev, hits = ctx.ev, []
    if ev.topo:
        topo, src = ev.topo
        far = [g for g in topo["gpus"] if topo["nics"] and all(
            topo["cells"].get((g, n), "SYS") in FAR for n in topo["nics"])]
        if far and len(far) * 2 >= len(topo["gpus"]):
            g = far[0]
            rel = min(topo["cells"].get((g, n), "SYS") for n in topo["nics"])
            where = f"{src}:{topo['rows'].get(g, topo['header'])}"
            hits.append(Hit(where,
                            f"{len(far)} of {len(topo['gpus'])} GPUs reach every NIC through a CPU "
                            f"({g}: {rel})", 1.5))
        near = {n: [g for g in topo["gpus"] if topo["cells"].get((g, n)) in ("PIX", "PXB")]
                for n in topo["nics"]}
        shared = {n: gs for n, gs in near.items() if len(gs) > 1}
        if shared and len(topo["nics"]) < len(topo["gpus"]) and not far:
            n, gs = min(shared.items())
            name = topo["names"].get(n, n)
            hits.append(Hit(f"{src}:{topo['rows'].get(n, topo['header'])}", f"{name} is the "
                                                                            "nearest NIC of "
                            f"{' and '.join(gs)}: {len(topo['nics'])} NICs for {len(topo['gpus'])} "
                            "GPUs, so GPUs "
                            "share a NIC's bandwidth", 0.5))
    per_node = ctx.gpus_per_node or 0
    active = [p for p in ev.ports if (p["state"] or "").startswith("ACTIVE")]
    if len(ev.nics) == 1 and len(active) <= 1 and per_node > 2 and ctx.nodes and ctx.nodes > 1:
        hits.append(Hit(ev.nics[0][2],
                        f"NCCL uses one NIC ({ev.nics[0][0]}) for {per_node} GPUs: most of them "
                        "are not on its PCI switch", 1.0))
    elif (len(ev.nics) == 1 and len(active) <= 1 and not per_node and ev.rows_ranks
          and ev.rows_ranks[0] > 2):
        hits.append(Hit(ev.nics[0][2], f"NCCL lists one NIC ({ev.nics[0][0]}) for the "
                                       f"{ev.rows_ranks[0]} ranks "
                        f"the rows imply ({ev.rows_ranks[1]}): unless each has a node of its own, "
                        "GPUs share it and "
                        "those off its PCI switch reach it through the CPU", 1.0))
    return hits + _shared_nic(ev)


def link_rate(ctx):
    active = [p for p in ctx.ev.ports if (p["state"] or "").startswith("ACTIVE") and p["rate_Gbps"]]
    hits = []
    top = max((p["rate_Gbps"] for p in active), default=0)
    nominal = ctx.cluster.nic_Gbps if ctx.cluster is not None and ctx.spec_given else 0
    for p in active:
        if p["rate_Gbps"] < 0.75 * max(top, nominal):
            hits.append(Hit(p["where"],
                            f"{p['device']} port {p['port']} runs at {p['rate_Gbps']:g} Gb/s where "
                            f"{'others run' if top > p['rate_Gbps'] else 'the NIC is'} at "
                            f"{max(top, nominal):g}", 2.0))
    stated = max(ctx.ev.stated_rates, default=None)
    total = sum(p["rate_Gbps"] for p in active)
    if stated and active and not hits and stated[0] > 1.5 * total:
        hits.append(
            Hit(
                stated[1],
                f"you state {stated[0]:g} Gb/s; the {len(active)} active "
                "port(s) listed run at "
                f"{total:g} Gb/s in all ({active[0]['device']}: {active[0]['rate_Gbps']:g})",
                1.5,
            )
        )
    return hits[:3]


def _shared_nic(ev) -> list:
    """Hits where two GPUs of a host send through one NIC while NICs NCCL lists carry no channel."""
    by_host = {}
    for c in ev.channels:
        if c["nic"] is not None and c["via"].startswith("NET/"):
            by_host.setdefault(c["host"], {}).setdefault(c["nic"], set()).add(c["dev"])
    for host, nics in sorted(by_host.items()):
        shared = {n: devs for n, devs in nics.items() if len(devs) > 1}
        if shared and len(ev.nics) > len(nics):
            n, devs = min(shared.items())
            where = next(c["where"] for c in ev.channels if c["host"] == host and c["nic"] == n)
            return [Hit(where, f"GPUs {', '.join(map(str, sorted(devs)))} of {host} go through "
                               f"NET/IB/{n} while "
                        f"{len(ev.nics) - len(nics)} of the {len(ev.nics)} NICs NCCL lists carry "
                        "no channel", 1.5)]
    return []


def channels(ctx):
    hits, want = [], ctx.predicted_channels
    if want and ctx.ev.coll_channels and ctx.ev.coll_channels[0] * 2 <= want:
        n, where = ctx.ev.coll_channels
        hits.append(Hit(where, f"{n} coll channels where NCCL's choice here runs {want}", 1.5))
    for name in ("NCCL_MAX_NCHANNELS", "NCCL_MAX_CTAS"):
        value, where = ctx.ev.env.get(name, (None, ""))
        if value and value.isdigit() and want and int(value) * 2 <= want:
            hits.append(Hit(where, f"{name}={value} caps channels below the {want} NCCL would run",
                            1.5))
    return hits


def nvls(ctx):
    c, ev = ctx.cluster, ctx.ev
    if c is None or not c.nvls or c.gpus_per_node <= 2 or not ev.nvls_channels:
        return []
    n, where = ev.nvls_channels
    return ([Hit(where, "0 nvls channels on an NVSwitch node with NVLink SHARP", 1.5)] if n == 0
            else [])


def _network_bound(ctx) -> tuple:
    """(nodes, NICs per node, Gb/s each): the cluster's, else what the files show (NCCL's NIC list,
    active ports, the topology's NICs; the ports' rate), None where they do not say.
    """
    c, ev = ctx.cluster, ctx.ev
    if c is not None:
        return c.nodes, c.nics_per_node, c.nic_Gbps
    active = [p for p in ev.ports if (p["state"] or "").startswith("ACTIVE")]
    nics = len(ev.nics) or len(active) or (len(ev.topo[0]["nics"]) if ev.topo else 0)
    rate = max((p["rate_Gbps"] or 0 for p in active), default=0)
    return (ev.nodes[0] if ev.nodes else None), nics or None, rate or None


def two_nodes(ctx):
    algo = ctx.ev.env.get("NCCL_ALGO", ("", ""))[0].lower()
    nodes, nics, rate = _network_bound(ctx)
    if algo.strip() == "ring" or nodes != 2 or not nics or not rate:
        return []
    bound = nics * rate / 8
    for res in ctx.results:
        busbw, row = _large_max(res.run.rows)
        if busbw and busbw > bound:
            return [Hit(_where(res.run, row),
                        f"busbw {busbw:.1f} GB/s is above the network's line rate, "
                        f"{nics} x {rate:g} Gb/s = {bound:.1f} GB/s, on 2 nodes", 3.0)]
    return []


def _containers(ev) -> list:
    """Hosts of one launch whose GPUs add up to one topology matrix with NVLink between them all."""
    if not ev.topo:
        return []
    topo, name = ev.topo
    gpus = topo["gpus"]
    nvlinked = all(topo["cells"].get((a, b), "").startswith("NV")
                   for a in gpus for b in gpus if a != b)
    for c in ev.commands:
        slots = re.findall(r"([A-Za-z][\w.-]*):(\d+)", c["text"].split("_perf")[0])
        if len(slots) > 1 and nvlinked and sum(int(n) for _, n in slots) == len(gpus) > 1:
            return [Hit(c["where"], f"hosts {', '.join(h for h, _ in slots)} hold {len(gpus)} GPUs "
                                    "in all, the "
                        f"{len(gpus)} NVLink-connected GPUs of one topology matrix ({name}): "
                        "containers on one "
                        "machine, each seeing only its GPUs, so NCCL cannot use NVLink or IPC "
                        "between them", 2.0)]
    return []


def shm(ctx):
    ev = ctx.ev
    if hits := _containers(ev):
        return hits
    if ev.transports.get("SHM") and not ev.transports.get("P2P") and ctx.cluster is not None \
            and ctx.cluster.intra != "pcie":
        return [Hit(ev.transports["SHM"][0],
                    "GPUs of an NVLink node talk through host memory", 1.0)]
    return []


def interface(ctx):
    ev, c = ctx.ev, ctx.cluster
    active = {p["device"] for p in ev.ports if (p["state"] or "").startswith("ACTIVE")}
    if ev.nics and len(active) > len(ev.nics):
        return [Hit(ev.nics[0][2], f"NCCL uses {len(ev.nics)} of {len(active)} active HCAs", 1.5)]
    value, where = ev.env.get("NCCL_IB_HCA", ("", ""))
    named = [h for h in value.lstrip("=").split(",") if h and not value.startswith("^")]
    if named and c is not None and ctx.spec_given and c.nodes > 1 and len(named) < c.nics_per_node:
        return [Hit(where,
                    f"NCCL_IB_HCA names {len(named)} HCA(s) of the {c.nics_per_node} NICs per node",
                    1.0)]
    return []


def slow_node(ctx):
    sets = [(p["hosts"], p["busbw_GBps"], p["where"]) for p in ctx.ev.pairs]
    sets += [(r.run.hosts, _large_max(r.run.rows)[0], _where(r.run, _large_max(r.run.rows)[1]))
             for r in ctx.results if len(r.run.hosts) > 1 and r.run.rows]
    if len(sets) < 3:
        return []
    top = max(b for _, b, _ in sets)
    slow = [s for s in sets if s[1] < 0.8 * top]
    cleared = {h for hs, b, _ in sets if b >= 0.8 * top for h in hs}   # a fast run clears its hosts
    if not slow or not cleared:
        return []
    counts = {}
    for hosts, _, where in slow:
        for h in set(hosts) - cleared:
            counts.setdefault(h, []).append(where)
    most = max((len(w) for w in counts.values()), default=0)
    suspects = sorted(h for h, w in counts.items() if len(w) == most)
    if not suspects:
        return []
    return [Hit(counts[suspects[0]][0],
                f"{' or '.join(suspects)} {'is' if len(suspects) == 1 else 'are each'} in {most} "
                f"of the {len(slow)} slow runs (below 80% of the best, {top:g} GB/s) and in no "
                "fast one",
                3.0 if most > 1 else 1.0)]


def binding(ctx):
    if not ctx.nodes or ctx.nodes < 2:
        return []
    for c in ctx.ev.commands:
        if c["launcher"] in ("mpirun", "mpiexec") and not c["bind_to"]:
            return [Hit(c["where"],
                        "mpirun without --bind-to: MPI's default binding (a core or a socket) "
                        "applies", 0.5)]
    return []


def version(ctx):
    runs = [(r, r.run.version) for r in ctx.results if r.run.version and r.run.rows]
    if len({v[0] for _, v in runs}) < 2:
        named = sorted(ctx.ev.versions.items())
        if len(named) < 2:
            return []
        return [Hit(named[-1][1], f"the files name NCCL {' and '.join(v for v, _ in named)}: two "
                                  "versions of one "
                    "test, with no rows of both to compare", 1.0)]
    best = {}
    for res, v in runs:
        for row in res.run.rows:
            best.setdefault(row["bytes"], []).append((row["busbw_GBps"], v, res.run))
    ratios = []
    for size, seen in best.items():
        if len({v[0] for _, v, _ in seen}) > 1 and max(b for b, _, _ in seen) > 0:
            lo, hi = min(seen, key=lambda s: s[0]), max(seen, key=lambda s: s[0])
            ratios.append((lo[0] / hi[0], lo, hi, size))
    if not ratios:
        return []
    median = statistics.median(r for r, *_ in ratios)
    worst = min(ratios, key=lambda r: r[0])
    ratio, lo, hi, size = worst
    if median > 0.8 and ratio > 0.5:
        return []
    return [Hit(f"{lo[2].source}:{lo[1][1]}",
                f"NCCL {lo[1][0]} reaches {lo[0]:g} GB/s at {size} B where NCCL {hi[1][0]} reaches "
                f"{hi[0]:g} (median ratio {median:.2f} over {len(ratios)} sizes)", 3.0)]


CHECKS = {"sockets_instead_of_ib": sockets, "nic_on_cpu_or_wrong_numa": nic_far,
          "nic_link_rate": link_rate, "too_few_channels": channels,
          "nvls_disabled_or_unavailable": nvls, "two_node_tree_anomaly": two_nodes,
          "p2p_disabled_or_shm": shm, "wrong_interface": interface, "slow_or_bad_node": slow_node,
          "cpu_binding": binding, "nccl_version_regression": version,
          "measurement_error": measurement}
