"""grade-batch and costs end to end: real gradings on the fixture repos, a real ledger,
a real Dask LocalCluster with two worker processes, real interruptions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from pytest_objective_scoring import batch
from pytest_objective_scoring.instances import load_instances
from pytest_objective_scoring.ledger import Ledger, verify

from .conftest import FIXTURES
from .runner_helpers import run_cli

pytestmark = pytest.mark.slow

DATASET = FIXTURES / "datasets" / "fixtures.jsonl"
PREDICTIONS = FIXTURES / "predictions" / "fixtures.jsonl"
REPOS = FIXTURES / "repos"
EXPECTED = {
    "cheap-fix": "resolved",
    "pricey-fix": "resolved",
    "breaks-things": "not_resolved",
    "does-nothing": "not_resolved",
    "tamperer": "not_resolved",
    "bad-diffs": "patch_did_not_apply",
}


def predictions(tmp_path: Path, models: set[str], name: str = "preds.jsonl") -> Path:
    rows = [line for line in PREDICTIONS.read_text().splitlines() if json.loads(line)["model_name_or_path"] in models]
    path = tmp_path / name
    path.write_text("\n".join(rows) + "\n")
    return path


def batch_cli(*args: str, ledger: Path, preds: Path = PREDICTIONS, dataset: Path = DATASET) -> subprocess.CompletedProcess[str]:
    return run_cli("grade-batch", "--dataset", str(dataset), "--predictions", str(preds), "--repos", str(REPOS),
                   "--ledger", str(ledger), "--timeout", "120", *args)  # fmt: skip


def comparable(row: dict[str, Any]) -> tuple[Any, ...]:
    score = dict(row["score"] or {})
    score.pop("graded_at", None)
    return (row["instance_id"], row["model_name_or_path"], row["failure_class"], json.dumps(score, sort_keys=True))


def score_entries(ledger: Path) -> list[dict[str, Any]]:
    with Ledger(ledger) as opened:
        return [e.data for e in opened.entries("score")]


# ---------------------------------------------------------------- the whole batch, and costs


def test_grade_batch_grades_every_prediction_records_it_and_costs_ranks_the_harnesses(tmp_path):
    ledger, report = tmp_path / "ledger.sqlite", tmp_path / "out" / "report.json"
    result = batch_cli("--workers", "2", "--report", str(report), ledger=ledger)
    assert result.returncode == 0, result.stderr
    assert "grade-batch: predictions per model" in result.stdout and "[18/18]" in result.stderr
    data = json.loads(report.read_text())
    assert len(data["results"]) == 18
    for row in data["results"]:
        assert row["failure_class"] == EXPECTED[row["model_name_or_path"]], row
        assert set(row) >= {"instance_id", "model_name_or_path", "score", "failure_class"}
        assert row["score"]["instance_id"] == row["instance_id"] and row["resumed"] is False
    assert data["summary"]["cheap-fix"] == {"predictions": 3, "resolved": 3, "not_resolved": 0, "patch_did_not_apply": 0,
                                            "infrastructure_failure": 0, "resumed": 0}  # fmt: skip
    # the ledger holds every result with its cost, chained
    scores = score_entries(ledger)
    assert len(scores) == 18 and len({s["job_key"] for s in scores}) == 18
    assert {s["harness"] for s in scores} == set(EXPECTED)
    assert verify(ledger).ok
    with Ledger(ledger) as opened:
        costs = {e.data["score_seq"]: e.data for e in opened.entries("cost")}
        [summary] = [e.data for e in opened.entries("batch")]
    assert summary["graded"] == 18 and summary["resumed"] == 0
    with Ledger(ledger) as opened:
        cards = {e.data["score_seq"]: e.data for e in opened.entries("scorecard")}
    assert len(cards) == 18, "every graded prediction has its scorecard"
    recall = {c["harness"]: c["scorecard"]["component_metrics"]["localization"]["file_recall"] for c in cards.values()}
    assert recall["cheap-fix"] == 1.0 and recall["tamperer"] == 0.0
    tamperer = next(c for c in costs.values() if c["harness"] == "tamperer")
    assert tamperer["cost"]["tokens"] == 10000 and tamperer["cost"]["calls"] == 6  # SWE-agent's model_stats
    assert tamperer["breakdown"]["model_dollars"] == 0.25 and tamperer["cost"]["cpu"] > 0
    # costs: equal resolve rates at a 10x cost are ranked apart, the cheaper on the front
    shown = run_cli("costs", "--ledger", str(ledger), "--json")
    assert shown.returncode == 0, shown.stderr
    [benchmark] = json.loads(shown.stdout)["benchmarks"]
    assert benchmark["benchmark"] == "fixtures"  # the dataset file's name
    ranked = {h["harness"]: h for h in benchmark["harnesses"]}
    assert ranked["cheap-fix"]["rank"] == 1 and ranked["cheap-fix"]["on_pareto_front"]
    assert ranked["pricey-fix"]["rank"] > 1 and ranked["pricey-fix"]["dominated_by"] == ["cheap-fix"]
    assert ranked["cheap-fix"]["resolve_rate"] == ranked["pricey-fix"]["resolve_rate"] == 1.0
    assert ranked["pricey-fix"]["ratios"]["resolves_per_dollar"] < ranked["cheap-fix"]["ratios"]["resolves_per_dollar"] / 9
    assert ranked["cheap-fix"]["ratios"]["resolves_per_1k_tokens"] == pytest.approx(3 / 36)
    assert ranked["cheap-fix"]["ratios"]["resolves_per_wall_hour"] > 0 and ranked["cheap-fix"]["ratios"]["resolves_per_cpu_second"] > 0
    table = run_cli("costs", "--ledger", str(ledger))
    assert "pricey-fix: dominated by cheap-fix" in table.stdout and "res/$" in table.stdout
    only = run_cli("costs", "--ledger", str(ledger), "--harness", "nobody")
    assert only.returncode == 2 and "no graded run of that harness" in only.stderr and "cheap-fix" in only.stderr
    # a second run grades nothing: every prediction is read back from the ledger
    again = batch_cli("--json", ledger=ledger)
    assert again.returncode == 0, again.stderr
    rerun = json.loads(again.stdout)
    assert all(row["resumed"] for row in rerun["results"]) and len(score_entries(ledger)) == 18
    assert sorted(map(comparable, rerun["results"])) == sorted(map(comparable, data["results"]))


def test_gold_predictions_and_swe_agent_preds_json(tmp_path):
    instances = {i.instance_id for i in load_instances(DATASET)}
    preds = tmp_path / "preds.json"  # SWE-agent's shape: an object keyed by instance id; gold = the dataset's patch
    preds.write_text(json.dumps({iid: {"model_name_or_path": "gold", "retrieval": ["README.md", "tests"]}
                                 for iid in sorted(instances)}))  # fmt: skip
    ledger = tmp_path / "l.sqlite"
    result = batch_cli("--json", "--workers", "2", "--reruns", "1", ledger=ledger, preds=preds)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["results"]
    assert {r["instance_id"] for r in rows} == instances and {r["failure_class"] for r in rows} == {"resolved"}
    with Ledger(ledger) as opened:
        cards = [e.data["scorecard"] for e in opened.entries("scorecard")]
    assert [c["end_to_end"]["robustness"] for c in cards] == [1.0, 1.0, 1.0]  # --reruns 1, each still resolved
    assert [c["component_metrics"]["localization"]["target_rank"] for c in cards] == [3, 3, 3]  # no gold file: past the end


# ---------------------------------------------------------------- resuming


def test_a_killed_batch_resumes_without_regrading_and_loses_nothing(tmp_path):
    ledger = tmp_path / "ledger.sqlite"
    preds = predictions(tmp_path, {"cheap-fix", "breaks-things", "bad-diffs"})
    command = [sys.executable, "-m", "pytest_objective_scoring", "grade-batch", "--dataset", str(DATASET),
               "--predictions", str(preds), "--repos", str(REPOS), "--ledger", str(ledger), "--workers", "1"]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not ledger.exists() or len(score_entries(ledger)) < 3):
        time.sleep(0.1)
    proc.kill()  # SIGKILL: no cleanup, no goodbye
    proc.wait()
    before = score_entries(ledger)
    assert 3 <= len(before) < 9, "the batch was killed part-way"
    assert verify(ledger).ok
    resumed = batch_cli("--json", ledger=ledger, preds=preds)
    assert resumed.returncode == 0, resumed.stderr
    rows = json.loads(resumed.stdout)["results"]
    assert sum(r["resumed"] for r in rows) == len(before) and len(rows) == 9
    assert f"resuming: {len(before)} of 9" in resumed.stderr
    after = score_entries(ledger)
    assert len(after) == 9 and len({s["job_key"] for s in after}) == 9, "nothing graded twice, nothing lost"
    assert after[: len(before)] == before and verify(ledger).ok
    assert all(r["failure_class"] == EXPECTED[r["model_name_or_path"]] for r in rows)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_batch_says_how_to_resume_and_records_no_half_run(tmp_path, signum):
    ledger = tmp_path / "ledger.sqlite"
    preds = predictions(tmp_path, {"cheap-fix", "breaks-things"})
    command = [sys.executable, "-m", "pytest_objective_scoring", "grade-batch", "--dataset", str(DATASET),
               "--predictions", str(preds), "--repos", str(REPOS), "--ledger", str(ledger)]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not ledger.exists() or len(score_entries(ledger)) < 1):
        time.sleep(0.05)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "run the same command again to resume" in err
    recorded = score_entries(ledger)
    assert 1 <= len(recorded) < 6
    assert all(s["failure_class"] in ("none", "solver") for s in recorded), "an interrupted grading is never recorded"
    assert verify(ledger).ok


def test_infrastructure_failures_exit_3_and_retry_infra_grades_them_again(tmp_path):
    rows = [json.loads(line) for line in DATASET.read_text().splitlines()]
    rows[0]["FAIL_TO_PASS"] = ["tests/test_words.rs::counts"]  # not a pytest node id: the instance is at fault
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    preds = predictions(tmp_path, {"cheap-fix"})
    ledger = tmp_path / "l.sqlite"
    first = batch_cli("--json", ledger=ledger, preds=preds, dataset=dataset)
    assert first.returncode == 3, first.stderr
    bad = [r for r in json.loads(first.stdout)["results"] if r["failure_class"] == "infrastructure_failure"]
    assert [r["instance_id"] for r in bad] == [rows[0]["instance_id"]] and "not a pytest node id" in bad[0]["failure_detail"]
    assert bad[0]["score"] is None
    again = batch_cli("--json", ledger=ledger, preds=preds, dataset=dataset)
    assert again.returncode == 3 and len(score_entries(ledger)) == 3  # resumed, infra failure included
    retried = batch_cli("--json", "--retry-infra", ledger=ledger, preds=preds, dataset=dataset)
    assert retried.returncode == 3 and len(score_entries(ledger)) == 4  # only the infrastructure failure re-ran
    costs = json.loads(run_cli("costs", "--ledger", str(ledger), "--json").stdout)["benchmarks"][0]["harnesses"]
    assert costs[0]["runs"] == 2 and costs[0]["infrastructure_failures_excluded"] == 1 and costs[0]["resolve_rate"] == 1.0


# ---------------------------------------------------------------- on a Dask cluster


@pytest.fixture
def dask_scheduler(tmp_path: Path) -> Iterator[str]:
    """A LocalCluster with two worker processes, in its own process; yields its address."""
    pytest.importorskip("distributed", reason="dask.distributed is a test dependency: pip install -e '.[test]'")
    script = (
        "import sys\n"
        "from distributed import LocalCluster\n"
        "if __name__ == '__main__':\n"
        "    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)\n"
        "    print(cluster.scheduler_address, len(cluster.workers), flush=True)\n"
        "    sys.stdin.read()\n"
        "    cluster.close()\n"
    )
    (tmp_path / "cluster.py").write_text(script)
    proc = subprocess.Popen([sys.executable, str(tmp_path / "cluster.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=tmp_path)  # fmt: skip
    try:
        address, workers = proc.stdout.readline().split()  # type: ignore[union-attr]
        assert workers == "2"
        yield address
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]


def test_the_cluster_gives_the_same_verdicts_as_the_local_run_and_only_the_client_writes(tmp_path, dask_scheduler):
    preds = predictions(tmp_path, {"cheap-fix", "breaks-things", "bad-diffs"})
    local = batch_cli("--json", ledger=tmp_path / "local.sqlite", preds=preds)
    remote = batch_cli("--json", "--scheduler", dask_scheduler, ledger=tmp_path / "cluster.sqlite", preds=preds)
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    local_rows, remote_rows = json.loads(local.stdout)["results"], json.loads(remote.stdout)["results"]
    assert [comparable(r) for r in remote_rows] == [comparable(r) for r in local_rows]
    assert [r["job_key"] for r in remote_rows] == [r["job_key"] for r in local_rows]
    assert len(score_entries(tmp_path / "cluster.sqlite")) == 9 and verify(tmp_path / "cluster.sqlite").ok
    with Ledger(tmp_path / "cluster.sqlite") as opened:
        [summary] = [e.data for e in opened.entries("batch")]
    assert summary["scheduler"] == dask_scheduler


def test_a_job_sent_to_a_worker_carries_no_ledger():
    [instance] = [i for i in load_instances(DATASET)][:1]
    prediction = batch.Prediction(instance.instance_id, "m", "", batch.HarnessCost(), "<test>")
    settings = {"python": sys.executable, "timeout": 60.0, "compat": "strict", "compute_rate": 0.0}
    [job] = batch.plan_jobs([instance], [prediction], REPOS, settings)
    payload = job.payload(settings)
    assert not any("ledger" in key for key in payload) and json.loads(json.dumps(payload)) == payload


def test_an_unreachable_scheduler_is_a_clear_error(tmp_path):
    preds = predictions(tmp_path, {"cheap-fix"})
    env = {**os.environ, "OBJECTIVE_SCORE_CONNECT_TIMEOUT": "2"}
    result = run_cli("grade-batch", "--dataset", str(DATASET), "--predictions", str(preds), "--repos", str(REPOS),
                     "--ledger", str(tmp_path / "l.sqlite"), "--scheduler", "tcp://127.0.0.1:9", env=env)  # fmt: skip
    assert result.returncode == 2 and "cannot reach a Dask scheduler" in result.stderr


# ---------------------------------------------------------------- bad input, refused before any grading


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", "the file is empty"),
        ('{"instance_id": "x", "model_name_or_path": "m", "model_patch": ""}\n{oops\n', "preds.jsonl:2: invalid JSON"),
        ('{"instance_id": "fixtures__textstats-1", "model_patch": ""}\n', "field 'model_name_or_path': expected a non-empty string"),
        ('{"instance_id": "fixtures__textstats-1", "model_name_or_path": "m", "model_patch": 3}\n', "field 'model_patch': expected a string"),
        ('{"instance_id": "fixtures__textstats-1", "model_name_or_path": "m"}\n', "field 'model_patch' is missing"),
        ('{"instance_id": "fixtures__textstats-1", "model_name_or_path": "m", "model_patch": "", "tokens": -5}\n',
         "field 'tokens': expected a whole number"),
        ('{"instance_id": "fixtures__textstats-1", "model_name_or_path": "m", "model_patch": "", "plan": "fix it"}\n',
         "field 'plan': expected a JSON list of non-empty strings"),
        ('{"instance_id": "fixtures__textstats-1", "model_name_or_path": "m", "model_patch": ""}\n' * 2,
         "a second prediction of 'm' for 'fixtures__textstats-1' (first at"),
        ('{"instance_id": "fixtures__textstats-2", "model_name_or_path": "m", "model_patch": ""}\n',
         "instance 'fixtures__textstats-2' is not in the dataset (did you mean fixtures__textstats-1"),
    ],
)  # fmt: skip
def test_bad_predictions_are_refused_naming_the_file_row_and_field(tmp_path, content, expected):
    preds = tmp_path / "preds.jsonl"
    preds.write_text(content)
    ledger = tmp_path / "l.sqlite"
    result = batch_cli(ledger=ledger, preds=preds)
    assert result.returncode == 2 and expected in result.stderr, result.stderr
    assert not ledger.exists() or not score_entries(ledger)


def test_a_repository_that_is_not_checked_out_is_named_with_where_it_was_looked_for(tmp_path):
    rows = [json.loads(line) for line in DATASET.read_text().splitlines()]
    rows[1]["repo"] = "acme/missing"
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = batch_cli(ledger=tmp_path / "l.sqlite", preds=predictions(tmp_path, {"cheap-fix"}), dataset=dataset)
    assert result.returncode == 2
    assert "field 'repo': 'acme/missing' is not checked out" in result.stderr
    assert str(REPOS / "acme" / "missing") in result.stderr and str(REPOS / "acme__missing") in result.stderr


def test_workers_must_be_positive(tmp_path):
    result = batch_cli("--workers", "0", ledger=tmp_path / "l.sqlite", preds=predictions(tmp_path, {"cheap-fix"}))
    assert result.returncode == 2 and "--workers 0: expected at least 1" in result.stderr


def test_owner_slash_name_layout_is_found_first(tmp_path):
    repos = tmp_path / "repos"
    (repos / "fixtures").mkdir(parents=True)
    (repos / "fixtures" / "textstats").symlink_to(REPOS / "textstats")
    (repos / "textstats").mkdir()  # a decoy at DIR/name: DIR/owner/name wins
    [instance] = [i for i in load_instances(DATASET) if i.instance_id == "fixtures__textstats-1"]
    found, tried = batch.repo_dir(repos, instance)
    assert found == repos / "fixtures" / "textstats" and tried[0] == found


def slow_task(tmp_path: Path, seconds: int) -> tuple[Path, Path, Path]:
    """A one-test project whose test sleeps, its dataset and an empty-patch prediction."""
    repos = tmp_path / "repos"
    project = repos / "acme" / "sleepy"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_slow.py").write_text(f"import time\n\ndef test_slow():\n    time.sleep({seconds})\n")
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(json.dumps({"instance_id": "acme__sleepy-1", "repo": "acme/sleepy", "patch": "",
                                   "FAIL_TO_PASS": ["tests/test_slow.py::test_slow"], "PASS_TO_PASS": []}) + "\n")  # fmt: skip
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"instance_id": "acme__sleepy-1", "model_name_or_path": "m", "model_patch": ""}) + "\n")
    return repos, dataset, preds


def test_an_interrupt_stops_the_running_grading_at_once(tmp_path):
    repos, dataset, preds = slow_task(tmp_path, 60)
    ledger = tmp_path / "l.sqlite"
    command = [sys.executable, "-m", "pytest_objective_scoring", "grade-batch", "--dataset", str(dataset),
               "--predictions", str(preds), "--repos", str(repos), "--ledger", str(ledger)]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)  # the test run is under way
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    stopped = time.monotonic() - started
    assert proc.returncode == 130, err
    assert stopped < 10, f"the batch took {stopped:.1f} s to stop: a control run or the sleeping test ran on"
    assert score_entries(ledger) == []


def test_a_single_gold_prediction_object_in_a_json_file(tmp_path):
    preds = tmp_path / "one.json"
    preds.write_text(json.dumps({"instance_id": "fixtures__csvlite-1", "model_name_or_path": "gold"}))
    [prediction] = batch.load_predictions(preds)
    assert (prediction.instance_id, prediction.model, prediction.patch) == ("fixtures__csvlite-1", "gold", None)


def test_the_job_key_follows_the_checkout_and_the_network_setting(tmp_path):
    import shutil

    repos = tmp_path / "repos"
    shutil.copytree(REPOS / "textstats", repos / "textstats")
    [instance] = [i for i in load_instances(DATASET) if i.instance_id == "fixtures__textstats-1"]
    prediction = batch.Prediction(instance.instance_id, "m", "", batch.HarnessCost(), "<test>")
    settings = {"python": sys.executable, "timeout": 60.0, "compat": "strict", "compute_rate": 0.0, "network": False}

    def key(**changes: Any) -> str:
        [job] = batch.plan_jobs([instance], [prediction], repos, {**settings, **changes})
        return job.key

    first = key()
    assert key() == first and key(timeout=5.0, compute_rate=1.0) == first
    assert key(network=True) != first and key(compat="swebench") != first
    source = repos / "textstats" / "textstats" / "words.py"
    source.write_text(source.read_text() + "\n# edited\n")
    assert key() != first, "a changed checkout is a new job: its old verdicts are not reused"
