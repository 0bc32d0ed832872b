"""Grade inside a SWE-bench-style container: copy to ``/testbed``.

Set ``SWE_DATASET`` (a JSON or JSONL dataset file, FAIL_TO_PASS / PASS_TO_PASS
as JSON strings are fine), ``SWE_INSTANCE_ID`` and optionally ``SWE_SCORE_OUT``
(default ``/tmp/objective-score.json``), then run the repository's usual test
command. The run is graded with SWE-bench 5.x's rules (``--objective-compat=swebench``)
so numbers compare with the leaderboard, only the listed tests run, and the
envelope carries SWE-bench's report shape for tools that read ``report.json``.
"""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    dataset = os.environ.get("SWE_DATASET")
    if not dataset or config.getoption("objective_score", None):
        return
    config.option.objective_score = os.path.abspath(dataset)
    config.option.objective_instance_id = os.environ.get("SWE_INSTANCE_ID")
    config.option.objective_compat = config.getoption("objective_compat", None) or "swebench"
    config.option.objective_select = True
    config.option.objective_score_out = os.path.abspath(os.environ.get("SWE_SCORE_OUT", "/tmp/objective-score.json"))
