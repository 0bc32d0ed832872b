"""Runners that are not pytest, graded live: Django's way (``tests/runtests.py``), SymPy's
(``bin/test``) and ``python -m unittest``, on the fixture projects ``recipes``, ``sympy-mini`` and
``units`` (``fixtures/README.md``), in the same sandbox, pristine copies, protection by role and
control run as pytest runs; hostile candidates against the record and the console."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring.environments import Environment, probe_all

from .runner_helpers import grade, instance_of, interpreter, patch_of

pytestmark = pytest.mark.slow  # real gradings (docs/development.md: the fast subset)


PY39 = interpreter("3.9")


def outcome(result: Any) -> tuple[str | None, list[str]]:
    score = result.envelope.get("score")
    return (score["resolved"] if score else None), sorted({f["kind"] for f in result.envelope["integrity"]["flags"]})


@pytest.mark.parametrize(
    ("project", "candidate", "expected"),
    [
        ("recipes", "gold", "resolved"),
        ("recipes", "empty", "not_resolved"),
        ("recipes", "break_p2p", "not_resolved"),
        ("sympy-mini", "gold", "resolved"),
        ("sympy-mini", "empty", "not_resolved"),
        ("sympy-mini", "break_p2p", "not_resolved"),
        ("units", "gold", "resolved"),
        ("units", "empty", "not_resolved"),
        ("units", "break_p2p", "not_resolved"),
    ],
)
def test_each_runner_grades_the_fixture_s_candidates(project: str, candidate: str, expected: str) -> None:
    result = grade(project, patch_of(project, candidate))
    assert outcome(result) == (expected, [])
    runner = result.envelope["runner"]
    assert runner["run"]["isolation"]["mode"] in ("namespaces", "none")
    assert runner["test_command"]["runner"] == instance_of(project).get("runner")
    assert runner["test_command"]["source"].endswith("the instance's own fields")
    assert result.exit_code == (0 if expected == "resolved" else 1)


def test_a_django_run_is_recorded_test_by_test_with_every_spelling_of_its_ids() -> None:
    result = grade("recipes", patch_of("recipes", "break_p2p"))
    tests = {t["id"]: t for t in result.envelope["tests"]}
    first = tests["A whole number and a fraction read as one amount."]  # listed by its docstring's first line
    assert first["outcome"] == "passed" and first["matched"].startswith("test_mixed_number (parsing.tests.")
    assert tests["Units are matched case-insensitively."]["outcome"] == "error"  # the broken one: ValueError
    assert tests["test_decimal_amounts (parsing.tests.ParseQuantityTests)"]["outcome"] == "passed"  # its subtests pass
    run = result.envelope["runner"]["run"]
    assert run["command"][-8:] == ["tests/runtests.py", "--verbosity", "2", "--settings=test_sqlite", "--parallel", "1",
                                   "parsing.tests", "scaling.tests"]  # fmt: skip
    assert result.envelope["score"]["graded_by"].startswith("pytest-objective-scoring/") and "(runner:django)" in \
        result.envelope["score"]["graded_by"]


def test_a_candidate_s_change_to_the_tests_or_the_runner_script_is_dropped() -> None:
    result = grade("recipes", patch_of("recipes", "tamper"))
    assert outcome(result) == ("not_resolved", [])
    dropped = {d["path"]: d["reason"] for d in result.envelope["runner"]["apply"]["dropped"]}
    assert set(dropped) == {"tests/runtests.py", "tests/parsing/tests.py"}
    sympy = grade("sympy-mini", patch_of("sympy-mini", "tamper"))
    assert outcome(sympy) == ("not_resolved", [])
    assert [d["path"] for d in sympy.envelope["runner"]["apply"]["dropped"]] == ["sympy/testing/runtests.py"]


@pytest.mark.parametrize("project", ["recipes", "sympy-mini"])
def test_ok_printed_inside_a_failing_test_fools_swebench_s_reading_never_the_grading(project: str) -> None:
    """In SWE-bench's reading of the console the failing test passed; the record says it failed,
    the control run shows no such disagreement: not resolved, flagged."""
    strict = grade(project, patch_of(project, "print_ok"), python=PY39 or "python3")
    assert outcome(strict)[0] == "not_resolved"
    swebench = grade(project, patch_of(project, "print_ok"), compat="swebench", python=PY39 or "python3")
    assert outcome(swebench) == ("not_resolved", ["console_disagrees"])
    assert "SWE-bench's reading of the console says PASSED, the recorder saw" in swebench.envelope["candidate_no_verdict_reason"]
    assert swebench.envelope["runner"]["control_run"]["kind"] == "gold"


def test_the_console_s_disagreement_makes_the_run_invalid_in_the_command_s_disposition(tmp_path: Path) -> None:
    from .runner_helpers import envelope_of, run_cli_here

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    done = run_cli_here("grade", "--repo", str(fixtures / "repos" / "units"), "--instance", str(fixtures / "instances" / "units.json"),
                        "--patch", str(fixtures / "patches" / "recipes" / "empty.diff"), "--no-ledger", "--json")  # fmt: skip
    assert envelope_of(done)["integrity"]["disposition"] == "quarantined"  # no audit: never eligible, never invalid
    done = run_cli_here("grade", "--repo", str(fixtures / "repos" / "recipes"), "--instance",
                        str(fixtures / "instances" / "recipes.json"), "--patch",
                        str(fixtures / "patches" / "recipes" / "print_ok.diff"), "--compat", "swebench", "--no-ledger",
                        "--json", *(["--python", PY39] if PY39 else []))  # fmt: skip
    assert done.returncode == 1
    integrity = envelope_of(done)["integrity"]
    assert integrity["disposition"] == "invalid" and "tampered_outcome" in integrity["reasons"]


@pytest.mark.parametrize(("project", "candidate", "replaced"), [
    ("recipes", "result_patch", "unittest.result.TestResult.addError"),
    ("sympy-mini", "reporter_patch", "sympy.testing.runtests.PyTestReporter.test_fail"),
])
def test_a_candidate_replacing_the_runner_s_reporting_is_caught(project: str, candidate: str, replaced: str) -> None:
    result = grade(project, patch_of(project, candidate))
    verdict, flags = outcome(result)
    assert verdict == "not_resolved" and "pytest_internals_patched" in flags
    assert f"{replaced}: replaced after the recorder wrapped it" in result.envelope["candidate_no_verdict_reason"]


def test_a_candidate_ending_the_run_or_moving_it_out_of_the_recorder_s_reach_is_not_resolved() -> None:
    ended = grade("recipes", patch_of("recipes", "exit"))
    assert outcome(ended) == ("not_resolved", [])
    assert "died before its session finished" in ended.envelope["candidate_no_verdict_reason"]
    assert ended.envelope["runner"]["failure_detail"].endswith("(the control run is clean)")
    moved = grade("sympy-mini", patch_of("sympy-mini", "child"), compat="swebench")
    assert outcome(moved) == ("not_resolved", ["console_disagrees"])  # the console shows results the record never saw
    assert "the recorder saw no sympy test run" in moved.envelope["candidate_no_verdict_reason"]


@pytest.mark.skipif(PY39 is None, reason="no Python 3.9 here: SWE-bench's ids of Django < 5 are Python < 3.11 spellings")
def test_swebench_s_reading_of_a_live_run_resolves_gold_under_the_python_its_ids_were_made_with() -> None:
    result = grade("recipes", patch_of("recipes", "gold"), compat="swebench", python=PY39)
    assert outcome(result) == ("resolved", [])
    # the same ids under Python 3.11 (its own spelling, test_x (mod.Class.test_x)) fail SWE-bench's matching: so they
    # would in SWE-bench's harness; ours (strict) reads every spelling
    assert outcome(grade("recipes", patch_of("recipes", "gold"), compat="strict"))[0] == "resolved"


def test_swebench_s_table_chooses_the_runner_of_a_row_that_names_none() -> None:
    row = instance_of("recipes", runner=None, repo="django/django", version="3.0")
    result = grade("recipes", patch_of("recipes", "gold"), instance=row)
    assert outcome(result) == ("resolved", [])
    command = result.envelope["runner"]["test_command"]
    assert command["source"].startswith("SWE-bench's specification of django/django@3.0 (swebench 4.1.0 (PyPI))")
    assert command["env"]["LANG"] == "en_US.UTF-8"


def test_an_interpreter_without_pytest_is_enough_for_a_program_runner() -> None:
    python = PY39 or interpreter("3.6")
    if python is None or subprocess.run([python, "-c", "import pytest"], capture_output=True).returncode == 0:
        pytest.skip("no interpreter without pytest here")
    assert outcome(grade("units", patch_of("units", "gold"), python=python)) == ("resolved", [])
    versions = probe_all([Environment(python, None, "here", runner="unittest", pytest=False)])
    assert versions[python]["pytest_version"] == "none"
    from pytest_objective_scoring.environments import EnvironmentsError

    with pytest.raises(EnvironmentsError, match="cannot import pytest"):
        probe_all([Environment(python, None, "here")])


def test_select_is_refused_for_a_program_runner() -> None:
    from pytest_objective_scoring.runner import BadInput

    with pytest.raises(BadInput, match="--select: the unittest runner runs the test patch's modules"):
        grade("units", patch_of("units", "gold"), select=True)


def test_a_run_that_hangs_is_stopped_and_the_control_run_decides(tmp_path: Path) -> None:
    from .runner_helpers import make_patch

    repo = Path(__file__).resolve().parents[1] / "fixtures" / "repos" / "units"
    source = (repo / "units" / "temperature.py").read_text()
    hang = make_patch(repo, {"units/temperature.py": source.replace("def to_kelvin(celsius):\n",
                                                                      "def to_kelvin(celsius):\n    while True:\n        pass\n")}, tmp_path)  # fmt: skip
    result = grade("units", hang.encode(), timeout=8.0)
    assert outcome(result) == ("not_resolved", [])
    assert "timed out after 8s" in result.envelope["candidate_no_verdict_reason"]
