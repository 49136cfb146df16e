"""Measured AllReduce points for fitting and comparing ``collsim.fitted.model``.

Inputs: runner JSON Lines (``collsim.measure.load``) or nccl-tests output
(``collsim.measure.nccl_tests.import_nccl_tests``, labelled ``ALGO/PROTO`` from the file name or the
caller). Time per call (microseconds) is the runner's ``time_us_min``, the minimum over ranks of
each rank's average, when a record has it (else ``time_us_mean``, else ``time_us``): the ranks
record their start events after a host barrier they leave at different times, and the rank that
starts first waits for its peer inside the first collective, so its average carries that skew
divided by the calls timed; the rank that starts last measures NCCL's time (on 2 x H200 the
runner's per-size max - min over ranks is 0-4 us at 8 B-64 KiB, scattered from size to size,
while the minimum is smooth; nccl-tests drives every GPU from one thread and has no such skew).

Records are refused, each with a one-line error naming the file and size, when they found wrong
elements (``wrong`` > 0: the sum was not right, so the time is not an AllReduce's) or have no
positive time; records of 0 bytes are left out (nothing moves).

A record's configuration (``nccl_layout.Config``) comes from the record and its file's meta:
``ranks`` (or meta ``world_size``), meta ``nodes``, NCCL_BUFFSIZE
(``collsim.inputs.BUFFSIZE_RANGE``) and NCCL_MIN/MAX_NCHANNELS (1 to
``collsim.inputs.MAX_CHANNELS``) from meta ``env`` (else the channel count NCCL's probe logged, meta
``nccl_probe.coll_channels``), ``timing``; the intra-node link class is "pcie" when
NCCL_P2P_DISABLE=1 else "nvlink"; the harness (``harness_key``); how calls reuse the user buffer
(``buffer_reuse``); the clock's fixed cost per measurement and the calls it is spread over
(``clock_key``, ``timed_calls``). A record that names its algorithm but not its protocol (the runner
run with ``--algo`` only) takes the protocol NCCL logged for that size in the file's probe. """
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collsim.core.collective import named
from collsim.errors import CollsimError
from collsim.fitted.layout import Config
from collsim.inputs import BUFFSIZE_RANGE, MAX_CHANNELS, int_text
from collsim.measure.files import load_file
from collsim.nccl import canonical_pair

SPLITS = ("odd", "even", "timing", "run")


@dataclass
class Point:
    """One measured AllReduce: size (bytes), time_us, algo/proto (None: NCCL's choice),
    its Config, the index of the file it came from, and the file's meta."""
    size: int
    time_us: float
    algo: str | None
    proto: str | None
    config: Config
    run: int
    meta: dict


def _mpi(meta: dict) -> str:
    """"-mpi" for nccl-tests run as one process per GPU of several, else ""."""
    return "-mpi" if meta.get("gpus_per_process") == 1 and (meta.get("world_size") or 1) > 1 else ""


def harness_key(meta: dict, timing: str) -> str:
    """Which per-call overhead a measurement carries beyond NCCL's own kernel time:
    "torch-graph-mixing" (torch's all_reduce captured in a CUDA graph with NCCL's default
    NCCL_GRAPH_MIXING_SUPPORT=1); for nccl-tests -G, "nccl-tests-graph" (NCCL's default mixing,
    which text logs assume unless the import was given ``env``), with "-mix0" when
    NCCL_GRAPH_MIXING_SUPPORT=0 and "-mpi" when each process drives one GPU of several (its host
    clock over barrier + launches differs from one process driving every GPU); "nccl-tests-eager"
    for nccl-tests without -G (its host floor per call: ``ModelParams.launch_us``); else "bare"
    (the runner's graph timing with NCCL_GRAPH_MIXING_SUPPORT=0, and its eager timing, whose host
    floor is fitted per path as host_us)."""
    if timing != "graph":
        return "nccl-tests-eager" if meta.get("harness") == "nccl-tests" else "bare"
    mixing = str((meta.get("env") or {}).get("NCCL_GRAPH_MIXING_SUPPORT", "1")) != "0"
    if meta.get("harness") == "nccl-tests":
        return "nccl-tests-graph" + ("" if mixing else "-mix0") + _mpi(meta)
    return "torch-graph-mixing" if mixing else "bare"


def clock_key(meta: dict) -> str:
    """Which fixed cost per measurement a file's clock carries (``Config.clock``): "nccl-tests"
    (a host timer over a barrier, the launches and the final poll; "-mpi" with one process per
    GPU), "runner-gated" (the runner's clocks start together with the timed calls queued: meta
    clock_start "gated"), else "runner-barrier" (runner files from before run 6: each rank's
    start event after a host barrier, before its first launch)."""
    if meta.get("harness") == "nccl-tests":
        return "nccl-tests" + _mpi(meta)
    return "runner-" + str(meta.get("clock_start") or "barrier")


def timed_calls(meta: dict, timing: str) -> int:
    """Calls timed per measurement (``Config.calls``): nccl-tests -n x -G (-n alone without a
    graph); the runner's graph timing ceil(-n / --graph-calls) x --graph-calls, eager -n."""
    iters = int(meta.get("iters") or 0)
    if meta.get("harness") == "nccl-tests":
        return iters * max(int(meta.get("graph") or 0), 1)
    k = int(meta.get("graph_calls") or 0)
    return -(-iters // k) * k if timing == "graph" and k else iters


def buffer_reuse(meta: dict, timing: str, max_size: int) -> tuple[int, int]:
    """(slices, buffer bytes) of ``Config``: nccl-tests moves its buffers by one size per call
    (offset = size x (iteration mod max_bytes // size), iterations 0 .. -n - 1); the runner uses
    one slice, or with --rotate (meta "rotate") nccl-tests' rule over its calls per graph (graph
    timing) or per measurement (eager), in a buffer of its largest size."""
    if meta.get("harness") == "nccl-tests":
        return int(meta.get("iters") or 1), int(meta.get("max_bytes") or max_size)
    if not meta.get("rotate"):
        return 1, max_size
    calls = meta.get("graph_calls") if timing == "graph" else max(meta.get("warmup") or 0,
                                                                  meta.get("iters") or 0)
    return int(calls or 1), max_size


def _config(rec: dict, meta: dict, max_size: int, where: str) -> Config:
    env = meta.get("env") or {}
    ranks = rec.get("ranks") or meta.get("world_size")
    if not ranks:
        raise CollsimError(f"{where}: a record has no rank count (record 'ranks' or meta "
                           "'world_size')")
    buff = int_text(env["NCCL_BUFFSIZE"], f"{where}: meta env NCCL_BUFFSIZE", *BUFFSIZE_RANGE) \
        if env.get("NCCL_BUFFSIZE") else None
    chans = [int_text(env[k], f"{where}: meta env {k}", 1, MAX_CHANNELS)
             for k in ("NCCL_MAX_NCHANNELS", "NCCL_MAX_CTAS", "NCCL_MIN_NCHANNELS",
                       "NCCL_MIN_CTAS") if env.get(k)]
    probed = (meta.get("nccl_probe") or {}).get("coll_channels")
    timing = rec.get("timing") or meta.get("timing") or "graph"
    slices, buffer = buffer_reuse(meta, timing, max_size)
    return Config(int(ranks), nodes=int(meta.get("nodes") or 1),
                  intra="pcie" if str(env.get("NCCL_P2P_DISABLE", "0")) == "1" else "nvlink",
                  buffsize=buff, channels=chans[0] if chans else (int(probed) if probed else None),
                  timing=timing, harness=harness_key(meta, timing),
                  slices=slices, buffer_bytes=buffer, inplace=rec.get("inplace") is not False,
                  clock=clock_key(meta), calls=timed_calls(meta, timing),
                  nics=0,
                  gpus_per_process=min(int(meta.get("gpus_per_process") or 1),
                                       int(ranks) // int(meta.get("nodes") or 1)))


def _logged_protocols(meta: dict) -> dict:
    """{(size, algo): proto} from the AllReduce choices NCCL logged in the file's probe."""
    return {(int(c["bytes"]), str(c["algo"]).lower()): c["proto"]
            for c in (meta.get("nccl_probe") or {}).get("choices", [])
            if c.get("func", "AllReduce") == "AllReduce"}


def load_points(paths, label: str | None = None, inplace: bool = True,
                nodes: int | None = None) -> list[Point]:
    """Points from measurement files (``.jsonl``: runner records; other files: nccl-tests
    output, labelled ``label`` such as "Ring/LL", else from the file name); ``nodes`` replaces the
    files' node count (a log whose hosts all print the same name, or none). Keeps in-place
    records (what torch's all_reduce does) or, with ``inplace=False``, out-of-place ones;
    records that do not say are kept either way. Records of executed collsim schedules
    (``executor`` "collsim", ``collsim.measure.executed``) are not NCCL's and are left out; the
    native all_reduce beside them is kept. Refuses records with wrong elements or without a
    positive time (module docstring), and files of another collective than AllReduce."""
    points = []
    for run, path in enumerate(paths):
        m = load_file(path, label)
        coll = named(m.meta.get("collective"))
        if coll != "all_reduce":
            raise CollsimError(f"{path}: a log of {coll}, and the fitted model is AllReduce's: "
                               "score it with collsim compare --cluster SPEC --measured FILE (the "
                               "simulation of that collective)")
        if nodes is not None:
            m.meta = {**m.meta, "nodes": nodes}
        logged = _logged_protocols(m.meta)
        max_size = max((int(rec.get("size") or 0) for rec in m.records), default=1)
        for rec in m.records:
            if (
                rec["size"] < 1
                or rec.get("inplace") is not None
                and bool(rec["inplace"]) != inplace
                or rec.get("executor") == "collsim"
            ):
                continue
            where = f"{path}: size {rec['size']}"
            if rec.get("wrong"):
                raise CollsimError(f"{where}: {rec['wrong']} wrong elements, not an AllReduce to "
                                   "fit or compare "
                                   "(measure it again)")
            t = next((rec[k] for k in ("time_us_min", "time_us_mean", "time_us")
                      if rec.get(k) is not None), None)
            if not t:
                raise CollsimError(f"{where}: no positive time (time_us {rec.get('time_us')!r})")
            algo, proto = rec.get("algo"), rec.get("proto")
            if algo and not proto:
                proto = logged.get((rec["size"], str(algo).lower()))
            if algo and proto:
                algo, proto = canonical_pair(algo, proto)
            points.append(Point(rec["size"], float(t), algo or None, proto or None,
                                _config(rec, m.meta, max_size, str(path)), run, m.meta))
    if not points:
        raise CollsimError("no usable measurement records in " + ", ".join(map(str, paths)))
    return points


def split(points: list[Point], mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Boolean (train, test) masks over ``points``; disjoint by construction. "odd" fits even
    powers of two and tests odd ones (by round(log2 size)), "even" the reverse, "timing" fits
    eager timing and tests graph timing, "run" fits the first file and tests the others."""
    if mode not in SPLITS:
        raise CollsimError(f"unknown hold-out {mode!r}; expected one of {', '.join(SPLITS)}")
    if mode in ("odd", "even"):
        even = np.array([round(np.log2(p.size)) % 2 == 0 for p in points])
        train = even if mode == "odd" else ~even
    elif mode == "timing":
        train = np.array([p.config.timing == "eager" for p in points])
        if not train.any() or train.all():
            raise CollsimError("hold-out 'timing' needs both eager and graph measurements")
    else:
        train = np.array([p.run == 0 for p in points])
        if train.all():
            raise CollsimError("hold-out 'run' needs at least two measurement files")
    return train, ~train
