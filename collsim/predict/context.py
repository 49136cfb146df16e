"""A cluster as NCCL runs AllReduce on it (``nccl_context``), and the measurement around the call
(``harness_config``): what ``collsim.predict`` simulates and what it adds.

Harness (what the measurement around NCCL adds): "nccl-tests" (all_reduce_perf; eager unless
``timing="graph"``, its -G; ``gpus_per_process`` = its -g, default all GPUs of a node on one node
and one GPU per process on several nodes, as nccl-tests' README runs it; it cycles -n 20 slices of
its largest size, so the buffer is not in L2 between calls) or "runner" (runners/allreduce_bench.py:
torch's all_reduce under torchrun, one GPU per process; graph timing bare, eager with torch's launch
floor). """
from __future__ import annotations

from dataclasses import dataclass, field, replace

from collsim.core.collective import get as get_collective
from collsim.errors import CollsimError
from collsim.fitted.layout import Config
from collsim.fitted.params import ModelParams
from collsim.fitted.rescale import cluster_params
from collsim.machine.cluster import Cluster
from collsim.nccl import NCCL_ALGOS, PROTOS, canonical
from collsim.nccl.constants import NCCL_MAX_NTHREADS
from collsim.nccl.decision import Decision, decide
from collsim.nccl.p2p import channels_per_peer, p2p_channels, protocol as p2p_protocol
from collsim.nccl.search import Setup, search
from collsim.nccl.settings import Settings
from collsim.nccl.tuning import tune

HARNESSES = ("nccl-tests", "runner")
NCCL_TESTS_ITERS = 20   # all_reduce_perf's default -n
# the NCCL_* variables NCCL's choice (collsim.nccl.settings) or collsim's time (NCCL_BUFFSIZE, the
# runner's
# NCCL_GRAPH_MIXING_SUPPORT: harness_config) reads
UNDERSTOOD = {"NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_COLLNET_ENABLE", "NCCL_CROSS_NIC",
              "NCCL_GRAPH_MIXING_SUPPORT", "NCCL_IB_DISABLE",
              "NCCL_LL128_NTHREADS", "NCCL_MAX_CTAS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_CTAS",
              "NCCL_MIN_NCHANNELS",
              "NCCL_NET_OVERHEAD", "NCCL_NTHREADS", "NCCL_NVLS_ENABLE", "NCCL_NVLS_NCHANNELS",
              "NCCL_P2P_DISABLE",
              "OFI_NCCL_NET_LATENCY"}
# --algo names; "CollNet" means either CollNet
FORCED_ALGOS = tuple(a for a in NCCL_ALGOS if a != "PAT")


@dataclass(frozen=True)
class NcclContext:
    """A cluster as NCCL runs AllReduce on it: ``described`` (as the user described it), ``cluster``
    (as NCCL sees it, sockets or host memory where the settings disable IB or P2P), ``env`` (the
    NCCL_* settings with forced algorithm and protocol), NCCL's init (``setup``,
    ``collsim.nccl.search``), the costs of its transfers (``params``,
    ``collsim.fitted.rescale.cluster_params``) and the simulations already run on it (``simulated``,
    kept by ``collsim.predict.simulation``)."""

    described: Cluster
    cluster: Cluster
    env: dict
    setup: Setup
    params: ModelParams
    # collsim.predict.simulation's
    simulated: dict = field(default_factory=dict, compare=False, repr=False)

    def decisions(self, sizes, coll: str = "all_reduce") -> list:
        """NCCL's choice (``collsim.nccl.decision.Decision``) per size (bytes) for collective
        ``coll`` (``collsim.core.collective``): the argmin of its cost table, or for AlltoAll and
        SendRecv, which NCCL runs as grouped p2p operations outside the table, "P2P" on its p2p
        channels, LL for small sends (``collsim.nccl.p2p``; NCCL's own time: nan)."""
        c = get_collective(coll)
        if not c.algorithms:
            channels = p2p_channels(self.setup.coll_channels)
            per = channels_per_peer(self.cluster, channels)
            ranks = self.cluster.ranks if c.name == "alltoall" else 1
            return [Decision(int(n), "P2P", p2p_protocol(self.cluster, int(n) // ranks, per),
                             channels, NCCL_MAX_NTHREADS, float("nan"))
                    for n in sizes]
        try:
            return decide(tune(self.setup, c.nccl_name), sizes)
        except CollsimError as e:
            raise _unavailable(self.described, self.env, e) from None


def nccl_context(cluster: Cluster, algo: str = "default", proto: str = "default",
                 env: dict | None = None, base: ModelParams | None = None) -> NcclContext:
    """The ``NcclContext`` of ``cluster`` under NCCL_* ``env`` with ``algo``/``proto`` forced
    (NCCL's names, or "default" for NCCL's choice; "CollNet" means either CollNet); ``base``: the
    parameters ``cluster_params`` rescales (default the packaged ones; ``collsim.fit.simulated``
    passes its candidates)."""
    env = {k: str(v) for k, v in (env or {}).items()}
    for key, value, names in (("NCCL_ALGO", algo, FORCED_ALGOS), ("NCCL_PROTO", proto, PROTOS)):
        if str(value).lower() == "collnet" and key == "NCCL_ALGO":
            env[key] = "CollNetDirect,CollNetChain"
        elif str(value).lower() != "default":
            env[key] = canonical(value, names)   # forced: NCCL's argmin over what is left
    described, seen = cluster, cluster.nccl_view()
    setup = search(seen, env)
    if setup.settings.ib_disable and seen.nodes > 1 and seen.net_info.transport == "verbs":
        seen = replace(seen, net="tcp", sharp=False)   # sockets carry the inter-node traffic
    if setup.settings.p2p_disable and seen.gpus_per_node > 1:
        seen = replace(seen, intra="pcie", p2p=False, nvls=False)   # SHM through host memory
    # 0: NVLS off
    params = cluster_params(seen, setup.coll_channels, setup.nvls_channels or 16, base)
    return NcclContext(described, seen, env, setup, params)


def harness_config(cluster: Cluster, harness: str, timing: str, gpus_per_process: int | None, sizes,
                   settings: Settings, hosts: Cluster | None = None,
                   env: dict | None = None) -> Config:
    """The ``Config`` of a measurement by ``harness`` on ``cluster`` (as NCCL sees it) with NCCL
    ``settings``; ``hosts``: the cluster as described (its hosts run the processes; default
    ``cluster``). The runner's graph timing with NCCL_GRAPH_MIXING_SUPPORT=1 in ``env`` (it sets 0
    unless told) carries torch's cost of NCCL's graph mixing per captured call
    ("torch-graph-mixing", ``collsim.fit.points.harness_key``)."""
    if harness not in HARNESSES:
        raise CollsimError(f"harness {harness!r:.40} is not one of {', '.join(HARNESSES)}")
    hosts = hosts or cluster
    gpp = gpus_per_process or (hosts.gpus_per_node if hosts.nodes == 1 and harness == "nccl-tests"
                               else 1)
    if not 1 <= gpp <= hosts.gpus_per_node:
        raise CollsimError(f"gpus per process must be 1..{hosts.gpus_per_node}, got {gpp}")
    mixing = str((env or {}).get("NCCL_GRAPH_MIXING_SUPPORT", "")).strip()
    if harness == "nccl-tests":
        key = "nccl-tests-graph" if timing == "graph" else "nccl-tests-eager"
        slices, buffer = NCCL_TESTS_ITERS, int(max(sizes))
    else:
        key = "torch-graph-mixing" if timing == "graph" and mixing not in ("", "0") else "bare"
        slices, buffer = 1, int(max(sizes))
    intra = "pcie" if cluster.intra == "pcie" else "nvlink"
    return Config(cluster.ranks, nodes=cluster.nodes, intra=intra, buffsize=settings.buffsize,
                  channels=None,
                  timing=timing, harness=key, slices=slices, buffer_bytes=buffer, inplace=True,
                  clock="", calls=0, nics=cluster.nics_per_node, gpus_per_process=gpp)


def _unavailable(cluster: Cluster, env: dict, error: CollsimError) -> CollsimError:
    """``error`` (nothing enabled in NCCL's tuning table) said in terms of what the user forced."""
    forced = ", ".join(f"{k}={env[k]}" for k in ("NCCL_ALGO", "NCCL_PROTO") if k in env)
    if not forced:
        return error
    algo = env.get("NCCL_ALGO", "")
    why = ""
    if algo in ("NVLS", "NVLSTree") and not cluster.nvls:
        why = " (NVLS needs NVLink SHARP: an NVSwitch node of H100, H200, B200 or their variants)"
    elif algo == "NVLSTree" and cluster.nodes == 1:
        why = " (NVLSTree joins nodes: one node runs NVLS)"
    elif algo == "NVLS" and cluster.nodes > 1:
        why = (" (NVLS across nodes needs CollNet in the switches; NVLSTree joins nodes over the "
               "NICs)")
    elif algo.startswith("CollNet"):
        why = (" (CollNet needs switches that reduce: sharp: true on net ib, more than one node, "
               "at most 8 GPUs a node)")
    return CollsimError(f"{forced} is not available on {cluster.name or cluster.gpu}{why}: {error}")
