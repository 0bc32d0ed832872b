"""What one test run left: its :class:`RunRecord`, the recorder's signed record read back and
checked, and what the run says (:func:`assess`: the outcomes graded, or why it is no verdict;
:func:`signals`: what could be the candidate reaching its judge).

The record is written by the recorder inside the test process, the candidate's code beside it:
every line must carry the recorder's signature under the run's key and the next sequence number
(:func:`parse_records`), else the run is no verdict (``record_forged``). Reading is bounded and
never follows a link or blocks on a FIFO the test process put in the record's or the log's place.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Final, Iterator

from . import nesting
from .instances import Instance
from .outcomes import Collector
from .scorer import Grading, grade, no_verdict_reason

__all__ = [
    "RunRecord",
    "assess",
    "broken",
    "parse_records",
    "read_bounded",
    "read_records",
    "read_tail",
    "record_key",
    "signals",
    "stale_imports",
    "watching",
]

OUTPUT_TAIL: Final = 4000
RECORD_LIMIT: Final = 256 * 1024 * 1024
AUDIT_KINDS: Final = {"code_replaced": "code_replaced", "test_file_written": "protected_file_modified",
                      "protected_path_changed": "protected_file_modified", "objects_walked": "objects_walked"}


@dataclass
class RunRecord:
    """One pytest subprocess: what it printed, how it ended, what it recorded."""

    command: list[str]
    label: str = "candidate"
    exit_code: int | None = None
    timed_out: bool = False
    wall_time: float = 0.0
    cpu: float = 0.0
    output_tail: str = ""
    collector: Collector = field(default_factory=Collector)
    collect_errors: list[tuple[str, str]] = field(default_factory=list)
    session: dict[str, Any] | None = None
    forged: str | None = None  # why the record cannot be the recorder's (code of the graded copy wrote to it)
    signals: list[dict[str, str]] = field(default_factory=list)  # the audit hook's, in the order written
    writes: list[str] = field(default_factory=list)  # protected files the run added, changed or removed
    isolation: dict[str, Any] = field(default_factory=dict)
    copy_path: str = ""
    flooded: int | None = None  # bytes of output written when the run was killed for writing too much
    runner: str = "pytest"  # the program that ran the tests (:mod:`.runner_choice`)
    cases: list[dict[str, Any]] = field(default_factory=list)  # a program recorder's cases (not pytest)
    console: str = ""  # a program run's console output (bounded): read beside its record
    aliases: list[str] = field(default_factory=list)  # where else the run saw its copy (the user's checkout's path)
    report: Any = None  # a command run's report as read (:class:`.foreign.JUnitRun`), copied out after the run
    report_problem: str | None = None  # why a command run's report could not be read (none left, unreadable)

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "command": self.command,
            "exit_code": self.exit_code,
            "pytest_exitstatus": None if self.session is None else self.session["exitstatus"],
            "record_forged": self.forged,
            "timed_out": self.timed_out,
            "wall_time": round(self.wall_time, 3),
            "cpu": round(self.cpu, 3),
            "output_tail": self.output_tail,
            "isolation": self.isolation,
        }


@contextlib.contextmanager
def watching(descriptor: int, progress: Callable[[int], None] | None, every: float = 2.0) -> Iterator[None]:
    """While the body runs, call ``progress(tests finished)`` every ``every`` seconds, read from the
    record as the recorder appends to it (one teardown report a test); for the eye only, never for
    a verdict."""
    if progress is None:
        yield
        return
    stop = threading.Event()
    seen = {"offset": 0, "tests": 0}

    def poll() -> None:
        while not stop.wait(every):
            while True:
                chunk = os.pread(descriptor, 1 << 20, seen["offset"])
                if not chunk:
                    break
                seen["offset"] += len(chunk)
                seen["tests"] += chunk.count(b'teardown"')
            try:
                progress(seen["tests"])
            except Exception:  # noqa: BLE001 - a progress line must never break a grading
                return

    thread = threading.Thread(target=poll, name="objective-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def read_bounded(descriptor: int, limit: int = RECORD_LIMIT) -> str:
    """What the test process wrote to the record, read through the grader's own descriptor."""
    chunks, size, offset = [], 0, 0
    while size < limit:
        chunk = os.pread(descriptor, min(1 << 20, limit - size), offset)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        offset += len(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def read_tail(path: Path, size: int) -> str:
    """The last ``size`` characters of a log the test process could have replaced: a regular file
    only (never a FIFO, a folder or a link), read without blocking."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        return f"<the log could not be read: {exc}>"
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            return "<the log was replaced by something that is not a file>"
        start = max(0, info.st_size - size * 4)
        return os.pread(descriptor, size * 4, start).decode("utf-8", "replace")[-size:]
    finally:
        os.close(descriptor)


def record_key() -> str:
    """A fresh key for one test run's record (the recorder signs every line with it)."""
    import secrets

    return secrets.token_hex(32)


def read_records(record_file: Path, key: str, cases: list[dict[str, Any]] | None = None,
                 ) -> tuple[Collector, list[tuple[str, str]], dict[str, Any] | None]:
    """:func:`parse_records` of a record file (a regular file only, read without blocking and
    bounded: anything else is a forged record)."""
    if not record_file.exists() and not record_file.is_symlink():
        return Collector(), [], None
    try:
        descriptor = os.open(record_file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        return Collector(), [], {"forged": f"the record file cannot be read as a file ({exc.strerror})"}
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return Collector(), [], {"forged": "the record file was replaced by something that is not a file"}
        text = read_bounded(descriptor)
    finally:
        os.close(descriptor)
    return parse_records(text, key, None, cases)


def parse_records(text: str, key: str, signals: list[dict[str, str]] | None = None,
                  cases: list[dict[str, Any]] | None = None,
                  ) -> tuple[Collector, list[tuple[str, str]], dict[str, Any] | None]:
    """What the recorder wrote: every test's phase facts, the collection errors, and the session
    (its last word). Every line must carry the recorder's signature under ``key`` and the next
    sequence number, and nothing may follow the session; else the session is ``{"forged": why}``:
    code of the graded copy wrote to the record (only a last line cut short by a kill is forgiven)."""
    collector = Collector()
    errors: list[tuple[str, str]] = []
    session = None
    lines = text.split("\n")
    expected = 0
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        if session is not None:
            return collector, errors, {"forged": f"record line {number + 1} was written after the session ended"}
        mac, _, body = line.partition(" ")
        good = hmac.new(key.encode("ascii"), body.encode("utf-8"), hashlib.sha256).hexdigest()
        try:
            item = nesting.loads(body)
        except json.JSONDecodeError:
            item = None
        if item is None or not isinstance(item, dict) or not hmac.compare_digest(mac.encode(), good.encode()):
            if number == len(lines) - 1 and not text.endswith("\n"):
                break  # a line cut short by a kill
            return collector, errors, {"forged": f"record line {number + 1} does not carry the recorder's signature"}
        if item.pop("seq", None) != expected:
            return collector, errors, {"forged": f"record line {number + 1} is out of sequence (replayed or removed lines)"}
        expected += 1
        kind = item.pop("type", None)
        if kind == "test":
            collector.add(item)
        elif kind == "collect_error":
            errors.append((item["nodeid"], item["message"]))
        elif kind == "session":
            session = item
        elif kind == "signal" and signals is not None:
            signals.append({"kind": str(item.get("kind")), "detail": str(item.get("detail"))})
        elif kind == "case" and cases is not None:
            cases.append(item)
    return collector, errors, session


def pytest_missing(output: str) -> bool:
    """Whether a run's output says its interpreter cannot import pytest (``python -m pytest``'s
    words, or an import's). The run's word: code of the graded copy can write it too."""
    return "No module named pytest" in output or "No module named 'pytest'" in output


def broken(run: RunRecord, timeout: float) -> tuple[str, str] | None:
    """Why a run (of any runner) is no verdict before its outcomes are even read, with the failure
    class that would be: it timed out, flooded its output, forged its record or ended without a session."""
    if run.timed_out:
        return f"the test run timed out after {timeout:g}s", "verifier"
    if run.flooded is not None:
        return (f"the test run wrote more output than the limit allows ({run.flooded} bytes and more; "
                "--max-output): it was stopped"), "verifier"  # fmt: skip
    if run.forged is not None:
        return (f"the record of the test run was written by something other than the recorder "
                f"({run.forged}): code of the graded copy tampered with its verdict"), "verifier"  # fmt: skip
    if run.session is None:
        if run.runner == "pytest" and pytest_missing(run.output_tail):
            return f"pytest is not installed for {run.command[0]}", "setup"
        return f"the test run died before its session finished (exit code {run.exit_code})", "verifier"
    return None


def stale_imports(run: RunRecord, copy: Path) -> str | None:
    """Why the run tested another copy of the project than the graded one (an editable install of
    the original checkout imported first), or None."""
    session = run.session or {}
    roots = [Path(run.copy_path).resolve() if run.copy_path else copy.resolve(), *map(Path, run.aliases)]
    stale = {
        name: origin
        for name, origin in (session.get("module_origins") or {}).items()
        if origin and not any(Path(origin).is_relative_to(root) for root in roots)
    }
    stale.update(session.get("foreign_modules") or {})
    if not stale:
        return None
    name, origin = next(iter(stale.items()))
    return (f"the tests imported {name} from {origin}, not from the graded copy: another copy of the "
            "project (an editable install of the original checkout?) shadows it on that interpreter's path")


def assess(run: RunRecord, instance: Instance, compat: str, copy: Path, timeout: float) -> tuple[Grading, str | None, str]:
    """Grade a pytest run and say why it is no verdict, with the failure class it would be (other
    runners: :func:`.program_runs.assess`)."""
    records = run.collector.records
    grading = grade(instance, records, compat)
    failure = broken(run, timeout)
    if failure is not None:
        return grading, *failure
    assert run.session is not None
    stale = stale_imports(run, copy)
    if stale is not None:
        return grading, stale, "setup"
    reason = no_verdict_reason(
        exitstatus=run.session["exitstatus"],
        collect_errors=run.collect_errors,
        stopped_early=bool(run.session.get("shouldfail") or run.session.get("shouldstop")),
        grading=grading,
        records=records,
    )
    return grading, reason, "verifier"


def signals(run: RunRecord, copy: Path) -> list[dict[str, str]]:
    """Everything in a run that could be the candidate reaching its judge, as integrity flags, with
    the run's copy (and ``copy``, the pristine one) named ``<copy>`` so that the control run can
    show the very same ones."""
    found: list[dict[str, str]] = []
    for nodeid, record in run.collector.records.items():
        found += [{"kind": kind, "detail": f"{nodeid} ({when})"} for kind, when in record.flags]
    session = run.session or {}
    found += [{"kind": "pytest_internals_patched", "detail": item} for item in session.get("patched_internals") or []]
    unknown = sorted(f for f in session.get("hook_files") or [] if f.startswith("<unknown origin>"))
    found += [{"kind": "hook_of_unknown_origin", "detail": item} for item in unknown]
    found += [{"kind": AUDIT_KINDS.get(s["kind"], s["kind"]), "detail": s["detail"]} for s in run.signals]
    found += [{"kind": "protected_file_modified", "detail": change} for change in run.writes]
    copies = sorted({p for p in (run.copy_path, str(copy.resolve()), str(copy), *run.aliases) if p}, key=len, reverse=True)
    for signal in found:
        for path in copies:
            signal["detail"] = signal["detail"].replace(path, "<copy>")
    unique = {(s["kind"], s["detail"]): s for s in found}
    return list(unique.values())
