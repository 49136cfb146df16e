"""The parameter-free part of collsim's NCCL-shaped AllReduce model: what one AllReduce of a given
size looks like on NCCL 2.28's channels and pipeline, before any fitted time
(``collsim.fitted.model`` turns it into microseconds). Sizes and buffers are in bytes. File
references into NVIDIA/nccl:

1. Channels and threads: ``collsim.nccl.chunking.nccl_channels`` (fewer channels and threads for
   small messages, enqueue.cc topoGetAlgoInfo), then the per-channel split in cells of 16 KiB of
   traffic (enqueue.cc scheduleCollTasksToPlan): ``channel_bytes`` is what the busiest channel
   carries.
2. Pipeline per channel: NCCL's plan (``collsim.nccl.plan``, the one the simulation builds its
   schedules from): a ring loop is 2(n-1) steps of each slice over ``n x chunk`` bytes of the
   channel (the last loop's chunk shrinks); a tree moves one chunk per step.
3. Payload per channel and direction: 2(n-1)/n x channel bytes for the ring, channel bytes for
   the tree; on the wire it is payload / ``EFFICIENCY`` (LL 1/2, LL128 15/16, Simple 1).
4. Receive-buffer footprint: the slots a call cycles through, channels x NCCL_STEPS x the wire
   bytes of one step (one connection per channel: the ring's previous rank, the 2-rank tree's
   peer); ``collsim.fitted.model`` compares it with the GPU's L2. User footprint: the user-buffer
   bytes consecutive calls cycle through (``Config.slices``; infinite when never reused), also
   compared with L2 there.
5. Hops follow NCCL's count (ring 2(n-1) steps, 2(nNodes-1) of them over the network; tree
   2 x ((ppn-1) + log2 nNodes)); pipeline depth is 1 for the ring, 2 x tree depth for the tree.

``Config`` describes one measured configuration (ranks, nodes, link class, NCCL_BUFFSIZE, pinned
channels, timing mode, harness); ``layout`` gives a ``Layout`` of numpy arrays, one entry per size.
"""
from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

import numpy as np

from collsim.errors import CollsimError
from collsim.nccl import canonical_pair
from collsim.nccl.chunking import (
    DEFAULT_BUFFSIZE,
    EFFICIENCY,
    NCCL_STEPS,
    channel_bytes,
    split_channels,
)
from collsim.nccl.plan import nvls_chunk, nvls_loops, ring_plan, tree_chunk

TIMINGS = ("graph", "eager")


@dataclass(frozen=True)
class Config:
    """One measured configuration, a keyword record after ``ranks`` (``Config(8, nodes=2,
    timing="eager")``): ranks, nodes, the intra-node link class, NCCL_BUFFSIZE
    (Simple buffer bytes; None = 4 MiB), a pinned channel count (None = params.channels), the
    timing mode ("graph": CUDA graph or nccl-tests -G, "eager": back-to-back launches) and the
    harness key naming its per-call overhead (``collsim.fit.points.harness_key``; "bare": none).
    How consecutive calls use the user buffer: ``slices`` = 0 never the same bytes again (a
    training step: other buckets and kernels in between), 1 the same slice every call (the
    runner's default), k > 1 cycling through k slices of ``buffer_bytes`` (nccl-tests: k = its
    -n, buffer = its -e; the runner's --rotate); ``inplace`` False doubles the bytes (input and
    output). ``clock`` names the fixed cost per measurement of the harness's clock (its start
    and stop; ``collsim.fit.points.clock_key``), spread over the ``calls`` timed per measurement
    (0: not known, no such term). ``nics``: NICs per node the job's channels use (0: one per GPU);
    ``gpus_per_process``: GPUs each host process launches on (nccl-tests -g; its eager launch floor
    grows with it)."""
    ranks: int
    _: KW_ONLY
    nodes: int = 1
    intra: str = "nvlink"
    buffsize: int | None = None
    channels: int | None = None
    timing: str = "graph"
    harness: str = "bare"
    slices: int = 0
    buffer_bytes: int | None = None
    inplace: bool = True
    clock: str = ""
    calls: int = 0
    nics: int = 0
    gpus_per_process: int = 1

    def __post_init__(self):
        if self.ranks < 2 or self.nodes < 1 or self.ranks % self.nodes:
            raise CollsimError(f"need ranks >= 2 divisible by nodes, got {self.ranks} ranks on "
                               f"{self.nodes} nodes")
        if not 0 <= self.nics <= self.ranks // self.nodes or self.gpus_per_process < 1:
            raise CollsimError("need 0 <= nics <= GPUs per node and gpus_per_process >= 1, got "
                               f"{self.nics} and "
                               f"{self.gpus_per_process}")
        if self.intra not in ("nvlink", "pcie"):
            raise CollsimError(f"intra link class must be nvlink or pcie, got {self.intra!r}")
        if self.timing not in TIMINGS:
            raise CollsimError(f"timing must be graph or eager, got {self.timing!r}")
        if self.buffsize is not None and self.buffsize < 8 * 4096:
            raise CollsimError(f"NCCL_BUFFSIZE {self.buffsize} is too small")
        if self.calls < 0:
            raise CollsimError(f"need calls >= 0, got {self.calls}")
        if self.slices < 0 or (self.buffer_bytes is not None and self.buffer_bytes < 1):
            raise CollsimError(f"need slices >= 0 and buffer_bytes >= 1, got {self.slices} and "
                               f"{self.buffer_bytes}")



def _pipeline(algo: str, proto: str, bc: int, ranks: int, nodes: int,
              buffsize: int) -> tuple[float, int, float]:
    """(payload bytes per direction, pipeline steps, largest step payload) for one channel of
    ``bc`` bytes, from NCCL's plan (``collsim.nccl.plan``): a ring sends its slices in 2(n-1)
    steps each, a tree one chunk a step."""
    if algo == "Ring":
        ring = ring_plan(proto, bc, ranks, buffsize)
        return 2 * (ranks - 1) / ranks * bc, 2 * (ranks - 1) * ring.sends, float(min(ring.largest,
                                                                                     bc))
    chunk = tree_chunk(proto, bc, ranks, nodes, buffsize)
    return float(bc), -(-bc // chunk), float(min(chunk, bc))


@dataclass
class Layout:
    """What the model needs per size that does not depend on fitted parameters.

    ``shares``: per link class the time runs on, (class, traffic share, channel fraction): the
    busiest resource of that class carries ``share`` x the channels' wire bytes, driven by that
    fraction of the channels (the main class first: share 1, fraction 1)."""
    algo: str
    proto: str
    config: Config
    sizes: np.ndarray
    nc: np.ndarray        # channels used
    threads: np.ndarray   # threads per channel NCCL runs (the per-step barrier cost follows it;
                          # on 2 x H200 the per-channel rate did not, so the rate does not use it)
    payload: np.ndarray   # payload bytes per channel and direction
    steps: np.ndarray     # pipeline steps per channel and direction
    slice: np.ndarray     # largest step payload (bytes)
    footprint: np.ndarray  # receive-buffer bytes one call cycles through (all channels)
    user_footprint: np.ndarray  # user-buffer bytes consecutive calls cycle through (inf: no reuse)
    hops_intra: int
    hops_net: int
    depth: int
    # steps of the first pass beyond a 2-rank ring's 2: they pay the hop latency only
    hop_steps: int = 0
    main: str = "nvlink"    # link class whose path gives base, step, fill and barrier costs
    shares: tuple = ()      # ((class, traffic share, fraction of the channels driving it), ...)


def _nvls_pipeline(algo: str, bc: int, ranks: int, nodes: int) -> tuple[float, int, float]:
    """NVLS / NVLSTree: (payload per direction, steps, largest step payload) for one channel of bc
    bytes. Every GPU of a node is a head owning 1/ppn of each loop
    (``collsim.nccl.plan.nvls_chunk``); a GPU sends and receives (ppn + 1) / ppn of its bytes
    through the switch (multimem reduce-scatter then all-gather: sjeaugey, NVIDIA/nccl-tests PR
    239)."""
    ppn = ranks // nodes
    chunk = nvls_chunk(algo, bc, ranks, nodes)
    return bc * (ppn + 1) / ppn, nvls_loops(algo, bc, ranks, nodes), float(min(chunk, bc))


def _shares(algo: str, config: Config, nc: np.ndarray) -> tuple[str, tuple]:
    """(main class, shares) of ``Layout``. One node: the intra class (NVLS: "nvls") carries
    everything. Several nodes of G > 1 GPUs and K NICs: a rail ring leaves each node once per
    channel, so the intra links carry (G-1)/G of a GPU's ring traffic and each NIC 1/K of a node's
    channels (K = min(NICs, channels)); NCCL's tree at 2 nodes puts one chunk per channel on the
    wire each way, at more nodes an inner node forwards two (share 2/K); NVLSTree's heads (one per
    NIC) each send their 1/G of the bytes up the tree and back (nvls.cc, connect.cc:241-319). One
    GPU per node: its NIC carries all of it ("net" is the main class)."""
    intra = "nvls" if algo in ("NVLS", "NVLSTree") else config.intra
    n, nodes = config.ranks, config.nodes
    ppn = n // nodes
    if nodes == 1:
        return intra, ((intra, 1.0, 1.0),)
    if ppn == 1:
        return "net", (("net", 1.0, 1.0),)
    if algo == "NVLSTree":  # every channel crosses each of the K heads' NICs with 1/K of its bytes
        forwarded = 1.0 if nodes == 2 else 2.0
        return intra, ((intra, 1.0, 1.0),
                       ("net", forwarded * ppn / ((config.nics or ppn) * (ppn + 1)), 1.0))
    k = np.minimum(config.nics or ppn, nc)
    net = (1.0 if algo == "Ring" or nodes == 2 else 2.0) / k
    return intra, ((intra, (ppn - 1) / ppn if algo == "Ring" else 1.0, 1.0), ("net", net, 1.0 / k))


def layout(algo: str, proto: str, sizes, config: Config, channels: int = 24,
           nvls_channels: int = 16) -> Layout:
    """The parameter-free part of the model for ``sizes`` (bytes); ``channels``: NCCL's collective
    channel count when ``config`` pins none; ``nvls_channels``: NVLS channels (16 on SM90,
    nvls.cc:148-150) for NVLS and NVLSTree."""
    algo, proto = canonical_pair(algo, proto)
    sizes = np.atleast_1d(np.asarray(sizes, dtype=np.int64))
    if sizes.size == 0 or (sizes < 1).any():
        raise CollsimError("sizes must be positive byte counts")
    n, nodes = config.ranks, config.nodes
    nvls = algo in ("NVLS", "NVLSTree")
    if nvls and proto != "Simple":
        raise CollsimError(f"{algo} runs the Simple protocol only, not {proto}")
    nch = config.channels or (nvls_channels if nvls else channels)
    buff = config.buffsize or DEFAULT_BUFFSIZE["Simple"]
    rows = []
    for nb in sizes.tolist():
        if nvls:
            nc, nt, bc = split_channels(nb, nch, "Simple"), 640, 0
            bc = min(nb, -(-nb // nc))
            rows.append((nc, nt, *_nvls_pipeline(algo, bc, n, nodes)))
        else:
            nc, nt, bc = channel_bytes(algo, proto, nb, nch, n)
            rows.append((nc, nt, *_pipeline(algo, proto, bc, n, nodes, buff)))
    nc, nt, payload, steps, sl = (np.array(c, dtype=float) for c in zip(*rows))
    # Ring Simple: a slice spans 2 slots
    per_slot = sl / (2 if (algo, proto) == ("Ring", "Simple") else 1)
    footprint = nc * NCCL_STEPS * per_slot / EFFICIENCY[proto]
    ppn = n // nodes
    log_nodes = int(np.log2(nodes))
    user = np.full(sizes.shape, np.inf)
    if config.slices:
        fit = config.slices if config.buffer_bytes is None else config.buffer_bytes // sizes
        user = np.clip(fit, 1, config.slices) * sizes * (1.0 if config.inplace else 2.0)
    if algo == "Ring":
        hops_net = 0 if nodes == 1 else 2 * (nodes - 1)
        hops_intra, depth = 2 * (n - 1) - hops_net, 1
    elif algo == "Tree":
        hops_intra, hops_net, depth = 2 * (ppn - 1), 2 * log_nodes, 2 * max(1, ppn - 1 + log_nodes)
    else:  # the switch does the intra-node part in one step each way
        hops_intra, hops_net, depth = 0, 2 * log_nodes, 2 + 2 * log_nodes
    main, shares = _shares(algo, config, nc)
    return Layout(algo, proto, config, sizes=sizes, nc=nc, threads=nt, payload=payload, steps=steps,
                  slice=sl, footprint=footprint, user_footprint=user, hops_intra=hops_intra,
                  hops_net=hops_net,
                  depth=depth, hop_steps=2 * (n - 2) if algo == "Ring" else 0, main=main,
                  shares=shares)
