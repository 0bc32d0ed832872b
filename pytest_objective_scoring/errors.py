"""Errors of the ``objective-score`` command line, its exit statuses, and problems put in words.

:class:`CommandError` is bad input to a command: ``objective-score`` prints it as
``objective-score CMD: error: ...`` and exits :data:`EXIT_BAD_INPUT`. Any module may raise it
(the commands, the batch grading engine in :mod:`.jobs`, the A/B report): this module imports
nothing of the command line, so nothing that raises it imports the command line back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = ["EXIT_BAD_INPUT", "EXIT_INFRASTRUCTURE", "EXIT_INTERRUPTED", "EXIT_TERMINATED", "CommandError", "Terminated",
           "interrupted_status", "ledger_problem", "problems_text", "terminate"]

EXIT_BAD_INPUT: Final = 2
EXIT_INFRASTRUCTURE: Final = 3  # the grader's own failure, never the candidate's
EXIT_INTERRUPTED: Final = 130  # 128 + SIGINT, as a shell reports it
EXIT_TERMINATED: Final = 143  # 128 + SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where it arrived: stops a command as Ctrl-C does (the same clean-up and
    message), but the command exits :data:`EXIT_TERMINATED`, as a shell expects of a killed program."""


def terminate(signum: int, frame: object) -> None:
    """The SIGTERM handler of every command: raise :class:`Terminated`."""
    raise Terminated


def interrupted_status(exc: BaseException | None) -> int:
    """The exit status of a command stopped by ``exc``: 143 after SIGTERM, 130 after SIGINT."""
    return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED


class CommandError(Exception):
    """Bad input to a command: printed as ``objective-score CMD: error: ...``, exit 2."""


def problems_text(text: str, what: str) -> str:
    """One problem as its line; several (one a line) counted under a heading, one indented line each."""
    lines = text.splitlines()
    return lines[0] if len(lines) == 1 else "\n  ".join([f"{len(lines)} {what} problems:", *lines])


def ledger_problem(exc: BaseException, path: Path | None = None) -> str:
    """What went wrong with the ledger at ``path``, in one line (the path is named beside it)."""
    import sqlite3

    from .ledger import LedgerError

    text = " ".join(str(exc).split()) or type(exc).__name__
    if path is not None:
        text = text.removeprefix(f"{path}: ")
    return text if isinstance(exc, (LedgerError, sqlite3.Error, OSError)) else f"{type(exc).__name__}: {text}"
