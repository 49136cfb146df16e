"""Reading what users give collsim, in one place: files, JSON, typed fields and their bounds.

Every loader (measurement files, nccl-tests output, model parameters, topologies, schedules,
NCCL logs) and the command line read through here, so a bad input is one ``CollsimError`` line
that names the file (and line or field) and the problem, raised before any work is done:

* ``read_text``: a whole file as text: UTF-8 (a binary file is refused, or with
  ``errors="replace"`` read with its bad bytes replaced, for logs), at most ``MAX_FILE_BYTES``;
  a missing file, a folder or an unreadable one is one line each.
* ``parse_json``: JSON nested at most ``MAX_JSON_DEPTH`` deep (checked before parsing: Python's
  parser recurses); numbers as Python reads them (``NaN`` and ``Infinity`` included: the typed
  readers refuse them where a finite number is needed).
* ``parse_yaml``: YAML by PyYAML's safe loader (plain data: no tag runs code) without aliases
  (``*name``: a few nested ones expand to gigabytes).
* ``read_field``: one field of a JSON object as the type and range it must have (``None`` when
  absent or null, unless required); ``int_text``: an integer written as text (an environment
  variable's value), ASCII digits only.

Bounds of the quantities collsim models, checked where they are read: sizes and buffers
``MAX_BYTES`` bytes, ``MAX_RANKS`` ranks (and nodes), ``MAX_CHANNELS`` channels (NCCL's
MAXCHANNELS: NCCL never runs more), NCCL_BUFFSIZE within ``BUFFSIZE_RANGE``, ``MAX_CALLS``
calls or iterations per measurement, link latencies ``MAX_SECONDS`` and seconds per byte
``MAX_SECONDS_PER_BYTE`` (so every time computed from them is finite), YAML files
``MAX_YAML_BYTES``. Bounds on counts do not bound the work they admit: ``check_memory`` refuses
work whose estimated memory (``collsim.core.budget``, ``collsim.fit``) is over ``memory_budget()``
(``MAX_MEMORY_BYTES``, 4 GB, unless ``COLLSIM_MAX_MEMORY`` lifts it). They are constants that
other modules import: to lift one, change it here.
"""
from __future__ import annotations

import json
import os
import re
import stat

import numpy as np
import yaml

from collsim.errors import CollsimError, describe, require_int, require_number

MAX_FILE_BYTES = 1 << 30    # any input file
MAX_JSON_DEPTH = 32         # nesting of arrays and objects
# a YAML file (a cluster description is a few lines; parsing YAML takes ~1 s per MiB)
MAX_YAML_BYTES = 1 << 20
MAX_BYTES = 1 << 50         # a message size or buffer, bytes (1024 TiB)
MAX_RANKS = 1 << 20         # ranks, nodes, GPUs per node
MAX_CHANNELS = 64           # NCCL's MAXCHANNELS (src/include/device.h)
# NCCL_BUFFSIZE bytes (collsim.fitted.layout.Config's floor; 4 GiB)
BUFFSIZE_RANGE = (1 << 15, 1 << 32)
MAX_CALLS = 1 << 30         # calls, iterations, warm-up calls per measurement
# a quick run's sizes (runners/allreduce_bench.py --quick, collsim fit --cluster): one per regime,
# from a call's latency (8 B) through LL's and LL128's ranges to the bandwidth plateau (1 GiB)
QUICK_SIZES = (8, 64 << 10, 8 << 20, 256 << 20, 1 << 30)
MAX_SECONDS = 3600.0        # a latency (alpha), seconds
MAX_SECONDS_PER_BYTE = 1.0  # beta, gamma: seconds per byte (1 B/s)
# what one command may hold by collsim's estimate (COLLSIM_MAX_MEMORY lifts it)
MAX_MEMORY_BYTES = 4 * 10**9
MEMORY_VARIABLE = "COLLSIM_MAX_MEMORY"

_MEMORY = re.compile(r"\s*([0-9]{1,20})\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE)


def memory_budget() -> int:
    """Bytes a command may hold: ``MAX_MEMORY_BYTES``, or the ``COLLSIM_MAX_MEMORY`` environment
    variable (bytes, or with a K, M, G or T suffix: binary multiples; ``collsim --max-memory``
    sets it)."""
    text = os.environ.get(MEMORY_VARIABLE)
    if not text:
        return MAX_MEMORY_BYTES
    m = _MEMORY.fullmatch(text)
    if not m or int(m.group(1)) < 1:
        raise CollsimError(f"{MEMORY_VARIABLE} must be a size in bytes such as 16G, got "
                           f"{describe(text)}")
    return int(m.group(1)) << (10 * " KMGT".index(m.group(2).upper() or " "))


def check_memory(estimate: float, what: str) -> None:
    """Refuse work whose memory ``estimate`` (bytes, made from counts before the work) is over
    ``memory_budget()``: one CollsimError line naming the estimate and how to lift the bound."""
    budget = memory_budget()
    if estimate > budget:
        raise CollsimError(f"{what} would hold about {estimate / 1e9:.3g} GB (collsim's estimate), "
                           f"over the {budget / 1e9:.3g} GB memory bound: ask for less, or lift "
                           f"the bound with collsim --max-memory SIZE or {MEMORY_VARIABLE}=SIZE")


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NEST = np.zeros(256, np.int64)
_NEST[[ord("["), ord("{")]], _NEST[[ord("]"), ord("}")]] = 1, -1


def regular_file(path, what: str = "file", limit: int = MAX_FILE_BYTES) -> os.stat_result:
    """``os.stat`` of ``path`` if it is a regular file of at most ``limit`` bytes, else one
    CollsimError line: missing, a folder, a FIFO, a device or a socket (refused before any
    ``open``: opening a FIFO blocks until a writer comes, a device can give bytes for ever), or
    too large (refused before any byte is read)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise CollsimError(f"{what} {path}: no such file") from None
    except (OSError, ValueError) as e:
        raise CollsimError(f"{what} {path}: cannot read it "
                           f"({getattr(e, 'strerror', None) or e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise CollsimError(f"{what} {path}: is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise CollsimError(f"{what} {path}: not a regular file (a pipe, a device or a socket): "
                           "collsim reads only regular files")
    if st.st_size > limit:
        raise CollsimError(f"{what} {path}: larger than {limit} bytes ({_limit_name(limit)})")
    return st


def _limit_name(limit: int) -> str:
    return ("collsim.inputs.MAX_YAML_BYTES" if limit == MAX_YAML_BYTES
            else "collsim.inputs.MAX_FILE_BYTES")


def read_bytes(path, what: str = "file", limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file at ``path`` (``regular_file``), at most ``limit`` of them:
    opened without blocking and checked again once open (a file swapped for a FIFO in between)."""
    regular_file(path, what, limit)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise CollsimError(f"{what} {path}: cannot read it "
                           f"({e.strerror or type(e).__name__})") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CollsimError(f"{what} {path}: not a regular file (a pipe, a device or a socket)")
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise CollsimError(f"{what} {path}: cannot read it "
                               f"({e.strerror or type(e).__name__})") from None
    if len(data) > limit:  # a file that grew, or one of /proc whose size says 0
        raise CollsimError(f"{what} {path}: larger than {limit} bytes ({_limit_name(limit)})")
    return data


def read_text(path, what: str = "file", errors: str = "strict", limit: int = MAX_FILE_BYTES) -> str:
    """The text of the file at ``path``; ``what`` names it in errors ("topology file", ...).
    ``errors="replace"`` reads bytes that are not UTF-8 as U+FFFD (logs that interleave other
    programs' output); else such a file is refused as not text. Only a regular file of at most
    ``limit`` bytes is read (``read_bytes``)."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as e:
        raise CollsimError(f"{what} {path}: not a text file (byte {e.start} is not "
                           "UTF-8)") from None


def json_depth(text: str) -> int:
    """How deep arrays and objects nest in JSON ``text`` (brackets inside strings do not count;
    numpy over bounded chunks: about half the time ``json.loads`` takes)."""
    if "\\" in text:  # escaped quotes: take the strings out first (rare: command lines)
        text = _STRING.sub('""', text)
    codes = np.frombuffer(text.encode("utf-8"), np.uint8)
    depth = deepest = quotes = 0
    for start in range(0, len(codes), 1 << 20):
        chunk = codes[start:start + (1 << 20)]
        inside = np.cumsum(chunk == ord('"')) + quotes
        running = depth + np.cumsum(np.where(inside & 1, 0, _NEST[chunk]))
        deepest, depth, quotes = max(deepest, int(running.max())), int(running[-1]), int(inside[-1])
    return deepest


def parse_json(text: str, where: str):
    """The value of JSON ``text``; ``where`` ("file.jsonl:3") names it in errors: not JSON (with
    line and column), nested deeper than ``MAX_JSON_DEPTH``, a number Python will not read."""
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and json_depth(text) > MAX_JSON_DEPTH:
        raise CollsimError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise CollsimError(f"{where}: not valid JSON (line {e.lineno} column {e.colno}: "
                           f"{e.msg})") from None
    except (ValueError, RecursionError) as e:  # an integer of more than 4300 digits
        raise CollsimError(f"{where}: not valid JSON ({str(e).split(';')[0]})") from None


def parse_yaml(text: str, where: str):
    """The value of YAML ``text`` (module docstring); ``where`` names it in errors, with the line
    and column of the problem. At most ``MAX_YAML_BYTES`` (refused before parsing); libyaml's
    parser where PyYAML has it (ten times faster), aliases refused from its events first."""
    if len(text) > MAX_YAML_BYTES:
        raise CollsimError(f"{where}: YAML larger than {MAX_YAML_BYTES} bytes "
                           "(collsim.inputs.MAX_YAML_BYTES: parsing YAML takes about a second per "
                           "MiB); write it as JSON")

    class Loader(yaml.SafeLoader):
        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                raise yaml.composer.ComposerError(None, None, _NO_ALIASES,
                                                  self.peek_event().start_mark)
            return super().compose_node(parent, index)

    fast = getattr(yaml, "CSafeLoader", None)
    try:
        if fast is None:
            return yaml.load(text, Loader=Loader)  # noqa: S506 - a safe loader
        for event in yaml.parse(text, Loader=fast):
            if isinstance(event, yaml.AliasEvent):
                raise yaml.composer.ComposerError(None, None, _NO_ALIASES, event.start_mark)
        return yaml.load(text, Loader=fast)  # noqa: S506 - a safe loader
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None)
        raise CollsimError(f"{where}: invalid "
                           f"YAML{at}{f' ({problem})' if problem else ''}") from None
    except RecursionError:
        raise CollsimError(f"{where}: invalid YAML (nested too deeply)") from None


_NO_ALIASES = "aliases (*name) are not allowed"


def read_json(path, what: str = "file"):
    """``parse_json`` of the file at ``path`` (``read_text``)."""
    return parse_json(read_text(path, what), f"{what} {path}")


_KINDS = {int: "an integer", float: "a number", str: "a string", bool: "true or false",
          dict: "an object", list: "a list"}


def read_field(record: dict, key: str, where: str, kind: type, *, required: bool = False,
          minimum=None, maximum=None, positive: bool = False, choices=None):
    """``record[key]`` checked as ``kind`` (int, float, str, bool, dict or list), or None when
    absent or null and not ``required``. Ints are whole numbers (not bools) within
    [``minimum``, ``maximum``]; floats finite numbers (ints too) within them, > 0 with
    ``positive``; strings one of ``choices`` when given. Errors name ``where`` and ``key``."""
    what = f"{where}: field {key!r}"
    value = record.get(key) if isinstance(record, dict) else None
    if value is None:
        if required:
            raise CollsimError(f"{where}: missing field {key!r}")
        return None
    if kind is int:
        return require_int(what, value, minimum, maximum)
    if kind is float:
        return require_number(what, value, minimum, positive, maximum)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise CollsimError(f"{what} must be {_KINDS[kind]}, got {describe(value)}")
    if choices is not None and value not in choices:
        raise CollsimError(f"{what} must be one of {', '.join(map(str, choices))}; got "
                           f"{describe(value)}")
    return value


def int_text(value, what: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer given as text ("16") or as an int, within [``minimum``, ``maximum``]: what an
    environment variable holds. Only ASCII digits with an optional sign ("1e9", "²", "0x10" are
    refused), so that the bound is checked before the number is used."""
    if isinstance(value, str):
        if not re.fullmatch(r"[+-]?[0-9]{1,30}", value.strip()):
            raise CollsimError(f"{what} must be a whole number, got {describe(value)}")
        value = int(value)
    return require_int(what, value, minimum, maximum)
