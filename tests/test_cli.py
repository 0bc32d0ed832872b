"""The objective-score command line, run as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FIXTURES
from .runner_helpers import envelope_of, run_cli

INTERVALS = ["--repo", str(FIXTURES / "repos" / "intervals"), "--instance", str(FIXTURES / "instances" / "intervals.json")]


def patch(name: str) -> str:
    return str(FIXTURES / "patches" / "intervals" / f"{name}.diff")


def test_top_level_help_lists_the_commands():
    result = run_cli("--help")
    assert result.returncode == 0
    assert "grade" in result.stdout and "demo" in result.stdout
    assert "never by asking a model" in result.stdout


def test_version():
    from pytest_objective_scoring import __version__

    assert run_cli("--version").stdout.strip() == f"objective-score {__version__}"


def test_grade_help_explains_options_and_exit_statuses():
    result = run_cli("grade", "--help")
    assert result.returncode == 0
    for fragment in ("--repo DIR", "--instance FILE", "--patch FILE", "--test-patch FILE", "--python PATH",
                     "--timeout S", "--out FILE", "--compat MODE", "--instance-id ID", "--json", "examples:",
                     "2 bad input, 3 infrastructure failure"):  # fmt: skip
        assert fragment in result.stdout, fragment


def test_grade_resolved_prints_summary_and_writes_out(tmp_path):
    out = tmp_path / "deep" / "score.json"
    out.parent.mkdir()  # a missing folder is refused before grading, never created silently
    result = run_cli("grade", *INTERVALS, "--patch", patch("gold"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    for line in ("FAIL_TO_PASS: 2/2 passed [satisfied]", "PASS_TO_PASS: 11/11 preserved [satisfied]",
                 "verdict: RESOLVED", "candidate applied with: git apply", "failure class: none",
                 f"score written to: {out}"):  # fmt: skip
        assert line in result.stdout, line
    assert json.loads(out.read_text())["score"]["resolved"] == "resolved"


def test_grade_not_resolved_names_the_broken_test():
    result = run_cli("grade", *INTERVALS, "--patch", patch("break_p2p"))
    assert result.returncode == 1
    assert "PASS_TO_PASS tests/test_merge.py::TestMerge::test_disjoint - failed" in result.stdout
    assert "verdict: NOT RESOLVED" in result.stdout


def test_grade_json_and_patch_from_stdin():
    with open(patch("gold"), "rb") as handle:
        result = subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "grade", *INTERVALS, "--patch", "-",
                                 "--json"], stdin=handle, capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 0, result.stderr
    envelope = envelope_of(result)
    assert envelope["score"]["resolved"] == "resolved"
    assert envelope["runner"]["failure_class"] == "none"


def test_tampering_candidate_lists_what_was_not_applied():
    result = run_cli("grade", *INTERVALS, "--patch", patch("tamper"))
    assert result.returncode == 1
    assert "not applied (protected): tests/conftest.py - conftest.py (pytest hooks and fixtures)" in result.stdout


def test_patch_that_does_not_apply_exits_1():
    result = run_cli("grade", *INTERVALS, "--patch", patch("noapply"))
    assert result.returncode == 1
    assert "candidate applied with: nothing (did not apply)" in result.stdout
    assert "failure class: patch_apply" in result.stdout


def test_bad_instance_exits_2_naming_file_and_field(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"instance_id": "x", "PASS_TO_PASS": []}', encoding="utf-8")
    result = run_cli("grade", "--repo", str(tmp_path), "--instance", str(bad), "--patch", patch("gold"))
    assert result.returncode == 2
    assert result.stderr.startswith("objective-score grade: error: ")
    assert str(bad) in result.stderr and "'FAIL_TO_PASS'" in result.stderr


def test_missing_patch_file_exits_2(tmp_path):
    result = run_cli("grade", *INTERVALS, "--patch", str(tmp_path / "nope.diff"))
    assert result.returncode == 2
    assert "nope.diff" in result.stderr and "no such file" in result.stderr.lower()


def test_bad_timeout_exits_2():
    result = run_cli("grade", *INTERVALS, "--patch", patch("gold"), "--timeout", "0")
    assert result.returncode == 2
    assert "the timeout must be more than 0 seconds" in result.stderr


def test_unknown_instance_id_in_dataset_suggests_close_matches():
    result = run_cli("grade", "--repo", str(FIXTURES / "repos" / "intervals"), "--instance",
                     str(FIXTURES / "datasets" / "fixtures.jsonl"), "--instance-id", "fixtures__interval-1",
                     "--patch", patch("gold"))  # fmt: skip
    assert result.returncode == 2
    assert "did you mean 'fixtures__intervals-1'" in result.stderr


def test_dataset_with_instance_id_grades(tmp_path):
    result = run_cli("grade", "--repo", str(FIXTURES / "repos" / "intervals"), "--instance",
                     str(FIXTURES / "datasets" / "fixtures.json"), "--instance-id", "fixtures__intervals-1",
                     "--patch", patch("gold"), "--json")  # fmt: skip
    assert result.returncode == 0
    assert envelope_of(result)["instance_id"] == "fixtures__intervals-1"


def test_infrastructure_failure_exits_3(tmp_path):
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    result = run_cli("grade", *INTERVALS, "--patch", patch("gold"), "--python", str(venv / "bin" / "python"))
    assert result.returncode == 3
    assert "verdict: NO VERDICT - infrastructure failure (setup): " in result.stdout


@pytest.mark.slow
def test_demo_grades_every_bundled_candidate_as_expected(tmp_path):
    result = run_cli("demo", "--json", cwd=tmp_path)  # found through the source tree, not the cwd
    assert result.returncode == 0, result.stdout + result.stderr
    rows = json.loads(result.stdout)["results"]
    assert len(rows) == 28  # five candidates of three projects, gold and empty of pluginlike, 11 of the other runners
    assert all(row["as_expected"] for row in rows), [r for r in rows if not r["as_expected"]]
    verdicts = {(r["instance"], r["candidate"]): r["resolved"] for r in rows}
    assert verdicts[("fixtures__textstats-1", "gold")] == "resolved"
    assert verdicts[("fixtures__textstats-1", "tamper")] == "not_resolved"


@pytest.mark.slow
def test_demo_prints_a_table_and_progress(tmp_path):
    import shutil

    few = tmp_path / "few"  # one project's five candidates: the table and the progress lines, not every grading again
    shutil.copytree(FIXTURES / "repos" / "csvlite", few / "repos" / "csvlite", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(FIXTURES / "patches" / "csvlite", few / "patches" / "csvlite")
    (few / "instances").mkdir()
    shutil.copy(FIXTURES / "instances" / "csvlite.json", few / "instances")
    result = run_cli("demo", "--fixtures", str(few), env={"COLUMNS": "160", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert "objective-score demo" in result.stdout
    assert "fixtures__csvlite-1" in result.stdout and "patch_apply" in result.stdout and "NO" not in result.stdout
    assert "[5/5]" in result.stderr


def test_demo_help_describes_the_bundle_it_grades():
    from collections import Counter

    from pytest_objective_scoring.commands.demo import DEMO_EPILOG, demo_cases, find_fixtures

    cases = demo_cases(find_fixtures(None))
    per_project = Counter(project for project, *_ in cases)
    assert per_project == {"textstats": 5, "intervals": 5, "csvlite": 5, "pluginlike": 2, "recipes": 4, "sympy-mini": 4,
                           "units": 3}, "three projects of five candidates, a miniature of pytest's, three other runners'"
    text = " ".join(DEMO_EPILOG.split())
    assert f"{len(cases)} gradings" in text
    assert "three small Python projects" in text and "miniature of pytest's own repository" in text
    assert "laid out as Django's" in text and "miniature of SymPy's" in text and "plain unittest suite" in text


def test_demo_without_fixtures_is_bad_input(tmp_path):
    result = run_cli("demo", "--fixtures", str(tmp_path))
    assert result.returncode == 2
    assert "no fixtures found" in result.stderr


def test_crlf_test_patch_file_keeps_its_line_endings(tmp_path):
    import shutil

    from .runner_helpers import make_patch

    repo = tmp_path / "crlf"
    shutil.copytree(FIXTURES / "repos" / "intervals", repo)
    tests = repo / "tests" / "test_merge.py"
    tests.write_bytes(tests.read_bytes().replace(b"\n", b"\r\n"))
    added = "\r\n\r\ndef test_touching_crlf():\r\n    assert merge([(1, 2), (2, 3)]) == [Interval(1, 3)]\r\n"
    test_patch = make_patch(repo, {"tests/test_merge.py": tests.read_bytes().decode() + added}, tmp_path)
    assert "\r\n" in test_patch
    patch_file = tmp_path / "test.diff"
    patch_file.write_bytes(test_patch.encode())
    instance = json.loads((FIXTURES / "instances" / "intervals.json").read_text())
    instance.update(FAIL_TO_PASS=["tests/test_merge.py::test_touching_crlf"], test_patch="")
    instance_file = tmp_path / "instance.json"
    instance_file.write_text(json.dumps(instance))
    result = run_cli("grade", "--repo", str(repo), "--instance", str(instance_file), "--patch", patch("gold"),
                     "--test-patch", str(patch_file), "--json")  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    assert envelope_of(result)["score"]["resolved"] == "resolved"


# --- ids SWE-bench's logs cut at a space (issue 12, point 6) ---------------------------------

SWEBENCH_STATUSES = ("PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL")


def swebench_status_map(log: str) -> dict[str, str]:
    """SWE-bench 5.x ``parse_log_pytest``: the token after the status, so ids are cut at whitespace."""
    status_map = {}
    for line in log.split("\n"):
        if line.startswith(SWEBENCH_STATUSES):
            if line.startswith("FAILED"):
                line = line.replace(" - ", " ")
            words = line.split()
            if len(words) > 1:
                status_map[words[1]] = words[0]
    return status_map


def swebench_row(tmp_path, project: str) -> dict:
    """A dataset row made as SWE-bench makes one: run the tests (-rA) with the test patch, then with the
    gold patch too, read both logs with SWE-bench's parser and keep FAIL_TO_PASS and PASS_TO_PASS."""
    import shutil

    row = json.loads((FIXTURES / "instances" / f"{project}.json").read_text(encoding="utf-8"))
    work = tmp_path / f"{project}-logs"
    shutil.copytree(FIXTURES / "repos" / project, work)
    maps = []
    for diff in (row["test_patch"], row["patch"]):
        subprocess.run(["git", "apply", "-"], input=diff, text=True, cwd=work, check=True)
        log = subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "-p", "no:randomly"],
                             cwd=work, capture_output=True, text=True).stdout  # fmt: skip
        maps.append(swebench_status_map(log))
    before, after = maps
    row["FAIL_TO_PASS"] = json.dumps([t for t, s in after.items() if s == "PASSED" and before.get(t) != "PASSED"])
    row["PASS_TO_PASS"] = json.dumps([t for t, s in after.items() if s == "PASSED" and before.get(t) == "PASSED"])
    return row


@pytest.mark.slow
def test_grade_strict_matches_the_ids_a_swebench_row_holds_cut_at_a_space(tmp_path):
    row = swebench_row(tmp_path, "textstats")
    f2p, p2p = json.loads(row["FAIL_TO_PASS"]), json.loads(row["PASS_TO_PASS"])
    words = "tests/test_words.py::test_word_count"
    # "hello world" passes before and after, "hello  world" only after: one log key, which ends failing-then-passing
    assert f"{words}[hello" in f2p and f"{words}[crème" in f2p and f"{words}[tab-separated]" in f2p
    assert f"{words}[café" in p2p and f"{words}[don't" in p2p and f"{words}[hello" not in p2p
    instance = tmp_path / "row.json"
    instance.write_text(json.dumps(row, ensure_ascii=False), encoding="utf-8")
    args = ["--repo", str(FIXTURES / "repos" / "textstats"), "--instance", str(instance), "--ledger",
            str(tmp_path / "ledger.sqlite"), "--json"]  # fmt: skip

    gold = run_cli("grade", *args, "--patch", str(FIXTURES / "patches" / "textstats" / "gold.diff"))
    assert gold.returncode == 0, gold.stdout[-3000:] + gold.stderr
    envelope = envelope_of(gold)
    assert envelope["compat"] == "strict" and envelope["score"]["resolved"] == "resolved"
    tests = {t["id"]: t for t in envelope["tests"]}
    assert tests[f"{words}[hello"]["matched_by"] == "prefix"
    assert tests[f"{words}[hello"]["matched_ids"] == [f"{words}[hello world]", f"{words}[hello  world]"]
    assert tests[f"{words}[crème"]["matched_ids"] == [f"{words}[crème  brûlée]"]
    assert "matched_by" not in tests[f"{words}[tab-separated]"]
    assert list(envelope["score"]) == ["instance_id", "patch_ref", "resolved", "fail_to_pass", "pass_to_pass",
                                       "graded_by", "graded_at"]  # fmt: skip

    empty = run_cli("grade", *args, "--patch", str(FIXTURES / "patches" / "textstats" / "empty.diff"))
    assert empty.returncode == 1, empty.stdout[-3000:] + empty.stderr
    tests = {t["id"]: t for t in envelope_of(empty)["tests"]}
    # the cut id stands for a test that still fails: it does not pass, though "hello world" does
    assert tests[f"{words}[hello"]["status"] == "failed"
    assert tests[f"{words}[hello"]["matched"] == f"{words}[hello  world]"
    assert tests[f"{words}[café"]["status"] == "preserved"


# --- records out of reach: a ledger that fails after grading (issue 12, point 7) -------------


def refusing_ledger(path):
    """A real ledger that can be read but refuses every append (as a full disk would)."""
    import sqlite3

    from pytest_objective_scoring.ledger import Ledger

    with Ledger(path):
        pass
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON entries BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    conn.close()
    return path


def out_of_reach(tmp_path, kind):
    """A ledger path that cannot take the run, and the audit states a grading may then report."""
    import os

    if kind == "directory":
        (tmp_path / "ledger.sqlite").mkdir()
        return tmp_path / "ledger.sqlite", {"unknown"}
    if kind == "garbage":
        (tmp_path / "ledger.sqlite").write_bytes(b"SQLite format 3\0 but not really" + bytes(range(256)) * 8)
        return tmp_path / "ledger.sqlite", {"unknown"}
    if kind == "appends-refused":
        return refusing_ledger(tmp_path / "ledger.sqlite"), {"missing"}
    if kind == "read-only":
        if os.geteuid() == 0:
            pytest.skip("root writes read-only files")
        refusing = tmp_path / "ro"
        refusing.mkdir()
        from pytest_objective_scoring.ledger import Ledger

        with Ledger(refusing / "ledger.sqlite"):
            pass
        (refusing / "ledger.sqlite").chmod(0o444)
        refusing.chmod(0o555)
        return refusing / "ledger.sqlite", {"missing", "unknown"}  # a WAL ledger may need its folder to be read
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["appends-refused", "read-only"])  # a directory, a file that is not a ledger, one
# under a file: refused before work (tests/test_faults_cli.py)
def test_grade_keeps_its_verdict_when_the_ledger_fails(tmp_path, kind):
    ledger, states = out_of_reach(tmp_path, kind)
    out, receipt = tmp_path / "out" / "score.json", tmp_path / "receipt.json"
    out.parent.mkdir()
    result = run_cli("grade", *INTERVALS, "--patch", patch("gold"), "--ledger", str(ledger), "--out", str(out),
                     "--receipt", str(receipt), "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr  # resolved: the ledger's failure never changes the exit status
    envelope = envelope_of(result)
    assert envelope["score"]["resolved"] == "resolved"
    assert envelope["ledger"]["path"] == str(ledger) and envelope["ledger"]["seq"] is None
    assert envelope["ledger"]["error"], envelope["ledger"]
    said = [line for line in result.stderr.splitlines() if str(ledger) in line]
    assert len(said) == 1 and "NOT recorded" in said[0] and envelope["ledger"]["error"] in said[0], result.stderr
    assert json.loads(out.read_text()) == envelope  # the --out file says the same, ledger field included
    assert json.loads(receipt.read_text())["evidence"] == "private: not recorded"
    assert envelope["audit"]["state"] in states
    if envelope["audit"]["state"] == "unknown":  # the task's audit could not be read: the run is quarantined for it
        assert envelope["audit"]["state"] == "unknown" and str(ledger) in envelope["audit"]["reason"]
        assert envelope["integrity"]["disposition"] == "quarantined"
        assert "task_audit_unknown" in envelope["integrity"]["reasons"]


@pytest.mark.parametrize(
    ("report", "instance", "exit_status"),
    [("go/report.xml", "go-resolved", 0), ("go/report.xml", "go-not-resolved", 1), ("go/build-failed.xml", "go-resolved", 3)],
    ids=["resolved", "not-resolved", "no-verdict"],
)
def test_grade_from_report_keeps_its_exit_status_when_the_ledger_fails(tmp_path, report, instance, exit_status):
    ledger, _ = out_of_reach(tmp_path, "garbage")
    junit = FIXTURES / "junit"
    args = ["grade", "--from-report", str(junit / report), "--instance", str(junit / "instances" / f"{instance}.json"),
            "--ledger", str(ledger)]  # fmt: skip
    result = run_cli(*args)
    assert result.returncode == exit_status, result.stdout + result.stderr
    assert f"ledger: NOT written to {ledger}: not a ledger (file is not a database)" in result.stdout
    assert "task audit: unknown - the ledger" in result.stdout
    assert result.stderr.count("NOT recorded") == 1
    assert f"the verdict stands: exit {exit_status}" in result.stderr
    assert ledger.read_bytes().startswith(b"SQLite format 3\0 but not really")  # never overwritten
    recorded = run_cli(*args[:-1], str(tmp_path / "good.sqlite"), "--json")
    assert recorded.returncode == exit_status
    assert envelope_of(recorded)["ledger"] == {"path": str(tmp_path / "good.sqlite"), "seq": 1}


def test_a_locked_ledger_is_waited_for_then_reported(tmp_path, monkeypatch, capsys):
    import sqlite3

    from pytest_objective_scoring import cli, ledger as ledger_module
    from pytest_objective_scoring.ledger import Ledger

    path = tmp_path / "ledger.sqlite"
    with Ledger(path):
        pass
    monkeypatch.setattr(ledger_module, "BUSY_TIMEOUT_S", 0.2)
    lock = sqlite3.connect(path, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        junit = FIXTURES / "junit"
        status = cli.main(["grade", "--from-report", str(junit / "go" / "report.xml"), "--instance",
                           str(junit / "instances" / "go-not-resolved.json"), "--ledger", str(path), "--json"])  # fmt: skip
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    captured = capsys.readouterr()
    assert status == 1
    envelope = json.loads(captured.out)
    assert envelope["ledger"] == {"path": str(path), "seq": None, "error": "cannot be opened (database is locked)"}
    assert envelope["audit"]["state"] == "missing"  # a writer's lock does not stop readers
    assert (f"ledger {path}: the run was NOT recorded: cannot be opened (database is locked) (the verdict stands: "
            "exit 1)") in captured.err  # fmt: skip


def test_the_verdict_is_written_before_the_ledger_is_appended(tmp_path):
    import sqlite3
    import time

    from pytest_objective_scoring.ledger import Ledger

    ledger, out = tmp_path / "ledger.sqlite", tmp_path / "score.json"
    with Ledger(ledger):
        pass
    lock = sqlite3.connect(ledger, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")  # the grader will wait for it (up to 60 s) before it can append
    process = subprocess.Popen([sys.executable, "-m", "pytest_objective_scoring", "grade", *INTERVALS, "--patch",
                                patch("break_p2p"), "--ledger", str(ledger), "--out", str(out), "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not out.exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        early = json.loads(out.read_text())  # written whole (a rename), while the grader waits on the ledger
        assert process.poll() is None
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 1, stderr
    assert early["score"]["resolved"] == "not_resolved"
    assert early["ledger"] == {"path": str(ledger), "seq": None, "pending": True}
    final = json.loads(out.read_text())
    assert final["ledger"] == {"path": str(ledger), "seq": 1} == json.loads(stdout)["ledger"]
    assert final["score"] == early["score"]


@pytest.mark.slow
def test_grade_batch_keeps_every_verdict_when_the_ledger_refuses_them(tmp_path):
    ledger = refusing_ledger(tmp_path / "ledger.sqlite")
    preds = tmp_path / "preds.jsonl"
    rows = (FIXTURES / "predictions" / "fixtures.jsonl").read_text().splitlines()
    preds.write_text("\n".join(r for r in rows if json.loads(r)["model_name_or_path"] in ("cheap-fix", "breaks-things")))
    args = ["grade-batch", "--dataset", str(FIXTURES / "datasets" / "fixtures.jsonl"), "--predictions", str(preds),
            "--repos", str(FIXTURES / "repos"), "--timeout", "120", "--json", "--log-dir", str(tmp_path / "logs")]  # fmt: skip
    result = run_cli(*args, "--ledger", str(ledger))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert sorted(r["failure_class"] for r in report["results"]) == ["not_resolved"] * 3 + ["resolved"] * 3
    assert all(r["ledger_seq"] is None and r["ledger_error"] == "database or disk is full" for r in report["results"])
    assert report["ledger_error"] == {"unrecorded": 6, "error": "database or disk is full"}
    assert [line for line in result.stderr.splitlines() if "NOT" in line] == [
        f"objective-score grade-batch: ledger {ledger}: a claim could NOT be recorded: database or disk is full "
        "(grading goes on without claims; a run at the same time could grade the same jobs)",
        f"objective-score grade-batch: ledger {ledger}: a result was NOT recorded: database or disk is full (grading "
        "goes on; every verdict is in the report, and a rerun grades the unrecorded ones again)",
        f"objective-score grade-batch: ledger {ledger}: 6 of 6 result(s) NOT recorded (database or disk is full); "
        "their verdicts are in this command's output only",
    ]
    # a ledger that cannot even be opened stops the batch before anything is graded
    (tmp_path / "dir.sqlite").mkdir()
    refused = run_cli(*args, "--ledger", str(tmp_path / "dir.sqlite"))
    assert refused.returncode == 2
    assert "dir.sqlite: a directory, not a ledger file" in refused.stderr and refused.stderr.count("\n") == 1


# ---------------------------------------------------------------- --environments in audit run and ab run


@pytest.mark.slow
def test_audit_run_grades_each_task_with_its_environment_and_refuses_bad_ones(tmp_path):
    from pytest_objective_scoring.ledger import Ledger

    from .test_batch import second_venv

    other = second_venv(tmp_path / "other")
    ledger = tmp_path / "ledger.sqlite"
    args = ["audit", "run", "--instance", str(FIXTURES / "instances" / "textstats.json"), "--repo",
            str(FIXTURES / "repos" / "textstats"), "--repeats", "1", "--ledger", str(ledger), "--json"]  # fmt: skip
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"fixtures/textstats@1.0": str(tmp_path / "missing" / "python")}))
    refused = run_cli(*args, "--environments", str(bad))
    assert refused.returncode == 2 and not ledger.exists()
    assert refused.stderr.strip() == (f"objective-score audit: error: {bad} ['fixtures/textstats@1.0']: python "
                                      f"'{tmp_path / 'missing' / 'python'}': no such file ({tmp_path / 'missing' / 'python'}): "
                                      "expected an executable interpreter")  # fmt: skip
    uncovered = run_cli(*args, "--environments", str(_envs(tmp_path, {"fixtures__intervals-1": sys.executable})))
    assert uncovered.returncode == 2 and "no environment for instance 'fixtures__textstats-1'" in uncovered.stderr
    envs = _envs(tmp_path, {"fixtures/textstats@1.0": str(other)})
    ran = run_cli(*args, "--environments", str(envs))
    assert ran.returncode in (0, 1), ran.stderr
    [audit] = json.loads(ran.stdout)["audits"]
    assert audit["complete"], audit
    with Ledger(ledger) as opened:
        [entry] = [e.data for e in opened.entries("audit")]
    assert entry["environment"]["python"] == str(other) and entry["environment"]["from"] == f"{envs} ['fixtures/textstats@1.0']"
    assert entry["environment"]["interpreter"].startswith("sha256:")


def _envs(tmp_path, data) -> object:
    path = tmp_path / "envs.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.slow
def test_ab_run_grades_each_task_with_its_environment_and_refuses_bad_ones(tmp_path):
    from pytest_objective_scoring.ledger import Ledger

    from .test_ab import BASELINE, CANDIDATE, ab_cli, arm_file, experiment, run_arms
    from .test_batch import second_venv

    ledger, manifest = experiment(tmp_path, seeds=[1, 2])
    assert ab_cli("preregister", str(manifest), ledger=ledger).returncode == 0
    baseline = arm_file(tmp_path, "baseline", BASELINE, dollars=0.10, seeds=(1, 2))
    candidate = arm_file(tmp_path, "candidate", CANDIDATE, dollars=0.12, seeds=(1, 2))
    uncovered = run_arms(manifest, ledger, baseline, candidate, "--environments",
                         str(_envs(tmp_path, {"fixtures__textstats-1": sys.executable})))  # fmt: skip
    assert uncovered.returncode == 2
    assert "2 environment problems:" in uncovered.stderr and "no environment for instance 'fixtures__intervals-1'" in uncovered.stderr
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    no_pytest = run_arms(manifest, ledger, baseline, candidate, "--python", str(bare / "bin" / "python"))
    assert no_pytest.returncode == 2 and f"--python {bare / 'bin' / 'python'}: cannot import pytest" in no_pytest.stderr
    with Ledger(ledger) as opened:
        assert not list(opened.entries("score")), "refused before anything was graded"
    other = second_venv(tmp_path / "other")
    envs = _envs(tmp_path, {"fixtures__textstats-1": str(other)})
    result = run_arms(manifest, ledger, baseline, candidate, "--environments", str(envs), "--python", sys.executable, "--json")
    assert result.returncode == 0, result.stderr
    details = json.loads(result.stdout)["details"]
    assert details["identity"][0]["interpreter"].startswith(f"per instance: {envs} (sha256 ")
    with Ledger(ledger) as opened:
        pythons = {(e.data["instance_id"], e.data["python"]) for e in opened.entries("score")}
    assert pythons == {("fixtures__textstats-1", str(other)), ("fixtures__intervals-1", sys.executable),
                       ("fixtures__csvlite-1", sys.executable)}  # fmt: skip


# ---------------------------------------------------------------- checks before work (issue 14, point 5)

DATASET = FIXTURES / "datasets" / "fixtures.jsonl"
PREDICTIONS = FIXTURES / "predictions" / "fixtures.jsonl"


def one_line_refusal(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def output_cases(tmp_path):
    """(command line, option, path, what is said): every command that writes an output, each given a bad one."""
    folder, a_file, missing = tmp_path / "folder", tmp_path / "a-file", tmp_path / "missing" / "dir"
    folder.mkdir()
    a_file.write_text("")
    ledger = ["--ledger", str(tmp_path / "ledger.sqlite")]
    grade = ["grade", *INTERVALS, "--patch", patch("gold"), *ledger]
    return [
        ([*grade, "--out", str(folder)], "--out", folder, "is a directory: expected a file"),
        ([*grade, "--out", str(missing / "x.json")], "--out", missing / "x.json",
         f"the folder {missing} does not exist (missing folders are not created: make it first)"),
        ([*grade, "--receipt", str(a_file / "r.json")], "--receipt", a_file / "r.json", f"{a_file} is not a folder"),
        (["grade-batch", "--dataset", str(DATASET), "--predictions", str(PREDICTIONS), "--repos", str(FIXTURES / "repos"),
          *ledger, "--report", str(folder)], "--report", folder, "is a directory: expected a file"),
        (["grade-samples", "--problems", str(a_file), "--samples", str(a_file), "--out", str(folder)], "--out", folder,
         "is a directory: expected a file"),
        (["ledger", "export", *ledger, "--out", str(folder)], "--out", folder, "is a directory: expected a file"),
        (["harbor", "run", str(FIXTURES / "harbor" / "fix-csv-total"), "--workdir", str(folder), "--out", str(a_file),
          "--no-ledger"], "--out", a_file, "is a file: expected a folder"),
        (["ab", "report", "exp-1", *ledger, "--out", str(a_file)], "--out", a_file, "is a file: expected a folder"),
        (["ab", "report", "exp-1", *ledger, "--out", str(missing)], "--out", missing, f"the folder {missing.parent} does not exist"),
    ]  # fmt: skip


def test_every_output_path_is_checked_before_any_work(tmp_path):
    for args, option, path, said in output_cases(tmp_path):
        result = run_cli(*args)
        one_line_refusal(result, f"{option} {path}: ", said)
        assert not (tmp_path / "ledger.sqlite").exists(), f"{args[0]}: nothing was done (no ledger made)"
        assert not (tmp_path / "missing").exists(), "no missing folder was created"
        assert not any((tmp_path / "folder").iterdir()), "nothing was written"


@pytest.mark.skipif(sys.platform == "win32" or __import__("os").geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_output_place_is_refused_before_grading(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        result = run_cli("grade", *INTERVALS, "--patch", patch("gold"), "--no-ledger", "--out", str(locked / "s.json"))
        one_line_refusal(result, f"--out {locked / 's.json'}: the folder {locked} cannot be written (permission denied)")
    finally:
        locked.chmod(0o700)


def test_the_output_checks_are_pure_and_name_the_option(tmp_path):
    from pytest_objective_scoring import outputs

    (tmp_path / "f").write_text("")
    assert outputs.file_problem("--out", tmp_path / "new.json") is None
    assert outputs.file_problem("--out", tmp_path / "f") is None, "an existing file is overwritten"
    assert outputs.file_problem("--out", "/dev/stdout") is None, "a special file is written in place"
    assert outputs.file_problem("--out", "relative.json") is None, "the current folder"
    assert outputs.file_problem("--out", "") == "--out: expected a file name, got an empty one"
    assert outputs.dir_problem("--out", tmp_path / "new") is None, "a missing DIR is made, its parent exists"
    assert outputs.dir_problem("--out", tmp_path / "a" / "b").endswith("does not exist (missing folders are not created: make it first)")
    assert outputs.dir_problem("--out", tmp_path / "f") == f"--out {tmp_path / 'f'}: is a file: expected a folder"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"], "nothing was created"


def test_a_pipe_closed_by_the_reader_ends_quietly(tmp_path):
    ledger = tmp_path / "l.sqlite"
    made = run_cli("sets", "create", "regression", "--role", "regression", "--dataset", str(DATASET),
                   "--source", "static:fixtures", "--ledger", str(ledger))  # fmt: skip
    assert made.returncode == 0, made.stderr
    for args in (("sets", "show", "regression", "--ledger", str(ledger), "--json"), ("--help",)):
        process = subprocess.Popen([sys.executable, "-m", "pytest_objective_scoring", *args], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)  # fmt: skip
        process.stdout.close()  # the reader is gone before the command writes (as `| head` after its lines)
        _, err = process.communicate(timeout=120)
        # 141 (128 + SIGPIPE) for every output, --help's too (argparse alone would ignore the closed pipe)
        assert process.returncode == 141, (args, err.decode())
        assert err.decode() == "", "quietly: no traceback, no message"
    shown = subprocess.run(f"{sys.executable} -m pytest_objective_scoring sets show regression --ledger {ledger} --json | head -1",
                           shell=True, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert shown.stdout == "{\n" and shown.stderr == ""


def test_a_missing_cluster_extra_is_named_before_grading(tmp_path):
    import os

    blocked = tmp_path / "blocked" / "distributed"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('dask.distributed is not installed (test)')\n")
    ledger = tmp_path / "l.sqlite"
    env = {**os.environ, "PYTHONPATH": str(blocked.parent)}
    result = run_cli("grade-batch", "--dataset", str(DATASET), "--predictions", str(PREDICTIONS), "--repos",
                     str(FIXTURES / "repos"), "--ledger", str(ledger), "--scheduler", "tcp://127.0.0.1:1", env=env)  # fmt: skip
    one_line_refusal(result, "--scheduler needs dask.distributed", "pip install 'pytest-objective-scoring[cluster]'")
    assert not ledger.exists(), "nothing was graded"


def test_demo_with_a_missing_interpreter_is_one_line(tmp_path):
    one_line_refusal(run_cli("demo", "--python", "/nope"), "objective-score demo: error: --python /nope: no such interpreter")
    one_line_refusal(run_cli("demo", "--python", str(tmp_path)), f"--python {tmp_path}: a directory, not an interpreter")


def test_a_binary_file_given_as_text_input_is_one_line(tmp_path):
    binary = tmp_path / "image.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    ledger = tmp_path / "l.sqlite"
    one_line_refusal(run_cli("ab", "preregister", str(binary), "--ledger", str(ledger)),
                     f"{binary}: not a UTF-8 text file (byte 0x89 at offset 0): expected a JSON manifest")  # fmt: skip
    one_line_refusal(run_cli("import-judged", str(binary), "--benchmark", "b", "--judge", "j", "--ledger", str(ledger)),
                     f"{binary}: not a UTF-8 text file (byte 0x89 at offset 0): expected JSONL or JSON rows")  # fmt: skip
    assert not ledger.exists()


@pytest.mark.slow
def test_the_built_wheel_carries_the_demo_and_it_runs_from_any_folder(tmp_path):
    import shutil
    import zipfile

    root = Path(__file__).resolve().parents[1]
    source = tmp_path / "source"  # built from a copy: the build leaves nothing in the checkout
    shutil.copytree(root, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".objective-scoring", "logs"))  # fmt: skip
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(tmp_path / "dist")],
                           capture_output=True, text=True, timeout=600)  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(tmp_path / "site")
    demo = [n for n in names if "/demo_fixtures/" in n]
    assert "pytest_objective_scoring/demo_fixtures/instances/textstats.json" in demo
    assert "pytest_objective_scoring/demo_fixtures/patches/intervals/gold.diff" in demo
    assert "pytest_objective_scoring/demo_fixtures/repos/csvlite/pyproject.toml" in demo
    assert "pytest_objective_scoring/demo_fixtures/repos/sympy-mini/bin/test" in demo  # a runner script: no .py
    assert "pytest_objective_scoring/data/swebench_specs.json" in names  # the runners' table
    assert not [n for n in demo if "__pycache__" in n or n.endswith(".pyc")]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()  # no fixtures/ here, and not the source tree: the installed package's own demo data
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); import pytest_objective_scoring as p; "
            "assert p.__file__.startswith(sys.argv[1]), p.__file__; from pytest_objective_scoring.commands import demo; "
            "found = demo.find_fixtures(None); print(json.dumps([str(found), [c[:2] for c in demo.demo_cases(found)]]))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "site")], cwd=elsewhere, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    found, cases = json.loads(done.stdout)
    assert found == str(tmp_path / "site" / "pytest_objective_scoring" / "demo_fixtures") and len(cases) == 28
    data = Path(found)  # and cases grade from there, as the demo does: pytest's, and SymPy's bin/test
    for project in ("intervals", "sympy-mini"):
        graded = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                                 "from pytest_objective_scoring.cli import main; sys.exit(main(sys.argv[2:]))",
                                 str(tmp_path / "site"), "grade", "--repo", str(data / "repos" / project),
                                 "--instance", str(data / "instances" / f"{project}.json"),
                                 "--patch", str(data / "patches" / project / "gold.diff"), "--no-ledger", "--json"],
                                cwd=elsewhere, capture_output=True, text=True, timeout=600)  # fmt: skip
        assert graded.returncode == 0, graded.stderr[-2000:]
        assert json.loads(graded.stdout)["score"]["resolved"] == "resolved"
