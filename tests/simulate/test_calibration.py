"""The simulation against real machines: the calibration logs L01/L15 through the schedule NCCL runs, all NICs
busy, NVLS, and where NCCL's Tree stands against its Ring (figures in docs/accuracy.md)."""
import json
from pathlib import Path

import numpy as np
import pytest

from collsim.algorithms import build_schedule
from collsim.machine import load_cluster, to_topology
from collsim.predict import nccl_context, simulate_nccl
from collsim.simulate import simulate
from collsim.sweep import sweep

LOGS = Path(__file__).resolve().parents[2] / "data" / "public"


def measured(name: str):
    path = next(LOGS.glob(f"{name}_*.jsonl"))
    rows = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return np.array([r["size"] for r in rows]), np.array([r["busbw_GBps"] for r in rows])


def simulated_busbw(cluster, algo, sizes, env=None):
    ctx = nccl_context(cluster, algo, env=env)
    times = [simulate_nccl(ctx, d.algo, d.proto, int(s), d.channels).time_s
             for s, d in zip(sizes, ctx.decisions(sizes))]
    return sizes / np.array(times) / 1e9 * 2 * (cluster.ranks - 1) / cluster.ranks


@pytest.mark.parametrize("log, spec, nodes, env", [
    ("L01", "h100-nvlink", 1, {}),                          # NCCL's 24 coll channels on 1 x 8 H100
    ("L15", "h100-nvlink", 2, {"NCCL_MIN_CTAS": "24"}),     # as the log ran
    ("L15", "ib-400g", 2, {"NCCL_MIN_CTAS": "24"}),
])
def test_nccls_ring_simulated_matches_the_calibration_logs(log, spec, nodes, env):
    """The kernel alone (no harness) from 2 MiB, where nccl-tests' launch floor (35 us with -g 8) no longer hides it:
    within 5% from 256 MiB, within 25% from 2 MiB. On L15 the simulation is up to 19% fast at 16-128 MiB, where
    the measured busbw climbs slowly to the network's (docs/accuracy.md: what is not modelled there)."""
    size, busbw = measured(log)
    keep = size >= 2 << 20
    size, busbw = size[keep], busbw[keep]
    ratio = simulated_busbw(load_cluster(spec, nodes), "Ring", size, env) / busbw
    assert np.all(np.abs(ratio[size >= 256 << 20] - 1) <= 0.05), ratio
    assert np.all(np.abs(ratio - 1) <= 0.25), ratio


def test_all_eight_nics_carry_the_ring_on_2_x_8():
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
    sim = simulated_busbw(load_cluster("h100-nvlink"), "NVLS", np.array([1 << 30, 8 << 30]))
    assert np.all((440 <= sim) & (sim <= 500)), sim


def test_nccls_tree_is_below_its_ring_on_one_node_and_far_below_on_4_nodes():
    """NCCL's own model and held-out public runs put Tree under Ring on one 8-GPU node (each chain GPU sends
    up and down through one thread block) and, with one NIC per GPU, far under it on 4 nodes or more (an
    inner node forwards twice what a ring moves over its NICs)."""
    big = np.array([1 << 30])
    one = [simulated_busbw(load_cluster("h100-nvlink"), a, big)[0] for a in ("Ring", "Tree")]
    four = [simulated_busbw(load_cluster("ib-400g", 4), a, big)[0] for a in ("Ring", "Tree")]
    assert 0.7 * one[0] < one[1] < 0.95 * one[0], one
    assert four[1] < 0.75 * four[0], four
