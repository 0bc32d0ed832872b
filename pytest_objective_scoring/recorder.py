"""What runs inside the test process: turn pytest reports into plain facts.

This module is deliberately self-contained (stdlib and pytest only, Python 3.7+
syntax, hooks that exist since pytest 6.0) because the runner copies it, as
``_objective_scoring_recorder.py``, into the interpreter of the environment
under test, which may be a Python 3.9 virtualenv with pytest 6. The in-process
plugin imports the same functions, so one definition of a "fact" serves both.

A *fact* is a JSON-native dict describing one phase report::

    {"nodeid": ..., "when": "setup"|"call"|"teardown"|"???", "outcome": ...,
     "xfail": bool, "strict_xpass": bool, "raised_but_passed": bool,
     "duration": float, "message": str}

Loaded with ``-p _objective_scoring_recorder`` and ``OBJECTIVE_SCORING_RECORD``
set to a file path, it appends one JSON line per report (flushed, so a killed
run keeps what it saw) and a final ``session`` line.
"""

import json
import os
import platform
import sys
from typing import Any, Dict, Generator, List, Optional  # type comments: this file must parse on Python 3.7

import pytest

FLAGS_KEY = "objective_scoring"
ENV_RECORD = "OBJECTIVE_SCORING_RECORD"
ENV_IMPORT_ROOTS = "OBJECTIVE_SCORING_IMPORT_ROOTS"
ENV_PACKAGES = "OBJECTIVE_SCORING_PACKAGES"
MESSAGE_LIMIT = 400


def _message(report):
    # type: (Any) -> str
    longrepr = getattr(report, "longrepr", None)
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # skip: (path, lineno, reason)
        text = str(longrepr[2])
    else:
        crash = getattr(longrepr, "reprcrash", None)
        text = getattr(crash, "message", None) or str(longrepr)
    text = text.strip()
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "\u2026"


def fact_from_report(report):
    # type: (Any) -> Dict[str, Any]
    """The JSON-native fact for one TestReport (works on xdist-deserialised reports)."""
    when = getattr(report, "when", None) or "???"
    outcome = report.outcome
    longrepr = getattr(report, "longrepr", None)
    flags = getattr(report, FLAGS_KEY, None) or {}
    return {
        "nodeid": report.nodeid,
        "when": when,
        "outcome": outcome,
        "xfail": hasattr(report, "wasxfail"),
        "strict_xpass": bool(
            outcome == "failed" and isinstance(longrepr, str) and longrepr.startswith("[XPASS(strict)]")
        ),
        "raised_but_passed": bool(flags.get("raised_but_passed")),
        "duration": float(getattr(report, "duration", 0.0) or 0.0),
        "message": _message(report) if outcome != "passed" else "",
    }


def flag_report(report, call):
    # type: (Any, Any) -> None
    """Mark a report that says passed although its phase raised.

    pytest never produces such a report by itself; it is the mark of a hook
    (a hostile ``conftest.py``, a patched plugin) rewriting outcomes.
    """
    excinfo = getattr(call, "excinfo", None)
    if excinfo is not None and report.outcome == "passed" and not hasattr(report, "wasxfail"):
        report.__dict__[FLAGS_KEY] = {"raised_but_passed": True}


class ReportFlagger:
    """Runs in every process (xdist workers too): annotates reports as they are made."""

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        # type: (Any, Any) -> Generator[None, Any, None]
        outcome = yield
        report = outcome.get_result()
        flag_report(report, call)


def _prepend_import_roots():
    # type: () -> None
    roots = [r for r in os.environ.get(ENV_IMPORT_ROOTS, "").split(os.pathsep) if r]
    for root in reversed(roots):
        while root in sys.path:
            sys.path.remove(root)
        sys.path.insert(0, root)


def module_origins(names):
    # type: (List[str]) -> Dict[str, Optional[str]]
    """Where each already-imported top-level package of ``names`` came from."""
    origins = {}  # type: Dict[str, Optional[str]]
    for name in names:
        module = sys.modules.get(name)
        if module is None:
            continue
        path = getattr(module, "__file__", None)
        if path is None:
            paths = list(getattr(module, "__path__", []) or [])
            path = paths[0] if paths else None
        origins[name] = os.path.realpath(path) if path else None
    return origins


class FileRecorder:
    """Controller-side writer of facts to a JSONL file (subprocess runs)."""

    def __init__(self, config, path):
        # type: (Any, str) -> None
        self.config = config
        self.handle = open(path, "a", encoding="utf-8")

    def _write(self, record):
        # type: (Dict[str, Any]) -> None
        self.handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.handle.flush()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        # type: (Any) -> None
        fact = fact_from_report(report)
        fact["type"] = "test"
        self._write(fact)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report):
        # type: (Any) -> None
        if report.failed:
            self._write(
                {"type": "collect_error", "nodeid": report.nodeid, "message": _message(report) or "collection error"}
            )

    def pytest_collection_finish(self, session):
        # type: (Any) -> None
        self._write({"type": "collected", "count": len(session.items)})

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        # type: (Any, Any) -> None
        names = [n for n in os.environ.get(ENV_PACKAGES, "").split(os.pathsep) if n]
        self._write(
            {
                "type": "session",
                "exitstatus": int(exitstatus),
                "testsfailed": int(getattr(session, "testsfailed", 0)),
                "shouldfail": bool(getattr(session, "shouldfail", False)),
                "shouldstop": bool(getattr(session, "shouldstop", False)),
                "pytest_version": pytest.__version__,
                "python_version": platform.python_version(),
                "python_implementation": platform.python_implementation(),
                "platform": sys.platform + "-" + platform.machine(),
                "module_origins": module_origins(names),
            }
        )
        self.handle.close()


_prepend_import_roots()


def pytest_configure(config):
    # type: (Any) -> None
    path = os.environ.get(ENV_RECORD)
    if not path:
        return
    if not config.pluginmanager.has_plugin("objective-scoring-flagger"):
        config.pluginmanager.register(ReportFlagger(), "objective-scoring-flagger")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(FileRecorder(config, path), "objective-scoring-file-recorder")
