"""Grade Django's and SymPy's own test runners from their console logs, with the pytest outcome rules.

A third of SWE-bench's instances do not run under pytest: Django's run ``tests/runtests.py``
(unittest's text runner at ``--verbosity 2``) and SymPy's ``bin/test --verbose``. Neither
leaves an outcome file; what they leave is their console output. :func:`grade_log` reads it,
turns each test's result into the phase facts the live plugin collects
(:class:`~.outcomes.Collector`) and grades them with the same :func:`~.scorer.grade`, so a
listed test counts exactly as a pytest test with the same outcome would (``docs/outcomes.md``)
and a listed test the log does not show is **missing**, never a pass. Nothing is executed.

Two readings of one log are kept:

* **ours** (``compat="strict"``): every result line, whatever else the test printed around
  it, with its outcome as the runner meant it (``docs/foreign-runners.md`` has the tables):
  a Django ``expected failure`` is ``xfailed``, an ``unexpected success`` is
  ``xpassed_strict`` (unittest fails the run for it), SymPy's ``f`` / ``X`` are ``xfailed`` /
  ``xpassed``; a test whose status line was swallowed (a failing subtest under Python < 3.11,
  output printed by the test) still gets its result from the failure blocks.
* **SWE-bench 5.x's** (``compat="swebench"``): the status map SWE-bench's
  ``parse_log_django`` / ``parse_log_sympy`` read from the same text (written here from
  their rules, not copied, and checked against them on real logs), graded by the
  ``swebench`` rules of :func:`~.scorer.grade`. Where SWE-bench reads no status for a test
  that ran (an ``expected failure``, the last test of a SymPy file, a docstring test listed
  under its method name) the result shows the outcome the log holds, uncounted, with a hint
  saying why.

This module never imports pytest.

Why over 800 lines: two console formats (Django's unittest runner, SymPy's bin/test), each
read twice (ours and SWE-bench 5.x's reading) through one index and one fold; the two
readings of one format must be read side by side to see where they differ.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from . import outcomes as oc
from .instances import Instance
from .outcomes import Collector
from .reports import ReportError
from .scorer import HINT_LIMIT, SWEBENCH_PASSES, SWEBENCH_STATUS, Grading, grade, make_score

__all__ = [
    "COMMANDS",
    "CONVENTIONS",
    "DJANGO",
    "RUNNERS",
    "SYMPY",
    "LogError",
    "LogEvent",
    "LogRun",
    "LogTest",
    "DJANGO_DESCRIPTION",
    "detect_log_runner",
    "django_ids",
    "grade_log",
    "grade_run",
    "read_log",
    "read_text",
    "swebench_statuses",
]

DJANGO: Final = "django"
SYMPY: Final = "sympy"
RUNNERS: Final = (DJANGO, SYMPY)

COMMANDS: Final[Mapping[str, str]] = {
    DJANGO: "./tests/runtests.py --verbosity 2 --parallel 1 [LABEL ...]",
    SYMPY: "bin/test -C --verbose [PATH ...]",
}
CONVENTIONS: Final[Mapping[str, str]] = {
    DJANGO: "test_foo (app.tests.FooTests) as unittest prints it (also test_foo (app.tests.FooTests.test_foo), "
    "Python 3.11's spelling; app.tests.FooTests.test_foo, the runtests.py label; and the first line of the "
    "test's docstring, which SWE-bench lists for a test that has one)",
    SYMPY: "sympy/core/tests/test_basic.py:test_foo (also test_foo alone, as SWE-bench lists it, and "
    "sympy/core/tests/test_basic.py::test_foo)",
}

UNKNOWN_PATCH_REF: Final = "unknown"  # reports.UNKNOWN_PATCH_REF
MESSAGE_LIMIT: Final = 400  # recorder.MESSAGE_LIMIT
EXPECTED: Final = (
    f"expected the console log of Django's tests/runtests.py ({COMMANDS[DJANGO]}) or SymPy's bin/test "
    f"({COMMANDS[SYMPY]})"
)
NO_EXIT_STATUS: Final = (
    "a console log records no exit status (unless SWE-bench's '>>>>> Test Exit Code' line is in it): the run's "
    "closing summary is what tells a finished run from one that was cut short"
)
SWEBENCH_NOTES: Final[Mapping[str, str]] = {
    DJANGO: "compat=swebench reads the log as SWE-bench 5.x's parse_log_django does: 'expected failure' and "
    "'unexpected success' get no status (failing both gates), a test with a docstring is known by the docstring's "
    "first line only, and a status not on the line that names the test is lost unless the line starts with 'ok'",
    SYMPY: "compat=swebench reads the log as SWE-bench 5.x's parse_log_sympy does: only 'ok', 'F' and 'E' are read "
    "(f, X and skips get no status), a status followed by the file's [OK]/[FAIL] mark (the last test of each file) "
    "or printed after the test's own output is lost, and a failure block's file:name is FAILED",
}

# SWE-bench's markers (swebench.harness.constants), when the log is SWE-bench's own test_output.txt.
START_TEST_OUTPUT: Final = ">>>>> Start Test Output"
END_TEST_OUTPUT: Final = ">>>>> End Test Output"
BAD_MARKERS: Final[Mapping[str, str]] = {
    ">>>>> Patch Apply Failed": "the patch did not apply",
    ">>>>> Reset Failed": "the repository could not be reset",
    ">>>>> Tests Errored": "the test command errored",
    ">>>>> Tests Timed Out": "the tests timed out",
}
_EXIT_CODE: Final = re.compile(r">>>>> Test Exit Code:\s*(-?\d+)")
_ANSI: Final = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

PASSED: Final = "PASSED"  # SWE-bench's TestStatus values
FAILED: Final = "FAILED"
SKIPPED: Final = "SKIPPED"
ERROR: Final = "ERROR"


class LogError(ReportError):
    """A log that cannot be graded: which file, where in it, and what is wrong."""


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class LogTest:
    """One test's result as the runner's log shows it."""

    runner: str
    test_id: str  # the canonical id (CONVENTIONS)
    aliases: tuple[str, ...]  # the other spellings that name it
    outcome: str  # an outcomes.OUTCOMES value
    status: str  # the runner's own word for it: "ok", "expected failure", "F", "s", "" when none was printed
    message: str
    line: int
    doc: str = ""  # Django: the first line of its docstring, printed in place of its name before " ... "


@dataclass(frozen=True)
class LogEvent:
    """A result for a whole module or class rather than for one test.

    Django: a test module that failed to import (unittest's ``_FailedTest``), a
    ``setUpClass`` / ``setUpModule`` (or their teardowns) that raised. SymPy: a test file
    that failed to import (``[?]   Failed to import``). ``scope`` is the module, class or
    file it covers.
    """

    runner: str
    scope: str
    kind: str  # "import", "setup", "teardown"
    message: str
    line: int

    @property
    def description(self) -> str:
        what = {"import": "failed to import", "setup": "its class or module setup raised",
                "teardown": "its class or module teardown raised"}[self.kind]  # fmt: skip
        return f"{self.scope}: {what}" + (f" ({self.message})" if self.message else "")


@dataclass
class LogRun:
    """What one runner's log says about a run."""

    runner: str
    path: str
    sha256: str
    tests: list[LogTest] = field(default_factory=list)
    events: list[LogEvent] = field(default_factory=list)
    swebench: dict[str, str] = field(default_factory=dict)  # SWE-bench 5.x's status map of the same text
    finished: bool = False  # the runner's closing summary is in the log
    summary: str | None = None  # that summary, as printed
    verbose: bool = True  # sympy: the log names its tests (bin/test --verbose)
    runtime: str | None = None
    exit_code: int | None = None  # SWE-bench's '>>>>> Test Exit Code' line
    cut_short: str | None = None  # why the log is not a whole run (a SWE-bench marker)
    notes: list[str] = field(default_factory=list)

    def phase_facts(self) -> list[dict[str, Any]]:
        """Every test as the phase facts the live plugin records, named by its canonical id."""
        return [{"nodeid": t.test_id, "when": when, "outcome": outcome, "xfail": xfail, "strict_xpass": strict,
                 "message": message} for t in self.tests
                for when, outcome, xfail, strict, message in _phases(t.outcome, t.message)]  # fmt: skip


# --------------------------------------------------------------------------- reading


def _read(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise LogError(path, "no such file") from None
    except IsADirectoryError:
        raise LogError(path, f"is a directory; {EXPECTED}") from None
    except OSError as exc:
        raise LogError(path, f"cannot be read: {exc.strerror}") from None
    text = data.decode("utf-8", "replace").removeprefix("\ufeff")
    if not text.strip():
        raise LogError(path, f"is empty (no log was written: did the run die first?); {EXPECTED}")
    return text


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "\u2026"


def _section(text: str) -> tuple[str, str | None, int]:
    """The part of the log the runner wrote, why it is not a whole run, and where it starts.

    A SWE-bench ``test_output.txt`` holds the runner's output between its start and end
    markers (and a failure marker when the patch did not apply or the tests timed out).
    """
    for marker, why in BAD_MARKERS.items():
        if marker in text:
            return text, f"the log carries SWE-bench's '{marker}' marker: {why}", 0
    if START_TEST_OUTPUT not in text:
        return text, None, 0
    head, _, body = text.partition(START_TEST_OUTPUT)
    if END_TEST_OUTPUT not in body:
        return body, f"the log has SWE-bench's '{START_TEST_OUTPUT}' marker but not its end marker: it was cut short", (
            head.count("\n"))  # fmt: skip
    return body.partition(END_TEST_OUTPUT)[0], None, head.count("\n")


def read_log(path: str | Path, runner: str | None = None) -> LogRun:
    """Read a Django ``runtests.py`` or SymPy ``bin/test`` log.

    ``runner`` is one of :data:`RUNNERS`, or None to detect it from the content
    (:func:`detect_log_runner`). Raises :class:`LogError` for a file that cannot be read,
    is empty, or (with no runner given) is neither runner's log.
    """
    path = Path(path)
    if runner is not None and runner not in RUNNERS:
        raise ValueError(f"unknown runner {runner!r}; expected one of {', '.join(RUNNERS)}")
    raw = _read(path)
    text = raw.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as Python's text mode
    detected = _detect(text)
    if runner is None:
        if detected is None:
            sample = text.strip()[:40]
            raise LogError(path, f"is neither runner's log (it starts with {sample!r}); {EXPECTED}", line=1)
        runner = detected
    run = read_text(raw, runner, str(path))
    if detected is not None and detected != runner:
        run.notes.append(f"the log looks like {detected}'s; it was graded as {runner}'s, as asked")
    return run


def read_text(raw: str, runner: str, path: str) -> LogRun:
    """Read the console output ``raw`` of a ``runner`` run (``path`` names where it came from): what
    :func:`read_log` reads from a file, and the live runner from a run's log."""
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    run = LogRun(runner, path, hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest())
    body, run.cut_short, offset = _section(text)
    found = _EXIT_CODE.search(text)
    run.exit_code = int(found.group(1)) if found else None
    lines = _ANSI.sub("", body).split("\n")
    if runner == DJANGO:
        _Django(run, offset).read(lines)
    else:
        _Sympy(run, offset).read(lines)
    run.swebench = swebench_statuses(runner, text)
    return run


# --------------------------------------------------------------------------- detection

# unittest's description of a test: "test_foo (app.tests.FooTests)", or since Python 3.11
# "test_foo (app.tests.FooTests.test_foo)"; a subtest adds "[msg]" and/or "(params)".
_DESC: Final = r"(?P<name>[^\s()]+) \((?P<path>[A-Za-z_][\w.]*)\)"
_DJ_STATUS: Final = r"(?P<status>ok|OK|FAIL|ERROR|skipped(?: .*)?|expected failure|unexpected success)"
DJANGO_DESCRIPTION: Final = re.compile(rf"(?P<indent>[ \t]*){_DESC}(?P<sub>(?: \[[^\]]*\])?(?: \(.*?\))?)(?P<sep> \.\.\.(?: |$)|$)")
_DJ_STATUS_ONLY: Final = re.compile(rf"{_DJ_STATUS}$")
_DJ_DOC: Final = re.compile(rf"(?P<doc>.*) \.\.\. {_DJ_STATUS}$")
_DJ_RAN: Final = re.compile(r"Ran (?P<n>\d+) tests? in [\d.]+s$")
_DJ_VERDICT: Final = re.compile(r"(OK|FAILED)( \(.*\))?$")
_DJ_BLOCK: Final = re.compile(rf"(?P<kind>FAIL|ERROR|UNEXPECTED SUCCESS): {_DESC}(?P<sub>.*)$")
_DJ_FOUND: Final = re.compile(r"Found (\d+) test\(s\)\.$")
_RULE_EQ: Final = "=" * 70
_RULE_DASH: Final = "-" * 70
_CLASS_FIXTURES: Final = {"setUpClass": "setup", "setUpModule": "setup", "tearDownClass": "teardown",
                          "tearDownModule": "teardown"}  # fmt: skip

_SY_FILE: Final = re.compile(r"(?P<file>\S+?\.py)\[(?P<n>\d+|\?)\] ?(?P<rest>.*)$")
_SY_MARK: Final = re.compile(r"\s*\[(OK|FAIL)\]$")
_SY_TEST: Final = re.compile(r"(?P<name>test\w*)(?: (?P<rest>.*))?$")
_SY_HEADER: Final = re.compile(r"_+ (?P<title>.+?) _+$")
_SY_RULE: Final = re.compile(r"_{8,}$")
_SY_FINISHED: Final = re.compile(r"\btests finished: (?P<n>\d+) passed")
_SY_BANNER: Final = re.compile(r"=+ test process starts =+$")
_SY_EXECUTABLE: Final = re.compile(r"executable:\s+\S+\s+\((?P<version>[\d.]+)-\w+-\d+\) \[(?P<impl>[^\]]+)\]")
_SY_STATUS: Final[Mapping[str, str]] = {
    "ok": oc.PASSED, ".": oc.PASSED, "F": oc.FAILED, "E": oc.ERROR, "T": oc.ERROR, "f": oc.XFAILED,
    "X": oc.XPASSED, "s": oc.SKIPPED, "w": oc.SKIPPED, "K": oc.SKIPPED,
}  # fmt: skip


def _detect(text: str) -> str | None:
    lines = [ln.strip() for ln in _ANSI.sub("", text[:2_000_000]).split("\n")]
    for line in lines:
        if _SY_BANNER.match(line) or _SY_FINISHED.search(line) or _SY_FILE.match(line):
            return SYMPY
    for line in lines:
        head = DJANGO_DESCRIPTION.match(line)
        if head and head.group("sep").strip():
            rest = line[head.end():]
            if _DJ_STATUS_ONLY.match(rest):
                return DJANGO
        if _DJ_RAN.match(line) or line.startswith("Testing against Django installed in"):
            return DJANGO
    return None


def detect_log_runner(path: str | Path) -> str | None:
    """``"django"`` or ``"sympy"`` from the log's content, or None (anything else).

    Raises :class:`LogError` for a file that cannot be read or is empty.
    """
    return _detect(_read(Path(path)).replace("\r\n", "\n").replace("\r", "\n"))


# --------------------------------------------------------------------------- Django


def _dotted(name: str, path: str) -> str:
    """The runtests.py label of a test: ``app.tests.FooTests.test_foo``."""
    return path if path.endswith("." + name) else f"{path}.{name}"


def django_ids(name: str, path: str) -> tuple[str, list[str]]:
    """The canonical id (as printed) and the other spellings of a Django test."""
    label = _dotted(name, path)
    cls = path.removesuffix("." + name) if path.endswith("." + name) else path
    old, new = f"{name} ({cls})", f"{name} ({label})"
    printed = f"{name} ({path})"
    return printed, [s for s in dict.fromkeys((old, new, label)) if s != printed]


@dataclass
class _Pending:
    name: str
    path: str
    line: int
    doc: str = ""
    sub_outcomes: list[str] = field(default_factory=list)
    output: bool = False


class _Django:
    """unittest's TextTestRunner at verbosity 2, as Django's runtests.py drives it."""

    def __init__(self, run: LogRun, offset: int) -> None:
        self.run = run
        self.offset = offset
        self.pending: _Pending | None = None
        self.awaiting_doc: _Pending | None = None
        self.results: list[tuple[_Pending, str]] = []  # (test, status word or "")
        # the runtests.py label -> (name, class path, [(outcome, message, line)]) of its FAIL / ERROR blocks
        self.blocks: dict[str, tuple[str, str, list[tuple[str, str, int]]]] = {}
        self.doc_of_block: dict[str, str] = {}
        self.found: int | None = None
        self.ran: int | None = None

    def read(self, lines: Sequence[str]) -> None:
        index = 0
        while index < len(lines):
            line = lines[index]
            number = self.offset + index + 1
            if line.strip() == _RULE_EQ or (line.strip() == _RULE_DASH and self._ran_follows(lines, index)):
                index = self._blocks(lines, index)
                continue
            found = _DJ_FOUND.match(line.strip())
            if found:
                self.found = int(found.group(1))
            self._line(line, number)
            index += 1
        self._close()
        self._finish()

    @staticmethod
    def _ran_follows(lines: Sequence[str], index: int) -> bool:
        return index + 1 < len(lines) and bool(_DJ_RAN.match(lines[index + 1].strip()))

    def _line(self, line: str, number: int) -> None:
        if self.awaiting_doc is not None:
            test, self.awaiting_doc = self.awaiting_doc, None
            stripped = line.strip()
            doc = _DJ_DOC.match(stripped)
            if doc:
                test.doc = doc.group("doc")
                self._start(test)
                self._close(doc.group("status"))
                return
            if " ... " in stripped or stripped.endswith(" ..."):
                before, _, rest = stripped.partition(" ...")
                test.doc = before
                self._start(test)
                self._rest(rest.removeprefix(" "), number)
                return
            self._start(test)  # no docstring line after all: whatever follows is its output
        head = DJANGO_DESCRIPTION.match(line)
        if head is not None:
            self._head(head, line, number)
            return
        if self.pending is not None:
            stripped = line.strip()
            status = _DJ_STATUS_ONLY.match(stripped)
            if status:
                self._close(status.group("status"))
            elif stripped:
                self.pending.output = True

    def _head(self, head: re.Match[str], line: str, number: int) -> None:
        name, path, sub = head.group("name"), head.group("path"), head.group("sub")
        rest = line[head.end():]
        if sub and head.group("sep") and self.pending is not None and (name, path) == (self.pending.name, self.pending.path):
            status = _DJ_STATUS_ONLY.match(rest.strip())  # Python 3.11+: a failing subtest's own line
            if status and status.group("status") in ("FAIL", "ERROR"):
                self.pending.sub_outcomes.append(_django_outcome(status.group("status")))
            return
        self._close()
        if name in _CLASS_FIXTURES or path.startswith("unittest.loader._FailedTest"):
            return  # a class fixture or an import failure: known from its ERROR block
        test = _Pending(name, path, number)
        if not head.group("sep"):
            self.awaiting_doc = test  # a docstring's first line follows, then " ... status"
            return
        self._start(test)
        self._rest(rest, number)

    def _rest(self, rest: str, number: int) -> None:
        """What follows ``" ... "``: the status, the test's own output, or (Python < 3.11, a failing
        subtest printed no status) the next test's description."""
        if not rest.strip():
            return
        status = _DJ_STATUS_ONLY.match(rest)
        if status:
            self._close(status.group("status"))
            return
        head = DJANGO_DESCRIPTION.match(rest)
        if head is not None and head.group("indent") == "":
            self._head(head, rest, number)
            return
        if self.pending is not None:
            self.pending.output = True

    def _start(self, test: _Pending) -> None:
        self._close()
        self.pending = test

    def _close(self, status: str = "") -> None:
        if self.pending is not None:
            self.results.append((self.pending, status))
            self.pending = None
        if self.awaiting_doc is not None and not status:
            self.results.append((self.awaiting_doc, ""))
            self.awaiting_doc = None

    def _blocks(self, lines: Sequence[str], index: int) -> int:
        """unittest's failure blocks (``FAIL: …`` / ``ERROR: …`` between rules) and the summary."""
        self._close()
        while index < len(lines):
            line = lines[index].strip()
            if line == _RULE_EQ:
                index += 1
                continue
            if line == _RULE_DASH and self._ran_follows(lines, index):
                ran = _DJ_RAN.match(lines[index + 1].strip())
                assert ran is not None
                self.ran = int(ran.group("n"))
                index += 2
                while index < len(lines) and not lines[index].strip():
                    index += 1
                if index < len(lines) and _DJ_VERDICT.match(lines[index].strip()):
                    self.run.finished = True
                    self.run.summary = f"{ran.group(0)}; {lines[index].strip()}"
                    index += 1
                return index
            block = _DJ_BLOCK.match(line)
            if block is None:
                return index  # not unittest's summary after all
            index += 1
            doc = ""
            if index < len(lines) and lines[index].strip() not in (_RULE_DASH, ""):
                doc = lines[index].strip()
                index += 1
            body: list[str] = []
            if index < len(lines) and lines[index].strip() == _RULE_DASH and not self._ran_follows(lines, index):
                index += 1  # (3.11's UNEXPECTED SUCCESS block has no body: its rule is the summary's)
                while index < len(lines) and lines[index].strip() != _RULE_EQ and not (
                    lines[index].strip() == _RULE_DASH and self._ran_follows(lines, index)
                ):
                    body.append(lines[index])
                    index += 1
            message = next((ln.strip() for ln in reversed(body) if ln.strip()), "")
            self._block(block, doc, message, self.offset + index)
        return index

    def _block(self, block: re.Match[str], doc: str, message: str, number: int) -> None:
        name, path, kind = block.group("name"), block.group("path"), block.group("kind")
        if path.startswith("unittest.loader._FailedTest"):
            module = path.removeprefix("unittest.loader._FailedTest").removeprefix(".") or name
            self.run.events.append(LogEvent(DJANGO, module, "import", _clip(message), number))
            return
        if name in _CLASS_FIXTURES:
            self.run.events.append(LogEvent(DJANGO, path, _CLASS_FIXTURES[name], _clip(message), number))
            return
        outcome = {"FAIL": oc.FAILED, "ERROR": oc.ERROR, "UNEXPECTED SUCCESS": oc.XPASSED_STRICT}[kind]
        canonical = django_ids(name, path)[0]
        self.blocks.setdefault(_dotted(name, path), (name, path, []))[2].append((outcome, _clip(message), number))
        if doc:
            self.doc_of_block[canonical] = doc

    def _finish(self) -> None:
        run = self.run
        seen: set[str] = set()
        for test, status in self.results:
            canonical, aliases = django_ids(test.name, test.path)
            label = _dotted(test.name, test.path)
            doc = test.doc or self.doc_of_block.get(canonical, "")
            if doc:
                aliases.append(doc)
            blocks = self.blocks[label][2] if label in self.blocks else []
            outcomes = [*test.sub_outcomes, *(o for o, _, _ in blocks)]
            messages = [m for _, m, _ in blocks if m]
            if status:
                outcomes.append(_django_outcome(status))
            if status.startswith("skipped"):
                messages.insert(0, _skip_reason(status))
            if not outcomes:
                outcomes = [oc.INCOMPLETE]
                messages.insert(0, "the log shows no result for it (the run stopped while it ran?)")
            run.tests.append(LogTest(DJANGO, canonical, tuple(aliases), oc.worst(outcomes), status,
                                     _clip(messages[0]) if messages else "", test.line, doc))  # fmt: skip
            seen.add(label)
        for label, (name, path, blocks) in self.blocks.items():  # a block for a test whose line is not in the log
            if label in seen:
                continue
            canonical, aliases = django_ids(name, path)
            doc = self.doc_of_block.get(canonical, "")
            if doc:
                aliases.append(doc)
            run.tests.append(LogTest(DJANGO, canonical, tuple(aliases), oc.worst(o for o, _, _ in blocks), "",
                                     blocks[0][1], blocks[0][2], doc))  # fmt: skip
        if self.ran is not None:
            counted = len(run.tests) + sum(e.kind == "import" for e in run.events)
            if counted != self.ran:
                run.notes.append(f"unittest says it ran {self.ran} test(s); the log shows results for {counted}")


def _django_outcome(status: str) -> str:
    if status in ("ok", "OK"):
        return oc.PASSED
    if status == "FAIL":
        return oc.FAILED
    if status == "ERROR":
        return oc.ERROR
    if status == "expected failure":
        return oc.XFAILED
    if status == "unexpected success":
        return oc.XPASSED_STRICT  # unittest's wasSuccessful() is False for it: a strict xfail that passed
    return oc.SKIPPED


def _skip_reason(status: str) -> str:
    reason = status.removeprefix("skipped").strip()
    if len(reason) >= 2 and reason[0] == reason[-1] and reason[0] in "'\"":
        reason = reason[1:-1]
    return reason


# --------------------------------------------------------------------------- SymPy


class _Sympy:
    """SymPy's own test runner (``bin/test``, ``sympy.test()``): per-file headers, a line a test
    with ``--verbose`` (one character a test without), then the failure blocks and the summary."""

    def __init__(self, run: LogRun, offset: int) -> None:
        self.run = run
        self.offset = offset
        self.file: str | None = None
        self.verbose_file = False
        self.pending: tuple[str, int, list[str]] | None = None  # (name, line, text after the name)
        self.results: list[tuple[str, str, int, str, str]] = []  # (file, name, line, status, text)
        self.failures: dict[tuple[str, str], str] = {}
        self.terse_files: list[str] = []

    def read(self, lines: Sequence[str]) -> None:
        run = self.run
        index = 0
        in_summary = False
        while index < len(lines):
            line = lines[index].rstrip()
            number = self.offset + index + 1
            index += 1
            executable = _SY_EXECUTABLE.search(line)
            if executable and run.runtime is None:
                run.runtime = f"{executable.group('impl')}/{executable.group('version')}"
            finished = _SY_FINISHED.search(line)
            if finished:
                self._close()
                run.finished = True
                run.summary = " ".join(ln.strip(" =") for ln in lines[index - 1:index + 1] if ln.strip(" =")
                                       and "DO *NOT* COMMIT" not in ln)  # fmt: skip
                in_summary = True
                continue
            header = _SY_HEADER.match(line)
            if header is not None or _SY_RULE.match(line):
                self._close()
                self.file = None
                in_summary = True
                if header is not None:
                    index = self._failure_block(header.group("title"), lines, index)
                continue
            file = _SY_FILE.match(line)
            if file is not None:
                self._close()
                in_summary = False
                self._file(file, number)
                continue
            if in_summary or self.file is None:
                continue
            if not self.verbose_file:
                if _SY_MARK.search(line):
                    self.file = None
                continue
            mark = _SY_MARK.search(line)
            text = line[: mark.start()] if mark else line
            test = _SY_TEST.match(text)
            if test is not None:
                self._close()
                self.pending = (test.group("name"), number, [test.group("rest") or ""])
            elif self.pending is not None:
                self.pending[2].append(text)
            if mark:
                self._close()
                self.file = None
        self._close()
        self._finish()

    def _file(self, file: re.Match[str], number: int) -> None:
        self.file = file.group("file")
        rest = file.group("rest")
        if file.group("n") == "?":
            self.run.events.append(LogEvent(SYMPY, self.file, "import", "", number))
            self.file = None
            return
        self.verbose_file = not rest.strip()
        if not self.verbose_file:
            self.terse_files.append(self.file)
            if _SY_MARK.search(rest):
                self.file = None

    def _close(self) -> None:
        if self.pending is None or self.file is None:
            self.pending = None
            return
        name, line, parts = self.pending
        text = " ".join(p.strip() for p in parts if p.strip())
        status = text.rsplit(" ", 1)[-1] if text else ""
        if status not in _SY_STATUS or status == ".":
            status = ""
        self.results.append((self.file, name, line, status, text))
        self.pending = None

    def _failure_block(self, title: str, lines: Sequence[str], index: int) -> int:
        """``____ file.py:test_name ____`` then its traceback; ``____ /abs/file.py ____`` for an import
        failure. Returns where the block ends."""
        body: list[str] = []
        while index < len(lines):
            line = lines[index].rstrip()
            if _SY_HEADER.match(line) or _SY_RULE.match(line) or _SY_FINISHED.search(line):
                break
            body.append(line)
            index += 1
        message = _clip(next((ln.strip() for ln in reversed(body) if ln.strip()), ""))
        file, colon, name = title.rpartition(":")
        if colon and file.endswith(".py") and name.isidentifier():
            self.failures[(file, name)] = message
        elif title.endswith(".py"):
            for position, event in enumerate(self.run.events):
                if event.kind == "import" and (title == event.scope or title.endswith("/" + event.scope)):
                    self.run.events[position] = replace(event, message=message)
        return index

    def _finish(self) -> None:
        run = self.run
        seen: set[tuple[str, str]] = set()
        for file, name, line, status, text in self.results:
            outcome = _SY_STATUS.get(status, oc.INCOMPLETE)
            message = ""
            before = text[: -len(status)].strip() if status else text
            if status == "T" and before == "Timeout":
                outcome, message = oc.SKIPPED, "Timeout"
            elif outcome == oc.SKIPPED:
                message = "" if before == "-" else before
            elif outcome in (oc.FAILED, oc.ERROR):
                message = self.failures.get((file, name), "")
                if status == "T":
                    message = message or "timed out"
            elif outcome == oc.INCOMPLETE:
                message = "the log shows no result for it (the run stopped while it ran?)"
            run.tests.append(LogTest(SYMPY, f"{file}:{name}", (name, f"{file}::{name}"), outcome, status, message,
                                     line))  # fmt: skip
            seen.add((file, name))
        for (file, name), message in self.failures.items():  # terse logs name failing tests only here
            if (file, name) not in seen:
                run.tests.append(LogTest(SYMPY, f"{file}:{name}", (name, f"{file}::{name}"), oc.FAILED, "", message,
                                         0))  # fmt: skip
        if self.terse_files:
            run.verbose = False
            run.notes.append(f"bin/test ran without --verbose for {len(self.terse_files)} file(s) (e.g. "
                             f"{self.terse_files[0]}): such a log names only the tests that failed or raised, and "
                             "does not tell which of the two")  # fmt: skip


# --------------------------------------------------------------------------- SWE-bench 5.x's reading


def _swebench_django(text: str) -> dict[str, str]:
    """The status map SWE-bench 5.x's ``parse_log_django`` reads from a log (its rules, our code)."""
    statuses: dict[str, str] = {}
    described: str | None = None  # the text before " ... " on the last line that had one
    for raw in text.split("\n"):
        line = raw.strip()
        if "--version is equivalent to version" in line:
            statuses["--version is equivalent to version"] = PASSED
        if " ... " in line:
            described = line.partition(" ... ")[0]
        for ending in (" ... ok", " ... OK", " ...  OK"):
            if line.endswith(ending):
                if line.startswith("Applying sites.0002_alter_domain_unique...test_no_migrations"):
                    line = line.partition("...")[2].strip()  # SWE-bench's special case for django__django-7188
                statuses[line[: -len(ending)]] = PASSED
                break
        if " ... skipped" in line:
            statuses[line.partition(" ... skipped")[0]] = SKIPPED
        if line.endswith(" ... FAIL"):
            statuses[line.partition(" ... FAIL")[0]] = FAILED
        words = line.split()
        if line.startswith("FAIL:") and len(words) > 1:
            statuses[words[1]] = FAILED
        if line.endswith(" ... ERROR"):
            statuses[line.partition(" ... ERROR")[0]] = ERROR
        if line.startswith("ERROR:") and len(words) > 1:
            statuses[words[1]] = ERROR
        if line.startswith("ok") and described is not None:
            statuses[described] = PASSED
    # A status pushed onto the next line by a long message printed between " ... " and "ok".
    for message in (r"Testing against Django installed in (?s:.*?) silenced\)\.", r"Internal Server Error: /.*/",
                    r"System check identified no issues \(0 silenced\)"):  # fmt: skip
        for found in re.finditer(rf"^(.*?)\s\.\.\.\s{message}\nok$", text, re.MULTILINE):
            statuses[found.group(1)] = PASSED
    return statuses


def _swebench_sympy(text: str) -> dict[str, str]:
    """The status map SWE-bench 5.x's ``parse_log_sympy`` reads from a log (its rules, our code)."""
    statuses: dict[str, str] = {}
    for line in text.split("\n"):
        key = _failure_header_key(line)
        if key is not None:
            statuses[key] = FAILED
    for raw in text.split("\n"):
        line = raw.strip()
        if not line.startswith("test_"):
            continue
        for ending, status in ((" E", ERROR), (" F", FAILED), (" ok", PASSED)):
            if line.endswith(ending):
                statuses[line.split()[0]] = status
    return statuses


def _failure_header_key(line: str) -> str | None:
    """``path.py:name`` from a line SWE-bench takes for a SymPy failure header: a space, a
    path up to the line's last ``.py:`` that has a space after it, and the name up to the
    line's last space."""
    last_space = line.rfind(" ")
    start = line.find(" ")
    while start != -1 and start < last_space:
        path_end = line.rfind(".py:", start + 1, last_space)
        if path_end != -1:
            return f"{line[start + 1:path_end]}.py:{line[path_end + 4:last_space]}"
        start = line.find(" ", start + 1)
    return None


def swebench_statuses(runner: str, text: str) -> dict[str, str]:
    """The status map SWE-bench 5.x's log parser for ``runner`` reads from ``text``.

    As SWE-bench's ``get_logs_eval`` does, a log holding its start and end markers is read
    between them, and whole when that part yields no status.
    """
    parse = _swebench_django if runner == DJANGO else _swebench_sympy
    if START_TEST_OUTPUT in text and END_TEST_OUTPUT in text:
        statuses = parse(text.split(START_TEST_OUTPUT)[1].split(END_TEST_OUTPUT)[0])
        if statuses:
            return statuses
    return parse(text)


# --------------------------------------------------------------------------- matching and grading


def _phases(outcome: str, message: str) -> list[tuple[str, str, bool, bool, str]]:
    """The phases an outcome stands for (a log has one result a test; these are synthetic)."""
    if outcome == oc.ERROR:
        return [("setup", "failed", False, False, message), ("teardown", "passed", False, False, "")]
    if outcome == oc.INCOMPLETE:
        return [("setup", "passed", False, False, ""), ("call", "passed", False, False, message)]
    call = {
        oc.PASSED: ("passed", False, False),
        oc.FAILED: ("failed", False, False),
        oc.SKIPPED: ("skipped", False, False),
        oc.XFAILED: ("skipped", True, False),
        oc.XPASSED: ("passed", True, False),
        oc.XPASSED_STRICT: ("failed", True, True),
    }[outcome]
    return [("setup", "passed", False, False, ""), ("call", call[0], call[1], call[2], message),
            ("teardown", "passed", False, False, "")]  # fmt: skip


def _feed(collector: Collector, key: str, outcome: str, message: str) -> None:
    for when, result, xfail, strict, text in _phases(outcome, message):
        if result == "passed" and not xfail and not text:
            collector.add_plain_pass(key, when, 0.0)
        else:
            collector.add_phase(key, when, result, xfail, strict, False, False, 0.0, text)


_SWEBENCH_FEED: Final[Mapping[str, str]] = {PASSED: oc.PASSED, FAILED: oc.FAILED, ERROR: oc.ERROR,
                                            SKIPPED: oc.SKIPPED}  # fmt: skip


class _Index:
    def __init__(self, run: LogRun) -> None:
        self.run = run
        self.by_id: dict[str, list[LogTest]] = {}
        self.by_alias: dict[str, list[LogTest]] = {}
        for test in run.tests:
            self.by_id.setdefault(test.test_id, []).append(test)
            for alias in test.aliases:
                self.by_alias.setdefault(alias, []).append(test)

    def resolve(self, listed: str) -> list[LogTest]:
        if listed in self.by_id:
            return self.by_id[listed]
        if listed in self.by_alias:
            return self.by_alias[listed]
        if self.run.runner == DJANGO:  # a subtest: "test_foo (app.tests.FooTests) (i=2)"
            head = DJANGO_DESCRIPTION.match(listed)
            if head is not None and head.group("sub") and listed[head.end():] == "":
                parent = listed[: head.start("sub")]
                return self.by_id.get(parent) or self.by_alias.get(parent) or []
        return []


def _in_scope(runner: str, listed: str, event: LogEvent, unplaced: bool = True) -> bool:
    """Whether a listed id may live in the module, class or file an event covers.

    ``unplaced``: what an id that names no module or file (a bare SymPy name, a docstring)
    gets: it may live anywhere."""
    if runner == SYMPY:
        file = listed.partition("::")[0] if "::" in listed else listed.rpartition(":")[0]
        return unplaced if not file else file == event.scope or file.endswith("/" + event.scope)
    head = DJANGO_DESCRIPTION.match(listed)
    if head is None and not re.fullmatch(r"[\w.]+", listed):
        return unplaced  # a docstring's first line names no module
    dotted = _dotted(head.group("name"), head.group("path")) if head else listed
    return f".{event.scope}." in f".{dotted}"


def _hint(run: LogRun, index: _Index, listed: str) -> str:
    hints = [e.description for e in run.events if e.kind != "teardown" and _in_scope(run.runner, listed, e)]
    if run.runner == SYMPY and not run.verbose:
        hints.append("bin/test ran without --verbose: the log names only tests that failed")
    tail = listed.rpartition(":")[2] if run.runner == SYMPY else listed.split(" ", 1)[0].rpartition(".")[2]
    near = [t.test_id for t in run.tests if t.test_id.startswith(tail + " ") or t.test_id.endswith(":" + tail)
            or tail in t.aliases]  # fmt: skip
    near = list(dict.fromkeys(n for n in near if n != listed))
    if near:
        hints.append(f"ran as {', '.join(near[:3])} (the {run.runner} convention: {CONVENTIONS[run.runner]})")
    elif not hints:
        hints.append(f"no test in the log has this id (the {run.runner} convention: {CONVENTIONS[run.runner]})")
    return "; ".join(hints)


def _swebench_hint(run: LogRun, listed: str, tests: Sequence[LogTest]) -> str:
    """Why SWE-bench 5.x's reading of the log does not count a test that ran."""
    shown = tests[0]
    parser = f"SWE-bench 5.x's parse_log_{run.runner}"
    keys = [k for t in tests for k in (t.doc or t.test_id,) if k in run.swebench and k != listed]
    if keys:
        why = f"{parser} records it as {keys[0]!r} ({run.swebench[keys[0]]}) and SWE-bench matches listed ids exactly"
    elif run.runner == DJANGO and (shown.status in ("ok", "OK", "FAIL", "ERROR") or shown.status.startswith("skipped")):
        why = f"{parser} does not find its status ({shown.status!r}) on the line that names it"
    elif run.runner == SYMPY and shown.status in ("ok", "F", "E"):
        why = (f"{parser} does not read its status ({shown.status!r}): the file's [OK]/[FAIL] mark, or the test's own "
               "output, is on the same line")  # fmt: skip
    else:
        printed = repr(shown.status) if shown.status else "no status"
        why = f"it printed {printed}, which {parser} gives no status"
    return f"ran ({shown.outcome}), but {why}: its grading counts it as failing"


def _no_verdict(run: LogRun, grading: Grading, compat: str) -> str | None:
    """Why the log is not a verdict on the candidate, or None."""
    if run.cut_short:
        return run.cut_short
    imports = [e for e in run.events if e.kind == "import"]
    if not run.tests:
        if imports:
            return "no test ran: " + "; ".join(e.description for e in imports[:3])
        return f"the log holds no {run.runner} test result (an empty run, or one that stopped before its first test)"
    if not run.finished:
        closing = "'Ran N tests in …' and OK / FAILED" if run.runner == DJANGO else "'tests finished: …'"
        return f"the run never finished: the log has no closing {closing} line (killed, timed out, or cut short)"
    missing = [r.test_id for r in grading.results if r.outcome == oc.MISSING]
    for event in imports:
        hit = [t for t in missing if _in_scope(run.runner, t, event)]
        if hit:
            return f"{event.description}, so {len(hit)} listed test(s) never ran, e.g. {hit[0]}"
    if run.runner == SYMPY and not run.verbose and missing:
        return (f"bin/test ran without --verbose: the log names only the tests that failed, so {len(missing)} "
                f"listed test(s) cannot be found, e.g. {missing[0]} (run {COMMANDS[SYMPY]})")  # fmt: skip
    if compat == "swebench":
        if not run.swebench:
            return (f"SWE-bench 5.x's parse_log_{run.runner} reads no test status from this log: its grading calls "
                    "such a run not applied")  # fmt: skip
        if run.exit_code not in (None, 0) and not any(s in (FAILED, ERROR) for s in run.swebench.values()):
            return (f"the test command exited {run.exit_code} but the log reports no failure: SWE-bench 5.x "
                    "discards such a log as not describing the run")  # fmt: skip
    return None


def _graded_by(run: LogRun, compat: str) -> str:
    from . import envelope as env

    python = run.runtime.replace(" ", "_") if run.runtime else "unknown"
    return env.graded_by(mode=f"report:log-{run.runner}", pytest_version="none", python=python, platform="unknown",
                         timeout=None, compat=compat)  # fmt: skip


def _strict_grading(run: LogRun, instance: Instance, index: _Index) -> tuple[Grading, dict[str, list[LogTest]]]:
    collector = Collector()
    matches: dict[str, list[LogTest]] = {}
    for listed in instance.listed:
        tests = index.resolve(listed)
        if not tests:
            setups = [e for e in run.events if e.kind == "setup" and _in_scope(run.runner, listed, e, unplaced=False)]
            if setups:  # its class's setUpClass (or its module's setUpModule) raised: as a pytest fixture error
                _feed(collector, listed, oc.ERROR, setups[0].description)
            continue
        matches[listed] = tests
        for test in tests:  # one id answering to several tests: each run is kept, the worst counts
            _feed(collector, listed, test.outcome, test.message)
    return grade(instance, collector.records, "strict"), matches


def _swebench_grading(run: LogRun, instance: Instance, index: _Index) -> tuple[Grading, dict[str, list[LogTest]]]:
    collector = Collector()
    for key, status in run.swebench.items():
        _feed(collector, key, _SWEBENCH_FEED[status], "")
    grading = grade(instance, collector.records, "swebench")
    matches: dict[str, list[LogTest]] = {}
    results = []
    for result in grading.results:
        tests = index.resolve(result.test_id)
        if tests:
            matches[result.test_id] = tests
            shown = max(tests, key=lambda t: oc.SEVERITY.index(t.outcome))
            hint = ""
            mapped = SWEBENCH_STATUS.get(shown.outcome)
            would = mapped is not None and mapped in SWEBENCH_PASSES[result.gate]  # what a pytest run would give
            if result.outcome == oc.MISSING or would != result.counted:
                hint = _swebench_hint(run, result.test_id, tests) if not result.counted else (
                    f"ran ({shown.outcome}), but SWE-bench 5.x's parse_log_{run.runner} reads a passing status for it")
            result = result._replace(outcome=shown.outcome, message=shown.message, hint=hint,
                                     phases={w: o for w, o, *_ in _phases(shown.outcome, "")})  # fmt: skip
        results.append(result)
    return replace(grading, results=tuple(results)), matches


def grade_log(
    path: str | Path,
    instance: Instance,
    runner: str | None = None,
    compat: str = "strict",
    patch_ref: str | None = None,
) -> dict[str, Any]:
    """Grade a Django or SymPy runner's log: the envelope ``reports.grade_report`` gives, plus ``report``.

    ``runner`` is ``"django"``, ``"sympy"``, or None to detect it from the content.
    ``patch_ref`` names the candidate in the Score (``"unknown"`` without one). Raises
    :class:`LogError` for a log that cannot be graded and ``ValueError`` for an unknown
    runner or compat mode.
    """
    from . import envelope as env
    from .scorer import COMPAT_MODES

    if compat not in COMPAT_MODES:
        raise ValueError(f"unknown compat mode {compat!r}; expected one of {', '.join(COMPAT_MODES)}")
    run = read_log(path, runner)
    grading, reason, notes = grade_run(run, instance, compat)
    notes.insert(0, NO_EXIT_STATUS)
    score = None
    if reason is None:
        score = make_score(grading, patch_ref or UNKNOWN_PATCH_REF, _graded_by(run, compat), int(time.time()))
    session: dict[str, Any] = {
        "exitstatus": run.exit_code,
        "note": None,
        "collection_errors": [{"nodeid": e.scope, "message": e.description} for e in run.events],
        "rootdir": None,
        "instance_file": instance.source,
        "duration": None,
        "summary": run.summary,
    }
    report: dict[str, Any] = {
        "path": str(path),
        "format": f"log-{run.runner}",
        "runner": run.runner,
        "sha256": run.sha256,
        "notes": notes,
    }
    return env.build_envelope(
        instance_id=instance.instance_id,
        score=score,
        grading=grading,
        no_verdict=reason,
        session=session,
        extra={"report": report},
    )


def grade_run(run: LogRun, instance: Instance, compat: str) -> tuple[Grading, str | None, list[str]]:
    """A run as read (from its console log, or a live run's record: :mod:`.program_runs`) graded:
    the grading, why it is no verdict (None: it is one) and notes on how ids were matched."""
    index = _Index(run)
    notes = [*run.notes]
    if compat == "swebench":
        notes.append(SWEBENCH_NOTES[run.runner])
        grading, matches = _swebench_grading(run, instance, index)
    else:
        grading, matches = _strict_grading(run, instance, index)
    for listed, tests in matches.items():
        if len(tests) > 1:
            shown = ", ".join(f"{t.test_id} ({t.outcome})" for t in tests[:3])
            notes.append(f"{listed}: {len(tests)} tests answer to it ({shown}{' …' if len(tests) > 3 else ''}): "
                         + ("the worst counts" if compat == "strict" else "SWE-bench's status map keeps one"))
    results = []
    hinted = 0
    for result in grading.results:
        found = matches.get(result.test_id)
        if found is None:
            if result.outcome == oc.MISSING and hinted < HINT_LIMIT:
                hinted += 1
                result = result._replace(hint=_hint(run, index, result.test_id))
        elif len(found) == 1 and found[0].test_id != result.test_id:
            result = result._replace(matched=found[0].test_id)
        results.append(result)
    matched = {id(t) for tests in matches.values() for t in tests}
    grading = replace(grading, results=tuple(results), executed=len(run.tests),
                      unlisted=sum(id(t) not in matched for t in run.tests))  # fmt: skip
    return grading, _no_verdict(run, grading, compat), notes
