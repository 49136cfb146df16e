"""NCCL's choice against the simulated best, per size and per size band: what ``collsim diagnose``
answers to "why did NCCL pick this?" and what ``collsim export-tuner`` hands to NCCL.

``best(cluster, sizes)``: for each size, NCCL's own choice (``predict_nccl`` with the defaults:
algorithm, protocol, the channels it runs, the simulated time) and every algorithm x protocol NCCL
could run there (``predict_nccl`` with that pair forced, as NCCL_ALGO/NCCL_PROTO would; pairs NCCL
refuses on this cluster are left out), the fastest simulated one as ``best`` and ``gain`` = NCCL's
time / the best time (1.0 where NCCL's choice is the best). ``bands(rows)`` joins consecutive sizes
with the same best (algorithm, protocol, channels) into ``[lo, hi]`` byte ranges. Times are
microseconds, busbw GB/s.

Collectives: any (``collsim.core.collective``, any of its names); the pairs forced are those of
NCCL's algorithms for it that collsim's predictors cover (AlltoAll and SendRecv: none, NCCL's p2p
operations only).
"""

from __future__ import annotations

from collsim.core.collective import get as get_collective
from collsim.errors import CollsimError
from collsim.nccl import ALGOS, PROTOS
from collsim.predict import predict_nccl


def _choice(row: dict) -> dict:
    return {k: row[k] for k in ("algo", "proto", "channels", "time_us", "busbw_GBps")}


def best(
    cluster, sizes, coll: str = "AllReduce", env: dict | None = None, timing: str = "eager"
) -> list[dict]:
    """``[{"bytes", "nccl": choice, "best": choice, "gain"}]`` per size (module docstring)."""
    c = get_collective(coll)

    def predict(cluster, sizes, **kw):
        return predict_nccl(cluster, sizes, coll=c.name, **kw)

    sizes = sorted({int(s) for s in sizes})
    chosen = predict(cluster, sizes, env=env, timing=timing)["rows"]
    forced = []
    for algo in (a for a in ALGOS if a in c.algorithms):
        for proto in PROTOS:
            try:
                forced.append(
                    predict(cluster, sizes, algo=algo, proto=proto, env=env, timing=timing)["rows"]
                )
            except CollsimError:  # NCCL does not run this pair here (no NVLS on this machine, ...)
                continue
    out = []
    for i, size in enumerate(sizes):
        nccl = _choice(chosen[i])
        top = min((_choice(rows[i]) for rows in forced), key=lambda c: c["time_us"], default=nccl)
        if top["time_us"] >= nccl["time_us"]:
            top = nccl
        out.append(
            {"bytes": size, "nccl": nccl, "best": top, "gain": nccl["time_us"] / top["time_us"]}
        )
    return out


def bands(rows: list[dict], key: str = "best") -> list[dict]:
    """Consecutive sizes whose ``key`` choice has the same (algo, proto, channels), as ``{"lo",
    "hi", "algo", "proto", "channels", "sizes", "max_gain"}`` bands in size order.
    """
    out = []
    for r in sorted(rows, key=lambda r: r["bytes"]):
        c = r[key]
        same = out and (out[-1]["algo"], out[-1]["proto"], out[-1]["channels"]) == (
            c["algo"],
            c["proto"],
            c["channels"],
        )
        if same:
            out[-1]["hi"] = r["bytes"]
            out[-1]["sizes"] += 1
            out[-1]["max_gain"] = max(out[-1]["max_gain"], r["gain"])
        else:
            out.append(
                {
                    "lo": r["bytes"],
                    "hi": r["bytes"],
                    "algo": c["algo"],
                    "proto": c["proto"],
                    "channels": c["channels"],
                    "sizes": 1,
                    "max_gain": r["gain"],
                }
            )
    return out
