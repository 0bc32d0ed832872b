"""Faults and bad input met by ``ab`` and ``import-judged`` (issue 28, the red team's follow-up):
an infrastructure failure is an outcome of neither arm, a report directory on a full disk keeps no
partial file, nothing is made before a refusal, and ``import-judged`` reads rows by their content."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import ab, batch
from pytest_objective_scoring.ledger import Ledger

from .conftest import FIXTURES
from .test_ab import (
    BASELINE,
    CANDIDATE,
    DATASET,
    MANIFEST,
    ab_cli,
    arm_file,
    experiment,
    run_arms,
)

pytest.importorskip("scipy.stats", reason="scipy is a test dependency: pip install -e '.[test]'")

INFRA = "cannot be graded here: [Errno 28] No space left on device"
REAL_GRADE_JOB = batch.grade_job


def _entries(ledger: Path, kind: str) -> list[dict[str, Any]]:
    with Ledger(ledger, read_only=True) as opened:
        return [e.data for e in opened.entries(kind)]


def _grading(monkeypatch: pytest.MonkeyPatch, broken: Any) -> list[tuple[str, str]]:
    """``batch.grade_job`` graded for real, except the jobs ``broken(payload)`` picks: those fail for
    the environment (as a full TMPDIR makes them fail). Returns the (model, instance id) of every job graded."""
    graded: list[tuple[str, str]] = []

    def grade_job(payload: Any) -> dict[str, Any]:
        instance_id = payload["instance"]["instance_id"]
        graded.append((payload["model"], instance_id))
        if broken(payload):
            return batch.ungraded(payload, "setup", INFRA, instance_id)
        return REAL_GRADE_JOB(payload)

    monkeypatch.setattr(batch, "grade_job", grade_job)
    return graded


# ------------------------------------------------------------------ W1: infrastructure failures


def test_an_infrastructure_failure_is_never_an_outcome_and_is_graded_again(tmp_path, monkeypatch):
    ledger, manifest = experiment(tmp_path, name="infra", seeds=[1])
    assert ab_cli("preregister", str(manifest), ledger=ledger).returncode == 0
    base = arm_file(tmp_path, "b", BASELINE, 0.1, seeds=(1,))
    cand = arm_file(tmp_path, "c", CANDIDATE, 0.1, seeds=(1,))

    graded = _grading(monkeypatch, lambda payload: True)  # every grading fails for the environment
    failed = run_arms(manifest, ledger, base, cand)
    assert failed.returncode == 3, failed.stderr
    assert "6 of 6 grading(s) failed for the environment" in failed.stderr
    assert "run the same command again" in failed.stderr and "No space left on device" in failed.stderr
    assert failed.stdout == "", "no comparison, no 0% per seed, is printed"
    assert len(graded) == 6
    assert _entries(ledger, "ab_comparison") == [] and _entries(ledger, "burn") == []

    lost = ("ab:infra/candidate/seed1", "fixtures__csvlite-1")
    graded = _grading(monkeypatch, lambda payload: (payload["model"], payload["instance"]["instance_id"]) == lost)
    again = run_arms(manifest, ledger, base, cand)
    assert again.returncode == 3, again.stderr
    assert "resuming" not in again.stderr, "an infrastructure failure is not 'already graded'"
    assert len(graded) == 6, "every job whose recorded result was an infrastructure failure is graded again"
    assert "1 of 6 grading(s) failed for the environment" in again.stderr
    assert _entries(ledger, "ab_comparison") == []

    graded = _grading(monkeypatch, lambda payload: False)
    done = run_arms(manifest, ledger, base, cand, "--json")
    assert done.returncode == 0, done.stderr
    assert graded == [lost], "exactly the job that failed for the environment is graded again"
    assert "resuming: 5 of 6 prediction(s) already graded" in done.stderr
    output = json.loads(done.stdout)
    assert [arm["resolved"] for arm in output["record"]["arms"]] == [[1], [2]]
    assert output["details"]["infrastructure_failures"] == 0
    assert len(_entries(ledger, "ab_comparison")) == 1


def test_the_comparison_is_never_computed_over_an_infrastructure_failure():
    from types import SimpleNamespace

    from pytest_objective_scoring.ab_comparison import (
        UngradedRuns,
        environment_failures,
        summarize_comparison,
    )

    manifest = ab.parse_manifest({**MANIFEST, "seeds": [1]}, "m")
    tasks = {"sha256:a": "t-a"}
    task_set = SimpleNamespace(instances=tasks, record=SimpleNamespace(set_id="regression@v1", role="regression"))
    rows = {(f"ab:exp-1/{arm}/seed1", "t-a"): {"failure_class": "not_resolved"} for arm in ("baseline", "candidate")}
    rows[("ab:exp-1/candidate/seed1", "t-a")] = {"failure_class": "infrastructure_failure"}
    assert environment_failures(list(rows.values())) == [{"failure_class": "infrastructure_failure"}]
    with pytest.raises(UngradedRuns, match="1 of 2 grading"):
        summarize_comparison(manifest, sorted(tasks.items()), task_set, rows, [], "/usr/bin/python3")


def test_a_recorded_comparison_over_an_infrastructure_failure_gives_no_claim():
    from pytest_objective_scoring.ab_comparison import recomputed

    class Entries:
        def __init__(self, data: dict[int, dict[str, Any]]) -> None:
            self.data = data

        def entries(self, kind: str) -> list[Any]:
            from types import SimpleNamespace

            return [SimpleNamespace(seq=seq, data=d) for seq, d in self.data.items()] if kind == "score" else []

    scores = {1: {"model_name_or_path": "ab:old/baseline/seed1", "instance_id": "t", "outcome": "not_resolved", "job_key": "a"},
              2: {"model_name_or_path": "ab:old/candidate/seed1", "instance_id": "t", "outcome": "infrastructure_failure",
                  "job_key": "b"}}  # fmt: skip
    output = {"name": "old", "record": {"arms": [{"name": "baseline", "resolved": [0]}, {"name": "candidate", "resolved": [0]}],
                                        "seeds": [1], "result": {"delta": 0.0}},
              "details": {"graded_runs": [{"seq": 1, "task_id": "x"}, {"seq": 2, "task_id": "x"}], "tasks": 1}}  # fmt: skip
    _, problems = recomputed(Entries(scores), output)
    assert problems[0] == "graded run 2: candidate seed 1 t is an infrastructure failure, an outcome of neither arm"


@pytest.mark.parametrize("timeout", [1e300, 7 * 24 * 3600 + 1])
def test_a_frozen_timeout_over_a_week_is_refused_at_preregistration(tmp_path, timeout):
    from pytest_objective_scoring.options import MAX_SECONDS

    assert ab.MAX_TIMEOUT == MAX_SECONDS, "the same bound as --timeout"
    ledger, manifest = experiment(tmp_path, audited=False, name="long", frozen={**MANIFEST["frozen"], "timeout": timeout})
    refused = ab_cli("preregister", str(manifest), ledger=ledger)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        (f"objective-score ab: error: {manifest}: frozen: field 'timeout': {timeout:g} seconds; at most 604800 "
         "(a week, as --timeout)")]  # fmt: skip
    assert _entries(ledger, "ab_manifest") == []
    week = ab.parse_manifest({**MANIFEST, "frozen": {**MANIFEST["frozen"], "timeout": 7 * 24 * 3600}}, "m")
    assert week.frozen.timeout == 604800


@pytest.mark.slow
def test_a_nearly_full_tmpdir_stops_the_comparison_and_the_next_run_grades_it(tmp_path):
    """The red team's case, for real: TMPDIR on a nearly full tmpfs (root only), then a run with room."""
    import os

    from .runner_helpers import run_cli
    from .test_faults import tmpfs

    ledger, manifest = experiment(tmp_path, name="full-tmp", seeds=[1])
    assert ab_cli("preregister", str(manifest), ledger=ledger).returncode == 0
    arms = ["--arm", f"baseline={arm_file(tmp_path, 'b', BASELINE, 0.1, seeds=(1,))}",
            "--arm", f"candidate={arm_file(tmp_path, 'c', CANDIDATE, 0.1, seeds=(1,))}"]  # fmt: skip
    command = ["ab", "run", str(manifest), *arms, "--dataset", str(DATASET), "--repos", str(FIXTURES / "repos"),
               "--workers", "2", "--ledger", str(ledger)]  # fmt: skip
    with tmpfs(tmp_path / "full", "64k") as place:
        # nearly full: room for tempfile's probe (a full TMPDIR is passed over for /tmp), none for a checkout
        (place / "filler").write_bytes(b"\0" * (48 << 10))
        failed = run_cli(*command, env={**os.environ, "TMPDIR": str(place)})
    assert failed.returncode == 3, failed.stderr
    assert "6 of 6 grading(s) failed for the environment" in failed.stderr and failed.stdout == ""
    assert _entries(ledger, "ab_comparison") == []
    done = run_cli(*command, "--json")
    assert done.returncode == 0, done.stderr
    assert "resuming" not in done.stderr
    assert [arm["resolved"] for arm in json.loads(done.stdout)["record"]["arms"]] == [[1], [2]]


# ------------------------------------------------------------------ D5: ab report on a full disk


@pytest.fixture(scope="module")
def compared(tmp_path_factory) -> Path:
    """A ledger holding one comparison, "rep" (one seed, graded for real)."""
    folder = tmp_path_factory.mktemp("compared")
    ledger, manifest = experiment(folder, name="rep", seeds=[1])
    assert ab_cli("preregister", str(manifest), ledger=ledger).returncode == 0
    done = run_arms(manifest, ledger, arm_file(folder, "b", BASELINE, 0.1, seeds=(1,)),
                    arm_file(folder, "c", CANDIDATE, 0.1, seeds=(1,)))  # fmt: skip
    assert done.returncode == 0, done.stderr
    return ledger


@pytest.mark.parametrize("room", [0, 12 << 10], ids=["full", "room-for-the-markdown-only"])
def test_ab_report_on_a_full_disk_leaves_nothing_partial(compared, tmp_path, room):
    from .test_faults import tmpfs

    with tmpfs(tmp_path / "disk", "64k") as place:
        (place / "kept").mkdir()
        (place / "kept" / "report.md").write_text("the report before\n")
        try:
            (place / "filler").write_bytes(b"\0" * ((64 << 10) - room))
        except OSError:
            pass
        for out in (place / "new", place / "kept"):
            failed = ab_cli("report", "rep", "--out", str(out), ledger=compared)
            assert failed.returncode == 3, failed.stderr
            assert failed.stderr.strip().splitlines() == [
                (f"objective-score ab report: --out {out}: NOT written (No space left on device); nothing of the "
                 "report was left there: free the space and run it again")]  # fmt: skip
        assert sorted(p.name for p in place.iterdir()) == ["filler", "kept"], "no folder made, no partial file"
        assert [p.name for p in (place / "kept").iterdir()] == ["report.md"]
        assert (place / "kept" / "report.md").read_text() == "the report before\n"


def test_ab_report_writes_every_file_whole_or_none(tmp_path, monkeypatch):
    """The staging rule, without a tmpfs: the third file fails; the two staged before it are removed."""
    from pytest_objective_scoring import atomic
    from pytest_objective_scoring.ab_report import write_all

    real, calls = atomic.write_whole, []

    def failing(path: Any, data: Any) -> None:
        calls.append(path)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        real(path, data)

    monkeypatch.setattr(atomic, "write_whole", failing)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a.md").write_text("before")
    with pytest.raises(OSError):
        write_all(tmp_path / "out", {"a.md": "new", "b.png": b"\x89PNG", "c.html": "<p>"})
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.md"]
    assert (tmp_path / "out" / "a.md").read_text() == "before"
    calls.clear()
    with pytest.raises(OSError):
        write_all(tmp_path / "fresh", {"a.md": "new", "b.png": b"\x89PNG", "c.html": "<p>"})
    assert not (tmp_path / "fresh").exists()
    monkeypatch.setattr(atomic, "write_whole", real)
    assert write_all(tmp_path / "out", {"a.md": "new", "b.png": b"\x89PNG"}) == [tmp_path / "out" / "a.md", tmp_path / "out" / "b.png"]
    assert (tmp_path / "out" / "a.md").read_text() == "new"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.md", "b.png"]


# ------------------------------------------------------------------ S7: ab run on a missing ledger


def test_ab_run_on_a_missing_ledger_makes_nothing(tmp_path):
    _, manifest = experiment(tmp_path / "elsewhere", audited=False, name="nowhere", seeds=[1])
    ledger = tmp_path / "new.sqlite"
    refused = run_arms(manifest, ledger, tmp_path / "b.jsonl", tmp_path / "c.jsonl")
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        (f"objective-score ab: error: --ledger {ledger}: no such ledger: ab run grades only an experiment "
         f"preregistered in it (objective-score ab preregister {manifest} first); nothing was made")]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere"], "no ledger, no claims folder"


# ------------------------------------------------------------------ S2, S8: import-judged reads rows by content

CLI = f"{sys.executable} -m pytest_objective_scoring"


def _judged(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    """``import-judged SOURCE`` run by bash (``<(...)`` is a pipe named /dev/fd/N), guarded by a timeout."""
    line = f"{CLI} import-judged {source} --benchmark b --judge j --ledger {tmp_path / 'l.sqlite'} --json"
    return subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False)


@pytest.mark.parametrize(("printed", "rows"), [
    ('{"task_id":"a","harness":"h","score":1}', [("a", 1.0)]),  # the red team's: one row, from a pipe
    ('{"task_id":"a","harness":"h","score":1}\\n{"task_id":"b","harness":"h","score":0}', [("a", 1.0), ("b", 0.0)]),
    ('[{"task_id":"a","harness":"h","score":1},\\n {"task_id":"b","harness":"h","score":0}]', [("a", 1.0), ("b", 0.0)]),
    ('{\\n  "task_id": "a", "harness": "h",\\n  "score": 0.5\\n}', [("a", 0.5)]),  # one row over several lines
], ids=["one-row", "jsonl", "list", "one-row-indented"])  # fmt: skip
def test_import_judged_tells_jsonl_from_json_by_content_through_a_pipe(tmp_path, printed, rows):
    result = _judged(tmp_path, f"<(printf '%b\\n' '{printed}')")
    assert result.returncode == 0, result.stderr
    assert [(e["task_id"], e["score"]) for e in json.loads(result.stdout)["entries"]] == rows


@pytest.mark.parametrize(("name", "text", "where", "key"), [
    ("j.jsonl", '{"task_id":"a","harness":"h","score":1,"score":0}\n', "{path}:1", "score"),  # the red team's
    ("j.jsonl", '{"task_id":"a","harness":"h","score":1}\n{"task_id":"b","harness":"h","harness":"g","score":0}\n',
     "{path}:2", "harness"),
    ("j.json", '[{"task_id":"a","harness":"h","score":1, "extra": {"k": 1, "k": 2}}]', "{path}", "k"),
], ids=["score-twice", "second-row", "nested-in-a-list"])  # fmt: skip
def test_import_judged_refuses_a_key_given_twice(tmp_path, name, text, where, key):
    path = tmp_path / name
    path.write_text(text)
    result = _judged(tmp_path, str(path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        (f"objective-score import-judged: error: {where.format(path=path)}: field {key!r} given twice in one object: "
         "JSON keeps the last and drops the first silently, so which value is imported would be an accident")]  # fmt: skip
    assert not (tmp_path / "l.sqlite").exists(), "nothing was imported"
