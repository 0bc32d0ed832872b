"""The executed-test runner (spec 3.1): grade a candidate patch in an isolated copy.

Steps, each recorded in the envelope's ``runner`` section (``docs/runner.md``):

1. copy the repository to a private workspace (:mod:`.workspace`), at
   ``base_commit`` when the instance names one;
2. drop the candidate's changes to protected files (:mod:`.protect`), apply the
   rest, and put back any protected file the applied patch changed anyway;
3. reset the test patch's files and apply the test patch;
4. run pytest on the listed tests' files (:mod:`.testrun`); a file the candidate
   changed that turns out to implement pytest hooks is put back and the tests
   run again;
5. grade the outcomes with :mod:`.scorer`. When the run gave no verdict, a
   *control run* (the gold patch with the test patch, or the base with the test
   patch when the instance has no gold patch) decides whose fault it was: if the
   control runs cleanly the candidate broke the run (``solver``, not resolved);
   otherwise it is an infrastructure failure (``setup`` or ``verifier``) and is
   never counted against the candidate.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Mapping

from . import envelope as env
from . import protect
from .cost_ledger import DEFAULT_COMPUTE_RATE, HarnessCost, run_cost
from .instances import Instance
from .scorer import Grading, exit_status_note, grade, make_score
from .testrun import RunRecord, assess, network_isolation, pid_isolation, run_tests
from .workspace import (
    BadInput,
    InfraFailure,
    apply_candidate,
    apply_test_patch,
    changed_files,
    prepare_copy,
    reset,
    restore_files,
    revert_protected,
)

__all__ = ["BadInput", "GradeRequest", "GradeResult", "InfraFailure", "grade_candidate", "network_isolation"]

EXIT_RESOLVED, EXIT_NOT_RESOLVED, EXIT_BAD_INPUT, EXIT_INFRA = 0, 1, 2, 3
HOOK_REASON: Final = "implements pytest hooks for this run (part of the judge)"


@dataclass(frozen=True)
class GradeRequest:
    repo: Path
    instance: Instance
    patch: bytes
    test_patch: str | None = None
    python: str = sys.executable
    timeout: float = 1800.0
    compat: str = "strict"
    patch_ref: str | None = None
    keep: bool = False
    network: bool = False
    workdir: Path | None = None
    harness_cost: HarnessCost | None = None
    harness: str | None = None
    compute_rate: float = DEFAULT_COMPUTE_RATE


@dataclass
class GradeResult:
    envelope: dict[str, Any]
    exit_code: int
    failure_class: str

    @property
    def score(self) -> dict[str, Any] | None:
        return self.envelope.get("score")


def resolve_python(python: str) -> str:
    """An absolute interpreter path: a bare name is looked up on PATH, a relative path is made absolute."""
    found = shutil.which(python) if os.sep not in python else None
    path = os.path.abspath(found or python)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise BadInput(f"--python {python}: no such executable interpreter")
    return path


def check_test_ids(instance: Instance) -> None:
    """The runner runs pytest: every listed id must name a pytest test file."""
    for test_id in (*instance.fail_to_pass, *instance.pass_to_pass):
        path = test_id.split("::", 1)[0]
        if not path.endswith(".py"):
            raise BadInput(
                f"{instance.source}: test id {test_id!r} is not a pytest node id (path/to/test_file.py::test_name); "
                "this runner grades pytest suites"
            )


class _Grading:
    """The state of one grading, so each step stays a small method."""

    def __init__(self, request: GradeRequest, python: str, test_patch: str | None, test_patch_files: list[str]):
        self.request = request
        self.instance = request.instance
        self.python = python
        self.test_patch = test_patch
        self.test_patch_files = test_patch_files
        self.guarded = [*test_patch_files, *request.instance.test_files()]
        self.patch_ref = request.patch_ref or env.patch_ref_of(request.patch)
        self.workspace = Path(tempfile.mkdtemp(prefix="objective-score-", dir=request.workdir))
        self.copy = self.workspace / "repo"
        self.baseline = ""
        self.started = time.perf_counter()
        self.mark = self.started
        self.steps: list[dict[str, Any]] = []
        self.runs: list[RunRecord] = []
        self.integrity: list[dict[str, str]] = []
        self.runner: dict[str, Any] = {
            "repo": str(request.repo),
            "base_commit": self.instance.base_commit,
            "python": python,
            "timeout": request.timeout,
            "network": "allowed" if request.network else ("unshared" if network_isolation() else "not isolated: unshare unavailable"),
            "processes": "own PID namespace" if pid_isolation() else "process group only: unshare --pid unavailable",
            "test_patch": {"source": "file" if request.test_patch is not None else ("instance" if test_patch else None),
                           "files": test_patch_files},
        }  # fmt: skip

    def step(self, name: str) -> None:
        now = time.perf_counter()
        self.steps.append({"name": name, "seconds": round(now - self.mark, 4)})
        self.mark = now

    def cost(self) -> dict[str, Any]:
        """The envelope's ``harness``, ``cost`` (the spec's five fields) and ``cost_breakdown``."""
        request = self.request
        entry = run_cost(request.harness_cost, cpu=sum(r.cpu for r in self.runs),
                         wall_time=time.perf_counter() - self.started, rate=request.compute_rate)  # fmt: skip
        harness = request.harness or (request.harness_cost.harness if request.harness_cost else None)
        return {"harness": harness, "cost": entry["cost"], "cost_breakdown": entry["breakdown"]}

    def run(self, label: str, test_files: list[str]) -> RunRecord:
        record = run_tests(copy=self.copy, original=self.request.repo, workspace=self.workspace, python=self.python,
                           test_files=test_files, timeout=self.request.timeout, network=self.request.network,
                           label=label)  # fmt: skip
        self.runs.append(record)
        return record

    # -------------------------------------------------------------- the steps

    def grade(self) -> GradeResult:
        self.baseline = prepare_copy(self.request.repo, self.copy, self.instance.base_commit)
        self.step("copy")
        text = self.request.patch.decode("utf-8", errors="surrogateescape")
        try:
            protection = protect.filter_candidate(text, self.guarded)
        except protect.PatchParseError as exc:
            self.runner["apply"] = {"strategy": None, "attempts": [], "dropped": [], "error": f"not a unified diff: {exc}"}
            return self.unapplied()
        before = protect.snapshot(self.copy, self.guarded)
        candidate_file = self.workspace / "candidate.diff"
        candidate_file.write_bytes(protection.patch.encode("utf-8", "surrogateescape"))
        strategy, attempts = apply_candidate(self.copy, self.baseline, candidate_file, protection.patch)
        dropped = list(protection.dropped)
        self.runner["apply"] = {"strategy": strategy, "attempts": attempts, "kept": list(protection.kept)}
        if strategy is None:
            self.runner["apply"]["dropped"] = [d.to_dict() for d in dropped]
            self.step("apply")
            return self.unapplied()
        sneaked, stuck = revert_protected(self.copy, self.baseline, before, self.guarded)
        dropped += sneaked
        self.runner["apply"]["dropped"] = [d.to_dict() for d in dropped]
        if stuck:
            return self.tampered(f"the patch changed protected files that could not be put back: {', '.join(stuck)}")
        changed = changed_files(self.copy, self.baseline)
        self.runner["apply"]["changed"] = changed
        self.step("apply")
        if self.test_patch:
            apply_test_patch(self.copy, self.baseline, self.test_patch, self.test_patch_files, self.workspace)
        self.step("test_patch")
        test_files = [f for f in self.instance.test_files() if (self.copy / f).exists()]
        absent = [f for f in self.instance.test_files() if not (self.copy / f).exists()]
        self.runner["test_files"] = test_files
        if absent:
            self.runner["absent_test_files"] = absent
        if not test_files:
            raise InfraFailure("setup", f"none of the listed tests' files exist after the test patch: {', '.join(absent)}")
        guard_before = protect.snapshot(self.copy, self.guarded)
        run = self.run("candidate", test_files)
        self.step("tests")
        hook_files = set((run.session or {}).get("hook_files") or [])
        unknown = sorted(f for f in hook_files if f.startswith("<unknown origin>"))
        hooked = sorted(hook_files & set(changed))
        if hooked:
            # Library files of the candidate's that pytest loaded as hook implementations judge the run:
            # they are put back like any protected file and the tests run again without them.
            restore_files(self.copy, self.baseline, hooked)
            dropped += [protect.Dropped(path, HOOK_REASON) for path in hooked]
            self.runner["apply"]["dropped"] = [d.to_dict() for d in dropped]
            guard_before = protect.snapshot(self.copy, self.guarded)
            run = self.run("candidate-without-hooks", test_files)
            self.step("tests_again")
        self.runner["run"] = run.to_dict()
        grading, reason, failure = assess(run, self.instance, self.request.compat, self.copy, self.request.timeout)
        changes = protect.snapshot_changes(guard_before, protect.snapshot(self.copy, self.guarded))
        self.integrity += [{"kind": "protected_file_modified", "detail": change} for change in changes]
        for nodeid, record in run.collector.records.items():
            for kind, when in record.flags:
                self.integrity.append({"kind": kind, "detail": f"{nodeid} ({when})"})
        for item in (run.session or {}).get("patched_internals") or []:
            self.integrity.append({"kind": "pytest_internals_patched", "detail": item})
        if unknown and reason is None:
            reason = f"pytest hooks of unknown origin (code run through exec?): {', '.join(unknown[:3])}"
            self.integrity.append({"kind": "hook_of_unknown_origin", "detail": ", ".join(unknown[:5])})
        if changes and reason is None:
            reason = f"the test run modified protected files: {', '.join(changes[:5])}"
            return self.attribute(reason, failure, test_files, unless_control_does=(changes, grading, run))
        if reason is not None:
            return self.attribute(reason, failure, test_files)
        return self.verdict(grading, run.session or {}, run)

    def attribute(
        self,
        reason: str,
        failure: str,
        test_files: list[str],
        unless_control_does: tuple[list[str], Grading, RunRecord] | None = None,
    ) -> GradeResult:
        """The candidate's run gave no verdict: a control run says whose fault it was.

        ``unless_control_does`` carries the protected files the candidate's run wrote: when
        the control run writes the same ones, that is the project's own behaviour (tests that
        generate modules, say), and the candidate's run stands as a verdict.
        """
        control, control_reason, control_failure, control_changes = self.control_run(test_files)
        self.step("control_run")
        if unless_control_does is not None and control_reason is None:
            changes, grading, run = unless_control_does
            if set(changes) <= set(control_changes):
                self.runner["protected_writes"] = f"the control run writes the same protected files: {', '.join(changes[:5])}"
                return self.verdict(grading, run.session or {}, run)
        if control_reason is not None:
            raise InfraFailure(
                "setup" if "setup" in (failure, control_failure) else control_failure,
                f"{reason}; the control run fails too ({control_reason})",
            )
        # The candidate broke a run that works without it: none of its outcomes is trusted.
        self.runner["failure_detail"] = f"{reason} (the control run is clean)"
        result = self.verdict(grade(self.instance, {}, self.request.compat), control.session or {}, control)
        result.envelope["candidate_no_verdict_reason"] = reason
        return result

    def control_run(self, test_files: list[str]) -> tuple[RunRecord, str | None, str, list[str]]:
        """The gold patch (or the bare base) with the test patch: does the environment work?"""
        reset(self.copy, self.baseline)
        kind = "base"
        gold = self.instance.patch
        if gold and gold.strip():
            gold_file = self.workspace / "gold.diff"
            gold_file.write_bytes(gold.encode("utf-8", "surrogateescape"))
            strategy, _ = apply_candidate(self.copy, self.baseline, gold_file, gold)
            kind = "gold" if strategy else "base (the gold patch does not apply)"
        if self.test_patch:
            apply_test_patch(self.copy, self.baseline, self.test_patch, self.test_patch_files, self.workspace)
        before = protect.snapshot(self.copy, self.guarded)
        run = self.run("control", test_files)
        _, reason, failure = assess(run, self.instance, self.request.compat, self.copy, self.request.timeout)
        # the project's own tests writing protected files is its behaviour, not a failure of the control
        changes = protect.snapshot_changes(before, protect.snapshot(self.copy, self.guarded))
        self.runner["control_run"] = {"kind": kind, **run.to_dict(), "no_verdict_reason": reason,
                                      "protected_writes": changes}  # fmt: skip
        return run, reason, failure, changes

    # -------------------------------------------------------------- endings

    def verdict(self, grading: Grading, session: Mapping[str, Any], run: RunRecord) -> GradeResult:
        score = make_score(grading, self.patch_ref, self._graded_by(session), int(time.time()))
        failure_class = "none" if score.resolved == "resolved" else "solver"
        self.runner["failure_class"] = failure_class
        self.runner["steps"] = self.steps
        records = run.collector.records
        envelope = env.build_envelope(
            instance_id=self.instance.instance_id,
            score=score,
            grading=grading,
            no_verdict=None,
            session={"exitstatus": session.get("exitstatus"), "note": exit_status_note(session.get("exitstatus"), records),
                     "collection_errors": [{"nodeid": n, "message": m} for n, m in run.collect_errors]},
            integrity=self.integrity,
            extra={"runner": self.runner, **self.cost(), "patch_ref": self.patch_ref},
        )  # fmt: skip
        return GradeResult(envelope, EXIT_RESOLVED if failure_class == "none" else EXIT_NOT_RESOLVED, failure_class)

    def tampered(self, reason: str) -> GradeResult:
        self.runner["failure_detail"] = reason
        self.integrity.append({"kind": "protected_file_modified", "detail": reason})
        result = self.verdict(grade(self.instance, {}, self.request.compat), {}, RunRecord(command=[]))
        result.envelope["candidate_no_verdict_reason"] = reason
        return result

    def unapplied(self) -> GradeResult:
        """A candidate that does not apply: not resolved, no test ran, failure class patch_apply."""
        grading = grade(self.instance, {}, self.request.compat)
        by = env.graded_by(mode="runner", pytest_version="n/a", python="n/a", platform=sys.platform,
                           timeout=self.request.timeout, compat=self.request.compat)  # fmt: skip
        score = make_score(grading, self.patch_ref, by, int(time.time()))
        self.runner["failure_class"] = "patch_apply"
        self.runner["failure_detail"] = self.runner["apply"].get("error") or "no strategy applied the candidate patch"
        self.runner["steps"] = self.steps
        envelope = env.build_envelope(
            instance_id=self.instance.instance_id, score=score, grading=grading, no_verdict=None, session={},
            extra={"runner": self.runner, **self.cost(), "patch_ref": self.patch_ref}, patch_applied=False,
        )  # fmt: skip
        return GradeResult(envelope, EXIT_NOT_RESOLVED, "patch_apply")

    def infrastructure(self, failure_class: str, detail: str) -> GradeResult:
        self.runner["failure_class"] = failure_class
        self.runner["failure_detail"] = detail
        self.runner["steps"] = self.steps
        if self.runs:
            self.runner.setdefault("run", self.runs[0].to_dict())
        envelope = env.build_envelope(
            instance_id=self.instance.instance_id, score=None, grading=None,
            no_verdict=f"infrastructure failure ({failure_class}): {detail}", session={}, integrity=self.integrity,
            extra={"runner": self.runner, **self.cost(), "patch_ref": self.patch_ref},
        )  # fmt: skip
        return GradeResult(envelope, EXIT_INFRA, failure_class)

    def _graded_by(self, session: Mapping[str, Any]) -> str:
        return env.graded_by(
            mode="runner",
            pytest_version=str(session.get("pytest_version", "unknown")),
            python=f"{session.get('python_implementation', 'Python')}/{session.get('python_version', 'unknown')}",
            platform=str(session.get("platform", sys.platform)),
            timeout=self.request.timeout,
            compat=self.request.compat,
        )


def grade_candidate(request: GradeRequest) -> GradeResult:
    """Grade one candidate patch. Raises :class:`BadInput` for bad requests only:
    every failure of the candidate or of the environment is a result."""
    instance = request.instance
    if not request.repo.is_dir():
        raise BadInput(f"--repo {request.repo}: not a directory")
    python = resolve_python(request.python)
    check_test_ids(instance)
    test_patch = request.test_patch if request.test_patch is not None else instance.test_patch
    try:
        test_patch_files = protect.patch_files(test_patch) if test_patch else []
    except protect.PatchParseError as exc:
        raise BadInput(f"the test patch cannot be parsed: {exc}") from None
    grading = _Grading(request, python, test_patch, test_patch_files)
    try:
        return grading.grade()
    except InfraFailure as exc:
        return grading.infrastructure(exc.failure_class, str(exc))
    except BadInput:
        raise
    except Exception as exc:  # an error of the grader or the machine: never the candidate's failure
        detail = f"internal error: {type(exc).__name__}: {exc}"
        result = grading.infrastructure("verifier", detail)
        result.envelope["runner"]["traceback"] = traceback.format_exc()[-4000:]
        return result
    finally:
        if request.keep:
            grading.runner["workspace"] = str(grading.workspace)
        else:
            shutil.rmtree(grading.workspace, ignore_errors=True)
