"""runners/allreduce_bench.py with the NCCL backend (needs CUDA; skipped elsewhere).

On a 1-GPU machine the 2-rank test puts both ranks on GPU 0 as two emulated
nodes (different NCCL_HOSTID values may share a GPU): real code paths,
meaningless timings.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from collsim.measure import load

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]
REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "runners" / "allreduce_bench.py"
SIZES = "8,1K,64K,1M,16M"


def torchrun(nproc, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_DEBUG", "COLLSIM_"))}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
           str(BENCH), "--sizes", SIZES, "-w", "2", "-n", "5", "--timeout", "60", *args]
    p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


@pytest.mark.parametrize("timing", ["eager", "graph"])
def test_one_rank_nccl(tmp_path, timing):
    out = tmp_path / f"{timing}.jsonl"
    torchrun(1, "--timing", timing, "--graph-calls", "4", "--out", str(out))
    m = load(out)
    assert m.size.tolist() == [8, 1024, 65536, 1 << 20, 16 << 20] and m.wrong.tolist() == [0] * 5
    assert (m.time_us > 0).all() and set(m.timing) == {timing}
    meta = m.meta
    assert meta["backend"] == "nccl" and meta["gpu"] and meta["gpu_count"] == 1 and meta["cuda"]
    assert meta["nccl_version"] and meta["nccl_version"].count(".") == 2  # from NCCL's own log line
    assert meta["env"]["NCCL_NVLS_ENABLE"] == "0"


def test_probe_and_two_emulated_nodes(tmp_path):
    out = tmp_path / "emu.jsonl"
    torchrun(2, "--emulate-nodes", "2", "--algo", "Ring", "--out", str(out))
    m = load(out)
    assert m.wrong.tolist() == [0] * 5 and set(m.algo) == {"Ring"}
    meta = m.meta
    assert meta["nodes"] == 2 and meta["nodes_nccl"] == 2 and meta["ranks_per_node"] == 1
    probe = meta["nccl_probe"]
    assert probe["version"] == meta["nccl_version"] and probe["n_nodes"] == 2
    assert {c["nnodes"] for r in probe["per_rank"] for c in r["comms"]} == {2}
    assert probe["coll_channels"] >= 1 and probe["rings"] and probe["tuning"]["AllReduce"]["Ring"]
    lat, bw = probe["tuning"]["AllReduce"]["Ring"]["Simple"]
    assert lat > 0 and bw > 0
    chosen = {c["bytes"]: c["algo"] for c in probe["choices"] if c["func"] == "AllReduce"}
    assert set(chosen) >= {8, 1024, 65536, 1 << 20, 16 << 20} and set(chosen.values()) == {"Ring"}
    assert meta["env"]["NCCL_HOSTID"] == "collsim-node0"


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs (one rank each)")
def test_ranks_start_their_clocks_together(tmp_path):
    """The gated start (module docstring of the runner): each rank's average covers the same
    calls, so the ranks agree to well under a percent even at 8 B, where a host barrier alone
    left the first rank's average up to 20-40% above the other's (data/h200x2/run6/start/)."""
    out = tmp_path / "align.jsonl"
    torchrun(2, "--timing", "graph", "--graph-calls", "20", "-n", "100", "--algo", "Tree", "--proto", "LL",
             "--out", str(out))
    rows = [r for r in map(json.loads, out.read_text().splitlines()) if r["type"] == "result"]
    spread = [(r["time_us"] - r["time_us_min"]) / r["time_us_min"] for r in rows]
    assert len(rows) == 5 and max(spread) < 0.01, spread
