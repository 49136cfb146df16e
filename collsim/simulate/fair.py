"""A port shared fairly by the transfers crossing it: processor sharing with a cap per transfer.

At any time the transfers on a port split its rate max-min fairly: each gets the same share, or its cap
(``Costs.share``, what one channel moves by itself) if that is less, the others splitting what it leaves
(``rates``). A transfer needs ``size`` seconds of the whole port; it is done when it has been served that much.

``Port`` is the engine's version: when every transfer on the port has the same cap (one protocol on one link
class, as in NCCL's schedules) all are served at one rate and a virtual clock (the service each has had,
seconds) orders their ends in a heap, O(log n) per change; otherwise the shares are recomputed by ``rates``.
"""
from __future__ import annotations

import heapq

EPS = 1e-12      # service left (seconds) below which a transfer is done: the rounding of the virtual clock


def rates(caps: list[float]) -> list[float]:
    """Max-min fair shares of one port (its rate 1) among transfers that take at most ``caps`` of it."""
    order = sorted(range(len(caps)), key=caps.__getitem__)
    out, left, n = [0.0] * len(caps), 1.0, len(caps)
    for k, i in enumerate(order):
        level = left / (n - k)
        r = caps[i] if caps[i] < level else level
        out[i] = r
        left -= r
    return out


class Port:
    """One port's transfers: ``add`` at time t, ``next_done`` the time the next one ends (inf: none),
    ``advance`` to t returns the transfers done by then."""

    __slots__ = ("t", "jobs", "cap", "v", "rate", "heap", "mixed")

    def __init__(self):
        self.t, self.jobs, self.cap, self.v, self.rate, self.heap, self.mixed = 0.0, {}, -1.0, 0.0, 0.0, [], False

    def _serve(self, t: float) -> None:
        dt = t - self.t
        if dt > 0 and self.jobs:
            if self.mixed:
                for job in self.jobs.values():
                    job[0] -= job[2] * dt
            else:
                self.v += self.rate * dt
        self.t = t

    def _rates(self) -> None:
        n = len(self.jobs)
        if not n:
            self.rate, self.mixed, self.cap = 0.0, False, -1.0
        elif self.mixed:
            ids = list(self.jobs)
            for i, r in zip(ids, rates([self.jobs[i][1] for i in ids])):
                self.jobs[i][2] = r
        else:
            self.rate = self.cap if self.cap < 1.0 / n else 1.0 / n

    def add(self, t: float, i: int, size: float, cap: float) -> None:
        self._serve(t)
        if not self.mixed and self.jobs and cap != self.cap:          # two caps: recompute the shares each time
            for finish, j in self.heap:
                self.jobs[j] = [finish - self.v, self.cap, 0.0]
            self.heap, self.mixed = [], True
        if self.mixed:
            self.jobs[i] = [size, cap, 0.0]
        else:
            self.cap = cap
            self.jobs[i] = None
            heapq.heappush(self.heap, (self.v + size, i))
        self._rates()

    def next_done(self) -> float:
        if not self.jobs:
            return float("inf")
        if self.mixed:
            return self.t + min(left / r for left, _, r in self.jobs.values())
        return self.t + max(self.heap[0][0] - self.v, 0.0) / self.rate

    def advance(self, t: float) -> list[int]:
        self._serve(t)
        done = []
        if self.mixed:
            done = [i for i, job in self.jobs.items() if job[0] <= EPS]
        else:
            while self.heap and self.heap[0][0] - self.v <= EPS:
                done.append(heapq.heappop(self.heap)[1])
        for i in done:
            del self.jobs[i]
        if done:
            if self.mixed and len(self.jobs) and len({job[1] for job in self.jobs.values()}) == 1:
                self.cap = next(iter(self.jobs.values()))[1]          # one cap again: back to the virtual clock
                self.heap = [(self.v + job[0], j) for j, job in self.jobs.items()]
                heapq.heapify(self.heap)
                self.jobs = dict.fromkeys(self.jobs)
                self.mixed = False
            self._rates()
        return done
