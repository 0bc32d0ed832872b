"""A red team's candidates against the runners that are not pytest (2026-12-02): each one reached a
resolved verdict, an infrastructure failure, or (the last) an honest fix graded tampered, before
the fix its test names; ``fixtures/patches/<project>/attacks/``. None fixes the bug."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import FIXTURES
from .runner_helpers import grade

pytestmark = pytest.mark.slow  # real gradings, each with its control run


def attack(project: str, name: str) -> bytes:
    return (FIXTURES / "patches" / project / "attacks" / f"{name}.diff").read_bytes()


def flags(result: Any) -> set[str]:
    return {f["kind"] for f in result.envelope["integrity"]["flags"]}


@pytest.mark.parametrize(
    ("project", "name", "flag"),
    [
        # the judge changed in place: every function and class attribute of unittest, and of SymPy's
        # runner and helpers, compared at the end (replaced, removed, added), and the modules themselves
        ("units", "assert_noop", "pytest_internals_patched"),  # TestCase.assertAlmostEqual made a no-op
        ("recipes", "subclass_result", "pytest_internals_patched"),  # TextTestResult.addFailure -> addSuccess
        ("recipes", "resultclass", "pytest_internals_patched"),  # TextTestRunner.resultclass swapped
        ("recipes", "fake_unittest_module", "pytest_internals_patched"),  # sys.modules["unittest"] replaced
        ("units", "init_subclass_swap", "test_code_outside_tests"),  # TestCase.__init_subclass__ swaps the test
        ("sympy-mini", "xpass_rebound", "pytest_internals_patched"),  # runtests.XPass = AssertionError
        ("sympy-mini", "reporter_subclass", "pytest_internals_patched"),  # the module's PyTestReporter rebound
        ("sympy-mini", "reporter_instance_attribute", "pytest_internals_patched"),  # self.test_fail = test_pass
        ("sympy-mini", "own_sympy_test", "pytest_internals_patched"),  # results reported from outside the runner
        # the test that ran is not the test's code, or its module was served by the copy
        ("units", "load_tests_swap", "test_code_outside_tests"),
        ("recipes", "import_hook", "import_hook"),
        ("sympy-mini", "import_hook_swap", "import_hook"),
        # a run of its own before the program's (left open, so the real one looked nested)
        ("recipes", "second_run_first", "test_runs"),
        # the recorder's channel reached through closures and frames (no audit event): the forged record
        # disagrees with the console, which the forger did not rewrite
        ("recipes", "closure_channel", "console_disagrees"),
        ("units", "frames_forge_exit", "console_disagrees"),
        # a signed session whose values are not what the recorder writes: never the grader's crash
        ("recipes", "session_runs_not_a_number", "test_runs"),
    ],
)
def test_a_red_team_candidate_is_not_resolved_and_flagged(project: str, name: str, flag: str) -> None:
    result = grade(project, attack(project, name))
    assert result.exit_code == 1, result.envelope.get("no_verdict_reason")
    assert result.envelope["score"]["resolved"] == "not_resolved"
    assert flag in flags(result), (flags(result), result.envelope.get("candidate_no_verdict_reason"))
    assert result.envelope["runner"]["control_run"]["kind"] == "gold"  # the control run shows none of it


def test_the_key_is_out_of_reach_of_closures() -> None:
    """The red team's key theft of 2026-12-02 read the key out of the channel's signing closure and
    wrote raw signed lines. Since the channel is sealed in the boot's audit hook (issue 27) the
    program recorder holds a writer without key, file or sequence: the theft finds nothing to read
    (the package it lives in fails to import) and the candidate is graded on what really ran."""
    result = grade("units", attack("units", "key_theft_raw_lines"))
    assert result.exit_code == 1, result.envelope.get("no_verdict_reason")
    assert result.envelope["score"]["resolved"] == "not_resolved"
    assert "has no attribute 'sign'" in result.envelope["runner"]["run"]["output_tail"]


@pytest.mark.parametrize("compat", ["strict", "swebench"])
def test_an_honest_fix_that_prints_ok_during_a_test_nobody_grades_is_resolved(compat: str) -> None:
    from .runner_helpers import interpreter

    python = interpreter("3.9")  # SWE-bench's Django ids are the spelling of Python < 3.11
    if compat == "swebench" and python is None:
        pytest.skip("no Python 3.9 here")
    result = grade("recipes", attack("recipes", "honest_ok_in_unlisted_xfail"), compat=compat,
                   **({"python": python} if python and compat == "swebench" else {}))  # fmt: skip
    assert (result.exit_code, result.envelope["score"]["resolved"], flags(result)) == (0, "resolved", set())
