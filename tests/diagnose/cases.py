"""The diagnose cases under tests/data/diagnose: public ones (one folder each, case.json with the source URL,
the maintainer's named cause and quote, and the arguments the user's prose supplies) and synthetic ones (one
per label)."""
import json
from pathlib import Path

from collsim.diagnose import diagnose
from collsim.units import parse_size

DATA = Path(__file__).resolve().parents[1] / "data" / "diagnose"
PUBLIC = sorted(p for p in DATA.iterdir() if p.is_dir() and p.name not in ("synthetic", "pastes"))
PASTES = DATA / "pastes"   # single public pastes, one per input kind (tests/diagnose/test_pastes.py)
SYNTHETIC = sorted(p for p in (DATA / "synthetic").iterdir() if p.is_dir())


def case(folder: Path) -> dict:
    return json.loads((folder / "case.json").read_text())


def files(folder: Path) -> list:
    return sorted(str(f) for f in folder.iterdir() if f.name not in ("case.json", "cluster.yaml"))


def run(folder: Path) -> tuple:
    """(case.json, the report, the 1-based rank of the named cause or None)."""
    c = case(folder)
    args = c.get("args", {})
    measured = [(parse_size(m.split("=")[0]), float(m.split("=")[1])) for m in args.get("measured", [])]
    report = diagnose(files(folder), str(folder / args["cluster"]) if args.get("cluster") else None, measured)
    labels = [x["label"] for x in report["causes"]]
    return c, report, labels.index(c["label"]) + 1 if c["label"] in labels else None
