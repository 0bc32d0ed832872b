"""`grade --select` (only the listed tests run) and progress on long runs (issue 16, point 5)."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pytest_objective_scoring.recorder import ListedOnly
from pytest_objective_scoring.testrun import selection

from .conftest import FIXTURES
from .runner_helpers import grade, instance_of, patch_of, run_cli

INTERVALS = FIXTURES / "repos" / "intervals"


def test_the_selection_matches_as_the_grader_matches():
    listed = ["t.py::test_a", "t.py::test_b[café]", "t.py::test_c[a"]
    strict = ListedOnly(selection(listed, "strict"))
    assert strict.wanted("t.py::test_a") and not strict.wanted("t.py::test_ab") and not strict.wanted("t.py::test_d")
    assert strict.wanted("t.py::test_b[café]") and strict.wanted("t.py::test_b[caf\\xe9]"), "either spelling"
    assert strict.wanted("t.py::test_c[a b]") and not strict.wanted("t.py::test_c[ab]"), "a cut id, continued by whitespace"
    swebench = ListedOnly(selection(listed, "swebench"))
    assert swebench.wanted("t.py::test_c[ab]") and not swebench.wanted("t.py::test_b[caf\\xe9]")


@pytest.mark.slow
def test_select_runs_only_the_listed_tests_and_the_envelope_says_so():
    two = instance_of("intervals", PASS_TO_PASS=["tests/test_interval.py::TestInterval::test_length"])
    f2p = list(two.fail_to_pass)
    selected = grade("intervals", patch_of("intervals", "gold"), instance=two, select=True)
    whole = grade("intervals", patch_of("intervals", "gold"), instance=two)
    for result in (selected, whole):
        assert result.envelope["score"]["resolved"] == "resolved"
        assert result.envelope["score"]["fail_to_pass"]["total"] == len(f2p)
    assert selected.envelope["runner"]["scope"] == "listed tests only (--select)"
    assert whole.envelope["runner"]["scope"] == "every test of the listed tests' files"
    tail = selected.envelope["runner"]["run"]["output_tail"]
    assert f"{len(f2p) + 1} passed" in tail and "deselected" in tail
    assert "deselected" not in whole.envelope["runner"]["run"]["output_tail"]


@pytest.mark.slow
def test_a_listed_test_that_does_not_exist_is_not_a_pass_with_select_either():
    ghost = instance_of("intervals", PASS_TO_PASS=["tests/test_interval.py::test_no_such_test"])
    result = grade("intervals", patch_of("intervals", "gold"), instance=ghost, select=True)
    assert result.envelope["score"]["resolved"] == "not_resolved"
    assert result.envelope["score"]["pass_to_pass"] == {"total": 1, "passed": 0, "verdict": "violated"}


@pytest.mark.slow
def test_a_long_test_run_tells_how_far_it_is_on_standard_error(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(INTERVALS, repo, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "tests" / "test_slow.py").write_text("import time\n\n\ndef test_slow():\n    time.sleep(8)\n")
    instance = dict(instance_of("intervals").fields)
    instance["PASS_TO_PASS"] = [*instance["PASS_TO_PASS"], "tests/test_slow.py::test_slow"]
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(instance))
    args = ("grade", "--repo", str(repo), "--instance", str(path), "--patch", str(FIXTURES / "patches" / "intervals" / "gold.diff"),
            "--no-ledger", "--json")  # fmt: skip
    with ThreadPoolExecutor(2) as pool:  # the two runs mostly sleep: side by side
        talking, silent = pool.submit(run_cli, *args), pool.submit(run_cli, *args, "--quiet")
        done, quiet = talking.result(), silent.result()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["score"]["resolved"] == "resolved", "standard output stays the result alone"
    lines = [line for line in done.stderr.splitlines() if "test(s) finished" in line]
    assert lines and lines[0].startswith("objective-score grade: fixtures__intervals-1: candidate run: ")
    assert quiet.returncode == 0 and "test(s) finished" not in quiet.stderr


def test_the_text_summary_says_which_tests_ran():
    from pytest_objective_scoring.commands.grade import _render_runner

    class Lines(list):
        def write_line(self, line: str, **markup: object) -> None:
            self.append(line)

    def shown(runner: dict) -> list[str]:
        lines = Lines()
        _render_runner(lines, {"runner": {"failure_class": "none", **runner}})
        return [line for line in lines if line.startswith("tests run:")]

    assert shown({"scope": "listed tests only (--select)", "run": {"exit_code": 0}}) == ["tests run: listed tests only (--select)"]
    assert shown({"scope": "every test of the listed tests' files", "run": None}) == [], "a patch that did not apply ran nothing"
