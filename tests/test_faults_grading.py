"""Fault injection (issue 28, red team), the grading's part: input that was graded as something it
is not (a ``test_patch`` of the wrong type read as "no test patch", an empty folder given as
``--repo`` blamed on the candidate, ``--test-cmd`` ignored under pytest, standard input read by two
options), input that gave a traceback (a 5000-digit number, ``demo --python /bin/false``), and a
plugin run that exited 0 although its envelope was not written where asked."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_objective_scoring import atomic
from pytest_objective_scoring.commands.grade import ignored_test_cmd, stdin_problem
from pytest_objective_scoring.grade_task import repository_problem
from pytest_objective_scoring.instances import InstanceError, load_instance, parse_instance
from pytest_objective_scoring.plugin import GATE_NO_VERDICT, final_status
from pytest_objective_scoring.runner_choice import choose

from .conftest import FIXTURES
from .runner_helpers import GIT, run_cli_here

REPO = FIXTURES / "repos" / "intervals"
INSTANCE = FIXTURES / "instances" / "intervals.json"
GOLD = FIXTURES / "patches" / "intervals" / "gold.diff"
FIELDS: dict[str, Any] = json.loads(INSTANCE.read_text(encoding="utf-8"))
BIG = "1" * 5000  # past Python's 4300-digit limit of integer string conversion


def _one_line_refusal(result: subprocess.CompletedProcess[str], *words: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr, result.stdout[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _instance_file(tmp_path: Path, name: str = "instance.json", **overrides: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({**FIELDS, **overrides}), encoding="utf-8")
    return path


def _grade(instance: Path, *extra: str, repo: Path = REPO) -> subprocess.CompletedProcess[str]:
    return run_cli_here("grade", "--repo", str(repo), "--instance", str(instance), "--patch", str(GOLD),
                        "--no-ledger", *extra)  # fmt: skip


# ---------------------------------------------------------------- 1. fields of the wrong type


@pytest.mark.parametrize(
    ("value", "got"),
    [(123, "got a number (123)"), (["diff"], 'got a list (["diff"])'), ({"a": 1}, 'got an object ({"a": 1})'),
     (True, "got a boolean (True)")],
    ids=["number", "list", "object", "boolean"],
)  # fmt: skip
def test_a_test_patch_of_the_wrong_type_is_bad_input_not_no_test_patch(tmp_path, value, got):
    """It was read as "no test patch": the gold patch was graded NOT RESOLVED (exit 1)."""
    line = _one_line_refusal(_grade(_instance_file(tmp_path, test_patch=value)), "instance.json", "'test_patch'",
                             "expected a string holding a diff, or absent, null or empty")  # fmt: skip
    assert line.endswith(got), line


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [("base_commit", 5, "a commit (a string)"), ("repo", ["a", "b"], "owner/name"),
     ("version", 3.1, "3.10 reads as 3.1"), ("runner", 1, "a runner's name"), ("test_cmd", {"x": 1}, "a command line"),
     ("patch", 7, "the gold patch"), ("build_command", [], "a command line"),
     ("environment_setup_commit", 0, "a commit")],
)  # fmt: skip
def test_every_text_field_the_grader_reads_is_checked_for_its_type(tmp_path, field, value, said):
    _one_line_refusal(_grade(_instance_file(tmp_path, **{field: value})), f"'{field}'", said)


def test_absent_null_and_empty_text_fields_stay_accepted(tmp_path):
    path = _instance_file(tmp_path, test_patch="", patch=None, version="1.0", runner=None)
    instance = load_instance(path)
    assert (instance.test_patch, instance.patch) == ("", None)


def test_a_dataset_row_of_the_wrong_type_is_refused_by_load_instances_too(tmp_path):
    from pytest_objective_scoring.instances import load_instances

    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(FIELDS) + "\n" + json.dumps({**FIELDS, "instance_id": "x-2", "test_patch": 1}) + "\n")
    with pytest.raises(InstanceError, match=r"d\.jsonl:2 \(instance x-2\): field 'test_patch'"):
        load_instances(path)


def test_an_instance_built_in_memory_keeps_what_it_is_given():
    """parse_instance (callers that build instances field by field) stays as it was; files are checked."""
    assert parse_instance({**FIELDS, "test_patch": 3}).test_patch is None


def test_the_plugin_refuses_a_test_patch_of_the_wrong_type_as_a_usage_error(pytester, write_instance):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest_inprocess(f"--objective-score={write_instance(['test_a.py::test_a'], test_patch=123)}",
                                          "--objective-no-ledger")  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([("*--objective-score: *instance.json*field 'test_patch': expected a string holding a "
                                  "diff*got a number (123)*")])  # fmt: skip


# ---------------------------------------------------------------- 2. numbers Python cannot read


def test_a_5000_digit_number_in_an_instance_is_one_line_exit_2(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(FIELDS)[:-1] + f', "x": {BIG}}}', encoding="utf-8")
    _one_line_refusal(_grade(path), "big.json", "a number of 5000 digits", "4300")


def test_a_5000_digit_number_in_a_jsonl_dataset_with_instance_id_is_one_line_exit_2(tmp_path):
    path = tmp_path / "d.jsonl"
    other = json.dumps({**FIELDS, "instance_id": "other"})[:-1] + f', "x": -{BIG}}}'
    path.write_text(json.dumps(FIELDS) + "\n" + other + "\n", encoding="utf-8")
    _one_line_refusal(_grade(path, "--instance-id", FIELDS["instance_id"]), "d.jsonl:2", "a number of 5000 digits")


@pytest.mark.parametrize(
    ("overrides", "said"),
    [({"FAIL_TO_PASS": f"[{BIG}]"}, "'FAIL_TO_PASS': is a string but not a JSON-encoded list of test ids: a number"),
     ({"x": "FLOAT"}, "the number 1e999 is too large for a float")],
    ids=["in-a-json-string-list", "float-overflow"],
)
def test_numbers_that_do_not_fit_are_refused_by_name(tmp_path, overrides, said):
    path = tmp_path / "n.json"
    path.write_text(json.dumps({**FIELDS, **overrides}).replace('"FLOAT"', "1e999"), encoding="utf-8")
    with pytest.raises(InstanceError, match=said):
        load_instance(path)


def test_the_plugin_refuses_a_5000_digit_number_as_a_usage_error(pytester):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    path = pytester.path / "big.json"
    path.write_text(f'{{"instance_id": "a-1", "FAIL_TO_PASS": ["test_a.py::test_a"], "PASS_TO_PASS": [], "n": {BIG}}}')
    result = pytester.runpytest_inprocess(f"--objective-score={path}", "--objective-no-ledger")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--objective-score: *big.json: a number of 5000 digits*"])
    assert "Traceback" not in result.stderr.str()


# ---------------------------------------------------------------- 3. --test-cmd under pytest


def test_test_cmd_under_the_pytest_runner_is_refused_not_ignored():
    """It was ignored: the tests ran as the pytest runner runs them, and the verdict said nothing."""
    _one_line_refusal(_grade(INSTANCE, "--test-cmd", "pytest -x -k nothing"), "--test-cmd 'pytest -x -k nothing'",
                      "the pytest runner runs pytest itself", "--runner")  # fmt: skip
    _one_line_refusal(_grade(INSTANCE, "--runner", "pytest", "--test-cmd", "pytest -rA"), "--test-cmd")


def test_test_cmd_that_the_instances_own_fields_override_is_refused():
    instance = parse_instance({**FIELDS, "runner": "django", "test_cmd": "./tests/runtests.py --verbosity 2"})
    command = choose(instance, None, "./tests/runtests.py --parallel 1", "--runner / --test-cmd")
    assert "not used" in (ignored_test_cmd("./tests/runtests.py --parallel 1", command) or "")
    used = choose(parse_instance(FIELDS), "django", "./tests/runtests.py --parallel 1", "--runner / --test-cmd")
    assert ignored_test_cmd("./tests/runtests.py --parallel 1", used) is None
    assert ignored_test_cmd(None, used) is None


def test_test_cmd_with_from_report_is_refused(tmp_path):
    report = FIXTURES / "junit"
    some = next(iter(sorted(report.rglob("*.xml"))))
    result = run_cli_here("grade", "--instance", str(INSTANCE), "--from-report", str(some), "--test-cmd", "pytest",
                          "--no-ledger")  # fmt: skip
    _one_line_refusal(result, "--test-cmd has no effect with --from-report")


# ---------------------------------------------------------------- 4. a --repo that is not the instance's


def test_an_empty_folder_as_repo_is_bad_input_not_the_candidates_patch_apply(tmp_path):
    """It was graded patch_apply against the candidate (exit 1), although the gold patch cannot apply either."""
    empty = tmp_path / "empty"
    empty.mkdir()
    _one_line_refusal(_grade(INSTANCE, repo=empty), f"--repo {empty}: an empty folder", "is it fixtures/intervals?")


def test_another_projects_folder_as_repo_is_bad_input():
    other = FIXTURES / "repos" / "csvlite"
    _one_line_refusal(_grade(INSTANCE, repo=other), f"--repo {other}: the instance's test patch does not apply "
                      "(nor its gold patch): is it fixtures/intervals?")  # fmt: skip


def test_a_test_patch_that_does_not_apply_where_the_gold_patch_does_is_left_to_the_run():
    """The task's own fault (setup, exit 3, in the run: tests/test_runner.py), not the folder's."""
    instance = load_instance(INSTANCE)
    broken = instance.fields["test_patch"].replace("tests/test_merge.py", "tests/test_nothere.py")
    assert repository_problem(REPO, instance, broken) is None
    assert repository_problem(REPO, instance, instance.test_patch) is None
    no_gold = parse_instance({**FIELDS, "patch": None})
    assert "the test patch (--test-patch) does not apply: is it" in (repository_problem(REPO, no_gold, broken, True) or "")


def _git_repo(source: Path, place: Path) -> tuple[Path, str]:
    import shutil

    shutil.copytree(source, place)
    subprocess.run([*GIT, "init", "-q"], cwd=place, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=place, check=True)
    subprocess.run([*GIT, "commit", "-qm", "base"], cwd=place, check=True)
    return place, subprocess.run(["git", "rev-parse", "HEAD"], cwd=place, capture_output=True, text=True,
                                 check=True).stdout.strip()  # fmt: skip


def test_a_git_repository_is_checked_at_base_commit_not_as_its_working_tree(tmp_path):
    repo, base = _git_repo(REPO, tmp_path / "intervals")
    (repo / "tests" / "test_merge.py").unlink()  # the working tree moved on; base_commit still holds it
    subprocess.run([*GIT, "commit", "-qam", "later"], cwd=repo, check=True)
    instance = parse_instance({**FIELDS, "base_commit": base})
    assert repository_problem(repo, instance, instance.test_patch) is None
    other, other_base = _git_repo(FIXTURES / "repos" / "csvlite", tmp_path / "csvlite")
    wrong = parse_instance({**FIELDS, "base_commit": other_base})
    assert repository_problem(other, wrong, wrong.test_patch) == (
        f"--repo {other}: the instance's test patch does not apply (nor its gold patch): is it fixtures/intervals at "
        f"{other_base}?")  # fmt: skip
    status = subprocess.run(["git", "status", "--porcelain"], cwd=other, capture_output=True, text=True, check=True)
    assert status.stdout == "" and not Path(other, ".git", "index.lock").exists()  # read, never written


def test_the_plugin_outside_the_instances_repository_gives_no_verdict(pytester, write_instance):
    """The working tree is not blamed for listed tests whose files are not there at all."""
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    instance = write_instance(["tests/test_merge.py::test_a"], repo="fixtures/intervals")
    result = pytester.runpytest_inprocess(f"--objective-score={instance}", "--objective-no-ledger", "--objective-gate")
    assert result.ret == GATE_NO_VERDICT
    result.stdout.fnmatch_lines([("verdict: NO VERDICT - none of the listed tests' files is under the rootdir * "
                                  "(tests/test_merge.py): is it fixtures/intervals?")])  # fmt: skip


def test_the_plugin_still_blames_a_listed_test_that_is_missing_from_its_file(pytester, write_instance):
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    instance = write_instance(["test_a.py::test_gone"])
    result = pytester.runpytest_inprocess(f"--objective-score={instance}", "--objective-no-ledger", "--objective-gate")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["verdict: NOT RESOLVED*"])


# ---------------------------------------------------------------- 5. the plugin's envelope not written


def _unwritable(monkeypatch: pytest.MonkeyPatch) -> None:
    def full(path: Any, text: Any, *args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic, "write_whole", full)


@pytest.mark.parametrize("gate", [False, True], ids=["no-gate", "gate"])
def test_the_plugin_exits_6_when_its_envelope_could_not_be_written(pytester, write_instance, monkeypatch, gate):
    """It exited 0: a CI job reading the file it asked for found nothing, and nothing told it so."""
    _unwritable(monkeypatch)
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest_inprocess(f"--objective-score={write_instance(['test_a.py::test_a'])}",
                                          "--objective-score-out=score.json", "--objective-no-ledger",
                                          *(["--objective-gate"] if gate else []))  # fmt: skip
    assert result.ret == GATE_NO_VERDICT
    result.stdout.fnmatch_lines(["verdict: RESOLVED", "score: NOT written to *score.json: No space left on device",
                                 '*"resolved": "resolved"*'])  # fmt: skip
    assert not (pytester.path / "score.json").exists()


def test_the_plugin_exits_6_when_the_folder_of_its_envelope_is_removed_during_the_run(pytester, write_instance):
    pytester.makepyfile(test_a="import shutil\n\ndef test_a():\n    shutil.rmtree('gone')\n")
    (pytester.path / "gone").mkdir()
    result = pytester.runpytest_inprocess(f"--objective-score={write_instance(['test_a.py::test_a'])}",
                                          "--objective-score-out=gone/score.json", "--objective-no-ledger")  # fmt: skip
    assert result.ret == GATE_NO_VERDICT
    result.stdout.fnmatch_lines(["score: NOT written to *score.json: *"])


def test_pytests_own_failure_stands_when_the_envelope_could_not_be_written(pytester, write_instance, monkeypatch):
    _unwritable(monkeypatch)
    pytester.makepyfile(test_a="def test_a():\n    pass\n", test_b="this is ( not python\n")
    result = pytester.runpytest_inprocess(f"--objective-score={write_instance(['test_a.py::test_a'])}",
                                          "--objective-score-out=score.json", "--objective-no-ledger")  # fmt: skip
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error: pytest's 2, untouched


@pytest.mark.parametrize(
    ("exitstatus", "score", "gate", "written", "expected"),
    [(0, None, False, True, 0), (1, None, False, True, 1), (0, None, True, True, 6), (1, "resolved", True, True, 0),
     (0, "not_resolved", True, True, 1), (0, "resolved", False, False, 6), (1, "resolved", True, False, 6),
     (2, None, True, False, 2), (4, None, False, False, 4), (5, None, True, True, 5)],
)  # fmt: skip
def test_final_status(exitstatus, score, gate, written, expected):
    graded = None if score is None else {"resolved": score}
    assert final_status(exitstatus, graded, gate, written) == expected


# ---------------------------------------------------------------- 6. demo --python that is not Python


def test_demo_with_an_interpreter_that_is_not_python_is_one_line_exit_2():
    """It was a traceback (BadInput raised from the first grading), exit 3."""
    result = run_cli_here("demo", "--python", "/bin/false")
    _one_line_refusal(result, "--python /bin/false: does not run as a Python interpreter")
    assert result.stdout == ""


def test_demo_checks_the_interpreter_before_opening_its_ledger(tmp_path):
    ledger = tmp_path / "demo.sqlite"
    _one_line_refusal(run_cli_here("demo", "--python", "/bin/false", "--ledger", str(ledger)), "--python /bin/false")
    assert not ledger.exists()


# ---------------------------------------------------------------- 7. standard input named twice


@pytest.mark.parametrize(
    ("args", "said"),
    [(("--instance", "-", "--patch", "-"), "--instance and --patch both name -"),
     (("--instance", str(INSTANCE), "--patch", "-", "--test-patch", "-"), "--patch and --test-patch both name -"),
     (("--instance", "-", "--patch", "-", "--test-patch", "-"), "--instance, --patch and --test-patch all name -"),
     (("--instance", "-", "--patch", "/dev/stdin"), "--instance - and --patch /dev/stdin both read standard input")],
)  # fmt: skip
def test_standard_input_named_by_two_options_is_refused_before_work(args, said):
    """The second reader silently got nothing: an empty candidate graded, or an empty instance."""
    result = run_cli_here("grade", "--repo", str(REPO), *args, "--no-ledger")
    _one_line_refusal(result, f"standard input can be read by one option only: {said}")


def test_from_report_and_instance_from_standard_input_are_refused_together():
    result = run_cli_here("grade", "--instance", "-", "--from-report", "-", "--no-ledger")
    _one_line_refusal(result, "--instance and --from-report both name -")


def test_stdin_problem_is_none_for_one_reader():
    assert stdin_problem([("--instance", "-"), ("--patch", "p.diff"), ("--test-patch", None)]) is None
    assert stdin_problem([]) is None


@pytest.mark.slow  # a real grading
def test_one_option_reading_standard_input_still_works():
    result = subprocess.run([sys.executable, "-m", "pytest_objective_scoring", "grade", "--repo", str(REPO),
                             "--instance", str(INSTANCE), "--patch", "-", "--no-ledger", "--json"],
                            input=GOLD.read_text(), capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["score"]["resolved"] == "resolved"


def test_a_candidate_that_does_not_apply_where_the_test_patch_does_not_either_is_setup_not_patch_apply(tmp_path):
    """The run's control: the candidate fails to apply, and so does the task's own test patch (the
    gold patch applies, so the folder passes the check before work): the task is wrong, exit 3
    ``setup``, never ``patch_apply`` against the candidate."""
    fields = json.loads(INSTANCE.read_text())
    fields["test_patch"] = fields["test_patch"].replace("tests/test_merge.py", "tests/test_nothere.py")
    broken = tmp_path / "instance.json"
    broken.write_text(json.dumps(fields))
    result = run_cli_here("grade", "--repo", str(REPO), "--instance", str(broken), "--no-ledger", "--json",
                          "--patch", str(FIXTURES / "patches" / "intervals" / "noapply.diff"))  # fmt: skip
    assert result.returncode == 3, result.stderr
    envelope = json.loads(result.stdout)
    assert envelope["status"] != "verdict" and "test patch does not apply" in envelope["no_verdict_reason"]
    assert "patch_apply" not in json.dumps(envelope)
    honest = run_cli_here("grade", "--repo", str(REPO), "--instance", str(INSTANCE), "--no-ledger",
                          "--patch", str(FIXTURES / "patches" / "intervals" / "noapply.diff"))  # fmt: skip
    assert honest.returncode == 1 and "failure class: patch_apply" in honest.stdout, "the candidate's own failure"
