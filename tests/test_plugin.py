"""The plugin end to end, with pytester: outcomes, gates, xdist, bad input, outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import by_id, normalize

OUTCOME_MODULE = """
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

@pytest.mark.xfail(reason="known")
def test_xfails():
    assert 0

@pytest.mark.xfail(reason="fixed already", strict=False)
def test_xpasses():
    pass

@pytest.mark.xfail(reason="must fail", strict=True)
def test_xpasses_strict():
    pass

def test_setup_error(broken_setup):
    pass

def test_teardown_error(broken_teardown):
    pass

def test_skipped():
    pytest.skip("not here")
"""

NAMES = ["passes", "fails", "xfails", "xpasses", "xpasses_strict", "setup_error", "teardown_error", "skipped"]
F2P_STATUS = {
    "passes": ("passed", "passed"),
    "fails": ("failed", "failed"),
    "xfails": ("xfailed", "failed"),
    "xpasses": ("xpassed", "passed"),
    "xpasses_strict": ("xpassed_strict", "failed"),
    "setup_error": ("error", "failed"),
    "teardown_error": ("error", "failed"),
    "skipped": ("skipped", "failed"),
}
P2P_STATUS = {
    "passes": "preserved",
    "fails": "broken",
    "xfails": "preserved",
    "xpasses": "preserved",
    "xpasses_strict": "broken",
    "setup_error": "broken",
    "teardown_error": "broken",
    "skipped": "broken",
}


def ids(names: list[str]) -> list[str]:
    return [f"test_outcomes.py::test_{n}" for n in names]


def test_fail_to_pass_outcome_table(pytester, write_instance, run_and_parse, num_processes):
    pytester.makepyfile(test_outcomes=OUTCOME_MODULE)
    instance = write_instance(ids(NAMES) + ["test_outcomes.py::test_never"], [])
    result, envelope = run_and_parse(instance, n=num_processes)
    tests = by_id(envelope)
    for name, (outcome, status) in F2P_STATUS.items():
        assert (tests[f"test_outcomes.py::test_{name}"]["outcome"], tests[f"test_outcomes.py::test_{name}"]["status"]) == (outcome, status), name
    assert tests["test_outcomes.py::test_never"]["status"] == "missing"
    assert "other tests from test_outcomes.py ran" in tests["test_outcomes.py::test_never"]["hint"]
    assert envelope["score"]["fail_to_pass"] == {"total": 9, "passed": 2, "verdict": "violated"}
    assert envelope["score"]["resolved"] == "not_resolved"
    assert tests["test_outcomes.py::test_teardown_error"]["phases"] == {"setup": "passed", "call": "passed", "teardown": "failed"}


def test_pass_to_pass_outcome_table(pytester, write_instance, run_and_parse, num_processes):
    pytester.makepyfile(test_outcomes=OUTCOME_MODULE)
    instance = write_instance(ids(["passes"]), ids([n for n in NAMES if n != "passes"]))
    _, envelope = run_and_parse(instance, n=num_processes)
    tests = by_id(envelope)
    for name, status in P2P_STATUS.items():
        if name != "passes":
            assert tests[f"test_outcomes.py::test_{name}"]["status"] == status, name
    assert envelope["score"]["pass_to_pass"] == {"total": 7, "passed": 2, "verdict": "violated"}


def test_xdist_verdict_equals_serial(pytester, write_instance, run_and_parse):
    pytester.makepyfile(test_outcomes=OUTCOME_MODULE)
    instance = write_instance(ids(["passes", "xpasses"]), ids(["xfails", "skipped", "fails"]))
    _, serial = run_and_parse(instance, out="serial.json")
    _, parallel = run_and_parse(instance, n=2, out="parallel.json")
    assert normalize(serial) == normalize(parallel)
    assert serial["score"]["graded_by"] == parallel["score"]["graded_by"]


def test_resolved_when_both_gates_hold(pytester, write_instance, run_and_parse, num_processes):
    pytester.makepyfile(test_outcomes=OUTCOME_MODULE)
    instance = write_instance(ids(["passes", "xpasses"]), ids(["xfails"]))
    result, envelope = run_and_parse(instance, n=num_processes)
    assert envelope["score"]["resolved"] == "resolved"
    assert envelope["status"] == "verdict"
    assert envelope["swebench"]["resolution"] == "RESOLVED_FULL"
    result.stdout.fnmatch_lines(["*objective scoring*", "FAIL_TO_PASS: 2/2 passed [[]satisfied[]]",
                                 "PASS_TO_PASS: 1/1 preserved [[]satisfied[]]", "verdict: RESOLVED"])  # fmt: skip


def test_fix_that_breaks_a_passing_test_is_not_resolved(pytester, write_instance, run_and_parse):
    pytester.makepyfile(test_outcomes=OUTCOME_MODULE)
    instance = write_instance(ids(["passes"]), ids(["fails"]))
    result, envelope = run_and_parse(instance)
    assert envelope["score"]["fail_to_pass"]["verdict"] == "satisfied"
    assert envelope["score"]["pass_to_pass"]["verdict"] == "violated"
    assert envelope["score"]["resolved"] == "not_resolved"
    assert envelope["swebench"]["report"]["demo__demo-1"]["tests_status"]["PASS_TO_PASS"]["failure"] == ids(["fails"])
    result.stdout.fnmatch_lines(["failing (1):", "  PASS_TO_PASS test_outcomes.py::test_fails - failed: assert 1 == 2",
                                 "verdict: NOT RESOLVED"])  # fmt: skip


def test_crashed_worker_counts_as_missing_never_as_pass(pytester, write_instance, run_and_parse):
    pytester.makepyfile(
        test_crash="""
        import os
        def test_before(): pass
        def test_crash(): os._exit(1)
        def test_after(): pass
        """
    )
    instance = write_instance(["test_crash.py::test_before"], ["test_crash.py::test_crash", "test_crash.py::test_after"])
    _, envelope = run_and_parse(instance, n=2)
    tests = by_id(envelope)
    assert tests["test_crash.py::test_crash"]["outcome"] == "crashed"
    assert tests["test_crash.py::test_crash"]["status"] == "missing"
    assert tests["test_crash.py::test_after"]["status"] == "preserved"
    assert envelope["score"]["pass_to_pass"]["passed"] == 1
    assert envelope["score"]["resolved"] == "not_resolved"


def test_ids_with_spaces_and_non_ascii_match_exactly(pytester, write_instance, run_and_parse, num_processes):
    pytester.makepyfile(
        test_ids="""
        import pytest
        @pytest.mark.parametrize("text", ["hello  world", "x y"], ids=["hello  world", "x y"])
        def test_spaces(text): assert " " in text
        def test_café(): pass
        @pytest.mark.parametrize("word", ["crème"])
        def test_escaped(word): pass
        """
    )
    f2p = ["test_ids.py::test_spaces[hello  world]", "test_ids.py::test_café"]
    p2p = ["test_ids.py::test_spaces[x y]", "test_ids.py::test_escaped[cr\\xe8me]"]
    _, envelope = run_and_parse(write_instance(f2p, p2p), n=num_processes)
    assert envelope["score"]["resolved"] == "resolved", envelope["tests"]


def test_non_ascii_parameter_ids_match_however_pytest_spells_them(pytester, write_instance, run_and_parse):
    pytester.makepyfile(
        test_ids="""
        import pytest
        @pytest.mark.parametrize("word", ["crème", "brûlée"])
        def test_escaped(word): pass
        """
    )
    instance = write_instance(["test_ids.py::test_escaped[crème]"], ["test_ids.py::test_escaped[br\\xfbl\\xe9e]"])
    _, strict = run_and_parse(instance, out="strict.json")
    assert strict["score"]["resolved"] == "resolved"
    assert by_id(strict)["test_ids.py::test_escaped[crème]"]["matched"] == "test_ids.py::test_escaped[cr\\xe8me]"
    pytester.makeini("[pytest]\ndisable_test_id_escaping_and_forfeit_all_rights_to_community_support = true\n")
    _, unescaped = run_and_parse(instance, out="unescaped.json")
    assert unescaped["score"]["resolved"] == "resolved"
    _, compat = run_and_parse(instance, "--objective-compat=swebench", out="compat.json")
    assert compat["score"]["resolved"] == "not_resolved"  # SWE-bench compares log strings exactly
    hint = by_id(compat)["test_ids.py::test_escaped[br\\xfbl\\xe9e]"]["hint"]
    assert "pytest's id escaping is off here: it ran as test_ids.py::test_escaped[brûlée]" in hint


def test_truncated_id_is_matched_by_prefix_in_both_modes(pytester, write_instance, run_and_parse):
    pytester.makepyfile(
        test_trunc="""
        import pytest
        @pytest.mark.parametrize("v", ["a b", "c"], ids=["a b", "c"])
        def test_p(v): pass
        """
    )
    instance = write_instance(["test_trunc.py::test_p[a"], ["test_trunc.py::test_p[c]"])
    _, strict = run_and_parse(instance, out="strict.json")
    test = by_id(strict)["test_trunc.py::test_p[a"]
    assert (test["status"], test["matched_by"], test["matched_ids"]) == ("passed", "prefix", ["test_trunc.py::test_p[a b]"])
    assert strict["score"]["resolved"] == "resolved"
    assert list(strict["score"]) == ["instance_id", "patch_ref", "resolved", "fail_to_pass", "pass_to_pass",
                                     "graded_by", "graded_at"]  # fmt: skip
    _, compat = run_and_parse(instance, "--objective-compat=swebench", out="compat.json")
    assert by_id(compat)["test_trunc.py::test_p[a"]["matched"] == "test_trunc.py::test_p[a b]"
    assert by_id(compat)["test_trunc.py::test_p[a"]["matched_by"] == "prefix"
    assert compat["score"]["resolved"] == "resolved"
    assert "compat=swebench" in compat["score"]["graded_by"]


def test_strict_truncated_id_needs_every_test_it_was_cut_from(pytester, write_instance, run_and_parse, num_processes):
    pytester.makepyfile(
        test_trunc="""
        import pytest
        @pytest.mark.parametrize("v", ["a b", "a  c", "ab", "x y", "x z"], ids=["a b", "a  c", "ab", "x y", "x z"])
        def test_p(v): assert v not in ("ab", "x z")
        def test_other(): pass
        """
    )
    instance = write_instance(["test_trunc.py::test_p[a"], ["test_trunc.py::test_p[x"])
    result, strict = run_and_parse(instance, "--objective-select", n=num_processes)
    tests = by_id(strict)
    # test_p[ab] fails but does not continue "test_p[a" with a space: not one of its tests, and deselected
    assert tests["test_trunc.py::test_p[a"]["status"] == "passed"
    assert tests["test_trunc.py::test_p[a"]["matched_ids"] == ["test_trunc.py::test_p[a b]", "test_trunc.py::test_p[a  c]"]
    assert tests["test_trunc.py::test_p[x"]["status"] == "broken"
    assert tests["test_trunc.py::test_p[x"]["matched"] == "test_trunc.py::test_p[x z]"
    assert strict["score"]["pass_to_pass"] == {"total": 1, "passed": 0, "verdict": "violated"}
    assert strict["score"]["resolved"] == "not_resolved"
    result.assert_outcomes(passed=3, failed=1, deselected=None if num_processes else 2)  # workers deselect silently
    # SWE-bench's own rule takes every id the cut prefixes: test_p[ab] fails where the others pass, so it refuses
    _, compat = run_and_parse(instance, "--objective-compat=swebench", out="compat.json")
    assert by_id(compat)["test_trunc.py::test_p[a"]["status"] == "missing"
    assert "disagree on pass versus fail" in by_id(compat)["test_trunc.py::test_p[a"]["hint"]


def test_swebench_compat_skipped_pass_to_pass_is_preserved(pytester, write_instance, run_and_parse):
    pytester.makepyfile(test_outcomes=OUTCOME_MODULE)
    instance = write_instance(ids(["passes", "xfails"]), ids(["skipped"]))
    _, strict = run_and_parse(instance, out="strict.json")
    _, compat = run_and_parse(instance, "--objective-compat=swebench", out="compat.json")
    assert strict["score"]["resolved"] == "not_resolved"
    assert compat["score"]["resolved"] == "resolved"  # XFAIL passes F2P, SKIPPED preserves P2P


def test_ids_are_relative_to_rootdir_from_any_folder(pytester, write_instance):
    pytester.makeini("[pytest]\n")
    pytester.mkpydir("pkg")
    tests = pytester.mkdir("tests")
    (tests / "test_deep.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
    instance = write_instance(["tests/test_deep.py::test_one"])
    out = pytester.path / "out.json"
    result = subprocess.run([sys.executable, "-m", "pytest", f"--objective-score={instance}",
                             f"--objective-score-out={out}", "."], cwd=tests, capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 0, result.stdout
    assert json.loads(out.read_text())["score"]["resolved"] == "resolved"


def test_select_runs_only_listed_tests(pytester, write_instance, num_processes):
    pytester.makepyfile(test_outcomes=OUTCOME_MODULE)
    instance = write_instance(ids(["passes"]), ids(["xfails"]))
    extra = ["-n", str(num_processes)] if num_processes else []
    result = pytester.runpytest_subprocess(f"--objective-score={instance}", "--objective-select", *extra)
    # under xdist the workers deselect, and the controller's summary does not count them
    result.assert_outcomes(passed=1, xfailed=1, deselected=0 if num_processes else 6)


@pytest.mark.parametrize(
    ("listed", "expected"),
    [
        ((["passes"], ["xfails"]), 0),
        ((["fails"], []), 1),
        ((["passes"], ["never_defined"]), 1),
    ],
    ids=["resolved-despite-unlisted-failure", "not-resolved", "missing-test-not-resolved"],
)
def test_gate_sets_exit_status_from_verdict(pytester, write_instance, listed, expected):
    pytester.makepyfile(test_outcomes=OUTCOME_MODULE)
    instance = write_instance(ids(listed[0]), ids(listed[1]))
    result = pytester.runpytest_inprocess(f"--objective-score={instance}", "--objective-gate")
    assert result.ret == expected


def test_without_gate_pytest_keeps_its_own_exit_status(pytester, write_instance):
    pytester.makepyfile(test_outcomes=OUTCOME_MODULE)
    instance = write_instance(ids(["passes"]))
    result = pytester.runpytest_inprocess(f"--objective-score={instance}")
    assert result.ret == 1  # unlisted tests failed; the verdict does not hide that
    result.stdout.fnmatch_lines(["verdict: RESOLVED"])


def test_collection_error_is_no_verdict(pytester, write_instance, run_and_parse):
    pytester.makepyfile(test_broken="import not_a_module_anywhere\n\ndef test_x():\n    pass\n")
    instance = write_instance(["test_broken.py::test_x"])
    result, envelope = run_and_parse(instance, "--objective-gate")
    assert envelope["status"] == "no_verdict"
    assert envelope["score"] is None
    assert "interrupted" in envelope["no_verdict_reason"] and "test_broken.py" in envelope["no_verdict_reason"]
    assert result.ret == 2  # pytest's own status stands: never a verdict
    result.stdout.fnmatch_lines(["verdict: NO VERDICT - *"])


def test_continue_on_collection_errors_still_no_verdict_for_listed_module(pytester, write_instance, run_and_parse):
    pytester.makepyfile(test_broken="import not_a_module_anywhere\n\ndef test_x():\n    pass\n",
                        test_fine="def test_y():\n    pass\n")  # fmt: skip
    instance = write_instance(["test_broken.py::test_x"], ["test_fine.py::test_y"])
    result, envelope = run_and_parse(instance, "--continue-on-collection-errors", "--objective-gate")
    assert envelope["status"] == "no_verdict"
    assert "collecting test_broken.py failed" in envelope["no_verdict_reason"]
    assert result.ret == 6  # GATE_NO_VERDICT: no pytest status is 6


def test_interrupted_session_is_no_verdict(pytester, write_instance, run_and_parse):
    pytester.makepyfile(test_exit="import pytest\n\ndef test_a():\n    pytest.exit('stop now')\n\ndef test_b():\n    pass\n")
    _, envelope = run_and_parse(write_instance(["test_exit.py::test_b"]))
    assert envelope["status"] == "no_verdict"
    assert envelope["no_verdict_reason"] == "the test session was interrupted"


def test_nothing_collected_is_no_verdict(pytester, write_instance, run_and_parse):
    _, envelope = run_and_parse(write_instance(["test_none.py::test_x"]))
    assert envelope["no_verdict_reason"] == "no tests were collected"


def test_stopped_early_is_no_verdict(pytester, write_instance, run_and_parse):
    pytester.makepyfile(test_outcomes=OUTCOME_MODULE)
    result, envelope = run_and_parse(write_instance(ids(["skipped"]), ids(["passes"])), "-x", "--objective-gate")
    assert "stopped early" in envelope["no_verdict_reason"]
    assert result.ret == 6  # GATE_NO_VERDICT: no pytest status is 6


def test_forced_passed_reports_are_flagged_and_do_not_count(pytester, write_instance, run_and_parse, num_processes):
    pytester.makeconftest(
        """
        import pytest
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(item, call):
            outcome = yield
            outcome.get_result().outcome = "passed"
        """
    )
    pytester.makepyfile(test_outcomes=OUTCOME_MODULE)
    _, envelope = run_and_parse(write_instance(ids(["fails"]), ids(["passes"])), n=num_processes)
    test = by_id(envelope)[ids(["fails"])[0]]
    assert test["outcome"] == "tampered" and test["status"] == "failed"
    assert envelope["score"]["resolved"] == "not_resolved"
    assert any(f["kind"] == "raised_but_passed" for f in envelope["integrity"]["flags"])


def test_json_report_carries_the_score(pytester, write_instance, run_and_parse):
    pytester.makepyfile(test_outcomes=OUTCOME_MODULE)
    _, envelope = run_and_parse(write_instance(ids(["passes"])), "--json-report", "--json-report-file=report.json")
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["objective_scoring"]["score"] == envelope["score"]
    assert report["objective_scoring"]["status"] == "verdict"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"instance_id": "x", "PASS_TO_PASS": []}', "field 'FAIL_TO_PASS': missing"),
        ('{"instance_id": "x", "FAIL_TO_PASS": ["a"], "PASS_TO_PASS": ["a"]}', "listed in both"),
        ('{"instance_id": "x", "FAIL_TO_PASS": ["a", "a"], "PASS_TO_PASS": []}', "duplicate test id 'a'"),
        ('{"instance_id": "x", "FAIL_TO_PASS": [1], "PASS_TO_PASS": []}', "item 0 must be a string"),
        ('{"instance_id": "x", "FAIL_TO_PASS": [], "PASS_TO_PASS": []}', "is empty"),
        ("{not json", "invalid JSON"),
    ],
    ids=["missing-list", "in-both", "duplicate", "non-string", "empty-f2p", "bad-json"],
)
def test_bad_instance_is_a_usage_error_never_a_verdict(pytester, content, fragment):
    (pytester.path / "bad.json").write_text(content, encoding="utf-8")
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest_inprocess("--objective-score=bad.json", "--objective-score-out=out.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*bad.json*{fragment}*"])
    assert not (pytester.path / "out.json").exists()


def test_dataset_needs_an_instance_id(pytester, write_instance):
    rows = [{"instance_id": f"r-{i}", "FAIL_TO_PASS": "[\"test_a.py::test_a\"]", "PASS_TO_PASS": "[]"} for i in (1, 2)]
    (pytester.path / "data.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest_inprocess("--objective-score=data.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*holds 2 instances*--objective-instance-id*"])
    result = pytester.runpytest_inprocess("--objective-score=data.jsonl", "--objective-instance-id=r-2", "--objective-gate")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["instance: r-2 *", "verdict: RESOLVED"])


@pytest.mark.parametrize(
    "args",
    [["--objective-gate"], ["--objective-score-out=x.json"], ["--objective-select"]],
    ids=["gate", "out", "select"],
)
def test_options_without_an_instance_are_refused(pytester, args):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest_inprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*needs --objective-score=INSTANCE*"])


def test_dist_each_is_refused(pytester, write_instance):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    instance = write_instance(["test_a.py::test_a"])
    result = pytester.runpytest_subprocess(f"--objective-score={instance}", "-n", "2", "--dist=each")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--dist=each*"])


def test_bad_compat_value_is_a_usage_error(pytester, write_instance):
    instance = write_instance(["test_a.py::test_a"])
    result = pytester.runpytest_inprocess(f"--objective-score={instance}", "--objective-compat=lenient")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'lenient' is not a compat mode*"])


def test_settings_from_ini_and_environment(pytester, write_instance, monkeypatch):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    write_instance(["test_a.py::test_a"], name="inst.json")
    pytester.makeini("[pytest]\nobjective_score = inst.json\nobjective_gate = true\nobjective_score_out = from-ini.json\n")
    result = pytester.runpytest_inprocess()
    assert result.ret == 0
    assert json.loads((pytester.path / "from-ini.json").read_text())["score"]["resolved"] == "resolved"
    pytester.makeini("[pytest]\n")
    monkeypatch.setenv("PYTEST_OBJECTIVE_SCORE", str(pytester.path / "inst.json"))
    result = pytester.runpytest_inprocess("--objective-gate")
    result.stdout.fnmatch_lines(["verdict: RESOLVED"])


def test_patch_ref_from_option_and_from_the_worktree(pytester, write_instance, run_and_parse):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    instance = write_instance(["test_a.py::test_a"])
    _, named = run_and_parse(instance, "--objective-patch-ref=cand-7")
    assert named["score"]["patch_ref"] == "cand-7"
    # pytester's own files (basetemp, captured streams) are not part of the candidate
    (pytester.path / ".gitignore").write_text("runpytest-*\nstdout\nstderr\n", encoding="utf-8")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=pytester.path, check=True)
    subprocess.run([*git, "add", "-A"], cwd=pytester.path, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=pytester.path, check=True)
    _, first = run_and_parse(instance, out="one.json")
    _, again = run_and_parse(instance, out="one.json")
    assert first["score"]["patch_ref"].startswith("sha256:")
    assert first["score"]["patch_ref"] == again["score"]["patch_ref"], "the envelope file does not change the ref"
    (pytester.path / "test_a.py").write_text("def test_a():\n    assert True\n", encoding="utf-8")
    _, changed = run_and_parse(instance, out="one.json")
    assert changed["score"]["patch_ref"] != first["score"]["patch_ref"]


def test_help_lists_the_options(pytester):
    result = pytester.runpytest_inprocess("--help")
    result.stdout.fnmatch_lines(
        ["Classify tests and gate on FAIL_TO_PASS / PASS_TO_PASS outcomes:", "*--objective-score=INSTANCE*", "*--objective-instance-id=ID*",
         "*--objective-compat=MODE*", "*--objective-patch-ref=REF*", "*--objective-score-out=FILE*", "*--objective-gate*",
         "*--objective-select*"]
    )  # fmt: skip


def test_header_names_the_instance(pytester, write_instance):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest_inprocess(f"--objective-score={write_instance(['test_a.py::test_a'])}")
    result.stdout.fnmatch_lines(["objective-scoring: demo__demo-1 (1 FAIL_TO_PASS, 0 PASS_TO_PASS) compat=strict gate=off"])


def test_disabled_plugin_adds_nothing(pytester):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest_inprocess()
    assert result.ret == 0
    assert "objective scoring" not in result.stdout.str()
    assert "objective-scoring:" not in result.stdout.str()


def test_importing_the_plugin_is_cheap():
    code = (
        "import sys, pytest_objective_scoring.plugin as p; "
        "heavy = [m for m in ('unidiff', 'rich', 'pytest_objective_scoring.scorer', 'pytest_objective_scoring.runner', "
        "'pytest_objective_scoring.instances', 'sqlite3', 'scipy') if m in sys.modules]; "
        "print(heavy); sys.exit(1 if heavy else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_quiet_mode_still_shows_the_verdict(pytester, write_instance):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    instance = write_instance(["test_a.py::test_a"])
    assert "verdict: RESOLVED" in pytester.runpytest_inprocess(f"--objective-score={instance}", "-q").stdout.str()
    assert "verdict:" not in pytester.runpytest_inprocess(f"--objective-score={instance}", "-qq").stdout.str()


def test_an_envelope_file_in_a_missing_folder_is_refused_before_the_run_as_the_cli_does(pytester, write_instance):
    """Missing folders are never created (a misspelt path would swallow the envelope): a usage
    error before any test runs, as ``objective-score grade --out`` refuses one."""
    pytester.makepyfile(test_a="def test_a():\n    raise SystemExit('never run')\n")
    instance = write_instance(["test_a.py::test_a"])
    result = pytester.runpytest_inprocess(f"--objective-score={instance}", "--objective-score-out=deep/er/out.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--objective-score-out *deep/er/out.json: the folder *deep/er does not exist (missing "
                                 "folders are not created: make it first) (from command line)*"])  # fmt: skip
    assert not (pytester.path / "deep").exists()


def test_an_envelope_file_that_is_a_directory_is_a_usage_error(pytester, write_instance):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    (pytester.path / "outdir").mkdir()
    result = pytester.runpytest_inprocess(f"--objective-score={write_instance(['test_a.py::test_a'])}",
                                          "--objective-score-out=outdir", "--objective-gate")  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--objective-score-out {pytester.path / 'outdir'}: is a directory: expected a file "
                                 "(from command line)*"])  # fmt: skip


@pytest.mark.parametrize("where", ["too-long", "loop"])
def test_an_envelope_path_that_cannot_be_a_file_is_a_usage_error_never_an_internal_error(pytester, write_instance, where):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    if where == "loop":
        (pytester.path / "loop").symlink_to(pytester.path / "loop")
        out = "loop"
    else:
        out = "o" * 300 + ".json"
    result = pytester.runpytest_inprocess(f"--objective-score={write_instance(['test_a.py::test_a'])}",
                                          f"--objective-score-out={out}")  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(["*--objective-score-out *: * (from command line)*"])


def test_an_envelope_file_that_cannot_be_written_is_said_and_the_ledger_still_records_the_run(pytester, write_instance):
    """A write that fails at the session's end (here its folder is gone by then) is one line, never a
    traceback, and the envelope is printed in full instead: the verdict, the gate's status and the
    ledger's entry stand; the status (6, no verdict) says the envelope is not where it was asked."""
    pytester.makepyfile(test_a="import shutil\n\ndef test_a():\n    shutil.rmtree('gone')\n")
    (pytester.path / "gone").mkdir()
    ledger = pytester.path / "l.sqlite"
    result = pytester.runpytest_inprocess(f"--objective-score={write_instance(['test_a.py::test_a'])}",
                                          "--objective-score-out=gone/score.json", "--objective-gate",
                                          f"--objective-ledger={ledger}")  # fmt: skip
    assert result.ret == 6
    result.stdout.fnmatch_lines(["verdict: RESOLVED", f"score: NOT written to {pytester.path / 'gone' / 'score.json'}: *",
                                 '*"score": {"instance_id": *"resolved": "resolved"*',
                                 f"ledger: entry 1 appended to {ledger}"])  # fmt: skip
    assert "score written to" not in result.stdout.str() and "Traceback" not in result.stdout.str()


def test_failing_subtests_fail_the_test(pytester, write_instance, run_and_parse, num_processes):
    pytester.makepyfile(
        test_sub="""
        import unittest
        def test_sub(subtests):
            with subtests.test(msg="one"):
                assert 0
            with subtests.test(msg="two"):
                pass
        class T(unittest.TestCase):
            def test_u(self):
                for i in range(2):
                    with self.subTest(i=i):
                        self.assertEqual(i, 0)
        def test_ok():
            pass
        """
    )
    instance = write_instance(["test_sub.py::test_sub", "test_sub.py::T::test_u"], ["test_sub.py::test_ok"])
    _, envelope = run_and_parse(instance, n=num_processes)
    assert envelope["score"]["fail_to_pass"]["passed"] == 0
    assert envelope["score"]["resolved"] == "not_resolved"


def test_xfail_with_a_raising_teardown_does_not_block_the_verdict(pytester, write_instance, run_and_parse):
    pytester.makepyfile(
        test_d="""
        import pytest
        @pytest.fixture
        def bad():
            yield
            raise RuntimeError("teardown")
        @pytest.mark.xfail
        def test_xf(bad):
            assert 0
        def test_ok():
            pass
        """
    )
    result, envelope = run_and_parse(write_instance(["test_d.py::test_ok"]), "--objective-gate")
    assert envelope["status"] == "verdict"
    assert result.ret == 0


def test_select_keeps_either_spelling_of_an_escaped_id(pytester, write_instance, run_and_parse):
    pytester.makepyfile(
        test_u="""
        import pytest
        @pytest.mark.parametrize("w", ["café", "x"])
        def test_p(w): pass
        """
    )
    result, envelope = run_and_parse(write_instance(["test_u.py::test_p[café]"]), "--objective-select")
    assert envelope["score"]["resolved"] == "resolved"
    result.assert_outcomes(passed=1, deselected=1)


@pytest.mark.parametrize("flag", ["--collect-only", "--setup-only", "--setup-plan"])
def test_a_session_that_runs_no_test_body_is_no_verdict(pytester, write_instance, run_and_parse, flag):
    """--setup-only and --setup-plan finish the session with only the fixtures' phases: the listed
    tests never ran, so there is no verdict (not a NOT RESOLVED of a gold patch)."""
    pytester.makepyfile(test_a="import pytest\n\n@pytest.fixture\ndef f():\n    return 1\n\ndef test_a(f):\n    pass\n")
    result, envelope = run_and_parse(write_instance(["test_a.py::test_a"]), flag, "--objective-gate")
    assert (envelope["status"], envelope["no_verdict_reason"], envelope["score"]) == ("no_verdict", f"{flag} ran no test", None)
    assert result.ret == 6  # GATE_NO_VERDICT: no pytest status is 6


def test_exit_status_1_without_failures_keeps_the_verdict(pytester, write_instance, run_and_parse):
    pytester.makeconftest(
        """
        import pytest
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtestloop(session):
            yield
            session.testsfailed += 1  # what pytest-cov does when coverage is under --cov-fail-under
        """
    )
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result, envelope = run_and_parse(write_instance(["test_a.py::test_a"]))
    assert result.ret == 1
    assert envelope["session"]["exitstatus"] == 1
    assert envelope["score"]["resolved"] == "resolved"
    assert envelope["session"]["note"].startswith("pytest exited 1 although no test failed")
