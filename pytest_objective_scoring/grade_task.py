"""One grading's context: what every stage of the pipeline (:mod:`.runner`) reads and writes.

:func:`check_request` turns a :class:`~.runner.GradeRequest` into a :class:`Task` (the interpreter
resolved, the container engine and image found, the test ids and the test patch read) or refuses it
with :class:`~.workspace.BadInput` (exit status 2) before anything is copied. The :class:`Journal`
is what the stages did, as the envelope will say it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import envelope as env
from . import protect
from .instances import Instance
from .processes import network_isolation, pid_isolation
from .command_spec import CommandSpec, SpecError, command_spec, role_protected
from .runner_choice import COMMAND, CommandError, RunnerCommand, choose, directives, id_targets, listed_files
from .testrecord import RunRecord
from .workspace import BadInput, holds_nothing, patch_applies

if TYPE_CHECKING:
    from .runner import GradeRequest

__all__ = ["Journal", "Task", "check_request", "check_test_ids", "program_targets", "repository_problem",
           "resolve_python"]


@dataclass(frozen=True)
class Task:
    """The request checked (:func:`check_request`): what every stage reads."""

    request: GradeRequest
    python: str  # an absolute path here, or the image's interpreter in container mode
    engine: str  # container mode: the engine found for ``request.engine``; "" otherwise
    test_patch: str | None  # ``request.test_patch``, else the instance's
    test_patch_files: list[str]
    guarded: list[str]  # the test patch's files, the listed tests' files and the runner's own: the judge
    patch_ref: str
    command: RunnerCommand  # which program runs the tests (:mod:`.runner_choice`)
    targets: tuple[str, ...] = ()  # what it runs (non-pytest runners: SWE-bench's test directives)
    spec: CommandSpec | None = None  # another language's runner: its command, report and language

    @property
    def language(self) -> str | None:
        """The ecosystem whose judge files are protected besides Python's (command instances)."""
        return self.spec.language if self.spec is not None else None

    @property
    def instance(self) -> Instance:
        return self.request.instance


def check_request(request: GradeRequest) -> Task:
    """What every stage needs, or :class:`BadInput` (exit status 2) when the request cannot be graded."""
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
    try:
        command = choose(instance, request.runner, request.test_cmd, request.command_source)
    except CommandError as exc:
        raise BadInput(str(exc)) from None
    spec = None
    if command.runner == COMMAND:
        try:
            spec = command_spec(instance.fields, instance.source)
        except SpecError as exc:
            raise BadInput(str(exc)) from None
        if request.image is None:
            raise BadInput(f"{instance.source}: a {spec.language} instance runs in its image: give --engine and --image "
                           "(the command runner grades in a container of the image that holds the toolchain)")  # fmt: skip
    if command.is_pytest:
        check_test_ids(instance)
    elif request.select:
        raise BadInput(f"--select: the {command.runner} runner runs the test patch's modules, as SWE-bench runs them; "
                       "selecting the listed tests is for pytest runs")  # fmt: skip
    test_patch = request.test_patch if request.test_patch is not None else instance.test_patch
    try:
        test_patch_files = protect.patch_files(test_patch) if test_patch else []
    except protect.PatchParseError as exc:
        raise BadInput(f"the test patch cannot be parsed: {exc}") from None
    if request.repo is not None:
        wrong = repository_problem(request.repo, instance, test_patch, request.test_patch is not None)
        if wrong:
            raise BadInput(wrong)
    targets = program_targets(instance, command, test_patch_files) if spec is None else []
    judged = role_protected(spec.language, test_patch_files)[0] if spec is not None else test_patch_files
    guarded = list(dict.fromkeys([*judged, *listed_files(command, instance.listed), *command.kind.protected]))
    return Task(request=request, python=python, engine=engine or "", test_patch=test_patch,
                test_patch_files=test_patch_files, guarded=guarded,
                patch_ref=request.patch_ref or env.patch_ref_of(request.patch), command=command,
                targets=tuple(targets), spec=spec)  # fmt: skip


def repository_problem(repo: Path, instance: Instance, test_patch: str | None, from_file: bool = False) -> str | None:
    """Why ``--repo`` is not the instance's repository, or None; checked before anything is copied.

    A failure counts against a candidate only when the control does not show it too
    (docs/untrusted-candidates.md). The instance's own patches are that control here: when its test
    patch does not apply to ``repo`` (at ``base_commit``), and neither does its gold patch (or it has
    none), no candidate could apply there either: the folder given is wrong, not the candidate, whose
    patch would otherwise be graded ``patch_apply``. An empty folder is never a repository to grade.
    A test patch that does not apply where the gold patch does stays the task's fault (``setup``,
    exit 3, in the run). A folder that is not a git repository while the instance names a
    ``base_commit`` is :func:`.workspace.prepare_copy`'s to say."""
    base = instance.base_commit
    if base and not (repo / ".git").exists():
        return None
    name = instance.get("repo") or "the instance's repository"
    question = f"is it {name} at {base}?" if base else f"is it {name}?"
    if not base and holds_nothing(repo):
        return f"--repo {repo}: an empty folder (nothing to grade): {question}"
    if not test_patch or patch_applies(repo, base, test_patch) is not False:
        return None
    gold = instance.patch
    if gold and patch_applies(repo, base, gold) is not False:
        return None
    which = "the test patch (--test-patch)" if from_file else "the instance's test patch"
    return f"--repo {repo}: {which} does not apply{' (nor its gold patch)' if gold else ''}: {question}"


def program_targets(instance: Instance, command: RunnerCommand, test_patch_files: list[str]) -> list[str]:
    """What a runner other than pytest runs: SWE-bench's test directives of the test patch, or,
    without one, the places the listed ids name; :class:`BadInput` when there is neither."""
    if command.is_pytest:
        return []
    found = directives(command, test_patch_files)
    if found:
        return found
    found, unplaced = id_targets(command, instance.listed)
    if unplaced or not found:
        example = unplaced[0] if unplaced else next(iter(instance.listed), "(none)")
        raise BadInput(f"{instance.source}: the {command.runner} runner cannot tell which tests to run: the instance "
                       f"has no test patch and test id {example!r} names no module or file (expected "
                       f"{command.kind.ids}, or a test_patch)")  # fmt: skip
    return found


def resolve_python(python: str) -> str:
    """An absolute interpreter path: a bare name is looked up on PATH, a relative path is made absolute."""
    found = shutil.which(python) if os.sep not in python else None
    path = os.path.abspath(found or python)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise BadInput(f"--python {python}: no such executable interpreter")
    from .interpreters import interpreter_folders

    try:  # asked once (cached): what the sandbox shows of it
        interpreter_folders(path)
    except (OSError, ValueError, KeyError, subprocess.SubprocessError) as exc:
        detail = " ".join(str(exc).split())[-300:]
        raise BadInput(f"--python {python}: does not run as a Python interpreter ({detail})") from None
    return path


def check_test_ids(instance: Instance) -> None:
    """The runner runs pytest: every listed id must name a pytest test file."""
    for test_id in (*instance.fail_to_pass, *instance.pass_to_pass):
        path = test_id.split("::", 1)[0]
        if not path.endswith(".py"):
            raise BadInput(
                f"{instance.source}: test id {test_id!r} is not a pytest node id (path/to/test_file.py::test_name), "
                "and pytest runs this instance's tests: name its runner (the instance's 'runner' field, --runner, or "
                "an --environments entry's 'runner': django, sympy, unittest) or give a SWE-bench row its repo and version"
            )


class Journal:
    """What the stages did, as the envelope says it: the ``runner`` section (each stage adds its
    part, in the order the envelope shows them), the steps and their seconds, every run of the
    candidate's code (for the cost) and the integrity flags."""

    def __init__(self, task: Task) -> None:
        request = task.request
        self.started = time.perf_counter()
        self.mark = self.started
        self.steps: list[dict[str, Any]] = []
        self.runs: list[RunRecord] = []
        self.integrity: list[dict[str, str]] = []
        self.runner: dict[str, Any] = {
            "repo": str(request.repo) if request.repo is not None else f"{request.image}:{request.repo_dir}",
            "base_commit": task.instance.base_commit,
            "python": task.python,
            "timeout": request.timeout,
            "network": "allowed" if request.network else ("unshared" if network_isolation() else "not isolated: unshare unavailable"),
            "processes": "own PID namespace" if pid_isolation() else "process group only: unshare --pid unavailable",
            "test_patch": {"source": "file" if request.test_patch is not None else ("instance" if task.test_patch else None),
                           "files": task.test_patch_files},
            "scope": "listed tests only (--select)" if request.select else "every test of the listed tests' files",
            "test_command": task.command.to_dict(),
        }  # fmt: skip
        if task.spec is not None:
            self.runner["scope"] = f"what the instance's test_command runs ({task.spec.language})"
            self.runner["test_command"] = task.spec.to_dict()
        elif not task.command.is_pytest:
            self.runner["scope"] = f"the test patch's modules, as SWE-bench runs them ({task.command.runner})"
            self.runner["targets"] = list(task.targets)

    def step(self, name: str) -> None:
        now = time.perf_counter()
        self.steps.append({"name": name, "seconds": round(now - self.mark, 4)})
        self.mark = now
