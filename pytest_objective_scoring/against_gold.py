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
            try:
                import tomllib
            except ImportError:  # Python 3.10: pytest's own dependency
                import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]

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


def is_test_file(path: str, patterns: Sequence[str] = DEFAULT_PATTERNS) -> bool:
    """Whether a repository-relative ``path`` matches one of the ``python_files`` globs as pytest
    matches them: a glob without a ``/`` against the file's name, one with a ``/`` against the end
    of its path (pytest's own ``testing/python/*.py`` names only that folder's files)."""
    from fnmatch import fnmatch

    name = path.rsplit("/", 1)[-1]
    if not name.endswith(".py"):
        return False
    for pattern in patterns:
        if "/" not in pattern:
            if fnmatch(name, pattern):
                return True
        elif fnmatch(path, pattern) or fnmatch(path, "*/" + pattern.lstrip("/")):
            return True
    return False


def _walk(root: Path, folder: str, recursive: bool, patterns: Sequence[str]) -> list[str]:
    base = root / folder if folder else root
    if not base.is_dir() or base.is_symlink():
        return []
    found = []
    if not recursive:
        for entry in sorted(base.iterdir()):
            if entry.is_file() and not entry.is_symlink() and is_test_file(entry.relative_to(root).as_posix(), patterns):
                found.append(entry.relative_to(root).as_posix())
        return found
    for current, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            path = Path(current, name)
            if is_test_file(path.relative_to(root).as_posix(), patterns) and not path.is_symlink():
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


def regressions(gold: Mapping[str, str], candidate: Mapping[str, str], listed: Iterable[str],
                messages: Mapping[str, str] | None = None) -> tuple[list[dict[str, str]], int, int]:  # fmt: skip
    """``(regressions, compared, gold_not_passing)``: each test beyond the listed ones that gold
    passes and the candidate does not (``{nodeid, gold, candidate, message}``; a test the candidate's
    run does not have is ``missing``), how many tests gold passes, and how many it does not (those
    are never compared). ``gold`` and ``candidate``: outcomes by test id (``runner._outcomes``)."""
    skip = set(listed)
    found: list[dict[str, str]] = []
    compared = not_passing = 0
    for nodeid, outcome in gold.items():
        if nodeid in skip:
            continue
        if outcome not in PASSING:
            not_passing += 1
            continue
        compared += 1
        mine = candidate.get(nodeid, oc.MISSING)
        if mine not in PASSING:
            found.append({"nodeid": nodeid, "gold": outcome, "candidate": mine, "message": (messages or {}).get(nodeid, "")[:300]})
    return found, compared, not_passing


def confirmed(found: Sequence[Mapping[str, str]], gold: Mapping[str, str],
              candidate: Mapping[str, str]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:  # fmt: skip
    """``(confirmed, unstable)``: the first runs' regressions split by a second pair of runs
    (outcomes by test id)."""
    kept: list[dict[str, str]] = []
    unstable: list[dict[str, str]] = []
    for item in found:
        nodeid = item["nodeid"]
        again_gold, again_mine = gold.get(nodeid, oc.MISSING), candidate.get(nodeid, oc.MISSING)
        again = again_gold in PASSING and again_mine not in PASSING
        (kept if again else unstable).append({**item, "second_gold": again_gold, "second_candidate": again_mine})
    return kept, unstable


def program_scope(runner: str, targets: Sequence[str], gold_paths: Iterable[str], copy: Path) -> list[str]:
    """Scope ``packages`` for Django's, unittest's and SymPy's runners, from the task's own targets
    (SWE-bench's test directives), as the runner names them: Django's module labels widened to every
    test module (``test*.py``) of their app's folder under ``tests/`` (``queries.tests`` to
    ``queries.tests``, ``queries.test_qs_combinators``, ...); unittest's module names to the test
    modules beside them; SymPy's test files to every ``test_*.py`` beside them and in the ``tests``
    folder beside each Python file the gold patch touches. The targets themselves stay first."""
    found: dict[str, None] = dict.fromkeys(targets)
    if runner == "sympy":
        folders = [str(PurePosixPath(t).parent) for t in targets]
        folders += [str(PurePosixPath(p).parent / "tests") for p in gold_paths if p.endswith(".py")]
        for folder in dict.fromkeys(folders):
            found.update(dict.fromkeys(_walk(copy, "" if folder == "." else folder, False, DEFAULT_PATTERNS)))
        return list(found)
    root = copy / "tests" if runner == "django" else copy
    for target in targets:
        parts = target.split(".")
        where = "/".join(parts[:1] if runner == "django" else parts[:-1])
        for path in _walk(root, where, runner == "django", ("test*.py",)):
            found.setdefault(path.removesuffix(".py").replace("/", "."), None)
    return list(found)


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
