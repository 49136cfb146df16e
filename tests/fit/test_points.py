"""collsim.fit.points: which time a runner record contributes (minimum over ranks, collsim.fit.points)."""
import json
from pathlib import Path

import pytest

from collsim.errors import CollsimError
from collsim.fit.points import buffer_reuse, clock_key, harness_key, load_points, timed_calls
from collsim.measure import result_record


def _write(path, records):
    meta = {"type": "meta", "harness": "collsim", "world_size": 2, "nodes": 1, "timing": "graph", "env": {}}
    path.write_text("\n".join(json.dumps(r) for r in [meta, *records]) + "\n")


def test_time_is_min_over_ranks_then_mean_then_max(tmp_path):
    f = tmp_path / "run.jsonl"
    _write(f, [result_record(8, 2, "float32", 13.4, 2, 0, algo="Ring", proto="LL", inplace=True,
                             time_us_min=10.9, time_us_mean=12.2),
               result_record(16, 4, "float32", 11.0, 2, 0, algo="Ring", proto="LL", inplace=True, time_us_mean=10.8),
               result_record(32, 8, "float32", 10.7, 2, 0, algo="Ring", proto="LL", inplace=True)])
    assert [p.time_us for p in load_points([f])] == pytest.approx([10.9, 10.8, 10.7])


@pytest.mark.parametrize("meta,timing,key", [
    ({"harness": "collsim", "env": {}}, "graph", "torch-graph-mixing"),
    ({"harness": "collsim", "env": {"NCCL_GRAPH_MIXING_SUPPORT": "0"}}, "graph", "bare"),
    ({"harness": "collsim", "env": {}}, "eager", "bare"),
    ({"harness": "nccl-tests", "gpus_per_process": 2, "world_size": 2}, "graph", "nccl-tests-graph"),
    ({"harness": "nccl-tests", "gpus_per_process": 1, "world_size": 2}, "graph", "nccl-tests-graph-mpi"),
    ({"harness": "nccl-tests", "gpus_per_process": 1, "world_size": 2,
      "env": {"NCCL_GRAPH_MIXING_SUPPORT": "0"}}, "graph", "nccl-tests-graph-mix0-mpi"),
    ({"harness": "nccl-tests", "gpus_per_process": 1, "world_size": 1}, "graph", "nccl-tests-graph"),
    ({"harness": "nccl-tests", "gpus_per_process": 2, "world_size": 2,
      "env": {"NCCL_GRAPH_MIXING_SUPPORT": "0"}}, "graph", "nccl-tests-graph-mix0"),
    ({"harness": "nccl-tests", "gpus_per_process": 1, "world_size": 2}, "eager", "nccl-tests-eager"),
])
def test_harness_key(meta, timing, key):
    assert harness_key(meta, timing) == key


@pytest.mark.parametrize("meta,timing,expect", [
    ({"harness": "nccl-tests", "iters": 20, "max_bytes": 1 << 32}, "graph", (20, 1 << 32)),
    ({"harness": "collsim"}, "graph", (1, 1 << 20)),
    ({"harness": "collsim", "rotate": True, "graph_calls": 20, "iters": 100}, "graph", (20, 1 << 20)),
    ({"harness": "collsim", "rotate": True, "graph_calls": None, "warmup": 5, "iters": 100}, "eager", (100, 1 << 20)),
])
def test_buffer_reuse_of_each_harness(meta, timing, expect):
    assert buffer_reuse(meta, timing, 1 << 20) == expect


@pytest.mark.parametrize("meta,timing,clock,calls", [
    ({"harness": "collsim", "clock_start": "gated", "graph_calls": 20, "iters": 100}, "graph", "runner-gated", 100),
    ({"harness": "collsim", "graph_calls": 20, "iters": 30}, "graph", "runner-barrier", 40),  # 2 replays of 20
    ({"harness": "collsim", "clock_start": "gated", "graph_calls": None, "iters": 50}, "eager", "runner-gated", 50),
    ({"harness": "nccl-tests", "gpus_per_process": 1, "world_size": 2, "iters": 20, "graph": 20}, "graph",
     "nccl-tests-mpi", 400),
    ({"harness": "nccl-tests", "gpus_per_process": 2, "world_size": 2, "iters": 20, "graph": 0}, "eager",
     "nccl-tests", 20),
    ({"harness": "collsim"}, "graph", "runner-barrier", 0),  # -n unknown: no clock term
])
def test_clock_and_calls_of_each_harness(meta, timing, clock, calls):
    assert (clock_key(meta), timed_calls(meta, timing)) == (clock, calls)


def test_a_log_of_another_collective_is_refused_in_one_line():
    """The fitted model is AllReduce's: an all_gather log (data/public P07) is not fitted as one."""
    p07 = Path(__file__).resolve().parents[2] / "data" / "public" / "P07_h100x8_1n_all_gather_nvswitch.jsonl"
    with pytest.raises(CollsimError, match="a log of all_gather, and the fitted model is AllReduce's"):
        load_points([p07])
