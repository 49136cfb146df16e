"""Score the public logs of collectives other than AllReduce (data/public/README.md, "Other collectives
(issue 32)") with ``collsim compare --cluster``: print docs/accuracy.md's "Other collectives" table, one row
per log (median / p90 |time error| of collsim's simulated_us and of NCCL's own model, nccl_us, which times
no alltoall or sendrecv; rows inside collsim's 80% range). These logs set nothing: held out checks.

    cd <repo> && PYTHONPATH=$PWD .venv/bin/python scripts/collective_accuracy.py      # about 10 s
"""
from pathlib import Path

from collsim.fit.cluster_compare import compare_cluster
from collsim.machine import load_cluster

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ROOT / "data" / "public"
# log, cluster description, nodes, out-of-place (P11-P13 publish in-place figures only)
LOGS = (("P07", "h100-nvlink", None, True), ("P08", "h100-nvlink", None, True),
        ("P09", "a100-nvlink", None, True), ("P10", "data/public/rtx2080ti_pair_autodl.yaml", None, True),
        ("P11", "dgx-a100", 2, False), ("P12", "dgx-a100", 2, False), ("P13", "a100-nvlink", None, False))


def pct(s: dict) -> str:
    """'median / p90' of a ``collsim.fit.summary`` in percent, n/a where it has no points."""
    if not s["n"]:
        return "n/a"
    return f"{100 * s['median_abs_rel_error']:.1f}% / {100 * s['p90_abs_rel_error']:.1f}%"


def score(log: str, spec: str, nodes, out_of_place: bool) -> dict:
    """``compare_cluster``'s result for one log of LOGS."""
    path = next(PUBLIC.glob(f"{log}_*.jsonl"))
    return compare_cluster(load_cluster(str(ROOT / spec) if spec.endswith(".yaml") else spec, nodes), [path],
                           inplace=not out_of_place)


def main() -> None:
    print("| log | collective | description | rows | simulated_us median / p90 | nccl_us median / p90 | "
          "inside the 80% range |")
    print("|---|---|---|---|---|---|---|")
    for log, spec, nodes, oop in LOGS:
        r = score(log, spec, nodes, oop)
        f, inside = r["files"][0], r["inside_range"]
        where = f"`{spec}`" + (f" `--nodes {nodes}`" if nodes else "") + ("" if oop else " (in-place)")
        print(f"| {log} | {f['collective']} | {where} | {r['simulated']['n']} | {pct(r['simulated'])} | "
              f"{pct(r['nccl'])} | {inside['inside']} of {inside['n']} |")


if __name__ == "__main__":
    main()
