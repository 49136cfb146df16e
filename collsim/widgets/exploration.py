"""What the ScheduleExplorer shows for one configuration, computed without ipywidgets: the rank
counts an algorithm can run on a preset (``valid_ranks``), the preset resized to them
(``topology_for``), and ``explore``: the schedule (cached), its simulation, grid states and checker
report, each on first use.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

from collsim.algorithms import ALGORITHMS, build_schedule, get
from collsim.core.checker import check
from collsim.errors import CollsimError
from collsim.machine.presets import PRESETS, get_preset
from collsim.simulate import simulate
from collsim.viz.grid import grid_states

SIZES = [2**k for k in range(10, 31, 2)]          # 1 KiB .. 1 GiB, bytes per rank
MAX_RANKS = 64
def valid_ranks(algo: str, preset: str, max_ranks: int = MAX_RANKS) -> list[int]:
    """The rank counts ``explore`` accepts for ``algo`` on ``preset``: 2 .. G (one node of G GPUs)
    and whole nodes 2G, 3G, ... up to ``max_ranks``; NVLink SHARP algorithms only where the preset
    has it, NVLS itself on one node only; CollNet only where the network's switches reduce (SHARP).
    Empty when the algorithm cannot run on the preset at all."""

    if preset not in PRESETS:
        raise CollsimError(f"unknown topology preset {preset!r}")
    record, topo = get(algo), PRESETS[preset]
    g = topo.gpus_per_node
    one_node = list(range(2, min(g, max_ranks) + 1))
    # CollNet: the network's switches must reduce (SHARP)
    if record.network and topo.sharp_us is None:
        return []
    if record.switches:
        if topo.nvls is None:
            return []
        if "gpus_per_node" not in record.params:        # NVLS: the switch of one node
            return one_node
    return one_node + list(range(2 * g, max_ranks + 1, g))


def topology_for(preset: str, ranks: int):
    """The preset resized to ``ranks`` GPUs: one node when ranks fit in a node, else full nodes."""

    if preset not in PRESETS:
        raise CollsimError(f"unknown topology preset {preset!r}")
    gpn = min(ranks, PRESETS[preset].gpus_per_node)
    if ranks % gpn:
        raise CollsimError(f"{ranks} ranks do not fill nodes of {gpn} GPUs on {preset}: "
                           f"pick a multiple of {gpn}")
    return get_preset(preset, nodes=ranks // gpn, gpus_per_node=gpn)


@dataclass
class Exploration:
    """Everything the explorer shows for one configuration (results computed on first use)."""

    algo: str
    schedule: object        # collsim.core.schedule.Schedule
    topology: object        # collsim.machine.topology.Topology

    @cached_property
    def result(self):
        """``collsim.simulate.SimResult`` of the schedule on the topology (simulated on first
        use)."""

        return simulate(self.schedule, self.topology)

    @property
    def simulated(self) -> bool:
        """Whether ``result`` has been computed."""
        return "result" in self.__dict__

    @property
    def summary(self) -> str:
        sched, topo = self.schedule, self.topology
        t = self.result.time_s * 1e6
        shown = f"{t / 1e3:.4g} ms" if t >= 1e4 else f"{t:.4g} µs"
        call = (f" (the timeline's transfers plus the machine's {topo.call_us:g} µs fixed cost per "
                "call)"
                if topo.call_us else "")
        return (f"{self.algo}, P={sched.ranks}, {sched.count * sched.itemsize} B per rank on "
                f"{topo.describe()}: {sched.n_steps} steps, {sched.n_transfers} transfers, "
                f"simulated {shown}{call}")

    @cached_property
    def states(self):
        """``collsim.viz.grid.GridStates``: the grid of every step (computed on first use)."""

        return grid_states(self.schedule)

    @property
    def verdict(self) -> str:
        """Whether the executed schedule leaves every rank with the exact sum (from ``states``)."""
        return ("every rank ends with each contribution exactly once" if self.states.complete()
                else "WRONG: some rank does not end with the exact sum")

    @cached_property
    def report(self):
        """``collsim.core.checker.check`` of the schedule (run on first use)."""

        return check(self.schedule)


def explore(algo: str, ranks: int, nbytes: int, preset: str, itemsize: int = 4) -> Exploration:
    """``algo`` on ``ranks`` GPUs of ``preset`` (``nbytes`` per rank), built (or reused) now.

    Schedules are cached per (algorithm, P, size, GPUs per node for two-level
    algorithms), so switching the topology of a flat algorithm builds nothing.
    The simulation (``.result``, ``.summary``), the execution (grid states,
    ``verdict``) and the full checker (``.report``) run on first use.
    """

    if not 1 <= ranks <= MAX_RANKS:
        raise CollsimError(f"ranks must be between 1 and {MAX_RANKS}, got {ranks}")
    topo = topology_for(preset, ranks)
    if algo not in ALGORITHMS:
        raise CollsimError(f"unknown algorithm {algo!r}")
    two_level = "gpus_per_node" in ALGORITHMS[algo].params
    return Exploration(algo, _build(algo, ranks, nbytes // itemsize, itemsize,
                              topo.gpus_per_node if two_level else None), topo)


@lru_cache(maxsize=32)
def _build(algo: str, ranks: int, count: int, itemsize: int, gpus_per_node):

    return build_schedule(algo, ranks, count, itemsize, gpus_per_node=gpus_per_node)
