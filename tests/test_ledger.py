"""The append-only ledger: chain, refusals, verification, concurrent and killed writers (real SQLite files)."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from pytest_objective_scoring.ledger import GENESIS, Ledger, LedgerError, verify

WRITER = """
import sys
from pytest_objective_scoring.ledger import Ledger
ledger = Ledger(sys.argv[1])
for i in range(int(sys.argv[3])):
    ledger.append("score", {"writer": sys.argv[2], "i": i})
"""


def test_entries_are_chained_and_verify(tmp_path):
    with Ledger(tmp_path / "l.sqlite") as ledger:
        first = ledger.append("score", {"instance_id": "a", "resolved": "resolved"})
        second = ledger.append("cost", {"cpu": 1.5})
        assert (first.seq, first.prev_hash) == (1, GENESIS)
        assert (second.seq, second.prev_hash) == (2, first.hash)
        assert [e.data for e in ledger.entries("cost")] == [{"cpu": 1.5}]
        assert len(ledger) == 2
    result = verify(tmp_path / "l.sqlite")
    assert result.ok and result.rows == 2


@pytest.mark.parametrize("statement", ["UPDATE entries SET body = '{}' WHERE seq = 1", "DELETE FROM entries WHERE seq = 1"],
                         ids=["update", "delete"])  # fmt: skip
def test_the_database_refuses_updates_and_deletes(tmp_path, statement):
    with Ledger(tmp_path / "l.sqlite") as ledger:
        ledger.append("score", {"x": 1})
    conn = sqlite3.connect(tmp_path / "l.sqlite")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute(statement)
    conn.close()


def _tamper(path, *statements):
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER entries_no_update")
    conn.execute("DROP TRIGGER entries_no_delete")
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


def _three(path):
    with Ledger(path) as ledger:
        for i in range(3):
            ledger.append("score", {"i": i})


def test_verify_names_an_edited_row(tmp_path):
    path = tmp_path / "l.sqlite"
    _three(path)
    _tamper(path, "UPDATE entries SET body = '{\"i\":42}' WHERE seq = 2")
    problems = verify(path).problems
    assert "row 2 (score) was edited: its content no longer matches its hash" in problems
    assert "the append-only trigger entries_no_update was removed" in problems


def test_verify_names_a_removed_row(tmp_path):
    path = tmp_path / "l.sqlite"
    _three(path)
    _tamper(path, "DELETE FROM entries WHERE seq = 2")
    problems = verify(path).problems
    assert "rows 2..2 are missing (removed)" in problems
    assert "row 3 does not follow the row before it (a row was removed or reordered)" in problems


def test_verify_names_reordered_rows(tmp_path):
    path = tmp_path / "l.sqlite"
    _three(path)
    _tamper(path, "UPDATE entries SET seq = 10 WHERE seq = 2", "UPDATE entries SET seq = 2 WHERE seq = 3",
            "UPDATE entries SET seq = 3 WHERE seq = 10")  # fmt: skip
    assert not verify(path).ok
    assert any("row 2" in p for p in verify(path).problems)


def test_parallel_writers_lose_and_duplicate_nothing(tmp_path):
    path = tmp_path / "l.sqlite"
    Ledger(path).close()
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{n}", "50"]) for n in range(4)]
    assert [w.wait(timeout=300) for w in writers] == [0, 0, 0, 0]
    with Ledger(path) as ledger:
        bodies = [(e.data["writer"], e.data["i"]) for e in ledger.entries()]
    assert sorted(bodies) == sorted((f"w{n}", i) for n in range(4) for i in range(50))
    result = verify(path)
    assert result.ok and result.rows == 200


def test_a_writer_killed_mid_run_leaves_a_valid_ledger(tmp_path):
    path = tmp_path / "l.sqlite"
    Ledger(path).close()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), "victim", "100000"])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.2)
        with Ledger(path) as ledger:
            if len(ledger) >= 20:
                break
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    result = verify(path)
    assert result.ok, result.problems
    assert result.rows >= 20
    with Ledger(path) as ledger:  # and it can be appended to afterwards
        ledger.append("score", {"after": True})
    assert verify(path).ok


def test_not_a_ledger_is_refused(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_text("this is not sqlite " * 100)
    with pytest.raises(LedgerError, match="not a ledger"):
        Ledger(bad)
    with pytest.raises(LedgerError, match="no such ledger"):
        verify(tmp_path / "missing.sqlite")


def test_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "l.sqlite"
    Ledger(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(LedgerError, match="schema version 99"):
        Ledger(path)


# ---------------------------------------------------------------- recording graded runs


def test_grade_appends_score_and_cost_and_the_cli_reads_them(tmp_path):
    from .conftest import FIXTURES
    from .runner_helpers import run_cli

    ledger = tmp_path / "runs.sqlite"
    common = ["--repo", str(FIXTURES / "repos" / "intervals"), "--instance", str(FIXTURES / "instances" / "intervals.json"),
              "--ledger", str(ledger)]  # fmt: skip
    gold = run_cli("grade", *common, "--patch", str(FIXTURES / "patches" / "intervals" / "gold.diff"))
    assert gold.returncode == 0 and f"ledger: entry 1 appended to {ledger}" in gold.stdout
    run_cli("grade", *common, "--patch", str(FIXTURES / "patches" / "intervals" / "break_p2p.diff"))
    with Ledger(ledger) as opened:
        scores = [e.data for e in opened.entries("score")]
        costs = [e.data for e in opened.entries("cost")]
    assert [s["score"]["resolved"] for s in scores] == ["resolved", "not_resolved"]
    assert [s["failure_class"] for s in scores] == ["none", "solver"]
    assert len(scores[0]["tests"]) == 13 and {t["status"] for t in scores[0]["tests"]} == {"passed", "preserved"}
    assert costs[0]["cost"]["cpu"] > 0 and costs[0]["score_seq"] == 1
    assert set(costs[0]["cost"]) == {"tokens", "calls", "cpu", "wall_time", "dollars"}
    shown = run_cli("ledger", "show", "--ledger", str(ledger), "--json")
    assert [row["resolved"] for row in json.loads(shown.stdout)] == ["resolved", "not_resolved"]
    table = run_cli("ledger", "show", "--ledger", str(ledger))
    assert "fixtures__intervals-1" in table.stdout and "not_resolved" in table.stdout
    verified = run_cli("ledger", "verify", "--ledger", str(ledger), "--json")
    assert verified.returncode == 0 and json.loads(verified.stdout) == {"ledger": str(ledger), "rows": 6, "ok": True,
                                                                       "problems": []}  # fmt: skip
    exported = run_cli("ledger", "export", "--ledger", str(ledger))
    kinds = [json.loads(line)["kind"] for line in exported.stdout.splitlines()]
    assert kinds == ["score", "cost", "scorecard"] * 2
    _tamper(ledger, "UPDATE entries SET body = '{}' WHERE seq = 4")
    broken = run_cli("ledger", "verify", "--ledger", str(ledger))
    assert broken.returncode == 1 and "row 4 (score) was edited" in broken.stdout


def test_no_ledger_and_missing_ledger(tmp_path):
    from .conftest import FIXTURES
    from .runner_helpers import run_cli

    result = run_cli("grade", "--repo", str(FIXTURES / "repos" / "intervals"), "--instance",
                     str(FIXTURES / "instances" / "intervals.json"), "--patch",
                     str(FIXTURES / "patches" / "intervals" / "gold.diff"), "--no-ledger", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0 and "ledger:" not in result.stdout
    assert not (tmp_path / ".objective-scoring").exists()
    missing = run_cli("ledger", "verify", "--ledger", str(tmp_path / "nope.sqlite"))
    assert missing.returncode == 2 and "no such ledger" in missing.stderr


def test_the_plugin_records_to_the_rootdir_ledger(pytester):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    (pytester.path / "i.json").write_text(json.dumps({"instance_id": "p-1", "FAIL_TO_PASS": ["test_a.py::test_a"],
                                                      "PASS_TO_PASS": []}))  # fmt: skip
    result = pytester.runpytest_subprocess("--objective-score=i.json")
    result.stdout.fnmatch_lines(["ledger: entry 1 appended to *.objective-scoring*ledger.sqlite"])
    with Ledger(pytester.path / ".objective-scoring" / "ledger.sqlite") as ledger:
        (entry,) = ledger.entries("score")
    assert entry.data["source"] == "plugin" and entry.data["score"]["resolved"] == "resolved"
    custom = pytester.path / "elsewhere.sqlite"
    pytester.runpytest_subprocess("--objective-score=i.json", f"--objective-ledger={custom}")
    assert verify(custom).rows == 2  # the score and its cost
    quiet = pytester.runpytest_subprocess("--objective-score=i.json", "--objective-no-ledger")
    assert "ledger:" not in quiet.stdout.str()
    assert verify(pytester.path / ".objective-scoring" / "ledger.sqlite").rows == 2
