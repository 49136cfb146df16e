"""collsim.simulate.heaps: the engine's heaps keep their least (time, seq) on top; an indexed heap moves items."""
from collsim.simulate.heaps import new_heap, pop, push, put


def drain(heap, size, indexed):
    out = []
    while size:
        out.append((int(heap[2][0]), float(heap[0][0])))
        size = pop(*heap, size, indexed)
    return out


def test_a_queue_gives_its_items_by_time_then_by_seq():
    heap = new_heap(8, 1)
    size = 0
    for seq, (item, t) in enumerate([(3, 2.0), (1, 1.0), (5, 2.0), (0, 0.5), (7, 1.0)]):
        size = push(*heap[:3], size, item, t, seq)
    assert drain(heap, size, False) == [(0, 0.5), (1, 1.0), (7, 1.0), (3, 2.0), (5, 2.0)]


def test_put_moves_an_item_that_is_in():
    heap = new_heap(4, 4)
    size = 0
    for seq, (item, t) in enumerate([(0, 1.0), (1, 2.0), (2, 3.0), (3, 4.0)]):
        size = put(*heap, size, item, t, seq)
    size = put(*heap, size, 2, 0.5, 4)               # earlier
    size = put(*heap, size, 0, 9.0, 5)               # later
    size = put(*heap, size, 3, 3.0, 6)               # a little earlier, still below its parent
    assert size == 4 and drain(heap, size, True) == [(2, 0.5), (1, 2.0), (3, 3.0), (0, 9.0)]
    assert (heap[3] == -1).all()                     # every item left: no place kept
