"""The executed-test runner (spec 3.1): grade a candidate patch in an isolated copy.

Steps, each recorded in the envelope's ``runner`` section:

1. copy the repository to a private workspace (the user's tree is never
   touched), at ``base_commit`` when the instance names one, keeping ignored
   build artefacts (compiled extensions) so the copy runs like the original;
2. drop the candidate's changes to protected files (:mod:`.protect`) and apply
   the rest with ``git apply``, ``--3way``, ``--reject`` and ``patch --fuzz=5``
   in turn, resetting between attempts;
3. reset the test patch's files and apply the test patch;
4. run pytest on the files that hold the listed tests, in a subprocess of the
   chosen interpreter, with the recorder loaded, a scrubbed environment, the
   network unshared where the machine allows it, and a timeout that kills the
   whole process group;
5. grade the recorded outcomes with :mod:`.scorer`. When the run gave no
   verdict (timeout, crash, collection error, contradictory exit status,
   protected files modified), a *control run* of the base with the test patch
   decides whose fault it was: if the base runs cleanly the candidate broke the
   run (``solver``, not resolved); otherwise it is an infrastructure failure
   (``setup`` or ``verifier``) and never counted against the candidate.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Mapping, Sequence

from . import envelope as env
from . import protect
from .instances import Instance
from .outcomes import Collector
from .scorer import Grading, grade, make_score, no_verdict_reason

__all__ = ["BadInput", "GradeRequest", "GradeResult", "grade_candidate"]

RECORDER_MODULE: Final = "_objective_scoring_recorder"
EXIT_RESOLVED, EXIT_NOT_RESOLVED, EXIT_BAD_INPUT, EXIT_INFRA = 0, 1, 2, 3
APPLY_STRATEGIES: Final = (
    ("git apply", ["git", "apply", "--verbose", "--whitespace=nowarn"]),
    ("git apply --3way", ["git", "apply", "--verbose", "--3way", "--whitespace=nowarn"]),
    ("git apply --reject", ["git", "apply", "--verbose", "--reject", "--whitespace=nowarn"]),
    ("patch --fuzz=5", ["patch", "--batch", "--forward", "--fuzz=5", "-p1", "-i"]),
)
COPY_SKIP: Final = frozenset({".git", "__pycache__", ".pytest_cache", ".tox", ".nox", ".mypy_cache", ".objective-scoring"})
ENV_KEEP: Final = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT", "TERM")
GIT_IDENTITY: Final = (
    "-c", "user.name=objective-score", "-c", "user.email=objective-score@localhost",
    "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false",
)  # fmt: skip
OUTPUT_TAIL: Final = 4000


class BadInput(ValueError):
    """The request cannot be graded as given (exit status 2)."""


class InfraFailure(RuntimeError):
    """The environment, not the candidate, failed (exit status 3)."""

    def __init__(self, failure_class: str, detail: str) -> None:
        self.failure_class = failure_class
        super().__init__(detail)


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


@dataclass
class GradeResult:
    envelope: dict[str, Any]
    exit_code: int
    failure_class: str

    @property
    def score(self) -> dict[str, Any] | None:
        return self.envelope.get("score")


@dataclass
class RunRecord:
    """One pytest subprocess: what it printed, how it ended, what it recorded."""

    command: list[str]
    exit_code: int | None = None
    timed_out: bool = False
    wall_time: float = 0.0
    cpu: float = 0.0
    output_tail: str = ""
    collector: Collector = field(default_factory=Collector)
    collect_errors: list[tuple[str, str]] = field(default_factory=list)
    session: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "exit_code": self.exit_code,
            "pytest_exitstatus": None if self.session is None else self.session["exitstatus"],
            "timed_out": self.timed_out,
            "wall_time": round(self.wall_time, 3),
            "cpu": round(self.cpu, 3),
            "output_tail": self.output_tail,
        }


# ---------------------------------------------------------------- subprocesses


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["git", *GIT_IDENTITY, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="replace",
        stdin=subprocess.DEVNULL,
        env={**_base_env(), "GIT_TERMINAL_PROMPT": "0"},
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {(result.stderr or result.stdout).strip()}")
    return result


def _base_env() -> dict[str, str]:
    return {k: os.environ[k] for k in ENV_KEEP if k in os.environ}


_NETWORK_PREFIX: list[str] | None = None


def network_isolation() -> list[str]:
    """The command prefix that runs a process without network, or [] where unavailable."""
    global _NETWORK_PREFIX
    if _NETWORK_PREFIX is None:
        prefix = ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "--net", "--map-root-user"]
        try:
            ok = subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0
        except (OSError, subprocess.SubprocessError):
            ok = False
        _NETWORK_PREFIX = prefix if ok else []
    return _NETWORK_PREFIX


def run_process(
    command: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float, log: Path
) -> tuple[int | None, bool, float, float]:
    """Run ``command`` in its own process group; kill the group at the timeout.

    Returns ``(exit_code, timed_out, wall_seconds, cpu_seconds)``; CPU time is
    the rusage of the child and every descendant it waited for.
    """
    started = time.perf_counter()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            list(command),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    waited: dict[str, Any] = {}

    def wait() -> None:
        _, status, usage = os.wait4(proc.pid, 0)
        waited["status"] = status
        waited["cpu"] = usage.ru_utime + usage.ru_stime

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    waiter.join(timeout)
    timed_out = waiter.is_alive()
    if timed_out:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        waiter.join()
    # Kill anything the test run left behind in its group, even on success.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    code = os.waitstatus_to_exitcode(waited["status"])
    proc.returncode = code
    return (None if timed_out else code), timed_out, time.perf_counter() - started, float(waited["cpu"])


# ---------------------------------------------------------------- workspace


def _ignore(directory: str, names: list[str]) -> set[str]:
    skipped = {n for n in names if n in COPY_SKIP}
    for name in names:
        if os.path.isfile(os.path.join(directory, name, "pyvenv.cfg")):
            skipped.add(name)  # a virtualenv inside the repository: used in place, never copied
    return skipped


def prepare_copy(repo: Path, dest: Path, base_commit: str | None) -> str:
    """Copy ``repo`` to ``dest`` and return the baseline commit of the copy."""
    shutil.copytree(repo, dest, symlinks=True, ignore=_ignore)
    if (repo / ".git").exists():
        clone = dest.parent / "clone"
        result = subprocess.run(
            ["git", "clone", "--quiet", "--shared", "--no-checkout", str(repo), str(clone)],
            capture_output=True,
            text=True,
            env={**_base_env(), "GIT_TERMINAL_PROMPT": "0"},
        )
        if result.returncode != 0:
            raise BadInput(f"--repo {repo}: git clone failed: {result.stderr.strip()}")
        shutil.move(str(clone / ".git"), str(dest / ".git"))
        shutil.rmtree(clone, ignore_errors=True)
        if base_commit:
            if _git(dest, "cat-file", "-e", f"{base_commit}^{{commit}}", check=False).returncode != 0:
                raise BadInput(f"--repo {repo} has no commit {base_commit} (the instance's base_commit)")
            _git(dest, "reset", "--quiet", "--hard", base_commit)
            _git(dest, "clean", "-fdq")
        else:
            _git(dest, "reset", "--quiet", "--mixed", "HEAD")
            _git(dest, "add", "-A")
            _git(dest, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", "objective-score: working tree")
    else:
        if base_commit:
            raise BadInput(f"--repo {repo} is not a git repository, but the instance names base_commit {base_commit}")
        _git(dest, "init", "--quiet")
        _git(dest, "add", "-A")
        _git(dest, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", "objective-score: baseline")
    return _git(dest, "rev-parse", "HEAD").stdout.strip()


def _reset(copy: Path, baseline: str) -> None:
    _git(copy, "reset", "--quiet", "--hard", baseline)
    _git(copy, "clean", "-fdq")


def apply_candidate(copy: Path, baseline: str, patch_file: Path, text: str) -> tuple[str | None, list[dict[str, Any]]]:
    """Try each strategy in turn; return the one that worked (or None) and every attempt."""
    if not text.strip():
        return "nothing to apply", []
    attempts = []
    for name, command in APPLY_STRATEGIES:
        try:
            result = subprocess.run(
                [*command, str(patch_file)], cwd=copy, capture_output=True, text=True, errors="replace",
                stdin=subprocess.DEVNULL, env={**_base_env(), "GIT_CONFIG_NOSYSTEM": "1"},
            )  # fmt: skip
            ok, output = result.returncode == 0, (result.stdout + result.stderr).strip()
        except OSError as exc:
            ok, output = False, f"{command[0]} is not available: {exc.strerror}"
        attempts.append({"strategy": name, "ok": ok, "output": output[-1000:]})
        if ok:
            return name, attempts
        _reset(copy, baseline)
    return None, attempts


def apply_test_patch(copy: Path, baseline: str, test_patch: str, files: Sequence[str], workspace: Path) -> None:
    """Reset the test patch's files to the base, then apply it strictly."""
    for path in files:
        if _git(copy, "cat-file", "-e", f"{baseline}:{path}", check=False).returncode == 0:
            _git(copy, "checkout", baseline, "--", path)
        elif (copy / path).exists():
            (copy / path).unlink()
    patch_file = workspace / "test.diff"
    patch_file.write_text(test_patch, encoding="utf-8")
    result = _git(copy, "apply", "--verbose", "--whitespace=nowarn", str(patch_file), check=False)
    if result.returncode != 0:
        raise InfraFailure(
            "setup", f"the test patch does not apply to the base: {(result.stderr or result.stdout).strip()[-800:]}"
        )


def import_roots(copy: Path) -> tuple[list[str], list[str]]:
    """The copy's import roots (``src/`` first when present) and its top-level package names."""
    roots = [copy / "src", copy] if (copy / "src").is_dir() else [copy]
    names: dict[str, None] = {}
    for root in roots:
        for child in sorted(root.iterdir()):
            if child.name in ("tests", "test", "testing", "setup.py", "conftest.py", "docs") or child.name.startswith("."):
                continue
            if child.is_dir() and (child / "__init__.py").exists():
                names.setdefault(child.name, None)
            elif child.suffix == ".py" and root != copy:
                names.setdefault(child.stem, None)
    return [str(r) for r in roots], list(names)


def _recorder_source() -> str:
    return (Path(__file__).with_name("recorder.py")).read_text(encoding="utf-8")


# ---------------------------------------------------------------- running tests


def run_tests(
    *,
    copy: Path,
    workspace: Path,
    python: str,
    test_files: Sequence[str],
    timeout: float,
    network: bool,
    label: str,
) -> RunRecord:
    tools = workspace / "tools"
    tools.mkdir(exist_ok=True)
    (tools / f"{RECORDER_MODULE}.py").write_text(_recorder_source(), encoding="utf-8")
    record_file = workspace / f"{label}.jsonl"
    record_file.unlink(missing_ok=True)
    roots, packages = import_roots(copy)
    environ = _base_env()
    environ.update(
        HOME=str(workspace / "home"),
        TMPDIR=str(workspace / "tmp"),
        PYTHONPATH=os.pathsep.join([str(tools), *roots]),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONHASHSEED="0",
        PYTHONIOENCODING="utf-8",
        OBJECTIVE_SCORING_RECORD=str(record_file),
        OBJECTIVE_SCORING_IMPORT_ROOTS=os.pathsep.join(roots),
        OBJECTIVE_SCORING_PACKAGES=os.pathsep.join(packages),
    )
    (workspace / "home").mkdir(exist_ok=True)
    (workspace / "tmp").mkdir(exist_ok=True)
    command = [
        python, "-m", "pytest", "-p", RECORDER_MODULE, "-p", "no:cacheprovider",
        "-q", "-rfE", "--rootdir", str(copy), *test_files,
    ]  # fmt: skip
    prefix = [] if network else network_isolation()
    log = workspace / f"{label}.log"
    code, timed_out, wall, cpu = run_process([*prefix, *command], cwd=copy, env=environ, timeout=timeout, log=log)
    run = RunRecord(command=command, exit_code=code, timed_out=timed_out, wall_time=wall, cpu=cpu)
    run.output_tail = log.read_text(encoding="utf-8", errors="replace")[-OUTPUT_TAIL:]
    if record_file.exists():
        for line in record_file.read_text(encoding="utf-8", errors="replace").split("\n"):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a kill
            kind = item.pop("type", None)
            if kind == "test":
                run.collector.add(item)
            elif kind == "collect_error":
                run.collect_errors.append((item["nodeid"], item["message"]))
            elif kind == "session":
                run.session = item
    return run


def assess(run: RunRecord, instance: Instance, compat: str, copy: Path, timeout: float) -> tuple[Grading, str | None, str]:
    """Grade a run and say why it is no verdict (with the failure class if so)."""
    records = run.collector.records
    grading = grade(instance, records, compat)
    if run.timed_out:
        return grading, f"the test run timed out after {timeout:g}s", "verifier"
    if run.session is None:
        if "No module named pytest" in run.output_tail:
            return grading, f"pytest is not installed for {run.command[0]}", "setup"
        return grading, f"the test run died before its session finished (exit code {run.exit_code})", "verifier"
    stale = {
        name: origin
        for name, origin in (run.session.get("module_origins") or {}).items()
        if origin and not Path(origin).is_relative_to(copy.resolve())
    }
    if stale:
        name, origin = next(iter(stale.items()))
        return grading, (
            f"the tests imported {name} from {origin}, not from the graded copy: another copy of the "
            "project shadows it on that interpreter's path"
        ), "setup"
    reason = no_verdict_reason(
        exitstatus=run.session["exitstatus"],
        collect_errors=run.collect_errors,
        stopped_early=bool(run.session.get("shouldfail") or run.session.get("shouldstop")),
        grading=grading,
        records=records,
    )
    return grading, reason, "verifier"


# ---------------------------------------------------------------- the whole grading


def grade_candidate(request: GradeRequest) -> GradeResult:
    """Grade one candidate patch; never raises for the candidate's faults."""
    instance = request.instance
    if not request.repo.is_dir():
        raise BadInput(f"--repo {request.repo}: not a directory")
    python = shutil.which(request.python) or request.python
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise BadInput(f"--python {request.python}: no such executable interpreter")
    test_patch = request.test_patch if request.test_patch is not None else instance.test_patch
    try:
        test_patch_files = protect.patch_files(test_patch) if test_patch else []
    except protect.PatchParseError as exc:
        raise BadInput(f"the test patch cannot be parsed: {exc}") from None
    patch_ref = request.patch_ref or env.patch_ref_of(request.patch)
    workspace = Path(tempfile.mkdtemp(prefix="objective-score-", dir=request.workdir))
    steps: list[dict[str, Any]] = []
    runner: dict[str, Any] = {
        "repo": str(request.repo),
        "base_commit": instance.base_commit,
        "python": python,
        "timeout": request.timeout,
        "network": "allowed" if request.network else ("unshared" if network_isolation() else "not isolated: unshare unavailable"),
        "test_patch": {"source": "file" if request.test_patch is not None else ("instance" if test_patch else None),
                       "files": test_patch_files},
    }  # fmt: skip
    started = time.perf_counter()

    def step(name: str, since: float) -> float:
        now = time.perf_counter()
        steps.append({"name": name, "seconds": round(now - since, 4)})
        return now

    try:
        copy = workspace / "repo"
        try:
            baseline = prepare_copy(request.repo, copy, instance.base_commit)
        except RuntimeError as exc:
            raise InfraFailure("setup", f"could not prepare the isolated copy: {exc}") from None
        t = step("copy", started)
        text = request.patch.decode("utf-8", errors="surrogateescape")
        try:
            protection = protect.filter_candidate(text, [*test_patch_files, *instance.test_files()])
        except protect.PatchParseError as exc:
            runner["apply"] = {"strategy": None, "attempts": [], "dropped": [], "error": f"not a unified diff: {exc}"}
            return _finish_unapplied(request, instance, patch_ref, runner, steps, workspace, started)
        candidate_file = workspace / "candidate.diff"
        candidate_file.write_text(protection.patch, encoding="utf-8", errors="surrogateescape")
        strategy, attempts = apply_candidate(copy, baseline, candidate_file, protection.patch)
        runner["apply"] = {
            "strategy": strategy,
            "attempts": attempts,
            "dropped": [d.to_dict() for d in protection.dropped],
            "kept": list(protection.kept),
        }
        t = step("apply", t)
        if strategy is None:
            return _finish_unapplied(request, instance, patch_ref, runner, steps, workspace, started)
        if test_patch:
            apply_test_patch(copy, baseline, test_patch, test_patch_files, workspace)
        t = step("test_patch", t)
        test_files = [f for f in instance.test_files() if (copy / f).exists()]
        absent = [f for f in instance.test_files() if not (copy / f).exists()]
        runner["test_files"] = test_files
        if absent:
            runner["absent_test_files"] = absent
        if not test_files:
            raise InfraFailure("setup", f"none of the listed tests' files exist after the test patch: {', '.join(absent)}")
        guarded = [*test_patch_files, *instance.test_files()]
        before = protect.snapshot(copy, guarded)
        run = run_tests(copy=copy, workspace=workspace, python=python, test_files=test_files,
                        timeout=request.timeout, network=request.network, label="candidate")  # fmt: skip
        t = step("tests", t)
        runner["run"] = run.to_dict()
        grading, reason, failure = assess(run, instance, request.compat, copy, request.timeout)
        integrity: list[dict[str, str]] = []
        changes = protect.snapshot_changes(before, protect.snapshot(copy, guarded))
        if changes and reason is None:
            reason, failure = f"the test run modified protected files: {', '.join(changes[:5])}", "verifier"
        for nodeid, record in run.collector.records.items():
            if any(f.get("raised_but_passed") for f in record.facts):
                integrity.append({"kind": "raised_but_passed", "detail": f"{nodeid} reported passed although it raised"})
        for change in changes:
            integrity.append({"kind": "protected_file_modified", "detail": change})
        session_info = run.session or {}
        control = None
        if reason is not None:
            control, control_reason, control_failure = _control_run(request, copy, baseline, test_patch,
                                                                    test_patch_files, test_files, python, workspace)  # fmt: skip
            t = step("control_run", t)
            runner["control_run"] = {**control.to_dict(), "no_verdict_reason": control_reason}
            if control_reason is not None:
                raise InfraFailure(
                    control_failure if failure != "setup" else "setup",
                    f"{reason}; the base with the test patch fails the same way ({control_reason})",
                )
            session_info = control.session or {}
            # The candidate broke a run that works without it: its outcomes are not trusted.
            grading = grade(instance, {}, request.compat)
            runner["failure_detail"] = f"{reason} (the base with the test patch runs cleanly)"
        score = make_score(grading, patch_ref, _graded_by(session_info, request), int(time.time()))
        failure_class = "none" if score.resolved == "resolved" else "solver"
        runner["failure_class"] = failure_class
        runner["steps"] = steps
        cost = {"wall_time": round(time.perf_counter() - started, 3), "cpu": round(run.cpu + (control.cpu if control else 0.0), 3)}
        envelope = env.build_envelope(
            instance_id=instance.instance_id,
            score=score,
            grading=grading,
            no_verdict=None,
            session={"exitstatus": session_info.get("exitstatus"), "collection_errors": [
                {"nodeid": n, "message": m} for n, m in run.collect_errors]},
            integrity=integrity,
            extra={"runner": runner, "cost": cost, "patch_ref": patch_ref},
        )  # fmt: skip
        if control is not None:
            envelope["candidate_no_verdict_reason"] = reason
        return GradeResult(envelope, EXIT_RESOLVED if failure_class == "none" else EXIT_NOT_RESOLVED, failure_class)
    except InfraFailure as exc:
        runner["failure_class"] = exc.failure_class
        runner["failure_detail"] = str(exc)
        runner["steps"] = steps
        envelope = env.build_envelope(
            instance_id=instance.instance_id, score=None, grading=None, no_verdict=f"infrastructure failure ({exc.failure_class}): {exc}",
            session={}, extra={"runner": runner, "cost": {"wall_time": round(time.perf_counter() - started, 3)}, "patch_ref": patch_ref},
        )  # fmt: skip
        return GradeResult(envelope, EXIT_INFRA, exc.failure_class)
    finally:
        if request.keep:
            runner["workspace"] = str(workspace)
        else:
            shutil.rmtree(workspace, ignore_errors=True)


def _control_run(
    request: GradeRequest,
    copy: Path,
    baseline: str,
    test_patch: str | None,
    test_patch_files: Sequence[str],
    test_files: Sequence[str],
    python: str,
    workspace: Path,
) -> tuple[RunRecord, str | None, str]:
    """Run the base with the test patch: does the environment work without the candidate?"""
    _reset(copy, baseline)
    if test_patch:
        apply_test_patch(copy, baseline, test_patch, test_patch_files, workspace)
    guarded = [*test_patch_files, *request.instance.test_files()]
    before = protect.snapshot(copy, guarded)
    run = run_tests(copy=copy, workspace=workspace, python=python, test_files=test_files,
                    timeout=request.timeout, network=request.network, label="control")  # fmt: skip
    _, reason, failure = assess(run, request.instance, request.compat, copy, request.timeout)
    changes = protect.snapshot_changes(before, protect.snapshot(copy, guarded))
    if reason is None and changes:
        reason = f"the base's own tests modify protected files: {', '.join(changes[:5])}"
    return run, reason, failure


def _finish_unapplied(
    request: GradeRequest,
    instance: Instance,
    patch_ref: str,
    runner: dict[str, Any],
    steps: list[dict[str, Any]],
    workspace: Path,
    started: float,
) -> GradeResult:
    """A candidate that does not apply: not resolved, no test ran, failure class patch_apply."""
    grading = grade(instance, {}, request.compat)
    by = env.graded_by(
        mode="runner", pytest_version="n/a", python="n/a", platform=f"{sys.platform}", timeout=request.timeout,
        compat=request.compat,
    )  # fmt: skip
    score = make_score(grading, patch_ref, by, int(time.time()))
    runner["failure_class"] = "patch_apply"
    runner["failure_detail"] = runner["apply"].get("error") or "no strategy applied the candidate patch"
    runner["steps"] = steps
    envelope = env.build_envelope(
        instance_id=instance.instance_id,
        score=score,
        grading=grading,
        no_verdict=None,
        session={},
        extra={"runner": runner, "cost": {"wall_time": round(time.perf_counter() - started, 3), "cpu": 0.0},
               "patch_ref": patch_ref},
        patch_applied=False,
    )  # fmt: skip
    return GradeResult(envelope, EXIT_NOT_RESOLVED, "patch_apply")


def _graded_by(session: Mapping[str, Any], request: GradeRequest) -> str:
    return env.graded_by(
        mode="runner",
        pytest_version=str(session.get("pytest_version", "unknown")),
        python=f"{session.get('python_implementation', 'Python')}/{session.get('python_version', 'unknown')}",
        platform=str(session.get("platform", sys.platform)),
        timeout=request.timeout,
        compat=request.compat,
    )
