import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from collsim.errors import CollsimError
from collsim.strategies.overlap import BF16, MIB, Layer, assign_buckets, simulate, sweep_bucket_caps, table_cost


def layers_of(times, nbytes):
    return [Layer(f"L{i}", t, (b,)) for i, (t, b) in enumerate(zip(times, nbytes))]


def test_one_bucket_is_no_overlap():
    layers = layers_of([1.0, 2.0, 3.0], [MIB, 2 * MIB, MIB])
    cost = lambda b: 0.1 + b / MIB   # noqa: E731 - 1 s per MiB plus 0.1 s
    r = simulate(layers, cost, bucket_cap_mb=100, forward_s=0.5, optimizer_s=0.25)
    assert len(r.buckets) == 1 and r.buckets[0].nbytes == 4 * MIB
    expected = 0.5 + 6.0 + 4.1 + 0.25
    assert r.iteration_s == pytest.approx(expected)
    assert r.no_overlap_s == pytest.approx(expected)
    assert r.one_stream_s == pytest.approx(expected)
    assert r.exposed_comm_s == pytest.approx(4.1)


def test_bucket_timeline_by_hand():
    # 3 layers of 1 s and 1 MiB each, one bucket per layer, 2 s per AllReduce.
    layers = layers_of([1.0, 1.0, 1.0], [MIB] * 3)
    r = simulate(layers, lambda b: 2.0, bucket_cap_mb=1)
    assert [b.tensors for b in r.buckets] == [((2, 0),), ((1, 0),), ((0, 0),)]
    comm = [(e.start_s, e.end_s) for e in r.events if e.stream == "comm"]
    assert comm == [(1.0, 3.0), (3.0, 5.0), (5.0, 7.0)]
    back = [(e.label, e.start_s) for e in r.events if e.kind == "backward"]
    assert back == [("L2", 0.0), ("L1", 1.0), ("L0", 2.0)]
    assert r.iteration_s == 7.0 and r.exposed_comm_s == 4.0
    assert r.one_stream_s == 9.0 and r.no_overlap_s == 5.0
    # Fast communication hides everything but the last bucket.
    fast = simulate(layers, lambda b: 0.5, bucket_cap_mb=1)
    assert fast.iteration_s == 3.5 and fast.exposed_comm_s == 0.5
    assert fast.speedup_vs_one_stream == pytest.approx(4.5 / 3.5)


def test_lecture_one_stream_is_the_sum():
    layers = layers_of([0.3, 0.2, 0.1, 0.4], [3 * MIB, MIB, 2 * MIB, MIB])
    cost = lambda b: 1e-3 + b * 1e-7   # noqa: E731
    r = simulate(layers, cost, bucket_cap_mb=2, forward_s=0.1, optimizer_s=0.05)
    total = 0.1 + 1.0 + 0.05 + sum(cost(b.nbytes) for b in r.buckets)
    assert r.one_stream_s == pytest.approx(total)


def test_compression_halves_bytes_and_adds_casts():
    layers = layers_of([1.0, 1.0], [4 * MIB, 4 * MIB])
    cost = lambda b: b / MIB   # noqa: E731 - 1 s per MiB
    plain = simulate(layers, cost, bucket_cap_mb=4)
    half = simulate(layers, cost, bucket_cap_mb=4, hook=BF16)
    wire = lambda r: [e.nbytes for e in r.events if e.kind == "allreduce"]  # noqa: E731
    assert wire(plain) == [4 * MIB, 4 * MIB] and wire(half) == [2 * MIB, 2 * MIB]
    assert plain.iteration_s == 1 + 4 + 4 and half.iteration_s == 1 + 2 + 2
    cast = 0.125 / MIB     # 0.5 s per 4 MiB cast
    r = simulate(layers, cost, bucket_cap_mb=4, hook=BF16.with_cast(cast))
    # compute: L1 1, cast 0.5, L0 1, cast 0.5 -> comm b0 [1.5, 3.5]+0.5, b1 [4.0, 6.0]+0.5
    assert r.iteration_s == pytest.approx(6.5)
    assert r.no_overlap_s == pytest.approx(2 + 2 * 0.125 * 8 + 4)


def test_default_cap_has_small_first_bucket_explicit_cap_does_not():
    layers = layers_of([1.0] * 6, [MIB // 2] * 6)
    assert [b.nbytes for b in assign_buckets(layers)] == [MIB, 2 * MIB]
    assert [b.nbytes for b in assign_buckets(layers, bucket_cap_mb=25)] == [3 * MIB]
    assert [b.nbytes for b in assign_buckets(layers, 2, first_bucket_bytes=MIB // 2)] == [MIB // 2, 2 * MIB, MIB // 2]


def test_buckets_match_torch_reducer():
    torch = pytest.importorskip("torch")
    import torch.distributed as dist
    if not hasattr(dist, "_compute_bucket_assignment_by_size"):
        pytest.skip("this torch has no _compute_bucket_assignment_by_size")
    rng = np.random.default_rng(0)
    shapes = [tuple(int(x) for x in rng.integers(1, 300, size=2)) for _ in range(30)]
    params = [torch.empty(s) for s in shapes]          # one layer per parameter pair below
    layers = [Layer(f"L{i}", 1.0, (4 * params[2 * i].numel(), 4 * params[2 * i + 1].numel()))
              for i in range(15)]
    for cap_mb, first in [(0.25, None), (0.1, 50_000), (1.0, None)]:
        cap = int(cap_mb * MIB)
        first_b = cap if first is None else first
        ready = list(range(len(params)))[::-1]
        got, _ = dist._compute_bucket_assignment_by_size([params[i] for i in ready], [first_b, cap],
                                                         [False] * len(params), ready)
        ours = [[2 * li + pi for li, pi in b.tensors] for b in assign_buckets(layers, cap_mb, first)]
        assert ours == [list(g) for g in got]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e-2), st.integers(1, 8 * MIB)), min_size=1, max_size=12),
       st.floats(0, 1e-3), st.floats(0, 1e-8), st.floats(0.01, 10))
def test_overlap_never_slower_than_one_stream(spec, alpha, beta, cap):
    layers = [Layer(f"L{i}", t, (b,)) for i, (t, b) in enumerate(spec)]
    r = simulate(layers, lambda b: alpha + beta * b, cap, hook=BF16.with_cast(1e-10))
    assert r.speedup_vs_one_stream >= 1 - 1e-12
    assert r.iteration_s >= r.compute_s - 1e-12 and r.iteration_s >= r.comm_s - 1e-12
    for stream in ("compute", "comm"):   # each stream runs one thing at a time, in order
        ev = [e for e in r.events if e.stream == stream]
        assert all(a.end_s <= b.start_s + 1e-12 for a, b in zip(ev, ev[1:]))
    assert sum(b.nbytes for b in r.buckets) == sum(b for _, b in spec)


def test_many_small_buckets_can_lose_to_one_fused_call():
    layers = layers_of([1e-4] * 20, [MIB] * 20)
    cost = lambda b: 1e-3 + b * 1e-10   # noqa: E731 - latency-bound
    r = simulate(layers, cost, bucket_cap_mb=1)
    assert r.speedup_vs_no_overlap < 1
    assert simulate(layers, cost, bucket_cap_mb=100).speedup_vs_no_overlap == pytest.approx(1)


def test_sweep_and_table_cost():
    cost = table_cost([1000, 2000, 4000], [1.0, 2.0, 3.0])
    assert cost(500) == 1.0 and cost(1500) == 1.5 and cost(3000) == 2.5
    assert cost(6000) == pytest.approx(4.0)   # last slope extended
    layers = layers_of([1.0, 1.0], [MIB, MIB])
    times = sweep_bucket_caps(layers, lambda b: b / MIB, [1, 100])
    assert list(times) == [3.0, 4.0]


@pytest.mark.parametrize("call, message", [
    (lambda: simulate([], lambda b: 0.0), "at least one layer"),
    (lambda: simulate(layers_of([-1.0], [4]), lambda b: 0.0), "backward time"),
    (lambda: simulate(layers_of([1.0], [0]), lambda b: 0.0), "positive whole bytes"),
    (lambda: simulate(layers_of([1.0], [4]), lambda b: 0.0, bucket_cap_mb=0), "bucket_cap_mb"),
    (lambda: simulate(layers_of([1.0], [4]), lambda b: math.nan), "cost function"),
    (lambda: table_cost([1], [1.0]), "two distinct sizes"),
])
def test_bad_input_is_one_clear_error(call, message):
    with pytest.raises(CollsimError, match=message):
        call()
