"""runners/schedule_bench.py with the NCCL backend (needs CUDA; skipped elsewhere).

Run: ``python -m pytest -m gpu tests/runners/test_schedule_bench_gpu.py``. Two ranks share GPU 0 as two
emulated nodes (--emulate-nodes 2: a different NCCL_HOSTID per rank, sockets over lo), so every
message of the schedule goes through NCCL's network path: real code paths, meaningless timings.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from collsim.measure import load

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]
REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "runners" / "schedule_bench.py"
SIZES = [8, 1024, 65536, 1 << 20, 16 << 20]
ENV = {"NCCL_SOCKET_IFNAME": "lo", "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
       "NVSHMEM_DISABLE_NVLS": "1"}


def torchrun(*args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_DEBUG", "COLLSIM_"))}
    env.update(ENV)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", str(BENCH),
           "--emulate-nodes", "2", "--algo", "ring,double-tree", "--sizes", ",".join(map(str, SIZES)), "-w", "2",
           "-n", "5",
           "--timeout", "60", *args]
    p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def check_file(out, timing):
    m = load(out)
    runs = [(r["algo"], r["size"]) for r in m.records if r["executor"] == "collsim"]
    assert sorted(runs) == sorted((f"collsim:{a}", s) for a in ("ring", "double-tree") for s in SIZES)
    assert all(r["wrong"] == 0 and r["time_us"] > 0 and r["timing"] == timing for r in m.records)
    meta = m.meta
    assert meta["backend"] == "nccl" and meta["gpu"] and meta["nodes"] == 2 and meta["nodes_nccl"] == 2
    assert meta["env"]["NCCL_HOSTID"] == "collsim-node0" and meta["env"]["NCCL_SOCKET_IFNAME"] == "lo"
    assert all(meta["env"][k] == v for k, v in ENV.items() if k.startswith("NCCL_"))
    return m


def test_ring_and_tree_on_two_emulated_nodes_beside_nccls_all_reduce(tmp_path):
    torchrun("--with-native", "--out", tmp_path / "emu.jsonl")
    m = check_file(tmp_path / "emu.jsonl", "eager")
    assert sorted(r["size"] for r in m.records if r["executor"] == "native") == SIZES


def test_ring_and_tree_captured_in_cuda_graphs(tmp_path):
    torchrun("--timing", "graph", "--graph-calls", "4", "--out", tmp_path / "graph.jsonl")
    check_file(tmp_path / "graph.jsonl", "graph")
