"""collsim's NCCL-shaped AllReduce time model, per (algorithm, protocol).

The structure follows what NCCL 2.28 does for one AllReduce (file references into NVIDIA/nccl):

1. Channels and threads: ``nccl_tuning.nccl_channels`` (fewer channels and threads for small
   messages, enqueue.cc topoGetAlgoInfo), then the per-channel split in cells of 16 KiB of traffic
   (enqueue.cc scheduleCollTasksToPlan): ``channel_bytes`` is what the busiest channel carries.
2. Pipeline per channel (enqueue.cc calcCollChunking, device/all_reduce.h, prims_simple.h):
   buffers of NCCL_STEPS = 8 slots (Simple: NCCL_BUFFSIZE, default 4 MiB; LL 512 KiB holding half
   payload; LL128 4,915,200 B holding 15/16). Ring Simple chunk = 4 slots sent as 2 slices (a
   slice is at least 1/32 of 2 slots); LL, LL128 and Tree move one slot per step. A ring loop is
   2(n-1) chunk steps over ``n x chunk`` bytes of the channel; the last loop's chunk shrinks.
   Tree LL128 shrinks its chunk for small channel sizes like calcCollChunking does.
3. Time on the GPU (microseconds)::

       T = base + hops_intra * hop_intra + hops_net * hop_net          (latency floor)
         + W_total / R(channels, threads)                               (bandwidth, on wire bytes)
         + fill * depth * slice_wire / (R / channels)                  (pipeline fill)
         + steps * step_us                                              (per-step overhead)
         + steps * warp_us * threads / 32                               (per-step barriers)
         + spill * W_total / R   if 2 x footprint > l2_bytes            (L2 spill of NCCL's buffers)

   W_total = channels x wire bytes per channel and direction; wire = payload / efficiency
   (LL 1/2, LL128 15/16, Simple 1); payload per channel and direction is 2(n-1)/n x channel
   bytes for the ring, channel bytes for the tree. A channel (one thread block) moves at most
   chan_GBps of wire bytes, whatever its thread count (on 2 x H200 a channel of 64 to 512 threads
   moved small messages at the same rate); all channels share the link of link_GBps (GB/s per
   direction). The two limits combine smoothly, R = x / (1 + (x / link_GBps)^p)^(1/p) with
   x = channels x chan_GBps and p = ``link_exp`` (p = 0: the hard min(x, link_GBps)): channels
   that each could run at chan_GBps contend for the NVLink ports and the copy engines' memory
   path before the sum reaches the cap (2 x H200, Ring Simple at 1 GiB: 2 channels move 21 GB/s
   each, 16 channels 17, 24 channels 13.5, 32 channels 10.7; vars/ in data/h200x2).
   depth = 1 for the ring, 2 x tree depth for the tree.
   L2 spill: the receive buffers a call cycles through, ``footprint`` = channels x NCCL_STEPS x
   the wire bytes of one step (one connection per channel: the ring's previous rank, the 2-rank
   tree's peer), stay in the receiving GPU's L2 (``l2_bytes``; 50 MiB on H100/H200, the CUDA
   device property l2CacheSize) or do not. Between two uses of a slot the kernel also streams
   about as many user-buffer bytes through L2 (each received line is reduced into or copied to
   a user line), so the reuse distance is ~2 x footprint (``REUSE``); beyond L2 the lines the
   peer writes over NVLink and the receiver polls go to HBM and the bandwidth time grows by the
   fraction ``spill``: a step at the capacity, as for a cyclic access pattern under LRU. On
   2 x H200 Tree LL128 shows it: calcCollChunking (enqueue.cc; per-channel bytes, integer
   division) doubles the chunk from 71040 to 144000 B at 256 MiB, the footprint goes from 14.5
   to 29.5 MB (reuse distance 59 MB > 52.4 MB), and bytes per us drop 9% and stay there.
   Barriers: every step of NCCL's primitives synchronises the channel's threads (prims_simple.h:
   waitPeer, subBarrier, reduceCopy, barrier, postPeer per slice; LL128 and LL barrier per op
   too), and a block barrier completes when the slowest of its warps arrives, so a step costs
   ``warp_us`` more per warp of the channel. NCCL raises the threads per channel with the size
   (nccl_tuning.nccl_channels: Simple 64 -> 512 from 4 to 32 KiB, LL128 320 -> 640 at 8 KiB)
   while the channel count stays 1: on 2 x H200 the time rises exactly there, by the same amount
   in both harnesses (nccl-tests Ring Simple 16.9 -> 17.9 -> 20.5 us at 64/128/256 threads, Ring
   LL128 13.2 -> 14.7 us at 320 -> 640 threads, Ring LL only +0.6 us: LL threads poll their own
   flags), then stays flat while channels go 1 -> 16, which neither bandwidth nor step count can
   give. At the full thread count this is part of the per-step cost.
   A harness adds its measured per-call overhead (``harness_us``, e.g. torch's captured call
   with NCCL_GRAPH_MIXING_SUPPORT=1) to T.
   hops follow NCCL's count (ring 2(n-1) steps, 2(nNodes-1) of them over the network; tree
   2 x ((ppn-1) + log2 nNodes)). Multi-node paths take base, step_us and fill from the "net" link
   class and the bandwidth of the slowest class.
4. Eager timing: calls issued back to back from the host cannot go faster than one launch
   interval, ``T_eager = max(T, host_us)`` (host_us per path: the kernels differ).

``explain`` splits T into latency, bandwidth (payload at full channel count), protocol overhead,
channel count (fewer channels/threads than the maximum), pipeline fill, step overhead, barriers
("sync"), L2 spill ("l2"), harness overhead and launch, names the dominant term and gives each
link class's utilisation.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from collsim.errors import CollsimError
from collsim.measurements import bandwidths
from collsim.nccl_tuning import PROTOS, canonical, nccl_channels

ALGOS = ("Ring", "Tree")
LINK_CLASSES = ("nvlink", "pci", "net")
TIMINGS = ("graph", "eager")
NCCL_STEPS = 8
DEFAULT_BUFFSIZE = {"LL": 524288, "LL128": 4915200, "Simple": 4194304}  # init.cc:697-699
EFFICIENCY = {"LL": 0.5, "LL128": 120 / 128, "Simple": 1.0}
GRAIN = {"LL": 16, "LL128": 1920, "Simple": 512}  # device.h ncclProtoGrainSize, bytes
PARAM_NAMES = ("base_us", "hop_us", "step_us", "chan_GBps", "fill", "host_us", "spill", "warp_us")
L2_BYTES = 52428800  # H100/H200 L2 (cudaDeviceProp.l2CacheSize), bytes
REUSE = 2  # L2 bytes touched between two uses of a receive slot, per slot byte (module docstring)


@dataclass(frozen=True)
class Config:
    """One measured configuration: ranks, nodes, the intra-node link class, NCCL_BUFFSIZE
    (Simple buffer bytes; None = 4 MiB), a pinned channel count (None = params.channels), the
    timing mode ("graph": CUDA graph or nccl-tests -G, "eager": back-to-back launches) and the
    harness key naming its per-call overhead (``collsim.points.harness_key``; "bare": none)."""
    ranks: int
    nodes: int = 1
    intra: str = "nvlink"
    buffsize: int | None = None
    channels: int | None = None
    timing: str = "graph"
    harness: str = "bare"

    def __post_init__(self):
        if self.ranks < 2 or self.nodes < 1 or self.ranks % self.nodes:
            raise CollsimError(f"need ranks >= 2 divisible by nodes, got {self.ranks} ranks on {self.nodes} nodes")
        if self.intra not in ("nvlink", "pci"):
            raise CollsimError(f"intra link class must be nvlink or pci, got {self.intra!r}")
        if self.timing not in TIMINGS:
            raise CollsimError(f"timing must be graph or eager, got {self.timing!r}")
        if self.buffsize is not None and self.buffsize < 8 * 4096:
            raise CollsimError(f"NCCL_BUFFSIZE {self.buffsize} is too small")


@dataclass
class ModelParams:
    """Fitted or prior parameters. ``paths[(link, algo, proto)]`` holds a dict of PARAM_NAMES:
    base_us (fixed cost per call, us), hop_us (latency per hop, us), step_us (overhead per
    pipeline step and channel, us), chan_GBps (wire GB/s one full channel moves), fill (pipeline
    fill in slice times per depth level), host_us (eager launch interval, us), spill (fraction
    of the bandwidth time added when NCCL's receive buffers exceed L2; 0 when absent), warp_us
    (barrier cost per pipeline step and warp of the channel's threads, us; 0 when absent).
    ``link_GBps[link]``: per-direction capacity shared by all channels; ``link_exp``: how
    sharply channels saturate it (0: hard min). ``l2_bytes``: the GPU's L2 capacity (bytes). ``channels``: NCCL's
    collective channel count. ``meta``: provenance (what it was fitted on, hold-out errors).
    ``harness_us[key]``: per-call overhead (us) a harness adds to NCCL's time (``Config.harness``;
    measured by ``collsim.fit.harness_overheads``, 0 for keys not listed)."""
    paths: dict
    link_GBps: dict
    channels: int = 24
    meta: dict = field(default_factory=dict)
    harness_us: dict = field(default_factory=dict)
    link_exp: float = 0.0
    l2_bytes: float = L2_BYTES

    def path(self, link: str, algo: str, proto: str) -> dict:
        try:
            return self.paths[(link, algo, proto)]
        except KeyError:
            raise CollsimError(f"the parameters have no entry for {link}/{algo}/{proto}") from None


def default_params() -> ModelParams:
    """Priors before fitting (not measurements): NCCL 2.28's base and hop latencies, a
    channel rate of 15 GB/s, NVLink4 at 18 x 26.6 GB/s, a socket link at 3 GB/s."""
    from collsim.nccl_tuning import BASE_LAT, HW_LAT
    paths = {}
    for link in LINK_CLASSES:
        for algo in ALGOS:
            for i, proto in enumerate(PROTOS):
                paths[(link, algo, proto)] = {
                    "base_us": BASE_LAT[algo][i], "hop_us": HW_LAT[link][algo][i],
                    "step_us": 0.5, "chan_GBps": 15.0 if link != "net" else 3.0, "fill": 1.0,
                    "host_us": 0.0, "spill": 0.0, "warp_us": 0.0}
    return ModelParams(paths, {"nvlink": 478.8, "pci": 24.0, "net": 3.0}, meta={"source": "priors"})


def canonical_pair(algo: str, proto: str) -> tuple[str, str]:
    """(algorithm, protocol) spelled as in ALGOS and PROTOS (case-insensitive), else CollsimError."""
    return canonical(algo, ALGOS), canonical(proto, PROTOS)


def channel_bytes(algo: str, proto: str, nbytes: int, channels: int, ranks: int) -> tuple[int, int, int]:
    """(channels used, threads, bytes on the busiest channel) for one AllReduce of nbytes."""
    nc, nt = nccl_channels(algo, proto, nbytes, channels, ranks)
    tpb = 2 * (4 if proto == "LL" else 1)
    cell = -(-(-(-16384 // tpb)) // 16) * 16
    cells = max(1, -(-nbytes // cell))
    per_channel_traffic = max(16384, nbytes * tpb // nc)
    cpc = min(cells, -(-per_channel_traffic // (cell * tpb)))
    return -(-cells // cpc), nt, min(nbytes, cpc * cell)


def _pipeline(algo: str, proto: str, bc: int, ranks: int, nodes: int, buffsize: int) -> tuple[float, int, float]:
    """(payload bytes per direction, pipeline steps, largest step payload) for one channel."""
    slot = (buffsize if proto == "Simple" else DEFAULT_BUFFSIZE[proto]) // NCCL_STEPS
    payload_slot = {"LL": slot // 2, "LL128": slot // 16 * 15, "Simple": slot}[proto]
    if algo == "Ring":
        chunk = (payload_slot * (4 if proto == "Simple" else 1)) // GRAIN[proto] * GRAIN[proto]
        full_loops, rem = divmod(bc, ranks * chunk)
        last = (-(-rem // ranks) + 15) // 16 * 16  # device/all_reduce.h: chunk of the last loop
        if proto == "Simple":  # prims_simple.h: 2 slices per chunk, a slice >= 2 slots / 32
            def split(c):
                size = max(-(-c // 32) * 16, slot * 2 // 32)
                return min(2, -(-c // size)) if c else 0, min(size, c)
            (n_full, s_full), (n_last, s_last) = split(chunk), split(last)
            slices, largest = n_full * full_loops + n_last, s_full if full_loops else s_last
        else:
            slices, largest = full_loops + (1 if last else 0), chunk if full_loops else last
        return 2 * (ranks - 1) / ranks * bc, 2 * (ranks - 1) * slices, float(min(largest, bc))
    chunk = payload_slot
    if proto == "LL128":
        ppn = ranks / nodes
        n_ll128 = 1 + int(np.log2(nodes)) + 0.1 * ppn
        while bc // chunk < n_ll128 * 64 / ppn and chunk > 131072:
            chunk //= 2
        while bc // chunk < n_ll128 * 16 / ppn and chunk > 32768:
            chunk //= 2
    chunk = max(chunk // GRAIN[proto] * GRAIN[proto], GRAIN[proto])
    return float(bc), -(-bc // chunk), float(min(chunk, bc))


@dataclass
class Layout:
    """What the model needs per size that does not depend on fitted parameters."""
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
    hops_intra: int
    hops_net: int
    depth: int


def layout(algo: str, proto: str, sizes, config: Config, channels: int = 24) -> Layout:
    """The parameter-free part of the model for ``sizes`` (bytes); ``channels``: NCCL's collective
    channel count when ``config`` pins none."""
    algo, proto = canonical_pair(algo, proto)
    sizes = np.atleast_1d(np.asarray(sizes, dtype=np.int64))
    if sizes.size == 0 or (sizes < 1).any():
        raise CollsimError("sizes must be positive byte counts")
    n, nodes = config.ranks, config.nodes
    nch = config.channels or channels
    buff = config.buffsize or DEFAULT_BUFFSIZE["Simple"]
    rows = []
    for nb in sizes.tolist():
        nc, nt, bc = channel_bytes(algo, proto, nb, nch, n)
        rows.append((nc, nt, *_pipeline(algo, proto, bc, n, nodes, buff)))
    nc, nt, payload, steps, sl = (np.array(c, dtype=float) for c in zip(*rows))
    per_slot = sl / (2 if (algo, proto) == ("Ring", "Simple") else 1)  # Ring Simple: a slice spans 2 slots
    footprint = nc * NCCL_STEPS * per_slot / EFFICIENCY[proto]
    ppn = n // nodes
    log_nodes = int(np.log2(nodes))
    if algo == "Ring":
        hops_net = 0 if nodes == 1 else 2 * (nodes - 1)
        hops_intra, depth = 2 * (n - 1) - hops_net, 1
    else:
        hops_intra, hops_net, depth = 2 * (ppn - 1), 2 * log_nodes, 2 * max(1, ppn - 1 + log_nodes)
    return Layout(algo, proto, config, sizes, nc, nt, payload, steps, sl, footprint, hops_intra, hops_net, depth)


def _terms(params: ModelParams, lay: Layout) -> tuple[dict, dict]:
    """({term: us per size} of each additive time term, {link class: wire bytes per size})."""
    cfg, a, p = lay.config, lay.algo, lay.proto
    classes = [cfg.intra] if cfg.nodes == 1 else ([cfg.intra, "net"] if cfg.ranks > cfg.nodes else ["net"])
    main = params.path(classes[-1], a, p)
    eff = EFFICIENCY[p]
    total_payload = (2 * (cfg.ranks - 1) / cfg.ranks if a == "Ring" else 1.0) * lay.sizes
    wire = lay.nc * lay.payload / eff
    nch = cfg.channels or params.channels
    times, rates, full = [], [], []
    for link in classes:
        chan = params.path(link, a, p)["chan_GBps"] * 1e3  # bytes per us
        cap = params.link_GBps[link] * 1e3
        rates.append(shared_rate(lay.nc * chan, cap, params.link_exp))
        times.append(wire / rates[-1])
        full.append(float(shared_rate(np.float64(nch * chan), cap, params.link_exp)))
    pick = np.argmax(np.vstack(times), axis=0), np.arange(lay.sizes.size)
    bw_time, rate, full_rate = np.vstack(times)[pick], np.vstack(rates)[pick], min(full)
    hop_net = params.path("net", a, p)["hop_us"] if lay.hops_net else 0.0
    latency = np.full(lay.sizes.shape, main["base_us"] + lay.hops_net * hop_net
                      + lay.hops_intra * params.path(cfg.intra, a, p)["hop_us"], dtype=float)
    bandwidth = total_payload / full_rate
    protocol = lay.nc * lay.payload * (1 / eff - 1) / rate
    terms = {
        "latency": latency, "bandwidth": bandwidth, "protocol": protocol,
        "channels": bw_time - protocol - bandwidth,
        "fill": main["fill"] * lay.depth * (lay.slice / eff) * lay.nc / rate,
        "steps": main["step_us"] * lay.steps,
        "sync": main.get("warp_us", 0.0) * lay.steps * lay.threads / 32,
        "l2": main.get("spill", 0.0) * bw_time * (REUSE * lay.footprint > params.l2_bytes),
        "harness": np.full(lay.sizes.shape, float(params.harness_us.get(cfg.harness, 0.0))),
    }
    gpu = sum(terms.values())
    host = main["host_us"] if cfg.timing == "eager" else 0.0
    terms["launch"] = np.maximum(host - gpu, 0.0)
    return terms, {link: wire for link in classes}


def shared_rate(x, cap: float, p: float):
    """Rate (bytes/us) of channels that alone would move x bytes/us, on a link of cap bytes/us:
    x / (1 + (x/cap)^p)^(1/p), the hard min(x, cap) for p = 0."""
    if p <= 0:
        return np.minimum(x, cap)
    return x / (1.0 + (x / cap) ** p) ** (1.0 / p)


def predict(params: ModelParams, algo: str, proto: str, sizes, config: Config) -> np.ndarray:
    """Time per AllReduce in microseconds for each size (bytes)."""
    return predict_layout(params, layout(algo, proto, sizes, config, params.channels))


def predict_layout(params: ModelParams, lay: Layout) -> np.ndarray:
    """``predict`` on a precomputed ``layout`` (us per size; the fit reuses layouts)."""
    return sum(_terms(params, lay)[0].values())


def explain(params: ModelParams, algo: str, proto: str, sizes, config: Config) -> list[dict]:
    """Per size: time (us), busbw (GB/s), each term's share of the time, the dominant term,
    channels used, and utilisation of each link class (wire bytes / (time x link GB/s))."""
    lay = layout(algo, proto, sizes, config, params.channels)
    terms, wire = _terms(params, lay)
    total = sum(terms.values())
    out = []
    for i, nb in enumerate(lay.sizes.tolist()):
        shares = {k: float(v[i] / total[i]) for k, v in terms.items()}
        out.append({
            "size": nb, "time_us": float(total[i]), "busbw_GBps": bandwidths(nb, total[i], config.ranks)[1],
            "channels": int(lay.nc[i]), "threads": int(lay.threads[i]), "steps": int(lay.steps[i]), "shares": shares,
            "dominant": max(shares, key=shares.get),
            "link_utilisation": {k: float(w[i] / (total[i] * params.link_GBps[k] * 1e3)) for k, w in wire.items()},
        })
    return out


def with_path(params: ModelParams, key: tuple, **values) -> ModelParams:
    """A copy of params with some values of one path entry replaced."""
    paths = dict(params.paths)
    paths[key] = {**params.path(*key), **values}
    return replace(params, paths=paths)
