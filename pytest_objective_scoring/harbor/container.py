"""A task run in the container engine (docker or podman, driven through its command line):
:class:`TaskContainer`.

The task's image is built (or named, or stood in for by ``--base-image``), and the oracle's
solution and each verification get a container of their own: the compose service's environment,
volumes, hosts and limits, the task's network for each phase, its healthcheck passed first. The
task's ``tests/test.sh`` runs as Harbor runs it and its reward decides whenever it writes one; this
project's verifier (the recorder mounted read-only, in the image's pytest) runs the pytest tests
beside it. Every container is removed, on any way out. The module holds the class and its failures;
the paths and shell snippets it uses inside the container are :mod:`.in_container`'s.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..testrecord import pytest_missing
from .check import EngineStatus, static_tests, task_env
from .environment import known_workdir, substitute_base
from .in_container import (
    C_DEFAULT_WORKDIR,
    C_RUN,
    C_SOLUTION,
    C_TESTS,
    C_TOOLS,
    CLEAR_WORKDIR,
    FIND_PYTHON,
    IMAGE_FACTS,
    KEEP_ALIVE,
    ROOT,
    SETUP,
    WITH_PYTHONPATH,
    asked_again,
    image_facts,
    last_line,
    shlex_quote,
    slug,
)
from .rewards import C_VERIFIER_LOGS, REWARD_JSON, REWARD_TXT, VERIFIER_SCRIPT, Reward, compute_reward, script_reward
from .task import NO_NETWORK, PUBLIC, TaskSpec
from .verification import (
    VERIFIER_PLUGIN,
    Verification,
    _Ran,
    _failed,
    _graded,
    _stage_solution,
    _stage_tests,
    _stage_tools,
    _tail,
    _tests_of,
    copy_state,
    remove_shadowing,
    state_digest,
)

DEFAULT_BUILD_TIMEOUT: Final = 600.0  # Harbor's default for [environment] build_timeout_sec
ENGINE_TIMEOUT: Final = 300.0  # one engine command that is not a build, a solution or a verifier
ASK_AGAIN_TIMEOUT: Final = 30.0  # asking a run's container again why it wrote no record (_ask_pytest_again)
ENGINE_NETWORKS: Final = {"docker": "bridge", "podman": "podman"}  # each engine's default network
CONTAINER_LABEL: Final = "objective-scoring.harbor"


class ContainerFailure(RuntimeError):
    """A container engine command failed: the run has no verdict (an infrastructure failure)."""


class StateFailure(ContainerFailure):
    """The container could not be given the working state as it is (its working directory could not be
    emptied): no verdict (``setup``), never a verdict on a mix of the image's files and the state's."""


@dataclass
class _ScriptRun:
    """What the task's ``tests/test.sh`` left: its run, and the reward it wrote (or why there is none)."""

    run: dict[str, Any]
    timed_out: bool
    reward: Reward | None
    reason: str | None  # no reward: why
    wrote: dict[str, str]  # the reward files it wrote, verbatim
    log: Path  # its output

    @property
    def wrote_nothing(self) -> bool:
        return not self.timed_out and not self.wrote

    def to_dict(self) -> dict[str, Any]:
        return {"command": self.run.get("command"), "exit_code": self.run.get("exit_code"), "timed_out": self.timed_out,
                "wall_time": self.run.get("wall_time"), "reward_files": dict(self.wrote), "reason": self.reason,
                "output_tail": self.run.get("output_tail")}  # fmt: skip


class TaskContainer:
    """A task's image and the containers its verifications run in, driven through the engine's CLI.

    The image is built from the task's build context (``environment/``, or the build of its compose
    file's one service) or is its ``docker_image`` (or the service's ``image``); ``base_image``
    replaces the images it builds ``FROM`` (or names), for images that cannot be pulled here, and a
    task without container files runs in a container of ``base_image``. A built image is tagged by
    the content of its build (context, Dockerfile, arguments) and reused while that tag exists.
    Each verification gets a container of its own from that image: the working state in the
    image's working directory (Harbor's ``/app``, or the task's ``workdir``), the task's tests
    copied to ``/tests`` after the solution ran, this project's recorder bind-mounted read-only at
    ``/objective-scoring/tools``, the network of the task's phase, the compose service's
    environment, volumes, hosts and limits, the task's healthcheck passed before anything runs.
    Every engine command is kept in :attr:`commands`; every container is removed (``rm --force``)
    when its verification ends, and by :meth:`remove_all` on any way out (a timeout, an interrupt).
    A container stays in :attr:`live` until the engine removed it; those it could not remove are
    reported (:meth:`left_behind`). The task's environment reaches the engine in env files (``env``:
    its ``[environment]``, ``[verifier]`` and ``[solution] env``, resolved; default: resolved
    here), never in the engine client's own environment nor on a command line.
    """

    def __init__(self, spec: TaskSpec, engine: EngineStatus, workspace: Path,
                 env: Mapping[str, Mapping[str, str]] | None = None, base_image: str | None = None) -> None:  # fmt: skip
        if not (engine.usable and engine.name and engine.path):
            raise ValueError(f"not a usable container engine: {engine.detail}")
        self.task_env = task_env(spec) if env is None else env
        self.spec = spec
        self.engine = engine
        self.name: str = engine.name
        self.path: str = engine.path
        self.workspace = workspace
        self.tools = _stage_tools(workspace)  # mounted read-only into every container: nothing there can change it
        self.network_name = ENGINE_NETWORKS.get(engine.name, "bridge")
        self.commands: list[list[str]] = []
        self.live: list[str] = []
        self.not_removed: dict[str, str] = {}  # a container whose removal failed: why
        self.networks: dict[str, str] = {}
        self.base_image = base_image
        self.synthetic = not spec.container  # no container files: a container of base_image
        service = spec.compose
        self.image: str | None = base_image if self.synthetic else (service.image if service else None) or spec.docker_image
        self.image_id: str | None = None
        self.image_workdir: str | None = None  # the image's WORKDIR ("" for none), once asked; None: not known
        self.build: dict[str, Any] | None = None
        self.substituted: dict[str, Any] | None = None  # what --base-image replaced
        self.container_env = {**(service.environment if service else {}), **self.task_env.get("environment", {})}
        self.healthcheck = spec.healthcheck or (service.healthcheck if service else None)
        self.workdir_override = spec.workdir or (service.workdir if service else None)
        self.default_user = service.user if service else None
        self.healthchecks: list[dict[str, Any]] = []
        self.storage: dict[str, Any] = {}
        self.python: str | None = None  # the image's Python with pytest (as the verifier's user), once asked
        self.python_asked = False

    # -- the engine's command line

    def _show(self, args: Sequence[str]) -> str:
        import shlex

        text = shlex.join([self.name, *args])
        return f"`{text if len(text) <= 160 else text[:157] + '...'}`"

    def _call(self, *args: str, timeout: float = ENGINE_TIMEOUT, check: bool = True) -> subprocess.CompletedProcess[str]:
        """One short engine command; a failure raises :class:`ContainerFailure` naming it."""
        self.commands.append([self.path, *args])
        try:
            done = subprocess.run([self.path, *args], check=False, capture_output=True, text=True, errors="replace",
                                  stdin=subprocess.DEVNULL, timeout=timeout)  # fmt: skip
        except subprocess.TimeoutExpired:
            raise ContainerFailure(f"{self._show(args)} did not finish within {timeout:g}s") from None
        except OSError as exc:
            raise ContainerFailure(f"{self._show(args)} could not run: {exc}") from None
        if check and done.returncode != 0:
            raise ContainerFailure(f"{self._show(args)} exited with status {done.returncode}: {last_line(done)}")
        return done

    def _long(self, args: list[str], timeout: float, log: Path, stdin_data: bytes = b"") -> tuple[int | None, bool, float]:
        """A build, a solution or a verifier: output to ``log``, the engine client killed at the
        timeout (the container itself is stopped or removed by the caller). The client runs in this
        process's environment, never the task's (a task's ``DOCKER_HOST`` must not redirect it)."""
        from ..testrun import run_process

        self.commands.append([self.path, *args])
        try:
            code, timed_out, wall, _cpu = run_process([self.path, *args], cwd=self.workspace, env=dict(os.environ),
                                                      timeout=timeout, log=log, stdin_data=stdin_data)  # fmt: skip
        except OSError as exc:
            raise ContainerFailure(f"{self._show(args)} could not run: {exc}") from None
        return code, timed_out, wall

    @contextmanager
    def _env_file(self, env: Mapping[str, str]) -> Iterator[list[str]]:
        """``--env-file PATH`` for one engine command: ``env`` written to a 0600 file of the workspace,
        deleted once the command ended. Values never appear on a command line (nor in :attr:`commands`)
        and never enter the engine client's own environment."""
        if not env:
            yield []
            return
        fd, path = tempfile.mkstemp(prefix="env-", suffix=".list", dir=self.workspace)  # mode 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape", newline="\n") as handle:
                handle.writelines(f"{name}={value}\n" for name, value in env.items())
            yield ["--env-file", path]
        finally:
            Path(path).unlink(missing_ok=True)

    # -- the image and the containers

    def build_timeout(self) -> tuple[float, str]:
        if self.spec.build_timeout is not None:
            return self.spec.build_timeout, f"{self.spec.rel(self.spec.config_file)} {self.spec.key('environment', 'build_timeout_sec')}"
        return DEFAULT_BUILD_TIMEOUT, "default (Harbor's)"

    def _build_source(self) -> tuple[Path, Path, Mapping[str, str], str | None, str | None] | None:
        """What the image is built from: ``(context, dockerfile, args, target, platform)``, or ``None``
        for a named image (``docker_image``, the compose service's ``image``)."""
        spec, service = self.spec, self.spec.compose
        if service is not None and service.build_context is not None and service.dockerfile is not None:
            return service.build_context, service.dockerfile, service.build_args, service.build_target, service.platform
        if (service is not None and service.image) or spec.docker_image:
            return None
        context = spec.build_context
        if context is None or not (context / "Dockerfile").is_file():
            raise ContainerFailure(f"no Dockerfile to build the task's image from ({spec.rel(spec.root / 'environment')})")
        return context, context / "Dockerfile", {}, None, None

    def prepare_image(self) -> None:
        """Build the task's image (or reuse the one its build's content tags), unless it names one."""
        spec = self.spec
        if self.synthetic:
            self.substituted = {"image": self.base_image, "replaced": [], "why": "the task has no container files"}
            return
        source = self._build_source()
        if source is None:  # pulled by the engine when the first container is created
            if self.base_image:
                self.substituted = {"image": self.base_image, "replaced": [self.image], "why": "the task's named image"}
                self.image = self.base_image
            return
        context, dockerfile, args, target, platform = source
        text = dockerfile.read_text(encoding="utf-8", errors="surrogateescape")
        build_file = dockerfile
        if self.base_image:
            text, replaced = substitute_base(text, self.base_image)
            build_file = self.workspace / "Dockerfile.base-image"
            build_file.write_text(text, encoding="utf-8", errors="surrogateescape")
            workdirs = sorted({w for w in map(known_workdir, replaced) if w})
            self.substituted = {"image": self.base_image, "replaced": replaced, "dockerfile": spec.rel(dockerfile),
                                "why": "--base-image", "workdir": workdirs[0] if workdirs else None,
                                "build_file": str(build_file)}  # fmt: skip
        content = hashlib.sha256()
        for part in (state_digest(context), text, json.dumps(dict(args), sort_keys=True), target or "", platform or ""):
            content.update(part.encode("utf-8", "surrogateescape") + b"\0")
        # by content alone: two tasks (or two copies of one) with the same build share one image
        tag = f"objective-harbor/build:{content.hexdigest()[:16]}"
        timeout, source_of = self.build_timeout()
        self.build = {"context": str(context), "dockerfile": str(dockerfile), "tag": tag, "args": dict(args),
                      "target": target, "platform": platform, "timeout": timeout, "timeout_source": source_of}  # fmt: skip
        found = self._call("image", "inspect", "--format", IMAGE_FACTS, tag, check=False)
        if found.returncode == 0 and found.stdout.strip():
            self.build.update(cached=True, exit_code=0, timed_out=False, wall_time=0.0, output_tail="")
            self.image = tag
            self.image_id, self.image_workdir = image_facts(found.stdout)
            return
        log = self.workspace / "build.log"
        command = ["build", "--tag", tag, "--file", str(build_file)]
        for name, value in args.items():
            command += ["--build-arg", f"{name}={value}"]
        if target:
            command += ["--target", target]
        if platform:
            command += ["--platform", platform]
        code, timed_out, wall = self._long([*command, str(context)], timeout, log)
        self.build.update(cached=False, exit_code=code, timed_out=timed_out, wall_time=round(wall, 3),
                          output_tail=_tail(log))  # fmt: skip
        where = f"building the image from {spec.rel(dockerfile)}" + (f" (FROM {self.base_image})" if self.base_image else "")
        if timed_out:
            raise ContainerFailure(f"{where} timed out after {timeout:g}s ({source_of})")
        if code != 0:
            lines = [line.strip() for line in _tail(log).splitlines() if line.strip()]
            raise ContainerFailure(f"{where} failed (exit status {code}): {lines[-1] if lines else 'no output'}")
        self.image = tag

    def create(self, label: str, phases: Sequence[str]) -> str:
        """Create and start a container for the phases it will host (its volumes placed, its healthcheck
        passed); it is removed by :meth:`remove`."""
        assert self.image is not None
        spec, service = self.spec, self.spec.compose
        network = NO_NETWORK if all(spec.network[p] == NO_NETWORK for p in phases) else PUBLIC
        name = f"objective-harbor-{label}-{uuid.uuid4().hex[:12]}"
        args = ["create", "--name", name, "--label", f"{CONTAINER_LABEL}={slug(spec.name)}",
                "--network", "none" if network == NO_NETWORK else self.network_name,
                "--mount", f"type=bind,source={self.tools},target={C_TOOLS},readonly"]  # fmt: skip
        for volume in service.volumes if service else ():
            if volume.kind == "bind-read-only":
                args += ["--mount", f"type=bind,source={volume.source},target={volume.target},readonly"]
        cpus = spec.cpus if spec.cpus is not None else service.cpus if service else None
        memory = spec.memory_mb if spec.memory_mb is not None else service.memory_mb if service else None
        if cpus is not None:
            args += ["--cpus", f"{cpus:g}"]
        if memory is not None:
            args += ["--memory", f"{memory}m"]
        if service is not None:
            args += list(service.create_flags)
            if service.platform:
                args += ["--platform", service.platform]
        self.live.append(name)
        try:
            with self._env_file(self.container_env) as env_flags:
                self._call(*args, *env_flags, "--entrypoint", "sh", self.image, "-c", KEEP_ALIVE,
                           timeout=self.build_timeout()[0])  # may pull an image  # fmt: skip
            self._call("start", name)
            self.networks[name] = network
            self._place_volumes(name)
            if self.healthcheck is not None:
                self._wait_healthy(name, label)
            if "verifier" in phases:
                self._probe_python(name)
        except BaseException:
            self.remove(name)
            raise
        if self.image_id is None:  # asked once a run (the image is there now: built, or pulled by create)
            found = self._call("image", "inspect", "--format", IMAGE_FACTS, self.image, check=False)
            self.image_id, self.image_workdir = image_facts(found.stdout) if found.returncode == 0 else (None, None)
        return name

    def _place_volumes(self, name: str) -> None:
        """The compose service's volumes: the harness's log folders created, folders of the task copied in."""
        service = self.spec.compose
        for volume in service.volumes if service else ():
            if volume.kind in ("logs", "copy"):
                target = volume.target if volume.source is None or volume.source.is_dir() else posixpath.dirname(volume.target)
                self._call("exec", *ROOT, name, "mkdir", "-p", target)
            if volume.kind == "copy" and volume.source is not None:
                source = f"{volume.source}/." if volume.source.is_dir() else str(volume.source)
                self._call("cp", source, f"{name}:{volume.target}")

    def _wait_healthy(self, name: str, label: str) -> None:
        """Docker's HEALTHCHECK semantics: tried every ``interval`` seconds, failures during the start
        period not counted, ``retries`` failures in a row: a setup failure."""
        check = self.healthcheck
        assert check is not None
        started = time.monotonic()
        failures, tries = 0, 0
        while True:
            tries += 1
            try:
                done = self._call("exec", name, *check.command, timeout=max(check.timeout, 1.0), check=False)
                ok, why = done.returncode == 0, f"exit status {done.returncode}: {last_line(done)}"
            except ContainerFailure as exc:
                ok, why = False, str(exc)
            if ok:
                self.healthchecks.append({"container": label, "passed": True, "tries": tries})
                return
            if time.monotonic() - started >= check.start_period:
                failures += 1
            if failures >= check.retries:
                self.healthchecks.append({"container": label, "passed": False, "tries": tries, "last": why})
                raise ContainerFailure(f"the task's healthcheck ({check.source}) did not pass ({failures} failure(s) "
                                       f"in a row; last: {why})")  # fmt: skip
            time.sleep(check.interval)

    def set_network(self, name: str, mode: str) -> None:
        """Give the next phase the task's network: disconnect from (or connect to) the default network."""
        current = self.networks[name]
        if (current == NO_NETWORK) == (mode == NO_NETWORK):
            return
        self._call("network", "disconnect" if mode == NO_NETWORK else "connect", self.network_name, name)
        self.networks[name] = NO_NETWORK if mode == NO_NETWORK else PUBLIC

    def workdir(self, name: str, *, make: bool = True) -> str:
        """Where the working state lives: the task's ``workdir`` (or the compose service's), else the
        image's working directory (``WORKDIR``, from the image's inspection; asked of the container
        when that failed), else ``/app``. ``make``: create the first and the last in the container
        (a caller that empties the folder next creates it then, and a container the solution ran in
        has it already)."""
        if self.workdir_override:
            where = self.workdir_override
        else:
            found = self.image_workdir
            if found is None:
                lines = self._call("exec", name, "pwd").stdout.strip().splitlines()
                found = lines[-1].strip() if lines else ""
            if found.startswith("/") and found != "/":
                return found  # the engine creates the image's WORKDIR in every container of it
            where = C_DEFAULT_WORKDIR
        if make:
            self._call("exec", *ROOT, name, "mkdir", "-p", where)
        return where

    def _probe_python(self, name: str) -> None:
        """Ask a fresh container (nothing of a solution or a working state in it yet) for the image's
        Python that imports pytest (python3, then python) as the verifier's user, once a run: it is the
        image's, so every later container of the run gets the same answer without an engine command.
        (A solution that then removes pytest gets no verdict from this project's verifier: its run
        says that pytest is not installed.)"""
        if self.python_asked:
            return
        done = self._call("exec", *self._user_flags("verifier"), name, "sh", "-c", FIND_PYTHON, check=False)
        lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
        self.python, self.python_asked = (lines[-1] if done.returncode == 0 and lines else None), True

    def find_python(self, name: str) -> str | None:
        """The image's Python that imports pytest, or None (asked when the first container of the
        verifier was created, :meth:`_probe_python`)."""
        self._probe_python(name)
        return self.python

    def _user_flags(self, phase: str) -> list[str]:
        user = (self.spec.agent_user if phase == "agent" else self.spec.verifier_user) or self.default_user
        return ["--user", user] if user else []

    def _place_state(self, name: str, workdir: str, copy: Path) -> None:
        """Empty the working directory (it must end up empty) and copy ``copy`` into it."""
        cleared = self._call("exec", *ROOT, name, "sh", "-c", CLEAR_WORKDIR, "sh", workdir, check=False)
        if cleared.returncode != 0:
            raise StateFailure(f"the image's working directory {workdir} could not be emptied before the "
                               f"working state was copied in (exit status {cleared.returncode}: "
                               f"{last_line(cleared)}); its files would have been verified with the working "
                               "state's")  # fmt: skip
        self._call("cp", f"{copy}/.", f"{name}:{workdir}")
        self._place_volumes(name)

    def _measure(self, name: str) -> int | None:
        """The size of the container's writable layer, in bytes (None when the engine does not say)."""
        done = self._call("container", "inspect", "--size", "--format", "{{.SizeRw}}", name, check=False)
        text = done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout.strip() else ""
        return int(text) if text.isdigit() else None

    def remove(self, name: str) -> bool:
        """Remove a container (``rm --force``). It stays in :attr:`live` until the engine removed it (or
        says it does not exist); a failed removal is kept in :attr:`not_removed`, and an interrupt
        during it propagates with the name still live, for :meth:`remove_all` to try again."""
        if name not in self.live:
            return True
        try:
            done = self._call("rm", "--force", name, check=False)
        except ContainerFailure as exc:
            self.not_removed[name] = str(exc)
            return False
        if done.returncode != 0 and "no such container" not in f"{done.stderr}\n{done.stdout}".lower():
            self.not_removed[name] = (f"{self._show(['rm', '--force', name])} exited with status {done.returncode}: "
                                      f"{last_line(done)}")  # fmt: skip
            return False
        self.live.remove(name)
        self.networks.pop(name, None)
        self.not_removed.pop(name, None)
        return True

    def remove_all(self) -> list[str]:
        """Remove every container still live; returns those that could not be removed. Each one is
        tried even when an earlier removal is interrupted (a second Ctrl-C), which is re-raised then."""
        interrupted: KeyboardInterrupt | None = None
        for name in list(self.live):
            try:
                self.remove(name)
            except KeyboardInterrupt as exc:
                interrupted = exc
                self.not_removed[name] = "its removal was interrupted"
        if interrupted is not None:
            raise interrupted
        return list(self.live)

    def left_behind(self) -> list[dict[str, str]]:
        """The containers that could not be removed, and why: ``{"name", "error"}``."""
        return [{"name": name, "error": self.not_removed.get(name, "not removed")} for name in self.live]

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine.to_dict(), "image": self.image, "image_id": self.image_id, "build": self.build,
                "base_image": self.substituted, "network": dict(self.spec.network),
                "compose": self.spec.compose.to_dict() if self.spec.compose else None,
                "healthchecks": self.healthchecks, "storage": self.storage, "commands": self.commands,
                "not_removed": self.left_behind()}  # fmt: skip

    # -- the phases

    def solve(self, timeout: float, state: Path | None = None) -> tuple[str | None, dict[str, Any]]:
        """Run the task's solution in a new container (the oracle's); returns the container and the run.
        ``state``: a folder of this machine that replaces the image's working directory first."""
        spec = self.spec
        assert spec.solution is not None
        log = self.workspace / "solve.log"
        network = spec.network["agent"]
        name = None
        try:
            name = self.create("oracle", ["agent", "verifier"])
            self.set_network(name, network)
            workdir = self.workdir(name, make=state is None)  # emptying it for the state creates it
            if state is not None:
                self._place_state(name, workdir, state)
            solution = _stage_solution(spec, self.workspace)
            self._call("cp", f"{solution}/.", f"{name}:{C_SOLUTION}")  # creates /solution
            with self._env_file(self.task_env["solution"]) as env_flags:
                args = ["exec", "--workdir", workdir, *self._user_flags("agent"), *env_flags, name, "bash",
                        posixpath.join(C_SOLUTION, spec.solution.name)]  # fmt: skip
                code, timed_out, wall = self._long(args, timeout, log)
            if timed_out:  # the engine client was killed, not the script: stop everything in the container
                self._call("restart", "-t", "0", name)
        except ContainerFailure as exc:
            if name is not None:
                self.remove(name)
            return None, {"command": None, "exit_code": None, "timed_out": False, "timeout": timeout, "wall_time": 0.0,
                          "cpu": None, "output_tail": _tail(log), "where": "container", "network": network,
                          "error": f"the container engine failed: {exc}"}  # fmt: skip
        return name, {"command": [self.name, *args], "exit_code": code, "timed_out": timed_out, "timeout": timeout,
                      "wall_time": round(wall, 3), "cpu": None, "output_tail": _tail(log), "where": "container",
                      "network": network}  # fmt: skip

    def verify(self, label: str, *, state: Path | None, timeout: float, timeout_source: str, shown: str,
               container: str | None = None, exclude: frozenset[str] = frozenset()) -> Verification:  # fmt: skip
        """Verify a working state in a container: ``state`` (a folder of this machine, without
        ``exclude``) replaces the image's working directory, else the container's own (the image's,
        or what the solution left in ``container``). The task's ``tests/test.sh`` runs first when it
        has one, and its reward decides whenever it writes one; this project's verifier runs the
        pytest tests (the image's pytest) and decides otherwise. The container is removed before
        this returns."""
        spec = self.spec
        area = self.workspace / label
        area.mkdir(parents=True)
        log = area / "test.log"
        log.touch()
        info: dict[str, Any] = {"engine": self.name, "image": self.image, "container": container, "workdir": None,
                                "network": spec.network["verifier"], "python": None}  # fmt: skip
        fields: dict[str, Any] = {"where": "container", "container": info}
        name = container
        try:
            if name is None:
                name = self.create(label, ["verifier"])
                info["container"] = name
            self.set_network(name, spec.network["verifier"])
            info["image_id"] = self.image_id
            # a container the solution ran in has its working directory; emptying it for a state creates it
            workdir = info["workdir"] = self.workdir(name, make=state is None and container is None)
            copy = area / "app"
            if state is not None:
                copy_state(state, copy, exclude)
                patch_ref = state_digest(copy)
                removed = remove_shadowing(copy)
                self._place_state(name, workdir, copy)
            else:
                raw = area / "from-container"
                raw.mkdir()
                self._call("cp", f"{name}:{workdir}/.", str(raw))
                copy_state(raw, copy)
                shutil.rmtree(raw, ignore_errors=True)
                patch_ref = state_digest(copy)
                removed = remove_shadowing(copy)
                if removed:
                    self._call("exec", *ROOT, name, "rm", "-rf", "--", *(posixpath.join(workdir, r) for r in removed))
            tests = _stage_tests(spec, area)
            # after the state: a working directory that is (or, by a symlink or a path spelled `//logs`, reaches)
            # one of the verifier's folders must not keep a reward, a record or a test the state brought
            user = self._user_flags("verifier")
            setup = SETUP + (f" && chown -R {shlex_quote(user[1])} {C_VERIFIER_LOGS} {C_RUN}" if user else "")
            self._call("exec", *ROOT, name, "sh", "-c", setup)
            self._call("cp", f"{tests}/.", f"{name}:{C_TESTS}")
            too_big = self._storage_check(name, label)
            if too_big is not None:
                return self._nothing_passed(label, shown, patch_ref, removed, timeout, timeout_source, log, too_big,
                                            fields)  # fmt: skip
            script = None
            if spec.layout == "harbor" and spec.test_script is not None:
                script = self._run_script(name, workdir, area, timeout)
            python = info["python"] = self.find_python(name)
            ours = None
            if python is not None and spec.test_files and not (script is not None and script.timed_out):
                ours = self._run_pytest(label, shown, name, workdir, python, copy, patch_ref, removed, area, timeout,
                                        timeout_source, fields)  # fmt: skip
            self._collect_artifacts(name, label, info)
            return self._decide(label, shown, script, ours, python, patch_ref, removed, timeout, timeout_source, log,
                                fields)  # fmt: skip
        except ContainerFailure as exc:
            reason = str(exc) if isinstance(exc, StateFailure) else f"the container engine failed: {exc}"
            return _failed(spec, label, shown, reason, "setup", timeout, timeout_source, log, **fields)
        finally:
            if name is not None:
                self.remove(name)

    def _storage_check(self, name: str, label: str) -> str | None:
        """``[environment] storage_mb``: the container's writable layer, measured before the verifier runs;
        why the state is beyond it, or None."""
        limit = self.spec.storage_mb
        if limit is None:
            return None
        used = self._measure(name)
        self.storage[label] = {"limit_mb": limit, "used_bytes": used}
        if used is None:
            self.storage[label]["note"] = "the engine did not report the container's size: not checked"
            return None
        if used > limit * 1024 * 1024:
            return (f"the container's writable layer holds {used / 1048576:.1f} MB before the verifier runs, beyond "
                    f"the task's storage limit ({self.spec.key('environment', 'storage_mb')} = {limit})")  # fmt: skip
        return None

    def _nothing_passed(self, label: str, shown: str, patch_ref: str, removed: list[str], timeout: float,
                        timeout_source: str, log: Path, why: str, fields: dict[str, Any]) -> Verification:  # fmt: skip
        """A verdict with nothing passed, for a state that broke a limit of the task (its storage)."""
        from ..envelope import build_envelope

        spec = self.spec
        found, _ = static_tests(spec)
        reward = compute_reward(spec.rules, [(t.test_id, False) for t in found] or [("<the task's tests>", False)])
        envelope = build_envelope(instance_id=spec.name, score=None, grading=None, no_verdict=None, session={},
                                  extra={"harbor": {"task": spec.name, "label": label, **reward.to_dict()},
                                         "patch_ref": patch_ref})  # fmt: skip
        envelope["status"] = "verdict"
        envelope.pop("swebench", None)
        run = {"command": None, "exit_code": None, "timed_out": False, "wall_time": 0.0, "cpu": None, "output_tail": ""}
        return Verification(label, shown, "verdict", None, reward, envelope, run, timeout, timeout_source, removed, log,
                            attribution=f"{why}: nothing of it passes", **fields)  # fmt: skip

    def _collect_artifacts(self, name: str, label: str, info: dict[str, Any]) -> None:
        """The task's ``artifacts``: copied out of the container (to the workspace; the outputs copy them on)."""
        if not self.spec.artifacts:
            return
        folder = self.workspace / "artifacts" / label
        collected = []
        for path in self.spec.artifacts:
            target = folder / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            done = self._call("cp", f"{name}:{path}", str(target), check=False)
            collected.append({"path": path, "copied": done.returncode == 0,
                              "error": None if done.returncode == 0 else last_line(done)})  # fmt: skip
        info["artifacts"] = {"folder": str(folder), "items": collected}

    def _decide(self, label: str, shown: str, script: _ScriptRun | None, ours: Verification | None, python: str | None,
                patch_ref: str, removed: list[str], timeout: float, timeout_source: str, log: Path,
                fields: dict[str, Any]) -> Verification:  # fmt: skip
        """The verdict: the task's test script's reward whenever it wrote one (this project's verifier's
        run kept beside it as a cross-check); this project's verifier's when the script wrote none or
        the task has none; no verdict when the script timed out or wrote a malformed reward."""
        spec = self.spec
        if script is not None and not script.wrote_nothing:
            return self._script_verdict(label, shown, script, ours, patch_ref, removed, timeout, timeout_source, log,
                                        fields)  # fmt: skip
        if ours is not None:
            if script is not None:
                ours.script = {**script.to_dict(), "decides": False,
                               "note": f"{VERIFIER_SCRIPT} wrote no reward: this project's verifier decides"}  # fmt: skip
            return ours
        if script is not None:
            why = f"{VERIFIER_SCRIPT} wrote no reward, and the image has no Python that imports pytest"
            if python is not None:
                why = f"{VERIFIER_SCRIPT} wrote no reward, and the task has no pytest tests"
        elif spec.layout == "harbor":
            why = (f"the image {self.image} has no Python that imports pytest (looked for python3, python) and the task "
                   f"has no {VERIFIER_SCRIPT} to verify it with")  # fmt: skip
        else:
            why = (f"the image {self.image} has no Python that imports pytest (looked for python3, python); "
                   "run-tests.sh writes no reward file (Terminal-Bench parses pytest's report)")  # fmt: skip
        failed = _failed(spec, label, shown, why, "setup", timeout, timeout_source, log, **fields)
        if script is not None:
            failed.script = {**script.to_dict(), "decides": False}
        return failed

    def _script_verdict(self, label: str, shown: str, script: _ScriptRun, ours: Verification | None, patch_ref: str,
                        removed: list[str], timeout: float, timeout_source: str, log: Path,
                        fields: dict[str, Any]) -> Verification:  # fmt: skip
        """The verification the task's test script decided (or left without a verdict: a timeout, a malformed reward)."""
        from ..envelope import build_envelope
        from ..integrity import digests

        spec = self.spec
        reward, reason = script.reward, script.reason
        harbor: dict[str, Any] = {"task": spec.name, "label": label, "metric_space": spec.metric_space}
        if reward is not None:
            harbor.update(reward.to_dict())
        integrity = [{"kind": "shadowing_file_removed", "detail": f"{path}: would load in place of the verifier"}
                     for path in removed]  # fmt: skip
        envelope = build_envelope(instance_id=spec.name, score=None, grading=None, no_verdict=reason, session={},
                                  integrity=integrity, extra={"harbor": harbor, "patch_ref": patch_ref,
                                                              "verifier": VERIFIER_SCRIPT})  # fmt: skip
        # The script names no tests, so no Score (its gate is over tests): the verdict is the script's reward.
        envelope["status"] = "verdict" if reward is not None else "no_verdict"
        envelope.pop("swebench", None)
        envelope["digests"] = digests(None, patch_ref, None, None, None)
        cross = None
        if ours is not None:
            agrees = None if reward is None or ours.reward is None else ours.reward.solved == reward.solved
            passed = f"{ours.reward.passed}/{ours.reward.total}" if ours.reward is not None else "no"
            cross = {"verifier": VERIFIER_PLUGIN, "status": ours.status, "no_verdict_reason": ours.no_verdict_reason,
                     "reward": ours.reward.to_dict() if ours.reward is not None else None,
                     "solved": ours.solved if ours.status == "verdict" else None, "agrees": agrees,
                     "tests": _tests_of(ours.envelope), "score": ours.envelope.get("score"),
                     "integrity": ours.envelope.get("integrity")}  # fmt: skip
            if agrees is False:
                cross["note"] = (f"{VERIFIER_SCRIPT} says {'solved' if reward and reward.solved else 'not solved'}, "
                                 f"this project's verifier says {'solved' if ours.solved else 'not solved'} "
                                 f"({passed} tests passed); the script's reward "
                                 "decides: look at its output")  # fmt: skip
        return Verification(label, shown, envelope["status"], reason, reward, envelope, script.run, timeout,
                            timeout_source, removed, script.log, verifier=VERIFIER_SCRIPT,
                            failure_class=None if reward is not None else "verifier",
                            script={**script.to_dict(), "decides": True}, cross_check=cross, **fields)  # fmt: skip

    def _run_pytest(self, label: str, shown: str, name: str, workdir: str, python: str, copy: Path, patch_ref: str,
                    removed: list[str], area: Path, timeout: float, timeout_source: str,
                    fields: dict[str, Any]) -> Verification:  # fmt: skip
        """This project's verifier in the container: the recorder (read-only mount) in the image's pytest."""
        from ..testrun import BOOT_MODULE, RECORDER_MODULE, record_key
        from ..workspace import import_roots

        spec = self.spec
        key = record_key()  # reaches the recorder on standard input (docker exec -i): in no environment
        host_roots, packages = import_roots(copy)
        roots = [workdir if Path(r) == copy else posixpath.join(workdir, Path(r).relative_to(copy).as_posix())
                 for r in host_roots]  # fmt: skip
        env = {
            "OBJECTIVE_SCORING_PYTHONPATH": ":".join([C_TOOLS, *roots]),
            "TEST_DIR": C_TESTS,
            "OBJECTIVE_SCORING_RECORD": f"{C_RUN}/record.jsonl",
            "OBJECTIVE_SCORING_RECORD_KEY_STDIN": "1",
            "OBJECTIVE_SCORING_ACTIVE": "1",
            "PYTHONNOUSERSITE": "1",
            "OBJECTIVE_SCORING_IMPORT_ROOTS": ":".join(roots),
            "OBJECTIVE_SCORING_PACKAGES": ":".join(packages),
            "OBJECTIVE_SCORING_COPY": workdir,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "PYTHONIOENCODING": "utf-8",
            **self.task_env["verifier"],
        }
        files = [posixpath.join(C_TESTS, p.relative_to(spec.tests_dir).as_posix()) for p in spec.test_files]
        env["OBJECTIVE_SCORING_GUARDED"] = ":".join(f for f in files if ":" not in f)
        # through the boot module, isolated, as on this machine (host.verify_state)
        pytest = [python, "-I", "-S", "-B", f"{C_TOOLS}/{BOOT_MODULE}.py", "-p", RECORDER_MODULE, "-p", "no:cacheprovider",
                  "-q", "-rfE", "--maxfail=0", "--continue-on-collection-errors", "--rootdir", C_TESTS, *files]  # fmt: skip
        log = area / "test.log"
        with self._env_file(env) as env_flags:
            args = ["exec", "-i", "--workdir", workdir, *self._user_flags("verifier"), *env_flags, name, "sh", "-c",
                    WITH_PYTHONPATH, "sh", *pytest]  # fmt: skip
            code, timed_out, wall = self._long(args, timeout, log, stdin_data=(key + "\n").encode("ascii"))
        record = area / "record.jsonl"
        if not timed_out:
            self._call("cp", f"{name}:{C_RUN}/record.jsonl", str(record), check=False)
            # the boot module opens the record as it starts: a run that never reached pytest leaves it empty
            wrote_nothing = not record.is_file() or record.stat().st_size == 0
            if wrote_nothing and not pytest_missing(_tail(log)):
                self._ask_pytest_again(name, python, log)
        run = {"command": [self.name, *args], "exit_code": code, "timed_out": timed_out, "wall_time": round(wall, 3),
               "cpu": None, "output_tail": _tail(log)}  # fmt: skip
        ran = _Ran(label, shown, run, record, timed_out, python, None, workdir, patch_ref, removed, log, key)
        return _graded(spec, ran, timeout, timeout_source, verifier=VERIFIER_PLUGIN, **fields)

    def _ask_pytest_again(self, name: str, python: str, log: Path) -> None:
        """A run that wrote no record and did not say why (an engine can lose the output of a run that
        ends at once: podman's ``exec -i``): the container's Python is asked again, as the verifier's
        user, whether it imports pytest, and its answer added to the run's log. It is the container's
        word, like the run's: it holds only when the control run shows it too (``attributed``)."""
        try:  # the container's programs are the run's now: an answer that does not come is no answer
            done = self._call("exec", *self._user_flags("verifier"), name, python, "-c", "import pytest",
                              timeout=ASK_AGAIN_TIMEOUT, check=False)  # fmt: skip
        except ContainerFailure:
            return
        line = asked_again(python, done)
        if line is not None:
            with log.open("a", encoding="utf-8", errors="replace") as handle:
                handle.write(line)

    def _run_script(self, name: str, workdir: str, area: Path, timeout: float) -> _ScriptRun:
        """The task's own verifier (``bash /tests/test.sh``, as Harbor runs it): its reward files are read."""
        spec = self.spec
        env = {"TEST_DIR": C_TESTS, **self.task_env["verifier"]}
        log = area / "test.sh.log"
        with self._env_file(env) as env_flags:
            args = ["exec", "--workdir", workdir, *self._user_flags("verifier"), *env_flags, name, "bash",
                    f"{C_TESTS}/test.sh"]  # fmt: skip
            code, timed_out, wall = self._long(args, timeout, log)
        run: dict[str, Any] = {"command": [self.name, *args], "exit_code": code, "timed_out": timed_out,
                               "wall_time": round(wall, 3), "cpu": None, "output_tail": _tail(log)}  # fmt: skip
        if timed_out:
            self._call("restart", "-t", "0", name)  # stop what the script left running before anything else runs
            return _ScriptRun(run, True, None, f"the verifier ({VERIFIER_SCRIPT}) timed out after {timeout:g}s", {}, log)
        logs = area / "verifier-logs"
        logs.mkdir()
        self._call("cp", f"{name}:{C_VERIFIER_LOGS}/.", str(logs), check=False)
        wrote = {p.name: p.read_text(encoding="utf-8", errors="replace") for p in (logs / REWARD_TXT, logs / REWARD_JSON)
                 if p.is_file()}  # fmt: skip
        run["reward_files"] = dict(wrote)
        reward, reason = script_reward(spec.rules, logs)
        return _ScriptRun(run, False, reward, reason, wrote, log)
