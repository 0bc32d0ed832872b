"""Checks before work: output paths, optional dependencies, and a pipe the reader closed.

Every command that writes a file or a folder checks it before any work starts (``cli.main``
calls :func:`problems_of` before the command's handler), so a verdict is never lost to a path
that cannot be written after minutes of grading. The rules, one line a problem, exit 2:

- a FILE option (``grade --out``, ``grade --receipt``, ``grade-batch --report``,
  ``grade-samples --out``, ``ledger export --out``): refused when it names a directory, when its folder does not exist (missing
  folders are never created silently: make them first), when that folder is not a folder or
  cannot be written, or when the file exists and cannot be written. Special files
  (``/dev/stdout``, a named pipe) are written in place.
- any output path that is a symbolic link loop, lies under a folder that cannot be entered or under
  a file, or has a name longer than the file system allows: refused as such.
- a DIR option (``harbor run --out``, ``ab report --out``, ``grade-batch --log-dir`` and
  ``--report_dir``): refused when it names a file, or
  when it exists and cannot be written; a missing DIR is created, but only when its parent
  folder exists and can be written (its missing parents are not created).

The functions are pure (they read the file system, never change it).

A pipe closed by the reader (``objective-score sets show NAME --json | head``) ends quietly:
:func:`closed_pipe` points standard output at ``/dev/null`` (so the interpreter's final flush
cannot fail again) and the command exits :data:`EXIT_CLOSED_PIPE` (141, 128 + SIGPIPE, what a
shell reports for a program a closed pipe ended).
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path
from typing import Any, Iterable, Sequence

from .inputs import stat_problem

EXIT_CLOSED_PIPE = 141

FILE = "file"
DIR = "dir"

# (command, action or None) -> the options that name an output, and what each names
OUTPUTS: dict[tuple[str, str | None], tuple[tuple[str, str], ...]] = {
    ("grade", None): (("--out", FILE), ("--receipt", FILE)),
    ("grade-batch", None): (("--report", FILE), ("--report_dir", DIR), ("--log-dir", DIR)),
    ("grade-samples", None): (("--out", FILE),),
    ("ledger", "export"): (("--out", FILE),),
    ("harbor", "run"): (("--out", DIR),),
    ("ab", "report"): (("--out", DIR),),
    ("receipt", None): (("--out", FILE),),
    ("sets", "gate"): (("--out", FILE),),
    ("examples", None): (("DIR", DIR),),
}


def _special(path: Path) -> bool:
    """A character device, a pipe or a socket: written in place (``/dev/stdout``, ``/dev/null``)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _lstat_problem(path: Path) -> tuple[os.stat_result | None, str | None]:
    """``os.stat(path)`` and None; None and None when nothing is there (it may be made); or None and
    why the path cannot be looked at (a symbolic link loop, a folder that cannot be entered, a name too
    long, a file where a folder is expected)."""
    import errno

    try:
        return os.stat(path), None
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):  # the folder's check says which part is missing or a file
            return None, None
        return None, stat_problem(path)[1] or f"cannot be looked at ({exc.strerror or exc})"


def _folder_problem(option: str, path: Path, folder: Path) -> str | None:
    """Why files cannot be made in ``folder`` (which must exist), or None."""
    shown = folder if str(folder) else Path(".")
    found, problem = _lstat_problem(shown)
    if problem:
        return f"{option} {path}: the folder {shown}: {problem}"
    if found is None:
        if os.path.lexists(shown) or not os.path.isdir(shown.parent if str(shown.parent) else "."):
            problem = stat_problem(shown)[1]
            if problem and problem != "no such file or directory":
                return f"{option} {path}: the folder {shown}: {problem}"
        return (f"{option} {path}: the folder {shown} does not exist (missing folders are not created: "
                "make it first)")  # fmt: skip
    if not stat.S_ISDIR(found.st_mode):
        return f"{option} {path}: {shown} is not a folder"
    if not os.access(shown, os.W_OK | os.X_OK):
        return f"{option} {path}: the folder {shown} cannot be written (permission denied)"
    return None


def file_problem(option: str, value: str | os.PathLike[str]) -> str | None:
    """Why ``option FILE`` cannot be written, or None (nothing is created)."""
    path = Path(value)
    if str(value) == "":
        return f"{option}: expected a file name, got an empty one"
    found, problem = _lstat_problem(path)
    if problem:
        return f"{option} {path}: {problem}"
    if found is None:
        if path.is_symlink():  # a dangling symlink: its target's folder decides
            return _folder_problem(option, path, Path(os.path.realpath(path)).parent)
        return _folder_problem(option, path, path.parent)
    if stat.S_ISDIR(found.st_mode):
        return f"{option} {path}: is a directory: expected a file"
    if _special(path):
        return None
    if not os.access(path, os.W_OK):
        return f"{option} {path}: the file cannot be written (permission denied)"
    return _folder_problem(option, path, path.parent)


def dir_problem(option: str, value: str | os.PathLike[str]) -> str | None:
    """Why ``option DIR`` cannot be written into, or None (nothing is created)."""
    path = Path(value)
    if str(value) == "":
        return f"{option}: expected a folder name, got an empty one"
    found, problem = _lstat_problem(path)
    if problem:
        return f"{option} {path}: {problem}"
    if found is not None:
        if not stat.S_ISDIR(found.st_mode):
            return f"{option} {path}: is a file: expected a folder"
        if not os.access(path, os.W_OK | os.X_OK):
            return f"{option} {path}: the folder cannot be written (permission denied)"
        return None
    if path.is_symlink():
        return f"{option} {path}: a dangling symbolic link: expected a folder"
    return _folder_problem(option, path, path.parent)


# options that cannot be given together: (option, its dest) pairs; a command that has both refuses both
CONTRADICTIONS: tuple[tuple[tuple[str, str], tuple[str, str]], ...] = (
    (("--no-ledger", "no_ledger"), ("--ledger", "ledger")),
)


# (command, action or None) -> the options (and positionals, by dest) that name a folder to read
INPUT_FOLDERS: dict[tuple[str, str | None], tuple[tuple[str, str], ...]] = {
    ("grade", None): (("--repo", "repo"),),
    ("grade-batch", None): (("--repos", "repos"),),
    ("audit", "run"): (("--repo", "repo"), ("--repos", "repos")),
    ("ab", "run"): (("--repos", "repos"),),
    ("harbor", "run"): (("TASK_DIR", "task"), ("--workdir", "workdir")),
    ("harbor", "check"): (("TASK_DIR", "task"),),
}


def input_folder_problems(args: argparse.Namespace) -> list[str]:
    """Every folder the command line names to read that is not one (missing, a file, a symbolic link
    loop, not readable), one line each."""
    from .inputs import folder_problem

    command, action = str(getattr(args, "command", "")), getattr(args, "action", None)
    found = []
    for option, dest in INPUT_FOLDERS.get((command, action)) or INPUT_FOLDERS.get((command, None)) or ():
        value = getattr(args, dest, None)
        if isinstance(value, (str, os.PathLike)) and str(value):
            problem = folder_problem(value)
            if problem:
                found.append(f"{option} {value}: {problem}" if option.startswith("-") else f"{value}: {problem}")
    return found


VERIFYING_READERS = {("ab", "show"), ("ab", "report")}  # and every `ledger` action: they verify, and say tampered
EMPTY_LEDGER_AGE = 10.0  # seconds: an empty ledger file older than this is not one being made right now


def ledger_file_problem(args: argparse.Namespace) -> str | None:
    """An existing empty file given as ``--ledger``: never silently turned into a ledger (a file named
    by mistake), unless it is one being made this moment by another writer (SQLite creates the file
    before its first page: its journal is beside it, or it is seconds old)."""
    import time

    value = getattr(args, "ledger", None)
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        return None
    path = Path(value)
    found, problem = _lstat_problem(path)
    if problem:
        return f"--ledger {path}: {problem}"
    if found is None:
        return None
    if stat.S_ISDIR(found.st_mode):
        return f"--ledger {path}: a directory, not a ledger file"
    if stat.S_ISREG(found.st_mode) and found.st_size:
        if (getattr(args, "command", None), getattr(args, "action", None)) in VERIFYING_READERS or \
                getattr(args, "command", None) == "ledger":  # fmt: skip
            return None  # a damaged ledger is theirs to report: tampered (exit 1), never bad input
        from .ledger import ledger_path_problem

        damaged = ledger_path_problem(path)
        return None if damaged is None else f"--ledger {path}: {damaged}"
    if not stat.S_ISREG(found.st_mode):
        return None
    if any(Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-journal")):
        return None
    if time.time() - found.st_mtime < EMPTY_LEDGER_AGE:
        return None
    return (f"--ledger {path}: an empty file, not a ledger (never turned into one: remove it, or name a new path, "
            "which is created)")


def ledger_folder_problem(args: argparse.Namespace) -> str | None:
    """A ``--ledger`` (or ``$OBJECTIVE_SCORE_LEDGER``) that does not exist in a folder that does not
    either: a ledger is never made in a missing folder (a typo would start a new, empty ledger
    somewhere unexpected). Only a folder named as the default ledger's (``.objective-scoring``) is
    made, in a folder that exists."""
    value = getattr(args, "ledger", None)
    if getattr(args, "no_ledger", False) or not isinstance(value, (str, os.PathLike)) or not str(value):
        return None
    path = Path(value)
    found, problem = _lstat_problem(path)
    if found is not None or problem:  # there (or unreachable: ledger_file_problem and the command say how)
        return None
    folder = path.parent if str(path.parent) else Path(".")
    found, problem = _lstat_problem(folder)
    if problem:
        return f"--ledger {path}: the folder {folder}: {problem}"
    if found is None and folder.name == ".objective-scoring" and os.path.isdir(folder.parent or "."):
        return None  # the default ledger's folder, made beside its parent as the default one is
    if found is None:
        return (f"--ledger {path}: no such ledger, and its folder {folder} does not exist either (a ledger is never "
                "made in a missing folder: make the folder first)")  # fmt: skip
    if not stat.S_ISDIR(found.st_mode):
        return f"--ledger {path}: {folder} is not a folder"
    return None


# options that name a file the command reads (and the ledger, which it may append to): never an output too
INPUT_FILES: tuple[tuple[str, str], ...] = (
    ("--ledger", "ledger"), ("--instance", "instance"), ("--patch", "patch"), ("--test-patch", "test_patch"),
    ("--dataset", "dataset"), ("--predictions", "predictions"), ("--problems", "problems"), ("--samples", "samples"),
    ("--cost", "cost"), ("--plan", "plan"), ("--retrieval", "retrieval"), ("--from-report", "from_report"),
    ("--environments", "environments"),
)


def _same(first: str, second: str) -> bool:
    try:
        return os.path.samefile(first, second)
    except OSError:
        return os.path.realpath(first) == os.path.realpath(second)


def clash_problems(args: argparse.Namespace) -> list[str]:
    """An output that names an input (the ledger, the patch, the instance...) or another output: the
    input would be overwritten by the output, or one output by the other. And an input that is a
    device (``/dev/zero`` never ends), or a ledger that is not a plain file (a pipe would block)."""
    command, action = str(getattr(args, "command", "")), getattr(args, "action", None)
    outputs = [(option, str(getattr(args, option.lstrip("-").replace("-", "_"), None) or ""))
               for option, kind in (OUTPUTS.get((command, action)) or OUTPUTS.get((command, None)) or ())
               if kind == FILE]  # fmt: skip
    outputs = [(option, value) for option, value in outputs if value and not _special(Path(value))]
    inputs: list[tuple[str, str]] = []
    for option, dest in INPUT_FILES:
        given = getattr(args, dest, None)
        if isinstance(given, (str, os.PathLike)) and str(given) and str(given) != "-":
            inputs.append((option, str(given)))
    found = []
    for index, (option, value) in enumerate(outputs):
        for other, given in [*inputs, *outputs[:index]]:
            if _same(value, given):
                found.append(f"{option} {value} names the same file as {other} {given}: it would be overwritten")
    for option, value in inputs:
        try:
            mode = os.stat(value).st_mode
        except OSError:
            continue
        if (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) and option != "--from-report":  # reports say it their way
            if not value.startswith("/dev/fd/") and value not in ("/dev/stdin",):
                found.append(f"{option} {value}: a device, not a file")
        elif option == "--ledger" and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            found.append(f"--ledger {value}: not a plain file (a named pipe or a socket cannot hold a ledger)")
    return found


STDIN_NAMES = ("-", "/dev/stdin", "/dev/fd/0")


def stdin_problem(given: Iterable[tuple[str, Any]]) -> str | None:
    """Why these ``(option, value)`` pairs cannot all be read, or None: standard input read by two
    options gives the first all of it and the second nothing (an empty patch, an empty instance),
    so two options that name it (``-``, ``/dev/stdin``) are refused before anything is read."""
    named = [(option, str(value)) for option, value in given if str(value or "") in STDIN_NAMES]
    if len(named) < 2:
        return None
    dashes = all(value == "-" for _, value in named)
    shown = [option if dashes else f"{option} {value}" for option, value in named]
    listed = " and ".join(shown) if len(shown) == 2 else ", ".join(shown[:-1]) + " and " + shown[-1]
    verb = ("both" if len(shown) == 2 else "all") + (" name -" if dashes else " read standard input")
    return f"standard input can be read by one option only: {listed} {verb}"


def contradictions(args: argparse.Namespace) -> list[str]:
    """Two options given together that contradict each other, one line each (never one silently winning)."""
    found = []
    for (first, first_dest), (second, second_dest) in CONTRADICTIONS:
        if getattr(args, first_dest, None) and getattr(args, second_dest, None):
            found.append(f"{first} and {second} {getattr(args, second_dest)} contradict each other: give one of them")
    return found


def problems_of(args: argparse.Namespace) -> list[str]:
    """Every problem with the output paths a parsed command line names, and every pair of options
    that contradict each other, one line each."""
    command, action = str(getattr(args, "command", "")), getattr(args, "action", None)
    options = OUTPUTS.get((command, action)) or OUTPUTS.get((command, None)) or ()
    problems = contradictions(args) + input_folder_problems(args) + clash_problems(args)
    twice = stdin_problem((option, getattr(args, dest, None)) for option, dest in INPUT_FILES)
    if twice:
        problems.append(twice)
    for ledger_problem in (ledger_file_problem(args), ledger_folder_problem(args)):
        if ledger_problem:
            problems.append(ledger_problem)
    for option, kind in options:
        value = getattr(args, option.lstrip("-").replace("-", "_").lower(), None)
        if value is None:
            continue
        problem = (file_problem if kind == FILE else dir_problem)(option, value)
        if problem:
            problems.append(problem)
    return problems


# ---------------------------------------------------------------- optional dependencies


def extra_problem(args: argparse.Namespace) -> str | None:
    """The optional dependency or interpreter a command line needs and this environment lacks (for an
    extra: which one to install)."""
    if getattr(args, "command", None) == "demo":
        return interpreter_problem("--python", getattr(args, "python", None))
    if getattr(args, "scheduler", None):
        try:
            import distributed  # noqa: F401
        except ImportError:
            return (f"--scheduler needs dask.distributed, which is not installed: "
                    "pip install 'pytest-objective-scoring[cluster]'")  # fmt: skip
    return None


def interpreter_problem(option: str, python: str | None) -> str | None:
    """Why ``option PYTHON`` is not an interpreter that can be run, or None."""
    if not python:
        return None
    import shutil

    found = shutil.which(python) if os.sep not in python else (python if os.path.exists(python) else None)
    if found is None:
        return f"{option} {python}: no such interpreter"
    if os.path.isdir(found):
        return f"{option} {python}: a directory, not an interpreter"
    if not os.access(found, os.X_OK):
        return f"{option} {python}: not executable"
    return None


# ---------------------------------------------------------------- a pipe the reader closed


def closed_pipe(streams: Sequence[str] = ("stdout",)) -> int:
    """After a BrokenPipeError: point the closed stream at /dev/null, so the interpreter's final
    flush cannot fail again, and give :data:`EXIT_CLOSED_PIPE`."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for name in streams:
        stream = getattr(sys, name)
        try:
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError):  # pragma: no cover - a stream without a descriptor
            pass
    os.close(devnull)
    return EXIT_CLOSED_PIPE


# ---------------------------------------------------------------- input files


def not_text(option: str, path: str | os.PathLike[str], exc: UnicodeDecodeError, expected: str) -> str:
    """One line for an input file that is not UTF-8 text (a binary file given by mistake)."""
    return (f"{option}{path}: not a UTF-8 text file (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}): "
            f"expected {expected}")  # fmt: skip
