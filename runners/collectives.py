"""What the runner does per collective, as nccl-tests' ``src/<name>.cu`` does: the buffers one call
uses (``layout``), the call through torch.distributed (``calls``), what each rank's input holds
(``fill``) and the exact check of its result (``count_wrong``). Names are nccl-tests' (all_reduce,
all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv; ``collsim.core.collective``).

Sizes (nccl-tests' ``*GetCollByteCount``). The size column is the larger of the send and receive
buffers: for all_gather, reduce_scatter and alltoall the whole buffer of ``ranks`` segments of
``count`` elements each, ``count`` floored to a multiple of 16 bytes (so 8 B on 2 ranks is no
call: such sizes are left out of the sweep); for the others ``count`` = size / element size.

In place (nccl-tests' offsets). all_gather: the input is segment ``rank`` of the output;
reduce_scatter: the output is segment ``rank`` of the input; the others one buffer. torch has no
out-of-place all_reduce, broadcast or reduce: out of place is a device copy into the output, then
the in-place call (broadcast: the copy on the root only), and the copy is timed. alltoall and
sendrecv in place read and write one buffer, as nccl-tests times them, and are not checked
(nccl-tests reports no errors there): ``wrong`` is None.

Check. Element i of rank r's input is (i + r) % K, K the largest prime at most 65521 that keeps
every result exact in the dtype (``common.DTYPES``): for the sums (all_reduce, reduce_scatter,
reduce) K - 1 times the ranks, for the moves (all_gather, broadcast, alltoall, sendrecv) K - 1,
fits. K prime and above the rank count, a result from the wrong rank, or from the wrong segment of
a buffer whose segments are a power of two long, differs. Results expected: all_reduce, every
element the sum; reduce_scatter, rank r the sum over the input's segment r; reduce, the root the
sum (torch promises nothing for the other ranks' buffers, gloo leaves partial sums there: not
checked); all_gather, segment q from rank q; broadcast, the root's input (root 0); alltoall, rank
k's segment q = rank q's input segment k; sendrecv (nccl-tests' ring shift: send to r + 1, receive
from r - 1), rank r holds rank r - 1's.

Runs on every rank; torch is imported inside functions only.
"""
from __future__ import annotations

from dataclasses import dataclass

from common import DTYPES

from collsim.core.collective import COLLECTIVES
from collsim.measure.perf_names import columns  # noqa: F401 - nccl-tests' redop and root columns

NAMES = tuple(COLLECTIVES)
SEGMENTED = tuple(n for n, c in COLLECTIVES.items() if c.segmented)   # size = ranks x count elements
SUMS = tuple(n for n, c in COLLECTIVES.items() if c.reduces)          # checked as exact sums
UNCHECKED_IN_PLACE = ("alltoall", "sendrecv")
ROOT = 0
CHUNK = 1 << 26  # elements per fill/check kernel batch (bounds temporary memory)


@dataclass(frozen=True)
class Layout:
    """One call's buffers in elements per rank: ``send`` and ``recv`` (out of place), ``count``
    (nccl-tests' count column), ``size`` (its size column, bytes) and ``span`` (elements one
    rotating slot of a buffer takes: the larger of the two)."""
    send: int
    recv: int
    count: int
    size: int

    @property
    def span(self) -> int:
        return max(self.send, self.recv)


def layout(coll: str, size: int, itemsize: int, world: int) -> Layout:
    """nccl-tests' buffers for a requested ``size`` in bytes (module docstring)."""
    count = size // itemsize
    if coll not in SEGMENTED:
        return Layout(count, count, count, count * itemsize)
    base = (count // world) & ~(16 // itemsize - 1) if itemsize <= 16 else count // world
    whole = base * world
    send, recv = {"all_gather": (base, whole), "reduce_scatter": (whole, base)}.get(coll, (whole, whole))
    return Layout(send, recv, base, whole * itemsize)


def modulus(coll: str, dtype: str, world: int) -> int:
    """K of the fill (module docstring): the largest prime <= min(65521, the largest integer m
    with (m - 1) x ranks (sums) or m - 1 (moves) exact in ``dtype``); at least 2."""
    exact = DTYPES[dtype][1]
    k = max(2, min(65521, (exact // world if coll in SUMS else exact) + 1))
    while any(k % d == 0 for d in range(2, int(k ** 0.5) + 1)):
        k -= 1
    return k


def _ramp(start: int, n: int, device):
    import torch
    return torch.arange(start, start + n, device=device, dtype=torch.int64)


def fill(coll: str, buf, rank: int, world: int, dtype: str) -> None:
    """Rank ``rank``'s input: element i := (i + rank) % K (``modulus``)."""
    k = modulus(coll, dtype, world)
    for s in range(0, buf.numel(), CHUNK):
        idx = _ramp(s, min(CHUNK, buf.numel() - s), buf.device)
        buf[s:s + idx.numel()].copy_((idx + rank) % k)


def _expected(coll: str, idx, rank: int, world: int, count: int, k: int):
    """Expected values at output indices ``idx`` (int64) of rank ``rank``."""
    if coll in SUMS:
        start = rank * count if coll == "reduce_scatter" else 0
        x, (cycles, b) = (idx + start) % k, divmod(world, k)   # sum over r < world of (x + r) % k
        return cycles * (k * (k - 1) // 2) + b * x + b * (b - 1) // 2 - k * (x + b - k).clamp(min=0)
    if coll == "all_gather":
        return (idx % count + idx // count) % k
    if coll == "alltoall":
        return (rank * count + idx % count + idx // count) % k
    src = ROOT if coll == "broadcast" else (rank - 1) % world
    return (idx + src) % k


def count_wrong(coll: str, out, rank: int, world: int, count: int, dtype: str, inplace: bool) -> int | None:
    """Elements of rank ``rank``'s output ``out`` that differ from the exact result (module
    docstring); None where nothing is checked (in-place alltoall and sendrecv)."""
    if inplace and coll in UNCHECKED_IN_PLACE:
        return None
    if coll == "reduce" and rank != ROOT:
        return 0
    wrong, k = 0, modulus(coll, dtype, world)
    for s in range(0, out.numel(), CHUNK):
        idx = _ramp(s, min(CHUNK, out.numel() - s), out.device)
        expect = _expected(coll, idx, rank, world, count, k)
        wrong += int((out[s:s + idx.numel()].double() != expect.double()).sum())
    return wrong


def slots(buf, span: int, rotate: bool, calls: int) -> list:
    """The starts (elements) of the slots of ``buf`` that calls 0, 1, ... use, call i taking slot
    i mod len: one, or with ``rotate`` consecutive slots of ``span`` elements, as many as fit in
    ``buf`` and at most ``calls`` (nccl-tests: offset = size x (iteration mod max_bytes // size))."""
    n = min(buf.numel() // span, max(calls, 1)) if rotate and span else 1
    return [j * span for j in range(n)]


@dataclass
class Call:
    """The i-th timed call of one size and place, and the output and input it checks and fills."""
    fn: object
    out: object
    inp: object

    def __call__(self, i: int) -> None:
        self.fn(i)


def calls(coll: str, lay: Layout, bufs, starts: list, inplace: bool, rank: int, world: int) -> Call:
    """Call i on slot ``starts[i mod len]`` of ``bufs`` = (send buffer, receive buffer) in place
    (module docstring); ``Call.out``/``Call.inp`` are slot 0's output and input views."""
    import torch.distributed as dist
    send_buf, recv_buf = bufs
    c = lay.count

    def views(start):
        recv = recv_buf[start:start + lay.recv]
        if not inplace:
            return send_buf[start:start + lay.send], recv
        if coll == "all_gather":
            return recv[rank * c:(rank + 1) * c], recv
        if coll == "reduce_scatter":
            whole = recv_buf[start:start + lay.send]
            return whole, whole[rank * c:(rank + 1) * c]
        return recv, recv

    pairs = [views(s) for s in starts]
    copy_first = not inplace and coll in ("all_reduce", "broadcast", "reduce") \
        and (coll != "broadcast" or rank == ROOT)
    native = {
        "all_reduce": lambda s, r: dist.all_reduce(r),
        "all_gather": lambda s, r: dist.all_gather_into_tensor(r, s),
        "reduce_scatter": lambda s, r: dist.reduce_scatter_tensor(r, s),
        "broadcast": lambda s, r: dist.broadcast(r, src=ROOT),
        "reduce": lambda s, r: dist.reduce(r, dst=ROOT),
        "alltoall": lambda s, r: dist.all_to_all_single(r, s),
        "sendrecv": lambda s, r: _ring_shift(dist, s, r, rank, world),
    }[coll]

    def fn(i):
        s, r = pairs[i % len(pairs)]
        if copy_first:
            r.copy_(s)
        native(s, r)
    inp = pairs[0][0]
    return Call(fn, pairs[0][1], inp)


def _ring_shift(dist, send, recv, rank: int, world: int) -> None:
    """nccl-tests' sendrecv: send to rank + 1 and receive from rank - 1, one group."""
    ops = [dist.P2POp(dist.isend, send, (rank + 1) % world), dist.P2POp(dist.irecv, recv, (rank - 1) % world)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()


def out_of_place_method(args) -> str | None:
    """How an out-of-place call is made (module docstring); None in place only."""
    coll = getattr(args, "coll", "all_reduce")
    if getattr(args, "inplace", True) is True:
        return None
    if coll == "broadcast":
        return "device copy into the output on the root, then in-place broadcast"
    if coll in ("all_reduce", "reduce"):
        return f"device copy into the output, then in-place {coll}"
    return f"torch.distributed's own out-of-place {coll} (separate input and output buffers)"
