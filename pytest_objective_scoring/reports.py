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

This module never imports pytest.

Why over 800 lines: three formats, each read into the same phase facts and graded by the
same rules; JUnit XML's reading (xunit1/xunit2, split cases, ambiguity) is most of it and
shares its helpers with the other two.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final
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


# --------------------------------------------------------------------------- reading and detection


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ReportError(path, "no such file") from None
    except IsADirectoryError:
        raise ReportError(path, f"is a directory; {EXPECTED}") from None
    except OSError as exc:
        raise ReportError(path, f"cannot be read: {exc.strerror}") from None


def _text(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ReportError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})", line=line) from None


def _sniff(path: Path, data: bytes) -> tuple[str, Any]:
    """The format, and the parsed first JSON line or document when sniffing had to parse it."""
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head:
        raise ReportError(path, f"is empty (no report was written: did the run die first?); {EXPECTED}")
    if head.startswith(b"<"):
        match = re.search(rb"<(?![?!])([^\s>/]+)", _without_xml_comments(head))
        tag = match.group(1).decode("utf-8", "replace") if match else None
        if tag in ("testsuites", "testsuite"):
            return JUNIT_XML, None
        found = f"its root element is <{tag}>" if tag else "it has no element"
        raise ReportError(path, f"is XML but {found}; expected <testsuites> or <testsuite> (pytest --junitxml)")
    if head.startswith((b"{", b"[")):
        text = _text(path, data)
        stripped = text.strip()
        first, _, rest = stripped.partition("\n")
        try:
            value = nesting.loads(first)
        except nesting.TooDeep as exc:
            raise ReportError(path, exc.msg, line=1) from None
        except json.JSONDecodeError:
            value = None  # the first line alone is not a document: an indented JSON document
        if isinstance(value, dict) and "$report_type" in value:
            return REPORTLOG, None
        if isinstance(value, dict) and not rest.strip() and not ("exitcode" in value or "tests" in value):
            raise ReportError(path, f"a JSON object without \"exitcode\" or \"tests\" (keys: "
                              f"{', '.join(map(repr, list(value)[:6]))}); {EXPECTED}")  # fmt: skip
        if value is None and '"exitcode"' not in text and '"tests"' not in text:
            raise ReportError(path, f"a JSON document without \"exitcode\" or \"tests\"; {EXPECTED}")
        if value is None or not rest.strip():
            return JSON_REPORT, value
        raise ReportError(
            path,
            "holds JSON lines without \"$report_type\" (line 1 has keys "
            f"{', '.join(map(repr, list(value)[:5])) if isinstance(value, dict) else type(value).__name__}); "
            "expected pytest-reportlog lines (--report-log)",
            line=1,
        )
    sample = head[:20].decode("utf-8", "replace")
    raise ReportError(path, f"is neither XML nor JSON (it starts with {sample!r}); {EXPECTED}")


def _without_xml_comments(head: bytes) -> bytes:
    return re.sub(rb"<!--.*?-->", b"", head[:65536], flags=re.DOTALL)


def detect_format(path: str | Path) -> str:
    """``"junit-xml"``, ``"json-report"`` or ``"reportlog"``, from the file's content.

    Raises :class:`ReportError` for a file that cannot be read, is empty or is none of them.
    """
    path = Path(path)
    return _sniff(path, _read(path))[0]


def read_report(path: str | Path, instance: Instance) -> ParsedReport:
    """Parse an outcome file into the phase facts the live plugin would have collected.

    The instance is needed for JUnit XML only (its listed ids are mapped forward to
    JUnit's names); the other formats name tests by their node ids.
    """
    path = Path(path)
    data = _read(path)
    return _parse(path, data, instance)


def _parse(path: Path, data: bytes, instance: Instance) -> ParsedReport:
    fmt, sniffed = _sniff(path, data)
    if fmt == JUNIT_XML:
        return _parse_junit(path, data, instance)
    if fmt == JSON_REPORT:
        return _parse_json_report(path, data, sniffed)
    return _parse_reportlog(path, _text(path, data))


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


def _parse_reportlog(path: Path, text: str) -> ParsedReport:
    parsed = ParsedReport(REPORTLOG)
    collector = parsed.collector
    lines = text.split("\n")  # newlines only: U+2028 and friends may stand raw inside JSON strings
    finished_at: int | None = None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = nesting.loads(line)
        except json.JSONDecodeError as exc:
            if lineno == len(lines) and finished_at is None:  # the last line, cut short by a kill
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
    return parsed


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


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


def _parse_json_report(path: Path, data: bytes, sniffed: Any) -> ParsedReport:
    if sniffed is None:
        try:
            sniffed = nesting.loads(_text(path, data))
        except json.JSONDecodeError as exc:
            raise ReportError(path, f"invalid JSON (column {exc.colno}): {exc.msg}", line=exc.lineno) from None
    report = sniffed
    if not isinstance(report, dict):
        raise ReportError(path, f"a JSON {type(report).__name__}, expected pytest-json-report's object; {EXPECTED}")
    if "exitcode" not in report and "tests" not in report:
        raise ReportError(path, f"a JSON object without \"exitcode\" or \"tests\" (keys: "
                          f"{', '.join(map(repr, list(report)[:6]))}); {EXPECTED}")  # fmt: skip
    if "tests" not in report:
        raise ReportError(path, "holds counts but no \"tests\" (written with --json-report-summary?): "
                          "per-test outcomes are needed to grade")  # fmt: skip
    status = report.get("exitcode")
    if isinstance(status, bool) or not isinstance(status, int):
        raise ReportError(path, f"\"exitcode\" is {status!r}, expected an integer", element="exitcode")
    tests = report["tests"]
    if not isinstance(tests, list):
        raise ReportError(path, f"expected a list, got {type(tests).__name__}", element="tests")
    parsed = ParsedReport(JSON_REPORT, exitstatus=status)
    for index, test in enumerate(tests):
        _json_test(path, parsed.collector, test, f"tests[{index}]")
    collectors = report.get("collectors")
    if collectors is None and tests:
        parsed.notes.append('no "collectors" (--json-report-omit collectors?): collection errors cannot be seen')
    for index, node in enumerate(collectors or []):
        if not isinstance(node, dict):
            raise ReportError(path, f"expected an object, got {type(node).__name__}", element=f"collectors[{index}]")
        if node.get("outcome") == "failed":
            message = _clip(str(node.get("longrepr") or "")) or "collection error"
            parsed.collect_errors.append((str(node.get("nodeid") or ""), message))
    environment = _object(report.get("environment"))
    packages = _object(environment.get("Packages"))
    parsed.pytest_version = _str_or_none(packages.get("pytest"))
    python = _str_or_none(environment.get("Python"))
    parsed.python = f"Python/{python}" if python else None
    parsed.platform = _str_or_none(environment.get("Platform"))
    parsed.rootdir = _str_or_none(report.get("root"))
    duration = report.get("duration")
    parsed.duration = round(float(duration), 3) if isinstance(duration, (int, float)) else None
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


@dataclass
class XmlNode:
    """An element of :func:`parse_xml`'s tree: its tag, attributes, line, children and kept text."""

    tag: str
    attrs: dict[str, str]
    line: int
    children: list[XmlNode] = field(default_factory=list)
    text: list[str] = field(default_factory=list)  # kept only for the text_tags parse_xml was given

    def joined(self, *inner: str) -> str:
        """Its text, then that of its children tagged one of ``inner`` (and theirs), in order."""
        return "".join(self.text) + "".join(c.joined(*inner) for c in self.children if c.tag in inner)


_Node = XmlNode


def parse_xml(
    path: Path,
    data: bytes,
    *,
    text_tags: frozenset[str] = frozenset({"error"}),
    error: type[ReportError] = ReportError,
    doctype: str = "declares a DOCTYPE, which pytest's JUnit XML never has",
) -> Any:
    """A small tree of :class:`XmlNode` with line numbers (ElementTree keeps none); DOCTYPEs
    refused. Shared with :mod:`.foreign`, which keeps the text of more elements."""
    make = XmlNode
    parser = expat.ParserCreate()
    roots: list[Any] = []
    stack: list[Any] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        if len(stack) >= nesting.LIMIT:
            raise error(path, nesting.too_deep("elements"), line=parser.CurrentLineNumber, element=f"<{tag}>")
        element = make(tag, attrs, parser.CurrentLineNumber)
        (stack[-1].children if stack else roots).append(element)
        stack.append(element)

    def end(tag: str) -> None:
        stack.pop()

    def text(data: str) -> None:
        if stack and stack[-1].tag in text_tags and sum(map(len, stack[-1].text)) < 4 * MESSAGE_LIMIT:
            stack[-1].text.append(data)

    def refuse_doctype(*_: Any) -> None:
        raise error(path, f"{doctype} (refused: entities could expand without bound)", line=parser.CurrentLineNumber)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text
    parser.StartDoctypeDeclHandler = refuse_doctype
    parser.EntityDeclHandler = refuse_doctype
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        raise error(path, f"invalid XML (column {exc.offset + 1}): {expat.ErrorString(exc.code)}",
                    line=exc.lineno) from None  # fmt: skip
    return roots[0]


def _parse_xml(path: Path, data: bytes) -> _Node:
    return parse_xml(path, data)  # type: ignore[no-any-return]


@dataclass
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


def _cases(path: Path, root: _Node) -> list[_Case]:
    if root.tag not in ("testsuites", "testsuite"):
        raise ReportError(path, "expected <testsuites> or <testsuite> (pytest --junitxml)", line=root.line,
                          element=f"<{root.tag}>")  # fmt: skip
    cases: list[_Case] = []

    def walk(node: _Node) -> None:
        for child in node.children:
            if child.tag == "testsuite":
                walk(child)
            elif child.tag == "testcase":
                name = child.attrs.get("name")
                if name is None and "classname" not in child.attrs:
                    name = ""  # pytest's trace of the test it was running when the session was interrupted
                elif name is None:
                    raise ReportError(path, "has no name attribute", line=child.line, element="<testcase>")
                try:
                    duration = float(child.attrs.get("time", 0) or 0)
                except ValueError:
                    duration = 0.0
                results = [c for c in child.children if c.tag in ("failure", "error", "skipped")]
                # pytest before 9.2 escapes characters beyond the BMP ("#x1F600"), later ones keep them:
                # both spellings read as the escaped one, which junit_key produces.
                key = (child.attrs.get("classname", ""), _bin_xml_escape(name))
                cases.append(_Case(key, child.line, child.attrs.get("file"), duration, results))

    if root.tag == "testsuite":
        walk(_Node("testsuites", {}, 0, [root]))
    else:
        walk(root)
    return cases


def _merge_split_cases(cases: list[_Case]) -> list[_Case]:
    """pytest writes a failed call followed by a failed teardown as two testcases of one name
    (the second holding only the teardown's ``<error>``): put them back together."""
    merged: list[_Case] = []
    open_failures: dict[tuple[str, str], _Case] = {}
    for case in cases:
        earlier = open_failures.pop(case.key, None)
        if earlier is not None and case.only("error", _TEARDOWN_ERROR):
            earlier.results.extend(case.results)
            earlier.duration += case.duration
            continue
        merged.append(case)
        if any(r.tag == "failure" for r in case.results) and not any(
            r.tag == "error" and _message(r).startswith(_TEARDOWN_ERROR) for r in case.results
        ):
            open_failures[case.key] = case
    return merged


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
            modules = dict(self.modules)
            if case.file and case.file.endswith(".py"):  # xunit1 names the file
                modules.setdefault(junit_key(case.file)[1], case.file)
            for module in sorted(modules, key=len, reverse=True):
                if classname == module or classname.startswith(module + "."):
                    classes = classname[len(module) + 1:].split(".") if classname != module else []
                    return "::".join([modules[module], *classes, name])
        return f"{classname}::{name}" if classname else name

    def collector_id(self, case: _Case) -> str:
        if case.key in self.collectors:
            return self.collectors[case.key]
        if case.file and junit_key(case.file) == case.key:  # xunit1 names the module that failed
            return case.file
        return ".".join(p for p in case.key if p)


def _parse_junit(path: Path, data: bytes, instance: Instance) -> ParsedReport:
    root = _parse_xml(path, data)
    cases = _merge_split_cases(_cases(path, root))
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
    path: str | Path, instance: Instance, compat: str = "strict", patch_ref: str | None = None
) -> dict[str, Any]:
    """Grade an outcome file: the envelope ``build_envelope`` gives in the plugin, plus ``report``.

    ``patch_ref`` names the candidate in the Score; an outcome file does not say
    which candidate ran, so without one the Score says ``"unknown"``. Raises
    :class:`ReportError` for a file that cannot be graded and ``ValueError`` for
    an unknown compat mode.
    """
    from . import envelope as env

    path = Path(path)
    data = _read(path)
    parsed = _parse(path, data, instance)
    records = parsed.collector.records
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
                "sha256": hashlib.sha256(data).hexdigest(),
                "notes": notes,
            }
        },
    )

