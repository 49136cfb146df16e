"""A ring on ranks that are all alike, simulated on a few of
them: the quotient by a shift of every rank.

``collsim.algorithms.ring.ring`` on one node of GPUs with a port each way (no pair links), or on
nodes of one GPU with a NIC each (no fabric, no degraded NIC), runs every channel around 0, 1, ...,
P-1, and every rank's ports are alike: the shift r -> r + M (mod P) maps the schedule, the machine
and so every event of the simulation onto themselves. Positions 0..M-1 running the whole ring's
2(P-1) steps per loop (position M-1 sends to position 0, which stands for position M;
``collsim.algorithms.ring.ring_quotient``) then give every transfer the time of its images, exactly
when every chunk holds as many elements (the element count a multiple of the ring's granularity, P x
slices x channels x loops), and simulate P / M times fewer transfers; M is the smallest prime factor
of P (2 for even P). Every other case is simulated whole (``Shift.whole`` says why).

``resources`` lists the whole ring's ports from the quotient's: rank r's as rank r mod M's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from collsim.algorithms import get
from collsim.algorithms.ring import ring_quotient
from collsim.core.schedule import Schedule
from collsim.machine.topology import Topology
from collsim.simulate.resources import port_names


@dataclass(frozen=True)
class Shift:
    """The quotient of a ring of ``ranks`` ranks on ``kept`` of them (``schedule``; None: run it
    whole, ``whole`` says why); ``steps`` and ``transfers`` are the whole ring's."""

    ranks: int
    kept: int
    steps: int
    transfers: int
    schedule: Schedule | None = None
    whole: str = ""

    @property
    def symmetry(self) -> dict:
        """What the simulation ran: ranks and ranks
        simulated, and the shift (or why it ran whole)."""
        d = {"ranks": self.ranks,
             "ranks_simulated": self.kept if self.schedule is not None else self.ranks}
        if self.schedule is not None:
            d["shift"] = (f"every rank {self.kept} on (ranks alike): rank r stands for ranks r + "
                          f"{self.kept} k")
        else:
            d["whole_because"] = self.whole
        return d

    def resources(self, table: list[dict], topology: Topology) -> list[dict]:
        """The whole ring's ``resource_table`` from the quotient's ``table``: each port of rank r
        (GPU, or node of one GPU) is the kept rank r mod ``kept``'s, in ``port_names`` order."""
        rows = {row["name"]: row for row in table}
        mod = lambda m: f"{m[1]}{int(m[2]) % self.kept}"          # noqa: E731
        out = []
        for name in (n for names in port_names(topology) for n in names):
            row = rows.get(re.sub(r"(gpu|node)(\d+)", mod, name))
            if row is not None:
                out.append({**row, "name": name})
        return out


def smallest_factor(p: int) -> int:
    """The smallest prime factor of ``p`` >= 2."""
    return next((k for k in range(2, int(p ** 0.5) + 1) if p % k == 0), p)


def ring_shift(ranks: int, count: int, itemsize: int, params: dict, topology: Topology) -> Shift:
    """The quotient (module docstring) of ``ring(ranks, count, itemsize, **params)`` (``params`` as
    ``collsim.algorithms.resolve`` gives them) on ``topology``, or why the ring runs whole."""
    algo, q = get("ring"), {"loops": 1, **params}
    c, slices, loops = q["channels"], q["slices"], q["loops"]
    steps = 2 * (ranks - 1) * slices * loops
    kept = smallest_factor(ranks)
    t = topology
    whole = ("its ranks are not alike: rail rings across nodes"
             if q.get("gpus_per_node") or q.get("direct")
             else "pair links between GPUs" if t.links_per_pair
             else "nodes of several GPUs" if t.nodes > 1 and t.gpus_per_node > 1
             else "a fabric above the NICs" if t.nodes > 1 and t.fabric
             else "a degraded NIC" if t.slow_nics
             else f"{count} elements are not a multiple of {algo.granularity(ranks, q)} (unequal "
                  "chunks)"
             if count % algo.granularity(ranks, q) or count == 0
             else f"{ranks} ranks: no smaller shift" if kept == ranks else "")
    if whole:
        return Shift(ranks, ranks, steps, algo.transfer_bound(ranks, q), whole=whole)
    s = ring_quotient(ranks, count, itemsize, slices=slices, channels=c, gpus_per_node=1,
                      loops=loops, nodes=kept)
    return Shift(ranks, kept, steps, algo.transfer_bound(ranks, q), schedule=s)
