"""What a Harbor / Terminal-Bench task asks of its environment, in the words the task reader
(:mod:`.task`) and the compose reader (:mod:`.compose`) share. Everything here is pure: no engine is
called.

:class:`TaskError` is a task directory that cannot be used as given (it names the file, the key and
what was expected). :class:`KeyUse` is how one key of a task's configuration is used: ``honoured``
(and how), ``informational`` (it changes nothing a verifier does: a description, an author, a
recording switch) or ``refused`` (what this verifier cannot do here, and why); no key is ever
ignored. :class:`Healthcheck` is a command the container must pass before anything runs in it.

:func:`megabytes` reads ``memory = "2G"`` and :func:`seconds` a compose duration;
:func:`substitute_base` replaces the base image of a Dockerfile (``--base-image``, for images that
cannot be pulled here); :func:`container_paths` finds the absolute container paths (``/app``,
``/tests``, ...) a script relies on, which make it unable to run on the host.
"""

from __future__ import annotations

import ast
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..remade import Remade

HONOURED: Final = "honoured"
INFORMATIONAL: Final = "informational"
REFUSED: Final = "refused"

# Harbor's container paths (EnvironmentPaths) and its default working directory: a script of the
# task that names one of them assumes the task's container.
CONTAINER_ROOTS: Final = ("/app", "/tests", "/solution", "/logs")


class TaskError(Remade, ValueError):
    """A task directory that cannot be used as given: names the file, the key and what was expected."""

    def __init__(self, source: Path | str, key: str | None, problem: str) -> None:
        self.source = str(source)
        self.key = key
        self.problem = problem
        super().__init__(f"{source}: {key}: {problem}" if key else f"{source}: {problem}")



@dataclass(frozen=True)
class KeyUse:
    """How one key of a task's configuration is used: ``honoured``, ``informational`` or ``refused``."""

    file: str  # relative to the task: "task.toml", "environment/docker-compose.yaml"
    key: str  # as spelled in that file: "[environment] workdir", "services.client.volumes[1]"
    use: str
    detail: str

    def message(self) -> str:
        return f"{self.file}: {self.key}: {self.detail}"

    def to_dict(self) -> dict[str, str]:
        return {"file": self.file, "key": self.key, "use": self.use, "detail": self.detail}


@dataclass(frozen=True)
class Healthcheck:
    """A command the container must pass before anything runs in it (Docker's HEALTHCHECK semantics)."""

    source: str  # where it is declared
    command: tuple[str, ...]  # argv; a shell command is ("sh", "-c", text)
    interval: float = 1.0
    timeout: float = 30.0
    retries: int = 3
    start_period: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "command": list(self.command), "interval": self.interval,
                "timeout": self.timeout, "retries": self.retries, "start_period": self.start_period}  # fmt: skip


# --------------------------------------------------------------------------------------------
# Sizes and durations


_SIZE: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?)(b?)\s*$", re.IGNORECASE)
_UNITS: Final = {"": 1 / (1024 * 1024), "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024, "p": 1024**3}


def megabytes(value: Any) -> int | None:
    """A size as Harbor and compose write it (``"2G"``, ``"512m"``, ``"1.5GiB"``, ``2048`` bytes... in
    megabytes; ``None`` when it is not a size. A bare number in a string is bytes (compose's rule);
    units are binary (``2G`` = 2048 MB), as docker reads them."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return max(1, math.ceil(value / (1024 * 1024))) if value > 0 else None
    if not isinstance(value, str):
        return None
    match = _SIZE.match(value)
    if match is None:
        return None
    number = float(match.group(1))
    if not math.isfinite(number) or number <= 0:
        return None
    return max(1, math.ceil(number * _UNITS[match.group(2).lower()]))


_DURATION: Final = re.compile(r"(\d+(?:\.\d+)?)(us|ms|s|m|h)")


def seconds(value: Any) -> float | None:
    """A compose duration (``"1m30s"``, ``"5s"``, ``"500ms"``) or a number of seconds; ``None`` if not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) and value >= 0 else None
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    total, position = 0.0, 0
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    for match in _DURATION.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * scale[match.group(2)]
        position = match.end()
    return total if position == len(text) else None


# --------------------------------------------------------------------------------------------
# The base image of a Dockerfile


_FROM: Final = re.compile(r"^(\s*FROM\s+)((?:--\S+\s+)*)(\S+)(.*)$", re.IGNORECASE)
# What a replaced base image is known to set, and its replacement must set in its place: Terminal-Bench's
# base images (ghcr.io/laude-institute/t-bench/...) set WORKDIR /app, which their tasks' Dockerfiles
# rely on (a `COPY file /app` into that folder).
KNOWN_BASE_WORKDIRS: Final = {"ghcr.io/laude-institute/t-bench/": "/app"}


def known_workdir(image: str) -> str | None:
    """The working directory a known base image sets (:data:`KNOWN_BASE_WORKDIRS`), else None."""
    return next((w for prefix, w in KNOWN_BASE_WORKDIRS.items() if image.startswith(prefix)), None)


def base_images(text: str) -> list[str]:
    """The images a Dockerfile builds from (its ``FROM`` lines that do not name an earlier stage)."""
    return substitute_base(text, None)[1]


def substitute_base(text: str, image: str | None) -> tuple[str, list[str]]:
    """``text`` with every ``FROM`` that names an image (not an earlier build stage) replaced by
    ``image`` (``None``: unchanged), and the images replaced. Flags (``--platform``) and stage names
    (``AS builder``) are kept; a replaced image known to set a working directory
    (:data:`KNOWN_BASE_WORKDIRS`) has a ``WORKDIR`` line added after its ``FROM``."""
    stages: set[str] = set()
    replaced: list[str] = []
    lines = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        match = _FROM.match(body)
        if match is None:
            lines.append(line)
            continue
        prefix, flags, named, rest = match.groups()
        stage = re.match(r"\s+AS\s+(\S+)", rest, re.IGNORECASE)
        if named.lower() in stages or named.lower() == "scratch":
            lines.append(line)
        else:
            replaced.append(named)
            lines.append(line if image is None else f"{prefix}{flags}{image}{rest}{line[len(body):] or chr(10)}")
            workdir = known_workdir(named)
            if image is not None and workdir:
                lines.append(f"WORKDIR {workdir}\n")  # what the replaced image set
        if stage:
            stages.add(stage.group(1).lower())
    return "".join(lines), replaced


def dockerfile_workdir(text: str) -> str | None:
    """The working directory a Dockerfile's last stage leaves (its last ``WORKDIR``), when it is a
    literal absolute path; ``None`` otherwise."""
    workdir: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if re.match(r"FROM\s", line, re.IGNORECASE):
            workdir = None
        match = re.match(r"WORKDIR\s+(\S+)\s*$", line, re.IGNORECASE)
        if match and "$" not in match.group(1):
            value = match.group(1).strip("\"'")
            workdir = value if value.startswith("/") else os.path.join(workdir or "/", value)
    return workdir


# --------------------------------------------------------------------------------------------
# Absolute container paths in a task's scripts


def _path_pattern(roots: Sequence[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(r.rstrip("/")) for r in sorted(set(roots), key=len, reverse=True) if r != "/")
    return re.compile(r"(?<![\w.~$/-])(" + alternatives + r")(?=/|$|[\s\"'`)\]},;:|&<>])")


def container_paths(path: Path, roots: Sequence[str] = CONTAINER_ROOTS) -> list[tuple[int, str]]:
    """The absolute container paths (``/app``, ``/tests``, ... and ``roots``) that a script or test
    file uses, as ``(line, path)``: in a Python file, its string literals (not its docstrings or
    comments); in a shell script, its lines without comments."""
    pattern = _path_pattern(roots)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found: list[tuple[int, str]] = []
    if path.suffix == ".py":
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return []
        docstrings = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
                first = node.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                    docstrings.add(id(first.value))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                for match in pattern.finditer(node.value):
                    found.append((node.lineno, match.group(1)))
        return sorted(set(found))
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("#"):
            continue
        line = re.split(r"(?:^|\s)#", line, maxsplit=1)[0]
        found.extend((number, m.group(1)) for m in pattern.finditer(line))
    return found
