"""The machine: the one input of every prediction.

Two ways to write one down, both taken by every command's ``--cluster``:

- a cluster description (``cluster.Cluster``: GPU part, GPUs per node, nodes, NVSwitch / NVLink /
  PCIe with or without peer-to-peer, NVLink domains across hosts, NICs and network, SHARP), from a
  preset name (``presets.CLUSTERS``) or a YAML/JSON file with a ``gpu`` key; its keys are strict
  (``cluster_file``: the file form read and written), its numbers within ``bounds`` and its layout
  follows ``rules``; ``fabric`` describes the switches
  above the NICs (leaf groups, rails, oversubscription per tier; default non-blocking). Every
  hardware number behind it is cited in ``hardware`` (PCIe generations), ``gpus`` (the GPU table)
  and ``networks`` (ib, roce, tcp, efa, tcpx); ``provenance`` says where each uncertain input comes
  from (the record ranges read). NCCL's port (``collsim.nccl``), the fitted model and the simulation
  all read it;
- a link-level topology (``topology.Topology``: alpha and beta per link class, NICs per node), a
  YAML/JSON file whose ``intra`` is a mapping of link numbers. Only the simulation can use it: it
  names no GPU, so NCCL's choice cannot be derived from it.

``links`` is a Hockney link and its form in files; ``protocols`` says what one transfer costs under
each of NCCL's protocols (LL, LL128, Simple).

``load_cluster(spec, nodes)`` gives a ``Cluster``; ``load_machine(spec, nodes)`` gives what the
simulator runs on (a ``Topology``: a cluster's through ``linkview.to_topology``). Both raise
one-line ``CollsimError`` for anything wrong, naming the file and key.

``provenance`` records where each uncertain input of a description comes from (a run of this
machine, a log of its kind, a datasheet, an assumption); ``versions`` lists the NCCL versions
collsim ports.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from collsim.errors import CollsimError, require_int
from collsim.machine.cluster import Cluster
from collsim.machine.linkview import to_topology
from collsim.machine.presets import CLUSTERS
from collsim.machine.topology import Topology, read_spec_file

SPEC_SUFFIXES = (".json", ".yaml", ".yml")
MAX_NODES = 1 << 16


def _read(spec: str):
    """(kind, parsed mapping) of a machine file: "cluster" (has ``gpu``) or "topology" (``intra`` is
    a mapping of link numbers)."""
    d = read_spec_file(spec, "cluster")
    if isinstance(d, dict) and "gpu" not in d and isinstance(d.get("intra"), dict):
        return "topology", d
    return "cluster", d


def machine_kind(spec) -> str:
    """What ``spec`` names: "preset", "cluster" (a cluster file) or "topology" (a link-level
    topology file); anything else is a one-line CollsimError."""
    text = str(spec)
    if text in CLUSTERS:
        return "preset"
    if Path(text).suffix.lower() not in SPEC_SUFFIXES:
        raise _not_a_machine(text)
    return _read(text)[0]


def _not_a_machine(text: str) -> CollsimError:
    if Path(text).suffix and Path(text).exists():
        return CollsimError(f"cluster file {text:.80}: unknown extension {Path(text).suffix!r:.20} "
                            "(use .json, .yaml or .yml)")
    return CollsimError(f"--cluster {text!r:.60}: not a preset ({', '.join(CLUSTERS)}) nor a "
                        ".yaml/.json file")


def load_cluster(spec, nodes: int | None = None) -> Cluster:
    """A cluster from a preset name or a YAML/JSON cluster file, resized to ``nodes`` nodes when
    given."""
    text = str(spec)
    if text in CLUSTERS:
        cluster = CLUSTERS[text]
    elif Path(text).suffix.lower() in SPEC_SUFFIXES:
        kind, d = _read(text)
        if kind == "topology":
            raise CollsimError(f"cluster file {text}: a link-level topology (intra/inter links, no "
                               "gpu) describes no GPU, so NCCL's choice cannot be derived from it; "
                               "describe the cluster (gpu, gpus_per_node, intra, ...: "
                               "collsim.machine.cluster)")
        cluster = Cluster.from_dict(d, where=f"cluster file {text}")
        if not cluster.name:
            cluster = replace(cluster, name=Path(text).stem)
    else:
        raise _not_a_machine(text)
    if nodes is not None:
        cluster = cluster.with_nodes(require_int("nodes", nodes, 1, MAX_NODES))
    return cluster


def load_machine(spec, nodes: int | None = None) -> Topology:
    """The simulator's machine for ``spec``: a preset or cluster file (through ``to_topology``,
    resized to ``nodes``), or a link-level topology file (which ``nodes`` cannot resize)."""
    text = str(spec)
    if text not in CLUSTERS and Path(text).suffix.lower() in SPEC_SUFFIXES:
        kind, d = _read(text)
        if kind == "topology":
            if nodes is not None:
                raise CollsimError("--nodes resizes a cluster description or preset, not a "
                                   "link-level topology file")
            topo = Topology.from_dict(d, where=f"topology file {text}")
            return topo if topo.name else replace(topo, name=Path(text).stem)
    return to_topology(load_cluster(text, nodes))


__all__ = ["CLUSTERS", "Cluster", "Topology", "load_cluster", "load_machine", "machine_kind",
           "to_topology"]
