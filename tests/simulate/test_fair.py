"""collsim.simulate.fair: max-min fair shares of a port; the engine's ports (collsim.simulate.events) against them."""
import pytest

from collsim.core.schedule import Schedule
from collsim.machine.topology import Topology
from collsim.simulate import simulate


def test_rates_split_fairly_and_give_the_capped_what_they_ask():
    from collsim.simulate.fair import rates
    assert rates([1.0, 1.0]) == [0.5, 0.5]
    assert rates([0.1, 1.0, 1.0]) == pytest.approx([0.1, 0.45, 0.45])
    assert sum(rates([0.2, 0.2])) == pytest.approx(0.4)                # caps below the port leave it idle


def test_a_port_ends_jobs_in_order_of_their_service():
    topo = Topology.uniform(2, 0.0, 1e-9)                   # 1 GB/s, no latency
    two = Schedule.from_steps(2, 3000, [[(0, 1, 0, 1000, "copy", 0), (0, 1, 1000, 2000, "copy", 1)]], itemsize=1)
    r = simulate(two, topo)
    # both at half the rate until the first is done at 2 us, then the second alone: 1 us more
    assert r.arrive == pytest.approx([2e-6, 3e-6])
