"""`collsim compare --cluster` predicts each measured file as the collective it ran (its meta's
``collective``), and the public logs of the other collectives (data/public P07-P13, held out) score as
docs/accuracy.md's "Other collectives" table says."""
import json
from pathlib import Path

import pytest

from collsim.cli import main
from collsim.fit.cluster_compare import compare_cluster
from collsim.machine import load_cluster
from collsim.machine.cluster import Cluster
from collsim.predict import predict_nccl

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = ROOT / "data" / "public"
# SYNTHETIC: nccl-tests 2.19.6's text format (src/util.cu) for 2 ranks; the numbers are made up
ALL_GATHER = """# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809
# Collective test starting: all_gather_perf
# nThread 1 nGpus 1 minBytes 1024 maxBytes 1048576 step: 1024(factor) warmup iters: 5 iters: 20 agg iters: 1 \
validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1000 on    h200box device  0 [0000:1b:00] NVIDIA H200
#  Rank  1 Group  0 Pid   1001 on    h200box device  1 [0000:1c:00] NVIDIA H200
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
        1024           128     float    none      -1    11.02    0.09    0.05       0    10.95    0.09    0.05       0
     1048576        131072     float    none      -1    22.40   46.81   23.41       0    22.10   47.45   23.72       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 11.7
#
# Collective test concluded: all_gather_perf
"""


def test_a_log_is_predicted_as_the_collective_it_ran(tmp_path, capsys):
    log = tmp_path / "ag.log"
    log.write_text(ALL_GATHER)
    cluster = Cluster("H200", 2, intra="nvswitch", nvls=False)
    f = compare_cluster(cluster, [log], "default")["files"][0]
    sizes = [1024, 1 << 20]
    gather, reduce = ([r["time_us"] for r in predict_nccl(cluster, sizes, gpus_per_process=1, coll=c)["rows"]]
                      for c in ("all_gather", "all_reduce"))
    assert f["collective"] == "all_gather" and [r["simulated_us"] for r in f["rows"]] == gather != reduce
    assert main(["compare", "--cluster", "h200-nvlink", "--measured", str(PUBLIC / "P12_a100x16_2n_alltoall_ndmv4_ib"
                 ".jsonl")]) == 2                       # 16 ranks on one node of 8: refused as for AllReduce
    assert "ran 16 ranks, the cluster has 8" in capsys.readouterr().err


def test_nccl_model_times_no_alltoall(capsys):
    """NCCL runs alltoall and sendrecv outside its cost table: no nccl_us, its summaries count nothing."""
    path = PUBLIC / "P13_a100x8_1n_alltoall_ndmv4_nvswitch.jsonl"
    assert main(["compare", "--cluster", "a100-nvlink", "--measured", str(path), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["files"][0]["collective"] == "alltoall" and d["nccl"]["n"] == 0
    assert {r["nccl_us"] for r in d["files"][0]["rows"]} == {None} and d["simulated"]["n"] == 2
    assert main(["compare", "--cluster", "a100-nvlink", "--measured", str(path)]) == 0
    out = capsys.readouterr().out
    assert ": alltoall (nccl-tests, graph, 1 GPU(s) per process)" in out and "n/a /    n/a" in out


@pytest.mark.parametrize("log, spec, nodes, inplace, median", [
    ("P07_h100x8_1n_all_gather_nvswitch", "h100-nvlink", None, False, 0.035),   # docs/accuracy.md
    ("P12_a100x16_2n_alltoall_ndmv4_ib", "dgx-a100", 2, True, 0.176),
    ("P09_a100x8_1n_sendrecv_nvswitch", "a100-nvlink", None, False, 0.097),
])
def test_public_logs_of_other_collectives_score_as_documented(log, spec, nodes, inplace, median):
    """Held out logs (they set nothing); the simulation is deterministic, 1 point of tolerance."""
    res = compare_cluster(load_cluster(spec, nodes), [PUBLIC / f"{log}.jsonl"], inplace=inplace)
    assert res["simulated"]["median_abs_rel_error"] == pytest.approx(median, abs=0.01)
