"""What this hardware should give: a ``collsim.machine.Cluster`` for each measured run, from
``--cluster`` or from what the files reveal (saying what was assumed), and
``collsim.predict.predict_nccl``'s busbw for the run's sizes beside NCCL's own model's.

From the files: the GPU (``collsim.machine.cluster.gpu_name`` of the names nccl-tests or nvidia-smi
print), nodes = the run's distinct hosts (else NCCL's nNodes), GPUs per node (the run's ranks per
host, NCCL's localRanks, the topology matrix), NVSwitch unless the GPU is a PCIe part or the matrix
shows no NVLink, NICs = the HCAs NCCL's ``NET/IB : Using`` line lists (else the active IB ports, the
matrix's NICs, one per GPU), their rate from ibstatus (else the GPU generation's usual NIC:
``NIC_GBPS``), RoCE when a port or NCCL says so, NCCL's version from its log. Only the NCCL_*
variables a user sets on purpose to choose what runs (``CHOSEN``) reach the prediction; those that
are causes do not (the range is what the hardware allows).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from collsim.core.collective import get as get_collective
from collsim.diagnose.evidence import Evidence
from collsim.diagnose.sources import Run
from collsim.errors import CollsimError
from collsim.machine import Cluster, load_cluster
from collsim.machine.cluster import gpu_name
from collsim.machine.hardware import GPUS
from collsim.predict import predict_nccl
from collsim.predict.ranges import busbw_range, kernel_only

NIC_GBPS = {"A100": 200.0, "A800": 200.0, "H100": 400.0, "H800": 400.0, "H20": 400.0, "H200": 400.0,
            "B200": 400.0}   # the HGX reference NIC of each
CHOSEN = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_MIN_NCHANNELS", "NCCL_MIN_CTAS")


@dataclass
class Machine:
    """The cluster a run is compared with (None, and ``why_not``, when collsim cannot describe it).
    """

    cluster: Cluster | None
    why_not: str = ""
    seen: list = field(default_factory=list)      # "what (where)"
    assumed: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    conflicts: list = field(default_factory=list)  # where the files and the stated machine disagree


def _shape(ev: Evidence, run: Run) -> tuple:
    """(nodes, GPUs per node, where each came from) of ``run``."""
    groups = [g for g in run.groups if g]
    if groups:
        nodes = max(len(set(g)) for g in groups)
        per_node = max(max(g.count(h) for h in set(g)) for g in groups)
        return nodes, per_node, f"{run.source}: '# Rank' lines", f"{run.source}: '# Rank' lines"
    meta = run.meta
    if (isinstance(meta.get("nodes"), int) and isinstance(meta.get("world_size"), int)
            and meta["nodes"] > 0):
        return (meta["nodes"], meta["world_size"] // meta["nodes"], f"{run.source} meta",
                f"{run.source} meta")
    if run.hosts:
        return len(run.hosts), None, f"{run.source} hosts", ""
    nodes = ev.nodes or (None, "")
    gpn = ev.gpus_per_node or (None, "")
    return nodes[0], gpn[0], nodes[1], gpn[1]


def _proven(ev: Evidence, run: Run) -> bool:
    """Whether the files prove the run's shape: NCCL's own nRanks/nNodes line, or a whole rank list
    (ranks 0..n-1 in each "Rank 0" group, the line after the last one a ``#`` line, as nccl-tests
    prints it).
    """
    if ev.ranks and ev.nodes:
        return True
    groups = []
    for rank, _ in run.ranks:   # one group per "Rank 0": separate runs list their ranks each
        if rank == 0 or not groups:
            groups.append([])
        groups[-1].append(rank)
    if not groups or any(g != list(range(len(g))) for g in groups):
        return False
    after = run.ranks[-1][1]   # 1-based line of the last rank: the next line is lines[after]
    src = next((s for s in ev.sources if s.name == run.source), None)
    return src is not None and after < len(src.lines) and src.lines[after].strip().startswith("#")


def _stated(cluster, spec, ev: Evidence, run: Run, env: dict) -> Machine:
    """The stated machine (``--cluster``), resized to the run's shape where the files prove it; a
    shape the files show but do not prove (a rank list cut short) is named in ``conflicts`` and the
    stated one kept.
    """
    nodes, per_node, where_nodes, _ = _shape(ev, run)
    m = Machine(cluster, seen=[f"--cluster {spec}"], env=env)
    per_node = per_node if per_node and per_node <= cluster.gpus_per_node else None
    if not nodes or (nodes == cluster.nodes and per_node in (None, cluster.gpus_per_node)):
        return m
    shown = f"{nodes} node(s){f' x {per_node} GPUs' if per_node else ''}"
    if nodes < cluster.nodes and not _proven(ev, run):
        m.conflicts.append(f"{run.name} shows {shown} ({where_nodes}) where you stated "
                           f"{cluster.nodes} x "
                           f"{cluster.gpus_per_node}: the rank list is not whole (cut, or ranks "
                           "missing), so the "
                           "stated machine is kept")
        return m
    m.cluster = cluster.resized(nodes, per_node)
    m.seen.append(f"resized to {m.cluster.nodes} node(s) x {m.cluster.gpus_per_node} GPUs as "
                  f"{run.name} ran "
                  f"({where_nodes})")
    m.conflicts.append(f"you stated {cluster.nodes} x {cluster.gpus_per_node}; {run.name} ran on "
                       f"{shown} "
                       f"({where_nodes}): compared with what ran")
    return m


def machine_for(ev: Evidence, run: Run, spec=None) -> Machine:
    """The ``Machine`` ``run`` is compared with (module docstring)."""
    env = {k: v for k, (v, _) in ev.env.items() if k in CHOSEN}
    nodes, per_node, where_nodes, where_gpn = _shape(ev, run)
    if spec is not None:
        return _stated(load_cluster(spec), spec, ev, run, env)
    m = Machine(None, env=env)
    name = (run.gpus[0][0] if run.gpus else None) or (ev.gpu[0] if ev.gpu else None)
    if not name:
        m.why_not = ("no GPU name in the files (nccl-tests '# Rank' lines or nvidia-smi name it): "
                     "give --cluster")
        return m
    gpu = gpu_name(name)
    if gpu not in GPUS:
        m.why_not = (f"GPU {name!r:.40} is not one collsim describes ({', '.join(GPUS)}): give "
                     "--cluster to compare with one it does")
        return m
    m.seen.append(f"GPU {gpu} ({ev.gpu[1] if ev.gpu else run.source})")
    if not nodes:
        nodes = 1
        m.assumed.append("1 node (no hosts or nNodes in the files)")
    else:
        m.seen.append(f"{nodes} node(s) ({where_nodes})")
    if not per_node:
        per_node = 8
        m.assumed.append("8 GPUs per node (no ranks per host in the files)")
    else:
        m.seen.append(f"{per_node} GPUs per node ({where_gpn})")
    intra = _intra(ev, name, m)
    keys = {"gpu": gpu, "gpus_per_node": per_node, "nodes": nodes, "intra": intra}
    if nodes > 1:
        keys.update(_network(ev, gpu, per_node, m))
    if ev.version and re.match(r"2\.\d+", ev.version[0]):
        keys["nccl"] = ".".join(ev.version[0].split(".")[:2])
        m.seen.append(f"NCCL {ev.version[0]} ({ev.version[1]})")
    try:
        m.cluster = Cluster.from_dict(keys, where="the machine the files describe")
    except CollsimError as e:
        m.why_not = str(e)
    return m


def _intra(ev: Evidence, name: str, m: Machine) -> str:
    if "PCIE" in name.upper():
        m.seen.append(f"PCIe GPUs ({name})")
        return "pcie"
    if ev.topo:
        topo, src = ev.topo
        gpus = topo["gpus"]
        cells = [topo["cells"].get((a, b), "") for a in gpus for b in gpus if a != b]
        if cells and not any(c.startswith("NV") for c in cells):
            m.seen.append(f"no NVLink between GPUs ({src}:{topo['header']})")
            return "pcie"
    m.assumed.append("NVSwitch between the GPUs of a node (an SXM part)")
    return "nvswitch"


def _network(ev: Evidence, gpu: str, per_node: int, m: Machine) -> dict:
    active = [p for p in ev.ports if (p["state"] or "").startswith("ACTIVE")]
    if len(active) > len(ev.nics):   # the hardware's ports, when NCCL uses fewer of them
        nics = len(active)
        m.seen.append(f"{nics} active IB port(s) ({active[0]['where']})")
    elif ev.nics:
        nics, where = len(ev.nics), ev.nics[0][2]
        m.seen.append(f"{nics} NIC(s) NCCL uses ({where})")
    elif active:
        nics = len(active)
        m.seen.append(f"{nics} active IB port(s) ({active[0]['where']})")
    elif ev.topo and ev.topo[0]["nics"]:
        nics = len(ev.topo[0]["nics"])
        m.seen.append(f"{nics} NIC(s) in the topology matrix ({ev.topo[1]})")
    else:
        nics = per_node
        m.assumed.append(f"{nics} NICs per node (one per GPU)")
    rates = [p["rate_Gbps"] for p in active if p["rate_Gbps"]]
    if rates:
        rate = max(rates)
        m.seen.append(f"{rate:g} Gb/s ports ({active[0]['where']})")
    else:
        rate = NIC_GBPS.get(gpu, NIC_GBPS.get(gpu.split("-")[0], 100.0))
        m.assumed.append(f"{rate:g} Gb/s NICs (no "
                         f"ibstatus{'' if gpu in NIC_GBPS else ', nor a reference NIC'})")
    roce = any(layer == "RoCE" for _, layer, _ in ev.nics) or any(
        (p["link_layer"] or "").lower() == "ethernet" for p in active)
    if not ev.nics and not active:
        m.assumed.append("an InfiniBand network (no NET/IB line or ibstatus)")
    return {"nics_per_node": min(nics, per_node), "nic_Gbps": rate, "net": "roce" if roce else "ib"}


def expect(machine: Machine, run: Run, ran=None) -> list[dict]:
    """Per measured size of ``run``: ``bytes``, ``measured``, ``expected`` (collsim's busbw) and its
    80% range (``expected_range``: low, high GB/s, ``collsim.predict.ranges.busbw_range``), ``nccl``
    (NCCL's own model's busbw), ``algo``, ``proto``, ``channels``, ``line``. Empty without a
    cluster. ``ran`` (``collsim.diagnose.judged.Ran``): the algorithm each size is predicted with
    (default NCCL's choice)."""
    rows = {}
    for r in run.rows:
        if r["bytes"] > 0 and r["bytes"] not in rows:
            rows[r["bytes"]] = r
    if machine.cluster is None or not rows:
        return []
    c = machine.cluster
    gpp = run.meta.get("gpus_per_process")
    gpp = gpp if isinstance(gpp, int) and 1 <= gpp <= c.gpus_per_node else None
    timing = "graph" if run.meta.get("timing") == "graph" else "eager"
    coll = get_collective(run.meta.get("collective") or "all_reduce")
    groups = {}
    for size in sorted(rows):
        groups.setdefault(ran.for_size(size) if ran is not None else "default", []).append(size)
    predicted = {}
    try:
        for algo, sizes in groups.items():
            result = predict_nccl(c, sizes, algo=algo, env=machine.env, timing=timing,
                                  gpus_per_process=gpp, coll=coll.name)
            predicted.update(zip(sizes, result["rows"]))   # rows follow the sizes asked, in order
    except CollsimError as e:
        machine.why_not = f"no prediction: {e}"
        return []
    factor = coll.busbw_factor(c.ranks) if c.ranks > 1 else 1.0
    out = []
    for size in sorted(rows):
        # busbw from the time where there is one: nccl-tests prints 2 decimals
        r, p = rows[size], predicted[size]
        if run.meta.get("harness") == "inspector":
            p = kernel_only(p)
        measured = size / 1e3 / r["time_us"] * factor if r["time_us"] > 0 else r["busbw_GBps"]
        out.append({"bytes": size, "measured": measured, "expected": p["busbw_GBps"],
                    "expected_range": busbw_range(p, factor),
                    "nccl": size / 1e3 / p["nccl_us"] * factor if p["nccl_us"] > 0 else 0.0,
                    "algo": p["algo"], "proto": p["proto"], "channels": p["channels"],
                    "line": r["line"], "time_us": p["time_us"]})
    return out
