"""Issue 8 on 2 GPUs: NCCL's layout for 2 emulated nodes x 2 ranks (data/h200x2/runner/
emu2x2_layout.jsonl, NCCL 2.28.9, NCCL_HOSTID per pair, ranks time-slicing 2 H200s) against
collsim's ``nccl-tree`` schedule for 2 nodes x 2 GPUs: same intra-node chain neighbours,
same inter-node tree edge, one tree rooted on each node, and both correct."""
import json
from pathlib import Path

from collsim.algorithms import build_schedule
from collsim.core.checker import check

FILE = Path(__file__).resolve().parents[2] / "data" / "h200x2" / "runner" / "emu2x2_layout.jsonl"
GPN = 2


def nccl_trees():
    lines = [json.loads(x) for x in FILE.read_text().splitlines() if x.strip()]
    meta, results = lines[0], [r for r in lines[1:] if r.get("type") == "result"]
    return meta["nccl_probe"], results


def test_nccl_reports_two_nodes_and_correct_results():
    probe, results = nccl_trees()
    assert probe["n_nodes"] == 2 and all(c["nnodes"] == 2 for c in probe["comms"])
    assert len(results) == 9 and all(r["wrong"] == 0 and r["ranks"] == 4 for r in results)


def test_hierarchical_nccl_matches_nccl_trees():
    probe, _ = nccl_trees()
    channels: dict = {}
    up = {(t["channel"], t["rank"]): t["up"] for r in probe["per_rank"] for t in r["trees"]}
    for r in probe["per_rank"]:
        for t in r["trees"]:
            ch = channels.setdefault(t["channel"], {"edges": set(), "root": None})
            if t["up"] == -1:
                ch["root"] = t["rank"]
            else:
                ch["edges"].add(frozenset((t["rank"], t["up"])))
            # each child a rank lists names that rank as its parent
            assert all(up[(t["channel"], d)] == t["rank"] for d in t["down"] if d != -1)
    assert sorted(channels) == [0, 1]
    nccl_edges = channels[0]["edges"] | channels[1]["edges"]
    assert channels[0]["edges"] == channels[1]["edges"]  # same edges, opposite roots
    assert {channels[0]["root"] // GPN, channels[1]["root"] // GPN} == {0, 1}

    sched = build_schedule("nccl-tree", 4, 1024, gpus_per_node=GPN)
    ours = {frozenset((s, d)) for s, d in zip(sched.src.tolist(), sched.dst.tolist())}
    intra = {e for e in ours if len({r // GPN for r in e}) == 1}
    inter = ours - intra
    assert intra == {frozenset((0, 1)), frozenset((2, 3))}  # chain neighbours in each node
    assert ours == nccl_edges
    assert inter == {e for e in nccl_edges if len({r // GPN for r in e}) == 2}
    # collsim's inter-node step reduces in both directions: one tree rooted on each node
    pairs = set(zip(sched.src.tolist(), sched.dst.tolist()))
    assert all((a, b) in pairs and (b, a) in pairs for a, b in (tuple(e) for e in inter))
    assert check(sched).ok
