"""Regressions against gold beyond the listed tests: which tests to run, and how two runs compare.

A task's listed tests (FAIL_TO_PASS and PASS_TO_PASS) decide the Score, and the Score stays the
spec's. A candidate they resolve can still break tests they do not list. ``--against-gold SCOPE``
(``grade``, ``grade-batch``, ``ab run``) runs, for a resolved candidate, the tests of a wider scope
under the candidate and under the gold patch, each in a fresh sandboxed copy with the task's test
patch, and calls every test gold passes and the candidate does not a **regression**. The runs are
made by :mod:`.runner` (``Run.against_gold``); this module is the pure part:

* :func:`scope_files`: the test files of scope ``packages``: every test file (named as the
  repository's pytest configuration's ``python_files`` says, :func:`test_patterns`; by default
  ``test_*.py`` and ``*_test.py``) under the folder of each Python file the gold patch touches, and
  every test file in the folders that hold the listed tests' files, those files included. Scope
  ``suite`` runs pytest with no file arguments: the repository's whole suite as its own
  configuration (``testpaths``) names it. Both runs go on past files that fail to collect; a run
  under gold in which no test ran at all is ``incomplete``, never clean.
* :func:`regressions`: the tests gold passes (the PASS_TO_PASS gate's passes: passed, xpassed,
  xfailed) that the candidate does not pass, missing included (a test that did not run is never a
  pass). Listed tests are left out: the gates judged them.
* :func:`confirmed`: a regression counts only when a second pair of runs of just those tests
  shows it again (gold passes, the candidate does not); one that does not repeat is ``unstable``,
  reported and not counted, so a flaky test does not turn a clean candidate into a regressing one.
* :func:`section`: the envelope's ``against_gold`` section and its figure
  ``resolved_against_gold``: True when the candidate is resolved and the check found no confirmed
  regression; False when it is not resolved or a regression was confirmed; None when the check could
  not finish (a run timed out, was cut short or gave no record): unknown, never counted as clean.

What it cannot see: behaviour no test in the scope reaches, and tests gold itself fails (counted in
``gold_not_passing``, never compared). It compares outcomes only, never output or timing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Final

from . import outcomes as oc

SCOPES: Final = ("packages", "suite")
"""``--against-gold`` choices: the touched packages' and the listed tests' folders' test files, or the whole suite."""

PASSING: Final = frozenset({oc.PASSED, oc.XPASSED, oc.XFAILED})
"""What counts as a pass under gold and under the candidate: the PASS_TO_PASS gate's passes."""

SKIP_DIRS: Final = frozenset({".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", "node_modules", "__pycache__",
                              "build", "dist", ".eggs", "site-packages"})  # fmt: skip
MAX_LISTED: Final = 200
"""At most this many regressions (and unstable tests) are listed in the envelope; the counts are whole."""


DEFAULT_PATTERNS: Final = ("test_*.py", "*_test.py")


def test_patterns(config: Path | None) -> tuple[str, ...]:
    """The ``python_files`` globs of a pytest configuration file (``pytest.ini``, ``tox.ini``,
    ``setup.cfg``, ``pyproject.toml``), or pytest's default when it sets none or cannot be read."""
    if config is None or not config.is_file():
        return DEFAULT_PATTERNS
    value: Any = None
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
        if config.suffix == ".toml":
            import tomllib

            tool = tomllib.loads(text).get("tool", {}).get("pytest", {})
            value = tool.get("ini_options", {}).get("python_files", tool.get("python_files"))
        else:
            import configparser

            parser = configparser.ConfigParser(interpolation=None)
            parser.read_string(text)
            for section in ("pytest", "tool:pytest"):
                if parser.has_option(section, "python_files"):
                    value = parser.get(section, "python_files")
                    break
    except (ValueError, OSError, KeyError, AttributeError):  # configparser's and tomllib's errors are ValueErrors
        return DEFAULT_PATTERNS
    patterns = value.split() if isinstance(value, str) else [str(v) for v in value] if isinstance(value, list) else []
    return tuple(patterns) or DEFAULT_PATTERNS


def is_test_file(name: str, patterns: Sequence[str] = DEFAULT_PATTERNS) -> bool:
    """Whether a file's name matches one of the ``python_files`` globs (pytest matches the name)."""
    from fnmatch import fnmatch

    return name.endswith(".py") and any(fnmatch(name, pattern.rsplit("/", 1)[-1]) for pattern in patterns)


def _walk(root: Path, folder: str, recursive: bool, patterns: Sequence[str]) -> list[str]:
    base = root / folder if folder else root
    if not base.is_dir() or base.is_symlink():
        return []
    found = []
    if not recursive:
        for entry in sorted(base.iterdir()):
            if entry.is_file() and not entry.is_symlink() and is_test_file(entry.name, patterns):
                found.append(entry.relative_to(root).as_posix())
        return found
    for current, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            path = Path(current, name)
            if is_test_file(name, patterns) and not path.is_symlink():
                found.append(path.relative_to(root).as_posix())
    return found


def scope_files(copy: Path, gold_paths: Iterable[str], listed_files: Iterable[str],
                patterns: Sequence[str] = DEFAULT_PATTERNS) -> list[str]:  # fmt: skip
    """Scope ``packages``: the test files under the folder of each gold-touched Python file
    (recursively), then those directly in the folders of the listed tests' files, and those files;
    sorted, once each. Files at the repository's root are taken from the root only, not recursively
    (that would be the whole suite: ask for scope ``suite``). ``patterns``: :func:`test_patterns`."""
    listed_files = list(listed_files)
    files: dict[str, None] = {path: None for path in listed_files if (copy / path).is_file()}
    for path in gold_paths:
        if not path.endswith(".py"):
            continue
        folder = str(PurePosixPath(path).parent)
        if folder in ("", "."):
            files.update(dict.fromkeys(_walk(copy, "", False, patterns)))
        else:
            files.update(dict.fromkeys(_walk(copy, folder, True, patterns)))
    for path in listed_files:
        folder = str(PurePosixPath(path).parent)
        files.update(dict.fromkeys(_walk(copy, "" if folder == "." else folder, False, patterns)))
    return sorted(files)


def outcome_of(records: Mapping[str, oc.TestRecord], nodeid: str) -> str:
    record = records.get(nodeid)
    return oc.MISSING if record is None or not record.ran else record.outcome


def regressions(gold: Mapping[str, oc.TestRecord], candidate: Mapping[str, oc.TestRecord],
                listed: Iterable[str]) -> tuple[list[dict[str, str]], int, int]:  # fmt: skip
    """``(regressions, compared, gold_not_passing)``: each test beyond the listed ones that gold
    passes and the candidate does not (``{nodeid, gold, candidate, message}``), how many tests gold
    passes, and how many it does not (those are never compared)."""
    skip = set(listed)
    found: list[dict[str, str]] = []
    compared = not_passing = 0
    for nodeid, record in gold.items():
        if nodeid in skip or not record.ran:
            continue
        if record.outcome not in PASSING:
            not_passing += 1
            continue
        compared += 1
        mine = candidate.get(nodeid)
        outcome = outcome_of(candidate, nodeid)
        if outcome not in PASSING:
            found.append({"nodeid": nodeid, "gold": record.outcome, "candidate": outcome,
                          "message": (mine.message if mine is not None else "")[:300]})  # fmt: skip
    return found, compared, not_passing


def confirmed(found: Sequence[Mapping[str, str]], gold: Mapping[str, oc.TestRecord],
              candidate: Mapping[str, oc.TestRecord]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:  # fmt: skip
    """``(confirmed, unstable)``: the first runs' regressions split by a second pair of runs."""
    kept: list[dict[str, str]] = []
    unstable: list[dict[str, str]] = []
    for item in found:
        nodeid = item["nodeid"]
        again = outcome_of(gold, nodeid) in PASSING and outcome_of(candidate, nodeid) not in PASSING
        (kept if again else unstable).append({**item, "second_gold": outcome_of(gold, nodeid),
                                              "second_candidate": outcome_of(candidate, nodeid)})  # fmt: skip
    return kept, unstable


def section(scope: str, status: str, *, reason: str | None = None, files: Sequence[str] | None = None,
            found: Sequence[Mapping[str, str]] = (), unstable: Sequence[Mapping[str, str]] = (), compared: int = 0,
            gold_not_passing: int = 0, runs: Mapping[str, Any] | None = None, resolved: bool = True,
            collection_errors: Mapping[str, Sequence[str]] | None = None) -> dict[str, Any]:  # fmt: skip
    """The envelope's ``against_gold`` section. ``status``: ``clean``, ``regressions``,
    ``incomplete`` (``reason`` says why) or ``not_checked`` (the candidate is not resolved, or the
    runner cannot run a wider scope; ``reason``)."""
    figure: bool | None
    if not resolved:
        figure = False
    elif status == "clean":
        figure = True
    elif status == "regressions":
        figure = False
    else:
        figure = None
    return {
        "scope": scope,
        "status": status,
        "reason": reason,
        "resolved_against_gold": figure,
        "files": list(files) if files is not None else None,
        "compared": compared,
        "gold_not_passing": gold_not_passing,
        "regression_count": len(found),
        "regressions": [dict(r) for r in found[:MAX_LISTED]],
        "unstable_count": len(unstable),
        "unstable": [dict(r) for r in unstable[:MAX_LISTED]],
        "collection_errors": {who: list(paths)[:MAX_LISTED] for who, paths in (collection_errors or {}).items()},
        "runs": dict(runs or {}),
    }


def figure_of(envelope: Mapping[str, Any]) -> bool | None:
    """``resolved_against_gold`` of a graded envelope; None when the check was not asked for."""
    data = envelope.get("against_gold")
    if not isinstance(data, Mapping):
        return None
    value = data.get("resolved_against_gold")
    return value if isinstance(value, bool) else None


def summarise(figures: Iterable[tuple[str | None, bool | None]]) -> dict[str, Any] | None:
    """The second figure over many gradings: ``(status, resolved_against_gold)`` pairs (status None:
    the check was not asked for that grading). None when no grading asked for it."""
    pairs = [(s, f) for s, f in figures if s is not None]
    if not pairs:
        return None
    clean = sum(1 for _, f in pairs if f is True)
    unknown = sum(1 for _, f in pairs if f is None)
    regressing = sum(1 for s, _ in pairs if s == "regressions")
    return {"graded": len(pairs), "resolved_against_gold": clean, "regressions": regressing, "unknown": unknown,
            "rate": clean / len(pairs)}  # fmt: skip


def compact(data: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What the ledger and the batch report keep of an ``against_gold`` section: the figure, the
    status and the regressed tests' ids (the runs' details stay in the envelope)."""
    if not isinstance(data, Mapping):
        return None
    return {key: data.get(key) for key in ("scope", "status", "reason", "resolved_against_gold", "compared",
                                           "gold_not_passing", "regression_count", "unstable_count")} | {
        "regressions": [r.get("nodeid") for r in data.get("regressions") or []][:MAX_LISTED],
    }  # fmt: skip
