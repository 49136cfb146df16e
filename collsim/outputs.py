"""Writing what collsim produces without losing data, and showing what files hold safely.

* ``check_output(path, inputs, what)``: refuse an output before any work (one ``CollsimError``
  line): a path that is one of ``inputs`` (it would be written over while, or instead of, being
  read), a folder, something that is not a regular file (a device such as /dev/full, a pipe),
  a folder that does not exist or that we may not write in.
* ``atomic_write(path)``: a file object for writing ``path`` in full: the bytes go to a temporary
  file in the same folder, which replaces ``path`` in one rename when the block ends without error
  (a symbolic link at ``path`` is replaced, not written through). On any error (a full disk, a
  read-only folder, an exception while writing) the temporary file is removed, ``path`` is as it
  was, and a write error becomes one ``CollsimError`` line.
* ``plot_format(path)`` / ``save_figure(fig, path)``: figures, whose format is the extension
  (``PLOT_FORMATS``), checked before any drawing and written through ``atomic_write``.
* ``printable(text)``: text from a file made safe for a terminal (control characters such as
  ESC escaped, as ``repr`` writes them; ``PrintableStream`` does it to a whole stream, the
  CLI's stdout); ``csv_cell(value)``: a CSV cell a spreadsheet will not
  run as a formula (text starting with = + - @, tab or carriage return gets a leading ').
"""
from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
from pathlib import Path

from collsim.errors import CollsimError

PLOT_FORMATS = ("png", "pdf", "svg", "jpg", "jpeg", "eps", "ps", "tif", "tiff", "webp")


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet): compare the resolved names
        return os.path.realpath(a) == os.path.realpath(b)


def check_output(path, inputs=(), what: str = "output") -> Path:
    """``path`` as a Path if it can be written as a new version of a regular file; else a
    CollsimError naming ``what`` and the reason (module docstring). ``inputs``: every file the
    command reads."""
    p = Path(path)
    for i in inputs or ():
        if _same(p, Path(i)):
            raise CollsimError(f"cannot write {what} {p}: it is also an input ({i}); choose "
                               "another name")
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as e:
        raise CollsimError(f"cannot write {what} {p}: {e.strerror}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise CollsimError(f"cannot write {what} {p}: it is a directory")
    if mode is not None and not stat.S_ISREG(mode):
        raise CollsimError(f"cannot write {what} {p}: not a regular file (a device or a pipe)")
    folder = p.parent
    if not folder.is_dir():
        raise CollsimError(f"cannot write {what} {p}: no folder {folder}")
    if not os.access(folder, os.W_OK):
        raise CollsimError(f"cannot write {what} {p}: the folder {folder} is read-only")
    return p


@contextlib.contextmanager
def atomic_write(path, what: str = "output", binary: bool = False):
    """Yield a file (text UTF-8, or ``binary``) whose contents replace ``path`` when the block
    ends without error; on error nothing is left behind (module docstring). ``path`` is checked
    with ``check_output`` first (without inputs: the caller checks those before its work)."""
    p = check_output(path, (), what)
    tmp = p.parent / f".{p.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
    try:
        mode = stat.S_IMODE(os.stat(p).st_mode)  # a new version keeps the old one's permissions
    except OSError:
        mode = 0o666  # of a new file, less the umask (os.open applies it)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except OSError as e:
        raise CollsimError(f"cannot write {what} {p}: {e.strerror}") from None
    try:
        with (os.fdopen(fd, "wb") if binary
              else os.fdopen(fd, "w", encoding="utf-8", newline="")) as f:
            yield f
        os.replace(tmp, p)
    except OSError as e:
        raise CollsimError(f"cannot write {what} {p}: {e.strerror or e}; nothing written") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def plot_format(path) -> str:
    """The figure format of ``path`` from its extension, or a CollsimError naming the known ones."""
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in PLOT_FORMATS:
        raise CollsimError(f"cannot write figure {path}: unknown format "
                           f"{ext or '(no extension)'!r}; use one of .{', .'.join(PLOT_FORMATS)}")
    return ext


def save_figure(fig, path, dpi: int = 110) -> None:
    """Write a matplotlib figure to ``path`` in the format of its extension, in full or not at
    all."""
    fmt = plot_format(path)
    with atomic_write(path, "figure", binary=True) as f:
        fig.savefig(f, format=fmt, dpi=dpi)


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_BUT_NEWLINE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text, newlines: bool = False) -> str:
    """``str(text)`` with control characters (ESC, CR, BEL, ...; newline too unless
    ``newlines``; not tab) escaped as ``repr`` writes them (``\\x1b``): what a file holds cannot
    move the cursor, recolour the terminal or start a line of its own."""
    return (_CONTROL_BUT_NEWLINE if newlines else _CONTROL).sub(
        lambda m: repr(m.group())[1:-1], str(text))


class PrintableStream:
    """A text stream that passes what is written to ``out`` through ``printable`` (newlines
    kept): the CLI's stdout, so that no command prints a control character a file held."""

    def __init__(self, out):
        self.out = out

    def write(self, text: str) -> int:
        return self.out.write(printable(text, newlines=True))

    def flush(self) -> None:
        self.out.flush()


def csv_cell(value):
    """``value`` for a CSV cell: text that a spreadsheet would read as a formula (starting with
    = + - @, tab or carriage return) gets a leading ', other values are unchanged."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
