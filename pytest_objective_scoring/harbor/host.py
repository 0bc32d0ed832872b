"""A task's solution and verifier run on this machine: a task that needs no container, or that
declares ``[environment] host_ok = true``.

:func:`verify_state` runs the task's pytest tests on a copy of a working state in a subprocess,
with this project's recorder, without network, in the runner's sandbox where this machine gives one
(the copy writable, the tests and the recorder read-only, nothing else of this machine in sight),
and a timeout that kills the whole process group; :func:`run_solution` runs the task's solution
script in a working state (a subprocess: no network, a timeout).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .check import task_env
from .task import TaskSpec
from .verification import (
    Verification,
    _Ran,
    _graded,
    _stage_solution,
    _stage_tests,
    _stage_tools,
    _tail,
    copy_state,
    remove_shadowing,
    state_digest,
)


def _environment(workspace: Path, extra: Mapping[str, str]) -> dict[str, str]:
    from ..workspace import base_env

    env = base_env()
    env.update(HOME=str(workspace / "home"), TMPDIR=str(workspace / "tmp"), PYTHONDONTWRITEBYTECODE="1",
               PYTHONHASHSEED="0", PYTHONIOENCODING="utf-8")  # fmt: skip
    (workspace / "home").mkdir(exist_ok=True)
    (workspace / "tmp").mkdir(exist_ok=True)
    env.update(extra)
    return env


def run_solution(spec: TaskSpec, state: Path, workspace: Path, timeout: float,
                 env: Mapping[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    """Run the task's solution script in ``state`` (a subprocess: no network, a timeout), with ``env``
    (the task's ``[solution] env``, resolved; default: resolved here)."""
    from ..testrun import isolation_prefix, run_process

    script = _stage_solution(spec, workspace) / spec.solution.name  # type: ignore[union-attr]
    solution_env = task_env(spec)["solution"] if env is None else env
    env = _environment(workspace, solution_env)
    log = workspace / "solve.log"
    command = ["bash", str(script)]
    code, timed_out, wall, cpu = run_process([*isolation_prefix(False), *command], cwd=state, env=env,
                                             timeout=timeout, log=log)  # fmt: skip
    return {"command": command, "exit_code": code, "timed_out": timed_out, "timeout": timeout,
            "wall_time": round(wall, 3), "cpu": round(cpu, 3), "output_tail": _tail(log)}  # fmt: skip


def verify_state(spec: TaskSpec, state: Path | None, *, python: str, timeout: float, timeout_source: str,
                 workspace: Path, label: str, original: Path | None = None, exclude: frozenset[str] = frozenset(),
                 described: str | None = None, env: Mapping[str, str] | None = None) -> Verification:  # fmt: skip
    """Run the task's pytest tests on a copy of ``state`` on this machine and compute the reward.

    The copy is the tests' working directory and first on their import path; the task's
    ``tests/`` are copied beside it (``$TEST_DIR``) with their own pytest configuration (an
    empty ``pytest.ini`` when they have none, so nothing of the working state configures
    the verifier). pytest runs in a subprocess of ``python`` with the recorder, no network
    where ``unshare`` works, and a timeout that kills the whole process group. ``env`` is the
    task's ``[verifier] env``, resolved (default: resolved here).
    """
    from ..testrun import (
        BOOT_MODULE,
        RECORDER_MODULE,
        isolation_prefix,
        record_key,
        run_process,
    )
    from ..workspace import import_roots

    area = workspace / label
    area.mkdir(parents=True)
    copy = area / "app"
    copy_state(state, copy, exclude)
    patch_ref = state_digest(copy)
    removed = remove_shadowing(copy)
    tests = _stage_tests(spec, area)
    tools = _stage_tools(area)
    descriptor, name = tempfile.mkstemp(prefix="record-", suffix=".jsonl", dir=area)
    os.close(descriptor)
    record_file = Path(name)  # an unpredictable name, handed over as an append-only descriptor
    writer = os.open(record_file, os.O_WRONLY | os.O_APPEND)
    key = record_key()
    roots, packages = import_roots(copy)
    verifier_env = task_env(spec)["verifier"] if env is None else env
    environment = _environment(area, {
        "PYTHONPATH": os.pathsep.join([str(tools), *roots]),
        "TEST_DIR": str(tests),
        "PYTHONNOUSERSITE": "1",
        "OBJECTIVE_SCORING_RECORD_FD": str(writer),
        "OBJECTIVE_SCORING_RECORD_KEY_STDIN": "1",  # the key on standard input: in no environment
        "OBJECTIVE_SCORING_ACTIVE": "1",
        "OBJECTIVE_SCORING_IMPORT_ROOTS": os.pathsep.join(roots),
        "OBJECTIVE_SCORING_PACKAGES": os.pathsep.join(packages),
        "OBJECTIVE_SCORING_COPY": str(copy.resolve()),
        "OBJECTIVE_SCORING_ORIGINAL": str((original or state or copy).resolve()),
        **verifier_env,
    })  # fmt: skip
    files = [str(tests / p.relative_to(spec.tests_dir)) for p in spec.test_files]
    environment["OBJECTIVE_SCORING_GUARDED"] = os.pathsep.join(f for f in files if os.pathsep not in f)
    # Through the boot module, isolated (-I -S -B), as the runner starts a test process: the key and
    # the record's descriptor taken and the audit hook installed before anything else runs, the
    # modules signing needs imported from the interpreter's own standard library before site and
    # before the state is on the path, the task's test files fingerprinted. -p no:objective_scoring:
    # this package's own plugin, installed in the grader's environment, is neither needed nor
    # importable in the sandbox (its sources are out of sight).
    command = [python, "-I", "-S", "-B", str(tools / f"{BOOT_MODULE}.py"), "-p", RECORDER_MODULE, "-p", "no:cacheprovider",
               "-p", "no:objective_scoring", "-q", "-rfE", "--maxfail=0", "--continue-on-collection-errors",
               "--rootdir", str(tests), *files]  # fmt: skip
    log = area / "pytest.log"
    launch, isolation, (reader, status) = _confined_verification(command, area, copy, tests, tools, python,
                                                                  [original, state])  # fmt: skip
    try:
        code, timed_out, wall, cpu = run_process(launch, cwd=copy if reader < 0 else Path("/"), env=environment,
                                                 timeout=timeout, log=log, stdin_data=(key + "\n").encode("ascii"),
                                                 pass_fds=(writer,) if status < 0 else (writer, status))  # fmt: skip
    finally:
        os.close(writer)
        if status >= 0:
            os.close(status)
    if reader >= 0:
        from .. import sandbox

        ok, failure = sandbox.read_status(reader)
        if not ok:  # this machine cannot give the sandbox here: verify again, unconfined and saying so
            sandbox.demote(str(area.parent), "namespaces-copy", failure)
            shutil.rmtree(area, ignore_errors=True)
            return verify_state(spec, state, python=python, timeout=timeout, timeout_source=timeout_source,
                                workspace=workspace, label=label, original=original, exclude=exclude,
                                described=described, env=env)  # fmt: skip
    run = {"command": command, "exit_code": code, "timed_out": timed_out, "wall_time": round(wall, 3),
           "cpu": round(cpu, 3), "output_tail": _tail(log), "isolation": isolation}  # fmt: skip
    shown = described or (str(state) if state is not None else "<empty>")
    ran = _Ran(label, shown, run, record_file, timed_out, python, python, copy, patch_ref, removed, log, key)
    return _graded(spec, ran, timeout, timeout_source)


def _confined_verification(command: list[str], area: Path, copy: Path, tests: Path, tools: Path, python: str,
                           hidden: list[Path | None]) -> tuple[list[str], dict[str, Any], tuple[int, int]]:  # fmt: skip
    """The verifier's pytest in the runner's sandbox (:func:`.testrun.confined`): the working state's
    copy and the verification's home and tmp writable, the task's tests and the recorder read-only,
    nothing else of this machine in sight."""
    from .. import sandbox
    from ..testrun import confined, isolation_prefix

    mode, why = sandbox.probe(str(area.parent))
    place = area / "runs" / "verify"
    place.mkdir(parents=True)
    if mode == "none":
        return [*isolation_prefix(False), *command], {"mode": "none", "detail": why}, (-1, -1)
    return confined(command, mode="namespaces-copy", why=why, place=place, cwd=copy, network=False, python=python,
                    writable=[(area / "home", area / "home"), (area / "tmp", area / "tmp"), (copy, copy)],
                    read_only=[tests, tools], hidden=[h for h in hidden if h is not None])  # fmt: skip
