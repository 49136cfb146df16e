"""collsim.predict.schedules: the schedule NCCL runs, with NCCL's pipeline."""
import numpy as np

from collsim.core.checker import check
from collsim.machine import load_cluster
from collsim.predict.schedules import nccl_run, ring_pipeline, tree_chunks


def test_ring_loops_and_slices_follow_nccls_chunking():
    # Simple: a chunk is 4 slots of NCCL_BUFFSIZE / 8 (2 MiB), sent as 2 slices; a loop moves 8 x 2 MiB per channel
    assert ring_pipeline("Simple", 64 << 20, 8, 4 << 20) == (4, 2)
    assert ring_pipeline("LL", 64 << 20, 8, 4 << 20)[1] == 1
    assert tree_chunks("Simple", 8 << 20, 16, 2, 4 << 20) == 16          # one 512 KiB slot a chunk


def test_every_run_computes_the_sum_and_a_shortened_run_keeps_its_loop_bytes():
    c = load_cluster("ib-400g", 2)
    for algo, proto in (("Ring", "Simple"), ("Ring", "LL128"), ("Tree", "LL"), ("NVLSTree", "Simple")):
        run = nccl_run(c, algo, proto, 1 << 22, 4, 4 << 20)
        assert check(run.schedule).ok, (algo, proto)
        assert run.window >= 1 and run.threads >= 64 and run.channels <= 4
    whole = nccl_run(c, "Ring", "Simple", 1 << 30, 16, 4 << 20)
    cut = nccl_run(c, "Ring", "Simple", 1 << 30, 16, 4 << 20, pipeline=1)
    assert cut.pipeline == whole.pipeline == 2
    per_loop = lambda run, loops: run.schedule.length.sum() / loops           # noqa: E731
    assert np.isclose(per_loop(cut, 1), per_loop(whole, 2), rtol=1e-3)
