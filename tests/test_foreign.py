"""Grading other runners' JUnit XML (Surefire, jest-junit, go-junit-report, cargo-nextest).

The fixtures in ``fixtures/junit/`` are written by hand in each runner's real format
(``fixtures/junit/README.md`` says what each holds); small files made here cover the
shapes one case needs. No subprocess: the grader reads files.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import foreign
from pytest_objective_scoring.foreign import GO, JEST, NEXTEST, RUNNERS, SUREFIRE, JUnitError
from pytest_objective_scoring.instances import Instance, load_instance, parse_instance
from pytest_objective_scoring.outcomes import Collector
from pytest_objective_scoring.reports import ReportError

from .conftest import FIXTURES, by_id, check_envelope

JUNIT = FIXTURES / "junit"
REPORTS = {
    SUREFIRE: JUNIT / "surefire",
    JEST: JUNIT / "jest" / "junit.xml",
    GO: JUNIT / "go" / "report.xml",
    NEXTEST: JUNIT / "nextest" / "junit.xml",
}
NO_VERDICT_REPORTS = {
    SUREFIRE: JUNIT / "surefire",
    JEST: JUNIT / "jest" / "junit.xml",
    GO: JUNIT / "go" / "build-failed.xml",
    NEXTEST: JUNIT / "nextest" / "setup-script-failed.xml",
}


def fixture_instance(name: str) -> Instance:
    return load_instance(JUNIT / "instances" / f"{name}.json")


def make_instance(f2p: Sequence[str], p2p: Sequence[str] = ()) -> Instance:
    return parse_instance({"instance_id": "demo__junit-1", "FAIL_TO_PASS": list(f2p), "PASS_TO_PASS": list(p2p)})


def grade(path: Path, instance: Instance, **kwargs: Any) -> dict[str, Any]:
    envelope = foreign.grade_junit(path, instance, **kwargs)
    check_envelope(envelope)
    json.dumps(envelope)  # JSON-native throughout
    return envelope


def gates(envelope: dict[str, Any]) -> tuple[str, tuple[int, int], tuple[int, int]] | str:
    score = envelope["score"]
    if score is None:
        return str(envelope["status"])
    f2p, p2p = score["fail_to_pass"], score["pass_to_pass"]
    return score["resolved"], (f2p["passed"], f2p["total"]), (p2p["passed"], p2p["total"])


def outcomes(envelope: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {t["id"]: (t["outcome"], t["status"]) for t in envelope["tests"]}


def write(tmp_path: Path, text: str, name: str = "junit.xml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the four runners, end to end

SCORES = [
    (SUREFIRE, "resolved", ("resolved", (3, 3), (2, 2))),
    (SUREFIRE, "not-resolved", ("not_resolved", (1, 5), (1, 3))),
    (JEST, "resolved", ("resolved", (3, 3), (3, 3))),
    (JEST, "not-resolved", ("not_resolved", (1, 4), (1, 3))),
    (GO, "resolved", ("resolved", (2, 2), (2, 2))),
    (GO, "not-resolved", ("not_resolved", (1, 6), (1, 3))),
    (NEXTEST, "resolved", ("resolved", (2, 2), (2, 2))),
    (NEXTEST, "not-resolved", ("not_resolved", (1, 5), (1, 2))),
]


@pytest.mark.parametrize(("runner", "kind", "expected"), SCORES, ids=[f"{r}-{k}" for r, k, _ in SCORES])
def test_fixture_scores(runner: str, kind: str, expected: tuple[Any, ...]) -> None:
    for given in (runner, None):  # named, and detected from the content
        envelope = grade(REPORTS[runner], fixture_instance(f"{runner}-{kind}"), runner=given, patch_ref="cand-1")
        assert gates(envelope) == expected
        assert envelope["status"] == "verdict" and envelope["no_verdict_reason"] is None
        assert envelope["score"]["patch_ref"] == "cand-1"
        assert envelope["report"]["runner"] == runner
        assert envelope["report"]["format"] == f"junit-{runner}"


NO_VERDICTS = {
    SUREFIRE: "com.example.calc.StorageTest failed as a whole: the class failed outside its tests (@BeforeAll / "
    "@BeforeClass) (could not create /var/lib/calc: Permission denied), so 1 listed test(s) never ran, e.g. "
    "com.example.calc.StorageTest.savesAtomically",
    JEST: "src/__tests__/storage.test.js failed as a whole: the test file failed to run (it did not load, or a hook "
    "outside its tests failed) (Cannot find module '../storage' from 'src/__tests__/storage.test.js'), so 1 listed "
    "test(s) never ran, e.g. src/__tests__/storage.test.js->storage opens a store",
    GO: "github.com/acme/shop/payment failed as a whole: the package did not build ([build failed]) (Build error: "
    "# github.com/acme/shop/payment [github.com/acme/shop/payment.test]), so 1 listed test(s) never ran, e.g. "
    "github.com/acme/shop/payment TestCharge",
    NEXTEST: "no test ran: nextest setup script db-migrate failed (setup script failure with exit code 1)",
}


@pytest.mark.parametrize("runner", RUNNERS)
def test_fixture_no_verdicts(runner: str) -> None:
    envelope = grade(NO_VERDICT_REPORTS[runner], fixture_instance(f"{runner}-no-verdict"))
    assert envelope["status"] == "no_verdict" and envelope["score"] is None
    assert envelope["no_verdict_reason"] == NO_VERDICTS[runner]
    assert envelope["swebench"]["report"][envelope["instance_id"]]["infra_failure"] is True
    assert envelope["session"]["collection_errors"]


def test_surefire_outcomes() -> None:
    envelope = grade(REPORTS[SUREFIRE], fixture_instance("surefire-not-resolved"))
    assert outcomes(envelope) == {
        "com.example.calc.CalculatorTest.addsTwoNumbers": ("passed", "passed"),
        "com.example.calc.CalculatorTest.dividesByZero": ("failed", "failed"),
        "com.example.calc.CalculatorTest.parsesNegative": ("error", "failed"),
        "com.example.calc.CalculatorTest.roundsHalfEven": ("skipped", "failed"),
        "com.example.calc.CalculatorTest.multipliesMatrices": ("missing", "missing"),
        "com.example.calc.CalculatorTest": ("error", "broken"),  # the class: its worst test that ran
        "com.example.calc.RetryingClientTest.givesUpAfterThreeAttempts": ("failed", "broken"),
        "com.example.calc.ParserTest.parsesEmpty": ("passed", "preserved"),
    }
    tests = by_id(envelope)
    assert tests["com.example.calc.CalculatorTest.dividesByZero"]["message"] == "expected: <Infinity> but was: <NaN>"
    assert tests["com.example.calc.CalculatorTest.parsesNegative"]["phases"] == {"setup": "failed",
                                                                                 "teardown": "passed"}  # fmt: skip
    assert tests["com.example.calc.CalculatorTest.multipliesMatrices"]["hint"] == (
        "other tests of class com.example.calc.CalculatorTest ran, but not this one"
    )
    assert envelope["summary"]["executed"] == 11  # the class-level testcase of StorageTest is not a test
    assert envelope["summary"]["unlisted"] == 4


def test_jest_outcomes() -> None:
    envelope = grade(REPORTS[JEST], fixture_instance("jest-not-resolved"))
    assert outcomes(envelope) == {
        "src/__tests__/formatDate.test.js->formatDate formats ISO dates": ("passed", "passed"),
        "src/__tests__/formatDate.test.js->formatDate with a locale pads the day": ("failed", "failed"),
        "src/__tests__/formatDate.test.js->formatDate handles time zones": ("skipped", "failed"),
        "src/__tests__/formatDate.test.js->formatDate parses week numbers": ("missing", "missing"),
        "src/__tests__/api.test.js->api retries a flaky fetch": ("failed", "broken"),  # an unmarked retry: the worst
        "src/__tests__/formatDate.test.js": ("failed", "broken"),
        "src/__tests__/parse.test.js->parses plain numbers": ("passed", "preserved"),
    }
    tests = by_id(envelope)
    assert tests["src/__tests__/formatDate.test.js->formatDate parses week numbers"]["hint"] == (
        "other tests of file src/__tests__/formatDate.test.js ran, but not this one"
    )
    notes = envelope["report"]["notes"]
    retried = "src/__tests__/api.test.js->api retries a flaky fetch: 2 testcases answer to it"
    assert any(n.startswith(retried) for n in notes)


def test_go_outcomes() -> None:
    envelope = grade(REPORTS[GO], fixture_instance("go-not-resolved"))
    assert outcomes(envelope) == {
        "TestDiscount/percent": ("passed", "passed"),
        "TestDiscount": ("failed", "failed"),
        "TestDiscount/fixed_amount": ("failed", "failed"),
        "TestLegacyTax": ("skipped", "failed"),
        "TestCheckout": ("error", "failed"),  # "No test result found": the test never finished
        "github.com/acme/shop/cart TestApplyCoupon": ("missing", "missing"),
        "TestTotal": ("passed", "preserved"),
        "TestValidate": ("failed", "broken"),  # in two packages: the worst counts
        "github.com/acme/shop/inventory": ("failed", "broken"),
    }
    tests = by_id(envelope)
    assert tests["TestDiscount/percent"]["matched"] == "github.com/acme/shop/cart TestDiscount/percent"
    assert tests["TestCheckout"]["message"] == "No test result found: panic: test timed out after 2m0s"
    assert tests["TestDiscount/fixed_amount"]["message"] == "cart_test.go:52: fixed_amount: got 95, want 90"


def test_nextest_outcomes() -> None:
    envelope = grade(REPORTS[NEXTEST], fixture_instance("nextest-not-resolved"))
    assert outcomes(envelope) == {
        "parse::tests::rejects_negative": ("failed", "failed"),
        "ledger store::tests::survives_crash": ("failed", "failed"),
        "ledger::integration imports_csv": ("error", "failed"),
        "ledger parse::tests::huge_amounts": ("missing", "missing"),  # an #[ignore]d test: nextest leaves it out
        "ledger parse::tests::parses_amount": ("passed", "passed"),
        "smoke": ("failed", "broken"),
        "ledger::integration round_trip": ("passed", "preserved"),
    }
    hint = by_id(envelope)["ledger parse::tests::huge_amounts"]["hint"]
    assert hint.startswith("other tests of binary ledger ran, but not this one; nextest writes no testcase for a "
                           "skipped")  # fmt: skip


# --------------------------------------------------------------------------- ids


@pytest.mark.parametrize(
    ("runner", "suite", "classname", "name", "file", "expected"),
    [
        (SUREFIRE, "com.x.FooTest", "com.x.FooTest", "testBar", None, "com.x.FooTest.testBar"),
        (SUREFIRE, "com.x.FooTest", "com.x.FooTest$Inner", "works(int)[2]", None, "com.x.FooTest$Inner.works(int)[2]"),
        (JEST, "addition", "addition positive numbers should add up", "addition positive numbers should add up",
         None, "addition positive numbers should add up"),
        (JEST, "addition", "addition positive numbers should add up", "addition positive numbers should add up",
         "__tests__/addition.test.js", "__tests__/addition.test.js->addition positive numbers should add up"),
        (JEST, "undefined", " adds", " adds", None, "adds"),  # no describe: jest-junit's leading space
        (JEST, "addition", "addition positive numbers", "should add up", None,
         "addition positive numbers should add up"),  # classNameTemplate {classname}, titleTemplate {title}
        (JEST, "src/a.test.ts", "a b", "a b", None, "src/a.test.ts->a b"),  # suiteNameTemplate {filepath}
        (JEST, "utils.js", "utils.js trims", "utils.js trims", None, "utils.js trims"),  # describe("utils.js")
        (GO, "github.com/x/y", "github.com/x/y", "TestX/sub_case", None, "github.com/x/y TestX/sub_case"),
        (NEXTEST, "crate::it", "crate::it", "mod::case", None, "crate::it mod::case"),
    ],
    ids=["surefire", "surefire-nested-param", "jest-default", "jest-file", "jest-top-level", "jest-split-templates",
         "jest-filepath-suite", "jest-describe-named-like-a-file", "go-subtest", "nextest"],
)  # fmt: skip
def test_test_id(runner: str, suite: str, classname: str, name: str, file: str | None, expected: str) -> None:
    assert foreign.test_id(runner, suite, classname, name, file) == expected


def test_test_id_unknown_runner() -> None:
    with pytest.raises(ValueError, match="unknown runner 'maven'"):
        foreign.test_id("maven", "", "a", "b")


def test_surefire_spellings(tmp_path: Path) -> None:
    """SWE-PolyBench's class.method, Surefire's class#method, Multi-SWE-bench's class-level ids."""
    envelope = grade(REPORTS[SUREFIRE], make_instance(
        ["com.example.calc.ParserTest.parsesNumber(String)[2]", "com.example.calc.ParserTest#parsesParentheses"],
        ["com.example.calc.ParserTest", "com.example.calc.RetryingClientTest", "com.example.calc.StorageTest"],
    ))  # fmt: skip
    assert outcomes(envelope) == {
        "com.example.calc.ParserTest.parsesNumber(String)[2]": ("passed", "passed"),
        "com.example.calc.ParserTest#parsesParentheses": ("passed", "passed"),
        "com.example.calc.ParserTest": ("passed", "preserved"),
        "com.example.calc.RetryingClientTest": ("failed", "broken"),
        "com.example.calc.StorageTest": ("error", "broken"),  # its class-level error is its result
    }
    assert by_id(envelope)["com.example.calc.ParserTest#parsesParentheses"]["matched"] == (
        "com.example.calc.ParserTest.parsesParentheses"
    )
    assert envelope["status"] == "verdict"  # a listed class that failed as a whole ran: a verdict


def test_surefire_class_that_only_skipped(tmp_path: Path) -> None:
    path = write(tmp_path, """<?xml version="1.0" encoding="UTF-8"?>
<testsuite xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="https://maven.apache.org/surefire/maven-surefire-plugin/xsd/surefire-test-report.xsd" name="a.SkipTest" time="0" tests="3" errors="0" skipped="2" failures="0">
  <testcase name="one" classname="a.SkipTest" time="0"><skipped message="no db"/></testcase>
  <testcase name="two" classname="a.SkipTest" time="0"><skipped/></testcase>
  <testcase name="one" classname="a.MixedTest" time="0"><skipped/></testcase>
  <testcase name="two" classname="a.MixedTest" time="0.1"/>
</testsuite>""", "TEST-a.SkipTest.xml")  # fmt: skip
    envelope = grade(path, make_instance(["a.MixedTest"], ["a.SkipTest"]))
    assert outcomes(envelope) == {"a.MixedTest": ("passed", "passed"), "a.SkipTest": ("skipped", "broken")}
    swebench = grade(path, make_instance(["a.MixedTest"], ["a.SkipTest"]), compat="swebench")
    assert gates(swebench) == ("resolved", (1, 1), (1, 1))  # SWE-bench keeps a skipped PASS_TO_PASS test


def test_surefire_directory_of_reports(tmp_path: Path) -> None:
    run = foreign.read_junit(REPORTS[SUREFIRE], SUREFIRE)
    assert [Path(p).name for p, _ in run.files] == [
        "TEST-com.example.calc.CalculatorTest.xml", "TEST-com.example.calc.ParserTest.xml",
        "TEST-com.example.calc.RetryingClientTest.xml", "TEST-com.example.calc.StorageTest.xml",
    ]  # fmt: skip  # the .txt summaries Surefire writes beside them are not read
    assert len(run.cases) == 11 and len(run.events) == 1
    assert run.runtime == "Java/17.0.10" and run.platform == "Linux-amd64"
    assert run.duration == pytest.approx(0.425)
    envelope = grade(REPORTS[SUREFIRE], fixture_instance("surefire-resolved"))
    assert Path(envelope["report"]["files"][0]["path"]).name == "TEST-com.example.calc.CalculatorTest.xml"
    assert "(report:junit-surefire) pytest/none Java/17.0.10 Linux-amd64 timeout=none compat=strict" in (
        envelope["score"]["graded_by"]
    )
    # One class's file alone: the other classes' tests are missing, never a pass.
    alone = grade(REPORTS[SUREFIRE] / "TEST-com.example.calc.ParserTest.xml", fixture_instance("surefire-resolved"))
    assert gates(alone) == ("not_resolved", (1, 3), (2, 2))
    assert "files" not in alone["report"]
    # The directory's digest covers every file's name and content.
    copy = tmp_path / "reports"
    copy.mkdir()
    for path in REPORTS[SUREFIRE].glob("TEST-*.xml"):
        (copy / path.name).write_bytes(path.read_bytes())
    assert foreign.read_junit(copy, SUREFIRE).sha256 == run.sha256
    (copy / "TEST-com.example.calc.ParserTest.xml").write_bytes(b"<testsuite name='x'/>")
    assert foreign.read_junit(copy, SUREFIRE).sha256 != run.sha256


def test_surefire_class_level_failure_spellings(tmp_path: Path) -> None:
    """Surefire 2.x names it after the class, 3.0.0-M5 leaves the name empty, later ones say initializationError."""
    for name in ("a.InitTest", "InitTest", "", "initializationError"):
        path = write(tmp_path, f"""<testsuite name="a.InitTest" tests="1" errors="1">
  <testcase name="{name}" classname="a.InitTest" time="0.01"><error message="boom" type="java.lang.IllegalStateException"/></testcase>
</testsuite>""", "TEST-a.InitTest.xml")  # fmt: skip
        envelope = grade(path, make_instance(["a.InitTest.works"]), runner=SUREFIRE)
        before = "the class failed before its tests ran (@BeforeAll / @BeforeClass, or it cannot be instantiated)"
        outside = "the class failed outside its tests (@BeforeAll / @BeforeClass)"
        kind = before if name == "initializationError" else outside
        assert envelope["no_verdict_reason"] == f"no test ran: a.InitTest: {kind} (boom)"


def test_surefire_class_level_failure_elsewhere_keeps_the_verdict() -> None:
    envelope = grade(REPORTS[SUREFIRE], make_instance(["com.example.calc.CalculatorTest.notThere"]))
    assert gates(envelope) == ("not_resolved", (0, 1), (0, 0))  # StorageTest's failure does not hold it
    assert envelope["session"]["collection_errors"] == [{
        "nodeid": "com.example.calc.StorageTest",
        "message": "the class failed outside its tests (@BeforeAll / @BeforeClass): could not create /var/lib/calc: "
        "Permission denied",
    }]  # fmt: skip


# --------------------------------------------------------------------------- go


def test_go_subtest_ids_and_packages() -> None:
    envelope = grade(REPORTS[GO], make_instance(
        ["github.com/acme/shop/cart TestValidate/empty_cart", "TestValidate/empty_cart", "github.com/acme/shop/cart"],
        ["github.com/acme/shop/cart TestValidate", "github.com/acme/shop/inventory TestValidate"],
    ))  # fmt: skip
    assert outcomes(envelope) == {
        "github.com/acme/shop/cart TestValidate/empty_cart": ("passed", "passed"),
        "TestValidate/empty_cart": ("passed", "passed"),
        "github.com/acme/shop/cart": ("error", "failed"),  # the package: its worst test that did not skip
        "github.com/acme/shop/cart TestValidate": ("passed", "preserved"),  # named with its package: one test
        "github.com/acme/shop/inventory TestValidate": ("failed", "broken"),
    }


def test_go_build_failure_holds_only_its_package() -> None:
    path = NO_VERDICT_REPORTS[GO]
    elsewhere = grade(path, make_instance(["github.com/acme/shop/cart TestTotal"], ["TestValidate"]))
    assert gates(elsewhere) == ("resolved", (1, 1), (1, 1))
    assert elsewhere["session"]["collection_errors"][0]["nodeid"] == "github.com/acme/shop/payment"
    # A bare name names no package: it may live in the one that did not build.
    bare = grade(path, make_instance(["TestCharge"], ["TestTotal"]))
    assert bare["status"] == "no_verdict"
    assert bare["no_verdict_reason"].startswith("github.com/acme/shop/payment failed as a whole: the package did not "
                                                "build ([build failed])")  # fmt: skip
    assert by_id(bare)["TestCharge"]["hint"] == (
        "github.com/acme/shop/payment failed as a whole: the package did not build ([build failed])"
    )


def test_go_runtime_error_and_v1_build_failure(tmp_path: Path) -> None:
    path = write(tmp_path, """<testsuites>
	<testsuite name="example.com/a" tests="2" failures="0" errors="1" id="0" hostname="h" time="0.1">
		<testcase name="TestA" classname="example.com/a" time="0.000"></testcase>
		<testcase name="Failure" classname="example.com/a" time="0.000"><error message="Runtime error"><![CDATA[panic: TestMain exploded]]></error></testcase>
	</testsuite>
	<testsuite name="example.com/b" tests="1" failures="1" errors="0" id="1" hostname="h" time="0">
		<testcase name="[setup failed]" classname="example.com/b" time="0"><failure message="Failed"><![CDATA[go: missing go.sum entry]]></failure></testcase>
	</testsuite>
</testsuites>""")  # fmt: skip
    assert foreign.detect_runner(path) == GO
    run = foreign.read_junit(path)
    assert [(e.scope, e.kind) for e in run.events] == [
        ("example.com/a", "the package's test binary failed outside its tests"),
        ("example.com/b", "the package did not build ([setup failed])"),
    ]
    assert [c.test_id for c in run.cases] == ["example.com/a TestA"]
    envelope = grade(path, make_instance(["example.com/a TestB"]))
    assert envelope["no_verdict_reason"].startswith("example.com/a failed as a whole: the package's test binary")


# --------------------------------------------------------------------------- nextest

NEXTEST_RETRIES = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="nextest-run" tests="4" failures="2" errors="0" uuid="a0" timestamp="2024-05-02T10:11:12.345+00:00" time="1.0">
    <testsuite name="app" tests="4" disabled="0" errors="0" failures="2">
        <testcase name="flaky_pass" classname="app" time="0.1">
            <flakyFailure type="test failure with exit code 101" message="first try">first try</flakyFailure>
            <flakyError type="test exited with code 0, but leaked handles so was marked failed" message="leaked"/>
        </testcase>
        <testcase name="flaky_configured_to_fail" classname="app" time="0.5">
            <failure message="test passed on attempt 3/3 but is configured to fail when flaky" type="flaky failure"/>
            <flakyFailure type="test failure with exit code 101">prior failure</flakyFailure>
        </testcase>
        <testcase name="always_fails" classname="app" time="0.2">
            <failure type="test failure with exit code 101" message="boom">boom</failure>
            <rerunFailure type="test failure with exit code 101" message="boom"/>
            <rerunError type="execution failure" message="error spawning child process"/>
        </testcase>
        <testcase name="steady" classname="app" time="0.1"/>
    </testsuite>
</testsuites>
"""


def test_nextest_retries(tmp_path: Path) -> None:
    """Reruns nextest marks are discarded (the final attempt counts); each is noted."""
    path = write(tmp_path, NEXTEST_RETRIES)
    run = foreign.read_junit(path)
    assert run.runner == NEXTEST
    cases = {c.name: c for c in run.cases}
    assert cases["flaky_pass"].retries == ("failed", "error")
    assert cases["always_fails"].retries == ("failed", "error")
    envelope = grade(path, make_instance(["flaky_pass", "app flaky_configured_to_fail", "always_fails"], ["steady"]))
    assert outcomes(envelope) == {
        "flaky_pass": ("passed", "passed"),
        "app flaky_configured_to_fail": ("failed", "failed"),  # flaky-result = "fail": nextest's own verdict
        "always_fails": ("failed", "failed"),
        "steady": ("passed", "preserved"),
    }
    tests = by_id(envelope)
    assert tests["flaky_pass"]["message"] == "passed after 2 failed attempts the runner reran; the first: first try"
    assert tests["always_fails"]["message"] == "boom"
    notes = envelope["report"]["notes"]
    assert ("app flaky_pass: 2 earlier attempt(s) the runner marked as reruns (<flakyFailure>, <rerunFailure>) are "
            "discarded; the final outcome, passed, counts") in notes  # fmt: skip
    assert ("app always_fails: 2 earlier attempt(s) the runner marked as reruns (<flakyFailure>, <rerunFailure>) "
            "are discarded; the final outcome, failed, counts") in notes  # fmt: skip


def test_nextest_stress_runs_count_the_worst(tmp_path: Path) -> None:
    path = write(tmp_path, """<testsuites name="nextest-run" uuid="b1">
  <testsuite name="app@stress-0"><testcase name="racy" classname="app"/></testsuite>
  <testsuite name="app@stress-1"><testcase name="racy" classname="app"><failure message="lost update"/></testcase></testsuite>
</testsuites>""")  # fmt: skip
    envelope = grade(path, make_instance(["app racy"]))
    assert outcomes(envelope) == {"app racy": ("failed", "failed")}


def test_nextest_setup_script_success_is_not_a_test(tmp_path: Path) -> None:
    path = write(tmp_path, """<testsuites name="nextest-run" uuid="c2">
  <testsuite name="@setup-script:db"><testcase name="db" classname="@setup-script:db"/></testsuite>
  <testsuite name="app"><testcase name="works" classname="app"/></testsuite>
</testsuites>""")  # fmt: skip
    envelope = grade(path, make_instance(["works"]))
    assert gates(envelope) == ("resolved", (1, 1), (0, 0))
    assert envelope["summary"]["executed"] == 1 and envelope["session"]["collection_errors"] == []


# --------------------------------------------------------------------------- jest


def test_jest_id_spellings() -> None:
    """SWE-PolyBench's absolute file->full name, Multi-SWE-bench's file:title and file, the full name alone."""
    envelope = grade(REPORTS[JEST], fixture_instance("jest-resolved"))
    tests = by_id(envelope)
    assert tests["/testbed/src/__tests__/formatDate.test.js->formatDate formats ISO dates"]["matched"] == (
        "src/__tests__/formatDate.test.js->formatDate formats ISO dates"
    )
    assert tests["src/__tests__/parse.test.js:rejects garbage"]["matched"] == (
        "src/__tests__/parse.test.js->parse rejects garbage"
    )
    assert tests["parse handles exponents"]["matched"] == "src/__tests__/parse.test.js->parse handles exponents"
    assert "matched" not in tests["src/__tests__/parse.test.js"]  # a whole file: its three tests
    assert envelope["summary"]["executed"] == 10 and envelope["summary"]["unlisted"] == 4


def test_jest_without_file_names() -> None:
    """jest-junit's defaults name no files: ids are matched by the test's full name, and a note says so."""
    path = JUNIT / "jest" / "junit-defaults.xml"
    envelope = grade(path, fixture_instance("jest-resolved"))
    assert gates(envelope) == ("not_resolved", (3, 3), (1, 3))
    assert outcomes(envelope)["src/__tests__/parse.test.js"] == ("missing", "missing")  # a whole file needs file names
    assert envelope["report"]["notes"][-1].startswith("the report names no test files (jest-junit's addFileAttribute")


@pytest.mark.parametrize(
    ("classname", "name", "listed"),
    [
        ("addition positive numbers should add up", "addition positive numbers should add up",
         "math.test.js->addition positive numbers should add up"),
        ("addition positive numbers", "should add up", "math.test.js->addition positive numbers should add up"),
        ("math.test.js", "addition positive numbers should add up",
         "math.test.js->addition positive numbers should add up"),
        (" top level", " top level", "math.test.js->top level"),
        ("addition positive numbers should add up", "addition positive numbers should add up",
         "/app/src/math.test.js:should add up"),
    ],
    ids=["default", "classname-title", "filepath-classname", "no-describe", "msb-leaf-title"],
)  # fmt: skip
def test_jest_classname_templates(tmp_path: Path, classname: str, name: str, listed: str) -> None:
    path = write(tmp_path, f"""<testsuites name="jest tests">
  <testsuite name="addition" tests="2"><testcase classname="{classname}" name="{name}" time="0.1" file="src/math.test.js"/></testsuite>
</testsuites>""")  # fmt: skip
    envelope = grade(path, make_instance([listed]))
    assert outcomes(envelope) == {listed: ("passed", "passed")}


def test_jest_filepath_suite_name_and_failed_suite_without_file_attribute(tmp_path: Path) -> None:
    path = write(tmp_path, """<testsuites name="jest tests" tests="1" failures="0" errors="1">
  <testsuite name="src/ok.test.ts" tests="1"><testcase classname="ok works" name="ok works" time="0.1"/></testsuite>
  <testsuite name="src/bad.test.ts" errors="1" tests="0">
    <testcase classname="Test suite failed to run" name="src/bad.test.ts" time="0"><error>  ● Test suite failed to run

    SyntaxError: Unexpected token (3:7)</error></testcase>
  </testsuite>
</testsuites>""")  # fmt: skip
    run = foreign.read_junit(path)
    assert [c.test_id for c in run.cases] == ["src/ok.test.ts->ok works"]
    assert [(e.scope, e.message) for e in run.events] == [("src/bad.test.ts", "SyntaxError: Unexpected token (3:7)")]
    ok = grade(path, make_instance(["/repo/src/ok.test.ts->ok works"]))
    assert gates(ok) == ("resolved", (1, 1), (0, 0))
    bad = grade(path, make_instance(["src/ok.test.ts->ok works"], ["src/bad.test.ts->bad parses"]))
    assert bad["status"] == "no_verdict"
    whole = grade(path, make_instance(["src/ok.test.ts"], ["src/bad.test.ts"]))  # files that ran, as a whole
    assert outcomes(whole) == {"src/ok.test.ts": ("passed", "passed"), "src/bad.test.ts": ("error", "broken")}


# --------------------------------------------------------------------------- detection

PYTEST_JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="1" time="0.01" timestamp="2024-05-02T10:11:12" hostname="h"><testcase classname="tests.test_a" name="test_b" time="0.001" /></testsuite></testsuites>"""
SUREFIRE_2 = """<testsuite xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="https://maven.apache.org/surefire/maven-surefire-plugin/xsd/surefire-test-report.xsd" name="a.B"><testcase name="c" classname="a.B"/></testsuite>"""
SUREFIRE_PROPERTIES = """<testsuite name="a.B"><properties><property name="java.version" value="11"/></properties><testcase name="c" classname="a.B"/></testsuite>"""
GO_WITHOUT_VERSION = """<testsuites><testsuite name="x/y"><testcase name="TestA" classname="x/y"/><testcase name="ExampleB" classname="x/y"/></testsuite></testsuites>"""
NEXTEST_RENAMED = """<testsuites name="my run" uuid="123"><testsuite name="c"><testcase name="t" classname="c"/></testsuite></testsuites>"""
JEST_RENAMED = """<testsuites name="custom"><testsuite name="d"><testcase classname="d t" name="d t"/></testsuite></testsuites>"""
UNKNOWN = """<testsuites><testsuite name="s"><testcase classname="A" name="b"/></testsuite></testsuites>"""


@pytest.mark.parametrize(
    ("text", "name", "expected"),
    [
        (PYTEST_JUNIT, "junit.xml", None),
        (SUREFIRE_2, "TEST-a.B.xml", SUREFIRE),
        (SUREFIRE_PROPERTIES, "TEST-a.B.xml", SUREFIRE),
        (GO_WITHOUT_VERSION, "report.xml", GO),
        (NEXTEST_RENAMED, "junit.xml", NEXTEST),
        (JEST_RENAMED, "junit.xml", JEST),
        (UNKNOWN, "x.xml", None),
    ],
    ids=["pytest", "surefire-2", "surefire-properties", "go-without-version", "nextest-renamed", "jest-renamed",
         "unknown"],
)  # fmt: skip
def test_detect_runner(tmp_path: Path, text: str, name: str, expected: str | None) -> None:
    assert foreign.detect_runner(write(tmp_path, text, name)) == expected


def test_detect_runner_fixtures() -> None:
    for runner in RUNNERS:
        assert foreign.detect_runner(REPORTS[runner]) == runner
        assert foreign.detect_runner(NO_VERDICT_REPORTS[runner]) == runner
    assert foreign.detect_runner(JUNIT / "jest" / "junit-defaults.xml") == JEST


def test_undetectable_and_mismatched_runner(tmp_path: Path) -> None:
    pytest_file = write(tmp_path, PYTEST_JUNIT)
    with pytest.raises(JUnitError, match=r"junit.xml: cannot tell which runner wrote it: it looks like pytest's JUnit"):
        foreign.grade_junit(pytest_file, make_instance(["tests.test_a.test_b"]))
    envelope = grade(REPORTS[GO], make_instance(["TestTotal"]), runner=NEXTEST)
    assert "the file looks like go's JUnit XML; it was graded as nextest's, as asked" in envelope["report"]["notes"]
    assert gates(envelope) == ("resolved", (1, 1), (0, 0))  # a bare name reads the same in both


# --------------------------------------------------------------------------- files that cannot be graded


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"junit.xml: is empty \(no report was written: did the run die first\?\)"),
        ("{\"tests\": []}", r"junit.xml:1: is not XML \(it starts with '\{\"tests\": \[\]\}'\)"),
        ("<testsuites>\n  <testsuite name='a'>\n    <testcase name='b'>\n  </testsuite>\n</testsuites>\n",
         r"junit.xml:4: invalid XML \(column 5\): mismatched tag"),
        ("<testsuites>\n<testsuite name='a'>\n<testcase name='b'/>\n",
         r"junit.xml:4: invalid XML \(column 1\): no element found"),
        ("<?xml version='1.0'?>\n<html><body/></html>",
         r"junit.xml:2: its root element is <html>; expected <testsuites>"),
        ("<!DOCTYPE x [<!ENTITY a 'aaaa'>]>\n<testsuites/>", r"junit.xml:1: declares a DOCTYPE"),
        ("<testsuites>\n  <testsuite name='p'>\n    <testcase classname='p'/>\n  </testsuite>\n</testsuites>",
         r"junit.xml:3: <testcase>: has no name attribute"),
    ],
    ids=["empty", "json", "mismatched-tag", "truncated", "html", "doctype", "no-name"],
)  # fmt: skip
def test_malformed_files(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(JUnitError, match=message) as info:
        foreign.grade_junit(path, make_instance(["p TestA"]), runner=GO)
    assert isinstance(info.value, ReportError) and isinstance(info.value, ValueError)
    assert info.value.path == str(path)


def test_malformed_file_line_numbers(tmp_path: Path) -> None:
    path = write(tmp_path, "<testsuites>\n<testsuite name='a'>\n<testcase name='b' classname='a' time='1'>\n"
                           "<failure message='x' </failure>\n</testcase></testsuite></testsuites>\n")  # fmt: skip
    with pytest.raises(JUnitError) as info:
        foreign.read_junit(path, JEST)
    assert info.value.line == 4
    assert str(info.value) == f"{path}:4: invalid XML (column 22): not well-formed (invalid token)"


def test_bad_paths_and_runners(tmp_path: Path) -> None:
    with pytest.raises(JUnitError, match="no such file or directory"):
        foreign.read_junit(tmp_path / "missing.xml", GO)
    empty = tmp_path / "surefire-reports"
    empty.mkdir()
    (empty / "com.x.FooTest.txt").write_text("Tests run: 0", encoding="utf-8")
    with pytest.raises(JUnitError, match=r"is a directory without TEST-\*.xml files \(Surefire writes one per test "
                                         r"class: did the build fail before any test ran\?\)"):  # fmt: skip
        foreign.read_junit(empty, SUREFIRE)
    with pytest.raises(JUnitError, match=r"is a directory without .xml files"):
        foreign.detect_runner(empty)
    with pytest.raises(ValueError, match="unknown runner 'junit'"):
        foreign.read_junit(REPORTS[GO], "junit")
    with pytest.raises(ValueError, match="unknown compat mode"):
        foreign.grade_junit(REPORTS[GO], make_instance(["TestTotal"]), compat="loose")


def test_a_directory_of_other_runners_reports(tmp_path: Path) -> None:
    """jest-junit's uniqueOutputName writes one junit-<uuid>.xml per run part: a directory reads them all."""
    first = '<testcase classname="a x" name="a x" file="a.test.js"/>'
    second = '<testcase classname="b y" name="b y" file="b.test.js"><failure>no</failure></testcase>'
    for name, case in (("junit-1.xml", first), ("junit-2.xml", second)):
        write(tmp_path, f'<testsuites name="jest tests"><testsuite name="s">{case}</testsuite></testsuites>', name)
    envelope = grade(tmp_path, make_instance(["a.test.js->a x"], ["b.test.js->b y"]))
    assert outcomes(envelope) == {"a.test.js->a x": ("passed", "passed"), "b.test.js->b y": ("failed", "broken")}
    assert len(envelope["report"]["files"]) == 2


# --------------------------------------------------------------------------- envelope and facts


def test_empty_report_is_no_verdict(tmp_path: Path) -> None:
    path = write(tmp_path, '<testsuites name="nextest-run" tests="0" failures="0" errors="0" uuid="e"/>')
    envelope = grade(path, make_instance(["app works"]))
    assert envelope["no_verdict_reason"] == (
        "the report holds no test result (an empty run, or one that stopped before its first test)"
    )


def test_envelope_shape() -> None:
    path = REPORTS[GO]
    envelope = grade(path, fixture_instance("go-resolved"))
    assert envelope["score"]["patch_ref"] == "unknown"
    assert "(report:junit-go) pytest/none go1.22.3 linux/amd64 timeout=none compat=strict" in (
        envelope["score"]["graded_by"]
    )
    report = envelope["report"]
    assert list(report) == ["path", "format", "runner", "sha256", "notes"]
    assert report["path"] == str(path) and report["format"] == "junit-go" and report["runner"] == GO
    assert report["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert report["notes"][0].startswith("JUnit XML records no exit status")
    assert envelope["session"] == {"exitstatus": None, "note": None, "collection_errors": [], "rootdir": None,
                                   "instance_file": str(JUNIT / "instances" / "go-resolved.json"),
                                   "duration": 120.024}  # fmt: skip
    assert envelope["swebench"]["resolution"] == "RESOLVED_FULL"


def test_phase_facts_fold_to_the_case_outcomes() -> None:
    for runner in RUNNERS:
        run = foreign.read_junit(REPORTS[runner])
        collector = Collector()
        for fact in run.phase_facts():
            collector.add(fact)
        folded = collector.outcomes()
        for case in run.cases:
            duplicates = [c for c in run.cases if c.test_id == case.test_id]
            if len(duplicates) == 1:
                assert folded[case.test_id] == case.outcome, case


def test_documented_errors_are_the_real_ones(tmp_path: Path) -> None:
    """docs/foreign-runners.md quotes the messages; each one it quotes in full is produced verbatim."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "foreign-runners.md").read_text(encoding="utf-8")
    block = doc.split("## Files that cannot be graded", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    quoted = [line for line in block.splitlines() if line and "\u2026" not in line]
    cases = {
        "mismatched": "<testsuites>\n  <testsuite name='a'>\n    <testcase name='b'>\n  </testsuite>\n</testsuites>\n",
        "no-name": "<testsuites>\n  <testsuite name='p'>\n    <testcase classname='p'/>\n  </testsuite>\n</testsuites>",
        "html": "<?xml version='1.0'?>\n<html><body/></html>",
        "doctype": "<!DOCTYPE x [<!ENTITY a 'aaaa'>]>\n<testsuites/>",
        "pytest": PYTEST_JUNIT,
    }
    produced = []
    for name, text in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        path = write(folder, text)
        with pytest.raises(JUnitError) as info:
            foreign.read_junit(path, None if name == "pytest" else GO)
        produced.append(str(info.value).replace(f"{folder}/", ""))
    reports = tmp_path / "target" / "surefire-reports"
    reports.mkdir(parents=True)
    with pytest.raises(JUnitError) as info:
        foreign.read_junit(reports, SUREFIRE)
    produced.append(str(info.value).replace(f"{tmp_path}/", ""))
    assert sorted(quoted) == sorted(produced)


# ---------------------------------------------------------------- the command line

JUNIT = Path(__file__).resolve().parent.parent / "fixtures" / "junit"


@pytest.mark.parametrize(
    ("runner", "report", "expected_exit"),
    [("surefire", "surefire", 0), ("go", "go/report.xml", 0), ("nextest", "nextest/junit.xml", 0),
     ("go", "go/build-failed.xml", 3)],
)  # fmt: skip
def test_grade_from_report_detects_the_runner_on_the_command_line(tmp_path, runner, report, expected_exit):
    from .runner_helpers import run_cli_here as run_cli

    instance = JUNIT / "instances" / f"{runner}-resolved.json"
    result = run_cli("grade", "--from-report", str(JUNIT / report), "--instance", str(instance), "--no-ledger", "--json")
    assert result.returncode == expected_exit, result.stderr
    envelope = json.loads(result.stdout)
    assert envelope["report"]["runner"] == runner and envelope["report"]["format"] == f"junit-{runner}"
    if expected_exit == 0:
        assert envelope["score"]["resolved"] == "resolved" and f"(report:junit-{runner})" in envelope["score"]["graded_by"]
    forced = run_cli("grade", "--from-report", str(JUNIT / report), "--instance", str(instance), "--no-ledger", "--json",
                     "--runner", runner)  # fmt: skip
    assert forced.returncode == expected_exit
