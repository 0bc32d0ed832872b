"""Audits as a standing activity: recorded with their schedule, listed when due, reported when grading;
the public receipt of a run from the ledger."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pytest_objective_scoring.audit_ledger import audits, due, record_audit
from pytest_objective_scoring.config import ConfigError, audit_every_days
from pytest_objective_scoring.instances import load_instances
from pytest_objective_scoring.integrity import DAY
from pytest_objective_scoring.ledger import Ledger

from .conftest import FIXTURES
from .runner_helpers import run_cli_here as run_cli

DATASET = FIXTURES / "datasets" / "fixtures.jsonl"
NOW = int(time.time())


def report(instance_id: str, disposition: str = "valid", complete: bool = True) -> dict:
    kinds = {"valid": [], "weak": [{"kind": "untested_hunk", "disposition": "weak"}],
             "invalid": [{"kind": "empty_patch_resolves", "disposition": "invalid"}]}[disposition]  # fmt: skip
    return {"instance_id": instance_id, "disposition": disposition, "complete": complete, "findings": kinds, "checks": []}


@pytest.fixture
def audited(tmp_path: Path) -> Path:
    """A ledger where textstats was audited 40 days ago on a 30-day schedule (overdue), intervals
    yesterday (valid), and csvlite never."""
    path = tmp_path / "ledger.sqlite"
    by_id = {i.instance_id: i for i in load_instances(DATASET)}
    with Ledger(path) as ledger:
        record_audit(ledger, report("fixtures__textstats-1"), by_id["fixtures__textstats-1"].fields, 30, {}, now=NOW - 40 * DAY)
        record_audit(ledger, report("fixtures__intervals-1"), by_id["fixtures__intervals-1"].fields, 30, {}, now=NOW - DAY)
    return path


def test_audit_due_lists_overdue_and_missing_tasks(audited):
    result = run_cli("audit", "due", "--ledger", str(audited), "--dataset", str(DATASET), "--json")
    assert result.returncode == 1, "something needs attention"
    rows = {r["instance_id"]: r for r in json.loads(result.stdout)["tasks"]}
    assert rows["fixtures__csvlite-1"]["state"] == "missing"
    assert rows["fixtures__textstats-1"]["state"] == "overdue"
    assert rows["fixtures__intervals-1"]["state"] == "valid" and rows["fixtures__intervals-1"]["next_due"] == NOW - DAY + 30 * DAY
    stricter = json.loads(run_cli("audit", "due", "--ledger", str(audited), "--every", "0.5", "--json").stdout)
    assert {r["instance_id"]: r["state"] for r in stricter["tasks"]}["fixtures__intervals-1"] == "overdue"
    table = run_cli("audit", "due", "--ledger", str(audited))
    assert table.returncode == 1 and "1 need attention" in table.stdout and "overdue" in table.stdout


def test_a_fresh_audit_supersedes_and_invalid_or_incomplete_ones_stay_visible(tmp_path):
    [instance] = [i for i in load_instances(DATASET) if i.instance_id == "fixtures__csvlite-1"]
    with Ledger(tmp_path / "l.sqlite") as ledger:
        record_audit(ledger, report(instance.instance_id), instance.fields, 30, {}, now=NOW - 60 * DAY)
        assert due(audits(ledger), now=NOW)[0]["state"] == "overdue"
        record_audit(ledger, report(instance.instance_id, "invalid"), instance.fields, 30, {}, now=NOW)
        assert due(audits(ledger), now=NOW)[0]["state"] == "invalid"
        record_audit(ledger, report(instance.instance_id, "weak", complete=False), instance.fields, 30, {}, now=NOW)
        assert due(audits(ledger), now=NOW)[0]["state"] == "incomplete"
        record_audit(ledger, report(instance.instance_id, "weak"), instance.fields, 30, {}, now=NOW)
        rows = due(audits(ledger), now=NOW)
    assert [r["state"] for r in rows] == ["weak"] and rows[0]["findings"] == ["untested_hunk"]


def test_an_edited_instance_is_a_new_task_never_audited(tmp_path):
    [instance] = [i for i in load_instances(DATASET) if i.instance_id == "fixtures__csvlite-1"]
    edited = type(instance)(instance.instance_id, instance.fail_to_pass, instance.pass_to_pass,
                            {**instance.fields, "FAIL_TO_PASS": [*instance.fail_to_pass][:1]}, "<edited>")  # fmt: skip
    with Ledger(tmp_path / "l.sqlite") as ledger:
        record_audit(ledger, report(instance.instance_id), instance.fields, 30, {}, now=NOW)
        rows = due(audits(ledger), [edited], now=NOW)
    assert sorted(r["state"] for r in rows) == ["missing", "superseded"]  # the old content is superseded, not due


def test_the_schedule_comes_from_the_option_the_config_or_the_default(tmp_path):
    assert audit_every_days(7.0, tmp_path) == (7.0, "option")
    assert audit_every_days(None, tmp_path) == (30.0, "default")
    (tmp_path / "pyproject.toml").write_text("[tool.objective-scoring]\naudit_every_days = 14\n")
    assert audit_every_days(None, tmp_path)[0] == 14.0
    (tmp_path / "pyproject.toml").write_text("[tool.objective-scoring]\naudit_every_days = -1\n")
    with pytest.raises(ConfigError, match=r"audit_every_days: expected a number of days > 0, got -1"):
        audit_every_days(None, tmp_path)


@pytest.mark.slow
def test_grading_says_the_audit_is_overdue_and_the_receipt_comes_from_the_ledger(audited, tmp_path):
    common = ["--repo", str(FIXTURES / "repos" / "textstats"), "--instance", str(FIXTURES / "instances" / "textstats.json"),
              "--patch", str(FIXTURES / "patches" / "textstats" / "gold.diff"), "--ledger", str(audited)]  # fmt: skip
    graded = run_cli("grade", *common, "--json")
    assert graded.returncode == 0, graded.stderr
    envelope = json.loads(graded.stdout)
    assert envelope["audit"]["state"] == "overdue" and envelope["integrity"]["disposition"] == "quarantined"
    assert envelope["integrity"]["reasons"] == ["task_audit_overdue"]
    summary = run_cli("grade", *common)
    assert "task audit: overdue - this task's audit is overdue" in summary.stdout
    seq = json.loads(run_cli("ledger", "show", "--ledger", str(audited), "--json").stdout)[-1]["seq"]
    printed = run_cli("receipt", str(seq), "--ledger", str(audited))
    assert printed.returncode == 0, printed.stderr
    data = json.loads(printed.stdout)
    assert data["disposition"] == "quarantined" and data["reason_codes"] == ["task_audit_overdue"]
    assert data["task_audit"] == "overdue" and data["run"]["resolved"] == "resolved"
    assert data["digests"]["task"].startswith("sha256:") and data["evidence"] == f"private: ledger entry {seq}"
    missing = run_cli("receipt", "999", "--ledger", str(audited))
    assert missing.returncode == 2 and "no graded run at score entry 999" in missing.stderr


@pytest.mark.slow
def test_audit_run_records_a_failed_audit_and_grading_that_task_is_invalid(tmp_path):
    audit_fixtures = FIXTURES / "audit"
    instance, repo = audit_fixtures / "instances" / "passing_base.json", audit_fixtures / "repos" / "textkit"
    ledger = tmp_path / "ledger.sqlite"
    ran = run_cli("audit", "run", "--instance", str(instance), "--repo", str(repo), "--repeats", "1", "--every", "7",
                  "--ledger", str(ledger), "--json")  # fmt: skip
    assert ran.returncode == 1, ran.stderr  # an invalid task
    [audit] = json.loads(ran.stdout)["audits"]
    assert audit["disposition"] == "invalid" and "empty_patch_resolves" in [f["kind"] for f in audit["findings"]]
    assert audit["next_due"] - audit["ran_at"] == 7 * DAY and audit["schedule_from"] == "option"
    listed = json.loads(run_cli("audit", "due", "--ledger", str(ledger), "--json").stdout)
    assert [t["state"] for t in listed["tasks"]] == ["invalid"]
    empty = tmp_path / "empty.diff"
    empty.write_text("")
    graded = run_cli("grade", "--repo", str(repo), "--instance", str(instance), "--patch", str(empty), "--ledger", str(ledger),
                     "--json")  # fmt: skip
    envelope = json.loads(graded.stdout)
    assert envelope["integrity"]["disposition"] == "invalid" and envelope["integrity"]["reasons"] == ["task_audit_invalid"]
    assert envelope["audit"]["state"] == "invalid"


def test_audit_run_targets_one_instance_a_dataset_or_a_benchmark_set(tmp_path):
    import argparse

    from pytest_objective_scoring.commands.audit import _targets
    from pytest_objective_scoring.errors import CommandError

    ledger = tmp_path / "l.sqlite"
    made = run_cli("sets", "create", "reg", "--role", "regression", "--dataset", str(DATASET), "--instance-id",
                   "fixtures__intervals-1", "--source", "static:fixtures", "--ledger", str(ledger))  # fmt: skip
    assert made.returncode == 0, made.stderr

    def args(**kw: object) -> argparse.Namespace:
        base = {"instance": None, "repo": None, "dataset": None, "repos": None, "instance_id": None, "set": None,
                "ledger": str(ledger)}  # fmt: skip
        return argparse.Namespace(**{**base, **kw})

    whole = _targets(args(dataset=str(DATASET), repos=str(FIXTURES / "repos")))
    assert sorted(i.instance_id for i, _ in whole) == ["fixtures__csvlite-1", "fixtures__intervals-1", "fixtures__textstats-1"]
    [(instance, repo)] = _targets(args(dataset=str(DATASET), repos=str(FIXTURES / "repos"), set="reg"))
    assert instance.instance_id == "fixtures__intervals-1" and repo == FIXTURES / "repos" / "intervals"
    one = _targets(args(instance=str(FIXTURES / "instances" / "csvlite.json"), repo=str(FIXTURES / "repos" / "csvlite")))
    assert [i.instance_id for i, _ in one] == ["fixtures__csvlite-1"]
    for bad, message in ((args(), "give --instance FILE --repo DIR"), (args(set="reg"), "--set NAME needs --dataset"),
                         (args(dataset=str(DATASET)), "--dataset needs --repos DIR")):  # fmt: skip
        with pytest.raises(CommandError, match=message):
            _targets(bad)
