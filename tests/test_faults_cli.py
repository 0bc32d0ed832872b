"""Fault injection (issue 28), the command line's own checks before work: numbers out of range,
argparse's refusals as one line, output paths that are link loops or sit under a file, ledgers and
log folders in missing folders. Each is refused with one line and exit 2, before any work."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import FIXTURES
from .runner_helpers import run_cli_here

REPO = FIXTURES / "repos" / "intervals"
INSTANCE = FIXTURES / "instances" / "intervals.json"
GOLD = FIXTURES / "patches" / "intervals" / "gold.diff"
GRADE = ("grade", "--repo", str(REPO), "--instance", str(INSTANCE), "--patch", str(GOLD))


def _one_line_refusal(result, *words: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and "usage:" not in result.stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--timeout", "inf"), ("--timeout", "at most 604800")),
        (("--timeout", "1e309"), ("--timeout", "at most")),
        (("--timeout", "nan"), ("--timeout", "more than 0")),
        (("--timeout", "0"), ("--timeout", "more than 0")),
        (("--max-output", "0"), ("--max-output", "from 1024")),
        (("--max-output", "1" * 5000), ("--max-output", "5000 characters")),
        (("--max-patch-size", str(1 << 40)), ("--max-patch-size", "from 1 to 1073741824")),
        (("--max-patch-size", "-1"), ("--max-patch-size",)),
        (("--reruns", "1000000"), ("--reruns", "from 0 to 100")),
    ],
)
def test_numbers_out_of_range_are_refused_before_work(tmp_path, args, words):
    result = run_cli_here(*GRADE, "--no-ledger", *args, cwd=tmp_path)
    _one_line_refusal(result, *words)
    assert list(tmp_path.iterdir()) == [], "nothing was made: refused before work"


@pytest.mark.parametrize(
    "argv",
    [
        ("grade-batch", "--dataset", "d.json", "--predictions", "p.jsonl", "--workers", "0"),
        ("grade-batch", "--dataset", "d.json", "--predictions", "p.jsonl", "--max_workers", "100000"),
        ("ab", "run", "--workers", "0"),
        ("audit", "run", "--instance", "i.json", "--repo", ".", "--repeats", "0"),
        ("audit", "run", "--instance", "i.json", "--repo", ".", "--repeats", "1000000"),
    ],
)
def test_worker_and_repeat_counts_out_of_range_are_one_line(tmp_path, argv):
    _one_line_refusal(run_cli_here(*argv, cwd=tmp_path), "must be from")


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (("grade",), ("required: --instance", "objective-score grade --help")),
        (("nosuch",), ("invalid choice", "objective-score --help")),
        (("grade", "--instnace", "x"), ("unrecognized arguments: --instnace",)),
        (("ledger", "show", "--kind"), ("expected one argument",)),
    ],
)
def test_argparse_refusals_are_one_line_without_the_usage_block(tmp_path, argv, words):
    _one_line_refusal(run_cli_here(*argv, cwd=tmp_path), *words)


def test_an_output_that_is_a_link_loop_is_one_line(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    _one_line_refusal(run_cli_here(*GRADE, "--no-ledger", "--out", str(tmp_path / "a")), "--out", "link loop")


def test_an_output_under_a_file_and_one_with_a_name_too_long_are_one_line(tmp_path):
    (tmp_path / "file").write_text("x")
    _one_line_refusal(run_cli_here(*GRADE, "--no-ledger", "--out", str(tmp_path / "file" / "v.json")),
                      "--out", f"{tmp_path / 'file'} is not a folder")  # fmt: skip
    _one_line_refusal(run_cli_here(*GRADE, "--no-ledger", "--out", str(tmp_path / "file" / "sub" / "v.json")),
                      "--out", "a file stands where a folder")  # fmt: skip
    _one_line_refusal(run_cli_here(*GRADE, "--no-ledger", "--receipt", str(tmp_path / ("r" * 300))),
                      "--receipt", "too long")  # fmt: skip


@pytest.mark.parametrize(
    "argv",
    [
        GRADE,
        ("ledger", "show"),
        ("demo",),
    ],
)
def test_a_ledger_is_never_made_in_a_missing_folder(tmp_path, argv):
    ledger = tmp_path / "missing" / "ledger.sqlite"
    result = run_cli_here(*argv, "--ledger", str(ledger), cwd=tmp_path)
    _one_line_refusal(result, f"--ledger {ledger}", "does not exist")
    assert not (tmp_path / "missing").exists()


def test_a_ledger_under_a_file_is_refused_before_work(tmp_path):
    (tmp_path / "plain").write_text("a file, not a folder")
    result = run_cli_here(*GRADE, "--ledger", str(tmp_path / "plain" / "ledger.sqlite"), cwd=tmp_path)
    _one_line_refusal(result, "--ledger", f"{tmp_path / 'plain'} is not a folder")


def test_the_ledger_from_the_environment_follows_the_same_rule(tmp_path, monkeypatch):
    ledger = tmp_path / "missing" / "ledger.sqlite"
    monkeypatch.setenv("OBJECTIVE_SCORE_LEDGER", str(ledger))
    _one_line_refusal(run_cli_here(*GRADE, cwd=tmp_path), "does not exist")
    assert not (tmp_path / "missing").exists()


def test_the_default_ledger_folder_is_still_made(tmp_path, monkeypatch):
    monkeypatch.delenv("OBJECTIVE_SCORE_LEDGER", raising=False)
    result = run_cli_here(*GRADE, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / ".objective-scoring" / "ledger.sqlite").is_file()


def test_a_log_folder_in_a_missing_folder_is_refused(tmp_path):
    result = run_cli_here("grade-batch", "--dataset", str(INSTANCE), "--predictions", str(GOLD),
                          "--log-dir", str(tmp_path / "missing" / "logs"), cwd=tmp_path)  # fmt: skip
    _one_line_refusal(result, "--log-dir", "does not exist")
    assert not (tmp_path / "missing").exists()


def test_file_checks_never_raise_on_odd_paths(tmp_path):
    """Every odd path is a line, never an exception (the checks run before every command)."""
    from pytest_objective_scoring.outputs import dir_problem, file_problem

    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "file").write_text("")
    odd = [tmp_path / "loop", tmp_path / "loop" / "x", tmp_path / "file" / "x", tmp_path / ("n" * 300),
           Path("/dev/null"), tmp_path, tmp_path / "file"]  # fmt: skip
    for path in odd:
        for check in (file_problem, dir_problem):
            answer = check("--out", path)
            assert answer is None or "\n" not in answer
    assert file_problem("--out", "/dev/null") is None
    assert dir_problem("--out", tmp_path / "new") is None
    assert "link loop" in file_problem("--out", tmp_path / "loop")


@pytest.mark.skipif(os.geteuid() == 0, reason="root enters any folder: CI runs this as a user that is not root")
def test_an_output_in_a_folder_that_cannot_be_entered_is_one_line(tmp_path):
    locked = tmp_path / "locked"
    (locked / "in").mkdir(parents=True)
    locked.chmod(0)
    try:
        _one_line_refusal(run_cli_here(*GRADE, "--no-ledger", "--out", str(locked / "in" / "v.json")),
                          "--out", "permission denied")  # fmt: skip
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize("kind", ["json", "reportlog"])
def test_a_report_holding_a_number_past_pythons_limit_is_one_line(tmp_path, kind):
    """A 5,000-digit integer in a pytest-json-report or a reportlog line: said where it stands."""
    big = "1" * 5000
    node = "tests/test_interval.py::TestInterval::test_length"
    if kind == "json":
        report = tmp_path / "r.json"
        report.write_text('{"tests": [{"nodeid": "%s", "outcome": "passed", "x": %s}]}' % (node, big))
    else:
        report = tmp_path / "r.jsonl"
        report.write_text('{"pytest_version": "8.0", "$report_type": "SessionStart"}\n'
                          '{"$report_type": "TestReport", "nodeid": "%s", "when": "call", "outcome": "passed", '
                          '"x": %s}\n' % (node, big))  # fmt: skip
    result = run_cli_here("grade", "--instance", str(INSTANCE), "--from-report", str(report), "--no-ledger")
    _one_line_refusal(result, "--from-report", "a number of 5000 digits, more than the")


def test_nesting_loads_refuses_a_long_number_as_json_says_a_syntax_error():
    import json

    from pytest_objective_scoring import nesting

    with pytest.raises(json.JSONDecodeError) as caught:
        nesting.loads('{"a": [1, ' + "9" * 5000 + "]}")
    assert caught.value.pos == 10 and "5000 digits" in caught.value.msg


def test_an_environments_file_is_read_once_never_hanging_on_a_pipe(tmp_path):
    """``--environments`` was read with read_bytes (a FIFO with no writer hung grade-batch), and read
    again for its digest (``<(...)`` gave none)."""
    import hashlib
    import subprocess
    import sys

    from pytest_objective_scoring.environments import EnvironmentsError, load_environments

    fifo = tmp_path / "env.json"
    os.mkfifo(fifo)
    with pytest.raises(EnvironmentsError, match="a named pipe nobody writes to"):
        load_environments(fifo)
    with pytest.raises(EnvironmentsError, match="a device"):
        load_environments("/dev/zero")
    text = '{"fixtures__intervals-1": "%s"}' % sys.executable
    found = subprocess.run(["bash", "-c", f"{sys.executable} -c 'import sys; from pytest_objective_scoring.environments "
                            f"import load_environments as l; print(l(sys.argv[1]).sha256)' <(printf '%s' '{text}')"],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert found.stdout.strip() == hashlib.sha256(text.encode()).hexdigest(), found.stderr


def test_an_output_whose_name_fits_is_written_whatever_its_length(tmp_path):
    """The temporary file beside an output had a name 37 bytes longer: a 230-byte name passed the
    check before work and then failed to be written."""
    from pytest_objective_scoring import atomic

    target = tmp_path / ("v" * 250)
    atomic.write_whole(target, b"{}")
    assert target.read_bytes() == b"{}" and [p.name for p in tmp_path.iterdir()] == [target.name]


def test_an_environments_test_cmd_the_pytest_runner_would_ignore_is_refused(tmp_path):
    """An environments file's ``test_cmd`` for an instance graded by pytest was silently ignored."""
    import json
    import sys

    envs = tmp_path / "envs.json"
    envs.write_text(json.dumps({"fixtures__intervals-1": {"python": sys.executable, "test_cmd": "pytest -x -k nothing"}}))
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(json.dumps({"instance_id": "fixtures__intervals-1", "model_name_or_path": "m",
                                       "model_patch": GOLD.read_text()}) + "\n")  # fmt: skip
    result = run_cli_here("grade-batch", "--dataset", str(INSTANCE), "--predictions", str(predictions),
                          "--environments", str(envs), "--repos", str(FIXTURES / "repos"), cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "field 'test_cmd' 'pytest -x -k nothing': the pytest runner runs pytest itself" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("kind", ["directory", "garbage", "foreign", "loop"])
def test_a_ledger_path_that_is_no_ledger_is_refused_before_work(tmp_path, kind):
    """A directory, a file that is not SQLite, someone else's SQLite database (it was silently turned
    into a ledger: tables and triggers added to it) or a link loop: refused before anything is graded."""
    import sqlite3

    ledger = tmp_path / "l.sqlite"
    if kind == "directory":
        ledger.mkdir()
    elif kind == "garbage":
        ledger.write_bytes(b"not a database")
    elif kind == "foreign":
        conn = sqlite3.connect(ledger)
        conn.execute("CREATE TABLE notes (x)")
        conn.commit()
        conn.close()
    else:
        ledger.symlink_to(ledger)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = run_cli_here(*GRADE, "--ledger", str(ledger), cwd=tmp_path)
    _one_line_refusal(result, f"--ledger {ledger}")
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    if kind == "foreign":
        conn = sqlite3.connect(ledger)
        assert [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["notes"]
        conn.close()


def test_a_foreign_database_is_never_turned_into_a_ledger_by_a_writer_that_skips_the_checks(tmp_path):
    import sqlite3

    from pytest_objective_scoring.ledger import Ledger, LedgerError

    path = tmp_path / "db.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    with pytest.raises(LedgerError, match="not a ledger .*notes"):
        Ledger(path).append("score", {})


@pytest.mark.parametrize("kind", ["too-long", "loop", "missing-parent"])
def test_examples_into_a_path_that_cannot_be_a_folder_is_one_line(tmp_path, kind):
    if kind == "loop":
        (tmp_path / "loop").symlink_to(tmp_path / "loop")
        target = tmp_path / "loop" / "x"
    elif kind == "too-long":
        target = tmp_path / ("e" * 300)
    else:
        target = tmp_path / "missing" / "x"
    _one_line_refusal(run_cli_here("examples", str(target), cwd=tmp_path), "DIR")
