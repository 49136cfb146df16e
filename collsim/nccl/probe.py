"""What a recorded NCCL probe must hold: the part of ``collsim.nccl.log.NcclLog.to_dict`` (a
runner's meta ``nccl_probe``) that collsim reads, checked before it is used."""
from __future__ import annotations

from collsim.errors import CollsimError, describe
from collsim.inputs import MAX_BYTES, MAX_CHANNELS, MAX_RANKS, read_field


def check_probe(probe: dict, where: str) -> None:
    """The parts of a probe (``NcclLog.to_dict``, the runner's meta ``nccl_probe``) that collsim
    reads, as they must be, else CollsimError naming ``where``: ``coll_channels`` 1 to
    ``MAX_CHANNELS``, ``n_nodes``, ``tuning`` {collective: {algo: {proto: [latency_us,
    bandwidth_GBps]}}} (numbers), ``graphs`` (pattern, n_channels, bw_intra_GBps, bw_inter_GBps),
    ``choices`` (func, bytes, algo, proto, channel_lo/hi)."""
    read_field(probe, "coll_channels", where, int, minimum=1, maximum=MAX_CHANNELS)
    read_field(probe, "n_nodes", where, int, minimum=1, maximum=MAX_RANKS)
    for func, rows in (read_field(probe, "tuning", where, dict) or {}).items():
        if not isinstance(rows, dict) or not all(
            isinstance(protos, dict) for protos in rows.values()
        ):
            raise CollsimError(f"{where}: tuning {describe(func)} must map algorithms to protocols "
                               "to "
                               f"[latency_us, bandwidth_GBps], got {describe(rows)}")
        for algo, protos in rows.items():
            for proto, cell in protos.items():
                if not (isinstance(cell, list) and len(cell) == 2 and all(
                        isinstance(x, (int, float)) and not isinstance(x, bool) for x in cell)):
                    raise CollsimError(f"{where}: tuning {describe(func)} {describe(algo)} "
                                       f"{describe(proto)} must "
                                       f"be [latency_us, bandwidth_GBps], got {describe(cell)}")
    for kind in ("graphs", "choices"):
        for i, item in enumerate(read_field(probe, kind, where, list) or ()):
            at = f"{where}: {kind}[{i}]"
            if not isinstance(item, dict):
                raise CollsimError(f"{at} must be an object, got {describe(item)}")
            if kind == "graphs":
                read_field(item, "pattern", at, int, required=True, minimum=0, maximum=255)
                read_field(item, "n_channels", at, int, required=True, minimum=1,
                           maximum=MAX_CHANNELS)
                read_field(item, "bw_intra_GBps", at, float, required=True, minimum=0)
                read_field(item, "bw_inter_GBps", at, float, required=True, minimum=0)
            else:
                read_field(item, "func", at, str)
                read_field(item, "bytes", at, int, required=True, minimum=0, maximum=MAX_BYTES)
                read_field(item, "algo", at, str, required=True)
                read_field(item, "proto", at, str, required=True)
                for end in ("channel_lo", "channel_hi"):
                    read_field(item, end, at, int, minimum=0, maximum=MAX_CHANNELS - 1)
