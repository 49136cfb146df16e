"""Parameters of collsim's NCCL-shaped model (``collsim.fitted.model``) and their JSON file.

``ModelParams`` holds, per (link class, algorithm, protocol) path, the values of ``PARAM_NAMES``
(units in its docstring), the link capacities, the channel count and the harness terms;
``default_params`` the priors before fitting; ``save_params`` / ``load_params`` the file format
``collsim.nccl_model.params`` version 1 (what ``collsim fit -o`` writes). A file's values must lie
in ``RANGES`` (channels: 1 to ``collsim.inputs.MAX_CHANNELS``), so that every prediction from
them is a finite time.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import numpy as np

from collsim.errors import CollsimError, describe, describe_key, require_number
from collsim.fitted.layout import Config
from collsim.inputs import MAX_BYTES, MAX_CHANNELS, read_field, read_json
from collsim.nccl import PROTOS, canonical_pair
from collsim.nccl.tuning import BASE_LAT, HW_LAT
from collsim.outputs import atomic_write

FORMAT = "collsim.nccl_model.params"
LINK_CLASSES = ("nvlink", "pcie", "net", "nvls")
# (link classes, algorithms) every file holds
REQUIRED = (("nvlink", "pcie", "net"), ("Ring", "Tree"))
PARAM_NAMES = ("base_us", "hop_us", "step_us", "chan_GBps", "fill", "host_us", "spill", "warp_us",
               "warm")
# values of terms a path may lack (no effect)
OPTIONAL = {"spill": 0.0, "warp_us": 0.0, "warm": 1.0}
L2_BYTES = 52428800  # H100/H200 L2 (cudaDeviceProp.l2CacheSize), bytes
REUSE = 2  # L2 bytes touched between two uses of a receive slot, per slot byte (module docstring)
_US, _GBPS = (0.0, 1e9), (1e-3, 1e5)
RANGES = {  # (minimum, maximum) of each value a parameters file may hold
    "base_us": _US, "hop_us": _US, "step_us": _US, "chan_GBps": _GBPS, "fill": (0.0, 1e3),
    "host_us": _US,
    "spill": (0.0, 1e3), "warp_us": _US, "warm": (1e-3, 1e3), "link_GBps": _GBPS,
    "link_exp": (0.0, 16.0),
    "l2_bytes": (1.0, float(MAX_BYTES)), "harness_us": _US, "start_us": _US, "launch_us": _US,
}


@dataclass
class ModelParams:
    """Fitted or prior parameters. ``paths[(link, algo, proto)]`` holds a dict of PARAM_NAMES:
    base_us (fixed cost per call, us), hop_us (latency per hop, us), step_us (overhead per
    pipeline step and channel, us), chan_GBps (wire GB/s one full channel moves), fill (pipeline
    fill in slice times per depth level), host_us (eager launch interval, us), spill (fraction
    of the bandwidth time added when NCCL's receive buffers exceed L2; 0 when absent), warp_us
    (barrier cost per pipeline step and warp of the channel's threads, us; 0 when absent), warm
    (bandwidth time with the user buffer still in L2 / without; 1 when absent).
    ``link_GBps[link]``: per-direction capacity shared by all channels; ``link_exp``: how
    sharply channels saturate it (0: hard min). ``l2_bytes``: the GPU's L2 capacity (bytes).
    ``channels``: NCCL's collective channel count. ``meta``: provenance (what it was fitted on,
    hold-out errors). ``harness_us[key]``: per-call overhead (us) a harness adds to NCCL's time
    (``Config.harness``; measured by ``collsim.fit.harness_overheads``, 0 for keys not listed).
    ``start_us[clock]``: fixed cost (us) per measurement of a clock (``Config.clock``), spread over
    ``Config.calls`` (``collsim.fit.start_costs``; 0 for clocks not listed). ``launch_us[key]``:
    (fixed, per GPU) host time (us) an eager harness spends per call, the second per GPU its process
    launches on (``Config.gpus_per_process``); keys not listed use the path's ``host_us``.
    ``nvls_channels``: NCCL's NVLS channel count. The "nvls" link class is the per-GPU port into an
    NVSwitch doing NVLink SHARP (multimem) work."""
    paths: dict
    link_GBps: dict
    channels: int = 24
    meta: dict = field(default_factory=dict)
    harness_us: dict = field(default_factory=dict)
    link_exp: float = 0.0
    l2_bytes: float = L2_BYTES
    start_us: dict = field(default_factory=dict)
    launch_us: dict = field(default_factory=dict)
    nvls_channels: int = 16

    def host_floor(self, cfg: Config, path: dict) -> float:
        """Shortest interval (us) between eager calls: the harness's launch cost per GPU x GPUs
        per process when ``launch_us`` has the harness, else the path's fitted ``host_us``."""
        if cfg.harness in self.launch_us:
            fixed, per_gpu = self.launch_us[cfg.harness]
            return float(fixed) + float(per_gpu) * cfg.gpus_per_process
        return float(path["host_us"])

    def harness_time(self, cfg: Config) -> float:
        """Per-call time (us) ``cfg``'s harness adds: its overhead and its clock's share."""
        return float(self.harness_us.get(cfg.harness, 0.0)) + clock_share(self.start_us, cfg)

    def in_l2(self, footprint) -> np.ndarray:
        """Whether bytes cycled through (per size) stay in L2: REUSE x footprint <= l2_bytes."""
        return REUSE * np.asarray(footprint) <= self.l2_bytes

    def path(self, link: str, algo: str, proto: str) -> dict:
        try:
            return self.paths[(link, algo, proto)]
        except KeyError:
            raise CollsimError(f"the parameters have no entry for {link}/{algo}/{proto}") from None


def clock_share(start_us: dict, cfg: Config) -> float:
    """Per-call share (us) of ``cfg``'s clock's fixed cost per measurement: start_us[clock] /
    calls (0 for a clock not in ``start_us`` or calls not known)."""
    return start_us.get(cfg.clock, 0.0) / cfg.calls if cfg.calls else 0.0


# NVLS priors (Simple only): NCCL 2.28's NVLS / NVLSTree latencies (tuning.cc:149-168: NVLink 25 us
# for
# the whole intra-node part, NET 18 / 20.9 us per network step); a channel fast enough that the port
# into the switch bounds the rate: 480 GB/s busbw on 8 x H100 (sjeaugey, NVIDIA/nccl-tests#212) is
# 480 x 9/14 = 309 GB/s through each GPU's port (busbw = wire x 2(n-1)/(n+1), nccl-tests PR 239).
NVLS_PRIOR = {"NVLS": (25.0, 18.0), "NVLSTree": (25.0, 20.9)}
NVLS_WIRE_GBPS = 480.0 * 9 / 14


def default_params() -> ModelParams:
    """Priors before fitting (not measurements): NCCL 2.28's base and hop latencies, a
    channel rate of 15 GB/s, NVLink4 at 18 x 26.6 GB/s, a socket link at 3 GB/s, and the NVLS
    paths of ``NVLS_PRIOR``."""
    paths = {}
    for link in REQUIRED[0]:
        for algo in REQUIRED[1]:
            for i, proto in enumerate(PROTOS):
                paths[(link, algo, proto)] = {
                    "base_us": BASE_LAT[algo][i], "hop_us": HW_LAT[link][algo][i],
                    "step_us": 0.5, "chan_GBps": 15.0 if link != "net" else 3.0, "fill": 1.0,
                    "host_us": 0.0, **OPTIONAL}
    for algo, (intra_us, net_us) in NVLS_PRIOR.items():
        paths[("nvls", algo,
               "Simple")] = {"base_us": intra_us, "hop_us": 0.0, "step_us": 0.5, "chan_GBps": 40.0,
                                           "fill": 1.0, "host_us": 0.0, **OPTIONAL}
        paths[("net", algo, "Simple")] = {**paths[("net", "Tree", "Simple")], "hop_us": net_us}
    return ModelParams(paths, {"nvlink": 478.8, "pcie": 24.0, "net": 3.0, "nvls": NVLS_WIRE_GBPS},
                       meta={"source": "priors"})


def with_path(params: ModelParams, key: tuple, **values) -> ModelParams:
    """A copy of params with some values of one path entry replaced."""
    paths = dict(params.paths)
    paths[key] = {**params.path(*key), **values}
    return replace(params, paths=paths)


def params_to_dict(params: ModelParams) -> dict:
    return {"format": FORMAT, "version": 1,
            "units": "us for *_us, GB/s (1e9 B/s) for *_GBps, fill in slice times per pipeline "
                     "depth level, spill as a fraction of the bandwidth time, warm as a ratio of "
                     "bandwidth times, l2_bytes in bytes, link_exp dimensionless",
            "channels": params.channels, "link_GBps": params.link_GBps,
            "paths": [{"link": k[0], "algo": k[1], "proto": k[2], **v} for k,
                      v in sorted(params.paths.items())],
            "link_exp": params.link_exp, "l2_bytes": params.l2_bytes,
            "harness_us": params.harness_us, "start_us": params.start_us,
            "launch_us": params.launch_us,
            "nvls_channels": params.nvls_channels, "meta": params.meta}


def save_params(params: ModelParams, path) -> None:
    """Write the parameters as JSON (format ``FORMAT`` version 1), in full or not at all
    (``collsim.outputs.atomic_write``)."""
    with atomic_write(path, "parameters file") as f:
        json.dump(params_to_dict(params), f, indent=1)
        f.write("\n")


def _value(name: str, value, where: str, label: str | None = None) -> float:
    """A number of a parameters file within ``RANGES[name]``; errors call it ``label`` (else
    ``name``)."""
    lo, hi = RANGES[name]
    if value is None:
        raise CollsimError(f"{where}: missing {label or name}")
    return require_number(f"{where}: {label or name}", value, minimum=lo, maximum=hi)


def _numbers(d: dict, key: str, where: str, name: str) -> dict:
    """{str: number in RANGES[name]} from the object ``d[key]`` (absent: empty)."""
    return {str(k): _value(name, v, where, f"{key}.{describe_key(k)}")
            for k, v in (read_field(d, key, where, dict) or {}).items()}


def _launch(d: dict, where: str) -> dict:
    """``launch_us``: {harness: (fixed, per GPU)}, two numbers in RANGES["launch_us"] each."""
    out = {}
    for k, v in (read_field(d, "launch_us", where, dict) or {}).items():
        if not isinstance(v, list) or len(v) != 2:
            raise CollsimError(f"{where}: launch_us.{describe_key(k)} must be [fixed_us, "
                               "per_gpu_us], "
                               f"got {describe(v)}")
        out[str(k)] = tuple(_value("launch_us", x, where, f"launch_us.{describe_key(k)}")
                            for x in v)
    return out


def params_from_dict(d: dict, where: str = "parameters") -> ModelParams:
    """``ModelParams`` from the dict of a parameters file; CollsimError naming ``where`` and the
    value when it is not one (module docstring: every value within ``RANGES``). Paths and links
    of hardware the file was not fitted on (NVLS) keep the priors."""
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise CollsimError(f"{where}: not a collsim parameters file (format must be {FORMAT!r})")
    links = _numbers(d, "link_GBps", where, "link_GBps")
    unknown = sorted(set(links) - set(LINK_CLASSES))
    if unknown:
        raise CollsimError(f"{where}: unknown link classes "
                           f"({', '.join(map(describe, unknown[:3]))})")
    paths = {}
    for i, e in enumerate(read_field(d, "paths", where, list, required=True)):
        at = f"{where}: paths[{i}]"
        if not isinstance(e, dict):
            raise CollsimError(f"{at} must be an object, got {describe(e)}")
        link = read_field(e, "link", at, str, required=True, choices=LINK_CLASSES)
        key = (link, *canonical_pair(read_field(e, "algo", at, str, required=True),
                                     read_field(e, "proto", at, str, required=True)))
        paths[key] = {n: _value(n, e.get(n, OPTIONAL.get(n)), at) for n in PARAM_NAMES}
    missing = [f"{lk}/{a}/{p}" for lk in REQUIRED[0] for a in REQUIRED[1] for p in PROTOS
               if (lk, a,
                   p) not in paths] + [f"link_GBps.{lk}" for lk in REQUIRED[0] if lk not in links]
    if missing:
        raise CollsimError(f"{where}: missing entries ({', '.join(missing[:3])})")
    priors = default_params()
    paths = {**{k: v for k, v in priors.paths.items() if k not in paths}, **paths}
    links = {**{k: v for k, v in priors.link_GBps.items() if k not in links}, **links}
    channels = read_field(d, "channels", where, int, required=True, minimum=1, maximum=MAX_CHANNELS)
    nvls_channels = read_field(d, "nvls_channels", where, int, minimum=1, maximum=MAX_CHANNELS)
    return ModelParams(paths, links, channels, meta=read_field(d, "meta", where, dict) or {},
                       harness_us=_numbers(d, "harness_us", where, "harness_us"),
                       link_exp=_value("link_exp", d.get("link_exp", 0.0), where),
                       l2_bytes=_value("l2_bytes", d.get("l2_bytes", L2_BYTES), where),
                       start_us=_numbers(d, "start_us", where, "start_us"),
                       launch_us=_launch(d, where),
                       nvls_channels=16 if nvls_channels is None else nvls_channels)


def load_params(path) -> ModelParams:
    """Read a parameters file written by ``save_params``; bad files raise a one-line
    CollsimError."""
    return params_from_dict(read_json(path, "parameters file"), f"parameters file {path}")
