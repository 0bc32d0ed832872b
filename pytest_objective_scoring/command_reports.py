"""What a live run of another language's runner reported (``"runner": "command"``), read and graded.

The run (:func:`.testrun.run_command_in_container`) leaves its report in the run's own copy of the
repository, or on its console; the grader copies the report out once the run's container is gone (no
process of the candidate's is left to write it again) and reads it here into the structure the JUnit
readers give (:class:`.foreign.JUnitRun`), so that every format is graded by one door
(:func:`.foreign.grade_run`): the same ids, the same outcome rules, a listed test the report does not
hold **missing**, and a package, file or class that failed as a whole (it did not compile) no verdict.

Readers besides JUnit XML (:func:`read_report`):

* ``go-test-json``: ``go test -json``'s events, one JSON object a line (``Package``, ``Test``,
  ``Action``); a test's ``pass``, ``fail`` or ``skip`` is its outcome (the worst, when a line the test's
  own code wrote to the console adds another), one that started and never ended failed. A package that did not compile writes no event before Go 1.24, only the plain line
  ``FAIL <package> [build failed]`` (or ``[setup failed]``): a build failure of that package. Ids are
  ``<import path> <TestName/subtest>``, as the JUnit reader names Go tests.
* ``jest-json``: jest's ``--json`` report. Each ``assertionResults`` entry is a test, named
  ``<file relative to the repository>-><full name>``; a test file whose suite failed to run (it did
  not load, a hook outside its tests failed) is a failure of that file.
* ``libtest-json``: libtest's events (``cargo test -- -Z unstable-options --format json``, with
  ``RUSTC_BOOTSTRAP=1`` on a stable toolchain), on the console beside Cargo's ``Running`` lines, which
  say which test binary the events that follow come from: ids are ``<binary id> <test path>`` as
  cargo-nextest names them (``crate`` for the library's unit tests, ``crate::name`` for
  ``tests/name.rs``). A build that failed (``error[E...]``/``could not compile``) leaves no test event:
  a failure of the whole run.

What a reader cannot know is said in the run's notes: these reports are written by the runner *inside*
the run, where the candidate's code runs too (``docs/runner-languages.md``, "What the runner-level
attacker can still do").

Pure functions over files; never imports pytest.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any, Final

from . import outcomes as oc
from .foreign import (
    GO,
    JEST,
    NEXTEST,
    JUnitCase,
    JUnitError,
    JUnitRun,
    SuiteEvent,
    read_junit,
    test_id,
)

__all__ = ["MAX_REPORT", "ReportMissing", "assess", "read_report", "signals", "summary"]

MAX_REPORT: Final = 256 << 20  # bytes of one report read
MESSAGE: Final = 400
_GO_BUILD: Final = re.compile(r"^FAIL\s+(\S+)\s+\[(build|setup) failed\]\s*$")
_CARGO_RUNNING: Final = re.compile(r"^\s*Running (?:(unittests) )?(\S+) \((?:[^)]*/)?([^/)]+?)(?:-[0-9a-f]{6,})?(?:\.exe)?\)\s*$")
_CARGO_FAILED: Final = re.compile(r"^error(\[E\d+\])?: |could not compile `([^`]+)`")
_CARGO_PACKAGE: Final = re.compile(r"^\s*Compiling (\S+) v")
INCONSISTENT: Final = "the console is not the events of one cargo test run:"
WORST: Final = {"pass": 0, "skip": 1, "fail": 2}  # a test reported twice: the worst of its results counts


class ReportMissing(ValueError):
    """The run left no report where its spec says (the build failed first, the command is wrong)."""


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE else text[: MESSAGE - 1] + "…"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _lines(path: Path) -> tuple[list[str], str]:
    data = path.read_bytes()[:MAX_REPORT]
    return data.decode("utf-8", "replace").splitlines(), _digest(data)


def _case(runner: str, suite: str, name: str, outcome: str, message: str, duration: float, source: str,
          file: str | None = None, full: str | None = None) -> JUnitCase:  # fmt: skip
    ident = f"{file}->{full}" if runner == JEST and file else test_id(runner, suite, suite, name, file)
    seconds = duration if math.isfinite(duration) and duration > 0 else 0.0  # NaN never reaches a record
    return JUnitCase(runner, suite, suite, name, file, full or name, ident, outcome, _clip(message), seconds,
                     (), source, 0)  # fmt: skip


def read_go_json(path: Path) -> JUnitRun:
    """``go test -json``'s stream (see the module docstring)."""
    lines, digest = _lines(path)
    run = JUnitRun(GO, str(path), [(str(path), digest)], detected=GO)
    final: dict[tuple[str, str], tuple[str, float]] = {}
    started: dict[tuple[str, str], None] = {}
    output: dict[tuple[str, str], list[str]] = {}
    packages_failed: set[str] = set()
    ignored = 0
    for line in lines:
        built = _GO_BUILD.match(line)
        if built is not None:
            run.events.append(SuiteEvent(GO, built.group(1), f"the package did not build ([{built.group(2)} failed])",
                                         oc.ERROR, "", str(path), 0))  # fmt: skip
            continue
        if not line.startswith("{"):
            ignored += bool(line.strip())
            continue
        try:
            event = json.loads(line)
        except ValueError:
            ignored += 1
            continue
        if not isinstance(event, dict) or not isinstance(event.get("Package"), str):
            continue
        package, test, action = event["Package"], event.get("Test"), event.get("Action")
        if not isinstance(test, str):
            if action == "fail":
                packages_failed.add(package)
            continue
        key = (package, test)
        if action == "run":
            started[key] = None
        elif action == "output" and isinstance(event.get("Output"), str):
            output.setdefault(key, []).append(event["Output"])
            del output[key][:-20]
        elif action in ("pass", "fail", "skip"):  # two results for one test (a line written by the test's
            elapsed = event.get("Elapsed")  # own code to the console): the worst counts, never the last
            seconds = float(elapsed) if isinstance(elapsed, (int, float)) else 0.0
            if key not in final or WORST[action] > WORST[final[key][0]]:
                final[key] = (action, seconds)
    outcomes = {"pass": oc.PASSED, "fail": oc.FAILED, "skip": oc.SKIPPED}
    for key in dict.fromkeys([*started, *final]):
        action, elapsed = final.get(key, ("", 0.0))
        outcome = outcomes.get(action, oc.FAILED)
        message = "".join(output.get(key, [])) if outcome != oc.PASSED else ""
        if not action:
            message = "started and never ended (the test binary crashed or was stopped)"
        run.cases.append(_case(GO, key[0], key[1], outcome, message, elapsed, str(path)))
    with_tests = {c.suite for c in run.cases}
    for package in sorted(packages_failed - with_tests - {e.scope for e in run.events}):
        run.events.append(SuiteEvent(GO, package, "the package's test binary failed outside its tests", oc.ERROR, "",
                                     str(path), 0))  # fmt: skip
    if ignored:
        run.notes.append(f"{ignored} line(s) of the console are not go test -json events (compiler output, a test "
                         "writing outside go test's reporting) and were not read as results")  # fmt: skip
    return run


def read_jest_json(path: Path, root: str) -> JUnitRun:
    """jest's ``--json`` report (see the module docstring); ``root`` is the repository's path in the
    run (jest writes absolute file names), stripped from each file's name."""
    data = path.read_bytes()[:MAX_REPORT]
    try:
        report = json.loads(data)
    except ValueError as exc:
        raise JUnitError(path, f"is not jest's --json report: {exc}") from None
    if not isinstance(report, dict) or not isinstance(report.get("testResults"), list):
        raise JUnitError(path, "is not jest's --json report (no testResults list)")
    run = JUnitRun(JEST, str(path), [(str(path), _digest(data))], detected=JEST)
    statuses = {"passed": oc.PASSED, "failed": oc.FAILED, "pending": oc.SKIPPED, "skipped": oc.SKIPPED,
                "todo": oc.SKIPPED, "disabled": oc.SKIPPED, "focused": oc.PASSED}  # fmt: skip
    prefix = root.rstrip("/") + "/"
    for result in report["testResults"]:
        if not isinstance(result, dict):
            continue
        name = str(result.get("name") or result.get("testFilePath") or "")
        file = name.removeprefix(prefix)
        listed = result.get("assertionResults")
        assertions = [a for a in listed if isinstance(a, dict)] if isinstance(listed, list) else []
        if result.get("status") == "failed" and not assertions or result.get("testExecError"):
            run.events.append(SuiteEvent(JEST, file, "the test file failed to run (it did not load, or a hook outside "
                                         "its tests failed)", oc.ERROR, _clip(str(result.get("message") or "")),
                                         str(path), 0))  # fmt: skip
        for item in assertions:
            found = item.get("ancestorTitles")
            titles: list[Any] = found if isinstance(found, list) else []
            full = str(item.get("fullName") or " ".join([*map(str, titles), str(item.get("title"))]))
            outcome = statuses.get(str(item.get("status")), oc.FAILED)
            duration = item.get("duration")
            seconds = float(duration) / 1000 if isinstance(duration, (int, float)) else 0.0
            failures = item.get("failureMessages")
            message = "\n".join(map(str, failures)) if isinstance(failures, list) else str(failures or "")
            run.cases.append(_case(JEST, file, full, outcome, message, seconds, str(path), file=file, full=full))
    return run


def read_libtest_json(path: Path) -> JUnitRun:
    """libtest's JSON events on Cargo's console (see the module docstring)."""
    lines, digest = _lines(path)
    run = JUnitRun(NEXTEST, str(path), [(str(path), digest)], detected=NEXTEST)
    binary, package = "", ""
    failed_build = []
    in_suite, seen, counted, odd = False, set(), 0, []
    for line in lines:
        compiling = _CARGO_PACKAGE.match(line)
        if compiling is not None:
            package = compiling.group(1).replace("-", "_")
        running = _CARGO_RUNNING.match(line)
        if running is not None:  # the binary the events that follow come from, named as nextest names it
            if in_suite:
                odd.append(f"a binary's 'Running' line inside another binary's results ({line.strip()[:120]})")
            unit, source, stem = running.groups()
            if unit and source.endswith("lib.rs"):
                package = package or stem
                binary = stem
            else:
                crate = package or stem
                binary = f"{crate}::{'bin/' if unit else ''}{stem}" if stem != crate or not unit else crate
            continue
        broken = _CARGO_FAILED.search(line)
        if broken is not None and not line.startswith("{"):
            failed_build.append(line.strip())
            continue
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "suite":  # one binary's results begin or end
            started = event.get("event") == "started"
            if started == in_suite:
                odd.append(f"a suite {'started inside another' if started else 'ended that never started'}")
            elif not started and isinstance(event.get("passed"), int) and isinstance(event.get("failed"), int) \
                    and event["passed"] + event["failed"] + int(event.get("ignored") or 0) != counted:  # fmt: skip
                odd.append(f"a suite ended with {event['passed']} passed and {event['failed']} failed, but "
                           f"{counted} test results came between its start and its end")  # fmt: skip
            in_suite, counted = started, 0
            if started:
                if binary in seen:
                    odd.append(f"binary {binary or '(unnamed)'} ran twice")
                seen.add(binary)
            continue
        if not isinstance(event, dict) or event.get("type") != "test" or not isinstance(event.get("name"), str):
            continue
        outcome = {"ok": oc.PASSED, "failed": oc.FAILED, "ignored": oc.SKIPPED, "timeout": oc.FAILED}.get(str(event.get("event")))
        if outcome is None:
            continue
        seconds = event.get("exec_time")
        counted += 1
        if not in_suite:
            odd.append(f"a result outside any binary's suite ({event['name'][:80]})")
        run.cases.append(_case(NEXTEST, binary, event["name"], outcome, str(event.get("stdout") or ""),
                               float(seconds) if isinstance(seconds, (int, float)) else 0.0, str(path)))  # fmt: skip
    if odd:  # lines that no single cargo test run writes: code under test writing to the console
        run.notes.append(f"{INCONSISTENT} " + "; ".join(dict.fromkeys(odd[:5])))
    if failed_build and not run.cases:
        run.events.append(SuiteEvent(NEXTEST, "", "the crate or its tests did not compile", oc.ERROR,
                                     _clip("; ".join(failed_build[:3])), str(path), 0))  # fmt: skip
    return run


def read_report(files: list[Path], reader: str, fmt: str, root: str) -> JUnitRun:
    """The run the report ``files`` (copied out of the run, or its console) hold, in format ``fmt``
    (:data:`.command_spec.FORMATS`) read by ``reader``; several files are one run. :class:`ReportMissing`
    when there is none; :class:`.foreign.JUnitError` when one cannot be read as that format."""
    if not files:
        raise ReportMissing("the run left no report where the instance's 'report.path' says")
    runs = []
    for file in files:
        if fmt.startswith("junit-"):
            runs.append(read_junit(file, reader))
        elif fmt == "go-test-json":
            runs.append(read_go_json(file))
        elif fmt == "jest-json":
            runs.append(read_jest_json(file, root))
        else:
            runs.append(read_libtest_json(file))
    first = runs[0]
    for other in runs[1:]:
        first.files += other.files
        first.cases += other.cases
        first.events += other.events
        first.notes += [n for n in other.notes if n not in first.notes]
    return first


def summary(run: JUnitRun) -> dict[str, Any]:
    """What the envelope says of a report read: its files and digests, its counts."""
    return {"runner": run.runner, "file_count": len(run.files), "sha256": run.sha256,
            "files": [{"name": Path(p).name, "sha256": d} for p, d in run.files[:20]], "tests": len(run.cases),
            "whole_failures": [{"scope": e.scope, "kind": e.kind, "message": e.message} for e in run.errors][:20]}  # fmt: skip


def assess(run: Any, instance: Any, compat: str, timeout: float) -> tuple[Any, str | None, str]:
    """A command run graded (:func:`.foreign.grade_run` over its report) and why it is no verdict, with
    the failure class that would be: ``build`` when what failed as a whole did not compile."""
    from .foreign import grade_run
    from .scorer import grade
    from .testrecord import broken

    failure = broken(run, timeout)
    if failure is not None:
        return grade(instance, {}, compat), *failure
    if run.report is None:
        return grade(instance, {}, compat), f"no report was read: {run.report_problem}", "verifier"
    grading, reason, _ = grade_run(run.report, instance, compat)
    built = reason is not None and any(w in reason for w in ("did not build", "did not compile"))
    return grading, reason, "build" if built else "verifier"


def signals(run: Any) -> list[dict[str, str]]:
    """What in a command run could be the candidate reaching its judge: the judge's files it changed,
    and a report that says nothing failed from a runner that exited with a failure (code of the copy
    writing the report, or the lines the runner reads its results from)."""
    found = [{"kind": "protected_file_modified", "detail": change} for change in run.writes]
    report = run.report
    inconsistent = [n for n in (report.notes if report is not None else []) if n.startswith(INCONSISTENT)]
    found += [{"kind": "report_inconsistent", "detail": n[len(INCONSISTENT):].strip()[:300]} for n in inconsistent]
    if report is not None and run.exit_code not in (0, None) and not report.errors \
            and not any(c.outcome in (oc.FAILED, oc.ERROR) for c in report.cases):  # fmt: skip
        found.append({"kind": "report_disagrees_with_exit_status",
                      "detail": f"the runner exited {run.exit_code}, yet its report shows no failure"})  # fmt: skip
    return found
