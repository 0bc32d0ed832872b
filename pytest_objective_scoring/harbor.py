"""Harbor and Terminal-Bench task directories, verified by executing their tests.

A task directory is read into a :class:`TaskSpec`: Harbor's layout (``task.toml``,
``instruction.md``, ``environment/``, ``tests/test.sh`` and ``tests/test_outputs.py``,
``solution/solve.sh``) or Terminal-Bench 1's (``task.yaml``, a ``Dockerfile`` and
``docker-compose.yaml`` at the top, ``run-tests.sh``, ``solution.sh``, ``tests/``).

:func:`verify_state` runs the task's pytest tests on a copy of a working state in a
subprocess, with this project's recorder and scorer as the verifier (every test of the
task's test files is a FAIL_TO_PASS test of an instance built on the fly), and
:func:`compute_reward` turns the per-test outcomes into the task's reward in its own
metric space: ``binary`` (1.0 only when every test passes), ``continuous_reward`` (the
share of tests passed, optionally weighted, with the task's solved threshold) or
``tiers`` (incomplete / partial / complete, as declared). :func:`run_task` writes the
reward where Harbor reads it (``reward.txt``, or ``reward.json`` for named rewards) and,
with ``solution=True``, grades the task's ``solution/`` as the oracle canary and the
untouched initial state as the empty canary.

A task that needs a container is never run on the host unless it declares
``[environment] host_ok = true``: :class:`NeedsContainer` (exit status 3) says what is
missing instead. ``docs/harbor.md`` documents every convention. Loading, validation,
static test discovery and rewards are pure; this module never imports pytest.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from . import __version__

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_NOT_SOLVED",
    "EXIT_REFUSED",
    "EXIT_SOLVED",
    "METRIC_SPACES",
    "EngineStatus",
    "Finding",
    "HarborRun",
    "NeedsContainer",
    "Reward",
    "RewardRules",
    "RunOptions",
    "StaticTest",
    "TaskError",
    "TaskSpec",
    "Tier",
    "Verification",
    "check_task",
    "compute_reward",
    "find_engine",
    "load_task",
    "run_task",
    "static_tests",
    "verify_state",
]

EXIT_SOLVED: Final = 0
EXIT_NOT_SOLVED: Final = 1
EXIT_BAD_INPUT: Final = 2
EXIT_REFUSED: Final = 3

METRIC_SPACES: Final = ("binary", "continuous_reward", "tiers")
REWARD_KINDS: Final = ("binary", "share")
NO_TIER: Final = "incomplete"
ALL_TESTS: Final = "all"
DEFAULT_TIMEOUT: Final = 600.0  # Harbor's own default for [verifier] timeout_sec
CONTAINER_FILES: Final = ("Dockerfile", "docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")
BUILD_ONLY: Final = frozenset({*CONTAINER_FILES, ".dockerignore"})
# Terminal-Bench 1 builds from the task's root: these are the task, not its initial working state.
TASK_FILES: Final = frozenset({"task.toml", "task.yaml", "instruction.md", "tests", "solution", "solution.sh",
                               "solution.yaml", "run-tests.sh", "environment", "logs", "README.md"})  # fmt: skip
ENGINES: Final = ("docker", "podman")
RESULT_FILE: Final = "objective-scoring.json"
REWARD_TXT: Final = "reward.txt"
REWARD_JSON: Final = "reward.json"
TEST_STDOUT: Final = "test-stdout.txt"
PYTEST_CONFIGS: Final = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
COPY_SKIP: Final = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".objective-scoring"})
# A file of the working state that Python or pytest would load in place of the verifier itself.
SHADOWING: Final = frozenset({"pytest.py", "_pytest", "pluggy", "py.py", "xdist", "sitecustomize.py",
                              "usercustomize.py", "_objective_scoring_recorder.py"})  # fmt: skip
OUTPUT_TAIL: Final = 4000
ENV_VAR: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class TaskError(ValueError):
    """A task directory that cannot be used as given: names the file, the key and what was expected."""

    def __init__(self, source: Path | str, key: str | None, problem: str) -> None:
        self.source = str(source)
        self.key = key
        self.problem = problem
        super().__init__(f"{source}: {key}: {problem}" if key else f"{source}: {problem}")


class NeedsContainer(RuntimeError):
    """The task needs a container that this command does not provide; nothing ran on the host."""


# --------------------------------------------------------------------------------------------
# The task


@dataclass(frozen=True)
class Tier:
    """One declared tier: its name and the tests that must all pass (``None``: every test)."""

    name: str
    tests: tuple[str, ...] | None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "tests": ALL_TESTS if self.tests is None else list(self.tests)}


@dataclass(frozen=True)
class RewardRules:
    """How a task turns test outcomes into its reward (``[verifier]`` of ``task.toml``)."""

    kind: str = "binary"
    threshold: float | None = None
    weights: Mapping[str, float] = field(default_factory=dict)
    tiers: tuple[Tier, ...] = ()

    @property
    def metric_space(self) -> str:
        if self.kind == "share":
            return "continuous_reward"
        return "tiers" if self.tiers else "binary"

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric_space": self.metric_space,
            "reward": self.kind,
            "threshold": self.solved_threshold,
            "weights": dict(self.weights),
            "tiers": [t.to_dict() for t in self.tiers],
        }

    @property
    def solved_threshold(self) -> float | None:
        if self.metric_space == "binary":
            return 1.0
        if self.metric_space == "continuous_reward":
            return 1.0 if self.threshold is None else self.threshold
        return None


@dataclass(frozen=True)
class TaskSpec:
    """A task directory as this verifier reads it."""

    root: Path
    name: str
    layout: str  # "harbor" or "terminal-bench"
    config_file: Path
    instruction: Path | None
    instruction_text: str | None
    container: tuple[str, ...]  # why the task needs a container (empty: it does not)
    host_ok: bool
    build_context: Path | None
    host_workdir: Path | None
    tests_dir: Path
    test_files: tuple[Path, ...]
    test_script: Path | None
    solution: Path | None
    verifier_timeout: float | None
    agent_timeout: float | None
    rules: RewardRules
    verifier_env: Mapping[str, str] = field(default_factory=dict)
    solution_env: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def metric_space(self) -> str:
        return self.rules.metric_space

    @property
    def needs_container(self) -> bool:
        """The task needs a container and does not declare that it can run on the host."""
        return bool(self.container) and not self.host_ok

    def rel(self, path: Path | None) -> str | None:
        if path is None:
            return None
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def key(self, table: str, key: str) -> str:
        """How a setting is spelled in this task's configuration file (for messages)."""
        return f"[{table}] {key}" if self.config_file.suffix == ".toml" else f"{table}.{key}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "root": str(self.root),
            "layout": self.layout,
            "config_file": self.rel(self.config_file),
            "instruction": self.rel(self.instruction),
            "container": list(self.container),
            "host_ok": self.host_ok,
            "needs_container": self.needs_container,
            "initial_state": self.rel(self.initial_state_source()),
            "test_files": [self.rel(p) for p in self.test_files],
            "test_script": self.rel(self.test_script),
            "solution": self.rel(self.solution),
            "verifier_timeout": self.verifier_timeout,
            "agent_timeout": self.agent_timeout,
            "rules": self.rules.to_dict(),
            "notes": list(self.notes),
        }

    def initial_state_source(self) -> Path | None:
        """Where the initial working state comes from: ``host_workdir``, else the build context."""
        return self.host_workdir or self.build_context


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib


def _kind(value: Any) -> str:
    names = {bool: "a boolean", str: "a string", int: "an integer", float: "a number", list: "a list", dict: "a table"}
    return names.get(type(value), type(value).__name__)


class _Config:
    """Typed reads of one configuration file, each error naming the file and the key."""

    def __init__(self, path: Path, data: Mapping[str, Any]) -> None:
        self.path = path
        self.data = data
        self.toml = path.suffix == ".toml"

    def where(self, table: str | None, key: str) -> str:
        if table is None:
            return key
        return f"[{table}] {key}" if self.toml else f"{table}.{key}"

    def error(self, table: str | None, key: str, problem: str) -> TaskError:
        return TaskError(self.path, self.where(table, key), problem)

    def table(self, name: str) -> Mapping[str, Any]:
        value = self.data.get(name, {})
        if value is None and not self.toml:
            return {}
        if not isinstance(value, Mapping):
            raise TaskError(self.path, f"[{name}]" if self.toml else name, f"expected a table, got {_kind(value)}")
        return value

    def seconds(self, table: str | None, key: str) -> float | None:
        source = self.data if table is None else self.table(table)
        value = source.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise self.error(table, key, f"expected a number of seconds > 0, got {value!r}")
        return float(value)

    def flag(self, table: str, key: str) -> bool:
        value = self.table(table).get(key, False)
        if not isinstance(value, bool):
            raise self.error(table, key, f"expected true or false, got {value!r}")
        return value

    def string(self, table: str | None, key: str) -> str | None:
        source = self.data if table is None else self.table(table)
        value = source.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.error(table, key, f"expected a non-empty string, got {value!r}")
        return value

    def env(self, table: str) -> dict[str, str]:
        value = self.table(table).get("env", {})
        if not isinstance(value, Mapping):
            raise self.error(table, "env", f"expected a table of strings, got {_kind(value)}")
        env = {}
        for name, item in value.items():
            if not isinstance(item, str):
                raise self.error(table, f"env.{name}", f"expected a string, got {item!r}")
            env[str(name)] = item
        return env

    def names(self, table: str, key: str, value: Any, allow_all: bool) -> tuple[str, ...] | None:
        if allow_all and value == ALL_TESTS:
            return None
        expected = 'a list of test names (or "all")' if allow_all else "a list of test names"
        if not isinstance(value, list) or not value:
            raise self.error(table, key, f"expected {expected}, got {value!r}")
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise self.error(table, key, f"item {index}: expected a test name, got {item!r}")
        return tuple(value)


def _rules(config: _Config) -> RewardRules:
    verifier = config.table("verifier")
    kind = verifier.get("reward", "binary")
    if kind not in REWARD_KINDS:
        raise config.error("verifier", "reward", f"expected one of {', '.join(map(repr, REWARD_KINDS))}, got {kind!r}")
    threshold = verifier.get("threshold")
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
            raise config.error("verifier", "threshold", f"expected a number in (0, 1], got {threshold!r}")
        if kind != "share":
            raise config.error("verifier", "threshold", 'a solved threshold needs a continuous reward (reward = "share")')
        threshold = float(threshold)
    raw_weights = verifier.get("weights", {})
    if not isinstance(raw_weights, Mapping):
        raise config.error("verifier", "weights", f"expected a table of test name = weight, got {_kind(raw_weights)}")
    weights = {}
    for name, weight in raw_weights.items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
            raise config.error("verifier", f"weights.{name}", f"expected a weight >= 0, got {weight!r}")
        weights[str(name)] = float(weight)
    if weights and kind != "share":
        raise config.error("verifier", "weights", 'weights need a continuous reward (reward = "share")')
    raw_tiers = verifier.get("tiers", {})
    if not isinstance(raw_tiers, Mapping):
        raise config.error("verifier", "tiers", f"expected a table of tier name = test names, got {_kind(raw_tiers)}")
    tiers = []
    for name, tests in raw_tiers.items():
        if name == NO_TIER:
            raise config.error("verifier", f"tiers.{name}", f"{NO_TIER!r} is the tier of a run that reaches none; "
                               "declare only the tiers a run can reach, lowest first")  # fmt: skip
        tiers.append(Tier(str(name), config.names("verifier", f"tiers.{name}", tests, allow_all=True)))
    return RewardRules(kind=str(kind), threshold=threshold, weights=weights, tiers=tuple(tiers))


def _read_config(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TaskError(path, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise TaskError(path, None, f"cannot be read: {exc.strerror}") from None
    if path.suffix == ".toml":
        toml = _toml()
        try:
            data = toml.loads(text)
        except toml.TOMLDecodeError as exc:
            raise TaskError(path, None, f"not valid TOML ({exc})") from None
        return dict(data)
    try:
        import yaml  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        raise TaskError(path, None, "reading task.yaml (Terminal-Bench 1's layout) needs PyYAML: pip install pyyaml, "
                        "or give the task a task.toml (Harbor's layout)") from None  # fmt: skip
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TaskError(path, None, f"not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise TaskError(path, None, f"expected a mapping at the top level, got {_kind(data)}")
    return data


def load_task(path: str | Path) -> TaskSpec:
    """Read and validate a task directory; raises :class:`TaskError` naming the file and the key."""
    root = Path(path).resolve()
    if not root.is_dir():
        raise TaskError(root, None, "not a directory (expected a Harbor task directory with task.toml)")
    notes = []
    if (root / "task.toml").is_file():
        config_file = root / "task.toml"
        if (root / "task.yaml").is_file():
            notes.append("task.yaml ignored: task.toml is read")
    elif (root / "task.yaml").is_file():
        config_file = root / "task.yaml"
    else:
        raise TaskError(root, None, "no task.toml (Harbor) or task.yaml (Terminal-Bench 1): not a task directory")
    config = _Config(config_file, _read_config(config_file))
    harbor = config.toml
    rules = _rules(config)

    name = (config.string("task", "name") if harbor else None) or root.name
    if harbor:
        verifier_timeout = config.seconds("verifier", "timeout_sec")
        agent_timeout = config.seconds("agent", "timeout_sec")
    else:
        verifier_timeout = config.seconds("verifier", "timeout_sec") or config.seconds(None, "max_test_timeout_sec")
        agent_timeout = config.seconds("agent", "timeout_sec") or config.seconds(None, "max_agent_timeout_sec")

    # Harbor builds from environment/; Terminal-Bench 1 from the task's root.
    context: Path | None = root / "environment" if harbor else root
    if context is not None and not context.is_dir():
        context = None
    container: list[str] = []
    if context is not None:
        prefix = "environment/" if harbor else ""
        container.extend(prefix + f for f in CONTAINER_FILES if (context / f).is_file())
    image = config.string("environment", "docker_image")
    if image:
        container.append(f"{config.where('environment', 'docker_image')} = {image!r}")

    host_workdir = None
    declared = config.string("environment", "host_workdir")
    if declared is not None:
        candidate = (root / declared).resolve()
        if not candidate.is_relative_to(root):
            raise config.error("environment", "host_workdir", f"{declared!r} leaves the task directory")
        if not candidate.is_dir():
            raise config.error("environment", "host_workdir", f"{declared!r} is not a directory of the task")
        host_workdir = candidate

    instruction: Path | None = root / "instruction.md"
    instruction_text = None
    if not (root / "instruction.md").is_file():
        instruction = None
        if not harbor:
            instruction_text = config.string(None, "instruction")

    tests_dir = root / "tests"
    if (tests_dir / "test_outputs.py").is_file():
        test_files: tuple[Path, ...] = (tests_dir / "test_outputs.py",)
    else:
        test_files = tuple(sorted(tests_dir.glob("test_*.py"))) if tests_dir.is_dir() else ()
    script = tests_dir / "test.sh" if harbor else root / "run-tests.sh"
    solution = root / "solution" / "solve.sh" if harbor else root / "solution.sh"
    return TaskSpec(
        root=root,
        name=name,
        layout="harbor" if harbor else "terminal-bench",
        config_file=config_file,
        instruction=instruction,
        instruction_text=instruction_text,
        container=tuple(container),
        host_ok=config.flag("environment", "host_ok"),
        build_context=context,
        host_workdir=host_workdir,
        tests_dir=tests_dir,
        test_files=test_files,
        test_script=script if script.is_file() else None,
        solution=solution if solution.is_file() else None,
        verifier_timeout=verifier_timeout,
        agent_timeout=agent_timeout,
        rules=rules,
        verifier_env=config.env("verifier"),
        solution_env=config.env("solution"),
        notes=tuple(notes),
    )


# --------------------------------------------------------------------------------------------
# Static test discovery and the layout check


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


def matches(declared: str, test_id: str) -> bool:
    """Whether a test name declared in task.toml (``test_x``, ``test_x[a]``, a node id) names ``test_id``."""
    base = test_id.split("[", 1)[0]
    if "::" in declared:
        return declared in (test_id, base)
    return declared in (test_id.rsplit("::", 1)[-1], base.rsplit("::", 1)[-1])


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
    """The first container engine (docker, podman) on PATH and whether it answers ``info``."""
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
            return EngineStatus(name, found, False, f"{name} is on PATH ({found}) but does not run: {exc}")
        if result.returncode != 0:
            lines = [line for line in (result.stderr or result.stdout).strip().splitlines() if line.strip()]
            why = lines[-1].strip() if lines else f"exit status {result.returncode}"
            return EngineStatus(name, found, False, f"{name} is on PATH ({found}) but does not answer: {why}")
        return EngineStatus(name, found, True, f"{name} at {found} answers")
    return EngineStatus(None, None, False, f"no container engine on PATH (looked for {', '.join(ENGINES)})")


def refusal(spec: TaskSpec, engine: EngineStatus) -> str:
    """Why a task that needs a container is not run here: what it needs and what is missing."""
    why = ", ".join(spec.container)
    head = (f"task {spec.name} needs a container ({why}) and does not declare "
            f"{spec.key('environment', 'host_ok')} = true; refusing to run its scripts on the host: ")  # fmt: skip
    if engine.usable:
        return head + (f"{engine.detail}, but objective-score harbor runs tasks on the host only; run the task "
                       "with Harbor (harbor run -p TASK_DIR) and grade its outcomes there (docs/harbor.md)")  # fmt: skip
    return head + engine.detail


def check_task(spec: TaskSpec) -> list[Finding]:
    """What stands between this task and a verification, and what Harbor itself would miss."""
    findings = [Finding("note", spec.rel(spec.config_file) or "", note) for note in spec.notes]
    if not spec.tests_dir.is_dir():
        findings.append(Finding("error", "tests/", "no tests/ directory: nothing to verify the task with"))
    elif not spec.test_files:
        findings.append(Finding("error", "tests/", "no pytest tests (tests/test_outputs.py or tests/test_*.py): this "
                                "verifier runs the task's pytest tests; a task verified by its test script alone "
                                "needs Harbor"))  # fmt: skip
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
    else:
        findings.append(Finding("note", script, "not run here: this verifier runs the pytest tests itself, with its "
                                "own outcome rules, and writes the reward"))  # fmt: skip
    if spec.solution is None:
        sol = "solution/solve.sh" if spec.layout == "harbor" else "solution.sh"
        extra = " (solution.yaml, a scripted terminal session, is not run here)" if (spec.root / "solution.yaml").is_file() else ""
        findings.append(Finding("warning", sol, f"missing: no oracle canary possible (--solution){extra}"))
    if spec.container and spec.host_ok:
        findings.append(Finding("note", spec.key("environment", "host_ok"),
                                f"runs on the host although it has {', '.join(spec.container)}"))  # fmt: skip
    return findings


# --------------------------------------------------------------------------------------------
# Rewards (pure)


@dataclass(frozen=True)
class Reward:
    """A verification's reward in the task's metric space."""

    metric_space: str
    reward: float
    threshold: float | None
    solved: bool
    passed: int
    total: int
    tier: str | None = None  # the tier reached (NO_TIER for none); None when the task declares no tiers
    tier_rank: int | None = None
    tiers: Mapping[str, bool] = field(default_factory=dict)
    unmatched: tuple[str, ...] = ()  # declared test names that named no test of the run

    def named(self) -> dict[str, float | int]:
        """The named rewards written to ``reward.json`` (numbers only, as Harbor keeps them)."""
        data: dict[str, float | int] = {"reward": self.reward, "solved": int(self.solved),
                                        "tests_passed": self.passed, "tests_total": self.total}  # fmt: skip
        if self.tier_rank is not None:
            data["tier"] = self.tier_rank
        return data

    def reward_file(self) -> tuple[str, str]:
        """Where Harbor reads this reward: ``reward.txt`` for a binary task, else ``reward.json``."""
        if self.metric_space == "binary":
            return REWARD_TXT, ("1" if self.solved else "0") + "\n"
        return REWARD_JSON, json.dumps(self.named(), indent=2) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric_space": self.metric_space,
            "reward": self.reward,
            "threshold": self.threshold,
            "solved": self.solved,
            "tests_passed": self.passed,
            "tests_total": self.total,
            "tier": self.tier,
            "tier_rank": self.tier_rank,
            "tiers": dict(self.tiers),
            "unmatched": list(self.unmatched),
        }


def compute_reward(rules: RewardRules, outcomes: Sequence[tuple[str, bool]]) -> Reward:
    """The reward of a run from ``(test id, passed)`` pairs, in the metric space of ``rules``.

    ``binary``: 1.0 when there is at least one test and every one passed, else 0.0.
    ``continuous_reward``: the share of tests passed, each weighing its declared weight
    (1.0 when none is declared), in [0, 1]; solved when it reaches the threshold.
    ``tiers``: the tiers are cumulative, lowest first; the tier reached is the last one
    such that it and every tier before it have all their tests passed; the reward is the
    share of tiers reached. Declared tiers are reported in every metric space.
    """
    passed = {test_id: ok for test_id, ok in outcomes}
    total = len(passed)
    count = sum(passed.values())
    unmatched: list[str] = []

    def ids_of(names: Sequence[str]) -> list[str]:
        hits = []
        for name in names:
            mine = [t for t in passed if matches(name, t)]
            if not mine and name not in unmatched:
                unmatched.append(name)
            hits.extend(mine)
        return hits

    tiers: dict[str, bool] = {}
    rank: int | None = None
    if rules.tiers:
        rank = 0
        for declared in rules.tiers:
            names = declared.tests or ()
            ids = list(passed) if declared.tests is None else ids_of(names)
            complete = all(any(matches(n, t) for t in passed) for n in names)
            tiers[declared.name] = bool(ids) and complete and all(passed[t] for t in ids)
        for declared in rules.tiers:
            if not tiers[declared.name]:
                break
            rank += 1
    tier = None if rank is None else (rules.tiers[rank - 1].name if rank else NO_TIER)
    space = rules.metric_space
    threshold = rules.solved_threshold
    if space == "continuous_reward":
        weight = {t: 1.0 for t in passed}
        for name, value in rules.weights.items():
            for test_id in ids_of([name]):
                weight[test_id] = value
        whole = sum(weight.values())
        reward = sum(w for t, w in weight.items() if passed[t]) / whole if whole > 0 else 0.0
        reward = min(1.0, max(0.0, reward))
        solved = threshold is not None and round(reward, 12) >= threshold
    elif space == "tiers":
        assert rank is not None
        reward = rank / len(rules.tiers)
        solved = rank == len(rules.tiers)
    else:
        solved = total > 0 and count == total
        reward = 1.0 if solved else 0.0
    return Reward(space, reward, threshold, solved, count, total, tier, rank, tiers, tuple(unmatched))


# --------------------------------------------------------------------------------------------
# Running: copies, the solution, the verifier


def _ignore_for(root: Path, extra: frozenset[str] = frozenset()) -> Any:
    root_text = os.path.realpath(root)

    def ignore(directory: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if n in COPY_SKIP}
        here = os.path.realpath(directory)
        if here == root_text:
            skipped.update(n for n in names if n in extra)
        elif here == os.path.join(root_text, "logs"):
            skipped.update(n for n in names if n == "verifier")  # where the last verification wrote
        for name in names:
            path = os.path.join(directory, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                skipped.add(name)
                continue
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                skipped.add(name)
            elif stat.S_ISDIR(mode) and os.path.isfile(os.path.join(path, "pyvenv.cfg")):
                skipped.add(name)  # a virtualenv: the tests run in --python's environment
        return skipped

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


def remove_shadowing(copy: Path) -> list[str]:
    """Remove files of the copy that would load in place of Python's or pytest's own modules."""
    from .workspace import import_roots

    removed = []
    roots, _ = import_roots(copy)
    for root in dict.fromkeys([copy, *map(Path, roots)]):
        for name in sorted(SHADOWING):
            target = root / name
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.is_dir():
                shutil.rmtree(target)
            else:
                continue
            removed.append(target.relative_to(copy).as_posix())
    return removed


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


def _environment(workspace: Path, extra: Mapping[str, str]) -> dict[str, str]:
    from .workspace import base_env

    env = base_env()
    env.update(HOME=str(workspace / "home"), TMPDIR=str(workspace / "tmp"), PYTHONDONTWRITEBYTECODE="1",
               PYTHONHASHSEED="0", PYTHONIOENCODING="utf-8")  # fmt: skip
    (workspace / "home").mkdir(exist_ok=True)
    (workspace / "tmp").mkdir(exist_ok=True)
    env.update(extra)
    return env


def _tail(log: Path) -> str:
    try:
        return log.read_text(encoding="utf-8", errors="replace")[-OUTPUT_TAIL:]
    except OSError:
        return ""


def run_solution(spec: TaskSpec, state: Path, workspace: Path, timeout: float) -> dict[str, Any]:
    """Run the task's solution script in ``state`` (a subprocess: no network, a timeout)."""
    from .testrun import isolation_prefix, run_process

    assert spec.solution is not None
    solution = workspace / "solution"
    if spec.layout == "harbor":
        shutil.copytree(spec.solution.parent, solution, symlinks=True)
    else:
        solution.mkdir()
        shutil.copy2(spec.solution, solution / spec.solution.name)
    script = solution / spec.solution.name
    env = _environment(workspace, resolve_env(spec, "solution", spec.solution_env))
    log = workspace / "solve.log"
    command = ["bash", str(script)]
    code, timed_out, wall, cpu = run_process([*isolation_prefix(False), *command], cwd=state, env=env,
                                             timeout=timeout, log=log)  # fmt: skip
    return {"command": command, "exit_code": code, "timed_out": timed_out, "timeout": timeout,
            "wall_time": round(wall, 3), "cpu": round(cpu, 3), "output_tail": _tail(log)}  # fmt: skip


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

    @property
    def solved(self) -> bool:
        return self.status == "verdict" and self.reward is not None and self.reward.solved

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "state": self.state,
            "status": self.status,
            "no_verdict_reason": self.no_verdict_reason,
            "reward": self.reward.to_dict() if self.reward is not None else None,
            "timeout": {"seconds": self.timeout, "source": self.timeout_source},
            "removed_from_copy": self.removed,
            "run": self.run,
            "envelope": self.envelope,
        }


def _no_verdict(timed_out: bool, timeout: float, session: dict[str, Any] | None, tail: str, python: str,
                copy: Path, records: Mapping[str, Any]) -> str | None:  # fmt: skip
    if timed_out:
        return f"the verifier timed out after {timeout:g}s"
    if session is None:
        if "No module named pytest" in tail:
            return f"pytest is not installed for {python}"
        return "the test session never finished (no session report: the process died or was killed)"
    status = session.get("exitstatus")
    reasons: dict[Any, str] = {2: "the test session was interrupted", 3: "pytest stopped with an internal error",
                               4: "pytest was given a usage error", 5: "no tests were collected"}  # fmt: skip
    if status not in (0, 1):
        return reasons.get(status, f"pytest exited with unexpected status {status}")
    root = copy.resolve()
    stale = {n: o for n, o in (session.get("module_origins") or {}).items() if o and not Path(o).is_relative_to(root)}
    stale.update(session.get("foreign_modules") or {})
    if stale:
        name, origin = next(iter(stale.items()))
        return (f"the tests imported {name} from {origin}, not from the copy of the working state: another copy "
                "shadows it on that interpreter's path")  # fmt: skip
    failed = [n for n, r in records.items() if r.any_failed and r.outcome != "tampered"]
    if status == 0 and failed:
        return f"pytest exited 0 but {len(failed)} test(s) failed or errored, e.g. {failed[0]}"
    return None


def verify_state(spec: TaskSpec, state: Path | None, *, python: str, timeout: float, timeout_source: str,
                 workspace: Path, label: str, original: Path | None = None, exclude: frozenset[str] = frozenset(),
                 described: str | None = None) -> Verification:  # fmt: skip
    """Run the task's pytest tests on a copy of ``state`` and compute the reward.

    The copy is the tests' working directory and first on their import path; the task's
    ``tests/`` are copied beside it (``$TEST_DIR``) with their own pytest configuration (an
    empty ``pytest.ini`` when they have none, so nothing of the working state configures
    the verifier). pytest runs in a subprocess of ``python`` with the recorder, no network
    where ``unshare`` works, and a timeout that kills the whole process group.
    """
    from .envelope import build_envelope, graded_by
    from .instances import Instance
    from .scorer import grade, make_score
    from .testrun import RECORDER_MODULE, isolation_prefix, run_process
    from .workspace import import_roots

    area = workspace / label
    area.mkdir(parents=True)
    copy = area / "app"
    copy_state(state, copy, exclude)
    patch_ref = state_digest(copy)
    removed = remove_shadowing(copy)
    tests = area / "tests"
    shutil.copytree(spec.tests_dir, tests, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    if not any((tests / name).is_file() for name in PYTEST_CONFIGS):
        (tests / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    tools = area / "tools"
    tools.mkdir()
    shutil.copyfile(Path(__file__).with_name("recorder.py"), tools / f"{RECORDER_MODULE}.py")
    record_file = area / "record.jsonl"
    roots, packages = import_roots(copy)
    env = _environment(area, {
        "PYTHONPATH": os.pathsep.join([str(tools), *roots]),
        "TEST_DIR": str(tests),
        "OBJECTIVE_SCORING_RECORD": str(record_file),
        "OBJECTIVE_SCORING_IMPORT_ROOTS": os.pathsep.join(roots),
        "OBJECTIVE_SCORING_PACKAGES": os.pathsep.join(packages),
        "OBJECTIVE_SCORING_COPY": str(copy.resolve()),
        "OBJECTIVE_SCORING_ORIGINAL": str((original or state or copy).resolve()),
        **resolve_env(spec, "verifier", spec.verifier_env),
    })  # fmt: skip
    files = [str(tests / p.relative_to(spec.tests_dir)) for p in spec.test_files]
    command = [python, "-m", "pytest", "-p", RECORDER_MODULE, "-p", "no:cacheprovider", "-q", "-rfE", "--maxfail=0",
               "--continue-on-collection-errors", "--rootdir", str(tests), *files]  # fmt: skip
    log = area / "pytest.log"
    code, timed_out, wall, cpu = run_process([*isolation_prefix(False), *command], cwd=copy, env=env,
                                             timeout=timeout, log=log)  # fmt: skip
    tail = _tail(log)
    from .testrun import read_records

    collector, collect_errors, session = read_records(record_file)
    records = collector.records
    run = {"command": command, "exit_code": code, "pytest_exitstatus": None if session is None else session.get("exitstatus"),
           "timed_out": timed_out, "wall_time": round(wall, 3), "cpu": round(cpu, 3), "output_tail": tail}  # fmt: skip
    reason = _no_verdict(timed_out, timeout, session, tail, python, copy, records)

    # Every test that ran, every test function of the files that did not, and every file that
    # failed to collect without a known test: all are FAIL_TO_PASS of an instance built here.
    ran = [nodeid for nodeid, record in records.items() if record.ran]
    found, _ = static_tests(spec)
    ids = list(ran)
    ids.extend(t.test_id for t in found if not any(t.covers(n) for n in ran))
    for nodeid, _message in collect_errors:
        if nodeid and not any(i == nodeid or i.startswith(nodeid + "::") for i in ids):
            ids.append(nodeid)
    integrity = [{"kind": "shadowing_file_removed", "detail": f"{path}: would load in place of the verifier"}
                 for path in removed]  # fmt: skip
    for nodeid, record in records.items():
        integrity.extend({"kind": kind, "detail": f"{nodeid} ({when})"} for kind, when in record.flags)
    patched = (session or {}).get("patched_internals") or []
    integrity.extend({"kind": "pytest_internals_patched", "detail": detail} for detail in patched)
    session_info = {"exitstatus": None if session is None else session.get("exitstatus"),
                    "collect_errors": [{"nodeid": n, "message": m} for n, m in collect_errors]}  # fmt: skip
    harbor = {"task": spec.name, "label": label, "metric_space": spec.metric_space}
    shown = described or (str(state) if state is not None else "<empty>")
    if not ids:
        envelope = build_envelope(instance_id=spec.name, score=None, grading=None,
                                  no_verdict=reason or "the task's tests define no test", session=session_info,
                                  integrity=integrity, extra={"harbor": harbor, "patch_ref": patch_ref})  # fmt: skip
        return Verification(label, shown, "no_verdict",
                            reason or "the task's tests define no test", None, envelope, run, timeout,
                            timeout_source, removed, log)  # fmt: skip
    instance = Instance(spec.name, tuple(ids), (), {"instance_id": spec.name}, str(spec.config_file))
    grading = grade(instance, records, "strict")
    outcomes = [(r.test_id, r.counted and not patched) for r in grading.results]
    reward = None if reason else compute_reward(spec.rules, outcomes)
    score = None
    if reason is None and session is not None:
        by = graded_by(mode="harbor", pytest_version=str(session.get("pytest_version")),
                       python=f"{session.get('python_implementation')}/{session.get('python_version')}",
                       platform=str(session.get("platform")), timeout=timeout, compat="strict")  # fmt: skip
        score = make_score(grading, patch_ref, by, int(time.time()))
    if reward is not None:
        harbor.update(reward.to_dict())
    envelope = build_envelope(instance_id=spec.name, score=score, grading=grading, no_verdict=reason,
                              session=session_info, integrity=integrity,
                              extra={"harbor": harbor, "patch_ref": patch_ref})  # fmt: skip
    return Verification(label, shown, "no_verdict" if reason else "verdict", reason,
                        reward, envelope, run, timeout, timeout_source, removed, log)  # fmt: skip


# --------------------------------------------------------------------------------------------
# The command: run a task on a working state, or grade its solution


@dataclass(frozen=True)
class RunOptions:
    """``objective-score harbor run``'s options."""

    workdir: Path | None = None
    solution: bool = False
    out: Path | None = None
    python: str = sys.executable
    timeout: float | None = None
    keep: bool = False


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

    @property
    def exit_code(self) -> int:
        checked = [self.verification] + ([self.initial] if self.initial is not None else [])
        if any(v.status != "verdict" for v in checked):
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

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "schema_version": 1,
            "version": __version__,
            "created": self.created,
            "kind": "harbor",
            "task": self.task.to_dict(),
            "mode": self.mode,
            "metric_space": self.task.metric_space,
            "status": self.verification.status,
            "reward": self.verification.reward.to_dict() if self.verification.reward is not None else None,
            "exit_code": self.exit_code,
            "out": str(self.out),
            "written": self.written,
            "verification": self.verification.to_dict(),
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
    from .envelope import utc_now_iso

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
    elif solve["exit_code"] != 0:
        findings.append(Finding("warning", sol, f"the solution exited with status {solve['exit_code']}"))
    if oracle.status == "verdict" and oracle.reward is not None and not oracle.reward.solved:
        r = oracle.reward
        where = f"reward {r.reward:g}" + (f" < threshold {r.threshold:g}" if r.threshold is not None else "")
        tier = f", tier {r.tier}" if r.tier is not None else ""
        findings.append(Finding("invalid", sol, f"the oracle does not solve the task ({where}{tier}; "
                                f"{r.passed}/{r.total} tests passed): the task is invalid"))  # fmt: skip
    if initial.status == "verdict" and initial.solved:
        findings.append(Finding("invalid", "tests/", "the untouched initial state already solves the task: its tests "
                                "do not test the work"))  # fmt: skip
    for name in oracle.reward.unmatched if oracle.reward is not None else ():
        findings.append(Finding("invalid", spec.key("verifier", "tiers"), f"declared test {name!r} never ran"))
    return findings


def write_outputs(out: Path, verification: Verification, document: dict[str, Any]) -> list[str]:
    """Write the reward (where Harbor reads it), the tests' output and our JSON result to ``out``.

    A stale reward file from an earlier run is removed first (Harbor reads ``reward.json``
    before ``reward.txt``); a run without a verdict writes no reward at all.
    """
    out.mkdir(parents=True, exist_ok=True)
    for name in (REWARD_TXT, REWARD_JSON):
        (out / name).unlink(missing_ok=True)
    written = []
    if verification.status == "verdict" and verification.reward is not None:
        name, text = verification.reward.reward_file()
        (out / name).write_text(text, encoding="utf-8")
        written.append(str(out / name))
    if verification.log.exists():
        shutil.copyfile(verification.log, out / TEST_STDOUT)
        written.append(str(out / TEST_STDOUT))
    written.append(str(out / RESULT_FILE))
    document["written"] = written
    (out / RESULT_FILE).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return written


def run_task(spec: TaskSpec, options: RunOptions, engine: EngineStatus | None = None) -> HarborRun:
    """Verify a working state (``options.workdir``) or grade the task's solution (``options.solution``).

    Raises :class:`TaskError` for a task that cannot be verified as it stands and
    :class:`NeedsContainer` for a task that needs a container (before anything runs).
    """
    errors = [f for f in check_task(spec) if f.severity == "error"]
    if errors:
        raise TaskError(spec.root, errors[0].where or None, errors[0].message)
    if (options.workdir is None) == (not options.solution):
        raise ValueError("give exactly one of workdir or solution")
    if spec.needs_container:
        raise NeedsContainer(refusal(spec, engine or find_engine()))
    if options.solution and spec.solution is None:
        raise TaskError(spec.root, None, "no solution script (solution/solve.sh) to grade as the oracle")
    verifier_timeout, verifier_source = _timeout(spec.verifier_timeout, options.timeout,
                                                 f"{spec.rel(spec.config_file)} {spec.key('verifier', 'timeout_sec')}")  # fmt: skip
    out = default_out(spec, options).resolve()
    workspace = Path(tempfile.mkdtemp(prefix="objective-harbor-"))
    try:
        if options.workdir is not None:
            workdir = options.workdir.resolve()
            verification = verify_state(spec, workdir, python=options.python, timeout=verifier_timeout,
                                        timeout_source=verifier_source, workspace=workspace, label="workdir")  # fmt: skip
            result = HarborRun(spec, "workdir", verification, out)
        else:
            source = spec.initial_state_source()
            exclude = initial_exclude(spec)
            described = f"initial state ({spec.rel(source) if source is not None else 'empty'})"
            initial = verify_state(spec, source, python=options.python, timeout=verifier_timeout,
                                   timeout_source=verifier_source, workspace=workspace, label="initial",
                                   exclude=exclude, described=described)  # fmt: skip
            state = workspace / "oracle-state"
            copy_state(source, state, exclude)
            solve_timeout, _ = _timeout(spec.agent_timeout, options.timeout, "agent")
            solve = run_solution(spec, state, workspace, solve_timeout)
            oracle = verify_state(spec, state, python=options.python, timeout=verifier_timeout,
                                  timeout_source=verifier_source, workspace=workspace, label="oracle",
                                  original=source, described=f"{described} after {spec.rel(spec.solution)}")  # fmt: skip
            result = HarborRun(spec, "oracle", oracle, out, initial=initial, solve=solve,
                               findings=_oracle_findings(spec, oracle, initial, solve))  # fmt: skip
        if options.keep:
            result.workspace = str(workspace)
        result.written = write_outputs(out, result.verification, result.to_dict())
        return result
    finally:
        if not options.keep:
            shutil.rmtree(workspace, ignore_errors=True)


def dump(document: Mapping[str, Any]) -> str:
    """A result or report as the JSON ``--json`` prints."""
    return json.dumps(document, indent=2, ensure_ascii=False)
