"""Interactive notebook pieces (ipywidgets 8, imported only when used).

- ``ScheduleExplorer`` (``collsim.widgets.schedule_explorer``): algorithm, P (only the
  values the machine allows), size, topology; step slider with Play and its speed over the
  chunk grid and link timeline.
- ``ChunksExplorer`` (``collsim.widgets.chunks_explorer``): the pipelined tree, a chunks
  slider and the contention policy, time against the chunk count.
- ``CostExplorer`` (``collsim.widgets.cost_explorer``): alpha-beta closed forms on nodes x
  GPUs x NICs, and where the fastest algorithm changes.
- ``MeasuredVsPredicted`` (``collsim.widgets.measured``): measured points of one
  configuration beside collsim's model and NCCL's own.
- ``DiagnoseBox`` (``collsim.widgets.diagnose_box``): paste or upload logs, see ``collsim
  diagnose``'s verdict, the expected curve against the measured one and the ranked causes.
- ``check_answer`` (``collsim.widgets.exercise``): the checker of notebook exercises.

``plain`` gives a status as text; ``in_widget`` turns a CLI message's flags into the widget's own
fields. Also: ``exploration`` (what ScheduleExplorer shows, computed without ipywidgets) and
``notebooks_html`` (executed HTML of every notebook, widget state kept).
"""
import asyncio
import gc
import html
import re


def plain(status: str) -> str:
    """The text of a widget's HTML status without its markup: what a printed status shows."""
    return html.unescape(re.sub(r"<[^>]+>", "", status))


def in_widget(message: str, fields: dict) -> str:
    """``message`` (one line the CLI would print) with each command-line phrase of ``fields``
    replaced by what a widget user does instead: a widget has boxes, not flags."""
    for flag, instead in fields.items():
        message = message.replace(flag, instead)
    return message


def settle_heap() -> None:
    """Collect garbage once, then move every object alive now (numpy, matplotlib, ipywidgets, a
    widget's caches) to Python's permanent generation (``gc.freeze``), so that a full collection
    that happens to run inside a later update scans only objects made since. Without it such a
    collection costs 40-65 ms in a notebook process on a 2-core machine, more than the 50 ms an
    update may take (benchmarks/bench_widgets.py reports collections inside slow updates).
    Frozen objects are never collected; only what is alive when a widget is built is frozen."""
    gc.collect()
    gc.freeze()


def running_loop():
    """The running asyncio loop (a Jupyter kernel's), or None outside one (tests, scripts)."""

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
