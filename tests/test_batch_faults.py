"""grade-batch under fault injection (issue 14): two batches at once on one ledger, batches killed
with SIGKILL at random points, a 200 MB candidate under a memory limit. Real gradings of the fixture
repositories, real processes."""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from pytest_objective_scoring.claims import claims_folder
from pytest_objective_scoring.ledger import Ledger, verify

from .conftest import FIXTURES

pytestmark = pytest.mark.slow

DATASET = FIXTURES / "datasets" / "fixtures.jsonl"
PREDICTIONS = FIXTURES / "predictions" / "fixtures.jsonl"
REPOS = FIXTURES / "repos"
EXPECTED = {"cheap-fix": "resolved", "breaks-things": "not_resolved", "does-nothing": "not_resolved"}


def command(tmp: Path, ledger: Path, preds: Path, name: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pytest_objective_scoring", "grade-batch", "--dataset", str(DATASET),
            "--predictions", str(preds), "--repos", str(REPOS), "--ledger", str(ledger), "--timeout", "120",
            "--workers", "2", "--log-dir", str(tmp / "logs"), "--run-id", name, "--report", str(tmp / f"{name}.json"),
            *extra]  # fmt: skip


def environment(tmp: Path) -> dict[str, str]:
    temporary = tmp / "tmp"
    temporary.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(temporary), "PYTHONDONTWRITEBYTECODE": "1"}


def predictions(tmp: Path, models: set[str]) -> Path:
    rows = [line for line in PREDICTIONS.read_text().splitlines() if json.loads(line)["model_name_or_path"] in models]
    path = tmp / "preds.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return path


def entries(ledger: Path) -> list[tuple[str, dict]]:
    """Every entry; none while the ledger is still an empty file (made, its schema not yet written)."""
    from pytest_objective_scoring.ledger import LedgerError

    if not ledger.exists() or ledger.stat().st_size == 0:
        return []
    try:
        with Ledger(ledger, read_only=True) as opened:
            return [(e.kind, e.data) for e in opened.entries()]
    except LedgerError as exc:  # killed between making the file and writing its tables: nothing in it yet
        if "not a ledger" in str(exc):
            return []
        raise


def test_two_batches_at_once_on_one_ledger_grade_each_job_once_and_both_report_every_result(tmp_path):
    ledger = tmp_path / "ledger.sqlite"
    preds = predictions(tmp_path, set(EXPECTED))
    runs = [subprocess.Popen(command(tmp_path, ledger, preds, name), env=environment(tmp_path), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for name in ("first", "second")]  # fmt: skip
    outputs = [run.communicate(timeout=600) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err[-2000:] for _, err in outputs]
    recorded = entries(ledger)
    scores = Counter(d["job_key"] for k, d in recorded if k == "score")
    assert len(scores) == 9 and set(scores.values()) == {1}, "each job graded and recorded exactly once"
    assert Counter(d["job_key"] for k, d in recorded if k == "claim") == scores
    reports = [json.loads((tmp_path / f"{name}.json").read_text())["results"] for name in ("first", "second")]
    for rows in reports:
        assert len(rows) == 9
        assert all(row["failure_class"] == EXPECTED[row["model_name_or_path"]] for row in rows), rows
    verdicts = [{row["job_key"]: (row["failure_class"], row["ledger_seq"]) for row in rows} for rows in reports]
    assert verdicts[0] == verdicts[1], "both reports point at the same recorded results"
    fresh = [sum(not row["resumed"] for row in rows) for rows in reports]
    assert sum(fresh) == 9, f"the two runs shared the work ({fresh}), nothing was graded twice"
    assert verify(ledger).ok
    assert list(claims_folder(ledger).iterdir()) == []


def leftovers(tmp: Path) -> list[str]:
    """Processes whose command line names this test's temporary folder (sandbox launchers, pytest runs)."""
    found = subprocess.run(["pgrep", "-f", str(tmp / "tmp")], capture_output=True, text=True)
    return [pid for pid in found.stdout.split() if int(pid) != os.getpid()]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_batch_killed_at_a_random_point_loses_nothing_and_the_next_run_finishes_it(tmp_path, seed):
    ledger = tmp_path / "ledger.sqlite"
    preds = predictions(tmp_path, {"cheap-fix", "breaks-things"})
    rng = random.Random(seed)
    claimed, extra = rng.randint(1, 5), rng.uniform(0.0, 1.5)  # killed once it claimed that many jobs, and a bit
    delay = f"{claimed} claim(s) + {extra:.2f} s"
    killed = subprocess.Popen(command(tmp_path, ledger, preds, "killed"), env=environment(tmp_path),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and killed.poll() is None:
        if sum(kind == "claim" for kind, _ in entries(ledger)) >= claimed:
            break
        time.sleep(0.05)
    time.sleep(extra)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=60)
    deadline = time.monotonic() + 20
    while leftovers(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert leftovers(tmp_path) == [], "no test process outlives its grader"
    before = entries(ledger)
    if ledger.exists() and ledger.stat().st_size:
        assert verify(ledger).ok, f"killed after {delay}: the ledger is intact"
    done = subprocess.run(command(tmp_path, ledger, preds, "after"), env=environment(tmp_path), capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    after = entries(ledger)
    assert after[: len(before)] == before, "every earlier entry kept as it was"
    scores = Counter(d["job_key"] for k, d in after if k == "score")
    assert len(scores) == 6 and set(scores.values()) == {1}, f"killed after {delay}: each job recorded once"
    open_claims = {d["job_key"] for k, d in before if k == "claim"} - {d["job_key"] for k, d in before if k == "score"}
    released = {d["job_key"] for k, d in after if k == "release"}
    assert released == open_claims, "the killed run's unfinished claims, and only they, were released"
    assert killed.returncode == -signal.SIGKILL, "the run was killed before it ended"
    rows = json.loads((tmp_path / "after.json").read_text())["results"]
    assert sorted(row["failure_class"] for row in rows) == ["not_resolved"] * 3 + ["resolved"] * 3
    assert verify(ledger).ok
    assert list(claims_folder(ledger).iterdir()) == []
    assert [p.name for p in (tmp_path / "tmp").iterdir() if p.name.startswith("objective-score-")] == [], \
        "the killed run's workspaces were swept"


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def test_a_200_mb_candidate_under_a_1_gib_memory_limit_is_refused_and_the_rest_graded(tmp_path):
    import hashlib

    lines = 240 * 1024 * 1024 // 46 // 10_000 * 10_000  # at least 200 MiB of patch
    preds, digest = tmp_path / "preds.jsonl", hashlib.sha256()
    with open(preds, "w") as handle:
        handle.write('{"instance_id": "fixtures__intervals-1", "model_name_or_path": "flooder", "model_patch": "')
        block = "".join(f"+x_{i} = {i}  # {'a' * 20}\n" for i in range(10_000))
        for text in [("diff --git a/src/intervals/big.py b/src/intervals/big.py\nnew file mode 100644\n--- /dev/null\n"
                      f"+++ b/src/intervals/big.py\n@@ -0,0 +1,{lines} @@\n"), *[block] * (lines // 10_000)]:  # fmt: skip
            digest.update(text.encode())
            handle.write(text.replace("\n", "\\n"))
        handle.write('"}\n{"instance_id": "fixtures__intervals-1", "model_name_or_path": "gold", "model_patch": null}\n')
    assert preds.stat().st_size > 200 * 1024 * 1024
    ledger = tmp_path / "ledger.sqlite"
    done = subprocess.run(command(tmp_path, ledger, preds, "big", "--json"), env=environment(tmp_path),
                          capture_output=True, text=True, timeout=600, preexec_fn=_limit_memory)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {row["model_name_or_path"]: row for row in json.loads(done.stdout)["results"]}
    assert rows["gold"]["failure_class"] == "resolved"
    flooder = rows["flooder"]
    assert flooder["failure_class"] == "patch_did_not_apply"
    assert "larger than 16777216 bytes" in flooder["failure_detail"]
    assert flooder["score"]["patch_ref"] == "sha256:" + digest.hexdigest(), \
        "the record names the whole candidate, not the part the grader kept"
