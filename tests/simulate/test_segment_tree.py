"""Tests of collsim.simulate.segment_tree: segment-tree readiness equals the max over segments, bit for bit."""
import numpy as np
from hypothesis import given, settings, strategies as st

from collsim.simulate.segment_tree import tree_index, tree_size


def test_tree_size():
    assert [tree_size(n) for n in (0, 1, 2, 3, 4, 5, 1024, 1025)] == [1, 1, 2, 4, 4, 8, 1024, 2048]


@st.composite
def ranges_in_steps(draw):
    ranks, nseg = draw(st.integers(1, 4)), draw(st.integers(1, 40))
    steps = draw(st.lists(st.lists(st.tuples(st.integers(0, ranks - 1), st.integers(0, ranks - 1),
                                             st.integers(0, nseg), st.integers(0, nseg)),
                                   min_size=0, max_size=6), min_size=1, max_size=6))
    return ranks, nseg, steps


@settings(max_examples=150, deadline=None)
@given(ranges_in_steps(), st.randoms(use_true_random=False))
def test_reads_equal_max_over_segments(case, rnd):
    # run the tree protocol step by step (all reads, then all writes) next to a plain (rank, segment) table
    ranks, nseg, steps = case
    flat = [(s, d, min(a, b), max(a, b)) for step in steps for s, d, a, b in step]
    ptr = np.concatenate([[0], np.cumsum([len(step) for step in steps])])
    src, dst, sa, sb = (np.array([t[i] for t in flat], dtype=np.int64) for i in range(4))
    N = tree_size(nseg)
    read, rptr, write, wptr, size = tree_index(src, dst, sa, sb, N, ranks, ptr)
    table, plain = np.zeros(size), np.zeros((ranks, nseg))
    for k in range(len(steps)):
        lo, hi = ptr[k], ptr[k + 1]
        m = hi - lo
        if m == 0:
            continue
        cells = read[rptr[k]:rptr[k + 1]].reshape(-1, m)
        got = table[cells].max(axis=0) if cells.size else np.zeros(m)
        want = [plain[s, a:b].max() if b > a else 0.0 for s, a, b in zip(src[lo:hi], sa[lo:hi], sb[lo:hi])]
        assert got.tolist() == want
        ends = np.array([rnd.choice([0.5, 1.0, 2.0, 3.0]) * (k + 1) for _ in range(m)])
        w = write[wptr[k]:wptr[k + 1]].reshape(-1, m)
        np.maximum.at(table, w.ravel(), np.broadcast_to(ends, w.shape).ravel())
        for d, a, b, e in zip(dst[lo:hi], sa[lo:hi], sb[lo:hi], ends):
            plain[d, a:b] = np.maximum(plain[d, a:b], e)
