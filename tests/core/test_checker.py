"""collsim.core.checker: proves correct schedules, catches injected faults at the right step."""
import copy

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from collsim.algorithms import ALGORITHMS, build_schedule
from collsim.algorithms.lecture import lecture_ring, lecture_tree
from collsim.core.atoms import atoms_of, run_steps
from collsim.core.checker import check, contribution_states
from collsim.core.schedule import Schedule
from collsim.errors import CollsimError


def faulty(s: Schedule, step: int, pos: int, how: str, other: int = 0) -> Schedule:
    d = s.to_dict()
    t = d["steps"][step][pos]
    if how == "drop":
        del d["steps"][step][pos]
    elif how == "duplicate":
        d["steps"][step].append(copy.deepcopy(t))
    elif how == "retarget":
        t["dst"] = other
    elif how == "swap":
        t["op"] = "copy" if t["op"] == "reduce" else "reduce"
    return Schedule.from_dict(d)


def oracle_ok(s: Schedule) -> bool:
    """Brute force: execute on random per-element data, compare with the sum."""
    x = np.random.default_rng(7).integers(-10**6, 10**6, size=(s.ranks, s.count))
    buf = np.r_[x, np.zeros((s.endpoints - s.ranks, s.count), x.dtype)]   # switch endpoints start empty
    for step in s.steps:
        reads = [buf[t.src, t.offset:t.offset + t.count].copy() for t in step]
        written = np.zeros(buf.shape, int)
        for t, data in zip(step, reads):
            if t.op == "copy":
                buf[t.dst, t.offset:t.offset + t.count] = data
            else:
                buf[t.dst, t.offset:t.offset + t.count] += data
            written[t.dst, t.offset:t.offset + t.count] += 1 + 100 * (t.op == "copy")
        if (written > 101).any():
            return False                   # a copy and another write to one element: undefined
    return bool((buf[:s.ranks] == x.sum(axis=0)).all())


@st.composite
def fault(draw):
    name = draw(st.sampled_from(list(ALGORITHMS)))
    p = draw(st.integers(2, 24))
    kw = {"channels": draw(st.sampled_from([1, 2, 3]))}
    if "gpus_per_node" in ALGORITHMS[name].needs:
        kw["gpus_per_node"] = draw(st.sampled_from([g for g in range(1, p + 1) if p % g == 0]))
    s = build_schedule(name, p, draw(st.integers(p, 3 * p + 7)), **kw)
    i = draw(st.integers(0, s.n_transfers - 1))
    step = int(s.step_index[i])
    pos = i - int(s.step_ptr[step])
    how = draw(st.sampled_from(["drop", "duplicate", "retarget", "swap"]))
    t = s.transfer(i)
    other = draw(st.sampled_from([r for r in range(p) if r not in (t.src, t.dst)] or [t.dst]))
    return s, step, pos, how, other


@settings(max_examples=150, deadline=None)
@given(fault())
def test_injected_faults_are_caught_at_their_step(case):
    s, step, pos, how, other = case
    if how == "retarget" and other == s.transfer(int(s.step_ptr[step]) + pos).dst:
        return                              # P = 2: nowhere else to send
    bad = faulty(s, step, pos, how, other)
    r = check(bad)
    if how in ("drop", "retarget") or s.endpoints > s.ranks:   # sometimes still an AllReduce (e.g. reduce straight
        # to the owner, or a copy instead of a reduce into a switch that holds nothing yet)
        assert r.ok == oracle_ok(bad), r.error
        if r.ok:
            return
    assert not r.ok and r.error and "\n" not in r.error
    if how in ("duplicate", "swap"):        # the fault itself is the first wrong transfer
        assert r.step == step, r.error
        assert r.error.startswith(f"step {step + 1} of {bad.n_steps}, transfer ")
        if how == "swap":
            assert r.transfer == pos
    if how == "drop" and r.step is not None:
        assert r.error.startswith(f"step {r.step + 1} of {bad.n_steps}, transfer {r.transfer + 1} of ")


@st.composite
def random_schedule(draw):
    p, count = draw(st.integers(1, 4)), draw(st.integers(1, 5))
    steps = []
    for _ in range(draw(st.integers(0, 6))):
        step = []
        for _ in range(draw(st.integers(1, 4))):
            off = draw(st.integers(0, count - 1))
            step.append((draw(st.integers(0, p - 1)), draw(st.integers(0, p - 1)), off,
                         draw(st.integers(1, count - off)), draw(st.sampled_from(["reduce", "copy"]))))
        steps.append(step)
    return Schedule.from_steps(p, count, steps)


@settings(max_examples=300, deadline=None)
@given(random_schedule())
def test_verdict_agrees_with_brute_force_on_random_schedules(s):
    assert check(s).ok == oracle_ok(s)


def test_reasons_are_precise():
    s = build_schedule("ring", 4, 8)
    assert check(faulty(s, 1, 2, "swap")).error == (
        "step 2 of 6, transfer 3 of 4: rank 2 -> 3 elements [2, 4): copy of a partial sum lacking rank(s) 0, 3 "
        "(sent before it was reduced)")
    e = check(faulty(s, 0, 0, "duplicate")).error
    assert e == ("step 1 of 6, transfer 5 of 5: rank 0 -> 1 elements [0, 2): reduce counts the contribution of "
                 "rank(s) 0 twice")
    e = check(faulty(s, 5, 1, "duplicate")).error
    assert e.startswith("step 6 of 6, transfer 2 of 5:") and "a copy and another transfer write the same elements" in e
    bad = Schedule.from_steps(2, 4, [[(0, 1, 0, 2, "reduce")], [(1, 0, 3, 2, "copy")]])
    r = check(bad)
    assert (r.step, r.transfer) == (1, 0) and "element range [3, 5) outside the buffer [0, 4)" in r.error
    r = check(Schedule.from_steps(2, 4, [[(0, 5, 0, 2, "reduce")]]))
    assert r.error == "step 1 of 1, transfer 1 of 1: bad rank: 0 -> 5 with ranks 0..1"


def test_missing_contribution_named_with_rank_and_range():
    s = Schedule.from_steps(3, 6, [[(0, 1, 0, 6, "reduce")], [(1, 2, 0, 6, "reduce")],
                                   [(2, 0, 0, 6, "copy"), (2, 1, 0, 3, "copy")]])
    r = check(s)
    assert not r.ok
    assert r.error == ("step 1 of 3, transfer 1 of 1: rank 1 elements [3, 6) end without the contribution of rank(s) 2 "
                       "(last written here)")


def test_mistakes_that_are_overwritten_do_no_harm():
    # rank 1 first gets a partial copy, later the full sum: correct in the end
    s = Schedule.from_steps(2, 2, [[(0, 1, 0, 2, "copy"), (1, 0, 0, 2, "reduce")], [(0, 1, 0, 2, "copy")]])
    assert check(s).ok
    # a double count on rank 1 that is overwritten by the true sum
    s = Schedule.from_steps(2, 2, [[(0, 1, 0, 2, "reduce")], [(0, 1, 0, 2, "reduce"), (1, 0, 0, 2, "reduce")],
                                   [(0, 1, 0, 2, "copy")]])
    r = check(s)
    assert not r.ok and r.step == 1       # rank 0 added rank 1's partial holding rank 0: twice, and it stays


def test_report_traffic_and_summary():
    s = build_schedule("ring", 4, 400, itemsize=4)
    r = check(s)
    assert r.ok and r.error is None and r.step is None and r.n_steps == 6 and r.n_transfers == 24
    assert np.array_equal(r.bytes_sent, np.full(4, 6 * 400)) and np.array_equal(r.bytes_recv, r.bytes_sent)
    assert r.link_bytes == {(i, (i + 1) % 4): 2400 for i in range(4)}
    assert r.summary().splitlines()[0].startswith("OK")
    assert check(faulty(s, 0, 0, "drop")).summary().startswith("WRONG: step")


def test_single_rank_and_empty():
    assert check(build_schedule("ring", 1, 10)).ok
    r = check(Schedule.from_steps(3, 0, []))
    assert r.ok and r.bytes_sent.sum() == 0
    r = check(Schedule.from_steps(2, 3, []))
    assert not r.ok and "never written" in r.error and r.step is None


# ------------------------------------------------------------------ contribution_states
def one_hot_states(s: Schedule):
    """(distinct, over) from the plain executor on one-hot data: rank r starts with e_r."""
    p, atoms = s.ranks, len(atoms_of(s)[0]) - 1
    data = np.zeros((p, atoms, p))
    data[np.arange(p), :, np.arange(p)] = 1
    mult = np.stack(list(run_steps(s, data)))
    return np.count_nonzero(mult, axis=-1), (mult > 1).any(axis=-1)


def assert_states_are_the_checkers(s: Schedule) -> None:
    """contribution_states matches one-hot execution and the verdict, or raises check's error."""
    r = check(s)
    try:
        st = contribution_states(s)
    except CollsimError as e:
        assert not r.ok and str(e) == r.error
        return
    distinct, over = one_hot_states(s)
    assert st.distinct.shape == (s.n_steps + 1, s.ranks, len(st.bounds) - 1)
    assert np.array_equal(st.distinct, distinct) and np.array_equal(st.over, over)
    assert st.complete() == r.ok, r.error


@pytest.mark.parametrize("name", list(ALGORITHMS))
@pytest.mark.parametrize("p", [6, 8])
def test_contribution_states_of_every_algorithm(name, p):
    s = build_schedule(name, p, 23, **({"gpus_per_node": 2} if "gpus_per_node" in ALGORITHMS[name].needs else {}))
    st = contribution_states(s)
    assert st.complete() and np.array_equal(st.bounds, atoms_of(s)[0])
    assert_states_are_the_checkers(s)


@pytest.mark.parametrize("s", [lecture_ring(3, 4), lecture_ring(5, 7), lecture_ring(70, 2),
                               lecture_tree(4, 8), lecture_tree(5, 3)], ids=lambda s: f"{s.name}-{s.ranks}")
def test_contribution_states_of_the_lectures_wrong_schedules(s):
    st = contribution_states(s)
    assert not st.complete()
    assert_states_are_the_checkers(s)             # P = 70: bitsets of two words


def test_contribution_states_see_double_counting_where_the_checker_does():
    st = contribution_states(lecture_ring(4, 8))
    assert not st.over[1].any() and st.over[2].all()      # step 1 adds x_{r+1} a second time
    assert st.distinct[2, 0, 0] == 3 and check(lecture_ring(4, 8)).step == 1


def test_contribution_states_stop_where_the_checker_stops():
    conflict = faulty(build_schedule("ring", 4, 8), 5, 1, "duplicate")
    out_of_range = Schedule.from_steps(2, 4, [[(0, 1, 0, 2, "reduce")], [(1, 0, 3, 2, "copy")]])
    for s in (conflict, out_of_range):
        with pytest.raises(CollsimError) as e:
            contribution_states(s)
        assert str(e.value) == check(s).error and "\n" not in str(e.value)


@settings(max_examples=200, deadline=None)
@given(random_schedule())
def test_contribution_states_on_random_schedules(s):
    assert_states_are_the_checkers(s)


@settings(max_examples=60, deadline=None)
@given(fault())
def test_contribution_states_of_injected_faults(case):
    assert_states_are_the_checkers(faulty(*case))


@pytest.mark.slow
def test_large_schedules_check_quickly():
    assert check(build_schedule("ring", 64, 10**6)).ok
    assert check(build_schedule("ring", 300, 1000, slices=2)).ok
    assert check(build_schedule("direct", 200, 1000)).ok


def test_switch_endpoints_accumulate_and_distribute():
    # 3 GPUs, one switch (endpoint 3): every GPU reduces into it, it copies the sum back
    gather = [(3, r, 0, 4, "copy") for r in range(3)]
    ok = Schedule.from_steps(3, 4, [[(r, 3, 0, 4, "reduce") for r in range(3)], gather], switches=1)
    r = check(ok)
    assert r.ok, r.error
    assert list(r.bytes_sent) == [16, 16, 16] and r.link_bytes[(3, 0)] == 16
    lacking = Schedule.from_steps(3, 4, [[(r, 3, 0, 4, "reduce") for r in range(2)], gather], switches=1)
    e = check(lacking).error
    assert e == ("step 2 of 2, transfer 1 of 3: rank 0 elements [0, 4) end without the contribution of rank(s) 2 "
                 "(last written here)")
    twice = Schedule.from_steps(3, 4, [[(r, 3, 0, 4, "reduce") for r in (0, 1, 2, 2)], gather], switches=1)
    assert "rank(s) 2 twice" in check(twice).error
    bad = Schedule.from_steps(3, 4, [[(0, 4, 0, 4, "reduce")]], switches=1)
    assert check(bad).error == "step 1 of 1, transfer 1 of 1: bad rank: 0 -> 4 with ranks 0..2 and switches 3..3"
