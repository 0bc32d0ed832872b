"""Native metric spaces: SWE-bench's run report beside ours, results recorded with their benchmark and
metric space, no ranking or averaging across benchmarks, judge-based scores kept apart."""

from __future__ import annotations

import json

import pytest

from pytest_objective_scoring.ledger import Ledger

from .conftest import FIXTURES
from .runner_helpers import run_cli_here as run_cli

DATASET = FIXTURES / "datasets" / "fixtures.jsonl"
PREDICTIONS = FIXTURES / "predictions" / "fixtures.jsonl"


@pytest.mark.slow
def test_grade_batch_writes_swebench_run_reports_beside_ours_and_records_the_benchmark(tmp_path):
    rows = [json.loads(line) for line in PREDICTIONS.read_text().splitlines()]
    rows = [r for r in rows if r["model_name_or_path"] in ("cheap-fix", "does-nothing", "bad-diffs")]
    rows = [r for r in rows if not (r["model_name_or_path"] == "bad-diffs" and r["instance_id"] == "fixtures__csvlite-1")]
    for row in rows:
        if row["model_name_or_path"] == "does-nothing":
            row["model_patch"] = ""  # SWE-bench's empty patch
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ledger = tmp_path / "l.sqlite"
    (tmp_path / "out").mkdir()  # a report's folder is never created silently
    result = run_cli("grade-batch", "--dataset", str(DATASET), "--predictions", str(preds), "--repos", str(FIXTURES / "repos"),
                     "--ledger", str(ledger), "--report", str(tmp_path / "out" / "ours.json"), "--run-id", "run7",
                     "--workers", "2", "--benchmark", "fixtures-lite", "--log-dir", str(tmp_path / "logs"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    ids = sorted(json.loads(line)["instance_id"] for line in DATASET.read_text().splitlines())
    cheap = json.loads((tmp_path / "out" / "cheap-fix.run7.json").read_text())
    assert cheap["resolved_ids"] == ids and cheap["resolved_instances"] == 3 and cheap["schema_version"] == 2
    assert cheap["total_instances"] == 3 and cheap["error_ids"] == [] and cheap["metric_space"] == "binary_resolved"
    empty = json.loads((tmp_path / "out" / "does-nothing.run7.json").read_text())
    assert empty["empty_patch_ids"] == ids and empty["completed_ids"] == []
    bad = json.loads((tmp_path / "out" / "bad-diffs.run7.json").read_text())
    assert bad["error_ids"] == ids[1:] and bad["infrastructure_failure_ids"] == [] and bad["unresolved_ids"] == []
    assert bad["incomplete_ids"] == ["fixtures__csvlite-1"] and bad["total_instances"] == 3  # submitted nothing for it
    assert cheap["incomplete_ids"] == []
    ours = json.loads((tmp_path / "out" / "ours.json").read_text())
    assert len(ours["results"]) == 8
    with Ledger(ledger) as opened:
        scores = [e.data for e in opened.entries("score")]
    assert {s["benchmark"] for s in scores} == {"fixtures-lite"} and {s["metric_space"] for s in scores} == {"binary_resolved"}


def _score(benchmark: str, harness: str, instance: str, resolved: bool, seq_cost: float) -> list:
    score = {"source": "runner", "benchmark": benchmark, "metric_space": "binary_resolved", "instance_id": instance,
             "harness": harness, "patch_ref": f"p-{harness}-{instance}", "failure_class": "none" if resolved else "solver",
             "score": {"resolved": "resolved" if resolved else "not_resolved"}}  # fmt: skip
    cost = {"cost": {"tokens": 10, "calls": 1, "cpu": 1.0, "wall_time": 1.0, "dollars": seq_cost},
            "breakdown": {"model_dollars": seq_cost}}  # fmt: skip
    return [("score", lambda _: score), ("cost", lambda w: {"score_seq": w[0].seq, "harness": harness, **cost})]


def test_costs_rank_within_each_benchmark_never_across(tmp_path):
    ledger = tmp_path / "l.sqlite"
    with Ledger(ledger) as opened:
        for items in (_score("lite", "a", "t1", True, 1.0), _score("lite", "b", "t1", False, 0.5),
                      _score("live", "a", "t9", False, 1.0), _score("live", "b", "t9", True, 2.0)):  # fmt: skip
            opened.append_linked(items)
        other = {"source": "harbor", "benchmark": "lhtb", "metric_space": "continuous_reward", "instance_id": "x",
                 "harness": "a", "patch_ref": "p", "failure_class": "none", "score": {"resolved": "resolved"}}  # fmt: skip
        opened.append_linked([("score", lambda _: other), ("cost", lambda w: {"score_seq": w[0].seq, "cost": {"dollars": 1.0}})])
    data = json.loads(run_cli("costs", "--ledger", str(ledger), "--json").stdout)
    assert data["ranking"] == "within each benchmark; never across benchmarks or metric spaces"
    ranked = {b["benchmark"]: [(h["harness"], h["rank"]) for h in b["harnesses"]] for b in data["benchmarks"]}
    assert ranked == {"lite": [("a", 1), ("b", 2)], "live": [("b", 1), ("a", 2)]}  # lhtb's reward never enters
    with Ledger(ledger) as opened:
        for items in (_score(None, "a", "t5", True, 1.0), _score(None, "b", "t6", True, 1.0)):  # type: ignore[arg-type]
            opened.append_linked(items)
    data = json.loads(run_cli("costs", "--ledger", str(ledger), "--json").stdout)
    unknown = next(b for b in data["benchmarks"] if b["benchmark"] == "unknown")
    assert [h["rank"] for h in unknown["harnesses"]] == [0, 0]  # unlabelled runs may mix benchmarks: never ranked
    assert "not ranked" in unknown["harnesses"][0]["notes"][-1]
    table = run_cli("costs", "--ledger", str(ledger))
    assert "3 benchmarks: each is ranked on its own" in table.stdout


@pytest.mark.slow
def test_a_scorecard_diff_refuses_to_mix_benchmarks(tmp_path):
    ledger = str(tmp_path / "l.sqlite")
    for benchmark in ("lite", "live"):
        graded = run_cli("grade", "--repo", str(FIXTURES / "repos" / "intervals"), "--instance",
                         str(FIXTURES / "instances" / "intervals.json"), "--patch",
                         str(FIXTURES / "patches" / "intervals" / "gold.diff"), "--ledger", ledger, "--benchmark", benchmark)  # fmt: skip
        assert graded.returncode == 0, graded.stderr
    seqs = [row["seq"] for row in json.loads(run_cli("ledger", "show", "--ledger", ledger, "--json").stdout)]
    mixed = run_cli("scorecard", "diff", str(seqs[0]), str(seqs[1]), "--ledger", ledger)
    assert mixed.returncode == 2 and "belong to benchmarks lite, live" in mixed.stderr and "never averaged" in mixed.stderr
    graded = run_cli("grade", "--repo", str(FIXTURES / "repos" / "intervals"), "--instance",
                     str(FIXTURES / "instances" / "intervals.json"), "--patch",
                     str(FIXTURES / "patches" / "intervals" / "gold.diff"), "--ledger", ledger)  # fmt: skip
    unlabelled = json.loads(run_cli("ledger", "show", "--ledger", ledger, "--json").stdout)[-1]["seq"]
    mixed = run_cli("scorecard", "diff", str(seqs[0]), str(unlabelled), "--ledger", ledger)
    assert mixed.returncode == 2 and "(unlabelled)" in mixed.stderr


def test_judge_based_scores_are_imported_labelled_and_never_read_as_evidence(tmp_path):
    rows = tmp_path / "judged.jsonl"
    rows.write_text('{"task_id": "startup-1", "harness": "a", "score": 7.5, "rubric": "v2"}\n'
                    '{"task_id": "startup-2", "harness": "a", "score": 4}\n')  # fmt: skip
    ledger = tmp_path / "l.sqlite"
    imported = run_cli("import-judged", str(rows), "--benchmark", "startupbench", "--judge", "rubric-judge-x",
                       "--ledger", str(ledger))  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    assert "never admissible as objective evidence" in imported.stdout
    with Ledger(ledger) as opened:
        entries = [e.data for e in opened.entries("judged_score")]
        assert list(opened.entries("score")) == []
    assert all(e["judge_based"] and e["admissible"] is False and e["metric_space"] == "judge_rubric" for e in entries)
    assert entries[0]["extra"] == {"rubric": "v2"}
    costs = json.loads(run_cli("costs", "--ledger", str(ledger), "--json").stdout)
    assert costs["runs"] == 0 and costs["benchmarks"] == []
    rows.write_text('{"task_id": "x", "harness": "a", "score": "great"}\n')
    bad = run_cli("import-judged", str(rows), "--benchmark", "b", "--judge", "j", "--ledger", str(ledger))
    assert bad.returncode == 2 and "field 'score': expected a number" in bad.stderr
