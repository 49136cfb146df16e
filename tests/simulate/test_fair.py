"""collsim.simulate.fair: max-min fair shares of a port, and the engine's Port on its virtual clock."""
import pytest

from collsim.simulate.fair import Port, rates


def test_rates_split_fairly_and_give_the_capped_what_they_ask():
    assert rates([1.0, 1.0]) == [0.5, 0.5]
    assert rates([0.1, 1.0, 1.0]) == pytest.approx([0.1, 0.45, 0.45])
    assert sum(rates([0.2, 0.2])) == pytest.approx(0.4)                # caps below the port leave it idle


def test_port_ends_jobs_in_order_of_their_service():
    port = Port()
    port.add(0.0, 0, 1.0, 1.0)                  # alone: the whole rate
    port.add(0.5, 1, 1.0, 1.0)                  # from 0.5 both at half
    assert port.next_done() == pytest.approx(1.5)
    assert port.advance(1.5) == [0] and port.next_done() == pytest.approx(2.0)
    assert port.advance(2.0) == [1] and port.next_done() == float("inf")


def test_mixed_caps_recompute_the_shares_and_return_to_the_clock():
    port = Port()
    port.add(0.0, 0, 1.0, 0.25)                 # capped at a quarter
    port.add(0.0, 1, 1.0, 1.0)                  # takes the other three quarters
    assert port.next_done() == pytest.approx(1 / 0.75)
    assert port.advance(1 / 0.75) == [1]
    assert port.next_done() == pytest.approx(4.0)
