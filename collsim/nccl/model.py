"""collsim's NCCL-shaped AllReduce time model, per (algorithm, protocol), in microseconds.

``collsim.nccl.layout`` gives the parameter-free part for each size (bytes): channels and threads
NCCL uses, the busiest channel's payload, pipeline steps and slice, receive-buffer footprint,
hops and pipeline depth. This module holds the fitted parameters (``ModelParams``) and turns a
layout into time, following what NCCL 2.28 does for one AllReduce (file references into
NVIDIA/nccl):

1. Time on the GPU (microseconds)::

       T = base + hops_intra * hop_intra + hops_net * hop_net          (latency floor)
         + W_total / R(channels, threads)                               (bandwidth, on wire bytes)
         + fill * depth * slice_wire / (R / channels)                  (pipeline fill)
         + steps * step_us                                              (per-step overhead)
         + steps * warp_us * threads / 32                               (per-step barriers)
         + spill * W_total / R   if 2 x footprint > l2_bytes            (L2 spill of NCCL's buffers)
         + (warm - 1) * W_total / R   if 2 x user footprint <= l2_bytes  (user buffer still in L2)

   W_total = channels x wire bytes per channel and direction (the layout's payload / efficiency).
   A channel (one thread block) moves at most chan_GBps of wire bytes, whatever its thread count
   (on 2 x H200 a channel of 64 to 512 threads moved small messages at the same rate); all
   channels share the link of link_GBps (GB/s per direction). The two limits combine smoothly,
   R = x / (1 + (x / link_GBps)^p)^(1/p) with x = channels x chan_GBps and p = ``link_exp``
   (p = 0: the hard min(x, link_GBps)): channels that each could run at chan_GBps contend for
   the NVLink ports and the copy engines' memory path before the sum reaches the cap (2 x H200,
   Ring Simple at 1 GiB: 2 channels move 21 GB/s each, 16 channels 17, 24 channels 13.5,
   32 channels 10.7; vars/ in data/h200x2).
   L2 spill: the receive buffers a call cycles through (the layout's ``footprint``, bytes) stay
   in the receiving GPU's L2 (``l2_bytes``; 50 MiB on H100/H200, the CUDA device property
   l2CacheSize) or do not. Between two uses of a slot the kernel also streams about as many
   user-buffer bytes through L2 (each received line is reduced into or copied to a user line),
   so the reuse distance is ~2 x footprint (``REUSE``); beyond L2 the lines the peer writes
   over NVLink and the receiver polls go to HBM and the bandwidth time grows by the fraction
   ``spill``: a step at the capacity, as for a cyclic access pattern under LRU. On 2 x H200
   Tree LL128 shows it: calcCollChunking (enqueue.cc; per-channel bytes, integer division)
   doubles the chunk from 71040 to 144000 B at 256 MiB, the footprint goes from 14.5 to
   29.5 MB (reuse distance 59 MB > 52.4 MB), and bytes per us drop 9% and stay there.
   L2 reuse of the user buffer: when consecutive calls cycle through few enough user bytes
   (the layout's ``user_footprint``, from ``Config.slices``; same ``REUSE`` rule) the buffer is
   still in L2 when the next call reads it, and the bandwidth time is ``warm`` times the cold
   one (``warm`` per path, 1 = no effect). On 2 x H200 (data/h200x2/README.md "run5/rotate")
   the runner reusing one slice against the same runner cycling like nccl-tests, 2-16 MiB: Ring
   LL up to 20% and Tree LL128 10% faster, Tree LL 12% slower, the same within 3% from 32 MiB
   on. nccl-tests cycles -n slices of its -e buffer, so it is warm only up to ~1 MiB.
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
   with NCCL_GRAPH_MIXING_SUPPORT=1) to T, and its clock's fixed cost per measurement spread
   over the calls timed (``start_us[clock] / calls``; on 2 x H200 nccl-tests' host timer 75 us,
   the runner's clocks 7-25 us before run 6 and 2.3 us since: data/h200x2/README.md "run6/").
   Hops and depth are the layout's. Multi-node paths take base, step_us and fill from the "net"
   link class and the bandwidth of the slowest class.
2. Eager timing: calls issued back to back from the host cannot go faster than one launch
   interval, ``T_eager = max(T, host_us)`` (host_us per path: the kernels differ).

``explain`` splits T into latency, bandwidth (payload at full channel count), protocol overhead,
channel count (fewer channels/threads than the maximum), pipeline fill, step overhead, barriers
("sync"), L2 spill ("l2"), L2 reuse of the user buffer ("reuse"), harness overhead and launch,
names the dominant term and gives each link class's utilisation.
"""
from __future__ import annotations

import numpy as np

from collsim.nccl.layout import EFFICIENCY, Config, Layout, layout
from collsim.nccl.params import OPTIONAL, ModelParams
from collsim.units import bandwidths


def _total_payload(lay: Layout) -> np.ndarray:
    """Payload bytes per GPU per direction at full protocol efficiency: a ring moves 2(n-1)/n of the
    buffer, a tree the buffer, NVLS (ppn+1)/ppn of it through the switch."""
    cfg = lay.config
    ppn = cfg.ranks // cfg.nodes
    factor = {"Ring": 2 * (cfg.ranks - 1) / cfg.ranks, "Tree": 1.0}.get(lay.algo, (ppn + 1) / ppn)
    return factor * lay.sizes


def _terms(params: ModelParams, lay: Layout) -> tuple[dict, dict]:
    """({term: us per size} of each additive time term, {link class: bytes its busiest resource
    carries per size})."""
    cfg, a, p = lay.config, lay.algo, lay.proto
    main = params.path(lay.main, a, p)
    eff = EFFICIENCY[p]
    wire = lay.nc * lay.payload / eff
    nch = cfg.channels or (params.nvls_channels if lay.main == "nvls" else params.channels)
    times, rates, full, loads = {}, {}, [], {}
    for link, share, fraction in lay.shares:
        chan = params.path(link, a, p)["chan_GBps"] * 1e3  # bytes per us
        cap = params.link_GBps[link] * 1e3
        rates[link] = shared_rate(lay.nc * fraction * chan, cap, params.link_exp) / share   # for all the wire bytes
        times[link] = wire / rates[link]
        full.append(float(np.min(shared_rate(nch * fraction * chan, cap, params.link_exp) / share)))
        loads[link] = wire * share
    bw_time, rate, full_rate = times[lay.main], rates[lay.main], full[0]
    intra = "nvls" if lay.main == "nvls" else cfg.intra
    hop_intra = params.path(intra, a, p)["hop_us"] if lay.hops_intra else 0.0
    hop_net = params.path("net", a, p)["hop_us"] if lay.hops_net else 0.0
    latency = np.full(lay.sizes.shape, main["base_us"] + lay.hops_net * hop_net + lay.hops_intra * hop_intra,
                      dtype=float)
    bandwidth = _total_payload(lay) / full_rate
    protocol = lay.nc * lay.payload * (1 / eff - 1) / rate
    terms = {
        "latency": latency, "bandwidth": bandwidth, "protocol": protocol,
        "channels": bw_time - protocol - bandwidth,
        "fill": main["fill"] * lay.depth * (lay.slice / eff) * lay.nc / rate,
        "steps": main["step_us"] * (lay.steps - lay.hop_steps),
        "sync": main.get("warp_us", OPTIONAL["warp_us"]) * lay.steps * lay.threads / 32,
        "l2": main.get("spill", OPTIONAL["spill"]) * bw_time * ~params.in_l2(lay.footprint),
        "reuse": np.where(params.in_l2(lay.user_footprint), (main.get("warm", OPTIONAL["warm"]) - 1.0) * bw_time, 0.0),
    }
    gpu_side = bw_time + sum(terms[k] for k in ("steps", "sync", "l2", "reuse"))
    others = [times[k] for k in times if k != lay.main]
    terms["network"] = np.maximum(np.max(others, axis=0) - gpu_side, 0.0) if others else 0.0 * bw_time
    terms["harness"] = np.full(lay.sizes.shape, params.harness_time(cfg))
    gpu = sum(terms.values())
    terms["launch"] = np.maximum(params.host_floor(cfg, main) - gpu, 0.0) if cfg.timing == "eager" else 0.0 * gpu
    return terms, loads


def shared_rate(x, cap: float, p: float):
    """Rate (bytes/us) of channels that alone would move x bytes/us, on a link of cap bytes/us:
    x / (1 + (x/cap)^p)^(1/p), the hard min(x, cap) for p = 0 (where (x/cap)^p would overflow, the
    same as cap / (1 + (cap/x)^p)^(1/p))."""
    if p <= 0:
        return np.minimum(x, cap)
    with np.errstate(over="ignore", divide="ignore"):
        rate = x / (1.0 + (x / cap) ** p) ** (1.0 / p)
        huge = cap / (1.0 + (cap / np.maximum(x, 1e-300)) ** p) ** (1.0 / p)
    return np.where(np.isfinite(rate) & (rate > 0) | (np.asarray(x) <= 0), rate, huge)


def predict(params: ModelParams, algo: str, proto: str, sizes, config: Config) -> np.ndarray:
    """Time per AllReduce in microseconds for each size (bytes)."""
    return predict_layout(params, model_layout(params, algo, proto, sizes, config))


def model_layout(params: ModelParams, algo: str, proto: str, sizes, config: Config) -> Layout:
    """``layout`` with the channel counts ``params`` hold."""
    return layout(algo, proto, sizes, config, params.channels, params.nvls_channels)


def predict_layout(params: ModelParams, lay: Layout) -> np.ndarray:
    """``predict`` on a precomputed ``layout`` (us per size; the fit reuses layouts)."""
    return sum(_terms(params, lay)[0].values())


def explain(params: ModelParams, algo: str, proto: str, sizes, config: Config) -> list[dict]:
    """Per size: time (us), busbw (GB/s), each term's share of the time, the dominant term,
    channels used, and utilisation of each link class (wire bytes / (time x link GB/s))."""
    lay = model_layout(params, algo, proto, sizes, config)
    terms, loads = _terms(params, lay)
    total = sum(terms.values())
    out = []
    for i, nb in enumerate(lay.sizes.tolist()):
        shares = {k: float(v[i] / total[i]) for k, v in terms.items()}
        out.append({
            "size": nb, "time_us": float(total[i]), "busbw_GBps": bandwidths(nb, total[i], config.ranks)[1],
            "channels": int(lay.nc[i]), "threads": int(lay.threads[i]), "steps": int(lay.steps[i]), "shares": shares,
            "dominant": max(shares, key=shares.get),
            "link_utilisation": {k: float(w[i] / (total[i] * params.link_GBps[k] * 1e3)) for k, w in loads.items()},
        })
    return out


