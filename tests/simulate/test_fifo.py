"""Tests of collsim.simulate.fifo: FIFO chains per resource row, and the exact in-step timing."""
import numpy as np

from collsim.simulate.fifo import by_levels, chain_links, chain_table, levels, one_chain


def test_chain_table_rows_in_schedule_order():
    # two steps: step 0 uses rows 0, 1, 0, 2, 1, 0; step 1 (transfers 6..8) rows 3, 3, 1
    key = np.array([0, 1, 0, 2, 1, 0, 3, 3, 1])
    step = np.array([0] * 6 + [1] * 3)
    pad, real, ptr = chain_table(np.arange(9), step, key, 4, np.array([0, 6]), np.array([6, 3]))
    assert ptr.tolist() == [0, 2, 3]
    assert pad[:2].tolist() == [[0, 2, 5], [1, 4, 6]] and real[1].tolist() == [True, True, False]
    assert pad[2].tolist() == [0, 1, 3] and real[2].tolist() == [True, True, False]   # step-local
    assert chain_table(np.arange(3), np.zeros(3, int), np.arange(3), 3, np.array([0]), np.array([3])) is None


def test_levels_two_kinds_against_hand_timing():
    # three senders share one NIC-like row; receivers 0 and 1 take two each: two kinds of chains
    ready = np.array([[0.0], [0.5], [0.0], [4.0]])
    d = np.array([[1.0], [1.0], [2.0], [1.0]])
    out_key, in_key = np.array([0, 0, 0, 1]), np.array([0, 1, 0, 1])
    at = np.arange(4)
    links = [(at, *chain_links(at, np.zeros(4, int), key, 3, 1)) for key in (out_key, in_key)]
    assert links[0][1].tolist() == [0, 1, 2, 0] and links[1][2].tolist() == [-1, -1, 0, 1]
    level = levels(4, links)
    assert level.tolist() == [0, 1, 2, 2]
    order = np.argsort(level, kind="stable")
    out, inn = np.zeros(3), np.zeros(3)                 # row 2: the spare row (holds nothing)
    res = [(out, out_key[:, None], d), (inn, in_key[:, None], d)]
    st, en = by_levels(ready.copy(), d, res, order, np.searchsorted(level[order], np.arange(4)),
                       [slice(2, 3), slice(2, 3)])
    assert st[:, 0].tolist() == [0.0, 1.0, 2.0, 4.0]
    assert out.tolist() == [4.0, 5.0, 0.0] and inn.tolist() == [4.0, 5.0, 0.0]


def test_one_chain_holds_the_port_for_its_own_hold():
    # one port chain held for the "wire" part only: latency overlaps, bytes queue
    ready, d, w = np.zeros((3, 1)), np.array([[3.0], [3.0], [3.0]]), np.array([[1.0], [1.0], [1.0]])
    port, slot = np.zeros(2), np.zeros(4)
    res = [(slot, np.array([[0], [1], [2]]), d), (port, np.array([[0], [0], [0]]), w)]
    st, en = one_chain(ready.copy(), d, res, (np.array([[0, 1, 2]]), np.ones((1, 3), bool)), w)
    assert st[:, 0].tolist() == [0.0, 1.0, 2.0] and en[:, 0].tolist() == [3.0, 4.0, 5.0]
    assert port.tolist() == [3.0, 0.0] and slot.tolist() == [3.0, 4.0, 5.0, 0.0]
