"""What is known of a task before anything of it runs, and what stands between it and a run.

:func:`static_tests` finds the test functions of the task's test files by reading them (``ast``).
:func:`check_task` lists what stops a verification, and what Harbor itself would miss, as
:class:`Finding` s (``objective-score harbor check``). :func:`task_env` resolves the task's
``[environment]``, ``[verifier]`` and ``[solution] env`` templates from this environment.
:func:`find_engine` finds the container engine (docker, podman) that answers, :func:`runs_in` says
where the task's scripts run (its container, or this machine), and :func:`refusal` why the task is
not run here: a key this machine cannot honour, a container that no engine here can give, or
scripts written for a container that would have to run on the host.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .environment import CONTAINER_ROOTS, TaskError, container_paths, dockerfile_workdir
from .rewards import matches
from .task import RewardRules, TaskSpec

ENGINES: Final = ("docker", "podman")
ENV_VAR: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
HOST_SCRIPT_NOTE: Final = ("tests/test.sh is not run on this machine (it writes to /logs/verifier, a path of the "
                           "task's container): this project's verifier decides here; in the container the script's "
                           "reward decides whenever it writes one")  # fmt: skip
LINE_BREAK: Final = "contains a line break: a container gets the task's environment from an env file, one line a variable"



@dataclass(frozen=True)
class StaticTest:
    """A test function found by reading a test file (``ast``), before anything runs."""

    test_id: str  # "test_outputs.py::test_x" or "test_outputs.py::TestC::test_y", relative to tests/
    name: str

    def covers(self, nodeid: str) -> bool:
        """Whether an executed node id is this function (itself, or one of its parameter sets)."""
        return nodeid == self.test_id or nodeid.startswith(self.test_id + "[")


def static_tests(spec: TaskSpec) -> tuple[list[StaticTest], list[str]]:
    """The test functions of the task's test files, and the files that do not parse."""
    found: list[StaticTest] = []
    problems = []
    for path in spec.test_files:
        rel = path.relative_to(spec.tests_dir).as_posix()
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError) as exc:
            where = f" line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
            problems.append(f"{spec.rel(path)}:{where} does not parse ({exc.msg if isinstance(exc, SyntaxError) else exc})")
            continue
        except OSError as exc:
            problems.append(f"{spec.rel(path)}: cannot be read ({exc.strerror})")
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                found.append(StaticTest(f"{rel}::{node.name}", node.name))
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                methods = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
                if any(m.name == "__init__" for m in methods):
                    continue  # pytest does not collect a class with __init__
                for method in methods:
                    if method.name.startswith("test"):
                        found.append(StaticTest(f"{rel}::{node.name}::{method.name}", method.name))
    return found, problems


@dataclass(frozen=True)
class Finding:
    """Something a task check found: ``error`` (cannot be verified), ``warning`` or ``note``."""

    severity: str
    where: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"severity": self.severity, "where": self.where, "message": self.message}


@dataclass(frozen=True)
class EngineStatus:
    """The container engine on PATH, if any, and whether it answers."""

    name: str | None
    path: str | None
    usable: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path, "usable": self.usable, "detail": self.detail}


def find_engine(search_path: str | None = None, probe: bool = True) -> EngineStatus:
    """The container engine to use: the first of docker, podman on PATH that answers ``info``.

    When none answers, the status of the first one found says why (and names the others).
    """
    failures: list[EngineStatus] = []
    for name in ENGINES:
        found = shutil.which(name, path=search_path)
        if found is None:
            continue
        if not probe:
            return EngineStatus(name, found, False, f"{name} found at {found} (not probed)")
        try:
            result = subprocess.run([found, "info"], check=False, capture_output=True, text=True, errors="replace",
                                    stdin=subprocess.DEVNULL, timeout=20)  # fmt: skip
        except (OSError, subprocess.SubprocessError) as exc:
            failures.append(EngineStatus(name, found, False, f"{name} is on PATH ({found}) but does not run: {exc}"))
            continue
        if result.returncode != 0:
            lines = [line for line in (result.stderr or result.stdout).strip().splitlines() if line.strip()]
            why = lines[-1].strip() if lines else f"exit status {result.returncode}"
            failures.append(EngineStatus(name, found, False, f"{name} is on PATH ({found}) but does not answer: {why}"))
            continue
        return EngineStatus(name, found, True, f"{name} at {found} answers")
    if failures:
        first = failures[0]
        return EngineStatus(first.name, first.path, False, "; ".join(f.detail for f in failures))
    return EngineStatus(None, None, False, f"no container engine on PATH (looked for {', '.join(ENGINES)})")


def runs_in(spec: TaskSpec, base_image: str | None = None) -> str:
    """Where the task's scripts run: ``container`` when it needs its container (or has none and
    ``base_image`` gives it one), else ``host``."""
    return "container" if spec.needs_container or (base_image and not spec.container) else "host"


def host_problems(spec: TaskSpec) -> list[str]:
    """What makes a task unable to run on the host: scripts that use absolute container paths
    (``/app``, ``/tests``, ``/logs``, ``/solution``, its working directory), and settings of its
    container (users, a healthcheck, artifacts, a working directory). Empty when it can."""
    roots = list(CONTAINER_ROOTS)
    if spec.workdir:
        roots.append(spec.workdir)
    if spec.compose is not None and spec.compose.workdir:
        roots.append(spec.compose.workdir)
    dockerfile = spec.build_context / "Dockerfile" if spec.build_context is not None else None
    if dockerfile is not None and dockerfile.is_file():
        declared = dockerfile_workdir(dockerfile.read_text(encoding="utf-8", errors="replace"))
        if declared and declared != "/":
            roots.append(declared)
    scripts: list[Path] = []
    if spec.tests_dir.is_dir():
        # the test script is not run on the host, nor are Terminal-Bench's helpers for run-tests.sh
        skip = {spec.test_script, spec.tests_dir / "setup-uv-pytest.sh", spec.tests_dir / "run-uv-pytest.sh"}
        scripts.extend(p for p in sorted(spec.tests_dir.rglob("*")) if p.suffix in (".py", ".sh") and p not in skip
                       and p.is_file() and "__pycache__" not in p.parts)  # fmt: skip
    if spec.solution is not None:
        if spec.layout == "harbor":
            scripts.extend(p for p in sorted(spec.solution.parent.rglob("*")) if p.suffix in (".py", ".sh") and p.is_file())
        else:
            scripts.append(spec.solution)
    problems = []
    for script in scripts:
        found = container_paths(script, roots)
        if found:
            shown = ", ".join(f"line {line}: {path}" for line, path in found[:3]) + (", ..." if len(found) > 3 else "")
            problems.append(f"{spec.rel(script)} uses absolute container paths ({shown})")
    config = spec.rel(spec.config_file)
    for table, user in (("verifier", spec.verifier_user), ("agent", spec.agent_user)):
        if user is not None:
            problems.append(f"{config} {spec.key(table, 'user')} = {user!r} is a user of the container")
    if spec.workdir:
        problems.append(f"{config} {spec.key('environment', 'workdir')} = {spec.workdir!r} is the container's working "
                        "directory")  # fmt: skip
    if spec.healthcheck is not None:
        problems.append(f"{spec.healthcheck.source} checks the container")
    if spec.artifacts:
        problems.append(f"{config} artifacts are container paths ({', '.join(spec.artifacts)})")
    return problems


def refusal(spec: TaskSpec, engine: EngineStatus | None, base_image: str | None = None) -> str | None:
    """Why the task is not run here, or ``None``: a key this machine cannot honour (a GPU, a second
    container, a multi-step task, a key of no known meaning...), a container that no engine here
    can give, or scripts written for a container that would have to run on the host."""
    if spec.refused:
        shown = "; ".join(k.message() for k in spec.refused)
        return f"task {spec.name} asks for what objective-score harbor cannot give it: {shown}"
    if runs_in(spec, base_image) == "container":
        if spec.needs_container:
            head = (f"task {spec.name} needs a container ({', '.join(spec.container)}) and does not declare "
                    f"{spec.key('environment', 'host_ok')} = true; refusing to run its scripts on the host: ")  # fmt: skip
        else:
            head = f"task {spec.name} runs in a container of --base-image {base_image}: "
        if engine is None or not engine.usable:
            return head + (engine.detail if engine is not None else "no container engine was looked for")
        return None
    problems = host_problems(spec)
    if not problems:
        return None
    if spec.container:
        fix = (f"run it in its container: remove {spec.key('environment', 'host_ok')} = true from "
               f"{spec.rel(spec.config_file)}")  # fmt: skip
    else:
        fix = ("it has no container files (Dockerfile, compose file or docker_image): give it one, or run it in a "
               "container of a local image with --base-image IMAGE (its initial state is copied to /app)")  # fmt: skip
    return (f"task {spec.name} never runs on the host, where a correct state would be graded not solved: its scripts "
            f"are written for its container ({'; '.join(problems)}); {fix}")  # fmt: skip


def check_task(spec: TaskSpec) -> list[Finding]:
    """What stands between this task and a verification, and what Harbor itself would miss."""
    findings = [Finding("note", spec.rel(spec.config_file) or "", note) for note in spec.notes]
    script_decides = spec.layout == "harbor" and spec.test_script is not None and spec.needs_container
    if not spec.tests_dir.is_dir():
        findings.append(Finding("error", "tests/", "no tests/ directory: nothing to verify the task with"))
    elif not spec.test_files and script_decides:
        findings.append(Finding("note", "tests/", "no pytest tests: tests/test.sh's reward decides (no per-test "
                                "outcomes; a script that writes no reward gives no verdict)"))  # fmt: skip
    elif not spec.test_files:
        findings.append(Finding("error", "tests/", "no pytest tests (tests/test_outputs.py or tests/test_*.py): this "
                                "verifier runs the task's pytest tests; a task verified by its test script alone "
                                "runs in its container (tests/test.sh decides) or in Harbor"))  # fmt: skip
    found, problems = static_tests(spec)
    findings.extend(Finding("error", problem.split(":", 1)[0], problem) for problem in problems)
    if spec.test_files and not found and not problems:
        findings.append(Finding("error", "tests/", "the test files define no test function (test_*)"))
    if found:
        config = spec.rel(spec.config_file)
        declared = [(f"{config} {spec.key('verifier', 'weights')}.{n}", n) for n in spec.rules.weights]
        for tier in spec.rules.tiers:
            declared.extend((f"{config} {spec.key('verifier', 'tiers')}.{tier.name}", n) for n in tier.tests or ())
        for where, test_name in declared:
            if not any(matches(test_name, t.test_id) for t in found):
                findings.append(Finding("error", where, f"no test {test_name!r} in {', '.join(spec.rel(p) or '' for p in spec.test_files)}"))
        if spec.metric_space == "continuous_reward" and all(_weighs_nothing(spec.rules, t) for t in found):
            findings.append(Finding("error", f"{config} {spec.key('verifier', 'weights')}", "every test weighs 0: "
                                    "the reward is always 0, so the task can never be solved"))  # fmt: skip
    _, env_problems = _resolved_env(spec)
    findings.extend(Finding("error", f"{spec.rel(spec.config_file)} {key}", problem) for key, problem in env_problems)
    if spec.layout == "harbor":
        if spec.instruction is None:
            findings.append(Finding("warning", "instruction.md", "missing: Harbor needs the task's instruction"))
        if spec.build_context is None and not any("docker_image" in c for c in spec.container):
            findings.append(Finding("warning", "environment/", "missing: Harbor needs environment/ (a Dockerfile or "
                                    "docker-compose.yaml) or [environment] docker_image"))  # fmt: skip
    elif spec.instruction is None and spec.instruction_text is None:
        findings.append(Finding("warning", "task.yaml", "no instruction"))
    script = "tests/test.sh" if spec.layout == "harbor" else "run-tests.sh"
    if spec.test_script is None:
        findings.append(Finding("warning", script, "missing: Harbor runs it as the verifier (this command runs the "
                                "pytest tests itself)"))  # fmt: skip
    elif spec.layout != "harbor":
        findings.append(Finding("note", script, "not run: Terminal-Bench parses pytest's report of it (parser_name "
                                "pytest); this verifier runs the pytest tests itself, with its own outcome rules"))  # fmt: skip
    elif spec.needs_container:
        findings.append(Finding("note", script, "runs first in the container, as Harbor runs it: its reward decides "
                                "whenever it writes one (every dimension kept); this project's verifier runs the "
                                "pytest tests too, as a cross-check, and decides when the script writes no reward"))  # fmt: skip
    else:
        findings.append(Finding("note", script, HOST_SCRIPT_NOTE))
    if spec.solution is None:
        sol = "solution/solve.sh" if spec.layout == "harbor" else "solution.sh"
        extra = " (solution.yaml, a scripted terminal session, is not run here)" if (spec.root / "solution.yaml").is_file() else ""
        findings.append(Finding("warning", sol, f"missing: no oracle canary possible (--solution){extra}"))
    if spec.container and spec.host_ok:
        findings.append(Finding("note", spec.key("environment", "host_ok"),
                                f"runs on the host although it has {', '.join(spec.container)}"))  # fmt: skip
    if not spec.needs_container and "public" in spec.network.values():
        findings.append(Finding("note", spec.key("environment", "allow_internet"), "the task allows the network; on "
                                "the host the solution and the verifier have none (set allow_internet = false to say "
                                "so, or run it in a container)"))  # fmt: skip
    return findings


def _weighs_nothing(rules: RewardRules, test: StaticTest) -> bool:
    """Whether a test found in the files certainly weighs 0: a declared name covering the whole function
    gives it 0 and no declared name (of it or of one of its parameter sets) gives it more."""
    covering = any(matches(name, test.test_id) for name in rules.weights)
    related = [w for name, w in rules.weights.items() if matches(name.split("[", 1)[0], test.test_id)]
    return covering and not any(related)


def resolve_env(spec: TaskSpec, table: str, values: Mapping[str, str]) -> dict[str, str]:
    """Harbor's ``${VAR}`` and ``${VAR:-default}`` templates, resolved from this process's environment."""
    resolved = {}
    for name, value in values.items():
        def substitute(match: re.Match[str], _name: str = name) -> str:
            var, default = match.group(1), match.group(2)
            if var in os.environ:
                return os.environ[var]
            if default is not None:
                return default
            raise TaskError(spec.config_file, spec.key(table, f"env.{_name}"), f"${{{var}}} is not set in this environment")

        resolved[name] = ENV_VAR.sub(substitute, value)
    return resolved


def _resolved_env(spec: TaskSpec) -> tuple[dict[str, dict[str, str]], list[tuple[str, str]]]:
    """The task's ``[verifier]`` and ``[solution] env``, resolved from this environment, and what stops a
    value from reaching the tests, as ``(key, problem)`` pairs: an unset variable, or (for a task that
    runs in a container, whose values travel in an env file, one line a variable) a line break."""
    resolved: dict[str, dict[str, str]] = {}
    problems: list[tuple[str, str]] = []
    tables = (("environment", spec.environment_env), ("verifier", spec.verifier_env), ("solution", spec.solution_env))
    for table, values in tables:
        resolved[table] = {}
        for name, value in values.items():
            key = spec.key(table, f"env.{name}")
            try:
                text = resolve_env(spec, table, {name: value})[name]
            except TaskError as exc:
                problems.append((key, exc.problem))
                continue
            if spec.needs_container and ("\n" in text or "\r" in text):
                problems.append((key, LINE_BREAK))
                continue
            resolved[table][name] = text
    # [environment.env] is every phase's; a phase's own env wins
    resolved["verifier"] = {**resolved["environment"], **resolved["verifier"]}
    resolved["solution"] = {**resolved["environment"], **resolved["solution"]}
    return resolved, problems


def task_env(spec: TaskSpec) -> dict[str, dict[str, str]]:
    """The task's ``[verifier]`` and ``[solution] env`` (keys ``verifier``, ``solution``; each with
    ``[environment.env]`` under it) and ``[environment.env]`` itself (``environment``), resolved from
    this environment before anything runs; raises :class:`TaskError` naming the key and the variable."""
    resolved, problems = _resolved_env(spec)
    if problems:
        raise TaskError(spec.config_file, *problems[0])
    return resolved
