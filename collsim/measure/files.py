"""Any measurement file as ``Measurements``: runner JSON Lines as they are, published logs (JSON
Lines whose line 1 is ``{"kind": "meta", ...}``, ``collsim.measure.public_log``), nccl-tests output
(text log or -J JSON) through ``collsim.measure.nccl_tests``, labelled ALGO/PROTO from the caller or
the file name."""
from __future__ import annotations

import csv
from pathlib import Path

from collsim.errors import CollsimError
from collsim.inputs import read_text
from collsim.measure import Measurements, load
from collsim.measure.nccl_tests import import_nccl_tests
from collsim.measure.public_log import is_public_log, load_public_log
from collsim.nccl import canonical_pair
from collsim.outputs import atomic_write, csv_cell


def label_from_name(path) -> str:
    """nccl-tests log label from its file name: ``graph_Ring_LL.log`` -> "Ring/LL",
    ``eager_default.log`` -> "default"."""
    tokens = Path(path).stem.split("_")
    if tokens[-1].lower() == "default":
        return "default"
    try:
        return "/".join(canonical_pair(*tokens[-2:]))
    except (CollsimError, TypeError):
        raise CollsimError(f"{path}: cannot tell algorithm/protocol from the name; pass --label "
                           "ALGO/PROTO") from None


def load_file(path, label: str | None = None) -> Measurements:
    """``Measurements`` from a runner ``.jsonl`` file, a published log or nccl-tests output
    (labelled ``label``, else from the file name)."""
    if str(path).endswith(".jsonl"):
        first = read_text(path, "measurement file").split("\n", 1)[0]
        return load_public_log(path) if is_public_log(first) else load(path)
    if not Path(path).exists() or Path(path).is_dir():   # say that before asking for a label
        read_text(path, "measurement file")
    return import_nccl_tests(path, label=label or label_from_name(path))


def require_files(*paths) -> list[Path]:
    """The paths, or one CollsimError naming the first that is not a file."""
    for p in paths:
        if not Path(p).is_file():
            raise CollsimError(f"{p}: missing (see the README beside the data for how it is "
                               "measured)")
    return [Path(p) for p in paths]


def to_csv(m: Measurements, path) -> None:
    """Write the result records of ``m`` as CSV (one row per record; text cells that a
    spreadsheet would run as formulas neutralised, ``collsim.outputs.csv_cell``), in full or not
    at all."""
    cols = m.columns()
    with atomic_write(path, "CSV file") as f:
        w = csv.writer(f)
        w.writerow([csv_cell(c) for c in cols])
        for r in m.records:
            w.writerow(["" if r.get(c) is None else csv_cell(r.get(c)) for c in cols])
