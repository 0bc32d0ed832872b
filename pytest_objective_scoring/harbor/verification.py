"""One verification of a working state, wherever it runs (:mod:`.host`, :mod:`.container`).

The working state is copied (never its ``logs/verifier``) and given a content address, files that
would load in place of pytest or the recorder are removed from the copy, and the task's tests, its
solution and this project's recorder are staged beside it. :class:`Verification` is one run of the
task's tests and its reward: what the recorder wrote is graded here (every test of the task's test
files is a FAIL_TO_PASS test of an instance built on the fly, graded by this project's scorer), or
the run is said to give no verdict, and why. :func:`attributed` runs the task's initial state the
same way to say whose fault a run without a verdict was.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from ..testrecord import pytest_missing
from .check import static_tests
from .rewards import Reward, compute_reward
from .task import CONTAINER_FILES, TaskSpec

BUILD_ONLY: Final = frozenset({*CONTAINER_FILES, ".dockerignore"})
# Terminal-Bench 1 builds from the task's root: these are the task, not its initial working state.
TASK_FILES: Final = frozenset({"task.toml", "task.yaml", "instruction.md", "tests", "solution", "solution.sh",
                               "solution.yaml", "run-tests.sh", "environment", "logs", "README.md"})  # fmt: skip
PYTEST_CONFIGS: Final = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
COPY_SKIP: Final = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".objective-scoring"})
# A file of the working state that Python or pytest would load in place of the verifier itself:
# pytest, what pytest imports as it starts (before the recorder can watch), and the recorder.
_VERIFIER_MODULES: Final = ("pytest", "_pytest", "pluggy", "py", "xdist", "iniconfig", "packaging", "exceptiongroup",
                            "tomli", "pygments", "colorama", "_objective_scoring_recorder")  # fmt: skip
SHADOWING: Final = frozenset({*_VERIFIER_MODULES, *(f"{name}.py" for name in _VERIFIER_MODULES), "sitecustomize.py",
                              "usercustomize.py"})  # fmt: skip
OUTPUT_TAIL: Final = 4000
VERIFIER_PLUGIN: Final = "objective-scoring"



def _ignore_for(root: Path, extra: frozenset[str] = frozenset()) -> Any:
    from ..workspace import uncopied

    root_text = os.path.realpath(root)

    def ignore(directory: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if n in COPY_SKIP}
        here = os.path.realpath(directory)
        if here == root_text:
            skipped.update(n for n in names if n in extra)
        elif here == os.path.join(root_text, "logs"):
            skipped.update(n for n in names if n == "verifier")  # where the last verification wrote
        return skipped | uncopied(directory, names)

    return ignore


def copy_state(source: Path | None, dest: Path, exclude: frozenset[str] = frozenset()) -> None:
    """Copy a working state (``None``: an empty one) to ``dest``; never copies its ``logs/verifier``."""
    if source is None:
        dest.mkdir(parents=True)
        return
    shutil.copytree(source, dest, symlinks=True, ignore=_ignore_for(source, exclude))


def initial_exclude(spec: TaskSpec) -> frozenset[str]:
    """Files of the build context that are not part of the initial working state."""
    if spec.host_workdir is not None:
        return frozenset()
    return BUILD_ONLY | (TASK_FILES if spec.layout == "terminal-bench" else frozenset())


def state_digest(root: Path) -> str:
    """A content address for a working state: every path and its bytes (symlinks by target)."""
    digest = hashlib.sha256()
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = Path(directory) / name
            rel = path.relative_to(root).as_posix()
            digest.update(rel.encode("utf-8", "surrogateescape") + b"\0")
            if path.is_symlink():
                digest.update(b"link:" + os.readlink(path).encode("utf-8", "surrogateescape"))
            else:
                try:
                    digest.update(hashlib.sha256(path.read_bytes()).digest())
                except OSError:
                    digest.update(b"unreadable")
    return "sha256:" + digest.hexdigest()


def shadows(name: str) -> bool:
    """Whether a top-level entry of an import root named ``name`` would load in place of a module of
    the verifier: pytest, its dependencies, the recorder, or the standard library (of this Python
    and of every other version the tests may run under, :data:`.protect.STDLIB_MODULES`)."""
    from ..protect import MODULE_SUFFIXES, _guarded_module

    if name in SHADOWING:
        return True
    module, dot, suffix = name.partition(".")
    if dot and not any(name.endswith(s) for s in MODULE_SUFFIXES):
        return False
    return _guarded_module(module) is not None


def remove_shadowing(copy: Path) -> list[str]:
    """Remove files of the copy that would load in place of Python's or pytest's own modules: a
    module or a package (a folder with an ``__init__.py``; one without never shadows) at the top of
    any of its import roots named like the standard library's, pytest's or its dependencies'."""
    from ..workspace import import_roots

    removed = []
    roots, _ = import_roots(copy)
    for root in dict.fromkeys([copy, *map(Path, roots)]):
        try:
            names = sorted(os.listdir(root))
        except OSError:
            continue
        for name in names:
            target = root / name
            if not shadows(name):
                continue
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.is_dir() and (target / "__init__.py").exists():
                shutil.rmtree(target)
            else:
                continue
            removed.append(target.relative_to(copy).as_posix())
    return removed


def _tail(log: Path) -> str:
    try:
        return log.read_text(encoding="utf-8", errors="replace")[-OUTPUT_TAIL:]
    except OSError:
        return ""


def _stage_solution(spec: TaskSpec, workspace: Path) -> Path:
    """A copy of the task's solution (``solution/``; Terminal-Bench 1: ``solution.sh`` alone)."""
    assert spec.solution is not None
    solution = workspace / "solution"
    if spec.layout == "harbor":
        shutil.copytree(spec.solution.parent, solution, symlinks=True)
    else:
        solution.mkdir()
        shutil.copy2(spec.solution, solution / spec.solution.name)
    return solution


def _stage_tests(spec: TaskSpec, area: Path) -> Path:
    """A copy of the task's ``tests/`` with its own pytest configuration (an empty one when it has none)."""
    tests = area / "tests"
    shutil.copytree(spec.tests_dir, tests, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    if not any((tests / name).is_file() for name in PYTEST_CONFIGS):
        (tests / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return tests


def _stage_tools(where: Path) -> Path:
    """A fresh folder holding the boot module and the recorder, the only code of this project the
    test process runs. On this machine every verification stages its own, after the solution ran: a
    solution that wrote outside its state cannot have replaced them."""
    from ..testrun import stage_tools

    tools = where / "tools"
    tools.mkdir()
    stage_tools(tools)
    return tools


@dataclass
class Verification:
    """One run of the task's tests on one working state, and its reward."""

    label: str
    state: str
    status: str  # "verdict" or "no_verdict"
    no_verdict_reason: str | None
    reward: Reward | None
    envelope: dict[str, Any]
    run: dict[str, Any]
    timeout: float
    timeout_source: str
    removed: list[str]
    log: Path
    verifier: str = VERIFIER_PLUGIN  # or VERIFIER_SCRIPT: the task's test script, read for its reward
    where: str = "host"  # or "container"
    container: dict[str, Any] | None = None
    failure_class: str | None = None  # no verdict: "verifier" (timed out, crashed) or "setup" (engine, image)
    attribution: str | None = None  # a working state that broke its own run: why that is its failure
    script: dict[str, Any] | None = None  # the task's tests/test.sh run, when it ran (exit, reward files)
    cross_check: dict[str, Any] | None = None  # the other verifier's view of the same state, when both ran
    artifacts: Path | None = None  # where the task's artifacts of this verification were copied
    # the no-verdict reason rests on what the run itself wrote (its output, its record's session:
    # the working state's code can write both): it holds only when the control run shows it too
    # (:func:`attributed`)
    said_by_run: bool = False

    @property
    def solved(self) -> bool:
        return self.status == "verdict" and self.reward is not None and self.reward.solved

    @property
    def patch_ref(self) -> str | None:
        return self.envelope.get("patch_ref")

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "state": self.state,
            "status": self.status,
            "no_verdict_reason": self.no_verdict_reason,
            "failure_class": self.failure_class,
            "verifier": self.verifier,
            "where": self.where,
            "container": self.container,
            "reward": self.reward.to_dict() if self.reward is not None else None,
            "attribution": self.attribution,
            "script": self.script,
            "cross_check": self.cross_check,
            "timeout": {"seconds": self.timeout, "source": self.timeout_source},
            "removed_from_copy": self.removed,
            "run": self.run,
            "envelope": self.envelope,
        }


def attributed(spec: TaskSpec, verification: Verification, control: Callable[[], Verification]) -> Verification:
    """A working state's run that gave no verdict (a timeout, a crash, an unusual exit): the task's
    initial state, run the same way, says whose fault it was. If the initial state gives a verdict,
    the working state broke its own run: a verdict with nothing passed (not solved), never an
    infrastructure failure that would leave it out of a solve rate. If not, the machine's. A reason
    read from what the run wrote ("No module named pytest" in its output, a module imported from
    elsewhere in its session record) is the working state's word: the control decides it the same
    way, whatever its class."""
    if verification.status == "verdict" or (verification.failure_class != "verifier" and not verification.said_by_run):
        return verification
    base = control()
    if base.status != "verdict":
        reason = f"{verification.no_verdict_reason}; the initial state gives no verdict either ({base.no_verdict_reason})"
        return replace(verification, no_verdict_reason=reason)
    found, _ = static_tests(spec)
    ids = [t.test_id for t in found] or ["<the task's tests>"]
    why = (f"{verification.no_verdict_reason}, while the task's initial state runs its tests to a verdict: the "
           "working state broke its own run, so nothing of it passed")  # fmt: skip
    return replace(verification, status="verdict", reward=compute_reward(spec.rules, [(i, False) for i in ids]),
                   failure_class=None, attribution=why)


def _no_verdict(timed_out: bool, timeout: float, session: dict[str, Any] | None, tail: str, python: str,
                copy: Path | str, records: Mapping[str, Any]) -> tuple[str | None, str | None]:  # fmt: skip
    """Why a run of the tests gives no verdict, and its failure class (``verifier`` or ``setup``)."""
    if timed_out:
        return f"the verifier timed out after {timeout:g}s", "verifier"
    if session is None:
        if pytest_missing(tail):
            return f"pytest is not installed for {python}", "setup"
        return "the test session never finished (no session report: the process died or was killed)", "verifier"
    status = session.get("exitstatus")
    reasons: dict[Any, str] = {2: "the test session was interrupted", 3: "pytest stopped with an internal error",
                               4: "pytest was given a usage error", 5: "no tests were collected"}  # fmt: skip
    if status not in (0, 1):
        return reasons.get(status, f"pytest exited with unexpected status {status}"), "verifier"
    root = Path(copy).resolve() if isinstance(copy, Path) else Path(copy)
    stale = {n: o for n, o in (session.get("module_origins") or {}).items() if o and not Path(o).is_relative_to(root)}
    stale.update(session.get("foreign_modules") or {})
    if stale:
        name, origin = next(iter(stale.items()))
        return (f"the tests imported {name} from {origin}, not from the copy of the working state: another copy "
                "shadows it on that interpreter's path"), "setup"  # fmt: skip
    failed = [n for n, r in records.items() if r.any_failed and r.outcome != "tampered"]
    if status == 0 and failed:
        return f"pytest exited 0 but {len(failed)} test(s) failed or errored, e.g. {failed[0]}", "verifier"
    return None, None


@dataclass
class _Ran:
    """What one run of the task's pytest tests left: its facts, for :func:`_graded`."""

    label: str
    shown: str
    run: dict[str, Any]
    record_file: Path
    timed_out: bool
    python: str
    interpreter: str | None  # the interpreter to digest: one of this machine (None in a container)
    copy_root: Path | str  # where the working state was, as the test process saw it
    patch_ref: str
    removed: list[str]
    log: Path
    record_key: str = ""  # the key the recorder signed the record with


def _graded(spec: TaskSpec, ran: _Ran, timeout: float, timeout_source: str, **fields: Any) -> Verification:
    """Grade what the recorder wrote: every test is a FAIL_TO_PASS test of an instance built here."""
    from ..envelope import build_envelope, graded_by
    from ..instances import Instance
    from ..scorer import grade, make_score
    from ..testrun import read_records

    collector, collect_errors, session = read_records(ran.record_file, ran.record_key)
    forged = (session or {}).get("forged")
    if forged:  # the candidate's code wrote to its own record: no verdict from it, and it says so
        session = None
    records = collector.records
    run = {**ran.run, "pytest_exitstatus": None if session is None else session.get("exitstatus")}
    reason, failure_class = _no_verdict(ran.timed_out, timeout, session, run["output_tail"], ran.python,
                                        ran.copy_root, records)  # fmt: skip
    fields["said_by_run"] = reason is not None  # a missing pytest, a module from elsewhere: the run's word

    # Every test that ran, every test function of the files that did not, and every file that
    # failed to collect without a known test: all are FAIL_TO_PASS of an instance built here.
    ran_ids = [nodeid for nodeid, record in records.items() if record.ran]
    found, _ = static_tests(spec)
    ids = list(ran_ids)
    ids.extend(t.test_id for t in found if not any(t.covers(n) for n in ran_ids))
    for nodeid, _message in collect_errors:
        if nodeid and not any(i == nodeid or i.startswith(nodeid + "::") for i in ids):
            ids.append(nodeid)
    integrity = [{"kind": "shadowing_file_removed", "detail": f"{path}: would load in place of the verifier"}
                 for path in ran.removed]  # fmt: skip
    for nodeid, record in records.items():
        integrity.extend({"kind": kind, "detail": f"{nodeid} ({when})"} for kind, when in record.flags)
    patched = (session or {}).get("patched_internals") or []
    integrity.extend({"kind": "pytest_internals_patched", "detail": detail} for detail in patched)
    session_info = {"exitstatus": None if session is None else session.get("exitstatus"),
                    "collect_errors": [{"nodeid": n, "message": m} for n, m in collect_errors]}  # fmt: skip
    harbor = {"task": spec.name, "label": ran.label, "metric_space": spec.metric_space}
    extra = {"harbor": harbor, "patch_ref": ran.patch_ref}
    if not ids:
        reason = reason or "the task's tests define no test"
        envelope = build_envelope(instance_id=spec.name, score=None, grading=None, no_verdict=reason,
                                  session=session_info, integrity=integrity, extra=extra)  # fmt: skip
        envelope["digests"] = _digests(ran, session, None)
        return Verification(ran.label, ran.shown, "no_verdict", reason, None, envelope, run, timeout, timeout_source,
                            ran.removed, ran.log, failure_class=failure_class or "verifier", **fields)  # fmt: skip
    instance = Instance(spec.name, tuple(ids), (), {"instance_id": spec.name}, str(spec.config_file))
    grading = grade(instance, records, "strict")
    outcomes = [(r.test_id, r.counted and not patched and not forged) for r in grading.results]
    if forged:  # tampering is the working state's failure: nothing it claims passed counts
        reason, failure_class = None, None
        integrity.append({"kind": "record_forged", "detail": f"the record of the test run was written by something "
                          f"other than the recorder: {forged}"})  # fmt: skip
    reward = None if reason else compute_reward(spec.rules, outcomes)
    score = None
    if reason is None and session is not None:
        by = graded_by(mode="harbor", pytest_version=str(session.get("pytest_version")),
                       python=f"{session.get('python_implementation')}/{session.get('python_version')}",
                       platform=str(session.get("platform")), timeout=timeout, compat="strict")  # fmt: skip
        score = make_score(grading, ran.patch_ref, by, int(time.time()))
    if reward is not None:
        harbor.update(reward.to_dict())
    envelope = build_envelope(instance_id=spec.name, score=score, grading=grading, no_verdict=reason,
                              session=session_info, integrity=integrity, extra=extra)  # fmt: skip
    envelope["digests"] = _digests(ran, session, envelope["score"])
    return Verification(ran.label, ran.shown, "no_verdict" if reason else "verdict", reason, reward, envelope, run,
                        timeout, timeout_source, ran.removed, ran.log, failure_class=failure_class, **fields)  # fmt: skip


def _digests(ran: _Ran, session: Mapping[str, Any] | None, score: Mapping[str, Any] | None) -> dict[str, Any]:
    """The digests of one verification: the working state, the interpreter (on this machine), the
    environment the test process reported, the Score; the task's is added by :func:`run_task`."""
    from ..integrity import digests

    return digests(None, ran.patch_ref, ran.interpreter, session, score)


def _failed(spec: TaskSpec, label: str, shown: str, reason: str, failure_class: str, timeout: float,
            timeout_source: str, log: Path, **fields: Any) -> Verification:  # fmt: skip
    """A verification that never reached the tests (the container engine failed): no verdict."""
    from ..envelope import build_envelope

    envelope = build_envelope(instance_id=spec.name, score=None, grading=None, no_verdict=reason, session={},
                              extra={"harbor": {"task": spec.name, "label": label, "metric_space": spec.metric_space}})  # fmt: skip
    run = {"command": None, "exit_code": None, "timed_out": False, "wall_time": 0.0, "cpu": None,
           "output_tail": _tail(log)}  # fmt: skip
    return Verification(label, shown, "no_verdict", reason, None, envelope, run, timeout, timeout_source, [], log,
                        failure_class=failure_class, **fields)  # fmt: skip


def _tests_of(envelope: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{key: test.get(key) for key in ("id", "outcome", "status", "duration")} for test in envelope.get("tests", [])]
