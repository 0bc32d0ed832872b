from __future__ import annotations

from typing import Any

import pytest

from pytest_objective_scoring.outcomes import OUTCOMES, Collector, TestRecord, fold

NODE = "tests/test_x.py::test_it"


def fact(when: str, outcome: str, nodeid: str = NODE, **flags: Any) -> dict[str, Any]:
    """A fact shaped like ``recorder.fact_from_report`` makes it."""
    data: dict[str, Any] = {
        "nodeid": nodeid,
        "when": when,
        "outcome": outcome,
        "xfail": False,
        "strict_xpass": False,
        "raised_but_passed": False,
        "duration": 0.25,
        "message": "" if outcome == "passed" else f"{when} {outcome}",
    }
    data.update(flags)
    return data


S_PASS = fact("setup", "passed")
T_PASS = fact("teardown", "passed")
T_FAIL = fact("teardown", "failed")

FOLD_CASES = [
    ("setup-error", [fact("setup", "failed"), T_PASS], "error"),
    ("setup-skip", [fact("setup", "skipped"), T_PASS], "skipped"),
    ("setup-xfail-skip", [fact("setup", "skipped", xfail=True), T_PASS], "xfailed"),
    ("call-pass", [S_PASS, fact("call", "passed"), T_PASS], "passed"),
    ("call-fail", [S_PASS, fact("call", "failed"), T_PASS], "failed"),
    ("call-skip", [S_PASS, fact("call", "skipped"), T_PASS], "skipped"),
    ("xfail", [S_PASS, fact("call", "skipped", xfail=True), T_PASS], "xfailed"),
    ("non-strict-xpass", [S_PASS, fact("call", "passed", xfail=True), T_PASS], "xpassed"),
    ("strict-xpass", [S_PASS, fact("call", "failed", strict_xpass=True), T_PASS], "xpassed_strict"),
    ("teardown-error-after-pass", [S_PASS, fact("call", "passed"), T_FAIL], "error"),
    ("teardown-error-after-xpass", [S_PASS, fact("call", "passed", xfail=True), T_FAIL], "error"),
    ("teardown-error-after-xfail", [S_PASS, fact("call", "skipped", xfail=True), T_FAIL], "error"),
    ("teardown-error-after-call-skip", [S_PASS, fact("call", "skipped"), T_FAIL], "error"),
    ("teardown-error-after-setup-skip", [fact("setup", "skipped"), T_FAIL], "error"),
    ("failed-call-then-teardown-error-stays-failed", [S_PASS, fact("call", "failed"), T_FAIL], "failed"),
    ("strict-xpass-then-teardown-error-stays", [S_PASS, fact("call", "failed", strict_xpass=True), T_FAIL], "xpassed_strict"),
    ("setup-error-then-teardown-error-stays-error", [fact("setup", "failed"), T_FAIL], "error"),
    ("crash-after-setup", [S_PASS, fact("???", "failed")], "crashed"),
    ("crash-only", [fact("???", "failed")], "crashed"),
    ("crash-after-full-run", [S_PASS, fact("call", "passed"), T_PASS, fact("???", "failed")], "crashed"),
    ("raised-but-passed-call", [S_PASS, fact("call", "passed", raised_but_passed=True), T_PASS], "tampered"),
    ("raised-but-passed-setup", [fact("setup", "passed", raised_but_passed=True), fact("call", "passed"), T_PASS], "tampered"),
    ("raised-but-passed-teardown", [S_PASS, fact("call", "passed"), fact("teardown", "passed", raised_but_passed=True)], "tampered"),
    ("no-teardown-after-pass", [S_PASS, fact("call", "passed")], "incomplete"),
    ("setup-only", [S_PASS], "incomplete"),
    ("setup-and-teardown-no-call", [S_PASS, T_PASS], "incomplete"),
    ("nothing", [], "incomplete"),
]


@pytest.mark.parametrize(("facts", "expected"), [c[1:] for c in FOLD_CASES], ids=[c[0] for c in FOLD_CASES])
def test_fold(facts: list[dict[str, Any]], expected: str) -> None:
    assert fold(facts) == expected
    assert expected in OUTCOMES


def test_fold_teardown_error_under_xfail_as_pytest_reports_it() -> None:
    # pytest's skipping plugin rewrites the report of *any* phase that raises in an
    # xfail-marked test, teardown included: a raising teardown arrives as
    # outcome "skipped" with wasxfail (so the fact has xfail=True), not as "failed".
    # The module's rule "a failed teardown turns xfailed/xpassed into error" must
    # still hold for the facts that pytest actually produces.
    xfailed = [S_PASS, fact("call", "skipped", xfail=True), fact("teardown", "skipped", xfail=True)]
    xpassed = [S_PASS, fact("call", "passed", xfail=True), fact("teardown", "skipped", xfail=True)]
    assert fold(xfailed) == "error"
    assert fold(xpassed) == "error"


def test_fold_any_failed_call_report_fails_the_test() -> None:
    # subtests report each failing subtest as a call report; the test's own last report may say passed
    assert fold([S_PASS, fact("call", "failed"), fact("call", "passed"), T_PASS]) == "failed"
    assert fold([S_PASS, fact("call", "passed"), fact("call", "passed"), T_PASS]) == "passed"


def test_fold_uses_the_last_fact_of_other_phases() -> None:
    assert fold([S_PASS, fact("call", "passed"), fact("teardown", "failed"), T_PASS]) == "passed"


def test_fold_accepts_any_iterable() -> None:
    assert fold(iter([S_PASS, fact("call", "passed"), T_PASS])) == "passed"


def test_outcomes_names() -> None:
    assert OUTCOMES == (
        "passed",
        "xpassed",
        "xfailed",
        "failed",
        "xpassed_strict",
        "error",
        "skipped",
        "crashed",
        "tampered",
        "incomplete",
        "missing",
    )


# --- TestRecord -----------------------------------------------------------------------------


def test_record_properties() -> None:
    record = TestRecord(NODE, [S_PASS, fact("call", "failed", message="boom"), T_PASS])
    assert record.outcome == "failed"
    assert record.final
    assert record.duration == 0.75
    assert record.phases == {"setup": "passed", "call": "failed", "teardown": "passed"}
    assert record.message == "boom"


def test_record_not_final_without_teardown_and_final_after_crash() -> None:
    assert not TestRecord(NODE, [S_PASS, fact("call", "passed")]).final
    assert TestRecord(NODE, [S_PASS, fact("???", "failed")]).final
    assert TestRecord(NODE, []).message == ""


# --- Collector ------------------------------------------------------------------------------


def test_collector_keeps_arrival_order_across_interleaved_tests() -> None:
    a, b, c = "t.py::c_first", "t.py::a_second", "t.py::b_third"
    collector = Collector()
    for item in [
        fact("setup", "passed", a),
        fact("setup", "passed", b),
        fact("call", "failed", a),
        fact("setup", "passed", c),
        fact("call", "passed", b),
        fact("teardown", "passed", b),
        fact("teardown", "passed", a),
        fact("call", "passed", c),
        fact("teardown", "passed", c),
    ]:
        collector.add(item)
    assert list(collector.records) == [a, b, c]
    assert collector.outcomes() == {a: "failed", b: "passed", c: "passed"}
    assert list(collector.outcomes()) == [a, b, c]
    assert [f["when"] for f in collector.records[a].facts] == ["setup", "call", "teardown"]


def test_collector_rerun_discards_the_attempt() -> None:
    collector = Collector()
    for item in [
        S_PASS,
        fact("call", "rerun"),
        S_PASS,
        fact("call", "rerun"),
        S_PASS,
        fact("call", "passed"),
        T_PASS,
    ]:
        collector.add(item)
    record = collector.records[NODE]
    assert record.outcome == "passed"
    assert [f["when"] for f in record.facts] == ["setup", "call", "teardown"]
    assert all(f["outcome"] != "rerun" for f in record.facts)


def test_collector_rerun_on_setup_discards_the_attempt() -> None:
    collector = Collector()
    for item in [fact("setup", "rerun"), fact("setup", "failed"), T_PASS]:
        collector.add(item)
    assert collector.outcomes() == {NODE: "error"}


def test_collector_only_rerun_leaves_no_outcome() -> None:
    collector = Collector()
    collector.add(S_PASS)
    collector.add(fact("call", "rerun"))
    assert collector.outcomes() == {}


def test_collector_an_id_that_runs_twice_counts_its_worst_run() -> None:
    # a repeat plugin, or forged "passed" reports appended after the real failing run
    collector = Collector()
    for item in [S_PASS, fact("call", "failed"), T_PASS, S_PASS, fact("call", "passed"), T_PASS]:
        collector.add(item)
    record = collector.records[NODE]
    assert record.outcome == "failed"
    assert record.earlier == ("failed",)
    assert len(record.facts) == 3  # the phases of the latest run


def test_collector_two_passing_runs_pass() -> None:
    collector = Collector()
    for item in [S_PASS, fact("call", "passed"), T_PASS] * 2:
        collector.add(item)
    assert collector.outcomes() == {NODE: "passed"}


def test_collector_run_after_a_crash_stays_crashed() -> None:
    collector = Collector()
    for item in [S_PASS, fact("???", "failed"), S_PASS, fact("call", "passed"), T_PASS]:
        collector.add(item)
    assert collector.outcomes() == {NODE: "crashed"}


def test_collector_crash_after_a_finished_run_starts_over() -> None:
    collector = Collector()
    for item in [S_PASS, fact("call", "passed"), T_PASS, fact("???", "failed")]:
        collector.add(item)
    assert collector.outcomes() == {NODE: "crashed"}
    assert len(collector.records[NODE].facts) == 1


def test_collector_interrupted_test_is_incomplete() -> None:
    collector = Collector()
    collector.add(S_PASS)
    collector.add(fact("call", "passed"))
    assert collector.outcomes() == {NODE: "incomplete"}


def test_collector_restarted_id_keeps_its_first_position() -> None:
    a, b = "t.py::a", "t.py::b"
    collector = Collector()
    for nodeid in (a, b, a):
        for item in (fact("setup", "passed", nodeid), fact("call", "passed", nodeid), fact("teardown", "passed", nodeid)):
            collector.add(item)
    assert list(collector.outcomes()) == [a, b]
