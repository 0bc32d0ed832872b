"""Run integrity: the disposition of every graded run by rule, audit states, receipts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_objective_scoring.integrity import DAY, assess, audit_state, environment_digest, receipt, settle


def runner_envelope(**changes: Any) -> dict[str, Any]:
    envelope = {
        "instance_id": "x-1",
        "score": {"instance_id": "x-1", "patch_ref": "sha256:p", "resolved": "resolved", "graded_by": "g", "graded_at": 5},
        "runner": {"network": "unshared", "apply": {"dropped": []}, "run": {"command": ["python", "-m", "pytest"]}},
        "integrity": {"flags": []},
        "digests": {"task": "sha256:t", "patch": "sha256:p", "interpreter": "sha256:i", "environment": "sha256:e",
                    "verifier": "v", "score": "sha256:s"},
        "harness": "h",
    }  # fmt: skip
    envelope.update(changes)
    return envelope


VALID = {"state": "valid"}


@pytest.mark.parametrize(
    ("envelope", "audit", "expected"),
    [
        (runner_envelope(), VALID, ("eligible", [], [])),
        (runner_envelope(integrity={"flags": [{"kind": "pytest_internals_patched", "detail": "x"}]}), VALID,
         ("invalid", ["pytest_internals_patched"], [])),
        (runner_envelope(integrity={"flags": [{"kind": "raised_but_passed"}, {"kind": "runtest_replaced"}]}), VALID,
         ("invalid", ["tampered_outcome"], [])),
        (runner_envelope(integrity={"flags": [{"kind": "protected_file_modified"}]}), {"state": "missing"},
         ("invalid", ["protected_file_modified"], ["task_audit_missing"])),
        (runner_envelope(), {"state": "invalid"}, ("invalid", ["task_audit_invalid"], [])),
        (runner_envelope(), {"state": "missing"}, ("quarantined", ["task_audit_missing"], [])),
        (runner_envelope(), {"state": "overdue"}, ("quarantined", ["task_audit_overdue"], [])),
        (runner_envelope(), {"state": "incomplete"}, ("quarantined", ["task_audit_incomplete"], [])),
        (runner_envelope(), None, ("quarantined", ["task_audit_unknown"], [])),
        (runner_envelope(), {"state": "weak"}, ("eligible", [], ["task_audit_weak"])),
        (runner_envelope(score=None), VALID, ("quarantined", ["no_verdict"], [])),
        (runner_envelope(runner={"network": "not isolated: unshare unavailable", "run": {}}), VALID,
         ("quarantined", ["network_not_isolated"], [])),
        (runner_envelope(runner={"network": "allowed", "apply": {"dropped": [{"path": "tests/t.py"}]}, "run": {}}), VALID,
         ("eligible", [], ["network_allowed", "protected_changes_dropped"])),
        (runner_envelope(digests={}), VALID, ("quarantined", ["environment_unknown"], [])),
        ({**runner_envelope(), "runner": None}, VALID, ("quarantined", ["tests_not_protected"], [])),
        ({**runner_envelope(), "report": {"format": "junit-xml"}}, VALID, ("quarantined", ["outcomes_not_observed"], [])),
    ],
    ids=["clean", "internals", "tampered", "protected-write", "audit-invalid", "audit-missing", "audit-overdue",
         "audit-incomplete", "no-ledger", "audit-weak", "no-verdict", "open-network", "informational", "no-environment",
         "plugin", "report"],
)  # fmt: skip
def test_the_disposition_follows_the_rules(envelope, audit, expected):
    if envelope.get("runner") is None:
        envelope.pop("runner")
    assert assess(envelope, audit) == expected


def test_audit_states_from_the_ledgers_entries():
    now = 1_000 * DAY
    entries = [{"task_id": "t", "ran_at": now - 40 * DAY, "next_due": now - 10 * DAY, "disposition": "valid", "seq": 1}]
    assert audit_state(entries, "other", now)["state"] == "missing"
    assert audit_state(entries, "t", now)["state"] == "overdue"
    fresh = [*entries, {"task_id": "t", "ran_at": now - DAY, "next_due": now + 29 * DAY, "disposition": "weak", "seq": 9}]
    assert audit_state(fresh, "t", now) == {"state": "weak", "ran_at": now - DAY, "next_due": now + 29 * DAY, "seq": 9,
                                            "disposition": "weak"}  # fmt: skip
    failed = [*fresh, {"task_id": "t", "ran_at": now, "next_due": now + DAY, "disposition": "invalid", "seq": 10}]
    assert audit_state(failed, "t", now)["state"] == "invalid"
    cut = [*fresh, {"task_id": "t", "ran_at": now, "next_due": now + DAY, "disposition": "valid", "complete": False}]
    assert audit_state(cut, "t", now)["state"] == "incomplete"


def test_the_environment_digest_changes_with_what_is_installed():
    session = {"python_implementation": "CPython", "python_version": "3.9.18", "pytest_version": "6.0.2",
               "platform": "linux-x86_64", "distributions": ["pytest-6.0.2.dist-info"]}  # fmt: skip
    assert environment_digest(session) == environment_digest(dict(session))
    assert environment_digest({**session, "distributions": ["pytest-6.0.2.dist-info", "evil-1.0.dist-info"]}) != environment_digest(session)
    assert environment_digest({}) is None


def test_the_public_receipt_carries_identity_digests_and_codes_but_no_evidence():
    envelope = runner_envelope(tests=[{"id": "t::secret", "message": "AssertionError: hidden answer 42"}],
                               runner={"network": "unshared", "run": {"command": ["x"], "output_tail": "hidden answer 42"}})  # fmt: skip
    settle(envelope, {"state": "missing"})
    data = receipt(envelope, seq=12)
    assert data["disposition"] == "quarantined" and data["reason_codes"] == ["task_audit_missing"]
    assert data["run"] == {"instance_id": "x-1", "patch_ref": "sha256:p", "harness": "h", "resolved": "resolved",
                           "graded_by": "g", "graded_at": 5}  # fmt: skip
    assert data["digests"]["environment"] == "sha256:e" and data["evidence"] == "private: ledger entry 12"
    assert "hidden answer" not in json.dumps(data) and "t::secret" not in json.dumps(data)


# ---------------------------------------------------------------- on real gradings


@pytest.mark.slow
def test_grade_reports_the_audit_state_and_the_disposition_and_writes_a_receipt(tmp_path):
    from pytest_objective_scoring.ledger import Ledger

    from .conftest import FIXTURES
    from .runner_helpers import run_cli_here as run_cli

    ledger = tmp_path / "l.sqlite"
    common = ["--repo", str(FIXTURES / "repos" / "intervals"), "--instance", str(FIXTURES / "instances" / "intervals.json"),
              "--patch", str(FIXTURES / "patches" / "intervals" / "tamper.diff"), "--ledger", str(ledger)]  # fmt: skip
    graded = run_cli("grade", *common, "--receipt", str(tmp_path / "receipt.json"))
    assert graded.returncode == 1, graded.stderr
    assert "integrity: quarantined (task_audit_missing)" in graded.stdout
    assert "task audit: missing - this task was never audited" in graded.stdout
    data = json.loads((tmp_path / "receipt.json").read_text())
    assert data["disposition"] == "quarantined" and "protected_changes_dropped" in data["informational_codes"]
    assert data["digests"]["interpreter"].startswith("sha256:") and data["digests"]["environment"].startswith("sha256:")
    assert data["evidence"] == "private: ledger entry 1"
    with Ledger(ledger) as opened:
        [score] = [e.data for e in opened.entries("score")]
    assert score["disposition"] == "quarantined" and score["audit_state"] == "missing"
    assert score["digests"]["task"] == data["digests"]["task"]
    unledgered = run_cli("grade", *common[:-2], "--no-ledger", "--json")
    assert json.loads(unledgered.stdout)["integrity"]["reasons"] == ["task_audit_unknown"]


def test_a_live_pytest_run_is_never_eligible_its_tests_were_not_protected(pytester, write_instance, run_and_parse):
    pytester.makepyfile(test_a="def test_a(): pass")
    instance = write_instance(["test_a.py::test_a"])
    _, envelope = run_and_parse(instance)
    assert envelope["integrity"]["disposition"] == "quarantined"
    assert envelope["integrity"]["reasons"] == ["tests_not_protected", "task_audit_missing"]
    assert envelope["digests"]["environment"].startswith("sha256:")


def test_a_run_with_another_test_patch_is_not_the_audited_task():
    envelope = runner_envelope(runner={"network": "unshared", "run": {"command": ["x"]}, "test_patch": {"source": "file"}})
    assert assess(envelope, VALID) == ("quarantined", ["test_patch_overridden"], [])


@pytest.mark.parametrize(
    ("codes", "disposition", "audit", "expected"),
    [
        (["task_audit_missing"], "quarantined", {"state": "valid"}, ("eligible", [], [])),
        ([], "eligible", {"state": "invalid"}, ("invalid", ["task_audit_invalid"], [])),
        (["protected_changes_dropped", "task_audit_weak"], "eligible", {"state": "overdue"},
         ("quarantined", ["task_audit_overdue"], ["protected_changes_dropped"])),
        (["pytest_internals_patched", "task_audit_missing"], "invalid", {"state": "valid"},
         ("invalid", ["pytest_internals_patched"], [])),
        ([], None, {"state": "valid"}, ("quarantined", ["recorded_without_integrity"], [])),
    ],
)  # fmt: skip
def test_a_resumed_run_is_judged_under_the_tasks_audit_now(codes, disposition, audit, expected):
    from pytest_objective_scoring.integrity import recombine

    assert recombine(codes, disposition, audit) == expected


def test_a_harness_named_by_a_path_is_not_a_path_in_the_receipt():
    envelope = runner_envelope(harness="/home/me/checkpoints/model-7b")
    settle(envelope, VALID)
    data = receipt(envelope)
    assert data["run"]["harness"].startswith("sha256:") and "/home" not in json.dumps(data)


def test_a_locked_or_corrupt_ledger_never_breaks_a_live_run(pytester, write_instance, run_and_parse):
    pytester.makepyfile(test_a="def test_a(): pass")
    instance = write_instance(["test_a.py::test_a"])
    (pytester.path / "broken.sqlite").write_bytes(b"this is not a database")
    result, envelope = run_and_parse(instance, "--objective-ledger=broken.sqlite")
    assert result.ret == 0 and envelope["audit"]["state"] == "unknown"
    assert "task_audit_unknown" in envelope["integrity"]["reasons"]
    result.stdout.fnmatch_lines(["integrity: quarantined (tests_not_protected, task_audit_unknown) - the verdict above stands;"
                                 "*the task's audit state is unknown (the ledger *broken.sqlite could not be read*"])  # fmt: skip


@pytest.mark.parametrize("value", ["-5", "0", "inf", "nan", "100000", "soon"])
def test_the_audit_schedule_option_is_validated(value, tmp_path):
    from .runner_helpers import run_cli_here as run_cli

    result = run_cli("audit", "due", "--every", value, "--ledger", str(tmp_path / "l.sqlite"))
    assert result.returncode == 2 and "--every" in result.stderr
