"""The CSV that NCCL's example tuner plugin reads (``NCCL_TUNER_CONFIG_FILE``), from the simulated
best per size band (``collsim.predict.best``): ``collsim export-tuner``.

Format (NVIDIA/nccl plugins/tuner/example/plugin.c:17-33, 195-250 at 5067397c): one row per line,
``collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff``;
lines starting ``#`` and empty lines skipped; fields split by ``strtok(",")`` and trimmed of spaces
and tabs; a line read with ``fgets`` into 256 bytes; names lower case (``allreduce``; ``ring``,
``tree``, ``nvls``, ``nvls_tree``, ``collnet_direct``, ``collnet_chain``, ``pat``; ``ll``,
``ll128``, ``simple``), an unknown name read silently as ring or simple; a size matches when
``min_bytes <= nBytes <= max_bytes``; the first matching row wins, and it sets that pair's cost to 0
and the channels.

What is written: for each collective, rows that cover every size from 0 to ``SIZE_MAX``: the band of
each simulated best starts at its first simulated size (the first band at 0) and ends one byte
before the next band's (the last at ``SIZE_MAX``); ``channels`` always explicit (the plugin starts
from 1 channel, plugin.c: 361, and keeps it for ``-1``); ``nNodes`` and ``nRanks`` the cluster's, so
the rows apply to that shape only; ``numPipeOps`` and ``regBuff`` -1 (any). Comment lines say what
made the file.
"""

from __future__ import annotations

from collsim.core.collective import get as get_collective
from collsim.predict.best import bands, best

SIZE_MAX = 2**64 - 1
LINE_MAX = 255  # fgets into char[256]: a longer line is read in two pieces
ALGO_NAMES = {
    "Ring": "ring",
    "Tree": "tree",
    "NVLS": "nvls",
    "NVLSTree": "nvls_tree",
    "CollNetDirect": "collnet_direct",
    "CollNetChain": "collnet_chain",
    "PAT": "pat",
}
PROTO_NAMES = {"LL": "ll", "LL128": "ll128", "Simple": "simple"}


def tuner_rows(
    cluster, colls=("AllReduce",), sizes=(), env=None, timing: str = "eager"
) -> list[dict]:
    """One dict per CSV row (module docstring), with the band's ``max_gain`` over NCCL's own choice.
    """
    out = []
    for coll in colls:
        found = bands(best(cluster, sizes, coll, env, timing))
        for i, b in enumerate(found):
            lo = 0 if i == 0 else b["lo"]
            hi = found[i + 1]["lo"] - 1 if i + 1 < len(found) else SIZE_MAX
            out.append(
                {
                    "collective": get_collective(coll).name.replace("_", ""),
                    "min_bytes": lo,
                    "max_bytes": hi,
                    "algorithm": ALGO_NAMES[b["algo"]],
                    "protocol": PROTO_NAMES[b["proto"]],
                    "channels": int(b["channels"]),
                    "nNodes": cluster.nodes,
                    "nRanks": cluster.ranks,
                    "numPipeOps": -1,
                    "regBuff": -1,
                    "max_gain": b["max_gain"],
                }
            )
    return out


FIELDS = (
    "collective",
    "min_bytes",
    "max_bytes",
    "algorithm",
    "protocol",
    "channels",
    "nNodes",
    "nRanks",
    "numPipeOps",
    "regBuff",
)


def tuner_csv(rows: list[dict], comments=()) -> str:
    """The file's text: ``#`` comment lines (cut to ``LINE_MAX``), the field names as a comment, the
    rows.
    """
    lines = [f"# {c}"[:LINE_MAX] for c in comments] + ["# " + ",".join(FIELDS)]
    lines += [",".join(str(r[f]) for f in FIELDS) for r in rows]
    return "\n".join(lines) + "\n"
