"""Input files and folders checked before work: what a path names, read without ever hanging.

Every file a command reads (an instance, a patch, a report, a dataset) goes through :func:`read_bytes`
or :func:`open_input`, and every folder it grades or reads (``--repo``, a Harbor task) through
:func:`folder_problem`. The rules, one line a problem:

- a symbolic link loop, a missing path, a path that cannot be read: said as such;
- a directory where a file is expected (and a file where a folder is);
- a device (``/dev/zero``, a terminal) is refused: it never ends, or is not data;
- a named pipe is opened without blocking, then read: one that nobody has open for writing reads as
  its end at once and is refused ("a named pipe nobody writes to") instead of blocking forever;
  ``--patch <(git diff)`` keeps working (the shell's pipe has its writer, the read waits for it).

The functions raise :class:`InputProblem` (a ``ValueError``) with the line; each caller turns it
into its own bad-input error (exit 2) naming the option.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path
from typing import BinaryIO

__all__ = ["InputProblem", "folder_problem", "open_input", "read_bytes", "stat_problem"]


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


def open_input(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for reading in binary, never blocking on a pipe nobody writes to; ``-`` is
    standard input. :class:`InputProblem` when it cannot be."""
    if str(path) == "-":
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
        if handle is not sys.stdin.buffer:
            handle.close()
