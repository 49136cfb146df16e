"""A cluster's file form (the keys of ``collsim.machine.cluster``'s docstring): a mapping read from
a YAML/JSON file checked key by key (``checked_fields``), and a cluster written back as one
(``as_dict``)."""
from __future__ import annotations

import difflib
import re

from collsim.errors import CollsimError
from collsim.machine.bounds import BOUNDS

KEYS = ("name", "source", "notes", "gpu", "gpus_per_node", "nodes", "intra", "p2p", "pcie_gen",
        "nvlink_GBps", "pcie_GBps", "nvlink_domain", "nics_per_node", "nic_Gbps", "net", "sharp",
        "fabric_efficiency", "fabric", "degraded_nics", "nvls", "nccl", "cpu", "call_us",
        "calibrated")
_STRINGS = ("gpu", "intra", "net", "cpu", "nccl", "name", "source")
_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def checked_fields(d, where: str = "cluster") -> dict:
    """The keyword arguments of ``Cluster`` that mapping ``d`` gives: only ``KEYS``, at least gpu
    and gpus_per_node, YAML's misreadings of numbers and versions undone; errors name ``where`` and
    the key (the values themselves are checked by ``Cluster``)."""
    if not isinstance(d, dict):
        raise CollsimError(f"{where}: expected a mapping with gpu, gpus_per_node, nodes, ...")
    for key in d:
        if key not in KEYS:
            # a cut-off key: the one it starts
            close = [k for k in KEYS if k.startswith(str(key))] or \
                difflib.get_close_matches(str(key), KEYS, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else "known: " + ", ".join(KEYS)
            raise CollsimError(f"{where}: unknown key {str(key)!r:.40} ({hint}; free text goes "
                               "under 'notes')")
    if "gpu" not in d or "gpus_per_node" not in d:
        raise CollsimError(f"{where}: needs at least gpu and gpus_per_node")
    known = dict(d)
    # YAML 1.1 reads 1e308 (no dot) as text: take it as the number it spells
    for key in BOUNDS:
        if isinstance(known.get(key), str) and _FLOAT.fullmatch(known[key].strip()):
            known[key] = float(known[key])
    for key in _STRINGS:
        if key in known and not isinstance(known[key], str):
            if key == "nccl" and isinstance(known[key], float):
                # YAML reads 2.26 as a number (and 2.20 as 2.2)
                known[key] = f"{known[key]:.2f}"
                continue
            raise CollsimError(f"{where}: {key} must be a string, got {known[key]!r:.40}")
    return known


def as_dict(cluster) -> dict:
    """``cluster`` (a ``Cluster``) as the mapping of its file: every key that is set, and its
    ``extra`` (what the construction noted, e.g. ``nccl_asked``)."""
    d = {k: getattr(cluster, k) for k in KEYS
         if k not in ("notes", "fabric", "degraded_nics", "calibrated")
         or getattr(cluster, k) not in (None, ())}
    if cluster.fabric is not None:
        d["fabric"] = cluster.fabric.to_dict()
    if cluster.degraded_nics:
        d["degraded_nics"] = [{"node": n, "nic": k, "nic_Gbps": r}
                              for n, k, r in cluster.degraded_nics]
    return {**d, **cluster.extra}
