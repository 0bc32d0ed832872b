"""Input files and folders checked before work: what a path names, read without ever hanging.

Every file a command reads (an instance, a patch, a report, a dataset) goes through :func:`read_bytes`
or :func:`open_input`, and every folder it grades or reads (``--repo``, a Harbor task) through
:func:`folder_problem`. The rules, one line a problem:

- a symbolic link loop, a missing path, a path that cannot be read: said as such;
- a directory where a file is expected (and a file where a folder is);
- a device (``/dev/zero``, a terminal) is refused: it never ends, or is not data;
- a named pipe is opened without blocking, then read: one that nobody has open for writing reads as
  its end at once and is refused ("a named pipe nobody writes to") instead of blocking forever;
  ``--patch <(git diff)`` keeps working (the shell's pipe has its writer, the read waits for it);
- ``-`` is standard input, checked for what it *is* (:func:`stdin_problem`): a closed descriptor
  (``<&-``), a device (``< /dev/zero``, ``< /dev/null``: refused as ``--patch /dev/null`` is), a
  terminal (nothing was piped in: waiting for typed input would look like a hang in CI) and a
  directory are refused; a file, a pipe or a socket is read.

The functions raise :class:`InputProblem` (a ``ValueError``) with the line; each caller turns it
into its own bad-input error (exit 2) naming the option.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["InputProblem", "closed_output_problem", "folder_problem", "open_input", "read_bytes", "stat_problem",
           "stdin_problem", "undecodable_options"]


NO_WRITER = "a named pipe nobody writes to (expected a file, or a pipe with a writer such as <(git diff))"


class InputProblem(ValueError):
    """Why an input path cannot be read (one line, without the option's name)."""


def stat_problem(path: str | os.PathLike[str]) -> tuple[os.stat_result | None, str | None]:
    """``os.stat(path)`` and None, or None and why it failed (a loop, missing, permission)."""
    try:
        return os.stat(path), None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, "a symbolic link loop (it never reaches a file)"
        if exc.errno == errno.ENOENT:
            return None, "dangling symbolic link" if os.path.islink(path) else "no such file or directory"
        if exc.errno in (errno.EACCES, errno.EPERM):
            return None, "permission denied (a folder on its path cannot be entered, or it cannot be read)"
        if exc.errno == errno.ENOTDIR:
            return None, "a file stands where a folder of its path is expected"
        if exc.errno == errno.ENAMETOOLONG:
            return None, "the path is too long"
        return None, f"cannot be read ({exc.strerror or exc})"


def folder_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` is not a folder that can be read, or None."""
    found, problem = stat_problem(path)
    if found is None:
        return problem
    if not stat.S_ISDIR(found.st_mode):
        return "not a folder"
    if not os.access(path, os.R_OK | os.X_OK):
        return "the folder cannot be read (permission denied)"
    return None


STDIN_EXPECTED = "expected a file or a pipe on it (< FILE, or PROGRAM | objective-score ...)"


def stdin_kind(mode: int | None) -> str | None:
    """Why standard input of ``mode`` (``os.fstat(0).st_mode``; None: the descriptor is closed) is
    not data to read, or None (a file, a pipe, a socket)."""
    if mode is None:
        return f"standard input is closed; {STDIN_EXPECTED}"
    if stat.S_ISDIR(mode):
        return f"standard input is a directory; {STDIN_EXPECTED}"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return f"standard input is a device (/dev/zero and /dev/null are refused, as --patch /dev/null is); {STDIN_EXPECTED}"
    return None


def stdin_problem() -> str | None:
    """Why ``-`` (standard input) cannot be read as an input, or None: what descriptor 0 is, by
    :func:`stdin_kind`, a terminal said as such. A standard input without a descriptor (an
    in-memory stream a test put there) is read as it is."""
    stream = sys.stdin
    if stream is None:  # descriptor 0 closed when the interpreter started (`<&-`)
        return stdin_kind(None)
    try:
        fd = stream.fileno()
    except (OSError, ValueError):  # io.UnsupportedOperation: in memory
        return None
    try:
        mode: int | None = os.fstat(fd).st_mode
    except OSError:
        mode = None
    if mode is not None and stat.S_ISCHR(mode) and os.isatty(fd):
        return f"standard input is a terminal (nothing was piped in); {STDIN_EXPECTED}"
    return stdin_kind(mode)


def open_input(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for reading in binary, never blocking on a pipe nobody writes to; ``-`` is
    standard input (:func:`stdin_problem`). :class:`InputProblem` when it cannot be."""
    if str(path) == "-":
        problem = stdin_problem()
        if problem:
            raise InputProblem(problem)
        return sys.stdin.buffer
    found, problem = stat_problem(path)
    if found is None:
        raise InputProblem(problem)
    mode = found.st_mode
    if stat.S_ISDIR(mode):
        raise InputProblem("is a directory: expected a file")
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise InputProblem("a device, not a file")
    if stat.S_ISSOCK(mode):
        raise InputProblem("a socket, not a file")
    try:
        if stat.S_ISFIFO(mode):  # opened without blocking (no writer: at once), then read blocking: a pipe
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # with no writer reads as its end, never waits
            os.set_blocking(fd, True)
            return os.fdopen(fd, "rb")
        return open(path, "rb")
    except OSError as exc:
        raise InputProblem(stat_problem(path)[1] or f"cannot be read ({exc.strerror or exc})") from None


def read_bytes(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The whole of ``path`` (or its first ``limit`` bytes), by :func:`open_input`'s rules."""
    handle = open_input(path)
    try:
        data = handle.read() if limit is None else handle.read(limit)
        if not data and str(path) != "-" and stat.S_ISFIFO(os.fstat(handle.fileno()).st_mode):
            raise InputProblem(NO_WRITER)
        return data
    except OSError as exc:
        raise InputProblem(f"cannot be read ({exc.strerror or exc})") from None
    finally:
        if str(path) != "-":
            handle.close()


PATH_METAVARS = frozenset({"FILE", "DIR", "PATH", "MANIFEST", "TASK_DIR"})
"""The metavars of options whose value is a path: any bytes the system allows (a file name need
not be UTF-8), so they are never refused as text."""


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (a byte that was not UTF-8, kept by Python as
    ``\\udcXX``), which no ledger, JSON file or hash can encode."""
    return any("\ud800" <= char <= "\udfff" for char in text)


def undecodable_options(parser: Any, args: Any) -> str | None:
    """The first option of the parsed ``args`` (of ``parser`` and its subcommands' parsers) whose
    value is text holding a surrogate, said in one line; None when there is none. A name, an id, a
    reference or a run id is recorded as UTF-8 text: one that is not (``--benchmark $'b\\xff'``) is
    refused before work instead of being graded and then not recorded. Paths (:data:`PATH_METAVARS`)
    are left to the file system."""
    import argparse

    pending, seen = [parser], set()
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                pending.extend(action.choices.values())
                continue
            if str(action.metavar) in PATH_METAVARS or not hasattr(args, action.dest):
                continue
            value = getattr(args, action.dest)
            values = value if isinstance(value, (list, tuple)) else [value]
            bad = next((v for v in values if isinstance(v, str) and has_surrogate(v)), None)
            if bad is not None:
                long = [o for o in action.option_strings if o.startswith("--")] or action.option_strings
                name = long[0] if long else str(action.metavar or action.dest)
                shown = bad.encode("utf-8", "surrogateescape" if not _lone(bad) else "backslashreplace")
                return (f"{name} {str(shown)[2:-1][:40]}: not valid UTF-8; expected UTF-8 text (it is recorded "
                        "in the ledger and the envelope, which hold only UTF-8)")
    return None


def _lone(text: str) -> bool:
    """Whether ``text`` holds a surrogate that is not a byte escaped by ``surrogateescape``."""
    return any("\ud800" <= char <= "\udfff" and not "\udc80" <= char <= "\udcff" for char in text)


def closed_output_problem() -> str | None:
    """Why standard output cannot be written at all (closed: ``>&-``), or None. ``sys.stdout`` is
    None when descriptor 1 was closed as the interpreter started."""
    if sys.stdout is None:
        return "standard output is closed (>&-): nothing printed could be read"
    return None
