from __future__ import annotations

import dataclasses
import json

import pytest

from pytest_objective_scoring.records import (
    NOT_RESOLVED,
    RESOLVED,
    SATISFIED,
    VIOLATED,
    RecordError,
    Score,
    TestGate,
)

SCORE_KEYS = ["instance_id", "patch_ref", "resolved", "fail_to_pass", "pass_to_pass", "graded_by", "graded_at"]
GATE_KEYS = ["total", "passed", "verdict"]


def make_score(f2p: tuple[int, int] = (2, 2), p2p: tuple[int, int] = (3, 3)) -> Score:
    return Score(
        instance_id="owner__repo-1",
        patch_ref="sha256:" + "ab" * 32,
        fail_to_pass=TestGate(total=f2p[0], passed=f2p[1]),
        pass_to_pass=TestGate(total=p2p[0], passed=p2p[1]),
        graded_by="pytest-objective-scoring/0.1.0 (plugin)",
        graded_at=1_700_000_000,
    )


# --- TestGate: derived verdict ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("total", "passed", "verdict"),
    [
        (3, 3, SATISFIED),
        (3, 2, VIOLATED),
        (3, 0, VIOLATED),
        (1, 1, SATISFIED),
        (1, 0, VIOLATED),
        (0, 0, SATISFIED),
    ],
    ids=["all-passed", "one-short", "none-passed", "single-passed", "single-failed", "empty-gate-vacuous"],
)
def test_gate_verdict_is_derived_from_counts(total: int, passed: int, verdict: str) -> None:
    gate = TestGate(total=total, passed=passed)
    assert gate.verdict == verdict
    assert gate.to_dict() == {"total": total, "passed": passed, "verdict": verdict}


def test_gate_constructor_refuses_a_verdict() -> None:
    with pytest.raises(TypeError):
        TestGate(total=1, passed=0, verdict=SATISFIED)  # type: ignore[call-arg]


def test_gate_verdict_cannot_be_assigned() -> None:
    gate = TestGate(total=2, passed=1)
    with pytest.raises(AttributeError):
        gate.verdict = SATISFIED  # type: ignore[misc]
    with pytest.raises(AttributeError):
        object.__setattr__(gate, "verdict", SATISFIED)  # bypassing frozen still meets the property
    with pytest.raises(dataclasses.FrozenInstanceError):
        gate.passed = 2  # type: ignore[misc]
    assert gate.verdict == VIOLATED


def test_gate_has_no_verdict_field() -> None:
    assert [f.name for f in dataclasses.fields(TestGate)] == ["total", "passed"]


def test_gate_to_dict_has_exactly_the_spec_fields_in_order() -> None:
    assert list(TestGate(total=4, passed=1).to_dict()) == GATE_KEYS


@pytest.mark.parametrize(
    ("total", "passed"),
    [
        (-1, 0),
        (2, -1),
        (2, 3),
        (True, True),
        (1, False),
        (1.0, 1),
        (1, 1.0),
        ("1", 1),
        (None, 0),
    ],
    ids=[
        "negative-total",
        "negative-passed",
        "passed-above-total",
        "bool-counts",
        "bool-passed",
        "float-total",
        "float-passed",
        "str-total",
        "none-total",
    ],
)
def test_gate_refuses_invalid_counts(total: object, passed: object) -> None:
    with pytest.raises(RecordError):
        TestGate(total=total, passed=passed)  # type: ignore[arg-type]


def test_gate_from_dict_round_trips() -> None:
    for gate in (TestGate(0, 0), TestGate(5, 5), TestGate(5, 2)):
        data = json.loads(json.dumps(gate.to_dict()))
        assert TestGate.from_dict(data) == gate


@pytest.mark.parametrize(
    "data",
    [
        {"total": 1, "passed": 1},
        {"total": 1, "verdict": "satisfied"},
        {"passed": 1, "verdict": "satisfied"},
        {"total": 1, "passed": 1, "verdict": "satisfied", "note": "x"},
    ],
    ids=["missing-verdict", "missing-passed", "missing-total", "extra-field"],
)
def test_gate_from_dict_refuses_missing_and_extra_fields(data: dict[str, object]) -> None:
    with pytest.raises(RecordError) as excinfo:
        TestGate.from_dict(data)
    message = str(excinfo.value)
    assert "exactly the fields total, passed, verdict" in message
    if "note" in data:
        assert "unexpected note" in message
    else:
        missing = next(k for k in GATE_KEYS if k not in data)
        assert f"missing {missing}" in message


@pytest.mark.parametrize(
    ("data", "claimed", "derived"),
    [
        ({"total": 3, "passed": 2, "verdict": "satisfied"}, "satisfied", "violated"),
        ({"total": 3, "passed": 3, "verdict": "violated"}, "violated", "satisfied"),
    ],
    ids=["claims-satisfied-with-a-failure", "claims-violated-when-all-passed"],
)
def test_gate_from_dict_refuses_a_contradicting_verdict(data: dict[str, object], claimed: str, derived: str) -> None:
    with pytest.raises(RecordError) as excinfo:
        TestGate.from_dict(data)
    message = str(excinfo.value)
    assert "contradicts its counts" in message
    assert repr(claimed) in message
    assert repr(derived) in message
    assert f"passed {data['passed']} of {data['total']}" in message


@pytest.mark.parametrize(
    "data",
    [
        {"total": 2, "passed": 3, "verdict": "violated"},
        {"total": -1, "passed": 0, "verdict": "violated"},
        {"total": 1, "passed": True, "verdict": "satisfied"},
        {"total": "1", "passed": 1, "verdict": "satisfied"},
    ],
    ids=["passed-above-total", "negative", "bool", "string"],
)
def test_gate_from_dict_refuses_invalid_counts(data: dict[str, object]) -> None:
    with pytest.raises(RecordError):
        TestGate.from_dict(data)


def test_gate_from_dict_refuses_a_non_object() -> None:
    with pytest.raises(RecordError, match="must be a JSON object"):
        TestGate.from_dict([1, 1, "satisfied"])  # type: ignore[arg-type]


# --- Score: derived resolution ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("f2p", "p2p", "resolved"),
    [
        ((2, 2), (3, 3), RESOLVED),
        ((2, 2), (3, 2), NOT_RESOLVED),
        ((2, 1), (3, 3), NOT_RESOLVED),
        ((2, 0), (3, 0), NOT_RESOLVED),
        ((1, 1), (0, 0), RESOLVED),
    ],
    ids=[
        "both-satisfied-resolved",
        "all-f2p-pass-one-p2p-broken",
        "one-f2p-fails",
        "nothing-passes",
        "no-p2p-tests",
    ],
)
def test_score_resolved_is_the_conjunction_of_both_gates(
    f2p: tuple[int, int], p2p: tuple[int, int], resolved: str
) -> None:
    score = make_score(f2p, p2p)
    assert score.resolved == resolved
    assert score.to_dict()["resolved"] == resolved


def test_spec_phase2_case_fix_that_breaks_a_pass_to_pass_test_is_not_resolved() -> None:
    score = make_score(f2p=(3, 3), p2p=(12, 11))
    assert score.fail_to_pass.verdict == SATISFIED
    assert score.pass_to_pass.verdict == VIOLATED
    assert score.resolved == NOT_RESOLVED


def test_spec_phase2_case_both_gates_satisfied_is_resolved() -> None:
    score = make_score(f2p=(3, 3), p2p=(12, 12))
    assert score.fail_to_pass.verdict == SATISFIED
    assert score.pass_to_pass.verdict == SATISFIED
    assert score.resolved == RESOLVED


def test_score_constructor_refuses_resolved() -> None:
    with pytest.raises(TypeError):
        Score(  # type: ignore[call-arg]
            instance_id="i",
            patch_ref="p",
            resolved=RESOLVED,
            fail_to_pass=TestGate(1, 0),
            pass_to_pass=TestGate(1, 1),
            graded_by="g",
            graded_at=1,
        )


def test_dataclasses_replace_cannot_set_resolved() -> None:
    score = make_score((2, 1), (1, 1))
    with pytest.raises(TypeError):
        dataclasses.replace(score, resolved=RESOLVED)  # type: ignore[call-arg]


def test_score_resolved_cannot_be_assigned() -> None:
    score = make_score((2, 1), (1, 1))
    with pytest.raises(AttributeError):
        score.resolved = RESOLVED  # type: ignore[misc]
    with pytest.raises(AttributeError):
        object.__setattr__(score, "resolved", RESOLVED)
    with pytest.raises(dataclasses.FrozenInstanceError):
        score.fail_to_pass = TestGate(2, 2)  # type: ignore[misc]
    assert score.resolved == NOT_RESOLVED


def test_score_has_no_resolved_field() -> None:
    names = [f.name for f in dataclasses.fields(Score)]
    assert "resolved" not in names
    assert names == ["instance_id", "patch_ref", "fail_to_pass", "pass_to_pass", "graded_by", "graded_at"]


def test_score_to_dict_has_exactly_the_spec_fields_in_order() -> None:
    data = make_score((2, 1), (3, 3)).to_dict()
    assert list(data) == SCORE_KEYS
    assert list(data["fail_to_pass"]) == GATE_KEYS
    assert list(data["pass_to_pass"]) == GATE_KEYS
    assert data == {
        "instance_id": "owner__repo-1",
        "patch_ref": "sha256:" + "ab" * 32,
        "resolved": NOT_RESOLVED,
        "fail_to_pass": {"total": 2, "passed": 1, "verdict": VIOLATED},
        "pass_to_pass": {"total": 3, "passed": 3, "verdict": SATISFIED},
        "graded_by": "pytest-objective-scoring/0.1.0 (plugin)",
        "graded_at": 1_700_000_000,
    }


@pytest.mark.parametrize(
    ("f2p", "p2p"),
    [((2, 2), (3, 3)), ((2, 2), (3, 2)), ((2, 0), (0, 0))],
    ids=["resolved", "not-resolved-p2p", "not-resolved-f2p"],
)
def test_score_from_dict_round_trips_through_json(f2p: tuple[int, int], p2p: tuple[int, int]) -> None:
    score = make_score(f2p, p2p)
    again = Score.from_dict(json.loads(json.dumps(score.to_dict())))
    assert again == score
    assert again.resolved == score.resolved
    assert again.to_dict() == score.to_dict()


@pytest.mark.parametrize(
    "field_name",
    SCORE_KEYS,
    ids=SCORE_KEYS,
)
def test_score_from_dict_refuses_a_missing_field(field_name: str) -> None:
    data = make_score().to_dict()
    del data[field_name]
    with pytest.raises(RecordError) as excinfo:
        Score.from_dict(data)
    assert f"missing {field_name}" in str(excinfo.value)


@pytest.mark.parametrize(
    "extra",
    ["verdict", "status", "tests"],
    ids=["verdict", "status", "tests"],
)
def test_score_from_dict_refuses_an_extra_field(extra: str) -> None:
    data = make_score().to_dict()
    data[extra] = "resolved"
    with pytest.raises(RecordError) as excinfo:
        Score.from_dict(data)
    assert f"unexpected {extra}" in str(excinfo.value)


@pytest.mark.parametrize(
    ("f2p", "p2p", "claimed", "derived"),
    [
        ((2, 2), (3, 2), RESOLVED, NOT_RESOLVED),
        ((2, 1), (3, 3), RESOLVED, NOT_RESOLVED),
        ((2, 2), (3, 3), NOT_RESOLVED, RESOLVED),
    ],
    ids=["claims-resolved-with-broken-p2p", "claims-resolved-with-failing-f2p", "claims-not-resolved-when-both-hold"],
)
def test_score_from_dict_refuses_a_contradicting_resolved(
    f2p: tuple[int, int], p2p: tuple[int, int], claimed: str, derived: str
) -> None:
    data = make_score(f2p, p2p).to_dict()
    data["resolved"] = claimed
    with pytest.raises(RecordError) as excinfo:
        Score.from_dict(data)
    message = str(excinfo.value)
    assert "contradicts its gates" in message
    assert repr(claimed) in message
    assert repr(derived) in message


def test_score_from_dict_refuses_a_gate_verdict_that_contradicts_its_counts() -> None:
    data = make_score((2, 1), (3, 3)).to_dict()
    data["fail_to_pass"]["verdict"] = SATISFIED
    data["resolved"] = RESOLVED  # consistent with the lie, so only the gate check can catch it
    with pytest.raises(RecordError) as excinfo:
        Score.from_dict(data)
    assert "TestGate verdict 'satisfied' contradicts its counts" in str(excinfo.value)


def test_score_from_dict_refuses_a_gate_with_extra_fields() -> None:
    data = make_score().to_dict()
    data["pass_to_pass"]["failed"] = 0
    with pytest.raises(RecordError, match="unexpected failed"):
        Score.from_dict(data)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("fail_to_pass", {"total": 1, "passed": 2, "verdict": "violated"}),
        ("pass_to_pass", {"total": -3, "passed": 0, "verdict": "violated"}),
        ("fail_to_pass", [1, 1, "satisfied"]),
        ("graded_at", 1.5),
        ("graded_at", True),
        ("instance_id", ""),
        ("patch_ref", None),
        ("graded_by", 7),
    ],
    ids=[
        "f2p-passed-above-total",
        "p2p-negative",
        "f2p-not-object",
        "graded-at-float",
        "graded-at-bool",
        "empty-instance-id",
        "none-patch-ref",
        "int-graded-by",
    ],
)
def test_score_from_dict_refuses_invalid_values(name: str, value: object) -> None:
    data = make_score().to_dict()
    data[name] = value
    with pytest.raises(RecordError):
        Score.from_dict(data)


def test_score_refuses_non_gate_values() -> None:
    with pytest.raises(RecordError, match="Score.fail_to_pass must be a TestGate"):
        Score(
            instance_id="i",
            patch_ref="p",
            fail_to_pass={"total": 1, "passed": 1, "verdict": "satisfied"},  # type: ignore[arg-type]
            pass_to_pass=TestGate(1, 1),
            graded_by="g",
            graded_at=1,
        )


def test_score_from_dict_refuses_a_non_object() -> None:
    with pytest.raises(RecordError, match="Score must be a JSON object"):
        Score.from_dict("resolved")  # type: ignore[arg-type]


def test_record_error_is_a_value_error() -> None:
    assert issubclass(RecordError, ValueError)
