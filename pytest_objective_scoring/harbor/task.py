"""A Harbor or Terminal-Bench task directory, read and validated into a :class:`TaskSpec`.

:func:`load_task` reads Harbor's layout (``task.toml``, ``instruction.md``, ``environment/``,
``tests/test.sh`` and ``tests/test_outputs.py``, ``solution/solve.sh``) or Terminal-Bench 1's
(``task.yaml``, a ``Dockerfile`` and ``docker-compose.yaml`` at the top, ``run-tests.sh``,
``solution.sh``, ``tests/``). A value of the wrong kind raises :class:`~.environment.TaskError`
naming the file and the key. Every key of the configuration (and of its compose file, read by
:mod:`.compose`) is given a use (:attr:`TaskSpec.keys`): what this machine cannot honour is
refused (:attr:`TaskSpec.refused`), never ignored. :class:`RewardRules` is how the task's
``[verifier]`` turns test outcomes into its reward (computed by :mod:`.rewards`). Pure: nothing of
the task runs.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from .. import nesting
from ..options import MAX_SECONDS
from .compose import ComposeService, read_compose
from .environment import HONOURED, INFORMATIONAL, REFUSED, Healthcheck, KeyUse, TaskError, megabytes

REWARD_KINDS: Final = ("binary", "share")
NO_TIER: Final = "incomplete"
ALL_TESTS: Final = "all"
COMPOSE_FILES: Final = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")
CONTAINER_FILES: Final = ("Dockerfile", *COMPOSE_FILES)
# Harbor's network modes ([environment], [agent] and [verifier] network_mode; allow_internet is its older spelling)
NETWORK_MODES: Final = ("public", "no-network", "allowlist")
PUBLIC: Final = "public"
NO_NETWORK: Final = "no-network"



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
    # Read for runs in a container (the host path never gives the tests network):
    network: Mapping[str, str] = field(default_factory=lambda: {"agent": PUBLIC, "verifier": PUBLIC})
    docker_image: str | None = None
    build_timeout: float | None = None
    cpus: float | None = None
    memory_mb: int | None = None
    benchmark: str | None = None  # [metadata] benchmark: the label summaries group by
    # How every key of the configuration (and of the compose file) is used; the refused ones say why
    keys: tuple[KeyUse, ...] = ()
    compose: ComposeService | None = None  # the one service of its compose file
    workdir: str | None = None  # [environment] workdir (else the compose service's, else the image's)
    environment_env: Mapping[str, str] = field(default_factory=dict)  # [environment.env]: every phase's
    storage_mb: int | None = None
    healthcheck: Healthcheck | None = None
    verifier_user: str | None = None
    agent_user: str | None = None
    artifacts: tuple[str, ...] = ()

    @property
    def metric_space(self) -> str:
        return self.rules.metric_space

    @property
    def compose_files(self) -> tuple[str, ...]:
        """The task's compose files."""
        return tuple(c for c in self.container if c.rsplit("/", 1)[-1] in COMPOSE_FILES)

    @property
    def refused(self) -> tuple[KeyUse, ...]:
        """The keys this machine cannot honour: the task is refused wherever it would run."""
        return tuple(k for k in self.keys if k.use == REFUSED)

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
            "network": dict(self.network),
            "docker_image": self.docker_image,
            "build_timeout": self.build_timeout,
            "resources": {"cpus": self.cpus, "memory_mb": self.memory_mb, "storage_mb": self.storage_mb},
            "workdir": self.workdir,
            "environment_env": sorted(self.environment_env),
            "healthcheck": self.healthcheck.to_dict() if self.healthcheck else None,
            "users": {"agent": self.agent_user, "verifier": self.verifier_user},
            "artifacts": list(self.artifacts),
            "compose": self.compose.to_dict() if self.compose else None,
            "benchmark": self.benchmark,
            "notes": list(self.notes),
            "keys": [k.to_dict() for k in self.keys],
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


def _finite(value: Any) -> bool:
    """A number of a configuration file that arithmetic can use: not a boolean, not inf or nan."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer too large for a float (YAML's are unbounded)
        return False


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
        if not _finite(value) or not value > 0:
            raise self.error(table, key, f"expected a finite number of seconds > 0, got {value!r}")
        if not value <= MAX_SECONDS:  # 1e10 overflowed a deadline, after the build
            raise self.error(table, key, f"{value!r} seconds: expected at most {MAX_SECONDS:.0f} (a week, as "
                                         "--timeout)")  # fmt: skip
        return float(value)

    def choice(self, table: str, key: str, choices: Sequence[str]) -> str | None:
        value = self.table(table).get(key)
        if value is None:
            return None
        if value not in choices:
            raise self.error(table, key, f"expected one of {', '.join(map(repr, choices))}, got {value!r}")
        return str(value)

    def positive(self, table: str, key: str, integer: bool = False) -> float | None:
        value = self.table(table).get(key)
        if value is None:
            return None
        wrong = not isinstance(value, int) if integer else not _finite(value)
        if isinstance(value, bool) or wrong or not value > 0:
            expected = "an integer" if integer else "a finite number"
            raise self.error(table, key, f"expected {expected} > 0, got {value!r}")
        return int(value) if integer else float(value)

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
            text = str(name)
            if not text or "=" in text or "\0" in text or any(c.isspace() for c in text):
                raise self.error(table, f"env.{name}", "expected an environment variable name (no '=', whitespace "
                                 f"or NUL), got {text!r}")  # fmt: skip
            if not isinstance(item, str):
                raise self.error(table, f"env.{name}", f"expected a string, got {item!r}")
            if "\0" in item:
                raise self.error(table, f"env.{name}", "expected a string without NUL characters (no environment "
                                 "can hold one)")  # fmt: skip
            env[text] = item
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
        if not _finite(threshold) or not 0 < threshold <= 1:
            raise config.error("verifier", "threshold", f"expected a number in (0, 1], got {threshold!r}")
        if kind != "share":
            raise config.error("verifier", "threshold", 'a solved threshold needs a continuous reward (reward = "share")')
        threshold = float(threshold)
    raw_weights = verifier.get("weights", {})
    if not isinstance(raw_weights, Mapping):
        raise config.error("verifier", "weights", f"expected a table of test name = weight, got {_kind(raw_weights)}")
    weights = {}
    for name, weight in raw_weights.items():
        if not _finite(weight) or weight < 0:
            raise config.error("verifier", f"weights.{name}", f"expected a finite weight >= 0, got {weight!r}")
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


def _network(config: _Config, compose: ComposeService | None = None) -> dict[str, str]:
    """Each phase's network mode, as Harbor reads it: ``[agent]`` / ``[verifier] network_mode``, else
    ``[environment] network_mode``, else ``allow_internet`` (false: no network), else the compose
    service's ``network_mode`` (``none``: no network), else public."""
    declared = config.choice("environment", "network_mode", NETWORK_MODES)
    allow = config.table("environment").get("allow_internet")
    if allow is not None and not isinstance(allow, bool):
        raise config.error("environment", "allow_internet", f"expected true or false, got {allow!r}")
    base = declared or (NO_NETWORK if allow is False else None) or (compose.network if compose else None) or PUBLIC
    return {phase: config.choice(phase, "network_mode", NETWORK_MODES) or base for phase in ("agent", "verifier")}


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
            data = nesting.bounded(toml.loads, text, toml.TOMLDecodeError)
        except toml.TOMLDecodeError as exc:
            raise TaskError(path, None, f"not valid TOML ({exc})") from None
        return dict(data)
    try:
        import yaml  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        raise TaskError(path, None, "reading task.yaml (Terminal-Bench 1's layout) needs PyYAML: pip install pyyaml, "
                        "or give the task a task.toml (Harbor's layout)") from None  # fmt: skip
    try:
        data = nesting.bounded(yaml.safe_load, text, yaml.YAMLError)
    except yaml.YAMLError as exc:
        raise TaskError(path, None, f"not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise TaskError(path, None, f"expected a mapping at the top level, got {_kind(data)}")
    return data


# Every key a task's configuration may hold, and how this verifier uses it. A key of no known
# meaning is refused (never ignored); tables whose keys are names (env, weights, tiers, metadata)
# are read as a whole.
_INFO: Final = INFORMATIONAL
_TOP_HARBOR: Final = {
    "version": (_INFO, "the configuration format's version"),
    "schema_version": (_INFO, "the configuration format's version"),
    "source": (_INFO, "the task's provenance (recorded with the task)"),
    "artifacts": (HONOURED, "copied out of the container after each verification (artifacts/ of the output folder)"),
    "steps": (REFUSED, "a multi-step task (Harbor's [[steps]]): objective-score harbor verifies single-step tasks; run "
                       "it with Harbor (harbor run -p TASK_DIR)"),
}
_TOP_TB: Final = {
    "instruction": (HONOURED, "the task's instruction"),
    "descriptions": (_INFO, "Terminal-Bench's older instruction list (the instruction is read from instruction)"),
    "author_name": (_INFO, "the task's author"), "author_email": (_INFO, "the task's author"),
    "difficulty": (_INFO, "a label"), "category": (_INFO, "a label"), "tags": (_INFO, "labels"),
    "estimated_duration_sec": (_INFO, "an estimate, not a timeout"),
    "expert_time_estimate_min": (_INFO, "an estimate, not a timeout"),
    "junior_time_estimate_min": (_INFO, "an estimate, not a timeout"),
    "max_agent_timeout_sec": (HONOURED, "the solution's timeout"),
    "max_test_timeout_sec": (HONOURED, "the verifier's timeout"),
    "disable_asciinema": (_INFO, "a recording switch: nothing is recorded here"),
    "test_scripts": (_INFO, "scripts Terminal-Bench copies for run-tests.sh, which is not run here (its parser is "
                            "pytest: this project's verifier runs the pytest tests itself)"),
}  # fmt: skip
_TABLES: Final = {
    "task": {"name": (HONOURED, "the task's name"), "description": (_INFO, "a description"),
             "authors": (_INFO, "the task's authors"), "keywords": (_INFO, "labels")},
    "verifier": {"timeout_sec": (HONOURED, "the verifier's timeout"),
                 "env": (HONOURED, "set for the verifier ([environment.env] first)"),
                 "user": (HONOURED, "the verifier runs as this user of the container (docker exec --user)"),
                 "network_mode": (HONOURED, "the verifier's network"),
                 "reward": (HONOURED, "this project's metric space"), "threshold": (HONOURED, "this project's solved "
                 "threshold"), "weights": (HONOURED, "this project's test weights"),
                 "tiers": (HONOURED, "this project's tiers")},
    "agent": {"timeout_sec": (HONOURED, "the solution's timeout (the oracle is Harbor's agent)"),
              "user": (HONOURED, "the solution runs as this user of the container (docker exec --user)"),
              "network_mode": (HONOURED, "the solution's network")},
    "solution": {"env": (HONOURED, "set for the solution ([environment.env] first)")},
    "environment": {
        "build_timeout_sec": (HONOURED, "the image build's timeout"),
        "docker_image": (HONOURED, "the container runs this image (pulled by the engine, or --base-image)"),
        "cpus": (HONOURED, "--cpus on the container"), "memory_mb": (HONOURED, "--memory on the container"),
        "memory": (HONOURED, "--memory on the container"),
        "storage_mb": (HONOURED, "checked: the container's writable layer is measured before each verifier runs; "
                                 "a state beyond it passes nothing"),
        "storage": (HONOURED, "checked: the container's writable layer is measured before each verifier runs; a "
                              "state beyond it passes nothing"),
        "allow_internet": (HONOURED, "the network of every phase, unless network_mode says otherwise"),
        "network_mode": (HONOURED, "the network of every phase, unless [agent] or [verifier] says otherwise"),
        "env": (HONOURED, "set for the solution and the verifier (and in the container)"),
        "skills_dir": (_INFO, "for agents (copied to an agent's skills folder): no agent runs here, the oracle "
                              "does not read it"),
        "workdir": (HONOURED, "the working directory: the working state lives there"),
        "healthcheck": (HONOURED, "run until it passes before anything runs in the container (a setup failure if "
                                  "it never does)"),
        "host_ok": (HONOURED, "this project's: the task may run on the host"),
        "host_workdir": (HONOURED, "this project's: the initial working state on the host"),
    },
}  # fmt: skip
_HEALTHCHECK_KEYS: Final = ("command", "interval_sec", "timeout_sec", "retries", "start_period_sec", "start_interval_sec")


def _key_uses(config: _Config) -> list[KeyUse]:
    """How every key of the configuration file is used (module comment above); nothing is skipped."""
    file = config.path.name
    uses: list[KeyUse] = []

    def add(key: str, how: tuple[str, str]) -> None:
        uses.append(KeyUse(file, key, *how))

    top = _TOP_HARBOR if config.toml else _TOP_TB
    tables = dict(_TABLES) if config.toml else {k: v for k, v in _TABLES.items() if k != "task"}
    for key, value in config.data.items():
        if key == "metadata" and config.toml:
            if not isinstance(value, Mapping):
                raise TaskError(config.path, "[metadata]", f"expected a table, got {_kind(value)}")
            for name in value:
                add(f"[metadata] {name}", (HONOURED, "the benchmark label summaries group by") if name == "benchmark"
                    else (_INFO, "free-form metadata (Harbor's): recorded, changes nothing"))  # fmt: skip
            continue
        if key in tables and isinstance(value, Mapping):
            for name, item in value.items():
                where = config.where(key, str(name))
                how = tables[key].get(str(name))
                if key == "environment" and name == "gpus":
                    how = ((HONOURED, "no GPU is asked for") if item == 0 else
                           (REFUSED, f"asks for {item} GPU(s): GPU tasks cannot run here (objective-score harbor gives "
                            "containers no GPU)"))  # fmt: skip
                elif key == "environment" and name == "gpu_types":
                    gpus = value.get("gpus", 0)
                    how = (REFUSED, "GPU types: GPU tasks cannot run here") if gpus else (_INFO, "no GPU is asked for "
                                                                                                  "(gpus = 0)")  # fmt: skip
                elif key == "environment" and name == "mcp_servers":
                    how = ((_INFO, "no MCP server") if item in ([], None) else
                           (REFUSED, "MCP servers for the agent, served by containers this command does not start; "
                            "run the task with Harbor"))  # fmt: skip
                elif key == "environment" and name == "healthcheck" and isinstance(item, Mapping):
                    for sub in item:
                        if sub not in _HEALTHCHECK_KEYS:
                            add(f"{where}.{sub}", (REFUSED, "not a healthcheck key Harbor knows"))
                elif key == "environment" and name == "network_mode" and item == "allowlist":
                    how = (REFUSED, 'network_mode = "allowlist" needs a host allowlist that objective-score harbor '
                           "cannot enforce; run the task with Harbor (harbor run -p TASK_DIR)")  # fmt: skip
                elif key in ("agent", "verifier") and name == "network_mode" and item == "allowlist":
                    how = (REFUSED, f'network_mode = "allowlist" (the {key} phase) needs a host allowlist that '
                           "objective-score harbor cannot enforce; run the task with Harbor (harbor run -p TASK_DIR)")  # fmt: skip
                add(where, how or (REFUSED, "not a key objective-score harbor knows: it cannot honour it, and does not "
                                   "ignore it"))  # fmt: skip
            continue
        if key in tables:  # a table that is not one: _Config reports it while reading
            continue
        how = top.get(key)
        if not config.toml and key == "parser_name":
            how = ((HONOURED, "Terminal-Bench parses pytest's report: this project's verifier runs the pytest tests "
                    "itself") if value == "pytest" else
                   (REFUSED, f"Terminal-Bench's {value!r} parser decides the reward from run-tests.sh's output; "
                    "objective-score harbor reads pytest tests only"))  # fmt: skip
        elif not config.toml and key == "run_tests_in_same_shell":
            how = ((HONOURED, "the tests run in a process of their own") if value is False else
                   (REFUSED, "the tests run in the agent's shell session (its variables, its activated environment); "
                    "objective-score harbor runs them in a process of their own, without that session's state"))  # fmt: skip
        elif not config.toml and key == "env_name":
            how = ((_INFO, "no shared environment") if value is None else
                   (REFUSED, f"a shared Terminal-Bench environment ({value!r}) that is not part of the task directory"))
        add(key, how or (REFUSED, "not a key objective-score harbor knows: it cannot honour it, and does not ignore it"))
    return uses


def _size(config: _Config, key: str, megabytes_key: str) -> int | None:
    """``[environment] memory = "2G"`` (or ``storage``), in megabytes, agreeing with ``memory_mb`` if both are given."""
    value = config.table("environment").get(key)
    exact = _integer(config.positive("environment", megabytes_key, integer=True))
    if value is None:
        return exact
    size = megabytes(value) if isinstance(value, str) else None
    if size is None:
        raise config.error("environment", key, f'expected a size with a unit ("2G", "512M"), got {value!r}')
    if exact is not None and exact != size:
        raise config.error("environment", key, f"{value!r} is {size} MB, but {config.where('environment', megabytes_key)} "
                           f"= {exact}")  # fmt: skip
    return size


def _healthcheck_of(config: _Config) -> Healthcheck | None:
    value = config.table("environment").get("healthcheck")
    if value is None:
        return None
    where = config.where("environment", "healthcheck")
    if not isinstance(value, Mapping):
        raise config.error("environment", "healthcheck", f"expected a table (command, interval_sec, ...), got {_kind(value)}")
    command = value.get("command")
    if isinstance(command, str) and command.strip():
        argv: tuple[str, ...] = ("sh", "-c", command)
    elif isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        argv = tuple(command)
    else:
        raise config.error("environment", "healthcheck.command", f"expected a command (a string or a list), got {command!r}")
    numbers = {}
    for key, default in (("interval_sec", 1.0), ("timeout_sec", 30.0), ("start_period_sec", 0.0)):
        item = value.get(key, default)
        if not _finite(item) or item < 0:
            raise config.error("environment", f"healthcheck.{key}", f"expected a finite number of seconds >= 0, got {item!r}")
        if not item <= MAX_SECONDS:
            raise config.error("environment", f"healthcheck.{key}", f"{item!r} seconds: expected at most "
                                                                    f"{MAX_SECONDS:.0f} (a week)")  # fmt: skip
        numbers[key] = float(item)
    retries = value.get("retries", 3)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 1:
        raise config.error("environment", "healthcheck.retries", f"expected an integer >= 1, got {retries!r}")
    return Healthcheck(f"{config.path.name} {where}", argv, numbers["interval_sec"], numbers["timeout_sec"], retries,
                       numbers["start_period_sec"])  # fmt: skip


def _artifacts(config: _Config) -> tuple[str, ...]:
    value = config.data.get("artifacts", []) if config.toml else []
    if not isinstance(value, list):
        raise TaskError(config.path, "artifacts", f"expected a list of container paths, got {_kind(value)}")
    paths = []
    for index, item in enumerate(value):
        path = item.get("path") if isinstance(item, Mapping) else item
        if not isinstance(path, str) or not path.startswith("/"):
            raise TaskError(config.path, f"artifacts[{index}]", f"expected an absolute container path, got {item!r}")
        paths.append(path)
    return tuple(paths)


def _user(config: _Config, table: str) -> str | None:
    value = config.table(table).get("user")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise config.error(table, "user", f"expected a user name or id, got {value!r}")
    return str(value)


def load_task(path: str | Path) -> TaskSpec:
    """Read and validate a task directory; raises :class:`TaskError` naming the file and the key.
    Every key of its configuration (and of its compose file) is given a use (:attr:`TaskSpec.keys`):
    what this machine cannot honour is refused (:attr:`TaskSpec.refused`), never ignored."""
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
    keys = _key_uses(config)

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
    compose = None
    compose_files = [context / f for f in COMPOSE_FILES if context is not None and (context / f).is_file()]
    if compose_files:
        if len(compose_files) > 1:
            notes.append(f"{', '.join(spec_rel(root, f) for f in compose_files[1:])} ignored: "
                         f"{spec_rel(root, compose_files[0])} is read (docker compose reads one)")  # fmt: skip
        compose, compose_uses = read_compose(compose_files[0], root, "harbor" if harbor else "terminal-bench",
                                             context / "Dockerfile" if context is not None else None)  # fmt: skip
        keys.extend(compose_uses)

    host_workdir = None
    declared = config.string("environment", "host_workdir")
    if declared is not None:
        candidate = (root / declared).resolve()
        if not candidate.is_relative_to(root):
            raise config.error("environment", "host_workdir", f"{declared!r} leaves the task directory")
        if not candidate.is_dir():
            raise config.error("environment", "host_workdir", f"{declared!r} is not a directory of the task")
        host_workdir = candidate
    workdir = config.string("environment", "workdir")
    if workdir is not None and (not workdir.startswith("/") or workdir.rstrip("/") == ""):
        raise config.error("environment", "workdir", f"expected an absolute container path other than /, got {workdir!r}")
    gpus = config.table("environment").get("gpus", 0)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
        raise config.error("environment", "gpus", f"expected an integer >= 0, got {gpus!r}")
    gpu_types = config.table("environment").get("gpu_types")
    if gpu_types is not None and (not isinstance(gpu_types, list) or not all(isinstance(t, str) for t in gpu_types)):
        raise config.error("environment", "gpu_types", f"expected a list of GPU type names, got {gpu_types!r}")
    servers = config.table("environment").get("mcp_servers")
    if servers is not None and not isinstance(servers, list):
        raise config.error("environment", "mcp_servers", f"expected a list of MCP servers, got {_kind(servers)}")
    skills = config.table("environment").get("skills_dir")
    if skills is not None and not isinstance(skills, str):
        raise config.error("environment", "skills_dir", f"expected a path, got {skills!r}")

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
        network=_network(config, compose),
        docker_image=image,
        build_timeout=config.seconds("environment", "build_timeout_sec"),
        cpus=config.positive("environment", "cpus"),
        memory_mb=_size(config, "memory", "memory_mb"),
        benchmark=_label(config.data.get("metadata"), "benchmark"),
        keys=tuple(keys),
        compose=compose,
        workdir=workdir.rstrip("/") if workdir else None,
        environment_env=config.env("environment"),
        storage_mb=_size(config, "storage", "storage_mb"),
        healthcheck=_healthcheck_of(config),
        verifier_user=_user(config, "verifier"),
        agent_user=_user(config, "agent"),
        artifacts=_artifacts(config),
    )


def spec_rel(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _label(metadata: Any, key: str) -> str | None:
    """A string of Harbor's free-form ``[metadata]`` (anything else there is not this verifier's business)."""
    value = metadata.get(key) if isinstance(metadata, Mapping) else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def _integer(value: float | None) -> int | None:
    return None if value is None else int(value)
