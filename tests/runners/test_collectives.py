"""runners/collectives.py without a process group: nccl-tests' buffer sizes, and the exact check
of every collective against results worked out here from each rank's fill (right ones pass,
plausible wrong ones are caught)."""
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "runners"))
import collectives  # noqa: E402

from collsim.core.collective import COLLECTIVES  # noqa: E402


def test_the_runner_knows_every_collective_by_its_nccl_tests_name():
    assert set(collectives.NAMES) == set(COLLECTIVES)


@pytest.mark.parametrize("coll, size, world, itemsize, want", [
    ("all_reduce", 1024, 4, 4, (256, 256, 256, 1024)),
    ("all_gather", 1024, 4, 4, (64, 256, 64, 1024)),        # nccl-tests: size = ranks x count
    ("all_gather", 1000, 3, 4, (80, 240, 80, 960)),         # count/ranks floored to 16 bytes
    ("reduce_scatter", 1000, 3, 4, (240, 80, 80, 960)),
    ("alltoall", 1024, 8, 2, (512, 512, 64, 1024)),
    ("alltoall", 96, 8, 4, (0, 0, 0, 0)),                   # 12 bytes a rank: no call
    ("broadcast", 100, 8, 4, (25, 25, 25, 100)),
    ("sendrecv", 8, 2, 8, (1, 1, 1, 8)),
])
def test_layout_follows_nccl_tests(coll, size, world, itemsize, want):
    lay = collectives.layout(coll, size, itemsize, world)
    assert (lay.send, lay.recv, lay.count, lay.size) == want
    assert lay.span == max(want[:2])


def test_redop_and_root_columns():
    assert collectives.columns("all_reduce") == ("sum", -1)
    assert collectives.columns("reduce") == ("sum", 0) and collectives.columns("broadcast") == ("none", 0)
    assert collectives.columns("alltoall") == ("none", -1) and collectives.columns("sendrecv") == ("sum", -1)


def inputs(coll, world, n, dtype="float32"):
    """Each rank's input as collectives.fill writes it (n elements)."""
    out = []
    for r in range(world):
        t = torch.zeros(n, dtype=getattr(torch, dtype))
        collectives.fill(coll, t, r, world, dtype)
        out.append(t)
    return out


def result(coll, world, c, dtype="float32", bug=None):
    """Every rank's output of ``coll`` on ``world`` ranks, c elements a segment (or a buffer),
    computed here from the inputs; ``bug`` makes a plausible mistake."""
    seg = coll in collectives.SEGMENTED
    ins = inputs(coll, world, (world * c if coll != "all_gather" else c) if seg else c, dtype)
    pick = (lambda r: (r + 1) % world) if bug == "rank" else (lambda r: r)
    if coll == "all_reduce":
        return [sum(ins) for _ in range(world)]
    if coll == "reduce_scatter":
        total = sum(ins) if bug != "partial" else sum(ins[:-1])
        return [total[pick(r) * c:(pick(r) + 1) * c] for r in range(world)]
    if coll == "reduce":
        return [sum(ins) if bug != "partial" else sum(ins[:-1])] + [ins[r] for r in range(1, world)]
    if coll == "all_gather":
        return [torch.cat([ins[pick(q)] for q in range(world)]) for _ in range(world)]
    if coll == "alltoall":
        k_seg = (lambda q, k: q) if bug == "transpose" else (lambda q, k: k)
        return [torch.cat([ins[q][k_seg(q, k) * c:(k_seg(q, k) + 1) * c] for q in range(world)])
                for k in range(world)]
    if coll == "broadcast":
        return [ins[pick(0)].clone() for _ in range(world)]
    return [ins[(r + 1) % world if bug == "rank" else (r - 1) % world] for r in range(world)]   # sendrecv


def wrong(coll, outs, c, dtype="float32"):
    world = len(outs)
    return sum(collectives.count_wrong(coll, o, r, world, c, dtype, inplace=False) for r, o in enumerate(outs))


@pytest.mark.parametrize("coll", collectives.NAMES)
@pytest.mark.parametrize("world", [2, 3, 5])
def test_the_exact_result_passes(coll, world):
    assert wrong(coll, result(coll, world, 12), 12) == 0


@pytest.mark.parametrize("coll, bug", [
    ("all_gather", "rank"), ("reduce_scatter", "rank"), ("reduce_scatter", "partial"), ("reduce", "partial"),
    ("alltoall", "transpose"), ("broadcast", "rank"), ("sendrecv", "rank"),
])
@pytest.mark.parametrize("world", [3, 5])
def test_a_wrong_result_is_counted(coll, bug, world):
    assert wrong(coll, result(coll, world, 12, bug=bug), 12) > 0


def test_the_fill_modulus_is_the_largest_prime_that_keeps_results_exact():
    """bfloat16 holds integers exactly to 256: K = 257 (prime) for the moves, so 200 ranks still
    differ in all_gather; a sum over 4 ranks of values < K must stay <= 256: K = 61 (4 x 60)."""
    assert collectives.modulus("all_gather", "bfloat16", 200) == 257
    assert collectives.modulus("all_reduce", "bfloat16", 4) == 61
    assert collectives.modulus("reduce", "int8", 2) == 61 and collectives.modulus("alltoall", "int8", 2) == 127
    assert collectives.modulus("all_reduce", "float32", 8) == 65521
    assert collectives.modulus("all_reduce", "bfloat16", 85) == 3   # the most ranks common.check_args lets by


@pytest.mark.parametrize("world", [1, 2, 4, 7, 85])
def test_the_sums_closed_form_is_the_sum(world):
    k = collectives.modulus("all_reduce", "bfloat16", world)
    idx = torch.arange(3 * k, dtype=torch.int64)
    want = sum((idx + r) % k for r in range(world))
    assert torch.equal(collectives._expected("all_reduce", idx, 0, world, 3 * k, k), want)


def test_moves_tell_every_rank_apart_in_small_dtypes():
    assert wrong("all_gather", result("all_gather", 6, 4, "int8"), 4, "int8") == 0
    assert wrong("all_gather", result("all_gather", 6, 4, "int8", bug="rank"), 4, "int8") > 0


def test_in_place_alltoall_and_sendrecv_are_not_checked_and_reduce_checks_the_root_only():
    junk = torch.full((8,), 7.0)
    assert collectives.count_wrong("alltoall", junk, 0, 2, 4, "float32", inplace=True) is None
    assert collectives.count_wrong("sendrecv", junk, 1, 2, 8, "float32", inplace=True) is None
    assert collectives.count_wrong("reduce", junk, 1, 2, 8, "float32", inplace=False) == 0
    assert collectives.count_wrong("reduce", junk, 0, 2, 8, "float32", inplace=False) > 0


def test_slots_rotate_like_nccl_tests():
    buf = torch.zeros(1024)
    assert collectives.slots(buf, 256, False, 20) == [0]
    assert collectives.slots(buf, 256, True, 20) == [0, 256, 512, 768]   # 4 fit
    assert collectives.slots(buf, 2, True, 3) == [0, 2, 4]                # no more than the calls
    assert collectives.slots(buf, 1024, True, 20) == [0]                  # the largest size: one
