"""Checking notebook exercises: compare a reader's answer with the value collsim computes."""
from __future__ import annotations

import math


def check_answer(name: str, answer, expected, rel: float = 0.02) -> str:
    """One line saying whether ``answer`` matches ``expected``.

    Numbers match within relative tolerance ``rel``; anything else must be
    equal. ``answer`` None means not answered yet. The line is printed and returned.
    """
    if answer is None:
        line = f"{name}: not answered yet (set the answer variable and run this cell again)"
    elif isinstance(expected, (int, float)) and not isinstance(expected, bool):
        ok = isinstance(answer, (int, float)) and math.isclose(answer, expected, rel_tol=rel)
        line = f"{name}: " + ("correct" if ok else f"not quite: {answer!r} is not within "
                                                      f"{rel:.0%} of the answer; try again")
    else:
        line = f"{name}: " + ("correct" if answer == expected else f"not quite: {answer!r}; try again")
    print(line)
    return line
