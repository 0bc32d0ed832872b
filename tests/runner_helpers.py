"""Helpers for tests that grade real candidates on the fixture projects."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping

from pytest_objective_scoring.instances import Instance, load_instance, parse_instance
from pytest_objective_scoring.runner import GradeRequest, GradeResult, grade_candidate

from .conftest import FIXTURES

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false"]


def interpreter(version: str) -> str | None:
    """A Python of that version (``"3.9"``) that runs: pyenv's, then ``PATH``'s (a pyenv shim of an
    inactive version does not run), or None."""
    import glob

    for candidate in [*sorted(glob.glob(f"/root/.pyenv/versions/{version}.*/bin/python{version}")),
                      *sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}"))),
                      shutil.which(f"python{version}"), f"/usr/bin/python{version}"]:  # fmt: skip
        if candidate and os.path.exists(candidate):
            probe = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                   capture_output=True, text=True)  # fmt: skip
            if probe.returncode == 0 and probe.stdout.strip() == version:
                return candidate
    return None


def instance_of(project: str, **overrides: Any) -> Instance:
    instance = load_instance(FIXTURES / "instances" / f"{project}.json")
    if not overrides:
        return instance
    return parse_instance({**instance.fields, **overrides}, f"<{project} with overrides>")


def patch_of(project: str, candidate: str) -> bytes:
    return (FIXTURES / "patches" / project / f"{candidate}.diff").read_bytes()


def grade(project: str, patch: bytes, *, repo: Path | None = None, instance: Instance | None = None,
          **kwargs: Any) -> GradeResult:  # fmt: skip
    request = GradeRequest(
        repo=repo or FIXTURES / "repos" / project,
        instance=instance or instance_of(project),
        patch=patch,
        timeout=kwargs.pop("timeout", 120.0),
        **kwargs,
    )
    return grade_candidate(request)


def make_patch(repo: Path, edits: Mapping[str, str | None], tmp: Path) -> str:
    """A git diff turning ``repo`` into ``repo`` with ``edits`` (None deletes a file)."""
    work = tmp / "patch-work"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(repo, work, ignore=shutil.ignore_patterns(".git", "__pycache__"))
    subprocess.run([*GIT, "init", "-q"], cwd=work, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=work, check=True)
    subprocess.run([*GIT, "commit", "-qm", "base"], cwd=work, check=True)
    for path, content in edits.items():
        target = work / path
        if content is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content.encode("utf-8"))
    subprocess.run([*GIT, "add", "-A"], cwd=work, check=True)
    diff = subprocess.run([*GIT, "diff", "--cached", "--binary"], cwd=work, check=True, capture_output=True)
    return diff.stdout.decode("utf-8")  # bytes: keep CRLF line endings as they are


def tree_digest(root: Path) -> str:
    """A digest of every file's path and content under ``root``."""
    digest = hashlib.sha256()
    for directory, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(directory, name)
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def run_cli(*args: str, cwd: Path | None = None, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_objective_scoring", *args],
        capture_output=True, text=True, cwd=cwd, timeout=600, **kwargs,
    )  # fmt: skip


def run_cli_here(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """:func:`run_cli` in this process: the same ``cli.main``, its output captured, for tests whose
    commands only read and write files (``ab``, ``sets``). A test of the interpreter boundary itself
    (exit statuses under signals, the installed entry point, concurrent runs) keeps :func:`run_cli`.
    It spares each call an interpreter and its imports (``ab`` imports scipy.stats, about 1 CPU-s)."""
    import contextlib
    import io

    from pytest_objective_scoring import cli

    out, err = io.StringIO(), io.StringIO()
    before = os.getcwd()  # contextlib.chdir is 3.11's
    os.chdir(cwd or before)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(list(args))
            except SystemExit as exc:  # argparse refusing the command line, or --help
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        os.chdir(before)
    return subprocess.CompletedProcess(["objective-score", *args], code, out.getvalue(), err.getvalue())


def envelope_of(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    return json.loads(result.stdout)
