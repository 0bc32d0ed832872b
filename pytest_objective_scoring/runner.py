"""The executed-test runner (spec 3.1): one grading of a candidate patch, read as a pipeline.

:func:`grade_candidate` checks the request (:func:`.grade_task.check_request`), then
:func:`_pipeline` runs the stages in order, each a small object that takes what the stage before
gave and calls down into the modules that do the work (which never call back up):

1. :class:`Prepare` -- the repository copied into a private workspace, at ``base_commit`` when the
   instance names one (:mod:`.workspace`; exported from the image first in container mode):
   a :class:`Copy`.
2. :class:`Apply` -- the candidate's changes to protected files dropped (:mod:`.protect`), the
   rest applied, any protected file the applied patch changed anyway put back, the build checked;
   then the test patch's files reset and the test patch applied. This is the pristine copy, which
   no test run ever writes. An :class:`Applied`, and the listed tests' files to run.
3. :class:`Run` -- pytest on those files (:mod:`.testrun`) in a sandbox (:mod:`.sandbox`: a root
   of its own where only an overlay over the pristine copy is writable, the interpreter started
   through :mod:`.boot`), or in a fresh container of the image; the control run and the re-runs
   when the score asks for them. A :class:`~.testrecord.RunRecord` each.
4. :class:`Score` -- a run's outcomes graded (:mod:`.scorer` through :func:`.testrecord.assess`)
   and its signals found. When the candidate's run gave no verdict or showed signals of reaching
   its judge, the *control run* (the gold patch, or the base, with the test patch, in a fresh copy
   under the same checks) decides: a signal the control shows too is the repository's own; one it
   does not show, or a broken run the control does not break, is the candidate's (``solver``, not
   resolved); a control run without a verdict makes it an infrastructure failure (``setup`` or
   ``verifier``), never counted against the candidate. A :class:`Verdict`.
5. :class:`Record` -- the envelope (:mod:`.envelope`): the Score, the costs, the digests and the
   scorecard. The :class:`GradeResult`.

Every stage writes what it did into the :class:`~.grade_task.Journal` (the envelope's ``runner``
section, the steps with their seconds, every run for the cost, the integrity flags), which the
record reads.
Endings other than a verdict: a candidate refused unread (``patch_too_large``), one that does not
apply (``patch_apply``), protected files the patch changed that cannot be put back (not resolved,
flagged), and an :class:`InfraFailure` raised by any stage (exit status 3). ``docs/runner.md`` and
``docs/untrusted-candidates.md`` say what each stage guarantees.

Why over 800 lines: the five stages are one pipeline read top to bottom, and each runner's variant
(pytest, the Python programs, another language's command: :mod:`.command_run`) sits in the stage it
changes, so that a stage is read whole; the work itself is in the modules the stages call.
"""

from __future__ import annotations

import hashlib
import sys
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Final, Iterable, Mapping

from . import envelope as env
from . import protect
from .cost_ledger import DEFAULT_COMPUTE_RATE, HarnessCost, run_cost
from .grade_task import Journal, Task, check_request, check_test_ids, resolve_python
from .instances import Instance
from .processes import network_isolation
from .runner_choice import id_targets
from .scorer import Grading, exit_status_note, grade, make_score
from .testrecord import RunRecord, assess, signals
from .testrun import (
    MAX_OUTPUT,
    SandboxFailure,
    build_in,
    build_in_container,
    config_file,
    run_in_container,
    run_tests,
    selection,
)
from .workspace import (
    OWNER_FILE,
    WORKSPACE_PREFIX,
    BadInput,
    InfraFailure,
    TestPatchBlocked,
    Workspace,
    apply_candidate,
    apply_test_patch,
    base_text,
    changed_files,
    existed_at,
    over_candidate,
    patch_applies,
    prepare_copy,
    revert_protected,
    roots_below,
    sweep_workspaces,
)

__all__ = [
    "OWNER_FILE",
    "WORKSPACE_PREFIX",
    "BadInput",
    "GradeRequest",
    "GradeResult",
    "InfraFailure",
    "check_test_ids",
    "grade_candidate",
    "network_isolation",
    "resolve_python",
    "sweep_workspaces",
]

EXIT_RESOLVED, EXIT_NOT_RESOLVED, EXIT_BAD_INPUT, EXIT_INFRA = 0, 1, 2, 3
PROGRESS_AFTER: Final = 5.0  # seconds of a test run before progress is told (short runs stay quiet)
PROGRESS_EVERY: Final = 10.0  # then at most one line this often
MAX_PATCH_BYTES: Final = 16 << 20  # SWE-bench patches are kilobytes; the grader holds about 3 copies of one


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
    runner: str | None = None  # the test runner, over SWE-bench's table (``--runner``, an environments entry)
    test_cmd: str | None = None  # its command line, likewise (``--test-cmd``)
    command_source: str = "--runner"  # where ``runner`` and ``test_cmd`` came from, for messages
    against_gold: str | None = None  # a resolved candidate's wider tests against gold's (:mod:`.against_gold` scope)


@dataclass
class GradeResult:
    envelope: dict[str, Any]
    exit_code: int
    failure_class: str

    @property
    def score(self) -> dict[str, Any] | None:
        return self.envelope.get("score")


def grade_candidate(request: GradeRequest) -> GradeResult:
    """Grade one candidate patch. Raises :class:`BadInput` for bad requests only:
    every failure of the candidate or of the environment is a result."""
    task = check_request(request)
    sweep_workspaces(request.workdir)
    workspace = Workspace(request.workdir)
    journal = Journal(task)
    record = Record(task, journal)
    try:
        return _not_checked(request, _pipeline(task, workspace.path, journal, record))
    except InfraFailure as exc:
        return _not_checked(request, record.infrastructure(exc.failure_class, str(exc)))
    except BadInput:
        raise
    except Exception as exc:  # an error of the grader or the machine: never the candidate's failure
        detail = f"internal error: {type(exc).__name__}: {exc}"
        result = record.infrastructure("verifier", detail)
        result.envelope["runner"]["traceback"] = traceback.format_exc()[-4000:]
        return _not_checked(request, result)
    finally:
        if request.keep:  # kept: no owner file, so no later sweep takes it
            journal.runner["workspace"] = str(workspace.path)
        workspace.close(request.keep)


def _against_gold(runs: Run, verdict: Verdict, test_files: list[str]) -> dict[str, Any]:
    """``Run.against_gold``; its runs failing for the machine (or the grader) leave the check incomplete,
    never the verdict, which the listed tests already gave."""
    from .against_gold import section

    try:
        return runs.against_gold(verdict, test_files)
    except InfraFailure as exc:
        return section(str(runs.task.request.against_gold), "incomplete", reason=f"infrastructure ({exc.failure_class}): {exc}")
    except Exception as exc:  # the grader's error: said, and the check unknown
        return section(str(runs.task.request.against_gold), "incomplete",
                       reason=f"internal error: {type(exc).__name__}: {exc}")  # fmt: skip


def _not_checked(request: GradeRequest, result: GradeResult) -> GradeResult:
    """With ``against_gold`` asked for, every ending carries the section: a grading that ended before
    the check says why it was not made (not resolved: the figure is False; no verdict: unknown)."""
    if request.against_gold is None or "against_gold" in result.envelope:
        return result
    from .against_gold import section

    score = result.score
    if score is None:
        reason, resolved = "the grading gave no verdict", True
    else:
        reason, resolved = f"the candidate is {score['resolved'].replace('_', ' ')}", score["resolved"] == "resolved"
    result.envelope["against_gold"] = section(request.against_gold, "not_checked", reason=reason, resolved=resolved)
    return result


def _pipeline(task: Task, workspace: Path, journal: Journal, record: Record) -> GradeResult:
    """The stages in order, each taking what the one before gave. An ending other than a verdict
    returns early; an infrastructure failure raises :class:`InfraFailure` from any stage."""
    if len(task.request.patch) > task.request.max_patch_bytes:
        return record.refused()  # never copied, parsed or applied

    # 1. prepare the copy, at base_commit
    prepare = Prepare(task, workspace)
    copy = prepare.copy(workspace / "repo")
    journal.step("copy")

    # 2. apply: the candidate without its protected changes, protected files put back, the build
    #    checked, then the test patch: the pristine copy
    apply = Apply(task, copy, workspace, journal)
    applied = apply.candidate()
    if applied.tampered is not None:
        return record.tampered(copy, applied.tampered)
    if not applied.applied:  # the control: when the task's own test patch fails there too, the copy is wrong
        if task.test_patch and patch_applies(copy.path, copy.baseline, task.test_patch) is False:
            raise InfraFailure("setup", "the test patch does not apply to the base either: the task or --repo is "
                               "wrong, not the candidate")  # fmt: skip
        return record.unapplied("patch_apply", copy)
    runs = Run(task, prepare, copy, workspace, journal)
    applied = replace(applied, build=apply.build(applied, runs))
    if task.spec is not None and not applied.build[0]:  # another language: no test runs on a copy that does not build
        runs.control_build(str(applied.build[1]))  # InfraFailure when the gold patch does not build either
        return record.unbuilt(str(applied.build[1]))
    try:
        test_files = apply.test_patch()
    except TestPatchBlocked as exc:  # the candidate put something where the test patch writes
        return record.tampered(copy, str(exc))

    # 3. run the tests in the sandbox, and 4. score the run; a run without a verdict, or with
    #    signals of reaching its judge, is compared with the control run
    candidate = runs.candidate(test_files)
    score = Score(task, copy, journal)
    judged = score.candidate(candidate)
    if judged.needs_control:
        control = score.control(runs.control(test_files))
        journal.step("control_run")
        verdict = score.calibrate(judged, control)
    else:
        verdict = Verdict(judged.grading, candidate)
    reruns = score.reruns(runs.reruns(test_files)) if verdict.untrusted is None else []  # --reruns N
    # --against-gold: a resolved candidate's wider tests, under it and under gold
    beyond = _against_gold(runs, verdict, test_files) if task.request.against_gold is not None else None

    # 5. record the envelope
    return record.verdict(verdict, copy, applied, reruns, beyond)


# ------------------------------------------------------------------ 1. prepare the copy


@dataclass(frozen=True)
class Copy:
    """A copy of the repository in the workspace and the commit it starts from."""

    path: Path
    baseline: str

    def existed(self, path: str) -> bool:
        """Whether ``path`` (a file or a folder) exists at the copy's baseline."""
        return existed_at(self.path, self.baseline, path)


class Prepare:
    """Stage 1: the repository graded, copied into the workspace at ``base_commit``; the control
    run gets a fresh copy the same way."""

    def __init__(self, task: Task, workspace: Path) -> None:
        self.task = task
        self.workspace = workspace

    @property
    def source(self) -> Path:
        """The repository graded: ``--repo``, or the tree exported from the image (container mode)."""
        request = self.task.request
        if request.image is None:
            assert request.repo is not None
            return request.repo
        exported = self.workspace / "image-repo"
        if not exported.exists():
            from . import container

            exported.mkdir()
            try:
                container.export_repository(self.task.engine, request.image, request.repo_dir, exported)
            except container.ContainerError as exc:
                raise InfraFailure("setup", f"the image's repository could not be exported: {exc}") from None
        return exported

    def copy(self, dest: Path) -> Copy:
        return Copy(dest, prepare_copy(self.source, dest, self.task.instance.base_commit))


# ------------------------------------------------------------------ 2. apply


@dataclass(frozen=True)
class Applied:
    """Stage 2's answer: whether the candidate is in the copy, and what the scorecard reads of it."""

    applied: bool = False
    patched: Mapping[str, bytes] = field(default_factory=dict)  # its Python files as applied, read before any test ran
    build: tuple[bool, str | None] = (False, "the candidate was not applied")
    tampered: str | None = None  # why: protected files the patch changed could not be put back

    def text(self, path: str) -> str | None:
        """An applied Python file's text, for the scorecard (None: not one of the candidate's)."""
        data = self.patched.get(path)
        return None if data is None else data.decode("utf-8", "surrogateescape")


NOT_APPLIED: Final = Applied()


class Apply:
    """Stage 2: the candidate into the copy (protected changes dropped, protected files put back),
    its build checked, then the test patch: the pristine copy every test run starts from."""

    def __init__(self, task: Task, copy: Copy, workspace: Path, journal: Journal) -> None:
        self.task = task
        self.copy = copy
        self.workspace = workspace
        self.journal = journal

    def candidate(self) -> Applied:
        """Drop the candidate's changes to protected files, apply the rest, and put back any
        protected file the applied patch changed anyway (``runner.apply`` says what was done)."""
        guarded, copy, runner = self.task.guarded, self.copy, self.journal.runner
        text = self.task.request.patch.decode("utf-8", errors="surrogateescape")
        try:
            protection = protect.filter_candidate(text, guarded, existed_at_base=copy.existed, roots=roots_below(copy.path),
                                                  language=self.task.language)  # fmt: skip
        except protect.PatchParseError as exc:
            runner["apply"] = {"strategy": None, "attempts": [], "dropped": [], "error": f"not a unified diff: {exc}"}
            return NOT_APPLIED
        before = protect.snapshot(copy.path, guarded, self.task.language)
        candidate_file = self.workspace / "candidate.diff"
        candidate_file.write_bytes(protection.patch.encode("utf-8", "surrogateescape"))
        strategy, attempts = apply_candidate(copy.path, copy.baseline, candidate_file, protection.patch)
        dropped = list(protection.dropped)
        section: dict[str, Any] = {"strategy": strategy, "attempts": attempts, "kept": list(protection.kept)}
        runner["apply"] = section
        if strategy is None:
            section["dropped"] = [d.to_dict() for d in dropped]
            self.journal.step("apply")
            return NOT_APPLIED
        sneaked, stuck = revert_protected(copy.path, copy.baseline, before, guarded, self.task.language)
        dropped += sneaked
        section["dropped"] = [d.to_dict() for d in dropped]
        if stuck:
            return Applied(tampered=f"the patch changed protected files that could not be put back: {', '.join(stuck)}")
        changed = changed_files(copy.path, copy.baseline)
        section["changed"] = changed
        patched = self.read_python(changed)
        self.journal.step("apply")
        return Applied(applied=True, patched=patched)

    def read_python(self, paths: list[str]) -> dict[str, bytes]:
        """The changed Python files' bytes, as applied: kept as bytes (what the checks parse), and
        decoded only when the scorecard asks for one's text (:meth:`Applied.text`)."""
        texts = {}
        for path in paths:
            file = self.copy.path / path
            if path.endswith(".py") and file.is_file():
                texts[path] = file.read_bytes()
        return texts

    def build(self, applied: Applied, runs: Run) -> tuple[bool, str | None]:
        """``patching.build``: the instance's ``build_command`` exits 0 (run in the sandbox, writing
        the copy), or every patched Python module compiles. Right after the candidate, before any test."""
        command = self.task.instance.get("build_command")
        if isinstance(command, str) and command.strip():
            code, timed_out, log = runs.build(["/bin/sh", "-c", command])
            self.journal.step("build")
            if code == 0:
                return True, None
            tail = log.read_text(encoding="utf-8", errors="replace")[-300:]
            return False, f"build_command {'timed out' if timed_out else f'exited {code}'}: {tail.strip()}"
        from .symbols import python_check

        for path, data in sorted(applied.patched.items()):
            _, compiles, error = python_check(path, data)
            if not compiles:
                return False, error
        return True, None

    def test_patch(self) -> list[str]:
        """Reset the test patch's files and apply the test patch strictly (one that does not apply is
        an infrastructure failure): the pristine copy. Returns the listed tests' files it holds."""
        task, copy, runner = self.task, self.copy, self.journal.runner
        if task.spec is not None:
            if task.test_patch:
                runner["test_patch"].update(over_candidate(copy.path, copy.baseline, task.test_patch, task.guarded,
                                                           task.test_patch_files, self.workspace))  # fmt: skip
            self.journal.step("test_patch")
            return []
        if task.test_patch:
            apply_test_patch(copy.path, copy.baseline, task.test_patch, task.test_patch_files, self.workspace)
        self.journal.step("test_patch")
        if not task.command.is_pytest:
            return self.program_targets()
        test_files = [f for f in task.instance.test_files() if (copy.path / f).exists()]
        absent = [f for f in task.instance.test_files() if not (copy.path / f).exists()]
        runner["test_files"] = test_files
        if absent:
            runner["absent_test_files"] = absent
        if not test_files:
            raise InfraFailure("setup", f"none of the listed tests' files exist after the test patch: {', '.join(absent)}")
        return test_files

    def program_targets(self) -> list[str]:
        """A runner other than pytest: its targets (SWE-bench's test directives) that name a module,
        package or file of the copy after the test patch."""
        task, copy, runner = self.task, self.copy, self.journal.runner
        present = [t for t in task.targets if target_exists(copy.path, task.command.runner, t)]
        absent = [t for t in task.targets if t not in present]
        if absent:
            runner["absent_targets"] = absent
        if not present:
            raise InfraFailure("setup", f"none of the {task.command.runner} runner's targets exist after the test "
                                        f"patch: {', '.join(absent)}")  # fmt: skip
        return present


def target_exists(copy: Path, runner: str, target: str) -> bool:
    """Whether a runner's target names something of the copy: a file (SymPy's paths), or a module,
    package or class whose module is there (Django's labels below ``tests/``, unittest's from the root)."""
    if runner == "sympy":
        return (copy / target).exists()
    base = copy / "tests" if runner == "django" else copy
    parts = target.split(".")
    return any((base.joinpath(*parts[:n]).with_suffix(".py")).is_file() or (base.joinpath(*parts[:n]) / "__init__.py").is_file()
               or (runner == "django" and base.joinpath(*parts[:n]).is_dir()) for n in range(len(parts), 0, -1))


# ------------------------------------------------------------------ 3. run


@dataclass(frozen=True)
class Control:
    """The control run and what it ran on: ``kind`` says gold or base, ``copy`` is its fresh copy."""

    run: RunRecord
    kind: str
    copy: Path


class Run:
    """Stage 3: the candidate's code run over the pristine copy, in the sandbox (:func:`.testrun.run_tests`)
    or a fresh container of the image (:func:`.testrun.run_in_container`): the tests, the build
    command, the control run (in a fresh copy) and the re-runs. Every run is journaled (cost)."""

    def __init__(self, task: Task, prepare: Prepare, copy: Copy, workspace: Path, journal: Journal) -> None:
        self.task = task
        self.prepare = prepare
        self.copy = copy
        self.workspace = workspace
        self.journal = journal

    def candidate(self, test_files: list[str]) -> RunRecord:
        """The candidate's run (``runner.run``)."""
        run = self.tests("candidate", test_files)
        self.journal.step("tests")
        self.journal.runner["run"] = run.to_dict()
        return run

    def tests(self, label: str, test_files: list[str], shuffle_seed: int | None = None, copy: Path | None = None,
              only: list[str] | None = None) -> RunRecord:  # fmt: skip
        """pytest on ``test_files`` over ``copy`` (the pristine copy by default). ``only``: the ids to keep
        instead of the request's selection (``--select``); an empty list keeps every test (a wider run,
        which also goes on past files that fail to collect)."""
        task, request = self.task, self.task.request
        if task.spec is not None:
            from . import container
            from .command_run import run_in_image

            try:
                record = run_in_image(task.spec, engine=task.engine, image=str(request.image), repo_dir=request.repo_dir,
                                      copy=copy or self.copy.path, workspace=self.workspace, timeout=request.timeout,
                                      network=request.network, label=label, guarded=task.guarded,
                                      max_output=request.max_output_bytes)  # fmt: skip
            except container.ContainerError as exc:
                raise InfraFailure("setup", f"the {label} run's container: {exc}") from None
            self.journal.runs.append(record)
            self.journal.runner["isolation"] = record.isolation
            return record
        scope: dict[str, Any] = {"progress": self._watch(label)}
        if only is not None:
            scope["pytest_options"] = ["--continue-on-collection-errors"]
        if only:
            scope["select"] = selection(only, "strict")
        elif request.select and only is None:
            scope["select"] = selection(list(task.instance.listed), request.compat)
        if request.image is not None:
            from . import container

            try:
                record = run_in_container(engine=task.engine, image=request.image, repo_dir=request.repo_dir,
                                          copy=copy or self.copy.path, workspace=self.workspace, python=task.python,
                                          test_files=test_files, timeout=request.timeout,
                                          network=request.network, label=label, shuffle_seed=shuffle_seed,
                                          guarded=task.guarded, max_output=request.max_output_bytes,
                                          command=task.command, **scope)  # fmt: skip
            except container.ContainerError as exc:
                raise InfraFailure("setup", f"the {label} run's container: {exc}") from None
        else:
            try:
                record = run_tests(copy=copy or self.copy.path, original=self.prepare.source, workspace=self.workspace,
                                   python=task.python, test_files=test_files, timeout=request.timeout,
                                   network=request.network, label=label, shuffle_seed=shuffle_seed,
                                   keep_state=label.startswith("rerun-"), guarded=task.guarded,
                                   hidden=request.hidden, max_output=request.max_output_bytes,
                                   command=task.command, **scope)  # fmt: skip
            except SandboxFailure as exc:
                raise InfraFailure("setup", f"the sandbox could not be set up for the {label} run: {exc}") from None
        self.journal.runs.append(record)
        self.journal.runner["isolation"] = record.isolation
        return record

    def _watch(self, label: str) -> Callable[[int], None] | None:
        """``request.progress`` told, from the fifth second of a run on, how many tests it finished."""
        say = self.task.request.progress
        if say is None:
            return None
        started = time.monotonic()
        told = [-PROGRESS_EVERY]

        def tell(done: int) -> None:
            seconds = time.monotonic() - started
            if seconds >= PROGRESS_AFTER and seconds - told[0] >= PROGRESS_EVERY:
                told[0] = seconds
                say(f"{self.task.instance.instance_id}: {label} run: {done} test(s) finished, {seconds:.0f} s")

        return tell

    def build(self, command: list[str]) -> tuple[int | None, bool, Path]:
        """The instance's build command, confined as the tests are, writing the pristine copy:
        ``(exit_code, timed_out, log)``."""
        request = self.task.request
        if request.image is not None:
            code, timed_out, cpu, log = build_in_container(
                command, engine=self.task.engine, image=request.image, repo_dir=request.repo_dir, copy=self.copy.path,
                workspace=self.workspace, network=request.network, timeout=request.timeout,
            )  # fmt: skip
        else:
            code, timed_out, cpu, log = build_in(
                command, workspace=self.workspace, copy=self.copy.path, python=self.task.python,
                network=request.network, timeout=request.timeout, hidden=[self.prepare.source, *request.hidden],
            )  # fmt: skip
        self.journal.runs.append(RunRecord(command=command, label="build", cpu=cpu))
        return code, timed_out, log

    def gold(self) -> str | None:
        """The gold patch as the control applies it: for another language's instance, filtered as a
        candidate is (its changes to the judge's files dropped), so that a task whose fix needs such a
        change (a dependency added to the manifest) fails its control too: an infrastructure failure,
        never a candidate graded not resolved for what protection took from it."""
        gold = self.task.instance.patch
        if self.task.spec is None or not gold or not gold.strip():
            return gold
        try:
            return protect.filter_candidate(gold, self.task.guarded, language=self.task.language).patch
        except protect.PatchParseError:
            return gold

    def gold_copy(self, name: str) -> tuple[Path, str, str]:
        """A fresh copy of the user's repository in the workspace's folder ``name`` with the gold patch
        (:meth:`gold`) applied: ``(copy, baseline, kind)``, kind saying gold or base."""
        copy = self.workspace / name / "repo"
        copy.parent.mkdir()
        baseline = self.prepare.copy(copy).baseline
        gold = self.gold()
        if not gold or not gold.strip():
            return copy, baseline, "base"
        gold_file = self.workspace / f"{name}-gold.diff"
        gold_file.write_bytes(gold.encode("utf-8", "surrogateescape"))
        strategy, _ = apply_candidate(copy, baseline, gold_file, gold)
        return copy, baseline, "gold" if strategy else "base (the gold patch does not apply)"

    def control_build(self, why: str) -> None:
        """The candidate did not build: the gold patch (or the base) built the same way in a fresh copy
        says whose that is. When it does not build either, the environment cannot build the task: an
        infrastructure failure (``setup``), never the candidate's."""
        request, task = self.task.request, self.task
        copy, _, kind = self.gold_copy("control-build")
        command = ["/bin/sh", "-c", str(task.instance.get("build_command"))]
        code, timed_out, cpu, log = build_in_container(
            command, engine=task.engine, image=str(request.image), repo_dir=request.repo_dir, copy=copy,
            workspace=self.workspace / "control-build", network=request.network, timeout=request.timeout,
        )  # fmt: skip
        self.journal.runs.append(RunRecord(command=command, label="control-build", cpu=cpu))
        self.journal.step("control_build")
        if code != 0:
            tail = log.read_text(encoding="utf-8", errors="replace")[-300:].strip()
            raise InfraFailure("setup", f"the candidate does not build ({why}), and the gold patch does not build in "
                               f"this image either ({'timed out' if timed_out else f'exit {code}'}: {tail})")  # fmt: skip
        self.journal.runner["control_build"] = {"kind": kind, "exit_code": code}

    def gold_with_tests(self, name: str) -> tuple[Path, str]:
        """A fresh gold copy (:meth:`gold_copy`) with the task's test patch: ``(copy, kind)``."""
        task = self.task
        copy, baseline, kind = self.gold_copy(name)
        if task.test_patch and task.spec is not None:
            over_candidate(copy, baseline, task.test_patch, task.guarded, task.test_patch_files, self.workspace)
        elif task.test_patch:
            apply_test_patch(copy, baseline, task.test_patch, task.test_patch_files, self.workspace)
        return copy, kind

    def control(self, test_files: list[str]) -> Control:
        """The gold patch (or the bare base) with the test patch, in a fresh copy of the user's
        repository (never one a run of the candidate's has touched), run under the same checks."""
        copy, kind = self.gold_with_tests("control")
        return Control(self.tests("control", test_files, copy=copy), kind, copy)

    def against_gold(self, verdict: Verdict, test_files: list[str]) -> dict[str, Any]:
        """``--against-gold SCOPE`` (:mod:`.against_gold`): for a resolved candidate, the scope's tests
        under gold (a fresh gold copy with the test patch) and under the candidate (its pristine copy),
        then the tests that regressed run again, alone, under both: the envelope's ``against_gold``."""
        from . import against_gold as ag

        task, scope = self.task, str(self.task.request.against_gold)
        grading = verdict.grading
        resolved = verdict.untrusted is None and all(g.verdict == "satisfied" for g in (grading.fail_to_pass, grading.pass_to_pass))
        if not resolved:
            why = "the candidate's run gave no trusted verdict" if verdict.untrusted else "the candidate is not resolved"
            return ag.section(scope, "not_checked", reason=why, resolved=verdict.untrusted is not None)
        if task.spec is not None:
            return ag.section(scope, "not_checked", reason=f"the wider run is made by the Python runners (pytest, "
                              f"Django's, unittest's, SymPy's); this task's runner is {task.language}'s")  # fmt: skip
        copy, kind = self.gold_with_tests("against-gold")
        if kind != "gold":
            return ag.section(scope, "incomplete", reason=f"no gold to compare with: {kind}")
        gold_paths = [path for path in protect.patch_files(self.gold() or "") if path.endswith(".py")]
        program = task.command is not None and not task.command.is_pytest
        files: list[str] | None
        if program:
            assert task.command is not None
            files = [] if scope == "suite" else ag.program_scope(task.command.runner, test_files, gold_paths, copy)
        else:
            listed_files = task.instance.test_files()
            patterns = ag.test_patterns(config_file(copy, listed_files))
            files = None if scope == "suite" else ag.scope_files(copy, gold_paths, listed_files, patterns)
        if files == []:
            return ag.section(scope, "incomplete", reason="the scope holds no test file", files=files)
        runs: dict[str, Any] = {}

        def pair(suffix: str, targets: list[str], only: list[str]) -> tuple[RunRecord, RunRecord] | str:
            keep = None if program else only  # a program runs its targets whole
            gold = self.tests(f"against-gold{suffix}", targets, copy=copy, only=keep)
            mine = self.tests(f"against-gold-candidate{suffix}", targets, only=keep)
            runs[f"gold{suffix}"], runs[f"candidate{suffix}"] = gold.to_dict(), mine.to_dict()
            for who, run in (("gold", gold), ("candidate", mine)):
                why = _unfinished(run)
                if why is not None:
                    return f"the {who} run {why}"
            return gold, mine

        first = pair("", files or [], [])
        self.journal.step("against_gold")
        if isinstance(first, str):
            return ag.section(scope, "incomplete", reason=first, files=files, runs=runs)
        gold_run, mine_run = first
        listed = task.instance.listed
        gold_outcomes, _, skip = _outcomes(gold_run, listed)
        mine_outcomes, messages, _ = _outcomes(mine_run, listed)
        if not gold_outcomes:
            failed = ", ".join(n for n, _ in gold_run.collect_errors[:3])
            return ag.section(scope, "incomplete", reason="no test ran under gold" + (f" (collection errors: {failed})"
                              if failed else ""), files=files, runs=runs)  # fmt: skip
        found, compared, not_passing = ag.regressions(gold_outcomes, mine_outcomes, skip | set(listed), messages)
        errors = {who: [nodeid for nodeid, _ in run.collect_errors] for who, run in (("gold", gold_run),
                                                                                        ("candidate", mine_run))}  # fmt: skip
        unstable: list[dict[str, str]] = []
        if found:
            ids = [item["nodeid"] for item in found]
            if program:
                assert task.command is not None
                narrow = id_targets(task.command, ids)[0] or (files or [])
            else:
                narrow = list(dict.fromkeys(i.split("::", 1)[0] for i in ids))
            second = pair("-again", narrow, ids)
            if isinstance(second, str):
                return ag.section(scope, "incomplete", reason=f"{second} (the regressions' second runs)", files=files,
                                  found=found, compared=compared, gold_not_passing=not_passing, runs=runs,
                                  collection_errors=errors)  # fmt: skip
            found, unstable = ag.confirmed(found, _outcomes(second[0], listed)[0], _outcomes(second[1], listed)[0])
        return ag.section(scope, "regressions" if found else "clean", files=files, found=found, unstable=unstable,
                          compared=compared, gold_not_passing=not_passing, runs=runs, collection_errors=errors)  # fmt: skip

    def reruns(self, test_files: list[str]) -> list[tuple[int, RunRecord]]:
        """``--reruns N``: the tests again, N times, each collected in an order drawn from a recorded seed."""
        task = self.task
        done = []
        for index in range(task.request.reruns):
            digest = hashlib.sha256(f"{task.instance.instance_id}:{task.patch_ref}:{index}".encode()).hexdigest()
            seed = int(digest[:8], 16)
            done.append((seed, self.tests(f"rerun-{index + 1}", test_files, shuffle_seed=seed)))
        return done


def _outcomes(run: Any, listed: Iterable[str]) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """A run's outcome per test id, the failure messages, and the ids that are listed (in any of
    their spellings): pytest's from the recorder's records, Django's, unittest's and SymPy's from the
    record their program wrote (:func:`.program_runs.record_run`)."""
    listed = set(listed)
    if run.runner == "pytest":
        records = run.collector.records
        found = {nodeid: record.outcome for nodeid, record in records.items() if record.ran}
        messages = {nodeid: records[nodeid].message for nodeid in found if records[nodeid].message}
        return found, messages, listed & set(found)
    from .outcomes import worst
    from .program_runs import record_run

    log = record_run(run.runner, run.cases, run.session, run.copy_path)
    found, messages, skip = {}, {}, set()
    for test in log.tests:
        found[test.test_id] = worst((found[test.test_id], test.outcome)) if test.test_id in found else test.outcome
        if test.message:
            messages.setdefault(test.test_id, test.message)
        if {test.test_id, *test.aliases} & listed:
            skip.add(test.test_id)
    return found, messages, skip


def _unfinished(run: RunRecord) -> str | None:
    """Why a wider run's outcomes cannot be read whole, or None."""
    if run.timed_out:
        return "timed out"
    if run.flooded is not None:
        return "wrote more output than the limit"
    if run.forged:
        return f"has a record its own code wrote ({run.forged})"
    if run.writes:
        return f"changed the judge's files ({', '.join(run.writes[:3])})"
    if run.session is None:
        return f"ended without finishing its session (exit {run.exit_code})"
    return None


# ------------------------------------------------------------------ 4. score


@dataclass(frozen=True)
class Judgement:
    """One run read: its outcomes graded, why it is no verdict (None: it is one) with the failure
    class that would be, and the signals it showed (integrity flags, copies named ``<copy>``)."""

    run: RunRecord
    grading: Grading
    reason: str | None
    failure: str
    signals: list[dict[str, str]]

    @property
    def needs_control(self) -> bool:
        return bool(self.signals) or self.reason is not None


@dataclass(frozen=True)
class Verdict:
    """Stage 4's answer: the grading the Score is made of and the run whose session the envelope
    reports; when the candidate's outcomes are not trusted, why (``candidate_no_verdict_reason``)."""

    grading: Grading
    run: RunRecord
    failure_class: str | None = None  # None: "none" when resolved, else "solver"
    untrusted: str | None = None


class Score:
    """Stage 4: runs graded (:func:`.testrecord.assess`, :mod:`.scorer`) and their signals found
    (:func:`.testrecord.signals`); the control run's decision on whose a broken run or a signal is."""

    def __init__(self, task: Task, copy: Copy, journal: Journal) -> None:
        self.task = task
        self.copy = copy
        self.journal = journal

    def judge(self, run: RunRecord, copy: Path | None = None) -> Judgement:
        """``run`` (over ``copy``, the pristine copy by default) graded, and its signals."""
        request, instance = self.task.request, self.task.instance
        if run.runner == "command":  # another language's runner: its report, copied out after the run
            from . import command_reports

            grading, reason, failure = command_reports.assess(run, instance, request.compat, request.timeout)
            return Judgement(run, grading, reason, failure, command_reports.signals(run))
        if run.runner != "pytest":  # Django, SymPy, unittest: the record, and the console beside it
            from . import program_runs

            grading, reason, failure = program_runs.assess(run, instance, request.compat, copy or self.copy.path,
                                                           request.timeout)  # fmt: skip
            return Judgement(run, grading, reason, failure,
                             program_runs.signals(run, self.copy.path, instance, request.compat, self.task.guarded))
        grading, reason, failure = assess(run, instance, request.compat, copy or self.copy.path, request.timeout)
        return Judgement(run, grading, reason, failure, signals(run, self.copy.path))

    def candidate(self, run: RunRecord) -> Judgement:
        """The candidate's run; a forged record is an integrity flag whatever the control run shows."""
        judged = self.judge(run)
        if run.forged is not None:
            self.journal.integrity.append({"kind": "record_forged", "detail": run.forged})
        return judged

    def control(self, control: Control) -> Judgement:
        """The control run (``runner.control_run``): does the environment work, and which signals
        does the repository show by itself?"""
        judged = self.judge(control.run, control.copy)  # the control copy is its run's copy_path: named <copy> there
        self.journal.runner["control_run"] = {"kind": control.kind, **control.run.to_dict(), "no_verdict_reason": judged.reason,
                                              "signals": judged.signals[:50]}  # fmt: skip
        return judged

    def calibrate(self, judged: Judgement, control: Judgement) -> Verdict:
        """The candidate's run gave no verdict, or showed signals of reaching its judge: the control
        run says whose they are. A signal the control run shows too is the repository's own behaviour
        (pytest's suite patches pytest, tests write their own modules) and never counts against the
        candidate; one it does not show makes the candidate's outcomes untrusted (not resolved,
        flagged, disposition invalid). When the control run itself gives no verdict, nothing can be
        told about the candidate: an infrastructure failure."""
        runner = self.journal.runner
        if control.reason is not None:
            why = judged.reason or "signals the control run could not be compared with: " + ", ".join(
                f"{s['kind']} {s['detail']}" for s in judged.signals[:3])
            raise InfraFailure("setup" if "setup" in (judged.failure, control.failure) else control.failure,
                               f"{why}; the control run fails too ({control.reason})")  # fmt: skip
        shown = {(s["kind"], s["detail"]) for s in control.signals}
        own = [s for s in judged.signals if (s["kind"], s["detail"]) in shown]
        theirs = [s for s in judged.signals if (s["kind"], s["detail"]) not in shown]
        if own:
            runner["calibrated_signals"] = {
                "note": "shown by the control run too: the repository's own behaviour, not counted against the candidate",
                "signals": own[:50], "count": len(own)}  # fmt: skip
        reason = judged.reason
        if theirs:
            self.journal.integrity += theirs[:50]
            reason = reason or "the candidate's run shows what the control run does not: " + "; ".join(
                f"{s['kind']}: {s['detail']}" for s in theirs[:3])
        if reason is None:
            return Verdict(judged.grading, judged.run)
        # The candidate broke or reached a run that works without it: none of its outcomes is trusted.
        runner["failure_detail"] = f"{reason} (the control run is clean)"
        return Verdict(grade(self.task.instance, {}, self.task.request.compat), control.run,
                       failure_class="output_limit" if judged.run.flooded is not None else None, untrusted=reason)  # fmt: skip

    def reruns(self, runs: list[tuple[int, RunRecord]]) -> list[dict[str, Any]]:
        """The re-runs graded, for the scorecard's robustness (``scorecard_details.rerun_seeds``)."""
        request = self.task.request
        graded = []
        for seed, run in runs:
            judged = self.judge(run)
            grading, reason = judged.grading, judged.reason
            resolved = reason is None and grading.fail_to_pass.verdict == "satisfied" and grading.pass_to_pass.verdict == "satisfied"
            graded.append({"seed": seed, "resolved": resolved, "no_verdict_reason": reason,
                           "fail_to_pass": grading.fail_to_pass.passed, "pass_to_pass": grading.pass_to_pass.passed,
                           "outcomes": {r.test_id: r.outcome for r in grading.results}})  # fmt: skip
        if request.reruns:
            self.journal.step("reruns")
        return graded


# ------------------------------------------------------------------ 5. record


class Record:
    """Stage 5: the envelope, for a verdict and for every other ending: the Score, the journal's
    ``runner`` section and integrity flags, the cost, the digests and the scorecard."""

    def __init__(self, task: Task, journal: Journal) -> None:
        self.task = task
        self.journal = journal

    def verdict(self, verdict: Verdict, copy: Copy, applied: Applied, reruns: list[dict[str, Any]],
                beyond: dict[str, Any] | None = None) -> GradeResult:  # fmt: skip
        task, runner = self.task, self.journal.runner
        session = verdict.run.session or {}
        score = make_score(verdict.grading, task.patch_ref, self._graded_by(session, verdict.run.runner), int(time.time()))
        failure_class = verdict.failure_class or ("none" if score.resolved == "resolved" else "solver")
        runner["failure_class"] = failure_class
        runner["steps"] = self.journal.steps
        records = verdict.run.collector.records
        errors = [{"nodeid": n, "message": m} for n, m in verdict.run.collect_errors]
        note = exit_status_note(session.get("exitstatus"), records)
        if verdict.run.runner == "command":
            from .command_reports import summary

            report = verdict.run.report
            errors = [{"nodeid": e.scope, "message": f"{e.kind}: {e.message}" if e.message else e.kind}
                      for e in (report.errors if report is not None else [])]  # fmt: skip
            note = "; ".join(report.notes) if report is not None and report.notes else None
            if report is not None:
                runner["report"] = summary(report)
        elif verdict.run.runner != "pytest":
            from .program_runs import record_run

            run = record_run(verdict.run.runner, verdict.run.cases, session, verdict.run.copy_path)
            errors = [{"nodeid": e.scope, "message": e.description} for e in run.events]
            note = "; ".join(run.notes) or None
        envelope = env.build_envelope(
            instance_id=task.instance.instance_id,
            score=score,
            grading=verdict.grading,
            no_verdict=None,
            session={"exitstatus": session.get("exitstatus"), "note": note, "collection_errors": errors},
            integrity=self.journal.integrity,
            extra=self.extra(session, score.to_dict()),
        )  # fmt: skip
        if beyond is not None:
            envelope["against_gold"] = beyond
        self.scorecard(envelope, copy, applied, reruns)
        if verdict.untrusted is not None:
            envelope["candidate_no_verdict_reason"] = verdict.untrusted
        return GradeResult(envelope, EXIT_RESOLVED if failure_class == "none" else EXIT_NOT_RESOLVED, failure_class)

    def tampered(self, copy: Copy, reason: str) -> GradeResult:
        """The patch changed protected files that could not be put back: not resolved, flagged."""
        self.journal.runner["failure_detail"] = reason
        self.journal.integrity.append({"kind": "protected_file_modified", "detail": reason})
        return self.verdict(Verdict(grade(self.task.instance, {}, self.task.request.compat), RunRecord(command=[]),
                                    untrusted=reason), copy, NOT_APPLIED, [])  # fmt: skip

    def refused(self) -> GradeResult:
        """A candidate larger than ``max_patch_bytes``: refused unread, failure class patch_too_large."""
        limit = self.task.request.max_patch_bytes
        self.journal.runner["apply"] = {"strategy": None, "attempts": [], "dropped": [],
                                        "error": f"the candidate patch is larger than {limit} bytes "
                                        "(--max-patch-size): refused unread"}  # fmt: skip
        return self.unapplied("patch_too_large", None)

    def unapplied(self, failure_class: str, copy: Copy | None, patch_applied: bool = False) -> GradeResult:
        """A candidate that does not apply: not resolved, no test ran, failure class patch_apply (or one
        that applied and does not build: ``build``)."""
        task, runner = self.task, self.journal.runner
        grading = grade(task.instance, {}, task.request.compat)
        by = env.graded_by(mode="runner", pytest_version="n/a", python="n/a", platform=sys.platform,
                           timeout=task.request.timeout, compat=task.request.compat)  # fmt: skip
        score = make_score(grading, task.patch_ref, by, int(time.time()))
        runner["failure_class"] = failure_class
        runner["failure_detail"] = runner["apply"].get("error") or "no strategy applied the candidate patch"
        runner["steps"] = self.journal.steps
        envelope = env.build_envelope(
            instance_id=task.instance.instance_id, score=score, grading=grading, no_verdict=None, session={},
            extra=self.extra(None, score.to_dict()),
            patch_applied=patch_applied,
        )  # fmt: skip
        if copy is not None:  # never parse what was refused unread (it was never copied)
            self.scorecard(envelope, copy, NOT_APPLIED, [])
        return GradeResult(envelope, EXIT_NOT_RESOLVED, failure_class)

    def unbuilt(self, why: str) -> GradeResult:
        """A command instance whose build step fails with the candidate and not with the gold patch: not
        resolved, no test ran, failure class ``build`` (the candidate's, never the tests' verdict)."""
        self.journal.runner["apply"]["error"] = f"the build step fails with the candidate: {why}"
        return self.unapplied("build", None, patch_applied=True)

    def infrastructure(self, failure_class: str, detail: str) -> GradeResult:
        task, runner = self.task, self.journal.runner
        runner["failure_class"] = failure_class
        runner["failure_detail"] = detail
        runner["steps"] = self.journal.steps
        if self.journal.runs:
            runner.setdefault("run", self.journal.runs[0].to_dict())
        envelope = env.build_envelope(
            instance_id=task.instance.instance_id, score=None, grading=None,
            no_verdict=f"infrastructure failure ({failure_class}): {detail}", session={}, integrity=self.journal.integrity,
            extra=self.extra(None, None),
        )  # fmt: skip
        return GradeResult(envelope, EXIT_INFRA, failure_class)

    def extra(self, session: Mapping[str, Any] | None, score: Mapping[str, Any] | None) -> dict[str, Any]:
        """The envelope's ``runner`` section, costs, ``patch_ref`` and digests."""
        return {"runner": self.journal.runner, **self.cost(), "patch_ref": self.task.patch_ref,
                "digests": self.digests(session, score)}  # fmt: skip

    def cost(self) -> dict[str, Any]:
        """The envelope's ``harness``, ``cost`` (the spec's five fields) and ``cost_breakdown``."""
        request = self.task.request
        entry = run_cost(request.harness_cost, cpu=sum(r.cpu for r in self.journal.runs),
                         wall_time=time.perf_counter() - self.journal.started, rate=request.compute_rate)  # fmt: skip
        harness = request.harness or (request.harness_cost.harness if request.harness_cost else None)
        return {"harness": harness, "cost": entry["cost"], "cost_breakdown": entry["breakdown"]}

    def digests(self, session: Mapping[str, Any] | None, score: Mapping[str, Any] | None) -> dict[str, Any]:
        from .integrity import digests, task_id_of
        from .ledger import canonical

        task, request = self.task, self.task.request
        policy = {"compat": request.compat, "timeout": request.timeout, "network": request.network,
                  "reruns": request.reruns, "test_patch": "file" if request.test_patch is not None else "instance"}  # fmt: skip
        return {**digests(task_id_of(task.instance.fields), task.patch_ref, task.python, session, score),
                "policy": "sha256:" + hashlib.sha256(canonical(policy).encode()).hexdigest()}

    def scorecard(self, envelope: dict[str, Any], copy: Copy, applied: Applied, reruns: list[dict[str, Any]]) -> None:
        """Put the run's Scorecard (and what it was computed from) in the envelope."""
        from .scorecard import build_scorecard
        from .symbols import PatchError, Touched, python_check, touched

        task, instance = self.task, self.task.instance

        def base(path: str) -> str | None:
            return base_text(copy.path, copy.baseline, path)

        notes = []
        try:
            candidate = touched(task.request.patch, base, applied.text)  # bytes: a large patch is not decoded whole
            well_formed = True
        except PatchError as exc:
            candidate, well_formed = Touched(frozenset(), frozenset(), ()), False
            notes.append(f"the candidate is not a well-formed diff: {exc}")
        gold = None
        if instance.patch and instance.patch.strip():
            try:
                gold = touched(instance.patch, base)
            except PatchError as exc:
                notes.append(f"the gold patch is not a well-formed diff: localization is not computed ({exc})")
        parse_errors = [e for _, (ok, _, e) in ((p, python_check(p, d)) for p, d in sorted(applied.patched.items())) if not ok]
        card, details = build_scorecard(
            task_id=instance.instance_id, envelope=envelope, instance_fields=instance.fields, gold=gold,
            candidate=candidate, applied=applied.applied, parse_ok=well_formed and not parse_errors,
            build_ok=applied.applied and applied.build[0], plan=task.request.plan, retrieval=task.request.retrieval,
            reruns=[r["resolved"] for r in reruns],
        )  # fmt: skip
        details.update(parse_errors=parse_errors, build_error=None if applied.build[0] else applied.build[1],
                       rerun_seeds=reruns, notes=notes)  # fmt: skip
        if "against_gold" in envelope:  # beside the Scorecard, never in it: its fields are the spec's
            from .against_gold import compact

            details["against_gold"] = compact(envelope["against_gold"])
        envelope["scorecard"] = card.to_dict()
        envelope["scorecard_details"] = details

    def _graded_by(self, session: Mapping[str, Any], runner: str = "pytest") -> str:
        return env.graded_by(
            mode="runner" if runner == "pytest" else f"runner:{runner}",
            pytest_version=str(session.get("pytest_version", "unknown" if runner == "pytest" else "none")),
            python=f"{session.get('python_implementation', 'Python')}/{session.get('python_version', 'unknown')}",
            platform=str(session.get("platform", sys.platform)),
            timeout=self.task.request.timeout,
            compat=self.task.request.compat,
        )
