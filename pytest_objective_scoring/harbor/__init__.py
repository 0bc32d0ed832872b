"""Harbor and Terminal-Bench task directories, verified by executing their tests
(``objective-score harbor run|check``; ``docs/harbor.md`` documents every convention).

The package owns reading a task and everything that runs it, one module a seam, each importing
only those listed before it:

- :mod:`.environment`: what a task asks of its environment, in words shared by the readers
  (:class:`TaskError`, :class:`KeyUse`, sizes, Dockerfile base images, absolute container paths);
- :mod:`.compose`: the task's compose file and its one service;
- :mod:`.task`: the task directory, read and validated into a :class:`TaskSpec`;
- :mod:`.rewards`: the reward, from per-test outcomes or from the task's own test script;
- :mod:`.check`: what is known before anything runs: static tests, the check, the task's env, the
  container engine, where the task runs and why it is refused;
- :mod:`.verification`: one verification wherever it runs: the copies, grading the recorder's record;
- :mod:`.host`: the solution and the verifier run on this machine;
- :mod:`.container`: the task's image and one container per verification, always removed;
- :mod:`.run`: the run itself (its phases, its outputs, :class:`HarborRun`, the ledger entry).

Loading, validation, static test discovery and rewards are pure; nothing here imports pytest.
This module only re-exports the names used from outside the package.
"""

from __future__ import annotations

from .check import (
    EngineStatus,
    Finding,
    StaticTest,
    check_task,
    find_engine,
    refusal,
    resolve_env,
    runs_in,
    static_tests,
    task_env,
)
from .container import TaskContainer
from .environment import KeyUse, TaskError, base_images
from .host import verify_state
from .in_container import C_TOOLS, KEEP_ALIVE
from .rewards import METRIC_SPACES, Reward, compute_reward, script_reward
from .run import (
    EXIT_BAD_INPUT,
    EXIT_NOT_SOLVED,
    EXIT_REFUSED,
    EXIT_SOLVED,
    HarborRun,
    Interrupted,
    NeedsContainer,
    Refused,
    RunOptions,
    dump,
    ledger_entry,
    run_task,
)
from .task import RewardRules, TaskSpec, Tier, load_task
from .verification import Verification

__all__ = [
    "C_TOOLS",
    "EXIT_BAD_INPUT",
    "EXIT_NOT_SOLVED",
    "EXIT_REFUSED",
    "EXIT_SOLVED",
    "EngineStatus",
    "Finding",
    "HarborRun",
    "Interrupted",
    "KEEP_ALIVE",
    "KeyUse",
    "METRIC_SPACES",
    "NeedsContainer",
    "Refused",
    "Reward",
    "RewardRules",
    "RunOptions",
    "StaticTest",
    "TaskContainer",
    "TaskError",
    "TaskSpec",
    "Tier",
    "Verification",
    "base_images",
    "check_task",
    "compute_reward",
    "dump",
    "find_engine",
    "ledger_entry",
    "load_task",
    "refusal",
    "resolve_env",
    "run_task",
    "runs_in",
    "script_reward",
    "static_tests",
    "task_env",
    "verify_state",
]
