"""Grade other languages' test runs from their JUnit XML, with the pytest outcome rules.

Multi-SWE-bench and SWE-PolyBench tasks run Java, JavaScript/TypeScript, Go and Rust
suites. Their runners leave JUnit XML; :func:`grade_junit` reads it, turns each
``<testcase>`` into the phase facts the live plugin collects (:class:`~.outcomes.Collector`)
and grades them with the same :func:`~.scorer.grade`, so a listed test counts exactly as a
pytest test with the same outcome would (``docs/outcomes.md``), and a listed test the file
does not hold is **missing**, never a pass. ``docs/foreign-runners.md`` documents every
rule below with its source.

Four writers are understood (:data:`RUNNERS`):

* ``surefire``: Maven Surefire / Failsafe, ``TEST-<class>.xml``, one file per test class
  (a directory of them is read whole). ``<testcase classname="com.x.FooTest" name="testBar">``.
* ``jest``: jest-junit. ``classname`` and ``name`` come from configurable templates
  (both ``"{classname} {title}"`` by default, i.e. the test's full name); the test file is
  named only by ``addFileAttribute`` (``file=``) or a ``{filepath}`` suite name.
* ``go``: go-junit-report. ``<testsuite name="<import path>">`` with
  ``<testcase classname="<import path>" name="TestX/subtest">``.
* ``nextest``: cargo-nextest (``[profile.*.junit]``). ``<testsuite name="<binary id>">`` with
  ``<testcase classname="<binary id>" name="<test path>">``.

Each test's canonical id (:func:`test_id`) is the runner's own way of naming it, and the ids
benchmark datasets list are accepted too (the table is in ``docs/foreign-runners.md``).

A runner's attempts it marks as reruns (``<flakyFailure>``, ``<flakyError>``,
``<rerunFailure>``, ``<rerunError>``, written by Surefire's ``rerunFailingTestsCount`` and
nextest's ``--retries``) are discarded and the final outcome counts, as a rerun plugin's
``rerun`` reports are in pytest; a testcase written twice without such a mark (jest-junit's
transient retries, two tests of one name) counts its worst outcome, as a repeated pytest id
does. A file that cannot be read, is not JUnit XML or is malformed raises
:class:`JUnitError` (a :class:`~.reports.ReportError`, so a ``ValueError``) naming the file
and line.

Django's ``tests/runtests.py`` and SymPy's ``bin/test`` leave no JUnit XML, only their console
output: :mod:`.runner_logs` grades those logs, and the two entry points here dispatch to it
(:data:`LOG_RUNNERS`, ``runner="django"`` / ``"sympy"``, or detected from the log's content),
so ``grade --from-report LOG --runner django|sympy`` goes through the same door as JUnit XML.
:func:`grade_from_report` is that door: which runner wrote the file, told from its content, then
its grading, the file read once (a JUnit file is parsed once for both).

A JUnit file is read in chunks (:func:`.reports.read_xml`): what is kept grows with the number
of testcases, never with their captured output; a pipe is read once, into a temporary copy.

This module never imports pytest.

Why over 800 lines: four JUnit writers, each with its own naming of a test, share one
matching index and one fold into phase facts; a module per writer would scatter one rule
(how a listed id meets a ``<testcase>``) over five files.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from pathlib import Path
from typing import Any, Final, cast

from . import outcomes as oc
from .instances import Instance
from .outcomes import Collector
from .reports import Progress, ReportError, ReportInput, Say, grading, read_head, read_xml, seekable
from .reports import XmlNode as _Node
from .scorer import HINT_LIMIT, Grading, grade, make_score

__all__ = [
    "CONVENTIONS",
    "GO",
    "JEST",
    "NEXTEST",
    "RUNNERS",
    "SUREFIRE",
    "JUnitCase",
    "JUnitError",
    "JUnitRun",
    "LOG_RUNNERS",
    "SuiteEvent",
    "detect_runner",
    "grade_from_report",
    "grade_junit",
    "read_junit",
    "test_id",
]

SUREFIRE: Final = "surefire"
JEST: Final = "jest"
GO: Final = "go"
NEXTEST: Final = "nextest"
RUNNERS: Final = (SUREFIRE, JEST, GO, NEXTEST)
LOG_RUNNERS: Final = ("django", "sympy")  # graded from their console logs by runner_logs (runner_logs.RUNNERS)

# How each runner's tests are named: the canonical id first, then the other spellings accepted.
CONVENTIONS: Final[Mapping[str, str]] = {
    SUREFIRE: "com.example.FooTest.testBar (also com.example.FooTest#testBar, and com.example.FooTest "
    "for the whole class)",
    JEST: "path/to/foo.test.js->describe title test title, the path relative to jest's rootDir or ending "
    "with it (also the full name alone, path:title, and path for the whole file)",
    GO: "import/path TestName/subtest (also TestName/subtest alone, and import/path for the whole package)",
    NEXTEST: "binary-id test::path (also test::path alone)",
}

PASSED: Final = oc.PASSED
FAILED: Final = oc.FAILED
ERROR: Final = oc.ERROR
SKIPPED: Final = oc.SKIPPED

UNKNOWN_PATCH_REF: Final = "unknown"  # reports.UNKNOWN_PATCH_REF
MESSAGE_LIMIT: Final = 400  # recorder.MESSAGE_LIMIT
EXPECTED: Final = (
    "expected JUnit XML from Maven Surefire (TEST-*.xml), jest-junit, go-junit-report or cargo-nextest"
)
NO_EXIT_STATUS: Final = (
    "JUnit XML records no exit status: a run stopped early (fail-fast, a crash, a timeout) cannot be told "
    "from one that never ran the missing tests; they are missing (never a pass)"
)
RUNNER_NOTES: Final[Mapping[str, str]] = {
    JEST: "jest-junit writes a test.todo as a passing testcase, and leaves out a test file that failed to load "
    "unless JEST_JUNIT_REPORT_TEST_SUITE_ERRORS=true",
    NEXTEST: "nextest writes no testcase for a skipped (#[ignore]d or filtered) test: a listed one is missing",
}

_RESULT_TAGS: Final = ("failure", "error", "skipped")
_RERUN_TAGS: Final = ("flakyFailure", "flakyError", "rerunFailure", "rerunError")
_TEXT_TAGS: Final = frozenset({*_RESULT_TAGS, *_RERUN_TAGS, "stackTrace"})
_GENERIC_MESSAGES: Final = frozenset({"", "Failed", "Skipped"})  # go-junit-report's: the text says more
_TERSE_MESSAGES: Final = frozenset({"No test result found", "Build error", "Runtime error"})  # go-junit-report's
_JS_FILE: Final = re.compile(r"\.[cm]?[jt]sx?$")
_MSB_JEST: Final = re.compile(r"^(.+?\.[cm]?[jt]sx?):(.+)$", re.DOTALL)
_JEST_SUITE_FAILED: Final = "Test suite failed to run"
_GO_NAME: Final = re.compile(r"^(Test|Example|Benchmark|Fuzz)")
_GO_BUILD: Final = re.compile(r"^\[[^\]]*failed\]$")
_SUREFIRE_CONTAINERS: Final = {
    "": "the class failed outside its tests (@BeforeAll / @BeforeClass)",
    "null": "the class failed outside its tests",
    "initializationError": "the class failed before its tests ran (@BeforeAll / @BeforeClass, or it cannot be "
    "instantiated)",
    "executionError": "the class failed after its tests ran (@AfterAll / @AfterClass)",
    "classMethod": "the class failed outside its tests",
}


class JUnitError(ReportError):
    """A JUnit file or directory that cannot be graded: which file, where in it, and what is wrong."""


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class JUnitCase:
    """One ``<testcase>`` that stands for one test, as the runner reported it."""

    runner: str
    suite: str
    classname: str
    name: str
    file: str | None
    full_name: str  # jest: the test's full name (describe titles and title); the name otherwise
    test_id: str  # the canonical id (test_id())
    outcome: str  # passed, failed, error or skipped: the final attempt's
    message: str
    duration: float
    retries: tuple[str, ...]  # earlier attempts the runner marked as reruns: failed or error each
    source: str
    line: int


@dataclass(frozen=True, slots=True)
class SuiteEvent:
    """A result for a whole class, file, package or run rather than for one test.

    Surefire's class-level testcase (``name=""`` or ``initializationError``), go-junit-report's
    build or runtime error, jest-junit's "Test suite failed to run", a failed nextest setup
    script. ``scope`` is the class, file, package or binary it covers (``""``: the whole run).
    """

    runner: str
    scope: str
    kind: str
    outcome: str
    message: str
    source: str
    line: int
    duration: float = 0.0

    @property
    def failed(self) -> bool:
        return self.outcome in (FAILED, ERROR)


Member = JUnitCase | SuiteEvent


@dataclass
class JUnitRun:
    """What one JUnit report (a file, or a directory of Surefire's) says about a run."""

    runner: str
    path: str
    files: list[tuple[str, str]]  # (path, sha256) of every file read, in order
    cases: list[JUnitCase] = field(default_factory=list)
    events: list[SuiteEvent] = field(default_factory=list)
    runtime: str | None = None  # the language runtime the file records (java.version, go.version)
    platform: str | None = None
    duration: float | None = None
    detected: str | None = None  # what the content looks like (detect_runner), whatever was asked
    notes: list[str] = field(default_factory=list)

    @property
    def sha256(self) -> str:
        """The file's digest; for a directory, the digest of its files' names and digests."""
        if len(self.files) == 1 and Path(self.path) == Path(self.files[0][0]):
            return self.files[0][1]
        lines = "".join(f"{Path(p).name}\0{digest}\n" for p, digest in self.files)
        return hashlib.sha256(lines.encode("utf-8")).hexdigest()

    @property
    def errors(self) -> list[SuiteEvent]:
        return [e for e in self.events if e.failed]

    def phase_facts(self) -> list[dict[str, Any]]:
        """Every testcase as the phase facts the live plugin records, named by its canonical id."""
        facts = []
        for case in self.cases:
            for when, outcome, message, duration in _phases(case.outcome, case.message, case.duration):
                facts.append({"nodeid": case.test_id, "when": when, "outcome": outcome, "message": message,
                              "duration": duration})  # fmt: skip
        return facts


# --------------------------------------------------------------------------- ids


def _jest_full_name(classname: str, name: str) -> str:
    """The test's full name (jest's ``fullName``: describe titles and title, joined by spaces).

    jest-junit writes ``"{classname} {title}"`` into both attributes by default (with a
    leading space for a test outside any ``describe``); with ``classNameTemplate="{classname}"``
    and ``titleTemplate="{title}"`` the two parts are split. Any other template: the name
    attribute is taken as it is.
    """
    if classname == name or not classname or _JS_FILE.search(classname) or name.startswith(classname + " "):
        return name[1:] if name.startswith(" ") and not name.startswith("  ") else name
    return f"{classname} {name}"


def _jest_suite_file(suite: str, classname: str, name: str) -> str | None:
    """The suite's name when it is the test file's path (``suiteNameTemplate="{filepath}"``).

    By default the suite is named after the file's first ``describe`` title, which the
    testcase's names then start with: a ``describe("utils.js")`` is not a path.
    """
    if not _JS_FILE.search(suite) or suite in (classname, name):
        return None
    if classname.startswith(suite + " ") or name.startswith((suite + " ", " " + suite + " ")):
        return None
    return suite


def test_id(runner: str, suite: str, classname: str, name: str, file: str | None = None) -> str:
    """A testcase's canonical id in its runner's own convention (:data:`CONVENTIONS`).

    * surefire: ``com.example.FooTest.testBar`` (``classname.name``, as SWE-PolyBench lists
      Surefire tests)
    * jest: ``path/to/foo.test.js->describe title test title`` (SWE-PolyBench's
      ``file->fullName``), the path as the report gives it (``file=``, or a ``{filepath}``
      suite name); just the full name when the report names no file
    * go: ``import/path TestName/subtest`` (package and test as gotestsum prints them)
    * nextest: ``binary-id test::path`` (as nextest prints them)
    """
    if runner == SUREFIRE:
        return f"{classname}.{name}" if classname else name
    if runner == JEST:
        path = file or _jest_suite_file(suite, classname, name)
        full = _jest_full_name(classname, name)
        return f"{path}->{full}" if path else full
    if runner in (GO, NEXTEST):
        owner = classname or suite
        return f"{owner} {name}" if owner else name
    raise ValueError(f"unknown runner {runner!r}; expected one of {', '.join(RUNNERS)}")


test_id.__test__ = False  # type: ignore[attr-defined]  # not a test, when a test module imports it


# --------------------------------------------------------------------------- reading


def _load(file: Path, name: Path | None = None, progress: Say | None = None) -> tuple[_Node, str]:
    """A JUnit file read in chunks (``name`` names it: ``file`` may be a pipe's copy): its tree, as
    :func:`.reports.read_xml` keeps it (DOCTYPEs refused), and its sha256."""
    name = name or file
    with ReportInput(file, name, error=JUnitError, missing="no such file or directory",
                     directory=f"cannot be read: {os.strerror(errno.EISDIR)}", expected=EXPECTED) as opened:  # fmt: skip
        chunks = opened.chunks()
        read, head = read_head(chunks)
        if not head:
            raise JUnitError(name, f"is empty (no report was written: did the run die first?); {EXPECTED}")
        if not head.startswith(b"<"):
            sample = head[:20].decode("utf-8", "replace")
            raise JUnitError(name, f"is not XML (it starts with {sample!r}); {EXPECTED}", line=1)
        root = read_xml(name, chain(read, chunks), text_tags=_TEXT_TAGS, error=JUnitError,
                        doctype="declares a DOCTYPE, which no JUnit writer does",
                        progress=Progress(progress, "reading", name, opened.size, "test cases"))  # fmt: skip
        digest = opened.digest.hexdigest()
    if root.tag not in ("testsuites", "testsuite"):
        raise JUnitError(name, f"its root element is <{root.tag}>; expected <testsuites> or <testsuite> (JUnit XML)",
                         line=root.line)  # fmt: skip
    return root, digest


def _report_files(path: Path, runner: str | None) -> list[Path]:
    if path.is_dir():
        surefire = sorted(p for p in path.glob("TEST-*.xml") if p.is_file())
        if surefire and runner in (None, SUREFIRE):
            return surefire
        if runner == SUREFIRE:
            raise JUnitError(path, "is a directory without TEST-*.xml files (Surefire writes one per test class: "
                             "did the build fail before any test ran?)")  # fmt: skip
        files = sorted(p for p in path.glob("*.xml") if p.is_file())
        if not files:
            raise JUnitError(path, f"is a directory without .xml files; {EXPECTED}")
        return files
    if not path.exists():
        raise JUnitError(path, "no such file or directory")
    return [path]


def _suites(root: _Node) -> Iterator[_Node]:
    if root.tag == "testsuite":
        yield root
    for child in root.children:
        if child.tag == "testsuite":
            yield from _suites(child)


def _cases(root: _Node) -> Iterator[tuple[_Node, _Node | None]]:
    """Every ``<testcase>`` with its innermost ``<testsuite>``."""

    def walk(node: _Node, suite: _Node | None) -> Iterator[tuple[_Node, _Node | None]]:
        for child in node.children:
            if child.tag == "testsuite":
                yield from walk(child, child)
            elif child.tag == "testcase":
                yield child, suite

    yield from walk(root, root if root.tag == "testsuite" else None)


def _case_places(root: _Node) -> Iterator[tuple[_Node, _Node | None, Sequence[_Node], int]]:
    """:func:`_cases`, each with where it stands (the children holding it, its index), so that a
    reader may let go of it there once read."""
    walking: list[tuple[Sequence[_Node], int, _Node | None]] = [(root.children, 0, root if root.tag == "testsuite" else None)]
    while walking:
        kids, index, suite = walking.pop()
        while index < len(kids):
            child = kids[index]
            index += 1
            if child.tag == "testsuite":
                walking.append((kids, index, suite))
                kids, index, suite = child.children, 0, child
            elif child.tag == "testcase":
                yield child, suite, kids, index - 1


_USED: Final = _Node("", {}, 0)  # what stands in a tree for a testcase read and let go of


def _properties(root: _Node) -> dict[str, str]:
    props: dict[str, str] = {}
    for suite in [root, *_suites(root)]:
        for child in suite.children:
            if child.tag == "properties":
                for prop in child.children:
                    if prop.tag == "property" and "name" in prop.attrs:
                        props.setdefault(prop.attrs["name"], prop.attrs.get("value", ""))
    return props


def _is_pytest(root: _Node) -> bool:
    return root.attrs.get("name") in ("pytest", "pytest tests") or any(
        s.attrs.get("name") == "pytest" for s in _suites(root)
    )


def _detect(root: _Node, filename: str) -> str | None:
    suites = list(_suites(root))
    if root.tag == "testsuites" and (root.attrs.get("name") == "nextest-run" or "uuid" in root.attrs):
        return NEXTEST
    if any(s.attrs.get("name", "").startswith("@setup-script:") for s in suites):
        return NEXTEST
    if any("surefire" in s.attrs.get("xsi:noNamespaceSchemaLocation", "") for s in suites):
        return SUREFIRE
    props = _properties(root)
    if "go.version" in props:
        return GO
    def pairs() -> Iterator[tuple[Mapping[str, str], str | None]]:  # read again for each rule: nothing is held
        return ((c.attrs, s.attrs.get("name") if s is not None else None) for c, s in _cases(root))

    if root.attrs.get("name") == "jest tests" or any(a.get("classname") == _JEST_SUITE_FAILED for a, _ in pairs()):
        return JEST
    if _is_pytest(root):
        return None
    if "surefire.test.class.path" in props or ("java.version" in props and filename.startswith("TEST-")):
        return SUREFIRE
    if next(pairs(), None) is None:
        return None
    if all(a.get("classname") == suite and (_GO_NAME.match(a.get("name", "")) or _GO_BUILD.match(a.get("name", ""))
                                            or a.get("name") == "Failure")  # go-junit-report's runtime error
           for a, suite in pairs()):  # fmt: skip
        return GO
    if all(a.get("classname") and a.get("classname") == a.get("name") for a, _ in pairs()):
        return JEST
    return None


def detect_runner(path: str | Path) -> str | None:
    """``"surefire"``, ``"jest"``, ``"go"`` or ``"nextest"`` from the content, or None.

    None for pytest's own JUnit XML (grade it with :func:`.reports.grade_report`) and for
    a file no rule recognises. A directory is judged by its first ``TEST-*.xml`` (else its
    first ``.xml``). A file that is not XML but a Django ``runtests.py`` or SymPy
    ``bin/test`` log gives ``"django"`` or ``"sympy"`` (:data:`LOG_RUNNERS`). Raises
    :class:`JUnitError` for a file that cannot be read or parsed.
    """
    path = Path(path)
    with seekable(path, error=JUnitError, expected=EXPECTED) as source:
        first = _report_files(source, None)[0]
        try:
            root, _ = _load(first)
        except JUnitError:
            logged = _log_runner(first)
            if logged is not None:
                return logged
            raise
        return _detect(root, first.name)


def _log_runner(path: Path) -> str | None:
    """``"django"`` or ``"sympy"`` when a file that is neither XML nor JSON is one of their logs."""
    from .runner_logs import detect_log_runner

    try:
        with open(path, "rb") as handle:
            head = handle.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return None
    if not head or head.startswith((b"<", b"{")) or re.match(rb"\[\s*[\[{\"\]]", head):  # XML or JSON
        return None
    try:
        return detect_log_runner(path)
    except ReportError:
        return None


def _message(node: _Node) -> str:
    """The ``message`` attribute, or the text's first line where the attribute says nothing."""
    message = node.attrs.get("message", "").strip()
    if message in _GENERIC_MESSAGES or message in _TERSE_MESSAGES:
        # jest-junit opens a suite failure with a "● Test suite failed to run" banner
        lines = [ln.strip() for ln in node.joined("stackTrace").splitlines() if ln.strip() and not ln.strip().startswith("\u25cf")]
        if lines:
            message = f"{message}: {lines[0]}" if message in _TERSE_MESSAGES else lines[0]
    return _clip(message)


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "\u2026"


def _result(node: _Node) -> tuple[str, str, tuple[str, ...]]:
    """The final outcome, its message, and the earlier attempts the runner marked as reruns."""
    results = [c for c in node.children if c.tag in _RESULT_TAGS]
    retries = tuple(ERROR if c.tag.endswith("Error") else FAILED for c in node.children if c.tag in _RERUN_TAGS)
    for tag, outcome in (("error", ERROR), ("failure", FAILED), ("skipped", SKIPPED)):
        found = [r for r in results if r.tag == tag]
        if found:
            return outcome, _message(found[0]), retries
    if retries:
        first = next(c for c in node.children if c.tag in _RERUN_TAGS)
        attempts = "attempt" if len(retries) == 1 else "attempts"
        note = f"passed after {len(retries)} failed {attempts} the runner reran"
        detail = _message(first)
        return PASSED, _clip(f"{note}; the first: {detail}" if detail else note), retries
    return PASSED, "", retries


def _duration(attrs: Mapping[str, str]) -> float:
    """A JUnit ``time``, at least 0; one that is not a finite number (``nan``, ``inf``, ``1e999``) is
    unknown: 0.0 (:func:`.reports.finite_duration`)."""
    from .reports import finite_duration

    return max(finite_duration(attrs.get("time", 0) or 0) or 0.0, 0.0)


def _event(runner: str, name: str, classname: str, suite: str, file: str | None) -> tuple[str, str] | None:
    """``(scope, kind)`` when a testcase stands for a whole class, file, package or run."""
    if runner == SUREFIRE:
        simple = classname.rsplit(".", 1)[-1]
        if name in _SUREFIRE_CONTAINERS:
            return classname, _SUREFIRE_CONTAINERS[name]
        if name in (classname, simple):  # Surefire 2.x names a class-level failure after the class
            return classname, _SUREFIRE_CONTAINERS[""]
    elif runner == JEST and classname == _JEST_SUITE_FAILED:
        return file or name, "the test file failed to run (it did not load, or a hook outside its tests failed)"
    elif runner == NEXTEST and suite.startswith("@setup-script:"):
        return "", f"nextest setup script {suite.removeprefix('@setup-script:')} failed"
    return None


def _go_event(name: str, classname: str, suite: str, node: _Node) -> tuple[str, str] | None:
    errors = [c for c in node.children if c.tag in ("error", "failure")]
    messages = {c.attrs.get("message", "") for c in errors}
    if not errors:
        return None
    if "Build error" in messages or _GO_BUILD.match(name):
        return classname or suite, f"the package did not build ({name or 'build failed'})"
    if "Runtime error" in messages:
        return classname or suite, "the package's test binary failed outside its tests"
    return None


def read_junit(path_or_dir: str | Path, runner: str | None = None, *, progress: Say | None = None) -> JUnitRun:
    """Read a runner's JUnit report (a file, or a directory of Surefire's ``TEST-*.xml``).

    ``runner`` is one of :data:`RUNNERS`; None detects it from the content
    (:func:`detect_runner`). Raises :class:`JUnitError` for a file that cannot be read,
    is not JUnit XML, is malformed or (with no runner given) cannot be attributed to one.
    ``progress`` hears how far a long read is (:class:`.reports.Progress`).
    """
    return _read_junit(Path(path_or_dir), runner, progress)


def _read_junit(path: Path, runner: str | None, progress: Say | None, said: Progress | None = None) -> JUnitRun:
    if runner is not None and runner not in RUNNERS:
        raise ValueError(f"unknown runner {runner!r}; expected one of {', '.join(RUNNERS)}")
    with seekable(path, progress, error=JUnitError, expected=EXPECTED) as source:
        files = [(f if source == path else path, f) for f in _report_files(source, runner)]
        return _read_run(path, files, runner, [_load(files[0][1], files[0][0], progress)], progress, said)


def _read_run(path: Path, files: list[tuple[Path, Path]], runner: str | None, first: list[tuple[_Node, str]],
              progress: Say | None, said: Progress | None = None) -> JUnitRun:  # fmt: skip
    """The run ``files`` hold (each ``(name, file to read)``), the first already read (``first``, let go
    of once its testcases are read): file by file, a tree at a time, every problem raised in the
    order reading them all first raised it (their parse errors, then the runner's, then a testcase's).
    ``said``: the grading's progress (:func:`.reports.grading`)."""
    root, digest = first.pop()
    detected = _detect(root, files[0][0].name)
    if runner is None and detected is None:
        for name, file in files[1:]:
            _load(file, name, progress)
        pytest_like = _is_pytest(root)
        what = "pytest's JUnit XML (grade it as a pytest report)" if pytest_like else "no known runner's"
        raise JUnitError(files[0][0], f"cannot tell which runner wrote it: it looks like {what}; name the runner, "
                         f"one of {', '.join(RUNNERS)}")  # fmt: skip
    runner = runner or detected
    assert runner is not None
    run = JUnitRun(runner, str(path), [], detected=detected)
    if detected is not None and detected != runner:
        run.notes.append(f"the file looks like {detected}'s JUnit XML; it was graded as {runner}'s, as asked")
    total = 0.0
    timed = False
    pending: JUnitError | None = None  # a testcase's problem waits for the other files' parse errors
    for index, (name, file) in enumerate(files):
        if index:
            root, digest = _load(file, name, progress)
        run.files.append((str(name), digest))
        if pending is not None:
            continue
        timed_nodes = [root] if "time" in root.attrs else [c for c in root.children if "time" in c.attrs]
        total += sum(_duration(node.attrs) for node in timed_nodes)
        timed = timed or bool(timed_nodes)
        try:
            _read_cases(run, name, root, said)
        except JUnitError as exc:
            pending = exc
            continue
        props = _properties(root)
        if runner == SUREFIRE and "java.version" in props:
            run.runtime = run.runtime or f"Java/{props['java.version']}"
            if "os.name" in props:
                run.platform = run.platform or "-".join(p for p in (props["os.name"], props.get("os.arch")) if p)
        elif runner == GO and "go.version" in props:
            version, _, platform = props["go.version"].partition(" ")
            run.runtime = run.runtime or version
            run.platform = run.platform or platform or None
        del root
    if pending is not None:
        raise pending
    run.duration = round(total, 3) if timed else None
    if runner == JEST and run.cases and not any(c.file for c in run.cases):
        run.notes.append("the report names no test files (jest-junit's addFileAttribute or a {filepath} suite name "
                         "would): ids that name a file were matched by the test's full name alone")  # fmt: skip
    return run


def _read_cases(run: JUnitRun, file: Path, root: _Node, said: Progress | None = None) -> None:
    """The testcases of one file into ``run``; each let go of in the tree once read (the tree is used up)."""
    runner = run.runner
    source = str(file)
    for node, suite_node, kids, index in _case_places(root):
        cast("list[Any]", kids)[index] = _USED
        if said is not None and run.cases and not len(run.cases) % 1024:
            said.update(0, len(run.cases))
        attrs = node.attrs
        suite = suite_node.attrs.get("name", "") if suite_node is not None else ""
        classname = attrs.get("classname", "")
        name = attrs.get("name")
        if name is None:
            if runner != SUREFIRE:
                raise JUnitError(file, "has no name attribute", line=node.line, element="<testcase>")
            name = ""  # old Surefire wrote a class-level failure without one
        outcome, message, retries = _result(node)
        path_attr = attrs.get("file") or None
        if runner == JEST and path_attr is None and classname != _JEST_SUITE_FAILED:
            path_attr = _jest_suite_file(suite, classname, name)
        scoped = _go_event(name, classname, suite, node) if runner == GO else _event(
            runner, name, classname, suite, path_attr)  # fmt: skip
        if scoped is not None:
            if outcome != PASSED:  # a passing setup script or container says nothing about a test
                run.events.append(SuiteEvent(runner, scoped[0], scoped[1], outcome, message, source, node.line,
                                             _duration(attrs)))  # fmt: skip
            continue
        full = _jest_full_name(classname, name) if runner == JEST else name
        case_id = test_id(runner, suite, classname, name, path_attr)
        run.cases.append(JUnitCase(runner, suite, classname, name, path_attr, full, case_id, outcome, message,
                                   _duration(attrs), retries, source, node.line))  # fmt: skip


# --------------------------------------------------------------------------- matching listed ids


@dataclass
class _Match:
    members: list[Member]
    whole: bool  # a class, file or package: its worst non-skipped member counts
    how: str  # "" (the canonical id) or what the listed id was read as


def _same_file(listed: str, reported: str) -> bool:
    """The listed path names the reported one: equal, or one ends with the other (an absolute
    ``/testbed/src/a.test.js`` for the report's ``src/a.test.js``, or a monorepo prefix)."""
    a = listed.replace("\\", "/").removeprefix("./")
    b = reported.replace("\\", "/").removeprefix("./")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _jest_file_part(listed: str) -> tuple[str, str, str] | None:
    """``(file, rest, separator)`` when the id starts with a test file's path."""
    start = 0
    while (at := listed.find("->", start)) != -1:
        if _JS_FILE.search(listed[:at]):
            return listed[:at], listed[at + 2:], "->"
        start = at + 2
    found = _MSB_JEST.match(listed)
    if found:
        return found.group(1), found.group(2), ":"
    return None


class _Table:
    """Members by key, in the order they were added: a key with one member (most) holds it bare,
    not in a list of its own (a run of hundreds of thousands of testcases has four tables)."""

    __slots__ = ("_members",)

    def __init__(self) -> None:
        self._members: dict[Any, Any] = {}

    def add(self, key: Any, member: Member) -> None:
        found = self._members.get(key)
        if found is None:
            self._members[key] = member
        elif type(found) is list:
            found.append(member)
        else:
            self._members[key] = [found, member]

    def get(self, key: Any) -> list[Any]:
        """The members under ``key`` (a new list; empty for none)."""
        found = self._members.get(key)
        return [] if found is None else list(found) if type(found) is list else [found]

    def __contains__(self, key: object) -> bool:
        return key in self._members

    def __iter__(self) -> Iterator[Any]:
        return iter(self._members)


class _Index:
    def __init__(self, run: JUnitRun) -> None:
        self.run = run
        self.by_id = _Table()
        self.by_name = _Table()  # the full name (jest), else the name
        self.by_stem = _Table()  # the name without its parameters: hints only
        self.by_alias = _Table()
        self.by_owner = _Table()  # class, package
        self.by_file = _Table()  # jest
        self._files: dict[str, list[str]] = {}  # jest: a listed path -> the reported files it names
        for case in run.cases:
            if run.runner == JEST:
                self.by_file.add(case.file, case)
            self.by_id.add(case.test_id, case)
            self.by_name.add(case.full_name, case)
            self.by_stem.add(re.split(r"[(\[]", case.name, maxsplit=1)[0], case)
            if run.runner == SUREFIRE:
                self.by_alias.add(f"{case.classname}#{case.name}", case)
            if run.runner in (SUREFIRE, GO):
                self.by_owner.add(case.classname or case.suite, case)
        for event in run.events:
            if run.runner in (SUREFIRE, GO) and event.scope:
                self.by_owner.add(event.scope, event)

    def resolve(self, listed: str) -> _Match | None:
        runner = self.run.runner
        if listed in self.by_id:
            return _Match(self.by_id.get(listed), False, "")
        if runner == SUREFIRE and listed in self.by_alias:
            return _Match(self.by_alias.get(listed), False, "Surefire's class#method spelling")
        if runner == JEST:
            found = self._jest(listed)
            if found is not None:
                return found
        if runner in (GO, NEXTEST) and listed in self.by_name:
            unit = "package" if runner == GO else "binary"
            return _Match(self.by_name.get(listed), False, f"a test name that names no {unit}")
        if runner in (SUREFIRE, GO) and listed in self.by_owner:
            whole = "a whole class" if runner == SUREFIRE else "a whole package"
            return _Match(self.by_owner.get(listed), True, whole)
        return None

    def files(self, listed: str) -> list[str]:
        """The reported test files a listed path names (see :func:`_same_file`)."""
        if listed not in self._files:
            self._files[listed] = [f for f in self.by_file if f is not None and _same_file(listed, f)]
        return self._files[listed]

    def _jest(self, listed: str) -> _Match | None:
        split = _jest_file_part(listed)
        if split is not None:
            file, rest, separator = split
            named = set(self.files(file))
            if separator == "->":
                members = [c for c in self.by_name.get(rest) if c.file is None or c.file in named]
                how = "file->full name" if all(c.file for c in members) else "a full name (the report names no file)"
            else:
                pool = [c for f in (*named, None) for c in self.by_file.get(f)]
                members = [c for c in pool if c.full_name == rest or c.full_name.endswith(" " + rest)]
                how = "file:title (Multi-SWE-bench's spelling)"
            if members:
                return _Match(list(members), False, how)
        if _JS_FILE.search(listed):
            whole: list[Member] = [c for f in self.files(listed) for c in self.by_file.get(f)]
            whole += [e for e in self.run.events if e.scope and _same_file(listed, e.scope)]
            if whole:
                return _Match(whole, True, "a whole test file")
        if listed in self.by_name:
            return _Match(self.by_name.get(listed), False, "a full name alone")
        return None


def _in_scope(runner: str, listed: str, event: SuiteEvent) -> bool:
    """Whether a listed id may live in the class, file, package or run an event covers."""
    scope = event.scope
    if not scope:
        return True
    if runner == SUREFIRE:
        return listed == scope or listed.startswith((scope + ".", scope + "#", scope + "$"))
    if runner in (GO, NEXTEST):
        return listed == scope or listed.startswith(scope + " ") or " " not in listed  # a bare name: any
    split = _jest_file_part(listed)
    if split is not None:
        return _same_file(split[0], scope)
    if _JS_FILE.search(listed):
        return _same_file(listed, scope)
    return True  # a full name alone may live in any file


# --------------------------------------------------------------------------- grading


def _phases(outcome: str, message: str, duration: float) -> list[tuple[str, str, str, float]]:
    """The phases a JUnit result stands for (JUnit has one result a test; these are synthetic)."""
    if outcome == ERROR:
        return [("setup", "failed", message, duration), ("teardown", "passed", "", 0.0)]
    call = {PASSED: "passed", FAILED: "failed", SKIPPED: "skipped"}[outcome]
    return [("setup", "passed", "", 0.0), ("call", call, message, duration), ("teardown", "passed", "", 0.0)]


def _feed(collector: Collector, key: str, match: _Match) -> None:
    runs = match.members
    if match.whole:
        ran = [m for m in runs if m.outcome != SKIPPED]
        runs = ran or runs[:1]  # a class, file or package that only skipped is skipped
    for member in runs:
        for when, outcome, message, duration in _phases(member.outcome, member.message, member.duration):
            if outcome == "passed" and not message:
                collector.add_plain_pass(key, when, duration)
            else:
                collector.add_phase(key, when, outcome, False, False, False, False, duration, message)


def _labels(members: Sequence[Member]) -> list[str]:
    """How a note names testcases: their ids, with the line where two share one."""
    ids = [m.test_id if isinstance(m, JUnitCase) else f"{m.scope or 'the run'} ({m.kind})" for m in members]
    return [f"{i} (line {m.line})" if ids.count(i) > 1 else i for i, m in zip(ids, members, strict=True)]


def _few(items: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _tail(runner: str, listed: str) -> str:
    if runner == SUREFIRE:
        return re.split(r"[#.]", listed)[-1]
    if runner in (GO, NEXTEST):
        return listed.rsplit(" ", 1)[-1]
    split = _jest_file_part(listed)
    return split[1] if split is not None else listed


def _owner(runner: str, listed: str) -> str | None:
    """The class, file, package or binary a listed id names, if it names one."""
    if runner == SUREFIRE:
        return listed.split("#")[0] if "#" in listed else listed.rsplit(".", 1)[0] if "." in listed else None
    if runner in (GO, NEXTEST):
        return listed.split(" ", 1)[0] if " " in listed else None
    split = _jest_file_part(listed)
    if split is not None:
        return split[0]
    return listed if _JS_FILE.search(listed) else None


def _hint(run: JUnitRun, index: _Index, listed: str) -> str:
    """Why a listed id may not be in the report: a near match, or what is known of its owner."""
    runner = run.runner
    hints = [f"{e.scope or 'the run'} failed as a whole: {e.kind}" for e in run.errors if _in_scope(runner, listed, e)]
    tail = _tail(runner, listed)
    near_cases = [*index.by_stem.get(tail), *index.by_name.get(tail)] if tail else []
    if runner == JEST and tail:  # a title under other describe blocks
        near_cases += [c for c in run.cases if c.full_name.endswith(" " + tail)]
    near = list(dict.fromkeys(c.test_id for c in near_cases if c.test_id != listed))
    if near:
        hints.append(f"ran as {_few(near)} (the {runner} convention: {CONVENTIONS[runner]})")
    elif not hints:
        owner = _owner(runner, listed)
        unit = {SUREFIRE: "class", JEST: "file", GO: "package", NEXTEST: "binary"}[runner]
        owners = {c.file or "" for c in run.cases} if runner == JEST else {c.classname or c.suite for c in run.cases}
        ran = owner is not None and (
            any(_same_file(owner, f) for f in owners if f) if runner == JEST else owner in owners
        )
        if ran:
            hints.append(f"other tests of {unit} {owner} ran, but not this one")
        elif owner is not None:
            hints.append(f"no test of {unit} {owner} ran")
        else:
            hints.append(f"no testcase in the report has this id (the {runner} convention: {CONVENTIONS[runner]})")
        if runner == NEXTEST or (runner == JEST and not ran):
            hints.append(RUNNER_NOTES[runner])
    return "; ".join(hints)


def _no_verdict(run: JUnitRun, grading: Grading) -> str | None:
    """Why the report is not a verdict on the candidate, or None.

    As a live run gives none when a module holding listed tests fails to collect: a class,
    file, package or run that failed as a whole while listed tests in it never ran.
    """
    errors = run.errors
    if not run.cases:
        if errors:
            shown = "; ".join(f"{e.scope + ': ' if e.scope else ''}{e.kind}{_detail(e)}" for e in errors[:3])
            return f"no test ran: {shown}"
        return "the report holds no test result (an empty run, or one that stopped before its first test)"
    missing = [r.test_id for r in grading.results if r.outcome == oc.MISSING]
    for event in errors:
        hit = [t for t in missing if _in_scope(run.runner, t, event)]
        if hit:
            return (f"{event.scope or 'the run'} failed as a whole: {event.kind}{_detail(event)}, so {len(hit)} "
                    f"listed test(s) never ran, e.g. {hit[0]}")  # fmt: skip
    return None


def _detail(event: SuiteEvent) -> str:
    return f" ({event.message})" if event.message else ""


def _graded_by(run: JUnitRun, compat: str) -> str:
    from . import envelope as env

    def word(value: str | None) -> str:
        return value.replace(" ", "_") if value else "unknown"

    return env.graded_by(mode=f"report:junit-{run.runner}", pytest_version="none", python=word(run.runtime),
                         platform=word(run.platform), timeout=None, compat=compat)  # fmt: skip


def grade_junit(
    path: str | Path,
    instance: Instance,
    runner: str | None = None,
    compat: str = "strict",
    patch_ref: str | None = None,
    *,
    progress: Say | None = None,
) -> dict[str, Any]:
    """Grade a runner's JUnit report: the envelope ``reports.grade_report`` gives, plus ``report``.

    ``runner`` is one of :data:`RUNNERS`, or None to detect it from the content.
    ``patch_ref`` names the candidate in the Score (``"unknown"`` without one). Raises
    :class:`JUnitError` for a report that cannot be graded and ``ValueError`` for an
    unknown runner or compat mode.

    ``runner="django"`` or ``"sympy"`` (:data:`LOG_RUNNERS`), or no runner and a file that
    is one of their console logs, grades the log with :func:`.runner_logs.grade_log`
    (``report.format`` is then ``log-django`` / ``log-sympy``). ``progress`` hears how far a long
    read is (:class:`.reports.Progress`).
    """
    if runner in LOG_RUNNERS or (runner is None and Path(path).is_file() and _log_runner(Path(path)) is not None):
        from .runner_logs import grade_log

        return grade_log(path, instance, runner, compat, patch_ref)
    said = grading(progress, path)
    return _graded(path, _read_junit(Path(path), runner, progress, said), instance, compat, patch_ref, said)


def grade_run(run: JUnitRun, instance: Instance, compat: str) -> tuple[Grading, str | None, list[str]]:
    """A run read from any runner's report graded with the pytest outcome rules: the grading (each
    listed id matched to its testcases, the first missing ones hinted), why it is no verdict (None: it
    is one) and the notes on every judgement made (:func:`grade_junit`, and live command runs:
    :mod:`.command_reports`)."""
    index = _Index(run)
    collector = Collector()
    notes = [NO_EXIT_STATUS]
    if run.runner in RUNNER_NOTES:
        notes.append(RUNNER_NOTES[run.runner])
    notes.extend(run.notes)
    matches: dict[str, _Match] = {}
    for listed in instance.listed:
        match = index.resolve(listed)
        if match is None:
            continue
        matches[listed] = match
        _feed(collector, listed, match)
        cases = [m for m in match.members if isinstance(m, JUnitCase)]
        if match.whole:
            notes.append(f"{listed}: {match.how}, graded from its {len(match.members)} testcase(s) (the worst "
                         "that did not skip counts)")  # fmt: skip
        elif len(cases) > 1:
            notes.append(f"{listed}: {len(cases)} testcases answer to it ({_few(_labels(cases))}): "
                         "the worst counts")  # fmt: skip
        for case in cases:
            if case.retries:
                notes.append(f"{case.test_id}: {len(case.retries)} earlier attempt(s) the runner marked as reruns "
                             f"(<flakyFailure>, <rerunFailure>) are discarded; the final outcome, {case.outcome}, "
                             "counts")  # fmt: skip
    grading = grade(instance, collector.records, compat)
    results = []
    hinted = 0
    for result in grading.results:
        match = matches.get(result.test_id)
        if match is None:
            if hinted < HINT_LIMIT:  # as the scorer: the first HINT_LIMIT missing ids
                hinted += 1
                result = result._replace(hint=_hint(run, index, result.test_id))
        elif len(match.members) == 1 and isinstance(match.members[0], JUnitCase):
            case_id = match.members[0].test_id
            if case_id != result.test_id:
                result = result._replace(matched=case_id)
        results.append(result)
    matched_cases = {id(m) for match in matches.values() for m in match.members}
    grading = replace(grading, results=tuple(results), executed=len(run.cases),
                      unlisted=sum(id(c) not in matched_cases for c in run.cases))  # fmt: skip
    return grading, _no_verdict(run, grading), notes


def _graded(path: str | Path, run: JUnitRun, instance: Instance, compat: str, patch_ref: str | None,
            said: Progress | None = None) -> dict[str, Any]:  # fmt: skip
    """:func:`grade_junit` of a report already read (``said``: the grading's progress)."""
    from . import envelope as env

    if said is not None:
        said.update(0, len(run.cases))
    grading, reason, notes = grade_run(run, instance, compat)
    score = None
    if reason is None:
        score = make_score(grading, patch_ref or UNKNOWN_PATCH_REF, _graded_by(run, compat), int(time.time()))
    session: dict[str, Any] = {
        "exitstatus": None,
        "note": None,
        "collection_errors": [
            {"nodeid": e.scope, "message": f"{e.kind}: {e.message}" if e.message else e.kind} for e in run.errors
        ],
        "rootdir": None,
        "instance_file": instance.source,
        "duration": run.duration,
    }
    report: dict[str, Any] = {
        "path": str(path),
        "format": f"junit-{run.runner}",
        "runner": run.runner,
        "sha256": run.sha256,
        "notes": notes,
    }
    if len(run.files) > 1 or Path(run.files[0][0]) != Path(path):
        report["files"] = [{"path": p, "sha256": digest} for p, digest in run.files]
    if said is not None:
        said.finish(0, len(run.cases))
    return env.build_envelope(
        instance_id=instance.instance_id,
        score=score,
        grading=grading,
        no_verdict=reason,
        session=session,
        extra={"report": report},
    )


def grade_from_report(
    path: str | Path,
    instance: Instance,
    runner: str | None = None,
    compat: str = "strict",
    patch_ref: str | None = None,
    *,
    progress: Say | None = None,
) -> dict[str, Any]:
    """What ``objective-score grade --from-report`` grades: an outcome file (or a folder of Surefire's)
    of whichever runner wrote it, told from its content when ``runner`` is None.

    ``runner`` is one of :data:`RUNNERS` (:func:`grade_junit`), :data:`LOG_RUNNERS`
    (:func:`.runner_logs.grade_log`), ``"pytest"`` (:func:`.reports.grade_report`), or None: a folder
    or a file :func:`detect_runner` attributes to another runner is graded as that runner's, anything
    else as pytest's. The file is read once: a JUnit file is parsed once to tell its runner and to
    grade it, a pipe is copied once (:func:`.reports.seekable`). Raises :class:`.reports.ReportError`
    as those would (the same message for the same file).
    """
    from . import reports

    path = Path(path)
    with reports.seekable(path, progress) as source:
        envelope = _grade_source(path, source, instance, runner, compat, patch_ref, progress, grading(progress, path))
    envelope["report"]["path"] = str(path)  # a pipe's, not its copy's
    return envelope


def _grade_source(path: Path, source: Path, instance: Instance, runner: str | None, compat: str,
                  patch_ref: str | None, progress: Say | None, said: Progress) -> dict[str, Any]:  # fmt: skip
    from . import reports
    from .runner_logs import grade_log

    if runner in LOG_RUNNERS:
        return grade_log(source, instance, runner, compat, patch_ref)
    if runner == "pytest":
        parsed, digest = reports.read_file(path, source, instance, progress, said)
        return reports.grade_parsed(path, parsed, digest, instance, compat, patch_ref, said)
    if runner is not None and runner not in RUNNERS:
        raise ValueError(f"unknown runner {runner!r}; expected one of {', '.join(RUNNERS + LOG_RUNNERS)} or pytest")
    if runner is not None or source.is_dir():
        if source == path:  # a file or a folder, read as before
            if runner is None:
                try:
                    runner = detect_runner(source)
                except ReportError:
                    runner = None
            if runner is None:
                return reports.grade_report(source, instance, compat, patch_ref, progress=progress)
            return grade_junit(source, instance, runner, compat, patch_ref, progress=progress)
        run = _read_run(path, [(path, source)], runner, [_load(source, path, progress)], progress, said)
        return _graded(path, run, instance, compat, patch_ref, said)
    # One file, no runner named: JUnit XML is parsed once, to tell whose it is and to grade it.
    problem: ReportError | None = None
    trees: list[_Node] = []  # the tree, handed over (and let go of) once its runner is known
    with reports.ReportInput(source, path) as opened:
        chunks = opened.chunks()
        read, head = reports.read_head(chunks)
        if head.startswith(b"<"):
            try:
                trees.append(reports.read_xml(path, chain(read, chunks), text_tags=_TEXT_TAGS,
                                              progress=Progress(progress, "reading", path, opened.size, "test cases")))
            except ReportError as exc:  # pytest's reading says what is wrong (as detect_runner's failure led to it)
                problem = exc
        del read
        digest = opened.digest.hexdigest()
    if not head.startswith(b"<"):
        logged = _log_runner(source)
        if logged is not None:
            return grade_log(source, instance, logged, compat, patch_ref)
        parsed, digest = reports.read_file(path, source, instance, progress, said)
        return reports.grade_parsed(path, parsed, digest, instance, compat, patch_ref, said)
    if trees and trees[0].tag in ("testsuites", "testsuite"):
        detected = _detect(trees[0], path.name)
        if detected is not None:
            run = _read_run(path, [(path, source)], detected, [(trees.pop(), digest)], progress, said)
            return _graded(path, run, instance, compat, patch_ref, said)
    reports.sniff_head(path, head)
    if problem is not None:
        raise problem
    parsed = reports.parse_junit(path, trees.pop(), instance, said)
    return reports.grade_parsed(path, parsed, digest, instance, compat, patch_ref, said)
