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
from .testrun import RunRecord, assess, isolation_prefix, network_isolation, pid_isolation, run_process, run_tests
from .workspace import (
    BadInput,
    InfraFailure,
    apply_candidate,
    apply_test_patch,
    base_env,
    base_text,
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
    plan: tuple[str, ...] | None = None
    retrieval: tuple[str, ...] | None = None
    reruns: int = 0


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
        self.applied = False
        self.patched: dict[str, str] = {}  # the candidate's Python files as applied, read before any test ran
        self.build: tuple[bool, str | None] = (False, "the candidate was not applied")
        self.reruns: list[dict[str, Any]] = []
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

    def run(self, label: str, test_files: list[str], shuffle_seed: int | None = None) -> RunRecord:
        record = run_tests(copy=self.copy, original=self.request.repo, workspace=self.workspace, python=self.python,
                           test_files=test_files, timeout=self.request.timeout, network=self.request.network,
                           label=label, shuffle_seed=shuffle_seed, keep_state=label.startswith("rerun-"))  # fmt: skip
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
        self.applied = True
        self.patched = self.read_python(changed)
        self.step("apply")
        self.build = self.build_check()
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
        if run.forged is not None:
            self.integrity.append({"kind": "record_forged", "detail": run.forged})
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
        self.perturbed_reruns(test_files)
        return self.verdict(grading, run.session or {}, run)

    # -------------------------------------------------------------- scorecard inputs

    def read_python(self, paths: list[str]) -> dict[str, str]:
        texts = {}
        for path in paths:
            file = self.copy / path
            if path.endswith(".py") and file.is_file():
                texts[path] = file.read_bytes().decode("utf-8", "surrogateescape")
        return texts

    def build_check(self) -> tuple[bool, str | None]:
        """``patching.build``: the instance's ``build_command`` exits 0, or every patched Python
        module compiles. Runs right after the candidate is applied, before any test."""
        command = self.instance.get("build_command")
        if isinstance(command, str) and command.strip():
            log = self.workspace / "build.log"
            code, timed_out, _, cpu = run_process([*isolation_prefix(self.request.network), "/bin/sh", "-c", command],
                                                  cwd=self.copy, env={**base_env(), "HOME": str(self.workspace)},
                                                  timeout=min(self.request.timeout, 900.0), log=log)  # fmt: skip
            self.runs.append(RunRecord(command=["/bin/sh", "-c", command], label="build", cpu=cpu))
            self.step("build")
            if code == 0:
                return True, None
            tail = log.read_text(encoding="utf-8", errors="replace")[-300:]
            return False, f"build_command {'timed out' if timed_out else f'exited {code}'}: {tail.strip()}"
        from .symbols import python_check

        for path, text in sorted(self.patched.items()):
            _, compiles, error = python_check(path, text)
            if not compiles:
                return False, error
        return True, None

    def perturbed_reruns(self, test_files: list[str]) -> None:
        """``--reruns N``: the tests again, N times, each in an order drawn from a recorded seed."""
        import hashlib

        for index in range(self.request.reruns):
            digest = hashlib.sha256(f"{self.instance.instance_id}:{self.patch_ref}:{index}".encode()).hexdigest()
            seed = int(digest[:8], 16)
            run = self.run(f"rerun-{index + 1}", test_files, shuffle_seed=seed)
            grading, reason, _ = assess(run, self.instance, self.request.compat, self.copy, self.request.timeout)
            resolved = reason is None and grading.fail_to_pass.verdict == "satisfied" and grading.pass_to_pass.verdict == "satisfied"
            self.reruns.append({"seed": seed, "resolved": resolved, "no_verdict_reason": reason,
                                "fail_to_pass": grading.fail_to_pass.passed, "pass_to_pass": grading.pass_to_pass.passed,
                                "outcomes": {r.test_id: r.outcome for r in grading.results}})  # fmt: skip
        if self.request.reruns:
            self.step("reruns")

    def scorecard(self, envelope: dict[str, Any]) -> None:
        """Put the run's Scorecard (and what it was computed from) in the envelope."""
        from .scorecard import build_scorecard
        from .symbols import PatchError, Touched, python_check, touched

        def base(path: str) -> str | None:
            return base_text(self.copy, self.baseline, path)

        notes = []
        try:
            candidate = touched(self.request.patch.decode("utf-8", "surrogateescape"), base, self.patched.get)
            well_formed = True
        except PatchError as exc:
            candidate, well_formed = Touched(frozenset(), frozenset(), ()), False
            notes.append(f"the candidate is not a well-formed diff: {exc}")
        gold = None
        if self.instance.patch and self.instance.patch.strip():
            try:
                gold = touched(self.instance.patch, base)
            except PatchError as exc:
                notes.append(f"the gold patch is not a well-formed diff: localization is not computed ({exc})")
        parse_errors = [e for _, (ok, _, e) in ((p, python_check(p, t)) for p, t in sorted(self.patched.items())) if not ok]
        card, details = build_scorecard(
            task_id=self.instance.instance_id, envelope=envelope, instance_fields=self.instance.fields, gold=gold,
            candidate=candidate, applied=self.applied, parse_ok=well_formed and not parse_errors,
            build_ok=self.applied and self.build[0], plan=self.request.plan, retrieval=self.request.retrieval,
            reruns=[r["resolved"] for r in self.reruns],
        )  # fmt: skip
        details.update(parse_errors=parse_errors, build_error=None if self.build[0] else self.build[1],
                       rerun_seeds=self.reruns, notes=notes)  # fmt: skip
        envelope["scorecard"] = card.to_dict()
        envelope["scorecard_details"] = details

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
                # the project's own behaviour, not the candidate reaching the judge: no integrity flag for it
                self.integrity = [f for f in self.integrity
                                  if not (f["kind"] == "protected_file_modified" and f["detail"] in changes)]  # fmt: skip
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
            extra={"runner": self.runner, **self.cost(), "patch_ref": self.patch_ref,
                   "digests": self.digests(session, score.to_dict())},
        )  # fmt: skip
        self.scorecard(envelope)
        return GradeResult(envelope, EXIT_RESOLVED if failure_class == "none" else EXIT_NOT_RESOLVED, failure_class)

    def digests(self, session: Mapping[str, Any] | None, score: Mapping[str, Any] | None) -> dict[str, Any]:
        import hashlib

        from .integrity import digests, task_id_of
        from .ledger import canonical

        request = self.request
        policy = {"compat": request.compat, "timeout": request.timeout, "network": request.network,
                  "reruns": request.reruns, "test_patch": "file" if request.test_patch is not None else "instance"}  # fmt: skip
        return {**digests(task_id_of(self.instance.fields), self.patch_ref, self.python, session, score),
                "policy": "sha256:" + hashlib.sha256(canonical(policy).encode()).hexdigest()}

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
            extra={"runner": self.runner, **self.cost(), "patch_ref": self.patch_ref, "digests": self.digests(None, score.to_dict())},
            patch_applied=False,
        )  # fmt: skip
        self.scorecard(envelope)
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
            extra={"runner": self.runner, **self.cost(), "patch_ref": self.patch_ref, "digests": self.digests(None, None)},
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
