"""The ``collsim`` command line.

Each sub-command lives in a module of this package that defines
``register(subparsers)``; the module is listed in ``COMMAND_MODULES``. Modules
import heavy libraries (matplotlib, torch) inside their handlers, never at the
top, so ``collsim --help`` and fast paths stay fast.

What commands print goes through ``collsim.outputs.PrintableStream``: text a file
held cannot reach the terminal as control characters. Errors a user can cause
raise ``CollsimError``; ``main`` prints them as one line ``collsim: error: ...``
on stderr and returns exit code 2 (so do a missing file, a folder or a full disk
that an ``OSError`` reports, and running out of memory). Warnings print as one
line ``collsim: warning: ...``. Anything else is a bug in collsim: one line
``collsim: internal error: ...`` asking for a report, exit code 70; the traceback
only with ``COLLSIM_TRACEBACK=1``.

Modules: ``args`` (shared options), ``schedule`` (schedule, check, predict), ``simulate`` (simulate,
sweep; ``nccl_run``: simulate --cluster runs NCCL's schedule), ``nccl`` (predict-nccl;
``nccl_scale``: over a list of node counts), ``measure`` (show, import-nccl-tests, fidelity),
``fit`` (fit, explain), ``compare`` (compare), ``diagnose`` (diagnose), ``tuner`` (export-tuner),
``demo``.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import traceback
import warnings

from collsim import __version__
from collsim.errors import CollsimError, CollsimWarning
from collsim.inputs import MAX_MEMORY_BYTES, MEMORY_VARIABLE, memory_budget
from collsim.outputs import PrintableStream, printable

INTERNAL_ERROR = 70  # sysexits.h EX_SOFTWARE

COMMAND_MODULES = [
    "collsim.cli.schedule",
    "collsim.cli.simulate",
    "collsim.cli.measure",
    "collsim.cli.fit",
    "collsim.cli.compare",
    "collsim.cli.nccl",
    "collsim.cli.diagnose",
    "collsim.cli.tuner",
    "collsim.cli.demo",
]
# which module registers each command: ``collsim CMD`` imports that one alone (the others' imports,
# diagnose's patterns among them, would double a fast command's start-up); help and a command not
# listed build them all
COMMANDS = {"schedule": "collsim.cli.schedule", "check": "collsim.cli.schedule",
            "predict": "collsim.cli.schedule", "simulate": "collsim.cli.simulate",
            "sweep": "collsim.cli.simulate", "show": "collsim.cli.measure",
            "import-nccl-tests": "collsim.cli.measure", "fidelity": "collsim.cli.measure",
            "fit": "collsim.cli.fit", "explain": "collsim.cli.fit",
            "compare": "collsim.cli.compare",
            "predict-nccl": "collsim.cli.nccl", "diagnose": "collsim.cli.diagnose",
            "export-tuner": "collsim.cli.tuner", "demo": "collsim.cli.demo"}


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad argument as one line and exit code 2."""

    def error(self, message):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {printable(message)}\n")


def _memory(text: str) -> str:
    """--max-memory: checked as ``collsim.inputs.memory_budget`` reads it."""
    old = os.environ.get(MEMORY_VARIABLE)
    os.environ[MEMORY_VARIABLE] = text
    try:
        memory_budget()
    except CollsimError as e:
        raise argparse.ArgumentTypeError(str(e).replace(MEMORY_VARIABLE, "--max-memory")) from None
    finally:
        if old is None:
            del os.environ[MEMORY_VARIABLE]
        else:
            os.environ[MEMORY_VARIABLE] = old
    return text


def _command(argv: list[str]) -> str | None:
    """The sub-command ``argv`` names: its first word that is not an option or --max-memory's
    value (None: none)."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--max-memory":
            skip = True
        elif not word.startswith("-"):
            return word
    return None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``argv``'s command alone when it names one
    (``COMMANDS``)."""
    module = COMMANDS.get(_command(sys.argv[1:] if argv is None else argv))
    parser = OneLineParser(prog="collsim", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"collsim {__version__}")
    parser.add_argument("--max-memory", metavar="SIZE", type=_memory,
                        help="memory a command may hold by collsim's estimate, e.g. 16G (default "
                             f"{MAX_MEMORY_BYTES / 1e9:g} GB; also {MEMORY_VARIABLE}): larger work "
                             "is refused")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for name in [module] if module in COMMAND_MODULES else COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _say(kind: str, message) -> None:
    """One line on stderr, ``collsim: KIND: message``, whatever the message holds (a file name
    with a newline, text from a file: ``collsim.outputs.printable``)."""
    print(f"collsim: {kind}: {printable(message)}", file=sys.stderr)


def _warning(message, category, *_args, **_kwargs) -> None:
    """``warnings.showwarning`` for the CLI: one line per warning."""
    _say("warning", message if issubclass(category, CollsimWarning)
         else f"{category.__name__}: {message}")


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")   # figures go to files: no display needed
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    old = os.environ.get(MEMORY_VARIABLE)
    if args.max_memory:
        os.environ[MEMORY_VARIABLE] = args.max_memory     # collsim.inputs.memory_budget reads it
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(PrintableStream(sys.stdout)):
            warnings.showwarning = _warning
            return _run(args)
    finally:   # main() called in-process (tests, notebooks) leaves the environment as it found it
        if args.max_memory:
            os.environ.pop(MEMORY_VARIABLE) if old is None \
                else os.environ.update({MEMORY_VARIABLE: old})


def _run(args) -> int:
    try:
        return int(args.func(args) or 0)
    except CollsimError as e:
        _say("error", e)
        return 2
    except FileNotFoundError as e:
        _say("error", f"no such file: {e.filename}")
        return 2
    except BrokenPipeError:
        return 0
    except OSError as e:  # a directory, no permission, a full disk: still one line
        _say("error", f"{e.filename}: {e.strerror}" if e.filename else e)
        return 2
    except KeyboardInterrupt:
        _say("error", "interrupted")
        return 130
    except MemoryError as e:  # an input within the bounds whose work does not fit this machine
        _say("error",
             f"out of memory ({str(e)[:120] or 'MemoryError'}): ask for fewer ranks, steps or "
             "sizes")
        return 2
    except Exception as e:  # noqa: BLE001 - the last resort: a bug, said in one line
        if os.environ.get("COLLSIM_TRACEBACK"):
            traceback.print_exc()
        _say("internal error",
             f"{type(e).__name__}: {str(e)[:200]} (a bug in collsim: please report it with "
             "the command line; COLLSIM_TRACEBACK=1 shows where)")
        return INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(main())
