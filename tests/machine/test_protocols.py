"""collsim.machine.protocols: protocol costs refuse what is not a cost."""
import pytest

from collsim.errors import CollsimError
from collsim.machine.protocols import PathCosts, ProtocolCosts, generic


def test_costs_are_finite_and_not_negative():
    for bad in ({"latency": -1.0}, {"latency": 0.0, "overhead": float("nan")}, {"latency": 0.0, "fill": -0.1},
                {"latency": True}):
        with pytest.raises(CollsimError, match="must be a finite number >= 0"):
            PathCosts(**bad)
    with pytest.raises(CollsimError, match="efficiency must be in"):
        ProtocolCosts("LL", 0.0, 0, PathCosts(0.0), PathCosts(0.0))
    with pytest.raises(CollsimError, match="window must be an integer"):
        ProtocolCosts("LL", 0.5, -1, PathCosts(0.0), PathCosts(0.0))


def test_generic_costs_are_the_links_alphas_and_nothing_else():
    g = generic(1e-6, 5e-6)
    assert (g.efficiency, g.window, g.path(0).latency, g.path(1).latency) == (1.0, 0, 1e-6, 5e-6)
    assert g.path(2) is g.intra and g.intra.overhead == g.intra.channel_beta == g.intra.fill == 0
