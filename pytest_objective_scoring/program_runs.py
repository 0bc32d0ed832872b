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
from .instances import P2P, Instance
from .runner_logs import DJANGO_DESCRIPTION, SYMPY, LogEvent, LogRun, LogTest, django_ids, grade_run, read_text
from .protect import protected_reason
from .scorer import STRICT_PASSES, SWEBENCH_PASSES, Grading
from .testrecord import RunRecord, broken, stale_imports
from .testrecord import signals as run_signals

__all__ = ["assess", "console_run", "disagreements", "record_run", "signals"]

UNKNOWN: Final = "<unknown origin>"  # program_recorder.UNKNOWN
CONSOLE_LIMIT: Final = 64 << 20  # characters of a run's console read (its output is bounded the same)
PASSING: Final = frozenset({oc.PASSED, oc.XPASSED})
FAILING: Final = frozenset({oc.FAILED, oc.ERROR, oc.XPASSED_STRICT})
_FIXTURES: Final = {"setUpClass": "setup", "setUpModule": "setup", "tearDownClass": "teardown",
                    "tearDownModule": "teardown"}  # fmt: skip
_LOADER_FAILURES: Final = ("unittest.loader._FailedTest", "unittest.loader.ModuleImportFailure")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _count(value: Any) -> int | None:
    """A count the record gives, or None when it is not one (a record is the test process's word)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


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
    run.finished = session.get("finished") is True
    run.exit_code = _count(session.get("exitstatus"))
    runs = _count(session.get("runs"))
    if runs is not None and runs > 1:
        run.notes.append(f"the program started {runs} test runs; only the first was recorded")
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
    """Where the record and the console tell different stories of a listed test, in the direction
    that would help a candidate (output an honest change prints during a test nobody grades is no
    signal):

    * the console says it passed, the record does not pass it through its gate: a status printed on
      the test's own line (``ok`` inside a failing test), or (``compat=swebench``) SWE-bench's reading
      of the console: a forged console;
    * the record passes it, while the console shows it failing on its own line, or, the console
      having run to its end, never shows it: a forged record (code of the copy reaching the
      recorder's channel, ``docs/untrusted-candidates.md``);
    * the record says the run finished, the console never shows its end."""
    found: list[dict[str, str]] = []
    recorded: dict[str, LogTest] = {}
    for test in record.tests:
        for spelling in _spellings(test):
            recorded.setdefault(spelling, test)
    if record.finished and not console.finished:
        found.append({"kind": "console_disagrees", "detail": "the recorder saw the run end, the console never shows its "
                      "end"})  # fmt: skip
    for listed, gate in instance.listed.items():
        mine = recorded.get(listed)
        passes = STRICT_PASSES[gate] | ({oc.SKIPPED} if compat == "swebench" and gate == P2P else frozenset())
        shown = [t for t in console.tests if listed in _spellings(t)]
        if mine is not None and mine.outcome in passes:
            failing = next((t for t in shown if t.status and t.outcome in FAILING), None)
            if failing is not None:
                found.append({"kind": "console_disagrees", "detail": f"{listed}: the console says {failing.status!r}, "
                              f"the recorder saw {mine.outcome}"})  # fmt: skip
            elif not shown and console.finished:
                found.append({"kind": "console_disagrees", "detail": f"{listed}: the recorder saw it {mine.outcome}, the "
                              "console never shows it"})  # fmt: skip
            continue
        seen = "no such test" if mine is None else mine.outcome
        passing = next((t for t in shown if t.status and t.outcome in PASSING), None)
        if passing is not None and mine is not None:
            found.append({"kind": "console_disagrees", "detail": f"{listed}: the console says {passing.status!r}, "
                          f"the recorder saw {seen}"})  # fmt: skip
        status = console.swebench.get(listed) if compat == "swebench" else None
        if status is not None and status in SWEBENCH_PASSES[gate]:
            found.append({"kind": "console_disagrees", "detail": f"{listed}: SWE-bench's reading of the console says "
                          f"{status}, the recorder saw {seen}"})  # fmt: skip
    return list({(s["kind"], s["detail"]): s for s in found}.values())


def _inside_one(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` when it is inside it, else None."""
    real = os.path.realpath(root) if root else ""
    if real and (path == real or path.startswith(real.rstrip("/") + "/")):
        return path[len(real.rstrip("/")) + 1:]
    return None


def origins(run: RunRecord, guarded: Sequence[str]) -> list[dict[str, str]]:
    """Tests whose code is not the tests' (a test swapped for code of the copy's package, or of no
    known file), test modules a loader of the copy loaded, and import hooks the copy installed."""
    found: list[dict[str, str]] = []
    copy = run.copy_path

    def _inside(path: str, root: str) -> str | None:  # the copy, or where else the run saw it
        for place in (root, *run.aliases):
            rel = _inside_one(path, place)
            if rel is not None:
                return rel
        return None

    for case in run.cases:
        name = _text(case.get("name")) or "?"
        where = _text(case.get("file")) or _text(case.get("cls"))
        label = f"{where}:{name}" if run.runner == SYMPY else f"{name} ({where})"
        origin = case.get("origin")
        passed = case.get("outcome") in ("passed", "xpassed")  # only a pass can be a wrong verdict
        if passed and isinstance(origin, str) and origin:
            rel = _inside(origin, copy)
            if origin == UNKNOWN or rel is None or protected_reason(rel, guarded) is None:
                found.append({"kind": "test_code_outside_tests",
                              "detail": f"{label}: its code is in {rel or origin}, not in the tests"})  # fmt: skip
        loader = case.get("loader")
        if isinstance(loader, str) and loader and (loader == UNKNOWN or _inside(loader, copy) is not None):
            found.append({"kind": "test_loaded_by_copy",
                          "detail": f"{label}: its module was loaded by {_inside(loader, copy) or loader}"})  # fmt: skip
    for hook in (run.session or {}).get("import_hooks") or []:
        if isinstance(hook, str) and (_inside(hook.split(": ", 1)[0], copy) is not None or hook.startswith(UNKNOWN)):
            file, _, what = hook.partition(": ")
            found.append({"kind": "import_hook", "detail": f"{what} in {_inside(file, copy) or file}"})
    return list({(s["kind"], s["detail"]): s for s in found}.values())[:50]


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
    ``strict`` from the record, ``swebench`` from SWE-bench's reading of its console. A record the
    grader cannot read (values of the wrong kind: the test process's word) is no verdict."""
    try:
        return _assess(run, instance, compat, copy, timeout)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        failure = broken(run, timeout)
        reason = failure[0] if failure else f"the run's record cannot be read ({type(exc).__name__}: {exc})"
        return grade_run(LogRun(run.runner, "<record>", ""), instance, "strict")[0], reason, "verifier"


def _assess(run: RunRecord, instance: Instance, compat: str, copy: Path, timeout: float) -> tuple[Grading, str | None, str]:
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


def signals(run: RunRecord, copy: Path, instance: Instance, compat: str, guarded: Sequence[str] = ()) -> list[dict[str, str]]:
    """:func:`.testrecord.signals` of the run, the console's disagreements with the record, tests
    whose code is not the tests', loaders and import hooks of the copy, and more than one run."""
    try:
        found = run_signals(run, copy)
        if run.session is not None:
            record, console = _runs(run)
            found += disagreements(record, console, instance, compat)
            found += origins(run, guarded)
            runs = _count(run.session.get("runs"))
            if runs is None or runs > 1:  # the runner makes one: another is code of the copy running tests
                found.append({"kind": "test_runs", "detail": f"the program started {run.session.get('runs')!r} "
                              "top-level test runs"})  # fmt: skip
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        found = [{"kind": "record_malformed", "detail": f"{type(exc).__name__}: {exc}"}]
    copies = sorted({p for p in (run.copy_path, str(copy.resolve()), str(copy), *run.aliases) if p}, key=len, reverse=True)
    for signal in found:
        for path in copies:
            signal["detail"] = signal["detail"].replace(path, "<copy>")
    return list({(s["kind"], s["detail"]): s for s in found}.values())
