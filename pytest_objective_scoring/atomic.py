"""Output files written whole or not at all.

A plain file is written to a temporary file in the same folder, flushed to the disk, then renamed
over the path (a rename within one folder is atomic): a full disk, a kill or a crash at any moment
leaves the version before, or nothing, never a 0-byte or half-written file. :func:`write_new` also
never replaces a file that is there (a run report is never overwritten): the finished temporary
file is linked to its name, which fails if the name is taken.

Anything that is not a plain file is written in place: a symbolic link's target keeps being the
file written (through the link), a character device (``/dev/stdout``, ``/dev/null``) is written
as it is, and a named pipe is opened without blocking, waiting at most :data:`READER_WAIT`
seconds for a reader, so that a pipe nobody reads fails with one line instead of hanging.

Every failure is an ``OSError`` whose message names the path; the commands turn it into one line
on standard error and, where the output was a verdict or a report, print it on standard output
instead (:func:`fallback`), so nothing graded is lost.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time
from pathlib import Path
from typing import Final

__all__ = ["READER_WAIT", "fallback", "why", "write_new", "write_whole"]

READER_WAIT: Final = 10.0  # seconds a named pipe given as an output may take to get its reader


def _data(text: str | bytes) -> bytes:
    return text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text


def _special(path: Path) -> int | None:
    """The mode of what ``path`` names when it is not a plain file (or a link to one), else None."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else mode


def _write_pipe(path: Path, data: bytes) -> None:
    deadline = time.monotonic() + READER_WAIT
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                if exc.errno == errno.ENXIO:
                    raise OSError(errno.ENXIO, f"a named pipe nobody reads (waited {READER_WAIT:.0f} s)") from None
                raise
            time.sleep(0.05)
    try:
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _temporary(path: Path, data: bytes) -> Path:
    """``data`` in a new temporary file beside ``path``, on the disk (fsync)."""
    name = path.name
    if len(name.encode("utf-8", "surrogateescape")) > 200:  # the temporary name must fit where the name fits
        import hashlib

        name = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    partial = path.with_name(f".{name}.{os.getpid()}.{time.monotonic_ns()}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        partial.unlink(missing_ok=True)
        raise
    os.close(fd)
    return partial


def write_whole(path: str | os.PathLike[str], text: str | bytes) -> None:
    """Write ``path`` whole or not at all (a plain file), or in place (anything else: see above)."""
    path, data = Path(path), _data(text)
    mode = _special(path)
    if mode is not None and stat.S_ISFIFO(mode):
        _write_pipe(path, data)
        return
    if mode is not None:  # a device
        with open(path, "wb") as handle:
            handle.write(data)
        return
    target = Path(os.path.realpath(path)) if path.is_symlink() else path  # a link keeps being a link
    partial = _temporary(target, data)
    try:
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def write_new(path: str | os.PathLike[str], text: str | bytes) -> None:
    """Write a new file at ``path`` whole, never over one that is there (``FileExistsError``)."""
    path = Path(path)
    partial = _temporary(path, _data(text))
    try:
        os.link(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def why(exc: BaseException) -> str:
    """An output's failure in words (``No space left on device``, ...)."""
    return getattr(exc, "strerror", None) or " ".join(str(exc).split()) or type(exc).__name__


def fallback(command: str, option: str, path: object, exc: BaseException, text: str | None) -> None:
    """Say on standard error that ``option path`` could not be written, and print ``text`` (the
    verdict or the report it held) in full on standard output, so it is never lost."""
    tail = "; it follows on standard output" if text is not None else ""
    print(f"objective-score {command}: {option} {path}: NOT written ({why(exc)}){tail}", file=sys.stderr, flush=True)
    if text is not None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
