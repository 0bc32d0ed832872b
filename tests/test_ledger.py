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
    conn.execute("DROP TRIGGER meta_no_update")
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(LedgerError, match="schema version 99"):
        Ledger(path)


# ---------------------------------------------------------------- recording graded runs


@pytest.mark.slow
def test_grade_appends_score_and_cost_and_the_cli_reads_them(tmp_path):
    from .conftest import FIXTURES
    from .runner_helpers import run_cli_here as run_cli

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
                                                                       "seals": "none", "problems": []}  # fmt: skip
    exported = run_cli("ledger", "export", "--ledger", str(ledger))
    kinds = [json.loads(line)["kind"] for line in exported.stdout.splitlines()]
    assert kinds == ["score", "cost", "scorecard"] * 2
    _tamper(ledger, "UPDATE entries SET body = '{}' WHERE seq = 4")
    broken = run_cli("ledger", "verify", "--ledger", str(ledger))
    assert broken.returncode == 1 and "row 4 (score) was edited" in broken.stdout


def test_no_ledger_and_missing_ledger(tmp_path):
    from .conftest import FIXTURES
    from .runner_helpers import run_cli_here as run_cli

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


# --- damage, read-only readers, verified tables and triggers, anchored heads (issue 14, points 1 and 2) ------

READERS = [("ledger", "verify"), ("ledger", "show"), ("ledger", "show", "--kind", "all"), ("ledger", "export"),
           ("ledger", "head"), ("costs",), ("receipt", "1"), ("scorecard", "1")]  # fmt: skip
READER_IDS = ["verify", "show", "show-all", "export", "head", "costs", "receipt", "scorecard"]


def _cli(capsys, *args):
    from pytest_objective_scoring.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _many(path, rows=120):
    """A ledger of many pages (a score and a scorecard-free cost per run) to damage."""
    with Ledger(path) as ledger:
        for i in range(rows):
            ledger.append("score", {"instance_id": f"row-{i:04d}", "score": {"resolved": "resolved"},
                                    "pad": "x" * 400})  # fmt: skip
    assert not (path.parent / f"{path.name}-wal").exists()  # checkpointed: the file is the whole ledger
    return path


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _corrupt_pages(path):
    data = bytearray(path.read_bytes())
    third = len(data) // 3
    data[third : 2 * third] = b"\xa5" * (2 * third - third)
    path.write_bytes(bytes(data))


def _empty(path):
    path.unlink()
    path.write_bytes(b"")


def _directory(path):
    path.unlink()
    path.mkdir()


def _foreign(path):
    path.write_bytes(b"PK\x03\x04 a zip, not a ledger " * 200)


def _missing(path):
    path.unlink()


DAMAGE = {"truncated": (_truncate, "truncated"), "corrupt page": (_corrupt_pages, ""), "empty": (_empty, "empty file"),
          "directory": (_directory, "a directory"), "not sqlite": (_foreign, "not an SQLite database"),
          "missing": (_missing, "no such ledger")}  # fmt: skip


@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.parametrize("command", READERS, ids=READER_IDS)
def test_a_ledger_that_cannot_be_read_is_exit_2_naming_the_file(tmp_path, capsys, damage, command):
    path = _many(tmp_path / "l.sqlite")
    inflict, said = DAMAGE[damage]
    inflict(path)
    before = path.read_bytes() if path.is_file() else None
    code, out, err = _cli(capsys, *command, "--ledger", str(path))
    if damage == "corrupt page" and command[:2] == ("ledger", "verify"):  # tampering: a failed verification
        assert code == 1 and "the file was altered" in out and path.read_bytes() == before, (out, err)
        return
    assert code == 2, err
    assert "Traceback" not in err and str(path) in err and said in err, err
    line = [l for l in err.splitlines() if l.strip()]
    assert len(line) == 1, err  # one line: which file, what is wrong
    if before is not None:
        assert path.read_bytes() == before  # never converted, repaired or written
    wal = tmp_path / "l.sqlite-wal"  # a WAL reader's own (empty) log may appear beside a writable file; no journal
    assert not (tmp_path / "l.sqlite-journal").exists() and (not wal.exists() or wal.stat().st_size == 0)
    if damage == "missing":
        assert not path.exists()  # never created


def test_a_corrupt_page_fails_verification_exit_1(tmp_path, capsys):
    """Pages overwritten in an SQLite ledger are the file altered: ``verify`` says so as a failed
    verification (TAMPERED, exit 1, what SQLite found), never "cannot be opened" (exit 2)."""
    path = _many(tmp_path / "l.sqlite")
    _corrupt_pages(path)
    result = verify(path)
    assert not result.ok and any(p.startswith("the file was altered") for p in result.problems), result.problems
    code, out, err = _cli(capsys, "ledger", "verify", "--ledger", str(path))
    assert code == 1 and "TAMPERED" in out and "the file was altered" in out, (out, err)


def test_any_flipped_byte_is_intact_or_tampered_never_an_error(tmp_path):
    """A bit flipped anywhere past SQLite's header: the chain intact (free space), or a failed
    verification naming what changed; never an exception but "not SQLite" for the header."""
    original = tmp_path / "l.sqlite"
    with Ledger(original) as ledger:
        for i in range(3):
            ledger.append("score", {"instance_id": f"row-{i}", "score": {"resolved": "resolved"}, "pad": "y" * 900})
    pristine = original.read_bytes()
    tampered = 0
    for offset in range(0, len(pristine), 41):
        data = bytearray(pristine)
        data[offset] ^= 0x01
        path = tmp_path / f"f{offset}.sqlite"
        path.write_bytes(bytes(data))
        try:
            result = verify(path)
        except LedgerError as exc:
            assert offset < 100, f"byte {offset}: {exc}"  # the header: not an SQLite file any more
            continue
        tampered += not result.ok
    assert tampered > 10, "flips in the rows are found"


def test_a_flipped_byte_in_a_row_fails_verification_exit_1(tmp_path, capsys):
    path = _many(tmp_path / "l.sqlite")
    data = bytearray(path.read_bytes())
    at = data.index(b"row-0057") + 7
    data[at] ^= 0x01  # row-0057 -> row-0056: one bit of one row's body
    path.write_bytes(bytes(data))
    code, out, err = _cli(capsys, "ledger", "verify", "--ledger", str(path))
    assert code == 1 and "row 58 (score) was edited: its content no longer matches its hash" in out, (out, err)


def test_readers_open_a_read_only_ledger_without_writing_anything(tmp_path, capsys):
    import hashlib
    import os

    path = _many(tmp_path / "l.sqlite", rows=5)
    path.chmod(0o444)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    for command in (("ledger", "verify"), ("ledger", "show"), ("ledger", "export"), ("ledger", "head"), ("costs",),
                    ("receipt", "1")):  # fmt: skip
        code, out, err = _cli(capsys, *command, "--ledger", str(path))
        assert code == 0 and "Traceback" not in err, (command, out, err)
    with Ledger(path) as ledger:  # a writer's open reads read-only until it appends
        assert len(ledger) == 5
    assert verify(path).ok and hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert sorted(os.listdir(tmp_path)) == ["l.sqlite"]  # no -journal, -wal or -shm was made


def test_an_empty_file_is_never_turned_into_a_database(tmp_path):
    path = tmp_path / "l.sqlite"
    path.write_bytes(b"")
    with pytest.raises(LedgerError, match="empty file"):
        Ledger(path, read_only=True)
    with Ledger(path) as ledger:  # a writer that only reads converts nothing either
        assert list(ledger.entries()) == [] and len(ledger) == 0
    assert path.read_bytes() == b""


def _sql(path, *statements):
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


def _definition(path, trigger):
    conn = sqlite3.connect(path)
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (trigger,)).fetchone()
    conn.close()
    return sql


def test_the_schema_version_cannot_be_removed_and_its_removal_fails_verify(tmp_path, capsys):
    path = tmp_path / "l.sqlite"
    _three(path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        _sql(path, "DELETE FROM meta")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        _sql(path, "UPDATE meta SET value = '1'")
    protect = _definition(path, "meta_no_delete")
    _sql(path, "DROP TRIGGER meta_no_delete", "DELETE FROM meta", protect)  # removed, the trigger put back
    code, out, _ = _cli(capsys, "ledger", "verify", "--ledger", str(path))
    assert code == 1 and "the schema version (the meta row schema_version) was removed" in out, out
    code, _, err = _cli(capsys, "ledger", "show", "--ledger", str(path))
    assert code == 2 and "schema version" in err and "Traceback" not in err, err


def test_a_trigger_is_verified_by_its_definition_not_its_name(tmp_path, capsys):
    path = tmp_path / "l.sqlite"
    _three(path)
    _sql(path, "DROP TRIGGER entries_no_delete",
         "CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries BEGIN SELECT 1; END")  # fmt: skip
    code, out, _ = _cli(capsys, "ledger", "verify", "--ledger", str(path))
    assert code == 1 and "the append-only trigger entries_no_delete was replaced" in out, out
    # the same definition, differently spaced and cased, is the same trigger
    other = tmp_path / "m.sqlite"
    _three(other)
    sql = _definition(other, "entries_no_update")
    _sql(other, "DROP TRIGGER entries_no_update", "  " + sql.replace(" ", "\n  ").replace("BEGIN", "begin"))
    assert verify(other).ok, verify(other).problems


def _rechain(path, keep):
    """Delete every row after ``keep`` and write new rows in their place, triggers put back: a valid chain."""
    protect = _definition(path, "entries_no_delete")
    _sql(path, "DROP TRIGGER entries_no_delete", f"DELETE FROM entries WHERE seq > {keep}", protect)


def test_a_removed_or_rechained_tail_is_caught_by_the_expected_head(tmp_path, capsys):
    path = tmp_path / "l.sqlite"
    _three(path)
    code, out, _ = _cli(capsys, "ledger", "head", "--ledger", str(path))
    anchor = out.strip()
    seq, digest = anchor.split(":")
    assert code == 0 and seq == "3" and len(digest) == 64
    code, out, _ = _cli(capsys, "ledger", "head", "--ledger", str(path), "--json")
    assert json.loads(out) == {"ledger": str(path), "seq": 3, "hash": digest}
    for expect in (anchor, digest):
        assert _cli(capsys, "ledger", "verify", "--ledger", str(path), "--expect-head", expect)[0] == 0
    _rechain(path, keep=2)  # the tail removed
    assert verify(path).ok  # undetectable from the file alone
    code, out, _ = _cli(capsys, "ledger", "verify", "--ledger", str(path), "--expect-head", anchor)
    assert code == 1 and "the chain ends at row 2: its tail was removed" in out, out
    with Ledger(path) as ledger:  # ... and written again: a new row 3
        ledger.append("score", {"i": "forged"})
    assert verify(path).ok
    code, out, _ = _cli(capsys, "ledger", "verify", "--ledger", str(path), "--expect-head", anchor)
    assert code == 1 and "row 3 is not the expected head" in out, out
    code, out, _ = _cli(capsys, "ledger", "verify", "--ledger", str(path), "--expect-head", digest, "--json")
    assert code == 1 and "is not in the chain" in json.loads(out)["problems"][0], out


def test_a_later_ledger_still_holds_an_earlier_head(tmp_path, capsys):
    path = tmp_path / "l.sqlite"
    _three(path)
    anchor = _cli(capsys, "ledger", "head", "--ledger", str(path))[1].strip()
    with Ledger(path) as ledger:
        ledger.append("score", {"i": 3})
    assert _cli(capsys, "ledger", "verify", "--ledger", str(path), "--expect-head", anchor)[0] == 0
    code, _, err = _cli(capsys, "ledger", "verify", "--ledger", str(path), "--expect-head", "3:nothex")
    assert code == 2 and "--expect-head" in err


def test_a_signed_head_is_checked_with_its_key(tmp_path, capsys):
    path = tmp_path / "l.sqlite"
    _three(path)
    key, wrong = tmp_path / "key", tmp_path / "wrong"
    key.write_bytes(b"the auditor's secret\n")
    wrong.write_bytes(b"someone else's")
    code, out, _ = _cli(capsys, "ledger", "head", "--ledger", str(path), "--sign", "--key-file", str(key))
    signed = out.strip()
    assert code == 0 and len(signed.split(":")) == 3
    ok = ("ledger", "verify", "--ledger", str(path), "--expect-head", signed)
    assert _cli(capsys, *ok, "--key-file", str(key))[0] == 0
    code, out, _ = _cli(capsys, *ok, "--key-file", str(wrong))
    assert code == 1 and "does not carry a valid signature" in out
    _rechain(path, keep=2)
    with Ledger(path) as ledger:
        ledger.append("score", {"i": "forged"})
    forged = _cli(capsys, "ledger", "head", "--ledger", str(path), "--sign", "--key-file", str(wrong))[1].strip()
    assert _cli(capsys, *ok, "--key-file", str(key))[0] == 1  # the true anchor exposes the rewrite
    code, out, _ = _cli(capsys, "ledger", "verify", "--ledger", str(path), "--expect-head", forged, "--key-file", str(key))
    assert code == 1 and "does not carry a valid signature" in out  # an anchor made without the key is refused
    assert _cli(capsys, "ledger", "verify", "--ledger", str(path), "--expect-head", signed)[0] == 2  # no key given
    assert _cli(capsys, "ledger", "head", "--ledger", str(path), "--sign")[0] == 2


@pytest.mark.slow
def test_on_a_read_only_file_system_readers_read_and_a_grading_keeps_its_verdict(tmp_path):
    import shutil

    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to mount a read-only file system in a private mount namespace")
    from .conftest import FIXTURES

    made = _many(tmp_path / "made.sqlite", rows=5)
    mount = tmp_path / "ro"
    mount.mkdir()
    fixtures = FIXTURES
    cli = f"{sys.executable} -m pytest_objective_scoring"
    script = f"""
set -e
mount -t tmpfs tmpfs {mount}
cp {made} {mount}/ledger.sqlite
mount -o remount,ro {mount}
touch {mount}/probe 2>/dev/null && echo writable || echo read-only > {tmp_path}/state
for command in "ledger verify" "ledger show" "ledger export" "ledger head" "costs"; do
  {cli} $command --ledger {mount}/ledger.sqlite > /dev/null 2>> {tmp_path}/readers.err || echo "$command $?" >> {tmp_path}/readers.failed
done
set +e
{cli} grade --repo {fixtures}/repos/intervals --instance {fixtures}/instances/intervals.json \
  --patch {fixtures}/patches/intervals/gold.diff --ledger {mount}/ledger.sqlite --json > {tmp_path}/grade.json 2> {tmp_path}/grade.err
echo $? > {tmp_path}/grade.rc
"""
    done = subprocess.run(["unshare", "--mount", "--map-root-user", "sh", "-c", script], capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    if done.returncode != 0 and "Operation not permitted" in done.stderr:
        pytest.skip(f"this machine refuses a private mount namespace: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "state").read_text().strip() == "read-only"
    assert not (tmp_path / "readers.failed").exists(), (tmp_path / "readers.failed").read_text()
    assert "Traceback" not in (tmp_path / "readers.err").read_text()
    assert (tmp_path / "grade.rc").read_text().strip() == "0", (tmp_path / "grade.err").read_text()
    envelope = json.loads((tmp_path / "grade.json").read_text())
    assert envelope["score"]["resolved"] == "resolved", "the verdict stands"
    assert envelope["ledger"]["seq"] is None and envelope["ledger"]["error"], "and says it was not recorded"
    assert "NOT recorded" in (tmp_path / "grade.err").read_text()


def test_the_command_lines_default_ledger_folder_ignores_itself_in_git(tmp_path):
    from pytest_objective_scoring.ledger import Ledger as _Ledger

    with _Ledger(tmp_path / ".objective-scoring" / "ledger.sqlite") as ledger:
        ledger.append("batch", {"note": "the first write makes the folder"})
    assert (tmp_path / ".objective-scoring" / ".gitignore").read_text().splitlines()[-1] == "*"
    (tmp_path / "elsewhere").mkdir()
    with _Ledger(tmp_path / "elsewhere" / "ledger.sqlite") as ledger:  # a folder of the user's: left as it is
        ledger.append("batch", {})
    assert not (tmp_path / "elsewhere" / ".gitignore").exists()
