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
from .runner_helpers import make_patch
from .runner_helpers import run_cli as run_cli_process
from .runner_helpers import run_cli_here as run_cli

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
    logs = () if "--log-dir" in args else ("--log-dir", str(ledger.parent / "logs"))  # never the current folder's logs/
    return run_cli("grade-batch", "--dataset", str(dataset), "--predictions", str(preds), "--repos", str(REPOS),
                   "--ledger", str(ledger), "--timeout", "120", *logs, *args)  # fmt: skip


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
    report.parent.mkdir()  # a report's folder is never created silently
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
               "--predictions", str(preds), "--repos", str(REPOS), "--ledger", str(ledger), "--workers", "1",
               "--log-dir", str(tmp_path / "logs")]  # fmt: skip
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
    # a last prediction whose tests hang: the batch is still running whenever the signal comes (six
    # quick gradings alone could all finish between two looks at the ledger on a loaded machine)
    source = (REPOS / "intervals" / "src" / "intervals" / "interval.py").read_text()
    hang = make_patch(REPOS / "intervals", {"src/intervals/interval.py": source + "\nimport time\ntime.sleep(600)\n"}, tmp_path)
    with preds.open("a") as rows:
        rows.write(json.dumps({"instance_id": "fixtures__intervals-1", "model_name_or_path": "hangs", "model_patch": hang}) + "\n")
    # SIGINT at its default in the command, as under a terminal: a suite started in the background of a
    # script (CI) passes SIGINT down ignored (POSIX), and Python then keeps ignoring it
    default_sigint = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                      "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")  # fmt: skip
    command = [sys.executable, "-c", default_sigint, "-m", "pytest_objective_scoring", "grade-batch", "--dataset",
               str(DATASET), "--predictions", str(preds), "--repos", str(REPOS), "--ledger", str(ledger), "--log-dir",
               str(tmp_path / "logs")]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (not ledger.exists() or len(score_entries(ledger)) < 1):
            time.sleep(0.05)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:  # never left running into later tests
            proc.kill()
            proc.communicate()
    assert proc.returncode == (143 if signum == signal.SIGTERM else 130), err  # as a shell reports each
    assert "interrupted" in err and "run the same command again to resume" in err
    recorded = score_entries(ledger)
    assert 1 <= len(recorded) < 7
    assert all(s["failure_class"] in ("none", "solver") for s in recorded), "an interrupted grading is never recorded"
    assert "hangs" not in {s.get("model_name_or_path") for s in recorded}
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
    result = run_cli_process("grade-batch", "--dataset", str(DATASET), "--predictions", str(preds), "--repos", str(REPOS),
                             "--ledger", str(tmp_path / "l.sqlite"), "--scheduler", "tcp://127.0.0.1:9", "--log-dir", str(tmp_path / "logs"),
                             env=env)  # fmt: skip
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
    assert result.returncode == 2 and "'0': the number of workers must be from 1 to 1024" in result.stderr


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


def _claimed(ledger: Path) -> bool:
    from .test_batch_faults import entries

    return any(kind == "claim" for kind, _ in entries(ledger))


def test_an_interrupt_stops_the_running_grading_at_once(tmp_path):
    repos, dataset, preds = slow_task(tmp_path, 60)
    ledger = tmp_path / "l.sqlite"
    command = [sys.executable, "-m", "pytest_objective_scoring", "grade-batch", "--dataset", str(dataset),
               "--predictions", str(preds), "--repos", str(repos), "--ledger", str(ledger), "--log-dir", str(tmp_path / "logs")]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60  # the test run is under way once its job is claimed, plus a moment
    while time.monotonic() < deadline and proc.poll() is None and not _claimed(ledger):
        time.sleep(0.1)
    time.sleep(1.5)
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    stopped = time.monotonic() - started
    assert proc.returncode == 143, err
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


# ---------------------------------------------------------------- per-instance environments (--environments)


def second_venv(path: Path) -> Path:
    """Another interpreter with pytest: a virtualenv of its own that reads this environment's
    site-packages through a .pth (not the base Python's: whatever plugins the machine's Python has,
    hypothesis's among them, would make every grading there slower and set off control runs)."""
    import sysconfig

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    Path(purelib, "objective_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    assert subprocess.run([str(python), "-c", "import pytest"], capture_output=True).returncode == 0
    return python


@pytest.fixture(scope="module")
def other_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return second_venv(tmp_path_factory.mktemp("venvs") / "other")


def write_environments(tmp_path: Path, data: Any, name: str = "envs.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_a_mixed_batch_grades_each_instance_with_its_own_interpreter_as_grade_does(tmp_path, other_python):
    here = str(Path(sys.executable).absolute())
    # the exact id wins over the same instance's repo@version, repo@version over --python
    envs = write_environments(tmp_path, {"fixtures__textstats-1": str(other_python),
                                         "fixtures/textstats@1.0": here,
                                         "fixtures/intervals@1.0": {"python": here}})  # fmt: skip
    preds = predictions(tmp_path, {"cheap-fix", "breaks-things"})
    ledger = tmp_path / "l.sqlite"
    result = batch_cli("--json", "--workers", "2", "--environments", str(envs), "--python", here, "--run-id", "mixed",
                       ledger=ledger, preds=preds)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    expected_python = {"fixtures__textstats-1": str(other_python), "fixtures__intervals-1": here, "fixtures__csvlite-1": here}
    expected_from = {"fixtures__textstats-1": f"{envs} ['fixtures__textstats-1']",
                     "fixtures__intervals-1": f"{envs} ['fixtures/intervals@1.0']", "fixtures__csvlite-1": "--python"}  # fmt: skip
    for row in report["results"]:
        assert row["python"] == expected_python[row["instance_id"]] and row["image"] is None, row
        assert row["environment"] == expected_from[row["instance_id"]]
        assert row["failure_class"] == EXPECTED[row["model_name_or_path"]]
        envelope = json.loads((Path(row["log"]) / "envelope.json").read_text())
        assert envelope["runner"]["python"] == row["python"] and envelope["batch"]["python"] == row["python"]
    # the ledger shows each result's interpreter, and the batch entry every interpreter with its versions
    assert {(s["instance_id"], s["python"]) for s in score_entries(ledger)} == set(expected_python.items())
    with Ledger(ledger) as opened:
        [entry] = [e.data for e in opened.entries("batch")]
    used = {u["python"]: u for u in entry["environments"]["used"]}
    assert set(used) == {here, str(other_python)} and used[str(other_python)]["instances"] == 1
    assert entry["environments"]["file"] == str(envs) and used[here]["pytest_version"]
    assert entry["run_id"] == "mixed" and report["environments"] == entry["environments"]
    # every verdict equals objective-score grade's on that instance with that interpreter
    rows = {(r["instance_id"], r["model_name_or_path"]): r for r in report["results"]}
    instances = {i.instance_id: i for i in load_instances(DATASET)}
    for line in preds.read_text().splitlines():
        pred = json.loads(line)
        patch = tmp_path / "candidate.diff"
        patch.write_bytes(pred["model_patch"].encode("utf-8", "surrogateescape"))
        row = rows[(pred["instance_id"], pred["model_name_or_path"])]
        alone = run_cli("grade", "--repo", str(REPOS / instances[pred["instance_id"]].fields["repo"].split("/")[1]),
                        "--instance", str(DATASET), "--instance-id", pred["instance_id"], "--patch", str(patch),
                        "--python", row["python"], "--timeout", "120", "--no-ledger", "--json")  # fmt: skip
        envelope = json.loads(alone.stdout)
        assert envelope["runner"]["python"] == row["python"]
        assert comparable(row) == comparable(
            {"instance_id": row["instance_id"], "model_name_or_path": row["model_name_or_path"],
             "failure_class": batch.failure_outcome(envelope), "score": envelope["score"]})  # fmt: skip
    # the interpreter is part of the job key: the same predictions with one interpreter for all are new jobs
    again = batch_cli("--json", "--python", here, ledger=ledger, preds=preds)
    rows_again = {r["instance_id"]: r for r in json.loads(again.stdout)["results"]}
    assert not rows_again["fixtures__textstats-1"]["resumed"] and rows_again["fixtures__intervals-1"]["resumed"]


def test_the_job_key_covers_the_interpreter_and_the_image():
    from pytest_objective_scoring.environments import Environment

    [instance] = [i for i in load_instances(DATASET) if i.instance_id == "fixtures__textstats-1"]
    prediction = batch.Prediction(instance.instance_id, "m", "", batch.HarnessCost(), "<test>")
    settings = {"python": sys.executable, "timeout": 60.0, "compat": "strict", "compute_rate": 0.0, "network": False}

    def job(environment: Environment | None) -> batch.Job:
        [planned] = batch.plan_jobs([instance], [prediction], REPOS, settings,
                                    None if environment is None else {instance.instance_id: environment})  # fmt: skip
        return planned

    plain = job(None)
    same = job(Environment(sys.executable, None, "--python"))
    assert same.key == plain.key, "a job graded with --python keeps the key it had before --environments existed"
    assert job(Environment("/envs/other/bin/python", None, "envs.json ['x']")).key != plain.key
    boxed = job(Environment("python3", "localhost/x:1", "envs.json ['x']"))
    assert boxed.key != job(Environment("python3", "localhost/x:2", "envs.json ['x']")).key
    assert boxed.repo is None, "in container mode the image holds the repository"
    payload = boxed.payload(settings)
    assert (payload["python"], payload["image"], payload["repo"]) == ("python3", "localhost/x:1", None)


def test_an_image_is_passed_to_the_runner_as_grade_request_image(monkeypatch):
    """grade_job hands the environment's image to GradeRequest(image=...), with the interpreter inside it."""
    from pytest_objective_scoring import runner
    from pytest_objective_scoring.environments import Environment

    seen = []

    def fake(request: Any) -> Any:
        seen.append(request)
        raise runner.BadInput("stop here")

    monkeypatch.setattr(runner, "grade_candidate", fake)
    [instance] = [i for i in load_instances(DATASET) if i.instance_id == "fixtures__textstats-1"]
    prediction = batch.Prediction(instance.instance_id, "m", "", batch.HarnessCost(), "<test>")
    settings = {"python": sys.executable, "timeout": 60.0, "compat": "strict", "compute_rate": 0.0, "network": False}
    [job] = batch.plan_jobs([instance], [prediction], REPOS, settings,
                            {instance.instance_id: Environment("/opt/env/bin/python", "localhost/x:1", "envs.json ['x']")})  # fmt: skip
    envelope = batch.grade_job(job.payload(settings))
    [request] = seen
    assert (request.image, request.python, request.repo) == ("localhost/x:1", "/opt/env/bin/python", None)
    assert envelope["batch"]["image"] == "localhost/x:1" and envelope["runner"]["failure_class"] == "setup"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{oops", "envs.json: not JSON (line 1, column 2"),
        ("[]", "envs.json: expected an object mapping an instance id or owner/name@version"),
        ({"fixtures/textstats": "python3"}, "envs.json ['fixtures/textstats']: unknown key shape: expected an instance id"),
        ({"fixtures__textstats-1": 3}, "envs.json ['fixtures__textstats-1']: expected an interpreter path (a string) or an object"),
        ({"fixtures__textstats-1": {"pyhton": "x"}}, "envs.json ['fixtures__textstats-1']: unknown field 'pyhton': expected python and/or image"),
        ({"fixtures__textstats-1": "/no/such/python"},
         "envs.json ['fixtures__textstats-1']: python '/no/such/python': no such file (/no/such/python): expected an executable interpreter"),
        ({"fixtures__textstats-1": "no-such-python-here"}, "python 'no-such-python-here': not found on PATH"),
        ({"fixtures/textstats@1.0": "./not-executable"}, "envs.json ['fixtures/textstats@1.0']: python './not-executable': not executable ("),
        ({"fixtures__textstats-1": {"image": "localhost/objective-no-such-image:0"}},
         "envs.json ['fixtures__textstats-1']: field 'image': "),
        ({"fixtures__textstats-1": {"image": "{nope}"}}, "envs.json ['fixtures__textstats-1']: field 'image': only {instance_id} and"),
    ],
)  # fmt: skip
def test_bad_environments_are_refused_in_one_line_before_any_grading(tmp_path, content, expected):
    envs = write_environments(tmp_path, content)
    (tmp_path / "not-executable").write_text("#!/bin/sh\n")
    preds = predictions(tmp_path, {"cheap-fix"})
    ledger = tmp_path / "l.sqlite"
    result = batch_cli("--environments", str(envs), "--python", sys.executable, ledger=ledger, preds=preds)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("objective-score grade-batch: error: ") and expected.replace("envs.json", str(envs)) in line, line
    assert not ledger.exists() and not (tmp_path / "logs").exists(), "refused before anything was graded or written"


def test_an_interpreter_without_pytest_or_an_instance_without_one_is_refused(tmp_path):
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    preds = predictions(tmp_path, {"cheap-fix"})
    ledger = tmp_path / "l.sqlite"
    envs = write_environments(tmp_path, {"fixtures__textstats-1": str(bare / "bin" / "python")})
    no_pytest = batch_cli("--environments", str(envs), "--python", sys.executable, ledger=ledger, preds=preds)
    assert no_pytest.returncode == 2
    [line] = no_pytest.stderr.strip().splitlines()
    assert (f"{envs} ['fixtures__textstats-1']: python {bare / 'bin' / 'python'}: cannot import pytest "
            "(ModuleNotFoundError: No module named 'pytest'): expected an interpreter whose environment has pytest") in line
    # a file and no --python: an instance the file does not name has no interpreter (all named at once)
    uncovered = batch_cli("--environments", str(write_environments(tmp_path, {"fixtures__textstats-1": sys.executable})),
                          ledger=ledger, preds=preds)  # fmt: skip
    assert uncovered.returncode == 2
    lines = uncovered.stderr.strip().splitlines()
    assert lines[0] == "objective-score grade-batch: error: 2 environment problems:"
    assert lines[1].strip() == (f"{envs}: no environment for instance 'fixtures__intervals-1' (tried key(s) "
                                "'fixtures__intervals-1', 'fixtures/intervals@1.0'): add one, or give --python for the "
                                "instances the file does not name")  # fmt: skip
    assert "'fixtures__csvlite-1'" in lines[2]
    bad_flag = batch_cli("--python", str(tmp_path / "nope"), ledger=ledger, preds=preds)
    assert bad_flag.returncode == 2 and f"--python {tmp_path / 'nope'}: no such file" in bad_flag.stderr
    assert not ledger.exists()


def test_environments_in_toml(tmp_path):
    from pytest_objective_scoring.environments import assign, load_environments

    envs = write_environments(tmp_path, f'"fixtures/textstats@1.0" = "{sys.executable}"\n'
                                        '[fixtures__csvlite-1]\npython = "python3"\nimage = "swebench"\n', "envs.toml")  # fmt: skip
    instances = load_instances(DATASET)
    assigned = assign(instances, load_environments(envs), sys.executable)
    assert assigned["fixtures__textstats-1"].python == str(Path(sys.executable).absolute())
    assert assigned["fixtures__intervals-1"].source == "--python"
    # an image template is filled in per instance (SWE-bench's preset here)
    assert assigned["fixtures__csvlite-1"].image == "swebench/sweb.eval.x86_64.fixtures_1776_csvlite-1:latest"


# ---------------------------------------------------------------- SWE-bench conveniences: --instance-ids, the log tree, run ids


def test_instance_ids_grade_only_those_and_unknown_ones_are_refused(tmp_path):
    ledger = tmp_path / "l.sqlite"
    unknown = batch_cli("--instance-ids", "fixtures__intervals-1", "fixtures__interval-2", ledger=ledger)
    assert unknown.returncode == 2 and not ledger.exists()
    assert ("--instance-ids fixtures__interval-2: not an instance of "
            f"{DATASET} (did you mean fixtures__intervals-1") in unknown.stderr
    only_cheap = predictions(tmp_path, {"cheap-fix"})
    rows = [json.loads(line) for line in only_cheap.read_text().splitlines() if "csvlite" not in line]
    only_cheap.write_text("".join(json.dumps(r) + "\n" for r in rows))
    unpredicted = batch_cli("--instance-ids", "fixtures__csvlite-1", ledger=ledger, preds=only_cheap)
    assert unpredicted.returncode == 2 and f"--instance-ids fixtures__csvlite-1: {only_cheap} holds no prediction" in unpredicted.stderr
    (tmp_path / "out").mkdir()  # a report's folder is never created silently
    chosen = batch_cli("--json", "--instance-ids", "fixtures__intervals-1", "--run-id", "r1", "--report",
                       str(tmp_path / "out" / "report.json"), "--workers", "2", ledger=ledger)  # fmt: skip
    assert chosen.returncode == 0, chosen.stderr
    report = json.loads(chosen.stdout)
    assert {r["instance_id"] for r in report["results"]} == {"fixtures__intervals-1"} and len(report["results"]) == 6
    assert {r["model_name_or_path"]: r["failure_class"] for r in report["results"]} == EXPECTED
    cheap = json.loads((tmp_path / "out" / "cheap-fix.r1.json").read_text())
    assert cheap["total_instances"] == 1 and cheap["resolved_ids"] == ["fixtures__intervals-1"] and cheap["incomplete_ids"] == []
    with Ledger(ledger) as opened:
        [entry] = [e.data for e in opened.entries("batch")]
    assert entry["instance_ids"] == ["fixtures__intervals-1"] and entry["jobs"] == 6


def test_the_log_tree_holds_each_result_as_swebench_writes_it_and_no_run_is_overwritten(tmp_path):
    preds = predictions(tmp_path, {"cheap-fix", "bad-diffs"})
    ledger, logs, out = tmp_path / "l.sqlite", tmp_path / "logs", tmp_path / "out" / "report.json"
    out.parent.mkdir()  # a report's folder is never created silently
    args = ("--json", "--instance-ids", "fixtures__csvlite-1", "--log-dir", str(logs), "--report", str(out))
    first = batch_cli(*args, "--run-id", "r1", ledger=ledger, preds=preds)
    assert first.returncode == 0, first.stderr
    rows = {r["model_name_or_path"]: r for r in json.loads(first.stdout)["results"]}
    run = logs / "run_evaluation" / "r1"
    patches = {json.loads(line)["model_name_or_path"]: json.loads(line)["model_patch"]
               for line in preds.read_text().splitlines() if "csvlite" in line}  # fmt: skip
    for model in ("cheap-fix", "bad-diffs"):
        folder = run / model / "fixtures__csvlite-1"
        assert sorted(p.name for p in folder.iterdir()) == ["envelope.json", "patch.diff", "report.json", "test_output.txt"]
        assert rows[model]["log"] == str(folder)
        assert (folder / "patch.diff").read_text() == patches[model]
        envelope = json.loads((folder / "envelope.json").read_text())
        assert envelope["batch"]["job_key"] == rows[model]["job_key"] and envelope["ledger"]["seq"] == rows[model]["ledger_seq"]
        report = json.loads((folder / "report.json").read_text())
        assert report == envelope["swebench"]["report"] and list(report) == ["fixtures__csvlite-1"]
    cheap = json.loads((run / "cheap-fix" / "fixtures__csvlite-1" / "report.json").read_text())["fixtures__csvlite-1"]
    assert cheap["resolved"] is True and cheap["patch_successfully_applied"] is True
    assert cheap["tests_status"]["FAIL_TO_PASS"]["failure"] == [] and cheap["tests_status"]["FAIL_TO_PASS"]["success"]
    output = (run / "cheap-fix" / "fixtures__csvlite-1" / "test_output.txt").read_text()
    assert "===== the candidate's run: exit code 0, pytest exit status 0" in output and " passed" in output
    assert f"interpreter: {Path(sys.executable).absolute()}" in output
    unapplied = (run / "bad-diffs" / "fixtures__csvlite-1" / "test_output.txt").read_text()
    assert "outcome: patch_did_not_apply" in unapplied and "===== no test ran" in unapplied and "----- apply with git apply: failed" in unapplied
    assert json.loads((run / "bad-diffs" / "fixtures__csvlite-1" / "report.json").read_text())["fixtures__csvlite-1"][
        "patch_successfully_applied"] is False
    written = {p: p.stat().st_mtime_ns for p in [*logs.rglob("*"), *out.parent.iterdir()]}

    # the same run id again: its run reports exist, so it is refused before anything is graded
    again = batch_cli(*args, "--run-id", "r1", ledger=ledger, preds=preds)
    assert again.returncode == 2
    assert f"--run-id r1: the run report {out.parent / 'bad-diffs.r1.json'} exists: a run report is never overwritten" in again.stderr
    # continued without --report (as after an interruption): the folders of its jobs are left as they are
    continued = batch_cli("--json", "--instance-ids", "fixtures__csvlite-1", "--log-dir", str(logs), "--run-id", "r1",
                          ledger=ledger, preds=preds)  # fmt: skip
    assert continued.returncode == 0, continued.stderr
    assert all(r["resumed"] for r in json.loads(continued.stdout)["results"])
    assert {p: p.stat().st_mtime_ns for p in written} == written, "nothing of run r1 was rewritten"
    # another grading under that run id (the patch changed) is refused: its folder holds another job
    changed = tmp_path / "changed.jsonl"
    changed.write_text(preds.read_text().replace('"model_patch": "diff', '"model_patch": "\\ndiff'))
    other = batch_cli("--instance-ids", "fixtures__csvlite-1", "--log-dir", str(logs), "--run-id", "r1",
                      ledger=ledger, preds=changed)  # fmt: skip
    assert other.returncode == 2 and "holds another grading" in other.stderr and "a run's logs are never overwritten" in other.stderr
    assert {p: p.stat().st_mtime_ns for p in written} == written
    # a new run id: results read back from the ledger get folders too, from what the ledger keeps
    second = batch_cli("--json", "--instance-ids", "fixtures__csvlite-1", "--log-dir", str(logs), "--run-id", "r2",
                       "--report", str(out), ledger=ledger, preds=preds)  # fmt: skip
    assert second.returncode == 0, second.stderr
    folder = logs / "run_evaluation" / "r2" / "cheap-fix" / "fixtures__csvlite-1"
    assert sorted(p.name for p in folder.iterdir()) == ["ledger_entry.json", "patch.diff", "report.json", "test_output.txt"]
    assert json.loads((folder / "report.json").read_text()) == cheap_report(run)
    assert "read back from the ledger (score entry" in (folder / "test_output.txt").read_text()
    assert (out.parent / "cheap-fix.r2.json").exists() and (out.parent / "cheap-fix.r1.json").stat().st_mtime_ns == written[
        out.parent / "cheap-fix.r1.json"]


def cheap_report(run: Path) -> Any:
    return json.loads((run / "cheap-fix" / "fixtures__csvlite-1" / "report.json").read_text())


def test_output_paths_are_checked_before_any_grading(tmp_path):
    preds = predictions(tmp_path, {"cheap-fix"})
    ledger = tmp_path / "l.sqlite"
    (tmp_path / "a-file").write_text("")
    cases = [
        (("--log-dir", str(tmp_path / "a-file")), f"--log-dir {tmp_path / 'a-file'}: is a file: expected a folder"),
        (("--log-dir", str(tmp_path / "a-file" / "logs")), f"{tmp_path / 'a-file'} is not a folder"),
        (("--report", str(tmp_path / "a-file" / "report.json")), f"--report {tmp_path / 'a-file' / 'report.json'}: {tmp_path / 'a-file'} is not a folder"),
        (("--report", str(tmp_path)), f"--report {tmp_path}: is a directory: expected a file"),
        (("--report", str(tmp_path / "missing" / "report.json")), f"the folder {tmp_path / 'missing'} does not exist (missing folders are not created"),
        (("--run-id", "a/b"), "--run-id 'a/b': cannot name a folder or a file"),
        (("--run-id", ".."), "--run-id '..': cannot name a folder or a file"),
    ]
    for extra, expected in cases:
        result = batch_cli(*extra, ledger=ledger, preds=preds)
        assert result.returncode == 2 and expected in result.stderr, (extra, result.stderr)
    assert not ledger.exists(), "nothing was graded"
    assert not (tmp_path / "missing").exists(), "no folder was created"


def _fixture_image(project: str) -> str | None:
    """A SWE-bench-style image of a fixture project (as tests/test_container_mode.py builds them, same
    tag, so the engine's cache serves both), or None without podman and the local base image."""
    import hashlib
    import shutil
    import tempfile

    from pytest_objective_scoring import container

    base = "localhost/objective-base:bookworm"
    try:
        if shutil.which("podman") is None or not container.image_exists("podman", base):
            return None
    except container.ContainerError:
        return None
    repo = REPOS / project
    digest = hashlib.sha256()
    for path in sorted(repo.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(repo).as_posix().encode() + b"\0" + path.read_bytes())
    tag = f"localhost/objective-fixture:{project}-{digest.hexdigest()[:12]}"
    if not container.image_exists("podman", tag):
        with tempfile.TemporaryDirectory() as context:
            shutil.copytree(repo, Path(context) / "testbed", ignore=shutil.ignore_patterns("__pycache__"))
            (Path(context) / "Containerfile").write_text(
                f"FROM {base}\nCOPY testbed /testbed\nRUN cd /testbed && git init -q && git -c user.name=t -c user.email=t@t "
                "add -A && git -c user.name=t -c user.email=t@t commit -qm base\nWORKDIR /testbed\n")  # fmt: skip
            done = subprocess.run(["podman", "build", "-q", "-t", tag, "-f", "Containerfile", "."], cwd=context,
                                  capture_output=True, text=True, timeout=600)  # fmt: skip
            assert done.returncode == 0, done.stderr
    return tag


def test_a_batch_grades_an_instance_in_its_image_beside_instances_on_this_machine(tmp_path):
    image = _fixture_image("intervals")
    if image is None:
        pytest.skip("needs podman and localhost/objective-base:bookworm (bash ../shared/tools/container-engine.sh)")
    envs = write_environments(tmp_path, {"fixtures/intervals@1.0": {"image": image, "python": "python3"}})
    preds = predictions(tmp_path, {"cheap-fix", "breaks-things"})
    rows = [r for r in map(json.loads, preds.read_text().splitlines()) if r["instance_id"] != "fixtures__csvlite-1"]
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = batch_cli("--json", "--environments", str(envs), "--python", sys.executable, ledger=tmp_path / "l.sqlite",
                       preds=preds)  # fmt: skip
    assert result.returncode == 0, result.stderr
    for row in json.loads(result.stdout)["results"]:
        assert row["failure_class"] == EXPECTED[row["model_name_or_path"]], row
        envelope = json.loads((Path(row["log"]) / "envelope.json").read_text())
        if row["instance_id"] == "fixtures__intervals-1":
            assert (row["image"], row["python"]) == (image, "python3")
            assert envelope["runner"]["isolation"]["mode"] == "container" and envelope["runner"]["repo"] == f"{image}:/testbed"
        else:
            assert row["image"] is None and envelope["runner"]["isolation"]["mode"] != "container"
    assert {s["instance_id"]: s.get("image") for s in score_entries(tmp_path / "l.sqlite")} == {
        "fixtures__intervals-1": image, "fixtures__textstats-1": None}


def test_an_image_template_covers_the_instances_the_environments_file_does_not_name():
    from pytest_objective_scoring.environments import FROM_IMAGE, assign
    from pytest_objective_scoring.instances import parse_instance

    rows = [parse_instance({"instance_id": i, "repo": "o/n", "version": "1.0", "FAIL_TO_PASS": ["t.py::a"],
                            "PASS_TO_PASS": []}, "<test>") for i in ("a__b-1", "c__d-2")]  # fmt: skip
    assigned = assign(rows, None, None, image="swebench")
    assert assigned["a__b-1"].image == "swebench/sweb.eval.x86_64.a_1776_b-1:latest"
    assert (assigned["c__d-2"].python, assigned["c__d-2"].source) == ("python3", FROM_IMAGE)
    assert assign(rows, None, "/opt/py", image="r/{instance_id}")["a__b-1"].python == "/opt/py"  # the one inside the image
    with pytest.raises(Exception, match="only"):
        assign(rows, None, None, image="r/{model}")
