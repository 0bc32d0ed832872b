"""Grade test outcomes recorded elsewhere: pytest's JUnit XML, pytest-json-report, pytest-reportlog.

A run in a container or on another CI leaves an outcome file; :func:`grade_report`
reads it, turns what it holds into the same phase facts the live plugin collects
(:class:`~.outcomes.Collector`), and grades them with the same :func:`~.scorer.grade`
and :func:`~.scorer.no_verdict_reason`, so the Score equals the one a live run of
the same tests gives, as far as the format records what decides it.
``docs/from-report.md`` says, format by format, what each one can and cannot tell.

* **pytest-reportlog** (``--report-log``): every phase report, serialised by pytest
  itself, and the session's exit status. The richest: it gives the live fold exactly
  (teardown errors, reruns, crashed xdist workers, and the plugin's integrity marks
  when the plugin was active in that run).
* **pytest-json-report** (``--json-report``): the last report of each phase, the
  test's category (``xfailed``, ``xpassed``), the collectors and the exit code.
* **JUnit XML** (``--junitxml``, xunit1 and xunit2): one ``<testcase>`` per test,
  named by ``(classname, name)``, and no exit status. A listed id is mapped forward
  to the pair pytest writes (:func:`junit_key`); dotted names are never guessed back
  into paths.

The format is detected from the content, never from the extension alone. A file
that cannot be read, is empty, is none of the three, or is malformed raises
:class:`ReportError` naming the file, and the line or element when known.

**Huge files.** A report is read in chunks of :data:`CHUNK` bytes, never whole: what a
reader keeps grows with the number of tests (one record each, which grading needs), never
with the bytes around them (captured output, tracebacks). JUnit XML goes through expat
chunk by chunk (:func:`read_xml`), keeping only the elements a reader uses, each message
and text to its first :data:`KEEP` characters (a Score shows :data:`MESSAGE_LIMIT`);
pytest-reportlog is read line by line; a pytest-json-report document is read entry by
entry of its ``tests`` and ``collectors`` (json's own scanner decodes each entry), after a
first pass that checks its text, as ``bytes.decode`` did. The readers give, for every
file, the Score, the notes and the error (message, line and column) reading the whole
file gave (see :data:`KEEP` for the one message they may clip differently). A read that
takes longer than :data:`PROGRESS_AFTER` seconds says how far it is (:class:`Progress`).
A pipe (``<(cat junit.xml)``) is read once into a temporary copy (:func:`seekable`); a
named pipe nobody writes to, a device and a socket are refused at once instead of
blocking. ``docs/from-report.md`` ("Huge files, pipes and progress") has the limits.

This module never imports pytest.

Why over 800 lines: three formats, each read into the same phase facts and graded by the
same rules; JUnit XML's reading (xunit1/xunit2, split cases, ambiguity) is most of it and
shares its helpers with the other two; and the chunked reading of each (files and pipes,
progress, expat fed chunk by chunk, a JSON document entry by entry) must give exactly what
reading the whole file gave, which is easiest to check with both side by side.
"""

from __future__ import annotations

import ast
import codecs
import hashlib
import json
import math
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import chain
from pathlib import Path
from typing import IO, Any, Final, cast
from xml.parsers import expat

from . import nesting
from . import outcomes as oc
from .instances import Instance
from .outcomes import Collector
from .remade import Remade
from .scorer import Grading, exit_status_note, grade, make_score, no_verdict_reason

__all__ = [
    "FORMATS",
    "JSON_REPORT",
    "JUNIT_XML",
    "REPORTLOG",
    "ParsedReport",
    "ReportError",
    "detect_format",
    "grade_report",
    "junit_key",
    "read_report",
]

JUNIT_XML: Final = "junit-xml"
JSON_REPORT: Final = "json-report"
REPORTLOG: Final = "reportlog"
FORMATS: Final = (JUNIT_XML, JSON_REPORT, REPORTLOG)

EXPECTED: Final = (
    "expected pytest's JUnit XML (--junitxml), a pytest-json-report file (--json-report-file) "
    "or a pytest-reportlog file (--report-log)"
)
UNKNOWN_PATCH_REF: Final = "unknown"
MESSAGE_LIMIT: Final = 400  # recorder.MESSAGE_LIMIT (the recorder imports pytest; this module must not)
FLAGS_KEY: Final = "objective_scoring"  # recorder.FLAGS_KEY: the flagger's marks, serialised with the report
PHASES: Final = ("setup", "call", "teardown", "???")

# pytest's junitxml.bin_xml_escape before pytest 9.2, character for character: "\u10000-\u10ffff" there
# is "\u1000", "0-\u10ff", "ff", so characters beyond the BMP are escaped too. Names read from a file
# are put through the same escape, so files of either pytest match (_cases).
_ILLEGAL_XML: Final = re.compile(
    "[^\u0009\u000a\u000d\u0020-\u007e\u0080-\ud7ff\ue000-\ufffd\u10000-\u10ffff]"
)
_SETUP_ERROR: Final = 'failed on setup with "'
_TEARDOWN_ERROR: Final = 'failed on teardown with "'
_CRASH: Final = re.compile(r"worker '[^']*' crashed while running ")
_OLD_XPASS: Final = "xfail-marked test passes unexpectedly"  # older pytest's strict xpass under junitxml


class ReportError(Remade, ValueError):
    """An outcome file that cannot be graded: which file, where in it, and what is wrong."""

    def __init__(self, path: str | Path, problem: str, *, line: int | None = None, element: str | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.line = line
        self.element = element
        where = self.path + (f":{line}" if line is not None else "")
        super().__init__(f"{where}: {element + ': ' if element else ''}{problem}")

    def renamed(self, path: str | Path) -> ReportError:
        """The same error naming ``path`` (a pipe's name, for its temporary copy's)."""
        return type(self)(path, self.problem, line=self.line, element=self.element)



@dataclass
class ParsedReport:
    """What an outcome file says about a run, as the live plugin would have collected it."""

    format: str
    collector: Collector = field(default_factory=Collector)
    collect_errors: list[tuple[str, str]] = field(default_factory=list)
    exitstatus: int | None = None  # as the file records it (JUnit XML records none)
    inferred_exitstatus: int | None = None  # JUnit XML only: what pytest's would have been
    pytest_version: str | None = None
    python: str | None = None
    platform: str | None = None
    rootdir: str | None = None
    duration: float | None = None
    notes: list[str] = field(default_factory=list)
    ambiguous: dict[str, str] = field(default_factory=dict)  # JUnit XML: listed id -> why it cannot be told

    @property
    def verdict_exitstatus(self) -> int | None:
        return self.inferred_exitstatus if self.format == JUNIT_XML else self.exitstatus


# --------------------------------------------------------------------------- reading: files, pipes, progress

CHUNK: Final = 1 << 20
"""Bytes read at a time: with one test's entry (a JSON report) or one line (a reportlog), what a
reader holds of the file at once."""
HEAD: Final = 65536  # bytes of a file's start its format is told from
KEEP: Final = 4 * MESSAGE_LIMIT
"""Characters kept of an element's text and of a result's ``message`` (a Score shows MESSAGE_LIMIT):
only a message opening with more than KEEP - MESSAGE_LIMIT blank characters reads differently whole."""
PROGRESS_AFTER = 1.0  # seconds a read takes before it says how far it is: a quicker one says nothing
PROGRESS_EVERY = 2.0  # seconds between two of its lines

Say = Callable[[str], None]
NO_WRITER: Final = ("a pipe that gives nothing: nobody writes to it (expected a file, or a pipe with a writer such as "
                    "<(cat junit.xml))")  # fmt: skip
_STRIP: Final = b"\xef\xbb\xbf \t\r\n"  # what a file's start may hold before its first character
_BOM: Final = b"\xef\xbb\xbf"


class Progress:
    """How far a long read is, a line at a time on ``say`` (standard error on the command line).

    Nothing for a read that ends within :data:`PROGRESS_AFTER` seconds, whatever the file's size;
    then a line every :data:`PROGRESS_EVERY` seconds (bytes read of the total, and the tests found
    so far), and a last one when the read ends. ``say=None`` says nothing at all. ``sized=False``
    counts tests only (grading what was read: :func:`grading`).
    """

    def __init__(self, say: Say | None, what: str, name: str | Path, total: int | None = None, unit: str = "",
                 clock: Callable[[], float] = time.monotonic, *, sized: bool = True) -> None:  # fmt: skip
        self.say = say
        self.what = what  # "reading", "checking", "copying", "grading"
        self.name = str(name)
        self.total = total
        self.unit = unit  # "test cases", "tests", "test reports"; "" counts none
        self.sized = sized
        self.clock = clock
        self.started = clock()
        self.every = PROGRESS_EVERY
        self.next = self.started + PROGRESS_AFTER
        self.said = 0

    def update(self, done: int, count: int = 0) -> None:
        """``done`` bytes read, ``count`` tests found: a line if one is due (cheap otherwise)."""
        if self.say is None:
            return
        now = self.clock()
        if now < self.next:
            return
        self.next = now + self.every
        self.said += 1
        if not self.sized:
            self.say(f"{self.what} {self.name}: {count:,} {self.unit}")
            return
        if self.total:
            amount = f"{done / 1e6:.1f} of {self.total / 1e6:.1f} MB ({100 * done // self.total}%)"
        else:
            amount = f"{done / 1e6:.1f} MB so far"
        self.say(f"{self.what} {self.name}: {amount}{self._count(count)}")

    def finish(self, done: int, count: int = 0) -> None:
        """The last line, when the read said anything."""
        if self.say is not None and self.said:
            took = self.clock() - self.started
            amount = f"{count:,} {self.unit}" if not self.sized else f"{done / 1e6:.1f} MB{self._count(count)}"
            self.say(f"{self.what} {self.name}: done, {amount} in {took:.1f} s")

    def _count(self, count: int) -> str:
        return f", {count:,} {self.unit}" if self.unit else ""


def grading(progress: Say | None, name: str | Path) -> Progress:
    """Progress of a whole grading, started before its read: after a long read, the tests it found
    are said at once, then every PROGRESS_EVERY seconds while they are graded, and the end."""
    return Progress(progress, "grading", name, unit="tests", sized=False)


class ReportInput:
    """A report opened to be read in chunks (:meth:`chunks`): never blocking on a pipe nobody writes
    to, a device or a socket refused; the sha256 of what was read. ``name`` is what errors say
    (``path`` by default); ``error``, ``missing``, ``directory`` and ``expected`` word them (shared
    with :mod:`.foreign`)."""

    def __init__(self, path: Path, name: str | Path | None = None, *, error: type[ReportError] = ReportError,
                 missing: str = "no such file", directory: str | None = None, expected: str = EXPECTED) -> None:  # fmt: skip
        self.name = Path(name) if name is not None else path
        self.error = error
        self.stdin = str(path) == "-"
        self.handle: IO[bytes]
        if self.stdin:  # standard input, checked for what it is (.inputs.stdin_problem), read as a pipe
            from .inputs import InputProblem, open_input

            try:
                self.handle = open_input("-")
            except InputProblem as exc:
                raise error(self.name, str(exc)) from None
            self.pipe, self.size, self.digest, self.done = True, None, hashlib.sha256(), 0
            return
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            raise error(self.name, missing) from None
        except OSError as exc:
            raise error(self.name, f"cannot be read: {exc.strerror}") from None
        if stat.S_ISDIR(mode):
            raise error(self.name, directory or f"is a directory; {expected}")
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
            raise error(self.name, f"is a {'socket' if stat.S_ISSOCK(mode) else 'device'}, not a file; {expected}")
        self.pipe = stat.S_ISFIFO(mode)
        try:
            if self.pipe:  # opened without waiting for a writer; with none, the first read is the end
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                os.set_blocking(fd, True)
                self.handle = os.fdopen(fd, "rb")
            else:
                self.handle = open(path, "rb")
        except OSError as exc:
            raise error(self.name, f"cannot be read: {exc.strerror}") from None
        self.size = None if self.pipe else os.fstat(self.handle.fileno()).st_size
        self.digest = hashlib.sha256()
        self.done = 0

    def __enter__(self) -> ReportInput:
        return self

    def __exit__(self, *_: object) -> None:
        if not self.stdin:  # standard input stays open: it is the process's, not this reader's
            self.handle.close()

    def chunks(self) -> Iterator[bytes]:
        while True:
            try:
                data = self.handle.read(CHUNK)
            except OSError as exc:
                raise self.error(self.name, f"cannot be read: {exc.strerror}") from None
            if not data:
                if self.pipe and not self.done and not self.stdin:  # empty standard input: said as empty
                    raise self.error(self.name, NO_WRITER)
                return
            self.done += len(data)
            self.digest.update(data)
            yield data


@contextmanager
def seekable(path: str | Path, progress: Say | None = None, *, error: type[ReportError] = ReportError,
             expected: str = EXPECTED) -> Iterator[Path]:  # fmt: skip
    """``path`` itself, or for a pipe (``<(cat junit.xml)``, a named pipe with a writer) a temporary copy
    of what it gives, removed afterwards: a report may be read twice (its format, then its content),
    a pipe only once. A pipe nobody writes to, a device and a socket raise ``error`` at once (a path
    that cannot be read at all is left to the reader, which says why). A :class:`ReportError` raised
    inside names ``path``, not the copy."""
    path = Path(path)
    stdin = str(path) == "-"  # standard input (--from-report -): copied as a pipe is
    try:
        mode = 0 if stdin else os.stat(path).st_mode
    except OSError:
        mode = 0
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
        ReportInput(path, error=error, expected=expected)  # raises
    if not stat.S_ISFIFO(mode) and not stdin:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="objective-score-report-") as folder:
        copy = Path(folder) / ("report" if stdin else path.name or "report")
        with ReportInput(path, error=error, expected=expected) as source, open(copy, "wb") as out:
            said = Progress(progress, "copying", f"{'standard input' if stdin else path} (a pipe) to a temporary file")
            for data in source.chunks():
                out.write(data)
                said.update(source.done)
            said.finish(source.done)
        try:
            yield copy
        except ReportError as exc:
            raise exc.renamed(path) from None


def read_head(chunks: Iterator[bytes]) -> tuple[list[bytes], bytes]:
    """The chunks read so far and the file's start past its BOM and blank bytes: at least HEAD
    bytes of it, or all there is."""
    read: list[bytes] = []
    size = skipped = 0
    started = False
    for data in chunks:
        read.append(data)
        size += len(data)
        if not started:
            rest = data.lstrip(_STRIP)
            skipped += len(data) - len(rest)
            started = bool(rest)
        if started and size - skipped >= HEAD:
            break
    return read, b"".join(read)[skipped:]


def sniff_head(path: Path, head: bytes) -> str:
    """``"xml"`` or ``"json"`` from the file's start (past its BOM and blank bytes, :func:`read_head`);
    :class:`ReportError` for anything else."""
    if not head:
        raise ReportError(path, f"is empty (no report was written: did the run die first?); {EXPECTED}")
    if head.startswith(b"<"):
        match = re.search(rb"<(?![?!])([^\s>/]+)", _without_xml_comments(head))
        tag = match.group(1).decode("utf-8", "replace") if match else None
        if tag in ("testsuites", "testsuite"):
            return "xml"
        found = f"its root element is <{tag}>" if tag else "it has no element"
        raise ReportError(path, f"is XML but {found}; expected <testsuites> or <testsuite> (pytest --junitxml)")
    if head.startswith((b"{", b"[")):
        return "json"
    sample = head[:20].decode("utf-8", "replace")
    raise ReportError(path, f"is neither XML nor JSON (it starts with {sample!r}); {EXPECTED}")


def _without_xml_comments(head: bytes) -> bytes:
    return re.sub(rb"<!--.*?-->", b"", head[:65536], flags=re.DOTALL)


def detect_format(path: str | Path) -> str:
    """``"junit-xml"``, ``"json-report"`` or ``"reportlog"``, from the file's content.

    Raises :class:`ReportError` for a file that cannot be read, is empty or is none of them.
    """
    path = Path(path)
    with seekable(path) as source:
        with ReportInput(source, path) as opened:
            chunks = opened.chunks()
            _, head = read_head(chunks)
            if sniff_head(path, head) == "xml":
                return JUNIT_XML
        return _json_format(path, source)


def read_report(path: str | Path, instance: Instance, *, progress: Say | None = None) -> ParsedReport:
    """Parse an outcome file into the phase facts the live plugin would have collected.

    The instance is needed for JUnit XML only (its listed ids are mapped forward to
    JUnit's names); the other formats name tests by their node ids. ``progress`` hears how far
    a long read is (:class:`Progress`).
    """
    path = Path(path)
    with seekable(path, progress) as source:
        return read_file(path, source, instance, progress)[0]


def read_file(path: Path, source: Path, instance: Instance, progress: Say | None = None,
              said: Progress | None = None) -> tuple[ParsedReport, str]:  # fmt: skip
    """The file ``source`` read (``path`` names it: ``source`` may be a pipe's copy): what it says, and
    its sha256 (``said``: the grading's progress, :func:`grading`)."""
    with ReportInput(source, path) as opened:
        chunks = opened.chunks()
        read, head = read_head(chunks)
        if sniff_head(path, head) == "xml":
            root = read_xml(path, chain(read, chunks), progress=Progress(progress, "reading", path, opened.size,
                                                                         "test cases"))  # fmt: skip
            return parse_junit(path, root, instance, said), opened.digest.hexdigest()
    return _read_json_family(path, source, progress)


def _clip(text: str) -> str:
    """recorder._message's cut: stripped, at most MESSAGE_LIMIT characters."""
    text = text.strip()
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "\u2026"


# --------------------------------------------------------------------------- pytest-reportlog


def _longrepr_message(longrepr: Any) -> str:
    """recorder._message on a report serialised by pytest (``_report_to_json``)."""
    if longrepr is None:
        return ""
    if isinstance(longrepr, list) and len(longrepr) == 3:  # a skip: (path, lineno, reason)
        return _clip(str(longrepr[2]))
    if isinstance(longrepr, dict):
        crash = longrepr.get("reprcrash")
        message = crash.get("message") if isinstance(crash, dict) else None
        return _clip(str(message)) if message else ""
    return _clip(str(longrepr))


def _lines(pieces: Iterable[str]) -> Iterator[tuple[str, bool]]:
    """The lines of a text read in pieces, split at newlines only (U+2028 and friends may stand raw
    inside JSON strings), as ``text.split("\\n")`` gives them: each with whether it is the last."""
    held: list[str] = []  # the start of a line that goes on in the next piece
    for piece in pieces:
        if "\n" not in piece:
            held.append(piece)
            continue
        lines = piece.split("\n")
        if held:
            held.append(lines[0])
            lines[0] = "".join(held)
        held = [lines.pop()]
        for line in lines:
            yield line, False
    yield "".join(held), True


def _parse_reportlog(path: Path, lines: Iterable[tuple[str, bool]], said: Progress | None = None,
                     opened: ReportInput | None = None) -> ParsedReport:  # fmt: skip
    parsed = ParsedReport(REPORTLOG)
    collector = parsed.collector
    finished_at: int | None = None
    reports = 0
    for lineno, (line, last) in enumerate(lines, 1):
        if said is not None and opened is not None:
            said.update(opened.done, reports)
        if not line.strip():
            continue
        try:
            item = nesting.loads(line)
        except json.JSONDecodeError as exc:
            if last and finished_at is None:  # the last line, cut short by a kill
                parsed.notes.append(f"line {lineno} is cut short (the run was killed while writing it): ignored")
                break
            raise ReportError(path, f"invalid JSON in a reportlog line (column {exc.colno}): {exc.msg}",
                              line=lineno) from None  # fmt: skip
        if not isinstance(item, dict) or "$report_type" not in item:
            raise ReportError(path, "not a pytest-reportlog line: expected a JSON object with \"$report_type\"",
                              line=lineno)  # fmt: skip
        kind = item["$report_type"]
        if finished_at is not None and kind in ("SessionStart", "TestReport", "CollectReport"):
            raise ReportError(path, f"a {kind} after the session finished (line {finished_at}): "
                              "the file holds more than one run", line=lineno)  # fmt: skip
        if kind == "TestReport":
            reports += 1
            nodeid, when, outcome = item.get("nodeid"), item.get("when") or "???", item.get("outcome")
            if not isinstance(nodeid, str) or not isinstance(outcome, str) or not isinstance(when, str):
                raise ReportError(path, "a TestReport without a string nodeid, when and outcome", line=lineno)
            flags = item.get(FLAGS_KEY)
            if outcome == "passed" and "wasxfail" not in item and not flags:
                collector.add_plain_pass(nodeid, when, _number(item.get("duration")))  # the live plugin's fast path
                continue
            if not isinstance(flags, dict):
                flags = {}
            longrepr = item.get("longrepr")
            collector.add_phase(
                nodeid, when, outcome, "wasxfail" in item,
                outcome == "failed" and isinstance(longrepr, str) and longrepr.startswith("[XPASS(strict)]"),
                bool(flags.get("raised_but_passed")), bool(flags.get("runtest_replaced")),
                _number(item.get("duration")), "" if outcome == "passed" else _longrepr_message(longrepr),
            )  # fmt: skip
        elif kind == "CollectReport":
            if item.get("outcome") == "failed":
                message = _longrepr_message(item.get("longrepr")) or "collection error"
                parsed.collect_errors.append((str(item.get("nodeid") or ""), message))
        elif kind == "SessionStart":
            parsed.pytest_version = _str_or_none(item.get("pytest_version"))
        elif kind == "SessionFinish":
            status = item.get("exitstatus")
            if isinstance(status, bool) or not isinstance(status, int):
                raise ReportError(path, f"SessionFinish has exitstatus {status!r}, expected an integer", line=lineno)
            parsed.exitstatus = status
            finished_at = lineno
    if finished_at is None:
        parsed.notes.append("no SessionFinish line: the run never finished (killed, or the file was cut short)")
    if said is not None and opened is not None:
        said.finish(opened.done, reports)
    return parsed


def _number(value: Any) -> float:
    """A phase's duration: a finite number, else 0.0 (unknown, as when absent)."""
    return float(value) if finite_duration(value) is not None else 0.0


def finite_duration(value: Any) -> float | None:
    """A duration a report gives (a number, or JUnit's ``time`` text) as a finite float, or None:
    ``NaN``, ``Infinity``, ``1e999`` are unknown, never written into an envelope (JSON holds no NaN,
    and the ledger refuses it). Unknown rather than refused: a timing is what the report says about
    the run's cost, never about its outcomes, which stay graded."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value) if isinstance(value, (int, float, str)) else None
    except (ValueError, OverflowError):
        return None
    return number if number is not None and math.isfinite(number) else None


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str_or_none(value: Any) -> str | None:
    return str(value) if isinstance(value, (str, int, float)) and str(value) else None


# --------------------------------------------------------------------------- pytest-json-report


def _stage_message(stage: Mapping[str, Any]) -> str:
    crash = stage.get("crash")
    if isinstance(crash, dict) and crash.get("message"):
        return _clip(str(crash["message"]))
    text = stage.get("longrepr")
    if not isinstance(text, str):
        return ""
    lines = [ln for ln in text.splitlines() if not re.match(r"\[gw\d+\] ", ln)]  # xdist's worker header
    text = "\n".join(lines)
    if text.startswith("(") and text.endswith(")"):  # a skip's longrepr tuple, as str() wrote it
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = None
        if isinstance(value, tuple) and len(value) == 3:
            return _clip(str(value[2]))
    return _clip(text)


def _strict_xpass(stage: Mapping[str, Any]) -> bool:
    text = stage.get("longrepr")
    if stage.get("outcome") != "failed" or "crash" in stage or not isinstance(text, str):
        return False
    return any(line.startswith("[XPASS(strict)]") for line in text.splitlines()[:2])


_STREAMED: Final = ("tests", "collectors")  # read entry by entry, each entry handled as it comes
_WHOLE: Final = frozenset({"exitcode", "environment", "root", "duration"})  # kept whole; any other key's list is
# read entry by entry and dropped


class _JsonReport:
    """pytest-json-report's object as it is read, key by key: each entry of ``tests`` goes to the
    collector as it comes, each of ``collectors`` is checked as it comes, the few other values the
    reading needs are kept; :meth:`finish` then checks, in the order reading the whole object did,
    and gives what it gave (the first problem found, or the report). A key written twice counts
    its last value, as ``json.loads`` keeps it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.top: str | None = None  # the type of a document that is not an object
        self.keys: dict[str, None] = {}  # in the order of their first appearance
        self.values: dict[str, Any] = {}
        self.tests_listed = False
        self.tests = 0
        self.collector = Collector()
        self.test_error: ReportError | None = None
        self.collectors_listed = False
        self.collect_errors: list[tuple[str, str]] = []
        self.collectors_error: ReportError | None = None

    def streams(self, key: str | None) -> bool:
        """Whether a list under ``key`` is read entry by entry (None: the document is the list)."""
        return key is None or key not in _WHOLE

    def begin(self, key: str | None) -> None:
        """A list starts: the document itself (None), or the value of ``key``."""
        if key is None:
            self.top = "list"
            return
        self.keys.setdefault(key, None)
        if key == "tests":
            self.tests_listed, self.tests, self.collector, self.test_error = True, 0, Collector(), None
            self.values.pop(key, None)
        elif key == "collectors":
            self.collectors_listed, self.collect_errors, self.collectors_error = True, [], None
            self.values.pop(key, None)

    def item(self, key: str | None, index: int, entry: Any) -> None:
        if key == "tests":
            self.tests += 1
            if self.test_error is None:
                try:
                    _json_test(self.path, self.collector, entry, f"tests[{index}]")
                except ReportError as exc:
                    self.test_error = exc
        elif key == "collectors" and self.collectors_error is None:
            if not isinstance(entry, dict):
                self.collectors_error = ReportError(self.path, f"expected an object, got {type(entry).__name__}",
                                                    element=f"collectors[{index}]")  # fmt: skip
            elif entry.get("outcome") == "failed":
                message = _clip(str(entry.get("longrepr") or "")) or "collection error"
                self.collect_errors.append((str(entry.get("nodeid") or ""), message))

    def value(self, key: str | None, value: Any) -> None:
        """A value read whole: the document's (None), or ``key``'s."""
        if key is None:
            self.top = type(value).__name__
            return
        self.keys.setdefault(key, None)
        if key == "tests":
            self.tests_listed, self.tests, self.collector, self.test_error = False, 0, Collector(), None
        elif key == "collectors":
            self.collectors_listed, self.collect_errors, self.collectors_error = False, [], None
        if key in _STREAMED or key in _WHOLE:
            self.values[key] = value

    def feed(self, document: Any) -> _JsonReport:
        """A document read whole, handed over as the streamed one is."""
        if not isinstance(document, dict):
            self.value(None, document)
            return self
        for key, value in document.items():
            if isinstance(value, list) and self.streams(key):
                self.begin(key)
                for index, entry in enumerate(value):
                    self.item(key, index, entry)
            else:
                self.value(key, value)
        return self

    def finish(self) -> ParsedReport:
        path, values = self.path, self.values
        if self.top is not None:
            raise ReportError(path, f"a JSON {self.top}, expected pytest-json-report's object; {EXPECTED}")
        if "exitcode" not in self.keys and "tests" not in self.keys:
            raise ReportError(path, f"a JSON object without \"exitcode\" or \"tests\" (keys: "
                              f"{', '.join(map(repr, list(self.keys)[:6]))}); {EXPECTED}")  # fmt: skip
        if "tests" not in self.keys:
            raise ReportError(path, "holds counts but no \"tests\" (written with --json-report-summary?): "
                              "per-test outcomes are needed to grade")  # fmt: skip
        status = values.get("exitcode")
        if isinstance(status, bool) or not isinstance(status, int):
            raise ReportError(path, f"\"exitcode\" is {status!r}, expected an integer", element="exitcode")
        if not self.tests_listed:
            raise ReportError(path, f"expected a list, got {type(values.get('tests')).__name__}", element="tests")
        if self.test_error is not None:
            raise self.test_error
        parsed = ParsedReport(JSON_REPORT, collector=self.collector, exitstatus=status)
        collectors = values.get("collectors")
        if collectors is None and not self.collectors_listed and self.tests:
            parsed.notes.append('no "collectors" (--json-report-omit collectors?): collection errors cannot be seen')
        if self.collectors_listed:
            if self.collectors_error is not None:
                raise self.collectors_error
            parsed.collect_errors.extend(self.collect_errors)
        else:
            for index, node in enumerate(collectors or []):
                if not isinstance(node, dict):
                    raise ReportError(path, f"expected an object, got {type(node).__name__}",
                                      element=f"collectors[{index}]")  # fmt: skip
                if node.get("outcome") == "failed":
                    message = _clip(str(node.get("longrepr") or "")) or "collection error"
                    parsed.collect_errors.append((str(node.get("nodeid") or ""), message))
        environment = _object(values.get("environment"))
        packages = _object(environment.get("Packages"))
        parsed.pytest_version = _str_or_none(packages.get("pytest"))
        python = _str_or_none(environment.get("Python"))
        parsed.python = f"Python/{python}" if python else None
        parsed.platform = _str_or_none(environment.get("Platform"))
        parsed.rootdir = _str_or_none(values.get("root"))
        duration = values.get("duration")
        total = finite_duration(duration) if isinstance(duration, (int, float)) else None
        parsed.duration = round(total, 3) if total is not None else None
        return parsed


def _json_test(path: Path, collector: Collector, test: Any, element: str) -> None:
    if not isinstance(test, dict):
        raise ReportError(path, f"expected an object, got {type(test).__name__}", element=element)
    nodeid = test.get("nodeid")
    category = test.get("outcome")
    if not isinstance(nodeid, str) or not nodeid:
        raise ReportError(path, "has no \"nodeid\" string", element=element)
    if not isinstance(category, str):
        raise ReportError(path, f"\"outcome\" is {category!r}, expected a string", element=f"{element} ({nodeid})")
    # Each phase as its last report left it, in the order they arrived (a rerun's leftovers dropped).
    stages = [
        (when, stage)
        for when, stage in test.items()
        if when in PHASES and isinstance(stage, dict) and stage.get("outcome") != "rerun"
    ]
    if not stages:
        raise ReportError(path, "has no setup, call or teardown phase", element=f"{element} ({nodeid})")
    xfail = category in ("xfailed", "xpassed")  # the phases do not say; the test's category does
    facts = []
    for when, stage in stages:
        outcome = stage.get("outcome")
        if not isinstance(outcome, str):
            raise ReportError(path, f"phase {when!r} has outcome {outcome!r}", element=f"{element} ({nodeid})")
        facts.append([when, outcome, xfail, _strict_xpass(stage), _number(stage.get("duration")),
                      "" if outcome == "passed" else _stage_message(stage)])  # fmt: skip
    # json-report keeps only the last report of each phase; its test category counts every report.
    # A test it calls failed or error is never graded better than that (a failed subtest, say).
    if category == "failed" and not any(f[1] == "failed" for f in facts):
        for fact in facts:
            if fact[0] == "call":
                fact[1] = "failed"
    if category == "error" and not any(f[1] == "failed" and f[0] != "call" for f in facts):
        for fact in facts:
            if fact[0] == "teardown":
                fact[1] = "failed"
    for when, outcome, is_xfail, strict, duration, message in facts:
        collector.add_phase(nodeid, when, outcome, is_xfail, strict, False, False, duration, message)


# --------------------------------------------------------------------------- JSON, read in chunks

FIRST_LINE: Final = CHUNK  # characters of a JSON file's first line read on their own to tell its format
_SLACK: Final = 64  # a value read this close to the end of what is held may go on in the next piece
_DECODER: Final = json.JSONDecoder()
_WHITESPACE: Final = re.compile(r"[ \t\n\r]*", re.VERBOSE | re.MULTILINE | re.DOTALL)  # json.decoder.WHITESPACE


class _Syntax(Remade, Exception):
    """Invalid JSON, as ``json.loads`` of the whole text says it: its message, line and column."""

    def __init__(self, msg: str, line: int, col: int) -> None:
        super().__init__(msg)
        self.msg, self.line, self.col = msg, line, col


class _Deep(Remade, Exception):
    """Nested past nesting.LIMIT: the line and column of the first bracket past it."""

    def __init__(self, line: int, col: int) -> None:
        super().__init__(line, col)
        self.line, self.col = line, col


@dataclass
class _Checked:
    """What a first pass over a JSON file's text found (it is UTF-8 text: the pass says so if not)."""

    first: str  # its first line, the text stripped as str.strip() strips (its start only, when long)
    long: bool  # the first line is longer than FIRST_LINE
    rest: bool  # more than blank characters follow the first line
    named: bool  # '"exitcode"' or '"tests"' stands somewhere in the text
    digest: str


def _decoded(path: Path, chunks: Iterable[bytes]) -> Iterator[str]:
    """The text of a file read in ``chunks``, a piece a chunk, as ``data.decode("utf-8-sig")`` gives it
    whole. A byte that is not UTF-8 is refused as reading the whole file refused it: "not UTF-8 text
    (REASON at byte N)", N counted past a BOM, the line counted over the file's first N bytes."""
    pending = b""  # the start of a character that goes on in the next chunk
    offset = 0  # bytes of the text (past a BOM) before `pending`
    newlines = 0  # newlines among them
    last = b""  # their last three bytes
    bom = -1  # the BOM's length, once known
    source = iter(chunks)
    final = False
    while not final:
        data = next(source, None)
        final = data is None
        data = pending + (data or b"")
        if bom < 0:
            if not final and len(data) < 3 and _BOM.startswith(data):
                pending = data
                continue
            bom = 3 if data.startswith(_BOM) else 0
            data = data[bom:]
        try:
            text, used = codecs.utf_8_decode(data, "strict", final)
        except UnicodeDecodeError as exc:
            # the newlines of the file's first `start` bytes, BOM included: of the text's, `bom` bytes fewer
            at = exc.start - bom
            count = newlines + data[:at].count(b"\n") if at >= 0 else newlines - last[max(0, len(last) + at):].count(b"\n")
            raise ReportError(path, f"not UTF-8 text ({exc.reason} at byte {offset + exc.start})",
                              line=max(count, 0) + 1) from None  # fmt: skip
        newlines += data.count(b"\n", 0, used)
        last = (last + data[max(0, used - 3):used])[-3:]
        offset += used
        pending = data[used:]
        if text:
            yield text


def _progressed(opened: ReportInput, said: Progress) -> Iterator[bytes]:
    for data in opened.chunks():
        yield data
        said.update(opened.done)


def _check_json(path: Path, source: Path, progress: Say | None) -> _Checked:
    """The first pass over a JSON file: that it is UTF-8 text, and what tells its format."""
    with ReportInput(source, path) as opened:
        said = Progress(progress, "checking", path, opened.size)
        state = 0  # 0: before its first character, 1: in its first line, 2: past it
        first: list[str] = []
        size = 0
        long = rest = named = False
        tail = ""
        for piece in _decoded(path, _progressed(opened, said)):
            if not named:
                window = tail + piece
                named = '"exitcode"' in window or '"tests"' in window
                tail = window[-9:]
            if state == 0:
                piece = piece.lstrip()
                if not piece:
                    continue
                state = 1
            if state == 1:
                end = piece.find("\n")
                if not long:
                    first.append(piece if end < 0 else piece[:end])
                    size += len(first[-1])
                    if size > FIRST_LINE:
                        long, first = True, []
                if end < 0:
                    continue
                state, piece = 2, piece[end + 1:]
            if not rest and piece.strip():
                rest = True
        said.finish(opened.done)
        return _Checked("".join(first), long, rest, named, opened.digest.hexdigest())


def _first_line(path: Path, source: Path) -> str:
    """The first line of the text stripped, read whole (a long one followed by more lines)."""
    held: list[str] = []
    with ReportInput(source, path) as opened:
        for piece in _decoded(path, opened.chunks()):
            if not held:
                piece = piece.lstrip()
                if not piece:
                    continue
            end = piece.find("\n")
            held.append(piece if end < 0 else piece[:end])
            if end >= 0:
                break
    return "".join(held)


def _json_kind(path: Path, source: Path, checked: _Checked) -> tuple[str, Any]:
    """The format of a JSON file, and its document when its one line held it: what reading the first
    line of its text told (``"single"``: a one-line document too long to read whole, which only reading
    it through can tell). Raises what telling it raised."""
    if checked.long and not checked.rest:
        return "single", None
    first = _first_line(path, source) if checked.long else checked.first
    if not checked.rest:
        first = first.rstrip()
    try:
        value = nesting.loads(first)
    except nesting.TooDeep as exc:
        raise ReportError(path, exc.msg, line=1) from None
    except json.JSONDecodeError:
        value = None  # the first line alone is not a document: an indented JSON document
    if isinstance(value, dict) and "$report_type" in value:
        return REPORTLOG, None
    if isinstance(value, dict) and not checked.rest and not ("exitcode" in value or "tests" in value):
        raise ReportError(path, f"a JSON object without \"exitcode\" or \"tests\" (keys: "
                          f"{', '.join(map(repr, list(value)[:6]))}); {EXPECTED}")  # fmt: skip
    if value is None and not checked.named:
        raise ReportError(path, f"a JSON document without \"exitcode\" or \"tests\"; {EXPECTED}")
    if value is None or not checked.rest:
        return JSON_REPORT, value
    raise ReportError(
        path,
        "holds JSON lines without \"$report_type\" (line 1 has keys "
        f"{', '.join(map(repr, list(value)[:5])) if isinstance(value, dict) else type(value).__name__}); "
        "expected pytest-reportlog lines (--report-log)",
        line=1,
    )


class _Scan:
    """A JSON text read in pieces: json's own scanner decodes each value (an entry of a list read
    entry by entry, or a value read whole); the text held is what the value being read needs.
    Offsets are the whole text's, errors are json's (message, line and column)."""

    def __init__(self, pieces: Iterator[str], tick: Callable[[], None]) -> None:
        self.pieces = pieces
        self.tick = tick  # after each entry of a list: progress
        self.buf = ""
        self.at = 0  # where the scan stands in buf
        self.base = 0  # the offset in the text of buf[0]
        self.lines = 0  # newlines before buf[0]
        self.line_start = 0  # the offset of the line holding buf[0]
        self.eof = False
        self.deep: tuple[int, int] | None = None  # the first bracket past nesting.LIMIT, once found
        self.anchor: int | None = None  # the offset just past the last token, while the next is looked for

    def more(self, least: int = 1) -> None:
        """Hold at least ``least`` more characters (fewer at the end of the text), dropping what was read."""
        drop = self.at if self.anchor is None else min(self.at, max(0, self.anchor - 1 - self.base))
        if drop > CHUNK and drop * 2 > len(self.buf):
            dropped = self.buf[:drop]
            self.lines += dropped.count("\n")
            newline = dropped.rfind("\n")
            if newline >= 0:
                self.line_start = self.base + newline + 1
            self.base += drop
            self.buf = self.buf[drop:]
            self.at -= drop
        parts, size = [self.buf], 0
        while size < least:
            piece = next(self.pieces, None)
            if piece is None:
                self.eof = True
                break
            parts.append(piece)
            size += len(piece)
        self.buf = "".join(parts)

    def where(self, index: int) -> tuple[int, int]:
        """The line and column of buf[index], as JSONDecodeError counts them."""
        newline = self.buf.rfind("\n", 0, index)
        line = self.lines + self.buf.count("\n", 0, index) + 1
        return line, (index - newline if newline >= 0 else self.base + index - self.line_start + 1)

    def syntax(self, msg: str, index: int) -> _Syntax:
        return _Syntax(msg, *self.where(index))

    def ws(self) -> None:
        while True:
            self.at = _WHITESPACE.match(self.buf, self.at).end()  # type: ignore[union-attr]
            if self.at < len(self.buf) or self.eof:
                return
            self.more()

    def peek(self) -> str:
        return self.buf[self.at] if self.at < len(self.buf) else ""

    def _retry(self, exc: json.JSONDecodeError) -> bool:
        """Whether a failure may only be the end of what is held (then more is read)."""
        if self.eof or not (exc.pos >= len(self.buf) - _SLACK or exc.msg.startswith("Unterminated string")):
            return False
        self.more(max(CHUNK, len(self.buf) - self.at))  # at least doubles what the value has so far
        return True

    def mark(self) -> None:
        """Past a token: what follows it may be refused (:meth:`fail`), so its last character is kept."""
        self.anchor = self.base + self.at

    def value(self) -> Any:
        self.anchor = None
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.at)
            except json.JSONDecodeError as exc:
                if self._retry(exc):
                    continue
                raise self.syntax(exc.msg, exc.pos) from None
            except ValueError as exc:  # an integer longer than Python converts: said where it stands
                if not nesting.long_number(exc):
                    raise
                if not self.eof and len(self.buf) - self.at < CHUNK * 64:
                    self.more(max(CHUNK, len(self.buf) - self.at))  # the whole number, for its length
                    continue
                found = nesting.number_too_long(self.buf, self.at)
                raise self.syntax(found.msg, found.pos) from None
            if end > len(self.buf) - _SLACK and not self.eof:  # a number may go on
                self.more(max(CHUNK, len(self.buf) - self.at))
                continue
            self.at = end
            return value

    def entry(self, level: int) -> Any:
        """A value ``level`` arrays and objects deep: its nesting checked as nesting.loads checks it."""
        start = self.base + self.at
        try:
            value = self.value()
        except RecursionError:  # json gave up on it: the first bracket past the limit is held
            if self.deep is None:
                self.deep = self.where(nesting.deep_at(self.buf, start - self.base, len(self.buf), level))
            raise _Deep(*self.deep) from None
        if self.deep is None and nesting.depth(value) + level > nesting.LIMIT:
            self.deep = self.where(nesting.deep_at(self.buf, start - self.base, self.at, level))
        return value

    def key(self) -> str:
        self.anchor = None
        while True:
            try:
                key, end = json.decoder.scanstring(self.buf, self.at + 1, True)  # type: ignore[attr-defined]
            except json.JSONDecodeError as exc:
                if self._retry(exc):
                    continue
                raise self.syntax(exc.msg, exc.pos) from None
            self.at = end
            return str(key)

    def fail(self, before: str) -> _Syntax:
        """What json says of the character where the scan stands, after what ``before`` stands for
        (``{``, ``{"k"``, ``{"k":0``, ``{"k":0,``, ``[0`` or ``[0,``: the text up to :meth:`mark`): asked
        of json itself, so that each Python's own wording and offset are given."""
        anchor = self.at if self.anchor is None else self.anchor - self.base
        gap = " " if self.at > anchor else ""
        probe = before + gap + self.buf[self.at: self.at + 1]
        try:
            json.loads(probe)
        except json.JSONDecodeError as exc:
            past = exc.pos - len(before) - len(gap)
            return self.syntax(exc.msg, self.at + past if past >= 0 else anchor + exc.pos - len(before))
        return self.syntax("Expecting ',' delimiter", self.at)  # not reached: json refuses every probe

    def blank_rest(self) -> bool:
        """Whether only blank characters (str.strip's) remain."""
        while True:
            if self.buf[self.at:].strip():
                return False
            if self.eof:
                return True
            self.at = len(self.buf)
            self.more()


def _scan_document(scan: _Scan, sink: _JsonReport, single: bool) -> None:
    """``json.loads`` of the whole text, with ``tests``, ``collectors`` (and every list but the few
    values kept whole) read entry by entry into ``sink``. ``single``: the text is one line, read as
    its first line stripped was (trailing blank characters of any kind allowed)."""
    scan.more()
    if scan.buf.startswith("\ufeff"):
        raise scan.syntax("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0)
    scan.ws()
    if scan.peek() == "{":
        _scan_object(scan, sink)
    elif scan.peek() == "[":
        _scan_list(scan, sink, None, 1)
    else:
        sink.value(None, scan.entry(0))
    scan.ws()
    if scan.at < len(scan.buf):
        extra = scan.syntax("Extra data", scan.at)
        if not (single and scan.blank_rest()):
            raise extra
    if scan.deep is not None:
        raise _Deep(*scan.deep)


def _scan_object(scan: _Scan, sink: _JsonReport) -> None:
    scan.at += 1  # {
    scan.mark()
    scan.ws()
    if scan.peek() == "}":
        scan.at += 1
        return
    before = "{"
    while True:
        if scan.peek() != '"':
            raise scan.fail(before)
        key = scan.key()
        scan.mark()
        scan.ws()
        if scan.peek() != ":":
            raise scan.fail('{"k"')
        scan.at += 1
        scan.ws()
        if scan.peek() == "[" and sink.streams(key):
            sink.begin(key)
            _scan_list(scan, sink, key, 2)
        else:
            sink.value(key, scan.entry(1))
        scan.mark()
        scan.ws()
        if scan.peek() == "}":
            scan.at += 1
            return
        if scan.peek() != ",":
            raise scan.fail('{"k":0')
        scan.at += 1
        scan.mark()
        scan.ws()
        before = '{"k":0,'


def _scan_list(scan: _Scan, sink: _JsonReport, key: str | None, level: int) -> None:
    """A list ``level`` deep (its entries one deeper... counted from the list), entry by entry."""
    if key is None:
        sink.begin(None)
    scan.at += 1  # [
    scan.ws()
    if scan.peek() == "]":
        scan.at += 1
        return
    index = 0
    while True:
        sink.item(key, index, scan.entry(level))
        index += 1
        scan.tick()
        scan.mark()
        scan.ws()
        if scan.peek() == "]":
            scan.at += 1
            return
        if scan.peek() != ",":
            raise scan.fail("[0")
        scan.at += 1
        scan.mark()
        scan.ws()
        if scan.peek() == "]":  # a trailing comma: each Python words it its own way
            raise scan.fail("[0,")


def _stream_json(path: Path, source: Path, single: bool, digest: str, progress: Say | None) -> _JsonReport:
    """The second pass over a JSON document: read through, entry by entry. Raises :class:`_Syntax`
    and :class:`_Deep` as json and nesting would have for the whole text."""
    sink = _JsonReport(path)
    with ReportInput(source, path) as opened:
        said = Progress(progress, "reading", path, opened.size, "tests")
        scan = _Scan(_decoded(path, opened.chunks()), lambda: said.update(opened.done, sink.tests))
        _scan_document(scan, sink, single)
        said.finish(opened.done, sink.tests)
        _same(path, opened, digest)
    return sink


def _same(path: Path, opened: ReportInput, digest: str) -> None:
    for _ in opened.chunks():  # what was not read yet (nothing, but for a file being written)
        pass
    if opened.digest.hexdigest() != digest:
        raise ReportError(path, "changed while it was read (two reads differ): grade a file nothing writes to")


def _read_json_family(path: Path, source: Path, progress: Say | None) -> tuple[ParsedReport, str]:
    """A JSON report or a reportlog: a first pass checks the text and tells the format, a second
    reads it (entry by entry, or line by line); a one-line document short enough is read whole."""
    checked = _check_json(path, source, progress)
    kind, value = _json_kind(path, source, checked)
    if kind == REPORTLOG:
        return _read_reportlog(path, source, checked.digest, progress), checked.digest
    if value is not None:
        return _JsonReport(path).feed(value).finish(), checked.digest
    single = kind == "single"
    try:
        sink = _stream_json(path, source, single, checked.digest, progress)
    except _Syntax as exc:
        if single and not checked.named:  # the one line is no document: the old check of the text follows
            raise ReportError(path, f"a JSON document without \"exitcode\" or \"tests\"; {EXPECTED}") from None
        raise ReportError(path, f"invalid JSON (column {exc.col}): {exc.msg}", line=exc.line) from None
    except _Deep as exc:
        if single:
            raise ReportError(path, nesting.too_deep(), line=1) from None
        raise ReportError(path, f"invalid JSON (column {exc.col}): {nesting.too_deep()}", line=exc.line) from None
    if single and "$report_type" in sink.keys and sink.top is None:  # one reportlog line
        return _read_reportlog(path, source, checked.digest, progress), checked.digest
    return sink.finish(), checked.digest


def _json_format(path: Path, source: Path) -> str:
    """detect_format's answer for a JSON file: what telling it from its first line gave."""
    checked = _check_json(path, source, None)
    kind, _ = _json_kind(path, source, checked)
    if kind != "single":
        return kind
    try:
        sink = _stream_json(path, source, True, checked.digest, None)
    except _Syntax:
        if not checked.named:
            raise ReportError(path, f"a JSON document without \"exitcode\" or \"tests\"; {EXPECTED}") from None
        return JSON_REPORT
    except _Deep:
        raise ReportError(path, nesting.too_deep(), line=1) from None
    if "$report_type" in sink.keys and sink.top is None:
        return REPORTLOG
    if sink.top is None and not ("exitcode" in sink.keys or "tests" in sink.keys):
        sink.finish()  # raises the one-line document's refusal
    return JSON_REPORT


def _read_reportlog(path: Path, source: Path, digest: str, progress: Say | None) -> ParsedReport:
    with ReportInput(source, path) as opened:
        said = Progress(progress, "reading", path, opened.size, "test reports")
        parsed = _parse_reportlog(path, _lines(_decoded(path, opened.chunks())), said, opened)
        _same(path, opened, digest)
    return parsed


# --------------------------------------------------------------------------- JUnit XML


def junit_key(test_id: str, prefix: str | None = None) -> tuple[str, str]:
    """The ``(classname, name)`` pytest's junitxml writes for a node id.

    ``_pytest.junitxml.mangle_test_address``: the path without ``.py`` and with ``/``
    as ``.``, classes appended with ``.``; the name is the last part with its
    parameters (escaped by ``bin_xml_escape``). ``--junitprefix`` goes first.
    """
    base, bracket, params = test_id.partition("[")
    names = base.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    classnames = names[:-1]
    if prefix:
        classnames.insert(0, prefix)
    return ".".join(classnames), _bin_xml_escape(names[-1])


def _bin_xml_escape(text: str) -> str:
    def repl(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"#x{code:02X}" if code <= 0xFF else f"#x{code:04X}"

    return _ILLEGAL_XML.sub(repl, text)


_RESULT_TAGS: Final = frozenset({"failure", "error", "skipped", "flakyFailure", "flakyError", "rerunFailure",
                                 "rerunError"})  # a testcase's children any reader looks at
_CASE_ATTRS: Final = frozenset({"classname", "name", "file", "time"})
_RESULT_ATTRS: Final = frozenset({"message", "type"})
_SHARED_ATTRS: Final = frozenset({"classname", "file", "time"})  # values many testcases repeat: held once


@dataclass(slots=True)
class XmlNode:
    """An element of :func:`read_xml`'s tree: its tag, attributes, line, children and kept text."""

    tag: str
    attrs: dict[str, str]
    line: int
    children: Sequence[XmlNode] = ()
    text: Sequence[str] = ()  # kept only for the text_tags read_xml was given

    def joined(self, *inner: str) -> str:
        """Its text, then that of its children tagged one of ``inner`` (and theirs), in order."""
        return "".join(self.text) + "".join(c.joined(*inner) for c in self.children if c.tag in inner)


_Node = XmlNode


def read_xml(
    path: Path,
    chunks: Iterable[bytes],
    *,
    text_tags: frozenset[str] = frozenset({"error"}),
    error: type[ReportError] = ReportError,
    doctype: str = "declares a DOCTYPE, which pytest's JUnit XML never has",
    progress: Progress | None = None,
) -> XmlNode:
    """The tree of a JUnit XML file read in ``chunks`` (expat fed one at a time), with line numbers
    (ElementTree keeps none); DOCTYPEs refused, elements no deeper than nesting.LIMIT.

    Only what a JUnit reader looks at is kept: the root and its children; ``<testsuite>`` elements,
    their ``<properties>`` and ``<property>`` elements; ``<testcase>`` elements (their classname, name,
    file and time) with their result children (:data:`_RESULT_TAGS`: message and type, to :data:`KEEP`
    characters) and those children's ``<stackTrace>``; the text of ``text_tags`` elements, to KEEP
    characters. Captured output and anything else is passed over. Shared with :mod:`.foreign`, which
    keeps the text of more elements.
    """
    parser = expat.ParserCreate()
    parser.buffer_text = True
    roots: list[XmlNode] = []
    stack: list[XmlNode | None] = []  # None: an element passed over
    shared: dict[str, str] = {}
    cases = 0

    def start(tag: str, attrs: dict[str, str]) -> None:
        nonlocal cases
        if len(stack) >= nesting.LIMIT:
            raise error(path, nesting.too_deep("elements"), line=parser.CurrentLineNumber, element=f"<{tag}>")
        node: XmlNode | None = None
        parent = stack[-1] if stack else None
        if not stack:
            node = XmlNode(tag, attrs, parser.CurrentLineNumber)
            roots.append(node)
        elif parent is not None:
            kind = parent.tag
            if kind == "testsuite" or len(stack) == 1:  # a suite, or the root: suites, testcases, properties
                if tag == "testcase":
                    cases += 1
                    if not attrs.keys() <= _CASE_ATTRS:
                        attrs = {k: v for k, v in attrs.items() if k in _CASE_ATTRS}
                    for k in _SHARED_ATTRS:
                        if k in attrs:
                            attrs[k] = shared.setdefault(attrs[k], attrs[k])
                    node = XmlNode(tag, attrs, parser.CurrentLineNumber)
                elif tag in ("testsuite", "properties") or len(stack) == 1:
                    node = XmlNode(tag, attrs, parser.CurrentLineNumber)
            elif kind == "testcase":
                if tag in _RESULT_TAGS:
                    node = XmlNode(tag, {k: v[:KEEP] for k, v in attrs.items() if k in _RESULT_ATTRS},
                                   parser.CurrentLineNumber)  # fmt: skip
            elif kind == "properties":
                if tag == "property":
                    node = XmlNode(tag, attrs, parser.CurrentLineNumber)
            elif (kind in _RESULT_TAGS or kind == "stackTrace") and tag == "stackTrace":
                node = XmlNode(tag, {}, parser.CurrentLineNumber)
            if node is not None:
                if isinstance(parent.children, list):
                    parent.children.append(node)
                else:
                    parent.children = [node]
        stack.append(node)
        parser.CharacterDataHandler = text if node is not None and tag in text_tags else None

    def end(tag: str) -> None:
        stack.pop()
        top = stack[-1] if stack else None
        wanted = top is not None and top.tag in text_tags and sum(map(len, top.text)) < KEEP
        parser.CharacterDataHandler = text if wanted else None

    def text(data: str) -> None:  # (set only in start and end: setting it here re-enters pyexpat's flush)
        node = stack[-1]
        assert node is not None
        room = KEEP - sum(map(len, node.text))
        if room <= 0:
            return
        if isinstance(node.text, list):
            node.text.append(data[:room])
        else:
            node.text = [data[:room]]

    def refuse_doctype(*_: Any) -> None:
        raise error(path, f"{doctype} (refused: entities could expand without bound)", line=parser.CurrentLineNumber)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.StartDoctypeDeclHandler = refuse_doctype
    parser.EntityDeclHandler = refuse_doctype
    done = 0
    try:
        for data in chunks:
            parser.Parse(data, False)
            done += len(data)
            if progress is not None:
                progress.update(done, cases)
        parser.Parse(b"", True)
    except expat.ExpatError as exc:
        raise error(path, f"invalid XML (column {exc.offset + 1}): {expat.ErrorString(exc.code)}",
                    line=exc.lineno) from None  # fmt: skip
    if progress is not None:
        progress.finish(done, cases)
    return roots[0]


def parse_xml(path: Path, data: bytes, **options: Any) -> XmlNode:
    """:func:`read_xml` of a file already read."""
    return read_xml(path, [data[i: i + CHUNK] for i in range(0, len(data), CHUNK)], **options)


@dataclass(slots=True)
class _Case:
    key: tuple[str, str]
    line: int
    file: str | None
    duration: float
    results: list[_Node]  # the <failure>, <error> and <skipped> children, in order

    def only(self, tag: str, prefix: str) -> bool:
        return len(self.results) == 1 and self.results[0].tag == tag and _message(self.results[0]).startswith(prefix)


def _message(node: _Node) -> str:
    return node.attrs.get("message", "")


def _case_places(path: Path, root: _Node) -> Iterator[tuple[Sequence[_Node], int]]:
    """Where each ``<testcase>`` stands, in document order: the children holding it, and its index
    (a reader may let go of it there once read)."""
    if root.tag not in ("testsuites", "testsuite"):
        raise ReportError(path, "expected <testsuites> or <testsuite> (pytest --junitxml)", line=root.line,
                          element=f"<{root.tag}>")  # fmt: skip
    walking: list[tuple[Sequence[_Node], int]] = [([root] if root.tag == "testsuite" else root.children, 0)]
    while walking:
        kids, index = walking.pop()
        while index < len(kids):
            child = kids[index]
            index += 1
            if child.tag == "testsuite":
                walking.append((kids, index))
                kids, index = child.children, 0
            elif child.tag == "testcase":
                yield kids, index - 1


def _case_of(path: Path, node: _Node) -> _Case:
    name = node.attrs.get("name")
    if name is None and "classname" not in node.attrs:
        name = ""  # pytest's trace of the test it was running when the session was interrupted
    elif name is None:
        raise ReportError(path, "has no name attribute", line=node.line, element="<testcase>")
    duration = finite_duration(node.attrs.get("time", 0) or 0) or 0.0
    results = [c for c in node.children if c.tag in ("failure", "error", "skipped")]
    # pytest before 9.2 escapes characters beyond the BMP ("#x1F600"), later ones keep them:
    # both spellings read as the escaped one, which junit_key produces.
    key = (node.attrs.get("classname", ""), _bin_xml_escape(name))
    return _Case(key, node.line, node.attrs.get("file"), duration, results)


def _split_cases(path: Path, root: _Node) -> tuple[dict[int, _Case], set[int]]:
    """pytest writes a failed call followed by a failed teardown as two testcases of one name
    (the second holding only the teardown's ``<error>``): which testcase (numbered in document
    order) takes in which later one, and the numbers of those taken in, to put them back together."""
    taken: dict[int, _Case] = {}
    gone: set[int] = set()
    open_failures: dict[tuple[str, str], int] = {}
    for number, (kids, index) in enumerate(_case_places(path, root)):
        case = _case_of(path, kids[index])
        earlier = open_failures.pop(case.key, None)
        if earlier is not None and case.only("error", _TEARDOWN_ERROR):
            taken[earlier] = case
            gone.add(number)
            continue
        if any(r.tag == "failure" for r in case.results) and not any(
            r.tag == "error" and _message(r).startswith(_TEARDOWN_ERROR) for r in case.results
        ):
            open_failures[case.key] = number
    return taken, gone


def _cases(path: Path, root: _Node) -> Iterator[_Case]:
    """The testcases in document order, split ones put back together; each let go of in the tree
    once read (the tree is used up)."""
    taken, gone = _split_cases(path, root)
    for number, (kids, index) in enumerate(_case_places(path, root)):
        node = kids[index]
        cast("list[Any]", kids)[index] = _USED
        if number in gone:
            continue
        case = _case_of(path, node)
        later = taken.get(number)
        if later is not None:
            case.results.extend(later.results)
            case.duration += later.duration
        yield case


_USED: Final = XmlNode("", {}, 0)  # what stands in the tree for a testcase read and let go of


def _unwrap(message: str, prefix: str) -> str:
    if message.startswith(prefix):
        return message[len(prefix):].removesuffix('"')
    return message


Fact = tuple[str, str, bool, bool, str]  # when, outcome, xfail, strict_xpass, message


def _case_facts(case: _Case) -> list[Fact]:
    """The phase facts a testcase stands for (docs/from-report.md has the table)."""
    setup: Fact | None = None
    call: Fact | None = None
    teardown: Fact | None = None
    crash: Fact | None = None
    for node in case.results:
        message = _message(node)
        if node.tag == "failure":
            call = ("call", "failed", False, message.startswith("[XPASS(strict)]"), message)
        elif node.tag == "error":
            inner = _unwrap(_unwrap(message, _SETUP_ERROR), _TEARDOWN_ERROR)
            if _CRASH.match(inner):  # xdist's crash report (when="???") goes through junitxml's setup branch
                crash = ("???", "failed", False, False, inner)
            elif message.startswith(_TEARDOWN_ERROR):
                teardown = ("teardown", "failed", False, False, inner)
            else:  # pytest's "failed on setup with", or an error another tool wrote: never a pass
                setup = ("setup", "failed", False, False, inner)
        elif message == _OLD_XPASS:
            call = ("call", "failed", True, True, message)
        elif node.attrs.get("type") == "pytest.xfail":
            if call is None and setup is None:
                call = ("call", "skipped", True, False, message)
            else:  # a second xfail mark: the teardown raised under the xfail mark
                teardown = ("teardown", "skipped", True, False, message)
        elif call is None and setup is None:
            call = ("call", "skipped", False, False, message)
        elif teardown is None:
            teardown = ("teardown", "skipped", False, False, message)  # a skip raised in teardown
    facts: list[Fact] = [setup or ("setup", "passed", False, False, "")]
    if crash is not None:
        return [*facts, crash]
    if setup is None:
        facts.append(call or ("call", "passed", False, False, ""))
    facts.append(teardown or ("teardown", "passed", False, False, ""))
    return facts


class _JunitNames:
    """Listed ids mapped forward to JUnit's names; unlisted testcases named within listed files."""

    def __init__(self, instance: Instance) -> None:
        by_key: dict[tuple[str, str], list[str]] = {}
        for test_id in instance.listed:
            by_key.setdefault(junit_key(test_id), []).append(test_id)
        self.tests = {key: ids[0] for key, ids in by_key.items() if len(ids) == 1}
        self.ambiguous = {key: ids for key, ids in by_key.items() if len(ids) > 1}
        # The modules of the listed files, to name unlisted testcases found in them.
        self.modules: dict[str, str] = {}
        self._file_modules: dict[str, str] = {}  # an xunit1 testcase's file -> its module
        # The collectors a listed id lives under (session, folders, its file, its classes).
        self.collectors: dict[tuple[str, str], str] = {junit_key(""): ""}
        for test_id in instance.listed:
            parts = test_id.split("[", 1)[0].split("::")
            file = parts[0]
            self.modules.setdefault(junit_key(file)[1], file)
            folders = file.split("/")
            for depth in range(1, len(folders) + 1):
                prefix = "/".join(folders[:depth])
                self.collectors.setdefault(junit_key(prefix), prefix)
            for depth in range(2, len(parts)):
                prefix = "::".join(parts[:depth])
                self.collectors.setdefault(junit_key(prefix), prefix)

    def test_id(self, case: _Case) -> str:
        key = case.key
        if key in self.tests:
            return self.tests[key]
        classname, name = key
        if key not in self.ambiguous:
            found = self._module(classname, case.file)
            if found is not None:
                module, file = found
                classes = classname[len(module) + 1:].split(".") if classname != module else []
                return "::".join([file, *classes, name])
        return f"{classname}::{name}" if classname else name

    def _module(self, classname: str, file: str | None) -> tuple[str, str] | None:
        """The longest listed module (or, under xunit1, the testcase's own file's) that is the classname
        or a dotted start of it, and its file: the classname's starts, longest first (of one length,
        one start only can match)."""
        own = None
        if file and file.endswith(".py"):  # xunit1 names the file
            if file not in self._file_modules:
                self._file_modules[file] = junit_key(file)[1]
            if self._file_modules[file] not in self.modules:
                own = self._file_modules[file]
        end = len(classname)
        while end >= 0:
            prefix = classname[:end]
            if prefix in self.modules:
                return prefix, self.modules[prefix]
            if prefix == own:
                return own, str(file)
            end = classname.rfind(".", 0, end)
        return None

    def collector_id(self, case: _Case) -> str:
        if case.key in self.collectors:
            return self.collectors[case.key]
        if case.file and junit_key(case.file) == case.key:  # xunit1 names the module that failed
            return case.file
        return ".".join(p for p in case.key if p)


def parse_junit(path: Path, root: XmlNode, instance: Instance, said: Progress | None = None) -> ParsedReport:
    """What pytest's JUnit XML (:func:`read_xml`'s tree of it) says about the run; each testcase is
    let go of in the tree once read (the tree is used up). ``said`` hears how many were read."""
    cases = _cases(path, root)
    del root
    names = _JunitNames(instance)
    parsed = ParsedReport(JUNIT_XML)
    internal_error = False
    interrupted = 0
    executed = 0
    for case in cases:
        if case.key == ("", ""):  # it ran its setup, at least: counted as executed, never as listed
            interrupted += 1
            parsed.collector.add_phase(f"<unnamed testcase, line {case.line}>", "setup", "passed", False, False,
                                       False, False, case.duration, "")  # fmt: skip
            continue
        tags = {(r.tag, _message(r)) for r in case.results}
        if ("error", "collection failure") in tags:
            error = next(r for r in case.results if _message(r) == "collection failure")
            parsed.collect_errors.append((names.collector_id(case), _clip("".join(error.text) or _message(error))))
            continue
        if ("skipped", "collection skipped") in tags:
            continue  # a module skipped at import: its tests never existed (as in a live run)
        if case.key == ("pytest", "internal") and ("error", "internal error") in tags:
            internal_error = True
            continue
        executed += 1
        if said is not None and not executed % 1024:
            said.update(0, executed)
        test_id = names.test_id(case)
        facts = _case_facts(case)
        for index, (when, outcome, xfail, strict, message) in enumerate(facts):
            duration = case.duration if index == 0 else 0.0
            if outcome == "passed" and not xfail:
                parsed.collector.add_plain_pass(test_id, when, duration)
            else:
                parsed.collector.add_phase(test_id, when, outcome, xfail, strict, False, False, duration,
                                           _clip(message))  # fmt: skip
    records = parsed.collector.records
    if internal_error:
        parsed.inferred_exitstatus = 3
    elif interrupted:
        parsed.inferred_exitstatus = 2
    elif executed == 0:
        parsed.inferred_exitstatus = 2 if parsed.collect_errors else 5
    elif parsed.collect_errors or any(r.any_failed for r in records.values()):
        parsed.inferred_exitstatus = 1
    else:
        parsed.inferred_exitstatus = 0
    parsed.notes.append(
        f"JUnit XML records no exit status: {parsed.inferred_exitstatus} is inferred from its testcases "
        "(a run stopped between two tests, by -x, --maxfail or Ctrl-C, cannot be told from one that did not "
        "run the missing tests)"
    )
    if interrupted:
        parsed.notes.append("a <testcase> without a name is pytest's trace of a test cut short by an interruption")
    for key, ids in names.ambiguous.items():
        for test_id in ids:
            others = ", ".join(i for i in ids if i != test_id)
            parsed.ambiguous[test_id] = (
                f"JUnit XML cannot tell it from {others}: pytest writes both as classname={key[0]!r} "
                f"name={key[1]!r}, so neither is matched"
            )
    return parsed


# --------------------------------------------------------------------------- grading


def _with_ambiguity(grading: Grading, ambiguous: Mapping[str, str]) -> Grading:
    if not ambiguous:
        return grading
    results = tuple(
        r._replace(hint=ambiguous[r.test_id]) if r.test_id in ambiguous and r.outcome == oc.MISSING else r
        for r in grading.results
    )
    return replace(grading, results=results)


def _graded_by(parsed: ParsedReport, compat: str) -> str:
    from . import envelope as env

    def word(value: str | None) -> str:
        return value.replace(" ", "_") if value else "unknown"

    return env.graded_by(
        mode=f"report:{parsed.format}",
        pytest_version=word(parsed.pytest_version),
        python=word(parsed.python),
        platform=word(parsed.platform),
        timeout=None,
        compat=compat,
    )


def grade_report(
    path: str | Path, instance: Instance, compat: str = "strict", patch_ref: str | None = None, *,
    progress: Say | None = None,
) -> dict[str, Any]:
    """Grade an outcome file: the envelope ``build_envelope`` gives in the plugin, plus ``report``.

    ``patch_ref`` names the candidate in the Score; an outcome file does not say
    which candidate ran, so without one the Score says ``"unknown"``. Raises
    :class:`ReportError` for a file that cannot be graded and ``ValueError`` for
    an unknown compat mode. ``progress`` hears how far a long read is (:class:`Progress`).
    """
    path = Path(path)
    said = grading(progress, path)
    with seekable(path, progress) as source:
        parsed, digest = read_file(path, source, instance, progress, said)
    return grade_parsed(path, parsed, digest, instance, compat, patch_ref, said)


def grade_parsed(path: Path, parsed: ParsedReport, digest: str, instance: Instance, compat: str = "strict",
                 patch_ref: str | None = None, said: Progress | None = None) -> dict[str, Any]:  # fmt: skip
    """:func:`grade_report` of a file already read: ``parsed``, whose bytes have sha256 ``digest``
    (``said``: the grading's progress, :func:`grading`)."""
    from . import envelope as env

    records = parsed.collector.records
    if said is not None:
        said.update(0, len(records))
    grading = _with_ambiguity(grade(instance, records, compat), parsed.ambiguous)
    exitstatus = parsed.verdict_exitstatus
    reason = no_verdict_reason(
        exitstatus=exitstatus,
        collect_errors=parsed.collect_errors,
        stopped_early=False,  # no format records -x / --maxfail (docs/from-report.md)
        grading=grading,
        records=records,
    )
    if reason is None and not any(r.ran for r in records.values()):
        reason = "the report holds no test result (a --collect-only run?)"
    score = None
    if reason is None:
        score = make_score(grading, patch_ref or UNKNOWN_PATCH_REF, _graded_by(parsed, compat), int(time.time()))
    notes = list(parsed.notes)
    if parsed.format == JUNIT_XML and compat == "swebench":
        notes.append("JUnit XML writes a non-strict XPASS as a pass: in swebench mode it counts as PASSED here, "
                     "where SWE-bench's logs give it no status (a failure)")  # fmt: skip
    flags = [
        {"kind": kind, "detail": f"{nodeid} ({when})"} for nodeid, record in records.items() for kind, when in record.flags
    ]
    session: dict[str, Any] = {
        "exitstatus": parsed.exitstatus,
        "note": exit_status_note(parsed.exitstatus, records),
        "collection_errors": [{"nodeid": n, "message": m} for n, m in parsed.collect_errors],
        "rootdir": parsed.rootdir,
        "instance_file": instance.source,
        "duration": parsed.duration,
    }
    if parsed.format == JUNIT_XML:
        session["exitstatus_inferred"] = parsed.inferred_exitstatus
    if said is not None:
        said.finish(0, len(records))
    return env.build_envelope(
        instance_id=instance.instance_id,
        score=score,
        grading=grading,
        no_verdict=reason,
        session=session,
        integrity=flags,
        extra={
            "report": {
                "path": str(path),
                "format": parsed.format,
                "sha256": digest,
                "notes": notes,
            }
        },
    )

