"""What this verifier says inside a task's container, and how it reads the engine's answers: Harbor's
paths there, the POSIX shell snippets it runs (``sh -c``), and small pure readers of engine output.
:mod:`.container` drives the engine with them."""

from __future__ import annotations

import re
import subprocess
from typing import Final

from .rewards import C_VERIFIER_LOGS, REWARD_JSON, REWARD_TXT

# Inside the container, Harbor's paths (EnvironmentPaths): tests and solution are copied in, rewards are read out.
C_TESTS: Final = "/tests"
C_SOLUTION: Final = "/solution"
C_TOOLS: Final = "/objective-scoring/tools"  # this project's recorder, bind-mounted read-only
C_RUN: Final = "/objective-scoring/run"  # where the recorder writes its facts
C_DEFAULT_WORKDIR: Final = "/app"  # for an image without a WORKDIR


def last_line(done: subprocess.CompletedProcess[str]) -> str:
    """The last line an engine command wrote (its error, usually), or ``no output``."""
    lines = [line.strip() for line in (done.stderr or done.stdout or "").splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def image_id_of(text: str) -> str | None:
    """An image id as ``sha256:<hex>`` (docker prints it so; podman prints the bare hex)."""
    lines = text.strip().splitlines()
    found = lines[-1].strip() if lines else ""
    if re.fullmatch(r"[0-9a-f]{64}", found):
        return "sha256:" + found
    return found or None


# ``image inspect --format``: the image's id and its working directory (``WORKDIR``; empty when it has none)
IMAGE_FACTS: Final = "{{.Id}}|{{.Config.WorkingDir}}"


def image_facts(text: str) -> tuple[str | None, str | None]:
    """The id and the working directory (``""``: none) of an ``image inspect --format IMAGE_FACTS``;
    ``(None, None)`` for an answer not in that shape."""
    lines = [line for line in text.splitlines() if line.strip()]
    found, bar, workdir = (lines[-1] if lines else "").partition("|")  # an id holds no "|"
    if not bar:
        return None, None
    return image_id_of(found), workdir.strip()


def shlex_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def slug(name: str) -> str:
    """A name the engines accept in an image tag or a label (lower case, ``[a-z0-9_.-]``)."""
    return re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-._")[:60] or "task"


def asked_again(python: str, done: subprocess.CompletedProcess[str]) -> str | None:
    """The line added to a run's log once its container was asked again whether ``python`` imports
    pytest (``python -c 'import pytest'``), marked as ours; None when it does, or says nothing."""
    said = [line.strip() for line in f"{done.stdout}\n{done.stderr}".splitlines() if line.strip()]
    if done.returncode == 0 or not said:
        return None
    return (f"\n[objective-score] the run wrote no record and its output does not say why; asked again, "
            f"`{python} -c 'import pytest'` as the verifier's user exits {done.returncode}: {said[-1]}\n")


# Shell snippets run in the container (``sh -c``): POSIX sh only, no tool beyond mkdir and rm.
# Emptying the working directory fails unless it is empty afterwards: files rm could not remove (an image
# USER without permission) would otherwise be verified as part of the working state copied over them.
CLEAR_WORKDIR: Final = ('mkdir -p "$1" && rm -rf -- "$1"/* "$1"/.[!.]* "$1"/..?* && '
                        'for f in "$1"/* "$1"/.[!.]* "$1"/..?*; do if [ -e "$f" ] || [ -L "$f" ]; then '
                        'echo "$f is still there" >&2; exit 1; fi; done')  # fmt: skip
SETUP: Final = (f"mkdir -p {C_TESTS} {C_VERIFIER_LOGS} {C_RUN} && rm -rf {C_TESTS}/* {C_TESTS}/.[!.]* && "
                f"rm -f {C_VERIFIER_LOGS}/{REWARD_TXT} {C_VERIFIER_LOGS}/{REWARD_JSON} {C_RUN}/record.jsonl")  # fmt: skip
FIND_PYTHON: Final = ('for p in python3 python; do if command -v "$p" >/dev/null 2>&1 && "$p" -c "import pytest" '
                      '>/dev/null 2>&1; then command -v "$p"; exit 0; fi; done; exit 1')  # fmt: skip
# The recorder first on the path, then the working state's import roots, then the image's own PYTHONPATH.
WITH_PYTHONPATH: Final = ('PYTHONPATH="$OBJECTIVE_SCORING_PYTHONPATH${PYTHONPATH:+:$PYTHONPATH}"; export PYTHONPATH; '
                          'exec "$@"')  # fmt: skip
# The container's main process: it only keeps the container alive, and stops at once on SIGTERM (a bare
# `sleep infinity` as PID 1 ignores it, and `rm --force` would wait for the engine's stop timeout).
KEEP_ALIVE: Final = 'trap "exit 0" TERM INT; sleep infinity & wait'
# This verifier's own housekeeping in the container (folders, the working state, the tests) runs as root,
# whatever the image's USER: the solution and the verifier run as the task says (or the image's USER).
ROOT: Final = ("--user", "0")
