"""collsim's NCCL-shaped AllReduce time model, per (algorithm, protocol), in microseconds.

``collsim.fitted.layout`` gives the parameter-free part per size (bytes): channels and threads NCCL
runs, the busiest channel's payload, pipeline steps and slice, NCCL's receive-buffer footprint,
hops, pipeline depth and which link classes carry what (``Layout.shares``). This module turns a
layout and ``collsim.fitted.params.ModelParams`` into time::

    T = base + hops_intra x hop_intra + hops_net x hop_net        latency (path of the main class)
      + W / R                                                     bandwidth, protocol, channels
      + fill x depth x slice_wire / (R / channels)                pipeline fill
      + (steps - hop_steps) x step_us                             per-step overhead
      + (steps - hop_steps) x warp_us x threads / 32              per-step barriers
      + spill x W / R        if 2 x footprint > l2_bytes          L2 spill of NCCL's buffers
      + (warm - 1) x W / R   if 2 x user footprint <= l2_bytes    user buffer still in L2
      + network                                                   what the NICs add beyond the above
      + harness                                                   harness overhead and clock share
    eager:  T = max(T, host floor)                                launch

* W: wire bytes of all channels per direction (payload / protocol efficiency: LL 1/2, LL128
  15/16, Simple 1). R: rate of the main link class, R = x / (1 + (x / link_GBps)^p)^(1/p) with
  x = channels x chan_GBps and p = ``link_exp`` (p = 0: the hard min): channels that alone move
  chan_GBps share one link of link_GBps per direction.
* Several link classes (``Layout.shares``: NVLink and the NICs on several nodes, the NVSwitch port
  for NVLS): each class's busiest resource carries its share of W at its own rate; the main
  (GPU-side) class makes the terms above and ``network`` is how much longer the other classes take.
* hop_steps: the steps of a ring's first pass beyond a 2-rank ring's 2 pay the hop latency only,
  which covers their work and barriers (NCCL's per-hop constants are end to end; the fitted base,
  step and barrier costs come from 2-rank rings).
* Host floor: ``ModelParams.host_floor`` (a harness's fixed + per-GPU launch time, or the path's
  fitted host_us).

Units: us, bytes, GB/s = 1e9 B/s. Why each term is there and what it measured on 2 x H200:
data/h200x2/ACCURACY.md "The model's terms". ``explain`` splits T into these terms per size,
names the dominant one and gives each link class's utilisation.
"""
from __future__ import annotations

import numpy as np

from collsim.core.collective import ALLREDUCE
from collsim.fitted.layout import EFFICIENCY, Config, Layout, layout
from collsim.fitted.params import OPTIONAL, ModelParams


def _total_payload(lay: Layout) -> np.ndarray:
    """Payload bytes per GPU per direction at full protocol efficiency: a ring moves 2(n-1)/n of the
    buffer, a tree the buffer, NVLS (ppn+1)/ppn of it through the switch."""
    cfg = lay.config
    ppn = cfg.ranks // cfg.nodes
    factor = {"Ring": ALLREDUCE.busbw_factor(cfg.ranks), "Tree": 1.0}.get(lay.algo, (ppn + 1) / ppn)
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
        # for all the wire bytes
        rates[link] = shared_rate(lay.nc * fraction * chan, cap, params.link_exp) / share
        times[link] = wire / rates[link]
        full.append(float(np.min(shared_rate(nch * fraction * chan, cap, params.link_exp) / share)))
        loads[link] = wire * share
    bw_time, rate, full_rate = times[lay.main], rates[lay.main], full[0]
    intra = "nvls" if lay.main == "nvls" else cfg.intra
    hop_intra = params.path(intra, a, p)["hop_us"] if lay.hops_intra else 0.0
    hop_net = params.path("net", a, p)["hop_us"] if lay.hops_net else 0.0
    latency = np.full(lay.sizes.shape,
                      main["base_us"] + lay.hops_net * hop_net + lay.hops_intra * hop_intra,
                      dtype=float)
    bandwidth = _total_payload(lay) / full_rate
    protocol = lay.nc * lay.payload * (1 / eff - 1) / rate
    terms = {
        "latency": latency, "bandwidth": bandwidth, "protocol": protocol,
        "channels": bw_time - protocol - bandwidth,
        "fill": main["fill"] * lay.depth * (lay.slice / eff) * lay.nc / rate,
        "steps": main["step_us"] * (lay.steps - lay.hop_steps),
        "sync": main.get("warp_us",
                         OPTIONAL["warp_us"]) * (lay.steps - lay.hop_steps) * lay.threads / 32,
        "l2": main.get("spill", OPTIONAL["spill"]) * bw_time * ~params.in_l2(lay.footprint),
        "reuse": np.where(params.in_l2(lay.user_footprint),
                          (main.get("warm", OPTIONAL["warm"]) - 1.0) * bw_time, 0.0),
    }
    gpu_side = bw_time + sum(terms[k] for k in ("steps", "sync", "l2", "reuse"))
    others = [times[k] for k in times if k != lay.main]
    terms["network"] = np.maximum(np.max(others, axis=0) - gpu_side,
                                  0.0) if others else 0.0 * bw_time
    terms["harness"] = np.full(lay.sizes.shape, params.harness_time(cfg))
    gpu = sum(terms.values())
    terms["launch"] = np.maximum(params.host_floor(cfg, main) - gpu,
                                 0.0) if cfg.timing == "eager" else 0.0 * gpu
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
            "bytes": nb, "time_us": float(total[i]),
            "busbw_GBps": ALLREDUCE.bandwidths(nb, total[i], config.ranks)[1],
            "channels": int(lay.nc[i]), "threads": int(lay.threads[i]), "steps": int(lay.steps[i]),
            "shares": shares,
            "dominant": max(shares, key=shares.get),
            "link_utilisation": {k: float(w[i] / (total[i] * params.link_GBps[k] * 1e3)) for k,
                                 w in loads.items()},
        })
    return out


