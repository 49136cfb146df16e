"""The ``collsim`` command line.

Each sub-command lives in a module of this package that defines
``register(subparsers)``; the module is listed in ``COMMAND_MODULES``. Modules
import heavy libraries (matplotlib, torch) inside their handlers, never at the
top, so ``collsim --help`` and fast paths stay fast.

Errors a user can cause raise ``CollsimError``; ``main`` prints them as one
line ``collsim: error: ...`` on stderr and returns exit code 2.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from collsim.errors import CollsimError

COMMAND_MODULES = [
    "collsim.cli.schedule",
    "collsim.cli.simulate",
    "collsim.cli.measure",
    "collsim.cli.fit",
    "collsim.cli.nccl",
    "collsim.cli.demo",
]


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad argument as one line and exit code 2."""

    def error(self, message):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="collsim", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")   # figures go to files: no display needed
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CollsimError as e:
        print(f"collsim: error: {e}", file=sys.stderr)
        return 2
    except FileNotFoundError as e:
        print(f"collsim: error: no such file: {e.filename}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as e:  # a directory, no permission, a full disk: still one line
        print(f"collsim: error: {e.filename}: {e.strerror}" if e.filename else f"collsim: error: {e}",
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
