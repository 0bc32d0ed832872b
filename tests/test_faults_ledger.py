"""Fault injection (issue 28, red team): the ledger and the examples on a full disk. A ledger made
on a full disk leaves nothing (it left a 0-byte file that the next run refused as not a ledger),
concurrent first writers still make one ledger, ``ledger export --out`` prints what it could not
write, ``ledger verify`` reads a ledger on a full disk without writing (it was exit 2), and
``examples DIR`` leaves no partial copy."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_objective_scoring import cli, ledger
from pytest_objective_scoring.ledger import Ledger, LedgerUnavailable, verify

from .conftest import FIXTURES
from .runner_helpers import run_cli, run_cli_here
from .test_faults import GOLD, GRADE, _no_partial, full_disk, tmpfs  # noqa: F401 (the fixture, reused)


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs, empty: room for a ledger, none for the examples (root only: mounting needs it)."""
    with tmpfs(tmp_path / "small", "256k") as place:
        yield place


def _fill(place: Path) -> None:
    """Take every free block of the file system at ``place``."""
    fd = os.open(place / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------- a ledger made on a full disk


def test_a_ledger_made_on_a_full_disk_leaves_nothing_and_the_next_run_makes_it(small_disk):
    _fill(small_disk)
    path = small_disk / "l.sqlite"
    with pytest.raises(LedgerUnavailable, match=r"l\.sqlite: cannot be created \(database or disk is full\)"):
        Ledger(path).append("score", {"n": 1})
    _no_partial(small_disk)  # no 0-byte ledger, no temporary file
    graded = run_cli(*GRADE, "--patch", str(GOLD), "--ledger", str(path), "--json")
    assert json.loads(graded.stdout)["score"]["resolved"] == "resolved"  # the verdict stands, said not recorded
    assert "NOT recorded" in graded.stderr and "Traceback" not in graded.stderr
    _no_partial(small_disk)
    (small_disk / "filler").unlink()  # room again: the next run makes the ledger, never refuses it as empty
    again = run_cli(*GRADE, "--patch", str(GOLD), "--ledger", str(path))
    assert again.returncode == 0 and "NOT recorded" not in again.stderr, again.stderr
    assert verify(path).ok
    with Ledger(path, read_only=True) as made:
        assert [e.data["score"]["resolved"] for e in made.entries("score")] == ["resolved"]
    assert sorted(p.name for p in small_disk.iterdir() if not p.name.startswith("l.sqlite-")) == ["l.sqlite"]


WRITER = """
import sys, time
from pytest_objective_scoring.ledger import Ledger
path, name, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
while time.time() < start:
    time.sleep(0.001)
with Ledger(path) as ledger:
    for i in range(20):
        ledger.append("score", {"writer": name, "i": i})
"""


def test_concurrent_first_writers_make_one_ledger_and_lose_nothing(tmp_path):
    for round_ in range(3):  # the ledger is missing each time: every writer races to make it
        path = tmp_path / f"l{round_}.sqlite"
        start = time.time() + 1.0
        writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{n}", str(start)]) for n in range(4)]
        assert [w.wait(timeout=120) for w in writers] == [0, 0, 0, 0]
        with Ledger(path, read_only=True) as made:
            rows = sorted((e.data["writer"], e.data["i"]) for e in made.entries())
        assert rows == sorted((f"w{n}", i) for n in range(4) for i in range(20))
        assert verify(path).ok and verify(path).rows == 80
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")], "no temporary ledger is left"


def test_a_new_ledger_is_linked_into_place_never_over_another_writers(tmp_path, monkeypatch):
    """Another writer makes the ledger between this one's check and its link: theirs is kept."""
    path = tmp_path / "l.sqlite"
    real_link, raced = os.link, []

    def link_after_another(source, target):
        if Path(target) == path and not raced:
            raced.append(True)
            with Ledger(tmp_path / "theirs.sqlite") as theirs:
                theirs.append("score", {"who": "them"})
            os.replace(tmp_path / "theirs.sqlite", path)
        return real_link(source, target)

    monkeypatch.setattr(ledger.os, "link", link_after_another)
    with Ledger(path) as mine:
        mine.append("score", {"who": "me"})
    with Ledger(path, read_only=True) as made:
        assert [e.data["who"] for e in made.entries()] == ["them", "me"]
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("l.sqlite-")) == ["l.sqlite"]


# ---------------------------------------------------------------- readers on a full disk


def test_ledger_export_out_on_a_full_disk_prints_the_export_in_full(tmp_path, full_disk):  # noqa: F811
    path = tmp_path / "l.sqlite"
    with Ledger(path) as made:
        for i in range(3):
            made.append("score", {"i": i})
    whole = run_cli_here("ledger", "export", "--ledger", str(path))
    exported = run_cli_here("ledger", "export", "--ledger", str(path), "--out", str(full_disk / "x.jsonl"))
    assert exported.returncode == 3
    assert exported.stdout == whole.stdout and len(exported.stdout.splitlines()) == 3  # printed, not lost
    assert exported.stderr.count("\n") == 1
    assert f"--out {full_disk / 'x.jsonl'}: NOT written (No space left on device); it follows on standard output" \
        in exported.stderr
    _no_partial(full_disk)


def test_ledger_verify_on_a_full_disk_reads_without_writing(small_disk):
    path = small_disk / "l.sqlite"
    with Ledger(path) as made:
        for i in range(5):
            made.append("score", {"i": i})
    _fill(small_disk)
    before = sorted(p.name for p in small_disk.iterdir())
    assert before == ["filler", "l.sqlite"]
    for command in (("ledger", "verify"), ("ledger", "head"), ("ledger", "show", "--kind", "all", "--json"),
                    ("ledger", "export")):  # fmt: skip
        result = run_cli_here(*command, "--ledger", str(path))
        assert result.returncode == 0, (command, result.stderr)
        assert "Traceback" not in result.stderr
        assert sorted(p.name for p in small_disk.iterdir()) == before, "no -wal or -shm left beside it"
    assert "5 rows, chain intact" in run_cli_here("ledger", "verify", "--ledger", str(path)).stdout


def test_a_ledger_the_machine_cannot_read_is_one_line_exit_3(tmp_path, capsys, monkeypatch):
    """Even a read-only open fails (an I/O error): an infrastructure failure, never bad input (2)."""
    path = tmp_path / "l.sqlite"
    with Ledger(path) as made:
        made.append("score", {"i": 1})

    def failing(path):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(ledger, "_connect_read_only", failing)
    for action in ("verify", "show", "export", "head"):
        code = cli.main(["ledger", action, "--ledger", str(path)])
        said = capsys.readouterr()
        assert code == 3, (action, said.err)
        assert said.err.count("\n") == 1 and "disk I/O error" in said.err and "infrastructure failure" in said.err


# ---------------------------------------------------------------- examples on a full disk


@pytest.mark.parametrize("existing", [False, True], ids=["new-folder", "empty-folder"])
def test_examples_on_a_full_disk_leave_no_partial_copy(small_disk, existing):
    target = small_disk / "examples"
    if existing:
        target.mkdir()
    result = run_cli_here("examples", str(target))
    assert result.returncode == 3, result.stderr
    assert result.stderr.count("\n") == 1 and "No space left on device" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    left = sorted(str(p.relative_to(small_disk)) for p in small_disk.rglob("*"))
    assert left == (["examples"] if existing else []), left  # as it was: missing, or empty


def test_examples_are_moved_into_place_whole(tmp_path):
    for target in (tmp_path / "new", tmp_path / "empty"):
        if target.name == "empty":
            target.mkdir()
        result = run_cli_here("examples", str(target), "--json")
        assert result.returncode == 0, result.stderr
        files = json.loads(result.stdout)["files"]
        assert sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file()) == sorted(files)
        assert (target / "instances" / "intervals.json").read_bytes() == (FIXTURES / "instances" / "intervals.json").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "new"], "no temporary folder is left"


def test_a_full_disk_met_while_a_command_appends_is_one_line_exit_3(full_disk):  # noqa: F811 (the fixture)
    """``sets create`` lets the ledger's own error through: a full disk is the machine's failure (exit
    3, cli.main), never bad input (it was exit 2)."""
    result = run_cli_here("sets", "create", "regression", "--role", "regression", "--source", "static:fixtures",
                          "--dataset", str(FIXTURES / "datasets" / "fixtures.jsonl"),
                          "--ledger", str(full_disk / "l.sqlite"))  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert result.stderr.count("\n") == 1 and "infrastructure failure (exit 3)" in result.stderr
    _no_partial(full_disk)


def test_grade_batch_with_a_new_ledger_on_a_full_disk_is_exit_3(tmp_path, full_disk):  # noqa: F811 (the fixture)
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(json.dumps({"instance_id": "fixtures__intervals-1", "model_name_or_path": "m",
                                       "model_patch": GOLD.read_text()}) + "\n")  # fmt: skip
    result = run_cli_here("grade-batch", "--dataset", str(FIXTURES / "datasets" / "fixtures.jsonl"), "--predictions",
                          str(predictions), "--repos", str(FIXTURES / "repos"), "--ledger", str(full_disk / "new.sqlite"))  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "infrastructure failure (exit 3)" in result.stderr and "Traceback" not in result.stderr
    _no_partial(full_disk)
