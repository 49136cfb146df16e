"""What a measured run is judged against: the algorithm that ran, and whether collsim was fitted on
it.

The algorithm comes, first found first, from ``--algo`` (``algo``), from ``NCCL_ALGO`` naming one
algorithm in the files (an env dump, a command line, a run's own metadata), or from NCCL's per-call
``AllReduce: <bytes> Bytes -> Algo <name> ...`` lines (NCCL_DEBUG_SUBSYS=TUNING or COLL; per size,
the largest size's algorithm for sizes the log does not name). None: the files do not say, and the
report shows Ring and Tree forced beside NCCL's choice (``collsim.diagnose.verdict``).

A run is in-sample when its rows (size, time) are those of a log the simulation's per-transfer costs
were fitted on (``collsim/fitted/sim_params.json``, ``meta.fit.<algo>.files``, read from the bundled
data/): its ratio to the prediction then measures the fit, not the model.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from collsim.diagnose.sources import read_source
from collsim.errors import CollsimError
from collsim.measure.bundled import data_root
from collsim.nccl import NCCL_ALGOS, canonical
from collsim.predict.context import FORCED_ALGOS

FITTED = Path(__file__).resolve().parent.parent / "fitted" / "sim_params.json"
UNKNOWN_SHOWN = ("Ring", "Tree")   # forced beside NCCL's choice when the files do not say what ran


@dataclass
class Ran:
    """The algorithm of a run: ``algo`` for every size (None: unknown), ``by_size`` from NCCL's
    per-call lines, ``where`` it was read (``--algo``, ``file:line``)."""

    algo: str | None = None
    by_size: dict = field(default_factory=dict)
    where: str = ""

    def for_size(self, nbytes: int) -> str:
        """NCCL's name of the algorithm that ran at ``nbytes``, or "default" (NCCL's choice)."""
        return self.by_size.get(nbytes) or self.algo or "default"

    @property
    def known(self) -> bool:
        return self.algo is not None or bool(self.by_size)


def algorithm_that_ran(ev, algo: str | None = None) -> Ran:
    """The ``Ran`` of the files' evidence ``ev`` (``collsim.diagnose.evidence.Evidence``) and
    ``--algo``."""
    if algo is not None:
        try:
            return Ran(canonical(algo, FORCED_ALGOS), where="--algo")
        except CollsimError as e:
            raise CollsimError(f"algorithm {algo!r:.40}: {str(e).split('; ', 1)[-1]}") from None
    value, where = ev.env.get("NCCL_ALGO", ("", ""))
    try:
        return Ran(canonical(value.strip(), NCCL_ALGOS), where=where)
    except CollsimError:   # unset, a list or an exclusion (^NVLS): not one algorithm
        pass
    for src in ev.sources:
        choices = src.log.choices_by_size("AllReduce") if src.log is not None else {}
        if choices:
            line = next(n for n, text in enumerate(src.lines, 1) if "Bytes -> Algo" in text)
            largest = choices[max(choices)][0]
            return Ran(largest, {size: a for size, (a, _) in choices.items()}, f"{src.name}:{line}")
    return Ran()


@lru_cache(maxsize=1)
def _fitted_rows() -> dict:
    """{(size, time_us) rows: the fitted log's path} of every calibration log in the bundled
    data."""
    meta = json.loads(FITTED.read_text()).get("meta", {})
    out = {}
    for entry in meta.get("fit", {}).values():
        for name in entry.get("files", ()):
            path = data_root() / name.removeprefix("data/")
            if not path.is_file():
                continue
            for run in read_source(path).runs:
                if run.rows:
                    out.setdefault(_fingerprint(run.rows), name)
    return out


def _fingerprint(rows) -> tuple:
    return tuple(sorted((r["bytes"], round(r["time_us"], 1)) for r in rows))


def fitted_on(run) -> str | None:
    """The calibration log ``run`` is (its path in the checkout), or None."""
    return _fitted_rows().get(_fingerprint(run.rows)) if run.rows else None
