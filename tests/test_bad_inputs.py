"""Bad input found before any work, one line each (issue 28, in part)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import FIXTURES
from .runner_helpers import run_cli_here


@pytest.mark.parametrize("limit", ["0", "-1"])
@pytest.mark.parametrize("command", ["grade", "grade-batch"])
def test_a_patch_size_limit_below_one_byte_is_refused(tmp_path: Path, command: str, limit: str) -> None:
    """``--max-patch-size -1`` refused every candidate unread, the gold patch included: each graded
    not resolved (exit 1), silently wrong."""
    if command == "grade":
        args = ["--instance", str(FIXTURES / "instances" / "csvlite.json"), "--repo", str(FIXTURES / "repos" / "csvlite"),
                "--patch", str(FIXTURES / "patches" / "csvlite" / "gold.diff"), "--no-ledger"]  # fmt: skip
    else:
        args = ["--dataset", str(FIXTURES / "datasets" / "fixtures.jsonl"), "--predictions", str(tmp_path / "p.jsonl"),
                "--ledger", str(tmp_path / "l.sqlite")]  # fmt: skip
    result = run_cli_here(command, *args, "--max-patch-size", limit)
    assert result.returncode == 2
    assert (f"argument --max-patch-size: '{limit}': a patch size limit must be from 1 to 1073741824 bytes (below 1 "
            "byte every candidate, the gold patch included, would be refused unread)") in result.stderr  # fmt: skip
    assert not (tmp_path / "l.sqlite").exists()


@pytest.mark.slow
def test_two_batches_started_in_the_same_second_get_run_reports_of_their_own(tmp_path: Path, monkeypatch) -> None:
    """The default run id was a timestamp to the second: a second batch started in the same second
    (a resumed one beside another) was refused, "a run report is never overwritten" (exit 2)."""
    from pytest_objective_scoring.commands import batch as command

    monkeypatch.setattr(command.time, "strftime", lambda *args: "20261203-083000")
    row = json.loads((FIXTURES / "datasets" / "fixtures.jsonl").read_text().splitlines()[0])
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"instance_id": row["instance_id"], "model_name_or_path": "m",
                                       "model_patch": row["patch"]}) + "\n")  # fmt: skip
    for n in (1, 2):
        result = run_cli_here("grade-batch", "--dataset", str(FIXTURES / "datasets" / "fixtures.jsonl"), "--predictions",
                              str(predictions), "--repos", str(FIXTURES / "repos"), "--ledger", str(tmp_path / "l.sqlite"),
                              "--report", str(tmp_path / f"report{n}.json"), "--instance-ids", row["instance_id"])  # fmt: skip
        assert result.returncode in (0, 1), result.stderr[-1500:]
    reports = sorted(p.name for p in tmp_path.glob("m.20261203-083000-*.json"))
    assert len(reports) == 2, sorted(p.name for p in tmp_path.iterdir())
