"""runners/allreduce_bench.py --coll NAME under torchrun with the gloo backend on CPU: every
collective nccl-tests measures, out of place and in place, nccl-tests' sizes, columns and bus
bandwidth factors, each result checked exactly (3 ranks: an odd ring catches what 2 cannot)."""
import subprocess
import sys

import pytest

from collsim.core.collective import get
from collsim.measure import load
from tests.runners.test_allreduce_bench_gloo import BENCH, torchrun

pytestmark = pytest.mark.slow
WANT_SIZES = {  # --sizes 8,100,4K,64K on 3 ranks as nccl-tests prints them (float32)
    "all_reduce": [8, 100, 4096, 65536], "broadcast": [8, 100, 4096, 65536], "reduce": [8, 100, 4096, 65536],
    "sendrecv": [8, 100, 4096, 65536],
    "all_gather": [96, 4080, 65520], "reduce_scatter": [96, 4080, 65520], "alltoall": [96, 4080, 65520],
}


@pytest.mark.parametrize("coll", sorted(WANT_SIZES))
def test_every_collective_measured_and_checked(tmp_path, coll):
    out = tmp_path / f"{coll}.jsonl"
    p, _, _ = torchrun(3, "--coll", coll, "--sizes", "8,100,4K,64K", "--place", "both", "-w", "1", "-n", "2",
                       "--out", str(out))
    assert p.returncode == 0, p.stderr[-2000:]
    m = load(out)
    assert m.meta["collective"] == coll and m.meta["places"] == ["out", "in"]
    sizes = WANT_SIZES[coll]
    assert m.size.tolist() == [s for s in sizes for _ in (0, 1)]   # out of place, then in place
    assert m.inplace.tolist() == [False, True] * len(sizes)
    segments = 3 if coll in ("all_gather", "reduce_scatter", "alltoall") else 1
    assert (m.count * 4 * segments).tolist() == m.size.tolist()
    unchecked = coll in ("alltoall", "sendrecv")   # nccl-tests reports no in-place errors there
    wrong = [r["wrong"] for r in m.records]
    assert wrong == [0, None if unchecked else 0] * len(sizes)
    factor = get(coll).busbw_factor(3)
    assert m.busbw_GBps.tolist() == pytest.approx([a * factor for a in m.algbw_GBps])
    root = 0 if coll in ("broadcast", "reduce") else -1
    assert set(m["root"]) == {root}
    assert set(m["redop"]) == {"sum" if coll in ("all_reduce", "reduce_scatter", "reduce", "sendrecv") else "none"}
    header = p.stdout.splitlines()[0].split()
    assert header[:5] == ["size(B)", "count", "type", "redop", "root"]


@pytest.mark.parametrize("coll, rank", [("all_gather", 1), ("reduce_scatter", 2), ("alltoall", 0),
                                        ("broadcast", 2), ("reduce", 0), ("sendrecv", 1)])
def test_the_check_catches_one_wrong_element(tmp_path, coll, rank):
    out = tmp_path / "c.jsonl"
    p, _, _ = torchrun(3, "--coll", coll, "--sizes", "4K,48K", "-w", "0", "-n", "1", "--out", str(out),
                       fault=f"corrupt@rank{rank}:size=49152")  # 48K: 3 whole segments
    assert p.returncode == 0, p.stderr[-2000:]
    assert load(out).wrong.tolist() == [0, 1]


@pytest.mark.parametrize("args, message", [
    (["--coll", "gather"], "invalid choice: 'gather'"),
    (["--coll", "all_gather", "--sizes", "8,16"], "no size gives all_gather on 2 ranks a whole 16-byte segment"),
    (["--coll", "sendrecv", "--place", "in", "--inplace"], "not allowed with argument"),
])
def test_bad_collective_arguments_one_line_exit_2(args, message):
    p = subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=60,
                       env={"RANK": "0", "WORLD_SIZE": "2", "PATH": "/usr/bin:/bin"})
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1, p.stderr
    assert message in p.stderr


def test_sendrecv_needs_two_ranks():
    p = subprocess.run([sys.executable, str(BENCH), "--coll", "sendrecv"], capture_output=True, text=True,
                       timeout=60, env={"RANK": "0", "WORLD_SIZE": "1", "PATH": "/usr/bin:/bin"})
    assert p.returncode == 2 and "sendrecv needs at least 2 ranks" in p.stderr
