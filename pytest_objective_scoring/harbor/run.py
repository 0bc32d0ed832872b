"""``objective-score harbor run``: a working state verified, or the task's solution graded as the
oracle, on this machine (:mod:`.host`) or in the task's container (:mod:`.container`).

:func:`run_task` checks the task and refuses it before anything runs (:class:`Refused`,
:class:`NeedsContainer`: exit status 3), runs the phases (``workdir``: the working state, then the
initial state as the control when it gives no verdict; ``solution``: the untouched initial state
as the empty canary, the solution, then the oracle) and returns a :class:`HarborRun`: its outcome,
failure class and exit status. :func:`write_outputs` writes the reward where Harbor reads it
(``reward.txt``, or ``reward.json`` for named rewards), the tests' output and the JSON result;
:func:`ledger_entry` is what the ledger keeps of a run (kind ``harbor``). A run stopped by Ctrl-C
raises :class:`Interrupted` once its containers are removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from .. import __version__
from ..atomic import write_whole
from ..errors import EXIT_BAD_INPUT
from ..remade import Remade
from .check import (
    HOST_SCRIPT_NOTE,
    LINE_BREAK,
    EngineStatus,
    Finding,
    check_task,
    find_engine,
    refusal,
    runs_in,
    task_env,
)
from .container import ContainerFailure, TaskContainer
from .environment import TaskError
from .host import run_solution, verify_state
from .rewards import REWARD_JSON, REWARD_TXT
from .task import TaskSpec
from .verification import COPY_SKIP, Verification, _failed, _tests_of, attributed, copy_state, initial_exclude

# harbor run's exit statuses: bad input is every command's (errors.EXIT_BAD_INPUT); 3 is a refusal here
EXIT_SOLVED: Final = 0
EXIT_NOT_SOLVED: Final = 1
EXIT_REFUSED: Final = 3
DEFAULT_TIMEOUT: Final = 600.0  # Harbor's own default for [verifier] timeout_sec
RESULT_FILE: Final = "objective-scoring.json"
TEST_STDOUT: Final = "test-stdout.txt"


class Refused(RuntimeError):
    """The task asks for what this machine cannot give it (a GPU, a second container, a key of no
    known meaning, a host run of scripts written for a container...); nothing ran."""


class NeedsContainer(Refused):
    """The task needs a container that this command does not provide; nothing ran on the host."""


class Interrupted(Remade, KeyboardInterrupt):
    """A run stopped by Ctrl-C (``harbor run`` turns SIGTERM into one), raised once its containers were
    removed: ``not_removed`` lists those that could not be (``{"name", "error"}``), ``engine`` the
    engine's name, to remove them with."""

    def __init__(self, not_removed: Sequence[Mapping[str, str]] = (), engine: str | None = None) -> None:
        self.not_removed = [dict(item) for item in not_removed]
        self.engine = engine
        names = ", ".join(item["name"] for item in self.not_removed)
        super().__init__(f"interrupted; containers not removed: {names}" if names else "interrupted")



@dataclass(frozen=True)
class RunOptions:
    """``objective-score harbor run``'s options."""

    workdir: Path | None = None
    solution: bool = False
    out: Path | None = None
    python: str = sys.executable
    timeout: float | None = None
    keep: bool = False
    ledger: Path | None = None  # append the run (kind "harbor") to this ledger; None: no ledger
    benchmark: str | None = None  # the label summaries group by (default: the task's [metadata] benchmark)
    base_image: str | None = None  # a local image standing in for the task's (FROM, docker_image); see TaskContainer


@dataclass
class HarborRun:
    """The result of ``objective-score harbor run``."""

    task: TaskSpec
    mode: str  # "workdir" or "oracle"
    verification: Verification
    out: Path
    written: list[str] = field(default_factory=list)
    initial: Verification | None = None
    solve: dict[str, Any] | None = None
    findings: list[Finding] = field(default_factory=list)
    workspace: str | None = None
    created: str = field(default_factory=lambda: _now())
    benchmark: str | None = None
    container: dict[str, Any] | None = None  # the engine, the image and every engine command, for a container run
    task_digest: str | None = None
    ledger: dict[str, Any] | None = None  # where the run was recorded: path and seq (or the error)

    @property
    def metric_space(self) -> str:
        """The verdict's metric space: the task's, or ``named_rewards`` when its test script wrote several
        dimensions and no ``reward``."""
        reward = self.verification.reward
        return reward.metric_space if reward is not None else self.task.metric_space

    @property
    def verifications(self) -> list[Verification]:
        return [self.verification] + ([self.initial] if self.initial is not None else [])

    @property
    def exit_code(self) -> int:
        if any(v.status != "verdict" for v in self.verifications):
            return EXIT_REFUSED
        if self.mode == "oracle":
            return EXIT_NOT_SOLVED if any(f.severity == "invalid" for f in self.findings) else EXIT_SOLVED
        return EXIT_SOLVED if self.verification.solved else EXIT_NOT_SOLVED

    @property
    def valid(self) -> bool | None:
        """Oracle mode: whether the task passed both canaries (None when a run gave no verdict)."""
        if self.mode != "oracle" or self.exit_code == EXIT_REFUSED:
            return None
        return self.exit_code == EXIT_SOLVED

    @property
    def outcome(self) -> str:
        """``solved`` / ``not_solved`` (``--workdir``), ``valid`` / ``invalid`` (``--solution``), or
        ``infrastructure_failure``: a run without a verdict is never the working state's failure."""
        if self.exit_code == EXIT_REFUSED:
            return "infrastructure_failure"
        if self.mode == "oracle":
            return "valid" if self.valid else "invalid"
        return "solved" if self.verification.solved else "not_solved"

    @property
    def failure_class(self) -> str:
        """``none``, ``solver`` (not solved), ``invalid_task`` (an oracle run that found the task
        invalid), or the infrastructure's: ``verifier`` (timed out, crashed) or ``setup`` (the
        container engine, the image, a missing pytest)."""
        for run in self.verifications:
            if run.status != "verdict":
                return run.failure_class or "verifier"
        if self.mode == "oracle":
            return "none" if self.valid else "invalid_task"
        return "none" if self.verification.solved else "solver"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "schema_version": 1,
            "version": __version__,
            "created": self.created,
            "kind": "harbor",
            "task": self.task.to_dict(),
            "mode": self.mode,
            "metric_space": self.metric_space,
            "status": self.verification.status,
            "reward": self.verification.reward.to_dict() if self.verification.reward is not None else None,
            "exit_code": self.exit_code,
            "outcome": self.outcome,
            "failure_class": self.failure_class,
            "benchmark": self.benchmark,
            "where": self.verification.where,
            "verifier": self.verification.verifier,
            "task_digest": self.task_digest,
            "ledger": self.ledger,
            "out": str(self.out),
            "written": self.written,
            "verification": self.verification.to_dict(),
            "container": self.container,
        }
        if self.mode == "oracle":
            data["valid"] = self.valid
            data["findings"] = [f.to_dict() for f in self.findings]
            data["solve"] = self.solve
            data["initial"] = self.initial.to_dict() if self.initial is not None else None
        if self.workspace:
            data["workspace"] = self.workspace
        return data


def _now() -> str:
    from ..envelope import utc_now_iso

    return utc_now_iso()


def default_out(spec: TaskSpec, options: RunOptions) -> Path:
    if options.out is not None:
        return options.out
    if options.workdir is not None:
        return options.workdir / "logs" / "verifier"
    return Path(".objective-scoring") / "harbor" / spec.root.name / "verifier"


def _timeout(spec_value: float | None, option: float | None, where: str) -> tuple[float, str]:
    if spec_value is not None:
        return spec_value, where
    if option is not None:
        return option, "--timeout"
    return DEFAULT_TIMEOUT, "default (Harbor's)"


def _oracle_findings(spec: TaskSpec, oracle: Verification, initial: Verification, solve: Mapping[str, Any]) -> list[Finding]:
    findings = []
    sol = spec.rel(spec.solution) or "solution"
    if solve["timed_out"]:
        findings.append(Finding("invalid", sol, f"the solution timed out after {solve['timeout']:g}s"))
    elif solve["exit_code"] not in (0, None):
        findings.append(Finding("warning", sol, f"the solution exited with status {solve['exit_code']}"))
    if oracle.status == "verdict" and oracle.reward is not None and not oracle.reward.solved:
        r = oracle.reward
        where = f"reward {r.reward:g}" + (f" < threshold {r.threshold:g}" if r.threshold is not None else "")
        tier = f", tier {r.tier}" if r.tier is not None else ""
        tests = f"{r.passed}/{r.total} tests passed" if r.total is not None else f"by {oracle.verifier}"
        findings.append(Finding("invalid", sol, f"the oracle does not solve the task ({where}{tier}; {tests}): "
                                "the task is invalid"))  # fmt: skip
    if initial.status == "verdict" and initial.solved:
        findings.append(Finding("invalid", "tests/", "the untouched initial state already solves the task: its tests "
                                "do not test the work"))  # fmt: skip
    for name in oracle.reward.unmatched if oracle.reward is not None else ():
        findings.append(Finding("invalid", spec.key("verifier", "tiers"), f"declared test {name!r} never ran"))
    return findings


def write_outputs(out: Path, verification: Verification, document: dict[str, Any],
                  runs: Sequence[Verification] = ()) -> list[str]:  # fmt: skip
    """Write the reward (where Harbor reads it), the tests' output and our JSON result to ``out``.

    A reward the task's test script decided is written as the script wrote it (every file, every
    dimension); otherwise this verifier's (``reward.txt`` for a binary task, else ``reward.json``).
    A stale reward file from an earlier run is removed first; a run without a verdict writes no
    reward at all. The task's artifacts of each verification go to ``artifacts/<label>/``.
    """
    out.mkdir(parents=True, exist_ok=True)
    for name in (REWARD_TXT, REWARD_JSON):
        (out / name).unlink(missing_ok=True)
    written = []
    script = verification.script or {}
    if verification.status == "verdict" and verification.reward is not None and script.get("decides"):
        for name, text in script["reward_files"].items():  # the script's own files, verbatim
            write_whole(out / name, text)
            written.append(str(out / name))
    elif verification.status == "verdict" and verification.reward is not None:
        name, text = verification.reward.reward_file()
        write_whole(out / name, text)
        written.append(str(out / name))
    artifacts = out / "artifacts"
    shutil.rmtree(artifacts, ignore_errors=True)
    for run in runs or [verification]:
        folder = (run.container or {}).get("artifacts", {}).get("folder")
        if folder and Path(folder).is_dir():
            shutil.copytree(folder, artifacts / run.label, dirs_exist_ok=True)
            written.append(str(artifacts / run.label))
    if verification.log.exists():
        shutil.copyfile(verification.log, out / TEST_STDOUT)
        written.append(str(out / TEST_STDOUT))
    written.append(str(out / RESULT_FILE))
    document["written"] = written
    write_whole(out / RESULT_FILE, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return written


class OutputsNotWritten(Remade, RuntimeError):
    """The run finished but its outputs could not be written (a full disk): the result rides along,
    so that the command prints it instead of losing it. ``why``: the write's failure in words."""

    def __init__(self, result: HarborRun, why: str) -> None:
        RuntimeError.__init__(self, why)
        self.result = result


def run_task(spec: TaskSpec, options: RunOptions, engine: EngineStatus | None = None) -> HarborRun:
    """Verify a working state (``options.workdir``) or grade the task's solution (``options.solution``).

    A task that needs a container runs in ``engine`` (default: the one :func:`find_engine`
    finds). Raises :class:`TaskError` for a task that cannot be verified as it stands and
    :class:`NeedsContainer` for a task that needs a container this machine cannot give it
    (before anything runs), the task's ``env`` templates included. A run stopped by Ctrl-C raises
    :class:`Interrupted` once its containers are removed, naming any that could not be. With
    ``options.ledger`` the run is appended to that ledger.
    """
    env = task_env(spec)  # an unset ${VAR} is bad input before anything runs, not after the first verification
    errors = [f for f in check_task(spec) if f.severity == "error"]
    if errors:
        raise TaskError(spec.root, errors[0].where or None, errors[0].message)
    if (options.workdir is None) == (not options.solution):
        raise ValueError("give exactly one of workdir or solution")
    if not spec.needs_container and options.base_image and not spec.container:  # in a container all the same
        for table, values in env.items():
            for name, value in values.items():
                if "\n" in value or "\r" in value:
                    raise TaskError(spec.config_file, spec.key(table, f"env.{name}"), LINE_BREAK)
    status: EngineStatus | None = None
    if not spec.refused and runs_in(spec, options.base_image) == "container":
        status = engine or find_engine()
    why = refusal(spec, status, options.base_image)
    if why is not None:
        raise (NeedsContainer if status is not None and not status.usable else Refused)(why)
    if options.solution and spec.solution is None:
        raise TaskError(spec.root, None, "no solution script (solution/solve.sh) to grade as the oracle")
    verifier_timeout, verifier_source = _timeout(spec.verifier_timeout, options.timeout,
                                                 f"{spec.rel(spec.config_file)} {spec.key('verifier', 'timeout_sec')}")  # fmt: skip
    out = default_out(spec, options).resolve()
    workspace = Path(tempfile.mkdtemp(prefix="objective-harbor-"))
    try:
        if status is not None:
            box = TaskContainer(spec, status, workspace, env=env, base_image=options.base_image)
            try:
                try:
                    result = _run_in_container(box, spec, options, out, verifier_timeout, verifier_source)
                finally:
                    box.remove_all()
            except KeyboardInterrupt as exc:  # a second one during the removals included
                raise Interrupted(box.left_behind(), box.name) from exc
            result.container = box.to_dict()
        else:
            result = _run_on_host(spec, options, workspace, out, verifier_timeout, verifier_source, env)
            if spec.layout == "harbor" and spec.test_script is not None:
                for run in result.verifications:
                    run.script = {"ran": False, "decides": False, "note": HOST_SCRIPT_NOTE}
        result.benchmark = options.benchmark or spec.benchmark
        result.task_digest = task_digest(spec)
        image_id = (result.container or {}).get("image_id")
        for run in result.verifications:
            run.envelope.setdefault("digests", {}).update(task=result.task_digest)
            if image_id:
                run.envelope["digests"]["image"] = image_id
        if options.keep:
            result.workspace = str(workspace)
        if options.ledger is not None:
            result.ledger = record_run(options.ledger, result)
        try:
            result.written = write_outputs(out, result.verification, result.to_dict(), result.verifications)
        except OSError as exc:
            raise OutputsNotWritten(result, exc.strerror or str(exc)) from None
        return result
    finally:
        if not options.keep:
            shutil.rmtree(workspace, ignore_errors=True)


def _run_on_host(spec: TaskSpec, options: RunOptions, workspace: Path, out: Path, verifier_timeout: float,
                 verifier_source: str, env: Mapping[str, Mapping[str, str]]) -> HarborRun:  # fmt: skip
    verifier_env = env["verifier"]
    if options.workdir is not None:
        workdir = options.workdir.resolve()
        verification = verify_state(spec, workdir, python=options.python, timeout=verifier_timeout,
                                    timeout_source=verifier_source, workspace=workspace, label="workdir",
                                    env=verifier_env)  # fmt: skip
        source = spec.initial_state_source()
        control = lambda: verify_state(spec, source, python=options.python, timeout=verifier_timeout,
                                       timeout_source=verifier_source, workspace=workspace, label="control",
                                       exclude=initial_exclude(spec), described="initial state (control)",
                                       env=verifier_env)  # fmt: skip
        return HarborRun(spec, "workdir", attributed(spec, verification, control), out)
    source = spec.initial_state_source()
    exclude = initial_exclude(spec)
    described = f"initial state ({spec.rel(source) if source is not None else 'empty'})"
    initial = verify_state(spec, source, python=options.python, timeout=verifier_timeout,
                           timeout_source=verifier_source, workspace=workspace, label="initial",
                           exclude=exclude, described=described, env=verifier_env)  # fmt: skip
    state = workspace / "oracle-state"
    copy_state(source, state, exclude)
    solve_timeout, _ = _timeout(spec.agent_timeout, options.timeout, "agent")
    solve = run_solution(spec, state, workspace, solve_timeout, env=env["solution"])
    oracle = verify_state(spec, state, python=options.python, timeout=verifier_timeout,
                          timeout_source=verifier_source, workspace=workspace, label="oracle",
                          original=source, described=f"{described} after {spec.rel(spec.solution)}",
                          env=verifier_env)  # fmt: skip
    return HarborRun(spec, "oracle", oracle, out, initial=initial, solve=solve,
                     findings=_oracle_findings(spec, oracle, initial, solve))  # fmt: skip


def _run_in_container(box: TaskContainer, spec: TaskSpec, options: RunOptions, out: Path, verifier_timeout: float,
                      verifier_source: str) -> HarborRun:  # fmt: skip
    """The same runs as on the host, each in a container of the task's image."""
    mode = "workdir" if options.workdir is not None else "oracle"
    try:
        box.prepare_image()
    except ContainerFailure as exc:
        shown = str(options.workdir) if options.workdir is not None else "initial state (the task's image)"
        failed = _failed(spec, mode, shown, f"the container engine failed: {exc}", "setup", verifier_timeout,
                         verifier_source, box.workspace / "build.log", where="container")  # fmt: skip
        return HarborRun(spec, mode, failed, out)
    # A task without container files (run in a container of --base-image) brings its initial state along.
    initial_state = spec.initial_state_source() if box.synthetic else None
    exclude = initial_exclude(spec) if box.synthetic else frozenset()
    if options.workdir is not None:
        verification = box.verify("workdir", state=options.workdir.resolve(), timeout=verifier_timeout,
                                  timeout_source=verifier_source, shown=str(options.workdir.resolve()))  # fmt: skip
        control = lambda: box.verify("control", state=initial_state, timeout=verifier_timeout, exclude=exclude,
                                     timeout_source=verifier_source, shown="initial state (control)")  # fmt: skip
        return HarborRun(spec, "workdir", attributed(spec, verification, control), out)
    described = (f"initial state ({spec.rel(initial_state) if initial_state else 'empty'}, in {box.image})" if box.synthetic
                 else f"initial state (image {box.image})")  # fmt: skip
    initial = box.verify("initial", state=initial_state, timeout=verifier_timeout, timeout_source=verifier_source,
                         shown=described, exclude=exclude)  # fmt: skip
    solve_timeout, _ = _timeout(spec.agent_timeout, options.timeout, "agent")
    staged = None
    if box.synthetic:
        staged = box.workspace / "oracle-state"
        copy_state(initial_state, staged, exclude)
    name, solve = box.solve(solve_timeout, state=staged)
    shown = f"{described} after {spec.rel(spec.solution)}"
    if name is None:
        oracle = _failed(spec, "oracle", shown, str(solve["error"]), "setup", verifier_timeout, verifier_source,
                         box.workspace / "solve.log", where="container")  # fmt: skip
    else:
        oracle = box.verify("oracle", state=None, timeout=verifier_timeout, timeout_source=verifier_source,
                            shown=shown, container=name)  # fmt: skip
    return HarborRun(spec, "oracle", oracle, out, initial=initial, solve=solve,
                     findings=_oracle_findings(spec, oracle, initial, solve))  # fmt: skip


def task_digest(spec: TaskSpec) -> str:
    """A content address for the task directory (every file but caches and this project's outputs)."""
    digest = hashlib.sha256()
    for directory, dirs, files in os.walk(spec.root):
        dirs[:] = sorted(d for d in dirs if d not in COPY_SKIP)
        for name in sorted(files):
            path = Path(directory) / name
            digest.update(path.relative_to(spec.root).as_posix().encode("utf-8", "surrogateescape") + b"\0")
            try:
                digest.update(hashlib.sha256(path.read_bytes()).digest())
            except OSError:
                digest.update(b"unreadable")
    return "sha256:" + digest.hexdigest()


# --------------------------------------------------------------------------------------------
# The ledger: one entry of kind "harbor" a run


def ledger_entry(result: HarborRun) -> dict[str, Any]:
    """What the ledger keeps of a run: the task, the mode, the metric space, the reward(s),
    solved or not, the outcome and failure class, every test's outcome, the benchmark label and
    the digests. Its kind is ``harbor``: never read as a SWE-style resolve rate."""
    from ..ledger import score_entry

    spec, run = result.task, result.verification
    envelope = {**run.envelope, "benchmark": result.benchmark, "metric_space": result.metric_space}
    body = score_entry(envelope, "harbor")
    for key in ("disposition", "reasons", "info", "audit_state", "harness"):
        body.pop(key, None)  # integrity dispositions and harnesses are the SWE-style runs'
    body.update({
        "task": spec.name,
        "task_root": str(spec.root),
        "layout": spec.layout,
        "mode": result.mode,
        "threshold": spec.rules.solved_threshold,
        "tiers": [t.name for t in spec.rules.tiers],
        "reward": run.reward.to_dict() if run.reward is not None else None,
        "solved": run.solved if run.status == "verdict" else None,
        "outcome": result.outcome,
        "failure_class": result.failure_class,
        "exit_code": result.exit_code,
        "verifier": run.verifier,
        "where": run.where,
        "image": (result.container or {}).get("image"),
        "base_image": (result.container or {}).get("base_image"),
        "script": None if run.script is None else {k: run.script.get(k) for k in ("decides", "exit_code", "reward_files",
                                                                                  "timed_out", "note")},
        "cross_check": None if run.cross_check is None else {k: run.cross_check.get(k) for k in ("solved", "agrees",
                                                                                              "reward", "note")},
        "timeout": {"seconds": run.timeout, "source": run.timeout_source},
        "tests": _tests_of(run.envelope),
        "digests": run.envelope.get("digests"),
    })  # fmt: skip
    if result.mode == "oracle":
        initial = result.initial
        body["valid"] = result.valid
        body["findings"] = [f.to_dict() for f in result.findings]
        body["solve"] = {k: (result.solve or {}).get(k) for k in ("exit_code", "timed_out", "timeout", "wall_time", "error")}
        body["initial"] = None if initial is None else {
            "status": initial.status, "no_verdict_reason": initial.no_verdict_reason,
            "failure_class": initial.failure_class, "solved": initial.solved if initial.status == "verdict" else None,
            "reward": initial.reward.to_dict() if initial.reward is not None else None,
            "patch_ref": initial.patch_ref, "tests": _tests_of(initial.envelope),
        }  # fmt: skip
    return body


def record_run(path: Path, result: HarborRun) -> dict[str, Any]:
    """Append the run to the ledger at ``path``: where, and its seq; a ledger that cannot be written
    is reported (``error``) and never changes the verdict."""
    import sqlite3

    from ..ledger import Ledger, LedgerError

    try:
        with Ledger(path) as ledger:
            entry = ledger.append("harbor", ledger_entry(result))
    except (LedgerError, sqlite3.Error, OSError) as exc:
        return {"path": str(path), "seq": None, "error": str(exc)}
    return {"path": str(path), "seq": entry.seq, "hash": entry.hash}


def dump(document: Mapping[str, Any]) -> str:
    """A result or report as the JSON ``--json`` prints."""
    return json.dumps(document, indent=2, ensure_ascii=False)
