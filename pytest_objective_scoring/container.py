"""Container mode: grade in the image a benchmark ships, its repository and environment inside.

SWE-bench publishes one image per instance (``swebench/sweb.eval.x86_64.<id>``) with the repository
at ``/testbed``, checked out at the base commit and installed in the image's environment. With
``--engine docker|podman --image TEMPLATE`` the runner:

1. exports the image's repository (a container created from the image, never started) to the
   workspace: that tree stands for ``--repo``;
2. prepares the pristine copy on this machine exactly as for a local repository (protection, the
   candidate, the test patch: :mod:`.runner`);
3. runs every test run in a fresh container of the image, ``--network none``, with a fresh copy of
   the pristine tree mounted at the image's repository folder (so the image's editable install
   imports the graded sources), the recorder and boot module mounted read-only, the record's key on
   standard input and the record an open descriptor of this machine (podman's ``--preserve-fds``;
   docker: a file in a folder of its own, signed the same way). The ledger, the outputs and the
   user's files never enter the container. The container is the sandbox: ``runner.isolation`` is
   ``{"mode": "container", ...}``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Final, Sequence

__all__ = ["ENGINES", "PRESETS", "ContainerError", "detect_engine", "export_repository", "image_for", "image_exists",
           "run_command"]

ENGINES: Final = ("podman", "docker")
PRESETS: Final = {
    # SWE-bench's own naming (harness/test_spec): the id lower-cased, "__" written "_1776_" on Docker Hub
    "swebench": "swebench/sweb.eval.x86_64.{swebench_id}:latest",
}
C_TOOLS: Final = "/objective-scoring/tools"
C_RECORD: Final = "/objective-scoring/record"
ENGINE_TIMEOUT: Final = 600.0


class ContainerError(RuntimeError):
    """An engine command failed (an infrastructure failure, never the candidate's)."""


def _answers(engine: str) -> bool:
    try:
        return subprocess.run([engine, "version"], capture_output=True, timeout=30, stdin=subprocess.DEVNULL).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def detect_engine(requested: str | None) -> str:
    """The engine to use: ``podman`` or ``docker`` as asked, or the first that answers for ``auto``.
    Raises :class:`ContainerError` naming what was tried."""
    tried = ENGINES if requested in (None, "auto") else (requested,)
    for engine in tried:
        if engine not in ENGINES:
            raise ContainerError(f"--engine {engine}: expected one of {', '.join(ENGINES)} or auto")
        if shutil.which(engine) and _answers(engine):
            return engine
    raise ContainerError(f"no container engine answers here (tried {', '.join(tried)}: '{tried[0]} version' failed)")


def image_for(template: str, instance_id: str) -> str:
    """The image of one instance: ``template`` with ``{instance_id}`` (as it is) and ``{swebench_id}``
    (SWE-bench's spelling) filled in, or a preset's name (``swebench``)."""
    pattern = PRESETS.get(template, template)
    swebench_id = instance_id.lower().replace("__", "_1776_")
    try:
        return pattern.format(instance_id=instance_id, swebench_id=swebench_id)
    except (KeyError, IndexError, ValueError) as exc:
        raise ContainerError(f"--image {template}: only {{instance_id}} and {{swebench_id}} can be filled in ({exc})") from None


def _engine(engine: str, *args: str, timeout: float = ENGINE_TIMEOUT) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([engine, *args], capture_output=True, text=True, errors="replace", timeout=timeout,
                              stdin=subprocess.DEVNULL)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise ContainerError(f"{engine} {args[0]} did not answer within {timeout:g}s") from None
    except OSError as exc:
        raise ContainerError(f"{engine} cannot be run: {exc.strerror}") from None


def image_exists(engine: str, image: str) -> bool:
    args = ("image", "exists", image) if engine == "podman" else ("image", "inspect", image)
    return _engine(engine, *args, timeout=60).returncode == 0


def export_repository(engine: str, image: str, repo_dir: str, dest: Path) -> None:
    """Copy ``repo_dir`` out of ``image`` to ``dest`` (a container created and removed, never started)."""
    name = f"objective-export-{uuid.uuid4().hex[:12]}"
    created = _engine(engine, "create", "--name", name, "--network", "none", image, "true")
    if created.returncode != 0:
        raise ContainerError(f"{engine} create {image}: {(created.stderr or created.stdout).strip()[-500:]}")
    try:
        copied = _engine(engine, "cp", f"{name}:{repo_dir.rstrip('/')}/.", str(dest))
        if copied.returncode != 0:
            raise ContainerError(f"{engine} cp {image}:{repo_dir}: {(copied.stderr or copied.stdout).strip()[-500:]}")
    finally:
        _engine(engine, "rm", "-f", name, timeout=120)


def run_command(
    engine: str, image: str, command: Sequence[str], *, name: str, copy: Path, repo_dir: str, tools: Path,
    environ: dict[str, str], network: bool, record: Path | None, preserve_fd: bool = True,
) -> list[str]:
    """The command line that runs ``command`` in a fresh container of ``image``: ``copy`` mounted at
    ``repo_dir`` (read-write: it is this run's own copy), ``tools`` read-only, no network unless asked,
    ``environ`` set, standard input kept open (the key). With podman the record is descriptor 3 of
    the engine client (``--preserve-fds``: the caller arranges it); with docker ``record`` is a folder
    mounted for the record file."""
    args = [engine, "run", "--rm", "-i", "--name", name, "--workdir", repo_dir,
            "-v", f"{copy}:{repo_dir}", "-v", f"{tools}:{C_TOOLS}:ro"]  # fmt: skip
    if not network:
        args += ["--network", "none"]
    if engine == "podman" and preserve_fd:
        args += ["--preserve-fds", "1"]
    elif record is not None:
        args += ["-v", f"{record}:{C_RECORD}"]
    for key, value in sorted(environ.items()):
        args += ["--env", f"{key}={value}"]
    return [*args, image, *command]


def _gone(engine: str, name: str) -> bool:
    look = ("container", "exists", name) if engine == "podman" else ("container", "inspect", name)
    return _engine(engine, *look, timeout=60).returncode != 0


def remove(engine: str, name: str, *, attempts: int = 5, ended: bool = False) -> bool:
    """Remove a run's container whatever state it is in (a timeout killed only the engine client),
    and look that it is gone: an engine can refuse a removal while its own clean-up of the killed
    run holds the container, so a refusal is tried again a few times. Whether it is gone.
    ``ended``: the engine client ended on its own, so ``run --rm`` removed the container before it
    returned: it is looked for first, and removed only when it is still there."""
    try:
        if ended and _gone(engine, name):
            return True
    except ContainerError:
        pass
    for attempt in range(attempts):
        try:
            _engine(engine, "rm", "-f", "-t", "0", name, timeout=120)
            if _gone(engine, name):
                return True
        except ContainerError:
            pass
        time.sleep(0.25 * 2**attempt)
    return False


def as_descriptor_3(fd: int, command: list[str]) -> list[str]:
    """``command`` started with ``fd`` as its descriptor 3 (podman passes 3.. into the container)."""
    if fd == 3:
        return command
    # not sh: dash refuses descriptors above 9 in a redirection
    remap = "import os, sys; fd = int(sys.argv[1]); os.dup2(fd, 3); os.close(fd); os.execvp(sys.argv[2], sys.argv[2:])"
    return [sys.executable, "-I", "-S", "-c", remap, str(int(fd)), *command]


def container_path(repo_dir: str, copy: Path, path: str | os.PathLike[str]) -> str:
    """A path of the copy on this machine, as the container sees it."""
    rel = Path(path).relative_to(copy)
    return repo_dir.rstrip("/") + ("" if str(rel) == "." else "/" + rel.as_posix())
