"""The simulator against real machines: the calibration logs L01/L15, all NICs busy, NVLS, the ring/tree
crossover against NCCL's own model (figures in the README, "Calibration")."""
import json
from pathlib import Path

import numpy as np
import pytest

from collsim.machine import load_cluster, to_topology
from collsim.nccl.tuning import Hardware, algo_time_us, tuning_table
from collsim.simulate import simulate
from collsim.sweep import sizes, sweep
from collsim.viz.curves import crossovers

LOGS = Path(__file__).resolve().parents[2] / "data" / "public"


def measured(name: str):
    path = next(LOGS.glob(f"{name}_*.jsonl"))
    rows = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return np.array([r["size"] for r in rows]), np.array([r["busbw_GBps"] for r in rows])


@pytest.mark.parametrize("log, spec, nodes, channels", [
    ("L01", "h100-nvlink", 1, 24),          # NCCL's 24 coll channels on 1 x 8 H100
    ("L15", "h100-nvlink", 2, 24),          # NCCL_MIN_CTAS=24
    ("L15", "ib-400g", 2, 24),
])
def test_ring_matches_the_calibration_logs(log, spec, nodes, channels):
    size, busbw = measured(log)
    keep = size >= 1 << 20
    size, busbw = size[keep], busbw[keep]
    topo = to_topology(load_cluster(spec, nodes))
    table = sweep(["ring"], topo.ranks, size, method="simulate", topology=topo, channels=channels)
    ratio = table["busbw_GBps"] / busbw
    assert np.all(np.abs(ratio[size >= 64 << 20] - 1) <= 0.10), ratio
    assert np.all(np.abs(ratio - 1) <= 0.25), ratio


def test_all_eight_nics_carry_the_ring_on_2_x_8():
    from collsim.algorithms import build_schedule
    topo = to_topology(load_cluster("h100-nvlink", 2))
    r = simulate(build_schedule("ring", 16, (1 << 30) // 4, gpus_per_node=8, channels=16), topo)
    busy = {x["name"]: x["busy"] for x in r.resource_table()}
    nics = [busy[f"node{n}.nic{k}.{way}"] for n in range(2) for k in range(8) for way in ("out", "in")]
    assert len(nics) == 32 and min(nics) > 0.85


def test_nvls_reaches_the_480_class_on_one_h100_node():
    # sjeaugey, NVIDIA/nccl-tests#212: ~480 GB/s busbw with NVLS on 8 x H100 (ring: ~370)
    topo = to_topology(load_cluster("h100-nvlink"))
    table = sweep(["nvls", "ring"], 8, [1 << 30, 8 << 30], method="simulate", topology=topo, channels=16)
    nvls, ring = table["busbw_GBps"][:2], table["busbw_GBps"][2:]
    assert 460 <= nvls[0] <= 500 and 470 <= nvls[1] <= 500 and (ring < 370).all()


def test_ring_tree_crossover_at_64_ranks_matches_nccls_model():
    """8 x 8 H100, 8 x 400G, 16 channels: where the ring overtakes NCCL's tree, simulated and in NCCL's
    own model (with the TREE-pattern penalty NCCL applies there, tuning.cc:309)."""
    sz = sizes(1 << 16, 1 << 30, 2)
    topo = to_topology(load_cluster("ib-400g", 8))
    table = sweep(["ring", "nccl-tree"], 64, sz, method="simulate", topology=topo, channels=16)
    sim = crossovers(sz.astype(float), {a: table["time_s"][table["algo"] == a] for a in ("ring", "nccl-tree")})
    t = tuning_table(Hardware(n_ranks=64, n_nodes=8, channels=8, bw_intra=48, bw_inter=48, tree_pattern_tree=True))
    best = {a: np.min([algo_time_us(t, a, p, sz.astype(float)) for p in ("LL", "LL128", "Simple")], axis=0)
            for a in ("Ring", "Tree")}
    nccl = crossovers(sz.astype(float), best)
    assert len(sim) == 1 and sim[0].faster_above == "ring" and len(nccl) == 1 and nccl[0].faster_above == "Ring"
    assert 0.5 <= sim[0].size / nccl[0].size <= 2.0, (sim[0].size, nccl[0].size)
