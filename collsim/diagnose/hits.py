"""``Hit``: one piece of computed evidence for a cause (where, why, weight), what every check of
``collsim.diagnose.checks`` and ``collsim.diagnose.measurement_checks`` returns."""
from __future__ import annotations

from dataclasses import dataclass

LARGE = 64 << 20      # bytes: the sizes where busbw is near its peak


@dataclass(frozen=True)
class Hit:
    """``where`` (file:line), ``why`` (one sentence), ``weight`` (score points)."""

    where: str
    why: str
    weight: float
