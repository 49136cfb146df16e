"""collsim.simulate.heaps: the engine's indexed heap keeps its least (time, seq) on top and moves items in place."""
from collsim.simulate.heaps import new_heap, pop, put


def drain(heap, size):
    out = []
    while size:
        out.append((int(heap[2][0]), float(heap[0][0])))
        size = pop(*heap, size)
    return out


def test_items_come_out_by_time_then_by_seq():
    heap = new_heap(8, 8)
    size = 0
    for seq, (item, t) in enumerate([(3, 2.0), (1, 1.0), (5, 2.0), (0, 0.5), (7, 1.0)]):
        size = put(*heap, size, item, t, seq)
    assert drain(heap, size) == [(0, 0.5), (1, 1.0), (7, 1.0), (3, 2.0), (5, 2.0)]
    assert (heap[3] == -1).all()                     # every item left: no place kept


def test_put_moves_an_item_that_is_in():
    heap = new_heap(4, 4)
    size = 0
    for seq, (item, t) in enumerate([(0, 1.0), (1, 2.0), (2, 3.0)]):
        size = put(*heap, size, item, t, seq)
    size = put(*heap, size, 2, 0.5, 3)               # earlier
    size = put(*heap, size, 0, 9.0, 4)               # later
    assert size == 3 and drain(heap, size) == [(2, 0.5), (1, 2.0), (0, 9.0)]
