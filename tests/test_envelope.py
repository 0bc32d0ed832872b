from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest

from pytest_objective_scoring import __version__
from pytest_objective_scoring.envelope import (
    SCHEMA_VERSION,
    build_envelope,
    graded_by,
    patch_ref_of,
    swebench_report,
    swebench_resolution,
)
from pytest_objective_scoring.instances import Instance
from pytest_objective_scoring.outcomes import Collector
from pytest_objective_scoring.records import Score, TestGate
from pytest_objective_scoring.scorer import Grading, grade, make_score

ENVELOPE_KEYS = [
    "schema_version",
    "version",
    "created",
    "instance_id",
    "status",
    "no_verdict_reason",
    "score",
    "compat",
    "tests",
    "summary",
    "session",
    "integrity",
    "swebench",
]
SCORE_KEYS = ["instance_id", "patch_ref", "resolved", "fail_to_pass", "pass_to_pass", "graded_by", "graded_at"]
GATES = ["FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL"]


def _facts(nodeid: str, call: str, xfail: bool = False) -> list[dict[str, Any]]:
    base = {"nodeid": nodeid, "xfail": False, "strict_xpass": False, "raised_but_passed": False, "duration": 0.1}
    return [
        {**base, "when": "setup", "outcome": "passed", "message": ""},
        {**base, "when": "call", "outcome": call, "xfail": xfail, "message": "" if call == "passed" else "boom"},
        {**base, "when": "teardown", "outcome": "passed", "message": ""},
    ]


def graded(f2p: dict[str, str], p2p: dict[str, str], compat: str = "strict") -> Grading:
    """Grade an instance whose listed tests ran with the given call outcomes ("absent": never ran)."""
    collector = Collector()
    for nodeid, call in {**f2p, **p2p}.items():
        if call != "absent":
            for fact in _facts(nodeid, call):
                collector.add(fact)
    instance = Instance("owner__repo-1", tuple(f2p), tuple(p2p))
    return grade(instance, collector.records, compat)


def gates_only(f2p: tuple[int, int], p2p: tuple[int, int]) -> Grading:
    return Grading(
        instance_id="i",
        compat="strict",
        results=(),
        fail_to_pass=TestGate(*f2p),
        pass_to_pass=TestGate(*p2p),
        executed=0,
        unlisted=0,
    )


# --- swebench_report ------------------------------------------------------------------------


def test_swebench_report_shape_matches_the_harness() -> None:
    grading = graded({"t.py::f1": "passed", "t.py::f2": "failed"}, {"t.py::p1": "passed", "t.py::p2": "absent"})
    report = swebench_report(grading, "owner__repo-1")
    assert list(report) == ["owner__repo-1"]
    entry = report["owner__repo-1"]
    assert list(entry) == ["patch_is_None", "patch_exists", "patch_successfully_applied", "resolved", "tests_status"]
    assert entry["patch_is_None"] is False
    assert entry["patch_exists"] is True
    assert entry["patch_successfully_applied"] is True
    assert entry["resolved"] is False
    assert list(entry["tests_status"]) == GATES
    for gate in GATES:
        assert list(entry["tests_status"][gate]) == ["success", "failure"]
    assert entry["tests_status"] == {
        "FAIL_TO_PASS": {"success": ["t.py::f1"], "failure": ["t.py::f2"]},
        "PASS_TO_PASS": {"success": ["t.py::p1"], "failure": ["t.py::p2"]},
        "FAIL_TO_FAIL": {"success": [], "failure": []},
        "PASS_TO_FAIL": {"success": [], "failure": []},
    }
    json.dumps(report)  # JSON-native


def test_swebench_report_resolved_when_everything_passes() -> None:
    grading = graded({"t.py::f": "passed"}, {"t.py::p": "passed"})
    entry = swebench_report(grading, "x")["x"]
    assert entry["resolved"] is True
    assert entry["tests_status"]["FAIL_TO_PASS"] == {"success": ["t.py::f"], "failure": []}


def test_swebench_report_without_an_applied_patch_has_no_tests_status() -> None:
    grading = graded({"t.py::f": "passed"}, {"t.py::p": "passed"})
    entry = swebench_report(grading, "x", patch_applied=False)["x"]
    assert entry == {
        "patch_is_None": False,
        "patch_exists": True,
        "patch_successfully_applied": False,
        "resolved": False,
    }
    assert swebench_report(None, "x")["x"] == {
        "patch_is_None": False,
        "patch_exists": True,
        "patch_successfully_applied": True,
        "resolved": False,
    }
    assert swebench_report(None, "x", patch_exists=False)["x"]["patch_exists"] is False


@pytest.mark.parametrize(
    ("f2p", "p2p", "resolution"),
    [
        ((2, 2), (3, 3), "RESOLVED_FULL"),
        ((1, 1), (0, 0), "RESOLVED_FULL"),
        ((0, 0), (0, 0), "RESOLVED_FULL"),
        ((2, 1), (3, 3), "RESOLVED_PARTIAL"),
        ((3, 2), (0, 0), "RESOLVED_PARTIAL"),
        ((2, 0), (3, 3), "RESOLVED_NO"),
        ((2, 2), (3, 2), "RESOLVED_NO"),
        ((2, 1), (3, 2), "RESOLVED_NO"),
        ((2, 0), (3, 0), "RESOLVED_NO"),
    ],
    ids=[
        "full",
        "full-no-p2p",
        "full-vacuous",
        "partial",
        "partial-no-p2p",
        "no-f2p-passed",
        "no-p2p-broken",
        "no-partial-f2p-but-p2p-broken",
        "no-nothing",
    ],
)
def test_swebench_resolution_rules(f2p: tuple[int, int], p2p: tuple[int, int], resolution: str) -> None:
    grading = gates_only(f2p, p2p)
    assert swebench_resolution(grading) == resolution
    score = make_score(grading, "sha256:x", "g", 1)
    envelope = build_envelope(instance_id="i", score=score, grading=grading, no_verdict=None, session={})
    assert envelope["swebench"]["resolution"] == resolution
    assert envelope["swebench"]["report"]["i"]["resolved"] is (resolution == "RESOLVED_FULL")


def test_no_verdict_is_reported_to_swebench_readers_as_an_infrastructure_failure() -> None:
    grading = gates_only((2, 2), (3, 3))
    envelope = build_envelope(instance_id="i", score=None, grading=grading, no_verdict="timed out", session={})
    assert envelope["swebench"]["resolution"] is None
    entry = envelope["swebench"]["report"]["i"]
    assert entry["resolved"] is False and entry["infra_failure"] is True
    assert entry["infra_failure_reason"] == "timed out"
    assert "tests_status" not in entry


@pytest.mark.parametrize(
    ("f2p", "p2p"),
    [
        ({"t.py::f": "passed"}, {"t.py::p": "passed"}),
        ({"t.py::f": "passed"}, {"t.py::p": "failed"}),
        ({"t.py::f": "failed", "t.py::g": "passed"}, {"t.py::p": "passed"}),
        ({"t.py::f": "absent"}, {}),
    ],
    ids=["resolved", "p2p-broken", "partial", "missing"],
)
def test_swebench_resolved_agrees_with_the_score(f2p: dict[str, str], p2p: dict[str, str]) -> None:
    grading = graded(f2p, p2p)
    score = make_score(grading, "sha256:x", "g", 1)
    assert swebench_report(grading, "i")["i"]["resolved"] is (score.resolved == "resolved")


def test_swebench_report_follows_swebench_compat_counting() -> None:
    collector = Collector()
    for fact in _facts("t.py::p", "skipped"):
        collector.add(fact)
    for fact in _facts("t.py::f", "passed"):
        collector.add(fact)
    grading = grade(Instance("i", ("t.py::f",), ("t.py::p",)), collector.records, "swebench")
    status = swebench_report(grading, "i")["i"]["tests_status"]
    assert status["PASS_TO_PASS"] == {"success": ["t.py::p"], "failure": []}


# --- build_envelope -------------------------------------------------------------------------


def _verdict_envelope(**overrides: Any) -> dict[str, Any]:
    grading = graded({"t.py::f": "passed", "t.py::g": "failed"}, {"t.py::p": "passed", "t.py::q": "absent"})
    score = make_score(grading, "sha256:abc", "grader", 1700000000)
    kwargs: dict[str, Any] = {
        "instance_id": "owner__repo-1",
        "score": score,
        "grading": grading,
        "no_verdict": None,
        "session": {"exitstatus": 1},
        "integrity": [{"kind": "dropped", "path": "conftest.py"}],
    }
    kwargs.update(overrides)
    return build_envelope(**kwargs)


def test_build_envelope_keys_in_order() -> None:
    envelope = _verdict_envelope()
    assert list(envelope) == ENVELOPE_KEYS
    assert envelope["schema_version"] == SCHEMA_VERSION == 1
    assert envelope["version"] == __version__
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", envelope["created"])
    assert envelope["instance_id"] == "owner__repo-1"
    assert envelope["status"] == "verdict"
    assert envelope["no_verdict_reason"] is None
    assert envelope["compat"] == "strict"
    assert envelope["session"] == {"exitstatus": 1}
    assert envelope["integrity"] == {"flags": [{"kind": "dropped", "path": "conftest.py"}]}
    assert list(envelope["swebench"]) == ["resolution", "report"]
    json.dumps(envelope)


def test_build_envelope_score_has_exactly_the_score_fields() -> None:
    envelope = _verdict_envelope()
    score = envelope["score"]
    assert list(score) == SCORE_KEYS
    assert Score.from_dict(score).to_dict() == score
    assert score["resolved"] == "not_resolved"
    assert score["fail_to_pass"] == {"total": 2, "passed": 1, "verdict": "violated"}


def test_build_envelope_tests_and_summary() -> None:
    envelope = _verdict_envelope()
    assert [t["id"] for t in envelope["tests"]] == ["t.py::f", "t.py::g", "t.py::p", "t.py::q"]
    assert [t["status"] for t in envelope["tests"]] == ["passed", "failed", "preserved", "missing"]
    assert envelope["summary"] == {
        "executed": 3,
        "unlisted": 0,
        "FAIL_TO_PASS": {"total": 2, "counted": 1, "not_counted": ["t.py::g"], "missing": []},
        "PASS_TO_PASS": {"total": 2, "counted": 1, "not_counted": [], "missing": ["t.py::q"]},
    }


def test_build_envelope_no_verdict() -> None:
    envelope = _verdict_envelope(no_verdict="the test session was interrupted")
    assert envelope["status"] == "no_verdict"
    assert envelope["no_verdict_reason"] == "the test session was interrupted"
    assert list(envelope["score"]) == SCORE_KEYS  # the score is kept for inspection, but it is no verdict


def test_build_envelope_without_grading() -> None:
    envelope = build_envelope(
        instance_id="i", score=None, grading=None, no_verdict="infrastructure failure (setup): x", session={}
    )
    assert list(envelope) == ENVELOPE_KEYS
    assert envelope["status"] == "no_verdict"
    assert envelope["score"] is None
    assert envelope["compat"] is None
    assert envelope["tests"] == []
    assert envelope["summary"] == {}
    assert envelope["integrity"] == {"flags": []}
    assert envelope["swebench"] == {
        "resolution": None,
        "report": {
            "i": {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": True, "resolved": False,
                  "infra_failure": True, "infra_failure_reason": "infrastructure failure (setup): x"}
        },
    }  # fmt: skip


def test_build_envelope_patch_not_applied_is_resolved_no_even_with_a_grading() -> None:
    grading = gates_only((2, 0), (3, 0))
    score = make_score(grading, "sha256:x", "g", 1)
    envelope = build_envelope(instance_id="i", score=score, grading=grading, no_verdict=None, session={},
                              patch_applied=False)  # fmt: skip
    assert envelope["status"] == "verdict"
    assert envelope["swebench"]["resolution"] == "RESOLVED_NO"
    assert envelope["swebench"]["report"]["i"]["patch_successfully_applied"] is False
    assert "tests_status" not in envelope["swebench"]["report"]["i"]


def test_build_envelope_extra_keys_are_appended() -> None:
    envelope = _verdict_envelope(extra={"runner": {"steps": []}, "patch_ref": "sha256:abc"})
    assert list(envelope) == [*ENVELOPE_KEYS, "runner", "patch_ref"]
    assert envelope["runner"] == {"steps": []}


# --- patch_ref_of and graded_by -------------------------------------------------------------


@pytest.mark.parametrize(
    "diff",
    [b"", b"diff --git a/x b/x\n", b"diff --git a/x b/x\r\n", "caf\u00e9\n".encode()],
    ids=["empty", "lf", "crlf", "utf8"],
)
def test_patch_ref_of_is_sha256_of_the_bytes(diff: bytes) -> None:
    ref = patch_ref_of(diff)
    assert ref == "sha256:" + hashlib.sha256(diff).hexdigest()
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", ref)


def test_patch_ref_of_distinguishes_bytes() -> None:
    assert patch_ref_of(b"a\n") != patch_ref_of(b"a\r\n")
    assert patch_ref_of(b"a\n") == patch_ref_of(b"a\n")


@pytest.mark.parametrize(
    ("timeout", "shown"),
    [(None, "timeout=none"), (30.0, "timeout=30s"), (2.5, "timeout=2.5s")],
    ids=["no-timeout", "whole-seconds", "fractional"],
)
def test_graded_by_names_the_instrument(timeout: float | None, shown: str) -> None:
    text = graded_by(
        mode="plugin",
        pytest_version="9.0.3",
        python="CPython-3.11.9",
        platform="linux-x86_64",
        timeout=timeout,
        compat="swebench",
    )
    assert f"pytest-objective-scoring/{__version__}" in text
    assert "(plugin)" in text
    assert "pytest/9.0.3" in text
    assert "CPython-3.11.9" in text
    assert "linux-x86_64" in text
    assert shown in text
    assert "compat=swebench" in text


def test_graded_by_differs_by_compat_and_timeout() -> None:
    common = {"mode": "cli", "pytest_version": "8", "python": "py", "platform": "p"}
    a = graded_by(timeout=10, compat="strict", **common)
    b = graded_by(timeout=10, compat="swebench", **common)
    c = graded_by(timeout=20, compat="strict", **common)
    assert len({a, b, c}) == 3
