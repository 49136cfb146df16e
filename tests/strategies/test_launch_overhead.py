import pytest

from collsim.errors import CollsimError
from collsim.strategies.launch_overhead import (
    LaunchModel,
    Op,
    fit_host_s,
    graph_gain,
    graphs_matter_below,
    per_call_s,
    pipeline,
)

US = 1e-6
MODEL = LaunchModel(host_s=40 * US, graph_launch_s=5 * US, graph_node_s=1 * US)


def test_eager_loop_is_host_bound_for_small_ops_and_device_bound_for_large():
    assert per_call_s(10 * US, MODEL, 100) == pytest.approx(40 * US + 10 * US / 100)
    assert per_call_s(100 * US, MODEL, 100) == pytest.approx(100 * US + 40 * US / 100)


def test_graph_replay_by_hand():
    # 5 us launch, then 20 calls of (10 + 1) us back to back.
    assert per_call_s(10 * US, MODEL, 20, graph=True) == pytest.approx((5 + 20 * 11) / 20 * US)


def test_step_pipeline_timeline():
    ops = [Op("matmul", 30 * US, host_s=10 * US), Op("allreduce", 15 * US, host_s=50 * US),
           Op("update", 5 * US, host_s=10 * US)]
    total, spans = pipeline(ops, MODEL)
    # matmul issued at 10, runs 10-40; allreduce issued at 60, runs 60-75; update issued 70, runs 75-80.
    got = [t / US for s in spans for t in (s.device_start_s, s.device_end_s)]
    assert got == pytest.approx([10, 40, 60, 75, 75, 80])
    assert total == pytest.approx(80 * US)
    gtotal, _ = pipeline(ops, MODEL, graph=True)
    assert gtotal == pytest.approx((5 + 31 + 16 + 6) * US)


def test_where_graphs_matter():
    sizes = [8, 1 << 10, 1 << 20, 1 << 24, 1 << 28]
    cost = lambda b: 10 * US + b / 100e9   # noqa: E731 - 10 us + 100 GB/s
    gain = graph_gain(sizes, cost, MODEL)
    assert gain[0] > 3 and gain[-1] == pytest.approx(1, abs=0.01)
    assert all(a >= b - 1e-12 for a, b in zip(gain, gain[1:]))
    assert graphs_matter_below(sizes, cost, MODEL) == 1 << 20
    assert graphs_matter_below(sizes, cost, LaunchModel(host_s=0.0)) is None


def test_fit_host_s_reads_the_host_bound_sizes():
    graph = [10 * US, 11 * US, 12 * US, 100 * US]
    eager = [per_call_s(g, LaunchModel(45 * US), 1000) for g in graph]
    assert fit_host_s(eager, graph) == pytest.approx(45 * US, rel=0.01)
    with pytest.raises(CollsimError, match="launch cost is not visible"):
        fit_host_s(graph, graph)


@pytest.mark.parametrize("call, message", [
    (lambda: LaunchModel(host_s=-1.0), "host_s"),
    (lambda: pipeline([], MODEL), "at least one"),
    (lambda: per_call_s(1.0, MODEL, 0), "calls"),
    (lambda: pipeline([Op("x", float("nan"))], MODEL), "device time"),
])
def test_bad_input(call, message):
    with pytest.raises(CollsimError, match=message):
        call()
