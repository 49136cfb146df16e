"""Which collective an nccl-tests log measured: from its program, from its rows' shape, or a one-line error."""
import pytest

from collsim.errors import CollsimError
from collsim.measure.perf_names import candidates, columns, from_program, resolve


def itemsize(dtype):
    return {"float": 4, "half": 2}[dtype]


def rows(size, count, redop, root=-1, wrong_in=0, wrong_out=0):
    return [dict(size=size, count=count, dtype="float", redop=redop, root=root, inplace=p,
                 wrong=w) for p, w in ((False, wrong_out), (True, wrong_in))]


def test_program_names_and_columns():
    assert from_program("./build/all_gather_perf") == "all_gather"
    assert from_program("/opt/nccl-tests/sendrecv_perf_mpi") == "sendrecv"
    assert from_program("./build/not_a_perf") is None and from_program(None) is None
    assert columns("broadcast", 3) == ("none", 3) and columns("reduce") == ("sum", 0)
    assert columns("all_reduce", 3) == ("sum", -1) and columns("alltoall") == ("none", -1)


@pytest.mark.parametrize("recs, fits", [
    (rows(8 * 4096, 4096, "sum"), ["reduce_scatter"]),             # whole buffer of 8 segments, summed
    (rows(8 * 4096, 4096, "none"), ["all_gather"]),                # in-place rows checked
    (rows(8 * 4096, 4096, "none", wrong_in=None), ["alltoall"]),   # nccl-tests checks no in-place alltoall
    (rows(4096, 1024, "sum"), ["all_reduce"]),
    (rows(4096, 1024, "sum", wrong_in=None), ["sendrecv"]),
    (rows(4096, 1024, "none", root=0), ["broadcast"]),
    (rows(4096, 1024, "sum", root=2), ["reduce"]),
])
def test_rows_tell_the_collectives_apart(recs, fits):
    assert candidates(recs, itemsize) == fits
    assert resolve(None, None, recs, itemsize, "log.txt") == fits[0]


def test_contradictions_and_ambiguity_are_one_line_errors():
    recs = rows(8 * 4096, 4096, "sum")
    with pytest.raises(CollsimError, match="says all_gather_perf, not --coll reduce_scatter"):
        resolve("all_gather", "reduce_scatter", recs, itemsize, "log.txt")
    with pytest.raises(CollsimError, match="not broadcast's .*check --coll"):
        resolve(None, "broadcast", recs, itemsize, "log.txt")
    unchecked = rows(8 * 4096, 4096, "none", wrong_in=None, wrong_out=None)
    with pytest.raises(CollsimError, match="log.txt: the log names no .*say which with --coll"):
        resolve(None, None, unchecked, itemsize, "log.txt")
    assert resolve(None, "alltoall", unchecked, itemsize, "log.txt") == "alltoall"
