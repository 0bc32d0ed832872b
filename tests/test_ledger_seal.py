"""A ledger sealed with a key (issue 29): rows appended without the key, with a hash the forger
computed himself, fail ``verify``; a writer without the key, or with another, is refused."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from pytest_objective_scoring.ledger import (
    GENESIS,
    Ledger,
    LedgerError,
    canonical,
    entry_hash,
    verify,
)

from .conftest import FIXTURES
from .runner_helpers import run_cli_here

KEY = b"a secret the writers hold and a forger does not"


def _forge(path: Path, kind: str, body: dict) -> None:
    """What the issue's forger did: sqlite3, one row at the end, its hash recomputed by hand."""
    conn = sqlite3.connect(path)
    seq, prev = conn.execute("SELECT seq, hash FROM entries ORDER BY seq DESC LIMIT 1").fetchone() or (0, GENESIS)
    text, created = canonical(body), "2026-12-03T00:00:00.000000Z"
    conn.execute("INSERT INTO entries (seq, kind, created, body, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?)",
                 (seq + 1, kind, created, text, prev, entry_hash(seq + 1, kind, created, text, prev)))  # fmt: skip
    conn.commit()
    conn.close()


def test_each_transaction_of_a_keyed_writer_ends_with_a_seal_and_verifies(tmp_path):
    path = tmp_path / "l.sqlite"
    with Ledger(path, key=KEY) as ledger:
        ledger.append("score", {"n": 1})
        ledger.append_linked([("score", lambda _: {"n": 2}), ("cost", lambda _: {"n": 3})])
        kinds = [e.kind for e in ledger.entries()]
    assert kinds == ["score", "seal", "score", "cost", "seal"]
    result = verify(path, key=KEY)
    assert result.ok and result.seals == "checked"
    assert verify(path).ok and verify(path).seals == "unchecked", "without the key: the chain only, and said so"


def test_a_row_forged_with_a_recomputed_hash_passes_the_chain_but_not_the_seals(tmp_path):
    path = tmp_path / "l.sqlite"
    with Ledger(path, key=KEY) as ledger:
        ledger.append("ab_comparison", {"tasks": 3})
    _forge(path, "ab_comparison", {"tasks": 20, "claim": "C2"})
    assert verify(path).ok, "the chain alone cannot tell: the forger recomputed the hash"
    result = verify(path, key=KEY)
    assert not result.ok and result.problems == ("rows 3..3 are not sealed with the ledger's key: appended without it",)
    _forge(path, "seal", {"through": 3, "mac": "0" * 64})  # and a seal he made up
    problems = verify(path, key=KEY).problems
    assert "row 4 (seal) was not made with this key (a forged seal, or the wrong key)" in problems
    assert "rows 3..4 are not sealed with the ledger's key: appended without it" in problems


def test_a_writer_without_the_key_or_with_another_is_refused_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("OBJECTIVE_SCORE_LEDGER_KEY_FILE", raising=False)
    path = tmp_path / "l.sqlite"
    with Ledger(path, key=KEY) as ledger:
        ledger.append("score", {"n": 1})
    with Ledger(path) as ledger, pytest.raises(LedgerError, match="sealed with a key"):
        ledger.append("score", {"n": 2})
    with Ledger(path, key=b"another key") as ledger, pytest.raises(LedgerError, match="not the one this ledger is sealed"):
        ledger.append("score", {"n": 2})
    assert verify(path, key=KEY).ok and verify(path, key=KEY).rows == 2
    assert not verify(path, key=b"another key").ok, "the wrong key vouches for nothing"


def test_rows_written_before_the_first_seal_are_vouched_for_by_it(tmp_path):
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        ledger.append("score", {"n": 1})
    assert verify(path).seals == "none"
    assert not verify(path, key=KEY).ok, "a key given for a ledger never sealed: nothing is vouched for"
    with Ledger(path, key=KEY) as ledger:
        ledger.append("score", {"n": 2})
    assert verify(path, key=KEY).ok


def test_the_cli_seals_with_the_key_file_and_verify_names_a_forged_row(tmp_path, monkeypatch):
    key_file = tmp_path / "key"
    key_file.write_bytes(KEY + b"\n")
    monkeypatch.setenv("OBJECTIVE_SCORE_LEDGER_KEY_FILE", str(key_file))
    ledger = tmp_path / "l.sqlite"
    graded = run_cli_here("grade", "--repo", str(FIXTURES / "repos" / "intervals"), "--instance",
                          str(FIXTURES / "instances" / "intervals.json"), "--patch",
                          str(FIXTURES / "patches" / "intervals" / "gold.diff"), "--ledger", str(ledger))  # fmt: skip
    assert graded.returncode == 0, graded.stderr
    intact = run_cli_here("ledger", "verify", "--ledger", str(ledger), "--json")
    assert intact.returncode == 0 and json.loads(intact.stdout)["seals"] == "checked"
    _forge(ledger, "score", {"instance_id": "fixtures__intervals-1", "resolved": "resolved"})
    forged = run_cli_here("ledger", "verify", "--ledger", str(ledger))
    assert forged.returncode == 1 and "TAMPERED" in forged.stdout and "not sealed with the ledger's key" in forged.stdout
    monkeypatch.delenv("OBJECTIVE_SCORE_LEDGER_KEY_FILE")
    unkeyed = run_cli_here("ledger", "verify", "--ledger", str(ledger))
    assert unkeyed.returncode == 0 and "seals not checked" in unkeyed.stdout
    again = run_cli_here("grade", "--repo", str(FIXTURES / "repos" / "intervals"), "--instance",
                         str(FIXTURES / "instances" / "intervals.json"), "--patch",
                         str(FIXTURES / "patches" / "intervals" / "gold.diff"), "--ledger", str(ledger))  # fmt: skip
    assert "sealed with a key" in again.stderr + again.stdout, "a writer without the key appends nothing"


def test_the_key_file_is_hidden_from_the_test_process(tmp_path, monkeypatch):
    import argparse

    from pytest_objective_scoring.commands.shared import hidden_paths

    monkeypatch.setenv("OBJECTIVE_SCORE_LEDGER_KEY_FILE", str(tmp_path / "key"))
    assert (tmp_path / "key").resolve() in hidden_paths(argparse.Namespace(ledger=str(tmp_path / "l.sqlite")))
