"""collsim.predict.schedules: the schedule NCCL runs, with NCCL's pipeline."""
import numpy as np

from collsim.core.checker import check
from collsim.machine import load_cluster
from collsim.predict.schedules import nccl_run


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
    # the chunks themselves: tests/nccl/test_plan.py
    c = load_cluster("h100-sharp", 2)
    for algo, name in (("CollNetDirect", "collnet-direct"), ("CollNetChain", "collnet-chain"), ("NVLS", "nvls-sharp")):
        run = nccl_run(c, algo, "Simple", 3 << 20, 3, 4 << 20)
        assert check(run.schedule).ok and run.schedule.name == name and run.schedule.network == 1
        assert run.channels == 3 and run.window == 8                    # no split in 16 KiB cells; a slot a chunk
    direct = nccl_run(load_cluster("h100-sharp", 4), "CollNetDirect", "Simple", 1 << 30, 16, 4 << 20)
    assert direct.pipeline == 64 and direct.schedule.meta["heads"] == 8    # 1 GiB / (16 x 8 x 128 KiB)

