"""collsim.core.schedule: JSON round trip and errors, shape errors, channels and switches."""
import json

import numpy as np
import pytest

from collsim.core.compose import ScheduleBuilder, concat
from collsim.core.schedule import COPY, REDUCE, Schedule, ScheduleError, Transfer
from collsim.errors import CollsimError


def small():
    return Schedule.from_steps(3, 6, [[(0, 1, 0, 2, "reduce"), (1, 2, 2, 2, "reduce")],
                                      [Transfer(2, 0, 4, 2, "copy")],
                                      [{"src": 1, "dst": 0, "offset": 0, "count": 1, "op": "copy"}]],
                               itemsize=8, name="x", meta={"k": 1})


def test_json_round_trip_keeps_everything():
    s = small()
    d = json.loads(s.to_json())
    assert d["ranks"] == 3 and d["count"] == 6 and d["itemsize"] == 8 and d["name"] == "x"
    assert d["steps"][1] == [{"src": 2, "dst": 0, "offset": 4, "count": 2, "op": "copy", "channel": 0}]
    assert "switches" not in d
    t = Schedule.from_json(s.to_json(indent=1))
    for col in ("src", "dst", "offset", "length", "op", "step_ptr"):
        assert np.array_equal(getattr(s, col), getattr(t, col))
    assert (t.ranks, t.count, t.itemsize, t.name, t.meta) == (3, 6, 8, "x", {"k": 1})
    assert t.steps == s.steps and t.n_steps == 3 and t.n_transfers == 4
    assert list(t.step_index) == [0, 0, 1, 2]


@pytest.mark.parametrize("text, words", [
    ("{", "schedule: not valid JSON (line 1 column 2"),
    ("[" * 5000 + "]" * 5000, "nested deeper than 32"),
    ('{"ranks": 10000000000000000000000, "count": 4, "steps": []}', "'ranks' must be <= 1048576"),
    ('{"ranks": 2, "count": 4, "itemsize": 99999, "steps": []}', "'itemsize' must be <= 1024"),
    ('{"ranks": 2, "count": 4, "steps": [[{"src": 0, "dst": 1, "offset": 99999999999999999999, "count": 1, '
     '"op": "copy"}]]}', "'offset' must be an integer from"),
    ('{"ranks": 2, "count": 4, "steps": [[{"src": 0, "dst": 1, "offset": 0, "count": 1, "op": null}]]}',
     "'op' must be 'reduce' or 'copy', got None"),
    ('{"ranks": 2, "count": 4, "steps": [[{"src": 0, "dst": 1, "offset": 0, "count": 1, "op": [0]}]]}',
     "'op' must be 'reduce' or 'copy', got [0]"),
    ('{"ranks": 2, "count": 4, "steps": [[[[0]]]]}', "steps[0][0] is not an object"),
    ('{"ranks": 2, "count": 4, "name": 7, "steps": []}', "'name' must be a string"),
    ("[1, 2]", "JSON object"),
    ('{"ranks": 2, "count": 4}', "'steps'"),
    ('{"ranks": 2.5, "count": 4, "steps": []}', "'ranks' must be an integer"),
    ('{"ranks": 2, "count": 4, "steps": [1]}', "list of lists"),
    ('{"ranks": 2, "count": 4, "steps": [[3]]}', "steps[0][0] is not an object"),
    ('{"ranks": 2, "count": 4, "steps": [[{"src": 0, "dst": 1, "offset": 0}]]}', "'count'"),
    ('{"ranks": 2, "count": 4, "steps": [[{"src": 0, "dst": 1, "offset": 0, "count": 1, "op": "add"}]]}',
     "unknown op"),
    ('{"ranks": 0, "count": 4, "steps": []}', "ranks must be >= 1"),
    ('{"ranks": 2, "count": -1, "steps": []}', "count must be >= 0"),
    ('{"ranks": 2, "count": 4, "steps": [[{"src": 0, "dst": 1, "offset": 0, "count": true, "op": "copy"}]]}',
     "must be an integer"),
    ('{"ranks": 2, "count": 4, "steps": [[{"src": 0, "dst": 1, "offset": 0, "count": 1, "op": "copy",'
     ' "channel": "a"}]]}', "'channel' must be an integer"),
    ('{"ranks": 2, "count": 4, "steps": [[{"src": 0, "dst": 1, "offset": 0, "count": 1, "op": "copy",'
     ' "channel": -1}]]}', "'channel' must be from 0 to"),
    ('{"ranks": 2, "count": 4, "switches": -1, "steps": []}', "switches must be >= 0"),
    ('{"ranks": 2, "count": 4, "switches": 1.5, "steps": []}', "'switches' must be an integer"),
])
def test_malformed_json_gives_one_line_errors(text, words):
    with pytest.raises(CollsimError) as e:
        Schedule.from_json(text)
    assert words in str(e.value) and "\n" not in str(e.value)
    assert isinstance(e.value, ScheduleError)


def test_shape_errors():
    with pytest.raises(ScheduleError, match="step_ptr"):
        Schedule(2, 4, 4, [0], [1], [0], [1], [0], [0, 2])
    with pytest.raises(ScheduleError, match="op codes"):
        Schedule(2, 4, 4, [0], [1], [0], [1], [5], [0, 1])


def test_the_network_endpoint_travels_through_builder_json_and_concat():
    b = ScheduleBuilder(4, 4, switches=2, network=1)         # two NVSwitches (4, 5), the network's switch 6
    b.add_step([0, 2], 6, 0, 4, REDUCE)
    b.add_step(6, [1], 0, 4, COPY)
    s = b.build()
    assert (s.endpoints, s.network_endpoint) == (7, 6) and "network" in repr(s)
    t = Schedule.from_json(s.to_json())
    assert t.network == 1 and json.loads(s.to_json())["network"] == 1 and t.steps == s.steps
    assert concat([s, t]).network == 1 and Schedule(2, 4, 4, [], [], [], [], [], [0]).network_endpoint is None
    with pytest.raises(ScheduleError, match="network must be 0 or 1"):
        Schedule(2, 4, 4, [], [], [], [], [], [0], network=2)
    with pytest.raises(ScheduleError, match="'network' must be <= 1"):
        Schedule.from_dict({"ranks": 2, "count": 1, "steps": [], "network": 3})
    with pytest.raises(ScheduleError, match="differ in ranks, count, itemsize, switches, network or collective"):
        concat([s, ScheduleBuilder(4, 4, switches=2).build()])


def test_channels_and_switches_travel_through_builder_json_and_concat():
    b = ScheduleBuilder(2, 4, switches=1)
    b.add_step([0, 1], 2, [0, 2], 2, REDUCE, channel=[0, 1])       # both GPUs reduce into the switch
    b.add_steps(np.array([[2, 2]]), np.array([[0, 1]]), 0, 4, COPY, channel=np.array([[3, 1]]))
    s = b.build()
    assert s.switches == 1 and s.endpoints == 3 and s.n_channels == 4
    assert list(s.channel) == [0, 1, 3, 1] and s.transfer(2) == Transfer(2, 0, 0, 4, "copy", 3)
    d = json.loads(s.to_json())
    assert d["switches"] == 1 and [t["channel"] for t in d["steps"][0]] == [0, 1]
    t = Schedule.from_json(s.to_json())
    assert t.switches == 1 and np.array_equal(t.channel, s.channel) and t.steps == s.steps
    c = concat([s, s])
    assert list(c.channel) == [0, 1, 3, 1] * 2 and c.switches == 1
    assert "channels=4, switches=1" in repr(s)
    # tuples may carry a channel, dicts may leave it out
    u = Schedule.from_steps(2, 2, [[(0, 1, 0, 2, "copy", 5)], [{"src": 1, "dst": 0, "offset": 0, "count": 2,
                                                                  "op": "copy"}]])
    assert list(u.channel) == [5, 0]
    with pytest.raises(ScheduleError, match="differ"):
        concat([s, u])
