"""Every collective's algorithms: proved by the checker on awkward shapes, their traffic equal to nccl-tests'
bus bandwidth factor (the bytes the busiest GPU sends over the buffer's size), and refused where they cannot run."""
import pytest

from collsim.algorithms import BY_COLLECTIVE, build_schedule, get
from collsim.core.checker import check
from collsim.core.collective import COLLECTIVES
from collsim.errors import CollsimError

CASES = [("all_gather", "ring", 8, {}), ("all_gather", "ring", 5, dict(channels=3, slices=2, loops=2)),
         ("all_gather", "ring", 16, dict(channels=4, gpus_per_node=8)), ("all_gather", "pat", 16, {}),
         ("all_gather", "pat", 12, dict(chunks=3, channels=2)),
         ("reduce_scatter", "ring", 7, dict(channels=2, slices=2)),
         ("reduce_scatter", "ring", 16, dict(channels=2, gpus_per_node=4, loops=2)),
         ("reduce_scatter", "pat", 16, dict(chunks=2)), ("reduce_scatter", "pat", 6, {}),
         ("broadcast", "ring", 8, dict(chunks=4, channels=2)), ("broadcast", "ring", 16, dict(chunks=3, channels=4,
                                                                                              gpus_per_node=8)),
         ("reduce", "ring", 6, dict(chunks=3)), ("reduce", "ring", 16, dict(chunks=3, channels=4, gpus_per_node=8)),
         ("alltoall", "p2p", 5, dict(chunks=2, channels=3)), ("sendrecv", "p2p", 8, dict(chunks=2, channels=4))]


@pytest.mark.parametrize("coll, algo, ranks, params", CASES)
def test_every_schedule_computes_its_collective(coll, algo, ranks, params):
    s = build_schedule(algo, ranks, ranks * 60, collective=coll, **params)
    assert s.collective == coll
    report = check(s)
    assert report.ok, report.error


@pytest.mark.parametrize("coll", list(COLLECTIVES))
@pytest.mark.parametrize("ranks", [4, 8, 16])
def test_busiest_sender_moves_nccl_tests_factor(coll, ranks):
    """nccl-tests' busbw = algbw x factor is the rate of the busiest GPU's port: the bytes it sends over the size."""
    for name in BY_COLLECTIVE[coll]:
        if get(name, coll).teaching_only or name not in ("ring", "pat", "p2p"):
            continue
        s = build_schedule(name, ranks, ranks * 64, collective=coll, channels=2)
        sent = check(s).bytes_sent.max()
        assert sent / s.nbytes == pytest.approx(COLLECTIVES[coll].busbw_factor(ranks)), (coll, name)


def test_unknown_algorithm_and_uneven_buffer_are_one_line():
    with pytest.raises(CollsimError, match="unknown all_gather algorithm 'tree'; choose from ring, pat"):
        build_schedule("tree", 8, 64, collective="all_gather")
    with pytest.raises(CollsimError, match="count 10 is not a multiple of 4 ranks"):
        build_schedule("ring", 4, 10, collective="reduce_scatter")
    with pytest.raises(CollsimError, match="unknown algorithm 'pat'"):
        build_schedule("pat", 4, 8)


def test_pat_takes_log_steps_and_ring_takes_n_minus_one():
    assert build_schedule("pat", 1024, 1024, collective="all_gather").n_steps == 10
    assert build_schedule("pat", 1000, 1000, collective="reduce_scatter").n_steps == 10
    assert build_schedule("ring", 64, 64, collective="all_gather").n_steps == 63
    assert build_schedule("ring", 8, 8 * 5, collective="broadcast", chunks=5).n_steps == 5 + 8 - 2
