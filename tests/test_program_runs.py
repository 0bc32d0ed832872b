"""Runs that are not pytest, read without running a grading: the program recorder inside a test
process (unittest's result protocol and SymPy's reporter, on a channel that keeps what it is
given), the record read as a LogRun, and the console's disagreements with it."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
import textwrap
import unittest
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import outcomes as oc
from pytest_objective_scoring import program_runs
from pytest_objective_scoring.instances import parse_instance
from pytest_objective_scoring.runner_logs import grade_run

from .conftest import FIXTURES

RECORDER = Path(program_runs.__file__).with_name("program_recorder.py")


class Channel:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def write(self, record: dict[str, Any]) -> None:
        self.lines.append(json.loads(json.dumps(record)))


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The program recorder loaded fresh, its unittest wrappers removed again afterwards."""
    import unittest.result

    saved = dict(unittest.result.TestResult.__dict__)
    spec = importlib.util.spec_from_file_location("_program_recorder_under_test", RECORDER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    for name, value in saved.items():
        if name in module.UNITTEST_HOOKS:
            setattr(unittest.result.TestResult, name, value)


class Sample(unittest.TestCase):
    __test__ = False  # run by the tests below, not collected by pytest

    def test_passes(self) -> None:
        pass

    def test_fails(self) -> None:
        self.assertEqual(1, 2)

    def test_raises(self) -> None:
        raise KeyError("boom")

    @unittest.skip("not today")
    def test_skipped(self) -> None:
        pass

    @unittest.expectedFailure
    def test_expected_failure(self) -> None:
        self.assertTrue(False)

    @unittest.expectedFailure
    def test_unexpected_success(self) -> None:
        pass

    def test_subtest_fails(self) -> None:
        for i in range(3):
            with self.subTest(i=i):
                self.assertNotEqual(i, 1)

    def test_documented(self) -> None:
        """The first line of its docstring.

        More text."""


class Inner(unittest.TestCase):
    __test__ = False  # run by the tests below, not collected by pytest

    def test_inner(self) -> None:
        self.fail("an inner run's failure")


class RunsAnInnerSuite(unittest.TestCase):
    __test__ = False  # run by the tests below, not collected by pytest

    def test_outer(self) -> None:  # as Django's tests of its own runner do
        unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(unittest.defaultTestLoader.loadTestsFromTestCase(Inner))


class BrokenClassSetup(unittest.TestCase):
    __test__ = False  # run by the tests below, not collected by pytest

    @classmethod
    def setUpClass(cls) -> None:
        raise RuntimeError("no database")

    def test_never_runs(self) -> None:
        pass


def run(*cases: type[unittest.TestCase]) -> unittest.TestResult:
    suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromTestCase(c) for c in cases)
    return unittest.TextTestRunner(stream=io.StringIO(), verbosity=2).run(suite)


def test_unittest_s_results_are_recorded_one_case_a_test_with_the_outcome_unittest_meant(recorder: Any) -> None:
    channel = Channel()
    program = recorder.install(channel, "unittest")
    run(Sample)
    outcomes = {c["name"]: c["outcome"] for c in channel.lines}
    assert outcomes == {"test_passes": "passed", "test_fails": "failed", "test_raises": "error",
                        "test_skipped": "skipped", "test_expected_failure": "xfailed",
                        "test_unexpected_success": "xpassed_strict", "test_subtest_fails": "failed",
                        "test_documented": "passed"}  # fmt: skip
    fails = next(c for c in channel.lines if c["name"] == "test_fails")
    assert fails["message"] == "AssertionError: 1 != 2"
    assert fails["cls"] == f"{__name__}.Sample" and fails["str"].startswith("test_fails (")
    sub = next(c for c in channel.lines if c["name"] == "test_subtest_fails")
    assert sub["subtests"][0][0] == "failed" and "(i=1)" in sub["subtests"][0][1]
    documented = next(c for c in channel.lines if c["name"] == "test_documented")
    assert documented["doc"] == "The first line of its docstring."
    session = recorder.session(program, 1, {})
    assert (session["finished"], session["runs"], session["cases"]) == (True, 1, 8)
    assert session["patched_internals"] == []


def test_only_the_main_run_is_recorded_and_a_class_fixture_that_raised_is_a_holder(recorder: Any) -> None:
    channel = Channel()
    program = recorder.install(channel, "django")
    run(RunsAnInnerSuite, BrokenClassSetup)
    names = [c.get("name") or c.get("holder") for c in channel.lines]
    assert "test_inner" not in names  # a suite a test runs inside itself is not the run's
    outer = next(c for c in channel.lines if c.get("name") == "test_outer")
    assert outer["outcome"] == "passed"
    holder = next(c for c in channel.lines if c.get("holder"))
    assert holder["holder"].startswith("setUpClass (") and holder["outcome"] == "error"
    assert "no database" in holder["message"]
    assert program.runs == 1


def test_a_second_top_level_run_is_counted_and_a_replaced_wrapper_is_named(recorder: Any) -> None:
    import unittest.result

    channel = Channel()
    program = recorder.install(channel, "unittest")
    run(Inner)
    run(Inner)
    assert program.runs == 2
    unittest.result.TestResult.addFailure = lambda self, test, err: None  # type: ignore[method-assign]
    assert program.replaced() == ["unittest.result.TestResult.addFailure: replaced after the recorder wrapped it"]


def test_a_run_that_never_stops_leaves_no_finished_session(recorder: Any) -> None:
    channel = Channel()
    program = recorder.install(channel, "unittest")
    result = unittest.TestResult()
    result.startTestRun()
    test = Sample("test_passes")
    result.startTest(test)
    assert recorder.session(program, 0, {})["finished"] is False
    assert channel.lines == []  # the test never stopped: no case


def test_sympy_s_reporter_is_wrapped_when_its_runner_module_is_imported(tmp_path: Path) -> None:
    """In a process of its own: the miniature's ``sympy`` package must not meet another one."""
    script = textwrap.dedent(f"""
        import importlib.util, json, sys
        spec = importlib.util.spec_from_file_location("rec", {str(RECORDER)!r})
        rec = importlib.util.module_from_spec(spec); spec.loader.exec_module(rec)
        lines = []
        class Channel:
            def write(self, record): lines.append(record)
        program = rec.install(Channel(), "sympy")
        sys.path.insert(0, {str(FIXTURES / "repos" / "sympy-mini")!r})
        import io, contextlib, os
        os.environ["PYTHONHASHSEED"] = "1"
        with contextlib.redirect_stdout(io.StringIO()):
            import sympy
            ok = sympy.test("sympy/core/tests/test_numbers.py", verbose=True)
        print(json.dumps({{"ok": ok, "lines": lines, "session": rec.session(program, 0, {{}})}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    outcomes = {c["name"]: c["outcome"] for c in found["lines"]}
    assert outcomes == {"test_igcd": "passed", "test_rational_lowest_terms": "passed", "test_rational_add": "passed",
                        "test_rational_mul": "passed", "test_zero_denominator": "passed",
                        "test_float_conversion": "xfailed", "test_symbolic_powers": "skipped"}  # fmt: skip
    assert all(c["file"].endswith("sympy/core/tests/test_numbers.py") for c in found["lines"])
    assert found["session"]["finished"] is True and found["session"]["patched_internals"] == []


# ---------------------------------------------------------------------- reading a record


def case(name: str, cls: str, outcome: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "cls": cls, "str": f"{name} ({cls})", "id": f"{cls}.{name}", "doc": None,
            "outcome": outcome, "message": "", **extra}  # fmt: skip


SESSION = {"finished": True, "exitstatus": 0, "runs": 1}


def test_a_record_answers_to_every_spelling_swebench_lists_a_test_by() -> None:
    cases = [case("test_a", "app.tests.T", "passed"),
             {**case("test_b", "app.tests.T", "failed"), "str": "test_b (app.tests.T.test_b)", "doc": "B does b."},
             {"name": None, "cls": "unittest.suite._ErrorHolder", "holder": "setUpClass (app.tests.U)", "outcome": "error",
              "message": "RuntimeError: x"},
             {"name": "broken.tests", "cls": "unittest.loader._FailedTest", "str": "broken.tests (unittest.loader._FailedTest)",
              "outcome": "error", "message": "ImportError: nope"}]  # fmt: skip
    record = program_runs.record_run("django", cases, SESSION, "/copy")
    assert [t.test_id for t in record.tests] == ["test_a (app.tests.T)", "test_b (app.tests.T.test_b)"]
    assert set(record.tests[1].aliases) >= {"test_b (app.tests.T)", "app.tests.T.test_b", "B does b."}
    assert [(e.kind, e.scope) for e in record.events] == [("setup", "app.tests.U"), ("import", "broken.tests")]
    instance = parse_instance({"instance_id": "i", "FAIL_TO_PASS": ["B does b.", "test_c (app.tests.U)"],
                               "PASS_TO_PASS": ["app.tests.T.test_a", "test_d (broken.tests.V)"]}, "<i>")  # fmt: skip
    grading, reason, _ = grade_run(record, instance, "strict")
    outcomes = {r.test_id: r.outcome for r in grading.results}
    assert outcomes == {"B does b.": "failed", "test_c (app.tests.U)": "error", "app.tests.T.test_a": "passed",
                        "test_d (broken.tests.V)": "missing"}  # fmt: skip
    assert reason is not None and "broken.tests: failed to import" in reason


def test_sympy_cases_are_named_by_their_file_below_the_copy() -> None:
    cases = [{"file": "/copy/sympy/core/tests/test_basic.py", "name": "test_immutable", "outcome": "passed", "message": ""},
             {"file": "/copy/sympy/x/tests/test_y.py", "name": None, "import_error": True, "outcome": "error",
              "message": "ImportError: z"}]  # fmt: skip
    record = program_runs.record_run("sympy", cases, SESSION, "/copy")
    assert record.tests[0].test_id == "sympy/core/tests/test_basic.py:test_immutable"
    assert "test_immutable" in record.tests[0].aliases
    assert [(e.kind, e.scope) for e in record.events] == [("import", "sympy/x/tests/test_y.py")]


def test_the_console_saying_ok_for_a_test_the_recorder_saw_fail_is_a_disagreement() -> None:
    record = program_runs.record_run("django", [case("test_a", "app.tests.T", "failed"),
                                                case("test_b", "app.tests.T", "passed")], SESSION, "/copy")  # fmt: skip
    console = program_runs.console_run("django", "test_a (app.tests.T) ... ok\nFAIL\ntest_b (app.tests.T) ... ok\n\n"
                                       + "-" * 70 + "\nRan 2 tests in 0.001s\n\nOK\n", SESSION)  # fmt: skip
    instance = parse_instance({"instance_id": "i", "FAIL_TO_PASS": ["test_a (app.tests.T)"], "PASS_TO_PASS": []}, "<i>")
    strict = program_runs.disagreements(record, console, instance, "strict")
    swebench = program_runs.disagreements(record, console, instance, "swebench")
    assert [s["detail"] for s in strict] == ["test_a (app.tests.T): the console says 'ok', the recorder saw failed"]
    assert [s["kind"] for s in swebench] == ["console_disagrees", "console_disagrees"]
    assert "test_a (app.tests.T): SWE-bench's reading of the console says PASSED, the recorder saw failed" in [
        s["detail"] for s in swebench]
    assert all("test_b" not in s["detail"] for s in strict + swebench)


def test_a_console_that_shows_no_status_for_a_test_is_no_disagreement() -> None:
    record = program_runs.record_run("django", [case("test_a", "app.tests.T", "failed")], SESSION, "/copy")
    console = program_runs.console_run("django", "test_a (app.tests.T) ... some output\nmore output\n\n" + "-" * 70
                                       + "\nRan 1 test in 0.001s\n\nFAILED (failures=1)\n", SESSION)  # fmt: skip
    instance = parse_instance({"instance_id": "i", "FAIL_TO_PASS": ["test_a (app.tests.T)"], "PASS_TO_PASS": []}, "<i>")
    assert program_runs.disagreements(record, console, instance, "strict") == []
    assert program_runs.disagreements(record, console, instance, "swebench") == []


@pytest.mark.parametrize("outcome", sorted(set(oc.OUTCOMES) - {oc.MISSING}))
def test_every_outcome_the_recorder_writes_is_read_back(outcome: str) -> None:
    record = program_runs.record_run("unittest", [case("test_a", "m.T", outcome)], SESSION, "/copy")
    assert record.tests[0].outcome == outcome


def test_an_outcome_the_recorder_never_writes_is_incomplete_never_a_pass() -> None:
    record = program_runs.record_run("unittest", [case("test_a", "m.T", "PASSED"), case("test_b", "m.T", 1)], SESSION, "/c")
    assert [t.outcome for t in record.tests] == ["incomplete", "incomplete"]


@pytest.mark.parametrize("name", ["boot.py", "program_recorder.py"])
def test_the_code_of_ours_the_test_process_runs_parses_on_python_3_5(name: str) -> None:
    """SWE-bench's environments of Django 1.11 to 2.2 are Python 3.5."""
    import ast

    source = (Path(program_runs.__file__).with_name(name)).read_text(encoding="utf-8")
    ast.parse(source, feature_version=(3, 5))
