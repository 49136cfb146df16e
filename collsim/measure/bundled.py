"""Where the bundled measurements are: the checkout's ``data/``, or the installed package's copy of
it.

A wheel carries ``data/`` as the package data ``collsim/data`` (pyproject ``[tool.setuptools]``), so
``collsim demo`` and the notebooks find the 2 x H200 runs and the public logs from any folder;
run from a checkout, the repository's own ``data/`` is used (the same files).
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from collsim.errors import CollsimError

CHECKOUT_DATA = Path(__file__).resolve().parents[2] / "data"


def data_root() -> Path:
    """The folder of the bundled measurements (``h200x2/``, ``h200x1/``, ``public/``)."""
    try:
        installed = Path(str(resources.files("collsim") / "data"))
    # pragma: no cover - collsim is always importable here
    except (ModuleNotFoundError, TypeError):
        installed = None
    for root in (installed, CHECKOUT_DATA):
        if root is not None and (root / "h200x2").is_dir():
            return root
    raise CollsimError("no bundled measurements: neither the installed package's collsim/data nor "
                       "a checkout's data/ folder holds h200x2/")


def data_path(*parts: str) -> Path:
    """A bundled file or folder, e.g. ``data_path("h200x2", "runner")``."""
    return data_root().joinpath(*parts)
