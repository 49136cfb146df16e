"""runners/allreduce_bench.py --coll NAME with the NCCL backend (needs CUDA; skipped elsewhere):
every collective, out of place and in place, eager and inside CUDA graphs, checked exactly.

On a 1-GPU machine the 2-rank test puts both ranks on GPU 0 as two emulated nodes (different
NCCL_HOSTID values may share a GPU): real code paths through NCCL's socket transport,
meaningless timings; on 2 GPUs pass COLLSIM_GPU_RANKS=2 for one rank per GPU.
"""
import os

import pytest

from collsim.core.collective import COLLECTIVES, get
from collsim.measure import load
from tests.runners.test_allreduce_bench_gpu import torchrun

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]
UNCHECKED = ("alltoall", "sendrecv")   # in place: timed, not checked (nccl-tests does the same)


def wrong_of(m):
    return [(r["inplace"], r["wrong"]) for r in m.records]


@pytest.mark.parametrize("coll", [c for c in COLLECTIVES if c != "sendrecv"])   # sendrecv needs 2 ranks
def test_one_rank_every_collective_graph(tmp_path, coll):
    out = tmp_path / f"{coll}.jsonl"
    torchrun(1, "--coll", coll, "--place", "both", "--timing", "graph", "--graph-calls", "4", "--out", str(out))
    m = load(out)
    assert m.meta["collective"] == coll and m.meta["backend"] == "nccl" and len(m) == 10
    assert wrong_of(m) == [(p, None if p and coll in UNCHECKED else 0) for _ in range(5) for p in (False, True)]
    assert (m.time_us > 0).all() and set(m.timing) == {"graph"}


@pytest.mark.parametrize("coll", list(COLLECTIVES))
def test_two_ranks_every_collective(tmp_path, coll):
    out = tmp_path / f"{coll}.jsonl"
    two_gpus = torch.cuda.device_count() >= 2 and os.environ.get("COLLSIM_GPU_RANKS") == "2"
    emulate = [] if two_gpus else ["--emulate-nodes", "2"]
    torchrun(2, "--coll", coll, "--place", "both", "--timing", "graph", "--graph-calls", "2", *emulate,
             "--out", str(out))
    m = load(out)
    assert m.meta["collective"] == coll and m.meta["world_size"] == 2
    sizes = sorted(set(m.size.tolist()))
    assert len(m) == 2 * len(sizes) and len(sizes) >= 4
    assert wrong_of(m) == [(p, None if p and coll in UNCHECKED else 0) for _ in sizes for p in (False, True)]
    factor = get(coll).busbw_factor(2)
    assert m.busbw_GBps.tolist() == pytest.approx([a * factor for a in m.algbw_GBps])
    if emulate:   # the probe's log: NCCL ran this collective (its func name) on 2 nodes
        probe = m.meta["nccl_probe"]
        assert probe["n_nodes"] == 2
        if get(coll).algorithms:   # the p2p operations are outside NCCL's cost table
            assert {c["func"] for c in probe["choices"]} >= {get(coll).nccl_name}
