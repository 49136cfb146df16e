"""Where each uncertain input of a cluster description comes from: one record per cluster
(``inputs``), read by every predictor's range (``collsim.predict.ranges``) and by ``diagnose``'s
"expected".

The inputs (``INPUTS``) are the numbers a description cannot know exactly, each with the regime of
sizes it decides:

- ``intra``: the ring's busbw plateau inside a node over the GPU's NVLink (or PCIe) rate
  (bandwidth);
- ``nic``: the share of a NIC's line rate NCCL's ring moves (bandwidth; several nodes only);
- ``hop``: one network step of a small message (latency; several nodes only);
- ``step``: the GPU-side per-step and per-call costs (latency);
- ``nccl``: NCCL's choice of algorithm, protocol and channels (both regimes): its version ported, or
  the closest ported one followed;
- ``harness``: what the measurement around NCCL adds per call (latency): not the machine's, so the
  predictor adds it (``collsim.predict.ranges.harness_input``);
- ``schedule``: the costs of the collective's own schedule (both regimes), where no calibration
  log runs it (``collsim.predict.ranges.schedule_input``: AlltoAll and SendRecv, NCCL's p2p sends
  costed as its ring's steps and channels).

``nccl`` and ``harness`` limit how sure a regime is only where they are less sure than a log
(``NEUTRAL``): a ported NCCL and a measured harness do not make a calibrated machine's inputs less
its own.

Each input has a ``kind``, best first (``KINDS``): "machine" (fitted on a run of this very machine,
``collsim fit --cluster``: the description's ``calibrated`` record), "log" (calibrated on a public
or bundled log of the same kind of machine, data/public/README.md, data/h200x2), "datasheet" (a
datasheet or maintainer's figure with an assumed efficiency) and "assumed" (no source).

A description's ``calibrated`` mapping (written by ``collsim fit --cluster``) holds the fitted
values::

    calibrated:
      source: quick.txt          # the run they were fitted on
      intra_efficiency: 0.81     # replaces the GPU's ring efficiency (0 < x <= 1.5)
      nic_efficiency: 0.93       # replaces the network's efficiency x fabric_efficiency (0 < x <=
                                 #   1.5)
      hop_us: 14.0               # replaces the network's small-message hop (us, 0 < x <= 1000)
      step_scale: 1.1            # multiplies the GPU-side per-step costs (0.1 <= x <= 10)
      harness: nccl-tests graph 1   # optional: a harness collsim never measured, as it ran here
                                    #   (harness,
      harness_us: -1.6              # timing, GPUs per process), and what it costs a call more (us,
                                    #   |x| <= 50)
"""
from __future__ import annotations

from dataclasses import dataclass

from collsim.errors import CollsimError, require_number
from collsim.machine.gpus import HOPPER_RING

KINDS = ("machine", "log", "datasheet", "assumed")
INPUTS = ("intra", "nic", "hop", "step", "nccl", "harness", "schedule")
LATENCY = ("hop", "step", "nccl", "harness", "schedule")   # the inputs that decide small sizes
BANDWIDTH = ("intra", "nic", "nccl", "schedule")           # and large ones
NEUTRAL = ("nccl", "harness")
# the calibrated values, each with its bounds and the input it replaces
FITTED = {"intra_efficiency": ("intra", 1e-3, 1.5), "nic_efficiency": ("nic", 1e-3, 1.5),
          "hop_us": ("hop", 1e-3, 1000.0), "step_scale": ("step", 0.1, 10.0),
          "harness_us": ("harness", -50.0, 50.0)}

# inputs calibrated on a log of the same kind (data/public/README.md says which log sets which
# number)
HOPPER_INTRA = "Hopper NVSwitch: the ring plateau of L01 (8 x H100)"
HOPPER_STEP = "Hopper: per-step costs fitted on our 2 x H200 and L01/L15"
LOG_NETS = {"ib": ("L15 (2 x 8 H100, 8 x NDR): efficiency 0.98",
                   "L15: NCCL's NET latency, RDMA step 25 us"),
            "efa": ("P03 (2 x p4d): efficiency 0.614", "P05 (4 x p4d): hop 30 us"),
            "tcpx": (None, "P01 (2 x A3 Mega): hop 55 us")}
DATASHEET_NETS = {"roce": "InfiniBand's figures (RoCE runs NCCL's IB verbs transport), users' "
                          "reports"}


@dataclass(frozen=True)
class Input:
    """One input: its ``kind`` (``KINDS``) and ``source`` (where its number comes from, one
    line)."""

    kind: str
    source: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "source": self.source}


def calibrated_record(d) -> dict | None:
    """The ``calibrated`` mapping of a description, checked (module docstring), or one-line
    CollsimError."""
    if d is None:
        return None
    if not isinstance(d, dict):
        raise CollsimError("cluster calibrated must be a mapping (source, intra_efficiency, "
                           "nic_efficiency, hop_us, step_scale)")
    out = {}
    for key, value in d.items():
        if key in ("source", "notes", "harness"):
            out[key] = value if key == "notes" else str(value)
            continue
        if key not in FITTED:
            raise CollsimError(f"cluster calibrated: unknown key {str(key)!r:.40} (known: source, "
                               f"{', '.join(FITTED)}, harness, notes)")
        _, low, high = FITTED[key]
        if key == "harness_us" and "harness" not in d:
            raise CollsimError("cluster calibrated harness_us needs harness (harness, timing, GPUs "
                               "per process)")
        x = require_number(f"cluster calibrated {key}", value)
        if not low <= x <= high:
            raise CollsimError(f"cluster calibrated {key} must be within {low:g}..{high:g}, got "
                               f"{x:g}")
        out[key] = x
    return out


def inputs(cluster) -> dict[str, Input]:
    """Where each input (``INPUTS``) of ``cluster`` comes from (module docstring); several-node
    inputs only for clusters of more than one node (as NCCL sees them: an NVLink domain is one
    node)."""
    cal = cluster.calibrated or {}
    where = f"fitted on {cal.get('source') or 'a run of this machine'} (collsim fit --cluster)"
    gpu = cluster.gpu_info
    out = {}
    if cluster.intra == "pcie":
        out["intra"] = (Input("log", "P02 (4 x RTX 4090, PCIe with P2P)") if cluster.p2p else
                        Input("assumed",
                              "PCIe without P2P (SHM): half of P2P's efficiency, no log"))
    elif gpu.compcap == 90 and gpu.ring_efficiency == HOPPER_RING:
        out["intra"] = Input("log", HOPPER_INTRA)
    else:
        out["intra"] = Input("datasheet",
                             f"{gpu.name}'s NVLink rate with an assumed ring efficiency "
                             f"{gpu.ring_efficiency:.3f}")
    out["step"] = (Input("log", HOPPER_STEP) if gpu.compcap == 90 else
                   Input("datasheet",
                         f"Hopper's per-step costs x the SM clock ratio ({gpu.boost_MHz:g} MHz)"))
    if cluster.nccl_view().nodes > 1:
        bw, hop = LOG_NETS.get(cluster.net, (None, None))
        sheet = DATASHEET_NETS.get(cluster.net)
        if cluster.fabric_efficiency != 1:
            out["nic"] = Input("datasheet", f"{cluster.net} with the described fabric_efficiency "
                                            f"{cluster.fabric_efficiency:g}")
        else:
            out["nic"] = Input("log", bw) if bw else Input("datasheet", sheet) if sheet else Input(
                "assumed",
                f"{cluster.net}: efficiency {cluster.net_info.efficiency:g} assumed, no log")
        out["hop"] = Input("log", hop) if hop else Input("datasheet", sheet) if sheet else Input(
            "assumed",
            f"{cluster.net}: the socket step of our emulated nodes, no log of a real network")
    asked = cluster.extra.get("nccl_asked")
    out["nccl"] = (Input("assumed",
                         f"NCCL {asked}'s choice taken as {cluster.nccl}'s (the closest ported)")
                   if asked else Input("log", f"NCCL {cluster.nccl}'s tuning logic, ported"))
    for key, (name, _, _) in FITTED.items():
        if key in cal and name in out:
            out[name] = Input("machine", where)
    return out


def worst(kinds) -> str:
    """The least sure of ``kinds`` (``KINDS`` order)."""
    return max(kinds, key=KINDS.index)
