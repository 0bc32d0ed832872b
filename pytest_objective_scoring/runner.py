"""The executed-test runner (spec 3.1): grade a candidate patch in an isolated copy.

Steps, each recorded in the envelope's ``runner`` section (``docs/runner.md``,
``docs/untrusted-candidates.md``):

1. copy the repository to a private workspace (:mod:`.workspace`), at
   ``base_commit`` when the instance names one;
2. drop the candidate's changes to protected files (:mod:`.protect`), apply the
   rest, and put back any protected file the applied patch changed anyway;
3. reset the test patch's files and apply the test patch: this is the pristine
   copy, which no test run ever writes;
4. run pytest on the listed tests' files (:mod:`.testrun`) in a sandbox
   (:mod:`.sandbox`): a root of its own where only an overlay over the pristine
   copy is writable, the interpreter started through :mod:`.boot` (recorder and
   audit hook before anything of the repository);
5. grade the outcomes with :mod:`.scorer`. When the run gave no verdict or showed
   signals of reaching its judge, a *control run* (the gold patch with the test
   patch, or the base with the test patch, in a fresh copy under the same checks)
   decides: a signal the control shows too is the repository's own; one it does
   not show, or a broken run the control does not break, is the candidate's
   (``solver``, not resolved); a control run without a verdict makes it an
   infrastructure failure (``setup`` or ``verifier``), never counted against the
   candidate.
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
from typing import Any, Callable, Final, Mapping

from . import envelope as env
from . import liveness, protect
from .cost_ledger import DEFAULT_COMPUTE_RATE, HarnessCost, run_cost
from .instances import Instance
from .scorer import Grading, exit_status_note, grade, make_score
from .testrun import (
    MAX_OUTPUT,
    RunRecord,
    SandboxFailure,
    assess,
    confined,
    fresh,
    isolation_prefix,
    network_isolation,
    pid_isolation,
    run_process,
    run_in_container,
    run_tests,
    selection,
)
from .workspace import (
    BadInput,
    InfraFailure,
    apply_candidate,
    apply_test_patch,
    base_env,
    base_text,
    changed_files,
    git,
    import_roots,
    prepare_copy,
    revert_protected,
)

__all__ = ["BadInput", "GradeRequest", "GradeResult", "InfraFailure", "grade_candidate", "network_isolation"]

EXIT_RESOLVED, EXIT_NOT_RESOLVED, EXIT_BAD_INPUT, EXIT_INFRA = 0, 1, 2, 3
PROGRESS_AFTER: Final = 5.0  # seconds of a test run before progress is told (short runs stay quiet)
PROGRESS_EVERY: Final = 10.0  # then at most one line this often
MAX_PATCH_BYTES: Final = 16 << 20  # SWE-bench patches are kilobytes; the grader holds about 3 copies of one
AUDIT_KINDS: Final = {"code_replaced": "code_replaced",
                      "test_file_written": "protected_file_modified", "objects_walked": "objects_walked"}


@dataclass(frozen=True)
class GradeRequest:
    repo: Path | None  # None in container mode: the image holds the repository (at ``repo_dir``)
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
    hidden: tuple[Path, ...] = ()  # paths the test process must never see (the ledger, output files)
    engine: str | None = None  # container mode: "podman", "docker" or "auto", with ``image``
    image: str | None = None  # the image to grade in (a name; templates are filled in by the caller)
    repo_dir: str = "/testbed"  # where the image holds the repository
    max_patch_bytes: int = MAX_PATCH_BYTES  # a larger candidate is refused unread (failure class patch_too_large)
    max_output_bytes: int = MAX_OUTPUT  # a test run writing more is stopped (failure class output_limit)
    select: bool = False  # run only the listed tests of their files (``grade --select``)
    progress: Callable[[str], None] | None = None  # told, every few seconds of a test run, how far it is


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


WORKSPACE_PREFIX: Final = "objective-score-"
OWNER_FILE: Final = ".owner"
_SWEPT: set[str] = set()


def sweep_workspaces(folder: str | Path | None = None) -> list[Path]:
    """Remove the workspaces that gradings killed outright (SIGKILL, a power cut) left in ``folder``
    (the temporary folder by default), once per process and folder; returns what was removed.

    A workspace is removed only when its owner file's lock is free (:mod:`.liveness`): its grading
    is proven over. A workspace with no owner file (kept with ``--keep``, or made by an older
    version) is never touched."""
    base = Path(folder) if folder is not None else Path(tempfile.gettempdir())
    if str(base) in _SWEPT:
        return []
    _SWEPT.add(str(base))
    removed = []
    try:
        candidates = sorted(base.glob(WORKSPACE_PREFIX + "*"))
    except OSError:
        return []
    for workspace in candidates:
        if liveness.probe(workspace / OWNER_FILE) == liveness.DEAD:
            fresh(workspace)
            removed.append(workspace)
    return removed


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
        self.workspace = Path(tempfile.mkdtemp(prefix=WORKSPACE_PREFIX, dir=request.workdir))
        self.owner = liveness.hold(self.workspace / OWNER_FILE)  # a killed grading's workspace is swept by the next
        self.engine = ""  # container mode: the engine found for ``request.engine``
        self.copy = self.workspace / "repo"
        self.baseline = ""
        self.started = time.perf_counter()
        self.mark = self.started
        self.steps: list[dict[str, Any]] = []
        self.runs: list[RunRecord] = []
        self.integrity: list[dict[str, str]] = []
        self.applied = False
        self.patched: dict[str, bytes] = {}  # the candidate's Python files as applied, read before any test ran
        self.build: tuple[bool, str | None] = (False, "the candidate was not applied")
        self.reruns: list[dict[str, Any]] = []
        self.runner: dict[str, Any] = {
            "repo": str(request.repo) if request.repo is not None else f"{request.image}:{request.repo_dir}",
            "base_commit": self.instance.base_commit,
            "python": python,
            "timeout": request.timeout,
            "network": "allowed" if request.network else ("unshared" if network_isolation() else "not isolated: unshare unavailable"),
            "processes": "own PID namespace" if pid_isolation() else "process group only: unshare --pid unavailable",
            "test_patch": {"source": "file" if request.test_patch is not None else ("instance" if test_patch else None),
                           "files": test_patch_files},
            "scope": "listed tests only (--select)" if request.select else "every test of the listed tests' files",
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

    @property
    def source(self) -> Path:
        """The repository graded: ``--repo``, or the tree exported from the image (container mode)."""
        if self.request.image is None:
            assert self.request.repo is not None
            return self.request.repo
        exported = self.workspace / "image-repo"
        if not exported.exists():
            from . import container

            exported.mkdir()
            try:
                container.export_repository(self.engine, self.request.image, self.request.repo_dir, exported)
            except container.ContainerError as exc:
                raise InfraFailure("setup", f"the image's repository could not be exported: {exc}") from None
        return exported

    def _watch(self, label: str) -> Callable[[int], None] | None:
        """``request.progress`` told, from the fifth second of a run on, how many tests it finished."""
        say = self.request.progress
        if say is None:
            return None
        started = time.monotonic()
        told = [-PROGRESS_EVERY]

        def tell(done: int) -> None:
            seconds = time.monotonic() - started
            if seconds >= PROGRESS_AFTER and seconds - told[0] >= PROGRESS_EVERY:
                told[0] = seconds
                say(f"{self.instance.instance_id}: {label} run: {done} test(s) finished, {seconds:.0f} s")

        return tell

    def run(self, label: str, test_files: list[str], shuffle_seed: int | None = None, copy: Path | None = None) -> RunRecord:
        scope: dict[str, Any] = {"progress": self._watch(label)}
        if self.request.select:
            scope["select"] = selection(list(self.instance.listed), self.request.compat)
        if self.request.image is not None:
            from . import container

            try:
                record = run_in_container(engine=self.engine, image=self.request.image, repo_dir=self.request.repo_dir,
                                          copy=copy or self.copy, workspace=self.workspace, python=self.python,
                                          test_files=test_files, timeout=self.request.timeout,
                                          network=self.request.network, label=label, shuffle_seed=shuffle_seed,
                                          guarded=self.guarded, max_output=self.request.max_output_bytes, **scope)  # fmt: skip
            except container.ContainerError as exc:
                raise InfraFailure("setup", f"the {label} run's container: {exc}") from None
            self.runs.append(record)
            self.runner["isolation"] = record.isolation
            return record
        try:
            record = run_tests(copy=copy or self.copy, original=self.source, workspace=self.workspace,
                               python=self.python, test_files=test_files, timeout=self.request.timeout,
                               network=self.request.network, label=label, shuffle_seed=shuffle_seed,
                               keep_state=label.startswith("rerun-"), guarded=self.guarded,
                               hidden=self.request.hidden, max_output=self.request.max_output_bytes, **scope)  # fmt: skip
        except SandboxFailure as exc:
            raise InfraFailure("setup", f"the sandbox could not be set up for the {label} run: {exc}") from None
        self.runs.append(record)
        self.runner["isolation"] = record.isolation
        return record

    def existed(self, path: str) -> bool:
        """Whether ``path`` (a file or a folder) exists at the copy's baseline."""
        return git(self.copy, "cat-file", "-e", f"{self.baseline}:{path}", check=False).returncode == 0

    def roots(self) -> list[str]:
        """The copy's import roots below its top, repository-relative (``lib/`` in ``lib/pkg/``)."""
        return [os.path.relpath(r, self.copy) for r in import_roots(self.copy)[0] if os.path.relpath(r, self.copy) != "."]

    def signals(self, run: RunRecord) -> list[dict[str, str]]:
        """Everything in a run that could be the candidate reaching its judge, as integrity flags,
        with the run's copy named ``<copy>`` so that the control run can show the very same ones."""
        found: list[dict[str, str]] = []
        for nodeid, record in run.collector.records.items():
            found += [{"kind": kind, "detail": f"{nodeid} ({when})"} for kind, when in record.flags]
        session = run.session or {}
        found += [{"kind": "pytest_internals_patched", "detail": item} for item in session.get("patched_internals") or []]
        unknown = sorted(f for f in session.get("hook_files") or [] if f.startswith("<unknown origin>"))
        found += [{"kind": "hook_of_unknown_origin", "detail": item} for item in unknown]
        found += [{"kind": AUDIT_KINDS.get(s["kind"], s["kind"]), "detail": s["detail"]} for s in run.signals]
        found += [{"kind": "protected_file_modified", "detail": change} for change in run.writes]
        copies = sorted({p for p in (run.copy_path, str(self.copy.resolve()), str(self.copy)) if p}, key=len, reverse=True)
        for signal in found:
            for path in copies:
                signal["detail"] = signal["detail"].replace(path, "<copy>")
        unique = {(s["kind"], s["detail"]): s for s in found}
        return list(unique.values())

    # -------------------------------------------------------------- the steps

    def grade(self) -> GradeResult:
        if len(self.request.patch) > self.request.max_patch_bytes:
            self.runner["apply"] = {"strategy": None, "attempts": [], "dropped": [],
                                    "error": f"the candidate patch is larger than {self.request.max_patch_bytes} bytes "
                                    "(--max-patch-size): refused unread"}  # fmt: skip
            return self.unapplied("patch_too_large")
        self.baseline = prepare_copy(self.source, self.copy, self.instance.base_commit)
        self.step("copy")
        text = self.request.patch.decode("utf-8", errors="surrogateescape")
        try:
            protection = protect.filter_candidate(text, self.guarded, existed_at_base=self.existed, roots=self.roots())
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
        run = self.run("candidate", test_files)
        self.step("tests")
        self.runner["run"] = run.to_dict()
        grading, reason, failure = assess(run, self.instance, self.request.compat, self.copy, self.request.timeout)
        if run.forged is not None:
            self.integrity.append({"kind": "record_forged", "detail": run.forged})
        signals = self.signals(run)
        if signals or reason is not None:
            return self.calibrate(run, grading, reason, failure, signals, test_files)
        self.perturbed_reruns(test_files)
        return self.verdict(grading, run.session or {}, run)

    # -------------------------------------------------------------- scorecard inputs

    def read_python(self, paths: list[str]) -> dict[str, bytes]:
        """The changed Python files' bytes, as applied: kept as bytes (what the checks parse), and
        decoded only when the scorecard asks for one's text (:meth:`patched_text`)."""
        texts = {}
        for path in paths:
            file = self.copy / path
            if path.endswith(".py") and file.is_file():
                texts[path] = file.read_bytes()
        return texts

    def patched_text(self, path: str) -> str | None:
        """An applied Python file's text, for the scorecard (None: not one of the candidate's)."""
        data = self.patched.get(path)
        return None if data is None else data.decode("utf-8", "surrogateescape")

    def build_check(self) -> tuple[bool, str | None]:
        """``patching.build``: the instance's ``build_command`` exits 0, or every patched Python
        module compiles. Runs right after the candidate is applied, before any test."""
        command = self.instance.get("build_command")
        if isinstance(command, str) and command.strip():
            code, timed_out, cpu, log = self.confined_build(["/bin/sh", "-c", command])
            self.runs.append(RunRecord(command=["/bin/sh", "-c", command], label="build", cpu=cpu))
            self.step("build")
            if code == 0:
                return True, None
            tail = log.read_text(encoding="utf-8", errors="replace")[-300:]
            return False, f"build_command {'timed out' if timed_out else f'exited {code}'}: {tail.strip()}"
        from .symbols import python_check

        for path, data in sorted(self.patched.items()):
            _, compiles, error = python_check(path, data)
            if not compiles:
                return False, error
        return True, None

    def confined_build(self, command: list[str]) -> tuple[int | None, bool, float, Path]:
        """The instance's build command, in the sandbox (or a container of the image), writing into the
        pristine copy (what it builds is part of the state every test run starts from); nothing else
        is in its reach."""
        from . import sandbox

        if self.request.image is not None:
            return self.container_build(command)

        place = self.workspace / "runs" / "build"
        place.mkdir(parents=True, exist_ok=True)
        home = self.workspace / "build-home"
        home.mkdir(exist_ok=True)
        log = self.workspace / "build.log"
        workdir = str(self.workspace.parent)
        mode, why = sandbox.probe(workdir)
        launch, _, (reader, writer) = confined(
            command, mode="none" if mode == "none" else "namespaces-copy", why=why, place=place, cwd=self.copy,
            network=self.request.network, python=self.python, writable=[(home, home), (self.copy, self.copy)],
            hidden=[self.source, *self.request.hidden],
        )  # fmt: skip
        if mode == "none":
            launch = [*isolation_prefix(self.request.network), *command]
        try:
            code, timed_out, _, cpu = run_process(launch, cwd=self.copy if mode == "none" else Path("/"),
                                                  env={**base_env(), "HOME": str(home)},
                                                  timeout=min(self.request.timeout, 900.0), log=log,
                                                  pass_fds=(writer,) if writer >= 0 else ())  # fmt: skip
        finally:
            if writer >= 0:
                os.close(writer)
        if reader >= 0:
            ok, failure = sandbox.read_status(reader)
            shutil.rmtree(place, ignore_errors=True)
            if not ok:  # this machine cannot give the sandbox: the next mode, as for the test runs
                sandbox.demote(workdir, mode, failure)
                return self.confined_build(command)
        shutil.rmtree(place, ignore_errors=True)
        return code, timed_out, cpu, log

    def container_build(self, command: list[str]) -> tuple[int | None, bool, float, Path]:
        from . import container

        log = self.workspace / "build.log"
        tools = self.workspace / "build-tools"
        tools.mkdir(exist_ok=True)
        name = f"objective-build-{os.getpid()}-{self.workspace.name[-8:]}"
        launch = container.run_command(self.engine, self.request.image or "", command, name=name, copy=self.copy,
                                       repo_dir=self.request.repo_dir, tools=tools, environ={},
                                       network=self.request.network, record=None, preserve_fd=False)  # fmt: skip
        try:
            code, timed_out, _, cpu = run_process(launch, cwd=self.workspace, env=base_env(),
                                                  timeout=min(self.request.timeout, 900.0), log=log)  # fmt: skip
        finally:
            container.remove(self.engine, name)
        return code, timed_out, cpu, log

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
            candidate = touched(self.request.patch, base, self.patched_text)  # bytes: a large patch is not decoded whole
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
        parse_errors = [e for _, (ok, _, e) in ((p, python_check(p, d)) for p, d in sorted(self.patched.items())) if not ok]
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

    def calibrate(self, run: RunRecord, grading: Grading, reason: str | None, failure: str,
                  signals: list[dict[str, str]], test_files: list[str]) -> GradeResult:
        """The candidate's run gave no verdict, or showed signals of reaching its judge: the control
        run (the gold patch, or the base, with the test patch, in a fresh copy under the same checks)
        says whose they are. A signal the control run shows too is the repository's own behaviour
        (pytest's suite patches pytest, tests write their own modules) and never counts against the
        candidate; one it does not show makes the candidate's outcomes untrusted (not resolved,
        flagged, disposition invalid). When the control run itself gives no verdict, nothing can be
        told about the candidate: an infrastructure failure."""
        control, control_reason, control_failure, control_signals = self.control_run(test_files)
        self.step("control_run")
        if control_reason is not None:
            why = reason or "signals the control run could not be compared with: " + ", ".join(
                f"{s['kind']} {s['detail']}" for s in signals[:3])
            raise InfraFailure("setup" if "setup" in (failure, control_failure) else control_failure,
                               f"{why}; the control run fails too ({control_reason})")  # fmt: skip
        shown = {(s["kind"], s["detail"]) for s in control_signals}
        own = [s for s in signals if (s["kind"], s["detail"]) in shown]
        theirs = [s for s in signals if (s["kind"], s["detail"]) not in shown]
        if own:
            self.runner["calibrated_signals"] = {
                "note": "shown by the control run too: the repository's own behaviour, not counted against the candidate",
                "signals": own[:50], "count": len(own)}  # fmt: skip
        if theirs:
            self.integrity += theirs[:50]
            reason = reason or "the candidate's run shows what the control run does not: " + "; ".join(
                f"{s['kind']}: {s['detail']}" for s in theirs[:3])
        if reason is None:
            self.perturbed_reruns(test_files)
            return self.verdict(grading, run.session or {}, run)
        # The candidate broke or reached a run that works without it: none of its outcomes is trusted.
        self.runner["failure_detail"] = f"{reason} (the control run is clean)"
        result = self.verdict(grade(self.instance, {}, self.request.compat), control.session or {}, control,
                              failure_class="output_limit" if run.flooded is not None else None)  # fmt: skip
        result.envelope["candidate_no_verdict_reason"] = reason
        return result

    def control_run(self, test_files: list[str]) -> tuple[RunRecord, str | None, str, list[dict[str, str]]]:
        """The gold patch (or the bare base) with the test patch, in a fresh copy of the user's
        repository (never one a run of the candidate's has touched): does the environment work, and
        which signals does the repository show by itself?"""
        copy = self.workspace / "control" / "repo"
        copy.parent.mkdir()
        baseline = prepare_copy(self.source, copy, self.instance.base_commit)
        kind = "base"
        gold = self.instance.patch
        if gold and gold.strip():
            gold_file = self.workspace / "gold.diff"
            gold_file.write_bytes(gold.encode("utf-8", "surrogateescape"))
            strategy, _ = apply_candidate(copy, baseline, gold_file, gold)
            kind = "gold" if strategy else "base (the gold patch does not apply)"
        if self.test_patch:
            apply_test_patch(copy, baseline, self.test_patch, self.test_patch_files, self.workspace)
        run = self.run("control", test_files, copy=copy)
        _, reason, failure = assess(run, self.instance, self.request.compat, copy, self.request.timeout)
        signals = self.signals(run)  # the control copy is its run's copy_path: named <copy> there
        self.runner["control_run"] = {"kind": kind, **run.to_dict(), "no_verdict_reason": reason,
                                      "signals": signals[:50]}  # fmt: skip
        return run, reason, failure, signals

    # -------------------------------------------------------------- endings

    def verdict(self, grading: Grading, session: Mapping[str, Any], run: RunRecord,
                failure_class: str | None = None) -> GradeResult:  # fmt: skip
        score = make_score(grading, self.patch_ref, self._graded_by(session), int(time.time()))
        failure_class = failure_class or ("none" if score.resolved == "resolved" else "solver")
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

    def unapplied(self, failure_class: str = "patch_apply") -> GradeResult:
        """A candidate that does not apply: not resolved, no test ran, failure class patch_apply."""
        grading = grade(self.instance, {}, self.request.compat)
        by = env.graded_by(mode="runner", pytest_version="n/a", python="n/a", platform=sys.platform,
                           timeout=self.request.timeout, compat=self.request.compat)  # fmt: skip
        score = make_score(grading, self.patch_ref, by, int(time.time()))
        self.runner["failure_class"] = failure_class
        self.runner["failure_detail"] = self.runner["apply"].get("error") or "no strategy applied the candidate patch"
        self.runner["steps"] = self.steps
        envelope = env.build_envelope(
            instance_id=self.instance.instance_id, score=score, grading=grading, no_verdict=None, session={},
            extra={"runner": self.runner, **self.cost(), "patch_ref": self.patch_ref, "digests": self.digests(None, score.to_dict())},
            patch_applied=False,
        )  # fmt: skip
        if failure_class != "patch_too_large":  # never parse what was refused unread
            self.scorecard(envelope)
        return GradeResult(envelope, EXIT_NOT_RESOLVED, failure_class)

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
    engine = None
    if request.image is not None:
        from . import container

        try:
            engine = container.detect_engine(request.engine)
        except container.ContainerError as exc:
            raise BadInput(f"--engine: {exc}") from None
        if not container.image_exists(engine, request.image):
            raise BadInput(f"--image {request.image}: no such image for {engine} (nothing is pulled: build or load it first)")
        python = request.python  # a path inside the image
    elif request.repo is None or not request.repo.is_dir():
        raise BadInput(f"--repo {request.repo}: not a directory")
    else:
        python = resolve_python(request.python)
    check_test_ids(instance)
    test_patch = request.test_patch if request.test_patch is not None else instance.test_patch
    try:
        test_patch_files = protect.patch_files(test_patch) if test_patch else []
    except protect.PatchParseError as exc:
        raise BadInput(f"the test patch cannot be parsed: {exc}") from None
    sweep_workspaces(request.workdir)
    grading = _Grading(request, python, test_patch, test_patch_files)
    grading.engine = engine or ""
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
        if request.keep:  # kept: no owner file, so no later sweep takes it
            grading.runner["workspace"] = str(grading.workspace)
            liveness.release(grading.owner, grading.workspace / OWNER_FILE)
        else:
            fresh(grading.workspace)
            liveness.release(grading.owner)
