"""Gate a merge on a task: copy to the repository root.

In CI, run ``OBJECTIVE_GATE=1 pytest``: the run is graded against
``.objective/instance.json`` (its FAIL_TO_PASS and PASS_TO_PASS ids), pytest
exits 0 only if the task is resolved (1 not resolved, 6 no verdict), and the
envelope lands in ``.objective-scoring/score.json`` for the CI to archive.
Locally, without the variable, pytest runs as usual.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("OBJECTIVE_GATE") != "1" or config.getoption("objective_score", None):
        return
    root = Path(config.rootpath)
    config.option.objective_score = str(root / ".objective" / "instance.json")
    config.option.objective_gate = True
    if not config.getoption("objective_score_out", None):
        config.option.objective_score_out = str(root / ".objective-scoring" / "score.json")
