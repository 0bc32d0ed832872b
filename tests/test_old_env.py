"""Grading in an old benchmark environment: Python 3.9 with pytest 6.0, as SWE-bench images have.

The runner loads only its recorder into the test process, so that file must work
with the oldest interpreter and pytest a real environment brings. The environment
is built once (pip from the package index) and cached under ~/.cache; on a
machine without a Python 3.9 the oldest pytest that runs on this interpreter is
used instead, and the test id says which.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .runner_helpers import grade, interpreter, patch_of

pytestmark = pytest.mark.slow  # real gradings (docs/development.md: the fast subset)


PY39 = interpreter("3.9")
BASE, PYTEST_PIN = (PY39, "pytest==6.0.2") if PY39 else (sys.executable, "pytest==7.0.1")


@pytest.fixture(scope="session")
def old_python() -> str:
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pytest-objective-scoring"
    cache.mkdir(parents=True, exist_ok=True)
    venv = cache / f"old-env-{Path(BASE).name}-{PYTEST_PIN.replace('==', '-')}"
    python = venv / "bin" / "python"
    with open(cache / "old-env.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # xdist workers share one build
        ready = python.exists() and subprocess.run([str(python), "-c", "import pytest"], capture_output=True).returncode == 0
        if not ready:
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([BASE, "-m", "venv", str(venv)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", PYTEST_PIN],
                           check=True, timeout=600)  # fmt: skip
    return str(python)


@pytest.mark.parametrize(
    ("project", "candidate", "expected"),
    [
        ("textstats", "gold", "resolved"),
        ("textstats", "break_p2p", "not_resolved"),
        ("intervals", "gold", "resolved"),
        ("intervals", "tamper", "not_resolved"),
        ("csvlite", "gold", "resolved"),
    ],
)
def test_grading_in_an_old_environment(old_python, project, candidate, expected):
    result = grade(project, patch_of(project, candidate), python=old_python)
    score = result.envelope["score"]
    assert score["resolved"] == expected, result.envelope["tests"]
    version = "pytest/6.0.2 CPython/3.9" if PY39 else "pytest/7.0.1"
    assert version in score["graded_by"], score["graded_by"]
