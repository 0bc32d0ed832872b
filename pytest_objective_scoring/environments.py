"""Per-instance environments (``--environments FILE``) for ``grade-batch``, ``audit run`` and ``ab run``.

A JSON (or TOML) object maps a key to an environment::

    {
      "astropy__astropy-12907": "/envs/astropy-12907/bin/python",
      "django/django@4.0": {"python": "/envs/django-4.0/bin/python"},
      "sympy/sympy@1.12": {"image": "sweb.eval.x86_64.sympy__sympy-24066:latest"}
    }

A key is an instance id, or ``owner/name@version`` (SWE-bench rows carry ``repo`` and
``version``). For an instance, its exact id wins over its ``repo@version``, which wins over
``--python``; with a file and no ``--python``, an instance the file does not name is refused
(grading it with this command's own interpreter would measure the wrong environment).

A value is an interpreter path (relative paths are taken from the file's folder, a bare name
is looked up on ``PATH``), or an object with ``python`` and/or ``image`` (a container image;
``python`` is then the interpreter inside the image, ``python`` on the image's ``PATH`` when
not given, and is not looked for on this machine), and optionally ``runner`` (``pytest``,
``django``, ``sympy``, ``unittest``) and ``test_cmd`` (the test command line): they override the
SWE-bench table the package ships for the instances the key covers (:mod:`.runner_choice`). Every
interpreter of this machine that a grading will use is resolved (it exists and is executable) and
run (``import pytest`` when pytest runs its tests; the interpreter alone for the other runners)
before anything is graded; every problem is one line naming the file, the key and what was expected.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Iterable, Mapping, Sequence

from . import nesting

__all__ = ["Environment", "EnvironmentsError", "EnvironmentsFile", "assign", "load_environments", "probe_all"]

REPO_AT_VERSION: Final = re.compile(r"^[^/@\s]+/[^/@\s]+@[^/@\s]+$")
FIELDS: Final = ("python", "image", "runner", "test_cmd")
IMAGE_PYTHON: Final = "python3"  # with an image and no python: as ``grade --image``, ``python3`` on the image's PATH
PROBE_TIMEOUT: Final = 60.0
FROM_FLAG: Final = "--python"
FROM_DEFAULT: Final = "this interpreter (the default)"
FROM_IMAGE: Final = "--image"
# the interpreter's versions and a digest of every installed distribution (name==version, sorted): an
# install between two gradings changes it (any Python from 3.6: importlib.metadata, else pkg_resources)
PROBE: Final = """import sys, hashlib, pytest
try:
    import importlib.metadata as metadata
    found = ['%s==%s' % (d.metadata['Name'], d.version) for d in metadata.distributions()]
except Exception:
    try:
        import pkg_resources
        found = ['%s==%s' % (d.project_name, d.version) for d in pkg_resources.working_set]
    except Exception:
        found = None
digest = 'unknown' if found is None else 'sha256:' + hashlib.sha256('\\n'.join(sorted(set(found))).encode('utf-8')).hexdigest()
sys.stdout.write('%d.%d.%d %s %s' % (tuple(sys.version_info[:3]) + (pytest.__version__, digest)))"""


class EnvironmentsError(ValueError):
    """Bad environments: one line per problem, naming the file, the key and what was expected."""


@dataclass(frozen=True)
class Entry:
    key: str
    python: str | None  # as written in the file
    image: str | None
    runner: str | None = None
    test_cmd: str | None = None


@dataclass(frozen=True)
class Environment:
    """Where one instance is graded."""

    python: str | None  # an absolute path on this machine, or (with ``image``) the interpreter inside the image
    image: str | None
    source: str  # where it came from: "FILE ['key']", "--python" or "this interpreter (the default)"
    runner: str | None = None  # the test runner over SWE-bench's table (the file's ``runner``)
    test_cmd: str | None = None
    pytest: bool = True  # pytest runs the instance's tests (else its interpreter need not have pytest)

    @property
    def on_host(self) -> bool:
        """Whether ``python`` is an interpreter of this machine (checked here), not one inside an image."""
        return self.image is None and self.python is not None

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"python": self.python, "image": self.image, "from": self.source}
        if self.runner is not None or self.test_cmd is not None:
            found.update(runner=self.runner, test_cmd=self.test_cmd)
        return found


@dataclass(frozen=True)
class EnvironmentsFile:
    path: Path
    entries: Mapping[str, Entry]
    sha256: str | None = None  # of the bytes read (a pipe is read once: never read again for its digest)

    def where(self, key: str) -> str:
        return f"{self.path} [{key!r}]"

    def lookup(self, fields: Mapping[str, Any], instance_id: str) -> tuple[Entry | None, list[str]]:
        """The entry for an instance (its id, then its ``repo@version``) and the keys tried."""
        tried = [instance_id]
        repo, version = fields.get("repo"), fields.get("version")
        if isinstance(repo, str) and repo and version not in (None, ""):
            tried.append(f"{repo}@{version}")
        for key in tried:
            if key in self.entries:
                return self.entries[key], tried
        return None, tried


MAX_BYTES = 16 << 20  # an environments file maps instances to interpreters: 16 MiB is far past any real one


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, read once through :mod:`.inputs` (never blocking on a pipe nobody writes
    to, never a device; ``<(...)`` works), at most :data:`MAX_BYTES`."""
    from .inputs import InputProblem, read_bytes

    try:
        data = read_bytes(path, MAX_BYTES + 1)
    except InputProblem as exc:
        raise EnvironmentsError(f"--environments {path}: {exc}") from None
    if len(data) > MAX_BYTES:
        raise EnvironmentsError(f"--environments {path}: larger than 16 MiB: expected a JSON (or .toml) file")
    return data


def _read(path: Path, data: bytes) -> Any:
    if path.suffix.lower() == ".toml":
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - Python 3.10
            import tomli as tomllib
        try:
            return nesting.bounded(tomllib.loads, data.decode("utf-8"), tomllib.TOMLDecodeError)
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise EnvironmentsError(f"--environments {path}: not TOML ({exc})") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        raise EnvironmentsError(f"--environments {path}: YAML is not read; expected a JSON (or .toml) file")
    try:
        return nesting.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise EnvironmentsError(f"--environments {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise EnvironmentsError(f"--environments {path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None


def _text(value: Any, where: str, field: str) -> str:
    if not isinstance(value, str) or not value.strip() or value != value.strip() or "\0" in value:
        raise EnvironmentsError(f"{where}: field {field!r}: expected a non-empty string without surrounding spaces, got {value!r}")
    return value


def _unused_test_cmd(instance: Any, runner: str | None, test_cmd: str | None, where: str) -> str | None:
    """An entry's ``test_cmd`` that would not be used for ``instance`` (the pytest runner runs pytest
    itself; the instance's own fields win): refused, never ignored. Other problems of the runner are
    left to the run, which says them."""
    if test_cmd is None:
        return None
    from .runner_choice import CommandError as RunnerError
    from .runner_choice import choose, unused_test_cmd

    try:
        command = choose(instance, runner, test_cmd, f"{where} runner/test_cmd")
    except RunnerError:
        return None
    problem = unused_test_cmd(test_cmd, command, "field 'test_cmd'")
    return None if problem is None else f"{where}: {problem} (instance {instance.instance_id})"


def load_environments(path: str | Path) -> EnvironmentsFile:
    """Read and shape-check an environments file (no interpreter is looked at yet)."""
    import hashlib

    path = Path(path)
    raw = _read_bytes(path)
    data = _read(path, raw)
    if not isinstance(data, dict):
        raise EnvironmentsError(f"--environments {path}: expected an object mapping an instance id or owner/name@version "
                                f"to an interpreter path or {{\"python\": ..., \"image\": ...}}, got {type(data).__name__}")  # fmt: skip
    if not data:
        raise EnvironmentsError(f"--environments {path}: holds no environment")
    entries: dict[str, Entry] = {}
    for key, value in data.items():
        where = f"{path} [{key!r}]"
        if not key or any(c.isspace() for c in key) or (("/" in key or "@" in key) and not REPO_AT_VERSION.match(key)):
            raise EnvironmentsError(f"{where}: unknown key shape: expected an instance id (no '/', '@' or spaces) "
                                    "or owner/name@version")  # fmt: skip
        if isinstance(value, str):
            entries[key] = Entry(key, _text(value, where, "python"), None)
            continue
        if not isinstance(value, dict):
            raise EnvironmentsError(f"{where}: expected an interpreter path (a string) or an object with python and/or "
                                    f"image (and optionally runner, test_cmd), got {type(value).__name__}")  # fmt: skip
        unknown = sorted(set(value) - set(FIELDS))
        if unknown:
            raise EnvironmentsError(f"{where}: unknown field {unknown[0]!r}: expected python and/or image (and "
                                    "optionally runner, test_cmd)")  # fmt: skip
        if not any(value.get(f) is not None for f in FIELDS):
            raise EnvironmentsError(f"{where}: expected python, image, runner or test_cmd, got none of them")
        python = None if value.get("python") is None else _text(value["python"], where, "python")
        image = None if value.get("image") is None else _text(value["image"], where, "image")
        if image is not None and any(c.isspace() for c in image):
            raise EnvironmentsError(f"{where}: field 'image': expected an image name, got {image!r}")
        runner = None if value.get("runner") is None else _text(value["runner"], where, "runner")
        if runner is not None:
            from .runner_choice import RUNNERS

            if runner not in RUNNERS:
                raise EnvironmentsError(f"{where}: field 'runner': unknown runner {runner!r}: expected one of "
                                        f"{', '.join(RUNNERS)}")  # fmt: skip
        test_cmd = None if value.get("test_cmd") is None else _text(value["test_cmd"], where, "test_cmd")
        entries[key] = Entry(key, python, image, runner, test_cmd)
    return EnvironmentsFile(path, entries, hashlib.sha256(raw).hexdigest())


def resolve(python: str, where: str, base: Path | None = None) -> str:
    """An absolute path for an interpreter of this machine: a bare name on ``PATH``, a relative path
    from ``base`` (the environments file's folder) or the current folder; symlinks are kept (a
    virtualenv's ``bin/python`` is the virtualenv). ``where`` starts every message."""
    if os.sep not in python:
        found = shutil.which(python)
        if found is None:
            raise EnvironmentsError(f"{where}: not found on PATH: expected an executable interpreter")
        path = os.path.abspath(found)
    else:
        path = os.path.abspath(os.path.join(base, python) if base is not None and not os.path.isabs(python) else python)
    if not os.path.isfile(path):
        raise EnvironmentsError(f"{where}: no such file ({path}): expected an executable interpreter")
    if not os.access(path, os.X_OK):
        raise EnvironmentsError(f"{where}: not executable ({path}): expected an executable interpreter")
    return path


def assign(
    instances: Iterable[Any], environments: EnvironmentsFile | None, python: str | None, *,
    image_python: str = IMAGE_PYTHON, image: str | None = None,
) -> dict[str, Environment]:
    """Instance id -> its environment; raises :class:`EnvironmentsError` with one line per problem
    (an interpreter that does not exist or is not executable, an instance no key covers). ``image``
    (``--image TEMPLATE``) grades every instance the file does not name in its image, ``python``
    then being the interpreter inside it."""
    problems: list[str] = []
    fallback: Environment | None = None
    if image is not None:
        from .container import ContainerError, image_for

        try:
            image_for(image, "probe__probe-1")
        except ContainerError as exc:
            problems.append(str(exc))
            image = None
    if image is not None:
        pass  # per instance below: the template is filled with each instance's id
    elif python is not None or environments is None:
        try:
            fallback = Environment(resolve(python or sys.executable, f"--python {python or sys.executable}"), None,
                                   FROM_FLAG if python is not None else FROM_DEFAULT)  # fmt: skip
        except EnvironmentsError as exc:
            problems.append(str(exc))
    resolved: dict[str, Environment] = {}
    assigned: dict[str, Environment] = {}
    for instance in instances:
        instance_id = instance.instance_id
        if instance_id in assigned:
            continue
        entry, tried = (None, [instance_id]) if environments is None else environments.lookup(instance.fields, instance_id)
        if entry is None and image is not None:
            from .container import image_for

            assigned[instance_id] = Environment(python or image_python, image_for(image, instance_id), FROM_IMAGE)
            continue
        if entry is None:
            if fallback is not None:
                assigned[instance_id] = fallback
            elif environments is not None:
                problems.append(f"{environments.path}: no environment for instance {instance_id!r} (tried key(s) "
                                f"{', '.join(map(repr, tried))}): add one, or give --python for the instances the file "
                                "does not name")  # fmt: skip
            continue
        assert environments is not None
        where = environments.where(entry.key)
        runner, test_cmd = entry.runner, entry.test_cmd
        unused = _unused_test_cmd(instance, runner, test_cmd, where)
        if unused:
            problems.append(unused)
            continue
        if entry.image is not None:  # a template ({instance_id}, {swebench_id}, the preset "swebench") per instance
            from .container import ContainerError, image_for

            try:
                assigned[instance_id] = Environment(entry.python or image_python, image_for(entry.image, instance_id), where,
                                                    runner, test_cmd)  # fmt: skip
            except ContainerError as exc:
                problems.append(f"{where}: field 'image': {str(exc).split(': ', 1)[-1]}")
            continue
        if entry.python is None:  # a runner or command only: the interpreter is --python's (or the image template's)
            if image is not None:
                from .container import image_for

                assigned[instance_id] = Environment(python or image_python, image_for(image, instance_id), where, runner,
                                                    test_cmd)  # fmt: skip
            elif fallback is not None:
                assigned[instance_id] = Environment(fallback.python, None, f"{where} with {fallback.source}", runner,
                                                    test_cmd)  # fmt: skip
            else:
                problems.append(f"{where}: names a runner or test command but no python or image: add one, or give "
                                "--python")  # fmt: skip
            continue
        if entry.key not in resolved:
            try:
                path = resolve(entry.python, f"{where}: python {entry.python!r}", environments.path.parent)
                resolved[entry.key] = Environment(path, None, where, runner, test_cmd)
            except EnvironmentsError as exc:
                problems.append(str(exc))
                resolved[entry.key] = Environment(None, None, where)  # reported once
        if resolved[entry.key].python is not None:
            assigned[instance_id] = resolved[entry.key]
    by_id = {instance.instance_id: instance for instance in instances}
    for instance_id, environment in list(assigned.items()):
        from .runner_choice import CommandError, choose

        try:
            command = choose(by_id[instance_id], environment.runner, environment.test_cmd, environment.source)
        except CommandError as exc:
            problems.append(str(exc))
            continue
        if not command.is_pytest:
            assigned[instance_id] = dataclasses.replace(environment, pytest=False)
    if problems:
        raise EnvironmentsError("\n".join(dict.fromkeys(problems)))
    return assigned


def probe(python: str) -> tuple[str | None, str | None, str | None]:
    """Run ``python -I -c 'import pytest'``: (python version, pytest version, None) or (None, None, what failed)."""
    found = probe_environment(python)
    return found[0], found[1], found[3]


def probe_environment(python: str, pytest: bool = True) -> tuple[str | None, str | None, str | None, str | None]:
    """(python version, pytest version, packages digest, None), or (None, None, None, what failed).
    Without ``pytest`` (an interpreter whose tests another runner runs) pytest is not imported:
    its version is ``"none"``."""
    from .workspace import base_env

    probe = PROBE if pytest else PROBE.replace(", pytest\n", "\n").replace("pytest.__version__", "'none'")
    try:
        done = subprocess.run([python, "-I", "-c", probe], capture_output=True, text=True, errors="replace",
                              timeout=PROBE_TIMEOUT, env=base_env(), stdin=subprocess.DEVNULL)  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, None, None, f"did not answer within {PROBE_TIMEOUT:g}s"
    except OSError as exc:
        return None, None, None, f"cannot be run ({exc.strerror})"
    parts = done.stdout.strip().split(" ")
    if done.returncode != 0 or len(parts) != 3:
        last = ((done.stderr or done.stdout).strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return None, None, None, last[:200]
    return parts[0], parts[1], parts[2], None


def probe_all(environments: Sequence[Environment]) -> dict[str, dict[str, str]]:
    """Run every interpreter of this machine among ``environments`` once (a few at a time); returns
    ``{path: {"python_version", "pytest_version", "packages_digest"}}`` or raises :class:`EnvironmentsError` naming, one
    line each, every interpreter that cannot import pytest and where it came from."""
    sources: dict[str, list[str]] = {}
    needs_pytest: dict[str, bool] = {}
    for environment in environments:
        if environment.on_host:
            assert environment.python is not None
            sources.setdefault(environment.python, [])
            if environment.source not in sources[environment.python]:
                sources[environment.python].append(environment.source)
            needs_pytest[environment.python] = needs_pytest.get(environment.python, False) or environment.pytest
    paths = sorted(sources)
    with ThreadPoolExecutor(max_workers=min(4, max(1, len(paths)))) as pool:
        results = dict(zip(paths, pool.map(lambda p: probe_environment(p, needs_pytest[p]), paths)))
    problems, versions = [], {}
    for path in paths:
        python_version, pytest_version, packages, failure = results[path]
        if failure is not None:
            where = sources[path][0]
            where = f"--python {path}" if where in (FROM_FLAG, FROM_DEFAULT) else f"{where}: python {path}"
            problems.append(f"{where}: cannot import pytest ({failure}): expected an interpreter whose environment has "
                            "pytest (6.0 or later)")  # fmt: skip
        else:
            assert python_version is not None and pytest_version is not None
            versions[path] = {"python_version": python_version, "pytest_version": pytest_version,
                              "packages_digest": packages or "unknown"}  # fmt: skip
    if problems:
        raise EnvironmentsError("\n".join(problems))
    return versions


def check_images(environments: Sequence[Environment], engine: str | None = None) -> str | None:
    """Every image the gradings will use is on this machine (nothing is pulled), checked before
    any grading; raises :class:`EnvironmentsError` (one line an image). Returns the engine found,
    or None when no image is used. The interpreter inside an image is not run here."""
    images: dict[str, str] = {}
    for environment in environments:
        if environment.image is not None:
            images.setdefault(environment.image, environment.source)
    if not images:
        return None
    from .container import ContainerError, detect_engine, image_exists

    first = next(iter(images.values()))
    try:
        engine = detect_engine(engine)
        missing = [(image, source) for image, source in sorted(images.items()) if not image_exists(engine, image)]
    except ContainerError as exc:
        raise EnvironmentsError(f"{first}: field 'image': {exc}: expected podman or docker on this machine") from None
    if missing:
        raise EnvironmentsError("\n".join(f"{source}: field 'image': {image!r}: no such image for {engine} (nothing is "
                                          "pulled: build, load or pull it first)" for image, source in missing))  # fmt: skip
    return engine


def container_mode() -> bool:
    """Whether this runner grades in container images (``GradeRequest`` has ``image``)."""
    import dataclasses

    from .runner import GradeRequest

    return "image" in {f.name for f in dataclasses.fields(GradeRequest)}


def require_container_mode(assigned: Mapping[str, Environment]) -> None:
    """Refuse images up front when this runner has no container mode."""
    images = sorted({(e.source, e.image) for e in assigned.values() if e.image is not None})
    if images and not container_mode():
        source, image = images[0]
        raise EnvironmentsError(f"{source}: field 'image': {image!r}: this version of the runner has no container mode; "
                                "expected python (an interpreter of this machine)")  # fmt: skip


def summary(assigned: Mapping[str, Environment], environments: EnvironmentsFile | None,
            versions: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:  # fmt: skip
    """What a batch or an audit records of its environments: the file (path and sha256), and each
    interpreter and image used, with how many instances and the versions probed."""

    used: dict[tuple[str | None, str | None], dict[str, Any]] = {}
    for environment in assigned.values():
        key = (environment.python, environment.image)
        row = used.setdefault(key, {**environment.to_dict(), "instances": 0, **(versions.get(environment.python or "", {}))})
        row["instances"] += 1
    data: dict[str, Any] = {"used": sorted(used.values(), key=lambda r: (str(r["python"]), str(r["image"])))}
    if environments is not None:
        data["file"] = str(environments.path)
        data["sha256"] = environments.sha256
    return data
