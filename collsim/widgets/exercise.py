"""Checking notebook exercises: compare a reader's answer with the value collsim computes, and say
why a wrong answer is wrong."""
from __future__ import annotations

import math

from collsim.core.checker import check


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def check_answer(name: str, answer, expected, rel: float = 0.02, why=()) -> str:
    """One line saying whether ``answer`` matches ``expected``.

    Numbers match within relative tolerance ``rel``; a wrong number is told how far off it is and in
    which direction. Anything else must be equal. ``why``: ``(wrong answer, what it means)`` pairs
    for the mistakes a reader is likely to make (a number matches within ``rel``): a wrong answer
    that is one of them is told what it means. ``answer`` None means not answered yet. The line is
    printed and returned.
    """
    if answer is None:
        line = f"{name}: not answered yet (set the answer variable and run this cell again)"
    elif _number(expected):
        ok = _number(answer) and math.isclose(answer, expected, rel_tol=rel)
        if ok:
            line = f"{name}: correct"
        elif not _number(answer):
            line = f"{name}: not quite: {answer!r} is not a number; try again"
        else:
            off = answer / expected - 1 if expected else math.inf
            how = (f"{abs(off):.0%} {'above' if off > 0 else 'below'}" if math.isfinite(off)
                   else "far from")
            line = f"{name}: not quite: {answer:.4g} is {how} the answer (tolerance {rel:.0%})"
            line += _reason(answer, why, rel) + "; try again"
    else:
        line = f"{name}: " + ("correct" if answer == expected else
                              f"not quite: {answer!r}{_reason(answer, why, rel)}; try again")
    print(line)
    return line


def _reason(answer, why, rel: float) -> str:
    for wrong, says in why:
        if ((_number(wrong) and _number(answer) and math.isclose(answer, wrong, rel_tol=rel))
                or answer == wrong):
            return f": {says}"
    return ""


def check_schedules(name: str, build, ranks=(2, 3, 4, 8), steps=None) -> str:
    """One line saying whether ``build(P)`` (a reader's schedule function of the rank count) is a
    correct AllReduce for every P in ``ranks`` (``collsim.core.checker.check``) with ``steps(P)``
    steps when given; a wrong one is told the first P and the checker's first wrong step. ``build``
    returning None means not answered yet. The line is printed and returned."""
    line = f"{name}: correct"
    for P in ranks:
        schedule = build(P)
        if schedule is None:
            line = f"{name}: not answered yet (complete the function and run this cell again)"
            break
        report = check(schedule)
        if not report.ok:
            line = f"{name}: not quite: P={P}: {report.summary().splitlines()[0]}; try again"
            break
        if steps is not None and schedule.n_steps != steps(P):
            line = (f"{name}: not quite: P={P}: a correct AllReduce, but in {schedule.n_steps} "
                    f"steps where the task asks for {steps(P)}; try again")
            break
    print(line)
    return line
