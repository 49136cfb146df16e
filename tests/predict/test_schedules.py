"""collsim.predict.schedules: the schedule NCCL runs, with NCCL's pipeline."""
import numpy as np

from collsim.core.checker import check
from collsim.machine import load_cluster
from collsim.predict.schedules import collnet_chunk, nccl_run, ring_pipeline, tree_chunks


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


def test_collnet_runs_every_channel_in_nccls_chunks():
    # calcCollChunking (enqueue.cc:2030-2041@v2.28.9): Direct starts at a 512 KiB slot and halves while a loop of
    # 16 channels x 8 heads leaves fewer than depth 2 x 64 of them, not below 128 KiB; Chain starts at 256 KiB
    # against depth 8 (the GPUs of a node)
    assert collnet_chunk("CollNetDirect", 1 << 30, 16, 8, 2, 4 << 20) == 128 << 10
    assert collnet_chunk("CollNetDirect", 64 << 30, 16, 8, 2, 4 << 20) == 512 << 10
    assert collnet_chunk("CollNetDirect", 1 << 20, 1, 8, 2, 4 << 20) == 32 << 10
    assert collnet_chunk("CollNetChain", 8 << 30, 16, 1, 8, 4 << 20) == 256 << 10
    assert collnet_chunk("CollNetChain", 1 << 30, 16, 1, 8, 4 << 20) == 128 << 10
    c = load_cluster("h100-sharp", 2)
    for algo, name in (("CollNetDirect", "collnet-direct"), ("CollNetChain", "collnet-chain"), ("NVLS", "nvls-sharp")):
        run = nccl_run(c, algo, "Simple", 3 << 20, 3, 4 << 20)
        assert check(run.schedule).ok and run.schedule.name == name and run.schedule.network == 1
        assert run.channels == 3 and run.window == 8                    # no split in 16 KiB cells; a slot a chunk
    direct = nccl_run(load_cluster("h100-sharp", 4), "CollNetDirect", "Simple", 1 << 30, 16, 4 << 20)
    assert direct.pipeline == 64 and direct.schedule.meta["heads"] == 8    # 1 GiB / (16 x 8 x 128 KiB)

