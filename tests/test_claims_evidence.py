"""Claims read only from verified evidence (issue 29): ``ab show`` and ``ab report`` verify the
ledger first and recompute the comparison from its graded runs; a forged or edited row gives no
claim (exit 1), never a C2 printed from a stored summary."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path

import pytest

from pytest_objective_scoring.ledger import Ledger

from .runner_helpers import run_cli_here
from .test_ab_claims import _stored_comparison
from .test_ledger_seal import KEY, _forge


def _last_comparison(path: Path) -> dict:
    with Ledger(path, read_only=True) as ledger:
        return next(e.data for e in reversed(list(ledger.entries("ab_comparison"))))


def test_an_honest_comparison_is_read_with_its_claim(tmp_path):
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        _stored_comparison(ledger, "exp")
    shown = run_cli_here("ab", "show", "exp", "--ledger", str(path), "--json")
    assert shown.returncode == 0, shown.stderr
    details = json.loads(shown.stdout)["details"]
    assert details["claim"] == "C2" and details["evidence"] == {"graded_runs": 240, "tasks": 24, "recomputed": True}


def test_a_row_appended_by_hand_with_a_recomputed_hash_gives_no_claim(tmp_path):
    """The issue's forgery: sqlite3, an ab_comparison row saying 20 tasks and C2 for a 3-task
    experiment, its hash recomputed so that the chain verifies."""
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        instances = _stored_comparison(ledger, "small", p_value=0.6, recommendation="reject", claim="C0")
    stored = _last_comparison(path)
    forged = copy.deepcopy(stored)
    forged["details"].update(tasks=20, claim="C2")
    forged["record"]["result"].update(significant="yes", recommendation="keep", delta=0.3)
    forged["details"]["test"]["p_value"] = 0.001
    _forge(path, "ab_comparison", forged)
    assert run_cli_here("ledger", "verify", "--ledger", str(path)).returncode == 0, "the chain alone cannot tell"
    for action in (("show", "small"), ("report", "small", "--out", str(tmp_path / "r"))):
        result = run_cli_here("ab", *action, "--ledger", str(path))
        assert result.returncode == 1, result.stdout + result.stderr
        assert "no claim" in result.stderr and "C2" not in result.stdout
        assert "the stored summary says 20 task(s); its graded runs cover 24" in result.stderr
        assert "are not its graded runs'" in result.stderr
    assert not (tmp_path / "r").exists(), "no report is written from a forged summary"
    assert len(instances) == 24


def test_a_row_edited_in_place_fails_verification_and_gives_no_claim(tmp_path):
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        _stored_comparison(ledger, "exp", p_value=0.6, recommendation="reject", claim="C0")
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER entries_no_update")
    seq, body = conn.execute("SELECT seq, body FROM entries WHERE kind = 'ab_comparison'").fetchone()
    conn.execute("UPDATE entries SET body = ? WHERE seq = ?", (body.replace('"reject"', '"keep"'), seq))
    conn.commit()
    conn.close()
    result = run_cli_here("ab", "show", "exp", "--ledger", str(path))
    assert result.returncode == 1 and "fails verification, so no claim is read from it" in result.stderr
    assert "claim level" not in result.stdout


def test_graded_runs_that_are_not_the_experiments_give_no_claim(tmp_path):
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        _stored_comparison(ledger, "exp")
        other = ledger.append("score", {"instance_id": "x", "model_name_or_path": "ab:another/baseline/seed1",
                                        "outcome": "resolved", "job_key": "k"})  # fmt: skip
    stored = _last_comparison(path)
    forged = copy.deepcopy(stored)
    forged["details"]["graded_runs"][0]["seq"] = other.seq
    _forge(path, "ab_comparison", forged)
    result = run_cli_here("ab", "show", "exp", "--ledger", str(path))
    assert result.returncode == 1 and f"graded run {other.seq} (ab:another/baseline/seed1) is not a run of" in result.stderr


def test_a_sealed_ledger_read_without_its_key_says_the_seals_were_not_checked(tmp_path, monkeypatch):
    key_file = tmp_path / "key"
    key_file.write_bytes(KEY)
    path = tmp_path / "l.sqlite"
    with Ledger(path, key=KEY) as ledger:
        _stored_comparison(ledger, "exp")
    monkeypatch.setenv("OBJECTIVE_SCORE_LEDGER_KEY_FILE", str(key_file))
    shown = run_cli_here("ab", "show", "exp", "--ledger", str(path), "--json")
    assert shown.returncode == 0 and "ledger_seals" not in json.loads(shown.stdout)["details"]
    _forge(path, "score", {"instance_id": "x"})  # appended without the key
    refused = run_cli_here("ab", "show", "exp", "--ledger", str(path))
    assert refused.returncode == 1 and "not sealed with the ledger's key" in refused.stderr
    monkeypatch.delenv("OBJECTIVE_SCORE_LEDGER_KEY_FILE")
    unkeyed = run_cli_here("ab", "show", "exp", "--ledger", str(path), "--json")
    assert json.loads(unkeyed.stdout)["details"]["ledger_seals"].startswith("not checked")


@pytest.mark.parametrize("forged_replication", [False, True])
def test_a_replication_its_graded_runs_do_not_bear_out_replicates_nothing(tmp_path, forged_replication):
    from .test_ab_claims import P

    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        _stored_comparison(ledger, "here", p_value=0.001, problems=[f"{P}h1"], claim="C3")
        _stored_comparison(ledger, "there", benchmark="bench-b", p_value=0.001, problems=[f"{P}t1"])
    if forged_replication:  # the replication's own row replaced by one whose runs are another experiment's
        stored = _last_comparison(path)
        forged = copy.deepcopy(stored)
        forged["details"]["tasks"] = 30
        _forge(path, "ab_comparison", forged)
    shown = run_cli_here("ab", "show", "here", "--ledger", str(path), "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["details"]["claim"] == ("C2" if forged_replication else "C3")


def test_a_comparison_over_a_chosen_subset_of_its_runs_gives_no_claim(tmp_path):
    """A forged row naming only the tasks the candidate won, with a summary and a jobs digest that
    match that subset: the runs are not the pinned predictions, so no claim (issue 29, red team)."""
    import hashlib

    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        _stored_comparison(ledger, "exp", p_value=0.6, recommendation="reject", claim="C0")
    stored = _last_comparison(path)
    forged = copy.deepcopy(stored)
    keep = forged["details"]["graded_runs"][: len(forged["details"]["graded_runs"]) // 2]
    forged["details"]["graded_runs"] = keep
    with Ledger(path, read_only=True) as ledger:
        keys = [e.data["job_key"] for e in ledger.entries("score") if e.seq in {r["seq"] for r in keep}]
    forged["jobs_digest"] = "sha256:" + hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()
    _forge(path, "ab_comparison", forged)
    result = run_cli_here("ab", "show", "exp", "--ledger", str(path))
    assert result.returncode == 1 and "the graded runs are not the pinned predictions" in result.stderr


def test_the_facts_a_claim_rests_on_are_recomputed_from_the_preregistration_not_the_stored_summary(tmp_path):
    """An honest comparison held at C0 by one fact (its runs declared none of the frozen fields); a row
    appended by hand that says the evidence is admissible, the environments identical and the arms a
    valid pair, over the same graded runs: the claim stays C0 (issue 29, red team A2)."""
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        _stored_comparison(ledger, "exp", claim="C0", declared=False, recommendation="pare_back")
        ledger.append("ab_manifest", {"name": "exp", "manifest": {"name": "exp"}, "power": {"powered": True}})
    honest = json.loads(run_cli_here("ab", "show", "exp", "--ledger", str(path), "--json").stdout)["details"]
    assert honest["claim"] == "C0" and "frozen fields not declared by the runs" in " ".join(honest["inadmissible_because"])
    forged = copy.deepcopy(_last_comparison(path))
    forged["details"].update(inadmissible_fixed=[], inadmissible_because=[], admissible=True,
                             environment_parity={"identical": True})  # fmt: skip
    _forge(path, "ab_comparison", forged)
    shown = run_cli_here("ab", "show", "exp", "--ledger", str(path), "--json")
    assert shown.returncode == 0, shown.stderr
    details = json.loads(shown.stdout)["details"]
    assert details["claim"] == "C0" and "frozen fields not declared by the runs" in " ".join(details["inadmissible_because"])


def test_a_recommendation_changed_by_hand_gives_no_claim(tmp_path):
    """`pare_back` made `keep` over real graded runs (issue 29 red team, A2): the recommendation is
    recomputed from the outcomes, the runs' costs and the preregistered cap."""
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        _stored_comparison(ledger, "exp", claim="C0", declared=False, recommendation="pare_back")
    forged = copy.deepcopy(_last_comparison(path))
    forged["record"]["result"]["recommendation"] = "keep"
    _forge(path, "ab_comparison", forged)
    result = run_cli_here("ab", "show", "exp", "--ledger", str(path))
    assert result.returncode == 1 and "the stored recommendation 'keep' is not what its evidence gives" in result.stderr


def _tail_removed(path: Path, keep: int) -> None:
    """Every row after ``keep`` deleted and the append-only trigger put back: the file alone verifies."""
    conn = sqlite3.connect(path)
    protect = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'entries_no_delete'").fetchone()[0]
    conn.executescript(f"DROP TRIGGER entries_no_delete; DELETE FROM entries WHERE seq > {keep}; {protect};")
    conn.close()


def test_a_removed_tail_gives_no_claim_against_a_head_kept_elsewhere(tmp_path):
    """A failed experiment on the same change is written after a C2 one; whoever can write the ledger
    removes it (and the triggers are put back): the file alone verifies and the claim reads as before,
    but against a head kept where the ledger's writers cannot reach, ``ab show`` and ``ab report`` give
    no claim (issue 29: how a reader pins a ledger's head)."""
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        _stored_comparison(ledger, "exp")
        kept = ledger.head().seq
        _stored_comparison(ledger, "failed", p_value=0.6, recommendation="reject", claim="C0")
    anchor = run_cli_here("ledger", "head", "--ledger", str(path)).stdout.strip()
    shown = run_cli_here("ab", "show", "exp", "--ledger", str(path), "--expect-head", anchor, "--json")
    assert shown.returncode == 0, shown.stderr
    family = json.loads(shown.stdout)["details"]["family"]
    assert {m["name"] for m in family["members"]} == {"exp", "failed"}
    _tail_removed(path, kept)
    assert run_cli_here("ab", "show", "exp", "--ledger", str(path)).returncode == 0, "undetectable from the file alone"
    for action in (("show", "exp"), ("report", "exp", "--out", str(tmp_path / "r"))):
        result = run_cli_here("ab", *action, "--ledger", str(path), "--expect-head", anchor)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "no claim" in result.stderr and "its tail was removed" in result.stderr, result.stderr
        assert "claim level" not in result.stdout
    assert not (tmp_path / "r").exists()
    bad = run_cli_here("ab", "show", "exp", "--ledger", str(path), "--expect-head", "not-a-head")
    assert bad.returncode == 2 and "--expect-head" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_a_signed_head_is_checked_with_the_key_file(tmp_path):
    path, key = tmp_path / "l.sqlite", tmp_path / "key"
    key.write_bytes(KEY)
    with Ledger(path) as ledger:
        _stored_comparison(ledger, "exp")
    signed = run_cli_here("ledger", "head", "--ledger", str(path), "--sign", "--key-file", str(key)).stdout.strip()
    ok = run_cli_here("ab", "show", "exp", "--ledger", str(path), "--expect-head", signed, "--key-file", str(key))
    assert ok.returncode == 0 and "C2" in ok.stdout, ok.stderr
    other = tmp_path / "other"
    other.write_bytes(b"another key")
    wrong = run_cli_here("ab", "show", "exp", "--ledger", str(path), "--expect-head", signed, "--key-file", str(other))
    assert wrong.returncode == 1 and "no claim" in wrong.stderr, wrong.stderr
    unsigned = run_cli_here("ab", "show", "exp", "--ledger", str(path), "--expect-head", signed.rsplit(":", 1)[0],
                            "--key-file", str(key))  # fmt: skip
    assert unsigned.returncode == 2 and "not signed" in unsigned.stderr


def test_the_task_sets_role_is_read_from_the_sets_own_entries(tmp_path):
    """The role decides the recommendation (a development set never says keep): a row appended by hand
    that calls the pinned regression set a holdout gives no claim, and so does a comparison whose pinned
    set the ledger does not hold with its tasks."""
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        _stored_comparison(ledger, "exp")
    forged = copy.deepcopy(_last_comparison(path))
    forged["details"]["role"] = "holdout_live"
    _forge(path, "ab_comparison", forged)
    result = run_cli_here("ab", "show", "exp", "--ledger", str(path))
    assert result.returncode == 1, result.stdout
    assert "the stored summary says the task set's role is 'holdout_live'; the set it pinned is 'regression'" in result.stderr
    from pytest_objective_scoring.ab_comparison import _pinned_role

    with Ledger(path, read_only=True) as ledger:
        pinned = next(e.data["task_set"] for e in ledger.entries("ab_manifest"))
        assert _pinned_role(ledger, pinned) == "regression"
        assert _pinned_role(ledger, {**pinned, "tasks_digest": "sha256:" + "0" * 64}) is None, "other tasks"
        assert _pinned_role(ledger, {**pinned, "set_id": "absent@v1"}) is None
        assert _pinned_role(ledger, {}) is None
