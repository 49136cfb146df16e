"""collsim.core.rank_plan: every rank's sends and receives, executed with numpy as the ranks would run
them, against the exact sum and against the step executor (``atoms.run_steps``)."""
import numpy as np
import pytest

from collsim.algorithms import ALGORITHMS, build_schedule
from collsim.algorithms.lecture import LECTURE
from collsim.core.atoms import atoms_of, run_steps
from collsim.core.checker import check
from collsim.core.rank_plan import RankPlan, StepPlan, execute, fit_error, rank_plan
from collsim.core.schedule import COPY, REDUCE, Schedule
from collsim.errors import CollsimError


def plans(s: Schedule) -> list[RankPlan]:
    return [rank_plan(s, r) for r in range(s.ranks)]


def reference(s: Schedule, data: np.ndarray) -> np.ndarray:
    """The step semantics element by element, from the step executor: each atom's elements
    ride along a trailing axis (padded to the longest atom), so every element is moved for real."""
    bounds, _, _ = atoms_of(s)
    lens = np.diff(bounds)
    padded = np.zeros((s.ranks, len(lens), max(lens.max(initial=0), 1)), data.dtype)
    for a, n in enumerate(lens):
        padded[:, a, :n] = data[:, bounds[a]:bounds[a + 1]]
    *_, last = run_steps(s, padded)
    return np.concatenate([last[:, a, :n] for a, n in enumerate(lens)] or [data[:, :0]], axis=1)


def params(name: str, ranks: int) -> dict:
    return {"gpus_per_node": 2 if ranks % 2 == 0 else ranks} if "gpus_per_node" in ALGORITHMS[name].params else {}


@pytest.mark.parametrize("name", [n for n, a in ALGORITHMS.items() if not (a.switches or a.network)])   # no switches
@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 5, 6, 8])
def test_every_algorithm_gives_every_rank_the_sum(name, ranks):
    rng = np.random.default_rng(ranks)
    for count in (0, 1, 5, 37, 300):
        s = build_schedule(name, ranks, count, **params(name, ranks))
        assert fit_error(s, ranks) is None
        data = rng.integers(-1000, 1000, size=(ranks, count))
        out = execute(plans(s), data)
        assert (out == data.sum(axis=0)).all(), (name, ranks, count)
        assert (out == reference(s, data)).all()


@pytest.mark.parametrize("name", list(LECTURE))
@pytest.mark.parametrize("ranks", [2, 3, 4, 7])
def test_the_lecture_schedules_go_wrong_exactly_as_the_checker_says(name, ranks):
    s = LECTURE[name](ranks, 10)
    data = np.random.default_rng(0).integers(-50, 50, size=(ranks, 10))
    out = execute(plans(s), data)
    assert (out == reference(s, data)).all()
    assert (out != data.sum(axis=0)).any() == (not check(s).ok)
    assert check(s).ok == (ranks == 2)  # both are right on two ranks only


def test_random_schedules_with_transfers_to_oneself_match_the_checker():
    rng = np.random.default_rng(1)
    for trial in range(40):
        ranks, count = int(rng.integers(1, 6)), int(rng.integers(1, 40))
        steps = []
        for _ in range(int(rng.integers(0, 5))):
            step = []
            for _ in range(int(rng.integers(0, 6))):
                off = int(rng.integers(0, count))
                step.append((int(rng.integers(0, ranks)), int(rng.integers(0, ranks)), off,
                             int(rng.integers(1, count - off + 1)), "reduce"))
            steps.append(step)
        s = Schedule.from_steps(ranks, count, steps)
        data = rng.integers(-9, 9, size=(ranks, count))
        assert (execute(plans(s), data) == reference(s, data)).all(), trial


def test_a_ring_on_three_ranks_as_rank_0_runs_it():
    s = build_schedule("ring", 3, 6)  # chunks of 2; rank 0 sends to 1 and receives from 2
    p = rank_plan(s, 0)
    assert p.steps == (StepPlan(((1, 0, 2),), ((2, 4, 2, REDUCE, 0),), 2),
                       StepPlan(((1, 4, 2),), ((2, 2, 2, REDUCE, 0),), 2),
                       StepPlan(((1, 2, 2),), ((2, 0, 2, COPY, 0),), 2),
                       StepPlan(((1, 0, 2),), ((2, 4, 2, COPY, 0),), 2))
    assert p.scratch == 2 and p.count == 6


def test_receives_of_one_step_take_consecutive_slots_in_schedule_order():
    s = Schedule.from_steps(3, 8, [[(1, 0, 0, 3, "reduce"), (2, 0, 5, 2, "copy"), (0, 0, 3, 1, "reduce"),
                                    (0, 1, 0, 8, "copy")]])
    p = rank_plan(s, 0)
    assert p.steps[0].sends == ((1, 0, 8),)
    assert p.steps[0].recvs == ((1, 0, 3, REDUCE, 0), (2, 5, 2, COPY, 3), (0, 3, 1, REDUCE, 5))
    assert p.scratch == 6


def test_plans_whose_messages_do_not_match_are_caught():
    s = build_schedule("ring", 2, 4)
    good = plans(s)
    short = RankPlan(1, 4, (StepPlan(good[1].steps[0].sends, ((0, 0, 1, REDUCE, 0),), 1),) + good[1].steps[1:])
    with pytest.raises(CollsimError, match="step 1 of 2: rank 1 expects 1 elements from rank 0, 2 were"):
        execute([good[0], short], np.zeros((2, 4)))
    deaf = RankPlan(1, 4, (StepPlan(good[1].steps[0].sends, (), 0),) + good[1].steps[1:])
    with pytest.raises(CollsimError, match="rank 0 sends to rank 1 more than it receives"):
        execute([good[0], deaf], np.zeros((2, 4)))


@pytest.mark.parametrize("steps, world, message", [
    ([[(0, 1, 0, 4, "reduce")]], 3, "the schedule is for 2 ranks, the run has 3"),
    ([[(0, 1, 0, 4, "reduce")], [(1, 2, 0, 4, "copy")]], 2,
     "step 2 of 2, transfer 1 of 1: 1 -> 2 goes through a switch endpoint (ranks are 0..1); no backend"),
    ([[(0, 1, 0, 4, "reduce"), (1, 0, 2, 3, "reduce")]], 2,
     "step 1 of 1, transfer 2 of 2: element range [2, 5) outside the buffer [0, 4)"),
    ([[(-1, 1, 0, 4, "reduce")]], 2, "step 1 of 1, transfer 1 of 1: bad rank: -1 -> 1 with ranks 0..1"),
])
def test_what_does_not_fit_the_run_is_named_in_one_line(steps, world, message):
    err = fit_error(Schedule.from_steps(2, 4, steps), world)
    assert err.startswith(message) and "\n" not in err
