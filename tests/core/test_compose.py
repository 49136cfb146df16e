"""collsim.core.compose: builder, even splits, concat, wavefront and interleave (checked by executing)."""
import numpy as np
import pytest

from collsim.core.checker import check
from collsim.core.compose import ScheduleBuilder, concat, interleave, split_even, split_ranges, wavefront
from collsim.core.schedule import COPY, REDUCE, Schedule, ScheduleError, Transfer


def test_builder_drops_zero_length_and_empty_steps():
    b = ScheduleBuilder(2, 4)
    b.add_step([0, 1], [1, 0], [0, 2], [2, 0], REDUCE)
    b.add_step([0], [1], 0, 0, COPY)                       # empty: skipped
    b.add_step([0], [1], 0, 0, COPY, keep_empty=True)      # kept on request
    b.add_steps(np.array([[0, 1], [1, 0]]), np.array([[1, 0], [0, 1]]), 1, np.array([[1, 0], [0, 0]]), COPY)
    s = b.build()
    assert s.n_steps == 3 and list(s.step_ptr) == [0, 1, 1, 2]
    assert s.transfer(1) == Transfer(0, 1, 1, 1, "copy")


def test_builder_add_steps_matches_add_step():
    rng = np.random.default_rng(1)
    cols = [rng.integers(0, 3, size=(4, 5)) for _ in range(4)]
    a, b = ScheduleBuilder(3, 9), ScheduleBuilder(3, 9)
    a.add_steps(*cols, REDUCE)
    for k in range(4):
        b.add_step(*(c[k] for c in cols), REDUCE)
    sa, sb = a.build(), b.build()
    assert sa.steps == sb.steps
    with pytest.raises(ScheduleError):
        a.add_steps([1, 2], [0, 1], 0, 1, REDUCE)


def test_split_even_any_count():
    for count, parts in [(10, 3), (2, 5), (0, 4), (12, 4)]:
        off, ln = split_even(count, parts)
        assert ln.sum() == count and ln.max() - ln.min() <= 1 and len(off) == parts
        assert np.array_equal(off, np.r_[0, np.cumsum(ln)[:-1]])


def test_split_ranges_is_split_even_per_range():
    offs, lens = split_ranges(np.array([0, 10, 17]), np.array([10, 7, 0]), 3)
    for g, (o, n) in enumerate([(0, 10), (10, 7), (17, 0)]):
        eo, el = split_even(n, 3)
        assert np.array_equal(offs[g], eo + o) and np.array_equal(lens[g], el)


def test_concat_and_errors():
    s = Schedule.from_steps(3, 6, [[(0, 1, 0, 2, "reduce"), (1, 2, 2, 2, "reduce")], [Transfer(2, 0, 4, 2, "copy")]])
    c = concat([s, s])
    assert c.n_steps == 4 and c.steps[2:] == s.steps
    with pytest.raises(ScheduleError, match="differ"):
        concat([s, Schedule.from_steps(2, 6, [])])
    with pytest.raises(ScheduleError, match="at least one"):
        concat([])


def ring_on(lo, n, ranks=2, channel=0):
    """Two-rank AllReduce of elements lo..lo+n: reduce one way, copy back."""
    b = ScheduleBuilder(ranks, 8)
    b.add_step([0], [1], lo, n, REDUCE, channel=channel)
    b.add_step([1], [0], lo, n, COPY, channel=channel)
    return b.build()


def test_interleave_runs_parts_side_by_side_and_stays_correct():
    left, right = ring_on(0, 4, channel=1), ring_on(4, 4, channel=0)
    both = interleave([left, right], name="both")
    assert both.n_steps == 2 and both.name == "both"
    assert [t.channel for t in both.steps[0]] == [0, 1]             # each step in channel order
    assert check(both).ok
    assert not check(concat([left, left])).ok                       # the same half reduced twice


def test_wavefront_delays_pieces_and_keeps_the_sum():
    whole = concat([ring_on(0, 4), ring_on(4, 4)])                  # 4 steps, one piece after the other
    lag = np.repeat([0, -1], 2)                                      # second piece one step earlier
    w = wavefront(whole, lag)
    assert w.n_steps == 3 and [len(st) for st in w.steps] == [1, 2, 1]
    assert [t.offset for t in w.steps[1]] == [4, 0]                   # later old step first
    assert [t.offset for t in wavefront(whole, lag, oldest_first=False).steps[1]] == [0, 4]
    assert check(w).ok
    bad = wavefront(whole, np.array([0, -1, 0, 0]))                  # copy back before the reduce lands
    assert not check(bad).ok
