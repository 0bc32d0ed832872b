"""A Django, SymPy or unittest test run read: its record, its console log, and where the two disagree.

The program recorder (:mod:`.program_recorder`) wrote one signed ``case`` a test, from unittest's
result protocol or SymPy's reporter. :func:`record_run` turns them into the log readers' structure
(:class:`~.runner_logs.LogRun`: each test's canonical id, the other spellings that name it, its
outcome; module imports and class fixtures that failed as events), so that a live run's listed ids
are matched and graded exactly as a console log's are (:func:`.runner_logs.grade_run`,
``docs/outcomes.md``): the same id conventions, a listed id a test does not answer to is missing.

The console log is kept and read too (:func:`console_run`):

* ``compat=strict`` grades the record; ``compat=swebench`` grades SWE-bench 5.x's reading of the
  console (its ``parse_log_django`` / ``parse_log_sympy`` rules, :mod:`.runner_logs`), which is
  what SWE-bench's harness would make of the same run;
* where the console says a test passed that the record says did not (a status printed on the
  test's own line, or SWE-bench's reading of a listed test), that is a signal
  (``console_disagrees``): output printed by code of the copy (a candidate printing ``... ok``
  inside a failing test) can fool a reader of the console, never the record. Like every signal it
  counts against a candidate only when the control run does not show it too.

Pure functions over what the run left; never imports pytest.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final, Mapping, Sequence

from . import outcomes as oc
from .instances import Instance
from .runner_logs import DJANGO_DESCRIPTION, SYMPY, LogEvent, LogRun, LogTest, django_ids, grade_run, read_text
from .scorer import SWEBENCH_PASSES, Grading
from .testrecord import RunRecord, broken, stale_imports
from .testrecord import signals as run_signals

__all__ = ["assess", "console_run", "disagreements", "record_run", "signals"]

CONSOLE_LIMIT: Final = 64 << 20  # characters of a run's console read (its output is bounded the same)
PASSING: Final = frozenset({oc.PASSED, oc.XPASSED})
_FIXTURES: Final = {"setUpClass": "setup", "setUpModule": "setup", "tearDownClass": "teardown",
                    "tearDownModule": "teardown"}  # fmt: skip
_LOADER_FAILURES: Final = ("unittest.loader._FailedTest", "unittest.loader.ModuleImportFailure")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _outcome(case: Mapping[str, Any]) -> str:
    value = case.get("outcome")
    return value if isinstance(value, str) and value in oc.OUTCOMES else oc.INCOMPLETE


def _unittest_case(run: LogRun, case: Mapping[str, Any], line: int) -> None:
    outcome = _outcome(case)
    message = _text(case.get("message"))
    holder = _text(case.get("holder"))
    if holder:  # a class or module fixture that raised: "setUpClass (app.tests.Class)"
        name, _, rest = holder.partition(" (")
        scope = rest.rstrip(")") or holder
        run.events.append(LogEvent(run.runner, scope, _FIXTURES.get(name, "setup"), message, line))
        return
    name, cls = _text(case.get("name")), _text(case.get("cls"))
    if cls in _LOADER_FAILURES:  # a module that failed to import: its tests never ran
        run.events.append(LogEvent(run.runner, name or _text(case.get("str")), "import", message, line))
        return
    printed = _text(case.get("str"))
    head = DJANGO_DESCRIPTION.fullmatch(printed) if printed else None
    if head is not None and not head.group("sub") and not head.group("sep"):
        canonical, aliases = django_ids(head.group("name"), head.group("path"))
    else:  # a test class whose str() is its own: named by its method and class
        canonical, aliases = django_ids(name or printed or "?", cls or "?")
        if printed and printed != canonical:
            aliases.append(printed)
    identifier = _text(case.get("id"))
    if identifier and identifier != canonical and identifier not in aliases:
        aliases.append(identifier)
    doc = _text(case.get("doc"))
    if doc and doc not in aliases:
        aliases.append(doc)
    run.tests.append(LogTest(run.runner, canonical, tuple(aliases), outcome, "", message, line, doc))


def _sympy_case(run: LogRun, case: Mapping[str, Any], line: int, copy: str) -> None:
    file = _text(case.get("file"))
    if file and copy and (file == copy or file.startswith(copy.rstrip("/") + "/")):
        file = file[len(copy.rstrip("/")) + 1:]
    outcome = _outcome(case)
    message = _text(case.get("message"))
    if case.get("import_error"):
        run.events.append(LogEvent(SYMPY, file, "import", message, line))
        return
    name = _text(case.get("name")) or "?"
    run.tests.append(LogTest(SYMPY, f"{file}:{name}", (name, f"{file}::{name}"), outcome, "", message, line))


def record_run(runner: str, cases: Sequence[Mapping[str, Any]], session: Mapping[str, Any] | None,
               copy_path: str) -> LogRun:  # fmt: skip
    """The record's cases as a :class:`~.runner_logs.LogRun` (``runner``: ``django``, ``unittest``
    or ``sympy``); ``copy_path`` is where the run saw the copy (SymPy's files are named below it)."""
    log_runner = SYMPY if runner == SYMPY else "django"  # unittest's ids are Django's conventions
    run = LogRun(log_runner, "<record>", "")
    copy = os.path.realpath(copy_path) if copy_path else ""
    for line, case in enumerate(cases, 1):
        if log_runner == SYMPY:
            _sympy_case(run, case, line, copy)
        else:
            _unittest_case(run, case, line)
    session = session or {}
    run.finished = bool(session.get("finished"))
    run.exit_code = session.get("exitstatus") if isinstance(session.get("exitstatus"), int) else None
    if int(session.get("runs") or 0) > 1:
        run.notes.append(f"the program started {session.get('runs')} test runs; only the first was recorded")
    return run


def console_run(runner: str, console: str, session: Mapping[str, Any] | None) -> LogRun:
    """The run's console output read as its runner's log (``runner_logs``), with the program's exit
    status in place of SWE-bench's exit-code line."""
    run = read_text(console[:CONSOLE_LIMIT], SYMPY if runner == SYMPY else "django", "<console>")
    status = (session or {}).get("exitstatus")
    run.exit_code = status if isinstance(status, int) else None
    return run


def _spellings(test: LogTest) -> tuple[str, ...]:
    return (test.test_id, *test.aliases)


def disagreements(record: LogRun, console: LogRun, instance: Instance, compat: str) -> list[dict[str, str]]:
    """Where the console says a test passed that the record says did not: a status printed on the
    test's own line (``ok`` where the recorder saw a failure), or (``compat=swebench``) SWE-bench's
    reading of a listed test counting as a pass where the record shows it failing or absent."""
    found: list[dict[str, str]] = []
    recorded: dict[str, LogTest] = {}
    for test in record.tests:
        for spelling in _spellings(test):
            recorded.setdefault(spelling, test)
    for test in console.tests:
        if not test.status or test.outcome not in PASSING:
            continue  # no status on its own line (swallowed by its output), or not a pass
        mine = next((recorded[s] for s in _spellings(test) if s in recorded), None)
        if mine is not None and mine.outcome not in PASSING:
            found.append({"kind": "console_disagrees", "detail": f"{test.test_id}: the console says {test.status!r}, "
                          f"the recorder saw {mine.outcome}"})  # fmt: skip
    if compat == "swebench":
        for listed, gate in instance.listed.items():
            status = console.swebench.get(listed)
            if status is None or status not in SWEBENCH_PASSES[gate]:
                continue
            mine = recorded.get(listed)
            if mine is None or mine.outcome not in (PASSING | {oc.SKIPPED, oc.XFAILED}):
                seen = "no such test" if mine is None else mine.outcome
                found.append({"kind": "console_disagrees", "detail": f"{listed}: SWE-bench's reading of the console "
                              f"says {status}, the recorder saw {seen}"})  # fmt: skip
    return list({(s["kind"], s["detail"]): s for s in found}.values())


def _runs(run: RunRecord) -> tuple[LogRun, LogRun]:
    return record_run(run.runner, run.cases, run.session, run.copy_path), console_run(run.runner, run.console, run.session)


RECORD_ENDS: Final = {"django": "unittest's stopTestRun of the main run", "unittest": "unittest's stopTestRun of the main run",
                      "sympy": "its reporter's finish"}  # fmt: skip


def _record_reason(run: RunRecord, record: LogRun, reason: str | None) -> str | None:
    """Why the record is no verdict, in the record's words (the log readers speak of a log)."""
    if not record.tests and not record.events:
        return (f"the recorder saw no {run.runner} test run (the program ran none, or ran them where the "
                "recorder is not: a child interpreter)")  # fmt: skip
    if not record.finished:
        return (f"the {run.runner} run never finished: the recorder never saw {RECORD_ENDS.get(run.runner, 'its end')} "
                f"(the program exited {record.exit_code} before it)")  # fmt: skip
    return reason


def assess(run: RunRecord, instance: Instance, compat: str, copy: Path, timeout: float) -> tuple[Grading, str | None, str]:
    """Grade a program run and say why it is no verdict, with the failure class it would be:
    ``strict`` from the record, ``swebench`` from SWE-bench's reading of its console."""
    record, console = _runs(run)
    grading, reason, _ = grade_run(record, instance, "strict")
    reason = _record_reason(run, record, reason)
    if compat == "swebench":
        grading, console_reason, _ = grade_run(console, instance, "swebench")
        reason = reason or console_reason
    failure = broken(run, timeout)
    if failure is not None:
        return grading, *failure
    stale = stale_imports(run, copy)
    if stale is not None:
        return grading, stale, "setup"
    return grading, reason, "verifier"


def signals(run: RunRecord, copy: Path, instance: Instance, compat: str) -> list[dict[str, str]]:
    """:func:`.testrecord.signals` of the run, and the console's disagreements with the record."""
    found = run_signals(run, copy)
    if run.session is not None:
        record, console = _runs(run)
        found += disagreements(record, console, instance, compat)
        runs = run.session.get("runs")
        if isinstance(runs, int) and runs > 1:  # the runner makes one: another is code of the copy running tests
            found.append({"kind": "test_runs", "detail": f"the program started {runs} top-level test runs"})
    return found
