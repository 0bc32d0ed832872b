"""A task's compose file (``docker-compose.yaml``), read without running anything: :func:`read_compose`.

A compose file with one service runs like a Dockerfile task: that service's build (context,
dockerfile, args, target) or image, its environment, working directory, user, volumes that are
folders of the task, tmpfs, hosts, limits and healthcheck are honoured; what one container of this
machine cannot give (a second service, a privileged container, a bind of a path of this machine,
published ports) is refused with a message naming the file and the key. Every key is given a
:class:`~.environment.KeyUse`: none is ignored. Terminal-Bench 1's harness variables
(``T_BENCH_*``) are resolved as its harness resolves them. Everything here is pure: no engine is
called.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from .environment import HONOURED, INFORMATIONAL, REFUSED, Healthcheck, KeyUse, TaskError, megabytes, seconds

# Terminal-Bench 1's harness variables, as its harness sets them for docker compose. The host
# paths and the names it gives are the harness's own business: objective-score names its images
# and containers itself and reads the logs out of the container.
HARNESS: Final = "\x00harness\x00"
TB_VARIABLES: Final = {
    "T_BENCH_TEST_DIR": "/tests",
    "T_BENCH_CONTAINER_LOGS_PATH": "/logs",
    "T_BENCH_CONTAINER_AGENT_LOGS_PATH": "/agent-logs",
    "T_BENCH_TASK_LOGS_PATH": HARNESS + "logs",
    "T_BENCH_TASK_AGENT_LOGS_PATH": HARNESS + "agent-logs",
    "T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME": HARNESS + "image",
    "T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME": HARNESS + "container",
    "T_BENCH_TASK_DOCKER_NAME_PREFIX": HARNESS + "prefix",
}
# The main process a compose file gives its one service, when it only keeps the container alive
# (what objective-score's own keep-alive does).
KEEP_ALIVE: Final = ("sleep infinity", "tail -f /dev/null", "sleep inf")
HARBOR_MAIN: Final = "main"  # the service Harbor's own compose configuration defines



@dataclass(frozen=True)
class Volume:
    """A volume of the compose service: a folder of the task ``copied`` in (or bound read-only), or
    the container's own folder (a named or anonymous volume, or the harness's log mount)."""

    target: str
    source: Path | None = None  # a folder or file of the task
    read_only: bool = False
    kind: str = "copy"  # "copy", "bind-read-only", "own" (the container's own folder), "logs"

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "source": str(self.source) if self.source else None,
                "read_only": self.read_only, "kind": self.kind}  # fmt: skip


@dataclass(frozen=True)
class ComposeService:
    """The one service of a compose file, as one container of this machine gives it."""

    file: Path
    name: str
    build_context: Path | None = None
    dockerfile: Path | None = None
    build_args: Mapping[str, str] = field(default_factory=dict)
    build_target: str | None = None
    image: str | None = None  # a named image, when there is no build
    environment: Mapping[str, str] = field(default_factory=dict)
    workdir: str | None = None
    user: str | None = None
    network: str | None = None  # "no-network" (network_mode: none), "public", None (not said)
    volumes: tuple[Volume, ...] = ()
    create_flags: tuple[str, ...] = ()  # engine flags for the container (--add-host, --tmpfs, ...)
    platform: str | None = None
    cpus: float | None = None
    memory_mb: int | None = None
    healthcheck: Healthcheck | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": str(self.file), "service": self.name,
            "build": None if self.build_context is None else {
                "context": str(self.build_context), "dockerfile": str(self.dockerfile),
                "args": dict(self.build_args), "target": self.build_target},
            "image": self.image, "environment": sorted(self.environment), "workdir": self.workdir, "user": self.user,
            "network": self.network, "volumes": [v.to_dict() for v in self.volumes],
            "create_flags": list(self.create_flags), "platform": self.platform, "cpus": self.cpus,
            "memory_mb": self.memory_mb,
            "healthcheck": self.healthcheck.to_dict() if self.healthcheck else None,
        }  # fmt: skip


_VARIABLE: Final = re.compile(r"\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


class _Compose:
    """Reads one compose file, recording how each key is used."""

    def __init__(self, path: Path, root: Path, layout: str) -> None:
        self.path = path
        self.root = root
        self.layout = layout
        self.rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
        self.uses: list[KeyUse] = []

    def use(self, key: str, use: str, detail: str) -> None:
        self.uses.append(KeyUse(self.rel, key, use, detail))

    def error(self, key: str | None, problem: str) -> TaskError:
        return TaskError(self.path, key, problem)

    def interpolate(self, value: str, key: str) -> str:
        """Compose's variable substitution: Terminal-Bench's harness variables, then this environment."""

        def one(match: re.Match[str]) -> str:
            if match.group(0) == "$$":
                return "$"
            name = match.group(1) or match.group(4)
            operator, default = match.group(2), match.group(3)
            if self.layout == "terminal-bench" and name in TB_VARIABLES:
                return TB_VARIABLES[name]
            value = os.environ.get(name)
            if operator in (":-", ":?") and not value:
                value = None
            if value is not None:
                return value
            if operator in (":-", "-"):
                return self.interpolate(default or "", key)
            raise self.error(key, f"${{{name}}} is not set in this environment" + (f" ({default})" if default and
                             operator in (":?", "?") else ""))  # fmt: skip

        return _VARIABLE.sub(one, value)

    def text(self, value: Any, key: str) -> str:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.error(key, f"expected a string, got {value!r}")
        return self.interpolate(str(value), key)

    def strings(self, value: Any, key: str) -> list[str]:
        if isinstance(value, str):
            return [self.text(value, key)]
        if not isinstance(value, list):
            raise self.error(key, f"expected a string or a list of strings, got {value!r}")
        return [self.text(item, f"{key}[{index}]") for index, item in enumerate(value)]

    def inside(self, value: str, key: str, base: Path) -> Path:
        """A path of the task, relative to ``base``; refused when it leaves the task."""
        target = (base / value).resolve()
        if not target.is_relative_to(self.root):
            raise self.error(key, f"{value!r} leaves the task directory")
        return target


def _mapping(value: Any, what: str, reader: _Compose, key: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise reader.error(key, f"expected {what}, got {value!r}")
    return value


def _environment(value: Any, reader: _Compose, key: str) -> dict[str, str]:
    """A service's ``environment``: a list of ``NAME=VALUE`` (``NAME`` alone: from this environment) or a mapping."""
    env: dict[str, str] = {}
    if isinstance(value, list):
        for index, item in enumerate(value):
            text = reader.text(item, f"{key}[{index}]")
            name, has, rest = text.partition("=")
            if has:
                env[name] = rest
            elif name in os.environ:
                env[name] = os.environ[name]
        return env
    for name, item in _mapping(value, "a list or a mapping of variables", reader, key).items():
        if item is None:
            if str(name) in os.environ:
                env[str(name)] = os.environ[str(name)]
            continue
        env[str(name)] = reader.text("true" if item is True else "false" if item is False else item, f"{key}.{name}")
    return env


def _env_files(value: Any, reader: _Compose, key: str, base: Path) -> dict[str, str]:
    env: dict[str, str] = {}
    items = value if isinstance(value, list) else [value]
    for index, item in enumerate(items):
        where = f"{key}[{index}]" if isinstance(value, list) else key
        name = item.get("path") if isinstance(item, Mapping) else item
        path = reader.inside(reader.text(name, where), where, base)
        if not path.is_file():
            if isinstance(item, Mapping) and item.get("required") is False:
                continue
            raise reader.error(where, f"{name!r} is not a file of the task")
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                var, _, val = line.removeprefix("export ").partition("=")
                env[var.strip()] = val.strip().strip("'\"")
    return env


def _healthcheck(value: Any, reader: _Compose, key: str) -> Healthcheck | None:
    data = _mapping(value, "a healthcheck mapping", reader, key)
    if data.get("disable") is True:
        return None
    test = data.get("test")
    if isinstance(test, str):
        command: tuple[str, ...] = ("sh", "-c", reader.text(test, f"{key}.test"))
    elif isinstance(test, list) and test and test[0] in ("CMD", "CMD-SHELL", "NONE"):
        if test[0] == "NONE":
            return None
        rest = [reader.text(item, f"{key}.test") for item in test[1:]]
        command = ("sh", "-c", " ".join(rest)) if test[0] == "CMD-SHELL" else tuple(rest)
    else:
        raise reader.error(f"{key}.test", f"expected a command (a string, or a list starting with CMD or CMD-SHELL), "
                           f"got {test!r}")  # fmt: skip
    if not command or not any(command):
        raise reader.error(f"{key}.test", "an empty command")
    values: dict[str, float] = {}
    for name, default in (("interval", 30.0), ("timeout", 30.0), ("start_period", 0.0), ("start_interval", 5.0)):
        raw = data.get(name)
        parsed = default if raw is None else seconds(raw)
        if parsed is None:
            raise reader.error(f"{key}.{name}", f"expected a duration (\"5s\", \"1m30s\"), got {raw!r}")
        values[name] = parsed
    retries = data.get("retries", 3)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 1:
        raise reader.error(f"{key}.retries", f"expected an integer >= 1, got {retries!r}")
    for name in data:
        if name not in ("test", "interval", "timeout", "start_period", "start_interval", "retries", "disable"):
            raise reader.error(f"{key}.{name}", "not a healthcheck key compose knows")
    return Healthcheck(f"{reader.rel} {key}", command, values["interval"], values["timeout"], retries,
                       values["start_period"])  # fmt: skip


def _keep_alive(command: Any) -> bool:
    if isinstance(command, list) and all(isinstance(c, str) for c in command):
        words = list(command)
    elif isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError:
            return False
    else:
        return False
    if len(words) == 3 and words[0] in ("sh", "bash", "/bin/sh", "/bin/bash") and words[1] == "-c":
        words = words[2].split()
    return " ".join(words) in KEEP_ALIVE


def read_compose(path: Path, root: Path, layout: str, dockerfile_default: Path | None) -> tuple[ComposeService | None, list[KeyUse]]:
    """Read a compose file of a task: its one service, and how each key is used (refusals included).

    ``layout`` is ``harbor`` (the file is an override of Harbor's own configuration, whose service
    ``main`` builds ``environment/Dockerfile``: ``dockerfile_default``) or ``terminal-bench``. Raises
    :class:`TaskError` for a file that is not a compose file; what one container cannot give is a
    ``refused`` use (and no service when it is a second service). Needs PyYAML.
    """
    try:
        import yaml  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        raise TaskError(path, None, "reading a compose file needs PyYAML: pip install pyyaml") from None
    reader = _Compose(path, root, layout)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise TaskError(path, None, f"not valid YAML ({exc})") from None
    except OSError as exc:
        raise TaskError(path, None, f"cannot be read: {exc.strerror}") from None
    if not isinstance(data, Mapping):
        raise TaskError(path, None, f"expected a compose mapping (services: ...), got {data!r}")
    services = data.get("services")
    if not isinstance(services, Mapping) or not services:
        raise reader.error("services", "expected at least one service")
    for key, value in data.items():
        if key == "services":
            continue
        if key in ("version", "name"):
            reader.use(key, INFORMATIONAL, "the compose format version and project name change nothing here")
        elif str(key).startswith("x-"):
            reader.use(key, INFORMATIONAL, "an extension field (YAML anchors for the services): read where it is used")
        elif key == "networks":
            custom = [n for n, c in _mapping(value, "a mapping of networks", reader, key).items() if n != "default" or c]
            if custom:
                reader.use(key, REFUSED, f"declares networks ({', '.join(map(str, custom))}) between containers; "
                           "objective-score harbor runs one container")  # fmt: skip
            else:
                reader.use(key, HONOURED, "the default network only (the task's network mode decides it)")
        elif key == "volumes":
            special = [n for n, c in _mapping(value, "a mapping of volumes", reader, key).items() if c]
            if special:
                reader.use(key, REFUSED, f"volumes with a driver or external volumes ({', '.join(map(str, special))}) "
                           "are not created here")  # fmt: skip
            else:
                reader.use(key, HONOURED, "named volumes: each is the container's own folder (one container a run)")
        else:
            reader.use(str(key), REFUSED, "not a compose key objective-score harbor knows how to honour")
    names = [str(n) for n in services]
    main = HARBOR_MAIN in names if layout == "harbor" else True
    if len(names) > 1 or not main:
        listed = ", ".join(names)
        why = (f"defines {len(names)} services ({listed})" if len(names) > 1 else
               f"defines a service {names[0]!r} beside the {HARBOR_MAIN!r} service Harbor adds (it builds "
               "environment/Dockerfile)")  # fmt: skip
        reader.use("services", REFUSED, f"{why}: a multi-container task, and objective-score harbor runs one "
                   "container; run the task with Harbor (harbor run -p TASK_DIR)")  # fmt: skip
        return None, reader.uses
    name = names[0]
    service = _mapping(services[name], "a service mapping", reader, f"services.{name}")
    return _service(reader, name, service, dockerfile_default), reader.uses


def _service(reader: _Compose, name: str, service: Mapping[str, Any], dockerfile_default: Path | None) -> ComposeService:
    base = reader.path.parent
    prefix = f"services.{name}"
    fields: dict[str, Any] = {}
    flags: list[str] = []
    volumes: list[Volume] = []
    env: dict[str, str] = {}

    def use(key: str, how: str, detail: str) -> None:
        reader.use(f"{prefix}.{key}", how, detail)

    for key, value in service.items():
        where = f"{prefix}.{key}"
        if key == "build":
            spec = {"context": value} if isinstance(value, str) else dict(_mapping(value, "a context or a build mapping",
                                                                                   reader, where))  # fmt: skip
            context = reader.inside(reader.text(spec.pop("context", "."), f"{where}.context"), f"{where}.context", base)
            if not context.is_dir():
                raise reader.error(f"{where}.context", f"{context} is not a folder of the task")
            dockerfile = reader.inside(reader.text(spec.pop("dockerfile", "Dockerfile"), f"{where}.dockerfile"),
                                       f"{where}.dockerfile", context)  # fmt: skip
            if not dockerfile.is_file():
                raise reader.error(f"{where}.dockerfile", f"{dockerfile} is not a file of the task")
            args: Any = spec.pop("args", {})
            if isinstance(args, list):
                args = {str(a).partition("=")[0]: str(a).partition("=")[2] for a in args}
            fields["build_args"] = {str(k): reader.text(v, f"{where}.args.{k}") for k, v in
                                    _mapping(args, "build arguments", reader, f"{where}.args").items()}  # fmt: skip
            if "target" in spec:
                fields["build_target"] = reader.text(spec.pop("target"), f"{where}.target")
            for other in spec:
                reader.use(f"{where}.{other}", REFUSED, "a build option objective-score harbor does not pass on")
            fields["build_context"], fields["dockerfile"] = context, dockerfile
            use(key, HONOURED, f"the image is built from {dockerfile.relative_to(reader.root).as_posix()} with the "
                f"context {context.relative_to(reader.root).as_posix() or '.'}")  # fmt: skip
        elif key == "image":
            image = reader.text(value, where)
            if image.startswith(HARNESS):
                use(key, HONOURED, "the harness's image name: objective-score names the image it builds by content")
            elif "build" in service:
                use(key, HONOURED, f"the name of the built image ({image}): objective-score tags it by content")
            else:
                fields["image"] = image
                use(key, HONOURED, f"the container runs the image {image} (pulled by the engine, or --base-image)")
        elif key == "container_name":
            use(key, HONOURED, "objective-score names each container itself (one per verification)")
        elif key in ("command", "entrypoint"):
            if key == "command" and _keep_alive(value):
                use(key, HONOURED, "keeps the container alive, as objective-score's own keep-alive does")
            else:
                use(key, REFUSED, f"runs {value!r} as the container's main process: objective-score harbor starts no "
                    "service process in the container (its keep-alive replaces it)")  # fmt: skip
        elif key == "environment":
            env.update(_environment(value, reader, where))
            use(key, HONOURED, "set in the container for the solution and the verifier")
        elif key == "env_file":
            env = {**_env_files(value, reader, where, base), **env}
            use(key, HONOURED, "read and set in the container for the solution and the verifier")
        elif key == "working_dir":
            workdir = reader.text(value, where)
            if not workdir.startswith("/"):
                raise reader.error(where, f"expected an absolute path, got {workdir!r}")
            fields["workdir"] = workdir
            use(key, HONOURED, f"the working state lives in {workdir}")
        elif key == "user":
            fields["user"] = reader.text(value, where)
            use(key, HONOURED, f"the solution and the verifier run as {fields['user']}")
        elif key == "network_mode":
            mode = reader.text(value, where)
            if mode == "none":
                fields["network"] = "no-network"
                use(key, HONOURED, "no network, for every phase")
            elif mode in ("bridge", "default"):
                fields["network"] = "public"
                use(key, HONOURED, "the engine's default network")
            else:
                use(key, REFUSED, f"network_mode {mode!r} shares another namespace; objective-score harbor gives the "
                    "container its own network or none")  # fmt: skip
        elif key == "networks":
            nets = list(value) if isinstance(value, (list, Mapping)) else [value]
            if [n for n in nets if n != "default"]:
                use(key, REFUSED, f"joins networks {nets!r} shared with other containers")
            else:
                use(key, HONOURED, "the default network only")
        elif key == "volumes":
            if not isinstance(value, list):
                raise reader.error(where, f"expected a list of volumes, got {value!r}")
            for index, item in enumerate(value):
                volume = _volume(reader, item, f"{where}[{index}]", base)
                if volume is not None:
                    volumes.append(volume)
        elif key == "tmpfs":
            for item in reader.strings(value, where):
                flags += ["--tmpfs", item]
            use(key, HONOURED, "mounted as tmpfs in the container")
        elif key == "extra_hosts":
            items = [f"{k}:{v}" for k, v in value.items()] if isinstance(value, Mapping) else reader.strings(value, where)
            for item in items:
                flags += ["--add-host", item.replace("=", ":", 1) if ":" not in item else item]
            use(key, HONOURED, "added to the container's /etc/hosts")
        elif key in ("dns", "dns_search"):
            for item in reader.strings(value, where):
                flags += ["--dns" if key == "dns" else "--dns-search", item]
            use(key, HONOURED, "passed to the container")
        elif key == "hostname":
            flags += ["--hostname", reader.text(value, where)]
            use(key, HONOURED, "the container's hostname")
        elif key == "platform":
            fields["platform"] = reader.text(value, where)
            use(key, HONOURED, "the platform the image is built and run for")
        elif key == "init":
            if value is True:
                flags.append("--init")
            use(key, HONOURED, "an init process in the container" if value is True else "no init process")
        elif key == "labels":
            items = [f"{k}={v}" for k, v in value.items()] if isinstance(value, Mapping) else reader.strings(value, where)
            for item in items:
                flags += ["--label", item]
            use(key, HONOURED, "set on the container")
        elif key in ("shm_size", "mem_limit", "memswap_limit"):
            size = megabytes(value)
            if size is None:
                raise reader.error(where, f"expected a size (\"2g\", \"512m\"), got {value!r}")
            if key == "mem_limit":
                fields["memory_mb"] = size
                use(key, HONOURED, f"--memory {size}m")
            else:
                flags += ["--shm-size" if key == "shm_size" else "--memory-swap", f"{size}m"]
                use(key, HONOURED, f"--{'shm-size' if key == 'shm_size' else 'memory-swap'} {size}m")
        elif key == "cpus":
            fields["cpus"] = _cpus(reader, value, where)
            use(key, HONOURED, f"--cpus {fields['cpus']:g}")
        elif key == "deploy":
            _deploy(reader, value, where, fields)
        elif key == "ulimits":
            for limit, setting in _mapping(value, "a mapping of limits", reader, where).items():
                if isinstance(setting, Mapping):
                    flags += ["--ulimit", f"{limit}={setting.get('soft')}:{setting.get('hard')}"]
                else:
                    flags += ["--ulimit", f"{limit}={setting}"]
            use(key, HONOURED, "set on the container")
        elif key == "cap_drop":
            for item in reader.strings(value, where):
                flags += ["--cap-drop", item]
            use(key, HONOURED, "dropped from the container")
        elif key == "healthcheck":
            fields["healthcheck"] = _healthcheck(value, reader, where)
            use(key, HONOURED, "run until it passes before anything runs in the container (a setup failure if it "
                "never does)" if fields["healthcheck"] else "disabled")  # fmt: skip
        elif key == "expose":
            use(key, INFORMATIONAL, "documents ports for other containers: there is none here")
        elif key in ("tty", "stdin_open", "restart", "stop_signal", "stop_grace_period", "logging"):
            use(key, INFORMATIONAL, "concerns the service's main process, which objective-score's keep-alive replaces")
        elif key in ("privileged", "cap_add", "security_opt", "devices", "pid", "ipc", "sysctls", "userns_mode",
                     "cgroup_parent", "runtime", "device_cgroup_rules"):  # fmt: skip
            if key == "privileged" and value is False:
                use(key, HONOURED, "not privileged")
            else:
                use(key, REFUSED, "widens what the container may do on this machine; objective-score harbor does not "
                    "run such containers")  # fmt: skip
        elif key == "ports":
            use(key, REFUSED, "publishes ports on this machine; objective-score harbor publishes none")
        elif key in ("depends_on", "links", "external_links", "volumes_from"):
            use(key, REFUSED, "names other containers; this compose file has one service")
        else:
            use(key, REFUSED, "not a compose service key objective-score harbor knows how to honour")
    if "build" not in service and "image" not in fields:
        if reader.layout == "harbor" and dockerfile_default is not None and dockerfile_default.is_file():
            fields["build_context"], fields["dockerfile"] = dockerfile_default.parent, dockerfile_default
            reader.use(prefix, HONOURED, "Harbor's main service: built from environment/Dockerfile")
        else:
            raise reader.error(prefix, "the service has neither build nor image: there is nothing to run")
    return ComposeService(reader.path, name, environment=env, volumes=tuple(volumes), create_flags=tuple(flags),
                          **fields)  # fmt: skip


def _cpus(reader: _Compose, value: Any, where: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or number <= 0:
        raise reader.error(where, f"expected a number of CPUs > 0, got {value!r}")
    return number


def _deploy(reader: _Compose, value: Any, where: str, fields: dict[str, Any]) -> None:
    deploy = _mapping(value, "a deploy mapping", reader, where)
    for key, item in deploy.items():
        if key == "replicas" and item not in (1, None):
            reader.use(f"{where}.{key}", REFUSED, f"asks for {item} replicas; objective-score harbor runs one container")
            continue
        if key != "resources":
            reader.use(f"{where}.{key}", INFORMATIONAL, "concerns a swarm deployment, not one container")
            continue
        resources = _mapping(item, "a resources mapping", reader, f"{where}.resources")
        for kind, table in resources.items():
            spec = _mapping(table, "a mapping of resources", reader, f"{where}.resources.{kind}")
            here = f"{where}.resources.{kind}"
            if kind == "limits":
                for name, amount in spec.items():
                    if name == "cpus":
                        fields["cpus"] = _cpus(reader, amount, f"{here}.cpus")
                        reader.use(f"{here}.cpus", HONOURED, f"--cpus {fields['cpus']:g}")
                    elif name == "memory":
                        size = megabytes(amount)
                        if size is None:
                            raise reader.error(f"{here}.memory", f"expected a size (\"2g\"), got {amount!r}")
                        fields["memory_mb"] = size
                        reader.use(f"{here}.memory", HONOURED, f"--memory {size}m")
                    elif name == "pids":
                        reader.use(f"{here}.pids", REFUSED, "a pids limit is not passed on")
                    else:
                        reader.use(f"{here}.{name}", REFUSED, "not a resource limit objective-score harbor knows")
            elif kind == "reservations":
                for name in spec:
                    if name == "devices":
                        reader.use(f"{here}.devices", REFUSED, "reserves devices (GPUs): GPU tasks cannot run here, "
                                   "no device is given to the container")  # fmt: skip
                    else:
                        reader.use(f"{here}.{name}", INFORMATIONAL, "a reservation, not a limit: the engine schedules "
                                   "one container on this machine")  # fmt: skip
            else:
                reader.use(here, REFUSED, "not a resources table compose knows")


def _volume(reader: _Compose, item: Any, where: str, base: Path) -> Volume | None:
    if isinstance(item, Mapping):
        kind = str(item.get("type", "volume"))
        source = item.get("source")
        target = reader.text(item.get("target", ""), f"{where}.target")
        read_only = item.get("read_only") is True
        if kind == "tmpfs":
            reader.use(where, HONOURED, f"a tmpfs at {target}")
            return Volume(target, kind="own")
        text_source = None if source is None else reader.text(source, f"{where}.source")
        bind = kind == "bind"
    else:
        text = reader.text(item, where)
        parts = text.split(":")
        if len(parts) == 1:
            reader.use(where, HONOURED, f"an anonymous volume at {parts[0]}: the container's own folder")
            return Volume(parts[0], kind="own")
        text_source, target = parts[0], parts[1]
        read_only = len(parts) > 2 and "ro" in parts[2].split(",")
        bind = text_source.startswith((".", "/", "~", HARNESS))
    if not target.startswith("/"):
        raise reader.error(where, f"expected an absolute container path as the target, got {target!r}")
    if text_source is None or not text_source:
        reader.use(where, HONOURED, f"an anonymous volume at {target}: the container's own folder")
        return Volume(target, kind="own")
    if text_source.startswith(HARNESS):
        reader.use(where, HONOURED, f"Terminal-Bench's harness mounts its logs at {target}: objective-score creates "
                   "the folder and reads what it needs out of the container")  # fmt: skip
        return Volume(target, kind="logs")
    if not bind:
        reader.use(where, HONOURED, f"the named volume {text_source!r} at {target}: the container's own folder (one "
                   "container a run)")  # fmt: skip
        return Volume(target, kind="own")
    if text_source.startswith(("/", "~")):
        reader.use(where, REFUSED, f"binds {text_source}, a path of this machine, into the container; only folders of "
                   "the task are given to it")  # fmt: skip
        return None
    source = (base / text_source).resolve()
    if not source.is_relative_to(reader.root):
        reader.use(where, REFUSED, f"binds {text_source}, which leaves the task directory")
        return None
    if not source.exists():
        raise reader.error(where, f"{text_source!r} does not exist in the task")
    rel = source.relative_to(reader.root).as_posix()
    if read_only:
        reader.use(where, HONOURED, f"the task's {rel} bound read-only at {target}")
        return Volume(target, source, True, "bind-read-only")
    reader.use(where, HONOURED, f"the task's {rel} copied to {target} before anything runs (writes stay in the "
               "container; the task directory is never written)")  # fmt: skip
    return Volume(target, source, False, "copy")
