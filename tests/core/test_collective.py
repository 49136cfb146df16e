"""The collective records: names, nccl-tests' factors, and each one's result proved by executing a hand-written
schedule (and a broken one refused)."""
import pytest

from collsim.core.checker import check
from collsim.core.collective import COLLECTIVES, get
from collsim.core.schedule import Schedule
from collsim.errors import CollsimError

P, SEG = 4, 3
N = P * SEG


def ring_gather(k_last=P - 1):
    return [[dict(src=r, dst=(r + 1) % P, offset=((r - k) % P) * SEG, count=SEG, op="copy") for r in range(P)]
            for k in range(k_last)]


def ring_scatter():
    return [[dict(src=r, dst=(r + 1) % P, offset=((r - k - 1) % P) * SEG, count=SEG, op="reduce")
             for r in range(P)] for k in range(P - 1)]


GOOD = {
    "all_gather": ring_gather(),
    "reduce_scatter": ring_scatter(),
    "broadcast": [[dict(src=h, dst=h + 1, offset=0, count=N, op="copy")] for h in range(P - 1)],
    "reduce": [[dict(src=h, dst=(h + 1) % P, offset=0, count=N, op="reduce")] for h in range(1, P)],
    "alltoall": [[dict(src=r, dst=k, offset=k * SEG, count=SEG, op="copy", dst_offset=r * SEG)
                  for r in range(P) for k in range(P) if r != k]],
    "sendrecv": [[dict(src=r, dst=(r + 1) % P, offset=0, count=N, op="copy") for r in range(P)]],
    "all_reduce": ring_scatter() + [[dict(src=r, dst=(r + 1) % P, offset=((r - k) % P) * SEG, count=SEG,
                                          op="copy") for r in range(P)] for k in range(P - 1)],
}


def test_names_factors_and_lookup():
    assert list(COLLECTIVES) == ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall",
                                 "sendrecv"]
    assert get("AllGather") is get("ncclFuncAllGather") is get("allgather") is COLLECTIVES["all_gather"]
    factors = {c.name: c.busbw_factor(8) for c in COLLECTIVES.values()}
    assert factors == pytest.approx({"all_reduce": 1.75, "all_gather": 0.875, "reduce_scatter": 0.875,
                                     "broadcast": 1, "reduce": 1, "alltoall": 0.875, "sendrecv": 1})
    assert get("broadcast").algorithms == ("Ring",) and get("alltoall").algorithms == ()
    with pytest.raises(CollsimError, match="unknown collective 'gather'; choose from all_reduce"):
        get("gather")
    with pytest.raises(CollsimError, match="count 10 is not a multiple of 4 ranks"):
        get("all_gather").check_count(4, 10)


@pytest.mark.parametrize("name", list(GOOD))
def test_each_collective_is_proved_by_executing_it(name):
    s = Schedule.from_steps(P, N, GOOD[name], collective=name)
    report = check(s)
    assert report.ok, report.error
    assert report.summary().startswith(f"OK: {get(name).description}")
    again = Schedule.from_dict(s.to_dict())
    assert again.collective == name and check(again).ok


@pytest.mark.parametrize("name, steps, message", [
    ("all_gather", ring_gather(P - 2), "rank 0 elements [3, 6) end without the contribution of rank(s) 1"),
    ("reduce_scatter", ring_scatter()[:-1], "rank 0 elements [0, 3) end without the contribution of rank(s) 1"),
    ("broadcast", GOOD["broadcast"][1:], "rank 1 elements [0, 12) end without the contribution of rank(s) 0"),
    ("reduce", GOOD["reduce"][:-1], "rank 0 elements [0, 12) end without the contribution of rank(s) 1, 2, 3"),
    ("alltoall", [[{**t, "dst_offset": t["offset"]} for t in GOOD["alltoall"][0]]], "a copy and another transfer"),
    ("sendrecv", [[{**t, "dst": (t["src"] + 2) % P} for t in GOOD["sendrecv"][0]]],
     "rank 0 elements [0, 12) end without the contribution of rank(s) 3 and with data of rank(s) 2"),
])
def test_a_wrong_schedule_is_named(name, steps, message):
    report = check(Schedule.from_steps(P, N, steps, collective=name))
    assert not report.ok and message in report.error


def test_alltoall_atoms_follow_the_shift():
    """Half-segment pieces moved to other segments: the boundaries travel with them, values are checked."""
    h = SEG // 2
    steps = [[dict(src=r, dst=k, offset=k * SEG + a, count=b - a, op="copy", dst_offset=r * SEG + a)
              for r in range(P) for k in range(P) if r != k for a, b in ((0, h), (h, SEG))]]
    assert check(Schedule.from_steps(P, N, steps, collective="alltoall")).ok
    swapped = [[{**t, "dst_offset": t["dst_offset"] + (SEG - h if t["offset"] % SEG == 0 else -h)}
                for t in steps[0]]]
    assert not check(Schedule.from_steps(P, N, swapped, collective="alltoall")).ok


def test_values_are_checked_where_bits_cannot_tell():
    """A ring shift the wrong way round holds one rank's data, but the wrong rank's: named."""
    steps = [[dict(src=(r + 1) % P, dst=r, offset=0, count=N, op="copy") for r in range(P)]]
    report = check(Schedule.from_steps(P, N, steps, collective="sendrecv"))
    assert not report.ok and "rank(s) 1" in report.error


def test_a_files_collective_field_in_any_spelling():
    from collsim.core.collective import named
    assert named("allreduce") == named("AllReduce") == named(None) == named("") == "all_reduce"
    assert named("ncclFuncAllGather") == "all_gather"
    with pytest.raises(CollsimError, match="unknown collective"):
        named("allgatherv")
