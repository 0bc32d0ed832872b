"""Grading outcome files made elsewhere: the same Score as a live run of the same tests.

Every integration test runs pytest once with the plugin *and* ``--junitxml``,
``--json-report`` and ``--report-log``, then grades each file with
:func:`grade_report` and compares it with the live envelope.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from _pytest.junitxml import mangle_test_address

from pytest_objective_scoring.instances import Instance, parse_instance
from pytest_objective_scoring.reports import (
    FORMATS,
    JSON_REPORT,
    JUNIT_XML,
    REPORTLOG,
    ReportError,
    detect_format,
    grade_report,
    junit_key,
)

from .conftest import by_id, check_envelope

PATCH_REF = "candidate-1"

TEST_MODULE = """
import pytest

@pytest.fixture
def broken_setup():
    raise RuntimeError("setup exploded")

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown exploded")

def test_passes():
    pass

def test_fails():
    assert 1 == 2

def test_setup_error(broken_setup):
    pass

def test_teardown_error(broken_teardown):
    pass

def test_fails_then_teardown_error(broken_teardown):
    assert 0

def test_skipped():
    pytest.skip("not here")

@pytest.mark.skip(reason="marked")
def test_skip_mark():
    pass

@pytest.mark.xfail(reason="known")
def test_xfails():
    assert 0

@pytest.mark.xfail(reason="fixed already")
def test_xpasses():
    pass

@pytest.mark.xfail(reason="must fail", strict=True)
def test_xpasses_strict():
    pass

@pytest.mark.xfail(reason="known")
def test_xfails_then_teardown_error(broken_teardown):
    assert 0

@pytest.mark.parametrize("text", ["a b", "c d e", "plain"])
def test_spaces(text):
    assert text

@pytest.mark.parametrize("word", ["caf\u00e9"])
def test_unicode(word):
    assert word

class TestGroup:
    def test_method(self):
        pass

    @pytest.mark.parametrize("n", [1, 2])
    def test_param(self, n):
        assert n == 1

    class TestInner:
        def test_deep(self):
            pass
"""

NESTED_MODULE = """
def test_nested():
    pass
"""

BROKEN_MODULE = """
import a_module_that_does_not_exist

def test_never():
    pass
"""


def mod(name: str) -> str:
    return f"tests/test_mod.py::{name}"


RESOLVED = {
    "FAIL_TO_PASS": [mod("test_passes"), mod("test_spaces[a b]"), mod("TestGroup::TestInner::test_deep"),
                     mod("TestGroup::test_param[1]"), mod("test_unicode[caf\u00e9]")],
    "PASS_TO_PASS": [mod("test_xfails"), mod("test_xpasses"), mod("test_spaces[c d e]"),
                     "tests/pkg/test_nested.py::test_nested", mod("TestGroup::test_method")],
}  # fmt: skip
NOT_RESOLVED = {
    "FAIL_TO_PASS": [mod("test_passes"), mod("test_fails"), mod("test_xpasses_strict"), mod("test_spaces[a b]"),
                     mod("test_nope"), mod("test_spaces[a"), "tests/test_gone.py::test_x"],
    "PASS_TO_PASS": [mod("test_setup_error"), mod("test_teardown_error"), mod("test_fails_then_teardown_error"),
                     mod("test_skipped"), mod("test_skip_mark"), mod("test_xfails"), mod("test_xpasses"),
                     mod("test_xfails_then_teardown_error"), mod("TestGroup::test_param[2]"),
                     mod("TestGroup::test_method")],
}  # fmt: skip

# Plugins of this environment that the runs do not need (hypothesis's imports cost a second a run).
QUIET_PLUGINS = ("-p", "no:hypothesispytest", "-p", "no:benchmark")

# What JUnit XML makes of an outcome it cannot write down (docs/from-report.md).
JUNIT_SEES = {"xpassed": "passed"}


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(**{"tests/test_mod": TEST_MODULE, "tests/pkg/test_nested": NESTED_MODULE})
    return pytester


def make_instance(pytester: pytest.Pytester, lists: dict[str, list[str]], **fields: Any) -> tuple[Path, Instance]:
    data = {"instance_id": "demo__reports-1", **lists, **fields}
    path = pytester.path / "instance.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path, parse_instance(data, str(path))


def run_live(
    pytester: pytest.Pytester, instance: Path, *args: str, family: str = "xunit2", subprocess: bool = False,
    **kwargs: Any,
) -> tuple[pytest.RunResult, dict[str, Any], dict[str, Path]]:
    """One pytest run: graded live by the plugin, and recorded in all three formats."""
    files = {JUNIT_XML: pytester.path / "junit.xml", JSON_REPORT: pytester.path / "report.json",
             REPORTLOG: pytester.path / "reportlog.jsonl"}  # fmt: skip
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = run(
        f"--objective-score={instance}", "--objective-score-out=live.json", "--objective-no-ledger",
        f"--objective-patch-ref={PATCH_REF}", "-p", "no:randomly", "-p", "no:cacheprovider", *QUIET_PLUGINS,
        f"--junitxml={files[JUNIT_XML]}", "-o", f"junit_family={family}",
        "--json-report", f"--json-report-file={files[JSON_REPORT]}", f"--report-log={files[REPORTLOG]}", *args,
        **kwargs,
    )  # fmt: skip
    live_path = pytester.path / "live.json"
    assert live_path.exists(), result.stdout.str()
    live = json.loads(live_path.read_text(encoding="utf-8"))
    check_envelope(live)
    return result, live, files


def grade_all(files: dict[str, Path], instance: Instance, compat: str = "strict") -> dict[str, dict[str, Any]]:
    graded = {}
    for fmt, path in files.items():
        envelope = grade_report(path, instance, compat, PATCH_REF)
        check_envelope(envelope)
        assert envelope["report"]["format"] == fmt
        graded[fmt] = envelope
    return graded


def comparable(score: dict[str, Any] | None) -> dict[str, Any] | None:
    if score is None:
        return None
    return {k: v for k, v in score.items() if k not in ("graded_by", "graded_at")}


def per_test(envelope: dict[str, Any], *keep: str) -> dict[str, dict[str, Any]]:
    return {t["id"]: {k: t.get(k) for k in keep} for t in envelope["tests"]}


FULL = ("gate", "outcome", "status", "phases", "message", "hint", "matched")


def assert_same_as_live(live: dict[str, Any], graded: dict[str, dict[str, Any]]) -> None:
    """The Score (all but graded_by / graded_at) and everything each format can express."""
    for fmt, envelope in graded.items():
        assert envelope["status"] == live["status"], fmt
        assert envelope["no_verdict_reason"] == live["no_verdict_reason"], fmt
        assert comparable(envelope["score"]) == comparable(live["score"]), fmt
        assert envelope["summary"] == live["summary"], fmt
        if envelope["score"] is not None:
            assert f"(report:{fmt})" in envelope["score"]["graded_by"]
    # reportlog carries every phase report: the per-test records are the live ones.
    assert per_test(graded[REPORTLOG], *FULL) == per_test(live, *FULL)
    assert graded[REPORTLOG]["swebench"] == live["swebench"]
    assert graded[REPORTLOG]["integrity"]["flags"] == live["integrity"]["flags"]  # the marks; dispositions differ by mode
    # json-report keeps each phase's last report and the test's category: the same, here.
    assert per_test(graded[JSON_REPORT], *FULL) == per_test(live, *FULL)
    assert graded[JSON_REPORT]["swebench"] == live["swebench"]
    # JUnit XML: outcomes up to what it cannot write down; phases and messages are its own.
    expected = {
        test_id: {**t, "outcome": JUNIT_SEES.get(t["outcome"], t["outcome"])}
        for test_id, t in per_test(live, "gate", "outcome", "status", "hint", "matched").items()
    }
    assert per_test(graded[JUNIT_XML], "gate", "outcome", "status", "hint", "matched") == expected
    assert graded[JUNIT_XML]["swebench"] == live["swebench"]


@pytest.mark.parametrize("family", ["xunit2", "xunit1"])
@pytest.mark.parametrize("lists", [RESOLVED, NOT_RESOLVED], ids=["resolved", "not-resolved"])
def test_same_score_as_the_live_run(project, lists, family):
    instance_path, instance = make_instance(project, lists)
    _, live, files = run_live(project, instance_path, family=family)
    graded = grade_all(files, instance)
    assert_same_as_live(live, graded)
    assert live["score"]["resolved"] == ("resolved" if lists is RESOLVED else "not_resolved")
    if lists is RESOLVED:  # pytest ran it as test_unicode[caf\xe9]: either spelling finds it, in every format
        for envelope in (live, *graded.values()):
            assert by_id(envelope)[mod("test_unicode[caf\u00e9]")]["matched"] == mod("test_unicode[caf\\xe9]")


def test_outcomes_of_each_phase_kind(project):
    """The outcome table, read from each format (JUnit XML's one blind spot: a non-strict XPASS)."""
    instance_path, instance = make_instance(project, NOT_RESOLVED)
    _, live, files = run_live(project, instance_path)
    expected = {
        "test_fails": "failed", "test_xpasses_strict": "xpassed_strict", "test_setup_error": "error",
        "test_teardown_error": "error", "test_fails_then_teardown_error": "failed", "test_skipped": "skipped",
        "test_skip_mark": "skipped", "test_xfails": "xfailed", "test_xpasses": "xpassed",
        "test_xfails_then_teardown_error": "error", "test_spaces[a b]": "passed", "TestGroup::test_param[2]": "failed",
    }  # fmt: skip
    for fmt, envelope in grade_all(files, instance).items():
        tests = by_id(envelope)
        for name, outcome in expected.items():
            assert by_id(live)[mod(name)]["outcome"] == outcome, name
            want = JUNIT_SEES.get(outcome, outcome) if fmt == JUNIT_XML else outcome
            assert tests[mod(name)]["outcome"] == want, (fmt, name)
        assert tests[mod("test_nope")]["status"] == "missing"
        assert "other tests from tests/test_mod.py ran" in tests[mod("test_nope")]["hint"]
        # cut at a space as SWE-bench's logs cut ids: it stands for the test it was cut from, in every format
        cut = tests[mod("test_spaces[a")]
        assert (cut["status"], cut["matched_by"], cut["matched_ids"]) == ("passed", "prefix", [mod("test_spaces[a b]")])
        assert "no test from tests/test_gone.py ran" in tests["tests/test_gone.py::test_x"]["hint"]
        # a call failure followed by a teardown error: pytest's JUnit XML splits it in two testcases
        assert tests[mod("test_fails_then_teardown_error")]["phases"]["teardown"] == "failed"


def test_swebench_compat_same_as_live_but_for_junit_xpass(project):
    lists = {"FAIL_TO_PASS": [mod("test_passes"), mod("test_xpasses")], "PASS_TO_PASS": [mod("test_skipped")]}
    instance_path, instance = make_instance(project, lists)
    _, live, files = run_live(project, instance_path, "--objective-compat=swebench")
    graded = grade_all(files, instance, compat="swebench")
    # SWE-bench's logs give a non-strict XPASS no status: the live run counts it as failing ...
    assert live["score"]["fail_to_pass"]["passed"] == 1
    assert live["score"]["pass_to_pass"]["passed"] == 1  # a skip is "maintained" in SWE-bench
    for fmt in (REPORTLOG, JSON_REPORT):
        assert comparable(graded[fmt]["score"]) == comparable(live["score"]), fmt
        assert per_test(graded[fmt], *FULL) == per_test(live, *FULL)
    # ... but JUnit XML writes it as a plain pass: the documented difference, and a note says so.
    junit = graded[JUNIT_XML]
    assert junit["score"]["fail_to_pass"]["passed"] == 2
    assert by_id(junit)[mod("test_xpasses")]["outcome"] == "passed"
    assert any("non-strict XPASS" in note for note in junit["report"]["notes"])


@pytest.mark.parametrize("continue_on_errors", [True, False], ids=["continue", "interrupted"])
def test_collection_error_in_a_listed_module_is_no_verdict(project, continue_on_errors):
    project.makepyfile(**{"tests/test_broken": BROKEN_MODULE})
    lists = {"FAIL_TO_PASS": [mod("test_passes"), "tests/test_broken.py::test_never"], "PASS_TO_PASS": []}
    instance_path, instance = make_instance(project, lists)
    args = ["--continue-on-collection-errors"] if continue_on_errors else []
    _, live, files = run_live(project, instance_path, *args)
    assert live["status"] == "no_verdict"
    graded = grade_all(files, instance)
    for fmt, envelope in graded.items():
        assert envelope["status"] == "no_verdict", fmt
        assert envelope["score"] is None
        assert "tests/test_broken.py" in envelope["no_verdict_reason"], fmt
        assert envelope["swebench"]["report"]["demo__reports-1"]["infra_failure"] is True
    assert_same_as_live(live, graded)


@pytest.mark.parametrize("family", ["xunit2", "xunit1"])
def test_collection_error_elsewhere_keeps_the_verdict(project, family):
    project.makepyfile(**{"tests/test_broken": BROKEN_MODULE})
    instance_path, instance = make_instance(project, RESOLVED)
    _, live, files = run_live(project, instance_path, "--continue-on-collection-errors", family=family)
    assert live["status"] == "verdict" and live["score"]["resolved"] == "resolved"
    graded = grade_all(files, instance)
    assert_same_as_live(live, graded)
    for envelope in graded.values():
        assert [e["message"].splitlines()[0] for e in envelope["session"]["collection_errors"]] == [
            e["message"].splitlines()[0] for e in live["session"]["collection_errors"]
        ]
    # xunit1 names the failed module's file; xunit2 only its dotted name (which is never turned into a path)
    junit_errors = graded[JUNIT_XML]["session"]["collection_errors"]
    assert junit_errors[0]["nodeid"] == ("tests/test_broken.py" if family == "xunit1" else "tests.test_broken")


def test_interrupted_run_is_no_verdict(pytester):
    """reportlog and json-report record exit status 2; JUnit XML keeps a nameless trace of the cut test."""
    pytester.makepyfile(
        **{
            "tests/test_stop": """
            def test_first():
                pass

            def test_stop():
                raise KeyboardInterrupt

            def test_after():
                pass
            """
        }
    )
    lists = {"FAIL_TO_PASS": ["tests/test_stop.py::test_first"], "PASS_TO_PASS": ["tests/test_stop.py::test_after"]}
    instance_path, instance = make_instance(pytester, lists)
    _, live, files = run_live(pytester, instance_path, no_reraise_ctrlc=True)
    assert live["status"] == "no_verdict" and live["session"]["exitstatus"] == 2
    assert live["no_verdict_reason"] == "the test session was interrupted"
    graded = grade_all(files, instance)
    assert_same_as_live(live, graded)
    junit = graded[JUNIT_XML]
    assert junit["session"]["exitstatus"] is None and junit["session"]["exitstatus_inferred"] == 2
    assert any("records no exit status" in note for note in junit["report"]["notes"])


def test_junit_run_stopped_between_tests_reads_as_missing_tests(tmp_path):
    """What JUnit XML cannot tell (documented): -x stopped the run, the rest looks never collected."""
    path = write(tmp_path, "junit.xml", """<testsuites><testsuite>
<testcase classname="t" name="test_a"><failure message="assert 0">tb</failure></testcase>
</testsuite></testsuites>""")
    envelope = grade_report(path, instance_of(["t.py::test_b"], ["t.py::test_a"]))
    assert envelope["status"] == "verdict" and envelope["score"]["resolved"] == "not_resolved"
    assert by_id(envelope)["t.py::test_b"]["status"] == "missing"


def test_empty_run_is_no_verdict_in_every_format(pytester):
    pytester.makepyfile(**{"tests/test_nothing": "X = 1\n"})
    instance_path, instance = make_instance(pytester, {"FAIL_TO_PASS": ["tests/test_nothing.py::test_x"],
                                                       "PASS_TO_PASS": []})  # fmt: skip
    _, live, files = run_live(pytester, instance_path)
    assert live["no_verdict_reason"] == "no tests were collected"
    graded = grade_all(files, instance)
    assert_same_as_live(live, graded)
    assert graded[JUNIT_XML]["session"]["exitstatus_inferred"] == 5


def test_an_id_run_twice_counts_its_worst_run(pytester):
    pytester.makeconftest(
        """
        def pytest_collection_modifyitems(items):
            items.extend([i for i in items if i.name == "test_flaky"])
        """
    )
    pytester.makepyfile(
        **{
            "tests/test_twice": """
            RUNS = []

            def test_flaky():
                RUNS.append(1)
                assert len(RUNS) == 1

            def test_other():
                pass
            """
        }
    )
    lists = {"FAIL_TO_PASS": ["tests/test_twice.py::test_other"], "PASS_TO_PASS": ["tests/test_twice.py::test_flaky"]}
    instance_path, instance = make_instance(pytester, lists)
    _, live, files = run_live(pytester, instance_path)
    assert by_id(live)["tests/test_twice.py::test_flaky"]["outcome"] == "failed"
    graded = grade_all(files, instance)
    for fmt, envelope in graded.items():
        assert by_id(envelope)["tests/test_twice.py::test_flaky"]["outcome"] == "failed", fmt
        assert comparable(envelope["score"]) == comparable(live["score"]), fmt


def test_reportlog_carries_the_plugins_integrity_marks(pytester):
    """A conftest rewriting a failed call to passed: the flagger marks the report, reportlog keeps the mark."""
    pytester.makeconftest(
        """
        import pytest

        @pytest.hookimpl(wrapper=True)
        def pytest_runtest_makereport(item, call):
            report = yield
            if call.when == "call" and report.failed:
                report.outcome = "passed"
                report.longrepr = None
            return report
        """
    )
    pytester.makepyfile(**{"tests/test_forged": "def test_broken():\n    assert 0\n\ndef test_ok():\n    pass\n"})
    lists = {"FAIL_TO_PASS": ["tests/test_forged.py::test_broken"], "PASS_TO_PASS": ["tests/test_forged.py::test_ok"]}
    instance_path, instance = make_instance(pytester, lists)
    _, live, files = run_live(pytester, instance_path)
    assert by_id(live)["tests/test_forged.py::test_broken"]["outcome"] == "tampered"
    graded = grade_all(files, instance)
    assert per_test(graded[REPORTLOG], *FULL) == per_test(live, *FULL)
    assert graded[REPORTLOG]["integrity"]["flags"] == live["integrity"]["flags"]  # the marks; dispositions differ by mode
    assert comparable(graded[REPORTLOG]["score"]) == comparable(live["score"])
    # the other formats only hold the forged outcome
    for fmt in (JUNIT_XML, JSON_REPORT):
        assert by_id(graded[fmt])["tests/test_forged.py::test_broken"]["outcome"] == "passed", fmt


@pytest.mark.slow
def test_xdist_run_with_a_crashed_worker(project):
    project.makepyfile(**{"tests/test_crash": "import os\n\ndef test_crash():\n    os._exit(1)\n"})
    lists = {"FAIL_TO_PASS": NOT_RESOLVED["FAIL_TO_PASS"],
             "PASS_TO_PASS": [*NOT_RESOLVED["PASS_TO_PASS"], "tests/test_crash.py::test_crash"]}  # fmt: skip
    instance_path, instance = make_instance(project, lists)
    _, live, files = run_live(project, instance_path, "-n", "2", subprocess=True)
    assert by_id(live)["tests/test_crash.py::test_crash"]["outcome"] == "crashed"
    graded = grade_all(files, instance)
    assert_same_as_live(live, graded)
    for envelope in graded.values():
        assert by_id(envelope)["tests/test_crash.py::test_crash"]["outcome"] == "crashed"


# ------------------------------------------------------------------ the envelope and its extras


def test_envelope_names_the_report_and_the_candidate(project):
    instance_path, instance = make_instance(project, RESOLVED)
    _, _, files = run_live(project, instance_path)
    envelope = grade_report(files[JSON_REPORT], instance)
    assert envelope["score"]["patch_ref"] == "unknown"  # a report does not say which candidate ran
    assert grade_report(files[JSON_REPORT], instance, patch_ref="sha256:abc")["score"]["patch_ref"] == "sha256:abc"
    report = envelope["report"]
    assert report["path"] == str(files[JSON_REPORT])
    assert report["format"] == JSON_REPORT
    assert report["sha256"] == hashlib.sha256(files[JSON_REPORT].read_bytes()).hexdigest()
    assert envelope["score"]["graded_by"].startswith("pytest-objective-scoring/")
    assert "(report:json-report)" in envelope["score"]["graded_by"]
    reportlog = grade_report(files[REPORTLOG], instance)
    assert f"pytest/{pytest.__version__}" in reportlog["score"]["graded_by"]  # SessionStart names it
    assert reportlog["session"]["exitstatus"] == 1  # the module has failing tests


def test_format_is_detected_from_content_not_extension(project, tmp_path):
    instance_path, _ = make_instance(project, RESOLVED)
    _, _, files = run_live(project, instance_path)
    for fmt, path in files.items():
        assert detect_format(path) == fmt
        disguised = tmp_path / f"{fmt}.txt"
        disguised.write_bytes(path.read_bytes())
        assert detect_format(disguised) == fmt


# ------------------------------------------------------------------ JUnit names


@pytest.mark.parametrize(
    "test_id",
    [
        "tests/test_x.py::test_a",
        "tests/test_x.py::TestC::test_a[p 1]",
        "tests/test_x.py::TestC::TestD::test_deep",
        "test_top.py::test_p[a/b.py-x::y]",
        "pkg/sub.dir/test_x.py::test_a[caf\\xe9]",
        "tests/test_x.py::test_bell[\x07]",
        "tests/test_x.py::test_emoji[\U0001f600]",
        "tests/test_x.py",
        "tests",
        "",
    ],
    ids=["plain", "class-and-space", "nested-class", "params-with-path", "dotted-folder", "control-char",
         "astral", "module", "folder", "session"],
)
def test_junit_key_is_pytests_own_naming(test_id):
    from _pytest.junitxml import bin_xml_escape

    from pytest_objective_scoring.reports import _bin_xml_escape

    names = mangle_test_address(test_id)
    # pytest >= 9.2 keeps characters beyond the BMP that older ones escape; names read from a
    # file go through the older escape, so both spellings meet junit_key's
    name = _bin_xml_escape(bin_xml_escape(names[-1]))
    assert junit_key(test_id) == (".".join(names[:-1]), name)
    assert junit_key(test_id, "pre") == (".".join(["pre", *names[:-1]]), name)


def test_junit_names_beyond_the_bmp_match_in_either_pytest_spelling(tmp_path):
    instance = parse_instance({"instance_id": "e-1", "FAIL_TO_PASS": ["tests/test_x.py::test_emoji[\U0001f600]"],
                               "PASS_TO_PASS": []})  # fmt: skip
    for spelling in ("\U0001f600", "#x1F600"):
        path = tmp_path / "junit.xml"
        path.write_text('<testsuites><testsuite name="pytest"><testcase classname="tests.test_x" '
                        f'name="test_emoji[{spelling}]" time="0.1"/></testsuite></testsuites>', encoding="utf-8")  # fmt: skip
        envelope = grade_report(path, instance)
        assert envelope["score"]["resolved"] == "resolved", spelling


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def instance_of(f2p: list[str], p2p: Sequence[str] = ()) -> Instance:
    return parse_instance({"instance_id": "x__y-1", "FAIL_TO_PASS": f2p, "PASS_TO_PASS": list(p2p)})


def test_junit_never_guesses_a_dotted_name_back_into_a_path(tmp_path):
    """``tests/test_a.py::TestB::test_c`` and ``tests/test_a/TestB.py::test_c`` are one JUnit name."""
    path = write(tmp_path, "junit.xml", """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="2">
<testcase classname="tests.test_a.TestB" name="test_c" time="0.001"/>
<testcase classname="tests.test_other" name="test_d" time="0.001"/>
</testsuite></testsuites>""")
    instance = instance_of(["tests/test_a.py::TestB::test_c"], ["tests/test_a/TestB.py::test_c",
                                                                 "tests/test_other.py::test_d"])  # fmt: skip
    envelope = grade_report(path, instance)
    tests = by_id(envelope)
    for test_id in ("tests/test_a.py::TestB::test_c", "tests/test_a/TestB.py::test_c"):
        assert tests[test_id]["status"] == "missing"
        assert "JUnit XML cannot tell it from" in tests[test_id]["hint"]
    assert tests["tests/test_other.py::test_d"]["outcome"] == "passed"
    assert envelope["score"]["resolved"] == "not_resolved"


def test_junit_bare_testsuite_and_unlisted_testcases(tmp_path):
    path = write(tmp_path, "junit.xml", """<testsuite name="pytest" tests="3">
<testcase classname="tests.test_x" name="test_a" time="0.1"><system-out>hello</system-out></testcase>
<testcase classname="tests.test_x.TestC" name="test_b[p 1]" time="0.1"/>
<testcase classname="elsewhere.test_y" name="test_z" time="0.1"><failure message="boom">x</failure></testcase>
</testsuite>""")
    envelope = grade_report(path, instance_of(["tests/test_x.py::test_a"], ["tests/test_x.py::TestC::test_b[p 1]"]))
    assert envelope["score"]["resolved"] == "resolved"
    assert envelope["summary"]["executed"] == 3 and envelope["summary"]["unlisted"] == 1


@pytest.mark.parametrize(
    ("children", "outcome"),
    [
        ("", "passed"),
        ('<failure message="assert 0">tb</failure>', "failed"),
        ('<failure message="[XPASS(strict)] must fail">[XPASS(strict)] must fail</failure>', "xpassed_strict"),
        ('<skipped message="xfail-marked test passes unexpectedly"/>', "xpassed_strict"),
        ('<error message="failed on setup with &quot;RuntimeError: x&quot;">tb</error>', "error"),
        ('<error message="failed on teardown with &quot;RuntimeError: x&quot;">tb</error>', "error"),
        ('<skipped type="pytest.xfail" message="known"/>', "xfailed"),
        ('<skipped type="pytest.xfail" message="k"/><skipped type="pytest.xfail" message="k"/>', "error"),
        ('<skipped type="pytest.skip" message="no">f.py:3: no</skipped>', "skipped"),
        ('<error message="failed on setup with &quot;worker \'gw1\' crashed while running \'t.py::t\'&quot;"/>',
         "crashed"),
        ('<error message="something another tool wrote"/>', "error"),
    ],
    ids=["no-child", "failure", "strict-xpass", "old-strict-xpass", "setup-error", "teardown-error", "xfail",
         "xfail-teardown-error", "skip", "xdist-crash", "unknown-error"],
)
def test_junit_testcase_outcomes(tmp_path, children, outcome):
    path = write(tmp_path, "junit.xml",
                 f'<testsuites><testsuite><testcase classname="t" name="test_a">{children}</testcase>'
                 f'</testsuite></testsuites>')  # fmt: skip
    assert by_id(grade_report(path, instance_of(["t.py::test_a"])))["t.py::test_a"]["outcome"] == outcome


def test_junit_internal_error_is_no_verdict(tmp_path):
    path = write(tmp_path, "junit.xml", """<testsuites><testsuite>
<testcase classname="t" name="test_a"/>
<testcase classname="pytest" name="internal"><error message="internal error">boom</error></testcase>
</testsuite></testsuites>""")
    envelope = grade_report(path, instance_of(["t.py::test_a"]))
    assert envelope["no_verdict_reason"] == "pytest stopped with an internal error"


# ------------------------------------------------------------------ hand-written reportlog / json-report


def reportlog_lines(*reports: tuple[str, str, str], exitstatus: int | None = 0) -> str:
    lines: list[dict[str, Any]] = [{"$report_type": "SessionStart", "pytest_version": "8.0.0"}]
    for nodeid, when, outcome in reports:
        lines.append({"$report_type": "TestReport", "nodeid": nodeid, "when": when, "outcome": outcome,
                      "longrepr": None, "duration": 0.1})  # fmt: skip
    if exitstatus is not None:
        lines.append({"$report_type": "SessionFinish", "exitstatus": exitstatus})
    return "".join(json.dumps(line) + "\n" for line in lines)


def phases(nodeid: str, *outcomes: str) -> list[tuple[str, str, str]]:
    return [(nodeid, when, outcome) for when, outcome in zip(("setup", "call", "teardown"), outcomes)]


def test_reportlog_rerun_attempts_are_discarded(tmp_path):
    reports = [("t.py::t", "setup", "passed"), ("t.py::t", "call", "rerun"), *phases("t.py::t", "passed", "passed", "passed")]
    path = write(tmp_path, "log.jsonl", reportlog_lines(*reports))
    envelope = grade_report(path, instance_of(["t.py::t"]))
    assert by_id(envelope)["t.py::t"]["outcome"] == "passed"
    assert envelope["score"]["resolved"] == "resolved"


def test_reportlog_duplicate_runs_count_the_worst(tmp_path):
    path = write(tmp_path, "log.jsonl", reportlog_lines(*phases("t.py::t", "passed", "passed", "passed"),
                                                        *phases("t.py::t", "passed", "failed", "passed"),
                                                        exitstatus=1))  # fmt: skip
    assert by_id(grade_report(path, instance_of(["t.py::t"])))["t.py::t"]["outcome"] == "failed"


def test_reportlog_without_session_finish_is_no_verdict(tmp_path):
    text = reportlog_lines(*phases("t.py::t", "passed", "passed", "passed"), exitstatus=None)
    path = write(tmp_path, "log.jsonl", text + '{"$report_type": "TestReport", "nodeid": "t.py::u", "wh')
    envelope = grade_report(path, instance_of(["t.py::t"]))
    assert envelope["status"] == "no_verdict"
    assert "never finished" in envelope["no_verdict_reason"]
    assert any("cut short" in note for note in envelope["report"]["notes"])


def test_reportlog_two_sessions_are_refused(tmp_path):
    text = reportlog_lines(*phases("t.py::t", "passed", "passed", "passed"))
    path = write(tmp_path, "log.jsonl", text + text)
    with pytest.raises(ReportError, match=r"log\.jsonl:6: a SessionStart after the session finished \(line 5\)"):
        grade_report(path, instance_of(["t.py::t"]))


def json_report(tests: list[dict[str, Any]], exitcode: int = 0) -> str:
    return json.dumps({"created": 0, "duration": 0.5, "exitcode": exitcode, "root": "/r", "environment": {},
                       "summary": {}, "tests": tests})  # fmt: skip


def test_json_report_category_is_never_overruled_by_a_stale_phase(tmp_path):
    """json-report keeps a phase's last report only; a test it calls failed is never a pass here."""
    test = {"nodeid": "t.py::t", "outcome": "failed", "setup": {"outcome": "passed"},
            "call": {"outcome": "passed"}, "teardown": {"outcome": "passed"}}  # fmt: skip
    path = write(tmp_path, "r.json", json_report([test], exitcode=1))
    assert by_id(grade_report(path, instance_of(["t.py::t"])))["t.py::t"]["outcome"] == "failed"


def test_json_report_without_tests_is_refused(tmp_path):
    path = write(tmp_path, "r.json", json.dumps({"created": 0, "exitcode": 0, "summary": {"passed": 1}}))
    with pytest.raises(ReportError, match="--json-report-summary"):
        grade_report(path, instance_of(["t.py::t"]))


def test_empty_reports_are_no_verdict(tmp_path):
    instance = instance_of(["t.py::t"])
    files = {
        "junit.xml": '<?xml version="1.0"?><testsuites><testsuite tests="0"/></testsuites>',
        "r.json": json_report([], exitcode=5),
        "log.jsonl": reportlog_lines(exitstatus=5),
        "collect-only.jsonl": reportlog_lines(exitstatus=0),
    }
    for name, text in files.items():
        envelope = grade_report(write(tmp_path, name, text), instance)
        assert envelope["status"] == "no_verdict", name
        assert envelope["score"] is None
    assert grade_report(tmp_path / "collect-only.jsonl", instance)["no_verdict_reason"].startswith(
        "the report holds no test result"
    )


# ------------------------------------------------------------------ files that cannot be graded


UNGRADABLE = [
    ("empty.xml", "", r"empty\.xml: is empty .*expected pytest's JUnit XML"),
    ("blank.json", " \n\n", r"blank\.json: is empty"),
    ("notes.txt", "hello world\n", r"notes\.txt: is neither XML nor JSON .*'hello world.*expected pytest's JUnit"),
    ("other.xml", "<?xml version='1.0'?>\n<!-- c --><coverage/>", r"other\.xml: is XML but its root element is <coverage>"),
    ("cut.xml", '<?xml version="1.0"?>\n<testsuites>\n<testsuite>\n<testcase classname="a" name="b">',
     r"cut\.xml:4: invalid XML .*no element found"),
    ("bad.xml", '<testsuites>\n<testsuite>\n<testcase classname="a" name="b"></testsuite>\n</testsuites>',
     r"bad\.xml:3: invalid XML .*mismatched tag"),
    ("noname.xml", "<testsuites>\n<testsuite>\n\n<testcase classname='a'/>\n</testsuite></testsuites>",
     r"noname\.xml:4: <testcase>: has no name attribute"),
    ("doctype.xml", '<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY a "aaaa">]>\n<testsuites/>',
     r"doctype\.xml:2: declares a DOCTYPE"),
    ("cut.json", '{"exitcode": 0,\n "tests": [\n  {"nodeid": "t.py::t",\n', r"cut\.json:4: invalid JSON"),
    ("list.json", "[1, 2]", r"list\.json: a JSON list, expected pytest-json-report's object"),
    ("nonode.json", json_report([{"outcome": "passed"}]), r"nonode\.json: tests\[0\]: has no \"nodeid\""),
    ("other.json", '{"coverage": 1}', r"other\.json: a JSON object without \"exitcode\" or \"tests\""),
    ("bad.jsonl", ('{"$report_type": "SessionStart"}\n{"$report_type": "TestReport", nodeid}\n'
                   '{"$report_type": "SessionFinish", "exitstatus": 0}\n'),
     r"bad\.jsonl:2: invalid JSON in a reportlog line"),
    ("plain.jsonl", '{"a": 1}\n{"a": 2}\n', r"plain\.jsonl:1: holds JSON lines without \"\$report_type\""),
    ("mixed.jsonl", '{"$report_type": "SessionStart"}\n[1]\n{"$report_type": "SessionFinish", "exitstatus": 0}\n',
     r"mixed\.jsonl:2: not a pytest-reportlog line"),
    ("status.jsonl", '{"$report_type": "SessionFinish", "exitstatus": "no"}\n',
     r"status\.jsonl:1: SessionFinish has exitstatus 'no'"),
]


@pytest.mark.parametrize(("name", "content", "pattern"), UNGRADABLE, ids=[case[0] for case in UNGRADABLE])
def test_files_that_cannot_be_graded(tmp_path, name, content, pattern):
    path = write(tmp_path, name, content)
    with pytest.raises(ReportError, match=pattern) as excinfo:
        grade_report(path, instance_of(["t.py::t"]))
    assert isinstance(excinfo.value, ValueError)
    assert excinfo.value.path == str(path)


def test_unreadable_files(tmp_path):
    with pytest.raises(ReportError, match="no such file"):
        detect_format(tmp_path / "absent.xml")
    with pytest.raises(ReportError, match="is a directory"):
        detect_format(tmp_path)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b'{"exitcode": 0,\n"tests": ["\xff"]}')
    with pytest.raises(ReportError, match=r"binary\.json:2: not UTF-8 text"):
        grade_report(binary, instance_of(["t.py::t"]))


def test_formats_are_the_documented_three():
    assert FORMATS == ("junit-xml", "json-report", "reportlog")
    doc = (Path(__file__).resolve().parent.parent / "docs" / "from-report.md").read_text(encoding="utf-8")
    for fmt in FORMATS:
        assert f"report:{fmt}" in doc


# ---------------------------------------------------------------- the command line, on a fixture project


@pytest.fixture(scope="module")
def fixture_outcome_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """textstats with its test patch and the gold fix, run once live with every outcome file written."""
    import shutil
    import subprocess
    import sys

    from .conftest import FIXTURES

    work = tmp_path_factory.mktemp("textstats") / "repo"
    shutil.copytree(FIXTURES / "repos" / "textstats", work, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    for diff in ("test.diff", "gold.diff"):
        subprocess.run(["git", "apply", str(FIXTURES / "patches" / "textstats" / diff)], cwd=work, check=True)
    instance = FIXTURES / "instances" / "textstats.json"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", f"--objective-score={instance}",
         "--objective-score-out=live.json", "--objective-no-ledger", f"--objective-patch-ref={PATCH_REF}",
         "--report-log=log.jsonl", "--junitxml=junit.xml", "--json-report", "--json-report-file=report.json"],
        cwd=work, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    return {"work": work, "instance": instance, "live": json.loads((work / "live.json").read_text())}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["log.jsonl", "junit.xml", "report.json"])
def test_grade_from_report_on_the_command_line_gives_the_live_score(fixture_outcome_files, tmp_path, name):
    from .runner_helpers import run_cli_here as run_cli

    files = fixture_outcome_files
    ledger = tmp_path / "ledger.sqlite"
    result = run_cli("grade", "--from-report", str(files["work"] / name), "--instance", str(files["instance"]),
                     "--patch-ref", PATCH_REF, "--ledger", str(ledger), "--out", str(tmp_path / "score.json"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "verdict: RESOLVED" in result.stdout and f"graded from: {files['work'] / name}" in result.stdout
    graded = json.loads((tmp_path / "score.json").read_text())
    live = files["live"]["score"]
    assert {k: v for k, v in graded["score"].items() if k not in ("graded_by", "graded_at")} == {
        k: v for k, v in live.items() if k not in ("graded_by", "graded_at")}
    assert graded["score"]["graded_by"].startswith("pytest-objective-scoring/") and "(report:" in graded["score"]["graded_by"]
    from pytest_objective_scoring.ledger import Ledger

    with Ledger(ledger) as opened:
        [entry] = [e.data for e in opened.entries("score")]
    assert entry["source"] == "report" and entry["failure_class"] == "none" and entry["score"] == graded["score"]


@pytest.mark.slow
def test_grade_from_report_records_the_harness_cost_without_inventing_cpu(fixture_outcome_files, tmp_path):
    from .runner_helpers import run_cli_here as run_cli

    files = fixture_outcome_files
    cost = tmp_path / "cost.json"
    cost.write_text('{"tokens": 50, "calls": 1, "dollars": 0.02, "harness": "remote-agent"}')
    patch = files["instance"].parent.parent / "patches" / "textstats" / "gold.diff"
    result = run_cli("grade", "--from-report", str(files["work"] / "log.jsonl"), "--instance", str(files["instance"]),
                     "--patch", str(patch), "--cost", str(cost), "--ledger", str(tmp_path / "l.sqlite"), "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    envelope = json.loads(result.stdout)
    digest = hashlib.sha256(patch.read_bytes()).hexdigest()
    assert envelope["score"]["patch_ref"] == f"sha256:{digest}", "--patch names the candidate that ran"
    assert envelope["harness"] == "remote-agent" and envelope["cost"]["cpu"] is None
    assert envelope["cost"]["tokens"] == 50 and envelope["cost"]["dollars"] == 0.02


@pytest.mark.slow
def test_grade_from_report_refusals_and_no_verdict(fixture_outcome_files, tmp_path):
    from .runner_helpers import run_cli_here as run_cli

    files = fixture_outcome_files
    instance = str(files["instance"])
    both = run_cli("grade", "--instance", instance, "--no-ledger")
    assert both.returncode == 2 and "--repo and --patch required (or --from-report FILE" in both.stderr
    with_repo = run_cli("grade", "--from-report", str(files["work"] / "log.jsonl"), "--instance", instance,
                        "--repo", str(files["work"]), "--no-ledger")  # fmt: skip
    assert with_repo.returncode == 2 and "--repo has no effect with --from-report" in with_repo.stderr
    broken = tmp_path / "cut.xml"
    broken.write_text((files["work"] / "junit.xml").read_text()[:200])
    bad = run_cli("grade", "--from-report", str(broken), "--instance", instance, "--no-ledger")
    assert bad.returncode == 2 and f"--from-report {broken}" in bad.stderr and "invalid XML" in bad.stderr
    lines = (files["work"] / "log.jsonl").read_text().splitlines()
    unfinished = tmp_path / "unfinished.jsonl"
    unfinished.write_text("\n".join(line for line in lines if '"SessionFinish"' not in line) + "\n")
    ledger = tmp_path / "l.sqlite"
    none = run_cli("grade", "--from-report", str(unfinished), "--instance", instance, "--ledger", str(ledger), "--json")
    assert none.returncode == 3 and json.loads(none.stdout)["score"] is None
    from pytest_objective_scoring.ledger import Ledger

    with Ledger(ledger) as opened:
        [entry] = [e.data for e in opened.entries("score")]
    assert entry["failure_class"] == "verifier" and entry["status"] == "no_verdict"
